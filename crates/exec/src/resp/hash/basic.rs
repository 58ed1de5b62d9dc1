//! HSET HMSET HSETNX HGET HMGET HGETALL HKEYS HVALS HDEL HEXISTS HLEN HSTRLEN HINCRBY
//! HINCRBYFLOAT.

use std::borrow::Cow;

use proto_resp::{
    args::{parse_f64, parse_i64},
    error,
};

use store::{Change, ValueKind};

use super::super::{
    incr::format_human,
    keyevents::class,
    typed::{Failure, Owning},
    PROTO_MAX_BULK_LEN,
};
use super::{
    change, change_run,
    encoding::{self, lookup, Batch},
    large, read, read_encoded, ttl, Ctx,
};

pub(super) const HASH_NOT_INTEGER: &str = "ERR hash value is not an integer";
pub(super) const HASH_NOT_FLOAT: &str = "ERR hash value is not a float";
const INCR_NAN_OR_INF: &str = "ERR value is NaN or Infinity";

/// What HSET and HMSET answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SetReply {
    /// HSET: the number of new fields.
    Count,
    /// HMSET: `+OK`.
    Ok,
}

/// HSET and HMSET (the pairs rule checked their arity).
pub(super) fn hset(ctx: &mut Ctx<'_>, answer: SetReply) {
    let pairs: Vec<(&[u8], &[u8])> =
        (2..ctx.argc()).step_by(2).map(|i| (ctx.arg(i), ctx.arg(i + 1))).collect();
    if let Some(created) = large::set(ctx, &pairs, false) {
        return match created {
            Err(large::TooLarge) => ctx.refused(crate::core::Refusal::TooLarge),
            Ok(created) => hset_done(ctx, answer, created),
        };
    }
    match hset_stored(ctx, &pairs) {
        Err(failure) => ctx.failure(failure),
        Ok(created) => hset_done(ctx, answer, created),
    }
}

/// HSET's and HMSET's reply once the fields are set: `hset`, whether or not a field was new.
fn hset_done(ctx: &mut Ctx<'_>, answer: SetReply, created: i64) {
    ctx.wrote(class::HASH, "hset", 1);
    match answer {
        SetReply::Count => ctx.reply().integer(created),
        SetReply::Ok => ctx.reply().ok(),
    }
}

/// HSET's write of a hash in the store (or of one kept outside it that takes its expiry
/// from its fields), in one `Store::modify`: the representation is decided once, under
/// the key's lock, from the item found. One field on a hash in the store with no
/// expiring field is spliced in by byte edits (`encoding::splice_set`: no decoding of
/// the others); anything else (a new key, several fields, expiring fields, an owner)
/// goes through the decoding edit of [`change`]. How many fields were new.
fn hset_stored(ctx: &mut Ctx<'_>, pairs: &[(&[u8], &[u8])]) -> Result<i64, Failure> {
    let shared = ctx.shared;
    let key = ctx.key(1).to_vec();
    let mut owning = Owning::new(shared);
    let mut set_all = |fields: &mut encoding::Fields<'_>| {
        let mut batch = Batch::new(fields, pairs.iter().map(|(name, _)| *name));
        let mut created = 0;
        for (name, value) in pairs {
            created += i64::from(batch.set(fields, name, Cow::Owned(value.to_vec()), false));
        }
        batch.finish(fields);
        (true, created)
    };
    let result = shared.core.store.modify_within(&key, PROTO_MAX_BULK_LEN, |current| {
        owning.start_run();
        let spliced = match (&current, pairs) {
            (Some(item), [(name, value)])
                if item.value_kind() == ValueKind::Hash && !item.is_owner() =>
            {
                let spliced = encoding::splice_set_counted(item.value(), name, value);
                let lens = [name.len(), value.len()];
                spliced.map(|(encoded, fields)| (encoded, fields, lens, item.expiry()))
            }
            _ => None,
        };
        match spliced {
            Some((value, fields, lens, expiry)) => {
                // Only what this write added is checked against the thresholds, as Redis
                // checks (the splice's walk counted the fields): no second walk.
                let past = shared.redis.encoding_thresholds.hash_past(fields, lens);
                match owning.write_decided(ValueKind::Hash, value, expiry, past) {
                    Ok(change) => (change, Ok(i64::from(fields.is_some()))),
                    Err(failure) => (Change::Keep, Err(failure)),
                }
            }
            // The clock is read only here: a splice has no expiring field to compare.
            None => change_run(&mut owning, current, ttl::now_ms(shared), &mut set_all),
        }
    });
    owning.finish(result.map(|(_, out)| out))
}

