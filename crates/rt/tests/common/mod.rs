//! A line-protocol handler and a harness that runs one loop on its own thread.
//!
//! Protocol (one request per `\n`-terminated line):
//! - `big N`  → N bytes of `a..z` repeated, then `\n`
//! - `tag`    → the accepting listener's tag, then `\n`
//! - `quit`   → `bye\n`, then close after the flush
//! - `stream` → `streaming\n`, then `tick N\n` at every tick (`After::Stream`)
//! - `stream N` → as `stream`, and the connection is cut off (closed after the flush)
//!   once it has streamed `tick N\n`
//! - `subscribe` → `subscribed\n`; from then on every `Handler::stream` call moves all
//!   items of the shared [`Feed`] to this connection (an item `cut` sends `cut\n`, then
//!   closes after the flush)
//! - `block` → nothing yet: the connection waits (its further input is held back, unread by
//!   the handler) until a `Handler::stream` call finds an item in the [`Feed`]; it then
//!   sends that item and returns `After::Yield`, and the held input runs (a Redis BLPOP)
//! - anything else → the line echoed back

#![allow(dead_code)] // each test binary uses a different part of the harness

use std::{
    collections::VecDeque,
    io::{self, Read, Write},
    net::{SocketAddr, TcpStream},
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use rt::{After, Backend, Control, Handler, Listener, LoopConfig};

#[derive(Default)]
pub struct Stats {
    pub accepted: AtomicUsize,
    pub refused: AtomicUsize,
    pub closed: AtomicUsize,
    pub sent_bytes: AtomicUsize,
    /// Sends that wrote something (one `Handler::sent` call each).
    pub sends: AtomicUsize,
    pub receive_calls: AtomicUsize,
    /// `Handler::tick` calls.
    pub ticks: AtomicUsize,
}

/// Items the test pushes for subscribers (`subscribe`), a stand-in for a pub/sub mailbox.
pub type Feed = Arc<Mutex<VecDeque<Vec<u8>>>>;

pub struct Lines {
    pub stop: Arc<AtomicBool>,
    pub stats: Arc<Stats>,
    /// Refuse every connection with this line.
    pub refuse: Option<&'static [u8]>,
    /// Answer at most one line per `receive` call (tests that the tail is offered again).
    pub one_line_per_call: bool,
    /// Connections accepted on this listener tag get a [`Xor`] session.
    pub session_tag: Option<u32>,
    pub feed: Feed,
}

/// A stand-in for TLS (`rt::Session`): bytes are XORed with [`XOR_KEY`] both ways; the first
/// `open` answers a greeting (a handshake's records); a decrypted 0xFF is a protocol error
/// (answered by an alert, `!`), a decrypted 0x04 the peer's closing alert; `close` sends
/// `bye-session`.
pub struct Xor {
    greeted: bool,
}

pub const XOR_KEY: u8 = 0x5a;
pub const GREETING: &[u8] = b"hello\n";
pub const ALERT: &[u8] = b"!";
pub const CLOSE_RECORD: &[u8] = b"bye-session";

pub fn xor(bytes: &[u8]) -> Vec<u8> {
    bytes.iter().map(|b| b ^ XOR_KEY).collect()
}

impl rt::Session for Xor {
    fn open(&mut self, input: &[u8], plain: &mut Vec<u8>, out: &mut Vec<u8>) -> rt::Opened {
        if !self.greeted {
            self.greeted = true;
            out.extend_from_slice(&xor(GREETING));
        }
        for &byte in input {
            match byte ^ XOR_KEY {
                0xff => {
                    out.extend_from_slice(&xor(ALERT));
                    return rt::Opened::Failed;
                }
                0x04 => return rt::Opened::PeerClosed,
                clear => plain.push(clear),
            }
        }
        rt::Opened::Open
    }

    fn seal(&mut self, out: &mut Vec<u8>, from: usize) {
        for byte in &mut out[from..] {
            *byte ^= XOR_KEY;
        }
    }

    fn close(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&xor(CLOSE_RECORD));
    }
}

pub struct LineConn {
    tag: u32,
    /// Ticks streamed so far, once the connection sent `stream`.
    streamed: u32,
    /// `stream N`: cut off after streaming tick N.
    cut_at: Option<u32>,
    /// Sent `subscribe`: streams the [`Feed`], not ticks.
    subscribed: bool,
    /// Sent `block`: waits for one item of the [`Feed`], its input held back.
    blocked: bool,
    /// `flood N`: chunks of [`FLOOD_CHUNK_BYTES`] still to stream, one per offer.
    flood: u32,
}

/// A `flood` chunk: above the pause threshold (32 KiB), as a replica's copy's offers are.
pub const FLOOD_CHUNK_BYTES: usize = 64 * 1024;

