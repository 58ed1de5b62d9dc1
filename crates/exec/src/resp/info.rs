//! INFO [section ...]: Redis 7's default sections, in its order and with its headers,
//! holding the fields Spinel can back with its own figures, or with the fixed values a
//! Redis without persistence, replication, modules or cluster shows.
//!
//! Keyspace line: keys and keys with an expiry per database, from a walk over the store (the
//! store keeps no count of expiring items). A walk costs about 130 ms per million keys on the
//! worker thread of the connection that asked, so it stops after 100,000 items and scales
//! what it counted to the store's size: exact up to that many keys, an estimate beyond.
//! `avg_ttl` is 0, as Redis shows before its expiry cycle has sampled any key.

use std::{fmt::Write as _, sync::atomic::Ordering};

use store::Expiry;

use super::{ttl, Ctx};
use crate::{keyspace, Shared, Totals, REDIS_VERSION};

/// Sections in the order INFO prints them: Redis 7's default set, and `commandstats`, which
/// (as in Redis) only `all`, `everything` or its own name ask for. Redis's `latencystats`
/// is not kept.
const SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "commandstats",
    "errorstats",
    "cluster",
    "keyspace",
];

/// Sections left out of a plain INFO (and of `INFO default`).
const NOT_DEFAULT: &[&str] = &["commandstats"];

pub(super) fn info(ctx: &mut Ctx<'_>) {
    let asked: Vec<Vec<u8>> = (1..ctx.argc()).map(|i| ctx.arg(i).to_ascii_lowercase()).collect();
    let all = asked.iter().any(|a| matches!(a.as_slice(), b"all" | b"everything"));
    let default = asked.is_empty() || asked.iter().any(|a| a == b"default");
    let wanted: Vec<&str> = SECTIONS
        .iter()
        .copied()
        .filter(|s| {
            all || (default && !NOT_DEFAULT.contains(s)) || asked.iter().any(|a| a == s.as_bytes())
        })
        .collect();
    let text = render(ctx.shared, ctx.session.db, &wanted);
    ctx.reply().verbatim(b"txt", text.as_bytes());
}

/// The sections for a connection that selected database `db`.
fn render(shared: &Shared, db: u8, sections: &[&str]) -> String {
    let mut text = String::with_capacity(2048);
    for (index, section) in sections.iter().enumerate() {
        if index > 0 {
            text.push_str("\r\n");
        }
        let _ = write!(text, "# {}\r\n", title(section));
        match *section {
            "server" => server(shared, &mut text),
            "clients" => clients(shared, &mut text),
            "memory" => memory(shared, db, &mut text),
            "persistence" => persistence(shared, &mut text),
            "stats" => stats(shared, &shared.core.totals(), &mut text),
            "replication" => replication(shared, &mut text),
            "cpu" => cpu(&mut text),
            "commandstats" => commandstats(shared, &mut text),
            "errorstats" => errorstats(shared, &mut text),
            "cluster" => {
                field(&mut text, "cluster_enabled", u64::from(shared.redis.cluster.get().is_some()))
            }
            "keyspace" => keyspace_lines(shared, &mut text),
            _ => {} // modules: none
        }
    }
    text
}

/// Redis's header: the name capitalised, `CPU` in capitals.
fn title(section: &str) -> String {
    if section == "cpu" {
        return "CPU".into();
    }
    let mut title = section.to_string();
    title[..1].make_ascii_uppercase();
    title
}

pub(super) fn field(text: &mut String, name: &str, value: impl std::fmt::Display) {
    let _ = write!(text, "{name}:{value}\r\n");
}

