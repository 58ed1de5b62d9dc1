//! A run: threads × connections, preload, warm-up, then the measured phase (closed loop
//! with a pipeline depth, or open loop at a global rate), with stats per interval and in
//! total.
//!
//! ```text
//!   main                      thread 0..T-1
//!   ----                      -------------
//!   resolve, build ring       connect (connections × servers)
//!   barrier  <--------------> barrier
//!   (preload timing)          preload: set own slice of the key space (closed loop)
//!   barrier  <--------------> barrier
//!   start clock -> barrier <> barrier, read start
//!   collect intervals <------ warm-up (unrecorded), measure: one IntervalMsg per second
//!   join    <---------------- drain in-flight, return the last partial interval
//! ```

use std::{
    net::{SocketAddr, ToSocketAddrs},
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        mpsc, Barrier, Mutex,
    },
    thread,
    time::{Duration, Instant},
};

use crate::{
    client::{ErrorKind, Protocol},
    cluster::{self, SlotMap},
    engine::{Engine, IntervalMsg, Phase, PhaseEnd, Source},
    ketama::{self, Ketama},
    ratelimit::Schedule,
    stats::Stats,
    workload::{KeyFormat, Structure, Workload},
};

/// When the measured phase ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Duration(Duration),
    /// Total measured requests over all threads.
    Requests(u64),
}

/// Which name each server has on the ketama ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KetamaNames {
    /// `host:port` (twemproxy without server names).
    Twemproxy,
    /// `host`, or `host:port` when the port is not 11211 (libmemcached).
    Libmemcached,
}

/// Everything a run needs; `cli` builds one from flags, `compare` builds its own.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `host:port` each.
    pub servers: Vec<String>,
    pub protocol: Protocol,
    pub threads: usize,
    /// Clients per thread (each has one connection per server).
    pub connections: usize,
    /// Ops in flight per client.
    pub pipeline: usize,
    pub workload: Workload,
    pub preload: bool,
    pub warmup: Duration,
    pub stop: Stop,
    /// Open loop: total requests per second; `None` = closed loop.
    pub rate_per_sec: Option<u64>,
    pub seed: u64,
    pub ketama_names: KetamaNames,
    /// Pin thread i to `pin_cpus[i % len]`.
    pub pin_cpus: Vec<usize>,
    /// Redis Cluster: `servers` are seeds; the primaries come from CLUSTER SLOTS and keys
    /// go by slot instead of ketama ([`crate::cluster`]).
    pub cluster: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            servers: vec!["127.0.0.1:11211".into()],
            protocol: Protocol::Memcache,
            threads: 1,
            connections: 50,
            pipeline: 1,
            workload: Workload::default(),
            preload: false,
            warmup: Duration::ZERO,
            stop: Stop::Duration(Duration::from_secs(5)),
            rate_per_sec: None,
            seed: 1,
            ketama_names: KetamaNames::Twemproxy,
            pin_cpus: Vec::new(),
            cluster: false,
        }
    }
}

/// One second of the measured phase, all threads merged.
pub struct Interval {
    pub index: u64,
    pub stats: Stats,
}

/// Preload results.
#[derive(Debug, Clone)]
pub struct PreloadSummary {
    pub keys: u64,
    pub elapsed: Duration,
    pub stats: Stats,
}

/// The result of a run.
#[derive(Debug, Clone)]
pub struct Summary {
    pub config: Config,
    /// Length of the measured phase (warm-up excluded).
    pub elapsed: Duration,
    pub stats: Stats,
    /// Counted outside the measurement (warm-up, failed connections before it).
    pub unmeasured: Stats,
    pub preload: Option<PreloadSummary>,
    /// Ops still unanswered when the run ended.
    pub unanswered: u64,
    /// Open loop: requests due by the end but never sent (the client or server could not
    /// keep up with the rate).
    pub behind: u64,
    /// The first failure that closed a connection, if any.
    pub first_failure: Option<String>,
}

/// What the threads share (read-only, except the abort flag and failure note).
pub struct Shared {
    pub config: Config,
    pub addrs: Vec<SocketAddr>,
    pub ring: Ketama,
    /// Cluster mode: the slot map read at start (each thread keeps its own copy, which
    /// redirects correct).
    pub slots: Option<SlotMap>,
    pub format: KeyFormat,
    pub abort: AtomicBool,
    base: Instant,
    start_ns: AtomicU64,
    failure: Mutex<Option<String>>,
}

impl Shared {
    pub fn now_ns(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }

    pub fn note_failure(&self, why: ErrorKind) {
        let mut failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        failure.get_or_insert_with(|| format!("a connection was closed: {}", why.name()));
    }

    fn fail(&self, why: String) {
        self.abort.store(true, Ordering::Relaxed);
        let mut failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        failure.get_or_insert(why);
    }
}

