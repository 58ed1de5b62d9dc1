//! The index side of writes: growing a sub-table, moving its entries over in chunks, and
//! making way when both of a key's buckets are full (cuckoo steps, or evicting an entry).

use std::sync::{
    atomic::{AtomicU64, Ordering},
    Arc,
};

use crossbeam_epoch::Guard;

use super::{count_unlink, stripe_of, Ctx, Store, StripeStats, Unlink, MIGRATE_CHUNK_BUCKETS};
use crate::index::{self, GrowStep, GrowWhen, HashParts, Slot, Table};

/// What [`Store::grow_from`] did.
pub(super) enum Grown {
    Started,
    /// Not needed, growing already, or not now (near the limit, over the load limit).
    NotStarted,
    /// Needed, and the budget had not these bytes for the new table.
    NoMemory(usize),
}

/// Times a protected entry that found no slot in the new table frees one and tries again
/// before it is dropped after all (`Store::migrate_cell`): only when both its buckets and
/// every one of their entries' other buckets stay full of protected entries.
const PROTECTED_MOVE_ROUNDS: usize = 8;

impl Store {
    /// Sizes the index for about `keys` keys in one growth per sub-table, for a caller about
    /// to insert that many (a restore): growing as they come moves every entry once per
    /// growth, reading its item for the key's hash (measured: a third of a 1M-key restore).
    /// Charged to the memory budget as any growth; a sub-table that cannot be charged is
    /// left to grow as it fills.
    pub fn reserve_index(&self, keys: usize) {
        let guard = crossbeam_epoch::pin();
        let per_sub = keys.div_ceil(index::SUBTABLES);
        for sub in 0..index::SUBTABLES {
            let Some(buckets) = self.index.wants_reserve(sub, per_sub, &guard) else { continue };
            let bytes = Table::bytes_for(buckets);
            if !self.charge_other(bytes) {
                continue;
            }
            let started = Table::new(buckets)
                .ok()
                .is_some_and(|table| self.index.start_growth(sub, table, &guard).is_ok());
            if !started {
                self.recycled.uncharge(bytes);
                continue;
            }
            // Each step moves a chunk of the old table; a step that finds none claimable (another
            // thread's) moves nothing, so the loop is bounded rather than waiting on others.
            for _ in 0..buckets {
                if !self.index.is_growing(sub, &guard) {
                    break;
                }
                self.migrate_step(sub, &guard);
            }
        }
    }

    /// Both of the key's buckets are full: move one of their entries to its other bucket,
    /// making room there first if need be (cuckoo steps, two deep). With only one step,
    /// tables could not fill past about 86%, as two-choice insertion fills buckets evenly.
    /// The caller holds the stripe of `held`.
    pub(super) fn relocate_from_buckets(&self, held: HashParts, guard: &Guard) -> bool {
        let entries = self.index.window_entries(held, guard);
        self.relocate_one_of(&entries, &[stripe_of(held)], 1, guard)
    }

    /// Moves one of `entries` to its alternate bucket; `held` are the stripes this thread
    /// holds already. Other stripes are only tried, never waited for.
    pub(super) fn relocate_one_of(
        &self,
        entries: &[(&AtomicU64, Slot)],
        held: &[usize],
        depth: usize,
        guard: &Guard,
    ) -> bool {
        for &(cell, slot) in entries {
            let r = self.resolve(slot.location(), guard);
            let hash = HashParts::of(r.key());
            let stripe = stripe_of(hash);
            let Some(_lock) = self.try_lock_unless_held(stripe, held) else { continue };
            if self.index.relocate(hash, cell, slot, guard) {
                return true;
            }
            if depth > 0 {
                let next = self.index.alternate_entries(hash, cell, guard);
                let held: Vec<usize> = held.iter().copied().chain([stripe]).collect();
                if self.relocate_one_of(&next, &held, depth - 1, guard)
                    && self.index.relocate(hash, cell, slot, guard)
                {
                    return true;
                }
            }
        }
        false
    }

