//! memcached text and meta requests against the store, replying as memcached 1.6 does.
//!
//! Text and meta only decode and encode: what each operation does is in `crate::core`
//! (one executor per operation, a typed outcome each), and both dialects compose their
//! replies from those outcomes.
//!
//! ```text
//!   execute --+-- retrieve.rs  get gets gat gats
//!             +-- storage.rs   set add replace append prepend cas, delete, touch
//!             +-- arith.rs     incr decr
//!             +-- admin.rs     flush_all version verbosity quit
//!             +-- stats.rs     stats [items|slabs|reset|conns]; stats_settings.rs: settings
//!             |                sizes.rs: sizes[_enable|_disable]; cachedump.rs; detail.rs
//!             +-- tune.rs      slabs reassign|automove, lru ..., lru_crawler enable|...
//!             +-- crawler.rs   lru_crawler metadump|crawl, cache_memlimit
//!             +-- watch.rs     watch (the server streams, see `crate::watch`)
//!             +-- meta/        mg ms md ma me mn
//! ```
//!
//! The binary protocol (`crate::binary`) shares this module's [`Session`], exptime rules,
//! flush delay and stats groups.
//!
//! Every key goes through [`crate::keyspace::encode`] for database 0 before it reaches the
//! store, so memcached and Redis database 0 share items. Times: an exptime of 0 never
//! expires, a negative one is already past, up to 30 days counts from now, anything larger
//! is a Unix time ([`expiry`]); the store's clock is the only clock.
//!
//! Deliberate differences from memcached are listed where they are made; the larger ones:
//! `h` survives overwrites (the store keeps an overwritten key's access count), and
//! `stats items`/`stats slabs` describe the whole store as one slab class.

pub(crate) mod acl;
pub(crate) mod admin;
mod arith;
pub mod auth;
pub mod busy;
mod cachedump;
pub(crate) mod crawler;
pub mod detail;
mod meta;
mod retrieve;
mod sizes;
pub(crate) mod stats;
mod stats_settings;
pub(crate) mod storage;
pub mod tune;
mod view;
pub(crate) mod watch;

pub use storage::refuse_too_large;
pub(crate) use view::Changed;
pub use view::{MemcacheView, RedisLinks};

#[cfg(all(test, feature = "count-shared-writes"))]
mod shared_writes;
#[cfg(test)]
pub(crate) mod tests;

use proto_memcache::{
    error,
    text::response::{compose_status, Status},
    text::AdminCommand,
    ErrorReply, Request,
};
use store::Expiry;

use crate::{
    conns::{ConnEntry, ConnState, Published},
    core::Refusal,
    counters::{bump, Counters},
    keyspace, Core, Flow,
};

/// Per-connection state of a memcached connection: buffers reused by every request so that
/// none allocates once they have grown.
#[derive(Debug)]
pub struct Session {
    /// The connection's number, as `watch` lines show it (`cfd`).
    pub(crate) conn_number: u32,
    /// The stored form of a key, when it needs the keyspace prefix.
    scratch: Vec<u8>,
    /// A meta key decoded from base64 (`b`).
    decoded: Vec<u8>,
    /// Where the multiget being answered in chunks resumes: a byte offset in its key list
    /// (0 when none is unfinished).
    resume_at: usize,
    /// Reply bytes after which a multiget stops and returns [`Flow::Again`] (0: no bound).
    reply_chunk_bytes: usize,
    /// Authentication (`-S`, `-Y`); unused without them.
    pub(crate) auth: crate::auth::ConnAuth,
    /// The Redis user it is logged in as (no `-S`/`-Y` file: see `crate::auth`); its ACL
    /// rules apply to every request (`acl.rs`). None until it logs in, or in file modes.
    pub(crate) account: Option<std::sync::Arc<crate::resp::acl::Account>>,
    /// The `lru_crawler metadump` being streamed, if one is unfinished.
    dump: Option<crawler::Dump>,
    /// Why the connection is closing, once the server or the client's `quit` said.
    pub(crate) close_reason: Option<crate::watch::CloseReason>,
    /// The connection's `stats conns` entry (None: a session made with `Default`).
    conn: Option<Published>,
    /// Its worker serves this batch outside the gate: a Redis script is busy (`busy`).
    busy: bool,
    /// The keys the `gat`/`gats` being served touched, as byte offsets into its key list
    /// ([`Changed::Keys`]); kept only while a Redis client tracks keys, emptied after each
    /// call, and reused so that it allocates once.
    touched: Vec<usize>,
}

