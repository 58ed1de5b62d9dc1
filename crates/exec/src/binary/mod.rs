//! memcached binary-protocol requests against the store, replying as memcached 1.6 does.
//!
//! Like text and meta, binary only decodes requests into calls of the shared cores
//! (`crate::core`) and encodes their outcomes; keys, exptimes, the flush delay and the stats
//! groups are the text protocol's (`crate::memcache`).
//!
//! ```text
//!   execute --+-- get/gat/touch (here)  Get GetK GetQ GetKQ, Touch, Gat GatK GatQ GatKQ
//!             +-- ops.rs                Set Add Replace Append Prepend (+Q), Delete(Q),
//!                                       Increment Decrement (+Q), Flush(Q), Stat
//!             +-- (here)                Noop Version Quit QuitQ
//! ```
//!
//! memcached's reply rules: every reply echoes the opcode as sent and the opaque; a
//! success carries the item's CAS unique (0 where there is no item); an error carries CAS
//! 0 and the status's message as its value, except a GetK/GatK miss, which carries the key
//! instead. A quiet opcode is silent on success, and GetQ/GetKQ/GatQ/GatKQ also on a miss;
//! errors are always sent.

mod ops;
pub mod sasl;

#[cfg(test)]
mod tests;

use proto_memcache::binary::{
    compose_error, compose_response, compose_response_or_lend, BinRequest, Opcode, Reply, Status,
};
use store::Item;

use crate::{
    core::{
        get::Gets,
        touch::{self, Retime, TouchOutcome},
        Refusal,
    },
    counters::{bump, Counters},
    memcache::{
        detail::{self, Event},
        expiry, visible_cas, watch, Changed, MemcacheView, Session,
    },
    Flow,
};

/// What every handler needs besides its request.
struct Ctx<'a> {
    view: MemcacheView<'a>,
    counters: &'a Counters,
    out: &'a mut Vec<u8>,
    /// The opcode as sent (quiet or not), echoed in every reply.
    opcode: u8,
    opaque: u32,
    quiet: bool,
    /// What the request changed in the store, told by its handler (see `memcache::Changed`).
    changed: Changed,
}

impl Ctx<'_> {
    fn now_ms(&self) -> u64 {
        self.view.core().store.config().clock.now_ms()
    }

    /// A success: composed unless the opcode is quiet.
    fn success(&mut self, cas: u64, extras: &[u8], key: &[u8], value: &[u8]) {
        if !self.quiet {
            let cas = visible_cas(self.view.core(), cas);
            let reply =
                Reply { opcode: self.opcode, status: Status::NoError, opaque: self.opaque, cas };
            compose_response(&reply, extras, key, value, self.out);
        }
    }

    /// An error: always composed, quiet or not.
    fn error(&mut self, status: Status) {
        compose_error(self.opcode, status, self.opaque, self.out);
    }
}

/// memcached's status for a write the store refused.
fn refusal_status(refusal: Refusal) -> Status {
    match refusal {
        Refusal::TooLarge => Status::TooLarge,
        Refusal::NoMemory => Status::OutOfMemory,
        // The codec's key limit is far below the store's; kept for completeness.
        Refusal::KeyTooLong => Status::InvalidArguments,
    }
}

/// A packet the parser refused ([`proto_memcache::binary::BinParseError::Reject`], its
/// opcode, opaque and status): counted as a protocol error and answered. A Set or SetQ refused
/// as too large also drops the old item under its key, as memcached unlinks it, so that a
/// failed overwrite never leaves a stale value to be read.
pub fn refuse(
    view: MemcacheView<'_>,
    counters: &Counters,
    session: &mut Session,
    packet: &[u8],
    (opcode, opaque, status): (u8, u32, proto_memcache::binary::Status),
    out: &mut Vec<u8>,
) {
    bump(&counters.protocol_errors, 1);
    // Only a Set refused as too large: one refused for its shape or key length (memcached
    // hangs up on it) leaves the old item alone.
    let too_large = status == proto_memcache::binary::Status::TooLarge;
    if let Some(key) = proto_memcache::binary::refused_set_key(packet).filter(|_| too_large) {
        if crate::memcache::acl::may_set(view, session, key, false) {
            let conn_number = session.conn_number;
            let stored_key = session.key(key);
            crate::memcache::storage::forget_refused_set(
                view,
                counters,
                stored_key,
                key,
                conn_number,
            );
        } else {
            bump(&counters.store_too_large, 1);
        }
    }
    proto_memcache::binary::compose_error(opcode, status, opaque, out);
}

