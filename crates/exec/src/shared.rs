//! What all workers share, split by owner so that a handler's signature can say what it may
//! touch: [`Shared`] is [`Core`] (both protocols and the server's loops), [`MemcacheState`]
//! (memcached alone) and [`RedisState`] (Redis alone), plus the large-collection registry and
//! the `Arc` to itself. Fields live where their owner is; a field another protocol also
//! reads stays with its owner and the reader names it (`shared.redis.tracking`).
//!
//! Readers of each field (`exec::` modules, `server::` files), as of the split:
//!
//! | field | readers |
//! |---|---|
//! | **`core`** (19) | |
//! | `store` | every executor (`core`, `memcache`, `binary`, `resp`), `snapshot`, `metrics`; server `worker` (maintenance) |
//! | `settings` | `core::flush`, `memcache` (stats settings, CAS, limits), `resp` (INFO, CONFIG) |
//! | `started`, `started_unix_secs`, `clock_secs` | `memcache`, `resp`, `metrics` (uptime, last-command second); server `worker`/`main` tick it |
//! | `workers`, `baseline`, `command_stats_baseline`, `store_baseline`, `idle_kicks` | `Core::totals`/`counters`, `memcache` stats, `binary`, `resp` INFO, `metrics`; the server's workers get their `Counters` |
//! | `maxbytes`, `maxmemory_unset`, `maxmemory_policy` | `memcache` (`cache_memlimit`, stats), `resp` CONFIG/INFO, `metrics`, server `control` |
//! | `shutdown` | `memcache` (`shutdown`), `resp` (SHUTDOWN); server `main`, `worker`, `udp` |
//! | `clients` | `memcache` (`stats conns`), `resp` (CLIENT), `metrics`; server `main` |
//! | `conn_buffer_bytes` | `memcache` stats, `resp` INFO, `metrics`; server `worker` writes it |
//! | `gate` | `resp` (EXEC, multi-key writes, scripts); server `worker` marks workers in it |
//! | `idle_timeout_ms`, `max_connections` | `memcache`, `resp` CONFIG, `metrics`; server `worker` (accept), `main`, `control` |
//! | **`memcache`** (11) | |
//! | `verbosity` | `memcache` (`verbosity`); server `log`, `main`, `control` |
//! | `tunables`, `track_sizes` | `memcache` (`slabs`, `lru`, `lru_crawler`, stats settings, `stats sizes`) |
//! | `prefix_stats`, `watchers` | `memcache`, `binary`; `watchers` also the store's eviction observer and server `worker` |
//! | `auth` | `memcache`, `binary` (SASL), `exec::auth`; server `main` sets it |
//! | `read_bufs` | `memcache` stats; server `worker` writes it |
//! | `graceful_stop`, `ssl_handshake_errors`, `ssl_cert_refreshed_secs`, `refresh_certs` | `memcache` (`shutdown graceful`, stats, `refresh_certs`); server `main` |
//! | **`redis`** (20) | |
//! | `users`, `acl_log`, `failed_logins` | `resp` (AUTH, ACL), `exec::auth`; also `memcache` and `binary` (through `memcache::RedisLinks`), whose logins are ACL users; `metrics`; server `main` |
//! | `requirepass`, `protected_mode`, `aclfile` | `resp` (AUTH, CONFIG, ACL LOAD/SAVE) |
//! | `pubsub`, `tracking` | `resp`; `memcache` and `binary` writes invalidate tracked keys (through `RedisLinks`); server `worker` wakes subscribers |
//! | `keyspace_events` | `resp`; the store's expiry and eviction observers |
//! | `blocking`, `pause`, `monitors`, `scripts`, `kept_config`, `save_state`, `control` | `resp` only (`scripts` also `fuzzing`; `control` set by server `main`) |
//! | `cluster` | `resp` (cluster commands, redirects); server `main` sets it |
//! | `error_stats`, `slowlog` | `resp`, `metrics`, [`Shared::reset_totals`] (`error_stats` also memcached `stats reset`, through `RedisLinks`) |
//! | `nonzero_db_selected` | `resp` (SELECT, DBSIZE, FLUSHDB), `snapshot` |
//! | **`Shared`** itself (2) | `owned` (Redis large collections; may move with the values crate), `this` (BGSAVE's thread) |
//!
//! memcached's handlers (`memcache::*`, `binary::*`) never take `Shared`: they get a
//! `memcache::MemcacheView` (the core, memcached's state, and of Redis only the
//! `RedisLinks` it uses: ACL logins and log, tracking invalidations, error-count reset).

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8},
        Arc,
    },
    time::{Instant, SystemTime, UNIX_EPOCH},
};

