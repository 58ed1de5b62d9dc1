//! memcached's `watch`: log lines of item events, in memcached 1.6's format, for the
//! connections that asked for them.
//!
//! ```text
//!   request path --(one relaxed load: does anyone watch this kind?)--> no: nothing more
//!        | yes
//!        v
//!   Watchers::emit: format one line, append it to each interested watcher's buffer
//!        (a mutex, taken only while someone watches)
//!        ^
//!   server, at each tick: Watchers::drain(id) into the watching connection's output
//! ```
//!
//! exec knows neither sockets nor connections: the server registers a watcher when a
//! request answers [`crate::Flow::Watch`], drains its lines into that connection, and
//! removes it when the connection closes. Each watcher buffers at most memcached's
//! `watcher_logbuf_size` (256 KiB); lines that do not fit are counted and announced by a
//! `skipped=N` line once there is room again, as memcached does.

use std::{
    io::Write,
    sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed},
    time::{SystemTime, UNIX_EPOCH},
};

use parking_lot::Mutex;

use crate::conns::Addr;

/// Event kinds, as `watch` names them (memcached's `LOG_*` bits).
pub mod kind {
    pub const RAWCMDS: u32 = 1 << 0;
    pub const EVICTIONS: u32 = 1 << 1;
    pub const FETCHERS: u32 = 1 << 2;
    pub const MUTATIONS: u32 = 1 << 3;
    pub const SYSEVENTS: u32 = 1 << 4;
    pub const CONNEVENTS: u32 = 1 << 5;
    pub const PROXYREQS: u32 = 1 << 6;
    pub const PROXYEVENTS: u32 = 1 << 7;
    pub const PROXYUSER: u32 = 1 << 8;
}

/// memcached's `WATCHER_LIMIT`.
const WATCHERS_MAX: usize = 20;

/// memcached's default `watcher_logbuf_size`.
const WATCHER_BUFFER_BYTES: usize = 256 * 1024;

/// Which watcher a connection is (an index into the table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatcherId(usize);

/// The table is full (memcached's `WATCHER_TOO_MANY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooMany;

#[derive(Debug)]
struct Watcher {
    kinds: u32,
    lines: Vec<u8>,
    skipped: u64,
}

/// Every watcher of the process.
#[derive(Debug, Default)]
pub struct Watchers {
    /// The union of the watchers' kinds: the request path's only read while nobody watches.
    kinds: AtomicU32,
    /// memcached's `gid`: one number per event logged.
    gid: AtomicU64,
    /// `gid` at the last `stats reset`.
    logged_at_reset: AtomicU64,
    table: Mutex<Vec<Option<Watcher>>>,
    /// Lines handed to watchers, and lines dropped for want of room (memcached's
    /// `log_watcher_sent` and `log_watcher_skipped`).
    pub sent: AtomicU64,
    pub skipped: AtomicU64,
}

impl Watchers {
    /// Whether anyone watches events of `kind` (one relaxed load).
    #[inline]
    pub fn wants(&self, kind: u32) -> bool {
        self.kinds.load(Relaxed) & kind != 0
    }

    /// Events logged since the last `stats reset` (memcached's `log_worker_written`).
    pub fn logged(&self) -> u64 {
        self.gid.load(Relaxed).saturating_sub(self.logged_at_reset.load(Relaxed))
    }

    /// `stats reset`: the counters start again (the event numbers go on, as in memcached).
    pub fn reset_counts(&self) {
        self.logged_at_reset.store(self.gid.load(Relaxed), Relaxed);
        self.sent.store(0, Relaxed);
        self.skipped.store(0, Relaxed);
    }

    /// How many watchers there are (`log_watchers`).
    pub fn count(&self) -> usize {
        self.table.lock().iter().flatten().count()
    }

    /// Registers a watcher of `kinds`.
    pub fn add(&self, kinds: u32) -> Result<WatcherId, TooMany> {
        let mut table = self.table.lock();
        let watcher = Some(Watcher { kinds, lines: Vec::new(), skipped: 0 });
        let index = match table.iter().position(Option::is_none) {
            Some(free) => free,
            None if table.len() < WATCHERS_MAX => {
                table.push(None);
                table.len() - 1
            }
            None => return Err(TooMany),
        };
        table[index] = watcher;
        self.publish_kinds(&table);
        Ok(WatcherId(index))
    }

    pub fn remove(&self, id: WatcherId) {
        let mut table = self.table.lock();
        if let Some(slot) = table.get_mut(id.0) {
            *slot = None;
        }
        self.publish_kinds(&table);
    }

    /// Moves the watcher's buffered lines to `out`.
    pub fn drain(&self, id: WatcherId, out: &mut Vec<u8>) {
        let mut table = self.table.lock();
        if let Some(Some(watcher)) = table.get_mut(id.0) {
            out.append(&mut watcher.lines);
        }
    }

    fn publish_kinds(&self, table: &[Option<Watcher>]) {
        let kinds = table.iter().flatten().fold(0, |kinds, w| kinds | w.kinds);
        self.kinds.store(kinds, Relaxed);
    }

