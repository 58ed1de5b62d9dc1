//! What a node takes from the other nodes' CLUSTER NODES, read once a second (`follow.rs`):
//! what each says of itself, as Redis takes the header of a cluster bus ping, but only
//! where a failover shows in it. Spinel has no bus; this is how a promotion reaches the
//! rest of the cluster, the old primary included, with no command of Spinel's own.
//!
//! - A primary that claims slots owned, in this map, by the node it replicated (or by a
//!   node its own map lists as its replica), with a greater config epoch, takes them:
//!   Redis's rule (`clusterUpdateSlotsConfigWith`), kept to successions so that a slot
//!   moved by SETSLOT on every node is never pulled back by a node not yet told.
//! - A node's role is what it says: a primary, or the replica of a known node (a primary
//!   turned replica loses its slots in this map, as in Redis, or, when the node it follows
//!   was its replica, they go to that one, whose own claim may not have been read yet).
//! - A node whose primary (or itself, a primary) lost every slot to one other primary
//!   follows that one (Redis's `clusterSetMaster` on an UPDATE).

use super::topology::Topology;

/// Takes the self-descriptions in `views` (the other nodes' maps) into `topology`: the
/// successions first, then the roles, then whom this node follows. True if it changed.
pub(super) fn learn(topology: &mut Topology, views: &[Topology]) -> bool {
    let before = topology.clone();
    for view in views {
        take_succession(topology, view);
    }
    for view in views {
        take_role(topology, view);
    }
    follow_heir(topology, &before);
    *topology != before
}

/// The sender's index in `topology`, unless it is unknown or this node itself.
fn sender_in(topology: &Topology, view: &Topology) -> Option<usize> {
    let index = topology.find(view.me().id.as_bytes())?;
    (index != topology.myself).then_some(index)
}

/// A primary's claim on slots it took from the node it replicated.
fn take_succession(topology: &mut Topology, view: &Topology) {
    let sender = view.me();
    let Some(index) = sender_in(topology, view).filter(|_| sender.is_primary()) else { return };
    let epoch = sender.config_epoch;
    for (slot, claimed) in view.owner.iter().enumerate() {
        let current = topology.owner[slot];
        if *claimed != Some(view.myself) || current == Some(index) {
            continue;
        }
        if topology.importing.contains_key(&(slot as u16)) {
            continue; // Redis leaves a slot this node imports alone.
        }
        let Some(owner) = current else { continue };
        if topology.nodes[owner].config_epoch < epoch && succeeds(topology, view, index, owner) {
            topology.owner[slot] = Some(index);
        }
    }
    topology.current_epoch = topology.current_epoch.max(view.current_epoch);
}

/// Whether the node at `heir` took over from the node at `owner`: it replicated it in this
/// map, or its own map (`view`) lists `owner` as its replica.
fn succeeds(topology: &Topology, view: &Topology, heir: usize, owner: usize) -> bool {
    let owner_id = &topology.nodes[owner].id;
    let heir_id = &topology.nodes[heir].id;
    let replicated = topology.nodes[heir].primary.as_ref() == Some(owner_id);
    let replica_now = view
        .find(owner_id.as_bytes())
        .is_some_and(|at| view.nodes[at].primary.as_ref() == Some(heir_id));
    replicated || replica_now
}

/// The sender's role (and, for a primary, its config epoch) as it says.
fn take_role(topology: &mut Topology, view: &Topology) {
    let sender = view.me();
    let Some(index) = sender_in(topology, view) else { return };
    if sender.is_primary() {
        if !topology.nodes[index].is_primary() {
            topology.set_primary(index);
        }
        let node = &mut topology.nodes[index];
        node.config_epoch = node.config_epoch.max(sender.config_epoch);
        return;
    }
    let Some(primary) = sender.primary.as_deref().and_then(|id| topology.find(id.as_bytes()))
    else {
        return;
    };
    let node = &topology.nodes[index];
    if primary == index || node.is_replica() && node.primary == sender.primary {
        return;
    }
    if node.is_primary() {
        // Its slots go nowhere (as in Redis), unless the node it now follows was its
        // replica here: that one took them over (its own claim may not have been read).
        let heir = topology.nodes[primary].primary.as_ref() == Some(&node.id);
        for owner in topology.owner.iter_mut().filter(|owner| **owner == Some(index)) {
            *owner = heir.then_some(primary);
        }
        if heir {
            let known = view.find(topology.nodes[primary].id.as_bytes());
            let epoch = known.map_or(0, |at| view.nodes[at].config_epoch);
            topology.set_primary(primary);
            let heir_node = &mut topology.nodes[primary];
            heir_node.config_epoch = heir_node.config_epoch.max(epoch);
        }
    }
    topology.set_replica_of(index, primary);
}

