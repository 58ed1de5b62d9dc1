//! Geo (`--structure geo`): members at places drawn from their ids, searched around,
//! measured between and looked up.
//!
//! ```text
//!   write  GEOADD k lon lat f7                                   -> :0 or :1
//!   read   field % 4 = 0, 1: GEOSEARCH k FROMLONLAT lon lat BYRADIUS 5 km ASC COUNT 10
//!                            (around f's own place)              -> members (empty: a miss)
//!          field % 4 = 2:    GEODIST k f7 f8 m                   -> metres (null: a miss)
//!          field % 4 = 3:    GEOPOS k f7                         -> [[lon, lat]] ([null]: a miss)
//! ```
//!
//! Places lie in a 0.8 x 0.4 degree box (about 54 x 44 km): with 100 members a key, a 5 km
//! search finds about three besides the member itself. GEOPOS and GEODIST answers are
//! checked against the places the ids give (within a few metres: geohash cells are
//! about 0.6 m); a wrong one is corrupt.

use std::io::Write as _;

use proto_resp::{compose_command, Value};

use super::{
    family::{hit_or_miss, parse_whole, FieldBuf},
    ErrorKind, Parsed, Tally,
};
use crate::{
    rng::mix64,
    workload::{Family, OpKind},
};

/// The box members are placed in: west and south edges, width and height in degrees.
const WEST_DEG: f64 = 13.0;
const SOUTH_DEG: f64 = 52.3;
const WIDTH_DEG: f64 = 0.8;
const HEIGHT_DEG: f64 = 0.4;
/// GEOSEARCH's radius and COUNT.
const RADIUS_KM: &[u8] = b"5";
const SEARCH_COUNT: &[u8] = b"10";
/// The Earth's radius Redis's geo code measures with, in metres.
const EARTH_RADIUS_M: f64 = 6_372_797.560_856;
/// How far a returned position or distance may be from the drawn one.
const TOLERANCE_M: f64 = 5.0;

/// The place of member id `id`: (longitude, latitude) in degrees, drawn from the id.
pub fn place(id: u64) -> (f64, f64) {
    let bits = mix64(id ^ 0x6765_6f00);
    let unit = |b: u64| (b & 0xff_ffff) as f64 / f64::from(1u32 << 24);
    (WEST_DEG + WIDTH_DEG * unit(bits), SOUTH_DEG + HEIGHT_DEG * unit(bits >> 32))
}

/// A coordinate as text with six decimals (about 0.1 m), without allocating.
pub struct Degrees {
    bytes: [u8; 24],
    len: usize,
}

