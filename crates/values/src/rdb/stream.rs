//! A stream in a DUMP payload: Redis 7.0's `RDB_TYPE_STREAM_LISTPACKS_2` (type 19), and
//! Redis 5 to 6.2's type 15 read (RESTORE of an older payload).
//!
//! ```text
//!   nodes: len, each: master ID (16 bytes: ms, seq, big-endian) as a string
//!                   | the node's listpack as a string
//!   length | last ms | last seq                        (lens)
//!   type 19 only: first ms | first seq | max-deleted ms | max-deleted seq | entries added
//!   groups: len, each: name | last ms | last seq | type 19 only: entries read (2^64-1: unknown)
//!     PEL: len, each: ID (16 bytes) | delivery time (u64 LE, ms) | delivery count (len)
//!     consumers: len, each: name | seen time (u64 LE, ms) | PEL: len, each: ID (16 bytes)
//!
//!   node listpack: live count | deleted count | master field count | names... | 0
//!     then per entry: flags (1 deleted, 2 same fields as the master) | ms - master ms
//!       | seq - master seq | (same fields: values...) or (field count, field, value...)
//!       | the entry's element count (back-pointer, checked)
//! ```
//!
//! Written as Redis writes it, node for node (so XINFO's `radix-tree-keys` agrees), the
//! deleted entries Redis keeps in a node kept and written too. Read: every
//! count and ID is checked against what the commands could have made (IDs increasing and
//! within the last ID, counts matching, each pending entry owned by exactly one consumer);
//! anything else is `None`, RESTORE's "Bad data format", never a panic.

use std::collections::{BTreeMap, BTreeSet};

use super::{packed, put_len, put_string, Reader};
use crate::{
    int::parse_canonical_i64,
    stream::{
        node::{int_bytes, Node},
        Consumer, Group, Pending, StreamId, StreamValue,
    },
};

pub(super) const TYPE_STREAM_LISTPACKS: u8 = 15;
pub(super) const TYPE_STREAM_LISTPACKS_2: u8 = 19;

const FLAG_DELETED: i64 = 1;
const FLAG_SAME_FIELDS: i64 = 2;

/// Writes `stream` as type 19 (after its type byte).
pub(super) fn put_stream(out: &mut Vec<u8>, stream: &StreamValue) {
    put_len(out, stream.node_count() as u64);
    for (master, node) in stream.nodes() {
        put_string(out, &raw_id(master));
        put_string(out, &node_listpack(master, node));
    }
    put_len(out, stream.len());
    let first = stream.first_id();
    for id in [stream.last_id, first, stream.max_deleted_id] {
        put_len(out, id.ms);
        put_len(out, id.seq);
    }
    put_len(out, stream.entries_added);
    put_len(out, stream.groups.len() as u64);
    for (name, group) in &stream.groups {
        put_string(out, name);
        put_len(out, group.last_id.ms);
        put_len(out, group.last_id.seq);
        put_len(out, group.entries_read.unwrap_or(u64::MAX));
        put_len(out, group.pel.len() as u64);
        for (id, pending) in &group.pel {
            out.extend_from_slice(&raw_id(*id));
            out.extend_from_slice(&pending.delivery_time_ms.to_le_bytes());
            put_len(out, pending.delivery_count);
        }
        put_len(out, group.consumers.len() as u64);
        for (name, consumer) in &group.consumers {
            put_string(out, name);
            out.extend_from_slice(&consumer.seen_time_ms.to_le_bytes());
            put_len(out, consumer.pel.len() as u64);
            consumer.pel.iter().for_each(|id| out.extend_from_slice(&raw_id(*id)));
        }
    }
}

/// An ID as Redis keys its radix trees: ms then seq, big-endian.
fn raw_id(id: StreamId) -> [u8; 16] {
    let mut raw = [0u8; 16];
    raw[..8].copy_from_slice(&id.ms.to_be_bytes());
    raw[8..].copy_from_slice(&id.seq.to_be_bytes());
    raw
}

