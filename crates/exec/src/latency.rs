//! Per-command calls and latency, per worker: exact call counts, and a log-linear latency
//! histogram of a sample of them.
//!
//! Cost is what decides the design (measured with `scripts/metrics_overhead.py`, figures in
//! docs/ARCHITECTURE.md): a clock read costs about 8 ns here (the CPU's time-stamp counter,
//! through quanta, where it is invariant; 20 ns for `Instant::now`), and a pipelined GET
//! about 530 ns of server CPU, so timing every command would cost 2-4%. So:
//! - every call is counted (a relaxed load and store of the worker's own counter);
//! - every [`SAMPLE`]-th call of each command is timed and goes to the histogram (per
//!   command, so a repeating pipeline cannot hide one command from the sample);
//! - a command Redis does not flag `fast` (its cost depends on its arguments) is also timed
//!   whenever SLOWLOG or the latency monitor is on, so that a slow one is always logged; a
//!   fast command reaches them only when sampled, or when the slow log takes every command
//!   (`slowlog-log-slower-than 0`, which clients set to see each command logged).
//!
//! Buckets: powers of two of microseconds from 1 µs to 2^23 µs (8.4 s), then +Inf.
//! Each worker writes its own [`CommandStats`] (relaxed load and store, no locked
//! instruction); a scrape sums them.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// One call in this many of each command is timed for the histogram.
pub const SAMPLE: u64 = 64;
/// Upper bounds of the buckets, in microseconds (the last bucket is +Inf).
pub const BUCKET_BOUNDS_US: [u64; 24] = {
    let mut bounds = [0; 24];
    let mut at = 0;
    while at < 24 {
        bounds[at] = 1 << at;
        at += 1;
    }
    bounds
};
const BUCKETS: usize = BUCKET_BOUNDS_US.len() + 1;

#[derive(Debug, Default)]
struct Entry {
    calls: AtomicU64,
    /// Calls whose reply was an error (Redis's `failed_calls`).
    failed: AtomicU64,
    /// Calls refused before they ran: arity, ACL, cluster (Redis's `rejected_calls`).
    rejected: AtomicU64,
    timed: AtomicU64,
    sum_ns: AtomicU64,
    buckets: [AtomicU64; BUCKETS],
}

/// One worker's figures, by command or subcommand (`proto_resp::commands::stat_slot`).
#[derive(Debug)]
pub struct CommandStats {
    entries: Box<[Entry]>,
}

impl Default for CommandStats {
    fn default() -> Self {
        let count = proto_resp::commands::stat_slots();
        CommandStats { entries: (0..count).map(|_| Entry::default()).collect() }
    }
}

/// The clock commands are timed with (calibrated on first use: `Shared::new` uses it).
fn clock() -> &'static quanta::Clock {
    static CLOCK: std::sync::OnceLock<quanta::Clock> = std::sync::OnceLock::new();
    CLOCK.get_or_init(quanta::Clock::new)
}

/// Calibrates the clock now rather than at the first command timed.
pub fn calibrate() {
    clock();
}

/// A reading of the clock, for [`nanos_since`].
pub fn now() -> u64 {
    clock().raw()
}

/// Nanoseconds from a reading of [`now`] to now.
pub fn nanos_since(start: u64) -> u64 {
    let clock = clock();
    clock.delta_as_nanos(start, clock.raw())
}

fn bump(counter: &AtomicU64, by: u64) {
    counter.store(counter.load(Relaxed).wrapping_add(by), Relaxed);
}

impl CommandStats {
    /// Counts a call of command `index`; true when it is one the histogram samples.
    #[inline]
    pub fn count(&self, index: usize) -> bool {
        let sampled = self.next_is_sampled(index);
        bump(&self.entries[index].calls, 1);
        sampled
    }

    /// Whether the next call of command `index` is one the histogram samples; a command
    /// asks before it runs and is counted ([`CommandStats::count`]) once it ran, so that
    /// INFO does not count itself and CONFIG RESETSTAT counts itself, as in Redis.
    #[inline]
    pub fn next_is_sampled(&self, index: usize) -> bool {
        self.entries[index].calls.load(Relaxed).wrapping_add(1).is_multiple_of(SAMPLE)
    }

    /// Counts a call of command `index` once it ran, and whether it replied with an error.
    #[inline]
    pub fn count_call(&self, index: usize, failed: bool) {
        self.count(index);
        if failed {
            self.fail(index);
        }
    }

    /// Counts a call of command `index` that replied with an error.
    #[inline]
    pub fn fail(&self, index: usize) {
        bump(&self.entries[index].failed, 1);
    }

    /// Counts a call of command `index` refused before it ran.
    pub fn reject(&self, index: usize) {
        bump(&self.entries[index].rejected, 1);
    }

