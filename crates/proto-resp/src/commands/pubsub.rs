//! Pub/sub: SUBSCRIBE PSUBSCRIBE SSUBSCRIBE, their UNSUBSCRIBEs, PUBLISH SPUBLISH, and the
//! PUBSUB container.
//!
//! Declared as the main table is (see `commands.rs`): values from Redis's
//! `src/commands/*.json`, summaries in our own words, sorted by name.

use super::{spec, CommandId, CommandSpec, Flags, Group, Run, PUBSUB_SUBCOMMANDS};

/// One handler per command of this family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PubsubId {
    Psubscribe,
    Publish,
    Punsubscribe,
    Spublish,
    Ssubscribe,
    Subscribe,
    Sunsubscribe,
    Unsubscribe,
}

/// This family's commands, sorted by name.
#[rustfmt::skip]
pub static PUBSUB_COMMANDS: &[CommandSpec] = {
    use {CommandId::Pubsub as P, Flags as F, Group as G, Run::Command as R, PubsubId as X};
    &[
    spec(R(P(X::Psubscribe)), "psubscribe", -2, G::Pubsub, "2.0.0", (0, 0, 0),
        &[F::PUBSUB, F::NOSCRIPT, F::LOADING, F::STALE],
        "Listens for messages published to channels that match patterns."),
    spec(R(P(X::Publish)), "publish", 3, G::Pubsub, "2.0.0", (0, 0, 0),
        &[F::PUBSUB, F::LOADING, F::STALE, F::FAST, F::MAY_REPLICATE],
        "Posts a message to a channel."),
    spec(Run::Subcommands { table: PUBSUB_SUBCOMMANDS, bare: None }, "pubsub", -2, G::Pubsub,
        "2.8.0", (0, 0, 0), &[],
        "Subcommands that inspect the state of pub/sub."),
    spec(R(P(X::Punsubscribe)), "punsubscribe", -1, G::Pubsub, "2.0.0", (0, 0, 0),
        &[F::PUBSUB, F::NOSCRIPT, F::LOADING, F::STALE],
        "Stops listening to messages published to channels that match patterns."),
    spec(R(P(X::Spublish)), "spublish", 3, G::Pubsub, "7.0.0", (1, 1, 1),
        &[F::PUBSUB, F::LOADING, F::STALE, F::FAST, F::MAY_REPLICATE],
        "Posts a message to a shard channel."),
    spec(R(P(X::Ssubscribe)), "ssubscribe", -2, G::Pubsub, "7.0.0", (1, -1, 1),
        &[F::PUBSUB, F::NOSCRIPT, F::LOADING, F::STALE],
        "Listens for messages published to shard channels."),
    spec(R(P(X::Subscribe)), "subscribe", -2, G::Pubsub, "2.0.0", (0, 0, 0),
        &[F::PUBSUB, F::NOSCRIPT, F::LOADING, F::STALE],
        "Listens for messages published to channels."),
    spec(R(P(X::Sunsubscribe)), "sunsubscribe", -1, G::Pubsub, "7.0.0", (1, -1, 1),
        &[F::PUBSUB, F::NOSCRIPT, F::LOADING, F::STALE],
        "Stops listening to messages posted to shard channels."),
    spec(R(P(X::Unsubscribe)), "unsubscribe", -1, G::Pubsub, "2.0.0", (0, 0, 0),
        &[F::PUBSUB, F::NOSCRIPT, F::LOADING, F::STALE],
        "Stops listening to messages posted to channels."),
    ]
};
