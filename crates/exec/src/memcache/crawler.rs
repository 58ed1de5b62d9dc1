//! `lru_crawler` and `cache_memlimit`, and memcached's view of an item's size and slab
//! class (which `me` shares).
//!
//! ```text
//!   lru_crawler metadump all|hash|<class>[,<class>]*   a line per live item, then END
//!   lru_crawler crawl all|hash|<class>[,<class>]*      reclaims expired memory; OK
//!   lru_crawler enable|disable|tocrawl <n>|sleep <us>  OK
//!   cache_memlimit <megabytes> [noreply]               OK; evicts down to a lower limit
//! ```
//!
//! A metadump walks the store with [`store::Store::scan_items`] (lock-free, a few index
//! blocks at a time) and streams: a call stops once it has produced the session's reply
//! chunk and returns [`Flow::Again`] with the scan cursor in the session, as a multiget
//! does, so a dump of millions of items never holds more than a chunk. As in memcached,
//! one dump runs at a time (`BUSY` for the others); a dump holds that claim as a lease
//! renewed by every chunk, so a client that vanishes mid-dump frees it within
//! [`DUMP_LEASE_MS`].
//!
//! Differences from memcached: a `crawl` finishes before its `OK` (so nothing is ever busy
//! after one), slab classes are those of memcached's default settings (`-f 1.25 -n 48`,
//! 1 MiB pages), and items of Redis databases and collections are not listed.

use std::{
    io::Write,
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
};

use proto_memcache::Words;
use store::{Item, ValueKind};

use super::{visible_cas, Ctx, Session};
use crate::{keyspace, Flow, Shared};

/// How long a metadump's claim on the crawler lasts without a new chunk.
pub(crate) const DUMP_LEASE_MS: u64 = 10_000;
/// Items a scan step visits between checks of the reply size.
const SCAN_STEP_ITEMS: usize = 64;
/// memcached's largest `cache_memlimit` argument (megabytes) and its smallest.
const MEMLIMIT_MAX_MB: u64 = 1_000_000_000;
const MEMLIMIT_MIN_MB: u64 = 8;

/// memcached's `sizeof(item)` and its smallest chunk (`-n 48`).
const ITEM_HEADER_BYTES: usize = 48;
const SLAB_SIZE_MIN: usize = ITEM_HEADER_BYTES + 48;
/// memcached's default slab growth factor (`-f`), as a ratio, and largest chunk (half a page).
const SLAB_FACTOR: (usize, usize) = (5, 4);
const SLAB_CHUNK_MAX: usize = 512 * 1024;
const SLAB_CLASS_COUNT: u64 = 64;

/// The crawler's state, shared by every connection.
#[derive(Debug)]
pub struct Crawler {
    enabled: AtomicBool,
    /// Until when (store clock, ms) a metadump holds the crawler; 0 when none does.
    busy_until_ms: AtomicU64,
}

impl Default for Crawler {
    fn default() -> Self {
        Crawler { enabled: AtomicBool::new(true), busy_until_ms: AtomicU64::new(0) }
    }
}

impl Crawler {
    /// Claims the crawler for a dump (or renews the claim when `renew`); false if busy.
    fn claim(&self, now_ms: u64, renew: bool) -> bool {
        let until = now_ms + DUMP_LEASE_MS;
        let busy = self.busy_until_ms.load(Ordering::Acquire);
        if renew || busy <= now_ms {
            return self
                .busy_until_ms
                .compare_exchange(busy, until, Ordering::AcqRel, Ordering::Acquire)
                .is_ok();
        }
        false
    }

    fn release(&self) {
        self.busy_until_ms.store(0, Ordering::Release);
    }

    fn busy(&self, now_ms: u64) -> bool {
        self.busy_until_ms.load(Ordering::Acquire) > now_ms
    }
}

/// A metadump under way on a connection.
#[derive(Debug, Clone)]
pub(crate) struct Dump {
    cursor: u64,
    /// Slab classes to list (bit per class), or every one.
    classes: u64,
}

const ALL_CLASSES: u64 = u64::MAX;
const BUSY: &[u8] = b"BUSY currently processing crawler request\r\n";
const BAD_CLASS: &[u8] = b"BADCLASS invalid class id\r\n";
const DISABLED: &[u8] = b"CLIENT_ERROR lru crawler disabled\r\n";
const BAD_FORMAT: &[u8] = b"CLIENT_ERROR bad command line format\r\n";

