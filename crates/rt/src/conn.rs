//! What both drivers keep per connection, and the input/output bookkeeping they share.
//!
//! ```text
//!   Slots: Vec<Slot>  (index + generation name a connection; a freed slot bumps its generation)
//!   Slot { gen, conn: Option<Conn> }
//!   Conn {
//!     fd, flags, last_input,
//!     handler: Option<H::Conn>   None once the handler was told `close` (a "zombie" that
//!                                waits for the kernel to finish its operations)
//!     input:   Vec               unconsumed tail of earlier input; empty (no allocation) when
//!                                the handler consumed everything
//!     out:     Vec               replies not yet handed to the kernel; from the OutPool,
//!                                empty (no allocation) when there is nothing to send
//!     out_sent                   epoll: bytes of `out` already written
//!     sending: Vec, sending_sent io_uring: the buffer a send operation reads from; it is not
//!                                touched while the send is in flight, so new replies go to
//!                                `out` and are sent after it (ordering kept)
//!   }
//! ```
//!
//! An idle connection holds no buffer: all three vectors are empty (24 bytes each, no heap).

use std::{os::fd::RawFd, time::Instant};

use crate::{After, Handler};

/// The handler is asked again, in the same turn, while it makes progress on leftover input;
/// past this many calls the rest waits for the next turn (a bound per connection and turn).
const RECEIVE_CALLS_MAX: usize = 64;

/// Output buffers bigger than this are freed rather than pooled.
const POOLED_CAPACITY_MAX: usize = 1 << 20;
/// At most this many bytes of capacity sit in the pool.
const POOLED_BYTES_MAX: usize = 32 << 20;
/// At most this many buffers sit in the pool: enough for every connection that sends in one
/// turn under load, while a burst (10,000 connections answered at once, each send in flight
/// with io_uring) does not leave 10,000 idle buffers behind.
const POOLED_COUNT_MAX: usize = 1024;
/// Capacity of a fresh output buffer.
const OUT_CAPACITY_INITIAL: usize = 1024;

/// Connection flags (a byte, not a row of bools, to keep the slot small).
pub(crate) mod flag {
    /// The handler returned `After::CloseAfterFlush` (or the loop is shutting down): read no
    /// more input, send what is queued, then close.
    pub const CLOSE_AFTER_FLUSH: u8 = 1 << 0;
    /// The connection is in the loop's dirty list (it has output or a send to continue).
    pub const DIRTY: u8 = 1 << 1;
    /// The connection is in the loop's backlog (leftover input to offer again).
    pub const BACKLOG: u8 = 1 << 2;
    /// io_uring: a multishot receive is armed.
    pub const RECV_ARMED: u8 = 1 << 3;
    /// io_uring: a send is in flight (the kernel reads `sending`).
    pub const SEND_IN_FLIGHT: u8 = 1 << 4;
    /// io_uring: a cancel of all operations was issued.
    pub const CANCELLED: u8 = 1 << 5;
    /// epoll: EPOLLOUT is registered (a write was partial).
    pub const WANT_OUT: u8 = 1 << 6;
    /// epoll: EPOLLOUT fired this turn.
    pub const OUT_READY: u8 = 1 << 7;
}

pub(crate) struct Conn<C> {
    pub fd: RawFd,
    pub flags: u8,
    pub handler: Option<C>,
    pub input: Vec<u8>,
    pub out: Vec<u8>,
    pub out_sent: usize,
    pub sending: Vec<u8>,
    pub sending_sent: usize,
    pub last_input: Instant,
}

impl<C> Conn<C> {
    pub fn new(fd: RawFd, handler: C, now: Instant) -> Self {
        Conn {
            fd,
            flags: 0,
            handler: Some(handler),
            input: Vec::new(),
            out: Vec::new(),
            out_sent: 0,
            sending: Vec::new(),
            sending_sent: 0,
            last_input: now,
        }
    }

    pub fn has(&self, f: u8) -> bool {
        self.flags & f != 0
    }

