//! The store: operations over the index, the segments and the memory budget.
//!
//! ```text
//!   store.rs        the types, construction, the lock rules (here)
//!   store/ops.rs    the public operations: thin wrappers over one locked write core
//!   store/core.rs   the locked core (memcached's `do_` layer): find, put, unlink
//!   store/write.rs  appending to segments, large items, the memory budget
//!   store/growth.rs index growth, migration, and making way in full buckets
//!   store/evict.rs  making room for a write: S3-FIFO eviction, the grace period
//!   store/protect.rs what eviction may take: volatile-only, never-evict keys, refusal
//!   store/reclaim.rs dead (expired, flushed) segments and flush generations
//!   store/sweep.rs  active expiry: an incremental sweep of the index for expired items
//! ```
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
    atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering},
    Arc,
};

use crossbeam_epoch::{self as epoch, Guard};
use parking_lot::Mutex;

use crate::{
    bytes::{Segments, Stamp},
    index::{self, HashParts, Index, Table, LARGE_SEGMENT},
    item::Header,
    segment::{Ctl, Recycled, NONE, TTL_CLASSES},
    shared_writes::{self, Site},
    types::*,
};

mod compact;
mod core;
mod evict;
mod footprint;
mod growth;
mod limit;
mod ops;
mod owners;
mod protect;
mod reclaim;
mod reuse;
mod sweep;
mod write;

use compact::Held;
use evict::{Need, Room};
use sweep::SweepCursor;
pub use sweep::Swept;

const STRIPES: usize = 1024;
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
/// What a segment taken unbacked is charged first (a page; `Store::take_segment`).
const CHARGE_AHEAD: usize = 4096;
/// A segment being filled is charged again once the next item comes within its own length
/// and this much of the charge, so that writers sharing it rarely reserve past its charge at
/// once (which seals it early; `Store::charge_ahead`).
const CHARGE_MARGIN: usize = 256;
/// A segment being filled is charged ahead of its items by at most the memory in use over
/// this, and at least `CHARGE_STEP_MIN` (`Store::charge_ahead`).
const CHARGE_AHEAD_SHARE: usize = 256;
/// The least a segment's charge grows by at once (in whole `segment::CHARGE_UNIT`s).
const CHARGE_STEP_MIN: usize = 512;

#[derive(Default)]
struct StripeStats {
    /// The flush generation that `items` and `item_bytes` count. Items of older ones are
    /// gone for every reader at once, however long their memory takes to reclaim, so
    /// `len` drops to 0 at a flush; the first count of a newer generation starts afresh.
    gen: u32,
    items: i64,
    item_bytes: i64,
    total_items: u64,
    evictions: u64,
    expired_reclaimed: u64,
    expired_unfetched: u64,
    evict_kept: u64,
    compacted: u64,
}

impl StripeStats {
    /// Counts `items` (+1 or -1) of `bytes` of flush generation `gen`. An older generation
    /// than the one counted is ignored: it was zeroed when the newer one started.
    fn count(&mut self, gen: u32, items: i64, bytes: i64) {
        if gen != self.gen {
            if (gen.wrapping_sub(self.gen) as i32) < 0 {
                return;
            }
            (self.gen, self.items, self.item_bytes) = (gen, 0, 0);
        }
        self.items += items;
        self.item_bytes += bytes;
    }

    /// Items and bytes of generation `gen` (which is the newest).
    fn live(&self, gen: u32) -> (i64, i64) {
        if self.gen == gen {
            (self.items, self.item_bytes)
        } else {
            (0, 0)
        }
    }
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

/// Whether a read counts as an access for eviction (`Reader::get`) or not (`Reader::peek`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Count,
    DontCount,
    /// Counted, and the access time set to now whatever the count (Redis TOUCH).
    Stamp,
}

/// What a clear pass over a segment does with items that are still valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Clear {
    /// Make room: keep items that were read (copy them forward), evict the rest.
    Evict,
    /// Make room in a store mostly holding dead copies: copy every live item forward, with
    /// its queue and count, and evict nothing (`store/compact.rs`).
    Compact,
    /// The segment is known dead (expired or flushed); anything valid found is evicted.
    Reclaim,
}

/// Who appends an item to a segment.
enum Writer<'r> {
    /// A client's write, with the memory it claimed so far; it leaves the reserved
    /// segments to eviction.
    Client(&'r mut Room),
    /// Eviction copying an item it keeps; it may use the reserved segments.
    Eviction,
}

