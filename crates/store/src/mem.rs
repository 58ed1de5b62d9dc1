//! Anonymous memory mappings: the only way the store takes memory that it must also be able
//! to give back to the kernel exactly (segments, index tables and large items).

use std::{io, ptr::NonNull};

/// An anonymous, private, zero-filled mapping. Pages become resident when first touched.
pub(crate) struct Region {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: Region is a plain owned allocation; sharing it is safe because all access goes
// through raw pointers whose synchronisation is the caller's (atomics and the epoch).
unsafe impl Send for Region {}
// SAFETY: as above.
unsafe impl Sync for Region {}

impl Region {
    pub(crate) fn new(len: usize) -> io::Result<Region> {
        Self::map(len, 0)
    }

    /// A mapping whose pages are all made resident now, in one call, for a caller that
    /// writes the whole of it at once (a large item): touching 4 KiB pages one fault at a
    /// time was a fifth of the server's CPU on appends to 72 KB items.
    pub(crate) fn new_populated(len: usize) -> io::Result<Region> {
        Self::map(len, if cfg!(miri) { 0 } else { libc::MAP_POPULATE })
    }

    fn map(len: usize, extra_flags: libc::c_int) -> io::Result<Region> {
        assert!(len > 0);
        // Miri models only plain private anonymous mappings.
        let no_reserve = if cfg!(miri) { 0 } else { libc::MAP_NORESERVE };
        // SAFETY: an anonymous mapping with no address hint has no preconditions.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | no_reserve | extra_flags,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(ptr.cast::<u8>()).expect("mmap returned null on success");
        Ok(Region { ptr, len })
    }

    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Asks the CPU to start loading the cache line at `offset`, for a read soon after
    /// (nothing when `offset` is past the end).
    #[inline]
    pub(crate) fn prefetch(&self, offset: usize) {
        if offset >= self.len {
            return;
        }
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        // SAFETY: a prefetch is a hint: it reads nothing the program sees and cannot fault;
        // the address lies inside the mapping anyway (checked above).
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(self.ptr().add(offset).cast::<i8>());
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The whole mapping as bytes, to fill it before anyone else can see it: `&mut self`
    /// is the proof that nobody else reads or writes it.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `ptr` and `len` describe this mapping, readable and writable, and
        // `&mut self` gives exclusive access to it for the borrow's lifetime.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Makes the pages of `[offset, offset + len)` (widened to whole pages) resident now, in
    /// one call, for a range about to be written: faulting them in one at a time as a write
    /// crosses each was 7% of the server's CPU on 10 KB sets into segments not used before.
    /// Changes no byte. On a kernel without `MADV_POPULATE_WRITE` (before 5.14) nothing
    /// happens and the pages fault in as before.
    pub(crate) fn populate(&self, offset: usize, len: usize) {
        const PAGE: usize = 4096;
        let end = offset.saturating_add(len).next_multiple_of(PAGE).min(self.len);
        let start = offset - offset % PAGE;
        if cfg!(miri) || start >= end {
            return;
        }
        // SAFETY: the range lies inside the mapping (clamped above) and starts on a page
        // boundary (the mapping does); populating for write only faults pages in as a write
        // would, without changing what any byte reads, so readers and writers of the range
        // on other threads are unaffected.
        unsafe {
            libc::madvise(self.ptr().add(start).cast(), end - start, libc::MADV_POPULATE_WRITE)
        };
    }

    /// Gives the pages of `[offset, offset + len)` back to the kernel; they read as zero after.
    ///
    /// # Safety
    /// Nobody may be reading or writing the range: the caller owns it exclusively.
    pub(crate) unsafe fn release(&self, offset: usize, len: usize) {
        assert!(offset.checked_add(len).is_some_and(|end| end <= self.len));
        if cfg!(miri) {
            // Miri has no madvise; zeroing has the same effect on what the range reads as.
            // SAFETY: the range lies inside the mapping (asserted) and the caller owns it.
            unsafe { std::ptr::write_bytes(self.ptr().add(offset), 0, len) };
            return;
        }
        // SAFETY: the range lies inside the mapping (asserted) and the caller owns it.
        let rc = unsafe { libc::madvise(self.ptr().add(offset).cast(), len, libc::MADV_DONTNEED) };
        debug_assert_eq!(rc, 0, "madvise failed: {}", io::Error::last_os_error());
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: ptr/len came from a successful mmap and are unmapped exactly once.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// Asks the CPU to start loading the cache line at `address`, which may be any address: a
/// prefetch reads nothing the program sees and cannot fault, so a stale or wrong address
/// costs a useless line at most.
#[inline]
pub(crate) fn prefetch_address(address: usize) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: a prefetch is a hint that never faults and dereferences nothing (the address
    // need not be mapped); SSE is part of x86_64.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(address as *const i8);
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = address;
}

/// Types whose all-zero bit pattern is a valid value: atomics, and structs of them.
///
/// # Safety
/// Every field must be valid as zero bytes, and the type must need no drop.
pub(crate) unsafe trait ZeroValid: Sync {}

// SAFETY: `AtomicPtr` has the bit validity of `*mut T`; zero is the null pointer.
unsafe impl<T> ZeroValid for std::sync::atomic::AtomicPtr<T> {}

/// A fixed-length array of `T` in its own zero-filled mapping: pages become resident only
/// where an element is written, so an array sized for the most the store may grow to costs
/// address space, not memory, until it is used.
pub(crate) struct ZeroedArray<T: ZeroValid> {
    region: Region,
    len: usize,
    _elements: std::marker::PhantomData<T>,
}

impl<T: ZeroValid> ZeroedArray<T> {
    pub(crate) fn new(len: usize) -> io::Result<ZeroedArray<T>> {
        let bytes = len.max(1).checked_mul(std::mem::size_of::<T>().max(1));
        let bytes = bytes.ok_or_else(|| io::Error::from(io::ErrorKind::OutOfMemory))?;
        assert!(std::mem::align_of::<T>() <= 4096, "a mapping is page-aligned");
        Ok(ZeroedArray { region: Region::new(bytes)?, len, _elements: std::marker::PhantomData })
    }
}

impl<T: ZeroValid> std::ops::Deref for ZeroedArray<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        // SAFETY: the mapping holds `len` elements' bytes, page-aligned (asserted at least as
        // strict as T's alignment), zero-filled or written only through `&T` (T is Sync
        // interior-mutable state), and zero is a valid T (`ZeroValid`); it lives as `self`.
        unsafe { std::slice::from_raw_parts(self.region.ptr().cast::<T>(), self.len) }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicPtr, Ordering};

    use super::ZeroedArray;

    // Goal: a zeroed array reads as null pointers everywhere, and what is stored through
    // its elements is read back (the view over the mapping is sound under miri).
    #[test]
    fn zeroed_array_reads_zero_and_keeps_writes() {
        let array: ZeroedArray<AtomicPtr<u64>> = ZeroedArray::new(1000).expect("map");
        assert_eq!(array.len(), 1000);
        assert!(array.iter().all(|p| p.load(Ordering::Relaxed).is_null()));
        let boxed = Box::into_raw(Box::new(7u64));
        array[999].store(boxed, Ordering::Release);
        let read = array[999].load(Ordering::Acquire);
        // SAFETY: the pointer came from `Box::into_raw` above and is freed once, here.
        assert_eq!(*unsafe { Box::from_raw(read) }, 7);
    }
}
