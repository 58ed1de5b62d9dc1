//! Who listens to what, shared by every worker, and each subscriber's mailbox.
//!
//! ```text
//!   PUBLISH (any worker) --read lock--> channel's and matching patterns' subscribers
//!        each: message encoded in its protocol, appended to its mailbox (its own mutex)
//!        then each owning worker is woken once (the server's notifier: an eventfd that
//!        its loop watches), and its loop drains the mailboxes into the connections
//!   SUBSCRIBE / UNSUBSCRIBE / close --write lock--> the tables
//! ```
//!
//! A mailbox holding more than [`MAILBOX_LIMIT_BYTES`] (Redis's `client-output-buffer-limit
//! pubsub` hard limit, 32 MiB) is cut off: its subscriber stops receiving and its
//! connection is closed when its loop next drains it, while the others go on unaffected.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, Ordering::Relaxed},
        Arc, OnceLock,
    },
};

use parking_lot::{Mutex, RwLock};

use crate::resp::{
    acl::Account,
    glob::{self, Case},
};

/// Redis's default hard `client-output-buffer-limit` for pub/sub clients.
pub const MAILBOX_LIMIT_BYTES: usize = 32 << 20;

/// What wakes worker `i` (set once by the server); `true` when it is the calling worker
/// itself (it streams at the end of its turn, no system call).
pub type Notify = Box<dyn Fn(usize, bool) + Send + Sync>;

/// One subscribed connection, as publishers see it.
#[derive(Debug)]
pub struct Subscriber {
    /// The worker whose loop owns the connection.
    pub(crate) worker: usize,
    mailbox: Mutex<Mailbox>,
    /// Whether it has a subscription now (Redis's `CLIENT_PUBSUB`): a RESP2 connection
    /// receives redirected invalidations (`resp::tracking`) only then.
    subscribed: AtomicBool,
    /// The user its connection subscribed as: an ACL change that takes a subscription's
    /// channel from that user closes the connection ([`Registry::cut_off_revoked`]).
    account: Mutex<Option<Arc<Account>>>,
}

#[derive(Debug, Default)]
struct Mailbox {
    bytes: Vec<u8>,
    resp3: bool,
    cut_off: bool,
}

/// What a drain found.
#[derive(Debug, PartialEq, Eq)]
pub enum Drained {
    /// Bytes (maybe none) were appended; the connection goes on.
    Open,
    /// The mailbox went over its limit: close the connection.
    CutOff,
}

impl Subscriber {
    pub(crate) fn new(worker: usize, resp3: bool) -> Subscriber {
        let mailbox = Mutex::new(Mailbox { resp3, ..Mailbox::default() });
        let account = Mutex::new(None);
        Subscriber { worker, mailbox, subscribed: AtomicBool::new(false), account }
    }

    /// The user the connection is logged in as now.
    pub(crate) fn set_account(&self, account: Option<Arc<Account>>) {
        *self.account.lock() = account;
    }

    fn cut_off(&self) {
        let mut mailbox = self.mailbox.lock();
        mailbox.cut_off = true;
        mailbox.bytes = Vec::new();
    }

    pub(crate) fn set_resp3(&self, resp3: bool) {
        self.mailbox.lock().resp3 = resp3;
    }

    pub(crate) fn is_resp3(&self) -> bool {
        self.mailbox.lock().resp3
    }

    pub(crate) fn set_subscribed(&self, subscribed: bool) {
        self.subscribed.store(subscribed, Relaxed);
    }

    pub(crate) fn is_subscribed(&self) -> bool {
        self.subscribed.load(Relaxed)
    }

    /// Appends what `write` composes, told whether the connection speaks RESP3 (the
    /// tracking module's invalidations); false once cut off.
    pub(crate) fn deliver_with(&self, write: impl FnOnce(bool, &mut Vec<u8>)) -> bool {
        let mut mailbox = self.mailbox.lock();
        if mailbox.cut_off {
            return false;
        }
        let resp3 = mailbox.resp3;
        write(resp3, &mut mailbox.bytes);
        if mailbox.bytes.len() > MAILBOX_LIMIT_BYTES {
            mailbox.cut_off = true;
            mailbox.bytes = Vec::new();
        }
        true
    }

    /// Appends one message in the subscriber's protocol; false once cut off.
    fn deliver(&self, message: &mut Encoded<'_>) -> bool {
        let mut mailbox = self.mailbox.lock();
        if mailbox.cut_off {
            return false;
        }
        let bytes = message.get(mailbox.resp3);
        mailbox.bytes.extend_from_slice(bytes);
        if mailbox.bytes.len() > MAILBOX_LIMIT_BYTES {
            mailbox.cut_off = true;
            mailbox.bytes = Vec::new();
        }
        true
    }