pub(super) fn hsetnx(ctx: &mut Ctx<'_>) {
    let (name, value) = (ctx.arg(2), ctx.arg(3));
    match large::set(ctx, &[(name, value)], true) {
        Some(Ok(created)) => return hsetnx_done(ctx, created),
        Some(Err(large::TooLarge)) => return ctx.refused(crate::core::Refusal::TooLarge),
        None => {}
    }
    let result = change(ctx, |fields| {
        if fields.find(name).is_some() {
            return (false, 0);
        }
        fields.set(name, Cow::Owned(value.to_vec()), false);
        (true, 1)
    });
    match result {
        Err(failure) => ctx.failure(failure),
        Ok(created) => hsetnx_done(ctx, created),
    }
}

fn hsetnx_done(ctx: &mut Ctx<'_>, created: i64) {
    if created > 0 {
        ctx.wrote(class::HASH, "hset", 1);
    }
    ctx.reply().integer(created);
}

pub(super) fn hget(ctx: &mut Ctx<'_>) {
    let name = ctx.arg(2);
    if let Some(value) = large::field(ctx, name, |value| value.map(<[u8]>::to_vec)) {
        return ctx.bulk_or_null(value.as_deref());
    }
    read_encoded(ctx, |encoded, now_ms, reply| {
        match encoded.and_then(|encoded| lookup(encoded, name, now_ms)) {
            Some(value) => reply.bulk(value),
            None => reply.null(),
        }
    });
}

/// Up to this many fields, HMGET looks each up in place; beyond, it decodes the hash once.
const HMGET_IN_PLACE_MAX: usize = 4;

pub(super) fn hmget(ctx: &mut Ctx<'_>) {
    let names: Vec<&[u8]> = (2..ctx.argc()).map(|i| ctx.arg(i)).collect();
    if let Some(values) = large::fields(ctx, &names) {
        let mut reply = ctx.reply();
        reply.array(values.len());
        for value in &values {
            match value {
                Some(value) => reply.bulk(value),
                None => reply.null(),
            }
        }
        return;
    }
    if names.len() > HMGET_IN_PLACE_MAX {
        return read(ctx, |fields, reply| {
            reply.array(names.len());
            let batch = fields.map(|fields| (fields, Batch::new(fields, names.iter().copied())));
            for name in &names {
                let found = batch.as_ref().and_then(|(fields, batch)| {
                    batch.find(name).map(|index| &*fields.list[index].value)
                });
                match found {
                    Some(value) => reply.bulk(value),
                    None => reply.null(),
                }
            }
        });
    }
    read_encoded(ctx, |encoded, now_ms, reply| {
        reply.array(names.len());
        for name in &names {
            match encoded.and_then(|encoded| lookup(encoded, name, now_ms)) {
                Some(value) => reply.bulk(value),
                None => reply.null(),
            }
        }
    });
}

/// Which parts of each field HGETALL, HKEYS and HVALS reply with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Part {
    Both,
    Fields,
    Values,
}

/// HGETALL (a map in RESP3, a flat array in RESP2), HKEYS, HVALS.
pub(super) fn hgetall(ctx: &mut Ctx<'_>, part: Part) {
    read(ctx, |fields, reply| {
        let list = fields.map_or(&[][..], |fields| &fields.list[..]);
        match part {
            Part::Both => reply.map(list.len()),
            Part::Fields | Part::Values => reply.array(list.len()),
        }
        for field in list {
            if part != Part::Values {
                reply.bulk(&field.name);
            }
            if part != Part::Fields {
                reply.bulk(&field.value);
            }
        }
    });
}

pub(super) fn hdel(ctx: &mut Ctx<'_>) {
    let names: Vec<&[u8]> = (2..ctx.argc()).map(|i| ctx.arg(i)).collect();
    if let Some(removed) = large::delete(ctx, &names) {
        return hdel_done(ctx, removed);
    }
    let result = change(ctx, |fields| {
        let mut batch = Batch::new(fields, names.iter().copied());
        let removed = names.iter().filter(|name| batch.remove(fields, name).is_some()).count();
        batch.finish(fields);
        (removed > 0, removed as i64)
    });
    match result {
        Err(failure) => ctx.failure(failure),
        Ok(removed) => hdel_done(ctx, removed),
    }
}

