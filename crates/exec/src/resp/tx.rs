//! Redis transactions.

use proto_resp::commands::TxId;

use super::Ctx;

/// Runs one command of this family.
pub(super) fn dispatch(ctx: &mut Ctx<'_>, id: TxId) {
    let _ = ctx;
    match id {}
}
