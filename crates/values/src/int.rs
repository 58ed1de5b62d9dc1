//! Redis's canonical integer text (`string2ll`): what a set member must be to be stored
//! as an integer. The same rule as the protocol's argument parser (`proto_resp::args::
//! parse_i64`), kept here because this crate sits below the protocols; a test there and
//! here pins the same cases.

/// The longest `i64` in decimal: "-9223372036854775808".
const I64_TEXT_LEN_MAX: usize = 20;

/// `text` as an `i64` if it is one's canonical decimal form: an optional `-`, no `+`, no
/// leading zero (so "0" but not "-0" or "00"), no space, in range.
#[inline]
pub fn parse_canonical_i64(text: &[u8]) -> Option<i64> {
    if text.is_empty() || text.len() > I64_TEXT_LEN_MAX {
        return None;
    }
    if text == b"0" {
        return Some(0);
    }
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    // The first digit must be 1-9: this rules out "-0", "00" and "-".
    if !matches!(digits.first(), Some(b'1'..=b'9')) {
        return None;
    }
    let mut magnitude: u64 = 0;
    for &byte in digits {
        if !byte.is_ascii_digit() {
            return None;
        }
        magnitude = magnitude.checked_mul(10)?.checked_add(u64::from(byte - b'0'))?;
    }
    if negative {
        // i64::MIN has no positive counterpart, so compare magnitudes in u64.
        (magnitude <= i64::MIN.unsigned_abs()).then(|| 0i64.wrapping_sub_unsigned(magnitude))
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// Room for an `i64` in decimal.
#[derive(Default)]
pub struct IntText([u8; 20]);

impl IntText {
    /// `n`'s decimal text.
    pub fn format(&mut self, n: i64) -> &[u8] {
        let mut at = self.0.len();
        let mut rest = n.unsigned_abs();
        loop {
            at -= 1;
            self.0[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        if n < 0 {
            // 19 digits at most, so the sign always fits.
            at -= 1;
            self.0[at] = b'-';
        }
        &self.0[at..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: the canonical forms parse, every other spelling does not.
    #[test]
    fn canonical_only() {
        let good: [(&[u8], i64); 6] = [
            (b"0", 0),
            (b"7", 7),
            (b"-7", -7),
            (b"9223372036854775807", i64::MAX),
            (b"-9223372036854775808", i64::MIN),
            (b"10", 10),
        ];
        for (text, n) in good {
            assert_eq!(parse_canonical_i64(text), Some(n));
            assert_eq!(IntText::default().format(n), text);
        }
        let bad: [&[u8]; 10] = [
            b"",
            b"-",
            b"-0",
            b"00",
            b"01",
            b"+1",
            b" 1",
            b"1 ",
            b"9223372036854775808",
            b"-9223372036854775809",
        ];
        for text in bad {
            assert_eq!(parse_canonical_i64(text), None, "{text:?}");
        }
    }
}
