//! `flush_all`, `version`, `verbosity` (`quit` is [`crate::Flow::Close`] in `execute`).

use std::sync::atomic::Ordering;

use proto_memcache::{
    error,
    text::response::{compose_version, Status},
    ErrorReply,
};

use super::{Ctx, RELATIVE_EXPTIME_MAX_SECS};
use crate::core::flush::{self, FlushOutcome, Switch};

/// memcached's `MAX_VERBOSITY_LEVEL`: higher levels are stored as this.
const VERBOSITY_MAX: u32 = 2;

/// `flush_all [delay]`: everything stored before now + delay becomes invisible then. The
/// delay follows exptime rules (over 30 days it is a Unix time); 0 or negative is now.
pub(super) fn flush_all(ctx: &mut Ctx<'_>, delay_secs: Option<i64>, noreply: bool) {
    let delay_ms = flush_delay_ms(delay_secs.unwrap_or(0), ctx.now_ms());
    match flush::flush_all(ctx.shared, ctx.counters, delay_ms, Switch::Honour) {
        FlushOutcome::Flushed => ctx.status(Status::Ok, noreply),
        FlushOutcome::Disabled => {
            ctx.error(ErrorReply::ClientError(error::FLUSH_DISABLED), noreply)
        }
    }
}

/// The delay of a flush at `now_ms`: exptime rules (over 30 days a Unix time), 0 or
/// negative is now.
pub(crate) fn flush_delay_ms(delay_secs: i64, now_ms: u64) -> u64 {
    match delay_secs {
        ..=0 => 0,
        secs @ 1..=RELATIVE_EXPTIME_MAX_SECS => secs.unsigned_abs() * 1000,
        unix_secs => unix_secs.unsigned_abs().saturating_mul(1000).saturating_sub(now_ms),
    }
}

/// memcached `shutdown`: refused unless started with `-A`; otherwise every loop is asked to
/// stop (replies in flight still leave) and this connection closes without a reply.
pub(super) fn shutdown(ctx: &mut Ctx<'_>) -> crate::Flow {
    if !ctx.shared.settings.shutdown_command {
        ctx.out.extend_from_slice(b"ERROR: shutdown not enabled\r\n");
        return crate::Flow::Continue;
    }
    ctx.shared.shutdown.store(true, Ordering::Relaxed);
    crate::Flow::Close
}

pub(super) fn version(ctx: &mut Ctx<'_>) {
    compose_version(crate::MEMCACHED_VERSION.as_bytes(), ctx.out);
}

pub(super) fn verbosity(ctx: &mut Ctx<'_>, level: u32, noreply: bool) {
    ctx.shared.verbosity.store(level.min(VERBOSITY_MAX), Ordering::Relaxed);
    ctx.status(Status::Ok, noreply);
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use crate::{
        memcache::tests::{Harness, T0_MS},
        Settings,
    };

    // Goal: shutdown is refused without -A and stops the server with it.
    #[test]
    fn shutdown() {
        let mut h = Harness::new();
        h.check("shutdown\r\n", "ERROR: shutdown not enabled\r\n");
        assert!(!h.shared.shutdown.load(Ordering::Relaxed));
        let mut h =
            Harness::with_settings(Settings { shutdown_command: true, ..Settings::default() });
        h.check("shutdown graceful\r\n", "<close>");
        assert!(h.shared.shutdown.load(Ordering::Relaxed));
    }

    // Goal: flush_all now, later, at a Unix time, quietly; refused with -F.
    #[test]
    fn flush_all() {
        let mut h = Harness::new();
        h.check("set a 0 0 1\r\na\r\nflush_all\r\nget a\r\n", "STORED\r\nOK\r\nEND\r\n");
        h.check("set a 0 0 1\r\na\r\nflush_all 10\r\n", "STORED\r\nOK\r\n");
        h.advance_secs(9);
        h.check("get a\r\n", "VALUE a 0 1\r\na\r\nEND\r\n");
        h.advance_secs(1);
        h.check("get a\r\n", "END\r\n");
        let at = (T0_MS / 1000) + 10 + 5;
        h.check(format!("set a 0 0 1\r\na\r\nflush_all {at} noreply\r\n"), "STORED\r\n");
        h.advance_secs(4);
        h.check("get a\r\n", "VALUE a 0 1\r\na\r\nEND\r\n");
        h.advance_secs(1);
        h.check("get a\r\n", "END\r\n");
        assert_eq!(h.totals().cmd_flush, 3);
        let mut h =
            Harness::with_settings(Settings { flush_enabled: false, ..Settings::default() });
        h.check("flush_all\r\n", "CLIENT_ERROR flush_all not allowed\r\n");
    }

    // Goal: version, verbosity (stored, clamped to memcached's maximum of 2), quit.
    #[test]
    fn version_verbosity_quit() {
        let mut h = Harness::new();
        h.check("version\r\n", format!("VERSION {}\r\n", crate::MEMCACHED_VERSION));
        h.check("verbosity 1\r\n", "OK\r\n");
        assert_eq!(h.shared.verbosity.load(Ordering::Relaxed), 1);
        h.check("verbosity 9 noreply\r\n", "");
        assert_eq!(h.shared.verbosity.load(Ordering::Relaxed), 2);
        h.check("quit\r\nversion\r\n", "<close>");
    }
}
