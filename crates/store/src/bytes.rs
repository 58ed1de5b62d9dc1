//! Item bytes: the one place where a location becomes bytes in memory.
//!
//! Every read and write of an item's bytes, in the segments' mapping or in a large item's
//! own mapping, goes through this file, so the pointer arithmetic and its `unsafe` blocks are
//! here and nowhere else; the store's callers are safe code.
//!
//! ```text
//!   Segments: one mapping of `count` segments of `size` bytes, and a header per segment
//!   +-----------------------+-----------------------+-----
//!   | [st hdr key value][st.| [st hdr key value]... | ...
//!   +-----------------------+-----------------------+-----
//!   ^ id 0                  ^ id 1 = 1 * size
//!   read:  item(id, offset, &guard) -> stamp, header, key and value, borrowed for the pin
//!   write: reserve(id, len) -> Reservation (this writer's range alone) -> write(..)
//! ```
//!
//! `st` is the item's access stamp ([`Stamp`], 2 bytes): the only item bytes written after
//! publication, so they lie before the header, outside the `&[u8]` a reader borrows, and
//! are only ever read and written as atomics once the item is published.
//!
//! Checked here, on every access: the location lies inside the mapping, every header byte
//! read lies inside the segment (or the large item's mapping), and the item's length fits
//! in what is left of it. They are `assert!`, not `debug_assert!`, and they are the checks
//! the read path made before this type gathered them (one compare per header byte, as the
//! header is read byte by byte, and one for the decoded length), so reads pay nothing new.
//! Large items gained the per-byte check; they are at least 1/4 of a segment long, so it
//! is noise next to copying them.
//!
//! Not checkable here, and guaranteed by the store (the lock rules at the top of
//! `store.rs`):
//! - A read names an item that was fully written before it was published (an index slot
//!   read while pinned, or a sealed segment's used range after its writers finished), and
//!   the memory is not reused while the reader is pinned: segments and large items are
//!   handed back through the epoch. The `&Guard` argument ties the bytes to that pin.
//! - A write goes to a range that `Segments::reserve` handed to that writer alone, in a
//!   segment that is not freed while a reservation is open (`SegHeader::wait_writers`).

use std::{
    io,
    sync::atomic::{AtomicU8, Ordering},
};

use crossbeam_epoch::Guard;

use crate::{
    item::Header,
    mem::{Region, ZeroedArray},
    segment::{self, SegHeader},
    shared_writes::{self, Site},
};

/// Bytes of the access stamp in front of every item.
pub(crate) const STAMP_BYTES: usize = 2;

/// An item's last access time: Unix seconds modulo 2^16, as two atomic bytes (items are
/// packed unaligned, so an `AtomicU16` cannot be had without padding). It is written once
/// with the item and again only by the one reader whose frequency CAS makes the item's
/// second access (memcached bumps `it->time` there too), so a reader can see a torn value
/// only while that one store is under way.
#[repr(transparent)]
pub(crate) struct Stamp([AtomicU8; STAMP_BYTES]);

impl Stamp {
    pub(crate) fn load(&self) -> u16 {
        u16::from_le_bytes([self.0[0].load(Ordering::Relaxed), self.0[1].load(Ordering::Relaxed)])
    }

    pub(crate) fn store(&self, secs: u16) {
        let [lo, hi] = secs.to_le_bytes();
        self.0[0].store(lo, Ordering::Relaxed);
        self.0[1].store(hi, Ordering::Relaxed);
    }
}

/// Bytes an item takes in memory: its stamp, header, key and value.
pub(crate) fn stored_len(header: &Header) -> usize {
    STAMP_BYTES + header.item_len()
}

/// The segments' memory and their headers, mapped for the most segments the store may grow
/// to (`Config::memory_max_bytes`): only segments in use take memory.
pub(crate) struct Segments {
    region: Region,
    headers: ZeroedArray<SegHeader>,
    size: usize,
}

/// An item as it lies in memory: its stamp, decoded header and the rest of its bytes
/// (header, key, value), borrowed for as long as the reader stays pinned.
pub(crate) struct RawItem<'a> {
    pub(crate) stamp: &'a Stamp,
    pub(crate) header: Header,
    pub(crate) header_len: usize,
    pub(crate) bytes: &'a [u8],
}

