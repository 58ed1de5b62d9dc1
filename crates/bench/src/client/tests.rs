//! Compose and parse against hand-written wire bytes, for each protocol.

use super::*;

fn format() -> KeyFormat {
    KeyFormat::new(8, 1000).unwrap()
}

fn val(key: u64, len: usize) -> Vec<u8> {
    let mut v = Vec::new();
    value::write(key, 3, len, &mut v);
    v
}

fn compose_to_vec(protocol: Protocol, kind: OpKind, keys: &[u64], set: Option<SetArgs>) -> Vec<u8> {
    let mut out = Vec::new();
    compose(protocol, kind, keys, set, &format(), &mut Scratch::default(), &mut out);
    out
}

/// Goal: requests look as each server expects them.
#[test]
fn compose_table() {
    let set = Some(SetArgs { version: 0, value_len: 2, ttl_secs: 0 });
    let v = val(5, 2);
    type Row = (Protocol, OpKind, Vec<u64>, Option<SetArgs>, Vec<u8>);
    let table: Vec<Row> = vec![
        (Protocol::Memcache, OpKind::Get, vec![1, 2], None, b"get key:0001 key:0002\r\n".to_vec()),
        (
            Protocol::Memcache,
            OpKind::Set,
            vec![5],
            set,
            [&b"set key:0005 0 0 2\r\n"[..], &v, b"\r\n"].concat(),
        ),
        (Protocol::Meta, OpKind::Get, vec![1], None, b"mg key:0001 v\r\n".to_vec()),
        (
            Protocol::Meta,
            OpKind::Get,
            vec![1, 2],
            None,
            b"mg key:0001 v k q\r\nmg key:0002 v k q\r\nmn\r\n".to_vec(),
        ),
        (
            Protocol::Meta,
            OpKind::Set,
            vec![5],
            set,
            [&b"ms key:0005 2\r\n"[..], &v, b"\r\n"].concat(),
        ),
        (
            Protocol::Resp,
            OpKind::Get,
            vec![1],
            None,
            b"*2\r\n$3\r\nGET\r\n$8\r\nkey:0001\r\n".to_vec(),
        ),
        (
            Protocol::Resp,
            OpKind::Get,
            vec![1, 2],
            None,
            b"*3\r\n$4\r\nMGET\r\n$8\r\nkey:0001\r\n$8\r\nkey:0002\r\n".to_vec(),
        ),
        (
            Protocol::Resp,
            OpKind::Set,
            vec![5],
            set,
            [&b"*3\r\n$3\r\nSET\r\n$8\r\nkey:0005\r\n$2\r\n"[..], &v, b"\r\n"].concat(),
        ),
    ];
    for (protocol, kind, keys, set, want) in table {
        let got = compose_to_vec(protocol, kind, &keys, set);
        assert_eq!(
            String::from_utf8_lossy(&got),
            String::from_utf8_lossy(&want),
            "{protocol:?} {kind:?}"
        );
    }
    let ttl = Some(SetArgs { version: 0, value_len: 2, ttl_secs: 60 });
    assert!(compose_to_vec(Protocol::Meta, OpKind::Set, &[5], ttl)
        .starts_with(b"ms key:0005 2 T60\r\n"));
    assert!(compose_to_vec(Protocol::Resp, OpKind::Set, &[5], ttl)
        .ends_with(b"$2\r\nEX\r\n$2\r\n60\r\n"));
    assert!(compose_to_vec(Protocol::Memcache, OpKind::Set, &[5], ttl)
        .starts_with(b"set key:0005 0 60 2\r\n"));
}

fn parse_all(protocol: Protocol, kind: OpKind, keys: &[u64], wire: &[u8]) -> Parsed {
    // Every proper prefix is incomplete; the whole is used up exactly.
    for cut in 0..wire.len() {
        let p = parse(protocol, kind, keys.iter().copied(), &format(), &wire[..cut]);
        assert_eq!(p, Parsed::Incomplete, "{protocol:?} cut {cut}");
    }
    parse(protocol, kind, keys.iter().copied(), &format(), wire)
}

fn reply(hits: u32, misses: u32, corrupt: u32, used: usize) -> Parsed {
    Parsed::Reply { tally: Tally { hits, misses, corrupt }, error: None, used }
}

fn item(key: u64, data: &[u8]) -> Vec<u8> {
    [format!("VALUE key:{key:04} 0 {}\r\n", data.len()).as_bytes(), data, b"\r\n"].concat()
}

