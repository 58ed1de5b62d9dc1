//! A stream as bytes, for Spinel's snapshots (DUMP uses Redis's RDB form: `rdb`). LEB128
//! numbers and length-prefixed strings throughout:
//!
//! ```text
//!   2 | last ms seq | max-deleted ms seq | entries-added
//!   nodes: count, each: master ms seq | body-bytes | the node's buffer (length-prefixed,
//!          as `node` packs it, deleted entries and all)
//!   groups: count, each: name | last ms seq | entries-read + 1 (0: unknown)
//!          | consumers: count, each: name | seen-time
//!          | pending: count, each: ms seq | consumer name | delivery time | count
//! ```
//!
//! The decoder takes untrusted bytes (a snapshot file): it never panics, never allocates
//! by a count it read, and refuses anything the commands could not have made (IDs out of
//! order or past the last, empty nodes, a pending entry whose consumer is missing).
//!
//! Version 1 (before nodes were packed: each node's master names, deleted count and live
//! entries one by one) is still read, so that a snapshot written by an older Spinel
//! loads.

use std::collections::BTreeMap;

use super::group::{Consumer, Group, Pending};
use super::node::Node;
use super::{StreamId, StreamValue};
use crate::varint;

const VERSION: u8 = 2;
const VERSION_UNPACKED: u8 = 1;

pub fn encode(stream: &StreamValue) -> Vec<u8> {
    let mut out = vec![VERSION];
    put_id(&mut out, stream.last_id);
    put_id(&mut out, stream.max_deleted_id);
    varint::put(&mut out, stream.entries_added);
    varint::put_usize(&mut out, stream.nodes.len());
    for (master, node) in stream.nodes() {
        put_id(&mut out, master);
        varint::put_usize(&mut out, node.body_bytes);
        put_bytes(&mut out, &node.buf);
    }
    varint::put_usize(&mut out, stream.groups.len());
    for (name, group) in &stream.groups {
        put_group(&mut out, name, group);
    }
    out
}

fn put_group(out: &mut Vec<u8>, name: &[u8], group: &Group) {
    put_bytes(out, name);
    put_id(out, group.last_id);
    varint::put(out, group.entries_read.map_or(0, |n| n.saturating_add(1)));
    varint::put_usize(out, group.consumers.len());
    for (name, consumer) in &group.consumers {
        put_bytes(out, name);
        varint::put(out, consumer.seen_time_ms);
    }
    varint::put_usize(out, group.pel.len());
    for (&id, pending) in &group.pel {
        put_id(out, id);
        put_bytes(out, &pending.consumer);
        varint::put(out, pending.delivery_time_ms);
        varint::put(out, pending.delivery_count);
    }
}

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    varint::put(out, id.ms);
    varint::put(out, id.seq);
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    varint::put_usize(out, bytes.len());
    out.extend_from_slice(bytes);
}

/// Whether `bytes` is a stream's encoding as [`encode`] writes it.
pub fn is_valid(bytes: &[u8]) -> bool {
    decode(bytes).is_some()
}

/// The stream `bytes` encode; `None` for anything [`encode`] could not have written.
pub fn decode(bytes: &[u8]) -> Option<StreamValue> {
    let mut r = Reader(bytes);
    let version = r.byte()?;
    if version != VERSION && version != VERSION_UNPACKED {
        return None;
    }
    let mut stream = StreamValue::default();
    (stream.last_id, stream.max_deleted_id) = (r.id()?, r.id()?);
    stream.entries_added = r.number()?;
    let mut after: Option<StreamId> = None;
    for _ in 0..r.number()? {
        let (master, node) = match version {
            VERSION => read_node(&mut r, &mut after)?,
            _ => read_unpacked_node(&mut r, &mut after)?,
        };
        stream.push_node(master, node);
    }
    if after.is_some_and(|last| last > stream.last_id) || stream.len() > stream.entries_added {
        return None;
    }
    for _ in 0..r.number()? {
        let (name, group) = read_group(&mut r)?;
        if stream.groups.insert(name, group).is_some() {
            return None;
        }
    }
    r.0.is_empty().then_some(stream)
}