use parking_lot::Mutex;
use store::Store;

use crate::{
    counters::{Counters, Totals},
    memcache::{detail::PrefixStats, tune::Tunables},
    policy::{
        MAXMEMORY_POLICIES, POLICY_ALLKEYS_LRU, POLICY_NOEVICTION, POLICY_VOLATILE_LAST,
        POLICY_VOLATILE_LRU,
    },
    resp::{keyevents::KeyspaceEvents, ClientRegistry},
    watch::Watchers,
};

/// The server's settings as `stats settings`, `CONFIG GET` and `INFO` report them. Filled by
/// the server from its command line; exec only reads them.
#[derive(Debug, Clone)]
pub struct Settings {
    /// memcached port (`-p`).
    pub port: u16,
    /// Redis port (`--resp-port`; 0 = off).
    pub resp_port: u16,
    /// Default ports left unserved at start because they were in use (`resp:6379`,
    /// comma-separated; empty: none); `port`/`resp_port` are 0 for them.
    pub skipped_default_ports: String,
    /// memcached UDP port (`-U`; 0 = off).
    pub udp_port: u16,
    /// memcached `-s`: the Unix socket path, when it replaces TCP.
    pub unix_socket: Option<String>,
    /// `-a`: the access mask of the `-s` socket file.
    pub unix_mask: u32,
    /// Listen addresses as given (`-l`).
    pub listen: String,
    pub memory_limit_bytes: u64,
    /// Of `-m`, what the connection buffers' fixed share takes (io_uring rings, input tails,
    /// output pools): the store gets the rest, so the process stays near `-m`. memcached's
    /// `limit_maxbytes` and `cache_memlimit` speak of the whole.
    pub buffer_reserve_bytes: u64,
    /// At start; [`Core::max_connections`] is the limit in force.
    pub max_connections: u64,
    pub threads: u32,
    pub item_size_max: u64,
    /// false with `-M` (refuse writes when full).
    pub evictions: bool,
    /// false with `-C`.
    pub cas_enabled: bool,
    pub backlog: u32,
    /// `-R`: requests per event before yielding (kept for `stats settings`).
    pub reqs_per_event: u32,
    /// `-B`
    pub binding_protocol: String,
    /// `io_uring` or `epoll`.
    pub io_backend: String,
    /// At start; [`Core::idle_timeout_secs`] is the timeout in force.
    pub idle_timeout_secs: u64,
    /// The memcached features `-o` left on (`no_lru_maintainer`, `no_modern`, ...):
    /// memcached leaves their lines out of `stats` without them, and so does Spinel.
    pub memcached_features: MemcachedFeatures,
    /// memcached `-o read_buf_mem_limit`, in bytes (0: none), for `stats settings`.
    pub read_buf_mem_limit_bytes: u64,
    pub busy_poll_us: u64,
    pub pin: bool,
    /// `-A`: whether `shutdown` is allowed.
    pub shutdown_command: bool,
    /// false with `-F`: memcached `flush_all` is refused (Redis FLUSHALL and FLUSHDB are
    /// not; see `core::flush::Switch`).
    pub flush_enabled: bool,
    /// `-D`: the byte that ends a key's prefix in `stats detail` (memcached's default `:`).
    pub prefix_delimiter: u8,
    /// `-D` given: per-prefix statistics are on from the start.
    pub detail_enabled: bool,
    /// false with `-X`: `stats cachedump` and `lru_crawler metadump` are refused.
    pub dump_enabled: bool,
    /// false with `-W`: `watch` is refused.
    pub watch_enabled: bool,
    pub config_file: Option<String>,
    /// memcached `-S` (`stats settings`: `auth_enabled_sasl`).
    pub auth_sasl: bool,
    /// memcached `-Y FILE` (`stats settings`: `auth_enabled_ascii` shows the path).
    pub auth_file: Option<String>,
    /// Redis `requirepass`: the `default` user's password (None: `nopass`).
    pub requirepass: Option<Vec<u8>>,
    /// Redis `protected-mode`.
    pub protected_mode: bool,
    /// Redis `aclfile`: users loaded at start, and by ACL LOAD; written by ACL SAVE.
    pub aclfile: Option<std::path::PathBuf>,
    /// Redis `dir` and `dbfilename`: where SAVE and BGSAVE write the snapshot.
    pub dir: std::path::PathBuf,
    pub dbfilename: String,
    /// memcached `-e`: the snapshot file of a graceful stop (`stats settings` shows it).
    pub memory_file: Option<String>,
    /// memcached `-Z` (`stats settings`: the `ssl_*` lines; None: TLS off).
    pub ssl: Option<SslSettings>,
}

