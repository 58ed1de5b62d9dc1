//! Each structure's requests and replies against hand-written wire bytes.

use super::*;
use crate::value;

fn format() -> KeyFormat {
    KeyFormat::new(8, 1000).unwrap()
}

fn family(structure: Structure) -> Family {
    Family { structure, fields: 10 }
}

fn val(id: u64, len: usize) -> Vec<u8> {
    let mut v = Vec::new();
    value::write(id, 3, len, &mut v);
    v
}

const SET: SetArgs = SetArgs { version: 3, value_len: 9, ttl_secs: 0 };

fn compose_to_vec(structure: Structure, kind: OpKind, ids: &[u64]) -> Vec<u8> {
    let mut out = Vec::new();
    let set = (kind == OpKind::Set).then_some(SET);
    let mut scratch = Scratch::default();
    compose(family(structure), kind, ids, set, &format(), &mut scratch, &mut out);
    out
}

/// `$len\r\nbytes\r\n`
fn bulk(data: &[u8]) -> Vec<u8> {
    [format!("${}\r\n", data.len()).as_bytes(), data, b"\r\n"].concat()
}

/// Goal: id 57 with 10 fields is key 5, field 7; each family writes and reads it as Redis
/// expects, byte for byte.
#[test]
fn compose_each_structure() {
    let v = bulk(&val(57, 9));
    let head =
        |cmd: &str, n: usize| format!("*{n}\r\n${}\r\n{cmd}\r\n$8\r\nkey:0005\r\n", cmd.len());
    let table: Vec<(Structure, OpKind, Vec<u8>)> = vec![
        (Structure::Hash, OpKind::Set, [head("HSET", 4).as_bytes(), b"$2\r\nf7\r\n", &v].concat()),
        (Structure::Hash, OpKind::Get, [head("HGET", 3).as_bytes(), b"$2\r\nf7\r\n"].concat()),
        (Structure::List, OpKind::Set, [head("LPUSH", 3).as_bytes(), &v].concat()),
        (Structure::List, OpKind::Get, head("RPOP", 2).into_bytes()),
        (Structure::Set, OpKind::Set, [head("SADD", 3).as_bytes(), b"$2\r\nf7\r\n"].concat()),
        (Structure::Set, OpKind::Get, [head("SISMEMBER", 3).as_bytes(), b"$2\r\nf7\r\n"].concat()),
        (
            Structure::Zset,
            OpKind::Set,
            [head("ZADD", 4).as_bytes(), b"$1\r\n7\r\n$2\r\nf7\r\n"].concat(),
        ),
        (
            Structure::Zset,
            OpKind::Get,
            [head("ZRANGE", 4).as_bytes(), b"$1\r\n0\r\n$1\r\n9\r\n"].concat(),
        ),
    ];
    for (structure, kind, want) in table {
        let got = compose_to_vec(structure, kind, &[57]);
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want),
            "{structure:?} {kind:?}"
        );
    }
}

/// Goal: a transaction is MULTI, one SET (or GET) per key, EXEC, in one request; keys are
/// the ids themselves (no fields).
#[test]
fn compose_multi() {
    let multi = b"*1\r\n$5\r\nMULTI\r\n";
    let exec = b"*1\r\n$4\r\nEXEC\r\n";
    let set = |id: u64| {
        let v = bulk(&val(id, 9));
        [format!("*3\r\n$3\r\nSET\r\n$8\r\nkey:{id:04}\r\n").as_bytes(), &v].concat()
    };
    let want = [&multi[..], &set(57), &set(58), exec].concat();
    assert_eq!(compose_to_vec(Structure::Multi, OpKind::Set, &[57, 58]), want);
    let get = |id: u64| format!("*2\r\n$3\r\nGET\r\n$8\r\nkey:{id:04}\r\n").into_bytes();
    let want = [&multi[..], &get(1), &get(999), exec].concat();
    assert_eq!(compose_to_vec(Structure::Multi, OpKind::Get, &[1, 999]), want);
    // A TTL goes on each SET, as for strings.
    let mut out = Vec::new();
    let ttl = SetArgs { ttl_secs: 60, ..SET };
    let f = family(Structure::Multi);
    compose(f, OpKind::Set, &[1], Some(ttl), &format(), &mut Scratch::default(), &mut out);
    assert!(out.ends_with(b"$2\r\nEX\r\n$2\r\n60\r\n*1\r\n$4\r\nEXEC\r\n"));
}

fn parse_all(structure: Structure, kind: OpKind, ids: &[u64], wire: &[u8]) -> Parsed {
    // Every proper prefix is incomplete; the whole is used up exactly.
    for cut in 0..wire.len() {
        let p = parse(family(structure), kind, ids.iter().copied(), &wire[..cut]);
        assert_eq!(p, Parsed::Incomplete, "{structure:?} {kind:?} cut {cut}");
    }
    parse(family(structure), kind, ids.iter().copied(), wire)
}

fn reply(hits: u32, misses: u32, corrupt: u32, used: usize) -> Parsed {
    Parsed::Reply { tally: Tally { hits, misses, corrupt }, error: None, used }
}

fn server_error(used: usize) -> Parsed {
    Parsed::Reply { tally: Tally::default(), error: Some(ErrorKind::ServerError), used }
}

fn broken(structure: Structure, kind: OpKind, wire: &[u8]) -> bool {
    matches!(parse(family(structure), kind, [1].into_iter(), wire), Parsed::Broken(_))
}

