//! Output: the live line each second, the final summary for people, and one JSON object
//! for machines.
//!
//! JSON schema (all counts are of the measured phase; latencies in microseconds):
//! ```text
//! { "protocol": "memcache", "servers": ["127.0.0.1:11211"], "threads": 1,
//!   "connections_per_thread": 50, "pipeline": 1, "mode": "closed" | "open",
//!   "rate_target_per_sec": null | N, "keys_per_get": 1, "key_size": 20,
//!   "value_size": "20", "keyspace": 10000, "ratio_set_get": [1, 9], "seed": 1,
//!   "duration_secs": 5.0,
//!   "requests": N, "requests_per_sec": x, "gets": N, "sets": N, "get_keys": N,
//!   "keys_per_sec": x, "hits": N, "misses": N, "corrupt": N, "hit_ratio": x | null,
//!   "errors": { "server_error": N, "client_error": N, "error": N, "not_stored": N,
//!               "protocol": N, "connection": N },
//!   "errors_total": N, "errors_outside_measurement": N,
//!   "bytes_sent": N, "bytes_received": N, "bytes_sent_per_sec": x,
//!   "bytes_received_per_sec": x,
//!   "latency_us": { "p50": x, "p90": x, "p99": x, "p99_9": x, "p99_99": x, "max": x,
//!                   "mean": x },
//!   "unanswered": N, "open_loop_behind": N,
//!   "preload": null | { "keys": N, "secs": x, "errors_total": N } }
//! ```

use std::fmt::Write as _;

use crate::{
    client::ErrorKind,
    histogram,
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
    if summary.unmeasured.counts.errors_total() > 0 {
        let _ = writeln!(out, "errors (warm-up) {}", errors_text(&summary.unmeasured.counts));
    }
    if let Some(p) = &summary.preload {
        let _ = writeln!(
            out,
            "preload      {} keys in {:.2} s, errors {}",
            p.keys,
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

/// A tiny JSON object writer: keys in insertion order, numbers and strings only.
struct Json {
    out: String,
    first: bool,
}

impl Json {
    fn new() -> Json {
        Json { out: "{".into(), first: true }
    }

    fn key(&mut self, key: &str) {
        if !self.first {
            self.out.push_str(", ");
        }
        self.first = false;
        self.out.push_str(&string(key));
        self.out.push_str(": ");
    }

    fn raw(&mut self, key: &str, value: &str) -> &mut Self {
        self.key(key);
        self.out.push_str(value);
        self
    }

    fn u64(&mut self, key: &str, value: u64) -> &mut Self {
        self.raw(key, &value.to_string())
    }

    fn f64(&mut self, key: &str, value: f64) -> &mut Self {
        let text = if value.is_finite() { format!("{value:.3}") } else { "null".into() };
        self.raw(key, &text)
    }

    fn str(&mut self, key: &str, value: &str) -> &mut Self {
        self.raw(key, &string(value))
    }

    fn finish(mut self) -> String {
        self.out.push('}');
        self.out
    }
}

fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The summary as one JSON object (schema in the module docs).
pub fn json(summary: &Summary) -> String {
    let c = &summary.config;
    let counts = &summary.stats.counts;
    let secs = summary.elapsed.as_secs_f64();
    let mut j = Json::new();
    let servers: Vec<String> = c.servers.iter().map(|s| string(s)).collect();
    j.str("protocol", c.protocol.name()).raw("servers", &format!("[{}]", servers.join(", ")));
    j.u64("threads", c.threads as u64).u64("connections_per_thread", c.connections as u64);
    j.u64("pipeline", c.pipeline as u64);
    j.str("mode", if c.rate_per_sec.is_some() { "open" } else { "closed" });
    j.raw("rate_target_per_sec", &c.rate_per_sec.map_or("null".into(), |r| r.to_string()));
    j.u64("keys_per_get", c.workload.keys_per_get as u64)
        .u64("key_size", c.workload.key_size as u64);
    j.str("value_size", &value_size_text(&c.workload.value_sizes));
    j.u64("keyspace", c.workload.keyspace);
    j.raw("ratio_set_get", &format!("[{}, {}]", c.workload.ratio.sets, c.workload.ratio.gets));
    j.u64("seed", c.seed).f64("duration_secs", secs);
    j.u64("requests", counts.requests()).f64("requests_per_sec", per_sec(counts.requests(), secs));
    j.u64("gets", counts.gets).u64("sets", counts.sets).u64("get_keys", counts.get_keys);
    j.f64("keys_per_sec", per_sec(counts.get_keys, secs));
    j.u64("hits", counts.hits).u64("misses", counts.misses).u64("corrupt", counts.corrupt);
    j.raw("hit_ratio", &counts.hit_ratio().map_or("null".into(), |r| format!("{r:.6}")));
    let mut errors = Json::new();
    for kind in ErrorKind::ALL {
        errors.u64(kind.name(), counts.error(kind));
    }
    j.raw("errors", &errors.finish()).u64("errors_total", counts.errors_total());
    j.u64("errors_outside_measurement", summary.unmeasured.counts.errors_total());
    j.u64("bytes_sent", counts.bytes_sent).u64("bytes_received", counts.bytes_received);
    j.f64("bytes_sent_per_sec", per_sec(counts.bytes_sent, secs));
    j.f64("bytes_received_per_sec", per_sec(counts.bytes_received, secs));
    let h = &summary.stats.latency_ns;
    let mut latency = Json::new();
    for (q, name) in PERCENTILES {
        latency.f64(name, histogram::quantile(h, q) as f64 / 1e3);
    }
    latency.f64("max", h.max() as f64 / 1e3).f64("mean", h.mean() / 1e3);
    j.raw("latency_us", &latency.finish());
    j.u64("unanswered", summary.unanswered).u64("open_loop_behind", summary.behind);
    let preload = summary.preload.as_ref().map_or("null".into(), |p| {
        let mut o = Json::new();
        o.u64("keys", p.keys).f64("secs", p.elapsed.as_secs_f64());
        o.u64("errors_total", p.stats.counts.errors_total());
        o.finish()
    });
    j.raw("preload", &preload);
    j.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
        let mut j = Json::new();
        j.u64("a", 1).f64("b", f64::NAN).str("c", "x");
        assert_eq!(j.finish(), "{\"a\": 1, \"b\": null, \"c\": \"x\"}");
    }
}
