//! Randomized tests: parse(compose(x)) == x for generated requests, and the parse
//! invariants over 20k random and mutated inputs. Each prints its seed on failure;
//! `PROTO_MEMCACHE_SEED=<n>` replays one.

use super::{limits, parse, seed, Rng};
use crate::{
    invariants::check_parse_request,
    meta::{compose_flags, Flag, MetaCommand},
    text::{response::Status, RetrieveKind, StoreCommand},
};

fn word(rng: &mut Rng, len_max: u64) -> Vec<u8> {
    let len = 1 + rng.below(len_max);
    // Any byte that can sit in a key: not space, CR, LF; sometimes a high byte.
    (0..len)
        .map(|_| loop {
            let b = if rng.chance(8) { rng.below(256) as u8 } else { b'a' + rng.below(26) as u8 };
            if !matches!(b, b' ' | b'\r' | b'\n') {
                break b;
            }
        })
        .collect()
}

fn random_flag(rng: &mut Rng, opaque: &[u8]) -> Vec<u8> {
    let flags = [
        Flag::Base64Key,
        Flag::ReturnCas,
        Flag::ReturnFlags,
        Flag::ReturnHit,
        Flag::ReturnKey,
        Flag::ReturnLastAccess,
        Flag::Opaque(opaque),
        Flag::Quiet,
        Flag::ReturnSize,
        Flag::ReturnTtl,
        Flag::NoBump,
        Flag::ReturnValue,
        Flag::Invalidate,
        Flag::RemoveValue,
        Flag::Vivify { ttl_secs: rng.next_u64() as i64 },
        Flag::Recache { ttl_secs: rng.below(100) as i64 - 50 },
        Flag::UpdateTtl { ttl_secs: rng.below(1000) as i64 },
        Flag::NewCas(rng.next_u64()),
        Flag::CompareCas(rng.next_u64()),
        Flag::SetFlags(rng.next_u64() as u32),
        Flag::Delta(rng.next_u64()),
        Flag::Initial(rng.next_u64()),
        Flag::Reserved { letter: b'P', token: opaque },
    ];
    let mut token = Vec::new();
    flags[rng.below(flags.len() as u64) as usize].compose(&mut token);
    token
}

/// One random valid request, as a client would compose it.
fn random_request(rng: &mut Rng) -> Vec<u8> {
    let mut buf = Vec::new();
    let key = word(rng, 40);
    let noreply = if rng.chance(2) { " noreply" } else { "" };
    let key_text = String::from_utf8_lossy(&key).into_owned();
    match rng.below(12) {
        0 => {
            let keys: Vec<Vec<u8>> = (0..1 + rng.below(5)).map(|_| word(rng, 20)).collect();
            let kinds = [
                RetrieveKind::Get,
                RetrieveKind::Gets,
                RetrieveKind::Gat { exptime: rng.below(100) as i64 },
                RetrieveKind::Gats { exptime: -(rng.below(100) as i64) },
            ];
            let kind = kinds[rng.below(4) as usize];
            crate::compose_retrieve(kind, keys.iter().map(Vec::as_slice), &mut buf);
        }
        1 => {
            let commands = [
                StoreCommand::Set,
                StoreCommand::Add,
                StoreCommand::Replace,
                StoreCommand::Append,
                StoreCommand::Prepend,
                StoreCommand::Cas { cas_unique: rng.next_u64() },
            ];
            let value: Vec<u8> = (0..rng.below(64)).map(|_| rng.below(256) as u8).collect();
            let store = crate::text::Store {
                command: commands[rng.below(6) as usize],
                key: &key,
                flags: rng.next_u64() as u32,
                // memcached reads an exptime as a C int: only those survive a round trip.
                exptime: i64::from(rng.next_u64() as i32),
                value: &value,
                noreply: rng.chance(2),
            };
            crate::compose_store(&store, &mut buf);
        }
        2 => buf.extend_from_slice(format!("delete {key_text}{noreply}\r\n").as_bytes()),
        3 => {
            let op = if rng.chance(2) { "incr" } else { "decr" };
            let delta = rng.next_u64();
            buf.extend_from_slice(format!("{op} {key_text} {delta}{noreply}\r\n").as_bytes());
        }
        4 => {
            let exptime = rng.next_u64() as i32;
            buf.extend_from_slice(format!("touch {key_text} {exptime}{noreply}\r\n").as_bytes());
        }
        5 => {
            let delay = if rng.chance(2) { format!(" {}", rng.below(100)) } else { String::new() };
            buf.extend_from_slice(format!("flush_all{delay}{noreply}\r\n").as_bytes());
        }
        6 => {
            let line: &[u8] = [&b"version\r\n"[..], b"quit\r\n", b"mn\r\n", b"stats items\r\n"]
                [rng.below(4) as usize];
            buf.extend_from_slice(line);
        }
        7 => buf.extend_from_slice(format!("verbosity {}{noreply}\r\n", rng.below(5)).as_bytes()),
        _ => {
            let commands =
                [MetaCommand::Get, MetaCommand::Set, MetaCommand::Delete, MetaCommand::Arith];
            let command = commands[rng.below(4) as usize];
            let opaque = word(rng, 10);
            // Distinct letters only: memcached refuses a repeated flag.
            let mut tokens: Vec<Vec<u8>> = Vec::new();
            for _ in 0..rng.below(8) {
                let token = random_flag(rng, &opaque);
                if token[0] != b'b' && tokens.iter().all(|seen| seen[0] != token[0]) {
                    tokens.push(token);
                }
            }
            let value: Vec<u8> = (0..rng.below(32)).map(|_| rng.below(256) as u8).collect();
            let flags: Vec<Flag> = tokens.iter().filter_map(|t| Flag::parse(t).ok()).collect();
            crate::meta::compose_meta(command, &key, flags.iter().copied(), &value, &mut buf);
            let mut check = Vec::new();
            compose_flags(flags, &mut check);
            assert!(check.len() < 400);
        }
    }
    buf
}

