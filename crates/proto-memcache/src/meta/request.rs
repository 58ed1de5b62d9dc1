//! Parsing and composing meta requests, with memcached's checks in memcached's order
//! (`process_m*_command`).
//!
//! For `ms`, errors found before the data length is known (no key, key too long, too many
//! tokens, a bad length) leave the data block unread, as memcached does; every later error
//! swallows the block.

use super::{
    flags::{compose_flags, Flag, MetaFlags, META_TOKENS_MAX, OPAQUE_TOKEN_LEN_MAX},
    MetaCommand,
};
use crate::{
    base64,
    error::{ErrorReply, ParseError},
    error::{BAD_FORMAT, BAD_MA_MODE, BAD_MS_MODE, INVALID_OR_DUPLICATE_FLAG},
    error::{MG_TOO_MANY_FLAGS, OPAQUE_TOO_LONG, TOO_MANY_FLAGS},
    limits::Limits,
    line::{first_word, parse_i64, push_u64, rest_after, tokens, trim_end, trim_start},
    line::{Line, Tokens},
    request::Request,
    text::{
        request::{check_key, data_block, reject, too_large},
        ArithOp,
    },
};

/// memcached reads a block length as a C `int` and keeps room for the `\r\n`.
const BLOCK_LEN_MAX: i64 = i32::MAX as i64 - 2;

type Parsed<'a> = Result<(Request<'a>, usize), ParseError>;

/// `mg`: get, touch, vivify or recache, as the flags say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaGet<'a> {
    /// The key as sent (base64 text if `flags.base64_key`; see [`super::decoded_key`]).
    pub key: &'a [u8],
    pub flags: MetaFlags<'a>,
}

/// What `ms` does, from its `M` flag.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SetMode {
    #[default]
    Set,
    /// `ME`
    Add,
    /// `MR`
    Replace,
    /// `MA`
    Append,
    /// `MP`
    Prepend,
}

/// `ms`: store a value. With `C`, memcached turns set and replace into compare-and-swap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaSet<'a> {
    pub key: &'a [u8],
    pub flags: MetaFlags<'a>,
    pub mode: SetMode,
    /// The data block, without its `\r\n`.
    pub value: &'a [u8],
}

/// `md`: delete, or with `I` mark stale, or with `x` drop the value only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaDelete<'a> {
    pub key: &'a [u8],
    pub flags: MetaFlags<'a>,
}

/// `ma`: increment or decrement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaArith<'a> {
    pub key: &'a [u8],
    pub flags: MetaFlags<'a>,
    pub mode: ArithOp,
}

impl MetaArith<'_> {
    /// The amount to add or subtract (`D`, default 1).
    pub fn delta(&self) -> u64 {
        self.flags.delta.unwrap_or(1)
    }

    /// The value a vivified item starts with (`J`, default 0).
    pub fn initial(&self) -> u64 {
        self.flags.initial.unwrap_or(0)
    }
}

/// `me`: the item's metadata in a human-readable line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaDebug<'a> {
    pub key: &'a [u8],
    pub base64_key: bool,
}

/// Parses the meta command on `line`: `command` is its first word (`m` and one more letter)
/// and `after` the rest of the line.
///
/// `mg`, `md` and `ma` take the key and flags straight from `after`, without tokenizing the
/// line first: a pipeline of `mg` lines is a multiget, parsed once per key.
pub(crate) fn parse<'a>(
    buf: &'a [u8],
    line: Line<'a>,
    command: &'a [u8],
    after: &'a [u8],
    limits: &Limits,
) -> Parsed<'a> {
    let command = match command {
        b"mg" => MetaCommand::Get,
        b"ms" => MetaCommand::Set,
        b"md" => MetaCommand::Delete,
        b"ma" => MetaCommand::Arith,
        b"me" => return debug(&line, &Tokens::new(line.content), limits),
        b"mn" => return Ok((Request::MetaNoop, line.len_with_newline)),
        _ => return Err(reject(&line, ErrorReply::Error, false)),
    };
    let (key, flags_raw) = first_word(after);
    if key.is_empty() {
        return Err(reject(&line, ErrorReply::Error, false));
    }
    check_key(key, limits).map_err(|reason| client_error(&line, reason))?;
    if command == MetaCommand::Set {
        return set(buf, &line, &Tokens::new(line.content), key, limits);
    }
    let flags_raw = trim_end(trim_start(flags_raw));
    if too_many_flags(flags_raw) {
        let reason = if command == MetaCommand::Get { MG_TOO_MANY_FLAGS } else { TOO_MANY_FLAGS };
        return Err(client_error(&line, reason));
    }
    let flags = MetaFlags::parse(flags_raw, key).map_err(|reason| {
        // memcached names the problem for mg only.
        let reason = if command == MetaCommand::Get { reason } else { INVALID_OR_DUPLICATE_FLAG };
        client_error(&line, reason)
    })?;
    check_opaque(&flags).map_err(|reason| client_error(&line, reason))?;
    let request = match command {
        MetaCommand::Get => Request::MetaGet(MetaGet { key, flags }),
        MetaCommand::Delete => Request::MetaDelete(MetaDelete { key, flags }),
        _ => {
            let mode = match flags.mode {
                None | Some(b'I' | b'+') => ArithOp::Incr,
                Some(b'D' | b'-') => ArithOp::Decr,
                Some(_) => return Err(client_error(&line, BAD_MA_MODE)),
            };
            Request::MetaArith(MetaArith { key, flags, mode })
        }
    };
    Ok((request, line.len_with_newline))
}

