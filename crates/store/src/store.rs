//! The store: operations over the index, the segments and the memory budget.
//!
//! Lock rules (the only locks there are):
//! - A write to a key holds that key's *stripe* lock (1024 stripes by hash) for the whole
//!   read-modify-write; the stripe also holds the counters it guards. A thread holds at most
//!   one stripe lock, except that it may `try_lock` a second one (never block on it).
//! - `ctl` (segment lists) is taken after a stripe lock, never before one, and only when a
//!   segment fills, is evicted or reclaimed: once per segment of writes, not per request.
//! - Reads take no lock: they pin the epoch, read an index slot and the item it points to.
//!   Memory is reused only after every reader pinned before its unlink has unpinned.

use std::sync::{
    atomic::{AtomicU32, AtomicU64, Ordering},
    Arc,
};

use crossbeam_epoch::{self as epoch, Guard};
use parking_lot::Mutex;

use crate::{
    index::{self, Found, HashParts, Index, Insert, Location, Slot, Table, LARGE_SEGMENT},
    item::Header,
    mem::Region,
    segment::{Ctl, Large, Queue, Recycled, SegHeader, Victim, NONE},
    types::*,
};

mod reclaim;

use reclaim::{Need, Room};

const STRIPES: usize = 1024;
const TTL_CLASSES: usize = 8;
/// Free segments kept back from ordinary writers so that eviction can copy kept items.
const RESERVE_SEGMENTS: usize = 1;
const MIGRATE_CHUNK_BUCKETS: usize = 32;
const OP_ATTEMPTS: usize = 32;
/// Writer threads append to their own active segments (by a per-thread shard), so that two
/// cores never write the same segment header: with one shared segment, 2 threads set at
/// 1.25x one thread's rate; see `shard()`.
const WRITE_SHARDS_MAX: usize = 8;
/// Segments eviction keeps in their grace period ahead of demand (see `make_room`).
const EVICT_AHEAD: usize = 2;
const PAGE: usize = 4096;

#[derive(Default)]
struct StripeStats {
    items: i64,
    item_bytes: i64,
    total_items: u64,
    evictions: u64,
    expired_reclaimed: u64,
    expired_unfetched: u64,
    evict_kept: u64,
}

#[repr(align(64))]
struct Stripe(Mutex<StripeStats>);

/// Why an item leaves the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unlink {
    Deleted,
    Evicted,
    /// Expired or flushed; found so by a write or by reclaim.
    Dead,
}

/// What a clear pass over a segment does with items that are still valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Clear {
    /// Make room: keep items that were read (copy them forward), evict the rest.
    Evict,
    /// The segment is known dead (expired or flushed); anything valid found is evicted.
    Reclaim,
}

/// A write that must wait for memory, or a result.
enum OpError {
    Store(StoreError),
    NeedRoom(Need),
}

impl From<StoreError> for OpError {
    fn from(e: StoreError) -> Self {
        OpError::Store(e)
    }
}

/// An item as read from memory.
struct Resolved<'a> {
    bytes: &'a [u8],
    header: Header,
    header_len: usize,
    cas: u64,
    flush_gen: u32,
}

impl<'a> Resolved<'a> {
    fn key(&self) -> &'a [u8] {
        &self.bytes[self.header_len..self.header_len + self.header.key_len]
    }
    fn value(&self) -> &'a [u8] {
        &self.bytes[self.header_len + self.header.key_len..]
    }
    fn visible(&self, now_ms: u64, flush_gen: u32) -> bool {
        self.flush_gen == flush_gen && !self.header.expiry.is_expired(now_ms)
    }
    fn data_len(&self) -> i64 {
        (self.header.key_len + self.header.value_len) as i64
    }
    fn view(&self, freq: u8) -> Item<'a> {
        Item {
            key: self.key(),
            value: self.value(),
            flags: self.header.client_flags,
            cas: self.cas,
            expiry: self.header.expiry,
            accessed_before: freq > 0,
            meta: self.header.meta,
        }
    }
}

/// State of one locked operation on one key.
struct Ctx<'a> {
    key: &'a [u8],
    hash: HashParts,
    guard: &'a Guard,
    now_ms: u64,
    flush_gen: u32,
    stats: &'a mut StripeStats,
    /// Memory claimed for this write by earlier attempts.
    room: &'a mut Room,
}

/// A new item's content: the value may come in parts (append, prepend).
struct NewItem<'v> {
    value: &'v [&'v [u8]],
    flags: u32,
    expiry: Expiry,
    /// This CAS unique instead of a fresh one: a rewrite that is not a logical change keeps
    /// the old one, and memcached meta clients may choose one.
    cas: Option<u64>,
    meta: MetaState,
}

pub struct Store {
    config: Config,
    seg_size: usize,
    seg_count: usize,
    /// Items of this many bytes (header included) or more get a mapping of their own.
    large_min: usize,
    region: Region,
    headers: Box<[SegHeader]>,
    /// The segment each (queue, TTL class, write shard) appends to, or NONE.
    active: Box<[AtomicU32]>,
    write_shards: usize,
    ctl: Mutex<Ctl>,
    recycled: Arc<Recycled>,
    index: Index,
    stripes: Box<[Stripe]>,
    seq: AtomicU64,
    flush_gen: AtomicU32,
    flush_at_ms: AtomicU64,
}

/// A pinned read session: items it returns stay valid until it is dropped. Take one per
/// batch of reads (one multiget), not per key.
pub struct Reader<'s> {
    store: &'s Store,
    guard: Guard,
    now_ms: u64,
    flush_gen: u32,
}

impl Reader<'_> {
    /// Looks a key up and counts the read for eviction.
    pub fn get(&self, key: &[u8]) -> Option<Item<'_>> {
        self.lookup(key, true)
    }

    /// Looks a key up without counting it as an access.
    pub fn peek(&self, key: &[u8]) -> Option<Item<'_>> {
        self.lookup(key, false)
    }

    fn lookup(&self, key: &[u8], count_access: bool) -> Option<Item<'_>> {
        let hash = HashParts::of(key);
        let (found, item) = self.store.find_item(key, hash, &self.guard)?;
        if !item.visible(self.now_ms, self.flush_gen) {
            return None;
        }
        if count_access {
            Index::touch_freq(&found);
        }
        Some(item.view(found.value.freq()))
    }
}

