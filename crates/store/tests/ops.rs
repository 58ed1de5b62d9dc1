//! One test per store operation and per edge case, against the semantics the engine promises:
//! write modes, CAS, expiry at the exact millisecond, incr/decr rules (built on `modify`, as
//! the protocol layer builds them: `common/mod.rs`), flush, scan, eviction,
//! refuse mode and reclaim. Time comes from a `ManualClock`, so nothing here sleeps.

mod common;

use std::{
    collections::HashSet,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
};

use common::{decr, incr};
use store::*;

/// A fixed Unix millisecond to start every clock at.
const T0: u64 = 1_700_000_000_000;
const KIB: usize = 1024;

/// A store, its clock, and the keys its eviction observer saw, in order.
struct Fixture {
    store: Store,
    clock: Arc<ManualClock>,
    evicted: Arc<Mutex<Vec<Vec<u8>>>>,
}

fn fixture(memory_bytes: usize, segment_size_bytes: usize, item_size_max: usize) -> Fixture {
    fixture_with(memory_bytes, segment_size_bytes, item_size_max, WhenFull::Evict)
}

fn fixture_with(
    memory_bytes: usize,
    segment_size_bytes: usize,
    item_size_max: usize,
    when_full: WhenFull,
) -> Fixture {
    let clock = Arc::new(ManualClock::new(T0));
    let evicted = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&evicted);
    let store = Store::new(Config {
        memory_bytes,
        memory_max_bytes: 0,
        item_size_max,
        when_full,
        segment_size_bytes,
        clock: clock.clone(),
        on_evict: Some(Arc::new(move |item: &Item<'_>| {
            log.lock().unwrap().push(item.key().to_vec())
        })),
        on_release: None,
        on_expire: None,
    })
    .expect("valid config");
    Fixture { store, clock, evicted }
}

/// The everyday test store: 16 MiB in 64 KiB segments, items up to 1 MiB.
fn small() -> Fixture {
    fixture(16 * MIB, 64 * KIB, MIB)
}

fn config(memory_bytes: usize, segment_size_bytes: usize) -> Config {
    Config {
        memory_bytes,
        segment_size_bytes,
        clock: Arc::new(ManualClock::new(T0)),
        ..Config::default()
    }
}

/// Deterministic bytes that differ by position and seed, so misplaced bytes are noticed.
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn value_of(s: &Store, key: &[u8]) -> Option<Vec<u8>> {
    s.get(key).map(|it| it.value)
}

fn set(s: &Store, key: &[u8], value: &[u8]) -> u64 {
    s.store(key, value, 0, Expiry::Never, Mode::Set).expect("set")
}

// ---------------------------------------------------------------------------------------------
// Configuration

// Segment sizes outside 64 KiB..=1 MiB or not a power of two, and too little memory, are refused.
#[test]
fn config_rejects_invalid_settings() {
    for seg in [32 * KIB, 96 * KIB, 2 * MIB, 0] {
        assert!(Store::new(config(64 * MIB, seg)).is_err(), "segment size {seg} accepted");
    }
    assert!(Store::new(config(4 * 64 * KIB, 64 * KIB)).is_err(), "4 segments accepted");
    assert!(Store::new(config(7 * MIB, MIB)).is_err(), "7 segments accepted");
    assert!(Store::new(config(4 * MIB, 64 * KIB)).is_ok());
    assert!(Store::new(config(64 * MIB, MIB)).is_ok());
}

// ---------------------------------------------------------------------------------------------
// Keys, values and sizes

// An empty value is stored and read back as empty, flags intact.
#[test]
fn empty_value() {
    let f = small();
    let cas = f.store.store(b"k", b"", 9, Expiry::Never, Mode::Set).unwrap();
    let it = f.store.get(b"k").expect("empty value stored");
    assert_eq!((it.value.as_slice(), it.flags, it.cas), (&b""[..], 9, cas));
    f.store.store(b"k", b"x", 0, Expiry::Never, Mode::Append).unwrap();
    assert_eq!(value_of(&f.store, b"k").unwrap(), b"x");
}

// The empty key is a key like any other: stored, read, conditional modes, deleted.
#[test]
fn empty_key() {
    let f = small();
    let s = &f.store;
    assert!(s.get(b"").is_none());
    assert_eq!(s.store(b"", b"v", 0, Expiry::Never, Mode::Replace), Err(StoreError::NotStored));
    let cas = s.store(b"", b"v", 3, Expiry::Never, Mode::Add).unwrap();
    let it = s.get(b"").expect("empty key stored");
    assert_eq!(
        (it.key.as_slice(), it.value.as_slice(), it.flags, it.cas),
        (&b""[..], &b"v"[..], 3, cas)
    );
    assert_eq!(s.store(b"", b"w", 0, Expiry::Never, Mode::Add), Err(StoreError::NotStored));
    assert!(s.get(b"other").is_none());
    s.delete(b"", None).unwrap();
    assert!(s.get(b"").is_none());
}

// A key of exactly KEY_LEN_MAX bytes works; one byte more is KeyTooLong for every operation.
#[test]
fn key_length_limit() {
    let f = small();
    let s = &f.store;
    let key = pattern(KEY_LEN_MAX, 1);
    let cas = s.store(&key, b"value", 1, Expiry::Never, Mode::Set).unwrap();
    let it = s.get(&key).expect("max-length key stored");
    assert_eq!((it.key, it.value.as_slice(), it.cas), (key.clone(), &b"value"[..], cas));
    s.delete(&key, None).unwrap();

    let long = pattern(KEY_LEN_MAX + 1, 1);
    let too_long = Err(StoreError::KeyTooLong { len: KEY_LEN_MAX + 1 });
    for mode in [Mode::Set, Mode::Add, Mode::Replace, Mode::Append, Mode::Prepend, Mode::Cas(1)] {
        assert_eq!(s.store(&long, b"v", 0, Expiry::Never, mode), too_long, "{mode:?}");
    }
    assert_eq!(s.store(&long, b"", 0, Expiry::Never, Mode::Set), too_long);
    assert_eq!(s.delete(&long, None), Err(StoreError::KeyTooLong { len: KEY_LEN_MAX + 1 }));
    assert_eq!(s.touch(&long, Expiry::Never), too_long);
    assert_eq!(incr(s, &long, 1), too_long);
    assert_eq!(decr(s, &long, 1), too_long);
    assert_eq!(
        s.modify(&long, |_| (Change::Keep, ())).map(|(cas, ())| cas),
        Err(StoreError::KeyTooLong { len: KEY_LEN_MAX + 1 })
    );
    assert!(s.get(&long).is_none());
    assert!(s.get_and_touch(&long, Expiry::Never).is_none());
    assert!(s.is_empty());
}

