//! Segments: the log the items live in, and the one memory budget everything is charged to.
//!
//! A segment is a fixed-size slice of one large mapping. Writers append to an *active*
//! segment by reserving bytes with one `fetch_add`; a full segment is *sealed* and joins a
//! FIFO queue; eviction and expiry take whole segments from the queues and hand them back,
//! through the epoch, once no reader can still see them.
//!
//! ```text
//!            reserve (fetch_add)            seal                   evict / reclaim
//!  free ---> active segment per class ---> small or main FIFO ---> (epoch) ---> free
//! ```
//!
//! Memory: `Budget` counts the bytes that are, or may become, resident: segments in use or
//! free but touched, index tables and large items. It never exceeds the configured limit, so
//! resident memory is that limit plus fixed overhead (headers, locks, the process itself).

use std::{
    collections::VecDeque,
    sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering},
};

use crossbeam_epoch::Guard;
use parking_lot::Mutex;

use crate::{
    mem::{Region, ZeroValid, ZeroedArray},
    shared_writes::{self, Site},
};

/// `SegHeader::write_offset`: the offset reserved so far in its low 40 bits, this bit once
/// the segment is sealed, and above it the bytes of the segment charged to the budget, in
/// `CHARGE_UNIT`s (see `SegHeader::charged_bytes`).
pub(crate) const SEALED: u64 = 1 << 40;
const OFFSET_MASK: u64 = SEALED - 1;

/// A `write_offset` word's reserved offset, and the end of the room reservations may take
/// (the charge; zero once sealed).
#[inline]
pub(crate) fn reserved_and_room(word: u64) -> (u64, u64) {
    let room = if word & SEALED != 0 { 0 } else { (word >> CHARGE_SHIFT) * CHARGE_UNIT as u64 };
    (word & OFFSET_MASK, room)
}
const CHARGE_SHIFT: u32 = 41;
/// The unit segments are charged in as they fill: a cache line. A page (what a segment
/// becomes resident in) left 0-4 KiB charged and unwritten on the segment being filled,
/// 0-4.4 B per item at 0.1% of a 48 MiB store; pages are still made resident whole
/// (`Store::charge_ahead`), so up to a page per segment being filled is resident and not
/// charged.
pub(crate) const CHARGE_UNIT: usize = 64;
// The charge's bits (above the sealed bit) count a whole segment: offsets are 20 bits.
const _: () = assert!(
    ((1u64 << (64 - CHARGE_SHIFT)) - 1) * CHARGE_UNIT as u64 >= 1 << crate::index::OFFSET_BITS
);
pub(crate) const NONE: u32 = u32::MAX;
/// Items are grouped by remaining lifetime into this many classes (powers of ten of
/// seconds; see `store::ttl_class`), each with its own active segments and queues.
pub(crate) const TTL_CLASSES: usize = 8;

/// Which FIFO a segment belongs to (S3-FIFO's small probation queue, or main).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Queue {
    Small = 0,
    Main = 1,
}

/// Per-segment metadata, kept apart from the segment's bytes. Two cache lines: the fields
/// writers update on every append, and the fields every read of an item consults, so that
/// appends on one core do not evict the read-mostly line from the other cores' caches.
#[repr(C, align(64))]
pub(crate) struct SegHeader {
    /// Bytes reserved by writers, `SEALED` once no more may be, and the bytes charged to the
    /// memory budget, in one word so that a reservation sees the charge as of its own
    /// `fetch_add` (see `Reserved`).
    pub(crate) write_offset: AtomicU64,
    /// End of the last successful reservation: items fill `[0, used_end)`.
    pub(crate) used_end: AtomicU32,
    /// Writers between their reservation and the end of their copy.
    pub(crate) inflight: AtomicU32,
    /// Latest expiry of any item in it (`u64::MAX` if one never expires).
    pub(crate) max_expiry_ms: AtomicU64,
    /// Earliest expiry of any item in it (`u64::MAX` if none expires): the expiry sweep
    /// reads no item of a segment where none can have expired yet.
    pub(crate) min_expiry_ms: AtomicU64,
    _pad: [u8; 32],
    /// The flush generation the segment was opened in.
    pub(crate) flush_gen: AtomicU32,
    pub(crate) queue: AtomicU32,
    /// The TTL class of its items.
    pub(crate) class: AtomicU32,
    /// Opening sequence number: the high bits of the CAS unique of its items.
    pub(crate) seq: AtomicU64,
}

