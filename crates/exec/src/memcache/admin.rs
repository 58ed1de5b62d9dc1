//! `flush_all`, `version`, `verbosity` (`quit` is [`crate::Flow::Close`] in `execute`).

use std::sync::atomic::Ordering;

use proto_memcache::{
    error,
    text::{
        response::{compose_version, Status},
        ShutdownMode,
    },
    ErrorReply,
};

use super::{Ctx, RELATIVE_EXPTIME_MAX_SECS};
use crate::{
    core::flush::{self, FlushOutcome, Switch},
    memcache::MemcacheView,
    Core, Counters,
};

/// `refresh_certs [noreply]`: the server reads its TLS certificates again; `OK`, or the
/// reason the ones in force stay, a bare line as memcached sends it ("Error loading the
/// certificate chain: ..."). Without TLS the command is unknown (`ERROR`), as in a
/// memcached built without it.
pub(super) fn refresh_certs(ctx: &mut Ctx<'_>, args: &proto_memcache::Words<'_>) {
    let noreply = args.iter().last() == Some(&b"noreply"[..]);
    let Some(refresh) = ctx.view.memcache().refresh_certs.get() else {
        ctx.line(b"ERROR", false);
        return;
    };
    match refresh() {
        Ok(()) => ctx.line(b"OK", noreply),
        Err(message) => ctx.line(message.replace(['\r', '\n'], " ").as_bytes(), noreply),
    }
}

/// memcached's `MAX_VERBOSITY_LEVEL`: higher levels are stored as this.
const VERBOSITY_MAX: u32 = 2;

/// `flush_all [delay]`: everything stored before now + delay becomes invisible then. The
/// delay follows exptime rules (over 30 days it is a Unix time); 0 or negative is now.
///
/// A Unix time at or before the server's start flushes nothing and cancels a pending
/// delayed flush (memcached's clock starts there: such a time becomes "older than
/// anything", which disables its flush). A Unix time between the start and now flushes
/// everything now, as memcached does with CAS on (its CAS bound covers every item); with
/// `-C` memcached flushes only the items last accessed at or before it, and so do we.
pub(super) fn flush_all(ctx: &mut Ctx<'_>, delay_secs: Option<i64>, noreply: bool) {
    let outcome = flush_by_time(ctx.view, ctx.counters, delay_secs.unwrap_or(0), ctx.now_ms());
    match outcome {
        FlushOutcome::Flushed => {
            ctx.changed = super::Changed::All;
            ctx.status(Status::Ok, noreply)
        }
        FlushOutcome::Disabled => {
            ctx.error(ErrorReply::ClientError(error::FLUSH_DISABLED), noreply)
        }
    }
}

/// A memcached flush at `delay_secs` (exptime rules), as [`flush_all`] describes; text and
/// binary share it.
pub(crate) fn flush_by_time(
    view: MemcacheView<'_>,
    counters: &Counters,
    delay_secs: i64,
    now_ms: u64,
) -> FlushOutcome {
    match flush_delay_ms(delay_secs, view.core(), now_ms) {
        Some(0) if delay_secs > RELATIVE_EXPTIME_MAX_SECS && !view.core().settings.cas_enabled => {
            let unix_secs = delay_secs.unsigned_abs();
            flush::flush_accessed_through(view.core(), counters, unix_secs, Switch::Honour)
        }
        Some(delay_ms) => flush::flush_all(view.core(), counters, delay_ms, Switch::Honour),
        None => flush::flush_nothing(view.core(), counters, Switch::Honour),
    }
}

