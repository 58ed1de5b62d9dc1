//! Redis bitmaps and HyperLogLog (on strings).

use proto_resp::commands::BitmapId;

use super::Ctx;

/// Runs one command of this family.
pub(super) fn dispatch(ctx: &mut Ctx<'_>, id: BitmapId) {
    let _ = ctx;
    match id {}
}
