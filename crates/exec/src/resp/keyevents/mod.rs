//! Keyspace notifications: `notify-keyspace-events` and the `__keyspace@<db>__:<key>` /
//! `__keyevent@<db>__:<event>` messages, published through pub/sub.
//!
//! ```text
//!   a write --Ctx::wrote / wrote_in / removed / stored--> Outcome (see `outcome`)
//!        run, once the command is done: keyevents::publish --> KeyspaceEvents::emit
//!   the store's expiry / eviction observers ----------> KeyspaceEvents::emit_stored
//!        one relaxed load of the flags; nothing more unless the class is on
//!        and K or E is: then one PUBLISH per prefix (`pubsub::Registry::publish`)
//! ```
//!
//! Handlers name the event Redis 7.0 names for the change they made, and only when they
//! changed something (a DEL of a missing key, a SET NX that did not set: no event). Expired
//! events come when an expired item is unlinked: by a write that meets it, by the store's
//! expiry sweep (a pass every few seconds) or with its whole segment, not when a read finds
//! it dead (reads take no lock and leave it for the sweep); Redis's own expired events are
//! likewise sent when its lazy or active expiry gets to the key. Evicted events come from
//! the store's eviction observer, for keys written over either protocol. The `n` class
//! (`new`, a key created) costs a lookup of each key before and after a write, so only
//! while it is on (`outcome::absent_keys`).

use std::sync::{
    atomic::{AtomicU32, Ordering::Relaxed},
    Arc,
};

use super::pubsub::Registry;

mod outcome;
pub(crate) use outcome::{absent_keys, publish, Outcome};

/// Event classes, Redis's bits (`notify-keyspace-events` letters).
pub mod class {
    pub const KEYSPACE: u32 = 1 << 0; // K
    pub const KEYEVENT: u32 = 1 << 1; // E
    pub const GENERIC: u32 = 1 << 2; // g
    pub const STRING: u32 = 1 << 3; // $
    pub const LIST: u32 = 1 << 4; // l
    pub const SET: u32 = 1 << 5; // s
    pub const HASH: u32 = 1 << 6; // h
    pub const ZSET: u32 = 1 << 7; // z
    pub const EXPIRED: u32 = 1 << 8; // x
    pub const EVICTED: u32 = 1 << 9; // e
    pub const STREAM: u32 = 1 << 10; // t
    pub const KEY_MISS: u32 = 1 << 11; // m (not part of A)
    pub const MODULE: u32 = 1 << 12; // d
    pub const NEW: u32 = 1 << 13; // n (not part of A)
    /// `A`: every class but `m` and `n`.
    pub const ALL: u32 =
        GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;
}

/// The letters in the order Redis 7.0 prints them after `A` or the classes.
const CLASS_LETTERS: [(u8, u32); 10] = [
    (b'g', class::GENERIC),
    (b'$', class::STRING),
    (b'l', class::LIST),
    (b's', class::SET),
    (b'h', class::HASH),
    (b'z', class::ZSET),
    (b'x', class::EXPIRED),
    (b'e', class::EVICTED),
    (b't', class::STREAM),
    (b'd', class::MODULE),
];

/// The `notify-keyspace-events` value's flags, or `None` for a letter Redis refuses.
pub fn parse_flags(value: &[u8]) -> Option<u32> {
    let mut flags = 0;
    for &letter in value {
        flags |= match letter {
            b'A' => class::ALL,
            b'K' => class::KEYSPACE,
            b'E' => class::KEYEVENT,
            b'm' => class::KEY_MISS,
            b'n' => class::NEW,
            _ => CLASS_LETTERS.iter().find(|(l, _)| *l == letter)?.1,
        };
    }
    Some(flags)
}

/// The value as CONFIG GET shows it: `A` or the class letters, then `K`, `E`, `m`. Redis
/// 7.0 leaves `n` out of it (though it keeps the class on), and so does this.
pub fn format_flags(flags: u32) -> String {
    let mut text = String::new();
    if flags & class::ALL == class::ALL {
        text.push('A');
    } else {
        for (letter, bit) in CLASS_LETTERS {
            if flags & bit != 0 {
                text.push(letter as char);
            }
        }
    }
    for (letter, bit) in [('K', class::KEYSPACE), ('E', class::KEYEVENT), ('m', class::KEY_MISS)] {
        if flags & bit != 0 {
            text.push(letter);
        }
    }
    text
}

