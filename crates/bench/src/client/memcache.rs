//! memcached text: `get k1 k2 ...` and `set k 0 ttl len`.

use proto_memcache::{
    compose_store, parse_response,
    text::{response::Status, Store, StoreCommand},
    Limits, Response, ResponseError,
};

use super::{ErrorKind, KeyCursor, Parsed, Scratch, SetArgs, Tally};
use crate::workload::KeyFormat;
use proto_memcache::limits::LINE_LEN_MAX_DEFAULT;

/// `get k1 k2 ...`: the line `compose_retrieve` writes, with each key formatted straight
/// into `out` (no key buffer per key: the load generator must stay cheaper than the
/// store-less limit server it measures).
pub(super) fn compose_get(keys: &[u64], format: &KeyFormat, out: &mut Vec<u8>) {
    out.extend_from_slice(b"get");
    for &id in keys {
        out.push(b' ');
        format.append_key(id, out);
    }
    out.extend_from_slice(b"\r\n");
}

pub(super) fn compose_set(
    key: u64,
    set: &SetArgs,
    format: &KeyFormat,
    scratch: &mut Scratch,
    out: &mut Vec<u8>,
) {
    let key_buf = format.key(key);
    let store = Store {
        command: StoreCommand::Set,
        key: key_buf.as_bytes(),
        flags: 0,
        exptime: i64::from(set.ttl_secs),
        value: scratch.value(key, set),
        noreply: false,
    };
    compose_store(&store, out);
}

/// Limits for replies: no bound on value size beyond memory (the server decides).
fn limits() -> Limits {
    Limits { value_len_max: usize::MAX / 2, ..Limits::default() }
}

/// Parses one reply (text and meta share the codec's response parser).
pub(super) fn response(input: &[u8]) -> Result<(Response<'_>, usize), Parsed> {
    match parse_response(input, &limits()) {
        Ok(ok) => Ok(ok),
        Err(ResponseError::Incomplete) => Err(Parsed::Incomplete),
        Err(ResponseError::Malformed { reason }) => Err(Parsed::Broken(reason)),
    }
}

/// The error replies any request may get, in either dialect.
pub(super) fn error_of(response: &Response<'_>) -> Option<ErrorKind> {
    match response {
        Response::ServerError(_) => Some(ErrorKind::ServerError),
        Response::ClientError(_) => Some(ErrorKind::ClientError),
        Response::Error => Some(ErrorKind::Error),
        _ => None,
    }
}

pub(super) fn parse_get<I>(keys: I, format: &KeyFormat, input: &[u8]) -> Parsed
where
    I: Iterator<Item = u64> + Clone,
{
    let mut first_two = keys.clone();
    if let (Some(id), None) = (first_two.next(), first_two.next()) {
        if let Some(parsed) = parse_single(id, format, input) {
            return parsed;
        }
    }
    match parse_plain_values(keys.clone(), format, input) {
        Some(parsed) => parsed,
        None => parse_get_by_codec(keys, format, input),
    }
}

/// Any reply to a get, read with the codec's response parser.
pub(super) fn parse_get_by_codec<I>(keys: I, format: &KeyFormat, input: &[u8]) -> Parsed
where
    I: Iterator<Item = u64> + Clone,
{
    let (response, used) = match response(input) {
        Ok(ok) => ok,
        Err(parsed) => return parsed,
    };
    if let Some(error) = error_of(&response) {
        return Parsed::Reply { tally: Tally::default(), error: Some(error), used };
    }
    let Response::Values(values) = response else {
        return Parsed::Broken("a get answered with something other than values");
    };
    let mut cursor = KeyCursor::new(keys, format);
    for item in values.iter() {
        if let Err(why) = cursor.item(item.key, item.data) {
            return Parsed::Broken(why);
        }
    }
    Parsed::Reply { tally: cursor.finish(), error: None, used }
}

/// The common reply read in one pass, checking each item as it goes: whole `VALUE <key>
/// <flags> <bytes>[ <cas>]\r\n<data>\r\n` items (single spaces, plain digits, lines within
/// the codec's limit) then `END\r\n`, or such items cut short by the end of the input
/// (`Incomplete`, as the codec says). `None` for anything else (an error line, any other
/// spelling): the codec's parser then decides, so this path accepts only what the codec
/// accepts, with the same meaning.
fn parse_plain_values<I>(keys: I, format: &KeyFormat, input: &[u8]) -> Option<Parsed>
where
    I: Iterator<Item = u64>,
{
    let mut cursor = KeyCursor::new(keys, format);
    let mut broken = None;
    let mut at = 0;
    while let Some(rest) = input[at..].strip_prefix(b"VALUE ") {
        let Some((key, data_len, line_len)) = value_line(rest) else {
            return line_cut_short(rest).then_some(Parsed::Incomplete);
        };
        let data_start = at + b"VALUE ".len() + line_len;
        let data_end = data_start.checked_add(data_len)?;
        // The codec waits for the data and its terminator whatever the bytes so far.
        let Some(terminator) = input.get(data_end..data_end.checked_add(2)?) else {
            return Some(Parsed::Incomplete);
        };
        if terminator != b"\r\n" {
            return None;
        }
        if broken.is_none() {
            broken = cursor.item(key, &input[data_start..data_end]).err();
        }
        at = data_end + 2;
    }
    let rest = &input[at..];
    // Fewer than six bytes and no line end: the codec waits for the rest of the line.
    if rest.len() < b"VALUE ".len() && !rest.contains(&b'\n') {
        return Some(Parsed::Incomplete);
    }
    // A reply that does not answer the request is reported once whole, as the codec's.
    rest.starts_with(b"END\r\n").then(|| match broken {
        Some(why) => Parsed::Broken(why),
        None => {
            let used = at + b"END\r\n".len();
            Parsed::Reply { tally: cursor.finish(), error: None, used }
        }
    })
}

