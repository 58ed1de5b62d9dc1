//! The events of the collection commands (hashes, lists, sets, sorted sets, bitmaps and
//! HyperLogLogs), told from the command and its reply once it ran.
//!
//! Why here and not in each handler: a handler has several return paths (large and small
//! encodings, spliced edits), while the reply says exactly whether Redis would have sent
//! the event (a count above zero, a popped element, `+OK`), and a lookup after the
//! command says whether the key went with its last element (`del`). This runs only when
//! some keyspace event is on and the command writes; the string and generic-key commands
//! and ZADD and ZINCRBY (one handler), whose replies do not tell, name their events in their handlers.

use proto_resp::{parse_reply, Value};

use super::class;
use crate::resp::Ctx;

/// What a rule must know from before the command: whether the destination existed (a
/// STORE command or LTRIM that leaves it empty deletes it, and Redis sends `del` only if
/// there was something to delete).
pub(crate) struct Before {
    existed: bool,
    /// The key arguments absent before the command, when `new` events are on (`n`).
    absent: Vec<usize>,
}

/// The key argument whose existence before the command matters, for the commands that
/// need it.
fn watched_key(name: &str) -> Option<usize> {
    match name {
        "ltrim" | "sinterstore" | "sunionstore" | "sdiffstore" | "zunionstore" | "zinterstore"
        | "zdiffstore" | "zrangestore" => Some(1),
        "bitop" => Some(2),
        _ => None,
    }
}

pub(crate) fn before(ctx: &Ctx<'_>) -> Before {
    let existed = watched_key(ctx.spec.name).is_some_and(|index| exists(ctx, ctx.arg(index)));
    let absent = if ctx.shared.redis.keyspace_events.wants(class::NEW) {
        key_indexes(ctx).filter(|&index| !exists(ctx, ctx.arg(index))).collect()
    } else {
        Vec::new()
    };
    Before { existed, absent }
}

/// The argument indexes of the command's keys, by its table's first, last and step
/// (bounded by the arguments given).
fn key_indexes<'c>(ctx: &'c Ctx<'_>) -> impl Iterator<Item = usize> + 'c {
    let spec = ctx.spec;
    let argc = ctx.argc() as i32;
    let last = if spec.last_key < 0 { argc + spec.last_key } else { spec.last_key.min(argc - 1) };
    let (first, step) = (spec.first_key, spec.step.max(1));
    (first.max(1)..=last).step_by(step as usize).filter(move |_| first > 0).map(|i| i as usize)
}

/// `new` events (Redis 7's `n` class): each key the command created. Redis sends it as
/// the key is added, before the command's own event; here it follows the command, as
/// creation is told from the key's absence before and presence after.
fn new_keys(ctx: &Ctx<'_>, before: &Before) {
    for &index in &before.absent {
        if exists(ctx, ctx.arg(index)) {
            ctx.notify(class::NEW, "new", index);
        }
    }
}

fn exists(ctx: &Ctx<'_>, key: &[u8]) -> bool {
    let mut scratch = Vec::new();
    let stored = crate::keyspace::encode(ctx.session.db, key, &mut scratch);
    ctx.shared.core.store.reader().peek(stored).is_some()
}

