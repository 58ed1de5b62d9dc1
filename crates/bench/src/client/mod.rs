//! Requests on the wire and replies checked: one module per protocol, all built on the
//! project's codecs (`proto-memcache`, `proto-resp`).
//!
//! ```text
//!   workload::Op + key ids --compose--> bytes        (no allocation: keys are formatted
//!                                                      into the thread's reusable buffers)
//!   bytes --parse--> Parsed::Reply { tally, error, used } | Incomplete | Broken
//!                    tally: hits, misses, corrupt (every returned value is checked)
//! ```
//!
//! A multiget's items come back in request order with misses left out (memcached text, meta
//! with `q` + `mn`), or one per key (RESP MGET); [`KeyCursor`] walks the requested keys
//! alongside and counts the ones skipped as misses.

pub mod family;
pub mod geo;
mod memcache;
mod meta;
mod resp;
pub mod stream;

use crate::{
    value,
    workload::{KeyFormat, OpKind},
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// memcached text: `get k1 k2 ...`, `set`.
    Memcache,
    /// memcached meta: `mg` (a multiget is `mg .. q` per key then `mn`), `ms`.
    Meta,
    /// Redis: GET, MGET, SET (or a data type's commands with `--structure`: `family`).
    Resp,
}

impl Protocol {
    pub fn parse(text: &str) -> Result<Protocol, String> {
        match text {
            "memcache" | "memcache_text" | "text" => Ok(Protocol::Memcache),
            "meta" | "memcache_meta" => Ok(Protocol::Meta),
            "resp" | "redis" => Ok(Protocol::Resp),
            _ => Err(format!("--protocol {text}: want memcache, meta or resp")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Memcache => "memcache",
            Protocol::Meta => "meta",
            Protocol::Resp => "resp",
        }
    }
}

/// Errors, by kind. Each is counted and printed; none is ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// `SERVER_ERROR ...` or a RESP `-ERR`/`-OOM` ... reply.
    ServerError,
    /// `CLIENT_ERROR ...`: the server says we sent something wrong.
    ClientError,
    /// memcached's bare `ERROR` (unknown command).
    Error,
    /// A set that was not stored (`NOT_STORED`, `NS`, a RESP null).
    NotStored,
    /// A reply that does not fit the request or the protocol: the stream can no longer be
    /// trusted, so the connection is closed.
    Protocol,
    /// The connection failed or the server closed it.
    Connection,
    /// A Redis Cluster redirect that could not be followed: too many for one request, an
    /// unreadable -MOVED/-ASK, or a target node that cannot be reached.
    Redirect,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 7] = [
        ErrorKind::ServerError,
        ErrorKind::ClientError,
        ErrorKind::Error,
        ErrorKind::NotStored,
        ErrorKind::Protocol,
        ErrorKind::Connection,
        ErrorKind::Redirect,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::ServerError => "server_error",
            ErrorKind::ClientError => "client_error",
            ErrorKind::Error => "error",
            ErrorKind::NotStored => "not_stored",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Connection => "connection",
            ErrorKind::Redirect => "redirect",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// What the keys of one reply came to.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    pub hits: u32,
    pub misses: u32,
    /// Values no writer could have produced for the key (also counted as misses: the data
    /// the client wanted did not arrive).
    pub corrupt: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    Reply {
        tally: Tally,
        error: Option<ErrorKind>,
        used: usize,
    },
    Incomplete,
    /// The reply is malformed or does not answer the request.
    Broken(&'static str),
}

/// A set's version and length (a get has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetArgs {
    pub version: u32,
    pub value_len: usize,
    pub ttl_secs: u32,
}

/// Reusable buffers for composing: the keys of a request side by side (with where each
/// ends, since keys may differ in length), and a value.
#[derive(Debug, Default)]
pub struct Scratch {
    key_bytes: Vec<u8>,
    key_ends: Vec<usize>,
    value: Vec<u8>,
}

impl Scratch {
    fn keys(&mut self, ids: &[u64], format: &KeyFormat) -> impl Iterator<Item = &[u8]> + Clone {
        self.key_bytes.clear();
        self.key_ends.clear();
        for &id in ids {
            self.key_bytes.extend_from_slice(format.key(id).as_bytes());
            self.key_ends.push(self.key_bytes.len());
        }
        let bytes = &self.key_bytes;
        let starts = std::iter::once(0).chain(self.key_ends.iter().copied());
        starts.zip(self.key_ends.iter().copied()).map(move |(start, end)| &bytes[start..end])
    }