// key + value of exactly item_size_max (1 MiB) is accepted and reads back; one byte more is not.
#[test]
fn item_size_limit_edges() {
    let f = fixture(64 * MIB, MIB, MIB);
    let s = &f.store;
    let value = pattern(MIB - 1, 2);
    s.store(b"k", &value, 0, Expiry::Never, Mode::Set).unwrap();
    assert!(value_of(s, b"k").unwrap() == value, "1 MiB item read back differs");
    let over = pattern(MIB, 3);
    assert_eq!(
        s.store(b"k", &over, 0, Expiry::Never, Mode::Set),
        Err(StoreError::TooLarge { size: MIB + 1, max: MIB })
    );
    assert!(value_of(s, b"k").unwrap() == value, "a refused write changed the item");

    // The key counts too: the longest key plus the rest of the budget.
    let key = pattern(KEY_LEN_MAX, 4);
    let value = pattern(MIB - KEY_LEN_MAX, 5);
    s.store(&key, &value, 0, Expiry::Never, Mode::Set).unwrap();
    assert!(value_of(s, &key).unwrap() == value);
    assert_eq!(
        s.store(&key, &pattern(MIB - KEY_LEN_MAX + 1, 6), 0, Expiry::Never, Mode::Set),
        Err(StoreError::TooLarge { size: MIB + 1, max: MIB })
    );
    // The size check comes before the mode's own condition (as in memcached, where an item too
    // large is refused before the store is looked at): Replace would succeed, Cas(1) be Exists.
    for mode in [Mode::Replace, Mode::Cas(1)] {
        assert_eq!(
            s.store(b"k", &over, 0, Expiry::Never, mode),
            Err(StoreError::TooLarge { size: MIB + 1, max: MIB }),
            "{mode:?}"
        );
    }
}

// Items larger than a 1 MiB segment (up to a 4 MiB item_size_max) store and read back byte-exact.
#[test]
fn items_larger_than_a_segment() {
    let f = fixture(64 * MIB, MIB, 4 * MIB);
    let s = &f.store;
    let sizes = [MIB + 1, 5 * MIB / 2, 4 * MIB - 5];
    for (i, &len) in sizes.iter().enumerate() {
        let key = format!("big{i}");
        let cas =
            s.store(key.as_bytes(), &pattern(len, i as u64), i as u32, Expiry::Never, Mode::Set);
        let cas = cas.unwrap_or_else(|e| panic!("{len}-byte item refused: {e:?}"));
        let it = s.get(key.as_bytes()).expect("large item readable");
        assert_eq!((it.value.len(), it.flags, it.cas), (len, i as u32, cas));
        assert!(it.value == pattern(len, i as u64), "{len}-byte value differs");
    }
    // Exactly 4 MiB with the key, and one byte more.
    s.store(b"edge", &pattern(4 * MIB - 4, 9), 0, Expiry::Never, Mode::Set).unwrap();
    assert!(value_of(s, b"edge").unwrap() == pattern(4 * MIB - 4, 9));
    assert_eq!(
        s.store(b"edge", &pattern(4 * MIB - 3, 9), 0, Expiry::Never, Mode::Set),
        Err(StoreError::TooLarge { size: 4 * MIB + 1, max: 4 * MIB })
    );
    // Through a reader, all at once.
    let r = s.reader();
    for (i, &len) in sizes.iter().enumerate() {
        let it = r.get(format!("big{i}").as_bytes()).unwrap();
        assert!(it.value() == pattern(len, i as u64).as_slice());
    }
    drop(r);
    // Overwrite, append to and delete a large item.
    s.store(b"big1", &pattern(3 * MIB, 11), 0, Expiry::Never, Mode::Set).unwrap();
    s.store(b"big1", b"tail", 0, Expiry::Never, Mode::Append).unwrap();
    let mut expect = pattern(3 * MIB, 11);
    expect.extend_from_slice(b"tail");
    assert!(value_of(s, b"big1").unwrap() == expect);
    s.delete(b"big1", None).unwrap();
    assert!(s.get(b"big1").is_none());
    assert!(value_of(s, b"big0").unwrap() == pattern(MIB + 1, 0));
    let st = s.stats();
    assert!(st.memory_used_bytes <= st.memory_limit_bytes, "{st:?}");
}

// Keys and values with CR, LF, NUL and high bytes are kept exactly and kept apart.
#[test]
fn binary_keys_and_values() {
    let f = small();
    let s = &f.store;
    let all_bytes: Vec<u8> = (0..=255u8).collect();
    let keys: Vec<Vec<u8>> = vec![
        b"a\r\nb".to_vec(),
        b"\0".to_vec(),
        b"\0\0".to_vec(),
        b"a\0b".to_vec(),
        b"a\0c".to_vec(),
        b"\r\n".to_vec(),
        b"END\r\n".to_vec(),
        vec![0xff; 300],
        all_bytes.clone(),
    ];
    for (i, key) in keys.iter().enumerate() {
        let mut value = b"VALUE x 0 1\r\n\0\r\nEND\r\n".to_vec();
        value.extend_from_slice(&all_bytes);
        value.push(i as u8);
        s.store(key, &value, i as u32, Expiry::Never, Mode::Set).unwrap();
    }
    assert_eq!(s.len(), keys.len());
    for (i, key) in keys.iter().enumerate() {
        let it = s.get(key).unwrap_or_else(|| panic!("key {key:?} missing"));
        assert_eq!(it.key, *key);
        assert_eq!(it.flags, i as u32);
        assert_eq!(*it.value.last().unwrap(), i as u8);
        assert!(it.value.starts_with(b"VALUE x 0 1\r\n\0\r\nEND\r\n"));
        assert_eq!(&it.value[21..21 + 256], all_bytes.as_slice());
    }
    assert!(s.get(b"a").is_none());
    assert!(s.get(b"a\0").is_none());
}

// ---------------------------------------------------------------------------------------------
// Write modes and CAS

// Set stores unconditionally, over absent and present keys, replacing value, flags and expiry.
#[test]
fn mode_set() {
    let f = small();
    let s = &f.store;
    let c1 = s.store(b"k", b"one", 1, Expiry::AtMs(T0 + 10), Mode::Set).unwrap();
    let c2 = s.store(b"k", b"two", 2, Expiry::Never, Mode::Set).unwrap();
    assert_ne!(c1, c2);
    let it = s.get(b"k").unwrap();
    assert_eq!(
        (it.value.as_slice(), it.flags, it.expiry, it.cas),
        (&b"two"[..], 2, Expiry::Never, c2)
    );
    f.clock.advance_ms(100);
    assert!(s.get(b"k").is_some(), "the new expiry replaced the old one");
}

