//! Redis Cluster's commands other than the `CLUSTER` container (whose subcommands are in
//! `subcommands.rs`): ASKING READONLY READWRITE, and the key moves a reshard is made of,
//! DUMP RESTORE RESTORE-ASKING MIGRATE.
//!
//! Declared as the main table is (see `commands.rs`): values from Redis's
//! `src/commands/*.json`, summaries in our own words, sorted by name. They share a table
//! because their handlers live in `exec::resp::cluster`.

use super::{spec, CommandId, CommandSpec, Flags, Group, Run};

/// One handler per command of this family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClusterId {
    Asking,
    Dump,
    Migrate,
    Readonly,
    Readwrite,
    Restore,
    RestoreAsking,
}

/// This family's commands, sorted by name.
#[rustfmt::skip]
pub static CLUSTER_COMMANDS: &[CommandSpec] = {
    use {ClusterId as K, CommandId::Cluster as X, Flags as F, Group as G, Run::Command as R};
    &[
    spec(R(X(K::Asking)), "asking", 1, G::Cluster, "3.0.0", (0, 0, 0),
        &[F::FAST],
        "Lets the next command reach a slot this node is importing."),
    spec(R(X(K::Dump)), "dump", 2, G::Generic, "2.6.0", (1, 1, 1),
        &[F::READONLY],
        "Returns a key's value serialized, for RESTORE."),
    spec(R(X(K::Migrate)), "migrate", -6, G::Generic, "2.6.0", (3, 3, 1),
        &[F::WRITE, F::MOVABLEKEYS],
        "Moves keys to another server, atomically."),
    spec(R(X(K::Readonly)), "readonly", 1, G::Cluster, "3.0.0", (0, 0, 0),
        &[F::LOADING, F::STALE, F::FAST],
        "Lets the connection read from a replica node."),
    spec(R(X(K::Readwrite)), "readwrite", 1, G::Cluster, "3.0.0", (0, 0, 0),
        &[F::LOADING, F::STALE, F::FAST],
        "Ends READONLY: reads go to primaries again."),
    spec(R(X(K::Restore)), "restore", -4, G::Generic, "2.6.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM],
        "Creates a key from a value DUMP serialized."),
    spec(R(X(K::RestoreAsking)), "restore-asking", -4, G::Server, "3.0.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::ASKING],
        "RESTORE as MIGRATE sends it: allowed into a slot being imported."),
    ]
};
