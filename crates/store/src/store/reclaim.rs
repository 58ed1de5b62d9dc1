//! Making room and reclaiming: eviction (S3-FIFO over whole segments and large items),
//! reclaim of dead (expired or flushed) segments, and the wait for their grace period.

use std::sync::{atomic::Ordering, Arc};

use crossbeam_epoch::{self as epoch, Guard};

use super::{count_unlink, ttl_class, Clear, Resolved, Store, Unlink, EVICT_AHEAD};
use crate::{
    index::{Found, HashParts, Location, Slot, LARGE_SEGMENT},
    item::Header,
    segment::{Ctl, Queue, Victim, NONE},
    types::{StoreError, WhenFull},
};

impl Store {
    /// Frees memory for a write that found none: reclaims dead segments, or (unless the
    /// store refuses writes when full) evicts, then waits for the grace period. It evicts
    /// ahead, keeping up to `EVICT_AHEAD` segments in their grace period, so that the next
    /// write usually finds one already free instead of waiting for every pinned thread
    /// (measured: 1-3 s write stalls with 6 threads on 2 cores without it).
    pub(super) fn make_room(&self) -> Result<(), StoreError> {
        let frees_before = self.recycled.frees.load(Ordering::Acquire);
        if self.maintain(2) == 0 {
            if self.config.when_full == WhenFull::Refuse {
                return Err(StoreError::NoSpace);
            }
            // At most EVICT_AHEAD victims per call, and none once memory is back: when the
            // epoch advances quickly, a count of segments in grace alone never fills up, and
            // the loop emptied the store (seen in tests).
            let mut evicted = false;
            for _ in 0..EVICT_AHEAD {
                let memory_back = self.recycled.frees.load(Ordering::Acquire) != frees_before
                    || self.recycled.freed_count.load(Ordering::Acquire) > 0;
                if memory_back || self.recycled.in_grace.load(Ordering::Acquire) >= EVICT_AHEAD {
                    break;
                }
                let Some(victim) = self.pick_victim() else { break };
                self.clear(victim, Clear::Evict);
                evicted = true;
            }
            let waiting = self.recycled.in_grace.load(Ordering::Acquire) > 0
                || self.recycled.freed_count.load(Ordering::Acquire) > 0;
            if !evicted && !waiting {
                return Err(StoreError::NoSpace);
            }
        }
        self.wait_for_frees(frees_before);
        Ok(())
    }

    /// The next eviction victim; when the queues are empty because every segment is still
    /// active (a tiny store), the active segments are sealed so that they can be evicted.
    fn pick_victim(&self) -> Option<Victim> {
        let mut ctl = self.ctl.lock();
        if let Some(victim) = ctl.pick_victim() {
            return Some(victim);
        }
        self.seal_actives(&mut ctl);
        ctl.pick_victim()
    }

    pub(super) fn seal_actives(&self, ctl: &mut Ctl) {
        for active in self.active.iter() {
            let id = active.swap(NONE, Ordering::AcqRel);
            if id != NONE {
                let seg = &self.headers[id as usize];
                seg.seal();
                ctl.push(seg.queue(), Victim::Segment(id));
            }
        }
    }

    /// Waits until memory comes back (segments past their grace, large items freed).
    fn wait_for_frees(&self, frees_before: usize) {
        for spin in 0..100_000 {
            if self.recycled.frees.load(Ordering::Acquire) != frees_before
                || self.recycled.freed_count.load(Ordering::Acquire) > 0
            {
                return;
            }
            epoch::pin().flush();
            if spin > 16 {
                std::thread::yield_now();
            }
        }
    }

    /// Empties a segment or large item taken off its queue: every index entry still pointing
    /// into it is removed (or, for read items under eviction, copied forward), then the
    /// memory goes back to the free list after the grace period.
    pub(super) fn clear(&self, victim: Victim, mode: Clear) {
        match victim {
            Victim::Segment(id) => self.clear_segment(id, mode),
            Victim::Large(slot, seq) => self.clear_large(slot, seq, mode),
        }
    }

