//! Skeleton of the public API; bodies come with the engine.
#![allow(unused_variables, dead_code)]

use std::marker::PhantomData;

use crate::types::*;

pub struct Store {
    config: Config,
}

/// A pinned read session: items it returns stay valid until it is dropped. Take one per
/// batch of reads (one multiget), not per key.
pub struct Reader<'s> {
    store: &'s Store,
    _p: PhantomData<&'s ()>,
}

impl<'s> Reader<'s> {
    /// Looks a key up; counts the read for eviction.
    pub fn get(&self, key: &[u8]) -> Option<Item<'_>> {
        todo!()
    }
    /// Looks a key up without counting it as an access.
    pub fn peek(&self, key: &[u8]) -> Option<Item<'_>> {
        todo!()
    }
}

impl Store {
    pub fn new(config: Config) -> Result<Store, ConfigError> {
        todo!()
    }
    pub fn config(&self) -> &Config {
        &self.config
    }
    pub fn reader(&self) -> Reader<'_> {
        todo!()
    }
    /// Copying get, for callers that do not batch.
    pub fn get(&self, key: &[u8]) -> Option<OwnedItem> {
        self.reader().get(key).map(|it| it.to_owned())
    }
    /// Stores `value` under `key` as `mode` says; returns the new CAS unique.
    pub fn store(
        &self,
        key: &[u8],
        value: &[u8],
        flags: u32,
        expiry: Expiry,
        mode: Mode,
    ) -> Result<u64, StoreError> {
        todo!()
    }
    /// Deletes `key`; with `cas`, only if the item's CAS unique still equals it.
    pub fn delete(&self, key: &[u8], cas: Option<u64>) -> Result<(), StoreError> {
        todo!()
    }
    /// Sets a new expiry; returns the item's CAS unique.
    pub fn touch(&self, key: &[u8], expiry: Expiry) -> Result<u64, StoreError> {
        todo!()
    }
    /// Reads an item and sets its expiry in one step (memcached gat).
    pub fn get_and_touch(&self, key: &[u8], expiry: Expiry) -> Option<OwnedItem> {
        todo!()
    }
    /// memcached incr: the value must be a decimal u64; the sum wraps at 2^64.
    pub fn incr(&self, key: &[u8], delta: u64) -> Result<u64, StoreError> {
        todo!()
    }
    /// memcached decr: the value must be a decimal u64; the result stops at 0.
    pub fn decr(&self, key: &[u8], delta: u64) -> Result<u64, StoreError> {
        todo!()
    }
    /// Atomic read-modify-write: `f` sees the current item (None if absent or expired) and
    /// decides; no other write to `key` can come between the read and the write. Returns the
    /// CAS unique of the written item (`Some`) or `None` for Keep/Delete.
    pub fn modify<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(Option<Item<'_>>) -> (Change, R),
    ) -> Result<(Option<u64>, R), StoreError> {
        todo!()
    }
    /// Makes every item stored before `now + delay_ms` invisible from that time on.
    pub fn flush_all(&self, delay_ms: u64) {
        todo!()
    }
    /// Number of live items.
    pub fn len(&self) -> usize {
        todo!()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes charged against the memory limit.
    pub fn memory_used_bytes(&self) -> usize {
        todo!()
    }
    /// Visits up to about `count` keys from `cursor` on (0 starts); returns the next cursor,
    /// 0 when done. Keys present for the whole scan are visited at least once, even while
    /// others are written and the index grows.
    pub fn scan(&self, cursor: u64, count: usize, f: impl FnMut(&[u8])) -> u64 {
        todo!()
    }
    /// Background work in bounded steps: reclaims at most `segments_max` segments whose items
    /// are all expired or flushed. Returns how many were reclaimed.
    pub fn maintain(&self, segments_max: usize) -> usize {
        todo!()
    }
    pub fn stats(&self) -> Stats {
        todo!()
    }
}
