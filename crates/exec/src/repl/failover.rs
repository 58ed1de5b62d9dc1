//! FAILOVER: a primary hands its role to one of its replicas without losing a write. It
//! holds writes (as CLIENT PAUSE WRITE), waits until the target acknowledged every byte of
//! the stream, then follows the target with `PSYNC <replid> <offset> FAILOVER`, which makes
//! the target promote itself before it answers (+CONTINUE: no copy). TIMEOUT bounds the
//! wait: past it the failover is given up, unless FORCE, which goes on regardless.

use std::{
    sync::{atomic::Ordering::Relaxed, Arc},
    time::Duration,
};

use crate::Shared;

/// INFO's `master_failover_state`, and the target while one runs.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) enum State {
    #[default]
    None,
    WaitingForSync {
        host: String,
        port: u16,
        deadline_ms: u64,
        force: bool,
    },
    InProgress {
        host: String,
        port: u16,
    },
}

impl State {
    pub fn name(&self) -> &'static str {
        match self {
            State::None => "no-failover",
            State::WaitingForSync { .. } => "waiting-for-sync",
            State::InProgress { .. } => "failover-in-progress",
        }
    }
}

/// What FAILOVER asked for.
pub(crate) struct Request {
    pub target: Option<(String, u16)>,
    pub force: bool,
    pub timeout_ms: u64,
}

/// Starts a failover: `Err` is Redis's refusal.
pub(crate) fn start(shared: &Arc<Shared>, request: Request) -> Result<(), &'static str> {
    let repl = &shared.core.repl;
    if *repl.failover.lock() != State::None {
        return Err("ERR FAILOVER already in progress.");
    }
    let (_, replicas) = super::replicas(shared);
    let target = match &request.target {
        Some((host, port)) => replicas
            .iter()
            .find(|r| &r.ip == host && r.port == u32::from(*port))
            .ok_or("ERR FAILOVER target HOST and PORT is not a replica.")?,
        None => {
            replicas.iter().find(|r| r.online).ok_or("ERR FAILOVER requires connected replicas.")?
        }
    };
    if !target.online {
        return Err("ERR FAILOVER target replica is not online.");
    }
    let (host, port) = (target.ip.clone(), target.port as u16);
    let now_ms = crate::resp::now_unix_ms(shared);
    let deadline_ms = match request.timeout_ms {
        0 => u64::MAX,
        ms => now_ms + ms,
    };
    *repl.failover.lock() = State::WaitingForSync { host, port, deadline_ms, force: request.force };
    repl.failing_over.store(true, Relaxed);
    crate::resp::pause::hold_writes(shared, deadline_ms.min(now_ms + 3_600_000));
    super::ask_acks(shared);
    let shared = Arc::clone(shared);
    std::thread::Builder::new()
        .name("spinel-failover".into())
        .spawn(move || drive(&shared))
        .map(drop)
        .map_err(|_| "ERR cannot start the failover")
}

/// FAILOVER ABORT.
pub(crate) fn abort(shared: &Shared) -> Result<(), &'static str> {
    let mut state = shared.core.repl.failover.lock();
    if *state == State::None {
        return Err("ERR No failover in progress.");
    }
    *state = State::None;
    shared.core.repl.failing_over.store(false, Relaxed);
    drop(state);
    crate::resp::pause::lift(shared);
    Ok(())
}

/// Waits for the target to catch up, then hands over (or gives up at the deadline).
fn drive(shared: &Arc<Shared>) {
    let repl = &shared.core.repl;
    // Each GETACK moves the offset the target must reach: asked every check, a target
    // whose ACK takes longer than a check to come back would never be caught up.
    let mut asked_ms = crate::resp::now_unix_ms(shared);
    loop {
        std::thread::sleep(Duration::from_millis(10));
        let state = repl.failover.lock().clone();
        let State::WaitingForSync { host, port, deadline_ms, force } = state else { return };
        let offset = super::offset(shared);
        let acked = super::replicas(shared)
            .1
            .iter()
            .any(|r| r.ip == host && r.port == u32::from(port) && r.ack_offset >= offset);
        let late = crate::resp::now_unix_ms(shared) >= deadline_ms;
        if late && !force && !acked {
            *repl.failover.lock() = State::None;
            repl.failing_over.store(false, Relaxed);
            crate::resp::pause::lift(shared);
            return;
        }
        if acked || late {
            *repl.failover.lock() = State::InProgress { host: host.clone(), port };
            repl.failover_psync.store(true, Relaxed);
            super::link::follow(shared, host, port);
            return;
        }
        let now_ms = crate::resp::now_unix_ms(shared);
        if now_ms >= asked_ms + ASK_EVERY_MS {
            super::ask_acks(shared);
            asked_ms = now_ms;
        }
    }
}

/// How often a failover asks its target for its offset again.
const ASK_EVERY_MS: u64 = 250;

/// The link to the new primary answered its PSYNC: the failover is over.
pub(crate) fn finished(shared: &Shared) {
    let repl = &shared.core.repl;
    if repl.failover_psync.swap(false, Relaxed) {
        *repl.failover.lock() = State::None;
        repl.failing_over.store(false, Relaxed);
        crate::resp::pause::lift(shared);
    }
}
