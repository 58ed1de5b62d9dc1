//! The table under large hashes and sets: entries packed one after another in one byte
//! arena, a vector of where each starts, and a hash table of their positions in that
//! vector, so that both a lookup by key and a random entry (SPOP, SRANDMEMBER, HRANDFIELD)
//! cost O(1).
//!
//! Why an arena and not one allocation per entry: a 50-byte hash field boxed on its own
//! cost its allocation (64 bytes with glibc's header and rounding), a 16-byte fat pointer
//! and the allocator's holes; packed, it costs its bytes and a length byte, and 4 bytes
//! for its start (`spinel-bench memory`, 1,000 fields: 115 bytes a field charged before,
//! see `hash_field_bytes`). A replaced entry of the same length is overwritten where it is
//! (an HSET of a value as long as the old one writes nothing else); any other change
//! appends and leaves the old bytes as garbage, and the arena is compacted once garbage
//! passes a sixteenth of it, so it stays within 2/15 of the live bytes (growth is a
//! sixteenth at a time, for the same bound on spare capacity; the vector of starts grows
//! the same way). A sixteenth and not an eighth: it took 7 bytes off a 50-byte hash
//! field's charge, and an HSET that overwrites a value of the same length, the common
//! change, leaves no garbage to compact.
//!
//! Order: the entries' order is the vector's. [`Slots::remove`] either moves the last
//! entry into the gap (O(1): Redis's order for a table this large is its hash order, and
//! neither promises one) or closes it (O(n): what a listpack does, for a collection Redis
//! would still keep as one).

use std::{
    hash::{BuildHasher, RandomState},
    marker::PhantomData,
};

use hashbrown::HashTable;

use crate::varint;

/// Where an entry's key is within its bytes.
pub(crate) trait KeyOf {
    fn key(entry: &[u8]) -> &[u8];
}

/// Arena bytes below which garbage is left alone (compaction would gain nothing).
const GARBAGE_MIN_BYTES: usize = 256;

/// The smallest growth of the arena.
const GROWTH_MIN_BYTES: usize = 64;

/// The smallest growth of the vector of starts.
const STARTS_MIN: usize = 8;

#[derive(Debug, Clone)]
pub(crate) struct Slots<K> {
    /// Each entry as its length (varint) and its bytes.
    arena: Vec<u8>,
    /// Where each entry starts in `arena`, in the table's order. (u32: the arena is within
    /// the bytes charged for it, and a collection's charge within `proto-max-bulk-len`,
    /// 512 MiB; see [`start_of`].)
    starts: Vec<u32>,
    /// Positions in `starts`, found by key hash. (u32: a table this large would hold
    /// billions of entries, far past any collection the memory bound admits.)
    positions: HashTable<u32>,
    /// Bytes in `arena` no entry holds any more.
    garbage_bytes: usize,
    hasher: RandomState,
    key: PhantomData<K>,
}

impl<K> Default for Slots<K> {
    #[inline]
    fn default() -> Self {
        Slots {
            arena: Vec::new(),
            starts: Vec::new(),
            positions: HashTable::new(),
            garbage_bytes: 0,
            hasher: RandomState::new(),
            key: PhantomData,
        }
    }
}

/// The entry that starts at `start` of `arena`, and the bytes it takes there (length
/// included). Entries are only written by [`Slots::append`]; a damaged one would read as
/// empty, never a panic.
#[inline]
fn entry_at(arena: &[u8], start: u32) -> (&[u8], usize) {
    let tail = arena.get(start as usize..).unwrap_or(&[]);
    match varint::read_usize(tail) {
        Some((len, used)) => match tail.get(used..used + len) {
            Some(entry) => (entry, used + len),
            None => (&[], used),
        },
        None => (&[], 0),
    }
}

