//! The containers' subcommand tables (Redis 7's `container|sub` declarations), each sorted
//! by name.

use super::{ArgRule, SubcommandId, SubcommandSpec};

const fn sub(id: SubcommandId, name: &'static str, arity: i32) -> SubcommandSpec {
    SubcommandSpec { id, name, arity, rule: ArgRule::None }
}

/// `ACL` subcommands (Redis 7's `acl|*`), sorted by name.
pub static ACL_SUBCOMMANDS: &[SubcommandSpec] = {
    use SubcommandId as S;
    &[
        sub(S::AclCat, "acl|cat", -2),
        sub(S::AclDeluser, "acl|deluser", -3),
        sub(S::AclDryrun, "acl|dryrun", -4),
        sub(S::AclGenpass, "acl|genpass", -2),
        sub(S::AclGetuser, "acl|getuser", 3),
        sub(S::AclHelp, "acl|help", 2),
        sub(S::AclList, "acl|list", 2),
        sub(S::AclLoad, "acl|load", 2),
        sub(S::AclLog, "acl|log", -2),
        sub(S::AclSave, "acl|save", 2),
        sub(S::AclSetuser, "acl|setuser", -3),
        sub(S::AclUsers, "acl|users", 2),
        sub(S::AclWhoami, "acl|whoami", 2),
    ]
};

/// `CLIENT` subcommands (Redis 7's `client|*` declarations), sorted by name.
pub static CLIENT_SUBCOMMANDS: &[SubcommandSpec] = {
    use SubcommandId as S;
    &[
        sub(S::ClientCaching, "client|caching", 3),
        sub(S::ClientGetname, "client|getname", 2),
        sub(S::ClientGetredir, "client|getredir", 2),
        sub(S::ClientHelp, "client|help", 2),
        sub(S::ClientId, "client|id", 2),
        sub(S::ClientInfo, "client|info", 2),
        sub(S::ClientKill, "client|kill", -3),
        sub(S::ClientList, "client|list", -2),
        sub(S::ClientNoEvict, "client|no-evict", 3),
        sub(S::ClientNoTouch, "client|no-touch", 3),
        sub(S::ClientPause, "client|pause", -3),
        sub(S::ClientReply, "client|reply", 3),
        sub(S::ClientSetinfo, "client|setinfo", 4),
        sub(S::ClientSetname, "client|setname", 3),
        sub(S::ClientTracking, "client|tracking", -3),
        sub(S::ClientTrackinginfo, "client|trackinginfo", 2),
        sub(S::ClientUnblock, "client|unblock", -3),
        sub(S::ClientUnpause, "client|unpause", 2),
    ]
};

/// `CLUSTER` subcommands (Redis 7's `cluster|*`), sorted by name.
pub static CLUSTER_SUBCOMMANDS: &[SubcommandSpec] = {
    use SubcommandId as S;
    &[
        sub(S::ClusterAddslots, "cluster|addslots", -3),
        sub(S::ClusterAddslotsrange, "cluster|addslotsrange", -4),
        sub(S::ClusterBumpepoch, "cluster|bumpepoch", 2),
        sub(S::ClusterCountFailureReports, "cluster|count-failure-reports", 3),
        sub(S::ClusterCountkeysinslot, "cluster|countkeysinslot", 3),
        sub(S::ClusterDelslots, "cluster|delslots", -3),
        sub(S::ClusterDelslotsrange, "cluster|delslotsrange", -4),
        sub(S::ClusterFailover, "cluster|failover", -2),
        sub(S::ClusterFlushslots, "cluster|flushslots", 2),
        sub(S::ClusterForget, "cluster|forget", 3),
        sub(S::ClusterGetkeysinslot, "cluster|getkeysinslot", 4),
        sub(S::ClusterHelp, "cluster|help", 2),
        sub(S::ClusterInfo, "cluster|info", 2),
        sub(S::ClusterKeyslot, "cluster|keyslot", 3),
        sub(S::ClusterLinks, "cluster|links", 2),
        sub(S::ClusterMeet, "cluster|meet", -4),
        sub(S::ClusterMyid, "cluster|myid", 2),
        sub(S::ClusterMyshardid, "cluster|myshardid", 2),
        sub(S::ClusterNodes, "cluster|nodes", 2),
        sub(S::ClusterReplicas, "cluster|replicas", 3),
        sub(S::ClusterReplicate, "cluster|replicate", 3),
        sub(S::ClusterReset, "cluster|reset", -2),
        sub(S::ClusterSaveconfig, "cluster|saveconfig", 2),
        sub(S::ClusterSetConfigEpoch, "cluster|set-config-epoch", 3),
        sub(S::ClusterSetslot, "cluster|setslot", -4),
        sub(S::ClusterShards, "cluster|shards", 2),
        sub(S::ClusterSlaves, "cluster|slaves", 3),
        sub(S::ClusterSlots, "cluster|slots", 2),
    ]
};

