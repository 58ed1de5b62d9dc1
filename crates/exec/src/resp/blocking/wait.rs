//! WAIT: a client waits until enough replicas acknowledged its writes (`crate::repl`),
//! as a blocked client whose loop asks at every wake and tick.

use std::time::Instant;

use proto_resp::{args::parse_i64, Reply};

use super::{register, Blocked, Request};
use crate::{resp::Ctx, Flow, Shared};

/// WAIT numreplicas timeout: the number of replicas that acknowledged every write made
/// so far (the stream's offset now), once `numreplicas` have, or when the timeout passes
/// (0: never). The replicas are asked for their offset at once (REPLCONF GETACK).
pub(super) fn wait(ctx: &mut Ctx<'_>, request: Request) -> Flow {
    if ctx.shared.core.repl.is_replica() {
        ctx.error(WAIT_ON_REPLICA);
        return Flow::Continue;
    }
    let wanted = parse_i64(ctx.arg(1)).unwrap_or(0).max(0) as usize;
    let offset = crate::repl::offset(ctx.shared);
    let acked = crate::repl::acked_at_least(ctx.shared, offset);
    if acked >= wanted || ctx.is_nested() {
        ctx.reply().integer(acked as i64);
        return Flow::Continue;
    }
    crate::repl::ask_acks(ctx.shared);
    let worker = ctx.shared.core.worker_of(ctx.counters);
    register(ctx, &request, worker);
    if let Some(blocked) = &mut ctx.session.blocked {
        blocked.acks = Some((offset, wanted));
    }
    Flow::Block
}

const WAIT_ON_REPLICA: &str = "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.";

/// A WAIT's reply once enough replicas acknowledged, or its timeout passed: how many did.
pub(super) fn answer(
    shared: &Shared,
    blocked: &Blocked,
    protocol: proto_resp::Protocol,
) -> Option<Vec<u8>> {
    let (offset, wanted) = blocked.acks?;
    let acked = crate::repl::acked_at_least(shared, offset);
    let timed_out = blocked.deadline.is_some_and(|d| Instant::now() >= d);
    if acked < wanted && !timed_out {
        return None;
    }
    shared.redis.blocking.cancel(blocked.ticket);
    let mut out = Vec::new();
    Reply::new(&mut out, protocol).integer(acked as i64);
    Some(out)
}
