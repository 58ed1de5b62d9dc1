//! Reads: memcached `get`/`gets` and plain `mg`, Redis GET and MGET.
//!
//! One store reader serves a whole request (one epoch pin), and hits and misses are counted
//! once at its end: memcached's `cmd_get`, `get_hits`, `get_misses`, which `INFO` reports
//! as Redis's `keyspace_hits`/`keyspace_misses`. Nothing is allocated per key.

use store::{Item, Miss, Reader, Store, ValueKind};

use crate::counters::{bump, Counters};

/// The reads of one request.
pub(crate) struct Gets<'s> {
    reader: Reader<'s>,
    tally: Tally,
}

/// A request's read outcomes.
#[derive(Default)]
struct Tally {
    hits: u64,
    misses: u64,
    /// Of the misses, items still held but flushed or expired (`get_flushed`,
    /// `get_expired`).
    flushed: u64,
    expired: u64,
}

impl Tally {
    /// Counts a lookup's outcome; the item, if it was one.
    #[inline]
    fn count<'i>(&mut self, found: Result<Item<'i>, Miss>) -> Option<Item<'i>> {
        match found {
            Err(Miss::Flushed) => self.flushed += 1,
            Err(Miss::Expired) => self.expired += 1,
            _ => {}
        }
        let item = found.ok();
        tally(&mut self.hits, &mut self.misses, item.is_some());
        item
    }
}

impl<'s> Gets<'s> {
    #[inline]
    pub(crate) fn new(store: &'s Store) -> Gets<'s> {
        Gets { reader: store.reader(), tally: Tally::default() }
    }

    /// Reads `key` as a string, counting an access for eviction (and for meta `h`). A
    /// Redis collection is a miss: memcached clients and MGET see only strings.
    #[inline]
    pub(crate) fn get(&mut self, key: &[u8]) -> Option<Item<'_>> {
        let found = self.reader.get_or_miss(key).and_then(string_only);
        self.tally.count(found)
    }

    /// Reads `key` whatever it holds (Redis GET, which answers WRONGTYPE for a collection).
    #[inline]
    pub(crate) fn get_any(&mut self, key: &[u8]) -> Option<Item<'_>> {
        let found = self.reader.get_or_miss(key);
        self.tally.count(found)
    }

    /// Reads `key` as a string without counting an access (meta `u`); still a get for
    /// `stats`.
    pub(crate) fn peek(&mut self, key: &[u8]) -> Option<Item<'_>> {
        let found = self.reader.peek_or_miss(key).and_then(string_only);
        self.tally.count(found)
    }

    /// Counts the request's reads.
    #[inline]
    pub(crate) fn finish(self, counters: &Counters) {
        let tally = self.tally;
        count(counters, tally.hits, tally.misses);
        bump(&counters.get_flushed, tally.flushed);
        bump(&counters.get_expired, tally.expired);
    }
}

/// A Redis collection is a plain miss for memcached reads.
#[inline]
fn string_only(item: Item<'_>) -> Result<Item<'_>, Miss> {
    if item.value_kind() == ValueKind::String {
        Ok(item)
    } else {
        Err(Miss::Absent)
    }
}

#[inline]
fn tally(hits: &mut u64, misses: &mut u64, hit: bool) {
    if hit {
        *hits += 1;
    } else {
        *misses += 1;
    }
}

/// Counts reads done elsewhere (a meta `mg` answered under the key's lock).
#[inline]
pub(crate) fn count(counters: &Counters, hits: u64, misses: u64) {
    bump(&counters.cmd_get, hits + misses);
    bump(&counters.get_hits, hits);
    bump(&counters.get_misses, misses);
}
