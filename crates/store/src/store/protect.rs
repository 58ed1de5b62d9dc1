//! What eviction may take. Under [`WhenFull::Evict`] every item may go; under
//! [`WhenFull::EvictVolatile`] (Redis's `volatile-*`) only items with an expiry; and items
//! whose stored key the never-evict predicate names ([`NeverEvict`]: Spinel's never-evict
//! databases and key prefixes) never go under any policy. This covers everything eviction
//! takes: segment items, large items and owners (whose collections live outside the store).
//!
//! A protected item met in a segment being evicted is kept as a read item is: copied
//! forward (from the small queue into main). That costs a copy, so a segment is only taken
//! when at least a quarter of it would come back (`MIN_FREE_*`: garbage, dead items and
//! items that may go); a fuller one goes back to the tail of its queue unread, as
//! compaction does with segments not worth it. Items without an expiry live in TTL class
//! 0's segments, apart from those with one, so under `volatile-*` whole segments are either
//! protected or not.
//!
//! The work per write is bounded: a write that needs room takes victims until a pass over
//! every queued entry (as many as were queued when it started) took nothing. Then, if some
//! segment had anything at all to free, one more pass takes any such segment; then one
//! more with the active segments sealed (their items are not queued until then); then the
//! write is refused (`StoreError::NoSpace`, Redis's OOM error) and the store remembers that
//! it is *exhausted*: the next writes are refused after summing the stripes' counts (about
//! 20 us for 1024 uncontended locks), not after another pass, until those counts change (a
//! write, a delete, an expiry, a flush) or the policy or the marks do. The counts are taken
//! before the pass, so that a write during it leaves the mark stale at once.

use std::sync::atomic::Ordering;

use crossbeam_epoch::Guard;

use super::{Resolved, Store};
use crate::{
    bytes,
    index::Location,
    types::{Expiry, NeverEvict, WhenFull},
};

/// A segment is evicted only if at least this share of it would come back while some items
/// are protected (`Store::freeable_bytes`); until a pass found none such.
const MIN_FREE_NUM: usize = 1;
const MIN_FREE_DEN: usize = 4;

/// What eviction must keep, read once per victim (or per making room).
pub(super) struct Protection {
    /// `volatile-*`: items without an expiry are kept.
    volatile_only: bool,
    never_evict: Option<NeverEvict>,
}

impl Protection {
    /// Whether some live items may have to be kept.
    pub(super) fn restricts(&self) -> bool {
        self.volatile_only || self.never_evict.is_some()
    }

    /// Whether a live item of this key and expiry must not be evicted.
    pub(super) fn protects_key(&self, key: &[u8], expiry: Expiry) -> bool {
        (self.volatile_only && expiry == Expiry::Never)
            || self.never_evict.as_ref().is_some_and(|never| never(key))
    }

    pub(super) fn protects(&self, r: &Resolved<'_>) -> bool {
        self.restricts() && self.protects_key(r.key(), r.header.expiry)
    }
}

/// The state of one write's eviction across the victims it takes.
pub(super) struct EvictPass {
    pub(super) protection: Protection,
    /// A segment is taken only if this many bytes of it would come back.
    pub(super) min_free_bytes: usize,
    /// The stripes' counts when the pass started, under a protection.
    pub(super) counts: Option<Exhausted>,
    /// A segment skipped for freeing too little had something to free.
    pub(super) partial_seen: bool,
    /// The active segments were sealed, so that a last pass saw every item.
    pub(super) sealed: bool,
    /// The value hash of the owner whose write makes room (`Store::charge_outside_for`):
    /// queued again unvisited while anything else can go (`owners.rs`).
    pub(super) spared_owner: Option<u64>,
}

/// What follows a pass that took nothing (`Store::next_pass`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NextPass {
    /// A pass taking any segment that frees something.
    AnyFreeing,
    /// A pass with the active segments sealed.
    Sealed,
    /// None: the write is refused.
    Exhausted,
}

/// The stripes' counts when a pass found nothing evictable: while they stay the same, no
/// item was written, deleted, expired or flushed, so nothing became evictable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Exhausted {
    flush_gen: u32,
    total_items: u64,
    items: i64,
    expired: u64,
}

impl Store {
    /// Sets (or clears) the predicate naming stored keys that are never evicted. A write
    /// already making room finishes under the old one.
    pub fn set_never_evict(&self, never_evict: Option<NeverEvict>) {
        *self.never_evict.write() = never_evict;
        self.forget_exhausted();
    }

