//! Command semantics: what a memcached or Redis request means for the shared [`store::Store`].
//!
//! ```text
//!   server (per connection)          exec                                         store
//!   proto_memcache::Request  --> memcache::execute --+
//!   binary::BinRequest       --> binary::execute ----+--> keyspace::encode --> core --> Store
//!   proto_resp::Command      --> resp::execute ------+   (and Redis-only handlers)
//! ```
//!
//! Each memcached operation (get, store, arith, delete, touch, flush) has one executor in
//! `core` returning a typed outcome; text, meta, binary and the Redis commands that mean
//! the same thing only decode requests and compose replies from the outcomes.
//!
//! Cross-protocol meaning lives here and nowhere else: one store serves both protocols, a
//! value set by memcached `set` is read by Redis `GET`, TTLs agree, and Redis databases
//! 1-15 are namespaces inside the same store ([`keyspace`]); memcached sees database 0.
//!
//! Counters are per worker thread ([`Counters`], single writer, relaxed) and summed on
//! demand ([`Core::totals`]).

#![forbid(unsafe_code)]

pub mod auth;
pub mod binary;
pub mod conns;
mod control;
mod core;
pub mod counters;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod gate;
pub mod keyspace;
pub mod latency;
pub mod memcache;
pub mod metrics;
pub mod noevict;
mod observers;
mod owned;
mod policy;
pub mod repl;
pub mod resp;
mod shared;
pub mod snapshot;
pub mod watch;

pub use control::ServerControl;
pub use counters::{Counters, Totals};
pub use policy::MAXMEMORY_POLICIES;
pub use shared::{
    Core, MemcacheState, MemcachedFeatures, RedisState, RefreshCerts, Settings, Shared, SslSettings,
};

/// Whether the connection stays open after a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// Send the replies so far, then close (memcached `quit`, Redis `QUIT`).
    Close,
    /// The request is not finished: its reply so far is in the buffer. Send that, then
    /// execute the same request again, with the same session (a multiget streams its hits
    /// in chunks, so its reply never has to sit in memory whole).
    Again,
    /// memcached `watch`: the connection asks to become a watcher of these event kinds
    /// ([`watch::kind`]). Nothing was answered: the server registers it with
    /// [`MemcacheState::watchers`] and answers `OK` (or that there are too many), then streams.
    Watch(u32),
    /// Redis BLPOP and its kin: the command waits (nothing was answered). Feed the
    /// connection no more input until `Session::poll_blocked` says it is answered; its loop
    /// must call that at every wake and tick (`resp::blocking`).
    Block,
    /// Redis CLIENT PAUSE holds this command: it was not run. Leave it and what follows
    /// unread until `Session::pause_ended` says the pause is over (`resp::pause`).
    Postpone,
}

/// The memcached version string clients see: a 1.6.x first (clients gate features on it),
/// then Spinel's own.
pub const MEMCACHED_VERSION: &str = concat!("1.6.21-spinel-", env!("CARGO_PKG_VERSION"));

/// The Redis version Spinel reports in HELLO and INFO (clients gate commands on it).
pub const REDIS_VERSION: &str = "7.2.0";
