//! ZUNION ZINTER ZDIFF, their STORE forms and ZINTERCARD, as Redis's
//! `zunionInterDiffGenericCommand`: numkeys, then the keys (WRONGTYPE before any option
//! error), then WEIGHTS / AGGREGATE / WITHSCORES / LIMIT. Plain sets are inputs too, as
//! in Redis: every member scores 1.

use std::borrow::Cow;
use std::collections::HashMap;

use proto_resp::args::{is_option, match_option, parse_i64};
use proto_resp::error;

use super::encoding::{Entry, ZSet};
use super::range::parse_score;
use super::zrange::store_result;
use crate::resp::keyevents::class;
use store::{Item, Reader, ValueKind};

use super::Ctx;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Union,
    Inter,
    Diff,
}

/// Where the result goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Output {
    /// ZUNION, ZINTER, ZDIFF: the members (WITHSCORES: and scores).
    Reply,
    /// The STORE forms: into the key before numkeys.
    Store,
    /// ZINTERCARD: only the count.
    Count,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

/// The options after the keys.
struct Options {
    weights: Vec<f64>,
    aggregate: Aggregate,
    with_scores: bool,
    /// ZINTERCARD's LIMIT; 0 is none.
    limit: usize,
}

const WEIGHT_NOT_FLOAT: &str = "ERR weight value is not a float";
const LIMIT_NEGATIVE: &str = "ERR LIMIT can't be negative";

/// Input `index` of ZUNION and its relatives: a sorted set or a plain set.
fn lookup_input<'r>(
    ctx: &mut Ctx<'_>,
    reader: &'r Reader<'_>,
    index: usize,
) -> Result<Option<Item<'r>>, ()> {
    let found = reader.peek(ctx.key(index));
    super::super::count_read(ctx.counters, found.is_some());
    match found {
        Some(item) if !matches!(item.value_kind(), ValueKind::ZSet | ValueKind::Set) => {
            ctx.error(error::WRONGTYPE);
            Err(())
        }
        found => Ok(found),
    }
}

pub(super) fn combine(ctx: &mut Ctx<'_>, op: Op, output: Output) {
    let numkeys_at = if output == Output::Store { 2 } else { 1 };
    let numkeys = match parse_i64(ctx.arg(numkeys_at)) {
        Ok(n) if n >= 1 => n as u64,
        Ok(_) => {
            let name = ctx.spec.name;
            return ctx.error(format!("ERR at least 1 input key is needed for '{name}' command"));
        }
        Err(e) => return ctx.error(e.message()),
    };
    let first_key = numkeys_at + 1;
    if numkeys > (ctx.argc() - first_key) as u64 {
        return ctx.error(error::SYNTAX);
    }
    let keys = first_key..first_key + numkeys as usize;
    let shared = ctx.shared;
    let reader = shared.core.store.reader();
    let mut items = Vec::with_capacity(keys.len());
    for index in keys.clone() {
        let Ok(item) = lookup_input(ctx, &reader, index) else { return };
        items.push(item);
    }
    let options = match parse_options(ctx, keys.end, keys.len(), op, output) {
        Ok(options) => options,
        Err(message) => return ctx.error(message),
    };
    let texts = set_members(ctx, &items);
    let encodings = zset_encodings(ctx, &items);
    let sets = as_zsets(&texts, &encodings);
    let mut sources: Vec<(f64, &ZSet<'_>)> = options.weights.iter().copied().zip(&sets).collect();
    if op != Op::Diff {
        // Redis walks the inputs smallest first; a stable sort keeps equal sizes in order.
        sources.sort_by_key(|(_, set)| set.len());
    }
    let result = match op {
        Op::Union => union(&sources, options.aggregate),
        Op::Inter => inter(&sources, options.aggregate, options.limit),
        Op::Diff => diff(&sources),
    };
    answer(ctx, op, output, result, options.with_scores);
}

/// A plain set is read as a sorted set whose members all score 1: its members' text.
fn set_members(ctx: &Ctx<'_>, items: &[Option<Item>]) -> Vec<Option<Vec<Vec<u8>>>> {
    items
        .iter()
        .map(|item| {
            let item = item.as_ref().filter(|i| i.value_kind() == ValueKind::Set)?;
            let encoded = super::super::typed::encoding(ctx.shared, item)?;
            Some(super::super::set::members_text(&encoded))
        })
        .collect()
}

/// A large sorted set kept outside the store is read as its encoding (a copy: these
/// commands cost O(size) anyway).
fn zset_encodings<'i>(ctx: &Ctx<'_>, items: &'i [Option<Item>]) -> Vec<Option<Cow<'i, [u8]>>> {
    items
        .iter()
        .map(|item| {
            let item = item.as_ref().filter(|i| i.value_kind() == ValueKind::ZSet)?;
            super::super::typed::encoding(ctx.shared, item)
        })
        .collect()
}

fn as_zsets<'a>(
    texts: &'a [Option<Vec<Vec<u8>>>],
    encodings: &'a [Option<Cow<'_, [u8]>>],
) -> Vec<ZSet<'a>> {
    texts
        .iter()
        .zip(encodings)
        .map(|(text, encoded)| match text {
            Some(members) => {
                let mut entries: Vec<Entry<'_>> =
                    members.iter().map(|m| Entry { score: 1.0, member: m }).collect();
                entries.sort_by(super::encoding::order);
                ZSet { entries }
            }
            None => ZSet::decode_or_empty(encoded.as_deref()),
        })
        .collect()
}

