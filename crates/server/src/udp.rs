//! memcached's UDP transport (`-U PORT`, off by default): the text protocol in datagrams,
//! each behind an 8-byte frame header (request id, sequence number, datagram count,
//! reserved; big-endian).
//!
//! Framing follows memcached 1.6 byte for byte:
//! - A request is one datagram whose header says "1 datagram"; anything else is dropped, as
//!   is a datagram of 8 bytes or fewer. Commands that end mid-datagram are dropped with it.
//! - A reply is sent per response unit, each with its own sequence numbers from 0 and its own
//!   count, cut into datagrams of at most 1,400 bytes (1,392 of payload). For a get, each key
//!   is a unit: a hit is its `VALUE` block, a miss is an empty unit (a bare header with count
//!   0), and `END` joins the last key's unit. Any other command is one unit; `noreply` sends
//!   nothing.
//!
//! Amplification: a small get can produce many datagrams to a spoofed source address, which
//! is why UDP stays off unless asked for, and binds only the `-l` addresses.
//!
//! One blocking thread per address serves it, outside the event loops: the transport is rare
//! enough that it does not earn a path through `rt`. The thread polls the stop flag between
//! datagrams (a read timeout bounds the wait).

use std::{
    io,
    net::{SocketAddr, UdpSocket},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    thread::JoinHandle,
    time::Duration,
};

use exec::{counters, Counters, Flow, Shared};
use proto_memcache::{ParseError, Request};

/// memcached's UDP_MAX_PAYLOAD_SIZE: a reply datagram's size, header included.
const DATAGRAM_BYTES_MAX: usize = 1400;
const HEADER_BYTES: usize = 8;
const PAYLOAD_BYTES_MAX: usize = DATAGRAM_BYTES_MAX - HEADER_BYTES;
/// The largest datagram IPv4 can carry.
const RECEIVE_BYTES_MAX: usize = 65536;
/// How long a receive waits before the thread looks at the stop flag again.
const STOP_POLL: Duration = Duration::from_millis(100);

/// One UDP port on one address, served by its own thread.
pub struct UdpServer {
    socket: UdpSocket,
    shared: Arc<Shared>,
    counters: Arc<Counters>,
    limits: proto_memcache::Limits,
    stop: Arc<AtomicBool>,
    session: exec::memcache::Session,
}

