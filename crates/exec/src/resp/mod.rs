//! Redis commands against the store.
//!
//! ```text
//!   Command --proto_resp::route--> Route --dispatch (one arm per id)--> handler(Ctx)
//!     (name, subcommand, arity: checked once, from the table)            |
//!        keyspace::encode(session.db, key) <------------------------------+
//!                 |                                                       |
//!   crate::core (where memcached means the same) / Store::modify     Reply (RESP2 or 3)
//! ```
//!
//! Goals: Redis 7.0's replies and error texts, so client libraries and Redis's own test suite
//! work unchanged: strings and generic keys, hashes, lists, sets, sorted sets, bitmaps, GEO
//! and SORT; transactions, blocking commands, Lua scripts and functions, pub/sub, keyspace
//! events and client tracking; ACL users; SAVE/BGSAVE (Spinel's own file format), DUMP,
//! RESTORE and MIGRATE (Redis's payload format); cluster mode from a nodes.conf map. Every
//! read-modify-write is atomic per key (one core call or one `Store::modify`). Non-goals:
//! replication, AOF, modules, streams, and the cluster bus (no gossip or failover).
//!
//! Handlers live by command group, one module or folder each (`strings`, `incr`, `keys`,
//! `hash`, `list`, `set`, `zset`, `bitmap`, `geo`, `sort`, `tx`, `blocking`, `script`,
//! `pubsub`, `acl`, `cluster`, `connection` (PING ... CLIENT), `server` (COMMAND, DBSIZE,
//! FLUSH*, TIME), `config`, `info`, ...), and `dispatch` maps each command id to its
//! handler; `ttl` holds the expiry arithmetic they share, `glob` the pattern matcher of KEYS,
//! SCAN and CONFIG GET, `typed` the typed read/modify of collections (over the `values`
//! crate's encodings). Commands that mean what a memcached one does run its core
//! (GET/MGET: get; SET/MSET/APPEND: store; GETEX: touch; DEL/UNLINK: delete; FLUSHALL,
//! FLUSHDB: flush); where Redis differs, the call site says how.
//!
//! Values written here carry memcached client flags 0; any item is readable whatever its
//! flags, so a value set over memcached is a Redis string. Integers are stored as decimal
//! text, so memcached `incr` and Redis `INCR` see the same number.

use std::mem;

use proto_resp::{error, route, Command, CommandSpec, Reply, Route, RouteError, Routed};
use store::StoreError;

use crate::{core::Refusal, counters::bump, Counters, Flow, Shared};

pub mod acl;
pub mod auth;
mod bitmap;
pub mod blocking;
mod client_admin;
mod clients;
pub mod cluster;
mod config;
pub use config::set_at_start;
mod config_absent;
mod config_checks;
mod config_kept;
mod config_rewrite;
mod connection;
mod debug;
mod dispatch;
mod errorstats;
mod geo;
mod glob;
mod hash;
mod help;
mod incr;
mod info;
mod keep;
pub mod keyevents;
mod keys;
mod latencies;
mod lcs;
mod list;
mod lolwut;
mod memory;
mod module;
pub mod monitor;
mod object;
pub mod pause;
mod persist;
mod pick;
mod plain;
pub mod pubsub;
mod redact;
pub(crate) mod replication;
mod scan;
pub mod script;
mod server;
mod session;
mod set;
pub mod slowlog;
mod sort;
mod stream;
mod strings;
#[allow(dead_code)] // The data type families use it as they land.
pub(crate) mod thresholds;
pub mod tracking;
mod ttl;
mod tx;
mod typed;
mod verbatim;

pub use persist::snapshot_path;
pub(crate) use typed::{restore as restore_collection, saved_encoding, type_name};

/// The server's clock in Unix milliseconds (the one expiry uses).
pub(crate) fn now_unix_ms(shared: &Shared) -> u64 {
    ttl::now_ms(shared)
}
mod zset;

#[cfg(test)]
pub(crate) mod testkit;

