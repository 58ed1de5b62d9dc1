//! Geo requests and replies against hand-written wire bytes.

use super::*;
use crate::client::family::{compose, parse};
use crate::client::{Scratch, SetArgs};
use crate::workload::{KeyFormat, Structure};

const FAMILY: Family = Family { structure: Structure::Geo, fields: 10 };

fn composed(kind: OpKind, id: u64) -> String {
    let mut out = Vec::new();
    let set = (kind == OpKind::Set).then_some(SetArgs { version: 1, value_len: 5, ttl_secs: 0 });
    let format = KeyFormat::new(8, 1000).unwrap();
    compose(FAMILY, kind, &[id], set, &format, &mut Scratch::default(), &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn bulk(text: &str) -> String {
    format!("${}\r\n{text}\r\n", text.len())
}

/// Goal: places are the id's, inside the box, written with six decimals.
#[test]
fn places() {
    assert_eq!(place(57), place(57));
    assert_ne!(place(57), place(58));
    for id in 0..1000 {
        let (lon, lat) = place(id);
        assert!((13.0..13.8).contains(&lon) && (52.3..52.7).contains(&lat), "{id}");
    }
    assert_eq!(Degrees::new(13.25).as_bytes(), b"13.250000");
    assert_eq!(Degrees::new(-0.5).as_bytes(), b"-0.500000");
}

/// Goal: GEOADD at the member's place; reads by field: GEOSEARCH around the member's own
/// place (fields 0, 1), GEODIST to the next field (2), GEOPOS (3).
#[test]
fn compose_requests() {
    let (lon, lat) = place(57);
    let (lon, lat) = (format!("{lon:.6}"), format!("{lat:.6}"));
    let key = "$6\r\nGEOADD\r\n$8\r\nkey:0005\r\n";
    let want = format!("*5\r\n{key}{}{}$2\r\nf7\r\n", bulk(&lon), bulk(&lat));
    assert_eq!(composed(OpKind::Set, 57), want);
    let (lon, lat) = place(50);
    let want = format!(
        "*11\r\n$9\r\nGEOSEARCH\r\n$8\r\nkey:0005\r\n$10\r\nFROMLONLAT\r\n{}{}$8\r\nBYRADIUS\r\n\
         $1\r\n5\r\n$2\r\nkm\r\n$3\r\nASC\r\n$5\r\nCOUNT\r\n$2\r\n10\r\n",
        bulk(&format!("{lon:.6}")),
        bulk(&format!("{lat:.6}"))
    );
    assert_eq!(composed(OpKind::Get, 50), want);
    let want = "*5\r\n$7\r\nGEODIST\r\n$8\r\nkey:0005\r\n$2\r\nf2\r\n$2\r\nf3\r\n$1\r\nm\r\n";
    assert_eq!(composed(OpKind::Get, 52), want);
    assert_eq!(composed(OpKind::Get, 53), "*3\r\n$6\r\nGEOPOS\r\n$8\r\nkey:0005\r\n$2\r\nf3\r\n");
}

fn read(id: u64, wire: &str) -> Parsed {
    let wire = wire.as_bytes();
    for cut in 0..wire.len() {
        let p = parse(FAMILY, OpKind::Get, [id].into_iter(), &wire[..cut]);
        assert_eq!(p, Parsed::Incomplete, "cut {cut}");
    }
    parse(FAMILY, OpKind::Get, [id].into_iter(), wire)
}

fn tally(hits: u32, misses: u32, corrupt: u32, used: usize) -> Parsed {
    Parsed::Reply { tally: Tally { hits, misses, corrupt }, error: None, used }
}

/// Goal: GEOPOS and GEODIST answers are checked against the drawn places (a member's own
/// position within metres, another's is corrupt); nulls and empty searches are misses.
#[test]
fn parse_reads() {
    let (lon, lat) = place(53);
    let pos = |lon: f64, lat: f64| {
        format!("*1\r\n*2\r\n{}{}", bulk(&format!("{lon:.17}")), bulk(&format!("{lat:.17}")))
    };
    let wire = pos(lon + 0.000_001, lat);
    assert_eq!(read(53, &wire), tally(1, 0, 0, wire.len()));
    let wire = pos(place(54).0, place(54).1);
    assert_eq!(read(53, &wire), tally(0, 1, 1, wire.len()));
    assert_eq!(read(53, "*1\r\n*-1\r\n"), tally(0, 1, 0, 9));
    assert_eq!(read(53, "*1\r\n_\r\n"), tally(0, 1, 0, 7));
    let metres = haversine(place(52), place(53));
    let wire = bulk(&format!("{metres:.4}"));
    assert_eq!(read(52, &wire), tally(1, 0, 0, wire.len()));
    let wire = bulk(&format!("{:.4}", metres + 100.0));
    assert_eq!(read(52, &wire), tally(0, 1, 1, wire.len()));
    assert_eq!(read(52, "$-1\r\n"), tally(0, 1, 0, 5));
    let found = format!("*2\r\n{}{}", bulk("f0"), bulk("f9"));
    assert_eq!(read(50, &found), tally(1, 0, 0, found.len()));
    assert_eq!(read(51, "*0\r\n"), tally(0, 1, 0, 4));
}

/// Goal: GEOADD answers 0 or 1; other shapes break the stream, errors are the server's.
#[test]
fn wrong_shapes_break() {
    let p = |kind, id: u64, wire: &[u8]| parse(FAMILY, kind, [id].into_iter(), wire);
    assert_eq!(p(OpKind::Set, 1, b":1\r\n"), tally(0, 0, 0, 4));
    assert!(matches!(p(OpKind::Set, 1, b":2\r\n"), Parsed::Broken(_)));
    let err = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
    let server_error = Parsed::Reply {
        tally: Tally::default(),
        error: Some(ErrorKind::ServerError),
        used: err.len(),
    };
    assert_eq!(p(OpKind::Get, 50, err), server_error);
    for (id, bad) in [(50, &b"*1\r\n:1\r\n"[..]), (52, b":1\r\n"), (53, b"*1\r\n*1\r\n$1\r\n1\r\n")]
    {
        assert!(matches!(p(OpKind::Get, id, bad), Parsed::Broken(_)), "{id} {bad:?}");
    }
}
