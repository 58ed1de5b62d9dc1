//! Changes: ZADD ZINCRBY ZREM ZREMRANGEBY{RANK,SCORE,LEX} ZPOPMIN ZPOPMAX ZMPOP. Each
//! parses everything it can before touching the key (Redis replies a syntax or number
//! error before WRONGTYPE) and then runs one `typed::modify`.

use std::collections::{HashMap, HashSet};

use proto_resp::args::{is_option, match_option};
use proto_resp::error;

use super::encoding::{self, Entry, ZSet};
use super::range::parse_score;
use super::view::Sorted;
use super::zrange::{parse_request, select, Kind};
use super::{key_at, modify, parse_long_in, Ctx, MUST_BE_POSITIVE};
use crate::resp::{blocking::Popped, keyevents::class, typed, typed::Edit};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Mode {
    Zadd,
    /// ZINCRBY: ZADD with INCR set, parsed by the same loop (so `ZINCRBY k nx m` is a
    /// syntax error there too).
    Zincrby,
}

const NAN_SCORE: &str = "ERR resulting score is not a number (NaN)";
const NX_AND_XX: &str = "ERR XX and NX options at the same time are not compatible";
const GT_LT_NX: &str = "ERR GT, LT, and/or NX options at the same time are not compatible";
const INCR_PAIRS: &str = "ERR INCR option supports a single increment-element pair";

/// ZADD's flags.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Flags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// What a ZADD did.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Outcome {
    added: i64,
    updated: i64,
    processed: i64,
    score: f64,
    nan: bool,
}

impl Outcome {
    /// The outcome of a change that stopped at a NaN score.
    pub(super) fn nan(self) -> Outcome {
        Outcome { nan: true, ..self }
    }
}

/// ZADD's option loop, its checks in Redis's order, and the scores (all parsed before the
/// key is looked at).
fn parse_zadd<'a>(ctx: &Ctx<'a>, mode: Mode) -> Result<(Flags, Vec<Entry<'a>>), &'static str> {
    let mut f = Flags { incr: mode == Mode::Zincrby, ..Flags::default() };
    let mut at = 2;
    while at < ctx.argc() {
        match match_option(ctx.arg(at), &["NX", "XX", "CH", "INCR", "GT", "LT"]) {
            Some(0) => f.nx = true,
            Some(1) => f.xx = true,
            Some(2) => f.ch = true,
            Some(3) => f.incr = true,
            Some(4) => f.gt = true,
            Some(5) => f.lt = true,
            _ => break,
        }
        at += 1;
    }
    let elements = ctx.argc() - at;
    if elements == 0 || elements % 2 == 1 {
        return Err(error::SYNTAX);
    }
    if f.nx && f.xx {
        return Err(NX_AND_XX);
    }
    if (f.nx && (f.gt || f.lt)) || (f.gt && f.lt) {
        return Err(GT_LT_NX);
    }
    if f.incr && elements > 2 {
        return Err(INCR_PAIRS);
    }
    let mut pairs = Vec::with_capacity(elements / 2);
    for i in (at..ctx.argc()).step_by(2) {
        let score = parse_score(ctx.arg(i)).map_err(|e| e.message())?;
        pairs.push(Entry { score, member: ctx.arg(i + 1) });
    }
    Ok((f, pairs))
}

pub(super) fn zadd(ctx: &mut Ctx<'_>, mode: Mode) {
    let (flags, pairs) = match parse_zadd(ctx, mode) {
        Ok(parsed) => parsed,
        Err(message) => return ctx.error(message),
    };
    add_pairs(ctx, flags, &pairs);
}

/// GEOADD's ZADD: the scores are its points' geohashes, and of ZADD's options only NX, XX
/// and CH can be given (Redis rewrites GEOADD into ZADD and runs it).
pub(in crate::resp) fn geoadd(
    ctx: &mut Ctx<'_>,
    nx: bool,
    xx: bool,
    ch: bool,
    pairs: &[(f64, &[u8])],
) {
    let flags = Flags { nx, xx, ch, ..Flags::default() };
    let pairs: Vec<Entry<'_>> =
        pairs.iter().map(|&(score, member)| Entry { score, member }).collect();
    add_pairs(ctx, flags, &pairs);
}

/// ZADD once its arguments are parsed: writes key argument 1, sends `zadd` or `zincr`,
/// replies.
fn add_pairs(ctx: &mut Ctx<'_>, flags: Flags, pairs: &[Entry<'_>]) {
    let out = match super::large::add(ctx, flags, pairs) {
        Some(Ok(out)) => out,
        Some(Err(super::large::TooLarge)) => {
            return ctx.refused(crate::core::Refusal::TooLarge);
        }
        None => match modify_adding(ctx, pairs, |current| apply_zadd(current, flags, pairs)) {
            Some(out) => out,
            None => return,
        },
    };
    if !out.nan && out.added + out.updated > 0 {
        let event = if flags.incr { "zincr" } else { "zadd" };
        ctx.wrote(class::ZSET, event, 1);
    }
    if out.nan {
        ctx.error(NAN_SCORE);
    } else if flags.incr && out.processed > 0 {
        ctx.score(out.score);
    } else if flags.incr {
        ctx.reply().null();
    } else {
        ctx.reply().integer(if flags.ch { out.added + out.updated } else { out.added });
    }
}

