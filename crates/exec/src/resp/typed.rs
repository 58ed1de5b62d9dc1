//! What every data type family shares: reading a key as one kind, changing one collection
//! atomically, WRONGTYPE. (The encodings themselves, and the length-prefixed entries they
//! are made of, are the `values` crate's.)
//!
//! A collection is one store item whose [`ValueKind`] says which type it is and whose value
//! is the family's encoding (see each family's module). The store never reads a value, so a
//! collection is evicted, expired, copied forward and counted against `-m` as any item is;
//! DEL, EXPIRE, RENAME and the rest need nothing of their own. A change runs inside one
//! [`store::Store::modify`], under the key's stripe lock, so commands on one collection are
//! atomic with respect to each other on every worker; reads take no lock (an item is never
//! changed in place: a change writes a new item).

use proto_resp::error;
use std::{borrow::Cow, sync::Arc};

use store::{Change, Expiry, Item, Mode, OwnedItem, Reader, StoreError, ValueKind};

use crate::owned::{self, encode_owned, own, Owned};

use super::{
    thresholds::{ownable, past_byte_bound},
    Ctx,
};

/// The name TYPE answers for a kind.
pub(crate) fn type_name(kind: ValueKind) -> &'static [u8] {
    match kind {
        ValueKind::String => b"string",
        ValueKind::List => b"list",
        ValueKind::Hash => b"hash",
        ValueKind::Set => b"set",
        ValueKind::ZSet => b"zset",
        ValueKind::Stream => b"stream",
    }
}

/// Why a typed read or change did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Failure {
    /// The key holds another type.
    WrongType,
    /// The store refused the write (memory, size).
    Store(StoreError),
}

/// `key`'s item if it holds `kind`; `Ok(None)` if the key is absent. Counts as an access
/// for eviction, as Redis's reads do for its LRU.
pub(super) fn read<'r>(
    reader: &'r Reader<'_>,
    key: &[u8],
    kind: ValueKind,
) -> Result<Option<Item<'r>>, Failure> {
    match reader.get(key) {
        Some(item) if item.value_kind() != kind => Err(Failure::WrongType),
        found => Ok(found),
    }
}

/// What a change of one collection decides, given its current encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Edit {
    /// Leave it as it is.
    Keep,
    /// Store this encoding, keeping the key's TTL (none for a new key).
    Write(Vec<u8>),
    /// Remove the key (Redis removes a collection once it is empty).
    Delete,
}

/// Runs `f` on `key`'s encoding (`None` when absent) under the key's lock and applies its
/// decision. `f` may run more than once when the write had to wait for memory; only the
/// last run's decision takes effect, so it must compute from its argument alone.
///
/// A list or hash whose encoding grows large moves out of the store (an owner item, see
/// `owned.rs` and `thresholds.rs`); for one kept there, `f` gets its encoding, and a write edits
/// the kept value in place (the item and its TTL stay).
pub(super) fn modify<R>(
    ctx: &Ctx<'_>,
    key: &[u8],
    kind: ValueKind,
    f: impl FnMut(Option<&[u8]>) -> (Edit, R),
) -> Result<R, Failure> {
    modify_checked(ctx, key, kind, None, f)
}

/// [`modify`] for a command that checked the entries it adds against the encoding
/// thresholds' value length itself (`lengths_past`: one is too long), as Redis checks a
/// command's new arguments; only the count is checked on the write then (a walk of every
/// entry's length would cost a ZADD a tenth more). `None`: the write checks every entry.
pub(super) fn modify_checked<R>(
    ctx: &Ctx<'_>,
    key: &[u8],
    kind: ValueKind,
    lengths_past: Option<bool>,
    mut f: impl FnMut(Option<&[u8]>) -> (Edit, R),
) -> Result<R, Failure> {
    let mut owning = Owning::new(ctx.shared);
    owning.lengths_past = lengths_past;
    // Whether the run that took effect deleted the key it found (for the `del` event).
    let mut emptied = false;
    let result = ctx.shared.core.store.modify_within(key, super::PROTO_MAX_BULK_LEN, |current| {
        owning.start_run();
        let (change, out) = modify_run(&mut owning, kind, current, &mut f);
        emptied = matches!(change, Change::Delete);
        (change, out)
    });
    if emptied && matches!(result, Ok((_, Ok(_)))) {
        ctx.outcome.note_emptied();
    }
    owning.finish(result.map(|(_, out)| out))
}

