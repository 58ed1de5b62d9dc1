//! Blocking commands: BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP BZPOPMIN BZPOPMAX BZMPOP, WAIT,
//! CLIENT UNBLOCK, and the waits of XREAD and XREADGROUP with BLOCK (`streams`: they read
//! rather than pop, so each ready waiter is asked, not only the first).
//!
//! ```text
//!   BLPOP k 0 (worker A)                      LPUSH k x (worker B, any protocol's loop)
//!     pop now? yes -> reply                     push (stripe lock)
//!     no: gate.exclusive {                      Waiters::any()? one relaxed load; no -> done
//!           pop now? (nothing can push          yes: the command's keys -> session.ready_keys
//!                     while we hold it)         after the command (after EXEC for a
//!           register in Waiters: FIFO per key   transaction): gate.exclusive {
//!         }                                       for each ready key, its waiters in order:
//!     Flow::Block: the worker feeds the             pop for the waiter (its command, its
//!     connection no input; its loop                 database, its protocol) -> its reply
//!     calls `stream` at each wake and tick          into the table, wake its loop
//!       reply there? -> send it, go on          }
//!       deadline passed? -> cancel, null
//! ```
//!
//! Why the writer serves the waiters itself (Redis's `handleClientsBlockedOnKeys`) rather
//! than waking them to retry: the pop happens while nothing else runs (the gate), right
//! after the write, in the waiters' arrival order, so the first waiter gets the element,
//! no client that came later can take it first, and no element is popped twice or lost
//! (a waiter is answered at most once, under the table's mutex; a cancel that races a
//! serve hands the served reply over). The waiter's reply is composed in its own protocol
//! and database by running the non-blocking pop with a session made like its own, so the
//! shapes are byte for byte those of the immediate replies.
//!
//! No lost wake-up: a client registers while it holds the gate, so no write runs between
//! its last look at its keys and its registration; a write that follows sees
//! `Waiters::any()` (the gate's sequentially consistent flags order the two).
//!
//! Cost: a write pays one relaxed load of a shared counter when nobody blocks; while
//! someone blocks, also a hash of each key it wrote and a relaxed load of that hash's
//! bucket in a counting filter of the waited-on keys (`registry::KeyFilter`), so idle job
//! workers blocked on their queues cost the other writes almost nothing. A client that
//! blocks, and a write to a key somebody (or a colliding key) waits for, each take the
//! gate (every other worker finishes its batch first; free with one worker). A waiter costs a table entry
//! and a queue slot per key until it is answered, cancelled or its connection closes.
//!
//! Timeouts are checked by the waiter's own loop at its ticks (`Session::poll_blocked`
//! from `Handler::stream`): granularity one tick, 100 ms, as Redis's with `hz 10`. Inside
//! MULTI/EXEC (and scripts) a blocking command behaves as its non-blocking form and never
//! waits, as in Redis. Type changes follow Redis 7.0: a waited-on key that becomes a
//! string (a Redis SET, a memcached `set`) serves nobody, and its waiters keep waiting.

mod ready;
mod registry;
mod streams;
mod wait;

use std::time::{Duration, Instant};

use proto_resp::{
    args::{parse_f64, parse_i64},
    commands::BlockingId,
    compose_command, error, parse_command, route, Limits, Reply,
};
pub(super) use ready::note_written;
pub use registry::Waiters;
use registry::{Attempt, Waiter};
pub(in crate::resp) use streams::block_streams;

use super::{keyevents, list, slowlog, zset, Ctx, Session};
use crate::{Counters, Flow, Shared};

/// What a pop on one key did (the non-blocking forms report this for their blocking ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::resp) enum Popped {
    /// It popped and replied.
    Served,
    /// The key holds nothing to pop; nothing was replied.
    Empty,
    /// It replied an error (WRONGTYPE, OOM).
    Failed,
}

/// A blocking command's parsed options: what serving it pops, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::resp) enum Kind {
    Blpop,
    Brpop,
    /// BLMOVE and BRPOPLPUSH.
    Blmove {
        from: list::ListEnd,
        to: list::ListEnd,
    },
    Blmpop {
        end: list::ListEnd,
        count: usize,
    },
    Bzpopmin,
    Bzpopmax,
    Bzmpop {
        end: zset::ZEnd,
        count: usize,
    },
    /// WAIT for replicas: nothing ever serves it; it ends by its timeout.
    Wait,
    /// XREAD ... BLOCK: served by entries past the IDs it blocked with (see `streams`).
    Xread,
    /// XREADGROUP ... BLOCK with `>`: served by entries its group has not delivered.
    Xreadgroup,
}

