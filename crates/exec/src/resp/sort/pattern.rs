//! SORT's BY and GET patterns, and the numbers it sorts by.
//!
//! A pattern names a key by putting the element in place of its first `*`; `->field`
//! after the `*` reads that field of a hash instead of a string; `#` alone is the element
//! itself. Redis reads the pattern as a C string when it looks for `*`, `->` and `#` (so
//! they count only before a zero byte), but copies the prefix, suffix and field by their
//! full lengths; this does the same, so a pattern with a zero byte names the key it names
//! there.

use std::borrow::Cow;

use store::{Reader, ValueKind};

use crate::{keyspace, Counters, Shared};

/// Where a pattern's lookups happen: the store, its database and counters.
pub(super) struct Lookups<'r> {
    pub(super) shared: &'r Shared,
    pub(super) counters: &'r Counters,
    pub(super) reader: &'r Reader<'r>,
    pub(super) db: u8,
    /// The stored form of a key being built (reused).
    pub(super) scratch: Vec<u8>,
    pub(super) name: Vec<u8>,
}

/// The part of `bytes` before its first zero byte: what C's string functions see.
pub(super) fn c_string(bytes: &[u8]) -> &[u8] {
    bytes.iter().position(|&b| b == 0).map_or(bytes, |end| &bytes[..end])
}

/// Whether a BY pattern names no key (no `*`): then SORT does not sort at all.
pub(super) fn is_constant(pattern: &[u8]) -> bool {
    !c_string(pattern).contains(&b'*')
}

impl Lookups<'_> {
    /// What `pattern` names for `element`: the element itself for `#`, the string at the
    /// substituted key, or the field of the hash there; `None` when there is no such
    /// value (no `*`, no key, another type, no field). Each key looked at counts as a
    /// read, as Redis's `lookupKeyRead` counts it.
    pub(super) fn value<'e>(&mut self, pattern: &[u8], element: &'e [u8]) -> Option<Cow<'e, [u8]>> {
        let text = c_string(pattern);
        if text == b"#" {
            return Some(Cow::Borrowed(element));
        }
        let star = text.iter().position(|&b| b == b'*')?;
        // `->` counts only with a field name after it (`x:*->` names key `x:a->`).
        let arrow = text[star + 1..]
            .windows(2)
            .position(|pair| pair == b"->")
            .map(|at| star + 1 + at)
            .filter(|&at| at + 2 < text.len());
        let suffix_end = arrow.unwrap_or(pattern.len());
        self.name.clear();
        self.name.extend_from_slice(&pattern[..star]);
        self.name.extend_from_slice(element);
        self.name.extend_from_slice(&pattern[star + 1..suffix_end]);
        let key = keyspace::encode(self.db, &self.name, &mut self.scratch);
        let item = self.reader.get(key);
        crate::resp::count_read(self.counters, item.is_some());
        let item = item?;
        match arrow {
            None if item.value_kind() == ValueKind::String => {
                Some(Cow::Owned(item.value().to_vec()))
            }
            Some(at) if item.value_kind() == ValueKind::Hash => {
                super::super::hash::field_of(self.shared, &item, &pattern[at + 2..]).map(Cow::Owned)
            }
            _ => None,
        }
    }
}

/// A value as SORT reads a number from it: C's `strtod` over the value (up to a zero
/// byte), refused when text is left after the number, when the number is out of range
/// (`ERANGE`: it overflows, or underflows to zero or a subnormal) or when it is NaN. An
/// empty value is 0, as `strtod` converts nothing and leaves nothing.
pub(super) fn score(value: &[u8]) -> Option<f64> {
    let text = c_string(value);
    if text.is_empty() {
        return Some(0.0);
    }
    // C's isspace: ASCII whitespace and the vertical tab.
    let blank = text.iter().take_while(|b| b.is_ascii_whitespace() || **b == 0x0b).count();
    let body = &text[blank..];
    let (negative, unsigned) = match body.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, body),
    };
    let magnitude = if is_word(unsigned, b"inf") || is_word(unsigned, b"infinity") {
        f64::INFINITY
    } else if unsigned.len() > 1 && unsigned[0] == b'0' && unsigned[1] | 0x20 == b'x' {
        hexadecimal(&unsigned[2..])?
    } else {
        decimal(unsigned)?
    };
    Some(if negative { -magnitude } else { magnitude })
}

fn is_word(text: &[u8], word: &[u8]) -> bool {
    text.eq_ignore_ascii_case(word)
}

