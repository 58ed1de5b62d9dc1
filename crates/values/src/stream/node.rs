//! A node of a stream: up to a few hundred consecutive entries, as Redis keeps them in
//! one listpack. The entries are kept decoded (an ID and one allocation for the fields);
//! beside them the node tracks the size Redis's listpack for the same appends would have,
//! so that it closes exactly where Redis opens a new node (`stream-node-max-bytes` /
//! `-entries`): trimming with `~` removes whole nodes, so what XADD MAXLEN ~ leaves
//! depends on where nodes end.

use super::StreamId;
use crate::{int::parse_canonical_i64, varint};

/// One entry: its ID and its fields, `count, (len, name, len, value)*` with LEB128
/// lengths, in one allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub id: StreamId,
    pub(crate) fields: Box<[u8]>,
}

impl Entry {
    /// An entry of these (field, value) pairs.
    pub fn new<'a>(id: StreamId, pairs: impl Iterator<Item = (&'a [u8], &'a [u8])>) -> Entry {
        let mut body = Vec::new();
        let mut count = 0usize;
        for (name, value) in pairs {
            varint::put_usize(&mut body, name.len());
            body.extend_from_slice(name);
            varint::put_usize(&mut body, value.len());
            body.extend_from_slice(value);
            count += 1;
        }
        let mut fields = Vec::with_capacity(body.len() + 2);
        varint::put_usize(&mut fields, count);
        fields.extend_from_slice(&body);
        Entry { id, fields: fields.into_boxed_slice() }
    }

    /// How many (field, value) pairs.
    #[inline]
    pub fn field_count(&self) -> usize {
        varint::read_usize(&self.fields).map_or(0, |(count, _)| count)
    }

    /// The (field, value) pairs, in order.
    #[inline]
    pub fn pairs(&self) -> Pairs<'_> {
        let (count, used) = varint::read_usize(&self.fields).unwrap_or((0, self.fields.len()));
        Pairs { rest: &self.fields[used..], left: count }
    }

    /// The bytes this entry's allocation holds.
    #[inline]
    pub fn heap_len(&self) -> usize {
        self.fields.len()
    }
}

/// An entry's (field, value) pairs.
#[derive(Debug, Clone)]
pub struct Pairs<'e> {
    rest: &'e [u8],
    left: usize,
}

impl<'e> Iterator for Pairs<'e> {
    type Item = (&'e [u8], &'e [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let name = take(&mut self.rest)?;
        let value = take(&mut self.rest)?;
        Some((name, value))
    }
}

/// A length-prefixed piece from the front of `rest`.
fn take<'e>(rest: &mut &'e [u8]) -> Option<&'e [u8]> {
    let (len, used) = varint::read_usize(rest)?;
    let piece = rest.get(used..used.checked_add(len)?)?;
    *rest = &rest[used + len..];
    Some(piece)
}

/// Whether `fields` is a well-formed fields allocation (what [`Entry::pairs`] reads whole).
pub(crate) fn fields_valid(fields: &[u8]) -> bool {
    let Some((count, used)) = varint::read_usize(fields) else { return false };
    let mut rest = &fields[used..];
    for _ in 0..count {
        if take(&mut rest).is_none() || take(&mut rest).is_none() {
            return false;
        }
    }
    rest.is_empty()
}

/// A node: its master ID (the first entry's ever added, its key in the stream's map), the
/// master entry's field names, its live entries in order, and Redis's counts.
#[derive(Debug, Clone, Default)]
pub struct Node {
    pub(crate) master_fields: Vec<Box<[u8]>>,
    pub(crate) entries: Vec<Entry>,
    /// Entries deleted from the node (Redis keeps them, flagged, until the node goes).
    pub(crate) deleted: u64,
    /// Redis's listpack size for the node, without its two counts (live, deleted).
    pub(crate) body_bytes: usize,
    /// The last entry's ID ever pushed (deleted or not): what Redis's MINID trim reads.
    pub(crate) last_pushed: StreamId,
}

/// Where Redis's tail node ends: `stream-node-max-bytes` and `stream-node-max-entries`
/// (0: no limit on that count).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLimits {
    pub max_bytes: u64,
    pub max_entries: u64,
}

impl Default for NodeLimits {
    fn default() -> Self {
        NodeLimits { max_bytes: 4096, max_entries: 100 }
    }
}

/// Redis's largest listpack (`STREAM_LISTPACK_MAX_SIZE`, 1 GiB).
pub const LISTPACK_MAX_BYTES: u64 = 1 << 30;

impl Node {
    /// A node opened by `entry` (its master).
    pub(crate) fn open(master: StreamId, entry: Entry) -> Node {
        let master_fields: Vec<Box<[u8]>> =
            entry.pairs().map(|(name, _)| Box::from(name)).collect();
        // The listpack's header and end, the master's field count, names and terminator.
        let mut body_bytes = 6 + 1 + int_bytes(master_fields.len() as i64) + int_bytes(0);
        body_bytes += master_fields.iter().map(|name| str_bytes(name)).sum::<usize>();
        let mut node = Node {
            master_fields,
            entries: Vec::new(),
            deleted: 0,
            body_bytes,
            last_pushed: master,
        };
        node.push(master, entry);
        node
    }

