//! String commands: GET SET SETNX SETEX PSETEX GETSET GETDEL GETEX MGET MSET MSETNX APPEND
//! STRLEN GETRANGE SETRANGE (the INCR family is in `incr.rs`).
//!
//! Where a command means what a memcached one does, it runs that command's core: GET and
//! MGET the get core, SET (plain, NX, XX) and MSET/MSETNX the store core as set, add and
//! replace, APPEND the store core's append-or-create, GETEX the touch core. What is
//! Redis-only (SET GET and KEEPTTL, GETDEL, SETRANGE) runs in one `Store::modify`, so every
//! read-modify-write is atomic per key. MSET and MSETNX are not atomic across keys (see
//! their docs).

use proto_resp::{
    args::{match_option, parse_i64},
    error::{self, STRING_TOO_LONG},
    Reply,
};
use store::{Change, Expiry, Item, Mode, StoreError, StoreOptions, ValueKind};

use super::{
    count_read,
    keyevents::class,
    ttl::{self, Base, TimeArg, Unit},
    Ctx,
};
use crate::{
    core::{
        get::{Gets, ReadAhead, BUCKETS_AHEAD},
        storage::{self, OnRefusal, StoreOutcome},
        touch::{self, Retime, TouchOutcome},
        Refusal,
    },
    counters::bump,
    Shared,
};

/// GET: the get core, as memcached `get`.
pub(super) fn get(ctx: &mut Ctx<'_>) {
    let (shared, counters, protocol) = (ctx.shared, ctx.counters, ctx.session.protocol);
    let lends = ctx.lends();
    let mut gets = Gets::new(&shared.core.store);
    let (key, out) = ctx.key_and_out(1);
    let mut reply = Reply::new(out, protocol);
    match gets.get_any(key) {
        Some(item) if item.value_kind() != ValueKind::String => reply.error(error::WRONGTYPE),
        Some(item) => bulk_value(&mut reply, &item, lends),
        None => reply.null(),
    }
    gets.finish(counters);
}

/// Whether key argument `index` holds a collection; if so, replies WRONGTYPE. String
/// commands that read the old value call it first (GET checks on its own read). Their
/// store steps also refuse a collection, so a type change in between corrupts nothing.
pub(super) fn holds_collection(ctx: &mut Ctx<'_>, index: usize) -> bool {
    let shared = ctx.shared;
    let reader = shared.core.store.reader();
    let other =
        reader.peek(ctx.key(index)).is_some_and(|item| item.value_kind() != ValueKind::String);
    drop(reader);
    if other {
        ctx.error(error::WRONGTYPE);
    }
    other
}

/// SET's and GETEX's options, parsed as `parseExtendedStringArgumentsOrReply` does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Extended<'a> {
    condition: Condition,
    get: bool,
    ttl: TtlOption<'a>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Condition {
    #[default]
    Always,
    IfAbsent,
    IfPresent,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum TtlOption<'a> {
    /// No TTL option: SET clears the TTL, GETEX leaves it.
    #[default]
    Unspecified,
    KeepTtl,
    Persist,
    At(TimeArg<'a>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Set,
    GetEx,
}

const TTL_OPTIONS: [(&str, Unit, Base); 4] = [
    ("EX", Unit::Seconds, Base::Now),
    ("PX", Unit::Milliseconds, Base::Now),
    ("EXAT", Unit::Seconds, Base::Epoch),
    ("PXAT", Unit::Milliseconds, Base::Epoch),
];

