//! Reuse before the limit (`store/reuse.rs`): under churn over a fixed key space, far below
//! the memory limit, the store writes again into segments it compacted instead of charging
//! (and touching) fresh ones, so the memory charged stays near twice the live data; nothing
//! is evicted and every key keeps its latest value.
//!
//! One test, its cases in turn: how soon memory comes back depends on the epoch's grace
//! periods, which other tests' threads in the same process (pinned, then preempted on a
//! small machine) would delay.

use store::{Config, Expiry, Mode, Store, WhenFull, MIB};

fn store_of(memory_bytes: usize) -> Store {
    Store::new(Config { memory_bytes, ..Config::default() }).expect("valid config")
}

fn value_of(key: usize, round: usize) -> Vec<u8> {
    let mut value = vec![(round % 251) as u8; 10_000];
    value[..16].copy_from_slice(format!("{key:08}{round:08}").as_bytes());
    value
}

fn set(store: &Store, key: usize, round: usize) {
    let value = value_of(key, round);
    store
        .store(format!("k{key}").as_bytes(), &value, 0, Expiry::Never, Mode::Set)
        .unwrap_or_else(|e| panic!("set k{key} round {round}: {e:?}"));
}

// 500 keys of 10 KB (5 MB live) in a 256 MiB store, rewritten 24 times over (120 MB
// written, half the limit): the memory charged stays under 24 MiB (twice the live data, the
// index, the floor and partly filled segments), where it grew with every write before
// (about 125 MB), and every key reads its last value.
#[test]
fn reuse_before_the_limit() {
    churn_far_below_the_limit_reuses_memory();
    data_written_once_is_not_compacted();
    refusing_store_does_not_compact_ahead();
}

fn churn_far_below_the_limit_reuses_memory() {
    let store = store_of(256 * MIB);
    let keys = 500;
    for round in 0..24 {
        for key in 0..keys {
            set(&store, (key * 7 + round) % keys, round);
        }
    }
    let stats = store.stats();
    assert!(stats.memory_used_bytes < 24 * MIB as u64, "{stats:?}");
    assert_eq!(stats.evictions, 0, "{stats:?}");
    for key in 0..keys {
        let item = store.get(format!("k{key}").as_bytes()).expect("key kept");
        assert_eq!(item.value, value_of(key, 23), "k{key}");
    }
}

// Data written once and never rewritten: nothing is dead, so nothing is copied (the memory
// charged stays about what the store holds, below the mark).
fn data_written_once_is_not_compacted() {
    let store = store_of(256 * MIB);
    for key in 0..6_000 {
        set(&store, key, 0);
    }
    let stats = store.stats();
    assert_eq!(stats.compacted, 0, "{stats:?}");
    assert_eq!(stats.evictions, 0, "{stats:?}");
}

// A store that refuses writes when full does not compact ahead: its memory fills with the
// garbage as before (its writes are refused at the limit, not made room for).
fn refusing_store_does_not_compact_ahead() {
    let store = store_of(256 * MIB);
    store.set_when_full(WhenFull::Refuse);
    for round in 0..8 {
        for key in 0..500 {
            set(&store, key, round);
        }
    }
    let stats = store.stats();
    assert_eq!(stats.compacted, 0, "{stats:?}");
    assert!(stats.memory_used_bytes > 36 * MIB as u64, "{stats:?}");
}
