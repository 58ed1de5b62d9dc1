//! The plain path: GET and SET when nothing about the server or the connection asks for more
//! than the handler, its counters and its timing.
//!
//! ```text
//!   execute --plain::command (GET argc 2, SET argc >= 3)--> plain::is_plain --> run_plain
//!        \----------------- anything else, or any check below fails ----------> execute_as
//! ```
//!
//! `execute_as` and `run` ask, per command, about pauses, a replica's feed, a busy script,
//! MULTI, routing, ACL, pub/sub, cluster, replication, CLIENT NO-TOUCH, keyspace events,
//! tracking, MONITOR, the snapshot picture, blocked clients and CLIENT REPLY: a GET spent
//! about 600 instructions outside its handler on them (callgrind, pipeline 1). Each of those
//! features is off on a plain server, and each is seen by one relaxed load (of the server's
//! state) or one field (of the session): [`is_plain`] reads them all, and when every one is
//! off, [`run_plain`] does what `run` would do with them off, in the same order: the call
//! counted (INFO `total_commands`, `commandstats`, `errorstats`), the client's last command
//! noted (CLIENT LIST), the sampled or slow-log timing, and Redis's `dirty`. Any other
//! command, or any feature on, takes the general path, so every Redis-visible effect stays
//! as it was (the conformance tests of ACL, SLOWLOG, LATENCY, INFO, keyspace events,
//! tracking, MULTI/WATCH and MONITOR run both ways).

use std::{mem, sync::atomic::Ordering};

use proto_resp::{
    commands::{Flags, Run},
    Command, CommandId, CommandSpec, Route,
};

use super::{session::ReplyMode, slowlog, strings, Ctx, Exclusive, Session};
use crate::{counters::bump, Counters, Flow, Shared};

/// A GET of one key or a SET, by the table (so `rename-command` is honoured) and within
/// its arity; None for anything else.
#[inline(always)]
pub(super) fn command(command: &Command<'_>) -> Option<(&'static CommandSpec, CommandId)> {
    let spec = proto_resp::lookup(command.name()?)?;
    let argc = command.argc();
    match spec.run {
        Run::Command(id @ CommandId::Get) if argc == 2 => Some((spec, id)),
        Run::Command(id @ CommandId::Set) if argc >= 3 => Some((spec, id)),
        _ => None,
    }
}

/// Whether every feature that `execute_as` and `run` check for is off, for this session
/// and this server: then they would do no more than [`run_plain`] does.
#[inline(always)]
pub(super) fn is_plain(shared: &Shared, session: &Session) -> bool {
    let redis = &shared.redis;
    let session_plain = !session.from_master
        && !session.busy
        && session.tx.is_none()
        && session.script.is_none()
        && session.replica.is_none()
        && session.reply_mode == ReplyMode::On
        && session.ready_keys.is_empty()
        && !session.resp2_subscribed()
        && !session.activity.has(super::clients::flag::NO_TOUCH);
    // The user may run any command on any key (ACL), and was not deleted since it logged in.
    let unrestricted = session.account.as_ref().is_some_and(|account| {
        !account.deleted.load(Ordering::Acquire) && account.is_unrestricted()
    });
    session_plain
        && unrestricted
        && !redis.pause.is_set()
        && redis.keyspace_events.flags() == 0
        && !redis.tracking.any()
        && !redis.monitors.active()
        && !redis.blocking.any()
        && redis.cluster.get().is_none()
        && !shared.core.repl.guards_writes()
        && !shared.core.repl.journaling()
        && !shared.core.picture.is_active()
}

