//! Redis replication, both roles, over Redis's own protocol, so that a Spinel replica
//! follows a Spinel or a redis-server primary, and a redis-server replica follows Spinel.
//!
//! ```text
//!  primary                                             replica
//!  a write's keys ──> journal (mutex): the keys' state   link thread (link.rs): PING,
//!     as SET / RESTORE ... ABSTTL / DEL, SELECT when the    REPLCONF, PSYNC; the RDB to a
//!     database changes ──> backlog (backlog.rs)            file, loaded; then each command
//!  PSYNC ──> a feed (feed.rs): +FULLRESYNC, an RDB        of the stream run as the master
//!     written by a thread into a bounded pipe, then        client, its bytes appended to
//!     the backlog from the offset the walk began at;       this server's own backlog (so a
//!     drained by the connection's worker when woken        sub-replica or a promotion keeps
//!                                                          the same offsets)
//! ```
//!
//! How a write travels. By default as the state of the keys it changed, read under the
//! journal's lock once it ran: the workers write in parallel with no lock over a command,
//! so the order two workers append commands for one key need not be the order they
//! applied them; a state read after the write is always at least as new as the write, so
//! the last entry for a key is its final value, whatever the interleaving. The same
//! property makes a full copy consistent without a fork or a pause: the RDB is a walk of
//! the live store that begins at offset X, and while a walk runs every entry sets keys to
//! a state (idempotent), so a replica that loads the walk and applies the stream from X
//! ends exactly at the primary's state, with no write lost or applied twice (INCR and
//! APPEND included).
//!
//! A state costs the whole value, which for a push onto a long list would be the whole
//! list at every push. So the deterministic collection writes (and APPEND, SETRANGE,
//! RENAME ...) go as the command itself (`resp::verbatim` lists them): such a write takes
//! the journal's lock before it runs and appends itself before letting go, so two of them
//! on one key go in the order they applied, and a state entry for that key, read later
//! under the same lock, still ends at the final value. They do so only while no walk runs
//! (replayed over a walk that already saw it, a push would apply twice); the expiry
//! commands go as their outcome (PEXPIREAT, PERSIST or DEL). Keys the store expired or
//! evicted are noted by its observers and sent (as their state, or as a DEL when the
//! verbatim write itself found them gone) at the next append.
//!
//! memcached writes travel the same way, with their client flags and CAS unique in an
//! `ECHO` just before (`spinel:mc <flags> <cas>`): a redis-server replica runs the ECHO
//! (no effect, no log) and stores the string; a Spinel replica keeps the item whole.

pub mod backlog;
pub(crate) mod failover;
pub(crate) mod feed;
mod journal;
pub(crate) mod link;
mod link_stream;

use std::sync::{
    atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed},
    Arc, OnceLock,
};

use parking_lot::Mutex;

use std::io::Write as _;

use crate::Shared;

pub use feed::Feed;
pub(crate) use journal::{lock_for_verbatim, walk_finished, walk_started, Journal};

/// The journal, locked across a write sent verbatim.
pub(crate) type JournalGuard<'a> = parking_lot::MutexGuard<'a, Journal>;

/// What wakes worker `i`'s loop (`own`: the calling worker's), set once by the server.
pub type Notify = Box<dyn Fn(usize, bool) + Send + Sync>;

/// Replication state, for both protocols (in [`crate::Core`]).
pub struct Replication {
    /// This server is a primary with a backlog: writes are journaled. One relaxed load per
    /// write when it is not.
    journaling: AtomicBool,
    /// This server follows a primary (`REPLICAOF host port`).
    replica: AtomicBool,
    pub(crate) journal: Mutex<Journal>,
    /// Stored keys the store expired or evicted while journaling: their state (gone) is
    /// sent at the next append or tick.
    pub(crate) dirty: Arc<Dirty>,
    notify: OnceLock<Notify>,
    /// The worker slot (gate, counters) of the replica link's thread.
    link_worker: AtomicUsize,
    pub(crate) link: Mutex<link::LinkState>,
    /// Unix milliseconds of the last replica acknowledgement check (min-replicas).
    pub(crate) good_replicas: AtomicUsize,
    /// Unix ms of the last PING the stream carried.
    last_ping_ms: AtomicU64,
    /// `min-replicas-to-write`, `replica-read-only`, `replica-serve-stale-data`, kept in
    /// step with CONFIG for the write path.
    pub(crate) min_replicas: AtomicUsize,
    pub(crate) read_only: AtomicBool,
    pub(crate) serve_stale: AtomicBool,
    /// INFO's `sync_full`, `sync_partial_ok`, `sync_partial_err`.
    pub syncs: SyncCounts,
    /// FAILOVER's progress (`failover.rs`).
    pub(crate) failover: Mutex<failover::State>,
    /// The next PSYNC of the link says FAILOVER (this server is handing over its role).
    pub(crate) failover_psync: AtomicBool,
    /// A FAILOVER holds writes: memcached's too, which CLIENT PAUSE does not hold.
    pub(crate) failing_over: AtomicBool,
}

