//! The sorted-set changes' own paths on a set kept outside the store (`owned::ZSetValue`):
//! edited in place under its mutex, O(log n) per member named or taken instead of
//! O(size). Each returns `None` to leave the command to the general path: the key is
//! absent, in the store, of another type, or the change would empty it (which deletes the
//! key).

use store::ValueKind;

use super::super::typed::{self, Sized};
use super::view::Sorted;
use super::write::{decide, Decision, End, Flags, Outcome};
use super::zrange::{select, Request};
use super::{encoding::Entry, Ctx};
use crate::owned::{self, zset_member_bytes, ZSetValue};

/// A change that would take the set past its size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TooLarge;

/// Runs `f` on key argument `index`'s sorted set if it is kept outside the store.
fn with_zset<R>(
    ctx: &mut Ctx<'_>,
    index: usize,
    mut f: impl FnMut(&mut ZSetValue, usize) -> Option<(Sized, R)>,
) -> Option<R> {
    typed::with_owned(ctx.shared, ctx.key(index), ValueKind::ZSet, |value, room| match value {
        owned::Value::ZSet(set) => f(set, room),
        _ => None,
    })
}

/// What removing members of these lengths did to the set's charged size.
fn shrunk(lens: impl Iterator<Item = usize>) -> Sized {
    match lens.map(zset_member_bytes).sum() {
        0 => Sized::Unchanged,
        removed_bytes => Sized::Changed { added_bytes: 0, removed_bytes },
    }
}

/// ZADD and ZINCRBY: `zsetAdd` for each pair, in order.
pub(super) fn add(
    ctx: &mut Ctx<'_>,
    flags: Flags,
    pairs: &[Entry<'_>],
) -> Option<Result<Outcome, TooLarge>> {
    with_zset(ctx, 1, |set, room_bytes| {
        let new = pairs.iter().filter(|pair| set.score(pair.member).is_none());
        if new.map(|pair| zset_member_bytes(pair.member.len())).sum::<usize>() > room_bytes {
            return Some((Sized::Unchanged, Err(TooLarge)));
        }
        let mut out = Outcome::default();
        let (mut added, mut wrote) = (Vec::new(), false);
        for pair in pairs {
            match decide(set.score(pair.member), pair, flags, &mut out) {
                Decision::Skip => {}
                // Only INCR can make NaN, and it takes one pair: nothing was changed.
                Decision::Nan => return Some((Sized::Unchanged, Ok(out.nan()))),
                Decision::Write(score) => {
                    wrote = true;
                    if set.insert(pair.member, score).is_none() {
                        added.push(pair.member.len());
                    }
                }
            }
        }
        let added_bytes = added.into_iter().map(zset_member_bytes).sum();
        // A new score changes the set even when its size stays (WATCH must see it).
        let sized = match wrote {
            true => Sized::Changed { added_bytes, removed_bytes: 0 },
            false => Sized::Unchanged,
        };
        Some((sized, Ok(out)))
    })
}

/// ZREM: how many of `members` were removed (`None` when it would remove them all).
pub(super) fn remove(ctx: &mut Ctx<'_>, members: &[&[u8]]) -> Option<usize> {
    with_zset(ctx, 1, |set, _| {
        let mut present: Vec<&[u8]> =
            members.iter().copied().filter(|member| set.score(member).is_some()).collect();
        present.sort_unstable();
        present.dedup();
        if present.len() >= set.len() {
            return None;
        }
        present.iter().for_each(|member| {
            set.remove(member);
        });
        let lens = present.iter().map(|member| member.len());
        Some((shrunk(lens), present.len()))
    })
}

/// ZREMRANGEBYRANK, ZREMRANGEBYSCORE, ZREMRANGEBYLEX: how many were removed.
pub(super) fn remove_range(ctx: &mut Ctx<'_>, request: Request<'_>) -> Option<usize> {
    with_zset(ctx, 1, |set, _| {
        let span = select(&Sorted::Owned(set), request, false);
        if span.len() >= set.len() {
            return None;
        }
        let removed = set.remove_ranks(span);
        let lens = removed.iter().map(|(_, member)| member.len());
        Some((shrunk(lens), removed.len()))
    })
}

/// ZPOPMIN, ZPOPMAX, ZMPOP: up to `count` members from `end` of key argument `index`, the
/// innermost last (`None` when the pop would empty the set).
pub(super) fn pop(
    ctx: &mut Ctx<'_>,
    index: usize,
    end: End,
    count: usize,
) -> Option<Vec<(Vec<u8>, f64)>> {
    with_zset(ctx, index, |set, _| {
        let len = set.len();
        if count >= len {
            return None;
        }
        let mut taken = match end {
            End::Min => set.remove_ranks(0..count),
            End::Max => set.remove_ranks(len - count..len),
        };
        if end == End::Max {
            taken.reverse();
        }
        let lens = taken.iter().map(|(_, member)| member.len());
        let sized = shrunk(lens);
        Some((sized, taken.into_iter().map(|(score, member)| (member.into_vec(), score)).collect()))
    })
}
