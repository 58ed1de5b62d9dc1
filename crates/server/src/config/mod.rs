//! The command line and the optional TOML file: memcached's flags, so an operator's existing
//! command line works, plus Spinel's own long options.
//!
//! Both are read into one [`Options`] struct (clap for the command line, serde for the file),
//! then layered: defaults, then the file (`--config FILE`), then the command line; the result
//! is checked once and becomes the [`Config`] the server runs with.

mod extended;
mod file;
mod options;
mod refused;
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

use extended::Effect;
use options::Options;
pub use values::McPort;
use values::{Io, ItemSize, Listen, Positive, Protocol};

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
    pub idle_timeout_secs: u64,
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
            dbfilename: "dump.spinel".into(),
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
            idle_timeout_secs: 0,
            read_buf_mem_limit_mib: 0,
            output_limit_mib: 64,
            output_pause_kib: 32,
            conn_buffers_mib: 64,
            log_format: LogFormat::Text,
            config_file: None,
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
    let mut config = resolve(from_file.fold_suboptions().under(cli.fold_suboptions()))?;
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

/// Fills the defaults in under `options` and checks the combination.
fn resolve(options: Options) -> Result<Config, String> {
    // Destructured, not read field by field, so a new option that is not handled here does
    // not compile.
    let Options {
        port,
        listen,
        memory_limit,
        conn_limit,
        threads,
        max_item_size,
        disable_evictions,
        disable_cas,
        verbose,
        user,
        unix_socket,
        unix_mask,
        daemon,
        pidfile,
        lock_memory,
        enable_coredumps,
        udp_port,
        extended,
        disable_flush_all,
        enable_sasl,
        auth_file,
        disable_dumping,
        disable_watch,
        prefix_delimiter,
        protocol,
        listen_backlog,
        max_reqs_per_event,
        enable_shutdown,
        resp_port,
        requirepass,
        aclfile,
        memory_file,
        dir,
        dbfilename,
        protected_mode,
        cluster_enabled,
        cluster_config_file,
        metrics_port,
        enable_ssl,
        tls_port,
        tls_cert_file,
        tls_key_file,
        tls_ca_cert_file,
        tls_auth_clients,
        tls_protocols,
        io,
        pin,
        busy_poll_us,
        idle_timeout,
        read_buf_mem_limit,
        output_limit,
        output_pause,
        conn_buffers,
        log_format,
        config,
        print_config: _,
        generate: _,
        license: _,
    } = options;
    let default = Config::default();
    let listen = listen.unwrap_or(Listen { addrs: default.listen, text: default.listen_text });
    let suboptions: Vec<(String, String)> = extended.into_iter().flat_map(|e| e.0).collect();
    let effect_of = |(k, v): &(String, String)| extended::effect(k, v);
    let (ssl_suboptions, ignored_suboptions): (Vec<_>, Vec<_>) = suboptions
        .into_iter()
        .filter(|item| matches!(effect_of(item), Ok(Effect::Ignored | Effect::Ssl)))
        .partition(|item| matches!(effect_of(item), Ok(Effect::Ssl)));
    let tls_auth_clients = tls_auth_clients.unwrap_or(default.tls_auth_clients);
    let tls_port = tls_port.unwrap_or(0);
    let resp_tls = tls::resp(tls::RespFlags {
        port: tls_port,
        cert_file: tls_cert_file.as_deref(),
        key_file: tls_key_file.as_deref(),
        ca_cert_file: tls_ca_cert_file.as_deref(),
        auth_clients: &tls_auth_clients,
        protocols: tls_protocols.as_deref(),
    })?;
    let warnings = ignored_suboptions
        .iter()
        .map(|(key, _)| format!("-o {key}: memcached option with no effect in Spinel"))
        .collect();
    let config = Config {
        // memcached: -U without -p moves the TCP port too.
        port: port.unwrap_or(match udp_port {
            Some(udp) if udp.is_on() => udp,
            _ => default.port,
        }),
        port_is_default: port.is_none() && !udp_port.is_some_and(McPort::is_on),
        udp_port: udp_port.unwrap_or(default.udp_port),
        listen: listen.addrs,
        listen_text: listen.text,
        memory_limit_mib: memory_limit.map_or(default.memory_limit_mib, |m| m.0),
        conn_limit: conn_limit.map_or(default.conn_limit, |c| c.0),
        threads: threads.map_or(default.threads, |t| t.0 as usize),
        max_item_size_bytes: max_item_size.map_or(default.max_item_size_bytes, |s| s.0),
        disable_evictions,
        disable_cas,
        verbosity: u32::from(verbose),
        user,
        unix_socket,
        unix_mask: unix_mask.map_or(default.unix_mask, |m| m.0),
        daemon,
        pidfile,
        lock_memory,
        enable_coredumps,
        disable_flush_all,
        protocol: binding_protocol(protocol.map(|p| p.0), enable_sasl, auth_file.is_some())?,
        enable_sasl,
        auth_file,
        disable_dumping,
        disable_watch,
        // memcached takes the first byte and refuses an empty value.
        prefix_delimiter: match prefix_delimiter {
            Some(text) => Some(*text.as_bytes().first().ok_or("-D: no delimiter specified")?),
            None => None,
        },
        listen_backlog: listen_backlog.map_or(default.listen_backlog, |b| b.0.min(65535) as u32),
        max_reqs_per_event: max_reqs_per_event
            .map_or(default.max_reqs_per_event, |r| r.0.min(1 << 20) as u32),
        enable_shutdown,
        resp_port: resp_port.unwrap_or(default.resp_port),
        resp_port_is_default: resp_port.is_none(),
        requirepass: requirepass.filter(|password| !password.is_empty()),
        aclfile: aclfile.filter(|path| !path.is_empty()),
        memory_file: memory_file.filter(|path| !path.is_empty()),
        dir: dir.unwrap_or(default.dir),
        dbfilename: dbfilename.unwrap_or(default.dbfilename),
        metrics_port: metrics_port.unwrap_or(0),
        memcache_tls: tls::memcache(enable_ssl, &ssl_suboptions)?,
        enable_ssl,
        ssl_suboptions,
        tls_port,
        tls_cert_file,
        tls_key_file,
        tls_ca_cert_file,
        tls_auth_clients,
        tls_protocols,
        resp_tls,
        protected_mode: match protected_mode.as_deref().map(str::to_ascii_lowercase).as_deref() {
            None | Some("yes") => true,
            Some("no") => false,
            Some(_) => return Err("--protected-mode: argument must be 'yes' or 'no'".into()),
        },
        cluster_config_file: match cluster_enabled
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            None | Some("no") => None,
            Some("yes") => Some(cluster_config_file.unwrap_or_else(|| "nodes.conf".into())),
            Some(_) => return Err("--cluster-enabled: argument must be 'yes' or 'no'".into()),
        },
        io: io.map_or(default.io, |i| i.0),
        pin,
        busy_poll_us: busy_poll_us.unwrap_or(default.busy_poll_us),
        idle_timeout_secs: idle_timeout.unwrap_or(default.idle_timeout_secs),
        // memcached keeps the bytes in 32 bits.
        read_buf_mem_limit_mib: read_buf_mem_limit
            .map_or(default.read_buf_mem_limit_mib, |mb| mb.min(4095)),
        output_limit_mib: output_limit.map_or(default.output_limit_mib, |o| o.0),
        output_pause_kib: output_pause.map_or(default.output_pause_kib, |o| o.0.min(1 << 20)),
        conn_buffers_mib: conn_buffers.map_or(default.conn_buffers_mib, |c| c.0.min(1 << 30)),
        log_format: log_format.unwrap_or(default.log_format),
        config_file: config,
        ignored_suboptions,
        warnings,
        args: Vec::new(),
    };
    validate(&config)?;
    Ok(config)
}