/// Whether `rest` (after `VALUE `) is a value line the input cut short: no line end yet,
/// and too short for the codec to call the line too long.
fn line_cut_short(rest: &[u8]) -> bool {
    rest.len() < LINE_LEN_MAX_DEFAULT - 4 && !rest.contains(&b'\n')
}

/// The reply to a single-key get, the load's commonest: `END\r\n`, or one whole plain item
/// for key `id` (the key compared in place at the length it must have) then `END\r\n`.
/// `None` for anything else, which [`parse_plain_values`] and the codec then read: like
/// that path, it accepts only what the codec accepts, with the same meaning.
fn parse_single(id: u64, format: &KeyFormat, input: &[u8]) -> Option<Parsed> {
    const END: &[u8] = b"END\r\n";
    if input.starts_with(END) {
        let tally = Tally { misses: 1, ..Tally::default() };
        return Some(Parsed::Reply { tally, error: None, used: END.len() });
    }
    let rest = input.strip_prefix(b"VALUE ")?;
    let key_len = format.key_len(id);
    if rest.get(key_len) != Some(&b' ') || !format.is_key(id, &rest[..key_len]) {
        return None;
    }
    let (data_len, line_len) = after_key(rest, key_len)?;
    let data_start = b"VALUE ".len() + line_len;
    let data_end = data_start.checked_add(data_len)?;
    let end = data_end.checked_add(2 + END.len())?;
    let tail = input.get(data_end..end)?;
    if &tail[..2] != b"\r\n" || &tail[2..] != END {
        return None;
    }
    let mut tally = Tally::default();
    super::check_value(&mut tally, id, &input[data_start..data_end]);
    Some(Parsed::Reply { tally, error: None, used: end })
}

/// `<key> <flags> <bytes>[ <cas>]\r\n` at the start of `rest`: the key, the data length and
/// the bytes the line spans.
fn value_line(rest: &[u8]) -> Option<(&[u8], usize, usize)> {
    let key_len = line_window(rest).iter().position(|&b| b == b' ')?;
    if rest[..key_len].contains(&b'\n') {
        return None;
    }
    let (data_len, line_len) = after_key(rest, key_len)?;
    Some((&rest[..key_len], data_len, line_len))
}

/// The part of `rest` (a value line after `VALUE `) the codec looks for the line's end in:
/// its first LINE_LEN_MAX_DEFAULT + 2 bytes, six of which are `VALUE `.
fn line_window(rest: &[u8]) -> &[u8] {
    &rest[..rest.len().min(LINE_LEN_MAX_DEFAULT - 4)]
}

/// The rest of a value line whose key (no space, no LF: the caller has checked) is the first
/// `key_len` bytes of `rest`: the data length and the bytes the whole line spans.
fn after_key(rest: &[u8], key_len: usize) -> Option<(usize, usize)> {
    let window = line_window(rest);
    if key_len == 0 || window.get(key_len) != Some(&b' ') {
        return None;
    }
    let (flags, after_flags) = plain_number(&window[key_len + 1..])?;
    u32::try_from(flags).ok()?;
    let after = &window[key_len + 1 + after_flags..];
    let (data_len, after_len) = plain_number(after.strip_prefix(b" ")?)?;
    let mut line_len = key_len + 1 + after_flags + 1 + after_len;
    if let Some(cas) = window[line_len..].strip_prefix(b" ") {
        line_len += 1 + plain_number(cas)?.1;
    }
    if !window[line_len..].starts_with(b"\r\n") {
        return None;
    }
    Some((usize::try_from(data_len).ok()?, line_len + 2))
}

/// Leading decimal digits of `bytes` (1 to 19 of them): the value and the digits read.
fn plain_number(bytes: &[u8]) -> Option<(u64, usize)> {
    let digits = bytes.iter().take(20).take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 19 {
        return None;
    }
    let value = bytes[..digits].iter().fold(0u64, |n, &b| n * 10 + u64::from(b - b'0'));
    Some((value, digits))
}

pub(super) fn parse_set(input: &[u8]) -> Parsed {
    let (response, used) = match response(input) {
        Ok(ok) => ok,
        Err(parsed) => return parsed,
    };
    let error = match response {
        Response::Status(Status::Stored) => None,
        Response::Status(Status::NotStored) => Some(ErrorKind::NotStored),
        other => match error_of(&other) {
            Some(error) => Some(error),
            None => return Parsed::Broken("a set answered with something other than a status"),
        },
    };
    Parsed::Reply { tally: Tally::default(), error, used }
}