/// [`modify`] of argument 1's sorted set by a change that adds these members at most:
/// only they can be past `zset-max-listpack-value` (Redis checks a command's new
/// arguments), so the write checks only the count.
fn modify_adding<R>(
    ctx: &mut Ctx<'_>,
    pairs: &[Entry<'_>],
    f: impl FnMut(Option<&[u8]>) -> (Edit, R),
) -> Option<R> {
    let thresholds = &ctx.shared.redis.encoding_thresholds;
    let long = pairs.iter().any(|pair| thresholds.zset_member_past(pair.member.len()));
    let key = key_at(ctx, 1);
    match typed::modify_checked(ctx, &key, store::ValueKind::ZSet, Some(long), f) {
        Ok(out) => Some(out),
        Err(failure) => {
            ctx.failure(failure);
            None
        }
    }
}

/// Up to this many members, a change edits the value one member at a time (a walk and a
/// copy each); beyond, it indexes the set once and rebuilds it once.
const FEW_MEMBERS: usize = 4;

/// What `zsetAdd` decides for one pair, given the member's current score.
pub(super) enum Decision {
    Skip,
    Nan,
    Write(f64),
}

/// `zsetAdd`'s rules; counts what it did in `out`.
pub(super) fn decide(old: Option<f64>, pair: &Entry<'_>, f: Flags, out: &mut Outcome) -> Decision {
    let Some(old) = old else {
        if f.xx {
            return Decision::Skip;
        }
        (out.added, out.processed, out.score) = (out.added + 1, out.processed + 1, pair.score);
        return Decision::Write(pair.score);
    };
    if f.nx {
        return Decision::Skip;
    }
    let mut score = pair.score;
    if f.incr {
        score += old;
        if score.is_nan() {
            return Decision::Nan;
        }
    }
    if (f.lt && score >= old) || (f.gt && score <= old) {
        return Decision::Skip;
    }
    (out.processed, out.score) = (out.processed + 1, score);
    if score == old {
        return Decision::Skip;
    }
    out.updated += 1;
    Decision::Write(score)
}

/// `zsetAdd` for each pair, in order (a member given twice is added, then updated).
fn apply_zadd(current: Option<&[u8]>, f: Flags, pairs: &[Entry<'_>]) -> (Edit, Outcome) {
    if current.is_none() && f.xx {
        return (Edit::Keep, Outcome::default());
    }
    if pairs.len() <= FEW_MEMBERS {
        zadd_in_place(current.unwrap_or_default(), f, pairs)
    } else {
        zadd_rebuild(current, f, pairs)
    }
}

fn zadd_in_place(current: &[u8], f: Flags, pairs: &[Entry<'_>]) -> (Edit, Outcome) {
    let mut out = Outcome::default();
    let mut changed: Option<Vec<u8>> = None;
    for pair in pairs {
        let value = changed.as_deref().unwrap_or(current);
        let found = encoding::locate(value, pair.member);
        match decide(found.as_ref().map(|(_, score)| *score), pair, f, &mut out) {
            Decision::Skip => {}
            Decision::Nan => return (Edit::Keep, out.nan()),
            Decision::Write(score) => {
                let entry = Entry { score, member: pair.member };
                let next = encoding::replace(value, found.map(|(bytes, _)| bytes), Some(&entry));
                changed = Some(next);
            }
        }
    }
    (changed.map_or(Edit::Keep, Edit::Write), out)
}

fn zadd_rebuild(current: Option<&[u8]>, f: Flags, pairs: &[Entry<'_>]) -> (Edit, Outcome) {
    let mut out = Outcome::default();
    let set = ZSet::decode_or_empty(current);
    let mut scores: HashMap<&[u8], f64> = set.index();
    let mut touched: HashSet<&[u8]> = HashSet::new();
    for pair in pairs {
        match decide(scores.get(pair.member).copied(), pair, f, &mut out) {
            Decision::Skip => {}
            Decision::Nan => return (Edit::Keep, out.nan()),
            Decision::Write(score) => {
                scores.insert(pair.member, score);
                touched.insert(pair.member);
            }
        }
    }
    if touched.is_empty() {
        return (Edit::Keep, out);
    }
    let added = touched.iter().map(|&member| Entry { score: scores[member], member }).collect();
    (Edit::Write(set.rebuild(&touched, added)), out)
}

pub(super) fn zrem(ctx: &mut Ctx<'_>) {
    let members: Vec<&[u8]> = (2..ctx.argc()).map(|i| ctx.arg(i)).collect();
    if let Some(removed) = super::large::remove(ctx, &members) {
        return removed_done(ctx, "zrem", removed);
    }
    let removed = modify(ctx, 1, |current| {
        let Some(current) = current else { return (Edit::Keep, 0) };
        if members.len() <= FEW_MEMBERS {
            return zrem_in_place(current, &members);
        }
        let wanted: HashSet<&[u8]> = members.iter().copied().collect();
        let set = ZSet::decode(current);
        let before = set.len();
        let kept: Vec<Entry<'_>> =
            set.entries.into_iter().filter(|e| !wanted.contains(e.member)).collect();
        let removed = before - kept.len();
        (remaining(removed, &kept), removed)
    });
    if let Some(removed) = removed {
        removed_done(ctx, "zrem", removed);
    }
}

/// A removal's reply, the count; its event `name` when something went.
fn removed_done(ctx: &mut Ctx<'_>, name: &'static str, removed: usize) {
    if removed > 0 {
        ctx.removed(class::ZSET, name, 1);
    }
    ctx.reply().integer(removed as i64);
}

fn zrem_in_place(current: &[u8], members: &[&[u8]]) -> (Edit, usize) {
    let mut changed: Option<Vec<u8>> = None;
    let mut removed = 0;
    for member in members {
        let value = changed.as_deref().unwrap_or(current);
        if let Some((bytes, _)) = encoding::locate(value, member) {
            changed = Some(encoding::replace(value, Some(bytes), None));
            removed += 1;
        }
    }
    match changed {
        None => (Edit::Keep, 0),
        Some(value) if value.is_empty() => (Edit::Delete, removed),
        Some(value) => (Edit::Write(value), removed),
    }
}

/// The edit for a set that lost `removed` members and keeps `kept`.
fn remaining(removed: usize, kept: &[Entry<'_>]) -> Edit {
    match (removed, kept.is_empty()) {
        (0, _) => Edit::Keep,
        (_, true) => Edit::Delete,
        (_, false) => Edit::Write(encoding::encode(kept)),
    }
}

/// The edit that cuts the bytes `cut` out of `current`.
fn cut(current: &[u8], cut: std::ops::Range<usize>) -> Edit {
    if cut.is_empty() {
        Edit::Keep
    } else if cut.len() == current.len() {
        Edit::Delete
    } else {
        Edit::Write([&current[..cut.start], &current[cut.end..]].concat())
    }
}

/// ZREMRANGEBYRANK, ZREMRANGEBYSCORE, ZREMRANGEBYLEX.
pub(super) fn zremrange(ctx: &mut Ctx<'_>, kind: Kind) {
    let request = match parse_request(ctx, kind, 2, false) {
        Ok(request) => request,
        Err(message) => return ctx.error(message),
    };
    let name = match kind {
        Kind::Rank => "zremrangebyrank",
        Kind::Score => "zremrangebyscore",
        Kind::Lex => "zremrangebylex",
    };
    if let Some(removed) = super::large::remove_range(ctx, request) {
        return removed_done(ctx, name, removed);
    }
    let removed = modify(ctx, 1, |current| {
        let Some(current) = current else { return (Edit::Keep, 0) };
        let (ranges, entries): (Vec<_>, Vec<_>) = encoding::records(current).unzip();
        let span = select(&Sorted::Slice(&entries), request, false);
        if span.is_empty() {
            return (Edit::Keep, 0);
        }
        let bytes = ranges[span.start].start..ranges[span.end - 1].end;
        (cut(current, bytes), span.len())
    });
    if let Some(removed) = removed {
        removed_done(ctx, name, removed);
    }
}

/// Which end a pop takes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::resp) enum End {
    Min,
    Max,
}

/// The event of a pop from `end`.
pub(in crate::resp) fn pop_event(end: End) -> &'static str {
    match end {
        End::Min => "zpopmin",
        End::Max => "zpopmax",
    }
}

/// Takes up to `count` members from `end` of key argument `index`: `None` after a reply
/// (WRONGTYPE), `Some(None)` when the key is absent.
#[allow(clippy::type_complexity)]
fn pop(
    ctx: &mut Ctx<'_>,
    index: usize,
    end: End,
    count: usize,
) -> Option<Option<Vec<(Vec<u8>, f64)>>> {
    if let Some(popped) = super::large::pop(ctx, index, end, count) {
        return Some(Some(popped));
    }
    modify(ctx, index, |current| {
        let Some(current) = current else { return (Edit::Keep, None) };
        let records: Vec<_> = match end {
            End::Min => encoding::records(current).take(count).collect(),
            End::Max => {
                let all: Vec<_> = encoding::records(current).collect();
                all.into_iter().rev().take(count).collect()
            }
        };
        let popped = records.iter().map(|(_, e)| (e.member.to_vec(), e.score)).collect();
        // The last record taken is the innermost: the cut runs from it to the end.
        let bytes = match (end, records.last()) {
            (End::Min, Some((last, _))) => 0..last.end,
            (End::Max, Some((last, _))) => last.start..current.len(),
            (_, None) => 0..0,
        };
        (cut(current, bytes), Some(popped))
    })
}

/// ZPOPMIN and ZPOPMAX: `[member, score, ...]` flat, except with a count in RESP3
/// (`[[member, score], ...]`).
pub(super) fn zpop(ctx: &mut Ctx<'_>, end: End) {
    if ctx.argc() > 3 {
        return ctx.error(error::SYNTAX);
    }
    let count = match ctx.argc() {
        3 => match parse_long_in(ctx.arg(2), 0, MUST_BE_POSITIVE) {
            Ok(count) => Some(count as usize),
            Err(message) => return ctx.error(message),
        },
        _ => None,
    };
    let Some(popped) = pop(ctx, 1, end, count.unwrap_or(1)) else { return };
    let popped = popped.unwrap_or_default();
    if !popped.is_empty() {
        ctx.removed(class::ZSET, pop_event(end), 1);
    }
    let nested = count.is_some() && ctx.session.protocol == proto_resp::Protocol::Resp3;
    ctx.reply().array(if nested { popped.len() } else { popped.len() * 2 });
    for (member, score) in &popped {
        if nested {
            ctx.reply().array(2);
        }
        ctx.reply().bulk(member);
        ctx.score(*score);
    }
}

/// `ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]`: pops from the first key that is
/// not empty; `[key, [[member, score], ...]]`, or a null array when every key is empty.
pub(super) fn zmpop(ctx: &mut Ctx<'_>) {
    let (keys, end, count) = match parse_zmpop(ctx) {
        Ok(parsed) => parsed,
        Err(message) => return ctx.error(message),
    };
    for index in keys {
        match pop_for_bzmpop(ctx, index, end, count) {
            Popped::Empty => continue,
            Popped::Served => return ctx.removed(class::ZSET, pop_event(end), index),
            Popped::Failed => return,
        }
    }
    ctx.reply().null_array();
}

/// ZMPOP and BZMPOP on key argument `index`: `[key, [[member, score], ...]]`.
pub(in crate::resp) fn pop_for_bzmpop(
    ctx: &mut Ctx<'_>,
    index: usize,
    end: End,
    count: usize,
) -> Popped {
    let Some(popped) = pop(ctx, index, end, count) else { return Popped::Failed };
    let Some(popped) = popped else { return Popped::Empty };
    let key = ctx.arg(index);
    let mut reply = ctx.reply();
    reply.array(2);
    reply.bulk(key);
    reply.array(popped.len());
    for (member, score) in &popped {
        ctx.reply().array(2);
        ctx.reply().bulk(member);
        ctx.score(*score);
    }
    Popped::Served
}

/// BZPOPMIN and BZPOPMAX on key argument `index`: `[key, member, score]`.
pub(in crate::resp) fn pop_for_bzpop(ctx: &mut Ctx<'_>, index: usize, end: End) -> Popped {
    let Some(popped) = pop(ctx, index, end, 1) else { return Popped::Failed };
    let Some((member, score)) = popped.and_then(|p| p.into_iter().next()) else {
        return Popped::Empty;
    };
    let key = ctx.arg(index);
    let mut reply = ctx.reply();
    reply.array(3);
    reply.bulk(key);
    reply.bulk(&member);
    ctx.score(score);
    Popped::Served
}

fn parse_zmpop(ctx: &Ctx<'_>) -> Result<(std::ops::Range<usize>, End, usize), &'static str> {
    parse_zmpop_from(ctx, 1)
}

/// [`parse_zmpop`] with `numkeys` at argument `first` (2 for BZMPOP, after its timeout).
pub(in crate::resp) fn parse_zmpop_from(
    ctx: &Ctx<'_>,
    first: usize,
) -> Result<(std::ops::Range<usize>, End, usize), &'static str> {
    let numkeys = parse_long_in(ctx.arg(first), 1, "ERR numkeys should be greater than 0")?;
    let where_at = usize::try_from(numkeys).ok().and_then(|n| n.checked_add(first + 1));
    let where_at = where_at.filter(|&at| at < ctx.argc()).ok_or(error::SYNTAX)?;
    let end = match match_option(ctx.arg(where_at), &["MIN", "MAX"]) {
        Some(0) => End::Min,
        Some(_) => End::Max,
        None => return Err(error::SYNTAX),
    };
    let mut count = None;
    let mut j = where_at + 1;
    while j < ctx.argc() {
        if count.is_none() && is_option(ctx.arg(j), "COUNT") && j + 1 < ctx.argc() {
            let n = parse_long_in(ctx.arg(j + 1), 1, "ERR count should be greater than 0")?;
            count = Some(n as usize);
            j += 2;
        } else {
            return Err(error::SYNTAX);
        }
    }
    Ok((first + 1..where_at, end, count.unwrap_or(1)))
}
