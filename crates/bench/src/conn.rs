//! One client connection: a non-blocking socket, its unsent output, the unparsed tail of
//! its input, and the requests in flight on it, oldest first.
//!
//! ```text
//!   out:      rt::OutBuf [sent .. | unsent ...]  written once per loop turn (until the
//!                                                socket is full); EPOLLOUT only while a
//!                                                write was partial
//!   input:    RecvBuf [parsed .. | unparsed .. | free ...]
//!                                                the socket is read straight into the free
//!                                                part, replies parsed in place (no copy per
//!                                                read); an unparsed reply is moved to the
//!                                                front only when the free part runs short
//!   pending:  [Part, Part, ...]                  replies arrive in this order
//!   keys:     key ids of the pending gets, back to back (Part::key_count each)
//! ```
//! The output buffer is the one the server loop keeps per connection (rt's), reused for the
//! life of the connection: no allocation per request once it has grown to the run's largest
//! request. The input buffer starts at [`RECV_START_BYTES`] and doubles while reads fill it
//! (up to [`RECV_GROW_MAX`]), or to hold one reply longer than it; it is kept for the
//! connection's life (a load connection is busy the whole run).

use std::{
    collections::VecDeque,
    io::{self, Read},
    net::{SocketAddr, TcpStream},
    time::Duration,
};

use rt::OutBuf;

use crate::workload::OpKind;

/// One request (or, for a multiget split over servers, one server's part of it) in flight.
#[derive(Debug, Clone, Copy)]
pub struct Part {
    pub kind: OpKind,
    /// Key ids of this part at the front of [`Conn::keys`].
    pub key_count: u32,
    /// The op slot this part belongs to.
    pub slot: u32,
    /// Redis Cluster redirects this part has followed so far.
    pub redirects: u8,
    /// The reply is ASKING's `+OK`, sent before a request an -ASK redirected; it belongs
    /// to no op (`key_count` 0).
    pub asking: bool,
    /// The reply is a follow-up's (a stream consumer's XACK, or XGROUP CREATE), sent after
    /// an earlier reply of the same op (`key_count` 0; see `client::family::FollowUps`).
    pub follow_up: bool,
}

#[derive(Debug)]
pub struct Conn {
    pub stream: TcpStream,
    pub out: OutBuf,
    /// EPOLLOUT is registered (the last write was partial).
    pub want_write: bool,
    /// Already in the loop's dirty list.
    pub dirty: bool,
    pub input: RecvBuf,
    pub pending: VecDeque<Part>,
    pub keys: VecDeque<u64>,
    /// Closed after an error; owns nothing in flight any more.
    pub dead: bool,
}

/// What a read found.
pub enum ReadResult {
    Data(usize),
    /// Nothing more now.
    WouldBlock,
    /// The peer closed, or the socket failed.
    Closed(io::Error),
}

impl Conn {
    /// Connects (blocking, with a timeout), then switches to non-blocking with Nagle off.
    pub fn connect(addr: SocketAddr, pipeline: usize, keys_per_get: usize) -> io::Result<Conn> {
        let stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        stream.set_nodelay(true)?;
        stream.set_nonblocking(true)?;
        Ok(Conn {
            stream,
            out: OutBuf::with_capacity(4096),
            want_write: false,
            dirty: false,
            input: RecvBuf::default(),
            pending: VecDeque::with_capacity(pipeline),
            keys: VecDeque::with_capacity(pipeline * keys_per_get),
            dead: false,
        })
    }

