//! Hit ratio of the store against an exact LRU of the same item capacity, under a Zipf stream.
//!
//! ```text
//! cargo run --release -p store --example hitratio -- --keys N --zipf A --cache-fraction F
//!     [--value-size V] [--requests R] [--scan-fraction S] [--seed X] [--warmup W]
//! ```
//!
//! A stream of R requests (default 20 N) draws key ranks from a Zipf distribution of exponent A
//! (0 < A < 2, default 0.99) over N keys (default 1,000,000); ranks map to keys through a fixed
//! multiplicative permutation, so hot keys are not adjacent. Keys are `key:{:012}` (16 bytes),
//! values V bytes (default 64). Each request is a cache lookup: a get, and on a miss a set.
//!
//! The store is sized to hold about F (default 0.1) of the keys' footprint:
//! `memory_bytes = F * N * (16 + V + 16)`, at least 8 MiB, rounded up to whole segments of
//! 1 MiB, or of 64 KiB if 1 MiB segments would be fewer than 16. The stream runs against the
//! store first, sampling `store.len()` every 1000 requests after the warm-up; then the same
//! stream runs against an exact LRU (a hash map and an intrusive doubly-linked list in a Vec)
//! whose capacity in items is the store's average item count. Misses are counted after the
//! warm-up, the first W requests (default R / 10).
//!
//! `--scan-fraction S` adds a one-time scan at the midpoint of the stream: S * N distinct keys
//! `scn:{:012}` that never recur (outside the Zipf key space), each a get (a miss) then a set,
//! for both caches. Scan requests are not counted in the miss ratios: those measure how well
//! each cache serves the Zipf requests, before and after the scan polluted it.
//!
//! The last line is `store_miss_ratio=X lru_miss_ratio=Y`.

use std::{
    collections::HashMap,
    hash::{BuildHasherDefault, Hasher},
    process::ExitCode,
    time::Instant,
};

use store::{Config, Expiry, Mode, Store, StoreError, SystemClock, WhenFull, MIB};

const USAGE: &str = "usage: hitratio [--keys N] [--zipf A] [--cache-fraction F] [--value-size V] \
                     [--requests R] [--scan-fraction S] [--seed X] [--warmup W]";

const KEY_LEN: usize = 16;
/// Per-item overhead assumed when sizing the store (header, index entry).
const ITEM_OVERHEAD: usize = 16;
const SAMPLE_EVERY: u64 = 1000;
/// Key numbers are printed with 12 digits.
const KEY_ID_MAX: u64 = 1_000_000_000_000;

struct Args {
    keys: u64,
    zipf: f64,
    cache_fraction: f64,
    value_size: usize,
    requests: Option<u64>,
    scan_fraction: f64,
    seed: u64,
    warmup: Option<u64>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        keys: 1_000_000,
        zipf: 0.99,
        cache_fraction: 0.1,
        value_size: 64,
        requests: None,
        scan_fraction: 0.0,
        seed: 1,
        warmup: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "-h" || flag == "--help" {
            return Err(USAGE.to_string());
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}\n{USAGE}");
        match flag.as_str() {
            "--keys" => args.keys = value.parse().map_err(|e| bad(&e))?,
            "--zipf" => args.zipf = value.parse().map_err(|e| bad(&e))?,
            "--cache-fraction" => args.cache_fraction = value.parse().map_err(|e| bad(&e))?,
            "--value-size" => args.value_size = value.parse().map_err(|e| bad(&e))?,
            "--requests" => args.requests = Some(value.parse().map_err(|e| bad(&e))?),
            "--scan-fraction" => args.scan_fraction = value.parse().map_err(|e| bad(&e))?,
            "--seed" => args.seed = value.parse().map_err(|e| bad(&e))?,
            "--warmup" => args.warmup = Some(value.parse().map_err(|e| bad(&e))?),
            _ => return Err(format!("unknown option {flag}\n{USAGE}")),
        }
    }
    if args.keys == 0 || args.keys >= KEY_ID_MAX {
        return Err(format!("--keys must be in 1..{KEY_ID_MAX}"));
    }
    if !(args.zipf > 0.0 && args.zipf < 2.0) {
        return Err("--zipf must be in (0, 2)".into());
    }
    if !(args.cache_fraction > 0.0 && args.cache_fraction <= 1.0) {
        return Err("--cache-fraction must be in (0, 1]".into());
    }
    let scan_keys = args.scan_fraction * args.keys as f64;
    if !(args.scan_fraction >= 0.0 && scan_keys < KEY_ID_MAX as f64) {
        return Err("--scan-fraction must be >= 0 (and S * N under 10^12)".into());
    }
    Ok(args)
}

