//! Making room: a write that found no memory gets it here, from free memory, dead segments,
//! or victims in S3-FIFO order (whole segments and large items), after their grace period.

use std::sync::{atomic::Ordering, Arc};

use crossbeam_epoch::{self as epoch, Guard};

use super::{
    count_unlink,
    protect::{EvictPass, NextPass, Protection},
    ttl_class, ttl_class_ms, Clear, Resolved, Store, Unlink, Writer, EVICT_AHEAD,
};
use crate::{
    bytes,
    index::{Found, HashParts, Location, Slot, LARGE_SEGMENT},
    item::Header,
    segment::{Queue, Victim},
    types::{StoreError, WhenFull},
};

impl Store {
    /// Gets a write the memory it asked for (`need`) into `room`, where no other writer can
    /// take it: first what is free, then dead segments, then (unless the store refuses writes
    /// when full) victims in S3-FIFO order until what they free covers the need, and waits
    /// for their grace period. Victims that free nothing (an item kept for a second chance,
    /// a queue entry of a large item replaced since) do not count towards the need. It also
    /// evicts one segment ahead while fewer than `EVICT_AHEAD` are in their grace period, so
    /// that the next write usually finds one free instead of waiting for every pinned thread
    /// (measured: 1-3 s write stalls with 6 threads on 2 cores without it).
    ///
    /// Fails only when nothing is left to evict and nothing is on its way back, or with
    /// `WhenFull::Refuse` when nothing dead can be reclaimed.
    pub(super) fn make_room(&self, need: Need, room: &mut Room) -> Result<(), StoreError> {
        self.make_room_sparing(need, room, None)
    }

    /// [`Store::make_room`] for the memory of the owner of value hash `spared` (if any),
    /// which is not evicted for it while anything else can be (`owners.rs`).
    pub(super) fn make_room_sparing(
        &self,
        need: Need,
        room: &mut Room,
        spared: Option<u64>,
    ) -> Result<(), StoreError> {
        let need_bytes = match need {
            Need::Segment => self.seg_size,
            Need::Bytes(bytes) => bytes,
        };
        // A bound that only a bug reaches: every round consumes a queue entry or waits for
        // memory already on its way back, and kept items lose a count each time.
        let rounds_max = self.eviction_rounds_max();
        // Set once compaction went a whole pass over the queues without freeing anything and
        // nothing is on its way back: eviction takes over for the rest of this call.
        let mut compaction_failed = false;
        let mut pass = EvictPass { spared_owner: spared, ..self.evict_pass() };
        // Rounds whose victim's kept items found no room, with nothing on its way back.
        let mut idle_stalls = 0;
        for _ in 0..rounds_max {
            let frees_before = self.recycled.frees.load(Ordering::Acquire);
            if self.claim(need, room) {
                return Ok(());
            }
            let mut taken = self.reclaim_dead();
            if taken.coming == 0 && self.recycled.drop_spares(need_bytes.saturating_sub(room.bytes))
            {
                continue; // spare large-item mappings go before anything live is evicted
            }
            if self.when_full() != WhenFull::Refuse {
                // Memory in its grace period comes back without evicting more: a large item
                // rewritten again and again (an APPEND loop, a growing Redis collection)
                // would otherwise evict itself, its older copies freeing nothing yet.
                let graced = self.recycled.in_grace_bytes.load(Ordering::Acquire);
                let wanted = need_bytes.saturating_sub(room.bytes).saturating_sub(graced);
                let evicted =
                    self.evict_victims(taken.coming, wanted, &mut compaction_failed, &mut pass);
                (taken.coming, taken.victims_left) = (evicted.coming, evicted.victims_left);
                taken.freed_now += evicted.freed_now;
                if evicted.stalled && taken.coming == 0 {
                    // What will make room for the copies is in another thread's hands; with
                    // nothing on its way and nobody clearing, only protected items are left.
                    if self.memory_on_its_way() || self.clearing.load(Ordering::Acquire) > 0 {
                        self.wait_for_frees(frees_before);
                    } else if idle_stalls > 2 {
                        return Err(StoreError::NoSpace);
                    }
                    idle_stalls += 1;
                    continue;
                }
            }
            let evictable = taken.victims_left && self.when_full() != WhenFull::Refuse;
            if taken.coming == 0 && !self.memory_on_its_way() {
                if !evictable {
                    return Err(StoreError::NoSpace);
                }
                continue; // what was on its way went to another writer: evict again
            }
            if taken.coming > 0 && taken.freed_now == taken.coming {
                continue; // all of it is back already
            }
            self.wait_for_frees(frees_before);
        }
        Err(StoreError::NoSpace)
    }

