//! The comparison as tables: markdown (for people and the terminal) and CSV (one row per
//! workload × server, raw numbers).

use std::fmt::Write as _;

use super::matrix::Row;

/// `1234567` → `1.23M`, `12345` → `12.3k`; `-` for NaN.
pub fn si(x: f64) -> String {
    if !x.is_finite() {
        return "-".into();
    }
    let a = x.abs();
    if a >= 1e9 {
        format!("{:.2}G", x / 1e9)
    } else if a >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if a >= 1e4 {
        format!("{:.1}k", x / 1e3)
    } else if a >= 1e3 {
        format!("{:.2}k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

fn ms(us: f64) -> String {
    if us.is_finite() {
        format!("{:.3}", us / 1e3)
    } else {
        "-".into()
    }
}

fn pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:.1}%", 100.0 * x)
    } else {
        "-".into()
    }
}

/// A CPU busy fraction (1.00 = one core all the run).
fn busy(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}")
    } else {
        "-".into()
    }
}

fn hit(x: f64) -> String {
    if x.is_finite() {
        format!("{:.3}", x)
    } else {
        "-".into()
    }
}

/// The main table: one line per workload × server.
pub fn markdown(rows: &[Row]) -> String {
    let mut out = String::new();
    out.push_str(
        "| workload | server | req/s | keys/s | req/srv-CPU-s | keys/srv-CPU-s | srv busy | \
         req/client-CPU-s | p50 ms | p99 ms | p99.9 ms | hit | spread req/s, eff | noisy | \
         errors |\n",
    );
    out.push_str("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for r in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {}, {} | {}/{} | {} |",
            r.workload,
            r.server,
            si(r.req_per_sec.median),
            si(r.keys_per_sec.median),
            si(r.req_per_server_cpu_sec.median),
            si(r.keys_per_server_cpu_sec.median),
            busy(r.server_utilization),
            si(r.req_per_client_cpu_sec),
            ms(r.latency_us_p50),
            ms(r.latency_us_p99),
            ms(r.latency_us_p999),
            hit(r.hit_ratio),
            pct(r.spread_req),
            pct(r.spread_eff),
            r.noisy_runs,
            r.runs,
            r.errors,
        );
    }
    out
}

/// Servers (target labels) in order of first appearance.
fn servers_in(rows: &[Row]) -> Vec<&str> {
    let mut servers: Vec<&str> = Vec::new();
    for r in rows {
        if !servers.contains(&r.server.as_str()) {
            servers.push(&r.server);
        }
    }
    servers
}

/// Requests per server CPU-second, or keys for multigets (what a multiget is for).
fn efficiency(r: &Row) -> f64 {
    if r.cell.keys_per_get > 1 {
        r.keys_per_server_cpu_sec.median
    } else {
        r.req_per_server_cpu_sec.median
    }
}

fn ratio(a: f64, b: f64) -> String {
    if a.is_finite() && b.is_finite() && b > 0.0 {
        format!("{:.2}", a / b)
    } else {
        "-".into()
    }
}

/// One line of the per-workload table: `| workload | measure | one cell per server |`.
fn line(out: &mut String, workload: &str, measure: &str, cells: impl Iterator<Item = String>) {
    let cells: Vec<String> = cells.collect();
    let _ = writeln!(out, "| {workload} | {measure} | {} |", cells.join(" | "));
}

