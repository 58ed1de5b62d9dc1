//! The Redis ACL rules on the memcached port: a connection logged in as a Redis user (SASL
//! PLAIN, the text protocol's `set` token, or a passwordless `default`; see `crate::auth`)
//! runs each request only if that user may run the Redis command it amounts to, on its
//! keys, with the access it needs. The table (also in the README's auth section):
//!
//! ```text
//!   get gets, mg, binary Get GetK               GET       read
//!   gat gats, mg with T or N, binary Gat GatK   GETEX     read + write
//!   touch, binary Touch                         EXPIRE    write
//!   set add replace cas, ms, binary Set Add ... SET       write
//!   append prepend, ms MA/MP, binary Append ... APPEND    write
//!   delete, md, binary Delete                   DEL       write
//!   incr, ma (MI), binary Increment             INCRBY    read + write
//!   decr, ma MD, binary Decrement               DECRBY    read + write
//!   me                                          OBJECT IDLETIME  read
//!   flush_all, binary Flush                     FLUSHALL
//!   stats (any group), binary Stat              INFO
//!   stats reset                                 CONFIG RESETSTAT
//!   stats cachedump, lru_crawler metadump|mgdump  KEYS
//!   watch                                       MONITOR
//!   shutdown                                    SHUTDOWN
//!   verbosity, slabs, lru, lru_crawler (other), cache_memlimit, refresh_certs,
//!   stats detail on|off, stats sizes_enable|sizes_disable      CONFIG SET
//!   version, quit, mn, binary Noop Version Quit   (always allowed, as PING and QUIT)
//! ```
//!
//! Keys are the ones Redis database 0 sees (a meta `b` key decoded); a multiget is refused
//! whole if one key is not allowed, as MGET is. A refusal answers `CLIENT_ERROR ` and Redis's
//! NOPERM text (binary: status 0x20 with that text as its value), whatever `noreply` or a
//! quiet opcode says, so a refused write is never silent.

use std::sync::Arc;

use proto_memcache::{
    binary::{compose_response, BinRequest, Opcode, Reply, Status},
    meta::SetMode,
    text::{AdminCommand, ArithOp, RetrieveKind, StoreCommand},
    Request,
};

use super::Session;
use crate::{
    memcache::MemcacheView,
    resp::acl::{self, Access, Denied},
    Flow,
};

/// Why a request is not run.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// No user logged in while one must (the Redis users require a password).
    Unauthenticated,
    /// The user's rules do not allow it.
    Denied(Denied),
    /// The user was deleted: the connection closes, as on the Redis port.
    Closed,
}

const READ: Access = Access { read: true, write: false };
const WRITE: Access = Access { read: false, write: true };
const READ_WRITE: Access = Access { read: true, write: true };
const NO_KEYS: Access = Access { read: false, write: false };

/// Whether `session` may run `request` (Ok in `-S`/`-Y` file modes, whose gate is the
/// server's loop).
pub(crate) fn admit(
    view: MemcacheView<'_>,
    session: &mut Session,
    request: &Request<'_>,
) -> Result<(), Refusal> {
    let account = match logged_in(view, session)? {
        None => return Ok(()),
        Some(account) if account.is_unrestricted() => return Ok(()),
        Some(account) => Arc::clone(account),
    };
    let Some((command, access)) = text_command(request) else { return Ok(()) };
    let mut decoded = Vec::new();
    let result = match request {
        Request::Retrieve(retrieve) => {
            acl::check_as(&account, command, retrieve.keys.iter(), access)
        }
        _ => {
            let key = single_key(request, &mut decoded);
            acl::check_as(&account, command, key, access)
        }
    };
    if let Err(denied) = &result {
        log_denied(view, session, denied);
    }
    result.map_err(Refusal::Denied)
}

/// The same for a binary request.
pub(crate) fn admit_binary(
    view: MemcacheView<'_>,
    session: &mut Session,
    request: &BinRequest<'_>,
) -> Result<(), Refusal> {
    let account = match logged_in(view, session)? {
        None => return Ok(()),
        Some(account) if account.is_unrestricted() => return Ok(()),
        Some(account) => Arc::clone(account),
    };
    let Some((command, access)) = binary_command(request) else { return Ok(()) };
    let key = (access != NO_KEYS).then_some(request.key);
    let result = acl::check_as(&account, command, key, access);
    if let Err(denied) = &result {
        log_denied(view, session, denied);
    }
    result.map_err(Refusal::Denied)
}