/// The count, the stored result (with its event) or the entries.
fn answer(ctx: &mut Ctx<'_>, op: Op, output: Output, result: Vec<Entry<'_>>, with_scores: bool) {
    match output {
        Output::Count => ctx.reply().integer(result.len() as i64),
        Output::Store => {
            if store_result(ctx, 1, &result) {
                let name = match op {
                    Op::Union => "zunionstore",
                    Op::Inter => "zinterstore",
                    Op::Diff => "zdiffstore",
                };
                ctx.stored(class::ZSET, name, 1, !result.is_empty());
            }
        }
        Output::Reply => {
            let mut sorted = result;
            sorted.sort_by(super::encoding::order);
            ctx.entries(sorted.into_iter(), with_scores);
        }
    }
}

fn parse_options(
    ctx: &Ctx<'_>,
    from: usize,
    setnum: usize,
    op: Op,
    output: Output,
) -> Result<Options, &'static str> {
    let mut o = Options {
        weights: vec![1.0; setnum],
        aggregate: Aggregate::Sum,
        with_scores: false,
        limit: 0,
    };
    let scored = op != Op::Diff && output != Output::Count;
    let mut j = from;
    while j < ctx.argc() {
        let remaining = ctx.argc() - j;
        let arg = ctx.arg(j);
        if scored && remaining > setnum && is_option(arg, "WEIGHTS") {
            for (i, weight) in o.weights.iter_mut().enumerate() {
                *weight = parse_score(ctx.arg(j + 1 + i)).map_err(|_| WEIGHT_NOT_FLOAT)?;
            }
            j += 1 + setnum;
        } else if scored && remaining >= 2 && is_option(arg, "AGGREGATE") {
            o.aggregate = match match_option(ctx.arg(j + 1), &["SUM", "MIN", "MAX"]) {
                Some(0) => Aggregate::Sum,
                Some(1) => Aggregate::Min,
                Some(2) => Aggregate::Max,
                _ => return Err(error::SYNTAX),
            };
            j += 2;
        } else if output == Output::Reply && is_option(arg, "WITHSCORES") {
            o.with_scores = true;
            j += 1;
        } else if output == Output::Count && remaining >= 2 && is_option(arg, "LIMIT") {
            let limit = parse_i64(ctx.arg(j + 1)).ok().filter(|&n| n >= 0);
            o.limit = limit.ok_or(LIMIT_NEGATIVE)? as usize;
            j += 2;
        } else {
            return Err(error::SYNTAX);
        }
    }
    Ok(o)
}

/// `zunionInterAggregate`: a sum of `inf` and `-inf` is 0, not NaN.
fn aggregate(target: &mut f64, value: f64, how: Aggregate) {
    match how {
        Aggregate::Sum => {
            *target += value;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggregate::Min => *target = if value < *target { value } else { *target },
        Aggregate::Max => *target = if value > *target { value } else { *target },
    }
}

/// A weighted score; `0 * inf` is 0, as in Redis.
fn weighted(score: f64, weight: f64) -> f64 {
    let value = score * weight;
    if value.is_nan() {
        0.0
    } else {
        value
    }
}

fn union<'a>(sources: &[(f64, &ZSet<'a>)], how: Aggregate) -> Vec<Entry<'a>> {
    let mut scores: HashMap<&'a [u8], f64> = HashMap::new();
    for &(weight, set) in sources {
        for entry in &set.entries {
            let value = weighted(entry.score, weight);
            scores
                .entry(entry.member)
                .and_modify(|score| aggregate(score, value, how))
                .or_insert(value);
        }
    }
    scores.into_iter().map(|(member, score)| Entry { score, member }).collect()
}

/// Members of every input, in the smallest input's order; stops at `limit` (0: none).
fn inter<'a>(sources: &[(f64, &ZSet<'a>)], how: Aggregate, limit: usize) -> Vec<Entry<'a>> {
    let Some(&(first_weight, first)) = sources.first() else { return Vec::new() };
    let others: Vec<(f64, HashMap<&[u8], f64>)> =
        sources[1..].iter().map(|&(weight, set)| (weight, set.index())).collect();
    let mut out = Vec::new();
    for entry in &first.entries {
        let mut score = weighted(entry.score, first_weight);
        let in_all = others.iter().all(|(weight, index)| match index.get(entry.member) {
            Some(&value) => {
                // Redis multiplies without the NaN guard here: `0 * inf` becomes NaN in
                // the aggregate only through the sum's guard, which maps it to 0.
                aggregate(&mut score, value * weight, how);
                true
            }
            None => false,
        });
        if in_all {
            out.push(Entry { score, member: entry.member });
            if out.len() == limit {
                break;
            }
        }
    }
    out
}

/// Members of the first input that no other holds, with their first-input scores.
fn diff<'a>(sources: &[(f64, &ZSet<'a>)]) -> Vec<Entry<'a>> {
    let Some(&(_, first)) = sources.first() else { return Vec::new() };
    let others: Vec<HashMap<&[u8], f64>> =
        sources[1..].iter().map(|(_, set)| set.index()).collect();
    first
        .entries
        .iter()
        .filter(|e| others.iter().all(|index| !index.contains_key(e.member)))
        .copied()
        .collect()
}
