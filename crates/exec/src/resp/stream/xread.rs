//! XREAD and XREADGROUP: entries past given IDs from several streams, and a group's
//! delivery of them to a consumer (its pending entries list).

use proto_resp::{
    args::{is_option, parse_i64},
    error, Reply,
};
use values::stream::{Group, StreamId, StreamValue};

use super::super::{blocking, keyevents::class, typed::Failure, Ctx};
use super::{changed, id, read, reply_entry, unchanged, write, Create};
use crate::Flow;

/// What XREAD or XREADGROUP asked for.
pub(super) struct ReadArgs {
    /// 0: no limit.
    pub(super) count: usize,
    /// `Some` when BLOCK was given (milliseconds; 0 is forever).
    pub(super) block_ms: Option<u64>,
    /// The first key argument; the IDs follow the keys.
    pub(super) keys_at: usize,
    pub(super) streams: usize,
    /// XREADGROUP's group and consumer arguments.
    pub(super) group: Option<(usize, usize)>,
    pub(super) noack: bool,
}

/// An ID as XREAD and XREADGROUP take it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum From {
    /// Entries after this ID (`$` resolved).
    After(StreamId),
    /// XREADGROUP's `>`: entries never delivered to the group.
    New,
}

const UNBALANCED: &str =
    "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.";

pub(super) fn parse(ctx: &Ctx<'_>, grouped: bool) -> Result<ReadArgs, String> {
    let mut args =
        ReadArgs { count: 0, block_ms: None, keys_at: 0, streams: 0, group: None, noack: false };
    let mut i = 1;
    while i < ctx.argc() {
        let (opt, more) = (ctx.arg(i), ctx.argc() - 1 - i);
        if is_option(opt, "block") && more > 0 {
            if ctx.session.in_script {
                let sent = String::from_utf8_lossy(ctx.arg(0)).into_owned();
                return Err(format!(
                    "ERR {sent} command is not allowed with BLOCK option from scripts"
                ));
            }
            i += 1;
            let ms = parse_i64(ctx.arg(i))
                .map_err(|_| "ERR timeout is not an integer or out of range")?;
            if ms < 0 {
                return Err("ERR timeout is negative".into());
            }
            args.block_ms = Some(ms as u64);
        } else if is_option(opt, "count") && more > 0 {
            i += 1;
            args.count = parse_i64(ctx.arg(i)).map_err(|_| error::NOT_INTEGER)?.max(0) as usize;
        } else if is_option(opt, "streams") && more > 0 {
            let rest = ctx.argc() - (i + 1);
            if !rest.is_multiple_of(2) {
                return Err(UNBALANCED.into());
            }
            (args.keys_at, args.streams) = (i + 1, rest / 2);
            break;
        } else if is_option(opt, "group") && more >= 2 {
            if !grouped {
                return Err("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.".into());
            }
            args.group = Some((i + 1, i + 2));
            i += 2;
        } else if is_option(opt, "noack") {
            if !grouped {
                return Err("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.".into());
            }
            args.noack = true;
        } else {
            return Err(error::SYNTAX.into());
        }
        i += 1;
    }
    if args.keys_at == 0 {
        return Err(error::SYNTAX.into());
    }
    if grouped && args.group.is_none() {
        return Err("ERR Missing GROUP option for XREADGROUP".into());
    }
    Ok(args)
}

/// Checks every key (type, group) and resolves every ID, as Redis does before serving
/// any: the error of the first that fails.
pub(super) fn resolve(ctx: &mut Ctx<'_>, args: &ReadArgs) -> Result<Vec<From>, String> {
    let mut froms = Vec::with_capacity(args.streams);
    for n in 0..args.streams {
        let (key_at, id_at) = (args.keys_at + n, args.keys_at + args.streams + n);
        let group_name = args.group.map(|(g, _)| ctx.arg(g));
        let looked = read(ctx, key_at, |stream, _| {
            let missing_group =
                group_name.is_some_and(|g| stream.is_none_or(|s| !s.groups.contains_key(g)));
            (stream.map(|s| s.last_id), missing_group)
        });
        let (last_id, missing_group) = match looked {
            Err(Failure::WrongType) => return Err(error::WRONGTYPE.into()),
            Err(Failure::Store(_)) => return Err(error::OOM.into()),
            Ok(found) => found,
        };
        if missing_group {
            return Err(super::no_group(ctx.arg(key_at), group_name.unwrap_or_default()));
        }
        let arg = ctx.arg(id_at);
        froms.push(match arg {
            b"$" if args.group.is_some() => return Err("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.".into()),
            b"$" => From::After(last_id.unwrap_or_default()),
            b">" if args.group.is_none() => return Err("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.".into()),
            b">" => From::New,
            _ => From::After(id::parse_strict(arg, 0).ok_or(id::INVALID_ID)?),
        });
    }
    Ok(froms)
}

