//! CONFIG GET / SET / RESETSTAT / REWRITE.
//!
//! CONFIG GET reports Redis's names for the settings Spinel has. Those an operator tunes
//! while running change at run time: `maxmemory` (the store's limit, as memcached's
//! `cache_memlimit`) and `maxmemory-policy` (whether a full store evicts or refuses),
//! `timeout` (idle connections), `maxclients`, the slow log's and latency monitor's
//! thresholds, `requirepass`, `protected-mode`, and the TLS port's files, client
//! certificates and protocols (read again at once, through [`crate::ServerControl`]). The
//! others are fixed at start (the listeners, the threads), so CONFIG SET accepts them only
//! with their current value (clients and test harnesses commonly send `CONFIG SET save ""`
//! or `appendonly no`) and otherwise answers with Redis's error for an immutable setting.
//! A few more are checked and kept without effect (`config_kept`: `save`,
//! `repl-backlog-size`, `maxmemory-clients` ...), so that a CONFIG SET naming them with
//! others is not refused as a whole.
//!
//! CONFIG SET checks as Redis 7 does, in three passes over its pairs: names (unknown,
//! immutable, duplicate), then values, then applies them, so a bad pair changes nothing.

use super::{
    config_kept as kept,
    glob::{self, Case},
    Ctx,
};
use std::sync::atomic::Ordering::Relaxed;

use crate::{Shared, MAXMEMORY_POLICIES};

/// How a parameter's values are checked and applied in CONFIG SET.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Fixed; a byte count that may be written with a unit (`64mb`).
    Memory,
    /// Fixed; compared as text, ignoring ASCII case.
    Text,
    /// Fixed in Redis too (`IMMUTABLE_CONFIG`): refused whatever the value.
    Immutable,
    /// `maxmemory`: settable.
    MaxMemory,
    /// `maxmemory-policy`: settable.
    Policy,
    /// `spinel-noevict-dbs`: databases never evicted (Spinel's; see `crate::noevict`).
    NoEvictDbs,
    /// `spinel-noevict-prefixes`: key prefixes never evicted.
    NoEvictPrefixes,
    /// `requirepass`: settable, any bytes (empty: no password).
    Password,
    /// `protected-mode`: settable, yes or no.
    ProtectedMode,
    /// A settable integer within bounds, stored by its setter.
    Number { set: fn(&Shared, i64), min: i64, max: i64 },
    /// `maxclients`: settable, 1 to 2^32-1, if the process can hold that many connections.
    MaxClients,
    /// The TLS port's `tls-*` settings the server reads its files with (see
    /// [`crate::ServerControl`]).
    Tls,
    /// `notify-keyspace-events`: settable, Redis's class letters.
    KeyspaceEvents,
    /// `dir`, `dbfilename`: never settable at run time (a client must not choose where
    /// the server writes), as Redis 7's protected configs.
    Protected,
    /// Checked and kept, not acted on (see `config_kept`).
    Kept,
    /// `port`: the listeners are fixed at start. Another port is refused: with Redis's
    /// error for a port that cannot be listened on when it cannot be (checked by binding
    /// it), else as immutable.
    Port,
}

/// Reads a parameter's current value.
type Read = fn(&Shared) -> String;

/// A kept parameter's entry (see `config_kept`), under its name or its alias.
macro_rules! kept {
    ($name:literal) => {
        kept!($name, $name)
    };
    ($shown:literal, $name:literal) => {
        ($shown, Kind::Kept, |s| kept::value(s, $name))
    };
}

