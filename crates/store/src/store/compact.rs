//! Compaction: making room in a store whose memory is mostly dead copies.
//!
//! Every rewrite (overwrite, append, a collection's change) writes a new copy and leaves the
//! old one as garbage in its segment until the segment is taken. Under churn the memory
//! fills with such copies while the live data stays small: 8 MiB live at -m 64 filled the
//! memory many times over, and S3-FIFO then evicted live items it found in the segments it
//! took (items never read, or read once and moved to main, are evicted at the queue's head),
//! although everything fitted eight times over. An evicting cache may drop what does not fit;
//! it must not drop what does.
//!
//! So while what the store holds is at most half the limit (`COMPACT_BELOW_*`), making room
//! takes segments in the same order but copies every live item forward, with its queue and
//! access count unchanged, and evicts nothing: the segments' dead bytes are what comes back.
//! A segment more than three quarters live is queued again as it is instead (copying it
//! would free little, and its copies would need nearly a whole free segment). With at most
//! half of the memory live, segments at the heads hold about half dead bytes or more, so a
//! segment of room costs about one segment of copying. Above the mark, eviction is S3-FIFO's.
//!
//! A kept item whose copy finds no free segment (eviction's reserve taken by another
//! thread's copies) is not evicted for it: the clear stops, the segment goes back to the
//! head of its queue, and the writer waits for the memory on its way back. Only when nothing
//! is on its way, and no other thread is clearing, is it evicted: nothing else would make
//! room.
//!
//! What the store holds is estimated from the stripes' counts (key and value bytes and
//! items, each item with its header and access stamp), memory owners keep outside and the
//! index, summed at most every `HELD_REFRESH_MS` by a writer that needs room (1024
//! uncontended locks, about 20 us) and on every `maintain`: no request writes anything for it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crossbeam_epoch::{self as epoch, Guard};

use super::Store;
use crate::{
    bytes,
    index::{HashParts, Location},
};

/// Compaction applies while held bytes are at most this share of the limit.
const COMPACT_BELOW_NUM: usize = 1;
const COMPACT_BELOW_DEN: usize = 2;
/// A segment is compacted only if at most this share of it is live; a fuller one is queued
/// again as it is (`worth_compacting`).
const COMPACT_LIVE_MAX_NUM: usize = 3;
const COMPACT_LIVE_MAX_DEN: usize = 4;
/// Bytes an item takes beyond its key and value: its header (2 to 20) and access stamp (2).
const ITEM_OVERHEAD_BYTES: usize = 12;
/// How many items ahead (guessed from the current one's length) a segment walk starts
/// loading headers.
const PREFETCH_ITEMS_AHEAD: usize = 3;
/// How old the estimate may be when a write that needs room reads it.
const HELD_REFRESH_MS: u64 = 10;

/// The estimate of what the store holds, and when it was made.
#[derive(Default)]
pub(super) struct Held {
    bytes: AtomicUsize,
    at_ms: AtomicU64,
}

impl Store {
    /// Whether making room should copy every live item forward instead of evicting: what the
    /// store holds is at most half its limit.
    pub(super) fn compacting(&self) -> bool {
        let held = self.held_bytes();
        held.saturating_mul(COMPACT_BELOW_DEN) <= self.recycled.limit() * COMPACT_BELOW_NUM
    }

    /// The estimate of held bytes, made again if older than `HELD_REFRESH_MS`. One thread
    /// refreshes it; the others read the one it replaces.
    pub(super) fn held_bytes(&self) -> usize {
        let now_ms = self.config.clock.now_ms();
        let at_ms = self.held.at_ms.load(Ordering::Acquire);
        let stale = now_ms.saturating_sub(at_ms) >= HELD_REFRESH_MS || at_ms == 0;
        if stale
            && self
                .held
                .at_ms
                .compare_exchange(at_ms, now_ms.max(1), Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            self.refresh_held();
        }
        self.held.bytes.load(Ordering::Acquire)
    }

    /// The last estimate of held bytes, as it is (no lock taken).
    pub(super) fn held_bytes_cached(&self) -> usize {
        self.held.bytes.load(Ordering::Acquire)
    }

