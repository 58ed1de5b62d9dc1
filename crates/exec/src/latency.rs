//! Per-command calls and latency, per worker: exact call counts, and a log-linear latency
//! histogram of the commands timed.
//!
//! Timing costs two clock reads (measured here: about 40 ns together on this VM, 2-4% of a
//! GET's server CPU), so not every command is timed: every command that Redis does not flag
//! `fast` (the ones whose cost depends on their arguments, and the ones SLOWLOG exists
//! for), and one in [`FAST_SAMPLE`] of the fast ones. The histogram is therefore a sample
//! for fast commands (its `_count` says how many were timed) and whole for the others.
//!
//! Buckets: powers of two of microseconds from 1 µs to 2^23 µs (8.4 s), then +Inf.
//! Each worker writes its own [`CommandStats`] (relaxed load and store, no locked
//! instruction); a scrape sums them.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// One fast command in this many is timed.
pub const FAST_SAMPLE: u64 = 16;
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
    timed: AtomicU64,
    sum_ns: AtomicU64,
    buckets: [AtomicU64; BUCKETS],
}

/// One worker's figures, by command (the index of `proto_resp::commands::all_commands`).
#[derive(Debug)]
pub struct CommandStats {
    entries: Box<[Entry]>,
    /// Counts fast commands, to time one in [`FAST_SAMPLE`].
    fast_seen: AtomicU64,
}

impl Default for CommandStats {
    fn default() -> Self {
        let count = proto_resp::commands::command_count();
        CommandStats {
            entries: (0..count).map(|_| Entry::default()).collect(),
            fast_seen: AtomicU64::new(0),
        }
    }
}

fn bump(counter: &AtomicU64, by: u64) {
    counter.store(counter.load(Relaxed).wrapping_add(by), Relaxed);
}

impl CommandStats {
    /// Counts a call of command `index`; true if it should be timed.
    pub fn call(&self, index: usize, fast: bool) -> bool {
        bump(&self.entries[index].calls, 1);
        if !fast {
            return true;
        }
        let seen = self.fast_seen.load(Relaxed).wrapping_add(1);
        self.fast_seen.store(seen, Relaxed);
        seen.is_multiple_of(FAST_SAMPLE)
    }

    /// Records a timed call's duration.
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
    pub timed: u64,
    pub sum_ns: u64,
    /// Per bucket (not cumulative); the last is +Inf.
    pub buckets: Vec<u64>,
}

/// Sums every worker's figures, by command index; commands never called are left out.
pub fn summarize<'a>(workers: impl Iterator<Item = &'a CommandStats>) -> Vec<(usize, Summary)> {
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
            sum.timed += entry.timed.load(Relaxed);
            sum.sum_ns += entry.sum_ns.load(Relaxed);
            for (total, bucket) in sum.buckets.iter_mut().zip(entry.buckets.iter()) {
                *total += bucket.load(Relaxed);
            }
        }
    }
    sums.into_iter().enumerate().filter(|(_, s)| s.calls > 0).collect()
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
    fn fast_commands_are_sampled_and_others_all_timed() {
        let stats = CommandStats::default();
        let timed_fast = (0..160).filter(|_| stats.call(0, true)).count();
        let timed_slow = (0..10).filter(|_| stats.call(1, false)).count();
        assert_eq!((timed_fast, timed_slow), (10, 10));
        stats.record(1, 5_000);
        let summary = summarize([&stats].into_iter());
        assert_eq!(summary[0].1.calls, 160);
        assert_eq!((summary[1].1.calls, summary[1].1.timed, summary[1].1.buckets[3]), (10, 1, 1));
    }
}