/// Parses the options from argument `from` on; `Err` means `ERR syntax error`. As in Redis,
/// an option may repeat, but options that contradict each other may not be combined.
fn parse_extended<'a>(ctx: &Ctx<'a>, from: usize, kind: Kind) -> Result<Extended<'a>, ()> {
    let mut opts = Extended::default();
    let mut j = from;
    while j < ctx.argc() {
        let opt = ctx.arg(j).to_ascii_uppercase();
        let ttl_free = |allowed| opts.ttl == TtlOption::Unspecified || opts.ttl == allowed;
        match (opt.as_slice(), kind) {
            (b"NX", Kind::Set) if opts.condition != Condition::IfPresent => {
                opts.condition = Condition::IfAbsent
            }
            (b"XX", Kind::Set) if opts.condition != Condition::IfAbsent => {
                opts.condition = Condition::IfPresent
            }
            (b"GET", Kind::Set) => opts.get = true,
            (b"KEEPTTL", Kind::Set) if ttl_free(TtlOption::KeepTtl) => {
                opts.ttl = TtlOption::KeepTtl
            }
            (b"PERSIST", Kind::GetEx) if ttl_free(TtlOption::Persist) => {
                opts.ttl = TtlOption::Persist
            }
            (name, _) => {
                let Some(index) = match_option(name, &TTL_OPTIONS.map(|(n, ..)| n)) else {
                    return Err(());
                };
                let (_, unit, base) = TTL_OPTIONS[index];
                let same_kind =
                    matches!(opts.ttl, TtlOption::At(a) if a.unit == unit && a.base == base);
                if j + 1 >= ctx.argc() || !(opts.ttl == TtlOption::Unspecified || same_kind) {
                    return Err(());
                }
                j += 1;
                opts.ttl = TtlOption::At(TimeArg { text: ctx.arg(j), unit, base });
            }
        }
        j += 1;
    }
    Ok(opts)
}

/// The TTL a write gives its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NewTtl {
    /// No expiry (SET without options, GETSET).
    Clear,
    /// The key's current expiry (KEEPTTL).
    Keep,
    /// Absolute Unix milliseconds; at or before now means the key is gone at once.
    At(i64),
}

/// One string write and what it found.
#[derive(Clone, Copy, Debug)]
struct Write<'v> {
    value: &'v [u8],
    condition: Condition,
    /// Return the old value.
    get: bool,
    ttl: NewTtl,
}

/// (written, old value if asked for).
type Written = (bool, Option<Vec<u8>>);

/// Writes `w` under key argument `key_index`. A plain write goes through `Store::store`;
/// one that must see the old item (GET, KEEPTTL) or that expires at once uses `modify`.
fn write_string(ctx: &mut Ctx<'_>, key_index: usize, w: Write<'_>) -> Result<Written, Refusal> {
    let shared = ctx.shared;
    bump(&ctx.counters.cmd_set, 1);
    let key = ctx.key(key_index);
    // The clock is read only for a deadline (a plain SET has none).
    let fixed_expiry = match w.ttl {
        NewTtl::Clear => Some(Expiry::Never),
        NewTtl::Keep => None,
        NewTtl::At(at) => ttl::expiry_at(at, ttl::now_ms(shared)),
    };
    if let (false, Some(expiry)) = (w.get, fixed_expiry) {
        // SET, NX and XX mean memcached's set, add and replace.
        let mode = match w.condition {
            Condition::Always => Mode::Set,
            Condition::IfAbsent => Mode::Add,
            Condition::IfPresent => Mode::Replace,
        };
        return store_plain(shared, key, w.value, expiry, mode).map(|stored| (stored, None));
    }
    // GET and KEEPTTL need the old item, and a past deadline deletes: Redis-only steps.
    let now = ttl::now_ms(shared);
    let (_, written) = shared
        .core
        .store
        .modify_within(key, super::PROTO_MAX_BULK_LEN, |current| {
            let old = if w.get { current.map(|item| item.value().to_vec()) } else { None };
            let allowed = match w.condition {
                Condition::Always => true,
                Condition::IfAbsent => current.is_none(),
                Condition::IfPresent => current.is_some(),
            };
            if !allowed {
                return (Change::Keep, (false, old));
            }
            let expiry = match w.ttl {
                NewTtl::Clear => Some(Expiry::Never),
                NewTtl::Keep => Some(current.map_or(Expiry::Never, |item| item.expiry())),
                NewTtl::At(at) => ttl::expiry_at(at, now),
            };
            let change = match expiry {
                Some(expiry) => Change::Write { value: w.value.to_vec(), flags: 0, expiry },
                None => Change::Delete,
            };
            (change, (true, old))
        })
        .map_err(Refusal::of_modify)?;
    Ok(written)
}

/// A write with the store core and Redis's rules: flags 0, and a refused write leaves the
/// old value. Returns whether it was stored (NX and XX may decline). Redis counts
/// `cmd_set` itself, at every attempt, and no `total_items` (memcached's rule differs).
fn store_plain(
    shared: &Shared,
    key: &[u8],
    value: &[u8],
    expiry: Expiry,
    mode: Mode,
) -> Result<bool, Refusal> {
    let write = storage::Write {
        key,
        value,
        flags: 0,
        expiry,
        mode,
        options: StoreOptions::default(),
        vivify: None,
        on_refusal: OnRefusal::KeepOld,
    };
    let write = storage::Write { options: super::redis_options(), ..write };
    match storage::store(&shared.core.store, &write) {
        StoreOutcome::Stored(_) => Ok(true),
        StoreOutcome::NotStored => Ok(false),
        StoreOutcome::Refused(refusal) => Err(refusal),
        StoreOutcome::Exists | StoreOutcome::NotFound => {
            unreachable!("set, add and replace compare no CAS unique")
        }
    }
}

