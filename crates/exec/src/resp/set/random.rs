//! SPOP and SRANDMEMBER, with and without a count.
//!
//! Redis 7.0's replies: SPOP with a count is a set (`~` in RESP3), SRANDMEMBER with a count
//! an array. When the count covers the whole set both send it in stored order, so an
//! all-integer set comes back sorted, as from Redis's intset; otherwise the order is random.

use proto_resp::{args::parse_i64, error};

use super::super::keyevents::class;
use super::{
    change_set, edit_of, large, splice, with_set, Ctx, Member, ReplyMember, SetView, Work,
};
use crate::resp::pick::{distinct, random_below};
use crate::resp::typed::Edit;

/// `getPositiveLongFromObjectOrReply`'s text, for a count that is not a number or below 0.
const COUNT_NOT_POSITIVE: &str = "ERR value is out of range, must be positive";
/// `getRangeLongFromObjectOrReply(-LONG_MAX, LONG_MAX)`'s text (Redis's grammar).
const COUNT_OUT_OF_RANGE: &str =
    "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
/// Ours: Redis would build a reply of any size (and run out of memory doing it).
const REPLY_TOO_LARGE: &str = "ERR SRANDMEMBER count is too large for one reply";
/// The most bytes a negative-count SRANDMEMBER reply may take.
const REPLY_BYTES_MAX: u64 = 256 << 20;
/// What each pick adds to a reply besides its bytes (at most), for that bound.
const PICK_OVERHEAD_BYTES: usize = 16;

/// SPOP key [count].
pub(super) fn spop(ctx: &mut Ctx<'_>) {
    match ctx.argc() {
        2 => spop_one(ctx),
        3 => spop_count(ctx),
        _ => ctx.error(error::SYNTAX),
    }
}

fn spop_one(ctx: &mut Ctx<'_>) {
    if let Some(popped) = large::pop(ctx, None) {
        if !popped.is_empty() {
            ctx.wrote(class::SET, "spop", 1);
        }
        return ctx.bulk_or_null(popped.first().map(Vec::as_slice));
    }
    let popped = change_set(ctx, 1, |current| {
        let view = current.map(SetView::new).filter(|view| !view.is_empty());
        let picked = view.and_then(|view| view.iter().nth(random_below(view.len())));
        let Some(member) = picked else {
            return (Edit::Keep, None);
        };
        (splice::remove(current, &[member]).0, Some(member.to_vec()))
    });
    if let Some(popped) = popped {
        if popped.is_some() {
            ctx.removed(class::SET, "spop", 1);
        }
        ctx.bulk_or_null(popped.as_deref());
    }
}

fn spop_count(ctx: &mut Ctx<'_>) {
    let count = match parse_i64(ctx.arg(2)) {
        Ok(count) if count >= 0 => count as u64,
        _ => return ctx.error(COUNT_NOT_POSITIVE),
    };
    let taken = usize::try_from(count).ok().and_then(|count| large::pop(ctx, Some(count)));
    if let Some(popped) = taken {
        if !popped.is_empty() {
            ctx.wrote(class::SET, "spop", 1);
        }
        let mut reply = ctx.reply();
        reply.set(popped.len());
        popped.iter().for_each(|member| reply.bulk(member));
        return;
    }
    let popped = change_set(ctx, 1, |current| {
        let mut work = Work::decode(current);
        if count == 0 || work.is_empty() {
            return (Edit::Keep, Vec::new());
        }
        if count >= work.len() as u64 {
            // The whole set, in stored order, and the key goes.
            return (Edit::Delete, work.iter().map(Member::to_vec).collect());
        }
        let picks = distinct(work.len(), count as usize);
        let members: Vec<Member<'_>> = picks.iter().map(|&index| work.nth(index)).collect();
        work.remove_all(members.iter().copied());
        (edit_of(&work), members.into_iter().map(Member::to_vec).collect())
    });
    if let Some(popped) = popped {
        if !popped.is_empty() {
            ctx.removed(class::SET, "spop", 1);
        }
        let mut reply = ctx.reply();
        reply.set(popped.len());
        popped.iter().for_each(|member| reply.bulk(member));
    }
}

