//! The command line and the optional TOML file: memcached's flags, so an operator's existing
//! command line works, plus Spinel's own long options.
//!
//! Both are read into one [`Options`] struct (clap for the command line, serde for the file),
//! then layered: defaults, then the file (`--config FILE`), then the command line; the result
//! is checked once and becomes the [`Config`] the server runs with.

mod extended;
mod file;
mod options;
pub mod redis_conf;
mod refused;
mod resolve;
mod tls;
mod values;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_flags;

use std::{fmt::Write as _, net::IpAddr, sync::OnceLock};

use clap::{
    error::{ContextKind, ContextValue, ErrorKind},
    CommandFactory, FromArgMatches,
};
use rt::IoChoice;

pub use file::changed_keys;
pub use tls::{resp as resp_tls_settings, RespFlags};
pub use values::LogFormat;

use options::Options;
use resolve::{effective_options, resolve};
pub use values::McPort;

/// Everything the server is told at start.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub port: McPort,
    /// Neither the command line nor the file named the memcached TCP port (nor `-U`, which
    /// moves it): 11211 is only a default, skipped at start when in use (`listen`).
    pub port_is_default: bool,
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
    /// memcached `-U`: the UDP port (0 = off).
    pub udp_port: McPort,
    /// memcached `-s`: a Unix socket path instead of the memcached TCP and UDP ports.
    pub unix_socket: Option<String>,
    /// memcached `-a`: the socket file's permission bits.
    pub unix_mask: u32,
    /// memcached `-d`: detach into the background once the ports listen.
    pub daemon: bool,
    /// memcached `-P`: where to write the process id.
    pub pidfile: Option<String>,
    /// memcached `-k`: mlockall.
    pub lock_memory: bool,
    /// memcached `-r`: raise the core size limit to the hard limit.
    pub enable_coredumps: bool,
    pub disable_flush_all: bool,
    /// memcached `-S`: binary SASL, credentials from `MEMCACHED_SASL_PWDB`'s file, else the
    /// Redis ACL users.
    pub enable_sasl: bool,
    /// memcached `-Y`: text-protocol authentication from this file.
    pub auth_file: Option<String>,
    /// `-X`
    pub disable_dumping: bool,
    /// `-W`
    pub disable_watch: bool,
    /// `-D`: the prefix delimiter, which also turns `stats detail` on from the start.
    pub prefix_delimiter: Option<u8>,
    pub protocol: String,
    pub listen_backlog: u32,
    pub max_reqs_per_event: u32,
    pub enable_shutdown: bool,
    pub resp_port: u16,
    /// `--resp-port` not named: 6379 is only a default, skipped at start when in use.
    pub resp_port_is_default: bool,
    /// Redis `requirepass` (None: the `default` user is `nopass`).
    pub requirepass: Option<String>,
    /// Redis `aclfile`.
    pub aclfile: Option<String>,
    /// memcached `-e`: the snapshot saved at a graceful stop and loaded at start.
    pub memory_file: Option<String>,
    /// Redis `dir` and `dbfilename`.
    pub dir: String,
    pub dbfilename: String,
    /// Redis `protected-mode`.
    pub protected_mode: bool,
    /// Redis `cluster-config-file`, relative to `dir`, when `cluster-enabled` is yes.
    pub cluster_config_file: Option<String>,
    /// `--metrics-port` (0: none).
    pub metrics_port: u16,
    /// memcached `-Z` and its `-o ssl_*` suboptions as given (for `--print-config`), and the
    /// settings they make: TLS on the memcached TCP ports.
    pub enable_ssl: bool,
    pub ssl_suboptions: Vec<(String, String)>,
    pub memcache_tls: Option<crate::tls::Settings>,
    /// Redis `tls-port` (0: none) and its `tls-*` flags as given, and the settings they make.
    pub tls_port: u16,
    pub tls_cert_file: Option<String>,
    pub tls_key_file: Option<String>,
    pub tls_ca_cert_file: Option<String>,
    pub tls_auth_clients: String,
    pub tls_protocols: Option<String>,
    pub resp_tls: Option<crate::tls::Settings>,
    pub io: IoChoice,
    pub pin: bool,
    pub busy_poll_us: u64,
    /// `--zerocopy-min-bytes`: lent values of one batch from this many bytes leave
    /// zero-copy (`rt::LoopConfig::zerocopy_min_bytes`); 0 is off.
    pub zerocopy_min_bytes: u64,
    pub idle_timeout_secs: u64,
    /// `--noevict-dbs`: databases never evicted, bit n for database n.
    pub noevict_dbs: u16,
    /// `--noevict-prefixes`: key prefixes never evicted.
    pub noevict_prefixes: Vec<Vec<u8>>,
    /// memcached `-o read_buf_mem_limit`: connections holding a partly received request,
    /// 16 KiB counted each, over all threads; 0 is no limit.
    pub read_buf_mem_limit_mib: u64,
    /// Pending output above this cuts a connection off (one batch produced that much).
    pub output_limit_mib: u64,
    /// Pending output at or above this stops reading from a connection (backpressure).
    pub output_pause_kib: u64,
    /// All connections' buffers together: above this every connection pauses sooner.
    pub conn_buffers_mib: u64,
    /// How log lines are written.
    pub log_format: LogFormat,
    pub config_file: Option<String>,
    /// `--redis-conf`: the file, and its parameters that are not options here, for CONFIG
    /// SET at start.
    pub redis_conf_file: Option<String>,
    /// redis.conf's parameters for CONFIG SET, `user` lines (never beside an ACL file) and
    /// `rename-command` lines.
    pub redis_conf: redis_conf::Lines,
    /// memcached `-o` suboptions given that have no effect here, kept for `--print-config`.
    pub ignored_suboptions: Vec<(String, String)>,
    /// Start-up warnings (ignored memcached suboptions), printed once logging is set up.
    pub warnings: Vec<String>,
    /// The command line as given (without the program name), for [`reload`].
    pub args: Vec<String>,
}

