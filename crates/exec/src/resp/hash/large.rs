//! The hash commands' own paths on a hash kept outside the store (`owned/`): a field map
//! edited in place under its mutex, O(fields named) instead of O(size). Fields with an
//! expiry are read here (an expired one is absent), but a change that names one, or that
//! would leave only fields with an expiry (the key then takes its expiry from them), goes
//! to the general path, which applies the encoding's rules for them. Each returns `None`
//! to leave the command to the general path (`change`, `read`): the key is absent, in the
//! store, of another type, takes its expiry from its fields, or the change would empty
//! it (which deletes the key) or touch an expiring field.

use proto_resp::{
    args::{parse_f64, parse_i64},
    error,
};
use store::ValueKind;

use super::super::{
    count_read,
    incr::format_human,
    pick::{distinct, random_below},
    scan, ttl,
    typed::{self, Sized},
};
use super::Ctx;
use crate::owned::{self, hash_field_bytes, HashValue};

/// A change that would take the hash past its size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct TooLarge;

/// Runs `f` on key argument 1's hash if it is kept outside the store and some field has
/// no expiry (else the key's own expiry follows its fields': see `typed::with_owned`).
fn with_large<R>(
    ctx: &mut Ctx<'_>,
    mut f: impl FnMut(&mut HashValue, u64, usize) -> Option<(Sized, R)>,
) -> Option<R> {
    let now_ms = ttl::now_ms(ctx.shared);
    typed::with_owned(ctx.shared, ctx.key(1), ValueKind::Hash, |value, room| match value {
        owned::Value::Hash(hash) if hash.key_expiry.is_none() => f(hash, now_ms, room),
        _ => None,
    })
}

/// [`with_large`] for a change of fields that have no expiry: `None` (the general path)
/// when one of `names` has one.
fn with_plain_fields<R>(
    ctx: &mut Ctx<'_>,
    names: &[&[u8]],
    mut f: impl FnMut(&mut HashValue, usize) -> Option<(Sized, R)>,
) -> Option<R> {
    with_large(ctx, |map, _, room| {
        if names.iter().any(|name| map.expires(name)) {
            return None;
        }
        f(map, room)
    })
}

/// Runs a read of the fields at the current time; it counts as a hit.
fn read<R>(ctx: &mut Ctx<'_>, f: impl Fn(&HashValue, u64) -> R) -> Option<R> {
    let out = with_large(ctx, |map, now_ms, _| Some((Sized::Unchanged, f(map, now_ms))))?;
    count_read(ctx.counters, true);
    Some(out)
}

/// HSET, HMSET (`only_new`: false) and HSETNX (true): how many fields were created.
pub(super) fn set(
    ctx: &mut Ctx<'_>,
    pairs: &[(&[u8], &[u8])],
    only_new: bool,
) -> Option<Result<i64, TooLarge>> {
    let names: Vec<&[u8]> = pairs.iter().map(|(name, _)| *name).collect();
    let thresholds = &ctx.shared.redis.encoding_thresholds;
    let lengths_past =
        pairs.iter().any(|(name, value)| thresholds.hash_past(None, [name.len(), value.len()]));
    with_plain_fields(ctx, &names, |map, room_bytes| {
        // The growth is bounded by what the new values add (a replaced value's bytes come
        // back), so the check needs no undo.
        let adds = |(name, value): &(&[u8], &[u8])| hash_field_bytes(name.len(), value.len());
        let added_bytes: usize = pairs.iter().map(adds).sum();
        if added_bytes > room_bytes {
            return Some((Sized::Unchanged, Err(TooLarge)));
        }
        let (mut created, mut removed_bytes, mut kept_bytes) = (0, 0, 0);
        for &(name, value) in pairs {
            if only_new && map.get(name).is_some() {
                kept_bytes += hash_field_bytes(name.len(), value.len());
                continue;
            }
            match map.insert(name, value) {
                Some(old_len) => removed_bytes += hash_field_bytes(name.len(), old_len),
                None => created += 1,
            }
        }
        let added_bytes = added_bytes - kept_bytes;
        map.listpack &= !(lengths_past || thresholds.hash_past(Some(map.len()), [0, 0]));
        let sized = if added_bytes == 0 {
            Sized::Unchanged
        } else {
            Sized::Changed { added_bytes, removed_bytes }
        };
        Some((sized, Ok(created)))
    })
}

/// HGET, HSTRLEN, HEXISTS: `f` of the field's value, if there is one.
pub(super) fn field<R>(
    ctx: &mut Ctx<'_>,
    name: &[u8],
    f: impl Fn(Option<&[u8]>) -> R,
) -> Option<R> {
    read(ctx, |map, now_ms| f(map.get_live(name, now_ms)))
}

/// HMGET: the values of `names`, in order.
pub(super) fn fields(ctx: &mut Ctx<'_>, names: &[&[u8]]) -> Option<Vec<Option<Vec<u8>>>> {
    read(ctx, |map, now_ms| {
        names.iter().map(|name| map.get_live(name, now_ms).map(<[u8]>::to_vec)).collect()
    })
}

/// A field, copied out of the hash.
pub(super) type FieldCopy = (Vec<u8>, Vec<u8>);

fn copy((name, value): (&[u8], &[u8])) -> FieldCopy {
    (name.to_vec(), value.to_vec())
}

