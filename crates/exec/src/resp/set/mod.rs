//! Redis sets: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SSCAN here; SPOP and
//! SRANDMEMBER in `random`; SMOVE, SINTER, SINTERCARD, SUNION, SDIFF and the STORE forms in
//! `algebra`. The value's layout is in `encoding`.
//!
//! Replies follow Redis 7.0: sets (`~` in RESP3) for SMEMBERS, SINTER, SUNION, SDIFF and SPOP
//! with a count; arrays for SRANDMEMBER with a count, SMISMEMBER and SSCAN. Member order is
//! unspecified by Redis, but an all-integer set is kept sorted as Redis's intset is, so those
//! replies match Redis byte for byte.

use proto_resp::{commands::SetId, Reply};
use store::ValueKind;

use super::keyevents::class;
use super::{
    glob::{self, Case},
    scan::{self, ScanOptions},
    typed::{self, Edit},
    Ctx,
};
use crate::keyspace;

mod algebra;
mod large;
mod random;
mod splice;

use encoding::{IntText, Member, SetView, Work};
use values::set as encoding;

/// A member written as a bulk string (the encoding knows no protocol).
trait ReplyMember {
    fn reply(&self, reply: &mut Reply<'_>);
}

impl ReplyMember for Member<'_> {
    fn reply(&self, reply: &mut Reply<'_>) {
        reply.bulk(self.text(&mut IntText::default()));
    }
}

/// Runs one command of this family.
/// A set's members as text, for the sorted-set commands that read plain sets as inputs
/// (ZUNION, ZINTER, ZDIFF and ZINTERCARD give each member score 1, as Redis does).
/// OBJECT ENCODING's name for a set kept in the store: an intset when its members are
/// all integers (past `set-max-intset-entries` it moves out of the store, see
/// `thresholds.rs`), else a hash table, as Redis 7.0 keeps every set of strings.
pub(super) fn encoding_name(encoded: &[u8]) -> &'static str {
    match encoding::SetView::new(encoded) {
        encoding::SetView::Ints { .. } => "intset",
        encoding::SetView::Strings { .. } => "hashtable",
    }
}

pub(super) fn members_text(encoded: &[u8]) -> Vec<Vec<u8>> {
    // (an owner's encoding comes from `typed::encoding`)
    encoding::SetView::new(encoded).iter().map(|member| member.to_vec()).collect()
}

pub(super) fn dispatch(ctx: &mut Ctx<'_>, id: SetId) {
    match id {
        SetId::Sadd => sadd(ctx),
        SetId::Srem => srem(ctx),
        SetId::Smembers => smembers(ctx),
        SetId::Sismember => sismember(ctx),
        SetId::Smismember => smismember(ctx),
        SetId::Scard => scard(ctx),
        SetId::Sscan => sscan(ctx),
        SetId::Spop => random::spop(ctx),
        SetId::Srandmember => random::srandmember(ctx),
        SetId::Smove => algebra::smove(ctx),
        SetId::Sinter => algebra::sinter(ctx),
        SetId::Sintercard => algebra::sintercard(ctx),
        SetId::Sinterstore => algebra::sinterstore(ctx),
        SetId::Sunion => algebra::combine(ctx, algebra::Op::Union, algebra::Target::Reply),
        SetId::Sunionstore => algebra::combine(ctx, algebra::Op::Union, algebra::Target::Store),
        SetId::Sdiff => algebra::combine(ctx, algebra::Op::Diff, algebra::Target::Reply),
        SetId::Sdiffstore => algebra::combine(ctx, algebra::Op::Diff, algebra::Target::Store),
    }
}

/// The stored form of key argument `index`, encoded into `scratch` (not the context's, so
/// the context stays free for the reply while the key is in use).
fn stored_key<'a: 'k, 'k>(ctx: &Ctx<'a>, index: usize, scratch: &'k mut Vec<u8>) -> &'k [u8] {
    keyspace::encode(ctx.session.db, ctx.arg(index), scratch)
}

/// Runs `f` with the set at key argument `index` (`None` when absent), or replies
/// WRONGTYPE. Counts the read as Redis's `lookupKeyRead` does.
fn with_set(ctx: &mut Ctx<'_>, index: usize, f: impl FnOnce(&mut Ctx<'_>, Option<SetView<'_>>)) {
    let shared = ctx.shared;
    let mut scratch = Vec::new();
    let key = stored_key(ctx, index, &mut scratch);
    let reader = shared.core.store.reader();
    match typed::read(&reader, key, ValueKind::Set) {
        Ok(item) => {
            super::count_read(ctx.counters, item.is_some());
            let encoded = item.as_ref().and_then(|item| typed::encoding(shared, item));
            f(ctx, encoded.as_deref().map(SetView::new))
        }
        Err(failure) => ctx.failure(failure),
    }
}

