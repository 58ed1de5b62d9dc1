//! `stats` and its subcommands, with memcached 1.6.18's names in its order.
//!
//! The store has no slab classes. `stats items` and `stats slabs` describe it as one class,
//! number 1, that holds every item (memcached omits empty classes, so an empty store reports
//! none): monitoring tools that sum over classes get the store's totals. A segment plays the
//! part of a slab page. Fields for what Spinel does not have (slab moves, LRU segments, the
//! crawler, item ages) carry the value memcached shows while that feature is idle, so that
//! every field a client reads is there.

use proto_memcache::{
    text::response::{compose_end, compose_stat, compose_stat_u64, Status},
    ErrorReply, Words,
};

use std::sync::atomic::Ordering::Relaxed;

use super::{cachedump, detail, sizes, Ctx, Session};
use crate::{Core, MemcacheState, Totals};

/// Linux reports process CPU times in `/proc` in units of `USER_HZ`, which is 100 on every
/// architecture it supports.
const USER_HZ: u64 = 100;

/// memcached reserves this many descriptors per worker thread (`reserved_fds`).
const RESERVED_FDS_PER_THREAD: u64 = 5;

pub(super) fn execute(ctx: &mut Ctx<'_>, session: &Session, args: &Words<'_>) {
    let subcommand = args.iter().next().unwrap_or(b"");
    match subcommand {
        b"" => general(ctx),
        b"reset" => {
            ctx.view.reset_totals();
            return ctx.status(Status::Reset, false);
        }
        b"settings" | b"items" | b"slabs" | b"sizes" => {
            group(ctx, subcommand);
        }
        // memcached sends these without an END.
        b"sizes_enable" | b"sizes_disable" => {
            group(ctx, subcommand);
            return;
        }
        b"conns" => conns(ctx, u64::from(session.conn_number)),
        b"spinel" => spinel(ctx),
        b"detail" => return detail::execute(ctx, args),
        b"cachedump" => return cachedump::execute(ctx, args),
        _ => return ctx.error(ErrorReply::Error, false),
    }
    compose_end(ctx.out);
}

/// Composes the `STAT` lines of a group (`b""` for the general stats) without the `END`;
/// false for a group there is none of. The binary protocol turns the lines into packets.
pub(crate) fn group(ctx: &mut Ctx<'_>, name: &[u8]) -> bool {
    match name {
        b"" => general(ctx),
        b"settings" => super::stats_settings::compose(ctx),
        b"items" => items(ctx),
        b"slabs" => slabs(ctx),
        b"sizes" => sizes::histogram(ctx),
        b"sizes_enable" => sizes::enable(ctx),
        b"sizes_disable" => sizes::disable(ctx),
        b"spinel" => spinel(ctx),
        _ => return false,
    }
    true
}

/// `stats conns`: memcached's lines for each listener, UDP port and connection of the
/// memcached side, by number (where memcached shows descriptors); `me` is the asking
/// connection's, shown parsing its command as in memcached.
fn conns(ctx: &mut Ctx<'_>, me: u64) {
    use std::fmt::Write as _;
    let now_secs = ctx.view.core().clock_secs();
    let mut text = String::new();
    for conn in ctx.view.core().clients.conns() {
        let id = conn.id;
        if conn.udp() {
            let _ = write!(text, "STAT {id}:UDP UDP\r\n");
        }
        let _ = write!(text, "STAT {id}:addr {}\r\n", conn.addr);
        if let Some(listen_addr) = conn.listen_addr() {
            let _ = write!(text, "STAT {id}:listen_addr {listen_addr}\r\n");
        }
        let name = if id == me { "conn_parse_cmd" } else { conn.state().name() };
        let _ = write!(text, "STAT {id}:state {name}\r\n");
        let idle_secs = now_secs.saturating_sub(conn.last_cmd_secs());
        let _ = write!(text, "STAT {id}:secs_since_last_cmd {idle_secs}\r\n");
    }
    ctx.out.extend_from_slice(text.as_bytes());
}

