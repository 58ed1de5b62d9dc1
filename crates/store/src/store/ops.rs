//! The public operations. Each is a thin wrapper: it checks its arguments and runs one
//! locked step of the core (`core.rs`) for its key.

use std::sync::atomic::Ordering;

use crossbeam_epoch as epoch;

use super::{Clear, NewItem, Reader, Store, Unlink};
use crate::{
    index::{self, HashParts, LARGE_SEGMENT},
    shared_writes,
    types::*,
};

/// Index buckets [`Store::scan_page`] reads at most per item wanted, and at least (a bucket
/// is 64 bytes: at most 1 MiB read for COUNT up to 163, tens of microseconds; the whole
/// index of a store of up to 256 MiB, where a few keys come back in one call).
pub const SCAN_PAGE_BUCKETS_PER_ITEM: usize = 100;
pub const SCAN_PAGE_BUCKETS_MIN: usize = 16384;

impl Store {
    pub fn reader(&self) -> Reader<'_> {
        let now_ms = self.config.clock.now_ms();
        self.check_flush(now_ms);
        Reader {
            store: self,
            guard: shared_writes::pin(),
            now_ms,
            flush_gen: self.flush_gen.load(Ordering::Acquire),
            flushed_through_secs: self.flushed_through_secs.load(Ordering::Acquire),
            counts_access: super::READS_TOUCH.with(std::cell::Cell::get),
        }
    }

    /// Copying get, for callers that do not batch.
    pub fn get(&self, key: &[u8]) -> Option<OwnedItem> {
        self.reader().get(key).map(|it| it.to_owned())
    }

    /// Stores `value` under `key` as `mode` says; returns the new CAS unique.
    pub fn store(
        &self,
        key: &[u8],
        value: &[u8],
        flags: u32,
        expiry: Expiry,
        mode: Mode,
    ) -> Result<u64, StoreError> {
        let options = StoreOptions::default();
        self.store_with(key, value, flags, expiry, mode, options).map(|stored| stored.cas)
    }

    /// [`Store::store`] with memcached meta's extras: a chosen CAS unique, a CAS compare for
    /// append and prepend, and storing stale on an older CAS.
    pub fn store_with(
        &self,
        key: &[u8],
        value: &[u8],
        flags: u32,
        expiry: Expiry,
        mode: Mode,
        options: StoreOptions,
    ) -> Result<Stored, StoreError> {
        let size_max = options.size_max.unwrap_or(self.config.item_size_max);
        self.check_size_within(key, value.len(), size_max)?;
        self.locked_op(key, |s, ctx| {
            let current = s.current(ctx, ctx.guard);
            let existing = current.as_ref().map(|(f, r)| (f, r));
            let mut meta = MetaState::default();
            let mut expiry = expiry;
            match (mode, &existing) {
                (Mode::Add, Some(_)) => return Err(StoreError::NotStored.into()),
                (Mode::Replace | Mode::Append | Mode::Prepend, None) => {
                    return Err(StoreError::NotStored.into())
                }
                // Bytes appended to a collection's encoding would corrupt it.
                (Mode::Append | Mode::Prepend, Some((_, r)))
                    if r.header.kind != ValueKind::String =>
                {
                    return Err(StoreError::NotStored.into())
                }
                (Mode::Cas(_), None) => return Err(StoreError::NotFound.into()),
                (Mode::Cas(cas), Some((_, r))) if r.cas != cas => {
                    if !(options.allow_stale && cas < r.cas) {
                        return Err(StoreError::Exists.into());
                    }
                    // An older writer's value is kept, marked stale, for the item's lifetime.
                    expiry = r.header.expiry;
                    meta = MetaState { stale: true, ..r.header.meta };
                }
                (Mode::Append | Mode::Prepend, Some((_, r)))
                    if options.compare_cas.is_some_and(|cas| cas != r.cas) =>
                {
                    return Err(StoreError::Exists.into())
                }
                _ => {}
            }
            let parts: [&[u8]; 2];
            let item = match (mode, existing) {
                (Mode::Append | Mode::Prepend, Some((_, r))) => {
                    parts =
                        if mode == Mode::Append { [r.value(), value] } else { [value, r.value()] };
                    let (flags, expiry) = (r.header.client_flags, r.header.expiry);
                    let kind = r.header.kind;
                    s.check_size_within(key, r.value().len() + value.len(), size_max)?;
                    NewItem {
                        value: &parts,
                        flags,
                        expiry,
                        cas: options.cas,
                        meta,
                        kind,
                        stamp: None,
                    }
                }
                _ => {
                    parts = [value, &[]];
                    let kind = ValueKind::String;
                    let cas = options.cas;
                    NewItem { value: &parts[..1], flags, expiry, cas, meta, kind, stamp: None }
                }
            };
            let cas = s.put(ctx, existing, &item)?;
            Ok(Stored { cas, value_len: item.value_len(), meta })
        })
    }

    /// Deletes `key`; with `cas`, only if the item's CAS unique still equals it.
    pub fn delete(&self, key: &[u8], cas: Option<u64>) -> Result<(), StoreError> {
        let (_, deleted) = self.modify(key, |current| match current {
            None => (Change::Keep, Err(StoreError::NotFound)),
            Some(item) if cas.is_some_and(|c| c != item.cas()) => {
                (Change::Keep, Err(StoreError::Exists))
            }
            Some(_) => (Change::Delete, Ok(())),
        })?;
        deleted
    }

    /// Sets a new expiry; returns the item's CAS unique, which a touch does not change.
    pub fn touch(&self, key: &[u8], expiry: Expiry) -> Result<u64, StoreError> {
        let (_, cas) = self.modify(key, |current| match current {
            None => (Change::Keep, None),
            Some(item) => (retouch(&item, expiry), Some(item.cas())),
        })?;
        cas.ok_or(StoreError::NotFound)
    }

    /// Reads an item and sets its expiry in one step (memcached gat).
    pub fn get_and_touch(&self, key: &[u8], expiry: Expiry) -> Option<OwnedItem> {
        let touched = self.modify(key, |current| match current {
            None => (Change::Keep, None),
            Some(item) => {
                let owned = OwnedItem { expiry, ..item.to_owned() };
                (retouch(&item, expiry), Some(owned))
            }
        });
        touched.ok()?.1
    }

    /// Atomic read-modify-write: `f` sees the current item (None if absent or expired) and
    /// decides; no other write to `key` can come between the read and the write. Returns the
    /// CAS unique of the written item (`Some`) or `None` for Keep/Delete (and for a Rewrite
    /// without an item). `f` may run more than once when the write had to wait for memory;
    /// only the last decision takes effect.
    ///
    /// The store's one generic write: `delete`, `touch` and `get_and_touch` are made of it,
    /// and protocol layers build theirs on it (memcached incr/decr and meta arithmetic, Redis
    /// INCRBY and SETRANGE).
    pub fn modify<R>(
        &self,
        key: &[u8],
        f: impl FnMut(Option<Item<'_>>) -> (Change, R),
    ) -> Result<(Option<u64>, R), StoreError> {
        self.modify_within(key, self.config.item_size_max, f)
    }

    /// [`Store::modify`] with a limit of its own on the written item's key + value (see
    /// [`StoreOptions::size_max`]).
    pub fn modify_within<R>(
        &self,
        key: &[u8],
        size_max: usize,
        mut f: impl FnMut(Option<Item<'_>>) -> (Change, R),
    ) -> Result<(Option<u64>, R), StoreError> {
        self.check_key(key)?;
        self.locked_op(key, |s, ctx| {
            let current = s.current(ctx, ctx.guard);
            let existing = current.as_ref().map(|(f, r)| (f, r));
            let now_ms = ctx.now_ms;
            let (change, out) = f(existing.map(|(found, r)| r.view(found.value.freq(), now_ms)));
            let parts: [&[u8]; 1];
            let item = match &change {
                Change::Keep => {
                    // An owner changed in place is used as a rewritten item is (`put`): its
                    // queue entry (`owners.rs`) stays where it was written.
                    if let Some((found, _)) = existing.filter(|(_, r)| r.is_owner()) {
                        index::Index::touch_freq(found);
                    }
                    return Ok((None, out));
                }
                Change::Delete => {
                    if let Some((found, r)) = existing {
                        s.unlink(ctx, found, r, Unlink::Deleted);
                    }
                    return Ok((None, out));
                }
                Change::Write { value, flags, expiry } => {
                    parts = [value];
                    let (flags, expiry) = (*flags, *expiry);
                    let (meta, kind) = (MetaState::default(), ValueKind::String);
                    NewItem { value: &parts, flags, expiry, cas: None, meta, kind, stamp: None }
                }
                Change::WriteWith { value, flags, expiry, cas, meta } => {
                    parts = [value];
                    let (flags, expiry, cas, meta) = (*flags, *expiry, *cas, *meta);
                    let kind = ValueKind::String;
                    NewItem { value: &parts, flags, expiry, cas, meta, kind, stamp: None }
                }
                Change::WriteKind { value, kind, expiry } => {
                    parts = [value];
                    let (meta, kind, expiry) = (MetaState::default(), *kind, *expiry);
                    NewItem { value: &parts, flags: 0, expiry, cas: None, meta, kind, stamp: None }
                }
                Change::WriteOwner { value, kind, expiry } => {
                    parts = [value];
                    let (meta, kind, flags) = (MetaState::default(), *kind, OWNER_FLAGS);
                    let expiry = *expiry;
                    NewItem { value: &parts, flags, expiry, cas: None, meta, kind, stamp: None }
                }
                Change::Rewrite { expiry, meta, cas } => {
                    let Some((found, r)) = existing else { return Ok((None, out)) };
                    parts = [r.value()];
                    let (flags, kind) = (r.header.client_flags, r.header.kind);
                    // A touch is a read: it moves the access time only as a second read.
                    let stamp = (found.value.freq() != 1).then(|| r.stamp.load());
                    let (expiry, cas, meta) = (*expiry, *cas, *meta);
                    NewItem { value: &parts, flags, expiry, cas, meta, kind, stamp }
                }
            };
            // A rewrite keeps a value the store already holds (a touch of a string stored
            // under a larger limit, such as Redis's 512 MB): no limit to check again.
            if !matches!(change, Change::Rewrite { .. }) {
                s.check_size_within(key, item.value_len(), size_max)?;
            }
            Ok((Some(s.put(ctx, existing, &item)?), out))
        })
    }

    /// Charges `bytes` of memory an owner keeps outside the store (see [`OWNER_FLAGS`])
    /// against the limit, evicting as a write that needs them would; fails as such a write
    /// would (`NoSpace`: refusing when full, or nothing left to evict). Call it with no
    /// stripe lock held (not inside a `modify` closure): eviction takes them.
    pub fn charge_outside(&self, bytes: usize) -> Result<(), StoreError> {
        self.charge_outside_sparing(None, bytes)
    }

    /// [`Store::charge_outside`] for memory that the owner whose value is `owner_value`
    /// took: making room for it does not evict that owner while anything else can go (a
    /// write never evicts what it writes; Redis, which makes room before a command, cannot
    /// either).
    pub fn charge_outside_for(&self, owner_value: &[u8], bytes: usize) -> Result<(), StoreError> {
        self.charge_outside_sparing(Some(index::key_hash(owner_value)), bytes)
    }

    fn charge_outside_sparing(&self, spared: Option<u64>, bytes: usize) -> Result<(), StoreError> {
        let mut room = super::Room::default();
        let result = self.make_room_sparing(super::Need::Bytes(bytes), &mut room, spared);
        if result.is_ok() {
            room.bytes -= bytes; // stays charged
            self.recycled.outside_bytes.fetch_add(bytes, Ordering::AcqRel);
        }
        self.give_back(room);
        result
    }

    /// Charges `bytes` outside the store without making room, past the limit if need be (a
    /// change already made, that [`Store::charge_outside`] could not find room for): the
    /// next write that needs memory evicts until the store is back under it.
    pub fn force_charge_outside(&self, bytes: usize) {
        self.recycled.used_bytes.fetch_add(bytes, Ordering::AcqRel);
        self.recycled.outside_bytes.fetch_add(bytes, Ordering::AcqRel);
    }

    /// Makes every CAS unique handed out from now on greater than `cas` (items restored
    /// from a snapshot keep theirs, and a new item must never repeat one a client holds).
    pub fn raise_cas_floor(&self, cas: u64) {
        let seq = (cas >> index::OFFSET_BITS) + 1;
        self.seq.fetch_max(seq, Ordering::AcqRel);
    }

    /// Gives back what [`Store::charge_outside`] charged.
    pub fn uncharge_outside(&self, bytes: usize) {
        if bytes > 0 {
            self.recycled.uncharge(bytes);
            self.recycled.uncharge_outside(bytes);
        }
    }

    /// Makes every item stored before `now + delay_ms` invisible from that time on.
    pub fn flush_all(&self, delay_ms: u64) {
        // A delayed flush that has come due takes effect before this one replaces it.
        self.check_flush(self.config.clock.now_ms());
        if delay_ms == 0 {
            self.flush_at_ms.store(u64::MAX, Ordering::Release);
            // One bounded step: what the flush killed is reclaimed later, by `maintain` on
            // the workers' ticks and by writes that need its memory (`make_room`).
            self.flush_now();
        } else {
            let at = self.config.clock.now_ms().saturating_add(delay_ms);
            self.flush_at_ms.store(at, Ordering::Release);
        }
    }

    /// Flushes the items last accessed (written, or read a second time) at or before Unix
    /// second `unix_secs`: memcached's `flush_all <past time>` without CAS (`-C`). They are
    /// invisible from now on and go with their segments, or when a write finds them.
    pub fn flush_accessed_through(&self, unix_secs: u64) {
        self.flushed_through_secs.fetch_max(unix_secs, Ordering::AcqRel);
    }

    /// Drops a delayed flush not yet due (one that is due takes effect first): memcached's
    /// `flush_all` with a time before the server started flushes nothing and replaces the
    /// pending one.
    pub fn cancel_delayed_flush(&self) {
        self.check_flush(self.config.clock.now_ms());
        self.flush_at_ms.store(u64::MAX, Ordering::Release);
    }

    /// Number of live items (expired ones not yet reclaimed included; flushed ones not).
    pub fn len(&self) -> usize {
        let gen = self.current_flush_gen();
        self.stripes.iter().map(|s| s.0.lock().live(gen).0).sum::<i64>().max(0) as usize
    }

    /// The flush generation after applying a delayed flush that has come due.
    fn current_flush_gen(&self) -> u32 {
        self.check_flush(self.config.clock.now_ms());
        self.flush_gen.load(Ordering::Acquire)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes charged against the memory limit.
    pub fn memory_used_bytes(&self) -> usize {
        self.recycled.used_bytes.load(Ordering::Acquire)
    }

    /// Visits up to about `count` keys from `cursor` on (0 starts); returns the next cursor,
    /// 0 when done. Keys present for the whole scan are visited at least once, even while
    /// others are written and the index grows (the cursor is a hash position, and bucket
    /// order is hash order at every table size).
    pub fn scan(&self, cursor: u64, count: usize, mut f: impl FnMut(&[u8])) -> u64 {
        self.scan_items(cursor, count, |item| f(item.key()))
    }

    /// Where a scan meets `key`, comparable with the cursors [`Store::scan_items`] returns:
    /// once a scan's cursor is past this position (or back at 0, done), every step that
    /// could list the key has run, at every table size.
    pub fn scan_position(key: &[u8]) -> u64 {
        let parts = HashParts::of(key);
        ((parts.sub as u64) << 33) | u64::from(parts.pos)
    }

    /// [`Store::scan`] handing over each visible item (as a peek: no access is counted).
    /// Lock-free: a step reads a few index blocks under one epoch pin.
    pub fn scan_items(&self, cursor: u64, count: usize, f: impl FnMut(Item<'_>)) -> u64 {
        let buckets_wanted = count.max(1).div_ceil(6);
        self.scan_steps(cursor, f, |_, buckets_read| buckets_read >= buckets_wanted)
    }

    /// Redis SCAN's page: [`Store::scan_items`] going on until `count` items that `f` took
    /// (it returns whether it did: Redis counts the keys of the client's database alone) were
    /// visited, or [`SCAN_PAGE_BUCKETS_PER_ITEM`] buckets per item wanted (at least
    /// [`SCAN_PAGE_BUCKETS_MIN`]) were read. An index emptied
    /// by deletes keeps its grown size, so a small keyspace may lie in mostly empty blocks;
    /// Redis's table of a few keys has a few buckets and answers SCAN in one call, which
    /// clients and their tests expect. Empty sub-tables are passed over without reading them.
    pub fn scan_page(&self, cursor: u64, count: usize, mut f: impl FnMut(Item<'_>) -> bool) -> u64 {
        let bucket_budget =
            count.saturating_mul(SCAN_PAGE_BUCKETS_PER_ITEM).max(SCAN_PAGE_BUCKETS_MIN);
        let taken = std::cell::Cell::new(0usize);
        let take = |item: Item<'_>| {
            if f(item) {
                taken.set(taken.get() + 1);
            }
        };
        self.scan_steps(cursor, take, |_, buckets_read| {
            taken.get() >= count || buckets_read >= bucket_budget
        })
    }

    /// Walks the index from `cursor` a block at a time, handing each visible item to `f`,
    /// until `done(items visited, buckets read)` says so or the index ends (cursor 0).
    fn scan_steps(
        &self,
        cursor: u64,
        mut f: impl FnMut(Item<'_>),
        done: impl Fn(usize, usize) -> bool,
    ) -> u64 {
        let reader = self.reader();
        let mut sub = (cursor >> 33) as usize;
        let mut pos = cursor & ((1 << 33) - 1);
        let (mut buckets_read, mut items) = (0, 0);
        let mut found = Vec::new();
        while sub < index::SUBTABLES && !done(items, buckets_read) {
            if self.index.sub_is_empty(sub) {
                // Nothing to list here (a key present for the whole scan is counted).
                (sub, pos) = (sub + 1, 0);
                continue;
            }
            found.clear();
            let step = self.index.scan(sub, pos, &reader.guard, &mut found);
            // The step's items lie each in a random place: asked for all at once, their
            // lines load together, where reading them in turn waited for one miss at a time
            // (perf of a full sync: 60% of the walk on an item's first byte).
            for slot in &found {
                let location = slot.location();
                if location.segment != LARGE_SEGMENT {
                    self.segments.prefetch_item(location.segment, location.offset);
                }
            }
            for (i, slot) in found.iter().enumerate() {
                let r = self.resolve(slot.location(), &reader.guard);
                if i < step.checked && !step.covers(HashParts::of(r.key()).pos) {
                    continue; // another step's: listed there
                }
                if r.visible(reader.now_ms, reader.flush_gen, reader.flushed_through_secs) {
                    items += 1;
                    f(r.view(slot.freq(), reader.now_ms));
                }
            }
            buckets_read += step.read;
            pos = step.next_pos;
            if pos >= 1 << 32 {
                sub += 1;
                pos = 0;
            }
        }
        if sub >= index::SUBTABLES {
            0
        } else {
            ((sub as u64) << 33) | pos
        }
    }

    /// Moves index entries of growing tables on, a bounded step per table: `maintain`'s first
    /// part, for a caller inserting many keys at once with no worker ticking (a restore).
    pub fn grow_index(&self) {
        let guard = epoch::pin();
        for sub in 0..index::SUBTABLES {
            for _ in 0..16 {
                if !self.index.is_growing(sub, &guard) {
                    break;
                }
                self.migrate_step(sub, &guard);
            }
        }
    }

    /// Background work in bounded steps: moves index entries of growing tables, sweeps a
    /// slice of the index for expired items (`store/sweep.rs`), and reclaims at most
    /// `segments_max` segments whose items are all expired or flushed. Returns how many
    /// segments were reclaimed.
    pub fn maintain(&self, segments_max: usize) -> usize {
        let now_ms = self.config.clock.now_ms();
        self.check_flush(now_ms);
        self.grow_index();
        self.seal_dead_actives(now_ms);
        self.sweep_tick();
        self.refresh_held();
        let dead = self.take_dead(now_ms, segments_max);
        for victim in &dead {
            let _ = self.clear(*victim, Clear::Reclaim);
        }
        // Push the epoch on, so that memory cleared by earlier ticks leaves its grace period
        // even in a store that nothing else reads (a worker's ticks keep going when idle).
        epoch::pin().flush();
        dead.len()
    }

    pub fn stats(&self) -> Stats {
        let mut stats = Stats::default();
        let gen = self.current_flush_gen();
        for stripe in self.stripes.iter() {
            let s = stripe.0.lock();
            let (items, item_bytes) = s.live(gen);
            stats.items += items.max(0) as u64;
            stats.item_bytes += item_bytes.max(0) as u64;
            stats.total_items += s.total_items;
            stats.evictions += s.evictions;
            stats.expired_reclaimed += s.expired_reclaimed;
            stats.expired_unfetched += s.expired_unfetched;
            stats.evict_kept += s.evict_kept;
            stats.compacted += s.compacted;
        }
        let guard = epoch::pin();
        let (index_bytes, index_slots) = self.index.size(&guard);
        stats.index_bytes = index_bytes as u64;
        stats.index_slots = index_slots as u64;
        stats.memory_used_bytes = self.memory_used_bytes() as u64;
        stats.memory_limit_bytes = self.recycled.limit() as u64;
        stats.large_spare_bytes = self.recycled.spare_bytes.load(Ordering::Acquire) as u64;
        let ctl = self.lock_ctl();
        let free = ctl.free_resident.len()
            + ctl.free_unbacked.len()
            + self.recycled.freed_count.load(Ordering::Acquire);
        let seg_count = self.seg_count();
        stats.segments_in_use = (seg_count - free.min(seg_count)) as u64;
        stats.segments_max = seg_count as u64;
        stats
    }
}

/// A touch: the same value, flags, meta state and CAS unique, with a new expiry.
fn retouch(item: &Item<'_>, expiry: Expiry) -> Change {
    Change::Rewrite { expiry, meta: item.meta_state(), cas: Some(item.cas()) }
}