/// One run of [`modify`]'s closure under the key's lock (inlined into it: as a call it cost
/// ZADD about 40 instructions, callgrind).
#[inline(always)]
fn modify_run<R>(
    owning: &mut Owning<'_>,
    kind: ValueKind,
    current: Option<Item<'_>>,
    f: &mut impl FnMut(Option<&[u8]>) -> (Edit, R),
) -> (Change, Result<R, Failure>) {
    let expiry = current.as_ref().map_or(Expiry::Never, |item| item.expiry());
    match current {
        Some(item) if item.value_kind() != kind => (Change::Keep, Err(Failure::WrongType)),
        Some(item) if item.is_owner() => {
            let owned = owning.touch(&item);
            edit_owned(&owned, kind, owning, f)
        }
        current => {
            let (edit, out) = f(current.as_ref().map(|item| item.value()));
            let change = match edit {
                Edit::Keep => Change::Keep,
                // Deleting an absent key changes nothing (and raises no `del`).
                Edit::Delete if current.is_none() => Change::Keep,
                Edit::Delete => Change::Delete,
                Edit::Write(value) => match owning.write(kind, value, expiry) {
                    Ok(change) => change,
                    Err(failure) => return (Change::Keep, Err(failure)),
                },
            };
            (change, Ok(out))
        }
    }
}

/// What one `Store::modify` of a collection did with values kept outside the store: the
/// entry it registered for a write that moved the value out, the entry it edited. Its
/// closure calls [`Owning::start_run`] first (it may run more than once), and the result
/// goes through [`Owning::finish`], which settles their charges once no lock is held.
pub(super) struct Owning<'s> {
    shared: &'s crate::Shared,
    created: Option<Vec<u8>>,
    touched: Option<Arc<Owned>>,
    /// The command's own verdict on the lengths of what it adds ([`modify_checked`]).
    lengths_past: Option<bool>,
}