/// Serves what can be served now; replies and returns whether any stream had entries.
/// Nothing is replied when none had.
pub(super) fn serve(ctx: &mut Ctx<'_>, args: &ReadArgs, froms: &[From]) -> Result<bool, Failure> {
    let protocol = ctx.session.protocol;
    let now_ms = crate::resp::now_unix_ms(ctx.shared);
    let mut served: Vec<Vec<u8>> = Vec::new();
    for (n, &from) in froms.iter().enumerate() {
        let key_at = args.keys_at + n;
        let mut out = Vec::new();
        let any = match args.group {
            None => read(ctx, key_at, |stream, _| {
                let mut reply = Reply::new(&mut out, protocol);
                stream.is_some_and(|s| read_plain(s, from, args.count, &mut reply))
            })?,
            Some((group_at, consumer_at)) => {
                let (group, consumer) = (ctx.arg(group_at), ctx.arg(consumer_at));
                let delivered = write(ctx, key_at, Create::No, |stream| {
                    out.clear();
                    let mut reply = Reply::new(&mut out, protocol);
                    let Some(stream) = stream else { return unchanged((false, false)) };
                    let done = deliver(stream, group, consumer, from, args, now_ms, &mut reply);
                    if done.0 {
                        changed(done)
                    } else {
                        unchanged(done)
                    }
                })?;
                if delivered.1 {
                    ctx.wrote(class::STREAM, "xgroup-createconsumer", key_at);
                }
                delivered.0
            }
        };
        if any {
            let mut head = Vec::new();
            let mut reply = Reply::new(&mut head, protocol);
            if protocol == proto_resp::Protocol::Resp2 {
                reply.array(2);
            }
            reply.bulk(ctx.arg(key_at));
            head.extend_from_slice(&out);
            served.push(head);
        }
    }
    if served.is_empty() {
        return Ok(false);
    }
    let mut reply = ctx.reply();
    match protocol {
        proto_resp::Protocol::Resp2 => reply.array(served.len()),
        _ => reply.map(served.len()),
    }
    served.iter().for_each(|bytes| ctx.out.extend_from_slice(bytes));
    Ok(true)
}

/// XREAD on one stream: its entries after `from`, if any.
fn read_plain(stream: &StreamValue, from: From, count: usize, reply: &mut Reply<'_>) -> bool {
    let From::After(after) = from else { return false };
    let Some(start) = after.next() else { return false };
    let has = stream.last().is_some_and(|last| last.id > after);
    if !has {
        return false;
    }
    let limit = if count == 0 { usize::MAX } else { count };
    let entries: Vec<_> = stream.range(start, StreamId::MAX).take(limit).collect();
    reply.array(entries.len());
    entries.into_iter().for_each(|entry| reply_entry(reply, entry));
    true
}

/// XREADGROUP on one stream: (whether it served, whether it made the consumer).
fn deliver(
    stream: &mut StreamValue,
    group_name: &[u8],
    consumer: &[u8],
    from: From,
    args: &ReadArgs,
    now_ms: u64,
    reply: &mut Reply<'_>,
) -> (bool, bool) {
    let Some(mut group) = stream.groups.remove(group_name) else { return (false, false) };
    let served = match from {
        From::After(after) => {
            let created = touch_consumer(&mut group, consumer, now_ms);
            history(stream, &mut group, consumer, after, args.count, now_ms, reply);
            (true, created)
        }
        From::New => {
            let fresh = stream.last().is_some_and(|last| last.id > group.last_id);
            if fresh {
                let created = touch_consumer(&mut group, consumer, now_ms);
                deliver_new(stream, &mut group, consumer, args, now_ms, reply);
                (true, created)
            } else {
                (false, false)
            }
        }
    };
    stream.groups.insert(Box::from(group_name), group);
    served
}