pub use clients::{ClientInfo, ClientRegistry, SharedClient};
pub use errorstats::ErrorStats;
pub(crate) use info::db_key_counts;
use session::ReplyMode;
pub use session::Session;

fn is_http_probe(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b"post") || name.eq_ignore_ascii_case(b"host:")
}

/// Executes one parsed command, appending its reply to `out`.
pub fn execute(
    shared: &Shared,
    counters: &Counters,
    session: &mut Session,
    command: &Command<'_>,
    out: &mut Vec<u8>,
) -> Flow {
    if let Some(plain) = plain::command(command) {
        if plain::is_plain(shared, session) {
            return plain::run_plain(shared, counters, session, command, plain, out);
        }
    }
    // The primary's stream is never held (Redis's master client is exempt from pauses).
    if shared.redis.pause.is_set()
        && !session.from_master
        && pause::postpone(shared, session, command)
    {
        return Flow::Postpone;
    }
    if session.is_replica_feed() {
        // A replica's connection carries the stream: its own commands (REPLCONF ACK) are
        // run, and whatever they answer is not sent.
        let mut dropped = Vec::new();
        return execute_as(shared, counters, session, command, &mut dropped, Exclusive::IfMultiKey);
    }
    execute_as(shared, counters, session, command, out, Exclusive::IfMultiKey)
}

/// [`execute`] for a command EXEC or a script runs: it already has the store to itself.
pub(crate) fn execute_inside(
    shared: &Shared,
    counters: &Counters,
    session: &mut Session,
    command: &Command<'_>,
    out: &mut Vec<u8>,
) -> Flow {
    execute_as(shared, counters, session, command, out, Exclusive::Held)
}

/// A command a script runs (`redis.call`), routed by the caller, with the gate held: the
/// user's ACL rules apply, then the handler runs (no MULTI queueing, no second routing).
pub(crate) fn execute_routed(
    shared: &Shared,
    counters: &Counters,
    session: &mut Session,
    command: &Command<'_>,
    routed: Routed,
    out: &mut Vec<u8>,
) -> Flow {
    bump(&counters.total_commands, 1);
    let start = out.len();
    let mut ran = false;
    let flow = match auth::refusal(shared, session, &routed, command) {
        Ok(()) => match cluster::script_refusal(shared, session, &routed, command) {
            Some(message) => {
                Reply::new(out, session.protocol).error(message);
                Flow::Continue
            }
            None => {
                ran = true;
                session.in_script = true;
                let flow = run_if_allowed(
                    shared,
                    counters,
                    session,
                    command,
                    routed,
                    out,
                    Exclusive::Held,
                );
                session.in_script = false;
                flow
            }
        },
        Err(auth::Refusal::Closed) => Flow::Close,
        Err(auth::Refusal::Denied(denied)) => {
            auth::log_denied(shared, session, &denied, acl::log::Context::Lua);
            Reply::new(out, session.protocol).error(denied.script_message());
            Flow::Continue
        }
        Err(auth::Refusal::Message(message)) => {
            Reply::new(out, session.protocol).error(message);
            Flow::Continue
        }
    };
    count_error_reply(shared, counters, out, start);
    if !ran && out.get(start) == Some(&b'-') {
        count_rejected(counters, command);
    }
    flow
}

/// Counts the reply composed at `start` if it is an error (INFO `errorstats`, memcached's
/// `protocol_errors`): every path that answers a command calls this once.
fn count_error_reply(shared: &Shared, counters: &Counters, out: &[u8], start: usize) {
    if out.get(start) == Some(&b'-') {
        bump(&counters.protocol_errors, 1);
        shared.redis.error_stats.note(&out[start..]);
    }
}

/// Counts a call of `command` refused before it ran, if it names a known command.
fn count_rejected(counters: &Counters, command: &Command<'_>) {
    let spec = command.name().and_then(proto_resp::commands::lookup);
    if let (Some(spec), false) = (spec, cfg!(feature = "no-command-stats")) {
        counters.command_stats.reject(proto_resp::commands::index_of(spec));
    }
}

