//! The GEO commands, as Redis 7.0 runs them (`geo.c`): GEOADD, GEOPOS, GEODIST, GEOHASH,
//! GEORADIUS[_RO], GEORADIUSBYMEMBER[_RO], GEOSEARCH and GEOSEARCHSTORE.
//!
//! A geospatial index is a sorted set whose scores are 52-bit geohashes ([`hash`]), so it
//! is a sorted set to every other command (TYPE, ZRANGE, ZSCORE, DEL...). GEOADD is ZADD
//! with scores computed from the coordinates (Redis rewrites it into ZADD); the reads use
//! the sorted-set family's lookups (`zset::read_scores`), and the searches are in
//! [`search`].
//!
//! Replies follow Redis: coordinates as `%.17Lf` trimmed (bulk strings in RESP2, doubles
//! in RESP3), distances with four decimals as bulk strings in both, a missing member's
//! GEOPOS as a null array and its GEOHASH as a null.
//!
//! Bounds: every reply and vector is at most the argument count or the sorted set's size;
//! COUNT only shortens a reply; coordinates, radii and sizes are parsed before use (no NaN;
//! an infinite radius covers the globe and costs what a full scan costs).

use proto_resp::{commands::GeoId, error};

use super::{zset, Ctx};

pub(crate) mod hash;
mod search;

const UNIT: &str = "ERR unsupported unit provided. please use M, KM, FT, MI";

pub(super) fn dispatch(ctx: &mut Ctx<'_>, id: GeoId) {
    use search::Variant as V;
    match id {
        GeoId::Geoadd => geoadd(ctx),
        GeoId::Geopos => geopos(ctx),
        GeoId::Geohash => geohash(ctx),
        GeoId::Geodist => geodist(ctx),
        GeoId::Georadius => search::run(ctx, V::Radius),
        GeoId::GeoradiusRo => search::run(ctx, V::RadiusRo),
        GeoId::Georadiusbymember => search::run(ctx, V::ByMember),
        GeoId::GeoradiusbymemberRo => search::run(ctx, V::ByMemberRo),
        GeoId::Geosearch => search::run(ctx, V::Search),
        GeoId::Geosearchstore => search::run(ctx, V::SearchStore),
    }
}

/// A float argument as Redis's `getDoubleFromObjectOrReply` reads it (ZADD's scores'
/// parser: `strtod`'s forms, hexadecimal included), or the error it replies (`message`
/// after `ERR `, or its default).
fn parse_float(text: &[u8], message: Option<&'static str>) -> Result<f64, String> {
    zset::parse_score(text)
        .map_err(|e| message.map_or_else(|| e.message().into(), |m| format!("ERR {m}")))
}

/// A longitude and a latitude argument, checked against Redis's limits.
fn parse_point(ctx: &Ctx<'_>, at: usize) -> Result<[f64; 2], String> {
    let longitude = parse_float(ctx.arg(at), None)?;
    let latitude = parse_float(ctx.arg(at + 1), None)?;
    if !hash::in_limits(longitude, latitude) {
        return Err(hash::invalid_pair(longitude, latitude));
    }
    Ok([longitude, latitude])
}

/// A unit's size in meters.
fn parse_unit(text: &[u8]) -> Result<f64, String> {
    let units: [(&[u8], f64); 4] =
        [(b"m", 1.0), (b"km", 1000.0), (b"ft", 0.3048), (b"mi", 1609.34)];
    units
        .iter()
        .find(|(name, _)| text.eq_ignore_ascii_case(name))
        .map(|&(_, meters)| meters)
        .ok_or_else(|| UNIT.to_string())
}