impl<'s> Owning<'s> {
    pub(super) fn new(shared: &'s crate::Shared) -> Owning<'s> {
        Owning { shared, created: None, touched: None, lengths_past: None }
    }

    /// The most a value kept outside the store may hold ([`owned_size_max`]).
    pub(super) fn size_max(&self) -> usize {
        owned_size_max(&self.shared.core.store)
    }

    /// Forgets an earlier run's entry, which was not stored.
    pub(super) fn start_run(&mut self) {
        if let Some(handle) = self.created.take() {
            self.shared.owned.release(&handle);
        }
        self.touched = None;
    }

    /// The entry of owner `item`, to be settled after the change.
    pub(super) fn touch(&mut self, item: &Item<'_>) -> Arc<Owned> {
        let owned =
            self.shared.owned.get(item.value()).expect("an owner's entry lives while it does");
        self.touched = Some(Arc::clone(&owned));
        owned
    }

    /// The change that stores `value` as a `kind` collection: in the store, or moved out
    /// of it when it is large (refused past [`owned_size_max`] then).
    #[inline]
    pub(super) fn write(
        &mut self,
        kind: ValueKind,
        value: Vec<u8>,
        expiry: Expiry,
    ) -> Result<Change, Failure> {
        let thresholds = &self.shared.redis.encoding_thresholds;
        let past = match self.lengths_past {
            None => ownable(kind, &value, thresholds),
            Some(past) => past || thresholds.count_past(kind, &value),
        };
        if !past {
            return Ok(Change::WriteKind { value, kind, expiry });
        }
        self.move_out(kind, value, expiry)
    }

    /// [`Owning::write`] of a value whose caller checked the encoding thresholds itself
    /// (`past`: it moves out), from what its change added; Spinel's byte bound is checked
    /// here.
    #[inline]
    pub(super) fn write_decided(
        &mut self,
        kind: ValueKind,
        value: Vec<u8>,
        expiry: Expiry,
        past: bool,
    ) -> Result<Change, Failure> {
        if !past && !past_byte_bound(kind, &value) {
            return Ok(Change::WriteKind { value, kind, expiry });
        }
        self.move_out(kind, value, expiry)
    }

    /// The change that registers `value` outside the store and makes the key its owner
    /// (the rare path of a write: out of line).
    #[inline(never)]
    fn move_out(
        &mut self,
        kind: ValueKind,
        value: Vec<u8>,
        expiry: Expiry,
    ) -> Result<Change, Failure> {
        let size_max = owned_size_max(&self.shared.core.store);
        if value.len() > size_max {
            let too_large = StoreError::TooLarge { size: value.len(), max: size_max };
            return Err(Failure::Store(too_large));
        }
        let mut owned = own(kind, &value);
        if let owned::Value::Hash(hash) = &mut owned {
            hash.listpack = self.hash_listpack(&value);
        }
        let handle = self.shared.owned.register(owned);
        self.created = Some(handle.clone());
        Ok(Change::WriteOwner { value: handle, kind, expiry })
    }

    /// Whether Redis would keep a hash with this encoding as a listpack.
    pub(super) fn hash_listpack(&self, value: &[u8]) -> bool {
        self.shared.redis.encoding_thresholds.hash_listpack(value)
    }

    /// The change that stores `value`, kept outside the store, as a new `kind` key (a
    /// stream, which is never an encoding in the store).
    pub(super) fn write_value(&mut self, kind: ValueKind, value: owned::Value) -> Change {
        let handle = self.shared.owned.register(value);
        self.created = Some(handle.clone());
        Change::WriteOwner { value: handle, kind, expiry: Expiry::Never }
    }

    /// The change's outcome, once the entries it made or edited are charged.
    pub(super) fn finish<R>(
        self,
        result: Result<Result<R, Failure>, StoreError>,
    ) -> Result<R, Failure> {
        let (registry, store) = (&self.shared.owned, &self.shared.core.store);
        match result {
            Ok(out) => {
                let created = self.created.and_then(|handle| registry.get(&handle));
                created
                    .iter()
                    .chain(self.touched.iter())
                    .for_each(|owned| owned::settle(store, registry, owned));
                out
            }
            Err(e) => {
                if let Some(handle) = self.created {
                    registry.release(&handle);
                }
                Err(Failure::Store(e))
            }
        }
    }
}

/// One run of [`modify`]'s `f` on a value kept outside the store, under its mutex.
/// A value that would pass `size_max` is refused as the store refuses one too large.
fn edit_owned<R>(
    owned: &Owned,
    kind: ValueKind,
    owning: &Owning<'_>,
    f: &mut impl FnMut(Option<&[u8]>) -> (Edit, R),
) -> (Change, Result<R, Failure>) {
    let size_max = owning.size_max();
    let mut state = owned.state.lock();
    let encoded = encode_owned(&state.value);
    let (edit, out) = f(encoded.as_deref());
    let change = match edit {
        Edit::Keep => Change::Keep,
        Edit::Delete => Change::Delete,
        Edit::Write(value) if value.len() > size_max => {
            let too_large = StoreError::TooLarge { size: value.len(), max: size_max };
            return (Change::Keep, Err(Failure::Store(too_large)));
        }
        Edit::Write(value) => {
            let listpack = matches!(&state.value, owned::Value::Hash(hash) if hash.listpack);
            state.value = own(kind, &value);
            if let owned::Value::Hash(hash) = &mut state.value {
                hash.listpack = listpack && owning.hash_listpack(&value);
            }
            state.value_bytes = state.value.charged_bytes();
            state.changes += 1;
            Change::Keep
        }
    };
    (change, Ok(out))
}

/// The most a value kept outside the store may hold: as for one in it, `proto-max-bulk-len`
/// and half the memory limit.
pub(super) fn owned_size_max(store: &store::Store) -> usize {
    super::PROTO_MAX_BULK_LEN.min(store.memory_limit() / 2)
}

/// Runs `f` on the value kept outside the store for `key` if it holds `kind` and is an
/// owner, under the entry's mutex: the commands with a path of their own there cost O(1)
/// or O(elements touched) instead of O(size). `f` gets the room left under
/// [`owned_size_max`] and returns what its change did to the value's charged size
/// ([`Sized`]), or `None` to leave the command to the general path (as does a key that is
/// absent, in the store or of another type).
pub(super) fn with_owned<R>(
    shared: &crate::Shared,
    key: &[u8],
    kind: ValueKind,
    mut f: impl FnMut(&mut owned::Value, usize) -> Option<(Sized, R)>,
) -> Option<R> {
    if shared.owned.is_empty() {
        return None; // no key is an owner: spare the lookup
    }
    let size_max = owned_size_max(&shared.core.store);
    for _ in 0..3 {
        let owned = {
            let reader = shared.core.store.reader();
            let item = reader.get(key)?;
            if item.value_kind() != kind || !item.is_owner() {
                return None;
            }
            shared.owned.get(item.value())?
        };
        let mut state = owned.state.lock();
        if state.released {
            continue; // deleted or replaced since it was read: read the key again
        }
        let room_bytes = size_max.saturating_sub(state.value_bytes);
        let (sized, out) = f(&mut state.value, room_bytes)?;
        let changed = sized != Sized::Unchanged;
        if let Sized::Changed { added_bytes, removed_bytes } = sized {
            state.value_bytes = (state.value_bytes + added_bytes).saturating_sub(removed_bytes);
            state.changes += 1;
        }
        drop(state);
        if changed {
            owned::settle(&shared.core.store, &shared.owned, &owned);
        }
        return Some(out);
    }
    None
}

/// What a change of a value kept outside the store did (see [`with_owned`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sized {
    Unchanged,
    /// Elements of these charged sizes (`owned::element_bytes`, `hash_field_bytes`) came
    /// and went.
    Changed {
        added_bytes: usize,
        removed_bytes: usize,
    },
}

