//! `spinel-bench compare`: Spinel and its peers (memcached, Redis, Valkey, pogocache, the
//! store-less limit nullmc, any `--server-cmd`; see [`peers`]) side by side on the machine
//! at hand, measured the way `shared/bench/kvbench.py` measures (server pinned to one CPU,
//! load to another, server CPU around the measured phase (nanoseconds, from its threads'
//! /proc/PID/task/*/schedstat), an idle-machine check and a noisy flag from /proc/stat,
//! interleaved repetitions, medians with spread).
//!
//! ```text
//!   start servers (pinned: taskset -c SERVER_CPUS)      skipped ones are reported, with why
//!     --instances N: each N times, keys sharded by ketama over them ([`instances`])
//!   for rep in 1..=R:                                   repetitions outermost
//!     for workload in matrix:                         mix x keys/get x sizes x pipeline
//!                                                     x connections x rate (open loop)
//!       restart store-less servers for its value size (nullmc answers one fixed size)
//!       for server in servers (rotated each workload):  interleaved within the workload
//!         wait for an idle machine (bounded)
//!         (--structure stream: FLUSHALL, as its preload appends)
//!         preload + warm-up run (unmeasured)
//!         sample CPU: server pid, this process, /proc/stat
//!         measured run (load threads pinned to CLIENT_CPUS)
//!         sample CPU again -> rates, per-CPU-second rates, foreign CPU -> noisy
//!   stop servers; thread sweep: all but Redis, Valkey with -t 1..N, get 20/20, R times
//!     (one instance; skipped with --instances above 1)
//!   medians + spread -> compare.md (per workload: a column per server and ratio rows to
//!   the limit server and memcached; then one line per run), compare.csv, compare.html
//!   (inline SVG), compare.json (with each run's latency histogram)
//! ```
//!
//! Goals: one command, bounded time (an estimate is printed first; every run and every
//! wait has a limit), no process left behind (see [`servers`]), and the CPU-normalized
//! rate, which survives a client that cannot saturate the server.
//! At a fixed offered rate (`--rate`) the load is open loop and latency counts from each
//! request's intended send time ([`crate::ratelimit`]); server CPU per request is then
//! the measure (the rate is the same for all), read to /proc's 10 ms ticks, so give low
//! rates long runs. Non-goal: other machines than loopback.

pub mod cpu;
pub mod instances;
pub mod matrix;
pub mod options;
pub mod peers;
pub mod report_html;
pub mod report_json;
pub mod report_md;
pub mod servers;

use std::{
    path::PathBuf,
    sync::mpsc,
    time::{Duration, Instant},
};

pub use options::Options;

use self::{
    cpu::CpuSnapshot,
    instances::Group,
    matrix::{Cell, Row, Sample},
    peers::Spec,
    servers::Launch,
};
use crate::{
    client::Protocol,
    histogram,
    runner::{self, Config, Stop, Summary},
    workload::{KeyDistribution, Structure, ValueSizes, Workload},
};

/// Busy CPU below this (% of one core, whole machine) counts as idle before a run.
const IDLE_PCT: f64 = 10.0;
/// Extra time a run may take beyond its warm-up and duration before it is abandoned.
const RUN_SLACK: Duration = Duration::from_secs(30);

/// What a comparison produced.
pub struct Outcome {
    pub rows: Vec<Row>,
    pub sweep: Vec<Row>,
    /// Servers not measured, with the reason.
    pub skipped: Vec<(String, String)>,
    /// Runs that failed (server, workload, why); they are left out of the medians.
    pub failures: Vec<String>,
    /// compare.md's table (also printed by the command).
    pub markdown: String,
    pub files: Vec<PathBuf>,
    pub elapsed: Duration,
}

/// Requests in flight per connection at least, in open loop: enough that a connection
/// keeps to the schedule while earlier replies are outstanding (as the load run's --rate).
const OPEN_LOOP_PIPELINE: usize = 16;

/// One thing to measure: a server and the ports (one per instance, sharded by ketama) and
/// protocol to speak to it on.
struct Target {
    label: String,
    server: usize,
    ports: Vec<u16>,
    protocol: Protocol,
    /// The store-less limit server: its values are filler, not checked.
    limit: bool,
}

/// The seconds a run of `o` takes, roughly: idle check, preload, warm-up, measure, drain.
fn run_secs(o: &Options) -> f64 {
    0.9 + o.warmup.as_secs_f64() + o.duration.as_secs_f64()
}