/// The options that reproduce `config`, for `--print-config`.
fn effective_options(config: &Config) -> Options {
    let suboptions = [config.ssl_suboptions.clone(), config.ignored_suboptions.clone()].concat();
    Options {
        // A default stays unnamed, so the file read back skips it when busy as this did.
        port: Some(config.port).filter(|_| !config.port_is_default),
        listen: Some(Listen { addrs: config.listen.clone(), text: config.listen_text.clone() }),
        memory_limit: Some(Positive(config.memory_limit_mib)),
        conn_limit: Some(Positive(config.conn_limit)),
        threads: Some(Positive(config.threads as u64)),
        max_item_size: Some(ItemSize(config.max_item_size_bytes)),
        disable_evictions: config.disable_evictions,
        disable_cas: config.disable_cas,
        verbose: config.verbosity.min(u32::from(u8::MAX)) as u8,
        user: config.user.clone(),
        unix_socket: config.unix_socket.clone(),
        unix_mask: Some(values::UnixMask(config.unix_mask)),
        daemon: config.daemon,
        pidfile: config.pidfile.clone(),
        lock_memory: config.lock_memory,
        enable_coredumps: config.enable_coredumps,
        udp_port: Some(config.udp_port),
        extended: match suboptions.is_empty() {
            true => Vec::new(),
            false => vec![extended::Extended(suboptions)],
        },
        enable_ssl: config.enable_ssl,
        disable_flush_all: config.disable_flush_all,
        enable_sasl: config.enable_sasl,
        auth_file: config.auth_file.clone(),
        // With -S or -Y the protocol follows from them, and naming it could conflict (-S -Y
        // is ascii, which -S refuses when given as -B).
        protocol: match config.enable_sasl || config.auth_file.is_some() {
            true => None,
            false => Some(Protocol(config.protocol.clone())),
        },
        disable_dumping: config.disable_dumping,
        disable_watch: config.disable_watch,
        prefix_delimiter: config.prefix_delimiter.map(|b| char::from(b).to_string()),
        listen_backlog: Some(Positive(u64::from(config.listen_backlog))),
        max_reqs_per_event: Some(Positive(u64::from(config.max_reqs_per_event))),
        enable_shutdown: config.enable_shutdown,
        resp_port: Some(config.resp_port).filter(|_| !config.resp_port_is_default),
        requirepass: config.requirepass.clone(),
        aclfile: config.aclfile.clone(),
        memory_file: config.memory_file.clone(),
        dir: Some(config.dir.clone()),
        dbfilename: Some(config.dbfilename.clone()),
        protected_mode: Some(if config.protected_mode { "yes" } else { "no" }.into()),
        cluster_enabled: config.cluster_config_file.as_ref().map(|_| "yes".into()),
        cluster_config_file: config.cluster_config_file.clone(),
        metrics_port: Some(config.metrics_port).filter(|&port| port != 0),
        tls_port: Some(config.tls_port).filter(|&port| port != 0),
        tls_cert_file: config.tls_cert_file.clone(),
        tls_key_file: config.tls_key_file.clone(),
        tls_ca_cert_file: config.tls_ca_cert_file.clone(),
        tls_auth_clients: Some(config.tls_auth_clients.clone()),
        tls_protocols: config.tls_protocols.clone(),
        io: Some(Io(config.io)),
        pin: config.pin,
        busy_poll_us: Some(config.busy_poll_us),
        idle_timeout: Some(config.idle_timeout_secs),
        read_buf_mem_limit: Some(config.read_buf_mem_limit_mib),
        output_limit: Some(Positive(config.output_limit_mib)),
        output_pause: Some(Positive(config.output_pause_kib)),
        conn_buffers: Some(Positive(config.conn_buffers_mib)),
        log_format: Some(config.log_format),
        config: None,
        print_config: false,
        generate: None,
        license: false,
    }
}

