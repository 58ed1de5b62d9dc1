//! Large collections kept outside the store: lists, hashes, sets and sorted sets.
//!
//! A collection whose compact encoding passes [`OWN_MIN_BYTES`] (lists) or
//! [`OWN_TABLE_MIN_BYTES`], or Redis's encoding thresholds (`resp/thresholds.rs`), moves
//! out of the store: its
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
//! Memory: every entry's bytes are charged with `Store::charge_outside_for` after the change
//! that made them (never inside a stripe lock: making room takes them), so the store may
//! pass its limit by one change's growth until its next write evicts.
//!
//! Lock order: a key's stripe lock, then an entry's mutex; never the other way round.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
};

use parking_lot::Mutex;
use store::ValueKind;

pub(crate) use values::owned::{
    element_bytes, hash_field_bytes, set_member_bytes, zset_member_bytes, HashValue, SetValue,
    Value, ZSetValue,
};

/// Lists whose encodings are longer than this move out of the store.
pub(crate) const OWN_MIN_BYTES: usize = 8 * 1024;

/// Hashes whose encodings are longer than this move out of the store, most of them well
/// before Redis's thresholds (the hash then answers as the listpack Redis would keep:
/// `HashValue::listpack`). An HSET that rewrites the item costs in proportion to its
/// size; one on a hash kept here costs the same at any size. Measured (`spinel-bench
/// compare --structure hash --mix set`, 64-byte values, one worker): kept here, HSET served
/// 1.17x (10 fields, about 700 bytes), 1.15x (30) and 1.19x (100) the requests per
/// server CPU-second of the rewrite, which fell to 0.77-0.81x Redis at 200-400 fields.
/// The bound is not lower because a field kept here is charged about 1.5x its share of
/// the encoding (`values::owned::hash_field_bytes`) and each hash kept here a few hundred
/// bytes more: small hashes, the common case, stay compact (10 fields of 16-byte names and
/// 32-byte values, about 500 bytes, stay in the store).
pub(crate) const OWN_HASH_MIN_BYTES: usize = 1024;

/// Sets and sorted sets whose encodings are longer than this move out of the store. Higher
/// than a list's: a field or member kept here costs a few times its share of the
/// encoding (see [`hash_field_bytes`]), and rewriting 32 KiB costs a few microseconds.
pub(crate) const OWN_TABLE_MIN_BYTES: usize = 32 * 1024;

/// The value kept outside the store for a `kind` collection's encoding.
pub(crate) fn own(kind: ValueKind, value: &[u8]) -> Value {
    match kind {
        ValueKind::Hash => Value::Hash(values::hash::own(value)),
        ValueKind::Set => Value::Set(values::set::own(value)),
        ValueKind::ZSet => Value::ZSet(values::zset::own(value)),
        ValueKind::Stream => {
            Value::Stream(Box::new(values::stream::decode(value).unwrap_or_default()))
        }
        _ => Value::List(values::list::decode_owned(value)),
    }
}

/// The encoding of a value kept outside the store; `None` when it is empty.
#[inline]
pub(crate) fn encode_owned(value: &Value) -> Option<Vec<u8>> {
    values::owned::encode(value)
}

/// Whether `value` is a `kind` collection's encoding as the commands write it (whole
/// entries, counts that match, no member twice, at least one): what a snapshot's
/// collections must be before any is restored, since the commands read encodings as they
/// trust them to be.
pub(crate) fn valid_encoding(kind: ValueKind, value: &[u8]) -> bool {
    match kind {
        ValueKind::String => true,
        ValueKind::List => values::list::is_valid(value),
        ValueKind::Hash => values::hash::is_valid(value),
        ValueKind::Set => values::set::is_valid(value),
        ValueKind::ZSet => values::zset::is_valid(value),
        ValueKind::Stream => values::stream::is_valid(value),
    }
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
    /// Its id: the owner item's value is its 8 bytes.
    pub(crate) id: u64,
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
        let owned = Arc::new(Owned { id, state: Mutex::new(state) });
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
        // Making room never evicts the owner whose change this is.
        if store.charge_outside_for(&owned.id.to_le_bytes(), bytes).is_err() {
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

    /// Goal: what a hash's registry entry costs (the state behind its `Arc`, the `Arc`'s
    /// counts, its slot in a shard's map at the map's lowest load) fits in what
    /// `values::owned` charges a hash besides its fields.
    #[test]
    fn hash_entry_is_charged() {
        let entry = std::mem::size_of::<Owned>() + 16 + (8 + 8 + 1) * 2;
        let hash = Value::Hash(HashValue::default());
        assert!(entry <= hash.charged_bytes(), "{entry} {}", hash.charged_bytes());
    }

    /// Goal: what a snapshot's collections must be; each kind's damage is refused.
    #[test]
    fn valid_encodings() {
        let valid: [(ValueKind, &[u8]); 6] = [
            (ValueKind::List, b"\x02\x01a\x00"),
            (ValueKind::Hash, b"\x00\x01f\x01v"),
            (ValueKind::Hash, b"\x02\x01f\x01v\x05"),
            (ValueKind::Set, b"\x02\x01\x00\x05\x00"),
            (ValueKind::Set, b"\x80\x02\x01a\x015"),
            (ValueKind::ZSet, &[0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 1, b'a']),
        ];
        for (kind, value) in valid {
            assert!(valid_encoding(kind, value), "{kind:?} {value:?}");
        }
        let damaged: [(ValueKind, &[u8]); 11] = [
            (ValueKind::List, b"\x08"),
            (ValueKind::List, b"\x01\x01a\x01b"),
            (ValueKind::List, b"\x00"),
            (ValueKind::Hash, b"\x00\x01f\x01v\x01f\x01w"),
            (ValueKind::Hash, b"\x02\x01f\x01v"),
            (ValueKind::Hash, b"\x04\x01f\x01v\x05\x01g\x01w\x04"),
            (ValueKind::Set, b"\x02\x05\x00\x05\x00"),
            (ValueKind::Set, b"\x04\x01\x00"),
            (ValueKind::Set, b"\x80"),
            (ValueKind::ZSet, &[0, 0, 0, 0, 0, 0, 0xf8, 0x7f, 1, b'a']),
            (ValueKind::ZSet, &[0, 0, 0, 0, 0, 0, 0, 0x80, 1, b'a']),
        ];
        for (kind, value) in damaged {
            assert!(!valid_encoding(kind, value), "{kind:?} {value:?}");
        }
    }
}
