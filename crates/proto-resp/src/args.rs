//! Argument parsing with Redis's semantics.
//!
//! Redis is strict about numbers so that a number read from a client prints back as the
//! same bytes: `parse_i64` mirrors `string2ll` (no `+`, no spaces, no leading zeros except
//! `"0"`, must fit in an `i64`), and `parse_f64` mirrors `string2d`/`string2ld` (no leading
//! space, no trailing bytes, no NaN, no overflow to infinity, no underflow to zero).

use crate::error::{NOT_FLOAT, NOT_INTEGER};

/// Why an argument was rejected; `message()` is the exact Redis error text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgError {
    /// `ERR value is not an integer or out of range`
    NotInteger,
    /// `ERR value is not a valid float`
    NotFloat,
}

impl ArgError {
    /// The error reply text, code included, without `-` and CRLF.
    pub fn message(self) -> &'static str {
        match self {
            ArgError::NotInteger => NOT_INTEGER,
            ArgError::NotFloat => NOT_FLOAT,
        }
    }
}

/// `string2ll` rejects inputs of `LONG_STR_SIZE` (21) bytes or more before looking at them.
const I64_TEXT_LEN_MAX: usize = 20;

/// Parses a signed 64-bit integer exactly as Redis's `string2ll` does.
///
/// ```
/// use proto_resp::args::{parse_i64, ArgError};
/// assert_eq!(parse_i64(b"-42"), Ok(-42));
/// assert_eq!(parse_i64(b"+1"), Err(ArgError::NotInteger));
/// assert_eq!(parse_i64(b"007"), Err(ArgError::NotInteger));
/// ```
pub fn parse_i64(text: &[u8]) -> Result<i64, ArgError> {
    if text.is_empty() || text.len() > I64_TEXT_LEN_MAX {
        return Err(ArgError::NotInteger);
    }
    if text == b"0" {
        return Ok(0);
    }
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    // The first digit must be 1-9: this rules out "-0", "00" and "-".
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return Err(ArgError::NotInteger),
    }
    let mut magnitude: u64 = 0;
    for &byte in digits {
        if !byte.is_ascii_digit() {
            return Err(ArgError::NotInteger);
        }
        magnitude = magnitude
            .checked_mul(10)
            .and_then(|m| m.checked_add(u64::from(byte - b'0')))
            .ok_or(ArgError::NotInteger)?;
    }
    if negative {
        // i64::MIN has no positive counterpart, so compare magnitudes in u64.
        if magnitude > i64::MIN.unsigned_abs() {
            return Err(ArgError::NotInteger);
        }
        Ok(0i64.wrapping_sub_unsigned(magnitude))
    } else {
        i64::try_from(magnitude).map_err(|_| ArgError::NotInteger)
    }
}

/// Parses a non-negative integer with `parse_i64`'s rules (Redis's `string2ull` fast path).
pub fn parse_u64(text: &[u8]) -> Result<u64, ArgError> {
    let value = parse_i64(text)?;
    u64::try_from(value).map_err(|_| ArgError::NotInteger)
}

/// Parses a double as Redis's `string2d` does (used by INCRBYFLOAT via `string2ld`).
///
/// Accepted: optional sign, decimal digits with optional `.` and exponent, and `inf` /
/// `infinity` in any case. Rejected: empty input, leading or trailing space, NaN, a finite
/// literal that overflows to infinity, and one that underflows to zero.
///
/// INCRBYFLOAT accepts `inf` here and then fails with [`crate::error::INCR_NAN_OR_INF`]
/// once the sum is not finite; [`parse_f64_finite`] rejects infinity up front instead.
///
/// Not mirrored: C's `strtod` also reads hexadecimal floats (`0x1p3`); we reject them.
pub fn parse_f64(text: &[u8]) -> Result<f64, ArgError> {
    let s = std::str::from_utf8(text).map_err(|_| ArgError::NotFloat)?;
    // Rust's parser rejects surrounding whitespace itself, but `strtod` would skip a leading
    // one and Redis then rejects it explicitly; spell the rule out rather than rely on it.
    if s.is_empty() || s.as_bytes()[0].is_ascii_whitespace() {
        return Err(ArgError::NotFloat);
    }
    let value: f64 = s.parse().map_err(|_| ArgError::NotFloat)?;
    if value.is_nan() {
        return Err(ArgError::NotFloat);
    }
    let unsigned = s.trim_start_matches(['+', '-']);
    let is_inf_literal = unsigned.starts_with(['i', 'I']);
    if value.is_infinite() && !is_inf_literal {
        // `strtod` reports ERANGE with HUGE_VAL: Redis treats overflow as not a float.
        return Err(ArgError::NotFloat);
    }
    if value == 0.0 && mantissa_has_nonzero_digit(unsigned) {
        // `strtod` reports ERANGE with a zero result: underflow is rejected as well.
        return Err(ArgError::NotFloat);
    }
    Ok(value)
}

