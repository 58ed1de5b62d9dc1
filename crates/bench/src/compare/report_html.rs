//! One self-contained HTML report: inline SVG charts drawn here, inline CSS, no scripts and
//! nothing fetched from anywhere.
//!
//! ```text
//!   rate      grouped bars per workload, one bar per server, whisker = min..max of runs
//!             (req/s, keys/s, req per server CPU-s, keys per server CPU-s)
//!   latency   grouped bars: p50, p99, p99.9 per workload and server
//!   sizes     lines over value size: req/s (left axis, solid), MB/s (right axis, dashed)
//!   threads   lines over server threads: req/s (left, solid), req/srv-CPU-s (right, dashed)
//! ```

use std::fmt::Write as _;

use super::{
    matrix::{Pattern, Row, Stat},
    report_md::{self, si},
};

const WIDTH: f64 = 920.0;
const HEIGHT: f64 = 330.0;
const LEFT: f64 = 76.0;
const RIGHT: f64 = 76.0;
const TOP: f64 = 46.0;
const BOTTOM: f64 = 86.0;
/// Distinct colours for up to 12 series (the latency chart has 3 percentiles x 3-4 servers).
const PALETTE: [&str; 12] = [
    "#d9480f", "#1971c2", "#2f9e44", "#ae3ec9", "#f59f00", "#495057", "#e64980", "#0c8599",
    "#74b816", "#5f3dc4", "#862e9c", "#a61e4d",
];

/// Picks one statistic of a row.
type RowStat = fn(&Row) -> Stat;

/// What the report is about (shown at the top).
pub struct Meta<'a> {
    pub title: &'a str,
    /// Preformatted lines: command, machine, method, skipped servers.
    pub notes: &'a [String],
    /// The limit server the per-workload table divides by.
    pub limit: Option<&'a str>,
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A round upper bound and step for an axis from 0 to `max`.
fn axis(max: f64) -> (f64, f64) {
    let max = if max.is_finite() && max > 0.0 { max } else { 1.0 };
    let raw = max / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude);
    ((max / step).ceil() * step, step)
}

fn color(series: usize) -> &'static str {
    PALETTE[series % PALETTE.len()]
}

fn open_svg(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<figure><svg class=\"chart\" role=\"img\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" \
         width=\"{WIDTH}\" height=\"{HEIGHT}\"><title>{t}</title>\
         <text x=\"{x}\" y=\"16\" class=\"title\">{t}</text>",
        t = escape(title),
        x = LEFT,
    );
}

fn y_axis(out: &mut String, top: f64, step: f64, label: &str, side_right: bool) {
    let plot_h = HEIGHT - TOP - BOTTOM;
    let x = if side_right { WIDTH - RIGHT } else { LEFT };
    let mut v = 0.0;
    while v <= top * 1.0001 {
        let y = HEIGHT - BOTTOM - plot_h * v / top;
        if !side_right {
            let _ = write!(
                out,
                "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" class=\"grid\"/>",
                WIDTH - RIGHT
            );
        }
        let (anchor, tx) = if side_right { ("start", x + 5.0) } else { ("end", x - 5.0) };
        let _ = write!(
            out,
            "<text x=\"{tx}\" y=\"{:.1}\" text-anchor=\"{anchor}\" class=\"tick\">{}</text>",
            y + 4.0,
            si(v)
        );
        v += step;
    }
    let lx = if side_right { WIDTH - 14.0 } else { 14.0 };
    let ly = TOP + plot_h / 2.0;
    let _ = write!(
        out,
        "<text x=\"{lx}\" y=\"{ly}\" transform=\"rotate(-90 {lx} {ly})\" \
         text-anchor=\"middle\" class=\"axis\">{}</text>",
        escape(label)
    );
}