fn general(ctx: &mut Ctx<'_>) {
    let view = ctx.view;
    let totals = view.core().totals();
    let out = &mut *ctx.out;
    let (user, system) = cpu_times();
    compose_stat_u64(b"pid", u64::from(std::process::id()), out);
    compose_stat_u64(b"uptime", view.core().uptime_secs(), out);
    compose_stat_u64(b"time", view.core().store.config().clock.now_ms() / 1000, out);
    compose_stat(b"version", crate::MEMCACHED_VERSION.as_bytes(), out);
    // memcached's event library; Spinel's loops are its own, on this kernel interface.
    compose_stat(b"libevent", view.core().settings.io_backend.as_bytes(), out);
    compose_stat_u64(b"pointer_size", usize::BITS.into(), out);
    compose_stat(b"rusage_user", user.as_bytes(), out);
    compose_stat(b"rusage_system", system.as_bytes(), out);
    compose_stat_u64(b"max_connections", view.core().max_connections(), out);
    connection_stats(view.core(), view.memcache(), &totals, view.core().settings.threads, out);
    command_stats(&totals, out);
    if view.core().idle_timeout_secs() > 0 {
        compose_stat_u64(b"idle_kicks", totals.idle_kicks, out);
    }
    server_stats(ctx, &totals);
    store_stats(ctx, &totals);
}

fn connection_stats(
    core: &Core,
    memcache: &MemcacheState,
    totals: &Totals,
    threads: u32,
    out: &mut Vec<u8>,
) {
    compose_stat_u64(b"curr_connections", totals.curr_connections, out);
    compose_stat_u64(b"total_connections", totals.total_connections, out);
    if core.settings.memcached_features.maxconns_fast {
        compose_stat_u64(b"rejected_connections", totals.rejected_connections, out);
    }
    // memcached's count of connection structures allocated; ours are made per connection.
    compose_stat_u64(b"connection_structures", totals.curr_connections, out);
    // memcached's response objects; Spinel's replies go to output buffers counted whole in
    // `conn_buffer_bytes`, never refused.
    for name in [&b"response_obj_oom"[..], b"response_obj_count", b"response_obj_bytes"] {
        compose_stat_u64(name, 0, out);
    }
    // memcached's read buffers are Spinel's input tails: held while a request is partly
    // received, sized to it (no cache of free ones).
    let read = &memcache.read_bufs;
    compose_stat_u64(b"read_buf_count", read.count.load(Relaxed), out);
    compose_stat_u64(b"read_buf_bytes", read.bytes.load(Relaxed), out);
    compose_stat_u64(b"read_buf_bytes_free", 0, out);
    compose_stat_u64(b"read_buf_oom", read.oom.load(Relaxed), out);
    compose_stat_u64(b"reserved_fds", RESERVED_FDS_PER_THREAD * u64::from(threads), out);
}

fn command_stats(totals: &Totals, out: &mut Vec<u8>) {
    let fields = [
        (&b"cmd_get"[..], totals.cmd_get),
        (b"cmd_set", totals.cmd_set),
        (b"cmd_flush", totals.cmd_flush),
        (b"cmd_touch", totals.cmd_touch),
        (b"cmd_meta", totals.cmd_meta),
        (b"get_hits", totals.get_hits),
        (b"get_misses", totals.get_misses),
        (b"get_expired", totals.get_expired),
        (b"get_flushed", totals.get_flushed),
        (b"delete_misses", totals.delete_misses),
        (b"delete_hits", totals.delete_hits),
        (b"incr_misses", totals.incr_misses),
        (b"incr_hits", totals.incr_hits),
        (b"decr_misses", totals.decr_misses),
        (b"decr_hits", totals.decr_hits),
        (b"cas_misses", totals.cas_misses),
        (b"cas_hits", totals.cas_hits),
        (b"cas_badval", totals.cas_badval),
        (b"touch_hits", totals.touch_hits),
        (b"touch_misses", totals.touch_misses),
        (b"store_too_large", totals.store_too_large),
        (b"store_no_memory", totals.store_no_memory),
        (b"auth_cmds", totals.auth_cmds),
        (b"auth_errors", totals.auth_errors),
    ];
    for (name, value) in fields {
        compose_stat_u64(name, value, out);
    }
}

