//! Streams (`--structure stream`): a producer's XADD, a consumer group's read and
//! acknowledgement, and a range read.
//!
//! ```text
//!   write  XADD k * item f7 at <version> value <v>        -> the new entry's ID (bulk)
//!   read   even field: XREADGROUP GROUP bench bench COUNT 10 STREAMS k >
//!            -> null (nothing new: a miss) | [[k, [[id, [item, f7, at, n, value, v]], ...]]]
//!            then, as a follow-up of the same op, XACK k bench <each delivered id>
//!            -NOGROUP (no group yet) -> XGROUP CREATE k bench 0 MKSTREAM (a miss)
//!          odd field:  XRANGE k - + COUNT 10   -> [[id, [...]], ...] (empty: a miss)
//! ```
//!
//! Every entry read is checked: its `item` names the field it was written for, so its
//! `value` must be one some writer of that (key, field) id could have produced.

use proto_resp::{compose_command, Value};

use super::{
    family::{decimal, hit_or_miss, parse_whole, FollowUps},
    ErrorKind, Parsed, Tally,
};
use crate::{
    value,
    workload::{Family, KeyFormat, OpKind},
};

/// The consumer group and its one consumer.
pub const GROUP: &[u8] = b"bench";
const CONSUMER: &[u8] = b"bench";
/// Entries a read asks for (XREADGROUP's and XRANGE's COUNT).
pub const READ_COUNT: usize = 10;
const READ_COUNT_TEXT: &[u8] = b"10";

/// `XADD key * item <field> at <version> value <value>`.
pub(super) fn compose_write(
    key: &[u8],
    field: &[u8],
    version: u32,
    value: &[u8],
    out: &mut Vec<u8>,
) {
    let mut digits = [0u8; 20];
    let at = decimal(u64::from(version), &mut digits);
    compose_command(&[b"XADD", key, b"*", b"item", field, b"at", at, b"value", value], out);
}

/// Even fields read as the group's consumer, odd ones by range.
fn is_consumer_read(field: u64) -> bool {
    field.is_multiple_of(2)
}

/// A consumer's read (even fields) or a range read (odd ones).
pub(super) fn compose_read(key: &[u8], field: u64, out: &mut Vec<u8>) {
    if is_consumer_read(field) {
        let args: [&[u8]; 9] = [
            b"XREADGROUP",
            b"GROUP",
            GROUP,
            CONSUMER,
            b"COUNT",
            READ_COUNT_TEXT,
            b"STREAMS",
            key,
            b">",
        ];
        compose_command(&args, out);
    } else {
        compose_command(&[b"XRANGE", key, b"-", b"+", b"COUNT", READ_COUNT_TEXT], out);
    }
}

/// Replies to a request of `kind` on `ids`: XADD's IDs, or reads (with their follow-ups).
pub(super) fn parse<I>(
    family: Family,
    kind: OpKind,
    ids: I,
    format: &KeyFormat,
    input: &[u8],
    follow: &mut FollowUps,
) -> Result<Parsed, Parsed>
where
    I: Iterator<Item = u64>,
{
    parse_whole(ids, input, |id, value, tally| match (kind, value) {
        (_, Value::Error(text) | Value::BulkError(text)) => {
            Ok(error_reply(family, id, format, text, tally, follow))
        }
        (OpKind::Set, Value::Bulk(entry_id)) if is_entry_id(entry_id) => Ok(None),
        (OpKind::Set, _) => Err(Parsed::Broken("XADD answered with something other than an ID")),
        (OpKind::Get, value) => {
            let (key, field) = family.split(id);
            let entries = if is_consumer_read(field) { delivered(value)? } else { ranged(value)? };
            let mut acks: [&[u8]; READ_COUNT + 3] = [&[]; READ_COUNT + 3];
            let (read, valid) = check_entries(family, key, entries, &mut acks[3..])?;
            if valid {
                hit_or_miss(tally, read > 0);
            } else {
                tally.corrupt += 1;
                tally.misses += 1;
            }
            if is_consumer_read(field) && read > 0 {
                let key = format.key(key);
                (acks[0], acks[1], acks[2]) = (b"XACK", key.as_bytes(), GROUP);
                follow.push(&acks[..3 + read]);
            }
            Ok(None)
        }
    })
}

