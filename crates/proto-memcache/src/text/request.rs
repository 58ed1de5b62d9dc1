//! Parsing and composing text-protocol requests, with memcached's checks in memcached's
//! order (`process_command_ascii` and the `process_*_command` functions).
//!
//! Order matters because it decides which error a bad line gets and whether a data block is
//! swallowed: memcached checks the key and the numbers before it knows the block's length
//! is usable, so a storage line with a 251-byte key is answered without swallowing its
//! block (the block then reads as a command of its own), while a block that is too large or
//! not followed by `\r\n` is skipped whole.

use super::{AdminCommand, ArithOp, Retrieve, RetrieveKind, ShutdownMode, Store, StoreCommand};
use crate::{
    error::{ErrorReply, ParseError},
    error::{BAD_DATA_CHUNK, BAD_DELETE_FORMAT, BAD_DELTA, BAD_EXPTIME, BAD_FORMAT, BAD_KEY},
    error::{TOO_LARGE, TOO_MANY_KEYS},
    limits::Limits,
    line::Words,
    line::{
        count_short_words, find_below_bang, find_byte, tokens, trim_end, trim_start, Line, Tokens,
    },
    line::{first_word, parse_c_i32, parse_c_u32, parse_u64, push_i64, push_u64, rest_after},
    request::Request,
};

/// memcached reads a block length as a C `int` and keeps room for the `\r\n`.
const BLOCK_LEN_MAX: i64 = i32::MAX as i64 - 2;

type Parsed<'a> = Result<(Request<'a>, usize), ParseError>;

/// An error reply for this line alone.
pub(crate) fn reject(line: &Line<'_>, reply: ErrorReply, noreply: bool) -> ParseError {
    ParseError::Invalid { skip: line.len_with_newline, reply, noreply }
}

fn client_error(line: &Line<'_>, reason: &'static str, noreply: bool) -> ParseError {
    reject(line, ErrorReply::ClientError(reason), noreply)
}

/// The reason a key is refused, if it is.
pub(crate) fn check_key(key: &[u8], limits: &Limits) -> Result<(), &'static str> {
    if key.len() > limits.key_len_max {
        return Err(BAD_FORMAT);
    }
    // Not memcached: it would store a key holding CR, which no reply could frame.
    if find_byte(key, b'\r').is_some() {
        return Err(BAD_KEY);
    }
    Ok(())
}

/// `get <key>\r\n`, the commonest line, parsed without framing or splitting it: one key of
/// bytes above the space, within the key limit, then `\r\n`. Anything else (more keys, extra
/// spaces, a bare `\n`, a tab or control byte, a long key, an unfinished line) is `None`,
/// left to the general parser, which reads these lines the same way.
#[inline(always)]
pub(crate) fn plain_get<'a>(buf: &'a [u8], limits: &Limits) -> Option<(Request<'a>, usize)> {
    const HEAD: usize = b"get ".len();
    let rest = buf.strip_prefix(b"get ")?;
    let window = &rest[..rest.len().min(limits.key_len_max + 1)];
    let key_len = find_below_bang(window)?;
    let line_fits = HEAD + key_len <= limits.line_len_max && limits.keys_per_get_max >= 1;
    if key_len == 0 || !line_fits || rest.get(key_len..key_len + 2)? != b"\r\n" {
        return None;
    }
    let keys = Words::with_count(&rest[..key_len], 1);
    let request = Request::Retrieve(Retrieve { kind: RetrieveKind::Get, keys });
    Some((request, HEAD + key_len + 2))
}