impl Store {
    pub fn new(config: Config) -> Result<Store, ConfigError> {
        let seg_size = config.segment_size_bytes;
        check_config(&config)?;
        let seg_count = config.memory_bytes / seg_size;
        let large_min = seg_size / 4;
        let large_slots = (config.memory_bytes / large_min + 16).min((1 << index::OFFSET_BITS) - 1);
        let recycled = Arc::new(Recycled::new(config.memory_bytes, large_slots));
        let os_err = |e: std::io::Error| ConfigError(format!("cannot map memory: {e}"));
        // Start the index sized for 2 KiB items; it grows if items are smaller.
        let slots = config.memory_bytes / 2048;
        let buckets_per_sub =
            (slots / index::SUBTABLES / index::SLOTS_PER_BUCKET).max(16).next_power_of_two();
        let index = Index::new(buckets_per_sub).map_err(os_err)?;
        let index_bytes = Table::bytes_for(buckets_per_sub) * index::SUBTABLES;
        if !recycled.try_charge(index_bytes, (RESERVE_SEGMENTS + 4) * seg_size) {
            return Err(ConfigError("memory limit too small for the index".into()));
        }
        let ctl = Ctl { free_unbacked: (0..seg_count as u32).rev().collect(), ..Ctl::default() };
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        // Each shard may hold a partly filled segment per class: keep that under 1/16th.
        let write_shards = cpus.min(WRITE_SHARDS_MAX).min(seg_count / 16).max(1);
        Ok(Store {
            region: Region::new(seg_count * seg_size).map_err(os_err)?,
            headers: (0..seg_count).map(|_| SegHeader::new()).collect(),
            active: (0..2 * TTL_CLASSES * write_shards).map(|_| AtomicU32::new(NONE)).collect(),
            write_shards,
            ctl: Mutex::new(ctl),
            recycled,
            index,
            stripes: (0..STRIPES).map(|_| Stripe(Mutex::new(StripeStats::default()))).collect(),
            seq: AtomicU64::new(1),
            flush_gen: AtomicU32::new(0),
            flush_at_ms: AtomicU64::new(u64::MAX),
            seg_size,
            seg_count,
            large_min,
            config,
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn reader(&self) -> Reader<'_> {
        let now_ms = self.config.clock.now_ms();
        self.check_flush(now_ms);
        Reader {
            store: self,
            guard: epoch::pin(),
            now_ms,
            flush_gen: self.flush_gen.load(Ordering::Acquire),
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
        self.check_size(key, value.len())?;
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
            match (mode, existing) {
                (Mode::Append | Mode::Prepend, Some((found, r))) => {
                    let value_len = r.value().len() + value.len();
                    s.check_size(key, value_len)?;
                    let parts =
                        if mode == Mode::Append { [r.value(), value] } else { [value, r.value()] };
                    let item = NewItem {
                        value: &parts,
                        flags: r.header.client_flags,
                        expiry: r.header.expiry,
                        cas: options.cas,
                        meta,
                    };
                    let cas = s.put(ctx, Some((found, r)), &item)?;
                    Ok(Stored { cas, value_len, meta })
                }
                (_, existing) => {
                    let item = NewItem { value: &[value], flags, expiry, cas: options.cas, meta };
                    let cas = s.put(ctx, existing, &item)?;
                    Ok(Stored { cas, value_len: value.len(), meta })
                }
            }
        })
    }

    /// Deletes `key`; with `cas`, only if the item's CAS unique still equals it.
    pub fn delete(&self, key: &[u8], cas: Option<u64>) -> Result<(), StoreError> {
        self.check_key(key)?;
        self.locked_op(key, |s, ctx| {
            let Some((found, r)) = s.current(ctx, ctx.guard) else {
                return Err(StoreError::NotFound.into());
            };
            if cas.is_some_and(|c| c != r.cas) {
                return Err(StoreError::Exists.into());
            }
            s.unlink(ctx, &found, &r, Unlink::Deleted);
            Ok(())
        })
    }

    /// Sets a new expiry; returns the item's CAS unique, which a touch does not change.
    pub fn touch(&self, key: &[u8], expiry: Expiry) -> Result<u64, StoreError> {
        self.check_key(key)?;
        self.locked_op(key, |s, ctx| s.retouch(ctx, expiry).map(|(cas, _)| cas))
    }

    /// Reads an item and sets its expiry in one step (memcached gat).
    pub fn get_and_touch(&self, key: &[u8], expiry: Expiry) -> Option<OwnedItem> {
        self.check_key(key).ok()?;
        self.locked_op(key, |s, ctx| s.retouch(ctx, expiry).map(|(_, item)| item)).ok()
    }

    /// memcached incr: the value must be a decimal u64; the sum wraps at 2^64.
    pub fn incr(&self, key: &[u8], delta: u64) -> Result<u64, StoreError> {
        self.add_decimal(key, |n| n.wrapping_add(delta))
    }

    /// memcached decr: the value must be a decimal u64; the result stops at 0.
    pub fn decr(&self, key: &[u8], delta: u64) -> Result<u64, StoreError> {
        self.add_decimal(key, |n| n.saturating_sub(delta))
    }

    /// Atomic read-modify-write: `f` sees the current item (None if absent or expired) and
    /// decides; no other write to `key` can come between the read and the write. Returns the
    /// CAS unique of the written item (`Some`) or `None` for Keep/Delete (and for a Rewrite
    /// without an item). `f` may run more than once when the write had to wait for memory;
    /// only the last decision takes effect.
    pub fn modify<R>(
        &self,
        key: &[u8],
        mut f: impl FnMut(Option<Item<'_>>) -> (Change, R),
    ) -> Result<(Option<u64>, R), StoreError> {
        self.check_key(key)?;
        self.locked_op(key, |s, ctx| {
            let current = s.current(ctx, ctx.guard);
            let (change, out) = f(current.as_ref().map(|(found, r)| r.view(found.value.freq())));
            match change {
                Change::Keep => Ok((None, out)),
                Change::Delete => {
                    if let Some((found, r)) = &current {
                        s.unlink(ctx, found, r, Unlink::Deleted);
                    }
                    Ok((None, out))
                }
                Change::Write { value, flags, expiry } => {
                    let meta = MetaState::default();
                    let item = NewItem { value: &[&value], flags, expiry, cas: None, meta };
                    s.check_size(key, value.len())?;
                    let existing = current.as_ref().map(|(f, r)| (f, r));
                    Ok((Some(s.put(ctx, existing, &item)?), out))
                }
                Change::WriteWith { value, flags, expiry, cas, meta } => {
                    let item = NewItem { value: &[&value], flags, expiry, cas, meta };
                    s.check_size(key, value.len())?;
                    let existing = current.as_ref().map(|(f, r)| (f, r));
                    Ok((Some(s.put(ctx, existing, &item)?), out))
                }
                Change::Rewrite { expiry, meta, cas } => {
                    let Some((found, r)) = &current else { return Ok((None, out)) };
                    let value = [r.value()];
                    let flags = r.header.client_flags;
                    let item = NewItem { value: &value, flags, expiry, cas, meta };
                    Ok((Some(s.put(ctx, Some((found, r)), &item)?), out))
                }
            }
        })
    }

    /// Makes every item stored before `now + delay_ms` invisible from that time on.
    pub fn flush_all(&self, delay_ms: u64) {
        // A delayed flush that has come due takes effect before this one replaces it.
        self.check_flush(self.config.clock.now_ms());
        if delay_ms == 0 {
            self.flush_at_ms.store(u64::MAX, Ordering::Release);
            self.flush_now();
            // Reclaim what the flush killed, in bounded steps; other threads go on meanwhile.
            while self.maintain(64) > 0 {}
        } else {
            let at = self.config.clock.now_ms().saturating_add(delay_ms);
            self.flush_at_ms.store(at, Ordering::Release);
        }
    }

    /// Number of live items (expired ones not yet reclaimed included).
    pub fn len(&self) -> usize {
        self.stripes.iter().map(|s| s.0.lock().items).sum::<i64>().max(0) as usize
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
        let reader = self.reader();
        let mut sub = (cursor >> 33) as usize;
        let mut pos = cursor & ((1 << 33) - 1);
        let buckets_wanted = count.max(1).div_ceil(6);
        let mut buckets_read = 0;
        while sub < index::SUBTABLES && buckets_read < buckets_wanted {
            let (next_pos, read) = self.index.scan(sub, pos, &reader.guard, |slot| {
                let r = self.resolve(slot.location(), &reader.guard);
                if r.visible(reader.now_ms, reader.flush_gen) {
                    f(r.key());
                }
            });
            buckets_read += read;
            pos = next_pos;
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

    /// Background work in bounded steps: moves index entries of growing tables, and reclaims
    /// at most `segments_max` segments whose items are all expired or flushed. Returns how
    /// many segments were reclaimed.
    pub fn maintain(&self, segments_max: usize) -> usize {
        let now_ms = self.config.clock.now_ms();
        self.check_flush(now_ms);
        {
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
        self.seal_dead_actives(now_ms);
        let dead = self.take_dead(now_ms, segments_max);
        for victim in &dead {
            self.clear(*victim, Clear::Reclaim);
        }
        dead.len()
    }

    pub fn stats(&self) -> Stats {
        let mut stats = Stats::default();
        for stripe in self.stripes.iter() {
            let s = stripe.0.lock();
            stats.items += s.items.max(0) as u64;
            stats.item_bytes += s.item_bytes.max(0) as u64;
            stats.total_items += s.total_items;
            stats.evictions += s.evictions;
            stats.expired_reclaimed += s.expired_reclaimed;
            stats.expired_unfetched += s.expired_unfetched;
            stats.evict_kept += s.evict_kept;
        }
        let guard = epoch::pin();
        let (index_bytes, index_slots) = self.index.size(&guard);
        stats.index_bytes = index_bytes as u64;
        stats.index_slots = index_slots as u64;
        stats.memory_used_bytes = self.memory_used_bytes() as u64;
        stats.memory_limit_bytes = self.config.memory_bytes as u64;
        let ctl = self.ctl.lock();
        let free = ctl.free_resident.len()
            + ctl.free_unbacked.len()
            + self.recycled.freed_count.load(Ordering::Acquire);
        stats.segments_in_use = (self.seg_count - free.min(self.seg_count)) as u64;
        stats.segments_max = self.seg_count as u64;
        stats
    }
}

fn check_config(config: &Config) -> Result<(), ConfigError> {
    let seg_size = config.segment_size_bytes;
    let fail = |msg: String| Err(ConfigError(msg));
    if !seg_size.is_power_of_two() || !(64 * 1024..=MIB).contains(&seg_size) {
        return fail(format!("segment size {seg_size} is not a power of two in 64 KiB..=1 MiB"));
    }
    if config.memory_bytes < 8 * seg_size {
        return fail(format!("memory limit {} is under 8 segments", config.memory_bytes));
    }
    if config.memory_bytes / seg_size >= LARGE_SEGMENT as usize {
        return fail(format!("memory limit {} is too large", config.memory_bytes));
    }
    if config.item_size_max < 1024 || config.item_size_max > config.memory_bytes / 2 {
        return fail(format!(
            "item size limit {} must be from 1 KiB to half the memory limit",
            config.item_size_max
        ));
    }
    Ok(())
}

// Building blocks of the operations. Functions taking a `Ctx` run with the key's stripe held.
impl Store {
    fn check_key(&self, key: &[u8]) -> Result<(), StoreError> {
        if key.len() > KEY_LEN_MAX {
            return Err(StoreError::KeyTooLong { len: key.len() });
        }
        Ok(())
    }

    fn check_size(&self, key: &[u8], value_len: usize) -> Result<(), StoreError> {
        self.check_key(key)?;
        let size = key.len() + value_len;
        if size > self.config.item_size_max {
            return Err(StoreError::TooLarge { size, max: self.config.item_size_max });
        }
        Ok(())
    }

    fn stripe(&self, hash: HashParts) -> &Stripe {
        &self.stripes[hash.stripe_bits as usize % STRIPES]
    }

    /// Runs `body` with the key's stripe locked; when it needs memory, makes room with no
    /// lock held and no epoch pinned, then runs it again.
    fn locked_op<R>(
        &self,
        key: &[u8],
        mut body: impl FnMut(&Store, &mut Ctx<'_>) -> Result<R, OpError>,
    ) -> Result<R, StoreError> {
        let hash = HashParts::of(key);
        let mut room = Room::default();
        let result = self.locked_attempts(key, hash, &mut room, &mut body);
        self.give_back(room);
        result
    }

    fn locked_attempts<R>(
        &self,
        key: &[u8],
        hash: HashParts,
        room: &mut Room,
        body: &mut impl FnMut(&Store, &mut Ctx<'_>) -> Result<R, OpError>,
    ) -> Result<R, StoreError> {
        for _ in 0..OP_ATTEMPTS {
            let now_ms = self.config.clock.now_ms();
            self.check_flush(now_ms);
            let guard = epoch::pin();
            let result = {
                let mut stats = self.stripe(hash).0.lock();
                let mut ctx = Ctx {
                    key,
                    hash,
                    guard: &guard,
                    now_ms,
                    flush_gen: self.flush_gen.load(Ordering::Acquire),
                    stats: &mut stats,
                    room: &mut *room,
                };
                body(self, &mut ctx)
            };
            self.after_write(hash.sub, &guard);
            drop(guard);
            match result {
                Ok(r) => return Ok(r),
                Err(OpError::Store(e)) => return Err(e),
                Err(OpError::NeedRoom(need)) => self.make_room(need, room)?,
            }
        }
        Err(StoreError::NoSpace)
    }

    /// Finds the entry and item for a key, visible or not.
    fn find_item<'g>(
        &'g self,
        key: &[u8],
        hash: HashParts,
        guard: &'g Guard,
    ) -> Option<(Found<'g>, Resolved<'g>)> {
        let mut item = None;
        let found = self.index.find(hash, guard, |slot| {
            let r = self.resolve(slot.location(), guard);
            let matches = r.key() == key;
            if matches {
                item = Some(r);
            }
            matches
        })?;
        Some((found, item.expect("find matched without an item")))
    }

    /// The key's visible item; an invisible one (expired, flushed) is unlinked on the way.
    fn current<'g>(
        &'g self,
        ctx: &mut Ctx<'_>,
        guard: &'g Guard,
    ) -> Option<(Found<'g>, Resolved<'g>)> {
        let (found, r) = self.find_item(ctx.key, ctx.hash, guard)?;
        if r.visible(ctx.now_ms, ctx.flush_gen) {
            return Some((found, r));
        }
        self.unlink(ctx, &found, &r, Unlink::Dead);
        None
    }

    fn unlink(&self, ctx: &mut Ctx<'_>, found: &Found<'_>, r: &Resolved<'_>, why: Unlink) {
        self.index.remove(ctx.hash, found);
        count_unlink(ctx.stats, r, found.value.freq(), why, ctx.flush_gen);
        self.retire(found.value.location(), ctx.guard);
    }

    /// Writes a new item for the key and points the index at it; returns its CAS unique.
    fn put(
        &self,
        ctx: &mut Ctx<'_>,
        existing: Option<(&Found<'_>, &Resolved<'_>)>,
        item: &NewItem<'_>,
    ) -> Result<u64, OpError> {
        if item.expiry.is_expired(ctx.now_ms) {
            // Stored and at once expired, as memcached does with a negative TTL.
            if let Some((found, r)) = existing {
                self.unlink(ctx, found, r, Unlink::Deleted);
            }
            let fresh = || self.seq.fetch_add(1, Ordering::Relaxed) << index::OFFSET_BITS;
            return Ok(item.cas.unwrap_or_else(fresh));
        }
        let header = Header {
            client_flags: item.flags,
            expiry: item.expiry,
            key_len: ctx.key.len(),
            value_len: item.value.iter().map(|p| p.len()).sum(),
            cas: item.cas,
            meta: item.meta,
        };
        let (location, cas) = if header.item_len() >= self.large_min {
            self.write_large(&header, ctx.key, item.value, ctx.flush_gen, ctx.room)?
        } else {
            let class = ttl_class(item.expiry, ctx.now_ms);
            self.append(Queue::Small, class, &header, ctx.key, item.value, Some(ctx.room))
                .ok_or(OpError::NeedRoom(Need::Segment))?
        };
        // A rewrite of a live item (overwrite, append, incr, touch) counts as an access: a
        // key written every few milliseconds is as hot as one read that often, and its new
        // copy must not start cold in the small queue, where S3-FIFO drops unaccessed items
        // (measured: appended keys lost while 90% of the cache was cold). Keeping the count
        // also spares the next readers a write to the slot.
        let freq = existing.map_or(0, |(found, _)| (found.value.freq() + 1).min(index::FREQ_MAX));
        let slot = Slot::new(ctx.hash.tag, location, freq);
        let data_len = (header.key_len + header.value_len) as i64;
        match existing {
            Some((found, r)) if self.index.replace(ctx.hash, found, slot, ctx.guard) => {
                ctx.stats.item_bytes += data_len - r.data_len();
                self.retire(found.value.location(), ctx.guard);
            }
            Some((found, r)) => {
                // Moving out of a migrating table found no room: drop the old entry first.
                self.unlink(ctx, found, r, Unlink::Deleted);
                self.insert_new(ctx, slot, data_len);
            }
            None => self.insert_new(ctx, slot, data_len),
        }
        ctx.stats.total_items += 1;
        Ok(cas)
    }

    fn insert_new(&self, ctx: &mut Ctx<'_>, slot: Slot, data_len: i64) {
        for _ in 0..4 {
            if let Insert::Done = self.index.insert(ctx.hash, slot, ctx.guard) {
                ctx.stats.items += 1;
                ctx.stats.item_bytes += data_len;
                return;
            }
            // Both buckets are full before the table reached its load limit: grow
            // now (a sub-table is 1/64 of the index), or, without memory to, make way.
            if !self.relocate_from_buckets(ctx.hash, ctx.guard)
                && !self.grow(ctx.hash.sub, true, ctx.guard)
            {
                self.evict_from_window(ctx);
            }
        }
        // Nothing in the window could give way (all stripes busy): the new item is dropped
        // as if evicted at once. Growth of the table (after this write) makes it rare.
        ctx.stats.evictions += 1;
        self.retire(slot.location(), ctx.guard);
    }

    /// Both of the key's buckets are full: move one of their entries to its other bucket,
    /// making room there first if need be (cuckoo steps, two deep). With only one step,
    /// tables could not fill past about 86%, as two-choice insertion fills buckets evenly.
    /// The caller holds the stripe of `held`.
    fn relocate_from_buckets(&self, held: HashParts, guard: &Guard) -> bool {
        let entries = self.index.window_entries(held, guard);
        self.relocate_one_of(&entries, &[stripe_of(held)], 1, guard)
    }

    /// Moves one of `entries` to its alternate bucket; `held` are the stripes this thread
    /// holds already. Other stripes are only tried, never waited for.
    fn relocate_one_of(
        &self,
        entries: &[(&AtomicU64, Slot)],
        held: &[usize],
        depth: usize,
        guard: &Guard,
    ) -> bool {
        for &(cell, slot) in entries {
            let r = self.resolve(slot.location(), guard);
            let hash = HashParts::of(r.key());
            let stripe = stripe_of(hash);
            let Some(_lock) = self.try_lock_unless_held(stripe, held) else { continue };
            if self.index.relocate(hash, cell, slot, guard) {
                return true;
            }
            if depth > 0 {
                let next = self.index.alternate_entries(hash, cell, guard);
                let held: Vec<usize> = held.iter().copied().chain([stripe]).collect();
                if self.relocate_one_of(&next, &held, depth - 1, guard)
                    && self.index.relocate(hash, cell, slot, guard)
                {
                    return true;
                }
            }
        }
        false
    }

    /// Locks `stripe` for a second key without waiting: `Some(None)` if this thread holds it
    /// already, `None` if another thread does.
    fn try_lock_unless_held(
        &self,
        stripe: usize,
        held: &[usize],
    ) -> Option<Option<parking_lot::MutexGuard<'_, StripeStats>>> {
        if held.contains(&stripe) {
            return Some(None);
        }
        self.stripes[stripe].0.try_lock().map(Some)
    }

    /// Both of the key's buckets are full: evict their least-used entry that we can lock.
    fn evict_from_window(&self, ctx: &mut Ctx<'_>) {
        let mut candidates = self.index.window_entries(ctx.hash, ctx.guard);
        candidates.sort_by_key(|(_, slot)| slot.freq());
        for (cell, slot) in candidates {
            let r = self.resolve(slot.location(), ctx.guard);
            let hash = HashParts::of(r.key());
            let held = [stripe_of(ctx.hash)];
            let Some(mut other) = self.try_lock_unless_held(stripe_of(hash), &held) else {
                continue;
            };
            if !self.index.remove_if(hash.sub, cell, slot) {
                continue;
            }
            let stats = match other.as_mut() {
                Some(g) => &mut **g,
                None => &mut *ctx.stats,
            };
            count_unlink(stats, &r, slot.freq(), Unlink::Evicted, ctx.flush_gen);
            if let Some(observer) = &self.config.on_evict {
                observer(r.key());
            }
            self.retire(slot.location(), ctx.guard);
            return;
        }
    }

    /// Rewrites the item with a new expiry, keeping value, flags and CAS unique.
    fn retouch(&self, ctx: &mut Ctx<'_>, expiry: Expiry) -> Result<(u64, OwnedItem), OpError> {
        let Some((found, r)) = self.current(ctx, ctx.guard) else {
            return Err(StoreError::NotFound.into());
        };
        let item = NewItem {
            value: &[r.value()],
            flags: r.header.client_flags,
            expiry,
            cas: Some(r.cas),
            meta: r.header.meta,
        };
        let mut owned = r.view(found.value.freq()).to_owned();
        owned.expiry = expiry;
        self.put(ctx, Some((&found, &r)), &item)?;
        Ok((r.cas, owned))
    }

    fn add_decimal(&self, key: &[u8], op: impl Fn(u64) -> u64) -> Result<u64, StoreError> {
        self.check_key(key)?;
        self.locked_op(key, |s, ctx| {
            let Some((found, r)) = s.current(ctx, ctx.guard) else {
                return Err(StoreError::NotFound.into());
            };
            let number = parse_decimal_u64(r.value()).ok_or(StoreError::NotNumeric)?;
            let result = op(number);
            let digits = result.to_string();
            let item = NewItem {
                value: &[digits.as_bytes()],
                flags: r.header.client_flags,
                expiry: r.header.expiry,
                cas: None,
                meta: MetaState::default(),
            };
            s.put(ctx, Some((&found, &r)), &item)?;
            Ok(result)
        })
    }
}

/// memcached's rule for incr/decr operands: 1 to 20 ASCII digits that fit in a u64.
fn parse_decimal_u64(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() || bytes.len() > 20 || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

/// This thread's write shard: threads are numbered as they first write.
fn shard() -> usize {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    SHARD.with(|s| *s)
}

fn stripe_of(hash: HashParts) -> usize {
    hash.stripe_bits as usize % STRIPES
}

fn count_unlink(stats: &mut StripeStats, r: &Resolved<'_>, freq: u8, why: Unlink, gen: u32) {
    stats.items -= 1;
    stats.item_bytes -= r.data_len();
    match why {
        Unlink::Deleted => {}
        Unlink::Evicted => stats.evictions += 1,
        Unlink::Dead if r.flush_gen == gen => {
            stats.expired_reclaimed += 1;
            if freq == 0 {
                stats.expired_unfetched += 1;
            }
        }
        Unlink::Dead => {}
    }
}

/// Groups items by remaining lifetime (powers of ten of seconds), so that a segment's items
/// expire close together and the whole segment can be reclaimed at once.
fn ttl_class(expiry: Expiry, now_ms: u64) -> usize {
    match expiry {
        Expiry::Never => 0,
        Expiry::AtMs(at) => {
            let ttl_ms = at.saturating_sub(now_ms).max(1);
            (1 + (ttl_ms.ilog10() as usize).saturating_sub(3)).min(TTL_CLASSES - 1)
        }
    }
}

// Memory: reading items, appending to segments, large items, and the budget.
impl Store {
    /// Reads the item at `location`. The caller is pinned and the location was read from
    /// the index while pinned, so the memory cannot be reused before `guard` is dropped.
    fn resolve<'g>(&'g self, location: Location, guard: &'g Guard) -> Resolved<'g> {
        if location.segment == LARGE_SEGMENT {
            let large = self
                .recycled
                .large(location.offset, guard)
                .expect("index points at a freed large item");
            let base = large.region.ptr();
            // SAFETY: the item was fully written before it was published; the region is live.
            let (header, header_len) = Header::decode_with(|i| unsafe { *base.add(i) });
            let len = header_len + header.key_len + header.value_len;
            assert!(len <= large.region.len());
            // SAFETY: as above: `len` bytes from `base` are the item, immutable from now on.
            let bytes = unsafe { std::slice::from_raw_parts(base, len) };
            let cas = header.cas.unwrap_or(large.seq << index::OFFSET_BITS);
            return Resolved { bytes, header, header_len, cas, flush_gen: large.flush_gen };
        }
        let segment = location.segment as usize;
        let offset = location.offset as usize;
        assert!(segment < self.seg_count && offset < self.seg_size);
        // SAFETY: inside the region (asserted above).
        let base = unsafe { self.region.ptr().add(segment * self.seg_size + offset) };
        let room = self.seg_size - offset;
        let (header, header_len) = Header::decode_with(|i| {
            assert!(i < room, "item header runs past its segment");
            // SAFETY: in bounds (asserted); the header was written before its publication.
            unsafe { *base.add(i) }
        });
        let len = header_len + header.key_len + header.value_len;
        assert!(len <= room, "item runs past its segment");
        // SAFETY: these bytes are the published item; nobody writes them until the segment
        // is reused, which waits for our epoch.
        let bytes = unsafe { std::slice::from_raw_parts(base, len) };
        let seg = &self.headers[segment];
        let cas = header
            .cas
            .unwrap_or((seg.seq.load(Ordering::Acquire) << index::OFFSET_BITS) | offset as u64);
        Resolved {
            bytes,
            header,
            header_len,
            cas,
            flush_gen: seg.flush_gen.load(Ordering::Acquire),
        }
    }

    /// Appends an item to the active segment of (queue, class); None if no segment can be
    /// had without evicting. `room`: a client write's claimed memory; None for eviction's
    /// own copies, which may use the reserved segments.
    fn append(
        &self,
        queue: Queue,
        class: usize,
        header: &Header,
        key: &[u8],
        value: &[&[u8]],
        mut room: Option<&mut Room>,
    ) -> Option<(Location, u64)> {
        let len = header.item_len();
        debug_assert!(len < self.large_min || room.is_none());
        let active_index = self.active_index(queue, class);
        let active = &self.active[active_index];
        for _ in 0..8 {
            let id = active.load(Ordering::Acquire);
            if id != NONE {
                if let Some(done) = self.try_append(id, header, key, value) {
                    return Some(done);
                }
            }
            if !self.roll(queue, active_index, id, room.as_deref_mut()) {
                return None;
            }
        }
        None
    }

    fn try_append(
        &self,
        id: u32,
        header: &Header,
        key: &[u8],
        value: &[&[u8]],
    ) -> Option<(Location, u64)> {
        let seg = &self.headers[id as usize];
        let len = header.item_len();
        seg.inflight.fetch_add(1, Ordering::AcqRel);
        let offset = seg.write_offset.fetch_add(len as u64, Ordering::AcqRel) as usize;
        if offset + len > self.seg_size {
            seg.inflight.fetch_sub(1, Ordering::Release);
            return None;
        }
        // SAFETY: `[offset, offset + len)` of this segment was reserved by the fetch_add
        // above for this writer alone, and lies inside the region.
        let out = unsafe {
            std::slice::from_raw_parts_mut(
                self.region.ptr().add(id as usize * self.seg_size + offset),
                len,
            )
        };
        write_item(out, header, key, value);
        seg.used_end.fetch_max((offset + len) as u32, Ordering::AcqRel);
        let expiry_ms = match header.expiry {
            Expiry::Never => u64::MAX,
            Expiry::AtMs(at) => at,
        };
        if seg.max_expiry_ms.load(Ordering::Relaxed) < expiry_ms {
            seg.max_expiry_ms.fetch_max(expiry_ms, Ordering::AcqRel);
        }
        let cas = header
            .cas
            .unwrap_or((seg.seq.load(Ordering::Acquire) << index::OFFSET_BITS) | offset as u64);
        seg.inflight.fetch_sub(1, Ordering::Release);
        Some((Location { segment: id, offset: offset as u32 }, cas))
    }

    fn active_index(&self, queue: Queue, class: usize) -> usize {
        (queue as usize * TTL_CLASSES + class) * self.write_shards + shard() % self.write_shards
    }

    /// Seals the full active segment `seen` and opens a new one. False if none is free.
    fn roll(&self, queue: Queue, active_index: usize, seen: u32, room: Option<&mut Room>) -> bool {
        let mut ctl = self.ctl.lock();
        let active = &self.active[active_index];
        if active.load(Ordering::Acquire) != seen {
            return true; // another writer rolled it already
        }
        if seen != NONE {
            let seg = &self.headers[seen as usize];
            seg.seal();
            ctl.push(seg.queue(), Victim::Segment(seen));
            active.store(NONE, Ordering::Release);
        }
        let id = match room {
            Some(room) => room.segment.take().or_else(|| {
                let reserve = self.writer_reserve();
                self.take_segment(&mut ctl, reserve)
            }),
            None => self.take_segment(&mut ctl, 0),
        };
        let Some(id) = id else { return false };
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        self.headers[id as usize].open(seq, self.flush_gen.load(Ordering::Acquire), queue);
        active.store(id, Ordering::Release);
        true
    }

    /// Free segments a client write leaves for eviction's copies.
    fn writer_reserve(&self) -> usize {
        if self.config.when_full == WhenFull::Refuse {
            0
        } else {
            RESERVE_SEGMENTS
        }
    }

    /// A free segment, leaving `reserve` of them.
    fn take_segment(&self, ctl: &mut Ctl, reserve: usize) -> Option<u32> {
        self.recycled.take_freed(&mut ctl.free_resident);
        if ctl.free_resident.len() > reserve {
            return ctl.free_resident.pop();
        }
        let headroom = reserve.saturating_sub(ctl.free_resident.len()) * self.seg_size;
        if !ctl.free_unbacked.is_empty() && self.recycled.try_charge(self.seg_size, headroom) {
            return ctl.free_unbacked.pop();
        }
        None
    }

    fn write_large(
        &self,
        header: &Header,
        key: &[u8],
        value: &[&[u8]],
        flush_gen: u32,
        room: &mut Room,
    ) -> Result<(Location, u64), OpError> {
        let len = header.item_len();
        let bytes = len.div_ceil(PAGE) * PAGE;
        if room.bytes >= bytes {
            room.bytes -= bytes;
        } else if !self.charge_other(bytes) {
            return Err(OpError::NeedRoom(Need::Bytes(bytes)));
        }
        let region = match Region::new(bytes) {
            Ok(region) => region,
            Err(_) => {
                self.recycled.uncharge(bytes);
                return Err(StoreError::NoSpace.into());
            }
        };
        // SAFETY: a fresh private mapping of at least `len` bytes.
        let out = unsafe { std::slice::from_raw_parts_mut(region.ptr(), len) };
        write_item(out, header, key, value);
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let expiry_ms = match header.expiry {
            Expiry::Never => u64::MAX,
            Expiry::AtMs(at) => at,
        };
        let large = Large { region, seq, flush_gen, expiry_ms };
        let slot = match self.recycled.add_large(large) {
            Ok(slot) => slot,
            Err(large) => {
                self.recycled.uncharge(large.region.len());
                return Err(StoreError::NoSpace.into());
            }
        };
        self.ctl.lock().push(Queue::Main, Victim::Large(slot, seq));
        let cas = header.cas.unwrap_or(seq << index::OFFSET_BITS);
        Ok((Location { segment: LARGE_SEGMENT, offset: slot }, cas))
    }

    /// Called when an index entry stops pointing at `location`: a large item's memory is
    /// freed after the grace period (segment bytes simply become garbage until eviction).
    fn retire(&self, location: Location, guard: &Guard) {
        if location.segment == LARGE_SEGMENT {
            let recycled = Arc::clone(&self.recycled);
            let slot = location.offset;
            // Counted as memory on its way back, like a cleared segment (see `make_room`).
            recycled.in_grace.fetch_add(1, Ordering::AcqRel);
            guard.defer(move || recycled.free_large(slot));
        }
    }

    /// Charges memory that is not a segment (index tables, large items), giving back free
    /// segments' pages to the kernel when that is what it takes.
    fn charge_other(&self, bytes: usize) -> bool {
        loop {
            if self.recycled.try_charge(bytes, 0) {
                return true;
            }
            let mut ctl = self.ctl.lock();
            self.recycled.take_freed(&mut ctl.free_resident);
            // The reserve stays: eviction copies the items it keeps into it.
            if ctl.free_resident.len() <= self.writer_reserve() {
                return false;
            }
            let Some(id) = ctl.free_resident.pop() else { return false };
            // SAFETY: a free segment is past its grace period: no reader or writer uses it.
            unsafe { self.region.release(id as usize * self.seg_size, self.seg_size) };
            self.recycled.uncharge(self.seg_size);
            ctl.free_unbacked.push(id);
        }
    }
}

fn write_item(out: &mut [u8], header: &Header, key: &[u8], value: &[&[u8]]) {
    let mut at = header.encode(out);
    out[at..at + key.len()].copy_from_slice(key);
    at += key.len();
    for part in value {
        out[at..at + part.len()].copy_from_slice(part);
        at += part.len();
    }
    assert_eq!(at, out.len(), "item length mismatch");
}

// Index growth and flush (eviction and reclaim are in `reclaim.rs`).
impl Store {
    /// After a write: move a chunk of a growing sub-table, or start growing a full one.
    fn after_write(&self, sub: usize, guard: &Guard) {
        if self.index.is_growing(sub, guard) {
            self.migrate_step(sub, guard);
            return;
        }
        self.grow(sub, false, guard);
    }

    /// Starts growing a sub-table if it needs it (`forced`: a window is full). False if it
    /// did not start, for want of memory or because it is growing already.
    fn grow(&self, sub: usize, forced: bool, guard: &Guard) -> bool {
        let tight = self.memory_used_bytes() > self.config.memory_bytes / 2;
        let Some(buckets) = self.index.wants_growth(sub, forced, tight, guard) else {
            return false;
        };
        let bytes = Table::bytes_for(buckets);
        // Near the memory limit, index memory competes with items: grow only when a key
        // found no slot even after relocation (at about 95% load), so the index is dense
        // exactly when memory is scarce.
        let used = self.memory_used_bytes();
        if !forced && used + bytes > self.config.memory_bytes / 8 * 7 {
            return false;
        }
        if !self.charge_other(bytes) {
            return false; // no memory to spare: the table stays fuller
        }
        let started = Table::new(buckets)
            .ok()
            .is_some_and(|table| self.index.start_growth(sub, table, guard).is_ok());
        if !started {
            self.recycled.uncharge(bytes);
        }
        started
    }

    fn migrate_step(&self, sub: usize, guard: &Guard) {
        let Some(chunk) = self.index.claim_migration(sub, MIGRATE_CHUNK_BUCKETS, guard) else {
            return;
        };
        for cell in chunk.slots() {
            self.migrate_cell(cell, guard);
        }
        if let Some(bytes) = self.index.finish_migration(chunk, guard) {
            let recycled = Arc::clone(&self.recycled);
            guard.defer(move || recycled.uncharge(bytes));
        }
    }

    fn migrate_cell(&self, cell: &AtomicU64, guard: &Guard) {
        // Bounded: the value changes only by readers raising its frequency (at most 3 times)
        // or by its removal.
        while let Some(value) = index::slot_value(cell) {
            let r = self.resolve(value.location(), guard);
            let hash = HashParts::of(r.key());
            let mut stats = self.stripe(hash).0.lock();
            if cell.load(Ordering::Acquire) != value.0 {
                continue;
            }
            let moved = index::move_entry(&self.index, hash, cell, value, guard)
                || (self.relocate_from_buckets(hash, guard)
                    && index::move_entry(&self.index, hash, cell, value, guard));
            if !moved {
                index::drop_entry(&self.index, hash, cell);
                let flush_gen = self.flush_gen.load(Ordering::Acquire);
                count_unlink(&mut stats, &r, value.freq(), Unlink::Evicted, flush_gen);
                self.retire(value.location(), guard);
                drop(stats);
                if let Some(observer) = &self.config.on_evict {
                    observer(r.key());
                }
            }
            return;
        }
    }

    fn check_flush(&self, now_ms: u64) {
        let at = self.flush_at_ms.load(Ordering::Relaxed);
        if now_ms >= at
            && self
                .flush_at_ms
                .compare_exchange(at, u64::MAX, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        {
            self.flush_now();
        }
    }

    /// Starts a new flush generation: items of earlier ones are invisible from now on, and
    /// their segments are reclaimed by `maintain`.
    fn flush_now(&self) {
        let mut ctl = self.ctl.lock();
        self.flush_gen.fetch_add(1, Ordering::AcqRel);
        self.seal_actives(&mut ctl);
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        // Run deferred frees that still refer to this store's shared state.
        for _ in 0..4 {
            epoch::pin().flush();
        }
    }
}

#[cfg(test)]
mod tests {
    //! Small enough for Miri: these exercise every `unsafe` path of the store (segment
    //! writes and reads, large items, eviction and memory reuse, concurrent readers during
    //! eviction). Run: `cargo +nightly miri test -p store --lib`.

    use std::sync::Arc;

    use super::*;

    fn tiny_store() -> Store {
        Store::new(Config {
            memory_bytes: 16 * 64 * 1024,
            segment_size_bytes: 64 * 1024,
            item_size_max: 200 * 1024,
            ..Config::default()
        })
        .expect("valid config")
    }

    // Writes past capacity so segments are evicted and reused; every value read back intact.
    #[test]
    fn segments_are_reused_and_values_stay_intact() {
        let store = tiny_store();
        let rounds = if cfg!(miri) { 1_500 } else { 20_000 };
        for i in 0..rounds {
            let key = format!("key{}", i % 700);
            let value = vec![(i % 251) as u8; 1500];
            store.store(key.as_bytes(), &value, 0, Expiry::Never, Mode::Set).expect("set");
            if i % 3 == 0 {
                if let Some(item) = store.get(format!("key{}", i / 2 % 700).as_bytes()) {
                    assert!(item.value.iter().all(|b| *b == item.value[0]));
                }
            }
        }
        assert!(store.stats().evictions > 0 || cfg!(miri));
    }

    // Large items live in their own mappings; replacing one frees the old after the grace.
    #[test]
    fn large_items_round_trip_and_free() {
        let store = tiny_store();
        for round in 0..3u8 {
            let value = vec![round; 100 * 1024];
            store.store(b"big", &value, 1, Expiry::Never, Mode::Set).expect("set");
            assert_eq!(store.get(b"big").expect("present").value, value);
        }
        store.delete(b"big", None).expect("delete");
        for _ in 0..8 {
            epoch::pin().flush();
        }
        assert!(store.memory_used_bytes() < 8 * 64 * 1024, "{:?}", store.stats());
    }

    // A reader keeps reading while another thread forces evictions.
    #[test]
    fn readers_never_see_freed_memory() {
        let store = Arc::new(tiny_store());
        let ops = if cfg!(miri) { 300 } else { 20_000 };
        std::thread::scope(|scope| {
            let writer = Arc::clone(&store);
            scope.spawn(move || {
                for i in 0..ops {
                    let key = format!("w{i}");
                    let value = vec![(i % 200) as u8 + 1; 3000];
                    writer.store(key.as_bytes(), &value, 0, Expiry::Never, Mode::Set).expect("set");
                }
            });
            for i in 0..ops {
                let reader = store.reader();
                if let Some(item) = reader.get(format!("w{}", i / 2).as_bytes()) {
                    let first = item.value()[0];
                    assert!(first != 0 && item.value().iter().all(|b| *b == first));
                }
            }
        });
    }
}