/// `run` for a command [`command`] accepted, on a session [`is_plain`] passed.
#[inline(always)]
pub(super) fn run_plain(
    shared: &Shared,
    counters: &Counters,
    session: &mut Session,
    command: &Command<'_>,
    (spec, id): (&'static CommandSpec, CommandId),
    out: &mut Vec<u8>,
) -> Flow {
    bump(&counters.total_commands, 1);
    let index = proto_resp::commands::index_of(spec);
    let route = Route::Command(id);
    session.activity.note(super::command_code(index, route), shared.core.clock_secs());
    // Timed as `run` times (see `crate::latency`).
    let counted = !cfg!(feature = "no-command-stats");
    let slot = proto_resp::commands::stat_slot(index, route);
    let sampled = counted && counters.command_stats.next_is_sampled(slot);
    let fast = spec.flags.contains(Flags::FAST);
    let timed = sampled || (counted && slowlog::watching(shared, fast));
    let started = timed.then(crate::latency::now);
    let key_scratch = mem::take(&mut session.key_scratch);
    let exclusive = Exclusive::IfMultiKey;
    let outcome = super::keyevents::Outcome::default();
    let reply_at = out.len();
    let mut ctx =
        Ctx { shared, counters, session, cmd: command, spec, out, key_scratch, exclusive, outcome };
    match id {
        CommandId::Get => strings::get(&mut ctx),
        _ => strings::set(&mut ctx),
    }
    let changes = ctx.outcome.changes();
    if changes != 0 {
        bump(&counters.redis_changes, changes);
    }
    let failed = ctx.out.get(reply_at) == Some(&b'-');
    if counted {
        counters.command_stats.count_call(slot, failed);
    }
    ctx.session.key_scratch = ctx.key_scratch;
    if let Some(started) = started {
        let nanos = crate::latency::nanos_since(started);
        if sampled {
            counters.command_stats.record(slot, nanos);
        }
        slowlog::note(shared, ctx.session, command, spec.flags, nanos);
    }
    super::count_error_reply(shared, counters, ctx.out, reply_at);
    session.pushed = false;
    Flow::Continue
}

#[cfg(test)]
mod tests {
    use proto_resp::{parse_command, Limits};

    use super::super::{execute_as, testkit::Harness, Exclusive};

    /// The commands both harnesses run: plain GETs and SETs, hits and misses, SET's options,
    /// its syntax error, a WRONGTYPE read, and commands between them that take the general
    /// path.
    const LINES: &[&str] = &[
        "PING",
        "SET k v",
        "GET k",
        "GET nosuch",
        "SET k2 v EX 100",
        "SET k3 v NX",
        "SET k3 w NX",
        "SET k4 v BADOPTION",
        "SET k5 v EX 0",
        "HSET h f v",
        "GET h",
        "SET k6 v GET",
        "get k",
        "set k x",
        "SELECT 1",
        "SET k v",
        "GET k",
        "DBSIZE",
    ];

    /// What INFO tells of `h`'s calls, its timings (`usec`) left out.
    fn info_without_times(h: &mut Harness) -> Vec<String> {
        let mut lines = Vec::new();
        for section in ["commandstats", "errorstats", "stats", "keyspace"] {
            let text = h.run(&format!("INFO {section}"));
            for line in text.split("\r\n").filter(|line| line.contains(':')) {
                let kept: Vec<&str> = line.split(',').filter(|f| !f.contains("usec")).collect();
                lines.push(kept.join(","));
            }
        }
        lines.retain(|line| {
            !line.starts_with("instantaneous_")
                && !line.starts_with("total_net_")
                && !line.starts_with("total_commands_processed")
        });
        lines
    }

    /// Goal: the plain path answers and counts as the general path does (replies, INFO
    /// commandstats, errorstats, keyspace hits and misses, `dirty`, databases), and it is
    /// the path a default session takes. Method: the same lines through `execute` (plain
    /// where it can) and through `execute_as` (never plain) on two harnesses; then
    /// keyspace events, MULTI and CLIENT REPLY OFF each turn the plain path off.
    #[test]
    fn plain_path_answers_and_counts_as_the_general_path() {
        let (mut plain, mut general) = (Harness::new(), Harness::new());
        for line in LINES {
            let want = {
                let wire = format!("{line}\r\n");
                let (command, _) = parse_command(wire.as_bytes(), &Limits::default()).unwrap();
                let mut out = Vec::new();
                let g = &mut general;
                let exclusive = Exclusive::IfMultiKey;
                execute_as(&g.shared, &g.counters, &mut g.session, &command, &mut out, exclusive);
                String::from_utf8_lossy(&out).into_owned()
            };
            assert_eq!(plain.run(line), want, "{line}");
        }
        let totals = (plain.shared.core.totals(), general.shared.core.totals());
        assert_eq!(totals.0.total_commands, totals.1.total_commands);
        assert_eq!(info_without_times(&mut plain), info_without_times(&mut general));
        // After its first command, a default session is plain for GET and SET.
        let wire = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
        let (get, _) = parse_command(wire, &Limits::default()).unwrap();
        assert!(super::command(&get).is_some() && super::is_plain(&plain.shared, &plain.session));
        plain.run("CONFIG SET notify-keyspace-events KEA");
        assert!(!super::is_plain(&plain.shared, &plain.session), "keyspace events are on");
        plain.run("CONFIG SET notify-keyspace-events \"\"");
        plain.run("MULTI");
        assert!(!super::is_plain(&plain.shared, &plain.session), "a transaction is open");
        assert_eq!(plain.run("SET k v"), "+QUEUED\r\n");
        plain.run("DISCARD");
        plain.run("CLIENT REPLY OFF");
        assert_eq!(plain.run("GET k"), "", "CLIENT REPLY OFF drops the reply");
    }
}
