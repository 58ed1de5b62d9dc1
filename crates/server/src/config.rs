//! The command line and the optional TOML file: memcached's flags, so an operator's existing
//! command line works, plus Spinel's own long options.
//!
//! Precedence: defaults, then the TOML file (`--config FILE`, keys are the long flag names),
//! then the command line.

use std::{fmt::Write as _, net::IpAddr};

use rt::IoChoice;

/// Everything the server is told at start.
#[derive(Debug, Clone)]
pub struct Config {
    pub port: u16,
    pub listen: Vec<IpAddr>,
    pub listen_text: String,
    pub memory_limit_mib: u64,
    pub conn_limit: u64,
    pub threads: usize,
    pub max_item_size_bytes: u64,
    pub disable_evictions: bool,
    pub disable_cas: bool,
    pub verbosity: u32,
    pub user: Option<String>,
    pub disable_flush_all: bool,
    pub protocol: String,
    pub listen_backlog: u32,
    pub max_reqs_per_event: u32,
    pub enable_shutdown: bool,
    pub resp_port: u16,
    pub io: IoChoice,
    pub pin: bool,
    pub busy_poll_us: u64,
    pub idle_timeout_secs: u64,
    /// Pending output above this cuts a connection off (one batch produced that much).
    pub output_limit_mib: u64,
    /// Pending output at or above this stops reading from a connection (backpressure).
    pub output_pause_kib: u64,
    /// All connections' buffers together: above this every connection pauses sooner.
    pub conn_buffers_mib: u64,
    pub config_file: Option<String>,
    /// Start-up warnings (ignored memcached suboptions), printed once logging is set up.
    pub warnings: Vec<String>,
}

impl Config {
    pub fn output_pause_bytes(&self) -> usize {
        (self.output_pause_kib as usize) << 10
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            port: 11211,
            listen: vec![IpAddr::from([127, 0, 0, 1])],
            listen_text: "127.0.0.1".into(),
            memory_limit_mib: 64,
            conn_limit: 1024,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            max_item_size_bytes: 1 << 20,
            disable_evictions: false,
            disable_cas: false,
            verbosity: 0,
            user: None,
            disable_flush_all: false,
            protocol: "auto".into(),
            listen_backlog: 1024,
            max_reqs_per_event: 20,
            enable_shutdown: false,
            resp_port: 6379,
            io: IoChoice::Auto,
            pin: false,
            busy_poll_us: 0,
            idle_timeout_secs: 0,
            output_limit_mib: 64,
            output_pause_kib: 32,
            conn_buffers_mib: 64,
            config_file: None,
            warnings: Vec::new(),
        }
    }
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Parsed {
    Run(Box<Config>),
    Help,
    Version,
}

/// Threads beyond this are refused (memcached warns past 64; 256 loops is plenty).
pub const THREADS_MAX: usize = 256;
/// memcached's bounds on `-I`.
pub const ITEM_SIZE_MIN_BYTES: u64 = 1024;
pub const ITEM_SIZE_MAX_BYTES: u64 = 1024 * 1024 * 1024;

/// memcached `-o` suboptions that have no meaning in Spinel: accepted with a warning, so an
/// existing command line starts. `idle_timeout` is not here: it has a meaning.
const IGNORED_SUBOPTIONS: &[&str] = &[
    "maxconns_fast",
    "no_maxconns_fast",
    "hashpower",
    "tail_repair_time",
    "lru_crawler",
    "no_lru_crawler",
    "lru_crawler_sleep",
    "lru_crawler_tocrawl",
    "lru_maintainer",
    "no_lru_maintainer",
    "lru_segmented",
    "no_lru_segmented",
    "hot_lru_pct",
    "warm_lru_pct",
    "hot_max_factor",
    "warm_max_factor",
    "temporary_ttl",
    "watcher_logbuf_size",
    "worker_logbuf_size",
    "track_sizes",
    "no_hashexpand",
    "modern",
    "no_modern",
    "slab_reassign",
    "no_slab_reassign",
    "slab_automove",
    "no_slab_automove",
    "slab_automove_ratio",
    "slab_automove_window",
    "slab_chunk_max",
    "slab_sizes",
    "inline_ascii_response",
    "no_inline_ascii_response",
    "read_buf_mem_limit",
    "resp_obj_mem_limit",
    "drop_privileges",
    "no_drop_privileges",
    "meta_response_old",
    "lru_pct_hot",
    "ssl_chain_cert",
    "ssl_key",
    "ssl_verify_mode",
    "ssl_keyformat",
    "ssl_ciphers",
    "ssl_ca_cert",
    "ssl_wbuf_size",
    "ssl_session_cache",
    "ssl_kernel_tls",
    "ssl_min_version",
    "ext_path",
    "ext_page_size",
    "ext_wbuf_size",
    "ext_threads",
    "ext_io_depth",
    "ext_item_size",
    "ext_item_age",
    "ext_low_ttl",
    "ext_recache_rate",
    "ext_compact_under",
    "ext_drop_under",
    "ext_max_sleep",
    "ext_max_frag",
    "ext_drop_unread",
    "slab_automove_freeratio",
    "no_slab_automove_freeratio",
];

