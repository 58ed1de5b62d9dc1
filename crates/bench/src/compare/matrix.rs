//! The workloads of a comparison (the studies' matrix), one measured run of one workload on
//! one server ([`Sample`]), and the statistics over repetitions ([`Row`]: medians with their
//! spread).

use serde::Serialize;

use crate::{histogram, workload::Ratio};

/// Get/set mix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Pattern {
    /// 100 % gets.
    #[serde(rename = "get")]
    Get,
    /// 9 gets : 1 set (in requests).
    #[serde(rename = "9:1")]
    Mix91,
    /// As many sets as gets: a stream's producer and consumer keeping pace.
    #[serde(rename = "1:1")]
    Mix11,
    /// 100 % sets (XADD or GEOADD throughput on its own).
    #[serde(rename = "set")]
    Set,
}

impl Pattern {
    pub fn ratio(self) -> Ratio {
        match self {
            Pattern::Get => Ratio { sets: 0, gets: 1 },
            Pattern::Mix91 => Ratio { sets: 1, gets: 9 },
            Pattern::Mix11 => Ratio { sets: 1, gets: 1 },
            Pattern::Set => Ratio { sets: 1, gets: 0 },
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Pattern::Get => "get",
            Pattern::Mix91 => "9:1",
            Pattern::Mix11 => "1:1",
            Pattern::Set => "set",
        }
    }

    /// `get`, `9:1`, `1:1` or `set`.
    pub fn parse(text: &str) -> Result<Pattern, String> {
        [Pattern::Get, Pattern::Mix91, Pattern::Mix11, Pattern::Set]
            .into_iter()
            .find(|p| p.name() == text.trim())
            .ok_or(format!("unknown mix {text:?}: want get, 9:1, 1:1 or set"))
    }
}

/// Connections per run unless `-c` / `--connections-list` say otherwise.
pub const DEFAULT_CONNECTIONS: usize = 50;

/// One workload of the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Cell {
    pub pattern: Pattern,
    /// 1 = single get; above 1 = a multiget of that many keys.
    pub keys_per_get: usize,
    pub key_size: usize,
    pub value_size: usize,
    /// Requests in flight per connection (closed loop); the cap on them in open loop.
    pub pipeline: usize,
    /// Connections, over all load threads.
    pub connections: usize,
    /// Open loop at this many requests per second; 0 = closed loop.
    pub rate_per_sec: u64,
}

impl Cell {
    /// A closed-loop cell with pipeline 1 and the default connection count.
    pub fn new(pattern: Pattern, keys_per_get: usize, key_size: usize, value_size: usize) -> Cell {
        Cell {
            pattern,
            keys_per_get,
            key_size,
            value_size,
            pipeline: 1,
            connections: DEFAULT_CONNECTIONS,
            rate_per_sec: 0,
        }
    }

    /// `get 20/20`, `9:1 mget48 64/1024`, `get 20/20 p32 c1000 @40k/s` (pipeline, then
    /// connections and rate where they are not the defaults).
    pub fn name(&self) -> String {
        let mget = if self.keys_per_get > 1 {
            format!(" mget{}", self.keys_per_get)
        } else {
            String::new()
        };
        let mut name =
            format!("{}{mget} {}/{}", self.pattern.name(), self.key_size, self.value_size);
        if self.pipeline > 1 {
            name.push_str(&format!(" p{}", self.pipeline));
        }
        if self.connections != DEFAULT_CONNECTIONS {
            name.push_str(&format!(" c{}", self.connections));
        }
        if self.rate_per_sec > 0 {
            name.push_str(&format!(" @{}/s", super::report_md::si(self.rate_per_sec as f64)));
        }
        name
    }

    /// Open loop (a fixed offered rate)?
    pub fn open_loop(&self) -> bool {
        self.rate_per_sec > 0
    }
}

