//! Command-level tests of streams on a store with a manual clock: entries, trimming,
//! groups and their pending lists as time passes, hostile arguments. Wire transcripts
//! checked against redis-server live in tests/conformance/test_streams.py.

use super::super::testkit::Harness;

/// Goal: XADD's ID rules at the edges (0-0, explicit, `ms-*`, the last possible ID),
/// byte for byte as Redis 7.0 answers them.
#[test]
fn ids_at_the_edges() {
    let mut h = Harness::new();
    h.check(&[
        ("XADD s 0-0 a 1", "-ERR The ID specified in XADD must be greater than 0-0\r\n"),
        ("XADD s 0-* a 1", "$3\r\n0-1\r\n"),
        (
            "XADD s 0-1 a 1",
            "-ERR The ID specified in XADD is equal or smaller than the target stream top item\r\n",
        ),
        (
            "XADD s 18446744073709551615-18446744073709551615 a 1",
            "$41\r\n18446744073709551615-18446744073709551615\r\n",
        ),
        (
            "XADD s * a 1",
            "-ERR The stream has exhausted the last possible ID, unable to add more items\r\n",
        ),
        ("XADD s a", "-ERR wrong number of arguments for 'xadd' command\r\n"),
        ("XLEN s", ":2\r\n"),
        (
            "XRANGE s (18446744073709551615-18446744073709551615 +",
            "-ERR invalid start ID for the interval\r\n",
        ),
        ("XRANGE s - (0-0", "-ERR invalid end ID for the interval\r\n"),
        ("TYPE s", "+stream\r\n"),
        ("OBJECT ENCODING s", "$6\r\nstream\r\n"),
        ("SET s x", "+OK\r\n"),
        ("XLEN s", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
    ]);
}

/// Goal: hostile counts and limits answer as Redis does, without a panic.
#[test]
fn hostile_counts() {
    let mut h = Harness::new();
    h.check(&[
        ("XADD s MAXLEN ~ 1 LIMIT 9223372036854775807 1-1 a 1", "$3\r\n1-1\r\n"),
        (
            "XADD s MAXLEN 9223372036854775808 * a 1",
            "-ERR value is not an integer or out of range\r\n",
        ),
        (
            "XRANGE s - + COUNT 9223372036854775807",
            "*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n",
        ),
        ("XRANGE s - + COUNT -9223372036854775808", "*-1\r\n"),
        (
            "XREAD COUNT -5 STREAMS s 0",
            "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n",
        ),
        (
            "XTRIM s MAXLEN = 0 LIMIT 5",
            "-ERR syntax error, LIMIT cannot be used without the special ~ option\r\n",
        ),
        ("XGROUP CREATE s g 0", "+OK\r\n"),
        (
            "XAUTOCLAIM s g c 0 0 COUNT 576460752303423487",
            "-ERR Insufficient memory, failed allocating transient memory, COUNT too high.\r\n",
        ),
        ("XAUTOCLAIM s g c 0 0 COUNT 576460752303423488", "-ERR COUNT must be > 0\r\n"),
        ("XPENDING s g - + 9223372036854775807", "*0\r\n"),
    ]);
}

/// Goal: a pending entry's idle time and XCLAIM's min-idle-time follow the clock.
#[test]
fn pending_entries_age() {
    let mut h = Harness::new();
    h.check(&[
        ("XADD s 1-1 a 1", "$3\r\n1-1\r\n"),
        ("XGROUP CREATE s g 0", "+OK\r\n"),
        (
            "XREADGROUP GROUP g alice STREAMS s >",
            "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n",
        ),
        ("XCLAIM s g bob 1000 1-1 JUSTID", "*0\r\n"),
    ]);
    h.clock.advance_ms(1500);
    h.check(&[
        ("XPENDING s g IDLE 1000 - + 10", "*1\r\n*4\r\n$3\r\n1-1\r\n$5\r\nalice\r\n:1500\r\n:1\r\n"),
        ("XCLAIM s g bob 1000 1-1 JUSTID", "*1\r\n$3\r\n1-1\r\n"),
        ("XPENDING s g", "*4\r\n:1\r\n$3\r\n1-1\r\n$3\r\n1-1\r\n*1\r\n*2\r\n$3\r\nbob\r\n$1\r\n1\r\n"),
        ("XACK s g 1-1", ":1\r\n"),
        ("XINFO GROUPS s", "*1\r\n*12\r\n$4\r\nname\r\n$1\r\ng\r\n$9\r\nconsumers\r\n:2\r\n$7\r\npending\r\n:0\r\n$17\r\nlast-delivered-id\r\n$3\r\n1-1\r\n$12\r\nentries-read\r\n:1\r\n$3\r\nlag\r\n:0\r\n"),
    ]);
}

/// Goal: a big stream's range reads start where asked (the node index), both ways.
#[test]
fn ranges_over_many_nodes() {
    let mut h = Harness::new();
    for i in 1..=1000 {
        h.run(&format!("XADD s {i}-0 f {i}"));
    }
    h.check(&[
        ("XLEN s", ":1000\r\n"),
        ("XRANGE s 500 500", "*1\r\n*2\r\n$5\r\n500-0\r\n*2\r\n$1\r\nf\r\n$3\r\n500\r\n"),
        ("XREVRANGE s 702 701", "*2\r\n*2\r\n$5\r\n702-0\r\n*2\r\n$1\r\nf\r\n$3\r\n702\r\n*2\r\n$5\r\n701-0\r\n*2\r\n$1\r\nf\r\n$3\r\n701\r\n"),
        // Whole nodes of 100 go with `~`.
        ("XTRIM s MAXLEN ~ 850", ":100\r\n"),
        ("XTRIM s MINID 950", ":849\r\n"),
        ("XLEN s", ":51\r\n"),
    ]);
}
