//! From [`Options`] (defaults, file and command line already layered) to the [`Config`] the
//! server runs with, and back again for `--print-config`.
//!
//! [`resolve`] settles the options in steps, one per concern. Each step takes the options it
//! reads out of [`Options`] (leaving their "not given" value behind), so an option that no
//! step reads is still there at the end, and a debug assertion names it: every parser test
//! that gives the option then fails.

use std::mem::take;

use super::extended::{self, Effect};
use super::options::Options;
use super::values::{self, Io, ItemSize, Listen, McPort, Positive, Protocol};
use super::{tls, Config, THREADS_MAX};

/// Fills the defaults in under `options` and checks the combination.
pub(super) fn resolve(mut options: Options) -> Result<Config, String> {
    let mut config = Config::default();
    let (ssl_suboptions, ignored_suboptions) = sort_suboptions(take(&mut options.extended));
    resp_tls(&mut options, &mut config)?;
    memcached_listeners(&mut options, &mut config);
    memcached_limits(&mut options, &mut config);
    memcached_access(&mut options, &mut config)?;
    config.enable_ssl = take(&mut options.enable_ssl);
    config.memcache_tls = tls::memcache(config.enable_ssl, &ssl_suboptions)?;
    config.ssl_suboptions = ssl_suboptions;
    redis_settings(&mut options, &mut config)?;
    runtime_settings(&mut options, &mut config);
    eviction_marks(&mut options, &mut config)?;
    process_settings(&mut options, &mut config);
    config.warnings = ignored_suboptions
        .iter()
        .map(|(key, _)| format!("-o {key}: memcached option with no effect in Spinel"))
        .collect();
    config.ignored_suboptions = ignored_suboptions;
    debug_assert_eq!(options, only_printing(&options), "an option no step of resolve reads");
    validate(&config)?;
    Ok(config)
}

/// What is left of `options` once every step has taken its own: the switches that print
/// instead of running, which [`super::parse`] has already acted on.
fn only_printing(options: &Options) -> Options {
    Options {
        print_config: options.print_config,
        generate: options.generate,
        license: options.license,
        ..Options::default()
    }
}

/// `-o` suboptions: the TLS ones (`ssl_*`), and those accepted with no effect. The ones
/// with an effect of their own were folded into other options already.
type Suboptions = Vec<(String, String)>;

fn sort_suboptions(extended: Vec<extended::Extended>) -> (Suboptions, Suboptions) {
    let effect_of = |(k, v): &(String, String)| extended::effect(k, v);
    extended
        .into_iter()
        .flat_map(|e| e.0)
        .filter(|item| matches!(effect_of(item), Ok(Effect::Ignored | Effect::Ssl)))
        .partition(|item| matches!(effect_of(item), Ok(Effect::Ssl)))
}

/// Redis `tls-port` and its `tls-*` flags, checked into TLS settings.
fn resp_tls(options: &mut Options, config: &mut Config) -> Result<(), String> {
    if let Some(auth_clients) = options.tls_auth_clients.take() {
        config.tls_auth_clients = auth_clients;
    }
    config.tls_port = options.tls_port.take().unwrap_or(0);
    config.tls_cert_file = options.tls_cert_file.take();
    config.tls_key_file = options.tls_key_file.take();
    config.tls_ca_cert_file = options.tls_ca_cert_file.take();
    config.tls_protocols = options.tls_protocols.take();
    config.resp_tls = tls::resp(tls::RespFlags {
        port: config.tls_port,
        cert_file: config.tls_cert_file.as_deref(),
        key_file: config.tls_key_file.as_deref(),
        ca_cert_file: config.tls_ca_cert_file.as_deref(),
        auth_clients: &config.tls_auth_clients,
        protocols: config.tls_protocols.as_deref(),
    })?;
    Ok(())
}

/// Where memcached listens: its TCP and UDP ports, addresses, Unix socket and backlog.
fn memcached_listeners(options: &mut Options, config: &mut Config) {
    let (port, udp_port) = (options.port.take(), options.udp_port.take());
    // memcached: -U without -p moves the TCP port too.
    config.port = port.unwrap_or(match udp_port {
        Some(udp) if udp.is_on() => udp,
        _ => config.port,
    });
    config.port_is_default = port.is_none() && !udp_port.is_some_and(McPort::is_on);
    config.udp_port = udp_port.unwrap_or(config.udp_port);
    if let Some(listen) = options.listen.take() {
        (config.listen, config.listen_text) = (listen.addrs, listen.text);
    }
    config.unix_socket = options.unix_socket.take();
    if let Some(mask) = options.unix_mask.take() {
        config.unix_mask = mask.0;
    }
    if let Some(backlog) = options.listen_backlog.take() {
        config.listen_backlog = backlog.0.min(65535) as u32;
    }
    if let Some(requests) = options.max_reqs_per_event.take() {
        config.max_reqs_per_event = requests.0.min(1 << 20) as u32;
    }
}