/// From `bytes_read` to `round_robin_fallback`.
fn server_stats(ctx: &mut Ctx<'_>, totals: &Totals) {
    let view = ctx.view;
    let store = view.core().store.stats();
    let crawler = view.memcache().tunables.lock().lru_crawler;
    let out = &mut *ctx.out;
    compose_stat_u64(b"bytes_read", totals.bytes_read, out);
    compose_stat_u64(b"bytes_written", totals.bytes_written, out);
    compose_stat_u64(b"limit_maxbytes", view.core().maxbytes(), out);
    // Spinel never stops accepting to shed load (it refuses over `-c` instead).
    compose_stat_u64(b"accepting_conns", 1, out);
    compose_stat_u64(b"listen_disabled_num", 0, out);
    compose_stat_u64(b"time_in_listen_disabled_us", 0, out);
    compose_stat_u64(b"threads", view.core().settings.threads.into(), out);
    compose_stat_u64(b"conn_yields", totals.conn_yields, out);
    // memcached's table size as a power of two, from the index's slots.
    let power = u64::from(store.index_slots.max(1).ilog2());
    compose_stat_u64(b"hash_power_level", power, out);
    compose_stat_u64(b"hash_bytes", store.index_bytes, out);
    // The index grows in steps at each tick, never blocking; memcached's flag is for its
    // stop-the-world expansion.
    compose_stat_u64(b"hash_is_expanding", 0, out);
    let idle = [
        &b"slab_reassign_rescues"[..],
        b"slab_reassign_chunk_rescues",
        b"slab_reassign_evictions_nomem",
        b"slab_reassign_inline_reclaim",
        b"slab_reassign_busy_items",
        b"slab_reassign_busy_deletes",
        b"slab_reassign_running",
        b"slabs_moved",
    ];
    if view.core().settings.memcached_features.slab_reassign {
        idle.iter().for_each(|name| compose_stat_u64(name, 0, out));
    }
    if crawler {
        compose_stat_u64(b"lru_crawler_running", 0, out);
        compose_stat_u64(b"lru_crawler_starts", 0, out);
    }
    if view.core().settings.memcached_features.lru_maintainer {
        compose_stat_u64(b"lru_maintainer_juggles", 0, out);
    }
    compose_stat_u64(b"malloc_fails", 0, out);
    let watchers = &view.memcache().watchers;
    let logger = [
        (&b"log_worker_dropped"[..], 0),
        (b"log_worker_written", watchers.logged()),
        (b"log_watcher_skipped", watchers.skipped.load(Relaxed)),
        (b"log_watcher_sent", watchers.sent.load(Relaxed)),
        (b"log_watchers", watchers.count() as u64),
    ];
    logger.iter().for_each(|&(name, value)| compose_stat_u64(name, value, out));
    if view.core().settings.ssl.is_some() {
        compose_stat_u64(
            b"ssl_handshake_errors",
            view.memcache().ssl_handshake_errors.load(Relaxed),
            out,
        );
        let refreshed = view.memcache().ssl_cert_refreshed_secs.load(Relaxed);
        let since = view.core().clock_secs().saturating_sub(refreshed);
        compose_stat_u64(b"time_since_server_cert_refresh", since.into(), out);
    }
    compose_stat_u64(b"unexpected_napi_ids", 0, out);
    compose_stat_u64(b"round_robin_fallback", 0, out);
}

