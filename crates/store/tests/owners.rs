//! Owners: items that refer to memory outside the store (exec's large Redis collections).
//! Goal: the release observer hears of every owner exactly once, when its index entry goes
//! for any reason, and never while it is still there; memory charged outside the store
//! counts against the limit and makes room as a write would.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use store::{
    Change, Config, Expiry, ManualClock, Mode, Store, StoreError, ValueKind, WhenFull, MIB,
    OWNER_FLAGS,
};

const START_MS: u64 = 1_700_000_000_000;
const CHARGED_BYTES: usize = 64 * 1024;
const SEGMENT_BYTES: usize = 64 * 1024;

type Released = Arc<Mutex<Vec<Vec<u8>>>>;

fn store_with(memory_bytes: usize, clock: Arc<ManualClock>) -> (Store, Released) {
    let released: Released = Arc::default();
    let seen = Arc::clone(&released);
    let config = Config {
        memory_bytes,
        segment_size_bytes: SEGMENT_BYTES,
        clock,
        on_release: Some(Arc::new(move |value: &[u8]| {
            seen.lock().unwrap().push(value.to_vec());
            // An owner whose value starts with "charged" had charged 64 KiB.
            if value.starts_with(b"charged") {
                CHARGED_BYTES
            } else {
                0
            }
        })),
        ..Config::default()
    };
    (Store::new(config).expect("valid config"), released)
}

fn put_owner(store: &Store, key: &[u8], id: &[u8], expiry: Expiry) {
    let value = id.to_vec();
    let change = Change::WriteOwner { value, kind: ValueKind::Hash, expiry };
    store.modify(key, |_| (change.clone(), ())).expect("owner stored");
}

fn taken(released: &Released) -> Vec<Vec<u8>> {
    std::mem::take(&mut *released.lock().unwrap())
}

#[test]
fn delete_overwrite_and_rewrite_of_another_owner_release_it() {
    let (store, released) = store_with(8 * MIB, Arc::new(ManualClock::new(START_MS)));
    put_owner(&store, b"a", b"id-a", Expiry::Never);
    let item = store.get(b"a").expect("owner readable");
    assert_eq!((item.flags, item.kind), (OWNER_FLAGS, ValueKind::Hash));
    assert!(taken(&released).is_empty(), "a new owner is not released");
    store.delete(b"a", None).unwrap();
    assert_eq!(taken(&released), vec![b"id-a".to_vec()]);

    put_owner(&store, b"b", b"id-b", Expiry::Never);
    store.store(b"b", b"plain", 0, Expiry::Never, Mode::Set).unwrap();
    assert_eq!(taken(&released), vec![b"id-b".to_vec()], "overwritten by a string");

    put_owner(&store, b"c", b"id-c", Expiry::Never);
    put_owner(&store, b"c", b"id-c2", Expiry::Never);
    assert_eq!(taken(&released), vec![b"id-c".to_vec()], "replaced by another owner");

    // A non-owner collection with the same bytes is not an owner: nothing to release.
    let change =
        Change::WriteKind { value: b"id-x".to_vec(), kind: ValueKind::Hash, expiry: Expiry::Never };
    store.modify(b"d", |_| (change.clone(), ())).unwrap();
    store.delete(b"d", None).unwrap();
    assert!(taken(&released).is_empty());
}

#[test]
fn touch_and_rewrite_as_itself_keep_the_owner() {
    let clock = Arc::new(ManualClock::new(START_MS));
    let (store, released) = store_with(8 * MIB, Arc::clone(&clock));
    put_owner(&store, b"k", b"id-k", Expiry::Never);
    store.touch(b"k", Expiry::AtMs(START_MS + 60_000)).unwrap();
    put_owner(&store, b"k", b"id-k", Expiry::AtMs(START_MS + 5_000));
    assert!(taken(&released).is_empty(), "the owner lives on in its rewrite");
    clock.advance_ms(6_000);
    assert!(store.get(b"k").is_none());
    store.sweep_expired(1 << 20);
    assert_eq!(taken(&released), vec![b"id-k".to_vec()], "released once, when it expired");
}

#[test]
fn expired_owners_are_released_by_the_sweep_unread() {
    let clock = Arc::new(ManualClock::new(START_MS));
    let (store, released) = store_with(8 * MIB, Arc::clone(&clock));
    for i in 0..50 {
        put_owner(
            &store,
            format!("e{i}").as_bytes(),
            format!("id{i}").as_bytes(),
            Expiry::AtMs(START_MS + 1_000),
        );
    }
    clock.advance_ms(2_000);
    store.sweep_expired(1 << 20);
    assert_eq!(taken(&released).len(), 50);
}

