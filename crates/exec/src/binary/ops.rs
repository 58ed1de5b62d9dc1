//! The store family, delete, incr/decr, flush and stat: each a call to its core (or to the
//! text protocol's stats groups), replying with memcached's binary statuses.

use proto_memcache::{
    binary::{
        compose_error_message, compose_response, BinRequest, Opcode, Reply, Status,
        OUT_OF_MEMORY_STORING,
    },
    text::ArithOp,
};
use store::{Mode, StoreOptions};

use super::{refusal_status, Ctx};
use crate::{
    core::{
        arith::{self, Arith, ArithOutcome},
        delete::{self, DeleteOutcome},
        flush::FlushOutcome,
        storage::{self, OnRefusal, StoreOutcome, Write},
        Refusal,
    },
    memcache::{
        admin::flush_by_time,
        detail::{self, Event},
        expiry, stats, watch, Changed, Session,
    },
};

/// Incr/Decr with this exptime do not create a missing item (memcached's rule).
const NO_VIVIFY: u32 = u32::MAX;

/// Set, Add, Replace, Append, Prepend. A CAS in the request turns the first three into a
/// compare-and-swap (memcached's `NREAD_CAS`) and guards the other two.
pub(super) fn store(
    ctx: &mut Ctx<'_>,
    session: &mut Session,
    request: &BinRequest<'_>,
    loud: Opcode,
) {
    let (flags, exptime) = request.flags_and_exptime();
    let cas = request.cas;
    let mode = match loud {
        Opcode::Append => Mode::Append,
        Opcode::Prepend => Mode::Prepend,
        _ if cas != 0 => Mode::Cas(cas),
        Opcode::Add => Mode::Add,
        Opcode::Replace => Mode::Replace,
        _ => Mode::Set,
    };
    let options =
        StoreOptions { compare_cas: (cas != 0).then_some(cas), ..StoreOptions::default() };
    detail::record(&ctx.view.memcache().prefix_stats, request.key, Event::Set);
    let conn_number = session.conn_number;
    let write = Write {
        key: session.key(request.key),
        value: request.value,
        flags,
        expiry: expiry(i64::from(exptime), ctx.now_ms()),
        mode,
        options,
        vivify: None,
        on_refusal: OnRefusal::DropOldIfSet,
    };
    let (outcome, dropped) = storage::store_telling_drop(&ctx.view.core().store, &write);
    storage::count(ctx.counters, mode, &outcome);
    ctx.changed = Changed::of_store(&outcome, dropped);
    if ctx.view.memcache().watchers.wants(crate::watch::kind::MUTATIONS) {
        watch_store(ctx, conn_number, request, &write, &outcome);
    }
    let chunk_len = request.key.len() + request.value.len();
    let item_size_max = ctx.view.core().store.config().item_size_max;
    let status = match storage::memcached_outcome(outcome, mode, chunk_len, item_size_max) {
        StoreOutcome::Stored(stored) => return ctx.success(stored.cas, b"", b"", b""),
        StoreOutcome::Exists => Status::KeyExists,
        StoreOutcome::NotFound => Status::KeyNotFound,
        // memcached words a failed condition by the command: add found the key, replace did
        // not; append and prepend say not stored.
        StoreOutcome::NotStored => match loud {
            Opcode::Add => Status::KeyExists,
            Opcode::Replace => Status::KeyNotFound,
            _ => Status::NotStored,
        },
        StoreOutcome::Refused(Refusal::NoMemory) => {
            let (opcode, opaque) = (ctx.opcode, ctx.opaque);
            let message = OUT_OF_MEMORY_STORING;
            return compose_error_message(opcode, Status::OutOfMemory, opaque, message, ctx.out);
        }
        StoreOutcome::Refused(refusal) => refusal_status(refusal),
    };
    ctx.error(status);
}

/// The `watch mutations` line of a store.
#[cold]
fn watch_store(
    ctx: &Ctx<'_>,
    conn_number: u32,
    request: &BinRequest<'_>,
    write: &Write<'_>,
    outcome: &StoreOutcome,
) {
    let cmd = match write.mode {
        Mode::Add => "add",
        Mode::Replace => "replace",
        Mode::Append => "append",
        Mode::Prepend => "prepend",
        Mode::Cas(_) => "cas",
        _ => "set",
    };
    let event = watch::StoreEvent {
        key: request.key,
        status: watch::store_status(outcome),
        cmd,
        expiry: write.expiry,
        size: watch::store_size(outcome, request.value.len()),
        cfd: conn_number,
    };
    watch::item_store(ctx.view.memcache(), &event, ctx.now_ms());
}

