//! Wire tables for the string commands.

use super::{super::testkit::Harness, *};

/// Goal: GET and SET with every option, in RESP2. Method: wire table.
#[test]
fn set_and_get() {
    let mut h = Harness::new();
    h.check(&[
        ("GET k", "$-1\r\n"),
        ("SET k v", "+OK\r\n"),
        ("GET k", "$1\r\nv\r\n"),
        ("SET k v2 NX", "$-1\r\n"),
        ("SET n v NX", "+OK\r\n"),
        ("SET missing v XX", "$-1\r\n"),
        ("SET k v3 XX", "+OK\r\n"),
        ("SET k v4 GET", "$2\r\nv3\r\n"),
        ("SET fresh v GET", "$-1\r\n"),
        ("SET k v5 NX GET", "$2\r\nv4\r\n"),
        ("GET k", "$2\r\nv4\r\n"),
        ("SET k v6 xx get", "$2\r\nv4\r\n"),
        ("SET k \"\"", "+OK\r\n"),
        ("GET k", "$0\r\n\r\n"),
    ]);
    h.check3(&[("GET nothing", "_\r\n"), ("SET k v NX", "_\r\n"), ("SET k w GET", "$0\r\n\r\n")]);
}

/// Goal: Redis's validation of SET's options, errors in Redis's order.
#[test]
fn set_option_errors() {
    let mut h = Harness::new();
    let syntax = "-ERR syntax error\r\n";
    let not_int = "-ERR value is not an integer or out of range\r\n";
    let invalid = "-ERR invalid expire time in 'set' command\r\n";
    h.check(&[
        ("SET k v NX XX", syntax),
        ("SET k v XX NX", syntax),
        ("SET k v EX 10 PX 100", syntax),
        ("SET k v EX 10 KEEPTTL", syntax),
        ("SET k v KEEPTTL EX 10", syntax),
        ("SET k v EXAT 10 PXAT 100", syntax),
        ("SET k v EX", syntax),
        ("SET k v PERSIST", syntax),
        ("SET k v FOO", syntax),
        ("SET k v EX x NX XX", syntax),
        ("SET k v EX x", not_int),
        ("SET k v EX 0", invalid),
        ("SET k v PX -5", invalid),
        ("SET k v EX 9223372036854775807", invalid),
        ("SET k v PX 9223372036854775807", invalid),
        ("SET k v EX 10 EX 20", "+OK\r\n"),
        ("SET k v NX NX", "$-1\r\n"),
        ("SET k v KEEPTTL KEEPTTL", "+OK\r\n"),
    ]);
    assert_eq!(h.shared.core.totals().protocol_errors, 15);
}

/// Goal: SET's expiry options, KEEPTTL, and that a plain SET clears the TTL.
#[test]
fn set_expiry_options() {
    let mut h = Harness::new();
    let now_secs = super::super::testkit::START_MS / 1000;
    h.check(&[
        ("SET k v EX 100", "+OK\r\n"),
        ("TTL k", ":100\r\n"),
        ("SET k v PX 1500", "+OK\r\n"),
        ("PTTL k", ":1500\r\n"),
        ("SET k v2 KEEPTTL", "+OK\r\n"),
        ("PTTL k", ":1500\r\n"),
        ("SET k v3", "+OK\r\n"),
        ("TTL k", ":-1\r\n"),
    ]);
    h.check(&[
        (&format!("SET k v EXAT {}", now_secs + 50), "+OK\r\n"),
        ("TTL k", ":50\r\n"),
        (&format!("SET k v PXAT {}", now_secs * 1000 + 70), "+OK\r\n"),
        ("PTTL k", ":70\r\n"),
        // A time in the past: the key is gone at once, but SET still says OK.
        (&format!("SET k v EXAT {}", now_secs - 1), "+OK\r\n"),
        ("GET k", "$-1\r\n"),
        ("SET k v EX 1", "+OK\r\n"),
    ]);
    h.clock.advance_ms(1000);
    h.check(&[("GET k", "$-1\r\n"), ("SET k v KEEPTTL", "+OK\r\n"), ("TTL k", ":-1\r\n")]);
}

