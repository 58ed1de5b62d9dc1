//! Limits at their edges, and pipelines.

use super::{assert_split_points, client_error, parse};
use crate::{
    error::{BAD_FORMAT, TOO_LARGE, TOO_MANY_KEYS},
    parse_request, ErrorReply, Limits, ParseError, Request,
};

// Goal: a 250-byte key is taken and a 251-byte one refused, by every keyed command.
#[test]
fn key_length_edge() {
    for (len, ok) in [(250, true), (251, false)] {
        let key = "k".repeat(len);
        let lines = [
            format!("get a {key}\r\n"),
            format!("set {key} 0 0 1\r\nx\r\n"),
            format!("delete {key}\r\n"),
            format!("incr {key} 1\r\n"),
            format!("touch {key} 1\r\n"),
            format!("mg {key} v\r\n"),
            format!("md {key}\r\n"),
            format!("ma {key}\r\n"),
            format!("me {key}\r\n"),
        ];
        for wire in &lines {
            let outcome = parse(wire.as_bytes());
            if ok {
                assert!(outcome.is_ok(), "{len}: {wire}: {outcome:?}");
            } else {
                // No swallow: memcached refuses the key before reading the block length,
                // so a storage command's block is left to be read as a command.
                let line_len = wire.find('\n').expect("a line") + 1;
                assert_eq!(outcome, Err(client_error(line_len, BAD_FORMAT)), "{len}: {wire}");
            }
        }
    }
}

// Goal: a 2048-byte line is read, a 2049-byte one closes the connection whether or not its
// newline has arrived; get lines may be longer, up to their own limit.
#[test]
fn line_length_edge() {
    let line_of = |len: usize| {
        let mut line = b"stats ".to_vec();
        line.resize(len, b'x');
        line
    };
    let ok = [line_of(2048), b"\r\n".to_vec()].concat();
    assert!(parse(&ok).is_ok());
    assert_eq!(parse(&ok[..2048]), Err(ParseError::Incomplete));
    assert_eq!(parse(&ok[..2049]), Err(ParseError::Incomplete), "the CR may end the line");
    // Past 2048 bytes a line is served only if it is already whole, up to 16 KB with its
    // newline (memcached's read buffer); still arriving, it is hung up on.
    let long = [line_of(2049), b"\r\n".to_vec()].concat();
    assert!(parse(&long).is_ok());
    assert_eq!(parse(&long[..2049]), Err(ParseError::Close));
    assert_eq!(parse(&[b'x'; 5000]), Err(ParseError::Close));
    let whole_max = [line_of(16 * 1024 - 2), b"\r\n".to_vec()].concat();
    assert!(parse(&whole_max).is_ok());
    let whole_over = [line_of(16 * 1024 - 1), b"\r\n".to_vec()].concat();
    assert_eq!(parse(&whole_over), Err(ParseError::Close));
    let bare_newline_max = [line_of(16 * 1024 - 1), b"\n".to_vec()].concat();
    assert!(parse(&bare_newline_max).is_ok());

    let limits = Limits::default();
    let keys: String = (0..1000).map(|i| format!(" key{i}")).collect();
    let get = format!("get{keys}\r\n");
    assert!(get.len() > 2048);
    let Ok((Request::Retrieve(retrieve), _)) = parse_request(get.as_bytes(), &limits) else {
        panic!("a long get parses");
    };
    assert_eq!(retrieve.keys.len(), 1000);
    assert_eq!(parse_request(&get.as_bytes()[..3000], &limits), Err(ParseError::Incomplete));
    let gat = format!("gat 0{keys}\r\n");
    assert!(parse_request(gat.as_bytes(), &limits).is_ok(), "whole in one read");
    assert_eq!(parse_request(&gat.as_bytes()[..3000], &limits), Err(ParseError::Close));
    let gat_over = format!("gat 0{keys}{keys}{keys}\r\n");
    assert!(gat_over.len() > 16 * 1024);
    assert_eq!(parse_request(gat_over.as_bytes(), &limits), Err(ParseError::Close));
    let small = Limits { get_line_len_max: 2100, line_len_max_whole: 2100, ..limits };
    assert_eq!(parse_request(get.as_bytes(), &small), Err(ParseError::Close));
}

// Goal: by default a get takes any number of keys (memcached serves 20,000-key gets), up
// to its line limit; a bound, where one is configured, is refused with our own reason.
#[test]
fn many_keys_by_default() {
    let keys: String = (0..20_000).map(|i| format!(" k{i:05}")).collect();
    let get = format!("get{keys}\r\n");
    let Ok((Request::Retrieve(retrieve), used)) = parse(get.as_bytes()) else {
        panic!("a 20,000-key get parses");
    };
    assert_eq!((retrieve.keys.len(), used), (20_000, get.len()));
    let megabyte: String = (0..100_000).map(|i| format!(" x{i:09}")).collect();
    assert!(parse(format!("gets{megabyte}\r\n").as_bytes()).is_ok());
    let over = "k".repeat(Limits::default().get_line_len_max);
    assert_eq!(parse(format!("get {over}").as_bytes()), Err(ParseError::Close));
}