/// Delete, compared with the request's CAS when it has one.
pub(super) fn delete(ctx: &mut Ctx<'_>, session: &mut Session, request: &BinRequest<'_>) {
    let compare = (request.cas != 0).then_some(request.cas);
    detail::record(&ctx.view.memcache().prefix_stats, request.key, Event::Delete);
    match delete::delete(&ctx.view.core().store, ctx.counters, session.key(request.key), compare) {
        DeleteOutcome::Deleted => {
            ctx.changed = Changed::Key;
            ctx.success(0, b"", b"", b"")
        }
        DeleteOutcome::NotFound => ctx.error(Status::KeyNotFound),
        DeleteOutcome::Exists => ctx.error(Status::KeyExists),
    }
}

/// Increment/Decrement: a missing item is created holding the initial value, unless the
/// exptime is 0xffffffff; the reply is the new value as 8 bytes.
pub(super) fn arith(
    ctx: &mut Ctx<'_>,
    session: &mut Session,
    request: &BinRequest<'_>,
    loud: Opcode,
) {
    let (delta, initial, exptime) = request.arith();
    let op = if loud == Opcode::Increment { ArithOp::Incr } else { ArithOp::Decr };
    let mut arith = Arith::plain(op, delta);
    if exptime != NO_VIVIFY {
        arith.vivify = Some((initial, expiry(i64::from(exptime), ctx.now_ms())));
    }
    match arith::apply(&ctx.view.core().store, ctx.counters, session.key(request.key), &arith) {
        ArithOutcome::Value { value, cas, .. } => {
            ctx.changed = Changed::Key;
            ctx.success(cas, b"", b"", &value.to_be_bytes())
        }
        ArithOutcome::NotFound => ctx.error(Status::KeyNotFound),
        ArithOutcome::NotNumeric => ctx.error(Status::NonNumeric),
        ArithOutcome::NoMemory => ctx.error(Status::OutOfMemory),
        ArithOutcome::Exists => unreachable!("binary incr compares no CAS unique"),
    }
}

/// Flush, with the delay in its extras if any; `-F` refuses it with memcached's
/// `Auth failure.`.
pub(super) fn flush(ctx: &mut Ctx<'_>, request: &BinRequest<'_>) {
    let delay_secs = i64::from(request.exptime());
    let outcome = flush_by_time(ctx.view, ctx.counters, delay_secs, ctx.now_ms());
    match outcome {
        FlushOutcome::Flushed => {
            ctx.changed = Changed::All;
            ctx.success(0, b"", b"", b"")
        }
        FlushOutcome::Disabled => ctx.error(Status::AuthError),
    }
}

/// Stat: one packet per stat (key = name, value = value), then an empty packet; the
/// groups are the text protocol's, composed as `STAT` lines and repacked. `reset` answers
/// only the empty packet; a group there is none of gets `Not found`, as in memcached.
pub(super) fn stat(ctx: &mut Ctx<'_>, request: &BinRequest<'_>) {
    let mut lines = Vec::new();
    if request.key == b"reset" {
        ctx.view.reset_totals();
    } else if let Some(detail) = request.key.strip_prefix(b"detail") {
        return stat_detail(ctx, detail);
    } else {
        let (view, counters, changed) = (ctx.view, ctx.counters, Changed::Nothing);
        let mut text = crate::memcache::Ctx { view, counters, out: &mut lines, changed };
        if !stats::group(&mut text, request.key) {
            return ctx.error(Status::KeyNotFound);
        }
    }
    let reply = Reply { opcode: ctx.opcode, status: Status::NoError, opaque: ctx.opaque, cas: 0 };
    for line in lines.split(|&b| b == b'\n').filter(|line| !line.is_empty()) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line = line.strip_prefix(b"STAT ").unwrap_or(line);
        let space = line.iter().position(|&b| b == b' ').unwrap_or(line.len());
        let value = line.get(space + 1..).unwrap_or(b"");
        compose_response(&reply, b"", &line[..space], value, ctx.out);
    }
    compose_response(&reply, b"", b"", b"", ctx.out);
}

/// `detail dump` answers one stat, `detailed`, whose value is the text dump; `detail on`
/// and `detail off` only the closing packet. memcached compares the word after `detail` by
/// its prefix, so `detail onward` is `on`.
fn stat_detail(ctx: &mut Ctx<'_>, detail: &[u8]) {
    let stats = &ctx.view.memcache().prefix_stats;
    let reply = Reply { opcode: ctx.opcode, status: Status::NoError, opaque: ctx.opaque, cas: 0 };
    if detail.starts_with(b" dump") {
        let mut dump = Vec::new();
        stats.dump(&mut dump);
        compose_response(&reply, b"", b"detailed", &dump, ctx.out);
    } else if detail.starts_with(b" on") {
        stats.set_enabled(true);
    } else if detail.starts_with(b" off") {
        stats.set_enabled(false);
    } else {
        return ctx.error(Status::KeyNotFound);
    }
    compose_response(&reply, b"", b"", b"", ctx.out);
}
