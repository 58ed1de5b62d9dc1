//! Parse outcomes and the exact error texts Redis sends.
//!
//! Error texts are stored without the leading `-` and the trailing CRLF, code included
//! (`ERR ...`, `WRONGTYPE ...`), so they can go straight to [`crate::Reply::error`]. Each
//! was checked against the Redis source (`server.c` shared objects, `object.c`,
//! `t_string.c`, `db.c`, `networking.c`).

use std::fmt;

/// The result of a parse that did not produce a value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// More bytes are needed; not a failure. Call again with the same bytes plus more.
    Incomplete,
    /// The client made a mistake that leaves the stream framed: reply with `reason` and drop
    /// `skip` bytes. RESP never produces this today: Redis closes the connection on every
    /// framing error. The variant keeps the shape shared with the memcache codec.
    Invalid { skip: usize, reason: &'static str },
    /// Unframeable input: send `reply` (if talking to a client), then hang up.
    Close { reply: ProtocolError },
}

/// A framing error. For requests, [`ProtocolError::message`] is the reply Redis sends
/// before closing the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtocolError {
    /// No newline within `inline_len_max` bytes of an inline request.
    TooBigInline,
    /// An inline request with an unterminated quote, or a closing quote followed by a
    /// non-space.
    UnbalancedQuotes,
    /// No CR within `inline_len_max` bytes of a `*<count>` line.
    TooBigMbulkCount,
    /// `*<count>` that is not a number or exceeds `args_max`.
    InvalidMultibulkLength,
    /// No CR within `inline_len_max` bytes of a `$<len>` line.
    TooBigBulkCount,
    /// A multibulk element that does not start with `$`; holds the byte found instead.
    ExpectedDollar(u8),
    /// `$<len>` that is not a number, is negative or exceeds `bulk_len_max`.
    InvalidBulkLength,
    /// `*<count>` over [`crate::limits::UNAUTHENTICATED_ARGS_MAX`] from a client that has
    /// not logged in while a password is required.
    UnauthenticatedMultibulkLength,
    /// `$<len>` over [`crate::limits::UNAUTHENTICATED_BULK_LEN_MAX`] from such a client.
    UnauthenticatedBulkLength,
    /// Client side only: a reply that is not valid RESP. Never sent anywhere.
    BadReply(&'static str),
}

impl ProtocolError {
    /// The error reply text without `-` and CRLF, e.g. `ERR Protocol error: invalid bulk
    /// length`. Bytes, because `ExpectedDollar` carries whatever byte the client sent.
    pub fn message(&self) -> Vec<u8> {
        let mut text = b"ERR Protocol error: ".to_vec();
        match self {
            ProtocolError::TooBigInline => text.extend_from_slice(b"too big inline request"),
            ProtocolError::UnbalancedQuotes => {
                text.extend_from_slice(b"unbalanced quotes in request")
            }
            ProtocolError::TooBigMbulkCount => {
                text.extend_from_slice(b"too big mbulk count string")
            }
            ProtocolError::InvalidMultibulkLength => {
                text.extend_from_slice(b"invalid multibulk length")
            }
            ProtocolError::TooBigBulkCount => text.extend_from_slice(b"too big bulk count string"),
            ProtocolError::ExpectedDollar(byte) => {
                text.extend_from_slice(b"expected '$', got '");
                // Redis formats this with `%c` into a C string, so a NUL byte ends the text
                // right there; any other byte (CR and LF become spaces in `Reply::error`)
                // is followed by the closing quote.
                if *byte != 0 {
                    text.push(*byte);
                    text.push(b'\'');
                }
            }
            ProtocolError::InvalidBulkLength => text.extend_from_slice(b"invalid bulk length"),
            ProtocolError::UnauthenticatedMultibulkLength => {
                text.extend_from_slice(b"unauthenticated multibulk length")
            }
            ProtocolError::UnauthenticatedBulkLength => {
                text.extend_from_slice(b"unauthenticated bulk length")
            }
            ProtocolError::BadReply(why) => {
                text.extend_from_slice(b"bad reply: ");
                text.extend_from_slice(why.as_bytes());
            }
        }
        text
    }
}

impl fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.message()))
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Incomplete => f.write_str("incomplete input"),
            ParseError::Invalid { reason, .. } => f.write_str(reason),
            ParseError::Close { reply } => reply.fmt(f),
        }
    }
}

impl std::error::Error for ParseError {}

/// `shared.syntaxerr`.
pub const SYNTAX: &str = "ERR syntax error";
/// `getLongLongFromObjectOrReply` default message.
pub const NOT_INTEGER: &str = "ERR value is not an integer or out of range";
/// `getDoubleFromObjectOrReply` / `getLongDoubleFromObjectOrReply` default message.
pub const NOT_FLOAT: &str = "ERR value is not a valid float";
/// `incrDecrCommand` when the result leaves the i64 range.
pub const INCR_OVERFLOW: &str = "ERR increment or decrement would overflow";
/// `decrbyCommand` when the decrement is `i64::MIN` (negating it overflows).
pub const DECR_OVERFLOW: &str = "ERR decrement would overflow";
/// `incrbyfloatCommand` when the sum is NaN or infinite.
pub const INCR_NAN_OR_INF: &str = "ERR increment would produce NaN or Infinity";
/// `checkStringLength` (APPEND, SETRANGE; Spinel also for SET: a value over the item size).
pub const STRING_TOO_LONG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
/// `shared.oomerr`: a write refused for want of memory.
pub const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
/// `shared.wrongtypeerr`.
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
/// `selectCommand` (and MOVE, COPY, SWAPDB) with a bad index.
pub const DB_INDEX_OUT_OF_RANGE: &str = "ERR DB index is out of range";
/// `helloCommand` with a protocol version other than 2 or 3.
pub const NOPROTO: &str = "NOPROTO unsupported protocol version";
/// `shared.sameobjecterr` (COPY onto itself, MOVE into the same database).
pub const SAME_OBJECT: &str = "ERR source and destination objects are the same";
/// `shared.nokeyerr` (RENAME of a missing key).
pub const NO_SUCH_KEY: &str = "ERR no such key";

