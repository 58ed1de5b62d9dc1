//! The memcached side's connections, listeners and UDP ports, for memcached's `stats conns`.
//!
//! They live in the [`crate::resp::ClientRegistry`] beside the Redis clients (one registry,
//! one numbering: a number is never reused, and is what `watch` lines show as `cfd`). Lock
//! and write rules, so that the request path stays as it was:
//!
//! ```text
//!   accept / close          registry mutex: insert / remove the entry
//!   a receive on the conn   session: compare the coarse clock's second and the state with
//!                           what it last published; write the entry's atomics only when
//!                           either changed (at most once a second while busy)
//!   stats conns             registry mutex: list the entries, read their atomics
//! ```

use std::{
    fmt,
    net::SocketAddr,
    sync::{
        atomic::{AtomicU32, AtomicU8, Ordering::Relaxed},
        Arc,
    },
};

/// What a connection is doing, in memcached's words for its states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ConnState {
    /// Accepted, nothing received yet (`conn_new_cmd`).
    New = 0,
    /// Waiting for a command (`conn_read`); an idle UDP port too.
    Read = 1,
    /// A storage command's data block is still arriving (`conn_nread`).
    DataBlock = 2,
    /// Streaming `watch` lines (`conn_watch`).
    Watch = 3,
    /// A listening socket (`conn_listening`).
    Listening = 4,
}

impl ConnState {
    fn from_u8(state: u8) -> ConnState {
        match state {
            0 => ConnState::New,
            1 => ConnState::Read,
            2 => ConnState::DataBlock,
            3 => ConnState::Watch,
            _ => ConnState::Listening,
        }
    }

    /// memcached's name (`state_text`).
    pub fn name(self) -> &'static str {
        match self {
            ConnState::New => "conn_new_cmd",
            ConnState::Read => "conn_read",
            ConnState::DataBlock => "conn_nread",
            ConnState::Watch => "conn_watch",
            ConnState::Listening => "conn_listening",
        }
    }
}

/// An address as `stats conns` shows it, kept unformatted until listed (no allocation per
/// connection).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Addr {
    Tcp(SocketAddr),
    Udp(SocketAddr),
    /// A Unix socket's path, shared by its listener's entry and its connections'.
    Unix(Arc<str>),
    /// A peer with no address (a Unix socket's client).
    Unnamed,
}

impl fmt::Display for Addr {
    /// memcached's `get_conn_text`: `tcp:1.2.3.4:5`, `tcp6:[::1]:5`, `udp:...`, `unix:PATH`,
    /// and `?:<AF 0>` for a peer without an address.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (proto, addr) = match self {
            Addr::Tcp(addr) => (if addr.is_ipv4() { "tcp" } else { "tcp6" }, addr),
            Addr::Udp(addr) => (if addr.is_ipv4() { "udp" } else { "udp6" }, addr),
            Addr::Unix(path) => return write!(f, "unix:{path}"),
            Addr::Unnamed => return f.write_str("?:<AF 0>"),
        };
        match addr {
            SocketAddr::V4(v4) => write!(f, "{proto}:{}:{}", v4.ip(), v4.port()),
            SocketAddr::V6(v6) => write!(f, "{proto}:[{}]:{}", v6.ip(), v6.port()),
        }
    }
}

/// One line group of `stats conns`.
#[derive(Debug)]
pub struct ConnEntry {
    /// The registry's number (`stats conns` shows it where memcached shows the descriptor).
    pub id: u64,
    /// The peer's address; a listener's or UDP port's own.
    pub addr: Addr,
    /// The listener a connection came in on (None for listeners and UDP ports).
    pub listener: Option<SharedConn>,
    state: AtomicU8,
    /// [`crate::Core::clock_secs`] at the last command.
    last_cmd_secs: AtomicU32,
}

/// An entry, shared by its connection and the registry.
pub type SharedConn = Arc<ConnEntry>;