pub(super) fn set(ctx: &mut Ctx<'_>) {
    // `SET key value`, the commonest, has no options to parse.
    let parsed =
        if ctx.argc() == 3 { Ok(Extended::default()) } else { parse_extended(ctx, 3, Kind::Set) };
    let Ok(opts) = parsed else {
        return ctx.error(error::SYNTAX);
    };
    let ttl = match opts.ttl {
        TtlOption::Unspecified | TtlOption::Persist => NewTtl::Clear,
        TtlOption::KeepTtl => NewTtl::Keep,
        TtlOption::At(arg) => match ttl::deadline_ms(arg, ttl::now_ms(ctx.shared), "set") {
            Ok(at) => NewTtl::At(at),
            Err(message) => return ctx.error(message),
        },
    };
    if opts.get && holds_collection(ctx, 1) {
        return;
    }
    let w = Write { value: ctx.arg(2), condition: opts.condition, get: opts.get, ttl };
    let written = write_string(ctx, 1, w);
    if let Ok((true, _)) = written {
        wrote_set(ctx, 1, ttl);
    }
    match written {
        Err(refusal) => ctx.refused(refusal),
        Ok((_, old)) if opts.get => ctx.bulk_or_null(old.as_deref()),
        Ok((true, _)) => ctx.reply().ok(),
        Ok((false, _)) => ctx.reply().null(),
    }
}

pub(super) fn setnx(ctx: &mut Ctx<'_>) {
    let w =
        Write { value: ctx.arg(2), condition: Condition::IfAbsent, get: false, ttl: NewTtl::Clear };
    match write_string(ctx, 1, w) {
        Ok((written, _)) => {
            if written {
                wrote_set(ctx, 1, NewTtl::Clear);
            }
            ctx.reply().integer(i64::from(written))
        }
        Err(refusal) => ctx.refused(refusal),
    }
}

/// The events of a string write that stored: `set`, then `expire` for a deadline, and
/// `expired` as well when the deadline had already passed (Redis 7.0 stores such a key and
/// expires it when next looked at; here it is never stored).
fn wrote_set(ctx: &mut Ctx<'_>, key_index: usize, ttl: NewTtl) {
    ctx.wrote(class::STRING, "set", key_index);
    if let NewTtl::At(at_ms) = ttl {
        ctx.wrote(class::GENERIC, "expire", key_index);
        if ttl::expiry_at(at_ms, ttl::now_ms(ctx.shared)).is_none() {
            ctx.wrote(class::EXPIRED, "expired", key_index);
        }
    }
}

/// GETEX's event once it found the key: `expire`, `persist`, or `del` for a past deadline;
/// none when the expiry did not change (the touch core then wrote nothing).
fn wrote_retime(ctx: &mut Ctx<'_>, retime: Retime, before: Expiry) {
    match retime {
        Retime::Remove => ctx.wrote(class::GENERIC, "del", 1),
        Retime::ToIfChanged(Expiry::Never) if before == Expiry::Never => {}
        Retime::ToIfChanged(Expiry::Never) => ctx.wrote(class::GENERIC, "persist", 1),
        Retime::ToIfChanged(_) | Retime::To(_) => ctx.wrote(class::GENERIC, "expire", 1),
    }
}

/// SETEX (seconds) and PSETEX (milliseconds).
pub(super) fn setex(ctx: &mut Ctx<'_>, unit: Unit) {
    let arg = TimeArg { text: ctx.arg(2), unit, base: Base::Now };
    let at = match ttl::deadline_ms(arg, ttl::now_ms(ctx.shared), ctx.spec.name) {
        Ok(at) => at,
        Err(message) => return ctx.error(message),
    };
    let w =
        Write { value: ctx.arg(3), condition: Condition::Always, get: false, ttl: NewTtl::At(at) };
    match write_string(ctx, 1, w) {
        Ok(_) => {
            wrote_set(ctx, 1, NewTtl::At(at));
            ctx.reply().ok()
        }
        Err(refusal) => ctx.refused(refusal),
    }
}

