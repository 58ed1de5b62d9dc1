//! The declarative command table (Valkey's idea): each command is declared once, and
//! dispatch, arity checks and `COMMAND` output all come from the declaration.
//!
//! A command either runs a handler of its own ([`Run::Command`], a [`CommandId`]) or is a
//! container whose first argument names a subcommand ([`Run::Subcommands`], each a
//! [`SubcommandId`] with its own arity), as Redis 7 declares `CLIENT`, `COMMAND` and
//! `CONFIG`. [`crate::route`] checks names and argument counts against this table once,
//! before anything runs, so a handler never checks arity and a dispatcher can `match`
//! every id without a fallback arm.
//!
//! Values (arity, flags, key positions, group, version) come from Redis's
//! `src/commands/*.json`. Arity counts the command name: positive means exactly that many
//! arguments, negative means at least that many. Key positions are the legacy
//! (first, last, step) triple of `COMMAND INFO`; last `-1` means "the last argument".
//! Summaries are our own wording.

use crate::Reply;

/// Command flags, as in Redis's `CMD_*`. Only the ones our table uses are defined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flags(u32);

impl Flags {
    pub const NONE: Flags = Flags(0);
    /// May modify the data set.
    pub const WRITE: Flags = Flags(1 << 0);
    /// Only reads keys.
    pub const READONLY: Flags = Flags(1 << 1);
    /// May grow memory use: refused when over the memory limit (Redis's `denyoom`).
    pub const DENYOOM: Flags = Flags(1 << 2);
    /// Administrative; not used by the commands in this table yet.
    pub const ADMIN: Flags = Flags(1 << 3);
    /// Not allowed inside scripts.
    pub const NOSCRIPT: Flags = Flags(1 << 4);
    /// Allowed while the data set is loading.
    pub const LOADING: Flags = Flags(1 << 5);
    /// Allowed on a replica with stale data.
    pub const STALE: Flags = Flags(1 << 6);
    /// Constant or O(log N) time: never blocks the server for long.
    pub const FAST: Flags = Flags(1 << 7);
    /// Allowed before authentication.
    pub const NO_AUTH: Flags = Flags(1 << 8);
    /// Allowed while a script or module command is busy.
    pub const ALLOW_BUSY: Flags = Flags(1 << 9);
    /// Served by Sentinel too; hidden from `COMMAND INFO`, as in Redis.
    pub const SENTINEL: Flags = Flags(1 << 10);
    /// Reads keys it was not given (SCAN, RANDOMKEY); hidden from `COMMAND INFO`.
    pub const TOUCHES_ARBITRARY_KEYS: Flags = Flags(1 << 11);
    /// Its keys are found from its arguments (a `numkeys`), not from the (first, last,
    /// step) triple, which is zero (LMPOP). `COMMAND INFO` lists it after the others.
    pub const MOVABLEKEYS: Flags = Flags(1 << 12);
    /// A pub/sub command (the `@pubsub` category).
    pub const PUBSUB: Flags = Flags(1 << 13);
    /// May replicate (PUBLISH, EVAL): CLIENT PAUSE WRITE holds it; hidden from
    /// `COMMAND INFO`, as in Redis.
    pub const MAY_REPLICATE: Flags = Flags(1 << 14);
    /// May block its client until another client's write (BLPOP), or a timeout, ends it
    /// (the `@blocking` category).
    pub const BLOCKING: Flags = Flags(1 << 15);
    /// Not shown by MONITOR (EVAL and friends show the commands they run instead).
    pub const SKIP_MONITOR: Flags = Flags(1 << 16);
    /// May be called with no keys even though it takes keys (EVAL with `numkeys` 0).
    pub const NO_MANDATORY_KEYS: Flags = Flags(1 << 17);
    /// Not recorded in the slow log (EXEC: the commands it ran are).
    pub const SKIP_SLOWLOG: Flags = Flags(1 << 18);
    /// Refused while a replica loads its data in the background (SAVE, BGSAVE).
    pub const NO_ASYNC_LOADING: Flags = Flags(1 << 19);
    /// Refused inside MULTI (SAVE).
    pub const NO_MULTI: Flags = Flags(1 << 20);
    /// Runs in a slot this node is importing without ASKING first (RESTORE-ASKING).
    pub const ASKING: Flags = Flags(1 << 21);

    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

/// Flag names in the order `COMMAND INFO` lists them (Redis's `addReplyFlagsForCommand`).
const FLAG_NAMES: &[(Flags, &str)] = &[
    (Flags::WRITE, "write"),
    (Flags::READONLY, "readonly"),
    (Flags::DENYOOM, "denyoom"),
    (Flags::ADMIN, "admin"),
    (Flags::PUBSUB, "pubsub"),
    (Flags::NOSCRIPT, "noscript"),
    (Flags::BLOCKING, "blocking"),
    (Flags::LOADING, "loading"),
    (Flags::STALE, "stale"),
    (Flags::SKIP_MONITOR, "skip_monitor"),
    (Flags::SKIP_SLOWLOG, "skip_slowlog"),
    (Flags::ASKING, "asking"),
    (Flags::FAST, "fast"),
    (Flags::NO_AUTH, "no_auth"),
    (Flags::NO_MANDATORY_KEYS, "no_mandatory_keys"),
    (Flags::NO_ASYNC_LOADING, "no_async_loading"),
    (Flags::NO_MULTI, "no_multi"),
    (Flags::ALLOW_BUSY, "allow_busy"),
    (Flags::MOVABLEKEYS, "movablekeys"),
];

mod bitmap;
mod blocking;
mod cluster;
mod docs;
mod docs_data;
mod geo;
mod group;
mod hash;
mod info;
mod keyspec;
mod list;
mod lookup;
mod meta;
mod pubsub;
mod scripting;
mod set;
mod sort;
mod stats;
mod stream;
mod subcommands;
mod tx;
mod zset;

pub use bitmap::{BitmapId, BITMAP_COMMANDS};
pub use blocking::{BlockingId, BLOCKING_COMMANDS};
pub use cluster::{ClusterId, CLUSTER_COMMANDS};
pub use geo::{GeoId, GEO_COMMANDS};
pub use group::Group;
pub use hash::{HashId, HASH_COMMANDS};
pub use info::{
    write_command_docs, write_command_docs_for, write_command_info, write_command_info_all,
    Categories,
};
pub use keyspec::{
    command_meta, command_of_line, write_key_flags, FindKeys, KeyFlags, KeyRef, KeySpec, Meta,
};
pub use list::{ListId, LIST_COMMANDS};
pub use pubsub::{PubsubId, PUBSUB_COMMANDS};
pub use scripting::{ScriptingId, SCRIPTING_COMMANDS};
pub use set::{SetId, SET_COMMANDS};
pub use sort::{SortId, SORT_COMMANDS};
pub use stats::{all_subcommands, stat_name, stat_slot, stat_slots};
pub use stream::{StreamId, STREAM_COMMANDS};
pub use subcommands::{
    ACL_SUBCOMMANDS, CLIENT_SUBCOMMANDS, CLUSTER_SUBCOMMANDS, COMMAND_SUBCOMMANDS,
    CONFIG_SUBCOMMANDS, FUNCTION_SUBCOMMANDS, LATENCY_SUBCOMMANDS, MEMORY_SUBCOMMANDS,
    MODULE_SUBCOMMANDS, OBJECT_SUBCOMMANDS, PUBSUB_SUBCOMMANDS, SCRIPT_SUBCOMMANDS,
    SLOWLOG_SUBCOMMANDS, XGROUP_SUBCOMMANDS, XINFO_SUBCOMMANDS,
};
pub use tx::{TxId, TX_COMMANDS};
pub use zset::{ZSetId, ZSET_COMMANDS};

/// The command tables: [`COMMANDS`] (strings, keys, connection, server), then one per data
/// type family, each sorted by name and declared in its own file. No name is in two.
pub static TABLES: &[&[CommandSpec]] = &[
    COMMANDS,
    HASH_COMMANDS,
    LIST_COMMANDS,
    SET_COMMANDS,
    ZSET_COMMANDS,
    BITMAP_COMMANDS,
    TX_COMMANDS,
    PUBSUB_COMMANDS,
    BLOCKING_COMMANDS,
    SCRIPTING_COMMANDS,
    CLUSTER_COMMANDS,
    SORT_COMMANDS,
    GEO_COMMANDS,
    STREAM_COMMANDS,
];

/// Every command of every table.
pub fn all_commands() -> impl Iterator<Item = &'static CommandSpec> + Clone {
    TABLES.iter().flat_map(|table| table.iter())
}