/// Whether a line with these flags after its command and key holds more than
/// [`META_TOKENS_MAX`] tokens. Each flag takes a byte and a space, so only a long flag list
/// can, and only that one is counted.
fn too_many_flags(flags_raw: &[u8]) -> bool {
    const FLAGS_MAX: usize = META_TOKENS_MAX - 2;
    flags_raw.len() > 2 * FLAGS_MAX && tokens(flags_raw).count() > FLAGS_MAX
}

fn client_error(line: &Line<'_>, reason: &'static str) -> ParseError {
    reject(line, ErrorReply::ClientError(reason), false)
}

fn check_opaque(flags: &MetaFlags<'_>) -> Result<(), &'static str> {
    match flags.opaque {
        Some(opaque) if 1 + opaque.len() > OPAQUE_TOKEN_LEN_MAX => Err(OPAQUE_TOO_LONG),
        _ => Ok(()),
    }
}

fn set<'a>(
    buf: &'a [u8],
    line: &Line<'a>,
    tokens: &Tokens<'a>,
    key: &'a [u8],
    limits: &Limits,
) -> Parsed<'a> {
    if tokens.count == 2 {
        return Err(client_error(line, BAD_FORMAT));
    }
    if tokens.count > META_TOKENS_MAX {
        return Err(client_error(line, TOO_MANY_FLAGS));
    }
    let block_len = parse_i64(tokens.get(2))
        .filter(|len| (0..=BLOCK_LEN_MAX).contains(len))
        .and_then(|len| usize::try_from(len).ok())
        .ok_or(client_error(line, BAD_FORMAT))?;
    let value_start = line.len_with_newline;
    let block_end = value_start + block_len + 2;
    // From here on the block's length is known, so every error swallows it.
    let swallow = |reply| ParseError::Invalid { skip: block_end, reply, noreply: false };
    let flags = MetaFlags::parse(rest_after(line.content, 3), key)
        .map_err(|reason| swallow(ErrorReply::ClientError(reason)))?;
    check_opaque(&flags).map_err(|reason| swallow(ErrorReply::ClientError(reason)))?;
    let mode = match flags.mode {
        None | Some(b'S') => SetMode::Set,
        Some(b'E') => SetMode::Add,
        Some(b'R') => SetMode::Replace,
        Some(b'A') => SetMode::Append,
        Some(b'P') => SetMode::Prepend,
        Some(_) => return Err(swallow(ErrorReply::ClientError(BAD_MS_MODE))),
    };
    if block_len > limits.value_len_max {
        // Meta errors are never quiet; memcached drops the old item in every mode.
        return Err(too_large(buf, key, block_end, false, true, flags.base64_key));
    }
    // Meta errors are never quiet, a bad chunk included.
    let value = data_block(buf, value_start, block_len, false)?;
    Ok((Request::MetaSet(MetaSet { key, flags, mode, value }), block_end))
}

fn debug<'a>(line: &Line<'a>, tokens: &Tokens<'a>, limits: &Limits) -> Parsed<'a> {
    let key = tokens.get(1);
    if tokens.count < 2 {
        return Err(client_error(line, BAD_FORMAT));
    }
    check_key(key, limits).map_err(|reason| client_error(line, reason))?;
    // Only a bare `b` right after the key counts; memcached ignores anything else.
    let base64_key = tokens.get(2) == b"b";
    if base64_key && !matches!(base64::decoded_len(key), Some(len) if len > 0) {
        return Err(client_error(line, BAD_FORMAT));
    }
    Ok((Request::MetaDebug(MetaDebug { key, base64_key }), line.len_with_newline))
}

/// Appends a meta request line (the client side); `value` is the data block of `ms` and
/// is ignored for the other commands.
pub fn compose_meta<'f>(
    command: MetaCommand,
    key: &[u8],
    flags: impl IntoIterator<Item = Flag<'f>>,
    value: &[u8],
    buf: &mut Vec<u8>,
) {
    buf.extend_from_slice(command.name());
    if command != MetaCommand::Noop {
        buf.push(b' ');
        buf.extend_from_slice(key);
    }
    if command == MetaCommand::Set {
        buf.push(b' ');
        push_u64(buf, value.len() as u64);
    }
    compose_flags(flags, buf);
    buf.extend_from_slice(b"\r\n");
    if command == MetaCommand::Set {
        buf.extend_from_slice(value);
        buf.extend_from_slice(b"\r\n");
    }
}