/// `GEOADD key [NX|XX] [CH] longitude latitude member [...]`: every coordinate is checked
/// before the key is looked at, then the points go in as ZADD would add them.
fn geoadd(ctx: &mut Ctx<'_>) {
    let (mut nx, mut xx, mut ch) = (false, false, false);
    let mut at = 2;
    while at < ctx.argc() {
        let option = ctx.arg(at);
        if option.eq_ignore_ascii_case(b"nx") {
            nx = true;
        } else if option.eq_ignore_ascii_case(b"xx") {
            xx = true;
        } else if option.eq_ignore_ascii_case(b"ch") {
            ch = true;
        } else {
            break;
        }
        at += 1;
    }
    let given = ctx.argc() - at;
    // No point at all is ZADD's syntax error in Redis (it runs ZADD with no pairs).
    if !given.is_multiple_of(3) || (nx && xx) || given == 0 {
        return ctx.error(error::SYNTAX);
    }
    let mut pairs = Vec::with_capacity(given / 3);
    for first in (at..ctx.argc()).step_by(3) {
        let point = match parse_point(ctx, first) {
            Ok(point) => point,
            Err(message) => return ctx.error(message),
        };
        let Some(score) = hash::encode(point[0], point[1]) else {
            // Unreachable: the point was checked against the same limits.
            return ctx.error(hash::invalid_pair(point[0], point[1]));
        };
        pairs.push((score as f64, ctx.arg(first + 2)));
    }
    zset::geoadd(ctx, nx, xx, ch, &pairs);
}

/// A member's point, `None` when the member (or the key) is missing.
type Position = Option<[f64; 2]>;

/// The members' points, or `None` once WRONGTYPE has been replied.
fn points_of(ctx: &mut Ctx<'_>) -> Option<Vec<Position>> {
    let members: Vec<&[u8]> = (2..ctx.argc()).map(|i| ctx.arg(i)).collect();
    zset::read_scores(ctx, 1, |_, scores| {
        let score_of = |member: &[u8]| scores.and_then(|s| s.score(member));
        members.iter().map(|m| score_of(m).map(hash::decode)).collect()
    })
}

/// A coordinate: a bulk string in RESP2, a double in RESP3 (`addReplyHumanLongDouble`).
fn put_coordinate(ctx: &mut Ctx<'_>, value: f64) {
    let text = hash::human_text(value);
    if ctx.session.protocol == proto_resp::Protocol::Resp3 {
        ctx.out.push(b',');
        ctx.out.extend_from_slice(text.as_bytes());
        ctx.out.extend_from_slice(b"\r\n");
    } else {
        ctx.reply().bulk(text.as_bytes());
    }
}

/// `GEOPOS key member [...]`: each member's [longitude, latitude], a null array if absent.
fn geopos(ctx: &mut Ctx<'_>) {
    let Some(points) = points_of(ctx) else { return };
    ctx.reply().array(points.len());
    for point in points {
        match point {
            None => ctx.reply().null_array(),
            Some([longitude, latitude]) => {
                ctx.reply().array(2);
                put_coordinate(ctx, longitude);
                put_coordinate(ctx, latitude);
            }
        }
    }
}

/// `GEOHASH key member [...]`: each member's standard 11-character geohash, null if absent.
fn geohash(ctx: &mut Ctx<'_>) {
    let Some(points) = points_of(ctx) else { return };
    ctx.reply().array(points.len());
    for point in points {
        match point {
            None => ctx.reply().null(),
            Some(point) => ctx.reply().bulk(&hash::standard_geohash(point)),
        }
    }
}

/// `GEODIST key member1 member2 [unit]`: the unit is checked first, then the key; null if
/// the key or either member is missing.
fn geodist(ctx: &mut Ctx<'_>) {
    let to_meters = match ctx.argc() {
        4 => 1.0,
        5 => match parse_unit(ctx.arg(4)) {
            Ok(meters) => meters,
            Err(message) => return ctx.error(message),
        },
        _ => return ctx.error(error::SYNTAX),
    };
    let (first, second) = (ctx.arg(2), ctx.arg(3));
    let found = zset::read_scores(ctx, 1, |_, scores| {
        let scores = scores?;
        Some((scores.score(first)?, scores.score(second)?))
    });
    let Some(found) = found else { return };
    match found {
        None => ctx.reply().null(),
        Some((a, b)) => {
            let ([lon1, lat1], [lon2, lat2]) = (hash::decode(a), hash::decode(b));
            let meters = hash::distance(lon1, lat1, lon2, lat2);
            ctx.reply().bulk(hash::distance_text(meters / to_meters).as_bytes());
        }
    }
}

#[cfg(test)]
mod tests;