impl Kind {
    /// Whether it reads streams (it reads past an ID; nothing pops for it in order).
    pub(in crate::resp) fn is_stream(self) -> bool {
        matches!(self, Kind::Xread | Kind::Xreadgroup)
    }

    fn moves(self) -> bool {
        matches!(self, Kind::Blmove { .. })
    }

    /// What it answers when it pops nothing without waiting (inside MULTI): the
    /// non-blocking form's null.
    fn reply_empty(self, reply: &mut Reply<'_>) {
        match self {
            Kind::Blmove { .. } => reply.null(),
            Kind::Wait => reply.integer(0),
            _ => reply.null_array(),
        }
    }

    /// What it answers when its timeout passes (or CLIENT UNBLOCK ... TIMEOUT): Redis 7.0
    /// answers a null array for every list and sorted-set command, BLMOVE included.
    fn reply_timeout(self, reply: &mut Reply<'_>) {
        match self {
            Kind::Wait => reply.integer(0),
            _ => reply.null_array(),
        }
    }
}

/// A blocking command, parsed.
struct Request {
    kind: Kind,
    /// The key arguments it waits on.
    keys: std::ops::Range<usize>,
    /// None: forever.
    timeout: Option<Duration>,
}

/// The session's side of a block: its ticket in [`Waiters`] and its deadline.
#[derive(Debug)]
pub(in crate::resp) struct Blocked {
    ticket: u64,
    kind: Kind,
    deadline: Option<Instant>,
    /// WAIT: the offset replicas must acknowledge, and how many must.
    acks: Option<(u64, usize)>,
}

/// 2^63: the first double past `i64::MAX`.
const I64_RANGE_END: f64 = 9_223_372_036_854_775_808.0;

const TIMEOUT_NOT_FLOAT: &str = "ERR timeout is not a float or out of range";
const TIMEOUT_NOT_INTEGER: &str = "ERR timeout is not an integer or out of range";
const TIMEOUT_NEGATIVE: &str = "ERR timeout is negative";
const UNBLOCK_REASON: &str = "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR";
const UNBLOCKED: &str = "UNBLOCKED client unblocked via CLIENT UNBLOCK";

pub(super) fn dispatch(ctx: &mut Ctx<'_>, id: BlockingId) -> Flow {
    let request = match parse(ctx, id) {
        Ok(request) => request,
        Err(message) => {
            ctx.error(message);
            return Flow::Continue;
        }
    };
    if request.kind == Kind::Wait {
        return wait::wait(ctx, request);
    }
    // Inside EXEC (or a script) it never waits. A single key (not a move) is tried first
    // without the gate: a client served at once costs no more than LPOP.
    if ctx.is_nested() || (request.keys.len() == 1 && !request.kind.moves()) {
        if attempt_all(ctx, &request) != Popped::Empty {
            return Flow::Continue;
        }
        if ctx.is_nested() {
            request.kind.reply_empty(&mut ctx.reply());
            return Flow::Continue;
        }
    }
    let (shared, counters) = (ctx.shared, ctx.counters);
    let worker = shared.core.worker_of(counters);
    shared.core.gate.exclusive(worker, || {
        if attempt_all(ctx, &request) != Popped::Empty {
            return Flow::Continue;
        }
        register(ctx, &request, worker);
        Flow::Block
    })
}

