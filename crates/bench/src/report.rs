//! Output: the live line each second, the final summary for people, and one JSON object
//! for machines.
//!
//! JSON schema (all counts are of the measured phase; latencies in microseconds):
//! ```text
//! { "protocol": "memcache", "servers": ["127.0.0.1:11211"], "threads": 1,
//!   "connections_per_thread": 50, "pipeline": 1, "mode": "closed" | "open",
//!   "rate_target_per_sec": null | N, "keys_per_get": 1, "key_size": 20,
//!   "value_size": "20", "keyspace": 10000, "structure": "string", "fields": 100,
//!   "ratio_set_get": [1, 9], "seed": 1,
//!   "duration_secs": 5.0,
//!   "requests": N, "requests_per_sec": x, "gets": N, "sets": N, "get_keys": N,
//!   "keys_per_sec": x, "hits": N, "misses": N, "corrupt": N, "hit_ratio": x | null,
//!   "errors": { "server_error": N, "client_error": N, "error": N, "not_stored": N,
//!               "protocol": N, "connection": N, "redirect": N },
//!   "errors_total": N, "errors_outside_measurement": N,
//!   "cluster": false, "redirects": { "moved": N, "ask": N },
//!   "bytes_sent": N, "bytes_received": N, "bytes_sent_per_sec": x,
//!   "bytes_received_per_sec": x,
//!   "latency_us": { "p50": x, "p90": x, "p99": x, "p99_9": x, "p99_99": x, "max": x,
//!                   "mean": x },
//!   "unanswered": N, "open_loop_behind": N,
//!   "preload": null | { "keys": N, "secs": x, "errors_total": N } }
//! ```

use std::fmt::Write as _;

use serde::{Serialize, Serializer};

use crate::{
    client::ErrorKind,
    histogram::{self, Histogram},
    runner::{Interval, Summary},
    stats::{Counts, Stats},
    workload::ValueSizes,
};

/// The percentiles reported, with their JSON names.
pub const PERCENTILES: [(f64, &str); 5] =
    [(0.5, "p50"), (0.9, "p90"), (0.99, "p99"), (0.999, "p99_9"), (0.9999, "p99_99")];

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn per_sec(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

/// `[  3s]  123456 req/s  hit 99.81%  p99 0.412 ms  errors 0`
pub fn live_line(interval: &Interval) -> String {
    let Stats { counts, latency_ns } = &interval.stats;
    let hit = counts.hit_ratio().map_or("-".to_string(), |r| format!("{:.2}%", r * 100.0));
    let mut line = format!(
        "[{:>4}s] {:>9} req/s  hit {hit:>7}  p99 {:.3} ms  errors {}",
        interval.index + 1,
        counts.requests(),
        ms(histogram::quantile(latency_ns, 0.99)),
        counts.errors_total()
    );
    if counts.corrupt > 0 {
        let _ = write!(line, "  CORRUPT {}", counts.corrupt);
    }
    line
}

fn errors_text(counts: &Counts) -> String {
    let parts: Vec<String> = ErrorKind::ALL
        .iter()
        .filter(|k| counts.error(**k) > 0)
        .map(|k| format!("{} {}", k.name(), counts.error(*k)))
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        parts.join(", ")
    }
}

fn value_size_text(sizes: &ValueSizes) -> String {
    match sizes {
        ValueSizes::Fixed(n) => n.to_string(),
        ValueSizes::Range { min, max } => format!("{min}-{max}"),
        ValueSizes::Weighted(list) => {
            list.iter().map(|(s, w)| format!("{s}:{w}")).collect::<Vec<_>>().join(",")
        }
    }
}