/// memcached features that Spinel has no such thing for, on or off as memcached's `-o`
/// suboptions set them; they decide which lines `stats` shows, as in memcached (its LRU
/// crawler starts and LRU maintainer lines, `rejected_connections` with `maxconns_fast`,
/// the `slab_reassign_*` lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemcachedFeatures {
    /// At start: `lru_crawler enable|disable` changes it later (`Tunables`).
    pub lru_crawler: bool,
    pub lru_maintainer: bool,
    pub maxconns_fast: bool,
    pub slab_reassign: bool,
    /// At start: `slabs automove` changes it later (`Tunables`).
    pub slab_automove: bool,
    /// `-o temporary_ttl=N`: memcached's temporary LRU, on, for TTLs up to N seconds (shown
    /// in `stats settings`; Spinel's store does not keep such items apart).
    pub temporary_ttl_secs: Option<i64>,
}

impl Default for MemcachedFeatures {
    /// memcached 1.6's defaults: everything on.
    fn default() -> Self {
        MemcachedFeatures {
            lru_crawler: true,
            lru_maintainer: true,
            maxconns_fast: true,
            slab_reassign: true,
            slab_automove: true,
            temporary_ttl_secs: None,
        }
    }
}

impl MemcachedFeatures {
    /// memcached's `-o no_modern`: everything off.
    pub fn none() -> Self {
        MemcachedFeatures {
            lru_crawler: false,
            lru_maintainer: false,
            maxconns_fast: false,
            slab_reassign: false,
            slab_automove: false,
            temporary_ttl_secs: None,
        }
    }
}

/// memcached `-Z`'s settings as `stats settings` shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SslSettings {
    pub chain_cert: String,
    pub key: String,
    /// `ssl_verify_mode` as given (0-3).
    pub verify_mode: u8,
    pub ca_cert: Option<String>,
    /// "tlsv1.2" or "tlsv1.3".
    pub min_version: &'static str,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            port: 11211,
            resp_port: 6379,
            skipped_default_ports: String::new(),
            udp_port: 0,
            unix_socket: None,
            unix_mask: 0o700,
            listen: "127.0.0.1".into(),
            memory_limit_bytes: 64 << 20,
            buffer_reserve_bytes: 0,
            max_connections: 1024,
            threads: 1,
            item_size_max: proto_memcache::limits::VALUE_LEN_MAX_DEFAULT as u64,
            evictions: true,
            cas_enabled: true,
            backlog: 1024,
            reqs_per_event: 20,
            binding_protocol: "auto-negotiate".into(),
            io_backend: "epoll".into(),
            idle_timeout_secs: 0,
            memcached_features: MemcachedFeatures::default(),
            read_buf_mem_limit_bytes: 0,
            busy_poll_us: 0,
            pin: false,
            shutdown_command: false,
            flush_enabled: true,
            prefix_delimiter: b':',
            detail_enabled: false,
            dump_enabled: true,
            watch_enabled: true,
            config_file: None,
            auth_sasl: false,
            auth_file: None,
            requirepass: None,
            protected_mode: true,
            aclfile: None,
            dir: ".".into(),
            dbfilename: "dump.rdb".into(),
            memory_file: None,
            ssl: None,
        }
    }
}

/// State shared by every worker; built once by the server.
pub struct Shared {
    /// What both protocols and the server's loops use (see [`Core`]).
    pub core: Core,
    /// What memcached alone uses (see [`MemcacheState`]).
    pub memcache: MemcacheState,
    /// What Redis alone uses (see [`RedisState`]).
    pub redis: RedisState,
    /// Large collections kept outside the store (`owned.rs`), told by the store's release
    /// observer when their owner items go.
    pub(crate) owned: Arc<crate::owned::Registry>,
    /// This, for work that outlives a request (BGSAVE's thread); set by the server once it
    /// holds the `Arc` (`Shared::set_this`).
    pub this: std::sync::OnceLock<std::sync::Weak<Shared>>,
}