/// A collection's encoding as the commands read it: in the store, or made from the value
/// kept outside it (O(size): the commands not yet written against that value pay it).
pub(super) fn encoding<'i>(shared: &crate::Shared, item: &Item<'i>) -> Option<Cow<'i, [u8]>> {
    if !item.is_owner() {
        return Some(Cow::Borrowed(item.value()));
    }
    let owned = shared.owned.get(item.value())?;
    let state = owned.state.lock();
    encode_owned(&state.value).map(Cow::Owned)
}

/// What WATCH compares: the item's CAS unique, and for a value kept outside the store its
/// count of changes (its item is not rewritten by them).
pub(super) fn watch_stamp(shared: &crate::Shared, item: &Item<'_>) -> u64 {
    if !item.is_owner() {
        return item.cas();
    }
    let changes = shared.owned.get(item.value()).map_or(0, |owned| owned.state.lock().changes);
    item.cas() ^ changes.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Stores a copy of `item` (any kind, with its flags and expiry) under `key`: as `Mode::Set`
/// or `Mode::Add` does (only those two), for COPY, RENAME and MOVE.
pub(super) fn put_copy(
    shared: &crate::Shared,
    key: &[u8],
    item: &OwnedItem,
    mode: Mode,
    how: Copying,
) -> Result<(), StoreError> {
    debug_assert!(matches!(mode, Mode::Set | Mode::Add));
    let store = &shared.core.store;
    if item.kind == ValueKind::String {
        let (value, options) = (&item.value, super::redis_options());
        return store.store_with(key, value, item.flags, item.expiry, mode, options).map(|_| ());
    }
    let (kind, expiry) = (item.kind, item.expiry);
    // A value kept outside the store is copied (each key owns its own), unless it was
    // detached from the key it leaves.
    let copy = if item.is_owner() && how == Copying::Adopt {
        Some(item.value.clone())
    } else if item.is_owner() {
        let owned = shared.owned.get(&item.value).ok_or(StoreError::NotFound)?;
        let value = owned.state.lock().value.clone();
        Some(shared.owned.register(value))
    } else {
        None
    };
    let written = store.modify_within(key, super::PROTO_MAX_BULK_LEN, |current| {
        let change = match &copy {
            _ if current.is_some() && mode == Mode::Add => return (Change::Keep, false),
            Some(handle) => Change::WriteOwner { value: handle.clone(), kind, expiry },
            None => Change::WriteKind { value: item.value.clone(), kind, expiry },
        };
        (change, true)
    });
    match (written, copy) {
        (Ok((_, true)), Some(handle)) => {
            if let Some(owned) = shared.owned.get(&handle) {
                owned::settle(store, &shared.owned, &owned);
            }
            Ok(())
        }
        (Ok((_, true)), None) => Ok(()),
        (result, copy) => {
            if let Some(handle) = copy.filter(|_| how == Copying::Copy) {
                shared.owned.release(&handle);
            }
            result.and(Err(StoreError::NotStored))
        }
    }
}

/// How [`put_copy`] treats a value kept outside the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Copying {
    /// Copy it: the source key still has it (COPY).
    Copy,
    /// Take it: [`detach`] moved it out of the key it leaves (RENAME, MOVE, SWAPDB). When
    /// it is stored nowhere, the caller gives it back with [`drop_detached`].
    Adopt,
}

