//! SLOWLOG (GET, LEN, RESET) and the latency monitor (LATENCY LATEST, HISTORY, RESET), fed
//! by the commands `crate::latency` times: while either is on, every command Redis does not
//! flag `fast`, and one call in `latency::SAMPLE` of each fast command (so a slow fast
//! command is logged with that chance). Entries as Redis 7 writes them: id, Unix time, microseconds, the arguments (at
//! most 32, each cut at 128 bytes with Redis's notes), the client's address and name.

use std::{
    collections::VecDeque,
    sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed},
};

use parking_lot::Mutex;
use proto_resp::{error, Command};

use super::{Ctx, Session};
use crate::Shared;

const ARGS_MAX: usize = 32;
const ARG_BYTES_MAX: usize = 128;
/// Samples the latency monitor keeps per event (Redis's `LATENCY_TS_LEN`).
const HISTORY_LEN: usize = 160;

/// The slow log and the latency monitor's events, with their settings.
#[derive(Debug)]
pub struct SlowLog {
    /// `slowlog-log-slower-than`, microseconds (negative: off; 0: every command timed).
    pub slower_than_us: AtomicI64,
    /// `slowlog-max-len`.
    pub max_len: AtomicUsize,
    /// `latency-monitor-threshold`, milliseconds (0: off).
    pub latency_threshold_ms: AtomicU64,
    entries: Mutex<(u64, VecDeque<Entry>)>,
    events: Mutex<Vec<Event>>,
}

impl Default for SlowLog {
    fn default() -> Self {
        SlowLog {
            slower_than_us: AtomicI64::new(10_000),
            max_len: AtomicUsize::new(128),
            latency_threshold_ms: AtomicU64::new(0),
            entries: Mutex::default(),
            events: Mutex::default(),
        }
    }
}

#[derive(Debug, Clone)]
struct Entry {
    id: u64,
    unix_secs: u64,
    micros: u64,
    args: Vec<Vec<u8>>,
    addr: String,
    name: Vec<u8>,
}

#[derive(Debug)]
struct Event {
    name: &'static str,
    /// (Unix seconds, milliseconds), oldest first.
    samples: VecDeque<(u64, u64)>,
    max_ms: u64,
}

/// Whether a command (`fast`: flagged fast) is timed for the slow log or the latency
/// monitor (see `crate::latency`): every command not flagged fast while either is on, and
/// the fast ones too when the slow log takes everything (`slowlog-log-slower-than 0`, as
/// clients set it to see each command). One relaxed load for a fast command.
pub fn watching(shared: &Shared, fast: bool) -> bool {
    let log = &shared.redis.slowlog;
    let slower_than_us = log.slower_than_us.load(Relaxed);
    if fast {
        return slower_than_us == 0;
    }
    slower_than_us >= 0 || log.latency_threshold_ms.load(Relaxed) > 0
}

/// Whether a command that took `nanos` goes to the slow log or the latency monitor (two
/// relaxed loads and compares).
#[inline(always)]
pub fn noteworthy(shared: &Shared, nanos: u64) -> bool {
    let log = &shared.redis.slowlog;
    let micros = nanos / 1000;
    let slower_than = log.slower_than_us.load(Relaxed);
    let threshold_ms = log.latency_threshold_ms.load(Relaxed);
    (slower_than >= 0 && micros >= slower_than as u64)
        || (threshold_ms > 0 && micros / 1000 >= threshold_ms)
}

/// Logs a command that took `nanos`, if it was slow enough for the slow log or the latency
/// monitor. Inlined: a command that was not (nearly every one) costs two loads and compares.
#[inline(always)]
pub(super) fn note(
    shared: &Shared,
    session: &Session,
    command: &Command<'_>,
    flags: proto_resp::commands::Flags,
    nanos: u64,
) {
    if noteworthy(shared, nanos) {
        note_slow(shared, session, command, flags, nanos);
    }
}

