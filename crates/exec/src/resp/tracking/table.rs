//! The shared side of client-side caching: the tracking table (key -> ids of the clients
//! that read it), the broadcast prefixes, and each tracking client's [`Tracker`].
//!
//! ```text
//!   GET k by a tracking client (any worker)       SET k (any worker, either protocol),
//!     shard(k).lock(): k -> [ids] += id             expiry, eviction (store observers)
//!     past tracking-table-max-keys? evict the         Tracking::any()? one relaxed load
//!     oldest keys (FIFO per shard, round robin)       yes: shard(k).lock(): take k's ids
//!     with an invalidation each                       each id's Tracker -> its mailbox or
//!                                                     its REDIRECT target's; wake loops
//!                                                   BCAST: prefixes matching k -> same
//! ```
//!
//! Keys are the names clients use, without the database (as Redis tracks them: a write of
//! `k` in any database invalidates readers of `k`). A key's entry goes when the key is
//! invalidated: a client that read it again is tracked again. Entries of clients that
//! turned tracking off or disconnected are dropped lazily, when their key is invalidated
//! or evicted from the table (Redis does the same), and all at once when the last
//! tracking client goes.
//!
//! Lock order: a shard, then `trackers` (read), then a mailbox. Nothing here calls into
//! the store while holding a lock, so the store's observers (called under its locks) can
//! invalidate.

use std::{
    collections::{HashMap, HashSet, VecDeque},
    sync::{
        atomic::{AtomicUsize, Ordering::Relaxed},
        Arc,
    },
};

use parking_lot::{Mutex, RwLock};
use xxhash_rust::xxh3::{xxh3_64, Xxh3DefaultBuilder};

use crate::resp::pubsub::{Registry, Subscriber, Woken};

/// Shards of the table: a read by a tracking client locks one.
const SHARDS: usize = 16;

/// Redis's default `tracking-table-max-keys`.
pub const MAX_KEYS_DEFAULT: usize = 1_000_000;

/// Table evictions one remembering client may do in one go (the rest later).
const EVICTIONS_PER_CALL_MAX: usize = 1000;

/// Bytes charged per table key beyond its name (twice: map and queue): hash map slot,
/// the ids vector's header, the queue slot, allocator overhead.
const KEY_OVERHEAD_BYTES: usize = 96;
/// Bytes per client id in a key's list.
const ITEM_BYTES: usize = 8;
/// The store is charged in steps of this much, so a read does not touch its counters.
pub(crate) const CHARGE_STEP_BYTES: usize = 64 << 10;

/// The channel RESP2 clients get invalidations on (through REDIRECT).
pub const INVALIDATE_CHANNEL: &[u8] = b"__redis__:invalidate";

/// One tracking client's mode, as writers on other workers read it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Mode {
    pub(crate) on: bool,
    pub(crate) bcast: bool,
    pub(crate) optin: bool,
    pub(crate) optout: bool,
    pub(crate) noloop: bool,
    /// Its REDIRECT target went away (TRACKINGINFO `broken_redirect`, CLIENT LIST `R`).
    pub(crate) broken_redirect: bool,
    /// 0: none.
    pub(crate) redirect: u64,
    /// BCAST prefixes, sorted.
    pub(crate) prefixes: Vec<Vec<u8>>,
}

/// A client that has turned tracking on at least once.
#[derive(Debug)]
pub(crate) struct Tracker {
    pub(crate) id: u64,
    /// Its own connection's mailbox.
    pub(crate) mailbox: Arc<Subscriber>,
    pub(crate) mode: Mutex<Mode>,
    /// CLIENT LIST's flags and `redir=` (set with the mode).
    pub(crate) activity: Arc<crate::resp::clients::Activity>,
}

/// What an invalidation names.
#[derive(Clone, Copy)]
pub(crate) enum Payload<'a> {
    Keys(&'a [&'a [u8]]),
    /// FLUSHALL / FLUSHDB: every key (a null).
    All,
}

