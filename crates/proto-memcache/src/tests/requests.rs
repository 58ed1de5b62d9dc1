//! Wire tables: every command, with and without noreply, and every meta flag; each case is
//! also checked at every split point.

use super::{assert_split_points, client_error, error, parse};
use crate::{
    error::*,
    meta::{Flag, MetaCommand, MetaFlags, SetMode},
    text::{AdminCommand, ArithOp, RetrieveKind, StoreCommand},
    ErrorReply, ParseError, Request, Words,
};

fn store(
    command: StoreCommand,
    flags: u32,
    exptime: i64,
    value: &[u8],
    noreply: bool,
) -> Request<'_> {
    Request::Store(crate::text::Store { command, key: b"k", flags, exptime, value, noreply })
}

fn retrieve(kind: RetrieveKind, keys: &[u8]) -> Request<'_> {
    Request::Retrieve(crate::text::Retrieve { kind, keys: Words::new(keys) })
}

// Goal: each text command parses to the expected request and length, whole or split.
#[test]
fn text_commands() {
    use ArithOp::*;
    use StoreCommand::*;
    let table: Vec<(&[u8], Request)> = vec![
        (b"get a\r\n", retrieve(RetrieveKind::Get, b"a")),
        (b"get a b  c\r\n", retrieve(RetrieveKind::Get, b"a b c")),
        (b"gets a b\n", retrieve(RetrieveKind::Gets, b"a b")),
        (b"bget a b\r\n", retrieve(RetrieveKind::Get, b"a b")),
        (b"gat 10 a b\r\n", retrieve(RetrieveKind::Gat { exptime: 10 }, b"a b")),
        (b"gats -1 a\r\n", retrieve(RetrieveKind::Gats { exptime: -1 }, b"a")),
        (b"gat 10\r\n", retrieve(RetrieveKind::Gat { exptime: 10 }, b"")),
        (b"  get   a\r\n", retrieve(RetrieveKind::Get, b"a")),
        (b"set k 1 2 3\r\nabc\r\n", store(Set, 1, 2, b"abc", false)),
        (b"set k 1 2 3 noreply\r\nabc\r\n", store(Set, 1, 2, b"abc", true)),
        (b"set k 1 2 3 junk\r\nabc\r\n", store(Set, 1, 2, b"abc", false)),
        (b"add k 0 0 0\r\n\r\n", store(Add, 0, 0, b"", false)),
        (
            b"replace k 4294967295 -1 2 noreply\r\n\r\n\r\n",
            store(Replace, u32::MAX, -1, b"\r\n", true),
        ),
        (b"append k 0 0 1\r\nx\r\n", store(Append, 0, 0, b"x", false)),
        (b"prepend k 0 0 1 noreply\r\nx\r\n", store(Prepend, 0, 0, b"x", true)),
        (b"cas k 0 0 1 99\r\nx\r\n", store(Cas { cas_unique: 99 }, 0, 0, b"x", false)),
        (b"cas k 0 0 1 99 noreply\r\nx\r\n", store(Cas { cas_unique: 99 }, 0, 0, b"x", true)),
        (b"delete k\r\n", Request::Delete { key: b"k", noreply: false }),
        (b"delete k noreply\r\n", Request::Delete { key: b"k", noreply: true }),
        (b"delete k 0\r\n", Request::Delete { key: b"k", noreply: false }),
        (b"delete k 0 noreply\r\n", Request::Delete { key: b"k", noreply: true }),
        (b"incr k 5\r\n", Request::Arith { op: Incr, key: b"k", delta: 5, noreply: false }),
        (
            b"decr k 18446744073709551615 noreply\r\n",
            Request::Arith { op: Decr, key: b"k", delta: u64::MAX, noreply: true },
        ),
        (b"touch k 30\r\n", Request::Touch { key: b"k", exptime: 30, noreply: false }),
        (b"touch k 30 noreply\r\n", Request::Touch { key: b"k", exptime: 30, noreply: true }),
        (b"flush_all\r\n", Request::FlushAll { delay_secs: None, noreply: false }),
        (b"flush_all noreply\r\n", Request::FlushAll { delay_secs: None, noreply: true }),
        (b"flush_all 10\r\n", Request::FlushAll { delay_secs: Some(10), noreply: false }),
        (b"flush_all 10 noreply\r\n", Request::FlushAll { delay_secs: Some(10), noreply: true }),
        (b"version\r\n", Request::Version),
        (b"verbosity 1\r\n", Request::Verbosity { level: 1, noreply: false }),
        (b"verbosity 1 noreply\r\n", Request::Verbosity { level: 1, noreply: true }),
        (b"quit\r\n", Request::Quit),
        (b"stats\r\n", Request::Stats { args: Words::new(b"") }),
        (b"stats slabs  x\r\n", Request::Stats { args: Words::new(b"slabs x") }),
        (
            b"slabs automove 1\r\n",
            Request::Admin { command: AdminCommand::Slabs, args: Words::new(b"automove 1") },
        ),
        (b"watch\r\n", Request::Admin { command: AdminCommand::Watch, args: Words::new(b"") }),
        (
            b"cache_memlimit 64\r\n",
            Request::Admin { command: AdminCommand::CacheMemlimit, args: Words::new(b"64") },
        ),
        (
            b"refresh_certs\r\n",
            Request::Admin { command: AdminCommand::RefreshCerts, args: Words::new(b"") },
        ),
        (b"mn\r\n", Request::MetaNoop),
    ];
    for (wire, request) in table {
        assert_split_points(wire, &Ok((request, wire.len())));
        // Composing gives back the same request.
        let mut composed = Vec::new();
        request.compose(&mut composed);
        assert_eq!(parse(&composed), Ok((request, composed.len())));
    }
}

