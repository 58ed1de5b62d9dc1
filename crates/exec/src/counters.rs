//! Per-worker event counters with memcached's names, summed on demand.
//!
//! Each worker thread owns one [`Counters`] and is its only writer, so an increment is a
//! relaxed load and store (no locked instruction on the request path); readers on other
//! threads (`stats`, `INFO`) sum relaxed loads. `stats reset` does not write other threads'
//! counters: it records the current totals as a baseline that later reports subtract.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

macro_rules! counters {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        /// One worker's counters (see the module docs for the writing rule). Aligned to
        /// a cache line pair so that no other worker's counters share a line with them
        /// (each worker's `Arc` is its own allocation, which malloc may place next to
        /// another's).
        #[derive(Debug, Default)]
        #[repr(align(128))]
        pub struct Counters {
            $($(#[$doc])* pub $name: AtomicU64,)*
            /// Calls and latency by Redis command (`crate::latency`).
            pub command_stats: crate::latency::CommandStats,
        }

        /// A sum of [`Counters`].
        #[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
        pub struct Totals {
            $(pub $name: u64,)*
        }

        impl Counters {
            /// Adds this worker's values into `totals`.
            pub fn add_to(&self, totals: &mut Totals) {
                $(totals.$name = totals.$name.wrapping_add(self.$name.load(Relaxed));)*
            }
        }

        impl Totals {
            /// `self - baseline`, field by field (counters only grow, except gauges).
            pub fn since(&self, baseline: &Totals) -> Totals {
                Totals { $($name: self.$name.wrapping_sub(baseline.$name),)* }
            }

            /// (name, value) pairs in declaration order.
            pub fn fields(&self) -> [(&'static str, u64); counters!(@count $($name)*)] {
                [$((stringify!($name), self.$name),)*]
            }
        }
    };
    (@count $($name:ident)*) => { <[()]>::len(&[$(counters!(@unit $name)),*]) };
    (@unit $name:ident) => { () };
}

counters! {
    /// Connections open now (a gauge: increments and decrements).
    curr_connections,
    total_connections,
    /// Connections refused because `-c` was reached.
    rejected_connections,
    /// Connections closed for unsent output over the limit, or idle timeout.
    conns_cut_off,
    bytes_read,
    bytes_written,
    cmd_get,
    cmd_set,
    cmd_touch,
    cmd_flush,
    get_hits,
    get_misses,
    get_expired,
    get_flushed,
    delete_hits,
    delete_misses,
    incr_hits,
    incr_misses,
    decr_hits,
    decr_misses,
    cas_hits,
    cas_misses,
    cas_badval,
    touch_hits,
    touch_misses,
    /// `me` requests (memcached's `cmd_meta`, which counts only those).
    cmd_meta,
    /// Writes refused because the item is over `-I`.
    store_too_large,
    /// Writes refused because memory is full and evictions are off (`-M`).
    store_no_memory,
    /// Items stored by memcached storage commands (memcached's `total_items`: not incr,
    /// decr or touch, which memcached does in place).
    total_items,
    /// Every request or command executed, of either protocol.
    total_commands,
    /// Requests answered with an error.
    protocol_errors,
    /// Times a connection yielded to the others after `-R` requests or a threshold of
    /// output in one turn (memcached's `conn_yields`).
    conn_yields,
    /// Authentication attempts (SASL Auth/Step that completed, text `set` of a token).
    auth_cmds,
    /// Those that failed.
    auth_errors,
    /// Changes Redis commands made (Redis's `dirty`): one per keyspace event a write
    /// recorded (`resp::keyevents::Outcome`), so a write that changed nothing adds none.
    /// INFO's `rdb_changes_since_last_save` is the sum less its value at the last save.
    redis_changes,
    /// Connections closed by the idle timeout (memcached's `idle_kicks`): counted in
    /// [`crate::Core::idle_kicks`] by whichever thread closes them, never per worker.
    idle_kicks,
}

/// Adds `n` to a counter this thread owns (no atomic read-modify-write needed).
#[inline]
pub fn bump(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Relaxed).wrapping_add(n), Relaxed);
}

/// Subtracts `n` from a gauge this thread owns.
#[inline]
pub fn drop_by(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Relaxed).wrapping_sub(n), Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_and_subtracts_baseline() {
        let a = Counters::default();
        let b = Counters::default();
        bump(&a.cmd_get, 3);
        bump(&b.cmd_get, 4);
        bump(&b.curr_connections, 2);
        drop_by(&b.curr_connections, 1);
        let mut totals = Totals::default();
        a.add_to(&mut totals);
        b.add_to(&mut totals);
        assert_eq!(totals.cmd_get, 7);
        assert_eq!(totals.curr_connections, 1);
        let base = totals;
        bump(&a.cmd_get, 1);
        let mut now = Totals::default();
        a.add_to(&mut now);
        b.add_to(&mut now);
        assert_eq!(now.since(&base).cmd_get, 1);
        assert!(now.fields().iter().any(|&(name, v)| name == "cmd_get" && v == 8));
    }
}
