//! The store family: memcached `set` `add` `replace` `append` `prepend` `cas` and meta
//! `ms`; Redis SET (plain, NX, XX), MSET, MSETNX, APPEND and RENAME's write.
//!
//! The dialects map their request to a [`Mode`] and [`StoreOptions`]; this module does the
//! write, the append-or-create that meta `N` and Redis APPEND need, and what a refused
//! write does to the old value ([`OnRefusal`]).

use store::{Change, Expiry, MetaState, Mode, Store, StoreError, StoreOptions, Stored, ValueKind};

use super::Refusal;
use crate::counters::{bump, Counters};

/// One write of the store family.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Write<'a> {
    /// The store key.
    pub key: &'a [u8],
    pub value: &'a [u8],
    /// memcached client flags (Redis writes 0).
    pub flags: u32,
    pub expiry: Expiry,
    pub mode: Mode,
    pub options: StoreOptions,
    /// With [`Mode::Append`] or [`Mode::Prepend`]: a missing item is created from the value
    /// with this expiry and `flags` (meta `N`; Redis APPEND, with no expiry), in the same
    /// step as the check. Other modes ignore it.
    pub vivify: Option<Expiry>,
    pub on_refusal: OnRefusal,
}

/// What a refused write (too large, no memory) leaves behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnRefusal {
    /// The old value stays (Redis: a refused command changes nothing).
    KeepOld,
    /// A refused `set` drops the old value, so that readers cannot keep seeing data the
    /// client meant to replace; other modes keep it (memcached's `process_update_command`).
    DropOldIfSet,
    /// Any refused write drops the old value (memcached's `process_mset_command`).
    DropOld,
}

/// What a write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StoreOutcome {
    Stored(Stored),
    /// The mode's condition failed: `add` found the key, `replace`/`append`/`prepend` did
    /// not.
    NotStored,
    /// `cas` (or a compared append) found another CAS unique.
    Exists,
    /// `cas` found no item.
    NotFound,
    Refused(Refusal),
}

/// Carries out `write`.
#[inline]
pub(crate) fn store(store: &Store, write: &Write<'_>) -> StoreOutcome {
    store_telling_drop(store, write).0
}

/// [`store`], also telling whether a refused write dropped an old item ([`OnRefusal`]):
/// memcached's writes tell the Redis clients tracking the key of every change they make,
/// that one included.
#[inline]
pub(crate) fn store_telling_drop(store: &Store, write: &Write<'_>) -> (StoreOutcome, bool) {
    let result = match (write.mode, write.vivify) {
        (Mode::Append | Mode::Prepend, Some(created)) => append_or_create(store, write, created),
        _ => store.store_with(
            write.key,
            write.value,
            write.flags,
            write.expiry,
            write.mode,
            write.options,
        ),
    };
    let outcome = match result {
        Ok(stored) => StoreOutcome::Stored(stored),
        Err(StoreError::NotStored) => StoreOutcome::NotStored,
        Err(StoreError::Exists) => StoreOutcome::Exists,
        Err(StoreError::NotFound) => StoreOutcome::NotFound,
        Err(error) => {
            let refusal = Refusal::of(&error).unwrap_or(Refusal::NoMemory);
            let drop_old = match write.on_refusal {
                OnRefusal::KeepOld => false,
                OnRefusal::DropOldIfSet => write.mode == Mode::Set,
                OnRefusal::DropOld => true,
            };
            let dropped = drop_old && drop_refused(store, write.key);
            return (StoreOutcome::Refused(refusal), dropped);
        }
    };
    (outcome, false)
}

