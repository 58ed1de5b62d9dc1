//! Redis hashes: HSET ... HSCAN, and the per-field expiry of Redis 7.4-8 (HEXPIRE ...
//! HPERSIST, HGETDEL, HGETEX, HSETEX).
//!
//! A hash is one store item of [`ValueKind::Hash`] whose value is the encoding of
//! [`encoding`] (fields with an expiry first, by time; the rest in insertion order). A
//! read takes no lock: it decodes the value, or for one field looks it up in place; a
//! change decodes, edits and re-encodes it in one `Store::modify`, under the key's lock
//! ([`change`]; `typed::modify` does the same but cannot set the key's expiry): O(size)
//! per change, the accepted cost of one item per key. A command naming many fields finds
//! them in one pass ([`encoding::Batch`]). Expired fields are left out by every decode, so no command sees them, and the
//! next write drops them. When every field of a hash has an expiry, the key is given the
//! latest one (unless its own TTL comes first), so the store drops the hash when its last
//! field expires and every command (EXISTS, TYPE, SCAN...) sees it gone, as Redis deletes
//! it; the cost is that TTL on such a key reports that time where Redis says -1. The
//! encoding records the expiry it set, so EXPIRE and PERSIST on the key keep meaning what
//! they mean (see [`own_expiry`]).
//!
//! Files: `basic` (HSET ... HINCRBYFLOAT), `random` (HRANDFIELD, HSCAN), `expire`
//! (HEXPIRE ... HPERSIST), `ex` (HGETDEL, HGETEX, HSETEX).

/// Live field `name` of hash `item`, copied out: looked up in place, under its mutex for
/// a hash kept outside the store (SORT's `->field` patterns, one lookup per element).
pub(super) fn field_of(shared: &crate::Shared, item: &Item<'_>, name: &[u8]) -> Option<Vec<u8>> {
    let now_ms = ttl::now_ms(shared);
    if !item.is_owner() {
        return encoding::lookup(item.value(), name, now_ms).map(<[u8]>::to_vec);
    }
    let held = shared.owned.get(item.value())?;
    let state = held.state.lock();
    match &state.value {
        owned::Value::Hash(map) => map.get_live(name, now_ms).map(<[u8]>::to_vec),
        _ => None,
    }
}

mod basic;
mod ex;
mod expire;
mod large;
mod random;

use proto_resp::{args::parse_i64, commands::HashId, error, Reply};
use store::{Change, Expiry, Item, ValueKind};

use crate::owned;

use super::{
    count_read, ttl,
    typed::{self, Failure, Owning},
    Ctx,
};
use encoding::{Fields, KeyExpiry};
use values::hash as encoding;

/// Runs one command of this family.
pub(super) fn dispatch(ctx: &mut Ctx<'_>, id: HashId) {
    use ttl::Base::{Epoch, Now};
    use ttl::Unit::{Milliseconds as Ms, Seconds as S};
    use HashId as H;
    match id {
        H::Hset => basic::hset(ctx, basic::SetReply::Count),
        H::Hmset => basic::hset(ctx, basic::SetReply::Ok),
        H::Hsetnx => basic::hsetnx(ctx),
        H::Hget => basic::hget(ctx),
        H::Hmget => basic::hmget(ctx),
        H::Hgetall => basic::hgetall(ctx, basic::Part::Both),
        H::Hkeys => basic::hgetall(ctx, basic::Part::Fields),
        H::Hvals => basic::hgetall(ctx, basic::Part::Values),
        H::Hdel => basic::hdel(ctx),
        H::Hexists => basic::hexists(ctx),
        H::Hlen => basic::hlen(ctx),
        H::Hstrlen => basic::hstrlen(ctx),
        H::Hincrby => basic::hincrby(ctx),
        H::Hincrbyfloat => basic::hincrbyfloat(ctx),
        H::Hrandfield => random::hrandfield(ctx),
        H::Hscan => random::hscan(ctx),
        H::Hexpire => expire::hexpire(ctx, S, Now),
        H::Hpexpire => expire::hexpire(ctx, Ms, Now),
        H::Hexpireat => expire::hexpire(ctx, S, Epoch),
        H::Hpexpireat => expire::hexpire(ctx, Ms, Epoch),
        H::Httl => expire::httl(ctx, S, ttl::Report::Remaining),
        H::Hpttl => expire::httl(ctx, Ms, ttl::Report::Remaining),
        H::Hexpiretime => expire::httl(ctx, S, ttl::Report::Absolute),
        H::Hpexpiretime => expire::httl(ctx, Ms, ttl::Report::Absolute),
        H::Hpersist => expire::hpersist(ctx),
        H::Hgetdel => ex::hgetdel(ctx),
        H::Hgetex => ex::hgetex(ctx),
        H::Hsetex => ex::hsetex(ctx),
    }
}