    fn value(&mut self, key: u64, set: &SetArgs) -> &[u8] {
        self.value.clear();
        value::write(key, set.version, set.value_len, &mut self.value);
        &self.value
    }
}

/// Appends the request for `kind` on `keys` (one key for a set).
pub fn compose(
    protocol: Protocol,
    kind: OpKind,
    keys: &[u64],
    set: Option<SetArgs>,
    format: &KeyFormat,
    scratch: &mut Scratch,
    out: &mut Vec<u8>,
) {
    match (kind, set) {
        (OpKind::Get, _) => match protocol {
            Protocol::Memcache => memcache::compose_get(keys, format, out),
            Protocol::Meta => meta::compose_get(keys, format, scratch, out),
            Protocol::Resp => resp::compose_get(keys, format, out),
        },
        (OpKind::Set, Some(set)) => {
            assert_eq!(keys.len(), 1, "a set has one key");
            match protocol {
                Protocol::Memcache => memcache::compose_set(keys[0], &set, format, scratch, out),
                Protocol::Meta => meta::compose_set(keys[0], &set, format, scratch, out),
                Protocol::Resp => resp::compose_set(keys[0], &set, format, scratch, out),
            }
        }
        (OpKind::Set, None) => panic!("a set needs its value arguments"),
    }
}

/// Parses the reply to a request of `kind` on `keys` from the front of `input`.
pub fn parse<I>(
    protocol: Protocol,
    kind: OpKind,
    keys: I,
    format: &KeyFormat,
    input: &[u8],
) -> Parsed
where
    I: Iterator<Item = u64> + Clone,
{
    match (protocol, kind) {
        (Protocol::Memcache, OpKind::Get) => memcache::parse_get(keys, format, input),
        (Protocol::Memcache, OpKind::Set) => memcache::parse_set(input),
        (Protocol::Meta, OpKind::Get) => meta::parse_get(keys, format, input),
        (Protocol::Meta, OpKind::Set) => meta::parse_set(input),
        (Protocol::Resp, OpKind::Get) => resp::parse_get(keys, format, input),
        (Protocol::Resp, OpKind::Set) => resp::parse_set(input),
    }
}

/// Walks the requested keys while the items of a reply come in.
struct KeyCursor<'f, I> {
    keys: I,
    format: &'f KeyFormat,
    tally: Tally,
}

impl<'f, I: Iterator<Item = u64>> KeyCursor<'f, I> {
    fn new(keys: I, format: &'f KeyFormat) -> Self {
        KeyCursor { keys, format, tally: Tally::default() }
    }

    /// An item for `key` arrived: keys asked before it were misses; check its value.
    fn item(&mut self, key: &[u8], data: &[u8]) -> Result<(), &'static str> {
        for id in self.keys.by_ref() {
            if self.format.is_key(id, key) {
                self.value(id, data);
                return Ok(());
            }
            self.tally.misses += 1;
        }
        Err("a value for a key that was not asked for")
    }

    /// The next key's item arrived (a protocol that answers every key in order).
    fn next_value(&mut self, data: Option<&[u8]>) -> Result<(), &'static str> {
        let id = self.keys.next().ok_or("more values than keys")?;
        match data {
            Some(data) => self.value(id, data),
            None => self.tally.misses += 1,
        }
        Ok(())
    }

    fn value(&mut self, id: u64, data: &[u8]) {
        check_value(&mut self.tally, id, data);
    }

    /// The reply ended: keys not answered were misses.
    fn finish(mut self) -> Tally {
        self.tally.misses += self.keys.count() as u32;
        self.tally
    }
}

/// Counts a value returned for `id`: a hit, or corrupt (and a miss) when no writer could
/// have produced it.
fn check_value(tally: &mut Tally, id: u64, data: &[u8]) {
    if value::is_valid(id, data) {
        tally.hits += 1;
    } else {
        tally.corrupt += 1;
        tally.misses += 1;
    }
}

#[cfg(test)]
mod tests;
