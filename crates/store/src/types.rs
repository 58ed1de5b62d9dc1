//! The store's public vocabulary: configuration, expiry, write modes, errors and item views.

use std::{fmt, sync::Arc};

use crate::clock::{Clock, SystemClock};

pub const MIB: usize = 1024 * 1024;

/// The longest key the store accepts. Protocols set their own, smaller limits (memcached: 250).
pub const KEY_LEN_MAX: usize = 64 * 1024;

/// Called with every item evicted while still valid (not for deletes or expiry), as it was
/// just before it left: its key, value, expiry, whether it was read, its last access. Called
/// on the evicting thread with a stripe lock released, once per item; an observer that is
/// off most of the time should decide with one cheap check (memcached `watch evictions`).
pub type EvictObserver = Arc<dyn Fn(&Item<'_>) + Send + Sync>;

/// Called with the stored key of every item unlinked because its time to live passed (on
/// a read or write that meets it, by the expiry sweep, or with its whole segment), once per
/// item, not for flushed ones. Called with a stripe lock held: it must not touch the store,
/// and should decide with one cheap check when nobody listens (Redis's `expired` events).
pub type ExpireObserver = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// The client flags of an *owner*: an item of a collection kind (not
/// [`ValueKind::String`]) whose value refers to memory kept outside the store (exec's large
/// Redis collections), written with [`Change::WriteOwner`]. The store charges that memory
/// only when told ([`crate::Store::charge_outside`]) and calls the [`ReleaseObserver`] when
/// the owner goes.
pub const OWNER_FLAGS: u32 = 1;

/// Called once with the value of every owner (see [`OWNER_FLAGS`]) whose index entry goes:
/// deleted, replaced by anything but the same owner (a touch keeps it), expired, flushed,
/// evicted, or dropped as it was written. It returns the bytes that owner had charged with
/// [`crate::Store::charge_outside`], which the store then gives back. Called with a stripe
/// lock held: it must not write to the store.
pub type ReleaseObserver = Arc<dyn Fn(&[u8]) -> usize + Send + Sync>;

/// Whether a stored key is never evicted, whatever the policy (Spinel's never-evict
/// marks: a database or key prefix holding a job queue, locks, sessions). Called by
/// eviction for each live item it meets (and for a new item the index has no slot for),
/// with a stripe lock held: it must be cheap and must not touch the store. Such items are kept as if read (copied forward),
/// and when only they are left, writes are refused as under [`WhenFull::Refuse`].
pub type NeverEvict = Arc<dyn Fn(&[u8]) -> bool + Send + Sync>;

/// What a full store does with a write that needs memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenFull {
    /// Evict items to make room (memcached's default; Redis's `allkeys-*`).
    Evict = 0,
    /// Evict only items with an expiry (Redis's `volatile-*`); with none left to evict,
    /// refuse as [`WhenFull::Refuse`] does.
    EvictVolatile = 1,
    /// Refuse the write with [`StoreError::NoSpace`] (memcached `-M`).
    Refuse = 2,
}

/// Settings fixed when the store is built.
#[derive(Clone)]
pub struct Config {
    /// The hard limit on item memory and index together (memcached `-m`).
    pub memory_bytes: usize,
    /// The most [`crate::Store::set_memory_limit`] may raise the limit to (memcached's
    /// `cache_memlimit`): address space and segment headers are mapped for it, and take
    /// memory only as the store grows into them. 0: `memory_bytes`.
    pub memory_max_bytes: usize,
    /// The largest key + value accepted, in bytes (memcached `-I`).
    pub item_size_max: usize,
    /// What a full store does at start; [`crate::Store::set_when_full`] changes it later.
    pub when_full: WhenFull,
    /// Size of one log segment; items of a quarter of it or more are stored on their own.
    /// 256 KiB by default: finer than 1 MiB, so less memory sits in partly filled and
    /// reserved segments (measured: 16.5 vs 21 bytes of overhead per 32/128 item at 64 MiB).
    pub segment_size_bytes: usize,
    pub clock: Arc<dyn Clock>,
    /// Eviction events (tests, memcached `watch evictions`); see [`Store::set_eviction_observer`].
    ///
    /// [`Store::set_eviction_observer`]: crate::Store::set_eviction_observer
    pub on_evict: Option<EvictObserver>,
    /// Told when an owner goes; see [`OWNER_FLAGS`].
    pub on_release: Option<ReleaseObserver>,
    /// Told of each expired item; see [`ExpireObserver`].
    pub on_expire: Option<ExpireObserver>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            memory_bytes: 64 * MIB,
            memory_max_bytes: 0,
            item_size_max: MIB,
            when_full: WhenFull::Evict,
            segment_size_bytes: 256 * 1024,
            clock: Arc::new(SystemClock),
            on_evict: None,
            on_release: None,
            on_expire: None,
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("memory_bytes", &self.memory_bytes)
            .field("item_size_max", &self.item_size_max)
            .field("when_full", &self.when_full)
            .field("segment_size_bytes", &self.segment_size_bytes)
            .finish_non_exhaustive()
    }
}