/// From `bytes` on: the store's totals (memcached's `get_stats` and `item_stats_totals`).
/// The LRU maintainer's counters are there only while memcached would run it.
fn store_stats(ctx: &mut Ctx<'_>, totals: &Totals) {
    let view = ctx.view;
    let store = view.core().store.stats();
    let maintainer = view.core().settings.memcached_features.lru_maintainer;
    let out = &mut *ctx.out;
    compose_stat_u64(b"bytes", store.item_bytes, out);
    compose_stat_u64(b"curr_items", store.items, out);
    compose_stat_u64(b"total_items", totals.total_items, out);
    compose_stat_u64(b"slab_global_page_pool", 0, out);
    compose_stat_u64(b"expired_unfetched", store.expired_unfetched, out);
    compose_stat_u64(b"evicted_unfetched", 0, out);
    if maintainer {
        compose_stat_u64(b"evicted_active", 0, out);
    }
    compose_stat_u64(b"evictions", store.evictions, out);
    compose_stat_u64(b"reclaimed", store.expired_reclaimed, out);
    let idle = [&b"crawler_reclaimed"[..], b"crawler_items_checked", b"lrutail_reflocked"];
    idle.iter().for_each(|name| compose_stat_u64(name, 0, out));
    if maintainer {
        let moves = [
            &b"moves_to_cold"[..],
            b"moves_to_warm",
            b"moves_within_lru",
            b"direct_reclaims",
            b"lru_bumps_dropped",
        ];
        moves.iter().for_each(|name| compose_stat_u64(name, 0, out));
    }
}

/// `stats spinel`: Spinel's own values, kept out of `stats` so that its list is memcached's
/// line for line (tools parse it by position and count).
fn spinel(ctx: &mut Ctx<'_>) {
    let buffers = ctx.view.core().conn_buffer_bytes.load(Relaxed);
    compose_stat_u64(b"conn_buffer_bytes", buffers, ctx.out);
}

/// User and system CPU time as memcached prints them (`seconds.microseconds`), from
/// `/proc/self/stat` (exec has no unsafe code for `getrusage`); zero where it is unreadable.
pub(crate) fn cpu_times() -> (String, String) {
    let ticks = std::fs::read_to_string("/proc/self/stat").ok().and_then(|stat| {
        // Fields after the command name, which is in parentheses and may hold spaces:
        // state is field 3, utime field 14 and stime field 15.
        let rest = &stat[stat.rfind(')')? + 1..];
        let mut fields = rest.split_ascii_whitespace().skip(11);
        let user: u64 = fields.next()?.parse().ok()?;
        let system: u64 = fields.next()?.parse().ok()?;
        Some((user, system))
    });
    let (user, system) = ticks.unwrap_or((0, 0));
    let format =
        |ticks: u64| format!("{}.{:06}", ticks / USER_HZ, ticks % USER_HZ * (1_000_000 / USER_HZ));
    (format(user), format(system))
}

fn items(ctx: &mut Ctx<'_>) {
    let store = ctx.view.core().store.stats();
    if store.items == 0 {
        return;
    }
    let temp_lru = ctx.view.memcache().tunables.lock().temp_lru;
    let out = &mut *ctx.out;
    // One queue, as memcached's flat LRU keeps everything in its cold segment.
    let mut fields = vec![
        (&b"number"[..], store.items),
        (b"number_hot", 0),
        (b"number_warm", 0),
        (b"number_cold", store.items),
    ];
    if temp_lru {
        fields.push((b"number_temp", 0));
    }
    fields.extend([
        (&b"age_hot"[..], 0),
        (b"age_warm", 0),
        (b"age", 0),
        (b"mem_requested", store.item_bytes),
        (b"evicted", store.evictions),
        (b"evicted_nonzero", 0),
        (b"evicted_time", 0),
        (b"outofmemory", 0),
        (b"tailrepairs", 0),
        (b"reclaimed", store.expired_reclaimed),
        (b"expired_unfetched", store.expired_unfetched),
        (b"evicted_unfetched", 0),
        (b"evicted_active", 0),
        (b"crawler_reclaimed", 0),
        (b"crawler_items_checked", 0),
        (b"lrutail_reflocked", 0),
        (b"moves_to_cold", 0),
        (b"moves_to_warm", 0),
        (b"moves_within_lru", 0),
        (b"direct_reclaims", 0),
        (b"hits_to_hot", 0),
        (b"hits_to_warm", 0),
        (b"hits_to_cold", 0),
        (b"hits_to_temp", 0),
    ]);
    let mut name = Vec::new();
    for (field, value) in fields {
        name.clear();
        name.extend_from_slice(b"items:1:");
        name.extend_from_slice(field);
        compose_stat_u64(&name, value, out);
    }
}

