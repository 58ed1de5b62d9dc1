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
use proto_memcache::udp::{self, DATAGRAM_BYTES_MAX};

use crate::dialect::{self, Budget, Dialect, MemcacheConn, Step};

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
    /// The port's one memcached session (UDP has no connections).
    conn: MemcacheConn,
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
        let session = exec::memcache::Session::connect(shared.memcache_view(), entry);
        let conn = MemcacheConn::new(session, 0);
        Ok(UdpServer { socket, shared, counters, limits, stop, conn })
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
        let conn = &mut self.conn;
        // UDP cannot log in: while the Redis users need a password, datagrams are dropped.
        if !exec::auth::admit_datagram(self.shared.memcache_view(), &mut conn.session) {
            return;
        }
        conn.session.note_activity(self.shared.memcache_view(), exec::conns::ConnState::Read);
        // A refused request's bytes are skipped within its datagram only.
        conn.swallow_bytes = 0;
        out.clear();
        let (shared, counters) = (&*self.shared, &*self.counters);
        let ctx = dialect::Ctx { view: shared.memcache_view(), counters, limits: &self.limits };
        let sender = Sender { socket: &self.socket, counters, request_id, peer };
        // Commands that end mid-datagram, and what follows a packet a TCP connection would
        // hang up on, are dropped with it.
        if payload[0] == proto_memcache::binary::REQUEST_MAGIC {
            let mut binary = Datagram { inner: dialect::Binary::datagram(ctx, conn), sender };
            dialect::serve(&mut binary, counters, Budget::UNLIMITED, payload, out);
        } else {
            let mut text = Datagram { inner: dialect::Text::datagram(ctx, conn), sender };
            dialect::serve(&mut text, counters, Budget::UNLIMITED, payload, out);
        }
    }
}

/// Where a datagram's replies go.
struct Sender<'a> {
    socket: &'a UdpSocket,
    counters: &'a Counters,
    request_id: u16,
    peer: SocketAddr,
}

impl Sender<'_> {
    /// One reply unit, as the datagrams `udp::datagrams` cuts it into.
    fn send_unit(&self, unit: &[u8]) {
        let (request_id, peer) = (self.request_id, self.peer);
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

/// How a dialect's reply to one request is cut into reply units.
trait Units: Dialect {
    fn units<'o>(request: &Self::Request<'_>, reply: &'o [u8]) -> Vec<&'o [u8]>;
}

impl Units for dialect::Text<'_> {
    /// A get's reply is one unit per key; a `noreply` (empty) reply sends nothing.
    fn units<'o>(request: &Self::Request<'_>, reply: &'o [u8]) -> Vec<&'o [u8]> {
        udp::reply_units(request, reply)
    }
}

impl Units for dialect::Binary<'_> {
    /// Each reply is one unit (a quiet success or miss sends nothing), as memcached frames
    /// them.
    fn units<'o>(_request: &Self::Request<'_>, reply: &'o [u8]) -> Vec<&'o [u8]> {
        match reply.is_empty() {
            true => Vec::new(),
            false => vec![reply],
        }
    }
}

/// A stream dialect served over datagrams: each request's reply (or refusal) is sent as its
/// own units at once, a long reply is made whole, and what would break a stream's framing
/// ends the datagram quietly.
struct Datagram<'a, D> {
    inner: D,
    sender: Sender<'a>,
}

impl<D: Units> Datagram<'_, D> {
    /// A refusal's answer is a unit of its own; what would break a stream's framing ends
    /// the datagram quietly (no protocol error counted).
    fn answered(&self, step: Step, out: &[u8]) -> Step {
        if !out.is_empty() {
            self.sender.send_unit(out);
        }
        match step {
            Step::Broken => Step::HangUp,
            step => step,
        }
    }
}

impl<D: Units> Dialect for Datagram<'_, D> {
    type Request<'r> = D::Request<'r>;
    type Error = D::Error;
    type Scratch = D::Scratch;

    fn intercept(&mut self, input: &[u8], out: &mut Vec<u8>) -> Option<Step> {
        // Each request's reply is sent on its own, so each starts from an empty buffer.
        out.clear();
        let step = self.inner.intercept(input, out)?;
        Some(self.answered(step, out))
    }

    fn parse<'r>(
        &mut self,
        input: &'r [u8],
        scratch: D::Scratch,
    ) -> Result<(Self::Request<'r>, usize), Self::Error> {
        self.inner.parse(input, scratch)
    }

    fn refuse(&mut self, error: Self::Error, input: &[u8], out: &mut Vec<u8>) -> Step {
        let step = self.inner.refuse(error, input, out);
        self.answered(step, out)
    }

    /// Runs the request to the end (a multiget that streams its reply in chunks on TCP is
    /// run until done), then sends its reply units.
    fn execute(&mut self, request: &Self::Request<'_>, used: usize, out: &mut Vec<u8>) -> Flow {
        let flow = loop {
            let flow = self.inner.execute(request, used, out);
            if flow != Flow::Again {
                break flow;
            }
        };
        for unit in D::units(request, out) {
            self.sender.send_unit(unit);
        }
        flow
    }

    fn counts(&self, request: &Self::Request<'_>) -> bool {
        self.inner.counts(request)
    }

    fn recycle(&mut self, request: Self::Request<'_>) -> D::Scratch {
        self.inner.recycle(request)
    }

    // `watch`: a datagram has no connection to stream to; it registers nothing and answers
    // nothing (the default).
}