    pub fn set(&mut self, f: u8) {
        self.flags |= f;
    }

    pub fn clear(&mut self, f: u8) {
        self.flags &= !f;
    }

    /// Bytes the handler produced that the peer has not got yet.
    pub fn pending_bytes(&self) -> usize {
        (self.out.len() - self.out_sent) + (self.sending.len() - self.sending_sent)
    }

    /// Whether the handler still owns state here (false for a zombie).
    pub fn is_open(&self) -> bool {
        self.handler.is_some()
    }
}

/// Names a connection across turns: the slot and the generation it had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key {
    pub index: u32,
    pub gen: u32,
}

/// Generations wrap within 24 bits so a key fits in io_uring user data with a kind byte.
pub(crate) const GEN_MASK: u32 = (1 << 24) - 1;

struct Slot<C> {
    gen: u32,
    conn: Option<Conn<C>>,
}

/// The connection table: slots reused through a free list.
pub(crate) struct Slots<C> {
    slots: Vec<Slot<C>>,
    free: Vec<u32>,
    live: usize,
}

impl<C> Slots<C> {
    pub fn new() -> Self {
        Slots { slots: Vec::new(), free: Vec::new(), live: 0 }
    }

    pub fn insert(&mut self, conn: Conn<C>) -> Key {
        self.live += 1;
        if let Some(index) = self.free.pop() {
            let slot = &mut self.slots[index as usize];
            assert!(slot.conn.is_none(), "free slot in use");
            slot.conn = Some(conn);
            return Key { index, gen: slot.gen };
        }
        let index = u32::try_from(self.slots.len()).expect("fewer than 2^32 connections");
        self.slots.push(Slot { gen: 0, conn: Some(conn) });
        Key { index, gen: 0 }
    }

    pub fn get_mut(&mut self, key: Key) -> Option<&mut Conn<C>> {
        let slot = self.slots.get_mut(key.index as usize)?;
        if slot.gen != key.gen {
            return None;
        }
        slot.conn.as_mut()
    }

    /// Frees the slot; its next occupant gets a new generation.
    pub fn remove(&mut self, key: Key) -> Conn<C> {
        let slot = &mut self.slots[key.index as usize];
        assert_eq!(slot.gen, key.gen, "removing a stale key");
        let conn = slot.conn.take().expect("removing an empty slot");
        slot.gen = (slot.gen + 1) & GEN_MASK;
        self.free.push(key.index);
        self.live -= 1;
        conn
    }

    /// Connections in the table, zombies included.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Keys of all occupied slots (a snapshot, so the caller may close while walking).
    pub fn keys(&self) -> Vec<Key> {
        let mut keys = Vec::with_capacity(self.live);
        for (index, slot) in self.slots.iter().enumerate() {
            if slot.conn.is_some() {
                keys.push(Key { index: index as u32, gen: slot.gen });
            }
        }
        keys
    }
}

/// Output buffers shared by all connections of a loop: taken when a handler needs to write,
/// given back once their bytes are sent.
pub(crate) struct OutPool {
    free: Vec<Vec<u8>>,
    bytes: usize,
}

impl OutPool {
    pub fn new() -> Self {
        OutPool { free: Vec::new(), bytes: 0 }
    }

    pub fn take(&mut self) -> Vec<u8> {
        match self.free.pop() {
            Some(buf) => {
                self.bytes -= buf.capacity();
                buf
            }
            None => Vec::with_capacity(OUT_CAPACITY_INITIAL),
        }
    }

    /// Gives `buf` back; a big buffer, or one that would push the pool over its byte budget,
    /// is freed instead.
    pub fn give(&mut self, mut buf: Vec<u8>) {
        let capacity = buf.capacity();
        if capacity == 0
            || capacity > POOLED_CAPACITY_MAX
            || self.bytes + capacity > POOLED_BYTES_MAX
            || self.free.len() >= POOLED_COUNT_MAX
        {
            return;
        }
        buf.clear();
        self.bytes += capacity;
        self.free.push(buf);
    }
}