impl Default for Session {
    /// A session listed nowhere, numbered 0 (tests, embedders).
    fn default() -> Self {
        Session {
            conn_number: 0,
            scratch: Vec::new(),
            decoded: Vec::new(),
            resume_at: 0,
            reply_chunk_bytes: 0,
            auth: Default::default(),
            account: None,
            dump: None,
            close_reason: None,
            conn: None,
            busy: false,
            touched: Vec::new(),
        }
    }
}

impl Session {
    /// A session for a new connection (or a UDP port), listed by `stats conns` until
    /// [`Session::disconnect`]; `entry` says how (see [`crate::conns`]).
    pub fn connect(view: MemcacheView<'_>, entry: ConnEntry) -> Session {
        let entry = view.core().clients.register_conn(entry);
        let conn_number = u32::try_from(entry.id).unwrap_or(u32::MAX);
        crate::watch::conn_event(&view.memcache().watchers, &entry.addr, conn_number, None);
        let conn = Some(Published::new(entry));
        Session { conn_number, conn, ..Session::default() }
    }

    /// Marks the batch about to run as served outside the gate while a Redis script is
    /// busy (`true`): requests that touch data are refused (see [`busy`]).
    pub fn set_busy(&mut self, busy: bool) {
        self.busy = busy;
    }

    /// The peer's address, for a connection (not a UDP port or a harness session).
    pub(crate) fn peer(&self) -> Option<String> {
        self.conn.as_ref().map(|conn| conn.entry.addr.to_string())
    }

    /// Whether the batch runs outside the gate while a script is busy.
    pub fn is_busy(&self) -> bool {
        self.busy
    }

    /// Removes the connection from `stats conns`; call once, when it closes.
    pub fn disconnect(&self, view: MemcacheView<'_>) {
        use crate::watch::CloseReason;
        if let Some(conn) = &self.conn {
            view.core().clients.remove_conn(conn.entry.id);
            let kicked = note_idle_kick(view.core(), conn.last_input.elapsed());
            let reason = if kicked {
                CloseReason::IdleTimeout
            } else if view.core().shutdown.load(std::sync::atomic::Ordering::Relaxed) {
                CloseReason::Shutdown
            } else {
                self.close_reason.unwrap_or(CloseReason::Normal)
            };
            let addr = &conn.entry.addr;
            crate::watch::conn_event(
                &view.memcache().watchers,
                addr,
                self.conn_number,
                Some(reason),
            );
        }
    }

    /// The server is hanging up: a protocol error unless the request that ended it said
    /// otherwise (`quit`); a close without this call is the peer's (`watch connevents`).
    pub fn closing(&mut self) {
        self.close_reason.get_or_insert(crate::watch::CloseReason::Error);
    }

    /// Input arrived: the last command time (in [`Core::clock_secs`]) and the state
    /// `stats conns` shows, written to the shared entry only when they changed.
    #[inline]
    pub fn note_activity(&mut self, view: MemcacheView<'_>, state: ConnState) {
        if let Some(conn) = &mut self.conn {
            conn.note(view.core().clock_secs(), state);
        }
    }

    /// Whether the connection has authenticated: with `-S`/`-Y` files, against them;
    /// otherwise it holds a Redis user (see [`crate::auth::admitted`], which also lets a
    /// connection in as a passwordless `default`).
    pub fn authenticated(&self) -> bool {
        self.auth.authenticated || self.account.is_some()
    }

    /// Lets a multiget stop once its call has produced `bytes` of reply and ask to be run
    /// again ([`Flow::Again`]) after the output drained: a get of 20,000 hits then holds
    /// about a chunk of reply at a time instead of all of it. 0 turns chunking off.
    pub fn set_reply_chunk(&mut self, bytes: usize) {
        self.reply_chunk_bytes = bytes;
    }

    /// The stored form of a text-protocol key.
    pub(crate) fn key<'s>(&'s mut self, key: &'s [u8]) -> &'s [u8] {
        keyspace::encode(0, key, &mut self.scratch)
    }

