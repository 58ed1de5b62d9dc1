//! The cursor of HSCAN and ZSCAN over a collection too large for one page: members come in
//! the order of a fixed hash of their bytes, and the cursor is the first hash not yet
//! returned, so a member present for the whole scan is returned even when others come and
//! go (Redis's guarantee), however the collection is stored.
//!
//! And the cursor's text as SSCAN and ZSCAN read it ([`parse_cursor`]).

/// A large collection is scanned in at most about this many pages, whatever COUNT says (a
/// hint in Redis too): each page costs a pass over the collection, so small pages would
/// make a whole scan quadratic.
pub const PAGES_MAX: usize = 16;

/// FNV-1a of a member, mapped to `1..=2^63` so that no member hashes to the cursor 0.
/// Stable across runs and builds, as a cursor must be.
#[inline]
pub fn member_hash(bytes: &[u8]) -> u64 {
    let hash = bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
    (hash >> 1) + 1
}

/// One page of a collection of `len` members, given those whose hash is at or past the
/// cursor, and the cursor that follows it (0 at the end): the smallest hashes (found in
/// linear time), `count` of them or `len / PAGES_MAX` if more, and any others equal to the
/// largest of them (members sharing a hash share a page).
#[inline]
pub fn page<T>(mut rest: Vec<(u64, T)>, count: usize, len: usize) -> (u64, Vec<T>) {
    let page_len = count.max(len / PAGES_MAX).max(1);
    if rest.len() <= page_len {
        rest.sort_by_key(|(hash, _)| *hash);
        return (0, rest.into_iter().map(|(_, member)| member).collect());
    }
    rest.select_nth_unstable_by_key(page_len - 1, |(hash, _)| *hash);
    let last = rest[page_len - 1].0;
    let next = rest[page_len..].iter().map(|(hash, _)| *hash).filter(|&hash| hash > last).min();
    let mut taken: Vec<(u64, T)> = rest
        .into_iter()
        .enumerate()
        .filter(|(at, (hash, _))| *at < page_len || *hash == last)
        .map(|(_, entry)| entry)
        .collect();
    taken.sort_by_key(|(hash, _)| *hash);
    (next.unwrap_or(0), taken.into_iter().map(|(_, member)| member).collect())
}

/// Redis 7.0 reads a collection scan's cursor with `strtoul` (`parseScanCursorOrReply`):
/// an optional sign (a negative number wraps, so `-1` is the largest cursor), digits,
/// nothing after; an empty string is 0; a leading space or an overflow is refused.
#[inline]
pub fn parse_cursor(text: &[u8]) -> Option<u64> {
    let (negative, digits) = match text.split_first() {
        None => return Some(0),
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        Some(_) => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value = std::str::from_utf8(digits).ok()?.parse::<u64>().ok()?;
    Some(if negative { value.wrapping_neg() } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: `strtoul`'s reading of a cursor, as SSCAN and ZSCAN had it.
    #[test]
    fn cursor_text() {
        assert_eq!(parse_cursor(b""), Some(0));
        assert_eq!(parse_cursor(b"0"), Some(0));
        assert_eq!(parse_cursor(b"+7"), Some(7));
        assert_eq!(parse_cursor(b"-1"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551616"), None);
        assert_eq!(parse_cursor(b"42"), Some(42));
        for bad in [&b" 1"[..], b"-", b"+", b"1 ", b"x", b"0x1", b"--1"] {
            assert_eq!(parse_cursor(bad), None, "{bad:?}");
        }
    }

    /// Goal: pages cover every member once, in hash order, ending with cursor 0.
    #[test]
    fn pages_cover_everything_once() {
        let members: Vec<Vec<u8>> = (0..1000u32).map(|i| i.to_string().into_bytes()).collect();
        let (mut cursor, mut seen) = (0u64, Vec::new());
        for _ in 0..=members.len() {
            let rest: Vec<(u64, &[u8])> = members
                .iter()
                .map(|m| (member_hash(m), &m[..]))
                .filter(|(hash, _)| *hash >= cursor)
                .collect();
            let (next, page) = page(rest, 10, members.len());
            seen.extend(page);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        seen.sort();
        let mut all: Vec<&[u8]> = members.iter().map(Vec::as_slice).collect();
        all.sort();
        assert_eq!(seen, all);
    }
}