fn legend(out: &mut String, items: &[(String, &str, bool)]) {
    // About 7 px per character at the 11 px tick font; a row that would run past the
    // right edge wraps (the latency chart has nine series).
    let (mut x, mut y) = (LEFT, 32.0);
    for (name, color, dashed) in items {
        let width = 28.0 + 7.0 * name.len() as f64;
        if x > LEFT && x + width > WIDTH - 8.0 {
            (x, y) = (LEFT, y + 12.0);
        }
        let dash = if *dashed { " stroke-dasharray=\"5 3\"" } else { "" };
        let _ = write!(
            out,
            "<line x1=\"{x}\" x2=\"{}\" y1=\"{y}\" y2=\"{y}\" stroke=\"{color}\" \
             stroke-width=\"6\"{dash}/><text x=\"{}\" y=\"{}\" class=\"tick\">{}</text>",
            x + 16.0,
            x + 20.0,
            y + 4.0,
            escape(name)
        );
        x += width;
    }
}

/// Grouped bars: `data[group][series]`, each bar the median with a min..max whisker.
pub fn bar_chart(
    title: &str,
    y_label: &str,
    groups: &[String],
    series: &[String],
    data: &[Vec<Option<Stat>>],
) -> String {
    let mut out = String::new();
    open_svg(&mut out, title);
    let max = data.iter().flatten().flatten().map(|s| s.max.max(s.median)).fold(0.0, f64::max);
    let (top, step) = axis(max);
    y_axis(&mut out, top, step, y_label, false);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let group_w = plot_w / groups.len().max(1) as f64;
    let bar_w = group_w * 0.8 / series.len().max(1) as f64;
    let y_of = |v: f64| HEIGHT - BOTTOM - plot_h * (v / top).clamp(0.0, 1.0);
    for (g, group) in groups.iter().enumerate() {
        let gx = LEFT + g as f64 * group_w + group_w * 0.1;
        for (s, name) in series.iter().enumerate() {
            let Some(Some(stat)) = data.get(g).and_then(|row| row.get(s)) else { continue };
            if !stat.median.is_finite() {
                continue;
            }
            let x = gx + s as f64 * bar_w;
            let y = y_of(stat.median);
            let _ = write!(
                out,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.1}\" \
                 fill=\"{}\"><title>{} {}: {} (min {}, max {})</title></rect>",
                (bar_w - 1.0).max(1.0),
                HEIGHT - BOTTOM - y,
                color(s),
                escape(group),
                escape(name),
                si(stat.median),
                si(stat.min),
                si(stat.max)
            );
            if stat.min.is_finite() && stat.max > stat.min {
                let cx = x + bar_w / 2.0;
                let _ = write!(
                    out,
                    "<line x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" \
                     class=\"whisker\"/>",
                    y_of(stat.min),
                    y_of(stat.max)
                );
            }
        }
        let lx = gx + group_w * 0.4;
        let ly = HEIGHT - BOTTOM + 12.0;
        let _ = write!(
            out,
            "<text x=\"{lx:.1}\" y=\"{ly}\" transform=\"rotate(25 {lx:.1} {ly})\" \
             class=\"tick\">{}</text>",
            escape(group)
        );
    }
    let items: Vec<(String, &str, bool)> =
        series.iter().enumerate().map(|(i, s)| (s.clone(), color(i), false)).collect();
    legend(&mut out, &items);
    out.push_str("</svg></figure>\n");
    out
}

/// One line of a line chart: a name, its color index and a value per x position.
pub struct Line {
    pub name: String,
    pub color: usize,
    pub values: Vec<f64>,
}

