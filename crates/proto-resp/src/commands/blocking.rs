//! Blocking commands: BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP BZPOPMIN BZPOPMAX BZMPOP, and
//! WAIT (which waits for replicas, of which Spinel has none).
//!
//! Declared as the main table is (see `commands.rs`): values from Redis's
//! `src/commands/*.json`, summaries in our own words, sorted by name. Each keeps the group
//! Redis gives it (list, sorted-set, generic), so `COMMAND DOCS` and the ACL categories
//! match; they share a table because they share a handler module (`exec::resp::blocking`).

use super::{spec, CommandId, CommandSpec, Flags, Group, Run};

/// One handler per command of this family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockingId {
    Blmove,
    Blmpop,
    Blpop,
    Brpop,
    Brpoplpush,
    Bzmpop,
    Bzpopmax,
    Bzpopmin,
    Wait,
}

/// This family's commands, sorted by name.
#[rustfmt::skip]
pub static BLOCKING_COMMANDS: &[CommandSpec] = {
    use {BlockingId as B, CommandId::Blocking as X, Flags as F, Group as G, Run::Command as R};
    &[
    spec(R(X(B::Blmove)), "blmove", 6, G::List, "6.2.0", (1, 2, 1),
        &[F::WRITE, F::DENYOOM, F::NOSCRIPT, F::BLOCKING],
        "Pops an element from one list, pushes it onto another, and blocks until one is there."),
    spec(R(X(B::Blmpop)), "blmpop", -5, G::List, "7.0.0", (0, 0, 0),
        &[F::WRITE, F::BLOCKING, F::MOVABLEKEYS],
        "Pops elements from the first non-empty list of several, or blocks until one is."),
    spec(R(X(B::Blpop)), "blpop", -3, G::List, "2.0.0", (1, -2, 1),
        &[F::WRITE, F::NOSCRIPT, F::BLOCKING],
        "Removes and returns the first element of the first non-empty list, or blocks."),
    spec(R(X(B::Brpop)), "brpop", -3, G::List, "2.0.0", (1, -2, 1),
        &[F::WRITE, F::NOSCRIPT, F::BLOCKING],
        "Removes and returns the last element of the first non-empty list, or blocks."),
    spec(R(X(B::Brpoplpush)), "brpoplpush", 4, G::List, "2.2.0", (1, 2, 1),
        &[F::WRITE, F::DENYOOM, F::NOSCRIPT, F::BLOCKING],
        "Pops the tail of a list and pushes it onto another's head, blocking until one is there."),
    spec(R(X(B::Bzmpop)), "bzmpop", -5, G::SortedSet, "7.0.0", (0, 0, 0),
        &[F::WRITE, F::BLOCKING, F::MOVABLEKEYS],
        "Pops members by score from the first non-empty sorted set of several, or blocks."),
    spec(R(X(B::Bzpopmax)), "bzpopmax", -3, G::SortedSet, "5.0.0", (1, -2, 1),
        &[F::WRITE, F::NOSCRIPT, F::BLOCKING, F::FAST],
        "Removes and returns the highest-scored member of the first non-empty sorted set."),
    spec(R(X(B::Bzpopmin)), "bzpopmin", -3, G::SortedSet, "5.0.0", (1, -2, 1),
        &[F::WRITE, F::NOSCRIPT, F::BLOCKING, F::FAST],
        "Removes and returns the lowest-scored member of the first non-empty sorted set."),
    spec(R(X(B::Wait)), "wait", 3, G::Generic, "3.0.0", (0, 0, 0),
        &[F::NOSCRIPT],
        "Waits for writes to reach a number of replicas; Spinel has none."),
    ]
};