#[cold]
#[inline(never)]
fn note_slow(
    shared: &Shared,
    session: &Session,
    command: &Command<'_>,
    flags: proto_resp::commands::Flags,
    nanos: u64,
) {
    use proto_resp::commands::Flags;
    let fast = flags.contains(Flags::FAST);
    let log = &shared.redis.slowlog;
    let micros = nanos / 1000;
    let slower_than = log.slower_than_us.load(Relaxed);
    // EXEC is not logged itself (`skip_slowlog`): the commands it ran are.
    if slower_than >= 0 && micros >= slower_than as u64 && !flags.contains(Flags::SKIP_SLOWLOG) {
        add_entry(shared, session, command, micros);
    }
    let threshold_ms = log.latency_threshold_ms.load(Relaxed);
    if threshold_ms > 0 && micros / 1000 >= threshold_ms {
        let name = if fast { "fast-command" } else { "command" };
        add_sample(log, name, super::now_unix_ms(shared) / 1000, micros / 1000);
    }
}

fn add_entry(shared: &Shared, session: &Session, command: &Command<'_>, micros: u64) {
    let argc = command.argc();
    let all: Vec<&[u8]> = command.args().collect();
    let secret = super::redact::secret_args(&all);
    let shown = |(at, arg): (usize, &&[u8])| match secret.contains(&at) {
        true => super::redact::REDACTED.to_vec(),
        false => clip(arg),
    };
    let mut args: Vec<Vec<u8>> = all.iter().enumerate().take(ARGS_MAX).map(shown).collect();
    if argc > ARGS_MAX {
        args[ARGS_MAX - 1] = format!("... ({} more arguments)", argc - ARGS_MAX + 1).into_bytes();
    }
    let (addr, name) = {
        let client = session.client.lock();
        (client.addr.clone(), client.name.clone())
    };
    let unix_secs = super::now_unix_ms(shared) / 1000;
    let max_len = shared.redis.slowlog.max_len.load(Relaxed);
    let mut guard = shared.redis.slowlog.entries.lock();
    let (next_id, entries) = &mut *guard;
    entries.push_front(Entry { id: *next_id, unix_secs, micros, args, addr, name });
    *next_id += 1;
    entries.truncate(max_len);
}

fn clip(arg: &[u8]) -> Vec<u8> {
    if arg.len() <= ARG_BYTES_MAX {
        return arg.to_vec();
    }
    let mut out = arg[..ARG_BYTES_MAX].to_vec();
    out.extend_from_slice(format!("... ({} more bytes)", arg.len() - ARG_BYTES_MAX).as_bytes());
    out
}

/// The store's background work (active expiry, as Redis's `expire-cycle`), timed by the
/// caller: one clock read before it, and this after, which notes an `expire-cycle` latency
/// event when the latency monitor is on and the work took its threshold or more.
pub fn note_expire_cycle(shared: &Shared, started: u64) {
    let log = &shared.redis.slowlog;
    let threshold_ms = log.latency_threshold_ms.load(Relaxed);
    if threshold_ms == 0 {
        return;
    }
    let millis = crate::latency::nanos_since(started) / 1_000_000;
    if millis >= threshold_ms {
        add_sample(log, "expire-cycle", super::now_unix_ms(shared) / 1000, millis);
    }
}

fn add_sample(log: &SlowLog, name: &'static str, unix_secs: u64, millis: u64) {
    let mut events = log.events.lock();
    let at = match events.iter().position(|e| e.name == name) {
        Some(at) => at,
        None => {
            events.push(Event { name, samples: VecDeque::new(), max_ms: 0 });
            events.len() - 1
        }
    };
    let event = &mut events[at];
    match event.samples.back_mut() {
        // One sample per second: the highest.
        Some((secs, ms)) if *secs == unix_secs => *ms = (*ms).max(millis),
        _ => event.samples.push_back((unix_secs, millis)),
    }
    if event.samples.len() > HISTORY_LEN {
        event.samples.pop_front();
    }
    event.max_ms = event.max_ms.max(millis);
}