    /// Whether Redis appends an entry of `fields_len` bytes of names and values to this
    /// node (else it opens a new one).
    pub(crate) fn takes(&self, fields_len: usize, limits: NodeLimits) -> bool {
        let max_bytes = match limits.max_bytes {
            0 => LISTPACK_MAX_BYTES,
            n => n.min(LISTPACK_MAX_BYTES),
        };
        if self.lp_bytes() as u64 + fields_len as u64 >= max_bytes {
            return false;
        }
        limits.max_entries == 0 || (self.entries.len() as u64 + self.deleted) < limits.max_entries
    }

    /// Appends `entry` (after every entry here), counting its listpack bytes against the
    /// node's `master` ID.
    pub(crate) fn push(&mut self, master: StreamId, entry: Entry) {
        let same = entry.field_count() == self.master_fields.len()
            && entry
                .pairs()
                .zip(&self.master_fields)
                .all(|((name, _), master)| name == &master[..]);
        let mut bytes = int_bytes(2) // flags
            + int_bytes(entry.id.ms.wrapping_sub(master.ms) as i64)
            + int_bytes(entry.id.seq.wrapping_sub(master.seq) as i64);
        let count = entry.field_count();
        if same {
            bytes += entry.pairs().map(|(_, value)| str_bytes(value)).sum::<usize>();
            bytes += int_bytes(count as i64 + 3);
        } else {
            bytes += int_bytes(count as i64);
            bytes += entry
                .pairs()
                .map(|(name, value)| str_bytes(name) + str_bytes(value))
                .sum::<usize>();
            bytes += int_bytes(2 * count as i64 + 4);
        }
        self.body_bytes += bytes;
        self.last_pushed = entry.id;
        self.entries.push(entry);
    }

    /// Redis's listpack size for this node.
    #[inline]
    pub(crate) fn lp_bytes(&self) -> usize {
        self.body_bytes + int_bytes(self.entries.len() as i64) + int_bytes(self.deleted as i64)
    }

    /// The position of `id` among the live entries, or where it would go.
    #[inline]
    pub(crate) fn search(&self, id: StreamId) -> Result<usize, usize> {
        self.entries.binary_search_by(|entry| entry.id.cmp(&id))
    }

    /// Removes the live entry at `at` (Redis flags it deleted: the node's size stays).
    pub(crate) fn delete_at(&mut self, at: usize) -> Entry {
        self.deleted += 1;
        self.entries.remove(at)
    }

    /// Removes the first `n` live entries.
    pub(crate) fn delete_first(&mut self, n: usize) -> Vec<Entry> {
        self.deleted += n as u64;
        self.entries.drain(..n).collect()
    }
}

/// A listpack element's backlen size for an encoding of `len` bytes.
fn backlen_bytes(len: usize) -> usize {
    match len {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    }
}

/// A listpack integer element's size (encoding and backlen).
pub(crate) fn int_bytes(n: i64) -> usize {
    let encoded = match n {
        0..=127 => 1,
        -4096..=4095 => 2,
        -32768..=32767 => 3,
        -8388608..=8388607 => 4,
        -2147483648..=2147483647 => 5,
        _ => 9,
    };
    encoded + 1
}

/// A listpack string element's size: as an integer when it is one's canonical text.
pub(crate) fn str_bytes(text: &[u8]) -> usize {
    if let Some(n) = parse_canonical_i64(text) {
        return int_bytes(n);
    }
    let len = text.len();
    let encoded = match len {
        0..=63 => 1 + len,
        64..=4095 => 2 + len,
        _ => 5 + len,
    };
    encoded + backlen_bytes(encoded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: u64, pairs: &[(&str, &str)]) -> Entry {
        Entry::new(StreamId::new(id, 0), pairs.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())))
    }

    /// Goal: pairs read back as given, and the listpack sizes follow Redis's encodings.
    #[test]
    fn entries_and_sizes() {
        let e = entry(1, &[("a", "1"), ("bb", "")]);
        assert_eq!(e.pairs().collect::<Vec<_>>(), [(&b"a"[..], &b"1"[..]), (b"bb", b"")]);
        assert!(fields_valid(&e.fields));
        assert!(!fields_valid(&e.fields[..e.fields.len() - 1]));
        assert_eq!(
            (int_bytes(127), int_bytes(128), int_bytes(-4096), int_bytes(i64::MAX)),
            (2, 3, 3, 10)
        );
        assert_eq!((str_bytes(b"12"), str_bytes(b"012"), str_bytes(&[b'x'; 64])), (2, 5, 67));
        // A node of one `a 1` entry (28 bytes in redis-server 7.0.15's DUMP): header 7,
        // counts 2+2, master: 2 + 3 + 2 (0), entry:
        // flags 2, ms 2, seq 2, value 2, lp-count 2.
        let node = Node::open(StreamId::new(1, 0), entry(1, &[("a", "1")]));
        assert_eq!(node.lp_bytes(), 7 + 4 + 7 + 10);
    }
}
