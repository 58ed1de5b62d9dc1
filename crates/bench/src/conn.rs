//! One client connection: a non-blocking socket, its unsent output, the unparsed tail of
//! its input, and the requests in flight on it, oldest first.
//!
//! ```text
//!   out:      rt::OutBuf [sent .. | unsent ...]  written once per loop turn (until the
//!                                                socket is full); EPOLLOUT only while a
//!                                                write was partial
//!   input:    rt::InputTail                      unparsed tail of earlier reads; empty (no
//!                                                allocation) when all parsed
//!   pending:  [Part, Part, ...]                  replies arrive in this order
//!   keys:     key ids of the pending gets, back to back (Part::key_count each)
//! ```
//! The output and input buffers are the ones the server loop keeps per connection (rt's).
//! The output buffer is reused for the life of the connection: no allocation per request
//! once it has grown to the run's largest request.

use std::{
    collections::VecDeque,
    io::{self, Read},
    net::{SocketAddr, TcpStream},
    time::Duration,
};

use rt::{InputTail, OutBuf};

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
    pub input: InputTail,
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
            input: InputTail::new(),
            pending: VecDeque::with_capacity(pipeline),
            keys: VecDeque::with_capacity(pipeline * keys_per_get),
            dead: false,
        })
    }

    pub fn read(&mut self, buf: &mut [u8]) -> ReadResult {
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