/// Sends the events of the command `ctx` ran, whose reply starts at `reply_at` in its
/// output.
pub(crate) fn after(ctx: &Ctx<'_>, before: &Before, reply_at: usize) {
    new_keys(ctx, before);
    let Ok((reply, _)) = parse_reply(&ctx.out[reply_at..]) else { return };
    if matches!(reply, Value::Error(_) | Value::BulkError(_)) {
        return;
    }
    let name = ctx.spec.name;
    let count = match reply {
        Value::Integer(n) => n,
        _ => 0,
    };
    let found = !reply.is_null() && !matches!(&reply, Value::Array(a) if a.is_empty());
    match name {
        "hset" | "hmset" => ctx.notify(class::HASH, "hset", 1),
        "hsetnx" | "hsetex" if count > 0 => ctx.notify(class::HASH, "hset", 1),
        "hincrby" | "hincrbyfloat" => ctx.notify(class::HASH, name, 1),
        "hdel" if count > 0 => removed(ctx, class::HASH, name, 1),
        "hgetdel" if any_element(&reply, |v| !v.is_null()) => removed(ctx, class::HASH, name, 1),
        "hexpire" | "hpexpire" | "hexpireat" | "hpexpireat" => field_expiry(ctx, &reply),
        "hpersist" if any_element(&reply, |v| *v == Value::Integer(1)) => {
            ctx.notify(class::HASH, "hpersist", 1);
        }
        "hgetex" if any_element(&reply, |v| !v.is_null()) => hgetex(ctx),
        "lpush" | "rpush" | "lset" => ctx.notify(class::LIST, name, 1),
        "linsert" if count > 0 => ctx.notify(class::LIST, name, 1),
        "lpushx" | "rpushx" if count > 0 => ctx.notify(class::LIST, &name[..5], 1),
        "lpop" | "rpop" if found => removed(ctx, class::LIST, name, 1),
        "lrem" if count > 0 => removed(ctx, class::LIST, name, 1),
        "ltrim" if before.existed => removed(ctx, class::LIST, name, 1),
        "rpoplpush" if found => {
            ctx.notify(class::LIST, "lpush", 2);
            removed(ctx, class::LIST, "rpop", 1);
        }
        "lmove" if found => {
            let (from_left, to_left) = (is_left(ctx.arg(3)), is_left(ctx.arg(4)));
            ctx.notify(class::LIST, if to_left { "lpush" } else { "rpush" }, 2);
            removed(ctx, class::LIST, if from_left { "lpop" } else { "rpop" }, 1);
        }
        "lmpop" if found => popped_from(ctx, &reply, class::LIST, ["lpop", "rpop"], 1),
        "blmpop" if found => popped_from(ctx, &reply, class::LIST, ["lpop", "rpop"], 2),
        "blpop" | "brpop" if found => popped_key(ctx, &reply, class::LIST, &name[1..]),
        "bzpopmin" | "bzpopmax" if found => popped_key(ctx, &reply, class::ZSET, &name[1..]),
        "brpoplpush" if found => {
            ctx.notify(class::LIST, "lpush", 2);
            removed(ctx, class::LIST, "rpop", 1);
        }
        "blmove" if found => {
            let (from_left, to_left) = (is_left(ctx.arg(3)), is_left(ctx.arg(4)));
            ctx.notify(class::LIST, if to_left { "lpush" } else { "rpush" }, 2);
            removed(ctx, class::LIST, if from_left { "lpop" } else { "rpop" }, 1);
        }
        "sadd" if count > 0 => ctx.notify(class::SET, name, 1),
        "srem" if count > 0 => removed(ctx, class::SET, name, 1),
        "spop" if found => removed(ctx, class::SET, name, 1),
        "smove" if count > 0 => {
            removed(ctx, class::SET, "srem", 1);
            ctx.notify(class::SET, "sadd", 2);
        }
        "sinterstore" | "sunionstore" | "sdiffstore" => stored(ctx, before, class::SET, count, 1),
        "zrem" | "zremrangebyscore" | "zremrangebyrank" | "zremrangebylex" if count > 0 => {
            removed(ctx, class::ZSET, name, 1);
        }
        "zpopmin" | "zpopmax" if found => removed(ctx, class::ZSET, name, 1),
        "zmpop" if found => popped_from(ctx, &reply, class::ZSET, ["zpopmin", "zpopmax"], 1),
        "bzmpop" if found => popped_from(ctx, &reply, class::ZSET, ["zpopmin", "zpopmax"], 2),
        "zunionstore" | "zinterstore" | "zdiffstore" | "zrangestore" => {
            stored(ctx, before, class::ZSET, count, 1);
        }
        "setbit" => ctx.notify(class::STRING, name, 1),
        "bitfield" if writes_bits(ctx) => ctx.notify(class::STRING, "setbit", 1),
        "bitop" if count > 0 => ctx.notify(class::STRING, "set", 2),
        "bitop" if before.existed => ctx.notify(class::GENERIC, "del", 2),
        "pfadd" if count > 0 => ctx.notify(class::STRING, name, 1),
        "pfmerge" => ctx.notify(class::STRING, "pfadd", 1),
        _ => {}
    }
}

