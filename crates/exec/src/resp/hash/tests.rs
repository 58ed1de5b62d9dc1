//! Command-level tests on a store with a manual clock: field expiry as time passes, the
//! item size limit, and paged HSCAN. Wire transcripts against redis-server live in
//! tests/conformance/test_redis_hash.py.

use super::super::testkit::Harness;

const WRONGTYPE: &str = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";

/// Goal: an expired field is invisible to every command at once, the value is rewritten
/// without it, and a hash whose fields all expired reads as absent and is deleted.
#[test]
fn fields_expire_with_the_clock() {
    let mut h = Harness::new();
    h.check(&[
        ("HSET h a 1 b 2 c 3", ":3\r\n"),
        ("HPEXPIRE h 1000 FIELDS 1 a", "*1\r\n:1\r\n"),
        ("HEXPIRE h 5 FIELDS 1 b", "*1\r\n:1\r\n"),
        ("HTTL h FIELDS 3 a b c", "*3\r\n:1\r\n:5\r\n:-1\r\n"),
    ]);
    h.clock.advance_ms(1000);
    h.check(&[
        ("HGET h a", "$-1\r\n"),
        ("HEXISTS h a", ":0\r\n"),
        ("HLEN h", ":2\r\n"),
        ("HGETALL h", "*4\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n"),
        ("HTTL h FIELDS 2 a b", "*2\r\n:-2\r\n:4\r\n"),
        ("HSETNX h a new", ":1\r\n"),
        ("HTTL h FIELDS 1 a", "*1\r\n:-1\r\n"),
        ("HDEL h a c", ":2\r\n"),
    ]);
    h.clock.advance_ms(3999);
    h.check(&[("EXISTS h", ":1\r\n"), ("TYPE h", "+hash\r\n")]);
    h.clock.advance_ms(1);
    h.check(&[("EXISTS h", ":0\r\n"), ("TYPE h", "+none\r\n"), ("HLEN h", ":0\r\n")]);
}

/// Goal: when every field expires the key expires with the last of them (so every command
/// sees the hash gone), unless its own TTL comes first; EXPIRE and PERSIST on the key keep
/// their meaning across later field changes.
#[test]
fn key_expiry_follows_the_fields() {
    let mut h = Harness::new();
    h.check(&[
        ("HSET h a 1 b 2", ":2\r\n"),
        ("HEXPIRE h 100 FIELDS 1 a", "*1\r\n:1\r\n"),
        ("TTL h", ":-1\r\n"),
        ("HEXPIRE h 100 FIELDS 1 b", "*1\r\n:1\r\n"),
        ("TTL h", ":100\r\n"),
        ("EXPIRE h 50", ":1\r\n"),
        ("HEXPIRE h 200 FIELDS 1 a", "*1\r\n:1\r\n"),
        ("TTL h", ":50\r\n"),
        ("PERSIST h", ":1\r\n"),
        ("HPERSIST h FIELDS 1 b", "*1\r\n:1\r\n"),
        ("TTL h", ":-1\r\n"),
        ("HEXPIRE h 30 FIELDS 1 b", "*1\r\n:1\r\n"),
        ("TTL h", ":200\r\n"),
        ("HSET h c 3", ":1\r\n"),
        ("TTL h", ":-1\r\n"),
        ("HDEL h c", ":1\r\n"),
        ("TTL h", ":200\r\n"),
        ("EXPIRE h 300", ":1\r\n"),
        ("HSETEX h EX 10 FIELDS 1 a 1", ":1\r\n"),
        ("TTL h", ":30\r\n"),
        ("RENAME h g", "+OK\r\n"),
        ("HPERSIST g FIELDS 1 a", "*1\r\n:1\r\n"),
        ("TTL g", ":300\r\n"),
    ]);
    h.clock.advance_ms(30_000);
    h.check(&[("HKEYS g", "*1\r\n$1\r\na\r\n"), ("TTL g", ":270\r\n")]);
    h.clock.advance_ms(270_000);
    h.check(&[("EXISTS g", ":0\r\n")]);
}