/// `set <key> <flags> <exptime> <bytes>\r\n` and its data block, the commonest write, parsed
/// without framing or tokenizing its line: single spaces, one key of bytes above the space
/// within the key limit, three numbers of plain digits (at most [`PLAIN_DIGITS_MAX`], so none
/// overflows or is cut to 32 bits), then a block within the value limit that has arrived
/// whole with its `\r\n`. Anything else (`noreply`, a sign, extra spaces, a bare `\n`, a
/// long line, a block still arriving or badly ended) is `None`, left to the general parser,
/// which reads these requests the same way. Saves the tokenizer's pass: about 900
/// instructions of a 32/128 set's 3,400 (callgrind, docs/benchmarks/matrix.md).
#[inline(always)]
pub(crate) fn plain_set<'a>(buf: &'a [u8], limits: &Limits) -> Option<(Request<'a>, usize)> {
    const HEAD: usize = b"set ".len();
    let rest = buf.strip_prefix(b"set ")?;
    let window = &rest[..rest.len().min(limits.key_len_max + 1)];
    let key_len = find_below_bang(window)?;
    if key_len == 0 || rest.get(key_len) != Some(&b' ') {
        return None;
    }
    let mut at = key_len + 1;
    let mut numbers = [0u32; 3];
    for (index, number) in numbers.iter_mut().enumerate() {
        let end = if index == 2 { b'\r' } else { b' ' };
        let (value, used) = plain_digits(&rest[at..], end)?;
        (*number, at) = (value, at + used);
    }
    // `at` is past the `\r`: the line's content is HEAD + at - 1 bytes.
    if rest.get(at) != Some(&b'\n') || HEAD + at - 1 > limits.line_len_max {
        return None;
    }
    let [flags, exptime, value_len] = numbers.map(|n| n as usize);
    if value_len > limits.value_len_max {
        return None;
    }
    let value_start = HEAD + at + 1;
    let value = buf.get(value_start..value_start + value_len)?;
    if buf.get(value_start + value_len..value_start + value_len + 2)? != b"\r\n" {
        return None;
    }
    let key = &rest[..key_len];
    let (flags, exptime) = (flags as u32, exptime as i64);
    let store = Store { command: StoreCommand::Set, key, flags, exptime, value, noreply: false };
    Some((Request::Store(store), value_start + value_len + 2))
}

/// Most digits [`plain_set`] reads in a number: any nine-digit number fits an `i32`.
const PLAIN_DIGITS_MAX: usize = 9;

/// The number of plain digits at the start of `bytes`, ended by `end`: its value and the
/// bytes it took with `end`; `None` for no digit, too many or another ending.
#[inline(always)]
pub(crate) fn plain_digits(bytes: &[u8], end: u8) -> Option<(u32, usize)> {
    let mut value = 0u32;
    for (index, &b) in bytes.iter().take(PLAIN_DIGITS_MAX + 1).enumerate() {
        if !b.is_ascii_digit() {
            return (b == end && index > 0).then_some((value, index + 1));
        }
        if index == PLAIN_DIGITS_MAX {
            return None;
        }
        value = value * 10 + u32::from(b - b'0');
    }
    None
}

/// Parses the text command on `line`, the first line of `buf`.
///
/// `command` is the line's first word and `after` the rest of the line.
pub(crate) fn parse<'a>(
    buf: &'a [u8],
    line: Line<'a>,
    command: &'a [u8],
    after: &'a [u8],
    limits: &Limits,
) -> Parsed<'a> {
    match command {
        b"get" => return retrieve(&line, after, RetrieveKind::Get, limits),
        b"gets" => return retrieve(&line, after, RetrieveKind::Gets, limits),
        b"gat" => return retrieve(&line, after, RetrieveKind::Gat { exptime: 0 }, limits),
        b"gats" => return retrieve(&line, after, RetrieveKind::Gats { exptime: 0 }, limits),
        // A get under the name of a long-removed command, still served by memcached.
        b"bget" => return retrieve(&line, after, RetrieveKind::Get, limits),
        _ => {}
    }
    let tokens = Tokens::new(line.content);
    let done = |request| Ok((request, line.len_with_newline));
    match command {
        b"set" => store(buf, &line, &tokens, StoreCommand::Set, limits),
        b"add" => store(buf, &line, &tokens, StoreCommand::Add, limits),
        b"replace" => store(buf, &line, &tokens, StoreCommand::Replace, limits),
        b"append" => store(buf, &line, &tokens, StoreCommand::Append, limits),
        b"prepend" => store(buf, &line, &tokens, StoreCommand::Prepend, limits),
        b"cas" => store(buf, &line, &tokens, StoreCommand::Cas { cas_unique: 0 }, limits),
        b"delete" => delete(&line, &tokens, limits),
        b"incr" => arith(&line, &tokens, ArithOp::Incr, limits),
        b"decr" => arith(&line, &tokens, ArithOp::Decr, limits),
        b"touch" => touch(&line, &tokens, limits),
        b"flush_all" => flush_all(&line, &tokens),
        b"verbosity" => verbosity(&line, &tokens),
        // memcached ignores anything after these.
        b"version" => done(Request::Version),
        b"quit" => done(Request::Quit),
        // `shutdown [graceful]`; whether it is allowed (-A) is the server's business.
        b"shutdown" => done(Request::Shutdown { mode: shutdown_mode(&tokens) }),
        b"stats" => done(Request::Stats { args: Words::new(rest_after(line.content, 1)) }),
        b"slabs" => admin(&line, AdminCommand::Slabs),
        b"lru" => admin(&line, AdminCommand::Lru),
        b"lru_crawler" => admin(&line, AdminCommand::LruCrawler),
        b"watch" => admin(&line, AdminCommand::Watch),
        b"cache_memlimit" => admin(&line, AdminCommand::CacheMemlimit),
        b"refresh_certs" => admin(&line, AdminCommand::RefreshCerts),
        _ => Err(unknown(&line, &tokens)),
    }
}

