//! Writes to memory other workers use, per memcached request, through the whole execution
//! path (parse, execute, reply): the store counts its own (the `count-shared-writes`
//! feature), and exec adds none (its counters are the worker's own, written with a plain
//! store). Gets of items read three times before write nothing shared.
//!
//! `cargo test -p exec --features count-shared-writes memcache::shared_writes`

use store::shared_writes::{self, Counts, Site};

use super::tests::Harness;

/// What the store counted while `wire` ran, with its replies.
fn counted(h: &mut Harness, wire: &[u8]) -> (Counts, Vec<u8>) {
    shared_writes::take();
    let out = h.run(wire);
    (shared_writes::take(), out)
}

fn warmed() -> Harness {
    let mut h = Harness::new();
    h.check(b"set a 0 0 1\r\n1\r\nset b 0 0 1\r\n2\r\n", b"STORED\r\nSTORED\r\n");
    // Three reads raise each item's access frequency to its maximum.
    for _ in 0..3 {
        h.run(b"mg a v\r\nmg b v\r\n");
    }
    h
}

#[test]
fn gets_of_read_items_write_nothing_shared() {
    let mut h = warmed();
    for wire in [
        &b"get a\r\n"[..],
        b"gets a b\r\n",
        b"get missing\r\n",
        b"mg a v f c t s k\r\n",
        b"mg missing v\r\n",
        b"mn\r\n",
    ] {
        let (counts, out) = counted(&mut h, wire);
        assert!(!out.is_empty(), "no reply to {wire:?}");
        assert_eq!(counts.shared(), 0, "{:?}: {:?}", String::from_utf8_lossy(wire), counts);
    }
}

#[test]
fn a_set_takes_one_stripe_lock_and_writes_one_index_slot() {
    let mut h = warmed();
    let (counts, out) = counted(&mut h, b"set a 0 0 1\r\n3\r\n");
    assert_eq!(out, b"STORED\r\n");
    assert_eq!(counts.get(Site::StripeLock), 1, "{counts:?}");
    assert_eq!(counts.get(Site::IndexStore), 1, "{counts:?}");
    assert_eq!(counts.shared(), 2, "{counts:?}");
}
