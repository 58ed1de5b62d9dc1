//! Lookups and counts: ZCARD ZCOUNT ZLEXCOUNT ZSCORE ZMSCORE ZRANK ZREVRANK ZRANDMEMBER
//! ZSCAN.

use proto_resp::args::{is_option, parse_i64};
use proto_resp::{error, Protocol};

use super::encoding::{Entry, ZSet};
use super::range::{LexRange, ScoreRange, LEX_RANGE, SCORE_RANGE};
use super::view::Sorted;
use super::zrange::Direction;
use super::{read_stored, read_view, Ctx};
use crate::resp::glob::{self, Case};
use crate::resp::pick::{self, random_below};
use crate::resp::scan;

pub(super) fn zcard(ctx: &mut Ctx<'_>) {
    read_stored(ctx, 1, |ctx, set| {
        ctx.reply().integer(set.map_or(0, |set| set.len()) as i64);
    });
}

pub(super) fn zcount(ctx: &mut Ctx<'_>) {
    let Some(range) = ScoreRange::parse(ctx.arg(2), ctx.arg(3)) else {
        return ctx.error(SCORE_RANGE);
    };
    count_span(ctx, |set| range.span(set).len());
}

pub(super) fn zlexcount(ctx: &mut Ctx<'_>) {
    let Some(range) = LexRange::parse(ctx.arg(2), ctx.arg(3)) else {
        return ctx.error(LEX_RANGE);
    };
    count_span(ctx, |set| range.span(set).len());
}

fn count_span(ctx: &mut Ctx<'_>, count: impl FnOnce(&Sorted<'_>) -> usize) {
    read_view(ctx, 1, |ctx, set| {
        let n = set.map_or(0, |set| count(&set));
        ctx.reply().integer(n as i64);
    });
}

pub(super) fn zscore(ctx: &mut Ctx<'_>) {
    let member = ctx.arg(2);
    read_stored(ctx, 1, |ctx, set| match set.and_then(|set| set.score(member)) {
        Some(score) => ctx.score(score),
        None => ctx.reply().null(),
    });
}

pub(super) fn zmscore(ctx: &mut Ctx<'_>) {
    let members: Vec<&[u8]> = (2..ctx.argc()).map(|i| ctx.arg(i)).collect();
    read_view(ctx, 1, |ctx, set| {
        let scores = set.map_or_else(|| vec![None; members.len()], |set| set.scores(&members));
        ctx.reply().array(scores.len());
        for score in scores {
            match score {
                Some(score) => ctx.score(score),
                None => ctx.reply().null(),
            }
        }
    });
}

/// ZRANK and ZREVRANK, with Redis 7.2's WITHSCORE (`[rank, score]`, a null array when
/// absent).
pub(super) fn zrank(ctx: &mut Ctx<'_>, direction: Direction) {
    let with_score = ctx.argc() == 4;
    if with_score && !is_option(ctx.arg(3), "WITHSCORE") {
        return ctx.error(error::SYNTAX);
    }
    let member = ctx.arg(2);
    let found = read_stored(ctx, 1, |_, set| {
        let set = set?;
        let (rank, score) = set.find(member)?;
        let len = set.len();
        Some((if direction == Direction::Reverse { len - 1 - rank } else { rank }, score))
    });
    let Some(found) = found else { return };
    match (found, with_score) {
        (Some((rank, _)), false) => ctx.reply().integer(rank as i64),
        (Some((rank, score)), true) => {
            ctx.reply().array(2);
            ctx.reply().integer(rank as i64);
            ctx.score(score);
        }
        (None, false) => ctx.reply().null(),
        (None, true) => ctx.reply().null_array(),
    }
}

