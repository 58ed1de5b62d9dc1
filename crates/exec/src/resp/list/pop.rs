//! LPOP RPOP LMPOP LMOVE RPOPLPUSH: the commands that take elements off an end.
//!
//! LMOVE and RPOPLPUSH touch two keys with one change each. They name two keys, so they
//! run under `crate::gate` with no other command in between: the destination is pushed
//! first and the source popped after, so a push refused for its size changes nothing.

use proto_resp::{
    args::{is_option, match_option, parse_i64},
    error,
};
use std::collections::VecDeque;

use store::ValueKind;

use super::{
    super::{blocking::Popped, keyevents::class},
    charged,
    encoding::{self, End, List},
    modify, reply_elements, stored_key,
    typed::{self, Edit, Failure},
    with_owned, write_or_delete, Ctx, Sized,
};

/// LPOP/RPOP's count when it is negative or not a number (`getPositiveLongFromObject`).
const NOT_POSITIVE: &str = "ERR value is out of range, must be positive";
/// LMPOP's numkeys when it is below 1 or not a number.
const NUMKEYS_NOT_POSITIVE: &str = "ERR numkeys should be greater than 0";
/// LMPOP's COUNT when it is below 1 or not a number.
const COUNT_NOT_POSITIVE: &str = "ERR count should be greater than 0";

/// Pops up to `count` elements off `end`, owned (the value they borrow from goes away).
fn take(list: List<'_>, end: End, count: usize) -> (Edit, Vec<Vec<u8>>) {
    let (taken, rest) = encoding::pop(list, end, count);
    (write_or_delete(rest), taken.into_iter().map(<[u8]>::to_vec).collect())
}

fn owned_refs(elements: &[Vec<u8>]) -> Vec<&[u8]> {
    elements.iter().map(Vec::as_slice).collect()
}

/// LPOP/RPOP key [count]. Without a count: one element, or null. With one: an array (empty
/// for count 0 when the list exists), or a null array when the key is absent.
pub(super) fn pop(ctx: &mut Ctx<'_>, end: End) {
    let count = match ctx.argc() {
        3 => match parse_i64(ctx.arg(2)) {
            Ok(n) if n >= 0 => Some(n as usize),
            _ => return ctx.error(NOT_POSITIVE),
        },
        _ => None,
    };
    let fast = with_owned(ctx, 1, |list, _| {
        let n = count.unwrap_or(1);
        if n >= list.len() {
            return None; // empties it: the general path deletes the key
        }
        let popped: Vec<Vec<u8>> = (0..n)
            .filter_map(|_| match end {
                End::Head => list.pop_front(),
                End::Tail => list.pop_back(),
            })
            .map(Vec::from)
            .collect();
        let removed_bytes = charged(popped.iter().map(Vec::as_slice));
        let sized =
            if n > 0 { Sized::Changed { added_bytes: 0, removed_bytes } } else { Sized::Unchanged };
        Some((sized, popped))
    });
    if let Some(elements) = fast {
        if !elements.is_empty() {
            ctx.wrote(class::LIST, super::pop_event(end), 1);
        }
        return match count {
            None => ctx.reply().bulk(&elements[0]),
            Some(_) => reply_elements(ctx, &owned_refs(&elements)),
        };
    }
    let popped = modify(ctx, 1, |list| match (list, count) {
        (None, _) => (Edit::Keep, None),
        (Some(_), Some(0)) => (Edit::Keep, Some(Vec::new())),
        (Some(list), count) => {
            let (edit, taken) = take(list, end, count.unwrap_or(1));
            (edit, Some(taken))
        }
    });
    let Some(popped) = popped else { return };
    if popped.as_ref().is_some_and(|elements| !elements.is_empty()) {
        ctx.removed(class::LIST, super::pop_event(end), 1);
    }
    match (popped, count) {
        (None, None) => ctx.reply().null(),
        (None, Some(_)) => ctx.reply().null_array(),
        (Some(elements), None) => ctx.reply().bulk(&elements[0]),
        (Some(elements), Some(_)) => reply_elements(ctx, &owned_refs(&elements)),
    }
}