// Goal: too many keys in one get is refused with our own reason, at the edge.
#[test]
fn keys_per_get_edge() {
    let limits = Limits { keys_per_get_max: 3, ..Limits::default() };
    assert!(parse_request(b"get a b c\r\n", &limits).is_ok());
    assert_eq!(parse_request(b"gets a b c d\r\n", &limits), Err(client_error(14, TOO_MANY_KEYS)));
}

// Goal: a value of exactly value_len_max is stored; one byte more gets SERVER_ERROR and
// the whole block is swallowed, even before it arrives; set and ms also name the key whose
// old item goes (memcached unlinks it), the other modes keep it.
#[test]
fn value_length_edge() {
    let limits = Limits { value_len_max: 10, ..Limits::default() };
    for (command, drops_old) in [("set k 0 0", true), ("add k 0 0", false), ("ms k", true)] {
        let ok = format!("{command} 10\r\n0123456789\r\n");
        assert!(parse_request(ok.as_bytes(), &limits).is_ok(), "{command}");
        let big = format!("{command} 11\r\n0123456789A\r\nversion\r\n");
        let line_len = big.find('\n').expect("a line") + 1;
        let skip = line_len + 11 + 2;
        let expected = Err(if drops_old {
            let (key_start, key_len, base64_key) = (command.find(" k").unwrap() + 1, 1, false);
            ParseError::TooLarge { skip, noreply: false, key_start, key_len, base64_key }
        } else {
            ParseError::Invalid { skip, reply: ErrorReply::ServerError(TOO_LARGE), noreply: false }
        });
        assert_eq!(parse_request(big.as_bytes(), &limits), expected, "{command}");
        assert_eq!(parse_request(&big.as_bytes()[..line_len], &limits), expected);
        assert_eq!(parse_request(&big.as_bytes()[skip..], &limits), Ok((Request::Version, 9)));
    }
    // A base64 meta key is handed over as sent, to be decoded.
    let wire = b"ms  a2V5 11 b q\r\n";
    let expected = ParseError::TooLarge {
        skip: wire.len() + 13,
        noreply: false,
        key_start: 4,
        key_len: 4,
        base64_key: true,
    };
    assert_eq!(parse_request(wire, &limits), Err(expected));
    // The default limit is 1 MiB, and the reply is memcached's.
    let mut wire = b"append k 0 0 1048577 noreply\r\n".to_vec();
    wire.resize(wire.len() + 1_048_577, b'v');
    wire.extend_from_slice(b"\r\n");
    let expected = ParseError::Invalid {
        skip: wire.len(),
        reply: ErrorReply::ServerError(TOO_LARGE),
        noreply: true,
    };
    assert_eq!(parse(&wire), Err(expected));
    let mut reply = Vec::new();
    ErrorReply::ServerError(TOO_LARGE).compose(&mut reply);
    assert_eq!(reply, b"SERVER_ERROR object too large for cache\r\n");
}

// Goal: many requests in one buffer parse one after another, errors skipped in between.
// As in memcached, a bad chunk skips exactly <bytes> + 2, so the stray `\n` after `xy\r`
// reads as an empty command line and gets ERROR.
#[test]
fn pipeline() {
    let wire: &[u8] =
        b"get a b\r\nset k 0 0 2\r\nhi\r\nbogus\r\nmg k v\nset k 0 0 1\r\nxy\r\nmn\r\n";
    let mut rest = wire;
    let mut seen = Vec::new();
    while !rest.is_empty() {
        match parse(rest) {
            Ok((request, used)) => {
                seen.push(format!("{request:?}").split(['(', ' ']).next().unwrap_or("").to_owned());
                rest = &rest[used..];
            }
            Err(ParseError::Invalid { skip, reply, .. }) => {
                seen.push(reply.to_string());
                rest = &rest[skip..];
            }
            Err(other) => panic!("{other:?}"),
        }
    }
    let expected = [
        "Retrieve",
        "Store",
        "ERROR",
        "MetaGet",
        "CLIENT_ERROR bad data chunk",
        "ERROR",
        "MetaNoop",
    ];
    assert_eq!(seen, expected);
    assert_split_points(b"get a\r\n", &Ok((parse(b"get a\r\n").expect("ok").0, 7)));
}
