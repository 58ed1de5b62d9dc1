//! The encoding thresholds (`hash-max-listpack-*`, `set-max-intset-entries`,
//! `zset-max-listpack-*`, `list-max-listpack-size` and their ziplist-era aliases) and the
//! boundary they move: where a collection leaves its compact encoding in the store for a
//! structure kept outside it (`crate::owned`), as Redis converts a listpack or an intset
//! to a hash table, skiplist or quicklist.
//!
//! A collection moves out when Redis 7.0 would no longer keep it compact (a hash with more
//! than `hash-max-listpack-entries` fields or a name or value longer than
//! `hash-max-listpack-value` bytes; an integer set of more than `set-max-intset-entries`
//! members; a sorted set past `zset-max-listpack-*`; a list of more than
//! `list-max-listpack-size` elements, or past its node size in bytes when negative, as
//! Redis 7.2 converts a listpack list) or when its encoding passes Spinel's own byte bound
//! ([`crate::owned::OWN_MIN_BYTES`] for lists, [`crate::owned::OWN_HASH_MIN_BYTES`] for
//! hashes, [`crate::owned::OWN_TABLE_MIN_BYTES`] for the others), whichever comes first:
//! that bound stays an upper limit, whatever the thresholds. A hash's bound (1 KiB) is far
//! below Redis's thresholds, for the speed of its writes; such a hash still answers as the
//! listpack Redis would keep ([`EncodingThresholds::hash_listpack`]). A set of strings is a hash table in Redis 7.0 at any size; Spinel keeps it
//! compact up to its byte bound. The move is one way, as in Redis: a collection kept
//! outside the store stays there when it shrinks (until it is deleted, or emptied).
//!
//! Every collection write reads the thresholds (under the key's lock), so they are atomics,
//! not the kept-config list behind its mutex; CONFIG SET and the config file set them.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

use store::ValueKind;

use crate::owned::{OWN_HASH_MIN_BYTES, OWN_MIN_BYTES, OWN_TABLE_MIN_BYTES};

/// The thresholds in force (Redis 7.0's defaults until set).
#[derive(Debug)]
pub struct EncodingThresholds {
    hash_entries: AtomicU64,
    hash_value_len: AtomicU64,
    set_intset_entries: AtomicU64,
    zset_entries: AtomicU64,
    zset_value_len: AtomicU64,
    list_size: AtomicI64,
}

impl Default for EncodingThresholds {
    fn default() -> Self {
        EncodingThresholds {
            hash_entries: AtomicU64::new(512),
            hash_value_len: AtomicU64::new(64),
            set_intset_entries: AtomicU64::new(512),
            zset_entries: AtomicU64::new(128),
            zset_value_len: AtomicU64::new(64),
            list_size: AtomicI64::new(-2),
        }
    }
}

impl EncodingThresholds {
    /// Puts kept parameter `name` (canonical) in force when it is a threshold; `value` as
    /// CONFIG GET shows it (a plain number). Other names, and values that do not read as
    /// numbers, change nothing.
    pub(crate) fn apply(&self, name: &str, value: &str) {
        let unsigned = match name {
            "hash-max-listpack-entries" => &self.hash_entries,
            "hash-max-listpack-value" => &self.hash_value_len,
            "set-max-intset-entries" => &self.set_intset_entries,
            "zset-max-listpack-entries" => &self.zset_entries,
            "zset-max-listpack-value" => &self.zset_value_len,
            "list-max-listpack-size" => {
                if let Ok(size) = value.parse() {
                    self.list_size.store(size, Relaxed);
                }
                return;
            }
            _ => return,
        };
        if let Ok(n) = value.parse() {
            unsigned.store(n, Relaxed);
        }
    }
}

impl EncodingThresholds {
    /// Whether a hash write that added these names and values (their lengths) takes the
    /// hash past the thresholds; `fields` is its count after the write when it added one
    /// (a replaced field leaves the count as it was).
    #[inline]
    pub(crate) fn hash_past(&self, fields: Option<usize>, lens: [usize; 2]) -> bool {
        let len_max = self.hash_value_len.load(Relaxed);
        lens.iter().any(|&len| len as u64 > len_max)
            || fields.is_some_and(|n| n as u64 > self.hash_entries.load(Relaxed))
    }
}

impl EncodingThresholds {
    /// Whether Redis would keep a hash with this encoding as a listpack (Spinel's byte
    /// bound aside): what a hash moved out of the store below the thresholds answers to
    /// OBJECT ENCODING, HSCAN and HDEL's order (`owned::HashValue::listpack`).
    #[inline]
    pub(crate) fn hash_listpack(&self, value: &[u8]) -> bool {
        let (entries, len_max) =
            (self.hash_entries.load(Relaxed), self.hash_value_len.load(Relaxed));
        !values::hash::past_bounds(value, entries, len_max)
    }

    /// Whether a `kind` collection's encoding is past the thresholds or Spinel's byte
    /// bound, its entries' lengths aside (the command checked those it adds): the count,
    /// from a walk of the lengths only when the bytes do not rule it out.
    #[inline]
    pub(crate) fn count_past(&self, kind: ValueKind, value: &[u8]) -> bool {
        past_byte_bound(kind, value)
            || match kind {
                ValueKind::ZSet => {
                    values::zset::past_bounds(value, self.zset_entries.load(Relaxed), u64::MAX)
                }
                ValueKind::Hash => {
                    values::hash::past_bounds(value, self.hash_entries.load(Relaxed), u64::MAX)
                }
                _ => ownable(kind, value, self),
            }
    }