fn server(shared: &Shared, text: &mut String) {
    let uptime = shared.core.uptime_secs();
    field(text, "redis_version", REDIS_VERSION);
    // Not built from Redis's git: what a Redis built from a release tarball shows.
    field(text, "redis_git_sha1", "00000000");
    field(text, "redis_git_dirty", 0);
    field(text, "redis_mode", "standalone");
    field(text, "spinel_version", env!("CARGO_PKG_VERSION"));
    field(text, "os", os_name());
    field(text, "arch_bits", usize::BITS);
    field(text, "multiplexing_api", &shared.core.settings.io_backend);
    field(text, "process_id", std::process::id());
    field(text, "tcp_port", shared.core.settings.resp_port);
    if !shared.core.settings.skipped_default_ports.is_empty() {
        field(text, "skipped_default_ports", &shared.core.settings.skipped_default_ports);
    }
    field(text, "server_time_usec", ttl::now_ms(shared) * 1000);
    field(text, "uptime_in_seconds", uptime);
    field(text, "uptime_in_days", uptime / 86_400);
    field(text, "io_threads_active", u8::from(shared.core.settings.threads > 1));
}

/// As Redis prints `uname`: system, release, machine (`Linux 6.1.0 x86_64`); read from
/// /proc (exec has no unsafe code for `uname`), the machine as compiled for.
fn os_name() -> String {
    let read = |path: &str| std::fs::read_to_string(path).map(|s| s.trim().to_string());
    let system = read("/proc/sys/kernel/ostype").unwrap_or_else(|_| std::env::consts::OS.into());
    let release = read("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{system} {release} {}", std::env::consts::ARCH)
}

fn clients(shared: &Shared, text: &mut String) {
    field(text, "connected_clients", shared.core.clients.len());
    field(text, "maxclients", shared.core.max_connections());
    // Paused clients count as blocked, as in Redis (blocked until the pause ends).
    let blocked = shared.redis.blocking.blocked_clients() + shared.redis.pause.held_clients();
    field(text, "blocked_clients", blocked);
    field(text, "tracking_clients", shared.redis.tracking.clients());
    field(text, "clients_in_timeout_table", shared.redis.blocking.with_timeout());
}

fn memory(shared: &Shared, db: u8, text: &mut String) {
    let clients_bytes = shared.core.conn_buffer_bytes.load(Ordering::Relaxed);
    let used = shared.core.store.memory_used_bytes() as u64 + clients_bytes;
    let maxmemory = shared.core.maxmemory_bytes();
    field(text, "used_memory", used);
    field(text, "used_memory_human", bytes_to_human(used));
    if let Some(rss) = resident_bytes() {
        field(text, "used_memory_rss", rss);
        field(text, "used_memory_rss_human", bytes_to_human(rss));
    }
    field(text, "maxmemory", maxmemory);
    field(text, "maxmemory_human", bytes_to_human(maxmemory));
    // The policy its keys are under: `noeviction` in a never-evict database.
    field(text, "maxmemory_policy", shared.core.maxmemory_policy_of_db(db));
    // Nothing is held outside the limit's count (no replication backlog, no AOF buffer).
    field(text, "mem_not_counted_for_evict", 0);
    field(text, "mem_clients_normal", clients_bytes);
    scripting_memory(shared, text);
    // Rust's global allocator, the C library's malloc (Redis names it the same way).
    field(text, "mem_allocator", "libc");
    // Values are freed where they are dropped, never handed to a lazy-free thread.
    field(text, "lazyfree_pending_objects", 0);
    field(text, "lazyfreed_objects", 0);
}

/// Redis 7's scripting lines of INFO memory: the Lua states' heaps (`used_memory_vm_*`,
/// 0 before the first script made them) and what scripts and libraries keep (the cached
/// bodies; each library's code).
fn scripting_memory(shared: &Shared, text: &mut String) {
    let engine = &shared.redis.scripts;
    let vm_eval = engine.lua_memory_bytes.load(Ordering::Relaxed);
    let vm_functions = engine.function_memory_bytes.load(Ordering::Relaxed);
    let scripts_eval = engine.cached_script_bytes.load(Ordering::Relaxed);
    let vm_total = vm_eval + vm_functions;
    field(text, "used_memory_lua", vm_eval);
    field(text, "used_memory_vm_eval", vm_eval);
    field(text, "used_memory_lua_human", bytes_to_human(vm_eval));
    field(text, "used_memory_scripts_eval", scripts_eval);
    field(text, "number_of_cached_scripts", engine.cached_scripts.load(Ordering::Relaxed));
    field(text, "number_of_functions", engine.functions.load(Ordering::Relaxed));
    field(text, "number_of_libraries", engine.libraries.load(Ordering::Relaxed));
    field(text, "used_memory_vm_functions", vm_functions);
    field(text, "used_memory_vm_total", vm_total);
    field(text, "used_memory_vm_total_human", bytes_to_human(vm_total));
    field(text, "used_memory_scripts", scripts_eval);
    field(text, "used_memory_scripts_human", bytes_to_human(scripts_eval));
}