/// A command's position in [`all_commands`] (its tables' order), found from where its
/// entry lies: a few comparisons, for per-command counters on the request path.
#[inline]
pub fn index_of(spec: &CommandSpec) -> usize {
    let address = spec as *const CommandSpec as usize;
    let size = std::mem::size_of::<CommandSpec>();
    let mut base = 0;
    for table in TABLES {
        let start = table.as_ptr() as usize;
        if (start..start + std::mem::size_of_val(*table)).contains(&address) {
            return base + (address - start) / size;
        }
        base += table.len();
    }
    unreachable!("a spec from the tables")
}

/// The number of commands in every table together.
pub fn command_count() -> usize {
    TABLES.iter().map(|table| table.len()).sum()
}

/// A command with a handler of its own; `match` on it to dispatch without comparing names.
/// Containers (`CLIENT`, `COMMAND`, `CONFIG`) have no id: their subcommands do. The data
/// type families carry an id of their own table (`Hashes(HashId::Hset)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CommandId {
    Hashes(HashId),
    Lists(ListId),
    Sets(SetId),
    SortedSets(ZSetId),
    Bitmaps(BitmapId),
    Transactions(TxId),
    Pubsub(PubsubId),
    Blocking(BlockingId),
    Scripting(ScriptingId),
    Cluster(ClusterId),
    Sort(SortId),
    Geo(GeoId),
    Streams(StreamId),
    Append,
    Auth,
    Bgsave,
    Copy,
    Dbsize,
    Debug,
    Decr,
    Decrby,
    Del,
    Echo,
    Exists,
    Expire,
    Expireat,
    Expiretime,
    Failover,
    Flushall,
    Flushdb,
    Get,
    Getdel,
    Getex,
    Getrange,
    Getset,
    Hello,
    Incr,
    Incrby,
    Incrbyfloat,
    Info,
    Keys,
    Lastsave,
    Lolwut,
    Lcs,
    Mget,
    Monitor,
    Move,
    Mset,
    Msetnx,
    Persist,
    Pexpire,
    Pexpireat,
    Pexpiretime,
    Ping,
    Psetex,
    Psync,
    Pttl,
    Quit,
    Randomkey,
    Rename,
    Renamenx,
    Replconf,
    Replicaof,
    Reset,
    Role,
    Save,
    Scan,
    Select,
    Set,
    Setex,
    Setnx,
    Setrange,
    Shutdown,
    Strlen,
    Swapdb,
    Sync,
    Time,
    Touch,
    Ttl,
    Type,
    Unlink,
}