/// One node; `after` is the last entry's ID before it, moved to its own last.
fn read_node(r: &mut Reader<'_>, after: &mut Option<StreamId>) -> Option<(StreamId, Node)> {
    let master = r.id()?;
    let body_bytes = usize::try_from(r.number()?).ok()?;
    let node = Node::from_raw(master, r.bytes()?, body_bytes, after)?;
    Some((master, node))
}

/// One node as version 1 wrote it: master names, then the live entries one by one (their
/// fields as `count, (name, value)*`, length-prefixed), the deleted ones only counted.
fn read_unpacked_node(
    r: &mut Reader<'_>,
    after: &mut Option<StreamId>,
) -> Option<(StreamId, Node)> {
    let master = r.id()?;
    let (deleted, body_bytes) = (r.number()?, usize::try_from(r.number()?).ok()?);
    let last_pushed = r.id()?;
    if after.is_some_and(|prev| master <= prev) {
        return None;
    }
    let mut names = Vec::new();
    for _ in 0..r.count()? {
        names.push(r.bytes()?);
    }
    let mut node = Node::new(master, names.into_iter());
    for _ in 0..r.count()? {
        let id = r.id()?;
        let mut fields = Reader(r.bytes()?);
        if id < master || after.is_some_and(|prev| id <= prev) || id > last_pushed {
            return None;
        }
        let mut pairs = Vec::new();
        for _ in 0..fields.count()? {
            pairs.push((fields.bytes()?, fields.bytes()?));
        }
        if !fields.0.is_empty() {
            return None;
        }
        *after = Some(id);
        node.push(master, id, pairs.into_iter(), false);
    }
    if node.live == 0 {
        return None;
    }
    if node.last_pushed < last_pushed {
        // The last entry pushed was deleted: it comes back flagged, without fields (its
        // ID is what MINID trims by, and the next ID is told from it).
        node.push(master, last_pushed, std::iter::empty(), true);
        *after = Some(last_pushed);
    }
    (node.deleted, node.body_bytes) = (deleted, body_bytes);
    Some((master, node))
}

fn read_group(r: &mut Reader<'_>) -> Option<(Box<[u8]>, Group)> {
    let name = Box::from(r.bytes()?);
    let last_id = r.id()?;
    let entries_read = r.number()?.checked_sub(1);
    let mut group = Group::new(last_id, entries_read);
    let mut consumers = BTreeMap::new();
    for _ in 0..r.count()? {
        let name: Box<[u8]> = Box::from(r.bytes()?);
        let consumer = Consumer { seen_time_ms: r.number()?, ..Consumer::default() };
        if consumers.insert(name, consumer).is_some() {
            return None;
        }
    }
    group.consumers = consumers;
    for _ in 0..r.count()? {
        let id = r.id()?;
        let consumer: Box<[u8]> = Box::from(r.bytes()?);
        let (delivery_time_ms, delivery_count) = (r.number()?, r.number()?);
        let owner = group.consumers.get_mut(&consumer)?;
        if !owner.pel.insert(id) {
            return None;
        }
        let pending = Pending { consumer, delivery_time_ms, delivery_count };
        if group.pel.insert(id, pending).is_some() {
            return None;
        }
    }
    group.recount();
    Some((name, group))
}

struct Reader<'b>(&'b [u8]);

impl<'b> Reader<'b> {
    fn byte(&mut self) -> Option<u8> {
        let (&first, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(first)
    }

    fn number(&mut self) -> Option<u64> {
        let (n, used) = varint::read(self.0)?;
        self.0 = &self.0[used..];
        Some(n)
    }

    /// A count or length: never more than the bytes left (each item takes one at least).
    fn count(&mut self) -> Option<usize> {
        let n = usize::try_from(self.number()?).ok()?;
        (n <= self.0.len()).then_some(n)
    }

    fn id(&mut self) -> Option<StreamId> {
        Some(StreamId::new(self.number()?, self.number()?))
    }

    fn bytes(&mut self) -> Option<&'b [u8]> {
        let len = self.count()?;
        let (piece, rest) = self.0.split_at(len);
        self.0 = rest;
        Some(piece)
    }
}