/// Whether a command takes the gate for itself (see `crate::gate`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exclusive {
    /// A write of several keys runs with no other worker executing.
    IfMultiKey,
    /// Already exclusive (inside EXEC).
    Held,
}

fn execute_as(
    shared: &Shared,
    counters: &Counters,
    session: &mut Session,
    command: &Command<'_>,
    out: &mut Vec<u8>,
    exclusive: Exclusive,
) -> Flow {
    if command.is_empty() {
        return Flow::Continue;
    }
    bump(&counters.total_commands, 1);
    let start = out.len();
    if session.busy && exclusive == Exclusive::IfMultiKey {
        if let Some(message) = script::busy_refusal(shared, command) {
            let message = tx::refused_while_busy(session, command, message);
            Reply::new(out, session.protocol).error(message);
            count_error_reply(shared, counters, out, start);
            return Flow::Continue;
        }
    }
    // Whether the command reached its handler: an error reply before that is a rejected
    // call of the command (INFO commandstats' `rejected_calls`).
    let mut ran = false;
    let flow = match tx::queue(shared, session, command) {
        Some(Ok(())) => {
            note_queued(shared, session, command);
            Reply::new(out, session.protocol).simple(b"QUEUED");
            Flow::Continue
        }
        Some(Err(message)) => {
            Reply::new(out, session.protocol).error(message);
            Flow::Continue
        }
        None => match route(command) {
            Ok(routed) => match auth::refusal(shared, session, &routed, command) {
                Ok(())
                    if session.resp2_subscribed()
                        && !pubsub::allowed_when_subscribed(routed.spec.name) =>
                {
                    let message = pubsub::not_allowed_message(full_name(&routed));
                    Reply::new(out, session.protocol).error(message);
                    Flow::Continue
                }
                Ok(())
                    if exclusive == Exclusive::IfMultiKey
                        && shared.redis.cluster.get().is_some() =>
                {
                    ran = true;
                    run_in_cluster(shared, counters, session, command, routed, out)
                }
                Ok(()) => {
                    ran = true;
                    run_if_allowed(shared, counters, session, command, routed, out, exclusive)
                }
                Err(auth::Refusal::Closed) => return Flow::Close,
                Err(auth::Refusal::Denied(denied)) => {
                    let (message, context) = match exclusive {
                        Exclusive::Held => (denied.exec_message(), acl::log::Context::Multi),
                        Exclusive::IfMultiKey => (denied.message(), acl::log::Context::TopLevel),
                    };
                    auth::log_denied(shared, session, &denied, context);
                    Reply::new(out, session.protocol).error(message);
                    Flow::Continue
                }
                Err(auth::Refusal::Message(message)) => {
                    Reply::new(out, session.protocol).error(message);
                    Flow::Continue
                }
            },
            Err(RouteError::UnknownCommand) if command.name().is_some_and(is_http_probe) => {
                // Redis's defence against cross-protocol scripting: a browser made to POST
                // to the Redis port sends `POST` and `Host:` lines; hang up without a reply.
                return Flow::Close;
            }
            Err(refused) => {
                Reply::new(out, session.protocol).error(refused.message(command));
                Flow::Continue
            }
        },
    };
    count_error_reply(shared, counters, out, start);
    if !ran && out.get(start) == Some(&b'-') {
        count_rejected(counters, command);
    }
    if session.script.is_some() {
        // A busy script yielded to the loop: the rest waits for its reply
        // (`after_suspended_command`).
        return flow;
    }
    // Waiters on the keys it wrote are served once the whole command (or EXEC) is done.
    if exclusive == Exclusive::IfMultiKey && !session.ready_keys.is_empty() {
        blocking::serve_ready(shared, counters, session);
    }
    let pushed = mem::take(&mut session.pushed);
    if session.reply_mode != ReplyMode::On {
        drop_reply(session, out, start, pushed);
    }
    flow
}