/// What [`deliver`] found the driver must do next.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Delivered {
    /// `out` has bytes: queue the connection for the turn's send.
    pub has_output: bool,
    /// The handler still made progress when its call budget ran out: offer again next turn.
    pub backlog: bool,
    /// Unsent output is above the limit: close now.
    pub over_limit: bool,
    /// The handler asked to close after the flush (first time only).
    pub close_after_flush: bool,
}

/// Offers `data` (bytes that just arrived, possibly empty to re-offer a backlog) to the
/// handler, after any tail kept from before. The unconsumed rest is copied into `conn.input`;
/// `data` may be reused by the caller as soon as this returns.
pub(crate) fn deliver<H: Handler>(
    handler: &mut H,
    conn: &mut Conn<H::Conn>,
    data: &[u8],
    pool: &mut OutPool,
    output_limit_bytes: usize,
) -> Delivered {
    let mut result = Delivered::default();
    if conn.has(flag::CLOSE_AFTER_FLUSH) {
        return result;
    }
    let Conn { handler: Some(state), input, out, .. } = conn else {
        return result;
    };
    if out.capacity() == 0 {
        *out = pool.take();
    }
    let (after, progress) = if input.is_empty() {
        let (consumed, after, progress) = offer(handler, state, data, out);
        input.extend_from_slice(&data[consumed..]);
        (after, progress)
    } else {
        input.extend_from_slice(data);
        let (consumed, after, progress) = offer(handler, state, input, out);
        input.drain(..consumed);
        if input.is_empty() {
            // Freed rather than kept: an idle connection must not hold a buffer.
            *input = Vec::new();
        }
        (after, progress)
    };
    if out.is_empty() {
        pool.give(std::mem::take(out));
    }
    if after == After::CloseAfterFlush {
        conn.set(flag::CLOSE_AFTER_FLUSH);
        conn.input = Vec::new();
        result.close_after_flush = true;
    } else if progress && !conn.input.is_empty() {
        result.backlog = true;
    }
    result.has_output = !conn.out.is_empty();
    result.over_limit = conn.pending_bytes() > output_limit_bytes;
    result
}