    /// What eviction must keep now.
    pub(super) fn protection(&self) -> Protection {
        Protection {
            volatile_only: self.when_full() == WhenFull::EvictVolatile,
            never_evict: self.never_evict.read().clone(),
        }
    }

    /// A new pass of eviction under the protection in force now.
    pub(super) fn evict_pass(&self) -> EvictPass {
        EvictPass {
            protection: self.protection(),
            min_free_bytes: self.seg_size * MIN_FREE_NUM / MIN_FREE_DEN,
            counts: None,
            partial_seen: false,
            sealed: false,
            spared_owner: None,
        }
    }

    /// Whether, under a protection, a pass found nothing evictable and nothing changed since;
    /// if not, the counts a pass that finds nothing marks the store with.
    pub(super) fn known_exhausted(&self, pass: &mut EvictPass) -> bool {
        if !pass.protection.restricts() {
            return false;
        }
        let (counts, exhausted) = self.exhaustion();
        pass.counts = Some(counts);
        exhausted
    }

    /// A pass over every queued entry took nothing: what the next one does. First segments
    /// freeing less than a quarter of themselves count, then the active segments are sealed
    /// (their items were not queued); after that, the store is exhausted.
    pub(super) fn next_pass(&self, pass: &mut EvictPass, entries: &mut usize) -> NextPass {
        if pass.partial_seen && pass.min_free_bytes > 1 {
            (pass.min_free_bytes, pass.partial_seen) = (1, false);
            return NextPass::AnyFreeing;
        }
        if !std::mem::replace(&mut pass.sealed, true) {
            self.seal_actives(&mut self.lock_ctl());
            *entries = self.lock_ctl().queued();
            return NextPass::Sealed;
        }
        match pass.counts {
            Some(counts) => {
                self.mark_exhausted(counts);
                NextPass::Exhausted
            }
            None => NextPass::Sealed, // no protection: every pass takes something
        }
    }

    /// Bytes of segment `id` (items in `[0, end)`) that evicting it would give back: items
    /// no longer indexed, dead ones, and live ones `protection` lets go (read or not: a
    /// read one is copied once, then goes). Lock-free: a reader's lookups.
    pub(super) fn freeable_bytes(
        &self,
        id: u32,
        end: usize,
        protection: &Protection,
        guard: &Guard,
    ) -> usize {
        let now_ms = self.config.clock.now_ms();
        let flush_gen = self.flush_gen.load(Ordering::Acquire);
        let through_secs = self.flushed_through_secs.load(Ordering::Acquire);
        let mut freeable = 0;
        let mut offset = 0;
        while offset < end {
            let location = Location { segment: id, offset: offset as u32 };
            let r = self.resolve(location, guard);
            let len = bytes::STAMP_BYTES + r.bytes.len();
            offset += len;
            let kept = self.indexed_at(location, r.key(), guard)
                && r.visible(now_ms, flush_gen, through_secs)
                && (r.is_owner() || protection.protects(&r));
            if !kept {
                freeable += len;
            }
        }
        freeable
    }

    /// The counts now, and whether a pass found nothing evictable and nothing changed
    /// since. The counts are taken before the pass that may follow, so that a write during
    /// it leaves the mark it makes stale at once.
    pub(super) fn exhaustion(&self) -> (Exhausted, bool) {
        let counts = self.exhaustion_counts();
        let mut mark = self.exhausted.lock();
        match *mark {
            Some(marked) if marked == counts => (counts, true),
            Some(_) => {
                *mark = None;
                (counts, false)
            }
            None => (counts, false),
        }
    }

    /// Remembers that a pass that started at `counts` found nothing evictable.
    pub(super) fn mark_exhausted(&self, counts: Exhausted) {
        *self.exhausted.lock() = Some(counts);
    }

    pub(super) fn forget_exhausted(&self) {
        *self.exhausted.lock() = None;
    }

    fn exhaustion_counts(&self) -> Exhausted {
        // Before the stripes: a flush during the sum makes the mark stale.
        let mut mark = Exhausted {
            flush_gen: self.flush_gen.load(Ordering::Acquire),
            total_items: 0,
            items: 0,
            expired: 0,
        };
        for stripe in self.stripes.iter() {
            let s = stripe.0.lock();
            mark.total_items = mark.total_items.wrapping_add(s.total_items);
            mark.items = mark.items.wrapping_add(s.items);
            mark.expired = mark.expired.wrapping_add(s.expired_reclaimed);
        }
        mark
    }
}
