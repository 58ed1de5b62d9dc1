//! Entry points for the fuzz targets in `crates/exec/fuzz` (built only with the `fuzzing`
//! feature, never in a release): the decoders of untrusted bytes, reached as a client or a
//! snapshot file reaches them.
//!
//! - RESTORE payloads ([`restore_payload`], [`seal_payload`]): `rdb.rs` and its packed
//!   encodings, then the stored form of what they held.
//! - Snapshot files ([`Server::restore_snapshot`], [`frame_snapshot`]).
//! - Collection encodings ([`Server::plant`], [`valid_encoding`]): bytes stored as a
//!   collection's value, then read and changed by the commands.
//!
//! A check that fails panics: that is how a fuzz target reports a finding.

use std::sync::Arc;

use proto_resp::{parse_command, Limits};
use store::{Config, Expiry, ManualClock, Store, ValueKind};

use values::rdb;

use crate::{
    owned::{encode_owned, own, valid_encoding as valid_kind},
    resp::{self, cluster},
    snapshot, Counters, Settings, Shared,
};

pub use values::rdb::{crc64, Value};

/// The Unix time the fuzzing server's clock stands at (fixed: runs repeat).
pub const NOW_MS: u64 = 1_700_000_000_000;

/// `body` with the footer RESTORE checks (RDB version and CRC-64), so that it gets past
/// the checksum to the decoder.
pub fn seal_payload(body: &[u8], version: u16) -> Vec<u8> {
    let mut payload = body.to_vec();
    payload.extend_from_slice(&version.to_le_bytes());
    payload.extend_from_slice(&rdb::crc64(&payload).to_le_bytes());
    payload
}

/// The newest RDB version RESTORE reads.
pub const RDB_VERSION: u16 = rdb::RDB_VERSION;

/// What RESTORE makes of `payload`: `None` where it answers an error. A value it accepts
/// must be stored as a valid encoding that reads back as the same value.
pub fn restore_payload(payload: &[u8]) -> Option<Value> {
    if !rdb::verify(payload) {
        return None;
    }
    let value = rdb::load(payload)?;
    let (kind, stored) = cluster::to_stored(value.clone());
    if kind != ValueKind::String {
        assert!(valid_kind(kind, &stored), "RESTORE stored a damaged {kind:?}");
        let again = encode_owned(&own(kind, &stored));
        assert_eq!(again.as_deref(), Some(&stored[..]), "the stored {kind:?} re-encodes");
    }
    Some(value)
}

/// A value with its members in one order (sets, hashes) so two can be compared.
pub fn normalized(value: &Value) -> Value {
    let mut value = value.clone();
    match &mut value {
        Value::Set(members) => members.sort(),
        Value::Hash(fields) => fields.sort(),
        Value::ZSet(members) => members.sort_by(|(a, a_score), (b, b_score)| {
            a_score.total_cmp(b_score).then_with(|| a.cmp(b))
        }),
        Value::String(_) | Value::List(_) | Value::Stream(_) => {}
    }
    value
}

/// Whether `value` is a collection encoding the commands write, for kind byte `kind`
/// (1 list, 2 hash, 3 set, 4 sorted set, as a snapshot record names them).
pub fn valid_encoding(kind: u8, value: &[u8]) -> bool {
    valid_kind(collection_kind(kind), value)
}

/// Reads `value` as a collection of kind byte `kind` with the decoders the commands use
/// (into the value kept outside the store, and encoded again), whatever the bytes: they
/// must neither panic nor allocate what a count claims. Returns [`valid_encoding`].
pub fn decode_any(kind: u8, value: &[u8]) -> bool {
    let kind_of = collection_kind(kind);
    let encoded = encode_owned(&own(kind_of, value));
    let valid = valid_encoding(kind, value);
    // (A valid hash whose fields have all expired reads as empty: no encoding.)
    if let Some(encoded) = encoded.filter(|_| valid) {
        assert!(valid_kind(kind_of, &encoded), "a valid {kind_of:?} re-encodes");
    }
    valid
}

fn collection_kind(kind: u8) -> ValueKind {
    match kind % 4 {
        0 => ValueKind::List,
        1 => ValueKind::Hash,
        2 => ValueKind::Set,
        _ => ValueKind::ZSet,
    }
}

/// One snapshot record: kind byte, flags, CAS, expiry (Unix ms, 0: none), key, value.
pub type Record<'a> = (u8, u32, u64, u64, &'a [u8], &'a [u8]);