/// A rough upper estimate of the whole comparison, in seconds.
pub fn estimate_secs(o: &Options) -> f64 {
    let resp = o.servers.iter().filter(|s| o.resp && s.resp_too().is_some()).count();
    let targets = o.servers.len() + resp;
    let matrix = (o.repeat * o.cells.len() * targets) as f64 * run_secs(o)
        + (o.servers.len() * o.instances) as f64 * 0.2;
    let sweepers = o.servers.iter().filter(|s| s.sweeps() && o.instances == 1).count();
    let sweep = (o.repeat * o.sweep_threads * sweepers) as f64 * (run_secs(o) + 0.5);
    matrix + sweep + 3.0
}

fn workload_config(
    o: &Options,
    cell: &Cell,
    ports: &[u16],
    protocol: Protocol,
    cpus: &[usize],
) -> Config {
    Config {
        // Several: each key goes to one by the ketama ring, as `-s a,b,...` does.
        servers: ports.iter().map(|port| format!("127.0.0.1:{port}")).collect(),
        protocol,
        threads: o.client_threads,
        connections: cell.connections.div_ceil(o.client_threads),
        pipeline: if cell.open_loop() {
            cell.pipeline.max(OPEN_LOOP_PIPELINE)
        } else {
            cell.pipeline
        },
        workload: Workload {
            keyspace: o.keyspace,
            key_size: cell.key_size,
            key_size_max: 0,
            key_distribution: KeyDistribution::Uniform,
            value_sizes: ValueSizes::Fixed(cell.value_size),
            ratio: cell.pattern.ratio(),
            keys_per_get: cell.keys_per_get,
            ttl_secs: 0,
            structure: o.structure,
            fields: o.fields,
        },
        preload: false,
        warmup: Duration::ZERO,
        stop: Stop::Duration(o.duration),
        rate_per_sec: cell.open_loop().then_some(cell.rate_per_sec),
        seed: 1,
        ketama_names: runner::KetamaNames::Twemproxy,
        pin_cpus: cpus.to_vec(),
        cluster: false,
    }
}

/// Runs `config` on its own thread and gives up after `limit` (the servers are stopped by
/// the caller then, which ends the stuck run's connections).
fn run_bounded(config: Config, limit: Duration) -> Result<Summary, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("compare-run".into())
        .spawn(move || {
            let _ = tx.send(runner::run(&config, |_| {}));
        })
        .map_err(|e| format!("spawn: {e}"))?;
    rx.recv_timeout(limit)
        .map_err(|_| format!("the run did not finish within {} s", limit.as_secs()))?
}