pub(super) fn getset(ctx: &mut Ctx<'_>) {
    if holds_collection(ctx, 1) {
        return;
    }
    let w =
        Write { value: ctx.arg(2), condition: Condition::Always, get: true, ttl: NewTtl::Clear };
    match write_string(ctx, 1, w) {
        Ok((_, old)) => {
            wrote_set(ctx, 1, NewTtl::Clear);
            ctx.bulk_or_null(old.as_deref())
        }
        Err(refusal) => ctx.refused(refusal),
    }
}

pub(super) fn getdel(ctx: &mut Ctx<'_>) {
    if holds_collection(ctx, 1) {
        return;
    }
    let (shared, counters) = (ctx.shared, ctx.counters);
    let key = ctx.key(1);
    let taken = shared.core.store.modify(key, |current| match current {
        Some(item) => (Change::Delete, Some(item.value().to_vec())),
        None => (Change::Keep, None),
    });
    match taken {
        Ok((_, old)) => {
            count_read(counters, old.is_some());
            if old.is_some() {
                ctx.wrote(class::GENERIC, "del", 1);
            }
            ctx.bulk_or_null(old.as_deref());
        }
        Err(e) => ctx.store_error(e),
    }
}

pub(super) fn getex(ctx: &mut Ctx<'_>) {
    let Ok(opts) = parse_extended(ctx, 2, Kind::GetEx) else {
        return ctx.error(error::SYNTAX);
    };
    if holds_collection(ctx, 1) {
        return;
    }
    let now = ttl::now_ms(ctx.shared);
    // The touch core, as memcached `gat`, with Redis's differences: a past deadline
    // deletes the key, an unchanged expiry writes nothing, and it counts as a read.
    let retime = match opts.ttl {
        TtlOption::Unspecified | TtlOption::KeepTtl => return get(ctx),
        TtlOption::Persist => Retime::ToIfChanged(Expiry::Never),
        TtlOption::At(arg) => match ttl::deadline_ms(arg, now, "getex") {
            Ok(at) => ttl::expiry_at(at, now).map_or(Retime::Remove, Retime::ToIfChanged),
            Err(message) => return ctx.error(message),
        },
    };
    let (shared, counters, protocol) = (ctx.shared, ctx.counters, ctx.session.protocol);
    let (key, out) = ctx.key_and_out(1);
    let mut expiry_before = Expiry::Never;
    let outcome = touch::get_and_touch(&shared.core.store, key, retime, out, |item, out| {
        expiry_before = item.expiry();
        Reply::new(out, protocol).bulk(item.value());
    });
    count_read(counters, outcome == TouchOutcome::Touched);
    match outcome {
        TouchOutcome::Touched => wrote_retime(ctx, retime, expiry_before),
        TouchOutcome::NotFound => ctx.reply().null(),
        TouchOutcome::Refused(refusal) => ctx.refused(refusal),
    }
}

/// A string's value as a bulk reply; a large one is lent rather than copied when `lends`
/// (sent from item memory, see `store::loans` and `Ctx::lends`).
#[inline(always)]
fn bulk_value(reply: &mut Reply<'_>, item: &Item<'_>, lends: bool) {
    if lends {
        reply.bulk_or_lend(item.value(), |at| item.lend_value(at));
    } else {
        reply.bulk(item.value());
    }
}

pub(super) fn mget(ctx: &mut Ctx<'_>) {
    let (shared, counters, protocol) = (ctx.shared, ctx.counters, ctx.session.protocol);
    let lends = ctx.lends();
    let mut gets = Gets::new(&shared.core.store);
    let count = ctx.argc() - 1;
    ctx.reply().array(count);
    // In a large store, reads ahead as memcached's multiget: each key's buckets and item
    // are on their way before its turn.
    let mut ahead = (count > 1 && shared.core.store.reads_ahead()).then(ReadAhead::new);
    if let Some(ahead) = ahead.as_mut() {
        for index in 1..=count.min(BUCKETS_AHEAD) {
            gets.announce(ahead, ctx.key(index));
        }
    }
    for index in 1..=count {
        if let Some(ahead) = ahead.as_mut().filter(|_| index + BUCKETS_AHEAD <= count) {
            gets.announce(ahead, ctx.key(index + BUCKETS_AHEAD));
        }
        let (key, out) = ctx.key_and_out(index);
        let mut reply = Reply::new(out, protocol);
        let found = match ahead.as_mut() {
            Some(ahead) => gets.get_announced(ahead, key),
            None => gets.get(key),
        };
        match found {
            Some(item) => bulk_value(&mut reply, &item, lends),
            None => reply.null(),
        }
    }
    gets.finish(counters);
}