    /// Appends bytes already framed (a MONITOR line); false once cut off.
    pub(crate) fn deliver_raw(&self, bytes: &[u8]) -> bool {
        let mut mailbox = self.mailbox.lock();
        if mailbox.cut_off {
            return false;
        }
        mailbox.bytes.extend_from_slice(bytes);
        if mailbox.bytes.len() > MAILBOX_LIMIT_BYTES {
            mailbox.cut_off = true;
            mailbox.bytes = Vec::new();
        }
        true
    }

    /// Whether it went over its limit (its connection is to be closed).
    pub fn is_cut_off(&self) -> bool {
        self.mailbox.lock().cut_off
    }

    /// Moves what waits into `out`.
    pub fn drain(&self, out: &mut Vec<u8>) -> Drained {
        let mut mailbox = self.mailbox.lock();
        if mailbox.cut_off {
            return Drained::CutOff;
        }
        if out.is_empty() {
            std::mem::swap(out, &mut mailbox.bytes);
        } else {
            out.append(&mut mailbox.bytes);
        }
        Drained::Open
    }
}

/// One message, encoded once per protocol on first need (a publish to many subscribers
/// copies bytes, it does not format them again).
struct Encoded<'a> {
    parts: [&'a [u8]; 4],
    len: usize,
    resp2: Vec<u8>,
    resp3: Vec<u8>,
}

impl<'a> Encoded<'a> {
    fn new(parts: &[&'a [u8]]) -> Encoded<'a> {
        let mut all: [&[u8]; 4] = [&[]; 4];
        all[..parts.len()].copy_from_slice(parts);
        Encoded { parts: all, len: parts.len(), resp2: Vec::new(), resp3: Vec::new() }
    }

    fn get(&mut self, resp3: bool) -> &[u8] {
        let (out, prefix) = if resp3 { (&mut self.resp3, b'>') } else { (&mut self.resp2, b'*') };
        if out.is_empty() {
            encode(out, prefix, &self.parts[..self.len]);
        }
        out
    }
}

/// A push of bulk strings: `*n` (RESP2) or `>n` (RESP3).
fn encode(out: &mut Vec<u8>, prefix: u8, parts: &[&[u8]]) {
    out.push(prefix);
    out.extend_from_slice(parts.len().to_string().as_bytes());
    out.extend_from_slice(b"\r\n");
    for part in parts {
        out.push(b'$');
        out.extend_from_slice(part.len().to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(part);
        out.extend_from_slice(b"\r\n");
    }
}

type Table = HashMap<Vec<u8>, Vec<Arc<Subscriber>>>;

/// The three namespaces: channels, patterns, shard channels (Redis 7 keeps shard channels
/// apart from the others even without a cluster).
#[derive(Default)]
pub struct Registry {
    channels: RwLock<Table>,
    patterns: RwLock<Table>,
    shard_channels: RwLock<Table>,
    /// Every connection's mailbox by client id, once it has one: where a tracking client's
    /// REDIRECT finds its target.
    by_client: RwLock<HashMap<u64, Arc<Subscriber>>>,
    notify: OnceLock<Notify>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").finish_non_exhaustive()
    }
}

/// Which table a subscription is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Channel,
    Pattern,
    Shard,
}

impl Registry {
    /// Sets what wakes a worker after its subscribers got mail (once, by the server).
    pub fn set_notify(&self, notify: Notify) {
        let _ = self.notify.set(notify);
    }

    /// Wakes worker `worker`'s loop (`own`: the caller's, woken without a system call);
    /// also used by blocked clients' replies (`resp::blocking`).
    pub fn wake(&self, worker: usize, own: bool) {
        if let Some(notify) = self.notify.get() {
            notify(worker, own);
        }
    }

    /// Makes `subscriber` findable by its connection's client id.
    pub(crate) fn register_client(&self, id: u64, subscriber: &Arc<Subscriber>) {
        self.by_client.write().insert(id, Arc::clone(subscriber));
    }

    /// Forgets a closed connection's mailbox.
    pub(crate) fn forget_client(&self, id: u64) {
        self.by_client.write().remove(&id);
    }

    /// The mailbox of client `id`, if it is connected and has one.
    pub(crate) fn client(&self, id: u64) -> Option<Arc<Subscriber>> {
        self.by_client.read().get(&id).cloned()
    }