    /// Reclaims up to two dead victims: what comes back, and of that what owners gave back
    /// at once (no grace period to wait for).
    fn reclaim_dead(&self) -> Taken {
        let now_ms = self.config.clock.now_ms();
        let mut taken = Taken { coming: 0, freed_now: 0, victims_left: true, stalled: false };
        for victim in self.take_dead(now_ms, 2) {
            let bytes = self.clear(victim, Clear::Reclaim).unwrap_or(0);
            taken.coming += bytes;
            taken.freed_now += if matches!(victim, Victim::Owner(..)) { bytes } else { 0 };
        }
        taken
    }

    /// Takes victims until what comes back (`coming`, counting what is on its way already)
    /// covers `wanted`, and one more while fewer than `EVICT_AHEAD` are in their grace.
    /// Under a protection (`protect.rs`), a pass over every queued entry that took nothing
    /// ends it: the queues count as empty.
    fn evict_victims(
        &self,
        mut coming: usize,
        wanted: usize,
        compaction_failed: &mut bool,
        pass: &mut EvictPass,
    ) -> Taken {
        let no_victims =
            |coming, freed_now| Taken { coming, freed_now, victims_left: false, stalled: false };
        if self.known_exhausted(pass) {
            return no_victims(coming, 0);
        }
        let graced = self.recycled.in_grace_bytes.load(Ordering::Acquire);
        let mut ahead = self.recycled.in_grace.load(Ordering::Acquire) < EVICT_AHEAD
            && graced < EVICT_AHEAD * self.seg_size;
        let mut freed_now = 0;
        // Compaction queues again what it cannot free (full segments, large items, owners),
        // and so does eviction what it must keep: a pass over every queued entry that freed
        // nothing ends it.
        let mut entries = self.lock_ctl().queued();
        let mut fruitless = 0;
        let mut held_last = false;
        while coming < wanted || std::mem::take(&mut ahead) {
            // A victim's kept items are copied into a free segment; without one they would
            // be evicted with the rest. Wait for memory in its grace period rather than drop
            // them (seen under load: a hot key lost when the second victim of a call found
            // the reserve used by the first).
            if (coming > 0 || self.memory_on_its_way()) && !self.room_for_copies() {
                break;
            }
            // After a victim that had to be kept, the small queue's turn.
            let first = if held_last { Queue::Small } else { Queue::Main };
            let Some(victim) = self.pick_victim_preferring(first) else {
                return no_victims(coming, freed_now);
            };
            let compact = !*compaction_failed && self.compacting();
            let mode = if compact { Clear::Compact } else { Clear::Evict };
            let Some(freed) = self.clear_victim(victim, mode, pass) else {
                // A kept item found no room for its copy: the segment went back to the head
                // of its queue; wait for the memory on its way back.
                return Taken { coming, freed_now, victims_left: true, stalled: true };
            };
            held_last = freed.held;
            let progress = freed.bytes > 0 || (!compact && !freed.held);
            fruitless = if progress { 0 } else { fruitless + 1 };
            if fruitless > entries {
                if self.memory_on_its_way() {
                    break; // wait for it, then compact (or evict) again
                }
                fruitless = 0;
                if compact {
                    *compaction_failed = true;
                } else if pass.spared_owner.take().is_some() {
                    // Nothing else goes: the spared owner does after all, as Redis evicts
                    // the only key left before a write to it.
                } else if self.next_pass(pass, &mut entries) == NextPass::Exhausted {
                    return no_victims(coming, freed_now);
                }
            }
            coming += freed.bytes;
            freed_now += if matches!(victim, Victim::Owner(..)) { freed.bytes } else { 0 };
        }
        Taken { coming, freed_now, victims_left: true, stalled: false }
    }