    fn clear_segment(&self, id: u32, mode: Clear) {
        let seg = &self.headers[id as usize];
        seg.wait_writers();
        let end = seg.used_end.load(Ordering::Acquire) as usize;
        let from_small = seg.queue() == Queue::Small;
        let guard = epoch::pin();
        let mut offset = 0;
        while offset < end {
            let location = Location { segment: id, offset: offset as u32 };
            let r = self.resolve(location, &guard);
            offset += r.bytes.len();
            self.clear_item(location, &r, mode, from_small, &guard);
        }
        let recycled = Arc::clone(&self.recycled);
        recycled.in_grace.fetch_add(1, Ordering::AcqRel);
        guard.defer(move || recycled.push_freed(id));
        guard.flush();
    }

    fn clear_large(&self, slot: u32, seq: u64, mode: Clear) {
        let guard = epoch::pin();
        let Some(large) = self.recycled.large(slot, &guard) else { return };
        if large.seq != seq {
            return; // the item was replaced or deleted; its slot holds another now
        }
        let location = Location { segment: LARGE_SEGMENT, offset: slot };
        let r = self.resolve(location, &guard);
        self.clear_item(location, &r, mode, false, &guard);
    }

    /// One item of a victim: drop it, or keep it if it was read since it was (re)written.
    fn clear_item(
        &self,
        location: Location,
        r: &Resolved<'_>,
        mode: Clear,
        from_small: bool,
        guard: &Guard,
    ) {
        let key = r.key();
        let hash = HashParts::of(key);
        let mut stats = self.stripe(hash).0.lock();
        let Some(found) = self.index.find(hash, guard, |slot| slot.location() == location) else {
            return; // overwritten or deleted since: garbage
        };
        let now_ms = self.config.clock.now_ms();
        let flush_gen = self.flush_gen.load(Ordering::Acquire);
        let freq = found.value.freq();
        if !r.visible(now_ms, flush_gen) {
            self.index.remove(hash, &found);
            count_unlink(&mut stats, r, freq, Unlink::Dead, flush_gen);
            self.retire(location, guard);
            return;
        }
        if mode == Clear::Evict
            && freq > 0
            && self.keep(location, r, &found, hash, from_small, guard)
        {
            stats.evict_kept += 1;
            return;
        }
        self.index.remove(hash, &found);
        count_unlink(&mut stats, r, freq, Unlink::Evicted, flush_gen);
        self.retire(location, guard);
        drop(stats);
        if let Some(observer) = &self.config.on_evict {
            observer(key);
        }
    }

    /// S3-FIFO's second chance: an item read while on probation moves to main with its
    /// count reset; one in main is reinserted with its count lowered. Large items are not
    /// moved, only queued again.
    fn keep(
        &self,
        location: Location,
        r: &Resolved<'_>,
        found: &Found<'_>,
        hash: HashParts,
        from_small: bool,
        guard: &Guard,
    ) -> bool {
        let freq = if from_small { 0 } else { found.value.freq() - 1 };
        if location.segment == LARGE_SEGMENT {
            let Some(large) = self.recycled.large(location.offset, guard) else { return false };
            let slot = found.value.with_freq(freq);
            if !self.index.replace(hash, found, slot, guard) {
                return false;
            }
            self.ctl.lock().push(Queue::Main, Victim::Large(location.offset, large.seq));
            return true;
        }
        let header = Header { cas: Some(r.cas), ..r.header };
        let class = ttl_class(r.header.expiry, self.config.clock.now_ms());
        let Some((moved, _)) =
            self.append(Queue::Main, class, &header, r.key(), &[r.value()], true)
        else {
            return false;
        };
        self.index.replace(hash, found, Slot::new(hash.tag, moved, freq), guard)
    }

    /// Takes up to `max` queued segments (or large items) whose items are all dead.
    pub(super) fn take_dead(&self, now_ms: u64, max: usize) -> Vec<Victim> {
        let flush_gen = self.flush_gen.load(Ordering::Acquire);
        let guard = epoch::pin();
        let is_dead = |victim: &Victim| match *victim {
            Victim::Segment(id) => {
                let seg = &self.headers[id as usize];
                seg.flush_gen.load(Ordering::Acquire) != flush_gen
                    || seg.max_expiry_ms.load(Ordering::Acquire) <= now_ms
            }
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
}