    /// Locks `stripe` for a second key without waiting: `Some(None)` if this thread holds it
    /// already, `None` if another thread does.
    pub(super) fn try_lock_unless_held(
        &self,
        stripe: usize,
        held: &[usize],
    ) -> Option<Option<parking_lot::MutexGuard<'_, StripeStats>>> {
        if held.contains(&stripe) {
            return Some(None);
        }
        self.stripes[stripe].0.try_lock().map(Some)
    }

    /// Both of the key's buckets are full: evict their least-used entry that we can lock
    /// and that may be evicted (`protect.rs`).
    pub(super) fn evict_from_window(&self, ctx: &mut Ctx<'_>) {
        let mut candidates = self.index.window_entries(ctx.hash, ctx.guard);
        candidates.sort_by_key(|(_, slot)| slot.freq());
        let protection = self.protection();
        for (cell, slot) in candidates {
            let r = self.resolve(slot.location(), ctx.guard);
            if protection.protects(&r) {
                continue;
            }
            let hash = HashParts::of(r.key());
            let held = [stripe_of(ctx.hash)];
            let Some(mut other) = self.try_lock_unless_held(stripe_of(hash), &held) else {
                continue;
            };
            if !self.index.remove_if(hash.sub, cell, slot) {
                continue;
            }
            let stats = match other.as_mut() {
                Some(g) => &mut **g,
                None => &mut *ctx.stats,
            };
            count_unlink(stats, &r, slot.freq(), Unlink::Evicted, ctx.flush_gen);
            self.observe_eviction(&r, slot.freq(), ctx.now_ms);
            self.retire_item(slot.location(), &r, ctx.guard);
            return;
        }
    }

    /// After a write: move a chunk of a growing sub-table, or start growing a full one and
    /// move its first chunk now. Left to the sub-table's next write, a small table's whole
    /// migration waited about 64 writes with both tables charged (old tables were 0.8 B
    /// per item at 0.1% of a 64 MiB store, when sub-tables grow every few keys).
    pub(super) fn after_write(&self, sub: usize, guard: &Guard) {
        if self.index.is_growing(sub, guard) || self.grow(sub, GrowWhen::OverLoadLimit, guard) {
            self.migrate_step(sub, guard);
        }
    }

    /// Starts growing a sub-table if `when` says it needs it. False if it did not start, for
    /// want of memory or because it is growing already.
    pub(super) fn grow(&self, sub: usize, when: GrowWhen, guard: &Guard) -> bool {
        matches!(self.grow_from(sub, when, &mut 0, guard), Grown::Started)
    }

    /// [`Store::grow`], the new table charged to `room_bytes` (memory a write made room for,
    /// `Store::make_room`) when they cover it, else to the budget.
    pub(super) fn grow_from(
        &self,
        sub: usize,
        when: GrowWhen,
        room_bytes: &mut usize,
        guard: &Guard,
    ) -> Grown {
        let step = if self.memory_used_bytes() > self.config.memory_bytes / 2 {
            GrowStep::Small
        } else {
            GrowStep::Normal
        };
        let Some(buckets) = self.index.wants_growth(sub, when, step, guard) else {
            return Grown::NotStarted;
        };
        let bytes = Table::bytes_for(buckets);
        // Near the memory limit, index memory competes with items: grow only when a key
        // found no slot even after relocation (at about 95% load), so the index is dense
        // exactly when memory is scarce.
        let used = self.memory_used_bytes();
        if when == GrowWhen::OverLoadLimit && used + bytes > self.config.memory_bytes / 8 * 7 {
            return Grown::NotStarted;
        }
        if *room_bytes >= bytes {
            *room_bytes -= bytes;
        } else if !self.charge_other(bytes) {
            return Grown::NoMemory(bytes); // no memory to spare: the table stays fuller
        }
        let started = Table::new(buckets)
            .ok()
            .is_some_and(|table| self.index.start_growth(sub, table, guard).is_ok());
        if !started {
            self.recycled.uncharge(bytes);
            return Grown::NotStarted;
        }
        Grown::Started
    }

    pub(super) fn migrate_step(&self, sub: usize, guard: &Guard) {
        let Some(chunk) = self.index.claim_migration(sub, MIGRATE_CHUNK_BUCKETS, guard) else {
            return;
        };
        for cell in chunk.slots() {
            self.migrate_cell(cell, guard);
        }
        if let Some(bytes) = self.index.finish_migration(chunk, guard) {
            let recycled = Arc::clone(&self.recycled);
            recycled.index_retiring_bytes.fetch_add(bytes, Ordering::AcqRel);
            guard.defer(move || {
                recycled.uncharge(bytes);
                recycled.index_retiring_bytes.fetch_sub(bytes, Ordering::AcqRel);
                // A write waiting for memory on its way back (`Store::wait_for_frees`)
                // counts this charge coming back as a free.
                recycled.frees.fetch_add(1, Ordering::Release);
            });
            // Hand the table and its charge to the global queue now: left in this thread's
            // bag, they waited for 64 more deferred frees, and retired tables still charged
            // took 2 to 4 bytes per item while a store filled (measured with `footprint`).
            guard.flush();
        }
    }

    pub(super) fn migrate_cell(&self, cell: &AtomicU64, guard: &Guard) {
        let mut rounds = 0;
        // Bounded: the value changes only by readers raising its frequency (at most 3 times)
        // or by its removal; a protected entry retries at most `PROTECTED_MOVE_ROUNDS` times.
        while let Some(value) = index::slot_value(cell) {
            let r = self.resolve(value.location(), guard);
            let hash = HashParts::of(r.key());
            let mut stats = self.lock_stripe(hash);
            if cell.load(Ordering::Acquire) != value.0 {
                continue;
            }
            let moved = index::move_entry(&self.index, hash, cell, value, guard)
                || (self.relocate_from_buckets(hash, guard)
                    && index::move_entry(&self.index, hash, cell, value, guard));
            if moved {
                return;
            }
            if rounds < PROTECTED_MOVE_ROUNDS && self.protection().protects(&r) {
                // An entry that must not be evicted is not dropped for want of a slot (it was
                // a never-evict key lost under concurrent writes): its stripe let go, a slot
                // of its new buckets is made, one stripe held at a time, and it moves again.
                drop(stats);
                rounds += 1;
                self.free_slot_for(hash, guard);
                continue;
            }
            index::drop_entry(&self.index, hash, cell);
            let flush_gen = self.flush_gen.load(Ordering::Acquire);
            count_unlink(&mut stats, &r, value.freq(), Unlink::Evicted, flush_gen);
            self.retire_item(value.location(), &r, guard);
            drop(stats);
            if self.config.on_evict.is_some() {
                self.observe_eviction(&r, value.freq(), self.config.clock.now_ms());
            }
            return;
        }
    }

    /// Makes a free slot in the current table's buckets of `hash` for a protected entry
    /// moving out of the old table: the least used entry there that may be evicted goes, or
    /// else one moves to its other bucket. The caller holds no stripe, so each entry's
    /// stripe is waited for (one at a time: no lock order to keep), not only tried as a
    /// write's cuckoo steps do.
    fn free_slot_for(&self, hash: HashParts, guard: &Guard) {
        let mut entries = self.index.window_entries(hash, guard);
        if entries.len() < 2 * index::SLOTS_PER_BUCKET {
            return; // a slot is free already
        }
        entries.sort_by_key(|(_, slot)| slot.freq());
        let protection = self.protection();
        for (cell, slot) in entries {
            let r = self.resolve(slot.location(), guard);
            let other = HashParts::of(r.key());
            let mut stats = self.lock_stripe(other);
            if !protection.protects(&r) && self.index.remove_if(other.sub, cell, slot) {
                let flush_gen = self.flush_gen.load(Ordering::Acquire);
                count_unlink(&mut stats, &r, slot.freq(), Unlink::Evicted, flush_gen);
                self.retire_item(slot.location(), &r, guard);
                drop(stats);
                self.observe_eviction(&r, slot.freq(), self.config.clock.now_ms());
                return;
            }
            if self.index.relocate(other, cell, slot, guard) {
                return;
            }
        }
    }
}
