//! The replication commands: PSYNC and SYNC (a replica asks for the stream), REPLCONF (its
//! settings and acknowledgements), REPLICAOF (follow a primary, or stop), ROLE, FAILOVER,
//! INFO's replication section, and what a write appends to the stream (`after_write`).
//! The stream itself is `crate::repl`.

use std::sync::{atomic::Ordering::Relaxed, Arc};

use proto_resp::args::parse_i64;

use super::{config_kept, Ctx, Session};
use crate::repl::{self, Feed};

/// What a connection that said it is a replica (REPLCONF) told, and its feed once PSYNC
/// made one.
#[derive(Debug, Default)]
pub(crate) struct ReplicaConn {
    port: u32,
    /// `REPLCONF ip-address` (the replica's `replica-announce-ip`): shown in place of the
    /// connection's address.
    ip: Option<String>,
    pub(crate) feed: Option<Arc<Feed>>,
}

/// PSYNC replid offset.
pub(super) fn psync(ctx: &mut Ctx<'_>) {
    let (replid, offset) = (ctx.arg(1).to_vec(), parse_i64(ctx.arg(2)).unwrap_or(-1));
    match ctx.cmd.arg(3) {
        None => {}
        Some(word) if word.eq_ignore_ascii_case(b"failover") => {
            // The primary hands its role over: this replica takes it, then answers.
            let mine = ctx.shared.core.repl.journal.lock().replid.clone();
            if replid != mine.as_bytes() {
                return ctx.error("ERR PSYNC FAILOVER replid must match my replid.");
            }
            repl::link::stop_following(ctx.shared);
        }
        Some(_) => return ctx.error(proto_resp::error::SYNTAX),
    }
    start_feed(ctx, Some((replid, offset)));
}

/// SYNC: a full copy, without the +FULLRESYNC line (replicas before PSYNC).
pub(super) fn sync(ctx: &mut Ctx<'_>) {
    start_feed(ctx, None);
}

fn start_feed(ctx: &mut Ctx<'_>, asked: Option<(Vec<u8>, i64)>) {
    if ctx.session.replica.as_ref().is_some_and(|r| r.feed.is_some()) {
        return;
    }
    let shared_arc = match ctx.shared.this.get().and_then(std::sync::Weak::upgrade) {
        Some(shared) => shared,
        None => return ctx.error("ERR the server is stopping"),
    };
    let repl = &ctx.shared.core.repl;
    if repl.is_replica() && !repl::link::is_up(ctx.shared) {
        return ctx.error("NOMASTERLINK Can't SYNC while not connected with my master");
    }
    let worker = ctx.shared.core.worker_of(ctx.counters);
    let ip = replica_ip(ctx);
    let port = ctx.session.replica.as_ref().map_or(0, |r| r.port);
    let started = match register_feed(ctx.shared, Feed::new(worker, ip, port, 0), &asked) {
        Ok(started) => started,
        Err(message) => return ctx.error(message),
    };
    let (feed, reply, copy) = started;
    ctx.out.extend_from_slice(reply.as_bytes());
    if let Some((replid, at)) = copy {
        let begun = feed.start_bulk(&shared_arc, move |shared, out| {
            let written = repl::write_payload(shared, out, &replid, at);
            repl::walk_finished(shared);
            written
        });
        if begun.is_err() {
            repl::walk_finished(ctx.shared);
            feed.close(ctx.shared);
            return ctx.error("ERR cannot start the full resynchronisation");
        }
    }
    // The connection streams from now on: its worker drains the feed when woken.
    super::pubsub::subscriptions(ctx);
    ctx.session.activity.set(super::clients::flag::REPLICA, true);
    ctx.session.replica.get_or_insert_with(Box::default).feed = Some(feed);
    repl.wake(worker, true);
}

/// A feed registered with the journal, from where it continues (`+CONTINUE`) or from the
/// offset a full copy's walk begins at (`+FULLRESYNC`; then the copy's replication ID and
/// offset come back too).
type Registered = (Arc<Feed>, String, Option<(String, u64)>);

