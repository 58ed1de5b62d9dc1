//! Small enough for Miri: these exercise every `unsafe` path of the store (segment
//! writes and reads, large items, eviction and memory reuse, concurrent readers during
//! eviction and during index growth, reclaim of flushed and expired segments). The
//! command is in `docs/ARCHITECTURE.md` (Unsafe); `cargo +nightly miri test -p store --lib`.

use std::sync::Arc;

use super::*;
use crate::{Clock, ManualClock};

fn tiny_config() -> Config {
    Config {
        memory_bytes: 16 * 64 * 1024,
        segment_size_bytes: 64 * 1024,
        item_size_max: 200 * 1024,
        ..Config::default()
    }
}

fn tiny_store() -> Store {
    Store::new(tiny_config()).expect("valid config")
}

// Writes past capacity so segments are evicted and reused; every value read back intact.
#[test]
fn segments_are_reused_and_values_stay_intact() {
    let store = tiny_store();
    let rounds = if cfg!(miri) { 1_500 } else { 20_000 };
    for i in 0..rounds {
        let key = format!("key{}", i % 700);
        let value = vec![(i % 251) as u8; 1500];
        store.store(key.as_bytes(), &value, 0, Expiry::Never, Mode::Set).expect("set");
        if i % 3 == 0 {
            if let Some(item) = store.get(format!("key{}", i / 2 % 700).as_bytes()) {
                assert!(item.value.iter().all(|b| *b == item.value[0]));
            }
        }
    }
    assert!(store.stats().evictions > 0 || cfg!(miri));
}

// The eviction observer sees each evicted item as it was: key, value, expiry, last access;
// as many calls as evictions counted.
#[test]
fn eviction_observer_sees_evicted_items() {
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut store = Store::new(Config { clock: clock.clone(), ..tiny_config() }).expect("valid");
    let log = Arc::clone(&seen);
    store.set_eviction_observer(Arc::new(move |item: &Item<'_>| {
        let stamp_secs = item.accessed_at_secs();
        log.lock().push((item.key().to_vec(), item.value().len(), item.expiry(), stamp_secs));
    }));
    let rounds = if cfg!(miri) { 1_500 } else { 3_000 };
    for i in 0..rounds {
        let expiry = Expiry::AtMs(clock.now_ms() + 3_600_000);
        store.store(format!("k{i}").as_bytes(), &[7; 1500], 0, expiry, Mode::Set).expect("set");
        clock.advance_ms(10);
    }
    let seen = seen.lock();
    assert_eq!(seen.len() as u64, store.stats().evictions);
    assert!(!seen.is_empty() || cfg!(miri));
    for (key, len, expiry, accessed_secs) in seen.iter() {
        let i: u64 = std::str::from_utf8(&key[1..]).expect("utf8").parse().expect("number");
        let written_ms = 1_700_000_000_000 + 10 * i;
        assert_eq!((*len, *expiry), (1500, Expiry::AtMs(written_ms + 3_600_000)));
        assert_eq!(*accessed_secs, written_ms / 1000, "key {i}");
    }
}

// Large items live in their own mappings; replacing one frees the old after the grace.
#[test]
fn large_items_round_trip_and_free() {
    let store = tiny_store();
    for round in 0..3u8 {
        let value = vec![round; 100 * 1024];
        store.store(b"big", &value, 1, Expiry::Never, Mode::Set).expect("set");
        assert_eq!(store.get(b"big").expect("present").value, value);
    }
    store.delete(b"big", None).expect("delete");
    for _ in 0..8 {
        epoch::pin().flush();
    }
    assert!(store.memory_used_bytes() < 8 * 64 * 1024, "{:?}", store.stats());
}

// A reader keeps reading while another thread forces evictions.
#[test]
fn readers_never_see_freed_memory() {
    let store = Arc::new(tiny_store());
    let ops = if cfg!(miri) { 300 } else { 20_000 };
    std::thread::scope(|scope| {
        let writer = Arc::clone(&store);
        scope.spawn(move || {
            for i in 0..ops {
                let key = format!("w{i}");
                let value = vec![(i % 200) as u8 + 1; 3000];
                writer.store(key.as_bytes(), &value, 0, Expiry::Never, Mode::Set).expect("set");
            }
        });
        for i in 0..ops {
            let reader = store.reader();
            if let Some(item) = reader.get(format!("w{}", i / 2).as_bytes()) {
                let first = item.value()[0];
                assert!(first != 0 && item.value().iter().all(|b| *b == first));
            }
        }
    });
}

