//! Replies: composing (server side), parsing (client side), and the round trip.

use super::{seed, Rng};
use crate::{
    meta::{
        compose_meta_reply, quiet_suppresses, ItemInfo, MetaCommand, MetaReply, MetaStatus,
        RecacheState,
    },
    parse_request, parse_response,
    text::response::{compose_end, compose_number, compose_stat, compose_stat_u64, compose_value},
    text::response::{compose_version, Status},
    Limits, Request, Response, ResponseError,
};

fn parse(wire: &[u8]) -> Result<(Response<'_>, usize), ResponseError> {
    parse_response(wire, &Limits::default())
}

// Goal: each kind of reply parses whole, is Incomplete at every split point, and composes
// back to the same bytes.
#[test]
fn wire_table() {
    let table: [&[u8]; 22] = [
        b"VALUE a 5 2\r\nhi\r\nVALUE bb 0 0 77\r\n\r\nEND\r\n",
        b"END\r\n",
        b"STAT pid 12\r\nSTAT version 1.6.21\r\nEND\r\n",
        b"STORED\r\n",
        b"NOT_STORED\r\n",
        b"EXISTS\r\n",
        b"NOT_FOUND\r\n",
        b"DELETED\r\n",
        b"TOUCHED\r\n",
        b"OK\r\n",
        b"18446744073709551615\r\n",
        b"VERSION 1.6.21\r\n",
        b"ERROR\r\n",
        b"CLIENT_ERROR bad data chunk\r\n",
        b"SERVER_ERROR object too large for cache\r\n",
        b"HD\r\n",
        b"HD c5 Oab kfoo b W\r\n",
        b"VA 2 s2 t-1\r\nhi\r\n",
        b"EN\r\n",
        b"NS\r\n",
        b"MN\r\n",
        b"ME foo exp=-1 la=2 cas=3 fetch=no cls=1 size=63\r\n",
    ];
    for wire in table {
        for split in 0..wire.len() {
            assert_eq!(parse(&wire[..split]), Err(ResponseError::Incomplete), "{split} {wire:?}");
        }
        let (response, used) = parse(wire).expect("parses");
        assert_eq!(used, wire.len());
        let mut again = Vec::new();
        response.compose(&mut again);
        assert_eq!(again, wire, "{}", String::from_utf8_lossy(wire));
    }
    let (Response::Values(values), _) = parse(table[0]).expect("values") else { panic!() };
    let items: Vec<_> =
        values.iter().map(|item| (item.key, item.flags, item.cas, item.data)).collect();
    assert_eq!(items, [(&b"a"[..], 5, None, &b"hi"[..]), (b"bb", 0, Some(77), b"")]);
    let (Response::Meta(meta), _) = parse(b"HD c5 W\r\n").expect("meta") else { panic!() };
    assert_eq!(
        (meta.flags.cas(), meta.flags.has(b'W'), meta.flags.has(b'X')),
        (Some(5), true, false)
    );
    assert_eq!(parse(b"5   \r\n").map(|(r, _)| r), Ok(Response::Number(5)));
}

// Goal: garbage from a server is reported, not guessed at.
#[test]
fn malformed() {
    for wire in [
        &b"HELLO\r\n"[..],
        b"VALUE a x 1\r\nx\r\nEND\r\n",
        b"VALUE a 0 1\r\nxy\r\n",
        b"VA x\r\n",
        b"STAT a 1\r\nOK\r\n",
    ] {
        assert!(matches!(parse(wire), Err(ResponseError::Malformed { .. })), "{wire:?}");
    }
    assert!(matches!(parse(&[b'x'; 3000]), Err(ResponseError::Malformed { .. })));
}

// Goal: the server-side helpers write memcached's exact lines.
#[test]
fn compose_helpers() {
    let mut buf = Vec::new();
    compose_value(b"k", 3, b"data", None, &mut buf);
    compose_value(b"k", 3, b"data", Some(9), &mut buf);
    compose_end(&mut buf);
    compose_number(42, &mut buf);
    compose_version(b"1.6.21", &mut buf);
    compose_stat(b"pid", b"1", &mut buf);
    compose_stat_u64(b"curr_items", 7, &mut buf);
    let expected: &[u8] = b"VALUE k 3 4\r\ndata\r\nVALUE k 3 4 9\r\ndata\r\nEND\r\n42\r\n\
        VERSION 1.6.21\r\nSTAT pid 1\r\nSTAT curr_items 7\r\n";
    assert_eq!(buf, expected);
}