// Add stores only when the key is absent; when present it is NotStored and changes nothing.
#[test]
fn mode_add() {
    let f = small();
    let s = &f.store;
    let cas = s.store(b"k", b"first", 1, Expiry::Never, Mode::Add).unwrap();
    assert_eq!(s.store(b"k", b"second", 2, Expiry::Never, Mode::Add), Err(StoreError::NotStored));
    let it = s.get(b"k").unwrap();
    assert_eq!((it.value.as_slice(), it.flags, it.cas), (&b"first"[..], 1, cas));
    // Absent again after a delete and after expiry.
    s.delete(b"k", None).unwrap();
    s.store(b"k", b"third", 0, Expiry::AtMs(T0 + 5), Mode::Add).unwrap();
    f.clock.set_ms(T0 + 5);
    s.store(b"k", b"fourth", 0, Expiry::Never, Mode::Add).unwrap();
    assert_eq!(value_of(s, b"k").unwrap(), b"fourth");
}

// Replace stores only when the key is present; absent (or expired) it is NotStored.
#[test]
fn mode_replace() {
    let f = small();
    let s = &f.store;
    assert_eq!(s.store(b"k", b"v", 0, Expiry::Never, Mode::Replace), Err(StoreError::NotStored));
    assert!(s.get(b"k").is_none(), "a refused replace created the key");
    s.store(b"k", b"v1", 1, Expiry::AtMs(T0 + 10), Mode::Set).unwrap();
    let cas = s.store(b"k", b"v2", 2, Expiry::Never, Mode::Replace).unwrap();
    let it = s.get(b"k").unwrap();
    assert_eq!(
        (it.value.as_slice(), it.flags, it.expiry, it.cas),
        (&b"v2"[..], 2, Expiry::Never, cas)
    );
    s.store(b"e", b"v", 0, Expiry::AtMs(T0 + 10), Mode::Set).unwrap();
    f.clock.set_ms(T0 + 10);
    assert_eq!(s.store(b"e", b"v", 0, Expiry::Never, Mode::Replace), Err(StoreError::NotStored));
}

// Append adds after the value and keeps the item's flags and expiry; absent is NotStored.
#[test]
fn mode_append() {
    let f = small();
    let s = &f.store;
    assert_eq!(s.store(b"k", b"x", 0, Expiry::Never, Mode::Append), Err(StoreError::NotStored));
    assert!(s.get(b"k").is_none());
    let c1 = s.store(b"k", b"head", 7, Expiry::AtMs(T0 + 1000), Mode::Set).unwrap();
    let c2 = s.store(b"k", b"-tail", 99, Expiry::Never, Mode::Append).unwrap();
    assert_ne!(c1, c2);
    let it = s.get(b"k").unwrap();
    assert_eq!(it.value, b"head-tail");
    assert_eq!((it.flags, it.expiry, it.cas), (7, Expiry::AtMs(T0 + 1000), c2));
    s.store(b"k", b"", 0, Expiry::Never, Mode::Append).unwrap();
    assert_eq!(value_of(s, b"k").unwrap(), b"head-tail");
    f.clock.set_ms(T0 + 1000);
    assert!(s.get(b"k").is_none(), "append must not have extended the expiry");
    assert_eq!(s.store(b"k", b"x", 0, Expiry::Never, Mode::Append), Err(StoreError::NotStored));
}

// Prepend adds before the value and keeps the item's flags and expiry; absent is NotStored.
#[test]
fn mode_prepend() {
    let f = small();
    let s = &f.store;
    assert_eq!(s.store(b"k", b"x", 0, Expiry::Never, Mode::Prepend), Err(StoreError::NotStored));
    assert!(s.get(b"k").is_none());
    let c1 = s.store(b"k", b"tail", 7, Expiry::AtMs(T0 + 1000), Mode::Set).unwrap();
    let c2 = s.store(b"k", b"head-", 99, Expiry::Never, Mode::Prepend).unwrap();
    assert_ne!(c1, c2);
    let it = s.get(b"k").unwrap();
    assert_eq!(it.value, b"head-tail");
    assert_eq!((it.flags, it.expiry, it.cas), (7, Expiry::AtMs(T0 + 1000), c2));
    f.clock.set_ms(T0 + 1000);
    assert!(s.get(b"k").is_none(), "prepend must not have extended the expiry");
    assert_eq!(s.store(b"k", b"x", 0, Expiry::Never, Mode::Prepend), Err(StoreError::NotStored));
}

// Cas stores when the CAS matches, is Exists on a mismatch and NotFound when the key is absent.
#[test]
fn mode_cas() {
    let f = small();
    let s = &f.store;
    assert_eq!(s.store(b"k", b"v", 0, Expiry::Never, Mode::Cas(1)), Err(StoreError::NotFound));
    assert!(s.get(b"k").is_none(), "a failed cas created the key");
    let c1 = s.store(b"k", b"v1", 1, Expiry::Never, Mode::Set).unwrap();
    assert_eq!(s.get(b"k").unwrap().cas, c1);
    let c2 = s.store(b"k", b"v2", 2, Expiry::AtMs(T0 + 50), Mode::Cas(c1)).unwrap();
    assert_ne!(c1, c2);
    let it = s.get(b"k").unwrap();
    assert_eq!(
        (it.value.as_slice(), it.flags, it.expiry, it.cas),
        (&b"v2"[..], 2, Expiry::AtMs(T0 + 50), c2)
    );
    // The old CAS is stale now.
    assert_eq!(s.store(b"k", b"v3", 3, Expiry::Never, Mode::Cas(c1)), Err(StoreError::Exists));
    assert_eq!(
        s.store(b"k", b"v3", 3, Expiry::Never, Mode::Cas(c2.wrapping_add(1))),
        Err(StoreError::Exists)
    );
    assert_eq!(s.get(b"k").unwrap().value, b"v2", "a failed cas changed the item");
    // Deleted or expired: NotFound, not Exists.
    f.clock.set_ms(T0 + 50);
    assert_eq!(s.store(b"k", b"v4", 0, Expiry::Never, Mode::Cas(c2)), Err(StoreError::NotFound));
    let c3 = set(s, b"k", b"v5");
    s.delete(b"k", None).unwrap();
    assert_eq!(s.store(b"k", b"v6", 0, Expiry::Never, Mode::Cas(c3)), Err(StoreError::NotFound));
}

// Every successful write returns a new nonzero CAS that get then reports.
#[test]
fn cas_is_unique_per_write() {
    let f = small();
    let s = &f.store;
    let mut seen = HashSet::new();
    let mut check = |cas: u64| {
        assert_ne!(cas, 0, "CAS 0");
        assert!(seen.insert(cas), "CAS {cas} returned twice");
        assert_eq!(s.get(b"k").unwrap().cas, cas, "get reports another CAS");
    };
    check(s.store(b"k", b"1", 0, Expiry::Never, Mode::Add).unwrap());
    for round in 0..50 {
        check(s.store(b"k", b"1", 0, Expiry::Never, Mode::Set).unwrap());
        check(s.store(b"k", b"1", 0, Expiry::Never, Mode::Replace).unwrap());
        check(s.store(b"k", b"2", 0, Expiry::Never, Mode::Append).unwrap());
        check(s.store(b"k", b"3", 0, Expiry::Never, Mode::Prepend).unwrap());
        let cur = s.get(b"k").unwrap().cas;
        check(s.store(b"k", b"4", 0, Expiry::Never, Mode::Cas(cur)).unwrap());
        let (cas, ()) = s
            .modify(b"k", |_| {
                (Change::Write { value: b"5".to_vec(), flags: 0, expiry: Expiry::Never }, ())
            })
            .unwrap();
        check(cas.expect("modify write returns a CAS"));
        // Same key again after a delete.
        if round % 10 == 0 {
            s.delete(b"k", None).unwrap();
            check(s.store(b"k", b"6", 0, Expiry::Never, Mode::Add).unwrap());
        }
    }
    // Distinct keys written with identical content still get CAS values of their own.
    let a = set(s, b"a", b"same");
    let b = set(s, b"b", b"same");
    assert!(a != 0 && b != 0);
}