// Every value kind written through the core reads back as written; touches and eviction's
// copies keep it, and a new value through the public API is a String again.
#[test]
fn value_kind_round_trips_through_the_store() {
    let store = tiny_store();
    let kinds = [ValueKind::List, ValueKind::Hash, ValueKind::Set, ValueKind::ZSet];
    for kind in kinds {
        let key = format!("{kind:?}");
        store
            .locked_op(key.as_bytes(), |s, ctx| {
                let current = s.current(ctx, ctx.guard);
                let existing = current.as_ref().map(|(f, r)| (f, r));
                let item = NewItem {
                    value: &[b"v"],
                    flags: 3,
                    expiry: Expiry::Never,
                    cas: None,
                    meta: MetaState::default(),
                    kind,
                    stamp: None,
                };
                s.put(ctx, existing, &item)
            })
            .expect("put");
        let kind_of = |key: &str| store.reader().get(key.as_bytes()).map(|it| it.value_kind());
        assert_eq!(kind_of(&key), Some(kind));
        store.touch(key.as_bytes(), Expiry::AtMs(u64::MAX - 1)).expect("touch");
        assert_eq!(kind_of(&key), Some(kind), "a touch changed the kind");
    }
    store.store(b"List", b"s", 0, Expiry::Never, Mode::Set).expect("set");
    assert_eq!(store.reader().get(b"List").map(|it| it.value_kind()), Some(ValueKind::String));
}

// Keys of one sub-table outgrow its 2-bucket table several times, while another thread
// reads them: growth (forced by full buckets, and by load), cuckoo relocation, chunked
// migration with readers in both tables, and the old table's free through the epoch.
#[test]
fn index_grows_and_migrates_under_readers() {
    let store = Store::with_index_buckets(tiny_config(), 2).expect("valid config");
    let keys: Vec<Vec<u8>> = (0..)
        .map(|i| format!("g{i}").into_bytes())
        .filter(|key| HashParts::of(key).sub == 0)
        .take(if cfg!(miri) { 48 } else { 200 })
        .collect();
    let slots = |store: &Store| store.index.size(&epoch::pin()).1;
    let slots_before = slots(&store);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            for _ in 0..3 {
                for key in &keys {
                    if let Some(item) = store.reader().get(key) {
                        assert_eq!(item.value(), &key[..]);
                    }
                }
                // A scan walks both tables of a growing sub-table.
                let mut cursor = store.scan(0, 64, |_| {});
                while cursor != 0 {
                    cursor = store.scan(cursor, 64, |_| {});
                }
            }
        });
        for key in &keys {
            store.store(key, key, 0, Expiry::Never, Mode::Set).expect("set");
        }
    });
    for _ in 0..4 {
        store.maintain(1);
    }
    let guard = epoch::pin();
    assert!(!store.index.is_growing(0, &guard), "a migration did not finish");
    // Sub-table 0 went from 16 slots to room for every key; the others stayed.
    assert!(slots(&store) >= slots_before + keys.len() - 16, "the index did not grow");
    for key in &keys {
        assert_eq!(store.get(key).expect("a key was lost in growth").value, *key);
    }
}

// Flushed and expired segments and large items are reclaimed by ticks, not by the flush
// call, and their memory is written again: clear_segment's reclaim path, large items freed
// through the epoch, released pages reused.
#[test]
fn flushed_and_expired_memory_is_reclaimed_and_reused() {
    let clock = Arc::new(ManualClock::new(1_000_000));
    let store = Store::new(Config { clock: clock.clone(), ..tiny_config() }).expect("valid config");
    let items = if cfg!(miri) { 30 } else { 600 };
    for round in 0..3u8 {
        let expiry = if round == 1 { Expiry::AtMs(1_000_000 + 10_000) } else { Expiry::Never };
        let value = vec![round + 1; 900];
        for i in 0..items {
            store.store(format!("k{i}").as_bytes(), &value, 0, expiry, Mode::Set).expect("set");
        }
        store.store(b"big", &vec![round + 1; 20 * 1024], 0, expiry, Mode::Set).expect("set");
        assert_eq!(store.get(b"k3").expect("present").value, value);
        match round {
            0 => store.flush_all(0),
            1 => clock.advance_ms(10_000),
            _ => break,
        }
        assert!(store.get(b"k3").is_none() && store.get(b"big").is_none());
        // Flushed items stop counting at once; expired ones when they are reclaimed.
        assert_eq!(store.is_empty(), round == 0, "round {round}");
        let mut ticks = 0;
        while store.maintain(2) > 0 {
            ticks += 1;
        }
        assert!(ticks > 0, "round {round}: nothing reclaimed");
        assert_eq!(store.len(), 0, "round {round}: dead items still counted");
    }
    assert_eq!(store.stats().evictions, 0, "dead memory was not reused");
}

