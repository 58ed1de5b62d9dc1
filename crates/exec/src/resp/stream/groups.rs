//! The consumer-group commands: XGROUP CREATE / SETID / DESTROY / CREATECONSUMER /
//! DELCONSUMER, XACK, XPENDING, XCLAIM and XAUTOCLAIM.

use proto_resp::{
    args::{is_option, parse_i64},
    error, Reply,
};
use values::stream::{Group, StreamId, StreamValue};

use super::super::{keyevents::class, typed::Failure, Ctx};
use super::{changed, id, read, reply_entry, unchanged, write, Create};

/// Redis's `addReplySubcommandSyntaxError` for XGROUP, naming the subcommand as sent.
fn subcommand_error(ctx: &Ctx<'_>) -> String {
    format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try XGROUP HELP.",
        String::from_utf8_lossy(ctx.arg(1))
    )
}

const KEY_REQUIRED: &str = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.";

fn no_such_group(group: &[u8], key: &[u8]) -> String {
    format!(
        "NOGROUP No such consumer group '{}' for key name '{}'",
        String::from_utf8_lossy(group),
        String::from_utf8_lossy(key)
    )
}

fn no_key_or_group(key: &[u8], group: &[u8]) -> String {
    format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    )
}

/// XGROUP's trailing options: MKSTREAM (CREATE) and ENTRIESREAD (CREATE, SETID).
fn group_options(ctx: &Ctx<'_>) -> Result<(bool, Option<u64>), String> {
    let sub = ctx.arg(1);
    let (create, setid) = (sub.eq_ignore_ascii_case(b"create"), sub.eq_ignore_ascii_case(b"setid"));
    let (mut mkstream, mut entries_read) = (false, None);
    let mut i = 5;
    while i < ctx.argc() {
        if create && is_option(ctx.arg(i), "mkstream") {
            mkstream = true;
            i += 1;
        } else if (create || setid) && is_option(ctx.arg(i), "entriesread") && i + 1 < ctx.argc() {
            let n = parse_i64(ctx.arg(i + 1)).map_err(|_| error::NOT_INTEGER)?;
            if n < -1 {
                return Err("ERR value for ENTRIESREAD must be positive or -1".into());
            }
            entries_read = u64::try_from(n).ok();
            i += 2;
        } else {
            return Err(subcommand_error(ctx));
        }
    }
    Ok((mkstream, entries_read))
}

