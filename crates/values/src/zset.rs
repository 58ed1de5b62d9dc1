//! The value bytes of a sorted set and the ordered view the commands work on.
//!
//! Layout: one record per member, in (score, member) order, nothing else:
//!
//! ```text
//!   [score: f64, 8 bytes little-endian][member length: LEB128 varint][member bytes] ...
//! ```
//!
//! Why: every range command (ZRANGE by rank, score or lex, ZCOUNT, ZPOPMIN, ZREMRANGEBY*)
//! is a walk from one end or a slice of this order, as over Redis's listpack; a member
//! costs 9 bytes beyond its own (a listpack entry costs 2 to 3 header bytes plus the score
//! as text, up to 24). Scores are stored as the bits of the double, so a score read back is
//! the one written, whatever its text was. Member lookups (ZSCORE, ZRANK) are a linear
//! scan: the accepted cost of one-item collections, as every change rewrites the value.
//! The order is Redis's: score first (`-0` equals `0`), then the member's bytes as
//! `memcmp` compares them (a prefix first).

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::ops::Range;

use crate::{
    entries::{put_entry, Entries},
    owned::ZSetValue,
};

/// One member and its score; `member` borrows from the encoding or the command.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Entry<'a> {
    pub score: f64,
    pub member: &'a [u8],
}

/// The sorted set order. Scores are never NaN (every write refuses one).
#[inline]
pub fn order(a: &Entry<'_>, b: &Entry<'_>) -> Ordering {
    a.score.partial_cmp(&b.score).unwrap_or(Ordering::Equal).then_with(|| a.member.cmp(b.member))
}

/// The records of an encoding, in order.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    rest: &'a [u8],
}

/// Reads an encoding record by record.
#[inline]
pub fn iter(encoded: &[u8]) -> Iter<'_> {
    Iter { rest: encoded }
}

impl<'a> Iterator for Iter<'a> {
    type Item = Entry<'a>;

    #[inline]
    fn next(&mut self) -> Option<Entry<'a>> {
        let (bits, rest) = self.rest.split_first_chunk::<8>()?;
        let mut entries = Entries::new(rest);
        let member = entries.next()?;
        self.rest = entries.rest();
        Some(Entry { score: f64::from_le_bytes(*bits), member })
    }
}

/// Appends one record. `-0` is stored as `0`, as a listpack stores it (Redis reads a
/// score of `-0` back as `0`).
#[inline]
pub fn put(out: &mut Vec<u8>, entry: &Entry<'_>) {
    let score = if entry.score == 0.0 { 0.0 } else { entry.score };
    out.extend_from_slice(&score.to_le_bytes());
    put_entry(out, entry.member);
}

/// Encodes entries that are already in order.
#[inline]
pub fn encode<'e, 'a: 'e>(entries: impl IntoIterator<Item = &'e Entry<'a>>) -> Vec<u8> {
    let mut out = Vec::new();
    entries.into_iter().for_each(|entry| put(&mut out, entry));
    out
}

/// Encodes entries in any order (no member twice).
#[inline]
pub fn encode_unsorted(mut entries: Vec<Entry<'_>>) -> Vec<u8> {
    entries.sort_by(order);
    encode(&entries)
}

/// A decoded sorted set: its entries in order.
#[derive(Clone, Debug, Default)]
pub struct ZSet<'a> {
    pub entries: Vec<Entry<'a>>,
}