/// Like [`parse_f64`], but also rejects infinity.
pub fn parse_f64_finite(text: &[u8]) -> Result<f64, ArgError> {
    let value = parse_f64(text)?;
    if value.is_finite() {
        Ok(value)
    } else {
        Err(ArgError::NotFloat)
    }
}

fn mantissa_has_nonzero_digit(unsigned: &str) -> bool {
    unsigned.bytes().take_while(|b| !matches!(b, b'e' | b'E')).any(|b| matches!(b, b'1'..=b'9'))
}

/// True when `arg` equals `option` ignoring ASCII case (`EX`, `ex`, `Ex` all match "EX").
pub fn is_option(arg: &[u8], option: &str) -> bool {
    arg.eq_ignore_ascii_case(option.as_bytes())
}

/// The index of the first of `options` that `arg` matches, ignoring ASCII case.
///
/// ```
/// use proto_resp::args::match_option;
/// assert_eq!(match_option(b"px", &["EX", "PX", "KEEPTTL"]), Some(1));
/// assert_eq!(match_option(b"xx ", &["NX", "XX"]), None);
/// ```
pub fn match_option(arg: &[u8], options: &[&str]) -> Option<usize> {
    options.iter().position(|option| is_option(arg, option))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: string2ll's exact acceptance set. Method: a table of wire text and results.
    #[test]
    fn i64_table() {
        let ok: &[(&[u8], i64)] = &[
            (b"0", 0),
            (b"1", 1),
            (b"-1", -1),
            (b"10", 10),
            (b"9223372036854775807", i64::MAX),
            (b"-9223372036854775808", i64::MIN),
        ];
        for &(text, want) in ok {
            assert_eq!(parse_i64(text), Ok(want), "{:?}", String::from_utf8_lossy(text));
        }
        let bad: &[&[u8]] = &[
            b"",
            b"-",
            b"+1",
            b" 1",
            b"1 ",
            b"01",
            b"-0",
            b"00",
            b"1.0",
            b"0x10",
            b"9223372036854775808",
            b"-9223372036854775809",
            b"18446744073709551616",
            b"100000000000000000000",
            b"1a",
        ];
        for &text in bad {
            assert_eq!(parse_i64(text), Err(ArgError::NotInteger), "{:?}", text);
        }
        assert_eq!(parse_u64(b"5"), Ok(5));
        assert_eq!(parse_u64(b"-5"), Err(ArgError::NotInteger));
    }

    /// Goal: string2d's acceptance set, including the ERANGE cases.
    #[test]
    fn f64_table() {
        let ok: &[(&[u8], f64)] = &[
            (b"1", 1.0),
            (b"-1.5", -1.5),
            (b"+2", 2.0),
            (b".5", 0.5),
            (b"5.", 5.0),
            (b"1e3", 1000.0),
            (b"1E-3", 0.001),
            (b"0", 0.0),
            (b"0.000e10", 0.0),
            (b"inf", f64::INFINITY),
            (b"-Infinity", f64::NEG_INFINITY),
            (b"1.7976931348623157e308", f64::MAX),
        ];
        for &(text, want) in ok {
            assert_eq!(parse_f64(text), Ok(want), "{:?}", String::from_utf8_lossy(text));
        }
        let bad: &[&[u8]] = &[
            b"", b" 1", b"1 ", b"nan", b"NaN", b"-nan", b"abc", b"1e", b".", b"1e400", b"-1e400",
            b"1e-400", b"0x10", b"1,5", b"\xff",
        ];
        for &text in bad {
            assert_eq!(parse_f64(text), Err(ArgError::NotFloat), "{:?}", text);
        }
        assert_eq!(parse_f64_finite(b"inf"), Err(ArgError::NotFloat));
        assert_eq!(parse_f64_finite(b"2.5"), Ok(2.5));
    }

    #[test]
    fn options_ignore_case() {
        assert!(is_option(b"KeepTTL", "KEEPTTL"));
        assert!(!is_option(b"KEEPTT", "KEEPTTL"));
        assert_eq!(match_option(b"nX", &["NX", "XX"]), Some(0));
        assert_eq!(ArgError::NotInteger.message(), "ERR value is not an integer or out of range");
    }
}
