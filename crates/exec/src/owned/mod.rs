//! Large collections kept outside the store: lists, hashes, sets and sorted sets.
//!
//! A collection whose compact encoding passes [`OWN_MIN_BYTES`] moves out of the store: its
//! elements live in an [`Owned`] here, and the key's store item becomes an *owner*
//! (`store::OWNER_FLAGS`) whose value is the 8-byte id of its entry in the [`Registry`].
//! A change then edits the structure in place under its mutex instead of rewriting the
//! item, so it no longer costs time in proportion to the collection's size.
//!
//! Lifetime: the store tells the registry (its release observer) once when the owner's
//! index entry goes, for any reason (DEL, overwrite, expiry, flush, eviction); the entry
//! is removed and marked released, under its mutex, and the bytes it had charged are
//! given back. Every release happens under the key's stripe lock, so a change made inside
//! `Store::modify` never meets a released entry; one made outside it (a fast path) checks
//! `released` under the mutex and starts over.
//!
//! Memory: every entry's bytes are charged with `Store::charge_outside` after the change
//! that made them (never inside a stripe lock: making room takes them), so the store may
//! pass its limit by one change's growth until its next write evicts.
//!
//! Lock order: a key's stripe lock, then an entry's mutex; never the other way round.

use std::{
    collections::{HashMap, VecDeque},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
};

use parking_lot::Mutex;

mod slots;
mod zset;

use slots::{KeyOf, Slots};

pub(crate) use zset::{zset_member_bytes, ZSetValue};

/// Lists whose encodings are longer than this move out of the store.
pub(crate) const OWN_MIN_BYTES: usize = 8 * 1024;

/// Hashes and sets whose encodings are longer than this move out of the store. Higher
/// than a list's: a field or member kept here costs a few times its share of the
/// encoding (see [`hash_field_bytes`]), and rewriting 32 KiB costs a few microseconds.
pub(crate) const OWN_TABLE_MIN_BYTES: usize = 32 * 1024;

/// What an element's slot in the deque costs: its box (pointer and length), and half as
/// much again for the deque's spare capacity on average (it doubles as it grows).
const SLOT_BYTES: usize = 24;

/// The allocator's header on each element's bytes (glibc malloc: 8), which it rounds up
/// to 16.
const MALLOC_HEADER_BYTES: usize = 8;

/// A collection kept outside the store.
#[derive(Debug, Clone)]
pub(crate) enum Value {
    List(VecDeque<Box<[u8]>>),
    Hash(HashValue),
    Set(SetValue),
    ZSet(ZSetValue),
}

impl Value {
    /// A value that holds nothing (what a released or detached entry is left with).
    pub(crate) fn empty() -> Value {
        Value::List(VecDeque::new())
    }

    /// The bytes this value is charged for (O(size): changes that know what they added or
    /// removed count it in [`State::value_bytes`] instead).
    pub(crate) fn charged_bytes(&self) -> usize {
        match self {
            Value::List(list) => list.iter().map(|e| element_bytes(e.len())).sum(),
            Value::Hash(hash) => hash.charged_bytes(),
            Value::Set(set) => set.iter().map(|member| set_member_bytes(member.len())).sum(),
            Value::ZSet(zset) => {
                zset.iter().map(|(_, member)| zset_member_bytes(member.len())).sum()
            }
        }
    }
}

/// A hash kept outside the store: its fields in [`Slots`], each one allocation (its name's
/// length as a LEB128 varint, the name, the value), so that a field costs about what it
/// does in Redis's hash table and a random field is one index away.
#[derive(Debug, Clone, Default)]
pub(crate) struct HashValue {
    fields: Slots<FieldName>,
    /// The expiry (Unix milliseconds) of each field that has one.
    pub(crate) expire_at_ms: HashMap<Box<[u8]>, u64>,
    /// The key expiry the hash set itself, and the key's own before it (see the hash
    /// encoding's `KeyExpiry`).
    pub(crate) key_expiry: Option<(u64, Option<u64>)>,
}

/// A hash field's key: its name, after the name's length.
#[derive(Debug, Clone, Default)]
pub(crate) struct FieldName;

impl KeyOf for FieldName {
    fn key(entry: &[u8]) -> &[u8] {
        split(entry).0
    }
}

impl HashValue {
    pub(crate) fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether field `name` has an expiry (past or not).
    pub(crate) fn expires(&self, name: &[u8]) -> bool {
        self.expire_at_ms.contains_key(name)
    }

    /// Field `name`'s value unless it expired at or before `now_ms`.
    pub(crate) fn get_live(&self, name: &[u8], now_ms: u64) -> Option<&[u8]> {
        match self.expire_at_ms.get(name) {
            Some(&at_ms) if at_ms <= now_ms => None,
            _ => self.get(name),
        }
    }

    /// How many fields have not expired by `now_ms` (O(fields with an expiry)).
    pub(crate) fn live_len(&self, now_ms: u64) -> usize {
        let expired = self.expire_at_ms.values().filter(|&&at_ms| at_ms <= now_ms).count();
        self.len() - expired
    }

