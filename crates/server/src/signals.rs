//! Signals as memcached gives them meaning, and dropping root privileges.
//!
//! - SIGTERM, SIGINT: stop. The loops notice the flag at their next tick and close in order.
//! - SIGUSR1: memcached's graceful stop: the same ordered stop, and with `-e FILE` every item
//!   is saved to FILE before the process exits.
//! - SIGHUP: re-read the configuration file and apply what can change while running.
//! - A second stop signal while the first is still being served ends the process at once,
//!   for an operator whose shutdown hangs.
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
};

use nix::unistd::{Gid, Uid, User};
use signal_hook::{
    consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR1},
    iterator::Signals,
};

/// Exit status after a second stop signal: the shell's 128 + SIGINT convention is not
/// meaningful for a choice of several signals, so a plain failure.
const EXIT_FORCED: i32 = 1;

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
        }
    })?;
    Ok(())
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
