//! Randomized model test: long random operation sequences run against the store and against a
//! `HashMap` model sharing the same manual clock; every answer the store gives must agree with the
//! model. The only freedom the store has is eviction: a key the model holds may be missing from
//! the store, but only if the eviction observer reported that key.
//!
//! Seeds: `STORE_MODEL_SEED=<u64, decimal or 0x-hex>` reruns a failure; without it the seed
//! comes from the system time. A failing run prints the seed (see `SeedReport`). Replay with
//! `STORE_MODEL_SEED=<seed> cargo test -p store --test model -- --test-threads=1`: the operations
//! are the same every time, but when memory is recycled can depend on other threads (epochs), so
//! a failure that involves eviction may need a few tries.
//! `STORE_MODEL_OPS=<n>` changes the number of operations per run (default: per profile).

mod common;

use std::{
    collections::{HashMap, HashSet},
    fmt::Debug,
    sync::{Arc, Mutex},
    time::{SystemTime, UNIX_EPOCH},
};

use store::*;

const T0: u64 = 1_700_000_000_000;
const KIB: usize = 1024;
const RUNS_PER_TEST: u64 = 4;

// ---------------------------------------------------------------------------------------------
// Randomness

/// splitmix64: small, fast and good enough to drive a test.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }

    /// Uniform in `0..n` (0 if `n` is 0).
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }

    fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    fn percent(&mut self, p: u64) -> bool {
        self.below(100) < p
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            out.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        out.truncate(len);
        out
    }
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn base_seed() -> u64 {
    match std::env::var("STORE_MODEL_SEED") {
        Ok(s) => {
            let s = s.trim();
            let parsed = match s.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => s.parse(),
            };
            parsed.unwrap_or_else(|e| panic!("STORE_MODEL_SEED={s:?}: {e}"))
        }
        Err(_) => {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
            mix(now.as_nanos() as u64 ^ u64::from(std::process::id()))
        }
    }
}

fn ops_per_run(profile: &Profile) -> usize {
    std::env::var("STORE_MODEL_OPS").ok().and_then(|s| s.parse().ok()).unwrap_or(profile.ops)
}

/// Prints how to reproduce when the test panics, wherever the panic comes from (an assertion
/// here or a panic inside the store).
struct SeedReport {
    base_seed: u64,
    test: &'static str,
    run: u64,
    op: usize,
    what: String,
}

impl Drop for SeedReport {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!(
                "\n*** {} failed: rerun with STORE_MODEL_SEED={} (run {}, op {}, last op: {})\n",
                self.test, self.base_seed, self.run, self.op, self.what
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The model

/// The shape of one test run: store size and the key and value space.
struct Profile {
    name: &'static str,
    memory_bytes: usize,
    keys: usize,
    /// Random values are 0..=value_max bytes.
    value_max: usize,
    /// Percent of key picks that go to the hottest tenth of the keys.
    hot_percent: u64,
    /// Operations per run (unless STORE_MODEL_OPS says otherwise).
    ops: usize,
    /// One operation in this many is a flush_all (half of them delayed).
    flush_one_in: u64,
    /// Percent of writes whose items never expire (the rest expire within seconds or minutes).
    never_percent: u64,
    /// No eviction may happen: every key the model has must be in the store.
    strict: bool,
}

/// Small store, large key space and values: evicts in most runs.
const EVICTING: Profile = Profile {
    name: "evicting",
    memory_bytes: 4 * MIB,
    keys: 2000,
    value_max: 2000,
    hot_percent: 20,
    ops: 40_000,
    flush_one_in: 30_000,
    never_percent: 85,
    strict: false,
};
/// Plenty of room for everything: never evicts.
const ROOMY: Profile = Profile {
    name: "roomy",
    memory_bytes: 16 * MIB,
    keys: 200,
    value_max: 99,
    hot_percent: 50,
    ops: 20_000,
    flush_one_in: 4000,
    never_percent: 50,
    strict: true,
};

#[derive(Clone)]
struct Entry {
    value: Vec<u8>,
    flags: u32,
    expiry: Expiry,
    /// The item's CAS unique, when known (a touch or incr makes it unknown until the next read).
    cas: Option<u64>,
}

impl Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Entry {{ {} bytes {}, flags {}, {:?}, cas {:?} }}",
            self.value.len(),
            short(&self.value),
            self.flags,
            self.expiry,
            self.cas
        )
    }
}

