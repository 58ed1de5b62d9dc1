//! The searches: GEORADIUS, GEORADIUSBYMEMBER (and their `_RO` forms), GEOSEARCH and
//! GEOSEARCHSTORE, one routine as in Redis (`georadiusGeneric`).
//!
//! The order of checks decides which error a client sees, so it is Redis's: the source's
//! type first, then the center and radius of the GEORADIUS forms, then the options left
//! to right (a FROMMEMBER member is looked up where it comes), then the combinations. A
//! missing source answers an empty array, or 0 and deletes the STORE destination, without
//! a look at GEORADIUSBYMEMBER's radius.
//!
//! The points are gathered from the nine cells [`hash::Search::cells`] picks, each a
//! score range of the sorted set, in Redis's order; sorted by distance with a stable sort
//! (glibc's `qsort` is a merge sort); COUNT ANY stops the gathering at COUNT points. The
//! source is read under its lock and copied out before anything is written, so a STORE
//! into the source itself is safe. STORE and GEOSEARCHSTORE name two keys: they run under
//! the gate (`writes_several_keys`: GEORADIUS and GEORADIUSBYMEMBER are `movablekeys`
//! writes, GEOSEARCHSTORE a `*store`).

use std::collections::HashSet;

use proto_resp::{args::parse_i64, error};

use super::hash::{self, Search, Shape};
use super::{parse_float, parse_point, parse_unit, put_coordinate};
use crate::resp::{keyevents::class, zset, Ctx};

/// Which command runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Variant {
    Radius,
    RadiusRo,
    ByMember,
    ByMemberRo,
    Search,
    SearchStore,
}

impl Variant {
    fn is_geosearch(self) -> bool {
        matches!(self, Variant::Search | Variant::SearchStore)
    }

    fn takes_store(self) -> bool {
        matches!(self, Variant::Radius | Variant::ByMember)
    }

