//! One executor per memcached operation; the dialects (text, meta, binary, Redis where the
//! meaning agrees) only decode requests into these calls and encode the outcomes as replies.
//!
//! ```text
//!   text get/gets, meta mg (plain), Redis GET/MGET ---> get::Gets          (counts itself)
//!   text set..cas, meta ms, Redis SET/MSET/APPEND ----> storage::store     -> StoreOutcome
//!   text incr/decr, meta ma --------------------------> arith::apply       -> ArithOutcome
//!   text delete, meta md (no I/x), Redis DEL/UNLINK --> delete::delete     -> DeleteOutcome
//!   text touch/gat/gats, Redis GETEX -----------------> touch::get_and_touch -> TouchOutcome
//!   text flush_all, Redis FLUSHALL/FLUSHDB -----------> flush::flush_all   -> FlushOutcome
//!   binary: Get*/Set..Prepend/Incr/Decr/Delete/Touch/Gat*/Flush, the same cores
//! ```
//!
//! A core takes store keys (already through [`crate::keyspace`]) and store expiries
//! (already converted from the dialect's time), and returns a typed outcome; no protocol
//! text is written here. Counting for memcached's `stats` lives with each core too
//! (`count` functions, or inside the core where every caller counts alike); where a Redis
//! command counts differently, its call site says so.

pub(crate) mod arith;
pub(crate) mod delete;
pub(crate) mod flush;
pub(crate) mod get;
pub(crate) mod storage;
pub(crate) mod touch;

use store::{Change, Item, Store, StoreError};

/// A write the store refused: the store errors that are failures, not outcomes of the
/// operation (not found, exists, not stored). Each dialect words them its own way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Key and value together exceed the store's item size.
    TooLarge,
    /// No memory could be found for the write (`-M`, or every candidate busy).
    NoMemory,
    /// The key is longer than the store holds (the memcached codec's limit is far below).
    KeyTooLong,
}

impl Refusal {
    /// The refusal a store error stands for, or `None` for an error that is an outcome.
    pub(crate) fn of(error: &StoreError) -> Option<Refusal> {
        match error {
            StoreError::TooLarge { .. } => Some(Refusal::TooLarge),
            StoreError::NoSpace => Some(Refusal::NoMemory),
            StoreError::KeyTooLong { .. } => Some(Refusal::KeyTooLong),
            StoreError::NotFound
            | StoreError::Exists
            | StoreError::NotStored
            | StoreError::NotNumeric => None,
        }
    }

    /// For an error from `Store::modify`, which only refuses (its closure decides the
    /// outcomes); anything else would be a failed write all the same.
    pub(crate) fn of_modify(error: StoreError) -> Refusal {
        Refusal::of(&error).unwrap_or(Refusal::NoMemory)
    }
}

/// `Store::modify` for a command that composes its reply from the item under the key's
/// lock, so that the reply and the write see the same item (gat, `mg` with `T`, `N` or
/// win tokens, GETEX). `f` may run more than once when the write had to wait for memory:
/// each run starts from the same end of `out`, and a refused write leaves `out` as it was.
pub(crate) fn modify_composing<R>(
    store: &Store,
    key: &[u8],
    out: &mut Vec<u8>,
    mut f: impl FnMut(Option<Item<'_>>, &mut Vec<u8>) -> (Change, R),
) -> Result<(Option<u64>, R), Refusal> {
    let mark = out.len();
    let result = store.modify(key, |current| {
        out.truncate(mark);
        f(current, out)
    });
    result.map_err(|error| {
        out.truncate(mark);
        Refusal::of_modify(error)
    })
}
