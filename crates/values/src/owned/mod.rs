//! Large collections kept outside the store: the structures of lists, hashes, sets and
//! sorted sets, and what each element is charged.
//!
//! A collection whose compact encoding grows large moves out of the store into one of
//! these (exec's `owned` registry ties it to its key, its lock and its charge), so that a
//! change edits it in place instead of rewriting the encoding.

use std::collections::{HashMap, VecDeque};

use crate::varint;

mod slots;
mod zset;

use slots::{KeyOf, Slots};

pub use zset::{order, zset_member_bytes, ZSetValue};

/// What an element's slot in the deque costs: its box (pointer and length), and half as
/// much again for the deque's spare capacity on average (it doubles as it grows).
const SLOT_BYTES: usize = 24;

/// The allocator's header on each element's bytes (glibc malloc: 8), which it rounds up
/// to 16.
const MALLOC_HEADER_BYTES: usize = 8;

/// A collection kept outside the store.
#[derive(Debug, Clone)]
pub enum Value {
    List(VecDeque<Box<[u8]>>),
    Hash(HashValue),
    Set(SetValue),
    ZSet(ZSetValue),
    /// A stream is always kept here (never as an encoding in the store).
    Stream(Box<crate::stream::StreamValue>),
}

impl Value {
    /// A value that holds nothing (what a released or detached entry is left with).
    #[inline]
    pub fn empty() -> Value {
        Value::List(VecDeque::new())
    }

    /// The bytes this value is charged for (O(size): changes that know what they added or
    /// removed count it in [`State::value_bytes`] instead).
    #[inline]
    pub fn charged_bytes(&self) -> usize {
        match self {
            Value::List(list) => list.iter().map(|e| element_bytes(e.len())).sum(),
            Value::Hash(hash) => hash.charged_bytes(),
            Value::Set(set) => set.iter().map(|member| set_member_bytes(member.len())).sum(),
            Value::ZSet(zset) => {
                zset.iter().map(|(_, member)| zset_member_bytes(member.len())).sum()
            }
            Value::Stream(stream) => stream.charged_bytes(),
        }
    }
}

/// The encoding of a value kept outside the store (as the store would hold it); `None`
/// when it is empty.
#[inline]
pub fn encode(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::List(list) => crate::list::encode_owned(list),
        Value::Hash(hash) => crate::hash::encode_owned(hash),
        Value::Set(set) => crate::set::encode_owned(set),
        Value::ZSet(zset) => crate::zset::encode_owned(zset),
        Value::Stream(stream) => Some(crate::stream::encode(stream)),
    }
}

/// A hash kept outside the store: its fields in [`Slots`], each one allocation (its name's
/// length as a LEB128 varint, the name, the value), so that a field costs about what it
/// does in Redis's hash table and a random field is one index away.
#[derive(Debug, Clone, Default)]
pub struct HashValue {
    fields: Slots<FieldName>,
    /// The expiry (Unix milliseconds) of each field that has one.
    pub expire_at_ms: HashMap<Box<[u8]>, u64>,
    /// The key expiry the hash set itself, and the key's own before it (see the hash
    /// encoding's `KeyExpiry`).
    pub key_expiry: Option<(u64, Option<u64>)>,
    /// Redis would still keep this hash as a listpack (it moved out of the store below
    /// Redis's thresholds, for speed, and has not passed them since): its removals keep
    /// the order, HSCAN returns it whole, OBJECT ENCODING says `listpack`. Redis's
    /// conversion is one way, and so is this: once cleared it stays so.
    pub listpack: bool,
}

/// A hash field's key: its name, after the name's length.
#[derive(Debug, Clone, Default)]
pub struct FieldName;

impl KeyOf for FieldName {
    #[inline]
    fn key(entry: &[u8]) -> &[u8] {
        split(entry).0
    }
}

impl HashValue {
    #[inline]
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether field `name` has an expiry (past or not).
    #[inline]
    pub fn expires(&self, name: &[u8]) -> bool {
        self.expire_at_ms.contains_key(name)
    }

    /// Field `name`'s value unless it expired at or before `now_ms`.
    #[inline]
    pub fn get_live(&self, name: &[u8], now_ms: u64) -> Option<&[u8]> {
        match self.expire_at_ms.get(name) {
            Some(&at_ms) if at_ms <= now_ms => None,
            _ => self.get(name),
        }
    }

    /// How many fields have not expired by `now_ms` (O(fields with an expiry)).
    #[inline]
    pub fn live_len(&self, now_ms: u64) -> usize {
        let expired = self.expire_at_ms.values().filter(|&&at_ms| at_ms <= now_ms).count();
        self.len() - expired
    }

