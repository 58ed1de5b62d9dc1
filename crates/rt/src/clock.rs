//! The loop's clock: CLOCK_MONOTONIC (what `std::time::Instant` reads on Linux) as whole
//! nanoseconds in a `u64`.
//!
//! A turn reads the clock twice, once when the wait returns and once before the next wait;
//! the busy time and the wait's timeout come from those two reads by plain subtraction.
//! With `Instant` that arithmetic (seconds and nanoseconds, normalised, checked) cost about
//! 170 instructions a turn, more than the two reads themselves: at one request a turn
//! (pipeline 1) that was 5% of a RESP GET (callgrind, `docs/benchmarks/matrix.md`).

use std::{ops::Add, time::Duration};

/// A reading of the monotonic clock, in nanoseconds since an arbitrary start (the kernel's
/// boot, so a `u64` lasts 584 years).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Mono(u64);

impl Mono {
    /// Reads the clock.
    #[inline]
    pub fn now() -> Mono {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC is always supported on
        // Linux, so the call cannot fail (it reads the vDSO, no system call).
        let ret = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        debug_assert_eq!(ret, 0);
        Mono(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    }

    /// Nanoseconds from `earlier` to `self`, 0 if `earlier` is later.
    #[inline]
    pub fn nanos_since(self, earlier: Mono) -> u64 {
        self.0.saturating_sub(earlier.0)
    }

    /// Time from `earlier` to `self`, zero if `earlier` is later.
    #[inline]
    pub fn since(self, earlier: Mono) -> Duration {
        Duration::from_nanos(self.nanos_since(earlier))
    }
}

impl Add<Duration> for Mono {
    type Output = Mono;

    #[inline]
    fn add(self, d: Duration) -> Mono {
        Mono(self.0.saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Agrees with `Instant`, which reads the same clock.
    #[test]
    fn tracks_instant() {
        let (i0, m0) = (std::time::Instant::now(), Mono::now());
        std::thread::sleep(Duration::from_millis(20));
        let (m1, i1) = (Mono::now(), std::time::Instant::now());
        let (mono, instant) = (m1.since(m0), i1.duration_since(i0));
        assert!(mono >= Duration::from_millis(20) && mono <= instant, "{mono:?} {instant:?}");
        assert_eq!(m0.since(m1), Duration::ZERO);
        assert!(m0 + Duration::from_millis(20) <= m1);
        assert_eq!((m0 + Duration::MAX).since(m0), Duration::from_nanos(u64::MAX - m0.0));
    }
}
