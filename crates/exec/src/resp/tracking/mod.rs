//! Client-side caching (server-assisted): CLIENT TRACKING, CACHING, GETREDIR,
//! TRACKINGINFO, and the hooks that remember what tracking clients read and invalidate
//! what anyone writes.
//!
//! ```text
//!   run(): dispatch ... then, if Tracking::any() (one relaxed load when nobody tracks):
//!     write (either the command's keys, unless its reply says nothing changed)
//!        -> Tracking::invalidate(keys, writer id)
//!     read-only command by a tracking client (default mode, OPTIN after CACHING yes,
//!        OPTOUT unless CACHING no) -> Tracking::remember(keys, id)
//!   memcached writes (memcache::execute), the store's expiry and eviction observers
//!        -> Tracking::invalidate;  FLUSHALL, FLUSHDB, memcached flush_all -> flush
//! ```
//!
//! Delivery: an invalidation is appended to the mailbox of the connection that gets it
//! (its own, or its REDIRECT target's: the pub/sub mailbox, drained by the owning loop
//! when woken, see `pubsub`), then that loop is woken. A tracking connection therefore
//! streams from its CLIENT TRACKING on, as a subscriber does. Invalidations of a client's
//! own writes reach it after the reply of the batch that made them.
//!
//! A script's reads remember the keys the script declared, as Redis 7.0 does (see
//! `scripts`); its writes invalidate as any command's.
//!
//! BCAST: a top-level command's writes (all of an EXEC's or a script's) are gathered and
//! sent when it ends, one message per prefix, as Redis gathers an event-loop turn's
//! (Redis may also merge writes of different clients in one turn; Spinel does not).
//!
//! A blocked write (BLMOVE, BLPOP, ...) invalidates nothing when it blocks; once served,
//! its keys are invalidated then, and its own client's message follows its reply.
//!
//! A RESP3 connection gets its mailbox at HELLO: Redis pushes to a REDIRECT target that
//! speaks RESP3 whether or not it subscribed.

mod scripts;
mod table;

use std::sync::{atomic::Ordering::Relaxed, Arc};

use proto_resp::{args::parse_i64, commands::Flags, error, Protocol};
use table::{Mode, Tracker};
pub use table::{Tracking, MAX_KEYS_DEFAULT};

use super::{clients::flag, Ctx, Exclusive, Session};
use crate::Shared;

const PREFIX_NEEDS_BCAST: &str = "ERR PREFIX option requires BCAST mode to be enabled";
const BCAST_SWITCH: &str = "ERR You can't switch BCAST mode on/off before disabling tracking \
                            for this client, and then re-enabling it with a different mode.";
const BCAST_OPT: &str = "ERR OPTIN and OPTOUT are not compatible with BCAST";
const OPTIN_AND_OPTOUT: &str = "ERR You can't specify both OPTIN mode and OPTOUT mode";
const OPT_SWITCH: &str = "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking \
                          for this client, and then re-enabling it with a different mode.";
const ONE_REDIRECT: &str = "ERR A client can only redirect to a single other client";
const NO_SUCH_REDIRECT: &str = "ERR The client ID you want redirect to does not exist";
const CACHING_NOT_TRACKING: &str = "ERR CLIENT CACHING can be called only when the client is \
                                    in tracking mode with OPTIN or OPTOUT mode enabled";
const CACHING_YES: &str =
    "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.";
const CACHING_NO: &str =
    "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.";

/// The session's side: its tracker (once it has turned tracking on) and CLIENT CACHING.
#[derive(Debug, Default)]
pub(crate) struct ClientTracking {
    /// The client's id (a write's author, for NOLOOP), kept here to spare a lock.
    id: u64,
    tracker: Option<Arc<Tracker>>,
    /// CLIENT CACHING was given for the next command (or transaction).
    caching: bool,
    /// The keys the running script declared, until its first read remembers them.
    script_keys: Vec<Vec<u8>>,
    /// Keys the running top-level command (EXEC, a script) wrote while some client is in
    /// BCAST mode: broadcast together when it ends, one message per prefix, as Redis
    /// gathers an event-loop turn's keys.
    written: Vec<Vec<u8>>,
}

/// Gathered written keys past this many are broadcast at once (a script writing without
/// end would otherwise hold them all).
const WRITTEN_KEYS_MAX: usize = 1024;