/// What [`execute_as`] does after a command, for a script that was suspended
/// ([`Session::resume_script`]), once its reply (at `start` in `out`) is written. The
/// worker is between batches: it enters the gate to serve the waiters of the keys the
/// script wrote.
fn after_suspended_command(
    shared: &Shared,
    counters: &Counters,
    session: &mut Session,
    out: &mut Vec<u8>,
    start: usize,
) {
    count_error_reply(shared, counters, out, start);
    // BCAST clients hear the keys the script wrote since it was suspended.
    tracking::broadcast_written(shared, counters, session);
    if !session.ready_keys.is_empty() {
        let worker = shared.core.worker_of(counters);
        shared.core.gate.enter(worker);
        blocking::serve_ready(shared, counters, session);
        shared.core.gate.leave(worker);
    }
    let pushed = mem::take(&mut session.pushed);
    if session.reply_mode != ReplyMode::On {
        drop_reply(session, out, start, pushed);
    }
}

/// [`run`] on a cluster node: a command for keys this node does not serve is redirected
/// (`-MOVED`, `-ASK`, ...); a refused EXEC ends its transaction.
fn run_in_cluster(
    shared: &Shared,
    counters: &Counters,
    session: &mut Session,
    command: &Command<'_>,
    routed: Routed,
    out: &mut Vec<u8>,
) -> Flow {
    let flow = match cluster::judge(shared, session, &routed, command) {
        Err(message) => {
            count_rejected(counters, command);
            tx::end_refused_exec(session, &routed);
            Reply::new(out, session.protocol).error(message);
            Flow::Continue
        }
        Ok(slot) => {
            cluster::set_command_slot(session, slot);
            run_if_allowed(shared, counters, session, command, routed, out, Exclusive::IfMultiKey)
        }
    };
    cluster::after_command(session, &routed);
    flow
}

/// Redis's full name of a routed command: `client|reply` for a subcommand, as its errors
/// print it.
pub(crate) fn full_name(routed: &Routed) -> &'static str {
    match (routed.route, &routed.spec.run) {
        (Route::Subcommand(id), proto_resp::commands::Run::Subcommands { table, .. }) => {
            table.iter().find(|sub| sub.id == id).map_or(routed.spec.name, |sub| sub.name)
        }
        _ => routed.spec.name,
    }
}

/// CLIENT REPLY OFF or SKIP: the reply composed at `start` is not sent, unless it is
/// `pushed` ((un)subscribe confirmations, as Redis sends them). SKIP drops the reply of
/// the command after it, so the CLIENT REPLY SKIP command itself only arms it.
fn drop_reply(session: &mut Session, out: &mut Vec<u8>, start: usize, pushed: bool) {
    match session.reply_mode {
        ReplyMode::Off if !pushed => out.truncate(start),
        ReplyMode::Off => {}
        ReplyMode::SkipNext => session.reply_mode = ReplyMode::Skipping,
        ReplyMode::Skipping => {
            if !pushed {
                out.truncate(start);
            }
            session.reply_mode = ReplyMode::On;
        }
        ReplyMode::On => {}
    }
}

/// Runs the handler, then raises the keyspace events it recorded (`absent`: the keys that
/// did not exist before it, when events are on) and counts its changes.
fn dispatch_and_publish(
    ctx: &mut Ctx<'_>,
    route: Route,
    absent: Option<&[usize]>,
    reply_at: usize,
) -> Flow {
    let journaling = ctx.shared.core.repl.journaling() && !ctx.session.from_master;
    // A write sent verbatim holds the journal from before it runs (`verbatim`).
    let verbatim = match journaling && !ctx.is_nested() {
        true => verbatim::kind_of(ctx, route)
            .and_then(|kind| Some((kind, crate::repl::lock_for_verbatim(ctx.shared)?))),
        false => None,
    };
    let flow = dispatch::dispatch(ctx, route);
    if journaling {
        replication::after_write(ctx, route, reply_at, verbatim);
    }
    if let Some(absent) = absent {
        keyevents::publish(ctx, absent);
    }
    // Redis's `dirty`: a branch per command, a store to this worker's own counter per write.
    let changes = ctx.outcome.changes();
    if changes != 0 {
        bump(&ctx.counters.redis_changes, changes);
    }
    flow
}

