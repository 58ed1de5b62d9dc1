//! The hash index: key hash -> item location, read without locks, grown without a global
//! rehash.
//!
//! ```text
//! hash (64 bits):  [ sub:6 | pos:32 | stripe:11 | tag:14 ]
//!                    63..58  57..26   25..15      13..0
//! slot (64 bits):  [ tag:14 | valid:1 | freq:2 | unused:3 | location:44 ]
//! location:        [ segment id:24 | offset:20 ]    (segment id 0xFFFFFF: large item)
//! ```
//! The index is 64 sub-tables chosen by the top hash bits. A sub-table is an array of 64-byte
//! buckets of 8 slots, cut into blocks of 64 buckets (the last one also takes the remainder).
//! A key has two candidate buckets in
//! one block: its home, `pos * buckets >> 32`, and a second one picked by other hash bits; it
//! is inserted into the emptier (two choices balance buckets, so tables fill to their load
//! limit before any bucket overflows). Bucket order, and so block order, is hash order at
//! every table size, so a scan that walks whole blocks in order of `pos` sees every key once
//! per pass even while tables grow. (Linear probing over a window of 4 or 8 buckets was
//! tried first: clustering filled windows at 60-77% load, measured with 300k keys.)
//!
//! Growth: a sub-table over its load limit gets a larger table; entries move over in bounded
//! chunks driven by writers, while readers look in both. An entry moves by being inserted in
//! the new table, then the sub-table's `version` is bumped, then it is cleared from the old
//! one; a reader that misses rechecks `version` and retries, so a move never shows as a miss.
//! Writers of one key serialise on that key's stripe lock (held by the caller), so a key has at
//! most one entry across both tables.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crossbeam_epoch::{Atomic, Guard, Owned, Shared};

mod buckets;
mod cuckoo;
mod find;
mod scan;

use buckets::{alternate, block_of, candidates, home_bucket};

use crate::{
    mem::Region,
    shared_writes::{self, Site},
};

pub(crate) const SUBTABLES: usize = 64;
pub(crate) const SLOTS_PER_BUCKET: usize = 8;
/// Buckets per block (the last block of a table holds the remainder too).
const BLOCK_BUCKETS: usize = 64;
/// Hash bits that pick a key's second bucket in its block: the stripe bits xor the tag.
const MIX_BITS: u32 = 14;
const BUCKET_BYTES: usize = 64;
/// Grow when a sub-table is this full (percent of slots), plus 0..=8 by sub-table: keys
/// spread evenly, so equal thresholds made all 64 sub-tables grow, and hold old and new
/// tables, at the same moment (measured: the index took 1.8x its size during that spike).
const LOAD_GROW_PCT_MIN: usize = 82;
/// Tables of fewer buckets than this (a store's first few thousand keys) grow at this load
/// instead: a bucket is a third or more of such a table, so growing at 82-90% left them
/// 73% full on average (11 B of index per item at 0.1% of a 64 MiB store). In a table this
/// small both of a key's buckets are most of the table, so it fills this far with few
/// relocations, and those cheap (a handful of items, cached).
const SMALL_TABLE_BUCKETS: usize = 8;
const LOAD_GROW_PCT_SMALL: usize = 94;
/// A grown table is this much larger (percent), or sized for this load if that is larger.
const GROWTH_PCT: usize = 115;
const GROWTH_PCT_TIGHT: usize = 110;
const LOAD_AFTER_GROWTH_PCT: usize = 78;

const TAG_SHIFT: u32 = 50;
const VALID: u64 = 1 << 49;
const FREQ_SHIFT: u32 = 47;
const FREQ_MASK: u64 = 0b11 << FREQ_SHIFT;
pub(crate) const FREQ_MAX: u8 = 3;
/// One mask and compare per cell checks "valid and same tag" (tags fill the top bits).
const TAG_VALID_MASK: u64 = (u64::MAX << TAG_SHIFT) | VALID;
const LOCATION_MASK: u64 = (1 << 44) - 1;
pub(crate) const OFFSET_BITS: u32 = 20;
pub(crate) const LARGE_SEGMENT: u32 = (1 << 24) - 1;

/// A key's 64-bit hash, which [`HashParts`] splits.
pub(crate) fn key_hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

/// The parts of a key's hash, each from its own bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HashParts {
    pub(crate) sub: usize,
    pub(crate) pos: u32,
    pub(crate) tag: u16,
    pub(crate) stripe_bits: u32,
}