/// How many bytes of a user-supplied name Redis quotes in an error (`%.128s`).
const QUOTE_LEN_MAX: usize = 128;

/// `ERR wrong number of arguments for '<name>' command`; `name` is the lowercase full name
/// (`get`, `config|get`).
pub fn wrong_arity(name: &str) -> String {
    format!("ERR wrong number of arguments for '{name}' command")
}

/// `ERR invalid expire time in '<name>' command` (`set`, `getex`, `setex`, `expire`...).
pub fn invalid_expire_time(name: &str) -> String {
    format!("ERR invalid expire time in '{name}' command")
}

/// `ERR unknown command '<name>', with args beginning with: '<a>' '<b>' `.
///
/// Mirrors `commandCheckExistence`: the name is cut at 128 bytes; arguments are quoted one
/// by one, each followed by a space, while the quoted text stays under 128 bytes and each is
/// cut to the room left; `%s` stops at a NUL byte; CR and LF become spaces.
pub fn unknown_command<'a>(name: &[u8], args: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut text = b"ERR unknown command '".to_vec();
    text.extend_from_slice(c_str_prefix(name, QUOTE_LEN_MAX));
    text.extend_from_slice(b"', with args beginning with: ");
    let args_start = text.len();
    for arg in args {
        let used = text.len() - args_start;
        if used >= QUOTE_LEN_MAX {
            break;
        }
        text.push(b'\'');
        text.extend_from_slice(c_str_prefix(arg, QUOTE_LEN_MAX - used));
        text.extend_from_slice(b"' ");
    }
    map_newlines(&mut text);
    text
}

/// `ERR unknown subcommand '<sub>'. Try <CONTAINER> HELP.`
pub fn unknown_subcommand(container: &[u8], sub: &[u8]) -> Vec<u8> {
    let mut text = b"ERR unknown subcommand '".to_vec();
    text.extend_from_slice(c_str_prefix(sub, QUOTE_LEN_MAX));
    text.extend_from_slice(b"'. Try ");
    text.extend(c_str_prefix(container, usize::MAX).iter().map(u8::to_ascii_uppercase));
    text.extend_from_slice(b" HELP.");
    map_newlines(&mut text);
    text
}

/// What `%.<len>s` prints of `bytes`: at most `len` bytes, stopping at a NUL.
fn c_str_prefix(bytes: &[u8], len: usize) -> &[u8] {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len()).min(len);
    &bytes[..end]
}

/// Redis's `sdsmapchars(err, "\r\n", "  ")`: an error line must not break the framing.
pub(crate) fn map_newlines(text: &mut [u8]) {
    for byte in text {
        if *byte == b'\r' || *byte == b'\n' {
            *byte = b' ';
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: every framing error's reply text, byte for byte as Redis sends it.
    #[test]
    fn protocol_error_texts() {
        let table: &[(ProtocolError, &[u8])] = &[
            (ProtocolError::TooBigInline, b"ERR Protocol error: too big inline request"),
            (ProtocolError::UnbalancedQuotes, b"ERR Protocol error: unbalanced quotes in request"),
            (ProtocolError::TooBigMbulkCount, b"ERR Protocol error: too big mbulk count string"),
            (
                ProtocolError::InvalidMultibulkLength,
                b"ERR Protocol error: invalid multibulk length",
            ),
            (ProtocolError::TooBigBulkCount, b"ERR Protocol error: too big bulk count string"),
            (ProtocolError::ExpectedDollar(b'x'), b"ERR Protocol error: expected '$', got 'x'"),
            (ProtocolError::ExpectedDollar(0), b"ERR Protocol error: expected '$', got '"),
            (ProtocolError::InvalidBulkLength, b"ERR Protocol error: invalid bulk length"),
        ];
        for (error, want) in table {
            assert_eq!(error.message(), *want);
        }
    }

    #[test]
    fn standard_texts() {
        assert_eq!(wrong_arity("get"), "ERR wrong number of arguments for 'get' command");
        assert_eq!(invalid_expire_time("set"), "ERR invalid expire time in 'set' command");
        assert_eq!(
            unknown_command(b"foo", [&b"a"[..], b"b"]),
            b"ERR unknown command 'foo', with args beginning with: 'a' 'b' "
        );
        assert_eq!(
            unknown_command(b"foo", std::iter::empty()),
            b"ERR unknown command 'foo', with args beginning with: "
        );
        assert_eq!(
            unknown_command(b"a\r\nb", [&b"x\0y"[..]]),
            b"ERR unknown command 'a  b', with args beginning with: 'x' "
        );
        assert_eq!(
            unknown_subcommand(b"config", b"foo"),
            b"ERR unknown subcommand 'foo'. Try CONFIG HELP."
        );
    }

    /// Goal: the 128-byte budget for quoted arguments, as `commandCheckExistence` applies it.
    #[test]
    fn unknown_command_truncates_args() {
        let long = [b'a'; 200];
        let text = unknown_command(&long, [&long[..100], &long[..100], &long[..5]]);
        let prefix = b"ERR unknown command '".len() + 128 + b"', with args beginning with: ".len();
        let args = &text[prefix..];
        // First arg: 100 bytes quoted (103 with quotes and space); the second gets 25 bytes.
        assert_eq!(args.len(), 103 + 28);
        assert!(args.ends_with(b"' "));
    }
}
