//! Redis sorted sets: ZADD ... ZSCAN, ZRANGESTORE and the ZUNION/ZINTER/ZDIFF family.
//!
//! A sorted set is one store item of kind [`ValueKind::ZSet`] whose value lists its
//! members in (score, member) order, each as an 8-byte score and a length-prefixed member
//! (see [`encoding`] for the layout and why). Range commands are a slice of that order;
//! changes run inside one `typed::modify` and rewrite the value. A set whose encoding
//! passes 32 KiB moves out of the store (`owned::ZSetValue`): reads see it through
//! [`view::Sorted`] as they see a decoded encoding, and the common changes edit it in place
//! (`large`), each O(log n) per member instead of O(size).
//!
//! Replies follow Redis 7.0: scores as `%.17g` (bulk strings in RESP2, doubles in RESP3,
//! see [`range::format_score`]); WITHSCORES replies are flat in RESP2 and pairs in RESP3.
//!
//! Files: `encoding` (the value bytes), `range` (score/lex/rank ranges, score text),
//! `read` (lookups and counts), `zrange` (the ZRANGE family and ZRANGESTORE), `write`
//! (ZADD ... ZMPOP), `algebra` (ZUNION, ZINTER, ZDIFF and their STORE forms, ZINTERCARD),
//! `view` (what reads see), `large` (changes of a set kept outside the store).

use proto_resp::commands::ZSetId;
use store::{Item, Reader, ValueKind};

use super::typed;
use super::Ctx;
use crate::owned;
use encoding::{Entry, ZSet};
use values::zset as encoding;
use view::Sorted;

/// A sorted set's members, lowest score first, from its encoding (SORT reads its source
/// this way).
pub(super) fn members_of(encoded: &[u8]) -> Vec<&[u8]> {
    ZSet::decode(encoded).entries.into_iter().map(|entry| entry.member).collect()
}

mod algebra;
mod large;
mod range;
mod read;
mod view;
mod write;
mod zrange;

pub(super) use range::parse_score;
pub(super) use write::geoadd;
pub(super) use write::{parse_zmpop_from, pop_for_bzmpop, pop_for_bzpop, End as ZEnd};

/// Runs one command of this family.
pub(super) fn dispatch(ctx: &mut Ctx<'_>, id: ZSetId) {
    use zrange::{Direction as D, Kind as K};
    use ZSetId as Z;
    match id {
        Z::Zadd => write::zadd(ctx, write::Mode::Zadd),
        Z::Zincrby => write::zadd(ctx, write::Mode::Zincrby),
        Z::Zrem => write::zrem(ctx),
        Z::Zremrangebyrank => write::zremrange(ctx, K::Rank),
        Z::Zremrangebyscore => write::zremrange(ctx, K::Score),
        Z::Zremrangebylex => write::zremrange(ctx, K::Lex),
        Z::Zpopmin => write::zpop(ctx, write::End::Min),
        Z::Zpopmax => write::zpop(ctx, write::End::Max),
        Z::Zmpop => write::zmpop(ctx),
        Z::Zcard => read::zcard(ctx),
        Z::Zcount => read::zcount(ctx),
        Z::Zlexcount => read::zlexcount(ctx),
        Z::Zscore => read::zscore(ctx),
        Z::Zmscore => read::zmscore(ctx),
        Z::Zrank => read::zrank(ctx, D::Forward),
        Z::Zrevrank => read::zrank(ctx, D::Reverse),
        Z::Zrandmember => read::zrandmember(ctx),
        Z::Zscan => read::zscan(ctx),
        Z::Zrange => zrange::zrange(ctx, zrange::Form::Zrange),
        Z::Zrangestore => zrange::zrange(ctx, zrange::Form::Store),
        Z::Zrevrange => zrange::zrange(ctx, zrange::Form::Fixed(K::Rank, D::Reverse)),
        Z::Zrangebyscore => zrange::zrange(ctx, zrange::Form::Fixed(K::Score, D::Forward)),
        Z::Zrevrangebyscore => zrange::zrange(ctx, zrange::Form::Fixed(K::Score, D::Reverse)),
        Z::Zrangebylex => zrange::zrange(ctx, zrange::Form::Fixed(K::Lex, D::Forward)),
        Z::Zrevrangebylex => zrange::zrange(ctx, zrange::Form::Fixed(K::Lex, D::Reverse)),
        Z::Zunion => algebra::combine(ctx, algebra::Op::Union, algebra::Output::Reply),
        Z::Zinter => algebra::combine(ctx, algebra::Op::Inter, algebra::Output::Reply),
        Z::Zdiff => algebra::combine(ctx, algebra::Op::Diff, algebra::Output::Reply),
        Z::Zunionstore => algebra::combine(ctx, algebra::Op::Union, algebra::Output::Store),
        Z::Zinterstore => algebra::combine(ctx, algebra::Op::Inter, algebra::Output::Store),
        Z::Zdiffstore => algebra::combine(ctx, algebra::Op::Diff, algebra::Output::Store),
        Z::Zintercard => algebra::combine(ctx, algebra::Op::Inter, algebra::Output::Count),
    }
}

