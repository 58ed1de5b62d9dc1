//! Score and lexicographic ranges (`(1.5 +inf`, `[a (b`), where they fall in a sorted set,
//! and scores as Redis 7.0 prints them.

use std::ops::Range;

use proto_resp::Protocol;

use super::encoding::Entry;
use super::view::Sorted;

/// `min or max is not a float`: a score range bound that does not parse.
pub(super) const SCORE_RANGE: &str = "ERR min or max is not a float";
/// A lex range bound that starts with none of `[ ( - +`.
pub(super) const LEX_RANGE: &str = "ERR min or max not valid string range item";

/// `min <= score <= max`, either end exclusive.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct ScoreRange {
    pub min: f64,
    pub max: f64,
    pub min_ex: bool,
    pub max_ex: bool,
}

impl ScoreRange {
    /// Parses two bounds as `zslParseRange`: an optional `(`, then what C's `strtod`
    /// accepts up to the end; NaN is refused.
    pub(super) fn parse(min: &[u8], max: &[u8]) -> Option<ScoreRange> {
        let (min, min_ex) = score_bound(min)?;
        let (max, max_ex) = score_bound(max)?;
        Some(ScoreRange { min, max, min_ex, max_ex })
    }

    pub(super) fn above_min(&self, score: f64) -> bool {
        if self.min_ex {
            score > self.min
        } else {
            score >= self.min
        }
    }

    pub(super) fn below_max(&self, score: f64) -> bool {
        if self.max_ex {
            score < self.max
        } else {
            score <= self.max
        }
    }

    /// The positions of `set` (in order) whose score is in the range.
    pub(super) fn span(&self, set: &Sorted<'_>) -> Range<usize> {
        let start = set.partition_point(|e| !self.above_min(e.score));
        let end = set.partition_point(|e| self.below_max(e.score));
        start..end.max(start)
    }
}

fn score_bound(text: &[u8]) -> Option<(f64, bool)> {
    match text.split_first() {
        Some((b'(', rest)) => Some((strtod(rest)?, true)),
        _ => Some((strtod(text)?, false)),
    }
}

/// What `strtod(text, &end)` followed by `*end == '\0' && !isnan` accepts: leading
/// white space, a decimal or hexadecimal number or `inf`/`infinity`, overflow to
/// infinity; the empty string is 0 (nothing parsed, and the end is the terminator). The C
/// string ends at a NUL byte.
fn strtod(text: &[u8]) -> Option<f64> {
    let text = text.split(|&b| b == 0).next().unwrap_or_default();
    if text.is_empty() {
        return Some(0.0);
    }
    let start = text.iter().position(|b| !b" \t\n\x0b\x0c\r".contains(b))?;
    if let Some(value) = parse_hex(&text[start..]) {
        return Some(value);
    }
    let number = std::str::from_utf8(&text[start..]).ok()?;
    // Rust's parser takes what strtod takes (and "nan", refused below), but not a
    // "+"/"-" alone or an exponent with no digits, which strtod would not take whole
    // either.
    let value: f64 = number.parse().ok()?;
    (!value.is_nan()).then_some(value)
}

/// A score argument (ZADD, ZINCRBY): Redis's `getDoubleFromObject`, which is
/// `proto_resp::args::parse_f64` plus `strtod`'s hexadecimal form (`0x10` is 16).
pub(in crate::resp) fn parse_score(text: &[u8]) -> Result<f64, proto_resp::args::ArgError> {
    match parse_hex(text) {
        Some(value) if value.is_finite() => Ok(value),
        Some(_) => Err(proto_resp::args::ArgError::NotFloat),
        None => proto_resp::args::parse_f64(text),
    }
}

