//! Store throughput in-process, without the network: gets, sets and a 9:1 mix.
//!
//! ```text
//! cargo run --release -p store --example opsbench -- [--threads T[,T..]] [--seconds S]
//!     [--keys N] [--key-size K] [--value-size V] [--memory-mib M] [--workloads W[,W..]]
//! cargo run --release -p store --features count-shared-writes --example opsbench -- ...
//! ```
//!
//! Each run gets a fresh store (256 MiB by default, so that nothing is evicted) preloaded with
//! N keys, then T threads pick keys uniformly at random, each with its own xorshift generator,
//! for S seconds. Workloads:
//!
//! - `get`: one `store.reader()` per get (a single-key get);
//! - `get_batch16`: one reader per 16 gets (a multiget); every get counts as one op;
//! - `set`: overwrites with a value of the same size;
//! - `mix91`: 9 gets (one reader each) to 1 set, chosen per op at random.
//!
//! `ops/cpu-s` divides the ops by the CPU time the threads ran (CLOCK_THREAD_CPUTIME_ID): on
//! a shared or small machine it shows what sharing between threads costs (a cache line that
//! moves between cores makes each op take longer) apart from time slicing, which only
//! lowers ops/s.
//!
//! By default every workload runs at 1 and at 2 threads. The last line sums it up as
//! `get_1t=... get_batch16_1t=... set_1t=... mix91_1t=... get_2t=...` (ops per second).
//!
//! Built with the store's `count-shared-writes` feature, it also reports per million ops the
//! writes to shared lines (`shared/Mop`) and the lock waits: a write that found its stripe
//! lock (`stripe_w/Mop`) or the segment-list lock (`ctl_w/Mop`) held by another thread.
//! The counting itself (a thread-local add per site, a `try_lock` before each lock) costs a
//! little throughput: take rates from a build without it.

use std::{
    hint::black_box,
    process::ExitCode,
    sync::{
        atomic::{AtomicBool, Ordering},
        Barrier,
    },
    time::{Duration, Instant},
};

use store::{Config, Expiry, Mode, Store, WhenFull, MIB};

const USAGE: &str = "usage: opsbench [--threads T[,T..]] [--seconds S] [--keys N] \
                     [--key-size K] [--value-size V] [--memory-mib M] \
                     [--workloads get,get_batch16,set,mix91]";

/// Ops between two looks at the stop flag.
const OPS_PER_CHECK: usize = 64;
const BATCH: usize = 16;

struct Args {
    threads: Vec<usize>,
    seconds: f64,
    keys: usize,
    key_size: usize,
    value_size: usize,
    memory_mib: usize,
    workloads: Vec<Workload>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        threads: vec![1, 2],
        seconds: 2.0,
        keys: 100_000,
        key_size: 20,
        value_size: 20,
        memory_mib: 256,
        workloads: Workload::ALL.to_vec(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "-h" || flag == "--help" {
            return Err(USAGE.to_string());
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let bad = || format!("{flag}: bad value {value}\n{USAGE}");
        match flag.as_str() {
            "--threads" => {
                args.threads = value
                    .split(',')
                    .map(|t| t.trim().parse::<usize>().ok().filter(|&t| t > 0))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(bad)?;
            }
            "--seconds" => {
                args.seconds = value.parse().ok().filter(|&s: &f64| s > 0.0).ok_or_else(bad)?
            }
            "--keys" => args.keys = value.parse().ok().filter(|&n| n > 0).ok_or_else(bad)?,
            "--key-size" => {
                args.key_size = value.parse().ok().filter(|&n| n > 0).ok_or_else(bad)?
            }
            "--value-size" => args.value_size = value.parse().map_err(|_| bad())?,
            "--memory-mib" => {
                args.memory_mib = value.parse().ok().filter(|&n| n > 0).ok_or_else(bad)?
            }
            "--workloads" => {
                args.workloads = value
                    .split(',')
                    .map(|w| Workload::ALL.into_iter().find(|k| k.name() == w.trim()))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(bad)?;
            }
            _ => return Err(format!("unknown argument {flag}\n{USAGE}")),
        }
    }
    Ok(args)
}

/// xorshift64*: a few cycles per number, good enough to pick keys and ops.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        // Spread small seeds over the state; the state must never be 0.
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift, bias negligible for our n).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Workload {
    Get,
    GetBatch16,
    Set,
    Mix91,
}

impl Workload {
    const ALL: [Workload; 4] =
        [Workload::Get, Workload::GetBatch16, Workload::Set, Workload::Mix91];

    fn name(self) -> &'static str {
        match self {
            Workload::Get => "get",
            Workload::GetBatch16 => "get_batch16",
            Workload::Set => "set",
            Workload::Mix91 => "mix91",
        }
    }
}

/// All keys, `key_size` bytes each (a zero-padded counter), back to back.
struct Keys {
    bytes: Vec<u8>,
    key_size: usize,
    count: usize,
}