/// Goal: multiget replies count hits, misses (skipped keys) and corrupt values.
#[test]
fn memcache_get() {
    let mut bad = val(2, 30);
    bad[12] ^= 1;
    let wire = [item(1, &val(1, 20)), item(2, &bad), b"END\r\n".to_vec()].concat();
    assert_eq!(
        parse_all(Protocol::Memcache, OpKind::Get, &[1, 2, 3], &wire),
        reply(1, 2, 1, wire.len())
    );
    let other_key = [item(9, &val(9, 20)), b"END\r\n".to_vec()].concat();
    assert!(matches!(
        parse_all(Protocol::Memcache, OpKind::Get, &[1], &other_key),
        Parsed::Broken(_)
    ));
    let wrong_value = [item(1, &val(2, 20)), b"END\r\n".to_vec()].concat();
    assert_eq!(
        parse_all(Protocol::Memcache, OpKind::Get, &[1], &wrong_value),
        reply(0, 1, 1, wrong_value.len())
    );
    let err = b"SERVER_ERROR out of memory\r\n";
    assert_eq!(
        parse_all(Protocol::Memcache, OpKind::Get, &[1], err),
        Parsed::Reply {
            tally: Tally::default(),
            error: Some(ErrorKind::ServerError),
            used: err.len()
        }
    );
    assert!(matches!(
        parse(Protocol::Memcache, OpKind::Get, [1].into_iter(), &format(), b"STORED\r\n"),
        Parsed::Broken(_)
    ));
}

/// Goal: the one-pass reader of plain `VALUE ... END` replies says what the codec's parser
/// says, on every prefix of replies it reads itself and of spellings it leaves to the codec
/// (a cas, a bare `\n`, doubled spaces, a `+` sign, an error line, a long key, a key that
/// was not asked for, flags past u32).
#[test]
fn memcache_get_one_pass_agrees_with_codec() {
    let v1 = val(1, 20);
    let v2 = val(2, 9);
    let wires: Vec<Vec<u8>> = vec![
        [item(1, &v1), item(2, &v2), b"END\r\n".to_vec()].concat(),
        [item(2, &v2), b"END\r\n".to_vec()].concat(),
        b"END\r\n".to_vec(),
        [&b"VALUE key:0001 7 20 99\r\n"[..], &v1, b"\r\nEND\r\n"].concat(),
        [&b"VALUE key:0001 0 20\n"[..], &v1, b"\r\nEND\r\n"].concat(),
        [&b"VALUE key:0001  0 20\r\n"[..], &v1, b"\r\nEND\r\n"].concat(),
        [&b"VALUE key:0001 +0 20\r\n"[..], &v1, b"\r\nEND\r\n"].concat(),
        [&b"VALUE key:0001 4294967296 20\r\n"[..], &v1, b"\r\nEND\r\n"].concat(),
        [&b"VALUE key:0001 0 21\r\n"[..], &v1, b"\r\nEND\r\n"].concat(),
        [&b"VALUE key:0001 0 20\r\n"[..], &v1, b"\r\nENDX\r\n"].concat(),
        [item(9, &val(9, 20)), item(1, &v1), b"END\r\n".to_vec()].concat(),
        [b"VALUE ".to_vec(), vec![b'k'; 2100], b" 0 1\r\nx\r\nEND\r\n".to_vec()].concat(),
        b"SERVER_ERROR out of memory\r\n".to_vec(),
        b"VALUE key:0001 0 2\r\nab\r\nEND\r\nVALUE".to_vec(),
    ];
    // Three keys take the multiget path; one key (asked or not) the single-get one.
    for asked in [&[1u64, 2, 3][..], &[1], &[2]] {
        for wire in &wires {
            for cut in 0..=wire.len() {
                let input = &wire[..cut];
                let keys = asked.iter().copied();
                let one_pass = memcache::parse_get(keys.clone(), &format(), input);
                let codec = memcache::parse_get_by_codec(keys, &format(), input);
                let text = String::from_utf8_lossy(wire);
                assert_eq!(one_pass, codec, "{asked:?} {text:?} cut {cut}");
            }
        }
    }
}

/// Goal: the GET fast path (a plain bulk string or `$-1`) says what `parse_reply` says, on
/// every prefix of replies it reads itself and of spellings it leaves to the codec (a
/// sign, a RESP3 null, an error, a short or long payload, an array, a huge length).
#[test]
fn resp_get_fast_path_agrees_with_codec() {
    let v1 = val(1, 20);
    let wires: Vec<Vec<u8>> = vec![
        [&b"$20\r\n"[..], &v1, b"\r\n"].concat(),
        [&b"$20\r\n"[..], &val(2, 20), b"\r\n"].concat(),
        b"$-1\r\n".to_vec(),
        b"_\r\n".to_vec(),
        b"$0\r\n\r\n".to_vec(),
        [&b"$+20\r\n"[..], &v1, b"\r\n"].concat(),
        [&b"$020\r\n"[..], &v1, b"\r\n"].concat(),
        [&b"$21\r\n"[..], &v1, b"\r\n"].concat(),
        [&b"$19\r\n"[..], &v1, b"\r\n"].concat(),
        [&b"$20\n"[..], &v1, b"\r\n"].concat(),
        b"$9999999999\r\nx\r\n".to_vec(),
        b"-ERR wrong\r\n".to_vec(),
        b"*1\r\n$-1\r\n".to_vec(),
        b"+OK\r\n".to_vec(),
    ];
    for wire in &wires {
        for cut in 0..=wire.len() {
            let input = &wire[..cut];
            let keys = [1u64].into_iter();
            let fast = resp::parse_get(keys.clone(), &format(), input);
            let codec = resp::parse_get_by_codec(keys, &format(), input);
            assert_eq!(fast, codec, "{:?} cut {cut}", String::from_utf8_lossy(wire));
        }
    }
}