/// A configuration the store cannot run with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// When an item stops being visible.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Expiry {
    Never,
    /// Invisible from this Unix millisecond on (an item is expired when `now_ms >= at`).
    AtMs(u64),
}

impl Expiry {
    pub fn is_expired(self, now_ms: u64) -> bool {
        matches!(self, Expiry::AtMs(at) if now_ms >= at)
    }
}

/// How [`crate::Store::store`] treats an existing item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Store unconditionally.
    Set,
    /// Store only if the key is absent.
    Add,
    /// Store only if the key is present.
    Replace,
    /// Add the bytes after the existing value; flags and expiry of the existing item stay.
    Append,
    /// Add the bytes before the existing value; flags and expiry of the existing item stay.
    Prepend,
    /// Store only if the item's CAS unique still equals this one.
    Cas(u64),
}

/// Options of [`crate::Store::store_with`] beyond those of [`crate::Store::store`]; the
/// default behaves as `store` does. They serve memcached's meta `ms`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreOptions {
    /// The CAS unique the new item gets; `None` for a fresh one (meta `E`).
    pub cas: Option<u64>,
    /// With [`Mode::Append`] or [`Mode::Prepend`]: only if the item's CAS unique equals this
    /// ([`StoreError::Exists`] if not). Other modes ignore it: `Set` and `Replace` compare
    /// with [`Mode::Cas`], and `Add` stores only where there is nothing to compare.
    pub compare_cas: Option<u64>,
    /// With [`Mode::Cas`]: a CAS unique lower than the item's stores the value anyway, marked
    /// stale, keeping the item's expiry and win-token state (meta `ms I`).
    pub allow_stale: bool,
    /// This write's limit on key + value instead of the configured item size (Redis
    /// strings are bounded by `proto-max-bulk-len`, not memcached's `-I`); never more than
    /// half the memory limit.
    pub size_max: Option<usize>,
}

/// What [`crate::Store::store_with`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stored {
    pub cas: u64,
    /// The stored value's length (after an append, the whole value).
    pub value_len: usize,
    pub meta: MetaState,
}

/// What an item's value holds, kept in three bits of its header (see `item.rs`). memcached
/// and Redis strings are [`ValueKind::String`]; the others hold a Redis collection in an
/// encoding of exec's, written with [`Change::WriteKind`]. The store never reads a value,
/// so it treats every kind alike: evicted, expired, copied and counted the same way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ValueKind {
    /// Bytes, as memcached and Redis strings are. Costs no header byte.
    #[default]
    String = 0,
    /// A Redis list.
    List = 1,
    /// A Redis hash.
    Hash = 2,
    /// A Redis set.
    Set = 3,
    /// A Redis sorted set.
    ZSet = 4,
    /// A Redis stream (always kept outside the store: its item is an owner).
    Stream = 5,
}

impl ValueKind {
    /// The highest code in use.
    pub(crate) const MAX: ValueKind = ValueKind::Stream;

    /// The kind with this code; a code no kind has means the header is corrupt.
    pub(crate) fn from_bits(bits: u8) -> ValueKind {
        match bits {
            0 => ValueKind::String,
            1 => ValueKind::List,
            2 => ValueKind::Hash,
            3 => ValueKind::Set,
            4 => ValueKind::ZSet,
            5 => ValueKind::Stream,
            _ => panic!("not an item header: value kind {bits}"),
        }
    }
}

