//! Binary requests through the text harness's store and session: wire in, packets out.

use proto_memcache::{
    binary::{compose_request, parse_request, parse_response, Opcode, Status},
    Limits,
};

use store::{WhenFull, MIB};

use crate::{
    memcache::tests::{Harness, ITEM_SIZE_MAX},
    Flow, Settings,
};

/// One reply packet, owned: (opcode, status, opaque, cas, extras, key, value).
type Packet = (u8, u16, u32, u64, Vec<u8>, Vec<u8>, Vec<u8>);

fn req(op: Opcode, extras: &[u8], key: &[u8], value: &[u8], cas: u64) -> Vec<u8> {
    let mut out = Vec::new();
    compose_request(op, 0x0102_0304, cas, extras, key, value, &mut out);
    out
}

fn set_extras(flags: u32, exptime: u32) -> Vec<u8> {
    [flags.to_be_bytes(), exptime.to_be_bytes()].concat()
}

fn arith_extras(delta: u64, initial: u64, exptime: u32) -> Vec<u8> {
    [&delta.to_be_bytes()[..], &initial.to_be_bytes(), &exptime.to_be_bytes()].concat()
}

/// Runs every packet in `wire`; the replies, and whether the connection would close.
fn run(h: &mut Harness, wire: &[u8]) -> (Vec<Packet>, bool) {
    let mut out = Vec::new();
    let mut pos = 0;
    let mut closed = false;
    while pos < wire.len() {
        let (request, used) = parse_request(&wire[pos..], &Limits::default()).expect("valid");
        pos += used;
        let flow = super::execute(
            h.shared.memcache_view(),
            &h.counters,
            &mut h.session,
            &request,
            &mut out,
        );
        if flow == Flow::Close {
            closed = true;
            break;
        }
    }
    (packets(&out), closed)
}

/// The reply packets in `out`.
fn packets(out: &[u8]) -> Vec<Packet> {
    let mut packets = Vec::new();
    let mut at = 0;
    while at < out.len() {
        let (r, used) = parse_response(&out[at..], &Limits::default()).expect("a packet");
        assert_eq!(r.opaque, 0x0102_0304);
        packets.push((
            r.opcode,
            r.status,
            r.opaque,
            r.cas,
            r.extras.into(),
            r.key.into(),
            r.value.into(),
        ));
        at += used;
    }
    packets
}

fn statuses(packets: &[Packet]) -> Vec<(u8, u16)> {
    packets.iter().map(|p| (p.0, p.1)).collect()
}

// Goal: the store family's statuses as memcached words them, CAS in every success.
#[test]
fn storage() {
    let mut h = Harness::new();
    let ex = set_extras(5, 0);
    let (p, _) = run(&mut h, &req(Opcode::Set, &ex, b"k", b"v", 0));
    assert_eq!(statuses(&p), [(0x01, 0)]);
    let cas = h.cas(b"k");
    assert_eq!(p[0].3, cas);
    let wire = [
        req(Opcode::Add, &ex, b"k", b"v", 0),
        req(Opcode::Replace, &ex, b"x", b"v", 0),
        req(Opcode::Set, &ex, b"k", b"v", cas + 1),
        req(Opcode::Set, &ex, b"x", b"v", 1),
        req(Opcode::Append, b"", b"x", b"v", 0),
        req(Opcode::Append, b"", b"k", b"w", cas + 1),
        req(Opcode::Prepend, b"", b"k", b"u", 0),
    ]
    .concat();
    let (p, _) = run(&mut h, &wire);
    assert_eq!(
        statuses(&p),
        [(0x02, 2), (0x03, 1), (0x01, 2), (0x01, 1), (0x0e, 5), (0x0e, 2), (0x0f, 0)]
    );
    assert_eq!(p[0].6, b"Data exists for key.");
    assert_eq!(p[4].6, b"Not stored.");
    let (p, _) = run(&mut h, &req(Opcode::GetK, b"", b"k", b"", 0));
    assert_eq!(
        (p[0].4.as_slice(), p[0].5.as_slice(), p[0].6.as_slice()),
        (&[0, 0, 0, 5][..], &b"k"[..], &b"uv"[..])
    );
    let big = vec![b'x'; ITEM_SIZE_MAX];
    let (p, _) = run(&mut h, &req(Opcode::SetQ, &ex, b"k", &big, 0));
    assert_eq!((statuses(&p), p[0].6.as_slice()), (vec![(0x11, 3)], &b"Too large."[..]));
    // A refused set drops the old value, as memcached does.
    let (p, _) = run(&mut h, &req(Opcode::Get, b"", b"k", b"", 0));
    assert_eq!((statuses(&p), p[0].6.as_slice()), (vec![(0x00, 1)], &b"Not found"[..]));
}