// With memory nearly all used by items, tables may grow only when a key finds both its
// buckets full: then entries are relocated (cuckoo steps), the forced growth takes pages
// back from free segments (released to the kernel), or an entry of the full buckets is
// evicted. Large items take their memory from free segments' pages too. Bulky items keep
// the memory full; small ones, all of one sub-table, fill its buckets. Every value read
// back is intact.
#[test]
fn index_grows_under_memory_pressure() {
    let store = Store::with_index_buckets(tiny_config(), 2).expect("valid config");
    let crowd: Vec<Vec<u8>> = (0..)
        .map(|i| format!("c{i}").into_bytes())
        .filter(|key| HashParts::of(key).sub == 0)
        .take(40)
        .collect();
    let rounds = if cfg!(miri) { 400 } else { 4_000 };
    for i in 0..rounds {
        // One in 50 is a large item: its mapping takes the pages of free segments.
        let len = if i % 50 == 0 { 20 * 1024 } else { 3000 };
        let value = vec![(i % 251) as u8 + 1; len];
        store.store(format!("p{i}").as_bytes(), &value, 0, Expiry::Never, Mode::Set).expect("set");
        // The crowd comes once memory is full, so that its sub-table may not grow early.
        if i < rounds * 3 / 4 {
            continue;
        }
        let key = &crowd[i % crowd.len()];
        store.store(key, key, 0, Expiry::Never, Mode::Set).expect("set");
        if let Some(item) = store.get(format!("p{}", i / 2).as_bytes()) {
            assert!(item.value.iter().all(|b| *b == item.value[0]));
        }
        if let Some(item) = store.get(&crowd[i / 2 % crowd.len()]) {
            assert_eq!(item.key, item.value);
        }
    }
    let stats = store.stats();
    assert!(stats.memory_used_bytes <= stats.memory_limit_bytes, "{stats:?}");
}

// The access time is the write, then the second read (memcached's `it->time` bump); a
// read reports the time from before itself; a peek never moves it; a touch moves it only
// as a second read; large items keep one too; an 18-hour-old stamp still reads exactly.
#[test]
fn access_time_follows_memcached() {
    let t0_ms = 1_700_000_000_500;
    let clock = Arc::new(ManualClock::new(t0_ms));
    let config = Config { clock: Arc::clone(&clock) as Arc<dyn Clock>, ..tiny_config() };
    let store = Store::new(config).expect("valid config");
    let t0 = t0_ms / 1000;
    let at = |key: &[u8]| store.reader().peek(key).map(|it| it.accessed_at_secs());
    let read = |key: &[u8]| store.reader().get(key).map(|it| it.accessed_at_secs());
    for (key, len) in [(&b"small"[..], 10), (&b"large"[..], 20_000)] {
        clock.set_ms(t0_ms);
        store.store(key, &vec![b'v'; len], 0, Expiry::Never, Mode::Set).unwrap();
        clock.advance_ms(3000);
        assert_eq!(at(key), Some(t0), "{key:?}: a peek is no access");
        assert_eq!(read(key), Some(t0), "first read: FETCHED only");
        assert_eq!(read(key), Some(t0), "second read reports the time before it");
        assert_eq!(at(key), Some(t0 + 3), "second read moved it");
        clock.advance_ms(2000);
        assert_eq!(read(key), Some(t0 + 3), "later reads do not");
        assert_eq!(at(key), Some(t0 + 3));
    }
    // A touch is a read: moved only when it is the second one.
    clock.set_ms(t0_ms);
    store.store(b"t", b"v", 0, Expiry::Never, Mode::Set).unwrap();
    clock.advance_ms(4000);
    store.touch(b"t", Expiry::Never).unwrap();
    assert_eq!(at(b"t"), Some(t0), "a first touch keeps it");
    clock.advance_ms(1000);
    store.touch(b"t", Expiry::Never).unwrap();
    assert_eq!(at(b"t"), Some(t0 + 5), "a second touch moves it");
    // Stamps are Unix seconds modulo 2^16: exact within that window.
    clock.advance_ms(65_535 * 1000);
    assert_eq!(at(b"t"), Some(t0 + 5));
}

