//! Tracking of what a script reads, as Redis 7.0 does it: when a script (EVAL, EVALSHA,
//! FCALL and their `_RO` forms) runs a read-only command, the keys the tracking client
//! *declared* to the script (its KEYS) are remembered, not the keys that command names.
//! A script that reads nothing remembers nothing; a key read but not declared is not
//! remembered (redis-server 7.0.15 answers so; 7.2 changed it).
//!
//! ```text
//!   EVAL ... numkeys k1 k2 ...   before_command: stash [k1, k2] (client tracks, not BCAST,
//!                                 opted in for this command)
//!     redis.call('GET', ...)     first read-only command: remember the stash (inside the
//!                                 gate, so no write can come between), clear it
//!   after_command of the EVAL    clear the stash
//! ```

use proto_resp::commands::Flags;

use super::{keys_where, wanted, Ctx};

/// Whether `name` runs a script whose declared keys a read remembers.
fn is_script(name: &str) -> bool {
    matches!(name, "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro")
}

/// Before a top-level (or queued) command: a script's declared keys wait for its first
/// read, if its client tracks them.
pub(super) fn before_script(ctx: &mut Ctx<'_>) {
    if !is_script(ctx.spec.name) || !wanted(ctx.session) {
        return;
    }
    let args: Vec<&[u8]> = ctx.cmd.args().collect();
    let keys = keys_where(ctx.spec.name, &args, |_| true);
    ctx.session.tracking.script_keys = keys.into_iter().map(<[u8]>::to_vec).collect();
}

/// A command a script runs: its first read-only one remembers the script's keys.
pub(super) fn inside_script(ctx: &mut Ctx<'_>) {
    if !ctx.spec.flags.contains(Flags::READONLY) || ctx.session.tracking.script_keys.is_empty() {
        return;
    }
    let keys = std::mem::take(&mut ctx.session.tracking.script_keys);
    let Some(tracker) = &ctx.session.tracking.tracker else { return };
    let (shared, id) = (ctx.shared, tracker.id);
    let worker = shared.core.worker_of(ctx.counters);
    let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    shared.redis.tracking.remember(&shared.redis.pubsub, &keys, id, worker);
    shared.redis.tracking.settle_charge(&shared.core.store);
}

/// After a script: what it did not read is not remembered.
pub(super) fn after_script(ctx: &mut Ctx<'_>) {
    if is_script(ctx.spec.name) {
        ctx.session.tracking.script_keys.clear();
    }
}
