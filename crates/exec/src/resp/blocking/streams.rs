//! XREAD and XREADGROUP with BLOCK: their waits in the shared table, and their serving.
//!
//! They differ from the pops: nothing is taken from the stream, so every waiter a write
//! made ready is asked, not only the first (`Attempt::Refused` lets the next be tried);
//! an XREAD waiter reads past the IDs it blocked with (`$` resolved then, kept in
//! `Waiter::after`); an XREADGROUP waiter (always `>`: any other ID is answered at once)
//! reads past its group's last delivered ID as it is when served, so of several
//! consumers of one group waiting, only the first gets the new entries. As in Redis 7.0,
//! an XREADGROUP waiter whose key is deleted or becomes another type is answered
//! `-UNBLOCKED the stream key no longer exists`, and one whose group is destroyed
//! `-NOGROUP the consumer group this client was blocked on no longer exists`; an XREAD
//! waiter keeps waiting through both.

use std::{ops::Range, time::Duration};

use values::stream::StreamId;

use super::{
    register_after,
    registry::{Attempt, Waiter},
    Kind, Request,
};
use crate::{
    resp::{stream, Ctx},
    Flow,
};

/// Blocks an XREAD or XREADGROUP that found nothing: under the gate, `retry` looks once
/// more (a write may have come since the first look; it replies and returns true when it
/// found something), and if still nothing the client waits on the key arguments `keys`,
/// reading past `after` (one ID per key; unused for a group), for `block_ms` (0: forever).
pub(in crate::resp) fn block_streams(
    ctx: &mut Ctx<'_>,
    grouped: bool,
    keys: Range<usize>,
    after: Vec<StreamId>,
    block_ms: u64,
    retry: impl FnOnce(&mut Ctx<'_>) -> bool,
) -> Flow {
    let kind = if grouped { Kind::Xreadgroup } else { Kind::Xread };
    let timeout = (block_ms > 0).then(|| Duration::from_millis(block_ms));
    let request = Request { kind, keys, timeout };
    let (shared, counters) = (ctx.shared, ctx.counters);
    let worker = shared.core.worker_of(counters);
    shared.core.gate.exclusive(worker, || {
        if retry(ctx) {
            return Flow::Continue;
        }
        register_after(ctx, &request, worker, after);
        Flow::Block
    })
}

/// Serves one stream waiter from key argument `index` (`ctx` is made like its session):
/// `Served` with its reply (entries, or the error that ends its wait), or `Refused` when
/// the key has nothing new for it.
pub(super) fn serve(ctx: &mut Ctx<'_>, waiter: &Waiter, index: usize) -> Attempt {
    let served = match waiter.kind {
        Kind::Xreadgroup => stream::serve_group_waiter(ctx, index),
        _ => match waiter.after_of(index) {
            Some(after) => stream::serve_read_waiter(ctx, index, after),
            None => false,
        },
    };
    match served {
        true => Attempt::Served { reply: std::mem::take(ctx.out), pushed: None },
        false => Attempt::Refused,
    }
}
