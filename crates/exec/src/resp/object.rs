//! OBJECT ENCODING / FREQ / IDLETIME / REFCOUNT / HELP, and SWAPDB.
//!
//! OBJECT reads the item without counting an access, as Redis's lookup for it does. The
//! encoding names are Redis 7.2's for the same value: a string is `int`, `embstr` or `raw`
//! by its text and length; a collection is compact (`listpack`, `intset`) or not by where
//! it lives (`encoding_name`).

use proto_resp::{args::parse_i64, error};
use store::{Change, Item, Mode, ValueKind};

use super::{connection::note_database, keys, typed, Ctx};
use crate::{keyspace, Shared};

/// OBJECT ENCODING: null for a missing key.
pub(super) fn encoding(ctx: &mut Ctx<'_>) {
    let shared = ctx.shared;
    let reader = shared.core.store.reader();
    let name = reader.peek(ctx.key(2)).map(|item| match item.value_kind() {
        ValueKind::String => string_encoding(item.value()),
        _ => encoding_name(shared, &item),
    });
    drop(reader);
    ctx.bulk_or_null(name.map(str::as_bytes));
}

/// The name OBJECT ENCODING gives a collection's value: Redis 7.0's for where it lives.
/// One kept in the store is compact (`listpack`, `intset`; a set of strings is a hash
/// table at any size in 7.0, and a list always a quicklist); one moved out of it, past the
/// encoding thresholds or Spinel's byte bound (`thresholds.rs`), is not, and stays so when
/// it shrinks, as Redis never converts back; except a hash moved out below the thresholds,
/// which Redis would still keep as a listpack (`owned::HashValue::listpack`).
fn encoding_name(shared: &Shared, item: &Item<'_>) -> &'static str {
    let (kind, value) = (item.value_kind(), item.value());
    if item.is_owner() && kind == ValueKind::Hash && owned_listpack(shared, value) {
        return "listpack";
    }
    if item.is_owner() {
        return match kind {
            ValueKind::List => "quicklist",
            ValueKind::ZSet => "skiplist",
            ValueKind::Stream => "stream",
            _ => "hashtable",
        };
    }
    match kind {
        ValueKind::String => "raw",
        ValueKind::List => "quicklist",
        ValueKind::Hash | ValueKind::ZSet => "listpack",
        ValueKind::Set => super::set::encoding_name(value),
        ValueKind::Stream => "stream",
    }
}

/// Whether the hash kept outside the store under `handle` is still a listpack to Redis.
fn owned_listpack(shared: &Shared, handle: &[u8]) -> bool {
    let Some(owned) = shared.owned.get(handle) else { return false };
    let state = owned.state.lock();
    matches!(&state.value, crate::owned::Value::Hash(hash) if hash.listpack)
}

/// Redis keeps a string that reads back as the same i64 as a number (`int`), a short one
/// in the object's allocation (`embstr`, up to 44 bytes), and the rest apart (`raw`).
fn string_encoding(value: &[u8]) -> &'static str {
    let canonical =
        value.len() <= 20 && parse_i64(value).is_ok_and(|n| n.to_string().as_bytes() == value);
    if canonical {
        "int"
    } else if value.len() <= 44 {
        "embstr"
    } else {
        "raw"
    }
}

const NO_LFU: &str = "ERR An LFU maxmemory policy is not selected, access frequency not \
tracked. Please note that when switching between policies at runtime LRU and LFU data will \
take some time to adjust.";

/// OBJECT FREQ: our eviction is not LFU, and Redis refuses FREQ under any other policy.
pub(super) fn freq(ctx: &mut Ctx<'_>) {
    let shared = ctx.shared;
    let found = shared.core.store.reader().peek(ctx.key(2)).is_some();
    if found {
        ctx.error(NO_LFU);
    } else {
        ctx.reply().null();
    }
}

/// OBJECT IDLETIME: seconds since the key's last access (its write or a read).
pub(super) fn idletime(ctx: &mut Ctx<'_>) {
    let shared = ctx.shared;
    let now_secs = super::ttl::now_ms(shared) / 1000;
    let idle = {
        let reader = shared.core.store.reader();
        let item = reader.peek(ctx.key(2));
        item.map(|item| now_secs.saturating_sub(item.accessed_at_secs()))
    };
    match idle {
        Some(secs) => ctx.reply().integer(secs as i64),
        None => ctx.reply().null(),
    }
}

/// OBJECT REFCOUNT: values are never shared between keys here.
pub(super) fn refcount(ctx: &mut Ctx<'_>) {
    let shared = ctx.shared;
    let found = shared.core.store.reader().peek(ctx.key(2)).is_some();
    match found {
        true => ctx.reply().integer(1),
        false => ctx.reply().null(),
    }
}

/// OBJECT HELP, as Redis words it.
pub(super) fn help(ctx: &mut Ctx<'_>) {
    super::help::reply(ctx, super::help::OBJECT);
}

/// SWAPDB index1 index2: every key of one database moves to the other and back, with its
/// value, type and TTL. Exclusive (a write naming no key is not made so by the
/// dispatcher, so it takes the gate itself); O(keys of every database), where Redis swaps
/// two pointers.
pub(super) fn swapdb(ctx: &mut Ctx<'_>) {
    if ctx.shared.redis.cluster.get().is_some() {
        return ctx.error("ERR SWAPDB is not allowed in cluster mode");
    }
    let Some(first) = db_index(ctx.arg(1)) else {
        return ctx.error("ERR invalid first DB index");
    };
    let Some(second) = db_index(ctx.arg(2)) else {
        return ctx.error("ERR invalid second DB index");
    };
    let (Some(first), Some(second)) = (first, second) else {
        return ctx.error(error::DB_INDEX_OUT_OF_RANGE);
    };
    let (shared, counters) = (ctx.shared, ctx.counters);
    if first != second {
        note_database(shared, first.max(second));
        let worker = shared.core.worker_of(counters);
        shared.core.gate.exclusive(worker, || swap(shared, first, second));
    }
    ctx.reply().ok();
}

/// `Some(None)`: an integer out of range; `None`: not an integer.
fn db_index(text: &[u8]) -> Option<Option<u8>> {
    let n = parse_i64(text).ok()?;
    Some(u8::try_from(n).ok().filter(|&db| db < keyspace::DATABASES))
}

fn swap(shared: &Shared, first: u8, second: u8) {
    let mut moved = Vec::new();
    for db in [first, second] {
        keys::for_each_key(shared, db, |key| moved.push((db, key.to_vec())));
    }
    let mut items = Vec::with_capacity(moved.len());
    let mut scratch = Vec::new();
    for (db, key) in moved {
        let stored = keyspace::encode(db, &key, &mut scratch);
        let taken = shared.core.store.modify(stored, |current| match current {
            Some(item) => (Change::Delete, Some(typed::detach(shared, &item))),
            None => (Change::Keep, None),
        });
        if let Ok((_, Some(item))) = taken {
            items.push((if db == first { second } else { first }, key, item));
        }
    }
    for (db, key, item) in items {
        let stored = keyspace::encode(db, &key, &mut scratch);
        // Memory for it was just freed; a refusal (a smaller limit meanwhile) loses it.
        if typed::put_copy(shared, stored, &item, Mode::Set, typed::Copying::Adopt).is_err() {
            typed::drop_detached(shared, &item);
        }
    }
}