const _: () = assert!(std::mem::size_of::<SegHeader>() == 128);

// SAFETY: atomics and padding bytes, all valid as zeros; nothing to drop.
unsafe impl ZeroValid for SegHeader {}

impl SegHeader {
    /// Makes a zeroed header that of a free segment: sealed, so no writer reserves in it
    /// before it is opened.
    pub(crate) fn init(&self) {
        self.write_offset.store(SEALED, Ordering::Release);
    }

    /// Bytes of the segment charged to the memory budget: the whole segment once it was
    /// filled (or came from the free resident list), less while a segment taken unbacked is
    /// filling (it is charged a step at a time, ahead of its writers), none when unbacked.
    pub(crate) fn charged_bytes(&self) -> usize {
        (self.write_offset.load(Ordering::Acquire) >> CHARGE_SHIFT) as usize * CHARGE_UNIT
    }

    /// Records the charge of a free segment (no writer may reserve in it: sealed).
    pub(crate) fn set_free_charge(&self, bytes: usize) {
        debug_assert_eq!(bytes % CHARGE_UNIT, 0);
        let units = (bytes / CHARGE_UNIT) as u64;
        self.write_offset.store(SEALED | (units << CHARGE_SHIFT), Ordering::Release);
    }

    /// Raises the charge to at least `target` bytes (whole units), for a segment still open
    /// and whose reservations all fit its charge so far: once one did not, the segment is
    /// full for good (a later reservation must not succeed past the failed one's bytes,
    /// which nobody writes). `charge` is asked for the missing bytes first. Returns whether
    /// the charge covers `target`, and the bytes charged that the segment did not take (the
    /// caller gives them back).
    pub(crate) fn extend_charge(
        &self,
        target: usize,
        charge: impl FnOnce(usize) -> bool,
    ) -> (bool, usize) {
        let target_units = target.div_ceil(CHARGE_UNIT) as u64;
        let mut word = self.write_offset.load(Ordering::Acquire);
        let units = word >> CHARGE_SHIFT;
        if units >= target_units {
            return (true, 0);
        }
        let charged = (target_units - units) as usize * CHARGE_UNIT;
        if !charge(charged) {
            return (false, 0);
        }
        loop {
            let (offset, units) = (word & OFFSET_MASK, word >> CHARGE_SHIFT);
            if word & SEALED != 0 || offset > units * CHARGE_UNIT as u64 {
                return (false, charged);
            }
            // Another writer's extension may have landed in between: only what is still
            // missing is added, the rest of the charge given back.
            let more = target_units.saturating_sub(units);
            if more == 0 {
                return (true, charged);
            }
            shared_writes::note(Site::SegAppend);
            match self.write_offset.compare_exchange_weak(
                word,
                word + (more << CHARGE_SHIFT),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return (true, charged - more as usize * CHARGE_UNIT),
                Err(now) => word = now,
            }
        }
    }

    /// Prepares a free segment for writing, keeping its charge. Publishing `write_offset`
    /// last makes the other fields visible to every writer whose reservation succeeds.
    pub(crate) fn open(&self, seq: u64, flush_gen: u32, queue: Queue, class: usize) {
        self.used_end.store(0, Ordering::Relaxed);
        self.flush_gen.store(flush_gen, Ordering::Relaxed);
        self.seq.store(seq, Ordering::Relaxed);
        self.max_expiry_ms.store(0, Ordering::Relaxed);
        self.min_expiry_ms.store(u64::MAX, Ordering::Relaxed);
        self.queue.store(queue as u32, Ordering::Relaxed);
        self.class.store(class as u32, Ordering::Relaxed);
        let charge = self.write_offset.load(Ordering::Acquire) & !(SEALED | OFFSET_MASK);
        self.write_offset.store(charge, Ordering::Release);
    }

    pub(crate) fn seal(&self) {
        self.write_offset.fetch_or(SEALED, Ordering::AcqRel);
    }