impl HashParts {
    pub(crate) fn of(key: &[u8]) -> HashParts {
        HashParts::from_hash(key_hash(key))
    }

    /// The parts of a hash from [`key_hash`].
    pub(crate) fn from_hash(h: u64) -> HashParts {
        HashParts {
            sub: (h >> 58) as usize,
            pos: (h >> 26) as u32,
            tag: (h & 0x3fff) as u16,
            stripe_bits: ((h >> 14) & 0x7ff) as u32,
        }
    }
}

/// Where an item is: a segment and offset, or a large-item slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Location {
    pub(crate) segment: u32,
    pub(crate) offset: u32,
}

impl Location {
    pub(crate) fn pack(self) -> u64 {
        debug_assert!(self.segment <= LARGE_SEGMENT && self.offset < 1 << OFFSET_BITS);
        (u64::from(self.segment) << OFFSET_BITS) | u64::from(self.offset)
    }
    fn unpack(bits: u64) -> Location {
        Location {
            segment: ((bits & LOCATION_MASK) >> OFFSET_BITS) as u32,
            offset: (bits & ((1 << OFFSET_BITS) - 1)) as u32,
        }
    }
}

/// One index entry as stored in a slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot(pub(crate) u64);

impl Slot {
    pub(crate) fn new(tag: u16, location: Location, freq: u8) -> Slot {
        Slot(
            (u64::from(tag) << TAG_SHIFT)
                | VALID
                | (u64::from(freq) << FREQ_SHIFT)
                | location.pack(),
        )
    }
    pub(crate) fn is_empty(self) -> bool {
        self.0 & VALID == 0
    }
    pub(crate) fn tag(self) -> u16 {
        (self.0 >> TAG_SHIFT) as u16
    }
    pub(crate) fn freq(self) -> u8 {
        ((self.0 & FREQ_MASK) >> FREQ_SHIFT) as u8
    }
    pub(crate) fn with_freq(self, freq: u8) -> Slot {
        Slot((self.0 & !FREQ_MASK) | (u64::from(freq) << FREQ_SHIFT))
    }
    pub(crate) fn location(self) -> Location {
        Location::unpack(self.0)
    }
}

#[repr(C, align(64))]
struct Bucket([AtomicU64; SLOTS_PER_BUCKET]);

const _: () = assert!(std::mem::size_of::<Bucket>() == BUCKET_BYTES);
// The tag (14 bits) fills the slot's top bits, which the probe's mask relies on.
const _: () = assert!(TAG_SHIFT + 14 == 64);
// The step's bits (stripe 11, tag 14, xored) fit MIX_BITS, and a step times a block's size
// fits a usize.
const _: () = assert!(MIX_BITS == 14 && (2 * BLOCK_BUCKETS) << MIX_BITS < u32::MAX as usize);

pub(crate) struct Table {
    region: Region,
    buckets: usize,
}

impl Table {
    pub(crate) fn bytes_for(buckets: usize) -> usize {
        buckets * BUCKET_BYTES
    }

    pub(crate) fn new(buckets: usize) -> std::io::Result<Table> {
        assert!(buckets >= 2);
        Ok(Table { region: Region::new(Self::bytes_for(buckets))?, buckets })
    }

    pub(crate) fn bytes(&self) -> usize {
        self.region.len()
    }

    pub(crate) fn slots(&self) -> usize {
        self.buckets * SLOTS_PER_BUCKET
    }

    fn bucket(&self, index: usize) -> &Bucket {
        assert!(index < self.buckets);
        // SAFETY: the region holds `buckets` zero-initialised, 64-byte aligned buckets (mmap
        // is page aligned); AtomicU64 has the layout of u64 and zero is a valid value.
        unsafe { &*self.region.ptr().cast::<Bucket>().add(index) }
    }

    /// Starts loading bucket `index`'s line (a hint: nothing past the table).
    fn prefetch_bucket(&self, index: usize) {
        self.region.prefetch(index * BUCKET_BYTES);
    }

    fn home(&self, pos: u32) -> usize {
        home_bucket(self.buckets, pos)
    }

    /// The first hash position whose home bucket is `bucket` (2^32 past the last bucket).
    fn first_pos(&self, bucket: usize) -> u64 {
        ((bucket as u64) << 32).div_ceil(self.buckets as u64)
    }

