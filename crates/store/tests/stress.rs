//! Concurrent stress tests: several threads hammer overlapping keys with mixed operations and
//! every value read back is checked for integrity.
//!
//! Values are self-describing *frames*:
//!
//! ```text
//! magic[4] | frame_len u32 | key_len u16 | key | version u64 | filler | checksum u64
//! ```
//!
//! The filler is a pseudo-random stream seeded by (key, version) and the checksum covers every
//! byte before it. A value is one frame or, after appends and prepends, several frames back to
//! back, all for the same key. So a read that returns a torn value, another key's value or
//! corrupt bytes fails at once, with the key and the first bytes of the value in the message.
//! Flags are derived from the key and expiry is always `Never`; both are checked on every read.
//!
//! Each test is bounded by an operation count and a deadline (a few seconds in a debug build).
//! Run with `cargo test -p store --test stress -- --nocapture` to see per-test summaries.

mod common;

use std::{
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc, Barrier,
    },
    thread,
    time::{Duration, Instant},
};

use common::{decr, incr};
use store::{
    Change, Config, EvictObserver, Expiry, Item, Mode, OwnedItem, Store, StoreError, SystemClock,
    WhenFull, MIB,
};

// ---------------------------------------------------------------------------------------------
// Randomness, checksums and the frame format
// ---------------------------------------------------------------------------------------------

fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// xorshift64*: a small, fast, seedable generator (one per thread).
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Self {
        Rng(mix64(seed.wrapping_add(0x9e37_79b9_7f4a_7c15)) | 1)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n`.
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// Uniform in `lo..hi`.
    fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo)
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// Word-at-a-time checksum (fast enough for multi-MiB values in a debug build).
fn checksum(bytes: &[u8]) -> u64 {
    let mut h = 0x243f_6a88_85a3_08d3_u64 ^ bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().unwrap());
        h = (h ^ w).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(31);
    }
    for &b in chunks.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(11);
    }
    mix64(h)
}

/// The filler stream: 8 bytes per step, derived from a seed only.
struct Filler(u64);

impl Filler {
    fn new(seed: u64) -> Self {
        Filler(mix64(seed) | 1)
    }

    fn word(&mut self) -> [u8; 8] {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes()
    }
}

fn push_filler(out: &mut Vec<u8>, seed: u64, len: usize) {
    let mut f = Filler::new(seed);
    let mut left = len;
    while left >= 8 {
        out.extend_from_slice(&f.word());
        left -= 8;
    }
    if left > 0 {
        out.extend_from_slice(&f.word()[..left]);
    }
}

/// Offset of the first byte that differs from the filler stream of `seed`, if any.
fn filler_mismatch(bytes: &[u8], seed: u64) -> Option<usize> {
    let mut f = Filler::new(seed);
    let mut chunks = bytes.chunks_exact(8);
    for (i, c) in (&mut chunks).enumerate() {
        if c != &f.word()[..] {
            return Some(i * 8);
        }
    }
    let rest = chunks.remainder();
    if !rest.is_empty() && rest != &f.word()[..rest.len()] {
        return Some(bytes.len() - rest.len());
    }
    None
}

const MAGIC: [u8; 4] = [0xf0, 0x0d, 0x5e, 0xed]; // not ASCII digits: never numeric for incr
const FRAME_FIXED: usize = 4 + 4 + 2 + 8 + 8;

fn frame_len(key: &[u8], fill: usize) -> usize {
    FRAME_FIXED + key.len() + fill
}

fn filler_seed(key: &[u8], version: u64) -> u64 {
    checksum(key) ^ mix64(version ^ 0x5bd1_e995)
}

/// The flags every write of `key` uses, so that reads can check them.
fn key_flags(key: &[u8]) -> u32 {
    checksum(key) as u32
}

fn push_frame(out: &mut Vec<u8>, key: &[u8], version: u64, fill: usize) {
    let start = out.len();
    let total = frame_len(key, fill);
    out.reserve(total);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&(total as u32).to_le_bytes());
    out.extend_from_slice(&(key.len() as u16).to_le_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&version.to_le_bytes());
    push_filler(out, filler_seed(key, version), fill);
    let sum = checksum(&out[start..]);
    out.extend_from_slice(&sum.to_le_bytes());
}

/// One frame of `total` bytes in all (or the minimum, if `total` is below it).
fn frame(key: &[u8], version: u64, total: usize) -> Vec<u8> {
    let mut out = Vec::new();
    push_frame(&mut out, key, version, total.saturating_sub(frame_len(key, 0)));
    out
}

/// The versions of the frames `value` is made of, or what is wrong with it.
fn parse_frames(key: &[u8], value: &[u8]) -> Result<Vec<u64>, String> {
    if value.is_empty() {
        return Err("empty value".into());
    }
    let fixed = frame_len(key, 0);
    let mut versions = Vec::new();
    let mut at = 0;
    while at < value.len() {
        let rest = &value[at..];
        if rest.len() < fixed {
            return Err(format!(
                "frame at {at}: {} bytes left, under the minimum {fixed}",
                rest.len()
            ));
        }
        if rest[..4] != MAGIC {
            return Err(format!("frame at {at}: bad magic {:02x?}", &rest[..4]));
        }
        let total = u32::from_le_bytes(rest[4..8].try_into().unwrap()) as usize;
        if total < fixed || total > rest.len() {
            return Err(format!("frame at {at}: length {total} with {} bytes left", rest.len()));
        }
        let frame = &rest[..total];
        let key_len = u16::from_le_bytes(frame[8..10].try_into().unwrap()) as usize;
        let found = frame.get(10..10 + key_len).unwrap_or_default();
        if found != key {
            return Err(format!("frame at {at}: foreign key {:?}", show(found)));
        }
        let v_at = 10 + key.len();
        let version = u64::from_le_bytes(frame[v_at..v_at + 8].try_into().unwrap());
        let body_end = total - 8;
        let sum = u64::from_le_bytes(frame[body_end..].try_into().unwrap());
        if checksum(&frame[..body_end]) != sum {
            return Err(format!(
                "frame at {at} (version {version:#x}, {total} bytes): bad checksum"
            ));
        }
        if let Some(off) = filler_mismatch(&frame[v_at + 8..body_end], filler_seed(key, version)) {
            return Err(format!("frame at {at} (version {version:#x}): filler differs at {off}"));
        }
        versions.push(version);
        at += total;
    }
    Ok(versions)
}

fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn head(bytes: &[u8]) -> String {
    let n = bytes.len().min(48);
    format!("{:02x?}{}", &bytes[..n], if bytes.len() > n { " .." } else { "" })
}

/// Checks a value read for `key`; returns the versions of its frames.
#[track_caller]
fn check_value(key: &[u8], value: &[u8], flags: u32, expiry: Expiry, what: &str) -> Vec<u64> {
    assert_eq!(flags, key_flags(key), "{what} {}: wrong flags", show(key));
    assert_eq!(expiry, Expiry::Never, "{what} {}: wrong expiry", show(key));
    parse_frames(key, value).unwrap_or_else(|e| {
        panic!(
            "{what} {}: corrupt value of {} bytes: {e}; starts {}",
            show(key),
            value.len(),
            head(value)
        )
    })
}

#[track_caller]
fn check_item(key: &[u8], item: &Item<'_>, what: &str) -> Vec<u64> {
    assert_eq!(item.key(), key, "{what}: asked {}, got key {}", show(key), show(item.key()));
    check_value(key, item.value(), item.flags(), item.expiry(), what)
}

#[track_caller]
fn check_owned(key: &[u8], item: &OwnedItem, what: &str) -> Vec<u64> {
    assert_eq!(item.key, key, "{what}: asked {}, got key {}", show(key), show(&item.key));
    check_value(key, &item.value, item.flags, item.expiry, what)
}

/// The version of a value that must be a single frame (keys only ever `Set` or `Cas`-written).
#[track_caller]
fn single(versions: Vec<u64>, key: &[u8]) -> u64 {
    assert_eq!(versions.len(), 1, "{}: expected one frame, found {versions:?}", show(key));
    versions[0]
}

fn parse_decimal(key: &[u8], value: &[u8]) -> u64 {
    std::str::from_utf8(value)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("counter {}: not a decimal: {}", show(key), head(value)))
}

// ---------------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------------

fn new_store(
    memory: usize,
    segment: usize,
    item_max: usize,
    on_evict: Option<EvictObserver>,
) -> Store {
    Store::new(Config {
        memory_bytes: memory,
        memory_max_bytes: 0,
        item_size_max: item_max,
        when_full: WhenFull::Evict,
        segment_size_bytes: segment,
        clock: Arc::new(SystemClock),
        on_evict,
        on_release: None,
        on_expire: None,
    })
    .expect("valid config")
}

/// Runs `f(thread_index)` on `n` threads started together; returns their results in order.
fn run_threads<T: Send>(n: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let barrier = Barrier::new(n);
    thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|t| {
                let (f, barrier) = (&f, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    f(t)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// Stop after `max_ops` operations or at the deadline, whichever comes first.
struct Budget {
    until: Instant,
    max_ops: usize,
}

impl Budget {
    fn new(seconds: f64, max_ops: usize) -> Self {
        Budget { until: Instant::now() + Duration::from_secs_f64(seconds), max_ops }
    }

    fn go_on(&self, done: usize) -> bool {
        done < self.max_ops && Instant::now() < self.until
    }
}

/// Outcomes, per thread then summed.
#[derive(Debug, Default, Clone)]
struct Tally {
    ops: u64,
    reads: u64,
    hits: u64,
    writes_ok: u64,
    /// Writes that failed as the semantics allow (NotStored, NotFound, Exists, ...).
    refused: u64,
    no_space: u64,
    /// The longest single operation, in milliseconds.
    slowest_ms: u64,
}

impl Tally {
    fn add(&mut self, o: &Tally) {
        self.ops += o.ops;
        self.reads += o.reads;
        self.hits += o.hits;
        self.writes_ok += o.writes_ok;
        self.refused += o.refused;
        self.no_space += o.no_space;
        self.slowest_ms = self.slowest_ms.max(o.slowest_ms);
    }

    fn writes(&self) -> u64 {
        self.writes_ok + self.refused + self.no_space
    }

    /// Records a write's outcome; panics on an error that `allowed` does not accept.
    /// `NoSpace` passes only when `no_space_ok` (an evicting store whose candidates were busy).
    #[track_caller]
    fn write<T>(
        &mut self,
        what: &str,
        key: &[u8],
        result: Result<T, StoreError>,
        allowed: impl Fn(&StoreError) -> bool,
        no_space_ok: bool,
    ) -> Option<T> {
        match result {
            Ok(v) => {
                self.writes_ok += 1;
                Some(v)
            }
            Err(StoreError::NoSpace) if no_space_ok => {
                self.no_space += 1;
                None
            }
            Err(e) if allowed(&e) => {
                self.refused += 1;
                None
            }
            Err(e) => panic!("{what} {}: unexpected error {e:?}", show(key)),
        }
    }
}

fn none(_: &StoreError) -> bool {
    false
}

fn not_stored(e: &StoreError) -> bool {
    matches!(e, StoreError::NotStored)
}

fn keys(prefix: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| format!("{prefix}:{i:05}").into_bytes()).collect()
}

// ---------------------------------------------------------------------------------------------
// The mixed operation set, shared by the mixed, eviction and large-item tests
// ---------------------------------------------------------------------------------------------

struct MixSpec {
    /// Lengths of whole values written by set/add/replace/cas/modify: `lo..hi`.
    value_len: (usize, usize),
    /// Lengths of the frames added by append/prepend: `lo..hi`.
    append_len: (usize, usize),
    /// An evicting store may refuse a write with NoSpace when every candidate was busy.
    no_space_ok: bool,
    /// Keys looked up per reader session in batched reads.
    batch: usize,
}

/// Runs `mixed_op` on `threads` threads until `budget` is spent (thread `t` seeded with
/// `seed_base + t`) and returns the summed tally.
fn run_mixed(
    store: &Store,
    ks: &[Vec<u8>],
    spec: &MixSpec,
    budget: &Budget,
    seed_base: u64,
    threads: usize,
) -> Tally {
    let tallies = run_threads(threads, |t| {
        let mut rng = Rng::new(seed_base + t as u64);
        let mut tally = Tally::default();
        let mut done = 0;
        while budget.go_on(done) {
            done += 1;
            let version = ((t as u64) << 40) | done as u64;
            mixed_op(store, ks, spec, &mut rng, version, &mut tally);
        }
        tally
    });
    let mut tally = Tally::default();
    for t in &tallies {
        tally.add(t);
    }
    tally
}

/// One random operation on a random key of `keys`; `version` must be unique to this call.
fn mixed_op(
    store: &Store,
    keys: &[Vec<u8>],
    spec: &MixSpec,
    rng: &mut Rng,
    version: u64,
    tally: &mut Tally,
) {
    let start = Instant::now();
    one_mixed_op(store, keys, spec, rng, version, tally);
    tally.slowest_ms = tally.slowest_ms.max(start.elapsed().as_millis() as u64);
}

fn one_mixed_op(
    store: &Store,
    keys: &[Vec<u8>],
    spec: &MixSpec,
    rng: &mut Rng,
    version: u64,
    tally: &mut Tally,
) {
    tally.ops += 1;
    let key = &keys[rng.below(keys.len())][..];
    let flags = key_flags(key);
    let nsok = spec.no_space_ok;
    let fresh =
        |rng: &mut Rng| frame(key, version, rng.between(spec.value_len.0, spec.value_len.1));
    let piece =
        |rng: &mut Rng| frame(key, version, rng.between(spec.append_len.0, spec.append_len.1));
    let never = Expiry::Never;
    match rng.below(100) {
        0..=29 | 92..=99 => read_some(store, keys, key, spec, rng, tally),
        30..=49 => {
            let r = store.store(key, &fresh(rng), flags, never, Mode::Set);
            tally.write("set", key, r, none, nsok);
        }
        50..=53 => {
            let r = store.store(key, &fresh(rng), flags, never, Mode::Add);
            tally.write("add", key, r, not_stored, nsok);
        }
        54..=57 => {
            let r = store.store(key, &fresh(rng), flags, never, Mode::Replace);
            tally.write("replace", key, r, not_stored, nsok);
        }
        58..=66 => {
            let (what, mode) =
                if rng.chance(67) { ("append", Mode::Append) } else { ("prepend", Mode::Prepend) };
            // Append/prepend keep the existing item's flags: pass other flags to check that.
            let r = store.store(key, &piece(rng), flags ^ 1, never, mode);
            let ok =
                |e: &StoreError| matches!(e, StoreError::NotStored | StoreError::TooLarge { .. });
            tally.write(what, key, r, ok, nsok);
        }
        67..=74 => match store.get(key) {
            Some(it) => {
                check_owned(key, &it, "get before cas");
                let r = store.store(key, &fresh(rng), flags, never, Mode::Cas(it.cas));
                let ok = |e: &StoreError| matches!(e, StoreError::Exists | StoreError::NotFound);
                tally.write("cas", key, r, ok, nsok);
            }
            None => {
                // A made-up CAS unique must never match.
                let bogus = rng.next_u64() | 1;
                let r = store.store(key, &fresh(rng), flags, never, Mode::Cas(bogus));
                assert!(r.is_err(), "cas {} with made-up unique {bogus:#x} succeeded", show(key));
                let ok = |e: &StoreError| matches!(e, StoreError::Exists | StoreError::NotFound);
                tally.write("cas (bogus)", key, r, ok, nsok);
            }
        },
        75..=80 => {
            let cas = if rng.chance(50) { store.get(key).map(|it| it.cas) } else { None };
            let r = store.delete(key, cas);
            let ok = |e: &StoreError| matches!(e, StoreError::NotFound | StoreError::Exists);
            tally.write("delete", key, r, ok, nsok);
        }
        81..=83 => {
            let r = if rng.chance(50) { incr(store, key, 1) } else { decr(store, key, 1) };
            match r {
                Err(StoreError::NotNumeric | StoreError::NotFound) => tally.refused += 1,
                other => panic!("incr/decr on framed value {}: {other:?}", show(key)),
            }
        }
        _ => {
            let decide = rng.below(100);
            let len = rng.between(spec.value_len.0, spec.value_len.1);
            let r = store.modify(key, |cur| {
                let present = cur.map(|it| check_item(key, &it, "modify sees")).is_some();
                let change = match (present, decide) {
                    (true, 0..=69) | (false, 0..=49) => {
                        Change::Write { value: frame(key, version, len), flags, expiry: never }
                    }
                    (true, 70..=79) => Change::Delete,
                    _ => Change::Keep,
                };
                (change, present)
            });
            tally.write("modify", key, r, none, nsok);
        }
    }
}

fn read_some(
    store: &Store,
    keys: &[Vec<u8>],
    key: &[u8],
    spec: &MixSpec,
    rng: &mut Rng,
    tally: &mut Tally,
) {
    match rng.below(4) {
        0 => {
            tally.reads += 1;
            if let Some(it) = store.get(key) {
                tally.hits += 1;
                check_owned(key, &it, "get");
            }
        }
        1 | 2 => {
            // A multiget: one reader session, several keys; `peek` half the time.
            let peek = rng.chance(50);
            let r = store.reader();
            for _ in 0..spec.batch {
                let k = &keys[rng.below(keys.len())];
                tally.reads += 1;
                let found = if peek { r.peek(k) } else { r.get(k) };
                if let Some(it) = found {
                    tally.hits += 1;
                    check_item(k, &it, "reader get");
                }
            }
        }
        _ => {
            // Hold a borrowed item while other threads overwrite and evict: it must not change.
            let r = store.reader();
            tally.reads += 1;
            if let Some(it) = r.get(key) {
                tally.hits += 1;
                check_item(key, &it, "held get");
                let sum = checksum(it.value());
                for _ in 0..3 {
                    thread::yield_now();
                }
                assert_eq!(
                    checksum(it.value()),
                    sum,
                    "{}: borrowed value changed while its reader was held",
                    show(key)
                );
                check_item(key, &it, "held get, after yielding");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

// No eviction, 6 threads of mixed ops: values intact, CAS versions monotonic, no update lost.
// Threads mix random get/set/add/replace/append/prepend/cas/delete/incr/modify on 128 "mix"
// keys, CAS-increment loops plus monotonic reads on 64 "cas" keys, and incr on 8 counters; at
// the end each cas key's version must equal its successful CAS writes, each counter the sum of
// its increments.
#[test]
fn mixed_ops_without_eviction() {
    const THREADS: usize = 6;
    let store = new_store(256 * MIB, MIB, MIB, None);
    let mix = keys("mix", 128);
    let cas_keys = keys("cas", 64);
    let counters = keys("ctr", 8);
    let mut rng = Rng::new(0);
    for k in &cas_keys {
        let v = frame(k, 0, rng.between(0, 200));
        store.store(k, &v, key_flags(k), Expiry::Never, Mode::Set).unwrap();
    }
    for k in &counters {
        store.store(k, b"0", key_flags(k), Expiry::Never, Mode::Set).unwrap();
    }
    for k in mix.iter().step_by(2) {
        store.store(k, &frame(k, 0, 100), key_flags(k), Expiry::Never, Mode::Set).unwrap();
    }
    let spec =
        MixSpec { value_len: (20, 600), append_len: (20, 200), no_space_ok: false, batch: 4 };
    let budget = Budget::new(2.5, 30_000);

    struct Out {
        tally: Tally,
        cas_wins: Vec<u64>,
        counter_sums: Vec<u64>,
    }
    let outs = run_threads(THREADS, |t| {
        let mut rng = Rng::new(t as u64 + 1);
        let mut out = Out {
            tally: Tally::default(),
            cas_wins: vec![0; cas_keys.len()],
            counter_sums: vec![0; counters.len()],
        };
        let mut seen = vec![0u64; cas_keys.len()];
        let mut counter_seen = vec![0u64; counters.len()];
        let mut seq = 0u64;
        let mut done = 0;
        while budget.go_on(done) {
            done += 1;
            seq += 1;
            let version = ((t as u64) << 40) | seq;
            match rng.below(100) {
                0..=54 => mixed_op(&store, &mix, &spec, &mut rng, version, &mut out.tally),
                55..=69 => {
                    // Monotonic read of a cas key, through either read path.
                    let j = rng.below(cas_keys.len());
                    let k = &cas_keys[j];
                    let v = if rng.chance(50) {
                        let it = store.get(k).unwrap_or_else(|| panic!("{} vanished", show(k)));
                        single(check_owned(k, &it, "get cas key"), k)
                    } else {
                        let r = store.reader();
                        let it = r.get(k).unwrap_or_else(|| panic!("{} vanished", show(k)));
                        single(check_item(k, &it, "reader get cas key"), k)
                    };
                    assert!(v >= seen[j], "{}: version went back from {} to {v}", show(k), seen[j]);
                    seen[j] = v;
                }
                70..=84 => {
                    // CAS-increment loop: read version v, write v + 1 only if unchanged.
                    let j = rng.below(cas_keys.len());
                    let k = &cas_keys[j];
                    loop {
                        let it = store.get(k).unwrap_or_else(|| panic!("{} vanished", show(k)));
                        let v = single(check_owned(k, &it, "get for cas"), k);
                        assert!(
                            v >= seen[j],
                            "{}: version went back from {} to {v}",
                            show(k),
                            seen[j]
                        );
                        seen[j] = v;
                        let next = frame(k, v + 1, rng.between(0, 200));
                        match store.store(k, &next, key_flags(k), Expiry::Never, Mode::Cas(it.cas))
                        {
                            Ok(_) => {
                                out.cas_wins[j] += 1;
                                seen[j] = v + 1;
                                break;
                            }
                            Err(StoreError::Exists) => continue,
                            Err(e) => panic!("cas {}: unexpected {e:?}", show(k)),
                        }
                    }
                }
                85..=94 => {
                    let j = rng.below(counters.len());
                    let delta = rng.between(1, 4) as u64;
                    let n = incr(&store, &counters[j], delta).unwrap();
                    assert!(
                        n >= counter_seen[j] + delta,
                        "{}: incr returned {n}",
                        show(&counters[j])
                    );
                    counter_seen[j] = n;
                    out.counter_sums[j] += delta;
                }
                _ => {
                    let j = rng.below(counters.len());
                    let it = store.get(&counters[j]).expect("counter vanished");
                    assert_eq!(it.flags, key_flags(&counters[j]), "incr must keep flags");
                    let n = parse_decimal(&counters[j], &it.value);
                    assert!(n >= counter_seen[j], "{}: went back to {n}", show(&counters[j]));
                    counter_seen[j] = n;
                }
            }
        }
        out
    });

    let mut tally = Tally::default();
    for o in &outs {
        tally.add(&o.tally);
    }
    let mut present = cas_keys.len() + counters.len();
    let mut total_wins = 0;
    for (j, k) in cas_keys.iter().enumerate() {
        let wins: u64 = outs.iter().map(|o| o.cas_wins[j]).sum();
        total_wins += wins;
        let it = store.get(k).unwrap_or_else(|| panic!("{} vanished", show(k)));
        let v = single(check_owned(k, &it, "final cas key"), k);
        assert_eq!(v, wins, "{}: stored version {v} but {wins} successful CAS writes", show(k));
    }
    for (j, k) in counters.iter().enumerate() {
        let sum: u64 = outs.iter().map(|o| o.counter_sums[j]).sum();
        let it = store.get(k).expect("counter vanished");
        assert_eq!(parse_decimal(k, &it.value), sum, "{}: increments lost", show(k));
    }
    for k in &mix {
        if let Some(it) = store.get(k) {
            check_owned(k, &it, "final mix key");
            present += 1;
        }
    }
    let st = store.stats();
    eprintln!("mixed_ops_without_eviction: {tally:?} cas_wins={total_wins} stats={st:?}");
    assert_eq!(st.evictions, 0, "premise broken: the store evicted; make it larger");
    assert_eq!(store.len(), present, "len() disagrees with the keys that are readable");
    assert!(total_wins > 0 && tally.writes_ok > 0, "no progress: {tally:?}");
}

// Heavy eviction, 6 threads of mixed ops: no torn, foreign or corrupt value is ever read.
// 4096 keys with values of 100..4000 bytes in a 4 MiB store of 64 KiB segments (several times
// over capacity); the eviction observer checks evicted keys and its count against
// stats().evictions; every key is verified at the end.
#[test]
fn mixed_ops_under_heavy_eviction() {
    const THREADS: usize = 6;
    const KEYS: usize = 4096;
    let observed = Arc::new(AtomicU64::new(0));
    let foreign = Arc::new(AtomicU64::new(0));
    let observer: EvictObserver = {
        let (observed, foreign) = (Arc::clone(&observed), Arc::clone(&foreign));
        Arc::new(move |item: &Item<'_>| {
            let key = item.key();
            observed.fetch_add(1, Ordering::Relaxed);
            let ok = key.len() == 8
                && key.starts_with(b"ev:")
                && std::str::from_utf8(&key[3..])
                    .ok()
                    .and_then(|s| s.parse::<usize>().ok())
                    .is_some_and(|i| i < KEYS);
            if !ok {
                foreign.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let store = new_store(4 * MIB, 64 * 1024, MIB, Some(observer));
    let ks = keys("ev", KEYS);
    let spec =
        MixSpec { value_len: (100, 4000), append_len: (40, 600), no_space_ok: true, batch: 8 };
    let budget = Budget::new(2.5, 40_000);
    let tally = run_mixed(&store, &ks, &spec, &budget, 100, THREADS);
    let mut present = 0;
    for k in &ks {
        if let Some(it) = store.get(k) {
            check_owned(k, &it, "final");
            present += 1;
        }
    }
    let st = store.stats();
    eprintln!("mixed_ops_under_heavy_eviction: {tally:?} present={present} stats={st:?}");
    assert!(tally.writes_ok > 0, "no write succeeded: {tally:?}");
    assert!(st.evictions > 0, "premise broken: nothing was evicted");
    assert_eq!(foreign.load(Ordering::Relaxed), 0, "the observer saw keys never written");
    assert_eq!(observed.load(Ordering::Relaxed), st.evictions, "observer calls vs stats.evictions");
    assert!(
        st.memory_used_bytes <= st.memory_limit_bytes,
        "memory used {} over the limit {}",
        st.memory_used_bytes,
        st.memory_limit_bytes
    );
    assert_eq!(store.len(), present, "len() disagrees with the keys that are readable");
    // Evict mode should find room; NoSpace ("every candidate was busy") must stay rare.
    assert!(tally.no_space * 100 <= tally.writes(), "too many NoSpace: {tally:?}");
}

// incr/decr from 6 threads: pooled results and final values prove no update lost or doubled.
// incr by 1 on 4 counters (all returned values, pooled, must be exactly base+1..=base+total),
// incr/decr by random deltas on a net counter, incr across the u64 wrap and decr below 0
// (saturating, memcached style), while reading counters for monotonicity.
#[test]
fn concurrent_incr_loses_nothing() {
    const THREADS: usize = 6;
    const UNIT_BASE: u64 = 1000;
    const NET_BASE: u64 = 1_000_000_000;
    const WRAP_BASE: u64 = u64::MAX - 50;
    const SAT_BASE: u64 = 100;
    let store = new_store(64 * MIB, MIB, MIB, None);
    let units = keys("unit", 4);
    let (net, wrap, sat) = (&b"net"[..], &b"wrap"[..], &b"sat"[..]);
    let set = |k: &[u8], n: u64| {
        store.store(k, n.to_string().as_bytes(), 7, Expiry::Never, Mode::Set).unwrap();
    };
    for k in &units {
        set(k, UNIT_BASE);
    }
    set(net, NET_BASE);
    set(wrap, WRAP_BASE);
    set(sat, SAT_BASE);
    let budget = Budget::new(3.0, 2_000);

    #[derive(Default)]
    struct Out {
        unit_returns: Vec<Vec<u64>>,
        net: i64,
        wraps: u64,
        sat_returns: Vec<u64>,
    }
    let outs = run_threads(THREADS, |t| {
        let mut rng = Rng::new(200 + t as u64);
        let mut out = Out { unit_returns: vec![Vec::new(); units.len()], ..Out::default() };
        let mut last = vec![UNIT_BASE; units.len()];
        let mut done = 0;
        while budget.go_on(done) {
            done += 1;
            match rng.below(100) {
                0..=59 => {
                    let j = rng.below(units.len());
                    let n = incr(&store, &units[j], 1).unwrap();
                    assert!(
                        n > last[j],
                        "{}: incr returned {n} after {}",
                        show(&units[j]),
                        last[j]
                    );
                    last[j] = n;
                    out.unit_returns[j].push(n);
                }
                60..=69 => {
                    let d = rng.between(1, 10) as u64;
                    if rng.chance(50) {
                        incr(&store, net, d).unwrap();
                        out.net += d as i64;
                    } else {
                        decr(&store, net, d).unwrap();
                        out.net -= d as i64;
                    }
                }
                70..=77 => {
                    incr(&store, wrap, 1).unwrap();
                    out.wraps += 1;
                }
                78..=87 => out.sat_returns.push(decr(&store, sat, 1).unwrap()),
                _ => {
                    let j = rng.below(units.len());
                    let it = store.get(&units[j]).expect("counter vanished");
                    assert_eq!(it.flags, 7, "incr must keep flags");
                    let n = parse_decimal(&units[j], &it.value);
                    assert!(n >= last[j], "{}: read {n} after {}", show(&units[j]), last[j]);
                    last[j] = n;
                }
            }
        }
        out
    });

    let read = |k: &[u8]| parse_decimal(k, &store.get(k).expect("counter vanished").value);
    let mut total_ops = 0;
    for (j, k) in units.iter().enumerate() {
        let mut all: Vec<u64> =
            outs.iter().flat_map(|o| o.unit_returns[j].iter().copied()).collect();
        all.sort_unstable();
        let n = all.len() as u64;
        total_ops += n;
        let expected: Vec<u64> = (UNIT_BASE + 1..=UNIT_BASE + n).collect();
        assert!(all == expected, "{}: incr results are not base+1..=base+{n}", show(k));
        assert_eq!(read(k), UNIT_BASE + n, "{}: final value", show(k));
    }
    let net_sum: i64 = outs.iter().map(|o| o.net).sum();
    assert_eq!(read(net), (NET_BASE as i64 + net_sum) as u64, "net counter");
    let wraps: u64 = outs.iter().map(|o| o.wraps).sum();
    assert_eq!(read(wrap), WRAP_BASE.wrapping_add(wraps), "wrapping counter after {wraps} incrs");
    let mut sat_all: Vec<u64> = outs.iter().flat_map(|o| o.sat_returns.iter().copied()).collect();
    sat_all.sort_unstable();
    let mut sat_expected: Vec<u64> =
        (0..sat_all.len() as u64).map(|i| SAT_BASE.saturating_sub(i + 1)).collect();
    sat_expected.sort_unstable();
    assert!(sat_all == sat_expected, "saturating decr results: {sat_all:?}");
    assert_eq!(read(sat), SAT_BASE.saturating_sub(sat_all.len() as u64), "saturated counter");
    eprintln!(
        "concurrent_incr_loses_nothing: unit incrs={total_ops} net={net_sum} wraps={wraps} \
         sat decrs={}",
        sat_all.len()
    );
    assert!(total_ops > 0, "no progress");
}

const RECORD: usize = 32;

/// A 32-byte append record: writer, key index, sequence, 16 derived bytes, checksum.
fn record(writer: u8, key: u8, seq: u32) -> [u8; RECORD] {
    let mut r = [0u8; RECORD];
    r[0] = writer;
    r[1] = key;
    r[4..8].copy_from_slice(&seq.to_le_bytes());
    let mut f = Filler::new((u64::from(writer) << 40) | (u64::from(key) << 32) | u64::from(seq));
    r[8..16].copy_from_slice(&f.word());
    r[16..24].copy_from_slice(&f.word());
    let sum = checksum(&r[..24]);
    r[24..].copy_from_slice(&sum.to_le_bytes());
    r
}

/// Records per writer in `value`, checking that each record is intact and belongs to key
/// `key`, and that each writer's records form an in-order prefix 0, 1, 2, ...
fn parse_records(value: &[u8], key: u8, writers: usize) -> Result<Vec<u32>, String> {
    if !value.len().is_multiple_of(RECORD) {
        return Err(format!("length {} is not a multiple of {RECORD}", value.len()));
    }
    let mut counts = vec![0u32; writers];
    for (i, r) in value.chunks_exact(RECORD).enumerate() {
        let (w, seq) = (r[0], u32::from_le_bytes(r[4..8].try_into().unwrap()));
        if (w as usize) >= writers || r[1] != key || seq != counts[w as usize] {
            return Err(format!(
                "record {i}: writer {w} key {} seq {seq}, expected counts {counts:?}",
                r[1]
            ));
        }
        if r != record(w, key, seq) {
            return Err(format!("record {i} (writer {w} seq {seq}) corrupt: {:02x?}", r));
        }
        counts[w as usize] += 1;
    }
    Ok(counts)
}

// 4 writers append self-checking records to 4 keys: each arrives intact, in order, exactly once.
// Each writer appends 200 32-byte records to each key (values grow past the 16 KiB large-item
// threshold of 64 KiB segments) while a reader checks that every value seen is whole intact
// records forming an in-order prefix per writer; at the end each value holds 4 × 200 records.
#[test]
fn concurrent_append_keeps_every_record() {
    const WRITERS: usize = 4;
    const KEYS: usize = 4;
    const PER_KEY: u32 = 200;
    let store = new_store(256 * MIB, 64 * 1024, MIB, None);
    let ks = keys("app", KEYS);
    for k in &ks {
        store.store(k, b"", 3, Expiry::Never, Mode::Set).unwrap();
    }
    let finished = AtomicUsize::new(0);
    let reads = run_threads(WRITERS + 1, |t| {
        let mut rng = Rng::new(300 + t as u64);
        if t < WRITERS {
            let mut order: Vec<usize> = (0..KEYS).collect();
            for seq in 0..PER_KEY {
                for i in (1..KEYS).rev() {
                    order.swap(i, rng.below(i + 1));
                }
                for &j in &order {
                    let r = record(t as u8, j as u8, seq);
                    if let Err(e) = store.store(&ks[j], &r, 0, Expiry::Never, Mode::Append) {
                        panic!("append {} seq {seq}: {e:?}", show(&ks[j]));
                    }
                }
            }
            finished.fetch_add(1, Ordering::AcqRel);
            return 0;
        }
        // The reader: each writer's count per key must never go down.
        let mut last = vec![vec![0u32; WRITERS]; KEYS];
        let hard_stop = Instant::now() + Duration::from_secs(60);
        let mut reads = 0u64;
        while finished.load(Ordering::Acquire) < WRITERS {
            assert!(Instant::now() < hard_stop, "writers did not finish");
            let j = rng.below(KEYS);
            let check = |value: &[u8], flags: u32, what: &str| {
                assert_eq!(flags, 3, "append must keep flags");
                parse_records(value, j as u8, WRITERS).unwrap_or_else(|e| {
                    panic!("{what} {}: {} bytes: {e}", show(&ks[j]), value.len())
                })
            };
            let counts = if rng.chance(50) {
                let it = store.get(&ks[j]).expect("appended key vanished");
                check(&it.value, it.flags, "get")
            } else {
                let r = store.reader();
                let it = r.get(&ks[j]).expect("appended key vanished");
                check(it.value(), it.flags(), "reader get")
            };
            for (w, (&now, before)) in counts.iter().zip(last[j].iter_mut()).enumerate() {
                assert!(now >= *before, "{}: writer {w} went back {before} -> {now}", show(&ks[j]));
                *before = now;
            }
            reads += 1;
        }
        reads
    });
    for (j, k) in ks.iter().enumerate() {
        let it = store.get(k).expect("appended key vanished");
        assert_eq!(it.value.len(), WRITERS * PER_KEY as usize * RECORD, "{}: length", show(k));
        let counts = parse_records(&it.value, j as u8, WRITERS)
            .unwrap_or_else(|e| panic!("final {}: {e}", show(k)));
        assert_eq!(counts, vec![PER_KEY; WRITERS], "{}: records per writer", show(k));
    }
    let st = store.stats();
    eprintln!("concurrent_append_keeps_every_record: reads={} stats={st:?}", reads[WRITERS]);
    assert_eq!(st.evictions, 0, "premise broken: the store evicted; make it larger");
}

// Large items (300 KiB..2 MiB), 4 threads of mixed ops under eviction: every byte verified.
// 16 keys (about 18 MiB if all were live) with item_size_max 4 MiB in a 12 MiB store of 1 MiB
// segments, so items are overwritten, appended to, deleted and evicted while read; held
// borrowed items are re-verified after yielding.
#[test]
fn large_items_concurrently() {
    const THREADS: usize = 4;
    let store = new_store(12 * MIB, MIB, 4 * MIB, None);
    let ks = keys("big", 16);
    let spec = MixSpec {
        value_len: (300 * 1024, 2 * MIB),
        append_len: (100, 4000),
        no_space_ok: true,
        batch: 2,
    };
    // Short: a write that has to evict a large item can stall for a while (see slowest_ms).
    let budget = Budget::new(2.0, 150);
    let tally = run_mixed(&store, &ks, &spec, &budget, 400, THREADS);
    let mut present = 0;
    for k in &ks {
        if let Some(it) = store.get(k) {
            check_owned(k, &it, "final");
            assert!(it.value.len() >= 300 * 1024, "{}: shrank to {}", show(k), it.value.len());
            present += 1;
        }
    }
    let st = store.stats();
    eprintln!("large_items_concurrently: {tally:?} present={present} stats={st:?}");
    assert!(tally.writes_ok > 0 && tally.hits > 0, "no progress: {tally:?}");
    assert_eq!(store.len(), present, "len() disagrees with the keys that are readable");
    assert!(st.memory_used_bytes <= st.memory_limit_bytes, "memory over the limit: {st:?}");
}