#[derive(Default)]
struct Shard {
    map: HashMap<Box<[u8]>, Entry, Xxh3DefaultBuilder>,
    /// Keys in the order they entered the map, with the sequence number they entered
    /// with; a key whose entry has another number (it went and came back) is stale.
    order: VecDeque<(u64, Box<[u8]>)>,
    seq: u64,
}

struct Entry {
    seq: u64,
    ids: Vec<u64>,
}

impl Shard {
    /// Drops stale queue slots once they are half of it (amortized O(1) per key).
    fn compact(&mut self) {
        if self.order.len() > 64 && self.order.len() > 2 * self.map.len() {
            let map = &self.map;
            self.order.retain(|(seq, key)| map.get(key).is_some_and(|e| e.seq == *seq));
        }
    }

    /// Takes the oldest key and its ids.
    fn pop_oldest(&mut self) -> Option<(Box<[u8]>, Vec<u64>)> {
        while let Some((seq, key)) = self.order.pop_front() {
            if self.map.get(&key).is_some_and(|e| e.seq == seq) {
                let entry = self.map.remove(&key).expect("just found");
                return Some((key, entry.ids));
            }
        }
        None
    }
}

/// Where one invalidation's messages go besides mailboxes: the loops to wake, and the
/// messages for one client kept apart (a served blocked client's, sent after its reply).
#[derive(Default)]
pub(crate) struct Sink {
    woken: Woken,
    capture: Option<(u64, Vec<u8>)>,
}

/// A BCAST prefix and the clients that registered it.
type Prefix = (Vec<u8>, Vec<Arc<Tracker>>);

/// Client-side caching's shared state (in `RedisState::tracking`).
pub struct Tracking {
    /// Clients with tracking on, in any mode: the one relaxed load a write pays.
    clients: AtomicUsize,
    /// Distinct (client, prefix) registrations of BCAST clients.
    prefix_count: AtomicUsize,
    shards: Box<[Mutex<Shard>]>,
    keys: AtomicUsize,
    items: AtomicUsize,
    /// Bytes the table holds (an estimate, see `KEY_OVERHEAD_BYTES`).
    bytes: AtomicUsize,
    /// What the store was charged for it ([`Tracking::settle_charge`]).
    charged: AtomicUsize,
    /// Held by the one settling the charge.
    settling: Mutex<()>,
    max_keys: AtomicUsize,
    /// The next shard to evict from.
    evict_cursor: AtomicUsize,
    /// BCAST: prefix -> its clients, sorted by prefix.
    prefixes: RwLock<Vec<Prefix>>,
    /// Every client that has turned tracking on and is still connected.
    trackers: RwLock<HashMap<u64, Arc<Tracker>>>,
    /// REDIRECT targets: how many trackers name each, and those that closed (a target
    /// with no mailbox is alive but gets nothing; a closed one is a broken redirect).
    targets: Mutex<Targets>,
}

#[derive(Default)]
struct Targets {
    named: HashMap<u64, usize>,
    closed: HashSet<u64>,
}

impl Default for Tracking {
    fn default() -> Self {
        Tracking {
            clients: AtomicUsize::new(0),
            prefix_count: AtomicUsize::new(0),
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            keys: AtomicUsize::new(0),
            items: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            charged: AtomicUsize::new(0),
            settling: Mutex::new(()),
            max_keys: AtomicUsize::new(MAX_KEYS_DEFAULT),
            evict_cursor: AtomicUsize::new(0),
            prefixes: RwLock::new(Vec::new()),
            trackers: RwLock::new(HashMap::new()),
            targets: Mutex::new(Targets::default()),
        }
    }
}

impl std::fmt::Debug for Tracking {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracking").field("clients", &self.clients()).finish_non_exhaustive()
    }
}

fn shard_of(key: &[u8]) -> usize {
    (xxh3_64(key) >> 32) as usize % SHARDS
}

