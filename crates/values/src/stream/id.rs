//! A stream entry's ID: milliseconds and a sequence number, compared as one 128-bit number
//! (ms first), written `ms-seq`.

use std::fmt;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId { ms: u64::MAX, seq: u64::MAX };

    #[inline]
    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// The ID right after this one; `None` past the last possible one.
    #[inline]
    pub fn next(self) -> Option<StreamId> {
        match self.seq.checked_add(1) {
            Some(seq) => Some(StreamId::new(self.ms, seq)),
            None => self.ms.checked_add(1).map(|ms| StreamId::new(ms, 0)),
        }
    }

    /// The ID right before this one; `None` before 0-0.
    #[inline]
    pub fn prev(self) -> Option<StreamId> {
        match self.seq.checked_sub(1) {
            Some(seq) => Some(StreamId::new(self.ms, seq)),
            None => self.ms.checked_sub(1).map(|ms| StreamId::new(ms, u64::MAX)),
        }
    }

    /// `ms-seq` as text.
    #[inline]
    pub fn text(self) -> Vec<u8> {
        self.to_string().into_bytes()
    }

    /// Parses `ms[-seq]` as Redis's `streamGenericParseIDOrReply` does, without the special
    /// forms (`-`, `+`, `$`, `>`, `*`): a missing seq is `missing_seq`; `None` for anything
    /// else. The second value says whether the seq was given.
    pub fn parse(text: &[u8], missing_seq: u64) -> Option<(StreamId, bool)> {
        if text.len() > 127 {
            return None;
        }
        match text.iter().position(|&b| b == b'-') {
            Some(dash) => {
                let ms = parse_u64(&text[..dash])?;
                let seq = parse_u64(&text[dash + 1..])?;
                Some((StreamId::new(ms, seq), true))
            }
            None => Some((StreamId::new(parse_u64(text)?, missing_seq), false)),
        }
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// Redis's `string2ull`: its canonical integer form when that is not negative, else what
/// C's `strtoull` takes (leading white space, a sign, digits to the end; a `-` negates
/// modulo 2^64), in range.
fn parse_u64(text: &[u8]) -> Option<u64> {
    if let Some(n) = crate::int::parse_canonical_i64(text) {
        return u64::try_from(n).ok();
    }
    let start =
        text.iter().position(|b| !matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))?;
    let (negative, digits) = match text[start] {
        b'-' => (true, &text[start + 1..]),
        b'+' => (false, &text[start + 1..]),
        _ => (false, &text[start..]),
    };
    if digits.is_empty() {
        return None;
    }
    let magnitude = digits.iter().try_fold(0u64, |n, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        n.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    })?;
    Some(if negative { magnitude.wrapping_neg() } else { magnitude })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_neighbours() {
        assert_eq!(StreamId::parse(b"5", 7), Some((StreamId::new(5, 7), false)));
        assert_eq!(StreamId::parse(b"5-3", 7), Some((StreamId::new(5, 3), true)));
        let max = b"18446744073709551615-18446744073709551615";
        assert_eq!(StreamId::parse(max, 0), Some((StreamId::MAX, true)));
        for bad in [&b""[..], b"-", b"5-", b"-5", b"a", b"18446744073709551616", b"1-2-3", b"1--1"]
        {
            assert_eq!(StreamId::parse(bad, 0), None, "{bad:?}");
        }
        // strtoull's forms: a sign, leading blanks, leading zeros.
        assert_eq!(StreamId::parse(b" +05", 0), Some((StreamId::new(5, 0), false)));
        assert_eq!(
            StreamId::parse(b"1--05", 0),
            Some((StreamId::new(1, 5u64.wrapping_neg()), true))
        );
        assert_eq!(StreamId::MAX.next(), None);
        assert_eq!(StreamId::MIN.prev(), None);
        assert_eq!(StreamId::new(1, u64::MAX).next(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::new(2, 0).prev(), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(StreamId::new(3, 4).to_string(), "3-4");
    }
}