    /// Waits for writers that reserved space before the seal to finish their copies.
    pub(crate) fn wait_writers(&self) {
        let mut spins = 0u32;
        while self.inflight.load(Ordering::Acquire) != 0 {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    pub(crate) fn queue(&self) -> Queue {
        if self.queue.load(Ordering::Relaxed) == Queue::Main as u32 {
            Queue::Main
        } else {
            Queue::Small
        }
    }

    pub(crate) fn class(&self) -> usize {
        self.class.load(Ordering::Relaxed) as usize
    }
}

/// An entry of an eviction queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Victim {
    Segment(u32),
    /// A large item's slot and the sequence number it was written with (a stale entry,
    /// whose item was deleted or replaced, no longer matches and is skipped).
    Large(u32, u64),
    /// An owner (see `OWNER_FLAGS`): its key's hash and its value's, which name it across
    /// the moves of its item (an owner is copied forward when its segment goes; its memory
    /// outside the store goes with this entry, in the order it was written).
    Owner(u64, u64),
}

/// Segment lists, guarded by one mutex that only segment turnover takes (once per segment of
/// writes, never per request).
///
/// ```text
///   small: class 0 [s3][s9]...     main: class 0 [s1][s7]...     dead: [s4]
///          class 1 [s5]...               class 1 [s2][L8]...     (known dead, not queued)
///          ...                           ...
///   eviction: the oldest head (by push stamp) of the queue S3-FIFO picks
///   reclaim:  the dead list, then heads that are dead, class by class; never a scan
/// ```
///
/// Each eviction queue is one FIFO per TTL class, merged by age: every entry carries the
/// stamp of its push, and eviction takes the oldest head, so the eviction order is that of a
/// single FIFO. Within a class, segments die in about the order they were sealed (their
/// items' lifetimes are within a factor of ten), and a flush kills every entry queued before
/// it, so dead entries gather at the class heads, where reclaim finds them by looking at
/// 2 x `TTL_CLASSES` heads, as Pelikan's TTL buckets do: work bounded by what is dead, not by
/// what is queued. A dead segment behind a live head of its own class waits for that head
/// (at most the class's lifetime spread) or for eviction, which takes it like any other.
#[derive(Default)]
pub(crate) struct Ctl {
    /// Free segments whose pages may be resident (charged to the budget).
    pub(crate) free_resident: Vec<u32>,
    /// Free segments whose pages were given back (not charged).
    pub(crate) free_unbacked: Vec<u32>,
    small: Fifo,
    main: Fifo,
    /// Segments sealed because they were found dead: reclaimed before any queue head.
    dead: Vec<Victim>,
    /// The next push's stamp.
    stamp: u64,
    /// Entries the small queue keeps before it is evicted from; see `pick_victim`.
    small_share_min: usize,
    /// Owner entries past this many make the next push drop the stale ones (`retain_owners`).
    owners_compact_at: usize,
}

/// Owner entries below which stale ones are left for eviction to skip.
const OWNERS_COMPACT_MIN: usize = 1024;

/// Small-queue entries kept beyond a tenth of the memory: the segments eviction takes ahead
/// of demand (`EVICT_AHEAD`) and the one being filled, which would otherwise come out of
/// the tenth.
const PROBATION_SLACK: usize = 3;

impl Ctl {
    /// Segment lists with every segment free and unbacked (none touched yet).
    pub(crate) fn new(segments: usize) -> Ctl {
        Ctl {
            free_unbacked: (0..segments as u32).rev().collect(),
            small_share_min: Ctl::small_share_min(segments),
            owners_compact_at: OWNERS_COMPACT_MIN,
            ..Ctl::default()
        }
    }

    /// The memory limit changed: it is now `segments` segments' worth.
    pub(crate) fn set_limit_segments(&mut self, segments: usize) {
        self.small_share_min = Ctl::small_share_min(segments);
    }

    fn small_share_min(segments: usize) -> usize {
        segments / 10 + PROBATION_SLACK
    }

