//! Issue 16 ("Reliability first"), the store's part: in evict mode a write that fits is never
//! refused, whatever was stored before it and however many threads write; keys written every
//! few operations survive a cold churn; expired items leave without being read.
//!
//! Each test is bounded by an operation count, not by time, so that a slow machine makes it
//! slower but not flaky.

use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc,
};

use store::{Clock, Config, Expiry, ManualClock, Mode, Store, StoreError, WhenFull, MIB};

const KIB: usize = 1024;

fn small_store(memory_bytes: usize, item_size_max: usize) -> Store {
    Store::new(Config {
        memory_bytes,
        segment_size_bytes: 64 * KIB,
        item_size_max,
        ..Config::default()
    })
    .expect("valid config")
}

fn set(store: &Store, key: &str, value: &[u8]) -> Result<u64, StoreError> {
    store.store(key.as_bytes(), value, 0, Expiry::Never, Mode::Set)
}

// Large items (own mappings), each read once so S3-FIFO holds them for a second chance: once
// memory is full, the next set must still be stored. It was refused because every victim
// merely lost its read bit, and a write gave up after 32 rounds of 2 victims each.
#[test]
fn large_items_that_were_read_are_evicted_for_the_next_one() {
    let store = small_store(16 * MIB, MIB);
    let value = vec![7u8; 20 * KIB]; // large: at least a quarter of a 64 KiB segment
    for i in 0..2_000 {
        let key = format!("large{i}");
        set(&store, &key, &value).unwrap_or_else(|e| panic!("set {i} refused: {e:?}"));
        assert_eq!(store.get(key.as_bytes()).expect("just stored").value, value);
    }
    assert!(store.stats().evictions > 0);
}

// One key rewritten with small values, another with large ones: the store holds two items and
// the rest is garbage or stale queue entries. A large item needing several segments' worth of
// memory must then be stored, and the stale entries must not count as memory made.
#[test]
fn large_item_fits_after_churn_of_other_sizes() {
    let store = small_store(8 * MIB, 2 * MIB);
    for i in 0..2_000u32 {
        set(&store, "small", &[(i % 251) as u8; 8 * KIB]).expect("8 KiB set");
    }
    for i in 0..200u32 {
        set(&store, "mid", &[(i % 251) as u8; 100 * KIB]).expect("100 KiB set");
    }
    for size in [600 * KIB, MIB + 100, 2 * MIB - 16] {
        let value = vec![3u8; size];
        set(&store, "big", &value).unwrap_or_else(|e| panic!("{size} B refused: {e:?}"));
        assert_eq!(store.get(b"big").expect("big stored").value, value);
    }
}

// Several threads write values whose sizes drift (tiny, large, tiny, anything up to the item
// limit) into a small store: no write may be refused.
#[test]
fn drifting_sizes_from_many_threads_are_never_refused() {
    let store = Arc::new(small_store(8 * MIB, MIB));
    let refused = AtomicUsize::new(0);
    let phases: [(usize, usize); 4] = [(100, 100), (100 * KIB, 500 * KIB), (50, 50), (1, MIB - 64)];
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            let (store, refused) = (&store, &refused);
            scope.spawn(move || {
                let mut rng = t.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                let mut next = move || {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng
                };
                let blob = vec![t as u8; MIB];
                for (lo, hi) in phases {
                    let ops = if lo > 10 * KIB || hi > 10 * KIB { 300 } else { 20_000 };
                    for _ in 0..ops {
                        let size = lo + (next() as usize) % (hi - lo + 1);
                        let key = format!("drift{}", next() % 50_000);
                        match set(store, &key, &blob[..size]) {
                            Ok(_) => {}
                            Err(StoreError::NoSpace) => _ = refused.fetch_add(1, Ordering::Relaxed),
                            Err(e) => panic!("unexpected {e:?}"),
                        }
                    }
                }
            });
        }
    });
    assert_eq!(refused.load(Ordering::Relaxed), 0, "{:?}", store.stats());
}

// Threads append small tokens to a few keys until the values are large (own mappings) while
// the garbage of every rewrite fills the store many times over: no append may be refused, and
// no key may be lost (an append to a vanished key is NotStored).
#[test]
fn appends_from_many_threads_are_never_refused_nor_lost() {
    let store = Arc::new(small_store(8 * MIB, MIB));
    let keys = 16;
    for k in 0..keys {
        set(&store, &format!("app{k}"), b"").expect("create");
    }
    std::thread::scope(|scope| {
        for t in 0..4usize {
            let store = &store;
            scope.spawn(move || {
                for i in 0..6_000usize {
                    let key = format!("app{}", (i * 7 + t) % keys);
                    let token = format!("{t:02}{i:010}");
                    store
                        .store(key.as_bytes(), token.as_bytes(), 0, Expiry::Never, Mode::Append)
                        .unwrap_or_else(|e| panic!("append {i} of thread {t}: {e:?}"));
                }
            });
        }
    });
    let total: usize = (0..keys)
        .map(|k| store.get(format!("app{k}").as_bytes()).expect("key kept").value.len())
        .sum();
    assert_eq!(total, 4 * 6_000 * 12);
}

