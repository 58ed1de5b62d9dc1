//! The Prometheus text exposition of the server's counters (`--metrics-port`, served by the
//! server crate): memcached's `stats` and Redis's INFO fields under the names
//! memcached_exporter and redis_exporter give them, so that existing dashboards and alerts
//! work on Spinel unchanged, and Spinel's own figures under `spinel_`.
//!
//! Counters are the raw sums since start (`stats reset` and CONFIG RESETSTAT do not make
//! them go back, as Prometheus counters must not).

use std::fmt::Write;

use crate::{resp, Shared, MEMCACHED_VERSION, REDIS_VERSION};

/// One metric family: its HELP and TYPE lines, then its samples (labels as `name="value"`
/// pairs, already escaped).
struct Family<'a> {
    name: &'a str,
    kind: &'a str,
    help: &'a str,
}

impl Family<'_> {
    fn write(&self, out: &mut String, samples: &[(&str, f64)]) {
        let _ = writeln!(out, "# HELP {} {}", self.name, self.help);
        let _ = writeln!(out, "# TYPE {} {}", self.name, self.kind);
        for (labels, value) in samples {
            let braces = if labels.is_empty() { String::new() } else { format!("{{{labels}}}") };
            let _ = writeln!(out, "{}{braces} {value}", self.name);
        }
    }
}

fn gauge<'a>(name: &'a str, help: &'a str) -> Family<'a> {
    Family { name, kind: "gauge", help }
}

fn counter<'a>(name: &'a str, help: &'a str) -> Family<'a> {
    Family { name, kind: "counter", help }
}

/// The counters and the store's figures, read once per scrape.
struct Snapshot {
    totals: crate::counters::Totals,
    store: store::Stats,
}

/// The whole exposition, as `/metrics` serves it.
pub fn render(shared: &Shared) -> String {
    let mut out = String::with_capacity(8 * 1024);
    // One reading of the counters and the store for the whole exposition, so that its
    // families agree with each other and the sums are taken once.
    let now = Snapshot { totals: shared.core.raw_totals(), store: shared.core.store.stats() };
    memcached_families(shared, &now, &mut out);
    redis_families(shared, &now, &mut out);
    spinel_families(shared, &now, &mut out);
    command_families(shared, &mut out);
    out
}

/// Redis commands: calls (exact) and the latency histogram of a sample (one call in
/// `latency::SAMPLE` of each command; see `crate::latency`).
fn command_families(shared: &Shared, out: &mut String) {
    let summaries =
        crate::latency::summarize(shared.core.worker_counters().map(|c| &c.command_stats));
    let name_of = |slot: usize| proto_resp::commands::stat_name(slot).unwrap_or("unknown");
    let calls: Vec<(String, f64)> = summaries
        .iter()
        .map(|(at, s)| (format!("cmd=\"{}\"", name_of(*at)), s.calls as f64))
        .collect();
    let samples: Vec<(&str, f64)> = calls.iter().map(|(l, v)| (l.as_str(), *v)).collect();
    counter("spinel_redis_commands_total", "Redis commands run, by command.").write(out, &samples);
    let name = "spinel_redis_command_duration_seconds";
    let _ = writeln!(
        out,
        "# HELP {name} Redis command latency in the server, of one call in {} of each command \
         (the count says how many were timed).",
        crate::latency::SAMPLE
    );
    let _ = writeln!(out, "# TYPE {name} histogram");
    for (at, summary) in &summaries {
        let cmd = name_of(*at);
        let mut cumulative = 0;
        for (bucket, count) in summary.buckets.iter().enumerate() {
            cumulative += count;
            let le = match crate::latency::BUCKET_BOUNDS_US.get(bucket) {
                Some(us) => format!("{}", *us as f64 / 1e6),
                None => "+Inf".into(),
            };
            let _ = writeln!(out, "{name}_bucket{{cmd=\"{cmd}\",le=\"{le}\"}} {cumulative}");
        }
        let _ = writeln!(out, "{name}_sum{{cmd=\"{cmd}\"}} {}", summary.sum_ns as f64 / 1e9);
        let _ = writeln!(out, "{name}_count{{cmd=\"{cmd}\"}} {}", summary.timed);
    }
}

