//! XLEN, XRANGE and XREVRANGE.

use proto_resp::{
    args::{is_option, parse_i64},
    error,
};

use super::super::Ctx;
use super::{id, read, reply_entries};

/// XLEN key
pub(super) fn xlen(ctx: &mut Ctx<'_>) {
    let result = read(ctx, 1, |stream, reply| reply.integer(stream.map_or(0, |s| s.len() as i64)));
    if let Err(failure) = result {
        ctx.failure(failure);
    }
}

/// XRANGE key start end [COUNT n], XREVRANGE key end start [COUNT n]
pub(super) fn xrange(ctx: &mut Ctx<'_>, rev: bool) {
    let (start_arg, end_arg) =
        if rev { (ctx.arg(3), ctx.arg(2)) } else { (ctx.arg(2), ctx.arg(3)) };
    let Some((mut start, start_ex)) = id::parse_interval(start_arg, 0) else {
        return ctx.error(id::INVALID_ID);
    };
    if start_ex {
        match start.next() {
            Some(next) => start = next,
            None => return ctx.error("ERR invalid start ID for the interval"),
        }
    }
    let Some((mut end, end_ex)) = id::parse_interval(end_arg, u64::MAX) else {
        return ctx.error(id::INVALID_ID);
    };
    if end_ex {
        match end.prev() {
            Some(prev) => end = prev,
            None => return ctx.error("ERR invalid end ID for the interval"),
        }
    }
    let mut count: Option<usize> = None;
    let mut i = 4;
    while i < ctx.argc() {
        if !is_option(ctx.arg(i), "count") || i + 1 >= ctx.argc() {
            return ctx.error(error::SYNTAX);
        }
        match parse_i64(ctx.arg(i + 1)) {
            Ok(n) => count = Some(n.max(0) as usize),
            Err(_) => return ctx.error(error::NOT_INTEGER),
        }
        i += 2;
    }
    let result = read(ctx, 1, |stream, reply| {
        let Some(stream) = stream else { return reply.array(0) };
        match count {
            Some(0) => reply.null_array(),
            Some(n) if rev => reply_entries(reply, stream.range_rev(start, end).take(n)),
            Some(n) => reply_entries(reply, stream.range(start, end).take(n)),
            None if rev => reply_entries(reply, stream.range_rev(start, end)),
            None => reply_entries(reply, stream.range(start, end)),
        }
    });
    if let Err(failure) = result {
        ctx.failure(failure);
    }
}
