//! Dispatch-level wire tables: unknown commands, arity, key limits.

use super::testkit::Harness;

/// Goal: dispatch-level errors keep Redis's wording. Method: wire table.
#[test]
fn unknown_command_and_arity() {
    let mut h = Harness::new();
    h.check(&[
        ("FOO a b", "-ERR unknown command 'FOO', with args beginning with: 'a' 'b' \r\n"),
        ("GET", "-ERR wrong number of arguments for 'get' command\r\n"),
        ("get a b", "-ERR wrong number of arguments for 'get' command\r\n"),
        ("SET k", "-ERR wrong number of arguments for 'set' command\r\n"),
    ]);
    let totals = h.shared.core.totals();
    assert_eq!((totals.total_commands, totals.protocol_errors), (4, 4));
}

/// Goal: a key over the store's limit is refused on write and simply absent on read.
#[test]
fn key_too_long() {
    let mut h = Harness::new();
    let key = vec![b'k'; store::KEY_LEN_MAX + 1];
    assert_eq!(h.run_args(&[b"SET", &key, b"v"]), b"-ERR key too long\r\n");
    assert_eq!(h.run_args(&[b"INCR", &key]), b"-ERR key too long\r\n");
    assert_eq!(h.run_args(&[b"GET", &key]), b"$-1\r\n");
    assert_eq!(h.run_args(&[b"DEL", &key]), b":0\r\n");
}

/// Goal: an empty command gets no reply and is not counted.
#[test]
fn empty_command_is_silent() {
    let mut h = Harness::new();
    assert_eq!(h.run_raw(b"*0\r\n"), b"");
    assert_eq!(h.shared.core.totals().total_commands, 0);
}
