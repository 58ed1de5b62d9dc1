//! The INCR family: INCR DECR INCRBY DECRBY INCRBYFLOAT.
//!
//! Not memcached's incr/decr (`core::arith`): Redis's are signed 64-bit with an overflow
//! error instead of wrapping or stopping at 0, a missing key counts as 0, and the value
//! may be negative. Each runs in one `Store::modify`, keeping the item's flags and expiry.

use proto_resp::{
    args::{parse_f64, parse_i64},
    error,
};
use store::{Change, Item, ValueKind};

use super::{keyevents::class, strings::rewrite, Ctx};
use crate::counters::bump;

/// Where INCR-family commands get their delta.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Delta {
    One,
    MinusOne,
    /// INCRBY: argument 2.
    By,
    /// DECRBY: argument 2, negated.
    NegatedBy,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NumberError {
    NotInteger,
    Overflow,
}

pub(super) fn incr(ctx: &mut Ctx<'_>, delta: Delta) {
    let delta = match delta {
        Delta::One => 1,
        Delta::MinusOne => -1,
        Delta::By | Delta::NegatedBy => match parse_i64(ctx.arg(2)) {
            Err(e) => return ctx.error(e.message()),
            Ok(i64::MIN) if delta == Delta::NegatedBy => return ctx.error(error::DECR_OVERFLOW),
            Ok(n) if delta == Delta::NegatedBy => -n,
            Ok(n) => n,
        },
    };
    if super::strings::holds_collection(ctx, 1) {
        return;
    }
    let (shared, counters) = (ctx.shared, ctx.counters);
    let key = ctx.key(1);
    let result = shared.core.store.modify(key, |current| {
        let old = match current.as_ref().map(|item| parse_i64(string_value(item))) {
            None => 0,
            Some(Ok(n)) => n,
            Some(Err(_)) => return (Change::Keep, Err(NumberError::NotInteger)),
        };
        let Some(new) = old.checked_add(delta) else {
            return (Change::Keep, Err(NumberError::Overflow));
        };
        (rewrite(current.as_ref(), new.to_string().into_bytes()), Ok((new, current.is_some())))
    });
    match result {
        Err(e) => ctx.store_error(e),
        Ok((_, Err(NumberError::NotInteger))) => ctx.error(error::NOT_INTEGER),
        Ok((_, Err(NumberError::Overflow))) => ctx.error(error::INCR_OVERFLOW),
        Ok((_, Ok((new, existed)))) => {
            let hit = if delta >= 0 {
                if existed {
                    &counters.incr_hits
                } else {
                    &counters.incr_misses
                }
            } else if existed {
                &counters.decr_hits
            } else {
                &counters.decr_misses
            };
            bump(hit, 1);
            ctx.wrote(class::STRING, "incrby", 1);
            ctx.reply().integer(new);
        }
    }
}

/// The value of a string item; a collection (its type changed since the WRONGTYPE check)
/// reads as no number, so the store step refuses rather than overwrite it.
fn string_value<'a>(item: &Item<'a>) -> &'a [u8] {
    if item.value_kind() == ValueKind::String {
        item.value()
    } else {
        b"-"
    }
}

pub(super) fn incrbyfloat(ctx: &mut Ctx<'_>) {
    let Ok(delta) = parse_f64(ctx.arg(2)) else {
        return ctx.error(error::NOT_FLOAT);
    };
    if super::strings::holds_collection(ctx, 1) {
        return;
    }
    let shared = ctx.shared;
    let key = ctx.key(1);
    let result = shared.core.store.modify(key, |current| {
        let old = match current.as_ref().map(|item| parse_f64(string_value(item))) {
            None => 0.0,
            Some(Ok(n)) => n,
            Some(Err(_)) => return (Change::Keep, Err(error::NOT_FLOAT)),
        };
        let sum = old + delta;
        if !sum.is_finite() {
            return (Change::Keep, Err(error::INCR_NAN_OR_INF));
        }
        let text = format_human(sum).into_bytes();
        (rewrite(current.as_ref(), text.clone()), Ok(text))
    });
    match result {
        Err(e) => ctx.store_error(e),
        Ok((_, Err(message))) => ctx.error(message),
        // A bulk string in RESP3 too: Redis replies with the stored text.
        Ok((_, Ok(text))) => {
            ctx.wrote(class::STRING, "incrbyfloat", 1);
            ctx.reply().bulk(&text)
        }
    }
}