fn register_feed(
    shared: &crate::Shared,
    feed: Feed,
    asked: &Option<(Vec<u8>, i64)>,
) -> Result<Registered, &'static str> {
    let repl = &shared.core.repl;
    let size = backlog_size(shared);
    let mut journal = repl.journal.lock();
    let copying = journal.feeds.iter().filter(|f| f.in_bulk() && !f.is_gone()).count();
    if asked.as_ref().is_none_or(|(id, _)| id.as_slice() != journal.replid.as_bytes())
        && copying >= FULL_COPIES_MAX
    {
        // Each full copy is a walk of the store by a thread of its own: bounded, so that
        // a crowd of PSYNCs cannot take every core and a pipe's memory each.
        return Err(TOO_MANY_COPIES);
    }
    journal.ensure_backlog(size);
    if !repl.is_replica() {
        repl.set_journaling(true);
    }
    let backlog = journal.backlog.as_ref().expect("made above");
    let continues_from = asked.as_ref().and_then(|(id, offset)| {
        let same = id.as_slice() == journal.replid.as_bytes()
            || (id.as_slice() == journal.replid2.as_bytes() && *offset <= journal.second_offset);
        (*offset > 0 && same && backlog.holds(*offset as u64)).then_some(*offset as u64)
    });
    count_sync(repl, continues_from.is_some(), asked);
    let at = backlog.end();
    let (position, reply, copy) = match continues_from {
        Some(from) => (from, format!("+CONTINUE {}\r\n", journal.replid), None),
        None if repl.is_replica() => {
            // A replica's copy begins between two commands of its primary's stream, which
            // its link thread applies: the thread starts it (`repl::start_requested_walks`),
            // and the +FULLRESYNC line, with that offset, goes first through the pipe.
            let feed = Arc::new(feed.at(at + 1));
            feed.await_copy();
            journal.walk_requests.push((Arc::clone(&feed), asked.is_some()));
            journal.feeds.push(Arc::clone(&feed));
            feed.ack_ms.store(super::now_unix_ms(shared), Relaxed);
            return Ok((feed, String::new(), None));
        }
        None => {
            let line = asked.is_some().then(|| format!("+FULLRESYNC {} {at}\r\n", journal.replid));
            repl::walk_started(&mut journal);
            (at + 1, line.unwrap_or_default(), Some((journal.replid.clone(), at)))
        }
    };
    let feed = Arc::new(feed.at(position));
    // Its lag counts from now until it acknowledges (INFO's `lag=`, which Sentinel reads).
    feed.ack_ms.store(super::now_unix_ms(shared), Relaxed);
    journal.feeds.push(Arc::clone(&feed));
    Ok((feed, reply, copy))
}

/// INFO's `sync_full`, `sync_partial_ok` and `sync_partial_err`.
fn count_sync(repl: &repl::Replication, partial: bool, asked: &Option<(Vec<u8>, i64)>) {
    let syncs = &repl.syncs;
    match (partial, asked) {
        (true, _) => syncs.partial_ok.fetch_add(1, Relaxed),
        (false, Some((id, _))) if id.as_slice() != b"?" => {
            syncs.partial_err.fetch_add(1, Relaxed);
            syncs.full.fetch_add(1, Relaxed)
        }
        (false, _) => syncs.full.fetch_add(1, Relaxed),
    };
}

/// Full copies made at once, at most (more replicas retry, as after any refusal).
const FULL_COPIES_MAX: usize = 4;
const TOO_MANY_COPIES: &str = "ERR too many replicas are taking a full copy now, retry later";

/// The replica's address as INFO and ROLE show it: `REPLCONF ip-address` when it sent
/// one (`replica-announce-ip`), else its connection's.
fn replica_ip(ctx: &Ctx<'_>) -> String {
    if let Some(ip) = ctx.session.replica.as_ref().and_then(|r| r.ip.clone()) {
        return ip;
    }
    let addr = ctx.session.client.lock().addr.clone();
    addr.rsplit_once(':').map_or(addr.as_str(), |(ip, _)| ip).to_string()
}

