//! XADD, XTRIM, XDEL and XSETID: the writes of a stream's entries.

use proto_resp::{
    args::{is_option, parse_i64},
    error,
};
use values::stream::{NodeLimits, StreamId, StreamValue, Trim, LISTPACK_MAX_BYTES};

use super::super::{config_kept, keyevents::class, Ctx};
use super::{changed, id, unchanged, write, Create};

/// XADD's and XTRIM's options, as `streamParseAddOrTrimArgsOrReply` reads them.
#[derive(Debug, Default)]
struct Options {
    trim: Option<Trim>,
    approx: bool,
    /// 0: no limit.
    limit: u64,
    no_mkstream: bool,
    /// XADD's ID (`None`: `*`) and whether its sequence was given.
    id: Option<(StreamId, bool)>,
    /// Where XADD's ID is.
    id_at: usize,
}

const BOTH_STRATEGIES: &str =
    "ERR syntax error, MAXLEN and MINID options at the same time are not compatible";

/// Reads the options from argument 2 on; `xadd` stops at the ID.
fn parse_options(ctx: &Ctx<'_>, xadd: bool) -> Result<Options, String> {
    let mut options = Options::default();
    let mut limit_given = false;
    let mut i = 2;
    while i < ctx.argc() {
        let (opt, more) = (ctx.arg(i), ctx.argc() - 1 - i);
        if xadd && opt == b"*" {
            break;
        } else if (is_option(opt, "maxlen") || is_option(opt, "minid")) && more > 0 {
            if options.trim.is_some() {
                return Err(BOTH_STRATEGIES.into());
            }
            options.approx = false;
            let next = ctx.arg(i + 1);
            if more >= 2 && (next == b"~" || next == b"=") {
                options.approx = next == b"~";
                i += 1;
            }
            let value = ctx.arg(i + 1);
            options.trim = Some(if is_option(opt, "maxlen") {
                match parse_i64(value) {
                    Err(_) => return Err(error::NOT_INTEGER.into()),
                    Ok(n) if n < 0 => return Err("ERR The MAXLEN argument must be >= 0.".into()),
                    Ok(n) => Trim::MaxLen(n as u64),
                }
            } else {
                Trim::MinId(id::parse_strict(value, 0).ok_or(id::INVALID_ID)?)
            });
            i += 1;
        } else if is_option(opt, "limit") && more > 0 {
            options.limit = match parse_i64(ctx.arg(i + 1)) {
                Err(_) => return Err(error::NOT_INTEGER.into()),
                Ok(n) if n < 0 => return Err("ERR The LIMIT argument must be >= 0.".into()),
                Ok(n) => n as u64,
            };
            limit_given = true;
            i += 1;
        } else if xadd && is_option(opt, "nomkstream") {
            options.no_mkstream = true;
        } else if xadd {
            options.id = Some(id::parse_for_add(opt).ok_or(id::INVALID_ID)?);
            break;
        } else {
            return Err(error::SYNTAX.into());
        }
        i += 1;
    }
    options.id_at = i;
    settle_limit(ctx, options, limit_given, xadd)
}

/// The checks after the options, and the default LIMIT of an approximate trim.
fn settle_limit(
    ctx: &Ctx<'_>,
    mut options: Options,
    limit_given: bool,
    xadd: bool,
) -> Result<Options, String> {
    if options.limit != 0 && options.trim.is_none() {
        return Err(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy".into(),
        );
    }
    if !xadd && options.trim.is_none() {
        return Err("ERR syntax error, XTRIM must be called with a trimming strategy".into());
    }
    if limit_given && !options.approx {
        return Err("ERR syntax error, LIMIT cannot be used without the special ~ option".into());
    }
    if !limit_given && options.approx {
        let per_node = node_limits(ctx).max_entries;
        options.limit = match per_node.saturating_mul(100) {
            0 => 10_000,
            n => n.min(1_000_000),
        };
    } else if !limit_given {
        options.limit = 0;
    }
    Ok(options)
}

