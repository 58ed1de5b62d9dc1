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

/// How a connection's addresses are written (memcached's `get_conn_text`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Tcp,
    Udp,
}

/// `tcp:1.2.3.4:5`, `tcp6:[::1]:5`, `udp:...`, `udp6:...`: an address as memcached writes it.
pub fn addr_text(transport: Transport, addr: SocketAddr) -> String {
    let proto = match (transport, addr) {
        (Transport::Tcp, SocketAddr::V4(_)) => "tcp",
        (Transport::Tcp, SocketAddr::V6(_)) => "tcp6",
        (Transport::Udp, SocketAddr::V4(_)) => "udp",
        (Transport::Udp, SocketAddr::V6(_)) => "udp6",
    };
    match addr {
        SocketAddr::V4(v4) => format!("{proto}:{}:{}", v4.ip(), v4.port()),
        SocketAddr::V6(v6) => format!("{proto}:[{}]:{}", v6.ip(), v6.port()),
    }
}

/// One line group of `stats conns`.
#[derive(Debug)]
pub struct ConnEntry {
    /// The registry's number (`stats conns` shows it where memcached shows the descriptor).
    pub id: u64,
    pub udp: bool,
    /// The peer's address; a listener's or UDP port's own.
    pub addr: String,
    /// The address the connection came in on (empty for listeners and UDP ports).
    pub listen_addr: String,
    state: AtomicU8,
    /// [`crate::Shared::clock_secs`] at the last command.
    last_cmd_secs: AtomicU32,
}

/// An entry, shared by its connection and the registry.
pub type SharedConn = Arc<ConnEntry>;

impl ConnEntry {
    /// An entry for [`crate::resp::ClientRegistry::register_conn`] (which numbers it).
    pub fn new(
        udp: bool,
        addr: String,
        listen_addr: String,
        state: ConnState,
        now_secs: u32,
    ) -> Self {
        ConnEntry {
            id: 0,
            udp,
            addr,
            listen_addr,
            state: AtomicU8::new(state as u8),
            last_cmd_secs: AtomicU32::new(now_secs),
        }
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
}

impl Published {
    pub(crate) fn new(entry: SharedConn) -> Published {
        let (secs, state) = (entry.last_cmd_secs(), entry.state());
        Published { entry, secs, state }
    }

    /// A command arrived at second `now_secs`; the connection is now in `state`.
    #[inline]
    pub(crate) fn note(&mut self, now_secs: u32, state: ConnState) {
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
        assert_eq!(addr_text(Transport::Tcp, v4), "tcp:127.0.0.1:11211");
        assert_eq!(addr_text(Transport::Udp, v4), "udp:127.0.0.1:11211");
        assert_eq!(addr_text(Transport::Tcp, v6), "tcp6:[::1]:5");
    }

    #[test]
    fn published_writes_only_changes() {
        let entry = Arc::new(ConnEntry::new(false, "a".into(), "b".into(), ConnState::New, 5));
        let mut published = Published::new(Arc::clone(&entry));
        published.note(5, ConnState::Read);
        assert_eq!((entry.last_cmd_secs(), entry.state()), (5, ConnState::Read));
        published.note(7, ConnState::DataBlock);
        assert_eq!((entry.last_cmd_secs(), entry.state().name()), (7, "conn_nread"));
    }
}
