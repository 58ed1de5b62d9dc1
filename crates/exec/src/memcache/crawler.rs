//! `lru_crawler` and `cache_memlimit`, and memcached's view of an item's size and slab
//! class (which `me` shares).
//!
//! ```text
//!   lru_crawler metadump all|hash|<class>[,<class>]*   a line per live item, then END
//!   lru_crawler crawl all|<class>[,<class>]*           reclaims expired memory; OK
//!   (lru_crawler enable|disable|tocrawl|sleep: tune.rs)
//!   cache_memlimit <megabytes> [noreply]               OK; evicts down to a lower limit
//! ```
//!
//! A metadump walks the store with [`store::Store::scan_items`] (lock-free, a few index
//! blocks at a time) and streams: a call stops once it has produced the session's reply
//! chunk and returns [`Flow::Again`] with the scan cursor in the session, as a multiget
//! does, so a dump of millions of items never holds more than a chunk.
//!
//! Differences from memcached: dumps run side by side. memcached has one crawler thread: a
//! second dump's request waits (its worker thread blocked) until the first is done, or gets
//! `BUSY` between two batches of the first; here it is simply served, which is what the
//! waiting client sees in the end, without a blocked thread. A `crawl` finishes before its
//! `OK`. Slab classes are those of memcached's default settings (`-f 1.25 -n 48`, 1 MiB
//! pages). Items of Redis databases other than 0, and collections, are not listed.

use std::io::Write;

use proto_memcache::Words;
use store::{Item, ValueKind};

use super::{visible_cas, Ctx, Session};
use crate::{keyspace, memcache::MemcacheView, Core, Flow, MemcacheState};

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

/// A metadump under way on a connection.
#[derive(Debug, Clone)]
pub(crate) struct Dump {
    cursor: u64,
    /// Slab classes to list (bit per class), or every one.
    classes: u64,
}

const ALL_CLASSES: u64 = u64::MAX;
const BAD_CLASS: &[u8] = b"BADCLASS invalid class id\r\n";
const DISABLED: &[u8] = b"CLIENT_ERROR lru crawler disabled\r\n";

/// Whether an `lru_crawler` request is one of the two that walk the store (`crawl`,
/// `metadump`, with one argument) or the rest of an unfinished dump; `tune.rs` answers the
/// others.
pub(super) fn walks_store(session: &Session, args: &Words<'_>) -> bool {
    let mut words = args.iter();
    let (sub, arg, extra) = (words.next(), words.next(), words.next());
    session.dump.is_some()
        || (matches!(sub, Some(b"crawl" | b"metadump")) && arg.is_some() && extra.is_none())
}

/// `lru_crawler crawl|metadump <classes>`, or the next chunk of a dump.
pub(super) fn lru_crawler(ctx: &mut Ctx<'_>, session: &mut Session, args: &Words<'_>) -> Flow {
    if session.dump.is_some() {
        return metadump_step(ctx, session);
    }
    let mut words = args.iter();
    let reply: &[u8] = match (words.next(), words.next()) {
        (Some(b"crawl"), Some(arg)) => crawl(ctx.view, arg),
        (Some(b"metadump"), Some(arg)) => return metadump_start(ctx, session, arg),
        _ => b"ERROR\r\n",
    };
    ctx.out.extend_from_slice(reply);
    Flow::Continue
}