// Goal: composed requests parse back whole, alone and pipelined, and compose to the same
// bytes again (parse(compose(x)) == x); method: 5000 random requests from a seeded PRNG.
#[test]
fn request_round_trip() {
    let seed = seed();
    let mut rng = Rng::new(seed);
    let mut pipeline = Vec::new();
    for round in 0..5000 {
        let wire = random_request(&mut rng);
        let outcome = parse(&wire);
        let Ok((request, used)) = outcome else {
            panic!(
                "seed {seed} round {round}: {:?} -> {outcome:?}",
                String::from_utf8_lossy(&wire)
            );
        };
        assert_eq!(used, wire.len(), "seed {seed} round {round}");
        let mut again = Vec::new();
        request.compose(&mut again);
        assert_eq!(again, wire, "seed {seed} round {round}");
        pipeline.extend_from_slice(&wire);
    }
    let mut rest = &pipeline[..];
    let mut count = 0;
    while let Ok((_, used)) = parse(rest) {
        rest = &rest[used..];
        count += 1;
    }
    assert_eq!((count, rest.len()), (5000, 0), "seed {seed}");
}

/// Tokens a mutation may splice in: verbs, flags and framing bytes (a fuzzer dictionary).
const DICTIONARY: &[&[u8]] = &[
    b"get ",
    b"gets ",
    b"gat ",
    b"set ",
    b"cas ",
    b"delete ",
    b"incr ",
    b"touch ",
    b"mg ",
    b"ms ",
    b"md ",
    b"ma ",
    b"me ",
    b"mn",
    b" noreply",
    b"\r\n",
    b"\n",
    b"\r",
    b" ",
    b"0",
    b"-1",
    b"4294967296",
    b"18446744073709551616",
    b" v",
    b" b",
    b" O",
    b" MA",
    b" N1",
    b"\x80",
    b"HTTP/1.1",
    b"flush_all",
    b"stats",
];

// Goal: no input breaks the parse invariants (see `invariants`); method: 20k inputs that
// are random requests, mutated requests, dictionary soup and raw bytes.
#[test]
fn parse_invariants_random() {
    let seed = seed();
    let mut rng = Rng::new(seed ^ 0xf00d);
    let limits = crate::Limits {
        value_len_max: 64,
        line_len_max: 256,
        line_len_max_whole: 384,
        get_line_len_max: 512,
        ..limits()
    };
    for round in 0..20_000 {
        let mut input = Vec::new();
        match rng.below(4) {
            0 => input = random_request(&mut rng),
            1 => {
                input = random_request(&mut rng);
                for _ in 0..1 + rng.below(4) {
                    let at = rng.below(input.len() as u64 + 1) as usize;
                    match rng.below(3) {
                        0 if at < input.len() => input[at] = rng.below(256) as u8,
                        1 => input
                            .splice(
                                at..at,
                                DICTIONARY[rng.below(DICTIONARY.len() as u64) as usize]
                                    .iter()
                                    .copied(),
                            )
                            .for_each(drop),
                        _ => input.truncate(at),
                    }
                }
            }
            2 => {
                for _ in 0..rng.below(12) {
                    input
                        .extend_from_slice(DICTIONARY[rng.below(DICTIONARY.len() as u64) as usize]);
                    if rng.chance(3) {
                        input.extend_from_slice(&word(&mut rng, 8));
                    }
                }
            }
            _ => input = (0..rng.below(300)).map(|_| rng.below(256) as u8).collect(),
        }
        let outcome = std::panic::catch_unwind(|| check_parse_request(&input, &limits));
        if outcome.is_err() {
            panic!("seed {seed} round {round}: input {:?}", String::from_utf8_lossy(&input));
        }
    }
}

// Goal: a line served because it arrived whole at exactly `line_len_max_whole`, ended by
// LF alone, still round-trips through compose (which ends it in CRLF, one byte longer).
// Found by the fuzz target in CI.
#[test]
fn whole_line_at_the_edge_round_trips() {
    let limits =
        crate::Limits { line_len_max: 256, line_len_max_whole: 384, ..crate::Limits::default() };
    let mut input = b"stats ".to_vec();
    input.resize(383, b'H');
    input.push(b'\n');
    check_parse_request(&input, &limits);
}

// Goal: the text statuses compose as memcached spells them.
#[test]
fn status_words() {
    let mut buf = Vec::new();
    for status in [
        Status::Stored,
        Status::NotStored,
        Status::Exists,
        Status::NotFound,
        Status::Deleted,
        Status::Touched,
        Status::Ok,
    ] {
        crate::text::response::compose_status(status, &mut buf);
    }
    assert_eq!(buf, b"STORED\r\nNOT_STORED\r\nEXISTS\r\nNOT_FOUND\r\nDELETED\r\nTOUCHED\r\nOK\r\n");
}
