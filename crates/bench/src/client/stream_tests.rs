//! Stream requests and replies against hand-written wire bytes.

use super::*;
use crate::client::family::{compose, parse_following};
use crate::client::{Scratch, SetArgs};
use crate::workload::Structure;

fn format() -> KeyFormat {
    KeyFormat::new(8, 1000).unwrap()
}

const FAMILY: Family = Family { structure: Structure::Stream, fields: 10 };
const SET: SetArgs = SetArgs { version: 3, value_len: 9, ttl_secs: 0 };

fn bulk(data: &[u8]) -> Vec<u8> {
    [format!("${}\r\n", data.len()).as_bytes(), data, b"\r\n"].concat()
}

fn val(id: u64) -> Vec<u8> {
    let mut v = Vec::new();
    value::write(id, 3, 9, &mut v);
    v
}

fn composed(kind: OpKind, id: u64) -> String {
    let mut out = Vec::new();
    let set = (kind == OpKind::Set).then_some(SET);
    compose(FAMILY, kind, &[id], set, &format(), &mut Scratch::default(), &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Goal: id 57 (key 5, field 7) is an XADD with the server's ID; an even field reads as
/// the group's consumer, an odd one by range.
#[test]
fn compose_requests() {
    let v = String::from_utf8_lossy(&bulk(&val(57))).into_owned();
    let want = format!(
        "*9\r\n$4\r\nXADD\r\n$8\r\nkey:0005\r\n$1\r\n*\r\n$4\r\nitem\r\n$2\r\nf7\r\n$2\r\nat\r\n\
         $1\r\n3\r\n$5\r\nvalue\r\n{v}"
    );
    assert_eq!(composed(OpKind::Set, 57), want);
    let want = "*9\r\n$10\r\nXREADGROUP\r\n$5\r\nGROUP\r\n$5\r\nbench\r\n$5\r\nbench\r\n\
                $5\r\nCOUNT\r\n$2\r\n10\r\n$7\r\nSTREAMS\r\n$8\r\nkey:0005\r\n$1\r\n>\r\n";
    assert_eq!(composed(OpKind::Get, 56), want);
    let want = "*6\r\n$6\r\nXRANGE\r\n$8\r\nkey:0005\r\n$1\r\n-\r\n$1\r\n+\r\n$5\r\nCOUNT\r\n\
                $2\r\n10\r\n";
    assert_eq!(composed(OpKind::Get, 57), want);
}

/// An entry as Redis sends it: `[id, [item, f<field>, at, 3, value, v]]`.
fn entry(id: &str, field: u64, value: &[u8]) -> Vec<u8> {
    let name = format!("f{field}");
    let mut out = format!("*2\r\n${}\r\n{id}\r\n*6\r\n", id.len()).into_bytes();
    for part in [&b"item"[..], name.as_bytes(), b"at", b"3", b"value", value] {
        out.extend(bulk(part));
    }
    out
}

/// Parses `wire` as the reply to a read of `id`, checking every proper prefix is
/// incomplete and leaves no follow-up.
fn parse_read(id: u64, wire: &[u8]) -> (Parsed, FollowUps) {
    let mut follow = FollowUps::default();
    for cut in 0..wire.len() {
        let p = parse_following(
            FAMILY,
            OpKind::Get,
            [id].into_iter(),
            &format(),
            &wire[..cut],
            &mut follow,
        );
        assert_eq!(p, Parsed::Incomplete, "cut {cut}");
    }
    let p = parse_following(FAMILY, OpKind::Get, [id].into_iter(), &format(), wire, &mut follow);
    (p, follow)
}

fn reply(hits: u32, misses: u32, corrupt: u32, used: usize) -> Parsed {
    Parsed::Reply { tally: Tally { hits, misses, corrupt }, error: None, used }
}

/// Goal: what XREADGROUP delivered is checked and acknowledged (XACK of exactly its IDs,
/// as one follow-up); nothing new is a miss with no follow-up; RESP3's map reads the same.
#[test]
fn consumer_reads_and_acks() {
    let entries = [entry("5-0", 2, &val(52)), entry("5-1", 4, &val(54))].concat();
    let resp2 = [&b"*1\r\n*2\r\n$8\r\nkey:0005\r\n*2\r\n"[..], &entries].concat();
    let (p, follow) = parse_read(56, &resp2);
    assert_eq!(p, reply(1, 0, 0, resp2.len()));
    let ack = "*5\r\n$4\r\nXACK\r\n$8\r\nkey:0005\r\n$5\r\nbench\r\n$3\r\n5-0\r\n$3\r\n5-1\r\n";
    assert_eq!((String::from_utf8_lossy(&follow.bytes).as_ref(), follow.commands), (ack, 1));
    let resp3 = [&b"%1\r\n$8\r\nkey:0005\r\n*2\r\n"[..], &entries].concat();
    let (p, follow) = parse_read(56, &resp3);
    assert_eq!((p, follow.commands), (reply(1, 0, 0, resp3.len()), 1));
    for empty in [&b"*-1\r\n"[..], b"_\r\n"] {
        let (p, follow) = parse_read(56, empty);
        assert_eq!((p, follow.commands), (reply(0, 1, 0, empty.len()), 0));
    }
}

/// Goal: a read before the group exists creates it (a miss, not an error); another error
/// is the server's; a value no writer of that field could have written is corrupt.
#[test]
fn nogroup_errors_and_corrupt_entries() {
    let nogroup = b"-NOGROUP No such key 'key:0005' or consumer group 'bench'\r\n";
    let (p, follow) = parse_read(56, nogroup);
    assert_eq!(p, reply(0, 1, 0, nogroup.len()));
    let create =
        "*6\r\n$6\r\nXGROUP\r\n$6\r\nCREATE\r\n$8\r\nkey:0005\r\n$5\r\nbench\r\n$1\r\n0\r\n\
                  $8\r\nMKSTREAM\r\n";
    assert_eq!(String::from_utf8_lossy(&follow.bytes), create);
    let wrongtype = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
    let (p, follow) = parse_read(57, wrongtype);
    let error = Parsed::Reply {
        tally: Tally::default(),
        error: Some(ErrorKind::ServerError),
        used: wrongtype.len(),
    };
    assert_eq!((p, follow.commands), (error, 0));
    // f3's entry holding f2's value (XRANGE, so no acknowledgement).
    let range = [&b"*1\r\n"[..], &entry("1-0", 3, &val(52))].concat();
    assert_eq!(parse_read(57, &range).0, reply(0, 1, 1, range.len()));
    let range = [&b"*1\r\n"[..], &entry("1-0", 3, &val(53))].concat();
    assert_eq!(parse_read(57, &range).0, reply(1, 0, 0, range.len()));
    assert_eq!(parse_read(57, b"*0\r\n").0, reply(0, 1, 0, 4));
}

/// Goal: replies of the wrong shape break the stream.
#[test]
fn wrong_shapes_break() {
    let parse = |kind, id: u64, wire: &[u8]| {
        let mut follow = FollowUps::default();
        parse_following(FAMILY, kind, [id].into_iter(), &format(), wire, &mut follow)
    };
    assert_eq!(parse(OpKind::Set, 1, b"$3\r\n1-0\r\n"), reply(0, 0, 0, 9));
    for bad in [&b"$3\r\n1-x\r\n"[..], b":1\r\n", b"+OK\r\n"] {
        assert!(matches!(parse(OpKind::Set, 1, bad), Parsed::Broken(_)), "{bad:?}");
    }
    for bad in [&b":1\r\n"[..], b"*1\r\n:1\r\n", b"*1\r\n*1\r\n$3\r\n1-0\r\n"] {
        assert!(matches!(parse(OpKind::Get, 57, bad), Parsed::Broken(_)), "{bad:?}");
        assert!(matches!(parse(OpKind::Get, 56, bad), Parsed::Broken(_)), "{bad:?}");
    }
    let eleven = [b"*11\r\n".to_vec(), entry("1-0", 3, &val(53)).repeat(11)].concat();
    assert!(matches!(parse(OpKind::Get, 57, &eleven), Parsed::Broken(_)));
}