fn admin<'a>(line: &Line<'a>, command: AdminCommand) -> Parsed<'a> {
    let args = Words::new(rest_after(line.content, 1));
    Ok((Request::Admin { command, args }, line.len_with_newline))
}

/// An unknown command gets `ERROR`, except that a line ending in an HTTP version is an
/// HTTP request sent to the data port: memcached hangs up on it (`malicious-commands.t`).
pub(crate) fn unknown(line: &Line<'_>, tokens: &Tokens<'_>) -> ParseError {
    if tokens.count > 0 && tokens.last().starts_with(b"HTTP/") {
        return ParseError::Close;
    }
    reject(line, ErrorReply::Error, false)
}

fn retrieve<'a>(
    line: &Line<'a>,
    after: &'a [u8],
    mut kind: RetrieveKind,
    limits: &Limits,
) -> Parsed<'a> {
    let mut keys_raw = trim_start(after);
    if keys_raw.is_empty() {
        return Err(reject(line, ErrorReply::Error, false));
    }
    if let RetrieveKind::Gat { exptime } | RetrieveKind::Gats { exptime } = &mut kind {
        let (token, rest) = first_word(keys_raw);
        *exptime = parse_c_i32(token).ok_or(client_error(line, BAD_EXPTIME, false))?;
        keys_raw = trim_start(rest);
    }
    let keys_raw = trim_end(keys_raw);
    // One pass counts the keys and finds the first bad one; the count is checked first,
    // as memcached does.
    // A CR anywhere among the keys is rare: look once, and check each key only if found.
    let has_cr = memchr::memchr(b'\r', keys_raw).is_some();
    if !has_cr {
        if let Some(count) = count_short_words(keys_raw, limits.key_len_max) {
            return retrieve_keys(line, kind, keys_raw, count, None, limits);
        }
    }
    let mut count = 0;
    let mut bad_key = None;
    for key in tokens(keys_raw) {
        count += 1;
        if bad_key.is_none() {
            bad_key = if has_cr {
                check_key(key, limits).err()
            } else {
                (key.len() > limits.key_len_max).then_some(BAD_FORMAT)
            };
        }
    }
    retrieve_keys(line, kind, keys_raw, count, bad_key, limits)
}

/// A get's keys, counted and checked: the count is checked first, as memcached does.
fn retrieve_keys<'a>(
    line: &Line<'a>,
    kind: RetrieveKind,
    keys_raw: &'a [u8],
    count: usize,
    bad_key: Option<&'static str>,
    limits: &Limits,
) -> Parsed<'a> {
    if count > limits.keys_per_get_max {
        return Err(client_error(line, TOO_MANY_KEYS, false));
    }
    // memcached sends nothing but the error if any key is bad, even after hits.
    if let Some(reason) = bad_key {
        return Err(client_error(line, reason, false));
    }
    let keys = Words::with_count(keys_raw, count);
    Ok((Request::Retrieve(Retrieve { kind, keys }), line.len_with_newline))
}

