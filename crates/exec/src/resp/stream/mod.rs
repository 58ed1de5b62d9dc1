//! Redis streams: XADD ... XTRIM, consumer groups (XGROUP, XREADGROUP, XACK, XPENDING,
//! XCLAIM, XAUTOCLAIM) and XINFO.
//!
//! A stream is always kept outside the store (`values::stream::StreamValue` in the `owned`
//! registry, its bytes charged to the store's limit); its key's item is an owner of kind
//! [`ValueKind::Stream`], so DEL, EXPIRE, RENAME, eviction and the rest treat it as one
//! key. A write runs inside one `Store::modify` of the key ([`write`]): under the key's
//! stripe lock (atomic with the key's other writes on every worker), editing the value in
//! place under its entry's mutex, creating the key when the command does. A read takes
//! the entry's mutex only ([`read`]). An empty stream stays (Redis deletes it only when
//! told to).
//!
//! Files: `id` (ID arguments), `add` (XADD, XTRIM, XDEL, XSETID), `range` (XLEN, XRANGE,
//! XREVRANGE), `xread` (XREAD, XREADGROUP), `groups` (the consumer-group commands), `info` (XINFO).

mod add;
mod groups;
mod id;
mod info;
mod range;
#[cfg(test)]
mod tests;
mod xread;

use proto_resp::{commands::StreamId as Cmd, Reply, SubcommandId};
use store::{Change, ValueKind};
use values::stream::{Entry, StreamValue};

use super::{
    count_read,
    typed::{Failure, Owning},
    Ctx,
};
use crate::owned;

pub(super) use xread::{serve_group_waiter, serve_read_waiter};

/// Runs one command of this family (XREAD and XREADGROUP may block).
pub(super) fn dispatch(ctx: &mut Ctx<'_>, id: Cmd) -> crate::Flow {
    match id {
        Cmd::Xread => return xread::xread(ctx),
        Cmd::Xreadgroup => return xread::xreadgroup(ctx),
        Cmd::Xadd => add::xadd(ctx),
        Cmd::Xtrim => add::xtrim(ctx),
        Cmd::Xdel => add::xdel(ctx),
        Cmd::Xsetid => add::xsetid(ctx),
        Cmd::Xlen => range::xlen(ctx),
        Cmd::Xrange => range::xrange(ctx, false),
        Cmd::Xrevrange => range::xrange(ctx, true),
        Cmd::Xack => groups::xack(ctx),
        Cmd::Xpending => groups::xpending(ctx),
        Cmd::Xclaim => groups::xclaim(ctx),
        Cmd::Xautoclaim => groups::xautoclaim(ctx),
    }
    crate::Flow::Continue
}

/// Runs one XGROUP or XINFO subcommand.
pub(super) fn dispatch_sub(ctx: &mut Ctx<'_>, id: SubcommandId) {
    use SubcommandId as S;
    match id {
        S::XgroupCreate => groups::create(ctx),
        S::XgroupSetid => groups::setid(ctx),
        S::XgroupDestroy => groups::destroy(ctx),
        S::XgroupCreateconsumer => groups::create_consumer(ctx),
        S::XgroupDelconsumer => groups::delete_consumer(ctx),
        S::XgroupHelp => super::help::reply(ctx, super::help::XGROUP),
        S::XinfoStream => info::stream(ctx),
        S::XinfoGroups => info::groups(ctx),
        S::XinfoConsumers => info::consumers(ctx),
        S::XinfoHelp => super::help::reply(ctx, super::help::XINFO),
        _ => unreachable!("only XGROUP and XINFO subcommands are routed here"),
    }
}

