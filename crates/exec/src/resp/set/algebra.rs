//! Commands over several sets: SMOVE, SINTER, SINTERCARD, SINTERSTORE, SUNION, SUNIONSTORE,
//! SDIFF, SDIFFSTORE.
//!
//! Each reads its sources in one store read session and writes each key with its own
//! change; the server runs multi-key writes one at a time (the lead's gate), so nothing
//! here locks across keys. As in Redis, every source is type-checked before anything is
//! computed; a missing source is an empty set; a STORE replaces the destination whatever
//! it held, without its TTL, and deletes it when the result is empty.

use std::borrow::Cow;

use proto_resp::{args::parse_i64, error};
use store::{Change, Expiry, Reader, ValueKind};

use super::super::keyevents::class;
use super::{change_set, splice, stored_key, Ctx, Member, SetView, Work};
use crate::resp::typed::{self, Failure, Owning};

const NUMKEYS_NOT_POSITIVE: &str = "ERR numkeys should be greater than 0";
const NUMKEYS_TOO_MANY: &str = "ERR Number of keys can't be greater than number of args";
const LIMIT_NEGATIVE: &str = "ERR LIMIT can't be negative";

/// Whether a read counts toward `keyspace_hits`/`keyspace_misses`: Redis counts the sources
/// of SINTER and the rest (`lookupKeyRead`), not SMOVE's keys (`lookupKeyWrite`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Count {
    Reads,
    Not,
}

/// The encodings of the sets at key arguments `keys` (each `None` when absent), or the
/// first WRONGTYPE; [`views`] reads them.
fn read_sets<'r>(
    ctx: &Ctx<'_>,
    reader: &'r Reader<'_>,
    keys: std::ops::Range<usize>,
    count: Count,
) -> Result<Vec<Option<Cow<'r, [u8]>>>, Failure> {
    let mut scratch = Vec::new();
    keys.map(|index| {
        let key = stored_key(ctx, index, &mut scratch);
        let item = typed::read(reader, key, ValueKind::Set)?;
        if count == Count::Reads {
            crate::resp::count_read(ctx.counters, item.is_some());
        }
        Ok(item.and_then(|item| typed::encoding(ctx.shared, &item)))
    })
    .collect()
}

/// The sets of [`read_sets`]'s encodings.
fn views<'e>(encodings: &'e [Option<Cow<'_, [u8]>>]) -> Vec<Option<SetView<'e>>> {
    encodings.iter().map(|encoded| encoded.as_deref().map(SetView::new)).collect()
}

/// The members every set has, in the stored order of the smallest, up to `limit` (0: all).
/// Any absent set makes the result empty.
fn intersect<'r>(sets: &[Option<SetView<'r>>], limit: usize) -> Vec<Member<'r>> {
    let Some(sets) = sets.iter().copied().collect::<Option<Vec<SetView<'r>>>>() else {
        return Vec::new();
    };
    let Some(smallest) = (0..sets.len()).min_by_key(|&i| sets[i].len()) else {
        return Vec::new();
    };
    let others: Vec<_> =
        (0..sets.len()).filter(|&i| i != smallest).map(|i| sets[i].lookup()).collect();
    let mut found = Vec::new();
    for member in sets[smallest].iter() {
        if others.iter().all(|other| other.contains(member)) {
            found.push(member);
            if found.len() == limit {
                break;
            }
        }
    }
    found
}

/// SINTER key [key ...] (SMEMBERS is the one-key case, handled on its own).
pub(super) fn sinter(ctx: &mut Ctx<'_>) {
    let shared = ctx.shared;
    let reader = shared.core.store.reader();
    match read_sets(ctx, &reader, 1..ctx.argc(), Count::Reads) {
        Ok(encodings) => {
            let found = intersect(&views(&encodings), 0);
            super::reply_members(ctx, found.len(), found.into_iter());
        }
        Err(failure) => ctx.failure(failure),
    }
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit]; checked in Redis's order: numkeys, its
/// bound, the options, then the keys' types.
pub(super) fn sintercard(ctx: &mut Ctx<'_>) {
    let numkeys = match parse_i64(ctx.arg(1)) {
        Ok(n) if n >= 1 => n as u64,
        _ => return ctx.error(NUMKEYS_NOT_POSITIVE),
    };
    if numkeys > (ctx.argc() - 2) as u64 {
        return ctx.error(NUMKEYS_TOO_MANY);
    }
    let keys_end = 2 + numkeys as usize;
    let mut limit = 0;
    let mut index = keys_end;
    while index < ctx.argc() {
        if !ctx.arg(index).eq_ignore_ascii_case(b"LIMIT") || index + 1 == ctx.argc() {
            return ctx.error(error::SYNTAX);
        }
        limit = match parse_i64(ctx.arg(index + 1)) {
            Ok(n) if n >= 0 => usize::try_from(n).unwrap_or(usize::MAX),
            _ => return ctx.error(LIMIT_NEGATIVE),
        };
        index += 2;
    }
    let shared = ctx.shared;
    let reader = shared.core.store.reader();
    match read_sets(ctx, &reader, 2..keys_end, Count::Reads) {
        Ok(encodings) => ctx.reply().integer(intersect(&views(&encodings), limit).len() as i64),
        Err(failure) => ctx.failure(failure),
    }
}