impl Segments {
    /// Segments `0..count` ready for use, room for `count_max`.
    pub(crate) fn new(count: usize, count_max: usize, size: usize) -> io::Result<Segments> {
        let region = Region::new(count_max * size)?;
        let segments = Segments { region, headers: ZeroedArray::new(count_max)?, size };
        segments.init(0..count);
        Ok(segments)
    }

    /// Readies the headers of segments not used before (the store grows into them).
    pub(crate) fn init(&self, ids: std::ops::Range<usize>) {
        for header in &self.headers[ids] {
            header.init();
        }
    }

    /// The most segments there is room for.
    pub(crate) fn count_max(&self) -> usize {
        self.headers.len()
    }

    pub(crate) fn header(&self, id: u32) -> &SegHeader {
        &self.headers[id as usize]
    }

    /// Asks the CPU to start loading the line of the item at `offset` of segment `id`, for
    /// a read soon after: the expiry sweep reads the items of a chunk of the index, each in
    /// a random place, and one miss at a time was 60% of its time (perf, 250K expired).
    #[inline]
    pub(crate) fn prefetch_item(&self, id: u32, offset: u32) {
        let at = id as usize * self.size + offset as usize;
        if at < self.headers.len() * self.size {
            self.region.prefetch(at);
        }
    }

    /// Starts loading the first two lines of the item at `offset` of segment `id` (its
    /// header and key, and a small value), for a read a few keys later in a batch.
    #[inline]
    pub(crate) fn prefetch_item_head(&self, id: u32, offset: u32) {
        let at = id as usize * self.size + offset as usize;
        if at < self.headers.len() * self.size {
            self.region.prefetch(at);
            self.region.prefetch((at | 63) + 1);
        }
    }

    /// Reads the item at `offset` of segment `id`. The caller read the location from the
    /// index while pinned by `guard`, or is clearing a sealed segment whose writers are done
    /// (see the module doc); the bytes stay valid while the pin lasts.
    #[inline]
    pub(crate) fn item<'g>(&'g self, id: u32, offset: u32, _guard: &'g Guard) -> RawItem<'g> {
        let (id, offset) = (id as usize, offset as usize);
        assert!(id < self.headers.len() && offset < self.size, "location outside the segments");
        // SAFETY: inside the mapping: `id * size + offset` < `count * size` (asserted).
        let base = unsafe { self.region.ptr().add(id * self.size + offset) };
        // SAFETY: `size - offset` bytes from `base` lie inside the mapping, and the item
        // there is published and not reused before `'g` ends (the caller's contract above).
        unsafe { read_item(base, self.size - offset) }
    }

    /// Reserves `len` bytes at the end of segment `id` for this writer alone. None if the
    /// segment is sealed or has no room left in its charge (`SegHeader::charged_bytes`, at
    /// most the segment); the segment then needs sealing (a failed reservation still moves
    /// its write offset past the charge, which then cannot be extended).
    pub(crate) fn reserve(&self, id: u32, len: usize) -> Option<Reservation<'_>> {
        let seg = self.header(id);
        // inflight +1, write_offset +len, and (below) used_end max and inflight -1.
        shared_writes::note(Site::SegAppend);
        shared_writes::note(Site::SegAppend);
        seg.inflight.fetch_add(1, Ordering::AcqRel);
        let word = seg.write_offset.fetch_add(len as u64, Ordering::AcqRel);
        let (offset, room) = segment::reserved_and_room(word);
        // A sealed segment has no room.
        if offset.saturating_add(len as u64) > room {
            shared_writes::note(Site::SegAppend);
            seg.inflight.fetch_sub(1, Ordering::Release);
            return None;
        }
        Some(Reservation { segments: self, id, offset: offset as usize, len })
    }

    /// Makes bytes `from..to` of segment `id` resident now, in one call: its charge was
    /// just extended over them, and a write is about to touch them (`Region::populate`).
    pub(crate) fn populate(&self, id: u32, from: usize, to: usize) {
        assert!((id as usize) < self.headers.len() && from <= to && to <= self.size);
        self.region.populate(id as usize * self.size + from, to - from);
    }

    /// Gives the pages of segment `id` back to the kernel; it reads as zeros afterwards.
    ///
    /// # Safety
    /// Nobody may be reading or writing the segment: it is free and past its grace period.
    pub(crate) unsafe fn release(&self, id: u32) {
        assert!((id as usize) < self.headers.len());
        // SAFETY: the range is the segment's, inside the mapping (asserted); the caller
        // guarantees that nobody uses it.
        unsafe { self.region.release(id as usize * self.size, self.size) };
    }
}

