//! The memory limit at run time (memcached `cache_memlimit`): raised up to
//! `Config::memory_max_bytes` (the segments' mapping, their headers and the large items'
//! slots are sized for it at start, and take memory only as they are used: raising the
//! limit hands out more segment ids and slots), or lowered, in which case free segments give
//! their pages back and victims are evicted, in S3-FIFO order, until what is charged fits
//! under the new limit.

use std::sync::atomic::Ordering;

use super::{Clear, Store};
use crate::{
    segment::Victim,
    types::{ConfigError, WhenFull},
};

impl Store {
    /// Sets the memory limit to `bytes`: grows into more segments, or evicts down to it.
    /// Refused above [`Store::memory_limit_max`], and below what its index and the segments
    /// eviction needs take.
    pub fn set_memory_limit(&self, bytes: usize) -> Result<(), ConfigError> {
        let max = self.memory_limit_max();
        if bytes > max {
            return Err(ConfigError(format!("memory limit {bytes} is above the store's {max}")));
        }
        if bytes < self.memory_limit_min() {
            return Err(ConfigError(format!("memory limit {bytes} is too small")));
        }
        self.grow_to(bytes);
        self.recycled.limit_bytes.store(bytes, Ordering::Release);
        self.lock_ctl().set_limit_segments(bytes / self.seg_size);
        self.recycled.drop_spares(usize::MAX);
        self.shrink_to_limit();
        // The shrink's pins may have collected mappings past their grace period as spares.
        self.recycled.drop_spares(usize::MAX);
        Ok(())
    }

    /// What a full store does from now on (Redis `CONFIG SET maxmemory-policy`). A write
    /// already making room finishes its round under the old policy; the next round reads
    /// the new one. Refuse to evict is safe with no free segment left: eviction then
    /// evicts read items rather than copying them, as it does when copies find no room.
    pub fn set_when_full(&self, when_full: WhenFull) {
        self.when_full.store(when_full as u8, Ordering::Relaxed);
        self.forget_exhausted();
    }

    /// What a full store does now.
    pub fn when_full(&self) -> WhenFull {
        match self.when_full.load(Ordering::Relaxed) {
            0 => WhenFull::Evict,
            1 => WhenFull::EvictVolatile,
            _ => WhenFull::Refuse,
        }
    }

    /// The current memory limit.
    pub fn memory_limit(&self) -> usize {
        self.recycled.limit()
    }

    /// The most the memory limit may be raised to (`Config::memory_max_bytes`, in whole
    /// segments).
    pub fn memory_limit_max(&self) -> usize {
        self.segments.count_max() * self.seg_size
    }

    /// Makes segment ids and large slots enough for a limit of `bytes` available (never
    /// takes any back: a lowered limit is kept by the budget, not by fewer ids).
    fn grow_to(&self, bytes: usize) {
        let wanted = (bytes / self.seg_size).min(self.segments.count_max());
        let mut ctl = self.lock_ctl();
        let before = self.seg_count();
        if wanted > before {
            self.segments.init(before..wanted);
            ctl.free_unbacked.extend((before as u32..wanted as u32).rev());
            self.seg_count.store(wanted, Ordering::Release);
        }
        drop(ctl);
        self.recycled.grow_large_slots(super::large_slots_for(bytes, self.large_min));
    }

    /// The index as it is now, and eight segments (the smallest store `check_config` takes).
    fn memory_limit_min(&self) -> usize {
        let index_bytes = self.stats().index_bytes as usize;
        index_bytes + 8 * self.seg_size
    }

    /// Gives free segments' pages back, then evicts, until the charge fits the limit (or
    /// nothing is left to evict). Bounded as `make_room` is.
    fn shrink_to_limit(&self) {
        // Whether to compact or evict is decided on what the store holds now: the estimate
        // may be as old as the last write that refreshed it (with a clock that has not moved
        // since, any age), and a stale low one would copy live items instead of evicting.
        self.refresh_held();
        let rounds_max = self.eviction_rounds_max();
        for _ in 0..rounds_max {
            if self.unback_over_limit() {
                return;
            }
            let frees_before = self.recycled.frees.load(Ordering::Acquire);
            let now_ms = self.config.clock.now_ms();
            let mut coming = 0;
            for victim in self.take_dead(now_ms, 2) {
                coming += self.clear(victim, Clear::Reclaim).unwrap_or(0);
            }
            if coming == 0 {
                let Some(victim) = self.pick_victim() else { return };
                let mode = if self.compacting() { Clear::Compact } else { Clear::Evict };
                coming += self.clear(victim, mode).unwrap_or(0);
                if matches!(victim, Victim::Owner(..)) {
                    continue; // an owner's outside bytes are back at once
                }
            }
            if coming > 0 || self.memory_on_its_way() {
                self.wait_for_frees(frees_before);
            }
        }
    }

    /// Unbacks free segments while the charge is over the limit; true once it fits.
    fn unback_over_limit(&self) -> bool {
        let mut ctl = self.lock_ctl();
        loop {
            if self.recycled.used_bytes.load(Ordering::Acquire) <= self.recycled.limit() {
                return true;
            }
            let Some(unbacked) = self.unback_free_segment(&mut ctl) else { return false };
            self.recycled.uncharge(unbacked);
        }
    }
}