// Goal: every error of the text commands, with memcached's text and the right skip.
#[test]
fn text_errors() {
    let quiet = |skip, reason| ParseError::Invalid {
        skip,
        reply: ErrorReply::ClientError(reason),
        noreply: true,
    };
    let table: Vec<(&[u8], ParseError)> = vec![
        (b"bogus\r\n", error(7)),
        (b"\r\n", error(2)),
        (b"g\r\n", error(3)),
        (b"GET\r\n", error(5)),
        (b"get\r\n", error(5)),
        (b"set k 0 0\r\n", error(11)),
        (b"set k 0 0 1 noreply x\r\n", error(23)),
        (b"cas k 0 0 1\r\n", error(13)),
        (b"incr k\r\n", error(8)),
        (b"touch k\r\n", error(9)),
        (b"delete\r\n", error(8)),
        (b"flush_all 1 2 3\r\n", error(17)),
        (b"verbosity\r\n", error(11)),
        (b"mx k\r\n", error(6)),
        (b"mg\r\n", error(4)),
        (b"set k x 0 1\r\n", client_error(13, BAD_FORMAT)),
        (b"set k 18446744073709551616 0 1\r\n", client_error(32, BAD_FORMAT)),
        (b"set k 0 x 1\r\n", client_error(13, BAD_FORMAT)),
        (b"set k 0 0 -1\r\n", client_error(14, BAD_FORMAT)),
        (b"set k 0 0 x\r\n", client_error(13, BAD_FORMAT)),
        (b"set k 0 0 2147483646\r\n", client_error(22, BAD_FORMAT)),
        (b"cas k 0 0 1 x\r\n", client_error(15, BAD_FORMAT)),
        (b"set k 0 0 noreply\r\n", quiet(19, BAD_FORMAT)),
        (b"incr k x\r\n", client_error(10, BAD_DELTA)),
        (b"incr k -1 noreply\r\n", quiet(19, BAD_DELTA)),
        (b"touch k x\r\n", client_error(11, BAD_EXPTIME)),
        (b"gat x k\r\n", client_error(9, BAD_EXPTIME)),
        (b"flush_all x\r\n", client_error(13, BAD_EXPTIME)),
        (b"verbosity x\r\n", client_error(13, BAD_FORMAT)),
        (b"delete k 1\r\n", client_error(12, BAD_DELETE_FORMAT)),
        (b"delete k x noreply\r\n", quiet(20, BAD_DELETE_FORMAT)),
        (b"get a\rb\r\n", client_error(9, BAD_KEY)),
        (b"set k 0 0 1\r\nxy\r\n", client_error(16, BAD_DATA_CHUNK)),
        (b"set k 0 0 1 noreply\r\nxy\r\n", quiet(24, BAD_DATA_CHUNK)),
        (b"GET / HTTP/1.1\r\n", ParseError::Close),
        (b"DELETE HTTP/1.1\r\n", ParseError::Close),
        (b"\x80\x00\x00\x05", ParseError::Close),
    ];
    for (wire, expected) in table {
        assert_split_points(wire, &Err(expected));
    }
}