/// `stream-node-max-bytes` and `stream-node-max-entries`, as set.
fn node_limits(ctx: &Ctx<'_>) -> NodeLimits {
    let number =
        |name, default| config_kept::value(ctx.shared, name).parse::<u64>().unwrap_or(default);
    NodeLimits {
        max_bytes: number("stream-node-max-bytes", 4096),
        max_entries: number("stream-node-max-entries", 100),
    }
}

/// Why XADD added nothing.
enum AddError {
    Exhausted,
    NotAbove,
    TooLarge,
}

/// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value ...
pub(super) fn xadd(ctx: &mut Ctx<'_>) {
    let options = match parse_options(ctx, true) {
        Ok(options) => options,
        Err(message) => return ctx.error(message),
    };
    let fields_at = options.id_at + 1;
    let pairs = ctx.argc().saturating_sub(fields_at);
    if pairs < 2 || pairs % 2 == 1 {
        return ctx.error("ERR wrong number of arguments for 'xadd' command");
    }
    if let Some((StreamId::MIN, true)) = options.id {
        return ctx.error("ERR The ID specified in XADD must be greater than 0-0");
    }
    let fields: Vec<&[u8]> = (fields_at..ctx.argc()).map(|i| ctx.arg(i)).collect();
    let limits = node_limits(ctx);
    let now_ms = crate::resp::now_unix_ms(ctx.shared);
    let create = if options.no_mkstream { Create::No } else { Create::Yes };
    let result = write(ctx, 1, create, |stream| {
        let Some(stream) = stream else { return unchanged(None) };
        match append(stream, &options, &fields, limits, now_ms) {
            Err(e) => unchanged(Some(Err(e))),
            Ok(id) => {
                let trimmed = match options.trim {
                    Some(trim) => stream.trim(trim, options.approx, options.limit),
                    None => 0,
                };
                changed(Some(Ok((id, trimmed))))
            }
        }
    });
    match result {
        Err(failure) => ctx.failure(failure),
        Ok(None) => ctx.reply().null(),
        Ok(Some(Err(e))) => ctx.error(match e {
            AddError::Exhausted => {
                "ERR The stream has exhausted the last possible ID, unable to add more items"
            }
            AddError::NotAbove => {
                "ERR The ID specified in XADD is equal or smaller than the target stream top item"
            }
            AddError::TooLarge => "ERR Elements are too large to be stored",
        }),
        Ok(Some(Ok((id, trimmed)))) => {
            ctx.reply().bulk(id.to_string().as_bytes());
            ctx.wrote(class::STREAM, "xadd", 1);
            if trimmed > 0 {
                ctx.wrote(class::STREAM, "xtrim", 1);
            }
        }
    }
}

/// `streamAppendItem`'s choice of ID and its checks, then the append.
fn append(
    stream: &mut StreamValue,
    options: &Options,
    fields: &[&[u8]],
    limits: NodeLimits,
    now_ms: u64,
) -> Result<StreamId, AddError> {
    let last = stream.last_id;
    if last == StreamId::MAX {
        return Err(AddError::Exhausted);
    }
    let id = match options.id {
        Some((id, true)) => id,
        Some((id, false)) if id.ms == last.ms => {
            // (Redis fails this one without naming why; its reply is the size error.)
            last.next().filter(|next| next.ms == id.ms).ok_or(AddError::TooLarge)?
        }
        Some((id, false)) => id,
        None if now_ms > last.ms => StreamId::new(now_ms, 0),
        None => last.next().ok_or(AddError::Exhausted)?,
    };
    if id <= last {
        return Err(AddError::NotAbove);
    }
    if fields.iter().map(|f| f.len() as u64).sum::<u64>() > LISTPACK_MAX_BYTES {
        return Err(AddError::TooLarge);
    }
    let pairs = fields.chunks_exact(2).map(|pair| (pair[0], pair[1]));
    stream.append(id, pairs, limits);
    Ok(id)
}

/// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
pub(super) fn xtrim(ctx: &mut Ctx<'_>) {
    let options = match parse_options(ctx, false) {
        Ok(options) => options,
        Err(message) => return ctx.error(message),
    };
    let Some(trim) = options.trim else { return };
    let result = write(ctx, 1, Create::No, |stream| match stream {
        None => unchanged(0),
        Some(stream) => match stream.trim(trim, options.approx, options.limit) {
            0 => unchanged(0),
            n => changed(n),
        },
    });
    match result {
        Err(failure) => ctx.failure(failure),
        Ok(trimmed) => {
            if trimmed > 0 {
                ctx.wrote(class::STREAM, "xtrim", 1);
            }
            ctx.reply().integer(trimmed as i64);
        }
    }
}

/// XDEL key id [id ...]
pub(super) fn xdel(ctx: &mut Ctx<'_>) {
    let mut ids = Vec::with_capacity(ctx.argc() - 2);
    for i in 2..ctx.argc() {
        match id::parse_strict(ctx.arg(i), 0) {
            Some(id) => ids.push(id),
            None => return ctx.error(id::INVALID_ID),
        }
    }
    let result = write(ctx, 1, Create::No, |stream| {
        let Some(stream) = stream else { return unchanged(0) };
        match ids.iter().filter(|&&id| stream.delete(id)).count() {
            0 => unchanged(0),
            n => changed(n),
        }
    });
    match result {
        Err(failure) => ctx.failure(failure),
        Ok(deleted) => {
            if deleted > 0 {
                ctx.wrote(class::STREAM, "xdel", 1);
            }
            ctx.reply().integer(deleted as i64);
        }
    }
}

/// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
pub(super) fn xsetid(ctx: &mut Ctx<'_>) {
    let Some(last_id) = id::parse_strict(ctx.arg(2), 0) else { return ctx.error(id::INVALID_ID) };
    let (mut entries_added, mut max_deleted) = (None, StreamId::MIN);
    let mut i = 3;
    while i < ctx.argc() {
        let (opt, more) = (ctx.arg(i), ctx.argc() - 1 - i);
        if is_option(opt, "entriesadded") && more > 0 {
            match parse_i64(ctx.arg(i + 1)) {
                Err(_) => return ctx.error(error::NOT_INTEGER),
                Ok(n) if n < 0 => return ctx.error("ERR entries_added must be positive"),
                Ok(n) => entries_added = Some(n as u64),
            }
        } else if is_option(opt, "maxdeletedid") && more > 0 {
            let Some(id) = id::parse_strict(ctx.arg(i + 1), 0) else {
                return ctx.error(id::INVALID_ID);
            };
            if last_id < id {
                return ctx.error(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                );
            }
            max_deleted = id;
        } else {
            return ctx.error(error::SYNTAX);
        }
        i += 2;
    }
    let result = write(ctx, 1, Create::No, |stream| {
        let Some(stream) = stream else { return unchanged(Err(error::NO_SUCH_KEY)) };
        if let Some(top) = stream.last().map(|entry| entry.id) {
            if last_id < top {
                return unchanged(Err(
                    "ERR The ID specified in XSETID is smaller than the target stream top item",
                ));
            }
            if entries_added.is_some_and(|added| stream.len() > added) {
                return unchanged(Err(
                    "ERR The entries_added specified in XSETID is smaller than the target stream length",
                ));
            }
        }
        stream.last_id = last_id;
        if let Some(added) = entries_added {
            stream.entries_added = added;
        }
        if max_deleted != StreamId::MIN {
            stream.max_deleted_id = max_deleted;
        }
        changed(Ok(()))
    });
    match result {
        Err(failure) => ctx.failure(failure),
        Ok(Err(message)) => ctx.error(message),
        Ok(Ok(())) => {
            ctx.wrote(class::STREAM, "xsetid", 1);
            ctx.reply().ok();
        }
    }
}
