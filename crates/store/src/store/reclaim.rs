//! Dead memory: segments (and large items) whose items are all expired or flushed, and the
//! flush generation that makes every earlier item invisible at once.
//!
//! Work is bounded by what is dead, never by what is queued (all under `ctl`, which every
//! segment roll takes): `take_dead` looks at the dead list and at the head of each TTL class
//! of both queues (see `Ctl`), and takes at most the `max` its caller asks for: `maintain`
//! (8 per worker tick) and `make_room` (2 per round, on the write path). A flush is one
//! step: it bumps the generation, which makes every earlier item invisible at once, and
//! seals the active segments; its dead segments then sit at the class heads, ahead of
//! anything written since, and go back in those bounded steps.

use std::sync::atomic::Ordering;

use crossbeam_epoch as epoch;

use super::Store;
use crate::{
    segment::{Ctl, Victim, NONE},
    shared_writes::{self, Site},
};

impl Store {
    pub(super) fn seal_actives(&self, ctl: &mut Ctl) {
        for active in self.active.iter() {
            let id = active.swap(NONE, Ordering::AcqRel);
            if id != NONE {
                let seg = self.segments.header(id);
                seg.seal();
                ctl.push_segment(id, seg);
            }
        }
    }

    /// Seals active segments whose items are all dead, onto the dead list where `take_dead`
    /// looks first: a
    /// segment that stops receiving writes (a burst of short-lived items, then no more of
    /// that TTL class) would otherwise stay active, and its items counted, for ever.
    /// Bounded: one pass over the active table, which is small (2 queues x TTL classes x
    /// write shards); `ctl` is taken only for a segment to seal.
    pub(super) fn seal_dead_actives(&self, now_ms: u64) {
        for active in self.active.iter() {
            let id = active.load(Ordering::Acquire);
            if id == NONE
                || self.segments.header(id).used_end.load(Ordering::Acquire) == 0
                || !self.segment_dead(id, now_ms)
            {
                continue;
            }
            let mut ctl = self.lock_ctl();
            if active.load(Ordering::Acquire) != id {
                continue; // rolled meanwhile: it is queued already
            }
            let seg = self.segments.header(id);
            seg.seal();
            active.store(NONE, Ordering::Release);
            ctl.push_dead(Victim::Segment(id));
        }
    }

    /// Takes up to `max` segments (or large items) whose items are all dead, from the dead
    /// list and the queues' class heads (see the module doc): no scan of the queues.
    pub(super) fn take_dead(&self, now_ms: u64, max: usize) -> Vec<Victim> {
        let flush_gen = self.flush_gen.load(Ordering::Acquire);
        let guard = epoch::pin();
        let is_dead = |victim: &Victim| match *victim {
            Victim::Segment(id) => self.segment_dead(id, now_ms),
            Victim::Large(slot, seq) => match self.recycled.large(slot, &guard) {
                Some(large) if large.seq == seq => {
                    large.flush_gen != flush_gen || large.expiry_ms <= now_ms
                }
                _ => true,
            },
            Victim::Owner(key_hash, value_hash) => self.owner_dead(key_hash, value_hash, now_ms),
        };
        self.lock_ctl().take_dead(max, is_dead)
    }

    /// Whether every item of a segment is expired or flushed.
    pub(super) fn segment_dead(&self, id: u32, now_ms: u64) -> bool {
        let seg = self.segments.header(id);
        seg.flush_gen.load(Ordering::Acquire) != self.flush_gen.load(Ordering::Acquire)
            || seg.max_expiry_ms.load(Ordering::Acquire) <= now_ms
    }

    pub(super) fn check_flush(&self, now_ms: u64) {
        let at = self.flush_at_ms.load(Ordering::Relaxed);
        if now_ms >= at
            && self
                .flush_at_ms
                .compare_exchange(at, u64::MAX, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            shared_writes::note(Site::FlushDue);
            self.flush_now();
        }
    }

    /// Starts a new flush generation: items of earlier ones are invisible from now on, and
    /// their segments are reclaimed by `maintain` and `make_room` in bounded steps. O(1) in
    /// the number of items: one pass over the small active-segment table.
    pub(super) fn flush_now(&self) {
        let mut ctl = self.lock_ctl();
        self.flush_gen.fetch_add(1, Ordering::AcqRel);
        self.seal_actives(&mut ctl);
    }
}