    /// Logs one event of `kind`: `fields` writes what follows `ts=... gid=... ` (without the
    /// newline). Call only after [`Self::wants`] said yes.
    pub(crate) fn emit(&self, kind: u32, fields: impl FnOnce(&mut Vec<u8>)) {
        let gid = self.gid.fetch_add(1, Relaxed) + 1;
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let mut line = Vec::with_capacity(160);
        // memcached prints the microseconds unpadded (`%d`). Writing to a Vec cannot fail.
        let _ = write!(line, "ts={}.{} gid={gid} ", now.as_secs(), now.subsec_micros());
        fields(&mut line);
        line.push(b'\n');
        let mut table = self.table.lock();
        for watcher in table.iter_mut().flatten().filter(|w| w.kinds & kind != 0) {
            if watcher.lines.len() + line.len() + 32 > WATCHER_BUFFER_BYTES {
                watcher.skipped += 1;
                self.skipped.fetch_add(1, Relaxed);
                continue;
            }
            if watcher.skipped > 0 {
                let _ = writeln!(watcher.lines, "skipped={}", watcher.skipped);
                watcher.skipped = 0;
            }
            watcher.lines.extend_from_slice(&line);
            self.sent.fetch_add(1, Relaxed);
        }
    }
}

/// Why a connection closed, as `watch connevents` names it (memcached's `close_reasons`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The server hung up on it (a protocol error, a refused login, a limit).
    Error,
    /// The peer closed it, or sent `quit`.
    Normal,
    IdleTimeout,
    Shutdown,
}

impl CloseReason {
    fn name(self) -> &'static str {
        match self {
            CloseReason::Error => "error",
            CloseReason::Normal => "normal",
            CloseReason::IdleTimeout => "idle_timeout",
            CloseReason::Shutdown => "shutdown",
        }
    }
}

/// `watch connevents`: a memcached connection opened (`Some(reason)`: closed), in
/// memcached's `type=conn_new` / `type=conn_close` line; `cfd` is the connection's number.
pub(crate) fn conn_event(watchers: &Watchers, addr: &Addr, cfd: u32, closed: Option<CloseReason>) {
    if !watchers.wants(kind::CONNEVENTS) {
        return;
    }
    // memcached: the peer's address and port, `unix` and 0 on a Unix socket.
    let (rip, rport, transport) = match addr {
        Addr::Tcp(peer) => (peer.ip().to_string(), peer.port(), "tcp"),
        Addr::Udp(peer) => (peer.ip().to_string(), peer.port(), "udp"),
        Addr::Unix(_) | Addr::Unnamed => ("unix".to_owned(), 0, "local"),
    };
    watchers.emit(kind::CONNEVENTS, |line| {
        let _ = match closed {
            None => write!(line, "type=conn_new rip={rip} rport={rport} transport={transport}"),
            Some(reason) => write!(
                line,
                "type=conn_close rip={rip} rport={rport} transport={transport} reason={}",
                reason.name()
            ),
        };
        let _ = write!(line, " cfd={cfd}");
    });
}

/// Appends `key` as memcached's `uriencode` writes it: letters, digits and `-._~` as they
/// are, every other byte as `%XX`.
pub(crate) fn push_uriencoded(key: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in key {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Goal: a watcher gets only its kinds, the table holds 20, and the kinds read on the
    // request path follow registrations.
    #[test]
    fn registration_and_kinds() {
        let w = Watchers::default();
        assert!(!w.wants(kind::FETCHERS));
        let a = w.add(kind::FETCHERS).expect("room");
        let b = w.add(kind::MUTATIONS).expect("room");
        assert!(w.wants(kind::FETCHERS) && w.wants(kind::MUTATIONS));
        w.emit(kind::FETCHERS, |l| l.extend_from_slice(b"type=item_get"));
        let (mut out_a, mut out_b) = (Vec::new(), Vec::new());
        w.drain(a, &mut out_a);
        w.drain(b, &mut out_b);
        let line = String::from_utf8(out_a).expect("text");
        assert!(line.starts_with("ts=") && line.ends_with(" gid=1 type=item_get\n"), "{line}");
        assert!(out_b.is_empty());
        w.remove(a);
        assert!(!w.wants(kind::FETCHERS));
        let ids: Vec<_> = (0..19).map(|_| w.add(kind::FETCHERS).expect("room")).collect();
        assert_eq!(w.add(kind::FETCHERS), Err(TooMany));
        assert_eq!(ids.len() + 1, w.count());
    }

    // Goal: a full buffer drops lines and says how many once there is room.
    #[test]
    fn skipped_lines_are_announced() {
        let w = Watchers::default();
        let id = w.add(kind::FETCHERS).expect("room");
        let big = vec![b'x'; 100_000];
        for _ in 0..4 {
            w.emit(kind::FETCHERS, |l| l.extend_from_slice(&big));
        }
        let mut out = Vec::new();
        w.drain(id, &mut out);
        assert_eq!(out.iter().filter(|&&b| b == b'\n').count(), 2);
        w.emit(kind::FETCHERS, |l| l.extend_from_slice(b"after"));
        out.clear();
        w.drain(id, &mut out);
        assert!(out.starts_with(b"skipped=2\n"), "{:?}", String::from_utf8_lossy(&out[..20]));
    }

    #[test]
    fn uriencode_as_memcached() {
        let mut out = Vec::new();
        push_uriencoded(b"a:b c~d.e_f-g/\xff", &mut out);
        assert_eq!(out, b"a%3Ab%20c~d.e_f-g%2F%FF");
    }
}
