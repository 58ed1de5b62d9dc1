//! Redis's `maxmemory-policy` names and what each makes the store do.

/// Redis's `maxmemory-policy` names, in the order its error message lists them.
/// `allkeys-*` make the store evict any key, `volatile-*` only keys with a TTL (S3-FIFO's
/// order either way, whatever the name says of LRU, LFU, random or TTL), `noeviction`
/// refuse writes that need memory.
pub const MAXMEMORY_POLICIES: [&str; 8] = [
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];
pub(crate) const POLICY_VOLATILE_LRU: u8 = 0;
/// The last `volatile-*` name.
pub(crate) const POLICY_VOLATILE_LAST: u8 = 3;
pub(crate) const POLICY_ALLKEYS_LRU: u8 = 4;
pub(crate) const POLICY_NOEVICTION: u8 = 7;
