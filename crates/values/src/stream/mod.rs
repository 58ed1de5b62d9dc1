//! A Redis stream kept outside the store: entries in [`Node`]s of a few hundred (where
//! Redis's listpacks would end), indexed by a `BTreeMap` from each node's master ID, so
//! that an append is O(1) amortised (to the last node) and a range read O(log n + k); and
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

/// What an entry costs beyond its fields' allocation: its slot in its node (ID and box),
/// the allocator's header, and a quarter more, as for a list element.
const ENTRY_BYTES: usize = 48;
/// What a node costs beyond its entries: its place in the map and its vectors.
const NODE_BYTES: usize = 160;

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
    /// The bytes the entries and nodes cost (groups are counted apart: [`group`]).
    entry_bytes: usize,
}

/// What an entry is charged.
#[inline]
fn entry_cost(entry: &Entry) -> usize {
    ENTRY_BYTES + (entry.heap_len() + 8).next_multiple_of(16)
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
        self.entry_bytes
            + self.groups.iter().map(|(name, group)| group.charged_bytes(name)).sum::<usize>()
    }

    /// Appends an entry with ID `id`, which must be above [`StreamValue::last_id`].
    pub fn append<'a>(
        &mut self,
        id: StreamId,
        pairs: impl Iterator<Item = (&'a [u8], &'a [u8])>,
        limits: NodeLimits,
    ) {
        debug_assert!(id > self.last_id || (self.len == 0 && self.entries_added == 0));
        let entry = Entry::new(id, pairs);
        let fields_len: usize = entry.pairs().map(|(n, v)| n.len() + v.len()).sum();
        self.entry_bytes += entry_cost(&entry);
        match self.nodes.iter_mut().next_back() {
            Some((&master, node)) if node.takes(fields_len, limits) => node.push(master, entry),
            _ => {
                self.nodes.insert(id, Node::open(id, entry));
                self.entry_bytes += NODE_BYTES;
            }
        }
        self.len += 1;
        self.last_id = id;
        self.entries_added += 1;
    }

    /// Puts a whole node back as it was saved (snapshot loading; `codec` checks order).
    pub(crate) fn push_node(&mut self, master: StreamId, node: Node) {
        self.len += node.entries.len() as u64;
        self.entry_bytes += NODE_BYTES + node.entries.iter().map(entry_cost).sum::<usize>();
        self.nodes.insert(master, node);
    }

    /// The nodes by master ID, in order (for encoders).
    pub fn nodes(&self) -> impl Iterator<Item = (StreamId, &[Box<[u8]>], &[Entry], u64)> {
        self.nodes
            .iter()
            .map(|(&id, node)| (id, &node.master_fields[..], &node.entries[..], node.deleted))
    }

    /// The first live entry's ID (0-0 when empty).
    pub fn first_id(&self) -> StreamId {
        self.first().map_or(StreamId::MIN, |entry| entry.id)
    }

    pub fn first(&self) -> Option<&Entry> {
        self.nodes.values().find_map(|node| node.entries.first())
    }

    pub fn last(&self) -> Option<&Entry> {
        self.nodes.values().rev().find_map(|node| node.entries.last())
    }

    /// The entry with ID `id`.
    pub fn get(&self, id: StreamId) -> Option<&Entry> {
        let (_, node) = self.nodes.range(..=id).next_back()?;
        node.search(id).ok().map(|at| &node.entries[at])
    }

    /// The entries from `start` to `end` (both included), in order.
    pub fn range(&self, start: StreamId, end: StreamId) -> impl Iterator<Item = &Entry> + '_ {
        let from = self.nodes.range(..=start).next_back().map_or(start, |(&master, _)| master);
        let nodes = if start <= end { Some(self.nodes.range(from..=end)) } else { None };
        nodes
            .into_iter()
            .flatten()
            .flat_map(move |(_, node)| {
                let at = node.search(start).unwrap_or_else(|at| at);
                node.entries[at..].iter()
            })
            .take_while(move |entry| entry.id <= end)
    }

    /// The entries from `end` down to `start` (both included).
    pub fn range_rev(&self, start: StreamId, end: StreamId) -> impl Iterator<Item = &Entry> + '_ {
        let from = self.nodes.range(..=start).next_back().map_or(start, |(&master, _)| master);
        let nodes = if start <= end { Some(self.nodes.range(from..=end)) } else { None };
        nodes
            .into_iter()
            .flatten()
            .rev()
            .flat_map(move |(_, node)| {
                let at = match node.search(end) {
                    Ok(at) => at + 1,
                    Err(at) => at,
                };
                node.entries[..at].iter().rev()
            })
            .take_while(move |entry| entry.id >= start)
    }

    /// Deletes the entry with ID `id`; whether it was there.
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some((&master, node)) = self.nodes.range_mut(..=id).next_back() else { return false };
        let Ok(at) = node.search(id) else { return false };
        let entry = node.delete_at(at);
        self.entry_bytes -= entry_cost(&entry);
        if node.entries.is_empty() {
            self.nodes.remove(&master);
            self.entry_bytes -= NODE_BYTES;
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
            let node = slot.get();
            let live = node.entries.len() as u64;
            if limit != 0 && deleted + live > limit {
                break;
            }
            let whole = match trim {
                Trim::MaxLen(max) => self.len - live >= max,
                Trim::MinId(min) => node.last_pushed < min,
            };
            if whole {
                let node = slot.remove();
                self.entry_bytes -= NODE_BYTES + node.entries.iter().map(entry_cost).sum::<usize>();
                self.len -= live;
                deleted += live;
                continue;
            }
            if approx {
                break;
            }
            let node = slot.get_mut();
            let n = match trim {
                Trim::MaxLen(max) => (self.len - max) as usize,
                Trim::MinId(min) => node.entries.partition_point(|entry| entry.id < min),
            };
            let gone = node.delete_first(n);
            self.entry_bytes -= gone.iter().map(entry_cost).sum::<usize>();
            self.len -= n as u64;
            deleted += n as u64;
            if node.entries.is_empty() {
                // (MINID past every live entry, short of a deleted one: Redis keeps the
                // empty node; it holds nothing, so it goes here.)
                slot.remove();
                self.entry_bytes -= NODE_BYTES;
            }
            break;
        }
        deleted
    }
}

#[cfg(test)]
mod tests;
