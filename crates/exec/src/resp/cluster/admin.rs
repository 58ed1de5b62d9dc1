//! The CLUSTER subcommands that change the map: SETSLOT (what a reshard is made of),
//! ADDSLOTS and DELSLOTS (and their RANGE forms), FLUSHSLOTS, FORGET, BUMPEPOCH,
//! SET-CONFIG-EPOCH and RESET. Each change is published and written to the config file.

use proto_resp::SubcommandId;

use super::super::Ctx;
use super::commands::{keys_in_slot, lossy};
use super::topology::{parse_slot, Topology};
use super::Cluster;

const BAD_SLOT: &str = "ERR Invalid or out of range slot";

fn slot_at(ctx: &Ctx<'_>, index: usize) -> Result<u16, String> {
    std::str::from_utf8(ctx.arg(index))
        .ok()
        .and_then(|text| parse_slot(text).ok())
        .ok_or_else(|| BAD_SLOT.to_owned())
}

/// Answers OK, or the error of a refused change.
fn answer(ctx: &mut Ctx<'_>, outcome: Result<(), String>) {
    match outcome {
        Ok(()) => ctx.reply().ok(),
        Err(message) => ctx.error(message),
    }
}

/// `CLUSTER SETSLOT <slot> IMPORTING <id> | MIGRATING <id> | STABLE | NODE <id>`.
pub(super) fn setslot(ctx: &mut Ctx<'_>, cluster: &Cluster) {
    let outcome = setslot_change(ctx, cluster);
    answer(ctx, outcome);
}

fn setslot_change(ctx: &Ctx<'_>, cluster: &Cluster) -> Result<(), String> {
    if !cluster.topology.read().me().is_primary() {
        return Err("ERR Please use SETSLOT only with masters.".into());
    }
    let slot = slot_at(ctx, 2)?;
    let action = ctx.arg(3).to_ascii_uppercase();
    let target = match (action.as_slice(), ctx.argc()) {
        (b"STABLE", 4) => None,
        (b"IMPORTING" | b"MIGRATING" | b"NODE", 5) => Some(ctx.arg(4)),
        _ => {
            return Err("ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER \
                        HELP"
                .into())
        }
    };
    // NODE checks the keys it still holds before it takes the map's lock.
    let keys_here = match action.as_slice() {
        b"NODE" => keys_in_slot(ctx.shared, slot, 1).len(),
        _ => 0,
    };
    cluster.change(|topology| {
        let index = usize::from(slot);
        let mine = topology.owner[index] == Some(topology.myself);
        // Redis checks the slot's owner before it looks the node up.
        match action.as_slice() {
            b"MIGRATING" if !mine => {
                return Err(format!("ERR I'm not the owner of hash slot {slot}"));
            }
            b"IMPORTING" if mine => {
                return Err(format!("ERR I'm already the owner of hash slot {slot}"));
            }
            _ => {}
        }
        let node = match target {
            Some(id) => Some(find_primary(topology, id, action.as_slice())?),
            None => None,
        };
        match (action.as_slice(), node) {
            (b"MIGRATING", Some(to)) => {
                topology.migrating.insert(slot, to);
            }
            (b"IMPORTING", Some(from)) => {
                topology.importing.insert(slot, from);
            }
            (b"NODE", Some(owner)) => assign(topology, slot, owner, keys_here)?,
            _ => {
                topology.migrating.remove(&slot);
                topology.importing.remove(&slot);
            }
        }
        Ok(())
    })
}

/// The node `id` names, which must be a primary; errors in Redis's words for `action`.
fn find_primary(topology: &Topology, id: &[u8], action: &[u8]) -> Result<usize, String> {
    let Some(index) = topology.find(id) else {
        return Err(match action {
            b"NODE" => format!("ERR Unknown node {}", lossy(id)),
            _ => format!("ERR I don't know about node {}", lossy(id)),
        });
    };
    if !topology.nodes[index].is_primary() {
        return Err("ERR Target node is not a master".into());
    }
    Ok(index)
}