fn parse(ctx: &Ctx<'_>, id: BlockingId) -> Result<Request, &'static str> {
    use list::ListEnd as L;
    use BlockingId as B;
    let argc = ctx.argc();
    let last = argc - 1;
    let (kind, keys, timeout_at) = match id {
        B::Blpop => (Kind::Blpop, 1..last, last),
        B::Brpop => (Kind::Brpop, 1..last, last),
        B::Bzpopmin => (Kind::Bzpopmin, 1..last, last),
        B::Bzpopmax => (Kind::Bzpopmax, 1..last, last),
        B::Brpoplpush => (Kind::Blmove { from: L::Tail, to: L::Head }, 1..2, 3),
        B::Blmove => {
            let from = list::parse_end(ctx.arg(3)).ok_or(error::SYNTAX)?;
            let to = list::parse_end(ctx.arg(4)).ok_or(error::SYNTAX)?;
            (Kind::Blmove { from, to }, 1..2, 5)
        }
        B::Blmpop => {
            let timeout = parse_timeout(ctx.arg(1))?;
            let (keys, end, count) = list::parse_blmpop(ctx)?;
            return Ok(Request { kind: Kind::Blmpop { end, count }, keys, timeout });
        }
        B::Bzmpop => {
            let timeout = parse_timeout(ctx.arg(1))?;
            let (keys, end, count) = zset::parse_zmpop_from(ctx, 2)?;
            return Ok(Request { kind: Kind::Bzmpop { end, count }, keys, timeout });
        }
        B::Wait => {
            parse_i64(ctx.arg(1)).map_err(|_| error::NOT_INTEGER)?;
            let ms = parse_i64(ctx.arg(2)).map_err(|_| TIMEOUT_NOT_INTEGER)?;
            if ms < 0 {
                return Err(TIMEOUT_NEGATIVE);
            }
            let timeout = (ms > 0).then(|| Duration::from_millis(ms as u64));
            return Ok(Request { kind: Kind::Wait, keys: 0..0, timeout });
        }
    };
    let timeout = parse_timeout(ctx.arg(timeout_at))?;
    Ok(Request { kind, keys, timeout })
}

/// Redis 7.0's timeout in seconds: read as a (long) double, times 1000, rounded up to
/// whole milliseconds; 0 waits forever; past `i64::MAX` milliseconds the conversion
/// wraps negative there, so it is "negative" here too. Not mirrored: hexadecimal floats,
/// which C's `strtold` reads; and the range of a long double is approximated (a literal
/// beyond a double's range is taken as too large, or as the smallest positive timeout).
fn parse_timeout(arg: &[u8]) -> Result<Option<Duration>, &'static str> {
    let seconds = match parse_f64(arg) {
        Ok(seconds) => seconds,
        Err(_) => match beyond_double(arg) {
            Some(seconds) => seconds,
            None => return Err(TIMEOUT_NOT_FLOAT),
        },
    };
    let ms = (seconds * 1000.0).ceil();
    // 2^63 milliseconds and beyond wrap (NaN cannot come: `parse_f64` refuses it).
    if !(0.0..I64_RANGE_END).contains(&ms) {
        return Err(TIMEOUT_NEGATIVE);
    }
    Ok((ms > 0.0).then(|| Duration::from_millis(ms as u64)))
}

/// A decimal literal `parse_f64` refuses for its range alone (a long double holds it):
/// an overflow as infinity, an underflow as the smallest double of its sign.
fn beyond_double(arg: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(arg).ok()?;
    if text.starts_with(|c: char| c.is_ascii_whitespace()) {
        return None;
    }
    let value: f64 = text.parse().ok()?;
    match value {
        v if v.is_infinite() => Some(v),
        0.0 if text.starts_with('-') => Some(-f64::MIN_POSITIVE),
        0.0 => Some(f64::MIN_POSITIVE),
        _ => None,
    }
}

/// Tries the request's keys in order: the first that holds something is popped and
/// replied (or its error replied).
fn attempt_all(ctx: &mut Ctx<'_>, request: &Request) -> Popped {
    for index in request.keys.clone() {
        match attempt(ctx, request.kind, index) {
            Popped::Empty => continue,
            Popped::Served if request.kind.moves() => {
                // The destination got an element: its own waiters may go.
                if ctx.shared.redis.blocking.any() {
                    let destination = ctx.key(2).to_vec();
                    ctx.session.ready_keys.push(destination);
                }
                return Popped::Served;
            }
            done => return done,
        }
    }
    Popped::Empty
}

/// One pop of key argument `index` in the command's non-blocking manner.
fn attempt(ctx: &mut Ctx<'_>, kind: Kind, index: usize) -> Popped {
    let popped = pop_once(ctx, kind, index);
    if popped == Popped::Served {
        record_pop(ctx, kind, index);
    }
    popped
}

/// The keyspace events of a pop that served (see `keyevents::outcome`): the pop on the key
/// it took from (and `del` if that emptied it); for BLMOVE, the push on its destination
/// first.
fn record_pop(ctx: &mut Ctx<'_>, kind: Kind, index: usize) {
    use keyevents::class::{LIST, ZSET};
    use list::ListEnd as L;
    let pop = |end| if end == L::Head { "lpop" } else { "rpop" };
    match kind {
        Kind::Blpop => ctx.removed(LIST, "lpop", index),
        Kind::Brpop => ctx.removed(LIST, "rpop", index),
        Kind::Blmove { from, to } => {
            ctx.wrote(LIST, if to == L::Head { "lpush" } else { "rpush" }, 2);
            ctx.removed(LIST, pop(from), 1);
        }
        Kind::Blmpop { end, .. } => ctx.removed(LIST, pop(end), index),
        Kind::Bzpopmin => ctx.removed(ZSET, "zpopmin", index),
        Kind::Bzpopmax => ctx.removed(ZSET, "zpopmax", index),
        Kind::Bzmpop { end, .. } => {
            ctx.removed(ZSET, if end == zset::ZEnd::Min { "zpopmin" } else { "zpopmax" }, index);
        }
        Kind::Wait | Kind::Xread | Kind::Xreadgroup => {}
    }
}