impl Degrees {
    pub fn new(value: f64) -> Degrees {
        let mut bytes = [0u8; 24];
        let mut cursor = &mut bytes[..];
        write!(cursor, "{value:.6}").expect("a coordinate fits in 24 bytes");
        let len = 24 - cursor.len();
        Degrees { bytes, len }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// `GEOADD key lon lat <member>` at the member's place.
pub(super) fn compose_write(key: &[u8], member: &[u8], id: u64, out: &mut Vec<u8>) {
    let (lon, lat) = place(id);
    let (lon, lat) = (Degrees::new(lon), Degrees::new(lat));
    compose_command(&[b"GEOADD", key, lon.as_bytes(), lat.as_bytes(), member], out);
}

/// The read for `id` (by its field, see the module's table).
pub(super) fn compose_read(family: Family, id: u64, key: &[u8], out: &mut Vec<u8>) {
    let field = family.split(id).1;
    let member = FieldBuf::new(field);
    match field % 4 {
        0 | 1 => {
            let (lon, lat) = place(id);
            let (lon, lat) = (Degrees::new(lon), Degrees::new(lat));
            let args: [&[u8]; 11] = [
                b"GEOSEARCH",
                key,
                b"FROMLONLAT",
                lon.as_bytes(),
                lat.as_bytes(),
                b"BYRADIUS",
                RADIUS_KM,
                b"km",
                b"ASC",
                b"COUNT",
                SEARCH_COUNT,
            ];
            compose_command(&args, out);
        }
        2 => {
            let other = FieldBuf::new((field + 1) % family.fields);
            compose_command(&[b"GEODIST", key, member.as_bytes(), other.as_bytes(), b"m"], out);
        }
        _ => compose_command(&[b"GEOPOS", key, member.as_bytes()], out),
    }
}

/// Replies to a request of `kind` on `ids`.
pub(super) fn parse<I>(family: Family, kind: OpKind, ids: I, input: &[u8]) -> Result<Parsed, Parsed>
where
    I: Iterator<Item = u64>,
{
    parse_whole(ids, input, |id, value, tally| {
        if let Value::Error(_) | Value::BulkError(_) = value {
            return Ok(Some(ErrorKind::ServerError));
        }
        match kind {
            OpKind::Set if matches!(value, Value::Integer(0 | 1)) => Ok(None),
            OpKind::Set => Err(Parsed::Broken("GEOADD answered with something other than 0 or 1")),
            OpKind::Get => read(family, id, value, tally).map(|()| None),
        }
    })
}

fn read(family: Family, id: u64, value: Value<'_>, tally: &mut Tally) -> Result<(), Parsed> {
    let field = family.split(id).1;
    let found = match field % 4 {
        0 | 1 => search(value)?,
        2 => match number(&value) {
            Some(metres) => {
                Some(close(metres, distance(id, id - field + (field + 1) % family.fields)))
            }
            None if value.is_null() => None,
            None => return Err(Parsed::Broken("GEODIST answered something other than a number")),
        },
        _ => position(id, value)?,
    };
    match found {
        Some(true) => hit_or_miss(tally, true),
        Some(false) => {
            tally.corrupt += 1;
            tally.misses += 1;
        }
        None => hit_or_miss(tally, false),
    }
    Ok(())
}

/// GEOSEARCH's members: `Some(true)` when there are any (each must be a bulk string).
fn search(value: Value<'_>) -> Result<Option<bool>, Parsed> {
    let Value::Array(members) = value else {
        return Err(Parsed::Broken("GEOSEARCH answered with something other than an array"));
    };
    if !members.iter().all(|m| matches!(m, Value::Bulk(_))) {
        return Err(Parsed::Broken("a GEOSEARCH member is not a bulk string"));
    }
    Ok((!members.is_empty()).then_some(true))
}

/// GEOPOS of one member: `[[lon, lat]]` (checked against its place) or `[null]`.
fn position(id: u64, value: Value<'_>) -> Result<Option<bool>, Parsed> {
    let broken = Parsed::Broken("GEOPOS answered with something other than [[lon, lat]]");
    let Value::Array(mut one) = value else { return Err(broken) };
    match (one.pop(), one.pop()) {
        (Some(v), None) if v.is_null() => Ok(None),
        (Some(Value::Array(pair)), None) => match pair.as_slice() {
            [lon, lat] => match (number(lon), number(lat)) {
                (Some(lon), Some(lat)) => Ok(Some(close(haversine((lon, lat), place(id)), 0.0))),
                _ => Err(broken),
            },
            _ => Err(broken),
        },
        _ => Err(broken),
    }
}

/// A number sent as a bulk string (RESP2) or a double (RESP3).
fn number(value: &Value<'_>) -> Option<f64> {
    match value {
        Value::Bulk(text) => std::str::from_utf8(text).ok()?.parse().ok(),
        Value::Double(d) => Some(*d),
        _ => None,
    }
}

fn close(metres: f64, want_metres: f64) -> bool {
    (metres - want_metres).abs() <= TOLERANCE_M
}

/// Metres between the places of two member ids.
fn distance(a: u64, b: u64) -> f64 {
    haversine(place(a), place(b))
}

/// Great-circle metres between two (lon, lat) points in degrees.
fn haversine((lon1, lat1): (f64, f64), (lon2, lat2): (f64, f64)) -> f64 {
    let (lat1, lat2) = (lat1.to_radians(), lat2.to_radians());
    let half_lat = (lat2 - lat1) / 2.0;
    let half_lon = (lon2 - lon1).to_radians() / 2.0;
    let a = half_lat.sin().powi(2) + lat1.cos() * lat2.cos() * half_lon.sin().powi(2);
    2.0 * EARTH_RADIUS_M * a.sqrt().asin()
}

#[cfg(test)]
#[path = "geo_tests.rs"]
mod tests;