/// Whether the session may write `key` (as given on the wire; `base64_key`: meta's `b`) the
/// way a `set` does: a set refused as too large drops the old item only then, so neither a
/// client that has not logged in nor a user kept from the key can delete it that way.
pub(crate) fn may_set(
    view: MemcacheView<'_>,
    session: &mut Session,
    key: &[u8],
    base64_key: bool,
) -> bool {
    let account = match logged_in(view, session) {
        Err(_) => return false,
        Ok(None) => return true,
        Ok(Some(account)) => account,
    };
    if account.is_unrestricted() {
        return true;
    }
    let mut decoded = vec![0; proto_memcache::base64::decoded_len_max(key.len())];
    match proto_memcache::meta::decoded_key(key, base64_key, &mut decoded) {
        Some(key) => acl::check_as(account, "set", Some(key), WRITE).is_ok(),
        None => false,
    }
}

/// The session's user (None in file modes), logging a new connection in as a
/// passwordless `default` when there is one. Borrowed, not cloned: every connection of
/// every worker holds the same `default` account, so a clone per request would write its
/// reference count, one cache line all workers write (scripts/atomics_per_request.py;
/// docs/benchmarks/cores.md). Callers clone only to check a restricted user's rules.
fn logged_in<'s>(
    view: MemcacheView<'_>,
    session: &'s mut Session,
) -> Result<Option<&'s Arc<acl::Account>>, Refusal> {
    if session.account.is_none() {
        if !crate::auth::uses_users(view.memcache()) {
            return Ok(None);
        }
        if !crate::auth::admitted(view, session) {
            return Err(Refusal::Unauthenticated);
        }
    }
    let account = session.account.as_ref().ok_or(Refusal::Unauthenticated)?;
    if account.deleted.load(std::sync::atomic::Ordering::Acquire) {
        return Err(Refusal::Closed);
    }
    Ok(Some(account))
}

/// The Redis command (catalog name) and key access a text or meta request amounts to;
/// None for requests every user may run.
fn text_command(request: &Request<'_>) -> Option<(&'static str, Access)> {
    Some(match request {
        Request::Retrieve(r) => match r.kind {
            RetrieveKind::Get | RetrieveKind::Gets => ("get", READ),
            RetrieveKind::Gat { .. } | RetrieveKind::Gats { .. } => ("getex", READ_WRITE),
        },
        Request::Store(store) => match store.command {
            StoreCommand::Append | StoreCommand::Prepend => ("append", WRITE),
            _ => ("set", WRITE),
        },
        Request::Delete { .. } | Request::MetaDelete(_) => ("del", WRITE),
        Request::Arith { op, .. } => (arith_command(*op), READ_WRITE),
        Request::MetaArith(arith) => (arith_command(arith.mode), READ_WRITE),
        Request::Touch { .. } => ("expire", WRITE),
        Request::FlushAll { .. } => ("flushall", NO_KEYS),
        Request::Version | Request::Quit | Request::MetaNoop => return None,
        Request::Verbosity { .. } => ("config|set", NO_KEYS),
        Request::Shutdown { .. } => ("shutdown", NO_KEYS),
        Request::Stats { args } => (stats_command(args.iter().next(), args.iter().nth(1)), NO_KEYS),
        Request::Admin { command, args } => (admin_command(*command, args.iter().next()), NO_KEYS),
        Request::MetaDebug(_) => ("object|idletime", READ),
        Request::MetaGet(get) => {
            let writes = get.flags.update_ttl_secs.is_some() || get.flags.vivify_ttl_secs.is_some();
            if writes {
                ("getex", READ_WRITE)
            } else {
                ("get", READ)
            }
        }
        Request::MetaSet(set) => match set.mode {
            SetMode::Append | SetMode::Prepend => ("append", WRITE),
            _ => ("set", WRITE),
        },
    })
}

fn arith_command(op: ArithOp) -> &'static str {
    match op {
        ArithOp::Incr => "incrby",
        ArithOp::Decr => "decrby",
    }
}

/// `stats` groups read the server's state (INFO) but for those that change it or list keys.
fn stats_command(group: Option<&[u8]>, arg: Option<&[u8]>) -> &'static str {
    match (group, arg) {
        (Some(b"reset"), _) => "config|resetstat",
        (Some(b"cachedump"), _) => "keys",
        (Some(b"detail"), Some(b"on" | b"off")) => "config|set",
        (Some(b"sizes_enable" | b"sizes_disable"), _) => "config|set",
        _ => "info",
    }
}

fn admin_command(command: AdminCommand, first: Option<&[u8]>) -> &'static str {
    match (command, first) {
        (AdminCommand::Watch, _) => "monitor",
        (AdminCommand::LruCrawler, Some(b"metadump" | b"mgdump")) => "keys",
        _ => "config|set",
    }
}