/// [`attempt`]'s pop itself.
fn pop_once(ctx: &mut Ctx<'_>, kind: Kind, index: usize) -> Popped {
    use list::ListEnd as L;
    match kind {
        Kind::Blpop => list::pop_for_blpop(ctx, index, L::Head),
        Kind::Brpop => list::pop_for_blpop(ctx, index, L::Tail),
        Kind::Blmove { from, to } => list::move_for_blmove(ctx, from, to),
        Kind::Blmpop { end, count } => list::pop_for_blmpop(ctx, index, end, count),
        Kind::Bzpopmin => zset::pop_for_bzpop(ctx, index, zset::ZEnd::Min),
        Kind::Bzpopmax => zset::pop_for_bzpop(ctx, index, zset::ZEnd::Max),
        Kind::Bzmpop { end, count } => zset::pop_for_bzmpop(ctx, index, end, count),
        // Stream readers are served by `streams::serve`, never popped for.
        Kind::Wait | Kind::Xread | Kind::Xreadgroup => Popped::Empty,
    }
}

/// Puts the session in the table, waiting on the request's keys.
fn register(ctx: &mut Ctx<'_>, request: &Request, worker: usize) {
    register_after(ctx, request, worker, Vec::new());
}

/// [`register`], with the IDs an XREAD reads past (one per key of the request).
fn register_after(
    ctx: &mut Ctx<'_>,
    request: &Request,
    worker: usize,
    after: Vec<values::stream::StreamId>,
) {
    let keys = request.keys.clone().map(|index| (ctx.key(index).to_vec(), index)).collect();
    let args: Vec<&[u8]> = ctx.cmd.args().collect();
    let mut command = Vec::new();
    compose_command(&args, &mut command);
    let client_id = ctx.session.client.lock().id;
    let mut waiter = Waiter::new(
        client_id,
        worker,
        ctx.session.db,
        ctx.session.protocol,
        request.kind,
        command,
        keys,
        request.timeout.is_some(),
    );
    waiter.after = after;
    let ticket = ctx.shared.redis.blocking.register(waiter);
    // A timeout too far to add to now (XREAD BLOCK 9223372036854775807) waits forever,
    // as it does in Redis, whose deadline then wraps past every clock reading.
    let deadline = request.timeout.and_then(|timeout| Instant::now().checked_add(timeout));
    ctx.session.blocked =
        Some(Box::new(Blocked { ticket, kind: request.kind, deadline, acks: None }));
    ctx.session.activity.set(super::clients::flag::BLOCKED, true);
}

/// CLIENT UNBLOCK id [TIMEOUT|ERROR]: 1 when that client was blocked (it then gets its
/// timeout reply, or the UNBLOCKED error), 0 otherwise.
pub(super) fn client_unblock(ctx: &mut Ctx<'_>) {
    if ctx.argc() > 4 {
        // Redis's `addReplySubcommandSyntaxError`, naming the subcommand as it was sent.
        let name = String::from_utf8_lossy(ctx.arg(1)).into_owned();
        return ctx.error(format!(
            "ERR unknown subcommand or wrong number of arguments for '{name}'. Try CLIENT HELP."
        ));
    }
    let Ok(id) = parse_i64(ctx.arg(2)) else { return ctx.error(error::NOT_INTEGER) };
    let as_error = match ctx.cmd.arg(3) {
        None => false,
        Some(reason) if reason.eq_ignore_ascii_case(b"TIMEOUT") => false,
        Some(reason) if reason.eq_ignore_ascii_case(b"ERROR") => true,
        Some(_) => return ctx.error(UNBLOCK_REASON),
    };
    let reply = |waiter: &Waiter| {
        let mut out = Vec::new();
        let mut reply = Reply::new(&mut out, waiter.protocol);
        match as_error {
            true => reply.error(UNBLOCKED),
            false => waiter.kind.reply_timeout(&mut reply),
        }
        out
    };
    let shared = ctx.shared;
    let mut failed = None;
    let reply = |waiter: &Waiter| {
        if as_error {
            failed = command_index(&waiter.command);
        }
        reply(waiter)
    };
    let unblocked = u64::try_from(id).ok().and_then(|id| shared.redis.blocking.unblock(id, reply));
    if unblocked.is_some() && as_error {
        // The waiter's command ends in an error: counted as any error reply, and as a
        // failed call of that command, as in Redis.
        let mut error = Vec::new();
        Reply::new(&mut error, ctx.session.protocol).error(UNBLOCKED);
        super::count_error_reply(shared, ctx.counters, &error, 0);
        if let (Some(index), false) = (failed, cfg!(feature = "no-command-stats")) {
            ctx.counters.command_stats.fail(index);
        }
    }
    if let Some(worker) = unblocked {
        let own = shared.core.worker_of(ctx.counters);
        shared.redis.pubsub.wake(worker, worker == own);
    }
    ctx.reply().integer(i64::from(unblocked.is_some()));
}

