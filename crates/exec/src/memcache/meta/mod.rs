//! The meta commands: `mg`, `ms`, `md`, `ma`, `me`, `mn`.
//!
//! Replies are composed by the codec's [`compose_meta_reply`], which returns `O` and `k` on
//! every status and the item flags where the reply's [`ItemInfo`] has them; each command
//! fills in what memcached returns for it (`mg` everything, `ms` `c` and `s`, `ma` `c` and
//! `t`, `md` nothing). Quiet mode drops what [`quiet_suppresses`] says; errors always go out.
//!
//! Meta state lives in the item ([`store::MetaState`]): `stale` after `md I` (or `ms I`
//! with an older CAS), `win_token_sent` once a `W` was handed out. Commands that change it
//! do so under the key's lock (`Store::modify`), so two clients never both win.

pub(super) mod arith;
pub(super) mod debug;
pub(super) mod delete;
pub(super) mod get;
pub(super) mod set;

use proto_memcache::{
    meta::{
        compose_meta_reply_or_lend, quiet_suppresses, ItemInfo, MetaCommand, MetaFlags, MetaStatus,
        RecacheState,
    },
    ErrorReply,
};

use super::Ctx;

/// `mn`: marks the end of a pipeline of quiet commands.
pub(super) fn noop(ctx: &mut Ctx<'_>) {
    ctx.out.extend_from_slice(b"MN\r\n");
}

/// What a meta reply echoes from its request, and how quiet mode applies to it.
#[derive(Clone, Copy)]
struct Echo<'r> {
    command: MetaCommand,
    /// Borrowed: the flags are a large struct, and every reply of a multiget makes an echo.
    flags: &'r MetaFlags<'r>,
    /// The key as sent (base64 text with `b`).
    key: &'r [u8],
}

impl Echo<'_> {
    /// Appends the reply, unless quiet mode drops it.
    fn reply(
        &self,
        out: &mut Vec<u8>,
        status: MetaStatus,
        item: &ItemInfo,
        recache: RecacheState,
        value: Option<&[u8]>,
    ) {
        self.reply_lending(out, (status, item, recache), value, |_| false);
    }

    /// [`Echo::reply`], with the value lent rather than copied when `lend` takes it (see
    /// `store::loans`).
    fn reply_lending(
        &self,
        out: &mut Vec<u8>,
        (status, item, recache): (MetaStatus, &ItemInfo, RecacheState),
        value: Option<&[u8]>,
        lend: impl FnOnce(usize) -> bool,
    ) {
        if self.flags.quiet && quiet_suppresses(self.command, status) {
            return;
        }
        let reply = (status, item, recache);
        compose_meta_reply_or_lend(reply, self.flags, self.key, value, lend, out);
    }

    /// A reply that reports nothing about an item: a miss, `NF`, `EX`, `md`'s `HD`.
    fn status(&self, out: &mut Vec<u8>, status: MetaStatus) {
        self.reply(out, status, &ItemInfo::default(), RecacheState::default(), None);
    }
}

/// Meta errors are sent even in quiet mode.
fn error(ctx: &mut Ctx<'_>, reply: ErrorReply) {
    ctx.error(reply, false);
}