/// Per-item state of memcached's meta protocol, kept in two bits of the item header.
/// A new value resets it; touches, copies made by eviction and [`Change::Rewrite`] keep or
/// set it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct MetaState {
    /// Invalidated (`md I`, or `ms I` with an older CAS): readers are told `X` and should
    /// recache.
    pub stale: bool,
    /// A client was handed the recache token (`W`); the others are told `Z`.
    pub win_token_sent: bool,
}

/// Why an operation did not take effect. Protocol layers map these to their own wording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The key is absent (or expired, or flushed).
    NotFound,
    /// A CAS compare failed: the item changed since the client read it.
    Exists,
    /// An `Add` found the key present.
    NotStored,
    /// The key is longer than [`KEY_LEN_MAX`].
    KeyTooLong { len: usize },
    /// Key + value exceed the maximum item size.
    TooLarge { size: usize, max: usize },
    /// No memory could be found (refuse mode, or every candidate was busy).
    NoSpace,
    /// A value is not a number where one is required. The store itself never returns it:
    /// it is for read-modify-writes built on [`crate::Store::modify`] (memcached incr/decr).
    NotNumeric,
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::NotFound => f.write_str("not found"),
            StoreError::Exists => f.write_str("exists"),
            StoreError::NotStored => f.write_str("not stored"),
            StoreError::KeyTooLong { len } => write!(f, "key of {len} bytes too long"),
            StoreError::TooLarge { size, max } => write!(f, "item of {size} bytes over {max}"),
            StoreError::NoSpace => f.write_str("out of memory"),
            StoreError::NotNumeric => f.write_str("not a number"),
        }
    }
}

impl std::error::Error for StoreError {}

/// A borrowed view of a stored item; valid while the [`crate::Reader`] it came from lives.
#[derive(Debug, Clone, Copy)]
pub struct Item<'a> {
    pub(crate) key: &'a [u8],
    pub(crate) value: &'a [u8],
    pub(crate) flags: u32,
    pub(crate) cas: u64,
    pub(crate) expiry: Expiry,
    pub(crate) accessed_before: bool,
    /// The access stamp as it was before this read, and when the read happened: the time is
    /// worked out only when asked for (meta `l`, `me`, metadump), off the get path.
    pub(crate) access_stamp: u16,
    pub(crate) viewed_at_ms: u64,
    pub(crate) meta: MetaState,
    pub(crate) kind: ValueKind,
    /// Not `Send`: an item is valid while a pin of the thread that read it is held, which
    /// lending relies on (`loans.rs`).
    pub(crate) _pinned_here: std::marker::PhantomData<*const ()>,
}

impl<'a> Item<'a> {
    pub fn key(&self) -> &'a [u8] {
        self.key
    }
    pub fn value(&self) -> &'a [u8] {
        self.value
    }
    pub fn flags(&self) -> u32 {
        self.flags
    }
    pub fn cas(&self) -> u64 {
        self.cas
    }
    pub fn expiry(&self) -> Expiry {
        self.expiry
    }
    /// Whether the item was read since it was written (memcached meta `h`).
    pub fn accessed_before(&self) -> bool {
        self.accessed_before
    }
    /// The Unix second of the item's last access as memcached counts one (`it->time`): its
    /// write, or its second read (touches count as reads); exact within about 18 hours.
    pub fn accessed_at_secs(&self) -> u64 {
        crate::store::stamp_to_secs(self.access_stamp, self.viewed_at_ms)
    }
    /// memcached meta state: stale, win token sent.
    pub fn meta_state(&self) -> MetaState {
        self.meta
    }
    /// What the value holds; every item is a [`ValueKind::String`] until the store gains
    /// collections.
    pub fn value_kind(&self) -> ValueKind {
        self.kind
    }
    /// Whether the item is an owner (see [`OWNER_FLAGS`]): a collection with those flags.
    pub fn is_owner(&self) -> bool {
        self.kind != ValueKind::String && self.flags == OWNER_FLAGS
    }
    pub fn to_owned(&self) -> OwnedItem {
        OwnedItem {
            key: self.key.to_vec(),
            value: self.value.to_vec(),
            flags: self.flags,
            cas: self.cas,
            expiry: self.expiry,
            kind: self.kind,
        }
    }
}

/// An item copied out of the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedItem {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub flags: u32,
    pub cas: u64,
    pub expiry: Expiry,
    pub kind: ValueKind,
}