fn memcached_families(shared: &Shared, now: &Snapshot, out: &mut String) {
    let (totals, store) = (&now.totals, &now.store);
    let t = |n: u64| n as f64;
    gauge("memcached_up", "Whether the server answers (always 1 when scraped).")
        .write(out, &[("", 1.0)]);
    let version = format!("version=\"{MEMCACHED_VERSION}\"");
    gauge("memcached_version", "The memcached version the server speaks.")
        .write(out, &[(&version, 1.0)]);
    gauge("memcached_uptime_seconds", "Seconds since the server started.")
        .write(out, &[("", t(shared.core.uptime_secs()))]);
    gauge("memcached_current_connections", "Open client connections, of both protocols.")
        .write(out, &[("", t(totals.curr_connections))]);
    gauge("memcached_max_connections", "The connection limit (-c).")
        .write(out, &[("", t(shared.core.max_connections()))]);
    counter("memcached_connections_total", "Connections accepted.")
        .write(out, &[("", t(totals.total_connections))]);
    counter("memcached_connections_rejected_total", "Connections refused at the limit.")
        .write(out, &[("", t(totals.rejected_connections))]);
    counter("memcached_connections_yielded_total", "Times a connection yielded to others (-R).")
        .write(out, &[("", t(totals.conn_yields))]);
    let commands = [
        ("command=\"get\",status=\"hit\"", totals.get_hits),
        ("command=\"get\",status=\"miss\"", totals.get_misses),
        ("command=\"set\",status=\"hit\"", totals.cmd_set),
        ("command=\"delete\",status=\"hit\"", totals.delete_hits),
        ("command=\"delete\",status=\"miss\"", totals.delete_misses),
        ("command=\"incr\",status=\"hit\"", totals.incr_hits),
        ("command=\"incr\",status=\"miss\"", totals.incr_misses),
        ("command=\"decr\",status=\"hit\"", totals.decr_hits),
        ("command=\"decr\",status=\"miss\"", totals.decr_misses),
        ("command=\"cas\",status=\"hit\"", totals.cas_hits),
        ("command=\"cas\",status=\"miss\"", totals.cas_misses),
        ("command=\"cas\",status=\"badval\"", totals.cas_badval),
        ("command=\"touch\",status=\"hit\"", totals.touch_hits),
        ("command=\"touch\",status=\"miss\"", totals.touch_misses),
        ("command=\"flush\",status=\"hit\"", totals.cmd_flush),
    ];
    let samples: Vec<(&str, f64)> = commands.iter().map(|&(l, v)| (l, t(v))).collect();
    counter(
        "memcached_commands_total",
        "Commands by command and outcome (a Redis GET or SET counts as get or set).",
    )
    .write(out, &samples);
    gauge("memcached_current_items", "Items stored now.").write(out, &[("", t(store.items))]);
    counter("memcached_items_total", "Items stored since start.")
        .write(out, &[("", t(store.total_items))]);
    gauge("memcached_current_bytes", "Bytes of keys and values stored now.")
        .write(out, &[("", t(store.item_bytes))]);
    gauge("memcached_limit_bytes", "The memory limit (-m, or cache_memlimit).")
        .write(out, &[("", t(shared.core.maxbytes()))]);
    counter("memcached_items_evicted_total", "Items evicted to make room.")
        .write(out, &[("", t(store.evictions))]);
    counter("memcached_items_reclaimed_total", "Expired items removed.")
        .write(out, &[("", t(store.expired_reclaimed))]);
    counter("memcached_read_bytes_total", "Bytes read from clients, both protocols.")
        .write(out, &[("", t(totals.bytes_read))]);
    counter("memcached_written_bytes_total", "Bytes written to clients, both protocols.")
        .write(out, &[("", t(totals.bytes_written))]);
}

