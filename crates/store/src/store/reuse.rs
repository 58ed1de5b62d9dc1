//! Reuse before the limit: memory the store has touched is written again before fresh pages
//! are.
//!
//! A rewrite leaves its old copy as garbage in its segment, and a segment comes back only
//! when it is taken off its queue, which used to happen only at the memory limit. Under
//! churn over a fixed key space (9:1 get:set over 10,000 keys of 10 KB) every set therefore
//! wrote through pages never touched before, one fault and one zeroed 4 KiB page each
//! (2.5 minor faults per set, measured), until the whole limit had been touched, although
//! the live data was a tenth of it; an allocator that frees (pogocache) reuses its memory
//! hot instead.
//!
//! So, once the memory charged is more than `REUSE_LIVE_SHARE` times what the store holds
//! (live items, the index, memory kept outside; `compact.rs`'s estimate) and past a floor,
//! a client roll onto a new segment asks for compactions ahead until a few segments
//! (`REUSE_STOCK`) are free or on their way back, with a bound on those in their grace
//! period (`REUSE_GRACE_MAX`: a long pin elsewhere delays them all, and fresh pages are
//! taken meanwhile, as before). The next write runs one after its stripe lock is let go
//! (`reuse_ahead`; one atomic load per write when none is asked for): the oldest queued
//! segment, as eviction would take it, has its live items copied forward (`Clear::Compact`:
//! queue and access count kept, nothing evicted) if at most three quarters of it is live,
//! and goes back to the free resident list after its grace period, charged and resident,
//! for the next roll. With
//! the memory at least twice the live data, a FIFO of uniformly rewritten items is about a
//! fifth live at its head, so a segment of room costs a fifth of a segment of copies.
//!
//! Nothing changes for memory in use: the charged bytes still count against the one limit,
//! and the pages of a reused segment are the ones it had. A run of heads not worth copying
//! (live data that is not rewritten) stops the asks for a turnover of the queues
//! (`REUSE_FRUITLESS_MAX`), so a store of cold data does not scan its heads on every roll.
//! Not under `WhenFull::Refuse`, where a full store refuses rather than reclaims.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::{Clear, Store};
use crate::{
    segment::{Ctl, Queue},
    types::WhenFull,
};

/// Compaction ahead applies while the memory charged is more than this many times what the
/// store holds.
const REUSE_LIVE_SHARE: usize = 2;
/// ... and more than this many segments (a small store's memory is mostly its index and
/// partly filled segments).
const REUSE_FLOOR_SEGMENTS: usize = 16;
/// Compactions ahead that may free nothing in a row before the asks stop for a turnover.
const REUSE_FRUITLESS_MAX: usize = 4;
/// Segments kept free, on their way back or asked for, beyond eviction's reserve: a roll
/// takes one of them while the next ones are in their grace period.
const REUSE_STOCK: usize = 3;
/// Compactions ahead wait while this many segments and items are in their grace period (a
/// long read pin on another thread holds them all back).
const REUSE_GRACE_MAX: usize = 32;

/// The state of compaction ahead.
#[derive(Default)]
pub(super) struct Reuse {
    /// Compactions asked for by rolls and not yet run.
    due: AtomicUsize,
    /// Compactions ahead in a row that freed nothing.
    fruitless: AtomicUsize,
    /// No asks until the store's sequence reaches this (after `REUSE_FRUITLESS_MAX`).
    retry_at_seq: AtomicU64,
}

impl Store {
    /// Notes a client's roll onto segment-taking (under `ctl`): asks for compactions ahead,
    /// when the store holds much less than it was charged, until the free segments (and
    /// those past their grace, or asked for) come to `REUSE_STOCK` beyond eviction's
    /// `reserve`, with at most `REUSE_GRACE_MAX` segments and items in their grace period.
    pub(super) fn note_roll_for_reuse(&self, ctl: &Ctl, reserve: usize) {
        let stock = ctl.free_resident.len() + self.recycled.freed_count.load(Ordering::Acquire);
        let wanted = (reserve + REUSE_STOCK).saturating_sub(stock);
        if wanted == 0
            || self.recycled.in_grace.load(Ordering::Acquire) >= REUSE_GRACE_MAX
            || !self.reuse_wanted()
        {
            return;
        }
        let _ = self.reuse.due.fetch_update(Ordering::AcqRel, Ordering::Acquire, |due| {
            (due < wanted).then_some(wanted)
        });
    }

    /// Whether compaction ahead applies, from the last estimate of what the store holds (no
    /// lock taken: this runs under `ctl` and a stripe lock).
    fn reuse_wanted(&self) -> bool {
        if self.when_full() == WhenFull::Refuse
            || self.seq.load(Ordering::Relaxed) < self.reuse.retry_at_seq.load(Ordering::Relaxed)
        {
            return false;
        }
        let used = self.recycled.used_bytes.load(Ordering::Acquire);
        self.reuse_mark_passed(used, self.held_bytes_cached())
    }

    /// Whether `used` bytes charged are past the mark for `held` bytes held, and short of
    /// the limit by more than `REUSE_FLOOR_SEGMENTS / 2` segments: at the limit, room is
    /// `make_room`'s business (a copy that finds no room there may evict its item).
    fn reuse_mark_passed(&self, used: usize, held: usize) -> bool {
        let near_limit = used + REUSE_FLOOR_SEGMENTS / 2 * self.seg_size > self.recycled.limit();
        used > REUSE_FLOOR_SEGMENTS * self.seg_size && used > REUSE_LIVE_SHARE * held && !near_limit
    }

    /// Runs one compaction ahead if a roll asked for one. Call with no lock held and no
    /// item borrowed (after a write).
    #[inline]
    pub(super) fn reuse_ahead(&self) {
        if self.reuse.due.load(Ordering::Relaxed) == 0 {
            return;
        }
        self.reuse_ahead_slow();
    }

    #[cold]
    fn reuse_ahead_slow(&self) {
        let claimed = self
            .reuse
            .due
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |due| due.checked_sub(1));
        if claimed.is_err() || self.when_full() == WhenFull::Refuse {
            return;
        }
        let used = self.recycled.used_bytes.load(Ordering::Acquire);
        if !self.reuse_mark_passed(used, self.held_bytes()) {
            return;
        }
        // The oldest entry as eviction would pick it; none queued (every segment active):
        // nothing to do, unlike eviction, which seals the active ones.
        let Some(victim) = self.lock_ctl().pick_victim_preferring(Queue::Main) else { return };
        let freed = self.clear(victim, Clear::Compact).unwrap_or(0);
        if freed > 0 {
            self.reuse.fruitless.store(0, Ordering::Relaxed);
            return;
        }
        if self.reuse.fruitless.fetch_add(1, Ordering::Relaxed) + 1 >= REUSE_FRUITLESS_MAX {
            // Live data at the heads: wait for about a turnover of the queues.
            let queued = self.lock_ctl().queued() as u64;
            let seq = self.seq.load(Ordering::Relaxed);
            self.reuse.retry_at_seq.store(seq + queued.max(1), Ordering::Relaxed);
            self.reuse.fruitless.store(0, Ordering::Relaxed);
            self.reuse.due.store(0, Ordering::Relaxed);
        }
    }
}
