//! memcached's UDP transport (`-U PORT`, off by default): text and binary requests in datagrams,
//! each behind an 8-byte frame header (request id, sequence number, datagram count,
//! reserved; big-endian).
//!
//! The framing (sans-IO, memcached 1.6's byte for byte) is `proto_memcache::udp`; this is
//! the socket and the thread. Commands that end mid-datagram are dropped with it.
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
use proto_memcache::{
    udp::{self, DATAGRAM_BYTES_MAX},
    ParseError,
};

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
            UdpSocket::bind(addr).map_err(|e| format!("-U: cannot listen on UDP {addr}: {e}"))?;
        socket.set_read_timeout(Some(STOP_POLL)).map_err(|e| e.to_string())?;
        let local = socket.local_addr().map_err(|e| e.to_string())?;
        let (addr, idle) = (exec::conns::Addr::Udp(local), exec::conns::ConnState::Read);
        let entry = exec::conns::ConnEntry::new(addr, None, idle, 0);
        let session = exec::memcache::Session::connect(&shared, entry);
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
        self.stop.load(Ordering::Relaxed) || self.shared.core.shutdown.load(Ordering::Relaxed)
    }

    /// Runs every whole command in one datagram and sends each reply unit. The first byte
    /// picks the dialect, as on TCP.
    fn answer(&mut self, datagram: &[u8], peer: SocketAddr, out: &mut Vec<u8>) {
        counters::bump(&self.counters.bytes_read, datagram.len() as u64);
        let Some((request_id, payload)) = udp::request_payload(datagram) else { return };
        // UDP cannot log in: while the Redis users need a password, datagrams are dropped.
        if !exec::auth::admit_datagram(&self.shared, &mut self.session) {
            return;
        }
        self.session.note_activity(&self.shared, exec::conns::ConnState::Read);
        if payload[0] == proto_memcache::binary::REQUEST_MAGIC {
            return self.answer_binary(request_id, payload, peer, out);
        }
        let mut pos = 0;
        while pos < payload.len() {
            out.clear();
            match proto_memcache::parse_request(&payload[pos..], &self.limits) {
                Ok((request, used)) => {
                    pos += used;
                    let flow = self.execute_whole(&request, out);
                    for unit in udp::reply_units(&request, out) {
                        self.send_unit(request_id, unit, peer);
                    }
                    // A `watch` (Flow::Watch) has no connection to stream to: it registers
                    // nothing and answers nothing.
                    if flow == Flow::Close {
                        return;
                    }
                }
                Err(ParseError::TooLarge { skip, noreply, key_start, key_len, base64_key }) => {
                    let key = &payload[pos + key_start..][..key_len];
                    let session = &mut self.session;
                    exec::memcache::refuse_too_large(
                        &self.shared,
                        &self.counters,
                        session,
                        key,
                        base64_key,
                        noreply,
                        out,
                    );
                    if !out.is_empty() {
                        self.send_unit(request_id, out, peer);
                    }
                    pos = pos.saturating_add(skip.max(1));
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

    /// Runs one text request to the end: a multiget that streams its reply in chunks on TCP
    /// (`Flow::Again`) is run until done, since a datagram's reply is cut into units whole.
    fn execute_whole(&mut self, request: &proto_memcache::Request<'_>, out: &mut Vec<u8>) -> Flow {
        loop {
            let flow = exec::memcache::execute(
                &self.shared,
                &self.counters,
                &mut self.session,
                request,
                out,
            );
            if flow != Flow::Again {
                return flow;
            }
        }
    }

    /// Binary requests: each reply is one unit (a quiet success or miss sends nothing), as
    /// memcached frames them; a packet it would hang up on ends the datagram.
    fn answer_binary(
        &mut self,
        request_id: u16,
        payload: &[u8],
        peer: SocketAddr,
        out: &mut Vec<u8>,
    ) {
        use proto_memcache::binary::{compose_error, parse_request, BinParseError};
        let mut pos = 0;
        while pos < payload.len() {
            out.clear();
            match parse_request(&payload[pos..], &self.limits) {
                Ok((request, used)) => {
                    pos += used;
                    let flow = exec::binary::execute(
                        &self.shared,
                        &self.counters,
                        &mut self.session,
                        &request,
                        out,
                    );
                    if !out.is_empty() {
                        self.send_unit(request_id, out, peer);
                    }
                    if flow == Flow::Close {
                        return;
                    }
                }
                Err(BinParseError::Reject { opcode, opaque, status, skip, close }) => {
                    counters::bump(&self.counters.protocol_errors, 1);
                    compose_error(opcode, status, opaque, out);
                    self.send_unit(request_id, out, peer);
                    if close {
                        return;
                    }
                    pos = pos.saturating_add(skip.max(1));
                }
                Err(BinParseError::Incomplete | BinParseError::Close) => return,
            }
        }
    }

    /// One reply unit, as the datagrams `udp::datagrams` cuts it into.
    fn send_unit(&self, request_id: u16, unit: &[u8], peer: SocketAddr) {
        let mut datagram = Vec::with_capacity(DATAGRAM_BYTES_MAX);
        for (header, body) in udp::datagrams(request_id, unit) {
            datagram.clear();
            datagram.extend_from_slice(&header);
            datagram.extend_from_slice(body);
            match self.socket.send_to(&datagram, peer) {
                Ok(sent) => counters::bump(&self.counters.bytes_written, sent as u64),
                Err(e) => tracing::debug!("udp send to {peer}: {e}"),
            }
        }
    }
}
