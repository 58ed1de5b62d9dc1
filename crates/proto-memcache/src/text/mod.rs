//! The classic text protocol: `get`, `set`, `delete`, `incr`, ... and their replies.
//!
//! ```text
//!  get|gets <key>*                       gat|gats <exptime> <key>*
//!  set|add|replace|append|prepend <key> <flags> <exptime> <bytes> [noreply]  + data block
//!  cas <key> <flags> <exptime> <bytes> <cas unique> [noreply]                + data block
//!  delete <key> [0] [noreply]            incr|decr <key> <delta> [noreply]
//!  touch <key> <exptime> [noreply]       flush_all [delay] [noreply]
//!  verbosity <level> [noreply]           version | quit | stats [args]*
//! ```

pub mod ahead;
pub mod auth;
pub(crate) mod request;
pub mod response;

use crate::line::Words;

/// Which retrieval command, and for `gat`/`gats` the new exptime.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RetrieveKind {
    Get,
    /// `get` that also returns each item's CAS unique.
    Gets,
    /// Get and touch: set each found item's exptime.
    Gat {
        exptime: i64,
    },
    /// `gat` that also returns each item's CAS unique.
    Gats {
        exptime: i64,
    },
}

impl RetrieveKind {
    /// Whether `VALUE` lines carry the CAS unique.
    pub fn returns_cas(&self) -> bool {
        matches!(self, RetrieveKind::Gets | RetrieveKind::Gats { .. })
    }

    /// The exptime to set on each hit, for `gat`/`gats`.
    pub fn touch_exptime(&self) -> Option<i64> {
        match self {
            RetrieveKind::Gat { exptime } | RetrieveKind::Gats { exptime } => Some(*exptime),
            RetrieveKind::Get | RetrieveKind::Gets => None,
        }
    }

    pub(crate) fn command(&self) -> &'static [u8] {
        match self {
            RetrieveKind::Get => b"get",
            RetrieveKind::Gets => b"gets",
            RetrieveKind::Gat { .. } => b"gat",
            RetrieveKind::Gats { .. } => b"gats",
        }
    }
}

/// `get`, `gets`, `gat` or `gats` with its keys (at least one, except that memcached
/// accepts `gat <exptime>` with none and replies `END`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retrieve<'a> {
    pub kind: RetrieveKind,
    /// Every key is within [`crate::Limits::key_len_max`] and holds no `\r`.
    pub keys: Words<'a>,
}

/// The six storage commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StoreCommand {
    Set,
    /// Store only if the key is absent.
    Add,
    /// Store only if the key is present.
    Replace,
    /// Add the data after the existing value (flags and exptime are ignored).
    Append,
    /// Add the data before the existing value (flags and exptime are ignored).
    Prepend,
    /// Store only if the item's CAS unique is still this one.
    Cas {
        cas_unique: u64,
    },
}

impl StoreCommand {
    pub(crate) fn name(&self) -> &'static [u8] {
        match self {
            StoreCommand::Set => b"set",
            StoreCommand::Add => b"add",
            StoreCommand::Replace => b"replace",
            StoreCommand::Append => b"append",
            StoreCommand::Prepend => b"prepend",
            StoreCommand::Cas { .. } => b"cas",
        }
    }
}

/// A storage command with its data block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Store<'a> {
    pub command: StoreCommand,
    pub key: &'a [u8],
    /// Opaque client flags, stored and returned with the item.
    pub flags: u32,
    /// 0: never; up to 30 days: seconds from now; above: Unix time; negative: expired.
    pub exptime: i64,
    /// The data block, without its `\r\n`; at most [`crate::Limits::value_len_max`].
    pub value: &'a [u8],
    pub noreply: bool,
}

/// What `shutdown` asks for (whether it is allowed at all, `-A`, is the server's business).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShutdownMode {
    /// `shutdown`: stop now (memcached raises SIGINT).
    Now,
    /// `shutdown graceful`: stop after the connections drain (memcached raises SIGUSR1).
    Graceful,
    /// Any other argument, or more than one: `CLIENT_ERROR invalid shutdown mode`, and the
    /// server keeps running.
    Invalid,
}

/// A tuning or logging command whose arguments the server reads ([`crate::Request::Admin`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AdminCommand {
    /// `slabs reassign|automove ...`
    Slabs,
    /// `lru tune|mode|temp_ttl ...`
    Lru,
    /// `lru_crawler enable|disable|sleep|tocrawl|crawl|metadump ...`
    LruCrawler,
    /// `watch [fetchers|mutations|evictions|...]*`
    Watch,
    /// `cache_memlimit <megabytes> [noreply]`
    CacheMemlimit,
    /// `refresh_certs [noreply]`: read the TLS certificates again.
    RefreshCerts,
}

impl AdminCommand {
    /// The command's name on the wire.
    pub fn name(self) -> &'static [u8] {
        match self {
            AdminCommand::Slabs => b"slabs",
            AdminCommand::Lru => b"lru",
            AdminCommand::LruCrawler => b"lru_crawler",
            AdminCommand::Watch => b"watch",
            AdminCommand::CacheMemlimit => b"cache_memlimit",
            AdminCommand::RefreshCerts => b"refresh_certs",
        }
    }
}

/// `incr` or `decr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArithOp {
    /// Adds, wrapping at 2^64.
    Incr,
    /// Subtracts, stopping at 0.
    Decr,
}