fn slabs(ctx: &mut Ctx<'_>) {
    let view = ctx.view;
    let store = view.core().store.stats();
    let totals = view.core().totals();
    let out = &mut *ctx.out;
    let pages = store.segments_in_use;
    if pages > 0 {
        let fields = [
            (&b"1:chunk_size"[..], view.core().store.config().segment_size_bytes as u64),
            (b"1:chunks_per_page", 1),
            (b"1:total_pages", pages),
            (b"1:total_chunks", pages),
            (b"1:used_chunks", pages),
            (b"1:free_chunks", 0),
            (b"1:free_chunks_end", 0),
            (b"1:get_hits", totals.get_hits),
            (b"1:cmd_set", totals.cmd_set),
            (b"1:delete_hits", totals.delete_hits),
            (b"1:incr_hits", totals.incr_hits),
            (b"1:decr_hits", totals.decr_hits),
            (b"1:cas_hits", totals.cas_hits),
            (b"1:cas_badval", totals.cas_badval),
            (b"1:touch_hits", totals.touch_hits),
        ];
        for (name, value) in fields {
            compose_stat_u64(name, value, out);
        }
    }
    compose_stat_u64(b"active_slabs", u64::from(pages > 0), out);
    compose_stat_u64(b"total_malloced", store.memory_used_bytes, out);
}

#[cfg(test)]
mod tests {
    use crate::{memcache::tests::Harness, Settings};

    /// `(name, value)` of each STAT line of a reply that must end in END.
    fn stat_lines(reply: &[u8]) -> Vec<(String, String)> {
        let text = String::from_utf8(reply.to_vec()).expect("text");
        let body = text.strip_suffix("END\r\n").expect("ends in END");
        body.lines()
            .map(|line| {
                let rest = line.strip_prefix("STAT ").expect("a STAT line");
                let (name, value) = rest.split_once(' ').expect("name and value");
                (name.to_owned(), value.to_owned())
            })
            .collect()
    }

    fn value_of(lines: &[(String, String)], name: &str) -> String {
        let found = lines.iter().find(|(n, _)| n == name);
        found.unwrap_or_else(|| panic!("no {name}")).1.clone()
    }

