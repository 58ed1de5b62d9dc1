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
//!       `tracking::after_command`: for a command that tells its outcome
//!       ([`tells_outcome`]), the keys its events name are invalidated; nothing else
//!       is looked at (no reply bytes, no command names)
//! ```
//!
//! Why recorded and published after the command rather than sent at once: Redis sends
//! `new` before the command's own event, and `new` is told from the key's presence once
//! the command ran. The string and generic-key commands still send theirs at once
//! (`Ctx::notify`); they name no `new` key before them.

use std::cell::Cell;

use proto_resp::commands::{BitmapId, BlockingId, CommandId, CommandSpec, Run};

use super::class;
use crate::resp::Ctx;

/// One keyspace event a write raised: its class (`keyevents::class`), the name Redis 7.0
/// gives it, and the key argument it is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    pub(crate) class: u32,
    pub(crate) name: &'static str,
    pub(crate) key_index: usize,
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

    /// Called by a change that deleted the key it found (`Change::Delete` of an item).
    pub(crate) fn note_emptied(&self) {
        self.emptied.set(true);
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
        self.outcome.push(Event { class, name, key_index });
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

/// Whether a command tells what it did through its [`Outcome`] alone: its events are all
/// recorded there, so client-side caching invalidates exactly the keys they name. (The
/// other writes are still judged by their key arguments and reply in `tracking`.)
pub(crate) fn tells_outcome(spec: &CommandSpec) -> bool {
    match spec.run {
        Run::Command(CommandId::Hashes(_) | CommandId::Lists(_)) => true,
        Run::Command(CommandId::Sets(_) | CommandId::SortedSets(_)) => true,
        Run::Command(CommandId::Streams(_)) => true,
        Run::Command(CommandId::Blocking(id)) => id != BlockingId::Wait,
        Run::Command(CommandId::Bitmaps(id)) => matches!(
            id,
            BitmapId::Setbit
                | BitmapId::Bitfield
                | BitmapId::Bitop
                | BitmapId::Pfadd
                | BitmapId::Pfmerge
        ),
        _ => false,
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
        ctx.notify(event.class, event.name, event.key_index);
    }
}
