//! Reads: memcached `get`/`gets` and plain `mg`, Redis GET and MGET.
//!
//! One store reader serves a whole request (one epoch pin), and hits and misses are counted
//! once at its end: memcached's `cmd_get`, `get_hits`, `get_misses`, which `INFO` reports
//! as Redis's `keyspace_hits`/`keyspace_misses`. Nothing is allocated per key.

use store::{Item, KeyHash, Miss, Reader, Store, ValueKind};

use crate::counters::{bump, Counters};

/// How far a multiget reads ahead: the index buckets of the key this many keys on are
/// prefetched ...
pub(crate) const BUCKETS_AHEAD: usize = 8;
/// ... and the items whose tags match the key this many keys on (its buckets arrived by
/// then), so a lookup finds its lines loaded instead of waiting on two misses in a row.
const ITEMS_AHEAD: usize = 4;
/// Hashes kept between a key's announcement and its read: more than BUCKETS_AHEAD.
const RING: usize = 16;
const _: () = assert!(ITEMS_AHEAD < BUCKETS_AHEAD && BUCKETS_AHEAD < RING);

/// The keys of a multiget announced ahead of their reads ([`Gets::announce`]), each hashed
/// once for its prefetches and its lookup.
pub(crate) struct ReadAhead {
    hashes: [Option<KeyHash>; RING],
    announced: usize,
    read: usize,
}

impl ReadAhead {
    pub(crate) fn new() -> ReadAhead {
        ReadAhead { hashes: [None; RING], announced: 0, read: 0 }
    }
}

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

    /// A multiget's key `BUCKETS_AHEAD` keys before its read: hashed, its index buckets
    /// prefetched. Keys are announced in the order they are read.
    #[inline]
    pub(crate) fn announce(&mut self, ahead: &mut ReadAhead, key: &[u8]) {
        let hash = KeyHash::of(key);
        self.reader.prefetch_index(hash);
        ahead.hashes[ahead.announced % RING] = Some(hash);
        ahead.announced += 1;
    }

    /// [`Gets::get`] for the next key of a multiget, `key` as announced; starts loading the
    /// items of the key `ITEMS_AHEAD` on.
    #[inline]
    pub(crate) fn get_announced(&mut self, ahead: &mut ReadAhead, key: &[u8]) -> Option<Item<'_>> {
        let hash = match ahead.hashes[ahead.read % RING].take() {
            Some(hash) if ahead.read < ahead.announced => hash,
            _ => KeyHash::of(key),
        };
        ahead.read += 1;
        if ahead.read + ITEMS_AHEAD <= ahead.announced {
            if let Some(later) = ahead.hashes[(ahead.read + ITEMS_AHEAD - 1) % RING] {
                self.reader.prefetch_items(later);
            }
        }
        let found = self.reader.get_or_miss_hashed(key, hash).and_then(string_only);
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