    /// The block holding `bucket` ([`block_of`]).
    #[inline]
    fn block_of(&self, bucket: usize) -> std::ops::Range<usize> {
        block_of(self.buckets, bucket)
    }

    /// The two buckets a key may live in (equal only in a one-bucket block, never here).
    #[inline]
    fn candidates(&self, hash: HashParts) -> [usize; 2] {
        candidates(self.buckets, hash)
    }

    /// The key's second bucket ([`alternate`]).
    #[inline]
    fn alternate(&self, home: usize, hash: HashParts) -> usize {
        alternate(self.buckets, home, hash)
    }

    /// Slots a key may live in, home bucket first.
    fn cells(&self, hash: HashParts) -> impl Iterator<Item = &AtomicU64> + '_ {
        self.candidates(hash).into_iter().flat_map(move |b| self.bucket(b).0.iter())
    }
}

/// A found entry: the slot it is in and the value read from it.
pub(crate) struct Found<'g> {
    pub(crate) slot: &'g AtomicU64,
    pub(crate) value: Slot,
    pub(crate) in_old_table: bool,
}

/// A sub-table's shared state. Two cache lines: what every lookup reads (written only by
/// growth), and the entry count, which every new key and every removal writes, so that
/// inserts on one core do not evict the lookups' line from the other cores' caches.
#[repr(C, align(128))]
pub(crate) struct Sub {
    current: Atomic<Table>,
    old: Atomic<Table>,
    /// Bumped around every move between tables; readers recheck it on a miss.
    version: AtomicU64,
    /// Held from the start of a growth to the end of its migration: one at a time.
    growing: AtomicBool,
    /// The migration's generation (high 32 bits) and the next old bucket to claim (low 32
    /// bits, `NOT_READY` until the new table is current). A claim compares both, so one
    /// that read a finished migration's state cannot take buckets of the next one.
    migrate_next: AtomicU64,
    /// Old buckets migrated in this generation; exactly one chunk brings it to the total.
    migrate_done: AtomicUsize,
    /// The current table's first bucket (an address) and bucket count, for prefetches that
    /// take no pin ([`Index::prefetch_buckets_unpinned`]): set with the table, read without
    /// order, so a reader may pair an old one with a new one and prefetch a useless line;
    /// nothing is ever read through them.
    hint_base: AtomicUsize,
    hint_buckets: AtomicUsize,
    /// Entries in both tables together.
    count: OwnLine<AtomicUsize>,
}

const _: () = assert!(std::mem::size_of::<Sub>() == 128);
const _: () = assert!(std::mem::offset_of!(Sub, count) == 64);

/// A value alone on its cache line.
#[repr(align(64))]
struct OwnLine<T>(T);

impl<T> std::ops::Deref for OwnLine<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

const NOT_READY: u64 = u32::MAX as u64;
const NEXT_MASK: u64 = u32::MAX as u64;

pub(crate) struct Index {
    subs: Box<[Sub]>,
}

/// A chunk of old buckets claimed for migration.
pub(crate) struct MigrationChunk<'g> {
    pub(crate) sub: usize,
    table: &'g Table,
    pub(crate) buckets: std::ops::Range<usize>,
}

impl<'g> MigrationChunk<'g> {
    pub(crate) fn slots(&self) -> impl Iterator<Item = &'g AtomicU64> + '_ {
        let table = self.table;
        self.buckets.clone().flat_map(move |b| table.bucket(b).0.iter())
    }
}

/// The index's memory, by where it is (`Index::breakdown`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct IndexBreakdown {
    pub(crate) current_bytes: usize,
    pub(crate) current_slots: usize,
    /// Old tables whose entries are still moving to the current ones.
    pub(crate) old_bytes: usize,
    pub(crate) entries: usize,
}

/// When a sub-table grows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GrowWhen {
    /// Once it is over its load limit (checked after every write).
    OverLoadLimit,
    /// Now: a key found both its buckets full (and no entry could move).
    BucketsFull,
}

/// How much a growing table adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GrowStep {
    /// Room for its load to fall well under the limit.
    Normal,
    /// Memory is scarce: a small step, since spare slots cost items.
    Small,
}

pub(crate) enum Insert {
    Done,
    /// Both of the key's buckets are full; the caller must make room.
    Full,
}