impl Writer<'_> {
    fn reborrow(&mut self) -> Writer<'_> {
        match self {
            Writer::Client(room) => Writer::Client(room),
            Writer::Eviction => Writer::Eviction,
        }
    }
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
    stamp: &'a Stamp,
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
    /// Neither expired nor flushed: by generation, or (`through_secs`, 0 for none) as last
    /// accessed at or before that Unix second.
    fn visible(&self, now_ms: u64, flush_gen: u32, through_secs: u64) -> bool {
        self.flush_gen == flush_gen
            && !self.header.expiry.is_expired(now_ms)
            && (through_secs == 0 || stamp_to_secs(self.stamp.load(), now_ms) > through_secs)
    }
    /// Why an item that is not [`visible`](Self::visible) is not: the flush first, as
    /// memcached checks it first.
    fn miss(&self, now_ms: u64, flush_gen: u32, through_secs: u64) -> Miss {
        let flushed = self.flush_gen != flush_gen
            || (through_secs != 0 && stamp_to_secs(self.stamp.load(), now_ms) <= through_secs);
        if flushed {
            Miss::Flushed
        } else {
            Miss::Expired
        }
    }
    fn data_len(&self) -> i64 {
        (self.header.key_len + self.header.value_len) as i64
    }
    fn view(&self, freq: u8, now_ms: u64) -> Item<'a> {
        Item {
            access_stamp: self.stamp.load(),
            viewed_at_ms: now_ms,
            key: self.key(),
            value: self.value(),
            flags: self.header.client_flags,
            cas: self.cas,
            expiry: self.header.expiry,
            accessed_before: freq > 0,
            meta: self.header.meta,
            kind: self.header.kind,
            _pinned_here: std::marker::PhantomData,
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
    /// Items last accessed at or before this Unix second are flushed (0: none).
    flushed_through_secs: u64,
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
    /// String for every new value; a rewrite of the same value keeps its kind.
    kind: ValueKind,
    /// The access stamp it keeps (a touch that is not a second access); `None`: now.
    stamp: Option<u16>,
}

impl NewItem<'_> {
    fn value_len(&self) -> usize {
        self.value.iter().map(|part| part.len()).sum()
    }
}

pub struct Store {
    config: Config,
    seg_size: usize,
    /// Segments in use or free (the rest of the mapping waits for the limit to grow).
    seg_count: AtomicUsize,
    /// Items of this many bytes (header included) or more get a mapping of their own.
    large_min: usize,
    segments: Segments,
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
    /// memcached's `flush_all <past time>` with `-C`: items last accessed at or before this
    /// Unix second are flushed (0: none).
    flushed_through_secs: AtomicU64,
    /// What a full store does now: `config.when_full` at start, switched by
    /// [`Store::set_when_full`] (`WhenFull as u8`).
    when_full: AtomicU8,
    /// Keys eviction must keep whatever the policy (`store/protect.rs`).
    never_evict: parking_lot::RwLock<Option<NeverEvict>>,
    /// Set when a pass over every queued victim found nothing it may evict
    /// (`store/protect.rs`): writes are refused at once until the store changes.
    exhausted: Mutex<Option<protect::Exhausted>>,
    /// Where the expiry sweep goes on (`store/sweep.rs`).
    sweep_cursor: SweepCursor,
    /// What the store holds, estimated for compaction (`store/compact.rs`).
    held: Held,
    /// Threads clearing a segment now (`store/compact.rs`): their segments are memory on
    /// its way back.
    clearing: AtomicUsize,
    /// Compaction ahead of the limit (`store/reuse.rs`).
    reuse: reuse::Reuse,
}

/// A pinned read session: items it returns stay valid until it is dropped. Take one per
/// batch of reads (one multiget), not per key.
pub struct Reader<'s> {
    store: &'s Store,
    guard: Guard,
    now_ms: u64,
    flush_gen: u32,
    flushed_through_secs: u64,
    /// [`set_reads_touch`] on this thread when the reader was made.
    counts_access: bool,
}

thread_local! {
    /// Whether `Reader::get` on this thread counts as an access (see [`set_reads_touch`]).
    static READS_TOUCH: std::cell::Cell<bool> = const { std::cell::Cell::new(true) };
}

/// Whether readers made from now on, on this thread, count their gets as accesses (their
/// frequency and access time for eviction and idle time); `false` makes every get a peek,
/// until set back (Redis CLIENT NO-TOUCH). One thread-local read per reader made.
pub fn set_reads_touch(touch: bool) {
    READS_TOUCH.with(|cell| cell.set(touch));
}