/// INCRBYFLOAT's text (Redis's `ld2string` in human mode: `%.17Lf`, trailing zeros and a
/// trailing dot removed, never an exponent, `-0` as `0`). Redis computes in `long double`;
/// we use `f64` and its shortest round-trip digits, which give the same text for the sums
/// people write (10.5 + 0.1 = "10.6") but may differ in the last digits of others.
pub(super) fn format_human(value: f64) -> String {
    let mut text = format!("{value}");
    if let Some(dot) = text.find('.') {
        if text.len() - dot - 1 > 17 {
            text = format!("{value:.17}");
            let trimmed = text.trim_end_matches('0').trim_end_matches('.').len();
            text.truncate(trimmed);
        }
    }
    if text == "-0" {
        text = "0".into();
    }
    text
}

#[cfg(test)]
mod tests {
    use proto_memcache::text::ArithOp;
    use store::{Expiry, Mode};

    use super::{super::testkit::Harness, *};
    use crate::core::arith::{self, Arith, ArithOutcome};

    #[test]
    fn incr_family() {
        let mut h = Harness::new();
        let not_int = "-ERR value is not an integer or out of range\r\n";
        h.check(&[
            ("INCR n", ":1\r\n"),
            ("INCRBY n 10", ":11\r\n"),
            ("DECR n", ":10\r\n"),
            ("DECRBY n 20", ":-10\r\n"),
            ("GET n", "$3\r\n-10\r\n"),
            ("INCRBY n x", not_int),
            ("DECRBY n 9223372036854775808", not_int),
            ("DECRBY n -9223372036854775808", "-ERR decrement would overflow\r\n"),
            ("SET s abc", "+OK\r\n"),
            ("INCR s", not_int),
            ("SET s \" 1\"", "+OK\r\n"),
            ("INCR s", not_int),
            ("SET s 01", "+OK\r\n"),
            ("INCR s", not_int),
            ("SET m 9223372036854775807", "+OK\r\n"),
            ("INCR m", "-ERR increment or decrement would overflow\r\n"),
            ("SET m -9223372036854775808", "+OK\r\n"),
            ("DECR m", "-ERR increment or decrement would overflow\r\n"),
            ("SET t 5 EX 100", "+OK\r\n"),
            ("INCR t", ":6\r\n"),
            ("TTL t", ":100\r\n"),
        ]);
    }

    #[test]
    fn incrbyfloat() {
        let mut h = Harness::new();
        let not_float = "-ERR value is not a valid float\r\n";
        h.check(&[
            ("SET f 10.50", "+OK\r\n"),
            ("INCRBYFLOAT f 0.1", "$4\r\n10.6\r\n"),
            ("INCRBYFLOAT f -5", "$3\r\n5.6\r\n"),
            ("SET f 5.0e3", "+OK\r\n"),
            ("INCRBYFLOAT f 2.0e2", "$4\r\n5200\r\n"),
            ("INCRBYFLOAT new 3", "$1\r\n3\r\n"),
            ("INCRBYFLOAT new -3", "$1\r\n0\r\n"),
            ("INCRBYFLOAT new x", not_float),
            ("INCRBYFLOAT new nan", not_float),
            ("INCRBYFLOAT new inf", "-ERR increment would produce NaN or Infinity\r\n"),
            ("SET s abc", "+OK\r\n"),
            ("INCRBYFLOAT s 1", not_float),
        ]);
        h.check3(&[("INCRBYFLOAT new 1.5", "$3\r\n1.5\r\n")]);
        assert_eq!(format_human(1.5e-20), "0");
        assert_eq!(format_human(-1.5e-20), "0");
        assert_eq!(format_human(1e20), "100000000000000000000");
        assert_eq!(format_human(0.1 + 0.2), "0.30000000000000004");
    }

    /// Goal: a value written over memcached with flags is a Redis string, INCR keeps its
    /// flags so memcached still reads it as it was, and memcached's incr reads Redis's number.
    #[test]
    fn memcached_values_are_strings() {
        let mut h = Harness::new();
        h.shared.core.store.store(b"mc", b"41", 7, Expiry::Never, Mode::Set).unwrap();
        h.check(&[("GET mc", "$2\r\n41\r\n"), ("INCR mc", ":42\r\n")]);
        let item = h.shared.core.store.get(b"mc").unwrap();
        assert_eq!((item.value.as_slice(), item.flags), (&b"42"[..], 7));
        let memcached_incr = Arith::plain(ArithOp::Incr, 1);
        let outcome = arith::apply(&h.shared.core.store, &h.counters, b"mc", &memcached_incr);
        assert!(matches!(outcome, ArithOutcome::Value { value: 43, created: false, .. }));
        h.check(&[("GET mc", "$2\r\n43\r\n")]);
    }
}