/// Executes one parsed binary request, appending its reply (if any) to `out`.
pub fn execute(
    view: MemcacheView<'_>,
    counters: &Counters,
    session: &mut Session,
    request: &BinRequest<'_>,
    out: &mut Vec<u8>,
) -> Flow {
    bump(&counters.total_commands, 1);
    if let Err(refusal) = crate::memcache::acl::admit_binary(view, session, request) {
        return crate::memcache::acl::refuse_binary(refusal, request, out);
    }
    let (loud, quiet) = request.opcode.loud();
    if session.is_busy() && !matches!(loud, Opcode::Noop | Opcode::Version | Opcode::Quit) {
        let status = crate::memcache::busy::BUSY_STATUS;
        proto_memcache::binary::compose_error(request.opcode as u8, status, request.opaque, out);
        return Flow::Continue;
    }
    if !request.key.is_empty()
        && loud != Opcode::Stat
        && view.memcache().watchers.wants(crate::watch::kind::FETCHERS)
    {
        let size =
            view.core().store.reader().peek(session.key(request.key)).map(|i| i.value().len());
        watch::item_get(view.memcache(), request.key, size, session.conn_number);
    }
    if view.core().repl.guards_memcached() && writes_on_replica(view, loud) {
        let status = proto_memcache::binary::Status::ReadOnlyReplica;
        proto_memcache::binary::compose_error(request.opcode as u8, status, request.opaque, out);
        return Flow::Continue;
    }
    keep_for_picture(view, session, request.key, loud);
    let (opcode, opaque, changed) = (request.opcode as u8, request.opaque, Changed::Nothing);
    let mut ctx = Ctx { view, counters, out, opcode, opaque, quiet, changed };
    use Opcode::*;
    match loud {
        Get | GetK => get(&mut ctx, session, request, loud == GetK),
        Touch | Gat | GatK => get_and_touch(&mut ctx, session, request, loud),
        Set | Add | Replace | Append | Prepend => ops::store(&mut ctx, session, request, loud),
        Delete => ops::delete(&mut ctx, session, request),
        Increment | Decrement => ops::arith(&mut ctx, session, request, loud),
        Flush => ops::flush(&mut ctx, request),
        Stat => ops::stat(&mut ctx, request),
        Noop => ctx.success(0, b"", b"", b""),
        Version => ctx.success(0, b"", b"", crate::MEMCACHED_VERSION.as_bytes()),
        Quit => {
            ctx.success(0, b"", b"", b"");
            session.close_reason = Some(crate::watch::CloseReason::Normal);
            return Flow::Close;
        }
        GetQ | GetKQ | SetQ | AddQ | ReplaceQ | DeleteQ | IncrementQ | DecrementQ | QuitQ
        | FlushQ | AppendQ | PrependQ | GatQ | GatKQ => unreachable!("loud() is never quiet"),
    }
    // Redis client-side caching, from what the request did: one relaxed load per change
    // when no client tracks.
    if ctx.changed != Changed::Nothing && view.redis().tracking_any() {
        tell_trackers(&ctx, session, request.key);
    }
    if ctx.changed == Changed::Key {
        view.core().memcached_wrote.store(true, std::sync::atomic::Ordering::Relaxed);
    }
    // A primary's replicas get the item as it is now, or the flush.
    match ctx.changed {
        _ if !view.core().repl.journaling() => {}
        Changed::All => view.journal_flush(),
        Changed::Key => view.journal_items(&[session.key(request.key)]),
        Changed::Keys | Changed::Nothing => {}
    }
    Flow::Continue
}

/// A write a read-only replica refuses (see `memcache::READ_ONLY_REPLICA`).
#[cold]
fn writes_on_replica(view: MemcacheView<'_>, loud: Opcode) -> bool {
    let repl = &view.core().repl;
    (!repl.is_replica() || repl.read_only.load(std::sync::atomic::Ordering::Relaxed))
        && writes(loud)
}

/// A save's picture under way keeps the item a write changes as it is first.
#[inline(always)]
fn keep_for_picture(view: MemcacheView<'_>, session: &mut Session, key: &[u8], loud: Opcode) {
    if view.core().picture.is_active() && writes(loud) {
        view.keep_for_picture(session.key(key));
    }
}

