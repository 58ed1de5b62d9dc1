//! The memory limit at run time (memcached `cache_memlimit`): raised up to the size the
//! store was built with (its segments' mapping and tables are sized then), or lowered, in
//! which case free segments give their pages back and victims are evicted, in S3-FIFO
//! order, until what is charged fits under the new limit.

use std::sync::atomic::Ordering;

use super::{Clear, Store};
use crate::types::ConfigError;

impl Store {
    /// Sets the memory limit to `bytes` and evicts down to it. Refused above the limit the
    /// store was built with, and below what its index and the segments eviction needs take.
    pub fn set_memory_limit(&self, bytes: usize) -> Result<(), ConfigError> {
        if bytes > self.config.memory_bytes {
            return Err(ConfigError(format!(
                "memory limit {bytes} is above the {} the store was built with",
                self.config.memory_bytes
            )));
        }
        if bytes < self.memory_limit_min() {
            return Err(ConfigError(format!("memory limit {bytes} is too small")));
        }
        self.recycled.limit_bytes.store(bytes, Ordering::Release);
        self.shrink_to_limit();
        Ok(())
    }

    /// The current memory limit.
    pub fn memory_limit(&self) -> usize {
        self.recycled.limit()
    }

    /// The index as it is now, and eight segments (the smallest store `check_config` takes).
    fn memory_limit_min(&self) -> usize {
        let index_bytes = self.stats().index_bytes as usize;
        index_bytes + 8 * self.seg_size
    }

    /// Gives free segments' pages back, then evicts, until the charge fits the limit (or
    /// nothing is left to evict). Bounded as `make_room` is.
    fn shrink_to_limit(&self) {
        let rounds_max = 4 * (self.seg_count + self.recycled.large.len()) + 64;
        for _ in 0..rounds_max {
            if self.unback_over_limit() {
                return;
            }
            let frees_before = self.recycled.frees.load(Ordering::Acquire);
            let now_ms = self.config.clock.now_ms();
            let mut coming = 0;
            for victim in self.take_dead(now_ms, 2) {
                coming += self.clear(victim, Clear::Reclaim);
            }
            if coming == 0 {
                let Some(victim) = self.pick_victim() else { return };
                coming += self.clear(victim, Clear::Evict);
            }
            if coming > 0 || self.memory_on_its_way() {
                self.wait_for_frees(frees_before);
            }
        }
    }

    /// Unbacks free segments while the charge is over the limit; true once it fits.
    fn unback_over_limit(&self) -> bool {
        let mut ctl = self.ctl.lock();
        loop {
            if self.recycled.used_bytes.load(Ordering::Acquire) <= self.recycled.limit() {
                return true;
            }
            if !self.unback_free_segment(&mut ctl) {
                return false;
            }
            self.recycled.uncharge(self.seg_size);
        }
    }
}