// ---------------------------------------------------------------------------------------------
// Reads, delete, len

// A reader returns borrowed items with key, value, flags, CAS and expiry; several at once.
#[test]
fn reader_get() {
    let f = small();
    let s = &f.store;
    let ca = s.store(b"a", b"alpha", 1, Expiry::Never, Mode::Set).unwrap();
    let cb = s.store(b"b", b"beta", 2, Expiry::AtMs(T0 + 7), Mode::Set).unwrap();
    let r = s.reader();
    let a = r.get(b"a").unwrap();
    let b = r.get(b"b").unwrap();
    assert!(r.get(b"c").is_none());
    assert_eq!(
        (a.key(), a.value(), a.flags(), a.cas(), a.expiry()),
        (&b"a"[..], &b"alpha"[..], 1, ca, Expiry::Never)
    );
    assert_eq!(
        (b.key(), b.value(), b.flags(), b.cas(), b.expiry()),
        (&b"b"[..], &b"beta"[..], 2, cb, Expiry::AtMs(T0 + 7))
    );
    let owned = a.to_owned();
    assert_eq!(owned, s.get(b"a").unwrap());
    assert_eq!(
        owned,
        OwnedItem {
            key: b"a".to_vec(),
            value: b"alpha".to_vec(),
            flags: 1,
            cas: ca,
            expiry: Expiry::Never,
            kind: store::ValueKind::String,
        }
    );
}

// delete removes a present key, is NotFound when absent, and with a CAS checks it first.
#[test]
fn delete_plain_and_with_cas() {
    let f = small();
    let s = &f.store;
    assert_eq!(s.delete(b"k", None), Err(StoreError::NotFound));
    assert_eq!(s.delete(b"k", Some(1)), Err(StoreError::NotFound));
    let cas = set(s, b"k", b"v");
    assert_eq!(s.delete(b"k", Some(cas.wrapping_add(1))), Err(StoreError::Exists));
    assert_eq!(s.delete(b"k", Some(0)), Err(StoreError::Exists));
    assert_eq!(value_of(s, b"k").unwrap(), b"v", "a failed delete removed the item");
    s.delete(b"k", Some(cas)).unwrap();
    assert!(s.get(b"k").is_none());
    assert_eq!(s.delete(b"k", None), Err(StoreError::NotFound));
    // A stale CAS after an overwrite.
    let old = set(s, b"k", b"v1");
    set(s, b"k", b"v2");
    assert_eq!(s.delete(b"k", Some(old)), Err(StoreError::Exists));
    s.delete(b"k", None).unwrap();
    // An expired item is not found.
    s.store(b"e", b"v", 0, Expiry::AtMs(T0 + 1), Mode::Set).unwrap();
    f.clock.set_ms(T0 + 1);
    assert_eq!(s.delete(b"e", None), Err(StoreError::NotFound));
}

// len and stats().items count live items; deleted ones are not counted; memory stays in bounds.
#[test]
fn len_and_stats_count_items() {
    let f = small();
    let s = &f.store;
    assert!(s.is_empty());
    for i in 0..100u32 {
        set(s, format!("k{i}").as_bytes(), &i.to_le_bytes());
    }
    set(s, b"k5", b"overwritten");
    assert_eq!(s.len(), 100);
    for i in 0..40u32 {
        s.delete(format!("k{i}").as_bytes(), None).unwrap();
    }
    assert_eq!(s.len(), 60);
    let st = s.stats();
    assert_eq!(st.items, 60, "{st:?}");
    assert_eq!(st.evictions, 0, "{st:?}");
    assert!(st.memory_used_bytes <= st.memory_limit_bytes, "{st:?}");
    assert_eq!(st.memory_limit_bytes, 16 * MIB as u64);
}

// ---------------------------------------------------------------------------------------------
// incr / decr

// incr and decr add and subtract, store the decimal result, keep flags and expiry.
#[test]
fn incr_decr_basic() {
    let f = small();
    let s = &f.store;
    s.store(b"n", b"10", 42, Expiry::AtMs(T0 + 1000), Mode::Set).unwrap();
    let before = s.get(b"n").unwrap().cas;
    assert_eq!(incr(s, b"n", 5), Ok(15));
    let it = s.get(b"n").unwrap();
    assert_eq!(
        (it.value.as_slice(), it.flags, it.expiry),
        (&b"15"[..], 42, Expiry::AtMs(T0 + 1000))
    );
    assert_ne!(it.cas, before, "incr is a write: new CAS");
    assert_eq!(decr(s, b"n", 3), Ok(12));
    assert_eq!(value_of(s, b"n").unwrap(), b"12");
    assert_eq!(decr(s, b"n", 3), Ok(9));
    assert_eq!(value_of(s, b"n").unwrap(), b"9");
    assert_eq!(incr(s, b"n", 0), Ok(9));
    assert_eq!(incr(s, b"n", 991), Ok(1000));
    assert_eq!(value_of(s, b"n").unwrap(), b"1000");
    // Leading zeros and the full 20 digits are accepted.
    set(s, b"z", b"007");
    assert_eq!(incr(s, b"z", 1), Ok(8));
    assert_eq!(value_of(s, b"z").unwrap(), b"8");
    set(s, b"z", b"00000000000000000001");
    assert_eq!(incr(s, b"z", 1), Ok(2));
    set(s, b"z", b"0");
    assert_eq!(incr(s, b"z", u64::MAX), Ok(u64::MAX));
    assert_eq!(value_of(s, b"z").unwrap(), u64::MAX.to_string().as_bytes());
    // Expiry is kept: the counter still expires when the original item would have.
    f.clock.set_ms(T0 + 1000);
    assert_eq!(incr(s, b"n", 1), Err(StoreError::NotFound));
}

// incr/decr of an absent key is NotFound and does not create it.
#[test]
fn incr_decr_absent() {
    let f = small();
    let s = &f.store;
    assert_eq!(incr(s, b"n", 1), Err(StoreError::NotFound));
    assert_eq!(decr(s, b"n", 1), Err(StoreError::NotFound));
    assert!(s.get(b"n").is_none());
}