impl ConnEntry {
    /// An entry for [`crate::resp::ClientRegistry::register_conn`] (which numbers it).
    pub fn new(addr: Addr, listener: Option<SharedConn>, state: ConnState, now_secs: u32) -> Self {
        ConnEntry {
            id: 0,
            addr,
            listener,
            state: AtomicU8::new(state as u8),
            last_cmd_secs: AtomicU32::new(now_secs),
        }
    }

    pub fn udp(&self) -> bool {
        matches!(self.addr, Addr::Udp(_))
    }

    /// The address the connection came in on: its listener's; for a wildcard listener and
    /// a loopback peer, the peer's address (where the kernel answers it).
    pub fn listen_addr(&self) -> Option<Addr> {
        let listener = &self.listener.as_ref()?.addr;
        Some(match (listener, &self.addr) {
            (Addr::Tcp(local), Addr::Tcp(peer))
                if local.ip().is_unspecified() && peer.ip().is_loopback() =>
            {
                Addr::Tcp(SocketAddr::new(peer.ip(), local.port()))
            }
            _ => listener.clone(),
        })
    }

    pub fn state(&self) -> ConnState {
        ConnState::from_u8(self.state.load(Relaxed))
    }

    pub fn set_state(&self, state: ConnState) {
        self.state.store(state as u8, Relaxed);
    }

    pub fn last_cmd_secs(&self) -> u32 {
        self.last_cmd_secs.load(Relaxed)
    }

    pub fn set_last_cmd_secs(&self, secs: u32) {
        self.last_cmd_secs.store(secs, Relaxed);
    }
}

/// What a session last wrote to its entry: it writes again only on a change.
#[derive(Debug)]
pub(crate) struct Published {
    pub(crate) entry: SharedConn,
    secs: u32,
    state: ConnState,
    /// When input last arrived, to tell at the close whether the idle timeout closed it.
    pub(crate) last_input: std::time::Instant,
}

impl Published {
    pub(crate) fn new(entry: SharedConn) -> Published {
        let (secs, state) = (entry.last_cmd_secs(), entry.state());
        Published { entry, secs, state, last_input: std::time::Instant::now() }
    }

    /// A command arrived at second `now_secs`; the connection is now in `state`.
    #[inline]
    pub(crate) fn note(&mut self, now_secs: u32, state: ConnState) {
        self.last_input = std::time::Instant::now();
        if now_secs != self.secs {
            self.secs = now_secs;
            self.entry.set_last_cmd_secs(now_secs);
        }
        if state != self.state {
            self.state = state;
            self.entry.set_state(state);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_as_memcached_writes_them() {
        let v4: SocketAddr = "127.0.0.1:11211".parse().unwrap();
        let v6: SocketAddr = "[::1]:5".parse().unwrap();
        assert_eq!(Addr::Tcp(v4).to_string(), "tcp:127.0.0.1:11211");
        assert_eq!(Addr::Udp(v4).to_string(), "udp:127.0.0.1:11211");
        assert_eq!(Addr::Tcp(v6).to_string(), "tcp6:[::1]:5");
        assert_eq!(Addr::Unix("/tmp/s".into()).to_string(), "unix:/tmp/s");
        let any = Arc::new(ConnEntry::new(
            Addr::Tcp("0.0.0.0:11211".parse().unwrap()),
            None,
            ConnState::Listening,
            0,
        ));
        let peer = Addr::Tcp("127.0.0.2:7".parse().unwrap());
        let conn = ConnEntry::new(peer, Some(any), ConnState::New, 0);
        assert_eq!(conn.listen_addr().unwrap().to_string(), "tcp:127.0.0.2:11211");
    }

    #[test]
    fn published_writes_only_changes() {
        let entry = Arc::new(ConnEntry::new(Addr::Unnamed, None, ConnState::New, 5));
        let mut published = Published::new(Arc::clone(&entry));
        published.note(5, ConnState::Read);
        assert_eq!((entry.last_cmd_secs(), entry.state()), (5, ConnState::Read));
        published.note(7, ConnState::DataBlock);
        assert_eq!((entry.last_cmd_secs(), entry.state().name()), (7, "conn_nread"));
    }
}
