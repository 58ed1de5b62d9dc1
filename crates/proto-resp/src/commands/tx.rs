//! Transactions: MULTI EXEC DISCARD WATCH UNWATCH.
//!
//! Declared as the main table is (see `commands.rs`): values from Redis's
//! `src/commands/*.json`, summaries in our own words, sorted by name.

use super::{spec, CommandId, CommandSpec, Flags, Group, Run};

/// One handler per command of this family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TxId {
    Discard,
    Exec,
    Multi,
    Unwatch,
    Watch,
}

/// This family's commands, sorted by name.
#[rustfmt::skip]
pub static TX_COMMANDS: &[CommandSpec] = {
    use {CommandId::Transactions as T, Flags as F, Group as G, Run::Command as R, TxId as X};
    &[
    spec(R(T(X::Discard)), "discard", 1, G::Transactions, "2.0.0", (0, 0, 0),
        &[F::NOSCRIPT, F::LOADING, F::STALE, F::FAST, F::ALLOW_BUSY],
        "Discards a transaction."),
    spec(R(T(X::Exec)), "exec", 1, G::Transactions, "1.2.0", (0, 0, 0),
        &[F::NOSCRIPT, F::LOADING, F::STALE, F::SKIP_SLOWLOG],
        "Executes all commands in a transaction."),
    spec(R(T(X::Multi)), "multi", 1, G::Transactions, "1.2.0", (0, 0, 0),
        &[F::NOSCRIPT, F::LOADING, F::STALE, F::FAST, F::ALLOW_BUSY],
        "Starts a transaction."),
    spec(R(T(X::Unwatch)), "unwatch", 1, G::Transactions, "2.2.0", (0, 0, 0),
        &[F::NOSCRIPT, F::LOADING, F::STALE, F::FAST, F::ALLOW_BUSY],
        "Forgets about watched keys of a transaction."),
    spec(R(T(X::Watch)), "watch", -2, G::Transactions, "2.2.0", (1, -1, 1),
        &[F::NOSCRIPT, F::LOADING, F::STALE, F::FAST, F::ALLOW_BUSY],
        "Monitors changes to keys to determine the execution of a transaction."),
    ]
};