/// Finds or makes `name`, seen now; whether it was made.
fn touch_consumer(group: &mut Group, name: &[u8], now_ms: u64) -> bool {
    let (consumer, created) = group.consumer(name, now_ms);
    consumer.seen_time_ms = now_ms;
    created
}

/// `>`: the entries past the group's last delivered ID, each now pending for `consumer`
/// (unless NOACK), the group moved past them.
fn deliver_new(
    stream: &StreamValue,
    group: &mut Group,
    consumer: &[u8],
    args: &ReadArgs,
    now_ms: u64,
    reply: &mut Reply<'_>,
) {
    let Some(start) = group.last_id.next() else { return reply.array(0) };
    let limit = if args.count == 0 { usize::MAX } else { args.count };
    let entries: Vec<_> = stream.range(start, StreamId::MAX).take(limit).collect();
    reply.array(entries.len());
    for entry in entries {
        stream.advance_group(group, entry.id);
        reply_entry(reply, entry);
        if !args.noack {
            group.deliver(entry.id, consumer, now_ms);
        }
    }
}

/// An explicit ID: the consumer's own pending entries after it (a deleted entry's
/// fields as a null), each delivered once more.
fn history(
    stream: &StreamValue,
    group: &mut Group,
    consumer: &[u8],
    after: StreamId,
    count: usize,
    now_ms: u64,
    reply: &mut Reply<'_>,
) {
    let Some(start) = after.next() else { return reply.array(0) };
    let limit = if count == 0 { usize::MAX } else { count };
    let ids: Vec<StreamId> = group
        .consumers
        .get(consumer)
        .map(|c| c.pel.range(start..).take(limit).copied().collect())
        .unwrap_or_default();
    reply.array(ids.len());
    for id in ids {
        match stream.get(id) {
            Some(entry) => {
                reply_entry(reply, entry);
                if let Some(pending) = group.pel.get_mut(&id) {
                    pending.delivery_time_ms = now_ms;
                    pending.delivery_count += 1;
                }
            }
            None => {
                reply.array(2);
                reply.bulk(id.to_string().as_bytes());
                reply.null_array();
            }
        }
    }
}

/// XREAD [COUNT n] [BLOCK ms] STREAMS key ... id ...
pub(super) fn xread(ctx: &mut Ctx<'_>) -> Flow {
    run(ctx, false)
}

/// XREADGROUP GROUP group consumer [COUNT n] [BLOCK ms] [NOACK] STREAMS key ... id ...
pub(super) fn xreadgroup(ctx: &mut Ctx<'_>) -> Flow {
    run(ctx, true)
}

fn run(ctx: &mut Ctx<'_>, grouped: bool) -> Flow {
    let args = match parse(ctx, grouped) {
        Ok(args) => args,
        Err(message) => {
            ctx.error(message);
            return Flow::Continue;
        }
    };
    let froms = match resolve(ctx, &args) {
        Ok(froms) => froms,
        Err(message) => {
            ctx.error(message);
            return Flow::Continue;
        }
    };
    match serve(ctx, &args, &froms) {
        Err(failure) => ctx.failure(failure),
        Ok(true) => {}
        // Nothing now, BLOCK given, and blocking allowed (inside EXEC it answers as a
        // timeout at once, as Redis does).
        Ok(false) if args.block_ms.is_some() && !ctx.is_nested() => {
            let keys = args.keys_at..args.keys_at + args.streams;
            let after = froms.iter().map(|from| from.after().unwrap_or_default()).collect();
            let block_ms = args.block_ms.unwrap_or_default();
            return blocking::block_streams(
                ctx,
                grouped,
                keys,
                after,
                block_ms,
                |ctx| match serve(ctx, &args, &froms) {
                    Ok(served) => served,
                    Err(failure) => {
                        ctx.failure(failure);
                        true
                    }
                },
            );
        }
        Ok(false) => ctx.reply().null_array(),
    }
    Flow::Continue
}

impl From {
    /// The ID it reads past (none for `>`).
    fn after(self) -> Option<StreamId> {
        match self {
            From::After(id) => Some(id),
            From::New => None,
        }
    }
}

/// The COUNT a waiter is served with: Redis's 1000 when none was given, so that a waiter
/// with a low ID is not sent a whole stream at once.
fn waiter_count(ctx: &Ctx<'_>, grouped: bool) -> ReadArgs {
    let mut args = parse(ctx, grouped).unwrap_or(ReadArgs {
        count: 0,
        block_ms: None,
        keys_at: 0,
        streams: 0,
        group: None,
        noack: false,
    });
    if args.count == 0 {
        args.count = WAITER_COUNT_DEFAULT;
    }
    args
}