impl<'a> ZSet<'a> {
    #[inline]
    pub fn decode(encoded: &'a [u8]) -> ZSet<'a> {
        ZSet { entries: iter(encoded).collect() }
    }

    /// Decodes `encoded` when the key exists; an absent key is an empty set.
    #[inline]
    pub fn decode_or_empty(encoded: Option<&'a [u8]>) -> ZSet<'a> {
        encoded.map(ZSet::decode).unwrap_or_default()
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Members to scores, for commands that look up many members.
    #[inline]
    pub fn index(&self) -> HashMap<&'a [u8], f64> {
        self.entries.iter().map(|e| (e.member, e.score)).collect()
    }

    /// The encoding after taking out `removed` and putting in `added` (in any order, no
    /// member twice, none of them still present unless in `removed`): one merge pass.
    #[inline]
    pub fn rebuild(&self, removed: &HashSet<&[u8]>, mut added: Vec<Entry<'_>>) -> Vec<u8> {
        added.sort_by(order);
        let kept = self.entries.iter().filter(|e| !removed.contains(e.member));
        let mut out = Vec::new();
        let mut added = added.iter().peekable();
        for entry in kept {
            while let Some(new) = added.next_if(|new| order(new, entry) == Ordering::Less) {
                put(&mut out, new);
            }
            put(&mut out, entry);
        }
        added.for_each(|new| put(&mut out, new));
        out
    }
}

/// Whether `encoded` is a sorted set as [`encode`] writes it: whole records, at least one,
/// in strictly ascending order, no member twice, no NaN and no `-0` score (a snapshot's
/// sorted sets are checked so before any is restored).
#[inline]
pub fn is_valid(encoded: &[u8]) -> bool {
    let mut walk = iter(encoded);
    let (mut members, mut previous) = (HashSet::new(), None::<Entry<'_>>);
    while !walk.rest.is_empty() {
        let Some(entry) = walk.next() else { return false };
        let negative_zero = entry.score == 0.0 && entry.score.is_sign_negative();
        if entry.score.is_nan() || negative_zero || !members.insert(entry.member) {
            return false;
        }
        if previous.is_some_and(|before| order(&before, &entry) != Ordering::Less) {
            return false;
        }
        previous = Some(entry);
    }
    previous.is_some()
}

/// Each record with the bytes it occupies in `encoded`.
#[inline]
pub fn records(encoded: &[u8]) -> impl Iterator<Item = (Range<usize>, Entry<'_>)> {
    let mut walk = iter(encoded);
    std::iter::from_fn(move || {
        let start = encoded.len() - walk.rest.len();
        let entry = walk.next()?;
        Some((start..encoded.len() - walk.rest.len(), entry))
    })
}

/// `member`'s record: the bytes it occupies and its score.
#[inline]
pub fn locate(encoded: &[u8], member: &[u8]) -> Option<(Range<usize>, f64)> {
    records(encoded).find(|(_, e)| e.member == member).map(|(bytes, e)| (bytes, e.score))
}

/// `encoded` without the record at `remove` and with `entry`'s record where the order puts
/// it: two copies of the untouched bytes at most, nothing decoded but the walk to the
/// insertion point. A change of one member costs what the copy of the value costs.
#[inline]
pub fn replace(encoded: &[u8], remove: Option<Range<usize>>, entry: Option<&Entry<'_>>) -> Vec<u8> {
    let remove = remove.unwrap_or(0..0);
    let mut record = Vec::new();
    let at = match entry {
        Some(entry) => {
            put(&mut record, entry);
            records(encoded)
                .filter(|(bytes, _)| *bytes != remove)
                .find(|(_, e)| order(e, entry) == Ordering::Greater)
                .map_or(encoded.len(), |(bytes, _)| bytes.start)
        }
        None => encoded.len(),
    };
    let mut out = Vec::with_capacity(encoded.len() + record.len());
    if at <= remove.start {
        out.extend_from_slice(&encoded[..at]);
        out.extend_from_slice(&record);
        out.extend_from_slice(&encoded[at..remove.start]);
        out.extend_from_slice(&encoded[remove.end..]);
    } else {
        out.extend_from_slice(&encoded[..remove.start]);
        out.extend_from_slice(&encoded[remove.end..at]);
        out.extend_from_slice(&record);
        out.extend_from_slice(&encoded[at..]);
    }
    out
}

/// Whether a sorted set holds more than `members_max` members, or one longer than
/// `len_max` bytes: Redis's bounds for a listpack (`zset-max-listpack-entries` and
/// `-value`), past which a sorted set moves out of the store. A walk of the member lengths
/// alone (no score is read) that stops at the first member past a bound; none when the
/// bytes rule both out (a record takes at least ten bytes, and no member is longer than
/// the encoding).
#[inline]
pub fn past_bounds(encoded: &[u8], members_max: u64, len_max: u64) -> bool {
    let len = encoded.len() as u64;
    if len <= len_max && len / 10 <= members_max {
        return false;
    }
    let (mut at, mut members) = (0usize, 0u64);
    while let Some(rest) = encoded.get(at + 8..).filter(|rest| !rest.is_empty()) {
        let Some((member_len, used)) = crate::varint::read_usize(rest) else { break };
        members += 1;
        if members > members_max || member_len as u64 > len_max {
            return true;
        }
        at = at.saturating_add(8 + used).saturating_add(member_len);
    }
    false
}

/// The value kept outside the store for a large sorted set's encoding.
#[inline]
pub fn own(encoded: &[u8]) -> ZSetValue {
    ZSetValue::from_sorted(iter(encoded).map(|e| (e.score, e.member)))
}

/// The encoding of a sorted set kept outside the store; `None` when it is empty.
#[inline]
pub fn encode_owned(set: &ZSetValue) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    set.iter().for_each(|(score, member)| put(&mut out, &Entry { score, member }));
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: the thresholds' walk counts members and finds a long one wherever it is.
    #[test]
    fn past_bounds_at_the_edges() {
        let members: Vec<Vec<u8>> = (0..5).map(|i| format!("m{i}").into_bytes()).collect();
        let entries: Vec<Entry<'_>> =
            members.iter().enumerate().map(|(i, m)| Entry { score: i as f64, member: m }).collect();
        let encoded = encode(&entries);
        assert!(!past_bounds(&encoded, 5, 2));
        assert!(past_bounds(&encoded, 4, 2));
        assert!(past_bounds(&encoded, 5, 1));
        let long = [Entry { score: 9.0, member: b"long-member" }];
        assert!(past_bounds(&encode(entries.iter().chain(&long)), 10, 10));
        assert!(!past_bounds(&encode(entries.iter().chain(&long)), 10, 11));
    }

    fn entry(score: f64, member: &[u8]) -> Entry<'_> {
        Entry { score, member }
    }

    /// Goal: records of every member length class and special scores read back as written.
    #[test]
    fn round_trip() {
        let members: Vec<Vec<u8>> =
            [0, 1, 127, 128, 16_383, 16_384, 70_000].iter().map(|&n| vec![b'm'; n]).collect();
        let scores = [f64::NEG_INFINITY, -1.5, 0.0, 0.0, 1e-300, 3.0, f64::INFINITY];
        let entries: Vec<Entry<'_>> =
            scores.iter().zip(&members).map(|(&s, m)| entry(s, m)).collect();
        let encoded = encode(&entries);
        let read = ZSet::decode(&encoded).entries;
        assert_eq!(read.len(), entries.len());
        for (got, want) in read.iter().zip(&entries) {
            assert_eq!(got.member, want.member);
            assert_eq!(got.score.to_bits(), want.score.to_bits());
        }
        assert_eq!(ZSet::decode(&[]).len(), 0);
        let negative_zero = encode(&[entry(-0.0, b"z")]);
        assert!(ZSet::decode(&negative_zero).entries[0].score.is_sign_positive());
        assert_eq!(locate(&encoded, &members[3]).map(|(_, score)| score), Some(0.0));
        assert_eq!(locate(&encoded, b"absent"), None);
    }

    /// Goal: the order is Redis's (score, then bytes, `-0 == 0`), and a rebuild merges.
    #[test]
    fn order_and_rebuild() {
        let encoded = encode_unsorted(vec![
            entry(2.0, b"b"),
            entry(1.0, b"z"),
            entry(2.0, b"x"),
            entry(-0.0, b"ab"),
            entry(0.0, b"a"),
        ]);
        let set = ZSet::decode(&encoded);
        let members: Vec<&[u8]> = set.entries.iter().map(|e| e.member).collect();
        assert_eq!(members, [&b"a"[..], b"ab", b"z", b"b", b"x"]);
        let removed: HashSet<&[u8]> = [&b"z"[..]].into_iter().collect();
        let rebuilt = set.rebuild(&removed, vec![entry(9.0, b"z"), entry(0.5, b"c")]);
        let members: Vec<&[u8]> = iter(&rebuilt).map(|e| e.member).collect();
        assert_eq!(members, [&b"a"[..], b"ab", b"c", b"b", b"x", b"z"]);
    }

    /// Goal: a one-member change in place of a full rebuild gives the same bytes, whether
    /// the member moves down, up, stays, is new, or goes.
    #[test]
    fn replace_matches_rebuild() {
        let members: [&[u8]; 5] = [b"a", b"b", b"c", b"d", b"e"];
        let base: Vec<Entry<'_>> =
            members.iter().enumerate().map(|(i, m)| entry(i as f64, m)).collect();
        let encoded = encode(&base);
        for member in [&b"a"[..], b"c", b"e", b"new"] {
            for score in [-1.0, 0.0, 2.0, 2.5, 4.0, 9.0] {
                let moved = entry(score, member);
                let found = locate(&encoded, member).map(|(bytes, _)| bytes);
                let got = replace(&encoded, found.clone(), Some(&moved));
                let mut want: Vec<Entry<'_>> =
                    base.iter().filter(|e| e.member != member).copied().collect();
                want.push(moved);
                assert_eq!(got, encode_unsorted(want), "{member:?} {score}");
                if found.is_some() {
                    let gone = replace(&encoded, found, None);
                    let want: Vec<Entry<'_>> =
                        base.iter().filter(|e| e.member != member).copied().collect();
                    assert_eq!(gone, encode(&want));
                }
            }
        }
    }

    /// Goal: a truncated encoding ends the walk instead of panicking.
    #[test]
    fn truncated_is_short() {
        let encoded = encode(&[entry(1.0, b"abc"), entry(2.0, b"def")]);
        for cut in 0..encoded.len() {
            assert!(iter(&encoded[..cut]).count() < 2);
        }
    }
}
