//! memcached's UDP framing, sans-IO: the 8-byte frame header (request id, sequence number,
//! datagram count, reserved; big-endian) and how a reply is cut into datagrams, byte for
//! byte as memcached 1.6 does it.
//!
//! - A request is one datagram whose header says "1 datagram"; anything else is dropped, as
//!   is a datagram of 8 bytes or fewer.
//! - A reply goes out per response unit, each with its own sequence numbers from 0 and its own
//!   count, cut into datagrams of at most 1,400 bytes (1,392 of payload). For a get, each key
//!   is a unit: a hit is its `VALUE` block, a miss is an empty unit (sent as a bare header with
//!   count 0), and `END` joins the last key's unit. Any other command is one unit; `noreply`
//!   (an empty reply) sends nothing.

use crate::Request;

/// memcached's UDP_MAX_PAYLOAD_SIZE: a reply datagram's size, header included.
pub const DATAGRAM_BYTES_MAX: usize = 1400;
pub const HEADER_BYTES: usize = 8;
/// Reply bytes per datagram.
pub const PAYLOAD_BYTES_MAX: usize = DATAGRAM_BYTES_MAX - HEADER_BYTES;

/// One frame header.
pub fn header(request_id: u16, sequence: u16, count: u16) -> [u8; HEADER_BYTES] {
    let mut header = [0u8; HEADER_BYTES];
    header[0..2].copy_from_slice(&request_id.to_be_bytes());
    header[2..4].copy_from_slice(&sequence.to_be_bytes());
    header[4..6].copy_from_slice(&count.to_be_bytes());
    header
}

/// The request id and the commands, for a datagram memcached would serve: more than a
/// header, and a count of exactly one datagram (requests that span datagrams are dropped).
pub fn request_payload(datagram: &[u8]) -> Option<(u16, &[u8])> {
    if datagram.len() <= HEADER_BYTES || datagram[4..6] != [0, 1] {
        return None;
    }
    Some((u16::from_be_bytes([datagram[0], datagram[1]]), &datagram[HEADER_BYTES..]))
}

/// How one command's reply is cut into units. `noreply` (an empty reply to anything but a
/// get) sends nothing.
pub fn reply_units<'a>(request: &Request<'_>, reply: &'a [u8]) -> Vec<&'a [u8]> {
    if let Request::Retrieve(retrieve) = request {
        if let Some(units) = get_units(retrieve.keys.iter(), reply) {
            return units;
        }
    }
    match reply.is_empty() {
        true => Vec::new(),
        false => vec![reply],
    }
}

/// A get's reply as one unit per key: the key's `VALUE` block or nothing, with `END` in the
/// last. `None` when the reply is not `VALUE` blocks and `END` (an error): one unit then.
pub fn get_units<'k, 'a>(
    keys: impl Iterator<Item = &'k [u8]>,
    reply: &'a [u8],
) -> Option<Vec<&'a [u8]>> {
    let mut blocks = value_blocks(reply)?.into_iter().peekable();
    let mut units = Vec::new();
    let mut end_of_last = 0;
    for key in keys {
        match blocks.peek() {
            Some(&(block_key, start, end)) if block_key == key => {
                units.push(&reply[start..end]);
                end_of_last = end;
                blocks.next();
            }
            _ => units.push(&reply[end_of_last..end_of_last]),
        }
    }
    if blocks.next().is_some() {
        return None;
    }
    // The last unit runs on to the end of the reply, so it carries END.
    let last = units.pop()?;
    let last_start = last.as_ptr() as usize - reply.as_ptr() as usize;
    units.push(&reply[last_start..]);
    Some(units)
}

/// Each `VALUE` block's key and byte range, when the reply is blocks followed by `END`.
fn value_blocks(reply: &[u8]) -> Option<Vec<(&[u8], usize, usize)>> {
    let mut blocks = Vec::new();
    let mut pos = 0;
    while reply.get(pos..)?.starts_with(b"VALUE ") {
        let line_len = memchr_crlf(&reply[pos..])?;
        let mut words = reply[pos..pos + line_len].split(|&b| b == b' ').skip(1);
        let key = words.next()?;
        let data_len: usize = std::str::from_utf8(words.nth(1)?).ok()?.parse().ok()?;
        let end = (pos + line_len + 2).checked_add(data_len)?.checked_add(2)?;
        blocks.push((key, pos, end));
        pos = end;
    }
    (reply.get(pos..)? == b"END\r\n").then_some(blocks)
}

fn memchr_crlf(bytes: &[u8]) -> Option<usize> {
    bytes.windows(2).position(|pair| pair == b"\r\n")
}

/// A unit's datagrams: header and body, numbered from 0, each with the unit's count (at
/// most 65,535, as memcached caps it). An empty unit is one bare header with count 0.
pub fn datagrams(
    request_id: u16,
    unit: &[u8],
) -> impl Iterator<Item = ([u8; HEADER_BYTES], &[u8])> + '_ {
    let count = unit.len().div_ceil(PAYLOAD_BYTES_MAX).min(usize::from(u16::MAX));
    (0..count.max(1)).map(move |sequence| {
        let start = (sequence * PAYLOAD_BYTES_MAX).min(unit.len());
        let end = (start + PAYLOAD_BYTES_MAX).min(unit.len());
        (header(request_id, sequence as u16, count as u16), &unit[start..end])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units<'a>(keys: &[&[u8]], reply: &'a [u8]) -> Vec<&'a [u8]> {
        get_units(keys.iter().copied(), reply).unwrap()
    }

    #[test]
    fn a_get_is_one_unit_per_key_with_end_in_the_last() {
        let reply = b"VALUE a 0 1\r\nx\r\nEND\r\n";
        assert_eq!(units(&[b"a", b"b"], reply), [&b"VALUE a 0 1\r\nx\r\n"[..], b"END\r\n"]);
        assert_eq!(units(&[b"b", b"a"], reply), [&b""[..], b"VALUE a 0 1\r\nx\r\nEND\r\n"]);
        assert_eq!(units(&[b"b", b"c"], b"END\r\n"), [&b""[..], b"END\r\n"]);
    }

    #[test]
    fn an_error_reply_is_one_unit() {
        assert!(get_units([&b"a"[..]].into_iter(), b"SERVER_ERROR out of memory\r\n").is_none());
    }

    #[test]
    fn requests_spanning_datagrams_are_dropped() {
        assert!(request_payload(&[0, 1, 0, 0, 0, 2, 0, 0, b'g']).is_none());
        assert!(request_payload(&[0, 1, 0, 0, 0, 1, 0, 0]).is_none());
        assert_eq!(request_payload(&[0, 7, 0, 0, 0, 1, 0, 0, b'g']), Some((7, &b"g"[..])));
    }

    #[test]
    fn units_are_cut_at_1392_bytes() {
        let unit = vec![b'x'; 2 * PAYLOAD_BYTES_MAX + 1];
        let cut: Vec<_> = datagrams(5, &unit).collect();
        assert_eq!(cut.len(), 3);
        assert_eq!(cut[2].0, [0, 5, 0, 2, 0, 3, 0, 0]);
        assert_eq!(cut.iter().map(|(_, body)| body.len()).sum::<usize>(), unit.len());
        assert_eq!(datagrams(5, b"").collect::<Vec<_>>(), [([0, 5, 0, 0, 0, 0, 0, 0], &b""[..])]);
    }

    #[test]
    fn headers_are_big_endian() {
        assert_eq!(header(0x0102, 3, 4), [1, 2, 0, 3, 0, 4, 0, 0]);
    }
}
