//! Command-line flags in the memtier style, turned into a [`Config`].

use std::time::Duration;

use crate::{
    client::Protocol,
    runner::{Config, KetamaNames, Stop},
    workload::{KeyDistribution, Ratio, ValueSizes},
};

pub const USAGE: &str = "\
usage: spinel-bench [options]
       spinel-bench compare [--quick] [options]   (see spinel-bench compare --help)

  -s, --server HOST:PORT[,HOST:PORT...]  servers; several are sharded by ketama (default 127.0.0.1:11211)
  -P, --protocol memcache|meta|resp      wire protocol (default memcache)
  -t, --threads N                        client threads (default 1)
  -c, --connections N                    connections per thread, per server (default 50)
      --pipeline N                       requests in flight per connection (default 1; 16 with --rate)
      --ratio SET:GET                    e.g. 1:9 (default) or 0:1
      --keys-per-get N                   keys per get: a multiget above 1 (default 1)
      --key-size N|MIN-MAX               key length in bytes, fixed or a uniform range (default 20)
      --value-size N|MIN-MAX|S:W,S:W     value length: fixed, uniform range, weighted list (default 20)
      --keyspace N                       number of distinct keys (default 10000)
      --key-distribution uniform|zipf:S|sequential   (default uniform; zipf exponent S, e.g. zipf:0.99)
      --ttl SECS                         TTL on sets (default 0: none)
      --preload                          set every key once before measuring
      --warmup DURATION                  run unmeasured first (e.g. 1s; default 0)
      --duration DURATION                measured time (e.g. 5s, 500ms; default 5s)
      --requests N                       stop after N measured requests instead
      --rate N                           open loop: N requests/s in total, latency from intended send time
      --seed N                           seed for keys, sizes and the mix (default 1)
      --ketama-names twemproxy|libmemcached   server names on the ring (default twemproxy)
      --cpus LIST                        pin threads to these CPUs, e.g. 0 or 0,2
      --json                             print one JSON object instead of the summary
  -q, --quiet                            no live line
  -h, --help                             this text
";

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
    Help,
    CompareHelp,
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
                .ok_or(format!("--key-distribution {text}: want uniform, zipf:S or sequential"))?;
            Ok(KeyDistribution::Zipf { exponent })
        }
    }
}

/// `N` or `MIN-MAX`: (shortest, longest; 0 when fixed).
fn key_sizes(flag: &str, text: &str) -> Result<(usize, usize), String> {
    match text.split_once('-') {
        Some((min, max)) => Ok((number(flag, min)?, number(flag, max)?)),
        None => Ok((number(flag, text)?, 0)),
    }
}

fn number<T: std::str::FromStr>(flag: &str, text: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("{flag} {text}: not a number"))
}

/// Parses the arguments after the program name.
/// Walks a command line: `--flag value`, `--flag=value` and `-f value` (shared by the load
/// command and `compare`).
pub(crate) struct Args<'a> {
    args: &'a [String],
    next: usize,
}

impl<'a> Args<'a> {
    pub(crate) fn new(args: &'a [String]) -> Self {
        Args { args, next: 0 }
    }

    /// The next flag, and the value given with it after `=`, if any.
    pub(crate) fn next_flag(&mut self) -> Option<(String, Option<String>)> {
        let arg = self.args.get(self.next)?;
        self.next += 1;
        Some(match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_string(), Some(value.to_string()))
            }
            _ => (arg.clone(), None),
        })
    }

    /// The flag's value: the one given after `=`, else the next argument.
    pub(crate) fn value(
        &mut self,
        flag: &str,
        inline: &mut Option<String>,
    ) -> Result<String, String> {
        if let Some(value) = inline.take() {
            return Ok(value);
        }
        let value = self.args.get(self.next).cloned().ok_or(format!("{flag} needs a value"))?;
        self.next += 1;
        Ok(value)
    }
}