/// xorshift64*, seeded through splitmix64.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)) | 1)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [0, 1).
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Zipf sampler over ranks 1..=n with P(k) ∝ k^-s, by rejection-inversion (W. Hörmann and
/// G. Derflinger, "Rejection-inversion to generate variates from monotone discrete
/// distributions", 1996), as in Apache Commons RNG: O(1) time and memory per sample, any s > 0.
struct Zipf {
    n: f64,
    s: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    threshold: f64,
}

impl Zipf {
    fn new(n: u64, s: f64) -> Zipf {
        let mut z = Zipf { n: n as f64, s, h_integral_x1: 0.0, h_integral_n: 0.0, threshold: 0.0 };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(n as f64 + 0.5);
        z.threshold = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        z
    }

    fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_integral_n + rng.next_f64() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inverse(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.threshold || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }

    /// H(x) = (x^(1-s) - 1) / (1 - s), or ln x for s = 1: an integral of h.
    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        helper2((1.0 - self.s) * log_x) * log_x
    }

    /// h(x) = x^-s.
    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    fn h_integral_inverse(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.s)).max(-1.0);
        (helper1(t) * x).exp()
    }
}

/// ln(1 + x) / x, accurate near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x - 1) / x, accurate near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x))
    }
}

/// A fixed bijection of 0..n: i -> (i * mult + offset) mod n, mult coprime to n.
struct Permutation {
    n: u64,
    mult: u64,
    offset: u64,
}

impl Permutation {
    fn new(n: u64) -> Permutation {
        fn gcd(mut a: u64, mut b: u64) -> u64 {
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        }
        // Near n / golden ratio, so that neighbouring ranks land far apart.
        let mut mult = ((n as f64 * 0.618_033_988_749_895) as u64).max(1);
        while gcd(mult, n) != 1 {
            mult += 1;
        }
        Permutation { n, mult, offset: n / 3 }
    }

    fn map(&self, i: u64) -> u64 {
        ((u128::from(i) * u128::from(self.mult) + u128::from(self.offset)) % u128::from(self.n))
            as u64
    }
}

fn format_key(prefix: &[u8; 4], id: u64, out: &mut [u8; KEY_LEN]) {
    out[..4].copy_from_slice(prefix);
    let mut n = id;
    for b in out[4..].iter_mut().rev() {
        *b = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// What the replay needs of a cache. `id` identifies the key (Zipf keys 0..N, scan keys N..).
trait Cache {
    fn get(&mut self, id: u64, key: &[u8]) -> bool;
    fn set(&mut self, id: u64, key: &[u8]);
    fn items(&self) -> usize;
}

struct StoreCache<'a> {
    store: &'a Store,
    value: Vec<u8>,
    no_space: u64,
}

impl Cache for StoreCache<'_> {
    fn get(&mut self, _id: u64, key: &[u8]) -> bool {
        self.store.reader().get(key).is_some()
    }

    fn set(&mut self, _id: u64, key: &[u8]) {
        match self.store.store(key, &self.value, 0, Expiry::Never, Mode::Set) {
            Ok(_) => {}
            Err(StoreError::NoSpace) => self.no_space += 1,
            Err(e) => panic!("set {}: {e}", String::from_utf8_lossy(key)),
        }
    }

    fn items(&self) -> usize {
        self.store.len()
    }
}