fn flags_of(wire: &[u8]) -> Vec<Flag<'_>> {
    match parse(wire).expect("valid").0 {
        Request::MetaGet(get) => get.flags.iter().collect(),
        Request::MetaSet(set) => set.flags.iter().collect(),
        Request::MetaDelete(delete) => delete.flags.iter().collect(),
        Request::MetaArith(arith) => arith.flags.iter().collect(),
        other => panic!("not a keyed meta request: {other:?}"),
    }
}

// Goal: meta commands parse, with their flags in order, their values and modes.
#[test]
fn meta_commands() {
    let wire = b"mg foo s v t c f h k l O123 q u b\r\n";
    assert!(matches!(parse(wire), Err(ParseError::Invalid { .. })), "foo is not base64");
    let wire = b"mg Zm9v s v t c f h k l O123 q u b E5 N30 R10 T20\r\n";
    let Ok((Request::MetaGet(get), consumed)) = parse(wire) else { panic!("mg parses") };
    assert_eq!(consumed, wire.len());
    let letters: Vec<u8> = get.flags.iter().map(|flag| flag.letter()).collect();
    assert_eq!(letters, b"svtcfhklOqubENRT");
    let f = &get.flags;
    assert!(f.return_size && f.return_value && f.return_ttl && f.return_cas && f.return_flags);
    assert!(f.return_hit && f.return_key && f.return_last_access && f.quiet && f.no_bump);
    assert!(f.base64_key);
    assert_eq!((f.opaque, f.new_cas), (Some(&b"123"[..]), Some(5)));
    assert_eq!(
        (f.vivify_ttl_secs, f.recache_ttl_secs, f.update_ttl_secs),
        (Some(30), Some(10), Some(20))
    );
    let mut scratch = [0u8; 16];
    assert_eq!(crate::meta::decoded_key(get.key, true, &mut scratch), Some(&b"foo"[..]));

    let wire = b"ms k 2 c C7 E8 F9 I k O1 q s T60 MA N5\r\nhi\r\n";
    let Ok((Request::MetaSet(set), consumed)) = parse(wire) else { panic!("ms parses") };
    assert_eq!((set.value, set.mode, consumed), (&b"hi"[..], SetMode::Append, wire.len()));
    assert_eq!(
        (set.flags.compare_cas, set.flags.new_cas, set.flags.set_flags),
        (Some(7), Some(8), Some(9))
    );
    assert!(set.flags.invalidate && set.flags.return_size);
    for (mode, expected) in
        [("E", SetMode::Add), ("R", SetMode::Replace), ("P", SetMode::Prepend), ("S", SetMode::Set)]
    {
        let wire = format!("ms k 0 M{mode}\r\n\r\n");
        let Ok((Request::MetaSet(set), _)) = parse(wire.as_bytes()) else { panic!("{wire}") };
        assert_eq!(set.mode, expected);
    }

    let wire = b"md k q I T30 x C4 E5 k O9 b\r\n";
    assert_eq!(parse(wire), Err(client_error(wire.len(), INVALID_OR_DUPLICATE_FLAG)));
    let wire = b"md aw== q I T30 x C4 E5 k O9 b\r\n";
    let Ok((Request::MetaDelete(delete), _)) = parse(wire) else { panic!("md parses") };
    assert!(delete.flags.remove_value && delete.flags.invalidate && delete.flags.quiet);

    for (mode, op) in [
        ("", crate::text::ArithOp::Incr),
        (" MI", crate::text::ArithOp::Incr),
        (" M+", crate::text::ArithOp::Incr),
        (" MD", crate::text::ArithOp::Decr),
        (" M-", crate::text::ArithOp::Decr),
    ] {
        let wire = format!("ma k N0 J10 D3 t c v k O1 q{mode}\r\n");
        let Ok((Request::MetaArith(arith), _)) = parse(wire.as_bytes()) else { panic!("{wire}") };
        assert_eq!((arith.mode, arith.delta(), arith.initial()), (op, 3, 10));
    }
    let Ok((Request::MetaArith(arith), _)) = parse(b"ma k\r\n") else { panic!("ma parses") };
    assert_eq!((arith.delta(), arith.initial()), (1, 0));

    let debug = |key, base64_key| Request::MetaDebug(crate::meta::MetaDebug { key, base64_key });
    assert_eq!(parse(b"me k\r\n"), Ok((debug(b"k", false), 6)));
    assert_eq!(parse(b"me Zm9v b\r\n"), Ok((debug(b"Zm9v", true), 11)));
    assert_eq!(parse(b"mn junk\r\n"), Ok((Request::MetaNoop, 9)));
    assert_eq!(flags_of(b"mg k P1 L2\r\n").len(), 2);
    // Flags are checked the same way for every command; irrelevant ones are ignored.
    assert_eq!(flags_of(b"mg k D5 J1 MS\r\n").len(), 3);
}