/// SLOWLOG GET [count]: the newest entries first (10 unless told; -1: all).
pub(super) fn get(ctx: &mut Ctx<'_>) {
    let count = match ctx.argc() {
        2 => 10,
        3 => match std::str::from_utf8(ctx.arg(2)).ok().and_then(|c| c.parse::<i64>().ok()) {
            Some(-1) => usize::MAX,
            Some(n) if n >= 0 => n as usize,
            _ => return ctx.error("ERR count should be greater than or equal to -1"),
        },
        _ => return ctx.error(error::SYNTAX),
    };
    let entries: Vec<Entry> =
        ctx.shared.redis.slowlog.entries.lock().1.iter().take(count).cloned().collect();
    let mut reply = ctx.reply();
    reply.array(entries.len());
    for entry in &entries {
        reply.array(6);
        reply.integer(entry.id as i64);
        reply.integer(entry.unix_secs as i64);
        reply.integer(entry.micros as i64);
        reply.array(entry.args.len());
        entry.args.iter().for_each(|arg| reply.bulk(arg));
        reply.bulk(entry.addr.as_bytes());
        reply.bulk(&entry.name);
    }
}

/// SLOWLOG LEN.
pub(super) fn len(ctx: &mut Ctx<'_>) {
    let len = ctx.shared.redis.slowlog.entries.lock().1.len();
    ctx.reply().integer(len as i64);
}

/// SLOWLOG RESET.
pub(super) fn reset(ctx: &mut Ctx<'_>) {
    ctx.shared.redis.slowlog.entries.lock().1.clear();
    ctx.reply().ok();
}

/// LATENCY LATEST: per event, its latest sample's time and milliseconds, and the most.
pub(super) fn latest(ctx: &mut Ctx<'_>) {
    let rows: Vec<(&'static str, (u64, u64), u64)> = ctx
        .shared
        .redis
        .slowlog
        .events
        .lock()
        .iter()
        .filter_map(|e| Some((e.name, *e.samples.back()?, e.max_ms)))
        .collect();
    let mut reply = ctx.reply();
    reply.array(rows.len());
    for (name, (secs, ms), max) in rows {
        reply.array(4);
        reply.bulk(name.as_bytes());
        reply.integer(secs as i64);
        reply.integer(ms as i64);
        reply.integer(max as i64);
    }
}

/// LATENCY HISTORY event: its samples, oldest first.
pub(super) fn history(ctx: &mut Ctx<'_>) {
    let name = ctx.arg(2).to_ascii_lowercase();
    let samples: Vec<(u64, u64)> = ctx
        .shared
        .redis
        .slowlog
        .events
        .lock()
        .iter()
        .find(|e| e.name.as_bytes() == name)
        .map(|e| e.samples.iter().copied().collect())
        .unwrap_or_default();
    let mut reply = ctx.reply();
    reply.array(samples.len());
    for (secs, ms) in samples {
        reply.array(2);
        reply.integer(secs as i64);
        reply.integer(ms as i64);
    }
}

/// An event's name, samples and all-time worst (see [`events`]).
pub(super) type EventRecord = (&'static str, Vec<(u64, u64)>, u64);

/// Every event of the latency monitor: its name, samples (Unix seconds, milliseconds;
/// oldest first) and all-time worst, in the order they first happened.
pub(super) fn events(shared: &Shared) -> Vec<EventRecord> {
    let events = shared.redis.slowlog.events.lock();
    events.iter().map(|e| (e.name, e.samples.iter().copied().collect(), e.max_ms)).collect()
}

/// LATENCY RESET [event ...]: how many events were reset.
pub(super) fn latency_reset(ctx: &mut Ctx<'_>) {
    let names: Vec<Vec<u8>> = (2..ctx.argc()).map(|at| ctx.arg(at).to_ascii_lowercase()).collect();
    let mut events = ctx.shared.redis.slowlog.events.lock();
    let before = events.len();
    events.retain(|e| !names.is_empty() && !names.iter().any(|n| n == e.name.as_bytes()));
    let reset = before - events.len();
    drop(events);
    ctx.reply().integer(reset as i64);
}
