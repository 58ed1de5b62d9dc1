//! Counting the writes a request makes to memory that other threads use: atomic
//! read-modify-writes, locks and stores, by site. With the cargo feature
//! `count-shared-writes` each site bumps a thread-local counter; without it `note` is empty
//! and compiles away. Tests (tests/shared_writes.rs) assert the counts per operation, so
//! that a change that adds a shared write to the get path fails a test rather than a
//! benchmark on a many-core machine.
//!
//! A site is *shared* when other worker threads write or read its cache line as part of
//! their own requests, so that the write costs a coherence transfer when two cores work at
//! once. It is *owned* when only this thread writes the line on the request path: the epoch
//! participant record (others read it once per 128 of their pins), and the writer line of
//! the active segment of this thread's write shard (one shard per thread, up to 8).

/// Where a write happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Site {
    /// A key's stripe lock taken by a write (parking_lot: a CAS to lock, one to unlock);
    /// the stripe's counters share its line and are written under it.
    StripeLock,
    /// A stripe lock that another thread held: the writer had to wait.
    StripeWait,
    /// The segment-list lock: segment turnover, eviction, reclaim (not per request).
    CtlLock,
    /// The segment-list lock held by another thread: a wait.
    CtlWait,
    /// CAS of an empty index slot to a new key's entry.
    IndexClaim,
    /// Store of a new entry over a key's slot (overwrite), or of 0 (delete).
    IndexStore,
    /// The sub-table's entry count (a new key, a removal).
    IndexCount,
    /// CAS raising an entry's access frequency: the first three reads of each item version.
    IndexFreq,
    /// The item's access stamp: the second read of each item version.
    AccessStamp,
    /// `inflight` add and sub, `write_offset` add, `used_end` max on the active segment's
    /// writer line (owned: the thread's write shard).
    SegAppend,
    /// The active segment's latest expiry raised, or its earliest lowered (owned, as
    /// `SegAppend`).
    SegMaxExpiry,
    /// The store-wide sequence: a segment opened, a large item, a write that expires at once.
    Seq,
    /// The memory budget: charge or uncharge.
    Budget,
    /// An epoch pin: a SeqCst CAS on this thread's participant record (owned); every 128th
    /// pin of a thread also scans all participants and may advance the global epoch.
    EpochPin,
    /// A delayed flush come due, claimed by this thread.
    FlushDue,
}

/// The number of sites.
pub const SITES: usize = Site::FlushDue as usize + 1;

/// Every site, in order.
pub const ALL: [Site; SITES] = [
    Site::StripeLock,
    Site::StripeWait,
    Site::CtlLock,
    Site::CtlWait,
    Site::IndexClaim,
    Site::IndexStore,
    Site::IndexCount,
    Site::IndexFreq,
    Site::AccessStamp,
    Site::SegAppend,
    Site::SegMaxExpiry,
    Site::Seq,
    Site::Budget,
    Site::EpochPin,
    Site::FlushDue,
];

impl Site {
    /// Whether other workers' requests use the line too (see the module doc). Waits are
    /// events, not writes.
    pub fn is_shared(self) -> bool {
        !matches!(
            self,
            Site::StripeWait
                | Site::CtlWait
                | Site::SegAppend
                | Site::SegMaxExpiry
                | Site::EpochPin
        )
    }
}

/// Counts by site.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts([u64; SITES]);

impl Counts {
    pub fn get(&self, site: Site) -> u64 {
        self.0[site as usize]
    }

    /// Writes to shared lines (locks counted once each).
    pub fn shared(&self) -> u64 {
        ALL.iter().filter(|s| s.is_shared()).map(|&s| self.get(s)).sum()
    }

    /// The sites counted, as `Site=n` pairs.
    pub fn nonzero(&self) -> Vec<(Site, u64)> {
        ALL.iter().map(|&s| (s, self.get(s))).filter(|&(_, n)| n > 0).collect()
    }

    pub fn add(&mut self, other: &Counts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }
}

#[cfg(feature = "count-shared-writes")]
thread_local! {
    static COUNTS: std::cell::Cell<Counts> = const { std::cell::Cell::new(Counts([0; SITES])) };
}

/// Counts one write at `site` on this thread.
#[inline(always)]
pub(crate) fn note(site: Site) {
    #[cfg(feature = "count-shared-writes")]
    COUNTS.with(|c| {
        let mut counts = c.get();
        counts.0[site as usize] += 1;
        c.set(counts);
    });
    #[cfg(not(feature = "count-shared-writes"))]
    let _ = site;
}

/// This thread's counts since the last `take`, reset to zero.
#[cfg(feature = "count-shared-writes")]
pub fn take() -> Counts {
    COUNTS.with(|c| c.replace(Counts::default()))
}

/// Locks `mutex`, counting the lock at `site` and, with the feature, a wait at `wait` when
/// another thread held it.
#[inline(always)]
pub(crate) fn lock<T>(
    mutex: &parking_lot::Mutex<T>,
    site: Site,
    wait: Site,
) -> parking_lot::MutexGuard<'_, T> {
    note(site);
    #[cfg(feature = "count-shared-writes")]
    if let Some(guard) = mutex.try_lock() {
        return guard;
    }
    #[cfg(feature = "count-shared-writes")]
    note(wait);
    #[cfg(not(feature = "count-shared-writes"))]
    let _ = wait;
    mutex.lock()
}

/// Pins the epoch, counting the pin.
#[inline(always)]
pub(crate) fn pin() -> crossbeam_epoch::Guard {
    note(Site::EpochPin);
    crossbeam_epoch::pin()
}