#[test]
fn setnx_setex_psetex_getset() {
    let mut h = Harness::new();
    h.check(&[
        ("SETNX k a", ":1\r\n"),
        ("SETNX k b", ":0\r\n"),
        ("GET k", "$1\r\na\r\n"),
        ("SETEX k 10 b", "+OK\r\n"),
        ("TTL k", ":10\r\n"),
        ("PSETEX k 2500 c", "+OK\r\n"),
        ("PTTL k", ":2500\r\n"),
        ("SETEX k 0 v", "-ERR invalid expire time in 'setex' command\r\n"),
        ("PSETEX k -1 v", "-ERR invalid expire time in 'psetex' command\r\n"),
        ("SETEX k x v", "-ERR value is not an integer or out of range\r\n"),
        ("GETSET k d", "$1\r\nc\r\n"),
        ("TTL k", ":-1\r\n"),
        ("GETSET new e", "$-1\r\n"),
        ("GET new", "$1\r\ne\r\n"),
    ]);
}

#[test]
fn getdel_and_getex() {
    let mut h = Harness::new();
    h.check(&[
        ("SET k v", "+OK\r\n"),
        ("GETDEL k", "$1\r\nv\r\n"),
        ("GETDEL k", "$-1\r\n"),
        ("GETEX k", "$-1\r\n"),
        ("GETEX k EX 10", "$-1\r\n"),
        ("SET k v", "+OK\r\n"),
        ("GETEX k", "$1\r\nv\r\n"),
        ("GETEX k EX 10", "$1\r\nv\r\n"),
        ("TTL k", ":10\r\n"),
        ("GETEX k PX 500", "$1\r\nv\r\n"),
        ("PTTL k", ":500\r\n"),
        ("GETEX k PERSIST", "$1\r\nv\r\n"),
        ("TTL k", ":-1\r\n"),
        ("GETEX k EXAT 1", "$1\r\nv\r\n"),
        ("GET k", "$-1\r\n"),
        ("SET k v", "+OK\r\n"),
        ("GETEX k EX 0", "-ERR invalid expire time in 'getex' command\r\n"),
        ("GETEX k EX 10 PERSIST", "-ERR syntax error\r\n"),
        ("GETEX k NX", "-ERR syntax error\r\n"),
        ("GETEX k KEEPTTL", "-ERR syntax error\r\n"),
        ("GETEX k PX", "-ERR syntax error\r\n"),
        ("GETEX k PXAT 1700000000000500", "$1\r\nv\r\n"),
    ]);
    h.check3(&[("GETDEL nothing", "_\r\n"), ("GETEX nothing PERSIST", "_\r\n")]);
}

#[test]
fn mget_mset_msetnx() {
    let mut h = Harness::new();
    h.check(&[
        ("MSET a 1 b 2", "+OK\r\n"),
        ("MGET a b c", "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$-1\r\n"),
        ("MSET a 1 b", "-ERR wrong number of arguments for 'mset' command\r\n"),
        ("MSETNX a 1 b", "-ERR wrong number of arguments for 'msetnx' command\r\n"),
        ("MSETNX c 3 a 9", ":0\r\n"),
        ("GET c", "$-1\r\n"),
        ("MSETNX c 3 d 4", ":1\r\n"),
        ("MGET c d", "*2\r\n$1\r\n3\r\n$1\r\n4\r\n"),
    ]);
    h.check3(&[("MGET a zz", "*2\r\n$1\r\n1\r\n_\r\n")]);
    let totals = h.shared.core.totals();
    assert_eq!((totals.get_hits, totals.get_misses), (5, 3));
}