    /// The stored form of a meta key: base64-decoded first if the request had `b`.
    fn meta_key<'s>(&'s mut self, key: &'s [u8], base64_key: bool) -> &'s [u8] {
        let Session { scratch, decoded, .. } = self;
        decoded.resize(proto_memcache::base64::decoded_len_max(key.len()), 0);
        let key = proto_memcache::meta::decoded_key(key, base64_key, decoded)
            .expect("the buffer holds the longest decoding, and the parser checked the key");
        keyspace::encode(0, key, scratch)
    }
}

/// memcached's `idle_kicks`: the event loop closes connections idle past `idle_timeout`
/// without saying why, so a connection that closes with no input for that long counts as
/// kicked (the loop checks every tick, so one that closes itself in that state is about as
/// rare as a peer closing in the same few milliseconds as the timeout).
fn note_idle_kick(core: &Core, idle: std::time::Duration) -> bool {
    // The loop measures from its own reading of the input, a little before ours.
    const LOOP_SLACK: std::time::Duration = std::time::Duration::from_millis(5);
    let timeout_ms = core.idle_timeout_ms.load(std::sync::atomic::Ordering::Relaxed);
    let kicked = timeout_ms > 0 && idle + LOOP_SLACK > std::time::Duration::from_millis(timeout_ms);
    if kicked {
        core.idle_kicks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    kicked
}

/// What every command handler needs besides its request.
pub(crate) struct Ctx<'a> {
    pub(crate) view: MemcacheView<'a>,
    pub(crate) counters: &'a Counters,
    pub(crate) out: &'a mut Vec<u8>,
    /// What the request changed in the store, told by its handler as it makes the change.
    pub(crate) changed: Changed,
}

impl Ctx<'_> {
    pub(crate) fn now_ms(&self) -> u64 {
        self.view.core().store.config().clock.now_ms()
    }

    /// The CAS unique as clients see it: 0 for all with `-C`, as memcached does.
    fn visible_cas(&self, cas: u64) -> u64 {
        visible_cas(self.view.core(), cas)
    }

    /// A one-word reply, unless the request said `noreply`.
    fn status(&mut self, status: Status, noreply: bool) {
        if !noreply {
            compose_status(status, self.out);
        }
    }

    /// A reply line of memcached's own wording (the `\r\n` is added), unless `noreply`.
    fn line(&mut self, text: &[u8], noreply: bool) {
        if !noreply {
            self.out.extend_from_slice(text);
            self.out.extend_from_slice(b"\r\n");
        }
    }

    /// An error line; a text request's `noreply` silences even errors, as in memcached.
    fn error(&mut self, reply: ErrorReply, noreply: bool) {
        if !noreply {
            reply.compose(self.out);
        }
    }
}

/// memcached's line for a write the store refused: storage commands and `touch`.
fn storing_refusal(refusal: Refusal) -> ErrorReply {
    match refusal {
        Refusal::TooLarge => ErrorReply::ServerError(error::TOO_LARGE),
        Refusal::NoMemory => ErrorReply::ServerError(error::OUT_OF_MEMORY_STORING),
        // The codec's key limit is far below the store's; kept for completeness.
        Refusal::KeyTooLong => ErrorReply::ClientError(error::BAD_FORMAT),
    }
}

/// memcached's line for a refused write of `incr`/`decr` and the meta commands but `ms`.
const OUT_OF_MEMORY: ErrorReply = ErrorReply::ServerError(error::OUT_OF_MEMORY);
/// `incr`/`decr`/`ma` on a value that is not a decimal u64.
const NOT_NUMERIC: ErrorReply = ErrorReply::ClientError(error::NOT_NUMERIC);

/// The CAS unique as clients see it: 0 for all with `-C`, as memcached does.
pub(crate) fn visible_cas(core: &Core, cas: u64) -> u64 {
    if core.settings.cas_enabled {
        cas
    } else {
        0
    }
}

/// What a read-only replica answers a write: the replication stream is the only writer
/// of its items (writes go to the primary; `replica-read-only no` lets them through).
pub(crate) const READ_ONLY_REPLICA: &[u8] = b"SERVER_ERROR read-only replica\r\n";