/// The process's resident memory (`VmRSS` of /proc/self/status, in kB there).
pub(super) fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_ascii_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Redis's `bytesToHuman`: bytes below 1 KiB, then two decimals of K, M, G, T or P, and
/// bytes again from 1024 P.
fn bytes_to_human(bytes: u64) -> String {
    let mut scale = 1024u64;
    for unit in ["K", "M", "G", "T", "P"] {
        if bytes >= scale && bytes / scale < 1024 {
            return format!("{:.2}{unit}", bytes as f64 / scale as f64);
        }
        scale = scale.saturating_mul(1024);
    }
    format!("{bytes}B")
}

/// Saves (SAVE, BGSAVE): whether one runs, the last one's time (the start, before any)
/// and outcome; the changes Redis commands made since the last successful save began.
fn persistence(shared: &Shared, text: &mut String) {
    let state = &shared.redis.save_state;
    let running = state.in_progress.load(std::sync::atomic::Ordering::Relaxed);
    field(text, "loading", 0);
    field(text, "async_loading", 0);
    // Redis's copy-on-write figures are a fork's pages; here, the keys a save's picture
    // kept (see `snapshot::picture`).
    let (kept_now, kept_peak) = shared.core.picture.kept_now_and_peak();
    field(text, "current_cow_peak", kept_peak);
    field(text, "current_cow_size", kept_now);
    let changes = shared.core.raw_totals().redis_changes;
    let at_save = state.changes_at_save.load(std::sync::atomic::Ordering::Relaxed);
    field(text, "rdb_changes_since_last_save", changes.wrapping_sub(at_save));
    field(text, "rdb_bgsave_in_progress", u8::from(running));
    let last = state.last_save_secs.load(std::sync::atomic::Ordering::Relaxed);
    field(text, "rdb_last_save_time", last);
    let ok = state.last_save_ok.load(std::sync::atomic::Ordering::Relaxed);
    field(text, "rdb_last_bgsave_status", if ok { "ok" } else { "err" });
    field(text, "rdb_saves", state.saves.load(std::sync::atomic::Ordering::Relaxed));
    let last_kept = shared.core.picture.last_peak_bytes.load(std::sync::atomic::Ordering::Relaxed);
    field(text, "rdb_last_cow_size", last_kept);
    field(text, "aof_enabled", 0);
    field(text, "aof_rewrite_in_progress", 0);
    field(text, "aof_last_write_status", "ok");
}

