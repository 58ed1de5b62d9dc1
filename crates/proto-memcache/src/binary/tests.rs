//! Round trips, every opcode's header, and the rejections memcached makes.

use super::*;
use crate::Limits;

fn packet(opcode: u8, extras: &[u8], key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let header = Header { magic: REQUEST_MAGIC, opcode, opaque: 7, cas: 9, ..Header::default() };
    request::write_packet(header, extras, key, value, &mut out);
    out
}

/// A body each opcode accepts.
fn valid_body(op: Opcode) -> (Vec<u8>, &'static [u8], &'static [u8]) {
    use Opcode::*;
    match op.loud().0 {
        Version | Noop | Quit | Flush | Stat => (vec![], b"", b""),
        Set | Add | Replace => (vec![0, 0, 0, 1, 0, 0, 0, 2], b"k", b"v"),
        Get | GetK | Delete => (vec![], b"k", b""),
        Increment | Decrement => (vec![0; 20], b"k", b""),
        Append | Prepend => (vec![], b"k", b"v"),
        _ => (vec![0, 0, 0, 5], b"k", b""),
    }
}

// Goal: every opcode's header round-trips through compose and parse, body split intact.
#[test]
fn every_opcode_round_trips() {
    for op in Opcode::ALL {
        let (extras, key, value) = valid_body(op);
        let request = BinRequest {
            opcode: op,
            data_type: 0,
            vbucket: 3,
            opaque: 0xdead_beef,
            cas: u64::MAX - 1,
            extras: &extras,
            key,
            value,
        };
        let mut wire = Vec::new();
        request.compose(&mut wire);
        assert_eq!(wire[0], REQUEST_MAGIC);
        assert_eq!(wire[1], op as u8);
        assert_eq!(Opcode::from_u8(op as u8), Some(op));
        // Incomplete at every prefix, complete at the end.
        for cut in 0..wire.len() {
            assert_eq!(
                parse_request(&wire[..cut], &Limits::default()),
                Err(BinParseError::Incomplete)
            );
        }
        wire.extend_from_slice(b"\x80next");
        assert_eq!(
            parse_request(&wire, &Limits::default()),
            Ok((request, wire.len() - 5)),
            "{op:?}"
        );
    }
}

// Goal: the header layout, byte for byte (memcached's protocol_binary.h).
#[test]
fn header_bytes() {
    let wire = packet(0x01, &[1, 2, 3, 4, 5, 6, 7, 8], b"key", b"val");
    assert_eq!(
        &wire[..24],
        &[0x80, 0x01, 0, 3, 8, 0, 0, 0, 0, 0, 0, 14, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 9]
    );
    let (request, _) = parse_request(&wire, &Limits::default()).expect("complete");
    assert_eq!(request.flags_and_exptime(), (0x0102_0304, 0x0506_0708));
    let mut extras = Vec::new();
    extras.extend_from_slice(&5u64.to_be_bytes());
    extras.extend_from_slice(&6u64.to_be_bytes());
    extras.extend_from_slice(&7u32.to_be_bytes());
    let wire = packet(0x05, &extras, b"n", b"");
    assert_eq!(parse_request(&wire, &Limits::default()).expect("complete").0.arith(), (5, 6, 7));
}