/// On a read-only replica, a write is refused (answered unless noreply): true if it was.
#[cold]
fn refused_on_replica(view: MemcacheView<'_>, request: &Request<'_>, out: &mut Vec<u8>) -> bool {
    match replica_refusal(view, request) {
        Some(false) if !view.core().repl.is_replica() => out.extend_from_slice(FAILING_OVER),
        Some(false) => out.extend_from_slice(READ_ONLY_REPLICA),
        Some(true) => {}
        None => return false,
    }
    true
}

/// What a primary answers a write while FAILOVER hands its role over (Redis clients wait
/// meanwhile; a memcached client is told, and nothing it was told is stored is lost).
pub(crate) const FAILING_OVER: &[u8] = b"SERVER_ERROR failover in progress\r\n";

/// Some(its noreply) for a write a read-only replica (or a failing-over primary) refuses.
fn replica_refusal(view: MemcacheView<'_>, request: &Request<'_>) -> Option<bool> {
    use proto_memcache::text::RetrieveKind;
    let repl = &view.core().repl;
    if repl.is_replica() && !repl.read_only.load(std::sync::atomic::Ordering::Relaxed) {
        return None;
    }
    match request {
        Request::Store(store) => Some(store.noreply),
        Request::Delete { noreply, .. }
        | Request::Arith { noreply, .. }
        | Request::Touch { noreply, .. }
        | Request::FlushAll { noreply, .. } => Some(*noreply),
        Request::Retrieve(retrieve)
            if matches!(retrieve.kind, RetrieveKind::Gat { .. } | RetrieveKind::Gats { .. }) =>
        {
            Some(false)
        }
        Request::MetaSet(_) | Request::MetaDelete(_) | Request::MetaArith(_) => Some(false),
        _ => None,
    }
}

/// Executes one parsed request, appending its reply (if any) to `out`.
pub fn execute(
    view: MemcacheView<'_>,
    counters: &Counters,
    session: &mut Session,
    request: &Request<'_>,
    out: &mut Vec<u8>,
) -> Flow {
    // A multiget resumed after a chunk is still the one command.
    let resumed = session.resume_at != 0 || session.dump.is_some();
    if !resumed {
        bump(&counters.total_commands, 1);
    }
    if session.busy && !resumed {
        match busy::judge(request) {
            busy::Busy::Serve => {}
            busy::Busy::Refuse => {
                out.extend_from_slice(busy::BUSY_LINE);
                return Flow::Continue;
            }
            busy::Busy::RefuseSilently => return Flow::Continue,
        }
    }
    if !resumed {
        if let Err(refusal) = acl::admit(view, session, request) {
            return acl::refuse(refusal, out);
        }
    }
    if !resumed && view.memcache().watchers.wants(crate::watch::kind::FETCHERS) {
        watch::before(view, session, request);
    }
    if view.core().repl.guards_memcached() && refused_on_replica(view, request, out) {
        return Flow::Continue;
    }
    keep_before_write(view, session, request);
    let mut ctx = Ctx { view, counters, out, changed: Changed::Nothing };
    // One match in this function, as the compiler inlines a get's path into it (a dispatch
    // function of its own cost a get 1% more instructions).
    match request {
        Request::Retrieve(retrieve) => return self::retrieve(&mut ctx, session, request, retrieve),
        Request::Store(store) => storage::store(&mut ctx, session, store),
        Request::Delete { key, noreply } => storage::delete(&mut ctx, session, key, *noreply),
        Request::Touch { key, exptime, noreply } => {
            storage::touch(&mut ctx, session, key, *exptime, *noreply)
        }
        Request::Arith { op, key, delta, noreply } => {
            arith::execute(&mut ctx, session, *op, key, *delta, *noreply)
        }
        Request::FlushAll { delay_secs, noreply } => {
            admin::flush_all(&mut ctx, *delay_secs, *noreply)
        }
        Request::Version => admin::version(&mut ctx),
        Request::Verbosity { level, noreply } => admin::verbosity(&mut ctx, *level, *noreply),
        Request::Quit => {
            session.close_reason = Some(crate::watch::CloseReason::Normal);
            return Flow::Close;
        }
        Request::Shutdown { mode } => return admin::shutdown(&mut ctx, *mode),
        Request::Stats { args } => stats::execute(&mut ctx, session, args),
        Request::Admin { command: AdminCommand::Watch, args } => {
            return watch::command(&mut ctx, args)
        }
        Request::Admin { command: AdminCommand::LruCrawler, args }
            if crawler::walks_store(session, args) =>
        {
            return crawler::lru_crawler(&mut ctx, session, args)
        }
        Request::Admin { command: AdminCommand::CacheMemlimit, args } => {
            crawler::cache_memlimit(&mut ctx, args)
        }
        Request::Admin { command: AdminCommand::RefreshCerts, args } => {
            admin::refresh_certs(&mut ctx, args)
        }
        Request::Admin { command, args } => tune::execute(&mut ctx, *command, args),
        Request::MetaNoop => meta::noop(&mut ctx),
        Request::MetaDebug(debug) => {
            // memcached's `cmd_meta` counts `me` alone.
            bump(&counters.cmd_meta, 1);
            meta::debug::execute(&mut ctx, session, debug)
        }
        Request::MetaGet(get) => meta::get::execute(&mut ctx, session, get),
        Request::MetaSet(set) => meta_set(&mut ctx, session, set),
        Request::MetaDelete(delete) => meta::delete::execute(&mut ctx, session, delete),
        Request::MetaArith(arith) => meta::arith::execute(&mut ctx, session, arith),
    }
    after_change(&ctx, session, request);
    Flow::Continue
}

