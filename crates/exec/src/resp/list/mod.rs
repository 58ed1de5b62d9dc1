//! Redis lists: LPUSH RPUSH LPUSHX RPUSHX LLEN LINDEX LSET LRANGE LTRIM here; LPOP RPOP
//! LMPOP LMOVE RPOPLPUSH in `pop`; LPOS LREM LINSERT in `search`. The blocking variants
//! live in `resp::blocking`, which pops through `pop`'s `*_for_*` functions.
//!
//! A list is one store item of `ValueKind::List` whose value is `encoding`'s layout. Every
//! change is one `typed::modify` (atomic per key); a list left empty is deleted, as Redis
//! does. Past 8 KiB of encoding a list is kept outside the store (`crate::owned`): pushes,
//! pops, LLEN, LINDEX, LSET, LRANGE and LMOVE then work on it in place ([`with_owned`]), the rest
//! through `typed`, which hands them its encoding. Arguments are checked in Redis 7.0's order (some before the key is looked up,
//! some after), since that order decides which error a client sees.

use std::collections::VecDeque;

use proto_resp::{args::parse_i64, error};
use store::ValueKind;

use crate::owned;

use super::{
    keyevents::class,
    typed::{self, Edit, Failure, Sized},
    Ctx,
};

pub(super) use values::list as encoding;
mod pop;
mod search;
#[cfg(test)]
mod tests;

pub(super) use encoding::End as ListEnd;
use encoding::{End, List};
pub(super) use pop::{move_for_blmove, parse_blmpop, parse_end, pop_for_blmpop, pop_for_blpop};

/// `ERR index out of range` (LSET).
const INDEX_OUT_OF_RANGE: &str = "ERR index out of range";

/// Runs one command of this family.
pub(super) fn dispatch(ctx: &mut Ctx<'_>, id: proto_resp::commands::ListId) {
    use proto_resp::commands::ListId as L;
    match id {
        L::Lpush => push(ctx, End::Head, Create::Yes),
        L::Rpush => push(ctx, End::Tail, Create::Yes),
        L::Lpushx => push(ctx, End::Head, Create::No),
        L::Rpushx => push(ctx, End::Tail, Create::No),
        L::Llen => llen(ctx),
        L::Lindex => lindex(ctx),
        L::Lset => lset(ctx),
        L::Lrange => lrange(ctx),
        L::Ltrim => ltrim(ctx),
        L::Lpop => pop::pop(ctx, End::Head),
        L::Rpop => pop::pop(ctx, End::Tail),
        L::Lmpop => pop::lmpop(ctx),
        L::Lmove => pop::lmove(ctx),
        L::Rpoplpush => pop::rpoplpush(ctx),
        L::Lpos => search::lpos(ctx),
        L::Lrem => search::lrem(ctx),
        L::Linsert => search::linsert(ctx),
    }
}

/// The stored key of argument `index`, owned so that `typed::modify` can borrow `ctx`.
fn stored_key(ctx: &mut Ctx<'_>, index: usize) -> Vec<u8> {
    ctx.key(index).to_vec()
}

/// Runs `f` on key argument `index`'s list (`None` when absent), or replies WRONGTYPE.
/// Not counted as a hit or miss: those counters are memcached's `get_*` too, and STRLEN
/// and GETRANGE leave them alone as well.
fn read(ctx: &mut Ctx<'_>, index: usize, f: impl FnOnce(&mut Ctx<'_>, Option<List<'_>>)) {
    let shared = ctx.shared;
    let reader = shared.core.store.reader();
    match typed::read(&reader, ctx.key(index), ValueKind::List) {
        Ok(item) => {
            let encoded = item.as_ref().and_then(|item| typed::encoding(shared, item));
            f(ctx, encoded.as_deref().map(List::parse))
        }
        Err(failure) => ctx.failure(failure),
    }
}

/// Runs a change of key argument `index`'s list: `f` sees the list (`None` when absent)
/// and returns the edit and its answer. Replies WRONGTYPE or the store's refusal itself
/// and returns `None` then.
fn modify<R>(
    ctx: &mut Ctx<'_>,
    index: usize,
    mut f: impl FnMut(Option<List<'_>>) -> (Edit, R),
) -> Option<R> {
    let key = stored_key(ctx, index);
    answer(ctx, typed::modify(ctx, &key, ValueKind::List, |value| f(value.map(List::parse))))
}

/// Runs `f` on key argument `index`'s list if it is kept outside the store (`owned.rs`),
/// under its mutex (see `typed::with_owned`); `None` leaves the command to the general
/// path, as for a change that would empty the list, which deletes the key.
fn with_owned<R>(
    ctx: &mut Ctx<'_>,
    index: usize,
    mut f: impl FnMut(&mut VecDeque<Box<[u8]>>, usize) -> Option<(Sized, R)>,
) -> Option<R> {
    typed::with_owned(
        ctx.shared,
        ctx.key(index),
        ValueKind::List,
        |value, room_bytes| match value {
            owned::Value::List(list) => f(list, room_bytes),
            _ => None,
        },
    )
}

/// The charged size of `elements`.
fn charged<'e>(elements: impl IntoIterator<Item = &'e [u8]>) -> usize {
    elements.into_iter().map(|element| owned::element_bytes(element.len())).sum()
}