// Goal: a VALUE item is the same bytes whichever way it is made (short key and data in
// one stack buffer, short key alone, long key): every key length to 70, data length to
// 40, numbers of one to twenty digits, with and without a CAS, appended after other bytes.
#[test]
fn compose_value_every_length() {
    let numbers = [0u64, 7, 42, 100, 65_535, u64::from(u32::MAX), u64::MAX];
    for key_len in 0..=70usize {
        let key: Vec<u8> = (0..key_len).map(|i| b'a' + (i % 26) as u8).collect();
        for data_len in 0..=40usize {
            let data: Vec<u8> = (0..data_len).map(|i| (i * 7) as u8).collect();
            for (i, &number) in numbers.iter().enumerate() {
                let flags = number as u32;
                let cas = (i % 2 == 1).then_some(number);
                let mut buf = b"before".to_vec();
                compose_value(&key, flags, &data, cas, &mut buf);
                let mut expected = b"before".to_vec();
                expected.extend_from_slice(b"VALUE ");
                expected.extend_from_slice(&key);
                expected.extend_from_slice(format!(" {flags} {data_len}").as_bytes());
                if let Some(cas) = cas {
                    expected.extend_from_slice(format!(" {cas}").as_bytes());
                }
                expected.extend_from_slice(b"\r\n");
                expected.extend_from_slice(&data);
                expected.extend_from_slice(b"\r\n");
                assert_eq!(buf, expected, "key {key_len}, data {data_len}, number {number}");
            }
        }
    }
}

// Goal: a meta reply returns the requested flags in request order, O and k on a miss
// too, then Z X W; the quiet table matches memcached.
#[test]
fn meta_reply_order() {
    let wire = b"mg Zm9v t O42 v k c f s h l b\r\n";
    let Ok((Request::MetaGet(get), _)) = parse_request(wire, &Limits::default()) else {
        panic!("mg parses")
    };
    let item = ItemInfo {
        cas: Some(7),
        client_flags: Some(3),
        hit_before: Some(true),
        last_access_secs: Some(5),
        value_len: Some(2),
        ttl_secs: Some(-1),
    };
    let recache = RecacheState { already_won: false, stale: true, won: true };
    let mut buf = Vec::new();
    compose_meta_reply(MetaStatus::Va, &get.flags, get.key, &item, recache, Some(b"hi"), &mut buf);
    assert_eq!(buf, b"VA 2 t-1 O42 kZm9v b c7 f3 s2 h1 l5 X W\r\nhi\r\n");
    buf.clear();
    let miss = ItemInfo::default();
    compose_meta_reply(
        MetaStatus::En,
        &get.flags,
        get.key,
        &miss,
        RecacheState::default(),
        None,
        &mut buf,
    );
    assert_eq!(buf, b"EN O42 kZm9v b\r\n");
    buf.clear();
    let mut reply = MetaReply::new(&mut buf, MetaStatus::Hd);
    reply.flag_i64(b't', 30).flag(b'Z');
    reply.finish();
    assert_eq!(buf, b"HD t30 Z\r\n");

    assert!(quiet_suppresses(MetaCommand::Get, MetaStatus::En));
    assert!(!quiet_suppresses(MetaCommand::Get, MetaStatus::Hd));
    assert!(quiet_suppresses(MetaCommand::Set, MetaStatus::Hd));
    assert!(!quiet_suppresses(MetaCommand::Set, MetaStatus::Ns));
    assert!(quiet_suppresses(MetaCommand::Delete, MetaStatus::Hd));
    assert!(!quiet_suppresses(MetaCommand::Delete, MetaStatus::Nf));
    assert!(quiet_suppresses(MetaCommand::Arith, MetaStatus::Va));
    assert!(!quiet_suppresses(MetaCommand::Noop, MetaStatus::Mn));
}

fn token(rng: &mut Rng) -> Vec<u8> {
    (0..1 + rng.below(12)).map(|_| b'!' + rng.below(90) as u8).collect()
}

