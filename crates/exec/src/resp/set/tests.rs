//! Wire tables for the set commands (tests/conformance/test_redis_set.py checks the same
//! replies against redis-server 7.0).

use super::super::testkit::Harness;

/// Goal: SADD/SREM counts, integer sets sorted, mixed sets integers first, the key deleted
/// once empty, WRONGTYPE on a string.
#[test]
fn add_remove_members() {
    let mut h = Harness::new();
    h.check(&[
        ("SADD s 3 1 2 1", ":3\r\n"),
        ("SMEMBERS s", "*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n"),
        ("SADD s b 10 a", ":3\r\n"),
        ("SMEMBERS s", "*6\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n$2\r\n10\r\n$1\r\nb\r\n$1\r\na\r\n"),
        ("SCARD s", ":6\r\n"),
        ("SREM s a b x", ":2\r\n"),
        ("SMEMBERS s", "*4\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n$2\r\n10\r\n"),
        ("SISMEMBER s 10", ":1\r\n"),
        ("SISMEMBER s 010", ":0\r\n"),
        ("SMISMEMBER s 1 9 3", "*3\r\n:1\r\n:0\r\n:1\r\n"),
        ("SREM s 1 2 3 10", ":4\r\n"),
        ("EXISTS s", ":0\r\n"),
        ("SREM s 1", ":0\r\n"),
        ("SET str x", "+OK\r\n"),
        ("SADD str a", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("SCARD str", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("SMISMEMBER nokey a", "*1\r\n:0\r\n"),
        ("TYPE str", "+string\r\n"),
    ]);
    h.check3(&[("SMEMBERS nokey", "~0\r\n"), ("SADD t 2 1", ":2\r\n")]);
    h.check3(&[("SMEMBERS t", "~2\r\n$1\r\n1\r\n$1\r\n2\r\n"), ("SRANDMEMBER nokey", "_\r\n")]);
    h.check(&[
        ("TYPE t", "+set\r\n"),
        ("SADD", "-ERR wrong number of arguments for 'sadd' command\r\n"),
    ]);
}

/// Goal: SADD keeps the key's TTL; a STORE replaces any type and drops the TTL; an empty
/// STORE result deletes the destination.
#[test]
fn ttl_and_store() {
    let mut h = Harness::new();
    h.check(&[
        ("SADD s 1 2 3", ":3\r\n"),
        ("EXPIRE s 100", ":1\r\n"),
        ("SADD s 4", ":1\r\n"),
        ("TTL s", ":100\r\n"),
        ("SET d x EX 100", "+OK\r\n"),
        ("SUNIONSTORE d s", ":4\r\n"),
        ("TYPE d", "+set\r\n"),
        ("TTL d", ":-1\r\n"),
        ("SINTERSTORE d s nokey", ":0\r\n"),
        ("EXISTS d", ":0\r\n"),
        ("SADD e 2 3 9", ":3\r\n"),
        ("SINTERSTORE d s e", ":2\r\n"),
        ("SMEMBERS d", "*2\r\n$1\r\n2\r\n$1\r\n3\r\n"),
        ("SDIFFSTORE d s e", ":2\r\n"),
        ("SMEMBERS d", "*2\r\n$1\r\n1\r\n$1\r\n4\r\n"),
        ("SDIFFSTORE d s s", ":0\r\n"),
        ("EXISTS d", ":0\r\n"),
    ]);
}

/// Goal: the algebra commands' results and SINTERCARD's checks in Redis's order.
#[test]
fn algebra() {
    let mut h = Harness::new();
    h.check(&[
        ("SADD a 1 2 3 4", ":4\r\n"),
        ("SADD b 3 4 5", ":3\r\n"),
        ("SINTER a b", "*2\r\n$1\r\n3\r\n$1\r\n4\r\n"),
        ("SINTER a b nokey", "*0\r\n"),
        ("SUNION a b nokey", "*5\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n$1\r\n4\r\n$1\r\n5\r\n"),
        ("SDIFF a b", "*2\r\n$1\r\n1\r\n$1\r\n2\r\n"),
        ("SDIFF nokey a", "*0\r\n"),
        ("SINTERCARD 2 a b", ":2\r\n"),
        ("SINTERCARD 2 a b LIMIT 1", ":1\r\n"),
        ("SINTERCARD 2 a b LIMIT 0", ":2\r\n"),
        ("SINTERCARD 0 a", "-ERR numkeys should be greater than 0\r\n"),
        ("SINTERCARD x a", "-ERR numkeys should be greater than 0\r\n"),
        ("SINTERCARD 3 a b", "-ERR Number of keys can't be greater than number of args\r\n"),
        ("SINTERCARD 1 a LIMIT -1", "-ERR LIMIT can't be negative\r\n"),
        ("SINTERCARD 1 a LIMIT", "-ERR syntax error\r\n"),
        ("SET str x", "+OK\r\n"),
        ("SINTERCARD 1 str LIMIT x", "-ERR LIMIT can't be negative\r\n"),
        (
            "SINTER nokey str",
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
        ),
    ]);
    h.check3(&[("SUNION a", "~4\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n$1\r\n4\r\n")]);
}

/// Goal: SMOVE's order of checks and its effect on both keys.
#[test]
fn smove() {
    let mut h = Harness::new();
    h.check(&[
        ("SET str x", "+OK\r\n"),
        ("SMOVE nokey str a", ":0\r\n"),
        ("SADD s 1 2", ":2\r\n"),
        ("SMOVE s str 1", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("SMOVE s s 1", ":1\r\n"),
        ("SMOVE s s 9", ":0\r\n"),
        ("SMOVE s d 9", ":0\r\n"),
        ("SMOVE s d 1", ":1\r\n"),
        ("SMOVE s d 2", ":1\r\n"),
        ("EXISTS s", ":0\r\n"),
        ("SMEMBERS d", "*2\r\n$1\r\n1\r\n$1\r\n2\r\n"),
    ]);
}

/// Goal: SPOP and SRANDMEMBER argument errors, empty answers, and whole-set counts
/// (stored order); random picks are members and distinct where they must be.
#[test]
fn spop_and_srandmember() {
    let mut h = Harness::new();
    h.check(&[
        ("SPOP s -1", "-ERR value is out of range, must be positive\r\n"),
        ("SPOP s 1 2", "-ERR syntax error\r\n"),
        ("SPOP nokey", "$-1\r\n"),
        ("SPOP nokey 2", "*0\r\n"),
        ("SRANDMEMBER nokey 2", "*0\r\n"),
        ("SRANDMEMBER s x", "-ERR value is not an integer or out of range\r\n"),
        (
            "SRANDMEMBER s -9223372036854775808",
            "-ERR value is out of range, value must between -9223372036854775807 and \
             9223372036854775807\r\n",
        ),
        ("SADD s 5 -3 100000", ":3\r\n"),
        ("SRANDMEMBER s 0", "*0\r\n"),
        ("SRANDMEMBER s 10", "*3\r\n$2\r\n-3\r\n$1\r\n5\r\n$6\r\n100000\r\n"),
        (
            "SRANDMEMBER s -9223372036854775807",
            "-ERR SRANDMEMBER count is too large for one reply\r\n",
        ),
    ]);
    h.check3(&[("SPOP nokey 2", "~0\r\n"), ("SPOP s 0", "~0\r\n")]);
    let picks = h.run("SRANDMEMBER s -20");
    assert!(picks.starts_with("*20\r\n"));
    let distinct = h.run("SRANDMEMBER s 2");
    let lines: Vec<&str> = distinct.split("\r\n").collect();
    assert_eq!(lines[0], "*2");
    assert_ne!(lines[2], lines[4]);
    let popped = h.run("SPOP s");
    assert!(["$2\r\n-3\r\n", "$1\r\n5\r\n", "$6\r\n100000\r\n"].contains(&popped.as_str()));
    h.check(&[("SCARD s", ":2\r\n")]);
    let two = h.run("SPOP s 2");
    assert!(two.starts_with("*2\r\n"));
    h.check(&[("EXISTS s", ":0\r\n")]);
}

/// Goal: SSCAN's cursor rules (strtoul's), options, and the one-page answer.
#[test]
fn sscan() {
    let mut h = Harness::new();
    h.check(&[
        ("SSCAN nokey 0 COUNT 0", "*2\r\n$1\r\n0\r\n*0\r\n"),
        ("SADD s 10 2 1", ":3\r\n"),
        ("SSCAN s 0", "*2\r\n$1\r\n0\r\n*3\r\n$1\r\n1\r\n$1\r\n2\r\n$2\r\n10\r\n"),
        ("SSCAN s 0 MATCH 1*", "*2\r\n$1\r\n0\r\n*2\r\n$1\r\n1\r\n$2\r\n10\r\n"),
        ("SSCAN s -1 COUNT 1 MATCH 2", "*2\r\n$1\r\n0\r\n*1\r\n$1\r\n2\r\n"),
        ("SSCAN s x", "-ERR invalid cursor\r\n"),
        ("SSCAN s 18446744073709551616", "-ERR invalid cursor\r\n"),
        ("SSCAN s 0 COUNT 0", "-ERR syntax error\r\n"),
        ("SSCAN s 0 COUNT x", "-ERR value is not an integer or out of range\r\n"),
        ("SSCAN s 0 TYPE set", "-ERR syntax error\r\n"),
        ("SSCAN s 0 MATCH", "-ERR syntax error\r\n"),
    ]);
    // (The cursor's text itself: `values::scan::parse_cursor`'s tests.)
}

/// Goal: a set that would outgrow what the store holds (half of the harness's 8 MiB) is
/// refused with OOM and left unchanged.
#[test]
fn too_large_is_refused() {
    let mut h = Harness::new();
    let big = vec![b'x'; 2500 << 10];
    assert_eq!(h.run_args(&[b"SADD", b"s", &big]), b":1\r\n");
    let mut other = big.clone();
    other[0] = b'y';
    let refused = h.run_args(&[b"SADD", b"s", &other]);
    assert!(refused.starts_with(b"-OOM"), "{}", String::from_utf8_lossy(&refused));
    h.check(&[("SCARD s", ":1\r\n")]);
    assert_eq!(h.run_args(&[b"SADD", b"d", &other]), b":1\r\n");
    let refused = h.run_args(&[b"SMOVE", b"d", b"s", &other]);
    assert!(refused.starts_with(b"-OOM"));
    h.check(&[("SCARD s", ":1\r\n"), ("SCARD d", ":1\r\n")]);
    // A STORE whose result is over the limit leaves the destination as it was.
    h.check(&[("SADD out 1", ":1\r\n")]);
    let refused = h.run("SUNIONSTORE out s d");
    assert!(refused.starts_with("-OOM"), "{refused}");
    h.check(&[("SMEMBERS out", "*1\r\n$1\r\n1\r\n"), ("SINTERSTORE out s d", ":0\r\n")]);
    h.check(&[("EXISTS out", ":0\r\n")]);
}

/// Goal: a set past 32 KiB of encoding moves out of the store (SADD, SUNIONSTORE), keeps
/// its TTL through changes made in place, answers every read as before, is refused with
/// OOM, unchanged, past half the memory limit, and is released when its key expires.
#[test]
fn large_sets_keep_ttl_and_size_limit() {
    const OOM: &[u8] = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n";
    let mut h = Harness::new();
    let member = |i: usize| format!("member-{i:05}-{}", "x".repeat(100)).into_bytes();
    for i in 0..400 {
        h.run_args(&[b"SADD", b"big", &member(i)]);
    }
    assert_eq!(h.shared.owned.len(), 1, "44 KB of set moved out of the store");
    h.check(&[
        ("PEXPIRE big 5000", ":1\r\n"),
        ("SADD big 1 2 2 3", ":3\r\n"),
        ("SREM big 2 nope", ":1\r\n"),
        ("SISMEMBER big 3", ":1\r\n"),
        ("SMISMEMBER big 1 2", "*2\r\n:1\r\n:0\r\n"),
        ("SCARD big", ":402\r\n"),
        ("PTTL big", ":5000\r\n"),
        ("OBJECT ENCODING big", "$9\r\nhashtable\r\n"),
        ("SUNIONSTORE copy big", ":402\r\n"),
        ("SCARD copy", ":402\r\n"),
    ]);
    assert!(h.run("SINTER big copy").starts_with("*402\r\n"));
    assert_eq!(h.shared.owned.len(), 2, "the stored union is large too");
    let mib = vec![b'x'; 1 << 20];
    let mut sadd: Vec<Vec<u8>> = vec![b"SADD".to_vec(), b"big".to_vec()];
    sadd.extend((0..5u8).map(|i| [&mib[..], &[i]].concat()));
    let args: Vec<&[u8]> = sadd.iter().map(Vec::as_slice).collect();
    assert_eq!(h.run_args(&args), OOM);
    assert_eq!(h.run("SCARD big"), ":402\r\n");
    h.clock.advance_ms(5001);
    h.check(&[("SCARD big", ":0\r\n"), ("EXISTS big", ":0\r\n")]);
    h.shared.core.store.sweep_expired(1 << 20);
    assert_eq!(h.shared.owned.len(), 1, "released when its item expired; the copy stays");
}
