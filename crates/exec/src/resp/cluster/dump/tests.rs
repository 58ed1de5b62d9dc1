//! DUMP and RESTORE through the command path, on a real store with a manual clock.

use crate::resp::testkit::Harness;
use values::rdb;

/// The payload in a bulk reply.
fn bulk_body(reply: &[u8]) -> Vec<u8> {
    let header_end = reply.iter().position(|&b| b == b'\n').expect("a bulk header") + 1;
    reply[header_end..reply.len() - 2].to_vec()
}

fn dump(h: &mut Harness, key: &str) -> Vec<u8> {
    bulk_body(&h.run_args(&[b"DUMP", key.as_bytes()]))
}

/// Goal: every kind, small and large (kept outside the store), comes back equal from its
/// own payload, with its TTL.
#[test]
fn round_trip_every_kind() {
    let mut h = Harness::new();
    let many: Vec<String> = (0..3000).map(|n| format!("member-{n}")).collect();
    let mut setup: Vec<Vec<String>> = vec![
        vec!["SET".into(), "s".into(), "hello".into()],
        vec!["RPUSH".into(), "l".into(), "a".into(), "1".into(), "a".into()],
        vec!["SADD".into(), "si".into(), "3".into(), "-1".into(), "200000".into()],
        vec!["HSET".into(), "h".into(), "f".into(), "v".into(), "n".into(), "7".into()],
        vec!["ZADD".into(), "z".into(), "1.5".into(), "a".into(), "-inf".into(), "b".into()],
    ];
    let mut big = |command: &str, key: &str, pairs: bool| {
        let mut line = vec![command.to_string(), key.to_string()];
        for member in &many {
            if pairs {
                line.push(if command == "ZADD" {
                    member.len().to_string()
                } else {
                    member.clone()
                });
            }
            line.push(member.clone());
        }
        setup.push(line);
    };
    big("RPUSH", "bl", false);
    big("SADD", "bs", false);
    big("HSET", "bh", true);
    big("ZADD", "bz", true);
    for line in &setup {
        let args: Vec<&[u8]> = line.iter().map(|a| a.as_bytes()).collect();
        h.run_args(&args);
    }
    let reads = [
        ("s", "GET"),
        ("l", "LRANGE 0 -1"),
        ("si", "SMEMBERS"),
        ("h", "HGETALL"),
        ("z", "ZRANGE 0 -1 WITHSCORES"),
        ("bl", "LRANGE 0 -1"),
        ("bs", "SCARD"),
        ("bh", "HGETALL"),
        ("bz", "ZRANGE 0 -1 WITHSCORES"),
    ];
    for (key, read) in reads {
        let (command, rest) = read.split_once(' ').unwrap_or((read, ""));
        let before = h.run(&format!("{command} {key} {rest}"));
        let payload = dump(&mut h, key);
        let copy = format!("{key}-copy");
        let restored = h.run_args(&[b"RESTORE", copy.as_bytes(), b"5000", &payload]);
        assert_eq!(restored, b"+OK\r\n", "{key}");
        assert_eq!(h.run(&format!("{command} {copy} {rest}")), before, "{key}");
        assert_eq!(h.run(&format!("PTTL {copy}")), ":5000\r\n");
        assert_eq!(dump(&mut h, &copy), payload, "{key}");
    }
}