/// Full and partial resynchronisations served (INFO stats).
#[derive(Debug, Default)]
pub struct SyncCounts {
    pub full: AtomicU64,
    pub partial_ok: AtomicU64,
    pub partial_err: AtomicU64,
}

/// Keys the store's observers saw go, waiting to be journaled.
#[derive(Debug, Default)]
pub struct Dirty {
    pub(crate) on: AtomicBool,
    pub(crate) keys: Mutex<Vec<Vec<u8>>>,
}

impl Dirty {
    /// Called by the expiry and eviction observers with the stored key.
    pub fn note(&self, stored: &[u8]) {
        if self.on.load(Relaxed) {
            self.keys.lock().push(stored.to_vec());
        }
    }
}

impl std::fmt::Debug for Replication {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replication").finish_non_exhaustive()
    }
}

impl Replication {
    pub fn new(dirty: Arc<Dirty>) -> Replication {
        Replication {
            journaling: AtomicBool::new(false),
            replica: AtomicBool::new(false),
            journal: Mutex::new(Journal::new()),
            dirty,
            notify: OnceLock::new(),
            link_worker: AtomicUsize::new(0),
            link: Mutex::new(link::LinkState::default()),
            good_replicas: AtomicUsize::new(0),
            last_ping_ms: AtomicU64::new(0),
            min_replicas: AtomicUsize::new(0),
            read_only: AtomicBool::new(true),
            serve_stale: AtomicBool::new(true),
            syncs: SyncCounts::default(),
            failover: Mutex::new(failover::State::None),
            failover_psync: AtomicBool::new(false),
            failing_over: AtomicBool::new(false),
        }
    }

    /// Sets what wakes a worker whose replica has stream to send (once, by the server).
    pub fn set_notify(&self, notify: Notify) {
        let _ = self.notify.set(notify);
    }

    /// The worker slot the replica link's thread runs commands in (set by the server: a
    /// slot of its own in the gate and the counters).
    pub fn set_link_worker(&self, worker: usize) {
        self.link_worker.store(worker, Relaxed);
    }

    pub(crate) fn link_worker(&self) -> usize {
        self.link_worker.load(Relaxed)
    }

    pub(crate) fn wake(&self, worker: usize, own: bool) {
        if let Some(notify) = self.notify.get() {
            notify(worker, own);
        }
    }

    /// Whether writes are journaled (a primary with a backlog).
    #[inline(always)]
    pub fn journaling(&self) -> bool {
        self.journaling.load(Relaxed)
    }

    /// Whether this server follows a primary.
    #[inline(always)]
    pub fn is_replica(&self) -> bool {
        self.replica.load(Relaxed)
    }

    pub(crate) fn set_journaling(&self, on: bool) {
        self.journaling.store(on, Relaxed);
        self.dirty.on.store(on, Relaxed);
    }

    pub(crate) fn set_replica(&self, on: bool) {
        self.replica.store(on, Relaxed);
    }

    /// A CONFIG SET (or a config file line) of a setting the write path reads.
    pub(crate) fn setting_changed(&self, name: &str, value: &str) {
        match name {
            "min-replicas-to-write" | "min-slaves-to-write" => {
                self.min_replicas.store(value.parse().unwrap_or(0), Relaxed);
            }
            "replica-read-only" | "slave-read-only" => {
                self.read_only.store(value == "yes", Relaxed)
            }
            "replica-serve-stale-data" | "slave-serve-stale-data" => {
                self.serve_stale.store(value == "yes", Relaxed);
            }
            _ => {}
        }
    }

