//! Active expiry: an incremental sweep of the index that unlinks expired items nobody reads
//! again, so that `len` and `scan` stop counting them within a few seconds (Redis's active
//! expire cycle). Whole dead segments go back through `take_dead`; this finds the expired
//! items of segments that still hold live ones.
//!
//! ```text
//!   cursor (one AtomicU64, shared by the workers): chunk numbers, claimed CLAIM_CHUNKS at
//!   a time; chunk c = sub-table c % 64, hash positions part (c / 64) % SWEEP_PARTS
//!   per entry:  its segment's earliest expiry is ahead and it was opened since the last
//!               flush (the header says) -> skip, no item read; so a segment of the no-TTL
//!               class is always skipped
//!               else read the item; expired or flushed -> unlink as a write would
//! ```
//!
//! A pass over the index is `SUBTABLES * SWEEP_PARTS` chunks. Each worker tick sweeps a
//! share of the index sized for a pass every few seconds, then goes on while more than a
//! tenth of the items it read were dead (Redis repeats its cycle on the same condition),
//! all within `SWEEP_TIME_MAX`. No lock is taken but the stripe of an item to unlink.

use std::{
    ops::AddAssign,
    sync::atomic::{AtomicU64, Ordering},
    time::{Duration, Instant},
};

use crossbeam_epoch::{self as epoch, Guard};

use super::{count_unlink, Resolved, Store, Unlink};
use crate::index::{self, HashParts, Location, LARGE_SEGMENT};

/// Ranges of hash positions per sub-table: a chunk of a 1 GiB store's index is 32 cells.
const SWEEP_PARTS: u64 = 256;
/// Chunks one `fetch_add` on the shared cursor claims.
const CLAIM_CHUNKS: u64 = 4;
/// A tick sweeps 1/`TICKS_PER_PASS` of the index (a pass in 1.6 s with 2 workers ticking
/// every 100 ms), at least `SWEEP_SLOTS_MIN` and at most `SWEEP_SLOTS_MAX` cells.
const TICKS_PER_PASS: usize = 32;
const SWEEP_SLOTS_MIN: usize = 4096;
const SWEEP_SLOTS_MAX: usize = 1 << 18;
/// Cells per extra step while the sweep keeps finding dead items.
const SWEEP_SLOTS_MORE: usize = 4096;
/// A tick's sweep stops here, whatever it found.
const SWEEP_TIME_MAX: Duration = Duration::from_micros(500);
/// Go on while more than 1/`DEAD_SHARE_MORE` of the items read were dead (Redis: 10%).
const DEAD_SHARE_MORE: usize = 10;

/// The sweep's cursor, alone on its cache line: the request path never reads it.
#[repr(align(64))]
#[derive(Default)]
pub(super) struct SweepCursor(AtomicU64);

/// What an expiry sweep did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    /// Index cells read.
    pub slots: usize,
    /// Items read: those in segments where one may be dead (the earliest expiry passed, or
    /// opened before a flush), and large items that may be.
    pub items: usize,
    /// Expired or flushed items unlinked.
    pub unlinked: usize,
}

impl AddAssign for Swept {
    fn add_assign(&mut self, other: Swept) {
        self.slots += other.slots;
        self.items += other.items;
        self.unlinked += other.unlinked;
    }
}

/// What a step compares items with, read once per step.
struct View {
    now_ms: u64,
    flush_gen: u32,
    through_secs: u64,
}

impl Store {
    /// One step of the expiry sweep: reads whole chunks of the index from the shared cursor
    /// until it has read `slots_max` cells (at least one claim), unlinking the expired and
    /// flushed items it finds, counted as a write that finds them so counts them.
    pub fn sweep_expired(&self, slots_max: usize) -> Swept {
        self.sweep_until(slots_max, None)
    }

    /// The workers' share, from `maintain`: a slice of the index, then more while the
    /// sweep keeps finding dead items, within `SWEEP_TIME_MAX`.
    pub(super) fn sweep_tick(&self) -> Swept {
        let deadline = Instant::now() + SWEEP_TIME_MAX;
        let slots = (self.index_slots() / TICKS_PER_PASS).clamp(SWEEP_SLOTS_MIN, SWEEP_SLOTS_MAX);
        let mut swept = self.sweep_until(slots, Some(deadline));
        while swept.unlinked * DEAD_SHARE_MORE > swept.items && Instant::now() < deadline {
            swept += self.sweep_until(SWEEP_SLOTS_MORE, Some(deadline));
        }
        swept
    }