/// Goal: RESTORE's errors, in Redis's order and words.
#[test]
fn restore_errors() {
    let mut h = Harness::new();
    h.run("SET k 12");
    let payload = dump(&mut h, "k");
    let restore = |h: &mut Harness, args: &[&[u8]]| {
        let mut line: Vec<&[u8]> = vec![b"RESTORE"];
        line.extend_from_slice(args);
        String::from_utf8_lossy(&h.run_args(&line)).into_owned()
    };
    let busy = "-BUSYKEY Target key name already exists.\r\n";
    assert_eq!(restore(&mut h, &[b"k", b"0", &payload]), busy);
    assert_eq!(restore(&mut h, &[b"k", b"0", &payload, b"bogus"]), "-ERR syntax error\r\n");
    assert_eq!(
        restore(&mut h, &[b"n", b"-1", &payload]),
        "-ERR Invalid TTL value, must be >= 0\r\n"
    );
    assert_eq!(
        restore(&mut h, &[b"n", b"x", &payload]),
        "-ERR value is not an integer or out of range\r\n"
    );
    let freq = "-ERR Invalid FREQ value, must be >= 0 and <= 255\r\n";
    assert_eq!(restore(&mut h, &[b"n", b"0", &payload, b"FREQ", b"256"]), freq);
    assert_eq!(
        restore(&mut h, &[b"n", b"0", b"garbage"]),
        "-ERR DUMP payload version or checksum are wrong\r\n"
    );
    let mut changed = payload.clone();
    changed[2] ^= 0x20;
    assert_eq!(
        restore(&mut h, &[b"n", b"0", &changed]),
        "-ERR DUMP payload version or checksum are wrong\r\n"
    );
    assert_eq!(restore(&mut h, &[b"k", b"0", &payload, b"REPLACE", b"IDLETIME", b"5"]), "+OK\r\n");
    // An absolute time already past: nothing is created, and REPLACE deletes.
    assert_eq!(restore(&mut h, &[b"n", b"1", &payload, b"ABSTTL"]), "+OK\r\n");
    assert_eq!(h.run("EXISTS n"), ":0\r\n");
    assert_eq!(restore(&mut h, &[b"k", b"1", &payload, b"ABSTTL", b"REPLACE"]), "+OK\r\n");
    assert_eq!(h.run("EXISTS k"), ":0\r\n");
    let at = (crate::resp::testkit::START_MS + 10_000).to_string();
    assert_eq!(restore(&mut h, &[b"k", at.as_bytes(), &payload, b"ABSTTL"]), "+OK\r\n");
    assert_eq!(h.run("PTTL k"), ":10000\r\n");
    assert_eq!(h.run("DUMP nosuch"), "$-1\r\n");
}

/// Goal: restored values are writes like any other: past the memory limit (the harness's
/// store holds 8 MiB) RESTORE answers -OOM and creates nothing; RESTORE-ASKING is RESTORE.
#[test]
fn restore_counts_against_memory() {
    let mut h = Harness::new();
    let big = vec![b'v'; 5 << 20];
    let value = rdb_payload(&rdb::Value::String(big));
    let oom = format!("-{}\r\n", proto_resp::error::OOM);
    assert_eq!(String::from_utf8_lossy(&h.run_args(&[b"RESTORE", b"s", b"0", &value])), oom);
    let elements = (0..50_000).map(|n| format!("{n:0100}").into_bytes()).collect();
    let list = rdb_payload(&rdb::Value::List(elements));
    assert_eq!(String::from_utf8_lossy(&h.run_args(&[b"RESTORE", b"l", b"0", &list])), oom);
    assert_eq!(h.run("DBSIZE"), ":0\r\n");
    let small = rdb_payload(&rdb::Value::Set(vec![b"a".to_vec()]));
    assert_eq!(h.run_args(&[b"RESTORE-ASKING", b"k", b"0", &small]), b"+OK\r\n");
    assert_eq!(h.run("SMEMBERS k"), "*1\r\n$1\r\na\r\n");
}

fn rdb_payload(value: &rdb::Value) -> Vec<u8> {
    rdb::dump(value)
}

/// Goal (found by fuzz target collection_decoders): a hash whose fields have all expired
/// after PERSIST kept its key dumps as no key, not as a payload of an empty hash (which
/// RESTORE, Spinel's and Redis's, refuses as "Bad data format").
#[test]
fn dump_of_a_hash_with_every_field_expired_is_nil() {
    let mut h = Harness::new();
    h.run("HSET h a 1 b 2");
    h.run("HPEXPIRE h 100 FIELDS 2 a b");
    assert_eq!(h.run("PERSIST h"), ":1\r\n");
    h.clock.advance_ms(100);
    assert_eq!(h.run("DUMP h"), "$-1\r\n");
    h.run("HSET g a 1 b 2");
    h.run("HPEXPIRE g 100 FIELDS 1 a");
    h.clock.advance_ms(100);
    let payload = dump(&mut h, "g");
    assert_eq!(rdb::load(&payload), Some(rdb::Value::Hash(vec![(b"b".to_vec(), b"2".to_vec())])));
}
