//! A node of a stream: up to a few hundred consecutive entries, packed in one byte buffer
//! as Redis packs them in one listpack. Beside the buffer the node tracks the size Redis's
//! listpack for the same appends would have, so that it closes exactly where Redis opens
//! a new node (`stream-node-max-bytes` / `-entries`): trimming with `~` removes whole
//! nodes, so what XADD MAXLEN ~ leaves depends on where nodes end.
//!
//! The buffer (LEB128 numbers, length-prefixed strings):
//!
//! ```text
//!   master field count | names...                  (the node's first entry's names)
//!   entries, each: flags | ID | fields
//!     flags: 1 deleted, 2 same names as the master, 4 the ID is the one expected
//!     ID (absent with flag 4): ms - previous ms | seq (- previous seq when ms is the same)
//!     fields: with flag 2, the values only; else count | (name | value)...
//! ```
//!
//! The previous ID of the first entry is the master ID, and the one expected there is the
//! master ID itself; after it, the previous entry's seq plus one in the same ms (what `*`
//! gives under load). Deleted entries stay, flagged, until their node goes (as in Redis):
//! every ID is told from the one before it, so the chain must stay whole.

use super::StreamId;
use crate::{int::parse_canonical_i64, varint};

const FLAG_DELETED: u8 = 1;
const FLAG_SAME_FIELDS: u8 = 2;
const FLAG_NEXT_ID: u8 = 4;

/// One live entry, read in place from its node: its ID and its (field, value) pairs.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'n> {
    pub id: StreamId,
    /// The master's names (count, then names) when the entry has the same names.
    names: Option<&'n [u8]>,
    /// The values (same names) or count, then (name, value) pairs.
    body: &'n [u8],
}

impl<'n> Entry<'n> {
    /// How many (field, value) pairs.
    #[inline]
    pub fn field_count(&self) -> usize {
        let counted = self.names.unwrap_or(self.body);
        varint::read_usize(counted).map_or(0, |(count, _)| count)
    }

    /// The (field, value) pairs, in order.
    #[inline]
    pub fn pairs(&self) -> Pairs<'n> {
        match self.names {
            Some(names) => {
                let (left, used) = varint::read_usize(names).unwrap_or((0, names.len()));
                Pairs { names: Some(&names[used..]), rest: self.body, left }
            }
            None => {
                let (left, used) = varint::read_usize(self.body).unwrap_or((0, self.body.len()));
                Pairs { names: None, rest: &self.body[used..], left }
            }
        }
    }
}

impl PartialEq for Entry<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id && self.pairs().eq(other.pairs())
    }
}

/// An entry's (field, value) pairs.
#[derive(Debug, Clone)]
pub struct Pairs<'n> {
    /// The master's names left, when the entry has them.
    names: Option<&'n [u8]>,
    rest: &'n [u8],
    left: usize,
}

impl<'n> Iterator for Pairs<'n> {
    type Item = (&'n [u8], &'n [u8]);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let name = match &mut self.names {
            Some(names) => take(names)?,
            None => take(&mut self.rest)?,
        };
        let value = take(&mut self.rest)?;
        Some((name, value))
    }
}

/// A length-prefixed piece from the front of `rest`.
#[inline]
fn take<'e>(rest: &mut &'e [u8]) -> Option<&'e [u8]> {
    let len = usize::try_from(number(rest)?).ok()?;
    let piece = rest.get(..len)?;
    *rest = &rest[len..];
    Some(piece)
}

/// A varint from the front of `rest`: one byte (most lengths and ID steps here) read
/// inline, longer ones by `varint::read`.
#[inline(always)]
fn number(rest: &mut &[u8]) -> Option<u64> {
    match rest.split_first() {
        Some((&byte, after)) if byte < 0x80 => {
            *rest = after;
            Some(u64::from(byte))
        }
        _ => {
            let (n, used) = varint::read(rest)?;
            *rest = &rest[used..];
            Some(n)
        }
    }
}

/// Skips `n` length-prefixed pieces; false when `rest` ends inside them.
#[inline]
fn skip_pieces(rest: &mut &[u8], n: usize) -> bool {
    (0..n).all(|_| take(rest).is_some())
}

/// One entry as it lies in the buffer, deleted or not.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot<'n> {
    /// Where its flags byte is.
    pub(crate) at: usize,
    pub(crate) deleted: bool,
    pub(crate) entry: Entry<'n>,
}

