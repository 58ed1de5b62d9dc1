//! Meta replies: composing them in the order memcached writes them (server), and reading
//! them (client).
//!
//! ```text
//!  <status> [<len>] <returned flag>* [Z] [X] [W]\r\n [<data>\r\n]
//!  status: HD | VA (with <len> and data) | EN | NS | EX | NF | MN
//!  ME <key> <name>=<value>*\r\n
//! ```

use super::flags::{Flag, MetaFlags};
use crate::{
    error::ResponseError,
    line::{parse_u64, push_i64, push_u64, tokens},
};

/// The two-letter status of a meta reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MetaStatus {
    /// Success, no value.
    Hd,
    /// Success with a value (`VA <len>`, then the data block).
    Va,
    /// Miss (`mg`, `me`).
    En,
    /// Not stored (`ms` add/replace failed, `ma` vivify failed).
    Ns,
    /// CAS mismatch.
    Ex,
    /// Not found (`ms` CAS on a missing item, `md`, `ma`).
    Nf,
    /// The reply to `mn`.
    Mn,
}

impl MetaStatus {
    pub fn as_bytes(&self) -> &'static [u8] {
        match self {
            MetaStatus::Hd => b"HD",
            MetaStatus::Va => b"VA",
            MetaStatus::En => b"EN",
            MetaStatus::Ns => b"NS",
            MetaStatus::Ex => b"EX",
            MetaStatus::Nf => b"NF",
            MetaStatus::Mn => b"MN",
        }
    }

    pub(crate) fn from_bytes(word: &[u8]) -> Option<MetaStatus> {
        Some(match word {
            b"HD" => MetaStatus::Hd,
            b"VA" => MetaStatus::Va,
            b"EN" => MetaStatus::En,
            b"NS" => MetaStatus::Ns,
            b"EX" => MetaStatus::Ex,
            b"NF" => MetaStatus::Nf,
            b"MN" => MetaStatus::Mn,
            _ => return None,
        })
    }
}

/// Writes one meta reply into a buffer, flag by flag; the server decides which flags.
///
/// ```
/// use proto_memcache::meta::MetaReply;
/// let mut buf = Vec::new();
/// let mut reply = MetaReply::value(&mut buf, 2);
/// reply.flag_u64(b'c', 7).flag_bytes(b'O', b"op");
/// reply.finish_value(b"hi");
/// assert_eq!(buf, b"VA 2 c7 Oop\r\nhi\r\n");
/// ```
pub struct MetaReply<'b> {
    buf: &'b mut Vec<u8>,
    /// The data length promised in `VA <len>`, checked by `finish_value`.
    value_len: Option<usize>,
}

impl<'b> MetaReply<'b> {
    /// Starts a reply without a value; use [`MetaReply::value`] for `VA`.
    pub fn new(buf: &'b mut Vec<u8>, status: MetaStatus) -> Self {
        assert!(status != MetaStatus::Va, "VA needs its length: use MetaReply::value");
        buf.extend_from_slice(status.as_bytes());
        MetaReply { buf, value_len: None }
    }

    /// Starts `VA <value_len>`.
    pub fn value(buf: &'b mut Vec<u8>, value_len: usize) -> Self {
        buf.extend_from_slice(b"VA ");
        push_u64(buf, value_len as u64);
        MetaReply { buf, value_len: Some(value_len) }
    }

    /// A flag with no token (`b`, `W`, `X`, `Z`).
    pub fn flag(&mut self, letter: u8) -> &mut Self {
        self.buf.extend_from_slice(&[b' ', letter]);
        self
    }

    pub fn flag_u64(&mut self, letter: u8, value: u64) -> &mut Self {
        self.flag(letter);
        push_u64(self.buf, value);
        self
    }

    pub fn flag_i64(&mut self, letter: u8, value: i64) -> &mut Self {
        self.flag(letter);
        push_i64(self.buf, value);
        self
    }

    pub fn flag_bytes(&mut self, letter: u8, token: &[u8]) -> &mut Self {
        self.flag(letter);
        self.buf.extend_from_slice(token);
        self
    }

    /// `k<key>`, followed by `b` when the key is base64 (as memcached marks binary keys).
    pub fn key(&mut self, key_as_sent: &[u8], base64_key: bool) -> &mut Self {
        self.flag_bytes(b'k', key_as_sent);
        if base64_key {
            self.flag(b'b');
        }
        self
    }