#[test]
fn evicted_owners_are_released_once_and_live_ones_never() {
    let (store, released) = store_with(2 * MIB, Arc::new(ManualClock::new(START_MS)));
    let owners = 400;
    for i in 0..owners {
        put_owner(&store, format!("o{i}").as_bytes(), format!("id{i}").as_bytes(), Expiry::Never);
    }
    let filler = vec![b'x'; 2000];
    for i in 0..5_000 {
        store.store(format!("s{i}").as_bytes(), &filler, 0, Expiry::Never, Mode::Set).unwrap();
    }
    assert!(store.stats().evictions > 0);
    let mut counts: HashMap<Vec<u8>, usize> = HashMap::new();
    for id in taken(&released) {
        *counts.entry(id).or_default() += 1;
    }
    for i in 0..owners {
        let id = format!("id{i}").into_bytes();
        let present = store.get(format!("o{i}").as_bytes()).is_some();
        let times = counts.get(&id).copied().unwrap_or(0);
        assert_eq!(times, usize::from(!present), "owner {i}: present {present}, released {times}x");
    }
}

#[test]
fn flushed_owners_are_released_when_their_entries_go() {
    let (store, released) = store_with(8 * MIB, Arc::new(ManualClock::new(START_MS)));
    put_owner(&store, b"f", b"id-f", Expiry::Never);
    store.flush_all(0);
    assert!(store.get(b"f").is_none());
    store.sweep_expired(1 << 20);
    store.store(b"f", b"new", 0, Expiry::Never, Mode::Set).unwrap();
    assert_eq!(taken(&released), vec![b"id-f".to_vec()]);
}

#[test]
fn memory_charged_outside_counts_against_the_limit() {
    let (store, _) = store_with(4 * MIB, Arc::new(ManualClock::new(START_MS)));
    let before = store.stats().memory_used_bytes;
    store.charge_outside(MIB).unwrap();
    assert_eq!(store.stats().memory_used_bytes, before + MIB as u64);
    store.uncharge_outside(MIB);
    assert_eq!(store.stats().memory_used_bytes, before);

    // What an owner charged goes back when it is released.
    store.charge_outside(CHARGED_BYTES).unwrap();
    put_owner(&store, b"owner", b"charged-1", Expiry::Never);
    let with_owner = store.stats().memory_used_bytes;
    store.delete(b"owner", None).unwrap();
    assert_eq!(store.stats().memory_used_bytes, with_owner - CHARGED_BYTES as u64);

    // Full of items: a charge evicts to make room, as a write would.
    let filler = vec![b'x'; 1000];
    for i in 0..6_000 {
        store.store(format!("s{i}").as_bytes(), &filler, 0, Expiry::Never, Mode::Set).unwrap();
    }
    let evicted = store.stats().evictions;
    store.charge_outside(MIB).unwrap();
    assert!(store.stats().evictions > evicted, "made room by evicting");
    assert!(store.stats().memory_used_bytes <= store.stats().memory_limit_bytes);

    // Refusing when full: the charge fails, and the store stays within its limit.
    store.set_when_full(WhenFull::Refuse);
    assert_eq!(store.charge_outside(3 * MIB), Err(StoreError::NoSpace));
    assert!(store.stats().memory_used_bytes <= store.stats().memory_limit_bytes);

    // A change already made is charged anyway, past the limit; given back, it is as before.
    let used = store.stats().memory_used_bytes;
    store.force_charge_outside(3 * MIB);
    assert_eq!(store.stats().memory_used_bytes, used + 3 * MIB as u64);
    store.uncharge_outside(3 * MIB);
    assert_eq!(store.stats().memory_used_bytes, used);
}

/// Writes `count` owners that each charged `CHARGED_BYTES` outside the store, as exec does
/// (the charge first, made room for, then the owner).
fn put_charged_owners(store: &Store, range: std::ops::Range<usize>) {
    for i in range {
        store.charge_outside(CHARGED_BYTES).expect("room made");
        put_owner(
            store,
            format!("o{i}").as_bytes(),
            format!("charged-{i}").as_bytes(),
            Expiry::Never,
        );
    }
}

fn present(store: &Store, count: usize) -> Vec<bool> {
    let reader = store.reader();
    (0..count).map(|i| reader.peek(format!("o{i}").as_bytes()).is_some()).collect()
}

/// Goal: owners whose outside memory fills the store are evicted one at a time, oldest
/// first, as their memory is needed: the newest ones stay, about as many as the limit holds
/// (they sit side by side in one segment; evicted with it, all went at once).
#[test]
fn owners_are_evicted_one_by_one_oldest_first() {
    let (store, released) = store_with(4 * MIB, Arc::new(ManualClock::new(START_MS)));
    let count = 200;
    put_charged_owners(&store, 0..count);
    let present = present(&store, count);
    let kept = present.iter().filter(|p| **p).count();
    let first_kept = present.iter().position(|p| *p).expect("some kept");
    assert!(present[first_kept..].iter().all(|p| *p), "the kept ones are the newest: {present:?}");
    // 4 MiB holds 64 of 64 KiB; the index and the segments take some of it.
    assert!(kept >= 40, "kept {kept} of {count}");
    assert_eq!(taken(&released).len(), count - kept);
    let stats = store.stats();
    assert!(stats.memory_used_bytes <= stats.memory_limit_bytes);
}