/// Lines over categorical x positions, on two y axes: `left` solid, `right` dashed.
pub fn dual_line_chart(
    title: &str,
    x_labels: &[String],
    left_label: &str,
    right_label: &str,
    left: &[Line],
    right: &[Line],
) -> String {
    let mut out = String::new();
    open_svg(&mut out, title);
    let max_of = |lines: &[Line]| {
        lines
            .iter()
            .flat_map(|l| l.values.iter())
            .copied()
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max)
    };
    let (ltop, lstep) = axis(max_of(left));
    let (rtop, rstep) = axis(max_of(right));
    y_axis(&mut out, ltop, lstep, left_label, false);
    y_axis(&mut out, rtop, rstep, right_label, true);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let n = x_labels.len().max(1) as f64;
    let x_of = |i: usize| LEFT + plot_w * (i as f64 + 0.5) / n;
    for (i, label) in x_labels.iter().enumerate() {
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\" class=\"tick\">{}</text>",
            x_of(i),
            HEIGHT - BOTTOM + 16.0,
            escape(label)
        );
    }
    let mut items = Vec::new();
    for (lines, top, dashed, axis_name) in
        [(left, ltop, false, left_label), (right, rtop, true, right_label)]
    {
        for line in lines {
            let points: Vec<(f64, f64, f64)> = line
                .values
                .iter()
                .enumerate()
                .filter(|(_, v)| v.is_finite())
                .map(|(i, v)| (x_of(i), HEIGHT - BOTTOM - plot_h * (v / top).clamp(0.0, 1.0), *v))
                .collect();
            let path: Vec<String> =
                points.iter().map(|(x, y, _)| format!("{x:.1},{y:.1}")).collect();
            let dash = if dashed { " stroke-dasharray=\"6 4\"" } else { "" };
            let c = color(line.color);
            let _ = write!(
                out,
                "<polyline points=\"{}\" fill=\"none\" stroke=\"{c}\" stroke-width=\"2.5\"{dash}/>",
                path.join(" ")
            );
            for (x, y, v) in &points {
                let _ = write!(
                    out,
                    "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.5\" fill=\"{c}\"><title>{} \
                     {}: {}</title></circle>",
                    escape(&line.name),
                    escape(axis_name),
                    si(*v)
                );
            }
            items.push((
                format!("{} {}", line.name, if dashed { "(right)" } else { "" }),
                c,
                dashed,
            ));
        }
    }
    let items: Vec<(String, &str, bool)> =
        items.into_iter().map(|(n, c, d)| (n.trim_end().to_string(), c, d)).collect();
    legend(&mut out, &items);
    out.push_str("</svg></figure>\n");
    out
}

/// Servers in order of first appearance.
fn servers_of(rows: &[Row]) -> Vec<String> {
    distinct_in_order(rows, |r| &r.server)
}

fn workloads_of(rows: &[Row]) -> Vec<String> {
    distinct_in_order(rows, |r| &r.workload)
}

fn distinct_in_order(rows: &[Row], field: impl Fn(&Row) -> &String) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for row in rows {
        if !seen.contains(field(row)) {
            seen.push(field(row).clone());
        }
    }
    seen
}

fn find<'a>(rows: &'a [Row], workload: &str, server: &str) -> Option<&'a Row> {
    rows.iter().find(|r| r.workload == workload && r.server == server)
}

fn per_workload(rows: &[Row], title: &str, label: &str, f: fn(&Row) -> Stat) -> String {
    let (groups, servers) = (workloads_of(rows), servers_of(rows));
    let data: Vec<Vec<Option<Stat>>> =
        groups.iter().map(|g| servers.iter().map(|s| find(rows, g, s).map(f)).collect()).collect();
    bar_chart(title, label, &groups, &servers, &data)
}

fn latency_chart(rows: &[Row]) -> String {
    let (groups, servers) = (workloads_of(rows), servers_of(rows));
    let mut series = Vec::new();
    for s in &servers {
        for p in ["p50", "p99", "p99.9"] {
            series.push(format!("{s} {p}"));
        }
    }
    let one = |x: f64| Some(Stat { median: x / 1e3, min: f64::NAN, max: f64::NAN });
    let data: Vec<Vec<Option<Stat>>> = groups
        .iter()
        .map(|g| {
            servers
                .iter()
                .flat_map(|s| match find(rows, g, s) {
                    Some(r) => {
                        [one(r.latency_us_p50), one(r.latency_us_p99), one(r.latency_us_p999)]
                    }
                    None => [None, None, None],
                })
                .collect()
        })
        .collect();
    bar_chart(
        "Latency percentiles (ms; closed loop, so mostly queueing)",
        "ms",
        &groups,
        &series,
        &data,
    )
}