    /// Whether memory is in its grace period or freed and not yet on a free list. A replaced
    /// index table's charge counts: without it, a never-evict write was refused while the
    /// charge of the table its own growth replaced was about to come back.
    pub(super) fn memory_on_its_way(&self) -> bool {
        self.recycled.in_grace.load(Ordering::Acquire) > 0
            || self.recycled.freed_count.load(Ordering::Acquire) > 0
            || self.recycled.index_retiring_bytes.load(Ordering::Acquire) > 0
    }

    /// Whether eviction could open a segment for the items it keeps.
    pub(super) fn room_for_copies(&self) -> bool {
        let mut ctl = self.lock_ctl();
        self.take_freed(&mut ctl);
        !ctl.free_resident.is_empty()
            || (!ctl.free_unbacked.is_empty()
                && self.recycled.used_bytes.load(Ordering::Acquire) + self.seg_size
                    <= self.recycled.limit())
    }

    /// Moves free memory into `room` until it covers `need`; true when it does.
    pub(super) fn claim(&self, need: Need, room: &mut Room) -> bool {
        match need {
            Need::Segment => {
                if room.segment.is_none() {
                    let mut ctl = self.lock_ctl();
                    room.segment = self.take_segment(&mut ctl, self.writer_reserve());
                }
                room.segment.is_some()
            }
            Need::Bytes(bytes) => {
                if room.bytes >= bytes || self.try_charge_leaving_reserve(bytes - room.bytes) {
                    room.bytes = room.bytes.max(bytes);
                    return true;
                }
                // Free segments' charge moves to the room as their pages go back.
                let mut ctl = self.lock_ctl();
                while room.bytes < bytes {
                    let Some(unbacked) = self.unback_free_segment(&mut ctl) else {
                        return false; // the reserve is for eviction's copies
                    };
                    room.bytes += unbacked;
                }
                true
            }
        }
    }

    /// Returns what a write claimed and did not use.
    pub(super) fn give_back(&self, room: Room) {
        if let Some(id) = room.segment {
            self.give_back_segment(&mut self.lock_ctl(), id);
        }
        if room.bytes > 0 {
            self.recycled.uncharge(room.bytes);
        }
    }

    /// The next eviction victim; when the queues are empty because every segment is still
    /// active (a tiny store), the active segments are sealed so that they can be evicted.
    pub(super) fn pick_victim(&self) -> Option<Victim> {
        self.pick_victim_preferring(Queue::Main)
    }

    /// [`Store::pick_victim`], the small queue first with `Queue::Small` (see
    /// `Ctl::pick_victim_preferring`).
    pub(super) fn pick_victim_preferring(&self, first: Queue) -> Option<Victim> {
        let mut ctl = self.lock_ctl();
        if let Some(victim) = ctl.pick_victim_preferring(first) {
            return Some(victim);
        }
        self.seal_actives(&mut ctl);
        ctl.pick_victim_preferring(first)
    }

