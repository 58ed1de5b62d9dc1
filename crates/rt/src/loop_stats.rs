//! What a loop tells about itself: time spent working between waits, and how many times it
//! woke. Written by the loop's thread only (a relaxed load and store, no locked
//! instruction); read by anyone (metrics). Utilisation is the busy time's rate; requests
//! per wake-up, the requests' rate over the wake-ups'.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

#[derive(Debug, Default)]
pub struct LoopStats {
    busy_ns: AtomicU64,
    wakeups: AtomicU64,
}

impl LoopStats {
    /// One turn of the loop: woken, then busy for `busy_ns` nanoseconds before waiting again.
    #[inline]
    pub(crate) fn note_turn(&self, busy_ns: u64) {
        self.busy_ns.store(self.busy_ns.load(Relaxed).wrapping_add(busy_ns), Relaxed);
        self.wakeups.store(self.wakeups.load(Relaxed).wrapping_add(1), Relaxed);
    }

    /// Nanoseconds spent working since the loop started.
    pub fn busy_ns(&self) -> u64 {
        self.busy_ns.load(Relaxed)
    }

    /// Turns of the loop (wake-ups) since it started.
    pub fn wakeups(&self) -> u64 {
        self.wakeups.load(Relaxed)
    }
}