    fn table(&self, kind: Kind) -> &RwLock<Table> {
        match kind {
            Kind::Channel => &self.channels,
            Kind::Pattern => &self.patterns,
            Kind::Shard => &self.shard_channels,
        }
    }

    pub(crate) fn add(&self, kind: Kind, name: &[u8], subscriber: &Arc<Subscriber>) {
        let mut table = self.table(kind).write();
        table.entry(name.to_vec()).or_default().push(Arc::clone(subscriber));
    }

    pub(crate) fn remove(&self, kind: Kind, name: &[u8], subscriber: &Arc<Subscriber>) {
        let mut table = self.table(kind).write();
        if let Some(list) = table.get_mut(name) {
            list.retain(|s| !Arc::ptr_eq(s, subscriber));
            if list.is_empty() {
                table.remove(name);
            }
        }
    }

    /// PUBLISH (or SPUBLISH with `shard`): delivers to the channel's subscribers and, for a
    /// plain channel, to those of every matching pattern; returns how many received it.
    pub(crate) fn publish(
        &self,
        channel: &[u8],
        message: &[u8],
        shard: bool,
        from_worker: usize,
    ) -> usize {
        let mut woken = Woken::default();
        let mut receivers = 0;
        let (table, kind) = if shard {
            (&self.shard_channels, b"smessage".as_slice())
        } else {
            (&self.channels, b"message".as_slice())
        };
        if let Some(list) = table.read().get(channel) {
            let mut encoded = Encoded::new(&[kind, channel, message]);
            for subscriber in list {
                if subscriber.deliver(&mut encoded) {
                    woken.add(subscriber.worker);
                }
                receivers += 1;
            }
        }
        if !shard {
            for (pattern, list) in self.patterns.read().iter() {
                if !glob::matches(pattern, channel, Case::Sensitive) {
                    continue;
                }
                let mut encoded = Encoded::new(&[b"pmessage", pattern, channel, message]);
                for subscriber in list {
                    if subscriber.deliver(&mut encoded) {
                        woken.add(subscriber.worker);
                    }
                    receivers += 1;
                }
            }
        }
        if let Some(notify) = self.notify.get() {
            woken.each(|worker| notify(worker, worker == from_worker));
        }
        receivers
    }

    /// Closes, as Redis does after an ACL change, every connection logged in as `account`
    /// that holds a subscription `allowed` no longer allows (its loop, woken, finds its
    /// mailbox cut off and closes it); with `account` deleted, every subscribed one.
    pub(crate) fn cut_off_revoked(
        &self,
        account: &Arc<Account>,
        allowed: impl Fn(Kind, &[u8]) -> bool,
    ) {
        let mut woken = Woken::default();
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            for (name, list) in self.table(kind).read().iter() {
                for subscriber in list {
                    let theirs =
                        subscriber.account.lock().as_ref().is_some_and(|a| Arc::ptr_eq(a, account));
                    if theirs && !allowed(kind, name) {
                        subscriber.cut_off();
                        woken.add(subscriber.worker);
                    }
                }
            }
        }
        if let Some(notify) = self.notify.get() {
            woken.each(|worker| notify(worker, false));
        }
    }

    /// Names in a table with at least one subscriber, matching `pattern` if given.
    pub(crate) fn names(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        let table = self.table(kind).read();
        let matching =
            |name: &&Vec<u8>| pattern.is_none_or(|p| glob::matches(p, name, Case::Sensitive));
        table.keys().filter(matching).cloned().collect()
    }

    /// Subscribers of one name.
    pub(crate) fn count(&self, kind: Kind, name: &[u8]) -> usize {
        self.table(kind).read().get(name).map_or(0, Vec::len)
    }

    /// Distinct names in a table (PUBSUB NUMPAT for patterns).
    pub(crate) fn len(&self, kind: Kind) -> usize {
        self.table(kind).read().len()
    }
}

/// The workers a publish must wake, each once.
#[derive(Default)]
pub(crate) struct Woken {
    low: u64,
    more: Vec<usize>,
}

impl Woken {
    pub(crate) fn add(&mut self, worker: usize) {
        match worker {
            0..64 => self.low |= 1 << worker,
            _ if !self.more.contains(&worker) => self.more.push(worker),
            _ => {}
        }
    }

    pub(crate) fn each(&self, notify: impl Fn(usize)) {
        let mut low = self.low;
        while low != 0 {
            let worker = low.trailing_zeros() as usize;
            notify(worker);
            low &= low - 1;
        }
        self.more.iter().for_each(|&worker| notify(worker));
    }
}