#[derive(Default)]
struct Options {
    redirect: u64,
    bcast: bool,
    optin: bool,
    optout: bool,
    noloop: bool,
    prefixes: Vec<Vec<u8>>,
}

impl ClientTracking {
    /// A connection's state before any CLIENT TRACKING, for client `id`.
    pub(crate) fn of(id: u64) -> ClientTracking {
        ClientTracking { id, ..ClientTracking::default() }
    }
}

/// CLIENT TRACKING on|off [REDIRECT id] [BCAST] [PREFIX p ...] [OPTIN] [OPTOUT] [NOLOOP].
pub(super) fn client_tracking(ctx: &mut Ctx<'_>) {
    let options = match parse(ctx) {
        Ok(options) => options,
        Err(message) => return ctx.error(message),
    };
    let switch = ctx.arg(2);
    if switch.eq_ignore_ascii_case(b"on") {
        if let Err(message) = check(ctx, &options) {
            return ctx.error(message);
        }
        enable(ctx, options);
    } else if switch.eq_ignore_ascii_case(b"off") {
        disable(ctx.shared, ctx.session);
    } else {
        return ctx.error(error::SYNTAX);
    }
    ctx.reply().ok();
}

fn parse(ctx: &Ctx<'_>) -> Result<Options, String> {
    let mut options = Options::default();
    let mut at = 3;
    while at < ctx.argc() {
        let word = ctx.arg(at);
        let more = at + 1 < ctx.argc();
        if word.eq_ignore_ascii_case(b"redirect") && more {
            at += 1;
            if options.redirect != 0 {
                return Err(ONE_REDIRECT.into());
            }
            let id = parse_i64(ctx.arg(at)).map_err(|_| error::NOT_INTEGER)?;
            if id <= 0 || !ctx.shared.core.clients.contains(id as u64) {
                return Err(NO_SUCH_REDIRECT.into());
            }
            options.redirect = id as u64;
        } else if word.eq_ignore_ascii_case(b"bcast") {
            options.bcast = true;
        } else if word.eq_ignore_ascii_case(b"optin") {
            options.optin = true;
        } else if word.eq_ignore_ascii_case(b"optout") {
            options.optout = true;
        } else if word.eq_ignore_ascii_case(b"noloop") {
            options.noloop = true;
        } else if word.eq_ignore_ascii_case(b"prefix") && more {
            at += 1;
            options.prefixes.push(ctx.arg(at).to_vec());
        } else {
            return Err(error::SYNTAX.into());
        }
        at += 1;
    }
    Ok(options)
}

/// Redis's checks of ON's options against each other and the client's current mode.
fn check(ctx: &Ctx<'_>, options: &Options) -> Result<(), String> {
    if !options.bcast && !options.prefixes.is_empty() {
        return Err(PREFIX_NEEDS_BCAST.into());
    }
    let current = mode_of(ctx.session);
    if current.on && current.bcast != options.bcast {
        return Err(BCAST_SWITCH.into());
    }
    if options.bcast && (options.optin || options.optout) {
        return Err(BCAST_OPT.into());
    }
    if options.optin && options.optout {
        return Err(OPTIN_AND_OPTOUT.into());
    }
    if (options.optin && current.optout) || (options.optout && current.optin) {
        return Err(OPT_SWITCH.into());
    }
    if options.bcast {
        check_prefixes(&current.prefixes, &options.prefixes)?;
    }
    Ok(())
}

fn overlaps(a: &[u8], b: &[u8]) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

fn check_prefixes(existing: &[Vec<u8>], new: &[Vec<u8>]) -> Result<(), String> {
    for (i, prefix) in new.iter().enumerate() {
        if let Some(old) = existing.iter().find(|old| overlaps(old, prefix)) {
            return Err(format!(
                "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single \
                 client must not overlap.",
                String::from_utf8_lossy(prefix),
                String::from_utf8_lossy(old)
            ));
        }
        if let Some(other) = new[i + 1..].iter().find(|other| overlaps(prefix, other)) {
            return Err(format!(
                "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a \
                 single client must not overlap.",
                String::from_utf8_lossy(prefix),
                String::from_utf8_lossy(other)
            ));
        }
    }
    Ok(())
}