/// The summary for people.
pub fn text(summary: &Summary) -> String {
    let c = &summary.config;
    let counts = &summary.stats.counts;
    let secs = summary.elapsed.as_secs_f64();
    let mode = match c.rate_per_sec {
        Some(rate) => format!("open loop at {rate} req/s"),
        None => "closed loop".into(),
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {}: {} thread(s) x {} connection(s), pipeline {}, {mode}, {secs:.2} s measured, \
         seed {}",
        c.protocol.name(),
        c.servers.join(","),
        c.threads,
        c.connections,
        c.pipeline,
        c.seed
    );
    let family = c.workload.family();
    if family.structure != crate::workload::Structure::String {
        let _ = writeln!(
            out,
            "structure    {}, {} field(s) per key, {} keys",
            family.structure.name(),
            family.ids_per_key(),
            c.workload.keyspace
        );
    }
    let _ = writeln!(
        out,
        "requests     {:>12}  {:>12.0}/s   (gets {}, sets {})",
        counts.requests(),
        per_sec(counts.requests(), secs),
        counts.gets,
        counts.sets
    );
    let _ = writeln!(
        out,
        "keys (gets)  {:>12}  {:>12.0}/s",
        counts.get_keys,
        per_sec(counts.get_keys, secs)
    );
    let hit = counts.hit_ratio().map_or("-".to_string(), |r| format!("{:.4}", r));
    let _ = writeln!(
        out,
        "hit ratio    {hit:>12}   (hits {}, misses {}, corrupt {})",
        counts.hits, counts.misses, counts.corrupt
    );
    let _ = writeln!(
        out,
        "bytes/s      sent {:.2} MB/s, received {:.2} MB/s",
        per_sec(counts.bytes_sent, secs) / 1e6,
        per_sec(counts.bytes_received, secs) / 1e6
    );
    let h = &summary.stats.latency_ns;
    let _ = write!(out, "latency ms  ");
    for (q, name) in PERCENTILES {
        let _ = write!(out, " {name} {:.3}", ms(histogram::quantile(h, q)));
    }
    let _ = writeln!(out, " max {:.3}", ms(h.max()));
    let _ = writeln!(out, "errors       {}", errors_text(counts));
    if c.cluster || counts.moved + counts.ask > 0 {
        let _ = writeln!(
            out,
            "redirects    moved {}, ask {} (followed, not errors)",
            counts.moved, counts.ask
        );
    }
    if summary.unmeasured.counts.errors_total() > 0 {
        let _ = writeln!(out, "errors (warm-up) {}", errors_text(&summary.unmeasured.counts));
    }
    if let Some(p) = &summary.preload {
        let _ = writeln!(
            out,
            "preload      {} {} in {:.2} s, errors {}",
            p.keys,
            if c.workload.structure.is_collection() { "fields" } else { "keys" },
            p.elapsed.as_secs_f64(),
            errors_text(&p.stats.counts)
        );
    }
    if summary.unanswered > 0 || summary.behind > 0 {
        let _ = writeln!(
            out,
            "unanswered   {}, open loop behind {}",
            summary.unanswered, summary.behind
        );
    }
    if let Some(failure) = &summary.first_failure {
        let _ = writeln!(out, "failure      {failure}");
    }
    out
}

/// Rounds to `decimals` places, so the JSON shows what matters and not float noise.
fn rounded(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

/// Error counts by kind, as a JSON object in [`ErrorKind::ALL`]'s order.
struct ErrorCounts<'a>(&'a Counts);

impl Serialize for ErrorCounts<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(ErrorKind::ALL.iter().map(|k| (k.name(), self.0.error(*k))))
    }
}

/// `latency_us` of the JSON summary: percentiles, max and mean in microseconds.
#[derive(Serialize)]
struct LatencyUs {
    p50: f64,
    p90: f64,
    p99: f64,
    p99_9: f64,
    p99_99: f64,
    max: f64,
    mean: f64,
}

impl LatencyUs {
    fn of(histogram: &Histogram) -> LatencyUs {
        let us = |ns: u64| rounded(ns as f64 / 1e3, 3);
        let at = |q: f64| us(histogram::quantile(histogram, q));
        LatencyUs {
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            p99_9: at(0.999),
            p99_99: at(0.9999),
            max: us(histogram.max()),
            mean: rounded(histogram.mean() / 1e3, 3),
        }
    }
}

/// `redirects` of the JSON summary: Redis Cluster redirects followed (not errors).
#[derive(Serialize)]
struct RedirectsJson {
    moved: u64,
    ask: u64,
}

/// `preload` of the JSON summary.
#[derive(Serialize)]
struct PreloadJson {
    keys: u64,
    secs: f64,
    errors_total: u64,
}

/// The JSON summary of a run (schema in the module docs; field order is output order).
#[derive(Serialize)]
pub struct RunJson<'a> {
    protocol: &'static str,
    servers: &'a [String],
    threads: usize,
    connections_per_thread: usize,
    pipeline: usize,
    mode: &'static str,
    rate_target_per_sec: Option<u64>,
    keys_per_get: usize,
    key_size: usize,
    value_size: String,
    keyspace: u64,
    structure: &'static str,
    /// Fields per collection key (ignored by string and multi).
    fields: u64,
    ratio_set_get: [u32; 2],
    seed: u64,
    duration_secs: f64,
    requests: u64,
    requests_per_sec: f64,
    gets: u64,
    sets: u64,
    get_keys: u64,
    keys_per_sec: f64,
    hits: u64,
    misses: u64,
    corrupt: u64,
    hit_ratio: Option<f64>,
    errors: ErrorCounts<'a>,
    errors_total: u64,
    errors_outside_measurement: u64,
    cluster: bool,
    redirects: RedirectsJson,
    bytes_sent: u64,
    bytes_received: u64,
    bytes_sent_per_sec: f64,
    bytes_received_per_sec: f64,
    latency_us: LatencyUs,
    unanswered: u64,
    open_loop_behind: u64,
    preload: Option<PreloadJson>,
}