/// SINTERSTORE destination key [key ...].
pub(super) fn sinterstore(ctx: &mut Ctx<'_>) {
    let shared = ctx.shared;
    let reader = shared.core.store.reader();
    let result = read_sets(ctx, &reader, 2..ctx.argc(), Count::Reads).map(|encodings| {
        let mut work = Work::default();
        work.add_all(intersect(&views(&encodings), 0));
        work.encode()
    });
    match result {
        Ok(encoded) => store_result(ctx, encoded, "sinterstore"),
        Err(failure) => ctx.failure(failure),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
    Union,
    Diff,
}

/// Where a result goes: to the client, or under the first argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Target {
    Reply,
    Store,
}

/// SUNION, SDIFF and their STORE forms.
pub(super) fn combine(ctx: &mut Ctx<'_>, op: Op, target: Target) {
    let first = if target == Target::Store { 2 } else { 1 };
    let shared = ctx.shared;
    let reader = shared.core.store.reader();
    let encodings = match read_sets(ctx, &reader, first..ctx.argc(), Count::Reads) {
        Ok(encodings) => encodings,
        Err(failure) => return ctx.failure(failure),
    };
    let sets = views(&encodings);
    let mut work = Work::default();
    match op {
        Op::Union => {
            sets.iter().flatten().for_each(|set| {
                work.add_all(set.iter());
            });
        }
        // A later key naming the first set again empties the result (Redis's `sameset`).
        Op::Diff if (first + 1..ctx.argc()).any(|i| ctx.arg(i) == ctx.arg(first)) => {}
        Op::Diff => {
            if let Some(base) = sets[0] {
                let others: Vec<_> = sets[1..].iter().flatten().map(SetView::lookup).collect();
                work.add_all(base.iter().filter(|&m| !others.iter().any(|o| o.contains(m))));
            }
        }
    }
    match target {
        Target::Reply => super::reply_members(ctx, work.len(), work.iter()),
        Target::Store => {
            let name = if op == Op::Union { "sunionstore" } else { "sdiffstore" };
            store_result(ctx, work.encode(), name);
        }
    }
}

/// Stores a result set under key argument 1 (replacing any type, no TTL), or deletes the
/// key when the result is empty; replies the result's size. Its event is `name`'s, or
/// `del` when it deleted the destination.
fn store_result(ctx: &mut Ctx<'_>, encoded: Option<Vec<u8>>, name: &'static str) {
    let len = encoded.as_deref().map_or(0, |encoded| SetView::new(encoded).len());
    let shared = ctx.shared;
    let mut scratch = Vec::new();
    let key = stored_key(ctx, 1, &mut scratch);
    let mut owning = Owning::new(shared);
    let mut deleted = false;
    let result =
        shared.core.store.modify_within(key, super::super::PROTO_MAX_BULK_LEN, |current| {
            owning.start_run();
            deleted = encoded.is_none() && current.is_some();
            let change = match (&encoded, current) {
                (Some(value), _) => owning.write(ValueKind::Set, value.clone(), Expiry::Never),
                (None, Some(_)) => Ok(Change::Delete),
                (None, None) => Ok(Change::Keep),
            };
            match change {
                Ok(change) => (change, Ok(())),
                Err(failure) => (Change::Keep, Err(failure)),
            }
        });
    match owning.finish(result.map(|(_, out)| out)) {
        Ok(()) => {
            if deleted {
                ctx.outcome.note_emptied();
            }
            ctx.stored(class::SET, name, 1, len > 0);
            ctx.reply().integer(len as i64);
        }
        Err(failure) => ctx.failure(failure),
    }
}

/// SMOVE source destination member, in Redis's order: a missing source answers 0 before
/// the destination's type is looked at; then both types; then membership. The member is
/// added to the destination first, so a destination the store refuses to grow leaves the
/// source as it was.
pub(super) fn smove(ctx: &mut Ctx<'_>) {
    let member = Member::of(ctx.arg(3));
    let same_key = ctx.arg(1) == ctx.arg(2);
    let shared = ctx.shared;
    let reader = shared.core.store.reader();
    let encodings = match read_sets(ctx, &reader, 1..3, Count::Not) {
        Ok(encodings) => encodings,
        Err(_) if sets_source_missing(ctx, &reader) => return ctx.reply().integer(0),
        Err(failure) => return ctx.failure(failure),
    };
    let Some(source) = encodings[0].as_deref().map(SetView::new) else {
        return ctx.reply().integer(0);
    };
    if !source.contains(member) {
        return ctx.reply().integer(0);
    }
    if same_key {
        return smoved_done(ctx);
    }
    drop(encodings);
    drop(reader);
    if change_set(ctx, 2, |current| splice::add(current, &[member])).is_none() {
        return;
    }
    let removed = change_set(ctx, 1, |current| splice::remove(current, &[member]));
    if removed.is_some() {
        smoved_done(ctx);
    }
}

/// SMOVE moved its member: `srem` on the source (and `del` if that emptied it), `sadd`
/// on the destination.
fn smoved_done(ctx: &mut Ctx<'_>) {
    ctx.removed(class::SET, "srem", 1);
    ctx.wrote(class::SET, "sadd", 2);
    ctx.reply().integer(1);
}

/// Whether SMOVE's source is absent (then Redis answers 0 whatever the destination holds).
fn sets_source_missing(ctx: &Ctx<'_>, reader: &Reader<'_>) -> bool {
    let mut scratch = Vec::new();
    reader.peek(stored_key(ctx, 1, &mut scratch)).is_none()
}