/// The per-workload table: a column per server; for each workload its requests (keys, for
/// multigets) per server CPU-second, that divided by the `limit` server's and by
/// memcached's, and for open-loop workloads the achieved rate, server CPU per request and
/// latency from the intended send time.
pub fn per_server_markdown(rows: &[Row], limit: Option<&str>) -> String {
    let servers = servers_in(rows);
    let mut workloads: Vec<&Row> = Vec::new();
    for r in rows {
        if !workloads.iter().any(|w| w.workload == r.workload) {
            workloads.push(r);
        }
    }
    let mut out = format!("| workload | measure | {} |\n", servers.join(" | "));
    out.push_str(&format!("|---|---|{}\n", "--:|".repeat(servers.len())));
    let mut divisors: Vec<&str> = limit.into_iter().collect();
    if servers.contains(&"memcached") && limit != Some("memcached") {
        divisors.push("memcached");
    }
    for w in workloads {
        let of =
            |server: &str| rows.iter().find(|r| r.workload == w.workload && r.server == server);
        let eff = |server: &str| of(server).map_or(f64::NAN, efficiency);
        let unit = if w.cell.keys_per_get > 1 { "keys/srv-CPU-s" } else { "req/srv-CPU-s" };
        line(&mut out, &w.workload, unit, servers.iter().map(|s| si(eff(s))));
        for d in &divisors {
            let measure = format!("÷ {d}");
            line(&mut out, "", &measure, servers.iter().map(|s| ratio(eff(s), eff(d))));
        }
        // Whether each server was saturated: a divisor that idled part of the run (the
        // load could not keep it busy) makes every ratio to it too high.
        let util = |s: &&str| of(s).map_or("-".into(), |r| busy(r.server_utilization));
        line(&mut out, "", "srv busy", servers.iter().map(util));
        if w.cell.open_loop() {
            let field =
                |f: fn(&Row) -> String| servers.iter().map(move |s| of(s).map_or("-".into(), f));
            line(&mut out, "", "req/s", field(|r| si(r.req_per_sec.median)));
            let cpu_us = |r: &Row| format!("{:.2}", 1e6 / r.req_per_server_cpu_sec.median);
            line(&mut out, "", "srv-CPU µs/req", field(cpu_us));
            let lat = |r: &Row| {
                format!(
                    "{}/{}/{}",
                    ms(r.latency_us_p50),
                    ms(r.latency_us_p99),
                    ms(r.latency_us_p999)
                )
            };
            line(&mut out, "", "p50/p99/p99.9 ms", field(lat));
        }
    }
    out
}

/// The server-threads sweep: one line per server × thread count.
pub fn sweep_markdown(rows: &[Row]) -> String {
    let mut out = String::new();
    out.push_str(
        "| workload | server | threads | req/s | req/srv-CPU-s | server CPU | p99 ms | spread \
         req/s | noisy |\n",
    );
    out.push_str("|---|---|--:|--:|--:|--:|--:|--:|--:|\n");
    for r in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:.2} | {} | {} | {}/{} |",
            r.cell.name(),
            r.server,
            r.threads,
            si(r.req_per_sec.median),
            si(r.req_per_server_cpu_sec.median),
            r.server_utilization,
            ms(r.latency_us_p99),
            pct(r.spread_req),
            r.noisy_runs,
            r.runs,
        );
    }
    out
}

/// The CSV header; [`csv`] writes the columns in this order.
pub const CSV_HEADER: &str = "table,workload,pattern,keys_per_get,key_size,value_size,server,\
server_threads,runs,req_per_sec,keys_per_sec,req_per_server_cpu_sec,keys_per_server_cpu_sec,\
req_per_client_cpu_sec,mb_per_sec,server_cpu_util,latency_ms_p50,latency_ms_p99,\
latency_ms_p999,hit_ratio,spread_req_per_sec,spread_req_per_server_cpu_sec,noisy_runs,errors,\
pipeline,connections,offered_req_per_sec";

fn num(x: f64, decimals: usize) -> String {
    if x.is_finite() {
        format!("{x:.decimals$}")
    } else {
        String::new()
    }
}