/// Every parameter CONFIG knows, with how to read its value.
const PARAMETERS: &[(&str, Kind, Read)] = &[
    ("aclfile", Kind::Immutable, |s| {
        s.redis.aclfile.as_ref().map(|p| p.display().to_string()).unwrap_or_default()
    }),
    (
        "acllog-max-len",
        Kind::Number { set: |s, n| s.redis.acl_log.set_max_len(n as usize), min: 0, max: i64::MAX },
        |s| s.redis.acl_log.max_len().to_string(),
    ),
    ("appendonly", Kind::Text, |_| "no".into()),
    ("bind", Kind::Text, |s| s.core.settings.listen.replace(',', " ")),
    (
        "busy-reply-threshold",
        Kind::Number { set: set_busy_threshold, min: 0, max: i64::MAX },
        |s| s.redis.scripts.busy_threshold_ms.load(Relaxed).to_string(),
    ),
    kept!("client-query-buffer-limit"),
    ("cluster-config-file", Kind::Immutable, |s| {
        s.redis.cluster.get().map_or_else(|| "nodes.conf".into(), |cluster| cluster.file_name())
    }),
    ("cluster-enabled", Kind::Immutable, |s| {
        if s.redis.cluster.get().is_some() { "yes" } else { "no" }.into()
    }),
    ("daemonize", Kind::Immutable, |_| "no".into()),
    ("databases", Kind::Immutable, |_| crate::keyspace::DATABASES.to_string()),
    ("dbfilename", Kind::Protected, |s| s.core.settings.dbfilename.clone()),
    // Absolute, as Redis shows it (it changes into `dir` at start).
    ("dir", Kind::Protected, |s| {
        let dir = &s.core.settings.dir;
        std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone()).display().to_string()
    }),
    ("io-threads", Kind::Immutable, |s| s.core.settings.threads.to_string()),
    kept!("key-load-delay"),
    (
        "latency-monitor-threshold",
        Kind::Number {
            set: |s, n| s.redis.slowlog.latency_threshold_ms.store(n as u64, Relaxed),
            min: 0,
            max: i64::MAX,
        },
        |s| s.redis.slowlog.latency_threshold_ms.load(Relaxed).to_string(),
    ),
    // Redis 7's alias of busy-reply-threshold.
    ("lua-time-limit", Kind::Number { set: set_busy_threshold, min: 0, max: i64::MAX }, |s| {
        s.redis.scripts.busy_threshold_ms.load(Relaxed).to_string()
    }),
    ("maxclients", Kind::MaxClients, |s| s.core.max_connections().to_string()),
    ("maxmemory", Kind::MaxMemory, |s| s.core.maxmemory_bytes().to_string()),
    kept!("maxmemory-clients"),
    ("maxmemory-policy", Kind::Policy, |s| s.core.maxmemory_policy().into()),
    kept!("maxmemory-samples"),
    ("notify-keyspace-events", Kind::KeyspaceEvents, |s| {
        super::keyevents::format_flags(s.redis.keyspace_events.flags())
    }),
    ("port", Kind::Port, |s| s.core.settings.resp_port.to_string()),
    ("protected-mode", Kind::ProtectedMode, super::auth::protected_mode),
    ("proto-max-bulk-len", Kind::Memory, |_| super::PROTO_MAX_BULK_LEN.to_string()),
    kept!("repl-backlog-size"),
    // The primary this server follows (`REPLICAOF`), as `host port`; empty for none.
    ("replicaof", Kind::Immutable, crate::repl::master_text),
    ("requirepass", Kind::Password, super::auth::password),
    kept!("save"),
    ("slaveof", Kind::Immutable, crate::repl::master_text),
    // Spinel's own: shown only when named exactly (not by `CONFIG GET *`).
    ("spinel-noevict-dbs", Kind::NoEvictDbs, |s| s.core.noevict.dbs_text()),
    ("spinel-noevict-prefixes", Kind::NoEvictPrefixes, |s| s.core.noevict.prefixes_text()),
    (
        "slowlog-log-slower-than",
        Kind::Number {
            set: |s, n| s.redis.slowlog.slower_than_us.store(n, Relaxed),
            min: -1,
            max: i64::MAX,
        },
        |s| s.redis.slowlog.slower_than_us.load(Relaxed).to_string(),
    ),
    (
        "slowlog-max-len",
        Kind::Number {
            set: |s, n| s.redis.slowlog.max_len.store(n as usize, Relaxed),
            min: 0,
            max: i64::MAX,
        },
        |s| s.redis.slowlog.max_len.load(Relaxed).to_string(),
    ),
    ("tcp-backlog", Kind::Immutable, |s| s.core.settings.backlog.to_string()),
    (
        "timeout",
        Kind::Number {
            set: |s, n| s.core.set_idle_timeout_secs(n as u64),
            min: 0,
            max: i32::MAX as i64,
        },
        |s| s.core.idle_timeout_secs().to_string(),
    ),
    ("tls-auth-clients", Kind::Tls, |s| tls_parameter(s, "tls-auth-clients")),
    ("tls-ca-cert-dir", Kind::Text, |_| String::new()),
    ("tls-ca-cert-file", Kind::Tls, |s| tls_parameter(s, "tls-ca-cert-file")),
    ("tls-cert-file", Kind::Tls, |s| tls_parameter(s, "tls-cert-file")),
    ("tls-ciphers", Kind::Text, |_| String::new()),
    ("tls-ciphersuites", Kind::Text, |_| String::new()),
    ("tls-client-cert-file", Kind::Text, |_| String::new()),
    ("tls-client-key-file", Kind::Text, |_| String::new()),
    ("tls-client-key-file-pass", Kind::Text, |_| String::new()),
    ("tls-cluster", Kind::Text, |_| "no".into()),
    ("tls-dh-params-file", Kind::Text, |_| String::new()),
    ("tls-key-file", Kind::Tls, |s| tls_parameter(s, "tls-key-file")),
    ("tls-key-file-pass", Kind::Text, |_| String::new()),
    ("tls-port", Kind::Text, |s| tls_parameter(s, "tls-port")),
    ("tls-prefer-server-ciphers", Kind::Text, |_| "no".into()),
    ("tls-protocols", Kind::Tls, |s| tls_parameter(s, "tls-protocols")),
    ("tls-replication", Kind::Text, |_| "no".into()),
    ("tls-session-cache-size", Kind::Text, |_| "20480".into()),
    ("tls-session-cache-timeout", Kind::Text, |_| "300".into()),
    ("tls-session-caching", Kind::Text, |_| "yes".into()),
    (
        "tracking-table-max-keys",
        Kind::Number {
            // Lowering it evicts (with invalidations) at once, as Redis's cron would.
            set: |s, n| {
                s.redis.tracking.set_max_keys(n as usize);
                s.redis.tracking.limit(&s.redis.pubsub, usize::MAX);
            },
            min: 0,
            max: i64::MAX,
        },
        |s| s.redis.tracking.max_keys().to_string(),
    ),
    kept!("hash-max-listpack-entries"),
    kept!("hash-max-listpack-value"),
    kept!("hash-max-ziplist-entries", "hash-max-listpack-entries"),
    kept!("hash-max-ziplist-value", "hash-max-listpack-value"),
    kept!("latency-tracking"),
    kept!("latency-tracking-info-percentiles"),
    kept!("list-compress-depth"),
    kept!("list-max-listpack-size"),
    kept!("list-max-ziplist-size", "list-max-listpack-size"),
    kept!("rdb-key-save-delay"),
    kept!("replica-read-only"),
    kept!("slave-read-only", "replica-read-only"),
    kept!("sanitize-dump-payload"),
    kept!("set-max-intset-entries"),
    kept!("stream-node-max-bytes"),
    kept!("stream-node-max-entries"),
    kept!("zset-max-listpack-entries"),
    kept!("zset-max-listpack-value"),
    kept!("zset-max-ziplist-entries", "zset-max-listpack-entries"),
    kept!("zset-max-ziplist-value", "zset-max-listpack-value"),
];

