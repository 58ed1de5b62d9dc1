//! One instant's picture for SAVE, BGSAVE and SHUTDOWN SAVE, without a fork: while the
//! file's walk of the index runs, a write first keeps the state its keys had at the
//! instant the picture began, if the walk has not taken them yet; the walk writes what
//! was kept in place of what it finds. Redis gets the same from the kernel's copy-on-write
//! of a forked child's pages; here the copy is of keys, and only of keys written during
//! the walk, once each.
//!
//! ```text
//!  BGSAVE, on a worker:  gate held (no other worker mid-request) -> begin: active
//!  a write, any worker:  keys -> keep(key): under `step` (read), unless the walk's cursor
//!                        for its database is past the key, its state now (or Absent)
//!                        goes in `kept`, once; then the write runs
//!  the walk, a thread:   per index step, under `step` (write): each item of the database
//!                        written as kept (or skipped: Absent), else as found; `walked`
//!                        moves past the step; at the database's end, what is kept for it
//!                        and was not met (deleted since) is written
//! ```
//!
//! Why it is exact: the walk meets keys in hash-position order (`Store::scan_position`),
//! so a key below `walked` was written to the file already and a later write may change
//! it freely, while a key at or above it was not, and its first write keeps it first.
//! The step lock makes the two exclusive, so a write never lands between the walk's
//! reading a key and its moving past it. A write that began before the picture did
//! cannot slip in: `begin` runs with the gate held, so every worker is between requests.
//! No deadlock: a writer keeps before it takes any other lock of its request, and the
//! eviction observer runs with the store's locks released; the walk, holding `step`,
//! takes only a large collection's own lock, which nothing holds while it waits on `step`.
//!
//! What the picture does not hold back: keys that expire during the walk (a file's
//! expired keys are dropped as it loads anyway), and evicted large collections (their
//! memory is already released when eviction reports them); evicted strings and small
//! collections are kept. A flush (FLUSHALL, FLUSHDB, SWAPDB, memcached `flush_all`, a
//! replica's full copy) abandons the picture, as Redis's FLUSHALL kills its saving child.
//! What is kept is bounded ([`Picture::limit_bytes`]): past it, the save fails and says
//! why, rather than hold the store's size again.

use std::{
    collections::HashMap,
    sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
};

use parking_lot::{Mutex, RwLock};
use store::{Expiry, Item, Store, ValueKind};

use crate::{keyspace, Shared};

/// What a write kept of a key before changing it.
#[derive(Debug)]
pub(crate) enum Kept {
    /// The key did not exist at the instant: the walk leaves it out.
    Absent,
    /// A string or a small collection, as the store held it.
    Item { kind: ValueKind, value: Vec<u8>, flags: u32, cas: u64, expiry: Expiry },
    /// A large collection, in its payload form.
    Value { value: values::rdb::Value, expiry: Expiry },
}

impl Kept {
    /// Bytes it holds, roughly: what the limit counts.
    fn bytes(&self, key: &[u8]) -> usize {
        const OVERHEAD: usize = 64;
        let value = match self {
            Kept::Absent => 0,
            Kept::Item { value, .. } => value.len(),
            Kept::Value { value, .. } => value_bytes(value),
        };
        key.len() + value + OVERHEAD
    }
}

fn value_bytes(value: &values::rdb::Value) -> usize {
    use values::rdb::Value as V;
    const PER_ELEMENT: usize = 16;
    match value {
        V::String(bytes) => bytes.len(),
        V::List(items) | V::Set(items) => items.iter().map(|i| i.len() + PER_ELEMENT).sum(),
        V::Hash(pairs) => pairs.iter().map(|(f, v)| f.len() + v.len() + PER_ELEMENT).sum(),
        V::ZSet(pairs) => pairs.iter().map(|(m, _)| m.len() + 8 + PER_ELEMENT).sum(),
        V::Stream(_) => values::rdb::dump(value).len(),
    }
}

/// The picture being taken, if any (one at a time); in [`crate::Core`].
#[derive(Debug)]
pub struct Picture {
    /// Writers keep keys; one load per write while not.
    active: AtomicBool,
    /// Held by the walk across one step of the index (write), by a writer while it keeps
    /// a key (read).
    step: RwLock<()>,
    /// Per database: the scan cursor below which the walk has written every key;
    /// `u64::MAX` once the database is done.
    walked: [AtomicU64; keyspace::DATABASES as usize],
    /// By stored key.
    kept: Mutex<HashMap<Vec<u8>, Kept>>,
    kept_bytes: AtomicUsize,
    /// The most kept at once by the picture under way (INFO's `current_cow_peak`) and by
    /// the last one (`rdb_last_cow_size`).
    pub(crate) peak_bytes: AtomicUsize,
    pub(crate) last_peak_bytes: AtomicUsize,
    /// The most the picture under way may keep.
    limit_bytes: AtomicUsize,
    /// Why the picture under way was abandoned.
    abandoned: Mutex<Option<Abandon>>,
}

