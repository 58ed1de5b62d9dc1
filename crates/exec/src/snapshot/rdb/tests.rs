//! An RDB file written from one store and loaded into another, through the command path.

use super::*;
use crate::{
    resp::testkit::Harness,
    snapshot::testdata::{filled, temp_path},
};

fn dumps(h: &mut Harness) -> Vec<String> {
    ["s", "n", "l", "h", "z", "x", "big", "mc"]
        .iter()
        .map(|key| h.run(&format!("DUMP {key}")))
        .collect()
}

/// Goal: every kind, a TTL, another database and a memcached item's flags and CAS come
/// back from a saved file as they were.
#[test]
fn a_saved_file_loads_back() {
    let mut first = filled();
    let path = temp_path("round-trip");
    let saved = save_rdb(&first.shared, &path).unwrap();
    assert_eq!(saved.items, 9);
    let mut second = Harness::new();
    let loaded = load_rdb_file(&second.shared, &path).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!((loaded.items, loaded.skipped), (9, 0));
    assert_eq!(dumps(&mut second), dumps(&mut first));
    assert_eq!(second.run("PTTL n"), ":100000\r\n");
    second.check(&[("SELECT 3", "+OK\r\n"), ("GET in3", "$5\r\nthree\r\n")]);
    let item = |h: &Harness| {
        let reader = h.shared.core.store.reader();
        let item = reader.get(b"mc").unwrap();
        (item.flags(), item.cas())
    };
    assert_eq!(item(&second), item(&first));
}

/// Goal: a file with one byte changed loads nothing, saying why.
#[test]
fn a_damaged_file_loads_nothing() {
    let first = filled();
    let path = temp_path("damaged");
    save_rdb(&first.shared, &path).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x20;
    std::fs::write(&path, &bytes).unwrap();
    let mut second = Harness::new();
    let refused = load_rdb_file(&second.shared, &path).unwrap_err();
    let _ = std::fs::remove_file(&path);
    assert!(refused.contains("checksum") || refused.contains("bad data"), "{refused}");
    assert_eq!(second.run("DBSIZE"), ":0\r\n");
}

/// Goal: a file with a key in database 16 (of a Redis with more databases) is refused, as
/// Redis refuses it, before any key is loaded.
#[test]
fn a_database_past_the_sixteenth_is_refused() {
    let mut writer = FileWriter::new(Vec::new());
    writer.select_db(0, 1, 0).unwrap();
    writer.string_key(b"first", b"v", KeyHead::default()).unwrap();
    writer.select_db(16, 1, 0).unwrap();
    writer.string_key(b"k", b"v", KeyHead::default()).unwrap();
    let (bytes, _) = writer.finish().unwrap();
    let mut h = Harness::new();
    let refused = load_rdb(&h.shared, || Ok(&bytes[..])).unwrap_err();
    assert_eq!(refused, "a key in database 16; there are 16 databases");
    assert_eq!(h.run("DBSIZE"), ":0\r\n");
}