/// An epoch pin held across a run of reads on this thread (a batch of pipelined gets):
/// while it lives, each [`Store::reader`] pins inside it, which costs a counter increment
/// instead of the SeqCst write to this thread's epoch record (and, every 128th pin, a scan
/// of every thread's record). Memory retired meanwhile waits for its drop, so hold it only
/// across reads, never while the thread waits, and for a bounded number of them.
pub struct ReadPin {
    _guard: Guard,
}

impl ReadPin {
    #[inline]
    pub fn new() -> ReadPin {
        ReadPin { _guard: shared_writes::pin() }
    }
}

impl Default for ReadPin {
    fn default() -> Self {
        ReadPin::new()
    }
}

impl Reader<'_> {
    /// Looks a key up and counts the read for eviction.
    pub fn get(&self, key: &[u8]) -> Option<Item<'_>> {
        let access = if self.counts_access { Access::Count } else { Access::DontCount };
        self.lookup(key, access)
    }

    /// Looks a key up, counts the read and sets its access time to now (Redis TOUCH: an
    /// explicit access, where a read moves the time only as memcached's second read).
    pub fn get_and_stamp(&self, key: &[u8]) -> Option<Item<'_>> {
        self.lookup(key, Access::Stamp)
    }

    /// Looks a key up without counting it as an access.
    pub fn peek(&self, key: &[u8]) -> Option<Item<'_>> {
        self.lookup(key, Access::DontCount)
    }

    /// Looks a key up and counts the read for eviction, or says why nothing was found.
    pub fn get_or_miss(&self, key: &[u8]) -> Result<Item<'_>, Miss> {
        let access = if self.counts_access { Access::Count } else { Access::DontCount };
        self.lookup_or_miss(key, access)
    }

    /// [`Reader::peek`], or why nothing was found.
    pub fn peek_or_miss(&self, key: &[u8]) -> Result<Item<'_>, Miss> {
        self.lookup_or_miss(key, Access::DontCount)
    }

    /// [`Reader::get_or_miss`] for a key whose hash is at hand (see [`Reader::prefetch_index`]).
    pub fn get_or_miss_hashed(&self, key: &[u8], hash: KeyHash) -> Result<Item<'_>, Miss> {
        debug_assert_eq!(hash, KeyHash::of(key), "the hash of another key");
        let access = if self.counts_access { Access::Count } else { Access::DontCount };
        self.lookup_hashed(key, hash.parts(), access)
    }

    /// A batch's read ahead, first step: starts loading the index buckets where the key of
    /// `hash` may be, so that a read a few keys later does not wait for them. A hint: it
    /// changes nothing.
    #[inline]
    pub fn prefetch_index(&self, hash: KeyHash) {
        self.store.index.prefetch_buckets(hash.parts(), &self.guard);
    }

    /// A batch's read ahead, second step, once the buckets had time to arrive (a key or two
    /// after [`Reader::prefetch_index`]): reads them and starts loading the item whose tag
    /// matches the key's. A hint: it changes nothing.
    #[inline]
    pub fn prefetch_items(&self, hash: KeyHash) {
        if let Some(location) = self.store.index.tagged_location(hash.parts(), &self.guard) {
            if location.segment != LARGE_SEGMENT {
                self.store.segments.prefetch_item_head(location.segment, location.offset);
            }
        }
    }

    fn lookup(&self, key: &[u8], access: Access) -> Option<Item<'_>> {
        self.lookup_or_miss(key, access).ok()
    }

    fn lookup_or_miss(&self, key: &[u8], access: Access) -> Result<Item<'_>, Miss> {
        self.lookup_hashed(key, HashParts::of(key), access)
    }

    #[inline]
    fn lookup_hashed(&self, key: &[u8], hash: HashParts, access: Access) -> Result<Item<'_>, Miss> {
        let (found, item) = self.store.find_item(key, hash, &self.guard).ok_or(Miss::Absent)?;
        if !item.visible(self.now_ms, self.flush_gen, self.flushed_through_secs) {
            return Err(item.miss(self.now_ms, self.flush_gen, self.flushed_through_secs));
        }
        // The view holds the access time from before this read, as memcached's meta flags do.
        let view = item.view(found.value.freq(), self.now_ms);
        let second = access != Access::DontCount && Index::touch_freq(&found) == Some(2);
        if second || access == Access::Stamp {
            // The second access: memcached's bump of `it->time` (ITEM_FETCHED -> ACTIVE).
            shared_writes::note(Site::AccessStamp);
            item.stamp.store(secs_stamp(self.now_ms));
        }
        Ok(view)
    }
}