fn stats(shared: &Shared, totals: &Totals, text: &mut String) {
    let (expired, evicted) = shared.core.store_counts_since_reset();
    let (_, errors) = shared.redis.error_stats.snapshot();
    field(text, "total_connections_received", totals.total_connections);
    field(text, "total_commands_processed", totals.total_commands);
    field(text, "total_net_input_bytes", totals.bytes_read);
    field(text, "total_net_output_bytes", totals.bytes_written);
    field(text, "rejected_connections", totals.rejected_connections);
    let syncs = &shared.core.repl.syncs;
    field(text, "sync_full", syncs.full.load(std::sync::atomic::Ordering::Relaxed));
    field(text, "sync_partial_ok", syncs.partial_ok.load(std::sync::atomic::Ordering::Relaxed));
    field(text, "sync_partial_err", syncs.partial_err.load(std::sync::atomic::Ordering::Relaxed));
    field(text, "expired_keys", expired);
    field(text, "evicted_keys", evicted);
    field(text, "keyspace_hits", totals.get_hits);
    field(text, "keyspace_misses", totals.get_misses);
    use super::pubsub::Kind;
    field(text, "pubsub_channels", shared.redis.pubsub.len(Kind::Channel));
    field(text, "pubsub_patterns", shared.redis.pubsub.len(Kind::Pattern));
    field(text, "pubsubshard_channels", shared.redis.pubsub.len(Kind::Shard));
    // MIGRATE opens a connection per call and closes it: none is cached.
    field(text, "migrate_cached_sockets", 0);
    let (keys, items, prefixes) = shared.redis.tracking.totals();
    field(text, "tracking_total_keys", keys);
    field(text, "tracking_total_items", items);
    field(text, "tracking_total_prefixes", prefixes);
    field(text, "total_error_replies", errors);
    let denied_auth = shared.redis.failed_logins.total.load(std::sync::atomic::Ordering::Relaxed);
    field(text, "acl_access_denied_auth", denied_auth);
}

/// The replication section: a cluster replica's view of the map, or the role this server
/// has in Redis replication (`replication::info_section`).
fn replication(shared: &Shared, text: &mut String) {
    if let Some((ip, port)) = super::cluster::replica_of(shared) {
        // A replica in the cluster map, fed by no replication link.
        field(text, "role", "slave");
        field(text, "master_host", ip);
        field(text, "master_port", port);
        field(text, "master_link_status", "down");
        field(text, "master_last_io_seconds_ago", -1);
        field(text, "master_sync_in_progress", 0);
        field(text, "slave_read_repl_offset", 0);
        field(text, "slave_repl_offset", 0);
        field(text, "master_link_down_since_seconds", -1);
        field(text, "slave_priority", 100);
        field(text, "slave_read_only", 1);
        field(text, "replica_announced", 1);
        field(text, "connected_slaves", 0);
        field(text, "master_repl_offset", 0);
        field(text, "repl_backlog_active", 0);
        return;
    }
    super::replication::info_section(shared, text);
}

/// Process CPU time, as Redis prints `getrusage` (`seconds.microseconds`); no children.
fn cpu(text: &mut String) {
    let (user, system) = crate::memcache::stats::cpu_times();
    field(text, "used_cpu_sys", system);
    field(text, "used_cpu_user", user);
    field(text, "used_cpu_sys_children", "0.000000");
    field(text, "used_cpu_user_children", "0.000000");
}

/// Redis's `cmdstat_<name>` lines since the last CONFIG RESETSTAT, in the table's order.
/// Calls are counted per command, a container's per subcommand (`cmdstat_client|id`);
/// `usec` is estimated from the sampled calls (see `crate::latency`).
fn commandstats(shared: &Shared, text: &mut String) {
    for (slot, sum) in shared.core.command_stats_since_reset() {
        let Some(name) = proto_resp::commands::stat_name(slot) else { continue };
        let usec = sum.estimated_usec();
        let per_call = if sum.calls == 0 { 0.0 } else { usec as f64 / sum.calls as f64 };
        let _ = write!(
            text,
            "cmdstat_{}:calls={},usec={usec},usec_per_call={per_call:.2},rejected_calls={},\
             failed_calls={}\r\n",
            name, sum.calls, sum.rejected, sum.failed
        );
    }
}

fn errorstats(shared: &Shared, text: &mut String) {
    for (prefix, count) in shared.redis.error_stats.snapshot().0 {
        let _ = write!(text, "errorstat_{prefix}:count={count}\r\n");
    }
}

fn keyspace_lines(shared: &Shared, text: &mut String) {
    let mut counts = [(0u64, 0u64); keyspace::DATABASES as usize];
    count_by_walk(shared, &mut counts);
    for (db, (keys, expires)) in counts.iter().enumerate() {
        if *keys > 0 {
            let _ = write!(text, "db{db}:keys={keys},expires={expires},avg_ttl=0\r\n");
        }
    }
}