/// An element went from key argument `index`: the command's event, and `del` if that was
/// the last one.
fn removed(ctx: &Ctx<'_>, class: u32, event: &str, index: usize) {
    ctx.notify(class, event, index);
    if !exists(ctx, ctx.arg(index)) {
        ctx.notify(class::GENERIC, "del", index);
    }
}

/// A STORE command: its event if it stored a non-empty result, `del` if it deleted an
/// existing destination instead.
fn stored(ctx: &Ctx<'_>, before: &Before, class: u32, count: i64, index: usize) {
    if count > 0 {
        ctx.notify(class, ctx.spec.name, index);
    } else if before.existed {
        ctx.notify(class::GENERIC, "del", index);
    }
}

/// BLPOP, BRPOP, BZPOPMIN, BZPOPMAX: the reply names the key popped from first.
fn popped_key(ctx: &Ctx<'_>, reply: &Value<'_>, class: u32, event: &str) {
    let Value::Array(parts) = reply else { return };
    let Some(key) = parts.first().and_then(Value::as_bytes) else { return };
    ctx.notify_key(class, event, key);
    if !exists(ctx, key) {
        ctx.notify_key(class::GENERIC, "del", key);
    }
}

/// LMPOP and ZMPOP (`numkeys` at argument 1), BLMPOP and BZMPOP (at 2, after the timeout):
/// the reply names the key popped from; the direction follows the keys.
fn popped_from(ctx: &Ctx<'_>, reply: &Value<'_>, class: u32, events: [&str; 2], at: usize) {
    let Value::Array(parts) = reply else { return };
    let Some(key) = parts.first().and_then(Value::as_bytes) else { return };
    let numkeys = std::str::from_utf8(ctx.arg(at)).ok().and_then(|n| n.parse::<usize>().ok());
    let Some(where_at) = numkeys.map(|n| n + at + 1).filter(|&w| w < ctx.cmd.argc()) else {
        return;
    };
    let first = ctx.arg(where_at);
    let event =
        if is_left(first) || first.eq_ignore_ascii_case(b"min") { events[0] } else { events[1] };
    ctx.notify_key(class, event, key);
    if !exists(ctx, key) {
        ctx.notify_key(class::GENERIC, "del", key);
    }
}

/// HEXPIRE and its kin: per-field codes; 1 set a time to live, 2 deleted the field (a
/// time already past).
fn field_expiry(ctx: &Ctx<'_>, reply: &Value<'_>) {
    if any_element(reply, |v| *v == Value::Integer(1)) {
        ctx.notify(class::HASH, "hexpire", 1);
    }
    if any_element(reply, |v| *v == Value::Integer(2)) {
        removed(ctx, class::HASH, "hexpired", 1);
    }
}

/// HGETEX with a new time to live (`hexpire`) or PERSIST (`hpersist`).
fn hgetex(ctx: &Ctx<'_>) {
    let options = (2..ctx.cmd.argc()).map(|i| ctx.arg(i));
    for option in options {
        if [&b"ex"[..], b"px", b"exat", b"pxat"].iter().any(|o| o.eq_ignore_ascii_case(option)) {
            return ctx.notify(class::HASH, "hexpire", 1);
        }
        if option.eq_ignore_ascii_case(b"persist") {
            return ctx.notify(class::HASH, "hpersist", 1);
        }
        if option.eq_ignore_ascii_case(b"fields") {
            return;
        }
    }
}

fn any_element(reply: &Value<'_>, test: impl Fn(&Value<'_>) -> bool) -> bool {
    matches!(reply, Value::Array(items) if items.iter().any(test))
}

fn is_left(word: &[u8]) -> bool {
    word.eq_ignore_ascii_case(b"left")
}

/// BITFIELD with a SET or INCRBY operation (GET alone changes nothing).
fn writes_bits(ctx: &Ctx<'_>) -> bool {
    (2..ctx.cmd.argc()).any(|i| {
        ctx.arg(i).eq_ignore_ascii_case(b"set") || ctx.arg(i).eq_ignore_ascii_case(b"incrby")
    })
}