fn size_sweep_chart(rows: &[Row]) -> Option<String> {
    let mut sizes: Vec<(usize, usize)> = rows
        .iter()
        .filter(|r| r.cell.pattern == Pattern::Get && r.cell.keys_per_get == 1)
        .map(|r| (r.cell.key_size, r.cell.value_size))
        .collect();
    sizes.sort_by_key(|s| s.1);
    sizes.dedup();
    if sizes.len() < 2 {
        return None;
    }
    let servers = servers_of(rows);
    let value_of = |s: &str, size: (usize, usize), f: fn(&Row) -> f64| {
        rows.iter()
            .find(|r| {
                r.server == s
                    && r.cell.pattern == Pattern::Get
                    && r.cell.keys_per_get == 1
                    && (r.cell.key_size, r.cell.value_size) == size
            })
            .map_or(f64::NAN, f)
    };
    let lines = |f: fn(&Row) -> f64| -> Vec<Line> {
        servers
            .iter()
            .enumerate()
            .map(|(i, s)| Line {
                name: s.clone(),
                color: i,
                values: sizes.iter().map(|&size| value_of(s, size, f)).collect(),
            })
            .collect()
    };
    let labels: Vec<String> =
        sizes.iter().map(|(k, v)| format!("{k} B key / {v} B value")).collect();
    Some(dual_line_chart(
        "Value-size sweep (single get): requests/s and MB/s",
        &labels,
        "requests/s",
        "MB/s (replies)",
        &lines(|r| r.req_per_sec.median),
        &lines(|r| r.mb_per_sec.median),
    ))
}

fn thread_sweep_chart(sweep: &[Row]) -> Option<String> {
    let mut threads: Vec<usize> = sweep.iter().map(|r| r.threads).collect();
    threads.sort_unstable();
    threads.dedup();
    if threads.is_empty() {
        return None;
    }
    let servers = servers_of(sweep);
    let lines = |f: fn(&Row) -> f64| -> Vec<Line> {
        servers
            .iter()
            .enumerate()
            .map(|(i, s)| Line {
                name: s.clone(),
                color: i,
                values: threads
                    .iter()
                    .map(|t| {
                        sweep.iter().find(|r| r.server == *s && r.threads == *t).map_or(f64::NAN, f)
                    })
                    .collect(),
            })
            .collect()
    };
    let labels: Vec<String> = threads.iter().map(|t| format!("-t {t}")).collect();
    Some(dual_line_chart(
        "Server threads (get 20/20): requests/s and requests per server CPU-second",
        &labels,
        "requests/s",
        "req per server CPU-s",
        &lines(|r| r.req_per_sec.median),
        &lines(|r| r.req_per_server_cpu_sec.median),
    ))
}

const STYLE: &str =
    "body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#212529;max-width:1000px}\
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ced4da;padding:2px 6px;\
text-align:right}td:nth-child(-n+2),th{text-align:left}figure{margin:18px 0}\
.chart{background:#fff;border:1px solid #dee2e6}.title{font-weight:600;font-size:14px}\
.tick{font-size:11px;fill:#495057}.axis{font-size:12px;fill:#212529}.grid{stroke:#e9ecef}\
.whisker{stroke:#212529;stroke-width:1.5}pre{background:#f8f9fa;padding:8px;overflow:auto}";