/// Goal: writes answer integers; anything else but an error breaks the stream.
#[test]
fn parse_writes() {
    for structure in [Structure::Hash, Structure::List, Structure::Set, Structure::Zset] {
        assert_eq!(parse_all(structure, OpKind::Set, &[1], b":1\r\n"), reply(0, 0, 0, 4));
        assert_eq!(parse_all(structure, OpKind::Set, &[1], b":0\r\n"), reply(0, 0, 0, 4));
        let wrongtype = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
        assert_eq!(
            parse_all(structure, OpKind::Set, &[1], wrongtype),
            server_error(wrongtype.len())
        );
        assert!(broken(structure, OpKind::Set, b"+OK\r\n"), "{structure:?}");
        assert!(broken(structure, OpKind::Set, b"$1\r\nx\r\n"), "{structure:?}");
    }
}

/// Goal: each read's hit and miss shapes; HGET's value is verified against the id.
#[test]
fn parse_reads() {
    let hash_hit = bulk(&val(57, 30));
    assert_eq!(parse_all(Structure::Hash, OpKind::Get, &[57], &hash_hit), reply(1, 0, 0, 37));
    let other = bulk(&val(56, 30));
    assert_eq!(parse_all(Structure::Hash, OpKind::Get, &[57], &other), reply(0, 1, 1, 37));
    assert_eq!(parse_all(Structure::Hash, OpKind::Get, &[57], b"$-1\r\n"), reply(0, 1, 0, 5));
    // RPOP: any value of the list is a hit (it may be another field's).
    assert_eq!(parse_all(Structure::List, OpKind::Get, &[57], &other), reply(1, 0, 0, 37));
    assert_eq!(parse_all(Structure::List, OpKind::Get, &[57], b"_\r\n"), reply(0, 1, 0, 3));
    assert_eq!(parse_all(Structure::Set, OpKind::Get, &[57], b":1\r\n"), reply(1, 0, 0, 4));
    assert_eq!(parse_all(Structure::Set, OpKind::Get, &[57], b":0\r\n"), reply(0, 1, 0, 4));
    assert!(broken(Structure::Set, OpKind::Get, b":2\r\n"));
    let range = b"*2\r\n$2\r\nf0\r\n$2\r\nf1\r\n";
    assert_eq!(parse_all(Structure::Zset, OpKind::Get, &[57], range), reply(1, 0, 0, range.len()));
    assert_eq!(parse_all(Structure::Zset, OpKind::Get, &[57], b"*0\r\n"), reply(0, 1, 0, 4));
    assert!(broken(Structure::Zset, OpKind::Get, b"*1\r\n:1\r\n"));
    assert!(broken(Structure::Zset, OpKind::Get, b"$-1\r\n"));
    assert!(broken(Structure::Hash, OpKind::Get, b":1\r\n"));
    let err = b"-ERR no\r\n";
    assert_eq!(parse_all(Structure::Zset, OpKind::Get, &[57], err), server_error(err.len()));
}

/// Goal: a multiget of a collection is one reply per key, in order.
#[test]
fn parse_reads_of_several_keys() {
    let wire = [&b":1\r\n:0\r\n-ERR x\r\n"[..], b":1\r\n"].concat();
    let p = parse_all(Structure::Set, OpKind::Get, &[1, 2, 3, 4], &wire);
    let tally = Tally { hits: 2, misses: 1, corrupt: 0 };
    assert_eq!(p, Parsed::Reply { tally, error: Some(ErrorKind::ServerError), used: wire.len() });
}

/// Goal: MULTI's replies: `+OK`, `+QUEUED` each, EXEC's array of `+OK` or values (checked).
#[test]
fn parse_multi_replies() {
    let head = b"+OK\r\n+QUEUED\r\n+QUEUED\r\n";
    let sets = [&head[..], b"*2\r\n+OK\r\n+OK\r\n"].concat();
    assert_eq!(
        parse_all(Structure::Multi, OpKind::Set, &[1, 2], &sets),
        reply(0, 0, 0, sets.len())
    );
    let gets = [&head[..], b"*2\r\n$-1\r\n", &bulk(&val(2, 20))].concat();
    assert_eq!(
        parse_all(Structure::Multi, OpKind::Get, &[1, 2], &gets),
        reply(1, 1, 0, gets.len())
    );
    let corrupt = [&head[..], b"*2\r\n", &bulk(&val(2, 20)), &bulk(&val(2, 20))].concat();
    let p = parse_all(Structure::Multi, OpKind::Get, &[1, 2], &corrupt);
    assert_eq!(p, reply(1, 1, 1, corrupt.len()));
    // A command refused while queueing aborts the transaction.
    let aborted = b"+OK\r\n+QUEUED\r\n-ERR wrong\r\n-EXECABORT Transaction discarded\r\n";
    let p = parse_all(Structure::Multi, OpKind::Set, &[1, 2], aborted);
    assert_eq!(p, server_error(aborted.len()));
    // A command that fails inside EXEC (WRONGTYPE) is an error; the others still count.
    let inside = [&head[..], b"*2\r\n-WRONGTYPE x\r\n", &bulk(&val(2, 20))].concat();
    let p = parse_all(Structure::Multi, OpKind::Get, &[1, 2], &inside);
    let tally = Tally { hits: 1, misses: 0, corrupt: 0 };
    assert_eq!(p, Parsed::Reply { tally, error: Some(ErrorKind::ServerError), used: inside.len() });
    let short = [&head[..], b"*1\r\n+OK\r\n"].concat();
    assert!(matches!(
        parse(family(Structure::Multi), OpKind::Set, [1, 2].into_iter(), &short),
        Parsed::Broken(_)
    ));
    assert!(broken(Structure::Multi, OpKind::Set, b"+QUEUED\r\n+QUEUED\r\n*1\r\n+OK\r\n"));
}