/// What memcached alone uses: its verbosity, run-time tuning, per-prefix and size
/// statistics, `watch`, `-S`/`-Y` authentication, read-buffer gauges, graceful stop and TLS
/// figures. (Its connections are in [`Core::clients`]; memcached's ACL logins use the Redis
/// users, [`RedisState::users`].)
pub struct MemcacheState {
    /// memcached `verbosity` / `-v` level.
    pub verbosity: AtomicU32,
    /// Partly received requests, memcached's read buffers, as the server last counted them.
    pub read_bufs: ReadBufs,
    /// memcached `-S` or `-Y`: the memcached port's authentication (None: none asked).
    pub auth: Option<crate::auth::Auth>,
    /// memcached's run-time tuning (`slabs automove`, `lru tune`, `lru_crawler sleep`, ...),
    /// as `stats settings` reports it.
    pub tunables: Mutex<Tunables>,
    /// `stats detail`: per-prefix counts, kept only while switched on.
    pub prefix_stats: PrefixStats,
    /// memcached `watch`: who wants which item events (shared with the store's eviction
    /// observer, which logs `watch evictions` lines).
    pub watchers: Arc<Watchers>,
    /// `stats sizes_enable`: `stats sizes` counts items by size.
    pub track_sizes: AtomicBool,
    /// A graceful stop was asked for (memcached `shutdown graceful`, SIGUSR1): the server
    /// saves its `-e` snapshot before it exits.
    pub graceful_stop: AtomicBool,
    /// TLS connections whose handshake failed (memcached `ssl_handshake_errors`); the
    /// server's sessions count into it.
    pub ssl_handshake_errors: Arc<AtomicU64>,
    /// [`Core::clock_secs`] when the certificates were last read (memcached's
    /// `time_since_server_cert_refresh` counts from it).
    pub ssl_cert_refreshed_secs: AtomicU32,
    /// memcached `refresh_certs`: reloads the TLS certificates (set by the server when a
    /// port speaks TLS; unset, the command is unknown). The error is memcached's wording.
    pub refresh_certs: std::sync::OnceLock<RefreshCerts>,
}