fn mode_of(session: &Session) -> Mode {
    match &session.tracking.tracker {
        Some(tracker) => tracker.mode.lock().clone(),
        None => Mode::default(),
    }
}

fn enable(ctx: &mut Ctx<'_>, options: Options) {
    let resp3 = ctx.session.protocol == Protocol::Resp3;
    // Its invalidations come through its pub/sub mailbox, drained by its loop.
    let mailbox = Arc::clone(&super::pubsub::subscriptions(ctx).subscriber);
    mailbox.set_resp3(resp3);
    let shared = ctx.shared;
    let session = &mut *ctx.session;
    let tracker = match &session.tracking.tracker {
        Some(tracker) => Arc::clone(tracker),
        None => {
            let tracker = Arc::new(Tracker {
                id: session.client.lock().id,
                mailbox,
                mode: Default::default(),
                activity: Arc::clone(&session.activity),
            });
            shared.redis.tracking.register(&tracker);
            session.tracking.tracker = Some(Arc::clone(&tracker));
            tracker
        }
    };
    // Lock order: the prefix table is never touched with a mode locked (a broadcast
    // holds the table and locks modes).
    let mut added = Vec::new();
    let was_on = {
        let mut mode = tracker.mode.lock();
        let was_on = mode.on;
        shared.redis.tracking.retarget(mode.redirect, options.redirect);
        mode.on = true;
        mode.broken_redirect = false;
        mode.redirect = options.redirect;
        mode.bcast = options.bcast;
        mode.optin = options.optin;
        mode.optout = options.optout;
        mode.noloop = options.noloop;
        if options.bcast {
            let mut prefixes = options.prefixes;
            if prefixes.is_empty() {
                prefixes.push(Vec::new());
            }
            for prefix in prefixes {
                if let Err(at) = mode.prefixes.binary_search(&prefix) {
                    mode.prefixes.insert(at, prefix.clone());
                    added.push(prefix);
                }
            }
        }
        was_on
    };
    if !was_on {
        shared.redis.tracking.client_on();
    }
    for prefix in &added {
        shared.redis.tracking.add_prefix(prefix, &tracker);
    }
    let activity = &session.activity;
    activity.set(flag::TRACKING, true);
    activity.set(flag::TRACKING_BROKEN_REDIR, false);
    activity.set(flag::TRACKING_BCAST, options.bcast);
    activity.redirect.store(options.redirect as i64, Relaxed);
}

/// CLIENT TRACKING off (also RESET and closing): table entries stay until their keys
/// change (they are skipped then), as in Redis.
pub(super) fn disable(shared: &Shared, session: &mut Session) {
    session.tracking.caching = false;
    let Some(tracker) = &session.tracking.tracker else { return };
    let old = std::mem::take(&mut *tracker.mode.lock());
    shared.redis.tracking.retarget(old.redirect, 0);
    if old.bcast {
        shared.redis.tracking.remove_prefixes(&old.prefixes, tracker.id);
    }
    if old.on {
        shared.redis.tracking.client_off();
    }
    shared.redis.tracking.settle_charge(&shared.core.store);
    let activity = &session.activity;
    for bit in [flag::TRACKING, flag::TRACKING_BROKEN_REDIR, flag::TRACKING_BCAST] {
        activity.set(bit, false);
    }
    activity.redirect.store(-1, Relaxed);
}

/// The connection closed: nothing of it is left but table entries, which are skipped
/// (and dropped) when their keys change or leave the table.
pub(super) fn disconnect(shared: &Shared, session: &mut Session) {
    disable(shared, session);
    if shared.redis.tracking.any() {
        shared.redis.tracking.closed(session.tracking.id);
    }
    if let Some(tracker) = session.tracking.tracker.take() {
        shared.redis.tracking.forget(tracker.id);
    }
}

/// CLIENT CACHING yes|no.
pub(super) fn client_caching(ctx: &mut Ctx<'_>) {
    let mode = mode_of(ctx.session);
    if !mode.on {
        return ctx.error(CACHING_NOT_TRACKING);
    }
    let answer = ctx.arg(2);
    if answer.eq_ignore_ascii_case(b"yes") {
        if !mode.optin {
            return ctx.error(CACHING_YES);
        }
    } else if answer.eq_ignore_ascii_case(b"no") {
        if !mode.optout {
            return ctx.error(CACHING_NO);
        }
    } else {
        return ctx.error(error::SYNTAX);
    }
    ctx.session.tracking.caching = true;
    ctx.reply().ok();
}

