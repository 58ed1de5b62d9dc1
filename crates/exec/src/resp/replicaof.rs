//! REPLICAOF (and its old name SLAVEOF). Spinel has no replication: `REPLICAOF NO ONE`,
//! which makes a server a master, is answered `+OK` as Redis answers it on a master (a
//! Spinel server always is one; failover scripts and client test suites send it). Naming a
//! master is refused with an error saying so, after Redis's own checks of the arguments.

use proto_resp::args::parse_i64;

use super::Ctx;

pub(super) fn replicaof(ctx: &mut Ctx<'_>) {
    if ctx.shared.redis.cluster.get().is_some() {
        return ctx.error("ERR REPLICAOF not allowed in cluster mode.");
    }
    if ctx.arg(1).eq_ignore_ascii_case(b"no") && ctx.arg(2).eq_ignore_ascii_case(b"one") {
        return ctx.reply().ok();
    }
    if !parse_i64(ctx.arg(2)).is_ok_and(|port| (0..=65535).contains(&port)) {
        return ctx.error("ERR Invalid master port");
    }
    ctx.error("ERR Spinel does not replicate: only REPLICAOF NO ONE is supported");
}