impl Default for Picture {
    fn default() -> Picture {
        Picture {
            active: AtomicBool::new(false),
            step: RwLock::new(()),
            walked: std::array::from_fn(|_| AtomicU64::new(0)),
            kept: Mutex::new(HashMap::new()),
            kept_bytes: AtomicUsize::new(0),
            peak_bytes: AtomicUsize::new(0),
            last_peak_bytes: AtomicUsize::new(0),
            limit_bytes: AtomicUsize::new(0),
            abandoned: Mutex::new(None),
        }
    }
}

/// Why a picture was abandoned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Abandon {
    /// A flush (its command's name): the save is ordered before it, and fails quietly.
    Flush(&'static str),
    /// SHUTDOWN SAVE stops a BGSAVE to save at once.
    Shutdown,
    /// The kept keys would pass this many bytes.
    Limit(usize),
}

impl std::fmt::Display for Abandon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Abandon::Flush(name) => write!(f, "{name} emptied the store"),
            Abandon::Shutdown => write!(f, "SHUTDOWN saves instead"),
            Abandon::Limit(bytes) => {
                write!(f, "the keys written during the save needed more than {bytes} bytes kept")
            }
        }
    }
}

/// The least a picture may keep, whatever the store's size.
pub const KEPT_LIMIT_MIN_BYTES: usize = 64 << 20;

/// The most a picture of a store of `memory_bytes` may keep: half of it, so that a save
/// never needs the store's size again (Redis's fork may), or [`KEPT_LIMIT_MIN_BYTES`].
pub fn kept_limit_bytes(memory_bytes: usize) -> usize {
    (memory_bytes / 2).max(KEPT_LIMIT_MIN_BYTES)
}

impl Picture {
    #[inline(always)]
    pub(crate) fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// Starts a picture: to be called with the gate held (no request half done). False
    /// when one is under way.
    pub(crate) fn begin(&self, limit_bytes: usize) -> bool {
        if self.active.load(Ordering::Acquire) {
            return false;
        }
        for walked in &self.walked {
            walked.store(0, Ordering::Relaxed);
        }
        self.kept.lock().clear();
        self.kept_bytes.store(0, Ordering::Relaxed);
        self.peak_bytes.store(0, Ordering::Relaxed);
        self.limit_bytes.store(limit_bytes, Ordering::Relaxed);
        *self.abandoned.lock() = None;
        self.active.store(true, Ordering::Release);
        true
    }

    /// Ends the picture under way (written or not): what it kept is let go.
    pub(crate) fn end(&self) {
        self.active.store(false, Ordering::Release);
        let _step = self.step.write();
        std::mem::take(&mut *self.kept.lock());
        self.last_peak_bytes.store(self.peak_bytes.load(Ordering::Relaxed), Ordering::Relaxed);
        self.kept_bytes.store(0, Ordering::Relaxed);
    }

    /// Stops the picture under way, if any, for `why`: its save fails (the walk sees it
    /// at its next step) and writers stop keeping at once. The reason is set first, so a
    /// walk that meets a write made unkept sees it at its next check.
    pub(crate) fn abandon(&self, why: Abandon) {
        if !self.is_active() {
            return;
        }
        self.abandoned.lock().get_or_insert(why);
        if self.active.swap(false, Ordering::AcqRel) {
            std::mem::take(&mut *self.kept.lock());
        }
    }

    /// Why the picture under way (or the last one) was abandoned, if it was.
    pub(crate) fn abandoned(&self) -> Option<Abandon> {
        *self.abandoned.lock()
    }

    /// Bytes kept now (INFO's `current_cow_size`) and at most (`current_cow_peak`).
    pub(crate) fn kept_now_and_peak(&self) -> (usize, usize) {
        if !self.is_active() {
            return (0, 0);
        }
        (self.kept_bytes.load(Ordering::Relaxed), self.peak_bytes.load(Ordering::Relaxed))
    }

    /// Before a write changes the key stored as `stored`: keeps its state, if a picture
    /// is under way and has not taken the key yet.
    #[inline(always)]
    pub(crate) fn keep(&self, shared: &Shared, stored: &[u8]) {
        if self.is_active() {
            self.keep_now(shared, stored);
        }
    }