/// The CPUs whose foreign load disturbs a run: the servers' and the client's.
fn watched_cpus(server: &[usize], client: &[usize]) -> Vec<usize> {
    let mut cpus: Vec<usize> = server.iter().chain(client).copied().collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// A stream's preload appends (XADD) where other structures' overwrite: each run starts
/// from empty servers instead, so every run reads the same backlog (its groups are created
/// again, on -NOGROUP, in the warm-up).
fn flush_streams(ports: &[u16]) -> Result<(), String> {
    for port in ports {
        let addr = format!("127.0.0.1:{port}");
        let mut wire = crate::memory::wire::Wire::connect(&addr, Duration::from_secs(60))?;
        crate::memory::flush(&mut wire).map_err(|e| format!("FLUSHALL {addr}: {e}"))?;
    }
    Ok(())
}

/// Preloads, warms up and measures one workload on one target.
fn measure(
    o: &Options,
    cell: &Cell,
    target: &Target,
    servers: &[Group],
    server_cpus: &[usize],
) -> Result<Sample, String> {
    let ours = || servers.iter().map(Group::cpu_secs).sum::<f64>();
    let _ = cpu::wait_idle(o.idle_wait, IDLE_PCT, ours);
    if o.structure == Structure::Stream {
        flush_streams(&target.ports)?;
    }
    let mut config = workload_config(o, cell, &target.ports, target.protocol, &o.client_cpus);
    let limit = o.duration + o.warmup + RUN_SLACK;
    // Unmeasured: set every key, then run the workload for the warm-up.
    let mut warm = config.clone();
    warm.preload = true;
    warm.stop = Stop::Duration(o.warmup.max(Duration::from_millis(100)));
    let warmed = run_bounded(warm, limit)?;
    let preload_errors = warmed.preload.as_ref().map_or(0, |p| p.stats.counts.errors_total());
    if preload_errors > 0 {
        return Err(format!("preload: {preload_errors} errors"));
    }
    config.seed = 2;
    let server = &servers[target.server];
    let (stat0, ours0, server0, self0) =
        (CpuSnapshot::read(), ours(), server.instance_cpu_secs(), cpu::self_cpu_secs());
    let wall = Instant::now();
    let summary = run_bounded(config, limit)?;
    let wall = wall.elapsed();
    let (stat1, ours1, server1, self1) =
        (CpuSnapshot::read(), ours(), server.instance_cpu_secs(), cpu::self_cpu_secs());
    let instance_cpu_secs: Vec<f64> = server1.iter().zip(&server0).map(|(b, a)| b - a).collect();
    let client_cpu_secs = self1 - self0;
    let cpus = watched_cpus(server_cpus, &o.client_cpus);
    let noise =
        cpu::noise(&stat0, &stat1, &cpus, ours1 - ours0 + client_cpu_secs, wall, o.noise_pct);
    let mut c = summary.stats.counts.clone();
    if target.limit {
        // The limit server answers with filler: a value is a hit, there is nothing to check.
        (c.hits, c.misses, c.corrupt) = (c.hits + c.corrupt, c.misses.saturating_sub(c.corrupt), 0);
    }
    let h = &summary.stats.latency_ns;
    Ok(Sample {
        secs: summary.elapsed.as_secs_f64(),
        requests: c.requests(),
        keys: c.get_keys + c.sets,
        hits: c.hits,
        misses: c.misses,
        errors: c.errors_total(),
        corrupt: c.corrupt,
        bytes_received: c.bytes_received,
        latency_us_p50: histogram::quantile(h, 0.5) as f64 / 1e3,
        latency_us_p99: histogram::quantile(h, 0.99) as f64 / 1e3,
        latency_us_p999: histogram::quantile(h, 0.999) as f64 / 1e3,
        server_cpu_secs: instance_cpu_secs.iter().sum(),
        instance_cpu_secs: if instance_cpu_secs.len() > 1 { instance_cpu_secs } else { Vec::new() },
        client_cpu_secs,
        foreign_pct: noise.foreign_pct,
        noisy: noise.noisy,
        latency_histogram: histogram::to_base64(h),
    })
}

fn progress_line(rep: usize, o: &Options, what: &str, result: &Result<Sample, String>) -> String {
    let head = format!("[{}/{}] {what:<34}", rep + 1, o.repeat);
    match result {
        Ok(s) => format!(
            "{head} {:>9} req/s {:>9} keys/s {:>9} req/srv-CPU-s  srv CPU {:.2}  client CPU \
             {:.2}  foreign {:.1}%{}{}",
            report_md::si(s.req_per_sec()),
            report_md::si(s.keys_per_sec()),
            report_md::si(s.req_per_server_cpu_sec()),
            s.server_utilization(),
            s.client_utilization(),
            s.foreign_pct,
            if s.noisy { "  NOISY" } else { "" },
            if s.errors + s.corrupt > 0 {
                format!("  ERRORS {} corrupt {}", s.errors, s.corrupt)
            } else {
                String::new()
            }
        ),
        Err(e) => format!("{head} FAILED: {e}"),
    }
}

/// The CPUs for a server with `threads` threads in the sweep: the server CPUs first, then
/// the others (so above the server CPU count, the server shares the client's CPUs).
fn sweep_cpus(o: &Options, threads: usize) -> Vec<usize> {
    let mut order = o.server_cpus.clone();
    for cpu in options::online_cpus() {
        if !order.contains(&cpu) {
            order.push(cpu);
        }
    }
    order.truncate(threads.max(o.server_cpus.len()).min(order.len()));
    order
}

fn launch(o: &Options) -> Launch {
    let connections = o.cells.iter().map(|c| c.connections).max().unwrap_or(o.connections);
    Launch {
        spinel_bin: o.spinel_bin.clone(),
        memory_mib: o.memory_mib,
        // The load's connections plus room for the preload's and the tool's own.
        max_connections: (connections + 512).max(1024),
        // Spinel's collections are on its RESP port.
        resp: o.resp || o.structure != Structure::String,
        log_dir: o.out_dir.join("logs"),
    }
}

/// The open-file limit this run needs: the servers inherit ours and each holds up to its
/// `max_connections`; the load holds its connections in this process. Raised (soft limit,
/// up to the hard one) before any server starts.
fn raise_open_files(o: &Options) -> Result<(), String> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let connections = o.cells.iter().map(|c| c.connections).max().unwrap_or(o.connections);
    // The load holds one connection per instance for each of its connections.
    let connections = connections * o.instances;
    let want = (launch(o).max_connections.max(connections) + 256) as u64;
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(|e| format!("getrlimit: {e}"))?;
    if soft >= want {
        return Ok(());
    }
    setrlimit(Resource::RLIMIT_NOFILE, want.min(hard), hard)
        .map_err(|e| format!("setrlimit: {e}"))?;
    if want > hard {
        return Err(format!(
            "{connections} connections need {want} open files; the hard limit is {hard} \
             (raise it: ulimit -Hn, or run as root)"
        ));
    }
    Ok(())
}

