//! Arbitrary bytes as a DUMP payload (`src/rdb`: the value decoder, its packed forms,
//! LZF, the CRC-64 footer): raw (most fail the checksum, as a client's garbage would), or
//! sealed with an RDB version and a valid CRC-64 so they reach the decoder. The first
//! byte picks which, as in exec's restore_payload (whose seeds these are).
//!
//! Streams (types 15 and 19: node listpacks, consumer groups) go through the same checks.
//!
//! Checks: nothing panics or allocates what a length claims; a value that loads is kept
//! as a collection whose encoding is valid and reads back as the same value, and dumps to
//! a payload that loads as the same value again.
//!
//! Run: `cargo fuzz run rdb_payload corpus/rdb_payload seeds/rdb_payload -- -dict=rdb.dict`
//! from crates/values/fuzz (see scripts/fuzz-smoke).

#![no_main]

use libfuzzer_sys::fuzz_target;
use values::{
    hash, list, owned,
    rdb::{self, Kept, Value},
    set, stream, zset,
};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else { return };
    let payload = match mode % 4 {
        0 => body.to_vec(),
        3 => seal(body, u16::from(mode >> 2)), // older (and one newer) versions
        _ => seal(body, rdb::RDB_VERSION),
    };
    if !rdb::verify(&payload) {
        return;
    }
    let Some(value) = rdb::load(&payload) else { return };
    let again = rdb::dump(&value);
    assert!(rdb::verify(&again));
    assert_eq!(rdb::load(&again).map(sorted), Some(sorted(value.clone())), "DUMP of a load");
    let Kept::Collection(kept) = rdb::kept(value.clone()) else { return };
    let encoded = owned::encode(&kept).expect("a loaded collection is never empty");
    let (valid, own) = match &kept {
        owned::Value::List(_) => (list::is_valid(&encoded), owned::Value::List(list::decode_owned(&encoded))),
        owned::Value::Hash(_) => (hash::is_valid(&encoded), owned::Value::Hash(hash::own(&encoded))),
        owned::Value::Set(_) => (set::is_valid(&encoded), owned::Value::Set(set::own(&encoded))),
        owned::Value::ZSet(_) => (zset::is_valid(&encoded), owned::Value::ZSet(zset::own(&encoded))),
        owned::Value::Stream(_) => {
            let decoded = stream::decode(&encoded).expect("a loaded stream's encoding decodes");
            (stream::is_valid(&encoded), owned::Value::Stream(Box::new(decoded)))
        }
    };
    assert!(valid, "a restored value's encoding is valid");
    assert_eq!(owned::encode(&own).as_deref(), Some(&encoded[..]), "it re-encodes");
    assert_eq!(sorted(rdb::from_owned(&own, 0)), sorted(value), "it holds the payload's value");
});

/// `body` with the footer RESTORE checks (RDB version and CRC-64).
fn seal(body: &[u8], version: u16) -> Vec<u8> {
    let mut payload = body.to_vec();
    payload.extend_from_slice(&version.to_le_bytes());
    payload.extend_from_slice(&rdb::crc64(&payload).to_le_bytes());
    payload
}

/// A value with its members in one order (sets, hashes, sorted sets by member: a score of
/// `-0` is kept as `0`, which compares equal but sorts apart).
fn sorted(mut value: Value) -> Value {
    match &mut value {
        Value::Set(members) => members.sort(),
        Value::Hash(fields) => fields.sort(),
        Value::ZSet(members) => members.sort_by(|a, b| a.0.cmp(&b.0)),
        Value::String(_) | Value::List(_) | Value::Stream(_) => {}
    }
    value
}