/// Goal: HINCRBY and HINCRBYFLOAT keep a field's expiry; HSET drops it; HSETEX KEEPTTL
/// keeps it.
#[test]
fn which_writes_keep_a_field_ttl() {
    let mut h = Harness::new();
    h.check(&[
        ("HSETEX h EX 100 FIELDS 2 n 1 f 1.5", ":1\r\n"),
        ("HINCRBY h n 2", ":3\r\n"),
        ("HINCRBYFLOAT h f 1", "$3\r\n2.5\r\n"),
        ("HTTL h FIELDS 2 n f", "*2\r\n:100\r\n:100\r\n"),
        ("HSETEX h KEEPTTL FIELDS 1 n 7", ":1\r\n"),
        ("HSET h f 0", ":0\r\n"),
        ("HTTL h FIELDS 2 n f", "*2\r\n:100\r\n:-1\r\n"),
        ("HEXPIRETIME h FIELDS 1 n", "*1\r\n:1700000100\r\n"),
        ("HPEXPIRETIME h FIELDS 1 n", "*1\r\n:1700000100000\r\n"),
    ]);
    h.clock.advance_ms(99_001);
    h.check(&[
        ("HTTL h FIELDS 1 n", "*1\r\n:1\r\n"),
        ("HPTTL h FIELDS 1 n", "*1\r\n:999\r\n"),
        ("HGETEX h PERSIST FIELDS 1 n", "*1\r\n$1\r\n7\r\n"),
        ("HPERSIST h FIELDS 2 n f", "*2\r\n:-1\r\n:-1\r\n"),
    ]);
}

/// Goal: a change that would make the hash larger than the store holds (half the memory
/// limit, 8 MiB here) is refused with Redis's OOM error and leaves the hash as it was.
#[test]
fn item_size_limit() {
    let mut h = Harness::new();
    let big = vec![b'v'; 2500 * 1024];
    assert_eq!(h.run_args(&[b"HSET", b"h", b"a", &big]), b":1\r\n");
    let oom = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n";
    assert_eq!(h.run_args(&[b"HSET", b"h", b"b", &big]), oom);
    assert_eq!(h.run_args(&[b"HSETEX", b"h", b"FIELDS", b"1", b"b", &big]), oom);
    h.check(&[("HLEN h", ":1\r\n"), ("HSTRLEN h a", ":2560000\r\n")]);
}

/// Goal: a big hash is scanned in pages whose cursors end at 0, every field once; a small
/// one in a single page, filtered by MATCH, without values under NOVALUES.
#[test]
fn hscan_pages() {
    let mut h = Harness::new();
    for i in 0..300 {
        h.run(&format!("HSET big f{i} {i}"));
    }
    let (mut cursor, mut seen, mut pages) = ("0".to_owned(), Vec::new(), 0);
    loop {
        let reply = h.run(&format!("HSCAN big {cursor} COUNT 50 NOVALUES"));
        let lines: Vec<&str> = reply.split("\r\n").collect();
        cursor = lines[2].to_owned();
        seen.extend(lines[4..].iter().filter(|l| l.starts_with('f')).map(|l| l.to_string()));
        pages += 1;
        if cursor == "0" {
            break;
        }
    }
    seen.sort();
    seen.dedup();
    assert_eq!((seen.len(), (6..=8).contains(&pages)), (300, true), "{pages} pages");
    h.check(&[
        ("HSET s ab 1 ac 2 b 3", ":3\r\n"),
        (
            "HSCAN s 0 MATCH a* COUNT 1",
            "*2\r\n$1\r\n0\r\n*4\r\n$2\r\nab\r\n$1\r\n1\r\n$2\r\nac\r\n$1\r\n2\r\n",
        ),
        ("HSCAN s 0 NOVALUES MATCH b", "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nb\r\n"),
    ]);
}

/// Goal: every command answers WRONGTYPE on a string key, after the checks Redis makes
/// before it looks the key up.
#[test]
fn wrong_type_and_check_order() {
    let mut h = Harness::new();
    h.check(&[("SET s v", "+OK\r\n")]);
    for line in [
        "HSET s a 1",
        "HSETNX s a 1",
        "HGET s a",
        "HMGET s a",
        "HGETALL s",
        "HDEL s a",
        "HLEN s",
        "HSTRLEN s a",
        "HINCRBY s a 1",
        "HRANDFIELD s 1",
        "HSCAN s 0 BAD",
        "HEXPIRE s x FIELDS 1 a",
        "HTTL s BAD 1 a",
        "HPERSIST s FIELDS 0 a",
        "HGETDEL s FIELDS 1 a",
        "HGETEX s EX x FIELDS 1 a",
        "HSETEX s FIELDS 1 a 1",
    ] {
        assert_eq!(h.run(line), WRONGTYPE, "{line}");
    }
    h.check(&[
        ("HINCRBY s a x", "-ERR value is not an integer or out of range\r\n"),
        ("HINCRBYFLOAT s a x", "-ERR value is not a valid float\r\n"),
        ("HRANDFIELD s x", "-ERR value is not an integer or out of range\r\n"),
        ("HSCAN s x", "-ERR invalid cursor\r\n"),
        ("HSETEX s FIELDS 0 a 1", "-ERR invalid number of fields\r\n"),
    ]);
}