impl<'a> RunJson<'a> {
    pub fn of(summary: &'a Summary) -> RunJson<'a> {
        let c = &summary.config;
        let counts = &summary.stats.counts;
        let secs = summary.elapsed.as_secs_f64();
        let rate = |n: u64| rounded(per_sec(n, secs), 3);
        RunJson {
            protocol: c.protocol.name(),
            servers: &c.servers,
            threads: c.threads,
            connections_per_thread: c.connections,
            pipeline: c.pipeline,
            mode: if c.rate_per_sec.is_some() { "open" } else { "closed" },
            rate_target_per_sec: c.rate_per_sec,
            keys_per_get: c.workload.keys_per_get,
            key_size: c.workload.key_size,
            value_size: value_size_text(&c.workload.value_sizes),
            keyspace: c.workload.keyspace,
            structure: c.workload.structure.name(),
            fields: c.workload.fields,
            ratio_set_get: [c.workload.ratio.sets, c.workload.ratio.gets],
            seed: c.seed,
            duration_secs: rounded(secs, 3),
            requests: counts.requests(),
            requests_per_sec: rate(counts.requests()),
            gets: counts.gets,
            sets: counts.sets,
            get_keys: counts.get_keys,
            keys_per_sec: rate(counts.get_keys),
            hits: counts.hits,
            misses: counts.misses,
            corrupt: counts.corrupt,
            hit_ratio: counts.hit_ratio().map(|r| rounded(r, 6)),
            errors: ErrorCounts(counts),
            errors_total: counts.errors_total(),
            errors_outside_measurement: summary.unmeasured.counts.errors_total(),
            cluster: c.cluster,
            redirects: RedirectsJson { moved: counts.moved, ask: counts.ask },
            bytes_sent: counts.bytes_sent,
            bytes_received: counts.bytes_received,
            bytes_sent_per_sec: rate(counts.bytes_sent),
            bytes_received_per_sec: rate(counts.bytes_received),
            latency_us: LatencyUs::of(&summary.stats.latency_ns),
            unanswered: summary.unanswered,
            open_loop_behind: summary.behind,
            preload: summary.preload.as_ref().map(|p| PreloadJson {
                keys: p.keys,
                secs: rounded(p.elapsed.as_secs_f64(), 3),
                errors_total: p.stats.counts.errors_total(),
            }),
        }
    }
}

/// The summary as one JSON object (schema in the module docs).
pub fn json(summary: &Summary) -> String {
    serde_json::to_string(&RunJson::of(summary)).expect("the summary serializes to JSON")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{runner::Config, stats::Stats};

    /// Goal: the JSON summary parses and has the documented fields and shapes. Method: a
    /// made-up summary through `json`, read back with serde_json.
    #[test]
    fn json_parses_with_the_documented_fields() {
        let mut stats = Stats::default();
        stats.counts.gets = 900;
        stats.counts.hits = 899;
        stats.counts.misses = 1;
        stats.counts.errors[ErrorKind::Connection.index()] = 2;
        (1..=900).for_each(|us| stats.latency_ns.saturating_record(us * 1000));
        let config = Config { servers: vec!["a\"b:1".into()], seed: 9, ..Config::default() };
        let summary = Summary {
            config,
            elapsed: Duration::from_secs(2),
            stats,
            unmeasured: Stats::default(),
            preload: None,
            unanswered: 0,
            behind: 0,
            first_failure: None,
        };
        let value: serde_json::Value = serde_json::from_str(&json(&summary)).unwrap();
        assert_eq!(value["servers"][0], "a\"b:1");
        assert_eq!((value["seed"].as_u64(), value["requests"].as_u64()), (Some(9), Some(900)));
        assert_eq!(value["requests_per_sec"].as_f64(), Some(450.0));
        assert_eq!(value["errors"]["connection"].as_u64(), Some(2));
        assert_eq!(value["errors_total"].as_u64(), Some(2));
        assert_eq!(value["ratio_set_get"], serde_json::json!([1, 9]));
        assert_eq!(
            (value["structure"].as_str(), value["fields"].as_u64()),
            (Some("string"), Some(100))
        );
        assert!(value["rate_target_per_sec"].is_null() && value["preload"].is_null());
        let p50 = value["latency_us"]["p50"].as_f64().unwrap();
        assert!((450.0..=450.0 * (1.0 + histogram::RELATIVE_ERROR_MAX)).contains(&p50), "{p50}");
        assert_eq!(value["hit_ratio"].as_f64(), Some(0.998889));
    }
}