/// A subcommand of a container command (Redis 7's `client|list`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SubcommandId {
    AclCat,
    AclDeluser,
    AclDryrun,
    AclGenpass,
    AclGetuser,
    AclHelp,
    AclList,
    AclLoad,
    AclLog,
    AclSave,
    AclSetuser,
    AclUsers,
    AclWhoami,
    ClientCaching,
    ClientGetname,
    ClientGetredir,
    ClientHelp,
    ClientId,
    ClientInfo,
    ClientKill,
    ClientList,
    ClientNoEvict,
    ClientNoTouch,
    ClientPause,
    ClientReply,
    ClientSetinfo,
    ClientSetname,
    ClientTracking,
    ClientTrackinginfo,
    ClientUnpause,
    ClientUnblock,
    ClusterAddslots,
    ClusterAddslotsrange,
    ClusterBumpepoch,
    ClusterCountFailureReports,
    ClusterCountkeysinslot,
    ClusterDelslots,
    ClusterDelslotsrange,
    ClusterFailover,
    ClusterFlushslots,
    ClusterForget,
    ClusterGetkeysinslot,
    ClusterHelp,
    ClusterInfo,
    ClusterKeyslot,
    ClusterLinks,
    ClusterMeet,
    ClusterMyid,
    ClusterMyshardid,
    ClusterNodes,
    ClusterReplicas,
    ClusterReplicate,
    ClusterReset,
    ClusterSaveconfig,
    ClusterSetConfigEpoch,
    ClusterSetslot,
    ClusterShards,
    ClusterSlaves,
    ClusterSlots,
    CommandCount,
    CommandDocs,
    CommandGetkeys,
    CommandGetkeysandflags,
    CommandHelp,
    CommandInfo,
    CommandList,
    ConfigGet,
    ConfigHelp,
    ConfigResetstat,
    ConfigRewrite,
    ConfigSet,
    LatencyDoctor,
    LatencyHelp,
    LatencyHistogram,
    FunctionDelete,
    FunctionDump,
    FunctionFlush,
    FunctionHelp,
    FunctionKill,
    FunctionList,
    FunctionLoad,
    FunctionRestore,
    FunctionStats,
    LatencyHistory,
    LatencyLatest,
    LatencyReset,
    MemoryDoctor,
    MemoryHelp,
    MemoryMallocStats,
    MemoryPurge,
    MemoryStats,
    MemoryUsage,
    ObjectEncoding,
    ObjectFreq,
    ObjectHelp,
    ObjectIdletime,
    ObjectRefcount,
    PubsubChannels,
    PubsubHelp,
    PubsubNumpat,
    PubsubNumsub,
    PubsubShardchannels,
    PubsubShardnumsub,
    ScriptExists,
    ScriptFlush,
    ScriptHelp,
    ScriptKill,
    ScriptLoad,
    ModuleHelp,
    ModuleList,
    ModuleLoad,
    ModuleLoadex,
    ModuleUnload,
    SlowlogGet,
    SlowlogHelp,
    SlowlogLen,
    SlowlogReset,
    XgroupCreate,
    XgroupCreateconsumer,
    XgroupDelconsumer,
    XgroupDestroy,
    XgroupHelp,
    XgroupSetid,
    XinfoConsumers,
    XinfoGroups,
    XinfoHelp,
    XinfoStream,
}