/// Replies with a group command's outcome: its error, or what `ok` replies.
fn finish<R>(
    ctx: &mut Ctx<'_>,
    result: Result<Result<R, String>, Failure>,
    ok: impl FnOnce(&mut Ctx<'_>, R),
) {
    match result {
        Err(failure) => ctx.failure(failure),
        Ok(Err(message)) => ctx.error(message),
        Ok(Ok(out)) => ok(ctx, out),
    }
}

/// XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD n]
pub(super) fn create(ctx: &mut Ctx<'_>) {
    let (mkstream, entries_read) = match group_options(ctx) {
        Ok(options) => options,
        Err(message) => return ctx.error(message),
    };
    if ctx.argc() > 8 {
        return ctx.error(subcommand_error(ctx));
    }
    let (group, id_arg) = (ctx.arg(3), ctx.arg(4));
    let parsed = if id_arg == b"$" { None } else { Some(id::parse_strict(id_arg, 0)) };
    let create = if mkstream { Create::Yes } else { Create::No };
    let result = write(ctx, 2, create, |stream| {
        let Some(stream) = stream else { return unchanged(Err(KEY_REQUIRED.to_owned())) };
        let last_id = match parsed {
            None => stream.last_id,
            Some(Some(id)) => id,
            Some(None) => return unchanged(Err(id::INVALID_ID.to_owned())),
        };
        if stream.groups.contains_key(group) {
            // (A stream MKSTREAM made cannot have it: this leaves an existing one as it was.)
            return unchanged(Err("BUSYGROUP Consumer Group name already exists".to_owned()));
        }
        stream.groups.insert(Box::from(group), Group::new(last_id, entries_read));
        changed(Ok(()))
    });
    finish(ctx, result, |ctx, ()| {
        ctx.wrote(class::STREAM, "xgroup-create", 2);
        ctx.reply().ok();
    });
}

/// Runs `f` on group argument 3 of key argument 2, with XGROUP's errors for a missing key
/// or group.
fn with_group<R>(
    ctx: &mut Ctx<'_>,
    mut f: impl FnMut(&mut StreamValue, &mut Group) -> Option<R>,
) -> Result<Result<Option<R>, String>, Failure> {
    let (key, group_name) = (ctx.arg(2), ctx.arg(3));
    write(ctx, 2, Create::No, |stream| {
        let Some(stream) = stream else { return unchanged(Err(KEY_REQUIRED.to_owned())) };
        let Some(mut group) = stream.groups.remove(group_name) else {
            return unchanged(Err(no_such_group(group_name, key)));
        };
        let out = f(stream, &mut group);
        stream.groups.insert(Box::from(group_name), group);
        match out {
            Some(out) => changed(Ok(Some(out))),
            None => unchanged(Ok(None)),
        }
    })
}

/// XGROUP SETID key group id|$ [ENTRIESREAD n]
pub(super) fn setid(ctx: &mut Ctx<'_>) {
    let (_, entries_read) = match group_options(ctx) {
        Ok(options) => options,
        Err(message) => return ctx.error(message),
    };
    if ctx.argc() != 5 && ctx.argc() != 7 {
        return ctx.error(subcommand_error(ctx));
    }
    let id_arg = ctx.arg(4);
    let parsed = if id_arg == b"$" { None } else { Some(id::parse(id_arg, 0)) };
    let result = with_group(ctx, |stream, group| {
        group.last_id = match parsed {
            None => stream.last_id,
            Some(Some(id)) => id,
            Some(None) => return Some(Err(())),
        };
        group.entries_read = entries_read;
        Some(Ok(()))
    });
    let result = result.map(|r| {
        r.and_then(|r| match r {
            Some(Err(())) => Err(id::INVALID_ID.to_owned()),
            _ => Ok(()),
        })
    });
    finish(ctx, result, |ctx, ()| {
        ctx.wrote(class::STREAM, "xgroup-setid", 2);
        ctx.reply().ok();
    });
}

/// XGROUP DESTROY key group
pub(super) fn destroy(ctx: &mut Ctx<'_>) {
    let group_name = ctx.arg(3);
    let result = write(ctx, 2, Create::No, |stream| {
        let Some(stream) = stream else { return unchanged(Err(KEY_REQUIRED.to_owned())) };
        match stream.groups.remove(group_name) {
            Some(_) => changed(Ok(true)),
            None => unchanged(Ok(false)),
        }
    });
    finish(ctx, result, |ctx, destroyed| {
        if destroyed {
            ctx.wrote(class::STREAM, "xgroup-destroy", 2);
        }
        ctx.reply().integer(i64::from(destroyed));
    });
}

/// XGROUP CREATECONSUMER key group consumer
pub(super) fn create_consumer(ctx: &mut Ctx<'_>) {
    let name = ctx.arg(4);
    let now_ms = crate::resp::now_unix_ms(ctx.shared);
    let result = with_group(ctx, |_, group| group.consumer(name, now_ms).1.then_some(()));
    finish(ctx, result, |ctx, created| {
        if created.is_some() {
            ctx.wrote(class::STREAM, "xgroup-createconsumer", 2);
        }
        ctx.reply().integer(i64::from(created.is_some()));
    });
}

/// XGROUP DELCONSUMER key group consumer: how many entries it had pending.
pub(super) fn delete_consumer(ctx: &mut Ctx<'_>) {
    let name = ctx.arg(4);
    let result = with_group(ctx, |_, group| group.delete_consumer(name));
    finish(ctx, result, |ctx, pending| {
        if pending.is_some() {
            ctx.wrote(class::STREAM, "xgroup-delconsumer", 2);
        }
        ctx.reply().integer(pending.unwrap_or(0) as i64);
    });
}

/// XACK key group id [id ...]
pub(super) fn xack(ctx: &mut Ctx<'_>) {
    let mut ids = Vec::with_capacity(ctx.argc() - 3);
    for i in 3..ctx.argc() {
        match id::parse_strict(ctx.arg(i), 0) {
            Some(id) => ids.push(id),
            None => return ctx.error(id::INVALID_ID),
        }
    }
    let group_name = ctx.arg(2);
    let result = write(ctx, 1, Create::No, |stream| {
        let Some(group) = stream.and_then(|s| s.groups.get_mut(group_name)) else {
            return unchanged(0);
        };
        match ids.iter().filter(|&&id| group.ack(id)).count() {
            0 => unchanged(0),
            n => changed(n),
        }
    });
    match result {
        Err(failure) => ctx.failure(failure),
        Ok(acked) => ctx.reply().integer(acked as i64),
    }
}

/// XPENDING's range form: [IDLE ms] start end count [consumer].
struct PendingRange {
    min_idle_ms: i64,
    start: StreamId,
    end: StreamId,
    count: usize,
    consumer: Option<usize>,
}

fn parse_pending_range(ctx: &Ctx<'_>) -> Result<Option<PendingRange>, String> {
    let argc = ctx.argc();
    if argc == 3 {
        return Ok(None);
    }
    if !(6..=9).contains(&argc) {
        return Err(error::SYNTAX.into());
    }
    let (mut at, mut min_idle_ms) = (3, 0);
    if is_option(ctx.arg(3), "idle") {
        min_idle_ms = parse_i64(ctx.arg(4)).map_err(|_| error::NOT_INTEGER)?;
        if argc < 8 {
            return Err(error::SYNTAX.into());
        }
        at += 2;
    }
    let count = parse_i64(ctx.arg(at + 2)).map_err(|_| error::NOT_INTEGER)?.max(0) as usize;
    let (mut start, start_ex) = id::parse_interval(ctx.arg(at), 0).ok_or(id::INVALID_ID)?;
    if start_ex {
        start = start.next().ok_or("ERR invalid start ID for the interval")?;
    }
    let (mut end, end_ex) = id::parse_interval(ctx.arg(at + 1), u64::MAX).ok_or(id::INVALID_ID)?;
    if end_ex {
        end = end.prev().ok_or("ERR invalid end ID for the interval")?;
    }
    let consumer = (at + 3 < argc).then_some(at + 3);
    Ok(Some(PendingRange { min_idle_ms, start, end, count, consumer }))
}

/// XPENDING key group [[IDLE ms] start end count [consumer]]
pub(super) fn xpending(ctx: &mut Ctx<'_>) {
    let range = match parse_pending_range(ctx) {
        Ok(range) => range,
        Err(message) => return ctx.error(message),
    };
    let (key, group_name) = (ctx.arg(1), ctx.arg(2));
    let consumer = range.as_ref().and_then(|r| r.consumer).map(|at| ctx.arg(at));
    let now_ms = crate::resp::now_unix_ms(ctx.shared) as i64;
    let result = read(ctx, 1, |stream, reply| {
        let Some(group) = stream.and_then(|s| s.groups.get(group_name)) else { return false };
        match &range {
            None => pending_summary(group, reply),
            Some(range) => pending_entries(group, range, consumer, now_ms, reply),
        }
        true
    });
    match result {
        Err(failure) => ctx.failure(failure),
        Ok(false) => ctx.error(no_key_or_group(key, group_name)),
        Ok(true) => {}
    }
}

fn pending_summary(group: &Group, reply: &mut Reply<'_>) {
    reply.array(4);
    reply.integer(group.pel.len() as i64);
    let (Some((first, _)), Some((last, _))) =
        (group.pel.first_key_value(), group.pel.last_key_value())
    else {
        reply.null();
        reply.null();
        return reply.null_array();
    };
    reply.bulk(first.to_string().as_bytes());
    reply.bulk(last.to_string().as_bytes());
    let owners: Vec<_> = group.consumers.iter().filter(|(_, c)| !c.pel.is_empty()).collect();
    reply.array(owners.len());
    for (name, consumer) in owners {
        reply.array(2);
        reply.bulk(name);
        reply.bulk(consumer.pel.len().to_string().as_bytes());
    }
}

fn pending_entries(
    group: &Group,
    range: &PendingRange,
    consumer: Option<&[u8]>,
    now_ms: i64,
    reply: &mut Reply<'_>,
) {
    let ids: Box<dyn Iterator<Item = StreamId> + '_> = match consumer {
        Some(name) => match group.consumers.get(name) {
            Some(c) if range.start <= range.end => {
                Box::new(c.pel.range(range.start..=range.end).copied())
            }
            _ => return reply.array(0),
        },
        None if range.start <= range.end => {
            Box::new(group.pel.range(range.start..=range.end).map(|(id, _)| *id))
        }
        None => return reply.array(0),
    };
    let mut rows = Vec::new();
    for id in ids {
        if rows.len() >= range.count {
            break;
        }
        let Some(pending) = group.pel.get(&id) else { continue };
        let idle = now_ms - pending.delivery_time_ms as i64;
        if range.min_idle_ms != 0 && idle < range.min_idle_ms {
            continue;
        }
        rows.push((id, pending, idle.max(0)));
    }
    reply.array(rows.len());
    for (id, pending, idle) in rows {
        reply.array(4);
        reply.bulk(id.to_string().as_bytes());
        reply.bulk(&pending.consumer);
        reply.integer(idle);
        reply.integer(pending.delivery_count as i64);
    }
}