    /// Records a call's duration.
    pub fn record(&self, index: usize, nanos: u64) {
        let entry = &self.entries[index];
        bump(&entry.timed, 1);
        bump(&entry.sum_ns, nanos);
        bump(&entry.buckets[bucket_of(nanos)], 1);
    }
}

fn bucket_of(nanos: u64) -> usize {
    let micros = nanos.div_ceil(1000).max(1);
    // The first bound at or above `micros`: 1 -> 0, 2 -> 1, 3..=4 -> 2, ...
    let at = (u64::BITS - (micros - 1).leading_zeros()) as usize;
    at.min(BUCKETS - 1)
}

/// All workers' figures for one command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    pub calls: u64,
    pub failed: u64,
    pub rejected: u64,
    pub timed: u64,
    pub sum_ns: u64,
    /// Per bucket (not cumulative); the last is +Inf.
    pub buckets: Vec<u64>,
}

/// Sums every worker's figures, by command index; commands never called are left out.
pub fn summarize<'a>(workers: impl Iterator<Item = &'a CommandStats>) -> Vec<(usize, Summary)> {
    let sums = summarize_all(workers);
    sums.into_iter().enumerate().filter(|(_, s)| s.calls > 0).collect()
}

impl Summary {
    /// What was counted after `baseline` was taken (CONFIG RESETSTAT), figure by figure.
    pub fn since(&self, baseline: &Summary) -> Summary {
        let buckets = self
            .buckets
            .iter()
            .zip(baseline.buckets.iter().chain(std::iter::repeat(&0)))
            .map(|(now, then)| now.wrapping_sub(*then))
            .collect();
        Summary {
            calls: self.calls.wrapping_sub(baseline.calls),
            failed: self.failed.wrapping_sub(baseline.failed),
            rejected: self.rejected.wrapping_sub(baseline.rejected),
            timed: self.timed.wrapping_sub(baseline.timed),
            sum_ns: self.sum_ns.wrapping_sub(baseline.sum_ns),
            buckets,
        }
    }

    /// Estimated total microseconds of all calls: the sampled calls' mean times the calls
    /// (only one call in [`SAMPLE`] is timed; 0 until one was).
    pub fn estimated_usec(&self) -> u64 {
        if self.timed == 0 {
            return 0;
        }
        let mean_ns = self.sum_ns as f64 / self.timed as f64;
        (mean_ns * self.calls as f64 / 1000.0) as u64
    }
}

/// Sums every worker's figures, one entry per command index (empty without workers).
pub fn summarize_all<'a>(workers: impl Iterator<Item = &'a CommandStats>) -> Vec<Summary> {
    let mut sums: Vec<Summary> = Vec::new();
    for stats in workers {
        if sums.is_empty() {
            sums = vec![
                Summary { buckets: vec![0; BUCKETS], ..Summary::default() };
                stats.entries.len()
            ];
        }
        for (sum, entry) in sums.iter_mut().zip(stats.entries.iter()) {
            sum.calls += entry.calls.load(Relaxed);
            sum.failed += entry.failed.load(Relaxed);
            sum.rejected += entry.rejected.load(Relaxed);
            sum.timed += entry.timed.load(Relaxed);
            sum.sum_ns += entry.sum_ns.load(Relaxed);
            for (total, bucket) in sum.buckets.iter_mut().zip(entry.buckets.iter()) {
                *total += bucket.load(Relaxed);
            }
        }
    }
    sums
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_powers_of_two_of_microseconds() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(1_000), 0);
        assert_eq!(bucket_of(1_001), 1);
        assert_eq!(bucket_of(2_000), 1);
        assert_eq!(bucket_of(3_000), 2);
        assert_eq!(bucket_of(4_000), 2);
        assert_eq!(bucket_of(1_000_000), 10);
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn every_command_is_sampled_on_its_own() {
        let stats = CommandStats::default();
        // A pipeline that repeats 15 of one command and 1 of another samples both.
        let mut sampled = [0; 2];
        for _ in 0..SAMPLE * 2 {
            for _ in 0..15 {
                sampled[0] += usize::from(stats.count(0));
            }
            sampled[1] += usize::from(stats.count(1));
        }
        assert_eq!(sampled, [30, 2]);
        stats.record(1, 5_000);
        let start = now();
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert!(nanos_since(start) >= 4_000_000);
        let summary = summarize([&stats].into_iter());
        assert_eq!((summary[0].1.calls, summary[0].1.timed), (15 * 2 * SAMPLE, 0));
        assert_eq!(
            (summary[1].1.calls, summary[1].1.timed, summary[1].1.buckets[3]),
            (2 * SAMPLE, 1, 1)
        );
    }
}