fn crawler_enabled(memcache: &MemcacheState) -> bool {
    memcache.tunables.lock().lru_crawler
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
fn crawl(view: MemcacheView<'_>, arg: &[u8]) -> &'static [u8] {
    if !crawler_enabled(view.memcache()) {
        return DISABLED;
    }
    if arg == b"hash" {
        // memcached walks the hash table for metadumps only.
        return b"ERROR an unknown error happened\r\n";
    }
    if parse_classes(arg).is_none() {
        return BAD_CLASS;
    }
    view.core().store.maintain(usize::MAX);
    b"OK\r\n"
}

fn metadump_start(ctx: &mut Ctx<'_>, session: &mut Session, arg: &[u8]) -> Flow {
    let view = ctx.view;
    let reply: &[u8] = if !crawler_enabled(view.memcache()) {
        DISABLED
    } else if !view.core().settings.dump_enabled {
        b"ERROR metadump not allowed\r\n"
    } else if !ctx.out.is_empty() {
        // As memcached: a dump takes over the connection, so replies still waiting to be
        // sent (earlier requests of the same batch) refuse it.
        b"ERROR cannot pipeline other commands before metadump\r\n"
    } else {
        match parse_classes(arg) {
            None => BAD_CLASS,
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
    let view = ctx.view;
    let chunk_end = match session.reply_chunk_bytes {
        0 => usize::MAX,
        chunk => ctx.out.len().saturating_add(chunk),
    };
    loop {
        dump.cursor = view.core().store.scan_items(dump.cursor, SCAN_STEP_ITEMS, |item| {
            dump_line(view.core(), &item, dump.classes, ctx.out);
        });
        if dump.cursor == 0 {
            ctx.out.extend_from_slice(b"END\r\n");
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
fn dump_line(core: &Core, item: &Item<'_>, classes: u64, out: &mut Vec<u8>) {
    let Some((0, key)) = keyspace::decode(item.key()) else { return };
    if item.value_kind() != ValueKind::String {
        return;
    }
    let (size, class) = item_size_class(core, key.len(), item);
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
        visible_cas(core, item.cas()),
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
pub(crate) fn item_size_class(core: &Core, key_len: usize, item: &Item<'_>) -> (usize, u64) {
    let flags_bytes = if item.flags() != 0 { 4 } else { 0 };
    let cas_bytes = if core.settings.cas_enabled { 8 } else { 0 };
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
        Some(mb) => match ctx.view.core().set_maxbytes(mb << 20) {
            Ok(()) => b"OK\r\n",
            Err(_) => b"MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust\r\n",
        },
    };
    if !noreply {
        ctx.out.extend_from_slice(reply);
    }
}

#[cfg(test)]
mod tests {
    use proto_memcache::{parse_request, Limits};

    use crate::{
        memcache::{execute, tests::Harness, tests::T0_MS},
        Flow, Settings,
    };

    // Goal: a metadump line per item with memcached's fields, keys url-encoded; class lists
    // filter; bad classes and shapes get memcached's replies.
    #[test]
    fn metadump_lines_and_errors() {
        let mut h = Harness::new();
        h.check("set a/b 5 100 2\r\nhi\r\n", "STORED\r\n");
        h.check(format!("set big 0 0 3000\r\n{}\r\n", "v".repeat(3000)), "STORED\r\n");
        h.advance_secs(2);
        h.run("get big\r\n");
        let (t0, cas) = (T0_MS / 1000, h.cas(b"a/b"));
        let line_a = format!(
            "key=a%2Fb exp={} la={t0} cas={cas} fetch=no cls=1 size={}\n",
            t0 + 100,
            48 + 3 + 1 + 4 + 4 + 8
        );
        h.check("lru_crawler metadump 1\r\n", format!("{line_a}END\r\n"));
        let cas = h.cas(b"big");
        let line_big = format!("key=big exp=-1 la={t0} cas={cas} fetch=yes cls=17 size=3062\n");
        h.check("lru_crawler metadump 17\r\n", format!("{line_big}END\r\n"));
        let all = String::from_utf8(h.run("lru_crawler metadump hash\r\n")).unwrap();
        assert!(all.len() == line_a.len() + line_big.len() + 5 && all.ends_with("\nEND\r\n"));
        assert!(all.contains(&line_a) && all.contains(&line_big), "{all}");
        for bad in ["0", "64", "x", "1,y", "-1"] {
            h.check(format!("lru_crawler metadump {bad}\r\n"), "BADCLASS invalid class id\r\n");
        }
        h.check("lru_crawler metadump\r\nlru_crawler metadump 1 2\r\n", "ERROR\r\nERROR\r\n");
        // A reply still unsent refuses the dump, as memcached's response stack does.
        h.check(
            "mg nokey v\r\nlru_crawler metadump all\r\n",
            "EN\r\nERROR cannot pipeline other commands before metadump\r\n",
        );
    }

    // Goal: a dump far larger than the reply chunk comes in chunks of about that size, each
    // item once, END last; the command is counted once.
    #[test]
    fn metadump_streams_in_chunks() {
        let mut h = Harness::new();
        for i in 0..2000 {
            h.run(format!("set key{i} 0 0 1 noreply\r\nx\r\n"));
        }
        let before = h.totals().total_commands;
        h.session.set_reply_chunk(1000);
        let wire = b"lru_crawler metadump all\r\n";
        let (request, _) = parse_request(wire, &Limits::default()).unwrap();
        let (mut dump, mut calls) = (Vec::new(), 0);
        loop {
            let mut out = Vec::new();
            let flow =
                execute(h.shared.memcache_view(), &h.counters, &mut h.session, &request, &mut out);
            calls += 1;
            // A step reads whole blocks of sub-tables until it has read the buckets of 64
            // items (11): 2,000 keys leave the index's 64 sub-tables at 8 buckets each, so a
            // step reads two of them, up to 128 slots, past a chunk not yet full.
            assert!(out.len() < 1000 + 128 * 80, "a chunk of {} bytes", out.len());
            dump.extend_from_slice(&out);
            if flow == Flow::Continue {
                break;
            }
            assert_eq!(flow, Flow::Again);
        }
        assert!(calls > 20, "{calls} calls"); // 2,000 lines of about 80 bytes, chunks under 11.3 KB
        let text = String::from_utf8(dump).unwrap();
        let mut keys: Vec<&str> =
            text.lines().filter_map(|l| l.strip_prefix("key=")?.split(' ').next()).collect();
        keys.sort_unstable();
        keys.dedup();
        assert_eq!(keys.len(), 2000);
        assert!(text.ends_with("\nEND\r\n"));
        assert_eq!(h.totals().total_commands, before + 1);
    }

    // Goal: crawl, enable/disable and the tunables answer as memcached does.
    #[test]
    fn crawler_commands() {
        let mut h = Harness::new();
        h.check("set gone 0 1 1\r\nx\r\n", "STORED\r\n");
        h.advance_secs(2);
        h.check("lru_crawler crawl all\r\nlru_crawler crawl 1,2\r\n", "OK\r\nOK\r\n");
        h.check("lru_crawler metadump all\r\n", "END\r\n");
        h.check("lru_crawler crawl 0\r\n", "BADCLASS invalid class id\r\n");
        h.check("lru_crawler crawl hash\r\n", "ERROR an unknown error happened\r\n");
        h.check("lru_crawler tocrawl 5\r\nlru_crawler sleep 10\r\n", "OK\r\nOK\r\n");
        h.check("lru_crawler tocrawl x\r\n", "CLIENT_ERROR bad command line format\r\n");
        h.check(
            "lru_crawler sleep 1000001\r\n",
            "CLIENT_ERROR sleep must be one second or less\r\n",
        );
        h.check("lru_crawler\r\nlru_crawler foo\r\n", "ERROR\r\nERROR\r\n");
        h.check("lru_crawler enable\r\n", "ERROR failed to start lru crawler thread\r\n");
        h.check("lru_crawler disable\r\nlru_crawler disable\r\n", "OK\r\nOK\r\n");
        let disabled = "CLIENT_ERROR lru crawler disabled\r\n";
        h.check("lru_crawler crawl all\r\nlru_crawler metadump all\r\n", disabled.repeat(2));
        h.check("lru_crawler enable\r\n", "OK\r\n");
        h.check("lru_crawler metadump all\r\n", "END\r\n");
    }

    // Goal: cache_memlimit moves the store's limit (and what stats report), evicting down
    // to a lower one, with memcached's replies for bad input.
    #[test]
    fn cache_memlimit() {
        let mut h = Harness::with(Settings::default(), store::WhenFull::Evict, 32 << 20);
        let value = "v".repeat(1000);
        for i in 0..20_000 {
            h.run(format!("set k{i} 0 0 1000 noreply\r\n{value}\r\n"));
        }
        assert_eq!(h.shared.core.store.stats().items, 20_000);
        h.check("cache_memlimit 10\r\n", "OK\r\n");
        assert_eq!(h.shared.core.store.memory_limit(), 10 << 20);
        assert!(h.shared.core.store.memory_used_bytes() <= 10 << 20);
        let stats = h.shared.core.store.stats();
        assert!(stats.items < 10_000 && stats.evictions > 10_000, "{stats:?}");
        let limit = |h: &mut Harness| {
            let stats = String::from_utf8(h.run("stats\r\n")).unwrap();
            stats.lines().find_map(|l| l.strip_prefix("STAT limit_maxbytes ")?.parse().ok())
        };
        assert_eq!(limit(&mut h), Some(10u64 << 20));
        let too_small = "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n";
        h.check("cache_memlimit 7\r\ncache_memlimit 0\r\n", too_small.repeat(2));
        h.check(
            "cache_memlimit 1000000001\r\n",
            "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes\r\n",
        );
        // Above what the store may grow to (`memory_max_bytes`; the harness leaves it at
        // the start size).
        h.check(
            "cache_memlimit 33\r\n",
            "MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust\r\n",
        );
        h.check(
            "cache_memlimit x\r\ncache_memlimit -8\r\ncache_memlimit\r\n",
            "ERROR\r\n".repeat(3),
        );
        h.check("cache_memlimit 9 noreply x\r\ncache_memlimit 16 noreply\r\n", "ERROR\r\n");
        h.check("cache_memlimit 32 x\r\n", "OK\r\n");
        assert_eq!(limit(&mut h), Some(32u64 << 20));
    }

    // Goal: with -C, flush_all at a past time flushes what was last accessed at or before
    // it; with CAS on, everything.
    #[test]
    fn flush_all_past_time_without_cas() {
        let settings = Settings { cas_enabled: false, ..Settings::default() };
        let mut h = Harness::with_settings(settings);
        h.advance_secs(100);
        let t_old = T0_MS / 1000 + 100;
        h.check("set old 0 0 1\r\no\r\nset read 0 0 1\r\nr\r\n", "STORED\r\nSTORED\r\n");
        h.advance_secs(3);
        h.check("set new 0 0 1\r\nn\r\n", "STORED\r\n");
        h.run("get read\r\nget read\r\n");
        h.check(format!("flush_all {}\r\n", t_old + 1), "OK\r\n");
        h.check("get old new read\r\n", "VALUE new 0 1\r\nn\r\nVALUE read 0 1\r\nr\r\nEND\r\n");
        let mut h = Harness::new();
        h.advance_secs(100);
        h.check("set old 0 0 1\r\no\r\n", "STORED\r\n");
        h.advance_secs(3);
        h.check("set new 0 0 1\r\nn\r\n", "STORED\r\n");
        h.check(format!("flush_all {}\r\nget old new\r\n", T0_MS / 1000 + 101), "OK\r\nEND\r\n");
    }
}