    pub(crate) fn get(&self, name: &[u8]) -> Option<&[u8]> {
        self.fields.find(name).map(|at| split(self.fields.nth(at)).1)
    }

    /// The field (name, value) at `at` (below [`HashValue::len`]) of the hash's order.
    pub(crate) fn nth(&self, at: usize) -> (&[u8], &[u8]) {
        split(self.fields.nth(at))
    }

    /// Sets field `name` to `value`; the length of the value it replaced, if any.
    pub(crate) fn insert(&mut self, name: &[u8], value: &[u8]) -> Option<usize> {
        let field = joined(name, value);
        match self.fields.find(name) {
            Some(at) => Some(split(&self.fields.replace(at, field)).1.len()),
            None => {
                self.fields.push(field);
                None
            }
        }
    }

    /// Removes field `name`; the length of its value, if it was there.
    pub(crate) fn remove(&mut self, name: &[u8]) -> Option<usize> {
        self.fields.remove(name).map(|field| split(&field).1.len())
    }

    /// The fields (name, value), in the hash's order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.fields.iter().map(split)
    }

    pub(crate) fn reserve(&mut self, additional: usize) {
        self.fields.reserve(additional);
    }

    fn charged_bytes(&self) -> usize {
        let fields: usize =
            self.iter().map(|(name, value)| hash_field_bytes(name.len(), value.len())).sum();
        let expiring: usize =
            self.expire_at_ms.keys().map(|name| element_bytes(name.len() + 8)).sum();
        fields + expiring
    }
}

/// A set kept outside the store: its members (their text: an integer member's text is its
/// canonical decimal form, so equal bytes are equal members) in [`Slots`], so that a random
/// member (SPOP, SRANDMEMBER) is one index away.
#[derive(Debug, Clone, Default)]
pub(crate) struct SetValue {
    members: Slots<Whole>,
}

/// A set member's key: all of it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Whole;

impl KeyOf for Whole {
    fn key(entry: &[u8]) -> &[u8] {
        entry
    }
}

impl SetValue {
    pub(crate) fn len(&self) -> usize {
        self.members.len()
    }

    pub(crate) fn contains(&self, member: &[u8]) -> bool {
        self.members.find(member).is_some()
    }

    /// Adds `member`; whether it is new.
    pub(crate) fn insert(&mut self, member: &[u8]) -> bool {
        if self.contains(member) {
            return false;
        }
        self.members.push(Box::from(member));
        true
    }

    /// Removes `member`; whether it was there. The last member takes its place.
    pub(crate) fn remove(&mut self, member: &[u8]) -> bool {
        self.members.remove(member).is_some()
    }

    /// The member at `index` (below [`SetValue::len`]) of the set's order.
    pub(crate) fn nth(&self, index: usize) -> &[u8] {
        self.members.nth(index)
    }

    /// The members, in the set's order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.members.iter()
    }
}

/// What a set member is charged: as a hash field whose value is its slot in the vector.
pub(crate) fn set_member_bytes(len: usize) -> usize {
    hash_field_bytes(len, 8)
}

/// A field's allocation: its name's length (LEB128), the name, the value.
fn joined(name: &[u8], value: &[u8]) -> Box<[u8]> {
    let mut field = Vec::with_capacity(name.len() + value.len() + 2);
    let mut len = name.len();
    while len >= 0x80 {
        field.push((len as u8 & 0x7f) | 0x80);
        len >>= 7;
    }
    field.push(len as u8);
    field.extend_from_slice(name);
    field.extend_from_slice(value);
    field.into_boxed_slice()
}

/// A field's name and value.
fn split(field: &[u8]) -> (&[u8], &[u8]) {
    let (mut len, mut used) = (0usize, 0);
    for (index, &byte) in field.iter().enumerate() {
        len |= usize::from(byte & 0x7f) << (7 * index);
        used = index + 1;
        if byte & 0x80 == 0 {
            break;
        }
    }
    field[used..].split_at(len)
}

/// What a hash field is charged (a set member: with a value of length 0): its slot in the table (a boxed slice, at the table's
/// load and half again for spare capacity), its allocation (the allocator's header and
/// rounding, 32 bytes at least), and a quarter more, as for a list element.
pub(crate) fn hash_field_bytes(name_len: usize, value_len: usize) -> usize {
    const SLOT_BYTES: usize = 28;
    let allocation = (name_len + value_len + 2 + MALLOC_HEADER_BYTES).next_multiple_of(16);
    let bytes = SLOT_BYTES + allocation.max(32);
    bytes + bytes / 4
}

/// What an element of `len` bytes is charged: its slot and its allocation, and a quarter
/// more for the holes that freed lists leave in the allocator's heap (measured with lists
/// of 100-1,000 elements written and evicted at -m 64, one worker: peak RSS 74.6 MiB
/// without it, 71.4 with an eighth, against the 72 MiB bound of test_memory.py).
pub(crate) fn element_bytes(len: usize) -> usize {
    let bytes = SLOT_BYTES + (len + MALLOC_HEADER_BYTES).next_multiple_of(16);
    bytes + bytes / 4
}

