//! The `watch` command and the item events memcached 1.6 logs to watchers:
//!
//! ```text
//!   ts=<s>.<us> gid=<n> type=item_get key=<uri> status=found|not_found clsid=<c> cfd=<n> size=<n>
//!   ts=<s>.<us> gid=<n> type=item_store key=<uri> status=<stored|not_stored|exists|not_found|
//!       too_large|no_memory> cmd=<set|add|replace|append|prepend|cas> ttl=<s> clsid=<c> cfd=<n> size=<n>
//! ```
//!
//! memcached logs an `item_get` for every item lookup a command makes (a set, a delete and
//! an incr look their key up first), then an `item_store` for each write; the same lines come
//! here, from one look-up per key before the command runs (only while someone watches
//! fetchers). `clsid` is 1 (the store's one class) for a found item and 0 otherwise; `cfd`
//! is the connection's number, not a descriptor.
//!
//! ```text
//!   ts=<s>.<us> gid=<n> type=eviction key=<uri> fetch=yes|no ttl=<s, -1: none> la=<s> clsid=1 size=<n>
//! ```
//!
//! Evictions happen inside the store: its eviction observer (set by `Shared::new`) formats
//! this line while someone watches evictions, and is one relaxed load per evicted item
//! otherwise. `fetch` is whether the item was read since it was written, `la` the seconds
//! since its last access (the store's stamp), `size` its value's bytes.

use std::{io::Write, sync::Arc};

use proto_memcache::{
    meta::{MetaSet, SetMode},
    text::StoreCommand,
    Request, Words,
};
use store::{Clock, EvictObserver, Expiry, Item};

use super::{ttl_secs, Ctx, Session};
use crate::{
    core::{storage::StoreOutcome, Refusal},
    memcache::MemcacheView,
    watch::{kind, push_uriencoded, Watchers},
    Flow, MemcacheState,
};

/// `watch [kind ...]` (fetchers when none is named).
pub(super) fn command(ctx: &mut Ctx<'_>, args: &Words<'_>) -> Flow {
    let words: Vec<&[u8]> = args.iter().take(22).collect();
    let noreply = words.last() == Some(&&b"noreply"[..]);
    let reply = |ctx: &mut Ctx<'_>, line: &[u8]| ctx.line(line, noreply);
    if !ctx.view.core().settings.watch_enabled {
        reply(ctx, b"CLIENT_ERROR watch commands not allowed");
        return Flow::Continue;
    }
    let mut kinds = 0;
    for word in &words {
        kinds |= match *word {
            b"rawcmds" => kind::RAWCMDS,
            b"evictions" => kind::EVICTIONS,
            b"fetchers" => kind::FETCHERS,
            b"mutations" => kind::MUTATIONS,
            b"sysevents" => kind::SYSEVENTS,
            b"connevents" => kind::CONNEVENTS,
            b"proxyreqs" => kind::PROXYREQS,
            b"proxyevents" => kind::PROXYEVENTS,
            b"proxyuser" => kind::PROXYUSER,
            // `noreply` too: memcached reads it as an unknown kind (and stays silent).
            _ => {
                reply(ctx, b"ERROR");
                return Flow::Continue;
            }
        };
    }
    if words.is_empty() {
        kinds = kind::FETCHERS;
    }
    Flow::Watch(kinds)
}

/// `item_get` lines for the keys `request` looks up, before it runs. Call only while
/// someone watches fetchers.
pub(super) fn before(view: MemcacheView<'_>, session: &mut Session, request: &Request<'_>) {
    let base64 = match request {
        Request::MetaGet(r) => r.flags.base64_key,
        Request::MetaSet(r) => r.flags.base64_key,
        Request::MetaDelete(r) => r.flags.base64_key,
        Request::MetaArith(r) => r.flags.base64_key,
        Request::MetaDebug(_) => return,
        _ => false,
    };
    let cfd = session.conn_number;
    for key in request.keys() {
        let stored = session.meta_key(key, base64);
        let size = view.core().store.reader().peek(stored).map(|item| item.value().len());
        let client_key = crate::keyspace::decode(stored).map_or(key, |(_, k)| k).to_vec();
        item_get(view.memcache(), &client_key, size, cfd);
    }
}

/// One `item_get` line; `size` is the value's length when the key was found.
pub(crate) fn item_get(memcache: &MemcacheState, key: &[u8], size: Option<usize>, cfd: u32) {
    memcache.watchers.emit(kind::FETCHERS, |line| {
        line.extend_from_slice(b"type=item_get key=");
        push_uriencoded(key, line);
        let (status, clsid, size) = match size {
            Some(size) => ("found", 1, size),
            None => ("not_found", 0, 0),
        };
        let _ = write!(line, " status={status} clsid={clsid} cfd={cfd} size={size}");
    });
}

