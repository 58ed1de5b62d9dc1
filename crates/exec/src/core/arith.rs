//! memcached `incr`/`decr` and meta `ma`, on the store's atomic read-modify-write.
//!
//! memcached's rules, written once: the value must be a decimal u64 of 1 to 20 ASCII digits
//! ([`decimal_u64`]); incr wraps at 2^64 (`wrapping_add`), decr stops at 0
//! (`saturating_sub`); the item keeps its client flags and expiry, and gets a new CAS
//! unique and a cleared meta state. Meta adds a CAS guard, a chosen CAS, a new TTL and
//! creation of a missing item ([`Arith`]'s options; text leaves them all off).
//!
//! Redis INCR and friends do not use this: they are signed 64-bit with an overflow error,
//! treat a missing key as 0, and take a value like `-5` (see `resp/incr.rs`).

use std::io::Write as _;

use proto_memcache::{limits::NUMBER_DIGITS_MAX, text::ArithOp};
use store::{Change, Expiry, Item, MetaState, Store};

use crate::counters::{bump, Counters};

/// One incr or decr.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Arith {
    pub op: ArithOp,
    pub delta: u64,
    /// Only if the item's CAS unique is this one (meta `C`).
    pub compare_cas: Option<u64>,
    /// The CAS unique the new value gets; `None` for a fresh one (meta `E`).
    pub new_cas: Option<u64>,
    /// The expiry the new value gets; `None` keeps the item's (meta `T`).
    pub new_expiry: Option<Expiry>,
    /// A missing item is created holding this value (not incremented), with this expiry
    /// (meta `N` and `J`).
    pub vivify: Option<(u64, Expiry)>,
}

impl Arith {
    /// Text `incr`/`decr`: no options.
    pub(crate) fn plain(op: ArithOp, delta: u64) -> Arith {
        Arith { op, delta, compare_cas: None, new_cas: None, new_expiry: None, vivify: None }
    }
}

/// What an incr or decr did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ArithOutcome {
    /// The value written, its CAS unique and expiry; `created` by [`Arith::vivify`].
    Value {
        value: u64,
        cas: u64,
        expiry: Expiry,
        created: bool,
    },
    NotFound,
    /// [`Arith::compare_cas`] did not match.
    Exists,
    /// The value is not a decimal u64.
    NotNumeric,
    /// The write found no memory (memcached answers every refused arith write so; the value
    /// is at most 20 bytes, so it can be nothing else).
    NoMemory,
}

/// Applies `arith` to `key` and counts it (`incr_hits`/`incr_misses` or the decr pair: a
/// change of an existing item is a hit, a missing item a miss, anything else neither).
pub(crate) fn apply(store: &Store, counters: &Counters, key: &[u8], arith: &Arith) -> ArithOutcome {
    let result = store.modify(key, |current| match current {
        None => create(arith),
        Some(item) => change(arith, &item),
    });
    let outcome = match result {
        Ok((cas, Decided::Written { value, expiry, created })) => {
            let cas = cas.expect("a written item has a CAS unique");
            ArithOutcome::Value { value, cas, expiry, created }
        }
        Ok((_, Decided::Missing)) => ArithOutcome::NotFound,
        Ok((_, Decided::CasMismatch)) => ArithOutcome::Exists,
        Ok((_, Decided::NotNumeric)) => ArithOutcome::NotNumeric,
        Err(_) => ArithOutcome::NoMemory,
    };
    let (hits, misses) = match arith.op {
        ArithOp::Incr => (&counters.incr_hits, &counters.incr_misses),
        ArithOp::Decr => (&counters.decr_hits, &counters.decr_misses),
    };
    match outcome {
        ArithOutcome::Value { created: false, .. } => bump(hits, 1),
        ArithOutcome::NotFound => bump(misses, 1),
        _ => {}
    }
    outcome
}

/// What the locked step decided.
enum Decided {
    Missing,
    CasMismatch,
    NotNumeric,
    Written { value: u64, expiry: Expiry, created: bool },
}

fn create(arith: &Arith) -> (Change, Decided) {
    let Some((value, expiry)) = arith.vivify else { return (Change::Keep, Decided::Missing) };
    let change = write(arith, value, 0, expiry);
    (change, Decided::Written { value, expiry, created: true })
}

fn change(arith: &Arith, item: &Item<'_>) -> (Change, Decided) {
    if arith.compare_cas.is_some_and(|cas| cas != item.cas()) {
        return (Change::Keep, Decided::CasMismatch);
    }
    let Some(number) = decimal_u64(item.value()) else {
        return (Change::Keep, Decided::NotNumeric);
    };
    let value = match arith.op {
        ArithOp::Incr => number.wrapping_add(arith.delta),
        ArithOp::Decr => number.saturating_sub(arith.delta),
    };
    let expiry = arith.new_expiry.unwrap_or(item.expiry());
    let change = write(arith, value, item.flags(), expiry);
    (change, Decided::Written { value, expiry, created: false })
}

fn write(arith: &Arith, value: u64, flags: u32, expiry: Expiry) -> Change {
    let meta = MetaState::default();
    Change::WriteWith { value: decimal(value), flags, expiry, cas: arith.new_cas, meta }
}

/// The decimal text of a number, as incr stores it and meta `v` returns it.
pub(crate) fn decimal(value: u64) -> Vec<u8> {
    let mut digits = Vec::with_capacity(NUMBER_DIGITS_MAX);
    write!(digits, "{value}").expect("writing to a Vec cannot fail");
    digits
}

/// memcached's operand rule: 1 to 20 ASCII digits that fit in a u64 (no sign, no spaces;
/// the request tokens also take a `+`, which a stored value may not have).
pub(crate) fn decimal_u64(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() || bytes.len() > NUMBER_DIGITS_MAX || !bytes.iter().all(u8::is_ascii_digit)
    {
        return None;
    }
    bytes.iter().try_fold(0u64, |n, &digit| n.checked_mul(10)?.checked_add(u64::from(digit - b'0')))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: the operand rule at its edges.
    #[test]
    fn operand_rule() {
        let table: &[(&[u8], Option<u64>)] = &[
            (b"0", Some(0)),
            (b"007", Some(7)),
            (b"18446744073709551615", Some(u64::MAX)),
            (b"18446744073709551616", None),
            (b"000000000000000000001", None),
            (b"", None),
            (b"+1", None),
            (b"-1", None),
            (b" 1", None),
            (b"1 ", None),
        ];
        for &(text, want) in table {
            assert_eq!(decimal_u64(text), want, "{text:?}");
        }
        assert_eq!(decimal(u64::MAX), b"18446744073709551615");
    }
}
