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