/// SETSLOT NODE: `owner` owns `slot` from now on.
fn assign(
    topology: &mut Topology,
    slot: u16,
    owner: usize,
    keys_here: usize,
) -> Result<(), String> {
    let myself = topology.myself;
    let index = usize::from(slot);
    if topology.owner[index] == Some(myself) && owner != myself && keys_here > 0 {
        return Err(format!(
            "ERR Can't assign hashslot {slot} to a different node while I still hold keys for \
             this hash slot."
        ));
    }
    if keys_here == 0 {
        topology.migrating.remove(&slot);
    }
    if owner == myself && topology.importing.remove(&slot).is_some() {
        // The import is done: this node's epoch rises above all, as Redis bumps it
        // without consensus, so its claim on the slot wins.
        bump_epoch(topology);
    }
    topology.owner[index] = Some(owner);
    Ok(())
}

/// Raises this node's config epoch above every epoch known, unless it is already the
/// greatest (and not zero); true if it did.
pub(super) fn bump_epoch(topology: &mut Topology) -> bool {
    let myself = topology.myself;
    let highest = topology.nodes.iter().map(|node| node.config_epoch).max().unwrap_or(0);
    let mine = topology.nodes[myself].config_epoch;
    let unique = topology.nodes.iter().filter(|node| node.config_epoch == mine).count() == 1;
    if mine != 0 && mine == highest && unique {
        return false;
    }
    topology.current_epoch = topology.current_epoch.max(highest) + 1;
    topology.nodes[myself].config_epoch = topology.current_epoch;
    true
}

/// ADDSLOTS and DELSLOTS.
pub(super) fn add_or_del_slots(ctx: &mut Ctx<'_>, cluster: &Cluster, sub: SubcommandId) {
    let slots: Result<Vec<u16>, String> = (2..ctx.argc()).map(|at| slot_at(ctx, at)).collect();
    let outcome =
        slots.and_then(|slots| change_slots(cluster, &slots, sub == SubcommandId::ClusterAddslots));
    answer(ctx, outcome);
}

/// ADDSLOTSRANGE and DELSLOTSRANGE: start and end pairs.
pub(super) fn add_or_del_ranges(ctx: &mut Ctx<'_>, cluster: &Cluster, sub: SubcommandId) {
    if ctx.argc() % 2 == 1 {
        let name = lossy(ctx.arg(1)).to_ascii_lowercase();
        return ctx.error(format!("ERR wrong number of arguments for 'cluster|{name}' command"));
    }
    let mut slots = Vec::new();
    for at in (2..ctx.argc()).step_by(2) {
        let (start, end) = match (slot_at(ctx, at), slot_at(ctx, at + 1)) {
            (Ok(start), Ok(end)) => (start, end),
            (Err(why), _) | (_, Err(why)) => return ctx.error(why),
        };
        if start > end {
            return ctx.error(format!(
                "ERR start slot number {start} is greater than end slot number {end}"
            ));
        }
        slots.extend(start..=end);
    }
    let adding = sub == SubcommandId::ClusterAddslotsrange;
    let outcome = change_slots(cluster, &slots, adding);
    answer(ctx, outcome);
}

fn change_slots(cluster: &Cluster, slots: &[u16], adding: bool) -> Result<(), String> {
    cluster.change(|topology| {
        let mut seen = vec![false; topology.owner.len()];
        for &slot in slots {
            let index = usize::from(slot);
            if adding && topology.owner[index].is_some() {
                return Err(format!("ERR Slot {slot} is already busy"));
            }
            if !adding && topology.owner[index].is_none() {
                return Err(format!("ERR Slot {slot} is already unassigned"));
            }
            if std::mem::replace(&mut seen[index], true) {
                return Err(format!("ERR Slot {slot} specified multiple times"));
            }
        }
        let myself = topology.myself;
        for &slot in slots {
            topology.importing.remove(&slot);
            topology.migrating.remove(&slot);
            topology.owner[usize::from(slot)] = adding.then_some(myself);
        }
        Ok(())
    })
}

