//! In evict mode a store of an item within the size limit never fails for lack of memory,
//! whatever the mix of sizes and however many threads write (large items included).

use std::{
    sync::atomic::{AtomicUsize, Ordering},
    time::{Duration, Instant},
};

use store::{Config, Expiry, Mode, Store, StoreError, MIB};

/// xorshift64*: sizes and keys, reproducible per thread.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo + 1) as u64) as usize
    }
}

/// Value sizes of one phase of the drift.
#[derive(Clone, Copy)]
enum Sizes {
    Small,
    Large,
    Mixed,
}

impl Sizes {
    fn pick(self, rng: &mut Rng) -> usize {
        match self {
            Sizes::Small => rng.between(1, 200),
            Sizes::Large => rng.between(100_000, 500_000),
            // Log-uniform over 1 B..512 KiB.
            Sizes::Mixed => (1usize << rng.between(0, 19)).min(512 * 1024 - 64),
        }
    }
}

fn hammer(store: &Store, threads: usize, phases: &[(Sizes, Duration)]) -> (usize, Vec<String>) {
    let stores = AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    let value = vec![7u8; 512 * 1024];
    std::thread::scope(|s| {
        for t in 0..threads {
            let (stores, failures, value) = (&stores, &failures, &value);
            s.spawn(move || {
                let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (t as u64 + 1));
                for &(sizes, time) in phases {
                    let end = Instant::now() + time;
                    while Instant::now() < end {
                        let key = format!("t{t}:{}", rng.between(0, 3000));
                        if rng.between(0, 9) == 0 {
                            let _ = store.get(key.as_bytes());
                            continue;
                        }
                        let len = sizes.pick(&mut rng);
                        match store.store(
                            key.as_bytes(),
                            &value[..len],
                            0,
                            Expiry::Never,
                            Mode::Set,
                        ) {
                            Ok(_) => {}
                            Err(e @ StoreError::NoSpace) => {
                                failures.lock().unwrap().push(format!("{key} {len}: {e:?}"))
                            }
                            Err(e) => panic!("{key} {len}: {e:?}"),
                        }
                        stores.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    (stores.into_inner(), failures.into_inner().unwrap())
}

fn check(memory_mib: usize, threads: usize, phases: &[(Sizes, Duration)]) {
    let store = Store::new(Config { memory_bytes: memory_mib * MIB, ..Config::default() })
        .expect("valid config");
    let (stores, failures) = hammer(&store, threads, phases);
    assert!(
        failures.is_empty(),
        "{} of {stores} stores failed at {memory_mib} MiB, {threads} threads: {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    assert!(store.memory_used_bytes() <= memory_mib * MIB);
}

#[test]
fn large_items_never_fail_for_memory() {
    let ms = |n| Duration::from_millis(n);
    check(64, 8, &[(Sizes::Large, ms(1500))]);
    check(48, 8, &[(Sizes::Small, ms(300)), (Sizes::Large, ms(1000)), (Sizes::Mixed, ms(1000))]);
}

#[test]
fn drifting_sizes_never_fail_for_memory() {
    let ms = |n| Duration::from_millis(n);
    check(16, 32, &[(Sizes::Mixed, ms(1500)), (Sizes::Small, ms(300)), (Sizes::Large, ms(1000))]);
}

/// Goal: a large item rewritten again and again, growing each time (memcached APPEND, a
/// Redis collection changed in place), is never evicted to make room for its own next
/// version while its older copies are still in their grace period. Seen: with 64 MiB, a
/// 1 MiB value appended to ~55 times was evicted though it was the only key.
#[test]
fn a_growing_large_item_does_not_evict_itself() {
    let config = Config { memory_bytes: 64 * MIB, item_size_max: 16 * MIB, ..Config::default() };
    let store = Store::new(config).unwrap();
    let mut len = MIB;
    store.store(b"k", &vec![b'x'; len], 0, Expiry::Never, Mode::Set).unwrap();
    for round in 0..300 {
        store.store(b"k", b"0123456789", 0, Expiry::Never, Mode::Append).unwrap();
        len += 10;
        let stored = store.get(b"k").map(|item| item.value.len());
        assert_eq!(stored, Some(len), "round {round}: the item was evicted");
    }
}
