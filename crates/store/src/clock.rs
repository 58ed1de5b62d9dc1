//! Time as the store sees it: milliseconds since the Unix epoch, injectable for tests.

use std::{
    cell::Cell,
    sync::atomic::{AtomicU64, Ordering},
    time::{SystemTime, UNIX_EPOCH},
};

/// A source of the current time in Unix milliseconds. Expiry and delayed flush read it; tests
/// hand the store a [`ManualClock`] so that expiry is tested without sleeping.
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> u64;
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    /// The time a [`FrozenClock`] on this thread holds, else the wall clock.
    #[inline]
    fn now_ms(&self) -> u64 {
        match FROZEN_MS.get() {
            0 => wall_now_ms(),
            frozen => frozen,
        }
    }
}

thread_local! {
    /// The time the innermost live [`FrozenClock`] of this thread took; 0: none.
    static FROZEN_MS: Cell<u64> = const { Cell::new(0) };
}

/// Holds [`SystemClock`] still on this thread while it lives: every read meanwhile returns
/// the time taken when it was made, as Redis caches its clock for a command and memcached
/// keeps `current_time`. A worker makes one per batch of requests from one connection, so
/// a batch reads the wall clock once instead of once per request (at pipeline 32, the
/// `clock_gettime` calls were 7% of the server's CPU).
pub struct FrozenClock {
    /// What was frozen before this one (restored on drop).
    outer_ms: u64,
}

impl FrozenClock {
    pub fn now() -> FrozenClock {
        FrozenClock { outer_ms: FROZEN_MS.replace(wall_now_ms()) }
    }
}

impl Drop for FrozenClock {
    fn drop(&mut self) {
        FROZEN_MS.set(self.outer_ms);
    }
}

/// `clock_gettime` directly, as `SystemTime::now().duration_since(UNIX_EPOCH)` cost about
/// 115 instructions more per call (callgrind, single gets). Same clock, same truncation to
/// milliseconds.
fn wall_now_ms() -> u64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid, writable timespec; CLOCK_REALTIME always exists.
    let failed = unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) } != 0;
    if failed || now.tv_sec < 0 {
        return system_now_ms();
    }
    (now.tv_sec as u64) * 1000 + (now.tv_nsec as u64) / 1_000_000
}

/// The wall clock through std, for the case the direct read cannot serve.
fn system_now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// A clock that moves only when told to.
#[derive(Debug)]
pub struct ManualClock {
    now_ms: AtomicU64,
}

impl ManualClock {
    pub fn new(now_ms: u64) -> Self {
        Self { now_ms: AtomicU64::new(now_ms) }
    }

    pub fn set_ms(&self, now_ms: u64) {
        self.now_ms.store(now_ms, Ordering::SeqCst);
    }

    pub fn advance_ms(&self, delta_ms: u64) {
        self.now_ms.fetch_add(delta_ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.now_ms.load(Ordering::SeqCst)
    }
}

impl<C: Clock + ?Sized> Clock for std::sync::Arc<C> {
    fn now_ms(&self) -> u64 {
        (**self).now_ms()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Goal: while a FrozenClock lives, SystemClock returns the time it took; nested ones
    // restore the outer time, and the wall clock returns once the last is dropped.
    #[test]
    fn frozen_clock_holds_the_time_on_its_thread() {
        let outer = FrozenClock::now();
        let frozen = SystemClock.now_ms();
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert_eq!(SystemClock.now_ms(), frozen);
        let other_thread = std::thread::spawn(|| SystemClock.now_ms()).join().unwrap();
        assert!(other_thread >= frozen + 5, "another thread reads the wall clock");
        {
            let _inner = FrozenClock::now();
            assert!(SystemClock.now_ms() >= frozen + 5);
        }
        assert_eq!(SystemClock.now_ms(), frozen);
        drop(outer);
        assert!(SystemClock.now_ms() >= frozen + 5);
    }

    // Goal: the direct clock read agrees with std's wall clock to the millisecond.
    #[test]
    fn system_clock_matches_std() {
        let before = system_now_ms();
        let now = SystemClock.now_ms();
        let after = system_now_ms();
        assert!(before <= now && now <= after, "{before} <= {now} <= {after}");
    }
}