/// `strtod`'s hexadecimal float taking all of `text`: `[+-]0x<hex>[.<hex>][p[+-]<dec>]`.
/// `None` when `text` is not one. Digits beyond 64 bits of mantissa are rounded by the
/// float arithmetic (strtod rounds once; the two can differ in the last bit there).
fn parse_hex(text: &[u8]) -> Option<f64> {
    let (negative, rest) = match text.split_first()? {
        (b'-', rest) => (true, rest),
        (b'+', rest) => (false, rest),
        _ => (false, text),
    };
    let rest = rest.strip_prefix(b"0x").or_else(|| rest.strip_prefix(b"0X"))?;
    let (mantissa, exponent) = match rest.iter().position(|&b| b == b'p' || b == b'P') {
        Some(at) => (&rest[..at], Some(&rest[at + 1..])),
        None => (rest, None),
    };
    let (int, frac) = match mantissa.iter().position(|&b| b == b'.') {
        Some(at) => (&mantissa[..at], &mantissa[at + 1..]),
        None => (mantissa, &[][..]),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let mut value = 0.0f64;
    for &digit in int.iter().chain(frac) {
        value = value * 16.0 + f64::from((digit as char).to_digit(16)?);
    }
    let mut exp: i64 = -4 * frac.len() as i64;
    if let Some(exponent) = exponent {
        let text = std::str::from_utf8(exponent).ok()?;
        if text.is_empty()
            || !text.trim_start_matches(['+', '-']).bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        exp += text.parse::<i64>().ok()?.clamp(-10_000, 10_000);
    }
    let value = value * 2f64.powi(exp.clamp(-2000, 2000) as i32);
    Some(if negative { -value } else { value })
}

/// One end of a lex range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LexBound<'a> {
    /// `-`: below every member.
    Min,
    /// `+`: above every member.
    Max,
    Inclusive(&'a [u8]),
    Exclusive(&'a [u8]),
}

/// A lex range, as `zslParseLexRange` reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct LexRange<'a> {
    pub min: LexBound<'a>,
    pub max: LexBound<'a>,
}

fn lex_bound(text: &[u8]) -> Option<LexBound<'_>> {
    match text.split_first()? {
        (b'+', []) => Some(LexBound::Max),
        (b'-', []) => Some(LexBound::Min),
        (b'(', rest) => Some(LexBound::Exclusive(rest)),
        (b'[', rest) => Some(LexBound::Inclusive(rest)),
        _ => None,
    }
}