    /// Whether a memcached write must pass a replication check first: a replica, or a
    /// primary handing its role over (one relaxed load each).
    #[inline(always)]
    pub fn guards_memcached(&self) -> bool {
        self.is_replica() || self.failing_over.load(Relaxed)
    }

    /// Whether a write must pass a replication check first (a replica, or a primary with
    /// `min-replicas-to-write`): one relaxed load each on the write path.
    #[inline(always)]
    pub fn guards_writes(&self) -> bool {
        self.is_replica() || self.min_replicas.load(Relaxed) != 0
    }
}

/// 40 random hex digits: a replication ID.
pub(crate) fn new_replid() -> String {
    use std::io::Read;
    let mut random = [0u8; 20];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut random));
    if read.is_err() {
        // No /dev/urandom: the clock and the process id still make it unique enough.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let seed = nanos ^ (u128::from(std::process::id()) << 64);
        random[..16].copy_from_slice(&seed.to_le_bytes());
    }
    random.iter().map(|b| format!("{b:02x}")).collect()
}

/// The payload of a full copy, as a primary with `capa eof` sends it: `$EOF:<mark>`, the
/// RDB, the mark.
pub(crate) fn write_payload(
    shared: &Shared,
    out: &mut impl std::io::Write,
    replid: &str,
    offset: u64,
) -> std::io::Result<()> {
    let mark = new_replid();
    out.write_all(format!("$EOF:{mark}\r\n").as_bytes())?;
    let aux = crate::snapshot::RdbAux {
        repl_id: replid.to_string(),
        repl_offset: offset as i64,
        repl_stream_db: 0,
    };
    crate::snapshot::write_rdb(shared, &mut *out, &aux)?;
    out.write_all(mark.as_bytes())
}

/// On a replica, between two commands of its primary's stream: starts the full copies its
/// own replicas asked for, each from the offset reached now (nothing is applied while a
/// walk runs, so each copy is exact at its offset).
pub(crate) fn start_requested_walks(shared: &Shared) {
    let mut journal = shared.core.repl.journal.lock();
    if journal.walk_requests.is_empty() {
        return;
    }
    let Some(shared_arc) = shared.this.get().and_then(std::sync::Weak::upgrade) else { return };
    let requests = std::mem::take(&mut journal.walk_requests);
    let (replid, at) = (journal.replid.clone(), journal.offset());
    for (feed, line) in requests {
        if feed.is_gone() {
            continue;
        }
        feed.restart_at(at + 1);
        walk_started(&mut journal);
        let replid = replid.clone();
        let begun = feed.start_bulk(&shared_arc, move |shared, out| {
            if line {
                out.write_all(format!("+FULLRESYNC {replid} {at}\r\n").as_bytes())?;
            }
            let written = write_payload(shared, out, &replid, at);
            walk_finished(shared);
            written
        });
        if begun.is_err() {
            journal.walks = journal.walks.saturating_sub(1);
            feed.mark_gone();
        }
    }
}

/// Whether a full copy's walk runs now (a replica then holds its stream).
pub(crate) fn walking(shared: &Shared) -> bool {
    shared.core.repl.journal.lock().walks != 0
}

/// A replica's full copy, received into `path`: every key replaced by the file's.
pub(crate) fn load_full_copy(shared: &Shared, path: &std::path::Path) -> Result<(), String> {
    let worker = shared.core.repl.link_worker();
    let gate = &shared.core.gate;
    gate.enter(worker);
    let loaded = gate.exclusive(worker, || {
        let counters = shared.core.counters(worker);
        crate::core::flush::flush_all(
            &shared.core,
            &counters,
            0,
            crate::core::flush::Switch::Ignore,
        );
        crate::snapshot::load_rdb_file(shared, path).map(|_| ())
    });
    gate.leave(worker);
    loaded
}

/// What a write changed, journaled when this server is a primary with replicas.
pub(crate) fn journal_keys<'k>(
    shared: &Shared,
    keys: impl IntoIterator<Item = (u8, &'k [u8])>,
    memcached: bool,
) {
    journal::keys_changed(shared, keys, memcached);
}

/// A command journaled as it is.
pub(crate) fn journal_verbatim(shared: &Shared, db: Option<u8>, parts: &[&[u8]]) {
    journal::verbatim(shared, db, parts);
}

