//! `stats detail on|off|dump`: memcached's per-prefix counts of gets, hits, sets and
//! deletes, a prefix being a key's bytes before the first `-D` delimiter (`:` by default).
//!
//! Off by default (on from the start with `-D`). While off, the request path pays one relaxed
//! load ([`PrefixStats::enabled`]); while on, every get, set and delete of the text and binary
//! protocols takes one process-wide lock, as memcached's `STATS_LOCK` does. The dump lists
//! prefixes in memcached's order: by bucket of memcached's default hash (MurmurHash3, x86,
//! 32 bits, seed 0) modulo 256, the newest first within a bucket.

use std::{
    io::Write,
    sync::atomic::{AtomicBool, Ordering::Relaxed},
};

use parking_lot::Mutex;
use proto_memcache::{error, text::response::Status, ErrorReply, Words};

use super::Ctx;

/// memcached's `PREFIX_HASH_SIZE`.
const BUCKETS: usize = 256;

/// One prefix's counts.
#[derive(Debug, Default)]
struct Prefix {
    name: Vec<u8>,
    gets: u64,
    hits: u64,
    sets: u64,
    deletes: u64,
}

/// What a request did to a key, for its prefix's counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    Get { hit: bool },
    Set,
    Delete,
}

/// The per-prefix table and its switch.
#[derive(Debug)]
pub struct PrefixStats {
    delimiter: u8,
    enabled: AtomicBool,
    buckets: Mutex<Vec<Vec<Prefix>>>,
}

impl PrefixStats {
    pub fn new(delimiter: u8, enabled: bool) -> PrefixStats {
        let buckets = Mutex::new((0..BUCKETS).map(|_| Vec::new()).collect());
        PrefixStats { delimiter, enabled: AtomicBool::new(enabled), buckets }
    }

    /// Whether counts are being kept (the only cost on the request path while off).
    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled.load(Relaxed)
    }

    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Relaxed);
    }

    pub fn delimiter(&self) -> u8 {
        self.delimiter
    }

    /// Forgets every prefix (`stats reset`).
    pub fn clear(&self) {
        self.buckets.lock().iter_mut().for_each(Vec::clear);
    }

    /// Counts `event` for `key`'s prefix, if it has one (the caller checked [`Self::enabled`]).
    pub(crate) fn record(&self, key: &[u8], event: Event) {
        // As memcached: the prefix ends at the first delimiter, and a NUL before it means none.
        let Some(len) = key.iter().take_while(|&&b| b != 0).position(|&b| b == self.delimiter)
        else {
            return;
        };
        let prefix = &key[..len];
        let mut buckets = self.buckets.lock();
        let bucket = &mut buckets[murmur3_32(prefix) as usize % BUCKETS];
        // memcached compares only the new prefix's length, so a longer prefix sharing the
        // bucket also matches; newest first, as its list is.
        let found = bucket.iter().rposition(|p| p.name.get(..len) == Some(prefix));
        let index = found.unwrap_or_else(|| {
            bucket.push(Prefix { name: prefix.to_vec(), ..Prefix::default() });
            bucket.len() - 1
        });
        let counts = &mut bucket[index];
        match event {
            Event::Get { hit } => {
                counts.gets += 1;
                counts.hits += u64::from(hit);
            }
            Event::Set => counts.sets += 1,
            Event::Delete => counts.deletes += 1,
        }
    }

    /// The `PREFIX ... get N hit N set N del N` lines and `END`, as memcached dumps them.
    pub fn dump(&self, out: &mut Vec<u8>) {
        let buckets = self.buckets.lock();
        for prefix in buckets.iter().flat_map(|bucket| bucket.iter().rev()) {
            out.extend_from_slice(b"PREFIX ");
            out.extend_from_slice(&prefix.name);
            let (gets, hits, sets, deletes) =
                (prefix.gets, prefix.hits, prefix.sets, prefix.deletes);
            // Writing to a Vec cannot fail.
            let _ = write!(out, " get {gets} hit {hits} set {sets} del {deletes}\r\n");
        }
        out.extend_from_slice(b"END\r\n");
    }
}

/// Counts `event` for `key` if `stats detail` is on; one relaxed load otherwise.
#[inline]
pub(crate) fn record(stats: &PrefixStats, key: &[u8], event: Event) {
    if stats.enabled() {
        stats.record(key, event);
    }
}

/// `stats detail <on|off|dump>` (`args` holds what follows `stats`). memcached looks at
/// the word after `detail` only when at least one more follows `stats detail`.
pub(super) fn execute(ctx: &mut Ctx<'_>, args: &Words<'_>) {
    let stats = &ctx.view.memcache().prefix_stats;
    match args.iter().nth(1).unwrap_or(b"") {
        b"on" => stats.set_enabled(true),
        b"off" => stats.set_enabled(false),
        b"dump" => return stats.dump(ctx.out),
        _ => return ctx.error(ErrorReply::ClientError(error::STATS_DETAIL_USAGE), false),
    }
    ctx.status(Status::Ok, false);
}

/// MurmurHash3 (x86, 32-bit, seed 0), memcached's default key hash.
fn murmur3_32(data: &[u8]) -> u32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;
    let scramble = |k: u32| k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
    let mut h: u32 = 0;
    let mut blocks = data.chunks_exact(4);
    for block in &mut blocks {
        let k = u32::from_le_bytes(block.try_into().expect("4 bytes"));
        h = (h ^ scramble(k)).rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        let k = tail.iter().rev().fold(0u32, |k, &b| (k << 8) | u32::from(b));
        h ^= scramble(k);
    }
    // The length is mixed in as a 32-bit value, as the reference does.
    h ^= data.len() as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memcache::tests::Harness;

    // Goal: the hash is MurmurHash3_x86_32 with seed 0 (published test vectors).
    #[test]
    fn murmur3_vectors() {
        assert_eq!(murmur3_32(b""), 0);
        assert_eq!(murmur3_32(b"hello"), 0x248b_fa47);
        assert_eq!(murmur3_32(b"Hello, world!"), 0xc036_3e43);
        assert_eq!(murmur3_32(b"The quick brown fox jumps over the lazy dog"), 0x2e4f_f723);
    }

    // Goal: counts per prefix, keys without a delimiter ignored, off stops counting, reset
    // forgets, and the replies are memcached's.
    #[test]
    fn detail_counts_and_dump() {
        let mut h = Harness::new();
        h.check("stats detail dump\r\n", "END\r\n");
        h.check(
            "stats detail\r\nstats detail x\r\n",
            "CLIENT_ERROR usage: stats detail on|off|dump\r\n".repeat(2),
        );
        h.check("stats detail on\r\n", "OK\r\n");
        h.run("set a:1 0 0 1\r\na\r\nget a:1 a:2 nokey\r\ndelete a:2\r\nset b 0 0 1\r\nb\r\n");
        h.check("stats detail dump\r\n", "PREFIX a get 2 hit 1 set 1 del 1\r\nEND\r\n");
        h.check("stats detail off\r\n", "OK\r\n");
        h.run("get a:1\r\n");
        h.check("stats detail dump\r\n", "PREFIX a get 2 hit 1 set 1 del 1\r\nEND\r\n");
        h.check("stats reset\r\nstats detail dump\r\n", "RESET\r\nEND\r\n");
    }
}