/// [`run`], unless replication refuses the command here (see `replication_refusal`).
fn run_if_allowed(
    shared: &Shared,
    counters: &Counters,
    session: &mut Session,
    command: &Command<'_>,
    routed: Routed,
    out: &mut Vec<u8>,
    exclusive: Exclusive,
) -> Flow {
    if shared.core.repl.guards_writes() {
        if let Some(refusal) = replication_refusal(shared, session, &routed) {
            Reply::new(out, session.protocol).error(refusal);
            return Flow::Continue;
        }
    }
    run(shared, counters, session, command, routed, out, exclusive)
}

fn run(
    shared: &Shared,
    counters: &Counters,
    session: &mut Session,
    command: &Command<'_>,
    routed: Routed,
    out: &mut Vec<u8>,
    exclusive: Exclusive,
) -> Flow {
    let key_scratch = mem::take(&mut session.key_scratch);
    let spec = routed.spec;
    let index = proto_resp::commands::index_of(spec);
    session.activity.note(command_code(index, routed.route), shared.core.clock_secs());
    // CLIENT NO-TOUCH: this command's reads leave access times alone.
    let no_touch = session.activity.has(clients::flag::NO_TOUCH);
    if no_touch {
        store::set_reads_touch(false);
    }
    let fast = spec.flags.contains(proto_resp::commands::Flags::FAST);
    // See `crate::latency` for what is timed and why.
    let counted = !cfg!(feature = "no-command-stats");
    let slot = proto_resp::commands::stat_slot(index, routed.route);
    let sampled = counted && counters.command_stats.next_is_sampled(slot);
    let timed = sampled || (counted && slowlog::watching(shared, fast));
    let started = timed.then(crate::latency::now);
    let (outcome, cmd) = (keyevents::Outcome::default(), command);
    let mut ctx =
        Ctx { shared, counters, session, cmd, spec, out, key_scratch, exclusive, outcome };
    // A write's keyspace events come from what its handler recorded (`keyevents::outcome`).
    let writes = is_write(&routed);
    let events =
        (writes && shared.redis.keyspace_events.flags() != 0).then(|| keyevents::absent_keys(&ctx));
    let reply_at = ctx.out.len();
    if shared.redis.tracking.any() {
        tracking::before_command(&mut ctx);
    }
    // MONITOR shows a command once it ran (SELECT with the database it chose); EVAL and its
    // kin before the commands they run.
    let monitored = shared.redis.monitors.active();
    let shown_first = spec.flags.contains(proto_resp::commands::Flags::SKIP_MONITOR);
    if monitored && shown_first {
        monitor::feed(&ctx, &routed);
    }
    keep::before_command(&ctx, writes);
    let flow = if exclusive == Exclusive::IfMultiKey && writes_several_keys(spec, command.argc()) {
        let (worker, gate) = (shared.core.worker_of(counters), &shared.core.gate);
        let events = events.as_deref();
        gate.exclusive(worker, || dispatch_and_publish(&mut ctx, routed.route, events, reply_at))
    } else {
        dispatch_and_publish(&mut ctx, routed.route, events.as_deref(), reply_at)
    };
    if counted {
        counters.command_stats.count_call(slot, ctx.out.get(reply_at) == Some(&b'-'));
    }
    if monitored && !shown_first {
        monitor::feed(&ctx, &routed);
    }
    blocking::note_written(&mut ctx, routed.route);
    // Client-side caching: one relaxed load when no client tracks.
    if shared.redis.tracking.any() {
        tracking::after_command(&mut ctx);
    }
    ctx.session.key_scratch = ctx.key_scratch;
    if no_touch {
        store::set_reads_touch(true);
    }
    if let Some(started) = started {
        let nanos = crate::latency::nanos_since(started);
        // Only sampled calls go to the histogram (not those timed for the slow log alone),
        // so it stays one call in `SAMPLE` of every command.
        if sampled {
            counters.command_stats.record(slot, nanos);
        }
        slowlog::note(shared, ctx.session, command, spec.flags, nanos);
    }
    flow
}

