//! memcached meta: `mg <key> v` for one key; for several, `mg <key> v k q` per key and a
//! closing `mn` (quiet mode drops the misses, `MN` ends the batch: memcached's recommended
//! multiget); `ms <key> <len> [T<ttl>]` for a set.

use proto_memcache::{
    meta::{compose_meta, Flag, MetaCommand, MetaStatus},
    Response,
};

use super::{
    memcache::{error_of, response},
    ErrorKind, KeyCursor, Parsed, Scratch, SetArgs, Tally,
};
use crate::workload::KeyFormat;

pub(super) fn compose_get(
    keys: &[u64],
    format: &KeyFormat,
    scratch: &mut Scratch,
    out: &mut Vec<u8>,
) {
    if let [key] = keys {
        compose_meta(MetaCommand::Get, format.key(*key).as_bytes(), [Flag::ReturnValue], b"", out);
        return;
    }
    for key in scratch.keys(keys, format) {
        let flags = [Flag::ReturnValue, Flag::ReturnKey, Flag::Quiet];
        compose_meta(MetaCommand::Get, key, flags, b"", out);
    }
    compose_meta(MetaCommand::Noop, b"", [], b"", out);
}

pub(super) fn compose_set(
    key: u64,
    set: &SetArgs,
    format: &KeyFormat,
    scratch: &mut Scratch,
    out: &mut Vec<u8>,
) {
    let ttl = (set.ttl_secs > 0).then_some(Flag::UpdateTtl { ttl_secs: i64::from(set.ttl_secs) });
    let value = scratch.value(key, set);
    compose_meta(MetaCommand::Set, format.key(key).as_bytes(), ttl, value, out);
}

pub(super) fn parse_get<I>(mut keys: I, format: &KeyFormat, input: &[u8]) -> Parsed
where
    I: Iterator<Item = u64> + Clone,
{
    let single = {
        let mut probe = keys.clone();
        probe.next().is_some() && probe.next().is_none()
    };
    if single {
        return parse_single(keys.next().expect("one key"), format, input);
    }
    let mut cursor = KeyCursor::new(keys, format);
    let mut used = 0;
    // Bounded by the input: every reply consumes at least one byte.
    loop {
        let (response, n) = match response(&input[used..]) {
            Ok(ok) => ok,
            Err(parsed) => return parsed,
        };
        used += n;
        let Response::Meta(meta) = response else {
            // An error line answers one `mg`; the batch still ends at `MN`.
            if let Some(error) = error_of(&response) {
                return finish_after_error(error, cursor, input, used);
            }
            return Parsed::Broken("a meta get answered with a non-meta reply");
        };
        match (meta.status, meta.value, meta.flags.get(b'k')) {
            (MetaStatus::Mn, _, _) => {
                return Parsed::Reply { tally: cursor.finish(), error: None, used }
            }
            (MetaStatus::Va, Some(data), Some(key)) => {
                if let Err(why) = cursor.item(key, data) {
                    return Parsed::Broken(why);
                }
            }
            (MetaStatus::En, _, _) => {} // quiet mode drops these; a miss either way
            _ => return Parsed::Broken("unexpected meta reply in a multiget"),
        }
    }
}

/// Skips to the batch's `MN` after an error reply, so the stream stays framed.
fn finish_after_error<I: Iterator<Item = u64>>(
    error: ErrorKind,
    cursor: KeyCursor<'_, I>,
    input: &[u8],
    mut used: usize,
) -> Parsed {
    loop {
        let (response, n) = match response(&input[used..]) {
            Ok(ok) => ok,
            Err(parsed) => return parsed,
        };
        used += n;
        if let Response::Meta(meta) = response {
            if meta.status == MetaStatus::Mn {
                let mut tally = cursor.finish();
                tally.misses = 0;
                return Parsed::Reply { tally, error: Some(error), used };
            }
        }
    }
}

fn parse_single(key: u64, format: &KeyFormat, input: &[u8]) -> Parsed {
    let (response, used) = match response(input) {
        Ok(ok) => ok,
        Err(parsed) => return parsed,
    };
    if let Some(error) = error_of(&response) {
        return Parsed::Reply { tally: Tally::default(), error: Some(error), used };
    }
    let mut cursor = KeyCursor::new(std::iter::once(key), format);
    let outcome = match response {
        Response::Meta(meta) => match (meta.status, meta.value) {
            (MetaStatus::Va, Some(data)) => cursor.next_value(Some(data)),
            (MetaStatus::En, _) => cursor.next_value(None),
            _ => Err("unexpected meta reply to mg"),
        },
        _ => Err("mg answered with a non-meta reply"),
    };
    match outcome {
        Ok(()) => Parsed::Reply { tally: cursor.finish(), error: None, used },
        Err(why) => Parsed::Broken(why),
    }
}

pub(super) fn parse_set(input: &[u8]) -> Parsed {
    let (response, used) = match response(input) {
        Ok(ok) => ok,
        Err(parsed) => return parsed,
    };
    let error = match response {
        Response::Meta(meta) if meta.status == MetaStatus::Hd => None,
        Response::Meta(meta) if meta.status == MetaStatus::Ns => Some(ErrorKind::NotStored),
        other => match error_of(&other) {
            Some(error) => Some(error),
            None => return Parsed::Broken("ms answered with something other than HD/NS"),
        },
    };
    Parsed::Reply { tally: Tally::default(), error, used }
}