impl Index {
    pub(crate) fn new(buckets_per_sub: usize) -> std::io::Result<Index> {
        let subs = (0..SUBTABLES)
            .map(|_| {
                let table = Table::new(buckets_per_sub)?;
                Ok(Sub {
                    hint_base: AtomicUsize::new(table.region.ptr() as usize),
                    hint_buckets: AtomicUsize::new(table.buckets),
                    current: Atomic::new(table),
                    old: Atomic::null(),
                    version: AtomicU64::new(0),
                    count: OwnLine(AtomicUsize::new(0)),
                    growing: AtomicBool::new(false),
                    migrate_next: AtomicU64::new(NOT_READY),
                    migrate_done: AtomicUsize::new(0),
                })
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        Ok(Index { subs: subs.into_boxed_slice() })
    }

    /// Starts loading the key's two buckets in the sub-table's current table (a table
    /// being migrated away from is left out: it is there only while the sub-table grows).
    pub(crate) fn prefetch_buckets(&self, hash: HashParts, guard: &Guard) {
        let sub = &self.subs[hash.sub];
        // SAFETY: pinned; the current table is never null.
        let table = unsafe { sub.current.load(Ordering::Acquire, guard).deref() };
        for bucket in table.candidates(hash) {
            table.prefetch_bucket(bucket);
        }
    }

    /// Starts loading the key's two buckets in the sub-table's current table without a
    /// pin, from the sub-table's hints (a stale hint prefetches useless lines): the read
    /// ahead of pipelined requests, whose reads pin each on their own. No division finds
    /// the second bucket, and about half the keys live there.
    #[inline]
    pub(crate) fn prefetch_buckets_unpinned(&self, hash: HashParts) {
        let sub = &self.subs[hash.sub];
        let base = sub.hint_base.load(Ordering::Relaxed);
        let buckets = sub.hint_buckets.load(Ordering::Relaxed);
        if buckets < 2 {
            return; // never: every table has two or more (the block arithmetic needs them)
        }
        for bucket in candidates(buckets, hash) {
            crate::mem::prefetch_address(base.wrapping_add(bucket * BUCKET_BYTES));
        }
    }

    /// A sub-table's prefetch hints (test only).
    #[cfg(test)]
    pub(crate) fn hints(&self, sub: usize) -> (usize, usize) {
        let sub = &self.subs[sub];
        (sub.hint_base.load(Ordering::Relaxed), sub.hint_buckets.load(Ordering::Relaxed))
    }

    /// A sub-table's current table: its first bucket's address and its bucket count (test
    /// only).
    #[cfg(test)]
    pub(crate) fn current_table(&self, sub: usize, guard: &Guard) -> (usize, usize) {
        // SAFETY: pinned; the current table is never null.
        let table = unsafe { self.subs[sub].current.load(Ordering::Acquire, guard).deref() };
        (table.region.ptr() as usize, table.buckets)
    }

    /// The location of an entry of the current table whose tag is the key's (the item a
    /// lookup of the key would most likely read): the home bucket's, or else the second
    /// bucket's; of several (a tag shared by chance: 14 bits), the last. Each bucket is
    /// scanned without a branch per slot (a select), and nothing is called per match: it is
    /// the read ahead's second step, run for every key of a batch.
    #[inline]
    pub(crate) fn tagged_location(&self, hash: HashParts, guard: &Guard) -> Option<Location> {
        let sub = &self.subs[hash.sub];
        // SAFETY: pinned; the current table is never null.
        let table = unsafe { sub.current.load(Ordering::Acquire, guard).deref() };
        let want = (u64::from(hash.tag) << TAG_SHIFT) | VALID;
        let scan = |bucket: usize| {
            let mut matched = 0;
            for slot in &table.bucket(bucket).0 {
                let value = slot.load(Ordering::Relaxed);
                matched = if value & TAG_VALID_MASK == want { value } else { matched };
            }
            matched
        };
        // As `probe`: the second bucket only when the home one has no candidate.
        let home = table.home(hash.pos);
        let mut matched = scan(home);
        if matched == 0 {
            matched = scan(table.alternate(home, hash));
        }
        (matched != 0).then(|| Slot(matched).location())
    }

    /// Inserts a new entry for a key known to be absent. The caller holds the key's stripe.
    pub(crate) fn insert(&self, hash: HashParts, slot: Slot, guard: &Guard) -> Insert {
        let sub = &self.subs[hash.sub];
        // Bounded: a retry needs a growth to start meanwhile, and one starts only after the
        // last finished.
        for _ in 0..4 {
            let current = sub.current.load(Ordering::Acquire, guard);
            // SAFETY: pinned; the current table is never null.
            let table = unsafe { current.deref() };
            let Some(cell) = claim_slot(table, hash, slot) else { return Insert::Full };
            if still_current(sub, current, guard) {
                shared_writes::note(Site::IndexCount);
                sub.count.fetch_add(1, Ordering::Relaxed);
                return Insert::Done;
            }
            cell.store(0, Ordering::Release);
        }
        Insert::Full
    }

    /// Replaces a found entry's value (new location or freq). An entry still in the old table
    /// moves to the current one. Returns false if its buckets there are full (entry kept).
    pub(crate) fn replace(
        &self,
        hash: HashParts,
        found: &Found<'_>,
        slot: Slot,
        guard: &Guard,
    ) -> bool {
        shared_writes::note(Site::IndexStore);
        if !found.in_old_table {
            found.slot.store(slot.0, Ordering::Release);
            return true;
        }
        let sub = &self.subs[hash.sub];
        let current = sub.current.load(Ordering::Acquire, guard);
        // SAFETY: pinned; the current table is never null.
        let table = unsafe { current.deref() };
        let Some(cell) = claim_slot(table, hash, slot) else { return false };
        if !still_current(sub, current, guard) {
            cell.store(0, Ordering::Release);
            return false;
        }
        sub.version.fetch_add(1, Ordering::AcqRel);
        found.slot.store(0, Ordering::Release);
        true
    }

    /// Removes a found entry. The caller holds the key's stripe.
    pub(crate) fn remove(&self, hash: HashParts, found: &Found<'_>) {
        shared_writes::note(Site::IndexStore);
        shared_writes::note(Site::IndexCount);
        found.slot.store(0, Ordering::Release);
        self.subs[hash.sub].count.fetch_sub(1, Ordering::Relaxed);
    }

    /// Counts an access: raises the entry's frequency unless it is at the maximum. A lost
    /// race only loses one count, so there is no retry. Returns the new count if this read
    /// raised it: one reader per step.
    pub(crate) fn touch_freq(found: &Found<'_>) -> Option<u8> {
        let freq = found.value.freq();
        if freq >= FREQ_MAX {
            return None;
        }
        let bumped = found.value.with_freq(freq + 1);
        shared_writes::note(Site::IndexFreq);
        found
            .slot
            .compare_exchange(found.value.0, bumped.0, Ordering::Relaxed, Ordering::Relaxed)
            .ok()
            .map(|_| freq + 1)
    }

    /// The number of buckets a sub-table should grow to, if `when` says it should and it is
    /// not already growing.
    pub(crate) fn wants_growth(
        &self,
        sub: usize,
        when: GrowWhen,
        step: GrowStep,
        guard: &Guard,
    ) -> Option<usize> {
        let sub_index = sub;
        let sub = &self.subs[sub];
        if !sub.old.load(Ordering::Acquire, guard).is_null() {
            return None;
        }
        // SAFETY: pinned; the current table is never null.
        let table = unsafe { sub.current.load(Ordering::Acquire, guard).deref() };
        let count = sub.count.load(Ordering::Relaxed);
        let grow_pct = if table.buckets < SMALL_TABLE_BUCKETS {
            LOAD_GROW_PCT_SMALL
        } else {
            LOAD_GROW_PCT_MIN + sub_index * 9 / SUBTABLES
        };
        if when == GrowWhen::OverLoadLimit && count * 100 < table.slots() * grow_pct {
            return None;
        }
        if step == GrowStep::Small {
            return Some(table.buckets * GROWTH_PCT_TIGHT / 100 + 1);
        }
        let for_load = (count * 100 / LOAD_AFTER_GROWTH_PCT).div_ceil(SLOTS_PER_BUCKET);
        Some(for_load.max(table.buckets * GROWTH_PCT / 100 + 1))
    }

    /// The buckets a sub-table needs to hold `keys` at the load a growth leaves, if that is
    /// more than it has and it is not growing now (`Store::reserve_index`).
    pub(crate) fn wants_reserve(&self, sub: usize, keys: usize, guard: &Guard) -> Option<usize> {
        let sub = &self.subs[sub];
        if !sub.old.load(Ordering::Acquire, guard).is_null() {
            return None;
        }
        // SAFETY: pinned; the current table is never null.
        let table = unsafe { sub.current.load(Ordering::Acquire, guard).deref() };
        let buckets = (keys * 100 / LOAD_AFTER_GROWTH_PCT).div_ceil(SLOTS_PER_BUCKET);
        (buckets > table.buckets).then_some(buckets)
    }

    /// Installs `table` as the sub-table's new current table and starts migration. Returns
    /// the table back if the sub-table is already growing.
    pub(crate) fn start_growth(
        &self,
        sub: usize,
        table: Table,
        guard: &Guard,
    ) -> Result<(), Table> {
        let sub = &self.subs[sub];
        if sub.growing.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return Err(table);
        }
        assert!(sub.old.load(Ordering::Acquire, guard).is_null(), "growth while migrating");
        // Counters first, closed to claims; then the old table (lookups search both), the
        // new current one, and only then claims open. Before, `old` was published first and
        // the counters reset after: a claim in between took a stale range of the table into
        // itself, chunks were counted twice, and a second `finish_migration` destroyed the
        // next growth's table (double free, seen with 4 threads growing the index).
        let gen = (sub.migrate_next.load(Ordering::Acquire) >> 32).wrapping_add(1) & NEXT_MASK;
        sub.migrate_next.store(gen << 32 | NOT_READY, Ordering::Release);
        sub.migrate_done.store(0, Ordering::Release);
        let current = sub.current.load(Ordering::Acquire, guard);
        sub.old.store(current, Ordering::Release);
        sub.hint_base.store(table.region.ptr() as usize, Ordering::Relaxed);
        sub.hint_buckets.store(table.buckets, Ordering::Relaxed);
        sub.current.store(Owned::new(table), Ordering::Release);
        // SeqCst: a claim in the table this replaces is either seen by the migration or
        // sees the new table (`still_current`).
        sub.version.fetch_add(1, Ordering::SeqCst);
        sub.migrate_next.store(gen << 32, Ordering::Release);
        Ok(())
    }

    /// Claims up to `buckets` old buckets of a growing sub-table for migration.
    pub(crate) fn claim_migration<'g>(
        &self,
        sub: usize,
        buckets: usize,
        guard: &'g Guard,
    ) -> Option<MigrationChunk<'g>> {
        let s = &self.subs[sub];
        let old_shared = s.old.load(Ordering::Acquire, guard);
        // SAFETY: pinned; old tables are retired only through the epoch.
        let old = unsafe { old_shared.as_ref() }?;
        loop {
            let state = s.migrate_next.load(Ordering::Acquire);
            let next = state & NEXT_MASK;
            // While `old` is still this table, `state` is its migration's: a later growth
            // publishes a different old table (this one cannot be freed while we are pinned).
            if next == NOT_READY || s.old.load(Ordering::Acquire, guard) != old_shared {
                return None;
            }
            let start = next as usize;
            if start >= old.buckets {
                return None;
            }
            let end = (start + buckets).min(old.buckets);
            let claimed = (state & !NEXT_MASK) | end as u64;
            if s.migrate_next
                .compare_exchange_weak(state, claimed, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return Some(MigrationChunk { sub, table: old, buckets: start..end });
            }
        }
    }

    /// Marks a claimed chunk migrated; when it was the last, retires the old table and
    /// returns its size in bytes (to give back to the memory budget).
    pub(crate) fn finish_migration(
        &self,
        chunk: MigrationChunk<'_>,
        guard: &Guard,
    ) -> Option<usize> {
        let s = &self.subs[chunk.sub];
        let n = chunk.buckets.len();
        let done = s.migrate_done.fetch_add(n, Ordering::AcqRel) + n;
        if done < chunk.table.buckets {
            return None;
        }
        assert_eq!(done, chunk.table.buckets, "old buckets migrated twice");
        let bytes = chunk.table.bytes();
        let old = s.old.swap(Shared::null(), Ordering::AcqRel, guard);
        assert!(std::ptr::eq(old.as_raw(), chunk.table), "finished another growth's table");
        s.version.fetch_add(1, Ordering::AcqRel);
        // SAFETY: `old` is unlinked; readers still holding it are pinned, so it is dropped
        // only after they unpin.
        unsafe { guard.defer_destroy(old) };
        s.growing.store(false, Ordering::Release);
        Some(bytes)
    }

    /// Whether a sub-table is migrating.
    pub(crate) fn is_growing(&self, sub: usize, guard: &Guard) -> bool {
        !self.subs[sub].old.load(Ordering::Acquire, guard).is_null()
    }

    /// Where the index's memory is: current tables, old ones still migrating, and entries.
    pub(crate) fn breakdown(&self, guard: &Guard) -> IndexBreakdown {
        let mut out = IndexBreakdown::default();
        for sub in self.subs.iter() {
            // SAFETY: pinned; the current table is never null.
            let current = unsafe { sub.current.load(Ordering::Acquire, guard).deref() };
            out.current_bytes += current.bytes();
            out.current_slots += current.slots();
            // SAFETY: pinned.
            if let Some(old) = unsafe { sub.old.load(Ordering::Acquire, guard).as_ref() } {
                out.old_bytes += old.bytes();
            }
            out.entries += sub.count.load(Ordering::Relaxed);
        }
        out
    }

    /// Bytes and slots of all tables, including old ones still migrating.
    pub(crate) fn size(&self, guard: &Guard) -> (usize, usize) {
        let (mut bytes, mut slots) = (0, 0);
        for sub in self.subs.iter() {
            for table in [&sub.current, &sub.old] {
                // SAFETY: pinned.
                if let Some(t) = unsafe { table.load(Ordering::Acquire, guard).as_ref() } {
                    bytes += t.bytes();
                    slots += t.slots();
                }
            }
        }
        (bytes, slots)
    }
}