/// The handler yields once a call has produced this much output.
pub const YIELD_OUTPUT_BYTES: usize = 64 * 1024;

pub fn big_reply(n: usize) -> Vec<u8> {
    let mut v: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
    v.push(b'\n');
    v
}

impl Handler for Lines {
    type Conn = LineConn;

    fn accept(&mut self, tag: u32, _peer: Option<SocketAddr>) -> Result<LineConn, &'static [u8]> {
        if let Some(line) = self.refuse {
            self.stats.refused.fetch_add(1, Ordering::Relaxed);
            return Err(line);
        }
        self.stats.accepted.fetch_add(1, Ordering::Relaxed);
        Ok(LineConn { tag, streamed: 0, cut_at: None, subscribed: false, blocked: false, flood: 0 })
    }

    fn receive(&mut self, conn: &mut LineConn, input: &[u8], out: &mut Vec<u8>) -> (usize, After) {
        self.stats.receive_calls.fetch_add(1, Ordering::Relaxed);
        if conn.blocked {
            return (0, After::Continue);
        }
        let mut consumed = 0;
        let out_start = out.len();
        while let Some(i) = input[consumed..].iter().position(|&b| b == b'\n') {
            if out.len() - out_start >= YIELD_OUTPUT_BYTES {
                // As the server does: more output would only be buffered, not sent.
                return (consumed, After::Yield);
            }
            let line = &input[consumed..consumed + i];
            consumed += i + 1;
            if line == b"quit" {
                out.extend_from_slice(b"bye\n");
                return (consumed, After::CloseAfterFlush);
            } else if line == b"stream" {
                out.extend_from_slice(b"streaming\n");
                return (input.len(), After::Stream);
            } else if let Some(n) = line.strip_prefix(b"stream ") {
                conn.cut_at = Some(std::str::from_utf8(n).unwrap().parse().unwrap());
                out.extend_from_slice(b"streaming\n");
                return (input.len(), After::Stream);
            } else if let Some(n) = line.strip_prefix(b"flood ") {
                let n: u32 = std::str::from_utf8(n).unwrap().parse().unwrap();
                out.extend_from_slice(&big_reply(FLOOD_CHUNK_BYTES - 1));
                conn.flood = n.saturating_sub(1);
                return (input.len(), After::Stream);
            } else if line == b"block" {
                conn.blocked = true;
                return (consumed, After::Stream);
            } else if line == b"subscribe" {
                conn.subscribed = true;
                out.extend_from_slice(b"subscribed\n");
                return (input.len(), After::Stream);
            } else if line == b"tag" {
                out.extend_from_slice(format!("{}\n", conn.tag).as_bytes());
            } else if let Some(n) = line.strip_prefix(b"big ") {
                let n: usize = std::str::from_utf8(n).unwrap().parse().unwrap();
                out.extend_from_slice(&big_reply(n));
            } else {
                out.extend_from_slice(line);
                out.push(b'\n');
            }
            if self.one_line_per_call && consumed < input.len() {
                return (consumed, After::Yield);
            }
        }
        (consumed, After::Continue)
    }

    fn sent(&mut self, _conn: &mut LineConn, bytes: usize) {
        self.stats.sent_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.stats.sends.fetch_add(1, Ordering::Relaxed);
    }

    fn close(&mut self, _conn: LineConn) {
        self.stats.closed.fetch_add(1, Ordering::Relaxed);
    }

    fn stream(&mut self, conn: &mut LineConn, out: &mut Vec<u8>) -> After {
        if conn.flood > 0 {
            conn.flood -= 1;
            out.extend_from_slice(&big_reply(FLOOD_CHUNK_BYTES - 1));
            return After::Continue;
        }
        if conn.blocked {
            let Some(item) = self.feed.lock().unwrap().pop_front() else {
                return After::Continue;
            };
            out.extend_from_slice(&item);
            conn.blocked = false;
            return After::Yield;
        }
        if conn.subscribed {
            return stream_feed(&self.feed, out);
        }
        conn.streamed += 1;
        out.extend_from_slice(format!("tick {}\n", conn.streamed).as_bytes());
        match conn.cut_at == Some(conn.streamed) {
            true => After::CloseAfterFlush,
            false => After::Continue,
        }
    }

    fn session(&mut self, tag: u32) -> Option<Box<dyn rt::Session>> {
        match self.session_tag == Some(tag) {
            true => Some(Box::new(Xor { greeted: false })),
            false => None,
        }
    }

    fn tick(&mut self) -> Control {
        self.stats.ticks.fetch_add(1, Ordering::Relaxed);
        if self.stop.load(Ordering::Relaxed) {
            Control::Shutdown
        } else {
            Control::Continue
        }
    }
}

