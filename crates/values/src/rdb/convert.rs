//! A payload's [`Value`] and the collections the commands keep ([`owned::Value`]), each
//! made from the other: DUMP reads a collection this way, RESTORE stores one.

use super::Value;
use crate::owned::{self, HashValue, SetValue, ZSetValue};

impl Value {
    /// Whether it is a collection with nothing in it (a payload no Redis restores).
    pub fn is_empty_collection(&self) -> bool {
        match self {
            // An empty stream is a value (XGROUP CREATE ... MKSTREAM makes one).
            Value::String(_) | Value::Stream(_) => false,
            Value::List(elements) | Value::Set(elements) => elements.is_empty(),
            Value::Hash(fields) => fields.is_empty(),
            Value::ZSet(members) => members.is_empty(),
        }
    }
}

/// A collection as a payload carries it, leaving out the hash fields expired at `now_ms`
/// (a Redis 7.0 payload has no place for a field's expiry).
pub fn from_owned(value: &owned::Value, now_ms: u64) -> Value {
    let bytes = |slice: &[u8]| slice.to_vec();
    match value {
        owned::Value::List(list) => Value::List(list.iter().map(|e| e.to_vec()).collect()),
        owned::Value::Set(set) => Value::Set(set.iter().map(bytes).collect()),
        owned::Value::ZSet(zset) => {
            Value::ZSet(zset.iter().map(|(score, member)| (member.to_vec(), score)).collect())
        }
        owned::Value::Hash(hash) => {
            let live = |name: &[u8]| hash.expire_at_ms.get(name).is_none_or(|&at| at > now_ms);
            let fields = hash.iter().filter(|(name, _)| live(name));
            Value::Hash(fields.map(|(name, value)| (name.to_vec(), value.to_vec())).collect())
        }
        owned::Value::Stream(stream) => Value::Stream(stream.clone()),
    }
}

/// A payload's value as the commands keep it.
#[derive(Debug)]
pub enum Kept {
    String(Vec<u8>),
    Collection(owned::Value),
}

/// What a payload's value becomes: a string's bytes, or the collection (whose encoding is
/// [`owned::encode`]).
pub fn kept(value: Value) -> Kept {
    let collection = match value {
        Value::String(bytes) => return Kept::String(bytes),
        Value::List(elements) => {
            owned::Value::List(elements.into_iter().map(Vec::into_boxed_slice).collect())
        }
        Value::Set(members) => {
            let mut set = SetValue::default();
            members.iter().for_each(|member| {
                set.insert(member);
            });
            owned::Value::Set(set)
        }
        Value::Hash(fields) => {
            let mut hash = HashValue::default();
            let bytes = fields.iter().map(|(name, value)| name.len() + value.len()).sum();
            hash.reserve(fields.len(), bytes);
            fields.iter().for_each(|(name, value)| {
                hash.insert(name, value);
            });
            owned::Value::Hash(hash)
        }
        Value::Stream(stream) => owned::Value::Stream(stream),
        Value::ZSet(members) => {
            let mut zset = ZSetValue::default();
            members.iter().for_each(|(member, score)| {
                zset.insert(member, *score);
            });
            owned::Value::ZSet(zset)
        }
    };
    Kept::Collection(collection)
}