/// Redis's `XREAD_BLOCKED_DEFAULT_COUNT`.
const WAITER_COUNT_DEFAULT: usize = 1000;

/// Serves a waiting XREAD (`ctx` made like its session) from key argument `key_at`:
/// when the stream's last ID is past `after`, replies with that one stream's entries past
/// it (possibly none, when they were deleted: Redis compares the last ID) and returns
/// true. A missing key or one of another type serves nothing: it keeps waiting.
pub(in crate::resp) fn serve_read_waiter(
    ctx: &mut Ctx<'_>,
    key_at: usize,
    after: StreamId,
) -> bool {
    let args = waiter_count(ctx, false);
    let protocol = ctx.session.protocol;
    let mut body = Vec::new();
    let served = read(ctx, key_at, |stream, _| {
        let Some(stream) = stream.filter(|s| s.last_id > after) else { return false };
        let mut reply = Reply::new(&mut body, protocol);
        let start = after.next().unwrap_or(StreamId::MAX);
        let entries: Vec<_> = stream.range(start, StreamId::MAX).take(args.count).collect();
        reply.array(entries.len());
        entries.into_iter().for_each(|entry| reply_entry(&mut reply, entry));
        true
    });
    if !matches!(served, Ok(true)) {
        return false;
    }
    reply_one_stream(ctx, key_at, &body);
    true
}

/// What serving a waiting XREADGROUP found.
enum GroupServe {
    /// The key is gone or of another type.
    Gone,
    /// Its group is gone.
    NoGroup,
    /// Nothing past the group's last delivered ID.
    NotYet,
    /// Entries were delivered; whether the consumer was made.
    Delivered(bool),
}

/// Serves a waiting XREADGROUP (`>`; `ctx` made like its session) from key argument
/// `key_at`, as Redis 7.0 does; returns whether it replied (entries or the error that
/// ends its wait).
pub(in crate::resp) fn serve_group_waiter(ctx: &mut Ctx<'_>, key_at: usize) -> bool {
    let args = waiter_count(ctx, true);
    let Some((group_at, consumer_at)) = args.group else { return false };
    let (group, consumer) = (ctx.arg(group_at), ctx.arg(consumer_at));
    let (protocol, now_ms) = (ctx.session.protocol, crate::resp::now_unix_ms(ctx.shared));
    let mut body = Vec::new();
    let found = write(ctx, key_at, Create::No, |stream| {
        let Some(stream) = stream else { return unchanged(GroupServe::Gone) };
        let Some(last_delivered) = stream.groups.get(group).map(|g| g.last_id) else {
            return unchanged(GroupServe::NoGroup);
        };
        if stream.last_id <= last_delivered {
            return unchanged(GroupServe::NotYet);
        }
        body.clear();
        let mut reply = Reply::new(&mut body, protocol);
        let mut entry = stream.groups.remove(group).expect("looked up above");
        let created = touch_consumer(&mut entry, consumer, now_ms);
        deliver_new(stream, &mut entry, consumer, &args, now_ms, &mut reply);
        stream.groups.insert(Box::from(group), entry);
        changed(GroupServe::Delivered(created))
    });
    match found.unwrap_or(GroupServe::Gone) {
        GroupServe::Gone => ctx.error("UNBLOCKED the stream key no longer exists"),
        GroupServe::NoGroup => {
            ctx.error("NOGROUP the consumer group this client was blocked on no longer exists")
        }
        GroupServe::NotYet => return false,
        GroupServe::Delivered(created) => {
            if created {
                ctx.wrote(class::STREAM, "xgroup-createconsumer", key_at);
            }
            reply_one_stream(ctx, key_at, &body);
        }
    }
    true
}

/// A served waiter's reply: the one stream it was served from, and its entries (`body`).
fn reply_one_stream(ctx: &mut Ctx<'_>, key_at: usize, body: &[u8]) {
    let key = ctx.arg(key_at);
    let mut reply = ctx.reply();
    match reply.protocol() {
        proto_resp::Protocol::Resp2 => {
            reply.array(1);
            reply.array(2);
        }
        _ => reply.map(1),
    }
    reply.bulk(key);
    ctx.out.extend_from_slice(body);
}
