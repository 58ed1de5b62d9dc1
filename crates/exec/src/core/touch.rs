//! Touches: memcached `touch`, `gat`, `gats`; Redis GETEX with an expiry option.
//!
//! A touch sets a hit's expiry and keeps its value, client flags, CAS unique and meta
//! state, under the key's lock; a get-and-touch composes its reply from the item it
//! touched, so the reply and the new expiry belong to the same item. (`mg T` touches inside
//! its own locked step, which also hands out win tokens; Redis EXPIRE and PERSIST compare
//! with the current expiry first and are not touches in memcached's sense.)

use store::{Change, Expiry, Item, Store};

use super::{modify_composing, Refusal};
use crate::counters::{bump, Counters};

/// What a touch does to a hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Retime {
    /// Rewrite it with this expiry, even the one it has (a touch counts as an access for
    /// eviction); a past one makes it invisible at once (memcached: negative exptimes).
    To(Expiry),
    /// As `To`, but an item that has this expiry already is left as it is (Redis GETEX:
    /// `PERSIST` on a key without a TTL writes nothing).
    ToIfChanged(Expiry),
    /// Remove it (Redis: a deadline at or before now deletes the key, so that DBSIZE drops
    /// at once).
    Remove,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TouchOutcome {
    Touched,
    NotFound,
    /// The rewrite was refused; the item is as it was and nothing was composed.
    Refused(Refusal),
}

/// Retimes `key`; on a hit, `compose` appends the reply from the item as it was found
/// (before the new expiry).
pub(crate) fn get_and_touch(
    store: &Store,
    key: &[u8],
    retime: Retime,
    out: &mut Vec<u8>,
    mut compose: impl FnMut(&Item<'_>, &mut Vec<u8>),
) -> TouchOutcome {
    let result = modify_composing(store, key, out, |current, out| {
        let Some(item) = current else { return (Change::Keep, false) };
        compose(&item, out);
        let rewrite =
            |expiry| Change::Rewrite { expiry, meta: item.meta_state(), cas: Some(item.cas()) };
        let change = match retime {
            Retime::To(expiry) => rewrite(expiry),
            Retime::ToIfChanged(expiry) if expiry == item.expiry() => Change::Keep,
            Retime::ToIfChanged(expiry) => rewrite(expiry),
            Retime::Remove => Change::Delete,
        };
        (change, true)
    });
    match result {
        Ok((_, true)) => TouchOutcome::Touched,
        Ok((_, false)) => TouchOutcome::NotFound,
        Err(refusal) => TouchOutcome::Refused(refusal),
    }
}

/// memcached `touch`: sets a hit's expiry, composing nothing.
pub(crate) fn touch(store: &Store, key: &[u8], expiry: Expiry) -> TouchOutcome {
    get_and_touch(store, key, Retime::To(expiry), &mut Vec::new(), |_, _| {})
}

/// memcached's `stats` for touches: `cmd_touch` for each, `touch_hits` or `touch_misses`
/// for each that found or missed its item (a refused one is neither). Redis GETEX counts
/// as a read instead, as Redis's keyspace hits do.
pub(crate) fn count(counters: &Counters, outcome: TouchOutcome) {
    bump(&counters.cmd_touch, 1);
    match outcome {
        TouchOutcome::Touched => bump(&counters.touch_hits, 1),
        TouchOutcome::NotFound => bump(&counters.touch_misses, 1),
        TouchOutcome::Refused(_) => {}
    }
}