    /// Waits until memory comes back (segments past their grace, large items freed). Not
    /// when this thread holds a read pin itself: the grace period cannot end while it does,
    /// so waiting would only spin (found by fuzzing: SORT ... STORE made room under its
    /// reader and spun for half a minute, holding the gate). A pin of this thread's loans (a
    /// write behind large gets in one batch) is let go first, their values copied
    /// (`loans::unpin`), so that such a write waits as any other does.
    pub(super) fn wait_for_frees(&self, frees_before: usize) {
        if epoch::is_pinned() {
            crate::loans::unpin();
            if epoch::is_pinned() {
                return;
            }
        }
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
    /// into it is removed (or, for kept items, copied forward), then the memory goes back to
    /// the free list after the grace period. Returns the bytes on their way back (0 when
    /// nothing was freed: a large item kept, or replaced since, a segment compaction left
    /// as it was), or None when a kept item found no room for its copy (`clear_segment`).
    pub(super) fn clear(&self, victim: Victim, mode: Clear) -> Option<usize> {
        let mut pass = self.evict_pass();
        self.clear_victim(victim, mode, &mut pass).map(|freed| freed.bytes)
    }

    /// [`Store::clear`] within a pass of eviction, which says what must be kept.
    pub(super) fn clear_victim(
        &self,
        victim: Victim,
        mode: Clear,
        pass: &mut EvictPass,
    ) -> Option<Freed> {
        match victim {
            Victim::Segment(id) => self.clear_segment(id, mode, pass),
            Victim::Large(slot, seq) => Some(self.clear_large(slot, seq, mode, &pass.protection)),
            Victim::Owner(key_hash, value_hash) => {
                let spared = pass.spared_owner == Some(value_hash);
                Some(self.clear_owner(key_hash, value_hash, mode, &pass.protection, spared))
            }
        }
    }

    pub(super) fn clear_segment(
        &self,
        id: u32,
        mode: Clear,
        pass: &mut EvictPass,
    ) -> Option<Freed> {
        let seg = self.segments.header(id);
        seg.wait_writers();
        if mode == Clear::Reclaim && !self.segment_dead(id, self.config.clock.now_ms()) {
            // A writer that reserved space before the seal stored a live item after all.
            self.lock_ctl().push_segment(id, seg);
            return Some(Freed::NOTHING);
        }
        let end = seg.used_end.load(Ordering::Acquire) as usize;
        let queue = seg.queue();
        let guard = epoch::pin();
        // Compaction visits only the items its lock-free walk found live.
        let live = (mode == Clear::Compact).then(|| self.live_items(id, end, &guard));
        if live.as_ref().is_some_and(|live| !self.worth_compacting(live.bytes)) {
            // Copying it would free little: queued again as it is, which is what copying
            // every item forward would have made of it.
            self.lock_ctl().push_segment(id, seg);
            return Some(Freed::NOTHING);
        }
        if mode == Clear::Evict && pass.protection.restricts() {
            let freeable = self.freeable_bytes(id, end, &pass.protection, &guard);
            if freeable < pass.min_free_bytes.max(1) {
                // Mostly (or only) items that must stay: queued again as it is.
                pass.partial_seen |= freeable > 0;
                self.lock_ctl().push_segment(id, seg);
                return Some(Freed::HELD);
            }
        }
        let _clearing = self.clearing();
        let live = live.map(|live| live.offsets);
        let mut next = 0;
        while let Some(offset) = visit_at(live.as_deref(), next, end) {
            let location = Location { segment: id, offset };
            let r = self.resolve(location, &guard);
            next += if live.is_some() { 1 } else { bytes::STAMP_BYTES + r.bytes.len() };
            let cleared = self.clear_item(location, &r, mode, queue, &pass.protection, &guard);
            if cleared == Cleared::NoRoom {
                // Items before this one are copied or gone (their bytes are garbage now);
                // the rest stay, and the segment is taken first again once memory is back.
                if self.memory_on_its_way() || self.others_clearing() {
                    self.lock_ctl().push_segment_front(id, seg);
                    return None;
                }
                // A protected item, with nothing on its way: victims that need no copies
                // go first, this one waits at the tail.
                self.lock_ctl().push_segment(id, seg);
                return Some(Freed::HELD);
            }
        }
        // What comes back is what it was charged: the whole segment, or less if it was
        // sealed before it filled (`Store::charge_ahead`; `take_freed` unbacks it).
        let charged = seg.charged_bytes();
        let recycled = Arc::clone(&self.recycled);
        recycled.enter_grace(charged);
        guard.defer(move || recycled.push_freed(id, charged));
        guard.flush();
        Some(Freed { bytes: charged, held: false })
    }

    pub(super) fn clear_large(
        &self,
        slot: u32,
        seq: u64,
        mode: Clear,
        protection: &Protection,
    ) -> Freed {
        let guard = epoch::pin();
        let Some(large) = self.recycled.large(slot, &guard) else { return Freed::NOTHING };
        if large.seq != seq {
            return Freed::NOTHING; // the item was replaced or deleted; its slot holds another
        }
        let location = Location { segment: LARGE_SEGMENT, offset: slot };
        let r = self.resolve(location, &guard);
        // Large items are queued in main only.
        let cleared = self.clear_item(location, &r, mode, Queue::Main, protection, &guard);
        guard.flush();
        match cleared {
            Cleared::Unlinked => Freed { bytes: large.region.len(), held: false },
            Cleared::Protected => Freed::HELD,
            _ => Freed::NOTHING,
        }
    }

    /// One item of a victim: drop it, or keep it if it was read since it was (re)written,
    /// if it is an owner, if `protection` says so, or if the store is compacting.
    pub(super) fn clear_item(
        &self,
        location: Location,
        r: &Resolved<'_>,
        mode: Clear,
        queue: Queue,
        protection: &Protection,
        guard: &Guard,
    ) -> Cleared {
        let key = r.key();
        let hash = HashParts::of(key);
        let mut stats = self.lock_stripe(hash);
        let Some(found) = self.index.find(hash, guard, |slot| slot.location() == location) else {
            return Cleared::Garbage; // overwritten or deleted since
        };
        let now_ms = self.config.clock.now_ms();
        let flush_gen = self.flush_gen.load(Ordering::Acquire);
        let freq = found.value.freq();
        let through_secs = self.flushed_through_secs.load(Ordering::Acquire);
        if !r.visible(now_ms, flush_gen, through_secs) {
            self.index.remove(hash, &found);
            count_unlink(&mut stats, r, freq, Unlink::Dead, flush_gen);
            self.retire_item(location, r, guard);
            self.observe_expiry(r, flush_gen);
            return Cleared::Unlinked;
        }
        let protected = mode == Clear::Evict && protection.protects(r);
        // An owner goes by its own queue entry (`owners.rs`), not with its segment.
        let keep = match mode {
            Clear::Reclaim => false,
            Clear::Compact => true,
            Clear::Evict => freq > 0 || r.is_owner() || protected,
        };
        if keep {
            if self.keep(location, r, &found, hash, queue, mode, guard) {
                if mode == Clear::Compact {
                    stats.compacted += 1;
                } else if !r.is_owner() {
                    stats.evict_kept += 1;
                }
                return if protected { Cleared::Protected } else { Cleared::Kept };
            }
            // A segment item's copy found no room. Memory on its way back (or a segment
            // another thread is clearing) will make some: the item stays where it is for
            // now. Without any, it is evicted after all: nothing else would make room,
            // unless it is protected, which waits (or refuses the write) instead.
            // Compaction evicts nothing protected either (it took a never-evict item that
            // found no room for its copy when nothing was on its way back).
            if protected
                || mode == Clear::Compact && protection.protects(r)
                || location.segment != LARGE_SEGMENT
                    && (self.memory_on_its_way() || self.others_clearing())
            {
                return Cleared::NoRoom;
            }
        }
        self.index.remove(hash, &found);
        count_unlink(&mut stats, r, freq, Unlink::Evicted, flush_gen);
        self.retire_item(location, r, guard);
        drop(stats);
        self.observe_eviction(r, freq, now_ms);
        Cleared::Unlinked
    }

    /// Keeps a live item of a victim. S3-FIFO's second chance: an item read while on
    /// probation moves to main with its count reset; one in main is reinserted with its
    /// count lowered. Compaction keeps its queue and count, and an owner keeps its count
    /// (it goes by its own entry). Large items are not moved, only queued again. False when
    /// it could not be kept (no room for the copy, or its entry moved).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn keep(
        &self,
        location: Location,
        r: &Resolved<'_>,
        found: &Found<'_>,
        hash: HashParts,
        queue: Queue,
        mode: Clear,
        guard: &Guard,
    ) -> bool {
        let count = found.value.freq();
        let (queue, freq) = match (mode, queue) {
            _ if r.is_owner() => (Queue::Main, count),
            (Clear::Compact, _) => (queue, count),
            (_, Queue::Small) => (Queue::Main, 0),
            (_, Queue::Main) => (Queue::Main, count.saturating_sub(1)),
        };
        if location.segment == LARGE_SEGMENT {
            let Some(large) = self.recycled.large(location.offset, guard) else { return false };
            let slot = found.value.with_freq(freq);
            if !self.index.replace(hash, found, slot, guard) {
                return false;
            }
            let class = ttl_class_ms(large.expiry_ms, self.config.clock.now_ms());
            self.lock_ctl().push(Queue::Main, class, Victim::Large(location.offset, large.seq));
            return true;
        }
        self.copy_forward(r, found, hash, queue, freq, guard)
    }