impl Config {
    pub fn output_pause_bytes(&self) -> usize {
        (self.output_pause_kib as usize) << 10
    }

    /// The memcached features these `-o` suboptions leave on (the last one given wins;
    /// `no_modern` turns all of them off). Spinel has none of these threads and mechanisms,
    /// but memcached leaves their lines out of `stats` when they are off, and tools that
    /// parse that list expect the same lines for the same command line.
    pub fn memcached_features(&self) -> exec::MemcachedFeatures {
        let mut on = exec::MemcachedFeatures::default();
        for (key, value) in &self.ignored_suboptions {
            match key.as_str() {
                "temporary_ttl" => on.temporary_ttl_secs = value.parse().ok(),
                "lru_crawler" | "no_lru_crawler" => on.lru_crawler = key == "lru_crawler",
                "lru_maintainer" | "no_lru_maintainer" => {
                    on.lru_maintainer = key == "lru_maintainer"
                }
                "maxconns_fast" | "no_maxconns_fast" => on.maxconns_fast = key == "maxconns_fast",
                "slab_reassign" | "no_slab_reassign" => on.slab_reassign = key == "slab_reassign",
                "no_slab_automove" => on.slab_automove = false,
                "no_modern" => on = exec::MemcachedFeatures::none(),
                _ => {}
            }
        }
        on
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            port: McPort::Port(11211),
            port_is_default: true,
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
            udp_port: McPort::Off,
            unix_socket: None,
            unix_mask: 0o700,
            daemon: false,
            pidfile: None,
            lock_memory: false,
            enable_coredumps: false,
            disable_flush_all: false,
            enable_sasl: false,
            auth_file: None,
            disable_dumping: false,
            disable_watch: false,
            prefix_delimiter: None,
            protocol: "auto".into(),
            listen_backlog: 1024,
            max_reqs_per_event: 20,
            enable_shutdown: false,
            resp_port: 6379,
            resp_port_is_default: true,
            requirepass: None,
            aclfile: None,
            memory_file: None,
            dir: ".".into(),
            dbfilename: "dump.rdb".into(),
            protected_mode: true,
            cluster_config_file: None,
            metrics_port: 0,
            enable_ssl: false,
            ssl_suboptions: Vec::new(),
            memcache_tls: None,
            tls_port: 0,
            tls_cert_file: None,
            tls_key_file: None,
            tls_ca_cert_file: None,
            tls_auth_clients: "yes".into(),
            tls_protocols: None,
            resp_tls: None,
            io: IoChoice::Auto,
            pin: false,
            busy_poll_us: 0,
            zerocopy_min_bytes: 0,
            idle_timeout_secs: 0,
            noevict_dbs: 0,
            noevict_prefixes: Vec::new(),
            read_buf_mem_limit_mib: 0,
            output_limit_mib: 64,
            output_pause_kib: 32,
            conn_buffers_mib: 64,
            log_format: LogFormat::Text,
            config_file: None,
            redis_conf_file: None,
            redis_conf: redis_conf::Lines::default(),
            ignored_suboptions: Vec::new(),
            warnings: Vec::new(),
            args: Vec::new(),
        }
    }
}