/// Reads look ahead (prefetch) only in a store holding at least this much: below it, items
/// and index lines mostly sit in the caches already, and the read ahead's own work cost
/// more than it saved (48-key gets of 20-byte values, one thread: 0.90-0.94x with 10,000
/// keys, 1.11x with 100,000, 1.6-1.8x with 1,000,000).
pub const READ_AHEAD_FROM_BYTES: usize = 4 << 20;

impl Store {
    /// Whether reads should look ahead: the store is charged [`READ_AHEAD_FROM_BYTES`] or
    /// more, index tables included (a 1 GiB store's starting index is 4 MiB by itself, and
    /// lines of a table that size are not all in a core's cache).
    #[inline]
    pub fn reads_ahead(&self) -> bool {
        self.recycled.used_bytes.load(Ordering::Relaxed) >= READ_AHEAD_FROM_BYTES
    }

    /// Pipelined requests' read ahead: starts loading both index buckets of the key of
    /// `hash`, for a read of it soon after (the next request). Takes no pin: a hint from
    /// the index's unordered table hints, which changes nothing and reads nothing.
    #[inline]
    pub fn prefetch(&self, hash: KeyHash) {
        self.index.prefetch_buckets_unpinned(hash.parts());
    }
}

/// A key's hash, computed once for a batch's read ahead and the read that follows it
/// ([`Reader::prefetch_index`], [`Reader::prefetch_items`], [`Reader::get_or_miss_hashed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyHash(u64);

impl KeyHash {
    pub fn of(key: &[u8]) -> KeyHash {
        KeyHash(index::key_hash(key))
    }

    fn parts(self) -> HashParts {
        HashParts::from_hash(self.0)
    }
}

/// Why a read found nothing: memcached counts a read of an item still in its table but
/// flushed (`get_flushed`) or past its expiry (`get_expired`) apart from a plain miss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Miss {
    Absent,
    /// Written before a `flush_all` (or FLUSHALL) that has not reclaimed it yet.
    Flushed,
    Expired,
}

impl Store {
    pub fn new(config: Config) -> Result<Store, ConfigError> {
        // Start the index at two buckets per sub-table (its least) whatever the limit; it grows with the
        // items (sized for 8 KiB items it was 52 B per item at 0.1% of a 64 MiB store and of
        // a 4 GiB one: docs/benchmarks/store-memory.md).
        Store::with_index_buckets(config, 2)
    }

    /// [`Store::new`] with sub-tables of `buckets_per_sub` buckets to start with (tests
    /// start tiny, so that a few keys make the index grow).
    fn with_index_buckets(config: Config, buckets_per_sub: usize) -> Result<Store, ConfigError> {
        let seg_size = config.segment_size_bytes;
        check_config(&config)?;
        let seg_count = config.memory_bytes / seg_size;
        let large_min = seg_size / 4;
        let memory_max_bytes = config.memory_max_bytes.max(config.memory_bytes);
        let os_err = |e: std::io::Error| ConfigError(format!("cannot map memory: {e}"));
        let recycled = Recycled::new(
            config.memory_bytes,
            large_slots_for(config.memory_bytes, large_min),
            large_slots_for(memory_max_bytes, large_min),
        );
        let recycled = Arc::new(recycled.map_err(os_err)?);
        let index = Index::new(buckets_per_sub).map_err(os_err)?;
        let index_bytes = Table::bytes_for(buckets_per_sub) * index::SUBTABLES;
        if !recycled.try_charge(index_bytes, (RESERVE_SEGMENTS + 4) * seg_size) {
            return Err(ConfigError("memory limit too small for the index".into()));
        }
        let ctl = Ctl::new(seg_count);
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        // Each shard may hold a partly filled segment per class: keep that under 1/16th.
        let write_shards = cpus.min(WRITE_SHARDS_MAX).min(seg_count / 16).max(1);
        Ok(Store {
            segments: Segments::new(seg_count, memory_max_bytes / seg_size, seg_size)
                .map_err(os_err)?,
            active: (0..2 * TTL_CLASSES * write_shards).map(|_| AtomicU32::new(NONE)).collect(),
            write_shards,
            ctl: Mutex::new(ctl),
            recycled,
            index,
            stripes: (0..STRIPES).map(|_| Stripe(Mutex::new(StripeStats::default()))).collect(),
            seq: AtomicU64::new(1),
            flush_gen: AtomicU32::new(0),
            flush_at_ms: AtomicU64::new(u64::MAX),
            flushed_through_secs: AtomicU64::new(0),
            when_full: AtomicU8::new(config.when_full as u8),
            never_evict: parking_lot::RwLock::new(None),
            exhausted: Mutex::new(None),
            sweep_cursor: SweepCursor::default(),
            held: Held::default(),
            clearing: AtomicUsize::new(0),
            reuse: reuse::Reuse::default(),
            seg_size,
            seg_count: AtomicUsize::new(seg_count),
            large_min,
            config,
        })
    }