/// The targets of the started servers: each on its main ports, and `NAME-resp` where the
/// server has RESP ports; only the RESP ones for a structure other than string.
fn targets_of(o: &Options, servers: &[Group]) -> Vec<Target> {
    let mut targets = all_targets_of(servers);
    if o.structure != Structure::String {
        targets.retain(|t| t.protocol == Protocol::Resp);
    }
    targets
}

fn all_targets_of(servers: &[Group]) -> Vec<Target> {
    let mut targets = Vec::new();
    for (i, s) in servers.iter().enumerate() {
        let limit = s.spec().is_limit();
        targets.push(Target {
            label: s.name().into(),
            server: i,
            ports: s.ports(),
            protocol: s.protocol(),
            limit,
        });
        if let Some(ports) = s.resp_ports() {
            let label = format!("{}-resp", s.name());
            targets.push(Target { label, server: i, ports, protocol: Protocol::Resp, limit });
        }
    }
    targets
}

/// Restarts the store-less servers whose replies have another value size than `cell`'s;
/// one that fails to restart is marked dead, with the reason in `failures`.
fn fit_value_size(
    servers: &mut [Group],
    dead: &mut [bool],
    cell: &Cell,
    o: &Options,
    launch: &Launch,
    progress: &mut dyn FnMut(&str),
    failures: &mut Vec<String>,
) {
    for (i, s) in servers.iter_mut().enumerate() {
        if dead[i] || !s.spec().per_value_size() || s.value_size() == cell.value_size {
            continue;
        }
        // The old instances go first: their ports and CPU are not needed any more.
        let spec = s.spec().clone();
        s.instances.truncate(1);
        let (threads, cpus) = (o.server_threads, &o.server_cpus);
        match Group::start(&spec, launch, threads, cpus, cell.value_size, o.instances) {
            Ok(fresh) => {
                progress(&format!(
                    "restarted {} for {}-byte values ({})",
                    fresh.name(),
                    cell.value_size,
                    fresh.describe()
                ));
                // The old one is stopped when dropped here. Ports change: targets follow.
                *s = fresh;
            }
            Err(e) => {
                let why = format!("{}: restart for {}-byte values: {e}", s.name(), cell.value_size);
                progress(&why);
                failures.push(why);
                dead[i] = true;
            }
        }
    }
}

/// Starts every server; the ones that cannot start are skipped with the reason.
fn start_all(
    o: &Options,
    launch: &Launch,
    progress: &mut dyn FnMut(&str),
    skipped: &mut Vec<(String, String)>,
) -> Vec<Group> {
    let value_size = o.cells.first().map_or(20, |c| c.value_size);
    let mut servers = Vec::new();
    for spec in &o.servers {
        let resp = spec.protocol() == Protocol::Resp || spec.resp_too().is_some();
        if o.structure != Structure::String && !resp {
            let why = format!("speaks no RESP (--structure {})", o.structure.name());
            progress(&format!("skipped {}: {why}", spec.name()));
            skipped.push((spec.name().to_string(), why));
            continue;
        }
        let (threads, cpus) = (o.server_threads, &o.server_cpus);
        match Group::start(spec, launch, threads, cpus, value_size, o.instances) {
            Ok(s) => {
                progress(&format!("started {} ({})", spec.name(), s.describe()));
                servers.push(s);
            }
            Err(why) => {
                progress(&format!("skipped {}: {why}", spec.name()));
                skipped.push((spec.name().to_string(), why));
            }
        }
    }
    servers
}

