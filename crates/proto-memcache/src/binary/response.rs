//! Responses: [`compose_response`] and [`compose_error`] for the server,
//! [`parse_response`] for clients.

use super::{
    request::{write_packet, write_packet_or_lend},
    Header, Status, HEADER_LEN, RESPONSE_MAGIC,
};
use crate::{Limits, ResponseError};

/// What every response header carries besides the lengths.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The request's opcode as sent (a quiet one stays quiet in its error replies).
    pub opcode: u8,
    pub status: Status,
    pub opaque: u32,
    pub cas: u64,
}

/// Appends a response packet.
pub fn compose_response(reply: &Reply, extras: &[u8], key: &[u8], value: &[u8], out: &mut Vec<u8>) {
    write_packet(response_header(reply), extras, key, value, out);
}

/// The header of a response packet for `reply` (lengths filled in as it is written).
#[inline(always)]
fn response_header(reply: &Reply) -> Header {
    Header {
        magic: RESPONSE_MAGIC,
        opcode: reply.opcode,
        vbucket_or_status: reply.status as u16,
        opaque: reply.opaque,
        cas: reply.cas,
        ..Header::default()
    }
}

/// [`compose_response`], with the value lent rather than copied when `lend` takes it: it
/// gets the offset in `out` where the value belongs and returns true if it lent it.
#[inline(always)]
pub fn compose_response_or_lend(
    reply: &Reply,
    (extras, key): (&[u8], &[u8]),
    value: &[u8],
    lend: impl FnOnce(usize) -> bool,
    out: &mut Vec<u8>,
) {
    write_packet_or_lend(response_header(reply), (extras, key), value, lend, out);
}

/// Appends an error response as memcached sends it: the status's message as the value,
/// CAS 0, no extras or key.
pub fn compose_error(opcode: u8, status: Status, opaque: u32, out: &mut Vec<u8>) {
    compose_error_message(opcode, status, opaque, status.message(), out);
}

/// As [`compose_error`], with another message than the status's usual one.
pub fn compose_error_message(
    opcode: u8,
    status: Status,
    opaque: u32,
    message: &str,
    out: &mut Vec<u8>,
) {
    let reply = Reply { opcode, status, opaque, cas: 0 };
    compose_response(&reply, b"", b"", message.as_bytes(), out);
}

/// One response packet, borrowing its body from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BinResponse<'a> {
    pub opcode: u8,
    /// The raw status (a server may send ones [`Status`] does not name).
    pub status: u16,
    pub opaque: u32,
    pub cas: u64,
    pub extras: &'a [u8],
    pub key: &'a [u8],
    pub value: &'a [u8],
}

impl BinResponse<'_> {
    /// The client flags of a get reply (its 4 bytes of extras), or `None`.
    pub fn flags(&self) -> Option<u32> {
        Some(u32::from_be_bytes(self.extras.try_into().ok()?))
    }

    /// The number in an Increment/Decrement reply (an 8-byte value), or `None`.
    pub fn number(&self) -> Option<u64> {
        Some(u64::from_be_bytes(self.value.try_into().ok()?))
    }
}

/// Parses the response packet at the start of `input`, and returns how many bytes it took.
/// A body over `limits.value_len_max` plus the key and extras bounds is malformed.
pub fn parse_response<'a>(
    input: &'a [u8],
    limits: &Limits,
) -> Result<(BinResponse<'a>, usize), ResponseError> {
    let Some(header) = Header::read(input) else {
        return match input.first() {
            Some(&magic) if magic != RESPONSE_MAGIC => Err(malformed("not a response packet")),
            _ => Err(ResponseError::Incomplete),
        };
    };
    if header.magic != RESPONSE_MAGIC {
        return Err(malformed("not a response packet"));
    }
    let (key, extras, body) =
        (usize::from(header.key_len), usize::from(header.extras_len), header.body_len as usize);
    if key + extras > body {
        return Err(malformed("extras and key longer than the body"));
    }
    if body > limits.value_len_max + limits.key_len_max + usize::from(u8::MAX) {
        return Err(malformed("body too large"));
    }
    let total = HEADER_LEN + body;
    let Some(bytes) = input.get(HEADER_LEN..total) else { return Err(ResponseError::Incomplete) };
    let (extras, rest) = bytes.split_at(extras);
    let (key, value) = rest.split_at(key);
    let response = BinResponse {
        opcode: header.opcode,
        status: header.vbucket_or_status,
        opaque: header.opaque,
        cas: header.cas,
        extras,
        key,
        value,
    };
    Ok((response, total))
}

fn malformed(reason: &'static str) -> ResponseError {
    ResponseError::Malformed { reason }
}
