//! The loop's provided-buffer ring for multishot receives: the buffers and the ring of
//! entries the kernel takes them from, with the ownership rules between the two.

use std::{
    alloc::{self, Layout},
    io,
    mem::{self, size_of},
    ptr::{self, NonNull},
    sync::atomic::{AtomicU16, Ordering},
};

use io_uring::Submitter;

use super::BUF_GROUP;

/// The first entry's `resv` field doubles as the ring tail (kernel `struct io_uring_buf`).
#[repr(C)]
struct RingEntry {
    addr: u64,
    len: u32,
    bid: u16,
    resv: u16,
}

const _: () = assert!(size_of::<RingEntry>() == 16);

/// The loop's receive buffers, registered as a provided-buffer ring: `count` buffers of
/// `buf_bytes` in one allocation, and the ring of entries the kernel takes them from.
///
/// Ownership: a buffer is the kernel's from the moment its entry is published (tail store)
/// until a completion names its id; then it is ours until [`BufRing::recycle`]. The memory is
/// freed only after the ring is unregistered with no operation in flight ([`BufRing::free`]);
/// otherwise it is leaked on purpose.
pub(super) struct BufRing {
    entries: NonNull<RingEntry>,
    entries_layout: Layout,
    data: NonNull<u8>,
    data_layout: Layout,
    count: u16,
    buf_bytes: u32,
    tail: u16,
    freed: bool,
}

impl BufRing {
    pub(super) fn new(
        submitter: &Submitter<'_>,
        count: u16,
        buf_bytes: u32,
    ) -> io::Result<BufRing> {
        let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidInput, what.to_string());
        if !count.is_power_of_two() || count > 32768 {
            return Err(invalid("recv_buffers must be a power of two, at most 32768"));
        }
        if buf_bytes == 0 {
            return Err(invalid("recv_buffer_bytes must not be 0"));
        }
        let page = 4096;
        let entries_layout = Layout::from_size_align(usize::from(count) * 16, page)
            .map_err(|_| invalid("buffer ring too large"))?;
        let data_layout = Layout::from_size_align(usize::from(count) * buf_bytes as usize, page)
            .map_err(|_| invalid("receive buffers too large"))?;
        // SAFETY: both layouts have a non-zero size (count >= 1, buf_bytes >= 1).
        let (entries, data) =
            unsafe { (alloc::alloc_zeroed(entries_layout), alloc::alloc(data_layout)) };
        let (Some(entries), Some(data)) = (NonNull::new(entries.cast()), NonNull::new(data)) else {
            alloc::handle_alloc_error(entries_layout);
        };
        let mut ring = BufRing {
            entries,
            entries_layout,
            data,
            data_layout,
            count,
            buf_bytes,
            tail: 0,
            freed: false,
        };
        // SAFETY: the entry array is page aligned, holds `count` entries, and stays allocated
        // until `free`, which runs only after a successful unregister (or never).
        let registered = unsafe {
            submitter.register_buf_ring_with_flags(entries.as_ptr() as u64, count, BUF_GROUP, 0)
        };
        if let Err(e) = registered {
            ring.free();
            return Err(e);
        }
        for bid in 0..count {
            ring.write_entry(bid);
        }
        ring.publish();
        Ok(ring)
    }

    /// Fills the entry just past the published tail with buffer `bid`.
    fn write_entry(&mut self, bid: u16) {
        assert!(bid < self.count, "buffer id out of range");
        let index = usize::from(self.tail & (self.count - 1));
        let addr = self.data.as_ptr() as u64 + u64::from(bid) * u64::from(self.buf_bytes);
        // SAFETY: index < count, so the entry is inside the allocation. It lies past the
        // published tail, so the kernel does not read it now. Raw field writes leave the
        // first entry's `resv` (the tail) alone.
        unsafe {
            let entry = self.entries.as_ptr().add(index);
            ptr::addr_of_mut!((*entry).addr).write(addr);
            ptr::addr_of_mut!((*entry).len).write(self.buf_bytes);
            ptr::addr_of_mut!((*entry).bid).write(bid);
        }
        self.tail = self.tail.wrapping_add(1);
    }

    /// Makes the written entries visible to the kernel.
    fn publish(&self) {
        // SAFETY: the tail is the first entry's `resv`, a 2-byte aligned u16 inside the
        // allocation; the kernel only reads it (atomically), we are the only writer.
        let tail = unsafe { AtomicU16::from_ptr(ptr::addr_of_mut!((*self.entries.as_ptr()).resv)) };
        tail.store(self.tail, Ordering::Release);
    }

    /// How many buffers the ring has.
    pub(super) fn count(&self) -> u16 {
        self.count
    }

    /// The size of each buffer.
    pub(super) fn buf_bytes(&self) -> u32 {
        self.buf_bytes
    }

    /// Gives buffer `bid` back to the kernel.
    pub(super) fn recycle(&mut self, bid: u16) {
        self.write_entry(bid);
        self.publish();
    }

    /// The first `len` bytes of buffer `bid`.
    ///
    /// # Safety
    ///
    /// A completion named `bid` and reported `len` bytes, and `bid` has not been recycled
    /// since (so the kernel neither owns nor writes it).
    pub(super) unsafe fn filled(&self, bid: u16, len: usize) -> &[u8] {
        assert!(bid < self.count && len <= self.buf_bytes as usize);
        let offset = usize::from(bid) * self.buf_bytes as usize;
        // SAFETY: the range is inside the allocation (checked above) and initialised by the
        // kernel (the caller's contract); nothing writes it while the slice lives.
        unsafe { std::slice::from_raw_parts(self.data.as_ptr().add(offset), len) }
    }

    /// Frees the memory. Call only when the kernel no longer knows the ring (never
    /// registered, or unregistered) and no receive is in flight.
    pub(super) fn free(&mut self) {
        if mem::replace(&mut self.freed, true) {
            return;
        }
        // SAFETY: both pointers came from `alloc` with these layouts and are freed once
        // (`freed` guards); the caller guarantees the kernel is done with them.
        unsafe {
            alloc::dealloc(self.entries.as_ptr().cast(), self.entries_layout);
            alloc::dealloc(self.data.as_ptr(), self.data_layout);
        }
    }
}
