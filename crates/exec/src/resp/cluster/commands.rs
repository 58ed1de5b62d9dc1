//! The CLUSTER subcommands, and ASKING, READONLY, READWRITE: Redis 7's replies and error
//! texts. MEET, which needs a cluster bus, says so; REPLICATE and FAILOVER are
//! `failover.rs`.

use proto_resp::{
    cluster::{key_slot, SLOTS},
    commands::ClusterId,
    Protocol, SubcommandId,
};

use super::super::{help, Ctx};
use super::topology::Topology;
use super::{dump, migrate, Cluster, DISABLED};

/// Runs ASKING, READONLY, READWRITE, DUMP, RESTORE, RESTORE-ASKING or MIGRATE.
pub(in crate::resp) fn dispatch(ctx: &mut Ctx<'_>, id: ClusterId) {
    match id {
        ClusterId::Dump => dump::dump(ctx),
        ClusterId::Restore | ClusterId::RestoreAsking => dump::restore(ctx),
        ClusterId::Migrate => migrate::migrate(ctx),
        ClusterId::Asking | ClusterId::Readonly | ClusterId::Readwrite => {
            if ctx.shared.redis.cluster.get().is_none() {
                return ctx.error(DISABLED);
            }
            let state = &mut ctx.session.cluster;
            match id {
                ClusterId::Asking => state.asking = true,
                ClusterId::Readonly => state.readonly = true,
                _ => state.readonly = false,
            }
            ctx.reply().ok();
        }
    }
}

/// Runs a CLUSTER subcommand.
pub(in crate::resp) fn dispatch_sub(ctx: &mut Ctx<'_>, sub: SubcommandId) {
    use SubcommandId as S;
    let Some(cluster) = ctx.shared.redis.cluster.get() else {
        return ctx.error(DISABLED);
    };
    match sub {
        S::ClusterHelp => help::reply(ctx, help::CLUSTER),
        S::ClusterKeyslot => {
            let slot = key_slot(ctx.arg(2));
            ctx.reply().integer(i64::from(slot));
        }
        S::ClusterMyid => {
            let id = cluster.topology.read().me().id.clone();
            ctx.reply().bulk(id.as_bytes());
        }
        S::ClusterMyshardid => {
            let topology = cluster.topology.read();
            let shard = topology.nodes[topology.primary_of(topology.myself)].id.clone();
            drop(topology);
            ctx.reply().bulk(shard.as_bytes());
        }
        S::ClusterInfo => info(ctx, cluster),
        S::ClusterNodes => {
            let text = cluster.topology.read().nodes_text();
            ctx.reply().verbatim(b"txt", text.as_bytes());
        }
        S::ClusterSlots => slots(ctx, cluster),
        S::ClusterShards => shards(ctx, cluster),
        S::ClusterLinks => ctx.reply().array(0),
        S::ClusterCountkeysinslot => countkeysinslot(ctx),
        S::ClusterGetkeysinslot => getkeysinslot(ctx),
        S::ClusterReplicas | S::ClusterSlaves => replicas(ctx, cluster),
        S::ClusterCountFailureReports => {
            let known = cluster.topology.read().find(ctx.arg(2)).is_some();
            match known {
                true => ctx.reply().integer(0),
                false => ctx.error(format!("ERR Unknown node {}", lossy(ctx.arg(2)))),
            }
        }
        S::ClusterSetslot => super::admin::setslot(ctx, cluster),
        S::ClusterAddslots | S::ClusterDelslots => {
            super::admin::add_or_del_slots(ctx, cluster, sub)
        }
        S::ClusterAddslotsrange | S::ClusterDelslotsrange => {
            super::admin::add_or_del_ranges(ctx, cluster, sub)
        }
        S::ClusterFlushslots => super::admin::flushslots(ctx, cluster),
        S::ClusterForget => super::admin::forget(ctx, cluster),
        S::ClusterSaveconfig => {
            let topology = cluster.topology.read();
            match cluster.save(&topology) {
                Ok(()) => ctx.reply().ok(),
                Err(why) => ctx.error(format!("ERR error saving the cluster node config: {why}")),
            }
        }
        S::ClusterBumpepoch => super::admin::bumpepoch(ctx, cluster),
        S::ClusterSetConfigEpoch => super::admin::set_config_epoch(ctx, cluster),
        S::ClusterReset => super::admin::reset(ctx, cluster),
        S::ClusterReplicate => super::failover::replicate(ctx, cluster),
        S::ClusterFailover => super::failover::failover(ctx, cluster),
        S::ClusterMeet => ctx.error(NO_BUS),
        _ => unreachable!("only CLUSTER subcommands come here"),
    }
}