impl Keys {
    fn new(count: usize, key_size: usize) -> Keys {
        let mut bytes = vec![b'0'; count * key_size];
        for (i, key) in bytes.chunks_exact_mut(key_size).enumerate() {
            let mut n = i;
            for byte in key.iter_mut().rev() {
                *byte = b'0' + (n % 10) as u8;
                n /= 10;
            }
            assert_eq!(n, 0, "{count} keys do not fit in {key_size} digits");
        }
        Keys { bytes, key_size, count }
    }

    fn get(&self, i: usize) -> &[u8] {
        &self.bytes[i * self.key_size..(i + 1) * self.key_size]
    }
}

#[derive(Default)]
struct Tally {
    ops: u64,
    misses: u64,
    errors: u64,
    secs: f64,
    /// CPU time the thread ran for, in seconds.
    cpu_secs: f64,
    writes: Writes,
}

struct RunResult {
    ops_per_sec: f64,
    /// Ops per second of the threads' own CPU time: what a thread does while it runs,
    /// whatever else the machine runs (time slicing lowers ops/s, not this).
    ops_per_cpu_sec: f64,
    ops: u64,
    misses: u64,
    errors: u64,
    evictions: u64,
    writes: Writes,
}

/// Shared writes and lock waits, where the store counts them.
#[derive(Default, Clone, Copy)]
struct Writes {
    shared: u64,
    stripe_waits: u64,
    ctl_waits: u64,
}

impl Writes {
    #[cfg(feature = "count-shared-writes")]
    fn take() -> Writes {
        use store::shared_writes::{self, Site};
        let counts = shared_writes::take();
        Writes {
            shared: counts.shared(),
            stripe_waits: counts.get(Site::StripeWait),
            ctl_waits: counts.get(Site::CtlWait),
        }
    }

    #[cfg(not(feature = "count-shared-writes"))]
    fn take() -> Writes {
        Writes::default()
    }

    fn add(&mut self, other: Writes) {
        self.shared += other.shared;
        self.stripe_waits += other.stripe_waits;
        self.ctl_waits += other.ctl_waits;
    }
}

fn build_store(args: &Args, keys: &Keys, value: &[u8]) -> Result<Store, String> {
    let config = Config {
        memory_bytes: args.memory_mib * MIB,
        item_size_max: Config::default().item_size_max.max(args.key_size + args.value_size + 4096),
        when_full: WhenFull::Evict,
        ..Default::default()
    };
    let store = Store::new(config).map_err(|e| format!("Store::new: {e}"))?;
    for i in 0..keys.count {
        store
            .store(keys.get(i), value, 0, Expiry::Never, Mode::Set)
            .map_err(|e| format!("preload of key {i}: {e}"))?;
    }
    let stats = store.stats();
    if stats.evictions > 0 || stats.items != keys.count as u64 {
        return Err(format!(
            "preload left {} items of {} after {} evictions (do the keys fit in --memory-mib?)",
            stats.items, keys.count, stats.evictions
        ));
    }
    Ok(store)
}

fn worker(
    store: &Store,
    keys: &Keys,
    value: &[u8],
    workload: Workload,
    seed: u64,
    start: &Barrier,
    stop: &AtomicBool,
) -> Tally {
    let mut rng = Rng::new(seed);
    let mut tally = Tally::default();
    start.wait();
    Writes::take();
    let started = Instant::now();
    let cpu_started = thread_cpu_secs();
    while !stop.load(Ordering::Relaxed) {
        match workload {
            Workload::Get => {
                for _ in 0..OPS_PER_CHECK {
                    let reader = store.reader();
                    match reader.get(keys.get(rng.below(keys.count))) {
                        Some(item) => {
                            black_box(item.value());
                        }
                        None => tally.misses += 1,
                    }
                }
            }
            Workload::GetBatch16 => {
                for _ in 0..OPS_PER_CHECK / BATCH {
                    let reader = store.reader();
                    for _ in 0..BATCH {
                        match reader.get(keys.get(rng.below(keys.count))) {
                            Some(item) => {
                                black_box(item.value());
                            }
                            None => tally.misses += 1,
                        }
                    }
                }
            }
            Workload::Set => {
                for _ in 0..OPS_PER_CHECK {
                    let key = keys.get(rng.below(keys.count));
                    if store.store(key, value, 0, Expiry::Never, Mode::Set).is_err() {
                        tally.errors += 1;
                    }
                }
            }
            Workload::Mix91 => {
                for _ in 0..OPS_PER_CHECK {
                    let key = keys.get(rng.below(keys.count));
                    if rng.below(10) == 0 {
                        if store.store(key, value, 0, Expiry::Never, Mode::Set).is_err() {
                            tally.errors += 1;
                        }
                    } else {
                        let reader = store.reader();
                        match reader.get(key) {
                            Some(item) => {
                                black_box(item.value());
                            }
                            None => tally.misses += 1,
                        }
                    }
                }
            }
        }
        tally.ops += OPS_PER_CHECK as u64;
    }
    tally.secs = started.elapsed().as_secs_f64();
    tally.cpu_secs = thread_cpu_secs() - cpu_started;
    tally.writes = Writes::take();
    tally
}