/// `item` as a key that is about to be deleted hands it over: a value kept outside the
/// store moves to an entry of its own, which the item then names (the deletion releases
/// only the old, now empty, entry). Call it inside the `Store::modify` that deletes it.
pub(super) fn detach(shared: &crate::Shared, item: &Item<'_>) -> OwnedItem {
    let mut owned_item = item.to_owned();
    if item.is_owner() {
        if let Some(owned) = shared.owned.get(item.value()) {
            let mut state = owned.state.lock();
            let value = std::mem::replace(&mut state.value, owned::Value::empty());
            state.value_bytes = 0;
            state.changes += 1;
            drop(state);
            owned_item.value = shared.owned.register(value);
        }
    }
    owned_item
}

/// Gives back a detached value that no key took.
pub(super) fn drop_detached(shared: &crate::Shared, item: &OwnedItem) {
    if item.is_owner() {
        shared.owned.release(&item.value);
    }
}

impl Ctx<'_> {
    /// Replies with Redis's error for a failed typed read or change.
    pub(super) fn failure(&mut self, failure: Failure) {
        match failure {
            Failure::WrongType => self.error(error::WRONGTYPE),
            Failure::Store(e) => self.store_error(e),
        }
    }
}

/// A snapshot's view of a collection: its encoding, read from outside the store for an
/// owner (`None`: not a collection, or an owner released meanwhile).
pub(crate) fn saved_encoding(shared: &crate::Shared, item: &Item<'_>) -> Option<Vec<u8>> {
    if item.value_kind() == ValueKind::String {
        return None;
    }
    if !item.is_owner() {
        return Some(item.value().to_vec());
    }
    let owned = shared.owned.get(item.value())?;
    let state = owned.state.lock();
    if state.released {
        return None;
    }
    encode_owned(&state.value)
}

/// Restores a collection from its encoding, as a write of it would store it (moved out of
/// the store when large).
pub(crate) fn restore(
    shared: &crate::Shared,
    key: &[u8],
    kind: ValueKind,
    encoding: Vec<u8>,
    expiry: Expiry,
) -> Result<(), StoreError> {
    let mut owning = Owning::new(shared);
    let mut encoding = Some(encoding);
    let result = shared.core.store.modify_within(key, super::PROTO_MAX_BULK_LEN, |_| {
        owning.start_run();
        let value = encoding.clone().unwrap_or_default();
        match owning.write(kind, value, expiry) {
            Ok(change) => (change, Ok(())),
            Err(failure) => (store::Change::Keep, Err(failure)),
        }
    });
    encoding.take();
    match owning.finish(result.map(|(_, out)| out)) {
        Ok(()) => Ok(()),
        Err(Failure::Store(e)) => Err(e),
        Err(Failure::WrongType) => Err(StoreError::NotStored),
    }
}