/// XCLAIM's options.
struct Claim {
    ids: Vec<StreamId>,
    delivery_ms: Option<i64>,
    retry_count: Option<i64>,
    force: bool,
    justid: bool,
    last_id: StreamId,
}

fn parse_claim(ctx: &Ctx<'_>, now_ms: i64) -> Result<Claim, String> {
    let mut claim = Claim {
        ids: Vec::new(),
        delivery_ms: None,
        retry_count: None,
        force: false,
        justid: false,
        last_id: StreamId::MIN,
    };
    let mut j = 5;
    while j < ctx.argc() {
        match id::parse_strict(ctx.arg(j), 0) {
            Some(id) => claim.ids.push(id),
            None => break,
        }
        j += 1;
    }
    let number = |arg: &[u8], what: &str| {
        parse_i64(arg).map_err(|_| format!("ERR Invalid {what} option argument for XCLAIM"))
    };
    while j < ctx.argc() {
        let (opt, more) = (ctx.arg(j), ctx.argc() - 1 - j);
        if is_option(opt, "force") {
            claim.force = true;
        } else if is_option(opt, "justid") {
            claim.justid = true;
        } else if is_option(opt, "idle") && more > 0 {
            j += 1;
            claim.delivery_ms = Some(now_ms.wrapping_sub(number(ctx.arg(j), "IDLE")?));
        } else if is_option(opt, "time") && more > 0 {
            j += 1;
            claim.delivery_ms = Some(number(ctx.arg(j), "TIME")?);
        } else if is_option(opt, "retrycount") && more > 0 {
            j += 1;
            claim.retry_count = Some(number(ctx.arg(j), "RETRYCOUNT")?);
        } else if is_option(opt, "lastid") && more > 0 {
            j += 1;
            claim.last_id = id::parse_strict(ctx.arg(j), 0).ok_or(id::INVALID_ID)?;
        } else {
            return Err(format!(
                "ERR Unrecognized XCLAIM option '{}'",
                String::from_utf8_lossy(opt)
            ));
        }
        j += 1;
    }
    Ok(claim)
}