    fn index_slots(&self) -> usize {
        self.index.size(&epoch::pin()).1
    }

    fn sweep_until(&self, slots_max: usize, deadline: Option<Instant>) -> Swept {
        let now_ms = self.config.clock.now_ms();
        self.check_flush(now_ms);
        let view = View {
            now_ms,
            flush_gen: self.flush_gen.load(Ordering::Acquire),
            through_secs: self.flushed_through_secs.load(Ordering::Acquire),
        };
        let mut swept = Swept::default();
        let guard = epoch::pin();
        let mut candidates = Vec::new();
        loop {
            let first = self.sweep_cursor.0.fetch_add(CLAIM_CHUNKS, Ordering::Relaxed);
            // First the claim's entries whose items may be dead, their lines prefetched;
            // then those items, whose misses now overlap.
            for chunk in first..first + CLAIM_CHUNKS {
                let sub = (chunk % index::SUBTABLES as u64) as usize;
                let part = (chunk / index::SUBTABLES as u64) % SWEEP_PARTS;
                swept.slots += self.index.sweep_part(sub, part, SWEEP_PARTS, &guard, |slot| {
                    if self.may_be_dead(slot.location(), &view, &guard) {
                        candidates.push(slot.location());
                    }
                });
            }
            for location in candidates.drain(..) {
                self.sweep_item(location, &view, &mut swept, &guard);
            }
            if swept.slots >= slots_max || deadline.is_some_and(|d| Instant::now() >= d) {
                return swept;
            }
        }
    }

    /// Whether the item at `location` may be expired or flushed (a cheap test that reads no
    /// item); if so, its line is prefetched.
    fn may_be_dead(&self, location: Location, view: &View, guard: &Guard) -> bool {
        if location.segment == LARGE_SEGMENT {
            self.recycled.large(location.offset, guard).is_some_and(|large| {
                large.expiry_ms <= view.now_ms || large.flush_gen != view.flush_gen
            })
        } else {
            // The segment's header, shared by all its items, is far cheaper to read than
            // the item's own bytes, which a store without TTLs, or whose TTLs are all ahead,
            // never reads.
            let seg = self.segments.header(location.segment);
            let may_be = seg.flush_gen.load(Ordering::Acquire) != view.flush_gen
                || seg.min_expiry_ms.load(Ordering::Acquire) <= view.now_ms;
            if may_be {
                self.segments.prefetch_item(location.segment, location.offset);
            }
            may_be
        }
    }

    fn sweep_item(&self, location: Location, view: &View, swept: &mut Swept, guard: &Guard) {
        swept.items += 1;
        let r = self.resolve(location, guard);
        if !r.visible(view.now_ms, view.flush_gen, view.through_secs)
            && self.unlink_if_dead(location, &r, guard)
        {
            swept.unlinked += 1;
        }
    }

    /// Unlinks the item at `location` if the index still points at it and it is expired or
    /// flushed, counted as a write that finds it so counts it. True if it did.
    fn unlink_if_dead(&self, location: Location, r: &Resolved<'_>, guard: &Guard) -> bool {
        let hash = HashParts::of(r.key());
        let mut stats = self.lock_stripe(hash);
        let Some(found) = self.index.find(hash, guard, |slot| slot.location() == location) else {
            return false; // overwritten, deleted or unlinked since
        };
        let flush_gen = self.flush_gen.load(Ordering::Acquire);
        let through_secs = self.flushed_through_secs.load(Ordering::Acquire);
        if r.visible(self.config.clock.now_ms(), flush_gen, through_secs) {
            return false;
        }
        self.index.remove(hash, &found);
        count_unlink(&mut stats, r, found.value.freq(), Unlink::Dead, flush_gen);
        self.retire_item(location, r, guard);
        self.observe_expiry(r, flush_gen);
        true
    }
}