/// What Redis alone uses: its registries (ACL users and log, pub/sub, keyspace events,
/// client-side tracking, blocked clients, CLIENT PAUSE, MONITOR, scripts, the cluster map),
/// its statistics (error counts, SLOWLOG and latency), the settings CONFIG SET changes at
/// run time, and saves. memcached writes also invalidate tracked keys ([`Self::tracking`])
/// and memcached's ACL logins use [`Self::users`].
pub struct RedisState {
    /// Set once any Redis connection SELECTs a database other than 0 (it is never reset).
    /// Until then database 0 is the whole store, so `DBSIZE` and `FLUSHDB` need no scan.
    pub nonzero_db_selected: AtomicBool,
    /// Redis ACL users (`default` has `requirepass` as its password).
    pub users: crate::resp::acl::Users,
    /// ACL LOG.
    pub acl_log: crate::resp::acl::log::AclLog,
    /// Failed Redis logins, counted and limited per address.
    pub failed_logins: crate::resp::auth::FailedLogins,
    /// Redis `requirepass` and `protected-mode` as last set (start, CONFIG SET).
    pub(crate) requirepass: parking_lot::RwLock<Option<Vec<u8>>>,
    pub(crate) protected_mode: AtomicBool,
    /// Redis `aclfile`, if any.
    pub(crate) aclfile: Option<std::path::PathBuf>,
    /// Redis pub/sub: every subscription, and how to wake a worker (`resp::pubsub`).
    pub pubsub: Arc<crate::resp::pubsub::Registry>,
    /// Redis `notify-keyspace-events` and the publishing of its events (`resp::keyevents`);
    /// also told by the store's expiry and eviction observers.
    pub keyspace_events: Arc<KeyspaceEvents>,
    /// Redis client-side caching: the tracking table and BCAST prefixes (`resp::tracking`);
    /// also told by the store's expiry and eviction observers.
    pub tracking: Arc<crate::resp::tracking::Tracking>,
    /// Clients blocked in BLPOP and its kin, by key (`resp::blocking`).
    pub blocking: Arc<crate::resp::blocking::Waiters>,
    /// Redis CLIENT PAUSE (`resp::pause`).
    pub pause: crate::resp::pause::Pause,
    /// Redis MONITOR's connections (`resp::monitor`).
    pub monitors: crate::resp::monitor::Monitors,
    /// Lua scripts and functions (`resp::script`).
    pub scripts: crate::resp::script::Engine,
    /// Redis Cluster mode (`--cluster-enabled yes`): this node's map; unset, the node is
    /// standalone. Set once by the server at start.
    pub cluster: std::sync::OnceLock<crate::resp::cluster::Cluster>,
    /// Redis error replies by prefix, for `INFO errorstats`.
    pub error_stats: crate::resp::ErrorStats,
    /// SLOWLOG and the latency monitor.
    pub slowlog: crate::resp::slowlog::SlowLog,
    /// CONFIG values Spinel keeps for clients without acting on them (`repl-backlog-size`
    /// ...), by name; a name not here has its default.
    pub(crate) kept_config: Mutex<Vec<(&'static str, String)>>,
    pub(crate) config_changed: Mutex<Vec<&'static str>>, // CONFIG SET's names, for REWRITE
    /// `kept_config`'s encoding thresholds as atomics, for collection writes (`thresholds`).
    pub(crate) encoding_thresholds: crate::resp::thresholds::EncodingThresholds,
    /// Saves: the last one's time and outcome, and whether a BGSAVE runs.
    pub save_state: crate::snapshot::SaveState,
    /// What the server does for the settings exec cannot apply itself (set once by it).
    pub control: std::sync::OnceLock<Box<dyn crate::ServerControl>>,
}

/// What both protocols and the server's loops share: the store and the settings, the
/// clock, the counters, the memory and connection limits, the client registry, the gate
/// and the stop flag.
pub struct Core {
    pub store: Store,
    /// Replication, both roles, memcached writes too (`crate::repl`).
    pub repl: crate::repl::Replication,
    /// SAVE and BGSAVE's picture of one instant (`snapshot::picture`).
    pub picture: Arc<crate::snapshot::Picture>,
    /// memcached wrote (or its items loaded): RDB files carry flags and CAS.
    pub memcached_wrote: AtomicBool,
    pub settings: Settings,
    pub started: Instant,
    pub started_unix_secs: u64,
    /// Seconds since start, as the loops' ticks last saw them (memcached's `current_time`):
    /// what a connection's last command time is kept in, read without a clock call.
    clock_secs: AtomicU32,
    workers: Vec<Arc<Counters>>,
    baseline: Mutex<Totals>,
    /// The per-command figures at the last CONFIG RESETSTAT (INFO commandstats subtracts
    /// them; the metrics endpoint keeps the raw sums).
    command_stats_baseline: Mutex<Vec<crate::latency::Summary>>,
    /// The store's (expired, evicted) counts at the last reset, which INFO subtracts.
    store_baseline: Mutex<(u64, u64)>,
    /// Connections the idle timeout closed (`idle_kicks`; see `memcache::note_idle_kick`),
    /// summed into [`Totals`] with the workers' counters.
    pub(crate) idle_kicks: AtomicU64,
    /// memcached's `maxbytes`: `-m`, or the last `cache_memlimit` (the store has it less the
    /// buffers' share).
    maxbytes: AtomicU64,
    /// Redis `maxmemory 0` was set: no limit of one's own, the store at its ceiling.
    maxmemory_unset: AtomicBool,
    /// The index in [`MAXMEMORY_POLICIES`] of Redis's `maxmemory-policy` as last set (the
    /// store knows evict, evict volatile or refuse; this keeps the name the client chose).
    maxmemory_policy: AtomicU8,
    /// Databases and key prefixes never evicted (`noevict.rs`).
    pub noevict: crate::noevict::NoEvictMarks,
    /// Set (SIGTERM, or `shutdown` with `-A`) to ask every loop to stop.
    pub shutdown: AtomicBool,
    /// Every connection of either protocol: Redis `CLIENT LIST`, memcached `stats conns`;
    /// written on connect, close and the rare commands that change what it shows (SETNAME,
    /// SETINFO, SELECT, HELLO), never per command.
    pub clients: ClientRegistry,
    /// Bytes all connections' input and output buffers hold, as the server last counted
    /// them (a gauge it refreshes every tick); reported beside the store's memory.
    pub conn_buffer_bytes: AtomicU64,
    /// Lets EXEC and multi-key writes run with no other worker executing (see `gate.rs`);
    /// the server marks each worker inside it while it executes requests.
    pub gate: crate::gate::Gate,
    /// Redis `timeout` and memcached `idle_timeout` as last set (start, CONFIG SET, a
    /// reload), in milliseconds, 0 for none: the server's loops read this same atomic.
    pub idle_timeout_ms: Arc<AtomicU64>,
    /// Redis `maxclients` and memcached `-c` as last set: the server checks it at accept.
    max_connections: AtomicU64,
}

/// What `refresh_certs` runs (see [`MemcacheState::refresh_certs`]).
pub type RefreshCerts = Box<dyn Fn() -> Result<(), String> + Send + Sync>;

/// memcached's read buffers as Spinel has them: a connection holds one while it has a partly
/// received request (its input tail); the server refreshes these at every tick.
#[derive(Debug, Default)]
pub struct ReadBufs {
    /// Connections holding a tail (gauge).
    pub count: AtomicU64,
    /// The bytes of those tails (gauge).
    pub bytes: AtomicU64,
    /// Connections closed because their thread held as many tails as
    /// `-o read_buf_mem_limit` allows.
    pub oom: AtomicU64,
}

impl Shared {
    /// One [`Counters`] is made per worker; worker `i` uses [`Core::counters`]`(i)`.
    pub fn new(mut store: Store, settings: Settings, workers: usize) -> Shared {
        crate::latency::calibrate();
        let started_unix_secs =
            SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let gate = crate::gate::Gate::new(workers);
        let busy = gate.busy_flag();
        let watchers = Arc::new(Watchers::default());
        let pubsub = Arc::new(crate::resp::pubsub::Registry::default());
        let keyspace_events = Arc::new(KeyspaceEvents::new(Arc::clone(&pubsub)));
        let tracking = Arc::new(crate::resp::tracking::Tracking::default());
        let owned = Arc::new(crate::owned::Registry::default());
        let blocking = Arc::new(crate::resp::blocking::Waiters::default());
        let dirty = Arc::new(crate::repl::Dirty::default());
        let picture = Arc::new(crate::snapshot::Picture::default());
        let observed = crate::observers::Observed {
            watchers: &watchers,
            keyspace_events: &keyspace_events,
            dirty: &dirty,
            picture: &picture,
        };
        crate::observers::observe_store(
            &mut store, observed, &tracking, &pubsub, &owned, &blocking,
        );
        let memcache = MemcacheState::new(&settings, watchers);
        let mut redis =
            RedisState::new(&settings, busy, started_unix_secs, pubsub, keyspace_events, tracking);
        redis.blocking = blocking;
        Shared {
            redis,
            memcache,
            owned,
            this: std::sync::OnceLock::new(),
            core: Core::new(store, settings, gate, workers, started_unix_secs, (dirty, picture)),
        }
    }