/// HRANDFIELD: one field at random (`count` None), `count` distinct ones (positive, below
/// the hash's size) or `-count` independent draws. `None` (the general path) when the
/// count covers the hash (it is all copied anyway) or some field has expired (the picks
/// would have to skip it).
pub(super) fn random_fields(ctx: &mut Ctx<'_>, count: Option<i64>) -> Option<Vec<FieldCopy>> {
    let picked = with_large(ctx, |map, now_ms, _| {
        let len = map.len();
        if len == 0 || map.live_len(now_ms) != len {
            return None;
        }
        let picked: Vec<FieldCopy> = match count {
            None => vec![copy(map.nth(random_below(len)))],
            Some(count) if count < 0 => {
                (0..count.unsigned_abs()).map(|_| copy(map.nth(random_below(len)))).collect()
            }
            Some(count) if (count as u64) < len as u64 => {
                distinct(len, count as usize).into_iter().map(|at| copy(map.nth(at))).collect()
            }
            Some(_) => return None,
        };
        Some((Sized::Unchanged, picked))
    })?;
    count_read(ctx.counters, true);
    Some(picked)
}

/// HSCAN: the page at `cursor` (see `scan::page`) and the cursor after it, without the
/// fields that have expired.
pub(super) fn scan(ctx: &mut Ctx<'_>, cursor: u64, count: usize) -> Option<(u64, Vec<FieldCopy>)> {
    read(ctx, |map, now_ms| {
        let live = |&(name, _): &(&[u8], &[u8])| map.get_live(name, now_ms).is_some();
        if map.listpack && super::random::one_page(map.len(), map.iter()) {
            return (0, map.iter().filter(live).map(copy).collect());
        }
        let rest: Vec<(u64, usize)> = (0..map.len())
            .map(|at| (scan::member_hash(map.nth(at).0), at))
            .filter(|(hash, _)| *hash >= cursor)
            .collect();
        let (next, page) = scan::page(rest, count, map.len());
        (next, page.into_iter().map(|at| map.nth(at)).filter(live).map(copy).collect())
    })
}

/// HLEN.
pub(super) fn len(ctx: &mut Ctx<'_>) -> Option<usize> {
    read(ctx, HashValue::live_len)
}

/// HDEL: how many of `names` were removed (`None` when it would remove them all, or leave
/// only fields with an expiry).
pub(super) fn delete(ctx: &mut Ctx<'_>, names: &[&[u8]]) -> Option<i64> {
    with_plain_fields(ctx, names, |map, _| {
        let mut present: Vec<&[u8]> =
            names.iter().copied().filter(|name| map.get(name).is_some()).collect();
        present.sort_unstable();
        present.dedup();
        if present.len() + map.expire_at_ms.len() >= map.len() {
            return None;
        }
        // Each removal that keeps the order is O(fields): many of them go to the general
        // path, one rewrite of the whole hash (O(fields + names)).
        if map.listpack && present.len() > 1 {
            return None;
        }
        let mut removed_bytes = 0;
        for name in &present {
            if let Some(value_len) = map.remove(name, map.listpack) {
                removed_bytes += hash_field_bytes(name.len(), value_len);
            }
        }
        let sized = if present.is_empty() {
            Sized::Unchanged
        } else {
            Sized::Changed { added_bytes: 0, removed_bytes }
        };
        Some((sized, present.len() as i64))
    })
}

/// HINCRBY: the new value, or Redis's error.
pub(super) fn incr_by(
    ctx: &mut Ctx<'_>,
    name: &[u8],
    by: i64,
) -> Option<Result<i64, &'static str>> {
    update(ctx, name, |old| {
        let old = match old.map(parse_i64) {
            None => 0,
            Some(Ok(n)) => n,
            Some(Err(_)) => return Err(super::basic::HASH_NOT_INTEGER),
        };
        let new = old.checked_add(by).ok_or(error::INCR_OVERFLOW)?;
        Ok((new.to_string().into_bytes(), new))
    })
}

/// HINCRBYFLOAT: the new value's text, or Redis's error.
pub(super) fn incr_by_float(
    ctx: &mut Ctx<'_>,
    name: &[u8],
    by: f64,
) -> Option<Result<Vec<u8>, &'static str>> {
    update(ctx, name, |old| {
        let old = match old.map(parse_f64) {
            None => 0.0,
            Some(Ok(n)) => n,
            Some(Err(_)) => return Err(super::basic::HASH_NOT_FLOAT),
        };
        let sum = old + by;
        if !sum.is_finite() {
            return Err(error::INCR_NAN_OR_INF);
        }
        let text = format_human(sum).into_bytes();
        Ok((text.clone(), text))
    })
}

/// Sets field `name` to what `f` makes of its value (`None` when absent), or replies
/// `f`'s error. A value that would take the hash past its limit is an error too.
fn update<R>(
    ctx: &mut Ctx<'_>,
    name: &[u8],
    f: impl Fn(Option<&[u8]>) -> Result<(Vec<u8>, R), &'static str>,
) -> Option<Result<R, &'static str>> {
    with_plain_fields(ctx, &[name], |map, room_bytes| {
        let (value, out) = match f(map.get(name)) {
            Ok(made) => made,
            Err(message) => return Some((Sized::Unchanged, Err(message))),
        };
        let added_bytes = hash_field_bytes(name.len(), value.len());
        if added_bytes > room_bytes {
            return None; // the general path refuses it with the store's error
        }
        let old_len = map.insert(name, &value);
        let thresholds = &ctx.shared.redis.encoding_thresholds;
        map.listpack &= !thresholds.hash_past(Some(map.len()), [name.len(), value.len()]);
        let removed_bytes = old_len.map_or(0, |len| hash_field_bytes(name.len(), len));
        Some((Sized::Changed { added_bytes, removed_bytes }, Ok(out)))
    })
}