// Goal: every meta error, with memcached's text, and whether the ms block is swallowed.
#[test]
fn meta_errors() {
    let long_key = vec![b'k'; 251];
    let table: Vec<(Vec<u8>, &str)> = vec![
        (b"mg k v v\r\n".to_vec(), DUPLICATE_FLAG),
        (b"mg k Z\r\n".to_vec(), INVALID_FLAG),
        (b"mg k Nx\r\n".to_vec(), BAD_TOKEN),
        (b"mg k b\r\n".to_vec(), BAD_BASE64_KEY),
        (b"mg k MEE\r\n".to_vec(), BAD_MODE_LEN),
        (b"mg k O123456789012345678901234567890123\r\n".to_vec(), OPAQUE_TOO_LONG),
        ([&b"mg "[..], &long_key, b"\r\n"].concat(), BAD_FORMAT),
        (b"mg k a b c d e f g h i j l m n o p q r s\r\n".to_vec(), MG_TOO_MANY_FLAGS),
        (b"md k a b c d e f g h i j l m n o p q r s\r\n".to_vec(), TOO_MANY_FLAGS),
        (b"md k Z\r\n".to_vec(), INVALID_OR_DUPLICATE_FLAG),
        (b"ma k Dx\r\n".to_vec(), INVALID_OR_DUPLICATE_FLAG),
        (b"ma k MX\r\n".to_vec(), BAD_MA_MODE),
        (b"ms k\r\n".to_vec(), BAD_FORMAT),
        (b"ms k x\r\n".to_vec(), BAD_FORMAT),
        (b"ms k -1\r\n".to_vec(), BAD_FORMAT),
        (b"ms k 2 MX\r\nhi\r\n".to_vec(), BAD_MS_MODE),
        (b"ms k 2 Fx\r\nhi\r\n".to_vec(), BAD_FORMAT),
        (b"ms k 2 v v\r\nhi\r\n".to_vec(), DUPLICATE_FLAG),
        (b"ms k 2\r\nhixy".to_vec(), BAD_DATA_CHUNK),
        (b"ms k 2 q\r\nhixy".to_vec(), BAD_DATA_CHUNK),
        (b"me\r\n".to_vec(), BAD_FORMAT),
        (b"me k b\r\n".to_vec(), BAD_FORMAT),
    ];
    // Every error here skips the whole input: the line, and the block if one was sent.
    for (wire, reason) in table {
        assert_split_points(&wire, &Err(client_error(wire.len(), reason)));
    }
}

