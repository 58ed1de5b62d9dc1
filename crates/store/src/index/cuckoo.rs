//! One cuckoo step: when both of a key's buckets are full, an entry moves to its other
//! bucket to free a slot (the writer holds the stripes involved).

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_epoch::Guard;

use super::{slot_value, HashParts, Index, Slot};

impl Index {
    /// The occupied cells of a key's two buckets in the current table, with their values:
    /// the candidates when both are full and one entry must give way.
    pub(crate) fn window_entries<'g>(
        &self,
        hash: HashParts,
        guard: &'g Guard,
    ) -> Vec<(&'g AtomicU64, Slot)> {
        // SAFETY: pinned; the current table is never null.
        let table = unsafe { self.subs[hash.sub].current.load(Ordering::Acquire, guard).deref() };
        table.cells(hash).filter_map(|cell| slot_value(cell).map(|v| (cell, v))).collect()
    }

    /// Moves the entry in `cell` (holding `value`, a key with `hash`) to a free slot of its
    /// other bucket in the current table: one cuckoo step, to free a slot for another key.
    /// The caller holds the entry's stripe.
    pub(crate) fn relocate(
        &self,
        hash: HashParts,
        cell: &AtomicU64,
        value: Slot,
        guard: &Guard,
    ) -> bool {
        let sub = &self.subs[hash.sub];
        let current = sub.current.load(Ordering::Acquire, guard);
        // SAFETY: pinned; the current table is never null.
        let table = unsafe { current.deref() };
        let [first, second] = table.candidates(hash);
        let in_first = table.bucket(first).0.iter().any(|c| std::ptr::eq(c, cell));
        let target = table.bucket(if in_first { second } else { first });
        let Some(free) = target.0.iter().find(|c| {
            c.load(Ordering::Relaxed) == 0
                && c.compare_exchange(0, value.0, Ordering::AcqRel, Ordering::Relaxed).is_ok()
        }) else {
            return false;
        };
        if !super::still_current(sub, current, guard) {
            free.store(0, Ordering::Release); // a growth started: the entry stays where it is
            return false;
        }
        // Same order as a move between tables: new copy, version bump, then clear the old.
        sub.version.fetch_add(1, Ordering::AcqRel);
        if self.remove_if(hash.sub, cell, value) {
            sub.count.fetch_add(1, Ordering::Relaxed); // remove_if counted a removal
            true
        } else {
            free.store(0, Ordering::Release);
            false
        }
    }

    /// The occupied cells of the bucket that is the other candidate of the entry in `cell`.
    pub(crate) fn alternate_entries<'g>(
        &self,
        hash: HashParts,
        cell: &AtomicU64,
        guard: &'g Guard,
    ) -> Vec<(&'g AtomicU64, Slot)> {
        // SAFETY: pinned; the current table is never null.
        let table = unsafe { self.subs[hash.sub].current.load(Ordering::Acquire, guard).deref() };
        let [first, second] = table.candidates(hash);
        let in_first = table.bucket(first).0.iter().any(|c| std::ptr::eq(c, cell));
        let other = table.bucket(if in_first { second } else { first });
        other.0.iter().filter_map(|c| slot_value(c).map(|v| (c, v))).collect()
    }

    /// Clears `cell` if it still holds `value`; the caller holds the entry's stripe.
    pub(crate) fn remove_if(&self, sub: usize, cell: &AtomicU64, value: Slot) -> bool {
        // A reader may have raised the entry's frequency meanwhile: compare locations only.
        let mut seen = cell.load(Ordering::Acquire);
        loop {
            let slot = Slot(seen);
            if slot.is_empty() || slot.location() != value.location() || slot.tag() != value.tag() {
                return false;
            }
            match cell.compare_exchange(seen, 0, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => break,
                Err(now) => seen = now,
            }
        }
        self.subs[sub].count.fetch_sub(1, Ordering::Relaxed);
        true
    }
}
