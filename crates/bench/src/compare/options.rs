//! `spinel-bench compare` flags.

use std::{path::PathBuf, time::Duration};

use super::{
    matrix::{full_matrix, quick_matrix, Cell},
    servers::Kind,
};
use crate::cli::{parse_duration, Args};

pub const USAGE: &str = "\
usage: spinel-bench compare [options]

Starts Spinel, memcached and redis-server (those installed) on free loopback ports, pins
them to the server CPUs and the load to the client CPUs, and runs the matrix: 100% get and
9:1 get:set; single get and 48-key multiget; key/value sizes 20/20, 32/128, 64/1024 and
64/10000 bytes. Memcache text for Spinel and memcached, RESP for Redis. Repeats the matrix
(servers interleaved within each workload, repetitions outermost), reports medians with
their spread, requests per server CPU-second (/proc/PID/stat), and flags runs disturbed by
other load. Then sweeps server threads 1..N (Spinel, memcached; get 20/20).
Writes DIR/compare.md, DIR/compare.csv, DIR/compare.html, DIR/compare.json (with the
latency histograms); prints the table.

      --quick                  under 3 minutes: 2 s runs, one repetition, 7 of the 16
                               workloads (single gets at all sizes, 20/20 multiget and 9:1)
      --repeat N               repetitions of the whole matrix (default 3)
      --duration DURATION      measured time per run (default 3s)
      --warmup DURATION        unmeasured time after the preload (default 500ms)
  -c, --connections N          connections per run (default 50)
      --keyspace N             keys per workload, all preloaded (default 10000)
      --servers LIST           from spinel,memcached,redis (default all)
      --spinel-resp            also measure Spinel over RESP (its Redis port)
      --spinel-bin PATH        Spinel binary (default $SPINEL_BIN, beside this binary,
                               target/release/spinel, target/debug/spinel)
      --server-cpus LIST       CPUs for the servers (default 1 on a 2-core machine)
      --client-cpus LIST       CPUs for the load threads (default 0)
      --client-threads N       load threads (default: one per client CPU)
      --server-threads N       worker threads of each server in the matrix (default 1)
      --sweep-threads N        thread sweep 1..N (default: CPU count; 0 = no sweep)
      --memory MIB             server memory limit (default 1024)
      --idle-wait DURATION     wait at most this for an idle machine before each run
                               (default 5s; 2s with --quick)
      --noise-pct X            flag a run noisy above X% of a core of foreign CPU (default 5)
      --out DIR                output directory (default ./bench-report)
  -h, --help                   this text
";

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

fn number<T: std::str::FromStr>(flag: &str, text: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("{flag} {text}: not a number"))
}

/// Parses the arguments after `compare`; `Ok(None)` asks for the help text.
pub fn parse(args: &[String]) -> Result<Option<Options>, String> {
    let quick = args.iter().any(|a| a == "--quick");
    let mut o = Options::defaults(quick);
    o.command = std::iter::once("spinel-bench compare".to_string())
        .chain(args.iter().cloned())
        .collect::<Vec<_>>()
        .join(" ");
    let mut client_threads = None;
    let mut cursor = Args::new(args);
    while let Some((flag, mut inline)) = cursor.next_flag() {
        let mut value = || cursor.value(&flag, &mut inline);
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--quick" => {}
            "--repeat" => o.repeat = number(&flag, &value()?)?,
            "--duration" => o.duration = parse_duration(&value()?)?,
            "--warmup" => o.warmup = parse_duration(&value()?)?,
            "-c" | "--connections" => o.connections = number(&flag, &value()?)?,
            "--keyspace" => o.keyspace = number(&flag, &value()?)?,
            "--servers" => {
                o.servers =
                    value()?.split(',').map(|s| Kind::parse(s.trim())).collect::<Result<_, _>>()?
            }
            "--spinel-resp" => o.spinel_resp = true,
            "--spinel-bin" => o.spinel_bin = Some(PathBuf::from(value()?)),
            "--server-cpus" => o.server_cpus = parse_cpu_list(&value()?)?,
            "--client-cpus" => o.client_cpus = parse_cpu_list(&value()?)?,
            "--client-threads" => client_threads = Some(number(&flag, &value()?)?),
            "--server-threads" => o.server_threads = number(&flag, &value()?)?,
            "--sweep-threads" => o.sweep_threads = number(&flag, &value()?)?,
            "--memory" => o.memory_mib = number(&flag, &value()?)?,
            "--idle-wait" => o.idle_wait = parse_duration(&value()?)?,
            "--noise-pct" => o.noise_pct = number(&flag, &value()?)?,
            "--out" => o.out_dir = PathBuf::from(value()?),
            other => return Err(format!("compare: unknown option {other} (see compare --help)")),
        }
    }
    o.client_threads = client_threads.unwrap_or(o.client_cpus.len().max(1));
    if o.repeat == 0 || o.connections == 0 || o.client_threads == 0 || o.server_threads == 0 {
        return Err("compare: --repeat, --connections and thread counts must be at least 1".into());
    }
    if o.duration.is_zero() || o.keyspace == 0 || o.servers.is_empty() {
        return Err("compare: --duration, --keyspace and --servers must not be empty".into());
    }
    Ok(Some(o))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn flags() {
        let o = parse(&args(
            "--quick --servers spinel,memcached --out /tmp/x --server-cpus 1 \
                             --client-cpus 0 --repeat 2 --duration 1s",
        ))
        .unwrap()
        .unwrap();
        assert!(o.quick);
        assert_eq!(o.servers, vec![Kind::Spinel, Kind::Memcached]);
        assert_eq!((o.server_cpus, o.client_cpus, o.client_threads), (vec![1], vec![0], 1));
        assert_eq!((o.repeat, o.duration), (2, Duration::from_secs(1)));
        assert_eq!(o.cells, quick_matrix());
        let full = parse(&[]).unwrap().unwrap();
        assert_eq!((full.repeat, full.cells.len()), (3, 16));
        assert_eq!(parse(&args("-h")), Ok(None));
        assert!(parse(&args("--servers nginx")).is_err());
        assert!(parse(&args("--repeat 0")).is_err());
        assert_eq!(parse_cpu_list("0-2,5"), Ok(vec![0, 1, 2, 5]));
    }
}