/// `ZRANDMEMBER key [count [WITHSCORES]]`.
pub(super) fn zrandmember(ctx: &mut Ctx<'_>) {
    if ctx.argc() == 2 {
        read_view(ctx, 1, |ctx, set| match set.filter(|set| !set.is_empty()) {
            Some(set) => ctx.reply().bulk(set.get(random_below(set.len())).member),
            None => ctx.reply().null(),
        });
        return;
    }
    let count = match parse_i64(ctx.arg(2)) {
        Ok(count) if count != i64::MIN => count,
        Ok(_) => return ctx.error(RANDMEMBER_RANGE),
        Err(e) => return ctx.error(e.message()),
    };
    let with_scores = ctx.argc() == 4 && is_option(ctx.arg(3), "WITHSCORES");
    if ctx.argc() > 4 || (ctx.argc() == 4 && !with_scores) {
        return ctx.error(error::SYNTAX);
    }
    if with_scores && !(-i64::MAX / 2..=i64::MAX / 2).contains(&count) {
        return ctx.error(OUT_OF_RANGE);
    }
    if count < -RANDOM_DRAWS_MAX {
        return ctx.error(OUT_OF_RANGE);
    }
    read_view(ctx, 1, |ctx, set| {
        let picked = set.map_or_else(Vec::new, |set| pick(&set, count));
        ctx.entries(picked.into_iter(), with_scores);
    });
}

const OUT_OF_RANGE: &str = "ERR value is out of range";

/// The most draws a negative count may ask for. Redis has no bound (it stops once the
/// client's output is over its limit); the reply here is built whole before it is sent, so
/// a count of billions would exhaust memory: refused with Redis's out-of-range text. At
/// this bound the reply is tens of MiB, past which the event loop's output limit (64 MiB by
/// default) would close the connection anyway.
const RANDOM_DRAWS_MAX: i64 = 1 << 22;

/// `getRangeLongFromObjectOrReply(-LONG_MAX, LONG_MAX)`'s refusal of `LONG_MIN`.
const RANDMEMBER_RANGE: &str =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";

/// ZRANDMEMBER's choice: `count` distinct members (all of them, highest first, when the
/// set has no more), or for a negative count that many independent draws.
fn pick<'a>(set: &Sorted<'a>, count: i64) -> Vec<Entry<'a>> {
    let len = set.len();
    if len == 0 || count == 0 {
        return Vec::new();
    }
    let wanted = count.unsigned_abs() as usize;
    if count < 0 {
        return (0..wanted).map(|_| set.get(random_below(len))).collect();
    }
    if wanted >= len {
        // Redis walks the whole set from its highest member (`zuiNext` runs backwards).
        return set.down_from(len - 1).collect();
    }
    pick::distinct(len, wanted).into_iter().map(|rank| set.get(rank)).collect()
}

/// A set this small is one page, as Redis answers for a listpack (`zset-max-listpack-*`).
const ONE_PAGE_ENTRIES_MAX: usize = 128;
const ONE_PAGE_MEMBER_LEN_MAX: usize = 64;

/// `ZSCAN key cursor [MATCH pattern] [COUNT count]`. Small sets come whole with cursor 0,
/// as from Redis. Larger ones are walked in the order of a hash of the member
/// (`scan::page`), in at most about 16 pages.
pub(super) fn zscan(ctx: &mut Ctx<'_>) {
    let Some(cursor) = scan::parse_cursor(ctx.arg(2)) else {
        return ctx.error("ERR invalid cursor");
    };
    let options = scan::parse_options(ctx, 3, scan::Extra::None);
    read_view(ctx, 1, |ctx, set| {
        let Some(set) = set else { return scan_reply(ctx, 0, &[]) };
        let (pattern, count) = match options {
            Ok(options) => (options.pattern, options.count),
            Err(message) => return ctx.error(message),
        };
        scan_page(ctx, &ZSet { entries: set.entries() }, cursor, pattern, count);
    });
}

