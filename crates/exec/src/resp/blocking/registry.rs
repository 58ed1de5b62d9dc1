//! Who waits for which key, shared by every worker: one FIFO of waiters per stored key.
//!
//! ```text
//!   Waiters { waiting: AtomicUsize,            <- the one relaxed load a write pays
//!             inner: Mutex<Inner> }
//!   Inner   { keys:    stored key -> Queue { db, tickets: FIFO }
//!             waiters: ticket -> Waiter { worker, client id, protocol, command (RESP),
//!                                         keys, reply: None while it waits } }
//! ```
//!
//! A waiter is in the queue of each key it names, in arrival order, until it is answered:
//! served (a writer popped for it and put its reply here), unblocked (CLIENT UNBLOCK) or
//! timed out (its own loop cancels it), or gone (its connection closed). Answered, it
//! leaves every queue at once, so a queue only ever holds waiters that still wait; its
//! reply stays here until its own loop takes it. Every change happens under the one
//! mutex, so "served" and "timed out" cannot both happen to one waiter.
//!
//! Lock rule: the mutex is never held while waiting for the gate (`crate::gate`); serving
//! takes the gate first, then the mutex, and pops under it (the store's stripe lock comes
//! after; no holder of a stripe lock waits for this mutex). Everything else holds it
//! briefly, without the store.

use std::{
    collections::{HashMap, VecDeque},
    sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering},
};

use parking_lot::Mutex;
use proto_resp::Protocol;
use values::stream::StreamId;

use super::Kind;

/// One blocked client, as writers see it.
#[derive(Debug)]
pub(in crate::resp) struct Waiter {
    /// `CLIENT ID` of its connection (CLIENT UNBLOCK finds it by this).
    pub(in crate::resp) client_id: u64,
    /// The worker whose loop owns the connection (woken when its reply is ready).
    pub(in crate::resp) worker: usize,
    pub(in crate::resp) db: u8,
    pub(in crate::resp) protocol: Protocol,
    pub(in crate::resp) kind: Kind,
    /// The blocking command as RESP, parsed again to pop on its behalf.
    pub(in crate::resp) command: Vec<u8>,
    /// Each key it waits on (stored form, database included) and its argument index.
    pub(in crate::resp) keys: Vec<(Vec<u8>, usize)>,
    /// Whether it has a timeout (INFO `clients_in_timeout_table`).
    pub(in crate::resp) has_deadline: bool,
    /// XREAD: for each of `keys`, the ID its entries must follow, resolved when it blocked
    /// (`$` is the last ID then, not when served). Empty for the other kinds.
    pub(in crate::resp) after: Vec<StreamId>,
    /// Its answer, once it has one (it then waits in no queue).
    reply: Option<Vec<u8>>,
}

impl Waiter {
    #[allow(clippy::too_many_arguments)]
    pub(in crate::resp) fn new(
        client_id: u64,
        worker: usize,
        db: u8,
        protocol: Protocol,
        kind: Kind,
        command: Vec<u8>,
        keys: Vec<(Vec<u8>, usize)>,
        has_deadline: bool,
    ) -> Waiter {
        let after = Vec::new();
        Waiter {
            client_id,
            worker,
            db,
            protocol,
            kind,
            command,
            keys,
            has_deadline,
            after,
            reply: None,
        }
    }

    /// The ID after which key argument `index` is read (XREAD); the first key of that
    /// argument wins when a key is named twice, as in Redis.
    pub(in crate::resp) fn after_of(&self, index: usize) -> Option<StreamId> {
        let position = self.keys.iter().position(|(_, i)| *i == index)?;
        self.after.get(position).copied()
    }
}

/// What popping for a waiter found.
#[derive(Debug)]
pub(in crate::resp) enum Attempt {
    /// It got elements: its reply, and the key the pop pushed to (BLMOVE), which may wake
    /// others in turn.
    Served { reply: Vec<u8>, pushed: Option<Vec<u8>> },
    /// The key holds nothing for it (absent, or of another type): it and those behind it
    /// keep waiting.
    Empty,
    /// Its pop was refused (BLMOVE to a key of another type), or it reads a stream that
    /// has nothing new for it: it keeps waiting, and the next waiter is tried.
    Refused,
}

#[derive(Debug)]
struct Queue {
    db: u8,
    tickets: VecDeque<u64>,
    /// How many of `tickets` read streams: after a pop finds the key empty, only they are
    /// still asked (a stream waiter may be answered by a deleted key, and one is not
    /// served in order: each reads past its own ID).
    streams: usize,
}