/// MEET introduces nodes to each other over Redis's cluster bus.
const NO_BUS: &str = "ERR Spinel has no cluster bus: change the map in every node's \
                      cluster-config-file and send SIGHUP (or use CLUSTER SETSLOT)";

pub(super) fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn info(ctx: &mut Ctx<'_>, cluster: &Cluster) {
    let topology = cluster.topology.read();
    let assigned = topology.slots_assigned();
    let state = if assigned == topology.owner.len() { "ok" } else { "fail" };
    let size = (0..topology.nodes.len())
        .filter(|&at| topology.nodes[at].is_primary() && !topology.ranges_of(at).is_empty())
        .count();
    let text = format!(
        "cluster_state:{state}\r\ncluster_slots_assigned:{assigned}\r\n\
         cluster_slots_ok:{assigned}\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\n\
         cluster_known_nodes:{}\r\ncluster_size:{size}\r\ncluster_current_epoch:{}\r\n\
         cluster_my_epoch:{}\r\ncluster_stats_messages_sent:0\r\n\
         cluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n",
        topology.nodes.len(),
        topology.current_epoch,
        topology.nodes[topology.primary_of(topology.myself)].config_epoch,
    );
    drop(topology);
    ctx.reply().verbatim(b"txt", text.as_bytes());
}

/// One node as CLUSTER SLOTS lists it: ip, port, id, and its hostname if it has one.
fn slots_node(ctx: &mut Ctx<'_>, topology: &Topology, index: usize) {
    let node = &topology.nodes[index];
    let hostname = node.hostname();
    let mut reply = ctx.reply();
    reply.array(4);
    reply.bulk(node.ip.as_bytes());
    reply.integer(i64::from(node.port));
    reply.bulk(node.id.as_bytes());
    let fields = usize::from(!hostname.is_empty());
    match ctx.session.protocol {
        Protocol::Resp3 => ctx.reply().map(fields),
        Protocol::Resp2 => ctx.reply().array(fields * 2),
    }
    if !hostname.is_empty() {
        let mut reply = ctx.reply();
        reply.bulk(b"hostname");
        reply.bulk(hostname.as_bytes());
    }
}

fn slots(ctx: &mut Ctx<'_>, cluster: &Cluster) {
    let topology = cluster.topology.read().clone();
    let ranges = topology.owned_ranges();
    ctx.reply().array(ranges.len());
    // Redis lists the replicas it does not know to be failed (and that replicated
    // something, which a Spinel node cannot tell of another: each replica is fed from its
    // start).
    for (start, end, owner) in ranges {
        let replicas: Vec<usize> = topology
            .replicas_of(owner)
            .filter(|&at| !topology.nodes[at].flags.iter().any(|flag| flag == "fail"))
            .collect();
        let mut reply = ctx.reply();
        reply.array(3 + replicas.len());
        reply.integer(i64::from(start));
        reply.integer(i64::from(end));
        slots_node(ctx, &topology, owner);
        for replica in replicas {
            slots_node(ctx, &topology, replica);
        }
    }
}

/// A map of `fields` pairs in RESP3, a flat array of twice as many in RESP2.
fn map_of(ctx: &mut Ctx<'_>, fields: usize) {
    match ctx.session.protocol {
        Protocol::Resp3 => ctx.reply().map(fields),
        Protocol::Resp2 => ctx.reply().array(fields * 2),
    }
}

fn shards(ctx: &mut Ctx<'_>, cluster: &Cluster) {
    let topology = cluster.topology.read().clone();
    let primaries: Vec<usize> =
        (0..topology.nodes.len()).filter(|&at| topology.nodes[at].is_primary()).collect();
    ctx.reply().array(primaries.len());
    for primary in primaries {
        map_of(ctx, 2);
        ctx.reply().bulk(b"slots");
        let ranges = topology.ranges_of(primary);
        ctx.reply().array(ranges.len() * 2);
        for (start, end) in ranges {
            ctx.reply().integer(i64::from(start));
            ctx.reply().integer(i64::from(end));
        }
        ctx.reply().bulk(b"nodes");
        let members: Vec<usize> =
            std::iter::once(primary).chain(topology.replicas_of(primary)).collect();
        ctx.reply().array(members.len());
        for member in members {
            shard_node(ctx, &topology, member);
        }
    }
}

