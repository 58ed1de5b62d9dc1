//! SORT and SORT_RO.
//!
//! Declared as the main table is (see `commands.rs`): values from Redis's
//! `src/commands/*.json`, summaries in our own words, sorted by name. Redis marks both
//! `movablekeys`: SORT's STORE destination may be anywhere among the options, and the keys
//! its BY and GET patterns name come from the data (see `keyspec.rs`).

use super::{spec, CommandId, CommandSpec, Flags, Group, Run};

/// One handler per command of this family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SortId {
    Sort,
    SortRo,
}

/// This family's commands, sorted by name.
#[rustfmt::skip]
pub static SORT_COMMANDS: &[CommandSpec] = {
    use {CommandId::Sort as C, Flags as F, Group as G, Run::Command as R, SortId as S};
    &[
    spec(R(C(S::Sort)), "sort", -2, G::Generic, "1.0.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::MOVABLEKEYS],
        "Sorts a list, set or sorted set, or the values its elements point to; may store the result."),
    spec(R(C(S::SortRo)), "sort_ro", -2, G::Generic, "7.0.0", (1, 1, 1),
        &[F::READONLY, F::MOVABLEKEYS],
        "Sorts a list, set or sorted set, or the values its elements point to."),
    ]
};
