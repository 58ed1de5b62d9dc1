//! A Redis stream kept outside the store: entries packed in [`Node`]s of a few hundred
//! (one buffer each, ending where Redis's listpacks would end), indexed by a `BTreeMap` from each node's master ID, so
//! that an append is O(1) amortised (to the last node) and a range read O(log n + k) (k
//! counting up to 16 entries before the start: a node is read forward from its front or
//! from one of its marks); and
//! the consumer groups ([`group`]).
//!
//! The stream's counters are Redis 7.0's: the last ID given, the largest ID deleted, the
//! count of entries ever added (XINFO's `entries-added`, what a group's lag is told from).
//! What each part costs is kept as it changes ([`StreamValue::charged_bytes`]).

use std::collections::BTreeMap;

mod codec;
pub mod group;
mod id;
pub(crate) mod node;

pub use codec::{decode, encode, is_valid};
pub use group::{Consumer, Group, Pending};
pub use id::StreamId;
pub use node::{Entry, NodeLimits, Pairs, LISTPACK_MAX_BYTES};

use node::Node;

/// What a node costs beyond its buffer: its key and fields in the map's leaves, which
/// appends in order leave about half full.
const NODE_SLOT_BYTES: usize = 2 * (size_of::<StreamId>() + size_of::<Node>());

/// How a trim decides what goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trim {
    /// Keep at most this many entries.
    MaxLen(u64),
    /// Keep the entries at or after this ID.
    MinId(StreamId),
}

#[derive(Debug, Clone, Default)]
pub struct StreamValue {
    nodes: BTreeMap<StreamId, Node>,
    len: u64,
    pub last_id: StreamId,
    pub max_deleted_id: StreamId,
    pub entries_added: u64,
    pub groups: BTreeMap<Box<[u8]>, Group>,
    /// The bytes the nodes cost: their buffers as malloc sizes them, and their slots
    /// (groups are counted apart: [`group`]).
    node_bytes: usize,
}

/// What a node is charged.
#[inline]
fn node_cost(node: &Node) -> usize {
    NODE_SLOT_BYTES + node.heap_bytes()
}

impl StreamValue {
    #[inline]
    pub fn len(&self) -> u64 {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many nodes (XINFO STREAM's `radix-tree-nodes` is told from it).
    #[inline]
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// What this stream is charged against the memory limit.
    pub fn charged_bytes(&self) -> usize {
        self.node_bytes
            + self.groups.iter().map(|(name, group)| group.charged_bytes(name)).sum::<usize>()
    }

    /// Appends an entry with ID `id`, which must be above [`StreamValue::last_id`]: to the
    /// last node, or to a new one where Redis's would close (the last then gives back
    /// its spare room).
    pub fn append<'a, I>(&mut self, id: StreamId, pairs: I, limits: NodeLimits)
    where
        I: Iterator<Item = (&'a [u8], &'a [u8])> + Clone,
    {
        debug_assert!(id > self.last_id || (self.len == 0 && self.entries_added == 0));
        let fields_len: usize = pairs.clone().map(|(n, v)| n.len() + v.len()).sum();
        match self.nodes.iter_mut().next_back() {
            Some((&master, node)) if node.takes(fields_len, limits) => {
                let before = node.heap_bytes();
                node.push(master, id, pairs, false);
                self.node_bytes = self.node_bytes + node.heap_bytes() - before;
            }
            tail => {
                if let Some((_, node)) = tail {
                    let before = node.heap_bytes();
                    node.close();
                    self.node_bytes -= before - node.heap_bytes();
                }
                let node = Node::open(id, pairs);
                self.node_bytes += node_cost(&node);
                self.nodes.insert(id, node);
            }
        }
        self.len += 1;
        self.last_id = id;
        self.entries_added += 1;
    }

    /// Puts a whole node back as it was saved (loading; the loader checks order).
    pub(crate) fn push_node(&mut self, master: StreamId, mut node: Node) {
        node.close();
        self.len += node.live;
        self.node_bytes += node_cost(&node);
        self.nodes.insert(master, node);
    }

    /// The nodes by master ID, in order (for encoders).
    pub(crate) fn nodes(&self) -> impl Iterator<Item = (StreamId, &Node)> {
        self.nodes.iter().map(|(&master, node)| (master, node))
    }

    /// The first live entry's ID (0-0 when empty).
    pub fn first_id(&self) -> StreamId {
        self.first().map_or(StreamId::MIN, |entry| entry.id)
    }

    pub fn first(&self) -> Option<Entry<'_>> {
        self.nodes.iter().find_map(|(&master, node)| node.first(master))
    }

    pub fn last(&self) -> Option<Entry<'_>> {
        self.nodes.iter().rev().find_map(|(&master, node)| node.last(master))
    }