/// Checks the configuration and resolves the servers.
fn prepare(config: &Config) -> Result<Shared, String> {
    if config.threads == 0 || config.connections == 0 || config.pipeline == 0 {
        return Err("threads, connections and pipeline must be at least 1".into());
    }
    if config.workload.keys_per_get == 0 || config.workload.keyspace == 0 {
        return Err("keys per get and key space must be at least 1".into());
    }
    let structure = config.workload.structure;
    if structure != Structure::String && config.protocol != Protocol::Resp {
        return Err(format!("--structure {} needs --protocol resp", structure.name()));
    }
    if config.rate_per_sec == Some(0) {
        return Err("--rate must be above 0".into());
    }
    let w = &config.workload;
    let format = KeyFormat::with_range(w.key_size, w.key_size_max.max(w.key_size), w.keyspace)?;
    let mut addrs = Vec::new();
    let mut names = Vec::new();
    for server in &config.servers {
        let addr = server
            .to_socket_addrs()
            .map_err(|e| format!("server {server}: {e}"))?
            .next()
            .ok_or(format!("server {server}: no address"))?;
        let (host, _) =
            server.rsplit_once(':').ok_or(format!("server {server}: want host:port"))?;
        names.push(match config.ketama_names {
            KetamaNames::Twemproxy => ketama::twemproxy_name(host, addr.port()),
            KetamaNames::Libmemcached => ketama::libmemcached_name(host, addr.port()),
        });
        addrs.push(addr);
    }
    if addrs.is_empty() {
        return Err("no server".into());
    }
    let slots = if config.cluster {
        if config.protocol != Protocol::Resp {
            return Err("--cluster needs --protocol resp".into());
        }
        if structure == Structure::Multi {
            return Err("--cluster: --structure multi spans slots (CROSSSLOT)".into());
        }
        let map = cluster::discover(&addrs)?;
        // The primaries replace the seeds: connections go to every node that owns slots.
        addrs.clone_from(&map.nodes);
        names = addrs.iter().map(|a| a.to_string()).collect();
        Some(map)
    } else {
        None
    };
    let weighted: Vec<(String, u32)> = names.into_iter().map(|n| (n, 1)).collect();
    Ok(Shared {
        config: config.clone(),
        addrs,
        ring: Ketama::new(&weighted),
        slots,
        format,
        abort: AtomicBool::new(false),
        base: Instant::now(),
        start_ns: AtomicU64::new(0),
        failure: Mutex::new(None),
    })
}

/// What each thread returns.
#[derive(Default)]
struct ThreadEnd {
    last: Stats,
    unmeasured: Stats,
    preload: Stats,
    end: PhaseEnd,
}

/// Runs the benchmark; `on_interval` sees each second of the measured phase.
pub fn run(config: &Config, mut on_interval: impl FnMut(&Interval)) -> Result<Summary, String> {
    let shared = prepare(config)?;
    let threads = config.threads;
    let barrier = Barrier::new(threads + 1);
    let (tx, rx) = mpsc::channel::<IntervalMsg>();
    thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (shared, barrier, tx) = (&shared, &barrier, tx.clone());
                scope.spawn(move || thread_main(shared, barrier, t, tx))
            })
            .collect();
        drop(tx);
        barrier.wait(); // connected
        let preload_start = Instant::now();
        barrier.wait(); // preloaded
        let preload_elapsed = preload_start.elapsed();
        shared.start_ns.store(shared.now_ns(), Ordering::SeqCst);
        barrier.wait(); // clock set
        let measure_start = Instant::now() + config.warmup;
        let streamed = collect_intervals(&rx, threads, &mut on_interval);
        let elapsed = measure_start.elapsed();
        let ends: Vec<ThreadEnd> =
            handles.into_iter().map(|h| h.join().unwrap_or_default()).collect();
        summarize(&shared, streamed, ends, elapsed, preload_elapsed)
    })
}

/// Merges the threads' interval messages by index and reports each complete second;
/// returns the sum of all of them.
fn collect_intervals(
    rx: &mpsc::Receiver<IntervalMsg>,
    threads: usize,
    on: &mut impl FnMut(&Interval),
) -> Stats {
    let mut total = Stats::default();
    let mut pending: Vec<(u64, usize, Stats)> = Vec::new();
    for msg in rx.iter() {
        total.merge(&msg.stats);
        let at = pending.iter().position(|(index, _, _)| *index == msg.index);
        let at = at.unwrap_or_else(|| {
            pending.push((msg.index, 0, Stats::default()));
            pending.len() - 1
        });
        pending[at].1 += 1;
        pending[at].2.merge(&msg.stats);
        if pending[at].1 == threads {
            let (index, _, stats) = pending.remove(at);
            on(&Interval { index, stats });
        }
    }
    total
}