pub fn parse(args: &[String]) -> Result<Command, String> {
    if args.first().map(String::as_str) == Some("compare") {
        return Ok(match crate::compare::options::parse(&args[1..])? {
            Some(options) => Command::Compare(Box::new(options)),
            None => Command::CompareHelp,
        });
    }
    let mut config = Config::default();
    let mut output = Output::default();
    let mut pipeline = None;
    let mut cursor = Args::new(args);
    while let Some((flag, mut inline)) = cursor.next_flag() {
        let mut value = || cursor.value(&flag, &mut inline);
        let w = &mut config.workload;
        match flag.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "-s" | "--server" | "--servers" => {
                config.servers = value()?.split(',').map(|s| s.trim().to_string()).collect()
            }
            "-P" | "--protocol" => config.protocol = Protocol::parse(&value()?)?,
            "-t" | "--threads" => config.threads = number(&flag, &value()?)?,
            "-c" | "--connections" | "--clients" => config.connections = number(&flag, &value()?)?,
            "--pipeline" => pipeline = Some(number(&flag, &value()?)?),
            "--ratio" => w.ratio = Ratio::parse(&value()?)?,
            "--keys-per-get" => w.keys_per_get = number(&flag, &value()?)?,
            "--key-size" => (w.key_size, w.key_size_max) = key_sizes(&flag, &value()?)?,
            "--value-size" | "--data-size" => w.value_sizes = ValueSizes::parse(&value()?)?,
            "--keyspace" => w.keyspace = number(&flag, &value()?)?,
            "--key-distribution" | "--key-pattern" => {
                w.key_distribution = parse_distribution(&value()?)?
            }
            "--ttl" => w.ttl_secs = number(&flag, &value()?)?,
            "--preload" => config.preload = true,
            "--warmup" => config.warmup = parse_duration(&value()?)?,
            "--duration" | "--test-time" => {
                config.stop = Stop::Duration(parse_duration(&value()?)?)
            }
            "--requests" => config.stop = Stop::Requests(number(&flag, &value()?)?),
            "--rate" => config.rate_per_sec = Some(number(&flag, &value()?)?),
            "--seed" => config.seed = number(&flag, &value()?)?,
            "--ketama-names" => {
                config.ketama_names = match value()?.as_str() {
                    "twemproxy" => KetamaNames::Twemproxy,
                    "libmemcached" => KetamaNames::Libmemcached,
                    other => {
                        return Err(format!(
                            "--ketama-names {other}: want twemproxy or libmemcached"
                        ))
                    }
                }
            }
            "--cpus" => {
                config.pin_cpus = value()?
                    .split(',')
                    .map(|c| number("--cpus", c.trim()))
                    .collect::<Result<_, _>>()?
            }
            "--json" => output.json = true,
            "-q" | "--quiet" => output.quiet = true,
            other => return Err(format!("unknown option {other} (see --help)")),
        }
    }
    config.pipeline = pipeline.unwrap_or(if config.rate_per_sec.is_some() { 16 } else { 1 });
    Ok(Command::Run(Box::new(config), output))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    /// Goal: the example command line parses to the intended configuration.
    #[test]
    fn memtier_style_line() {
        let line = "--server 127.0.0.1:11211 --protocol memcache --connections 50 --ratio 0:1 \
                    --key-size 20 --value-size 20 --keyspace 10000 --duration 5s --json";
        let Ok(Command::Run(config, output)) = parse(&args(line)) else { panic!("parses") };
        assert!(output.json && !output.quiet);
        assert_eq!(config.connections, 50);
        assert_eq!(config.workload.ratio, Ratio { sets: 0, gets: 1 });
        assert_eq!(config.stop, Stop::Duration(Duration::from_secs(5)));
        assert_eq!(config.pipeline, 1);
    }

    #[test]
    fn other_flags() {
        let line =
            "-s a:1,b:2 -P resp --rate=1000 --key-distribution zipf:1.2 --value-size 100:3,1000:1 \
                    --requests 500 --warmup 250ms --cpus 0,1 --preload --ttl 60";
        let Ok(Command::Run(config, _)) = parse(&args(line)) else { panic!("parses") };
        assert_eq!(config.servers, vec!["a:1", "b:2"]);
        assert_eq!(config.protocol, Protocol::Resp);
        assert_eq!((config.rate_per_sec, config.pipeline), (Some(1000), 16));
        assert_eq!(config.workload.key_distribution, KeyDistribution::Zipf { exponent: 1.2 });
        assert_eq!(config.stop, Stop::Requests(500));
        assert_eq!(config.warmup, Duration::from_millis(250));
        assert_eq!(config.pin_cpus, vec![0, 1]);
        assert!(config.preload);
        assert_eq!(config.workload.ttl_secs, 60);
        assert!(parse(&args("--bogus")).is_err());
        assert!(parse(&args("--threads")).is_err());
        assert_eq!(parse(&args("-h")), Ok(Command::Help));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("x").is_err());
    }
}
