//! What every data type family shares: reading a key as one kind, changing one collection
//! atomically, WRONGTYPE, and the length-prefixed entries the encodings are made of.
//!
//! A collection is one store item whose [`ValueKind`] says which type it is and whose value
//! is the family's encoding (see each family's module). The store never reads a value, so a
//! collection is evicted, expired, copied forward and counted against `-m` as any item is;
//! DEL, EXPIRE, RENAME and the rest need nothing of their own. A change runs inside one
//! [`store::Store::modify`], under the key's stripe lock, so commands on one collection are
//! atomic with respect to each other on every worker; reads take no lock (an item is never
//! changed in place: a change writes a new item).

use proto_resp::error;
use store::{Change, Expiry, Item, Mode, OwnedItem, Reader, StoreError, ValueKind};

use super::Ctx;

/// The name TYPE answers for a kind.
pub(super) fn type_name(kind: ValueKind) -> &'static [u8] {
    match kind {
        ValueKind::String => b"string",
        ValueKind::List => b"list",
        ValueKind::Hash => b"hash",
        ValueKind::Set => b"set",
        ValueKind::ZSet => b"zset",
    }
}

/// The name OBJECT ENCODING gives a collection's value.
pub(super) fn encoding_name(kind: ValueKind, _value: &[u8]) -> &'static str {
    match kind {
        ValueKind::String => "raw",
        ValueKind::List => "listpack",
        ValueKind::Hash => "listpack",
        ValueKind::Set => "listpack",
        ValueKind::ZSet => "listpack",
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

/// `key`'s item if it holds `kind`; `Ok(None)` if the key is absent.
pub(super) fn read<'r>(
    reader: &'r Reader<'_>,
    key: &[u8],
    kind: ValueKind,
) -> Result<Option<Item<'r>>, Failure> {
    match reader.peek(key) {
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
pub(super) fn modify<R>(
    ctx: &Ctx<'_>,
    key: &[u8],
    kind: ValueKind,
    mut f: impl FnMut(Option<&[u8]>) -> (Edit, R),
) -> Result<R, Failure> {
    let result = ctx.shared.store.modify_within(key, super::PROTO_MAX_BULK_LEN, |current| {
        let expiry = current.map_or(Expiry::Never, |item| item.expiry());
        match current {
            Some(item) if item.value_kind() != kind => (Change::Keep, Err(Failure::WrongType)),
            current => {
                let (edit, out) = f(current.map(|item| item.value()));
                let change = match edit {
                    Edit::Keep => Change::Keep,
                    Edit::Delete => Change::Delete,
                    Edit::Write(value) => Change::WriteKind { value, kind, expiry },
                };
                (change, Ok(out))
            }
        }
    });
    match result {
        Ok((_, out)) => out,
        Err(e) => Err(Failure::Store(e)),
    }
}

/// Stores a copy of `item` (any kind, with its flags and expiry) under `key`: as `Mode::Set`
/// or `Mode::Add` does (only those two), for COPY, RENAME and MOVE.
pub(super) fn put_copy(
    store: &store::Store,
    key: &[u8],
    item: &OwnedItem,
    mode: Mode,
) -> Result<(), StoreError> {
    debug_assert!(matches!(mode, Mode::Set | Mode::Add));
    if item.kind == ValueKind::String {
        let (value, options) = (&item.value, super::redis_options());
        return store.store_with(key, value, item.flags, item.expiry, mode, options).map(|_| ());
    }
    let (kind, expiry) = (item.kind, item.expiry);
    let (_, stored) =
        store.modify_within(key, super::PROTO_MAX_BULK_LEN, |current| match current {
            Some(_) if mode == Mode::Add => (Change::Keep, false),
            _ => (Change::WriteKind { value: item.value.clone(), kind, expiry }, true),
        })?;
    if stored {
        Ok(())
    } else {
        Err(StoreError::NotStored)
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

/// Appends `bytes` to an encoding as one entry: its length as a LEB128 varint, then the
/// bytes.
pub(super) fn put_entry(out: &mut Vec<u8>, bytes: &[u8]) {
    let mut len = bytes.len();
    while len >= 0x80 {
        out.push((len as u8 & 0x7f) | 0x80);
        len >>= 7;
    }
    out.push(len as u8);
    out.extend_from_slice(bytes);
}

/// The entries of an encoding written with [`put_entry`], in order.
#[derive(Debug, Clone)]
pub(super) struct Entries<'a> {
    rest: &'a [u8],
}

impl<'a> Entries<'a> {
    pub(super) fn new(encoded: &'a [u8]) -> Entries<'a> {
        Entries { rest: encoded }
    }

    /// The bytes not yet read.
    pub(super) fn rest(&self) -> &'a [u8] {
        self.rest
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let (mut len, mut shift, mut used) = (0usize, 0, 0);
        loop {
            let byte = *self.rest.get(used)?;
            used += 1;
            len |= usize::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                break;
            }
            shift += 7;
        }
        let entry = self.rest.get(used..used + len)?;
        self.rest = &self.rest[used + len..];
        Some(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: entries of every length class read back as written, in order.
    #[test]
    fn entries_round_trip() {
        let values: Vec<Vec<u8>> =
            [0, 1, 127, 128, 300, 16_384, 70_000].iter().map(|&n| vec![b'x'; n]).collect();
        let mut encoded = Vec::new();
        values.iter().for_each(|v| put_entry(&mut encoded, v));
        let read: Vec<&[u8]> = Entries::new(&encoded).collect();
        assert_eq!(read, values.iter().map(|v| v.as_slice()).collect::<Vec<_>>());
    }
}