#[derive(Debug, Default)]
struct Inner {
    keys: HashMap<Vec<u8>, Queue>,
    waiters: HashMap<u64, Waiter>,
    next_ticket: u64,
}

impl Inner {
    /// Takes `ticket` out of the queues of its keys (it was answered, or is leaving) and
    /// out of their filter buckets.
    fn dequeue(&mut self, ticket: u64, filter: &KeyFilter) {
        let Some(waiter) = self.waiters.get(&ticket) else { return };
        for (key, _) in &waiter.keys {
            if let Some(queue) = self.keys.get_mut(key) {
                let before = queue.tickets.len();
                queue.tickets.retain(|&t| t != ticket);
                if queue.tickets.len() < before {
                    filter.remove(key);
                    queue.streams -= usize::from(waiter.kind.is_stream());
                }
                if queue.tickets.is_empty() {
                    self.keys.remove(key);
                }
            }
        }
    }
}

/// Buckets in [`KeyFilter`]: a power of two.
const FILTER_BUCKETS: usize = 4096;

/// A counting filter over the waited-on keys: a bucket per hash of the key, counting the
/// queue entries whose key falls in it. A write with a key whose bucket is 0 has no
/// waiter to serve and looks no further (no lock, no gate), so clients blocked on one
/// queue do not make every other write on the server pay. Counts change under the mutex;
/// reads are relaxed (the same ordering argument as [`Waiters::any`]).
struct KeyFilter {
    buckets: Box<[AtomicU32]>,
}

impl Default for KeyFilter {
    fn default() -> Self {
        KeyFilter { buckets: (0..FILTER_BUCKETS).map(|_| AtomicU32::new(0)).collect() }
    }
}

impl std::fmt::Debug for KeyFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyFilter").finish_non_exhaustive()
    }
}

impl KeyFilter {
    fn bucket(&self, key: &[u8]) -> &AtomicU32 {
        let hash = xxhash_rust::xxh3::xxh3_64(key) as usize;
        &self.buckets[hash & (FILTER_BUCKETS - 1)]
    }

    fn add(&self, key: &[u8]) {
        self.bucket(key).fetch_add(1, Ordering::Relaxed);
    }

    fn remove(&self, key: &[u8]) {
        let previous = self.bucket(key).fetch_sub(1, Ordering::Relaxed);
        assert!(previous > 0, "a filter bucket counts every queue entry of its keys");
    }

    fn may_hold(&self, key: &[u8]) -> bool {
        self.bucket(key).load(Ordering::Relaxed) != 0
    }
}

/// The shared table of blocked clients (see the module docs).
#[derive(Debug, Default)]
pub struct Waiters {
    /// Waiters without an answer yet: zero while nobody blocks, so a write checks it with
    /// one relaxed load. Changed only under the mutex.
    waiting: AtomicUsize,
    filter: KeyFilter,
    inner: Mutex<Inner>,
    /// Keys that expired while someone may have waited on them (stored form), for the
    /// next serving: the store's expiry observer runs inside the store and cannot serve.
    expired: Mutex<Vec<Vec<u8>>>,
    /// Whether `expired` may hold a key (so that taking costs one load when not).
    expired_noted: AtomicBool,
}

impl Waiters {
    /// Whether any client waits: a write that may make a key ready looks no further when
    /// not. Relaxed is enough: a waiter counts itself before it looks at its keys under
    /// their stripe locks, so a write that comes after that look (the lock orders them)
    /// sees the count, and one that came before left an element that the look found.
    #[inline]
    pub fn any(&self) -> bool {
        self.waiting.load(Ordering::Relaxed) != 0
    }

    /// The store expired `key` (stored form): if someone may wait on it, it is noted to
    /// be served (an XREADGROUP waiter is then answered as for a deleted key, as Redis
    /// 7.0 answers it whether the key expires lazily or in the active cycle).
    pub fn note_expired(&self, key: &[u8]) {
        if self.any() && self.may_wait_on(key) {
            self.expired.lock().push(key.to_vec());
            self.expired_noted.store(true, Ordering::Relaxed);
        }
    }

    /// The keys [`Waiters::note_expired`] noted since the last call.
    pub(super) fn take_expired(&self) -> Vec<Vec<u8>> {
        if !self.expired_noted.swap(false, Ordering::Relaxed) {
            return Vec::new();
        }
        std::mem::take(&mut *self.expired.lock())
    }