/// Checks every pair against what the store can hold (half the memory limit; the parser
/// already bounds each bulk to `proto-max-bulk-len`) before anything is written, so that a
/// value too large to store does not leave the command half applied.
fn pairs_fit(ctx: &mut Ctx<'_>) -> bool {
    let limit = super::PROTO_MAX_BULK_LEN.min(ctx.shared.core.store.memory_limit() / 2);
    let too_large =
        (1..ctx.argc()).step_by(2).any(|i| ctx.arg(i).len() + 2 + ctx.arg(i + 1).len() > limit);
    if too_large {
        ctx.error(error::OOM);
    }
    !too_large
}

/// Sets every pair. Not atomic across keys: a reader may see some pairs set and not
/// others while it runs (Redis runs it as one step).
pub(super) fn mset(ctx: &mut Ctx<'_>) {
    if !pairs_fit(ctx) {
        return;
    }
    if let Err(refusal) = set_pairs(ctx, Mode::Set) {
        return ctx.refused(refusal);
    }
    ctx.reply().ok();
}

/// Sets every pair if no key exists. The check and the writes are not one atomic step:
/// a key created by another client in between is not overwritten (each write is an
/// add), and then the reply is 0 although the other pairs were set.
pub(super) fn msetnx(ctx: &mut Ctx<'_>) {
    if !pairs_fit(ctx) {
        return;
    }
    let shared = ctx.shared;
    let any_exists = {
        let reader = shared.core.store.reader();
        (1..ctx.argc()).step_by(2).any(|i| reader.peek(ctx.key(i)).is_some())
    };
    if any_exists {
        return ctx.reply().integer(0);
    }
    // A key named twice: its last value is the one stored (as Redis, which sets each
    // pair in turn), and each add is still an add.
    let mut seen = std::collections::HashSet::new();
    let mut superseded = vec![false; ctx.argc()];
    for index in (1..ctx.argc()).step_by(2).rev() {
        superseded[index] = !seen.insert(ctx.arg(index));
    }
    match set_pairs_skipping(ctx, Mode::Add, &superseded) {
        Ok(all) => ctx.reply().integer(i64::from(all)),
        Err(refusal) => ctx.refused(refusal),
    }
}

/// Stores each pair with `mode`; returns whether every one was stored.
fn set_pairs(ctx: &mut Ctx<'_>, mode: Mode) -> Result<bool, Refusal> {
    set_pairs_skipping(ctx, mode, &[])
}

/// As [`set_pairs`], except that a pair whose key argument's index is marked in
/// `superseded` is not stored (a later pair sets that key) but counts as set.
fn set_pairs_skipping(ctx: &mut Ctx<'_>, mode: Mode, superseded: &[bool]) -> Result<bool, Refusal> {
    let shared = ctx.shared;
    let mut all = true;
    for index in (1..ctx.argc()).step_by(2) {
        bump(&ctx.counters.cmd_set, 1);
        let value = ctx.arg(index + 1);
        let stored = superseded.get(index).copied().unwrap_or(false)
            || store_plain(shared, ctx.key(index), value, Expiry::Never, mode)?;
        if stored {
            ctx.wrote(class::STRING, "set", index);
        }
        all &= stored;
    }
    Ok(all)
}

pub(super) fn strlen(ctx: &mut Ctx<'_>) {
    if holds_collection(ctx, 1) {
        return;
    }
    let shared = ctx.shared;
    let reader = shared.core.store.reader();
    let len = reader.get(ctx.key(1)).map_or(0, |item| item.value().len());
    ctx.reply().integer(len as i64);
}

pub(super) fn getrange(ctx: &mut Ctx<'_>) {
    let (Ok(start), Ok(end)) = (parse_i64(ctx.arg(2)), parse_i64(ctx.arg(3))) else {
        return ctx.error(error::NOT_INTEGER);
    };
    if holds_collection(ctx, 1) {
        return;
    }
    let shared = ctx.shared;
    let reader = shared.core.store.reader();
    let item = reader.get(ctx.key(1));
    let value = item.as_ref().map_or(&[][..], Item::value);
    let range = substring(value.len(), start, end);
    ctx.reply().bulk(range.map_or(&[][..], |r| &value[r]));
}