const FIELDS_MISSING: &str =
    "ERR Mandatory argument FIELDS is missing or not at the right position";
const NUMFIELDS_MISMATCH: &str = "ERR The `numfields` parameter must match the number of arguments";
const NUMFIELDS_NOT_POSITIVE: &str = "ERR Number of fields must be a positive integer";

/// Reads `key`'s hash (argument 1) and runs `f` with its live fields (`None` when the key
/// is absent or all its fields have expired) and the reply. WRONGTYPE is replied here,
/// before `f` runs. A hash found with every field expired is deleted afterwards.
fn read(ctx: &mut Ctx<'_>, f: impl FnOnce(Option<&Fields<'_>>, &mut Reply<'_>)) {
    let (shared, protocol) = (ctx.shared, ctx.session.protocol);
    let now_ms = ttl::now_ms(shared);
    let reader = shared.core.store.reader();
    let (key, out) = ctx.key_and_out(1);
    let mut reply = Reply::new(out, protocol);
    let Ok(item) = typed::read(&reader, key, ValueKind::Hash) else {
        return reply.error(error::WRONGTYPE);
    };
    let encoded = item.as_ref().and_then(|item| typed::encoding(shared, item));
    let fields = encoded.as_deref().map(|encoded| encoding::decode(encoded, now_ms));
    let live = fields.as_ref().filter(|fields| !fields.is_empty());
    f(live, &mut reply);
    let (found, all_expired) = (live.is_some(), fields.is_some() && live.is_none());
    count_read(ctx.counters, found);
    if all_expired {
        // Redis deletes such a hash when it notices; a failure here changes nothing.
        let _ = change(ctx, |_| (false, ()));
    }
}

/// As [`read`], for the reads of single fields: `f` gets the encoding itself (`None` when
/// the key is absent), to look fields up in place with [`encoding::lookup`].
fn read_encoded(ctx: &mut Ctx<'_>, f: impl FnOnce(Option<&[u8]>, u64, &mut Reply<'_>)) {
    let (shared, protocol) = (ctx.shared, ctx.session.protocol);
    let now_ms = ttl::now_ms(shared);
    let reader = shared.core.store.reader();
    let (key, out) = ctx.key_and_out(1);
    let mut reply = Reply::new(out, protocol);
    let Ok(item) = typed::read(&reader, key, ValueKind::Hash) else {
        return reply.error(error::WRONGTYPE);
    };
    let encoded = item.as_ref().and_then(|item| typed::encoding(shared, item));
    f(encoded.as_deref(), now_ms, &mut reply);
    count_read(ctx.counters, item.is_some());
}

/// Replies WRONGTYPE and returns true if `key` (argument 1) holds another type: for the
/// commands that, as Redis does, check the type before their other arguments.
fn wrong_type(ctx: &mut Ctx<'_>) -> bool {
    let shared = ctx.shared;
    let reader = shared.core.store.reader();
    let wrong = typed::read(&reader, ctx.key(1), ValueKind::Hash).is_err();
    if wrong {
        ctx.error(error::WRONGTYPE);
    }
    wrong
}