    /// Whether this is a `VA` reply, to be ended with [`MetaReply::finish_value`].
    pub fn expects_value(&self) -> bool {
        self.value_len.is_some()
    }

    /// Ends a reply without a value.
    pub fn finish(self) {
        assert!(self.value_len.is_none(), "a VA reply needs finish_value");
        self.buf.extend_from_slice(b"\r\n");
    }

    /// Ends a `VA` reply with its data block.
    pub fn finish_value(self, value: &[u8]) {
        self.finish_value_or_lend(value, |_| false);
    }

    /// [`MetaReply::finish_value`], unless `lend` takes the data: it gets the offset in the
    /// buffer where the data belongs and returns true if it lent it (the caller places it
    /// there before the buffer is sent); the closing CRLF is written either way.
    #[inline(always)]
    pub fn finish_value_or_lend(self, value: &[u8], lend: impl FnOnce(usize) -> bool) {
        assert_eq!(self.value_len, Some(value.len()), "VA length and data disagree");
        self.buf.extend_from_slice(b"\r\n");
        if !lend(self.buf.len()) {
            self.buf.extend_from_slice(value);
        }
        self.buf.extend_from_slice(b"\r\n");
    }
}

/// What a reply can report about an item; `None` fields are not returned even if asked
/// for, which is how each command limits itself (memcached's `ms` returns only `c`, `ma`
/// only `c` and `t`, `mg` all of them).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ItemInfo {
    /// `c`
    pub cas: Option<u64>,
    /// `f`
    pub client_flags: Option<u32>,
    /// `h`: fetched before this request.
    pub hit_before: Option<bool>,
    /// `l`
    pub last_access_secs: Option<u64>,
    /// `s`
    pub value_len: Option<usize>,
    /// `t`: remaining TTL, -1 for none.
    pub ttl_secs: Option<i64>,
}

/// The recache markers `mg` appends after the requested flags, in memcached's order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecacheState {
    /// `Z`: another client already won the recache.
    pub already_won: bool,
    /// `X`: the item is stale (invalidated).
    pub stale: bool,
    /// `W`: this client won: it should recache the item.
    pub won: bool,
}

/// Appends a whole meta reply: `status`, then the flags the request asked for in its order
/// (`O` and `k` always, item flags where `item` has them), then `Z`, `X`, `W`, then the
/// value for `VA` (`value` must be `Some` exactly when `status` is `Va`).
pub fn compose_meta_reply(
    status: MetaStatus,
    request: &MetaFlags<'_>,
    key_as_sent: &[u8],
    item: &ItemInfo,
    recache: RecacheState,
    value: Option<&[u8]>,
    buf: &mut Vec<u8>,
) {
    let reply = (status, item, recache);
    compose_meta_reply_or_lend(reply, request, key_as_sent, value, |_| false, buf);
}

/// [`compose_meta_reply`], with the value's data lent rather than copied when `lend` takes
/// it (see [`MetaReply::finish_value_or_lend`]).
pub fn compose_meta_reply_or_lend(
    (status, item, recache): (MetaStatus, &ItemInfo, RecacheState),
    request: &MetaFlags<'_>,
    key_as_sent: &[u8],
    value: Option<&[u8]>,
    lend: impl FnOnce(usize) -> bool,
    buf: &mut Vec<u8>,
) {
    assert_eq!(status == MetaStatus::Va, value.is_some(), "VA goes with a value");
    let mut reply = match value {
        Some(value) => MetaReply::value(buf, value.len()),
        None => MetaReply::new(buf, status),
    };
    // Most gets ask for the value alone (`v`, `q`): skip re-reading their flags.
    let flags = request.echoes_any().then(|| request.iter()).into_iter().flatten();
    for flag in flags {
        match flag {
            Flag::Opaque(token) => {
                reply.flag_bytes(b'O', token);
            }
            Flag::ReturnKey => {
                reply.key(key_as_sent, request.base64_key);
            }
            Flag::ReturnCas => {
                if let Some(cas) = item.cas {
                    reply.flag_u64(b'c', cas);
                }
            }
            Flag::ReturnFlags => {
                if let Some(client_flags) = item.client_flags {
                    reply.flag_u64(b'f', u64::from(client_flags));
                }
            }
            Flag::ReturnHit => {
                if let Some(hit_before) = item.hit_before {
                    reply.flag_u64(b'h', u64::from(hit_before));
                }
            }
            Flag::ReturnLastAccess => {
                if let Some(last_access_secs) = item.last_access_secs {
                    reply.flag_u64(b'l', last_access_secs);
                }
            }
            Flag::ReturnSize => {
                if let Some(value_len) = item.value_len {
                    reply.flag_u64(b's', value_len as u64);
                }
            }
            Flag::ReturnTtl => {
                if let Some(ttl_secs) = item.ttl_secs {
                    reply.flag_i64(b't', ttl_secs);
                }
            }
            _ => {}
        }
    }
    for (set, letter) in [(recache.already_won, b'Z'), (recache.stale, b'X'), (recache.won, b'W')] {
        if set {
            reply.flag(letter);
        }
    }
    match value {
        Some(value) => reply.finish_value_or_lend(value, lend),
        None => reply.finish(),
    }
}