/// The stored form of key argument `index` (owned, so that `typed::modify` can borrow the
/// context beside it).
fn key_at(ctx: &Ctx<'_>, index: usize) -> Vec<u8> {
    let mut scratch = Vec::new();
    crate::keyspace::encode(ctx.session.db, ctx.arg(index), &mut scratch).to_vec()
}

/// Key argument `index` as a sorted set; `Err` once WRONGTYPE has been replied. Counts a
/// hit or a miss for INFO as Redis's `lookupKeyRead` does (a key of another type is a hit).
fn lookup<'r>(
    ctx: &mut Ctx<'_>,
    reader: &'r Reader<'_>,
    index: usize,
) -> Result<Option<Item<'r>>, ()> {
    let found = typed::read(reader, ctx.key(index), ValueKind::ZSet);
    super::count_read(ctx.counters, !matches!(found, Ok(None)));
    match found {
        Ok(item) => Ok(item),
        Err(failure) => {
            ctx.failure(failure);
            Err(())
        }
    }
}

/// A sorted set where it is kept: its encoding in the store, or the value outside it.
#[derive(Clone, Copy)]
enum Stored<'a> {
    Encoded(&'a [u8]),
    Owned(&'a owned::ZSetValue),
}

impl Stored<'_> {
    fn len(self) -> usize {
        match self {
            Stored::Encoded(encoded) => encoding::iter(encoded).count(),
            Stored::Owned(set) => set.len(),
        }
    }

    /// `member`'s rank and score (one walk of an encoding, no decoding).
    fn find(self, member: &[u8]) -> Option<(usize, f64)> {
        match self {
            Stored::Encoded(encoded) => encoding::iter(encoded)
                .enumerate()
                .find(|(_, e)| e.member == member)
                .map(|(rank, e)| (rank, e.score)),
            Stored::Owned(set) => set.rank(member),
        }
    }

    fn score(self, member: &[u8]) -> Option<f64> {
        match self {
            Stored::Encoded(encoded) => encoding::locate(encoded, member).map(|(_, s)| s),
            Stored::Owned(set) => set.score(member),
        }
    }
}