    /// Lets work that outlives a request hold the server's state (see `Shared::this`).
    pub fn set_this(self: &std::sync::Arc<Shared>) {
        let _ = self.this.set(std::sync::Arc::downgrade(self));
    }

    /// `stats reset` and CONFIG RESETSTAT: the counters, the error counts, and the
    /// per-prefix and watch counts as memcached clears them.
    pub fn reset_totals(&self) {
        // The same reset as memcached's `stats reset`, which reaches only these.
        self.memcache_view().reset_totals();
    }
}

impl MemcacheState {
    fn new(settings: &Settings, watchers: Arc<Watchers>) -> MemcacheState {
        MemcacheState {
            verbosity: AtomicU32::new(0),
            read_bufs: ReadBufs::default(),
            auth: None,
            tunables: Mutex::new(Tunables::with_features(&settings.memcached_features)),
            prefix_stats: PrefixStats::new(settings.prefix_delimiter, settings.detail_enabled),
            watchers,
            track_sizes: AtomicBool::new(false),
            graceful_stop: AtomicBool::new(false),
            ssl_handshake_errors: Arc::default(),
            ssl_cert_refreshed_secs: AtomicU32::new(0),
            refresh_certs: std::sync::OnceLock::new(),
        }
    }
}

impl RedisState {
    fn new(
        settings: &Settings,
        busy: Arc<AtomicBool>,
        started_unix_secs: u64,
        pubsub: Arc<crate::resp::pubsub::Registry>,
        keyspace_events: Arc<KeyspaceEvents>,
        tracking: Arc<crate::resp::tracking::Tracking>,
    ) -> RedisState {
        RedisState {
            nonzero_db_selected: AtomicBool::new(false),
            users: crate::resp::acl::Users::new(settings.requirepass.as_deref()),
            acl_log: Default::default(),
            failed_logins: Default::default(),
            requirepass: parking_lot::RwLock::new(settings.requirepass.clone()),
            protected_mode: AtomicBool::new(settings.protected_mode),
            aclfile: settings.aclfile.clone(),
            pubsub,
            keyspace_events,
            tracking,
            blocking: Default::default(),
            pause: Default::default(),
            monitors: Default::default(),
            scripts: crate::resp::script::Engine::new(busy),
            cluster: std::sync::OnceLock::new(),
            error_stats: crate::resp::ErrorStats::default(),
            slowlog: Default::default(),
            kept_config: Mutex::new(Vec::new()),
            config_changed: Mutex::new(Vec::new()),
            encoding_thresholds: Default::default(),
            save_state: crate::snapshot::SaveState::new(started_unix_secs),
            control: std::sync::OnceLock::new(),
        }
    }
}

impl Core {
    fn new(
        store: Store,
        settings: Settings,
        gate: crate::gate::Gate,
        workers: usize,
        started_unix_secs: u64,
        (dirty, picture): (Arc<crate::repl::Dirty>, Arc<crate::snapshot::Picture>),
    ) -> Core {
        let maxbytes = store.memory_limit() as u64 + settings.buffer_reserve_bytes;
        let policy = match store.when_full() {
            store::WhenFull::Evict => POLICY_ALLKEYS_LRU,
            store::WhenFull::EvictVolatile => POLICY_VOLATILE_LRU,
            store::WhenFull::Refuse => POLICY_NOEVICTION,
        };
        Core {
            store,
            repl: crate::repl::Replication::new(dirty),
            picture,
            memcached_wrote: AtomicBool::new(false),
            started: Instant::now(),
            started_unix_secs,
            clock_secs: AtomicU32::new(0),
            workers: (0..workers.max(1)).map(|_| Arc::new(Counters::default())).collect(),
            baseline: Mutex::new(Totals::default()),
            command_stats_baseline: Mutex::new(Vec::new()),
            store_baseline: Mutex::new((0, 0)),
            idle_kicks: AtomicU64::new(0),
            maxbytes: AtomicU64::new(maxbytes),
            maxmemory_unset: AtomicBool::new(false),
            maxmemory_policy: AtomicU8::new(policy),
            noevict: crate::noevict::NoEvictMarks::default(),
            shutdown: AtomicBool::new(false),
            clients: ClientRegistry::default(),
            conn_buffer_bytes: AtomicU64::new(0),
            gate,
            idle_timeout_ms: Arc::new(AtomicU64::new(settings.idle_timeout_secs * 1000)),
            max_connections: AtomicU64::new(settings.max_connections),
            settings,
        }
    }

