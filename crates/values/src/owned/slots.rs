//! The table under large hashes and sets: entries (each one allocation) in a vector, found
//! through a hash table of their positions, so that both a lookup by key and a random
//! entry (SPOP, SRANDMEMBER, HRANDFIELD) cost O(1). A removal moves the last entry into
//! the gap, so the order is insertion order disturbed by removals; Redis's order for a
//! table this large is its hash order, and neither promises one.

use std::{
    hash::{BuildHasher, RandomState},
    marker::PhantomData,
};

use hashbrown::HashTable;

/// Where an entry's key is within its bytes.
pub(crate) trait KeyOf {
    fn key(entry: &[u8]) -> &[u8];
}

#[derive(Debug, Clone)]
pub(crate) struct Slots<K> {
    entries: Vec<Box<[u8]>>,
    positions: HashTable<usize>,
    hasher: RandomState,
    key: PhantomData<K>,
}

impl<K> Default for Slots<K> {
    #[inline]
    fn default() -> Self {
        Slots {
            entries: Vec::new(),
            positions: HashTable::new(),
            hasher: RandomState::new(),
            key: PhantomData,
        }
    }
}

impl<K: KeyOf> Slots<K> {
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The position of the entry whose key is `key`.
    #[inline]
    pub(crate) fn find(&self, key: &[u8]) -> Option<usize> {
        let (hash, entries) = (self.hasher.hash_one(key), &self.entries);
        self.positions.find(hash, |&at| K::key(&entries[at]) == key).copied()
    }

    /// The entry at `at` (below [`Slots::len`]).
    #[inline]
    pub(crate) fn nth(&self, at: usize) -> &[u8] {
        &self.entries[at]
    }

    /// Puts `entry` in place of the one at `at`, whose key it has.
    #[inline]
    pub(crate) fn replace(&mut self, at: usize, entry: Box<[u8]>) -> Box<[u8]> {
        debug_assert!(K::key(&entry) == K::key(&self.entries[at]));
        std::mem::replace(&mut self.entries[at], entry)
    }

    /// Adds `entry`, whose key is not there yet.
    #[inline]
    pub(crate) fn push(&mut self, entry: Box<[u8]>) {
        let Self { entries, positions, hasher, .. } = self;
        let hash = hasher.hash_one(K::key(&entry));
        entries.push(entry);
        let at = entries.len() - 1;
        positions.insert_unique(hash, at, |&at| hasher.hash_one(K::key(&entries[at])));
    }

    /// Removes the entry whose key is `key`, if any; the last entry takes its place.
    #[inline]
    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<Box<[u8]>> {
        let Self { entries, positions, hasher, .. } = self;
        let hash = hasher.hash_one(key);
        let found = positions.find_entry(hash, |&at| K::key(&entries[at]) == key).ok()?;
        let (at, _) = found.remove();
        let last = entries.len() - 1;
        let removed = entries.swap_remove(at);
        if at != last {
            let moved = hasher.hash_one(K::key(&entries[at]));
            if let Some(slot) = positions.find_mut(moved, |&other| other == last) {
                *slot = at;
            }
        }
        Some(removed)
    }

    /// The entries, in the table's order.
    #[inline]
    pub(crate) fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.entries.iter().map(|entry| &entry[..])
    }

    #[inline]
    pub(crate) fn reserve(&mut self, additional: usize) {
        let Self { entries, positions, hasher, .. } = self;
        entries.reserve(additional);
        positions.reserve(additional, |&at| hasher.hash_one(K::key(&entries[at])));
    }
}
