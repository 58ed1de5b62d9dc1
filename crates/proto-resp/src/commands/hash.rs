//! Hashes: HSET ... HSCAN and the per-field expiry commands (Redis 7.4-8).
//!
//! Declared as the main table is (see `commands.rs`): values from Redis's
//! `src/commands/*.json`, summaries in our own words, sorted by name.

use super::{spec, ArgRule, CommandId, CommandSpec, Flags, Group, Run};

/// One handler per command of this family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HashId {
    Hdel,
    Hexists,
    Hexpire,
    Hexpireat,
    Hexpiretime,
    Hget,
    Hgetall,
    Hgetdel,
    Hgetex,
    Hincrby,
    Hincrbyfloat,
    Hkeys,
    Hlen,
    Hmget,
    Hmset,
    Hpersist,
    Hpexpire,
    Hpexpireat,
    Hpexpiretime,
    Hpttl,
    Hrandfield,
    Hscan,
    Hset,
    Hsetex,
    Hsetnx,
    Hstrlen,
    Httl,
    Hvals,
}

/// This family's commands, sorted by name.
#[rustfmt::skip]
pub static HASH_COMMANDS: &[CommandSpec] = {
    use {Flags as F, Group as G, HashId as H};
    const fn r(id: HashId) -> Run {
        Run::Command(CommandId::Hashes(id))
    }
    const READ: &[Flags] = &[F::READONLY];
    const READ_FAST: &[Flags] = &[F::READONLY, F::FAST];
    const WRITE_FAST: &[Flags] = &[F::WRITE, F::FAST];
    const GROW_FAST: &[Flags] = &[F::WRITE, F::DENYOOM, F::FAST];
    const K: (i32, i32, i32) = (1, 1, 1);
    &[
    spec(r(H::Hdel), "hdel", -3, G::Hash, "2.0.0", K, WRITE_FAST,
        "Deletes fields of a hash."),
    spec(r(H::Hexists), "hexists", 3, G::Hash, "2.0.0", K, READ_FAST,
        "Tells whether a field exists in a hash."),
    spec(r(H::Hexpire), "hexpire", -6, G::Hash, "7.4.0", K, GROW_FAST,
        "Sets a time to live in seconds on hash fields."),
    spec(r(H::Hexpireat), "hexpireat", -6, G::Hash, "7.4.0", K, GROW_FAST,
        "Sets hash fields' expiry as a Unix time in seconds."),
    spec(r(H::Hexpiretime), "hexpiretime", -5, G::Hash, "7.4.0", K, READ_FAST,
        "Returns hash fields' expiry as a Unix time in seconds."),
    spec(r(H::Hget), "hget", 3, G::Hash, "2.0.0", K, READ_FAST,
        "Returns the value of a hash field."),
    spec(r(H::Hgetall), "hgetall", 2, G::Hash, "2.0.0", K, READ,
        "Returns every field and value of a hash."),
    spec(r(H::Hgetdel), "hgetdel", -5, G::Hash, "8.0.0", K, WRITE_FAST,
        "Returns the values of hash fields and deletes them."),
    spec(r(H::Hgetex), "hgetex", -5, G::Hash, "8.0.0", K, WRITE_FAST,
        "Returns the values of hash fields and changes their expiry."),
    spec(r(H::Hincrby), "hincrby", 4, G::Hash, "2.0.0", K, GROW_FAST,
        "Adds an integer to the number in a hash field."),
    spec(r(H::Hincrbyfloat), "hincrbyfloat", 4, G::Hash, "2.6.0", K, GROW_FAST,
        "Adds a floating point number to the number in a hash field."),
    spec(r(H::Hkeys), "hkeys", 2, G::Hash, "2.0.0", K, READ,
        "Returns every field name of a hash."),
    spec(r(H::Hlen), "hlen", 2, G::Hash, "2.0.0", K, READ_FAST,
        "Counts the fields of a hash."),
    spec(r(H::Hmget), "hmget", -3, G::Hash, "2.0.0", K, READ_FAST,
        "Returns the values of several hash fields."),
    spec(r(H::Hmset), "hmset", -4, G::Hash, "2.0.0", K, GROW_FAST,
        "Sets several hash fields (deprecated form of HSET).").with_rule(ArgRule::PairsFrom(2)),
    spec(r(H::Hpersist), "hpersist", -5, G::Hash, "7.4.0", K, WRITE_FAST,
        "Removes the expiry of hash fields."),
    spec(r(H::Hpexpire), "hpexpire", -6, G::Hash, "7.4.0", K, GROW_FAST,
        "Sets a time to live in milliseconds on hash fields."),
    spec(r(H::Hpexpireat), "hpexpireat", -6, G::Hash, "7.4.0", K, GROW_FAST,
        "Sets hash fields' expiry as a Unix time in milliseconds."),
    spec(r(H::Hpexpiretime), "hpexpiretime", -5, G::Hash, "7.4.0", K, READ_FAST,
        "Returns hash fields' expiry as a Unix time in milliseconds."),
    spec(r(H::Hpttl), "hpttl", -5, G::Hash, "7.4.0", K, READ_FAST,
        "Returns hash fields' time to live in milliseconds."),
    spec(r(H::Hrandfield), "hrandfield", -2, G::Hash, "6.2.0", K, READ,
        "Returns random fields of a hash."),
    spec(r(H::Hscan), "hscan", -3, G::Hash, "2.8.0", K, READ,
        "Iterates over the fields of a hash with a cursor."),
    spec(r(H::Hset), "hset", -4, G::Hash, "2.0.0", K, GROW_FAST,
        "Sets hash fields, creating the hash if needed.").with_rule(ArgRule::PairsFrom(2)),
    spec(r(H::Hsetex), "hsetex", -6, G::Hash, "8.0.0", K, GROW_FAST,
        "Sets hash fields and, optionally, their expiry."),
    spec(r(H::Hsetnx), "hsetnx", 4, G::Hash, "2.0.0", K, GROW_FAST,
        "Sets a hash field only if it does not exist."),
    spec(r(H::Hstrlen), "hstrlen", 3, G::Hash, "3.2.0", K, READ_FAST,
        "Returns the length of a hash field's value."),
    spec(r(H::Httl), "httl", -5, G::Hash, "7.4.0", K, READ_FAST,
        "Returns hash fields' time to live in seconds."),
    spec(r(H::Hvals), "hvals", 2, G::Hash, "2.0.0", K, READ,
        "Returns every value of a hash."),
    ]
};