// Most of the cache is a warm set, read every round, so S3-FIFO's main queue holds it and
// new items pass through the small queue (a tenth of the cache). A key appended to once per
// 2,000 cold sets (2 MiB, more than the small queue holds) must never be the one evicted: a
// rewrite counts as an access, so its new copy is not taken for a cold newcomer.
#[test]
fn a_key_rewritten_often_survives_cold_churn() {
    const COLD_PER_ROUND: usize = 5_000;
    let store = small_store(8 * MIB, MIB);
    let value = vec![1u8; KIB];
    for i in 0..4_000usize {
        set(&store, &format!("warm{i}"), &value).expect("warm set");
    }
    set(&store, "hot", b"").expect("create");
    for round in 0..40usize {
        let token = format!("{round:012}");
        store
            .store(b"hot", token.as_bytes(), 0, Expiry::Never, Mode::Append)
            .unwrap_or_else(|e| panic!("hot key gone at round {round}: {e:?}"));
        let reader = store.reader();
        for i in 0..4_000usize {
            reader.get(format!("warm{i}").as_bytes());
        }
        drop(reader);
        for i in 0..COLD_PER_ROUND {
            set(&store, &format!("cold{round}:{i}"), &value).expect("cold set");
        }
    }
    assert_eq!(store.get(b"hot").expect("hot kept").value.len(), 40 * 12);
}

