//! Scripting and functions: EVAL EVALSHA EVAL_RO EVALSHA_RO FCALL FCALL_RO, and the
//! SCRIPT and FUNCTION containers.
//!
//! Declared as the main table is (see `commands.rs`): values from Redis's
//! `src/commands/*.json`, summaries in our own words, sorted by name. Their keys follow a
//! `numkeys` argument, so the (first, last, step) triple is zero and the commands are
//! `movablekeys`, as Redis 7 lists them.

use super::{
    spec, CommandId, CommandSpec, Flags, Group, Run, FUNCTION_SUBCOMMANDS, SCRIPT_SUBCOMMANDS,
};

/// One handler per command of this family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScriptingId {
    Eval,
    EvalRo,
    Evalsha,
    EvalshaRo,
    Fcall,
    FcallRo,
}

/// This family's commands, sorted by name.
#[rustfmt::skip]
pub static SCRIPTING_COMMANDS: &[CommandSpec] = {
    use {CommandId::Scripting as P, Flags as F, Group as G, Run::Command as R, ScriptingId as X};
    const fn subs(table: &'static [super::SubcommandSpec]) -> Run {
        Run::Subcommands { table, bare: None }
    }
    &[
    spec(R(P(X::Eval)), "eval", -3, G::Scripting, "2.6.0", (0, 0, 0),
        &[F::NOSCRIPT, F::STALE, F::SKIP_MONITOR, F::MAY_REPLICATE, F::NO_MANDATORY_KEYS,
          F::MOVABLEKEYS],
        "Runs a Lua script on the server."),
    spec(R(P(X::EvalRo)), "eval_ro", -3, G::Scripting, "7.0.0", (0, 0, 0),
        &[F::READONLY, F::NOSCRIPT, F::STALE, F::SKIP_MONITOR, F::NO_MANDATORY_KEYS,
          F::MOVABLEKEYS],
        "Runs a read-only Lua script on the server."),
    spec(R(P(X::Evalsha)), "evalsha", -3, G::Scripting, "2.6.0", (0, 0, 0),
        &[F::NOSCRIPT, F::STALE, F::SKIP_MONITOR, F::MAY_REPLICATE, F::NO_MANDATORY_KEYS,
          F::MOVABLEKEYS],
        "Runs a cached Lua script named by its SHA1 digest."),
    spec(R(P(X::EvalshaRo)), "evalsha_ro", -3, G::Scripting, "7.0.0", (0, 0, 0),
        &[F::READONLY, F::NOSCRIPT, F::STALE, F::SKIP_MONITOR, F::NO_MANDATORY_KEYS,
          F::MOVABLEKEYS],
        "Runs a cached read-only Lua script named by its SHA1 digest."),
    spec(R(P(X::Fcall)), "fcall", -3, G::Scripting, "7.0.0", (0, 0, 0),
        &[F::NOSCRIPT, F::STALE, F::SKIP_MONITOR, F::MAY_REPLICATE, F::NO_MANDATORY_KEYS,
          F::MOVABLEKEYS],
        "Calls a function of a loaded library."),
    spec(R(P(X::FcallRo)), "fcall_ro", -3, G::Scripting, "7.0.0", (0, 0, 0),
        &[F::READONLY, F::NOSCRIPT, F::STALE, F::SKIP_MONITOR, F::NO_MANDATORY_KEYS,
          F::MOVABLEKEYS],
        "Calls a read-only function of a loaded library."),
    spec(subs(FUNCTION_SUBCOMMANDS), "function", -2, G::Scripting, "7.0.0", (0, 0, 0),
        &[],
        "Subcommands that manage libraries of functions."),
    spec(subs(SCRIPT_SUBCOMMANDS), "script", -2, G::Scripting, "2.6.0", (0, 0, 0),
        &[],
        "Subcommands that manage the script cache."),
    ]
};