/// Append or prepend to the item, or create it from the value if it is missing, in one
/// step under the key's lock. As `Store::store_with` for the existing item: its flags and
/// expiry stay, `options.compare_cas` guards, `options.cas` chooses the new CAS unique.
fn append_or_create(
    store: &Store,
    write: &Write<'_>,
    created: Expiry,
) -> Result<Stored, StoreError> {
    let options = write.options;
    let meta = MetaState::default();
    let size_max = options.size_max.unwrap_or(store.config().item_size_max);
    let (cas, outcome) = store.modify_within(write.key, size_max, |current| {
        let Some(item) = current else {
            let value = write.value.to_vec();
            let len = value.len();
            let change = Change::WriteWith {
                value,
                flags: write.flags,
                expiry: created,
                cas: options.cas,
                meta,
            };
            return (change, Ok(len));
        };
        if options.compare_cas.is_some_and(|cas| cas != item.cas()) {
            return (Change::Keep, Err(StoreError::Exists));
        }
        if item.value_kind() != ValueKind::String {
            // Bytes added to a Redis collection's encoding would corrupt it.
            return (Change::Keep, Err(StoreError::NotStored));
        }
        let (head, tail) = match write.mode {
            Mode::Prepend => (write.value, item.value()),
            _ => (item.value(), write.value),
        };
        let mut value = Vec::with_capacity(head.len() + tail.len());
        value.extend_from_slice(head);
        value.extend_from_slice(tail);
        let len = value.len();
        let change = Change::WriteWith {
            value,
            flags: item.flags(),
            expiry: item.expiry(),
            cas: options.cas,
            meta,
        };
        (change, Ok(len))
    })?;
    let value_len = outcome?;
    Ok(Stored { cas: cas.expect("a written item has a CAS unique"), value_len, meta })
}

/// memcached's `stats` for a write: `cmd_set` counts every write memcached could allocate
/// an item for (all but too-large ones), `total_items` every stored one; `cas` also counts
/// hits, bad values and misses. (Redis writes count `cmd_set` at every attempt and no
/// `total_items`; they keep their own counting.)
#[inline]
pub(crate) fn count(counters: &Counters, mode: Mode, outcome: &StoreOutcome) {
    match outcome {
        StoreOutcome::Refused(Refusal::TooLarge) => bump(&counters.store_too_large, 1),
        StoreOutcome::Refused(Refusal::NoMemory) => bump(&counters.store_no_memory, 1),
        _ => {}
    }
    if *outcome != StoreOutcome::Refused(Refusal::TooLarge) {
        bump(&counters.cmd_set, 1);
    }
    if let StoreOutcome::Stored(_) = outcome {
        bump(&counters.total_items, 1);
    }
    if let Mode::Cas(_) = mode {
        match outcome {
            StoreOutcome::Stored(_) => bump(&counters.cas_hits, 1),
            StoreOutcome::Exists => bump(&counters.cas_badval, 1),
            StoreOutcome::NotFound => bump(&counters.cas_misses, 1),
            _ => {}
        }
    }
}

/// What memcached answers for an append or prepend the store refused: an item it cannot
/// make of the old value and the new bytes (over the item size limit, or no memory for it)
/// is NOT_STORED in memcached 1.6 (text, meta `NS` and binary status 5 alike), as for a
/// missing item; only bytes that could not be stored alone are an error. The refusal is
/// still counted as one (`store_too_large`, `store_no_memory`: `count` runs before this),
/// which is how `stats` tells it from a missing item. `write` is the request's key and
/// bytes, `item_size_max` the limit they were checked against.
pub(crate) fn memcached_outcome(
    outcome: StoreOutcome,
    mode: Mode,
    chunk_len: usize,
    item_size_max: usize,
) -> StoreOutcome {
    match (mode, outcome) {
        (Mode::Append | Mode::Prepend, StoreOutcome::Refused(Refusal::NoMemory)) => {
            StoreOutcome::NotStored
        }
        (Mode::Append | Mode::Prepend, StoreOutcome::Refused(Refusal::TooLarge))
            if chunk_len <= item_size_max =>
        {
            StoreOutcome::NotStored
        }
        (_, outcome) => outcome,
    }
}

/// Removes the old item of a refused write (absent or not: the outcome is the refusal);
/// whether there was one.
pub(crate) fn drop_refused(store: &Store, key: &[u8]) -> bool {
    store.delete(key, None).is_ok()
}