// A lower limit evicts down to it at once and holds for later writes; raising it back
// lets the store fill again; above the built size or below the index's need is refused.
#[test]
fn memory_limit_shrinks_and_grows() {
    let store = tiny_store();
    let fill = |from: usize| {
        for i in from..from + 2000 {
            let key = format!("key{i}");
            store.store(key.as_bytes(), &[7u8; 400], 0, Expiry::Never, Mode::Set).expect("set");
        }
    };
    fill(0);
    let full = store.stats();
    let limit = 12 * 64 * 1024;
    store.set_memory_limit(limit).expect("shrink");
    let shrunk = store.stats();
    assert_eq!(shrunk.memory_limit_bytes, limit as u64);
    assert!(shrunk.memory_used_bytes <= limit as u64, "{shrunk:?}");
    assert!(shrunk.items < full.items && shrunk.evictions > full.evictions, "{shrunk:?}");
    fill(2000);
    let after = store.stats();
    assert!(after.memory_used_bytes <= limit as u64, "{after:?}");
    assert!(store.set_memory_limit(tiny_config().memory_bytes + 1).is_err());
    assert!(store.set_memory_limit(64 * 1024).is_err());
    store.set_memory_limit(tiny_config().memory_bytes).expect("grow back");
    fill(4000);
    assert!(store.stats().items > after.items, "the room is used again");
}

// Raised past the size it started with (memcached `cache_memlimit` to a larger value), the
// store holds more small and large items than it could before, up to the new limit; the
// ceiling is `memory_max_bytes`, and lowering again evicts down.
#[test]
fn memory_limit_grows_past_the_start_size() {
    let start_bytes = tiny_config().memory_bytes;
    let store = Store::new(Config { memory_max_bytes: 4 * start_bytes, ..tiny_config() })
        .expect("valid config");
    assert_eq!(store.memory_limit_max(), 4 * start_bytes);
    let fill = |from: usize, count: usize, len: usize| {
        for i in from..from + count {
            let key = format!("key{i}");
            store.store(key.as_bytes(), &vec![7u8; len], 0, Expiry::Never, Mode::Set).unwrap();
        }
    };
    fill(0, 4000, 400);
    let small = store.stats();
    assert!(small.evictions > 0 && small.memory_used_bytes <= start_bytes as u64, "{small:?}");
    assert!(store.set_memory_limit(4 * start_bytes + 1).is_err(), "above the ceiling");
    store.set_memory_limit(4 * start_bytes).expect("grow");
    fill(10_000, 4000, 400);
    fill(20_000, 20, 40 * 1024); // large items (a quarter of a segment or more)
    let grown = store.stats();
    assert_eq!(grown.memory_limit_bytes, 4 * start_bytes as u64);
    assert!(grown.memory_used_bytes > 2 * start_bytes as u64, "the new room is used: {grown:?}");
    assert!(grown.memory_used_bytes <= 4 * start_bytes as u64, "{grown:?}");
    assert!(grown.items > small.items * 2, "{grown:?} against {small:?}");
    for i in 20_000..20_020 {
        let item = store.get(format!("key{i}").as_bytes()).expect("a large item just written");
        assert_eq!(item.value.len(), 40 * 1024);
    }
    store.set_memory_limit(start_bytes).expect("shrink");
    assert!(store.stats().memory_used_bytes <= start_bytes as u64);
    fill(30_000, 2000, 400);
    assert!(store.stats().memory_used_bytes <= start_bytes as u64);
}