/// Goal: an owner read (or changed in place) since it was written gets S3-FIFO's second
/// chance: it outlives unread owners written after it.
#[test]
fn used_owners_outlive_unused_ones() {
    let (store, _) = store_with(4 * MIB, Arc::new(ManualClock::new(START_MS)));
    put_charged_owners(&store, 0..10);
    assert!(store.get(b"o0").is_some(), "a read counts");
    store
        .modify(b"o1", |_| (Change::Keep, ()))
        .expect("an in-place change (Keep on an owner) counts");
    put_charged_owners(&store, 10..100);
    let present = present(&store, 100);
    assert!(present[0] && present[1], "used owners kept: {present:?}");
    assert!(!present[2], "the oldest unused owner went first");
}

/// Goal: an owner kept outlives its segment: eviction of the segment copies it forward,
/// readable, and does not release it.
#[test]
fn segment_eviction_copies_owners_forward() {
    let (store, released) = store_with(2 * MIB, Arc::new(ManualClock::new(START_MS)));
    put_owner(&store, b"hot", b"id-hot", Expiry::Never);
    let filler = vec![b'x'; 2000];
    for i in 0..5_000 {
        // Read often enough that its count never runs out.
        if i % 200 == 0 {
            assert!(store.get(b"hot").is_some(), "hot owner evicted by string {i}");
        }
        store.store(format!("s{i}").as_bytes(), &filler, 0, Expiry::Never, Mode::Set).unwrap();
    }
    assert!(store.stats().evictions > 1_000);
    assert_eq!(store.get(b"hot").expect("kept").value, b"id-hot");
    assert!(taken(&released).is_empty());
}

/// Writes owner `o{i}` as exec writes a new large collection: the owner first, then the
/// memory its change took, charged sparing it.
fn write_owner_then_charge(store: &Store, i: usize) {
    let value = format!("charged-{i}");
    put_owner(store, format!("o{i}").as_bytes(), value.as_bytes(), Expiry::Never);
    store.charge_outside_for(value.as_bytes(), CHARGED_BYTES).expect("room made");
}

/// Reads every owner of `0..count` still there `times` times.
fn read_present(store: &Store, count: usize, times: usize) {
    for i in 0..count {
        for _ in 0..times {
            let _ = store.get(format!("o{i}").as_bytes());
        }
    }
}

/// Goal: a write never evicts what it writes. The memory of a new owner's own change is
/// made room for by evicting older owners, even when every one of them was used more than
/// it (a hash built by a run of HSETs was evicted between two of them, and kept partial).
#[test]
fn an_owners_own_change_does_not_evict_it() {
    let (store, released) = store_with(4 * MIB, Arc::new(ManualClock::new(START_MS)));
    let count = 100;
    for i in 0..count {
        write_owner_then_charge(&store, i);
    }
    assert!(!present(&store, count)[0], "the store is full");
    read_present(&store, count, 3);
    taken(&released);
    for i in count..count + 5 {
        write_owner_then_charge(&store, i);
        assert!(present(&store, i + 1)[i], "owner {i}, just written, was evicted");
    }
    assert!(!taken(&released).is_empty(), "older owners made room");
}

/// Goal: a new owner written while the older ones have been read is not the first to go
/// when another write needs room: it starts counted once (it skips the small queue, where
/// a new item gets that chance).
#[test]
fn a_new_owner_is_not_evicted_before_read_older_ones() {
    let (store, released) = store_with(4 * MIB, Arc::new(ManualClock::new(START_MS)));
    let count = 100;
    put_charged_owners(&store, 0..count);
    store.charge_outside(CHARGED_BYTES).expect("room made");
    read_present(&store, count, 1);
    put_owner(&store, b"new", b"charged-new", Expiry::Never);
    taken(&released);
    // Other writes' memory, until one of them needs room (how much is free before that
    // depends on the index's size, which grows with the items).
    for _ in 0..4 {
        store.charge_outside(CHARGED_BYTES).expect("room made");
        assert!(store.reader().peek(b"new").is_some(), "the new owner went first");
        if !taken(&released).is_empty() {
            return; // an older owner made room
        }
    }
    panic!("no older owner made room for four charges");
}

/// Goal: sparing is bounded. An owner whose own change needs more room than anything else
/// can give goes after all (as Redis evicts the only key left), and the charge succeeds.
#[test]
fn a_spared_owner_goes_when_nothing_else_can() {
    let (store, released) = store_with(4 * MIB, Arc::new(ManualClock::new(START_MS)));
    write_owner_then_charge(&store, 0);
    let stats = store.stats();
    // What may be charged without evicting: what is free, less eviction's reserve of one
    // segment. The owner's segment (charged as it fills: a few KiB) gives back too little.
    let free = (stats.memory_limit_bytes - stats.memory_used_bytes) as usize - SEGMENT_BYTES;
    store.charge_outside_for(b"charged-0", free + CHARGED_BYTES / 2).expect("room made");
    assert!(store.get(b"o0").is_none(), "the only owner made room for its own change");
    assert_eq!(taken(&released), vec![b"charged-0".to_vec()]);
}
