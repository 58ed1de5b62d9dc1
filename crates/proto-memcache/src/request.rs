//! The request type, [`parse_request`] and [`Request::compose`]: the entry points for both
//! the server (parse) and the load generator (compose).

use crate::{
    error::ParseError,
    limits::Limits,
    line::{self, push_i64, push_u64, Tokens, Words},
    meta::{self, MetaArith, MetaCommand, MetaDebug, MetaDelete, MetaGet, MetaSet},
    text::{
        self,
        request::{compose_retrieve, compose_store, push_noreply},
        AdminCommand, ArithOp, Retrieve, ShutdownMode, Store,
    },
};

/// The first byte of a binary-protocol request.
const BINARY_MAGIC: u8 = 0x80;

/// One request, borrowing its keys and value from the input buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request<'a> {
    /// `get`, `gets`, `gat`, `gats`.
    Retrieve(Retrieve<'a>),
    /// `set`, `add`, `replace`, `append`, `prepend`, `cas`.
    Store(Store<'a>),
    /// `delete <key> [noreply]` (the legacy `delete <key> 0` parses the same).
    Delete { key: &'a [u8], noreply: bool },
    /// `incr`/`decr <key> <delta> [noreply]`.
    Arith { op: ArithOp, key: &'a [u8], delta: u64, noreply: bool },
    /// `touch <key> <exptime> [noreply]`.
    Touch { key: &'a [u8], exptime: i64, noreply: bool },
    /// `flush_all [delay] [noreply]`.
    FlushAll { delay_secs: Option<i64>, noreply: bool },
    /// `version`.
    Version,
    /// `verbosity <level> [noreply]`.
    Verbosity { level: u32, noreply: bool },
    /// `quit`: close the connection without a reply.
    Quit,
    /// `shutdown [graceful]`: stop the server (only when enabled with `-A`).
    Shutdown { mode: ShutdownMode },
    /// `stats [args]*`; which arguments exist is the server's business.
    Stats { args: Words<'a> },
    /// `slabs`, `lru`, `lru_crawler`, `watch` and their arguments: tuning and logging
    /// commands whose arguments, like `stats`'s, are read by the server.
    Admin { command: AdminCommand, args: Words<'a> },
    /// `mn`: reply `MN` (clients use it to mark the end of a pipeline of quiet commands).
    MetaNoop,
    /// `me <key> [b]`.
    MetaDebug(MetaDebug<'a>),
    /// `mg <key> <flag>*`.
    MetaGet(MetaGet<'a>),
    /// `ms <key> <datalen> <flag>*` and its data block.
    MetaSet(MetaSet<'a>),
    /// `md <key> <flag>*`.
    MetaDelete(MetaDelete<'a>),
    /// `ma <key> <flag>*`.
    MetaArith(MetaArith<'a>),
}

/// Parses the request at the start of `buf`; on success, also returns how many bytes it
/// took (command line, and data block with its `\r\n` if any).
///
/// Behaves as memcached 1.6 does; where it cannot, or should not, the difference is
/// documented at the check that makes it:
/// - a line ends at `\n`, with or without `\r` before it;
/// - a line longer than `limits.line_len_max` closes the connection unless it is already
///   whole in `buf` and no longer than `limits.line_len_max_whole` (memcached's 16 KB read
///   buffer), or it starts with `get ` or `gets ` (then `limits.get_line_len_max` applies);
/// - a first byte of 0x80 (a binary-protocol packet, for [`crate::binary::parse_request`];
///   the server picks the parser per connection) closes the connection;
/// - an unknown command whose last token starts with `HTTP/` closes the connection,
///   any other unknown command gets `ERROR`;
/// - a key containing `\r` is refused with `CLIENT_ERROR bad command line format`
///   (memcached would store it).
///
/// ```
/// use proto_memcache::{parse_request, Limits, Request};
/// let (request, consumed) = parse_request(b"delete foo noreply\r\nversion\r\n", &Limits::default())
///     .expect("complete");
/// assert_eq!(request, Request::Delete { key: b"foo", noreply: true });
/// assert_eq!(consumed, 20);
/// ```
pub fn parse_request<'a>(
    buf: &'a [u8],
    limits: &Limits,
) -> Result<(Request<'a>, usize), ParseError> {
    match buf.first() {
        None => return Err(ParseError::Incomplete),
        Some(&BINARY_MAGIC) => return Err(ParseError::Close),
        Some(_) => {}
    }
    if let Some(parsed) = text::request::plain_get(buf, limits) {
        return Ok(parsed);
    }
    if let Some(parsed) = text::request::plain_set(buf, limits) {
        return Ok(parsed);
    }
    parse_framed(buf, limits)
}

/// [`parse_request`] past its first byte and the plain get and set shortcuts: every request
/// framed, split and checked in memcached's order.
pub(crate) fn parse_framed<'a>(
    buf: &'a [u8],
    limits: &Limits,
) -> Result<(Request<'a>, usize), ParseError> {
    let line = line::frame(buf, limits)?;
    // Dispatch on the first word; only commands that need it tokenize the whole line (a
    // get's keys are checked in one pass and read again only by the executor).
    let (command, after) = line::first_word(line.content);
    if command.len() == 2 && command[0] == b'm' {
        return meta::request::parse(buf, line, command, after, limits);
    }
    if command.len() < 2 {
        return Err(text::request::unknown(&line, &Tokens::new(line.content)));
    }
    text::request::parse(buf, line, command, after, limits)
}

impl<'a> Request<'a> {
    /// Appends the request as a client sends it: single spaces, `\r\n` line ends. Parsing
    /// the result gives back an equal request.
    pub fn compose(&self, buf: &mut Vec<u8>) {
        match self {
            Request::Retrieve(retrieve) => {
                compose_retrieve(retrieve.kind, retrieve.keys.iter(), buf);
            }
            Request::Store(store) => compose_store(store, buf),
            Request::Delete { key, noreply } => {
                buf.extend_from_slice(b"delete ");
                buf.extend_from_slice(key);
                push_noreply(*noreply, buf);
            }
            Request::Arith { op, key, delta, noreply } => {
                buf.extend_from_slice(match op {
                    ArithOp::Incr => b"incr ",
                    ArithOp::Decr => b"decr ",
                });
                buf.extend_from_slice(key);
                buf.push(b' ');
                push_u64(buf, *delta);
                push_noreply(*noreply, buf);
            }
            Request::Touch { key, exptime, noreply } => {
                buf.extend_from_slice(b"touch ");
                buf.extend_from_slice(key);
                buf.push(b' ');
                push_i64(buf, *exptime);
                push_noreply(*noreply, buf);
            }
            Request::FlushAll { delay_secs, noreply } => {
                buf.extend_from_slice(b"flush_all");
                if let Some(delay_secs) = delay_secs {
                    buf.push(b' ');
                    push_i64(buf, *delay_secs);
                }
                push_noreply(*noreply, buf);
            }
            Request::Verbosity { level, noreply } => {
                buf.extend_from_slice(b"verbosity ");
                push_u64(buf, u64::from(*level));
                push_noreply(*noreply, buf);
            }
            Request::Version => buf.extend_from_slice(b"version\r\n"),
            Request::Shutdown { mode } => buf.extend_from_slice(match mode {
                ShutdownMode::Now => b"shutdown\r\n",
                ShutdownMode::Graceful => b"shutdown graceful\r\n",
                ShutdownMode::Invalid => b"shutdown invalid\r\n",
            }),
            Request::Quit => buf.extend_from_slice(b"quit\r\n"),
            Request::Stats { args } => {
                buf.extend_from_slice(b"stats");
                for arg in args.iter() {
                    buf.push(b' ');
                    buf.extend_from_slice(arg);
                }
                buf.extend_from_slice(b"\r\n");
            }
            Request::Admin { command, args } => {
                buf.extend_from_slice(command.name());
                for arg in args.iter() {
                    buf.push(b' ');
                    buf.extend_from_slice(arg);
                }
                buf.extend_from_slice(b"\r\n");
            }
            Request::MetaNoop => meta::compose_meta(MetaCommand::Noop, b"", [], b"", buf),
            Request::MetaDebug(debug) => {
                let flags = debug.base64_key.then_some(meta::Flag::Base64Key);
                meta::compose_meta(MetaCommand::Debug, debug.key, flags, b"", buf);
            }
            Request::MetaGet(get) => {
                meta::compose_meta(MetaCommand::Get, get.key, get.flags.iter(), b"", buf);
            }
            Request::MetaSet(set) => {
                meta::compose_meta(MetaCommand::Set, set.key, set.flags.iter(), set.value, buf);
            }
            Request::MetaDelete(delete) => {
                meta::compose_meta(MetaCommand::Delete, delete.key, delete.flags.iter(), b"", buf);
            }
            Request::MetaArith(arith) => {
                meta::compose_meta(MetaCommand::Arith, arith.key, arith.flags.iter(), b"", buf);
            }
        }
    }

    /// Every key the request names, as sent (meta keys with `b` still in base64).
    pub fn keys(&self) -> impl Iterator<Item = &'a [u8]> + Clone {
        let (many, one) = match self {
            Request::Retrieve(retrieve) => (Some(retrieve.keys), None),
            Request::Store(Store { key, .. })
            | Request::Delete { key, .. }
            | Request::Arith { key, .. }
            | Request::Touch { key, .. }
            | Request::MetaDebug(MetaDebug { key, .. })
            | Request::MetaGet(MetaGet { key, .. })
            | Request::MetaSet(MetaSet { key, .. })
            | Request::MetaDelete(MetaDelete { key, .. })
            | Request::MetaArith(MetaArith { key, .. }) => (None, Some(*key)),
            _ => (None, None),
        };
        many.into_iter().flat_map(|words| words.iter()).chain(one)
    }

    /// The data block a request carries (`set` family and `ms`).
    pub fn value(&self) -> Option<&'a [u8]> {
        match self {
            Request::Store(store) => Some(store.value),
            Request::MetaSet(set) => Some(set.value),
            _ => None,
        }
    }
}