/// The entries of a node from its first, deleted ones included. Reading stops at the
/// first byte that does not parse ([`Node::from_raw`] refuses such a buffer).
#[derive(Debug, Clone)]
pub(crate) struct Slots<'n> {
    buf: &'n [u8],
    /// The master's names (count, then names).
    names: &'n [u8],
    master_count: usize,
    at: usize,
    prev: StreamId,
    first: bool,
    /// The next entry's ID when known already (reading from a [`Node::marks`] mark): its
    /// ID bytes are then skipped.
    known: Option<StreamId>,
}

impl<'n> Slots<'n> {
    /// The next ID from the front of `rest`, after flags `flags`.
    #[inline(always)]
    fn id(&mut self, flags: u8, rest: &mut &[u8]) -> Option<StreamId> {
        if let Some(id) = self.known.take() {
            if flags & FLAG_NEXT_ID == 0 {
                number(rest)?;
                number(rest)?;
            }
            return Some(id);
        }
        if flags & FLAG_NEXT_ID != 0 {
            return if self.first {
                Some(self.prev)
            } else {
                Some(StreamId::new(self.prev.ms, self.prev.seq.checked_add(1)?))
            };
        }
        let ms_delta = number(rest)?;
        let seq = number(rest)?;
        if ms_delta == 0 {
            Some(StreamId::new(self.prev.ms, self.prev.seq.checked_add(seq)?))
        } else {
            Some(StreamId::new(self.prev.ms.checked_add(ms_delta)?, seq))
        }
    }
}

impl<'n> Iterator for Slots<'n> {
    type Item = Slot<'n>;

    #[inline(always)]
    fn next(&mut self) -> Option<Slot<'n>> {
        let at = self.at;
        let mut rest = self.buf.get(at..)?;
        let (&flags, after) = rest.split_first()?;
        rest = after;
        let id = self.id(flags, &mut rest)?;
        let body_start = rest;
        let same = flags & FLAG_SAME_FIELDS != 0;
        let pieces = if same {
            self.master_count
        } else {
            number(&mut rest).and_then(|n| usize::try_from(n).ok()?.checked_mul(2))?
        };
        if !skip_pieces(&mut rest, pieces) {
            return None;
        }
        let body = &body_start[..body_start.len() - rest.len()];
        self.at = self.buf.len() - rest.len();
        self.prev = id;
        self.first = false;
        let names = same.then_some(self.names);
        Some(Slot { at, deleted: flags & FLAG_DELETED != 0, entry: Entry { id, names, body } })
    }
}

/// One stretch's entries (at most [`MARK_EVERY`] but past 4 GiB), read forward and
/// handed out last first, without an allocation unless it holds more.
#[derive(Default)]
struct Stretch<'n> {
    held: [Option<Entry<'n>>; MARK_EVERY as usize],
    len: usize,
    more: Vec<Entry<'n>>,
}

impl<'n> Stretch<'n> {
    #[inline]
    fn push(&mut self, entry: Entry<'n>) {
        match self.held.get_mut(self.len) {
            Some(slot) if self.more.is_empty() => {
                *slot = Some(entry);
                self.len += 1;
            }
            _ => self.more.push(entry),
        }
    }
}

impl<'n> Iterator for Stretch<'n> {
    type Item = Entry<'n>;

    #[inline]
    fn next(&mut self) -> Option<Entry<'n>> {
        if let Some(entry) = self.more.pop() {
            return Some(entry);
        }
        self.len = self.len.checked_sub(1)?;
        self.held[self.len]
    }
}

/// A node: its buffer (see the module's text) and Redis's counts. Its master ID (the
/// first entry's, its key in the stream's map) is kept by the map.
#[derive(Debug, Clone, Default)]
pub struct Node {
    pub(crate) buf: Vec<u8>,
    /// Where the entries start in `buf` (after the master's names).
    entries_at: usize,
    /// Where the last entry pushed starts.
    tail_at: usize,
    pub(crate) live: u64,
    /// Entries deleted from the node (flagged in `buf` until the node goes).
    pub(crate) deleted: u64,
    /// Redis's listpack size for the node, without its two counts (live, deleted).
    pub(crate) body_bytes: usize,
    /// The last entry's ID ever pushed (deleted or not): what Redis's MINID trim reads.
    pub(crate) last_pushed: StreamId,
    /// The master's field count.
    master_count: usize,
    /// Every [`MARK_EVERY`]th entry's ID and place (deleted or not), so that a read
    /// starting inside the node skips to near its start rather than read from the front.
    marks: Vec<(StreamId, u32)>,
}

/// How many entries apart the marks are: a read from inside a node walks at most this
/// many entries to its start; each costs 24 bytes per so many entries.
const MARK_EVERY: u64 = 16;

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