/// One ZSCAN reply of `set` from `cursor`.
fn scan_page(ctx: &mut Ctx<'_>, set: &ZSet<'_>, cursor: u64, pattern: Option<&[u8]>, count: usize) {
    let one_page = set.len() <= ONE_PAGE_ENTRIES_MAX
        && set.entries.iter().all(|e| e.member.len() <= ONE_PAGE_MEMBER_LEN_MAX);
    let (next, page) =
        if one_page { (0, set.entries.clone()) } else { hash_page(set, cursor, count) };
    let wanted: Vec<Entry<'_>> = page
        .into_iter()
        .filter(|e| pattern.is_none_or(|p| glob::matches(p, e.member, Case::Sensitive)))
        .collect();
    scan_reply(ctx, next, &wanted);
}

/// The members from `cursor` on in hash order (`scan::page`), and the cursor after them.
fn hash_page<'a>(set: &ZSet<'a>, cursor: u64, count: usize) -> (u64, Vec<Entry<'a>>) {
    let rest: Vec<(u64, Entry<'a>)> = set
        .entries
        .iter()
        .map(|&e| (scan::member_hash(e.member), e))
        .filter(|(hash, _)| *hash >= cursor)
        .collect();
    scan::page(rest, count, set.len())
}

/// `[cursor, [member, score, ...]]`, scores as bulk strings in both protocols.
fn scan_reply(ctx: &mut Ctx<'_>, next: u64, entries: &[Entry<'_>]) {
    let mut reply = ctx.reply();
    reply.array(2);
    reply.bulk(next.to_string().as_bytes());
    reply.array(entries.len() * 2);
    for entry in entries {
        ctx.reply().bulk(entry.member);
        super::range::put_score(ctx.out, Protocol::Resp2, entry.score);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: a cursor walk over a large set returns each member exactly once and ends, and a
    /// member that stays is found even when others are added between pages.
    #[test]
    fn hash_pages_cover_the_set() {
        let names: Vec<Vec<u8>> = (0..300).map(|i| format!("m{i}").into_bytes()).collect();
        let entries: Vec<Entry<'_>> =
            names.iter().enumerate().map(|(i, m)| Entry { score: i as f64, member: m }).collect();
        let set = ZSet { entries };
        let (mut cursor, mut seen, mut pages) = (0, Vec::new(), 0);
        loop {
            let (next, page) = hash_page(&set, cursor, 7);
            // At least COUNT, or a sixteenth of the set (300 / 16 = 18) when that is more.
            assert!(page.len() >= 18 || next == 0, "short page before the end");
            seen.extend(page.iter().map(|e| e.member));
            pages += 1;
            if next == 0 {
                break;
            }
            assert!(next > cursor, "the cursor moves forward");
            cursor = next;
        }
        seen.sort();
        seen.dedup();
        assert_eq!((seen.len(), pages), (300, 300usize.div_ceil(18)));
        assert!(names.iter().all(|m| scan::member_hash(m) != 0));
    }

    /// Goal: ZRANDMEMBER's picks are distinct for a positive count and whole (highest
    /// first) when the count covers the set.
    #[test]
    fn picks() {
        let names: Vec<Vec<u8>> = (0..10).map(|i| vec![b'a' + i]).collect();
        let entries: Vec<Entry<'_>> =
            names.iter().enumerate().map(|(i, m)| Entry { score: i as f64, member: m }).collect();
        let mut chosen: Vec<&[u8]> =
            pick(&Sorted::Slice(&entries), 4).iter().map(|e| e.member).collect();
        chosen.sort();
        chosen.dedup();
        assert_eq!(chosen.len(), 4);
        let all: Vec<&[u8]> = pick(&Sorted::Slice(&entries), 10).iter().map(|e| e.member).collect();
        assert_eq!(all, names.iter().rev().map(|m| m.as_slice()).collect::<Vec<_>>());
        assert_eq!(pick(&Sorted::Slice(&entries), -25).len(), 25);
        assert!(pick(&Sorted::Slice(&[]), -3).is_empty());
    }
}