    // Goal: general stats carry memcached's names in memcached's order, with our counts.
    #[test]
    fn general_stats() {
        let mut h = Harness::new();
        h.run("set a 0 0 1\r\na\r\nget a b\r\ndelete b\r\n");
        let lines = stat_lines(&h.run("stats\r\n"));
        let names: Vec<&str> = lines.iter().map(|(name, _)| name.as_str()).collect();
        let expected = [
            "pid",
            "uptime",
            "time",
            "version",
            "libevent",
            "pointer_size",
            "rusage_user",
            "rusage_system",
            "max_connections",
            "curr_connections",
            "total_connections",
            "rejected_connections",
            "connection_structures",
            "response_obj_oom",
            "response_obj_count",
            "response_obj_bytes",
            "read_buf_count",
            "read_buf_bytes",
            "read_buf_bytes_free",
            "read_buf_oom",
            "reserved_fds",
            "cmd_get",
            "cmd_set",
            "cmd_flush",
            "cmd_touch",
            "cmd_meta",
            "get_hits",
            "get_misses",
            "get_expired",
            "get_flushed",
            "delete_misses",
            "delete_hits",
            "incr_misses",
            "incr_hits",
            "decr_misses",
            "decr_hits",
            "cas_misses",
            "cas_hits",
            "cas_badval",
            "touch_hits",
            "touch_misses",
            "store_too_large",
            "store_no_memory",
            "auth_cmds",
            "auth_errors",
            "bytes_read",
            "bytes_written",
            "limit_maxbytes",
            "accepting_conns",
            "listen_disabled_num",
            "time_in_listen_disabled_us",
            "threads",
            "conn_yields",
            "hash_power_level",
            "hash_bytes",
            "hash_is_expanding",
            "slab_reassign_rescues",
            "slab_reassign_chunk_rescues",
            "slab_reassign_evictions_nomem",
            "slab_reassign_inline_reclaim",
            "slab_reassign_busy_items",
            "slab_reassign_busy_deletes",
            "slab_reassign_running",
            "slabs_moved",
            "lru_crawler_running",
            "lru_crawler_starts",
            "lru_maintainer_juggles",
            "malloc_fails",
            "log_worker_dropped",
            "log_worker_written",
            "log_watcher_skipped",
            "log_watcher_sent",
            "log_watchers",
            "unexpected_napi_ids",
            "round_robin_fallback",
            "bytes",
            "curr_items",
            "total_items",
            "slab_global_page_pool",
            "expired_unfetched",
            "evicted_unfetched",
            "evicted_active",
            "evictions",
            "reclaimed",
            "crawler_reclaimed",
            "crawler_items_checked",
            "lrutail_reflocked",
            "moves_to_cold",
            "moves_to_warm",
            "moves_within_lru",
            "direct_reclaims",
            "lru_bumps_dropped",
        ];
        assert_eq!(names, expected);
        let check = [
            ("pid", std::process::id().to_string()),
            ("time", "1700000000".to_owned()),
            ("version", crate::MEMCACHED_VERSION.to_owned()),
            ("pointer_size", "64".to_owned()),
            ("cmd_get", "2".to_owned()),
            ("get_hits", "1".to_owned()),
            ("get_misses", "1".to_owned()),
            ("delete_misses", "1".to_owned()),
            ("cmd_set", "1".to_owned()),
            ("curr_items", "1".to_owned()),
            ("total_items", "1".to_owned()),
            ("bytes", "2".to_owned()),
            // The store's limit (the harness builds an 8 MiB one), which `cache_memlimit` moves.
            ("limit_maxbytes", (8u64 << 20).to_string()),
        ];
        for (name, value) in check {
            assert_eq!(value_of(&lines, name), value, "{name}");
        }
        let rusage = value_of(&lines, "rusage_user");
        assert!(rusage.split_once('.').is_some_and(|(_, micros)| micros.len() == 6), "{rusage}");
    }

    // Goal: stats reset answers RESET and zeroes counters, not items.
    #[test]
    fn reset() {
        let mut h = Harness::new();
        h.check(
            "set a 0 0 1\r\na\r\nget a\r\nstats reset\r\n",
            "STORED\r\nVALUE a 0 1\r\na\r\nEND\r\nRESET\r\n",
        );
        let lines = stat_lines(&h.run("stats\r\n"));
        assert_eq!(value_of(&lines, "cmd_get"), "0");
        assert_eq!(value_of(&lines, "curr_items"), "1");
    }

    // Goal: stats settings reports the settings with memcached's names and words.
    #[test]
    fn settings() {
        let settings = Settings { cas_enabled: false, evictions: false, ..Settings::default() };
        let mut h = Harness::with_settings(settings);
        let lines = stat_lines(&h.run("stats settings\r\n"));
        let check = [
            ("maxbytes", "8388608"),
            ("maxconns", "1024"),
            ("tcpport", "11211"),
            ("evictions", "off"),
            ("cas_enabled", "no"),
            ("num_threads", "1"),
            ("reqs_per_event", "20"),
            ("tcp_backlog", "1024"),
            ("binding_protocol", "auto-negotiate"),
            ("item_size_max", "1048576"),
            ("io_backend", "epoll"),
            ("busy_poll_us", "0"),
        ];
        for (name, value) in check {
            assert_eq!(value_of(&lines, name), value, "{name}");
        }
    }

