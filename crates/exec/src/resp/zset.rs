//! Redis sorted sets.

use proto_resp::commands::ZSetId;

use super::Ctx;

/// Runs one command of this family.
pub(super) fn dispatch(ctx: &mut Ctx<'_>, id: ZSetId) {
    let _ = ctx;
    match id {}
}