// Goal: client-side composing of meta requests parses back to the flags given.
#[test]
fn meta_compose_client() {
    let flags = [Flag::ReturnValue, Flag::Opaque(b"7"), Flag::UpdateTtl { ttl_secs: 9 }];
    let mut buf = Vec::new();
    crate::meta::compose_meta(MetaCommand::Get, b"key", flags, b"", &mut buf);
    assert_eq!(buf, b"mg key v O7 T9\r\n");
    crate::meta::compose_meta(MetaCommand::Set, b"key", [Flag::Mode(b'E')], b"val", &mut buf);
    let (first, used) = parse(&buf).expect("mg");
    let Request::MetaGet(get) = first else { panic!("mg") };
    assert!(get.flags.iter().eq(flags));
    let Ok((Request::MetaSet(set), _)) = parse(&buf[used..]) else { panic!("ms") };
    assert_eq!((set.mode, set.value), (SetMode::Add, &b"val"[..]));
    assert_eq!(MetaFlags::default(), MetaFlags::default());
}

// Goal: the plain-get shortcut takes only lines the framed parser reads the same way
// (request and length), and leaves every other shape to it: keys at and past the length
// limit, control bytes, tabs, high bytes, CR inside, bare LF, extra spaces, unfinished
// lines, several keys, other commands.
#[test]
fn plain_get_is_the_framed_parse() {
    let limits = super::limits();
    let long = |n: usize| [b"get ".to_vec(), vec![b'k'; n], b"\r\n".to_vec()].concat();
    let mut lines: Vec<Vec<u8>> = vec![long(1), long(249), long(250), long(251), long(2000)];
    for line in [
        &b"get a\r\n"[..],
        b"get a\r\nget b\r\n",
        b"get \xffkey\x7f\r\n",
        b"get \0k\r\n",
        b"get a\tb\r\n",
        b"get a\rb\r\n",
        b"get a\n",
        b"get a \r\n",
        b"get  a\r\n",
        b"get a b\r\n",
        b"get a\r",
        b"get a",
        b"get \r\n",
        b"get\r\n",
        b"gets a\r\n",
        b"GET a\r\n",
        b"get a\r\nset",
    ] {
        lines.push(line.to_vec());
    }
    let mut rng = super::Rng::new(super::seed());
    for _ in 0..2000 {
        let len = rng.below(12) as usize;
        let key: Vec<u8> = (0..len)
            .map(|_| [b'a', b' ', b'\r', b'\n', b'\t', 0, 0xff][rng.below(7) as usize])
            .collect();
        lines.push([b"get ".to_vec(), key, b"\r\n".to_vec()].concat());
    }
    let mut taken = 0;
    for line in &lines {
        let framed = crate::request::parse_framed(line, &limits);
        if let Some(shortcut) = crate::text::request::plain_get(line, &limits) {
            taken += 1;
            assert_eq!(Ok(shortcut), framed, "{:?}", String::from_utf8_lossy(line));
        }
        assert_eq!(crate::parse_request(line, &limits), framed);
    }
    assert!(taken > 10, "the shortcut took {taken} lines");
}