/// Each of `cells` at every pipeline depth, connection count and rate (0 = closed loop)
/// given; an empty list keeps what the cells have.
pub fn expand(
    cells: &[Cell],
    pipelines: &[usize],
    connections: &[usize],
    rates: &[u64],
) -> Vec<Cell> {
    let or_keep =
        |list: &[usize], keep: usize| if list.is_empty() { vec![keep] } else { list.to_vec() };
    let mut out = Vec::new();
    for cell in cells {
        for pipeline in or_keep(pipelines, cell.pipeline) {
            for conns in or_keep(connections, cell.connections) {
                let rates = if rates.is_empty() { vec![cell.rate_per_sec] } else { rates.to_vec() };
                for rate_per_sec in rates {
                    out.push(Cell { pipeline, connections: conns, rate_per_sec, ..*cell });
                }
            }
        }
    }
    out
}

/// The product of get/set mixes, keys per get and key/value sizes.
pub fn product(
    patterns: &[Pattern],
    keys_per_get: &[usize],
    sizes: &[(usize, usize)],
) -> Vec<Cell> {
    let mut cells = Vec::new();
    for &pattern in patterns {
        for &keys in keys_per_get {
            for &(key_size, value_size) in sizes {
                cells.push(Cell::new(pattern, keys, key_size, value_size));
            }
        }
    }
    cells
}

/// Key/value sizes of the matrix, in bytes.
pub const SIZES: [(usize, usize); 4] = [(20, 20), (32, 128), (64, 1024), (64, 10000)];
/// Keys per multiget.
pub const MULTIGET_KEYS: usize = 48;

/// The full matrix: {get, 9:1} × {single, 48-key multiget} × the four sizes (16 cells).
pub fn full_matrix() -> Vec<Cell> {
    product(&[Pattern::Get, Pattern::Mix91], &[1, MULTIGET_KEYS], &SIZES)
}

/// The `--quick` matrix (7 cells): single gets at all four sizes (the value-size sweep),
/// 48-key multigets at 20/20, and the 9:1 mix at 20/20, single and multiget. It drops the
/// 9:1 mix at the three larger sizes and multigets at the three larger sizes.
pub fn quick_matrix() -> Vec<Cell> {
    let mut cells: Vec<Cell> = SIZES
        .iter()
        .map(|&(key_size, value_size)| Cell::new(Pattern::Get, 1, key_size, value_size))
        .collect();
    let small = |pattern, keys_per_get| Cell::new(pattern, keys_per_get, 20, 20);
    cells.push(small(Pattern::Get, MULTIGET_KEYS));
    cells.push(small(Pattern::Mix91, 1));
    cells.push(small(Pattern::Mix91, MULTIGET_KEYS));
    cells
}

/// The workload of the server-threads sweep.
pub fn sweep_cell() -> Cell {
    Cell::new(Pattern::Get, 1, 20, 20)
}

/// One measured run of one workload against one server.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Sample {
    pub secs: f64,
    pub requests: u64,
    /// Keys asked for by gets plus keys set.
    pub keys: u64,
    pub hits: u64,
    pub misses: u64,
    pub errors: u64,
    pub corrupt: u64,
    pub bytes_received: u64,
    pub latency_us_p50: f64,
    pub latency_us_p99: f64,
    pub latency_us_p999: f64,
    pub server_cpu_secs: f64,
    /// With several instances (`--instances`), each one's part of `server_cpu_secs`, in
    /// start order; empty with one.
    pub instance_cpu_secs: Vec<f64>,
    pub client_cpu_secs: f64,
    pub foreign_pct: f64,
    pub noisy: bool,
    /// The run's latency histogram (ns): hdrhistogram V2, base64 (see [`histogram`]);
    /// empty when none was kept.
    pub latency_histogram: String,
}