impl<'a> LexRange<'a> {
    pub(super) fn parse(min: &'a [u8], max: &'a [u8]) -> Option<LexRange<'a>> {
        Some(LexRange { min: lex_bound(min)?, max: lex_bound(max)? })
    }

    pub(super) fn above_min(&self, member: &[u8]) -> bool {
        match self.min {
            LexBound::Min => true,
            LexBound::Max => false,
            LexBound::Inclusive(min) => member >= min,
            LexBound::Exclusive(min) => member > min,
        }
    }

    pub(super) fn below_max(&self, member: &[u8]) -> bool {
        match self.max {
            LexBound::Min => false,
            LexBound::Max => true,
            LexBound::Inclusive(max) => member <= max,
            LexBound::Exclusive(max) => member < max,
        }
    }

    /// `zslIsInLexRange`'s first test: min above max, or equal with an open end.
    fn is_empty(&self) -> bool {
        use std::cmp::Ordering::*;
        let (min, max) = (self.min, self.max);
        let key = |b: LexBound<'a>| match b {
            LexBound::Min => (0, &[][..]),
            LexBound::Max => (2, &[][..]),
            LexBound::Inclusive(s) | LexBound::Exclusive(s) => (1, s),
        };
        let ex = |b: LexBound<'a>| !matches!(b, LexBound::Inclusive(_));
        match key(min).cmp(&key(max)) {
            Greater => true,
            Equal => ex(min) || ex(max),
            Less => false,
        }
    }

    /// The positions in the range, found as Redis walks a listpack: the range must
    /// overlap the set's ends (first member <= max, last member >= min); it starts at the
    /// first member >= min and runs while members are <= max. With equal scores (what lex
    /// ranges are for) this is the plain lex range; with mixed scores it is what Redis
    /// answers for a set of up to 128 members. A set kept outside the store is searched
    /// instead, as Redis searches a skiplist.
    pub(super) fn span(&self, set: &Sorted<'_>) -> Range<usize> {
        match set {
            Sorted::Slice(entries) => self.walk_span(entries),
            Sorted::Owned(_) => self.search_span(set),
        }
    }

    /// The reverse walk of ZREVRANGEBYLEX (`zzlLastInLexRange`): from the last member
    /// <= max back while members are >= min. Positions in forward order.
    pub(super) fn span_rev(&self, set: &Sorted<'_>) -> Range<usize> {
        match set {
            Sorted::Slice(entries) => self.walk_span_rev(entries),
            Sorted::Owned(_) => self.search_span(set),
        }
    }

    /// The range found by two binary searches: what a walk finds when the scores are equal.
    fn search_span(&self, set: &Sorted<'_>) -> Range<usize> {
        if self.is_empty() {
            return 0..0;
        }
        let start = set.partition_point(|e| !self.above_min(e.member));
        let end = set.partition_point(|e| self.below_max(e.member));
        start..end.max(start)
    }

    fn walk_span(&self, entries: &[Entry<'_>]) -> Range<usize> {
        let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
            return 0..0;
        };
        if self.is_empty() || !self.above_min(last.member) || !self.below_max(first.member) {
            return 0..0;
        }
        let Some(start) = entries.iter().position(|e| self.above_min(e.member)) else {
            return 0..0;
        };
        let len = entries[start..].iter().take_while(|e| self.below_max(e.member)).count();
        start..start + len
    }

    fn walk_span_rev(&self, entries: &[Entry<'_>]) -> Range<usize> {
        let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
            return 0..0;
        };
        if self.is_empty() || !self.above_min(last.member) || !self.below_max(first.member) {
            return 0..0;
        }
        let Some(end) = entries.iter().rposition(|e| self.below_max(e.member)) else {
            return 0..0;
        };
        let len = entries[..=end].iter().rev().take_while(|e| self.above_min(e.member)).count();
        end + 1 - len..end + 1
    }
}

/// Rank bounds as ZRANGE and ZREMRANGEBYRANK read them (negative from the end), clamped;
/// `None` when the range is empty.
pub(super) fn rank_span(start: i64, end: i64, len: usize) -> Option<Range<usize>> {
    let len = len as i64;
    let start = if start < 0 { (len + start).max(0) } else { start };
    let end = if end < 0 { len + end } else { end };
    if start > end || start >= len {
        return None;
    }
    Some(start as usize..end.min(len - 1) as usize + 1)
}

/// A score as Redis 7.0 prints one (`addReplyDouble`, `d2string`): C's `%.17g`, with
/// `inf` and `-inf`. (Redis 7.2 switched to the shortest round trip, which
/// `proto_resp::reply::format_double` writes: `1.1` where 7.0 sends `1.1000000000000001`.)
pub(super) fn format_score(score: f64, out: &mut Vec<u8>) {
    if score.is_infinite() {
        out.extend_from_slice(if score > 0.0 { b"inf" } else { b"-inf" });
        return;
    }
    let sci = format!("{score:.16e}");
    let (mantissa, exp) = sci.split_once('e').expect("{:e} has an exponent");
    let exp: i32 = exp.parse().expect("{:e} exponent is an integer");
    if (-4..17).contains(&exp) {
        let fixed = format!("{score:.*}", (16 - exp) as usize);
        out.extend_from_slice(trim_fraction(&fixed).as_bytes());
    } else {
        out.extend_from_slice(trim_fraction(mantissa).as_bytes());
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        out.extend_from_slice(format!("{:02}", exp.abs()).as_bytes());
    }
}