/// Moves every item of `feed` to `out`; an item `cut` ends the stream.
fn stream_feed(feed: &Feed, out: &mut Vec<u8>) -> After {
    let mut feed = feed.lock().unwrap();
    while let Some(item) = feed.pop_front() {
        if item == b"cut" {
            out.extend_from_slice(b"cut\n");
            return After::CloseAfterFlush;
        }
        out.extend_from_slice(&item);
    }
    After::Continue
}

/// A loop running on its own thread; dropping it stops it.
pub struct Server {
    pub addrs: Vec<SocketAddr>,
    pub stop: Arc<AtomicBool>,
    pub stats: Arc<Stats>,
    /// What `subscribe`d connections stream.
    pub feed: Feed,
    thread: Option<JoinHandle<io::Result<()>>>,
}

pub fn config(backend: Backend) -> LoopConfig {
    LoopConfig {
        backend,
        tick_interval: Duration::from_millis(10),
        recv_buffers: 64,
        recv_buffer_bytes: 4096,
        ..Default::default()
    }
}

pub fn listener(tag: u32) -> Listener {
    let socket = rt::listen("127.0.0.1:0".parse().unwrap(), 128).unwrap();
    Listener { socket: socket.into(), tag }
}

pub struct Options {
    pub refuse: Option<&'static [u8]>,
    pub one_line_per_call: bool,
    pub session_tag: Option<u32>,
}

pub const PLAIN: Options = Options { refuse: None, one_line_per_call: false, session_tag: None };

pub fn start(config: LoopConfig, listeners: Vec<Listener>, options: Options) -> Server {
    let stop = Arc::new(AtomicBool::new(false));
    let stats = Arc::new(Stats::default());
    let addrs = listeners
        .iter()
        .map(|l| match &l.socket {
            rt::ListenSocket::Tcp(socket) => socket.local_addr().unwrap(),
            rt::ListenSocket::Unix(_) => unreachable!("the tests listen on TCP"),
        })
        .collect();
    let feed = Feed::default();
    let handler = Lines {
        stop: stop.clone(),
        stats: stats.clone(),
        refuse: options.refuse,
        one_line_per_call: options.one_line_per_call,
        session_tag: options.session_tag,
        feed: feed.clone(),
    };
    let thread = std::thread::spawn(move || rt::run(&config, listeners, handler));
    Server { addrs, stop, stats, feed, thread: Some(thread) }
}

pub fn serve(backend: Backend) -> Server {
    start(config(backend), vec![listener(0)], PLAIN)
}

impl Server {
    pub fn addr(&self) -> SocketAddr {
        self.addrs[0]
    }

    /// Asks the loop to stop and waits (bounded) for `run` to return.
    pub fn shutdown(mut self) -> io::Result<()> {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> io::Result<()> {
        self.stop.store(true, Ordering::Relaxed);
        let Some(thread) = self.thread.take() else { return Ok(()) };
        let deadline = Instant::now() + Duration::from_secs(5);
        while !thread.is_finished() {
            assert!(Instant::now() < deadline, "loop did not stop within 5 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        thread.join().expect("loop thread panicked")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.stop_and_join().expect("loop failed");
        } else {
            self.stop.store(true, Ordering::Relaxed);
        }
    }
}

pub fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

pub fn read_exact(s: &mut TcpStream, n: usize) -> Vec<u8> {
    let mut buf = vec![0; n];
    s.read_exact(&mut buf).unwrap();
    buf
}

/// Reads until the peer closes (or resets); returns what arrived.
pub fn read_to_end(s: &mut TcpStream) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut chunk = [0; 65536];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => return buf,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return buf,
            Err(e) => panic!("read failed after {} bytes: {e}", buf.len()),
        }
    }
}

pub fn request(s: &mut TcpStream, line: &[u8], reply_len: usize) -> Vec<u8> {
    s.write_all(line).unwrap();
    read_exact(s, reply_len)
}

/// Polls `cond` until it holds or `limit` passes.
pub fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Why io_uring tests cannot run here, if they cannot.
pub fn uring_skip_reason() -> Option<String> {
    rt::probe_uring().err()
}

/// Expands to a module with one test per back end; the io_uring one skips (with a printed
/// reason) when the kernel does not offer it.
#[macro_export]
macro_rules! both_backends {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn uring() {
                    if let Some(reason) = $crate::common::uring_skip_reason() {
                        eprintln!("skipping {}::uring: {reason}", stringify!($name));
                        return;
                    }
                    super::$name(rt::Backend::Uring);
                }

                #[test]
                fn epoll() {
                    super::$name(rt::Backend::Epoll);
                }
            }
        )*
    };
}
