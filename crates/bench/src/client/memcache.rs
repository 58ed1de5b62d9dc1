//! memcached text: `get k1 k2 ...` and `set k 0 ttl len`.

use proto_memcache::{
    compose_retrieve, compose_store, parse_response,
    text::{response::Status, RetrieveKind, Store, StoreCommand},
    Limits, Response, ResponseError,
};

use super::{ErrorKind, KeyCursor, Parsed, Scratch, SetArgs, Tally};
use crate::workload::KeyFormat;

pub(super) fn compose_get(
    keys: &[u64],
    format: &KeyFormat,
    scratch: &mut Scratch,
    out: &mut Vec<u8>,
) {
    compose_retrieve(RetrieveKind::Get, scratch.keys(keys, format), out);
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