/// Changes `key`'s hash (argument 1) under its lock: `f` edits the live fields (none when
/// the key is absent) and says whether it changed them. The hash is written back when
/// changed, when expired fields were left out or when its key expiry must change (see
/// [`key_expiry`]), and deleted when no field is left. `f` may run more than once (when
/// the write waits for memory), so it must compute from its argument alone.
fn change<R>(
    ctx: &mut Ctx<'_>,
    mut f: impl FnMut(&mut Fields<'_>) -> (bool, R),
) -> Result<R, Failure> {
    let now_ms = ttl::now_ms(ctx.shared);
    let key = ctx.key(1).to_vec();
    let mut owning = Owning::new(ctx.shared);
    let mut emptied = false;
    let result = ctx.shared.core.store.modify_within(&key, super::PROTO_MAX_BULK_LEN, |current| {
        owning.start_run();
        let (change, out) = change_run(&mut owning, current, now_ms, &mut f);
        emptied = matches!(change, Change::Delete);
        (change, out)
    });
    if emptied && matches!(result, Ok((_, Ok(_)))) {
        ctx.outcome.note_emptied();
    }
    owning.finish(result.map(|(_, out)| out))
}

/// One run of [`change`]'s closure under the key's lock.
fn change_run<R>(
    owning: &mut Owning<'_>,
    current: Option<Item<'_>>,
    now_ms: u64,
    f: &mut impl FnMut(&mut Fields<'_>) -> (bool, R),
) -> (Change, Result<R, Failure>) {
    {
        match current {
            Some(item) if item.value_kind() != ValueKind::Hash => {
                (Change::Keep, Err(Failure::WrongType))
            }
            Some(item) if item.is_owner() => change_owned(owning, &item, now_ms, f),
            current => {
                let value = current.as_ref().map(|item| item.value());
                let mut fields =
                    value.map(|value| encoding::decode(value, now_ms)).unwrap_or_default();
                let (changed, out) = f(&mut fields);
                let old_expiry = current.as_ref().map_or(Expiry::Never, |item| item.expiry());
                let write = changed || fields.dropped || current.is_none();
                let (expiry, value) = match written(&fields, old_expiry, write) {
                    Written::Delete if current.is_some() => return (Change::Delete, Ok(out)),
                    Written::Delete | Written::Same => return (Change::Keep, Ok(out)),
                    Written::Value { expiry, value } => (expiry, value),
                };
                match owning.write(ValueKind::Hash, value, expiry) {
                    Ok(change) => (change, Ok(out)),
                    Err(failure) => (Change::Keep, Err(failure)),
                }
            }
        }
    }
}

/// [`change`] of a hash kept outside the store: `f` edits its fields as decoded from its
/// encoding (O(size), as in the store), and the value is replaced by the result. The item
/// stays; only its expiry may change.
fn change_owned<R>(
    owning: &mut Owning<'_>,
    item: &Item<'_>,
    now_ms: u64,
    f: &mut impl FnMut(&mut Fields<'_>) -> (bool, R),
) -> (Change, Result<R, Failure>) {
    let owned = owning.touch(item);
    let mut state = owned.state.lock();
    let owned::Value::Hash(hash) = &state.value else {
        return (Change::Keep, Err(Failure::WrongType));
    };
    let encoded = encoding::encode_owned(hash);
    let mut fields = encoded.as_deref().map(|e| encoding::decode(e, now_ms)).unwrap_or_default();
    let (changed, out) = f(&mut fields);
    let old_expiry = item.expiry();
    let (expiry, value) = match written(&fields, old_expiry, changed || fields.dropped) {
        Written::Delete => return (Change::Delete, Ok(out)),
        Written::Same => return (Change::Keep, Ok(out)),
        Written::Value { expiry, value } => (expiry, value),
    };
    let size_max = owning.size_max();
    if value.len() > size_max {
        let too_large = store::StoreError::TooLarge { size: value.len(), max: size_max };
        return (Change::Keep, Err(Failure::Store(too_large)));
    }
    let mut new_hash = encoding::own(&value);
    new_hash.listpack = hash.listpack && owning.hash_listpack(&value);
    state.value = owned::Value::Hash(new_hash);
    state.value_bytes = state.value.charged_bytes();
    state.changes += 1;
    if expiry == old_expiry {
        return (Change::Keep, Ok(out));
    }
    (Change::Rewrite { expiry, meta: item.meta_state(), cas: None }, Ok(out))
}

/// What a change leaves to write: nothing (`Same`), a deletion (no field is left), or the
/// encoding with the key's expiry (when `changed`, or when the expiry must change).
enum Written {
    Same,
    Delete,
    Value { expiry: Expiry, value: Vec<u8> },
}

fn written(fields: &Fields<'_>, old_expiry: Expiry, changed: bool) -> Written {
    if fields.is_empty() {
        return Written::Delete;
    }
    let own = own_expiry(old_expiry, fields.key_expiry);
    let (expiry, set) = key_expiry(&fields.list, own);
    if changed || expiry != old_expiry {
        Written::Value { expiry, value: encoding::encode(&fields.list, set) }
    } else {
        Written::Same
    }
}

/// The key's own expiry (set by EXPIRE, or none), given its item's expiry and what the
/// hash recorded when it last set that expiry itself: if the item's expiry is no longer
/// the one recorded, EXPIRE or PERSIST changed it since, and it is the key's own.
fn own_expiry(item_expiry: Expiry, recorded: Option<KeyExpiry>) -> Expiry {
    match recorded {
        Some(KeyExpiry { set_ms, user_ms }) if item_expiry == Expiry::AtMs(set_ms) => {
            user_ms.map_or(Expiry::Never, Expiry::AtMs)
        }
        _ => item_expiry,
    }
}

/// The expiry to give the key: when every field expires, the latest field's time if it
/// comes before the key's own expiry (recorded in the encoding so that it can be told
/// from one set by EXPIRE); otherwise the key's own.
fn key_expiry(list: &[encoding::Field<'_>], own: Expiry) -> (Expiry, Option<KeyExpiry>) {
    let last_field_ms = list.iter().map(|field| field.expire_at_ms).collect::<Option<Vec<u64>>>();
    let Some(last_ms) = last_field_ms.and_then(|times| times.into_iter().max()) else {
        return (own, None);
    };
    let user_ms = match own {
        Expiry::AtMs(at) if at <= last_ms => return (own, None),
        Expiry::AtMs(at) => Some(at),
        Expiry::Never => None,
    };
    (Expiry::AtMs(last_ms), Some(KeyExpiry { set_ms: last_ms, user_ms }))
}

/// Redis's `FIELDS numfields field ...` check, `numfields` at argument `at`: the keyword
/// before it, a positive count (else `count_error`), as many fields as remain. Returns the
/// field names.
fn field_names<'a>(
    ctx: &Ctx<'a>,
    at: usize,
    count_error: &'static str,
) -> Result<Vec<&'a [u8]>, &'static str> {
    let keyword = ctx.cmd.arg(at - 1).unwrap_or_default();
    if !keyword.eq_ignore_ascii_case(b"FIELDS") {
        return Err(FIELDS_MISSING);
    }
    let count = ctx.cmd.arg(at).and_then(|text| parse_i64(text).ok());
    let count = count.filter(|&n| n >= 1).ok_or(count_error)?;
    if count != ctx.argc() as i64 - at as i64 - 1 {
        return Err(NUMFIELDS_MISMATCH);
    }
    Ok((at + 1..ctx.argc()).map(|i| ctx.arg(i)).collect())
}

#[cfg(test)]
mod tests;