/// memcached's incr/decr operand: 1 to 20 ASCII digits that fit in a u64.
fn parse_counter(value: &[u8]) -> Option<u64> {
    if value.is_empty() || value.len() > 20 || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse().ok()
}

/// A distinct key for each index, some empty or binary.
fn key_bytes(i: usize) -> Vec<u8> {
    match i % 10 {
        _ if i == 0 => Vec::new(),
        3 => format!("k{i}\r\n").into_bytes(),
        7 => {
            let mut key = format!("k{i}").into_bytes();
            key.extend_from_slice(b"\0\xff ");
            key
        }
        _ => format!("key:{i}").into_bytes(),
    }
}

struct Harness {
    store: Store,
    clock: Arc<ManualClock>,
    /// Filled by the store's eviction observer; drained after every operation.
    evicted_now: Arc<Mutex<HashSet<Vec<u8>>>>,
    /// Keys reported evicted and not yet reconciled with the model.
    pending_evicted: HashSet<Vec<u8>>,
    model: HashMap<Vec<u8>, Entry>,
    /// Every CAS unique each key has had.
    cas_seen: HashMap<Vec<u8>, Vec<u64>>,
    /// When a delayed flush_all takes effect.
    flush_at: Option<u64>,
    profile: &'static Profile,
    keys: Vec<Vec<u8>>,
    rng: Rng,
    report: SeedReport,
    // Counters for the summary line.
    hits: u64,
    excused_misses: u64,
    evictions_reported: u64,
}