fn id_of_raw(raw: &[u8]) -> Option<StreamId> {
    let raw: &[u8; 16] = raw.try_into().ok()?;
    let (ms, seq) = raw.split_at(8);
    Some(StreamId::new(
        u64::from_be_bytes(ms.try_into().ok()?),
        u64::from_be_bytes(seq.try_into().ok()?),
    ))
}

/// One node's listpack, as `streamAppendItem` builds it (and XDEL flags it).
fn node_listpack(master: StreamId, node: &Node) -> Vec<u8> {
    let mut lp = Listpack::default();
    let master_count = node.master_fields().count();
    // (What the buffer holds: a node read from an old snapshot counts deleted entries
    // it no longer has.)
    let deleted = node.slots(master).filter(|slot| slot.deleted).count();
    lp.int(node.live as i64);
    lp.int(deleted as i64);
    lp.int(master_count as i64);
    node.master_fields().for_each(|name| lp.string(name));
    lp.int(0);
    for slot in node.slots(master) {
        let entry = slot.entry;
        let count = entry.field_count();
        let same =
            count == master_count && entry.pairs().map(|(name, _)| name).eq(node.master_fields());
        let flags = if same { FLAG_SAME_FIELDS } else { 0 };
        lp.int(flags | if slot.deleted { FLAG_DELETED } else { 0 });
        lp.int(entry.id.ms.wrapping_sub(master.ms) as i64);
        lp.int(entry.id.seq.wrapping_sub(master.seq) as i64);
        if same {
            entry.pairs().for_each(|(_, value)| lp.string(value));
            lp.int(count as i64 + 3);
        } else {
            lp.int(count as i64);
            for (name, value) in entry.pairs() {
                lp.string(name);
                lp.string(value);
            }
            lp.int(2 * count as i64 + 4);
        }
    }
    lp.finish()
}

/// A listpack being written: its elements, then [`Listpack::finish`] adds the header.
#[derive(Default)]
struct Listpack {
    body: Vec<u8>,
    count: usize,
}

impl Listpack {
    fn int(&mut self, n: i64) {
        let start = self.body.len();
        match n {
            0..=127 => self.body.push(n as u8),
            -4096..=4095 => {
                let v = (n as u64) & 0x1fff;
                self.body.extend_from_slice(&[0xc0 | (v >> 8) as u8, v as u8]);
            }
            -32768..=32767 => self.le(0xf1, n, 2),
            -8_388_608..=8_388_607 => self.le(0xf2, n, 3),
            -2_147_483_648..=2_147_483_647 => self.le(0xf3, n, 4),
            _ => self.le(0xf4, n, 8),
        }
        self.backlen(self.body.len() - start);
    }

    fn le(&mut self, encoding: u8, n: i64, width: usize) {
        self.body.push(encoding);
        self.body.extend_from_slice(&n.to_le_bytes()[..width]);
    }

    /// A string element: as an integer when it is one's canonical text (`lpAppend`).
    fn string(&mut self, bytes: &[u8]) {
        if let Some(n) = parse_canonical_i64(bytes) {
            return self.int(n);
        }
        let start = self.body.len();
        let len = bytes.len();
        match len {
            0..=63 => self.body.push(0x80 | len as u8),
            64..=4095 => self.body.extend_from_slice(&[0xe0 | (len >> 8) as u8, len as u8]),
            _ => {
                self.body.push(0xf0);
                self.body.extend_from_slice(&(len as u32).to_le_bytes());
            }
        }
        self.body.extend_from_slice(bytes);
        self.backlen(self.body.len() - start);
    }

    /// `lpEncodeBacklen`: the entry's size, 7 bits a byte, read from its end.
    fn backlen(&mut self, len: usize) {
        self.count += 1;
        let bytes = match len {
            0..=127 => 1,
            128..=16_382 => 2,
            16_383..=2_097_150 => 3,
            2_097_151..=268_435_454 => 4,
            _ => 5,
        };
        for at in (0..bytes).rev() {
            let seven = ((len >> (7 * at)) & 127) as u8;
            self.body.push(if at == bytes - 1 { seven } else { seven | 128 });
        }
    }