/// Runs `f` on key argument `index` as a sorted set (`None` when absent), read where it
/// is: its encoding, or the value kept outside the store under that value's mutex (so `f`
/// must not change the store). `None` once WRONGTYPE has been replied. Counts the read as
/// [`lookup`] does.
fn read_stored<R>(
    ctx: &mut Ctx<'_>,
    index: usize,
    f: impl FnOnce(&mut Ctx<'_>, Option<Stored<'_>>) -> R,
) -> Option<R> {
    let shared = ctx.shared;
    for _ in 0..3 {
        let reader = shared.core.store.reader();
        let item = match lookup(ctx, &reader, index).ok()? {
            Some(item) if item.is_owner() => item,
            item => return Some(f(ctx, item.map(|item| Stored::Encoded(item.value())))),
        };
        let Some(kept) = shared.owned.get(item.value()) else { continue };
        let state = kept.state.lock();
        if let (false, owned::Value::ZSet(set)) = (state.released, &state.value) {
            return Some(f(ctx, Some(Stored::Owned(set))));
        }
        // Deleted or replaced since it was read: read the key again (counted again, as
        // a client that asked again would be).
    }
    Some(f(ctx, None))
}

/// A sorted set as the GEO commands read it: scores by member, and members by score range.
#[derive(Clone, Copy)]
pub(super) struct Scores<'a>(Stored<'a>);

impl Scores<'_> {
    pub(super) fn score(self, member: &[u8]) -> Option<f64> {
        self.0.score(member)
    }

    /// Calls `f` on each member whose score is in `min..max` (`max` excluded), lowest
    /// first, until it returns `false`.
    pub(super) fn scan(self, min: f64, max: f64, mut f: impl FnMut(&[u8], f64) -> bool) {
        match self.0 {
            Stored::Encoded(encoded) => {
                let entries = encoding::iter(encoded).skip_while(|e| e.score < min);
                for entry in entries.take_while(|e| e.score < max) {
                    if !f(entry.member, entry.score) {
                        return;
                    }
                }
            }
            Stored::Owned(set) => {
                let first = set.partition_point(|score, _| score < min);
                for (score, member) in set.iter_from(first).take_while(|(s, _)| *s < max) {
                    if !f(member, score) {
                        return;
                    }
                }
            }
        }
    }
}

/// Runs `f` on key argument `index` as a sorted set (`None` when absent), read where it
/// is (see [`read_stored`]: `f` must not change the store). `None` once WRONGTYPE has been
/// replied; the read is counted for INFO.
pub(super) fn read_scores<R>(
    ctx: &mut Ctx<'_>,
    index: usize,
    f: impl FnOnce(&mut Ctx<'_>, Option<Scores<'_>>) -> R,
) -> Option<R> {
    read_stored(ctx, index, |ctx, stored| f(ctx, stored.map(Scores)))
}

/// Writes `entries` (no member twice) as a sorted set under key argument `dst_index`,
/// replacing whatever was there, or deletes it when there are none; replies the count.
pub(super) fn store_scored(ctx: &mut Ctx<'_>, dst_index: usize, entries: &[(f64, &[u8])]) {
    let entries: Vec<Entry<'_>> =
        entries.iter().map(|&(score, member)| Entry { score, member }).collect();
    zrange::store_result(ctx, dst_index, &entries);
}

/// [`read_stored`] for the commands that read by rank or range: an encoding is decoded.
fn read_view<R>(
    ctx: &mut Ctx<'_>,
    index: usize,
    f: impl FnOnce(&mut Ctx<'_>, Option<Sorted<'_>>) -> R,
) -> Option<R> {
    read_stored(ctx, index, |ctx, stored| match stored {
        None => f(ctx, None),
        Some(Stored::Encoded(encoded)) => {
            let set = ZSet::decode(encoded);
            f(ctx, Some(Sorted::Slice(&set.entries)))
        }
        Some(Stored::Owned(set)) => f(ctx, Some(Sorted::Owned(set))),
    })
}

/// Runs `f` on key argument `index`'s encoding under its lock (see `typed::modify`) and
/// replies the failure if there is one.
fn modify<R>(
    ctx: &mut Ctx<'_>,
    index: usize,
    f: impl FnMut(Option<&[u8]>) -> (typed::Edit, R),
) -> Option<R> {
    let key = key_at(ctx, index);
    match typed::modify(ctx, &key, ValueKind::ZSet, f) {
        Ok(out) => Some(out),
        Err(failure) => {
            ctx.failure(failure);
            None
        }
    }
}