/// Whether `table` is still the sub-table's current one after this thread claimed a cell
/// in it. A growth that started in between may have moved that cell's bucket already, and
/// an entry left behind in the old table is lost when the table is retired (seen: keys
/// stored and acknowledged, gone, while 8 threads grew the index): the caller takes its
/// claim back and tries again in the new table. It holds the key's stripe, so no
/// migration moved the claimed entry meanwhile. The fence orders the claim before the
/// load, as the growth's version bump orders its new table before its migration's reads.
pub(crate) fn still_current(sub: &Sub, table: Shared<'_, Table>, guard: &Guard) -> bool {
    std::sync::atomic::fence(Ordering::SeqCst);
    sub.current.load(Ordering::Acquire, guard) == table
}

/// Puts `slot` into the emptier of the key's two buckets; the cell it took, if any.
fn claim_slot(table: &Table, hash: HashParts, slot: Slot) -> Option<&AtomicU64> {
    let [first, second] = table.candidates(hash).map(|b| table.bucket(b));
    let free = |bucket: &Bucket| bucket.0.iter().filter(|c| c.load(Ordering::Relaxed) == 0).count();
    let order = if free(second) > free(first) { [second, first] } else { [first, second] };
    for bucket in order {
        for cell in &bucket.0 {
            if cell.load(Ordering::Relaxed) == 0
                && cell.compare_exchange(0, slot.0, Ordering::AcqRel, Ordering::Relaxed).is_ok()
            {
                shared_writes::note(Site::IndexClaim);
                return Some(cell);
            }
        }
    }
    None
}