    #[inline]
    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        self.fields.find(name).map(|at| split(self.fields.nth(at)).1)
    }

    /// The field (name, value) at `at` (below [`HashValue::len`]) of the hash's order.
    #[inline]
    pub fn nth(&self, at: usize) -> (&[u8], &[u8]) {
        split(self.fields.nth(at))
    }

    /// Sets field `name` to `value`; the length of the value it replaced, if any.
    #[inline]
    pub fn insert(&mut self, name: &[u8], value: &[u8]) -> Option<usize> {
        let mut name_len = [0u8; varint::LEN_MAX];
        let name_len = put_len(&mut name_len, name.len());
        let parts = [name_len, name, value];
        match self.fields.find(name) {
            Some(at) => {
                let old_len = split(self.fields.nth(at)).1.len();
                self.fields.replace(at, &parts);
                Some(old_len)
            }
            None => {
                self.fields.push(&parts);
                None
            }
        }
    }

    /// Removes field `name`; the length of its value, if it was there. `keep_order`: the
    /// fields after it keep their order (O(fields), as a listpack); else the last field
    /// takes its place (O(1)).
    #[inline]
    pub fn remove(&mut self, name: &[u8], keep_order: bool) -> Option<usize> {
        self.fields.remove(name, keep_order, |field| split(field).1.len())
    }

    /// The fields (name, value), in the hash's order.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.fields.iter().map(split)
    }

    /// Room for `additional` more fields of `bytes` in all (names and values).
    #[inline]
    pub fn reserve(&mut self, additional: usize, bytes: usize) {
        self.fields.reserve(additional, bytes);
    }

    #[inline]
    fn charged_bytes(&self) -> usize {
        let fields: usize =
            self.iter().map(|(name, value)| hash_field_bytes(name.len(), value.len())).sum();
        let expiring: usize =
            self.expire_at_ms.keys().map(|name| element_bytes(name.len() + 8)).sum();
        HASH_ENTRY_BYTES + fields + expiring
    }
}

/// A set kept outside the store: its members (their text: an integer member's text is its
/// canonical decimal form, so equal bytes are equal members) in [`Slots`], so that a random
/// member (SPOP, SRANDMEMBER) is one index away.
#[derive(Debug, Clone, Default)]
pub struct SetValue {
    members: Slots<Whole>,
}

/// A set member's key: all of it.
#[derive(Debug, Clone, Default)]
pub struct Whole;

impl KeyOf for Whole {
    #[inline]
    fn key(entry: &[u8]) -> &[u8] {
        entry
    }
}

impl SetValue {
    #[inline]
    pub fn len(&self) -> usize {
        self.members.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn contains(&self, member: &[u8]) -> bool {
        self.members.find(member).is_some()
    }

    /// Adds `member`; whether it is new.
    #[inline]
    pub fn insert(&mut self, member: &[u8]) -> bool {
        if self.contains(member) {
            return false;
        }
        self.members.push(&[member]);
        true
    }

    /// Removes `member`; whether it was there. The last member takes its place.
    #[inline]
    pub fn remove(&mut self, member: &[u8]) -> bool {
        self.members.remove(member, false, |_| ()).is_some()
    }

    /// The member at `index` (below [`SetValue::len`]) of the set's order.
    #[inline]
    pub fn nth(&self, index: usize) -> &[u8] {
        self.members.nth(index)
    }

    /// The members, in the set's order.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.members.iter()
    }
}

/// What a hash kept outside the store is charged besides its fields: its registry entry
/// (the value, its state and mutex, the `Arc` and its slot in the registry's map) and its
/// tables' smallest allocations. Hashes move out of the store small (exec's
/// `OWN_HASH_MIN_BYTES`), so this is counted, not left to the per-field figures.
const HASH_ENTRY_BYTES: usize = 384;

/// What a set member is charged: an entry of its bytes in the table (see
/// [`hash_field_bytes`]).
#[inline]
pub fn set_member_bytes(len: usize) -> usize {
    arena_entry_bytes(len)
}

/// Writes `len` as a varint into `buf`; the bytes it took.
#[inline]
fn put_len(buf: &mut [u8; varint::LEN_MAX], mut len: usize) -> &[u8] {
    let mut used = 0;
    while len >= 0x80 {
        buf[used] = (len as u8 & 0x7f) | 0x80;
        len >>= 7;
        used += 1;
    }
    buf[used] = len as u8;
    &buf[..=used]
}

/// A field's name and value. (A field is only ever made by [`HashValue::insert`]; were one damaged,
/// it would read as a whole name and an empty value, never a panic.)
#[inline]
fn split(field: &[u8]) -> (&[u8], &[u8]) {
    match varint::read_usize(field) {
        Some((len, used)) => field[used..].split_at_checked(len).unwrap_or((&field[used..], &[])),
        None => (field, &[]),
    }
}

/// What a hash field is charged: its bytes in the table's arena (`slots.rs`) with their
/// lengths, and two fifteenths more (garbage stays under a sixteenth of the arena, under a
/// fifteenth of the live bytes, before it is compacted; spare capacity under a sixteenth:
/// at most 17/15 of the live bytes in all), and [`SLOT_TABLE_BYTES`] for its place in the
/// vector of starts and in the hash table.
#[inline]
pub fn hash_field_bytes(name_len: usize, value_len: usize) -> usize {
    arena_entry_bytes(name_len + slots::varint_len(name_len) + value_len)
}

