//! LPOS LREM LINSERT: the commands that look for elements equal to a value.

use proto_resp::{
    args::{is_option, parse_i64},
    error,
};

use super::super::keyevents::class;
use super::{encoding, modify, read, write_or_delete, Ctx};
use crate::resp::typed::Edit;

/// LPOS's RANK 0.
const RANK_ZERO: &str = "ERR RANK can't be zero: use 1 to start from the first match, 2 from \
                         the second ... or use negative to start from the end of the list";
const COUNT_NEGATIVE: &str = "ERR COUNT can't be negative";
const MAXLEN_NEGATIVE: &str = "ERR MAXLEN can't be negative";

/// LPOS's options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Lpos {
    /// Search from the tail (a negative RANK).
    from_tail: bool,
    /// Matches to skip before the first one reported (RANK's magnitude less one).
    skip: u64,
    /// COUNT: `None` when absent (reply one index or null), `Some(0)` for all matches.
    count: Option<u64>,
    /// MAXLEN: elements to compare at most, 0 for all.
    maxlen: u64,
}

/// Parses LPOS's options in Redis's order (each error as soon as its option is read).
fn parse_lpos(ctx: &Ctx<'_>) -> Result<Lpos, &'static str> {
    let mut rank: i64 = 1;
    let (mut count, mut maxlen) = (None, 0);
    let mut j = 3;
    while j < ctx.argc() {
        let (opt, has_value) = (ctx.arg(j), j + 1 < ctx.argc());
        let value = if has_value { ctx.arg(j + 1) } else { &[][..] };
        if is_option(opt, "RANK") && has_value {
            rank = parse_i64(value).map_err(|e| e.message())?;
            if rank == 0 {
                return Err(RANK_ZERO);
            }
        } else if is_option(opt, "COUNT") && has_value {
            count = Some(parse_i64(value).ok().filter(|&n| n >= 0).ok_or(COUNT_NEGATIVE)? as u64);
        } else if is_option(opt, "MAXLEN") && has_value {
            maxlen = parse_i64(value).ok().filter(|&n| n >= 0).ok_or(MAXLEN_NEGATIVE)? as u64;
        } else {
            return Err(error::SYNTAX);
        }
        j += 2;
    }
    if rank == i64::MIN {
        // Redis negates the rank in a C long, which leaves LONG_MIN negative: every match
        // from the tail is reported and COUNT never stops the search. Kept byte for byte.
        return Ok(Lpos { from_tail: true, skip: 0, count: count.map(|_| 0), maxlen });
    }
    Ok(Lpos { from_tail: rank < 0, skip: rank.unsigned_abs() - 1, count, maxlen })
}

/// The indexes (head-based, as LINDEX counts) of the matches LPOS reports.
fn lpos_matches(list: encoding::List<'_>, element: &[u8], opts: Lpos) -> Vec<i64> {
    let len = list.len();
    let elements = list.elements();
    let scan = if opts.maxlen == 0 { len } else { (opts.maxlen.min(len as u64)) as usize };
    let order: Box<dyn Iterator<Item = usize>> = if opts.from_tail {
        Box::new((0..len).rev().take(scan))
    } else {
        Box::new((0..len).take(scan))
    };
    let wanted = match opts.count {
        None => 1,
        Some(0) => u64::MAX,
        Some(n) => n,
    };
    let mut matches = order.filter(|&i| elements[i] == element).skip(opts.skip as usize);
    let mut found = Vec::new();
    while (found.len() as u64) < wanted {
        match matches.next() {
            Some(i) => found.push(i as i64),
            None => break,
        }
    }
    found
}

/// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len].
pub(super) fn lpos(ctx: &mut Ctx<'_>) {
    let opts = match parse_lpos(ctx) {
        Ok(opts) => opts,
        Err(message) => return ctx.error(message),
    };
    let element = ctx.arg(2);
    read(ctx, 1, |ctx, list| {
        let found = list.map_or_else(Vec::new, |list| lpos_matches(list, element, opts));
        let mut reply = ctx.reply();
        match (opts.count, found.first()) {
            (Some(_), _) => {
                reply.array(found.len());
                found.iter().for_each(|&i| reply.integer(i));
            }
            (None, Some(&i)) => reply.integer(i),
            (None, None) => reply.null(),
        }
    });
}

/// LREM key count element: removes up to |count| matches (all for 0), from the tail when
/// count is negative; replies how many went.
pub(super) fn lrem(ctx: &mut Ctx<'_>) {
    let Ok(count) = parse_i64(ctx.arg(2)) else { return ctx.error(error::NOT_INTEGER) };
    let element = ctx.arg(3);
    let limit = if count == 0 { u64::MAX } else { count.unsigned_abs() };
    let removed = modify(ctx, 1, |list| {
        let Some(list) = list else { return (Edit::Keep, 0) };
        let mut kept = list.elements();
        let mut removed = 0u64;
        let mut keep = |e: &&[u8]| {
            let gone = removed < limit && *e == element;
            removed += u64::from(gone);
            !gone
        };
        if count < 0 {
            kept.reverse();
            kept.retain(&mut keep);
            kept.reverse();
        } else {
            kept.retain(keep);
        }
        if removed == 0 {
            return (Edit::Keep, 0);
        }
        (write_or_delete(encoding::encode(kept.into_iter())), removed)
    });
    if let Some(removed) = removed {
        if removed > 0 {
            ctx.removed(class::LIST, "lrem", 1);
        }
        ctx.reply().integer(removed as i64);
    }
}

/// LINSERT key BEFORE|AFTER pivot element: the new length, 0 when the key is absent, -1
/// when the pivot is not in the list. The position is checked before the key.
pub(super) fn linsert(ctx: &mut Ctx<'_>) {
    let after = match ctx.arg(2) {
        arg if is_option(arg, "AFTER") => true,
        arg if is_option(arg, "BEFORE") => false,
        _ => return ctx.error(error::SYNTAX),
    };
    let (pivot, element) = (ctx.arg(3), ctx.arg(4));
    let len = modify(ctx, 1, |list| {
        let Some(list) = list else { return (Edit::Keep, 0) };
        let mut elements = list.elements();
        let Some(at) = elements.iter().position(|e| *e == pivot) else {
            return (Edit::Keep, -1);
        };
        elements.insert(at + usize::from(after), element);
        let len = elements.len() as i64;
        (write_or_delete(encoding::encode(elements.into_iter())), len)
    });
    if let Some(len) = len {
        if len > 0 {
            ctx.wrote(class::LIST, "linsert", 1);
        }
        ctx.reply().integer(len);
    }
}