fn key_bytes(key: &[u8]) -> usize {
    2 * key.len() + KEY_OVERHEAD_BYTES
}

impl Tracking {
    /// Whether any client tracks: one relaxed load, all a write pays when none does.
    #[inline]
    pub fn any(&self) -> bool {
        self.clients.load(Relaxed) != 0
    }

    pub fn clients(&self) -> usize {
        self.clients.load(Relaxed)
    }

    /// INFO's `tracking_total_keys`, `tracking_total_items`, `tracking_total_prefixes`.
    pub fn totals(&self) -> (usize, usize, usize) {
        let prefixes = self.prefixes.read().len();
        (self.keys.load(Relaxed), self.items.load(Relaxed), prefixes)
    }

    /// Bytes the table is estimated to hold.
    pub fn table_bytes(&self) -> usize {
        self.bytes.load(Relaxed)
    }

    pub fn max_keys(&self) -> usize {
        self.max_keys.load(Relaxed)
    }

    pub fn set_max_keys(&self, max: usize) {
        self.max_keys.store(max, Relaxed);
    }

    pub(crate) fn register(&self, tracker: &Arc<Tracker>) {
        self.trackers.write().insert(tracker.id, Arc::clone(tracker));
    }

    /// A client turned tracking on (it was off).
    pub(crate) fn client_on(&self) {
        self.clients.fetch_add(1, Relaxed);
    }

    /// A client turned tracking off (it was on); the last one leaves an empty table.
    pub(crate) fn client_off(&self) {
        if self.clients.fetch_sub(1, Relaxed) == 1 {
            for shard in self.shards.iter() {
                let mut shard = shard.lock();
                let (keys, items) = (shard.map.len(), shard.map.values().map(|e| e.ids.len()));
                let items: usize = items.sum();
                let bytes: usize =
                    shard.map.keys().map(|k| key_bytes(k)).sum::<usize>() + items * ITEM_BYTES;
                *shard = Shard::default();
                self.keys.fetch_sub(keys, Relaxed);
                self.items.fetch_sub(items, Relaxed);
                self.bytes.fetch_sub(bytes, Relaxed);
            }
        }
    }

    /// A closed connection: it no longer receives anything.
    pub(crate) fn forget(&self, id: u64) {
        self.trackers.write().remove(&id);
    }

    /// A tracker redirects to `id` (0: none) instead of `old`.
    pub(crate) fn retarget(&self, old: u64, id: u64) {
        if old == id {
            return;
        }
        let mut targets = self.targets.lock();
        if old != 0 {
            if let Some(count) = targets.named.get_mut(&old) {
                *count -= 1;
                if *count == 0 {
                    targets.named.remove(&old);
                    targets.closed.remove(&old);
                }
            }
        }
        if id != 0 {
            *targets.named.entry(id).or_default() += 1;
        }
    }

    /// Client `id` closed (asked only while someone tracks).
    pub(crate) fn closed(&self, id: u64) {
        let mut targets = self.targets.lock();
        if targets.named.contains_key(&id) {
            targets.closed.insert(id);
        }
    }

    pub(crate) fn add_prefix(&self, prefix: &[u8], tracker: &Arc<Tracker>) {
        let mut prefixes = self.prefixes.write();
        let at = match prefixes.binary_search_by(|(p, _)| p.as_slice().cmp(prefix)) {
            Ok(at) => at,
            Err(at) => {
                prefixes.insert(at, (prefix.to_vec(), Vec::new()));
                at
            }
        };
        let clients = &mut prefixes[at].1;
        if !clients.iter().any(|t| t.id == tracker.id) {
            clients.push(Arc::clone(tracker));
            self.prefix_count.fetch_add(1, Relaxed);
        }
    }

