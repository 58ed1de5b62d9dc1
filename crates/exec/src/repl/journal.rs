//! The primary's side of the stream: what each write appends (see the module comment of
//! `repl`), and the backlog and feeds it goes to.

use std::sync::Arc;

use parking_lot::MutexGuard;

use store::Expiry;

use super::{backlog::Backlog, Feed};
use crate::Shared;

/// The replication stream's state, under [`super::Replication::journal`]'s lock.
#[derive(Debug)]
pub(crate) struct Journal {
    /// `master_replid`: the history this server's offsets count in.
    pub replid: String,
    /// `master_replid2`: the history before the last promotion, continued up to
    /// `second_offset` (a replica of the old primary may continue from it).
    pub replid2: String,
    pub second_offset: i64,
    /// Created when the first replica asks, or when this server follows a primary.
    pub backlog: Option<Backlog>,
    /// `master_repl_offset` while there is no backlog.
    base_offset: u64,
    /// The database the stream last SELECTed (None: a SELECT comes first).
    last_db: Option<u8>,
    /// Replicas being fed.
    pub feeds: Vec<Arc<Feed>>,
    /// Full copies whose walk of the store is under way: no write is sent verbatim then
    /// (and a replica applies none of its primary's).
    pub walks: usize,
    /// A replica's full copies asked for, which its link thread starts between two
    /// commands of the stream (with whether the +FULLRESYNC line goes first).
    pub walk_requests: Vec<(Arc<Feed>, bool)>,
    scratch: Vec<u8>,
}

pub(crate) const NO_REPLID: &str = "0000000000000000000000000000000000000000";