pub const HELP: &str = "\
spinel: an in-memory cache speaking memcached (text + meta) and Redis (RESP2/3) on one store

Usage: spinel [options]

memcached-compatible options:
  -p, --port <num>              memcached TCP port (default 11211)
  -l, --listen <addr,...>       addresses to listen on, comma-separated (default 127.0.0.1;
                                not every interface: give 0.0.0.0 to expose the server)
  -m, --memory-limit <mib>      item memory in MiB, index included (default 64)
  -c, --conn-limit <num>        open connections at most (default 1024); one more is told
                                `ERROR Too many open connections` (Redis port: -ERR max number
                                of clients reached) and closed
  -t, --threads <num>           worker threads, one event loop each (default: CPUs)
  -I, --max-item-size <size>    largest item, key + value; suffix k or m (default 1m,
                                1k..1024m)
  -M, --disable-evictions       return an error when memory is full instead of evicting
  -C, --disable-cas             do not report CAS values (they are still kept)
  -v, -vv, --verbose            log start-up details (-v), and connections (-vv)
  -u, --user <name>             drop privileges to this user after binding (when root)
  -U, --udp-port <num>          only 0 is accepted: Spinel does not speak UDP
  -o, --extended <k=v,...>      memcached suboptions: idle_timeout=<secs> applies; ones that
                                mean nothing here (slab_*, lru_*, hashpower, ...) are
                                accepted with a warning; unknown ones refuse to start
  -F, --disable-flush-all       refuse flush_all / FLUSHALL / FLUSHDB
  -B, --protocol <name>         auto or ascii (binary is not spoken)
  -b, --listen-backlog <num>    listen backlog (default 1024)
  -R, --max-reqs-per-event <n>  requests executed for one connection before the others get
                                their turn (default 20); the rest of its input waits a turn
  -A, --enable-shutdown         allow the `shutdown` command
  -h, --help                    this text
  -V, --version                 print the version