    fn finish(self) -> Vec<u8> {
        let total = 6 + self.body.len() + 1;
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&(total as u32).to_le_bytes());
        out.extend_from_slice(&(self.count.min(usize::from(u16::MAX)) as u16).to_le_bytes());
        out.extend_from_slice(&self.body);
        out.push(0xff);
        out
    }
}

/// Reads a stream of type 15 or 19 (after its type byte).
pub(super) fn load_stream(reader: &mut Reader<'_>, kind: u8) -> Option<StreamValue> {
    let mut stream = StreamValue::default();
    let nodes = reader.count()?;
    let mut after: Option<StreamId> = None;
    for _ in 0..nodes {
        let master = id_of_raw(&reader.string()?)?;
        let blob = reader.string()?;
        if after.is_some_and(|prev| master <= prev) {
            return None;
        }
        let node = read_node(master, &blob, &mut after)?;
        stream.push_node(master, node);
    }
    let length = reader.number()?;
    stream.last_id = reader.id()?;
    if kind == TYPE_STREAM_LISTPACKS_2 {
        let _recorded_first = reader.id()?;
        stream.max_deleted_id = reader.id()?;
        stream.entries_added = reader.number()?;
    } else {
        stream.entries_added = length;
    }
    let beyond_last = after.is_some_and(|last| last > stream.last_id);
    if length != stream.len() || beyond_last || stream.entries_added < length {
        return None;
    }
    for _ in 0..reader.count()? {
        let (name, group) = read_group(reader, &stream, kind)?;
        if stream.groups.insert(name, group).is_some() {
            return None;
        }
    }
    Some(stream)
}

/// One node from its listpack; `after` is the last ID (deleted or not) before it, moved
/// to the node's last.
fn read_node(master: StreamId, blob: &[u8], after: &mut Option<StreamId>) -> Option<Node> {
    let elements = packed::listpack(blob)?;
    let mut items = elements.iter();
    let mut int = || items.next().and_then(|e| parse_canonical_i64(e));
    let (live, deleted, fields) = (int()?, int()?, usize::try_from(int()?).ok()?);
    let live = u64::try_from(live).ok()?;
    let deleted = u64::try_from(deleted).ok()?;
    let rest = elements.get(3..)?;
    let master_fields: Vec<&[u8]> = rest.get(..fields)?.iter().map(|n| &n[..]).collect();
    if rest.get(fields).map(|e| &e[..]) != Some(b"0") {
        return None;
    }
    let mut node = Node::new(master, master_fields.iter().copied());
    let mut items = &rest[fields + 1..];
    while !items.is_empty() {
        let (id, pairs, flagged, used) = read_entry(master, &master_fields, items)?;
        if id < master || after.is_some_and(|prev| id <= prev) {
            return None;
        }
        *after = Some(id);
        node.push(master, id, pairs.into_iter(), flagged);
        items = &items[used..];
    }
    if node.live != live || node.deleted != deleted || live == 0 {
        return None;
    }
    let counts = int_bytes(live as i64) + int_bytes(deleted as i64);
    node.body_bytes = blob.len().checked_sub(counts)?;
    Some(node)
}

/// A field and its value.
type Pair<'a> = (&'a [u8], &'a [u8]);

/// One entry from the front of `items`: its ID, its pairs, whether it is flagged deleted,
/// and how many elements it took.
fn read_entry<'a>(
    master: StreamId,
    master_fields: &[&'a [u8]],
    items: &'a [Vec<u8>],
) -> Option<(StreamId, Vec<Pair<'a>>, bool, usize)> {
    let int = |at: usize| items.get(at).and_then(|e| parse_canonical_i64(e));
    let flags = int(0)?;
    if flags & !(FLAG_DELETED | FLAG_SAME_FIELDS) != 0 {
        return None;
    }
    let id = StreamId::new(
        master.ms.wrapping_add(int(1)? as u64),
        master.seq.wrapping_add(int(2)? as u64),
    );
    let (pairs, used): (Vec<Pair<'a>>, usize) = if flags & FLAG_SAME_FIELDS != 0 {
        let values = items.get(3..3 + master_fields.len())?;
        let pairs = master_fields.iter().zip(values).map(|(n, v)| (*n, &v[..])).collect();
        (pairs, 3 + master_fields.len())
    } else {
        let count = usize::try_from(int(3)?).ok()?;
        let flat = items.get(4..4usize.checked_add(count.checked_mul(2)?)?)?;
        (flat.chunks(2).map(|p| (&p[0][..], &p[1][..])).collect(), 4 + 2 * count)
    };
    // The back-pointer: the entry's element count (the fields' count plus 3 or 4).
    let back = int(used)?;
    let want = if flags & FLAG_SAME_FIELDS != 0 { pairs.len() + 3 } else { 2 * pairs.len() + 4 };
    if usize::try_from(back).ok()? != want {
        return None;
    }
    Some((id, pairs, flags & FLAG_DELETED != 0, used + 1))
}