/// `lru_crawler <args>`.
pub(super) fn lru_crawler(ctx: &mut Ctx<'_>, session: &mut Session, args: &Words<'_>) -> Flow {
    if session.dump.is_some() {
        return metadump_step(ctx, session);
    }
    let mut words = args.iter();
    let (sub, arg, extra) = (words.next(), words.next(), words.next());
    let reply: &[u8] = match (sub, arg, extra) {
        (Some(b"crawl"), Some(arg), None) => crawl(ctx.shared, arg, ctx.now_ms()),
        (Some(b"metadump"), Some(arg), None) => return metadump_start(ctx, session, arg),
        (Some(b"tocrawl"), Some(arg), None) => number_ok(arg, u32::MAX),
        (Some(b"sleep"), Some(arg), None) => match parse_u32(arg) {
            Some(us) if us > 1_000_000 => b"CLIENT_ERROR sleep must be one second or less\r\n",
            Some(_) => b"OK\r\n",
            None => BAD_FORMAT,
        },
        (Some(b"enable"), None, None) => {
            ctx.shared.crawler.enabled.store(true, Ordering::Release);
            b"OK\r\n"
        }
        (Some(b"disable"), None, None) => {
            ctx.shared.crawler.enabled.store(false, Ordering::Release);
            b"OK\r\n"
        }
        _ => b"ERROR\r\n",
    };
    ctx.out.extend_from_slice(reply);
    Flow::Continue
}

fn number_ok(arg: &[u8], max: u32) -> &'static [u8] {
    match parse_u32(arg) {
        Some(n) if n <= max => b"OK\r\n",
        _ => BAD_FORMAT,
    }
}

/// memcached's `safe_strtoul` on a token: an optionally signed decimal that fits 64 bits,
/// nothing after it; a negative one is refused (but `-0`), and the result is cut to its
/// low 32 bits, as its `uint32_t` out-parameter does.
fn parse_u32(arg: &[u8]) -> Option<u32> {
    let (negative, digits) = match arg {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, arg),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    if negative && value != 0 {
        return None;
    }
    Some(value as u32)
}

/// Which classes `all`, `hash` or a comma list names; None for a bad class id.
fn parse_classes(arg: &[u8]) -> Option<u64> {
    if arg == b"all" || arg == b"hash" {
        return Some(ALL_CLASSES);
    }
    let mut classes = 0u64;
    for id in arg.split(|b| *b == b',').filter(|id| !id.is_empty()) {
        let id = u64::from(parse_u32(id)?);
        if !(1..SLAB_CLASS_COUNT).contains(&id) {
            return None;
        }
        classes |= 1 << id;
    }
    Some(classes)
}

/// `crawl`: memcached's crawler reclaims expired items; here every dead segment is
/// reclaimed now (expired and flushed items are invisible either way).
fn crawl(shared: &Shared, arg: &[u8], now_ms: u64) -> &'static [u8] {
    if !shared.crawler.enabled.load(Ordering::Acquire) {
        return DISABLED;
    }
    if parse_classes(arg).is_none() {
        return BAD_CLASS;
    }
    if shared.crawler.busy(now_ms) {
        return BUSY;
    }
    shared.store.maintain(usize::MAX);
    b"OK\r\n"
}

fn metadump_start(ctx: &mut Ctx<'_>, session: &mut Session, arg: &[u8]) -> Flow {
    let shared = ctx.shared;
    let reply: &[u8] = if !shared.crawler.enabled.load(Ordering::Acquire) {
        DISABLED
    } else {
        match parse_classes(arg) {
            None => BAD_CLASS,
            Some(_) if !shared.crawler.claim(ctx.now_ms(), false) => BUSY,
            Some(classes) => {
                session.dump = Some(Dump { cursor: 0, classes });
                return metadump_step(ctx, session);
            }
        }
    };
    ctx.out.extend_from_slice(reply);
    Flow::Continue
}

