//! The command line (clap): the load run's flags in the memtier style, turned into a
//! [`Config`], and `compare`'s (see [`crate::compare::options`]).
//!
//! A usage error (unknown flag, bad value, contradictory flags) is reported on one line
//! and exits with [`EX_USAGE`] (64, sysexits.h), so scripts can tell it from a failed run.

use std::time::Duration;

use clap::{error::ErrorKind, Args, CommandFactory, Parser, Subcommand};

use crate::{
    client::Protocol,
    compare::options::{parse_cpu_list, CompareArgs, CpuList},
    memory::MemoryArgs,
    runner::{Config, KetamaNames, Stop},
    workload::{KeyDistribution, Ratio, Structure, ValueSizes, Workload, FIELDS_DEFAULT},
};

/// Exit status of a usage error (sysexits.h `EX_USAGE`).
pub const EX_USAGE: u8 = 64;

/// Pipeline depth of an open-loop run when `--pipeline` is not given: enough requests in
/// flight that a connection keeps to the schedule while earlier replies are outstanding.
const OPEN_LOOP_PIPELINE: usize = 16;

/// spinel-bench: a load generator for memcached (text and meta) and Redis servers, with
/// verified values, ketama sharding and open-loop rates.
#[derive(Debug, Parser)]
#[command(
    name = "spinel-bench",
    version,
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Sub>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, Subcommand)]
enum Sub {
    Compare(Box<CompareArgs>),
    Memory(Box<MemoryArgs>),
}