/// `busy-reply-threshold` (`lua-time-limit`): a script's time before other clients get BUSY.
fn set_busy_threshold(shared: &Shared, ms: i64) {
    shared.redis.scripts.busy_threshold_ms.store(ms as u64, Relaxed);
}

/// A `tls-*` value from the server (Redis's defaults without one: no TLS port).
fn tls_parameter(shared: &Shared, name: &str) -> String {
    match shared.redis.control.get() {
        Some(control) => control.tls_parameter(name),
        None if name == "tls-port" => "0".into(),
        None if name == "tls-auth-clients" => "yes".into(),
        None => String::new(),
    }
}

pub(super) fn config_resetstat(ctx: &mut Ctx<'_>) {
    ctx.shared.reset_totals();
    ctx.reply().ok();
}

/// Parameter `name`'s value as CONFIG GET shows it; `None` for a name CONFIG lacks.
pub(super) fn current_value(shared: &Shared, name: &str) -> Option<String> {
    match PARAMETERS.iter().find(|(n, ..)| *n == name) {
        Some((_, _, read)) => Some(read(shared)),
        None => kept::find(name).map(|found| kept::value(shared, found.name)),
    }
}

/// Every parameter matching any of the patterns (case-insensitive), each once; a hidden
/// one only when a pattern is its exact name. A pattern without glob characters names
/// its parameter as given (`CONFIG GET MAXMEMORY` answers `MAXMEMORY`), as in Redis.
pub(super) fn config_get(ctx: &mut Ctx<'_>) {
    let patterns: Vec<&[u8]> = (2..ctx.argc()).map(|i| ctx.arg(i)).collect();
    let shared = ctx.shared;
    let mut found: Vec<(&[u8], String)> = PARAMETERS
        .iter()
        .filter_map(|(name, _, read)| {
            let shown = shown_name(&patterns, name)?;
            Some((shown, read(shared)))
        })
        .collect();
    for absent in super::config_absent::ABSENT {
        for name in std::iter::once(absent.name).chain(absent.alias) {
            if let Some(shown) = shown_name(&patterns, name) {
                found.push((shown, kept::value(shared, absent.name)));
            }
        }
    }
    let mut reply = ctx.reply();
    reply.map(found.len());
    for (name, value) in found {
        reply.bulk(name);
        reply.bulk(value.as_bytes());
    }
}

