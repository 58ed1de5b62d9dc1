//! DUMP and RESTORE (and RESTORE-ASKING, which MIGRATE sends): a key's value serialized.
//! Stub: filled in on branch `dump`.

use super::super::Ctx;

pub(super) fn dump(ctx: &mut Ctx<'_>) {
    ctx.error("ERR DUMP is not implemented yet");
}

pub(super) fn restore(ctx: &mut Ctx<'_>) {
    ctx.error("ERR RESTORE is not implemented yet");
}
