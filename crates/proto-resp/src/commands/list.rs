//! Lists: LPUSH ... LMPOP (the blocking variants are not here).
//!
//! Declared as the main table is (see `commands.rs`): values from Redis's
//! `src/commands/*.json`, summaries in our own words, sorted by name.

use super::{spec, ArgRule, CommandId, CommandSpec, Flags, Group, Run};

/// One handler per command of this family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ListId {
    Lindex,
    Linsert,
    Llen,
    Lmove,
    Lmpop,
    Lpop,
    Lpos,
    Lpush,
    Lpushx,
    Lrange,
    Lrem,
    Lset,
    Ltrim,
    Rpop,
    Rpoplpush,
    Rpush,
    Rpushx,
}

/// This family's commands, sorted by name.
#[rustfmt::skip]
pub static LIST_COMMANDS: &[CommandSpec] = {
    use {Flags as F, Group as G, ListId as L};
    const fn r(id: ListId) -> Run {
        Run::Command(CommandId::Lists(id))
    }
    &[
    spec(r(L::Lindex), "lindex", 3, G::List, "1.0.0", (1, 1, 1),
        &[F::READONLY],
        "Returns the element at an index of a list."),
    spec(r(L::Linsert), "linsert", 5, G::List, "2.2.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM],
        "Inserts an element before or after another element of a list."),
    spec(r(L::Llen), "llen", 2, G::List, "1.0.0", (1, 1, 1),
        &[F::READONLY, F::FAST],
        "Returns the length of a list."),
    spec(r(L::Lmove), "lmove", 5, G::List, "6.2.0", (1, 2, 1),
        &[F::WRITE, F::DENYOOM],
        "Pops an element from one end of a list and pushes it onto an end of another."),
    // Redis also flags it `movablekeys`: its keys follow `numkeys`, so the legacy triple is
    // zero.
    spec(r(L::Lmpop), "lmpop", -4, G::List, "7.0.0", (0, 0, 0),
        &[F::WRITE],
        "Pops elements from the first non-empty list of several."),
    spec(r(L::Lpop), "lpop", -2, G::List, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::FAST],
        "Removes and returns elements from the head of a list.").with_rule(ArgRule::AtMost(3)),
    spec(r(L::Lpos), "lpos", -3, G::List, "6.0.6", (1, 1, 1),
        &[F::READONLY],
        "Returns the indexes of the elements of a list equal to a value."),
    spec(r(L::Lpush), "lpush", -3, G::List, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::FAST],
        "Prepends elements to a list, creating it if needed."),
    spec(r(L::Lpushx), "lpushx", -3, G::List, "2.2.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::FAST],
        "Prepends elements to a list only if it exists."),
    spec(r(L::Lrange), "lrange", 4, G::List, "1.0.0", (1, 1, 1),
        &[F::READONLY],
        "Returns a range of the elements of a list."),
    spec(r(L::Lrem), "lrem", 4, G::List, "1.0.0", (1, 1, 1),
        &[F::WRITE],
        "Removes elements equal to a value from a list."),
    spec(r(L::Lset), "lset", 4, G::List, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM],
        "Replaces the element at an index of a list."),
    spec(r(L::Ltrim), "ltrim", 4, G::List, "1.0.0", (1, 1, 1),
        &[F::WRITE],
        "Keeps only a range of the elements of a list."),
    spec(r(L::Rpop), "rpop", -2, G::List, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::FAST],
        "Removes and returns elements from the tail of a list.").with_rule(ArgRule::AtMost(3)),
    spec(r(L::Rpoplpush), "rpoplpush", 3, G::List, "1.2.0", (1, 2, 1),
        &[F::WRITE, F::DENYOOM],
        "Pops the last element of a list and pushes it onto the head of another."),
    spec(r(L::Rpush), "rpush", -3, G::List, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::FAST],
        "Appends elements to a list, creating it if needed."),
    spec(r(L::Rpushx), "rpushx", -3, G::List, "2.2.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::FAST],
        "Appends elements to a list only if it exists."),
    ]
};