/// `COMMAND` subcommands (Redis 7's `command|*`), sorted by name.
pub static COMMAND_SUBCOMMANDS: &[SubcommandSpec] = {
    use SubcommandId as S;
    &[
        sub(S::CommandCount, "command|count", 2),
        sub(S::CommandDocs, "command|docs", -2),
        sub(S::CommandGetkeys, "command|getkeys", -4),
        sub(S::CommandGetkeysandflags, "command|getkeysandflags", -4),
        sub(S::CommandHelp, "command|help", 2),
        sub(S::CommandInfo, "command|info", -2),
        sub(S::CommandList, "command|list", -2),
    ]
};

/// `CONFIG` subcommands (Redis 7's `config|*`), sorted by name.
pub static CONFIG_SUBCOMMANDS: &[SubcommandSpec] = {
    use SubcommandId as S;
    &[
        sub(S::ConfigGet, "config|get", -3),
        sub(S::ConfigHelp, "config|help", 2),
        sub(S::ConfigResetstat, "config|resetstat", 2),
        sub(S::ConfigRewrite, "config|rewrite", 2),
        SubcommandSpec { rule: ArgRule::PairsFrom(2), ..sub(S::ConfigSet, "config|set", -4) },
    ]
};

/// `MEMORY` subcommands (Redis 7's `memory|*`), sorted by name.
pub static MEMORY_SUBCOMMANDS: &[SubcommandSpec] = {
    use SubcommandId as S;
    &[
        sub(S::MemoryDoctor, "memory|doctor", 2),
        sub(S::MemoryHelp, "memory|help", 2),
        sub(S::MemoryMallocStats, "memory|malloc-stats", 2),
        sub(S::MemoryPurge, "memory|purge", 2),
        sub(S::MemoryStats, "memory|stats", 2),
        sub(S::MemoryUsage, "memory|usage", -3),
    ]
};

/// `OBJECT` subcommands (Redis 7's `object|*`), sorted by name.
pub static OBJECT_SUBCOMMANDS: &[SubcommandSpec] = {
    use SubcommandId as S;
    &[
        sub(S::ObjectEncoding, "object|encoding", 3),
        sub(S::ObjectFreq, "object|freq", 3),
        sub(S::ObjectHelp, "object|help", 2),
        sub(S::ObjectIdletime, "object|idletime", 3),
        sub(S::ObjectRefcount, "object|refcount", 3),
    ]
};

/// `LATENCY` subcommands (Redis 7's `latency|*`), sorted by name.
pub static LATENCY_SUBCOMMANDS: &[SubcommandSpec] = {
    use SubcommandId as S;
    &[
        sub(S::LatencyDoctor, "latency|doctor", 2),
        sub(S::LatencyHelp, "latency|help", 2),
        sub(S::LatencyHistogram, "latency|histogram", -2),
        sub(S::LatencyHistory, "latency|history", 3),
        sub(S::LatencyLatest, "latency|latest", 2),
        sub(S::LatencyReset, "latency|reset", -2),
    ]
};