    pub(crate) fn remove_prefixes(&self, prefixes_of: &[Vec<u8>], id: u64) {
        let mut prefixes = self.prefixes.write();
        for prefix in prefixes_of {
            if let Ok(at) = prefixes.binary_search_by(|(p, _)| p.as_slice().cmp(prefix)) {
                let clients = &mut prefixes[at].1;
                let before = clients.len();
                clients.retain(|t| t.id != id);
                self.prefix_count.fetch_sub(before - clients.len(), Relaxed);
                if clients.is_empty() {
                    prefixes.remove(at);
                }
            }
        }
    }

    /// Remembers that client `id` read `keys`; evicts the oldest keys past the limit.
    pub(crate) fn remember(&self, pubsub: &Registry, keys: &[&[u8]], id: u64, worker: usize) {
        for key in keys {
            let mut shard = self.shards[shard_of(key)].lock();
            let shard = &mut *shard;
            if let Some(entry) = shard.map.get_mut(*key) {
                if !entry.ids.contains(&id) {
                    entry.ids.push(id);
                    self.items.fetch_add(1, Relaxed);
                    self.bytes.fetch_add(ITEM_BYTES, Relaxed);
                }
                continue;
            }
            shard.seq += 1;
            let seq = shard.seq;
            shard.map.insert((*key).into(), Entry { seq, ids: vec![id] });
            shard.order.push_back((seq, (*key).into()));
            shard.compact();
            self.keys.fetch_add(1, Relaxed);
            self.items.fetch_add(1, Relaxed);
            self.bytes.fetch_add(key_bytes(key) + ITEM_BYTES, Relaxed);
        }
        self.limit(pubsub, worker);
    }

    /// Evicts keys (oldest first, shards in turn) while the table is over its limit, each
    /// with an invalidation, as Redis does; at most [`EVICTIONS_PER_CALL_MAX`] per call.
    pub(crate) fn limit(&self, pubsub: &Registry, worker: usize) {
        let max = self.max_keys();
        if max == 0 || self.keys.load(Relaxed) <= max {
            return;
        }
        let mut sink = Sink::default();
        let mut evicted = 0;
        let mut empty_shards = 0;
        while self.keys.load(Relaxed) > max
            && evicted < EVICTIONS_PER_CALL_MAX
            && empty_shards < SHARDS
        {
            let at = self.evict_cursor.fetch_add(1, Relaxed) % SHARDS;
            let Some((key, ids)) = self.shards[at].lock().pop_oldest() else {
                empty_shards += 1;
                continue;
            };
            empty_shards = 0;
            evicted += 1;
            self.took(&key, ids.len());
            self.send_to(pubsub, &ids, Payload::Keys(&[&key]), 0, &mut sink);
        }
        wake(pubsub, &sink.woken, worker);
    }

    fn took(&self, key: &[u8], ids: usize) {
        self.keys.fetch_sub(1, Relaxed);
        self.items.fetch_sub(ids, Relaxed);
        self.bytes.fetch_sub(key_bytes(key) + ids * ITEM_BYTES, Relaxed);
    }

    /// `keys` (names without the database) changed, by client `writer` (0: not a Redis
    /// client) on worker `worker` (`usize::MAX`: not a worker, the store's observers):
    /// every client that read one gets an invalidation and is forgotten for it; BCAST
    /// clients of a matching prefix get one message per prefix.
    pub fn invalidate(&self, pubsub: &Registry, keys: &[&[u8]], writer: u64, worker: usize) {
        let mut sink = Sink::default();
        self.invalidate_readers(pubsub, keys, writer, &mut sink);
        if self.prefix_count.load(Relaxed) > 0 {
            self.broadcast(pubsub, keys, writer, &mut sink);
        }
        wake(pubsub, &sink.woken, worker);
    }