/// Goal: commands naming many fields (each located once, by a map of the names) answer
/// per name in order, duplicates seeing the effect of the earlier ones.
#[test]
fn many_fields_in_one_command() {
    let mut h = Harness::new();
    let names: Vec<Vec<u8>> = (0..5000).map(|i| format!("f{i}").into_bytes()).collect();
    let mut hset: Vec<&[u8]> = vec![b"HSET", b"h"];
    names.iter().for_each(|name| hset.extend([&name[..], b"v"]));
    assert_eq!(h.run_args(&hset), b":5000\r\n");
    let mut hmget: Vec<&[u8]> = vec![b"HMGET", b"h", b"nope"];
    hmget.extend(names.iter().map(|name| &name[..]));
    let reply = h.run_args(&hmget);
    assert!(reply.starts_with(b"*5001\r\n$-1\r\n$1\r\nv\r\n"));
    assert_eq!(reply.len(), b"*5001\r\n$-1\r\n".len() + 5000 * b"$1\r\nv\r\n".len());
    h.check(&[
        ("HSET h x 1 x 2", ":1\r\n"),
        ("HGETDEL h FIELDS 3 x x f0", "*3\r\n$1\r\n2\r\n$-1\r\n$1\r\nv\r\n"),
        ("HEXPIRE h 0 FIELDS 3 f1 f1 x", "*3\r\n:2\r\n:-2\r\n:-2\r\n"),
        ("HEXPIRE h 9 FIELDS 2 f2 f2", "*2\r\n:1\r\n:1\r\n"),
        ("HPERSIST h FIELDS 2 f2 f2", "*2\r\n:1\r\n:-1\r\n"),
        ("HSETEX h PX 0 FIELDS 2 f3 a f3 b", ":1\r\n"),
        ("HLEN h", ":4997\r\n"),
    ]);
    let mut hdel: Vec<&[u8]> = vec![b"HDEL", b"h"];
    hdel.extend(names.iter().chain(names.iter()).map(|name| &name[..]));
    assert_eq!(h.run_args(&hdel), b":4997\r\n");
    h.check(&[("EXISTS h", ":0\r\n")]);
}

/// Goal: a hash past 32 KiB of encoding moves out of the store, keeps its TTL through
/// changes made in place, is refused with OOM, unchanged, when a field would take it past
/// half the memory limit, and is released when its key expires.
#[test]
fn large_hashes_keep_ttl_and_size_limit() {
    const OOM: &[u8] = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n";
    let mut h = Harness::new();
    let value = vec![b'v'; 1000];
    for i in 0..40 {
        h.run_args(&[b"HSET", b"big", format!("f{i}").as_bytes(), &value]);
    }
    assert_eq!(h.shared.owned.len(), 1, "40 KB of hash moved out of the store");
    h.check(&[
        ("PEXPIRE big 5000", ":1\r\n"),
        ("HSET big a 1 b 2", ":2\r\n"),
        ("HINCRBY big a 5", ":6\r\n"),
        ("HDEL big b f0 nope", ":2\r\n"),
        ("HSETNX big a 9", ":0\r\n"),
        ("HLEN big", ":40\r\n"),
        ("HGET big a", "$1\r\n6\r\n"),
        ("HSTRLEN big f1", ":1000\r\n"),
        ("PTTL big", ":5000\r\n"),
        ("OBJECT ENCODING big", "$9\r\nhashtable\r\n"),
    ]);
    let mib = vec![b'x'; 1 << 20];
    let pairs: Vec<&[u8]> = [&b"HSET"[..], b"big"]
        .into_iter()
        .chain((0..5).flat_map(|_| [&b"m"[..], &mib[..]]))
        .collect();
    assert_eq!(h.run_args(&pairs), OOM);
    assert_eq!(h.run("HLEN big"), ":40\r\n");
    assert_eq!(h.run("HEXISTS big m"), ":0\r\n");
    h.clock.advance_ms(5001);
    h.check(&[("HLEN big", ":0\r\n"), ("EXISTS big", ":0\r\n")]);
    h.shared.core.store.sweep_expired(1 << 20);
    assert_eq!(h.shared.owned.len(), 0, "released when its item expired");
}
