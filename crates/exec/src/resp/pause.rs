//! CLIENT PAUSE timeout [WRITE|ALL] and CLIENT UNPAUSE.
//!
//! While a pause is in force, a Redis command it covers is postponed: the session answers
//! nothing, the worker leaves that command and what follows it unread (`Flow::Postpone`)
//! and offers them again when its loop is woken with the pause over (`Session::
//! pause_ended`). ALL covers every command (CLIENT UNPAUSE too, as in Redis, so an ALL
//! pause ends only by its timeout); WRITE covers the commands that write or may
//! (PUBLISH, PFCOUNT, a script not declared `no-writes`, an EXEC that queued any). A
//! command already running, and the commands inside an EXEC that started before the
//! pause, are not held. memcached's port is not paused (Redis's pause knows nothing of it).
//! A held client counts in INFO `blocked_clients`, as in Redis.
//!
//! Cost when no pause is in force: one relaxed load per command. The loops are woken when
//! the pause ends: by CLIENT UNPAUSE, or by a timer thread the CLIENT PAUSE starts for its
//! deadline (so a paused client waits milliseconds, not a loop tick, past the end).

use std::{
    sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed},
    time::Duration,
};

use proto_resp::{args::parse_i64, commands::Flags, Command, CommandSpec};

use super::{ttl, Ctx, Session};
use crate::Shared;

/// The pause in force, if any.
#[derive(Debug, Default)]
pub struct Pause {
    /// Unix milliseconds (the store clock) when it ends; 0 for none.
    end_ms: AtomicU64,
    /// ALL (every command) rather than WRITE.
    all: AtomicBool,
    /// Sessions holding a postponed command now: INFO counts them in `blocked_clients`, as
    /// Redis counts its paused clients (blocked until the pause ends).
    held: AtomicUsize,
}

impl Pause {
    /// Whether some pause was set and not lifted (it may have passed its end already).
    #[inline]
    pub fn is_set(&self) -> bool {
        self.end_ms.load(Relaxed) != 0
    }

    /// Whether `command` (routed as `spec`, from `session`) waits at `now_ms`.
    fn holds(
        &self,
        shared: &Shared,
        session: &Session,
        spec: &CommandSpec,
        command: &Command<'_>,
        now_ms: u64,
    ) -> bool {
        let end_ms = self.end_ms.load(Relaxed);
        if end_ms == 0 || now_ms >= end_ms {
            return false;
        }
        self.all.load(Relaxed) || may_write(shared, session, spec, command)
    }

    /// Sessions holding a postponed command now.
    pub fn held_clients(&self) -> usize {
        self.held.load(Relaxed)
    }

    /// A session began (`true`) or stopped (`false`) holding a postponed command.
    pub(super) fn note_held(&self, held: bool) {
        if held {
            self.held.fetch_add(1, Relaxed);
        } else {
            self.held.fetch_sub(1, Relaxed);
        }
    }

    /// Whether a command that waited may run at `now_ms`.
    pub fn over(&self, now_ms: u64) -> bool {
        let end_ms = self.end_ms.load(Relaxed);
        end_ms == 0 || now_ms >= end_ms
    }
}

/// Whether CLIENT PAUSE holds `command` now (asked only while a pause is set): if so the
/// session holds it, counted once among the blocked clients until the pause ends.
pub(super) fn postpone(shared: &Shared, session: &mut Session, command: &Command<'_>) -> bool {
    let pause = &shared.redis.pause;
    let now_ms = ttl::now_ms(shared);
    let held = proto_resp::route(command)
        .is_ok_and(|routed| pause.holds(shared, session, routed.spec, command, now_ms));
    if held && !std::mem::replace(&mut session.postponed, true) {
        pause.note_held(true);
    }
    held
}

/// What a WRITE pause holds, as Redis's `may_replicate`: writes and the commands that may
/// propagate (PUBLISH, PFCOUNT); a script by its own flags (one declared `no-writes` runs);
/// EXEC when a command it queued is held.
pub(super) fn may_write(
    shared: &Shared,
    session: &Session,
    spec: &CommandSpec,
    command: &Command<'_>,
) -> bool {
    if spec.flags.contains(Flags::WRITE) {
        return true;
    }
    match spec.name {
        "exec" => super::tx::queued_may_write(shared, session),
        "eval" | "evalsha" | "fcall" => super::script::may_write(shared, spec.name, command),
        _ => spec.flags.contains(Flags::MAY_REPLICATE),
    }
}

/// CLIENT PAUSE timeout [WRITE|ALL].
pub(super) fn pause(ctx: &mut Ctx<'_>) {
    let timeout_ms = match parse_i64(ctx.arg(2)) {
        Err(_) => return ctx.error("ERR timeout is not an integer or out of range"),
        Ok(ms) if ms < 0 => return ctx.error("ERR timeout is negative"),
        Ok(ms) => ms as u64,
    };
    let all = match ctx.cmd.arg(3).map(|m| m.to_ascii_lowercase()) {
        None => true,
        Some(mode) if mode == b"all" => true,
        Some(mode) if mode == b"write" => false,
        Some(_) => return ctx.error("ERR CLIENT PAUSE mode must be WRITE or ALL"),
    };
    let shared = ctx.shared;
    let now_ms = ttl::now_ms(shared);
    let pause = &shared.redis.pause;
    let end_ms = now_ms.saturating_add(timeout_ms).max(1);
    // A pause in force is only ever lengthened or made stricter, as in Redis.
    let in_force = !pause.over(now_ms);
    pause.all.store(all || (in_force && pause.all.load(Relaxed)), Relaxed);
    let end_ms = if in_force { end_ms.max(pause.end_ms.load(Relaxed)) } else { end_ms };
    pause.end_ms.store(end_ms, Relaxed);
    wake_at_end(shared, Duration::from_millis(end_ms - now_ms));
    ctx.reply().ok();
}

/// FAILOVER's pause: writes wait until [`lift`] (or `end_ms`, the failover's deadline).
pub(crate) fn hold_writes(shared: &Shared, end_ms: u64) {
    let pause = &shared.redis.pause;
    pause.all.store(false, Relaxed);
    pause.end_ms.store(end_ms.max(1), Relaxed);
}

/// FAILOVER's pause ends (the failover finished, failed or was aborted).
pub(crate) fn lift(shared: &Shared) {
    shared.redis.pause.end_ms.store(0, Relaxed);
    wake_all(shared);
}

/// CLIENT UNPAUSE.
pub(super) fn unpause(ctx: &mut Ctx<'_>) {
    ctx.shared.redis.pause.end_ms.store(0, Relaxed);
    wake_all(ctx.shared);
    ctx.reply().ok();
}

/// Wakes every loop once `after` has passed, so that the clients it held run then.
fn wake_at_end(shared: &Shared, after: Duration) {
    let Some(this) = shared.this.get().cloned() else { return };
    let spawned = std::thread::Builder::new().name("spinel-unpause".into()).spawn(move || {
        std::thread::sleep(after);
        if let Some(shared) = this.upgrade() {
            wake_all(&shared);
        }
    });
    // Without the timer, the loops' ticks still end the pause, within their interval.
    drop(spawned);
}

fn wake_all(shared: &Shared) {
    for worker in 0..shared.core.worker_counters().count() {
        shared.redis.pubsub.wake(worker, false);
    }
}
