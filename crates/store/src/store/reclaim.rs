//! Dead memory: segments (and large items) whose items are all expired or flushed, and the
//! flush generation that makes every earlier item invisible at once.

use std::sync::atomic::Ordering;

use crossbeam_epoch as epoch;

use super::Store;
use crate::segment::{Ctl, Victim, NONE};

impl Store {
    pub(super) fn seal_actives(&self, ctl: &mut Ctl) {
        for active in self.active.iter() {
            let id = active.swap(NONE, Ordering::AcqRel);
            if id != NONE {
                let seg = self.segments.header(id);
                seg.seal();
                ctl.push(seg.queue(), Victim::Segment(id));
            }
        }
    }

    /// Seals active segments whose items are all dead, so that `take_dead` finds them: a
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
            let mut ctl = self.ctl.lock();
            if active.load(Ordering::Acquire) != id {
                continue; // rolled meanwhile: it is queued already
            }
            let seg = self.segments.header(id);
            seg.seal();
            active.store(NONE, Ordering::Release);
            ctl.push(seg.queue(), Victim::Segment(id));
        }
    }

    /// Takes up to `max` queued segments (or large items) whose items are all dead.
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
        };
        let mut ctl = self.ctl.lock();
        let ctl = &mut *ctl;
        let mut dead = Vec::new();
        for queue in [&mut ctl.small, &mut ctl.main] {
            let mut i = 0;
            while i < queue.len() && dead.len() < max {
                if is_dead(&queue[i]) {
                    dead.extend(queue.remove(i));
                } else {
                    i += 1;
                }
            }
        }
        dead
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
            self.flush_now();
        }
    }

    /// Starts a new flush generation: items of earlier ones are invisible from now on, and
    /// their segments are reclaimed by `maintain`.
    pub(super) fn flush_now(&self) {
        let mut ctl = self.ctl.lock();
        self.flush_gen.fetch_add(1, Ordering::AcqRel);
        self.seal_actives(&mut ctl);
    }
}
