//! memcached `incr`/`decr` and meta `ma`, on the store's atomic read-modify-write.
//!
//! memcached's rules, written once: the value must read as a u64 the way memcached's
//! `strtoull` reads it ([`stored_u64`]); incr wraps at 2^64 (`wrapping_add`), decr stops at
//! 0 (`saturating_sub`); a result shorter than the old value is padded with spaces to its
//! length, as memcached rewrites the item in place (`100` decremented reads `99 `); the
//! item keeps its client flags and expiry, and gets a new CAS unique and a cleared meta
//! state. Meta adds a CAS guard, a chosen CAS, a new TTL and
//! creation of a missing item ([`Arith`]'s options; text leaves them all off).
//!
//! Redis INCR and friends do not use this: they are signed 64-bit with an overflow error,
//! treat a missing key as 0, and take a value like `-5` (see `resp/incr.rs`).

use std::io::Write as _;

use proto_memcache::{limits::NUMBER_DIGITS_MAX, text::ArithOp};
use store::{Change, Expiry, Item, MetaState, Store, ValueKind};

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
        // A Redis collection holds no number.
        Some(item) if item.value_kind() != ValueKind::String => (Change::Keep, Decided::NotNumeric),
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
    let change = write(arith, value, 0, 0, expiry);
    (change, Decided::Written { value, expiry, created: true })
}

fn change(arith: &Arith, item: &Item<'_>) -> (Change, Decided) {
    if arith.compare_cas.is_some_and(|cas| cas != item.cas()) {
        return (Change::Keep, Decided::CasMismatch);
    }
    let Some(number) = stored_u64(item.value()) else {
        return (Change::Keep, Decided::NotNumeric);
    };
    let value = match arith.op {
        ArithOp::Incr => number.wrapping_add(arith.delta),
        ArithOp::Decr => number.saturating_sub(arith.delta),
    };
    let expiry = arith.new_expiry.unwrap_or(item.expiry());
    let change = write(arith, value, item.value().len(), item.flags(), expiry);
    (change, Decided::Written { value, expiry, created: false })
}

/// The new item: `value` in decimal, padded with spaces to `width` if shorter.
fn write(arith: &Arith, value: u64, width: usize, flags: u32, expiry: Expiry) -> Change {
    let mut text = decimal(value);
    if text.len() < width {
        text.resize(width, b' ');
    }
    let meta = MetaState::default();
    Change::WriteWith { value: text, flags, expiry, cas: arith.new_cas, meta }
}

/// The decimal text of a number, as incr stores it and meta `v` returns it.
pub(crate) fn decimal(value: u64) -> Vec<u8> {
    let mut digits = Vec::with_capacity(NUMBER_DIGITS_MAX);
    write!(digits, "{value}").expect("writing to a Vec cannot fail");
    digits
}

/// A stored value as memcached's `safe_strtoull` reads it: C white space, an optional sign,
/// decimal digits that fit a u64 (leading zeros without limit), then the end or white space
/// (the rest is not looked at: `1 2` reads 1, and so does the padded `1   ` an earlier decr
/// left). A result that is negative as a signed number is refused if the value holds a
/// minus anywhere (so `-1` is refused; `-0` reads 0).
pub(crate) fn stored_u64(bytes: &[u8]) -> Option<u64> {
    let is_space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    let start = bytes.iter().position(|b| !is_space(b)).unwrap_or(bytes.len());
    let (negative, rest) = match &bytes[start..] {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        rest => (false, rest),
    };
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || rest.get(digits).is_some_and(|b| !is_space(b)) {
        return None;
    }
    let magnitude = rest[..digits]
        .iter()
        .try_fold(0u64, |n, &digit| n.checked_mul(10)?.checked_add(u64::from(digit - b'0')))?;
    let value = if negative { magnitude.wrapping_neg() } else { magnitude };
    if (value as i64) < 0 && bytes.contains(&b'-') {
        return None;
    }
    Some(value)
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
            (b"000000000000000000001", Some(1)),
            (b"", None),
            (b" ", None),
            (b"+1", Some(1)),
            (b"-1", None),
            (b"-0", Some(0)),
            (b" \t1", Some(1)),
            (b"1 ", Some(1)),
            (b"99 ", Some(99)),
            (b"1 2", Some(1)),
            (b"1\r\n", Some(1)),
            (b"1x", None),
            (b"x1", None),
            (b"18446744073709551615 -", None),
        ];
        for &(text, want) in table {
            assert_eq!(stored_u64(text), want, "{text:?}");
        }
        assert_eq!(decimal(u64::MAX), b"18446744073709551615");
    }
}