/// Spinel's own parameters start with this; no Redis parameter does.
const SPINEL_PREFIX: &str = "spinel-";

/// How CONFIG GET shows parameter `name` for `patterns`: as the first exact pattern that
/// names it is written, else by its name if a glob matches it; `None` if nothing does.
fn shown_name<'a>(patterns: &[&'a [u8]], name: &'static str) -> Option<&'a [u8]> {
    let is_glob = |p: &[u8]| p.iter().any(|b| matches!(b, b'*' | b'?' | b'['));
    let exact = patterns.iter().find(|p| !is_glob(p) && p.eq_ignore_ascii_case(name.as_bytes()));
    if let Some(given) = exact {
        return Some(given);
    }
    let hidden = kept::is_hidden(name) || name.starts_with(SPINEL_PREFIX);
    let globbed = !hidden
        && patterns
            .iter()
            .any(|p| is_glob(p) && glob::matches(p, name.as_bytes(), Case::Insensitive));
    globbed.then_some(name.as_bytes())
}

/// A change CONFIG SET checked and will apply.
enum Change {
    /// `maxmemory` in bytes (0: no limit).
    MaxMemory(u64),
    /// `maxmemory-policy`, a name from the table.
    Policy(&'static [u8]),
    /// Never-evict databases, as a mask (bit n: database n).
    NoEvictDbs(u16),
    NoEvictPrefixes(Vec<Vec<u8>>),
    Password(Vec<u8>),
    ProtectedMode(bool),
    Number(fn(&Shared, i64), i64),
    MaxClients(u64),
    /// A `tls-*` parameter's canonical name and value.
    Tls(&'static str, Vec<u8>),
    KeyspaceEvents(u32),
    /// A kept parameter's name and value as shown.
    Kept(&'static str, String),
    /// Another `port` (one that differs from the current).
    Port(u16),
}

/// Parameter/value pairs (the table checks that they are pairs).
pub(super) fn config_set(ctx: &mut Ctx<'_>) {
    let pairs: Vec<(&[u8], &[u8])> =
        (2..ctx.argc()).step_by(2).map(|i| (ctx.arg(i), ctx.arg(i + 1))).collect();
    let result = check_names(ctx.shared, &pairs)
        .and_then(|kinds| check_values(&pairs, &kinds))
        .and_then(|changes| apply(ctx.shared, &changes));
    match result {
        Ok(()) => {
            let names = pairs.iter().filter_map(|(name, _)| lookup(name).map(|(n, ..)| n));
            super::config_rewrite::note_changed(ctx.shared, names);
            ctx.reply().ok()
        }
        Err(message) => ctx.error(message),
    }
}

fn set_failed(name: &[u8], reason: &str) -> String {
    let name = String::from_utf8_lossy(name);
    format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}")
}

/// Redis's first pass: every name known, none immutable (here: fixed and given another
/// value), none twice. The first failure is the answer; names are shown as given.
fn check_names(shared: &Shared, pairs: &[(&[u8], &[u8])]) -> Result<Vec<Kind>, String> {
    let mut seen: Vec<&str> = Vec::with_capacity(pairs.len());
    let mut kinds = Vec::with_capacity(pairs.len());
    for (name, value) in pairs {
        let Some((canonical, kind, read)) = lookup(name) else {
            let shown = String::from_utf8_lossy(name);
            return Err(format!(
                "ERR Unknown option or number of arguments for CONFIG SET - '{shown}'"
            ));
        };
        if matches!(kind, Kind::Protected) {
            return Err(set_failed(name, "can't set protected config"));
        }
        // A fixed memory value is checked as a value first (the second pass), as Redis's
        // modifiable `proto-max-bulk-len` is; only a valid other value is refused here.
        let fixed = matches!(kind, Kind::Text)
            || matches!(kind, Kind::Memory) && bulk_len_check(value).is_ok();
        let immutable = read.is_none() || matches!(kind, Kind::Immutable);
        if immutable || fixed && read.is_some_and(|read| !same_value(kind, &read(shared), value)) {
            return Err(set_failed(name, "can't set immutable config"));
        }
        if seen.contains(&canonical) {
            return Err(set_failed(name, "duplicate parameter"));
        }
        seen.push(canonical);
        kinds.push(kind);
    }
    Ok(kinds)
}

/// Parameter `name` (any case): its canonical name, kind and reader; no reader for one
/// Redis fixes at start (`config_absent`'s immutable ones), which CONFIG SET refuses.
fn lookup(name: &[u8]) -> Option<(&'static str, Kind, Option<Read>)> {
    if let Some((canonical, kind, read)) =
        PARAMETERS.iter().find(|(n, ..)| n.as_bytes().eq_ignore_ascii_case(name))
    {
        return Some((canonical, *kind, Some(*read)));
    }
    let lower = String::from_utf8_lossy(name).to_ascii_lowercase();
    let absent = super::config_absent::ABSENT
        .iter()
        .find(|kept| kept.name == lower || kept.alias == Some(lower.as_str()))?;
    let read: Option<Read> = if absent.immutable { None } else { Some(|_| String::new()) };
    // Named as matched: Redis 7.0 finds duplicates by the name given, so a name and its
    // alias in one CONFIG SET are both applied, the later winning.
    let matched = if absent.name == lower { absent.name } else { absent.alias? };
    Some((matched, Kind::Kept, read))
}

/// One directive of a redis.conf (`--redis-conf`) that the server did not take as one of
/// its own options, applied at start as CONFIG SET applies it; the reason when refused
/// (Redis's, without CONFIG SET's prefix). A parameter Spinel fixes at start is accepted
/// with the value it has; one Redis fixes at start and Spinel has no use for is kept as
/// the file gives it (its value is shown, nothing acts on it).
pub fn set_at_start(shared: &Shared, name: &str, value: &str) -> Result<(), String> {
    if name.eq_ignore_ascii_case("replicaof") || name.eq_ignore_ascii_case("slaveof") {
        return crate::repl::configure_master(shared, value);
    }
    let Some((canonical, kind, read)) = lookup(name.as_bytes()) else {
        return Err("Bad directive or wrong number of arguments".into());
    };
    match (kind, read) {
        (Kind::Kept, None) => {
            kept::set(shared, canonical, value.to_string());
            Ok(())
        }
        (
            Kind::Text | Kind::Immutable | Kind::Memory | Kind::Protected | Kind::Port,
            Some(read),
        ) => {
            let current = read(shared);
            let same = match kind {
                Kind::Port | Kind::Protected => current == value,
                _ => same_value(kind, &current, value.as_bytes()),
            };
            if same {
                return Ok(());
            }
            Err(format!("Spinel runs with '{canonical} {current}', fixed at start"))
        }
        _ => {
            let pairs = [(name.as_bytes(), value.as_bytes())];
            let result = check_names(shared, &pairs)
                .and_then(|kinds| check_values(&pairs, &kinds))
                .and_then(|changes| apply(shared, &changes));
            result.map_err(|message| match message.split_once(" - ") {
                Some((_, reason)) if message.starts_with("ERR CONFIG SET failed") => reason.into(),
                _ => message.trim_start_matches("ERR ").to_string(),
            })
        }
    }
}

/// Redis's second pass: each settable value parsed, in order; names shown canonically.
fn check_values(pairs: &[(&[u8], &[u8])], kinds: &[Kind]) -> Result<Vec<Change>, String> {
    let mut changes = Vec::new();
    for ((name, value), kind) in pairs.iter().zip(kinds) {
        match kind {
            Kind::MaxMemory => match memory_bytes(value) {
                Some(bytes) => changes.push(Change::MaxMemory(bytes)),
                None => return Err(set_failed(b"maxmemory", "argument must be a memory value")),
            },
            Kind::Policy => {
                let Some(name) =
                    MAXMEMORY_POLICIES.iter().find(|p| p.as_bytes().eq_ignore_ascii_case(value))
                else {
                    let reason = format!(
                        "argument(s) must be one of the following: {}",
                        MAXMEMORY_POLICIES.join(", ")
                    );
                    return Err(set_failed(b"maxmemory-policy", &reason));
                };
                changes.push(Change::Policy(name.as_bytes()));
            }
            Kind::NoEvictDbs | Kind::NoEvictPrefixes => changes.push(noevict_change(*kind, value)?),
            Kind::Password => changes.push(Change::Password(value.to_vec())),
            Kind::ProtectedMode => {
                let on = match value.to_ascii_lowercase().as_slice() {
                    b"yes" => true,
                    b"no" => false,
                    _ => {
                        let reason = "argument must be 'yes' or 'no'";
                        return Err(set_failed(b"protected-mode", reason));
                    }
                };
                changes.push(Change::ProtectedMode(on));
            }
            Kind::Number { set, min, max } => {
                changes.push(Change::Number(*set, integer(name, value, *min, *max)?));
            }
            Kind::MaxClients => {
                let limit = integer(name, value, 1, u32::MAX.into())?;
                changes.push(Change::MaxClients(limit as u64));
            }
            Kind::Tls => changes.push(tls_change(name, value)?),
            Kind::KeyspaceEvents => match super::keyevents::parse_flags(value) {
                Some(flags) => changes.push(Change::KeyspaceEvents(flags)),
                None => {
                    let reason = "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.";
                    return Err(set_failed(b"notify-keyspace-events", reason));
                }
            },
            Kind::Kept => {
                // Named as given (an alias as the alias), in lower case, as Redis does.
                let given = String::from_utf8_lossy(name).to_ascii_lowercase();
                let kept = kept::find(&given).expect("a kept parameter is in the table");
                let shown = kept.check(value).map_err(|why| set_failed(given.as_bytes(), &why))?;
                changes.push(Change::Kept(kept.name, shown));
            }
            Kind::Port => changes.push(Change::Port(integer(name, value, 0, 65535)? as u16)),
            Kind::Memory => {
                bulk_len_check(value).map_err(|why| set_failed(b"proto-max-bulk-len", &why))?;
            }
            Kind::Text | Kind::Immutable | Kind::Protected => {}
        }
    }
    Ok(changes)
}

/// A never-evict mark's change (`crate::noevict`), checked.
fn noevict_change(kind: Kind, value: &[u8]) -> Result<Change, String> {
    if matches!(kind, Kind::NoEvictDbs) {
        let mask = crate::noevict::parse_dbs(value)
            .map_err(|why| set_failed(b"spinel-noevict-dbs", &why))?;
        return Ok(Change::NoEvictDbs(mask));
    }
    let prefixes = crate::noevict::parse_prefixes(value)
        .map_err(|why| set_failed(b"spinel-noevict-prefixes", &why))?;
    Ok(Change::NoEvictPrefixes(prefixes))
}

/// `proto-max-bulk-len`'s value check: a memory value from 1 MiB.
fn bulk_len_check(value: &[u8]) -> Result<String, String> {
    kept::memory_between(value, 1 << 20, i64::MAX)
}

/// An integer value as Redis checks one: parsed, then within its bounds.
fn integer(name: &[u8], value: &[u8], min: i64, max: i64) -> Result<i64, String> {
    let canonical = String::from_utf8_lossy(name).to_ascii_lowercase();
    let Some(n) = std::str::from_utf8(value).ok().and_then(|v| v.parse::<i64>().ok()) else {
        let reason = "argument couldn't be parsed into an integer";
        return Err(set_failed(canonical.as_bytes(), reason));
    };
    if !(min..=max).contains(&n) {
        let reason = format!("argument must be between {min} and {max} inclusive");
        return Err(set_failed(canonical.as_bytes(), &reason));
    }
    Ok(n)
}

/// A `tls-*` change; `tls-auth-clients` takes Redis's three words, the files any path
/// (reading them is the test).
fn tls_change(name: &[u8], value: &[u8]) -> Result<Change, String> {
    let canonical = PARAMETERS
        .iter()
        .map(|(n, ..)| *n)
        .find(|n| n.as_bytes().eq_ignore_ascii_case(name))
        .unwrap_or("tls-cert-file");
    let auth_words: [&[u8]; 3] = [b"no", b"yes", b"optional"];
    if canonical == "tls-auth-clients" && !auth_words.iter().any(|w| w.eq_ignore_ascii_case(value))
    {
        let reason = "argument(s) must be one of the following: no, yes, optional";
        return Err(set_failed(canonical.as_bytes(), reason));
    }
    Ok(Change::Tls(canonical, value.to_vec()))
}

/// The changes that can fail first, each before anything else changes: the room for more
/// connections, the memory limit (outside what the store can take), then the TLS files
/// (the memory limit is put back if they cannot be read).
fn apply(shared: &Shared, changes: &[Change]) -> Result<(), String> {
    for change in changes {
        if let Change::Port(port) = *change {
            check_port(shared, port)?;
        }
    }
    for change in changes {
        if let (Change::MaxClients(limit), Some(control)) = (change, shared.redis.control.get()) {
            control.allow_connections(*limit).map_err(|most| {
                let reason = format!(
                    "The operating system is not able to handle the specified number of \
                     clients, try with {most}"
                );
                set_failed(b"maxclients", &reason)
            })?;
        }
    }
    let memory_before = shared.core.maxmemory_bytes();
    for change in changes {
        if let Change::MaxMemory(bytes) = *change {
            set_maxmemory(shared, bytes)?;
        }
    }
    let tls: Vec<(&'static str, Vec<u8>)> = changes
        .iter()
        .filter_map(|c| match c {
            Change::Tls(name, value) => Some((*name, value.clone())),
            _ => None,
        })
        .collect();
    if let (false, Some(control)) = (tls.is_empty(), shared.redis.control.get()) {
        // Redis answers with one sentence and logs the reason; so does the server.
        if control.set_tls_parameters(&tls).is_err() {
            let _ = set_maxmemory(shared, memory_before);
            let reason = "Unable to update TLS configuration. Check server logs.";
            return Err(set_failed(tls[0].0.as_bytes(), reason));
        }
    }
    for change in changes {
        match change {
            Change::Policy(name) => {
                shared.core.set_maxmemory_policy(name);
            }
            Change::NoEvictDbs(mask) => shared.core.noevict.set_dbs(&shared.core.store, *mask),
            Change::NoEvictPrefixes(prefixes) => {
                shared.core.noevict.set_prefixes(&shared.core.store, prefixes.clone())
            }
            Change::Password(password) => super::auth::set_password(shared, password),
            Change::ProtectedMode(on) => super::auth::set_protected_mode(shared, *on),
            Change::Number(set, n) => set(shared, *n),
            Change::MaxClients(limit) => shared.core.set_max_connections(*limit),
            Change::KeyspaceEvents(flags) => shared.redis.keyspace_events.set_flags(*flags),
            Change::Kept(name, value) => kept::set(shared, name, value.clone()),
            Change::MaxMemory(_) | Change::Tls(..) | Change::Port(_) => {}
        }
    }
    Ok(())
}

/// CONFIG SET port: the current port is kept; another is refused. Redis's error for a
/// port it cannot listen on when binding it on the listen addresses fails, else Redis's
/// error for an immutable setting (Spinel's listeners are fixed at start).
fn check_port(shared: &Shared, port: u16) -> Result<(), String> {
    if port == shared.core.settings.resp_port {
        return Ok(());
    }
    let bindable =
        shared.core.settings.listen.split([',', ' ']).filter(|a| !a.is_empty()).all(|addr| {
            let addr = addr.trim_start_matches('-');
            std::net::TcpListener::bind((addr, port)).is_ok()
        });
    if !bindable {
        return Err(set_failed(b"port", "Unable to listen on this port. Check server logs."));
    }
    Err(set_failed(b"port", "can't set immutable config"))
}

/// `maxmemory` in bytes, 0 for none (the store at its ceiling).
fn set_maxmemory(shared: &Shared, bytes: u64) -> Result<(), String> {
    let result =
        if bytes == 0 { shared.core.lift_maxbytes() } else { shared.core.set_maxbytes(bytes) };
    // The store's figures are its share, after the connection buffers' reserve.
    let refused = |e| format!("the store cannot take a limit of {bytes} bytes: {e}");
    result.map_err(|e| set_failed(b"maxmemory", &refused(e)))
}

fn same_value(kind: Kind, current: &str, wanted: &[u8]) -> bool {
    match kind {
        Kind::Text | Kind::Immutable => current.as_bytes().eq_ignore_ascii_case(wanted),
        Kind::Memory => memory_bytes(wanted).is_some_and(|n| n.to_string() == current),
        Kind::MaxMemory
        | Kind::Policy
        | Kind::NoEvictDbs
        | Kind::NoEvictPrefixes
        | Kind::Password
        | Kind::ProtectedMode
        | Kind::Protected
        | Kind::Number { .. }
        | Kind::MaxClients
        | Kind::KeyspaceEvents
        | Kind::Kept
        | Kind::Port
        | Kind::Tls => false,
    }
}

/// Redis's `memtoull`: digits with an optional unit, `k`/`m`/`g` (powers of 1000) or
/// `kb`/`mb`/`gb` (powers of 1024), any case.
pub(super) fn memory_bytes(text: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?.to_ascii_lowercase();
    let digits_end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (digits, unit) = text.split_at(digits_end);
    let scale: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1 << 10,
        "m" => 1000 * 1000,
        "mb" => 1 << 20,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1 << 30,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(scale)
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