/// What a table entry runs.
#[derive(Debug, PartialEq, Eq)]
pub enum Run {
    /// A handler of its own.
    Command(CommandId),
    /// A container: the first argument names one of `table` (ignoring case); without
    /// one, `bare` runs if the container has a bare form (`COMMAND` alone is `COMMAND
    /// INFO` of every command), and the container's arity must allow that.
    Subcommands { table: &'static [SubcommandSpec], bare: Option<SubcommandId> },
}

/// Argument-count rules beyond the arity, which Redis checks inside the command (with the
/// same arity error), declared here so that arity is checked in one place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgRule {
    /// Only the arity.
    None,
    /// At most this many arguments, the name included (PING takes one message at most).
    AtMost(usize),
    /// The arguments from this index on come in pairs (MSET's keys and values, CONFIG
    /// SET's parameters and values).
    PairsFrom(usize),
}

impl ArgRule {
    /// Whether `argc` (the name included) satisfies the rule.
    #[inline]
    pub fn allows(self, argc: usize) -> bool {
        match self {
            ArgRule::None => true,
            ArgRule::AtMost(max) => argc <= max,
            ArgRule::PairsFrom(from) => argc.saturating_sub(from) % 2 == 0,
        }
    }
}

/// One subcommand's declaration.
#[derive(Debug, PartialEq, Eq)]
pub struct SubcommandSpec {
    pub id: SubcommandId,
    /// Redis's full name, lowercase: `<container>|<subcommand>`, as the arity error
    /// prints it.
    pub name: &'static str,
    /// As [`CommandSpec::arity`], counting the container's name and the subcommand's.
    pub arity: i32,
    pub rule: ArgRule,
}

impl SubcommandSpec {
    /// The part after the `|`, which clients send as the first argument.
    pub fn short_name(&self) -> &'static str {
        self.name.split_once('|').map_or(self.name, |(_, sub)| sub)
    }
}

/// One command's declaration.
#[derive(Debug, PartialEq, Eq)]
pub struct CommandSpec {
    pub run: Run,
    /// Lowercase, as `COMMAND INFO` and the arity error print it.
    pub name: &'static str,
    /// Exact argument count if positive, minimum if negative; includes the name.
    pub arity: i32,
    pub rule: ArgRule,
    pub flags: Flags,
    /// Position of the first key argument, 0 if none.
    pub first_key: i32,
    /// Position of the last key argument; -1 for the last argument; 0 if none.
    pub last_key: i32,
    /// Distance between key arguments (2 for MSET's key/value pairs).
    pub step: i32,
    pub group: Group,
    /// The Redis version that introduced the command.
    pub since: &'static str,
    pub summary: &'static str,
}

#[allow(clippy::too_many_arguments)]
pub(crate) const fn spec(
    run: Run,
    name: &'static str,
    arity: i32,
    group: Group,
    since: &'static str,
    (first_key, last_key, step): (i32, i32, i32),
    flag_list: &[Flags],
    summary: &'static str,
) -> CommandSpec {
    let mut flags = Flags::NONE;
    let mut index = 0;
    while index < flag_list.len() {
        flags = Flags(flags.0 | flag_list[index].0);
        index += 1;
    }
    let rule = ArgRule::None;
    CommandSpec { run, name, arity, rule, flags, first_key, last_key, step, group, since, summary }
}