/// Flags of a load run. Defaults are those of [`Config::default`] (a test checks).
#[derive(Debug, Args)]
struct RunArgs {
    /// Servers, comma-separated; several are sharded by ketama
    #[arg(
        short = 's',
        long = "server",
        visible_alias = "servers",
        value_name = "HOST:PORT,...",
        default_value = "127.0.0.1:11211",
        help_heading = "Servers"
    )]
    servers: String,
    /// Wire protocol: memcache, meta or resp
    #[arg(short = 'P', long, value_parser = Protocol::parse, default_value = "memcache",
          help_heading = "Servers")]
    protocol: Protocol,
    /// Server names on the ketama ring: twemproxy or libmemcached
    #[arg(long, value_name = "NAMES", value_parser = parse_ketama_names, default_value = "twemproxy",
          help_heading = "Servers")]
    ketama_names: KetamaNames,
    /// Redis Cluster: the servers are seed nodes; CLUSTER SLOTS names the primaries, each
    /// key goes to its slot's owner, -MOVED and -ASK are followed (needs --protocol resp)
    #[arg(long, help_heading = "Servers")]
    cluster: bool,

    /// Client threads
    #[arg(short = 't', long, value_name = "N", default_value_t = 1, help_heading = "Load")]
    threads: usize,
    /// Connections per thread, per server
    #[arg(
        short = 'c',
        long,
        visible_alias = "clients",
        value_name = "N",
        default_value_t = 50,
        help_heading = "Load"
    )]
    connections: usize,
    /// Requests in flight per connection [default: 1; 16 with --rate]
    #[arg(long, value_name = "N", help_heading = "Load")]
    pipeline: Option<usize>,
    /// Open loop: N requests/s in total, latency from each request's intended send time
    #[arg(long, value_name = "N", help_heading = "Load")]
    rate: Option<u64>,
    /// Pin threads to these CPUs, e.g. 0 or 0,2
    #[arg(long, value_name = "LIST", value_parser = parse_cpu_list_arg, help_heading = "Load")]
    cpus: Option<CpuList>,

    /// Sets to gets, e.g. 1:9 or 0:1
    #[arg(long, value_name = "SET:GET", value_parser = Ratio::parse, default_value = "1:9",
          help_heading = "Workload")]
    ratio: Ratio,
    /// Keys per get: a multiget above 1
    #[arg(long, value_name = "N", default_value_t = 1, help_heading = "Workload")]
    keys_per_get: usize,
    /// Key length in bytes, fixed or a uniform range
    #[arg(long, value_name = "N|MIN-MAX", value_parser = parse_key_sizes, default_value = "20",
          help_heading = "Workload")]
    key_size: (usize, usize),
    /// Value length: fixed (N), uniform range (MIN-MAX) or weighted list (S:W,S:W)
    #[arg(long, visible_alias = "data-size", value_name = "SIZES",
          value_parser = ValueSizes::parse, default_value = "20", help_heading = "Workload")]
    value_size: ValueSizes,
    /// Number of distinct keys
    #[arg(long, value_name = "N", default_value_t = 10_000, help_heading = "Workload")]
    keyspace: u64,
    /// uniform, zipf:S (exponent S, e.g. zipf:0.99) or sequential
    #[arg(long, visible_alias = "key-pattern", value_name = "DIST",
          value_parser = parse_distribution, default_value = "uniform", help_heading = "Workload")]
    key_distribution: KeyDistribution,
    /// Redis data type: string (SET/GET), hash (HSET/HGET), list (LPUSH/RPOP), set
    /// (SADD/SISMEMBER), zset (ZADD/ZRANGE 0 9), multi (MULTI, SET a, SET b, EXEC and
    /// MULTI, GET a, GET b, EXEC), stream (XADD k * item f at n value v / by field:
    /// XREADGROUP GROUP bench bench COUNT 10 STREAMS k > then XACK of what it delivered, or
    /// XRANGE k - + COUNT 10) or geo (GEOADD k lon lat f / by field: GEOSEARCH k FROMLONLAT
    /// BYRADIUS 5 km ASC COUNT 10, GEODIST, GEOPOS); all but string need --protocol resp
    #[arg(long, value_name = "TYPE", value_parser = Structure::parse, default_value = "string",
          help_heading = "Workload")]
    structure: Structure,
    /// Fields (members, entries) per hash, list, set, zset, stream or geo key: the key space
    /// picks the key, this the field
    #[arg(long, value_name = "N", default_value_t = FIELDS_DEFAULT,
          value_parser = clap::value_parser!(u64).range(1..), help_heading = "Workload")]
    fields: u64,
    /// TTL on sets, in seconds (0: none)
    #[arg(long, value_name = "SECS", default_value_t = 0, help_heading = "Workload")]
    ttl: u32,
    /// Seed for keys, sizes and values; printed with the results to repeat a run
    #[arg(long, value_name = "N", default_value_t = 1, help_heading = "Workload")]
    seed: u64,

    /// Set every key once before measuring
    #[arg(long, help_heading = "Phases")]
    preload: bool,
    /// Run unmeasured first, e.g. 1s
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "0s",
          help_heading = "Phases")]
    warmup: Duration,
    /// Measured time, e.g. 5s or 500ms
    #[arg(long, visible_alias = "test-time", value_name = "DURATION",
          value_parser = parse_duration, default_value = "5s", help_heading = "Phases")]
    duration: Duration,
    /// Stop after N measured requests instead of after --duration
    #[arg(long, value_name = "N", conflicts_with = "duration", help_heading = "Phases")]
    requests: Option<u64>,

    /// Print one JSON object instead of the summary
    #[arg(long, help_heading = "Output")]
    json: bool,
    /// No live line
    #[arg(short = 'q', long, help_heading = "Output")]
    quiet: bool,
}

/// Flags that only change the output, not the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Output {
    pub json: bool,
    pub quiet: bool,
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Run(Box<Config>, Output),
    /// `spinel-bench compare ...`
    Compare(Box<crate::compare::Options>),
    /// `spinel-bench memory ...`
    Memory(Box<crate::memory::Options>),
}

/// Parses a duration: `5s`, `500ms`, `250us`, `2m`, `1.5s`, or bare seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("bad duration {text:?}");
    let (number, scale) = [("ms", 1e-3), ("us", 1e-6), ("s", 1.0), ("m", 60.0)]
        .iter()
        .find_map(|(suffix, scale)| text.strip_suffix(suffix).map(|n| (n, *scale)))
        .unwrap_or((text, 1.0));
    let value: f64 = number.trim().parse().map_err(|_| bad())?;
    if !(value >= 0.0 && value.is_finite()) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(value * scale))
}

fn parse_distribution(text: &str) -> Result<KeyDistribution, String> {
    match text {
        "uniform" | "random" => Ok(KeyDistribution::Uniform),
        "sequential" | "seq" => Ok(KeyDistribution::Sequential),
        "zipf" => Ok(KeyDistribution::Zipf { exponent: 0.99 }),
        _ => {
            let exponent = text
                .strip_prefix("zipf:")
                .and_then(|e| e.parse::<f64>().ok())
                .filter(|e| *e >= 0.0 && e.is_finite())
                .ok_or("want uniform, zipf:S or sequential")?;
            Ok(KeyDistribution::Zipf { exponent })
        }
    }
}