/// What malloc takes for `capacity` bytes: an 8-byte header, 16-byte steps, 32 at least.
#[inline]
pub(crate) fn malloc_bytes(capacity: usize) -> usize {
    match capacity {
        0 => 0,
        n => (n + 8).next_multiple_of(16).max(32),
    }
}

impl Node {
    /// An empty node whose master entry has these field names.
    pub(crate) fn new<'a>(master: StreamId, names: impl Iterator<Item = &'a [u8]>) -> Node {
        let mut buf = Vec::new();
        let mut count = 0usize;
        let mut body_bytes = 0;
        let mut names_part = Vec::new();
        for name in names {
            put_piece(&mut names_part, name);
            body_bytes += str_bytes(name);
            count += 1;
        }
        varint::put_usize(&mut buf, count);
        buf.extend_from_slice(&names_part);
        // The listpack's header and end, the master's field count, names and terminator.
        body_bytes += 6 + 1 + int_bytes(count as i64) + int_bytes(0);
        let entries_at = buf.len();
        Node {
            buf,
            entries_at,
            tail_at: entries_at,
            body_bytes,
            last_pushed: master,
            master_count: count,
            ..Node::default()
        }
    }

    /// A node opened by an entry (its master) of these pairs.
    pub(crate) fn open<'a, I>(master: StreamId, pairs: I) -> Node
    where
        I: Iterator<Item = (&'a [u8], &'a [u8])> + Clone,
    {
        let mut node = Node::new(master, pairs.clone().map(|(name, _)| name));
        node.push(master, master, pairs, false);
        node
    }

    /// A node from its buffer as [`Node::buf`] holds it (a snapshot's), checked whole:
    /// every entry parses, IDs rise from `master`, which is past `after` (the last ID
    /// before the node, moved to the node's last), one live entry at least. `None` otherwise.
    pub(crate) fn from_raw(
        master: StreamId,
        raw: &[u8],
        body_bytes: usize,
        after: &mut Option<StreamId>,
    ) -> Option<Node> {
        if after.is_some_and(|prev| master <= prev) {
            return None;
        }
        let mut rest = raw;
        let master_count = usize::try_from(number(&mut rest)?).ok()?;
        if master_count > rest.len() || !skip_pieces(&mut rest, master_count) {
            return None;
        }
        let entries_at = raw.len() - rest.len();
        let mut node = Node {
            buf: raw.to_vec(),
            entries_at,
            tail_at: entries_at,
            body_bytes,
            last_pushed: master,
            master_count,
            ..Node::default()
        };
        let (mut live, mut deleted, mut end) = (0u64, 0u64, entries_at);
        let (mut tail_at, mut last_pushed) = (entries_at, master);
        let mut marks = Vec::new();
        let mut slots = node.slots(master);
        while let Some(slot) = slots.next() {
            let id = slot.entry.id;
            let known = node.buf[slot.at] & !(FLAG_DELETED | FLAG_SAME_FIELDS | FLAG_NEXT_ID) == 0;
            if !known || id < master || after.is_some_and(|prev| id <= prev) {
                return None;
            }
            *after = Some(id);
            (tail_at, last_pushed, end) = (slot.at, id, slots.at);
            let index = live + deleted;
            if index > 0 && index.is_multiple_of(MARK_EVERY) {
                marks.push((index, id, slot.at));
            }
            match slot.deleted {
                true => deleted += 1,
                false => live += 1,
            }
        }
        if end != raw.len() || live == 0 {
            return None;
        }
        (node.live, node.deleted, node.tail_at, node.last_pushed) =
            (live, deleted, tail_at, last_pushed);
        marks.into_iter().for_each(|(index, id, at)| node.mark(index, id, at));
        Some(node)
    }

    /// The master's names: count, then names.
    #[inline]
    fn names(&self) -> &[u8] {
        &self.buf[..self.entries_at]
    }

    /// The master's field names.
    pub(crate) fn master_fields(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let mut rest = self.names();
        let count = number(&mut rest).unwrap_or(0);
        (0..count).map_while(move |_| take(&mut rest))
    }

    /// Every entry, deleted ones included, from the first; `master` is the node's key.
    #[inline]
    pub(crate) fn slots(&self, master: StreamId) -> Slots<'_> {
        Slots {
            buf: &self.buf,
            names: self.names(),
            master_count: self.master_count,
            at: self.entries_at,
            prev: master,
            first: true,
            known: None,
        }
    }

    /// The entries from the one at `at`, whose ID is `id`, deleted ones included.
    #[inline]
    fn slots_from(&self, at: usize, id: StreamId) -> Slots<'_> {
        Slots { at, prev: id, first: false, known: Some(id), ..self.slots(id) }
    }

    /// The entries from the last mark at or below `id` (from the front without one).
    fn slots_near(&self, master: StreamId, id: StreamId) -> Slots<'_> {
        match self.marks.partition_point(|&(mark, _)| mark <= id) {
            0 => self.slots(master),
            n => {
                let (mark, at) = self.marks[n - 1];
                self.slots_from(at as usize, mark)
            }
        }
    }

    /// The live entries from `start` on.
    #[inline]
    pub(crate) fn entries_from(
        &self,
        master: StreamId,
        start: StreamId,
    ) -> impl Iterator<Item = Entry<'_>> + Clone {
        let mut slots = self.slots_near(master, start);
        let from = loop {
            let before = slots.clone();
            match slots.next() {
                Some(slot) if slot.entry.id < start => {}
                _ => break before,
            }
        };
        from.filter(|slot| !slot.deleted).map(|slot| slot.entry)
    }

    /// The live entries from `end` down to `start` (both included). Entries read forward
    /// only, so the node is read by stretches between marks (stretch `n` from mark `n - 1`,
    /// or the front, to mark `n`), from the one holding `end` back, each forward and then
    /// backward.
    pub(crate) fn entries_rev(
        &self,
        master: StreamId,
        start: StreamId,
        end: StreamId,
    ) -> impl Iterator<Item = Entry<'_>> {
        let last = self.marks.partition_point(|&(mark, _)| mark <= end);
        (0..=last)
            .rev()
            .map_while(move |stretch| {
                let stop = self.marks.get(stretch).map(|&(mark, _)| mark);
                if stop.is_some_and(|stop| stop <= start) {
                    return None;
                }
                let slots = match stretch {
                    0 => self.slots(master),
                    n => self.slots_from(self.marks[n - 1].1 as usize, self.marks[n - 1].0),
                };
                let mut picked = Stretch::default();
                slots
                    .take_while(|slot| stop.is_none_or(|stop| slot.entry.id < stop))
                    .take_while(|slot| slot.entry.id <= end)
                    .filter(|slot| !slot.deleted && slot.entry.id >= start)
                    .for_each(|slot| picked.push(slot.entry));
                Some(picked)
            })
            .flatten()
    }

    /// The live entries, in order.
    #[inline]
    pub(crate) fn entries(&self, master: StreamId) -> impl Iterator<Item = Entry<'_>> + Clone {
        self.slots(master).filter(|slot| !slot.deleted).map(|slot| slot.entry)
    }

    /// The first live entry.
    pub(crate) fn first(&self, master: StreamId) -> Option<Entry<'_>> {
        self.entries(master).next()
    }

    /// The last live entry: the last pushed, unless deleted (then a walk).
    pub(crate) fn last(&self, master: StreamId) -> Option<Entry<'_>> {
        if self.live == 0 {
            return None;
        }
        let tail = self.slots_from(self.tail_at, self.last_pushed).next();
        match tail {
            Some(slot) if !slot.deleted => Some(slot.entry),
            _ => self.entries(master).last(),
        }
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
        limits.max_entries == 0 || (self.live + self.deleted) < limits.max_entries
    }

    /// Appends entry `id` (above every ID here; `deleted` when a payload says so), and
    /// counts its listpack bytes against the node's `master` ID.
    pub(crate) fn push<'a, I>(&mut self, master: StreamId, id: StreamId, pairs: I, deleted: bool)
    where
        I: Iterator<Item = (&'a [u8], &'a [u8])> + Clone,
    {
        let count = pairs.clone().count();
        let same = count == self.master_count
            && pairs.clone().map(|(name, _)| name).eq(self.master_fields());
        let first = self.live + self.deleted == 0;
        let prev = if first { master } else { self.last_pushed };
        debug_assert!(id > prev || (first && id >= prev));
        let expected = match first {
            true => Some(master),
            false => prev.seq.checked_add(1).map(|seq| StreamId::new(prev.ms, seq)),
        };
        let mut flags = if same { FLAG_SAME_FIELDS } else { 0 };
        if deleted {
            flags |= FLAG_DELETED;
        }
        if expected == Some(id) {
            flags |= FLAG_NEXT_ID;
        }
        let at = self.buf.len();
        self.mark(self.live + self.deleted, id, at);
        self.buf.push(flags);
        if flags & FLAG_NEXT_ID == 0 {
            let ms_delta = id.ms.wrapping_sub(prev.ms);
            varint::put(&mut self.buf, ms_delta);
            varint::put(
                &mut self.buf,
                if ms_delta == 0 { id.seq.wrapping_sub(prev.seq) } else { id.seq },
            );
        }
        if !same {
            varint::put_usize(&mut self.buf, count);
        }
        for (name, value) in pairs.clone() {
            if !same {
                put_piece(&mut self.buf, name);
            }
            put_piece(&mut self.buf, value);
        }
        self.body_bytes += lp_entry_bytes(master, id, pairs, same, count);
        self.tail_at = at;
        self.last_pushed = id;
        match deleted {
            true => self.deleted += 1,
            false => self.live += 1,
        }
    }

    /// Marks entry number `index` (`id`, at `at`) if it is one of every [`MARK_EVERY`].
    #[inline]
    fn mark(&mut self, index: u64, id: StreamId, at: usize) {
        if index > 0 && index.is_multiple_of(MARK_EVERY) {
            // (Past 4 GiB no mark: a read walks from the last one.)
            if let Ok(at) = u32::try_from(at) {
                self.marks.push((id, at));
            }
        }
    }

    /// Redis's listpack size for this node.
    #[inline]
    pub(crate) fn lp_bytes(&self) -> usize {
        self.body_bytes + int_bytes(self.live as i64) + int_bytes(self.deleted as i64)
    }

    /// What the node's buffer takes from malloc.
    #[inline]
    pub(crate) fn heap_bytes(&self) -> usize {
        let mark_bytes = size_of::<(StreamId, u32)>();
        malloc_bytes(self.buf.capacity()) + malloc_bytes(self.marks.capacity() * mark_bytes)
    }

    /// Gives back the buffer's spare room (the node is closed: no more appends).
    pub(crate) fn close(&mut self) {
        self.buf.shrink_to_fit();
        self.marks.shrink_to_fit();
    }

    /// Flags the live entry at `at` deleted.
    fn flag_deleted(&mut self, at: usize) {
        self.buf[at] |= FLAG_DELETED;
        self.live -= 1;
        self.deleted += 1;
    }

    /// Deletes the live entry `id`; whether it was there.
    pub(crate) fn delete(&mut self, master: StreamId, id: StreamId) -> bool {
        let found = self
            .slots_near(master, id)
            .take_while(|slot| slot.entry.id <= id)
            .find(|slot| slot.entry.id == id && !slot.deleted);
        match found {
            Some(slot) => {
                self.flag_deleted(slot.at);
                true
            }
            None => false,
        }
    }

    /// Deletes the first `n` live entries.
    pub(crate) fn delete_first(&mut self, master: StreamId, n: u64) {
        let at: Vec<usize> = self
            .slots(master)
            .filter(|slot| !slot.deleted)
            .take(n as usize)
            .map(|s| s.at)
            .collect();
        at.into_iter().for_each(|at| self.flag_deleted(at));
    }

    /// Deletes the live entries below `min`; how many.
    pub(crate) fn delete_below(&mut self, master: StreamId, min: StreamId) -> u64 {
        let at: Vec<usize> = self
            .slots(master)
            .take_while(|slot| slot.entry.id < min)
            .filter(|slot| !slot.deleted)
            .map(|slot| slot.at)
            .collect();
        at.iter().for_each(|&at| self.flag_deleted(at));
        at.len() as u64
    }
}

/// What an entry adds to Redis's listpack: flags, ID deltas from the master, the values
/// (names too unless `same`), the element count.
fn lp_entry_bytes<'a>(
    master: StreamId,
    id: StreamId,
    pairs: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    same: bool,
    count: usize,
) -> usize {
    let mut bytes = int_bytes(2) // flags
        + int_bytes(id.ms.wrapping_sub(master.ms) as i64)
        + int_bytes(id.seq.wrapping_sub(master.seq) as i64);
    if same {
        bytes += pairs.map(|(_, value)| str_bytes(value)).sum::<usize>();
        bytes += int_bytes(count as i64 + 3);
    } else {
        bytes += int_bytes(count as i64);
        bytes += pairs.map(|(name, value)| str_bytes(name) + str_bytes(value)).sum::<usize>();
        bytes += int_bytes(2 * count as i64 + 4);
    }
    bytes
}

/// A length-prefixed piece.
#[inline]
fn put_piece(out: &mut Vec<u8>, piece: &[u8]) {
    varint::put_usize(out, piece.len());
    out.extend_from_slice(piece);
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
