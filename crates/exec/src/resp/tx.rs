//! Transactions: MULTI EXEC DISCARD WATCH UNWATCH.
//!
//! After MULTI a session queues every command but the transaction ones (each answered
//! `+QUEUED`); a command refused while queueing (unknown, wrong arity) marks the
//! transaction failed and EXEC answers EXECABORT. EXEC runs the queue inside
//! [`crate::gate::Gate::exclusive`]: no other worker executes anything meanwhile, so no
//! command of another client, on either protocol, interleaves with it.
//!
//! WATCH remembers each key's CAS unique (or its absence). Every write gives an item a new
//! unique, and expiry, eviction and deletion remove it, so EXEC, once exclusive, aborts
//! (null reply) when any watched key's unique differs from the one remembered. One case
//! differs from Redis: a key absent at WATCH that is created and deleted again before EXEC
//! looks unchanged.

use proto_resp::{
    commands::TxId, compose_command, parse_command, route, Command, Limits, Route, RouteError,
};

use std::sync::atomic::Ordering::Relaxed;

use super::{typed, Ctx, Session};
use crate::Flow;

/// A session's open transaction.
#[derive(Debug, Default)]
pub struct Transaction {
    /// Each queued command, as RESP bytes.
    queued: Vec<Vec<u8>>,
    /// A command was refused while queueing: EXEC answers EXECABORT.
    failed: bool,
}

/// A watched key: its stored form and its CAS unique when watched (`None`: absent).
#[derive(Debug)]
pub struct Watched {
    key: Vec<u8>,
    cas: Option<u64>,
}

const NESTED: &str = "ERR MULTI calls can not be nested";
const EXEC_WITHOUT_MULTI: &str = "ERR EXEC without MULTI";
const DISCARD_WITHOUT_MULTI: &str = "ERR DISCARD without MULTI";
const WATCH_IN_MULTI: &str = "ERR WATCH inside MULTI is not allowed";
const EXECABORT: &str = "EXECABORT Transaction discarded because of previous errors.";

/// Runs one command of this family.
pub(super) fn dispatch(ctx: &mut Ctx<'_>, id: TxId) {
    match id {
        TxId::Multi => multi(ctx),
        TxId::Exec => exec(ctx),
        TxId::Discard => discard(ctx),
        TxId::Watch => watch(ctx),
        TxId::Unwatch => {
            ctx.session.watched.clear();
            ctx.reply().ok();
        }
    }
}

/// A command flagged `no_multi` (SAVE) given inside MULTI.
const NOT_IN_MULTI: &[u8] = b"ERR Command not allowed inside a transaction";

/// While a transaction is open: queues `command` and answers, or returns `None` for a
/// command that runs now (EXEC, DISCARD, MULTI, WATCH, QUIT, RESET, as Redis runs them).
pub(super) fn queue(
    shared: &crate::Shared,
    session: &mut Session,
    command: &Command<'_>,
) -> Option<Result<(), Vec<u8>>> {
    session.tx.as_ref()?;
    match route(command) {
        Ok(routed) => {
            let runs_now = matches!(
                routed.route,
                Route::Command(proto_resp::CommandId::Transactions(
                    TxId::Exec | TxId::Discard | TxId::Multi | TxId::Watch
                )) | Route::Command(proto_resp::CommandId::Quit | proto_resp::CommandId::Reset)
            );
            if runs_now {
                return None;
            }
            let args: Vec<&[u8]> = command.args().collect();
            // A command the user may not run fails the transaction as it is queued (EXEC
            // checks again: the user's rules may change in between).
            let account = session.account.as_ref().filter(|a| !a.is_unrestricted());
            if let Some(Err(denied)) = account.map(|a| super::acl::check(a, &routed, &args)) {
                let context = super::acl::log::Context::Multi;
                super::auth::log_denied(shared, session, &denied, context);
                let tx = session.tx.as_mut().expect("checked above");
                tx.failed = true;
                return Some(Err(denied.message().into_bytes()));
            }
            if routed.spec.flags.contains(proto_resp::commands::Flags::NO_MULTI) {
                session.tx.as_mut().expect("checked above").failed = true;
                return Some(Err(NOT_IN_MULTI.to_vec()));
            }
            // On a cluster node, a command for another node's keys fails the transaction.
            if let Some(message) = super::cluster::refusal(shared, session, &routed, command) {
                session.tx.as_mut().expect("checked above").failed = true;
                return Some(Err(message));
            }
            let tx = session.tx.as_mut().expect("checked above");
            let mut raw = Vec::new();
            compose_command(&args, &mut raw);
            tx.queued.push(raw);
            session.activity.multi.store(tx.queued.len() as i32, Relaxed);
            Some(Ok(()))
        }
        Err(RouteError::UnknownCommand) if command.name().is_none() => None,
        Err(refused) => {
            session.tx.as_mut().expect("checked above").failed = true;
            Some(Err(refused.message(command)))
        }
    }
}