/// SRANDMEMBER key [count].
pub(super) fn srandmember(ctx: &mut Ctx<'_>) {
    if ctx.argc() == 2 {
        if let Some(picked) = large::random_members(ctx, 1) {
            return ctx.bulk_or_null(picked.first().map(Vec::as_slice));
        }
    }
    match ctx.argc() {
        2 => with_set(ctx, 1, |ctx, set| {
            let set = set.filter(|set| !set.is_empty());
            match set.and_then(|set| set.iter().nth(random_below(set.len()))) {
                Some(member) => member.reply(&mut ctx.reply()),
                None => ctx.reply().null(),
            }
        }),
        3 => srandmember_count(ctx),
        _ => ctx.error(error::SYNTAX),
    }
}

fn srandmember_count(ctx: &mut Ctx<'_>) {
    let count = match parse_i64(ctx.arg(2)) {
        Ok(i64::MIN) => return ctx.error(COUNT_OUT_OF_RANGE),
        Ok(count) => count,
        Err(e) => return ctx.error(e.message()),
    };
    let positive = usize::try_from(count).ok().filter(|&count| count >= 1);
    if let Some(picked) = positive.and_then(|count| large::random_members(ctx, count)) {
        let mut reply = ctx.reply();
        reply.array(picked.len());
        picked.iter().for_each(|member| reply.bulk(member));
        return;
    }
    if count < 0 && srandmember_repeats_large(ctx, count.unsigned_abs()) {
        return;
    }
    with_set(ctx, 1, |ctx, set| {
        let members: Vec<Member<'_>> = set.iter().flat_map(|set| set.iter()).collect();
        if count == 0 || members.is_empty() {
            return ctx.reply().array(0);
        }
        let wanted = count.unsigned_abs();
        if count < 0 || wanted == 1 {
            // With repeats: each pick is independent.
            let longest = members.iter().map(|m| m.text(&mut Default::default()).len()).max();
            let per_member = (longest.unwrap_or(0) + PICK_OVERHEAD_BYTES) as u64;
            if wanted.saturating_mul(per_member) > REPLY_BYTES_MAX {
                return ctx.error(REPLY_TOO_LARGE);
            }
            let mut reply = ctx.reply();
            reply.array(wanted as usize);
            for _ in 0..wanted {
                members[random_below(members.len())].reply(&mut reply);
            }
            return;
        }
        let mut reply = ctx.reply();
        if wanted >= members.len() as u64 {
            reply.array(members.len());
            members.iter().for_each(|member| member.reply(&mut reply));
            return;
        }
        let picks = distinct(members.len(), wanted as usize);
        reply.array(picks.len());
        picks.iter().for_each(|&index| members[index].reply(&mut reply));
    });
}

/// SRANDMEMBER with a negative count on a set kept outside the store: whether it replied.
/// The draws' own bytes are checked against the bound as they are made (finding the
/// longest member would cost a pass over the set); a count past the bound whatever the
/// members goes to the general path, which refuses it.
fn srandmember_repeats_large(ctx: &mut Ctx<'_>, wanted: u64) -> bool {
    if wanted.saturating_mul(PICK_OVERHEAD_BYTES as u64) > REPLY_BYTES_MAX {
        return false;
    }
    let bytes_max = REPLY_BYTES_MAX as usize;
    match large::random_repeats(ctx, wanted as usize, PICK_OVERHEAD_BYTES, bytes_max) {
        None => false,
        Some(Err(large::TooLarge)) => {
            ctx.error(REPLY_TOO_LARGE);
            true
        }
        Some(Ok(picked)) => {
            let mut reply = ctx.reply();
            reply.array(picked.len());
            picked.iter().for_each(|member| reply.bulk(member));
            true
        }
    }
}