/// LEFT or RIGHT, in any case.
pub(in crate::resp) fn parse_end(arg: &[u8]) -> Option<End> {
    match match_option(arg, &["LEFT", "RIGHT"])? {
        0 => Some(End::Head),
        _ => Some(End::Tail),
    }
}

/// LMPOP's arguments after the keys.
struct Mpop {
    /// Index of the LEFT|RIGHT argument (the keys are `2..where_index`).
    where_index: usize,
    end: End,
    count: usize,
}

/// Parses `LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]` in Redis's order; `Err`
/// is the error to reply.
fn parse_mpop(ctx: &Ctx<'_>) -> Result<Mpop, &'static str> {
    parse_mpop_from(ctx, 1)
}

/// [`parse_mpop`] with `numkeys` at argument `first` (2 for BLMPOP, after its timeout).
fn parse_mpop_from(ctx: &Ctx<'_>, first: usize) -> Result<Mpop, &'static str> {
    let argc = ctx.argc();
    let numkeys = match parse_i64(ctx.arg(first)) {
        Ok(n) if n >= 1 => n as u64,
        _ => return Err(NUMKEYS_NOT_POSITIVE),
    };
    let where_index = match numkeys.checked_add(first as u64 + 1) {
        Some(i) if i < argc as u64 => i as usize,
        _ => return Err(error::SYNTAX),
    };
    let end = parse_end(ctx.arg(where_index)).ok_or(error::SYNTAX)?;
    let mut count = None;
    let mut j = where_index + 1;
    while j < argc {
        if count.is_some() || !is_option(ctx.arg(j), "COUNT") || j + 1 >= argc {
            return Err(error::SYNTAX);
        }
        j += 1;
        match parse_i64(ctx.arg(j)) {
            Ok(n) if n >= 1 => count = Some(n as usize),
            _ => return Err(COUNT_NOT_POSITIVE),
        }
        j += 1;
    }
    Ok(Mpop { where_index, end, count: count.unwrap_or(1) })
}

/// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]: pops from the first key that holds
/// a list; `[key, [elements]]`, or a null array when none does. A key of another type
/// stops the search with WRONGTYPE, even after absent keys.
pub(super) fn lmpop(ctx: &mut Ctx<'_>) {
    let mpop = match parse_mpop(ctx) {
        Ok(mpop) => mpop,
        Err(message) => return ctx.error(message),
    };
    for index in 2..mpop.where_index {
        let popped = modify(ctx, index, |list| match list {
            None => (Edit::Keep, None),
            Some(list) => {
                let (edit, taken) = take(list, mpop.end, mpop.count);
                (edit, Some(taken))
            }
        });
        match popped {
            None => return,
            Some(None) => continue,
            Some(Some(elements)) => {
                ctx.removed(class::LIST, super::pop_event(mpop.end), index);
                let key = ctx.arg(index);
                ctx.reply().array(2);
                ctx.reply().bulk(key);
                return reply_elements(ctx, &owned_refs(&elements));
            }
        }
    }
    ctx.reply().null_array();
}

/// LMOVE source destination LEFT|RIGHT LEFT|RIGHT.
pub(super) fn lmove(ctx: &mut Ctx<'_>) {
    let Some(from) = parse_end(ctx.arg(3)) else { return ctx.error(error::SYNTAX) };
    let Some(to) = parse_end(ctx.arg(4)) else { return ctx.error(error::SYNTAX) };
    moved_done(ctx, from, to);
}

/// RPOPLPUSH source destination: LMOVE source destination RIGHT LEFT.
pub(super) fn rpoplpush(ctx: &mut Ctx<'_>) {
    moved_done(ctx, End::Tail, End::Head);
}

/// LMOVE's and RPOPLPUSH's move and, when an element moved, their events: the push on the
/// destination, then the pop off the source (`del` if that emptied it).
fn moved_done(ctx: &mut Ctx<'_>, from: End, to: End) {
    if move_element(ctx, from, to) == Popped::Served {
        ctx.wrote(class::LIST, super::push_event(to), 2);
        ctx.removed(class::LIST, super::pop_event(from), 1);
    }
}

/// Pops an element off `from` of the source and pushes it at `to` of the destination;
/// replies with it (`Served`), or null when the source is absent (`Empty`), or the error
/// (`Failed`). The same key rotates the list.
fn move_element(ctx: &mut Ctx<'_>, from: End, to: End) -> Popped {
    let (source, target) = (stored_key(ctx, 1), stored_key(ctx, 2));
    if let Some(element) = move_owned(ctx, source == target, from, to) {
        ctx.reply().bulk(&element);
        return Popped::Served;
    }
    if source == target {
        let moved = modify(ctx, 1, |list| {
            let Some(list) = list else { return (Edit::Keep, None) };
            let (taken, rest) = encoding::pop(list, from, 1);
            let value = encoding::push(rest.as_deref().map(List::parse), to, &taken);
            (Edit::Write(value), Some(taken[0].to_vec()))
        });
        return reply_moved(ctx, moved);
    }
    // Redis checks the source (absent: null), then the destination's type, then moves.
    let element = {
        let reader = ctx.shared.core.store.reader();
        let source_list = typed::read(&reader, &source, ValueKind::List);
        match source_list.and_then(|found| {
            let Some(item) = found else { return Ok(None) };
            typed::read(&reader, &target, ValueKind::List)?;
            let encoded = typed::encoding(ctx.shared, &item);
            Ok(encoded.and_then(|value| List::parse(&value).at_end(from).map(<[u8]>::to_vec)))
        }) {
            Ok(Some(element)) => element,
            Ok(None) => {
                ctx.reply().null();
                return Popped::Empty;
            }
            Err(failure) => {
                ctx.failure(failure);
                return Popped::Failed;
            }
        }
    };
    if let Err(failure) = push_one(ctx, &target, to, &element) {
        ctx.failure(failure);
        return Popped::Failed;
    }
    // The gate keeps the source as it was read, so this pops `element`.
    let popped = typed::modify(ctx, &source, ValueKind::List, |list| match list {
        None => (Edit::Keep, ()),
        Some(value) => (take(List::parse(value), from, 1).0, ()),
    });
    match popped {
        Ok(()) => {
            ctx.reply().bulk(&element);
            Popped::Served
        }
        Err(failure) => {
            // A full store refused even the smaller source: take the pushed copy back off
            // the destination (its end still holds it), so the element is not duplicated.
            let _ = typed::modify(ctx, &target, ValueKind::List, |list| match list {
                None => (Edit::Keep, ()),
                Some(value) => (take(List::parse(value), to, 1).0, ()),
            });
            ctx.failure(failure);
            Popped::Failed
        }
    }
}

/// [`move_element`] between lists kept outside the store (or within one), in place: O(1).
/// `None` leaves it to the general path: either list is not kept there, the source would
/// be left empty, or the destination would outgrow its limit. LMOVE runs under the gate,
/// so nothing comes between the steps.
fn move_owned(ctx: &mut Ctx<'_>, same_key: bool, from: End, to: End) -> Option<Vec<u8>> {
    let take = |list: &mut VecDeque<Box<[u8]>>| match from {
        End::Head => list.pop_front(),
        End::Tail => list.pop_back(),
    };
    let put = |list: &mut VecDeque<Box<[u8]>>, element: Box<[u8]>| match to {
        End::Head => list.push_front(element),
        End::Tail => list.push_back(element),
    };
    if same_key {
        return with_owned(ctx, 1, |list, _| {
            let element = take(list)?;
            let copy = element.to_vec();
            put(list, element);
            Some((Sized::Changed { added_bytes: 0, removed_bytes: 0 }, copy))
        });
    }
    with_owned(ctx, 2, |_, _| Some((Sized::Unchanged, ())))?;
    let element = with_owned(ctx, 1, |list, _| {
        let element = if list.len() < 2 { None } else { list.get(end_index(list, from)) };
        element.map(|element| (Sized::Unchanged, element.to_vec()))
    })?;
    let added_bytes = charged([&element[..]]);
    with_owned(ctx, 2, |list, room_bytes| {
        (added_bytes <= room_bytes).then(|| {
            put(list, Box::from(&element[..]));
            (Sized::Changed { added_bytes, removed_bytes: 0 }, ())
        })
    })?;
    with_owned(ctx, 1, |list, _| {
        take(list).map(|_| (Sized::Changed { added_bytes: 0, removed_bytes: added_bytes }, ()))
    });
    Some(element)
}

/// The index of the element at `end` of a non-empty list.
fn end_index(list: &VecDeque<Box<[u8]>>, end: End) -> usize {
    match end {
        End::Head => 0,
        End::Tail => list.len() - 1,
    }
}

fn push_one(ctx: &Ctx<'_>, key: &[u8], end: End, element: &[u8]) -> Result<(), Failure> {
    typed::modify(ctx, key, ValueKind::List, |list| {
        (Edit::Write(encoding::push(list.map(List::parse), end, &[element])), ())
    })
}

/// The same-key move's reply (`None`: its failure was replied).
fn reply_moved(ctx: &mut Ctx<'_>, moved: Option<Option<Vec<u8>>>) -> Popped {
    match moved {
        None => Popped::Failed,
        Some(None) => {
            ctx.reply().null();
            Popped::Empty
        }
        Some(Some(element)) => {
            ctx.reply().bulk(&element);
            Popped::Served
        }
    }
}

/// BLMPOP's options: the key arguments, the end and the count (see [`parse_mpop`]).
pub(in crate::resp) fn parse_blmpop(
    ctx: &Ctx<'_>,
) -> Result<(std::ops::Range<usize>, End, usize), &'static str> {
    let mpop = parse_mpop_from(ctx, 2)?;
    Ok((3..mpop.where_index, mpop.end, mpop.count))
}

/// Up to `count` elements off `end` of key argument `index`: `None` after replying a
/// failure (WRONGTYPE), `Some(None)` when the key is absent. In place for a list kept
/// outside the store unless it would empty it.
fn pop_elements(
    ctx: &mut Ctx<'_>,
    index: usize,
    end: End,
    count: usize,
) -> Option<Option<Vec<Vec<u8>>>> {
    let fast = with_owned(ctx, index, |list, _| {
        if count >= list.len() {
            return None; // empties it: the general path deletes the key
        }
        let popped: Vec<Vec<u8>> = (0..count)
            .filter_map(|_| match end {
                End::Head => list.pop_front(),
                End::Tail => list.pop_back(),
            })
            .map(Vec::from)
            .collect();
        let removed_bytes = charged(popped.iter().map(Vec::as_slice));
        Some((Sized::Changed { added_bytes: 0, removed_bytes }, popped))
    });
    if let Some(elements) = fast {
        return Some(Some(elements));
    }
    modify(ctx, index, |list| match list {
        None => (Edit::Keep, None),
        Some(list) => {
            let (edit, taken) = take(list, end, count);
            (edit, Some(taken))
        }
    })
}

/// BLPOP/BRPOP on key argument `index`: `[key, element]`.
pub(in crate::resp) fn pop_for_blpop(ctx: &mut Ctx<'_>, index: usize, end: End) -> Popped {
    match pop_elements(ctx, index, end, 1) {
        None => Popped::Failed,
        Some(None) => Popped::Empty,
        Some(Some(elements)) => {
            let key = ctx.arg(index);
            let mut reply = ctx.reply();
            reply.array(2);
            reply.bulk(key);
            reply.bulk(&elements[0]);
            Popped::Served
        }
    }
}

/// BLMPOP on key argument `index`: LMPOP's `[key, [elements]]`.
pub(in crate::resp) fn pop_for_blmpop(
    ctx: &mut Ctx<'_>,
    index: usize,
    end: End,
    count: usize,
) -> Popped {
    match pop_elements(ctx, index, end, count) {
        None => Popped::Failed,
        Some(None) => Popped::Empty,
        Some(Some(elements)) => {
            let key = ctx.arg(index);
            ctx.reply().array(2);
            ctx.reply().bulk(key);
            reply_elements(ctx, &owned_refs(&elements));
            Popped::Served
        }
    }
}

/// BLMOVE and BRPOPLPUSH (source and destination are arguments 1 and 2, as in LMOVE):
/// LMOVE's reply, or nothing when the source is absent. Runs under the gate, as LMOVE.
pub(in crate::resp) fn move_for_blmove(ctx: &mut Ctx<'_>, from: End, to: End) -> Popped {
    let start = ctx.out.len();
    let moved = move_element(ctx, from, to);
    if moved == Popped::Empty {
        ctx.out.truncate(start);
    }
    moved
}