/// REPLCONF option value [option value ...].
pub(super) fn replconf(ctx: &mut Ctx<'_>) {
    if ctx.argc().is_multiple_of(2) {
        return ctx.error(proto_resp::error::SYNTAX);
    }
    let mut at = 1;
    while at < ctx.argc() {
        let (option, value) = (ctx.arg(at).to_ascii_lowercase(), ctx.arg(at + 1));
        match option.as_slice() {
            b"listening-port" => {
                let Ok(port) = parse_i64(value) else {
                    return ctx.error("ERR value is not an integer or out of range");
                };
                ctx.session.replica.get_or_insert_with(Box::default).port = port as u32;
                if let Some(feed) = ctx.session.replica.as_ref().and_then(|r| r.feed.as_ref()) {
                    feed.port.store(port as u32, Relaxed);
                }
            }
            b"ack" | b"fack" => {
                if let Some(feed) = ctx.session.replica.as_ref().and_then(|r| r.feed.as_ref()) {
                    if option == b"ack" {
                        let offset = parse_i64(value).unwrap_or(0).max(0) as u64;
                        feed.ack_offset.fetch_max(offset, Relaxed);
                        feed.ack_ms.store(super::now_unix_ms(ctx.shared), Relaxed);
                        if feed.acked() {
                            let worker = ctx.shared.core.worker_of(ctx.counters);
                            ctx.shared.core.repl.wake(feed.worker, feed.worker == worker);
                        }
                        repl::acks_changed(ctx.shared);
                    }
                }
                // An acknowledgement has no reply.
                return;
            }
            b"getack" => return,
            b"ip-address" => {
                let ip = String::from_utf8_lossy(value).into_owned();
                ctx.session.replica.get_or_insert_with(Box::default).ip = Some(ip);
            }
            b"capa" | b"rdb-only" | b"rdb-filter-only" | b"rdb-channel" => {}
            _ => {
                let name = String::from_utf8_lossy(ctx.arg(at));
                return ctx.error(format!("ERR Unrecognized REPLCONF option: {name}"));
            }
        }
        at += 2;
    }
    ctx.reply().ok();
}

/// REPLICAOF host port | NO ONE.
pub(super) fn replicaof(ctx: &mut Ctx<'_>) {
    if ctx.shared.redis.cluster.get().is_some() {
        return ctx.error("ERR REPLICAOF not allowed in cluster mode.");
    }
    if ctx.arg(1).eq_ignore_ascii_case(b"no") && ctx.arg(2).eq_ignore_ascii_case(b"one") {
        repl::link::stop_following(ctx.shared);
        return ctx.reply().ok();
    }
    let port = match parse_i64(ctx.arg(2)) {
        Ok(port) if (0..=65535).contains(&port) => port as u16,
        _ => return ctx.error("ERR Invalid master port"),
    };
    let host = String::from_utf8_lossy(ctx.arg(1)).into_owned();
    let Some(shared) = ctx.shared.this.get().and_then(std::sync::Weak::upgrade) else {
        return ctx.error("ERR the server is stopping");
    };
    match repl::link::follow(&shared, host, port) {
        repl::link::Followed::Already => {
            ctx.reply().simple(b"OK Already connected to specified master")
        }
        repl::link::Followed::Started => ctx.reply().ok(),
    }
}

/// ROLE.
pub(super) fn role(ctx: &mut Ctx<'_>) {
    let shared = ctx.shared;
    if let Some((host, port, state, offset)) = repl::link::role_of(shared) {
        let mut reply = ctx.reply();
        reply.array(5);
        reply.bulk(b"slave");
        reply.bulk(host.as_bytes());
        reply.integer(i64::from(port));
        reply.bulk(state.as_bytes());
        reply.integer(offset);
        return;
    }
    let (offset, mut replicas) = repl::replicas(shared);
    // Redis lists a replica once it is online (its copy taken).
    replicas.retain(|replica| replica.online);
    let mut reply = ctx.reply();
    reply.array(3);
    reply.bulk(b"master");
    reply.integer(offset as i64);
    reply.array(replicas.len());
    for replica in replicas {
        reply.array(3);
        reply.bulk(replica.ip.as_bytes());
        reply.bulk(replica.port.to_string().as_bytes());
        reply.bulk(replica.ack_offset.to_string().as_bytes());
    }
}

/// `repl-backlog-size` as set.
pub(crate) fn backlog_size(shared: &crate::Shared) -> usize {
    config_kept::value(shared, "repl-backlog-size").parse().unwrap_or(1 << 20)
}

/// A kept integer setting (`min-replicas-to-write` ...).
pub(crate) fn kept_int(shared: &crate::Shared, name: &str) -> i64 {
    config_kept::value(shared, name).parse().unwrap_or(0)
}

/// A kept text setting (`masterauth` ...).
pub(crate) fn kept_text(shared: &crate::Shared, name: &str) -> String {
    config_kept::value(shared, name)
}

/// A kept yes/no setting (`replica-read-only` ...).
pub(crate) fn kept_yes(shared: &crate::Shared, name: &str) -> bool {
    config_kept::value(shared, name) == "yes"
}