/// Digits, an optional point and digits (one digit at least), an optional exponent; all
/// of `text`. `None` for anything else and for a result out of range.
fn decimal(text: &[u8]) -> Option<f64> {
    let digits = |from: usize| text[from..].iter().take_while(|b| b.is_ascii_digit()).count();
    let whole = digits(0);
    let mut at = whole;
    let mut fraction = 0;
    if text.get(at) == Some(&b'.') {
        fraction = digits(at + 1);
        at += 1 + fraction;
    }
    if whole + fraction == 0 {
        return None;
    }
    if matches!(text.get(at), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(text.get(at + 1), Some(b'+' | b'-')));
        let exponent = digits(at + 1 + sign);
        if exponent == 0 {
            return None; // strtod leaves a bare `e`, which is then text left over
        }
        at += 1 + sign + exponent;
    }
    if at != text.len() {
        return None;
    }
    let value: f64 = std::str::from_utf8(text).ok()?.parse().ok()?;
    let mantissa_nonzero = text[..whole + usize::from(fraction > 0) + fraction]
        .iter()
        .any(|b| (b'1'..=b'9').contains(b));
    in_range(value, mantissa_nonzero)
}

/// `strtod`'s hexadecimal form after `0x`: hex digits, an optional point and hex digits,
/// an optional binary exponent `p`. Without a digit, strtod reads only the `0` and
/// leaves the `x`, which is text left over.
fn hexadecimal(text: &[u8]) -> Option<f64> {
    let hex = |from: usize| text[from..].iter().take_while(|b| b.is_ascii_hexdigit()).count();
    let whole = hex(0);
    let mut at = whole;
    let mut fraction = 0;
    if text.get(at) == Some(&b'.') {
        fraction = hex(at + 1);
        at += 1 + fraction;
    }
    if whole + fraction == 0 {
        return None;
    }
    let fraction_digits = if fraction > 0 { &text[whole + 1..whole + 1 + fraction] } else { &[] };
    let mut value = 0.0f64;
    let mut nonzero = false;
    for &b in text[..whole].iter().chain(fraction_digits) {
        let digit = (b as char).to_digit(16)?;
        nonzero |= digit != 0;
        value = value * 16.0 + f64::from(digit);
    }
    let mut exponent: i64 = -4 * fraction as i64;
    if matches!(text.get(at), Some(b'p' | b'P')) {
        let sign = usize::from(matches!(text.get(at + 1), Some(b'+' | b'-')));
        let digits = text[at + 1 + sign..].iter().take_while(|b| b.is_ascii_digit()).count();
        if digits > 0 {
            let written = &text[at + 1 + sign..at + 1 + sign + digits];
            // Past this many digits the exponent saturates: the result is 0 or infinite.
            let magnitude = std::str::from_utf8(written).ok()?.parse::<i64>().unwrap_or(100_000);
            let magnitude = magnitude.min(100_000);
            exponent += if text[at + 1] == b'-' { -magnitude } else { magnitude };
            at += 1 + sign + digits;
        }
    }
    if at != text.len() {
        return None;
    }
    // In two steps, so that a long mantissa with a low exponent is not lost to an
    // intermediate zero.
    let exponent = exponent.clamp(-200_000, 200_000) as i32;
    let value = value * 2f64.powi(exponent / 2) * 2f64.powi(exponent - exponent / 2);
    in_range(value, nonzero)
}

/// `strtod`'s ERANGE: an infinite result, or a zero or subnormal one from a nonzero
/// number.
fn in_range(value: f64, nonzero: bool) -> Option<f64> {
    let underflow = nonzero && (value == 0.0 || value.is_subnormal());
    (!value.is_infinite() && !underflow).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_read_as_strtod_reads_them() {
        for (text, want) in [
            (&b"1"[..], Some(1.0)),
            (b"", Some(0.0)),
            (b"  -2.5", Some(-2.5)),
            (b"+3e2", Some(300.0)),
            (b".5", Some(0.5)),
            (b"5.", Some(5.0)),
            (b"0x10", Some(16.0)),
            (b"0x1p3", Some(8.0)),
            (b"0x.8", Some(0.5)),
            (b"0xA.8p-1", Some(5.25)),
            (b"\x0b1", Some(1.0)),
            (b"1.e2", Some(100.0)),
            (b"inf", Some(f64::INFINITY)),
            (b"-Infinity", Some(f64::NEG_INFINITY)),
            (b"7\0junk", Some(7.0)),
            (b"1 ", None),
            (b" ", None),
            (b"-", None),
            (b"1e", None),
            (b"0x", None),
            (b"nan", None),
            (b"infinit", None),
            (b"1e400", None),
            (b"1e-400", None),
            (b"0e-400", Some(0.0)),
            (b"abc", None),
        ] {
            assert_eq!(score(text), want, "{:?}", String::from_utf8_lossy(text));
        }
    }

    #[test]
    fn constant_patterns_are_those_without_a_star_before_a_zero_byte() {
        assert!(is_constant(b"nosort"));
        assert!(is_constant(b"a\0*"));
        assert!(!is_constant(b"w_*"));
    }
}