// Goal: quiet opcodes are silent on success (and quiet gets on a miss), loud on errors.
#[test]
fn quiet_pipeline() {
    let mut h = Harness::new();
    let ex = set_extras(0, 0);
    let wire = [
        req(Opcode::SetQ, &ex, b"a", b"1", 0),
        req(Opcode::AddQ, &ex, b"a", b"1", 0),
        req(Opcode::GetQ, b"", b"missing", b"", 0),
        req(Opcode::GetKQ, b"", b"missing", b"", 0),
        req(Opcode::GetKQ, b"", b"a", b"", 0),
        req(Opcode::IncrementQ, &arith_extras(1, 0, 0), b"a", b"", 0),
        req(Opcode::AppendQ, b"", b"a", b"0", 0),
        req(Opcode::DeleteQ, b"", b"missing", b"", 0),
        req(Opcode::GatQ, &0u32.to_be_bytes(), b"missing", b"", 0),
        req(Opcode::FlushQ, b"", b"", b"", 0),
        req(Opcode::Noop, b"", b"", b"", 0),
    ]
    .concat();
    let (p, _) = run(&mut h, &wire);
    assert_eq!(statuses(&p), [(0x12, 2), (0x0d, 0), (0x14, 1), (0x0a, 0)]);
    assert_eq!((p[1].5.as_slice(), p[1].6.as_slice()), (&b"a"[..], &b"1"[..]));
    let (p, closed) = run(
        &mut h,
        &[req(Opcode::QuitQ, b"", b"", b"", 0), req(Opcode::Noop, b"", b"", b"", 0)].concat(),
    );
    assert!(p.is_empty() && closed);
    let (p, closed) = run(&mut h, &req(Opcode::Quit, b"", b"", b"", 0));
    assert!(statuses(&p) == [(0x07, 0)] && closed);
}

// Goal: incr/decr with initial value and exptime, non-numeric, and 0xffffffff.
#[test]
fn arith() {
    let mut h = Harness::new();
    let (p, _) = run(&mut h, &req(Opcode::Increment, &arith_extras(1, 5, u32::MAX), b"n", b"", 0));
    assert_eq!((statuses(&p), p[0].6.as_slice()), (vec![(0x05, 1)], &b"Not found"[..]));
    let wire = [
        req(Opcode::Increment, &arith_extras(1, 5, 0), b"n", b"", 0),
        req(Opcode::Increment, &arith_extras(3, 5, 0), b"n", b"", 0),
        req(Opcode::Decrement, &arith_extras(100, 5, 0), b"n", b"", 0),
    ]
    .concat();
    let (p, _) = run(&mut h, &wire);
    let numbers: Vec<Vec<u8>> = p.iter().map(|p| p.6.clone()).collect();
    assert_eq!(numbers, [5u64, 8, 0].map(|n| n.to_be_bytes().to_vec()));
    assert_eq!(p[2].3, h.cas(b"n"));
    run(&mut h, &req(Opcode::Set, &set_extras(0, 0), b"t", b"x", 0));
    let (p, _) = run(&mut h, &req(Opcode::Decrement, &arith_extras(1, 0, 0), b"t", b"", 0));
    assert_eq!(
        (statuses(&p), p[0].6.as_slice()),
        (vec![(0x06, 6)], &b"Non-numeric server-side value for incr or decr"[..])
    );
}

// Goal: touch answers flags and CAS; gat the item; misses and counters as memcached.
#[test]
fn touch_and_gat() {
    let mut h = Harness::new();
    run(&mut h, &req(Opcode::Set, &set_extras(3, 100), b"t", b"v", 0));
    let ten = 10u32.to_be_bytes();
    let wire = [
        req(Opcode::Touch, &ten, b"t", b"", 0),
        req(Opcode::Gat, &ten, b"t", b"", 0),
        req(Opcode::GatK, &ten, b"t", b"", 0),
        req(Opcode::GatK, &ten, b"zz", b"", 0),
        req(Opcode::Gat, &ten, b"zz", b"", 0),
        req(Opcode::GatKQ, &ten, b"zz", b"", 0),
    ]
    .concat();
    let (p, _) = run(&mut h, &wire);
    assert_eq!(statuses(&p), [(0x1c, 0), (0x1d, 0), (0x23, 0), (0x23, 1), (0x1d, 1)]);
    assert_eq!((p[0].4.as_slice(), p[0].6.as_slice()), (&[0, 0, 0, 3][..], &b""[..]));
    assert_eq!((p[2].5.as_slice(), p[2].6.as_slice()), (&b"t"[..], &b"v"[..]));
    assert_eq!((p[3].5.as_slice(), p[3].6.as_slice()), (&b"zz"[..], &b""[..]));
    h.advance_secs(10);
    let (p, _) = run(&mut h, &req(Opcode::Get, b"", b"t", b"", 0));
    assert_eq!(statuses(&p), [(0x00, 1)]);
    let totals = h.totals();
    assert_eq!((totals.cmd_touch, totals.touch_hits, totals.touch_misses), (6, 3, 3));
}