fn rejection(wire: &[u8]) -> (Status, bool) {
    match parse_request(wire, &Limits::default()) {
        Err(BinParseError::Reject { status, close, skip, opaque, .. }) => {
            assert_eq!(skip, wire.len());
            assert_eq!(opaque, 7);
            (status, close)
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
}

// Goal: memcached's rejections: which status, and whether it hangs up.
#[test]
fn rejections() {
    use Status::*;
    assert_eq!(rejection(&packet(0x30, b"", b"abc", b"xyz")), (UnknownCommand, false));
    assert_eq!(rejection(&packet(0x1b, b"", b"", b"")), (UnknownCommand, false));
    assert_eq!(rejection(&packet(0x20, b"", b"", b"")), (UnknownCommand, false));
    assert_eq!(rejection(&packet(0x20, b"", b"x", b"")), (InvalidArguments, true));
    assert_eq!(rejection(&packet(0x21, b"", b"PLAIN", b"x")), (UnknownCommand, false));
    assert_eq!(rejection(&packet(0x22, b"", b"", b"")), (InvalidArguments, true));
    assert_eq!(rejection(&packet(0x00, b"1234", b"a", b"")), (InvalidArguments, true));
    assert_eq!(rejection(&packet(0x00, b"", b"", b"")), (InvalidArguments, true));
    assert_eq!(rejection(&packet(0x00, b"", &[b'a'; 251], b"")), (InvalidArguments, true));
    assert_eq!(rejection(&packet(0x0b, b"", b"a", b"")), (InvalidArguments, true));
    assert_eq!(rejection(&packet(0x01, b"", b"k", b"v")), (InvalidArguments, true));
    assert_eq!(rejection(&packet(0x08, &[0; 8], b"", b"")), (InvalidArguments, true));
    let big = vec![b'x'; crate::limits::VALUE_LEN_MAX_DEFAULT + 1];
    assert_eq!(rejection(&packet(0x11, &[0; 8], b"k", &big)), (TooLarge, false));
    assert_eq!(rejection(&packet(0x0e, b"", b"k", &big)), (TooLarge, false));
    // Decided from the header alone: the value need not be there. A Set waits for its key
    // (the server drops the old item under it, as memcached does); the others do not.
    let wire = packet(0x02, &[0; 8], b"k", &big);
    let Err(BinParseError::Reject { status: TooLarge, skip, .. }) =
        parse_request(&wire[..24], &Limits::default())
    else {
        panic!("rejected from the header");
    };
    assert_eq!(skip, wire.len());
    assert_eq!(crate::binary::refused_set_key(&wire), None);
    for set in [0x01, 0x11] {
        let wire = packet(set, &[0; 8], b"key", &big);
        let key_end = 24 + 8 + 3;
        let limits = Limits::default();
        assert_eq!(parse_request(&wire[..key_end - 1], &limits), Err(BinParseError::Incomplete));
        let Err(BinParseError::Reject { status: TooLarge, skip, .. }) =
            parse_request(&wire[..key_end], &limits)
        else {
            panic!("rejected once the key is in");
        };
        assert_eq!(skip, wire.len());
        assert_eq!(crate::binary::refused_set_key(&wire[..key_end]), Some(&b"key"[..]));
    }
    // Key and extras longer than the body.
    let mut wire = packet(0x00, b"", b"abc", b"");
    wire[11] = 2;
    assert_eq!(rejection(&wire[..26]), (UnknownCommand, true));
    // A wrong magic is judged once the whole header is there, as memcached does.
    assert_eq!(parse_request(b"\x81", &Limits::default()), Err(BinParseError::Incomplete));
    assert_eq!(parse_request(&[b'g'; 24], &Limits::default()), Err(BinParseError::Close));
}

// Goal: responses round-trip; an error carries memcached's message and CAS 0.
#[test]
fn responses() {
    let mut out = Vec::new();
    let reply = Reply { opcode: 0x0c, status: Status::NoError, opaque: 5, cas: 77 };
    compose_response(&reply, &3u32.to_be_bytes(), b"k", b"value", &mut out);
    compose_error(0x12, Status::KeyExists, 6, &mut out);
    let (first, used) = parse_response(&out, &Limits::default()).expect("complete");
    assert_eq!((first.opcode, first.status, first.opaque, first.cas), (0x0c, 0, 5, 77));
    assert_eq!((first.flags(), first.key, first.value), (Some(3), &b"k"[..], &b"value"[..]));
    let (second, rest) = parse_response(&out[used..], &Limits::default()).expect("complete");
    assert_eq!((second.opcode, second.status, second.cas), (0x12, 2, 0));
    assert_eq!(second.value, b"Data exists for key.");
    assert_eq!(used + rest, out.len());
    assert_eq!(
        parse_response(&out[..30], &Limits::default()),
        Err(crate::ResponseError::Incomplete)
    );
    for status in [0u16, 1, 2, 3, 4, 5, 6, 0x20, 0x81, 0x82] {
        assert_eq!(Status::from_u16(status).map(|s| s as u16), Some(status));
    }
}
