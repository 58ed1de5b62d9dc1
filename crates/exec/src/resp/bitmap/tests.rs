//! Wire tests of the family through `execute` (the conformance tests compare the same
//! replies with redis-server's).

use proto_resp::error::{OOM, WRONGTYPE};
use store::{Change, Expiry, ValueKind};

use super::super::testkit::Harness;

/// A key holding a collection, written straight into the store.
fn put_hash(h: &Harness, key: &[u8]) {
    h.shared
        .core
        .store
        .modify(key, |_| {
            let change = Change::WriteKind {
                value: vec![1, b'f', 1, b'v'],
                kind: ValueKind::Hash,
                expiry: Expiry::Never,
            };
            (change, ())
        })
        .unwrap();
}

/// Goal: every command of the family answers WRONGTYPE for a collection key, and the
/// key is left as it was (BITOP's destination is overwritten, as Redis's SET would).
#[test]
fn wrongtype_on_collections() {
    let mut h = Harness::new();
    put_hash(&h, b"h");
    let wrong = format!("-{WRONGTYPE}\r\n");
    for line in [
        "SETBIT h 1 1",
        "GETBIT h 1",
        "BITCOUNT h",
        "BITPOS h 1",
        "BITOP AND d h",
        "BITFIELD h GET u8 0",
        "BITFIELD h SET u8 0 1",
        "BITFIELD_RO h GET u8 0",
        "PFADD h a",
        "PFCOUNT h",
        "PFCOUNT h h",
        "PFMERGE h",
        "PFMERGE d h",
    ] {
        assert_eq!(h.run(line), wrong, "{line}");
    }
    h.check(&[("TYPE h", "+hash\r\n"), ("EXISTS d", ":0\r\n")]);
    h.check(&[("SET s x", "+OK\r\n"), ("BITOP OR h s", ":1\r\n"), ("TYPE h", "+string\r\n")]);
}

/// Goal: SETBIT and BITFIELD grow a value past memcached's item size (1 MiB here) but not
/// past half the memory limit (4 MiB here): that gets Redis's OOM error, checked before
/// anything is allocated, and leaves the value; offsets past 512 MB are Redis's offset
/// error.
#[test]
fn growth_limits() {
    let mut h = Harness::new();
    let oom = format!("-{OOM}\r\n");
    h.check(&[
        ("SETBIT k 7 1", ":0\r\n"),
        ("SETBIT k 16777216 1", ":0\r\n"),
        ("STRLEN k", ":2097153\r\n"),
        ("SETBIT k 40000000 1", &oom),
        ("BITFIELD k SET u8 40000000 1", &oom),
        ("STRLEN k", ":2097153\r\n"),
        ("GETBIT k 40000000", ":0\r\n"),
        ("SETBIT k 4294967295 1", &oom),
        ("SETBIT k 4294967296 1", "-ERR bit offset is not an integer or out of range\r\n"),
        ("SETBIT big 40000000 0", &oom),
        ("EXISTS big", ":0\r\n"),
        ("GETBIT k 16777216", ":1\r\n"),
    ]);
}

/// Goal: changes keep the key's TTL; BITOP's result has none (Redis's setKey).
#[test]
fn ttl_kept() {
    let mut h = Harness::new();
    h.check(&[
        ("SETBIT k 1 1", ":0\r\n"),
        ("EXPIRE k 100", ":1\r\n"),
        ("SETBIT k 100 1", ":0\r\n"),
        ("BITFIELD k INCRBY u8 0 1", "*1\r\n:65\r\n"),
        ("PFADD p a", ":1\r\n"),
        ("EXPIRE p 50", ":1\r\n"),
        ("PFADD p b", ":1\r\n"),
        ("PFCOUNT p", ":2\r\n"),
        ("TTL k", ":100\r\n"),
        ("TTL p", ":50\r\n"),
        ("BITOP NOT k k", ":13\r\n"),
        ("TTL k", ":-1\r\n"),
    ]);
}

/// Goal: RESP3 replies: BITFIELD's refused write is a RESP3 null.
#[test]
fn resp3_nulls() {
    let mut h = Harness::new();
    h.check3(&[
        ("BITFIELD k OVERFLOW FAIL INCRBY u2 0 7 GET u2 0", "*2\r\n_\r\n:0\r\n"),
        ("PFCOUNT nothing", ":0\r\n"),
    ]);
    h.check(&[("BITFIELD k OVERFLOW FAIL INCRBY u2 0 7", "*1\r\n$-1\r\n")]);
}

/// Goal: PFCOUNT writes the count into the header's cache and PFADD invalidates it,
/// byte for byte as Redis does.
#[test]
fn hll_cache_in_header() {
    let mut h = Harness::new();
    h.check(&[("PFADD p a b c", ":1\r\n")]);
    let raw = h.shared.core.store.get(b"p").unwrap().value;
    assert_eq!(&raw[..4], b"HYLL");
    assert_eq!(raw[15] & 0x80, 0x80, "invalid cache after PFADD");
    h.check(&[("PFCOUNT p", ":3\r\n")]);
    let raw = h.shared.core.store.get(b"p").unwrap().value;
    assert_eq!(&raw[8..16], &3u64.to_le_bytes());
    h.check(&[("PFADD p a", ":0\r\n"), ("PFCOUNT p", ":3\r\n")]);
}
