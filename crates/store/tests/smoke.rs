//! Quick end-to-end checks of the engine's main paths: basic ops, index growth, eviction.

use std::sync::Arc;

use store::*;

fn small_store(memory_mib: usize, seg_kib: usize) -> Store {
    Store::new(Config {
        memory_bytes: memory_mib * MIB,
        segment_size_bytes: seg_kib * 1024,
        ..Config::default()
    })
    .unwrap()
}

// Set, get, overwrite and delete one key.
#[test]
fn basic_set_get_delete() {
    let s = small_store(8, 64);
    let cas1 = s.store(b"k", b"v1", 5, Expiry::Never, Mode::Set).unwrap();
    let it = s.get(b"k").unwrap();
    assert_eq!((it.value.as_slice(), it.flags, it.cas), (&b"v1"[..], 5, cas1));
    let cas2 = s.store(b"k", b"v2", 0, Expiry::Never, Mode::Set).unwrap();
    assert_ne!(cas1, cas2);
    assert_eq!(s.get(b"k").unwrap().value, b"v2");
    assert_eq!(s.len(), 1);
    s.delete(b"k", None).unwrap();
    assert!(s.get(b"k").is_none());
    assert_eq!(s.len(), 0);
}

// Many small items make the index grow; all stay readable throughout.
#[test]
fn index_grows_and_keeps_every_key() {
    let s = small_store(64, 1024);
    let n = 300_000u32;
    for i in 0..n {
        s.store(format!("key{i}").as_bytes(), &i.to_le_bytes(), 0, Expiry::Never, Mode::Set)
            .unwrap();
    }
    let st = s.stats();
    assert_eq!(st.evictions, 0, "{st:?}");
    assert_eq!(st.items, n as u64);
    assert!(st.index_slots > u64::from(n), "{st:?}");
    for i in 0..n {
        let it = s.get(format!("key{i}").as_bytes()).unwrap_or_else(|| panic!("key{i} lost"));
        assert_eq!(it.value, i.to_le_bytes());
    }
    while s.maintain(0) > 0 {}
}

// Writing far past capacity evicts, stays within the limit, and keeps values intact.
#[test]
fn eviction_keeps_memory_bounded() {
    let evicted = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counter = Arc::clone(&evicted);
    let s = Store::new(Config {
        memory_bytes: 4 * MIB,
        segment_size_bytes: 64 * 1024,
        on_evict: Some(Arc::new(move |_item: &Item<'_>| {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        })),
        ..Config::default()
    })
    .unwrap();
    let value = vec![7u8; 1000];
    for i in 0..20_000u32 {
        s.store(format!("k{i}").as_bytes(), &value, 0, Expiry::Never, Mode::Set).unwrap();
        if i % 3 == 0 {
            let _ = s.get(format!("k{}", i / 2).as_bytes());
        }
    }
    let st = s.stats();
    assert!(st.evictions > 0);
    assert_eq!(st.evictions, evicted.load(std::sync::atomic::Ordering::Relaxed));
    assert!(st.memory_used_bytes <= st.memory_limit_bytes, "{st:?}");
    assert!(s.get(b"k19999").is_some());
    let mut readable = 0;
    for i in 0..20_000u32 {
        if let Some(it) = s.get(format!("k{i}").as_bytes()) {
            assert_eq!(it.value, value);
            readable += 1;
        }
    }
    assert_eq!(readable as u64, st.items, "{st:?}");
}