/// When the primary this node serves (itself, or its primary) lost every slot it had to
/// one other primary: this node becomes that primary's replica.
fn follow_heir(topology: &mut Topology, before: &Topology) {
    let served = before.primary_of(before.myself);
    if before.slot_count(served) == 0 || topology.slot_count(served) != 0 {
        return;
    }
    let mut heirs = (0..before.owner.len())
        .filter(|&slot| before.owner[slot] == Some(served))
        .map(|slot| topology.owner[slot]);
    let Some(Some(heir)) = heirs.next() else { return };
    if heirs.any(|other| other != Some(heir)) {
        return;
    }
    if heir != topology.myself && topology.nodes[heir].is_primary() {
        let myself = topology.myself;
        topology.set_replica_of(myself, heir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
    const C: &str = "cccccccccccccccccccccccccccccccccccccccc";

    /// A owns 0-8191 (epoch 1), B 8192-16383 (epoch 2), C replicates A; `me` is myself.
    fn map(me: &str) -> Topology {
        let line = |id: &str, rest: &str| {
            let flags = if id == me { "myself," } else { "" };
            format!("{id} 127.0.0.1:{}@1 {flags}{rest}\n", 7000 + id.len())
        };
        let text = line(A, "master - 0 0 1 connected 0-8191")
            + &line(B, "master - 0 0 2 connected 8192-16383")
            + &line(C, &format!("slave {A} 0 0 1 connected"))
            + "vars currentEpoch 2 lastVoteEpoch 0\n";
        Topology::parse(&text).unwrap()
    }

    /// C's map once it took over from A with epoch 3.
    fn after_takeover() -> Topology {
        let mut view = map(C);
        let (a, c) = (view.find(A.as_bytes()).unwrap(), view.myself);
        view.set_primary(c);
        view.nodes[c].config_epoch = 3;
        view.current_epoch = 3;
        view.owner.iter_mut().filter(|o| **o == Some(a)).for_each(|o| *o = Some(c));
        view
    }

    #[test]
    fn the_other_primaries_and_the_old_one_learn_a_takeover() {
        let view = after_takeover();
        let mut other = map(B);
        assert!(learn(&mut other, std::slice::from_ref(&view)));
        let c = other.find(C.as_bytes()).unwrap();
        assert_eq!(other.ranges_of(c), vec![(0, 8191)]);
        assert!(other.nodes[c].is_primary() && other.nodes[c].primary.is_none());
        let mut old = map(A);
        assert!(learn(&mut old, std::slice::from_ref(&view)));
        let c = old.find(C.as_bytes()).unwrap();
        assert_eq!(old.ranges_of(c), vec![(0, 8191)]);
        assert!(old.me().is_replica() && old.me().primary.as_deref() == Some(C));
        assert!(!learn(&mut old, std::slice::from_ref(&view)), "nothing new the second time");
    }

    #[test]
    fn a_lower_epoch_or_a_node_that_did_not_replicate_takes_nothing() {
        let mut stale = after_takeover();
        let c = stale.myself;
        stale.nodes[c].config_epoch = 1;
        let mut other = map(B);
        learn(&mut other, &[stale]);
        assert_eq!(other.ranges_of(other.find(A.as_bytes()).unwrap()), vec![(0, 8191)]);
        // B claims A's slots with a greater epoch, but it never replicated A: no.
        let mut greedy = map(B);
        let (a, b) = (greedy.find(A.as_bytes()).unwrap(), greedy.myself);
        greedy.nodes[b].config_epoch = 9;
        greedy.owner.iter_mut().filter(|o| **o == Some(a)).for_each(|o| *o = Some(b));
        let mut third = map(C);
        learn(&mut third, &[greedy]);
        assert_eq!(third.ranges_of(a), vec![(0, 8191)]);
    }

    #[test]
    fn a_primary_turned_replica_hands_its_slots_to_its_old_replica() {
        let mut view = after_takeover();
        let (a, c) = (view.find(A.as_bytes()).unwrap(), view.myself);
        view.set_replica_of(a, c);
        view.myself = a; // A's own map, once it follows C.
        let mut other = map(B);
        learn(&mut other, &[view]);
        let (a, c) = (other.find(A.as_bytes()).unwrap(), other.find(C.as_bytes()).unwrap());
        assert!(other.nodes[a].is_replica() && other.ranges_of(a).is_empty());
        assert_eq!(other.ranges_of(c), vec![(0, 8191)]);
        assert!(other.nodes[c].is_primary() && other.nodes[c].config_epoch == 3);
    }

    #[test]
    fn a_primary_turned_replica_of_another_loses_its_slots() {
        let mut view = map(A);
        let b = view.find(B.as_bytes()).unwrap();
        view.set_replica_of(view.myself, b);
        let mut other = map(C);
        learn(&mut other, &[view]);
        let a = other.find(A.as_bytes()).unwrap();
        assert!(other.nodes[a].is_replica() && other.ranges_of(a).is_empty());
        assert_eq!(other.slots_assigned(), 8192);
    }
}