    /// S3-FIFO's choice: evict from the small queue while it holds more than a tenth of the
    /// cache, else from main. The tenth is of the memory, not of what is queued (active and
    /// free segments are not), plus a slack, so that an item written or read on probation
    /// survives until at least a tenth of the memory in new bytes came in (measured without
    /// the slack: gone after 9.4-10.3% under a full main queue; tests/conformance/test_memory.py).
    ///
    /// With `first` = `Queue::Small` the small queue goes first whenever it has entries:
    /// eviction that had to keep the last victim (`store/protect.rs`) looks at the other
    /// queue, so that a main queue of protected segments does not hide the small queue's
    /// evictable ones behind S3-FIFO's share.
    pub(crate) fn pick_victim_preferring(&mut self, first: Queue) -> Option<Victim> {
        if first == Queue::Small && self.small.len > 0 {
            return self.small.pop_oldest();
        }
        // Owners count in neither length: they are entries of memory kept outside, a few
        // hundred or thousand per segment's worth, and would make the tenth a share of them.
        let total = self.small.len + self.main.len;
        let share = (total / 10).max(self.small_share_min);
        let main_empty = self.main.len + self.main.owners == 0;
        if self.small.len > 0 && (self.small.len > share || main_empty) {
            self.small.pop_oldest()
        } else {
            self.main.pop_oldest().or_else(|| self.small.pop_oldest())
        }
    }

    pub(crate) fn push(&mut self, queue: Queue, class: usize, victim: Victim) {
        self.stamp += 1;
        match queue {
            Queue::Small => self.small.push(self.stamp, class, victim),
            Queue::Main => self.main.push(self.stamp, class, victim),
        }
    }

    /// Entries queued for eviction (segments, large items and owners; live or stale).
    pub(crate) fn queued(&self) -> usize {
        self.small.len + self.main.len + self.owner_entries()
    }

    /// Owner entries queued (live or stale).
    pub(crate) fn owner_entries(&self) -> usize {
        self.small.owners + self.main.owners
    }

    /// Whether owner entries passed the mark at which stale ones are dropped.
    pub(crate) fn owners_need_compacting(&self) -> bool {
        self.owner_entries() > self.owners_compact_at
    }

    /// Drops the owner entries `is_live` says no longer name a live owner (deleted,
    /// replaced, expired: entries that eviction would skip), and sets the next mark at twice
    /// what is left, so that the work is amortised over the pushes in between.
    pub(crate) fn retain_owners(&mut self, mut is_live: impl FnMut(u64, u64) -> bool) {
        self.small.retain_owners(&mut is_live);
        self.main.retain_owners(&mut is_live);
        self.owners_compact_at = 2 * self.owner_entries() + OWNERS_COMPACT_MIN;
    }

    /// Puts a segment back at the head of its queue and class, ahead of every entry, so that
    /// eviction takes it first again: a clear that stopped part way (`Store::clear_segment`).
    pub(crate) fn push_segment_front(&mut self, id: u32, header: &SegHeader) {
        let fifo = match header.queue() {
            Queue::Small => &mut self.small,
            Queue::Main => &mut self.main,
        };
        fifo.classes[header.class()].push_front((0, Victim::Segment(id)));
        fifo.count(&Victim::Segment(id), 1);
    }

    /// Queues a sealed segment in its queue and class.
    pub(crate) fn push_segment(&mut self, id: u32, header: &SegHeader) {
        self.push(header.queue(), header.class(), Victim::Segment(id));
    }

    /// Queues a segment known to be dead where reclaim looks first.
    pub(crate) fn push_dead(&mut self, victim: Victim) {
        self.dead.push(victim);
    }

    /// Takes up to `max` dead entries: the dead list, then the class heads of both queues
    /// while `is_dead` says so. Looks at no more than `max` entries plus one head per class.
    pub(crate) fn take_dead(
        &mut self,
        max: usize,
        mut is_dead: impl FnMut(&Victim) -> bool,
    ) -> Vec<Victim> {
        let from_list = self.dead.len().min(max);
        let mut out: Vec<Victim> = self.dead.drain(self.dead.len() - from_list..).collect();
        self.small.pop_dead_heads(max, &mut is_dead, &mut out);
        self.main.pop_dead_heads(max, &mut is_dead, &mut out);
        out
    }
}

/// One eviction queue: a FIFO per TTL class, and the number of entries in all of them
/// (owners counted apart).
#[derive(Default)]
struct Fifo {
    classes: [VecDeque<(u64, Victim)>; TTL_CLASSES],
    len: usize,
    owners: usize,
}

impl Fifo {
    fn push(&mut self, stamp: u64, class: usize, victim: Victim) {
        self.classes[class].push_back((stamp, victim));
        self.count(&victim, 1);
    }