// Goal: the plain-set shortcut takes only requests the framed parser reads the same way
// (request and length), and leaves every other shape to it: keys and numbers at and past
// their limits, signs, noreply, extra spaces, bare LF, blocks unfinished, too large or badly
// ended, other storage commands.
#[test]
fn plain_set_is_the_framed_parse() {
    let limits = super::limits();
    let set = |key: &[u8], numbers: &[u8], block: &[u8]| {
        [b"set ", key, b" ", numbers, b"\r\n", block].concat()
    };
    let mut wires: Vec<Vec<u8>> = vec![
        set(&[b'k'; 250], b"0 0 1", b"v\r\n"),
        set(&[b'k'; 251], b"0 0 1", b"v\r\n"),
        set(b"k", b"999999999 999999999 1", b"v\r\n"),
        set(b"k", b"4294967295 0 1", b"v\r\n"),
        set(b"k", b"0 2147483648 1", b"v\r\n"),
        set(b"k", b"0 0 1048576", &[[b'v'; 1048576].as_slice(), b"\r\n"].concat()),
        set(b"k", b"0 0 1048577", &[[b'v'; 1048577].as_slice(), b"\r\n"].concat()),
    ];
    for wire in [
        &b"set k 0 0 1\r\nv\r\n"[..],
        b"set k 0 0 1\r\nv\r\nget k\r\n",
        b"set k 007 -1 1\r\nv\r\n",
        b"set k 0 -1 1\r\nv\r\n",
        b"set k +1 0 1\r\nv\r\n",
        b"set k 0 0 1 noreply\r\nv\r\n",
        b"set k 0 0 1\nv\r\n",
        b"set k 0 0 1\r\nvv\r\n",
        b"set k 0 0 1\r\nv\r",
        b"set k 0 0 1\r\nv",
        b"set k 0 0 1\r\n",
        b"set k 0 0 1\r",
        b"set k  0 0 1\r\nv\r\n",
        b"set k 0 0 1 \r\nv\r\n",
        b"set  k 0 0 1\r\nv\r\n",
        b"set k 0 0\r\nv\r\n",
        b"set \xffk\x7f 0 0 1\r\nv\r\n",
        b"set k\tk 0 0 1\r\nv\r\n",
        b"set k\rk 0 0 1\r\nv\r\n",
        b"set k 0 0 0\r\n\r\n",
        b"set k 0 0 -1\r\n\r\n",
        b"SET k 0 0 1\r\nv\r\n",
        b"add k 0 0 1\r\nv\r\n",
    ] {
        wires.push(wire.to_vec());
    }
    let mut rng = super::Rng::new(super::seed());
    for _ in 0..2000 {
        let mut pick = |choices: &[u8], len: u64| -> Vec<u8> {
            let len = rng.below(len) as usize;
            (0..len).map(|_| choices[rng.below(choices.len() as u64) as usize]).collect()
        };
        let key = pick(b"a \r\n\t\0\xff", 6);
        let numbers = pick(b"0123456789  -+\r\n", 16);
        let block = pick(b"v\r\n", 6);
        wires.push(set(&key, &numbers, &block));
        // Well formed, with numbers of up to eleven digits.
        let mut digits = || -> Vec<u8> {
            let len = 1 + rng.below(11);
            (0..len).map(|_| b'0' + rng.below(10) as u8).collect()
        };
        let (flags, exptime) = (digits(), digits());
        let len = rng.below(4) as usize;
        let numbers = [flags, b" ".to_vec(), exptime, format!(" {len}").into_bytes()].concat();
        wires.push(set(b"key", &numbers, &[vec![b'v'; len], b"\r\n".to_vec()].concat()));
    }
    let mut taken = 0;
    for wire in &wires {
        let framed = crate::request::parse_framed(wire, &limits);
        if let Some(shortcut) = crate::text::request::plain_set(wire, &limits) {
            taken += 1;
            assert_eq!(Ok(shortcut), framed, "{:?}", String::from_utf8_lossy(wire));
        }
        assert_eq!(crate::parse_request(wire, &limits), framed);
    }
    assert!(taken > 500, "the shortcut took {taken} requests");
}