/// A snapshot file holding `records`, with every checksum right.
pub fn frame_snapshot(records: &[Record<'_>]) -> Vec<u8> {
    let mut writer = snapshot::format::Writer::new(Vec::new(), NOW_MS).expect("in memory");
    for &(kind, flags, cas, expiry_ms, key, value) in records {
        writer.add((kind, flags, cas, expiry_ms), key, value).expect("in memory");
    }
    writer.finish().expect("in memory").0
}

/// A store and one client session on it, as a connection's worker has them, with a clock
/// that stands still at [`NOW_MS`].
pub struct Server {
    shared: Shared,
    counters: Arc<Counters>,
    session: resp::Session,
}

impl Default for Server {
    fn default() -> Server {
        Server::new()
    }
}

impl Server {
    pub fn new() -> Server {
        let clock = Arc::new(ManualClock::new(NOW_MS));
        let config = Config {
            memory_bytes: 8 << 20,
            memory_max_bytes: 64 << 20,
            clock,
            ..Config::default()
        };
        let store = Store::new(config).expect("a valid store config");
        let shared = Shared::new(store, Settings::default(), 1);
        let counters = shared.core.counters(0);
        Server { shared, counters, session: resp::Session::default() }
    }

    /// Runs one command; returns its reply.
    pub fn run(&mut self, args: &[&[u8]]) -> Vec<u8> {
        let mut wire = Vec::new();
        proto_resp::compose_command(args, &mut wire);
        let (command, _) = parse_command(&wire, &Limits::default()).expect("a composed command");
        let mut out = Vec::new();
        resp::execute(&self.shared, &self.counters, &mut self.session, &command, &mut out);
        out
    }

    /// Kills every script that runs past `ms` (the script-engine target's endless loops).
    pub fn kill_scripts_after(&mut self, ms: u64) {
        self.shared.redis.scripts.kill_after_ms.store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// Empties the store (between runs).
    pub fn flush(&mut self) {
        self.run(&[b"FLUSHALL"]);
    }

    /// Restores a snapshot file's bytes into the store, as the server does at start.
    pub fn restore_snapshot(&mut self, file: &[u8]) -> Result<snapshot::Outcome, String> {
        snapshot::restore_from(&self.shared, file)
    }

    /// Every stored key (a database's other than 0 with its prefix: see `keyspace`).
    pub fn keys(&self) -> Vec<Vec<u8>> {
        let mut keys = Vec::new();
        let mut cursor = 0;
        loop {
            cursor = self.shared.core.store.scan(cursor, 512, |key| keys.push(key.to_vec()));
            if cursor == 0 {
                return keys;
            }
        }
    }

    /// Loads an RDB file's bytes into the store, as the server does at start.
    pub fn load_rdb(&mut self, file: &[u8]) -> Result<snapshot::Outcome, String> {
        snapshot::load_rdb(&self.shared, || Ok(file))
    }

    /// Stores `value` as `key`'s collection of kind byte `kind` (see [`valid_encoding`])
    /// without checking it: what the commands must survive reading.
    pub fn plant(&mut self, key: &[u8], kind: u8, value: &[u8]) {
        let kind = collection_kind(kind);
        let _ = resp::restore_collection(&self.shared, key, kind, value.to_vec(), Expiry::Never);
    }
}

/// The body of a bulk string reply; `None` for any other reply.
pub fn bulk_body(reply: &[u8]) -> Option<&[u8]> {
    let rest = reply.strip_prefix(b"$")?;
    let header_end = rest.iter().position(|&b| b == b'\r')?;
    let len: usize = std::str::from_utf8(&rest[..header_end]).ok()?.parse().ok()?;
    rest.get(header_end + 2..header_end + 2 + len)
}

/// Commands of every collection family, reads first and then writes: what a key holding a
/// collection meets (those of other families answer WRONGTYPE at once).
const BATTERY: &[&[&[u8]]] = &[
    &[b"TYPE", b"@"],
    &[b"OBJECT", b"ENCODING", b"@"],
    &[b"DUMP", b"@"],
    &[b"LLEN", b"@"],
    &[b"LRANGE", b"@", b"0", b"-1"],
    &[b"LINDEX", b"@", b"-1"],
    &[b"LPOS", b"@", b"a"],
    &[b"HGETALL", b"@"],
    &[b"HGET", b"@", b"a"],
    &[b"HLEN", b"@"],
    &[b"HRANDFIELD", b"@", b"-3", b"WITHVALUES"],
    &[b"HSCAN", b"@", b"0"],
    &[b"HTTL", b"@", b"FIELDS", b"1", b"a"],
    &[b"SMEMBERS", b"@"],
    &[b"SCARD", b"@"],
    &[b"SISMEMBER", b"@", b"1"],
    &[b"SRANDMEMBER", b"@", b"-3"],
    &[b"SRANDMEMBER", b"@", b"3"],
    &[b"SINTER", b"@", b"@"],
    &[b"SSCAN", b"@", b"0"],
    &[b"ZRANGE", b"@", b"0", b"-1", b"WITHSCORES"],
    &[b"ZRANGEBYSCORE", b"@", b"-inf", b"+inf"],
    &[b"ZRANGE", b"@", b"[a", b"+", b"BYLEX"],
    &[b"ZCARD", b"@"],
    &[b"ZSCORE", b"@", b"a"],
    &[b"ZRANK", b"@", b"a"],
    &[b"ZRANDMEMBER", b"@", b"-3"],
    &[b"ZSCAN", b"@", b"0"],
    &[b"GEOPOS", b"@", b"a", b"b"],
    &[b"GEOHASH", b"@", b"a"],
    &[b"GEODIST", b"@", b"a", b"b", b"km"],
    &[b"GEORADIUS_RO", b"@", b"0", b"0", b"inf", b"m", b"WITHCOORD", b"WITHDIST", b"WITHHASH"],
    &[
        b"GEOSEARCH",
        b"@",
        b"FROMLONLAT",
        b"0",
        b"0",
        b"BYBOX",
        b"1e9",
        b"1e9",
        b"km",
        b"COUNT",
        b"2",
        b"ANY",
    ],
    &[b"SORT", b"@", b"ALPHA"],
    &[b"SORT", b"@"],
    &[b"SORT_RO", b"@", b"BY", b"nosort", b"DESC", b"LIMIT", b"1", b"2"],
    &[b"SORT", b"@", b"BY", b"@*", b"GET", b"#", b"GET", b"@*->a", b"ALPHA"],
    &[b"COPY", b"@", b"@copy"],
    &[b"RENAME", b"@copy", b"@moved"],
    &[b"SORT", b"@", b"ALPHA", b"GET", b"#", b"GET", b"@*", b"STORE", b"@sorted"],
    &[b"LPUSH", b"@", b"a"],
    &[b"RPOP", b"@", b"2"],
    &[b"LSET", b"@", b"0", b"b"],
    &[b"LREM", b"@", b"0", b"b"],
    &[b"LTRIM", b"@", b"1", b"-1"],
    &[b"HSET", b"@", b"a", b"1"],
    &[b"HDEL", b"@", b"b"],
    &[b"HINCRBY", b"@", b"n", b"1"],
    &[b"SADD", b"@", b"1", b"x"],
    &[b"SREM", b"@", b"2"],
    &[b"SPOP", b"@"],
    &[b"ZADD", b"@", b"1", b"a"],
    &[b"ZINCRBY", b"@", b"2", b"b"],
    &[b"ZREM", b"@", b"c"],
    &[b"ZPOPMIN", b"@"],
    &[b"GEOADD", b"@", b"CH", b"1", b"2", b"a", b"-180", b"-85.05112878", b"z"],
    &[b"GEORADIUSBYMEMBER", b"@", b"a", b"20000", b"km", b"STOREDIST", b"@geo"],
    &[b"GEOSEARCHSTORE", b"@geo", b"@", b"FROMMEMBER", b"z", b"BYRADIUS", b"0", b"m"],
    &[b"DUMP", b"@"],
    &[b"DEL", b"@", b"@moved", b"@sorted", b"@geo"],
];

impl Server {
    /// Runs [`BATTERY`] on `key` (`@` in it stands for the key); returns the reply to its
    /// first DUMP.
    pub fn exercise(&mut self, key: &[u8]) -> Vec<u8> {
        let mut first_dump = None;
        for command in BATTERY {
            let with_key = |arg: &&[u8]| match arg.strip_prefix(b"@") {
                Some(suffix) => [key, suffix].concat(),
                None => arg.to_vec(),
            };
            let args: Vec<Vec<u8>> = command.iter().map(with_key).collect();
            let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
            let reply = self.run(&args);
            if args[0] == b"DUMP" && first_dump.is_none() {
                first_dump = Some(reply);
            }
        }
        first_dump.unwrap_or_default()
    }
}