impl Sample {
    pub fn req_per_sec(&self) -> f64 {
        ratio(self.requests as f64, self.secs)
    }
    pub fn keys_per_sec(&self) -> f64 {
        ratio(self.keys as f64, self.secs)
    }
    pub fn req_per_server_cpu_sec(&self) -> f64 {
        ratio(self.requests as f64, self.server_cpu_secs)
    }
    pub fn keys_per_server_cpu_sec(&self) -> f64 {
        ratio(self.keys as f64, self.server_cpu_secs)
    }
    pub fn req_per_client_cpu_sec(&self) -> f64 {
        ratio(self.requests as f64, self.client_cpu_secs)
    }
    /// Megabytes per second from the server (replies: the values, for gets).
    pub fn mb_per_sec(&self) -> f64 {
        ratio(self.bytes_received as f64 / 1e6, self.secs)
    }
    /// Server CPU over wall time (1.0 = one core busy).
    pub fn server_utilization(&self) -> f64 {
        ratio(self.server_cpu_secs, self.secs)
    }
    /// The load generator's CPU over wall time: near 1.0 per client CPU, it may be what
    /// limits the run (the server's `server_utilization` then stays below 1.0).
    pub fn client_utilization(&self) -> f64 {
        ratio(self.client_cpu_secs, self.secs)
    }
    pub fn hit_ratio(&self) -> f64 {
        ratio(self.hits as f64, (self.hits + self.misses) as f64)
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        f64::NAN
    }
}

/// The median of the finite values (the mean of the middle two for an even count); NaN
/// when there are none.
pub fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

/// (max - min) / median of the finite values; 0 for one value, NaN for none.
pub fn spread(values: &[f64]) -> f64 {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    let m = median(&v);
    if v.is_empty() || m == 0.0 {
        return f64::NAN;
    }
    let max = v.iter().copied().fold(f64::MIN, f64::max);
    let min = v.iter().copied().fold(f64::MAX, f64::min);
    (max - min) / m
}

/// A median with the range it came from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stat {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Stat {
    pub fn of(values: &[f64]) -> Stat {
        let finite = values.iter().copied().filter(|x| x.is_finite());
        let (min, max) = finite.fold((f64::NAN, f64::NAN), |(lo, hi), x| (x.min(lo), x.max(hi)));
        Stat { median: median(values), min, max }
    }
}

/// Everything reported for one workload on one server, over the repetitions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// Workload name (`get 20/20`) or sweep point (`get 20/20, -t 2`).
    pub workload: String,
    pub cell: Cell,
    /// Target label: `spinel`, `memcached`, `redis`, `spinel-resp`.
    pub server: String,
    /// Server worker threads.
    pub threads: usize,
    pub runs: usize,
    pub noisy_runs: usize,
    pub errors: u64,
    pub req_per_sec: Stat,
    pub keys_per_sec: Stat,
    pub req_per_server_cpu_sec: Stat,
    pub keys_per_server_cpu_sec: Stat,
    pub req_per_client_cpu_sec: f64,
    pub mb_per_sec: Stat,
    pub server_utilization: f64,
    pub latency_us_p50: f64,
    pub latency_us_p99: f64,
    pub latency_us_p999: f64,
    pub hit_ratio: f64,
    /// (max - min) / median of requests/s.
    pub spread_req: f64,
    /// (max - min) / median of requests per server CPU-second.
    pub spread_eff: f64,
    /// All repetitions' latencies in one histogram (ns), as in [`Sample`]; merge rows of
    /// several comparisons with [`histogram::merge_base64`].
    pub latency_histogram: String,
    /// The repetitions themselves.
    pub samples: Vec<Sample>,
}

impl Row {
    pub fn new(cell: Cell, server: &str, threads: usize, samples: &[Sample]) -> Row {
        let of = |f: fn(&Sample) -> f64| samples.iter().map(f).collect::<Vec<f64>>();
        let rate = of(Sample::req_per_sec);
        let eff = of(Sample::req_per_server_cpu_sec);
        Row {
            workload: cell.name(),
            cell,
            server: server.to_string(),
            threads,
            runs: samples.len(),
            noisy_runs: samples.iter().filter(|s| s.noisy).count(),
            errors: samples.iter().map(|s| s.errors + s.corrupt).sum(),
            req_per_sec: Stat::of(&rate),
            keys_per_sec: Stat::of(&of(Sample::keys_per_sec)),
            req_per_server_cpu_sec: Stat::of(&eff),
            keys_per_server_cpu_sec: Stat::of(&of(Sample::keys_per_server_cpu_sec)),
            req_per_client_cpu_sec: median(&of(Sample::req_per_client_cpu_sec)),
            mb_per_sec: Stat::of(&of(Sample::mb_per_sec)),
            server_utilization: median(&of(Sample::server_utilization)),
            latency_us_p50: median(&of(|s| s.latency_us_p50)),
            latency_us_p99: median(&of(|s| s.latency_us_p99)),
            latency_us_p999: median(&of(|s| s.latency_us_p999)),
            hit_ratio: median(&of(Sample::hit_ratio)),
            spread_req: spread(&rate),
            spread_eff: spread(&eff),
            latency_histogram: merged_histogram(samples),
            samples: samples.to_vec(),
        }
    }
}