/// How much memcached holds: memory, connections, threads, item size, and what it does
/// when full.
fn memcached_limits(options: &mut Options, config: &mut Config) {
    if let Some(memory) = options.memory_limit.take() {
        config.memory_limit_mib = memory.0;
    }
    if let Some(conns) = options.conn_limit.take() {
        config.conn_limit = conns.0;
    }
    if let Some(threads) = options.threads.take() {
        config.threads = threads.0 as usize;
    }
    if let Some(size) = options.max_item_size.take() {
        config.max_item_size_bytes = size.0;
    }
    config.disable_evictions = take(&mut options.disable_evictions);
    config.disable_cas = take(&mut options.disable_cas);
}

/// Who may do what over memcached's protocols: the binding protocol with SASL and the
/// authentication file, and the commands that can be turned off.
fn memcached_access(options: &mut Options, config: &mut Config) -> Result<(), String> {
    config.enable_sasl = take(&mut options.enable_sasl);
    config.auth_file = options.auth_file.take();
    let protocol = options.protocol.take().map(|p| p.0);
    config.protocol = binding_protocol(protocol, config.enable_sasl, config.auth_file.is_some())?;
    // memcached takes the first byte and refuses an empty value.
    config.prefix_delimiter = match options.prefix_delimiter.take() {
        Some(text) => Some(*text.as_bytes().first().ok_or("-D: no delimiter specified")?),
        None => None,
    };
    config.disable_flush_all = take(&mut options.disable_flush_all);
    config.disable_dumping = take(&mut options.disable_dumping);
    config.disable_watch = take(&mut options.disable_watch);
    config.enable_shutdown = take(&mut options.enable_shutdown);
    Ok(())
}

/// The Redis side: its port, password and ACL file, persistence files, protected mode and
/// cluster mode.
fn redis_settings(options: &mut Options, config: &mut Config) -> Result<(), String> {
    let resp_port = options.resp_port.take();
    config.resp_port = resp_port.unwrap_or(config.resp_port);
    config.resp_port_is_default = resp_port.is_none();
    config.requirepass = options.requirepass.take().filter(|password| !password.is_empty());
    config.aclfile = options.aclfile.take().filter(|path| !path.is_empty());
    config.memory_file = options.memory_file.take().filter(|path| !path.is_empty());
    if let Some(dir) = options.dir.take() {
        config.dir = dir;
    }
    if let Some(dbfilename) = options.dbfilename.take() {
        config.dbfilename = dbfilename;
    }
    config.protected_mode = match lowercase(options.protected_mode.take()).as_deref() {
        None | Some("yes") => true,
        Some("no") => false,
        Some(_) => return Err("--protected-mode: argument must be 'yes' or 'no'".into()),
    };
    let cluster_config_file = options.cluster_config_file.take();
    config.cluster_config_file = match lowercase(options.cluster_enabled.take()).as_deref() {
        None | Some("no") => None,
        Some("yes") => Some(cluster_config_file.unwrap_or_else(|| "nodes.conf".into())),
        Some(_) => return Err("--cluster-enabled: argument must be 'yes' or 'no'".into()),
    };
    Ok(())
}

fn lowercase(text: Option<String>) -> Option<String> {
    text.as_deref().map(str::to_ascii_lowercase)
}

/// How the event loops run and what a connection may hold, the metrics port, the log
/// format and the file the options came from.
fn runtime_settings(options: &mut Options, config: &mut Config) {
    if let Some(io) = options.io.take() {
        config.io = io.0;
    }
    config.pin = take(&mut options.pin);
    config.busy_poll_us = options.busy_poll_us.take().unwrap_or(config.busy_poll_us);
    config.zerocopy_min_bytes =
        options.zerocopy_min_bytes.take().unwrap_or(config.zerocopy_min_bytes);
    config.idle_timeout_secs = options.idle_timeout.take().unwrap_or(config.idle_timeout_secs);
    // memcached keeps the bytes in 32 bits.
    if let Some(mib) = options.read_buf_mem_limit.take() {
        config.read_buf_mem_limit_mib = mib.min(4095);
    }
    if let Some(limit) = options.output_limit.take() {
        config.output_limit_mib = limit.0;
    }
    if let Some(pause) = options.output_pause.take() {
        config.output_pause_kib = pause.0.min(1 << 20);
    }
    if let Some(buffers) = options.conn_buffers.take() {
        config.conn_buffers_mib = buffers.0.min(1 << 30);
    }
    config.log_format = options.log_format.take().unwrap_or(config.log_format);
    config.metrics_port = options.metrics_port.take().unwrap_or(0);
    config.config_file = options.config.take();
    config.redis_conf_file = options.redis_conf.take();
}