/// An error reply: -NOGROUP on a read creates the group (the read is a miss); any other is
/// the server's error.
fn error_reply(
    family: Family,
    id: u64,
    format: &KeyFormat,
    text: &[u8],
    tally: &mut Tally,
    follow: &mut FollowUps,
) -> Option<ErrorKind> {
    if !text.starts_with(b"NOGROUP") {
        return Some(ErrorKind::ServerError);
    }
    let key = format.key(family.split(id).0);
    follow.push(&[b"XGROUP", b"CREATE", key.as_bytes(), GROUP, b"0", b"MKSTREAM"]);
    tally.misses += 1;
    None
}

/// `\d+-\d+`
fn is_entry_id(text: &[u8]) -> bool {
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    let mut parts = text.splitn(2, |&b| b == b'-');
    matches!((parts.next(), parts.next()), (Some(ms), Some(seq)) if digits(ms) && digits(seq))
}

/// XREADGROUP's entries: a null when nothing is new, else one stream (an array of
/// [key, entries] pairs in RESP2, a map in RESP3).
fn delivered(value: Value<'_>) -> Result<Vec<Value<'_>>, Parsed> {
    let wrong = Parsed::Broken("XREADGROUP answered with something other than its stream");
    match value {
        Value::NullArray | Value::Null | Value::NullBulk => Ok(Vec::new()),
        Value::Array(mut streams) if streams.len() == 1 => match streams.pop() {
            Some(Value::Array(mut pair)) if pair.len() == 2 => match pair.pop() {
                Some(Value::Array(entries)) => Ok(entries),
                _ => Err(wrong),
            },
            _ => Err(wrong),
        },
        Value::Map(mut streams) if streams.len() == 1 => match streams.pop() {
            Some((_, Value::Array(entries))) => Ok(entries),
            _ => Err(wrong),
        },
        _ => Err(wrong),
    }
}

fn ranged(value: Value<'_>) -> Result<Vec<Value<'_>>, Parsed> {
    match value {
        Value::Array(entries) => Ok(entries),
        _ => Err(Parsed::Broken("XRANGE answered with something other than an array")),
    }
}

/// Checks each entry (`[id, [name, value, ...]]`) of `key`'s stream and notes its ID in
/// `ids`; returns how many there were and whether every one held a valid value.
fn check_entries<'a>(
    family: Family,
    key: u64,
    entries: Vec<Value<'a>>,
    ids: &mut [&'a [u8]],
) -> Result<(usize, bool), Parsed> {
    let broken = Parsed::Broken("a stream entry is not [id, [field, value, ...]]");
    if entries.len() > ids.len() {
        return Err(Parsed::Broken("a stream read answered more entries than COUNT"));
    }
    let (count, mut valid) = (entries.len(), true);
    for (slot, entry) in ids.iter_mut().zip(entries) {
        let Value::Array(mut parts) = entry else { return Err(broken) };
        let (Some(fields), Some(Value::Bulk(id)), None) = (parts.pop(), parts.pop(), parts.pop())
        else {
            return Err(broken);
        };
        *slot = id;
        valid &= entry_is_valid(family, key, fields);
    }
    Ok((count, valid))
}

/// Whether an entry's fields are the ones an XADD of this workload wrote for `key`.
fn entry_is_valid(family: Family, key: u64, fields: Value<'_>) -> bool {
    let Value::Array(pairs) = fields else { return false };
    let field_of = |name: &[u8]| -> Option<u64> {
        let n: u64 = std::str::from_utf8(name.strip_prefix(b"f")?).ok()?.parse().ok()?;
        (n < family.fields).then_some(n)
    };
    let (mut field, mut value) = (None, None);
    for pair in pairs.chunks(2) {
        match pair {
            [Value::Bulk(b"item"), Value::Bulk(name)] => field = field_of(name),
            [Value::Bulk(b"value"), Value::Bulk(data)] => value = Some(*data),
            [Value::Bulk(_), Value::Bulk(_)] => {}
            _ => return false,
        }
    }
    let (Some(field), Some(value)) = (field, value) else { return false };
    value::is_valid(key * family.fields + field, value)
}

#[cfg(test)]
#[path = "stream_tests.rs"]
mod tests;
