//! The write path's memory: appending items to active segments, rolling to a new segment,
//! large items in mappings of their own, and the one memory budget.

use std::sync::{atomic::Ordering, Arc};

use crossbeam_epoch::Guard;

use super::{
    shard, Need, OpError, Room, Store, Writer, CHARGE_AHEAD, CHARGE_AHEAD_SHARE, CHARGE_MARGIN,
    CHARGE_STEP_MIN, PAGE, RESERVE_SEGMENTS, TTL_CLASSES,
};
use crate::{
    bytes,
    index::{self, Location, LARGE_SEGMENT},
    item::Header,
    mem::Region,
    segment::{self, Ctl, Large, Queue, Victim, NONE, SEALED},
    shared_writes::{self, Site},
    types::*,
};

/// An item to write: its access stamp, header, key and value (in parts).
pub(super) type NewBytes<'a> = (u16, &'a Header, &'a [u8], &'a [&'a [u8]]);

impl Store {
    /// Appends an item to the active segment of (queue, class); None if no segment can be
    /// had without evicting.
    pub(super) fn append(
        &self,
        queue: Queue,
        class: usize,
        new: NewBytes<'_>,
        writer: Writer<'_>,
    ) -> Option<(Location, u64)> {
        self.append_sized(queue, class, new, bytes::stored_len(new.1), writer)
    }

    /// [`Store::append`] for a caller that has the item's stored length at hand (a client
    /// write, which compared it with the large-item threshold): the header is measured once.
    pub(super) fn append_sized(
        &self,
        queue: Queue,
        class: usize,
        new: NewBytes<'_>,
        len: usize,
        mut writer: Writer<'_>,
    ) -> Option<(Location, u64)> {
        debug_assert_eq!(len, bytes::stored_len(new.1));
        debug_assert!(len < self.large_min || matches!(writer, Writer::Eviction));
        let active_index = self.active_index(queue, class);
        let active = &self.active[active_index];
        let client = matches!(writer, Writer::Client(_));
        for _ in 0..8 {
            let id = active.load(Ordering::Acquire);
            if id != NONE {
                if let Some(done) = self.try_append(id, new, len, client) {
                    return Some(done);
                }
            }
            if !self.roll(queue, class, active_index, id, writer.reborrow()) {
                return self.append_to_other_shard(queue, class, new, len, &writer);
            }
        }
        None
    }

    /// Eviction's copy when its own shard's segment is full and no free one is left: the
    /// other shards' main-queue segments of its class, which only eviction writes and which
    /// are charged whole. Without this a copy could find no room while another shard's
    /// segment had plenty, and every victim holding a never-evict item was then kept, until
    /// a pass over all of them refused a write with most of the store evictable (seen: 1 run
    /// in 10-80 of `marked_items_survive_concurrent_eviction`).
    fn append_to_other_shard(
        &self,
        queue: Queue,
        class: usize,
        new: NewBytes<'_>,
        len: usize,
        writer: &Writer<'_>,
    ) -> Option<(Location, u64)> {
        if !matches!(writer, Writer::Eviction) || queue != Queue::Main {
            return None;
        }
        let first = (queue as usize * TTL_CLASSES + class) * self.write_shards;
        (first..first + self.write_shards).find_map(|index| {
            let id = self.active[index].load(Ordering::Acquire);
            (id != NONE).then(|| self.try_append(id, new, len, false)).flatten()
        })
    }

    pub(super) fn try_append(
        &self,
        id: u32,
        new: NewBytes<'_>,
        len: usize,
        client: bool,
    ) -> Option<(Location, u64)> {
        let (stamp, header, key, value) = new;
        let seg = self.segments.header(id);
        self.charge_ahead(id, len, client);
        let reservation = self.segments.reserve(id, len)?;
        reservation.write(stamp, header, key, value);
        let offset = reservation.offset();
        let expiry_ms = match header.expiry {
            Expiry::Never => u64::MAX,
            Expiry::AtMs(at) => at,
        };
        if seg.max_expiry_ms.load(Ordering::Relaxed) < expiry_ms {
            shared_writes::note(Site::SegMaxExpiry);
            seg.max_expiry_ms.fetch_max(expiry_ms, Ordering::AcqRel);
        }
        // Before the index points at the item: a sweep that finds it there sees this.
        if seg.min_expiry_ms.load(Ordering::Relaxed) > expiry_ms {
            shared_writes::note(Site::SegMaxExpiry);
            seg.min_expiry_ms.fetch_min(expiry_ms, Ordering::AcqRel);
        }
        let cas = header
            .cas
            .unwrap_or((seg.seq.load(Ordering::Acquire) << index::OFFSET_BITS) | u64::from(offset));
        // Dropping the reservation ends the write: the segment may be cleared from now on.
        drop(reservation);
        Some((Location { segment: id, offset }, cas))
    }

    /// Charges a segment that is being filled for the next `len` bytes and a little more,
    /// unless its charge covers them and `len + CHARGE_MARGIN` more already: a segment taken
    /// unbacked is charged in pages as it fills, not whole when taken (a 256 KiB segment a
    /// tenth written was 18.5 B per item at 1% of a 64 MiB store). When the budget has no
    /// room left, the reservation fails past the charge and the segment is sealed there, as
    /// if full; what it was not charged for was never touched. A client's charge leaves
    /// eviction's reserve free, as taking a segment does; eviction's copies may use it.
    fn charge_ahead(&self, id: u32, len: usize, client: bool) {
        let seg = self.segments.header(id);
        let word = seg.write_offset.load(Ordering::Acquire);
        let (offset, room) = segment::reserved_and_room(word);
        let (end, room) = (offset as usize + len, room as usize);
        // The margin: room for another writer's item of this size reserved at the same time
        // (two writers sharing a segment), so that they rarely pass the charge at once.
        let margin = len + CHARGE_MARGIN;
        if word & SEALED != 0 || room >= self.seg_size || end + margin <= room {
            return;
        }
        // Ahead by a quarter of what is written, so that a full segment is charged in about
        // 16 steps (each a write to the shared budget), but by no more than a small share
        // of the memory in use: while a store is small, what is charged ahead of the items
        // is most of its metadata (a quarter was 8 B per item at 0.1% of a 64 MiB store).
        // Eviction's copies take the whole segment at once, as before segments were charged
        // as they fill: kept items must not meet a segment sealed short of its end.
        // Charged in cache lines, not pages: a page's unwritten rest was 0-4.4 B per item
        // at 0.1% of a 48 MiB store. The step is at least `CHARGE_STEP_MIN`, so that a small
        // store writes the shared budget about once per 512 B of items, not per item.
        let target = if client {
            let used = self.recycled.used_bytes.load(Ordering::Acquire);
            end + margin + (end / 4).min(used / CHARGE_AHEAD_SHARE).max(CHARGE_STEP_MIN)
        } else {
            self.seg_size
        };
        let target = target.min(self.seg_size);
        let (charged, surplus) = seg.extend_charge(target, |bytes| {
            if client {
                self.try_charge_leaving_reserve(bytes)
            } else {
                self.recycled.try_charge(bytes, 0)
            }
        });
        if surplus > 0 {
            self.recycled.uncharge(surplus);
        }
        if charged {
            // The pages just charged for, made resident in one call rather than a fault per
            // page as the writes reach them; the page holding `room` was made resident by the
            // charge before (or faults in as written), so only later pages are asked for,
            // and a step within one page makes no call.
            self.segments.populate(id, room.next_multiple_of(PAGE).min(target), target);
        }
    }

    pub(super) fn active_index(&self, queue: Queue, class: usize) -> usize {
        (queue as usize * TTL_CLASSES + class) * self.write_shards + shard() % self.write_shards
    }

    /// Seals the full active segment `seen` and opens a new one. False if none is free.
    pub(super) fn roll(
        &self,
        queue: Queue,
        class: usize,
        active_index: usize,
        seen: u32,
        writer: Writer<'_>,
    ) -> bool {
        let mut ctl = self.lock_ctl();
        let active = &self.active[active_index];
        if active.load(Ordering::Acquire) != seen {
            return true; // another writer rolled it already
        }
        if seen != NONE {
            let seg = self.segments.header(seen);
            seg.seal();
            ctl.push_segment(seen, seg);
            active.store(NONE, Ordering::Release);
        }
        let id = match writer {
            Writer::Client(room) => room.segment.take().or_else(|| {
                let reserve = self.writer_reserve();
                let id = self.take_segment(&mut ctl, reserve);
                self.note_roll_for_reuse(&ctl, reserve);
                id
            }),
            Writer::Eviction => self.take_segment(&mut ctl, 0),
        };
        let Some(id) = id else { return false };
        shared_writes::note(Site::Seq);
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let flush_gen = self.flush_gen.load(Ordering::Acquire);
        self.segments.header(id).open(seq, flush_gen, queue, class);
        active.store(id, Ordering::Release);
        true
    }

    /// Free segments a client write leaves for eviction's copies.
    pub(super) fn writer_reserve(&self) -> usize {
        if self.when_full() == WhenFull::Refuse {
            0
        } else {
            RESERVE_SEGMENTS
        }
    }

    /// A free segment, leaving `reserve` of them.
    pub(super) fn take_segment(&self, ctl: &mut Ctl, reserve: usize) -> Option<u32> {
        self.take_freed(ctl);
        if ctl.free_resident.len() > reserve {
            return ctl.free_resident.pop();
        }
        // A segment taken unbacked is charged its first bytes now and the rest as it fills
        // (`charge_ahead`); the headroom still keeps whole segments free for the reserve.
        let headroom = reserve.saturating_sub(ctl.free_resident.len()) * self.seg_size;
        // Only far from the limit (past an eighth of it): nearer, a segment whose charge
        // could not grow would be sealed short, and one holding kept items (never-evict
        // marks) with a few others could stay queued with them (seen: an unmarked key
        // outlived 2x the limit of new writes in tests/conformance/test_eviction_policies.py).
        let used = self.recycled.used_bytes.load(Ordering::Acquire);
        let limit = self.recycled.limit();
        let far = used + headroom + self.seg_size + limit / 8 <= limit;
        let first = if far { CHARGE_AHEAD.min(self.seg_size) } else { self.seg_size };
        if !ctl.free_unbacked.is_empty() && self.recycled.try_charge(first, headroom) {
            let id = ctl.free_unbacked.pop()?;
            self.segments.header(id).set_free_charge(first);
            return Some(id);
        }
        None
    }

    /// Moves segments past their grace period onto the free lists: those charged whole to
    /// the resident list, those charged in part (sealed before they filled: the budget ran
    /// out, or a writer's reservation went past the charge) unbacked, their charge given
    /// back, so that a free resident segment is always a whole segment's room.
    pub(super) fn take_freed(&self, ctl: &mut Ctl) {
        let before = ctl.free_resident.len();
        self.recycled.take_freed(&mut ctl.free_resident);
        let mut at = before;
        while at < ctl.free_resident.len() {
            let id = ctl.free_resident[at];
            let charged = self.segments.header(id).charged_bytes();
            if charged >= self.seg_size {
                at += 1;
                continue;
            }
            ctl.free_resident.swap_remove(at);
            self.unback(ctl, id);
            self.recycled.uncharge(charged);
        }
    }

    /// Gives a free segment's pages back and lists it unbacked, its charge now zero (the
    /// caller moves what it was charged where it is needed, or gives it back).
    fn unback(&self, ctl: &mut Ctl, id: u32) {
        // SAFETY: a free segment is past its grace period: no reader or writer uses it.
        unsafe { self.segments.release(id) };
        self.segments.header(id).set_free_charge(0);
        ctl.free_unbacked.push(id);
    }

    /// Returns a segment a write took and did not open: resident if charged whole, else
    /// unbacked with its charge given back.
    pub(super) fn give_back_segment(&self, ctl: &mut Ctl, id: u32) {
        let charged = self.segments.header(id).charged_bytes();
        if charged >= self.seg_size {
            ctl.free_resident.push(id);
        } else {
            self.unback(ctl, id);
            self.recycled.uncharge(charged);
        }
    }

    pub(super) fn write_large(
        &self,
        new: NewBytes<'_>,
        flush_gen: u32,
        class: usize,
        room: &mut Room,
    ) -> Result<(Location, u64), OpError> {
        let (stamp, header, key, value) = new;
        let len = bytes::stored_len(header);
        let bytes = len.div_ceil(PAGE) * PAGE;
        let mut region = match self.recycled.take_spare(bytes) {
            Some(spare) => spare, // charged already
            None => self.map_large(bytes, room)?,
        };
        bytes::write_large_item(&mut region, stamp, header, key, value);
        shared_writes::note(Site::Seq);
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let expiry_ms = match header.expiry {
            Expiry::Never => u64::MAX,
            Expiry::AtMs(at) => at,
        };
        let large = Large { region, seq, flush_gen, expiry_ms };
        let slot = match self.recycled.add_large(large) {
            Ok(slot) => slot,
            Err(large) => {
                self.recycled.uncharge(large.region.len());
                return Err(StoreError::NoSpace.into());
            }
        };
        let victim = Victim::Large(slot, seq);
        let mut ctl = self.lock_ctl();
        if self.flush_gen.load(Ordering::Acquire) == flush_gen {
            ctl.push(Queue::Main, class, victim);
        } else {
            // A flush came between the start of this write and now: the item is dead
            // already, and the flush's entries are ahead of its class head.
            ctl.push_dead(victim);
        }
        drop(ctl);
        let cas = header.cas.unwrap_or(seq << index::OFFSET_BITS);
        Ok((Location { segment: LARGE_SEGMENT, offset: slot }, cas))
    }

    /// A new mapping of `bytes` for a large item, charged (from `room` when it holds them).
    fn map_large(&self, bytes: usize, room: &mut Room) -> Result<Region, OpError> {
        if room.bytes >= bytes {
            room.bytes -= bytes;
        } else if !self.charge_other(bytes) {
            return Err(OpError::NeedRoom(Need::Bytes(bytes)));
        }
        Region::new_populated(bytes).map_err(|_| {
            self.recycled.uncharge(bytes);
            StoreError::NoSpace.into()
        })
    }

    /// Called when an index entry stops pointing at `location`: a large item's memory is
    /// freed after the grace period (segment bytes simply become garbage until eviction).
    pub(super) fn retire(&self, location: Location, guard: &Guard) {
        if location.segment == LARGE_SEGMENT {
            let recycled = Arc::clone(&self.recycled);
            let slot = location.offset;
            let bytes = recycled.large(slot, guard).map_or(0, |large| large.region.len());
            // Counted as memory on its way back, like a cleared segment (see `make_room`).
            recycled.enter_grace(bytes);
            guard.defer(move || recycled.free_large(slot, bytes));
            // Into the global queue now, not after 63 more deferred frees: the mapping comes
            // back as a spare while the next writes of its size can still take it (an append
            // loop found the spares empty 38% of the time without this).
            guard.flush();
        }
    }

    /// Charges memory that is not a segment (index tables, large items), giving back free
    /// segments' pages to the kernel when that is what it takes.
    pub(super) fn charge_other(&self, bytes: usize) -> bool {
        loop {
            if self.try_charge_leaving_reserve(bytes) {
                return true;
            }
            let Some(unbacked) = self.unback_free_segment(&mut self.lock_ctl()) else {
                if self.recycled.drop_spares(bytes) {
                    continue;
                }
                return false;
            };
            self.recycled.uncharge(unbacked);
        }
    }

    /// Charges `bytes` if the budget still has room for eviction's reserve of free segments
    /// afterwards (counting those resident on the free list): a large item or index table
    /// that took that room left eviction no segment to copy kept items into, and they were
    /// evicted (seen: 201 live keys lost at a quarter of the limit).
    pub(super) fn try_charge_leaving_reserve(&self, bytes: usize) -> bool {
        let reserve = self.writer_reserve();
        if self.recycled.try_charge(bytes, reserve * self.seg_size) {
            return true; // room for the reserve, whether or not it is resident
        }
        let mut ctl = self.lock_ctl();
        self.take_freed(&mut ctl);
        let headroom = reserve.saturating_sub(ctl.free_resident.len()) * self.seg_size;
        self.recycled.try_charge(bytes, headroom)
    }

    /// Gives one free segment's pages back to the kernel, keeping the reserve (eviction
    /// copies the items it keeps into it); None if none can go, else the bytes it was charged
    /// (a whole segment). The charge stays: the caller moves it where the memory is needed.
    pub(super) fn unback_free_segment(&self, ctl: &mut Ctl) -> Option<usize> {
        self.take_freed(ctl);
        if ctl.free_resident.len() <= self.writer_reserve() {
            return None;
        }
        let id = ctl.free_resident.pop()?;
        let charged = self.segments.header(id).charged_bytes();
        self.unback(ctl, id);
        Some(charged)
    }
}
