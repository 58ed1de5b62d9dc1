//! Scanning a sub-table block by block in hash order (`lru_crawler metadump`, `stats
//! cachedump`): see the module doc of `index` for why block order is hash order at every
//! table size.

use std::sync::atomic::Ordering;

use crossbeam_epoch::Guard;

use super::{Index, Slot, Table};

impl Index {
    /// Whether sub-table `sub` holds no entry (in either table while it grows: a move
    /// between them leaves the count alone). The count is raised once an insert has
    /// placed its entry, so a key inserted before a scan began is never passed over.
    pub(crate) fn sub_is_empty(&self, sub: usize) -> bool {
        self.subs[sub].count.load(Ordering::Acquire) == 0
    }

    /// Appends to `found` the entries of sub-table `sub` in the block holding hash position
    /// `pos` (and, while it grows, of the old table's blocks over the same positions).
    pub(crate) fn scan(
        &self,
        sub: usize,
        pos: u64,
        guard: &Guard,
        found: &mut Vec<Slot>,
    ) -> ScanStep {
        let s = &self.subs[sub];
        let pos = pos.min(u64::from(u32::MAX)) as u32;
        let (mut next_pos, mut read, mut checked) = (0, 0, 0);
        let start = found.len();
        // A move (growth, migration, cuckoo step) that overlaps the step can carry an entry
        // past the visit, or show it twice (in the old table and the new); the version shows
        // it and the step runs again, its finds so far dropped, so a step on a quiet table
        // has each entry once. Bounded: after 16 tries the step stands, repeats and all.
        for attempt in 0..16 {
            if attempt > 0 {
                found.truncate(start);
            }
            let version = s.version.load(Ordering::Acquire);
            // SAFETY: pinned; the current table is never null.
            let current = unsafe { s.current.load(Ordering::Acquire, guard).deref() };
            // SAFETY: pinned.
            let old = unsafe { s.old.load(Ordering::Acquire, guard).as_ref() };
            let block = current.block_of(current.home(pos));
            next_pos = current.first_pos(block.end);
            read += block.len();
            // A cursor from before the table grew may point inside a block: what lies
            // before it was listed already.
            let mid_block = current.first_pos(block.start) < u64::from(pos);
            // Old before current: an entry moves by insert-into-current, then clear-from-old.
            if let Some(old) = old {
                let first = old.block_of(old.home(pos)).start;
                let last_pos = (next_pos - 1).min(u64::from(u32::MAX)) as u32;
                let last = old.block_of(old.home(last_pos)).end;
                read += last - first;
                visit_buckets(old, first..last, found);
            }
            checked = found.len() - start;
            visit_buckets(current, block, found);
            if mid_block {
                checked = found.len() - start;
            }
            if s.version.load(Ordering::Acquire) == version {
                break;
            }
        }
        ScanStep { next_pos, read, checked, from_pos: u64::from(pos) }
    }
}

/// One step of [`Index::scan`].
pub(crate) struct ScanStep {
    /// The first position past the step (2^32: sub-table done).
    pub(crate) next_pos: u64,
    /// Buckets read.
    pub(crate) read: usize,
    /// How many of the entries found (the first ones) may lie outside the step's positions,
    /// `from_pos..next_pos`: an old table's blocks are wider than the step, and a cursor
    /// may point inside a block. The caller keeps those by their key's hash position, so
    /// that an entry is not listed again by the step its position belongs to.
    pub(crate) checked: usize,
    pub(crate) from_pos: u64,
}

impl ScanStep {
    /// Whether an entry at hash position `pos` belongs to this step.
    pub(crate) fn covers(&self, pos: u32) -> bool {
        (self.from_pos..self.next_pos).contains(&u64::from(pos))
    }
}

fn visit_buckets(table: &Table, buckets: std::ops::Range<usize>, found: &mut Vec<Slot>) {
    for bucket in buckets {
        for cell in &table.bucket(bucket).0 {
            let value = Slot(cell.load(Ordering::Acquire));
            if !value.is_empty() {
                found.push(value);
            }
        }
    }
}

impl Index {
    /// Calls `f` with every entry of sub-table `sub` whose home bucket lies in part `part`
    /// of `parts` equal ranges of hash positions, in the current table and, while it grows,
    /// the old one (an entry may be seen twice; the caller checks each under its stripe).
    /// Returns the cells read. For the expiry sweep: no retry on a concurrent move, since an
    /// entry it misses is only swept a pass later.
    pub(crate) fn sweep_part(
        &self,
        sub: usize,
        part: u64,
        parts: u64,
        guard: &Guard,
        mut f: impl FnMut(Slot),
    ) -> usize {
        let s = &self.subs[sub];
        let (from_pos, to_pos) = ((part << 32) / parts, ((part + 1) << 32) / parts);
        // SAFETY: pinned; the current table is never null.
        let current = unsafe { s.current.load(Ordering::Acquire, guard).deref() };
        // SAFETY: pinned.
        let old = unsafe { s.old.load(Ordering::Acquire, guard).as_ref() };
        let mut read = 0;
        for table in std::iter::once(current).chain(old) {
            let buckets = table.bucket_at(from_pos)..table.bucket_at(to_pos);
            read += buckets.len() * super::SLOTS_PER_BUCKET;
            for bucket in buckets {
                for cell in &table.bucket(bucket).0 {
                    let value = Slot(cell.load(Ordering::Acquire));
                    if !value.is_empty() {
                        f(value);
                    }
                }
            }
        }
        read
    }
}

impl Table {
    /// The home bucket of hash position `pos` (`buckets` for 2^32, past the last).
    fn bucket_at(&self, pos: u64) -> usize {
        ((pos * self.buckets as u64) >> 32) as usize
    }
}