    /// Reads into the free part of [`Conn::input`] (made room for first).
    pub fn read(&mut self) -> ReadResult {
        let buf = self.input.spare();
        loop {
            return match self.stream.read(buf) {
                Ok(0) => ReadResult::Closed(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => ReadResult::Data(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => ReadResult::WouldBlock,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => ReadResult::Closed(e),
            };
        }
    }

    /// Writes what it can of the unsent output; returns the bytes written.
    pub fn write(&mut self) -> io::Result<usize> {
        self.out.write_to(&mut self.stream)
    }

    pub fn has_unsent(&self) -> bool {
        self.out.has_unsent()
    }
}

/// The first size of a connection's input buffer: every read has room for at least half
/// of it, 64 KiB, as much as the shared read buffer it replaced (smaller reads complete
/// fewer replies a turn, so fewer requests go out per send: at 4 KiB, 64/1024 gets 32 deep
/// went out 7 a send instead of 32, and the load ran at 0.4x).
pub const RECV_START_BYTES: usize = 128 * 1024;
/// Reads that fill the buffer double it up to this size (a reply longer than it still grows
/// it to fit: replies are parsed whole).
pub const RECV_GROW_MAX: usize = 1 << 20;
/// The longest unparsed input a connection may hold: a reply that has not ended by then
/// breaks the connection (no unbounded buffer, whatever the server sends).
pub const RECV_MAX: usize = 1 << 30;

/// A connection's input: `bytes[start..end]` unparsed, `bytes[end..]` free. All of `bytes`
/// is initialised once when it grows, so reading into it needs no `unsafe`.
#[derive(Debug, Default)]
pub struct RecvBuf {
    bytes: Vec<u8>,
    start: usize,
    end: usize,
}

impl RecvBuf {
    /// The unparsed bytes.
    pub fn unparsed(&self) -> &[u8] {
        &self.bytes[self.start..self.end]
    }

    /// `used` bytes at the front of [`RecvBuf::unparsed`] were parsed.
    pub fn consume(&mut self, used: usize) {
        assert!(used <= self.end - self.start, "consumed more than was offered");
        self.start += used;
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
        }
    }

    /// `n` bytes were read into [`RecvBuf::spare`].
    pub fn filled(&mut self, n: usize) {
        self.end += n;
    }

    /// Whether the last read filled all the room it had (more may be waiting).
    pub fn is_full(&self) -> bool {
        self.end == self.bytes.len()
    }

    /// Over [`RECV_MAX`] unparsed.
    pub fn is_over_limit(&self) -> bool {
        self.end - self.start > RECV_MAX
    }

    /// Room to read into, at least half the buffer: the unparsed bytes are moved to the
    /// front when less is free, and the buffer doubles when they take more than half of it,
    /// or (up to [`RECV_GROW_MAX`]) more than a sixteenth: a reply cut by a read is then
    /// moved once per many reads, not once per read.
    pub fn spare(&mut self) -> &mut [u8] {
        let len = self.bytes.len();
        if len - self.end < len / 2 || len == 0 {
            let kept = self.end - self.start;
            self.bytes.copy_within(self.start..self.end, 0);
            (self.start, self.end) = (0, kept);
            let crowded = kept > len / 16 && len < RECV_GROW_MAX;
            if kept > len / 2 || crowded || len == 0 {
                self.bytes.resize((len * 2).max(RECV_START_BYTES), 0);
            }
        }
        &mut self.bytes[self.end..]
    }

    /// A read filled all the room: doubles the buffer up to [`RECV_GROW_MAX`], so a busy
    /// connection is read in few calls.
    pub fn grow(&mut self) {
        let len = self.bytes.len();
        if len < RECV_GROW_MAX {
            self.bytes.resize((len * 2).max(RECV_START_BYTES), 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: however reads and parses interleave, the unparsed bytes come out as they went
    /// in, the free part is at least half the buffer, and growth stops at the cap unless a
    /// reply needs more.
    #[test]
    fn recv_buf_keeps_unparsed_bytes() {
        let mut buf = RecvBuf::default();
        let stream: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let (mut read, mut parsed) = (0, 0);
        // Reads of 1000 bytes; parses in steps of 3000 (a reply longer than some reads).
        while parsed < stream.len() {
            let room = buf.spare().len();
            assert!(room * 2 >= buf.bytes.len(), "at least half free");
            let n = room.min(1000).min(stream.len() - read);
            buf.spare()[..n].copy_from_slice(&stream[read..read + n]);
            buf.filled(n);
            read += n;
            if buf.is_full() {
                buf.grow();
            }
            assert_eq!(buf.unparsed(), &stream[parsed..read]);
            let step = 3000.min(buf.unparsed().len());
            if step == 3000 || read == stream.len() {
                buf.consume(step);
                parsed += step;
            }
        }
        assert!(buf.bytes.len() <= RECV_GROW_MAX);
        assert!(!buf.is_over_limit());
    }
}
