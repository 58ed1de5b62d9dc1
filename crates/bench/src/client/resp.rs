//! Redis: `GET k`, `MGET k1 k2 ...`, `SET k v [EX ttl]`.
//!
//! An MGET reply is read element by element (the array header here, each element with
//! `proto_resp::parse_reply`), so no vector of values is built per reply.

use proto_resp::{compose_command, parse_reply, ParseError, Value};

use super::{ErrorKind, KeyCursor, Parsed, Scratch, SetArgs, Tally};
use crate::workload::KeyFormat;

/// `GET k` or `MGET k1 k2 ...`: the frame `compose_command` writes, with each key formatted
/// straight into `out` (no argument list per request).
pub(super) fn compose_get(keys: &[u64], format: &KeyFormat, out: &mut Vec<u8>) {
    let mut digits = [0u8; 10];
    let command: &[u8] = if keys.len() == 1 { b"GET" } else { b"MGET" };
    out.push(b'*');
    out.extend_from_slice(decimal(keys.len() as u32 + 1, &mut digits));
    out.extend_from_slice(b"\r\n$");
    out.extend_from_slice(decimal(command.len() as u32, &mut digits));
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(command);
    out.extend_from_slice(b"\r\n");
    for &id in keys {
        out.push(b'$');
        out.extend_from_slice(decimal(format.key_len(id) as u32, &mut digits));
        out.extend_from_slice(b"\r\n");
        format.append_key(id, out);
        out.extend_from_slice(b"\r\n");
    }
}

pub(super) fn compose_set(
    key: u64,
    set: &SetArgs,
    format: &KeyFormat,
    scratch: &mut Scratch,
    out: &mut Vec<u8>,
) {
    let key_buf = format.key(key);
    let value = scratch.value(key, set);
    if set.ttl_secs == 0 {
        compose_command(&[b"SET", key_buf.as_bytes(), value], out);
        return;
    }
    let mut digits = [0u8; 10];
    let ttl = decimal(set.ttl_secs, &mut digits);
    compose_command(&[b"SET", key_buf.as_bytes(), value, b"EX", ttl], out);
}

fn decimal(mut n: u32, buf: &mut [u8; 10]) -> &[u8] {
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

fn reply(input: &[u8]) -> Result<(Value<'_>, usize), Parsed> {
    match parse_reply(input) {
        Ok(ok) => Ok(ok),
        Err(ParseError::Incomplete) => Err(Parsed::Incomplete),
        Err(_) => Err(Parsed::Broken("malformed RESP reply")),
    }
}

pub(super) fn parse_get<I>(keys: I, format: &KeyFormat, input: &[u8]) -> Parsed
where
    I: Iterator<Item = u64> + Clone,
{
    let mut first_two = keys.clone();
    if let (Some(id), None) = (first_two.next(), first_two.next()) {
        if let Some(parsed) = parse_single(id, input) {
            return parsed;
        }
    }
    parse_get_by_codec(keys, format, input)
}

/// Any reply to a GET or MGET, read with the codec's `parse_reply`.
pub(super) fn parse_get_by_codec<I>(keys: I, format: &KeyFormat, input: &[u8]) -> Parsed
where
    I: Iterator<Item = u64> + Clone,
{
    let count = keys.clone().count();
    if count > 1 && input.first() == Some(&b'*') {
        return parse_mget(keys, count, format, input);
    }
    let (value, used) = match reply(input) {
        Ok(ok) => ok,
        Err(parsed) => return parsed,
    };
    if let Value::Error(_) | Value::BulkError(_) = value {
        return Parsed::Reply {
            tally: Tally::default(),
            error: Some(ErrorKind::ServerError),
            used,
        };
    }
    if count > 1 {
        return Parsed::Broken("MGET answered with something other than an array");
    }
    let mut cursor = KeyCursor::new(keys, format);
    let outcome = match value {
        Value::Bulk(data) => cursor.next_value(Some(data)),
        Value::NullBulk | Value::Null => cursor.next_value(None),
        _ => Err("GET answered with something other than a bulk string or null"),
    };
    match outcome {
        Ok(()) => Parsed::Reply { tally: cursor.finish(), error: None, used },
        Err(why) => Parsed::Broken(why),
    }
}

/// The reply to a GET, the load's commonest: a whole bulk string with a plain decimal
/// length, or RESP2's null. `None` for anything else, which `parse_reply` then reads; this
/// accepts only what it accepts, with the same meaning.
fn parse_single(id: u64, input: &[u8]) -> Option<Parsed> {
    let (data, used) = plain_bulk(input)?;
    let mut tally = Tally::default();
    match data {
        Some(data) => super::check_value(&mut tally, id, data),
        None => tally.misses = 1,
    }
    Some(Parsed::Reply { tally, error: None, used })
}

/// A whole bulk string with a plain decimal length (`Some(data)`), or RESP2's null
/// (`None`), at the front of `input`, and the bytes it spans. `None` for anything else
/// (a partial one included), which `parse_reply` then reads.
fn plain_bulk(input: &[u8]) -> Option<(Option<&[u8]>, usize)> {
    const NULL: &[u8] = b"$-1\r\n";
    if input.starts_with(NULL) {
        return Some((None, NULL.len()));
    }
    let rest = input.strip_prefix(b"$")?;
    let digits = rest.iter().take(10).take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits == 10 || rest.get(digits..digits + 2)? != b"\r\n" {
        return None;
    }
    let len = rest[..digits].iter().fold(0usize, |n, &b| n * 10 + usize::from(b - b'0'));
    let start = 1 + digits + 2;
    let end = start + len;
    if input.get(end..end + 2)? != b"\r\n" {
        return None;
    }
    Some((Some(&input[start..end]), end + 2))
}

fn parse_mget<I: Iterator<Item = u64>>(
    keys: I,
    count: usize,
    format: &KeyFormat,
    input: &[u8],
) -> Parsed {
    let Some(end) = input.windows(2).position(|w| w == b"\r\n") else {
        return Parsed::Incomplete;
    };
    let n: Option<usize> = std::str::from_utf8(&input[1..end]).ok().and_then(|s| s.parse().ok());
    if n != Some(count) {
        return Parsed::Broken("MGET reply has a different number of elements than keys");
    }
    let mut used = end + 2;
    let mut cursor = KeyCursor::new(keys, format);
    for _ in 0..count {
        let outcome = match plain_bulk(&input[used..]) {
            Some((data, n)) => {
                used += n;
                cursor.next_value(data)
            }
            None => {
                let (value, n) = match reply(&input[used..]) {
                    Ok(ok) => ok,
                    Err(parsed) => return parsed,
                };
                used += n;
                match value {
                    Value::Bulk(data) => cursor.next_value(Some(data)),
                    Value::NullBulk | Value::Null => cursor.next_value(None),
                    _ => Err("MGET element is not a bulk string or null"),
                }
            }
        };
        if let Err(why) = outcome {
            return Parsed::Broken(why);
        }
    }
    Parsed::Reply { tally: cursor.finish(), error: None, used }
}

pub(super) fn parse_set(input: &[u8]) -> Parsed {
    let (value, used) = match reply(input) {
        Ok(ok) => ok,
        Err(parsed) => return parsed,
    };
    let error = match value {
        Value::Simple(b"OK") => None,
        Value::NullBulk | Value::Null => Some(ErrorKind::NotStored),
        Value::Error(_) | Value::BulkError(_) => Some(ErrorKind::ServerError),
        _ => return Parsed::Broken("SET answered with something other than OK"),
    };
    Parsed::Reply { tally: Tally::default(), error, used }
}