    fn count(&mut self, victim: &Victim, added: isize) {
        let len = match victim {
            Victim::Owner(..) => &mut self.owners,
            _ => &mut self.len,
        };
        *len = len.wrapping_add_signed(added);
    }

    fn retain_owners(&mut self, is_live: &mut impl FnMut(u64, u64) -> bool) {
        for class in self.classes.iter_mut() {
            class.retain(|(_, victim)| match *victim {
                Victim::Owner(key_hash, value_hash) => is_live(key_hash, value_hash),
                _ => true,
            });
        }
        let is_owner = |(_, victim): &&(u64, Victim)| matches!(victim, Victim::Owner(..));
        self.owners = self.classes.iter().flatten().filter(is_owner).count();
    }

    /// The entry pushed first, across classes.
    fn pop_oldest(&mut self) -> Option<Victim> {
        let class = (0..TTL_CLASSES)
            .filter_map(|c| self.classes[c].front().map(|&(stamp, _)| (stamp, c)))
            .min()?
            .1;
        let (_, victim) = self.classes[class].pop_front()?;
        self.count(&victim, -1);
        Some(victim)
    }

    fn pop_dead_heads(
        &mut self,
        max: usize,
        is_dead: &mut impl FnMut(&Victim) -> bool,
        out: &mut Vec<Victim>,
    ) {
        let (mut owners, mut others) = (0, 0);
        for class in self.classes.iter_mut() {
            while out.len() < max {
                match class.front() {
                    Some(&(_, victim)) if is_dead(&victim) => {
                        let taken = if matches!(victim, Victim::Owner(..)) {
                            &mut owners
                        } else {
                            &mut others
                        };
                        *taken += 1;
                        out.push(victim);
                    }
                    _ => break,
                }
                class.pop_front();
            }
        }
        self.owners -= owners;
        self.len -= others;
    }
}

/// An item too large for a segment, in a mapping of its own.
pub(crate) struct Large {
    pub(crate) region: Region,
    pub(crate) seq: u64,
    pub(crate) flush_gen: u32,
    pub(crate) expiry_ms: u64,
}

/// The memory limit and what deferred frees hand back, shared with them because they run on
/// whatever thread collects the epoch's garbage.
pub(crate) struct Recycled {
    /// Large items by slot (owned boxes, or null); a slot is emptied only after its grace
    /// period. Mapped for the most the store may grow to; slots `0..large_slots` are in use.
    large: ZeroedArray<AtomicPtr<Large>>,
    /// Slots handed out so far (free or holding an item); grows with the memory limit.
    pub(crate) large_slots: AtomicUsize,
    pub(crate) large_free: Mutex<Vec<u32>>,
    pub(crate) used_bytes: AtomicUsize,
    /// The part of `used_bytes` charged for memory kept outside the store (owners'
    /// collections, tracking tables): what the store holds beyond its items.
    pub(crate) outside_bytes: AtomicUsize,
    /// The memory limit; lowered or raised at run time (`Store::set_memory_limit`).
    pub(crate) limit_bytes: AtomicUsize,
    /// Segments past their grace period, waiting to join `Ctl::free_resident`.
    pub(crate) freed: Mutex<Vec<u32>>,
    pub(crate) freed_count: AtomicUsize,
    /// Bumped whenever memory comes back (a segment past its grace, a large item freed):
    /// writers waiting for room watch it.
    pub(crate) frees: AtomicUsize,
    /// Segments cleared, and large items unlinked, still in their grace period.
    pub(crate) in_grace: AtomicUsize,
    /// Their bytes: what will come back without evicting anything more.
    pub(crate) in_grace_bytes: AtomicUsize,
    /// Index tables unlinked after their migration, still charged until their grace period
    /// ends (`Store::memory_breakdown`).
    pub(crate) index_retiring_bytes: AtomicUsize,
    /// Mappings of freed large items kept for the next large item, most recent last: still
    /// charged, and given up before anything is evicted (`drop_spares`).
    spares: Mutex<VecDeque<Region>>,
    pub(crate) spare_bytes: AtomicUsize,
}

/// The most a store keeps in spare large-item mappings: a rewritten large item (an append
/// loop) reuses its predecessor's pages, already resident and in cache, where a new mapping
/// cost a page fault per 4 KiB and an unmap (half the server's CPU appending to 72 KB
/// items). A thirty-second of the limit, at most 4 MiB.
fn spare_bytes_max(limit_bytes: usize) -> usize {
    (limit_bytes / 32).min(4 << 20)
}

impl Recycled {
    /// `large_slots` slots for large items, room for `large_slots_max`.
    pub(crate) fn new(
        limit_bytes: usize,
        large_slots: usize,
        large_slots_max: usize,
    ) -> std::io::Result<Recycled> {
        Ok(Recycled {
            large: ZeroedArray::new(large_slots_max)?,
            large_slots: AtomicUsize::new(large_slots),
            large_free: Mutex::new((0..large_slots as u32).rev().collect()),
            used_bytes: AtomicUsize::new(0),
            outside_bytes: AtomicUsize::new(0),
            limit_bytes: AtomicUsize::new(limit_bytes),
            freed: Mutex::new(Vec::new()),
            freed_count: AtomicUsize::new(0),
            frees: AtomicUsize::new(0),
            in_grace: AtomicUsize::new(0),
            in_grace_bytes: AtomicUsize::new(0),
            index_retiring_bytes: AtomicUsize::new(0),
            spares: Mutex::new(VecDeque::new()),
            spare_bytes: AtomicUsize::new(0),
        })
    }