fn store<'a>(
    buf: &'a [u8],
    line: &Line<'a>,
    tokens: &Tokens<'a>,
    mut command: StoreCommand,
    limits: &Limits,
) -> Parsed<'a> {
    let is_cas = matches!(command, StoreCommand::Cas { .. });
    let count_min = if is_cas { 6 } else { 5 };
    if tokens.count != count_min && tokens.count != count_min + 1 {
        return Err(reject(line, ErrorReply::Error, false));
    }
    // memcached looks at the last token whatever it is, so `set k 0 0 noreply` is a quiet
    // error and `set k 0 0 1 junk` a loud store.
    let noreply = tokens.last() == b"noreply";
    let key = tokens.get(1);
    check_key(key, limits).map_err(|reason| client_error(line, reason, noreply))?;
    let bad_format = || client_error(line, BAD_FORMAT, noreply);
    // memcached keeps the low 32 bits of each (a C int or unsigned int).
    let flags = parse_c_u32(tokens.get(2)).ok_or_else(bad_format)?;
    let exptime = parse_c_i32(tokens.get(3)).ok_or_else(bad_format)?;
    let block_len = parse_c_i32(tokens.get(4)).ok_or_else(bad_format)?;
    if let StoreCommand::Cas { cas_unique } = &mut command {
        *cas_unique = parse_u64(tokens.get(5)).ok_or_else(bad_format)?;
    }
    if !(0..=BLOCK_LEN_MAX).contains(&block_len) {
        return Err(bad_format());
    }
    let value_len = usize::try_from(block_len).map_err(|_| bad_format())?;
    let value_start = line.len_with_newline;
    let block_end = value_start + value_len + 2;
    if value_len > limits.value_len_max {
        return Err(too_large(buf, key, block_end, noreply, command == StoreCommand::Set, false));
    }
    let value = data_block(buf, value_start, value_len, noreply)?;
    let store = Store { command, key, flags, exptime, value, noreply };
    Ok((Request::Store(store), block_end))
}

/// The error for a data block over the size limit at `key` in `buf`: a set (`drops_old`)
/// also removes the old item, the other modes keep it, as in memcached.
pub(crate) fn too_large(
    buf: &[u8],
    key: &[u8],
    skip: usize,
    noreply: bool,
    drops_old: bool,
    base64_key: bool,
) -> ParseError {
    if !drops_old {
        return ParseError::Invalid { skip, reply: ErrorReply::ServerError(TOO_LARGE), noreply };
    }
    // The key is a slice of `buf`; where it starts is all the error can carry.
    let key_start = key.as_ptr() as usize - buf.as_ptr() as usize;
    ParseError::TooLarge { skip, noreply, key_start, key_len: key.len(), base64_key }
}

/// The data block at `start`, once it and its `\r\n` have arrived.
pub(crate) fn data_block(
    buf: &[u8],
    start: usize,
    len: usize,
    noreply: bool,
) -> Result<&[u8], ParseError> {
    let end = start + len;
    let Some(terminator) = buf.get(end..end + 2) else {
        return Err(ParseError::Incomplete);
    };
    if terminator != b"\r\n" {
        let reply = ErrorReply::ClientError(BAD_DATA_CHUNK);
        return Err(ParseError::Invalid { skip: end + 2, reply, noreply });
    }
    Ok(&buf[start..end])
}

fn delete<'a>(line: &Line<'a>, tokens: &Tokens<'a>, limits: &Limits) -> Parsed<'a> {
    if !(2..=4).contains(&tokens.count) {
        return Err(reject(line, ErrorReply::Error, false));
    }
    let noreply = tokens.count > 2 && tokens.last() == b"noreply";
    if tokens.count > 2 {
        // Ancient clients send a hold time of 0; memcached still takes it.
        let hold_is_zero = tokens.get(2) == b"0";
        let valid = (tokens.count == 3 && (hold_is_zero || noreply))
            || (tokens.count == 4 && hold_is_zero && noreply);
        if !valid {
            return Err(client_error(line, BAD_DELETE_FORMAT, noreply));
        }
    }
    let key = tokens.get(1);
    check_key(key, limits).map_err(|reason| client_error(line, reason, noreply))?;
    Ok((Request::Delete { key, noreply }, line.len_with_newline))
}