// Items with TTLs of 1-3 s, never read: after they expire, `maintain` alone (bounded calls)
// brings the item count to zero and gives their segments back, including the segment that
// was still active (open for writes) when the burst ended.
#[test]
fn expired_items_are_reclaimed_without_reads() {
    let clock = Arc::new(ManualClock::new(1_000_000));
    let store =
        Store::new(Config { memory_bytes: 64 * MIB, clock: clock.clone(), ..Config::default() })
            .expect("valid config");
    set(&store, "forever", b"stays").expect("set");
    for i in 0..20_000u64 {
        let at = clock.now_ms() + 1_000 + (i % 3) * 1_000;
        store
            .store(format!("ttl{i}").as_bytes(), &[0u8; 100], 0, Expiry::AtMs(at), Mode::Set)
            .expect("set");
    }
    assert_eq!(store.len(), 20_001);
    let in_use = store.stats().segments_in_use;
    clock.advance_ms(3_001);
    for _ in 0..100 {
        store.maintain(8);
        // Freed segments come back after a grace period that other tests' threads, pinned
        // in this process's one epoch, can hold up: give them a moment, as a server's ticks
        // (100 ms apart) do.
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(store.len(), 1, "{:?}", store.stats());
    assert!(store.stats().segments_in_use < in_use, "{:?}", store.stats());
    assert_eq!(store.get(b"forever").expect("kept").value, b"stays");
}

// `-M`: a full store still refuses writes instead of evicting.
#[test]
fn refuse_mode_still_refuses_when_full() {
    let store = Store::new(Config {
        memory_bytes: 4 * MIB,
        segment_size_bytes: 64 * KIB,
        item_size_max: MIB,
        when_full: WhenFull::Refuse,
        ..Config::default()
    })
    .expect("valid config");
    let value = vec![0u8; 4 * KIB];
    let refused = (0..2_000).any(|i| set(&store, &format!("k{i}"), &value).is_err());
    assert!(refused);
    assert_eq!(store.stats().evictions, 0);
}

// A store switched between refusing and evicting at run time (Redis `CONFIG SET
// maxmemory-policy`) does what the new policy says from the next write: refused writes
// while refusing, evictions once evicting, refusals again after switching back.
#[test]
fn when_full_switches_at_run_time() {
    let store = Store::new(Config {
        memory_bytes: 4 * MIB,
        segment_size_bytes: 64 * KIB,
        item_size_max: MIB,
        when_full: WhenFull::Refuse,
        ..Config::default()
    })
    .expect("valid config");
    let value = vec![0u8; 4 * KIB];
    let first_refused = (0..2_000).find(|i| set(&store, &format!("a{i}"), &value).is_err());
    assert!(first_refused.is_some());
    assert_eq!(store.stats().evictions, 0);
    store.set_when_full(WhenFull::Evict);
    assert_eq!(store.when_full(), WhenFull::Evict);
    for i in 0..2_000 {
        set(&store, &format!("b{i}"), &value).expect("an evicting store takes every write");
    }
    assert!(store.stats().evictions > 0);
    store.set_when_full(WhenFull::Refuse);
    let evictions = store.stats().evictions;
    assert!((0..2_000).any(|i| set(&store, &format!("c{i}"), &value).is_err()));
    assert_eq!(store.stats().evictions, evictions);
}

// Issue 31, property 4: while what the store holds is well under the limit, churn must not
// evict anything. 2,000 keys written once and never read, then 4 threads overwrite keys of
// their own (16 each, 2 MiB at most) with sizes drifting from bytes to half a segment,
// writing about 36 times the memory: every key written once is still there, nothing was evicted, and the room came from
// copying live items out of segments full of dead copies.
#[test]
fn keys_written_once_survive_churn_while_live_data_is_small() {
    let store = small_store(8 * MIB, MIB);
    for i in 0..2_000usize {
        set(&store, &format!("once{i}"), format!("{i:0100}").as_bytes()).expect("set once");
    }
    std::thread::scope(|scope| {
        for t in 0..4usize {
            let store = &store;
            scope.spawn(move || {
                for i in 0..8_000usize {
                    let size = [10, 30 * KIB, 200, 5 * KIB][(i / 1_000) % 4] + i % 97;
                    let value = vec![(i % 251) as u8; size];
                    set(store, &format!("churn{t}:{}", i % 16), &value)
                        .unwrap_or_else(|e| panic!("set {i} of thread {t}: {e:?}"));
                }
            });
        }
    });
    let stats = store.stats();
    for i in 0..2_000usize {
        let item = store.get(format!("once{i}").as_bytes());
        let item = item.unwrap_or_else(|| panic!("once{i} lost: {stats:?}"));
        assert_eq!(item.value, format!("{i:0100}").into_bytes(), "once{i}");
    }
    assert_eq!(stats.evictions, 0, "{stats:?}");
    assert!(stats.compacted > 0, "{stats:?}");
}

// Appends that grow items to just under a quarter of a segment (the largest items kept in
// segments: three or four fill one) from 4 threads: copying such items forward needs whole
// free segments, and a copy that found none evicted its item (seen: 26 keys lost at -m 64
// with 8 MiB live). Every token must be there, and nothing evicted.
#[test]
fn appends_to_items_near_a_quarter_segment_are_never_lost() {
    let store = Arc::new(small_store(4 * MIB, MIB));
    let keys = 96;
    for k in 0..keys {
        set(&store, &format!("app{k}"), b"").expect("create");
    }
    let per_thread = keys * 1_300 / 4; // 96 keys of about 15.6 KiB: 1.5 MiB live
    std::thread::scope(|scope| {
        for t in 0..4usize {
            let store = &store;
            scope.spawn(move || {
                for i in 0..per_thread {
                    let key = format!("app{}", (i * 5 + t) % keys);
                    let token = format!("{t:02}{i:010}");
                    store
                        .store(key.as_bytes(), token.as_bytes(), 0, Expiry::Never, Mode::Append)
                        .unwrap_or_else(|e| panic!("append {i} of thread {t}: {e:?}"));
                }
            });
        }
    });
    let total: usize = (0..keys)
        .map(|k| store.get(format!("app{k}").as_bytes()).expect("key kept").value.len())
        .sum();
    assert_eq!(total, 4 * per_thread * 12);
    assert_eq!(store.stats().evictions, 0, "{:?}", store.stats());
}

fn value_10k(key: usize, round: usize) -> Vec<u8> {
    let mut value = vec![(round % 251) as u8; 10_000];
    value[..16].copy_from_slice(format!("{key:08}{round:08}").as_bytes());
    value
}

fn set_10k(store: &Store, key: usize, round: usize) {
    let value = value_10k(key, round);
    set(store, &format!("k{key}"), &value).unwrap_or_else(|e| panic!("set k{key}: {e:?}"));
}

// Churn far below the limit from 4 threads, each over 150 keys of 10 KB of its own: the
// compactions ahead of the limit (`store/reuse.rs`) run on whichever writer rolled,
// concurrently with the others' writes and copies; nothing is evicted and every key reads
// its last value. (How much memory is reused depends on how soon the epoch's grace periods
// end, which 4 threads on 2 cores delay: tests/reuse.rs checks that single-threaded.)
#[test]
fn churn_below_the_limit_from_threads_keeps_every_key() {
    let store =
        Store::new(Config { memory_bytes: 256 * MIB, ..Config::default() }).expect("valid config");
    let keys_per_thread = 150;
    std::thread::scope(|scope| {
        for t in 0..4 {
            let store = &store;
            scope.spawn(move || {
                for round in 0..20 {
                    for i in 0..keys_per_thread {
                        set_10k(
                            store,
                            t * keys_per_thread + (i * 7 + round) % keys_per_thread,
                            round,
                        );
                    }
                }
            });
        }
    });
    let stats = store.stats();
    assert_eq!(stats.evictions, 0, "{stats:?}");
    for key in 0..4 * keys_per_thread {
        let item = store.get(format!("k{key}").as_bytes()).expect("key kept");
        assert_eq!(item.value, value_10k(key, 19), "k{key}");
    }
}