/// `%g` drops trailing zeros of the fraction, and the point when none is left.
fn trim_fraction(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

/// A score reply: a bulk string in RESP2, a double (`,1.5`) in RESP3.
pub(super) fn put_score(out: &mut Vec<u8>, protocol: Protocol, score: f64) {
    let mut text = Vec::with_capacity(24);
    format_score(score, &mut text);
    match protocol {
        Protocol::Resp2 => {
            out.extend_from_slice(format!("${}\r\n", text.len()).as_bytes());
            out.extend_from_slice(&text);
        }
        Protocol::Resp3 => {
            out.push(b',');
            out.extend_from_slice(&text);
        }
    }
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: `%.17g` exactly as glibc prints it, for the shapes scores take.
    #[test]
    fn score_text() {
        let table: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (1.1, "1.1000000000000001"),
            (0.1, "0.10000000000000001"),
            (1.5e-7, "1.4999999999999999e-07"),
            (1e20, "1e+20"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (-2.5, "-2.5"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (5e-324, "4.9406564584124654e-324"),
        ];
        for &(score, want) in table {
            let mut out = Vec::new();
            format_score(score, &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), want, "{score:e}");
        }
    }

    /// Goal: score bounds accept what strtod accepts whole, and nothing else.
    #[test]
    fn score_bounds() {
        let r = ScoreRange::parse(b"(1.5", b"+inf").unwrap();
        assert_eq!((r.min, r.min_ex, r.max, r.max_ex), (1.5, true, f64::INFINITY, false));
        assert_eq!(ScoreRange::parse(b"", b"(").unwrap().max, 0.0);
        assert_eq!(ScoreRange::parse(b" 2", b"1e999").unwrap().max, f64::INFINITY);
        assert_eq!(ScoreRange::parse(b"0x10", b"(-0x1.8p1").unwrap().max, -3.0);
        assert_eq!(parse_score(b"0X1p4"), Ok(16.0));
        assert_eq!(parse_score(b"-0x.8"), Ok(-0.5));
        assert!(parse_score(b"0x1p99999").is_err());
        for bad in [&b"0x"[..], b"0xg", b"0x1p", b"0x1p+", b" 0x1"] {
            assert!(parse_score(bad).is_err(), "{bad:?}");
        }
        for bad in [&b"nan"[..], b"1x", b"((1", b"  ", b"[1", b"-", b"0x"] {
            assert_eq!(ScoreRange::parse(bad, b"1"), None, "{bad:?}");
        }
    }

    /// Goal: lex spans follow Redis's listpack walk, including mixed scores.
    #[test]
    fn lex_spans() {
        let members: [&[u8]; 4] = [b"a", b"b", b"c", b"d"];
        let entries: Vec<Entry<'_>> =
            members.iter().map(|m| Entry { score: 0.0, member: m }).collect();
        let span = |min: &[u8], max: &[u8]| {
            LexRange::parse(min, max).unwrap().span(&Sorted::Slice(&entries))
        };
        assert_eq!(span(b"-", b"+"), 0..4);
        assert_eq!(span(b"(a", b"[c"), 1..3);
        assert_eq!(span(b"[c", b"[a"), 0..0);
        assert_eq!(span(b"(b", b"(b"), 0..0);
        assert_eq!(span(b"+", b"-"), 0..0);
        assert_eq!(LexRange::parse(b"(a", b"[c").unwrap().span_rev(&Sorted::Slice(&entries)), 1..3);
        assert_eq!(LexRange::parse(b"a", b"+"), None);
        let mixed = [Entry { score: 1.0, member: b"c" }, Entry { score: 2.0, member: b"a" }];
        assert_eq!(LexRange::parse(b"[b", b"[d").unwrap().span(&Sorted::Slice(&mixed)), 0..0);
    }

    #[test]
    fn ranks() {
        assert_eq!(rank_span(0, -1, 3), Some(0..3));
        assert_eq!(rank_span(-100, 1, 3), Some(0..2));
        assert_eq!(rank_span(2, 100, 3), Some(2..3));
        assert_eq!(rank_span(3, 5, 3), None);
        assert_eq!(rank_span(2, 1, 3), None);
        assert_eq!(rank_span(0, -4, 3), None);
    }
}