/// The matrix: start the servers, measure every workload on each, `repeat` times.
fn run_matrix(
    o: &Options,
    progress: &mut dyn FnMut(&str),
    skipped: &mut Vec<(String, String)>,
    failures: &mut Vec<String>,
) -> Result<Vec<Row>, String> {
    let launch = launch(o);
    let mut servers = start_all(o, &launch, progress, skipped);
    if servers.is_empty() {
        return Err("no server could be started".into());
    }
    let labels: Vec<String> = targets_of(o, &servers).into_iter().map(|t| t.label).collect();
    let mut samples: Vec<Vec<Vec<Sample>>> = vec![vec![Vec::new(); labels.len()]; o.cells.len()];
    let mut dead = vec![false; servers.len()];
    for rep in 0..o.repeat {
        for (ci, cell) in o.cells.iter().enumerate() {
            fit_value_size(&mut servers, &mut dead, cell, o, &launch, progress, failures);
            let targets = targets_of(o, &servers);
            // Rotate the order so no server always runs first (or right after another).
            for k in 0..targets.len() {
                let ti = (k + rep + ci) % targets.len();
                let target = &targets[ti];
                if dead[target.server] {
                    continue;
                }
                let result = measure(o, cell, target, &servers, &o.server_cpus);
                let what = format!("{} {}", cell.name(), target.label);
                progress(&progress_line(rep, o, &what, &result));
                match result {
                    Ok(sample) => samples[ci][ti].push(sample),
                    Err(e) => failures.push(format!("{what} (rep {}): {e}", rep + 1)),
                }
                if !servers[target.server].alive() {
                    dead[target.server] = true;
                    let why = "died during the comparison (see logs/)".to_string();
                    progress(&format!("{} {why}", target.label));
                    failures.push(format!("{}: {why}", target.label));
                }
            }
        }
    }
    drop(servers);
    let mut rows = Vec::new();
    for (ci, cell) in o.cells.iter().enumerate() {
        for (ti, label) in labels.iter().enumerate() {
            if !samples[ci][ti].is_empty() {
                rows.push(Row::new(*cell, label, o.server_threads, &samples[ci][ti]));
            }
        }
    }
    Ok(rows)
}

/// The thread sweep: the servers with worker threads (Spinel, memcached, pogocache,
/// nullmc, commands with {threads}) at -t 1..N on get 20/20, `repeat` times. Not with
/// several instances (which CPUs N instances of -t T should have is another study).
fn run_sweep(
    o: &Options,
    skipped: &[(String, String)],
    progress: &mut dyn FnMut(&str),
    failures: &mut Vec<String>,
) -> Vec<Row> {
    if o.instances > 1 {
        return Vec::new();
    }
    let specs: Vec<&Spec> = o
        .servers
        .iter()
        .filter(|s| s.sweeps() && !skipped.iter().any(|(name, _)| name == s.name()))
        .collect();
    let mut launch = launch(o);
    launch.resp = false;
    let cell = matrix::sweep_cell();
    let points: Vec<(&Spec, usize)> =
        (1..=o.sweep_threads).flat_map(|t| specs.iter().map(move |s| (*s, t))).collect();
    let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); points.len()];
    for rep in 0..o.repeat {
        for (pi, &(spec, threads)) in points.iter().enumerate() {
            let cpus = sweep_cpus(o, threads);
            let what = format!("{} {} -t {threads}", cell.name(), spec.name());
            let result = Group::start(spec, &launch, threads, &cpus, cell.value_size, 1).and_then(
                |server| {
                    let target = Target {
                        label: spec.name().into(),
                        server: 0,
                        ports: server.ports(),
                        protocol: server.protocol(),
                        limit: spec.is_limit(),
                    };
                    measure(o, &cell, &target, std::slice::from_ref(&server), &cpus)
                },
            );
            progress(&progress_line(rep, o, &what, &result));
            match result {
                Ok(sample) => samples[pi].push(sample),
                Err(e) => failures.push(format!("{what} (rep {}): {e}", rep + 1)),
            }
        }
    }
    points
        .iter()
        .zip(&samples)
        .filter(|(_, s)| !s.is_empty())
        .map(|(&(spec, threads), s)| Row::new(cell, spec.name(), threads, s))
        .collect()
}