    /// [`Tracking::invalidate`] of the keys a served blocked command (BLMOVE, BLPOP, ...)
    /// changed, for client `served`: its own invalidations are returned, to follow the
    /// reply it is about to get, instead of reaching its mailbox before that reply.
    pub(crate) fn invalidate_served(
        &self,
        pubsub: &Registry,
        keys: &[&[u8]],
        served: u64,
        worker: usize,
    ) -> Vec<u8> {
        let mut sink = Sink { capture: Some((served, Vec::new())), ..Sink::default() };
        self.invalidate_readers(pubsub, keys, served, &mut sink);
        if self.broadcasting() {
            self.broadcast(pubsub, keys, served, &mut sink);
        }
        wake(pubsub, &sink.woken, worker);
        sink.capture.map(|(_, captured)| captured).unwrap_or_default()
    }

    /// Whether some BCAST client has a prefix (a command's writes are then gathered for
    /// [`Tracking::broadcast_keys`]).
    pub(crate) fn broadcasting(&self) -> bool {
        self.prefix_count.load(Relaxed) > 0
    }

    /// [`Tracking::invalidate`] for the clients that read `keys` only, not BCAST ones.
    pub(crate) fn invalidate_table(
        &self,
        pubsub: &Registry,
        keys: &[&[u8]],
        writer: u64,
        worker: usize,
    ) {
        let mut sink = Sink::default();
        self.invalidate_readers(pubsub, keys, writer, &mut sink);
        wake(pubsub, &sink.woken, worker);
    }

    /// BCAST clients of prefixes matching `keys` (a whole command's or transaction's
    /// writes, gathered) get one message per prefix.
    pub(crate) fn broadcast_keys(
        &self,
        pubsub: &Registry,
        keys: &[&[u8]],
        writer: u64,
        worker: usize,
    ) {
        let mut sink = Sink::default();
        if self.broadcasting() {
            self.broadcast(pubsub, keys, writer, &mut sink);
        }
        wake(pubsub, &sink.woken, worker);
    }

    fn invalidate_readers(&self, pubsub: &Registry, keys: &[&[u8]], writer: u64, sink: &mut Sink) {
        for key in keys {
            let taken = self.shards[shard_of(key)].lock().map.remove(*key);
            if let Some(entry) = taken {
                self.took(key, entry.ids.len());
                self.send_to(pubsub, &entry.ids, Payload::Keys(&[key]), writer, sink);
            }
        }
    }

    fn send_to(
        &self,
        pubsub: &Registry,
        ids: &[u64],
        payload: Payload<'_>,
        writer: u64,
        sink: &mut Sink,
    ) {
        let trackers = self.trackers.read();
        for id in ids {
            let Some(tracker) = trackers.get(id) else { continue };
            let mode = tracker.mode.lock();
            // A client that switched to BCAST since it read the key gets no table message.
            if !mode.on || mode.bcast || (mode.noloop && writer == tracker.id) {
                continue;
            }
            drop(mode);
            self.send(pubsub, tracker, payload, sink);
        }
    }

    fn broadcast(&self, pubsub: &Registry, keys: &[&[u8]], writer: u64, sink: &mut Sink) {
        let prefixes = self.prefixes.read();
        let mut matching: Vec<&[u8]> = Vec::new();
        for (prefix, clients) in prefixes.iter() {
            matching.clear();
            matching.extend(keys.iter().copied().filter(|key| key.starts_with(prefix)));
            if matching.is_empty() {
                continue;
            }
            for tracker in clients {
                let mode = tracker.mode.lock();
                if !mode.on || (mode.noloop && writer == tracker.id) {
                    continue;
                }
                drop(mode);
                self.send(pubsub, tracker, Payload::Keys(&matching), sink);
            }
        }
    }