    /// Copies a segment item into `queue`'s active segment, with access count `freq`; false
    /// when there is no room for it.
    fn copy_forward(
        &self,
        r: &Resolved<'_>,
        found: &Found<'_>,
        hash: HashParts,
        queue: Queue,
        freq: u8,
        guard: &Guard,
    ) -> bool {
        let header = Header { cas: Some(r.cas), ..r.header };
        let class = ttl_class(r.header.expiry, self.config.clock.now_ms());
        let new = (r.stamp.load(), &header, r.key(), &[r.value()][..]);
        let Some((moved, _)) = self.append(queue, class, new, Writer::Eviction) else {
            return false;
        };
        self.index.replace(hash, found, Slot::new(hash.tag, moved, freq), guard)
    }
}

/// What a round of `evict_victims` took.
struct Taken {
    /// Bytes on their way back, those counted before the round included.
    coming: usize,
    /// Of those, bytes owners gave back at once.
    freed_now: usize,
    /// False when the queues ran out.
    victims_left: bool,
    /// A kept item's copy found no room (`clear_segment`).
    stalled: bool,
}

/// What clearing one item of a victim did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cleared {
    /// Nothing to do: the index no longer points at it.
    Garbage,
    /// It left the index (evicted, or dead).
    Unlinked,
    /// Copied forward, or queued again (a large item).
    Kept,
    /// Kept because it must not be evicted (`protect.rs`).
    Protected,
    /// To be kept, but its copy found no room: the clear stops here.
    NoRoom,
}