Spinel options:
      --resp-port <num>         Redis port (default 6379; 0 disables it)
      --io <auto|uring|epoll>   I/O back end (default auto: io_uring when the kernel
                                allows it, else epoll, logged at start)
      --pin                     pin worker thread i to CPU i
      --busy-poll-us <us>       spin up to this long for completions before sleeping (0: off)
      --idle-timeout <secs>     close connections idle this long (0: never; default 0)
      --output-pause <kib>      stop reading a connection whose unsent replies reach this,
                                until the client has read half of them (default 32)
      --output-limit <mib>      close a connection whose unsent replies pass this in one
                                batch (default 64)
      --conn-buffers <mib>      bound on all connections' buffers together; past it every
                                connection pauses at 16 KiB of unsent replies (default 64)
      --config <file>           TOML file; keys are the long option names
                                (port = 11211, listen = \"127.0.0.1\", memory-limit = 64, ...)

Signals: SIGTERM or SIGINT stop accepting, send replies in flight and exit 0.
";

/// Parses `args` (without the program name).
pub fn parse(args: &[String]) -> Result<Parsed, String> {
    let mut config = Config::default();
    if let Some(path) = config_file_arg(args)? {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read config file {path}: {e}"))?;
        apply_toml(&mut config, &text).map_err(|e| format!("config file {path}: {e}"))?;
        config.config_file = Some(path);
    }
    let mut i = 0;
    while i < args.len() {
        let (name, inline_value) = split_arg(&args[i]);
        let name = canonical(&name).ok_or_else(|| format!("unknown option '{}'", args[i]))?;
        match name {
            "help" => return Ok(Parsed::Help),
            "version" => return Ok(Parsed::Version),
            "verbose" => config.verbosity += verbose_count(&args[i]),
            flag if is_switch(flag) => apply(&mut config, flag, "true")?,
            option => {
                let value = match inline_value {
                    Some(v) => v,
                    None => {
                        i += 1;
                        args.get(i)
                            .cloned()
                            .ok_or_else(|| format!("option '{option}' needs a value"))?
                    }
                };
                apply(&mut config, option, &value)?;
            }
        }
        i += 1;
    }
    validate(&config)?;
    Ok(Parsed::Run(Box::new(config)))
}

fn config_file_arg(args: &[String]) -> Result<Option<String>, String> {
    for (i, arg) in args.iter().enumerate() {
        if let Some(path) = arg.strip_prefix("--config=") {
            return Ok(Some(path.to_string()));
        }
        if arg == "--config" {
            return args
                .get(i + 1)
                .cloned()
                .map(Some)
                .ok_or("option 'config' needs a value".into());
        }
    }
    Ok(None)
}

/// `--name=value` → (name, Some(value)); `-p11211` → ("-p", Some("11211")); `-vv` stays.
fn split_arg(arg: &str) -> (String, Option<String>) {
    if let Some(long) = arg.strip_prefix("--") {
        return match long.split_once('=') {
            Some((name, value)) => (format!("--{name}"), Some(value.to_string())),
            None => (arg.to_string(), None),
        };
    }
    let bytes = arg.as_bytes();
    if bytes.len() > 2 && bytes[0] == b'-' && bytes[1] != b'v' {
        return (arg[..2].to_string(), Some(arg[2..].to_string()));
    }
    (arg.to_string(), None)
}

fn verbose_count(arg: &str) -> u32 {
    match arg.strip_prefix('-') {
        Some(rest) if !rest.starts_with('-') => rest.len() as u32,
        _ => 1,
    }
}

/// Maps a short or long flag to its long name.
fn canonical(flag: &str) -> Option<&'static str> {
    const NAMES: &[(&str, &str)] = &[
        ("-p", "port"),
        ("-l", "listen"),
        ("-m", "memory-limit"),
        ("-c", "conn-limit"),
        ("-t", "threads"),
        ("-I", "max-item-size"),
        ("-M", "disable-evictions"),
        ("-C", "disable-cas"),
        ("-u", "user"),
        ("-U", "udp-port"),
        ("-o", "extended"),
        ("-F", "disable-flush-all"),
        ("-B", "protocol"),
        ("-b", "listen-backlog"),
        ("-R", "max-reqs-per-event"),
        ("-A", "enable-shutdown"),
        ("-h", "help"),
        ("-V", "version"),
    ];
    if flag.starts_with("-v") && flag.bytes().skip(1).all(|b| b == b'v') && !flag.starts_with("--")
    {
        return Some("verbose");
    }
    if let Some(long) = flag.strip_prefix("--") {
        return LONG_NAMES.iter().copied().find(|&name| name == long);
    }
    NAMES.iter().find(|(short, _)| *short == flag).map(|(_, long)| *long)
}

const LONG_NAMES: &[&str] = &[
    "port",
    "listen",
    "memory-limit",
    "conn-limit",
    "threads",
    "max-item-size",
    "disable-evictions",
    "disable-cas",
    "verbose",
    "user",
    "udp-port",
    "extended",
    "disable-flush-all",
    "protocol",
    "listen-backlog",
    "max-reqs-per-event",
    "enable-shutdown",
    "help",
    "version",
    "resp-port",
    "io",
    "pin",
    "busy-poll-us",
    "idle-timeout",
    "output-limit",
    "output-pause",
    "conn-buffers",
    "config",
];

fn is_switch(name: &str) -> bool {
    matches!(
        name,
        "disable-evictions" | "disable-cas" | "disable-flush-all" | "enable-shutdown" | "pin"
    )
}

