//! Command-level checks through the harness: the store's side of lists (TTL, expiry, the
//! item size, other types), which the wire transcripts in tests/conformance cannot reach
//! with a manual clock.

use crate::resp::testkit::Harness;

/// Goal: a change keeps the list's TTL, and the list expires with it.
#[test]
fn ttl_survives_changes_and_expires() {
    let mut h = Harness::new();
    h.check(&[
        ("RPUSH l a b c", ":3\r\n"),
        ("PEXPIRE l 5000", ":1\r\n"),
        ("LPUSH l z", ":4\r\n"),
        ("LSET l 0 y", "+OK\r\n"),
        ("RPOPLPUSH l l", "$1\r\nc\r\n"),
        ("PTTL l", ":5000\r\n"),
        ("LRANGE l 0 -1", "*4\r\n$1\r\nc\r\n$1\r\ny\r\n$1\r\na\r\n$1\r\nb\r\n"),
    ]);
    h.clock.advance_ms(5001);
    h.check(&[("LLEN l", ":0\r\n"), ("LPOP l", "$-1\r\n"), ("EXISTS l", ":0\r\n")]);
}

/// Goal: a list that would outgrow the size limit of a Redis value (half the memory
/// limit here: the harness has 8 MiB) is refused with OOM and left unchanged, and a
/// refused LMOVE leaves both lists as they were.
#[test]
fn size_refusal_changes_nothing() {
    const OOM: &[u8] = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n";
    let mut h = Harness::new();
    let mib = vec![b'x'; 1 << 20];
    assert_eq!(h.run("RPUSH l small"), ":1\r\n");
    assert_eq!(h.run_args(&[b"RPUSH", b"l", &mib, &mib, &mib, &mib, &mib]), OOM);
    assert_eq!(h.run("LRANGE l 0 -1"), "*1\r\n$5\r\nsmall\r\n");
    let part = vec![b'y'; 1_200_000];
    assert_eq!(h.run_args(&[b"RPUSH", b"full", &part, &part, &part]), b":3\r\n");
    assert_eq!(h.run_args(&[b"RPUSH", b"one", &part[..600_000]]), b":1\r\n");
    assert_eq!(h.run("PEXPIRE one 9000"), ":1\r\n");
    assert_eq!(h.run_args(&[b"LMOVE", b"one", b"full", b"LEFT", b"RIGHT"]), OOM);
    assert_eq!(h.run("LLEN one"), ":1\r\n");
    assert_eq!(h.run("PTTL one"), ":9000\r\n");
    assert_eq!(h.run("LLEN full"), ":3\r\n");
    assert_eq!(
        h.run("RPOPLPUSH full one"),
        format!("${}\r\n{}\r\n", part.len(), "y".repeat(part.len()))
    );
    assert_eq!(h.run("LLEN one"), ":2\r\n");
}

/// Goal: a list key is a list to the generic commands, and other types are WRONGTYPE to
/// the list commands without being changed.
#[test]
fn types_are_kept_apart() {
    let mut h = Harness::new();
    h.check(&[
        ("SET s v", "+OK\r\n"),
        ("RPUSH s x", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("GET s", "$1\r\nv\r\n"),
        ("RPUSH l x y", ":2\r\n"),
        ("TYPE l", "+list\r\n"),
        ("GET l", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("RENAME l m", "+OK\r\n"),
        ("LRANGE m 0 -1", "*2\r\n$1\r\nx\r\n$1\r\ny\r\n"),
        ("COPY m n", ":1\r\n"),
        ("LMPOP 2 l n RIGHT COUNT 5", "*2\r\n$1\r\nn\r\n*2\r\n$1\r\ny\r\n$1\r\nx\r\n"),
        ("EXISTS n", ":0\r\n"),
    ]);
    h.check3(&[("LPOP nokey 1", "_\r\n"), ("LMPOP 1 nokey LEFT", "_\r\n")]);
}