/// What the table charges an entry of `len` bytes (see [`hash_field_bytes`]).
#[inline]
fn arena_entry_bytes(len: usize) -> usize {
    let stored = len + slots::varint_len(len);
    SLOT_TABLE_BYTES + stored + (stored * 2).div_ceil(15)
}

/// An entry's start in the table's vector (4 bytes, and an eighth more for its spare
/// capacity, rounded up) and its place in the hash table (4 bytes and a control byte, at a
/// load between 7/16 and 7/8: at most 11.4 bytes).
const SLOT_TABLE_BYTES: usize = 5 + 12;

/// What an element of `len` bytes is charged: its slot and its allocation, and a quarter
/// more for the holes that freed lists leave in the allocator's heap (measured with lists
/// of 100-1,000 elements written and evicted at -m 64, one worker: peak RSS 74.6 MiB
/// without it, 71.4 with an eighth, against the 72 MiB bound of test_memory.py).
#[inline]
pub fn element_bytes(len: usize) -> usize {
    let bytes = SLOT_BYTES + (len + MALLOC_HEADER_BYTES).next_multiple_of(16);
    bytes + bytes / 4
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: fields of every name-length class read back as set; a replaced or removed
    /// field reports its old value's length; the rest stay.
    #[test]
    fn hash_fields() {
        let mut hash = HashValue::default();
        let long_name = vec![b'n'; 300];
        let names: [&[u8]; 4] = [b"", b"a", &[b'k'; 127], &long_name];
        for (i, name) in names.iter().enumerate() {
            assert_eq!(hash.insert(name, &vec![b'v'; i]), None);
        }
        assert_eq!(hash.len(), 4);
        for (i, name) in names.iter().enumerate() {
            assert_eq!(hash.get(name), Some(&vec![b'v'; i][..]));
        }
        assert_eq!(hash.insert(b"a", b"new"), Some(1));
        assert_eq!(hash.get(b"a"), Some(&b"new"[..]));
        assert_eq!(hash.remove(&long_name, false), Some(3));
        assert_eq!(hash.remove(&long_name, true), None);
        assert_eq!(hash.get(b"b"), None);
        let mut fields: Vec<(&[u8], &[u8])> = hash.iter().collect();
        fields.sort();
        assert_eq!(fields, [(&b""[..], &b""[..]), (b"a", b"new"), (&[b'k'; 127], b"vv")]);
        assert!(hash.expire_at_ms.is_empty() && hash.key_expiry.is_none());
    }

    /// Goal: what a hash's fields are charged covers what its table holds (arena, starts,
    /// hash table) past the floors the hash's own charge covers, as it grows, as values
    /// change length, and as most of it is removed.
    #[test]
    fn field_charges_cover_the_table() {
        let mut hash = HashValue::default();
        let mut seed = 11u64;
        let mut next = |below: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % below
        };
        // Past 1,000 fields only the tables' group padding is left to the hash's own charge;
        // below, their floors (the arena's garbage and growth, the smallest tables) are.
        let check = |hash: &HashValue, step: usize| {
            let fields = hash.charged_bytes() - HASH_ENTRY_BYTES;
            let floors = if hash.len() >= 1_000 { 64 } else { HASH_ENTRY_BYTES };
            let held = hash.fields.allocated_bytes();
            assert!(held <= fields + floors, "{step}: {} fields, {held} {fields}", hash.len());
        };
        for step in 0..40_000 {
            let name = format!("field:{:08}", next(10_000));
            let value = vec![b'v'; 16 + next(48) as usize];
            hash.insert(name.as_bytes(), &value);
            if step % 1_000 == 0 {
                check(&hash, step);
            }
        }
        for step in 0..10_000u64 {
            let name = format!("field:{step:08}");
            hash.remove(name.as_bytes(), step % 2 == 0);
            if step % 500 == 0 || step > 9_900 {
                check(&hash, step as usize);
            }
        }
    }

    /// Goal: members are added once, found, removed once; the rest stay.
    #[test]
    fn set_members() {
        let mut set = SetValue::default();
        let long = vec![b'm'; 200];
        for member in [&b""[..], b"5", b"05", &long] {
            assert!(set.insert(member));
            assert!(!set.insert(member));
        }
        assert_eq!(set.len(), 4);
        assert!(set.contains(b"05") && set.contains(&long) && !set.contains(b"6"));
        assert!(set.remove(b"5"));
        assert!(!set.remove(b"5"));
        let mut members: Vec<&[u8]> = set.iter().collect();
        members.sort();
        assert_eq!(members, [&b""[..], b"05", &long]);
        // Removals move the last member into the gap; every member stays findable.
        for i in 0..100u32 {
            set.insert(&i.to_le_bytes());
        }
        for i in (0..100u32).step_by(3) {
            assert!(set.remove(&i.to_le_bytes()));
        }
        for i in 0..100u32 {
            assert_eq!(set.contains(&i.to_le_bytes()), i % 3 != 0, "{i}");
        }
        assert_eq!(set.len(), 3 + 66);
        assert!((0..set.len()).all(|at| set.contains(set.nth(at))));
    }
}
