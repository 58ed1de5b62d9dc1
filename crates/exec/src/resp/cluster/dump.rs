//! DUMP and RESTORE (and RESTORE-ASKING, which MIGRATE sends to a cluster node): a key's
//! value as a Redis 7.0 DUMP payload (`values::rdb`), and back.
//!
//! A payload is made from the value as the commands read it (a collection kept outside
//! the store under its entry's lock, as a snapshot reads it), and restored through the
//! store's write path (`Store::modify_within`, large collections moved out of the store as
//! any write does), so it is charged against the memory limit and may be refused with
//! `-OOM`. A hash's per-field expiries (Redis 7.4) have no place in a 7.0 payload: its
//! live fields are dumped without them.
//!
//! RESTORE's IDLETIME and FREQ are checked as Redis checks them and then ignored: the
//! store keeps its own recency, which a client cannot set.

use proto_resp::{
    args::{is_option, parse_i64},
    error,
};
use store::{Change, Expiry, Item, Mode, StoreError, ValueKind};

use values::rdb::{self, Kept, Value};

use super::super::{keyevents::class, typed, Ctx, PROTO_MAX_BULK_LEN};
use crate::{
    core::delete::{self, DeleteOutcome},
    owned, Shared,
};

const BUSYKEY: &str = "BUSYKEY Target key name already exists.";
const BAD_PAYLOAD: &str = "ERR DUMP payload version or checksum are wrong";
const BAD_DATA: &str = "ERR Bad data format";

/// DUMP key: the payload, or a null for a missing key.
pub(super) fn dump(ctx: &mut Ctx<'_>) {
    let shared = ctx.shared;
    let value = {
        let reader = shared.core.store.reader();
        reader.get(ctx.key(1)).and_then(|item| value_of(shared, &item))
    };
    match value {
        Some(value) => ctx.reply().bulk(&rdb::dump(&value)),
        None => ctx.reply().null(),
    }
}

/// `stored_key`'s payload and expiry, for MIGRATE; `None` when it is missing.
pub(super) fn payload_of(shared: &Shared, stored_key: &[u8]) -> Option<(Vec<u8>, Expiry)> {
    let reader = shared.core.store.reader();
    let item = reader.get(stored_key)?;
    let expiry = item.expiry();
    Some((rdb::dump(&value_of(shared, &item)?), expiry))
}

/// An item's value as a payload carries it; `None` for a collection released meanwhile,
/// or one with nothing live in it (a hash whose fields have all expired while the key was
/// kept: a payload of an empty collection is one no Redis restores).
pub(crate) fn value_of(shared: &Shared, item: &Item<'_>) -> Option<Value> {
    let kind = item.value_kind();
    if kind == ValueKind::String {
        return Some(Value::String(item.value().to_vec()));
    }
    let now_ms = crate::resp::now_unix_ms(shared);
    let value = if item.is_owner() {
        let entry = shared.owned.get(item.value())?;
        let state = entry.state.lock();
        (!state.released).then(|| rdb::from_owned(&state.value, now_ms))?
    } else {
        rdb::from_owned(&owned::own(kind, item.value()), now_ms)
    };
    (!value.is_empty_collection()).then_some(value)
}

/// A payload's value as the store keeps it: its kind and bytes (a collection's encoding).
pub(crate) fn to_stored(value: Value) -> (ValueKind, Vec<u8>) {
    let collection = match rdb::kept(value) {
        Kept::String(bytes) => return (ValueKind::String, bytes),
        Kept::Collection(collection) => collection,
    };
    let kind = match &collection {
        owned::Value::List(_) => ValueKind::List,
        owned::Value::Set(_) => ValueKind::Set,
        owned::Value::Hash(_) => ValueKind::Hash,
        owned::Value::ZSet(_) => ValueKind::ZSet,
        owned::Value::Stream(_) => ValueKind::Stream,
    };
    (kind, owned::encode_owned(&collection).unwrap_or_default())
}

/// What RESTORE's options asked for.
struct Options {
    replace: bool,
    absolute_ttl: bool,
}

/// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f] (`restoreCommand`:
/// options, then the key, then the TTL, then the payload, each checked in that order).
pub(super) fn restore(ctx: &mut Ctx<'_>) {
    let options = match parse_options(ctx) {
        Ok(options) => options,
        Err(message) => return ctx.error(message),
    };
    let shared = ctx.shared;
    if !options.replace && shared.core.store.reader().get(ctx.key(1)).is_some() {
        return ctx.error(BUSYKEY);
    }
    let ttl_ms = match parse_i64(ctx.arg(2)) {
        Ok(ttl) if ttl < 0 => return ctx.error("ERR Invalid TTL value, must be >= 0"),
        Ok(ttl) => ttl as u64,
        Err(_) => return ctx.error(error::NOT_INTEGER),
    };
    let payload = ctx.arg(3);
    if !rdb::verify(payload) {
        return ctx.error(BAD_PAYLOAD);
    }
    let Some(value) = rdb::load(payload) else { return ctx.error(BAD_DATA) };
    let now_ms = crate::resp::now_unix_ms(shared);
    let expiry = match ttl_ms {
        0 => Expiry::Never,
        at if options.absolute_ttl => Expiry::AtMs(at),
        ttl => Expiry::AtMs(now_ms.saturating_add(ttl)),
    };
    if matches!(expiry, Expiry::AtMs(at) if at <= now_ms) {
        // Already expired: the key is not created, and one it replaces is deleted.
        if options.replace
            && delete::delete(&shared.core.store, ctx.counters, ctx.key(1), None)
                == DeleteOutcome::Deleted
        {
            ctx.wrote(class::GENERIC, "del", 1);
        }
        return ctx.reply().ok();
    }
    let mode = if options.replace { Mode::Set } else { Mode::Add };
    match put(shared, ctx.key(1), value, expiry, mode) {
        Ok(()) => {
            ctx.wrote(class::GENERIC, "restore", 1);
            ctx.reply().ok()
        }
        Err(StoreError::NotStored) => ctx.error(BUSYKEY),
        Err(e) => ctx.store_error(e),
    }
}

fn parse_options(ctx: &Ctx<'_>) -> Result<Options, &'static str> {
    let mut options = Options { replace: false, absolute_ttl: false };
    let (mut idle_set, mut freq_set) = (false, false);
    let mut index = 4;
    while index < ctx.argc() {
        let (option, more) = (ctx.arg(index), ctx.argc() - index - 1);
        if is_option(option, "replace") {
            options.replace = true;
        } else if is_option(option, "absttl") {
            options.absolute_ttl = true;
        } else if is_option(option, "idletime") && more >= 1 && !freq_set {
            let idle = parse_i64(ctx.arg(index + 1)).map_err(|_| error::NOT_INTEGER)?;
            if idle < 0 {
                return Err("ERR Invalid IDLETIME value, must be >= 0");
            }
            (idle_set, index) = (true, index + 1);
        } else if is_option(option, "freq") && more >= 1 && !idle_set {
            let freq = parse_i64(ctx.arg(index + 1)).map_err(|_| error::NOT_INTEGER)?;
            if !(0..=255).contains(&freq) {
                return Err("ERR Invalid FREQ value, must be >= 0 and <= 255");
            }
            (freq_set, index) = (true, index + 1);
        } else {
            return Err(error::SYNTAX);
        }
        index += 1;
    }
    Ok(options)
}

/// Stores a restored value under `key` (`Mode::Add`: only where there is none, else
/// `NotStored`; `Mode::Set`: over whatever is there).
fn put(
    shared: &Shared,
    key: &[u8],
    value: Value,
    expiry: Expiry,
    mode: Mode,
) -> Result<(), StoreError> {
    let (kind, bytes) = to_stored(value);
    if kind == ValueKind::String {
        let options = crate::resp::redis_options();
        return shared.core.store.store_with(key, &bytes, 0, expiry, mode, options).map(|_| ());
    }
    let mut owning = typed::Owning::new(shared);
    let result = shared.core.store.modify_within(key, PROTO_MAX_BULK_LEN, |current| {
        owning.start_run();
        if current.is_some() && mode == Mode::Add {
            return (Change::Keep, Ok(false));
        }
        match owning.write(kind, bytes.clone(), expiry) {
            Ok(change) => (change, Ok(true)),
            Err(failure) => (Change::Keep, Err(failure)),
        }
    });
    match owning.finish(result.map(|(_, out)| out)) {
        Ok(true) => Ok(()),
        Ok(false) => Err(StoreError::NotStored),
        Err(typed::Failure::Store(e)) => Err(e),
        Err(typed::Failure::WrongType) => Err(StoreError::NotStored),
    }
}

#[cfg(test)]
mod tests;