/// Whether a request of this (loud) opcode changes items.
fn writes(loud: Opcode) -> bool {
    use Opcode::*;
    matches!(
        loud,
        Set | Add
            | Replace
            | Append
            | Prepend
            | Delete
            | Increment
            | Decrement
            | Flush
            | Touch
            | Gat
            | GatK
    )
}

/// Tells the Redis clients tracking keys what the request changed: its key, or everything
/// (Flush, a null invalidation as FLUSHALL sends).
#[cold]
#[inline(never)]
fn tell_trackers(ctx: &Ctx<'_>, session: &mut Session, key: &[u8]) {
    let (links, worker) = (ctx.view.redis(), ctx.view.core().worker_of(ctx.counters));
    match ctx.changed {
        Changed::All => links.flushed(worker),
        Changed::Key => links.key_changed(session.key(key), worker),
        Changed::Keys | Changed::Nothing => {}
    }
}

/// A miss: quiet gets say nothing, GetK/GatK answer with the key, the rest `Not found`.
fn miss(ctx: &mut Ctx<'_>, key: &[u8], with_key: bool) {
    if ctx.quiet {
        return;
    }
    if with_key {
        let reply =
            Reply { opcode: ctx.opcode, status: Status::KeyNotFound, opaque: ctx.opaque, cas: 0 };
        compose_response(&reply, b"", key, b"", ctx.out);
    } else {
        ctx.error(Status::KeyNotFound);
    }
}

/// What a hit's reply carries besides its header: the value (a get's, a gat's), and
/// whether a large one may be lent rather than copied (a get's, read without the lock:
/// `store::loans`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Value {
    None,
    Copied,
    Lent,
}

/// The hit of a get, gat or touch: flags as extras, the key (empty unless a K variant),
/// the value (unless a touch).
fn compose_hit(
    view: MemcacheView<'_>,
    (opcode, opaque): (u8, u32),
    item: &Item<'_>,
    key: &[u8],
    value: Value,
    out: &mut Vec<u8>,
) {
    let cas = visible_cas(view.core(), item.cas());
    let reply = Reply { opcode, status: Status::NoError, opaque, cas };
    let data = if value == Value::None { b"" } else { item.value() };
    let lend = |at| value == Value::Lent && item.lend_value(at);
    compose_response_or_lend(&reply, (&item.flags().to_be_bytes(), key), data, lend, out);
}

fn get(ctx: &mut Ctx<'_>, session: &mut Session, request: &BinRequest<'_>, with_key: bool) {
    let view = ctx.view;
    let mut gets = Gets::new(&view.core().store);
    let found = match gets.get(session.key(request.key)) {
        Some(item) => {
            // A quiet get answers its hits: quiet only means silent on a miss.
            let key = if with_key { request.key } else { b"" };
            compose_hit(view, (ctx.opcode, ctx.opaque), &item, key, Value::Lent, ctx.out);
            true
        }
        None => false,
    };
    gets.finish(ctx.counters);
    detail::record(&view.memcache().prefix_stats, request.key, Event::Get { hit: found });
    if !found {
        miss(ctx, request.key, with_key);
    }
}

/// Touch answers a hit with its flags and CAS; Gat and GatK with the item as a get does.
fn get_and_touch(ctx: &mut Ctx<'_>, session: &mut Session, request: &BinRequest<'_>, loud: Opcode) {
    let retime = Retime::To(expiry(i64::from(request.exptime()), ctx.now_ms()));
    let with_key = loud == Opcode::GatK;
    let view = ctx.view;
    let head = (ctx.opcode, ctx.opaque);
    let key = request.key;
    let reply_key = if with_key { key } else { b"" };
    let outcome =
        touch::get_and_touch(&view.core().store, session.key(key), retime, ctx.out, |item, out| {
            // Copied: under the lock, whose step may run again after making room.
            let value = if loud == Opcode::Touch { Value::None } else { Value::Copied };
            compose_hit(view, head, item, reply_key, value, out);
        });
    touch::count(ctx.counters, outcome);
    let hit = outcome == TouchOutcome::Touched;
    detail::record(&view.memcache().prefix_stats, key, Event::Get { hit });
    match outcome {
        TouchOutcome::Touched => ctx.changed = Changed::Key,
        TouchOutcome::NotFound => miss(ctx, key, with_key),
        TouchOutcome::Refused(refusal) => ctx.error(refusal_status(refusal)),
    }
}
