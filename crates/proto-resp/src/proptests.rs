//! Randomized tests: round trips through compose and parse in both directions, and the
//! fuzz target's invariants over many random and mutated inputs. Seeds are printed on
//! failure; replay with `PROTO_RESP_SEED=<seed>`.

use crate::{
    compose_command,
    parse::fuzz_check,
    parse_command, parse_reply,
    testutil::{with_seed, Rng},
    Limits, Protocol, Reply, Value,
};

/// Bytes that matter to the framing, plus a few ordinary ones.
const WIRE_BYTES: &[u8] = b"*$:+-_#,(!=%~>|\r\n\r\n0123456789-?ab \"'\\x\0\xff";

fn random_args(rng: &mut Rng) -> Vec<Vec<u8>> {
    let argc = 1 + rng.below(6);
    (0..argc)
        .map(|_| {
            let len = if rng.chance(20) { 200 + rng.below(2000) } else { rng.below(12) };
            rng.bytes(len, WIRE_BYTES)
        })
        .collect()
}

/// Goal: `parse_command(compose_command(args)) == args` for binary arguments, alone and
/// pipelined. Method: random argument lists over the framing bytes.
#[test]
fn command_round_trip() {
    with_seed("command_round_trip", |rng| {
        let limits = Limits::default();
        for _ in 0..2_000 {
            let batch: Vec<Vec<Vec<u8>>> =
                (0..1 + rng.below(4)).map(|_| random_args(rng)).collect();
            let mut wire = Vec::new();
            for args in &batch {
                let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                compose_command(&refs, &mut wire);
            }
            let mut rest = &wire[..];
            for args in &batch {
                let (command, used) =
                    parse_command(rest, &limits).expect("composed command parses");
                assert!(command.args().eq(args.iter().map(Vec::as_slice)));
                rest = &rest[used..];
            }
            assert!(rest.is_empty());
        }
    });
}

fn random_value(rng: &mut Rng, depth: usize) -> Value<'static> {
    const TEXT: &[u8] = b"abc XYZ:09-";
    let leaked = |bytes: Vec<u8>| -> &'static [u8] { Box::leak(bytes.into_boxed_slice()) };
    let kind = if depth >= 3 { rng.below(11) } else { rng.below(17) };
    let len = rng.below(8);
    match kind {
        0 => Value::Simple(leaked(rng.bytes(len, TEXT))),
        1 => Value::Error(leaked(rng.bytes(len, TEXT))),
        2 => Value::Integer(rng.next_u64() as i64),
        3 => Value::Bulk(leaked(rng.bytes(len * 3, WIRE_BYTES))),
        4 => Value::NullBulk,
        5 => Value::NullArray,
        6 => Value::Null,
        7 => Value::Boolean(rng.chance(2)),
        8 => {
            let d = f64::from_bits(rng.next_u64());
            Value::Double(if d.is_nan() { 0.5 } else { d })
        }
        9 => Value::BigNumber(leaked([b"-".to_vec(), rng.bytes(1 + len, b"0123456789")].concat())),
        10 => Value::Verbatim { format: *b"txt", text: leaked(rng.bytes(len, WIRE_BYTES)) },
        11 => Value::BulkError(leaked(rng.bytes(len, WIRE_BYTES))),
        12 => Value::Array((0..len).map(|_| random_value(rng, depth + 1)).collect()),
        13 => Value::Set((0..len).map(|_| random_value(rng, depth + 1)).collect()),
        14 => Value::Push((0..len).map(|_| random_value(rng, depth + 1)).collect()),
        15 => Value::Map(
            (0..len)
                .map(|_| (random_value(rng, depth + 1), random_value(rng, depth + 1)))
                .collect(),
        ),
        _ => Value::Attribute {
            attrs: vec![(Value::Simple(b"key"), random_value(rng, depth + 1))],
            value: Box::new(random_value(rng, depth + 1)),
        },
    }
}