/// The samples' histograms merged, in the same text form; empty when none has one.
fn merged_histogram(samples: &[Sample]) -> String {
    let texts = samples.iter().map(|s| s.latency_histogram.as_str()).filter(|t| !t.is_empty());
    match histogram::merge_base64(texts) {
        Ok(merged) if !merged.is_empty() => histogram::to_base64(&merged),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: median and spread follow their definitions, ignore NaN (a run without CPU
    /// time) and handle the odd, even, single and empty cases.
    #[test]
    fn median_and_spread() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[7.0]), 7.0);
        assert!(median(&[]).is_nan());
        assert_eq!(median(&[f64::NAN, 5.0, 1.0]), 3.0);
        assert_eq!(spread(&[90.0, 100.0, 110.0]), 0.2);
        assert_eq!(spread(&[5.0]), 0.0);
        assert!(spread(&[]).is_nan());
        let s = Stat::of(&[3.0, f64::NAN, 1.0, 2.0]);
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
    }

    #[test]
    fn matrices() {
        let full = full_matrix();
        assert_eq!(full.len(), 16);
        assert!(full.iter().any(|c| c.pattern == Pattern::Mix91 && c.keys_per_get == 48));
        let quick = quick_matrix();
        assert_eq!(quick.len(), 7);
        assert!(quick.iter().all(|c| full.contains(c)));
        assert_eq!(full[4].name(), "get mget48 20/20");
        assert_eq!(full[15].name(), "9:1 mget48 64/10000");
        let grown = expand(&quick[..2], &[1, 32], &[50, 1000], &[0, 40_000]);
        assert_eq!(grown.len(), 2 * 2 * 2 * 2);
        assert_eq!(grown[0], quick[0]);
        assert_eq!(grown[7].name(), "get 20/20 p32 c1000 @40.0k/s");
        assert!(grown[7].open_loop() && !grown[6].open_loop());
        assert_eq!(expand(&quick, &[], &[], &[]), quick, "empty lists keep the cells");
        let cells = product(&[Pattern::Get], &[1, 100], &[(20, 20), (20, 4096)]);
        assert_eq!(cells[3].name(), "get mget100 20/4096");
    }

    /// Goal: a row takes medians of the per-run rates and counts noisy runs.
    #[test]
    fn row_from_samples() {
        let sample = |requests: u64, cpu: f64, noisy| Sample {
            secs: 2.0,
            requests,
            keys: requests * 2,
            hits: 9,
            misses: 1,
            server_cpu_secs: cpu,
            noisy,
            ..Sample::default()
        };
        let samples = [sample(200, 1.0, false), sample(180, 1.0, true), sample(220, 0.0, false)];
        let row = Row::new(sweep_cell(), "spinel", 1, &samples);
        assert_eq!(row.req_per_sec.median, 100.0);
        assert_eq!(row.keys_per_sec.median, 200.0);
        assert_eq!(row.req_per_server_cpu_sec.median, 190.0, "NaN (no CPU time) left out");
        assert!((row.spread_req - 0.2).abs() < 1e-12, "(110 - 90) / 100");
        assert_eq!((row.runs, row.noisy_runs), (3, 1));
        assert_eq!(row.hit_ratio, 0.9);
    }
}