// Values that are not 1..=20 ASCII digits fitting a u64 are NotNumeric and stay unchanged.
#[test]
fn incr_decr_not_numeric() {
    let f = small();
    let s = &f.store;
    let bad: [&[u8]; 14] = [
        b"abc",
        b"12a",
        b"",
        b"000000000000000000001", // 21 digits, though the number is small
        b"-5",
        b"+5",
        b" 5",
        b"5 ",
        b"1.5",
        b"18446744073709551616", // u64::MAX + 1
        b"99999999999999999999",
        b"12\r\n",
        b"1\x002",
        "\u{0661}".as_bytes(), // a non-ASCII digit
    ];
    for value in bad {
        s.store(b"n", value, 5, Expiry::Never, Mode::Set).unwrap();
        assert_eq!(incr(s, b"n", 1), Err(StoreError::NotNumeric), "incr of {value:?}");
        assert_eq!(decr(s, b"n", 1), Err(StoreError::NotNumeric), "decr of {value:?}");
        let it = s.get(b"n").unwrap();
        assert_eq!((it.value.as_slice(), it.flags), (value, 5), "NotNumeric changed the item");
    }
}

// incr wraps modulo 2^64.
#[test]
fn incr_wraps_at_u64_max() {
    let f = small();
    let s = &f.store;
    set(s, b"n", b"18446744073709551615");
    assert_eq!(incr(s, b"n", 1), Ok(0));
    assert_eq!(value_of(s, b"n").unwrap(), b"0");
    set(s, b"n", (u64::MAX - 1).to_string().as_bytes());
    assert_eq!(incr(s, b"n", 5), Ok(3));
    assert_eq!(value_of(s, b"n").unwrap(), b"3");
    set(s, b"n", b"1");
    assert_eq!(incr(s, b"n", u64::MAX), Ok(0));
}

// decr of 0 stays 0.
#[test]
fn decr_at_zero() {
    let f = small();
    let s = &f.store;
    set(s, b"n", b"0");
    assert_eq!(decr(s, b"n", 1), Ok(0));
    assert_eq!(value_of(s, b"n").unwrap(), b"0");
    assert_eq!(decr(s, b"n", u64::MAX), Ok(0));
    assert_eq!(value_of(s, b"n").unwrap(), b"0");
}

// decr by more than the value stops at 0, and the value shrinks to the new digits.
#[test]
fn decr_saturates() {
    let f = small();
    let s = &f.store;
    set(s, b"n", b"5");
    assert_eq!(decr(s, b"n", 10), Ok(0));
    assert_eq!(value_of(s, b"n").unwrap(), b"0");
    set(s, b"n", b"100");
    assert_eq!(decr(s, b"n", 1), Ok(99));
    assert_eq!(value_of(s, b"n").unwrap(), b"99");
    set(s, b"n", u64::MAX.to_string().as_bytes());
    assert_eq!(decr(s, b"n", u64::MAX), Ok(0));
    assert_eq!(value_of(s, b"n").unwrap(), b"0");
}

// ---------------------------------------------------------------------------------------------
// Expiry, touch, gat

// An item with AtMs(t) is visible at t-1 and gone at exactly t, for every operation.
#[test]
fn expiry_at_exact_millisecond() {
    let f = small();
    let s = &f.store;
    let t = T0 + 1000;
    s.store(b"k", b"v", 0, Expiry::AtMs(t), Mode::Set).unwrap();
    s.store(b"n", b"1", 0, Expiry::AtMs(t), Mode::Set).unwrap();
    s.store(b"forever", b"v", 0, Expiry::Never, Mode::Set).unwrap();
    f.clock.set_ms(t - 1);
    assert_eq!(s.get(b"k").unwrap().expiry, Expiry::AtMs(t));
    assert!(s.reader().get(b"k").is_some());
    assert_eq!(incr(s, b"n", 1), Ok(2));
    f.clock.set_ms(t);
    assert!(s.get(b"k").is_none(), "visible at its expiry millisecond");
    assert!(s.reader().get(b"k").is_none());
    assert!(s.get_and_touch(b"k", Expiry::Never).is_none());
    assert_eq!(s.touch(b"k", Expiry::Never), Err(StoreError::NotFound));
    assert_eq!(incr(s, b"n", 1), Err(StoreError::NotFound));
    assert_eq!(s.store(b"k", b"x", 0, Expiry::Never, Mode::Replace), Err(StoreError::NotStored));
    assert_eq!(s.store(b"k", b"x", 0, Expiry::Never, Mode::Append), Err(StoreError::NotStored));
    let seen = s.modify(b"k", |cur| (Change::Keep, cur.is_some())).unwrap().1;
    assert!(!seen, "modify saw an expired item");
    s.store(b"k", b"new", 0, Expiry::Never, Mode::Add).unwrap();
    assert_eq!(value_of(s, b"k").unwrap(), b"new");
    // Never does not expire, however far the clock goes (here: a century).
    let now = T0 + 100 * 365 * 86_400_000;
    f.clock.set_ms(now);
    assert!(s.get(b"forever").is_some());
    // An expiry already reached when written: stored, but never visible.
    s.store(b"past", b"v", 0, Expiry::AtMs(now), Mode::Set).unwrap();
    s.store(b"older", b"v", 0, Expiry::AtMs(now - 1000), Mode::Set).unwrap();
    assert!(s.get(b"past").is_none());
    assert!(s.get(b"older").is_none());
}

// touch moves the expiry later or earlier (or to Never); absent or expired keys are NotFound.
#[test]
fn touch_extends_and_shortens() {
    let f = small();
    let s = &f.store;
    assert_eq!(s.touch(b"k", Expiry::Never), Err(StoreError::NotFound));
    // Extend.
    s.store(b"long", b"v", 3, Expiry::AtMs(T0 + 1000), Mode::Set).unwrap();
    let cas = s.touch(b"long", Expiry::AtMs(T0 + 5000)).unwrap();
    assert_ne!(cas, 0);
    let it = s.get(b"long").unwrap();
    assert_eq!((it.value.as_slice(), it.flags, it.expiry), (&b"v"[..], 3, Expiry::AtMs(T0 + 5000)));
    // Shorten.
    s.store(b"short", b"v", 0, Expiry::Never, Mode::Set).unwrap();
    s.touch(b"short", Expiry::AtMs(T0 + 10)).unwrap();
    // To Never.
    s.store(b"never", b"v", 0, Expiry::AtMs(T0 + 10), Mode::Set).unwrap();
    s.touch(b"never", Expiry::Never).unwrap();
    f.clock.set_ms(T0 + 9);
    assert!(s.get(b"short").is_some());
    f.clock.set_ms(T0 + 10);
    assert!(s.get(b"short").is_none(), "touch did not shorten the life");
    assert!(s.get(b"never").is_some(), "touch to Never did not stick");
    f.clock.set_ms(T0 + 4999);
    assert!(s.get(b"long").is_some(), "touch did not extend the life");
    f.clock.set_ms(T0 + 5000);
    assert!(s.get(b"long").is_none());
    assert_eq!(s.touch(b"long", Expiry::Never), Err(StoreError::NotFound));
    f.clock.set_ms(T0 + 1_000_000);
    assert!(s.get(b"never").is_some());
    // Touching into the past makes the item invisible at once.
    s.touch(b"never", Expiry::AtMs(T0)).unwrap();
    assert!(s.get(b"never").is_none());
}

