//! Streams: XADD ... XTRIM, the consumer groups' XREADGROUP ... XAUTOCLAIM, and the XGROUP
//! and XINFO containers.
//!
//! Declared as the main table is (see `commands.rs`): values from Redis's
//! `src/commands/*.json`, summaries in our own words, sorted by name. XREAD and XREADGROUP
//! find their keys after `STREAMS` (flagged `movablekeys`, key triple zero, as Redis does).

use super::{
    spec, CommandId, CommandSpec, Flags, Group, Run, XGROUP_SUBCOMMANDS, XINFO_SUBCOMMANDS,
};

/// One handler per command of this family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StreamId {
    Xack,
    Xadd,
    Xautoclaim,
    Xclaim,
    Xdel,
    Xlen,
    Xpending,
    Xrange,
    Xread,
    Xreadgroup,
    Xrevrange,
    Xsetid,
    Xtrim,
}

const fn subs(table: &'static [super::SubcommandSpec]) -> Run {
    Run::Subcommands { table, bare: None }
}

/// This family's commands, sorted by name.
#[rustfmt::skip]
pub static STREAM_COMMANDS: &[CommandSpec] = {
    use {CommandId::Streams as C, Flags as F, Group as G, Run::Command as R, StreamId as X};
    &[
    spec(R(C(X::Xack)), "xack", -4, G::Stream, "5.0.0", (1, 1, 1),
        &[F::WRITE, F::FAST],
        "Acknowledges entries of a consumer group's pending list."),
    spec(R(C(X::Xadd)), "xadd", -5, G::Stream, "5.0.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::FAST],
        "Appends an entry to a stream, creating it if needed."),
    spec(R(C(X::Xautoclaim)), "xautoclaim", -6, G::Stream, "6.2.0", (1, 1, 1),
        &[F::WRITE, F::FAST],
        "Takes over pending entries idle for long enough, scanning from an ID."),
    spec(R(C(X::Xclaim)), "xclaim", -6, G::Stream, "5.0.0", (1, 1, 1),
        &[F::WRITE, F::FAST],
        "Takes over pending entries of a consumer group."),
    spec(R(C(X::Xdel)), "xdel", -3, G::Stream, "5.0.0", (1, 1, 1),
        &[F::WRITE, F::FAST],
        "Deletes entries by ID."),
    spec(subs(XGROUP_SUBCOMMANDS), "xgroup", -2, G::Stream, "5.0.0", (0, 0, 0),
        &[],
        "Subcommands that manage consumer groups."),
    spec(subs(XINFO_SUBCOMMANDS), "xinfo", -2, G::Stream, "5.0.0", (0, 0, 0),
        &[],
        "Subcommands that describe streams, groups and consumers."),
    spec(R(C(X::Xlen)), "xlen", 2, G::Stream, "5.0.0", (1, 1, 1),
        &[F::READONLY, F::FAST],
        "Counts the entries of a stream."),
    spec(R(C(X::Xpending)), "xpending", -3, G::Stream, "5.0.0", (1, 1, 1),
        &[F::READONLY],
        "Describes the pending entries of a consumer group."),
    spec(R(C(X::Xrange)), "xrange", -4, G::Stream, "5.0.0", (1, 1, 1),
        &[F::READONLY],
        "Returns the entries in a range of IDs."),
    spec(R(C(X::Xread)), "xread", -4, G::Stream, "5.0.0", (0, 0, 0),
        &[F::READONLY, F::BLOCKING, F::MOVABLEKEYS],
        "Returns entries past given IDs from streams, or blocks until there are some."),
    spec(R(C(X::Xreadgroup)), "xreadgroup", -7, G::Stream, "5.0.0", (0, 0, 0),
        &[F::WRITE, F::BLOCKING, F::MOVABLEKEYS],
        "Delivers entries to a consumer of a group, or blocks until there are some."),
    spec(R(C(X::Xrevrange)), "xrevrange", -4, G::Stream, "5.0.0", (1, 1, 1),
        &[F::READONLY],
        "Returns the entries in a range of IDs, newest first."),
    spec(R(C(X::Xsetid)), "xsetid", -3, G::Stream, "5.0.0", (1, 1, 1),
        &[F::WRITE, F::DENYOOM, F::FAST],
        "Sets a stream's last ID and counters."),
    spec(R(C(X::Xtrim)), "xtrim", -4, G::Stream, "5.0.0", (1, 1, 1),
        &[F::WRITE],
        "Removes the oldest entries of a stream by count or by ID."),
    ]
};