/// The state of one entry, under its mutex.
#[derive(Debug)]
pub(crate) struct State {
    /// The owner's index entry went: this value is no one's any more.
    pub(crate) released: bool,
    /// What is charged to the store for this entry.
    pub(crate) charged_bytes: usize,
    /// What should be: the value's [`Value::charged_bytes`], kept as it changes.
    pub(crate) value_bytes: usize,
    /// Counts changes, for WATCH (the owner item and its CAS stay as they are).
    pub(crate) changes: u64,
    pub(crate) value: Value,
}

#[derive(Debug)]
pub(crate) struct Owned {
    pub(crate) state: Mutex<State>,
}

const SHARDS: usize = 16;

/// Entries by id.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    shards: [Mutex<HashMap<u64, Arc<Owned>>>; SHARDS],
    next_id: AtomicU64,
    /// Entries registered and not yet released: while there are none, the commands' paths
    /// for values kept here skip their lookup of the key.
    live: AtomicU64,
    /// Bytes the entries have charged to the store (metrics: memory by kind).
    charged: AtomicU64,
}

impl Registry {
    fn shard(&self, id: u64) -> &Mutex<HashMap<u64, Arc<Owned>>> {
        &self.shards[(id as usize) % SHARDS]
    }

    /// Registers `value` (charged for nothing yet); returns the owner item's value.
    pub(crate) fn register(&self, value: Value) -> Vec<u8> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let value_bytes = value.charged_bytes();
        let state = State { released: false, charged_bytes: 0, value_bytes, changes: 0, value };
        let owned = Arc::new(Owned { state: Mutex::new(state) });
        self.live.fetch_add(1, Ordering::Relaxed);
        self.shard(id).lock().insert(id, owned);
        id.to_le_bytes().to_vec()
    }

    /// Whether no value is kept here (then no key is an owner).
    pub(crate) fn is_empty(&self) -> bool {
        self.live.load(Ordering::Relaxed) == 0
    }

    /// The entry an owner item's value names.
    pub(crate) fn get(&self, handle: &[u8]) -> Option<Arc<Owned>> {
        let id = u64::from_le_bytes(handle.try_into().ok()?);
        self.shard(id).lock().get(&id).cloned()
    }

    /// Removes the entry an owner names and marks it released; returns the bytes it had
    /// charged (the store's release observer).
    pub(crate) fn release(&self, handle: &[u8]) -> usize {
        let Ok(bytes) = <[u8; 8]>::try_from(handle) else { return 0 };
        let id = u64::from_le_bytes(bytes);
        let Some(owned) = self.shard(id).lock().remove(&id) else { return 0 };
        self.live.fetch_sub(1, Ordering::Relaxed);
        let mut state = owned.state.lock();
        state.released = true;
        state.value = Value::empty();
        state.value_bytes = 0;
        let bytes = std::mem::take(&mut state.charged_bytes);
        self.charged.fetch_sub(bytes as u64, Ordering::Relaxed);
        bytes
    }

    /// Bytes charged to the store for values kept here.
    pub(crate) fn charged_bytes(&self) -> u64 {
        self.charged.load(Ordering::Relaxed)
    }

    /// How many entries there are.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|shard| shard.lock().len()).sum()
    }
}

/// Settles an entry's charge with the store after a change: charges growth (past the
/// limit if room cannot be made: the next write evicts) and gives back shrinkage. Call it
/// with no stripe lock held.
pub(crate) fn settle(store: &store::Store, registry: &Registry, owned: &Owned) {
    let delta = {
        let state = owned.state.lock();
        if state.released {
            return;
        }
        state.value_bytes as i64 - state.charged_bytes as i64
    };
    // The store is charged before the entry counts it, and given back after, so that a
    // release in between never gives back more than was charged.
    if delta > 0 {
        let bytes = delta as usize;
        if store.charge_outside(bytes).is_err() {
            store.force_charge_outside(bytes);
        }
        let mut state = owned.state.lock();
        if state.released {
            drop(state);
            store.uncharge_outside(bytes);
        } else {
            state.charged_bytes += bytes;
            registry.charged.fetch_add(bytes as u64, Ordering::Relaxed);
        }
    } else if delta < 0 {
        let mut state = owned.state.lock();
        if state.released {
            return;
        }
        let bytes = ((-delta) as usize).min(state.charged_bytes);
        state.charged_bytes -= bytes;
        registry.charged.fetch_sub(bytes as u64, Ordering::Relaxed);
        drop(state);
        store.uncharge_outside(bytes);
    }
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
        assert_eq!(hash.remove(&long_name), Some(3));
        assert_eq!(hash.remove(&long_name), None);
        assert_eq!(hash.get(b"b"), None);
        let mut fields: Vec<(&[u8], &[u8])> = hash.iter().collect();
        fields.sort();
        assert_eq!(fields, [(&b""[..], &b""[..]), (b"a", b"new"), (&[b'k'; 127], b"vv")]);
        assert!(hash.expire_at_ms.is_empty() && hash.key_expiry.is_none());
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