impl Harness {
    fn new(profile: &'static Profile, seed: u64, report: SeedReport) -> Harness {
        let clock = Arc::new(ManualClock::new(T0));
        let evicted_now = Arc::new(Mutex::new(HashSet::new()));
        let sink = Arc::clone(&evicted_now);
        let store = Store::new(Config {
            memory_bytes: profile.memory_bytes,
            memory_max_bytes: 0,
            item_size_max: MIB,
            when_full: WhenFull::Evict,
            segment_size_bytes: 64 * KIB,
            clock: clock.clone(),
            on_evict: Some(Arc::new(move |item: &Item<'_>| {
                sink.lock().unwrap().insert(item.key().to_vec());
            })),
            on_release: None,
            on_expire: None,
        })
        .expect("valid config");
        Harness {
            store,
            clock,
            evicted_now,
            pending_evicted: HashSet::new(),
            model: HashMap::new(),
            cas_seen: HashMap::new(),
            flush_at: None,
            profile,
            keys: (0..profile.keys).map(key_bytes).collect(),
            rng: Rng(seed),
            report,
            hits: 0,
            excused_misses: 0,
            evictions_reported: 0,
        }
    }

    fn now(&self) -> u64 {
        self.clock.now_ms()
    }

    #[track_caller]
    fn fail(&self, msg: impl AsRef<str>) -> ! {
        let r = &self.report;
        panic!(
            "{}\n  [STORE_MODEL_SEED={} {} run {} ({}) op {}: {}; now {}]",
            msg.as_ref(),
            r.base_seed,
            r.test,
            r.run,
            self.profile.name,
            r.op,
            r.what,
            self.now()
        )
    }

    /// The model's view of a key now: None if absent or expired.
    fn live(&mut self, key: &[u8]) -> Option<Entry> {
        let now = self.now();
        match self.model.get(key) {
            Some(e) if !e.expiry.is_expired(now) => Some(e.clone()),
            Some(_) => {
                self.model.remove(key);
                None
            }
            None => None,
        }
    }

    /// Applies a delayed flush whose time has come (the store does so at its next operation).
    fn sync_flush(&mut self) {
        if let Some(at) = self.flush_at {
            if self.now() >= at {
                self.model.clear();
                self.pending_evicted.clear();
                self.flush_at = None;
            }
        }
    }

    fn take_evicted(&mut self) -> HashSet<Vec<u8>> {
        let during = std::mem::take(&mut *self.evicted_now.lock().unwrap());
        if self.profile.strict && !during.is_empty() {
            self.fail(format!(
                "evictions in a store with room to spare: {during_s}",
                during_s = show_keys(&during)
            ));
        }
        self.evictions_reported += during.len() as u64;
        during
    }

    /// Whether the store may have lost `key` to eviction.
    fn excused(&self, key: &[u8], during: &HashSet<Vec<u8>>) -> bool {
        self.pending_evicted.contains(key) || during.contains(key)
    }

    /// After an operation on `key`: `present` says it showed the key's current version in the
    /// store (so evictions reported earlier were of older versions), unless the key was evicted
    /// during the operation.
    fn finish(&mut self, key: &[u8], present: bool, during: HashSet<Vec<u8>>) {
        if present && !during.contains(key) {
            self.pending_evicted.remove(key);
        }
        self.absorb(during);
    }

    /// Remembers evictions reported during an operation.
    fn absorb(&mut self, during: HashSet<Vec<u8>>) {
        self.pending_evicted.extend(during);
    }

    /// The store lacks a key the model has: allowed only if the key was reported evicted; then
    /// the model (and the eviction record) forget it.
    fn excuse_miss(&mut self, key: &[u8], during: &HashSet<Vec<u8>>, what: &str, e: &Entry) {
        if !self.excused(key, during) {
            self.fail(format!(
                "{what}: key {key_s} missing; model has {e:?}, never evicted",
                key_s = show(key)
            ));
        }
        self.model.remove(key);
        self.pending_evicted.remove(key);
        self.excused_misses += 1;
    }

    /// Compares an outcome with the model's expectation. If they differ, the key must have been
    /// evicted and the outcome must be the one for an absent key: the model then forgets the
    /// key. Returns the model's (possibly corrected) view of the key.
    fn reconcile<T: PartialEq + Debug>(
        &mut self,
        key: &[u8],
        live: Option<Entry>,
        during: &HashSet<Vec<u8>>,
        actual: &T,
        if_present: T,
        if_absent: T,
    ) -> Option<Entry> {
        let Some(entry) = live else {
            if *actual != if_absent {
                self.fail(format!(
                    "key {key_s}: store answered {actual:?}, model (key absent) expects {if_absent:?}", key_s = show(key)));
            }
            return None;
        };
        if *actual == if_present {
            return Some(entry);
        }
        if *actual == if_absent && self.excused(key, during) {
            self.excuse_miss(key, during, "", &entry);
            return None;
        }
        self.fail(format!(
            "key {key_s}: store answered {actual:?}, model expects {if_present:?} \
             (model entry {entry:?}, reported evicted: {})",
            self.excused(key, during),
            key_s = show(key)
        ))
    }

    /// A write returned `cas`: it must be nonzero and new for this key.
    fn check_new_cas(&mut self, key: &[u8], cas: u64) {
        if cas == 0 {
            self.fail(format!("key {key_s}: write returned CAS 0", key_s = show(key)));
        }
        let seen = self.cas_seen.entry(key.to_vec()).or_default();
        if seen.contains(&cas) {
            self.fail(format!("key {key_s}: write returned CAS {cas} again", key_s = show(key)));
        }
        seen.push(cas);
    }

    /// A CAS the store reported for the current item (read, touch): known from now on.
    fn learn_cas(&mut self, key: &[u8], cas: u64) {
        if cas == 0 {
            self.fail(format!("key {key_s}: item with CAS 0", key_s = show(key)));
        }
        let seen = self.cas_seen.entry(key.to_vec()).or_default();
        if !seen.contains(&cas) {
            seen.push(cas);
        }
    }

    /// An item the store returned must be the model's entry.
    fn check_item(&mut self, key: &[u8], e: &Entry, it: &OwnedItem) {
        if it.key != key || it.value != e.value || it.flags != e.flags || it.expiry != e.expiry {
            self.fail(format!("key {}: store has {}, model has {e:?}", show(key), show_item(it)));
        }
        match e.cas {
            Some(cas) if cas != it.cas => self.fail(format!(
                "key {key_s}: store CAS {} but the last write gave {cas}",
                it.cas,
                key_s = show(key)
            )),
            Some(_) => {}
            None => {
                self.learn_cas(key, it.cas);
                self.model.get_mut(key).unwrap().cas = Some(it.cas);
            }
        }
    }

    /// Checks a read result against the model.
    fn check_read(
        &mut self,
        key: &[u8],
        live: Option<Entry>,
        got: Option<&OwnedItem>,
        during: &HashSet<Vec<u8>>,
        what: &str,
    ) {
        match (live, got) {
            (Some(e), Some(it)) => {
                self.check_item(key, &e, it);
                self.hits += 1;
            }
            (Some(e), None) => self.excuse_miss(key, during, what, &e),
            (None, Some(it)) => self.fail(format!(
                "{what}: key {key_s}: store returned {it_s}; model lacks it",
                key_s = show(key),
                it_s = show_item(it)
            )),
            (None, None) => {}
        }
    }

    // -----------------------------------------------------------------------------------------
    // Generators

    fn pick_key(&mut self) -> Vec<u8> {
        // Some picks go to a tenth of the keys, so those see many operations each.
        let n = self.keys.len();
        let i = if self.rng.percent(self.profile.hot_percent) {
            self.rng.index(n.div_ceil(10))
        } else {
            self.rng.index(n)
        };
        self.keys[i].clone()
    }

    fn gen_value(&mut self) -> Vec<u8> {
        if self.rng.percent(20) {
            return self.gen_counter_value();
        }
        let len = self.rng.index(self.profile.value_max + 1);
        self.rng.bytes(len)
    }

    /// Values for incr/decr: mostly numbers, some near the edges of what is accepted.
    fn gen_counter_value(&mut self) -> Vec<u8> {
        let choice = self.rng.below(20);
        let v: Vec<u8> = match choice {
            0..=7 => self.rng.below(1000).to_string().into(),
            8..=9 => self.rng.next_u64().to_string().into(),
            10 => u64::MAX.to_string().into(),
            11 => (u64::MAX - self.rng.below(10)).to_string().into(),
            12 => b"0".to_vec(),
            13 => format!("{:020}", self.rng.below(100)).into(),
            14 => format!("{:021}", self.rng.below(100)).into(), // 21 digits: not a number
            15 => b"18446744073709551616".to_vec(),              // u64::MAX + 1
            16 => b"-5".to_vec(),
            17 => b"12a".to_vec(),
            18 => Vec::new(),
            _ => b" 7".to_vec(),
        };
        v
    }

    fn gen_expiry(&mut self) -> Expiry {
        let now = self.now();
        if self.rng.percent(self.profile.never_percent) {
            return Expiry::Never;
        }
        match self.rng.below(100) {
            0..=69 => Expiry::AtMs(now + 1 + self.rng.below(3000)),
            70..=89 => Expiry::AtMs(now + 1 + self.rng.below(60_000)),
            90..=94 => Expiry::AtMs(now), // expired as soon as written
            _ => Expiry::AtMs(now.saturating_sub(self.rng.below(1000))),
        }
    }

    fn gen_flags(&mut self) -> u32 {
        if self.rng.percent(50) {
            0
        } else {
            self.rng.next_u64() as u32
        }
    }

    /// A CAS for a conditional op, like a client would send: usually the one just read, else a
    /// stale one of the same key, else an arbitrary number.
    fn gen_cas(&mut self, key: &[u8], read: Option<u64>) -> u64 {
        let roll = self.rng.below(100);
        let stale = self.cas_seen.get(key).filter(|seen| !seen.is_empty()).cloned();
        match (roll, read, stale) {
            (0..=69, Some(cas), _) => cas,
            (0..=84, _, Some(seen)) => seen[self.rng.index(seen.len())],
            (_, _, _) if self.rng.percent(10) => 0,
            _ => self.rng.next_u64(),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Operations

    fn step(&mut self, op: usize) {
        self.report.op = op;
        self.sync_flush();
        if self.rng.below(self.profile.flush_one_in) == 0 {
            return self.op_flush();
        }
        let key = self.pick_key();
        match self.rng.below(10_000) {
            0..=1799 => {
                self.op_get(&key);
            }
            1800..=1999 => self.op_multiget(),
            2000..=3299 => self.op_store(&key, 0),
            3300..=3799 => self.op_store(&key, 1),
            3800..=4299 => self.op_store(&key, 2),
            4300..=4699 => self.op_store(&key, 3),
            4700..=4999 => self.op_store(&key, 4),
            5000..=5799 => self.op_store(&key, 5),
            5800..=6299 => self.op_delete(&key),
            6300..=6699 => self.op_touch(&key),
            6700..=6999 => self.op_gat(&key),
            7000..=7599 => self.op_incr_decr(&key, true),
            7600..=7999 => self.op_incr_decr(&key, false),
            8000..=8299 => self.op_modify(&key),
            8300..=9599 => self.op_advance_clock(),
            9600..=9649 => self.op_maintain(),
            _ => self.op_check_invariants(),
        }
    }

    /// Store::get of one key; returns the CAS the store reported, if it had the key.
    fn op_get(&mut self, key: &[u8]) -> Option<u64> {
        self.report.what = format!("get {key_s}", key_s = show(key));
        let live = self.live(key);
        let got = self.store.get(key);
        let during = self.take_evicted();
        let cas = got.as_ref().map(|it| it.cas);
        self.check_read(key, live, got.as_ref(), &during, "get");
        self.finish(key, got.is_some(), during);
        cas
    }

    /// Several keys through one reader, all borrowed at once.
    fn op_multiget(&mut self) {
        let keys: Vec<Vec<u8>> = (0..1 + self.rng.below(8)).map(|_| self.pick_key()).collect();
        self.report.what = format!("reader get {keys_s}", keys_s = show_keys(&keys));
        let lives: Vec<Option<Entry>> = keys.iter().map(|k| self.live(k)).collect();
        let got: Vec<Option<OwnedItem>> = {
            let reader = self.store.reader();
            let items: Vec<Option<Item<'_>>> = keys.iter().map(|k| reader.get(k)).collect();
            items.iter().map(|it| it.map(|it| it.to_owned())).collect()
        };
        let during = self.take_evicted();
        for ((key, live), got) in keys.iter().zip(lives).zip(got) {
            // A key asked twice: the first check may have corrected the model.
            let live = if self.model.contains_key(key.as_slice()) { live } else { None };
            self.check_read(key, live, got.as_ref(), &during, "reader get");
            if got.is_some() && !during.contains(key) {
                self.pending_evicted.remove(key);
            }
        }
        self.absorb(during);
    }

    /// mode: 0 Set, 1 Add, 2 Replace, 3 Append, 4 Prepend, 5 Cas.
    fn op_store(&mut self, key: &[u8], mode: u8) {
        let mut value = self.gen_value();
        let flags = self.gen_flags();
        let expiry = self.gen_expiry();
        let mode = match mode {
            0 => Mode::Set,
            1 => Mode::Add,
            2 => Mode::Replace,
            3 | 4 => {
                // Keep appended values from growing without bound.
                let grown = self.model.get(key).map_or(0, |e| e.value.len());
                if grown > 4 * self.profile.value_max {
                    value.truncate(3);
                }
                if mode == 3 {
                    Mode::Append
                } else {
                    Mode::Prepend
                }
            }
            _ => {
                let read = self.op_get(key);
                Mode::Cas(self.gen_cas(key, read))
            }
        };
        self.report.what = format!(
            "store {mode:?} {key_s} ({} bytes {}, flags {flags}, {expiry:?})",
            value.len(),
            short(&value),
            key_s = show(key)
        );
        let live = self.live(key);
        if let (Mode::Cas(_), Some(Entry { cas: None, .. })) = (mode, &live) {
            self.fail("test bug: CAS of a live key unknown right after reading it");
        }
        let result = self.store.store(key, &value, flags, expiry, mode);
        let shape = result.as_ref().map(|_| ()).map_err(Clone::clone);
        let if_present = match mode {
            Mode::Set | Mode::Replace | Mode::Append | Mode::Prepend => Ok(()),
            Mode::Add => Err(StoreError::NotStored),
            Mode::Cas(c) => {
                if live.as_ref().and_then(|e| e.cas) == Some(c) {
                    Ok(())
                } else {
                    Err(StoreError::Exists)
                }
            }
        };
        let if_absent = match mode {
            Mode::Set | Mode::Add => Ok(()),
            Mode::Replace | Mode::Append | Mode::Prepend => Err(StoreError::NotStored),
            Mode::Cas(_) => Err(StoreError::NotFound),
        };
        let during = self.take_evicted();
        let view = self.reconcile(key, live, &during, &shape, if_present, if_absent);
        let present = match &result {
            Ok(cas) => {
                self.check_new_cas(key, *cas);
                let entry = match (mode, view) {
                    (Mode::Append, Some(old)) => Entry {
                        value: [old.value.as_slice(), &value].concat(),
                        cas: Some(*cas),
                        ..old
                    },
                    (Mode::Prepend, Some(old)) => Entry {
                        value: [value.as_slice(), &old.value].concat(),
                        cas: Some(*cas),
                        ..old
                    },
                    _ => Entry { value, flags, expiry, cas: Some(*cas) },
                };
                self.model.insert(key.to_vec(), entry);
                true
            }
            Err(StoreError::NotStored) => mode == Mode::Add,
            Err(StoreError::Exists) => true,
            Err(_) => false,
        };
        self.finish(key, present, during);
    }

    fn op_delete(&mut self, key: &[u8]) {
        let cas = if self.rng.percent(40) {
            let read = self.op_get(key);
            Some(self.gen_cas(key, read))
        } else {
            None
        };
        self.report.what = format!("delete {key_s} cas {cas:?}", key_s = show(key));
        let live = self.live(key);
        let result = self.store.delete(key, cas);
        let if_present = match cas {
            Some(c) if live.as_ref().and_then(|e| e.cas) != Some(c) => Err(StoreError::Exists),
            _ => Ok(()),
        };
        let during = self.take_evicted();
        self.reconcile(key, live, &during, &result, if_present, Err(StoreError::NotFound));
        if result.is_ok() {
            self.model.remove(key);
        }
        self.finish(key, result == Err(StoreError::Exists), during);
    }

    fn op_touch(&mut self, key: &[u8]) {
        let expiry = self.gen_expiry();
        self.report.what = format!("touch {key_s} {expiry:?}", key_s = show(key));
        let live = self.live(key);
        let result = self.store.touch(key, expiry);
        let shape = result.as_ref().map(|_| ()).map_err(Clone::clone);
        let during = self.take_evicted();
        self.reconcile(key, live, &during, &shape, Ok(()), Err(StoreError::NotFound));
        if let Ok(cas) = result {
            // The CAS may or may not change on touch: learn it at the next read.
            self.learn_cas(key, cas);
            let entry = self.model.get_mut(key).unwrap();
            entry.expiry = expiry;
            entry.cas = None;
        }
        self.finish(key, result.is_ok(), during);
    }

    fn op_gat(&mut self, key: &[u8]) {
        let expiry = self.gen_expiry();
        self.report.what = format!("gat {key_s} {expiry:?}", key_s = show(key));
        let live = self.live(key);
        let got = self.store.get_and_touch(key, expiry);
        let during = self.take_evicted();
        let present = got.is_some();
        match (live, got) {
            (Some(e), Some(it)) => {
                let after = Entry { expiry, cas: None, ..e };
                self.check_item(key, &Entry { cas: Some(it.cas), ..after.clone() }, &it);
                self.learn_cas(key, it.cas);
                self.model.insert(key.to_vec(), after);
                self.hits += 1;
            }
            (Some(e), None) => self.excuse_miss(key, &during, "gat", &e),
            (None, Some(it)) => {
                self.fail(format!("gat returned {it_s}; model lacks it", it_s = show_item(&it)))
            }
            (None, None) => {}
        }
        self.finish(key, present, during);
    }

    fn op_incr_decr(&mut self, key: &[u8], incr: bool) {
        let delta = match self.rng.below(20) {
            0..=11 => self.rng.below(10),
            12..=15 => self.rng.below(1_000_000),
            16..=17 => self.rng.next_u64(),
            _ => u64::MAX - self.rng.below(3),
        };
        self.report.what =
            format!("{} {key_s} {delta}", if incr { "incr" } else { "decr" }, key_s = show(key));
        let live = self.live(key);
        let result = if incr {
            common::incr(&self.store, key, delta)
        } else {
            common::decr(&self.store, key, delta)
        };
        let if_present = match live.as_ref().and_then(|e| parse_counter(&e.value)) {
            None => Err(StoreError::NotNumeric),
            Some(n) if incr => Ok(n.wrapping_add(delta)),
            Some(n) => Ok(n.saturating_sub(delta)),
        };
        let during = self.take_evicted();
        self.reconcile(key, live, &during, &result, if_present, Err(StoreError::NotFound));
        if let Ok(n) = result {
            let entry = self.model.get_mut(key).unwrap();
            entry.value = n.to_string().into_bytes();
            entry.cas = None;
        }
        self.finish(key, matches!(result, Ok(_) | Err(StoreError::NotNumeric)), during);
    }

    fn op_modify(&mut self, key: &[u8]) {
        let choice = self.rng.below(4); // 0 Keep, 1 Delete, 2 Write, 3 Write derived from current
        let value = self.gen_value();
        let flags = self.gen_flags();
        let expiry = self.gen_expiry();
        self.report.what =
            format!("modify {key_s} choice {choice} ({} bytes)", value.len(), key_s = show(key));
        let live = self.live(key);
        // The closure may run more than once; only its last run counts.
        let mut seen: Option<OwnedItem> = None;
        let mut written: Option<Entry> = None;
        let result = self.store.modify(key, |cur| {
            seen = cur.map(|it| it.to_owned());
            written = None;
            let change = match (choice, &seen) {
                (0, _) => Change::Keep,
                (1, _) => Change::Delete,
                (3, Some(cur)) => {
                    let mut derived = cur.value.clone();
                    derived.truncate(4 * 1024);
                    derived.extend_from_slice(b"+m");
                    Change::Write { value: derived, flags: cur.flags, expiry }
                }
                _ => Change::Write { value: value.clone(), flags, expiry },
            };
            if let Change::Write { value, flags, expiry } = &change {
                written =
                    Some(Entry { value: value.clone(), flags: *flags, expiry: *expiry, cas: None });
            }
            (change, ())
        });
        let during = self.take_evicted();
        // What the closure saw must be the model's item.
        self.check_read(key, live, seen.as_ref(), &during, "modify");
        match (result, written) {
            (Ok((Some(cas), ())), Some(mut entry)) => {
                self.check_new_cas(key, cas);
                entry.cas = Some(cas);
                self.model.insert(key.to_vec(), entry);
            }
            (Ok((None, ())), None) => {
                if choice == 1 {
                    self.model.remove(key);
                }
            }
            (result, written) => {
                self.fail(format!("modify returned {result:?} for the change {written:?}"))
            }
        }
        self.finish(key, seen.is_some() || choice >= 2, during);
    }

    fn op_advance_clock(&mut self) {
        let now = self.now();
        let target = match self.rng.below(100) {
            // Straight to (or just before) an item's expiry or a pending flush.
            0..=14 => {
                let key = self.pick_key();
                let at = match (self.model.get(&key).map(|e| e.expiry), self.flush_at) {
                    (_, Some(at)) if self.rng.percent(30) => at,
                    (Some(Expiry::AtMs(at)), _) => at,
                    _ => now,
                };
                let at = if self.rng.percent(50) { at.saturating_sub(1) } else { at };
                at.max(now)
            }
            15..=64 => now + self.rng.below(10),
            65..=89 => now + self.rng.below(500),
            90..=97 => now + self.rng.below(3000),
            _ => now + self.rng.below(30_000),
        };
        self.report.what = format!("clock +{} ms", target - now);
        self.clock.set_ms(target);
    }

    fn op_maintain(&mut self) {
        let n = 1 + self.rng.index(8);
        self.report.what = format!("maintain({n})");
        self.store.maintain(n);
        let during = self.take_evicted();
        self.absorb(during);
    }

    fn op_flush(&mut self) {
        // One flush at a time: what a second flush_all does to a pending one is not specified.
        if self.flush_at.is_some() {
            return;
        }
        // Let the store see the clock first, so that a delayed flush that has just come due is
        // applied before the new flush_all is called (ops.rs tests that case on its own:
        // flush_all_delayed_then_flush_all_again).
        let key = self.pick_key();
        self.op_get(&key);
        if self.rng.percent(50) {
            self.report.what = "flush_all(0)".into();
            self.store.flush_all(0);
            self.model.clear();
            self.pending_evicted.clear();
            let during = self.take_evicted();
            self.absorb(during);
        } else {
            let delay = 1 + self.rng.below(5000);
            self.report.what = format!("flush_all({delay})");
            self.store.flush_all(delay);
            self.flush_at = Some(self.now() + delay);
            let during = self.take_evicted();
            self.absorb(during);
        }
    }

    /// Store-wide checks: memory bound, item count, no eviction in the roomy profile.
    fn op_check_invariants(&mut self) {
        self.report.what = "invariants".into();
        let st = self.store.stats();
        if st.memory_used_bytes > st.memory_limit_bytes {
            self.fail(format!("memory over the limit: {st:?}"));
        }
        if self.profile.strict && st.evictions > 0 {
            self.fail(format!("evictions in a store with room to spare: {st:?}"));
        }
        // Every item the model is sure of is live in the store, so counted.
        let now = self.now();
        let sure = self
            .model
            .iter()
            .filter(|(k, e)| !e.expiry.is_expired(now) && !self.pending_evicted.contains(*k))
            .count();
        let len = self.store.len();
        if len < sure {
            self.fail(format!("len {len} but the model has {sure} live items; {st:?}"));
        }
    }

    /// End of a run: every key read back, a full scan, the store-wide checks.
    fn final_checks(&mut self) {
        self.sync_flush();
        self.op_check_invariants();
        for key in self.keys.clone() {
            self.op_get(&key);
        }
        self.report.what = "final scan".into();
        let mut scanned = HashSet::new();
        let mut cursor = 0;
        for _ in 0..10_000_000 {
            cursor = self.store.scan(cursor, 64, |k| {
                scanned.insert(k.to_vec());
            });
            if cursor == 0 {
                break;
            }
        }
        if cursor != 0 {
            self.fail("scan did not finish");
        }
        let now = self.now();
        let missed: Vec<&Vec<u8>> = self
            .model
            .iter()
            .filter(|(k, e)| !e.expiry.is_expired(now) && !scanned.contains(*k))
            .map(|(k, _)| k)
            .collect();
        if !missed.is_empty() {
            self.fail(format!("scan missed {} live keys, e.g. {:?}", missed.len(), missed[0]));
        }
    }
}

/// A key, for messages.
fn show(bytes: &[u8]) -> String {
    format!("\"{}\"", bytes.escape_ascii())
}

fn show_keys<'a>(keys: impl IntoIterator<Item = &'a Vec<u8>>) -> String {
    keys.into_iter().map(|k| show(k)).collect::<Vec<_>>().join(", ")
}

