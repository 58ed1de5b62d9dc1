//! Redis hashes.

use proto_resp::commands::HashId;

use super::Ctx;

/// Runs one command of this family.
pub(super) fn dispatch(ctx: &mut Ctx<'_>, id: HashId) {
    let _ = ctx;
    match id {}
}