    /// Whether someone may wait on `key` (stored form): false means surely nobody does.
    #[inline]
    pub fn may_wait_on(&self, key: &[u8]) -> bool {
        self.filter.may_hold(key)
    }

    /// Blocked clients (INFO `blocked_clients`): waiting, or answered and not yet told.
    pub fn blocked_clients(&self) -> usize {
        self.inner.lock().waiters.len()
    }

    /// Blocked clients with a timeout (INFO `clients_in_timeout_table`).
    pub fn with_timeout(&self) -> usize {
        self.inner.lock().waiters.values().filter(|w| w.has_deadline).count()
    }

    /// Keys with at least one waiter.
    pub fn blocking_keys(&self) -> usize {
        self.inner.lock().keys.len()
    }

    /// Adds a waiter at the back of each of its keys' queues; returns its ticket.
    pub(in crate::resp) fn register(&self, waiter: Waiter) -> u64 {
        let mut inner = self.inner.lock();
        inner.next_ticket += 1;
        let ticket = inner.next_ticket;
        for (key, _) in &waiter.keys {
            let queue = inner.keys.entry(key.clone()).or_insert_with(|| Queue {
                db: waiter.db,
                tickets: VecDeque::new(),
                streams: 0,
            });
            // A key named twice (BLPOP k k 0) waits once.
            if queue.tickets.back() != Some(&ticket) {
                queue.tickets.push_back(ticket);
                queue.streams += usize::from(waiter.kind.is_stream());
                self.filter.add(key);
            }
        }
        inner.waiters.insert(ticket, waiter);
        self.waiting.fetch_add(1, Ordering::Relaxed);
        ticket
    }

    /// The reply of an answered waiter, which leaves the table; `None` while it waits.
    pub(in crate::resp) fn take(&self, ticket: u64) -> Option<Vec<u8>> {
        let mut inner = self.inner.lock();
        inner.waiters.get(&ticket)?.reply.as_ref()?;
        inner.waiters.remove(&ticket).and_then(|w| w.reply)
    }

    /// Removes a waiter whatever its state (timeout, disconnect); returns its reply if it
    /// was answered meanwhile (a timeout then sends that instead).
    pub(in crate::resp) fn cancel(&self, ticket: u64) -> Option<Vec<u8>> {
        let mut inner = self.inner.lock();
        let answered = inner.waiters.get(&ticket)?.reply.is_some();
        if !answered {
            inner.dequeue(ticket, &self.filter);
            self.waiting.fetch_sub(1, Ordering::Relaxed);
        }
        inner.waiters.remove(&ticket).and_then(|w| w.reply)
    }

    /// CLIENT UNBLOCK: answers the waiter of client `client_id` with `reply(waiter)` and
    /// returns its worker to wake; `None` when that client waits for nothing.
    pub(in crate::resp) fn unblock(
        &self,
        client_id: u64,
        reply: impl FnOnce(&Waiter) -> Vec<u8>,
    ) -> Option<usize> {
        let mut inner = self.inner.lock();
        let (&ticket, waiter) =
            inner.waiters.iter().find(|(_, w)| w.client_id == client_id && w.reply.is_none())?;
        let (bytes, worker) = (reply(waiter), waiter.worker);
        inner.dequeue(ticket, &self.filter);
        inner.waiters.get_mut(&ticket).expect("found above").reply = Some(bytes);
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        Some(worker)
    }

    /// The waited-on keys of the databases `of` picks (SWAPDB, FLUSHDB and FLUSHALL make
    /// them all worth a look).
    pub(in crate::resp) fn keys_in(&self, of: impl Fn(u8) -> bool) -> Vec<Vec<u8>> {
        let inner = self.inner.lock();
        inner.keys.iter().filter(|(_, q)| of(q.db)).map(|(key, _)| key.clone()).collect()
    }