/// The command-table index of a waiter's command (its stats are kept under it).
fn command_index(command: &[u8]) -> Option<usize> {
    let (command, _) = parse_command(command, &Limits::default()).ok()?;
    route(&command).ok().map(|routed| proto_resp::commands::index_of(routed.spec))
}

/// After a top-level command: serves the waiters of the keys it made ready, in their
/// arrival order, each in its own protocol (see the module docs).
pub(super) fn serve_ready(shared: &Shared, counters: &Counters, session: &mut Session) {
    let ready = std::mem::take(&mut session.ready_keys);
    if !shared.redis.blocking.any() {
        return;
    }
    serve_keys(shared, counters, ready);
}

/// Between batches (a worker's tick, after its share of the active expire cycle): serves
/// the waiters of keys that expired (see [`Waiters::note_expired`]). One relaxed load
/// while nobody blocks.
pub fn serve_expired(shared: &Shared, counters: &Counters) {
    if !shared.redis.blocking.any() {
        return;
    }
    let expired = shared.redis.blocking.take_expired();
    if expired.is_empty() {
        return;
    }
    let worker = shared.core.worker_of(counters);
    shared.core.gate.enter(worker);
    serve_keys(shared, counters, expired);
    shared.core.gate.leave(worker);
}

/// Serves the waiters of `ready`, key by key in order (the caller is inside the gate).
fn serve_keys(shared: &Shared, counters: &Counters, mut ready: Vec<Vec<u8>>) {
    // Each key once, in the order the writes made them ready (as Redis's ready list).
    let mut seen = std::collections::HashSet::new();
    ready.retain(|key| seen.insert(key.clone()));
    let worker = shared.core.worker_of(counters);
    // The keys the served pops changed, for a primary's replicas.
    let mut served: Vec<Vec<u8>> = Vec::new();
    let journaling = shared.core.repl.journaling();
    shared.core.gate.exclusive(worker, || {
        shared.redis.blocking.serve(
            ready,
            |waiter, index| {
                let attempt = serve_one(shared, counters, waiter, index);
                if let (true, Attempt::Served { pushed, .. }) = (journaling, &attempt) {
                    if let Some((key, _)) = waiter.keys.iter().find(|(_, i)| *i == index) {
                        served.push(key.clone());
                    }
                    served.extend(pushed.iter().cloned());
                }
                attempt
            },
            |owner| shared.redis.pubsub.wake(owner, owner == worker),
        );
    });
    if !served.is_empty() {
        let keys = served.iter().filter_map(|stored| crate::keyspace::decode(stored));
        crate::repl::journal_keys(shared, keys, false);
    }
}

/// Pops for one waiter from key argument `index` of its command, composing its reply as
/// its own session would.
fn serve_one(shared: &Shared, counters: &Counters, waiter: &Waiter, index: usize) -> Attempt {
    let Ok((command, _)) = parse_command(&waiter.command, &Limits::default()) else {
        return Attempt::Refused;
    };
    let Ok(routed) = route(&command) else { return Attempt::Refused };
    let mut session = Session { db: waiter.db, protocol: waiter.protocol, ..Session::default() };
    // The slow log shows a served command as Redis does, under its own client, timed from
    // here (the pop on its behalf, not the wait).
    let started = slowlog::watching(shared, false).then(crate::latency::now);
    if started.is_some() {
        if let Some(client) = shared.core.clients.get(waiter.client_id) {
            session.client = client;
        }
    }
    let mut out = Vec::new();
    let mut ctx = Ctx {
        shared,
        counters,
        session: &mut session,
        cmd: &command,
        spec: routed.spec,
        out: &mut out,
        key_scratch: Vec::new(),
        exclusive: super::Exclusive::Held,
        outcome: keyevents::Outcome::default(),
    };
    let events = (shared.redis.keyspace_events.flags() != 0).then(|| keyevents::absent_keys(&ctx));
    super::keep::before_command(&ctx, true);
    let attempt = match waiter.kind.is_stream() {
        true => streams::serve(&mut ctx, waiter, index),
        false => pop_for(&mut ctx, waiter, index),
    };
    if let (Attempt::Served { reply, .. }, Some(absent)) = (&attempt, &events) {
        if !reply.starts_with(b"-") {
            // The pop's keyspace events, as for a command that found its key at once.
            keyevents::publish(&ctx, absent);
        }
    }
    if let Attempt::Served { reply, .. } = &attempt {
        if reply.starts_with(b"-") {
            // A waiter answered with an error counts as its command failing, as in Redis.
            super::count_error_reply(shared, counters, reply, 0);
            if !cfg!(feature = "no-command-stats") {
                counters.command_stats.fail(proto_resp::commands::index_of(ctx.spec));
            }
        }
    }
    if let (Some(started), Attempt::Served { .. }) = (started, &attempt) {
        let nanos = crate::latency::nanos_since(started);
        slowlog::note(shared, &session, &command, routed.spec.flags, nanos);
    }
    attempt
}

