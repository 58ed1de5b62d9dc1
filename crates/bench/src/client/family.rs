//! Redis data types over RESP (`--structure`, see [`crate::workload::Structure`]): a set
//! becomes the family's write, a get its read, one command per key of the op; `multi` wraps
//! the op's SETs or GETs in MULTI ... EXEC.
//!
//! Replies are checked for shape: a write answers an integer (`multi`: `+OK`, `+QUEUED`
//! per command, then EXEC's array of `+OK`); HGET and a transaction's GETs answer values
//! that are verified as strings' are (the value is derived from the (key, field) id);
//! RPOP's value may be any field's, so only its shape counts. Error replies are server
//! errors, as for strings. Arrays are read element by element: no vector per reply.
//! Streams' and geo's nested replies are read whole (`proto_resp::parse_reply`, one tree per
//! reply: client CPU, not the server's) in `stream` and `geo`; a stream read may leave
//! commands its op still has to send ([`FollowUps`]: the consumer's XACK).

use proto_resp::{compose_command, parse_reply, ParseError, Value};

use super::{check_value, geo, resp, stream, ErrorKind, Parsed, Scratch, SetArgs, Tally};
use crate::workload::{Family, KeyFormat, OpKind, Structure};

/// ZRANGE reads this many members from the front (`ZRANGE k 0 9`).
const ZRANGE_STOP: &[u8] = b"9";

/// Commands a reply asks its op to send next, on the same connection: a stream consumer's
/// XACK of what XREADGROUP delivered, or the group's creation when a read found none
/// (-NOGROUP). The op ends when their replies are in.
#[derive(Debug, Default)]
pub struct FollowUps {
    pub bytes: Vec<u8>,
    pub commands: u32,
}

impl FollowUps {
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.commands = 0;
    }

    pub(super) fn push(&mut self, args: &[&[u8]]) {
        compose_command(args, &mut self.bytes);
        self.commands += 1;
    }
}

/// A field's name: `f` and its number.
pub(super) struct FieldBuf {
    bytes: [u8; 21],
    len: usize,
}

impl FieldBuf {
    pub(super) fn new(field: u64) -> FieldBuf {
        let mut digits = [0u8; 20];
        let text = decimal(field, &mut digits);
        let mut bytes = [0u8; 21];
        bytes[0] = b'f';
        bytes[1..=text.len()].copy_from_slice(text);
        FieldBuf { bytes, len: text.len() + 1 }
    }