/// One consumer group; every pending entry must be owned by exactly one of its consumers.
fn read_group(
    reader: &mut Reader<'_>,
    stream: &StreamValue,
    kind: u8,
) -> Option<(Box<[u8]>, Group)> {
    let name: Box<[u8]> = reader.string()?.into_boxed_slice();
    let last_id = reader.id()?;
    let entries_read = match kind {
        TYPE_STREAM_LISTPACKS_2 => Some(reader.number()?).filter(|&n| n != u64::MAX),
        _ => stream.entries_read_at(last_id),
    };
    let mut group = Group::new(last_id, entries_read);
    let mut unowned = BTreeMap::new();
    for _ in 0..reader.count()? {
        let id = id_of_raw(reader.take(16)?)?;
        let delivery_time_ms = reader.u64_le()?;
        let delivery_count = reader.number()?;
        if unowned.insert(id, (delivery_time_ms, delivery_count)).is_some() {
            return None;
        }
    }
    for _ in 0..reader.count()? {
        let consumer: Box<[u8]> = reader.string()?.into_boxed_slice();
        let seen_time_ms = reader.u64_le()?;
        let mut pel = BTreeSet::new();
        for _ in 0..reader.count()? {
            let id = id_of_raw(reader.take(16)?)?;
            let (delivery_time_ms, delivery_count) = unowned.remove(&id)?;
            let pending = Pending { consumer: consumer.clone(), delivery_time_ms, delivery_count };
            group.pel.insert(id, pending);
            pel.insert(id);
        }
        if group.consumers.insert(consumer, Consumer { seen_time_ms, pel }).is_some() {
            return None;
        }
    }
    if !unowned.is_empty() {
        return None;
    }
    group.recount();
    Some((name, group))
}

/// Whether two streams hold the same entries, counters and groups (their nodes' internal
/// sizes aside, which a payload does not carry for deleted entries).
pub(super) fn same_stream(a: &StreamValue, b: &StreamValue) -> bool {
    a.len() == b.len()
        && (a.last_id, a.max_deleted_id, a.entries_added)
            == (b.last_id, b.max_deleted_id, b.entries_added)
        && a.range(StreamId::MIN, StreamId::MAX).eq(b.range(StreamId::MIN, StreamId::MAX))
        && a.groups == b.groups
}

#[cfg(test)]
mod tests {
    use super::super::{crc64, dump, load, verify, Value, RDB_VERSION};
    use super::*;
    use crate::stream::NodeLimits;

    /// A stream over several nodes, with deletions, integer-looking fields, two groups
    /// (one with pending entries of two consumers, one with an unknown read counter).
    fn sample() -> StreamValue {
        let mut stream = StreamValue::default();
        let limits = NodeLimits { max_bytes: 4096, max_entries: 10 };
        for n in 1..=40u64 {
            let (value, seq) = (n.to_string(), n % 3);
            let pairs: Vec<(&[u8], &[u8])> = match n % 4 {
                0 => vec![(b"other", b"-7"), (b"x", value.as_bytes())],
                _ => vec![(b"f", value.as_bytes()), (b"name", b"some text")],
            };
            stream.append(StreamId::new(n, seq), pairs.into_iter(), limits);
            stream.last_id = StreamId::new(n, seq);
            stream.entries_added += 1;
        }
        assert!(stream.delete(StreamId::new(5, 2)) && stream.delete(StreamId::new(11, 2)));
        stream.max_deleted_id = StreamId::new(11, 2);
        let mut group = Group::new(StreamId::new(6, 0), Some(5));
        group.consumer(b"alice", 1_000);
        group.consumer(b"bob", 2_000);
        group.consumer(b"idle", 3_000);
        group.deliver(StreamId::new(1, 1), b"alice", 10);
        group.deliver(StreamId::new(2, 2), b"bob", 20);
        group.deliver(StreamId::new(5, 2), b"bob", 30);
        stream.groups.insert(Box::from(&b"g"[..]), group);
        stream.groups.insert(Box::from(&b"later"[..]), Group::new(StreamId::new(20, 2), None));
        stream
    }