fn shard_node(ctx: &mut Ctx<'_>, topology: &Topology, index: usize) {
    let node = &topology.nodes[index];
    let hostname = node.hostname();
    // This node knows its own offset; another's comes over a bus Spinel does not have.
    let offset = if index == topology.myself { crate::repl::offset(ctx.shared) } else { 0 };
    map_of(ctx, 7 + usize::from(!hostname.is_empty()));
    let mut reply = ctx.reply();
    reply.bulk(b"id");
    reply.bulk(node.id.as_bytes());
    reply.bulk(b"port");
    reply.integer(i64::from(node.port));
    reply.bulk(b"ip");
    reply.bulk(node.ip.as_bytes());
    reply.bulk(b"endpoint");
    reply.bulk(node.ip.as_bytes());
    if !hostname.is_empty() {
        reply.bulk(b"hostname");
        reply.bulk(hostname.as_bytes());
    }
    reply.bulk(b"role");
    reply.bulk(if node.is_primary() { b"master" } else { b"replica" });
    reply.bulk(b"replication-offset");
    reply.integer(offset as i64);
    reply.bulk(b"health");
    let failed = node.flags.iter().any(|flag| flag == "fail");
    reply.bulk(if failed { b"fail" } else { b"online" });
}

/// An integer argument, or Redis's error for one that is not.
fn integer_arg(ctx: &Ctx<'_>, index: usize) -> Result<i64, &'static str> {
    proto_resp::args::parse_i64(ctx.arg(index)).map_err(|error| error.message())
}

/// The keys of database 0 in `slot`, at most `limit` of them: a walk of the keyspace
/// (there is no per-slot index), which stops once `limit` are found.
pub(super) fn keys_in_slot(shared: &crate::Shared, slot: u16, limit: usize) -> Vec<Vec<u8>> {
    const STEP: usize = 1024;
    let mut found = Vec::new();
    let mut cursor = 0;
    loop {
        cursor = shared.core.store.scan(cursor, STEP, |stored| {
            if let Some((0, key)) = crate::keyspace::decode(stored) {
                if found.len() < limit && key_slot(key) == slot {
                    found.push(key.to_vec());
                }
            }
        });
        if cursor == 0 || found.len() >= limit {
            return found;
        }
    }
}

fn countkeysinslot(ctx: &mut Ctx<'_>) {
    let slot = match integer_arg(ctx, 2) {
        Ok(slot) => slot,
        Err(message) => return ctx.error(message),
    };
    let Some(slot) = u16::try_from(slot).ok().filter(|slot| *slot < SLOTS) else {
        return ctx.error("ERR Invalid slot");
    };
    let count = keys_in_slot(ctx.shared, slot, usize::MAX).len();
    ctx.reply().integer(count as i64);
}

fn getkeysinslot(ctx: &mut Ctx<'_>) {
    let (slot, count) = match (integer_arg(ctx, 2), integer_arg(ctx, 3)) {
        (Ok(slot), Ok(count)) => (slot, count),
        (Err(message), _) | (_, Err(message)) => return ctx.error(message),
    };
    let slot = u16::try_from(slot).ok().filter(|slot| *slot < SLOTS);
    let (Some(slot), Ok(count)) = (slot, usize::try_from(count)) else {
        return ctx.error("ERR Invalid slot or number of keys");
    };
    let keys = keys_in_slot(ctx.shared, slot, count);
    let mut reply = ctx.reply();
    reply.array(keys.len());
    keys.iter().for_each(|key| reply.bulk(key));
}

fn replicas(ctx: &mut Ctx<'_>, cluster: &Cluster) {
    let topology = cluster.topology.read().clone();
    let Some(index) = topology.find(ctx.arg(2)) else {
        return ctx.error(format!("ERR Unknown node {}", lossy(ctx.arg(2))));
    };
    if !topology.nodes[index].is_primary() {
        return ctx.error("ERR The specified node is not a master");
    }
    let lines: Vec<String> = topology.replicas_of(index).map(|at| topology.node_line(at)).collect();
    let mut reply = ctx.reply();
    reply.array(lines.len());
    lines.iter().for_each(|line| reply.bulk(line.as_bytes()));
}

/// The primary this node replicates in the cluster map, as (ip, port), while its
/// replication link does not follow it yet (INFO and ROLE show the link once it does).
pub(in crate::resp) fn replica_of(shared: &crate::Shared) -> Option<(String, u16)> {
    if crate::repl::link::role_of(shared).is_some() {
        return None;
    }
    let topology = shared.redis.cluster.get()?.topology.read();
    let primary = topology.primary_of(topology.myself);
    let node = &topology.nodes[primary];
    (primary != topology.myself).then(|| (node.ip.clone(), node.port))
}

/// ROLE: the replication link's, or, for a replica in the map whose link has not started
/// yet, `slave` with its primary, the link state `connect` and offset -1, as Redis shows a
/// replica not yet connected.
pub(in crate::resp) fn role(ctx: &mut Ctx<'_>) {
    let Some((ip, port)) = replica_of(ctx.shared) else {
        return super::super::replication::role(ctx);
    };
    let mut reply = ctx.reply();
    reply.array(5);
    reply.bulk(b"slave");
    reply.bulk(ip.as_bytes());
    reply.integer(i64::from(port));
    reply.bulk(b"connect");
    reply.integer(-1);
}
