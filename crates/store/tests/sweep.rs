//! Active expiry (`Store::sweep_expired`, and `maintain`, which runs it): expired items that
//! nobody reads again leave `len` and `scan` after a pass over the index, counted as a write
//! that finds them expired counts them; items without a TTL are not touched; a step reads
//! no more of the index than its budget.
//!
//! The expiring items share their TTL class (and so their segments) with items that live on
//! (2 s and 9 s lifetimes, both under 10 s), so that no segment is wholly dead: whole-segment
//! reclaim cannot take them, only the sweep can.

use std::sync::Arc;

use store::{Clock, Config, Expiry, ManualClock, Mode, Store, MIB};

const T0: u64 = 1_700_000_000_000;
const EACH: usize = 1_000;

fn store(clock: &Arc<ManualClock>) -> Store {
    let config = Config { memory_bytes: 64 * MIB, clock: clock.clone(), ..Config::default() };
    Store::new(config).expect("valid config")
}

/// `EACH` keys each: `short:` expiring in 2 s, `long:` in 9 s, `plain:` never; every
/// other short key read once (fetched). One large short-lived item among them.
fn fill(store: &Store, clock: &ManualClock) {
    for i in 0..EACH {
        let now = clock.now_ms();
        let set = |key: String, expiry| {
            store.store(key.as_bytes(), b"value", 0, expiry, Mode::Set).expect("set");
        };
        set(format!("short:{i}"), Expiry::AtMs(now + 2_000));
        set(format!("long:{i}"), Expiry::AtMs(now + 9_000));
        set(format!("plain:{i}"), Expiry::Never);
        if i % 2 == 0 {
            assert!(store.get(format!("short:{i}").as_bytes()).is_some());
        }
    }
    let big = vec![b'b'; 100 * 1024];
    store.store(b"short:big", &big, 0, Expiry::AtMs(clock.now_ms() + 2_000), Mode::Set).unwrap();
}

fn scanned_keys(store: &Store) -> Vec<String> {
    let mut keys = Vec::new();
    let mut cursor = 0;
    loop {
        cursor = store.scan(cursor, 100, |key| keys.push(String::from_utf8_lossy(key).into()));
        if cursor == 0 {
            return keys;
        }
    }
}

// Expired keys leave len() and scan after one pass of sweep steps, without being read; the
// keys without TTL and those not yet expired stay; the counters move as for a read-expiry.
#[test]
fn sweep_unlinks_expired_items_and_counts_them() {
    let clock = Arc::new(ManualClock::new(T0));
    let store = store(&clock);
    fill(&store, &clock);
    assert_eq!(store.len(), 3 * EACH + 1);
    clock.advance_ms(3_000);
    // Nothing reads them: without a sweep they stay counted (whole-segment reclaim cannot
    // take segments that also hold the 9 s keys).
    let before = store.stats();
    assert_eq!(store.len(), 3 * EACH + 1);
    let index_slots = before.index_slots as usize;
    let mut swept = store::Swept::default();
    while swept.slots < index_slots {
        swept += store.sweep_expired(4096);
    }
    assert_eq!(swept.unlinked, EACH + 1, "{swept:?}");
    assert_eq!(store.len(), 2 * EACH);
    let keys = scanned_keys(&store);
    assert_eq!(keys.len(), 2 * EACH);
    assert!(keys.iter().all(|k| !k.starts_with("short:")), "an expired key is listed");
    let after = store.stats();
    assert_eq!(after.expired_reclaimed - before.expired_reclaimed, EACH as u64 + 1);
    // Half the short keys were read once: those are fetched, the rest and the large one not.
    assert_eq!(after.expired_unfetched - before.expired_unfetched, EACH as u64 / 2 + 1);
    // Another pass finds nothing more; the long keys expire in their turn.
    assert_eq!(store.sweep_expired(index_slots).unlinked, 0);
    clock.advance_ms(7_000);
    let mut swept = store::Swept::default();
    while swept.slots < index_slots {
        swept += store.sweep_expired(4096);
    }
    assert_eq!((swept.unlinked, store.len()), (EACH, EACH));
    for i in 0..EACH {
        assert!(store.get(format!("plain:{i}").as_bytes()).is_some(), "plain:{i} lost");
    }
}

// The workers' ticks (`maintain`) do the same: a few dozen calls clear them.
#[test]
fn maintain_sweeps_expired_items() {
    let clock = Arc::new(ManualClock::new(T0));
    let store = store(&clock);
    fill(&store, &clock);
    clock.advance_ms(3_000);
    for _ in 0..64 {
        store.maintain(8);
    }
    assert_eq!(store.len(), 2 * EACH);
    assert!(scanned_keys(&store).iter().all(|k| !k.starts_with("short:")));
}

// A store without TTLs: a sweep reads no item, only index cells and segment headers, and
// unlinks nothing.
#[test]
fn sweep_reads_no_item_without_ttls() {
    let clock = Arc::new(ManualClock::new(T0));
    let store = store(&clock);
    for i in 0..3 * EACH {
        store.store(format!("plain:{i}").as_bytes(), b"v", 0, Expiry::Never, Mode::Set).unwrap();
    }
    let index_slots = store.stats().index_slots as usize;
    let swept = store.sweep_expired(index_slots);
    assert!(swept.slots >= index_slots);
    assert_eq!((swept.items, swept.unlinked, store.len()), (0, 0, 3 * EACH));
}

// Items with a TTL are read only once the earliest expiry of their segment has passed.
#[test]
fn sweep_reads_no_item_before_an_expiry_passed() {
    let clock = Arc::new(ManualClock::new(T0));
    let store = store(&clock);
    for i in 0..3 * EACH {
        let expiry = Expiry::AtMs(T0 + 60_000 + i as u64);
        store.store(format!("ttl:{i}").as_bytes(), b"v", 0, expiry, Mode::Set).unwrap();
    }
    let index_slots = store.stats().index_slots as usize;
    assert_eq!(store.sweep_expired(index_slots).items, 0);
    clock.advance_ms(60_000);
    let swept = store.sweep_expired(index_slots);
    assert!(swept.items > 0 && swept.unlinked == 1, "{swept:?}");
    assert_eq!(store.len(), 3 * EACH - 1);
}

// A step reads its budget and at most one claim (4 chunks) more. (That a pass of steps
// covers every cell, the first test shows: it finds every expired key in one.)
#[test]
fn sweep_step_keeps_to_its_budget() {
    let clock = Arc::new(ManualClock::new(T0));
    let store = store(&clock);
    let index_slots = store.stats().index_slots as usize;
    // At most 256 buckets a sub-table, so a chunk (1/256 of one) is at most one bucket.
    assert!(index_slots <= 64 * 256 * 8, "{index_slots}");
    let claim_max = 4 * 8;
    for budget in [1, 100, 1000, 5000] {
        let swept = store.sweep_expired(budget);
        assert!(swept.slots >= budget.min(1) && swept.slots < budget + claim_max, "{swept:?}");
    }
    for _ in 0..1000 {
        let swept = store.sweep_expired(1);
        assert!(swept.slots >= 1 && swept.slots <= claim_max, "{swept:?}");
    }
}
