//! The Redis 7.0 commands and subcommands Spinel does not run, with their ACL categories
//! (as redis-server 7.0.15's COMMAND lists them), so that ACL rules written for Redis
//! (`-debug`, `+@all -xadd`, `+debug|object`) load unchanged: the names are accepted and
//! listed back, and `@stream` is not empty; they allow nothing, since Spinel never runs
//! them. A name Redis does not know stays an error.

/// Name (a container's subcommands right after it) and categories.
pub(crate) const ABSENT: &[(&str, &[&str])] = &[
    ("bgrewriteaof", &["admin", "slow", "dangerous"]),
    ("failover", &["admin", "slow", "dangerous"]),
    ("latency|graph", &["admin", "slow", "dangerous"]),
    ("psync", &["admin", "slow", "dangerous"]),
    ("replconf", &["admin", "slow", "dangerous"]),
    ("script|debug", &["slow", "scripting"]),
    ("sync", &["admin", "slow", "dangerous"]),
];