/// Matrix rows (`table` = matrix) then sweep rows (`table` = threads); medians throughout.
pub fn csv(rows: &[Row], sweep: &[Row]) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    let tables = [("matrix", rows), ("threads", sweep)];
    for (table, rows) in tables {
        for r in rows {
            let c = &r.cell;
            let fields = [
                table.to_string(),
                c.name(),
                c.pattern.name().to_string(),
                c.keys_per_get.to_string(),
                c.key_size.to_string(),
                c.value_size.to_string(),
                r.server.clone(),
                r.threads.to_string(),
                r.runs.to_string(),
                num(r.req_per_sec.median, 0),
                num(r.keys_per_sec.median, 0),
                num(r.req_per_server_cpu_sec.median, 0),
                num(r.keys_per_server_cpu_sec.median, 0),
                num(r.req_per_client_cpu_sec, 0),
                num(r.mb_per_sec.median, 3),
                num(r.server_utilization, 3),
                num(r.latency_us_p50 / 1e3, 4),
                num(r.latency_us_p99 / 1e3, 4),
                num(r.latency_us_p999 / 1e3, 4),
                num(r.hit_ratio, 4),
                num(r.spread_req, 4),
                num(r.spread_eff, 4),
                r.noisy_runs.to_string(),
                r.errors.to_string(),
                c.pipeline.to_string(),
                c.connections.to_string(),
                c.rate_per_sec.to_string(),
            ];
            out.push_str(&fields.join(","));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::compare::matrix::{full_matrix, Sample};

    pub(crate) fn rows() -> Vec<Row> {
        let sample = |requests, cpu| Sample {
            secs: 1.0,
            requests,
            keys: requests * 48,
            hits: 99,
            misses: 1,
            server_cpu_secs: cpu,
            latency_us_p50: 250.0,
            latency_us_p99: 1000.0,
            latency_us_p999: 2500.0,
            bytes_received: 2_000_000,
            ..Sample::default()
        };
        let cell = full_matrix()[4];
        vec![
            Row::new(cell, "spinel", 1, &[sample(150_000, 1.0), sample(160_000, 1.0)]),
            Row::new(cell, "memcached", 1, &[sample(120_000, 0.5)]),
        ]
    }

    /// Goal: the markdown table has a header, one line per row, SI-formatted rates,
    /// milliseconds and the spread.
    #[test]
    fn markdown_table() {
        let text = markdown(&rows());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[0].starts_with("| workload | server | req/s"));
        assert_eq!(
            lines[2],
            "| get mget48 20/20 | spinel | 155.0k | 7.44M | 155.0k | 7.44M | 1.00 | - | 0.250 | \
             1.000 | 2.500 | 0.990 | 6.5%, 6.5% | 0/2 | 0 |"
        );
        assert!(lines[3].contains("| memcached | 120.0k |") && lines[3].contains("240.0k"));
        assert!(sweep_markdown(&rows()).lines().nth(2).unwrap().contains("| spinel | 1 |"));
        assert_eq!(
            (si(999.0), si(1500.0), si(2.5e9), si(f64::NAN)),
            ("999".into(), "1.50k".into(), "2.50G".into(), "-".into())
        );
    }

    /// Goal: the per-workload table has a column per server, the efficiency row and one
    /// ratio row per divisor (the limit server, memcached), and the open-loop rows.
    #[test]
    fn per_server_table() {
        let mut rows = rows();
        let mut limit = rows[1].clone();
        limit.server = "nullmc".into();
        limit.keys_per_server_cpu_sec.median *= 2.0;
        rows.push(limit);
        let text = per_server_markdown(&rows, Some("nullmc"));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "| workload | measure | spinel | memcached | nullmc |");
        assert_eq!(lines[2], "| get mget48 20/20 | keys/srv-CPU-s | 7.44M | 11.52M | 23.04M |");
        assert_eq!(lines[3], "|  | ÷ nullmc | 0.32 | 0.50 | 1.00 |");
        assert_eq!(lines[4], "|  | ÷ memcached | 0.65 | 1.00 | 2.00 |");
        assert_eq!(lines[5], "|  | srv busy | 1.00 | 0.50 | 0.50 |");
        assert_eq!(lines.len(), 6);
        let mut open = rows[0].clone();
        open.cell.rate_per_sec = 40_000;
        open.cell.keys_per_get = 1;
        open.workload = open.cell.name();
        let text = per_server_markdown(&[open], None);
        assert!(text.contains("| get 20/20 @40.0k/s | req/srv-CPU-s | 155.0k |"), "{text}");
        assert!(text.contains("| srv-CPU µs/req | 6.45 |"), "{text}");
        assert!(text.contains("| p50/p99/p99.9 ms | 0.250/1.000/2.500 |"), "{text}");
    }

    /// Goal: the CSV has one header and one line per row, every line with the header's
    /// column count, and raw (unformatted) numbers.
    #[test]
    fn csv_rows() {
        let text = csv(&rows(), &rows()[..1]);
        let columns = CSV_HEADER.split(',').count();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines.iter().all(|l| l.split(',').count() == columns), "{text}");
        assert!(lines[1].starts_with("matrix,get mget48 20/20,get,48,20,20,spinel,1,2,155000,"));
        assert!(lines[3].starts_with("threads,"));
        assert!(lines[1].ends_with(",0,0,1,50,0"), "pipeline, connections, closed loop");
        assert!(lines[2].contains(",0.0000,,0,0") || lines[2].contains(",0.0000,0.0000,0,0"));
    }
}