// Goal: parse(compose(x)) == x for replies; method: 3000 random replies, pipelined.
#[test]
fn response_round_trip() {
    let seed = seed();
    let mut rng = Rng::new(seed ^ 0xbeef);
    let mut wire = Vec::new();
    let mut count = 0;
    for _ in 0..3000 {
        let before = wire.len();
        match rng.below(8) {
            0 => {
                for _ in 0..rng.below(4) {
                    let data: Vec<u8> = (0..rng.below(40)).map(|_| rng.below(256) as u8).collect();
                    let cas = rng.chance(2).then(|| rng.next_u64());
                    compose_value(&token(&mut rng), rng.next_u64() as u32, &data, cas, &mut wire);
                }
                compose_end(&mut wire);
            }
            1 => {
                for _ in 0..1 + rng.below(4) {
                    compose_stat(&token(&mut rng), &token(&mut rng), &mut wire);
                }
                compose_end(&mut wire);
            }
            2 => {
                let statuses = [
                    Status::Stored,
                    Status::NotStored,
                    Status::Exists,
                    Status::NotFound,
                    Status::Deleted,
                    Status::Touched,
                    Status::Ok,
                    Status::Reset,
                ];
                crate::text::response::compose_status(statuses[rng.below(8) as usize], &mut wire);
            }
            3 => compose_number(rng.next_u64(), &mut wire),
            4 => compose_version(&token(&mut rng), &mut wire),
            5 => crate::ErrorReply::ClientError("bad data chunk").compose(&mut wire),
            _ => {
                let statuses = [
                    MetaStatus::Hd,
                    MetaStatus::En,
                    MetaStatus::Ns,
                    MetaStatus::Ex,
                    MetaStatus::Nf,
                    MetaStatus::Mn,
                ];
                let value: Vec<u8> = (0..rng.below(40)).map(|_| rng.below(256) as u8).collect();
                let mut reply = if rng.chance(2) {
                    MetaReply::value(&mut wire, value.len())
                } else {
                    MetaReply::new(&mut wire, statuses[rng.below(6) as usize])
                };
                let with_value = reply_has_value(&reply);
                for _ in 0..rng.below(5) {
                    let letter = b'a' + rng.below(26) as u8;
                    reply.flag_u64(letter, rng.next_u64());
                }
                if with_value {
                    reply.finish_value(&value);
                } else {
                    reply.finish();
                }
            }
        }
        let (response, used) = parse(&wire[before..]).unwrap_or_else(|error| {
            panic!("seed {seed}: {error:?} for {:?}", String::from_utf8_lossy(&wire[before..]))
        });
        assert_eq!(used, wire.len() - before, "seed {seed}");
        let mut again = Vec::new();
        response.compose(&mut again);
        assert_eq!(again, &wire[before..], "seed {seed}");
        count += 1;
    }
    let mut rest = &wire[..];
    let mut parsed = 0;
    while let Ok((_, used)) = parse(rest) {
        rest = &rest[used..];
        parsed += 1;
    }
    assert_eq!((parsed, rest.len()), (count, 0), "seed {seed}");
}

fn reply_has_value(reply: &MetaReply<'_>) -> bool {
    reply.expects_value()
}

// Goal: a VALUE line reads the same whether it was made in the stack buffer (short keys)
// or piece by piece (longer ones): keys around the boundary, numbers of every width.
#[test]
fn value_lines_at_every_key_length() {
    let numbers = [0u64, 9, 10, 42, 99, 100, 4_294_967_295, u64::MAX];
    for key_len in [0usize, 1, 63, 64, 65, 250] {
        let key = vec![b'k'; key_len];
        for (&flags, &cas) in numbers.iter().zip(numbers.iter().rev()) {
            let flags = u32::try_from(flags).unwrap_or(u32::MAX);
            for cas in [None, Some(cas)] {
                let data = vec![b'v'; (flags % 7) as usize];
                let mut buf = b"before".to_vec();
                compose_value(&key, flags, &data, cas, &mut buf);
                let cas = cas.map(|cas| format!(" {cas}")).unwrap_or_default();
                let key = String::from_utf8(key.clone()).unwrap();
                let data = String::from_utf8(data.clone()).unwrap();
                let want = format!("beforeVALUE {key} {flags} {}{cas}\r\n{data}\r\n", data.len());
                assert_eq!(String::from_utf8(buf).unwrap(), want);
            }
        }
    }
}
