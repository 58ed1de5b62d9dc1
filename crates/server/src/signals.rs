//! SIGTERM/SIGINT as a flag the loops poll at every tick, and dropping root privileges.

use std::{
    ffi::CString,
    io,
    sync::atomic::{AtomicBool, Ordering},
};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_signal: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::Relaxed);
}

/// Whether SIGTERM or SIGINT arrived.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Installs the stop handler for SIGTERM and SIGINT and ignores SIGPIPE (a peer that
/// closes while we write must give EPIPE, not kill the process).
pub fn install() -> io::Result<()> {
    for signal in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: `action` is fully initialized before use; the handler only performs an
        // atomic store, which is async-signal-safe.
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
    // SAFETY: setting a signal's disposition to SIG_IGN has no memory-safety preconditions.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    Ok(())
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// memcached `-u`: switch to `user`'s uid and gid. Only root can; anyone else gets an error
/// unless they already are that user.
pub fn drop_privileges(user: &str) -> Result<(), String> {
    let name = CString::new(user).map_err(|_| format!("-u {user}: invalid user name"))?;
    // SAFETY: `name` is a valid NUL-terminated string; getpwnam returns null or a pointer to
    // a static record that we read immediately, on this thread, before any other call.
    let (uid, gid) = unsafe {
        let entry = libc::getpwnam(name.as_ptr());
        if entry.is_null() {
            return Err(format!("-u {user}: no such user"));
        }
        ((*entry).pw_uid, (*entry).pw_gid)
    };
    if !is_root() {
        // SAFETY: getuid has no preconditions.
        if unsafe { libc::getuid() } == uid {
            return Ok(());
        }
        return Err(format!("-u {user}: only root can switch users"));
    }
    // SAFETY: plain system calls with valid arguments; the order (groups, gid, then uid)
    // is the one that can succeed, since after setuid we could no longer change groups.
    let ok = unsafe {
        libc::setgroups(0, std::ptr::null()) == 0
            && libc::setgid(gid) == 0
            && libc::setuid(uid) == 0
    };
    if !ok {
        return Err(format!("-u {user}: cannot switch user: {}", io::Error::last_os_error()));
    }
    Ok(())
}