    /// The segment-list lock (counted; see `shared_writes`).
    fn lock_ctl(&self) -> parking_lot::MutexGuard<'_, Ctl> {
        shared_writes::lock(&self.ctl, Site::CtlLock, Site::CtlWait)
    }

    /// A key's stripe lock (counted; see `shared_writes`).
    fn lock_stripe(&self, hash: HashParts) -> parking_lot::MutexGuard<'_, StripeStats> {
        shared_writes::lock(&self.stripes[stripe_of(hash)].0, Site::StripeLock, Site::StripeWait)
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Segments in use or free now (more once the memory limit is raised past them).
    fn seg_count(&self) -> usize {
        self.seg_count.load(Ordering::Acquire)
    }

    /// A bound on the rounds of a loop that evicts until it has room: each round takes one
    /// segment or large item, so four passes over all of them is plenty.
    fn eviction_rounds_max(&self) -> usize {
        4 * (self.seg_count() + self.recycled.large_slots.load(Ordering::Acquire)) + 64
    }

    /// Sets (or replaces) the observer of evictions, for an owner that builds it after the
    /// store (it may refer to state built around the store).
    pub fn set_eviction_observer(&mut self, observer: EvictObserver) {
        self.config.on_evict = Some(observer);
    }

    /// Sets (or replaces) the observer of owners' releases (see [`OWNER_FLAGS`]).
    pub fn set_release_observer(&mut self, observer: ReleaseObserver) {
        self.config.on_release = Some(observer);
    }

    /// Sets (or replaces) the observer of expired items (see [`ExpireObserver`]).
    pub fn set_expiry_observer(&mut self, observer: ExpireObserver) {
        self.config.on_expire = Some(observer);
    }

    /// Tells the expiry observer, if any, of a dead item just unlinked, unless it died by a
    /// flush (it belongs to an older flush generation than `flush_gen`).
    fn observe_expiry(&self, r: &Resolved<'_>, flush_gen: u32) {
        if let Some(observer) = &self.config.on_expire {
            if r.flush_gen == flush_gen {
                observer(r.key());
            }
        }
    }

    /// Tells the eviction observer, if any, of an item that left by eviction.
    fn observe_eviction(&self, r: &Resolved<'_>, freq: u8, now_ms: u64) {
        if let Some(observer) = &self.config.on_evict {
            observer(&r.view(freq, now_ms));
        }
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
    if config.memory_bytes.max(config.memory_max_bytes) / seg_size >= LARGE_SEGMENT as usize {
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

/// Large items that `memory_bytes` can hold, and a few more (slot numbers must fit the
/// index's offset field).
fn large_slots_for(memory_bytes: usize, large_min: usize) -> usize {
    (memory_bytes / large_min + 16).min((1 << index::OFFSET_BITS) - 1)
}

/// This thread's write shard: threads are numbered as they first write.
fn shard() -> usize {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    SHARD.with(|s| *s)
}

/// The access stamp of time `now_ms`: Unix seconds modulo 2^16.
fn secs_stamp(now_ms: u64) -> u16 {
    (now_ms / 1000) as u16
}

/// The Unix second of an access stamp, taken as the latest one at or before `now_ms`
/// (exact for accesses less than 2^16 s, about 18 hours, ago).
pub(crate) fn stamp_to_secs(stamp: u16, now_ms: u64) -> u64 {
    let now_secs = now_ms / 1000;
    now_secs.saturating_sub(u64::from(secs_stamp(now_ms).wrapping_sub(stamp)))
}

fn stripe_of(hash: HashParts) -> usize {
    hash.stripe_bits as usize % STRIPES
}

fn count_unlink(stats: &mut StripeStats, r: &Resolved<'_>, freq: u8, why: Unlink, gen: u32) {
    stats.count(r.flush_gen, -1, -r.data_len());
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

/// [`ttl_class`] of a large item's expiry in Unix ms (`u64::MAX`: never).
fn ttl_class_ms(expiry_ms: u64, now_ms: u64) -> usize {
    let expiry = if expiry_ms == u64::MAX { Expiry::Never } else { Expiry::AtMs(expiry_ms) };
    ttl_class(expiry, now_ms)
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
mod tests;