fn machine_note() -> String {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name").map(|m| m.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_default();
    format!("machine: {} CPUs ({model}), Linux {}", options::online_cpus().len(), kernel.trim())
}

/// How many instances each server ran as, and what that changes.
fn instances_note(o: &Options) -> String {
    if o.instances == 1 {
        return "instances: one of each server (x1 instances)".into();
    }
    format!(
        "instances: x{n} instances of each server, all pinned to the server CPUs, each on its \
         own loopback port (and its own RESP port where it has one); the load shards keys \
         over them by ketama (twemproxy names, host:port) as spinel-bench -s a,b,... does, \
         preload included; each of a workload's connections is one connection per instance \
         ({n} sockets); server CPU is the sum over the {n} instances (compare.json has each \
         instance's CPU per run)",
        n = o.instances
    )
}

fn notes(o: &Options, outcome: &Outcome) -> Vec<String> {
    let cpus = |c: &[usize]| c.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
    let mut notes = vec![
        format!("command: {}", o.command),
        machine_note(),
        format!(
            "method: servers pinned to CPU {} (-t {}), load on CPU {} ({} thread(s)); {} \
             connections and pipeline 1 in closed loop unless the workload's name says cN \
             (connections), pN (pipeline) or @R/s (open loop at R requests/s, up to \
             max(16, N) in flight per connection, latency from each request's intended send \
             time); key space {} keys, all preloaded; {} s \
             measured after {} s warm-up; {} repetition(s), servers interleaved within each \
             workload; medians, spread = (max-min)/median of req/s and of req per server \
             CPU-s; server CPU = its threads' time on CPU (/proc/PID/task/*/schedstat, ns); a \
             run is noisy when other processes used more than {}% of a core on those CPUs (or \
             steal > 2%)",
            cpus(&o.server_cpus),
            o.server_threads,
            cpus(&o.client_cpus),
            o.client_threads,
            o.connections,
            o.keyspace,
            o.duration.as_secs_f64(),
            o.warmup.as_secs_f64(),
            o.repeat,
            o.noise_pct
        ),
        instances_note(o),
        structure_note(o),
        "protocols: memcache text for Spinel, memcached, pogocache and nullmc, RESP for \
         Redis, Valkey and the -resp targets; keys/s counts every key of a multiget and every \
         set; nullmc (and any :limit server) has no store: its values are filler, not checked"
            .to_string(),
    ];
    if o.quick && o.cells == matrix::quick_matrix() {
        notes.push(
            "--quick: one repetition of 2 s runs; of the 16 workloads it keeps single gets at \
             all four sizes, 48-key multigets at 20/20 and the 9:1 mix at 20/20 (single and \
             multiget); it drops 9:1 and multigets at 32/128, 64/1024 and 64/10000"
                .to_string(),
        );
    }
    if o.sweep_threads > 0 && o.instances > 1 {
        notes.push(format!("thread sweep: skipped (x{} instances)", o.instances));
    } else if o.sweep_threads > 0 {
        notes.push(format!(
            "thread sweep: -t 1..{} with the server on CPUs {} first; above {} thread(s) \
             the server shares the load generator's CPUs, so read req per server CPU-s there",
            o.sweep_threads,
            cpus(&sweep_cpus(o, o.sweep_threads)),
            o.server_cpus.len()
        ));
    }
    for (name, why) in &outcome.skipped {
        notes.push(format!("skipped {name}: {why}"));
    }
    for failure in &outcome.failures {
        notes.push(format!("failed run: {failure}"));
    }
    notes.push(format!("took {:.0} s", outcome.elapsed.as_secs_f64()));
    notes
}

