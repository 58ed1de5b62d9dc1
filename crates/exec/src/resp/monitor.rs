//! MONITOR: a connection that asks for it is sent one line per command any client runs
//! after that, on any worker: `+<unix seconds>.<micros> [<db> <client addr>] "arg" ...`,
//! each argument quoted as Redis quotes it (`"`, `\`, control bytes escaped). A command
//! is shown once it ran, with the session's database then; EVAL and its kin are shown
//! before the commands they run, which show `lua` as their client. Admin commands (CONFIG,
//! CLIENT KILL, MONITOR itself) are not shown; passwords are redacted as Redis redacts
//! them (`redact.rs`).
//!
//! A monitor is a pub/sub `Subscriber` without channels: lines go into its mailbox and its
//! loop drains it (so it is bounded as a subscriber is: past the pub/sub output limit the
//! connection is cut off). Cost with no monitor: one relaxed load per command.

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering::Relaxed},
        Arc,
    },
    time::{SystemTime, UNIX_EPOCH},
};

use parking_lot::Mutex;
use proto_resp::Routed;

use super::{pubsub::Subscriber, Ctx, Session};

/// The monitoring connections.
#[derive(Debug, Default)]
pub struct Monitors {
    count: AtomicUsize,
    list: Mutex<Vec<Arc<Subscriber>>>,
}

impl Monitors {
    /// Whether anyone monitors: the one check every command pays.
    #[inline]
    pub fn active(&self) -> bool {
        self.count.load(Relaxed) != 0
    }

    fn add(&self, subscriber: &Arc<Subscriber>) {
        let mut list = self.list.lock();
        if !list.iter().any(|s| Arc::ptr_eq(s, subscriber)) {
            list.push(Arc::clone(subscriber));
        }
        self.count.store(list.len(), Relaxed);
    }

    pub(crate) fn remove(&self, subscriber: &Arc<Subscriber>) {
        let mut list = self.list.lock();
        list.retain(|s| !Arc::ptr_eq(s, subscriber));
        self.count.store(list.len(), Relaxed);
    }

    /// Sends `line` to every monitor and wakes their loops.
    fn send(&self, line: &[u8], wake: impl Fn(usize)) {
        for subscriber in self.list.lock().iter() {
            if subscriber.deliver_raw(line) {
                wake(subscriber.worker);
            }
        }
    }
}

/// MONITOR: this connection starts receiving the lines.
pub(super) fn monitor(ctx: &mut Ctx<'_>) {
    let subscriber = Arc::clone(&super::pubsub::subscriptions(ctx).subscriber);
    ctx.shared.redis.monitors.add(&subscriber);
    ctx.session.monitoring = true;
    ctx.reply().ok();
}

/// Stops monitoring (the connection closed, or RESET).
pub(super) fn stop(shared: &crate::Shared, session: &mut Session) {
    if !session.monitoring {
        return;
    }
    session.monitoring = false;
    if let Some(subs) = &session.pubsub {
        shared.redis.monitors.remove(&subs.subscriber);
    }
}

/// Shows a command to the monitors (call only when [`Monitors::active`]), with the
/// session's database as it is now. Admin commands are not shown.
pub(super) fn feed(ctx: &Ctx<'_>, routed: &Routed) {
    let db = ctx.session.db;
    let catalog = super::acl::catalog::catalog();
    let admin = super::acl::catalog::category("admin").unwrap_or(0);
    if catalog.entries[catalog.of(routed)].categories & admin != 0 {
        return;
    }
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let addr = match ctx.session.in_script {
        true => "lua".to_owned(),
        false => ctx.session.client.lock().addr.clone(),
    };
    let mut line =
        format!("+{}.{:06} [{db} {addr}]", since.as_secs(), since.subsec_micros()).into_bytes();
    let args: Vec<&[u8]> = ctx.cmd.args().collect();
    let secret = super::redact::secret_args(&args);
    for (index, arg) in args.iter().enumerate() {
        line.push(b' ');
        let shown = if secret.contains(&index) { super::redact::REDACTED } else { arg };
        quote(shown, &mut line);
    }
    line.extend_from_slice(b"\r\n");
    let worker = ctx.shared.core.worker_of(ctx.counters);
    ctx.shared
        .redis
        .monitors
        .send(&line, |owner| ctx.shared.redis.pubsub.wake(owner, owner == worker));
}

/// Redis's quoting of a MONITOR argument (its `sdscatrepr`).
fn quote(arg: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &byte in arg {
        match byte {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x07 => out.extend_from_slice(b"\\a"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(byte),
            _ => out.extend_from_slice(format!("\\x{byte:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    /// Goal: arguments quoted as Redis's sdscatrepr quotes them. Method: table.
    #[test]
    fn quoting() {
        for (arg, quoted) in [
            (&b"plain"[..], &b"\"plain\""[..]),
            (b"a \"b\" \\c", b"\"a \\\"b\\\" \\\\c\""),
            (b"\r\n\t\x07\x08", b"\"\\r\\n\\t\\a\\b\""),
            (b"\x00\xff", b"\"\\x00\\xff\""),
        ] {
            let mut out = Vec::new();
            super::quote(arg, &mut out);
            assert_eq!(out, quoted);
        }
    }
}
