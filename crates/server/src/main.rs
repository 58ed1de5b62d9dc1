//! `spinel`: start-up, listeners, worker threads and shutdown.
//!
//! Connections spread over the loops by SO_REUSEPORT: every loop has its own listener on
//! each port and the kernel hashes each new connection to one of them. No thread hands
//! connections to another, so there is no accept thread and no cross-thread queue; the
//! price is that the spread is by hash, not by load.

#![forbid(unsafe_code)]

mod auth_file;
mod config;
mod control;
mod dialect;
mod listen;
mod log;
mod loops;
mod metrics;
mod ports;
mod process;
mod service;
mod signals;
mod tls;
mod udp;
mod wakes;
mod worker;

use std::{
    net::SocketAddr,
    process::ExitCode,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
};

use config::{Config, Parsed};
use exec::{Settings, Shared};
use worker::{Limits, Worker, TAG_RESP};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let config = match config::parse(&args) {
        Ok(Parsed::Run(config)) => config,
        Ok(Parsed::Print(text)) => {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            // One line naming the flag, and EX_USAGE as sysexits.h has it for usage errors.
            eprintln!("spinel: {message} (see 'spinel --help')");
            return ExitCode::from(64);
        }
    };
    match run(&config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("spinel: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(config: &Config) -> Result<(), String> {
    rt::tune_allocator();
    let recv_buffers = recv_buffers_per_loop(config.threads);
    let chosen = loops::choose(config, recv_buffers, RECV_BUFFER_BYTES as u32)?;
    let backend = chosen.backend;
    let auth_source = auth_file::source(config)?;
    // Which default ports are busy, known before the settings are made: they say so.
    let skipped = listen::busy_defaults(config)?;
    let shared = start_shared(config, backend, auth_source.as_ref(), &skipped)?;
    warn_at_start(config, &chosen, &skipped);
    let (memcache_tls, resp_tls) = load_tls(config, &shared)?;
    let control = control::Control::new(config, memcache_tls.clone(), resp_tls.clone());
    let _ = shared.redis.control.set(Box::new(control.clone()));
    if let Err(most) = process::allow_connections(config.conn_limit) {
        tracing::warn!(
            "-c {}: the open-file limit leaves room for {most} connections",
            config.conn_limit
        );
    }
    let tls_contexts: Vec<Arc<tls::Context>> =
        memcache_tls.iter().chain(resp_tls.iter()).cloned().collect();
    offer_certificate_refresh(&shared, &tls_contexts);
    let stop = Arc::new(AtomicBool::new(false));
    let caught = signals::catch().map_err(|e| format!("cannot install signal handlers: {e}"))?;
    let listen::Bound { per_worker: listeners, memcache_addrs, labels } =
        listen::bind_all(config, &skipped)?;
    let ports = Arc::new(ports::Ports::new(labels));
    let memcache_listeners = register_listeners(&shared, config, &memcache_addrs);
    let udp_servers = bind_udp(config, &shared, &stop)?;
    let udp_addrs: Vec<SocketAddr> =
        udp_servers.iter().filter_map(|server| server.local_addr().ok()).collect();
    if config.unix_socket.is_none() {
        listen::write_ports_file(&memcache_addrs, &udp_addrs)?;
    }
    let metrics_listeners = match config.metrics_port {
        0 => Vec::new(),
        port => metrics::bind(&config.listen, port)?,
    };
    let _pidfile = apply_process_flags(config)?;
    let reload = Reload { shared: Arc::clone(&shared), auth_source: auth_source.clone() };
    install_signals(caught, &stop, reload, tls_contexts, control, config)?;
    become_user(config, auth_source.as_ref(), &shared)?;
    tracing::info!("{} | io {:?}", config::describe(config), backend);
    let buffers = Arc::new(rt::BufferBudget::new((config.conn_buffers_mib as usize) << 20));
    let tls = (memcache_tls, resp_tls);
    let limits = worker_limits(config, &buffers, memcache_listeners, tls, &ports);
    let loop_stats: Vec<Arc<rt::LoopStats>> = listeners.iter().map(|_| Arc::default()).collect();
    let workers = Workers { backend, shared: &shared, limits, buffers, stop: &stop };
    let handles = workers.spawn(config, listeners, &loop_stats)?;
    let udp_handles = udp_servers
        .into_iter()
        .map(|server| server.spawn().map_err(|e| format!("cannot start UDP thread: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    metrics::spawn(metrics_listeners, &shared, &loop_stats, &ports)?;
    service::ready();
    let failure = loops::wait_for_threads(handles, udp_handles, &stop);
    save_memory_file(&shared, config);
    failure.map_or(Ok(()), Err)
}

/// The shared state, with its login source, its snapshot restored and its cluster map
/// followed.
fn start_shared(
    config: &Config,
    backend: rt::Backend,
    auth_source: Option<&auth_file::Source>,
    skipped: &[listen::Skipped],
) -> Result<Arc<Shared>, String> {
    let mut shared = build_shared(config, backend, skipped)?;
    // Empty until the file is read, after binding, as the final user (`become_user`).
    shared.memcache.auth = auth_source.map(|s| exec::auth::Auth::new(s.mode, Default::default()));
    if auth_file::sasl_uses_acl_users(config) {
        shared.memcache.auth = Some(exec::auth::Auth::acl_users());
    }
    let shared = Arc::new(shared);
    shared.set_this();
    log::init(Arc::clone(&shared), config.log_format);
    restore_snapshot(&shared, config);
    // redis.conf's `replicaof`: the link starts once the snapshot is in.
    exec::repl::start_configured(&shared);
    if shared.redis.cluster.get().is_some() {
        spawn_cluster_follower(Arc::clone(&shared))
            .map_err(|e| format!("cannot start the cluster map thread: {e}"))?;
    }
    Ok(shared)
}

/// The configuration's warnings, the default ports skipped, and a missing io_uring.
fn warn_at_start(config: &Config, chosen: &rt::Chosen, skipped: &[listen::Skipped]) {
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    for skip in skipped {
        tracing::warn!("{}", skip.warning());
    }
    loops::warn_fallback(chosen);
}

/// Lets exec read the certificates again (Redis `CONFIG SET tls-*`).
fn offer_certificate_refresh(shared: &Arc<Shared>, tls_contexts: &[Arc<tls::Context>]) {
    if tls_contexts.is_empty() {
        return;
    }
    let (contexts, refresh_shared) = (tls_contexts.to_vec(), Arc::clone(shared));
    let refresh: exec::RefreshCerts =
        Box::new(move || reload_certificates(&refresh_shared, &contexts));
    let _ = shared.memcache.refresh_certs.set(refresh);
}

/// What a reload (SIGHUP) reads again.
struct Reload {
    shared: Arc<Shared>,
    auth_source: Option<auth_file::Source>,
}

/// SIGTERM and SIGINT stop, SIGUSR1 stops gracefully, SIGHUP reloads.
fn install_signals(
    caught: signals::Caught,
    stop: &Arc<AtomicBool>,
    reload: Reload,
    tls_contexts: Vec<Arc<tls::Context>>,
    control: control::Control,
    config: &Config,
) -> Result<(), String> {
    let mut in_force = config.clone();
    let graceful_shared = Arc::clone(&reload.shared);
    let graceful = move || graceful_shared.memcache.graceful_stop.store(true, Ordering::Relaxed);
    signals::install(caught, Arc::clone(stop), graceful, move || {
        let shared = &reload.shared;
        reload_credentials(shared, reload.auth_source.as_ref());
        if !tls_contexts.is_empty() {
            match reload_certificates(shared, &tls_contexts) {
                Ok(()) => tracing::info!("reload: TLS certificates read again"),
                Err(e) => tracing::error!("reload: {e}; the certificates in force stay"),
            }
        }
        if let Some(cluster) = shared.redis.cluster.get() {
            match cluster.reload() {
                Ok(()) => tracing::info!("reload: the cluster config file read again"),
                Err(e) => tracing::error!("reload: {e}; the cluster map in force stays"),
            }
        }
        control::reload(shared, &control, &mut in_force)
    })
    .map_err(|e| format!("cannot install signal handlers: {e}"))
}

/// Drops privileges (`-u`), then reads the password file as the final user.
fn become_user(
    config: &Config,
    auth_source: Option<&auth_file::Source>,
    shared: &Shared,
) -> Result<(), String> {
    if let Some(user) = &config.user {
        signals::drop_privileges(user)?;
    } else if signals::is_root() {
        tracing::info!("running as root; -u USER drops privileges");
    }
    if let (Some(source), Some(auth)) = (auth_source, &shared.memcache.auth) {
        let credentials = auth_file::load(source)?;
        tracing::info!("{} credentials from {}", credentials.len(), source.path);
        auth.replace(credentials);
    }
    if shared.memcache.auth.as_ref().is_some_and(|auth| auth.uses_acl_users()) {
        tracing::info!("-S: SASL PLAIN checks the Redis ACL users ({SASL_PWDB_UNSET})");
    }
    Ok(())
}

/// What every worker shares beyond `exec::Shared`.
fn worker_limits(
    config: &Config,
    buffers: &Arc<rt::BufferBudget>,
    memcache_listeners: Vec<exec::conns::SharedConn>,
    (memcache_tls, resp_tls): TlsContexts,
    ports: &Arc<ports::Ports>,
) -> Arc<Limits> {
    Arc::new(Limits {
        memcache: memcache_limits(config),
        // Redis's `proto-max-bulk-len` (512 MiB): a longer bulk is a protocol error; a
        // shorter one that does not fit in half the memory limit gets the OOM error.
        resp: proto_resp::Limits::default(),
        open_conns: AtomicU64::new(0),
        // Room for the largest item plus a full multiget line, with margin; Redis's
        // client-query-buffer-limit plays the same role (1 GiB there).
        input_limit_bytes: (2 * config.max_item_size_bytes as usize).max(16 << 20),
        // One bulk of `proto-max-bulk-len` and its command line (Redis's
        // client-query-buffer-limit, 1 GiB, plays the same role).
        resp_input_limit_bytes: proto_resp::limits::BULK_LEN_MAX_DEFAULT + (1 << 20),
        resp_addr: format!("{}:{}", config.listen[0], config.resp_port),
        reqs_per_event: config.max_reqs_per_event as usize,
        yield_output_bytes: config.output_pause_bytes(),
        buffers: Arc::clone(buffers),
        binding: worker::Binding::from_config(&config.protocol),
        memcache_listeners,
        memcache_tls,
        resp_tls,
        ports: Arc::clone(ports),
    })
}

/// What the worker threads start with.
struct Workers<'a> {
    backend: rt::Backend,
    shared: &'a Arc<Shared>,
    limits: Arc<Limits>,
    buffers: Arc<rt::BufferBudget>,
    stop: &'a Arc<AtomicBool>,
}

impl Workers<'_> {
    /// One thread and event loop per set of listeners, each with its notifier.
    fn spawn(
        &self,
        config: &Config,
        listeners: Vec<Vec<rt::Listener>>,
        loop_stats: &[Arc<rt::LoopStats>],
    ) -> Result<Vec<std::thread::JoinHandle<std::io::Result<()>>>, String> {
        let shared = self.shared;
        // Redis `CONFIG SET timeout` and a reload change it in `shared`; the loops read it
        // there.
        let idle_timeout = rt::IdleTimeout::sharing(Arc::clone(&shared.core.idle_timeout_ms));
        let notifiers = self.notifiers(listeners.len())?;
        let mut handles = Vec::new();
        for (index, own) in listeners.into_iter().enumerate() {
            let (stats, buffers) = (&loop_stats[index], &self.buffers);
            let mut loop_config =
                loop_config(config, self.backend, index, buffers, stats, &idle_timeout);
            loop_config.notifier = Some(notifiers[index].clone());
            let (stop, stop_all) = (Arc::clone(self.stop), Arc::clone(self.stop));
            let stop_requested = Arc::new(move || stop.load(Ordering::Relaxed));
            let limits = Arc::clone(&self.limits);
            let worker = Worker::new(Arc::clone(shared), limits, index, stop_requested);
            let handle = std::thread::Builder::new()
                .name(format!("spinel-w{index}"))
                .spawn(move || loops::run_worker(&loop_config, own, worker, &stop_all))
                .map_err(|e| format!("cannot start worker thread: {e}"))?;
            handles.push(handle);
        }
        Ok(handles)
    }

    /// One notifier per loop: a PUBLISH wakes the loops whose subscribers got mail.
    fn notifiers(&self, loops: usize) -> Result<Vec<rt::Notifier>, String> {
        let notifiers = (0..loops)
            .map(|_| rt::Notifier::new().map_err(|e| format!("cannot make a notifier: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        let wake = notifiers.clone();
        let notify = move |worker: usize, own: bool| match wake.get(worker) {
            Some(notifier) if own => notifier.notify_local(),
            // Inside a worker's input batch, the wake waits for its end (`wakes`).
            Some(notifier) if !wakes::held(worker) => notifier.notify(),
            _ => {}
        };
        let notify = std::sync::Arc::new(notify);
        let for_pubsub = std::sync::Arc::clone(&notify);
        self.shared.redis.pubsub.set_notify(Box::new(move |worker, own| for_pubsub(worker, own)));
        // A replica's feed wakes its connection's loop the same way.
        self.shared.core.repl.set_notify(Box::new(move |worker, own| notify(worker, own)));
        Ok(notifiers)
    }
}

/// At start: the `-e` file if there is one (removed once read, so that a later crash never
/// brings its items back), else Redis's `dir`/`dbfilename` if it exists. A file that fails
/// its checks is left alone (but for `-e`'s) and the server starts empty, saying why.
fn restore_snapshot(shared: &Shared, config: &Config) {
    let memory_file = config.memory_file.as_ref().map(std::path::PathBuf::from);
    let path = match memory_file {
        Some(path) if path.exists() => path,
        Some(_) => return,
        None => exec::resp::snapshot_path(shared),
    };
    if !path.exists() {
        return;
    }
    match exec::snapshot::restore(shared, &path) {
        Ok(done) => tracing::info!(
            "restored {} items from {} ({} bytes, {} ms; {} expired or refused)",
            done.items,
            path.display(),
            done.bytes,
            done.millis,
            done.skipped
        ),
        Err(why) => tracing::warn!("not restored, starting empty: {why}"),
    }
    if config.memory_file.is_some() {
        if let Err(e) = std::fs::remove_file(&path) {
            tracing::warn!("cannot remove {} after reading it: {e}", path.display());
        }
    }
}

/// At exit after a graceful stop (SIGUSR1, `shutdown graceful`) with `-e FILE`: every item
/// to FILE, with nothing else running.
fn save_memory_file(shared: &Shared, config: &Config) {
    let Some(path) = &config.memory_file else { return };
    if !shared.memcache.graceful_stop.load(Ordering::Relaxed) {
        tracing::info!("not a graceful stop: {path} not written");
        return;
    }
    match exec::snapshot::save(shared, std::path::Path::new(path)) {
        Ok(done) => tracing::info!(
            "saved {} items to {path} ({} bytes, {} ms)",
            done.items,
            done.bytes,
            done.millis
        ),
        Err(why) => tracing::error!("graceful stop: {why}"),
    }
}

fn memcache_limits(config: &Config) -> proto_memcache::Limits {
    proto_memcache::Limits {
        value_len_max: config.max_item_size_bytes as usize,
        ..Default::default()
    }
}

/// UDP threads, one per `-l` address: they count on the counters after the workers'.
fn udp_thread_count(config: &Config) -> usize {
    match (config.udp_port.bind_port(), &config.unix_socket) {
        (None, _) | (_, Some(_)) => 0,
        _ => config.listen.len(),
    }
}

/// `-U`: one UDP socket per `-l` address, bound before privileges drop.
fn bind_udp(
    config: &Config,
    shared: &Arc<Shared>,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<udp::UdpServer>, String> {
    let mut servers = Vec::new();
    for (index, &ip) in config.listen.iter().enumerate().take(udp_thread_count(config)) {
        let counters = shared.core.counters(config.threads + index);
        let addr = SocketAddr::new(ip, config.udp_port.bind_port().unwrap_or(0));
        let limits = memcache_limits(config);
        let server =
            udp::UdpServer::bind(addr, Arc::clone(shared), counters, limits, Arc::clone(stop))?;
        let local = server.local_addr().map_err(|e| e.to_string())?;
        tracing::info!("memcache (udp) listening on {local}");
        servers.push(server);
    }
    Ok(servers)
}

/// memcached's `-r`, `-d`, `-P` and `-k`, in memcached's order, once the ports listen and
/// before any thread starts. The pid file is removed when the returned guard drops.
fn apply_process_flags(config: &Config) -> Result<Option<process::PidFile>, String> {
    if config.enable_coredumps {
        process::raise_core_limit();
    }
    if config.daemon {
        process::detach(config.verbosity > 0)?;
    }
    let pidfile = match &config.pidfile {
        Some(path) => Some(
            process::PidFile::write(path).map_err(|e| format!("-P {path}: cannot write: {e}"))?,
        ),
        None => None,
    };
    if config.lock_memory {
        process::lock_memory();
    }
    Ok(pidfile)
}

/// Why `-S` uses the ACL users, for the log.
const SASL_PWDB_UNSET: &str = "MEMCACHED_SASL_PWDB is not set";

/// SIGHUP: re-reads the credentials file (memcached re-reads its `-Y` file); one that
/// cannot be read or parsed keeps the list in force.
fn reload_credentials(shared: &Shared, source: Option<&auth_file::Source>) {
    let (Some(source), Some(auth)) = (source, &shared.memcache.auth) else { return };
    match auth_file::load(source) {
        Ok(credentials) => {
            tracing::info!("reload: {} credentials from {}", credentials.len(), source.path);
            auth.replace(credentials);
        }
        Err(message) => tracing::error!("reload: {message}; the previous credentials stay"),
    }
}

/// The TLS contexts of the memcached ports (`-Z`) and the Redis TLS port: the files are
/// read here, before privileges drop, so a key only root may read still serves.
type TlsContexts = (Option<Arc<tls::Context>>, Option<Arc<tls::Context>>);

fn load_tls(config: &Config, shared: &Shared) -> Result<TlsContexts, String> {
    let errors = &shared.memcache.ssl_handshake_errors;
    let load = |settings: &Option<tls::Settings>, what: &str| match settings {
        Some(settings) => tls::Context::new(settings.clone(), Arc::clone(errors))
            .map(|context| Some(Arc::new(context)))
            .map_err(|e| format!("{what}: {e}")),
        None => Ok(None),
    };
    Ok((load(&config.memcache_tls, "-Z")?, load(&config.resp_tls, "--tls-port")?))
}

/// SIGHUP and memcached's `refresh_certs`: reads the TLS certificates again (new
/// connections get them); a file that cannot be read keeps the ones in force.
fn reload_certificates(shared: &Shared, contexts: &[Arc<tls::Context>]) -> Result<(), String> {
    tls::reload_all(contexts.iter().map(|c| &**c))?;
    shared.memcache.ssl_cert_refreshed_secs.store(shared.core.clock_secs(), Ordering::Relaxed);
    Ok(())
}

/// The machine's memory (`MemTotal`), the most `cache_memlimit` may raise the store to: a
/// cache larger than the memory would swap. memcached takes any value, and would.
fn physical_memory_bytes() -> Option<usize> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// The connection buffers' fixed share, counted against `-m` so that the whole process stays
/// near it (peak RSS at -m 64 under drifting sizes: 74-76 MiB on io_uring before, when the
/// store had all of -m): io_uring's receive rings, the input tails' budget and each loop's
/// output pool, with what they overshoot by (see `BUFFER_SLACK_BYTES`). At most an eighth of
/// -m, so a small cache keeps most of it for items.
/// (The store's segment size is its default; the server does not change it.)
fn buffer_reserve_bytes(config: &Config, backend: rt::Backend) -> usize {
    let memory_bytes = (config.memory_limit_mib as usize) << 20;
    let rings = match backend {
        rt::Backend::Uring => RECV_RING_TOTAL_BYTES + URING_BURST_BYTES,
        rt::Backend::Epoll => 0,
    } + BUFFER_SLACK_BYTES;
    let pools = config.threads.max(1) * rt::OUTPUT_POOL_BYTES_MAX;
    // The store refuses fewer than 8 segments: a tiny -m (-m 2) keeps them all.
    let store_bytes_min = 8 * store::Config::default().segment_size_bytes;
    (rings + INPUT_TAILS_TOTAL_BYTES + pools)
        .min(memory_bytes / 8)
        .min(memory_bytes.saturating_sub(store_bytes_min))
}

fn build_shared(
    config: &Config,
    backend: rt::Backend,
    skipped: &[listen::Skipped],
) -> Result<Shared, String> {
    // Before anything looks a command up: the table is built once, renamed.
    if !config.redis_conf.renames.is_empty() {
        proto_resp::rename_commands(&config.redis_conf.renames)?;
    }
    let reserve_bytes = buffer_reserve_bytes(config, backend);
    let store = open_store(config, reserve_bytes)?;
    let settings = command_settings(config, backend, skipped, reserve_bytes);
    // One worker slot more than the loops and UDP threads: the replication link's thread
    // runs its primary's commands in it (`exec::repl`).
    let link_worker = config.threads + udp_thread_count(config);
    let shared = Shared::new(store, settings, link_worker + 1);
    shared.core.repl.set_link_worker(link_worker);
    shared.memcache.verbosity.store(config.verbosity, Ordering::Relaxed);
    if let Some(path) = &config.aclfile {
        // As Redis: a start with an ACL file it cannot read fails, naming the line.
        let users = exec::resp::acl::read_acl_file(std::path::Path::new(path))?;
        shared.redis.users.replace_all(users);
    }
    if !config.redis_conf.users.is_empty() {
        let lines = config.redis_conf.users.iter().map(|line| {
            let words: Vec<&str> = line.words.iter().map(String::as_str).collect();
            // As Redis: the existing `default` is reset before its line applies.
            let reset = (words[0] == "default").then_some("reset");
            (line.place.clone(), words[0], reset.into_iter().chain(words[1..].to_vec()).collect())
        });
        shared.redis.users.replace_all(exec::resp::acl::users_from_lines(lines)?);
    }
    if let Some(file) = &config.cluster_config_file {
        let cluster = open_cluster(config, file)?;
        shared.redis.cluster.set(cluster).expect("set once, at start");
    }
    apply_noevict_marks(&shared, config);
    for directive in &config.redis_conf.directives {
        // As Redis: a parameter it would refuse stops the start, naming the line.
        exec::resp::set_at_start(&shared, &directive.name, &directive.value).map_err(|why| {
            format!("{}: '{} {}': {why}", directive.place, directive.name, directive.value)
        })?;
    }
    Ok(shared)
}

/// `--noevict-dbs` and `--noevict-prefixes` (at start and on a reload).
pub(crate) fn apply_noevict_marks(shared: &Shared, config: &Config) {
    let (store, marks) = (&shared.core.store, &shared.core.noevict);
    marks.set_dbs(store, config.noevict_dbs);
    marks.set_prefixes(store, config.noevict_prefixes.clone());
}

/// The store, with the memory the connection buffers reserve taken off the limit.
fn open_store(config: &Config, reserve_bytes: usize) -> Result<store::Store, String> {
    let store_config = store::Config {
        memory_bytes: ((config.memory_limit_mib as usize) << 20) - reserve_bytes,
        memory_max_bytes: physical_memory_bytes().unwrap_or(0),
        item_size_max: config.max_item_size_bytes as usize,
        when_full: if config.disable_evictions {
            store::WhenFull::Refuse
        } else {
            store::WhenFull::Evict
        },
        ..Default::default()
    };
    // Room to grow costs address space only; where even that is refused (a small `ulimit
    // -v`), the store starts without it and `cache_memlimit` can only lower the limit.
    store::Store::new(store_config.clone())
        .or_else(|_| store::Store::new(store::Config { memory_max_bytes: 0, ..store_config }))
        .map_err(|e| format!("store: {e}"))
}

/// The settings the command handlers read (`stats settings`, `CONFIG GET`, `INFO`).
fn command_settings(
    config: &Config,
    backend: rt::Backend,
    skipped: &[listen::Skipped],
    reserve_bytes: usize,
) -> Settings {
    Settings {
        // A skipped default shows as 0, as a port that is off (and, here, one the kernel
        // picks: memcached shows -1 for it).
        port: match listen::skips(skipped, listen::memcache_tag(config)) {
            true => 0,
            false => config.port.bind_port().unwrap_or(0),
        },
        resp_port: if listen::skips(skipped, TAG_RESP) { 0 } else { config.resp_port },
        skipped_default_ports: listen::skipped_text(skipped),
        udp_port: config.udp_port.bind_port().unwrap_or(0),
        unix_socket: config.unix_socket.clone(),
        listen: config.listen_text.clone(),
        memory_limit_bytes: config.memory_limit_mib << 20,
        buffer_reserve_bytes: reserve_bytes as u64,
        max_connections: config.conn_limit,
        threads: config.threads as u32,
        item_size_max: config.max_item_size_bytes,
        evictions: !config.disable_evictions,
        cas_enabled: !config.disable_cas,
        backlog: config.listen_backlog,
        reqs_per_event: config.max_reqs_per_event,
        // memcached's words for `-B` in `stats settings`.
        binding_protocol: match config.protocol.as_str() {
            "ascii" | "binary" => config.protocol.clone(),
            _ => "auto-negotiate".into(),
        },
        io_backend: match backend {
            rt::Backend::Uring => "io_uring".into(),
            rt::Backend::Epoll => "epoll".into(),
        },
        idle_timeout_secs: config.idle_timeout_secs,
        memcached_features: config.memcached_features(),
        read_buf_mem_limit_bytes: config.read_buf_mem_limit_mib << 20,
        busy_poll_us: config.busy_poll_us,
        pin: config.pin,
        shutdown_command: config.enable_shutdown,
        flush_enabled: !config.disable_flush_all,
        prefix_delimiter: config.prefix_delimiter.unwrap_or(b':'),
        detail_enabled: config.prefix_delimiter.is_some(),
        dump_enabled: !config.disable_dumping,
        watch_enabled: !config.disable_watch,
        unix_mask: config.unix_mask,
        config_file: config.config_file.clone(),
        auth_sasl: config.enable_sasl,
        auth_file: config.auth_file.clone(),
        requirepass: config.requirepass.as_ref().map(|password| password.clone().into_bytes()),
        aclfile: config.aclfile.as_ref().map(std::path::PathBuf::from),
        dir: config.dir.clone().into(),
        dbfilename: config.dbfilename.clone(),
        memory_file: config.memory_file.clone(),
        protected_mode: config.protected_mode,
        ssl: config.memcache_tls.as_ref().map(|tls| ssl_settings(config, tls)),
    }
}

/// Once a second a cluster node reads the others' maps, and its replication link follows
/// the primary its map names (see `exec::resp::cluster::Cluster::tick`).
fn spawn_cluster_follower(shared: Arc<Shared>) -> std::io::Result<()> {
    std::thread::Builder::new().name("cluster-follow".into()).spawn(move || {
        let mut failing = false;
        while !shared.core.shutdown.load(Ordering::Relaxed) {
            std::thread::sleep(std::time::Duration::from_secs(1));
            let Some(cluster) = shared.redis.cluster.get() else { return };
            match cluster.tick(&shared) {
                Ok(changed) => {
                    if changed {
                        tracing::info!("cluster: the map follows the primary's");
                    }
                    failing = false;
                }
                Err(why) if !failing => {
                    tracing::warn!("cluster: cannot follow the primary's map: {why}");
                    failing = true;
                }
                Err(_) => {}
            }
        }
    })?;
    Ok(())
}

/// Redis Cluster mode: the map from `file` (in --dir), or a new node's own if none.
fn open_cluster(config: &Config, file: &str) -> Result<exec::resp::cluster::Cluster, String> {
    let path = std::path::Path::new(&config.dir).join(file);
    // A new node names itself by the address it listens on, where that is one address.
    let ip = match config.listen.as_slice() {
        [ip] if !ip.is_unspecified() => ip.to_string(),
        _ => String::new(),
    };
    exec::resp::cluster::Cluster::open(&path, &ip, config.resp_port)
}

/// memcached `-Z` as `stats settings` shows it.
fn ssl_settings(config: &Config, tls: &tls::Settings) -> exec::SslSettings {
    let verify_mode = config.ssl_suboptions.iter().rev().find(|(k, _)| k == "ssl_verify_mode");
    exec::SslSettings {
        chain_cert: tls.cert_path.clone(),
        key: tls.key_path.clone(),
        verify_mode: verify_mode.and_then(|(_, v)| v.parse().ok()).unwrap_or(0),
        ca_cert: tls.ca_path.clone(),
        min_version: match tls.versions {
            tls::Versions::Tls13Only => "tlsv1.3",
            tls::Versions::Tls12AndTls13 | tls::Versions::Tls12Only => "tlsv1.2",
        },
    }
}

fn loop_config(
    config: &Config,
    backend: rt::Backend,
    index: usize,
    buffers: &Arc<rt::BufferBudget>,
    stats: &Arc<rt::LoopStats>,
    idle_timeout: &rt::IdleTimeout,
) -> rt::LoopConfig {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    rt::LoopConfig {
        backend,
        pin_cpu: config.pin.then_some(index % cpus),
        busy_poll_us: config.busy_poll_us,
        idle_timeout: idle_timeout.clone(),
        output_pause_bytes: config.output_pause_bytes(),
        output_limit_bytes: (config.output_limit_mib as usize) << 20,
        buffers: Arc::clone(buffers),
        recv_buffers: recv_buffers_per_loop(config.threads),
        input_budget_bytes: (INPUT_TAILS_TOTAL_BYTES / config.threads.max(1)).max(64 * 1024),
        input_tails_max: input_tails_max(config),
        recv_buffer_bytes: RECV_BUFFER_BYTES as u32,
        stats: Arc::clone(stats),
        zerocopy_min_bytes: usize::try_from(config.zerocopy_min_bytes).unwrap_or(usize::MAX),
        ..Default::default()
    }
}

/// memcached's `-o read_buf_mem_limit`: each thread gets limit/threads read buffers of
/// 16 KiB (at least one), and a connection holds one while it has an incomplete request.
fn input_tails_max(config: &Config) -> usize {
    const READ_BUFFER_BYTES: usize = 16 * 1024;
    match (config.read_buf_mem_limit_mib as usize) << 20 {
        0 => usize::MAX,
        bytes => (bytes / config.threads.max(1) / READ_BUFFER_BYTES).max(1),
    }
}

/// io_uring receive buffers: every buffer of a loop's ring becomes resident as the kernel
/// cycles through them, so their total is part of the process's fixed overhead. All loops
/// together get about this much (each at least `RECV_BUFFERS_MIN` buffers); with 2 loops,
/// 32 buffers of 16 KiB each (the default before: 128 of 16 KiB, 2 MiB per loop).
const RECV_RING_TOTAL_BYTES: usize = 1 << 20;
/// Partly received requests (a large value arriving) of all connections together: past
/// this, each loop lets one at a time read on (rt's input budget). With the rings, this is
/// the fixed overhead the process keeps above -m for connection input.
const INPUT_TAILS_TOTAL_BYTES: usize = 1 << 20;
/// Heap the connection buffers leave behind between bursts (the allocator keeps freed
/// blocks for reuse). Measured at -m 64 under the drift load: resident memory 1.5-1.6 MiB
/// above the store's and the buffers' own counts, on either back end, more with a faster
/// client (CI's machine, 1.7x the sets per second: 1.4 MiB more at the samples).
const BUFFER_SLACK_BYTES: usize = 2 << 20;
/// io_uring's multishot receives bring a ring's worth of input in before the loop can hold a
/// connection: peaks 2 MiB above the sampled steady state (VmHWM 72.5-73.1 MiB against
/// 70.1-71.8 sampled, -m 64, when this was not counted), more with a faster client.
const URING_BURST_BYTES: usize = 3 << 20;
/// memcached's read size (`READ_BUFFER_SIZE`): a command line that arrives whole in one read
/// of up to 16 KiB is served however long it is (proto-memcache's `line_len_max_whole`), so
/// a read must be able to hold one.
const RECV_BUFFER_BYTES: usize = 16 * 1024;
const _: () = assert!(RECV_BUFFER_BYTES >= proto_memcache::limits::LINE_LEN_MAX_WHOLE_DEFAULT);
const RECV_BUFFERS_MIN: usize = 16;
const RECV_BUFFERS_MAX: usize = 64;

fn recv_buffers_per_loop(threads: usize) -> u16 {
    let fair = RECV_RING_TOTAL_BYTES / threads.max(1) / RECV_BUFFER_BYTES;
    // A power of two, as the ring requires: the largest not above the fair share.
    let pow2 = if fair == 0 { 1 } else { 1 << fair.ilog2() };
    pow2.clamp(RECV_BUFFERS_MIN, RECV_BUFFERS_MAX) as u16
}

/// Lists the memcached listeners for `stats conns`, one per address (as memcached has), not
/// one per worker; their connections' entries point at them.
fn register_listeners(
    shared: &Shared,
    config: &Config,
    memcache_addrs: &[SocketAddr],
) -> Vec<exec::conns::SharedConn> {
    use exec::conns::{Addr, ConnEntry, ConnState};
    let unix = config.unix_socket.iter().map(|path| Addr::Unix(path.as_str().into()));
    let tcp = memcache_addrs.iter().map(|&addr| Addr::Tcp(addr));
    let listening = |addr| ConnEntry::new(addr, None, ConnState::Listening, 0);
    unix.chain(tcp).map(|addr| shared.core.clients.register_conn(listening(addr))).collect()
}