impl Journal {
    pub fn new() -> Journal {
        Journal {
            replid: super::new_replid(),
            replid2: NO_REPLID.into(),
            second_offset: -1,
            backlog: None,
            base_offset: 0,
            last_db: None,
            feeds: Vec::new(),
            walks: 0,
            walk_requests: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// `master_repl_offset`.
    pub fn offset(&self) -> u64 {
        self.backlog.as_ref().map_or(self.base_offset, Backlog::end)
    }

    /// Makes the backlog if there is none (its first byte will be `offset + 1`).
    pub fn ensure_backlog(&mut self, size: usize) {
        if self.backlog.is_none() {
            self.backlog = Some(Backlog::new(size, self.base_offset));
        }
    }

    /// A new history from `offset` (a full copy from a primary, or a new primary's
    /// replication ID): the backlog restarts empty there, and the next entry SELECTs.
    pub fn restart_at(&mut self, replid: String, offset: u64, size: usize) {
        self.replid = replid;
        self.replid2 = NO_REPLID.into();
        self.second_offset = -1;
        self.base_offset = offset;
        self.backlog = Some(Backlog::new(size, offset));
        self.last_db = None;
    }

    /// Promotion: a new ID, the old one kept as the second, continued up to here.
    pub fn promote(&mut self) {
        let old = std::mem::replace(&mut self.replid, super::new_replid());
        self.replid2 = old;
        self.second_offset = self.offset() as i64 + 1;
        self.last_db = None;
    }

    /// Forgets which database the stream is in (the next entry SELECTs).
    pub fn forget_db(&mut self) {
        self.last_db = None;
    }

    /// The oldest offset a feed still needs.
    fn needed_from(&self) -> Option<u64> {
        self.feeds.iter().filter(|f| !f.is_gone()).map(|f| f.position()).min()
    }

    /// Appends stream bytes already framed (the link's copy of its primary's stream, or
    /// what [`Self::command`] built), and wakes the feeds.
    pub fn append_raw(&mut self, bytes: &[u8], repl: &super::Replication) {
        let needed = self.needed_from();
        match &mut self.backlog {
            Some(backlog) => backlog.append(bytes, needed),
            None => self.base_offset += bytes.len() as u64,
        }
        for feed in &self.feeds {
            if feed.ask_wake() {
                repl.wake(feed.worker, false);
            }
        }
    }

    /// Frames a command of `parts` into the scratch buffer (sent by [`Self::flush`]).
    pub fn command(&mut self, parts: &[&[u8]]) {
        proto_resp::compose_command(parts, &mut self.scratch);
    }

    /// A SELECT first when the stream is in another database.
    pub fn select(&mut self, db: u8) {
        if self.last_db != Some(db) {
            self.command(&[b"SELECT", db.to_string().as_bytes()]);
            self.last_db = Some(db);
        }
    }

    /// Appends what the scratch buffer holds.
    pub fn flush(&mut self, repl: &super::Replication) {
        if self.scratch.is_empty() {
            return;
        }
        let bytes = std::mem::take(&mut self.scratch);
        self.append_raw(&bytes, repl);
        self.scratch = bytes;
        self.scratch.clear();
    }

    /// The state of `key` in `db` as the store holds it now: SET (a string, with its
    /// expiry as PXAT, after the `spinel:mc` ECHO when `memcached` says its flags and
    /// CAS must travel), RESTORE ... REPLACE ABSTTL (a collection or stream), or DEL.
    pub fn key_state(&mut self, shared: &Shared, db: u8, key: &[u8], memcached: bool) {
        self.select(db);
        let mut scratch = Vec::new();
        let stored = crate::keyspace::encode(db, key, &mut scratch);
        let reader = shared.core.store.reader();
        let Some(item) = reader.peek(stored) else {
            return self.command(&[b"DEL", key]);
        };
        let expiry_ms = match item.expiry() {
            Expiry::Never => None,
            Expiry::AtMs(at) => Some(at.to_string()),
        };
        if item.value_kind() == store::ValueKind::String {
            if memcached {
                let meta = format!("spinel:mc {} {}", item.flags(), item.cas());
                self.command(&[b"ECHO", meta.as_bytes()]);
            }
            return match &expiry_ms {
                Some(at) => self.command(&[b"SET", key, item.value(), b"PXAT", at.as_bytes()]),
                None => self.command(&[b"SET", key, item.value()]),
            };
        }
        let Some(value) = crate::resp::cluster::value_of(shared, &item) else {
            return self.command(&[b"DEL", key]);
        };
        let payload = values::rdb::dump(&value);
        let ttl = expiry_ms.unwrap_or_else(|| "0".into());
        self.command(&[b"RESTORE", key, ttl.as_bytes(), &payload, b"REPLACE", b"ABSTTL"]);
    }

    /// Keys the store expired or evicted since the last entry: their state (gone, unless
    /// written again since).
    pub fn take_dirty(&mut self, shared: &Shared) {
        let dirty = std::mem::take(&mut *shared.core.repl.dirty.keys.lock());
        for stored in dirty {
            if let Some((db, key)) = crate::keyspace::decode(&stored) {
                self.key_state(shared, db, key, false);
            }
        }
    }
}

/// The journal locked for a write sent verbatim (`resp::verbatim`), before it executes;
/// None while a full copy's walk is under way (the write then goes as state). Keys the
/// store let go before this point are sent first, as their state.
pub(crate) fn lock_for_verbatim(shared: &Shared) -> Option<MutexGuard<'_, Journal>> {
    let repl = &shared.core.repl;
    let mut journal = repl.journal.lock();
    if journal.walks != 0 {
        return None;
    }
    journal.take_dirty(shared);
    journal.flush(repl);
    Some(journal)
}

impl Journal {
    /// After a verbatim write ran: the keys the store let go meanwhile (a DEL for those
    /// of this write's keys, which it found gone; the state of others), then the command.
    pub fn append_verbatim(
        &mut self,
        shared: &Shared,
        own_keys: &[(u8, &[u8])],
        db: u8,
        parts: &[&[u8]],
    ) {
        self.take_dirty_around(shared, own_keys);
        self.select(db);
        self.command(parts);
        self.flush(&shared.core.repl);
    }

