//! Owners' own eviction order. An owner (see `OWNER_FLAGS`) is a small item that stands for
//! memory kept outside the store: a few hundred owners fit in one segment, and owners copied
//! forward together end up side by side, so evicting them with their segment would drop
//! hundreds of large collections, many times the memory asked for, at once (measured: 5,000
//! of 2M hash fields kept at -m 64, where Redis keeps 549,000; scripts/collection_capacity.py).
//!
//! Instead each owner is queued on its own when written (`Victim::Owner`, in main with the
//! large items), so eviction meets it in write order among the segments and large items,
//! takes it alone, and frees its outside memory at once. Its segment going copies it
//! forward instead. A read or an in-place change counts as an access, and a counted owner
//! gets S3-FIFO's second chance as a large item does: queued again with its count lowered.
//!
//! A new owner starts counted once: it skips the small queue, where a new item gets a
//! chance to be used before eviction meets it, and would otherwise be the first to go
//! whenever the older ones have all been used (a hash being built by a run of HSETs lost
//! between two of them, kept partial). And the memory of an owner's own change is charged
//! sparing it (`Store::charge_outside_for`): eviction queues it again unvisited, and takes
//! it only when nothing else can go, so that a write never evicts what it writes (Redis
//! makes room before a command, and cannot either).
//!
//! An entry names its owner by the key's hash and the owner value's hash (the value is an
//! id that is never reused), found through the index, so that it stays right across copies.
//! Entries of owners deleted or replaced are skipped when met, and dropped in one pass when
//! they pass twice the live ones (`Ctl::retain_owners`), so that churn without eviction
//! leaves no unbounded queue behind.

use std::sync::atomic::Ordering;

use crossbeam_epoch::{self as epoch, Guard};

use super::{count_unlink, evict::Freed, protect::Protection, Clear, Resolved, Store, Unlink};
use crate::{
    index::{self, Found, HashParts},
    segment::{Queue, Victim},
    types::{ValueKind, OWNER_FLAGS},
};

impl Resolved<'_> {
    /// Whether this item is an owner.
    pub(super) fn is_owner(&self) -> bool {
        self.header.kind != ValueKind::String && self.header.client_flags == OWNER_FLAGS
    }
}

impl Store {
    /// Queues a newly written owner of `key` (not one rewritten as itself: its entry stands).
    pub(super) fn queue_owner(&self, key: &[u8], value: &[u8], class: usize, guard: &Guard) {
        let victim = Victim::Owner(index::key_hash(key), index::key_hash(value));
        let mut ctl = self.lock_ctl();
        ctl.push(Queue::Main, class, victim);
        if ctl.owners_need_compacting() {
            ctl.retain_owners(|key_hash, value_hash| {
                self.find_owner(key_hash, value_hash, guard).is_some()
            });
        }
    }

    /// The index entry of the owner an entry names, if it is still there. Lock-free: a
    /// reader's lookup.
    fn find_owner<'g>(
        &self,
        key_hash: u64,
        value_hash: u64,
        guard: &'g Guard,
    ) -> Option<Found<'g>> {
        let hash = HashParts::from_hash(key_hash);
        self.index.find(hash, guard, |slot| {
            let r = self.resolve(slot.location(), guard);
            r.is_owner() && index::key_hash(r.value()) == value_hash
        })
    }

    /// Whether an owner entry names an owner that is gone or dead (`take_dead`).
    pub(super) fn owner_dead(&self, key_hash: u64, value_hash: u64, now_ms: u64) -> bool {
        let guard = epoch::pin();
        let Some(found) = self.find_owner(key_hash, value_hash, &guard) else { return true };
        let r = self.resolve(found.value.location(), &guard);
        !self.visible(&r, now_ms)
    }

    /// Evicts the owner an entry names (or keeps it for a second chance, if it was used, or
    /// for good, if `protection` says so, or unvisited, if `spared`: its own write is making
    /// room); returns the outside bytes that went back at once (0 for an entry gone stale).
    pub(super) fn clear_owner(
        &self,
        key_hash: u64,
        value_hash: u64,
        mode: Clear,
        protection: &Protection,
        spared: bool,
    ) -> Freed {
        let hash = HashParts::from_hash(key_hash);
        let guard = epoch::pin();
        let mut stats = self.lock_stripe(hash);
        let Some(found) = self.find_owner(key_hash, value_hash, &guard) else {
            return Freed::NOTHING;
        };
        let location = found.value.location();
        let r = self.resolve(location, &guard);
        let now_ms = self.config.clock.now_ms();
        let flush_gen = self.flush_gen.load(Ordering::Acquire);
        let freq = found.value.freq();
        if !self.visible(&r, now_ms) {
            self.index.remove(hash, &found);
            count_unlink(&mut stats, &r, freq, Unlink::Dead, flush_gen);
            self.observe_expiry(&r, flush_gen);
            return Freed { bytes: self.retire_item(location, &r, &guard), held: false };
        }
        let protected = mode == Clear::Evict && protection.protects(&r);
        let spared = mode == Clear::Evict && spared;
        if mode != Clear::Evict || freq > 0 || protected || spared {
            // Used since it was queued (or, reclaiming, found alive after all, or compacting,
            // or protected, or spared): queued again.
            if mode == Clear::Evict && freq > 0 && !spared {
                // Best effort: a lost count only shortens its next chance.
                let kept = found.value.with_freq(freq - 1);
                self.index.replace(hash, &found, kept, &guard);
                stats.evict_kept += 1;
            }
            let class = super::ttl_class(r.header.expiry, now_ms);
            self.lock_ctl().push(Queue::Main, class, Victim::Owner(key_hash, value_hash));
            return if protected || spared { Freed::HELD } else { Freed::NOTHING };
        }
        self.index.remove(hash, &found);
        count_unlink(&mut stats, &r, freq, Unlink::Evicted, flush_gen);
        let released_bytes = self.retire_item(location, &r, &guard);
        drop(stats);
        self.observe_eviction(&r, freq, now_ms);
        Freed { bytes: released_bytes, held: false }
    }

    /// Neither expired nor flushed, now.
    fn visible(&self, r: &Resolved<'_>, now_ms: u64) -> bool {
        let flush_gen = self.flush_gen.load(Ordering::Acquire);
        let through_secs = self.flushed_through_secs.load(Ordering::Acquire);
        r.visible(now_ms, flush_gen, through_secs)
    }
}