// get_and_touch returns the item with the new expiry and applies it; absent gives None.
#[test]
fn get_and_touch() {
    let f = small();
    let s = &f.store;
    assert!(s.get_and_touch(b"k", Expiry::Never).is_none());
    s.store(b"k", b"value", 7, Expiry::AtMs(T0 + 100), Mode::Set).unwrap();
    let it = s.get_and_touch(b"k", Expiry::AtMs(T0 + 10_000)).unwrap();
    assert_eq!(it.key, b"k");
    assert_eq!(
        (it.value.as_slice(), it.flags, it.expiry),
        (&b"value"[..], 7, Expiry::AtMs(T0 + 10_000))
    );
    assert_ne!(it.cas, 0);
    assert_eq!(s.get(b"k").unwrap().expiry, Expiry::AtMs(T0 + 10_000));
    f.clock.set_ms(T0 + 5000);
    assert!(s.get(b"k").is_some(), "gat did not extend the life");
    // Shorten with gat.
    let it = s.get_and_touch(b"k", Expiry::AtMs(T0 + 5001)).unwrap();
    assert_eq!(it.value, b"value");
    f.clock.set_ms(T0 + 5001);
    assert!(s.get(b"k").is_none(), "gat did not shorten the life");
    assert!(s.get_and_touch(b"k", Expiry::Never).is_none(), "gat revived an expired item");
}

// ---------------------------------------------------------------------------------------------
// modify

// modify sees the current item and writes, keeps or deletes atomically.
#[test]
fn modify_write_keep_delete() {
    let f = small();
    let s = &f.store;
    // Absent: the closure sees None; Write creates.
    let (cas, saw) = s
        .modify(b"k", |cur| {
            let saw = cur.map(|it| it.value().to_vec());
            (Change::Write { value: b"v1".to_vec(), flags: 4, expiry: Expiry::AtMs(T0 + 100) }, saw)
        })
        .unwrap();
    assert_eq!(saw, None);
    let cas = cas.expect("write returns a CAS");
    let it = s.get(b"k").unwrap();
    assert_eq!(
        (it.value.as_slice(), it.flags, it.expiry, it.cas),
        (&b"v1"[..], 4, Expiry::AtMs(T0 + 100), cas)
    );
    // Present: the closure sees the item; Write derives from it.
    let (cas2, saw) = s
        .modify(b"k", |cur| {
            let cur = cur.expect("present");
            let saw = (cur.value().to_vec(), cur.flags(), cur.cas(), cur.expiry());
            let mut value = cur.value().to_vec();
            value.extend_from_slice(b"+");
            (Change::Write { value, flags: cur.flags() + 1, expiry: Expiry::Never }, saw)
        })
        .unwrap();
    assert_eq!(saw, (b"v1".to_vec(), 4, cas, Expiry::AtMs(T0 + 100)));
    let cas2 = cas2.unwrap();
    assert_ne!(cas2, cas);
    let it = s.get(b"k").unwrap();
    assert_eq!(
        (it.value.as_slice(), it.flags, it.expiry, it.cas),
        (&b"v1+"[..], 5, Expiry::Never, cas2)
    );
    // Keep changes nothing and returns None.
    assert_eq!(s.modify(b"k", |_| (Change::Keep, 1)).unwrap(), (None, 1));
    assert_eq!(s.get(b"k").unwrap().cas, cas2);
    // Delete removes and returns None; deleting an absent key is fine.
    assert_eq!(s.modify(b"k", |_| (Change::Delete, ())).unwrap(), (None, ()));
    assert!(s.get(b"k").is_none());
    assert_eq!(s.modify(b"k", |_| (Change::Delete, ())).unwrap(), (None, ()));
    assert_eq!(s.modify(b"absent", |_| (Change::Keep, ())).unwrap(), (None, ()));
    assert!(s.get(b"absent").is_none());
    // A write over the size limit is refused.
    let r = s.modify(b"k", |_| {
        (Change::Write { value: vec![0; MIB], flags: 0, expiry: Expiry::Never }, ())
    });
    assert_eq!(r.map(|(c, ())| c), Err(StoreError::TooLarge { size: MIB + 1, max: MIB }));
}

// ---------------------------------------------------------------------------------------------
// flush_all

// flush_all(0) hides every item at once; items stored afterwards are visible.
#[test]
fn flush_all_immediate() {
    let f = small();
    let s = &f.store;
    for i in 0..1000u32 {
        set(s, format!("k{i}").as_bytes(), &i.to_le_bytes());
    }
    s.flush_all(0);
    for i in 0..1000u32 {
        assert!(s.get(format!("k{i}").as_bytes()).is_none(), "k{i} survived the flush");
    }
    assert_eq!(s.touch(b"k1", Expiry::Never), Err(StoreError::NotFound));
    assert_eq!(s.store(b"k2", b"v", 0, Expiry::Never, Mode::Replace), Err(StoreError::NotStored));
    s.store(b"k3", b"after", 0, Expiry::Never, Mode::Add).unwrap();
    set(s, b"new", b"after");
    assert_eq!(value_of(s, b"k3").unwrap(), b"after");
    assert_eq!(value_of(s, b"new").unwrap(), b"after");
    // Still there after time passes and maintenance runs.
    f.clock.advance_ms(10_000);
    s.maintain(usize::MAX);
    assert_eq!(value_of(s, b"new").unwrap(), b"after");
    let st = s.stats();
    assert!(st.memory_used_bytes <= st.memory_limit_bytes, "{st:?}");
}

// flush_all(d): items stored before T are visible at T-1 and gone at T; later ones stay.
#[test]
fn flush_all_delayed() {
    let f = small();
    let s = &f.store;
    let t = T0 + 1000;
    set(s, b"before", b"v");
    s.flush_all(1000);
    assert_eq!(value_of(s, b"before").unwrap(), b"v", "a delayed flush acted at once");
    f.clock.set_ms(T0 + 500);
    set(s, b"between", b"v");
    f.clock.set_ms(t - 1);
    assert!(s.get(b"before").is_some(), "gone before the flush time");
    assert!(s.get(b"between").is_some());
    s.maintain(usize::MAX);
    assert!(s.get(b"before").is_some(), "maintain flushed early");
    f.clock.set_ms(t);
    assert!(s.get(b"before").is_none(), "visible at the flush time");
    assert!(s.get(b"between").is_none(), "stored before the flush time, still visible");
    set(s, b"at", b"v");
    assert_eq!(value_of(s, b"at").unwrap(), b"v");
    f.clock.set_ms(t + 1);
    set(s, b"after", b"v");
    assert!(s.get(b"at").is_some());
    assert!(s.get(b"after").is_some());
    assert!(s.get(b"before").is_none());
    s.maintain(usize::MAX);
    assert!(s.get(b"at").is_some() && s.get(b"after").is_some());
}