fn redis_families(shared: &Shared, now: &Snapshot, out: &mut String) {
    let (totals, store) = (&now.totals, &now.store);
    let t = |n: u64| n as f64;
    gauge("redis_up", "Whether the server answers (always 1 when scraped).")
        .write(out, &[("", 1.0)]);
    let info =
        format!("redis_version=\"{REDIS_VERSION}\",redis_mode=\"standalone\",role=\"master\"");
    gauge("redis_instance_info", "The Redis version and mode the server speaks.")
        .write(out, &[(&info, 1.0)]);
    gauge("redis_uptime_in_seconds", "Seconds since the server started.")
        .write(out, &[("", t(shared.core.uptime_secs()))]);
    gauge("redis_connected_clients", "Redis connections open now.")
        .write(out, &[("", shared.core.clients.len() as f64)]);
    gauge("redis_blocked_clients", "Clients blocked (none: no blocking commands yet).")
        .write(out, &[("", 0.0)]);
    counter("redis_connections_received_total", "Connections accepted, both protocols.")
        .write(out, &[("", t(totals.total_connections))]);
    counter("redis_rejected_connections_total", "Connections refused.")
        .write(out, &[("", t(totals.rejected_connections))]);
    counter("redis_commands_processed_total", "Commands of either protocol executed.")
        .write(out, &[("", t(totals.total_commands))]);
    counter("redis_keyspace_hits_total", "Reads that found their key.")
        .write(out, &[("", t(totals.get_hits))]);
    counter("redis_keyspace_misses_total", "Reads that did not.")
        .write(out, &[("", t(totals.get_misses))]);
    counter("redis_evicted_keys_total", "Keys evicted to make room.")
        .write(out, &[("", t(store.evictions))]);
    counter("redis_expired_keys_total", "Expired keys removed.")
        .write(out, &[("", t(store.expired_reclaimed))]);
    counter("redis_net_input_bytes_total", "Bytes read from clients.")
        .write(out, &[("", t(totals.bytes_read))]);
    counter("redis_net_output_bytes_total", "Bytes written to clients.")
        .write(out, &[("", t(totals.bytes_written))]);
    let buffers = shared.core.conn_buffer_bytes.load(std::sync::atomic::Ordering::Relaxed);
    gauge("redis_memory_used_bytes", "Memory charged: the store and connection buffers.")
        .write(out, &[("", t(store.memory_used_bytes + buffers))]);
    gauge("redis_memory_max_bytes", "maxmemory (-m).")
        .write(out, &[("", t(shared.core.maxmemory_bytes()))]);
    let denied = shared.redis.failed_logins.total.load(std::sync::atomic::Ordering::Relaxed);
    counter("redis_acl_access_denied_auth_total", "Failed logins.").write(out, &[("", t(denied))]);
    let errors = shared.redis.error_stats.snapshot().0;
    let labels: Vec<String> =
        errors.iter().map(|(prefix, _)| format!("err=\"{}\"", escape(prefix))).collect();
    let samples: Vec<(&str, f64)> =
        labels.iter().zip(&errors).map(|(l, (_, n))| (l.as_str(), t(*n))).collect();
    counter("redis_errors_total", "Error replies by their first word.").write(out, &samples);
    let dbs = resp::db_key_counts(shared);
    let keys: Vec<(String, u64, u64)> = dbs
        .iter()
        .enumerate()
        .filter(|(_, (k, _))| *k > 0)
        .map(|(db, &(k, e))| (format!("db=\"db{db}\""), k, e))
        .collect();
    let samples: Vec<(&str, f64)> = keys.iter().map(|(l, k, _)| (l.as_str(), t(*k))).collect();
    gauge("redis_db_keys", "Keys per database.").write(out, &samples);
    let samples: Vec<(&str, f64)> = keys.iter().map(|(l, _, e)| (l.as_str(), t(*e))).collect();
    gauge("redis_db_keys_expiring", "Keys with an expiry per database.").write(out, &samples);
}

fn spinel_families(shared: &Shared, now: &Snapshot, out: &mut String) {
    let (totals, store) = (&now.totals, &now.store);
    let t = |n: u64| n as f64;
    let buffers = shared.core.conn_buffer_bytes.load(std::sync::atomic::Ordering::Relaxed);
    let memory = [
        ("kind=\"store\"", t(store.memory_used_bytes)),
        ("kind=\"index\"", t(store.index_bytes)),
        ("kind=\"collections\"", t(shared.owned.charged_bytes())),
        ("kind=\"buffers\"", t(buffers)),
    ];
    gauge("spinel_memory_bytes", "Memory by kind: charged to the store (index and large collections included), the index alone, large Redis collections kept outside the store, connection buffers.").write(out, &memory);
    gauge("spinel_segments", "Store segments in use.")
        .write(out, &[("", t(store.segments_in_use))]);
    counter(
        "spinel_evictions_kept_total",
        "Items copied forward by eviction because they were read.",
    )
    .write(out, &[("", t(store.evict_kept))]);
    counter("spinel_protocol_errors_total", "Requests answered with an error, both protocols.")
        .write(out, &[("", t(totals.protocol_errors))]);
    counter(
        "spinel_connections_cut_off_total",
        "Connections closed for unsent output over the limit or idleness.",
    )
    .write(out, &[("", t(totals.conns_cut_off))]);
}

/// A label value as the text format wants it: backslash, quote and newline escaped.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}
