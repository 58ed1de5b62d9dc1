//! Redis lists.

use proto_resp::commands::ListId;

use super::Ctx;

/// Runs one command of this family.
pub(super) fn dispatch(ctx: &mut Ctx<'_>, id: ListId) {
    let _ = ctx;
    match id {}
}