fn hdel_done(ctx: &mut Ctx<'_>, removed: i64) {
    if removed > 0 {
        ctx.removed(class::HASH, "hdel", 1);
    }
    ctx.reply().integer(removed);
}

pub(super) fn hexists(ctx: &mut Ctx<'_>) {
    let name = ctx.arg(2);
    if let Some(found) = large::field(ctx, name, |value| value.is_some()) {
        return ctx.reply().integer(i64::from(found));
    }
    read_encoded(ctx, |encoded, now_ms, reply| {
        let found = encoded.and_then(|encoded| lookup(encoded, name, now_ms)).is_some();
        reply.integer(i64::from(found));
    });
}

pub(super) fn hlen(ctx: &mut Ctx<'_>) {
    if let Some(len) = large::len(ctx) {
        return ctx.reply().integer(len as i64);
    }
    read(ctx, |fields, reply| reply.integer(fields.map_or(0, |fields| fields.len()) as i64));
}

pub(super) fn hstrlen(ctx: &mut Ctx<'_>) {
    let name = ctx.arg(2);
    if let Some(len) = large::field(ctx, name, |value| value.map_or(0, <[u8]>::len)) {
        return ctx.reply().integer(len as i64);
    }
    read_encoded(ctx, |encoded, now_ms, reply| {
        let value = encoded.and_then(|encoded| lookup(encoded, name, now_ms));
        reply.integer(value.map_or(0, <[u8]>::len) as i64);
    });
}

/// HINCRBY: the increment is checked before the key (Redis's order); the field keeps
/// its expiry.
pub(super) fn hincrby(ctx: &mut Ctx<'_>) {
    let by = match parse_i64(ctx.arg(3)) {
        Ok(by) => by,
        Err(e) => return ctx.error(e.message()),
    };
    let name = ctx.arg(2);
    match large::incr_by(ctx, name, by) {
        Some(Ok(new)) => {
            ctx.wrote(class::HASH, "hincrby", 1);
            return ctx.reply().integer(new);
        }
        Some(Err(message)) => return ctx.error(message),
        None => {}
    }
    let result = change(ctx, |fields| {
        let old = match fields.get(name).map(parse_i64) {
            None => 0,
            Some(Ok(n)) => n,
            Some(Err(_)) => return (false, Err(HASH_NOT_INTEGER)),
        };
        let Some(new) = old.checked_add(by) else {
            return (false, Err(error::INCR_OVERFLOW));
        };
        fields.set(name, Cow::Owned(new.to_string().into_bytes()), true);
        (true, Ok(new))
    });
    match result {
        Err(failure) => ctx.failure(failure),
        Ok(Err(message)) => ctx.error(message),
        Ok(Ok(new)) => {
            ctx.wrote(class::HASH, "hincrby", 1);
            ctx.reply().integer(new);
        }
    }
}

/// HINCRBYFLOAT: replies with the stored text, a bulk string in RESP3 too, as Redis does.
pub(super) fn hincrbyfloat(ctx: &mut Ctx<'_>) {
    let by = match parse_f64(ctx.arg(3)) {
        Err(_) => return ctx.error(error::NOT_FLOAT),
        Ok(by) if !by.is_finite() => return ctx.error(INCR_NAN_OR_INF),
        Ok(by) => by,
    };
    let name = ctx.arg(2);
    match large::incr_by_float(ctx, name, by) {
        Some(Ok(text)) => {
            ctx.wrote(class::HASH, "hincrbyfloat", 1);
            return ctx.reply().bulk(&text);
        }
        Some(Err(message)) => return ctx.error(message),
        None => {}
    }
    let result = change(ctx, |fields| {
        let old = match fields.get(name).map(parse_f64) {
            None => 0.0,
            Some(Ok(n)) => n,
            Some(Err(_)) => return (false, Err(HASH_NOT_FLOAT)),
        };
        let sum = old + by;
        if !sum.is_finite() {
            return (false, Err(error::INCR_NAN_OR_INF));
        }
        let text = format_human(sum).into_bytes();
        fields.set(name, Cow::Owned(text.clone()), true);
        (true, Ok(text))
    });
    match result {
        Err(failure) => ctx.failure(failure),
        Ok(Err(message)) => ctx.error(message),
        Ok(Ok(text)) => {
            ctx.wrote(class::HASH, "hincrbyfloat", 1);
            ctx.reply().bulk(&text);
        }
    }
}