impl Ctx<'_> {
    /// A score: a bulk string in RESP2, a double in RESP3.
    fn score(&mut self, score: f64) {
        range::put_score(self.out, self.session.protocol, score);
    }

    /// Members, and with `scores` their scores: flat in RESP2, `[member, score]` pairs in
    /// RESP3 (Redis's ZRANGE ... WITHSCORES shape).
    fn entries<'e>(&mut self, entries: impl ExactSizeIterator<Item = Entry<'e>>, scores: bool) {
        let resp3 = self.session.protocol == proto_resp::Protocol::Resp3;
        let len = entries.len();
        self.reply().array(if scores && !resp3 { len * 2 } else { len });
        for entry in entries {
            if scores && resp3 {
                self.reply().array(2);
            }
            self.reply().bulk(entry.member);
            if scores {
                self.score(entry.score);
            }
        }
    }
}

/// `getPositiveLongFromObjectOrReply`'s text when the caller gives none (ZPOPMIN's count):
/// for a negative number and for one that is not a number at all.
const MUST_BE_POSITIVE: &str = "ERR value is out of range, must be positive";

/// An integer of at least `min`, else `message` (Redis's `getRangeLongFromObjectOrReply`
/// gives one message both for "not an integer" and for "out of range").
fn parse_long_in(text: &[u8], min: i64, message: &'static str) -> Result<i64, &'static str> {
    match proto_resp::args::parse_i64(text) {
        Ok(n) if n >= min => Ok(n),
        _ => Err(message),
    }
}

#[cfg(test)]
mod tests {
    use crate::resp::testkit::Harness;

    /// Goal: the handlers agree with the wire transcripts on the basics, in both
    /// protocols, so `cargo test` guards them without a server. Method: wire table.
    #[test]
    fn basics_in_both_protocols() {
        let mut h = Harness::new();
        h.check(&[
            ("ZADD z 1 a 1.1 b -inf c", ":3\r\n"),
            ("ZSCORE z b", "$18\r\n1.1000000000000001\r\n"),
            ("ZRANGE z 0 -1 WITHSCORES", "*6\r\n$1\r\nc\r\n$4\r\n-inf\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$18\r\n1.1000000000000001\r\n"),
            ("ZADD z NX XX 1 a", "-ERR XX and NX options at the same time are not compatible\r\n"),
            ("ZRANGEBYSCORE z x 1", "-ERR min or max is not a float\r\n"),
            ("SET s v", "+OK\r\n"),
            ("ZCARD s", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
            ("ZREM z a b c", ":3\r\n"),
            ("EXISTS z", ":0\r\n"),
        ]);
        h.check3(&[
            ("ZADD z 2.5 a 1 b", ":2\r\n"),
            ("ZSCORE z a", ",2.5\r\n"),
            ("ZRANGE z 0 -1 WITHSCORES", "*2\r\n*2\r\n$1\r\nb\r\n,1\r\n*2\r\n$1\r\na\r\n,2.5\r\n"),
            ("ZPOPMIN z", "*2\r\n$1\r\nb\r\n,1\r\n"),
            ("ZPOPMIN z 1", "*1\r\n*2\r\n$1\r\na\r\n,2.5\r\n"),
            ("ZMPOP 1 z MIN", "_\r\n"),
        ]);
    }

    /// Goal: a huge negative ZRANDMEMBER count is refused instead of building a reply that
    /// cannot fit in memory.
    #[test]
    fn random_draws_are_bounded() {
        let mut h = Harness::new();
        h.check(&[
            ("ZADD z 1 a", ":1\r\n"),
            ("ZRANDMEMBER z -3", "*3\r\n$1\r\na\r\n$1\r\na\r\n$1\r\na\r\n"),
            ("ZRANDMEMBER z -1000000000", "-ERR value is out of range\r\n"),
        ]);
    }
}