    fn source_index(self) -> usize {
        if self == Variant::SearchStore {
            2
        } else {
            1
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Order {
    None,
    Asc,
    Desc,
}

/// The options after the fixed arguments.
struct Options {
    with_dist: bool,
    with_hash: bool,
    with_coord: bool,
    order: Order,
    any: bool,
    /// 0: no limit.
    count: i64,
    /// The destination's argument index.
    store: Option<usize>,
    store_dist: bool,
}

/// One point found.
struct Point {
    member: Vec<u8>,
    score: f64,
    /// Meters until the reply divides it by the unit.
    distance: f64,
    position: [f64; 2],
}

/// What the read of the source decided.
enum Found {
    /// The source is missing.
    Missing(Options),
    Points(Options, Search, Vec<Point>),
}

pub(super) fn run(ctx: &mut Ctx<'_>, variant: Variant) {
    let found =
        zset::read_scores(ctx, variant.source_index(), |ctx, scores| gather(ctx, variant, scores));
    let found = match found {
        None => return,
        Some(Err(message)) => return ctx.error(clean(message)),
        Some(Ok(found)) => found,
    };
    match found {
        Found::Missing(options) => match options.store {
            Some(destination) => store(ctx, variant, destination, &[]),
            None => ctx.reply().array(0),
        },
        Found::Points(options, search, mut points) => {
            let returned = order(&options, &mut points);
            points.truncate(returned);
            points.iter_mut().for_each(|point| point.distance /= search.conversion);
            match options.store {
                Some(destination) => {
                    let scored: Vec<(f64, &[u8])> = points
                        .iter()
                        .map(|p| {
                            (if options.store_dist { p.distance } else { p.score }, &*p.member)
                        })
                        .collect();
                    store(ctx, variant, destination, &scored);
                }
                None => reply_points(ctx, &options, &points),
            }
        }
    }
}

/// An error text as `addReplyErrorFormat` sends it: no line breaks inside.
fn clean(message: String) -> String {
    message.replace(['\r', '\n'], " ")
}

/// Parses everything and gathers the points, in Redis's order of checks.
fn gather(
    ctx: &Ctx<'_>,
    variant: Variant,
    scores: Option<zset::Scores<'_>>,
) -> Result<Found, String> {
    let mut search =
        Search { center: [0.0, 0.0], shape: Shape::Radius { radius: 0.0 }, conversion: 0.0 };
    let base = match variant {
        Variant::Radius | Variant::RadiusRo => {
            search.center = parse_point(ctx, 2)?;
            (search.shape, search.conversion) = parse_radius(ctx, 4)?;
            6
        }
        Variant::ByMember | Variant::ByMemberRo => {
            if let Some(scores) = scores {
                search.center = member_point(scores, ctx.arg(2))?;
                (search.shape, search.conversion) = parse_radius(ctx, 3)?;
            }
            5
        }
        Variant::Search => 2,
        Variant::SearchStore => 3,
    };
    let options = parse_options(ctx, variant, base, scores, &mut search)?;
    let Some(scores) = scores else { return Ok(Found::Missing(options)) };
    let limit = if options.any { options.count } else { 0 };
    let points = collect(scores, &search, limit);
    Ok(Found::Points(options, search, points))
}

/// A member's point, or Redis's error when it is not in the set.
fn member_point(scores: zset::Scores<'_>, member: &[u8]) -> Result<[f64; 2], String> {
    match scores.score(member) {
        Some(score) => Ok(hash::decode(score)),
        None => Err("ERR could not decode requested zset member".into()),
    }
}

/// `radius unit` at `at`.
fn parse_radius(ctx: &Ctx<'_>, at: usize) -> Result<(Shape, f64), String> {
    let radius = parse_float(ctx.arg(at), Some("need numeric radius"))?;
    if radius < 0.0 {
        return Err("ERR radius cannot be negative".into());
    }
    Ok((Shape::Radius { radius }, parse_unit(ctx.arg(at + 1))?))
}

/// `width height unit` at `at`.
fn parse_box(ctx: &Ctx<'_>, at: usize) -> Result<(Shape, f64), String> {
    let width = parse_float(ctx.arg(at), Some("need numeric width"))?;
    let height = parse_float(ctx.arg(at + 1), Some("need numeric height"))?;
    if height < 0.0 || width < 0.0 {
        return Err("ERR height or width cannot be negative".into());
    }
    Ok((Shape::Box { width, height }, parse_unit(ctx.arg(at + 2))?))
}

/// The options from `base` on, left to right, then the checks of their combinations.
fn parse_options(
    ctx: &Ctx<'_>,
    variant: Variant,
    base: usize,
    scores: Option<zset::Scores<'_>>,
    search: &mut Search,
) -> Result<Options, String> {
    let mut o = Options {
        with_dist: false,
        with_hash: false,
        with_coord: false,
        order: Order::None,
        any: false,
        count: 0,
        store: (variant == Variant::SearchStore).then_some(1),
        store_dist: false,
    };
    let (mut from_member, mut from_point, mut by_radius, mut by_box) = (false, false, false, false);
    let geosearch = variant.is_geosearch();
    let argc = ctx.argc();
    let mut at = base;
    while at < argc {
        let left = argc - at - 1;
        let word = ctx.arg(at);
        let is = |name: &str| word.eq_ignore_ascii_case(name.as_bytes());
        if is("withdist") {
            o.with_dist = true;
        } else if is("withhash") {
            o.with_hash = true;
        } else if is("withcoord") {
            o.with_coord = true;
        } else if is("any") {
            o.any = true;
        } else if is("asc") {
            o.order = Order::Asc;
        } else if is("desc") {
            o.order = Order::Desc;
        } else if is("count") && left >= 1 {
            o.count = parse_i64(ctx.arg(at + 1)).map_err(|e| e.message().to_string())?;
            if o.count <= 0 {
                return Err("ERR COUNT must be > 0".into());
            }
            at += 1;
        } else if (is("store") || is("storedist")) && left >= 1 && variant.takes_store() {
            o.store = Some(at + 1);
            o.store_dist = is("storedist");
            at += 1;
        } else if is("storedist") && variant == Variant::SearchStore {
            o.store_dist = true;
        } else if is("frommember") && left >= 1 && geosearch && !from_point {
            if let Some(scores) = scores {
                search.center = member_point(scores, ctx.arg(at + 1))?;
            }
            from_member = true;
            at += 1;
        } else if is("fromlonlat") && left >= 2 && geosearch && !from_member {
            search.center = parse_point(ctx, at + 1)?;
            from_point = true;
            at += 2;
        } else if is("byradius") && left >= 2 && geosearch && !by_box {
            (search.shape, search.conversion) = parse_radius(ctx, at + 1)?;
            by_radius = true;
            at += 2;
        } else if is("bybox") && left >= 3 && geosearch && !by_radius {
            (search.shape, search.conversion) = parse_box(ctx, at + 1)?;
            by_box = true;
            at += 3;
        } else {
            return Err(error::SYNTAX.into());
        }
        at += 1;
    }
    check_combinations(ctx, variant, &o, [from_member || from_point, by_radius || by_box])?;
    Ok(o)
}

/// The checks Redis makes once every option is read.
fn check_combinations(
    ctx: &Ctx<'_>,
    variant: Variant,
    o: &Options,
    [has_from, has_by]: [bool; 2],
) -> Result<(), String> {
    if o.store.is_some() && (o.with_dist || o.with_hash || o.with_coord) {
        let what = if variant == Variant::SearchStore {
            "GEOSEARCHSTORE"
        } else {
            "STORE option in GEORADIUS"
        };
        return Err(format!(
            "ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        ));
    }
    let name = String::from_utf8_lossy(ctx.arg(0));
    if variant.is_geosearch() && !has_from {
        return Err(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        ));
    }
    if variant.is_geosearch() && !has_by {
        return Err(format!("ERR exactly one of BYRADIUS and BYBOX can be specified for {name}"));
    }
    if o.any && o.count == 0 {
        return Err("ERR the ANY argument requires COUNT argument".into());
    }
    Ok(())
}

/// The points inside the search, cell by cell in Redis's order, stopping at `limit`
/// points (0: none). A cell equal to the last one read is skipped (near the poles and for
/// huge radii neighbours coincide). Members are copied out: the set is read under its lock.
fn collect(scores: zset::Scores<'_>, search: &Search, limit: i64) -> Vec<Point> {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let reached = |points: &Vec<Point>| limit != 0 && points.len() >= limit;
    let mut points = Vec::new();
    let mut last: Option<hash::Cell> = None;
    for cell in search.cells() {
        if cell.bits == 0 && cell.step == 0 {
            continue;
        }
        if last == Some(cell) {
            continue;
        }
        if reached(&points) {
            break;
        }
        let (min, max) = cell.score_range();
        scores.scan(min, max, |member, score| {
            let position = hash::decode(score);
            if let Some(distance) = search.distance_if_within(position) {
                points.push(Point { member: member.to_vec(), score, distance, position });
            }
            !reached(&points)
        });
        last = Some(cell);
    }
    points
}

/// Sorts as asked (COUNT without ANY sorts nearest first) and says how many to return.
fn order(options: &Options, points: &mut [Point]) -> usize {
    let mut order = options.order;
    if options.count != 0 && order == Order::None && !options.any {
        order = Order::Asc;
    }
    let nearest = |a: &Point, b: &Point| {
        a.distance.partial_cmp(&b.distance).unwrap_or(std::cmp::Ordering::Equal)
    };
    match order {
        Order::None => {}
        Order::Asc => points.sort_by(nearest),
        Order::Desc => points.sort_by(|a, b| nearest(b, a)),
    }
    let count = usize::try_from(options.count).unwrap_or(usize::MAX);
    if count == 0 {
        points.len()
    } else {
        points.len().min(count)
    }
}

/// The reply: members, or `[member, distance?, hash?, [longitude, latitude]?]` arrays.
fn reply_points(ctx: &mut Ctx<'_>, o: &Options, points: &[Point]) {
    let extras = usize::from(o.with_dist) + usize::from(o.with_hash) + usize::from(o.with_coord);
    ctx.reply().array(points.len());
    for point in points {
        if extras > 0 {
            ctx.reply().array(extras + 1);
        }
        ctx.reply().bulk(&point.member);
        if o.with_dist {
            ctx.reply().bulk(hash::distance_text(point.distance).as_bytes());
        }
        if o.with_hash {
            // C's conversion of the score to `long long` (saturating here).
            ctx.reply().integer(point.score as i64);
        }
        if o.with_coord {
            ctx.reply().array(2);
            put_coordinate(ctx, point.position[0]);
            put_coordinate(ctx, point.position[1]);
        }
    }
}

/// Stores the points as a sorted set under argument `destination` (scores: geohashes or
/// distances), or deletes it when there are none; replies the count. Events as Redis's:
/// `georadiusstore` or `geosearchstore`, or `del` when an existing key was deleted.
fn store(ctx: &mut Ctx<'_>, variant: Variant, destination: usize, scored: &[(f64, &[u8])]) {
    // A member met twice (coinciding cells) is stored once, as its first.
    let mut seen = HashSet::with_capacity(scored.len());
    let scored: Vec<(f64, &[u8])> =
        scored.iter().copied().filter(|(_, m)| seen.insert(*m)).collect();
    let name = ctx.arg(destination);
    let mut scratch = Vec::new();
    let key = crate::keyspace::encode(ctx.session.db, name, &mut scratch).to_vec();
    let existed = ctx.shared.core.store.reader().peek(&key).is_some();
    let at = ctx.out.len();
    zset::store_scored(ctx, destination, &scored);
    if ctx.out.get(at) == Some(&b'-') {
        return;
    }
    if !scored.is_empty() {
        let event = if variant.is_geosearch() { "geosearchstore" } else { "georadiusstore" };
        ctx.wrote(class::ZSET, event, destination);
        let shared = ctx.shared;
        if shared.redis.blocking.any() && shared.redis.blocking.may_wait_on(&key) {
            ctx.session.ready_keys.push(key);
        }
    } else if existed {
        ctx.wrote(class::GENERIC, "del", destination);
    }
}