/// The answer of a change, or its failure replied.
fn answer<R>(ctx: &mut Ctx<'_>, result: Result<R, Failure>) -> Option<R> {
    result.map_err(|failure| ctx.failure(failure)).ok()
}

/// An edit that stores `value`, or deletes the key when the list is now empty.
fn write_or_delete(value: Option<Vec<u8>>) -> Edit {
    value.map_or(Edit::Delete, Edit::Write)
}

/// A list's elements, head first, from its encoding (SORT reads its source this way).
pub(super) fn elements_of(encoded: &[u8]) -> Vec<&[u8]> {
    List::parse(encoded).elements()
}

/// The encoding of a list of `elements`, head first; `None` when there are none.
pub(super) fn encode_elements<'e>(
    elements: impl ExactSizeIterator<Item = &'e [u8]>,
) -> Option<Vec<u8>> {
    encoding::encode(elements)
}

/// Replies with `elements` as an array of bulk strings.
fn reply_elements(ctx: &mut Ctx<'_>, elements: &[&[u8]]) {
    let mut reply = ctx.reply();
    reply.array(elements.len());
    elements.iter().for_each(|element| reply.bulk(element));
}

/// Whether LPUSH/RPUSH may create the list (the X forms may not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Create {
    Yes,
    No,
}

/// LPUSH RPUSH LPUSHX RPUSHX key element [element ...]: the new length, or 0 when an X
/// form finds no list.
fn push(ctx: &mut Ctx<'_>, end: End, create: Create) {
    let elements: Vec<&[u8]> = (2..ctx.argc()).map(|i| ctx.arg(i)).collect();
    let pushed = with_owned(ctx, 1, |list, room_bytes| {
        let added_bytes = charged(elements.iter().copied());
        if added_bytes > room_bytes {
            return Some((Sized::Unchanged, None));
        }
        for element in &elements {
            match end {
                End::Head => list.push_front(Box::from(*element)),
                End::Tail => list.push_back(Box::from(*element)),
            }
        }
        Some((Sized::Changed { added_bytes, removed_bytes: 0 }, Some(list.len())))
    });
    match pushed {
        Some(Some(len)) => return pushed_done(ctx, end, len),
        Some(None) => return ctx.refused(crate::core::Refusal::TooLarge),
        None => {}
    }
    let len = modify(ctx, 1, |list| match list {
        None if create == Create::No => (Edit::Keep, 0),
        list => {
            let len = list.map_or(0, |list| list.len()) + elements.len();
            (Edit::Write(encoding::push(list, end, &elements)), len)
        }
    });
    if let Some(len) = len {
        pushed_done(ctx, end, len);
    }
}

/// A push's reply, the new length; its event unless an X form found no list (0).
fn pushed_done(ctx: &mut Ctx<'_>, end: End, len: usize) {
    if len > 0 {
        ctx.wrote(class::LIST, push_event(end), 1);
    }
    ctx.reply().integer(len as i64);
}

/// The event of a push at `end`.
pub(super) fn push_event(end: End) -> &'static str {
    match end {
        End::Head => "lpush",
        End::Tail => "rpush",
    }
}

/// The event of a pop off `end`.
pub(super) fn pop_event(end: End) -> &'static str {
    match end {
        End::Head => "lpop",
        End::Tail => "rpop",
    }
}

fn llen(ctx: &mut Ctx<'_>) {
    if let Some(len) = with_owned(ctx, 1, |list, _| Some((Sized::Unchanged, list.len()))) {
        return ctx.reply().integer(len as i64);
    }
    read(ctx, 1, |ctx, list| ctx.reply().integer(list.map_or(0, |list| list.len()) as i64));
}

/// The position of Redis index `index` (negative counts from the tail) in a list of `len`.
fn position(index: i64, len: usize) -> Option<usize> {
    let index = if index < 0 { index.checked_add(len as i64)? } else { index };
    usize::try_from(index).ok().filter(|&i| i < len)
}

/// The inclusive range `start..=end` (Redis indexes, clamped) of a list of `len`; `None`
/// when it is empty. Shared by LRANGE and LTRIM.
fn clamp_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 { (start + len).max(0) } else { start };
    let end = if end < 0 { end + len } else { end };
    if start > end || start >= len {
        return None;
    }
    Some((start as usize, end.min(len - 1) as usize))
}

