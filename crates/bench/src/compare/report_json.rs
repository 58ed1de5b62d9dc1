//! compare.json: everything a comparison measured, for machines. Rows and sweep points
//! carry their medians, each repetition's numbers and the latency histograms (hdrhistogram
//! V2, base64), so the results of two comparisons can be merged with
//! [`crate::histogram::merge_base64`]. Unmeasurable numbers (NaN) are written as null.
//!
//! ```text
//! { "command": "...", "notes": ["..."], "elapsed_secs": x,
//!   "rows": [Row], "sweep": [Row],            Row: see matrix::Row (field names as in Rust)
//!   "skipped": [{ "server": "redis", "why": "..." }], "failures": ["..."] }
//! ```

use serde::Serialize;

use super::{matrix::Row, Outcome};

#[derive(Serialize)]
struct Skipped<'a> {
    server: &'a str,
    why: &'a str,
}

#[derive(Serialize)]
struct CompareJson<'a> {
    command: &'a str,
    notes: &'a [String],
    elapsed_secs: f64,
    rows: &'a [Row],
    sweep: &'a [Row],
    skipped: Vec<Skipped<'a>>,
    failures: &'a [String],
}

/// compare.json's text.
pub fn json(command: &str, notes: &[String], outcome: &Outcome) -> String {
    let report = CompareJson {
        command,
        notes,
        elapsed_secs: outcome.elapsed.as_secs_f64(),
        rows: &outcome.rows,
        sweep: &outcome.sweep,
        skipped: outcome.skipped.iter().map(|(server, why)| Skipped { server, why }).collect(),
        failures: &outcome.failures,
    };
    serde_json::to_string_pretty(&report).expect("the comparison serializes to JSON")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{
        compare::matrix::{sweep_cell, Sample},
        histogram,
    };

    /// A run with `requests` latencies of 1..=requests µs.
    fn sample(requests: u64) -> Sample {
        let mut latency_ns = histogram::latency_ns();
        (1..=requests).for_each(|us| latency_ns.saturating_record(us * 1000));
        Sample {
            secs: 1.0,
            requests,
            latency_histogram: histogram::to_base64(&latency_ns),
            ..Sample::default()
        }
    }

    fn outcome(rows: Vec<Row>) -> Outcome {
        Outcome {
            rows,
            sweep: Vec::new(),
            skipped: vec![("redis".into(), "not installed".into())],
            failures: Vec::new(),
            markdown: String::new(),
            files: Vec::new(),
            elapsed: Duration::from_secs(3),
        }
    }

    /// Goal: compare.json parses, keeps the rows' numbers (NaN as null), and the histograms
    /// of two comparisons' JSON merge into one whose count is the sum. Method: two made-up
    /// outcomes through `json`, read back with serde_json, merged from the text.
    #[test]
    fn two_runs_merge_from_the_json() {
        let first = outcome(vec![Row::new(sweep_cell(), "spinel", 1, &[sample(300), sample(200)])]);
        let second = outcome(vec![Row::new(sweep_cell(), "spinel", 1, &[sample(700)])]);
        let histograms: Vec<String> = [&first, &second]
            .iter()
            .map(|o| {
                let value: serde_json::Value =
                    serde_json::from_str(&json("test", &["a note".into()], o)).unwrap();
                assert_eq!(value["skipped"][0]["server"], "redis");
                assert_eq!(value["rows"][0]["cell"]["pattern"], "get");
                assert!(value["rows"][0]["req_per_server_cpu_sec"]["median"].is_null());
                value["rows"][0]["latency_histogram"].as_str().unwrap().to_string()
            })
            .collect();
        let merged = histogram::merge_base64(histograms.iter().map(String::as_str)).unwrap();
        assert_eq!(merged.len(), 300 + 200 + 700);
        let max_ns = histogram::quantile(&merged, 1.0) as f64;
        assert!((700_000.0..=700_000.0 * (1.0 + histogram::RELATIVE_ERROR_MAX)).contains(&max_ns));
    }
}