/// Entries a migration must move: used by the store, which re-derives each key's hash.
pub(crate) fn slot_value(cell: &AtomicU64) -> Option<Slot> {
    let value = Slot(cell.load(Ordering::Acquire));
    (!value.is_empty()).then_some(value)
}

/// Moves one entry from an old-table cell into the current table. The caller holds the
/// key's stripe and has checked that `cell` still holds `value`.
pub(crate) fn move_entry(
    index: &Index,
    hash: HashParts,
    cell: &AtomicU64,
    value: Slot,
    guard: &Guard,
) -> bool {
    let found = Found { slot: cell, value, in_old_table: true };
    index.replace(hash, &found, value, guard)
}

/// Drops an old-table entry that cannot be moved (its new buckets are full).
pub(crate) fn drop_entry(index: &Index, hash: HashParts, cell: &AtomicU64) {
    cell.store(0, Ordering::Release);
    index.subs[hash.sub].count.fetch_sub(1, Ordering::Relaxed);
}

impl Drop for Index {
    fn drop(&mut self) {
        for sub in self.subs.iter() {
            for table in [&sub.current, &sub.old] {
                // SAFETY: dropping the store: no other thread can hold references.
                unsafe {
                    let shared = table.load(Ordering::Relaxed, crossbeam_epoch::unprotected());
                    if !shared.is_null() {
                        drop(shared.into_owned());
                    }
                }
            }
        }
    }
}