/// The store's eviction observer: an `eviction` line per evicted item while someone watches
/// evictions.
pub(crate) fn eviction_observer(watchers: &Arc<Watchers>, clock: Arc<dyn Clock>) -> EvictObserver {
    let watchers = Arc::clone(watchers);
    Arc::new(move |item: &Item<'_>| {
        if watchers.wants(kind::EVICTIONS) {
            eviction(&watchers, item, clock.now_ms());
        }
    })
}

fn eviction(watchers: &Watchers, item: &Item<'_>, now_ms: u64) {
    watchers.emit(kind::EVICTIONS, |line| {
        line.extend_from_slice(b"type=eviction key=");
        let key = crate::keyspace::decode(item.key()).map_or(item.key(), |(_, key)| key);
        push_uriencoded(key, line);
        let fetch = if item.accessed_before() { "yes" } else { "no" };
        let ttl = ttl_secs(item.expiry(), now_ms);
        let la = super::last_access_secs(item, now_ms);
        let size = item.value().len();
        let _ = write!(line, " fetch={fetch} ttl={ttl} la={la} clsid=1 size={size}");
    });
}

/// What an `item_store` line says about a write.
pub(crate) struct StoreEvent<'a> {
    pub key: &'a [u8],
    pub status: &'static str,
    pub cmd: &'static str,
    pub expiry: Expiry,
    pub size: usize,
    pub cfd: u32,
}

pub(crate) fn item_store(memcache: &MemcacheState, event: &StoreEvent<'_>, now_ms: u64) {
    memcache.watchers.emit(kind::MUTATIONS, |line| {
        line.extend_from_slice(b"type=item_store key=");
        push_uriencoded(event.key, line);
        let ttl = match event.expiry {
            Expiry::Never => 0,
            expiry => ttl_secs(expiry, now_ms).max(0),
        };
        let (status, cmd, cfd, size) = (event.status, event.cmd, event.cfd, event.size);
        let _ = write!(line, " status={status} cmd={cmd} ttl={ttl} clsid=1 cfd={cfd} size={size}");
    });
}

/// The size an `item_store` line gives: the stored item's (after an append, the whole value),
/// or the request's value when nothing was stored.
pub(crate) fn store_size(outcome: &StoreOutcome, value_len: usize) -> usize {
    match outcome {
        StoreOutcome::Stored(stored) => stored.value_len,
        _ => value_len,
    }
}

/// memcached's word for a store outcome.
pub(crate) fn store_status(outcome: &StoreOutcome) -> &'static str {
    match outcome {
        StoreOutcome::Stored(_) => "stored",
        StoreOutcome::NotStored => "not_stored",
        StoreOutcome::Exists => "exists",
        StoreOutcome::NotFound => "not_found",
        StoreOutcome::Refused(Refusal::TooLarge) => "too_large",
        StoreOutcome::Refused(_) => "no_memory",
    }
}

pub(super) fn text_cmd(command: StoreCommand) -> &'static str {
    match command {
        StoreCommand::Set => "set",
        StoreCommand::Add => "add",
        StoreCommand::Replace => "replace",
        StoreCommand::Append => "append",
        StoreCommand::Prepend => "prepend",
        StoreCommand::Cas { .. } => "cas",
    }
}

pub(super) fn meta_cmd(mode: SetMode) -> &'static str {
    match mode {
        SetMode::Set => "set",
        SetMode::Add => "add",
        SetMode::Replace => "replace",
        SetMode::Append => "append",
        SetMode::Prepend => "prepend",
    }
}

/// What an `ms` did, as its handler (`meta::set`) tells it: the typed outcome its
/// `item_store` line is written from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SetStatus {
    Stored,
    NotStored,
    Exists,
    NotFound,
    TooLarge,
    NoMemory,
}

impl SetStatus {
    /// memcached's word for it in `item_store` lines.
    fn name(self) -> &'static str {
        match self {
            SetStatus::Stored => "stored",
            SetStatus::NotStored => "not_stored",
            SetStatus::Exists => "exists",
            SetStatus::NotFound => "not_found",
            SetStatus::TooLarge => "too_large",
            SetStatus::NoMemory => "no_memory",
        }
    }
}

/// The `item_store` line of an `ms`, from what the set did.
pub(super) fn after_meta_set(
    memcache: &MemcacheState,
    session: &mut Session,
    set: &MetaSet<'_>,
    done: SetStatus,
    now_ms: u64,
) {
    let status = done.name();
    let cmd = if set.flags.compare_cas.is_some() { "cas" } else { meta_cmd(set.mode) };
    let expiry = super::expiry(set.flags.update_ttl_secs.unwrap_or(0), now_ms);
    let stored = session.meta_key(set.key, set.flags.base64_key);
    let key = crate::keyspace::decode(stored).map_or(set.key, |(_, k)| k).to_vec();
    let cfd = session.conn_number;
    let event = StoreEvent { key: &key, status, cmd, expiry, size: set.value.len(), cfd };
    item_store(memcache, &event, now_ms);
}