    fn sealed(body: &[u8]) -> Vec<u8> {
        let mut out = body.to_vec();
        out.extend_from_slice(&RDB_VERSION.to_le_bytes());
        out.extend_from_slice(&crc64(&out).to_le_bytes());
        out
    }

    /// Goal: a stream, its counters and its groups round-trip through a payload, node for
    /// node; an empty stream too. Method: dump, load, compare.
    #[test]
    fn round_trip() {
        for stream in [sample(), StreamValue::default()] {
            let payload = dump(&Value::Stream(Box::new(stream.clone())));
            assert!(verify(&payload));
            let Some(Value::Stream(loaded)) = load(&payload) else { panic!("refused") };
            assert!(same_stream(&loaded, &stream));
            assert_eq!(loaded.node_count(), stream.node_count());
            assert_eq!(dump(&Value::Stream(loaded)), payload, "written again the same");
        }
    }

    /// Goal: damaged payloads are refused or read as some stream, never a panic: every
    /// cut and every single-byte change of a sample payload (resealed, so the checksum
    /// passes). Method: exhaustive over the sample's bytes.
    #[test]
    fn damage_never_panics() {
        let payload = dump(&Value::Stream(Box::new(sample())));
        let body = &payload[..payload.len() - 10];
        for cut in 0..body.len() {
            assert_eq!(load(&sealed(&body[..cut])), None, "cut at {cut}");
        }
        for at in 0..body.len() {
            for flip in [0x01, 0x80, 0xff] {
                let mut damaged = body.to_vec();
                damaged[at] ^= flip;
                if let Some(Value::Stream(stream)) = load(&sealed(&damaged)) {
                    // Whatever loads keeps the invariants the commands rely on.
                    let ids: Vec<StreamId> =
                        stream.range(StreamId::MIN, StreamId::MAX).map(|e| e.id).collect();
                    assert!(ids.windows(2).all(|w| w[0] < w[1]));
                    assert!(ids.last().is_none_or(|&last| last <= stream.last_id));
                    assert_eq!(ids.len() as u64, stream.len());
                }
            }
        }
    }

    /// Goal: what Redis never writes is refused: a pending entry no consumer owns, or two
    /// own; a length that disagrees with the entries. Method: hand-made payloads.
    #[test]
    fn inconsistent_payloads_refused() {
        let mut stream = sample();
        let group = stream.groups.get_mut(&b"g"[..]).expect("made above");
        group.consumers.get_mut(&b"alice"[..]).expect("made").pel.clear();
        assert_eq!(load(&dump(&Value::Stream(Box::new(stream)))), None, "unowned");
        let mut stream = sample();
        let group = stream.groups.get_mut(&b"g"[..]).expect("made above");
        group.consumers.get_mut(&b"idle"[..]).expect("made").pel.insert(StreamId::new(1, 1));
        assert_eq!(load(&dump(&Value::Stream(Box::new(stream)))), None, "owned twice");
        let payload = dump(&Value::Stream(Box::default()));
        // type, no nodes, then length 0: say 1.
        let mut body = payload[..payload.len() - 10].to_vec();
        assert_eq!(&body[..3], &[TYPE_STREAM_LISTPACKS_2, 0, 0]);
        body[2] = 1;
        assert_eq!(load(&sealed(&body)), None, "length without entries");
    }
}
