//! Sets: SADD ... SSCAN and the STORE forms.
//!
//! Declared as the main table is (see `commands.rs`): values from Redis's
//! `src/commands/*.json`, summaries in our own words, sorted by name.

use super::{spec, CommandId, CommandSpec, Flags, Group};

/// One handler per command of this family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SetId {
    Sadd,
    Scard,
    Sdiff,
    Sdiffstore,
    Sinter,
    Sintercard,
    Sinterstore,
    Sismember,
    Smembers,
    Smismember,
    Smove,
    Spop,
    Srandmember,
    Srem,
    Sscan,
    Sunion,
    Sunionstore,
}

/// This family's commands, sorted by name.
#[rustfmt::skip]
pub static SET_COMMANDS: &[CommandSpec] = {
    use {CommandId::Sets as C, Flags as F, Group::Set as G, SetId as S, super::Run::Command as R};
    &[
    spec(R(C(S::Sadd)), "sadd", -3, G, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::FAST],
        "Adds members to a set, creating it if needed."),
    spec(R(C(S::Scard)), "scard", 2, G, "1.0.0", (1, 1, 1),
        &[F::READONLY, F::FAST],
        "Counts the members of a set."),
    spec(R(C(S::Sdiff)), "sdiff", -2, G, "1.0.0", (1, -1, 1),
        &[F::READONLY],
        "Returns the members of the first set that no other given set has."),
    spec(R(C(S::Sdiffstore)), "sdiffstore", -3, G, "1.0.0", (1, -1, 1),
        &[F::WRITE, F::DENYOOM],
        "Stores the difference of sets under a key."),
    spec(R(C(S::Sinter)), "sinter", -2, G, "1.0.0", (1, -1, 1),
        &[F::READONLY],
        "Returns the members every given set has."),
    // Redis declares its keys movable (`numkeys`), so the legacy triple is all zero.
    spec(R(C(S::Sintercard)), "sintercard", -3, G, "7.0.0", (0, 0, 0),
        &[F::READONLY, F::MOVABLEKEYS],
        "Counts the members every given set has, optionally up to a limit."),
    spec(R(C(S::Sinterstore)), "sinterstore", -3, G, "1.0.0", (1, -1, 1),
        &[F::WRITE, F::DENYOOM],
        "Stores the intersection of sets under a key."),
    spec(R(C(S::Sismember)), "sismember", 3, G, "1.0.0", (1, 1, 1),
        &[F::READONLY, F::FAST],
        "Tells whether a value is a member of a set."),
    spec(R(C(S::Smembers)), "smembers", 2, G, "1.0.0", (1, 1, 1),
        &[F::READONLY],
        "Returns every member of a set."),
    spec(R(C(S::Smismember)), "smismember", -3, G, "6.2.0", (1, 1, 1),
        &[F::READONLY, F::FAST],
        "Tells, for each of several values, whether it is a member of a set."),
    spec(R(C(S::Smove)), "smove", 4, G, "1.0.0", (1, 2, 1),
        &[F::WRITE, F::FAST],
        "Moves a member from one set to another."),
    spec(R(C(S::Spop)), "spop", -2, G, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::FAST],
        "Removes and returns random members of a set."),
    spec(R(C(S::Srandmember)), "srandmember", -2, G, "1.0.0", (1, 1, 1),
        &[F::READONLY],
        "Returns random members of a set, distinct or with repeats."),
    spec(R(C(S::Srem)), "srem", -3, G, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::FAST],
        "Removes members from a set, deleting it once empty."),
    spec(R(C(S::Sscan)), "sscan", -3, G, "2.8.0", (1, 1, 1),
        &[F::READONLY],
        "Iterates over the members of a set with a cursor."),
    spec(R(C(S::Sunion)), "sunion", -2, G, "1.0.0", (1, -1, 1),
        &[F::READONLY],
        "Returns the members any given set has."),
    spec(R(C(S::Sunionstore)), "sunionstore", -3, G, "1.0.0", (1, -1, 1),
        &[F::WRITE, F::DENYOOM],
        "Stores the union of sets under a key."),
    ]
};
