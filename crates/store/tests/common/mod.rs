//! memcached's incr and decr, built on `Store::modify` the way a protocol layer builds them
//! (the store has no counters of its own). The store's tests use them to check that
//! `modify` is one atomic read-modify-write: no increment lost or doubled under threads.

// Each test file includes this module and uses the part it needs.
#![allow(dead_code)]

use store::{Change, Store, StoreError};

/// Adds `delta` to a decimal u64 value; wraps at 2^64.
pub fn incr(store: &Store, key: &[u8], delta: u64) -> Result<u64, StoreError> {
    add_decimal(store, key, |n| n.wrapping_add(delta))
}

/// Subtracts `delta` from a decimal u64 value; stops at 0.
pub fn decr(store: &Store, key: &[u8], delta: u64) -> Result<u64, StoreError> {
    add_decimal(store, key, |n| n.saturating_sub(delta))
}

/// Writes `op(value)` in decimal, keeping the item's flags and expiry; `NotFound` if there
/// is no item, `NotNumeric` if its value is not 1 to 20 ASCII digits that fit in a u64.
fn add_decimal(store: &Store, key: &[u8], op: impl Fn(u64) -> u64) -> Result<u64, StoreError> {
    let (_, result) = store.modify(key, |current| {
        let Some(item) = current else { return (Change::Keep, Err(StoreError::NotFound)) };
        let Some(n) = parse_decimal_u64(item.value()) else {
            return (Change::Keep, Err(StoreError::NotNumeric));
        };
        let n = op(n);
        let value = n.to_string().into_bytes();
        (Change::Write { value, flags: item.flags(), expiry: item.expiry() }, Ok(n))
    })?;
    result
}

fn parse_decimal_u64(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() || bytes.len() > 20 || !bytes.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse().ok()
}
