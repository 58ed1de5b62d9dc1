//! The write path's memory: appending items to active segments, rolling to a new segment,
//! large items in mappings of their own, and the one memory budget.

use std::sync::{atomic::Ordering, Arc};

use crossbeam_epoch::Guard;

use super::{shard, Need, OpError, Room, Store, Writer, PAGE, RESERVE_SEGMENTS, TTL_CLASSES};
use crate::{
    bytes,
    index::{self, Location, LARGE_SEGMENT},
    item::Header,
    mem::Region,
    segment::{Ctl, Large, Queue, Victim, NONE},
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
        mut writer: Writer<'_>,
    ) -> Option<(Location, u64)> {
        let len = bytes::stored_len(new.1);
        debug_assert!(len < self.large_min || matches!(writer, Writer::Eviction));
        let active_index = self.active_index(queue, class);
        let active = &self.active[active_index];
        for _ in 0..8 {
            let id = active.load(Ordering::Acquire);
            if id != NONE {
                if let Some(done) = self.try_append(id, new) {
                    return Some(done);
                }
            }
            if !self.roll(queue, class, active_index, id, writer.reborrow()) {
                return None;
            }
        }
        None
    }

    pub(super) fn try_append(&self, id: u32, new: NewBytes<'_>) -> Option<(Location, u64)> {
        let (stamp, header, key, value) = new;
        let seg = self.segments.header(id);
        let reservation = self.segments.reserve(id, bytes::stored_len(header))?;
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
                self.take_segment(&mut ctl, reserve)
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
        self.recycled.take_freed(&mut ctl.free_resident);
        if ctl.free_resident.len() > reserve {
            return ctl.free_resident.pop();
        }
        let headroom = reserve.saturating_sub(ctl.free_resident.len()) * self.seg_size;
        if !ctl.free_unbacked.is_empty() && self.recycled.try_charge(self.seg_size, headroom) {
            return ctl.free_unbacked.pop();
        }
        None
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
            if !self.unback_free_segment(&mut self.lock_ctl()) {
                if self.recycled.drop_spares(bytes) {
                    continue;
                }
                return false;
            }
            self.recycled.uncharge(self.seg_size);
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
        self.recycled.take_freed(&mut ctl.free_resident);
        let headroom = reserve.saturating_sub(ctl.free_resident.len()) * self.seg_size;
        self.recycled.try_charge(bytes, headroom)
    }

    /// Gives one free segment's pages back to the kernel, keeping the reserve (eviction
    /// copies the items it keeps into it); false if none can go. The segment's charge stays:
    /// the caller moves it where the memory is needed.
    pub(super) fn unback_free_segment(&self, ctl: &mut Ctl) -> bool {
        self.recycled.take_freed(&mut ctl.free_resident);
        if ctl.free_resident.len() <= self.writer_reserve() {
            return false;
        }
        let Some(id) = ctl.free_resident.pop() else { return false };
        // SAFETY: a free segment is past its grace period: no reader or writer uses it.
        unsafe { self.segments.release(id) };
        ctl.free_unbacked.push(id);
        true
    }
}
