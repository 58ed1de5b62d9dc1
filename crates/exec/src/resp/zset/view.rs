//! What the read commands see of a sorted set: its encoding decoded into a slice in
//! order, or the value kept outside the store (`owned::ZSetValue`), read in place under its
//! mutex. Both answer by rank, so every range command is written once; on the kept value a
//! lookup or a range costs O(log n) plus what it returns instead of O(size).

use std::collections::HashMap;

use crate::owned::ZSetValue;

use super::encoding::Entry;

#[derive(Clone, Copy, Debug)]
pub(super) enum Sorted<'a> {
    Slice(&'a [Entry<'a>]),
    Owned(&'a ZSetValue),
}

fn entry((score, member): (f64, &[u8])) -> Entry<'_> {
    Entry { score, member }
}

impl<'a> Sorted<'a> {
    pub(super) fn len(&self) -> usize {
        match self {
            Sorted::Slice(entries) => entries.len(),
            Sorted::Owned(set) => set.len(),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entry at `rank` (below the length).
    pub(super) fn get(&self, rank: usize) -> Entry<'a> {
        match *self {
            Sorted::Slice(entries) => entries[rank],
            Sorted::Owned(set) => entry(set.get(rank)),
        }
    }

    /// How many entries, from the lowest, `pred` holds for (it must hold for a prefix of
    /// the order and not after it).
    pub(super) fn partition_point(&self, mut pred: impl FnMut(&Entry<'_>) -> bool) -> usize {
        match self {
            Sorted::Slice(entries) => entries.partition_point(pred),
            Sorted::Owned(set) => {
                set.partition_point(|score, member| pred(&Entry { score, member }))
            }
        }
    }

    /// The entries from `rank` upward (none when `rank` is past the end).
    pub(super) fn up_from(&self, rank: usize) -> Box<dyn Iterator<Item = Entry<'a>> + 'a> {
        match *self {
            Sorted::Slice(entries) => {
                Box::new(entries.get(rank..).unwrap_or_default().iter().copied())
            }
            Sorted::Owned(set) => Box::new(set.iter_from(rank).map(entry)),
        }
    }

    /// The entries from `rank` (included, below the length) downward.
    pub(super) fn down_from(&self, rank: usize) -> Box<dyn Iterator<Item = Entry<'a>> + 'a> {
        match *self {
            Sorted::Slice(entries) => Box::new(entries[..=rank].iter().rev().copied()),
            Sorted::Owned(set) => Box::new(set.iter_down_from(rank).map(entry)),
        }
    }

    /// Every entry, in order.
    pub(super) fn entries(&self) -> Vec<Entry<'a>> {
        self.up_from(0).collect()
    }

    /// `member`'s rank and score.
    pub(super) fn find(&self, member: &[u8]) -> Option<(usize, f64)> {
        match self {
            Sorted::Slice(entries) => {
                let rank = entries.iter().position(|e| e.member == member)?;
                Some((rank, entries[rank].score))
            }
            Sorted::Owned(set) => set.rank(member),
        }
    }

    /// The score of each of `members` (a slice is indexed once when they are many).
    pub(super) fn scores(&self, members: &[&[u8]]) -> Vec<Option<f64>> {
        match self {
            Sorted::Slice(entries) if members.len() > 4 => {
                let index: HashMap<&[u8], f64> =
                    entries.iter().map(|e| (e.member, e.score)).collect();
                members.iter().map(|m| index.get(m).copied()).collect()
            }
            Sorted::Slice(_) => members.iter().map(|m| self.find(m).map(|(_, s)| s)).collect(),
            Sorted::Owned(set) => members.iter().map(|m| set.score(m)).collect(),
        }
    }
}