/// What the command line asks for.
#[derive(Debug)]
pub enum Parsed {
    Run(Box<Config>),
    /// Text for stdout, then exit 0: help, version, `--print-config`, `--generate`.
    Print(String),
}

/// `-i`: memcached prints its own and libevent's license; this is Spinel's.
const LICENSE_TEXT: &str = concat!(
    "spinel ",
    env!("CARGO_PKG_VERSION"),
    " is licensed under the ",
    env!("CARGO_PKG_LICENSE"),
    " license; the crates it is built from carry their own licenses (cargo metadata lists them).\n"
);

/// Threads beyond this are refused (memcached warns past 64; 256 loops is plenty).
pub const THREADS_MAX: usize = 256;

/// `--version`: Spinel's version, the commit it was built from, and the memcached version
/// it reports to clients (`version`, `stats`).
pub fn version_text() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        format!(
            "{} (git {}, memcached {})",
            env!("CARGO_PKG_VERSION"),
            env!("SPINEL_GIT_COMMIT"),
            exec::MEMCACHED_VERSION
        )
    })
}

/// The full command definition: the options plus memcached's refused flags (hidden).
fn command() -> clap::Command {
    refused::add_to(Options::command())
}

/// Parses `args` (without the program name), reading the `--config` file if one is given.
pub fn parse(args: &[String]) -> Result<Parsed, String> {
    let argv =
        std::iter::once("spinel".to_string()).chain(args.iter().map(|arg| drop_verbose_value(arg)));
    let matches = match command().try_get_matches_from(argv) {
        Ok(matches) => matches,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            return Ok(Parsed::Print(e.render().to_string()))
        }
        Err(e) => return Err(one_line(&e)),
    };
    refused::check(&matches)?;
    let cli = Options::from_arg_matches(&matches).map_err(|e| one_line(&e))?;
    if let Some(what) = cli.generate {
        return Ok(Parsed::Print(file::generate(what, command())));
    }
    if cli.license {
        return Ok(Parsed::Print(LICENSE_TEXT.to_string()));
    }
    let from_file = match &cli.config {
        Some(path) => file::read(path)?,
        None => Options::default(),
    };
    let print_config = cli.print_config;
    let mut redis_conf = match cli.redis_conf.as_ref().or(from_file.redis_conf.as_ref()) {
        Some(path) => redis_conf::read(path)?,
        None => redis_conf::RedisConf::default(),
    };
    let from_redis_conf = std::mem::take(&mut redis_conf.options);
    let layered = from_redis_conf.under(from_file.fold_suboptions()).under(cli.fold_suboptions());
    let mut config = resolve(layered)?;
    if !redis_conf.lines.users.is_empty() && config.aclfile.is_some() {
        // As Redis: two sources of users would leave one silently unused.
        return Err("redis.conf declares users and an ACL file is set: use one or the other".into());
    }
    config.redis_conf = redis_conf.lines;
    config.args = args.to_vec();
    config.warnings.extend(refused::warnings(&matches));
    if print_config {
        return Ok(Parsed::Print(file::render(&config)));
    }
    Ok(Parsed::Run(Box::new(config)))
}

/// memcached's `--verbose` takes an optional value and ignores it (one level, as -v), and
/// the hand-written parser did the same; clap's counter takes no value.
fn drop_verbose_value(arg: &str) -> String {
    match arg.starts_with("--verbose=") {
        true => "--verbose".to_string(),
        false => arg.to_string(),
    }
}

/// Re-reads the configuration file and re-applies the original command line over it, as a
/// SIGHUP reload does. The caller decides which of the changed settings it can apply live.
pub fn reload(config: &Config) -> Result<Config, String> {
    match parse(&config.args)? {
        Parsed::Run(config) => Ok(*config),
        Parsed::Print(_) => Err("the command line asks to print, not to run".into()),
    }
}

/// clap's error as one line: its first line, plus its suggestion when it has one.
fn one_line(error: &clap::Error) -> String {
    let rendered = error.render().to_string();
    let first = rendered.lines().next().unwrap_or_default();
    let mut line = first.trim_start_matches("error: ").to_string();
    if let Some(ContextValue::String(similar)) = error.get(ContextKind::SuggestedArg) {
        let _ = write!(line, " (did you mean '{similar}'?)");
    }
    line
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
