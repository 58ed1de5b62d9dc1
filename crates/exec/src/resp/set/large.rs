//! The set commands' own paths on a set kept outside the store (`owned.rs`): a member
//! table edited in place under its mutex, O(members named, or picked) instead of
//! O(size). Each returns `None` to leave the command to the general path: the key is
//! absent, in the store, of another type, or the change would empty it (which deletes the
//! key).

use store::ValueKind;

use super::super::{
    count_read, scan,
    typed::{self, Sized},
};
use super::Ctx;
use crate::owned::{self, set_member_bytes, SetValue};
use crate::resp::pick::{distinct, random_below};

/// A change that would take the set past its size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TooLarge;

/// Runs `f` on key argument 1's set if it is kept outside the store.
fn with_set<R>(
    ctx: &mut Ctx<'_>,
    mut f: impl FnMut(&mut SetValue, usize) -> Option<(Sized, R)>,
) -> Option<R> {
    typed::with_owned(ctx.shared, ctx.key(1), ValueKind::Set, |value, room| match value {
        owned::Value::Set(set) => f(set, room),
        _ => None,
    })
}

/// Runs a read of the members; it counts as a hit.
fn read<R>(ctx: &mut Ctx<'_>, f: impl Fn(&SetValue) -> R) -> Option<R> {
    let out = with_set(ctx, |set, _| Some((Sized::Unchanged, f(set))))?;
    count_read(ctx.counters, true);
    Some(out)
}

/// SADD: how many members were new.
pub(super) fn add(ctx: &mut Ctx<'_>, members: &[&[u8]]) -> Option<Result<i64, TooLarge>> {
    with_set(ctx, |set, room_bytes| {
        let charged = |member: &&[u8]| set_member_bytes(member.len());
        if members.iter().map(charged).sum::<usize>() > room_bytes {
            return Some((Sized::Unchanged, Err(TooLarge)));
        }
        let added: Vec<&[u8]> = members.iter().copied().filter(|m| set.insert(m)).collect();
        let added_bytes: usize = added.iter().map(charged).sum();
        let sized = match added_bytes {
            0 => Sized::Unchanged,
            _ => Sized::Changed { added_bytes, removed_bytes: 0 },
        };
        Some((sized, Ok(added.len() as i64)))
    })
}

/// SREM: how many members were removed (`None` when it would remove them all).
pub(super) fn remove(ctx: &mut Ctx<'_>, members: &[&[u8]]) -> Option<i64> {
    with_set(ctx, |set, _| {
        let mut present: Vec<&[u8]> =
            members.iter().copied().filter(|member| set.contains(member)).collect();
        present.sort_unstable();
        present.dedup();
        if present.len() >= set.len() {
            return None;
        }
        present.iter().for_each(|member| {
            set.remove(member);
        });
        let removed_bytes: usize = present.iter().map(|m| set_member_bytes(m.len())).sum();
        let sized = match removed_bytes {
            0 => Sized::Unchanged,
            _ => Sized::Changed { added_bytes: 0, removed_bytes },
        };
        Some((sized, present.len() as i64))
    })
}

/// SISMEMBER, SMISMEMBER: whether each of `members` is in the set.
pub(super) fn contains(ctx: &mut Ctx<'_>, members: &[&[u8]]) -> Option<Vec<bool>> {
    read(ctx, |set| members.iter().map(|member| set.contains(member)).collect())
}

/// SCARD.
pub(super) fn len(ctx: &mut Ctx<'_>) -> Option<usize> {
    read(ctx, SetValue::len)
}

/// SPOP without a count (`count` None) or with one: the members taken, at random (`None`
/// when the pop would empty the set).
pub(super) fn pop(ctx: &mut Ctx<'_>, count: Option<usize>) -> Option<Vec<Vec<u8>>> {
    with_set(ctx, |set, _| {
        let wanted = count.unwrap_or(1);
        if wanted >= set.len() {
            return None;
        }
        let taken: Vec<Vec<u8>> =
            picks(set.len(), wanted).into_iter().map(|at| set.nth(at).to_vec()).collect();
        taken.iter().for_each(|member| {
            set.remove(member);
        });
        let removed_bytes: usize = taken.iter().map(|m| set_member_bytes(m.len())).sum();
        let sized = match removed_bytes {
            0 => Sized::Unchanged,
            _ => Sized::Changed { added_bytes: 0, removed_bytes },
        };
        Some((sized, taken))
    })
}

/// SRANDMEMBER without a count, or with a positive one below the set's size: distinct
/// members at random.
pub(super) fn random_members(ctx: &mut Ctx<'_>, count: usize) -> Option<Vec<Vec<u8>>> {
    let out = with_set(ctx, |set, _| {
        if count >= set.len() {
            return None;
        }
        let members = picks(set.len(), count).into_iter().map(|at| set.nth(at).to_vec());
        Some((Sized::Unchanged, members.collect()))
    })?;
    count_read(ctx.counters, true);
    Some(out)
}

/// SSCAN: the page at `cursor` (see `scan::page`) and the cursor after it.
pub(super) fn scan(ctx: &mut Ctx<'_>, cursor: u64, count: usize) -> Option<(u64, Vec<Vec<u8>>)> {
    read(ctx, |set| {
        let rest: Vec<(u64, usize)> = (0..set.len())
            .map(|at| (scan::member_hash(set.nth(at)), at))
            .filter(|(hash, _)| *hash >= cursor)
            .collect();
        let (next, page) = scan::page(rest, count, set.len());
        (next, page.into_iter().map(|at| set.nth(at).to_vec()).collect())
    })
}

/// SRANDMEMBER with a negative count: `wanted` independent draws, or `Err` when their
/// bytes would pass `bytes_max` (each member counted with `overhead_bytes` more).
pub(super) fn random_repeats(
    ctx: &mut Ctx<'_>,
    wanted: usize,
    overhead_bytes: usize,
    bytes_max: usize,
) -> Option<Result<Vec<Vec<u8>>, TooLarge>> {
    let out = with_set(ctx, |set, _| {
        let mut bytes = 0usize;
        let mut picked = Vec::with_capacity(wanted.min(bytes_max / overhead_bytes.max(1)));
        for _ in 0..wanted {
            let member = set.nth(random_below(set.len()));
            bytes += member.len() + overhead_bytes;
            if bytes > bytes_max {
                return Some((Sized::Unchanged, Err(TooLarge)));
            }
            picked.push(member.to_vec());
        }
        Some((Sized::Unchanged, Ok(picked)))
    })?;
    count_read(ctx.counters, true);
    Some(out)
}

/// `count` distinct positions below `len` (`count < len`).
fn picks(len: usize, count: usize) -> Vec<usize> {
    match count {
        0 => Vec::new(),
        1 => vec![random_below(len)],
        _ => distinct(len, count),
    }
}
