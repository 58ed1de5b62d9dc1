//! `spinel-bench compare` flags.

use std::{path::PathBuf, time::Duration};

use clap::Args;

use super::{
    matrix::{full_matrix, quick_matrix, Cell},
    servers::Kind,
};
use crate::cli::{parse_cpu_list_arg, parse_duration};

/// A CPU list as given on the command line (`0`, `0,2`, `0-3,6`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

/// Spinel, memcached and Redis side by side on this machine
///
/// Starts Spinel, memcached and redis-server (those installed) on free loopback ports, pins
/// them to the server CPUs and the load to the client CPUs, and runs the matrix: 100% get
/// and 9:1 get:set; single get and 48-key multiget; key/value sizes 20/20, 32/128, 64/1024
/// and 64/10000 bytes. Memcache text for Spinel and memcached, RESP for Redis. Repeats the
/// matrix (servers interleaved within each workload, repetitions outermost), reports medians
/// with their spread, requests per server CPU-second (/proc/PID/stat), and flags runs
/// disturbed by other load. Then sweeps server threads 1..N (Spinel, memcached; get 20/20).
/// Writes DIR/compare.md, DIR/compare.csv, DIR/compare.html, DIR/compare.json (with the
/// latency histograms); prints the table.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Under 3 minutes: 2 s runs, one repetition, 7 of the 16 workloads (single gets at
    /// all sizes, 20/20 multiget and 9:1)
    #[arg(long, help_heading = "Runs")]
    quick: bool,
    /// Repetitions of the whole matrix [default: 3; 1 with --quick]
    #[arg(long, value_name = "N", help_heading = "Runs")]
    repeat: Option<usize>,
    /// Measured time per run [default: 3s; 2s with --quick]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, help_heading = "Runs")]
    duration: Option<Duration>,
    /// Unmeasured time after the preload [default: 500ms; 300ms with --quick]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, help_heading = "Runs")]
    warmup: Option<Duration>,
    /// Connections per run [default: 50]
    #[arg(short = 'c', long, value_name = "N", help_heading = "Runs")]
    connections: Option<usize>,
    /// Keys per workload, all preloaded [default: 10000]
    #[arg(long, value_name = "N", help_heading = "Runs")]
    keyspace: Option<u64>,

    /// Servers from spinel,memcached,redis [default: all]
    #[arg(long, value_name = "LIST", value_delimiter = ',',
          value_parser = |s: &str| Kind::parse(s.trim()), help_heading = "Servers")]
    servers: Option<Vec<Kind>>,
    /// Also measure Spinel over RESP (its Redis port)
    #[arg(long, help_heading = "Servers")]
    spinel_resp: bool,
    /// Spinel binary [default: $SPINEL_BIN, beside this binary, target/release/spinel,
    /// target/debug/spinel]
    #[arg(long, value_name = "PATH", help_heading = "Servers")]
    spinel_bin: Option<PathBuf>,
    /// Worker threads of each server in the matrix [default: 1]
    #[arg(long, value_name = "N", help_heading = "Servers")]
    server_threads: Option<usize>,
    /// Thread sweep 1..N [default: CPU count, at most 8; 0 = no sweep]
    #[arg(long, value_name = "N", help_heading = "Servers")]
    sweep_threads: Option<usize>,
    /// Server memory limit in MiB [default: 1024]
    #[arg(long = "memory", value_name = "MIB", help_heading = "Servers")]
    memory_mib: Option<u64>,

    /// CPUs for the servers [default: 1 on a 2-core machine]
    #[arg(long, value_name = "LIST", value_parser = parse_cpu_list_arg, help_heading = "CPUs")]
    server_cpus: Option<CpuList>,
    /// CPUs for the load threads [default: 0]
    #[arg(long, value_name = "LIST", value_parser = parse_cpu_list_arg, help_heading = "CPUs")]
    client_cpus: Option<CpuList>,
    /// Load threads [default: one per client CPU]
    #[arg(long, value_name = "N", help_heading = "CPUs")]
    client_threads: Option<usize>,
    /// Wait at most this for an idle machine before each run [default: 5s; 2s with --quick]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, help_heading = "CPUs")]
    idle_wait: Option<Duration>,
    /// Flag a run noisy above X% of a core of foreign CPU [default: 5]
    #[arg(long, value_name = "X", help_heading = "CPUs")]
    noise_pct: Option<f64>,

    /// Output directory [default: ./bench-report]
    #[arg(long = "out", value_name = "DIR", help_heading = "Output")]
    out_dir: Option<PathBuf>,
}

/// Everything `compare` needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub quick: bool,
    pub repeat: usize,
    pub duration: Duration,
    pub warmup: Duration,
    pub connections: usize,
    pub keyspace: u64,
    pub servers: Vec<Kind>,
    pub spinel_resp: bool,
    pub spinel_bin: Option<PathBuf>,
    pub server_cpus: Vec<usize>,
    pub client_cpus: Vec<usize>,
    pub client_threads: usize,
    pub server_threads: usize,
    pub sweep_threads: usize,
    pub memory_mib: u64,
    pub idle_wait: Duration,
    pub noise_pct: f64,
    pub out_dir: PathBuf,
    pub cells: Vec<Cell>,
    /// The command line, for the report.
    pub command: String,
}

/// CPUs this process may run on (from /proc/self/status), else 0..available_parallelism.
pub fn online_cpus() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let listed = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(|l| parse_cpu_list(l.trim()).ok());
    listed.filter(|l| !l.is_empty()).unwrap_or_else(|| {
        (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect()
    })
}