/// Whether a command the open transaction queued may write (CLIENT PAUSE WRITE then holds
/// its EXEC, as Redis holds one whose queued flags say so); false with none open.
pub(super) fn queued_may_write(shared: &crate::Shared, session: &Session) -> bool {
    let Some(tx) = &session.tx else { return false };
    let limits = Limits::default();
    tx.queued.iter().any(|raw| match parse_command(raw, &limits) {
        Ok((command, _)) => route(&command)
            .is_ok_and(|routed| super::pause::may_write(shared, session, routed.spec, &command)),
        Err(_) => false,
    })
}

/// A command refused with `message` (BUSY) while a script is busy: inside MULTI it fails
/// the transaction, and an EXEC ends it with EXECABORT, as Redis's `rejectCommand` does.
/// Returns the error to answer.
pub(super) fn refused_while_busy(
    session: &mut Session,
    command: &Command<'_>,
    message: &str,
) -> String {
    let Some(tx) = session.tx.as_mut() else { return message.to_owned() };
    tx.failed = true;
    let is_exec = route(command).is_ok_and(|routed| {
        routed.route == Route::Command(proto_resp::CommandId::Transactions(TxId::Exec))
    });
    if !is_exec {
        return message.to_owned();
    }
    session.tx = None;
    session.activity.multi.store(-1, Relaxed);
    session.watched.clear();
    format!("EXECABORT Transaction discarded because of: {message}")
}

/// The commands queued since MULTI, read again (a cluster node routes EXEC by them).
pub(super) fn queued_commands(session: &Session) -> Option<Vec<Command<'_>>> {
    let tx = session.tx.as_ref()?;
    let limits = Limits::default();
    let read = |raw| parse_command(raw, &limits).ok().map(|(command, _)| command);
    Some(tx.queued.iter().map(Vec::as_slice).filter_map(read).collect())
}

/// A cluster node refused `routed`: if it is EXEC, its transaction is discarded (and its
/// keys unwatched), as Redis does.
pub(super) fn end_refused_exec(session: &mut Session, routed: &proto_resp::Routed) {
    if routed.route == Route::Command(proto_resp::CommandId::Transactions(TxId::Exec))
        && session.tx.take().is_some()
    {
        session.activity.multi.store(-1, Relaxed);
        session.watched.clear();
    }
}

fn multi(ctx: &mut Ctx<'_>) {
    if ctx.session.tx.is_some() {
        return ctx.error(NESTED);
    }
    ctx.session.tx = Some(Transaction::default());
    ctx.session.activity.multi.store(0, Relaxed);
    ctx.reply().ok();
}

fn discard(ctx: &mut Ctx<'_>) {
    if ctx.session.tx.take().is_none() {
        return ctx.error(DISCARD_WITHOUT_MULTI);
    }
    ctx.session.activity.multi.store(-1, Relaxed);
    ctx.session.watched.clear();
    ctx.reply().ok();
}

fn watch(ctx: &mut Ctx<'_>) {
    if ctx.session.tx.is_some() {
        return ctx.error(WATCH_IN_MULTI);
    }
    let shared = ctx.shared;
    for index in 1..ctx.argc() {
        let key = ctx.key(index).to_vec();
        let cas =
            shared.core.store.reader().peek(&key).map(|item| typed::watch_stamp(shared, &item));
        ctx.session.watched.push(Watched { key, cas });
    }
    ctx.reply().ok();
}

fn exec(ctx: &mut Ctx<'_>) {
    let Some(tx) = ctx.session.tx.take() else {
        return ctx.error(EXEC_WITHOUT_MULTI);
    };
    ctx.session.activity.multi.store(-1, Relaxed);
    let watched = std::mem::take(&mut ctx.session.watched);
    if tx.failed {
        return ctx.error(EXECABORT);
    }
    let (shared, counters) = (ctx.shared, ctx.counters);
    let worker = shared.core.worker_of(counters);
    shared.core.gate.exclusive(worker, || {
        if !unchanged(ctx, &watched) {
            return ctx.reply().null_array();
        }
        ctx.reply().array(tx.queued.len());
        for raw in &tx.queued {
            run_queued(ctx, raw);
        }
    });
}

/// Whether every watched key still has the CAS unique it had when watched.
fn unchanged(ctx: &Ctx<'_>, watched: &[Watched]) -> bool {
    let reader = ctx.shared.core.store.reader();
    let stamp = |item: store::Item<'_>| typed::watch_stamp(ctx.shared, &item);
    watched.iter().all(|w| reader.peek(&w.key).map(stamp) == w.cas)
}

/// Executes one queued command, appending its reply (it was routed when queued, so it
/// parses again).
fn run_queued(ctx: &mut Ctx<'_>, raw: &[u8]) {
    let limits = Limits::default();
    let Ok((command, _)) = parse_command(raw, &limits) else {
        return ctx.error("ERR queued command could not be read again");
    };
    let (shared, counters) = (ctx.shared, ctx.counters);
    let flow = super::execute_inside(shared, counters, ctx.session, &command, ctx.out);
    // A queued command cannot close or stream from inside EXEC.
    debug_assert!(matches!(flow, Flow::Continue | Flow::Close), "{flow:?}");
}
