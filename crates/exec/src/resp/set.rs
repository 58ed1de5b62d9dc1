//! Redis sets.

use proto_resp::commands::SetId;

use super::Ctx;

/// Runs one command of this family.
pub(super) fn dispatch(ctx: &mut Ctx<'_>, id: SetId) {
    let _ = ctx;
    match id {}
}