/// A replica's or a guarded primary's refusal of this command (see `replication`).
#[cold]
fn replication_refusal(
    shared: &Shared,
    session: &Session,
    routed: &Routed,
) -> Option<&'static str> {
    let stale_ok = routed.spec.flags.contains(proto_resp::commands::Flags::STALE);
    if replication::stale_refusal(shared, session, stale_ok) {
        return Some(replication::MASTERDOWN);
    }
    is_write(routed).then(|| replication::write_refusal(shared, session)).flatten()
}

/// Whether a routed command may write: its flag, or a writing XGROUP subcommand (a
/// container's flags are empty, and subcommands carry none in the table).
fn is_write(routed: &Routed) -> bool {
    use proto_resp::commands::SubcommandId as S;
    routed.spec.flags.contains(proto_resp::commands::Flags::WRITE)
        || matches!(
            routed.route,
            Route::Subcommand(
                S::XgroupCreate
                    | S::XgroupCreateconsumer
                    | S::XgroupDelconsumer
                    | S::XgroupDestroy
                    | S::XgroupSetid
            )
        )
}

/// A command queued after MULTI is still the client's last command (CLIENT LIST `cmd=`).
fn note_queued(shared: &Shared, session: &Session, command: &Command<'_>) {
    if let Ok(routed) = route(command) {
        let index = proto_resp::commands::index_of(routed.spec);
        session.activity.note(command_code(index, routed.route), shared.core.clock_secs());
    }
}

/// [`clients::Activity::command_code`] of a routed command.
fn command_code(index: usize, route: Route) -> u32 {
    let sub = match route {
        Route::Subcommand(id) => Some(id),
        Route::Command(_) => None,
    };
    clients::Activity::command_code(index, sub)
}

/// A write that names more than one key in this call (MSET, RENAME, SMOVE, DEL of several
/// keys, the STORE forms, LMPOP): Redis runs it as one step, so it must not interleave with
/// another worker's commands.
fn writes_several_keys(spec: &CommandSpec, argc: usize) -> bool {
    use proto_resp::commands::Flags;
    if spec.flags.contains(Flags::BLOCKING) {
        // Blocking commands take the gate themselves, around their look and registration.
        return false;
    }
    if spec.flags.contains(Flags::WRITE | Flags::MOVABLEKEYS) {
        // LMPOP: its keys follow a `numkeys`; it looks at several before it writes one.
        return true;
    }
    if !spec.flags.contains(Flags::WRITE) || spec.first_key <= 0 {
        return false;
    }
    if spec.name.ends_with("store") || spec.name == "bitop" {
        return true;
    }
    let last = if spec.last_key < 0 { argc as i32 + spec.last_key } else { spec.last_key };
    (last - spec.first_key) / spec.step.max(1) >= 1
}

/// Everything a handler needs for one command.
pub(crate) struct Ctx<'a> {
    shared: &'a Shared,
    counters: &'a Counters,
    session: &'a mut Session,
    cmd: &'a Command<'a>,
    spec: &'static CommandSpec,
    out: &'a mut Vec<u8>,
    /// Taken from the session for the command; `key(i)` encodes into it.
    key_scratch: Vec<u8>,
    /// Whether the gate is already held (EXEC, a script): a script must not take it again.
    exclusive: Exclusive,
    /// What the command did, as its handler records it: its keyspace events and the keys
    /// tracking clients hear are invalid (`keyevents::outcome`).
    outcome: keyevents::Outcome,
}

impl<'a> Ctx<'a> {
    /// Inside EXEC or a script: the gate is held, and a blocking command must not wait.
    fn is_nested(&self) -> bool {
        self.exclusive == Exclusive::Held
    }

