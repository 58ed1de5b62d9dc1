//! Parse outcomes and the exact error texts memcached sends.
//!
//! Every `CLIENT_ERROR`/`SERVER_ERROR` reason below was checked against memcached's
//! `proto_text.c`; the constants are the reason only, without the `CLIENT_ERROR ` prefix
//! and the `\r\n`.

use std::fmt;

/// Why [`crate::parse_request`] produced no request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// More bytes are needed; not a failure. Call again with the same bytes plus more.
    Incomplete,
    /// The client made a mistake that leaves the stream framed: send `reply` (unless
    /// `noreply`), then drop `skip` bytes.
    ///
    /// `skip` may be larger than the buffer: a rejected data block is swallowed as it
    /// arrives (memcached's `conn_swallow`), so the caller discards the rest when it comes.
    /// `noreply` is set when a text command ended in `noreply` before the error was found:
    /// memcached then suppresses even the error (`out_string`). Meta commands always report
    /// errors.
    Invalid { skip: usize, reply: ErrorReply, noreply: bool },
    /// A data block over [`crate::Limits::value_len_max`] for a command whose refusal also
    /// removes the key's old item, as memcached's does (text `set`; `ms` in every mode):
    /// send `SERVER_ERROR object too large for cache` unless `noreply`, drop `skip` bytes as
    /// for `Invalid`, and delete the key found at `key_start..key_start + key_len` of the
    /// parsed buffer (base64, to be decoded, if `base64_key`). A failed overwrite must
    /// never leave the old value to be read. Other storage commands keep the old item and
    /// get `Invalid`.
    TooLarge { skip: usize, noreply: bool, key_start: usize, key_len: usize, base64_key: bool },
    /// Hostile or unframeable input (binary-protocol magic, an HTTP request line, a line too
    /// long): hang up without a reply, as memcached does.
    Close,
}

/// One of memcached's three error lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorReply {
    /// `ERROR`: an unknown command, or a known one with the wrong number of tokens.
    Error,
    /// `CLIENT_ERROR <reason>`: the input does not conform to the protocol.
    ClientError(&'static str),
    /// `SERVER_ERROR <reason>`: the server cannot carry the command out.
    ServerError(&'static str),
}

impl ErrorReply {
    /// Appends the full line, `\r\n` included.
    pub fn compose(&self, buf: &mut Vec<u8>) {
        match self {
            ErrorReply::Error => buf.extend_from_slice(b"ERROR"),
            ErrorReply::ClientError(reason) => {
                buf.extend_from_slice(b"CLIENT_ERROR ");
                buf.extend_from_slice(reason.as_bytes());
            }
            ErrorReply::ServerError(reason) => {
                buf.extend_from_slice(b"SERVER_ERROR ");
                buf.extend_from_slice(reason.as_bytes());
            }
        }
        buf.extend_from_slice(b"\r\n");
    }
}

impl fmt::Display for ErrorReply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorReply::Error => f.write_str("ERROR"),
            ErrorReply::ClientError(reason) => write!(f, "CLIENT_ERROR {reason}"),
            ErrorReply::ServerError(reason) => write!(f, "SERVER_ERROR {reason}"),
        }
    }
}

/// Why [`crate::parse_response`] produced no response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResponseError {
    /// More bytes are needed; not a failure.
    Incomplete,
    /// The server sent something that is not a memcached response; the connection cannot
    /// be trusted any more.
    Malformed { reason: &'static str },
}