/// Lists items until the reply reaches the session's chunk; `END` when the scan is done.
fn metadump_step(ctx: &mut Ctx<'_>, session: &mut Session) -> Flow {
    let Some(mut dump) = session.dump.take() else { return Flow::Continue };
    let shared = ctx.shared;
    let now_ms = ctx.now_ms();
    shared.crawler.claim(now_ms, true);
    let chunk_end = match session.reply_chunk_bytes {
        0 => usize::MAX,
        chunk => ctx.out.len().saturating_add(chunk),
    };
    loop {
        dump.cursor = shared.store.scan_items(dump.cursor, SCAN_STEP_ITEMS, |item| {
            dump_line(shared, &item, dump.classes, ctx.out);
        });
        if dump.cursor == 0 {
            ctx.out.extend_from_slice(b"END\r\n");
            shared.crawler.release();
            return Flow::Continue;
        }
        if ctx.out.len() >= chunk_end {
            session.dump = Some(dump);
            return Flow::Again;
        }
    }
}

/// memcached's metadump line: `key=<url-encoded> exp=<unix or -1> la=<unix> cas=<n>
/// fetch=<yes|no> cls=<class> size=<bytes>\n`.
fn dump_line(shared: &Shared, item: &Item<'_>, classes: u64, out: &mut Vec<u8>) {
    let Some((0, key)) = keyspace::decode(item.key()) else { return };
    if item.value_kind() != ValueKind::String {
        return;
    }
    let (size, class) = item_size_class(shared, key.len(), item);
    if classes & (1 << class) == 0 {
        return;
    }
    out.extend_from_slice(b"key=");
    uri_encode(key, out);
    let exp = match item.expiry() {
        store::Expiry::Never => -1,
        store::Expiry::AtMs(at_ms) => i64::try_from(at_ms / 1000).unwrap_or(i64::MAX),
    };
    let _ = writeln!(
        out,
        " exp={exp} la={} cas={} fetch={} cls={class} size={size}",
        item.accessed_at_secs(),
        visible_cas(shared, item.cas()),
        if item.accessed_before() { "yes" } else { "no" },
    );
}

/// memcached's `uriencode`: letters, digits and `-._~` stay, every other byte is `%XX`.
fn uri_encode(key: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in key {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
}

/// The size memcached gives an item (`ITEM_ntotal`: its 48-byte header, key and NUL,
/// value and `\r\n`, 4 bytes of client flags when not 0, 8 of CAS unless `-C`) and its slab
/// class (an item over the largest chunk is chunked, and listed in the largest class).
pub(crate) fn item_size_class(shared: &Shared, key_len: usize, item: &Item<'_>) -> (usize, u64) {
    let flags_bytes = if item.flags() != 0 { 4 } else { 0 };
    let cas_bytes = if shared.settings.cas_enabled { 8 } else { 0 };
    let total = ITEM_HEADER_BYTES + key_len + 1 + flags_bytes + cas_bytes + item.value().len() + 2;
    (total, slab_class(total))
}

/// The smallest of memcached's default slab classes whose chunks hold `bytes`.
fn slab_class(bytes: usize) -> u64 {
    let mut size = SLAB_SIZE_MIN;
    let mut class = 1;
    while size < bytes {
        class += 1;
        let next = size * SLAB_FACTOR.0 / SLAB_FACTOR.1;
        if next * SLAB_FACTOR.0 >= SLAB_CHUNK_MAX * SLAB_FACTOR.1 {
            return class; // the last class: the largest chunk
        }
        size = next.next_multiple_of(8);
    }
    class
}

/// `cache_memlimit <megabytes> [noreply]`.
pub(super) fn cache_memlimit(ctx: &mut Ctx<'_>, args: &Words<'_>) {
    let words: Vec<&[u8]> = args.iter().take(3).collect();
    let (mb, noreply) = match words.as_slice() {
        [mb] => (*mb, false),
        [mb, last] => (*mb, *last == b"noreply"),
        _ => {
            ctx.out.extend_from_slice(b"ERROR\r\n");
            return;
        }
    };
    let reply: &[u8] = match parse_u32(mb).map(u64::from) {
        None => b"ERROR\r\n",
        Some(mb) if mb < MEMLIMIT_MIN_MB => {
            b"MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n"
        }
        Some(mb) if mb > MEMLIMIT_MAX_MB => {
            b"MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes\r\n"
        }
        Some(mb) => match ctx.shared.store.set_memory_limit((mb as usize) << 20) {
            Ok(()) => b"OK\r\n",
            Err(_) => b"MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust\r\n",
        },
    };
    if !noreply {
        ctx.out.extend_from_slice(reply);
    }
}