/// GETRANGE's index rules (`getrangeCommand`): negative counts from the end, both ends
/// inclusive and clamped; `None` for an empty result.
fn substring(len: usize, mut start: i64, mut end: i64) -> Option<std::ops::Range<usize>> {
    let len = len as i64;
    if start < 0 && end < 0 && start > end {
        return None;
    }
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    let start = start.max(0);
    let end = end.max(0).min(len - 1);
    (len > 0 && start <= end).then(|| start as usize..end as usize + 1)
}

/// APPEND: the store core's append, creating a missing key (as meta `ms MA N` does) with
/// flags 0 and no expiry; the reply is the new length.
pub(super) fn append(ctx: &mut Ctx<'_>) {
    if holds_collection(ctx, 1) {
        return;
    }
    let shared = ctx.shared;
    bump(&ctx.counters.cmd_set, 1);
    let value = ctx.arg(2);
    let write = storage::Write {
        key: ctx.key(1),
        value,
        flags: 0,
        expiry: Expiry::Never,
        mode: Mode::Append,
        options: super::redis_options(),
        vivify: Some(Expiry::Never),
        on_refusal: OnRefusal::KeepOld,
    };
    match storage::store(&shared.core.store, &write) {
        StoreOutcome::Stored(stored) => {
            ctx.wrote(class::STRING, "append", 1);
            ctx.reply().integer(stored.value_len as i64)
        }
        StoreOutcome::Refused(refusal) => ctx.refused(refusal),
        StoreOutcome::NotStored | StoreOutcome::Exists | StoreOutcome::NotFound => {
            unreachable!("an append that creates and compares nothing always stores")
        }
    }
}

/// A new value for a key, keeping the item's flags and expiry (a new key gets flags 0 and
/// no expiry).
pub(super) fn rewrite(current: Option<&Item<'_>>, value: Vec<u8>) -> Change {
    let flags = current.map_or(0, Item::flags);
    let expiry = current.map_or(Expiry::Never, Item::expiry);
    Change::Write { value, flags, expiry }
}

pub(super) fn setrange(ctx: &mut Ctx<'_>) {
    if holds_collection(ctx, 1) {
        return;
    }
    let offset = match parse_i64(ctx.arg(2)) {
        Err(e) => return ctx.error(e.message()),
        Ok(offset) if offset < 0 => return ctx.error("ERR offset is out of range"),
        Ok(offset) => offset as u64,
    };
    let shared = ctx.shared;
    bump(&ctx.counters.cmd_set, 1);
    let limit = super::PROTO_MAX_BULK_LEN as u64;
    let patch = ctx.arg(3);
    let key = ctx.key(1);
    let result = shared.core.store.modify_within(key, super::PROTO_MAX_BULK_LEN, |current| {
        let old = current.as_ref().map_or(&[][..], Item::value);
        if patch.is_empty() {
            return (Change::Keep, Ok(old.len()));
        }
        // Checked before anything is allocated: the offset may be huge.
        let end = offset + patch.len() as u64;
        let size = key.len() as u64 + end.max(old.len() as u64);
        if size > limit {
            return (
                Change::Keep,
                Err(StoreError::TooLarge { size: size as usize, max: limit as usize }),
            );
        }
        let (start, end) = (offset as usize, end as usize);
        let mut value = old.to_vec();
        if value.len() < end {
            value.resize(end, 0);
        }
        value[start..end].copy_from_slice(patch);
        let len = value.len();
        (rewrite(current.as_ref(), value), Ok(len))
    });
    match result.and_then(|(_, r)| r) {
        Ok(len) => {
            // An empty patch on a missing key creates nothing.
            if !patch.is_empty() {
                ctx.wrote(class::STRING, "setrange", 1);
            }
            ctx.reply().integer(len as i64)
        }
        // Over `proto-max-bulk-len` (the closure's own check), as Redis words it.
        Err(StoreError::TooLarge { max, .. }) if max == limit as usize => {
            ctx.error(STRING_TOO_LONG)
        }
        Err(e) => ctx.store_error(e),
    }
}

#[cfg(test)]
mod tests;
