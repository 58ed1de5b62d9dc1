//! ZRANGE (BYSCORE BYLEX REV LIMIT WITHSCORES), ZRANGESTORE, and the older forms that fix
//! the kind and direction: ZREVRANGE, Z[REV]RANGEBYSCORE, Z[REV]RANGEBYLEX. One parser,
//! as Redis's `zrangeGenericCommand`, so the options and their errors agree everywhere.

use std::ops::Range;

use proto_resp::args::{is_option, parse_i64};
use proto_resp::error;
use store::{Change, Expiry, ValueKind};

use super::encoding::{self, Entry};
use super::range::{rank_span, LexRange, ScoreRange, LEX_RANGE, SCORE_RANGE};
use super::view::Sorted;
use super::{key_at, read_view, Ctx};
use crate::resp::{keyevents::class, typed::Owning};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Rank,
    Score,
    Lex,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Direction {
    Forward,
    Reverse,
}

/// Which command: ZRANGE, ZRANGESTORE, or one with its kind and direction fixed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Form {
    Zrange,
    Store,
    Fixed(Kind, Direction),
}

const LIMIT_NEEDS_RANGE: &str =
    "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX";
const WITHSCORES_AND_LEX: &str =
    "ERR syntax error, WITHSCORES not supported in combination with BYLEX";

/// A parsed range request.
#[derive(Clone, Copy, Debug)]
pub(super) enum Request<'a> {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange<'a>),
}

/// The options after `key min max`.
struct Options {
    kind: Option<Kind>,
    direction: Option<Direction>,
    with_scores: bool,
    offset: i64,
    /// -1: no limit (Redis's default, so `LIMIT 0 -1` is no limit either).
    limit: i64,
}

fn parse_options(ctx: &Ctx<'_>, from: usize, form: Form) -> Result<Options, &'static str> {
    let (kind, direction) = match form {
        Form::Fixed(kind, direction) => (Some(kind), Some(direction)),
        _ => (None, None),
    };
    let mut o = Options { kind, direction, with_scores: false, offset: 0, limit: -1 };
    let mut j = from;
    while j < ctx.argc() {
        let arg = ctx.arg(j);
        if form != Form::Store && is_option(arg, "WITHSCORES") {
            o.with_scores = true;
        } else if is_option(arg, "LIMIT") && ctx.argc() - j > 2 {
            o.offset = parse_i64(ctx.arg(j + 1)).map_err(|e| e.message())?;
            o.limit = parse_i64(ctx.arg(j + 2)).map_err(|e| e.message())?;
            j += 2;
        } else if o.direction.is_none() && is_option(arg, "REV") {
            o.direction = Some(Direction::Reverse);
        } else if o.kind.is_none() && is_option(arg, "BYLEX") {
            o.kind = Some(Kind::Lex);
        } else if o.kind.is_none() && is_option(arg, "BYSCORE") {
            o.kind = Some(Kind::Score);
        } else {
            return Err(error::SYNTAX);
        }
        j += 1;
    }
    Ok(o)
}

/// Parses the range at `min_at` and `min_at + 1` (given as max, min when reversed by score
/// or lex).
pub(super) fn parse_request<'a>(
    ctx: &Ctx<'a>,
    kind: Kind,
    min_at: usize,
    reversed: bool,
) -> Result<Request<'a>, &'static str> {
    let (mut lo, mut hi) = (ctx.arg(min_at), ctx.arg(min_at + 1));
    if reversed && kind != Kind::Rank {
        std::mem::swap(&mut lo, &mut hi);
    }
    match kind {
        Kind::Rank => {
            let start = parse_i64(lo).map_err(|e| e.message())?;
            let end = parse_i64(hi).map_err(|e| e.message())?;
            Ok(Request::Rank(start, end))
        }
        Kind::Score => ScoreRange::parse(lo, hi).map(Request::Score).ok_or(SCORE_RANGE),
        Kind::Lex => LexRange::parse(lo, hi).map(Request::Lex).ok_or(LEX_RANGE),
    }
}

pub(super) fn zrange(ctx: &mut Ctx<'_>, form: Form) {
    let key_index = if form == Form::Store { 2 } else { 1 };
    let options = match parse_options(ctx, key_index + 3, form) {
        Ok(options) => options,
        Err(message) => return ctx.error(message),
    };
    let kind = options.kind.unwrap_or(Kind::Rank);
    let direction = options.direction.unwrap_or(Direction::Forward);
    if options.limit != -1 && kind == Kind::Rank {
        return ctx.error(LIMIT_NEEDS_RANGE);
    }
    if options.with_scores && kind == Kind::Lex {
        return ctx.error(WITHSCORES_AND_LEX);
    }
    let reverse = direction == Direction::Reverse;
    let request = match parse_request(ctx, kind, key_index + 1, reverse) {
        Ok(request) => request,
        Err(message) => return ctx.error(message),
    };
    let (offset, limit, with_scores) = (options.offset, options.limit, options.with_scores);
    let to_store = read_view(ctx, key_index, |ctx, set| {
        let set = set.unwrap_or(Sorted::Slice(&[]));
        let picked = match request {
            Request::Lex(range) => lex_walk(&set, &range, reverse, offset, limit),
            _ => {
                let span = select(&set, request, reverse);
                ordered(&set, span, reverse, kind != Kind::Rank, offset, limit)
            }
        };
        if form == Form::Store {
            // Copied out: the destination is written once the source is no longer read.
            return Some(picked.iter().map(|e| (e.score, e.member.to_vec())).collect());
        }
        ctx.entries(picked.into_iter(), with_scores);
        None
    });
    if let Some(Some(picked)) = to_store {
        let picked: Vec<(f64, Vec<u8>)> = picked;
        let entries: Vec<Entry<'_>> =
            picked.iter().map(|(score, member)| Entry { score: *score, member }).collect();
        if store_result(ctx, 1, &entries) {
            ctx.stored(class::ZSET, "zrangestore", 1, !entries.is_empty());
        }
    }
}

