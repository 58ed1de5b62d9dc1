//! `spinel-bench compare` flags.

use std::{path::PathBuf, time::Duration};

use clap::Args;

use super::{
    matrix::{self, full_matrix, quick_matrix, Cell, Pattern, MULTIGET_KEYS, SIZES},
    peers::{self, Kind, ServerCmd, Spec},
};
use crate::{
    cli::{parse_cpu_list_arg, parse_duration},
    workload::{Structure, FIELDS_DEFAULT},
};

/// Key space of a comparison of collections unless given: with 100 fields a key, a
/// preload of 100k fields.
const COLLECTION_KEYSPACE: u64 = 1000;

/// A CPU list as given on the command line (`0`, `0,2`, `0-3,6`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

/// Spinel and its peers side by side on this machine
///
/// Starts Spinel, memcached, redis-server, valkey-server, pogocache and nullmc (those
/// installed, and any --server-cmd) on free loopback ports, pins them to the server CPUs
/// and the load to the client CPUs, and runs the matrix: 100% get and 9:1 get:set; single
/// get and 48-key multiget; key/value sizes 20/20, 32/128, 64/1024 and 64/10000 bytes (or
/// what --mix, --keys-per-get and --sizes pick), at each --pipeline depth, connection count
/// and --rate. Memcache text for Spinel, memcached, pogocache and nullmc, RESP for Redis
/// and Valkey. nullmc (shared/bench/nullmc.c, no store) is the limit every server is
/// divided by in compare.md's per-workload tables, next to memcached. Repeats the
/// matrix (servers interleaved within each workload, repetitions outermost), reports medians
/// with their spread, requests per server CPU-second (its threads' schedstat, in ns), and
/// flags runs disturbed by other load. Then sweeps server threads 1..N (all but Redis and
/// Valkey; get 20/20).
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

    /// Get/set mixes, from get, 9:1, 1:1 (as many sets as gets: a stream's producer and
    /// consumer keeping pace) and set (sets only) [default: get,9:1]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = Pattern::parse,
          help_heading = "Workloads")]
    mix: Option<Vec<Pattern>>,
    /// Keys per get, 1 = single get [default: 1,48]
    #[arg(long, value_name = "LIST", value_delimiter = ',', help_heading = "Workloads")]
    keys_per_get: Option<Vec<usize>>,
    /// Key/value sizes in bytes [default: 20/20,32/128,64/1024,64/10000]
    #[arg(long, value_name = "K/V,...", value_delimiter = ',', value_parser = parse_size_pair,
          help_heading = "Workloads")]
    sizes: Option<Vec<(usize, usize)>>,
    /// Requests in flight per connection, each a workload of its own [default: 1]
    #[arg(long, value_name = "LIST", value_delimiter = ',', help_heading = "Workloads")]
    pipeline: Option<Vec<usize>>,
    /// Connection counts, each a workload of its own (raises the open-file limit as needed)
    /// [default: -c]
    #[arg(long, value_name = "LIST", value_delimiter = ',', help_heading = "Workloads")]
    connections_list: Option<Vec<usize>>,
    /// Open loop at these offered rates (requests/s, 40k = 40000), each a workload of its
    /// own; latency counts from each request's intended send time; 0 = closed loop. Up to
    /// max(16, --pipeline) requests in flight per connection [default: closed loop]
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_rate,
          help_heading = "Workloads")]
    rate: Option<Vec<u64>>,
    /// Redis data type of every workload: string, hash, list, set, zset, multi, stream or geo
    /// (see `spinel-bench --help`). Other than string: RESP only (spinel-resp, redis, valkey,
    /// and --server-cmd :resp servers; others are left out), no thread sweep, servers
    /// spinel,redis,valkey and a key space of 1000 unless given. Streams and geo, as the
    /// project measures them: `compare --structure stream --mix set,1:1,9:1 --keys-per-get 1
    /// --sizes 20/64 --fields 100 --repeat 3 --duration 2s` (the same with `geo`)
    /// [default: string]
    #[arg(long, value_name = "TYPE", value_parser = Structure::parse, help_heading = "Workloads")]
    structure: Option<Structure>,
    /// Fields (members) per collection key [default: 100]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..),
          help_heading = "Workloads")]
    fields: Option<u64>,

    /// Servers from spinel,memcached,redis,valkey,pogocache,nullmc and --server-cmd names
    /// [default: all of them]
    #[arg(long, value_name = "LIST", value_delimiter = ',', help_heading = "Servers")]
    servers: Option<Vec<String>>,
    /// Another server: NAME[:mc|:meta|:resp][:limit]=COMMAND (repeatable). COMMAND runs
    /// under sh, pinned like the others, with {port} {threads} {value_size} {memory_mib}
    /// {max_connections} filled in; with {value_size} it is restarted per value size; with
    /// {threads} it joins the thread sweep. :limit = store-less (values not checked), the
    /// divisor of the ratio rows. Example: 'lim:mc:limit=./nullmc {port} {threads}
    /// {value_size}'
    #[arg(long, value_name = "SPEC", value_parser = ServerCmd::parse, help_heading = "Servers")]
    server_cmd: Vec<ServerCmd>,
    /// Also measure, over RESP, the servers that speak it besides memcache (spinel-resp on
    /// Spinel's Redis port, pogocache-resp on pogocache's one port)
    #[arg(long, visible_alias = "spinel-resp", help_heading = "Servers")]
    resp: bool,
    /// Spinel binary [default: $SPINEL_BIN, beside this binary, target/release/spinel,
    /// target/debug/spinel]
    #[arg(long, value_name = "PATH", help_heading = "Servers")]
    spinel_bin: Option<PathBuf>,
    /// Worker threads of each server in the matrix (Valkey: --io-threads; Redis: none)
    /// [default: 1]
    #[arg(long, value_name = "N", help_heading = "Servers")]
    server_threads: Option<usize>,
    /// Thread sweep 1..N [default: CPU count, at most 8; 0 = no sweep; skipped with
    /// --instances above 1]
    #[arg(long, value_name = "N", help_heading = "Servers")]
    sweep_threads: Option<usize>,
    /// Start every server N times (free loopback ports, all pinned to the server CPUs) and
    /// shard the keys over them by ketama, as `spinel-bench -s a,b,...` does (preload
    /// included); each connection of the load is one per instance; server CPU is the sum
    /// over the instances. Skips the thread sweep when above 1 [default: 1]
    #[arg(long, value_name = "N", help_heading = "Servers")]
    instances: Option<usize>,
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
    pub servers: Vec<Spec>,
    /// Also the `NAME-resp` targets.
    pub resp: bool,
    pub spinel_bin: Option<PathBuf>,
    pub server_cpus: Vec<usize>,
    pub client_cpus: Vec<usize>,
    pub client_threads: usize,
    pub server_threads: usize,
    pub sweep_threads: usize,
    /// Instances of each server, sharded by ketama (1 = one server, no ring).
    pub instances: usize,
    pub memory_mib: u64,
    pub idle_wait: Duration,
    pub noise_pct: f64,
    pub out_dir: PathBuf,
    pub cells: Vec<Cell>,
    /// The data type every workload reads and writes; not string: RESP targets only.
    pub structure: Structure,
    /// Fields per collection key.
    pub fields: u64,
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
/// `20/20`: key and value size in bytes.
fn parse_size_pair(text: &str) -> Result<(usize, usize), String> {
    let (k, v) = text.trim().split_once('/').ok_or(format!("{text:?}: want KEY/VALUE bytes"))?;
    let num =
        |s: &str| s.trim().parse::<usize>().map_err(|_| format!("{text:?}: want KEY/VALUE bytes"));
    Ok((num(k)?, num(v)?))
}