/// The setting and where its messages go.
#[derive(Debug)]
pub struct KeyspaceEvents {
    flags: AtomicU32,
    pubsub: Arc<Registry>,
}

/// The worker index given for an event from a store observer: wake subscribers' loops
/// through their notifiers, never by the local shortcut (the observer may run on any
/// thread).
const NO_WORKER: usize = usize::MAX;

impl KeyspaceEvents {
    pub fn new(pubsub: Arc<Registry>) -> KeyspaceEvents {
        KeyspaceEvents { flags: AtomicU32::new(0), pubsub }
    }

    pub fn flags(&self) -> u32 {
        self.flags.load(Relaxed)
    }

    pub fn set_flags(&self, flags: u32) {
        self.flags.store(flags, Relaxed);
    }

    /// Whether an event of `class` is published: the one check every write pays.
    #[inline]
    pub fn wants(&self, class: u32) -> bool {
        let flags = self.flags.load(Relaxed);
        flags & class != 0 && flags & (class::KEYSPACE | class::KEYEVENT) != 0
    }

    /// Publishes `event` on `key` of database `db` (a key as the client named it).
    pub fn emit(&self, class: u32, event: &[u8], db: u8, key: &[u8], worker: usize) {
        let flags = self.flags.load(Relaxed);
        if flags & class == 0 {
            return;
        }
        let mut channel = Vec::with_capacity(24 + key.len().max(event.len()));
        if flags & class::KEYSPACE != 0 {
            prefix(&mut channel, b"__keyspace@", db);
            channel.extend_from_slice(key);
            self.pubsub.publish(&channel, event, false, worker);
        }
        if flags & class::KEYEVENT != 0 {
            channel.clear();
            prefix(&mut channel, b"__keyevent@", db);
            channel.extend_from_slice(event);
            self.pubsub.publish(&channel, key, false, worker);
        }
    }

    /// [`KeyspaceEvents::emit`] for a key in its stored form (a store observer's), from any
    /// thread.
    pub fn emit_stored(&self, class: u32, event: &[u8], stored: &[u8]) {
        if !self.wants(class) {
            return;
        }
        if let Some((db, key)) = crate::keyspace::decode(stored) {
            self.emit(class, event, db, key, NO_WORKER);
        }
    }
}

impl crate::resp::Ctx<'_> {
    /// Publishes keyspace event `event` (of `class`, see [`class`]) on key argument
    /// `index`, if that class is on: one relaxed load when it is not. Handlers do not call
    /// it: they record what they did (`Ctx::wrote`) and `outcome::publish` sends it.
    fn notify(&self, class: u32, event: &str, index: usize) {
        self.notify_in(class, event, self.session.db, self.arg(index));
    }

    /// `Ctx::notify` for `key` (as the client named it) in database `db`.
    fn notify_in(&self, class: u32, event: &str, db: u8, key: &[u8]) {
        let events = &self.shared.redis.keyspace_events;
        if events.wants(class) {
            let worker = self.shared.core.worker_of(self.counters);
            events.emit(class, event.as_bytes(), db, key, worker);
        }
    }
}

/// `__keyspace@` + db + `__:`.
fn prefix(channel: &mut Vec<u8>, head: &[u8], db: u8) {
    channel.extend_from_slice(head);
    channel.extend_from_slice(db.to_string().as_bytes());
    channel.extend_from_slice(b"__:");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: CONFIG GET shows the value as Redis 7.0 does (checked against redis-server:
    /// KEA -> AKE, Ex -> xE, Am -> Am, An -> A, g$lshzxetdKEmn -> AKEm). Method: table.
    #[test]
    fn flags_print_as_redis_prints_them() {
        for (given, shown) in [
            ("KEA", "AKE"),
            ("Ex", "xE"),
            ("gx", "gx"),
            ("Am", "Am"),
            ("An", "A"),
            ("Ag", "A"),
            ("$lshzxetd", "$lshzxetd"),
            ("g$lshzxetdKEmn", "AKEm"),
            ("", ""),
        ] {
            let flags = parse_flags(given.as_bytes()).unwrap();
            assert_eq!(format_flags(flags), shown, "{given}");
        }
        assert_eq!(parse_flags(b"KEAQ"), None);
    }
}
