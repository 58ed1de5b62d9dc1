//! What the snapshot tests share: a store holding every kind (a large set, a TTL, a
//! stream with a group, another database, a memcached item with flags), and file names.

use store::{Expiry, Mode, StoreOptions};

use crate::resp::testkit::Harness;

pub(crate) fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("spinel-snapshot-{}-{name}", std::process::id()))
}

pub(crate) fn filled() -> Harness {
    let mut h = Harness::new();
    let many: Vec<String> = (0..3000).map(|n| format!("member-{n}")).collect();
    let mut sadd: Vec<&[u8]> = vec![b"SADD", b"big"];
    sadd.extend(many.iter().map(|m| m.as_bytes()));
    h.run_args(&sadd);
    h.check(&[
        ("SET s hello", "+OK\r\n"),
        ("SET n 12345 PX 100000", "+OK\r\n"),
        ("RPUSH l a 1 a", ":3\r\n"),
        ("HSET h f v n 7", ":2\r\n"),
        ("ZADD z 1.5 a -inf b", ":2\r\n"),
        ("XADD x 1-1 f v", "$3\r\n1-1\r\n"),
        ("XGROUP CREATE x g 0", "+OK\r\n"),
        ("SELECT 3", "+OK\r\n"),
        ("SET in3 three", "+OK\r\n"),
        ("SELECT 0", "+OK\r\n"),
    ]);
    let options = StoreOptions::default();
    h.shared.core.store.store_with(b"mc", b"item", 42, Expiry::Never, Mode::Set, options).unwrap();
    h
}
