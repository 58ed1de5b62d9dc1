//! The registry behind `CLIENT LIST`: one entry per open Redis connection; and behind
//! memcached's `stats conns`: one per memcached connection, listener and UDP port
//! ([`crate::conns`]). Both kinds are numbered from one counter.
//!
//! Lock rule: the registry's mutex is taken on connect, on close, by the few commands that
//! change what a listing shows (CLIENT SETNAME / SETINFO, SELECT, HELLO) and by CLIENT LIST
//! itself; never on the path of an ordinary command. So a listing shows each client's
//! database and protocol, but not its last command or idle time (those would need a write
//! per command); it prints `cmd=NULL idle=0` for other connections.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
};

use parking_lot::Mutex;

use crate::conns::{ConnEntry, SharedConn};

/// What `CLIENT LIST` and `CLIENT INFO` show of one connection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientInfo {
    /// `CLIENT ID`: unique, from 1, never reused.
    pub id: u64,
    /// Peer address, `ip:port`.
    pub addr: String,
    /// Local address, `ip:port`.
    pub laddr: String,
    /// Unix milliseconds (store clock) when the connection was made.
    pub connected_ms: u64,
    pub name: Vec<u8>,
    pub lib_name: Vec<u8>,
    pub lib_ver: Vec<u8>,
    pub db: u8,
    /// 2 or 3.
    pub resp: u8,
    /// The blocking command it waits in (BLPOP ...), if any: `flags=b cmd=blpop`.
    pub blocked: Option<&'static str>,
}

impl ClientInfo {
    /// One `CLIENT LIST` line (with its `\n`), in Redis 7.2's field order. Fields Spinel
    /// does not track (buffers, memory, subscriptions) are reported as Redis reports them
    /// for an idle client.
    pub fn write_line(&self, now_ms: u64, cmd: &str, out: &mut Vec<u8>) {
        let age_secs = now_ms.saturating_sub(self.connected_ms) / 1000;
        let resp = self.resp.max(2);
        let (flags, cmd) = match self.blocked {
            Some(name) => ("b", name),
            None => ("N", cmd),
        };
        let mut text = String::with_capacity(320);
        let _ = writeln!(
            text,
            "id={} addr={} laddr={} fd=-1 name={} age={age_secs} idle=0 flags={flags} db={} sub=0 \
             psub=0 ssub=0 multi=-1 qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 \
             obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={cmd} user=default redir=-1 resp={resp} \
             lib-name={} lib-ver={}",
            self.id,
            self.addr,
            self.laddr,
            String::from_utf8_lossy(&self.name),
            self.db,
            String::from_utf8_lossy(&self.lib_name),
            String::from_utf8_lossy(&self.lib_ver),
        );
        out.extend_from_slice(text.as_bytes());
    }
}

/// A connection's entry, shared by its session and the registry: one copy per connection
/// (an idle connection's memory is a measured target), and the session's changes
/// (SETNAME, SELECT, HELLO) show in listings without a second write.
pub type SharedClient = Arc<Mutex<ClientInfo>>;

/// Open Redis connections by id, and the memcached side's connections and ports.
#[derive(Debug, Default)]
pub struct ClientRegistry {
    last_id: AtomicU64,
    clients: Mutex<BTreeMap<u64, SharedClient>>,
    conns: Mutex<BTreeMap<u64, SharedConn>>,
}

impl ClientRegistry {
    /// Assigns the next id and lists the client; returns its shared entry.
    pub fn register(&self, mut client: ClientInfo) -> SharedClient {
        client.id = self.last_id.fetch_add(1, Ordering::Relaxed) + 1;
        let id = client.id;
        let shared = Arc::new(Mutex::new(client));
        self.clients.lock().insert(id, Arc::clone(&shared));
        shared
    }

    pub fn remove(&self, id: u64) {
        self.clients.lock().remove(&id);
    }

    /// Every listed client, by id. Lock order: the registry, then each entry; a caller must
    /// not hold an entry's lock.
    pub fn snapshot(&self) -> Vec<ClientInfo> {
        self.clients.lock().values().map(|client| client.lock().clone()).collect()
    }

    /// Numbers a memcached connection, listener or UDP port and lists it for `stats conns`.
    pub fn register_conn(&self, mut entry: ConnEntry) -> SharedConn {
        entry.id = self.last_id.fetch_add(1, Ordering::Relaxed) + 1;
        let shared = Arc::new(entry);
        self.conns.lock().insert(shared.id, Arc::clone(&shared));
        shared
    }

    pub fn remove_conn(&self, id: u64) {
        self.conns.lock().remove(&id);
    }

    /// The memcached side's entries, by number.
    pub fn conns(&self) -> Vec<SharedConn> {
        self.conns.lock().values().cloned().collect()
    }

    /// Redis clients listed.
    pub fn len(&self) -> usize {
        self.clients.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_update_remove() {
        let registry = ClientRegistry::default();
        let a = registry.register(ClientInfo { addr: "1.2.3.4:5".into(), ..ClientInfo::default() });
        let b = registry.register(ClientInfo::default());
        let (a_id, b_id) = (a.lock().id, b.lock().id);
        assert_eq!((a_id, b_id), (1, 2));
        b.lock().name = b"worker".to_vec();
        assert_eq!(registry.snapshot()[1].name, b"worker");
        registry.remove(a_id);
        assert_eq!(registry.len(), 1);
        let mut line = Vec::new();
        b.lock().write_line(5_000, "NULL", &mut line);
        let text = String::from_utf8(line).unwrap();
        assert!(text.starts_with("id=2 addr= laddr= fd=-1 name=worker age=5 idle=0 flags=N db=0"));
        assert!(text.ends_with("resp=2 lib-name= lib-ver=\n"), "{text}");
    }
}