// memcached's flush at a past time without CAS: what was last accessed at or before it goes,
// later writes and second reads stay, and a new write of a flushed key is visible.
#[test]
fn flush_accessed_through_keeps_later_accesses() {
    let t0_ms = 1_700_000_000_000;
    let clock = Arc::new(ManualClock::new(t0_ms));
    let config = Config { clock: Arc::clone(&clock) as Arc<dyn Clock>, ..tiny_config() };
    let store = Store::new(config).expect("valid config");
    for key in [&b"old"[..], b"read"] {
        store.store(key, b"v", 0, Expiry::Never, Mode::Set).unwrap();
    }
    clock.advance_ms(3000);
    store.store(b"new", b"v", 0, Expiry::Never, Mode::Set).unwrap();
    store.get(b"read");
    store.get(b"read"); // the second read moves its access time past the flush
    store.flush_accessed_through(t0_ms / 1000 + 1);
    let live = |key: &[u8]| store.get(key).is_some();
    assert_eq!((live(b"old"), live(b"read"), live(b"new")), (false, true, true));
    let mut seen = Vec::new();
    store.scan_items(0, usize::MAX, |item| seen.push(item.key().to_vec()));
    seen.sort();
    assert_eq!(seen, [b"new".to_vec(), b"read".to_vec()]);
    assert!(store.store(b"old", b"w", 0, Expiry::Never, Mode::Add).is_ok(), "gone for writes");
    assert!(live(b"old"));
}

/// A write that starts a growth moves its first chunk (a small table's whole migration) at
/// once, so writes alone leave no small table growing: every other one is started here, for
/// the steps of a scan (and `maintain` between them) to move.
fn start_growth_of_every_other_subtable(store: &Store) {
    for sub in (0..index::SUBTABLES).step_by(2) {
        store.grow(sub, index::GrowWhen::BucketsFull, &epoch::pin());
    }
}

// A scan lists each item once while sub-tables are half migrated (entries in both their
// old and new tables) and migration moves entries between its steps.
#[test]
fn scan_items_lists_each_item_once_during_growth() {
    let store = Store::with_index_buckets(tiny_config(), 2).expect("valid config");
    let n = if cfg!(miri) { 100 } else { 2000 };
    for i in 0..n {
        store.store(format!("k{i}").as_bytes(), b"v", 0, Expiry::Never, Mode::Set).expect("set");
    }
    start_growth_of_every_other_subtable(&store);
    let growing = (0..index::SUBTABLES).any(|sub| store.index.is_growing(sub, &epoch::pin()));
    assert!(growing || cfg!(miri), "no migration under way: the test proves nothing");
    let mut seen = Vec::new();
    let mut cursor = store.scan_items(0, 16, |item| seen.push(item.key().to_vec()));
    while cursor != 0 {
        store.maintain(0); // moves a few chunks of every growing sub-table
        cursor = store.scan_items(cursor, 16, |item| seen.push(item.key().to_vec()));
    }
    seen.sort();
    let listed = seen.len();
    seen.dedup();
    assert_eq!((listed, seen.len()), (n, n));
}

// A scan's cursor splits keys by `scan_position`: after each step, the keys listed so far
// are exactly those below the cursor, while sub-tables grow and migrate between steps (a
// save's picture relies on it to tell the keys its walk took from those still ahead).
#[test]
fn scan_cursor_is_the_position_below_which_keys_were_listed() {
    let store = Store::with_index_buckets(tiny_config(), 2).expect("valid config");
    let n = if cfg!(miri) { 100 } else { 2000 };
    let keys: Vec<Vec<u8>> = (0..n).map(|i| format!("k{i}").into_bytes()).collect();
    for key in &keys {
        store.store(key, b"v", 0, Expiry::Never, Mode::Set).expect("set");
    }
    start_growth_of_every_other_subtable(&store);
    let mut listed = std::collections::HashSet::new();
    let mut cursor = 0;
    loop {
        cursor = store.scan_items(cursor, 16, |item| {
            listed.insert(item.key().to_vec());
        });
        store.maintain(0);
        let below = |key: &Vec<u8>| cursor == 0 || Store::scan_position(key) < cursor;
        for key in &keys {
            assert_eq!(listed.contains(key), below(key), "cursor {cursor:#x}");
        }
        if cursor == 0 {
            break;
        }
    }
}