/// (keys, keys with an expiry) per database, as INFO's keyspace section counts them.
pub(crate) fn db_key_counts(shared: &Shared) -> Vec<(u64, u64)> {
    let mut counts = vec![(0u64, 0u64); keyspace::DATABASES as usize];
    count_by_walk(shared, &mut counts);
    counts
}

/// The most items INFO's keyspace line walks. The walk runs on the asking client's worker
/// (about 130 ms per million keys), so a larger store is sampled: its first this many items
/// in index order, which spreads them over the whole key space, with the counts scaled to
/// the store's size.
const KEYSPACE_WALK_MAX: u64 = if cfg!(test) { 1_000 } else { 100_000 }; // tests: small stores

/// (keys, keys with an expiry) per database, from one walk over the store's visible items,
/// or from a sample of them (see [`KEYSPACE_WALK_MAX`]).
fn count_by_walk(shared: &Shared, counts: &mut [(u64, u64)]) {
    let mut cursor = 0;
    let mut walked = 0u64;
    loop {
        cursor = shared.core.store.scan_items(cursor, 4096, |item| {
            walked += 1;
            let Some((db, _)) = keyspace::decode(item.key()) else {
                return;
            };
            let entry = &mut counts[db as usize];
            entry.0 += 1;
            entry.1 += u64::from(item.expiry() != Expiry::Never);
        });
        if cursor == 0 {
            return;
        }
        if walked >= KEYSPACE_WALK_MAX {
            break;
        }
    }
    let total = shared.core.store.len() as u64;
    for (keys, expires) in counts.iter_mut() {
        *keys = (*keys as u128 * total as u128 / walked as u128) as u64;
        *expires = (*expires as u128 * total as u128 / walked as u128) as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::{super::testkit::Harness, bytes_to_human};

    /// Goal: INFO's sections in Redis's order with its headers and field names; section
    /// selection; RESP3 verbatim.
    #[test]
    fn info_sections() {
        let mut h = Harness::new();
        h.check(&[("SET a 1", "+OK\r\n"), ("GET a", "$1\r\n1\r\n"), ("GET b", "$-1\r\n")]);
        let all = h.run("INFO");
        let headers: Vec<&str> = all.lines().filter(|l| l.starts_with('#')).collect();
        assert_eq!(
            headers,
            [
                "# Server",
                "# Clients",
                "# Memory",
                "# Persistence",
                "# Stats",
                "# Replication",
                "# CPU",
                "# Modules",
                "# Errorstats",
                "# Cluster",
                "# Keyspace"
            ]
        );
        for name in [
            "# Server\r\nredis_version:7.2.0\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\n\
             redis_mode:standalone\r\n",
            "\r\nos:Linux ",
            "\r\nprocess_id:",
            "\r\ntcp_port:6379\r\n",
            "\r\nuptime_in_seconds:",
            "\r\n\r\n# Clients\r\nconnected_clients:0\r\n",
            "\r\nused_memory:",
            "\r\nmaxmemory:8388608\r\nmaxmemory_human:8.00M\r\nmaxmemory_policy:allkeys-lru\r\n",
            "\r\nloading:0\r\n",
            "\r\naof_enabled:0\r\n",
            "\r\ntotal_connections_received:0\r\n",
            "\r\ntotal_commands_processed:4\r\n",
            "\r\nkeyspace_hits:1\r\nkeyspace_misses:1\r\n",
            "\r\nexpired_keys:0\r\n",
            "\r\nevicted_keys:0\r\n",
            "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n",
            "# CPU\r\nused_cpu_sys:",
            "\r\n\r\n# Modules\r\n\r\n# Errorstats\r\n\r\n# Cluster\r\ncluster_enabled:0\r\n",
            "# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n",
        ] {
            assert!(all.contains(name), "{name:?} missing from {all}");
        }
        let keyspace = h.run("INFO keyspace");
        assert_eq!(keyspace, "$44\r\n# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n\r\n");
        let two = h.run("INFO CLIENTS Server nosuch");
        let headers: Vec<&str> = two.lines().filter(|l| l.starts_with('#')).collect();
        assert_eq!(headers, ["# Server", "# Clients"]);
        assert_eq!(h.run("INFO nosuch"), "$0\r\n\r\n");
        assert_eq!(h.run("INFO cluster"), "$30\r\n# Cluster\r\ncluster_enabled:0\r\n\r\n");
        assert!(h.run("INFO everything").contains("# Keyspace"));
        assert!(h.run("INFO all").contains("# Errorstats"));
        h.session.protocol = proto_resp::Protocol::Resp3;
        assert_eq!(
            h.run("INFO keyspace"),
            "=48\r\ntxt:# Keyspace\r\ndb0:keys=1,expires=0,avg_ttl=0\r\n\r\n"
        );
        assert_eq!(h.run("INFO nosuch"), "=4\r\ntxt:\r\n");
    }

    /// Goal: keys and expiring keys counted per database.
    #[test]
    fn info_keyspace_per_database() {
        let mut h = Harness::new();
        h.check(&[("SET a 1 EX 100", "+OK\r\n"), ("SET b 2", "+OK\r\n")]);
        assert!(h.run("INFO keyspace").contains("db0:keys=2,expires=1,avg_ttl=0\r\n"));
        h.check(&[("SELECT 2", "+OK\r\n"), ("MSET x 1 y 2", "+OK\r\n"), ("EXPIRE y 50", ":1\r\n")]);
        let text = h.run("INFO keyspace");
        assert!(text.ends_with(
            "# Keyspace\r\ndb0:keys=2,expires=1,avg_ttl=0\r\ndb2:keys=2,expires=1,avg_ttl=0\r\n\r\n"
        ));
    }

    /// Goal: past the walk's bound (1,000 items in tests) the keyspace line is a scaled
    /// sample: keys is the store's size, expires close to the true share (a third here).
    #[test]
    fn info_keyspace_samples_a_large_store() {
        let mut h = Harness::new();
        for i in 0..6_000 {
            let ttl = if i % 3 == 0 { " EX 100" } else { "" };
            assert_eq!(h.run(&format!("SET key:{i} v{ttl}")), "+OK\r\n");
        }
        let text = h.run("INFO keyspace");
        let line = text.lines().find(|l| l.starts_with("db0:")).expect("a db0 line");
        let field = |name: &str| -> u64 {
            let rest = &line[line.find(name).unwrap() + name.len() + 1..];
            rest.split(',').next().unwrap().parse().unwrap()
        };
        assert_eq!(field("keys"), 6_000, "{line}");
        let expires = field("expires");
        assert!((1_700..=2_300).contains(&expires), "a third of 6,000 expire: {line}");
    }

    /// Goal: error replies counted by prefix, in byte order.
    #[test]
    fn info_errorstats() {
        let mut h = Harness::new();
        h.check(&[("SET n x", "+OK\r\n")]);
        h.run("INCR n");
        h.run("GET");
        h.run("HELLO 4");
        let text = h.run("INFO errorstats");
        assert!(
            text.contains("# Errorstats\r\nerrorstat_ERR:count=2\r\nerrorstat_NOPROTO:count=1\r\n"),
            "{text}"
        );
        assert!(h.run("INFO stats").contains("total_error_replies:3\r\n"));
    }

    /// Goal: Redis's bytesToHuman figures.
    #[test]
    fn human_bytes() {
        for (bytes, want) in [
            (0, "0B"),
            (1023, "1023B"),
            (916_808, "895.32K"),
            (64 << 20, "64.00M"),
            (5 << 30, "5.00G"),
            (u64::MAX, "18446744073709551615B"),
        ] {
            assert_eq!(bytes_to_human(bytes), want);
        }
    }
}