impl UdpServer {
    pub fn bind(
        addr: SocketAddr,
        shared: Arc<Shared>,
        counters: Arc<Counters>,
        limits: proto_memcache::Limits,
        stop: Arc<AtomicBool>,
    ) -> Result<UdpServer, String> {
        let socket =
            UdpSocket::bind(addr).map_err(|e| format!("cannot listen on UDP {addr}: {e}"))?;
        socket.set_read_timeout(Some(STOP_POLL)).map_err(|e| e.to_string())?;
        let session = Default::default();
        Ok(UdpServer { socket, shared, counters, limits, stop, session })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    pub fn spawn(mut self) -> io::Result<JoinHandle<()>> {
        std::thread::Builder::new().name("spinel-udp".into()).spawn(move || self.serve())
    }

    fn serve(&mut self) {
        let mut datagram = vec![0u8; RECEIVE_BYTES_MAX];
        let mut out = Vec::new();
        while !self.stopping() {
            match self.socket.recv_from(&mut datagram) {
                Ok((len, peer)) => self.answer(&datagram[..len], peer, &mut out),
                Err(e)
                    if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {}
                Err(e) => tracing::debug!("udp receive: {e}"),
            }
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.shared.shutdown.load(Ordering::Relaxed)
    }

    /// Runs every whole command in one datagram and sends each reply unit.
    fn answer(&mut self, datagram: &[u8], peer: SocketAddr, out: &mut Vec<u8>) {
        counters::bump(&self.counters.bytes_read, datagram.len() as u64);
        let Some((request_id, payload)) = request_payload(datagram) else { return };
        let mut pos = 0;
        while pos < payload.len() {
            out.clear();
            match proto_memcache::parse_request(&payload[pos..], &self.limits) {
                Ok((request, used)) => {
                    pos += used;
                    let flow = exec::memcache::execute(
                        &self.shared,
                        &self.counters,
                        &mut self.session,
                        &request,
                        out,
                    );
                    for unit in reply_units(&request, out) {
                        self.send_unit(request_id, unit, peer);
                    }
                    if flow == Flow::Close {
                        return;
                    }
                }
                // A TCP connection would close: the rest of the datagram is dropped.
                Err(ParseError::Incomplete | ParseError::Close) => return,
                Err(ParseError::Invalid { skip, reply, noreply }) => {
                    counters::bump(&self.counters.protocol_errors, 1);
                    pos += skip.max(1);
                    if !noreply {
                        reply.compose(out);
                        self.send_unit(request_id, out, peer);
                    }
                }
            }
        }
    }

    /// One reply unit: its datagrams numbered from 0, each with the unit's count.
    fn send_unit(&self, request_id: u16, unit: &[u8], peer: SocketAddr) {
        let count = unit.len().div_ceil(PAYLOAD_BYTES_MAX).min(usize::from(u16::MAX));
        let mut datagram = Vec::with_capacity(DATAGRAM_BYTES_MAX);
        // An empty unit still goes out as a bare header, as memcached sends a missed key.
        for sequence in 0..count.max(1) {
            let start = (sequence * PAYLOAD_BYTES_MAX).min(unit.len());
            let end = (start + PAYLOAD_BYTES_MAX).min(unit.len());
            datagram.clear();
            datagram.extend_from_slice(&header(request_id, sequence as u16, count as u16));
            datagram.extend_from_slice(&unit[start..end]);
            match self.socket.send_to(&datagram, peer) {
                Ok(sent) => counters::bump(&self.counters.bytes_written, sent as u64),
                Err(e) => tracing::debug!("udp send to {peer}: {e}"),
            }
        }
    }
}

fn header(request_id: u16, sequence: u16, count: u16) -> [u8; HEADER_BYTES] {
    let mut header = [0u8; HEADER_BYTES];
    header[0..2].copy_from_slice(&request_id.to_be_bytes());
    header[2..4].copy_from_slice(&sequence.to_be_bytes());
    header[4..6].copy_from_slice(&count.to_be_bytes());
    header
}

/// The request id and the commands, for a datagram memcached would serve: more than a
/// header, and a count of exactly one datagram (requests that span datagrams are dropped).
fn request_payload(datagram: &[u8]) -> Option<(u16, &[u8])> {
    if datagram.len() <= HEADER_BYTES || datagram[4..6] != [0, 1] {
        return None;
    }
    Some((u16::from_be_bytes([datagram[0], datagram[1]]), &datagram[HEADER_BYTES..]))
}

/// How one command's reply is cut into units. `noreply` (an empty reply to anything but a
/// get) sends nothing.
fn reply_units<'a>(request: &Request<'_>, reply: &'a [u8]) -> Vec<&'a [u8]> {
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
fn get_units<'k, 'a>(
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
    while reply[pos..].starts_with(b"VALUE ") {
        let line_len = memchr_crlf(&reply[pos..])?;
        let mut words = reply[pos..pos + line_len].split(|&b| b == b' ').skip(1);
        let key = words.next()?;
        let data_len: usize = std::str::from_utf8(words.nth(1)?).ok()?.parse().ok()?;
        let end = pos + line_len + 2 + data_len + 2;
        blocks.push((key, pos, end));
        pos = end;
    }
    (reply.get(pos..)? == b"END\r\n").then_some(blocks)
}

fn memchr_crlf(bytes: &[u8]) -> Option<usize> {
    bytes.windows(2).position(|pair| pair == b"\r\n")
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
    fn headers_are_big_endian() {
        assert_eq!(header(0x0102, 3, 4), [1, 2, 0, 3, 0, 4, 0, 0]);
    }
}