/// Sets one option from its text value.
fn apply(config: &mut Config, name: &str, value: &str) -> Result<(), String> {
    let bad = |what: &str| format!("invalid value '{value}' for option '{name}': {what}");
    match name {
        "port" => config.port = value.parse().map_err(|_| bad("expected a port 0-65535"))?,
        "resp-port" => {
            config.resp_port = value.parse().map_err(|_| bad("expected a port 0-65535"))?
        }
        "listen" => {
            config.listen = parse_listen(value).map_err(|e| bad(&e))?;
            config.listen_text = value.to_string();
        }
        "memory-limit" => config.memory_limit_mib = positive(value).map_err(|e| bad(&e))?,
        "conn-limit" => config.conn_limit = positive(value).map_err(|e| bad(&e))?,
        "threads" => config.threads = positive(value).map_err(|e| bad(&e))? as usize,
        "max-item-size" => config.max_item_size_bytes = parse_size(value).map_err(|e| bad(&e))?,
        "user" => config.user = Some(value.to_string()),
        "udp-port" => {
            if value != "0" {
                return Err(bad("Spinel does not speak UDP; only -U 0 is accepted"));
            }
        }
        "extended" => apply_extended(config, value)?,
        "protocol" => match value {
            "auto" | "ascii" | "auto-negotiate" => config.protocol = value.to_string(),
            "binary" => return Err(bad("the binary protocol is not spoken; use auto or ascii")),
            _ => return Err(bad("expected auto or ascii")),
        },
        "listen-backlog" => {
            config.listen_backlog = positive(value).map_err(|e| bad(&e))?.min(65535) as u32
        }
        "max-reqs-per-event" => {
            config.max_reqs_per_event = positive(value).map_err(|e| bad(&e))?.min(1 << 20) as u32
        }
        "io" => {
            config.io = match value {
                "auto" => IoChoice::Auto,
                "uring" | "io_uring" => IoChoice::Uring,
                "epoll" => IoChoice::Epoll,
                _ => return Err(bad("expected auto, uring or epoll")),
            }
        }
        "busy-poll-us" => {
            config.busy_poll_us = value.parse().map_err(|_| bad("expected microseconds"))?
        }
        "idle-timeout" => {
            config.idle_timeout_secs = value.parse().map_err(|_| bad("expected seconds"))?
        }
        "output-limit" => config.output_limit_mib = positive(value).map_err(|e| bad(&e))?,
        "output-pause" => {
            config.output_pause_kib = positive(value).map_err(|e| bad(&e))?.min(1 << 20)
        }
        "conn-buffers" => {
            config.conn_buffers_mib = positive(value).map_err(|e| bad(&e))?.min(1 << 30)
        }
        "verbose" => config.verbosity = value.parse().map_err(|_| bad("expected a level"))?,
        "config" => {}
        switch if is_switch(switch) => {
            let on = parse_bool(value).ok_or_else(|| bad("expected true or false"))?;
            match switch {
                "disable-evictions" => config.disable_evictions = on,
                "disable-cas" => config.disable_cas = on,
                "disable-flush-all" => config.disable_flush_all = on,
                "enable-shutdown" => config.enable_shutdown = on,
                _ => config.pin = on,
            }
        }
        _ => return Err(format!("unknown option '{name}'")),
    }
    Ok(())
}

fn parse_bool(value: &str) -> Option<bool> {
    match value {
        "true" | "yes" | "on" | "1" => Some(true),
        "false" | "no" | "off" | "0" => Some(false),
        _ => None,
    }
}

fn positive(value: &str) -> Result<u64, String> {
    match value.parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err("expected a positive integer".into()),
    }
}

/// memcached's `-I` syntax: bytes, or a number with a `k`/`m` suffix.
fn parse_size(value: &str) -> Result<u64, String> {
    let lower = value.to_ascii_lowercase();
    let (digits, unit) = match lower.as_bytes().last() {
        Some(b'k') => (&lower[..lower.len() - 1], 1024),
        Some(b'm') => (&lower[..lower.len() - 1], 1024 * 1024),
        _ => (&lower[..], 1),
    };
    let bytes = digits.parse::<u64>().map_err(|_| "expected bytes, or a size like 512k or 2m")?;
    let bytes = bytes.checked_mul(unit).ok_or("too large")?;
    if !(ITEM_SIZE_MIN_BYTES..=ITEM_SIZE_MAX_BYTES).contains(&bytes) {
        return Err(format!("must be between {ITEM_SIZE_MIN_BYTES} bytes and 1024m"));
    }
    Ok(bytes)
}

fn parse_listen(value: &str) -> Result<Vec<IpAddr>, String> {
    let mut addrs = Vec::new();
    for part in value.split(',').map(str::trim) {
        let host = part.strip_prefix('[').and_then(|p| p.strip_suffix(']')).unwrap_or(part);
        let addr = match host {
            "localhost" => IpAddr::from([127, 0, 0, 1]),
            _ => host.parse().map_err(|_| format!("'{part}' is not an IP address"))?,
        };
        if !addrs.contains(&addr) {
            addrs.push(addr);
        }
    }
    Ok(addrs)
}