fn show_item(it: &OwnedItem) -> String {
    format!(
        "item {{ key {}, {} bytes {}, flags {}, {:?}, cas {} }}",
        show(&it.key),
        it.value.len(),
        short(&it.value),
        it.flags,
        it.expiry,
        it.cas
    )
}

/// The start of a byte string, for messages.
fn short(bytes: &[u8]) -> String {
    let head = &bytes[..bytes.len().min(24)];
    format!("\"{}\"{}", head.escape_ascii(), if bytes.len() > 24 { "..." } else { "" })
}

fn run_profile(test: &'static str, profile: &'static Profile, run_offset: u64) {
    let base = base_seed();
    let ops = ops_per_run(profile);
    eprintln!("{test}: STORE_MODEL_SEED={base}, {RUNS_PER_TEST} runs of {ops} ops");
    for run in run_offset..run_offset + RUNS_PER_TEST {
        let seed = mix(base ^ mix(run + 1));
        let report = SeedReport { base_seed: base, test, run, op: 0, what: "setup".into() };
        let mut h = Harness::new(profile, seed, report);
        for op in 0..ops {
            h.step(op);
        }
        h.final_checks();
        let st = h.store.stats();
        eprintln!(
            "{test} run {run}: hits {} excused misses {} evictions {} (reported {}) items {} \
             expired_reclaimed {}",
            h.hits,
            h.excused_misses,
            st.evictions,
            h.evictions_reported,
            st.items,
            st.expired_reclaimed
        );
    }
}

// Random ops in a 4 MiB store with 2000 keys of up to 2000 bytes: the store evicts, and every
// answer still agrees with the model except for reported evictions.
#[test]
fn model_with_eviction() {
    run_profile("model_with_eviction", &EVICTING, 0);
}

// Random ops in a 16 MiB store with 200 keys of under 100 bytes: no eviction, so every answer
// must agree with the model exactly.
#[test]
fn model_without_eviction() {
    run_profile("model_without_eviction", &ROOMY, 100);
}