    /// Hands out more large slots, up to `slots` in all (never beyond the mapping).
    pub(crate) fn grow_large_slots(&self, slots: usize) {
        let mut free = self.large_free.lock();
        let slots = slots.min(self.large.len());
        let before = self.large_slots.load(Ordering::Acquire);
        if slots > before {
            free.extend((before as u32..slots as u32).rev());
            self.large_slots.store(slots, Ordering::Release);
        }
    }

    /// Charges `bytes` if that leaves at least `headroom` bytes under the limit.
    pub(crate) fn try_charge(&self, bytes: usize, headroom: usize) -> bool {
        shared_writes::note(Site::Budget);
        self.used_bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                let after = used.checked_add(bytes)?;
                (after.saturating_add(headroom) <= self.limit()).then_some(after)
            })
            .is_ok()
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit_bytes.load(Ordering::Acquire)
    }

    pub(crate) fn uncharge(&self, bytes: usize) {
        shared_writes::note(Site::Budget);
        let before = self.used_bytes.fetch_sub(bytes, Ordering::AcqRel);
        assert!(before >= bytes, "memory budget underflow");
    }

    /// Counts `bytes` of memory kept outside as given back (never below zero: a caller
    /// that gives back what it never charged leaves the count at zero, not wrapped).
    pub(crate) fn uncharge_outside(&self, bytes: usize) {
        let _ = self.outside_bytes.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
            Some(held.saturating_sub(bytes))
        });
    }

    /// Counts memory entering its grace period (`bytes` come back when it ends).
    pub(crate) fn enter_grace(&self, bytes: usize) {
        self.in_grace.fetch_add(1, Ordering::AcqRel);
        self.in_grace_bytes.fetch_add(bytes, Ordering::AcqRel);
    }

    pub(crate) fn push_freed(&self, segment: u32, charged: usize) {
        // Counted under the list's lock: `take_freed` subtracts the list's length under it,
        // and a segment listed but not yet counted made the count wrap below zero (an add
        // overflow in `note_roll_for_reuse`, seen once in tests/reliability.rs).
        let mut freed = self.freed.lock();
        freed.push(segment);
        self.freed_count.fetch_add(1, Ordering::Release);
        drop(freed);
        self.in_grace.fetch_sub(1, Ordering::AcqRel);
        self.in_grace_bytes.fetch_sub(charged, Ordering::AcqRel);
        self.frees.fetch_add(1, Ordering::Release);
    }

    pub(crate) fn take_freed(&self, into: &mut Vec<u32>) {
        if self.freed_count.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut freed = self.freed.lock();
        self.freed_count.fetch_sub(freed.len(), Ordering::AcqRel);
        into.append(&mut freed);
    }
}

impl Recycled {
    /// Publishes a large item in a free slot; returns the slot, or the item if none is free.
    pub(crate) fn add_large(&self, large: Large) -> Result<u32, Large> {
        let Some(slot) = self.large_free.lock().pop() else { return Err(large) };
        self.large[slot as usize].store(Box::into_raw(Box::new(large)), Ordering::Release);
        Ok(slot)
    }

