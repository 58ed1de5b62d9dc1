//! Counters and latencies of a run, kept per thread and merged: per interval for the live
//! line, in total for the summary.

use crate::{
    client::ErrorKind,
    histogram::{self, Histogram},
};

/// Counts of completed requests and what they found. All plain sums, so merging is adding.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Counts {
    /// Get requests completed (a multiget is one request).
    pub gets: u64,
    /// Keys asked for by those gets.
    pub get_keys: u64,
    pub sets: u64,
    pub hits: u64,
    pub misses: u64,
    /// Values that no writer could have produced (also counted in `misses`).
    pub corrupt: u64,
    /// Error replies and failures, indexed by [`ErrorKind::index`].
    pub errors: [u64; ErrorKind::ALL.len()],
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Redis Cluster redirects followed (not errors): -MOVED and -ASK replies.
    pub moved: u64,
    pub ask: u64,
}

impl Counts {
    pub fn requests(&self) -> u64 {
        self.gets + self.sets
    }

    pub fn errors_total(&self) -> u64 {
        self.errors.iter().sum()
    }

    pub fn error(&self, kind: ErrorKind) -> u64 {
        self.errors[kind.index()]
    }

    /// Hits over keys asked for; `None` when nothing was asked.
    pub fn hit_ratio(&self) -> Option<f64> {
        let asked = self.hits + self.misses;
        (asked > 0).then(|| self.hits as f64 / asked as f64)
    }

    pub fn add(&mut self, other: &Counts) {
        self.gets += other.gets;
        self.get_keys += other.get_keys;
        self.sets += other.sets;
        self.hits += other.hits;
        self.misses += other.misses;
        self.corrupt += other.corrupt;
        for (mine, theirs) in self.errors.iter_mut().zip(other.errors) {
            *mine += theirs;
        }
        self.bytes_sent += other.bytes_sent;
        self.bytes_received += other.bytes_received;
        self.moved += other.moved;
        self.ask += other.ask;
    }
}

/// Counts plus the latency histogram (ns).
#[derive(Debug, Clone)]
pub struct Stats {
    pub counts: Counts,
    pub latency_ns: Histogram,
}

impl Default for Stats {
    fn default() -> Self {
        Stats { counts: Counts::default(), latency_ns: histogram::latency_ns() }
    }
}

impl Stats {
    pub fn merge(&mut self, other: &Stats) {
        self.counts.add(&other.counts);
        histogram::add(&mut self.latency_ns, &other.latency_ns);
    }

    pub fn clear(&mut self) {
        self.counts = Counts::default();
        self.latency_ns.reset();
    }
}