/// Which data type the workloads read and write.
fn structure_note(o: &Options) -> String {
    let what = match o.structure {
        Structure::String => return "structure: string (SET/GET, MGET for multigets)".into(),
        Structure::Hash => "HSET key field value / HGET key field (values verified)",
        Structure::List => "LPUSH key value / RPOP key (a null is a miss)",
        Structure::Set => "SADD key member / SISMEMBER key member (:0 is a miss)",
        Structure::Zset => "ZADD key score member / ZRANGE key 0 9 (an empty array is a miss)",
        Structure::Stream => {
            "XADD key * item f at n value v / even fields: XREADGROUP GROUP bench bench COUNT 10 \
             STREAMS key > then XACK of what it delivered (one op, two round trips; nothing new \
             is a miss), odd fields: XRANGE key - + COUNT 10 (entries verified)"
        }
        Structure::Geo => {
            "GEOADD key lon lat member (places drawn from the id) / by field: GEOSEARCH \
             FROMLONLAT BYRADIUS 5 km ASC COUNT 10 (half), GEODIST, GEOPOS (checked)"
        }
        Structure::Multi => {
            return "structure: multi: MULTI, SET a, SET b, EXEC / MULTI, GET a, GET b (one per \
                    key of a multiget), EXEC as one request; values verified; RESP targets only"
                .into()
        }
    };
    format!(
        "structure: {}: {what}; {} fields per key (ids = keys x fields, all preloaded; a \
         multiget is that many commands in one request); RESP targets only",
        o.structure.name(),
        o.fields
    )
}

/// A line above the tables when the servers ran as several instances, so a table read on
/// its own says so.
fn instances_heading(o: &Options) -> String {
    if o.instances == 1 {
        return String::new();
    }
    format!(
        "Every server as x{} instances, keys sharded by ketama; server CPU summed over them.\n\n",
        o.instances
    )
}

/// The server the per-workload table divides by: the first limit server measured.
fn limit_label<'a>(o: &'a Options, rows: &[Row]) -> Option<&'a str> {
    o.servers
        .iter()
        .filter(|s| s.is_limit())
        .map(Spec::name)
        .find(|name| rows.iter().any(|r| r.server == *name))
}

/// Runs the comparison and writes the report files; `progress` sees one line per step.
pub fn run(o: &Options, progress: &mut dyn FnMut(&str)) -> Result<Outcome, String> {
    let start = Instant::now();
    std::fs::create_dir_all(&o.out_dir).map_err(|e| format!("{}: {e}", o.out_dir.display()))?;
    raise_open_files(o)?;
    let sweep = if o.instances > 1 { 0 } else { o.sweep_threads };
    progress(&format!(
        "compare: {} workload(s) x {} server(s) (x{} instances) x {} repetition(s), thread \
         sweep 1..{sweep}; estimated {:.0} s",
        o.cells.len(),
        o.servers.len(),
        o.instances,
        o.repeat,
        estimate_secs(o)
    ));
    let (mut skipped, mut failures) = (Vec::new(), Vec::new());
    let rows = run_matrix(o, progress, &mut skipped, &mut failures)?;
    let sweep = run_sweep(o, &skipped, progress, &mut failures);
    let mut outcome = Outcome {
        markdown: format!(
            "{}{}\n{}",
            instances_heading(o),
            report_md::per_server_markdown(&rows, limit_label(o, &rows)),
            report_md::markdown(&rows)
        ),
        rows,
        sweep,
        skipped,
        failures,
        files: Vec::new(),
        elapsed: start.elapsed(),
    };
    let notes = notes(o, &outcome);
    let mut md = String::from("# spinel-bench compare\n\n");
    for note in &notes {
        md.push_str(&format!("- {note}\n"));
    }
    md.push('\n');
    md.push_str(&outcome.markdown);
    if !outcome.sweep.is_empty() {
        md.push('\n');
        md.push_str(&report_md::sweep_markdown(&outcome.sweep));
    }
    let meta = report_html::Meta {
        title: "spinel-bench compare",
        notes: &notes,
        limit: limit_label(o, &outcome.rows),
    };
    let files = [
        ("compare.md", md),
        ("compare.csv", report_md::csv(&outcome.rows, &outcome.sweep)),
        ("compare.html", report_html::html(&meta, &outcome.rows, &outcome.sweep)),
        ("compare.json", report_json::json(&o.command, &notes, &outcome)),
    ];
    for (name, text) in files {
        let path = o.out_dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        outcome.files.push(path);
    }
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_is_bounded() {
        let quick = Options::defaults(true);
        assert!(estimate_secs(&quick) < 170.0, "{}", estimate_secs(&quick));
        let full = Options::defaults(false);
        assert!(estimate_secs(&full) < 30.0 * 60.0, "{}", estimate_secs(&full));
        assert_eq!(watched_cpus(&[1], &[0, 1]), vec![0, 1]);
    }
}