    /// FLUSHALL / FLUSHDB: every tracking client gets a null invalidation; the table
    /// empties.
    pub fn flush(&self, pubsub: &Registry, worker: usize) {
        if !self.any() {
            return;
        }
        for shard in self.shards.iter() {
            let mut shard = shard.lock();
            let items: usize = shard.map.values().map(|e| e.ids.len()).sum();
            let bytes: usize =
                shard.map.keys().map(|k| key_bytes(k)).sum::<usize>() + items * ITEM_BYTES;
            self.keys.fetch_sub(shard.map.len(), Relaxed);
            self.items.fetch_sub(items, Relaxed);
            self.bytes.fetch_sub(bytes, Relaxed);
            *shard = Shard::default();
        }
        let mut sink = Sink::default();
        let trackers: Vec<Arc<Tracker>> = self.trackers.read().values().cloned().collect();
        for tracker in &trackers {
            if tracker.mode.lock().on {
                self.send(pubsub, tracker, Payload::All, &mut sink);
            }
        }
        wake(pubsub, &sink.woken, worker);
    }

    /// One invalidation for `tracker`: to its REDIRECT target if it has one (RESP3: a push;
    /// RESP2: a message on `__redis__:invalidate`, if subscribed), else to itself if it
    /// speaks RESP3 (RESP2 has no pushes on a normal connection: nothing is sent).
    fn send(&self, pubsub: &Registry, tracker: &Tracker, payload: Payload<'_>, sink: &mut Sink) {
        let redirect = tracker.mode.lock().redirect;
        // The null of a flush is in the tracking client's own protocol, even when redirected.
        let own_resp3 = tracker.mailbox.is_resp3();
        if let Some((id, captured)) = &mut sink.capture {
            if *id == tracker.id && redirect == 0 {
                if own_resp3 {
                    push_header(captured);
                    write_payload(captured, payload, true);
                }
                return;
            }
        }
        if redirect == 0 {
            let delivered = tracker.mailbox.deliver_with(|resp3, out| {
                if resp3 {
                    push_header(out);
                    write_payload(out, payload, true);
                }
            });
            if delivered && own_resp3 {
                sink.woken.add(tracker.mailbox.worker);
            }
            return;
        }
        let Some(target) = pubsub.client(redirect) else {
            if !self.targets.lock().closed.contains(&redirect) {
                // Connected without a mailbox (never subscribed): nothing to send to.
                return;
            }
            tracker.mode.lock().broken_redirect = true;
            tracker.activity.set(crate::resp::clients::flag::TRACKING_BROKEN_REDIR, true);
            let delivered = tracker.mailbox.deliver_with(|resp3, out| {
                if resp3 {
                    out.extend_from_slice(b">2\r\n$21\r\ntracking-redir-broken\r\n:");
                    out.extend_from_slice(redirect.to_string().as_bytes());
                    out.extend_from_slice(b"\r\n");
                }
            });
            if delivered && own_resp3 {
                sink.woken.add(tracker.mailbox.worker);
            }
            return;
        };
        let subscribed = target.is_subscribed();
        let mut wrote = false;
        target.deliver_with(|resp3, out| {
            if resp3 {
                push_header(out);
            } else if subscribed {
                out.extend_from_slice(b"*3\r\n$7\r\nmessage\r\n$20\r\n");
                out.extend_from_slice(INVALIDATE_CHANNEL);
                out.extend_from_slice(b"\r\n");
            } else {
                return;
            }
            write_payload(out, payload, own_resp3);
            wrote = true;
        });
        if wrote {
            sink.woken.add(target.worker);
        }
    }