// A delayed flush takes effect even when the first access after T is a write to another key.
#[test]
fn flush_all_delayed_first_access_is_write() {
    let f = small();
    let s = &f.store;
    set(s, b"old", b"v");
    s.flush_all(10);
    f.clock.set_ms(T0 + 10);
    set(s, b"new", b"v");
    assert!(s.get(b"old").is_none());
    assert!(s.get(b"new").is_some());
}

// A delayed flush whose time has come takes effect even if the next call is another flush_all.
#[test]
fn flush_all_delayed_then_flush_all_again() {
    let f = small();
    let s = &f.store;
    set(s, b"old", b"v");
    s.flush_all(10);
    f.clock.set_ms(T0 + 10);
    // The first call after T is a new delayed flush: the first one has already happened.
    s.flush_all(1000);
    assert!(s.get(b"old").is_none(), "the due flush was lost");
    set(s, b"mid", b"v");
    f.clock.set_ms(T0 + 1009);
    assert!(s.get(b"mid").is_some());
    f.clock.set_ms(T0 + 1010);
    assert!(s.get(b"mid").is_none(), "the second delayed flush did not happen");
}

// ---------------------------------------------------------------------------------------------
// scan

fn scan_all(s: &Store, count: usize) -> HashSet<Vec<u8>> {
    let mut seen = HashSet::new();
    let mut cursor = 0;
    for _ in 0..10_000_000 {
        cursor = s.scan(cursor, count, |key| {
            seen.insert(key.to_vec());
        });
        if cursor == 0 {
            return seen;
        }
    }
    panic!("scan did not finish");
}

// A full scan visits every one of 10k keys.
#[test]
fn scan_visits_all_keys() {
    let f = fixture(64 * MIB, MIB, MIB);
    let s = &f.store;
    let empty = scan_all(s, 100);
    assert!(empty.is_empty());
    let n = 10_000u32;
    for i in 0..n {
        set(s, format!("key{i}").as_bytes(), b"v");
    }
    for count in [1, 100, 100_000] {
        let seen = scan_all(s, count);
        let missing = (0..n).filter(|i| !seen.contains(format!("key{i}").as_bytes())).count();
        assert_eq!(missing, 0, "scan with count {count} missed {missing} of {n} keys");
    }
}

// A page of `scan_page` (Redis SCAN) goes on past empty index blocks: a few keys in a store
// whose index is sized for 256 MiB come back in one call, cursor 0; an empty store answers
// at once.
#[test]
fn scan_page_lists_a_small_keyspace_in_one_call() {
    let f = fixture(256 * MIB, MIB, MIB);
    let s = &f.store;
    assert_eq!(s.scan_page(0, 10, |_| panic!("empty store")), 0);
    // Items the caller does not take (another database's keys) do not end the page.
    for i in 0..40 {
        set(s, format!("other{i}").as_bytes(), b"v");
    }
    for key in [&b"a"[..], b"b", b"c"] {
        set(s, key, b"v");
    }
    let mut seen = Vec::new();
    let cursor = s.scan_page(0, 10, |item| {
        let mine = !item.key().starts_with(b"other");
        if mine {
            seen.push(item.key().to_vec());
        }
        mine
    });
    seen.sort();
    assert_eq!((cursor, seen), (0, vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]));
}

// On a full index a page stops near COUNT items (at the end of the block it reached), and
// pages still cover every key exactly once.
#[test]
fn scan_page_is_bounded_by_count_and_lists_each_key_once() {
    let f = fixture(64 * MIB, MIB, MIB);
    let s = &f.store;
    let n = 20_000u32;
    for i in 0..n {
        set(s, format!("key{i}").as_bytes(), b"v");
    }
    let (mut cursor, mut seen, mut largest_page) = (0, Vec::new(), 0);
    for _ in 0..n {
        let before = seen.len();
        cursor = s.scan_page(cursor, 10, |item| {
            seen.push(item.key().to_vec());
            true
        });
        largest_page = largest_page.max(seen.len() - before);
        if cursor == 0 {
            break;
        }
    }
    assert_eq!(cursor, 0, "scan did not finish");
    assert_eq!(seen.len(), n as usize, "a key was listed twice or missed");
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), n as usize);
    // A block holds 64 buckets of 8 slots, and a page ends with the block it is in (a
    // growing sub-table's old blocks add at most as many again).
    assert!(largest_page <= 10 + 2 * 64 * 8, "a page of {largest_page} items for COUNT 10");
}

// Inserting (and growing the index) while a scan runs does not hide any original key from it.
#[test]
fn scan_with_concurrent_inserts() {
    let f = fixture(64 * MIB, MIB, MIB);
    let s = &f.store;
    let n = 10_000u32;
    for i in 0..n {
        set(s, format!("orig{i}").as_bytes(), b"v");
    }
    let stop = AtomicBool::new(false);
    let seen = std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            let mut i = 0u32;
            while !stop.load(Ordering::Relaxed) && i < 200_000 {
                set(s, format!("new{i}").as_bytes(), b"value");
                i += 1;
            }
            i
        });
        let mut seen = HashSet::new();
        let mut cursor = 0;
        for step in 0.. {
            cursor = s.scan(cursor, 20, |key| {
                seen.insert(key.to_vec());
            });
            if cursor == 0 {
                break;
            }
            if step % 16 == 0 {
                std::thread::yield_now();
            }
            assert!(step < 10_000_000, "scan did not finish");
        }
        stop.store(true, Ordering::Relaxed);
        let inserted = writer.join().unwrap();
        assert!(inserted > 0);
        seen
    });
    let missing: Vec<u32> =
        (0..n).filter(|i| !seen.contains(format!("orig{i}").as_bytes())).collect();
    assert!(
        missing.is_empty(),
        "{} original keys missed, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(10)]
    );
    assert_eq!(s.stats().evictions, 0);
}

// ---------------------------------------------------------------------------------------------
// Memory limit: eviction, refusal, reclaim

fn numbered_value(i: u32, len: usize) -> Vec<u8> {
    let mut v = pattern(len, i as u64);
    v[..4].copy_from_slice(&i.to_le_bytes());
    v
}