/// [`serve_one`] for a list or sorted-set waiter: its command's pop, on its behalf.
fn pop_for(ctx: &mut Ctx<'_>, waiter: &Waiter, index: usize) -> Attempt {
    let shared = ctx.shared;
    match attempt(ctx, waiter.kind, index) {
        Popped::Served => {
            let pushed = waiter.kind.moves().then(|| ctx.key(2).to_vec());
            let source = ctx.key(index).to_vec();
            let mut reply = std::mem::take(ctx.out);
            if shared.redis.tracking.any() {
                let keys = [Some(source.as_slice()), pushed.as_deref()];
                let keys: Vec<&[u8]> = keys.into_iter().flatten().collect();
                let worker = shared.core.worker_of(ctx.counters);
                reply.extend(super::tracking::served(shared, &keys, waiter.client_id, worker));
            }
            Attempt::Served { reply, pushed }
        }
        Popped::Empty => Attempt::Empty,
        // BLMOVE to a key of another type: as Redis 7.0, the waiter gets WRONGTYPE and stops
        // waiting; the element stays in the source for the next waiter.
        Popped::Failed if waiter.kind.moves() && ctx.out.starts_with(b"-WRONGTYPE") => {
            Attempt::Served { reply: std::mem::take(ctx.out), pushed: None }
        }
        Popped::Failed => Attempt::Refused,
    }
}

impl Session {
    /// Whether it waits in a blocking command: its loop then feeds it no input.
    pub fn is_blocked(&self) -> bool {
        self.blocked.is_some()
    }

    /// At each wake and tick of its loop, for a blocked session: appends its reply to
    /// `out` if it came (served, CLIENT UNBLOCK) or its timeout passed; true when it is
    /// no longer blocked (its pipelined input may run).
    pub fn poll_blocked(&mut self, shared: &Shared, out: &mut Vec<u8>) -> bool {
        let Some(blocked) = &self.blocked else { return false };
        let acks = blocked.acks.and_then(|_| wait::answer(shared, blocked, self.protocol));
        let reply = match acks.or_else(|| shared.redis.blocking.take(blocked.ticket)) {
            Some(reply) => reply,
            None if blocked.deadline.is_some_and(|d| Instant::now() >= d) => {
                match shared.redis.blocking.cancel(blocked.ticket) {
                    Some(reply) => reply,
                    None => {
                        let mut timed_out = Vec::new();
                        blocked.kind.reply_timeout(&mut Reply::new(&mut timed_out, self.protocol));
                        timed_out
                    }
                }
            }
            None => return false,
        };
        out.extend_from_slice(&reply);
        self.blocked = None;
        self.activity.set(super::clients::flag::BLOCKED, false);
        true
    }

