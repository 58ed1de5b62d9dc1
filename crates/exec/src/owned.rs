//! Large collections kept outside the store (work in progress: lists only).
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

/// Encodings longer than this move out of the store (list only, for now).
pub(crate) const OWN_MIN_BYTES: usize = 8 * 1024;

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
}

impl Value {
    /// The bytes this value is charged for (O(size): changes that know what they added or
    /// removed count it in [`State::value_bytes`] instead).
    pub(crate) fn charged_bytes(&self) -> usize {
        match self {
            Value::List(list) => list.iter().map(|e| element_bytes(e.len())).sum(),
        }
    }
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
        self.shard(id).lock().insert(id, owned);
        id.to_le_bytes().to_vec()
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
        let mut state = owned.state.lock();
        state.released = true;
        state.value = Value::List(VecDeque::new());
        state.value_bytes = 0;
        std::mem::take(&mut state.charged_bytes)
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
pub(crate) fn settle(store: &store::Store, owned: &Owned) {
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
        }
    } else if delta < 0 {
        let mut state = owned.state.lock();
        if state.released {
            return;
        }
        let bytes = ((-delta) as usize).min(state.charged_bytes);
        state.charged_bytes -= bytes;
        drop(state);
        store.uncharge_outside(bytes);
    }
}