/// The delay of a flush, on exptime rules: 0 or negative is now, up to 30 days is relative,
/// beyond that a Unix time. `None` for a Unix time at or before memcached's clock starts:
/// that flushes nothing (and cancels a delayed flush), as in memcached, whose clock starts
/// [`CLOCK_LEAD_SECS`] before the process (measured with 1.6.18: a time 61 s before its
/// start flushes, 62 s does not). Text and binary share it.
pub(crate) fn flush_delay_ms(delay_secs: i64, core: &Core, now_ms: u64) -> Option<u64> {
    // On the store's clock (a test's clock may not be the system's).
    let uptime_ms = u64::try_from(core.started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let clock_start_secs =
        (now_ms.saturating_sub(uptime_ms) / 1000).saturating_sub(CLOCK_LEAD_SECS);
    match delay_secs {
        ..=0 => Some(0),
        secs @ 1..=RELATIVE_EXPTIME_MAX_SECS => Some(secs.unsigned_abs() * 1000),
        unix_secs if unix_secs.unsigned_abs() <= clock_start_secs => None,
        unix_secs => Some(unix_secs.unsigned_abs().saturating_mul(1000).saturating_sub(now_ms)),
    }
}

/// memcached starts its clock this long before the process (`ITEM_UPDATE_INTERVAL` + 2), so
/// that no item's time is 0.
const CLOCK_LEAD_SECS: u64 = 62;

/// memcached `shutdown`: refused unless started with `-A`; otherwise every loop is asked to
/// stop (replies in flight still leave) and this connection closes without a reply. A
/// graceful one also saves the `-e` snapshot before the server exits; a bad mode stops
/// nothing.
/// `noreply` is not looked at, as in memcached.
pub(super) fn shutdown(ctx: &mut Ctx<'_>, mode: ShutdownMode) -> crate::Flow {
    if !ctx.view.core().settings.shutdown_command {
        ctx.out.extend_from_slice(b"ERROR: shutdown not enabled\r\n");
        return crate::Flow::Continue;
    }
    if mode == ShutdownMode::Invalid {
        ctx.error(ErrorReply::ClientError(error::BAD_SHUTDOWN_MODE), false);
        return crate::Flow::Continue;
    }
    if mode == ShutdownMode::Graceful {
        ctx.view.memcache().graceful_stop.store(true, Ordering::Relaxed);
    }
    ctx.view.core().shutdown.store(true, Ordering::Relaxed);
    crate::Flow::Close
}

pub(super) fn version(ctx: &mut Ctx<'_>) {
    compose_version(crate::MEMCACHED_VERSION.as_bytes(), ctx.out);
}

pub(super) fn verbosity(ctx: &mut Ctx<'_>, level: u32, noreply: bool) {
    ctx.view.memcache().verbosity.store(level.min(VERBOSITY_MAX), Ordering::Relaxed);
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
        assert!(!h.shared.core.shutdown.load(Ordering::Relaxed));
        let mut h =
            Harness::with_settings(Settings { shutdown_command: true, ..Settings::default() });
        h.check(
            "shutdown foo\r\nshutdown graceful noreply\r\n",
            "CLIENT_ERROR invalid shutdown mode\r\n".repeat(2),
        );
        assert!(!h.shared.core.shutdown.load(Ordering::Relaxed));
        h.check("shutdown graceful\r\n", "<close>");
        assert!(h.shared.core.shutdown.load(Ordering::Relaxed));
    }

    // Goal: refresh_certs is unknown without TLS, and answers OK or the loader's line
    // (noreply silences both) with it.
    #[test]
    fn refresh_certs() {
        let mut h = Harness::new();
        h.check("refresh_certs\r\n", "ERROR\r\n");
        let fails = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let failing = fails.clone();
        let refresh: crate::RefreshCerts =
            Box::new(move || match failing.load(Ordering::Relaxed) {
                true => {
                    Err("Error loading the certificate chain: c.pem : no\r\ncertificate".into())
                }
                false => Ok(()),
            });
        assert!(h.shared.memcache.refresh_certs.set(refresh).is_ok());
        h.check("refresh_certs\r\nrefresh_certs noreply\r\n", "OK\r\n");
        fails.store(true, Ordering::Relaxed);
        h.check(
            "refresh_certs\r\nrefresh_certs noreply\r\n",
            "Error loading the certificate chain: c.pem : no  certificate\r\n",
        );
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
        // A time before memcached's clock starts (62 s before the process) flushes nothing
        // and cancels the pending flush.
        h.check(
            format!("set a 0 0 1\r\na\r\nflush_all 5\r\nflush_all {}\r\n", at - 15 - 62),
            "STORED\r\nOK\r\nOK\r\n",
        );
        h.advance_secs(6);
        h.check("get a\r\n", "VALUE a 0 1\r\na\r\nEND\r\n");
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
        assert_eq!(h.shared.memcache.verbosity.load(Ordering::Relaxed), 1);
        h.check("verbosity 9 noreply\r\n", "");
        assert_eq!(h.shared.memcache.verbosity.load(Ordering::Relaxed), 2);
        h.check("quit\r\nversion\r\n", "<close>");
    }
}
