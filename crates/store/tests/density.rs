//! Memory density: the budget's account (`Store::memory_breakdown`) adds up, and 20/20 items
//! cost under 16 B of metadata each while the store fills and at its first eviction
//! (issue 36; `examples/footprint.rs` measures the same at any size).

use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};

use store::*;

const MEMORY_MIB: usize = 32;
const PAYLOAD: u64 = 40;

fn key(i: u64) -> [u8; 20] {
    let mut key = [b'0'; 20];
    let digits = i.to_string();
    key[20 - digits.len()..].copy_from_slice(digits.as_bytes());
    key
}

/// Everything charged is in one of the breakdown's places (no large items or owners here):
/// segments in use are charged what is written in them and their charged, unwritten rest
/// (an active segment taken unbacked is charged as it fills), free resident ones whole.
fn assert_adds_up(b: &MemoryBreakdown) {
    let in_use = b.segment_filled_bytes + b.sealed_tail_bytes + b.active_unfilled_bytes;
    let segments = in_use + b.segments_free_resident * b.segment_size_bytes;
    let index = b.index_current_bytes + b.index_old_bytes + b.index_retiring_bytes;
    assert_eq!(b.charged_bytes, segments + index, "{b:?}");
}

// Goal: while filling, metadata per item (charged bytes beyond the payload) stays under 16 B
// once past the fixed costs of an almost empty store, retired index tables stop being
// charged soon after their migration, and at the first eviction the whole limit holds items
// at under 16 B of metadata each. Before old tables were flushed to the epoch's global
// queue, retired tables held 2-4 B per item and 256 MiB gave 18.8 B.
#[test]
fn twenty_byte_items_cost_under_16_bytes_of_metadata() {
    let evicted = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&evicted);
    let store = Store::new(Config {
        memory_bytes: MEMORY_MIB * MIB,
        on_evict: Some(Arc::new(move |_: &Item<'_>| seen.store(true, Ordering::Relaxed))),
        ..Config::default()
    })
    .unwrap();
    let value = [b'v'; 20];
    let mut n = 0u64;
    let mut worst = 0f64;
    while !evicted.load(Ordering::Relaxed) {
        store.store(&key(n), &value, 0, Expiry::Never, Mode::Set).unwrap();
        n += 1;
        if n.is_multiple_of(50_000) {
            let b = store.memory_breakdown();
            assert_adds_up(&b);
            let metadata = (b.charged_bytes - n * PAYLOAD) as f64 / n as f64;
            // From 50k items (about 8% of what fits) on. Before segments were charged as
            // they fill, only from 300k (about half): the active segment, charged whole when
            // taken, and the index's starting size dominated below.
            if n >= 50_000 {
                assert!(metadata < 16.0, "{n} items: {metadata:.2} B each; {b:?}");
                worst = worst.max(metadata);
            }
            assert!(b.index_retiring_bytes < b.index_current_bytes / 8, "{b:?}");
        }
        assert!(n < (MEMORY_MIB * MIB) as u64 / PAYLOAD, "no eviction");
    }
    let items = n; // the write that evicted was the n+1-th
    let metadata = ((MEMORY_MIB * MIB) as u64 - items * PAYLOAD) as f64 / items as f64;
    assert!(metadata < 16.0, "{items} items at the first eviction: {metadata:.2} B each");
    eprintln!("{items} items at the first eviction: {metadata:.2} B each; worst fill {worst:.2}");
}