impl OwnedItem {
    /// As [`Item::is_owner`].
    pub fn is_owner(&self) -> bool {
        self.kind != ValueKind::String && self.flags == OWNER_FLAGS
    }
}

/// What a [`crate::Store::modify`] closure decides, given the current item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Leave the item as it is.
    Keep,
    /// Replace (or create) the item.
    Write { value: Vec<u8>, flags: u32, expiry: Expiry },
    /// [`Change::Write`] with the CAS unique the item gets (`None`: a fresh one) and its meta
    /// state (memcached meta `E`, tombstones of `md x`).
    WriteWith { value: Vec<u8>, flags: u32, expiry: Expiry, cas: Option<u64>, meta: MetaState },
    /// Keep the current item's value and flags; set its expiry, meta state and CAS unique
    /// (`None`: a fresh one; `Some(item.cas())` keeps it). Without a current item, nothing
    /// happens. memcached meta: `mg` touches and hands out win tokens, `md I` invalidates.
    Rewrite { expiry: Expiry, meta: MetaState, cas: Option<u64> },
    /// Replace (or create) the item with a value of `kind` (a Redis collection's encoding;
    /// the store does not read it) and client flags 0.
    WriteKind { value: Vec<u8>, kind: ValueKind, expiry: Expiry },
    /// [`Change::WriteKind`] for an owner: the item gets client flags [`OWNER_FLAGS`].
    WriteOwner { value: Vec<u8>, kind: ValueKind, expiry: Expiry },
    /// Remove the item.
    Delete,
}

/// Counters, summed on demand.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Live items (expired ones not yet reclaimed are still counted, as memcached does).
    pub items: u64,
    /// Key + value bytes of the items counted above.
    pub item_bytes: u64,
    /// Bytes charged against the memory limit: segments, index and large items.
    pub memory_used_bytes: u64,
    pub memory_limit_bytes: u64,
    pub index_bytes: u64,
    pub index_slots: u64,
    pub segments_in_use: u64,
    pub segments_max: u64,
    /// Mappings of freed large items kept, charged, for the next large item.
    pub large_spare_bytes: u64,
    /// Items removed to make room while still valid.
    pub evictions: u64,
    /// Expired items removed by the background reclaim, unread since they were written.
    pub expired_unfetched: u64,
    /// Expired items removed (by reclaim or on access).
    pub expired_reclaimed: u64,
    /// Items copied forward during eviction because they were read (kept).
    pub evict_kept: u64,
    /// Live items copied forward while making room in a store mostly holding dead copies
    /// (compaction: nothing is evicted while what it holds is at most half the limit).
    pub compacted: u64,
    /// Items that were written since the store started.
    pub total_items: u64,
}

/// The memory budget by where it goes ([`crate::Store::memory_breakdown`]). Charged bytes
/// are the index tables (current, old and retiring), the segments that hold items or are
/// free but resident, memory in its grace period, large items and memory kept outside.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryBreakdown {
    pub limit_bytes: u64,
    pub charged_bytes: u64,
    pub segment_size_bytes: u64,
    /// The sub-tables' current tables.
    pub index_current_bytes: u64,
    pub index_current_slots: u64,
    /// Entries in the index (both tables of a growing sub-table).
    pub index_entries: u64,
    /// Old tables whose entries are still moving to the current ones.
    pub index_old_bytes: u64,
    /// Old tables unlinked, still charged until no reader can see them.
    pub index_retiring_bytes: u64,
    /// Sealed segments (queued for eviction, or cleared and in their grace period).
    pub segments_sealed: u64,
    /// Segments open for appends.
    pub segments_active: u64,
    /// Free segments whose pages are charged (resident or may be).
    pub segments_free_resident: u64,
    /// Free segments whose pages were given back (not charged).
    pub segments_unbacked: u64,
    /// Bytes written into the sealed and active segments (items, live or not).
    pub segment_filled_bytes: u64,
    /// The charged, unwritten ends of sealed segments: the next item did not fit.
    pub sealed_tail_bytes: u64,
    /// The charged, unwritten rest of the active segments (charged a page at a time as
    /// they fill, when taken unbacked).
    pub active_unfilled_bytes: u64,
    /// Segments and large items cleared, waiting for readers before they come back.
    pub in_grace_bytes: u64,
    /// Memory kept outside the store and charged to it (owners).
    pub outside_bytes: u64,
}