/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME ms] [RETRYCOUNT n]
/// [FORCE] [JUSTID] [LASTID id]
pub(super) fn xclaim(ctx: &mut Ctx<'_>) {
    let (key, group_name, consumer) = (ctx.arg(1), ctx.arg(2), ctx.arg(3));
    let exists =
        read(ctx, 1, |stream, _| stream.is_some_and(|s| s.groups.contains_key(group_name)));
    match exists {
        Err(failure) => return ctx.failure(failure),
        Ok(false) => return ctx.error(no_key_or_group(key, group_name)),
        Ok(true) => {}
    }
    let Ok(min_idle_ms) = parse_i64(ctx.arg(4)) else {
        return ctx.error("ERR Invalid min-idle-time argument for XCLAIM");
    };
    let now_ms = crate::resp::now_unix_ms(ctx.shared) as i64;
    let claim = match parse_claim(ctx, now_ms) {
        Ok(claim) => claim,
        Err(message) => return ctx.error(message),
    };
    let delivery_ms = match claim.delivery_ms {
        Some(at) if at >= 0 && at <= now_ms => at,
        _ => now_ms,
    };
    let protocol = ctx.session.protocol;
    let result = write(ctx, 1, Create::No, |stream| {
        let mut out = Vec::new();
        let mut reply = Reply::new(&mut out, protocol);
        let Some(stream) = stream else { return unchanged((out, false)) };
        let Some(mut group) = stream.groups.remove(group_name) else {
            return unchanged((out, false));
        };
        if claim.last_id > group.last_id {
            group.last_id = claim.last_id;
        }
        let claimed = claim_ids(
            stream,
            &mut group,
            consumer,
            &claim,
            min_idle_ms.max(0),
            now_ms,
            delivery_ms,
            &mut reply,
        );
        stream.groups.insert(Box::from(group_name), group);
        changed((out, claimed))
    });
    reply_claimed(ctx, result);
}