fn summarize(
    shared: &Shared,
    streamed: Stats,
    ends: Vec<ThreadEnd>,
    elapsed: Duration,
    preload_elapsed: Duration,
) -> Result<Summary, String> {
    let config = &shared.config;
    let failure = shared.failure.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if shared.abort.load(Ordering::Relaxed) {
        return Err(failure.unwrap_or_else(|| "aborted".into()));
    }
    let mut summary = Summary {
        config: config.clone(),
        elapsed: match config.stop {
            Stop::Duration(d) => d.min(elapsed),
            Stop::Requests(_) => elapsed,
        },
        stats: streamed,
        unmeasured: Stats::default(),
        preload: None,
        unanswered: 0,
        behind: 0,
        first_failure: failure,
    };
    let mut preload = Stats::default();
    for end in &ends {
        summary.stats.merge(&end.last);
        summary.unmeasured.merge(&end.unmeasured);
        preload.merge(&end.preload);
        summary.unanswered += end.end.unanswered;
        summary.behind += end.end.behind;
    }
    if config.preload {
        let keys = config.workload.ids();
        summary.preload = Some(PreloadSummary { keys, elapsed: preload_elapsed, stats: preload });
    }
    Ok(summary)
}

/// Waits at the barrier for every step a thread skipped, so a thread that fails (or panics)
/// never leaves the others and the runner waiting.
struct BarrierGuard<'a> {
    barrier: &'a Barrier,
    shared: &'a Shared,
    waits_left: usize,
}

impl BarrierGuard<'_> {
    fn wait(&mut self) {
        self.waits_left -= 1;
        self.barrier.wait();
    }
}

impl Drop for BarrierGuard<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.shared.fail("a client thread panicked".into());
        }
        for _ in 0..self.waits_left {
            self.barrier.wait();
        }
    }
}

fn thread_main(
    shared: &Shared,
    barrier: &Barrier,
    t: usize,
    tx: mpsc::Sender<IntervalMsg>,
) -> ThreadEnd {
    let config = &shared.config;
    let mut barrier = BarrierGuard { barrier, shared, waits_left: 3 };
    if let Some(&cpu) = config.pin_cpus.get(t % config.pin_cpus.len().max(1)) {
        if let Err(e) = rt::pin_current_thread(cpu) {
            shared.fail(format!("pin thread {t} to cpu {cpu}: {e}"));
        }
    }
    // Open-loop sends are timed to the microsecond; the default slack is 50 us.
    let _ = rt::set_timer_slack(Duration::from_micros(1));
    let engine = Engine::connect(shared, t);
    barrier.wait();
    let mut engine = match engine {
        Ok(engine) => engine,
        Err(e) => {
            shared.fail(e);
            return ThreadEnd::default();
        }
    };
    let preload = if config.preload { preload(shared, &mut engine, t) } else { Stats::default() };
    barrier.wait();
    barrier.wait();
    let start_ns = shared.start_ns.load(Ordering::SeqCst);
    let measure_from_ns = start_ns + config.warmup.as_nanos() as u64;
    let (stop, end_ns) = match config.stop {
        Stop::Duration(d) => (Stop::Duration(d), measure_from_ns + d.as_nanos() as u64),
        Stop::Requests(n) => (Stop::Requests(share_of(n, config.threads, t)), u64::MAX),
    };
    let schedule = config.rate_per_sec.map(|rate| Schedule::new(start_ns, rate, config.threads, t));
    let phase = Phase { source: Source::Workload, measure_from_ns, stop, end_ns, schedule };
    let end = engine.run(phase, Some(&tx));
    let last = std::mem::take(&mut engine.stats);
    ThreadEnd { last, unmeasured: std::mem::take(&mut engine.unmeasured), preload, end }
}

/// Thread `t`'s share of `total`, spreading the remainder over the first threads.
fn share_of(total: u64, threads: usize, t: usize) -> u64 {
    let (threads, t) = (threads as u64, t as u64);
    total / threads + u64::from(t < total % threads)
}

/// Sets every key of this thread's slice of the key space once (closed loop).
fn preload(shared: &Shared, engine: &mut Engine<'_>, t: usize) -> Stats {
    let config = &shared.config;
    let keyspace = config.workload.ids();
    let threads = config.threads as u64;
    let (next, end) = (keyspace * t as u64 / threads, keyspace * (t as u64 + 1) / threads);
    let phase = Phase {
        source: Source::Preload { next, end },
        measure_from_ns: u64::MAX,
        stop: Stop::Requests(0),
        end_ns: u64::MAX,
        schedule: None,
    };
    engine.run(phase, None);
    std::mem::take(&mut engine.unmeasured)
}