    pub(super) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

pub(super) fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

/// Appends the request for `kind` on `ids` in `family` (not `string`: that is `resp`'s).
pub fn compose(
    family: Family,
    kind: OpKind,
    ids: &[u64],
    set: Option<SetArgs>,
    format: &KeyFormat,
    scratch: &mut Scratch,
    out: &mut Vec<u8>,
) {
    let multi = family.structure == Structure::Multi;
    if multi {
        compose_command(&[b"MULTI"], out);
    }
    for &id in ids {
        match (kind, set) {
            (OpKind::Get, _) => compose_read(family, id, format, out),
            (OpKind::Set, Some(set)) => compose_write(family, id, &set, format, scratch, out),
            (OpKind::Set, None) => panic!("a set needs its value arguments"),
        }
    }
    if multi {
        compose_command(&[b"EXEC"], out);
    }
}

fn compose_write(
    family: Family,
    id: u64,
    set: &SetArgs,
    format: &KeyFormat,
    scratch: &mut Scratch,
    out: &mut Vec<u8>,
) {
    let (key, field) = family.split(id);
    let (key, field) = (format.key(key), FieldBuf::new(field));
    let (key, name) = (key.as_bytes(), field.as_bytes());
    match family.structure {
        Structure::String | Structure::Multi => resp::compose_set(id, set, format, scratch, out),
        Structure::Hash => compose_command(&[b"HSET", key, name, scratch.value(id, set)], out),
        Structure::List => compose_command(&[b"LPUSH", key, scratch.value(id, set)], out),
        Structure::Set => compose_command(&[b"SADD", key, name], out),
        // The score is the field's number (its digits follow the `f`).
        Structure::Zset => compose_command(&[b"ZADD", key, &name[1..], name], out),
        Structure::Stream => {
            stream::compose_write(key, name, set.version, scratch.value(id, set), out)
        }
        Structure::Geo => geo::compose_write(key, name, id, out),
    }
}

fn compose_read(family: Family, id: u64, format: &KeyFormat, out: &mut Vec<u8>) {
    let (key, field) = family.split(id);
    let (key, field) = (format.key(key), FieldBuf::new(field));
    let (key, name) = (key.as_bytes(), field.as_bytes());
    match family.structure {
        Structure::String | Structure::Multi => compose_command(&[b"GET", key], out),
        Structure::Hash => compose_command(&[b"HGET", key, name], out),
        Structure::List => compose_command(&[b"RPOP", key], out),
        Structure::Set => compose_command(&[b"SISMEMBER", key, name], out),
        Structure::Zset => compose_command(&[b"ZRANGE", key, b"0", ZRANGE_STOP], out),
        Structure::Stream => stream::compose_read(key, family.split(id).1, out),
        Structure::Geo => geo::compose_read(family, id, key, out),
    }
}

/// One reply from the front of `input`, or what to return instead.
pub(super) fn reply(input: &[u8]) -> Result<(Value<'_>, usize), Parsed> {
    match parse_reply(input) {
        Ok(ok) => Ok(ok),
        Err(ParseError::Incomplete) => Err(Parsed::Incomplete),
        Err(_) => Err(Parsed::Broken("malformed RESP reply")),
    }
}

/// An aggregate's header (`*n`): its element count (-1 for a null array) and length.
fn array_header(input: &[u8]) -> Result<(i64, usize), Parsed> {
    let Some(end) = input.windows(2).position(|w| w == b"\r\n") else {
        return Err(Parsed::Incomplete);
    };
    let n = std::str::from_utf8(&input[1..end]).ok().and_then(|s| s.parse::<i64>().ok());
    n.filter(|n| *n >= -1).map(|n| (n, end + 2)).ok_or(Parsed::Broken("bad array header"))
}

/// Parses the reply to a request of `kind` on `ids` in `family` (one that asks for no
/// follow-up commands; see [`parse_following`]).
pub fn parse<I>(family: Family, kind: OpKind, ids: I, input: &[u8]) -> Parsed
where
    I: Iterator<Item = u64> + Clone,
{
    let format = KeyFormat::new(20, u64::MAX).expect("a valid key format");
    parse_following(family, kind, ids, &format, input, &mut FollowUps::default())
}

/// Parses the reply to a request of `kind` on `ids` in `family`; `follow` gets the commands
/// the op still has to send (cleared first, so an incomplete reply parsed again does not
/// add them twice; they count only with a `Parsed::Reply`).
pub fn parse_following<I>(
    family: Family,
    kind: OpKind,
    ids: I,
    format: &KeyFormat,
    input: &[u8],
    follow: &mut FollowUps,
) -> Parsed
where
    I: Iterator<Item = u64> + Clone,
{
    follow.clear();
    let result = match family.structure {
        Structure::Multi => parse_multi(kind, ids, input),
        Structure::Stream => stream::parse(family, kind, ids, format, input, follow),
        Structure::Geo => geo::parse(family, kind, ids, input),
        _ => parse_each(family, kind, ids, input),
    };
    result.unwrap_or_else(|parsed| parsed)
}

/// One reply per id, each read whole and judged by `judge` (a tally, or an error reply's
/// kind); stream and geo replies are nested arrays.
pub(super) fn parse_whole<I>(
    ids: I,
    input: &[u8],
    mut judge: impl FnMut(u64, Value<'_>, &mut Tally) -> Result<Option<ErrorKind>, Parsed>,
) -> Result<Parsed, Parsed>
where
    I: Iterator<Item = u64>,
{
    let (mut used, mut error, mut tally) = (0, None, Tally::default());
    for id in ids {
        let (value, n) = reply(&input[used..])?;
        used += n;
        if let Some(kind) = judge(id, value, &mut tally)? {
            error = Some(kind);
        }
    }
    Ok(Parsed::Reply { tally, error, used })
}

/// Counts a read that found something (`true`) or nothing.
pub(super) fn hit_or_miss(tally: &mut Tally, hit: bool) {
    if hit {
        tally.hits += 1;
    } else {
        tally.misses += 1;
    }
}

/// One reply per id, in order.
fn parse_each<I>(family: Family, kind: OpKind, ids: I, input: &[u8]) -> Result<Parsed, Parsed>
where
    I: Iterator<Item = u64>,
{
    let (mut used, mut error, mut tally) = (0, None, Tally::default());
    for id in ids {
        let (element, n) = if input.get(used) == Some(&b'*') {
            parse_range(&input[used..])?
        } else {
            let (value, n) = reply(&input[used..])?;
            (Element::of(value), n)
        };
        used += n;
        if element == Element::Error {
            error = Some(ErrorKind::ServerError);
            continue;
        }
        read_or_write(family.structure, kind, id, element, &mut tally)?;
    }
    Ok(Parsed::Reply { tally, error, used })
}

/// A reply reduced to what a check needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Element<'a> {
    Error,
    Integer(i64),
    Bulk(&'a [u8]),
    Null,
    /// An array of this many bulk strings (ZRANGE), or of anything (EXEC, read apart).
    Array(i64),
    Ok,
    Queued,
    Other,
}

impl<'a> Element<'a> {
    fn of(value: Value<'a>) -> Element<'a> {
        match value {
            Value::Error(_) | Value::BulkError(_) => Element::Error,
            Value::Integer(n) => Element::Integer(n),
            Value::Bulk(data) => Element::Bulk(data),
            Value::NullBulk | Value::Null | Value::NullArray => Element::Null,
            Value::Simple(b"OK") => Element::Ok,
            Value::Simple(b"QUEUED") => Element::Queued,
            _ => Element::Other,
        }
    }
}

/// ZRANGE's array, its members read one by one (each must be a bulk string).
fn parse_range(input: &[u8]) -> Result<(Element<'_>, usize), Parsed> {
    let (count, mut used) = array_header(input)?;
    for _ in 0..count {
        let (value, n) = reply(&input[used..])?;
        if !matches!(value, Value::Bulk(_)) {
            return Err(Parsed::Broken("ZRANGE member is not a bulk string"));
        }
        used += n;
    }
    Ok((if count < 0 { Element::Null } else { Element::Array(count) }, used))
}

/// Counts one id's reply: a write's acknowledgement, or a read's hit or miss.
fn read_or_write(
    structure: Structure,
    kind: OpKind,
    id: u64,
    element: Element<'_>,
    tally: &mut Tally,
) -> Result<(), Parsed> {
    let hit = match (kind, structure, element) {
        (OpKind::Set, _, Element::Integer(n)) if n >= 0 => return Ok(()),
        (OpKind::Get, Structure::Hash, Element::Bulk(data)) => {
            check_value(tally, id, data);
            return Ok(());
        }
        (OpKind::Get, Structure::List, Element::Bulk(_)) => true,
        (OpKind::Get, Structure::Set, Element::Integer(n @ (0 | 1))) => n == 1,
        (OpKind::Get, Structure::Zset, Element::Array(n)) => n > 0,
        (OpKind::Get, Structure::Hash | Structure::List, Element::Null) => false,
        _ => return Err(Parsed::Broken("a reply of the wrong type for the structure")),
    };
    hit_or_miss(tally, hit);
    Ok(())
}

/// `+OK`, `+QUEUED` per command, then EXEC's array: `+OK` per SET, a value or null per GET.
fn parse_multi<I>(kind: OpKind, ids: I, input: &[u8]) -> Result<Parsed, Parsed>
where
    I: Iterator<Item = u64> + Clone,
{
    let count = ids.clone().count();
    let (mut used, mut error) = (0, None);
    // MULTI's and each queued command's acknowledgement.
    for i in 0..=count {
        let (value, n) = reply(&input[used..])?;
        used += n;
        match (i, Element::of(value)) {
            (0, Element::Ok) | (1.., Element::Queued) => {}
            (_, Element::Error) => error = Some(ErrorKind::ServerError),
            _ => return Err(Parsed::Broken("MULTI or a queued command got an unexpected reply")),
        }
    }
    let mut tally = Tally::default();
    if input.get(used) != Some(&b'*') {
        // EXECABORT (after a queueing error) or a null: the transaction did not run.
        let (value, n) = reply(&input[used..])?;
        if !matches!(Element::of(value), Element::Error | Element::Null) {
            return Err(Parsed::Broken("EXEC answered with something other than an array"));
        }
        return Ok(Parsed::Reply { tally, error: Some(ErrorKind::ServerError), used: used + n });
    }
    let (elements, n) = array_header(&input[used..])?;
    used += n;
    if elements != count as i64 {
        return Err(Parsed::Broken("EXEC's array has another length than the commands"));
    }
    for id in ids {
        let (value, n) = reply(&input[used..])?;
        used += n;
        match (kind, Element::of(value)) {
            (_, Element::Error) => error = Some(ErrorKind::ServerError),
            (OpKind::Set, Element::Ok) => {}
            (OpKind::Get, Element::Bulk(data)) => check_value(&mut tally, id, data),
            (OpKind::Get, Element::Null) => tally.misses += 1,
            _ => return Err(Parsed::Broken("an EXEC element of the wrong type")),
        }
    }
    Ok(Parsed::Reply { tally, error, used })
}

#[cfg(test)]
#[path = "family_tests.rs"]
mod tests;
