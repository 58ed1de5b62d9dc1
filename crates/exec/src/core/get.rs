//! Reads: memcached `get`/`gets` and plain `mg`, Redis GET and MGET.
//!
//! One store reader serves a whole request (one epoch pin), and hits and misses are counted
//! once at its end: memcached's `cmd_get`, `get_hits`, `get_misses`, which `INFO` reports
//! as Redis's `keyspace_hits`/`keyspace_misses`. Nothing is allocated per key.

use store::{Item, Reader, Store, ValueKind};

use crate::counters::{bump, Counters};

/// The reads of one request.
pub(crate) struct Gets<'s> {
    reader: Reader<'s>,
    hits: u64,
    misses: u64,
}

impl<'s> Gets<'s> {
    #[inline]
    pub(crate) fn new(store: &'s Store) -> Gets<'s> {
        Gets { reader: store.reader(), hits: 0, misses: 0 }
    }

    /// Reads `key` as a string, counting an access for eviction (and for meta `h`). A
    /// Redis collection is a miss: memcached clients and MGET see only strings.
    #[inline]
    pub(crate) fn get(&mut self, key: &[u8]) -> Option<Item<'_>> {
        let item = self.reader.get(key).filter(is_string);
        tally(&mut self.hits, &mut self.misses, item.is_some());
        item
    }

    /// Reads `key` whatever it holds (Redis GET, which answers WRONGTYPE for a collection).
    #[inline]
    pub(crate) fn get_any(&mut self, key: &[u8]) -> Option<Item<'_>> {
        let item = self.reader.get(key);
        tally(&mut self.hits, &mut self.misses, item.is_some());
        item
    }

    /// Reads `key` as a string without counting an access (meta `u`); still a get for
    /// `stats`.
    pub(crate) fn peek(&mut self, key: &[u8]) -> Option<Item<'_>> {
        let item = self.reader.peek(key).filter(is_string);
        tally(&mut self.hits, &mut self.misses, item.is_some());
        item
    }

    /// Counts the request's reads.
    #[inline]
    pub(crate) fn finish(self, counters: &Counters) {
        count(counters, self.hits, self.misses);
    }
}

#[inline]
fn is_string(item: &Item<'_>) -> bool {
    item.value_kind() == ValueKind::String
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
