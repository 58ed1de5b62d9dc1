//! A picture begun, then writes through the command path, then the file: it holds the
//! store as it was at the instant the picture began.

use crate::{
    resp::testkit::Harness,
    snapshot::{
        load_rdb_file, save_picture,
        testdata::{filled, temp_path},
        Abandon,
    },
};

const KEYS: [&str; 10] = ["s", "n", "l", "h", "z", "x", "big", "mc", "fresh", "in3"];

fn dumps(h: &mut Harness) -> Vec<String> {
    let mut all: Vec<String> = KEYS.iter().map(|key| h.run(&format!("DUMP {key}"))).collect();
    h.run("SELECT 3");
    all.extend(KEYS.iter().map(|key| h.run(&format!("DUMP {key}"))));
    h.run("SELECT 0");
    all.push(h.run("PTTL n"));
    all
}

/// Loads the file at `path` into a new store and returns its dumps.
fn loaded(path: &std::path::Path) -> Vec<String> {
    let mut second = Harness::new();
    load_rdb_file(&second.shared, path).unwrap();
    let _ = std::fs::remove_file(path);
    dumps(&mut second)
}

/// Goal: the writes after the instant (an overwrite, an APPEND, a delete, a key created,
/// a member added to a large set, an expiry dropped, a key moved to another database)
/// are not in the file; the keys as they were are, the deleted one included.
#[test]
fn writes_after_the_instant_are_not_in_the_picture() {
    let mut h = filled();
    let before = dumps(&mut h);
    assert!(h.shared.core.picture.begin(usize::MAX));
    h.check(&[
        ("SET s changed", "+OK\r\n"),
        ("APPEND s more", ":11\r\n"),
        ("PERSIST n", ":1\r\n"),
        ("DEL l", ":1\r\n"),
        ("SET fresh x", "+OK\r\n"),
        ("SADD big another", ":1\r\n"),
        ("HSET h f w", ":0\r\n"),
        ("MOVE h 3", ":1\r\n"),
        ("SELECT 3", "+OK\r\n"),
        ("SET in3 new", "+OK\r\n"),
        ("SELECT 0", "+OK\r\n"),
    ]);
    assert_ne!(dumps(&mut h), before, "the writes changed nothing: the test proves nothing");
    let path = temp_path("instant");
    let saved = save_picture(&h.shared, &path, &[]).unwrap();
    assert_eq!(saved.items, 9);
    assert_eq!(loaded(&path), before);
    assert!(!h.shared.core.picture.is_active(), "the picture ends with its save");
    assert!(h.shared.core.picture.last_peak_bytes.load(std::sync::atomic::Ordering::Relaxed) > 0);
}

/// Goal: keys written past the limit of what may be kept abandon the picture, and the
/// save fails saying why, instead of keeping more.
#[test]
fn keeping_past_the_limit_abandons_the_save() {
    let mut h = filled();
    let big = "x".repeat(4000);
    for key in ["a", "b", "c"] {
        h.run(&format!("SET {key} {big}"));
    }
    assert!(h.shared.core.picture.begin(10_000));
    for key in ["a", "b", "c"] {
        assert_eq!(h.run(&format!("SET {key} y")), "+OK\r\n");
    }
    assert_eq!(h.shared.core.picture.abandoned(), Some(Abandon::Limit(10_000)));
    assert!(!h.shared.core.picture.is_active());
    let path = temp_path("limit");
    let failed = save_picture(&h.shared, &path, &[]).unwrap_err();
    assert!(failed.contains("needed more than 10000 bytes kept"), "{failed}");
    assert!(!path.exists());
}

/// Goal: a flush abandons the picture (the save is ordered before it), and a new one can
/// begin once the save ended.
#[test]
fn a_flush_abandons_the_picture() {
    for flush in ["FLUSHALL", "FLUSHDB", "SWAPDB 0 1"] {
        let mut h = filled();
        assert!(h.shared.core.picture.begin(usize::MAX));
        assert!(!h.shared.core.picture.begin(usize::MAX), "one picture at a time");
        h.check(&[(flush, "+OK\r\n")]);
        assert!(matches!(h.shared.core.picture.abandoned(), Some(Abandon::Flush(_))), "{flush}");
        let path = temp_path("flush");
        assert!(save_picture(&h.shared, &path, &[]).is_err());
        assert!(h.shared.core.picture.begin(usize::MAX), "{flush}");
        h.shared.core.picture.end();
    }
}

/// Goal: a large collection written during a save whose copy would pass the limit is not
/// copied at all: the picture is abandoned first.
#[test]
fn a_large_collection_past_the_limit_is_not_copied() {
    let mut h = filled();
    assert!(h.shared.core.picture.begin(1_000));
    h.check(&[("SADD big one-more", ":1\r\n")]);
    assert_eq!(h.shared.core.picture.abandoned(), Some(Abandon::Limit(1_000)));
    let peak = h.shared.core.picture.peak_bytes.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(peak, 0, "nothing was kept");
}