    /// Charges the store for the table's growth (or gives back its shrinking) in steps of
    /// [`CHARGE_STEP_BYTES`]; called from command paths only, never from the store's
    /// observers, and with no lock of this module held (charging may evict, and eviction
    /// invalidates).
    pub(crate) fn settle_charge(&self, store: &store::Store) {
        let within = |used: usize, charged: usize| {
            used <= charged + CHARGE_STEP_BYTES && used + 2 * CHARGE_STEP_BYTES >= charged
        };
        if within(self.bytes.load(Relaxed), self.charged.load(Relaxed)) {
            return;
        }
        let Some(_settling) = self.settling.try_lock() else { return };
        let (used, charged) = (self.bytes.load(Relaxed), self.charged.load(Relaxed));
        if used > charged + CHARGE_STEP_BYTES {
            let more = (used - charged).next_multiple_of(CHARGE_STEP_BYTES);
            // Over the limit with nothing to evict the table still grows (it is bounded
            // by its own limit): charge it anyway, as Redis counts it in used_memory.
            if store.charge_outside(more).is_err() {
                store.force_charge_outside(more);
            }
            self.charged.store(charged + more, Relaxed);
        } else if used + 2 * CHARGE_STEP_BYTES < charged {
            let less = charged - used - CHARGE_STEP_BYTES;
            store.uncharge_outside(less);
            self.charged.store(charged - less, Relaxed);
        }
    }

    /// What the store is charged for the table now.
    pub fn charged_bytes(&self) -> usize {
        self.charged.load(Relaxed)
    }
}

fn wake(pubsub: &Registry, woken: &Woken, worker: usize) {
    woken.each(|target| pubsub.wake(target, target == worker));
}

fn push_header(out: &mut Vec<u8>) {
    out.extend_from_slice(b">2\r\n$10\r\ninvalidate\r\n");
}