/// `40000` or `40k` requests per second.
fn parse_rate(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (digits, scale) = match text.strip_suffix(['k', 'K']) {
        Some(d) => (d, 1000.0),
        None => (text, 1.0),
    };
    let rate: f64 =
        digits.parse().map_err(|_| format!("{text:?}: want requests/s (40000 or 40k)"))?;
    Ok((rate * scale).round() as u64)
}

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
            connections: matrix::DEFAULT_CONNECTIONS,
            keyspace: 10_000,
            servers: Kind::ALL.into_iter().map(Spec::Builtin).collect(),
            resp: false,
            spinel_bin: None,
            server_cpus,
            client_threads: client_cpus.len().max(1),
            client_cpus,
            server_threads: 1,
            sweep_threads: cpus.len().clamp(1, 8),
            instances: 1,
            memory_mib: 1024,
            idle_wait: Duration::from_secs(if quick { 2 } else { 5 }),
            noise_pct: 5.0,
            out_dir: PathBuf::from("bench-report"),
            cells: if quick { quick_matrix() } else { full_matrix() },
            structure: Structure::String,
            fields: FIELDS_DEFAULT,
            command: String::new(),
        }
    }
}

impl CompareArgs {
    /// The workloads: the quick or full matrix, or the product of --mix, --keys-per-get and
    /// --sizes when any is given; then each at every pipeline depth, connection count and
    /// rate.
    fn cells(&self, default: &[Cell], connections: usize) -> Vec<Cell> {
        let chosen = self.mix.is_some() || self.keys_per_get.is_some() || self.sizes.is_some();
        let base: Vec<Cell> = if chosen {
            matrix::product(
                self.mix.as_deref().unwrap_or(&[Pattern::Get, Pattern::Mix91]),
                self.keys_per_get.as_deref().unwrap_or(&[1, MULTIGET_KEYS]),
                self.sizes.as_deref().unwrap_or(&SIZES),
            )
        } else {
            default.to_vec()
        };
        let conns = self.connections_list.clone().unwrap_or_else(|| vec![connections]);
        let pipelines = self.pipeline.as_deref().unwrap_or_default();
        matrix::expand(&base, pipelines, &conns, self.rate.as_deref().unwrap_or_default())
    }

