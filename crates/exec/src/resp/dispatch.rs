//! The dispatcher: one arm per command and subcommand id, each to its handler module.

use proto_resp::{CommandId, Route, SubcommandId};

use super::{
    acl, auth, bitmap, blocking, client_admin, cluster, config, config_rewrite, connection, debug,
    geo, hash, help, incr, info, keys, latencies, lcs, list, lolwut, memory, module, monitor,
    object, pause, persist, pubsub, replication, script, server, set, slowlog, sort, stream,
    strings, tracking, ttl, tx, zset, Ctx,
};
use crate::Flow;

/// One arm per command and subcommand, no fallback: a new id in proto-resp's table does
/// not compile until it has a handler. Arity was checked by `route`, so no handler checks
/// it again.
pub(super) fn dispatch(ctx: &mut Ctx<'_>, route: Route) -> Flow {
    use {CommandId as C, SubcommandId as S};
    match route {
        Route::Command(id) => match id {
            C::Hashes(id) => hash::dispatch(ctx, id),
            C::Lists(id) => list::dispatch(ctx, id),
            C::Sets(id) => set::dispatch(ctx, id),
            C::SortedSets(id) => zset::dispatch(ctx, id),
            C::Bitmaps(id) => bitmap::dispatch(ctx, id),
            C::Transactions(id) => tx::dispatch(ctx, id),
            C::Pubsub(id) => pubsub::dispatch(ctx, id),
            C::Blocking(id) => return blocking::dispatch(ctx, id),
            C::Scripting(id) => return script::dispatch(ctx, id),
            C::Cluster(id) => cluster::dispatch(ctx, id),
            C::Sort(id) => sort::dispatch(ctx, id),
            C::Geo(id) => geo::dispatch(ctx, id),
            C::Streams(id) => return stream::dispatch(ctx, id),
            C::Quit => return connection::quit(ctx),
            C::Monitor => monitor::monitor(ctx),
            C::Ping => connection::ping(ctx),
            C::Echo => connection::echo(ctx),
            C::Hello => connection::hello(ctx),
            C::Select => connection::select(ctx),
            C::Auth => auth::auth(ctx),
            C::Save => persist::save(ctx),
            C::Shutdown => return persist::shutdown(ctx),
            C::Bgsave => persist::bgsave(ctx),
            C::Lastsave => persist::lastsave(ctx),
            C::Lcs => lcs::lcs(ctx),
            C::Lolwut => lolwut::lolwut(ctx),
            C::Debug => debug::debug(ctx),
            C::Replicaof => replication::replicaof(ctx),
            C::Psync => replication::psync(ctx),
            C::Sync => replication::sync(ctx),
            C::Replconf => replication::replconf(ctx),
            C::Failover => replication::failover(ctx),
            C::Reset => connection::reset(ctx),
            C::Role if ctx.shared.redis.cluster.get().is_some() => cluster::role(ctx),
            C::Role => replication::role(ctx),
            C::Info => info::info(ctx),
            C::Dbsize => server::dbsize(ctx),
            C::Flushdb => server::flushdb(ctx),
            C::Flushall => server::flushall(ctx),
            C::Time => server::time(ctx),
            C::Get => strings::get(ctx),
            C::Set => strings::set(ctx),
            C::Setnx => strings::setnx(ctx),
            C::Setex => strings::setex(ctx, ttl::Unit::Seconds),
            C::Psetex => strings::setex(ctx, ttl::Unit::Milliseconds),
            C::Getset => strings::getset(ctx),
            C::Getdel => strings::getdel(ctx),
            C::Getex => strings::getex(ctx),
            C::Mget => strings::mget(ctx),
            C::Mset => strings::mset(ctx),
            C::Msetnx => strings::msetnx(ctx),
            C::Append => strings::append(ctx),
            C::Strlen => strings::strlen(ctx),
            C::Getrange => strings::getrange(ctx),
            C::Setrange => strings::setrange(ctx),
            C::Incr => incr::incr(ctx, incr::Delta::One),
            C::Decr => incr::incr(ctx, incr::Delta::MinusOne),
            C::Incrby => incr::incr(ctx, incr::Delta::By),
            C::Decrby => incr::incr(ctx, incr::Delta::NegatedBy),
            C::Incrbyfloat => incr::incrbyfloat(ctx),
            C::Del | C::Unlink => keys::del(ctx),
            C::Exists => keys::exists(ctx),
            C::Touch => keys::touch(ctx),
            C::Type => keys::key_type(ctx),
            C::Expire => keys::expire(ctx, ttl::Unit::Seconds, ttl::Base::Now),
            C::Pexpire => keys::expire(ctx, ttl::Unit::Milliseconds, ttl::Base::Now),
            C::Expireat => keys::expire(ctx, ttl::Unit::Seconds, ttl::Base::Epoch),
            C::Pexpireat => keys::expire(ctx, ttl::Unit::Milliseconds, ttl::Base::Epoch),
            C::Ttl => keys::ttl(ctx, ttl::Unit::Seconds, ttl::Report::Remaining),
            C::Pttl => keys::ttl(ctx, ttl::Unit::Milliseconds, ttl::Report::Remaining),
            C::Expiretime => keys::ttl(ctx, ttl::Unit::Seconds, ttl::Report::Absolute),
            C::Pexpiretime => keys::ttl(ctx, ttl::Unit::Milliseconds, ttl::Report::Absolute),
            C::Persist => keys::persist(ctx),
            C::Keys => keys::keys(ctx),
            C::Scan => keys::scan(ctx),
            C::Randomkey => keys::randomkey(ctx),
            C::Rename => keys::rename(ctx, keys::Overwrite::Yes),
            C::Renamenx => keys::rename(ctx, keys::Overwrite::No),
            C::Copy => keys::copy(ctx),
            C::Swapdb => object::swapdb(ctx),
            C::Move => keys::move_to_db(ctx),
        },
        Route::Subcommand(sub) => match sub {
            #[rustfmt::skip]
            S::XgroupCreate | S::XgroupCreateconsumer | S::XgroupDelconsumer | S::XgroupDestroy | S::XgroupHelp | S::XgroupSetid | S::XinfoConsumers | S::XinfoGroups | S::XinfoHelp | S::XinfoStream => stream::dispatch_sub(ctx, sub),
            S::ClientId => connection::client_id(ctx),
            S::ClientKill => return client_admin::kill(ctx),
            S::ClientNoEvict => client_admin::no_evict(ctx),
            S::ClientNoTouch => client_admin::no_touch(ctx),
            S::ClientReply => client_admin::reply_mode(ctx),
            S::ClientPause => pause::pause(ctx),
            S::ClientUnpause => pause::unpause(ctx),
            S::ClientHelp => client_admin::help(ctx),
            S::ClientGetname => connection::client_getname(ctx),
            S::ClientSetname => connection::client_setname(ctx),
            S::ClientList => connection::client_list(ctx),
            S::ClientInfo => connection::client_info(ctx),
            S::ClientSetinfo => connection::client_setinfo(ctx),
            S::ClientUnblock => blocking::client_unblock(ctx),
            S::ClientTracking => tracking::client_tracking(ctx),
            S::ClientCaching => tracking::client_caching(ctx),
            S::ClientGetredir => tracking::client_getredir(ctx),
            S::ClientTrackinginfo => tracking::client_trackinginfo(ctx),
            #[rustfmt::skip]
            S::ClusterAddslots | S::ClusterAddslotsrange | S::ClusterBumpepoch |
            S::ClusterCountFailureReports | S::ClusterCountkeysinslot | S::ClusterDelslots |
            S::ClusterDelslotsrange | S::ClusterFailover | S::ClusterFlushslots | S::ClusterForget |
            S::ClusterGetkeysinslot | S::ClusterHelp | S::ClusterInfo | S::ClusterKeyslot | S::ClusterLinks |
            S::ClusterMeet | S::ClusterMyid | S::ClusterMyshardid | S::ClusterNodes | S::ClusterReplicas |
            S::ClusterReplicate | S::ClusterReset | S::ClusterSaveconfig | S::ClusterSetConfigEpoch |
            S::ClusterSetslot | S::ClusterShards | S::ClusterSlaves | S::ClusterSlots
            => cluster::dispatch_sub(ctx, sub),
            S::CommandCount => server::command_count(ctx),
            S::CommandInfo => server::command_info(ctx),
            S::CommandDocs => server::command_docs(ctx),
            S::CommandList => server::command_list(ctx),
            S::CommandGetkeys => server::command_getkeys(ctx, false),
            S::CommandGetkeysandflags => server::command_getkeys(ctx, true),
            S::CommandHelp => server::command_help(ctx),
            S::ConfigGet => config::config_get(ctx),
            S::ConfigHelp => help::reply(ctx, help::CONFIG),
            S::SlowlogHelp => help::reply(ctx, help::SLOWLOG),
            S::AclHelp => help::reply(ctx, help::ACL),
            S::PubsubChannels => pubsub::channels(ctx, false),
            S::PubsubShardchannels => pubsub::channels(ctx, true),
            S::PubsubNumsub => pubsub::numsub(ctx, false),
            S::PubsubShardnumsub => pubsub::numsub(ctx, true),
            S::PubsubNumpat => pubsub::numpat(ctx),
            S::PubsubHelp => pubsub::help(ctx),
            S::ScriptExists
            | S::ScriptFlush
            | S::ScriptHelp
            | S::ScriptKill
            | S::ScriptLoad
            | S::FunctionDelete
            | S::FunctionDump
            | S::FunctionFlush
            | S::FunctionHelp
            | S::FunctionKill
            | S::FunctionList
            | S::FunctionLoad
            | S::FunctionRestore
            | S::FunctionStats => script::dispatch_sub(ctx, sub),
            S::LatencyHelp | S::LatencyLatest | S::LatencyHistory => latencies::run(ctx, sub),
            S::LatencyReset | S::LatencyHistogram | S::LatencyDoctor => latencies::run(ctx, sub),
            S::SlowlogGet => slowlog::get(ctx),
            S::SlowlogLen => slowlog::len(ctx),
            S::SlowlogReset => slowlog::reset(ctx),
            S::ModuleHelp => help::reply(ctx, help::MODULE),
            S::ModuleList => module::list(ctx),
            S::ModuleLoad | S::ModuleLoadex => module::load(ctx),
            S::ModuleUnload => module::unload(ctx),
            S::AclCat => acl::commands::cat(ctx),
            S::AclDeluser => acl::commands::deluser(ctx),
            S::AclDryrun => acl::commands::dryrun(ctx),
            S::AclGenpass => acl::commands::genpass(ctx),
            S::AclGetuser => acl::commands::getuser(ctx),
            S::AclList => acl::commands::list(ctx),
            S::AclLoad => acl::commands::load(ctx),
            S::AclLog => acl::commands::log(ctx),
            S::AclSave => acl::commands::save(ctx),
            S::AclSetuser => acl::commands::setuser(ctx),
            S::AclUsers => acl::commands::users(ctx),
            S::AclWhoami => acl::commands::whoami(ctx),
            S::ConfigSet => config::config_set(ctx),
            S::ConfigResetstat => config::config_resetstat(ctx),
            S::ConfigRewrite => config_rewrite::config_rewrite(ctx),
            S::MemoryDoctor => memory::doctor(ctx),
            S::MemoryHelp => memory::help(ctx),
            S::MemoryMallocStats => memory::malloc_stats(ctx),
            S::MemoryPurge => ctx.reply().ok(),
            S::MemoryStats => memory::stats(ctx),
            S::MemoryUsage => memory::usage(ctx),
            S::ObjectEncoding => object::encoding(ctx),
            S::ObjectFreq => object::freq(ctx),
            S::ObjectHelp => object::help(ctx),
            S::ObjectIdletime => object::idletime(ctx),
            S::ObjectRefcount => object::refcount(ctx),
        },
    }
    Flow::Continue
}