/// `-B` as memcached settles it with `-S` and `-Y`: each forces its dialect unless `-B`
/// names it (naming another is an error), and `-Y` is applied last, so `-S -Y` is the text
/// protocol with `-Y`'s authentication.
fn binding_protocol(given: Option<String>, sasl: bool, auth_file: bool) -> Result<String, String> {
    let forced = match (sasl, auth_file) {
        (_, true) => "ascii",
        (true, false) => "binary",
        (false, false) => return Ok(given.unwrap_or_else(|| Config::default().protocol)),
    };
    if sasl && given.as_deref().is_some_and(|p| p != "binary") {
        return Err("-S: you cannot allow the ASCII protocol while using SASL (-B binary)".into());
    }
    if auth_file && given.as_deref().is_some_and(|p| p != "ascii") {
        return Err("-Y: you cannot allow the BINARY protocol while using ascii authentication \
             tokens (-B ascii)"
            .into());
    }
    Ok(forced.into())
}

fn validate(config: &Config) -> Result<(), String> {
    if config.udp_port.is_on() && config.enable_sasl {
        return Err("-S: cannot enable UDP while using binary SASL authentication (-U 0)".into());
    }
    if config.udp_port.is_on() && config.auth_file.is_some() {
        return Err("-Y: cannot use UDP with ascii authentication enabled (-U 0 to disable)".into());
    }
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
    // Only named ports must differ: a default that another port takes is skipped at start
    // as any busy default is (`-p 6379` alone serves memcached there and no Redis port).
    let port = config.port.bind_port().and_then(|port| named(port, config.port_is_default));
    let resp_port = named_resp(config);
    if resp_port.is_some() && resp_port == port {
        return Err("--resp-port and -p must differ".into());
    }
    let tls_port = config.tls_port;
    if tls_port != 0 && (Some(tls_port) == port || Some(tls_port) == resp_port) {
        return Err("--tls-port must differ from -p and --resp-port".into());
    }
    if config.memcache_tls.is_some() && config.unix_socket.is_some() {
        return Err("-Z: you cannot enable SSL without a TCP port (-s replaces it)".into());
    }
    Ok(())
}

/// A port the command line or file named (0, off, is none).
fn named(port: u16, is_default: bool) -> Option<u16> {
    Some(port).filter(|&port| port != 0 && !is_default)
}

fn named_resp(config: &Config) -> Option<u16> {
    named(config.resp_port, config.resp_port_is_default)
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