/// Hashes a u64 key with one multiply-xorshift: the ids are not adversarial.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn write_u64(&mut self, x: u64) {
        let h = (x ^ (x >> 32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 29);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

const NIL: u32 = u32::MAX;

struct Node {
    id: u64,
    prev: u32,
    next: u32,
}

/// An exact LRU of `capacity` items: every operation O(1).
struct Lru {
    capacity: usize,
    map: HashMap<u64, u32, BuildHasherDefault<IdHasher>>,
    nodes: Vec<Node>,
    /// Most recently used.
    head: u32,
    /// Least recently used: the next victim.
    tail: u32,
}

impl Lru {
    fn new(capacity: usize) -> Lru {
        assert!(capacity < NIL as usize, "LRU capacity too large");
        Lru {
            capacity,
            map: HashMap::with_capacity_and_hasher(capacity, BuildHasherDefault::default()),
            nodes: Vec::with_capacity(capacity),
            head: NIL,
            tail: NIL,
        }
    }

    fn unlink(&mut self, i: u32) {
        let (prev, next) = (self.nodes[i as usize].prev, self.nodes[i as usize].next);
        match prev {
            NIL => self.head = next,
            p => self.nodes[p as usize].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.nodes[n as usize].prev = prev,
        }
    }

    fn push_front(&mut self, i: u32) {
        self.nodes[i as usize].prev = NIL;
        self.nodes[i as usize].next = self.head;
        match self.head {
            NIL => self.tail = i,
            h => self.nodes[h as usize].prev = i,
        }
        self.head = i;
    }
}

impl Cache for Lru {
    fn get(&mut self, id: u64, _key: &[u8]) -> bool {
        let Some(&i) = self.map.get(&id) else { return false };
        if self.head != i {
            self.unlink(i);
            self.push_front(i);
        }
        true
    }

    fn set(&mut self, id: u64, key: &[u8]) {
        if self.capacity == 0 || self.get(id, key) {
            return;
        }
        let i = if self.nodes.len() < self.capacity {
            self.nodes.push(Node { id, prev: NIL, next: NIL });
            (self.nodes.len() - 1) as u32
        } else {
            let victim = self.tail;
            self.unlink(victim);
            let old = std::mem::replace(&mut self.nodes[victim as usize].id, id);
            self.map.remove(&old);
            victim
        };
        self.push_front(i);
        self.map.insert(id, i);
    }

    fn items(&self) -> usize {
        self.map.len()
    }
}

struct Workload {
    keys: u64,
    requests: u64,
    warmup: u64,
    scan_keys: u64,
    zipf: Zipf,
    perm: Permutation,
    seed: u64,
}

#[derive(Debug, Default)]
struct Replay {
    measured: u64,
    misses: u64,
    samples: u64,
    items_sum: u128,
    seconds: f64,
}

impl Replay {
    fn miss_ratio(&self) -> f64 {
        self.misses as f64 / self.measured.max(1) as f64
    }

    fn items_avg(&self) -> f64 {
        self.items_sum as f64 / self.samples.max(1) as f64
    }
}

/// Plays the whole stream (the same for every call) against `cache`.
fn replay(cache: &mut impl Cache, w: &Workload, sample_items: bool) -> Replay {
    let start = Instant::now();
    let mut rng = Rng::new(w.seed);
    let mut key = [0u8; KEY_LEN];
    let mut out = Replay::default();
    // Every SAMPLE_EVERY requests, or more often in short runs (at least ~100 samples).
    let every = SAMPLE_EVERY.min((w.requests - w.warmup) / 100).max(1);
    let mut next_sample = w.warmup;
    for i in 0..w.requests {
        if i == w.requests / 2 {
            for s in 0..w.scan_keys {
                format_key(b"scn:", s, &mut key);
                let id = w.keys + s;
                if !cache.get(id, &key) {
                    cache.set(id, &key);
                }
            }
        }
        let id = w.perm.map(w.zipf.sample(&mut rng) - 1);
        format_key(b"key:", id, &mut key);
        let hit = cache.get(id, &key);
        if !hit {
            cache.set(id, &key);
        }
        if i >= w.warmup {
            out.measured += 1;
            out.misses += u64::from(!hit);
            if sample_items && i == next_sample {
                out.items_sum += cache.items() as u128;
                out.samples += 1;
                next_sample += every;
            }
        }
    }
    out.seconds = start.elapsed().as_secs_f64();
    out
}

/// memory_bytes and segment size for a store holding about `fraction` of the keys' footprint.
fn store_size(keys: u64, value_size: usize, fraction: f64) -> (usize, usize) {
    let raw = (fraction * keys as f64 * (KEY_LEN + value_size + ITEM_OVERHEAD) as f64).ceil();
    let raw = (raw as usize).max(8 * MIB);
    let segment = if raw.div_ceil(MIB) < 16 { 64 * 1024 } else { MIB };
    (raw.div_ceil(segment) * segment, segment)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::FAILURE;
        }
    };
    let requests = args.requests.unwrap_or(20 * args.keys);
    let w = Workload {
        keys: args.keys,
        requests,
        warmup: args.warmup.unwrap_or(requests / 10).min(requests),
        scan_keys: (args.scan_fraction * args.keys as f64).round() as u64,
        zipf: Zipf::new(args.keys, args.zipf),
        perm: Permutation::new(args.keys),
        seed: args.seed,
    };
    let (memory_bytes, segment_size_bytes) =
        store_size(args.keys, args.value_size, args.cache_fraction);
    println!(
        "keys={} requests={} warmup={} zipf={} cache_fraction={} value_size={} scan_keys={} \
         seed={}",
        w.keys,
        w.requests,
        w.warmup,
        args.zipf,
        args.cache_fraction,
        args.value_size,
        w.scan_keys,
        w.seed
    );
    let config = Config {
        memory_bytes,
        memory_max_bytes: 0,
        item_size_max: MIB.min(memory_bytes / 2),
        when_full: WhenFull::Evict,
        segment_size_bytes,
        clock: std::sync::Arc::new(SystemClock),
        on_evict: None,
        on_release: None,
        on_expire: None,
    };
    let store = match Store::new(config) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("cannot build the store: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "store: memory_bytes={memory_bytes} segment_size_bytes={segment_size_bytes} \
         segments={} item_footprint_bytes={}",
        memory_bytes / segment_size_bytes,
        KEY_LEN + args.value_size + ITEM_OVERHEAD
    );
    let mut cache = StoreCache { store: &store, value: vec![b'v'; args.value_size], no_space: 0 };
    let s = replay(&mut cache, &w, true);
    let st = store.stats();
    println!(
        "store: items_avg={:.0} items_end={} evictions={} evict_kept={} no_space={} \
         memory_used_bytes={} miss_ratio={:.6} seconds={:.1}",
        s.items_avg(),
        store.len(),
        st.evictions,
        st.evict_kept,
        cache.no_space,
        st.memory_used_bytes,
        s.miss_ratio(),
        s.seconds
    );
    drop(store);

    let capacity = s.items_avg().round() as usize;
    let mut lru = Lru::new(capacity);
    let l = replay(&mut lru, &w, false);
    println!(
        "lru: capacity={capacity} items_end={} miss_ratio={:.6} seconds={:.1}",
        lru.items(),
        l.miss_ratio(),
        l.seconds
    );
    let ratio = s.miss_ratio() / l.miss_ratio();
    println!(
        "ratio={ratio:.4} (store miss ratio / lru miss ratio; below 1: the store misses less)"
    );
    println!("store_miss_ratio={:.6} lru_miss_ratio={:.6}", s.miss_ratio(), l.miss_ratio());
    ExitCode::SUCCESS
}