    /// Whether this command's reply may lend large values (`store::loans`: sent from item
    /// memory by the loop, placed at their offsets in `out`), when the worker opened
    /// lending for the batch. Only where the reply stays where it is written until it is
    /// sent: not inside EXEC or a script (their replies are copied or made Lua values),
    /// not under CLIENT REPLY OFF or SKIP (the reply is cut off), not on the primary's
    /// link or a replica's connection (their replies go to a buffer that is dropped).
    #[inline(always)]
    fn lends(&self) -> bool {
        !self.is_nested()
            && self.session.reply_mode == ReplyMode::On
            && !self.session.from_master
            && self.session.replica.is_none()
    }

    /// Argument `index`; the arity check guarantees the ones a handler reads exist.
    fn arg(&self, index: usize) -> &'a [u8] {
        self.cmd.arg(index).expect("arity checked before the handler runs")
    }

    fn argc(&self) -> usize {
        self.cmd.argc()
    }

    /// The stored form of key argument `index` in the session's database.
    fn key(&mut self, index: usize) -> &[u8] {
        let key = self.cmd.arg(index).expect("arity checked before the handler runs");
        crate::keyspace::encode(self.session.db, key, &mut self.key_scratch)
    }

    /// [`Ctx::key`] and the reply buffer together, for a core that composes the reply
    /// under the key's lock. Inlined: a GET's one call (out of line, 49 instructions of a
    /// pipelined GET's ~1,500, callgrind).
    #[inline(always)]
    fn key_and_out(&mut self, index: usize) -> (&[u8], &mut Vec<u8>) {
        let key = self.cmd.arg(index).expect("arity checked before the handler runs");
        (crate::keyspace::encode(self.session.db, key, &mut self.key_scratch), &mut *self.out)
    }

    fn reply(&mut self) -> Reply<'_> {
        Reply::new(self.out, self.session.protocol)
    }

    fn error(&mut self, message: impl AsRef<[u8]>) {
        self.reply().error(message);
    }

    /// A store error in Redis's words.
    fn store_error(&mut self, error: StoreError) {
        match Refusal::of(&error) {
            Some(refusal) => self.refused(refusal),
            None => self.error(format!("ERR {error}")),
        }
    }

    /// A refused write in Redis's words.
    fn refused(&mut self, refusal: Refusal) {
        self.error(match refusal {
            // Values up to `proto-max-bulk-len` are written with that limit (checked before
            // a write where a command can build a longer one), so the store refuses a
            // shorter one only because it does not fit in memory: half the limit at most.
            Refusal::TooLarge => error::OOM,
            Refusal::NoMemory => error::OOM,
            Refusal::KeyTooLong => KEY_TOO_LONG,
        });
    }

    fn bulk_or_null(&mut self, value: Option<&[u8]>) {
        match value {
            Some(value) => self.reply().bulk(value),
            None => self.reply().null(),
        }
    }
}

/// Redis's `proto-max-bulk-len`: the longest string (and, here, the longest encoding of a
/// collection) the Redis port writes, within half the memory limit.
pub(crate) const PROTO_MAX_BULK_LEN: usize = proto_resp::limits::BULK_LEN_MAX_DEFAULT;

/// The store options of a Redis write: its size limit instead of memcached's `-I`.
pub(crate) fn redis_options() -> store::StoreOptions {
    store::StoreOptions { size_max: Some(PROTO_MAX_BULK_LEN), ..Default::default() }
}

/// Redis has no key limit below 512 MB; the store's is 64 KiB.
const KEY_TOO_LONG: &str = "ERR key too long";

/// Counts a read for `INFO` (`keyspace_hits`/`keyspace_misses`) and memcached `stats`, as
/// the get core counts its own.
fn count_read(counters: &Counters, found: bool) {
    crate::core::get::count(counters, u64::from(found), u64::from(!found));
}

#[cfg(test)]
mod tests;