    /// Whether a plain one-key write may run behind this thread's loans (`store::loans`)
    /// now: it may wait for memory (the loans' pin is let go first, `Store::wait_for_frees`),
    /// but must not wait for a lock that another thread may hold while it waits for a grace
    /// period, which those loans hold up: the replication journal (a write sent verbatim
    /// holds it around the write) and a save's picture (writes keep their keys into it).
    /// Two loads.
    #[inline]
    pub fn writes_behind_loans(&self) -> bool {
        !self.repl.journaling() && !self.picture.is_active()
    }

    /// memcached's `limit_maxbytes`: the store's limit plus the buffers' share.
    pub fn maxbytes(&self) -> u64 {
        self.maxbytes.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// memcached's `cache_memlimit`: the store takes the new whole less the buffers' share,
    /// which is fixed at start but, as then, at most an eighth of the whole (so that the
    /// smallest limit, 8 MB, still leaves the store most of it).
    pub fn set_maxbytes(&self, bytes: u64) -> Result<(), store::ConfigError> {
        let reserve_bytes = self.settings.buffer_reserve_bytes.min(bytes / 8);
        let store_bytes = usize::try_from(bytes - reserve_bytes).unwrap_or(usize::MAX);
        self.store.set_memory_limit(store_bytes)?;
        self.maxbytes.store(bytes, std::sync::atomic::Ordering::Relaxed);
        self.maxmemory_unset.store(false, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// Redis `CONFIG SET maxmemory 0`, no limit: the store grows to its ceiling
    /// (`store::Config::memory_max_bytes`, the machine's memory).
    pub fn lift_maxbytes(&self) -> Result<(), store::ConfigError> {
        let ceiling_bytes = self.store.memory_limit_max() as u64;
        self.set_maxbytes(ceiling_bytes + self.settings.buffer_reserve_bytes)?;
        self.maxmemory_unset.store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// Redis's `maxmemory`: [`Core::maxbytes`], or 0 after [`Core::lift_maxbytes`].
    pub fn maxmemory_bytes(&self) -> u64 {
        if self.maxmemory_unset.load(std::sync::atomic::Ordering::Relaxed) {
            0
        } else {
            self.maxbytes()
        }
    }

    /// The policy that applies to database `db`'s keys, as INFO shows it to a connection
    /// that selected it: `noeviction` for a database marked never-evict (BullMQ reads it
    /// there and asks for `noeviction`), else [`Core::maxmemory_policy`].
    pub fn maxmemory_policy_of_db(&self, db: u8) -> &'static str {
        if self.noevict.db_marked(db) {
            MAXMEMORY_POLICIES[usize::from(POLICY_NOEVICTION)]
        } else {
            self.maxmemory_policy()
        }
    }

    /// Redis's `maxmemory-policy` as last set.
    pub fn maxmemory_policy(&self) -> &'static str {
        let index = self.maxmemory_policy.load(std::sync::atomic::Ordering::Relaxed);
        MAXMEMORY_POLICIES[usize::from(index)]
    }

    /// Sets `maxmemory-policy` by its name (case-insensitive) and switches the store to
    /// evict or refuse; false for a name Redis does not know.
    pub fn set_maxmemory_policy(&self, name: &[u8]) -> bool {
        let Some(index) =
            MAXMEMORY_POLICIES.iter().position(|p| p.as_bytes().eq_ignore_ascii_case(name))
        else {
            return false;
        };
        let index = index as u8;
        let when_full = match index {
            POLICY_NOEVICTION => store::WhenFull::Refuse,
            ..=POLICY_VOLATILE_LAST => store::WhenFull::EvictVolatile,
            _ => store::WhenFull::Evict,
        };
        self.store.set_when_full(when_full);
        self.maxmemory_policy.store(index, std::sync::atomic::Ordering::Relaxed);
        true
    }

    /// The store's (expired, evicted) counts since the last [`Shared::reset_totals`].
    pub fn store_counts_since_reset(&self) -> (u64, u64) {
        let stats = self.store.stats();
        let (expired, evicted) = *self.store_baseline.lock();
        (stats.expired_reclaimed.saturating_sub(expired), stats.evictions.saturating_sub(evicted))
    }

    /// The idle timeout in force, in whole seconds (0: none).
    pub fn idle_timeout_secs(&self) -> u64 {
        self.idle_timeout_ms.load(std::sync::atomic::Ordering::Relaxed) / 1000
    }

    pub fn set_idle_timeout_secs(&self, secs: u64) {
        let ms = secs.saturating_mul(1000);
        self.idle_timeout_ms.store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// The connection limit in force.
    pub fn max_connections(&self) -> u64 {
        self.max_connections.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn set_max_connections(&self, limit: u64) {
        self.max_connections.store(limit.max(1), std::sync::atomic::Ordering::Relaxed);
    }

    /// The worker whose counters these are (for [`crate::gate::Gate`]); 0 for counters of
    /// no worker.
    pub fn worker_of(&self, counters: &Counters) -> usize {
        self.workers.iter().position(|c| std::ptr::eq(&**c, counters)).unwrap_or(0)
    }

    pub fn counters(&self, worker: usize) -> Arc<Counters> {
        Arc::clone(&self.workers[worker % self.workers.len()])
    }

    /// Every worker's counters.
    pub fn worker_counters(&self) -> impl Iterator<Item = &Counters> {
        self.workers.iter().map(|c| &**c)
    }

    /// Per-command figures since the last CONFIG RESETSTAT, by command index, leaving out
    /// commands with nothing counted since.
    pub fn command_stats_since_reset(&self) -> Vec<(usize, crate::latency::Summary)> {
        let now = crate::latency::summarize_all(self.worker_counters().map(|c| &c.command_stats));
        let baseline = self.command_stats_baseline.lock();
        let zero = crate::latency::Summary::default();
        now.iter()
            .enumerate()
            .map(|(index, sum)| (index, sum.since(baseline.get(index).unwrap_or(&zero))))
            .filter(|(_, sum)| sum.calls > 0 || sum.failed > 0 || sum.rejected > 0)
            .collect()
    }

    /// Sums of all workers' counters since the last `stats reset`. Gauges
    /// (`curr_connections`) are not affected by the reset.
    pub fn totals(&self) -> Totals {
        let raw = self.raw_totals();
        let mut since = raw.since(&self.baseline.lock());
        since.curr_connections = raw.curr_connections;
        since
    }

    /// The counters' part of [`Shared::reset_totals`]: what the sums, INFO's store counts
    /// and commandstats subtract from now on.
    pub(crate) fn reset_counts(&self) {
        *self.baseline.lock() = self.raw_totals();
        let store = self.store.stats();
        *self.store_baseline.lock() = (store.expired_reclaimed, store.evictions);
        *self.command_stats_baseline.lock() =
            crate::latency::summarize_all(self.worker_counters().map(|c| &c.command_stats));
    }

    pub(crate) fn raw_totals(&self) -> Totals {
        let mut totals = Totals::default();
        for worker in &self.workers {
            worker.add_to(&mut totals);
        }
        totals.idle_kicks = self.idle_kicks.load(std::sync::atomic::Ordering::Relaxed);
        totals
    }

    /// Seconds since start at the last [`Core::tick_clock`].
    #[inline]
    pub fn clock_secs(&self) -> u32 {
        self.clock_secs.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Moves [`Core::clock_secs`] on; the loops call it at every tick (written only when
    /// the second changed).
    pub fn tick_clock(&self) {
        let secs = u32::try_from(self.uptime_secs()).unwrap_or(u32::MAX);
        if secs != self.clock_secs() {
            self.clock_secs.store(secs, std::sync::atomic::Ordering::Relaxed);
        }
    }

    pub fn uptime_secs(&self) -> u64 {
        self.started.elapsed().as_secs()
    }
}
