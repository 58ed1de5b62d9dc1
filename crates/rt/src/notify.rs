//! Waking a loop from another thread: a [`Notifier`] makes the loop offer output to its
//! streaming connections at once, not only at its next tick (Redis pub/sub: a PUBLISH on
//! one worker reaches a subscriber that another worker's loop owns).
//!
//! ```text
//!   any thread                               the loop's thread
//!   push to the handler's mailbox
//!   notify(): pending false -> true? ──write──> eventfd readable ──> driver: drain the
//!             (already true: nothing)                counter, Event::Notified
//!                                            loop: take() (pending := false), then
//!                                                  Handler::stream for each streaming
//!                                                  connection, flushed in the same turn
//! ```
//!
//! One system call per wake, not per message: only the `notify` that flips `pending` from
//! false to true writes the eventfd; until the loop takes the wake, later calls cost one
//! atomic swap. Order is what makes this lossless. The driver drains the counter *before*
//! the loop clears `pending`, and the loop clears `pending` *before* it asks the handler
//! for output. A notify that lands between the drain and the clear finds `pending` true
//! and writes nothing, but its message was pushed before the swap that the loop's clear
//! reads (acquire/release on `pending`), so the stream calls that follow see it. A notify
//! after the clear writes again and costs one extra wake. None is lost.
//!
//! One notifier per loop: the loop that watches it drains its counter, so loops sharing
//! one would steal each other's wakes.

use std::{
    io,
    os::fd::{AsRawFd, OwnedFd, RawFd},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
};

use crate::sys;

/// Wakes one loop from any thread (see the module docs); cloning shares it. Give the loop
/// a clone in [`crate::LoopConfig::notifier`].
#[derive(Debug, Clone)]
pub struct Notifier {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Non-blocking; readable while a wake is pending.
    fd: OwnedFd,
    /// A wake was signalled and the loop has not taken it yet.
    pending: AtomicBool,
}

impl Notifier {
    /// A notifier with no wake pending (one eventfd).
    pub fn new() -> io::Result<Notifier> {
        let inner = Inner { fd: sys::eventfd()?, pending: AtomicBool::new(false) };
        Ok(Notifier { inner: Arc::new(inner) })
    }

    /// Has the loop offer output to its streaming connections soon (within microseconds
    /// while it sleeps). Call it after making the output available to the handler; many
    /// calls before the loop wakes cost one wake.
    pub fn notify(&self) {
        // A swap, not a load first: an RMW reads the latest value, so "already pending"
        // always means the loop's clear is still to come (and will see our message).
        if self.inner.pending.swap(true, Ordering::AcqRel) {
            return;
        }
        // An error here means a bad descriptor or an overflowing counter, neither possible
        // while the notifier lives and the loop drains it; the tick would still stream.
        let _ = sys::eventfd_add(self.inner.fd.as_raw_fd());
    }

    /// [`Notifier::notify`] from the loop's own thread, while its handler runs: the loop
    /// streams before the end of this turn, so no system call is needed (a PUBLISH to a
    /// subscriber on the publisher's own loop). Lossless as `notify` is: a remote notify
    /// that finds `pending` set was pushed before the loop's end-of-turn clear.
    pub fn notify_local(&self) {
        self.inner.pending.store(true, Ordering::Release);
    }

    /// The loop takes a wake (after the driver drained the counter): clears `pending` and
    /// returns whether one was pending. Call before asking the handler for output.
    ///
    /// The loop calls this every turn, so the common case (nothing pending) is a plain load,
    /// not a locked swap. A wake set after that load is not lost: a remote `notify` that
    /// sets `pending` writes the eventfd too, so the next wait reports it, and a
    /// `notify_local` runs on this thread before the load.
    pub(crate) fn take(&self) -> bool {
        self.inner.pending.load(Ordering::Acquire)
            && self.inner.pending.swap(false, Ordering::AcqRel)
    }

    /// Resets the counter, so that the eventfd reads as idle until the next wake (epoll's
    /// level-triggered readiness would otherwise report it every turn; io_uring's poll
    /// fires on wake-ups only, but draining keeps both the same).
    pub(crate) fn drain(&self) {
        sys::eventfd_drain(self.inner.fd.as_raw_fd());
    }

    /// The eventfd a driver watches for readability.
    pub(crate) fn fd(&self) -> RawFd {
        self.inner.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readable(fd: RawFd) -> bool {
        let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: `pfd` is valid for the whole call and the count passed is 1.
        let n = unsafe { libc::poll(&mut pfd, 1, 0) };
        n == 1 && pfd.revents & libc::POLLIN != 0
    }

    /// Many notifies make one pending wake; drain then take resets both the counter and
    /// the flag, and the next notify wakes again.
    #[test]
    fn one_wake_for_many_notifies() {
        let n = Notifier::new().unwrap();
        assert!(!readable(n.fd()));
        assert!(!n.take());
        for _ in 0..10 {
            n.clone().notify();
        }
        assert!(readable(n.fd()));
        let mut count = [0u8; 8];
        // SAFETY: `count` is valid for writes of 8 bytes for the whole call.
        let read = unsafe { libc::read(n.fd(), count.as_mut_ptr().cast(), 8) };
        assert_eq!((read, u64::from_ne_bytes(count)), (8, 1), "one write for ten notifies");
        assert!(n.take());
        assert!(!n.take());
        n.notify();
        assert!(readable(n.fd()));
        n.drain();
        assert!(!readable(n.fd()));
        assert!(n.take());
    }

    /// A notify between the drain and the take writes nothing, and the take reports it.
    #[test]
    fn notify_between_drain_and_take_is_taken() {
        let n = Notifier::new().unwrap();
        n.notify();
        n.drain();
        n.notify();
        assert!(!readable(n.fd()), "still pending: no second write");
        assert!(n.take());
        n.notify();
        assert!(readable(n.fd()), "after the take, a notify wakes again");
    }
}