fn parse_ketama_names(text: &str) -> Result<KetamaNames, String> {
    match text {
        "twemproxy" => Ok(KetamaNames::Twemproxy),
        "libmemcached" => Ok(KetamaNames::Libmemcached),
        _ => Err("want twemproxy or libmemcached".into()),
    }
}

/// `N` or `MIN-MAX`: (shortest, longest; 0 when fixed).
fn parse_key_sizes(text: &str) -> Result<(usize, usize), String> {
    let number = |t: &str| t.trim().parse::<usize>().map_err(|_| format!("{t:?}: not a number"));
    match text.split_once('-') {
        Some((min, max)) => Ok((number(min)?, number(max)?)),
        None => Ok((number(text)?, 0)),
    }
}

pub(crate) fn parse_cpu_list_arg(text: &str) -> Result<CpuList, String> {
    parse_cpu_list(text).map(CpuList)
}

impl RunArgs {
    fn config(self) -> Config {
        let stop = match self.requests {
            Some(requests) => Stop::Requests(requests),
            None => Stop::Duration(self.duration),
        };
        let open_loop = self.rate.is_some();
        Config {
            servers: self.servers.split(',').map(|s| s.trim().to_string()).collect(),
            protocol: self.protocol,
            threads: self.threads,
            connections: self.connections,
            pipeline: self.pipeline.unwrap_or(if open_loop { OPEN_LOOP_PIPELINE } else { 1 }),
            workload: Workload {
                keyspace: self.keyspace,
                key_size: self.key_size.0,
                key_size_max: self.key_size.1,
                key_distribution: self.key_distribution,
                value_sizes: self.value_size,
                ratio: self.ratio,
                keys_per_get: self.keys_per_get,
                ttl_secs: self.ttl,
                structure: self.structure,
                fields: self.fields,
            },
            preload: self.preload,
            warmup: self.warmup,
            stop,
            rate_per_sec: self.rate,
            seed: self.seed,
            ketama_names: self.ketama_names,
            pin_cpus: self.cpus.map_or_else(Vec::new, |c| c.0),
            cluster: self.cluster,
        }
    }
}

/// Parses a whole command line, program name first. Help and version requests come back
/// as errors of kind `DisplayHelp` / `DisplayVersion`: see [`exit_for`].
pub fn parse<I, T>(argv: I) -> Result<Command, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let argv: Vec<std::ffi::OsString> = argv.into_iter().map(Into::into).collect();
    let cli = Cli::try_parse_from(&argv)?;
    let args = match cli.command {
        Some(Sub::Compare(args)) => args,
        Some(Sub::Memory(args)) => {
            let options = args
                .options()
                .map_err(|why| Cli::command().error(ErrorKind::ValueValidation, why))?;
            return Ok(Command::Memory(Box::new(options)));
        }
        None => {
            let output = Output { json: cli.run.json, quiet: cli.run.quiet };
            return Ok(Command::Run(Box::new(cli.run.config()), output));
        }
    };
    // The command line as typed, for the report's notes.
    let typed = argv.iter().skip(2).map(|a| a.to_string_lossy().into_owned());
    let command = std::iter::once("spinel-bench compare".to_string()).chain(typed);
    let options = args
        .options(command.collect::<Vec<_>>().join(" "))
        .map_err(|why| Cli::command().error(ErrorKind::ValueValidation, why))?;
    Ok(Command::Compare(Box::new(options)))
}

/// A parse error as one line without the `error: ` prefix, e.g.
/// `unexpected argument '--bogus' found`.
pub fn one_line(err: &clap::Error) -> String {
    let text = err.render().to_string();
    let first = text.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_string()
}

/// What to do with a parse error: print help or the version to stdout and succeed, or
/// print the one-line error to stderr and exit with [`EX_USAGE`]. Returns the exit status.
pub fn exit_for(err: &clap::Error) -> u8 {
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = err.print();
            0
        }
        _ => {
            eprintln!("spinel-bench: {}", one_line(err));
            EX_USAGE
        }
    }
}

#[cfg(test)]
mod tests;