/// What clearing one victim gave back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Freed {
    /// Bytes on their way back.
    pub(super) bytes: usize,
    /// Queued again unchanged, because what it holds must be kept (`protect.rs`): no
    /// progress towards room, unlike an item kept for a second chance, which loses a count.
    pub(super) held: bool,
}

impl Freed {
    pub(super) const NOTHING: Freed = Freed { bytes: 0, held: false };
    pub(super) const HELD: Freed = Freed { bytes: 0, held: true };
}

/// What a write that found no memory asks `make_room` for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Need {
    /// A free segment, to roll its active segment onto.
    Segment,
    /// Budget for a large item's own mapping.
    Bytes(usize),
}

/// Memory claimed for one write across its attempts, so that what eviction frees for it
/// goes to it and not to whichever writer looks first. What the write does not use is
/// given back (`give_back`).
#[derive(Debug, Default)]
pub(super) struct Room {
    /// A free segment, charged to the budget.
    pub(super) segment: Option<u32>,
    /// Bytes charged to the budget.
    pub(super) bytes: usize,
}

/// The offset of the next item a segment's clear visits, from `next`: a place in `live`
/// (the items a compaction's walk found live), or the offset itself when every item is.
fn visit_at(live: Option<&[u32]>, next: usize, end: usize) -> Option<u32> {
    match live {
        Some(live) => live.get(next).copied(),
        None => (next < end).then_some(next as u32),
    }
}