/// XCLAIM's claims, replied; whether it made the consumer.
#[allow(clippy::too_many_arguments)]
fn claim_ids(
    stream: &StreamValue,
    group: &mut Group,
    consumer: &[u8],
    claim: &Claim,
    min_idle_ms: i64,
    now_ms: i64,
    delivery_ms: i64,
    reply: &mut Reply<'_>,
) -> bool {
    let mut rows: Vec<StreamId> = Vec::new();
    let mut created = None;
    for &id in &claim.ids {
        let entry = stream.get(id);
        if entry.is_none() {
            group.ack(id);
            continue;
        }
        let fresh = !group.pel.contains_key(&id);
        if fresh && !claim.force {
            continue;
        }
        if !fresh {
            let pending = &group.pel[&id];
            if min_idle_ms != 0 && now_ms - (pending.delivery_time_ms as i64) < min_idle_ms {
                continue;
            }
        }
        if created.is_none() {
            created = Some(group.consumer(consumer, now_ms as u64).1);
            if let Some(c) = group.consumers.get_mut(consumer) {
                c.seen_time_ms = now_ms as u64;
            }
        }
        if fresh {
            group.deliver(id, consumer, now_ms as u64);
        } else {
            group.hand_over(id, consumer);
        }
        let pending = group.pel.get_mut(&id).expect("pending now");
        pending.delivery_time_ms = delivery_ms as u64;
        match claim.retry_count {
            Some(n) if n >= 0 => pending.delivery_count = n as u64,
            _ if !claim.justid => pending.delivery_count += 1,
            _ => {}
        }
        rows.push(id);
    }
    reply.array(rows.len());
    for id in rows {
        match (claim.justid, stream.get(id)) {
            (false, Some(entry)) => reply_entry(reply, entry),
            _ => reply.bulk(id.to_string().as_bytes()),
        }
    }
    created.unwrap_or(false)
}

/// XAUTOCLAIM key group consumer min-idle-time start [COUNT n] [JUSTID]
pub(super) fn xautoclaim(ctx: &mut Ctx<'_>) {
    let Ok(min_idle_ms) = parse_i64(ctx.arg(4)) else {
        return ctx.error("ERR Invalid min-idle-time argument for XAUTOCLAIM");
    };
    let Some((mut start, start_ex)) = id::parse_interval(ctx.arg(5), 0) else {
        return ctx.error(id::INVALID_ID);
    };
    if start_ex {
        match start.next() {
            Some(next) => start = next,
            None => return ctx.error("ERR invalid start ID for the interval"),
        }
    }
    let (mut count, mut justid) = (100i64, false);
    let mut j = 6;
    while j < ctx.argc() {
        let (opt, more) = (ctx.arg(j), ctx.argc() - 1 - j);
        if is_option(opt, "count") && more > 0 {
            const MAX_COUNT: i64 = i64::MAX / 16;
            match parse_i64(ctx.arg(j + 1)) {
                Ok(n) if (1..=MAX_COUNT).contains(&n) => count = n,
                _ => return ctx.error("ERR COUNT must be > 0"),
            }
            j += 1;
        } else if is_option(opt, "justid") {
            justid = true;
        } else {
            return ctx.error(error::SYNTAX);
        }
        j += 1;
    }
    let (key, group_name, consumer) = (ctx.arg(1), ctx.arg(2), ctx.arg(3));
    let exists =
        read(ctx, 1, |stream, _| stream.is_some_and(|s| s.groups.contains_key(group_name)));
    match exists {
        Err(failure) => return ctx.failure(failure),
        Ok(false) => return ctx.error(no_key_or_group(key, group_name)),
        Ok(true) => {}
    }
    // Redis allocates room for `count` deleted IDs first, and fails when it cannot.
    if count as u128 * 16 > 1 << 40 {
        return ctx
            .error("ERR Insufficient memory, failed allocating transient memory, COUNT too high.");
    }
    let now_ms = crate::resp::now_unix_ms(ctx.shared) as i64;
    let protocol = ctx.session.protocol;
    let auto =
        AutoClaim { start, count: count as u64, justid, min_idle_ms: min_idle_ms.max(0), now_ms };
    let result = write(ctx, 1, Create::No, |stream| {
        let mut out = Vec::new();
        let mut reply = Reply::new(&mut out, protocol);
        let Some(stream) = stream else { return unchanged((out, false)) };
        let Some(mut group) = stream.groups.remove(group_name) else {
            return unchanged((out, false));
        };
        let created = auto_claim(stream, &mut group, consumer, &auto, &mut reply);
        stream.groups.insert(Box::from(group_name), group);
        changed((out, created))
    });
    reply_claimed(ctx, result);
}