/// `--noevict-dbs` and `--noevict-prefixes`, checked as CONFIG SET checks them.
fn eviction_marks(options: &mut Options, config: &mut Config) -> Result<(), String> {
    if let Some(dbs) = options.noevict_dbs.take() {
        config.noevict_dbs = exec::noevict::parse_dbs(dbs.as_bytes())
            .map_err(|why| format!("--noevict-dbs '{dbs}': {why}"))?;
    }
    if let Some(prefixes) = options.noevict_prefixes.take() {
        config.noevict_prefixes = exec::noevict::parse_prefixes(prefixes.as_bytes())
            .map_err(|why| format!("--noevict-prefixes '{prefixes}': {why}"))?;
    }
    Ok(())
}

/// The process itself: the user it runs as, daemon mode, the pid file, memory locking, core
/// dumps and verbosity.
fn process_settings(options: &mut Options, config: &mut Config) {
    config.verbosity = u32::from(take(&mut options.verbose));
    config.user = options.user.take();
    config.daemon = take(&mut options.daemon);
    config.pidfile = options.pidfile.take();
    config.lock_memory = take(&mut options.lock_memory);
    config.enable_coredumps = take(&mut options.enable_coredumps);
}

/// The options that reproduce `config`, for `--print-config`.
pub(super) fn effective_options(config: &Config) -> Options {
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
        extended: suboptions_as_given(config),
        enable_ssl: config.enable_ssl,
        disable_flush_all: config.disable_flush_all,
        enable_sasl: config.enable_sasl,
        auth_file: config.auth_file.clone(),
        protocol: protocol_as_given(config),
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
        zerocopy_min_bytes: Some(config.zerocopy_min_bytes),
        idle_timeout: Some(config.idle_timeout_secs),
        noevict_dbs: Some(noevict_dbs_text(config.noevict_dbs)).filter(|t| !t.is_empty()),
        noevict_prefixes: Some(noevict_prefixes_text(&config.noevict_prefixes))
            .filter(|t| !t.is_empty()),
        read_buf_mem_limit: Some(config.read_buf_mem_limit_mib),
        output_limit: Some(Positive(config.output_limit_mib)),
        output_pause: Some(Positive(config.output_pause_kib)),
        conn_buffers: Some(Positive(config.conn_buffers_mib)),
        log_format: Some(config.log_format),
        config: None,
        redis_conf: config.redis_conf_file.clone(),
        print_config: false,
        generate: None,
        license: false,
    }
}

/// The never-evict databases as `--noevict-dbs` takes them.
fn noevict_dbs_text(mask: u16) -> String {
    let dbs: Vec<String> =
        (0..16).filter(|db| mask & (1 << db) != 0).map(|db| db.to_string()).collect();
    dbs.join(",")
}

/// The never-evict prefixes as `--noevict-prefixes` takes them.
fn noevict_prefixes_text(prefixes: &[Vec<u8>]) -> String {
    let shown: Vec<String> =
        prefixes.iter().map(|p| String::from_utf8_lossy(p).into_owned()).collect();
    shown.join(" ")
}

/// The `-o` suboptions kept in `config`, as one `-o` list.
fn suboptions_as_given(config: &Config) -> Vec<extended::Extended> {
    let suboptions = [config.ssl_suboptions.clone(), config.ignored_suboptions.clone()].concat();
    match suboptions.is_empty() {
        true => Vec::new(),
        false => vec![extended::Extended(suboptions)],
    }
}

/// `-B`, unless it follows from `-S` or `-Y`: naming it then could conflict (-S -Y is
/// ascii, which -S refuses when given as -B).
fn protocol_as_given(config: &Config) -> Option<Protocol> {
    match config.enable_sasl || config.auth_file.is_some() {
        true => None,
        false => Some(Protocol(config.protocol.clone())),
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