// Owners written and deleted with no eviction to meet their queue entries: the stale
// entries are dropped as they pass twice the live ones, so the queue stays bounded.
#[test]
fn stale_owner_entries_are_dropped() {
    let store = tiny_store();
    let rounds = if cfg!(miri) { 300 } else { 20_000 };
    for i in 0..rounds {
        let key = format!("owner{}", i % 10);
        let value = format!("id{i}").into_bytes();
        let change = Change::WriteOwner { value, kind: ValueKind::Hash, expiry: Expiry::Never };
        store.modify(key.as_bytes(), |_| (change.clone(), ())).expect("owner stored");
    }
    let entries = store.lock_ctl().owner_entries();
    assert!(entries <= 2 * 10 + 1024 + 1, "{entries} owner entries for 10 owners");
    for i in 0..10 {
        assert!(store.get(format!("owner{i}").as_bytes()).is_some());
    }
}

// The read ahead changes nothing: prefetches (pinned and not) before reads by a key's
// hash find exactly what plain reads find, present, absent or expired, across an index
// growth (the unpinned prefetch's hints follow the current table).
#[test]
fn read_ahead_reads_what_plain_reads_read() {
    let clock = Arc::new(ManualClock::new(1_000_000));
    let config = Config { clock: Arc::clone(&clock) as Arc<dyn Clock>, ..tiny_config() };
    let store = Store::with_index_buckets(config, 2).expect("valid config");
    let count = if cfg!(miri) { 40 } else { 2_000 };
    let key = |i: usize| format!("ra{i}").into_bytes();
    for i in (0..count).step_by(2) {
        let expiry = if i % 10 == 0 { Expiry::AtMs(1_001_000) } else { Expiry::Never };
        store.store(&key(i), &key(i), 0, expiry, Mode::Set).expect("set");
    }
    clock.advance_ms(2_000);
    for _ in 0..4 {
        store.maintain(1);
    }
    let guard = epoch::pin();
    assert!(store.index.size(&guard).1 > 2 * 8 * index::SUBTABLES, "the index did not grow");
    for sub in 0..index::SUBTABLES {
        let (base, buckets) = store.index.hints(sub);
        let table = store.index.current_table(sub, &guard);
        assert_eq!((base, buckets), (table.0, table.1), "sub-table {sub}: stale hints");
    }
    let reader = store.reader();
    let hashes: Vec<KeyHash> = (0..count).map(|i| KeyHash::of(&key(i))).collect();
    for (i, &hash) in hashes.iter().enumerate() {
        assert_eq!(hash, KeyHash::of(&key(i)), "a hash is a function of the key");
        store.prefetch(hash);
        reader.prefetch_index(hash);
        reader.prefetch_items(hash);
    }
    for (i, &hash) in hashes.iter().enumerate() {
        let plain = reader.get_or_miss(&key(i)).map(|item| item.value().to_vec());
        let hashed = reader.get_or_miss_hashed(&key(i), hash).map(|item| item.value().to_vec());
        assert_eq!(plain, hashed, "key {i}");
        match i {
            // Expired: still held, or already swept away by the ticks.
            i if i % 10 == 0 => assert!(hashed.is_err(), "key {i}"),
            i if i % 2 == 1 => assert_eq!(hashed, Err(Miss::Absent), "key {i}"),
            i => assert_eq!(hashed, Ok(key(i)), "key {i}"),
        }
    }
}

// Reads look ahead once the store holds READ_AHEAD_FROM_BYTES, not before.
#[test]
fn reads_ahead_once_the_store_is_large() {
    let config = Config { memory_bytes: 4 * READ_AHEAD_FROM_BYTES, ..tiny_config() };
    let store = Store::new(config).expect("valid config");
    assert!(!store.reads_ahead(), "an empty store");
    let value = vec![7u8; 1000];
    let mut i = 0;
    while store.memory_used_bytes() < READ_AHEAD_FROM_BYTES {
        assert!(!store.reads_ahead(), "{} bytes held", store.memory_used_bytes());
        store
            .store(format!("big{i}").as_bytes(), &value, 0, Expiry::Never, Mode::Set)
            .expect("set");
        i += 1;
    }
    assert!(store.reads_ahead(), "{} bytes held", store.memory_used_bytes());
}