    /// The entry with ID `id`.
    pub fn get(&self, id: StreamId) -> Option<Entry<'_>> {
        let (&master, node) = self.nodes.range(..=id).next_back()?;
        node.entries_from(master, id).next().filter(|entry| entry.id == id)
    }

    /// The entries from `start` to `end` (both included), in order.
    pub fn range(&self, start: StreamId, end: StreamId) -> impl Iterator<Item = Entry<'_>> + '_ {
        let from = self.nodes.range(..=start).next_back().map_or(start, |(&master, _)| master);
        let nodes = if start <= end { Some(self.nodes.range(from..=end)) } else { None };
        nodes
            .into_iter()
            .flatten()
            .flat_map(move |(&master, node)| node.entries_from(master, start))
            .take_while(move |entry| entry.id <= end)
    }

    /// The entries from `end` down to `start` (both included).
    pub fn range_rev(
        &self,
        start: StreamId,
        end: StreamId,
    ) -> impl Iterator<Item = Entry<'_>> + '_ {
        let from = self.nodes.range(..=start).next_back().map_or(start, |(&master, _)| master);
        let nodes = if start <= end { Some(self.nodes.range(from..=end)) } else { None };
        nodes
            .into_iter()
            .flatten()
            .rev()
            .flat_map(move |(&master, node)| node.entries_rev(master, start, end))
    }

    /// Deletes the entry with ID `id`; whether it was there. (Its bytes stay, flagged,
    /// until its node goes, as in Redis.)
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some((&master, node)) = self.nodes.range_mut(..=id).next_back() else { return false };
        if !node.delete(master, id) {
            return false;
        }
        if node.live == 0 {
            self.node_bytes -= node_cost(node);
            self.nodes.remove(&master);
        }
        self.len -= 1;
        if id > self.max_deleted_id {
            self.max_deleted_id = id;
        }
        true
    }

    /// Redis's `streamTrim`: removes entries from the head by `trim`; with `approx`, only
    /// whole nodes. `limit` (0: none) bounds how many entries whole nodes may remove.
    /// How many entries went.
    pub fn trim(&mut self, trim: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted = 0u64;
        while let Some(mut slot) = self.nodes.first_entry() {
            if matches!(trim, Trim::MaxLen(max) if self.len <= max) {
                break;
            }
            let master = *slot.key();
            let node = slot.get();
            let live = node.live;
            if limit != 0 && deleted + live > limit {
                break;
            }
            let whole = match trim {
                Trim::MaxLen(max) => self.len - live >= max,
                Trim::MinId(min) => node.last_pushed < min,
            };
            if whole {
                self.node_bytes -= node_cost(&slot.remove());
                self.len -= live;
                deleted += live;
                continue;
            }
            if approx {
                break;
            }
            let node = slot.get_mut();
            let n = match trim {
                Trim::MaxLen(max) => {
                    node.delete_first(master, self.len - max);
                    self.len - max
                }
                Trim::MinId(min) => node.delete_below(master, min),
            };
            self.len -= n;
            deleted += n;
            if node.live == 0 {
                // (MINID past every live entry, short of a deleted one: Redis keeps the
                // empty node; it holds nothing, so it goes here.)
                self.node_bytes -= node_cost(&slot.remove());
            }
            break;
        }
        deleted
    }
}

#[cfg(test)]
mod tests;