/// Changes the set at key argument `index` with `f` (see [`typed::modify`]); replies the
/// failure and gives `None` when the key holds another type or the store refused.
fn change_set<R>(
    ctx: &mut Ctx<'_>,
    index: usize,
    f: impl FnMut(Option<&[u8]>) -> (Edit, R),
) -> Option<R> {
    let mut scratch = Vec::new();
    let key = stored_key(ctx, index, &mut scratch);
    match typed::modify(ctx, key, ValueKind::Set, f) {
        Ok(out) => Some(out),
        Err(failure) => {
            ctx.failure(failure);
            None
        }
    }
}

/// Write the set, or delete the key once it is empty.
fn edit_of(work: &Work<'_>) -> Edit {
    work.encode().map_or(Edit::Delete, Edit::Write)
}

/// The members of arguments `from..`, as members.
fn member_args<'a>(ctx: &Ctx<'a>, from: usize) -> impl Iterator<Item = Member<'a>> + Clone {
    let cmd = ctx.cmd;
    (from..ctx.argc()).map(move |index| Member::of(cmd.arg(index).expect("arity checked")))
}

fn sadd(ctx: &mut Ctx<'_>) {
    let texts: Vec<&[u8]> = (2..ctx.argc()).map(|i| ctx.arg(i)).collect();
    match large::add(ctx, &texts) {
        Some(Ok(added)) => return added_done(ctx, added),
        Some(Err(large::TooLarge)) => return ctx.refused(crate::core::Refusal::TooLarge),
        None => {}
    }
    let members: Vec<Member<'_>> = member_args(ctx, 2).collect();
    if let Some(added) = change_set(ctx, 1, |current| splice::add(current, &members)) {
        added_done(ctx, added as i64);
    }
}

fn added_done(ctx: &mut Ctx<'_>, added: i64) {
    if added > 0 {
        ctx.wrote(class::SET, "sadd", 1);
    }
    ctx.reply().integer(added);
}

fn removed_done(ctx: &mut Ctx<'_>, removed: i64) {
    if removed > 0 {
        ctx.removed(class::SET, "srem", 1);
    }
    ctx.reply().integer(removed);
}

fn srem(ctx: &mut Ctx<'_>) {
    let texts: Vec<&[u8]> = (2..ctx.argc()).map(|i| ctx.arg(i)).collect();
    if let Some(removed) = large::remove(ctx, &texts) {
        return removed_done(ctx, removed);
    }
    let members: Vec<Member<'_>> = member_args(ctx, 2).collect();
    if let Some(removed) = change_set(ctx, 1, |current| splice::remove(current, &members)) {
        removed_done(ctx, removed as i64);
    }
}

/// Writes `members` as a set reply (`~` in RESP3).
fn reply_members<'m>(ctx: &mut Ctx<'_>, len: usize, members: impl Iterator<Item = Member<'m>>) {
    let mut reply = ctx.reply();
    reply.set(len);
    members.for_each(|member| member.reply(&mut reply));
}

fn smembers(ctx: &mut Ctx<'_>) {
    with_set(ctx, 1, |ctx, set| match set {
        Some(set) => reply_members(ctx, set.len(), set.iter()),
        None => ctx.reply().set(0),
    });
}

fn sismember(ctx: &mut Ctx<'_>) {
    if let Some(found) = large::contains(ctx, &[ctx.arg(2)]) {
        return ctx.reply().integer(i64::from(found[0]));
    }
    let member = Member::of(ctx.arg(2));
    with_set(ctx, 1, |ctx, set| {
        let found = set.is_some_and(|set| set.contains(member));
        ctx.reply().integer(i64::from(found));
    });
}

fn smismember(ctx: &mut Ctx<'_>) {
    let texts: Vec<&[u8]> = (2..ctx.argc()).map(|i| ctx.arg(i)).collect();
    if let Some(found) = large::contains(ctx, &texts) {
        let mut reply = ctx.reply();
        reply.array(found.len());
        found.iter().for_each(|&found| reply.integer(i64::from(found)));
        return;
    }
    let members = member_args(ctx, 2);
    with_set(ctx, 1, |ctx, set| {
        let lookup = set.map(|set| set.lookup());
        let mut reply = ctx.reply();
        reply.array(members.clone().count());
        for member in members {
            let found = lookup.as_ref().is_some_and(|lookup| lookup.contains(member));
            reply.integer(i64::from(found));
        }
    });
}

