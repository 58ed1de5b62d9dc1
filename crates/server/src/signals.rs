//! SIGTERM/SIGINT as a flag the loops poll at every tick, and dropping root privileges. The
//! system calls live in `rt::process`; the `-u` policy and its messages live here.

use std::{ffi::CString, io};

use rt::process;

/// Whether SIGTERM or SIGINT arrived.
pub fn stop_requested() -> bool {
    process::stop_signalled()
}

/// Installs the stop handler for SIGTERM and SIGINT and ignores SIGPIPE (a peer that
/// closes while we write must give EPIPE, not kill the process).
pub fn install() -> io::Result<()> {
    process::catch_stop_signals()?;
    process::ignore_sigpipe();
    Ok(())
}

pub fn is_root() -> bool {
    process::is_root()
}

/// memcached `-u`: switch to `user`'s uid and gid. Only root can; anyone else gets an error
/// unless they already are that user.
pub fn drop_privileges(user: &str) -> Result<(), String> {
    let name = CString::new(user).map_err(|_| format!("-u {user}: invalid user name"))?;
    let ids = process::user_ids(&name).ok_or_else(|| format!("-u {user}: no such user"))?;
    if !is_root() {
        if process::real_uid() == ids.uid {
            return Ok(());
        }
        return Err(format!("-u {user}: only root can switch users"));
    }
    process::switch_user(ids).map_err(|e| format!("-u {user}: cannot switch user: {e}"))
}