    #[cold]
    #[inline(never)]
    fn keep_now(&self, shared: &Shared, stored: &[u8]) {
        let Some((db, _)) = keyspace::decode(stored) else { return };
        let _step = self.step.read();
        if !self.needs(db, stored) || self.kept.lock().contains_key(stored) {
            return;
        }
        // Read outside the map's lock; the first to insert wins, and the first insert is
        // always of a state from before any keeping writer's change. A large collection
        // that would pass the limit is not copied first.
        let room = self.limit_bytes.load(Ordering::Relaxed);
        match state_of(shared, stored, room.saturating_sub(self.kept_bytes.load(Ordering::Relaxed)))
        {
            Some(kept) => self.insert(stored, kept),
            None => self.abandon(Abandon::Limit(room)),
        }
    }

    /// The eviction observer's part: an item leaving by eviction, kept if the walk still
    /// needs it (a large collection is not: its memory is already released).
    pub(crate) fn keep_evicted(&self, item: &Item<'_>) {
        if !self.is_active() || item.is_owner() {
            return;
        }
        let stored = item.key();
        let Some((db, _)) = keyspace::decode(stored) else { return };
        let _step = self.step.read();
        if !self.needs(db, stored) || self.kept.lock().contains_key(stored) {
            return;
        }
        self.insert(stored, kept_item(item));
    }

    /// Whether a key of `db` at `stored` is still to be taken by the walk (under `step`).
    fn needs(&self, db: u8, stored: &[u8]) -> bool {
        self.is_active()
            && Store::scan_position(stored) >= self.walked[usize::from(db)].load(Ordering::Acquire)
    }

    fn insert(&self, stored: &[u8], kept: Kept) {
        let bytes = kept.bytes(stored);
        let mut map = self.kept.lock();
        if map.contains_key(stored) || !self.is_active() {
            return;
        }
        map.insert(stored.to_vec(), kept);
        drop(map);
        let now = self.kept_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak_bytes.fetch_max(now, Ordering::Relaxed);
        let limit = self.limit_bytes.load(Ordering::Relaxed);
        if now > limit {
            self.abandon(Abandon::Limit(limit));
        }
    }

    /// The walk's side, for one step of the index: `f` runs with writers held off and the
    /// kept keys at hand; `walked[db]` then becomes the cursor `f` returns (`u64::MAX` for
    /// 0, the end).
    pub(crate) fn step<R>(
        &self,
        db: u8,
        f: impl FnOnce(&mut HashMap<Vec<u8>, Kept>) -> (u64, R),
    ) -> R {
        let _step = self.step.write();
        let mut kept = self.kept.lock();
        let (cursor, result) = f(&mut kept);
        let walked = if cursor == 0 { u64::MAX } else { cursor };
        self.walked[usize::from(db)].store(walked, Ordering::Release);
        result
    }

    /// What is kept for keys of `db` the walk did not meet (deleted since the instant),
    /// once the walk of `db` is done.
    pub(crate) fn take_unmet(&self, db: u8) -> Vec<(Vec<u8>, Kept)> {
        let _step = self.step.write();
        let mut kept = self.kept.lock();
        let of_db = |stored: &Vec<u8>| keyspace::decode(stored).is_some_and(|(d, _)| d == db);
        let keys: Vec<Vec<u8>> = kept.keys().filter(|stored| of_db(stored)).cloned().collect();
        keys.into_iter().filter_map(|stored| kept.remove_entry(&stored)).collect()
    }

    /// Whether anything is kept for a key of `db`.
    pub(crate) fn holds_db(&self, db: u8) -> bool {
        let kept = self.kept.lock();
        kept.keys().any(|stored| keyspace::decode(stored).is_some_and(|(d, _)| d == db))
    }
}

/// The state of the key stored as `stored`, now; None for a large collection of more
/// than `room_bytes`.
fn state_of(shared: &Shared, stored: &[u8], room_bytes: usize) -> Option<Kept> {
    let reader = shared.core.store.reader();
    let Some(item) = reader.peek(stored) else { return Some(Kept::Absent) };
    if !item.is_owner() {
        return Some(kept_item(&item));
    }
    let owned_bytes = shared.owned.get(item.value()).map_or(0, |o| o.state.lock().value_bytes);
    if owned_bytes > room_bytes {
        return None;
    }
    Some(match crate::resp::cluster::value_of(shared, &item) {
        Some(value) => Kept::Value { value, expiry: item.expiry() },
        None => Kept::Absent,
    })
}

fn kept_item(item: &Item<'_>) -> Kept {
    Kept::Item {
        kind: item.value_kind(),
        value: item.value().to_vec(),
        flags: item.flags(),
        cas: item.cas(),
        expiry: item.expiry(),
    }
}

#[cfg(test)]
mod tests;