/// Goal: a get line is what the codec's client composer writes for the same keys.
#[test]
fn memcache_get_line_is_the_codecs() {
    use proto_memcache::{compose_retrieve, text::RetrieveKind};
    for keys in [vec![1u64], vec![1, 2, 999]] {
        let got = compose_to_vec(Protocol::Memcache, OpKind::Get, &keys, None);
        let mut want = Vec::new();
        let names: Vec<Vec<u8>> =
            keys.iter().map(|&id| format().key(id).as_bytes().to_vec()).collect();
        compose_retrieve(RetrieveKind::Get, names.iter().map(Vec::as_slice), &mut want);
        assert_eq!(got, want);
    }
}

#[test]
fn memcache_set() {
    assert_eq!(parse_all(Protocol::Memcache, OpKind::Set, &[1], b"STORED\r\n"), reply(0, 0, 0, 8));
    let p = parse_all(Protocol::Memcache, OpKind::Set, &[1], b"NOT_STORED\r\n");
    assert_eq!(
        p,
        Parsed::Reply { tally: Tally::default(), error: Some(ErrorKind::NotStored), used: 12 }
    );
    let p = parse_all(Protocol::Memcache, OpKind::Set, &[1], b"ERROR\r\n");
    assert_eq!(
        p,
        Parsed::Reply { tally: Tally::default(), error: Some(ErrorKind::Error), used: 7 }
    );
}

#[test]
fn meta_get() {
    let v = val(1, 20);
    let single = [&b"VA 20\r\n"[..], &v, b"\r\n"].concat();
    assert_eq!(parse_all(Protocol::Meta, OpKind::Get, &[1], &single), reply(1, 0, 0, single.len()));
    assert_eq!(parse_all(Protocol::Meta, OpKind::Get, &[1], b"EN\r\n"), reply(0, 1, 0, 4));
    let v2 = val(2, 9);
    let multi = [&b"VA 9 kkey:0002\r\n"[..], &v2, b"\r\nMN\r\n"].concat();
    assert_eq!(
        parse_all(Protocol::Meta, OpKind::Get, &[1, 2, 3], &multi),
        reply(1, 2, 0, multi.len())
    );
    assert_eq!(parse_all(Protocol::Meta, OpKind::Set, &[1], b"HD\r\n"), reply(0, 0, 0, 4));
}

#[test]
fn resp_get() {
    let v = val(1, 20);
    let single = [&b"$20\r\n"[..], &v, b"\r\n"].concat();
    assert_eq!(parse_all(Protocol::Resp, OpKind::Get, &[1], &single), reply(1, 0, 0, single.len()));
    assert_eq!(parse_all(Protocol::Resp, OpKind::Get, &[1], b"$-1\r\n"), reply(0, 1, 0, 5));
    let multi = [&b"*3\r\n$-1\r\n$20\r\n"[..], &val(2, 20), b"\r\n$3\r\nabc\r\n"].concat();
    assert_eq!(
        parse_all(Protocol::Resp, OpKind::Get, &[1, 2, 3], &multi),
        reply(1, 2, 1, multi.len())
    );
    // A RESP3 null element is read by the codec, the plain bulk after it by the fast path.
    let resp3 = [&b"*2\r\n_\r\n$20\r\n"[..], &val(2, 20), b"\r\n"].concat();
    assert_eq!(
        parse_all(Protocol::Resp, OpKind::Get, &[1, 2], &resp3),
        reply(1, 1, 0, resp3.len())
    );
    assert!(matches!(
        parse(Protocol::Resp, OpKind::Get, [1, 2].into_iter(), &format(), b"*3\r\n"),
        Parsed::Broken(_)
    ));
    assert_eq!(parse_all(Protocol::Resp, OpKind::Set, &[1], b"+OK\r\n"), reply(0, 0, 0, 5));
    let p = parse_all(Protocol::Resp, OpKind::Set, &[1], b"-OOM no\r\n");
    assert_eq!(
        p,
        Parsed::Reply { tally: Tally::default(), error: Some(ErrorKind::ServerError), used: 9 }
    );
}