/// The stream of key argument `index`, read under its entry's mutex: `f` gets `None`
/// when the key is absent. Counts a hit or a miss as Redis's read lookups do.
fn read<R>(
    ctx: &mut Ctx<'_>,
    index: usize,
    f: impl FnOnce(Option<&StreamValue>, &mut Reply<'_>) -> R,
) -> Result<R, Failure> {
    let (shared, protocol) = (ctx.shared, ctx.session.protocol);
    let owned = {
        let reader = shared.core.store.reader();
        let (key, _) = ctx.key_and_out(index);
        match reader.get(key) {
            None => None,
            Some(item) if item.value_kind() != ValueKind::Stream || !item.is_owner() => {
                return Err(Failure::WrongType)
            }
            Some(item) => shared.owned.get(item.value()),
        }
    };
    count_read(ctx.counters, owned.is_some());
    let mut reply = Reply::new(ctx.out, protocol);
    let Some(owned) = owned else { return Ok(f(None, &mut reply)) };
    let state = owned.state.lock();
    match &state.value {
        owned::Value::Stream(stream) if !state.released => Ok(f(Some(stream), &mut reply)),
        // Deleted since it was found: as if it were absent.
        _ => Ok(f(None, &mut reply)),
    }
}

/// Whether a write makes the stream when its key is absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Create {
    Yes,
    No,
}

/// What a write did to the stream: whether it changed (WATCH sees it, and the charge is
/// settled), and what the command makes of it.
struct Wrote<R> {
    changed: bool,
    out: R,
}

fn changed<R>(out: R) -> Wrote<R> {
    Wrote { changed: true, out }
}

fn unchanged<R>(out: R) -> Wrote<R> {
    Wrote { changed: false, out }
}

/// Changes the stream of key argument `index` under the key's lock: `f` gets it (`None`
/// when absent, unless `create` makes a new empty one first, which is stored only when
/// `f` reports a change). The change's growth is charged to the store afterwards.
fn write<R>(
    ctx: &mut Ctx<'_>,
    index: usize,
    create: Create,
    mut f: impl FnMut(Option<&mut StreamValue>) -> Wrote<R>,
) -> Result<R, Failure> {
    let shared = ctx.shared;
    let mut owning = Owning::new(shared);
    let mut any_change = false;
    let (key, _) = ctx.key_and_out(index);
    let result = shared.core.store.modify_within(key, super::PROTO_MAX_BULK_LEN, |current| {
        owning.start_run();
        match current {
            Some(item) if item.value_kind() != ValueKind::Stream || !item.is_owner() => {
                (Change::Keep, Err(Failure::WrongType))
            }
            Some(item) => {
                let owned = owning.touch(&item);
                let mut state = owned.state.lock();
                let owned::Value::Stream(stream) = &mut state.value else {
                    return (Change::Keep, Err(Failure::WrongType));
                };
                let wrote = f(Some(stream));
                any_change |= wrote.changed;
                if wrote.changed {
                    state.value_bytes = state.value.charged_bytes();
                    state.changes += 1;
                }
                (Change::Keep, Ok(wrote.out))
            }
            None if create == Create::No => (Change::Keep, Ok(f(None).out)),
            None => {
                let mut stream = Box::<StreamValue>::default();
                let wrote = f(Some(&mut stream));
                if !wrote.changed {
                    return (Change::Keep, Ok(wrote.out));
                }
                any_change = true;
                (owning.write_value(ValueKind::Stream, owned::Value::Stream(stream)), Ok(wrote.out))
            }
        }
    });
    if any_change {
        // A group's state may change with no event (XACK, XCLAIM): replicas hear it.
        ctx.changed_quietly(index);
    }
    owning.finish(result.map(|(_, out)| out))
}

/// Replies with one entry: its ID and its fields and values, flat.
fn reply_entry(reply: &mut Reply<'_>, entry: Entry<'_>) {
    reply.array(2);
    reply.bulk(entry.id.to_string().as_bytes());
    reply.array(entry.field_count() * 2);
    for (name, value) in entry.pairs() {
        reply.bulk(name);
        reply.bulk(value);
    }
}

/// Replies with entries as XRANGE does.
fn reply_entries<'e>(reply: &mut Reply<'_>, entries: impl Iterator<Item = Entry<'e>>) {
    let deferred = reply.deferred(proto_resp::reply::Aggregate::Array);
    let mut n = 0;
    for entry in entries {
        reply_entry(reply, entry);
        n += 1;
    }
    reply.set_deferred(deferred, n);
}

/// Redis's `-NOGROUP` error for a missing key or group.
fn no_group(key: &[u8], group: &[u8]) -> String {
    format!(
        "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    )
}