/// `0`, `0,2`, `0-3,6`.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let num = |s: &str| s.trim().parse::<usize>().map_err(|_| format!("bad CPU list {text:?}"));
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(num(a)?..=num(b)?),
            None => cpus.push(num(part)?),
        }
    }
    Ok(cpus)
}

impl Options {
    /// The defaults of a full run on this machine (or a quick one).
    pub fn defaults(quick: bool) -> Options {
        let cpus = online_cpus();
        // Server on the second CPU, load on the first; on one CPU both share it.
        let (server_cpus, client_cpus) = match cpus.as_slice() {
            [] => (vec![], vec![]),
            [only] => (vec![*only], vec![*only]),
            [first, second, ..] => (vec![*second], vec![*first]),
        };
        Options {
            quick,
            repeat: if quick { 1 } else { 3 },
            duration: Duration::from_secs(if quick { 2 } else { 3 }),
            warmup: Duration::from_millis(if quick { 300 } else { 500 }),
            connections: 50,
            keyspace: 10_000,
            servers: Kind::ALL.to_vec(),
            spinel_resp: false,
            spinel_bin: None,
            server_cpus,
            client_threads: client_cpus.len().max(1),
            client_cpus,
            server_threads: 1,
            sweep_threads: cpus.len().clamp(1, 8),
            memory_mib: 1024,
            idle_wait: Duration::from_secs(if quick { 2 } else { 5 }),
            noise_pct: 5.0,
            out_dir: PathBuf::from("bench-report"),
            cells: if quick { quick_matrix() } else { full_matrix() },
            command: String::new(),
        }
    }
}

impl CompareArgs {
    /// The options: what was given, the defaults (of a quick run with `--quick`) for the
    /// rest. `command` is the command line, for the report.
    pub fn options(self, command: String) -> Result<Options, String> {
        let d = Options::defaults(self.quick);
        let client_cpus = self.client_cpus.map_or(d.client_cpus, |c| c.0);
        let o = Options {
            repeat: self.repeat.unwrap_or(d.repeat),
            duration: self.duration.unwrap_or(d.duration),
            warmup: self.warmup.unwrap_or(d.warmup),
            connections: self.connections.unwrap_or(d.connections),
            keyspace: self.keyspace.unwrap_or(d.keyspace),
            servers: self.servers.unwrap_or(d.servers),
            spinel_resp: self.spinel_resp,
            spinel_bin: self.spinel_bin,
            server_cpus: self.server_cpus.map_or(d.server_cpus, |c| c.0),
            client_threads: self.client_threads.unwrap_or(client_cpus.len().max(1)),
            client_cpus,
            server_threads: self.server_threads.unwrap_or(d.server_threads),
            sweep_threads: self.sweep_threads.unwrap_or(d.sweep_threads),
            memory_mib: self.memory_mib.unwrap_or(d.memory_mib),
            idle_wait: self.idle_wait.unwrap_or(d.idle_wait),
            noise_pct: self.noise_pct.unwrap_or(d.noise_pct),
            out_dir: self.out_dir.unwrap_or(d.out_dir),
            command,
            ..d
        };
        if o.repeat == 0 || o.connections == 0 || o.client_threads == 0 || o.server_threads == 0 {
            return Err("--repeat, --connections and thread counts must be at least 1".into());
        }
        if o.duration.is_zero() || o.keyspace == 0 || o.servers.is_empty() {
            return Err("--duration, --keyspace and --servers must not be empty".into());
        }
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{self, Command};

    /// `compare` options from a command line (after `spinel-bench compare`).
    fn parse(line: &str) -> Result<Options, String> {
        let argv = ["spinel-bench", "compare"].into_iter().chain(line.split_whitespace());
        match cli::parse(argv) {
            Ok(Command::Compare(options)) => Ok(*options),
            Ok(other) => panic!("not compare: {other:?}"),
            Err(e) => Err(cli::one_line(&e)),
        }
    }

    #[test]
    fn flags() {
        let o = parse(
            "--quick --servers spinel,memcached --out /tmp/x --server-cpus 1 \
             --client-cpus 0 --repeat 2 --duration 1s",
        )
        .unwrap();
        assert!(o.quick);
        assert_eq!(o.servers, vec![Kind::Spinel, Kind::Memcached]);
        assert_eq!((o.server_cpus, o.client_cpus, o.client_threads), (vec![1], vec![0], 1));
        assert_eq!((o.repeat, o.duration), (2, Duration::from_secs(1)));
        assert_eq!(o.cells, quick_matrix());
        assert_eq!(o.out_dir, PathBuf::from("/tmp/x"));
        assert!(o.command.starts_with("spinel-bench compare --quick --servers"));
        let full = parse("").unwrap();
        assert_eq!((full.repeat, full.cells.len()), (3, 16));
        assert_eq!(
            full,
            Options { command: "spinel-bench compare".into(), ..Options::defaults(false) }
        );
        assert!(parse("--servers nginx").unwrap_err().contains("nginx"));
        assert!(parse("--repeat 0").unwrap_err().contains("--repeat"));
        assert!(parse("--memory 12 --noise-pct 2.5 --idle-wait 1s --spinel-resp").is_ok());
        assert_eq!(parse_cpu_list("0-2,5"), Ok(vec![0, 1, 2, 5]));
    }
}
