//! What a write did, as its handler tells it: the typed outcome that keyspace events and
//! client-side caching invalidations are raised from.
//!
//! The flow of a write (HSET on a new key, say), once the command is routed:
//!
//! ```text
//!   run: (only when `n` events are on) note which key arguments are absent
//!    -> dispatch -> hash::dispatch -> basic::hset
//!         decides its representation once: the kept-outside-the-store map if the key is
//!         an owner (`large::set`, no store lock), else one `Store::modify` under the
//!         key's stripe lock that, from the item it finds, builds a new hash (absent),
//!         splices the field in (one field, no expiring field) or decodes and edits
//!       -> the reply, and `ctx.wrote(class::HASH, "hset", 1)`: an `Event` in
//!          `ctx.outcome` (class, Redis's event name, key argument); a command that
//!          removes elements says `ctx.removed(..)`, which adds `del` when the change it
//!          just made deleted its key (`Outcome::emptied`, set by `typed::modify`,
//!          `hash::change` and the STORE writes from the change they applied)
//!    <- run: `keyevents::publish`: `new` for each noted key that now exists, then the
//!       recorded events in order (one relaxed load when no class is on)
//!       `tracking::after_command`: the keys its events name are invalidated (every
//!       key after a flush, `Outcome::note_flushed`); nothing else is looked at (no
//!       reply bytes, no command names)
//! ```
//!
//! Every write records its outcome this way: strings and generic keys (SET and its
//! kin, INCR, APPEND, SETRANGE, DEL, EXPIRE, PERSIST, RENAME, COPY, MOVE, RESTORE,
//! MIGRATE), the collections, bitmaps, SORT and GEO's STORE forms. A key in another
//! database (MOVE's and COPY's destination) is recorded with it (`Ctx::wrote_in`).
//!
//! Why recorded and published after the command rather than sent at once: Redis sends
//! `new` before the command's own event, and `new` is told from the key's presence once
//! the command ran.

use std::cell::Cell;

use super::class;
use crate::resp::Ctx;

/// One keyspace event a write raised: its class (`keyevents::class`), the name Redis 7.0
/// gives it, the key argument it is on, and the database that key is in when it is not
/// the session's (MOVE's `move_to`, COPY's `copy_to` with DB).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    pub(crate) class: u32,
    pub(crate) name: &'static str,
    pub(crate) key_index: usize,
    pub(crate) db: Option<u8>,
}

/// What one command did, recorded by its handler as it does it (see the module's
/// comment). Kept in `Ctx` for every command, so it costs a few stores to make: the first
/// event inline, the rare further ones (SMOVE: `srem`, `del`, `sadd`; LMOVE; HEXPIRE) in a
/// vector that allocates only then.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    first: Option<Event>,
    more: Vec<Event>,
    /// A collection change of this command deleted the key it found (it left it empty):
    /// set by the change itself, taken by the next [`Ctx::removed`].
    emptied: Cell<bool>,
    /// FLUSHALL or FLUSHDB emptied a database: every tracking client's cache is invalid.
    flushed: bool,
    /// Key arguments changed without an event of their own (XACK, XCLAIM, XREADGROUP
    /// move a group's state; Redis raises nothing): replicas must still hear them.
    quiet: Vec<usize>,
}

impl Outcome {
    /// The events recorded, in the order they happened.
    pub(crate) fn events(&self) -> impl Iterator<Item = &Event> {
        self.first.iter().chain(&self.more)
    }

    fn push(&mut self, event: Event) {
        match self.first {
            None => self.first = Some(event),
            Some(_) => self.more.push(event),
        }
    }

    /// How many events were recorded: the changes this command made, as Redis counts them
    /// in `dirty` (`Counters::redis_changes`).
    pub(crate) fn changes(&self) -> u64 {
        u64::from(self.first.is_some()) + self.more.len() as u64
    }

    /// Called by a change that deleted the key it found (`Change::Delete` of an item).
    pub(crate) fn note_emptied(&self) {
        self.emptied.set(true);
    }

    /// Called by FLUSHALL and FLUSHDB once they flushed.
    pub(crate) fn note_flushed(&mut self) {
        self.flushed = true;
    }

    pub(crate) fn flushed(&self) -> bool {
        self.flushed
    }

    /// The key arguments changed without an event (see `quiet`).
    pub(crate) fn quiet_keys(&self) -> &[usize] {
        &self.quiet
    }

