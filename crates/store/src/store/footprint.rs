//! Where the memory budget goes: the byte-by-byte account behind `metadata bytes per item`
//! (the `footprint` example prints it), so that a change to the index or the segments shows
//! in which part it moved.

use std::sync::atomic::Ordering;

use super::Store;
use crate::{segment::NONE, types::MemoryBreakdown};

impl Store {
    /// The memory budget by where it goes now. Reads every segment header, so it costs a
    /// walk over the segments: for reports, not for a request path.
    pub fn memory_breakdown(&self) -> MemoryBreakdown {
        let guard = crossbeam_epoch::pin();
        let index = self.index.breakdown(&guard);
        let mut out = MemoryBreakdown {
            limit_bytes: self.recycled.limit() as u64,
            charged_bytes: self.memory_used_bytes() as u64,
            segment_size_bytes: self.seg_size as u64,
            index_current_bytes: index.current_bytes as u64,
            index_current_slots: index.current_slots as u64,
            index_entries: index.entries as u64,
            index_old_bytes: index.old_bytes as u64,
            index_retiring_bytes: self.recycled.index_retiring_bytes.load(Ordering::Acquire) as u64,
            in_grace_bytes: self.recycled.in_grace_bytes.load(Ordering::Acquire) as u64,
            outside_bytes: self.recycled.outside_bytes.load(Ordering::Acquire) as u64,
            ..MemoryBreakdown::default()
        };
        let seg_count = self.seg_count();
        // false: free (no items); true: holds items or is being filled.
        let mut in_use = vec![true; seg_count];
        let ctl = self.lock_ctl();
        let freed = self.recycled.freed.lock().clone();
        for &id in ctl.free_resident.iter().chain(&freed) {
            in_use[id as usize] = false;
            out.segments_free_resident += 1;
        }
        for &id in &ctl.free_unbacked {
            in_use[id as usize] = false;
            out.segments_unbacked += 1;
        }
        drop(ctl);
        let active: Vec<u32> = self
            .active
            .iter()
            .map(|a| a.load(Ordering::Acquire))
            .filter(|&id| id != NONE)
            .collect();
        for (id, _) in in_use.iter().enumerate().filter(|(_, used)| **used) {
            let used_end =
                u64::from(self.segments.header(id as u32).used_end.load(Ordering::Acquire));
            // Charged and not written: a sealed segment's tail, the rest of an active one's
            // charge (charged as it fills: `Store::charge_ahead`).
            let charged = self.segments.header(id as u32).charged_bytes() as u64;
            let unfilled = charged.saturating_sub(used_end);
            if active.contains(&(id as u32)) {
                out.segments_active += 1;
                out.active_unfilled_bytes += unfilled;
            } else {
                out.segments_sealed += 1;
                out.sealed_tail_bytes += unfilled;
            }
            out.segment_filled_bytes += used_end;
        }
        out
    }
}