#[test]
fn append_strlen_ranges() {
    let mut h = Harness::new();
    h.check(&[
        ("APPEND k Hello", ":5\r\n"),
        ("APPEND k \" World\"", ":11\r\n"),
        ("STRLEN k", ":11\r\n"),
        ("STRLEN none", ":0\r\n"),
        ("GETRANGE k 0 3", "$4\r\nHell\r\n"),
        ("GETRANGE k -3 -1", "$3\r\nrld\r\n"),
        ("GETRANGE k 0 -1", "$11\r\nHello World\r\n"),
        ("GETRANGE k 10 100", "$1\r\nd\r\n"),
        ("GETRANGE k 5 2", "$0\r\n\r\n"),
        ("GETRANGE k -1 -5", "$0\r\n\r\n"),
        ("GETRANGE k -100 1", "$2\r\nHe\r\n"),
        ("GETRANGE none 0 -1", "$0\r\n\r\n"),
        ("GETRANGE k a 1", "-ERR value is not an integer or out of range\r\n"),
        ("SETRANGE k 6 Redis", ":11\r\n"),
        ("GET k", "$11\r\nHello Redis\r\n"),
        ("SETRANGE pad 3 x", ":4\r\n"),
        ("SETRANGE empty 3 \"\"", ":0\r\n"),
        ("EXISTS empty", ":0\r\n"),
        ("SETRANGE k 0 \"\"", ":11\r\n"),
        ("SETRANGE k -1 x", "-ERR offset is out of range\r\n"),
        ("SETRANGE k x x", "-ERR value is not an integer or out of range\r\n"),
        ("SETRANGE k 536870911 xx", &format!("-{STRING_TOO_LONG}\r\n")),
        ("SETRANGE k 2000000 x", ":2000001\r\n"),
        ("SETRANGE k 5000000 x", &format!("-{}\r\n", error::OOM)),
        ("SET k \"Hello World\"", "+OK\r\n"),
    ]);
    assert_eq!(h.run_raw(b"GET pad\r\n"), b"$4\r\n\0\0\0x\r\n");
    // APPEND and SETRANGE keep the TTL.
    h.check(&[("EXPIRE k 100", ":1\r\n"), ("APPEND k !", ":12\r\n"), ("TTL k", ":100\r\n")]);
    h.check(&[("SETRANGE k 0 J", ":12\r\n"), ("TTL k", ":100\r\n")]);
}

/// Goal: values past memcached's item size are stored; one that cannot fit in half the
/// memory limit (8 MiB here) is refused with Redis's OOM error and changes nothing.
#[test]
fn too_large_values() {
    let mut h = Harness::new();
    let big = vec![b'x'; 2400 * 1024];
    let bigger = vec![b'x'; 4200 * 1024];
    let too_long = format!("-{}\r\n", error::OOM).into_bytes();
    assert_eq!(h.run_args(&[b"SET", b"k", &big]), b"+OK\r\n");
    assert_eq!(h.run_args(&[b"APPEND", b"k", &big]), too_long);
    assert_eq!(h.run_args(&[b"SET", b"k", &bigger]), too_long);
    assert_eq!(h.run_args(&[b"MSET", b"a", b"1", b"b", &bigger]), too_long);
    assert_eq!(h.run("EXISTS a"), ":0\r\n");
    assert_eq!(h.run("STRLEN k"), ":2457600\r\n");
}

/// Goal: the commands that share memcached's cores treat a memcached item as memcached
/// would: APPEND keeps its flags and expiry, GETEX keeps its flags and CAS unique (a
/// touch), DEL counts as a delete. Method: write over the store, read back the item.
#[test]
fn shared_cores_keep_memcached_state() {
    let mut h = Harness::new();
    let in_100_secs = Expiry::AtMs(super::super::testkit::START_MS + 100_000);
    h.shared.core.store.store(b"mc", b"ab", 7, in_100_secs, Mode::Set).unwrap();
    h.check(&[("APPEND mc cd", ":4\r\n"), ("TTL mc", ":100\r\n")]);
    let item = h.shared.core.store.get(b"mc").unwrap();
    assert_eq!((item.value.as_slice(), item.flags), (&b"abcd"[..], 7));
    h.check(&[("GETEX mc EX 50", "$4\r\nabcd\r\n"), ("TTL mc", ":50\r\n")]);
    let touched = h.shared.core.store.get(b"mc").unwrap();
    assert_eq!((touched.flags, touched.cas), (7, item.cas));
    h.check(&[("GETEX mc PXAT 1", "$4\r\nabcd\r\n"), ("DBSIZE", ":0\r\n")]);
    h.check(&[("APPEND fresh x", ":1\r\n"), ("TTL fresh", ":-1\r\n"), ("DEL fresh", ":1\r\n")]);
    let totals = h.shared.core.totals();
    assert_eq!((totals.delete_hits, totals.get_hits, totals.cmd_touch), (1, 2, 0));
}