/// CLIENT GETREDIR: the REDIRECT target, 0 for none, -1 when tracking is off.
pub(super) fn client_getredir(ctx: &mut Ctx<'_>) {
    let mode = mode_of(ctx.session);
    let id = if mode.on { mode.redirect as i64 } else { -1 };
    ctx.reply().integer(id);
}

/// CLIENT TRACKINGINFO: flags (a set), redirect, prefixes.
pub(super) fn client_trackinginfo(ctx: &mut Ctx<'_>) {
    let mode = mode_of(ctx.session);
    let caching = ctx.session.tracking.caching;
    let mut flags: Vec<&[u8]> = vec![if mode.on { b"on" } else { b"off" }];
    if mode.bcast {
        flags.push(b"bcast");
    }
    if mode.optin {
        flags.push(b"optin");
        if caching {
            flags.push(b"caching-yes");
        }
    }
    if mode.optout {
        flags.push(b"optout");
        if caching {
            flags.push(b"caching-no");
        }
    }
    if mode.noloop {
        flags.push(b"noloop");
    }
    if mode.broken_redirect {
        flags.push(b"broken_redirect");
    }
    let redirect = if mode.on { mode.redirect as i64 } else { -1 };
    let mut reply = ctx.reply();
    reply.map(3);
    reply.bulk(b"flags");
    reply.set(flags.len());
    for flag in flags {
        reply.bulk(flag);
    }
    reply.bulk(b"redirect");
    reply.integer(redirect);
    reply.bulk(b"prefixes");
    reply.array(mode.prefixes.len());
    for prefix in &mode.prefixes {
        reply.bulk(prefix);
    }
}

/// After each command while some client tracks (`run` asks [`Tracking::any`] first):
/// invalidates what a write changed, remembers what a tracking client read, and ends a
/// CLIENT CACHING that applied to this command.
pub(super) fn after_command(ctx: &mut Ctx<'_>) {
    let spec = ctx.spec;
    // A command that blocked has changed nothing yet: it invalidates once served. (Only a
    // write records an outcome to invalidate from: XGROUP's writes too, which the table
    // does not flag.)
    if !ctx.session.is_blocked() {
        invalidate_written(ctx);
    }
    if ctx.session.in_script {
        return;
    }
    scripts::after_script(ctx);
    remember_read(ctx);
    // As Redis: CACHING applies to the next command, or the whole MULTI ... EXEC; any
    // CLIENT subcommand leaves it be.
    let outer = ctx.exclusive == Exclusive::IfMultiKey;
    if outer {
        broadcast_written(ctx.shared, ctx.counters, ctx.session);
    }
    if outer && ctx.session.tx.is_none() && spec.name != "client" {
        ctx.session.tracking.caching = false;
    }
}

/// Sends the gathered written keys to BCAST clients (sorted, each once).
pub(super) fn broadcast_written(
    shared: &Shared,
    counters: &crate::Counters,
    session: &mut Session,
) {
    let written = &mut session.tracking.written;
    if written.is_empty() {
        return;
    }
    written.sort_unstable();
    written.dedup();
    let keys: Vec<&[u8]> = written.iter().map(Vec::as_slice).collect();
    let worker = shared.core.worker_of(counters);
    shared.redis.tracking.broadcast_keys(&shared.redis.pubsub, &keys, session.tracking.id, worker);
    session.tracking.written.clear();
}

/// Table readers of `keys` hear now; BCAST clients when the top-level command ends.
fn invalidate_keys(ctx: &mut Ctx<'_>, keys: &[&[u8]]) {
    let shared = ctx.shared;
    let worker = shared.core.worker_of(ctx.counters);
    let writer = ctx.session.tracking.id;
    shared.redis.tracking.invalidate_table(&shared.redis.pubsub, keys, writer, worker);
    shared.redis.tracking.settle_charge(&shared.core.store);
    if shared.redis.tracking.broadcasting() {
        ctx.session.tracking.written.extend(keys.iter().map(|key| key.to_vec()));
        if ctx.session.tracking.written.len() > WRITTEN_KEYS_MAX {
            broadcast_written(shared, ctx.counters, ctx.session);
        }
    }
}