/// Reads the item at the start of a large item's mapping. The mapping comes from the large
/// item table while pinned, and stays valid while the pin lasts (see the module doc).
pub(crate) fn large_item(region: &Region) -> RawItem<'_> {
    // SAFETY: the mapping is `len` bytes from `ptr`, and the item in it was written before
    // it was published and is never written again; it lives as long as the borrow.
    unsafe { read_item(region.ptr(), region.len()) }
}

/// Writes an item into a fresh large-item mapping, which nobody else can see yet.
pub(crate) fn write_large_item(
    region: &mut Region,
    stamp: u16,
    header: &Header,
    key: &[u8],
    value: &[&[u8]],
) {
    let out = region.as_mut_slice();
    let len = stored_len(header);
    assert!(len <= out.len(), "large item larger than its mapping");
    write_item(&mut out[..len], stamp, header, key, value);
}

/// A range of a segment that one writer reserved; it counts as in flight (so the segment
/// is not cleared) until dropped.
pub(crate) struct Reservation<'s> {
    segments: &'s Segments,
    id: u32,
    offset: usize,
    len: usize,
}

impl Reservation<'_> {
    pub(crate) fn offset(&self) -> u32 {
        self.offset as u32
    }

    /// Writes the item into the reserved range (exactly its length) and extends the
    /// segment's used range over it.
    pub(crate) fn write(&self, stamp: u16, header: &Header, key: &[u8], value: &[&[u8]]) {
        let segments = self.segments;
        debug_assert!(self.offset + self.len <= segments.size, "checked by reserve");
        // SAFETY: `[offset, offset + len)` of segment `id` lies inside the mapping (checked
        // by `reserve`) and was reserved by its `fetch_add` for this writer alone; nobody
        // reads it before the item is published, and the segment is not reused while the
        // reservation is open.
        let out = unsafe {
            std::slice::from_raw_parts_mut(
                segments.region.ptr().add(self.id as usize * segments.size + self.offset),
                self.len,
            )
        };
        write_item(out, stamp, header, key, value);
        let end = (self.offset + self.len) as u32;
        shared_writes::note(Site::SegAppend);
        segments.header(self.id).used_end.fetch_max(end, Ordering::AcqRel);
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        shared_writes::note(Site::SegAppend);
        self.segments.header(self.id).inflight.fetch_sub(1, Ordering::Release);
    }
}

/// Decodes the item (stamp first) at `at`, with `room` bytes to the end of its memory.
///
/// # Safety
/// `room` bytes from `at` are mapped, and the item there was published and is not
/// written (but for its stamp, atomically) or reused during `'a`.
#[inline]
unsafe fn read_item<'a>(at: *const u8, room: usize) -> RawItem<'a> {
    assert!(room > STAMP_BYTES, "item stamp runs past its memory");
    // SAFETY: the stamp's bytes are mapped (asserted) and, once published, only accessed
    // as atomics; `AtomicU8` has the layout and alignment of `u8`.
    let stamp = unsafe { &*at.cast::<Stamp>() };
    let (base, room) = (at.wrapping_add(STAMP_BYTES), room - STAMP_BYTES);
    let (header, header_len) = Header::decode_with(move |i| {
        assert!(i < room, "item header runs past its memory");
        // SAFETY: in bounds (asserted); the header was written before its publication.
        unsafe { *base.add(i) }
    });
    let len = header_len + header.key_len + header.value_len;
    assert!(len <= room, "item runs past its memory");
    // SAFETY: `len` bytes from `base` are the published item (in bounds: asserted), which
    // nobody writes before the memory is reused, after `'a`.
    let bytes = unsafe { std::slice::from_raw_parts(base, len) };
    RawItem { stamp, header, header_len, bytes }
}

fn write_item(out: &mut [u8], stamp: u16, header: &Header, key: &[u8], value: &[&[u8]]) {
    out[..STAMP_BYTES].copy_from_slice(&stamp.to_le_bytes());
    let mut at = STAMP_BYTES + header.encode(&mut out[STAMP_BYTES..]);
    out[at..at + key.len()].copy_from_slice(key);
    at += key.len();
    for part in value {
        out[at..at + part.len()].copy_from_slice(part);
        at += part.len();
    }
    assert_eq!(at, out.len(), "item length mismatch");
}