/// What a Redis write appends to the stream, once it ran (`run` calls this when the
/// server journals): the command itself when `verbatim` holds the journal (taken before
/// it ran, `resp::verbatim`); else the command as it is for those that act on whole
/// databases or on functions; else its keys' state.
pub(super) fn after_write(
    ctx: &Ctx<'_>,
    route: proto_resp::Route,
    reply_at: usize,
    verbatim: Option<(super::verbatim::Verbatim, repl::JournalGuard<'_>)>,
) {
    let name = ctx.spec.name;
    let db = ctx.session.db;
    let failed = ctx.out.get(reply_at) == Some(&b'-');
    if let Some((kind, mut journal)) = verbatim {
        let keys = changed_keys(ctx);
        if failed || keys.is_empty() {
            journal.append_verbatim_nothing(ctx.shared);
            return;
        }
        return append_verbatim(ctx, kind, &mut journal, &keys, reply_at);
    }
    if ctx.outcome.flushed() || verbatim_as_sent(name, route) {
        if failed {
            return;
        }
        let parts: Vec<&[u8]> = (0..ctx.argc()).map(|i| ctx.arg(i)).collect();
        let selects = matches!(name, "flushdb");
        return repl::journal_verbatim(ctx.shared, selects.then_some(db), &parts);
    }
    let keys = changed_keys(ctx);
    if !keys.is_empty() {
        repl::journal_keys(ctx.shared, keys, false);
    }
}

/// The (database, key) pairs the write's events name, each once.
fn changed_keys<'c>(ctx: &'c Ctx<'_>) -> Vec<(u8, &'c [u8])> {
    let db = ctx.session.db;
    let mut keys: Vec<(u8, &[u8])> =
        ctx.outcome.events().map(|e| (e.db.unwrap_or(db), ctx.arg(e.key_index))).collect();
    // Writes that raise no keyspace event (a stream group's XREADGROUP, XACK, XCLAIM).
    keys.extend(ctx.outcome.quiet_keys().iter().map(|&index| (db, ctx.arg(index))));
    keys.sort_unstable();
    keys.dedup();
    keys
}

fn append_verbatim(
    ctx: &Ctx<'_>,
    kind: super::verbatim::Verbatim,
    journal: &mut repl::Journal,
    keys: &[(u8, &[u8])],
    reply_at: usize,
) {
    use super::verbatim::Verbatim;
    let mut parts: Vec<&[u8]> = (0..ctx.argc()).map(|i| ctx.arg(i)).collect();
    match kind {
        Verbatim::Expiry => return journal.append_expiry(ctx.shared, keys),
        Verbatim::Xadd => {
            let (Some(at), Some(id)) =
                (super::verbatim::id_at(ctx), super::verbatim::answered_id(ctx.out, reply_at))
            else {
                return journal.append_states(ctx.shared, keys);
            };
            parts[at] = id;
        }
        Verbatim::Command => {}
    }
    journal.append_verbatim(ctx.shared, keys, ctx.session.db, &parts);
}

/// Commands sent as they are: those that act on whole databases, and the writes of
/// FUNCTION.
fn verbatim_as_sent(name: &str, route: proto_resp::Route) -> bool {
    use proto_resp::SubcommandId as S;
    matches!(name, "swapdb" | "flushall" | "flushdb")
        || matches!(
            route,
            proto_resp::Route::Subcommand(
                S::FunctionLoad | S::FunctionDelete | S::FunctionFlush | S::FunctionRestore
            )
        )
}

/// Why this write from a client is refused by replication, if it is: a read-only
/// replica (`READONLY`), or a primary without `min-replicas-to-write` good replicas.
pub(super) fn write_refusal(shared: &crate::Shared, session: &Session) -> Option<&'static str> {
    let repl = &shared.core.repl;
    if session.from_master {
        return None;
    }
    if repl.is_replica() {
        return repl.read_only.load(Relaxed).then_some(READONLY);
    }
    let wanted = repl.min_replicas.load(Relaxed);
    (wanted != 0 && repl.good_replicas.load(Relaxed) < wanted).then_some(NOREPLICAS)
}

/// Whether a replica whose link is down refuses this command
/// (`replica-serve-stale-data no`): all but those Redis flags `stale`.
pub(super) fn stale_refusal(shared: &crate::Shared, session: &Session, stale_ok: bool) -> bool {
    let repl = &shared.core.repl;
    repl.is_replica()
        && !session.from_master
        && !stale_ok
        && !repl.serve_stale.load(Relaxed)
        && !repl::link::is_up(shared)
}

pub(super) const MASTERDOWN: &str =
    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";
const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";
pub(super) const READONLY: &str = "READONLY You can't write against a read only replica.";

/// FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms] (`repl::failover`).
pub(super) fn failover(ctx: &mut Ctx<'_>) {
    let (mut target, mut force, mut abort, mut timeout_ms) = (None, false, false, 0u64);
    let mut at = 1;
    while at < ctx.argc() {
        let word = ctx.arg(at).to_ascii_lowercase();
        match word.as_slice() {
            b"to" if at + 2 < ctx.argc() && target.is_none() => {
                let Ok(port) = parse_i64(ctx.arg(at + 2)) else {
                    return ctx.error("ERR value is not an integer or out of range");
                };
                target = Some((String::from_utf8_lossy(ctx.arg(at + 1)).into_owned(), port as u16));
                at += 2;
            }
            b"force" if !force => force = true,
            b"abort" if !abort => abort = true,
            b"timeout" if at + 1 < ctx.argc() && timeout_ms == 0 => {
                match parse_i64(ctx.arg(at + 1)) {
                    Ok(ms) if ms > 0 => timeout_ms = ms as u64,
                    _ => return ctx.error("ERR FAILOVER timeout must be greater than 0"),
                }
                at += 1;
            }
            _ => return ctx.error(proto_resp::error::SYNTAX),
        }
        at += 1;
    }
    if abort {
        if target.is_some() || force || timeout_ms != 0 {
            return ctx.error("ERR FAILOVER abort cannot be used with other options.");
        }
        return match repl::failover::abort(ctx.shared) {
            Ok(()) => ctx.reply().ok(),
            Err(message) => ctx.error(message),
        };
    }
    if ctx.shared.redis.cluster.get().is_some() {
        return ctx.error("ERR FAILOVER not allowed in cluster mode.");
    }
    if ctx.shared.core.repl.is_replica() {
        return ctx.error("ERR FAILOVER is not valid when server is a replica.");
    }
    if force && (target.is_none() || timeout_ms == 0) {
        return ctx.error(
            "ERR FAILOVER with force option requires both a timeout and target HOST and IP.",
        );
    }
    let Some(shared) = ctx.shared.this.get().and_then(std::sync::Weak::upgrade) else {
        return ctx.error("ERR the server is stopping");
    };
    let request = repl::failover::Request { target, force, timeout_ms };
    match repl::failover::start(&shared, request) {
        Ok(()) => ctx.reply().ok(),
        Err(message) => ctx.error(message),
    }
}

/// INFO's replication section, with Redis 7.0's fields (Sentinel parses them).
pub(super) fn info_section(shared: &crate::Shared, text: &mut String) {
    use super::info::field;
    let link = repl::link::info_of(shared);
    let (offset, replicas) = repl::replicas(shared);
    match &link {
        Some(link) => {
            field(text, "role", "slave");
            field(text, "master_host", &link.host);
            field(text, "master_port", link.port);
            field(text, "master_link_status", if link.up { "up" } else { "down" });
            field(text, "master_last_io_seconds_ago", link.last_io_secs);
            field(text, "master_sync_in_progress", u8::from(link.syncing));
            field(text, "slave_read_repl_offset", offset);
            field(text, "slave_repl_offset", offset);
            if !link.up {
                field(text, "master_link_down_since_seconds", link.down_secs);
            }
            field(text, "slave_priority", kept_int(shared, "replica-priority"));
            field(text, "slave_read_only", u8::from(kept_yes(shared, "replica-read-only")));
            field(text, "replica_announced", u8::from(kept_yes(shared, "replica-announced")));
        }
        None => field(text, "role", "master"),
    }
    field(text, "connected_slaves", replicas.len());
    if link.is_none() && kept_int(shared, "min-replicas-to-write") > 0 {
        let good = shared.core.repl.good_replicas.load(Relaxed);
        field(text, "min_slaves_good_slaves", good);
    }
    for (at, r) in replicas.iter().enumerate() {
        let state = if r.online { "online" } else { "wait_bgsave" };
        let line = format!(
            "ip={},port={},state={state},offset={},lag={}",
            r.ip, r.port, r.ack_offset, r.lag_secs
        );
        field(text, &format!("slave{at}"), line);
    }
    let journal = shared.core.repl.journal.lock();
    let failover = shared.core.repl.failover.lock().name();
    field(text, "master_failover_state", failover);
    field(text, "master_replid", &journal.replid);
    field(text, "master_replid2", &journal.replid2);
    field(text, "master_repl_offset", journal.offset());
    field(text, "second_repl_offset", journal.second_offset);
    let (active, size, first, histlen) = match &journal.backlog {
        Some(b) => (1, b.size(), b.first_offset(), b.histlen()),
        None => (0, backlog_size(shared), 0, 0),
    };
    field(text, "repl_backlog_active", active);
    field(text, "repl_backlog_size", size);
    field(text, "repl_backlog_first_byte_offset", first);
    field(text, "repl_backlog_histlen", histlen);
}