/// Before a command runs while some client tracks: a tracking client's read is
/// remembered before it reads as well as after. Why twice: a write on another worker
/// between the read and a remembering that came only after it would find no entry, and
/// the client would keep a value nobody invalidates. Remembered first, such a write
/// takes the entry and sends an invalidation, which reaches the client after this
/// command's reply (the mailbox is drained after the batch), and the second remembering
/// puts the entry back for the writes that follow.
/// A command a script runs remembers the script's declared keys instead (`scripts`).
pub(super) fn before_command(ctx: &mut Ctx<'_>) {
    if ctx.session.in_script {
        return scripts::inside_script(ctx);
    }
    scripts::before_script(ctx);
    remember_read(ctx);
}

/// Whether the session's reads are remembered now: it tracks, not in BCAST mode, and
/// is opted in (default mode; OPTIN after CACHING yes; OPTOUT unless CACHING no).
fn wanted(session: &Session) -> bool {
    let Some(tracker) = &session.tracking.tracker else { return false };
    let mode = tracker.mode.lock();
    let caching = session.tracking.caching;
    let opted = if mode.optin { caching } else { !(mode.optout && caching) };
    mode.on && !mode.bcast && opted
}

/// Remembers the keys of a read-only command of a tracking client, if [`wanted`].
fn remember_read(ctx: &mut Ctx<'_>) {
    let spec = ctx.spec;
    if !spec.flags.contains(Flags::READONLY) || spec.name.ends_with("_ro") {
        return;
    }
    if !wanted(ctx.session) {
        return;
    }
    let Some(tracker) = &ctx.session.tracking.tracker else { return };
    let id = tracker.id;
    let shared = ctx.shared;
    let worker = shared.core.worker_of(ctx.counters);
    if spec.first_key > 0 && spec.last_key == spec.first_key {
        if let Some(key) = ctx.cmd.arg(spec.first_key as usize) {
            shared.redis.tracking.remember(&shared.redis.pubsub, &[key], id, worker);
        }
    } else {
        let args: Vec<&[u8]> = ctx.cmd.args().collect();
        let keys = keys_where(spec.name, &args, |_| true);
        if keys.is_empty() {
            return;
        }
        shared.redis.tracking.remember(&shared.redis.pubsub, &keys, id, worker);
    }
    shared.redis.tracking.settle_charge(&shared.core.store);
}

/// The keys a write changed, as its handler recorded them (`keyevents::outcome`): the keys
/// its keyspace events name, or every key after a flush. Nothing else is looked at: not
/// the reply, not the command's name. (A script's or a transaction's commands invalidate
/// their own keys as each runs; SWAPDB records nothing, as Redis 7.0 invalidates nothing
/// for it.)
fn invalidate_written(ctx: &mut Ctx<'_>) {
    let shared = ctx.shared;
    if ctx.outcome.flushed() {
        let worker = shared.core.worker_of(ctx.counters);
        return shared.redis.tracking.flush(&shared.redis.pubsub, worker);
    }
    match ctx.outcome.single_key_index() {
        Some(index) => {
            let key = ctx.arg(index);
            invalidate_keys(ctx, &[key]);
        }
        None => {
            let keys: Vec<&[u8]> =
                ctx.outcome.key_indexes().into_iter().map(|index| ctx.arg(index)).collect();
            if !keys.is_empty() {
                invalidate_keys(ctx, &keys);
            }
        }
    }
}

/// The keys of a command line whose key-spec flags pass `wanted`.
fn keys_where<'a>(name: &str, args: &[&'a [u8]], wanted: impl Fn(u16) -> bool) -> Vec<&'a [u8]> {
    let Some(meta) = proto_resp::commands::command_meta(name) else {
        return Vec::new();
    };
    meta.keys(args).into_iter().filter(|key| wanted(key.flags)).map(|key| args[key.at]).collect()
}

/// A blocked command of client `served` was served and changed `keys`: everyone who
/// read them hears now; the messages for `served` itself are returned, to follow its
/// reply (Redis sends them after it).
pub(super) fn served(shared: &Shared, keys: &[&[u8]], served: u64, worker: usize) -> Vec<u8> {
    let own = shared.redis.tracking.invalidate_served(&shared.redis.pubsub, keys, served, worker);
    shared.redis.tracking.settle_charge(&shared.core.store);
    own
}