/// `-o key=value,key2,...`.
fn apply_extended(config: &mut Config, value: &str) -> Result<(), String> {
    for item in value.split(',').filter(|s| !s.is_empty()) {
        let (key, arg) = item.split_once('=').unwrap_or((item, ""));
        if key == "idle_timeout" {
            config.idle_timeout_secs =
                arg.parse().map_err(|_| format!("invalid value for -o idle_timeout: '{arg}'"))?;
        } else if IGNORED_SUBOPTIONS.contains(&key) || key.starts_with("ext_") {
            config.warnings.push(format!("-o {key}: memcached option with no effect in Spinel"));
        } else {
            return Err(format!("unknown -o option '{key}' (not a memcached option either)"));
        }
    }
    Ok(())
}

/// Applies a TOML file whose keys are the long option names.
fn apply_toml(config: &mut Config, text: &str) -> Result<(), String> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
    for (key, value) in &table {
        if !LONG_NAMES.contains(&key.as_str()) || matches!(key.as_str(), "help" | "version") {
            return Err(format!("unknown key '{key}'"));
        }
        let text = match value {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(n) => n.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => return Err(format!("key '{key}': unsupported value {other:?}")),
        };
        apply(config, key, &text)?;
    }
    Ok(())
}

fn validate(config: &Config) -> Result<(), String> {
    if config.threads > THREADS_MAX {
        return Err(format!("-t {}: at most {THREADS_MAX} threads", config.threads));
    }
    let memory_bytes = config.memory_limit_mib.saturating_mul(1 << 20);
    if config.max_item_size_bytes > memory_bytes / 2 {
        return Err(format!(
            "-I {} is more than half of -m {} MiB: raise -m or lower -I",
            config.max_item_size_bytes, config.memory_limit_mib
        ));
    }
    if config.resp_port != 0 && config.resp_port == config.port && config.port != 0 {
        return Err("--resp-port and -p must differ".into());
    }
    Ok(())
}

/// A one-line summary for the start-up log.
pub fn describe(config: &Config) -> String {
    let mut line = String::new();
    let _ = write!(
        line,
        "memcached port {} resp port {} on {} | {} MiB | {} threads | item max {} | conns {}",
        config.port,
        config.resp_port,
        config.listen_text,
        config.memory_limit_mib,
        config.threads,
        config.max_item_size_bytes,
        config.conn_limit
    );
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Config, String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match parse(&args)? {
            Parsed::Run(config) => Ok(*config),
            other => panic!("expected a config, got {other:?}"),
        }
    }

    #[test]
    fn memcached_command_lines_parse() {
        let c = run(&["-p", "22122", "-m1024", "-c", "4096", "-t", "2", "-vv", "-U", "0"]).unwrap();
        assert_eq!((c.port, c.memory_limit_mib, c.conn_limit, c.threads), (22122, 1024, 4096, 2));
        assert_eq!(c.verbosity, 2);
        let c =
            run(&["-I", "2m", "-M", "-C", "-l", "127.0.0.1,::1", "-o", "slab_reassign"]).unwrap();
        assert_eq!(c.max_item_size_bytes, 2 << 20);
        assert!(c.disable_evictions && c.disable_cas);
        assert_eq!(c.listen.len(), 2);
        assert_eq!(c.warnings.len(), 1);
        let c = run(&["-o", "idle_timeout=5,hashpower=20"]).unwrap();
        assert_eq!(c.idle_timeout_secs, 5);
    }

    #[test]
    fn invalid_values_are_refused() {
        for args in [
            &["-c", "0"][..],
            &["-t", "0"],
            &["-l", "nonsense"],
            &["-o", "no_such_option=1"],
            &["-U", "11211"],
            &["-I", "512"],
            &["-I", "2g"],
            &["-p", "70000"],
            &["--io", "kqueue"],
            &["--bogus"],
            &["-p"],
            &["-m", "1", "-I", "1m"],
        ] {
            assert!(run(args).is_err(), "{args:?} accepted");
        }
    }

    #[test]
    fn long_options_and_toml() {
        let c = run(&["--resp-port=0", "--io", "epoll", "--pin", "--busy-poll-us", "50"]).unwrap();
        assert_eq!((c.resp_port, c.io, c.pin, c.busy_poll_us), (0, IoChoice::Epoll, true, 50));
        let mut config = Config::default();
        apply_toml(&mut config, "port = 1\nlisten = \"::1\"\npin = true\nmemory-limit = 8")
            .unwrap();
        assert_eq!((config.port, config.pin, config.memory_limit_mib), (1, true, 8));
        assert!(apply_toml(&mut config, "nope = 1").is_err());
    }

    #[test]
    fn help_lists_every_option() {
        for name in LONG_NAMES {
            assert!(HELP.contains(&format!("--{name}")), "--{name} missing from help");
        }
    }
}