/// Calls the handler on `input` while it makes progress; returns bytes consumed, what it
/// asked for, and whether the call budget ran out while it was still making progress.
fn offer<H: Handler>(
    handler: &mut H,
    state: &mut H::Conn,
    input: &[u8],
    out: &mut Vec<u8>,
) -> (usize, After, bool) {
    let mut start = 0;
    for _ in 0..RECEIVE_CALLS_MAX {
        let (consumed, after) = handler.receive(state, &input[start..], out);
        assert!(consumed <= input.len() - start, "handler consumed more than it was given");
        start += consumed;
        if after == After::CloseAfterFlush {
            return (start, after, false);
        }
        if consumed == 0 || start == input.len() {
            return (start, After::Continue, false);
        }
    }
    (start, After::Continue, true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Control;

    /// Consumes at most one `\n`-terminated line per call and echoes it.
    struct OneLine;

    impl Handler for OneLine {
        type Conn = ();
        fn accept(&mut self, _: u32, _: Option<std::net::SocketAddr>) -> Result<(), &'static [u8]> {
            Ok(())
        }
        fn receive(&mut self, _: &mut (), input: &[u8], out: &mut Vec<u8>) -> (usize, After) {
            match input.iter().position(|&b| b == b'\n') {
                Some(i) if &input[..i] == b"quit" => (i + 1, After::CloseAfterFlush),
                Some(i) => {
                    out.extend_from_slice(&input[..=i]);
                    (i + 1, After::Continue)
                }
                None => (0, After::Continue),
            }
        }
        fn sent(&mut self, _: &mut (), _: usize) {}
        fn close(&mut self, _: ()) {}
        fn tick(&mut self) -> Control {
            Control::Continue
        }
    }

    #[test]
    fn tail_is_kept_and_freed_once_consumed() {
        let mut pool = OutPool::new();
        let mut conn = Conn::new(-1, (), Instant::now());
        let d = deliver(&mut OneLine, &mut conn, b"ab\ncd", &mut pool, usize::MAX);
        assert!(d.has_output && !d.backlog);
        assert_eq!(conn.out, b"ab\n");
        assert_eq!(conn.input, b"cd");
        let d = deliver(&mut OneLine, &mut conn, b"\nef\ngh\n", &mut pool, usize::MAX);
        assert!(d.has_output && !d.backlog);
        assert_eq!(conn.out, b"ab\ncd\nef\ngh\n");
        assert_eq!(conn.input.capacity(), 0);
    }

    #[test]
    fn no_output_returns_the_buffer() {
        let mut pool = OutPool::new();
        let mut conn = Conn::new(-1, (), Instant::now());
        let d = deliver(&mut OneLine, &mut conn, b"partial", &mut pool, usize::MAX);
        assert!(!d.has_output);
        assert_eq!(conn.out.capacity(), 0);
        assert_eq!(pool.free.len(), 1);
    }

    #[test]
    fn budget_exhaustion_asks_for_backlog() {
        let mut pool = OutPool::new();
        let mut conn = Conn::new(-1, (), Instant::now());
        let input = b"x\n".repeat(RECEIVE_CALLS_MAX + 3);
        let d = deliver(&mut OneLine, &mut conn, &input, &mut pool, usize::MAX);
        assert!(d.backlog);
        assert_eq!(conn.input.len(), 6);
        let d = deliver(&mut OneLine, &mut conn, b"", &mut pool, usize::MAX);
        assert!(!d.backlog);
        assert!(conn.input.is_empty());
        assert_eq!(conn.out.len(), input.len());
    }

    #[test]
    fn close_after_flush_drops_input_and_ignores_more() {
        let mut pool = OutPool::new();
        let mut conn = Conn::new(-1, (), Instant::now());
        let d = deliver(&mut OneLine, &mut conn, b"a\nquit\nb\n", &mut pool, usize::MAX);
        assert!(d.close_after_flush);
        assert_eq!(conn.out, b"a\n");
        assert!(conn.input.is_empty());
        let d = deliver(&mut OneLine, &mut conn, b"c\n", &mut pool, usize::MAX);
        assert!(!d.has_output && !d.close_after_flush);
    }

    #[test]
    fn over_limit_is_reported() {
        let mut pool = OutPool::new();
        let mut conn = Conn::new(-1, (), Instant::now());
        let d = deliver(&mut OneLine, &mut conn, b"0123456789\n", &mut pool, 10);
        assert!(d.over_limit);
    }

    #[test]
    fn pool_is_bounded() {
        let mut pool = OutPool::new();
        pool.give(Vec::with_capacity(POOLED_CAPACITY_MAX + 1));
        assert!(pool.free.is_empty());
        for _ in 0..(POOLED_BYTES_MAX / POOLED_CAPACITY_MAX + 5) {
            pool.give(Vec::with_capacity(POOLED_CAPACITY_MAX));
        }
        assert!(pool.bytes <= POOLED_BYTES_MAX);
    }

    /// The loop's part of an idle connection stays small (the handler's state comes on top).
    #[test]
    fn idle_slot_is_small() {
        assert!(size_of::<Slot<()>>() <= 128, "{}", size_of::<Slot<()>>());
    }

    #[test]
    fn slots_bump_generation() {
        let mut slots = Slots::new();
        let a = slots.insert(Conn::new(3, (), Instant::now()));
        slots.remove(a);
        let b = slots.insert(Conn::new(4, (), Instant::now()));
        assert_eq!(a.index, b.index);
        assert_ne!(a.gen, b.gen);
        assert!(slots.get_mut(a).is_none());
        assert_eq!(slots.get_mut(b).map(|c| c.fd), Some(4));
    }
}