    pub(crate) fn large<'g>(&self, slot: u32, _guard: &'g Guard) -> Option<&'g Large> {
        let ptr = self.large[slot as usize].load(Ordering::Acquire);
        // SAFETY: a non-null slot holds a box from `add_large`, destroyed only after the
        // grace period of its unlink (`free_large`), and the caller is pinned by `_guard`.
        unsafe { ptr.as_ref() }
    }

    /// Frees a large slot; call only after the grace period of the unlink (from a deferred
    /// closure), when no reader can still hold a reference to the item.
    pub(crate) fn free_large(&self, slot: u32, graced_bytes: usize) {
        let ptr = self.large[slot as usize].swap(std::ptr::null_mut(), Ordering::AcqRel);
        if !ptr.is_null() {
            // SAFETY: the box came from `add_large`; the grace period has passed, so nobody
            // else can reach the item, and the swap made this the only pointer to it.
            let large = unsafe { Box::from_raw(ptr) };
            self.keep_or_uncharge(large.region);
        }
        self.in_grace_bytes.fetch_sub(graced_bytes, Ordering::AcqRel);
        self.large_free.lock().push(slot);
        self.in_grace.fetch_sub(1, Ordering::AcqRel);
        self.frees.fetch_add(1, Ordering::Release);
    }
}

impl Recycled {
    /// Keeps a freed large item's mapping as a spare, still charged; the oldest spares make
    /// way for it past the bound (items grow by appends, so a recent mapping is the likelier
    /// fit), and are unmapped with their charge given back.
    fn keep_or_uncharge(&self, region: Region) {
        let len = region.len();
        let max = spare_bytes_max(self.limit());
        if len > max {
            drop(region);
            self.uncharge(len);
            return;
        }
        let mut spares = self.spares.lock();
        let mut held = self.spare_bytes.load(Ordering::Acquire);
        let mut unmapped = 0;
        while held + len > max {
            let Some(oldest) = spares.pop_front() else { break };
            held -= oldest.len();
            unmapped += oldest.len();
        }
        spares.push_back(region);
        self.spare_bytes.store(held + len, Ordering::Release);
        drop(spares);
        if unmapped > 0 {
            self.uncharge(unmapped);
        }
    }

    /// A spare mapping of at least `bytes` and at most a quarter more (so a small item does
    /// not hold a large mapping's charge), the most recently freed first; its charge comes
    /// with it.
    pub(crate) fn take_spare(&self, bytes: usize) -> Option<Region> {
        if self.spare_bytes.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut spares = self.spares.lock();
        let fits = |r: &Region| r.len() >= bytes && r.len() <= bytes + bytes / 4;
        let at = spares.iter().rposition(fits)?;
        let region = spares.remove(at)?;
        self.spare_bytes.fetch_sub(region.len(), Ordering::AcqRel);
        Some(region)
    }

    /// Unmaps spares, the oldest first, until `wanted` bytes are given back (or none is
    /// left): memory is wanted elsewhere. True when any was.
    pub(crate) fn drop_spares(&self, wanted: usize) -> bool {
        if self.spare_bytes.load(Ordering::Acquire) == 0 {
            return false;
        }
        let mut spares = self.spares.lock();
        let mut dropped = Vec::new();
        let mut bytes = 0;
        while bytes < wanted.max(1) {
            let Some(oldest) = spares.pop_front() else { break };
            bytes += oldest.len();
            dropped.push(oldest);
        }
        self.spare_bytes.fetch_sub(bytes, Ordering::AcqRel);
        drop(spares);
        drop(dropped);
        if bytes > 0 {
            self.uncharge(bytes);
            self.frees.fetch_add(1, Ordering::Release);
        }
        bytes > 0
    }
}

impl Drop for Recycled {
    fn drop(&mut self) {
        let slots = *self.large_slots.get_mut();
        for slot in &self.large[..slots] {
            let ptr = slot.swap(std::ptr::null_mut(), Ordering::Relaxed);
            if !ptr.is_null() {
                // SAFETY: dropping the store: no other thread holds references any more,
                // and the box came from `add_large`.
                drop(unsafe { Box::from_raw(ptr) });
            }
        }
    }
}