/// An arena offset as a start. The arena never reaches 4 GiB: it is within the bytes
/// charged for it (`arena_entry_bytes`), which the commands keep within
/// `proto-max-bulk-len` (512 MiB) before they add to it. Were it passed, the start would
/// read as a damaged entry (empty), never a panic.
#[inline]
fn start_of(offset: usize) -> u32 {
    u32::try_from(offset).unwrap_or(u32::MAX)
}

/// Room for `need` more items in `vec`, growing it by at least a sixteenth (and
/// `floor`): spare capacity stays within a sixteenth of its length past the floor.
#[inline]
fn grow<T>(vec: &mut Vec<T>, need: usize, floor: usize) {
    if vec.capacity() - vec.len() < need {
        vec.reserve_exact(need.max(vec.len() / 16).max(floor));
    }
}

/// The bytes an entry of `len` takes in the arena.
#[inline]
fn stored_len(len: usize) -> usize {
    len + varint_len(len)
}

/// The bytes `n` takes as a varint.
#[inline]
pub(crate) fn varint_len(n: usize) -> usize {
    let bits = usize::BITS - (n | 1).leading_zeros();
    bits.div_ceil(7) as usize
}

impl<K: KeyOf> Slots<K> {
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.starts.len()
    }

    /// The position of the entry whose key is `key`.
    #[inline]
    pub(crate) fn find(&self, key: &[u8]) -> Option<usize> {
        let hash = self.hasher.hash_one(key);
        let (arena, starts) = (&self.arena, &self.starts);
        let found =
            self.positions.find(hash, |&at| K::key(entry_at(arena, starts[at as usize]).0) == key);
        found.map(|&at| at as usize)
    }

    /// The entry at `at` (below [`Slots::len`]).
    #[inline]
    pub(crate) fn nth(&self, at: usize) -> &[u8] {
        entry_at(&self.arena, self.starts[at]).0
    }

    /// Appends an entry made of `parts` to the arena; where it starts.
    #[inline]
    fn append(&mut self, parts: &[&[u8]]) -> u32 {
        let len: usize = parts.iter().map(|part| part.len()).sum();
        let need = stored_len(len);
        let arena = &mut self.arena;
        grow(arena, need, GROWTH_MIN_BYTES);
        let start = start_of(arena.len());
        varint::put_usize(arena, len);
        parts.iter().for_each(|part| arena.extend_from_slice(part));
        start
    }

    /// Puts the entry made of `parts` in place of the one at `at`, whose key it has.
    #[inline]
    pub(crate) fn replace(&mut self, at: usize, parts: &[&[u8]]) {
        let len: usize = parts.iter().map(|part| part.len()).sum();
        let start = self.starts[at];
        let (old, old_stored) = entry_at(&self.arena, start);
        if old.len() == len {
            // Same length: overwrite the bytes after the length where they are.
            let mut at_byte = start as usize + old_stored - len;
            for part in parts {
                self.arena[at_byte..at_byte + part.len()].copy_from_slice(part);
                at_byte += part.len();
            }
            return;
        }
        self.garbage_bytes += old_stored;
        self.starts[at] = self.append(parts);
        self.compact_if_wasteful();
    }

    /// Adds the entry made of `parts`, whose key is not there yet.
    #[inline]
    pub(crate) fn push(&mut self, parts: &[&[u8]]) {
        let start = self.append(parts);
        grow(&mut self.starts, 1, STARTS_MIN);
        self.starts.push(start);
        let at = (self.starts.len() - 1) as u32;
        let Self { arena, starts, positions, hasher, .. } = self;
        let hash = hasher.hash_one(K::key(entry_at(arena, start).0));
        let rehash = |&at: &u32| hasher.hash_one(K::key(entry_at(arena, starts[at as usize]).0));
        positions.insert_unique(hash, at, rehash);
    }

    /// Removes the entry whose key is `key`, if any, and returns what `f` makes of it.
    /// `keep_order`: the entries after it move up one (O(n)); else the last entry takes
    /// its place (O(1)).
    #[inline]
    pub(crate) fn remove<R>(
        &mut self,
        key: &[u8],
        keep_order: bool,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Option<R> {
        let Self { arena, starts, positions, hasher, .. } = self;
        let hash = hasher.hash_one(key);
        let found =
            positions.find_entry(hash, |&at| K::key(entry_at(arena, starts[at as usize]).0) == key);
        let (at, _) = found.ok()?.remove();
        let at = at as usize;
        let (entry, stored) = entry_at(arena, starts[at]);
        let out = f(entry);
        self.garbage_bytes += stored;
        if keep_order {
            self.starts.remove(at);
            for position in self.positions.iter_mut() {
                if *position as usize > at {
                    *position -= 1;
                }
            }
        } else {
            self.swap_remove(at);
        }
        if self.starts.is_empty() {
            (self.arena, self.starts, self.garbage_bytes) = (Vec::new(), Vec::new(), 0);
            self.positions = HashTable::new();
        } else {
            self.compact_if_wasteful();
            // The starts give back what removals freed, so that their spare capacity stays
            // within an eighth of them (a sixteenth after each shrink) as they are charged.
            let len = self.starts.len();
            if self.starts.capacity() > len + len / 8 + STARTS_MIN {
                self.starts.shrink_to(len + len / 16);
            }
            // And the hash table, once it holds more than the 12 bytes an entry is charged
            // for its slot (a load under 7/16), past its floor: a table never shrinks alone.
            // (Its `capacity` would not say so: removed slots left as tombstones are not
            // counted back.)
            if len > STARTS_MIN && self.positions.allocation_size() > len * 12 {
                let Self { arena, starts, positions, hasher, .. } = self;
                let rehash =
                    |&at: &u32| hasher.hash_one(K::key(entry_at(arena, starts[at as usize]).0));
                positions.shrink_to(len, rehash);
            }
        }
        Some(out)
    }

    /// Removes position `at` (its table slot already gone): the last entry moves there.
    fn swap_remove(&mut self, at: usize) {
        let Self { arena, starts, positions, hasher, .. } = self;
        let last = starts.len() - 1;
        starts.swap_remove(at);
        if at != last {
            let moved = hasher.hash_one(K::key(entry_at(arena, starts[at]).0));
            if let Some(slot) = positions.find_mut(moved, |&other| other as usize == last) {
                *slot = at as u32;
            }
        }
    }

    /// Rewrites the arena with the live entries only, in order, once garbage passes a
    /// sixteenth of it: O(live bytes), after at least a fifteenth of them were freed.
    fn compact_if_wasteful(&mut self) {
        let garbage = self.garbage_bytes;
        if garbage < GARBAGE_MIN_BYTES || garbage * 16 < self.arena.len() {
            return;
        }
        let live = self.arena.len() - garbage;
        let mut arena = Vec::with_capacity(live + live / 16);
        for start in &mut self.starts {
            let (_, stored) = entry_at(&self.arena, *start);
            let (from, new_start) = (*start as usize, start_of(arena.len()));
            arena.extend_from_slice(&self.arena[from..from + stored]);
            *start = new_start;
        }
        self.arena = arena;
        self.garbage_bytes = 0;
    }

    /// The bytes the table's three allocations hold (tests: against what is charged).
    #[cfg(test)]
    pub(crate) fn allocated_bytes(&self) -> usize {
        let starts = self.starts.capacity() * size_of::<u32>();
        self.arena.capacity() + starts + self.positions.allocation_size()
    }

    /// The entries, in the table's order.
    #[inline]
    pub(crate) fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.starts.iter().map(|&start| entry_at(&self.arena, start).0)
    }

    /// Room for `additional` more entries of `bytes` in all (their lengths aside).
    #[inline]
    pub(crate) fn reserve(&mut self, additional: usize, bytes: usize) {
        let Self { arena, starts, positions, hasher, .. } = self;
        arena.reserve_exact(bytes.saturating_add(additional.saturating_mul(2)));
        starts.reserve_exact(additional);
        positions.reserve(additional, |&at| {
            hasher.hash_one(K::key(entry_at(arena, starts[at as usize]).0))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Whole;
    impl KeyOf for Whole {
        fn key(entry: &[u8]) -> &[u8] {
            entry
        }
    }

    /// Goal: varint lengths as `varint::put` writes them.
    #[test]
    fn varint_lengths() {
        for n in [0usize, 1, 127, 128, 16_383, 16_384, 1 << 21, usize::MAX] {
            let mut out = Vec::new();
            varint::put_usize(&mut out, n);
            assert_eq!(varint_len(n), out.len(), "{n}");
        }
    }

    /// Goal: against a model, under pushes, replaces of every length and removals of both
    /// kinds, every entry stays findable, in the model's order when removals keep it, and
    /// the arena's garbage stays within a fifteenth of its live bytes past its floor, its
    /// spare capacity within a sixteenth, the starts' within an eighth.
    #[test]
    fn model_under_churn() {
        for keep_order in [false, true] {
            let mut slots = Slots::<Whole>::default();
            let mut model: Vec<Vec<u8>> = Vec::new();
            let mut seed = 7u64;
            let mut next = || {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (seed >> 33) as usize
            };
            for step in 0..20_000 {
                let key = format!("k{}", next() % 500).into_bytes();
                let found = slots.find(&key);
                assert_eq!(found.is_some(), model.contains(&key), "{step}");
                match (found, next() % 3) {
                    (Some(at), 0) => {
                        let removed = slots.remove(&key, keep_order, <[u8]>::to_vec);
                        assert_eq!(removed.as_deref(), Some(&key[..]));
                        let index = model.iter().position(|m| *m == key).unwrap();
                        if keep_order {
                            model.remove(index);
                        } else {
                            model.swap_remove(index);
                        }
                        let _ = at;
                    }
                    (Some(at), _) => slots.replace(at, &[&key[..2], &key[2..]]),
                    (None, _) => {
                        slots.push(&[&key]);
                        model.push(key);
                    }
                }
                assert_eq!(slots.len(), model.len());
                let live: usize = model.iter().map(|m| stored_len(m.len())).sum();
                assert!(slots.arena.len() <= live + live / 15 + GARBAGE_MIN_BYTES);
                let spare = slots.arena.capacity() - slots.arena.len();
                assert!(spare <= (slots.arena.len() / 16).max(GROWTH_MIN_BYTES) + 64);
                let spare = slots.starts.capacity() - slots.starts.len();
                assert!(spare <= slots.starts.len() / 8 + STARTS_MIN);
            }
            let entries: Vec<&[u8]> = slots.iter().collect();
            let expected: Vec<&[u8]> = model.iter().map(Vec::as_slice).collect();
            assert_eq!(entries, expected);
            for (at, entry) in model.iter().enumerate() {
                assert_eq!(slots.find(entry), Some(at));
            }
        }
    }

    /// Goal: a replace by an entry of another length moves it and leaves it findable; one
    /// of the same length rewrites it in place.
    #[test]
    fn replace_lengths() {
        struct Named;
        impl KeyOf for Named {
            fn key(entry: &[u8]) -> &[u8] {
                &entry[..1]
            }
        }
        let mut slots = Slots::<Named>::default();
        slots.push(&[b"a", b"1"]);
        slots.push(&[b"b", b"2"]);
        let arena_len = slots.arena.len();
        slots.replace(0, &[b"a", b"9"]);
        assert_eq!(slots.arena.len(), arena_len);
        slots.replace(0, &[b"a", &[b'x'; 300]]);
        assert_eq!(slots.nth(0), [&b"a"[..], &[b'x'; 300]].concat());
        assert_eq!(slots.find(b"b"), Some(1));
        assert_eq!(slots.nth(1), b"b2");
    }
}