    /// The options: what was given, the defaults (of a quick run with `--quick`) for the
    /// rest. `command` is the command line, for the report.
    pub fn options(self, command: String) -> Result<Options, String> {
        let d = Options::defaults(self.quick);
        let connections = self.connections.unwrap_or(d.connections);
        let cells = self.cells(&d.cells, connections);
        let client_cpus = self.client_cpus.map_or(d.client_cpus.clone(), |c| c.0);
        let structure = self.structure.unwrap_or_default();
        let strings = structure == Structure::String;
        let servers = match (&self.servers, strings) {
            (None, false) => {
                let names = ["spinel", "redis", "valkey"].map(String::from);
                let cmds = self.server_cmd.iter().map(|c| c.name.clone());
                peers::select(
                    Some(&names.into_iter().chain(cmds).collect::<Vec<_>>()),
                    &self.server_cmd,
                )?
            }
            _ => peers::select(self.servers.as_deref(), &self.server_cmd)?,
        };
        let collection_keyspace =
            if structure.is_collection() { COLLECTION_KEYSPACE } else { d.keyspace };
        let lists = [&self.keys_per_get, &self.pipeline, &self.connections_list];
        if lists.iter().any(|l| l.as_ref().is_some_and(|l| l.is_empty() || l.contains(&0))) {
            return Err(
                "--keys-per-get, --pipeline and --connections-list need values of at least 1"
                    .into(),
            );
        }
        let o = Options {
            repeat: self.repeat.unwrap_or(d.repeat),
            duration: self.duration.unwrap_or(d.duration),
            warmup: self.warmup.unwrap_or(d.warmup),
            connections,
            keyspace: self.keyspace.unwrap_or(collection_keyspace),
            servers,
            // Spinel's collections are on its RESP port.
            resp: self.resp || !strings,
            spinel_bin: self.spinel_bin,
            server_cpus: self.server_cpus.map_or(d.server_cpus, |c| c.0),
            client_threads: self.client_threads.unwrap_or(client_cpus.len().max(1)),
            client_cpus,
            server_threads: self.server_threads.unwrap_or(d.server_threads),
            // The sweep measures memcache text gets.
            sweep_threads: if strings { self.sweep_threads.unwrap_or(d.sweep_threads) } else { 0 },
            instances: self.instances.unwrap_or(d.instances),
            memory_mib: self.memory_mib.unwrap_or(d.memory_mib),
            idle_wait: self.idle_wait.unwrap_or(d.idle_wait),
            noise_pct: self.noise_pct.unwrap_or(d.noise_pct),
            out_dir: self.out_dir.unwrap_or(d.out_dir),
            command,
            cells,
            structure,
            fields: self.fields.unwrap_or(d.fields),
            ..d
        };
        if o.repeat == 0 || o.connections == 0 || o.client_threads == 0 || o.server_threads == 0 {
            return Err("--repeat, --connections and thread counts must be at least 1".into());
        }
        if o.instances == 0 {
            return Err("--instances must be at least 1 (1 = one instance of each server)".into());
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
        assert_eq!(o.servers, vec![Kind::Spinel.into(), Kind::Memcached.into()]);
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
        assert_eq!(full.instances, 1, "one instance unless asked");
        assert_eq!(parse_cpu_list("0-2,5"), Ok(vec![0, 1, 2, 5]));
    }

    /// Goal: --instances N takes N of at least 1; 0 is refused with a reason, and 1 is
    /// the same as not giving it.
    #[test]
    fn instances_flag() {
        assert_eq!(parse("--instances 4 --sweep-threads 0").unwrap().instances, 4);
        let e = parse("--instances 0").unwrap_err();
        assert!(e.contains("--instances must be at least 1"), "{e}");
        assert!(parse("--instances x").unwrap_err().contains("--instances"));
        let one = parse("--instances 1 --quick").unwrap();
        let plain = parse("--quick").unwrap();
        assert_eq!(Options { command: plain.command.clone(), ..one }, plain);
    }

    /// `compare` options from separate arguments (for values with spaces).
    fn parse_args(args: &[&str]) -> Result<Options, String> {
        let argv = ["spinel-bench", "compare"].iter().chain(args);
        match cli::parse(argv) {
            Ok(Command::Compare(options)) => Ok(*options),
            Ok(other) => panic!("not compare: {other:?}"),
            Err(e) => Err(cli::one_line(&e)),
        }
    }

    /// Goal: --server-cmd adds servers by name (selectable with --servers, all of them by
    /// default), with protocol and limit, and bad specs are usage errors.
    #[test]
    fn server_cmd_flags() {
        let o = parse_args(&[
            "--server-cmd",
            "lim:mc:limit=/opt/nullmc {port} {threads} {value_size}",
            "--server-cmd",
            "kv:resp=kvd --port {port}",
            "--servers",
            "spinel,lim,memcached",
        ])
        .unwrap();
        let names: Vec<&str> = o.servers.iter().map(Spec::name).collect();
        assert_eq!(names, ["spinel", "lim", "memcached"]);
        assert!(o.servers[1].is_limit());
        let o = parse_args(&["--server-cmd", "kv:resp=kvd --port {port}"]).unwrap();
        let last = o.servers.last().unwrap();
        assert_eq!((last.name(), last.protocol()), ("kv", crate::client::Protocol::Resp));
        assert_eq!(o.servers.len(), Kind::ALL.len() + 1);
        assert!(parse_args(&["--server-cmd", "no-equals"]).unwrap_err().contains("NAME"));
        assert!(parse_args(&["--server-cmd", "x:ftp=cmd"]).is_err());
        let e = parse_args(&["--servers", "spinel,lim"]).unwrap_err();
        assert!(e.contains("lim"), "{e}");
        assert!(parse("--servers valkey,pogocache,nullmc --resp").unwrap().resp);
        assert!(parse("--spinel-resp").unwrap().resp, "the old flag name still works");
    }

    /// Goal: --structure other than string picks the RESP servers, Spinel's RESP port, no
    /// sweep and a smaller key space unless told otherwise; string changes nothing.
    #[test]
    fn structure_flags() {
        let o = parse("--structure hash --fields 10").unwrap();
        assert_eq!((o.structure, o.fields, o.keyspace), (Structure::Hash, 10, 1000));
        let names: Vec<&str> = o.servers.iter().map(Spec::name).collect();
        assert_eq!(names, ["spinel", "redis", "valkey"]);
        assert!(o.resp && o.sweep_threads == 0);
        let o = parse("--structure multi --servers redis --keyspace 50 --sweep-threads 2").unwrap();
        assert_eq!((o.keyspace, o.servers.len(), o.sweep_threads), (50, 1, 0));
        let plain = parse("--structure string").unwrap();
        assert_eq!(plain, Options { command: plain.command.clone(), ..parse("").unwrap() });
        assert!(parse("--structure bitmap").unwrap_err().contains("want string"));
    }

    /// Goal: the workload flags build the matrix: the product of --mix, --keys-per-get and
    /// --sizes, each at every --pipeline, --connections-list and --rate value.
    #[test]
    fn workload_flags() {
        let o = parse(
            "--mix get --keys-per-get 1,100 --sizes 20/20,64/4096 --pipeline 1,32 \
             --connections-list 50,1000 --rate 0,40k",
        )
        .unwrap();
        assert_eq!(o.cells.len(), 2 * 2 * 2 * 2 * 2);
        let names: Vec<String> = o.cells.iter().map(Cell::name).collect();
        assert_eq!(names[0], "get 20/20");
        assert!(names.contains(&"get mget100 64/4096 p32 c1000 @40.0k/s".to_string()));
        assert!(o.cells.iter().any(|c| c.rate_per_sec == 40_000 && c.pipeline == 1));
        let quick = parse("--quick --pipeline 32").unwrap();
        assert_eq!(quick.cells.len(), quick_matrix().len());
        assert!(quick.cells.iter().all(|c| c.pipeline == 32 && c.connections == 50));
        let c = parse("-c 10 --rate 10000").unwrap();
        assert!(c.cells.iter().all(|c| c.connections == 10 && c.rate_per_sec == 10_000));
        assert_eq!(parse("--keys-per-get 48").unwrap().cells.len(), 2 * 4, "mixes x sizes");
        assert!(parse("--pipeline 0").unwrap_err().contains("--pipeline"));
        assert!(parse("--sizes 20").unwrap_err().contains("KEY/VALUE"));
        assert!(parse("--rate fast").unwrap_err().contains("requests/s"));
        assert!(parse("--mix 1:2").unwrap_err().contains("9:1, 1:1 or set"));
        let mixes = parse("--mix set,1:1 --keys-per-get 1 --sizes 20/64").unwrap();
        let names: Vec<String> = mixes.cells.iter().map(|c| c.name()).collect();
        assert_eq!(names, ["set 20/64", "1:1 20/64"]);
        assert_eq!(mixes.cells[0].pattern.ratio(), crate::workload::Ratio { sets: 1, gets: 0 });
    }
}