// Goal: the gets (Get, GetK, GetQ, GetKQ) lend a large value, sent from item memory; a gat
// (under the key's lock) and a small value are copied; the packets read the same either way.
#[test]
fn gets_lend_large_values_and_gat_copies() {
    use crate::memcache::tests::lending;
    let mut h = Harness::lending_sizes();
    let big = vec![b'v'; store::loans::VALUE_BYTES_MIN];
    run(&mut h, &req(Opcode::Set, &set_extras(3, 0), b"b", &big, 0));
    run(&mut h, &req(Opcode::Set, &set_extras(3, 0), b"s", b"x", 0));
    let gets = [Opcode::Get, Opcode::GetK, Opcode::GetQ, Opcode::GetKQ]
        .map(|op| req(op, b"", b"b", b"", 0))
        .concat();
    let wire = [gets, req(Opcode::Get, b"", b"s", b"", 0)].concat();
    let copied = run(&mut h, &wire).0;
    let (lent, placed) = lending(|| {
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < wire.len() {
            let (request, used) = parse_request(&wire[pos..], &Limits::default()).expect("valid");
            pos += used;
            let view = h.shared.memcache_view();
            super::execute(view, &h.counters, &mut h.session, &request, &mut out);
        }
        out
    });
    assert_eq!(lent, 4 * big.len());
    assert_eq!(packets(&placed), copied);
    let gat = req(Opcode::Gat, &10u32.to_be_bytes(), b"b", b"", 0);
    let (lent, _) = lending(|| {
        let (request, _) = parse_request(&gat, &Limits::default()).expect("valid");
        let mut out = Vec::new();
        super::execute(h.shared.memcache_view(), &h.counters, &mut h.session, &request, &mut out);
        out
    });
    assert_eq!(lent, 0);
}

// Goal: delete with and without CAS, flush (and -F), version, noop, stat groups.
#[test]
fn admin() {
    let mut h = Harness::new();
    run(&mut h, &req(Opcode::Set, &set_extras(0, 0), b"d", b"v", 0));
    let cas = h.cas(b"d");
    let wire = [
        req(Opcode::Delete, b"", b"d", b"", cas + 1),
        req(Opcode::Delete, b"", b"d", b"", cas),
        req(Opcode::Delete, b"", b"d", b"", 0),
        req(Opcode::Version, b"", b"", b"", 0),
        req(Opcode::Flush, &0u32.to_be_bytes(), b"", b"", 0),
        req(Opcode::Stat, b"", b"bogus", b"", 0),
        req(Opcode::Stat, b"", b"sizes", b"", 0),
        req(Opcode::Stat, b"", b"reset", b"", 0),
    ]
    .concat();
    let (p, _) = run(&mut h, &wire);
    let expected = [
        (0x04, 2),
        (0x04, 0),
        (0x04, 1),
        (0x0b, 0),
        (0x08, 0),
        (0x10, 1),
        (0x10, 0),
        (0x10, 0),
        (0x10, 0),
    ];
    assert_eq!(statuses(&p), expected);
    assert_eq!(p[3].6, crate::MEMCACHED_VERSION.as_bytes());
    assert_eq!((p[6].5.as_slice(), p[6].6.as_slice()), (&b"sizes_status"[..], &b"disabled"[..]));
    assert!(p[7].5.is_empty() && p[8].5.is_empty());
    let (p, _) = run(&mut h, &req(Opcode::Stat, b"", b"", b"", 0));
    assert_eq!(p[0].5, b"pid");
    assert!(p.iter().any(|p| p.5 == b"cmd_get"));
    assert!(p.last().is_some_and(|last| last.5.is_empty() && last.6.is_empty()));
    let mut h = Harness::with_settings(Settings { flush_enabled: false, ..Settings::default() });
    let (p, _) = run(&mut h, &req(Opcode::Flush, b"", b"", b"", 0));
    assert_eq!(
        (statuses(&p), p[0].6.as_slice()),
        (vec![(0x08, Status::AuthError as u16)], &b"Auth failure."[..])
    );
}

// Goal: a full store that may not evict answers Out of memory (0x82), quiet or not.
#[test]
fn out_of_memory() {
    let settings = Settings { evictions: false, ..Settings::default() };
    let mut h = Harness::with(settings, WhenFull::Refuse, MIB / 2);
    let value = vec![b'v'; 4000];
    let mut last = Vec::new();
    for i in 0..400 {
        let key = format!("k{i}");
        last = run(&mut h, &req(Opcode::SetQ, &set_extras(0, 0), key.as_bytes(), &value, 0)).0;
        if !last.is_empty() {
            break;
        }
    }
    assert_eq!(statuses(&last), [(0x11, Status::OutOfMemory as u16)]);
    assert_eq!(last[0].6, b"Out of memory allocating item");
}
