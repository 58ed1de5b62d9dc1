//! Process-wide settings a server makes at start: what signals do, and which user the
//! process runs as. Safe wrappers over the system calls, so that the server crate forbids
//! `unsafe`; what to do with them (messages, `-u` policy) stays with the server.

use std::{
    ffi::CStr,
    io,
    sync::atomic::{AtomicBool, Ordering},
};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_signal: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::Relaxed);
}

/// Makes SIGTERM and SIGINT set a flag ([`stop_signalled`]) instead of killing the process,
/// so the loops can notice at their next tick and shut down in order.
pub fn catch_stop_signals() -> io::Result<()> {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: `action` is fully initialized (zeroed, then handler and empty mask) before
        // sigaction reads it; the handler only performs an atomic store, which is
        // async-signal-safe.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_stop_signal as *const () as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether SIGTERM or SIGINT arrived since [`catch_stop_signals`].
pub fn stop_signalled() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Ignores SIGPIPE: a peer that closes while we write must give EPIPE, not kill the process.
pub fn ignore_sigpipe() {
    // SAFETY: setting a signal's disposition to SIG_IGN has no memory-safety preconditions.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}

/// Whether the process runs with root's effective user id.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The process's real user id.
pub fn real_uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// A user's ids, as the password database has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserIds {
    pub uid: u32,
    pub gid: u32,
}

/// Looks `name` up in the password database; `None` when there is no such user.
///
/// getpwnam is not thread-safe: call this at start-up, before other threads look users up.
pub fn user_ids(name: &CStr) -> Option<UserIds> {
    // SAFETY: `name` is a valid NUL-terminated string; getpwnam returns null or a pointer to
    // a static record, which is read at once, on this thread, before any other call.
    unsafe {
        let entry = libc::getpwnam(name.as_ptr());
        if entry.is_null() {
            return None;
        }
        Some(UserIds { uid: (*entry).pw_uid, gid: (*entry).pw_gid })
    }
}

/// Runs the process as `ids` from now on: drops supplementary groups, then sets the group,
/// then the user (the order that can succeed: after setuid, groups could no longer change).
/// Only root can.
pub fn switch_user(ids: UserIds) -> io::Result<()> {
    // SAFETY: plain system calls on integer arguments; a null list with length 0 is the
    // documented way to drop every supplementary group.
    let ok = unsafe {
        libc::setgroups(0, std::ptr::null()) == 0
            && libc::setgid(ids.gid) == 0
            && libc::setuid(ids.uid) == 0
    };
    if ok {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