    /// The one key argument every event names, when they name one (the common case: no
    /// list to build).
    pub(crate) fn single_key_index(&self) -> Option<usize> {
        let first = self.first?.key_index;
        self.more.iter().all(|e| e.key_index == first).then_some(first)
    }

    /// The key arguments the events name, in argument order, each once: what a tracking
    /// client that read them must hear is invalid.
    pub(crate) fn key_indexes(&self) -> Vec<usize> {
        let mut indexes: Vec<usize> = self.events().map(|e| e.key_index).collect();
        indexes.sort_unstable();
        indexes.dedup();
        indexes
    }
}

impl Ctx<'_> {
    /// Records event `name` of `class` on key argument `key_index`: the handler did what
    /// Redis raises it for.
    pub(in crate::resp) fn wrote(&mut self, class: u32, name: &'static str, key_index: usize) {
        self.outcome.push(Event { class, name, key_index, db: None });
    }

    /// Key argument `key_index` changed, with no keyspace event (replication only).
    pub(in crate::resp) fn changed_quietly(&mut self, key_index: usize) {
        if !self.outcome.quiet.contains(&key_index) {
            self.outcome.quiet.push(key_index);
        }
    }

    /// [`Ctx::wrote`] for key argument `key_index` as it is in database `db`.
    pub(in crate::resp) fn wrote_in(
        &mut self,
        class: u32,
        name: &'static str,
        key_index: usize,
        db: u8,
    ) {
        self.outcome.push(Event { class, name, key_index, db: Some(db) });
    }

    /// [`Ctx::wrote`] for a removal of elements, followed by `del` when the change that
    /// removed them deleted the key (its last element went).
    pub(in crate::resp) fn removed(&mut self, class: u32, name: &'static str, key_index: usize) {
        self.wrote(class, name, key_index);
        if self.outcome.emptied.replace(false) {
            self.wrote(class::GENERIC, "del", key_index);
        }
    }

    /// A STORE command's outcome on its destination `key_index`: its event when it stored
    /// a non-empty result, `del` when it deleted an existing destination instead.
    pub(in crate::resp) fn stored(
        &mut self,
        class: u32,
        name: &'static str,
        key_index: usize,
        stored: bool,
    ) {
        if stored {
            self.wrote(class, name, key_index);
        } else if self.outcome.emptied.replace(false) {
            self.wrote(class::GENERIC, "del", key_index);
        }
    }
}

/// The key arguments absent before a write, when `new` events are on (`n`): Redis sends
/// `new` for each key the command creates.
pub(crate) fn absent_keys(ctx: &Ctx<'_>) -> Vec<usize> {
    if !ctx.shared.redis.keyspace_events.wants(class::NEW) {
        return Vec::new();
    }
    key_indexes(ctx).filter(|&index| !exists(ctx, ctx.arg(index))).collect()
}

/// The argument indexes of the command's keys, by its table's first, last and step
/// (bounded by the arguments given).
fn key_indexes<'c>(ctx: &'c Ctx<'_>) -> impl Iterator<Item = usize> + 'c {
    let spec = ctx.spec;
    let argc = ctx.argc() as i32;
    let last = if spec.last_key < 0 { argc + spec.last_key } else { spec.last_key.min(argc - 1) };
    let (first, step) = (spec.first_key, spec.step.max(1));
    (first.max(1)..=last).step_by(step as usize).filter(move |_| first > 0).map(|i| i as usize)
}

fn exists(ctx: &Ctx<'_>, key: &[u8]) -> bool {
    let mut scratch = Vec::new();
    let stored = crate::keyspace::encode(ctx.session.db, key, &mut scratch);
    ctx.shared.core.store.reader().peek(stored).is_some()
}

/// Sends the events of the command `ctx` ran: `new` for each key of `absent` it created
/// (Redis sends it as the key is added, before the command's own event; here it is told
/// from the key's presence after), then the events its handler recorded.
pub(crate) fn publish(ctx: &Ctx<'_>, absent: &[usize]) {
    for &index in absent {
        if exists(ctx, ctx.arg(index)) {
            ctx.notify(class::NEW, "new", index);
        }
    }
    for event in ctx.outcome.events() {
        let db = event.db.unwrap_or(ctx.session.db);
        ctx.notify_in(event.class, event.name, db, ctx.arg(event.key_index));
    }
}
