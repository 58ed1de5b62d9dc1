//! A busy script that yields to its worker's loop, so that the loop answers its other
//! clients (`-BUSY`, SCRIPT KILL, SHUTDOWN NOSAVE) as Redis answers every client while a
//! script runs past `busy-reply-threshold`.
//!
//! ```text
//!   EVAL (receive)  gate.hold ---- slice ---- busy? yield --> Session.script = Suspended
//!                                                             (gate kept, no reply yet)
//!   loop turn       other connections: enter_or_busy -> Busy -> -BUSY / SCRIPT KILL
//!   stream()        resume_script: slice ... yield (wake the loop again) ... or end:
//!                   reply, gate.release, the session's held input runs
//! ```
//!
//! Only the script's own Lua thread yields (never a coroutine the script runs), and only
//! where Luau can (not under a C call such as `table.sort`'s comparator: the next
//! interrupt tries again). A script inside EXEC never yields: the transaction runs to its
//! end on the worker, as before. A connection that closes while its script is suspended
//! leaves it to its worker (`drive_orphan`, at each tick), with a session of the same
//! user and database, so that the script still ends and the gate is given back.

use std::{
    cell::RefCell,
    time::{Duration, Instant},
};

use super::call::{finish, slice, Caller, Sliced};
use crate::{counters::Counters, resp::Session, Shared};

/// How long a worker's tick drives a script whose connection closed.
const ORPHAN_TICK_BUDGET: Duration = Duration::from_millis(50);

thread_local! {
    /// A suspended script whose connection closed, with the session it runs as.
    static ORPHAN: RefCell<Option<Session>> = const { RefCell::new(None) };
}

impl Session {
    /// Whether its script yielded and waits to be resumed ([`Session::resume_script`]):
    /// its loop feeds it no input meanwhile.
    pub fn is_script_suspended(&self) -> bool {
        self.script.is_some()
    }

    /// Runs its suspended script for one more slice. True once the script has ended: its
    /// reply is in `out` and its pipelined input may run. False: call again at the next
    /// turn of the loop, soon (the script is busy and wants the CPU).
    pub fn resume_script(
        &mut self,
        shared: &Shared,
        counters: &Counters,
        out: &mut Vec<u8>,
    ) -> bool {
        let Some(mut suspended) = self.script.take() else { return true };
        let gate = &shared.core.gate;
        gate.mark_held(true);
        let caller_db = std::mem::replace(&mut self.db, suspended.db);
        let start = out.len();
        let protocol = self.protocol;
        let ended = shared.redis.scripts.with_vm(|vm| {
            let (lua, state) = vm.state_of(suspended.kind);
            suspended.pace.next_slice();
            let mut caller = Caller { shared, counters, session: self };
            let (thread, pace, access) = (&suspended.thread, &suspended.pace, suspended.access);
            match slice(&mut caller, state, thread, pace, access, None) {
                Sliced::Suspended => false,
                Sliced::Done(outcome) => {
                    let what = (suspended.kind, suspended.name.as_str());
                    finish(&shared.redis.scripts, lua, state, outcome, what, protocol, out);
                    true
                }
            }
        });
        suspended.db = std::mem::replace(&mut self.db, caller_db);
        gate.mark_held(false);
        if !ended {
            self.script = Some(suspended);
            return false;
        }
        if let Some(hold) = suspended.hold.take() {
            // Between batches: this worker is not inside the gate.
            gate.release(hold, false);
        }
        super::super::after_suspended_command(shared, counters, self, out, start);
        true
    }

    /// The connection closed while its script is suspended: the script goes on as an
    /// orphan of this worker, with a session of the same user and database.
    pub(in crate::resp) fn orphan_script(&mut self) {
        let Some(suspended) = self.script.take() else { return };
        let orphan = Session {
            db: self.db,
            protocol: self.protocol,
            account: self.account.clone(),
            script: Some(suspended),
            script_may_suspend: true,
            ..Session::default()
        };
        ORPHAN.with(|slot| *slot.borrow_mut() = Some(orphan));
    }
}

/// At each tick of a worker: runs the script whose connection closed, if this worker has
/// one, for a bounded time (its reply goes nowhere).
pub fn drive_orphan(shared: &Shared, counters: &Counters) {
    let Some(mut session) = ORPHAN.with(|slot| slot.borrow_mut().take()) else { return };
    let started = Instant::now();
    let mut discarded = Vec::new();
    while !session.resume_script(shared, counters, &mut discarded) {
        discarded.clear();
        if started.elapsed() >= ORPHAN_TICK_BUDGET {
            ORPHAN.with(|slot| *slot.borrow_mut() = Some(session));
            return;
        }
    }
}