/// The one key of a request that has one, as Redis sees it (a meta `b` key decoded).
fn single_key<'a>(request: &Request<'a>, decoded: &'a mut Vec<u8>) -> Option<&'a [u8]> {
    let (key, base64) = match request {
        Request::Store(store) => (store.key, false),
        Request::Delete { key, .. } | Request::Arith { key, .. } | Request::Touch { key, .. } => {
            (*key, false)
        }
        Request::MetaDebug(debug) => (debug.key, debug.base64_key),
        Request::MetaGet(get) => (get.key, get.flags.base64_key),
        Request::MetaSet(set) => (set.key, set.flags.base64_key),
        Request::MetaDelete(delete) => (delete.key, delete.flags.base64_key),
        Request::MetaArith(arith) => (arith.key, arith.flags.base64_key),
        _ => return None,
    };
    if !base64 {
        return Some(key);
    }
    decoded.resize(proto_memcache::base64::decoded_len_max(key.len()), 0);
    proto_memcache::meta::decoded_key(key, true, decoded)
}

/// The Redis command a binary opcode amounts to, as [`text_command`].
fn binary_command(request: &BinRequest<'_>) -> Option<(&'static str, Access)> {
    use Opcode::*;
    Some(match request.opcode.loud().0 {
        Get | GetK => ("get", READ),
        Gat | GatK => ("getex", READ_WRITE),
        Touch => ("expire", WRITE),
        Set | Add | Replace => ("set", WRITE),
        Append | Prepend => ("append", WRITE),
        Delete => ("del", WRITE),
        Increment => ("incrby", READ_WRITE),
        Decrement => ("decrby", READ_WRITE),
        Flush => ("flushall", NO_KEYS),
        Stat if request.key == b"reset" => ("config|resetstat", NO_KEYS),
        Stat => ("info", NO_KEYS),
        _ => return None,
    })
}

/// memcached's answer to a client that has not authenticated (its `-Y` text).
pub(crate) const UNAUTHENTICATED: &[u8] = b"CLIENT_ERROR unauthenticated\r\n";

/// Answers a refused text or meta request.
pub(crate) fn refuse(refusal: Refusal, out: &mut Vec<u8>) -> Flow {
    match refusal {
        Refusal::Unauthenticated => out.extend_from_slice(UNAUTHENTICATED),
        Refusal::Denied(denied) => {
            out.extend_from_slice(b"CLIENT_ERROR ");
            out.extend_from_slice(denied.message().as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        Refusal::Closed => return Flow::Close,
    }
    Flow::Continue
}

/// Answers a refused binary request: status 0x20, memcached's for an unauthenticated or
/// refused client, with `Auth failure.` or the NOPERM text as its value.
pub(crate) fn refuse_binary(refusal: Refusal, request: &BinRequest<'_>, out: &mut Vec<u8>) -> Flow {
    let message = match refusal {
        Refusal::Unauthenticated => Status::AuthError.message().to_owned(),
        Refusal::Denied(denied) => denied.message(),
        Refusal::Closed => return Flow::Close,
    };
    let reply = Reply {
        opcode: request.opcode as u8,
        status: Status::AuthError,
        opaque: request.opaque,
        cas: 0,
    };
    compose_response(&reply, b"", b"", message.as_bytes(), out);
    Flow::Continue
}

/// Records a denial on the memcached port in ACL LOG (context `toplevel`; the object is the
/// Redis command or key the request maps to).
pub(crate) fn log_denied(view: MemcacheView<'_>, session: &Session, denied: &acl::Denied) {
    let user = session.account.as_ref().map_or(acl::DEFAULT_USER, |a| a.name.as_slice());
    let now_ms = view.core().store.config().clock.now_ms();
    let event = acl::log::Event::denied(denied, acl::log::Context::TopLevel, user, now_ms);
    view.redis().log_acl(event, || client_line(session));
}

/// Records a failed memcached login (text `-Y`-style or SASL) as `user` in ACL LOG; the
/// password is never logged.
pub(crate) fn log_failed_login(view: MemcacheView<'_>, session: &Session, user: &[u8]) {
    let event = acl::log::Event {
        reason: acl::log::Reason::Auth,
        context: acl::log::Context::TopLevel,
        object: b"AUTH",
        username: user,
        at_ms: view.core().store.config().clock.now_ms(),
    };
    view.redis().log_acl(event, || client_line(session));
}

/// What ACL LOG shows of a memcached connection: its number and peer.
fn client_line(session: &Session) -> String {
    match session.peer() {
        Some(addr) => format!("id={} addr={addr} protocol=memcache", session.conn_number),
        None => format!("id={} protocol=memcache", session.conn_number),
    }
}
