//! MIGRATE: keys moved to another server with DUMP payloads and RESTORE-ASKING.
//! Stub: filled in on branch `dump`.

use super::super::Ctx;

pub(super) fn migrate(ctx: &mut Ctx<'_>) {
    ctx.error("ERR MIGRATE is not implemented yet");
}