/// `PUBSUB` subcommands (Redis 7's `pubsub|*`), sorted by name.
pub static PUBSUB_SUBCOMMANDS: &[SubcommandSpec] = {
    use SubcommandId as S;
    &[
        sub(S::PubsubChannels, "pubsub|channels", -2),
        sub(S::PubsubHelp, "pubsub|help", 2),
        sub(S::PubsubNumpat, "pubsub|numpat", 2),
        sub(S::PubsubNumsub, "pubsub|numsub", -2),
        sub(S::PubsubShardchannels, "pubsub|shardchannels", -2),
        sub(S::PubsubShardnumsub, "pubsub|shardnumsub", -2),
    ]
};

/// `SLOWLOG` subcommands (Redis 7's `slowlog|*`), sorted by name.
pub static SLOWLOG_SUBCOMMANDS: &[SubcommandSpec] = {
    use SubcommandId as S;
    &[
        sub(S::SlowlogGet, "slowlog|get", -2),
        sub(S::SlowlogHelp, "slowlog|help", 2),
        sub(S::SlowlogLen, "slowlog|len", 2),
        sub(S::SlowlogReset, "slowlog|reset", 2),
    ]
};

/// `MODULE` subcommands (Redis 7's `module|*`), sorted by name.
pub static MODULE_SUBCOMMANDS: &[SubcommandSpec] = {
    use SubcommandId as S;
    &[
        sub(S::ModuleHelp, "module|help", 2),
        sub(S::ModuleList, "module|list", 2),
        sub(S::ModuleLoad, "module|load", -3),
        sub(S::ModuleLoadex, "module|loadex", -3),
        sub(S::ModuleUnload, "module|unload", 3),
    ]
};

/// `FUNCTION` subcommands (Redis 7's `function|*`), sorted by name.
pub static FUNCTION_SUBCOMMANDS: &[SubcommandSpec] = {
    use SubcommandId as S;
    &[
        sub(S::FunctionDelete, "function|delete", 3),
        sub(S::FunctionDump, "function|dump", 2),
        sub(S::FunctionFlush, "function|flush", -2),
        sub(S::FunctionHelp, "function|help", 2),
        sub(S::FunctionKill, "function|kill", 2),
        sub(S::FunctionList, "function|list", -2),
        sub(S::FunctionLoad, "function|load", -3),
        sub(S::FunctionRestore, "function|restore", -3),
        sub(S::FunctionStats, "function|stats", 2),
    ]
};

/// `SCRIPT` subcommands (Redis 7's `script|*`), sorted by name.
pub static SCRIPT_SUBCOMMANDS: &[SubcommandSpec] = {
    use SubcommandId as S;
    &[
        sub(S::ScriptExists, "script|exists", -3),
        sub(S::ScriptFlush, "script|flush", -2),
        sub(S::ScriptHelp, "script|help", 2),
        sub(S::ScriptKill, "script|kill", 2),
        sub(S::ScriptLoad, "script|load", 3),
    ]
};

/// `XGROUP` subcommands (Redis 7's `xgroup|*`), sorted by name.
pub static XGROUP_SUBCOMMANDS: &[SubcommandSpec] = {
    use SubcommandId as S;
    &[
        sub(S::XgroupCreate, "xgroup|create", -5),
        sub(S::XgroupCreateconsumer, "xgroup|createconsumer", 5),
        sub(S::XgroupDelconsumer, "xgroup|delconsumer", 5),
        sub(S::XgroupDestroy, "xgroup|destroy", 4),
        sub(S::XgroupHelp, "xgroup|help", 2),
        sub(S::XgroupSetid, "xgroup|setid", -5),
    ]
};

/// `XINFO` subcommands (Redis 7's `xinfo|*`), sorted by name.
pub static XINFO_SUBCOMMANDS: &[SubcommandSpec] = {
    use SubcommandId as S;
    &[
        sub(S::XinfoConsumers, "xinfo|consumers", 4),
        sub(S::XinfoGroups, "xinfo|groups", 3),
        sub(S::XinfoHelp, "xinfo|help", 2),
        sub(S::XinfoStream, "xinfo|stream", -3),
    ]
};