/// A primary's tick: expired keys and, every `repl-ping-replica-period`, a PING.
pub fn tick(shared: &Shared) {
    let repl = &shared.core.repl;
    if !repl.journaling() {
        return;
    }
    let now_ms = crate::resp::now_unix_ms(shared);
    let period_ms =
        crate::resp::replication::kept_int(shared, "repl-ping-replica-period").max(1) as u64 * 1000;
    let last = repl.last_ping_ms.load(Relaxed);
    // No PING while clients are paused (a FAILOVER's pause): the offsets must stay still
    // for the replica to catch up to them, as in Redis.
    let ping = now_ms >= last + period_ms
        && !shared.redis.pause.is_set()
        && repl.last_ping_ms.compare_exchange(last, now_ms, Relaxed, Relaxed).is_ok();
    journal::tick(shared, ping);
    acks_changed(shared);
}

/// One replica as ROLE and INFO show it.
#[derive(Debug, Clone)]
pub(crate) struct ReplicaView {
    pub ip: String,
    pub port: u32,
    pub ack_offset: u64,
    pub lag_secs: u64,
    pub online: bool,
}

/// `master_repl_offset` and the replicas being fed.
pub(crate) fn replicas(shared: &Shared) -> (u64, Vec<ReplicaView>) {
    let now_ms = crate::resp::now_unix_ms(shared);
    let journal = shared.core.repl.journal.lock();
    let views = journal
        .feeds
        .iter()
        .filter(|f| !f.is_gone())
        .map(|f| ReplicaView {
            ip: f.ip.clone(),
            port: f.port.load(Relaxed),
            ack_offset: f.ack_offset.load(Relaxed),
            lag_secs: now_ms.saturating_sub(f.ack_ms.load(Relaxed)) / 1000,
            online: !f.in_bulk(),
        })
        .collect();
    (journal.offset(), views)
}

/// Recounts the replicas good for `min-replicas-to-write` (online, acknowledged within
/// `min-replicas-max-lag` seconds).
pub(crate) fn acks_changed(shared: &Shared) {
    let max_lag = crate::resp::replication::kept_int(shared, "min-replicas-max-lag").max(0) as u64;
    let (_, views) = replicas(shared);
    let good = views.iter().filter(|v| v.online && v.lag_secs <= max_lag).count();
    shared.core.repl.good_replicas.store(good, Relaxed);
}

/// How many replicas acknowledged offset `offset` or more.
pub(crate) fn acked_at_least(shared: &Shared, offset: u64) -> usize {
    let journal = shared.core.repl.journal.lock();
    journal.feeds.iter().filter(|f| !f.is_gone() && f.ack_offset.load(Relaxed) >= offset).count()
}

/// Asks every replica for its offset now (WAIT).
pub(crate) fn ask_acks(shared: &Shared) {
    let repl = &shared.core.repl;
    let mut journal = repl.journal.lock();
    if journal.feeds.is_empty() {
        return;
    }
    journal.command(&[b"REPLCONF", b"GETACK", b"*"]);
    journal.flush(repl);
}

/// `master_repl_offset` now.
pub(crate) fn offset(shared: &Shared) -> u64 {
    shared.core.repl.journal.lock().offset()
}

/// redis.conf's `replicaof host port`: noted, and followed once the server started
/// ([`start_configured`]).
pub(crate) fn configure_master(shared: &Shared, value: &str) -> Result<(), String> {
    let mut words = value.split_whitespace();
    let (Some(host), Some(port), None) = (words.next(), words.next(), words.next()) else {
        return Err("wrong number of arguments".into());
    };
    if host.eq_ignore_ascii_case("no") && port.eq_ignore_ascii_case("one") {
        return Ok(());
    }
    let port: u16 = port.parse().map_err(|_| "Invalid master port".to_string())?;
    shared.core.repl.link.lock().configured = Some((host.to_string(), port));
    Ok(())
}

/// Starts following the primary the config file named, if any.
pub fn start_configured(shared: &Arc<Shared>) {
    let configured = shared.core.repl.link.lock().configured.take();
    if let Some((host, port)) = configured {
        link::follow(shared, host, port);
    }
}

/// CONFIG GET replicaof: `host port` of the primary followed, or empty.
pub(crate) fn master_text(shared: &Shared) -> String {
    let link = shared.core.repl.link.lock();
    link.master.as_ref().map_or_else(String::new, |(host, port)| format!("{host} {port}"))
}