fn arith<'a>(line: &Line<'a>, tokens: &Tokens<'a>, op: ArithOp, limits: &Limits) -> Parsed<'a> {
    if tokens.count != 3 && tokens.count != 4 {
        return Err(reject(line, ErrorReply::Error, false));
    }
    let noreply = tokens.last() == b"noreply";
    let key = tokens.get(1);
    check_key(key, limits).map_err(|reason| client_error(line, reason, noreply))?;
    let delta = parse_u64(tokens.get(2)).ok_or(client_error(line, BAD_DELTA, noreply))?;
    Ok((Request::Arith { op, key, delta, noreply }, line.len_with_newline))
}

fn touch<'a>(line: &Line<'a>, tokens: &Tokens<'a>, limits: &Limits) -> Parsed<'a> {
    if tokens.count != 3 && tokens.count != 4 {
        return Err(reject(line, ErrorReply::Error, false));
    }
    let noreply = tokens.last() == b"noreply";
    let key = tokens.get(1);
    check_key(key, limits).map_err(|reason| client_error(line, reason, noreply))?;
    let exptime = parse_c_i32(tokens.get(2)).ok_or(client_error(line, BAD_EXPTIME, noreply))?;
    Ok((Request::Touch { key, exptime, noreply }, line.len_with_newline))
}

fn flush_all<'a>(line: &Line<'a>, tokens: &Tokens<'a>) -> Parsed<'a> {
    if !(1..=3).contains(&tokens.count) {
        return Err(reject(line, ErrorReply::Error, false));
    }
    let noreply = tokens.last() == b"noreply";
    let has_delay = tokens.count != if noreply { 2 } else { 1 };
    let delay_secs = if has_delay {
        Some(parse_c_i32(tokens.get(1)).ok_or(client_error(line, BAD_EXPTIME, noreply))?)
    } else {
        None
    };
    Ok((Request::FlushAll { delay_secs, noreply }, line.len_with_newline))
}

/// memcached takes `shutdown` alone or `shutdown graceful` exactly; nothing else.
fn shutdown_mode(tokens: &Tokens<'_>) -> ShutdownMode {
    match (tokens.count, tokens.get(1)) {
        (1, _) => ShutdownMode::Now,
        (2, b"graceful") => ShutdownMode::Graceful,
        _ => ShutdownMode::Invalid,
    }
}

fn verbosity<'a>(line: &Line<'a>, tokens: &Tokens<'a>) -> Parsed<'a> {
    if tokens.count != 2 && tokens.count != 3 {
        return Err(reject(line, ErrorReply::Error, false));
    }
    let noreply = tokens.last() == b"noreply";
    let level = parse_c_u32(tokens.get(1)).ok_or(client_error(line, BAD_FORMAT, noreply))?;
    Ok((Request::Verbosity { level, noreply }, line.len_with_newline))
}

/// Appends a `get`/`gets`/`gat`/`gats` line for `keys` (the client side).
pub fn compose_retrieve<'k>(
    kind: RetrieveKind,
    keys: impl IntoIterator<Item = &'k [u8]>,
    buf: &mut Vec<u8>,
) {
    buf.extend_from_slice(kind.command());
    if let Some(exptime) = kind.touch_exptime() {
        buf.push(b' ');
        push_i64(buf, exptime);
    }
    for key in keys {
        buf.push(b' ');
        buf.extend_from_slice(key);
    }
    buf.extend_from_slice(b"\r\n");
}

/// Appends a storage command line and its data block (the client side).
pub fn compose_store(store: &Store<'_>, buf: &mut Vec<u8>) {
    buf.extend_from_slice(store.command.name());
    buf.push(b' ');
    buf.extend_from_slice(store.key);
    buf.push(b' ');
    push_u64(buf, u64::from(store.flags));
    buf.push(b' ');
    push_i64(buf, store.exptime);
    buf.push(b' ');
    push_u64(buf, store.value.len() as u64);
    if let StoreCommand::Cas { cas_unique } = store.command {
        buf.push(b' ');
        push_u64(buf, cas_unique);
    }
    push_noreply(store.noreply, buf);
    buf.extend_from_slice(store.value);
    buf.extend_from_slice(b"\r\n");
}

/// Ends a line, with ` noreply` first if asked.
pub(crate) fn push_noreply(noreply: bool, buf: &mut Vec<u8>) {
    if noreply {
        buf.extend_from_slice(b" noreply");
    }
    buf.extend_from_slice(b"\r\n");
}