impl CommandSpec {
    /// The same declaration with an argument rule beyond its arity.
    pub(crate) const fn with_rule(self, rule: ArgRule) -> CommandSpec {
        CommandSpec { rule, ..self }
    }
}

/// Every command, sorted by name (so `lookup` can binary-search).
#[rustfmt::skip]
pub static COMMANDS: &[CommandSpec] = {
    use {CommandId as C, Flags as F, Group as G, Run::Command as R, SubcommandId as S};
    const fn subs(table: &'static [SubcommandSpec], bare: Option<SubcommandId>) -> Run {
        Run::Subcommands { table, bare }
    }
    &[
    spec(subs(ACL_SUBCOMMANDS, None), "acl", -2, G::Server, "6.0.0", (0, 0, 0),
        &[F::SENTINEL],
        "Subcommands that manage users and their permissions."),
    spec(R(C::Append), "append", 3, G::String, "2.0.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::FAST],
        "Appends a value to a string key."),
    spec(R(C::Auth), "auth", -2, G::Connection, "1.0.0", (0, 0, 0),
        &[F::NOSCRIPT, F::LOADING, F::STALE, F::FAST, F::NO_AUTH, F::SENTINEL, F::ALLOW_BUSY],
        "Authenticates the connection."),
    spec(R(C::Bgsave), "bgsave", -1, G::Server, "1.0.0", (0, 0, 0),
        &[F::ADMIN, F::NOSCRIPT, F::NO_ASYNC_LOADING],
        "Saves a snapshot of every key in the background."),
    spec(subs(CLIENT_SUBCOMMANDS, None), "client", -2, G::Connection, "2.4.0", (0, 0, 0),
        &[F::SENTINEL],
        "Subcommands that inspect and manage client connections."),
    spec(subs(CLUSTER_SUBCOMMANDS, None), "cluster", -2, G::Cluster, "3.0.0", (0, 0, 0),
        &[],
        "Subcommands that describe and change the cluster's slot map."),
    spec(subs(COMMAND_SUBCOMMANDS, Some(S::CommandInfo)), "command", -1, G::Server, "2.8.13", (0, 0, 0),
        &[F::LOADING, F::STALE, F::SENTINEL],
        "Describes the server's commands."),
    spec(subs(CONFIG_SUBCOMMANDS, None), "config", -2, G::Server, "2.0.0", (0, 0, 0),
        &[],
        "Subcommands that read and change the configuration."),
    spec(R(C::Copy), "copy", -3, G::Generic, "6.2.0", (1, 2, 1),
        &[F::WRITE, F::DENYOOM],
        "Copies the value of a key to a new key."),
    spec(R(C::Dbsize), "dbsize", 1, G::Server, "1.0.0", (0, 0, 0),
        &[F::READONLY, F::FAST],
        "Counts the keys in the selected database."),
    // Only DEBUG ERROR is run (see exec's `resp::debug`).
    spec(R(C::Debug), "debug", -2, G::Server, "1.0.0", (0, 0, 0),
        &[F::ADMIN, F::NOSCRIPT, F::LOADING, F::STALE],
        "A container for debugging commands."),
    spec(R(C::Decr), "decr", 2, G::String, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::FAST],
        "Decrements an integer key by one."),
    spec(R(C::Decrby), "decrby", 3, G::String, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::FAST],
        "Decrements an integer key by an amount."),
    spec(R(C::Del), "del", -2, G::Generic, "1.0.0", (1, -1, 1),
        &[F::WRITE],
        "Deletes keys."),
    spec(R(C::Echo), "echo", 2, G::Connection, "1.0.0", (0, 0, 0),
        &[F::LOADING, F::STALE, F::FAST],
        "Replies with the given message."),
    spec(R(C::Exists), "exists", -2, G::Generic, "1.0.0", (1, -1, 1),
        &[F::READONLY, F::FAST],
        "Counts how many of the given keys exist."),
    spec(R(C::Expire), "expire", -3, G::Generic, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::FAST],
        "Sets a key's time to live in seconds."),
    spec(R(C::Expireat), "expireat", -3, G::Generic, "1.2.0", (1, 1, 1),
        &[F::WRITE, F::FAST],
        "Sets a key's expiry as a Unix time in seconds."),
    spec(R(C::Expiretime), "expiretime", 2, G::Generic, "7.0.0", (1, 1, 1),
        &[F::READONLY, F::FAST],
        "Returns a key's expiry as a Unix time in seconds."),
    spec(R(C::Failover), "failover", -1, G::Server, "6.2.0", (0, 0, 0),
        &[F::ADMIN, F::NOSCRIPT, F::STALE],
        "Starts a coordinated failover from this server to one of its replicas."),
    spec(R(C::Flushall), "flushall", -1, G::Server, "1.0.0", (0, 0, 0),
        &[F::WRITE],
        "Deletes every key in every database."),
    spec(R(C::Flushdb), "flushdb", -1, G::Server, "1.0.0", (0, 0, 0),
        &[F::WRITE],
        "Deletes every key in the selected database."),
    spec(R(C::Get), "get", 2, G::String, "1.0.0", (1, 1, 1),
        &[F::READONLY, F::FAST],
        "Returns the value of a key."),
    spec(R(C::Getdel), "getdel", 2, G::String, "6.2.0", (1, 1, 1),
        &[F::WRITE, F::FAST],
        "Returns the value of a key and deletes the key."),
    spec(R(C::Getex), "getex", -2, G::String, "6.2.0", (1, 1, 1),
        &[F::WRITE, F::FAST],
        "Returns the value of a key and changes its expiry."),
    spec(R(C::Getrange), "getrange", 4, G::String, "2.4.0", (1, 1, 1),
        &[F::READONLY],
        "Returns a substring of a string value."),
    spec(R(C::Getset), "getset", 3, G::String, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::FAST],
        "Sets a key and returns its previous value."),
    spec(R(C::Hello), "hello", -1, G::Connection, "6.0.0", (0, 0, 0),
        &[F::NOSCRIPT, F::LOADING, F::STALE, F::FAST, F::NO_AUTH, F::SENTINEL, F::ALLOW_BUSY],
        "Negotiates the protocol version and optionally authenticates."),
    spec(R(C::Incr), "incr", 2, G::String, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::FAST],
        "Increments an integer key by one."),
    spec(R(C::Incrby), "incrby", 3, G::String, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::FAST],
        "Increments an integer key by an amount."),
    spec(R(C::Incrbyfloat), "incrbyfloat", 3, G::String, "2.6.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::FAST],
        "Increments a numeric key by a floating point amount."),
    spec(R(C::Info), "info", -1, G::Server, "1.0.0", (0, 0, 0),
        &[F::LOADING, F::STALE, F::SENTINEL],
        "Reports server information and statistics."),
    spec(R(C::Keys), "keys", 2, G::Generic, "1.0.0", (0, 0, 0),
        &[F::READONLY],
        "Lists the keys that match a glob pattern."),
    spec(R(C::Lastsave), "lastsave", 1, G::Server, "1.0.0", (0, 0, 0),
        &[F::LOADING, F::STALE, F::FAST],
        "Returns the Unix time of the last successful save."),
    spec(subs(LATENCY_SUBCOMMANDS, None), "latency", -2, G::Server, "2.8.13", (0, 0, 0),
        &[],
        "Subcommands that report latency spikes."),
    spec(R(C::Lcs), "lcs", -3, G::String, "7.0.0", (1, 2, 1),
        &[F::READONLY],
        "Returns the longest common subsequence of two strings, or its length or positions."),
    spec(R(C::Lolwut), "lolwut", -1, G::Server, "5.0.0", (0, 0, 0),
        &[F::READONLY, F::FAST],
        "Displays computer art and the Redis version"),
    spec(subs(MEMORY_SUBCOMMANDS, None), "memory", -2, G::Server, "4.0.0", (0, 0, 0),
        &[],
        "Subcommands that report memory use."),
    spec(R(C::Mget), "mget", -2, G::String, "1.0.0", (1, -1, 1),
        &[F::READONLY, F::FAST],
        "Returns the values of several keys."),
    // Spinel loads no module: LIST is empty, LOAD and LOADEX fail (exec's `resp::module`).
    spec(subs(MODULE_SUBCOMMANDS, None), "module", -2, G::Server, "4.0.0", (0, 0, 0),
        &[],
        "A container for module commands."),
    spec(R(C::Monitor), "monitor", 1, G::Server, "1.0.0", (0, 0, 0),
        &[F::ADMIN, F::NOSCRIPT, F::LOADING, F::STALE],
        "Streams every command the server runs, as it runs."),
    spec(R(C::Move), "move", 3, G::Generic, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::FAST],
        "Moves a key to another database."),
    spec(R(C::Mset), "mset", -3, G::String, "1.0.1", (1, -1, 2),
        &[F::WRITE, F::DENYOOM],
        "Sets several keys at once.").with_rule(ArgRule::PairsFrom(1)),
    spec(R(C::Msetnx), "msetnx", -3, G::String, "1.0.1", (1, -1, 2),
        &[F::WRITE, F::DENYOOM],
        "Sets several keys at once, only if none of them exists.").with_rule(ArgRule::PairsFrom(1)),
    spec(subs(OBJECT_SUBCOMMANDS, None), "object", -2, G::Generic, "2.2.3", (0, 0, 0),
        &[],
        "Subcommands that inspect how a key's value is kept."),
    spec(R(C::Persist), "persist", 2, G::Generic, "2.2.0", (1, 1, 1),
        &[F::WRITE, F::FAST],
        "Removes a key's expiry."),
    spec(R(C::Pexpire), "pexpire", -3, G::Generic, "2.6.0", (1, 1, 1),
        &[F::WRITE, F::FAST],
        "Sets a key's time to live in milliseconds."),
    spec(R(C::Pexpireat), "pexpireat", -3, G::Generic, "2.6.0", (1, 1, 1),
        &[F::WRITE, F::FAST],
        "Sets a key's expiry as a Unix time in milliseconds."),
    spec(R(C::Pexpiretime), "pexpiretime", 2, G::Generic, "7.0.0", (1, 1, 1),
        &[F::READONLY, F::FAST],
        "Returns a key's expiry as a Unix time in milliseconds."),
    spec(R(C::Ping), "ping", -1, G::Connection, "1.0.0", (0, 0, 0),
        &[F::FAST, F::SENTINEL],
        "Checks that the server is alive.").with_rule(ArgRule::AtMost(2)),
    spec(R(C::Psetex), "psetex", 4, G::String, "2.6.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM],
        "Sets a key with a time to live in milliseconds."),
    spec(R(C::Psync), "psync", -3, G::Server, "2.8.0", (0, 0, 0),
        &[F::ADMIN, F::NOSCRIPT, F::NO_ASYNC_LOADING, F::NO_MULTI],
        "A replica asks for the replication stream from an offset (`exec::repl`)."),
    spec(R(C::Pttl), "pttl", 2, G::Generic, "2.6.0", (1, 1, 1),
        &[F::READONLY, F::FAST],
        "Returns a key's time to live in milliseconds."),
    spec(R(C::Quit), "quit", -1, G::Connection, "1.0.0", (0, 0, 0),
        &[F::ALLOW_BUSY, F::NOSCRIPT, F::LOADING, F::STALE, F::FAST, F::NO_AUTH],
        "Closes the connection."),
    spec(R(C::Randomkey), "randomkey", 1, G::Generic, "1.0.0", (0, 0, 0),
        &[F::READONLY, F::TOUCHES_ARBITRARY_KEYS],
        "Returns a random key."),
    spec(R(C::Rename), "rename", 3, G::Generic, "1.0.0", (1, 2, 1),
        &[F::WRITE],
        "Renames a key, replacing any existing target."),
    spec(R(C::Renamenx), "renamenx", 3, G::Generic, "1.0.0", (1, 2, 1),
        &[F::WRITE, F::FAST],
        "Renames a key only if the target does not exist."),
    spec(R(C::Replconf), "replconf", -1, G::Server, "3.0.0", (0, 0, 0),
        &[F::ADMIN, F::NOSCRIPT, F::LOADING, F::STALE, F::ALLOW_BUSY],
        "A replica's settings and acknowledgements on its link to the primary."),
    spec(R(C::Replicaof), "replicaof", 3, G::Server, "5.0.0", (0, 0, 0),
        &[F::ADMIN, F::NOSCRIPT, F::STALE, F::NO_ASYNC_LOADING],
        "Makes the server a replica of another instance, or promotes it to master."),
    spec(R(C::Reset), "reset", 1, G::Connection, "6.2.0", (0, 0, 0),
        &[F::NOSCRIPT, F::LOADING, F::STALE, F::FAST, F::NO_AUTH, F::ALLOW_BUSY],
        "Resets the connection."),
    spec(R(C::Role), "role", 1, G::Server, "2.8.12", (0, 0, 0),
        &[F::NOSCRIPT, F::LOADING, F::STALE, F::FAST, F::SENTINEL],
        "Returns the node's replication role."),
    spec(R(C::Save), "save", 1, G::Server, "1.0.0", (0, 0, 0),
        &[F::ADMIN, F::NOSCRIPT, F::NO_ASYNC_LOADING, F::NO_MULTI],
        "Saves a snapshot of every key, blocking the server."),
    spec(R(C::Scan), "scan", -2, G::Generic, "2.8.0", (0, 0, 0),
        &[F::READONLY, F::TOUCHES_ARBITRARY_KEYS],
        "Iterates over the keys with a cursor."),
    spec(R(C::Select), "select", 2, G::Connection, "1.0.0", (0, 0, 0),
        &[F::LOADING, F::STALE, F::FAST],
        "Selects the connection's database."),
    spec(R(C::Set), "set", -3, G::String, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM],
        "Sets the value of a key, with expiry and condition options."),
    spec(R(C::Setex), "setex", 4, G::String, "2.0.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM],
        "Sets a key with a time to live in seconds."),
    spec(R(C::Setnx), "setnx", 3, G::String, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::FAST],
        "Sets a key only if it does not exist."),
    spec(R(C::Setrange), "setrange", 4, G::String, "2.2.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM],
        "Overwrites part of a string value at an offset."),
    spec(R(C::Shutdown), "shutdown", -1, G::Server, "1.0.0", (0, 0, 0),
        &[F::ADMIN, F::NOSCRIPT, F::LOADING, F::STALE, F::NO_MULTI, F::SENTINEL, F::ALLOW_BUSY],
        "Synchronously saves the database(s) to disk and shuts down the Redis server."),
    // REPLICAOF's name before Redis 5.0, still answered (and listed) by Redis 7.
    spec(R(C::Replicaof), "slaveof", 3, G::Server, "1.0.0", (0, 0, 0),
        &[F::ADMIN, F::NOSCRIPT, F::STALE, F::NO_ASYNC_LOADING],
        "Makes the server a replica of another instance, or promotes it to master."),
    spec(subs(SLOWLOG_SUBCOMMANDS, None), "slowlog", -2, G::Server, "2.2.12", (0, 0, 0),
        &[],
        "Subcommands that read and reset the slow log."),
    spec(R(C::Strlen), "strlen", 2, G::String, "2.2.0", (1, 1, 1),
        &[F::READONLY, F::FAST],
        "Returns the length of a string value."),
    // GETRANGE's name before Redis 2.0, still answered (and listed) by Redis 7.
    spec(R(C::Getrange), "substr", 4, G::String, "1.0.0", (1, 1, 1),
        &[F::READONLY],
        "Returns a substring from a string value."),
    spec(R(C::Swapdb), "swapdb", 3, G::Server, "4.0.0", (0, 0, 0),
        &[F::WRITE, F::FAST],
        "Swaps the keys of two databases."),
    spec(R(C::Sync), "sync", 1, G::Server, "1.0.0", (0, 0, 0),
        &[F::ADMIN, F::NOSCRIPT, F::NO_ASYNC_LOADING, F::NO_MULTI],
        "A replica asks for a full copy and the replication stream (before PSYNC)."),
    spec(R(C::Time), "time", 1, G::Server, "2.6.0", (0, 0, 0),
        &[F::LOADING, F::STALE, F::FAST],
        "Returns the server's clock."),
    spec(R(C::Touch), "touch", -2, G::Generic, "3.2.1", (1, -1, 1),
        &[F::READONLY, F::FAST],
        "Counts the given keys that exist and sets their last access time to now."),
    spec(R(C::Ttl), "ttl", 2, G::Generic, "1.0.0", (1, 1, 1),
        &[F::READONLY, F::FAST],
        "Returns a key's time to live in seconds."),
    spec(R(C::Type), "type", 2, G::Generic, "1.0.0", (1, 1, 1),
        &[F::READONLY, F::FAST],
        "Returns the type of the value stored at a key."),
    spec(R(C::Unlink), "unlink", -2, G::Generic, "4.0.0", (1, -1, 1),
        &[F::WRITE, F::FAST],
        "Deletes keys, freeing their memory in the background."),
    ]
};

/// `COMMAND COUNT`.
pub fn write_command_count(reply: &mut Reply<'_>) {
    reply.integer(command_count() as i64);
}

pub use lookup::{lookup, rename_commands};

#[cfg(test)]
mod tests;