/// A memcached write of stored key `stored` (database 0's form), by any worker: what
/// memcached's handlers tell through `MemcacheView::redis` (`RedisLinks::key_changed`),
/// kept as one call for this file's tests.
#[cfg(test)]
pub(crate) fn memcache_written(shared: &Shared, stored: &[u8], worker: usize) {
    shared.memcache_view().redis().key_changed(stored, worker);
}

/// HELLO chose the session's protocol. A RESP3 connection gets its mailbox now: it may
/// be named as another client's REDIRECT target without ever subscribing, and Redis
/// pushes invalidations to such a client all the same.
pub(super) fn hello(ctx: &mut Ctx<'_>) {
    if ctx.session.protocol == Protocol::Resp3 {
        super::pubsub::subscriptions(ctx);
    }
    protocol_changed(ctx.session);
}

/// HELLO or RESET changed the protocol: its invalidations follow.
pub(super) fn protocol_changed(session: &Session) {
    if let Some(subs) = &session.pubsub {
        subs.subscriber.set_resp3(session.protocol == Protocol::Resp3);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::testkit::Harness;

    fn connect(h: &Harness) -> Session {
        Session::connect(&h.shared, "127.0.0.1:1000", "127.0.0.1:6379")
    }

    fn drained(session: &Session) -> Vec<u8> {
        let mut out = Vec::new();
        session.drain_messages(&mut out);
        out
    }

    /// Goal: a read by a tracking client, then another client's write, puts one push in
    /// the reader's mailbox; closing the reader leaves no tracker behind and writes go
    /// back to one relaxed load. Method: two sessions on one harness.
    #[test]
    fn write_by_another_session_then_close() {
        let mut h = Harness::new();
        h.session = connect(&h);
        h.run("HELLO 3");
        h.check(&[("CLIENT TRACKING on", "+OK\r\n"), ("GET k", "_\r\n")]);
        assert!(h.shared.redis.tracking.any());
        let writer = connect(&h);
        let mut reader = std::mem::replace(&mut h.session, writer);
        h.check(&[("SET k v", "+OK\r\n")]);
        assert_eq!(drained(&reader), b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n");
        h.check(&[("SET k w", "+OK\r\n")]);
        assert_eq!(drained(&reader), b"");
        // A memcached write of a key read again.
        std::mem::swap(&mut h.session, &mut reader);
        h.check(&[("GET k", "$1\r\nw\r\n")]);
        std::mem::swap(&mut h.session, &mut reader);
        memcache_written(&h.shared, b"k", 0);
        assert_eq!(drained(&reader), b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n");
        reader.disconnect(&h.shared);
        assert!(!h.shared.redis.tracking.any());
        assert_eq!(h.shared.redis.tracking.totals(), (0, 0, 0));
    }

    /// Goal: the RESP2 replies of GETREDIR, TRACKINGINFO and CACHING follow the mode, and
    /// CACHING applies to one command. Method: wire table.
    #[test]
    fn modes_in_resp2() {
        let mut h = Harness::new();
        h.session = connect(&h);
        h.check(&[
            ("CLIENT GETREDIR", ":-1\r\n"),
            ("CLIENT TRACKING on OPTIN NOLOOP", "+OK\r\n"),
            ("CLIENT GETREDIR", ":0\r\n"),
            ("CLIENT CACHING yes", "+OK\r\n"),
            (
                "CLIENT TRACKINGINFO",
                "*6\r\n$5\r\nflags\r\n*4\r\n$2\r\non\r\n$5\r\noptin\r\n$11\r\ncaching-yes\r\n\
                 $6\r\nnoloop\r\n$8\r\nredirect\r\n:0\r\n$8\r\nprefixes\r\n*0\r\n",
            ),
            ("GET a", "$-1\r\n"),
            ("GET b", "$-1\r\n"),
        ]);
        assert_eq!(h.shared.redis.tracking.totals(), (1, 1, 0));
        h.check(&[("CLIENT TRACKING off", "+OK\r\n"), ("CLIENT GETREDIR", ":-1\r\n")]);
        assert!(!h.shared.redis.tracking.any());
    }
}