/// The flags of a meta reply, read in place.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReturnedFlags<'a> {
    raw: &'a [u8],
}

impl<'a> ReturnedFlags<'a> {
    /// `(letter, token)` pairs in the order the server wrote them.
    pub fn iter(&self) -> impl Iterator<Item = (u8, &'a [u8])> + Clone {
        tokens(self.raw).map(|token| (token[0], &token[1..]))
    }

    /// The token of the first flag with this letter.
    pub fn get(&self, letter: u8) -> Option<&'a [u8]> {
        self.iter().find(|(found, _)| *found == letter).map(|(_, token)| token)
    }

    /// Whether a flag with this letter is present (for `W`, `X`, `Z`, `b`).
    pub fn has(&self, letter: u8) -> bool {
        self.get(letter).is_some()
    }

    /// The CAS value (`c`), if returned.
    pub fn cas(&self) -> Option<u64> {
        self.get(b'c').and_then(parse_u64)
    }
}

impl PartialEq for ReturnedFlags<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for ReturnedFlags<'_> {}

/// A meta reply other than `ME`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaResponse<'a> {
    pub status: MetaStatus,
    pub flags: ReturnedFlags<'a>,
    /// The data block; `Some` exactly when `status` is [`MetaStatus::Va`].
    pub value: Option<&'a [u8]>,
}

impl MetaResponse<'_> {
    /// Appends the reply as the server sent it.
    pub fn compose(&self, buf: &mut Vec<u8>) {
        let mut reply = match self.value {
            Some(value) => MetaReply::value(buf, value.len()),
            None => MetaReply::new(buf, self.status),
        };
        for (letter, token) in self.flags.iter() {
            reply.flag_bytes(letter, token);
        }
        match self.value {
            Some(value) => reply.finish_value(value),
            None => reply.finish(),
        }
    }
}

/// Parses a meta reply whose line (without terminator) is `line`, spanning `line_len`
/// bytes of `buf`.
pub(crate) fn parse<'a>(
    buf: &'a [u8],
    line: &'a [u8],
    line_len: usize,
    status: MetaStatus,
    value_len_max: usize,
) -> Result<(MetaResponse<'a>, usize), ResponseError> {
    let malformed = ResponseError::Malformed { reason: "bad meta reply" };
    let mut rest = &line[2..];
    if !rest.is_empty() && !rest.starts_with(b" ") {
        return Err(malformed);
    }
    let mut value = None;
    let mut consumed = line_len;
    if status == MetaStatus::Va {
        let len_token = tokens(rest).next().ok_or(malformed)?;
        let value_len = parse_u64(len_token)
            .and_then(|len| usize::try_from(len).ok())
            .filter(|&len| len <= value_len_max)
            .ok_or(malformed)?;
        let start = rest.iter().position(|&b| b != b' ').unwrap_or(0);
        rest = &rest[start + len_token.len()..];
        let end = line_len + value_len;
        let terminator = buf.get(end..end + 2).ok_or(ResponseError::Incomplete)?;
        if terminator != b"\r\n" {
            return Err(ResponseError::Malformed { reason: "bad data chunk" });
        }
        value = Some(&buf[line_len..end]);
        consumed = end + 2;
    }
    Ok((MetaResponse { status, flags: ReturnedFlags { raw: rest }, value }, consumed))
}