struct AutoClaim {
    start: StreamId,
    count: u64,
    justid: bool,
    min_idle_ms: i64,
    now_ms: i64,
}

/// XAUTOCLAIM's scan of the PEL from `start`: at most `count` claimed or dropped (an
/// entry deleted from the stream), `count * 10` looked at.
fn auto_claim(
    stream: &StreamValue,
    group: &mut Group,
    consumer: &[u8],
    auto: &AutoClaim,
    reply: &mut Reply<'_>,
) -> bool {
    let (mut count, mut attempts) = (auto.count, auto.count.saturating_mul(10));
    let (mut claimed, mut deleted) = (Vec::new(), Vec::new());
    let mut created = None;
    let mut cursor = auto.start;
    let mut next = None;
    while let Some((&id, pending)) = group.pel.range(cursor..).next() {
        if attempts == 0 || count == 0 {
            next = Some(id);
            break;
        }
        attempts -= 1;
        let idle = auto.now_ms - pending.delivery_time_ms as i64;
        cursor = match id.next() {
            Some(after) => after,
            None => StreamId::MAX,
        };
        if stream.get(id).is_none() {
            group.ack(id);
            deleted.push(id);
            count -= 1;
        } else if auto.min_idle_ms == 0 || idle >= auto.min_idle_ms {
            if created.is_none() {
                created = Some(group.consumer(consumer, auto.now_ms as u64).1);
                if let Some(c) = group.consumers.get_mut(consumer) {
                    c.seen_time_ms = auto.now_ms as u64;
                }
            }
            group.hand_over(id, consumer);
            let pending = group.pel.get_mut(&id).expect("pending");
            pending.delivery_time_ms = auto.now_ms as u64;
            if !auto.justid {
                pending.delivery_count += 1;
            }
            claimed.push(id);
            count -= 1;
        }
        if id == StreamId::MAX {
            break;
        }
    }
    reply.array(3);
    reply.bulk(next.unwrap_or(StreamId::MIN).to_string().as_bytes());
    reply.array(claimed.len());
    for id in claimed {
        match (auto.justid, stream.get(id)) {
            (false, Some(entry)) => reply_entry(reply, entry),
            _ => reply.bulk(id.to_string().as_bytes()),
        }
    }
    reply.array(deleted.len());
    deleted.iter().for_each(|id| reply.bulk(id.to_string().as_bytes()));
    created.unwrap_or(false)
}

/// XCLAIM's and XAUTOCLAIM's end: the reply composed under the lock, and the consumer's
/// creation as an event when the claim made it.
fn reply_claimed(ctx: &mut Ctx<'_>, result: Result<(Vec<u8>, bool), Failure>) {
    match result {
        Err(failure) => ctx.failure(failure),
        Ok((out, created)) => {
            if created {
                ctx.wrote(class::STREAM, "xgroup-createconsumer", 1);
            }
            ctx.out.extend_from_slice(&out);
        }
    }
}