fn run(args: &Args, keys: &Keys, workload: Workload, threads: usize) -> Result<RunResult, String> {
    let value = vec![b'v'; args.value_size];
    let store = build_store(args, keys, &value)?;
    let evictions_before = store.stats().evictions;
    let start = Barrier::new(threads + 1);
    let stop = AtomicBool::new(false);
    let tallies: Vec<Tally> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (store, value, start, stop) = (&store, &value, &start, &stop);
                let seed = (t as u64 + 1) * 0x1_0000 + workload as u64;
                s.spawn(move || worker(store, keys, value, workload, seed, start, stop))
            })
            .collect();
        start.wait();
        std::thread::sleep(Duration::from_secs_f64(args.seconds));
        stop.store(true, Ordering::Relaxed);
        handles.into_iter().map(|h| h.join().expect("worker panicked")).collect()
    });
    let mut writes = Writes::default();
    tallies.iter().for_each(|t| writes.add(t.writes));
    Ok(RunResult {
        // Each thread's rate over its own running time, summed.
        ops_per_sec: tallies.iter().map(|t| t.ops as f64 / t.secs.max(1e-9)).sum(),
        ops: tallies.iter().map(|t| t.ops).sum(),
        ops_per_cpu_sec: tallies.iter().map(|t| t.ops).sum::<u64>() as f64
            / tallies.iter().map(|t| t.cpu_secs).sum::<f64>().max(1e-9),
        writes,
        misses: tallies.iter().map(|t| t.misses).sum(),
        errors: tallies.iter().map(|t| t.errors).sum(),
        evictions: store.stats().evictions - evictions_before,
    })
}

/// This thread's CPU time so far.
fn thread_cpu_secs() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write; the clock id is a constant the kernel knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn human(ops_per_sec: f64) -> String {
    if ops_per_sec >= 1e6 {
        format!("{:.2}M", ops_per_sec / 1e6)
    } else {
        format!("{:.1}k", ops_per_sec / 1e3)
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    if cfg!(debug_assertions) {
        eprintln!("warning: debug build; use --release for representative numbers");
    }
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!(
        "keys={} key_size={} value_size={} memory_mib={} seconds={} cpus={cpus}",
        args.keys, args.key_size, args.value_size, args.memory_mib, args.seconds
    );
    if args.threads.iter().any(|&t| t > cpus) {
        eprintln!("warning: more threads than CPUs; numbers include time-slicing");
    }
    let keys = Keys::new(args.keys, args.key_size);

    let counting = cfg!(feature = "count-shared-writes");
    print!(
        "{:<12} {:>7} {:>12} {:>14} {:>11} {:>8} {:>8} {:>7} {:>9}",
        "workload",
        "threads",
        "ops/s",
        "ops/s/thread",
        "ops/cpu-s",
        "vs_get",
        "misses",
        "errors",
        "evictions"
    );
    if counting {
        print!(" {:>11} {:>12} {:>9}", "shared/Mop", "stripe_w/Mop", "ctl_w/Mop");
    }
    println!();
    let mut summary = Vec::new();
    for &threads in &args.threads {
        let mut get_rate = None;
        for &workload in &args.workloads {
            let r = match run(&args, &keys, workload, threads) {
                Ok(r) => r,
                Err(msg) => {
                    eprintln!("error: {} at {threads} threads: {msg}", workload.name());
                    return ExitCode::FAILURE;
                }
            };
            if workload == Workload::Get {
                get_rate = Some(r.ops_per_sec);
            }
            let vs_get = match (workload, get_rate) {
                (Workload::Get, _) | (_, None) => "-".to_string(),
                (_, Some(g)) => format!("{:.2}", r.ops_per_sec / g.max(1e-9)),
            };
            print!(
                "{:<12} {:>7} {:>12} {:>14} {:>11} {:>8} {:>8} {:>7} {:>9}",
                workload.name(),
                threads,
                human(r.ops_per_sec),
                human(r.ops_per_sec / threads as f64),
                human(r.ops_per_cpu_sec),
                vs_get,
                r.misses,
                r.errors,
                r.evictions
            );
            if counting {
                let per_mop = |n: u64| n as f64 * 1e6 / r.ops.max(1) as f64;
                let w = r.writes;
                print!(
                    " {:>11.0} {:>12.1} {:>9.1}",
                    per_mop(w.shared),
                    per_mop(w.stripe_waits),
                    per_mop(w.ctl_waits)
                );
            }
            println!();
            summary.push(format!("{}_{threads}t={:.0}", workload.name(), r.ops_per_sec));
        }
    }
    println!("{}", summary.join(" "));
    ExitCode::SUCCESS
}