/// Goal: in a store large enough for reads to look ahead, MGET answers as the same keys
/// read one by one with GET (hits, misses, repeats), in RESP2 and RESP3 alike.
#[test]
fn mget_reading_ahead_is_gets_in_a_row() {
    let mut h = Harness::new();
    let value = vec![b'v'; 1000];
    for i in 0..4_600 {
        let key = format!("k{i}");
        assert_eq!(h.run_args(&[b"SET", key.as_bytes(), &value]), b"+OK\r\n");
    }
    assert!(h.shared.core.store.reads_ahead(), "the store is too small to read ahead");
    let keys: Vec<String> = (0..70)
        .map(|i| match i % 5 {
            0 => format!("missing{i}"),
            1 => "k3".to_string(),
            _ => format!("k{}", i * 61),
        })
        .collect();
    let mut want = b"*70\r\n".to_vec();
    for key in &keys {
        want.extend(h.run_args(&[b"GET", key.as_bytes()]));
    }
    let mut mget: Vec<&[u8]> = vec![b"MGET"];
    mget.extend(keys.iter().map(|key| key.as_bytes()));
    assert_eq!(String::from_utf8_lossy(&h.run_args(&mget)), String::from_utf8_lossy(&want));
}

/// Goal: GET and MGET lend large values only where the reply stays where it is written
/// (`Ctx::lends`): at the top level with replies on, not under CLIENT REPLY SKIP or OFF,
/// not inside EXEC or a script, and never a small value. Method: lending opened around each
/// command as the worker opens it; what was lent is placed back, so every reply reads as
/// if copied.
#[test]
fn get_and_mget_lend_only_where_the_reply_stays() {
    let mut h = Harness::new();
    let big = vec![b'v'; store::loans::VALUE_BYTES_MIN];
    h.run_args(&[b"SET", b"big", &big]);
    h.run("SET small v");
    let bulk = [format!("${}\r\n", big.len()).into_bytes(), big.clone(), b"\r\n".to_vec()].concat();
    // A command run with lending open: the bytes it lent, and its reply with them placed.
    let run = |h: &mut Harness, args: &[&[u8]]| -> (usize, Vec<u8>) {
        crate::memcache::tests::lending(|| h.run_args(args))
    };
    assert_eq!(run(&mut h, &[b"GET", b"big"]), (big.len(), bulk.clone()));
    let both = [b"*2\r\n".to_vec(), bulk.clone(), b"$1\r\nv\r\n".to_vec()].concat();
    assert_eq!(run(&mut h, &[b"MGET", b"big", b"small"]), (big.len(), both));
    assert_eq!(run(&mut h, &[b"GET", b"small"]), (0, b"$1\r\nv\r\n".to_vec()));
    assert_eq!(run(&mut h, &[b"CLIENT", b"REPLY", b"SKIP"]), (0, Vec::new()));
    assert_eq!(run(&mut h, &[b"GET", b"big"]), (0, Vec::new()));
    assert_eq!(run(&mut h, &[b"MGET", b"big"]).0, big.len());
    assert_eq!(run(&mut h, &[b"CLIENT", b"REPLY", b"OFF"]), (0, Vec::new()));
    assert_eq!(run(&mut h, &[b"MGET", b"big", b"small"]), (0, Vec::new()));
    assert_eq!(run(&mut h, &[b"CLIENT", b"REPLY", b"ON"]), (0, b"+OK\r\n".to_vec()));
    assert_eq!(run(&mut h, &[b"MULTI"]).0, 0);
    assert_eq!(run(&mut h, &[b"GET", b"big"]), (0, b"+QUEUED\r\n".to_vec()));
    let exec = [b"*1\r\n".to_vec(), bulk.clone()].concat();
    assert_eq!(run(&mut h, &[b"EXEC"]), (0, exec));
    let script = b"return redis.call('GET', KEYS[1])";
    assert_eq!(run(&mut h, &[b"EVAL", script, b"1", b"big"]), (0, bulk));
}
