//! The registry behind `CLIENT LIST`: one entry per open Redis connection; and behind
//! memcached's `stats conns`: one per memcached connection, listener and UDP port
//! ([`crate::conns`]). Both kinds are numbered from one counter.
//!
//! Lock rule: the registry's mutex is taken on connect, on close, by the few commands that
//! change what a listing shows (CLIENT SETNAME / SETINFO, SELECT, HELLO) and by CLIENT LIST
//! itself; never on the path of an ordinary command. What changes per command (the last
//! command, when it ran, the subscription counts, MULTI's queue) is kept in the client's
//! [`Activity`] atomics instead: two relaxed stores per command, to a line only its own
//! worker writes.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    sync::{
        atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering, Ordering::Relaxed},
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
    /// The socket, as the server accepted it; CLIENT KILL shuts it down.
    pub fd: Option<i32>,
    /// The ACL user it is logged in as.
    pub user: String,
    pub activity: Arc<Activity>,
}

/// What a connection's commands change, written without a lock (see the module docs).
#[derive(Debug)]
pub struct Activity {
    /// [`Activity::command_code`] of the last command; 0 before the first.
    last_command: AtomicU32,
    /// The server clock's second (`Core::clock_secs`) of the last command.
    last_secs: AtomicU32,
    /// Channels, patterns and shard channels subscribed to.
    pub subscriptions: [AtomicU32; 3],
    /// Commands queued after MULTI; -1 outside a transaction.
    pub multi: AtomicI32,
    /// [`flag`] bits.
    pub flags: AtomicU32,
    /// CLIENT TRACKING's REDIRECT target: 0 for none, -1 while tracking is off (`redir=`).
    pub redirect: AtomicI64,
}

/// [`Activity::flags`] bits, as CLIENT LIST letters.
pub mod flag {
    /// `e`: CLIENT NO-EVICT on.
    pub const NO_EVICT: u32 = 1;
    /// `T`: CLIENT NO-TOUCH on.
    pub const NO_TOUCH: u32 = 2;
    /// `b`: waiting in a blocking command.
    pub const BLOCKED: u32 = 4;
    /// `t`: CLIENT TRACKING on.
    pub const TRACKING: u32 = 8;
    /// `R`: its tracking REDIRECT target went away.
    pub const TRACKING_BROKEN_REDIR: u32 = 16;
    /// `B`: tracking in BCAST mode.
    pub const TRACKING_BCAST: u32 = 32;
    /// `M`: the replication link's session (a replica's primary).
    pub const MASTER: u32 = 64;
    /// `S`: a replica being fed.
    pub const REPLICA: u32 = 128;
}

impl Default for Activity {
    fn default() -> Self {
        Activity {
            last_command: AtomicU32::new(0),
            last_secs: AtomicU32::new(0),
            subscriptions: Default::default(),
            multi: AtomicI32::new(-1),
            flags: AtomicU32::new(0),
            redirect: AtomicI64::new(-1),
        }
    }
}

impl PartialEq for Activity {
    /// Activity is not part of a client's identity.
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl Eq for Activity {}

impl Activity {
    /// A command's code: its index in proto-resp's table plus one, and its subcommand's id
    /// plus one in the high half.
    pub fn command_code(index: usize, subcommand: Option<proto_resp::SubcommandId>) -> u32 {
        (index as u32 + 1) | subcommand.map_or(0, |id| (id as u32 + 1) << 16)
    }

    /// Notes a command about to run at second `now_secs`.
    #[inline]
    pub fn note(&self, code: u32, now_secs: u32) {
        self.last_command.store(code, Relaxed);
        self.last_secs.store(now_secs, Relaxed);
    }

    /// Activity of a client connected at server second `now_secs`.
    pub fn connected_at(now_secs: u32) -> Activity {
        let activity = Activity::default();
        activity.last_secs.store(now_secs, Relaxed);
        activity
    }

    /// Seconds since its last command (or its connection, before any).
    fn idle_secs(&self, now_secs: u32) -> u32 {
        now_secs.saturating_sub(self.last_secs.load(Relaxed))
    }

    /// The last command's name as CLIENT LIST shows it (`client|list`), `NULL` before any.
    fn command_name(&self) -> std::borrow::Cow<'static, str> {
        let code = self.last_command.load(Relaxed);
        let index = (code & 0xffff).checked_sub(1);
        let Some(spec) = index.and_then(|i| proto_resp::commands::all_commands().nth(i as usize))
        else {
            return "NULL".into();
        };
        let sub = code >> 16;
        if let (proto_resp::commands::Run::Subcommands { table, .. }, true) = (&spec.run, sub > 0) {
            if let Some(found) = table.iter().find(|s| s.id as u32 + 1 == sub) {
                return found.name.into();
            }
        }
        spec.name.into()
    }

    pub fn has(&self, bit: u32) -> bool {
        self.flags.load(Relaxed) & bit != 0
    }

    pub fn set(&self, bit: u32, on: bool) {
        if on {
            self.flags.fetch_or(bit, Relaxed);
        } else {
            self.flags.fetch_and(!bit, Relaxed);
        }
    }