/// LINDEX key index: the key is looked up before the index is parsed, so a missing key
/// answers null whatever the index.
fn lindex(ctx: &mut Ctx<'_>) {
    let index = parse_i64(ctx.arg(2));
    if let Ok(at) = index {
        let element = with_owned(ctx, 1, |list, _| {
            Some((Sized::Unchanged, position(at, list.len()).map(|i| list[i].to_vec())))
        });
        if let Some(element) = element {
            return ctx.bulk_or_null(element.as_deref());
        }
    }
    read(ctx, 1, |ctx, list| {
        let Some(list) = list else { return ctx.reply().null() };
        let Ok(index) = index else { return ctx.error(error::NOT_INTEGER) };
        let element = position(index, list.len()).and_then(|i| list.iter().nth(i));
        ctx.bulk_or_null(element);
    });
}

/// LSET key index element: `ERR no such key` before the index is parsed, as Redis does.
fn lset(ctx: &mut Ctx<'_>) {
    let (index, element) = (parse_i64(ctx.arg(2)), ctx.arg(3));
    if let Ok(at) = index {
        let set = with_owned(ctx, 1, |list, room_bytes| {
            if charged([element]) > room_bytes {
                return None; // the general path refuses it
            }
            let Some(i) = position(at, list.len()) else { return Some((Sized::Unchanged, false)) };
            let old = std::mem::replace(&mut list[i], Box::from(element));
            let (added_bytes, removed_bytes) = (charged([element]), charged([&old[..]]));
            Some((Sized::Changed { added_bytes, removed_bytes }, true))
        });
        match set {
            Some(true) => {
                ctx.wrote(class::LIST, "lset", 1);
                return ctx.reply().ok();
            }
            Some(false) => return ctx.error(INDEX_OUT_OF_RANGE),
            None => {}
        }
    }
    let outcome = modify(ctx, 1, |list| {
        let Some(list) = list else { return (Edit::Keep, Err(error::NO_SUCH_KEY)) };
        let Ok(index) = index else { return (Edit::Keep, Err(error::NOT_INTEGER)) };
        let Some(at) = position(index, list.len()) else {
            return (Edit::Keep, Err(INDEX_OUT_OF_RANGE));
        };
        let mut elements = list.elements();
        elements[at] = element;
        (write_or_delete(encoding::encode(elements.into_iter())), Ok(()))
    });
    match outcome {
        None => {}
        Some(Ok(())) => {
            ctx.wrote(class::LIST, "lset", 1);
            ctx.reply().ok();
        }
        Some(Err(message)) => ctx.error(message),
    }
}

/// Parses LRANGE's and LTRIM's start and stop, before the key is looked up.
fn parse_range(ctx: &mut Ctx<'_>) -> Option<(i64, i64)> {
    match (parse_i64(ctx.arg(2)), parse_i64(ctx.arg(3))) {
        (Ok(start), Ok(end)) => Some((start, end)),
        _ => {
            ctx.error(error::NOT_INTEGER);
            None
        }
    }
}

fn lrange(ctx: &mut Ctx<'_>) {
    let Some((start, end)) = parse_range(ctx) else { return };
    let range = with_owned(ctx, 1, |list, _| {
        let Some((from, to)) = clamp_range(start, end, list.len()) else {
            return Some((Sized::Unchanged, Vec::new()));
        };
        Some((Sized::Unchanged, list.range(from..=to).map(|element| element.to_vec()).collect()))
    });
    if let Some(elements) = range {
        let elements: Vec<&[u8]> = elements.iter().map(Vec::as_slice).collect();
        return reply_elements(ctx, &elements);
    }
    read(ctx, 1, |ctx, list| {
        let range = list.and_then(|list| Some((list, clamp_range(start, end, list.len())?)));
        let Some((list, (from, to))) = range else { return ctx.reply().array(0) };
        let elements: Vec<&[u8]> = list.iter().skip(from).take(to - from + 1).collect();
        reply_elements(ctx, &elements);
    });
}

fn ltrim(ctx: &mut Ctx<'_>) {
    let Some((start, end)) = parse_range(ctx) else { return };
    let found = modify(ctx, 1, |list| {
        let Some(list) = list else { return (Edit::Keep, false) };
        let edit = match clamp_range(start, end, list.len()) {
            None => Edit::Delete,
            Some((0, to)) if to + 1 == list.len() => Edit::Keep,
            Some((from, to)) => {
                let kept = list.iter().skip(from).take(to - from + 1);
                let kept: Vec<&[u8]> = kept.collect();
                write_or_delete(encoding::encode(kept.into_iter()))
            }
        };
        (edit, true)
    });
    if let Some(found) = found {
        if found {
            ctx.removed(class::LIST, "ltrim", 1);
        }
        ctx.reply().ok();
    }
}