fn scard(ctx: &mut Ctx<'_>) {
    if let Some(len) = large::len(ctx) {
        return ctx.reply().integer(len as i64);
    }
    with_set(ctx, 1, |ctx, set| {
        ctx.reply().integer(set.map_or(0, |set| set.len()) as i64);
    });
}

/// SSCAN key cursor [MATCH pattern] [COUNT count]. A set Redis keeps compact (an intset of
/// at most 512 integers, or at most 128 members of at most 64 bytes) comes back whole with
/// cursor 0, as from Redis; a larger one in pages (`scan::page`), in the order of a fixed
/// hash of its members, so that a member present throughout is returned even when the set
/// changes between calls. Checked in Redis's order: the cursor, then the key (a missing
/// key answers before the options are read), then the options.
fn sscan(ctx: &mut Ctx<'_>) {
    let Some(cursor) = scan::parse_cursor(ctx.arg(2)) else {
        return ctx.error(INVALID_CURSOR);
    };
    let options = scan::parse_options(ctx, 3, scan::Extra::None);
    if let Ok(ScanOptions { pattern, count, .. }) = options {
        if let Some((next, page)) = large::scan(ctx, cursor, count) {
            let wanted = |member: &&Vec<u8>| {
                pattern.is_none_or(|pattern| glob::matches(pattern, member, Case::Sensitive))
            };
            let found: Vec<&Vec<u8>> = page.iter().filter(wanted).collect();
            let mut reply = ctx.reply();
            reply.array(2);
            reply.bulk(next.to_string().as_bytes());
            reply.array(found.len());
            return found.iter().for_each(|member| reply.bulk(member));
        }
    }
    with_set(ctx, 1, |ctx, set| {
        let (next, found) = match set.map(|set| (set, options)) {
            None => (0, Vec::new()),
            Some((_, Err(message))) => return ctx.error(message),
            Some((set, Ok(options))) => matching(set, cursor, options),
        };
        let mut reply = ctx.reply();
        reply.array(2);
        reply.bulk(next.to_string().as_bytes());
        reply.array(found.len());
        found.iter().for_each(|member| member.reply(&mut reply));
    });
}

/// The page of `set` at `cursor` and the cursor after it, keeping the members that match
/// the pattern.
fn matching<'a>(set: SetView<'a>, cursor: u64, options: ScanOptions<'_>) -> (u64, Vec<Member<'a>>) {
    let mut buf = IntText::default();
    let (next, page) = scan_page(set, cursor, options.count);
    let Some(pattern) = options.pattern else {
        return (next, page);
    };
    let page = page
        .into_iter()
        .filter(|member| glob::matches(pattern, member.text(&mut buf), Case::Sensitive))
        .collect();
    (next, page)
}

/// Redis's compact set encodings: an intset of at most this many integers, or a listpack
/// of at most [`ONE_PAGE_MEMBERS_MAX`] members of at most [`ONE_PAGE_MEMBER_LEN_MAX`]
/// bytes. Such a set is scanned in one call.
const ONE_PAGE_INTS_MAX: usize = 512;
const ONE_PAGE_MEMBERS_MAX: usize = 128;
const ONE_PAGE_MEMBER_LEN_MAX: usize = 64;

/// One page of a scan of `set` and the cursor that follows it (0 at the end).
fn scan_page(set: SetView<'_>, cursor: u64, count: usize) -> (u64, Vec<Member<'_>>) {
    let mut buf = IntText::default();
    let one_page = match set {
        SetView::Ints { .. } => set.len() <= ONE_PAGE_INTS_MAX,
        _ => {
            set.len() <= ONE_PAGE_MEMBERS_MAX
                && set.iter().all(|m| m.text(&mut buf).len() <= ONE_PAGE_MEMBER_LEN_MAX)
        }
    };
    if one_page {
        return (0, set.iter().collect());
    }
    let rest: Vec<(u64, Member<'_>)> = set
        .iter()
        .map(|member| (scan::member_hash(member.text(&mut buf)), member))
        .filter(|(hash, _)| *hash >= cursor)
        .collect();
    scan::page(rest, count, set.len())
}

const INVALID_CURSOR: &str = "ERR invalid cursor";

#[cfg(test)]
mod tests;
