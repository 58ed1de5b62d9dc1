//! memcached's process flags: `-d` (detach), `-P` (pid file), `-r` (core size limit) and
//! `-k` (lock memory). Safe calls through nix; what to do on failure follows memcached: a
//! failed detach stops the start, a failed lock or limit only warns.

use std::{fs, io, path::PathBuf};

use nix::sys::{
    mman::{mlockall, MlockAllFlags},
    resource::{getrlimit, setrlimit, Resource},
};

/// `-d`: fork, let the parent exit, and detach from the terminal. Must run before any thread
/// is started (a fork keeps only the calling thread); listeners opened before survive it.
/// `keep_stdio` keeps stderr for the log (`-v`), as memcached keeps it when verbose.
pub fn detach(keep_stdio: bool) -> Result<(), String> {
    nix::unistd::daemon(false, keep_stdio).map_err(|e| format!("-d: cannot detach: {e}"))
}

/// `-r`: the core size limit up to the hard limit.
pub fn raise_core_limit() {
    let result = getrlimit(Resource::RLIMIT_CORE)
        .and_then(|(_, hard)| setrlimit(Resource::RLIMIT_CORE, hard, hard));
    if let Err(e) = result {
        tracing::warn!("-r: cannot raise the core file size limit: {e}");
    }
}

/// File descriptors the process needs beside its client connections: listeners, the
/// rings, epoll, eventfds, the log, snapshots (Redis reserves 32 the same way).
pub const RESERVED_FDS: u64 = 32;

/// Makes room for `clients` connections: the open-file limit raised to that many plus the
/// reserved ones, up to the hard limit (memcached raises it for `-c`, Redis for
/// `maxclients`). `Err` gives the most clients the hard limit allows.
pub fn allow_connections(clients: u64) -> Result<(), u64> {
    let wanted = clients.saturating_add(RESERVED_FDS);
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else { return Ok(()) };
    if soft >= wanted {
        return Ok(());
    }
    let most = hard.saturating_sub(RESERVED_FDS).max(1);
    if wanted > hard {
        return Err(most);
    }
    setrlimit(Resource::RLIMIT_NOFILE, wanted, hard).map_err(|_| soft.saturating_sub(RESERVED_FDS))
}

/// `-k`: every page, present and future, locked in RAM.
pub fn lock_memory() {
    if let Err(e) = mlockall(MlockAllFlags::MCL_CURRENT | MlockAllFlags::MCL_FUTURE) {
        tracing::warn!("-k: cannot lock memory (mlockall: {e}); running unlocked");
    }
}

/// `-P`: the process id in a file for as long as this value lives; removed on drop, so a
/// clean exit (or a start that fails after writing it) leaves no stale file behind.
pub struct PidFile(PathBuf);

impl PidFile {
    pub fn write(path: &str) -> io::Result<PidFile> {
        fs::write(path, format!("{}\n", std::process::id()))?;
        Ok(PidFile(PathBuf::from(path)))
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        // After -u the file may no longer be ours to remove, as with memcached.
        let _ = fs::remove_file(&self.0);
    }
}