/// What a request changed, told to the Redis clients tracking its keys (client-side
/// caching) and to a primary's replicas: one relaxed load each when there are none.
#[inline(always)]
fn after_change(ctx: &Ctx<'_>, session: &mut Session, request: &Request<'_>) {
    if ctx.changed == Changed::Nothing {
        return;
    }
    if ctx.view.redis().tracking_any() {
        tell_trackers(ctx, session, request);
    }
    if ctx.view.core().repl.journaling() {
        journal_change(ctx, session, request);
    }
    note_memcached_write(ctx.view, ctx.changed);
}

/// Marks the server as one whose items are memcached's (see `Core::memcached_wrote`): a
/// load per write, a store once.
#[inline(always)]
fn note_memcached_write(view: MemcacheView<'_>, changed: Changed) {
    let wrote = &view.core().memcached_wrote;
    if changed != Changed::All && !wrote.load(std::sync::atomic::Ordering::Relaxed) {
        wrote.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// get, gets, gat, gats; a gat's touches are told to the Redis clients tracking its keys.
#[inline(always)]
fn retrieve(
    ctx: &mut Ctx<'_>,
    session: &mut Session,
    request: &Request<'_>,
    retrieve: &proto_memcache::text::Retrieve<'_>,
) -> Flow {
    let flow = retrieve::execute(ctx, session, retrieve);
    after_change(ctx, session, request);
    flow
}

/// What the request changed, sent to this primary's replicas: the items it wrote or
/// touched as they are now, or a FLUSHALL.
#[cold]
#[inline(never)]
fn journal_change(ctx: &Ctx<'_>, session: &mut Session, request: &Request<'_>) {
    match (ctx.changed, request) {
        (Changed::All, _) => ctx.view.journal_flush(),
        (Changed::Keys, Request::Retrieve(retrieve)) => {
            let touched = std::mem::take(&mut session.touched);
            let keys: Vec<Vec<u8>> = touched
                .iter()
                .filter_map(|&at| retrieve.keys.iter_from(at).next())
                .map(|key| session.key(key).to_vec())
                .collect();
            session.touched = touched;
            let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            ctx.view.journal_items(&keys);
        }
        (Changed::Key, _) => {
            if let Some(stored) = written_key(session, request) {
                let stored = stored.to_vec();
                ctx.view.journal_items(&[&stored]);
            }
        }
        _ => {}
    }
}

/// `ms`, and its `watch mutations` line.
fn meta_set(ctx: &mut Ctx<'_>, session: &mut Session, set: &proto_memcache::meta::MetaSet<'_>) {
    let done = meta::set::execute(ctx, session, set);
    let watched = ctx.view.memcache().watchers.wants(crate::watch::kind::MUTATIONS);
    if let Some(done) = done.filter(|_| watched) {
        let now_ms = ctx.now_ms();
        watch::after_meta_set(ctx.view.memcache(), session, set, done, now_ms);
    }
}

/// Tells the Redis clients tracking keys what the request changed ([`Ctx::changed`]): the
/// key it wrote, the keys a `gat` touched, or everything (`flush_all`, a null
/// invalidation, as FLUSHALL sends).
#[cold]
#[inline(never)]
fn tell_trackers(ctx: &Ctx<'_>, session: &mut Session, request: &Request<'_>) {
    let (links, worker) = (ctx.view.redis(), ctx.view.core().worker_of(ctx.counters));
    match (ctx.changed, request) {
        (Changed::All, _) => links.flushed(worker),
        (Changed::Keys, Request::Retrieve(retrieve)) => {
            let touched = std::mem::take(&mut session.touched);
            for &at in &touched {
                if let Some(key) = retrieve.keys.iter_from(at).next() {
                    links.key_changed(session.key(key), worker);
                }
            }
            session.touched = touched;
        }
        (Changed::Key, _) => {
            if let Some(stored) = written_key(session, request) {
                links.key_changed(stored, worker);
            }
        }
        _ => {}
    }
}

/// Before a request that writes runs while a save's picture is under way: the items it
/// may change are kept as they are (`snapshot::picture`).
#[inline(always)]
fn keep_before_write(view: MemcacheView<'_>, session: &mut Session, request: &Request<'_>) {
    if view.core().picture.is_active() {
        keep_request(view, session, request);
    }
}

#[cold]
#[inline(never)]
fn keep_request(view: MemcacheView<'_>, session: &mut Session, request: &Request<'_>) {
    match request {
        Request::Retrieve(retrieve) if retrieve.kind.touch_exptime().is_some() => {
            for key in retrieve.keys.iter_from(0) {
                view.keep_for_picture(session.key(key));
            }
        }
        Request::Retrieve(_) => {}
        Request::MetaGet(get)
            if get.flags.vivify_ttl_secs.or(get.flags.update_ttl_secs).is_none() => {}
        _ => {
            if let Some(stored) = written_key(session, request) {
                view.keep_for_picture(stored);
            }
        }
    }
}

/// The stored form of the one key a request writes (None for requests with none or many).
fn written_key<'s>(session: &'s mut Session, request: &'s Request<'_>) -> Option<&'s [u8]> {
    Some(match request {
        Request::Store(store) => session.key(store.key),
        Request::Delete { key, .. } | Request::Arith { key, .. } | Request::Touch { key, .. } => {
            session.key(key)
        }
        Request::MetaSet(set) => session.meta_key(set.key, set.flags.base64_key),
        Request::MetaDelete(delete) => session.meta_key(delete.key, delete.flags.base64_key),
        Request::MetaArith(arith) => session.meta_key(arith.key, arith.flags.base64_key),
        Request::MetaGet(get) => session.meta_key(get.key, get.flags.base64_key),
        _ => return None,
    })
}