    /// Whether a sorted-set member of this length is past `zset-max-listpack-value`.
    #[inline]
    pub(crate) fn zset_member_past(&self, len: usize) -> bool {
        len as u64 > self.zset_value_len.load(Relaxed)
    }
}

/// Whether a `kind` collection's encoding passes Spinel's own bound for the store, which
/// stays an upper limit whatever the thresholds.
#[inline]
pub(crate) fn past_byte_bound(kind: ValueKind, value: &[u8]) -> bool {
    match kind {
        ValueKind::List => value.len() > OWN_MIN_BYTES,
        ValueKind::Hash => value.len() > OWN_HASH_MIN_BYTES,
        ValueKind::Set | ValueKind::ZSet => value.len() > OWN_TABLE_MIN_BYTES,
        ValueKind::String => false,
        ValueKind::Stream => true,
    }
}

/// Whether a `kind` collection with this encoding is kept outside the store: past Spinel's
/// byte bound, or past Redis's thresholds for a compact encoding (see the module's notes).
#[inline]
pub(crate) fn ownable(kind: ValueKind, value: &[u8], limits: &EncodingThresholds) -> bool {
    if past_byte_bound(kind, value) {
        return true;
    }
    match kind {
        ValueKind::List => list_past(value, limits),
        ValueKind::Hash => values::hash::past_bounds(
            value,
            limits.hash_entries.load(Relaxed),
            limits.hash_value_len.load(Relaxed),
        ),
        ValueKind::Set => match values::set::SetView::new(value) {
            view @ values::set::SetView::Ints { .. } => {
                view.len() as u64 > limits.set_intset_entries.load(Relaxed)
            }
            values::set::SetView::Strings { .. } => false,
        },
        ValueKind::ZSet => values::zset::past_bounds(
            value,
            limits.zset_entries.load(Relaxed),
            limits.zset_value_len.load(Relaxed),
        ),
        ValueKind::String => false,
        // A stream is only ever kept outside the store.
        ValueKind::Stream => true,
    }
}

/// A list past `list-max-listpack-size`: more elements than a positive size; for a
/// negative one, an encoding past its node size (-1: 4 KiB ... -5: 64 KiB; only -1 is
/// below [`OWN_MIN_BYTES`]).
#[inline]
fn list_past(value: &[u8], limits: &EncodingThresholds) -> bool {
    let size = limits.list_size.load(Relaxed);
    if size > 0 {
        return values::list::List::parse(value).len() as u64 > size as u64;
    }
    let node_bytes = 4096usize << (size.unsigned_abs().clamp(1, 5) - 1);
    value.len() > node_bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_move_the_boundary() {
        let limits = EncodingThresholds::default();
        let hash = |fields: usize, len: usize| {
            let mut out = vec![0u8];
            for i in 0..fields {
                values::entries::put_entry(&mut out, format!("f{i}").as_bytes());
                values::entries::put_entry(&mut out, &vec![b'v'; len]);
            }
            out
        };
        // A hash moves out of the store past its own byte bound, or past the thresholds;
        // whether Redis would still call it a listpack is the thresholds' alone.
        assert!(!ownable(ValueKind::Hash, &hash(10, 64), &limits));
        assert!(ownable(ValueKind::Hash, &hash(100, 64), &limits));
        assert!(limits.hash_listpack(&hash(100, 64)) && limits.hash_listpack(&hash(512, 8)));
        assert!(ownable(ValueKind::Hash, &hash(1, 65), &limits));
        assert!(!limits.hash_listpack(&hash(513, 1)) && !limits.hash_listpack(&hash(1, 65)));
        limits.apply("hash-max-listpack-entries", "2");
        assert!(!ownable(ValueKind::Hash, &hash(2, 1), &limits));
        assert!(ownable(ValueKind::Hash, &hash(3, 1), &limits));
        assert!(limits.hash_listpack(&hash(2, 1)) && !limits.hash_listpack(&hash(3, 1)));
        limits.apply("hash-max-listpack-value", "1000000");
        limits.apply("hash-max-listpack-entries", "1000000");
        // Spinel's own bound stays an upper limit.
        assert!(ownable(ValueKind::Hash, &hash(1, OWN_HASH_MIN_BYTES), &limits));
        assert!(limits.hash_listpack(&hash(1, OWN_HASH_MIN_BYTES)));

        let list = |n: usize| values::list::encode((0..n).map(|_| &b"x"[..])).unwrap();
        assert!(!ownable(ValueKind::List, &list(1000), &limits));
        limits.apply("list-max-listpack-size", "4");
        assert!(!ownable(ValueKind::List, &list(4), &limits));
        assert!(ownable(ValueKind::List, &list(5), &limits));
        limits.apply("list-max-listpack-size", "-1");
        assert!(!ownable(ValueKind::List, &list(2000), &limits));
        assert!(ownable(ValueKind::List, &list(2100), &limits));
        limits.apply("list-max-listpack-size", "nonsense");
        assert_eq!(limits.list_size.load(Relaxed), -1);
    }
}