/// The positions (in forward order) a request selects.
pub(super) fn select(set: &Sorted<'_>, request: Request<'_>, reverse: bool) -> Range<usize> {
    match request {
        Request::Rank(start, end) => match rank_span(start, end, set.len()) {
            Some(span) if reverse => set.len() - span.end..set.len() - span.start,
            Some(span) => span,
            None => 0..0,
        },
        Request::Score(range) => range.span(set),
        Request::Lex(range) if reverse => range.span_rev(set),
        Request::Lex(range) => range.span(set),
    }
}

/// The entries of a span in reply order, after LIMIT: a negative offset selects nothing
/// and a negative count everything, as Redis's walks do.
fn ordered<'a>(
    set: &Sorted<'a>,
    span: Range<usize>,
    reverse: bool,
    limited: bool,
    offset: i64,
    limit: i64,
) -> Vec<Entry<'a>> {
    let (skip, take) = if !limited {
        (0, usize::MAX)
    } else if offset < 0 {
        return Vec::new();
    } else {
        let take = if limit < 0 { usize::MAX } else { limit as usize };
        (usize::try_from(offset).unwrap_or(usize::MAX), take)
    };
    if skip >= span.len() {
        return Vec::new();
    }
    let take = take.min(span.len() - skip);
    if reverse {
        set.down_from(span.end - 1 - skip).take(take).collect()
    } else {
        set.up_from(span.start + skip).take(take).collect()
    }
}

/// A lex range with LIMIT as Redis walks a listpack: from the first member in range, skip
/// `offset` members whatever they are, then take members while they are within the far
/// bound. With equal scores that is the plain range; with mixed scores the skipped members
/// need not be in range, and neither do the taken ones on the near side.
fn lex_walk<'a>(
    set: &Sorted<'a>,
    range: &LexRange<'_>,
    reverse: bool,
    offset: i64,
    limit: i64,
) -> Vec<Entry<'a>> {
    let Ok(offset) = usize::try_from(offset) else { return Vec::new() };
    let take = usize::try_from(limit).unwrap_or(usize::MAX);
    if reverse {
        let span = range.span_rev(set);
        let Some(from) = span.end.checked_sub(1 + offset).filter(|_| !span.is_empty()) else {
            return Vec::new();
        };
        let walk = set.down_from(from);
        walk.take_while(|e| range.above_min(e.member)).take(take).collect()
    } else {
        let span = range.span(set);
        if span.is_empty() {
            return Vec::new();
        }
        let walk = set.up_from(span.start.saturating_add(offset));
        walk.take_while(|e| range.below_max(e.member)).take(take).collect()
    }
}

/// Stores `entries` under key argument `dst_index` as a new sorted set (replacing any
/// value and TTL, as Redis's `setKey`), or deletes the key when there are none; replies
/// the count. True when it was stored (a deletion of the key is noted in the outcome:
/// the caller names the event).
pub(super) fn store_result(ctx: &mut Ctx<'_>, dst_index: usize, entries: &[Entry<'_>]) -> bool {
    let key = key_at(ctx, dst_index);
    let value = (!entries.is_empty()).then(|| encoding::encode_unsorted(entries.to_vec()));
    let mut owning = Owning::new(ctx.shared);
    let mut deleted = false;
    let result =
        ctx.shared.core.store.modify_within(&key, super::super::PROTO_MAX_BULK_LEN, |current| {
            owning.start_run();
            deleted = value.is_none() && current.is_some();
            let change = match &value {
                Some(value) => owning.write(ValueKind::ZSet, value.clone(), Expiry::Never),
                None => Ok(Change::Delete),
            };
            match change {
                Ok(change) => (change, Ok(())),
                Err(failure) => (Change::Keep, Err(failure)),
            }
        });
    match owning.finish(result.map(|(_, out)| out)) {
        Ok(()) => {
            if deleted {
                ctx.outcome.note_emptied();
            }
            ctx.reply().integer(entries.len() as i64);
            true
        }
        Err(failure) => {
            ctx.failure(failure);
            false
        }
    }
}
