//! Signals as memcached gives them meaning, and dropping root privileges.
//!
//! - SIGTERM, SIGINT: stop. The loops notice the flag at their next tick and close in order.
//! - SIGUSR1: memcached's graceful stop: the same ordered stop, and with `-e FILE` every item
//!   is saved to FILE before the process exits.
//! - SIGHUP: re-read the configuration file and apply what can change while running.
//! - A second stop signal while the first is still being served ends the process at once,
//!   for an operator whose shutdown hangs.
//! - A stop is bounded: if the workers have not all stopped [`STOP_DEADLINE`] after the
//!   first stop signal (a command that never ends: a script with no time limit, a bug that
//!   holds a lock), the process ends then, as after a second signal. The `-e` save that
//!   follows the workers' stop is not bounded: it is the point of a graceful stop.
//!
//! signal-hook records the signals and hands them to a thread of ours, so no code of ours
//! runs inside a signal handler. SIGPIPE needs nothing: Rust's runtime ignores it before
//! `main`, so a peer that closes while we write gives EPIPE instead of killing the process.

use std::{
    io,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use nix::unistd::{Gid, Uid, User};
use signal_hook::{
    consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR1},
    iterator::Signals,
};

/// Exit status after a second stop signal: the shell's 128 + SIGINT convention is not
/// meaningful for a choice of several signals, so a plain failure.
const EXIT_FORCED: i32 = 1;

/// How long the workers have, from the first stop signal, to finish the replies in
/// flight and stop.
pub const STOP_DEADLINE: Duration = Duration::from_secs(10);

/// Set once every worker has stopped ([`workers_stopped`]): the deadline no longer applies.
static WORKERS_STOPPED: AtomicBool = AtomicBool::new(false);

/// The workers have all stopped; what is left of the stop (the `-e` save) may take its time.
pub fn workers_stopped() {
    WORKERS_STOPPED.store(true, Ordering::SeqCst);
}

/// The signals caught from here on, held until [`install`] serves them.
pub struct Caught(Signals);

/// Takes over the signals' handlers. Called before the ports listen: a client (or a test)
/// that sees the port open may send SIGHUP at once, and without a handler its default
/// action would end the process. A signal that comes before [`install`] waits for it.
pub fn catch() -> io::Result<Caught> {
    Ok(Caught(Signals::new([SIGTERM, SIGINT, SIGUSR1, SIGHUP])?))
}

/// Starts the signal thread. `stop` is set on the first stop signal, and `graceful` too if
/// it is SIGUSR1; `reload` runs on the signal thread for each SIGHUP.
pub fn install(
    caught: Caught,
    stop: Arc<AtomicBool>,
    graceful: impl Fn() + Send + 'static,
    mut reload: impl FnMut() + Send + 'static,
) -> io::Result<()> {
    let Caught(mut signals) = caught;
    std::thread::Builder::new().name("spinel-signals".into()).spawn(move || {
        for signal in signals.forever() {
            if signal == SIGHUP {
                tracing::info!("SIGHUP: reloading the configuration");
                crate::service::reloading();
                reload();
                crate::service::reloaded();
                continue;
            }
            let name = signal_name(signal);
            if signal == SIGUSR1 {
                graceful();
            }
            if stop.swap(true, Ordering::Relaxed) {
                tracing::warn!("{name} again while stopping: exiting now");
                std::process::exit(EXIT_FORCED);
            }
            tracing::info!("{name}: stopping");
            crate::service::stopping();
            watch_deadline(name);
        }
    })?;
    Ok(())
}

/// Ends the process if the workers are still running [`STOP_DEADLINE`] from now.
fn watch_deadline(name: &'static str) {
    let spawned =
        std::thread::Builder::new().name("spinel-stop-deadline".into()).spawn(move || {
            std::thread::sleep(STOP_DEADLINE);
            if !WORKERS_STOPPED.load(Ordering::SeqCst) {
                tracing::error!(
                    "{name}: the workers did not stop within {}s: exiting now",
                    STOP_DEADLINE.as_secs()
                );
                std::process::exit(EXIT_FORCED);
            }
        });
    if let Err(e) = spawned {
        tracing::warn!("cannot watch the stop's deadline: {e}");
    }
}

fn signal_name(signal: i32) -> &'static str {
    match signal {
        SIGTERM => "SIGTERM",
        SIGINT => "SIGINT",
        SIGUSR1 => "SIGUSR1 (graceful stop)",
        _ => "signal",
    }
}

pub fn is_root() -> bool {
    Uid::effective().is_root()
}

/// memcached `-u`: switch to `user`'s uid and gid. Only root can; anyone else gets an error
/// unless they already are that user.
pub fn drop_privileges(user: &str) -> Result<(), String> {
    let entry = User::from_name(user)
        .map_err(|e| format!("-u {user}: cannot look the user up: {e}"))?
        .ok_or_else(|| format!("-u {user}: no such user"))?;
    if !is_root() {
        if Uid::current() == entry.uid {
            return Ok(());
        }
        return Err(format!("-u {user}: only root can switch users"));
    }
    switch_user(entry.uid, entry.gid).map_err(|e| format!("-u {user}: cannot switch user: {e}"))
}

/// Drops supplementary groups, then sets the group, then the user: the only order that can
/// succeed, since after setuid the groups could no longer change.
fn switch_user(uid: Uid, gid: Gid) -> nix::Result<()> {
    nix::unistd::setgroups(&[])?;
    nix::unistd::setgid(gid)?;
    nix::unistd::setuid(uid)
}