    /// Sums what the store holds now: live items (of the current flush generation), with
    /// their overhead, memory owners keep outside, and the index.
    pub(super) fn refresh_held(&self) {
        let gen = self.flush_gen.load(Ordering::Acquire);
        let mut items_bytes = 0usize;
        for stripe in self.stripes.iter() {
            let (items, bytes) = stripe.0.lock().live(gen);
            let overhead = items.max(0) as usize * ITEM_OVERHEAD_BYTES;
            items_bytes += bytes.max(0) as usize + overhead;
        }
        let outside = self.recycled.outside_bytes.load(Ordering::Acquire);
        let (index_bytes, _) = self.index.size(&epoch::pin());
        self.held.bytes.store(items_bytes + outside + index_bytes, Ordering::Release);
    }
}

/// A segment being cleared, counted in `Store::clearing` while it lives.
pub(super) struct Clearing<'s>(&'s AtomicUsize);

impl Drop for Clearing<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Store {
    /// Counts this thread as clearing a segment until the value is dropped.
    pub(super) fn clearing(&self) -> Clearing<'_> {
        self.clearing.fetch_add(1, Ordering::AcqRel);
        Clearing(&self.clearing)
    }

    /// Whether another thread is clearing a segment (called while clearing one).
    pub(super) fn others_clearing(&self) -> bool {
        self.clearing.load(Ordering::Acquire) > 1
    }

    /// The live items of segment `id` (items in `[0, end)`), found lock-free: a reader's
    /// lookups, pipelined. Each item's index buckets load while the next item's header is
    /// read, and the header a few items on (guessed: items as long as this one) loads ahead:
    /// one miss after another on each header and each bucket was a fifth of the server's
    /// CPU on 9:1 sets of 1 KiB (perf). The list is a hint for the clear that follows,
    /// which checks each item again under its stripe lock; an item not live now cannot be
    /// again (the segment is sealed and its writers are done, so nothing is indexed here).
    pub(super) fn live_items(&self, id: u32, end: usize, guard: &Guard) -> LiveItems {
        let mut live = LiveItems::default();
        let mut behind: Option<(Location, HashParts, usize)> = None;
        let mut offset = 0;
        while offset < end {
            let location = Location { segment: id, offset: offset as u32 };
            let r = self.resolve(location, guard);
            let len = bytes::STAMP_BYTES + r.bytes.len();
            let ahead = offset.saturating_add(len.saturating_mul(PREFETCH_ITEMS_AHEAD));
            if ahead < end {
                self.segments.prefetch_item_head(id, ahead as u32);
            }
            let hash = HashParts::of(r.key());
            self.index.prefetch_buckets(hash, guard);
            if let Some(item) = behind.replace((location, hash, len)) {
                self.note_if_live(item, &mut live, guard);
            }
            offset += len;
        }
        if let Some(item) = behind {
            self.note_if_live(item, &mut live, guard);
        }
        live
    }

    fn note_if_live(
        &self,
        item: (Location, HashParts, usize),
        live: &mut LiveItems,
        guard: &Guard,
    ) {
        let (location, hash, len) = item;
        if self.index.find(hash, guard, |slot| slot.location() == location).is_some() {
            live.offsets.push(location.offset);
            live.bytes += len;
        }
    }

    /// Whether compacting a segment with `live_bytes` live frees enough to be worth its
    /// copies: at most `COMPACT_LIVE_MAX` of it is live. Copying a fuller one frees little
    /// and needs nearly a whole free segment for the copies.
    pub(super) fn worth_compacting(&self, live_bytes: usize) -> bool {
        live_bytes * COMPACT_LIVE_MAX_DEN <= self.seg_size * COMPACT_LIVE_MAX_NUM
    }
}

/// A segment's live items, from [`Store::live_items`]: their offsets in order, and the
/// bytes they take with their stamps.
#[derive(Default)]
pub(super) struct LiveItems {
    pub(super) offsets: Vec<u32>,
    pub(super) bytes: usize,
}