/// Markdown table → HTML table (our own tables: pipes never appear inside cells).
fn html_table(markdown: &str) -> String {
    let mut out = String::from("<table>\n");
    for (i, line) in markdown.lines().enumerate() {
        if i == 1 {
            continue;
        }
        let tag = if i == 0 { "th" } else { "td" };
        out.push_str("<tr>");
        for cell in line.trim().trim_matches('|').split('|') {
            let _ = write!(out, "<{tag}>{}</{tag}>", escape(cell.trim()));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// The whole report.
pub fn html(meta: &Meta<'_>, rows: &[Row], sweep: &[Row]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>{t}</title><style>{STYLE}</style></head><body>\n<h1>{t}</h1>\n",
        t = escape(meta.title)
    );
    out.push_str("<ul>\n");
    for note in meta.notes {
        let _ = writeln!(out, "<li>{}</li>", escape(note));
    }
    out.push_str("</ul>\n");
    out.push_str("<h2>Per server CPU-second, against the limit and memcached</h2>\n");
    out.push_str(&html_table(&report_md::per_server_markdown(rows, meta.limit)));
    out.push_str("<h2>Rate and efficiency per workload</h2>\n");
    let charts: [(&str, &str, RowStat); 4] = [
        ("Requests per second", "requests/s", |r| r.req_per_sec),
        ("Keys per second (multiget keys count one each)", "keys/s", |r| r.keys_per_sec),
        ("Requests per server CPU-second", "req / server CPU-s", |r| r.req_per_server_cpu_sec),
        ("Keys per server CPU-second", "keys / server CPU-s", |r| r.keys_per_server_cpu_sec),
    ];
    for (title, label, f) in charts {
        out.push_str(&per_workload(rows, title, label, f));
    }
    out.push_str("<h2>Latency</h2>\n");
    out.push_str(&latency_chart(rows));
    out.push_str("<h2>Value-size sweep</h2>\n");
    out.push_str(&size_sweep_chart(rows).unwrap_or_else(|| {
        "<p>Not measured: fewer than two single-get sizes in this run.</p>\n".into()
    }));
    out.push_str("<h2>Server threads</h2>\n");
    out.push_str(
        &thread_sweep_chart(sweep)
            .unwrap_or_else(|| "<p>Not measured: the thread sweep was off.</p>\n".into()),
    );
    out.push_str("<h2>Table</h2>\n");
    out.push_str(&html_table(&report_md::markdown(rows)));
    if !sweep.is_empty() {
        out.push_str(&html_table(&report_md::sweep_markdown(sweep)));
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{
        matrix::{full_matrix, Row, Sample},
        report_md::tests::rows,
    };

    #[test]
    fn axis_is_round() {
        assert_eq!(axis(9.3), (10.0, 2.0));
        assert_eq!(axis(123_000.0), (125_000.0, 25_000.0));
        assert_eq!(axis(0.0), (1.0, 0.2));
    }

    /// Goal: the report holds every chart as inline SVG and references nothing outside
    /// itself. Method: build it from synthetic rows covering the size and thread sweeps,
    /// then look for the charts' titles and for anything external.
    #[test]
    fn html_is_self_contained_with_charts() {
        let mut matrix = rows();
        let sample = |requests| Sample {
            secs: 1.0,
            requests,
            keys: requests,
            server_cpu_secs: 1.0,
            bytes_received: requests * 100,
            ..Sample::default()
        };
        for cell in full_matrix().into_iter().take(4) {
            for (i, server) in ["spinel", "memcached", "redis"].iter().enumerate() {
                matrix.push(Row::new(cell, server, 1, &[sample(100_000 + 1000 * i as u64)]));
            }
        }
        let sweep: Vec<Row> = (1..=2)
            .flat_map(|t| {
                ["spinel", "memcached"]
                    .map(|s| Row::new(full_matrix()[0], s, t, &[sample(50_000 * t as u64)]))
            })
            .collect();
        let notes = ["command: spinel-bench compare <quick> & \"x\"".to_string()];
        let page =
            html(&Meta { title: "Spinel vs peers", notes: &notes, limit: None }, &matrix, &sweep);
        assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"));
        assert_eq!(page.matches("<svg").count(), 7, "4 rate charts, latency, sizes, threads");
        for title in [
            "Requests per server CPU-second",
            "Latency percentiles",
            "Value-size sweep",
            "Server threads",
        ] {
            assert!(page.contains(title), "{title}");
        }
        assert!(page.contains("MB/s") && page.contains("stroke-dasharray"), "second axis");
        assert!(page.contains("&lt;quick&gt; &amp; &quot;x&quot;"), "notes are escaped");
        for external in ["http://", "https://", "<script", "<link", "src=", "url(", "@import"] {
            assert!(!page.contains(external), "self-contained: found {external}");
        }
        assert!(page.contains(">memcached</text>") && page.contains(">redis</text>"));
        assert!(page.contains("<td>÷ memcached</td>"), "the per-workload table's ratio row");
    }
}