    /// Serves the waiters of `ready` keys in arrival order: for each key, `pop` is asked
    /// for its waiters front to back until one finds it empty (after which only stream
    /// readers are still asked); a served waiter gets its
    /// reply and leaves every queue, and `wake` is called with its worker. A key a pop
    /// pushed to (BLMOVE's destination) is served in turn, after the others, at most
    /// `MOVES_MAX` times per call (a ring of BLMOVEs between two lists could go on forever).
    pub(in crate::resp) fn serve(
        &self,
        ready: Vec<Vec<u8>>,
        mut pop: impl FnMut(&Waiter, usize) -> Attempt,
        mut wake: impl FnMut(usize),
    ) {
        const MOVES_MAX: usize = 1024;
        let mut inner = self.inner.lock();
        let mut ready = VecDeque::from(ready);
        let mut moves = 0;
        while let Some(key) = ready.pop_front() {
            let (mut at, mut dry) = (0, false);
            while let Some(&ticket) = inner.keys.get(&key).and_then(|q| q.tickets.get(at)) {
                let waiter = inner.waiters.get(&ticket).expect("queued tickets have waiters");
                if dry && !waiter.kind.is_stream() {
                    at += 1;
                    continue;
                }
                let index = waiter.keys.iter().find(|(k, _)| *k == key).map_or(0, |(_, i)| *i);
                match pop(waiter, index) {
                    Attempt::Served { reply, pushed } => {
                        let worker = waiter.worker;
                        inner.dequeue(ticket, &self.filter);
                        inner.waiters.get_mut(&ticket).expect("just used").reply = Some(reply);
                        self.waiting.fetch_sub(1, Ordering::Relaxed);
                        wake(worker);
                        if let Some(pushed) = pushed.filter(|_| moves < MOVES_MAX) {
                            moves += 1;
                            ready.push_back(pushed);
                        }
                    }
                    Attempt::Empty if inner.keys.get(&key).is_none_or(|q| q.streams == 0) => break,
                    Attempt::Empty => (at, dry) = (at + 1, true),
                    Attempt::Refused => at += 1,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiter(client_id: u64, keys: &[&[u8]]) -> Waiter {
        let keys = keys.iter().enumerate().map(|(i, k)| (k.to_vec(), i + 1)).collect();
        Waiter::new(client_id, 0, 0, Protocol::Resp2, Kind::Blpop, Vec::new(), keys, false)
    }

    /// Serves with `elements` available per key, each pop taking one; returns the client
    /// ids served, in order.
    fn serve_counted(waiters: &Waiters, ready: &[&[u8]], elements: usize) -> Vec<u64> {
        let mut left = elements;
        let mut served = Vec::new();
        let ready = ready.iter().map(|k| k.to_vec()).collect();
        waiters.serve(
            ready,
            |w, _| {
                if left == 0 {
                    return Attempt::Empty;
                }
                left -= 1;
                served.push(w.client_id);
                Attempt::Served { reply: vec![w.client_id as u8], pushed: None }
            },
            |_| {},
        );
        served
    }

    /// Goal: waiters of a key are served in arrival order, only as many as there are
    /// elements, and the rest keep their places. Method: three waiters, two elements,
    /// then one more.
    #[test]
    fn fifo_per_key() {
        let waiters = Waiters::default();
        let tickets: Vec<u64> = (1..=3).map(|id| waiters.register(waiter(id, &[b"k"]))).collect();
        assert!(waiters.any());
        assert_eq!(serve_counted(&waiters, &[b"k"], 2), vec![1, 2]);
        assert_eq!(waiters.take(tickets[0]), Some(vec![1]));
        assert_eq!(waiters.take(tickets[2]), None, "still waiting");
        assert_eq!(serve_counted(&waiters, &[b"k"], 5), vec![3]);
        assert_eq!(waiters.take(tickets[1]), Some(vec![2]));
        assert_eq!(waiters.take(tickets[2]), Some(vec![3]));
        assert!(!waiters.any());
        assert!(!waiters.may_wait_on(b"k"), "the filter forgets a key with no waiters");
        assert_eq!((waiters.blocked_clients(), waiters.blocking_keys()), (0, 0));
    }

    /// Goal: a waiter on several keys is served once and leaves every queue. Method: one
    /// waiter on a and b, served through b; a later serve of a finds nobody.
    #[test]
    fn served_once_across_keys() {
        let waiters = Waiters::default();
        let both = waiters.register(waiter(1, &[b"a", b"b"]));
        let only_a = waiters.register(waiter(2, &[b"a"]));
        assert_eq!(serve_counted(&waiters, &[b"b"], 9), vec![1]);
        assert_eq!(serve_counted(&waiters, &[b"a"], 9), vec![2]);
        assert!(waiters.take(both).is_some() && waiters.take(only_a).is_some());
        assert_eq!(waiters.blocking_keys(), 0);
    }

    /// Goal: a stream reader behind a list waiter on the same key is still asked when the
    /// list pop finds the key empty (a deleted key answers XREADGROUP), and a refused
    /// reader does not stop the ones behind it. Method: list, stream, stream waiters; the
    /// pop finds nothing, the first reader refuses, the second is served.
    #[test]
    fn stream_readers_asked_past_an_empty_pop() {
        let waiters = Waiters::default();
        let reader = |id| {
            let keys = vec![(b"k".to_vec(), 1)];
            Waiter::new(id, 0, 0, Protocol::Resp2, Kind::Xread, Vec::new(), keys, false)
        };
        let list = waiters.register(waiter(1, &[b"k"]));
        let refused = waiters.register(reader(2));
        let served = waiters.register(reader(3));
        let mut asked = Vec::new();
        waiters.serve(
            vec![b"k".to_vec()],
            |w, _| {
                asked.push(w.client_id);
                match w.client_id {
                    1 => Attempt::Empty,
                    2 => Attempt::Refused,
                    _ => Attempt::Served { reply: b"r".to_vec(), pushed: None },
                }
            },
            |_| {},
        );
        assert_eq!(asked, vec![1, 2, 3]);
        assert_eq!(waiters.take(served), Some(b"r".to_vec()));
        assert_eq!((waiters.take(list), waiters.take(refused)), (None, None));
        assert_eq!(waiters.blocking_keys(), 1);
        waiters.cancel(list);
        waiters.cancel(refused);
        assert!(!waiters.any() && !waiters.may_wait_on(b"k"));
    }

    /// Goal: a cancelled waiter (timeout, disconnect) costs nothing afterwards, and a
    /// cancel that races a serve hands the served reply over. Method: cancel before and
    /// after serving.
    #[test]
    fn cancel_removes_or_returns_reply() {
        let waiters = Waiters::default();
        let gone = waiters.register(waiter(1, &[b"k", b"j", b"k"]));
        let served = waiters.register(waiter(2, &[b"k"]));
        assert!(waiters.may_wait_on(b"j") && waiters.may_wait_on(b"k"));
        assert_eq!(waiters.cancel(gone), None);
        assert!(!waiters.may_wait_on(b"j"));
        assert_eq!(serve_counted(&waiters, &[b"k", b"j"], 9), vec![2]);
        assert_eq!(waiters.cancel(served), Some(vec![2]));
        assert_eq!((waiters.blocked_clients(), waiters.blocking_keys()), (0, 0));
        assert!(waiters.filter.buckets.iter().all(|b| b.load(Ordering::Relaxed) == 0));
        assert!(!waiters.any());
        assert_eq!(waiters.cancel(served), None, "a second cancel finds nothing");
    }

    /// Goal: CLIENT UNBLOCK answers only a waiting client, once. Method: unblock twice.
    #[test]
    fn unblock_once() {
        let waiters = Waiters::default();
        let ticket = waiters.register(waiter(7, &[b"k"]));
        assert_eq!(waiters.unblock(8, |_| b"x".to_vec()), None);
        assert_eq!(waiters.unblock(7, |_| b"timeout".to_vec()), Some(0));
        assert_eq!(waiters.unblock(7, |_| b"again".to_vec()), None);
        assert!(!waiters.any());
        assert_eq!(serve_counted(&waiters, &[b"k"], 1), Vec::<u64>::new());
        assert_eq!(waiters.take(ticket), Some(b"timeout".to_vec()));
    }

    /// Goal: a refused pop (BLMOVE to a key of another type) skips that waiter only, and a
    /// pushed key is served in turn. Method: scripted attempts.
    #[test]
    fn refused_skips_and_pushed_chains() {
        let waiters = Waiters::default();
        let _mover = waiters.register(waiter(1, &[b"src"]));
        let _next = waiters.register(waiter(2, &[b"src"]));
        let _on_dst = waiters.register(waiter(3, &[b"dst"]));
        let mut seen = Vec::new();
        waiters.serve(
            vec![b"src".to_vec()],
            |w, _| {
                seen.push(w.client_id);
                match w.client_id {
                    1 => Attempt::Refused,
                    2 => Attempt::Served { reply: vec![2], pushed: Some(b"dst".to_vec()) },
                    _ => Attempt::Served { reply: vec![3], pushed: None },
                }
            },
            |_| {},
        );
        assert_eq!(seen, vec![1, 2, 3]);
        assert_eq!(waiters.blocked_clients(), 3);
        assert_eq!(waiters.blocking_keys(), 1, "only the refused waiter still waits");
    }
}