pub(super) fn flushslots(ctx: &mut Ctx<'_>, cluster: &Cluster) {
    if !ctx.shared.core.store.is_empty() {
        return ctx.error("ERR DB must be empty to perform CLUSTER FLUSHSLOTS.");
    }
    let outcome = cluster.change(|topology| {
        let myself = topology.myself;
        topology.owner.iter_mut().filter(|owner| **owner == Some(myself)).for_each(|o| *o = None);
        Ok(())
    });
    answer(ctx, outcome);
}

pub(super) fn forget(ctx: &mut Ctx<'_>, cluster: &Cluster) {
    let id = ctx.arg(2);
    let outcome = cluster.change(|topology| {
        let Some(index) = topology.find(id) else {
            return Err(format!("ERR Unknown node {}", lossy(id)));
        };
        if index == topology.myself {
            return Err("ERR I tried hard but I can't forget myself...".into());
        }
        if topology.me().primary.as_deref() == Some(topology.nodes[index].id.as_str()) {
            return Err("ERR Can't forget my master!".into());
        }
        topology.remove_node(index);
        Ok(())
    });
    answer(ctx, outcome);
}

pub(super) fn bumpepoch(ctx: &mut Ctx<'_>, cluster: &Cluster) {
    let outcome = cluster.change(|topology| {
        let bumped = bump_epoch(topology);
        Ok((bumped, topology.me().config_epoch))
    });
    match outcome {
        Ok((true, epoch)) => ctx.reply().simple(format!("BUMPED {epoch}").as_bytes()),
        Ok((false, epoch)) => ctx.reply().simple(format!("STILL {epoch}").as_bytes()),
        Err(message) => ctx.error(message),
    }
}

pub(super) fn set_config_epoch(ctx: &mut Ctx<'_>, cluster: &Cluster) {
    let text = lossy(ctx.arg(2));
    let Ok(epoch) = text.parse::<i64>() else {
        return ctx.error("ERR value is not an integer or out of range");
    };
    let outcome = cluster.change(|topology| {
        if epoch < 0 {
            return Err(format!("ERR Invalid config epoch specified: {epoch}"));
        }
        if topology.nodes.len() > 1 {
            return Err("ERR The user can assign a config epoch only when the node does not know \
                        any other node."
                .into());
        }
        if topology.me().config_epoch != 0 {
            return Err("ERR Node config epoch is already non-zero".into());
        }
        let myself = topology.myself;
        topology.nodes[myself].config_epoch = epoch as u64;
        topology.current_epoch = topology.current_epoch.max(epoch as u64);
        Ok(())
    });
    answer(ctx, outcome);
}

/// `CLUSTER RESET [HARD|SOFT]`: forget every other node and every slot; HARD also takes a
/// new id and zeroes the epochs.
pub(super) fn reset(ctx: &mut Ctx<'_>, cluster: &Cluster) {
    let hard = match ctx.argc() {
        2 => false,
        3 if ctx.arg(2).eq_ignore_ascii_case(b"hard") => true,
        3 if ctx.arg(2).eq_ignore_ascii_case(b"soft") => false,
        _ => return ctx.error(proto_resp::error::SYNTAX),
    };
    let is_primary = cluster.topology.read().me().is_primary();
    if is_primary && !ctx.shared.core.store.is_empty() {
        return ctx.error("ERR CLUSTER RESET can't be called with master nodes containing keys");
    }
    if !is_primary {
        // A replica becomes an empty primary, as Redis's: it stops following, then flushes.
        crate::repl::link::stop_following(ctx.shared);
        let switch = crate::core::flush::Switch::Ignore;
        crate::core::flush::flush_all(&ctx.shared.core, ctx.counters, 0, switch);
    }
    let outcome = cluster.change(|topology| {
        let me = topology.me().clone();
        let id = if hard { super::random_node_id() } else { me.id.clone() };
        let mut fresh = Topology::new_alone(id, &me.ip, me.port, me.bus_port);
        if !hard {
            fresh.nodes[0].config_epoch = me.config_epoch;
            fresh.current_epoch = topology.current_epoch;
            fresh.last_vote_epoch = topology.last_vote_epoch;
        }
        *topology = fresh;
        Ok(())
    });
    answer(ctx, outcome);
}