    /// Leaves the table (the connection closed while blocked).
    pub(super) fn leave_blocking(&mut self, shared: &Shared) {
        if let Some(blocked) = self.blocked.take() {
            shared.redis.blocking.cancel(blocked.ticket);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use proto_resp::Protocol;

    use super::{parse_timeout, Session, TIMEOUT_NEGATIVE, TIMEOUT_NOT_FLOAT};
    use crate::{resp::testkit::Harness, Flow};

    /// Goal: timeouts read as Redis 7.0 reads them (seconds, rounded up to milliseconds,
    /// 0 forever, wrap past 2^63 ms reported as negative). Method: table.
    #[test]
    fn timeouts() {
        let ms = |n: u64| Ok(Some(Duration::from_millis(n)));
        let table: &[(&str, Result<Option<Duration>, &str>)] = &[
            ("0", Ok(None)),
            ("-0", Ok(None)),
            ("0.0", Ok(None)),
            ("1", ms(1000)),
            ("0.05", ms(50)),
            ("0.0001", ms(1)),
            ("1e-300", ms(1)),
            ("1e-400", ms(1)),
            ("+1.5", ms(1500)),
            (".5", ms(500)),
            ("9.2e15", ms(9_200_000_000_000_000_000)),
            ("9.3e15", Err(TIMEOUT_NEGATIVE)),
            ("1e400", Err(TIMEOUT_NEGATIVE)),
            ("inf", Err(TIMEOUT_NEGATIVE)),
            ("-1", Err(TIMEOUT_NEGATIVE)),
            ("abc", Err(TIMEOUT_NOT_FLOAT)),
            ("nan", Err(TIMEOUT_NOT_FLOAT)),
            ("", Err(TIMEOUT_NOT_FLOAT)),
            (" 1", Err(TIMEOUT_NOT_FLOAT)),
            ("1 ", Err(TIMEOUT_NOT_FLOAT)),
        ];
        for (text, want) in table {
            assert_eq!(parse_timeout(text.as_bytes()), *want, "{text:?}");
        }
    }

    /// Runs `line` as `session` on the harness's store; returns the reply and the flow.
    fn run_as(h: &mut Harness, session: &mut Session, line: &str) -> (String, Flow) {
        std::mem::swap(&mut h.session, session);
        let reply = h.run(line);
        std::mem::swap(&mut h.session, session);
        (reply, h.last_flow)
    }

    fn poll(h: &Harness, session: &mut Session) -> Option<String> {
        let mut out = Vec::new();
        let done = session.poll_blocked(&h.shared, &mut out);
        assert_eq!(done, !out.is_empty());
        done.then(|| String::from_utf8_lossy(&out).into_owned())
    }

    /// Goal: waiters are served in arrival order, each in its own protocol, by a push
    /// from another session; the table is empty afterwards. Method: three sessions block
    /// (one RESP3), pushes come from a fourth.
    #[test]
    fn served_in_order_in_each_protocol() {
        let mut h = Harness::new();
        let mut a = Session::default();
        let mut b = Session { protocol: Protocol::Resp3, ..Session::default() };
        let mut z = Session { protocol: Protocol::Resp3, ..Session::default() };
        assert_eq!(run_as(&mut h, &mut a, "BLPOP k other 0"), (String::new(), Flow::Block));
        assert_eq!(run_as(&mut h, &mut b, "BRPOP k 0").1, Flow::Block);
        assert_eq!(run_as(&mut h, &mut z, "BZPOPMIN zs 5").1, Flow::Block);
        assert!(a.is_blocked() && b.is_blocked());
        assert!(h.run("INFO clients").contains("blocked_clients:3\r\n"));
        assert_eq!(poll(&h, &mut a), None);
        assert_eq!(h.run("RPUSH k x y z"), ":3\r\n");
        assert_eq!(poll(&h, &mut a).as_deref(), Some("*2\r\n$1\r\nk\r\n$1\r\nx\r\n"));
        assert_eq!(poll(&h, &mut b).as_deref(), Some("*2\r\n$1\r\nk\r\n$1\r\nz\r\n"));
        assert_eq!(h.run("LRANGE k 0 -1"), "*1\r\n$1\r\ny\r\n");
        assert_eq!(h.run("SET zs notazset"), "+OK\r\n");
        assert_eq!(poll(&h, &mut z), None, "a string serves nobody");
        assert_eq!(h.run("DEL zs"), ":1\r\n");
        assert_eq!(h.run("ZADD zs 2.5 m"), ":1\r\n");
        assert_eq!(poll(&h, &mut z).as_deref(), Some("*3\r\n$2\r\nzs\r\n$1\r\nm\r\n,2.5\r\n"));
        assert!(!a.is_blocked() && !z.is_blocked());
        assert!(!h.shared.redis.blocking.any());
        assert_eq!(h.shared.redis.blocking.blocked_clients(), 0);
        assert_eq!(h.shared.redis.blocking.blocking_keys(), 0);
    }

    /// Goal: a timeout answers the null array and leaves nothing behind; a disconnect
    /// too. Method: a 10 ms timeout polled after 20 ms; a forever waiter disconnected.
    #[test]
    fn timeout_and_disconnect_leave_nothing() {
        let mut h = Harness::new();
        let mut a = Session::default();
        assert_eq!(run_as(&mut h, &mut a, "BLMOVE src dst LEFT RIGHT 0.01").1, Flow::Block);
        assert_eq!(poll(&h, &mut a), None);
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(poll(&h, &mut a).as_deref(), Some("*-1\r\n"));
        let mut gone = Session::default();
        assert_eq!(run_as(&mut h, &mut gone, "BLPOP src 0").1, Flow::Block);
        assert_eq!(h.shared.redis.blocking.blocked_clients(), 1);
        gone.disconnect(&h.shared);
        assert_eq!(h.shared.redis.blocking.blocked_clients(), 0);
        assert_eq!(h.run("RPUSH src e"), ":1\r\n");
        assert_eq!(h.run("LLEN src"), ":1\r\n", "nobody popped for the gone client");
    }

    /// Goal: a served BLMOVE pushes to its destination, whose waiter is served next, and
    /// a transaction serves waiters only after EXEC. Method: chained waiters.
    #[test]
    fn moves_chain_and_exec_serves_after() {
        let mut h = Harness::new();
        let (mut mover, mut last) = (Session::default(), Session::default());
        assert_eq!(run_as(&mut h, &mut last, "BLPOP dst 0").1, Flow::Block);
        assert_eq!(run_as(&mut h, &mut mover, "BRPOPLPUSH src dst 0").1, Flow::Block);
        h.check(&[
            ("MULTI", "+OK\r\n"),
            ("RPUSH src e", "+QUEUED\r\n"),
            ("RPOP src", "+QUEUED\r\n"),
            ("EXEC", "*2\r\n:1\r\n$1\r\ne\r\n"),
        ]);
        assert_eq!(poll(&h, &mut mover), None, "pushed and popped inside EXEC");
        assert_eq!(h.run("RPUSH src f"), ":1\r\n");
        assert_eq!(poll(&h, &mut mover).as_deref(), Some("$1\r\nf\r\n"));
        assert_eq!(poll(&h, &mut last).as_deref(), Some("*2\r\n$3\r\ndst\r\n$1\r\nf\r\n"));
        assert_eq!(h.run("EXISTS src dst"), ":0\r\n");
    }

    /// Goal: keys made ready in another database (MOVE, COPY ... DB, SWAPDB) serve the
    /// waiters there, with their key names as they gave them. Method: waiters in
    /// databases 1 and 2, writes from database 0.
    #[test]
    fn move_copy_and_swapdb_wake_other_databases() {
        let mut h = Harness::new();
        let mut one = Session { db: 1, ..Session::default() };
        let mut two = Session { db: 2, ..Session::default() };
        assert_eq!(run_as(&mut h, &mut one, "BLPOP m 0").1, Flow::Block);
        h.check(&[("RPUSH m x", ":1\r\n"), ("MOVE m 1", ":1\r\n")]);
        assert_eq!(poll(&h, &mut one).as_deref(), Some("*2\r\n$1\r\nm\r\n$1\r\nx\r\n"));
        assert_eq!(run_as(&mut h, &mut one, "BLPOP c 0").1, Flow::Block);
        h.check(&[("RPUSH src y", ":1\r\n"), ("COPY src c DB 1", ":1\r\n")]);
        assert_eq!(poll(&h, &mut one).as_deref(), Some("*2\r\n$1\r\nc\r\n$1\r\ny\r\n"));
        assert_eq!(run_as(&mut h, &mut two, "BRPOP s 0").1, Flow::Block);
        h.check(&[("RPUSH s z", ":1\r\n"), ("SWAPDB 0 2", "+OK\r\n")]);
        assert_eq!(poll(&h, &mut two).as_deref(), Some("*2\r\n$1\r\ns\r\n$1\r\nz\r\n"));
        assert!(!h.shared.redis.blocking.any());
    }

    /// Goal: inside MULTI the blocking commands answer at once as their non-blocking
    /// forms; WAIT answers 0. Method: wire table.
    #[test]
    fn inside_multi_nothing_blocks() {
        let mut h = Harness::new();
        h.check(&[
            ("MULTI", "+OK\r\n"),
            ("BLPOP k 0", "+QUEUED\r\n"),
            ("BLMOVE k d LEFT LEFT 0", "+QUEUED\r\n"),
            ("BZMPOP 0 1 z MIN", "+QUEUED\r\n"),
            ("WAIT 1 0", "+QUEUED\r\n"),
            ("EXEC", "*4\r\n*-1\r\n$-1\r\n*-1\r\n:0\r\n"),
            ("WAIT 0 0", ":0\r\n"),
        ]);
        assert!(!h.session.is_blocked());
    }
}
