//! A cluster replica is fed by its primary, and CLUSTER FAILOVER makes it the primary.
//!
//! The replication link (`crate::repl::link`) follows the primary the map names: started
//! when the map makes this node a replica (nodes.conf, CLUSTER REPLICATE, a failover
//! elsewhere), moved when the primary changes, stopped (a promotion that keeps the
//! replication history) when the node becomes a primary ([`sync_link`]).
//!
//! CLUSTER FAILOVER, without a cluster bus:
//! - default: the replica asks its primary to hold writes (`CLIENT PAUSE 10000 WRITE`, as
//!   Redis's primary pauses for twice its 5 s manual-failover timeout), reads the
//!   primary's `master_repl_offset` until its own offset equals it (5 s at most, else the
//!   failover is given up and the primary unpaused), then takes over;
//! - FORCE: takes over at once, with a new config epoch (Redis's election, which Spinel
//!   has no majority to hold);
//! - TAKEOVER: takes over at once, bumping its epoch without consensus (as Redis does).
//!
//! Taking over: this node stops following, becomes a primary, and owns its old primary's
//! slots under the new epoch. The others learn it from this node's CLUSTER NODES within
//! a second (`gossip.rs`): they give it the slots, and the old primary, which lost every
//! slot to its replica, becomes that replica's replica, lifts its pause and follows it.

use std::sync::{atomic::Ordering::Relaxed, Arc, Weak};
use std::time::{Duration, Instant};

use super::super::Ctx;
use super::commands::lossy;
use super::topology::Topology;
use super::Cluster;
use crate::Shared;

/// Redis's CLUSTER_MF_TIMEOUT: how long a manual failover waits for the offsets to agree.
const MANUAL_FAILOVER_TIMEOUT: Duration = Duration::from_millis(5000);
/// How long the primary holds writes meanwhile (Redis: twice the timeout).
const PRIMARY_PAUSE_MS: &[u8] = b"10000";

/// CLUSTER REPLICATE <node-id>.
pub(super) fn replicate(ctx: &mut Ctx<'_>, cluster: &Cluster) {
    let id = ctx.arg(2);
    let has_keys = has_keys_in_db0(ctx.shared);
    let outcome = cluster.change(|topology| {
        let Some(primary) = topology.find(id) else {
            return Err(format!("ERR Unknown node {}", lossy(id)));
        };
        if primary == topology.myself {
            return Err("ERR Can't replicate myself".into());
        }
        if topology.nodes[primary].is_replica() {
            return Err("ERR I can only replicate a master, not a replica.".into());
        }
        let myself = topology.myself;
        if topology.me().is_primary() && (topology.slot_count(myself) != 0 || has_keys) {
            return Err(
                "ERR To set a master the node must be empty and without assigned slots.".into()
            );
        }
        topology.set_replica_of(myself, primary);
        Ok(())
    });
    match outcome {
        Ok(()) => {
            if let Some(shared) = upgrade(ctx.shared) {
                sync_link(&shared, cluster);
            }
            ctx.reply().ok();
        }
        Err(message) => ctx.error(message),
    }
}