    /// After EXPIRE and its kin ran: the key's expiry as it is now.
    pub fn append_expiry(&mut self, shared: &Shared, own_keys: &[(u8, &[u8])]) {
        self.take_dirty_around(shared, own_keys);
        for &(db, key) in own_keys {
            self.select(db);
            let mut scratch = Vec::new();
            let stored = crate::keyspace::encode(db, key, &mut scratch);
            let expiry = shared.core.store.reader().peek(stored).map(|item| item.expiry());
            match expiry {
                None => self.command(&[b"DEL", key]),
                Some(Expiry::Never) => self.command(&[b"PERSIST", key]),
                Some(Expiry::AtMs(at)) => {
                    self.command(&[b"PEXPIREAT", key, at.to_string().as_bytes()]);
                }
            }
        }
        self.flush(&shared.core.repl);
    }

    /// A verbatim write that changed nothing (or failed): only the keys the store let go.
    pub fn append_verbatim_nothing(&mut self, shared: &Shared) {
        self.take_dirty(shared);
        self.flush(&shared.core.repl);
    }

    /// A verbatim write that cannot be sent as it is after all: its keys' state.
    pub fn append_states(&mut self, shared: &Shared, own_keys: &[(u8, &[u8])]) {
        self.take_dirty(shared);
        for &(db, key) in own_keys {
            self.key_state(shared, db, key, false);
        }
        self.flush(&shared.core.repl);
    }

    fn take_dirty_around(&mut self, shared: &Shared, own_keys: &[(u8, &[u8])]) {
        let dirty = std::mem::take(&mut *shared.core.repl.dirty.keys.lock());
        for stored in dirty {
            let Some((db, key)) = crate::keyspace::decode(&stored) else { continue };
            if own_keys.iter().any(|&(d, k)| d == db && k == key) {
                self.select(db);
                self.command(&[b"DEL", key]);
            } else {
                self.key_state(shared, db, key, false);
            }
        }
    }
}

/// A full copy's walk began (under the journal's lock, with its offset taken).
pub(crate) fn walk_started(journal: &mut Journal) {
    journal.walks += 1;
}

/// A full copy's walk is over: writes may go verbatim again.
pub(crate) fn walk_finished(shared: &Shared) {
    let mut journal = shared.core.repl.journal.lock();
    journal.walks = journal.walks.saturating_sub(1);
}

/// The keys a write changed, by database, each sent as its state now.
pub(crate) fn keys_changed<'k>(
    shared: &Shared,
    keys: impl IntoIterator<Item = (u8, &'k [u8])>,
    memcached: bool,
) {
    let repl = &shared.core.repl;
    let mut journal = repl.journal.lock();
    journal.take_dirty(shared);
    for (db, key) in keys {
        journal.key_state(shared, db, key, memcached);
    }
    journal.flush(repl);
}

/// A command sent as it is (FLUSHALL, SWAPDB, FUNCTION LOAD ...), after a SELECT of `db`
/// when it acts on one database.
pub(crate) fn verbatim(shared: &Shared, db: Option<u8>, parts: &[&[u8]]) {
    let repl = &shared.core.repl;
    let mut journal = repl.journal.lock();
    journal.take_dirty(shared);
    if let Some(db) = db {
        journal.select(db);
    }
    journal.command(parts);
    if parts.first().is_some_and(|name| name.eq_ignore_ascii_case(b"swapdb")) {
        journal.forget_db();
    }
    journal.flush(repl);
}

/// What a tick does on a primary: the expired keys' DELs, and a PING every
/// `repl-ping-replica-period` so replicas know the link is alive.
pub(crate) fn tick(shared: &Shared, ping: bool) {
    let repl = &shared.core.repl;
    let mut journal = repl.journal.lock();
    journal.take_dirty(shared);
    if ping && !journal.feeds.is_empty() {
        journal.command(&[b"PING"]);
    }
    journal.flush(repl);
}