    /// CLIENT LIST's `flags=` letters.
    fn flag_letters(&self) -> String {
        let mut letters = String::new();
        for (bit, letter) in [(flag::REPLICA, 'S'), (flag::MASTER, 'M')] {
            if self.has(bit) {
                letters.push(letter);
            }
        }
        if self.has(flag::BLOCKED) {
            letters.push('b');
        }
        for (bit, letter) in
            [(flag::TRACKING, 't'), (flag::TRACKING_BROKEN_REDIR, 'R'), (flag::TRACKING_BCAST, 'B')]
        {
            if self.has(bit) {
                letters.push(letter);
            }
        }
        if self.has(flag::NO_EVICT) {
            letters.push('e');
        }
        if self.subscriptions.iter().any(|n| n.load(Relaxed) > 0) {
            letters.push('P');
        }
        if self.has(flag::NO_TOUCH) {
            letters.push('T');
        }
        if self.multi.load(Relaxed) >= 0 {
            letters.push('x');
        }
        if letters.is_empty() {
            letters.push('N');
        }
        letters
    }
}

impl ClientInfo {
    /// One `CLIENT LIST` line (with its `\n`), in Redis 7.2's field order; `now_secs` is
    /// the server clock's second (`Core::clock_secs`). `qbuf` is the bytes of its query
    /// buffer: the command it runs, for the client asking (see [`query_bytes`]), else 0.
    /// Other fields Spinel does not track (buffers, memory) are reported as Redis reports
    /// them for an idle client.
    pub fn write_line(&self, now_ms: u64, now_secs: u32, qbuf: usize, out: &mut Vec<u8>) {
        let age_secs = now_ms.saturating_sub(self.connected_ms) / 1000;
        let activity = &self.activity;
        let idle = activity.idle_secs(now_secs);
        let [sub, psub, ssub] = activity.subscriptions.each_ref().map(|n| n.load(Relaxed));
        let resp = self.resp.max(2);
        let user = if self.user.is_empty() { "default" } else { self.user.as_str() };
        let mut text = String::with_capacity(320);
        let _ = writeln!(
            text,
            "id={} addr={} laddr={} fd={} name={} age={age_secs} idle={idle} flags={} db={} \
             sub={sub} psub={psub} ssub={ssub} multi={} qbuf={qbuf} qbuf-free=0 argv-mem=0 \
             multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd={} user={user} \
             redir={} resp={resp} lib-name={} lib-ver={}",
            self.id,
            self.addr,
            self.laddr,
            self.fd.unwrap_or(-1),
            String::from_utf8_lossy(&self.name),
            activity.flag_letters(),
            self.db,
            activity.multi.load(Relaxed),
            activity.command_name(),
            activity.redirect.load(Relaxed),
            String::from_utf8_lossy(&self.lib_name),
            String::from_utf8_lossy(&self.lib_ver),
        );
        out.extend_from_slice(text.as_bytes());
    }
}

/// The bytes a command takes in RESP's multibulk form: what Redis's query buffer holds of
/// it while it runs (CLIENT LIST and CLIENT INFO show it as the asking client's `qbuf`).
pub(super) fn query_bytes(command: &proto_resp::Command<'_>) -> usize {
    let digits = |n: usize| n.to_string().len();
    let header = 1 + digits(command.argc()) + 2;
    header + command.args().map(|arg| 1 + digits(arg.len()) + 2 + arg.len() + 2).sum::<usize>()
}

/// A connection's entry, shared by its session and the registry: one copy per connection
/// (an idle connection's memory is a measured target), and the session's changes
/// (SETNAME, SELECT, HELLO) show in listings without a second write.
pub type SharedClient = Arc<Mutex<ClientInfo>>;

/// What `ClientRegistry::match_locked`'s callback says of one client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Matched {
    No,
    /// Matched, and stays listed.
    Keep,
    /// Matched, and leaves the registry now.
    Unlist,
}

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

    /// Redis client `id`'s entry, while it is connected.
    pub fn get(&self, id: u64) -> Option<SharedClient> {
        self.clients.lock().get(&id).map(Arc::clone)
    }

    /// Whether Redis client `id` is connected.
    pub fn contains(&self, id: u64) -> bool {
        self.clients.lock().contains_key(&id)
    }

    /// Every listed client, by id. Lock order: the registry, then each entry; a caller must
    /// not hold an entry's lock.
    pub fn snapshot(&self) -> Vec<ClientInfo> {
        self.clients.lock().values().map(|client| client.lock().clone()).collect()
    }

    /// Calls `f` on every listed client with the registry locked (a client cannot leave
    /// meanwhile); returns how many it matched. A client it answers `Matched::Unlist` for
    /// leaves the registry at once, as Redis frees a killed client at once: a second KILL
    /// or a CLIENT LIST right after no longer sees it, though its loop closes it later.
    pub fn match_locked(&self, mut f: impl FnMut(&ClientInfo) -> Matched) -> usize {
        let mut matched = 0;
        self.clients.lock().retain(|_, client| match f(&client.lock()) {
            Matched::No => true,
            Matched::Keep => {
                matched += 1;
                true
            }
            Matched::Unlist => {
                matched += 1;
                false
            }
        });
        matched
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
        b.lock().write_line(5_000, 0, 0, &mut line);
        let text = String::from_utf8(line).unwrap();
        assert!(text.starts_with("id=2 addr= laddr= fd=-1 name=worker age=5 idle=0 flags=N db=0"));
        assert!(text.ends_with("resp=2 lib-name= lib-ver=\n"), "{text}");
    }
}