// Far past capacity, writes succeed by evicting: memory stays bounded, readable values intact.
#[test]
fn eviction_when_full() {
    let f = fixture(4 * MIB, 64 * KIB, MIB);
    let s = &f.store;
    let n = 20_000u32; // about five times the memory
    for i in 0..n {
        let r = s.store(
            format!("key{i}").as_bytes(),
            &numbered_value(i, KIB),
            i,
            Expiry::Never,
            Mode::Set,
        );
        assert!(r.is_ok(), "write {i} failed with {r:?}");
        if i % 1000 == 0 {
            let st = s.stats();
            assert!(st.memory_used_bytes <= st.memory_limit_bytes, "after {i} writes: {st:?}");
        }
    }
    let st = s.stats();
    assert!(st.evictions > 0, "{st:?}");
    assert!(st.memory_used_bytes <= st.memory_limit_bytes, "{st:?}");
    let evicted = f.evicted.lock().unwrap().clone();
    assert_eq!(evicted.len() as u64, st.evictions, "on_evict calls vs stats");
    let evicted: HashSet<Vec<u8>> = evicted.into_iter().collect();
    // The most recent writes are mostly still there.
    let recent = (n - 500..n).filter(|i| s.get(format!("key{i}").as_bytes()).is_some()).count();
    assert!(recent >= 450, "only {recent} of the last 500 keys readable; {st:?}");
    // Whatever is readable has its own value; whatever is not was reported evicted.
    let mut readable = 0;
    for i in 0..n {
        let key = format!("key{i}");
        match s.get(key.as_bytes()) {
            Some(it) => {
                assert!(it.value == numbered_value(i, KIB), "{key} has a wrong value");
                assert_eq!(it.flags, i);
                readable += 1;
            }
            None => assert!(evicted.contains(key.as_bytes()), "{key} vanished unreported"),
        }
    }
    assert!(readable > 0);
    assert_eq!(s.len(), readable, "len vs readable items");
}

// In Refuse mode a full store answers NoSpace instead of evicting; stored items stay readable.
#[test]
fn refuse_mode_no_space() {
    let f = fixture_with(4 * MIB, 64 * KIB, MIB, WhenFull::Refuse);
    let s = &f.store;
    let mut stored = Vec::new();
    let mut refused = 0;
    for i in 0..10_000u32 {
        match s.store(
            format!("key{i}").as_bytes(),
            &numbered_value(i, KIB),
            0,
            Expiry::Never,
            Mode::Set,
        ) {
            Ok(_) => stored.push(i),
            Err(StoreError::NoSpace) => refused += 1,
            Err(e) => panic!("write {i}: unexpected {e:?}"),
        }
    }
    assert!(refused > 0, "10 MB of writes into 4 MiB never refused");
    assert!(!stored.is_empty());
    let st = s.stats();
    assert_eq!(st.evictions, 0, "{st:?}");
    assert!(f.evicted.lock().unwrap().is_empty());
    assert!(st.memory_used_bytes <= st.memory_limit_bytes, "{st:?}");
    for &i in &stored {
        let it = s.get(format!("key{i}").as_bytes()).unwrap_or_else(|| panic!("key{i} lost"));
        assert!(it.value == numbered_value(i, KIB), "key{i} has a wrong value");
    }
    assert_eq!(s.len(), stored.len());
    // Still refusing. Memory may still come back after the loop (index tables retired while
    // it filled are freed when the epoch moves on, later if other tests' threads stay
    // pinned: `another` was stored once in a loaded run), so new writes take that up and are
    // then refused again, never evicting.
    let mut late = 0;
    while s.store(format!("late{late}").as_bytes(), &[1; KIB], 0, Expiry::Never, Mode::Set).is_ok()
    {
        late += 1;
        assert!(late < 256, "256 KiB more stored in a full 4 MiB store");
    }
    assert_eq!(s.stats().evictions, 0);
    assert!(s.stats().memory_used_bytes <= s.stats().memory_limit_bytes);
}

// maintain reclaims expired items: stats().items falls, expired_reclaimed > 0, others survive.
#[test]
fn maintain_reclaims_expired() {
    let f = small();
    let s = &f.store;
    let n = 4000u32; // 4000 x ~200 B: a dozen 64 KiB segments
    for i in 0..n {
        s.store(
            format!("tmp{i}").as_bytes(),
            &numbered_value(i, 200),
            0,
            Expiry::AtMs(T0 + 1000),
            Mode::Set,
        )
        .unwrap();
    }
    for i in 0..100u32 {
        set(s, format!("keep{i}").as_bytes(), &numbered_value(i, 200));
    }
    let before = s.stats();
    assert_eq!(before.items, u64::from(n) + 100, "{before:?}");
    // Not yet expired: nothing to reclaim.
    f.clock.set_ms(T0 + 999);
    s.maintain(usize::MAX);
    assert_eq!(s.stats().items, before.items);
    f.clock.set_ms(T0 + 1000);
    s.maintain(1000);
    let after = s.stats();
    assert!(after.items < before.items, "before {before:?}\nafter {after:?}");
    assert!(after.expired_reclaimed > 0, "{after:?}");
    assert_eq!(after.evictions, 0, "reclaim is not eviction: {after:?}");
    assert!(f.evicted.lock().unwrap().is_empty());
    assert!(after.memory_used_bytes <= after.memory_limit_bytes, "{after:?}");
    for i in 0..100u32 {
        let it = s.get(format!("keep{i}").as_bytes()).unwrap_or_else(|| panic!("keep{i} lost"));
        assert!(it.value == numbered_value(i, 200));
    }
    assert!(s.get(b"tmp0").is_none());
}

// The expiry observer hears each expired item once, whichever path unlinks it (a write that
// meets it, the sweep, its whole segment), and never a flushed, deleted or live one.
#[test]
fn expiry_observer_hears_each_expired_item_once() {
    let clock = Arc::new(ManualClock::new(T0));
    let heard = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&heard);
    let mut store = Store::new(Config { clock: clock.clone(), ..config(16 * MIB, 64 * KIB) })
        .expect("valid config");
    store.set_expiry_observer(Arc::new(move |key: &[u8]| log.lock().unwrap().push(key.to_vec())));
    let s = &store;
    let expiring = |key: &[u8]| s.store(key, b"v", 0, Expiry::AtMs(T0 + 1000), Mode::Set).unwrap();
    expiring(b"overwritten");
    expiring(b"swept");
    expiring(b"deleted");
    set(s, b"live", b"v");
    s.delete(b"deleted", None).unwrap();
    assert!(heard.lock().unwrap().is_empty());
    clock.set_ms(T0 + 1000);
    set(s, b"overwritten", b"new");
    s.maintain(usize::MAX);
    s.sweep_expired(1 << 20);
    let mut keys = heard.lock().unwrap().clone();
    keys.sort();
    assert_eq!(keys, vec![b"overwritten".to_vec(), b"swept".to_vec()]);
    // Flushed items are not expired ones.
    s.store(b"flushed", b"v", 0, Expiry::AtMs(T0 + 5000), Mode::Set).unwrap();
    s.flush_all(0);
    clock.set_ms(T0 + 6000);
    s.maintain(usize::MAX);
    s.sweep_expired(1 << 20);
    assert_eq!(heard.lock().unwrap().len(), 2);
}