/// Goal: `parse_reply(encode(v)) == v` for nested values of every type, and every cut of
/// the encoding is Incomplete. Method: random value trees.
#[test]
fn reply_round_trip() {
    with_seed("reply_round_trip", |rng| {
        for _ in 0..1_000 {
            let value = random_value(rng, 0);
            let mut wire = Vec::new();
            value.encode(&mut wire);
            assert_eq!(parse_reply(&wire), Ok((value.clone(), wire.len())));
            let cut = rng.below(wire.len());
            assert_eq!(parse_reply(&wire[..cut]), Err(crate::ParseError::Incomplete));
        }
    });
}

/// Goal: what `Reply` composes is what a client parses, in each version. Method: table of
/// (call, value read by a RESP2 client, value read by a RESP3 client).
#[test]
fn reply_writer_to_client() {
    type Case = (fn(&mut Reply), Value<'static>, Value<'static>);
    let table: Vec<Case> = vec![
        (|r| r.null(), Value::NullBulk, Value::Null),
        (|r| r.null_array(), Value::NullArray, Value::Null),
        (|r| r.double(0.1), Value::Bulk(b"0.1"), Value::Double(0.1)),
        (|r| r.boolean(true), Value::Integer(1), Value::Boolean(true)),
        (|r| r.big_number(b"12"), Value::Bulk(b"12"), Value::BigNumber(b"12")),
        (
            |r| r.verbatim(b"mkd", b"# x"),
            Value::Bulk(b"# x"),
            Value::Verbatim { format: *b"mkd", text: b"# x" },
        ),
        (
            |r| {
                r.map(1);
                r.bulk(b"k");
                r.integer(1);
            },
            Value::Array(vec![Value::Bulk(b"k"), Value::Integer(1)]),
            Value::Map(vec![(Value::Bulk(b"k"), Value::Integer(1))]),
        ),
        (
            |r| {
                r.set(1);
                r.simple(b"a");
            },
            Value::Array(vec![Value::Simple(b"a")]),
            Value::Set(vec![Value::Simple(b"a")]),
        ),
        (
            |r| {
                r.push(1);
                r.error(b"WRONGTYPE x");
            },
            Value::Array(vec![Value::Error(b"WRONGTYPE x")]),
            Value::Push(vec![Value::Error(b"WRONGTYPE x")]),
        ),
    ];
    for (call, resp2, resp3) in table {
        for (protocol, want) in [(Protocol::Resp2, resp2), (Protocol::Resp3, resp3)] {
            let mut out = Vec::new();
            call(&mut Reply::new(&mut out, protocol));
            assert_eq!(parse_reply(&out), Ok((want, out.len())), "{protocol:?}");
        }
    }
}

/// Goal: the fuzz target's invariants hold on 20k inputs without a fuzzer. Method: half
/// random framing bytes, half valid commands with flips, inserts, deletions and cuts.
#[test]
fn fuzz_invariants() {
    with_seed("fuzz_invariants", |rng| {
        let limits = Limits::default();
        for _ in 0..20_000 {
            let mut data = vec![rng.next_u64() as u8];
            if rng.chance(2) {
                let len = rng.below(64);
                data.extend(rng.bytes(len, WIRE_BYTES));
            } else {
                let args = random_args(rng);
                let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                if rng.chance(3) {
                    // Inline form: words joined by spaces.
                    data.extend(refs.join(&b' '));
                    data.extend_from_slice(b"\r\n");
                } else {
                    compose_command(&refs, &mut data);
                }
                for _ in 0..rng.below(4) {
                    let at = 1 + rng.below(data.len());
                    match rng.below(4) {
                        0 if at < data.len() => data[at] = WIRE_BYTES[rng.below(WIRE_BYTES.len())],
                        1 => data.insert(at, WIRE_BYTES[rng.below(WIRE_BYTES.len())]),
                        2 if at < data.len() => {
                            data.remove(at);
                        }
                        _ => data.truncate(at),
                    }
                }
            }
            fuzz_check(&data);
            // Whatever happened, the default parser must not panic on the raw bytes too.
            let _ = parse_command(&data, &limits);
        }
    });
}