/// Wrong key length, a number that does not parse, or a bad base64 key in `me`.
pub const BAD_FORMAT: &str = "bad command line format";
/// `delete` with arguments other than the legacy `0` and `noreply`.
pub const BAD_DELETE_FORMAT: &str = "bad command line format.  Usage: delete <key> [noreply]";
/// The data block is not followed by `\r\n`.
pub const BAD_DATA_CHUNK: &str = "bad data chunk";
/// A data block longer than [`crate::Limits::value_len_max`], or a value over the store's
/// item size (a `SERVER_ERROR`).
pub const TOO_LARGE: &str = "object too large for cache";
/// A write the store refused for want of memory (a `SERVER_ERROR`): storage commands.
pub const OUT_OF_MEMORY_STORING: &str = "out of memory storing object";
/// A write the store refused for want of memory (a `SERVER_ERROR`): `incr`/`decr` and the
/// meta commands other than `ms`.
pub const OUT_OF_MEMORY: &str = "out of memory";
/// `incr`/`decr`/`ma` on a value that is not a decimal u64.
pub const NOT_NUMERIC: &str = "cannot increment or decrement non-numeric value";
/// `flush_all` while `-F` disables it.
pub const FLUSH_DISABLED: &str = "flush_all not allowed";
/// `stats detail` without `on`, `off` or `dump`.
pub const STATS_DETAIL_USAGE: &str = "usage: stats detail on|off|dump";
/// `stats cachedump` with fewer than two arguments.
pub const BAD_COMMAND_LINE: &str = "bad command line";
/// `stats cachedump` of a class number memcached could never have.
pub const ILLEGAL_SLAB_ID: &str = "Illegal slab id";
/// `stats cachedump`, which memcached refuses when item dumps are disabled (`-X`).
pub const STATS_CACHEDUMP: &str = "stats cachedump not allowed";
/// `shutdown` with an argument other than `graceful` (when shutdown is enabled).
pub const BAD_SHUTDOWN_MODE: &str = "invalid shutdown mode";
/// `touch`, `gat`, `gats` or `flush_all` with an exptime that is not a number.
pub const BAD_EXPTIME: &str = "invalid exptime argument";
/// `incr`/`decr` with a delta that is not an unsigned 64-bit number.
pub const BAD_DELTA: &str = "invalid numeric delta argument";
/// A multiget with more than [`crate::Limits::keys_per_get_max`] keys (ours, when a bound
/// is configured; memcached has none, nor has the default).
pub const TOO_MANY_KEYS: &str = "too many keys";
/// A key containing `\r` (ours: memcached would store it, but a key must never hold CR).
pub const BAD_KEY: &str = "bad command line format";
/// Meta: a flag letter seen twice (or a byte >= 127 where a flag should be).
pub const DUPLICATE_FLAG: &str = "duplicate flag";
/// Meta: a flag letter memcached does not know.
pub const INVALID_FLAG: &str = "invalid flag";
/// Meta `md`/`ma`: any flag problem (memcached does not say which).
pub const INVALID_OR_DUPLICATE_FLAG: &str = "invalid or duplicate flag";
/// Meta: `N`, `T`, `R`, `C` or `E` with a token that is not a number.
pub const BAD_TOKEN: &str = "bad token in command line format";
/// Meta: `J` with a token that is not an unsigned 64-bit number.
pub const BAD_INITIAL: &str = "invalid numeric initial value";
/// Meta: `D` with a token that is not an unsigned 64-bit number.
pub const BAD_DELTA_TOKEN: &str = "invalid numeric delta value";
/// Meta: `M` whose token is not exactly one character.
pub const BAD_MODE_LEN: &str = "incorrect length for M token";
/// Meta `ms`: a mode other than E, A, P, R or S.
pub const BAD_MS_MODE: &str = "invalid mode for ms M token";
/// Meta `ma`: a mode other than I, +, D or -.
pub const BAD_MA_MODE: &str = "invalid mode for ma M token";
/// Meta: an `O` token (letter included) longer than 32 bytes.
pub const OPAQUE_TOO_LONG: &str = "opaque token too long";
/// Meta `mg`: more than 20 tokens in the line.
pub const MG_TOO_MANY_FLAGS: &str = "options flags are too long";
/// Meta `ms`/`md`/`ma`: more than 20 tokens in the line.
pub const TOO_MANY_FLAGS: &str = "options flags too long";
/// Meta `mg`/`ms` with the `b` flag and a key that is not valid base64.
pub const BAD_BASE64_KEY: &str = "error decoding key";