    // Goal: items and slabs describe the store as one class; empty means no class.
    #[test]
    fn items_and_slabs() {
        let mut h = Harness::new();
        h.check("stats items\r\n", "END\r\n");
        h.check(
            "stats slabs\r\n",
            format!(
                "STAT active_slabs 0\r\nSTAT total_malloced {}\r\nEND\r\n",
                h.shared.core.store.stats().memory_used_bytes
            ),
        );
        h.run("set a 0 0 3\r\nabc\r\nget a\r\n");
        let items = stat_lines(&h.run("stats items\r\n"));
        assert_eq!(value_of(&items, "items:1:number"), "1");
        assert_eq!(value_of(&items, "items:1:mem_requested"), "4");
        let slabs = stat_lines(&h.run("stats slabs\r\n"));
        assert_eq!(value_of(&slabs, "1:chunk_size"), "65536");
        assert_eq!(value_of(&slabs, "1:get_hits"), "1");
        assert_eq!(value_of(&slabs, "active_slabs"), "1");
    }

    // Goal: the other subcommands answer as memcached does.
    #[test]
    fn other_subcommands() {
        let mut h = Harness::new();
        h.check("stats sizes\r\n", "STAT sizes_status disabled\r\nEND\r\n");
        h.check("stats conns\r\n", "END\r\n");
        h.check("stats bogus\r\n", "ERROR\r\n");
    }

    // Goal: `stats conns` lists listeners, UDP ports and connections by number in memcached's
    // line shapes; the asking connection is parsing, a closed one is gone.
    #[test]
    fn conns_lists_registered_entries() {
        use crate::{
            conns::{Addr, ConnEntry, ConnState::*},
            memcache::Session,
        };
        use std::sync::Arc;
        let mut h = Harness::new();
        let addr = |text: &str| text.parse().expect("address");
        let listen = Addr::Tcp(addr("127.0.0.1:11211"));
        let listener =
            h.shared.core.clients.register_conn(ConnEntry::new(listen, None, Listening, 0));
        let conn = |port| {
            let peer = Addr::Tcp(addr(&format!("127.0.0.1:{port}")));
            ConnEntry::new(peer, Some(Arc::clone(&listener)), New, 0)
        };
        let udp_addr = Addr::Udp(addr("127.0.0.1:11211"));
        let udp =
            Session::connect(h.shared.memcache_view(), ConnEntry::new(udp_addr, None, Read, 0));
        let mut idle = Session::connect(h.shared.memcache_view(), conn(5));
        h.session = Session::connect(h.shared.memcache_view(), conn(6));
        let gone = Session::connect(h.shared.memcache_view(), conn(7));
        gone.disconnect(h.shared.memcache_view());
        idle.note_activity(h.shared.memcache_view(), DataBlock);
        assert_eq!(udp.conn_number, 2);
        h.check(
            "stats conns\r\n",
            "STAT 1:addr tcp:127.0.0.1:11211\r\nSTAT 1:state conn_listening\r\n\
             STAT 1:secs_since_last_cmd 0\r\n\
             STAT 2:UDP UDP\r\nSTAT 2:addr udp:127.0.0.1:11211\r\nSTAT 2:state conn_read\r\n\
             STAT 2:secs_since_last_cmd 0\r\n\
             STAT 3:addr tcp:127.0.0.1:5\r\nSTAT 3:listen_addr tcp:127.0.0.1:11211\r\n\
             STAT 3:state conn_nread\r\nSTAT 3:secs_since_last_cmd 0\r\n\
             STAT 4:addr tcp:127.0.0.1:6\r\nSTAT 4:listen_addr tcp:127.0.0.1:11211\r\n\
             STAT 4:state conn_parse_cmd\r\nSTAT 4:secs_since_last_cmd 0\r\nEND\r\n",
        );
    }
}
