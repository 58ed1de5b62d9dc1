//! Deletes: memcached `delete`, meta `md` without `I` or `x`, Redis DEL and UNLINK.
//!
//! (`md I` and `md x` keep an item, stale or emptied, so they are not deletes; they stay
//! with meta.)

use store::{Store, StoreError};

use crate::counters::{bump, Counters};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DeleteOutcome {
    Deleted,
    /// No such item (a key the store could not hold is not there either).
    NotFound,
    /// The compared CAS unique did not match (meta `C`).
    Exists,
}

/// Deletes `key`, if `compare_cas` allows, and counts it (`delete_hits`, or
/// `delete_misses` for anything else).
#[inline]
pub(crate) fn delete(
    store: &Store,
    counters: &Counters,
    key: &[u8],
    compare_cas: Option<u64>,
) -> DeleteOutcome {
    let outcome = match store.delete(key, compare_cas) {
        Ok(()) => DeleteOutcome::Deleted,
        Err(StoreError::Exists) => DeleteOutcome::Exists,
        Err(_) => DeleteOutcome::NotFound,
    };
    let counter = match outcome {
        DeleteOutcome::Deleted => &counters.delete_hits,
        DeleteOutcome::NotFound | DeleteOutcome::Exists => &counters.delete_misses,
    };
    bump(counter, 1);
    outcome
}