/// memcached's line between relative and absolute exptimes: 30 days in seconds.
pub const RELATIVE_EXPTIME_MAX_SECS: i64 = 60 * 60 * 24 * 30;

/// The store expiry of a memcached exptime at `now_ms`: 0 never expires, a negative value
/// is already past, up to [`RELATIVE_EXPTIME_MAX_SECS`] counts from now, and a larger one is
/// a Unix time in seconds (in the past, it is expired at once).
pub fn expiry(exptime: i64, now_ms: u64) -> Expiry {
    match exptime {
        0 => Expiry::Never,
        ..=-1 => Expiry::AtMs(0),
        1..=RELATIVE_EXPTIME_MAX_SECS => {
            Expiry::AtMs(now_ms.saturating_add(exptime.unsigned_abs() * 1000))
        }
        _ => Expiry::AtMs(exptime.unsigned_abs().saturating_mul(1000)),
    }
}

/// Seconds since the item's last access at `now_ms` (meta `l`, `me`'s `la`).
pub(crate) fn last_access_secs(item: &store::Item<'_>, now_ms: u64) -> u64 {
    (now_ms / 1000).saturating_sub(item.accessed_at_secs())
}

/// Seconds left before `expiry` at `now_ms`, rounded up (a TTL set a moment ago reads back
/// whole), or -1 for none: meta `t` and `me`'s `exp`.
pub fn ttl_secs(expiry: Expiry, now_ms: u64) -> i64 {
    match expiry {
        Expiry::Never => -1,
        Expiry::AtMs(at_ms) => {
            i64::try_from(at_ms.saturating_sub(now_ms).div_ceil(1000)).unwrap_or(i64::MAX)
        }
    }
}