fn write_payload(out: &mut Vec<u8>, payload: Payload<'_>, null_resp3: bool) {
    match payload {
        Payload::All if null_resp3 => out.extend_from_slice(b"_\r\n"),
        Payload::All => out.extend_from_slice(b"$-1\r\n"),
        Payload::Keys(keys) => {
            out.push(b'*');
            out.extend_from_slice(keys.len().to_string().as_bytes());
            out.extend_from_slice(b"\r\n");
            for key in keys {
                out.push(b'$');
                out.extend_from_slice(key.len().to_string().as_bytes());
                out.extend_from_slice(b"\r\n");
                out.extend_from_slice(key);
                out.extend_from_slice(b"\r\n");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tracker(id: u64, resp3: bool) -> Arc<Tracker> {
        let mode = Mode { on: true, ..Mode::default() };
        Arc::new(Tracker {
            id,
            mailbox: Arc::new(Subscriber::new(0, resp3)),
            mode: Mutex::new(mode),
            activity: Default::default(),
        })
    }

    fn drained(tracker: &Tracker) -> Vec<u8> {
        let mut out = Vec::new();
        tracker.mailbox.drain(&mut out);
        out
    }

    /// Goal: a read key is invalidated once, to each reader, and then forgotten; the
    /// counts INFO shows follow. Method: two RESP3 trackers, then a write.
    #[test]
    fn remember_invalidate_forget() {
        let (tracking, pubsub) = (Tracking::default(), Registry::default());
        let (a, b) = (tracker(1, true), tracker(2, true));
        for t in [&a, &b] {
            tracking.register(t);
            tracking.client_on();
        }
        tracking.remember(&pubsub, &[b"k", b"j"], 1, 0);
        tracking.remember(&pubsub, &[b"k"], 2, 0);
        tracking.remember(&pubsub, &[b"k"], 2, 0);
        assert_eq!(tracking.totals(), (2, 3, 0));
        assert!(tracking.table_bytes() > 0);
        tracking.invalidate(&pubsub, &[b"k"], 0, 0);
        let push = b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n";
        assert_eq!(drained(&a), push);
        assert_eq!(drained(&b), push);
        tracking.invalidate(&pubsub, &[b"k"], 0, 0);
        assert_eq!(drained(&a), b"");
        assert_eq!(tracking.totals(), (1, 1, 0));
        // NOLOOP: the client's own write is not sent back.
        a.mode.lock().noloop = true;
        tracking.invalidate(&pubsub, &[b"j"], 1, 0);
        assert_eq!(drained(&a), b"");
        assert_eq!(tracking.totals(), (0, 0, 0));
        assert_eq!(tracking.table_bytes(), 0);
    }

    /// Goal: past the limit the oldest keys leave the table with an invalidation, and the
    /// queue of keys in order stays bounded when keys come and go. Method: limit 2.
    #[test]
    fn limit_evicts_oldest_and_queue_stays_bounded() {
        let (tracking, pubsub) = (Tracking::default(), Registry::default());
        let a = tracker(1, true);
        tracking.register(&a);
        tracking.client_on();
        for round in 0..10_000u32 {
            let key = round.to_string();
            tracking.remember(&pubsub, &[key.as_bytes()], 1, 0);
            tracking.invalidate(&pubsub, &[key.as_bytes()], 0, 0);
        }
        let queued: usize = tracking.shards.iter().map(|s| s.lock().order.len()).sum();
        assert!(queued <= SHARDS * 65, "{queued}");
        drained(&a);
        tracking.set_max_keys(2);
        tracking.remember(&pubsub, &[b"old"], 1, 0);
        tracking.remember(&pubsub, &[b"mid"], 1, 0);
        tracking.remember(&pubsub, &[b"new"], 1, 0);
        assert_eq!(tracking.totals().0, 2);
        let sent = drained(&a);
        let pushes = sent.windows(10).filter(|w| w == b"invalidate").count();
        assert_eq!(pushes, 1, "{}", sent.escape_ascii());
    }

    /// Goal: a served blocked client's own invalidation is handed back (to follow its
    /// reply), others' reach their mailboxes; NOLOOP applies to the served client.
    /// Method: two RESP3 readers of one key, served client 1.
    #[test]
    fn served_client_gets_its_message_back() {
        let (tracking, pubsub) = (Tracking::default(), Registry::default());
        let (a, b) = (tracker(1, true), tracker(2, true));
        for t in [&a, &b] {
            tracking.register(t);
            tracking.client_on();
        }
        let push = b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n";
        tracking.remember(&pubsub, &[b"k"], 1, 0);
        tracking.remember(&pubsub, &[b"k"], 2, 0);
        assert_eq!(tracking.invalidate_served(&pubsub, &[b"k"], 1, 0), push);
        assert_eq!(drained(&a), b"");
        assert_eq!(drained(&b), push);
        a.mode.lock().noloop = true;
        tracking.remember(&pubsub, &[b"k"], 1, 0);
        assert_eq!(tracking.invalidate_served(&pubsub, &[b"k"], 1, 0), b"");
        assert_eq!(tracking.totals(), (0, 0, 0));
    }

    /// Goal: BCAST sends one message per matching prefix, with the command's matching
    /// keys; a flush sends a null in each client's protocol. Method: one RESP3 and one
    /// RESP2 client (the latter, without REDIRECT, gets nothing).
    #[test]
    fn bcast_and_flush() {
        let (tracking, pubsub) = (Tracking::default(), Registry::default());
        let (a, b) = (tracker(1, true), tracker(2, false));
        for t in [&a, &b] {
            t.mode.lock().bcast = true;
            tracking.register(t);
            tracking.client_on();
            tracking.add_prefix(b"p:", t);
        }
        tracking.invalidate(&pubsub, &[b"p:1", b"q:1", b"p:2"], 0, 0);
        assert_eq!(drained(&a), b">2\r\n$10\r\ninvalidate\r\n*2\r\n$3\r\np:1\r\n$3\r\np:2\r\n");
        assert_eq!(drained(&b), b"");
        tracking.flush(&pubsub, 0);
        assert_eq!(drained(&a), b">2\r\n$10\r\ninvalidate\r\n_\r\n");
        assert_eq!(tracking.totals().2, 1);
        tracking.remove_prefixes(&[b"p:".to_vec()], 1);
        tracking.remove_prefixes(&[b"p:".to_vec()], 2);
        assert_eq!(tracking.totals().2, 0);
        assert_eq!(tracking.prefix_count.load(Relaxed), 0);
    }
}