/// Whether database 0 holds a key (Redis's test for REPLICATE): a walk that stops at the
/// first (memcached items, which Redis does not have, do not count).
fn has_keys_in_db0(shared: &Shared) -> bool {
    const STEP: usize = 1024;
    let store = &shared.core.store;
    if store.is_empty() {
        return false;
    }
    let (mut cursor, mut found) = (0, false);
    loop {
        cursor = store.scan(cursor, STEP, |stored| {
            found |= matches!(crate::keyspace::decode(stored), Some((0, _)));
        });
        if found || cursor == 0 {
            return found;
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Default,
    Force,
    Takeover,
}

/// CLUSTER FAILOVER [FORCE|TAKEOVER].
pub(super) fn failover(ctx: &mut Ctx<'_>, cluster: &Cluster) {
    let mode = match ctx.argc() {
        2 => Mode::Default,
        3 if ctx.arg(2).eq_ignore_ascii_case(b"force") => Mode::Force,
        3 if ctx.arg(2).eq_ignore_ascii_case(b"takeover") => Mode::Takeover,
        3 => return ctx.error(proto_resp::error::SYNTAX),
        _ => {
            return ctx.error(format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLUSTER HELP.",
                lossy(ctx.arg(1))
            ))
        }
    };
    let primary = {
        let topology = cluster.topology.read();
        if topology.me().is_primary() {
            return ctx.error("ERR You should send CLUSTER FAILOVER to a replica");
        }
        let found = topology.me().primary.as_deref().and_then(|id| topology.find(id.as_bytes()));
        let Some(primary) = found else {
            return ctx.error("ERR I'm a replica but my master is unknown to me");
        };
        topology.nodes[primary].clone()
    };
    let failed = primary.flags.iter().any(|flag| flag == "fail");
    if mode == Mode::Default && (failed || !crate::repl::link::is_up(ctx.shared)) {
        return ctx.error("ERR Master is down or failed, please use CLUSTER FAILOVER FORCE");
    }
    let Some(shared) = upgrade(ctx.shared) else {
        return ctx.error("ERR the server is stopping");
    };
    let outcome = match mode {
        Mode::Default => {
            let address = primary_address(&primary);
            start_manual(&shared, cluster, primary.id, address)
        }
        Mode::Force => take_over(&shared, cluster, &primary.id, Epoch::Election),
        Mode::Takeover => take_over(&shared, cluster, &primary.id, Epoch::WithoutConsensus),
    };
    match outcome {
        Ok(()) => ctx.reply().ok(),
        Err(message) => ctx.error(message),
    }
}

fn upgrade(shared: &Shared) -> Option<Arc<Shared>> {
    shared.this.get().and_then(Weak::upgrade)
}

fn primary_address(node: &super::topology::Node) -> String {
    format!("{}:{}", node.ip, node.port)
}

/// How the new primary's config epoch is chosen.
#[derive(Clone, Copy)]
enum Epoch {
    /// Above every epoch known, as a won election gives (default and FORCE).
    Election,
    /// Redis's `clusterBumpConfigEpochWithoutConsensus` (TAKEOVER).
    WithoutConsensus,
}

/// This node, a replica of `primary_id`, becomes the primary of its slots.
fn take_over(
    shared: &Arc<Shared>,
    cluster: &Cluster,
    primary_id: &str,
    epoch: Epoch,
) -> Result<(), String> {
    let still_replica = |topology: &Topology| {
        topology.me().is_replica() && topology.me().primary.as_deref() == Some(primary_id)
    };
    if !still_replica(&cluster.topology.read()) {
        return Err("ERR the node is no longer a replica of that primary".into());
    }
    // The link first: until the map changes, writes are sent (MOVED) to the old primary
    // rather than refused as a replica's.
    crate::repl::link::stop_following(shared);
    let changed = cluster.change(|topology| {
        if !still_replica(topology) {
            return Err("ERR the node is no longer a replica of that primary".into());
        }
        let old = topology.find(primary_id.as_bytes()).ok_or("ERR the primary is unknown")?;
        let myself = topology.myself;
        match epoch {
            Epoch::Election => {
                let highest = topology.nodes.iter().map(|node| node.config_epoch).max();
                topology.current_epoch = topology.current_epoch.max(highest.unwrap_or(0)) + 1;
                topology.nodes[myself].config_epoch = topology.current_epoch;
            }
            Epoch::WithoutConsensus => {
                super::admin::bump_epoch(topology);
            }
        }
        topology.set_primary(myself);
        for owner in topology.owner.iter_mut().filter(|owner| **owner == Some(old)) {
            *owner = Some(myself);
        }
        Ok(())
    });
    // Whatever the map says now, the link follows it.
    sync_link(shared, cluster);
    changed
}

/// Default mode: a thread holds the primary's writes, waits for the offsets to agree,
/// then takes over; the command answers OK at once, as Redis's does.
fn start_manual(
    shared: &Arc<Shared>,
    cluster: &Cluster,
    primary_id: String,
    address: String,
) -> Result<(), String> {
    if cluster.manual_failover.swap(true, Relaxed) {
        return Ok(()); // One is under way already; it goes on.
    }
    let shared = Arc::clone(shared);
    let spawned =
        std::thread::Builder::new().name("spinel-cluster-failover".into()).spawn(move || {
            let Some(cluster) = shared.redis.cluster.get() else { return };
            if let Err(why) = manual(&shared, cluster, &primary_id, &address) {
                eprintln!("spinel: manual failover given up: {why}");
            }
            cluster.manual_failover.store(false, Relaxed);
        });
    spawned.map(drop).map_err(|e| {
        cluster.manual_failover.store(false, Relaxed);
        format!("ERR cannot start the failover: {e}")
    })
}

fn manual(
    shared: &Arc<Shared>,
    cluster: &Cluster,
    primary_id: &str,
    address: &str,
) -> Result<(), String> {
    let mut link = super::follow::connect(address, shared)?;
    super::follow::send(&mut link, &[b"CLIENT", b"PAUSE", PRIMARY_PAUSE_MS, b"WRITE"])?;
    let paused = super::follow::read_line(&mut link)?;
    if paused != "+OK" {
        return Err(format!("the primary answered CLIENT PAUSE with {paused}"));
    }
    let deadline = Instant::now() + MANUAL_FAILOVER_TIMEOUT;
    // A write that was running when the pause began may still reach the stream: the
    // offsets must agree twice in a row, a poll apart.
    let mut agreed_once = false;
    loop {
        super::follow::send(&mut link, &[b"INFO", b"replication"])?;
        let info = super::follow::read_bulk(&mut link)?;
        let wanted = info
            .lines()
            .find_map(|line| line.strip_prefix("master_repl_offset:"))
            .and_then(|offset| offset.trim().parse::<u64>().ok())
            .ok_or("the primary's INFO has no master_repl_offset")?;
        let agreed = crate::repl::offset(shared) == wanted;
        if agreed && agreed_once {
            return take_over(shared, cluster, primary_id, Epoch::Election);
        }
        agreed_once = agreed;
        if Instant::now() >= deadline {
            // As Redis: the failover is aborted and the primary writes again.
            let _ = super::follow::send(&mut link, &[b"CLIENT", b"UNPAUSE"]);
            let _ = super::follow::read_line(&mut link);
            return Err(format!("the offsets did not agree within {MANUAL_FAILOVER_TIMEOUT:?}"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Moves the replication link to the primary the map names, or stops it (a promotion)
/// when the map makes this node a primary. A primary turned replica lifts the pause its
/// replica's CLUSTER FAILOVER set, as Redis's primary ends its failover pause then.
pub(super) fn sync_link(shared: &Arc<Shared>, cluster: &Cluster) {
    let wanted = {
        let topology = cluster.topology.read();
        let primary = topology.primary_of(topology.myself);
        match primary == topology.myself {
            true => None,
            false => Some((topology.nodes[primary].ip.clone(), topology.nodes[primary].port)),
        }
    };
    let following = crate::repl::link::role_of(shared).map(|(host, port, _, _)| (host, port));
    match wanted {
        Some((ip, port)) if ip.is_empty() || port == 0 => {} // No address to reach it at.
        Some(primary) if following.as_ref() != Some(&primary) => {
            if following.is_none() && shared.redis.pause.is_set() {
                crate::resp::pause::lift(shared);
            }
            crate::repl::link::follow(shared, primary.0, primary.1);
        }
        None if following.is_some() => crate::repl::link::stop_following(shared),
        _ => {}
    }
}
