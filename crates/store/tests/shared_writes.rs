//! The writes each operation makes to memory that other threads use, counted by the store's
//! `count-shared-writes` feature (src/shared_writes.rs): gets write nothing shared once an
//! item has been read three times, and a write takes one stripe lock and writes the index.
//!
//! `cargo test -p store --features count-shared-writes --test shared_writes`
#![cfg(feature = "count-shared-writes")]

use store::{
    shared_writes::{self, Counts, Site},
    Config, Expiry, Mode, Store,
};

fn store() -> Store {
    Store::new(Config::default()).unwrap()
}

fn key(i: usize) -> Vec<u8> {
    format!("key:{i:08}").into_bytes()
}

fn set(store: &Store, key: &[u8]) {
    store.store(key, b"a value of some bytes", 0, Expiry::Never, Mode::Set).unwrap();
}

/// The counts of what `f` does on this thread.
fn counted(f: impl FnOnce()) -> Counts {
    shared_writes::take();
    f();
    shared_writes::take()
}

fn only(counts: &Counts, expected: &[(Site, u64)]) {
    assert_eq!(counts.nonzero(), expected, "counts: {counts:?}");
}

#[test]
fn a_get_miss_writes_nothing_shared() {
    let store = store();
    set(&store, b"present");
    let counts = counted(|| assert!(store.reader().get(b"absent").is_none()));
    only(&counts, &[(Site::EpochPin, 1)]);
    assert_eq!(counts.shared(), 0);
}

#[test]
fn a_get_hit_writes_the_entry_only_on_the_first_three_reads() {
    let store = store();
    set(&store, b"k");
    let read = || counted(|| assert!(store.reader().get(b"k").is_some()));
    // S3-FIFO's frequency (2 bits in the index slot) rises on the first three reads; the
    // second also stamps the access time (memcached's fetched -> active bump).
    only(&read(), &[(Site::IndexFreq, 1), (Site::EpochPin, 1)]);
    only(&read(), &[(Site::IndexFreq, 1), (Site::AccessStamp, 1), (Site::EpochPin, 1)]);
    only(&read(), &[(Site::IndexFreq, 1), (Site::EpochPin, 1)]);
    for _ in 0..100 {
        let counts = read();
        only(&counts, &[(Site::EpochPin, 1)]);
        assert_eq!(counts.shared(), 0);
    }
}

#[test]
fn a_multiget_of_hot_keys_writes_nothing_shared() {
    let store = store();
    let keys: Vec<_> = (0..16).map(key).collect();
    for k in &keys {
        set(&store, k);
        for _ in 0..3 {
            store.reader().get(k).unwrap();
        }
    }
    let counts = counted(|| {
        let reader = store.reader();
        for k in &keys {
            assert!(reader.get(k).is_some());
        }
    });
    only(&counts, &[(Site::EpochPin, 1)]);
}

#[test]
fn a_peek_never_writes() {
    let store = store();
    set(&store, b"k");
    let counts = counted(|| assert!(store.reader().peek(b"k").is_some()));
    only(&counts, &[(Site::EpochPin, 1)]);
}

#[test]
fn an_overwrite_takes_the_stripe_and_stores_the_entry() {
    let store = store();
    set(&store, b"k");
    set(&store, b"other"); // the active segment is open and has seen this expiry
    let counts = counted(|| set(&store, b"k"));
    // Shared: the stripe lock and the index slot. Owned: the segment's writer line (the
    // reservation's inflight +1 and offset +len, used_end, inflight -1) and the epoch pin.
    only(
        &counts,
        &[(Site::StripeLock, 1), (Site::IndexStore, 1), (Site::SegAppend, 4), (Site::EpochPin, 1)],
    );
    assert_eq!(counts.shared(), 2);
}

#[test]
fn a_new_key_takes_the_stripe_claims_a_slot_and_counts_it() {
    let store = store();
    set(&store, b"first");
    let counts = counted(|| set(&store, b"second"));
    only(
        &counts,
        &[
            (Site::StripeLock, 1),
            (Site::IndexClaim, 1),
            (Site::IndexCount, 1),
            (Site::SegAppend, 4),
            (Site::EpochPin, 1),
        ],
    );
    assert_eq!(counts.shared(), 3);
}

#[test]
fn a_delete_takes_the_stripe_and_clears_the_entry() {
    let store = store();
    set(&store, b"k");
    let counts = counted(|| store.delete(b"k", None).unwrap());
    only(
        &counts,
        &[(Site::StripeLock, 1), (Site::IndexStore, 1), (Site::IndexCount, 1), (Site::EpochPin, 1)],
    );
}

/// Segment turnover (the segment-list lock, the sequence, the memory budget) comes once per
/// segment of writes, not per request.
#[test]
fn turnover_costs_are_per_segment_not_per_request() {
    let store = store();
    let sets = 20_000;
    let value = [b'v'; 100];
    // The index starts small and grows with the keys; its growth (entries moved, each a
    // few shared writes) and relocations near its load limit are other costs than
    // turnover: room for twice the keys is made first.
    store.reserve_index(2 * sets);
    let counts = counted(|| {
        for i in 0..sets {
            store.store(&key(i), &value, 0, Expiry::Never, Mode::Set).unwrap();
        }
    });
    eprintln!("{sets} new-key sets: {:?}", counts.nonzero());
    // The memory budget: while a store is small, a segment is charged ahead of its items by
    // at most 1/256 of the memory in use (`Store::charge_ahead`), so about once per page of
    // items here (2.6 MB written); per page or segment, never per request.
    let pages = sets as u64 * 130 / 4096 + 1;
    assert!(counts.get(Site::Budget) <= pages, "{pages} pages written: {counts:?}");
    let per_set = (counts.shared() - counts.get(Site::Budget)) as f64 / sets as f64;
    assert!(per_set < 3.01, "{per_set} shared writes per new-key set: {counts:?}");
    // About 2,000 items of 130 bytes fill a 256 KiB segment.
    assert!(counts.get(Site::CtlLock) <= 2 * (sets as u64 / 1_500 + 1), "{counts:?}");
    assert_eq!(counts.get(Site::StripeWait) + counts.get(Site::CtlWait), 0, "one thread waits");
}
