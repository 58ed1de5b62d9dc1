//! What the loop keeps per connection, and the input/output bookkeeping of a delivery.
//!
//! ```text
//!   Slots: Vec<Slot>  (index + generation name a connection; a freed slot bumps its generation)
//!   Slot { gen, conn: Option<Conn> }
//!   Conn {
//!     fd, flags, dirty, last_input,
//!     handler: Option<H::Conn>   None once the handler was told `close` (a "zombie" that
//!                                waits for the kernel to finish its operations)
//!     input:   InputTail         unconsumed tail of earlier input; empty (no allocation) when
//!                                the handler consumed everything
//!     out:     OutBuf            replies not yet handed to the kernel; from the OutPool,
//!                                empty (no allocation) when there is nothing to send. The
//!                                epoll driver writes from it in place (its `sent` offset)
//!     sending: OutBuf            io_uring: the buffer a send operation reads from; it is not
//!                                touched while the send is in flight, so new replies go to
//!                                `out` and are sent after it (ordering kept)
//!     session: Option<Box<Box<dyn Session>>>   TLS: `out` and `sending` hold ciphertext
//!                                only; `deliver` seals each handler call's replies
//!     zc: Option<Box<ZeroCopy>>  zero-copy sends the kernel has not reported done, with
//!                                the handler's holds (`zerocopy.rs`); from the first lent
//!                                send while the loop has a zero-copy threshold
//!   }
//! ```
//!
//! An idle connection holds no buffer: all three are empty (no heap).

use std::os::fd::RawFd;

use crate::{
    buf::{InputTail, OutBuf, OutPool},
    clock::Mono,
    lend::ZeroCopySend,
    zerocopy::ZeroCopy,
    After, Handler, Session,
};

/// Connection flags (a byte, not a row of bools, to keep the slot small).
pub(crate) mod flag {
    /// The handler returned `After::CloseAfterFlush` (or the loop is shutting down): read no
    /// more input, send what is queued, then close.
    pub const CLOSE_AFTER_FLUSH: u16 = 1 << 0;
    /// A request of more than `INPUT_SOLO_BYTES` was partly received here (a large value):
    /// from then on io_uring receives one buffer at a time for this connection, so that the
    /// input budget sees its tail grow (sticky: such clients tend to send more of them).
    pub const LARGE_INPUT: u16 = 1 << 1;
    /// The handler yielded with input left: offer it again next turn (the loop's backlog).
    pub const BACKLOG: u16 = 1 << 2;
    /// io_uring: a multishot receive is armed.
    pub const RECV_ARMED: u16 = 1 << 3;
    /// io_uring: a send is in flight (the kernel reads `sending`).
    pub const SEND_IN_FLIGHT: u16 = 1 << 4;
    /// io_uring: a cancel of all operations was issued.
    pub const CANCELLED: u16 = 1 << 5;
    /// epoll: a write was partial; the rest waits for EPOLLOUT. io_uring: the last send found
    /// the socket full; the next one waits in the kernel for room (no `MSG_DONTWAIT`).
    pub const WANT_OUT: u16 = 1 << 6;
    /// epoll: EPOLLOUT fired this turn.
    pub const OUT_READY: u16 = 1 << 7;
    /// The peer shut down its sending side (a read returned 0). Input already received is
    /// still executed and answered, in order; once that is done and sent, the connection
    /// closes. An incomplete request left at that point is dropped, as memcached does.
    pub const PEER_EOF: u16 = 1 << 8;
    /// Backpressure: unsent output passed the pause threshold. Input is neither read nor
    /// offered to the handler until the peer has drained it below half the threshold.
    pub const PAUSED: u16 = 1 << 9;
    /// io_uring: a cancel of the multishot receive was issued (reading stopped).
    pub const RECV_CANCELLING: u16 = 1 << 10;
    /// epoll: EPOLLIN is registered.
    pub const WANT_IN: u16 = 1 << 11;
    /// epoll: EPOLLOUT is registered.
    pub const REG_OUT: u16 = 1 << 12;
    /// Input arrived (io_uring) or was signalled (epoll) while the connection was paused:
    /// stop reading until it resumes. Until then a paused connection stays armed, so the
    /// common pause (one large reply, no request behind it) costs no cancel and re-arm.
    pub const INPUT_WAITING: u16 = 1 << 13;
    /// The handler asked to stream (`After::Stream`): the loop lists it for ticks.
    pub const STREAMING: u16 = 1 << 14;
    /// The loop's input budget holds this connection: not read until released (see
    /// `input_budget.rs`); it is in the budget's queue exactly while this is set.
    pub const INPUT_HELD: u16 = 1 << 15;
}

/// The per-connection bounds a loop applies (from [`crate::LoopConfig`]; the pause threshold
/// tightens while the process-wide buffer budget is exceeded).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    /// Unsent output at or above this pauses the connection (backpressure).
    pub pause_bytes: usize,
    /// Unsent output above this closes the connection (one handler call produced more than
    /// any client should be sent in one go).
    pub limit_bytes: usize,
    /// While the handler has yielded with this much input or more buffered, no more is read.
    pub hold_bytes: usize,
    /// The most one read takes (epoll): small while the loop's input budget is over, so
    /// that a connection read before it is held brings in little.
    pub read_bytes: usize,
    /// Lent bytes of one handler call from which they leave zero-copy; 0 = never.
    pub zerocopy_min_bytes: usize,
}

pub(crate) struct Conn<C> {
    pub fd: RawFd,
    pub flags: u16,
    /// The connection is in the loop's dirty list (it has output or a send to continue).
    pub dirty: bool,
    pub handler: Option<C>,
    pub input: InputTail,
    pub out: OutBuf,
    pub sending: OutBuf,
    pub last_input: Mono,
    /// `input`'s length as last counted in the loop's input budget.
    pub input_counted: usize,
    /// TLS (see `session.rs`): `input` holds plaintext, `out` and `sending` ciphertext.
    /// Boxed twice so the slot holds a thin pointer: every connection pays 8 bytes for
    /// TLS being possible, not 16.
    pub session: Option<Box<Box<dyn Session>>>,
    /// Zero-copy sends still held (see `zerocopy.rs`); None until the first.
    pub zc: Option<Box<ZeroCopy>>,
}

impl<C> Conn<C> {
    pub fn new(fd: RawFd, handler: C, now: Mono) -> Self {
        Conn {
            fd,
            flags: 0,
            dirty: false,
            handler: Some(handler),
            input: InputTail::new(),
            out: OutBuf::new(),
            sending: OutBuf::new(),
            last_input: now,
            input_counted: 0,
            session: None,
            zc: None,
        }
    }

    pub fn has(&self, f: u16) -> bool {
        self.flags & f != 0
    }

    pub fn set(&mut self, f: u16) {
        self.flags |= f;
    }

    pub fn clear(&mut self, f: u16) {
        self.flags &= !f;
    }

    /// Whether the loop should read from the socket now: open, not closing, not paused by
    /// backpressure or held by the input budget, and not already holding a yielded backlog
    /// of `hold_bytes` or more.
    pub fn wants_input(&self, bounds: &Bounds) -> bool {
        self.is_open()
            && !self.has(flag::CLOSE_AFTER_FLUSH | flag::PEER_EOF | flag::PAUSED | flag::INPUT_HELD)
            && !(self.has(flag::BACKLOG) && self.input.len() >= bounds.hold_bytes)
    }

    /// Whether the driver keeps the socket armed for input (io_uring receive, epoll
    /// EPOLLIN): as [`Conn::wants_input`], except that a paused connection stays armed until
    /// input actually waits for it (`INPUT_WAITING`).
    pub fn keeps_reading(&self, bounds: &Bounds) -> bool {
        if self.has(flag::PAUSED) {
            if self.has(flag::INPUT_WAITING) || !self.input.is_empty() {
                return false;
            }
            return self.is_open()
                && !self.has(flag::CLOSE_AFTER_FLUSH | flag::PEER_EOF)
                && !(self.has(flag::BACKLOG) && self.input.len() >= bounds.hold_bytes);
        }
        self.wants_input(bounds)
    }

    /// Whether this turn's send should wait: the handler yielded with requests left, whose
    /// replies will join these in one send next turn (unless the output is already at the
    /// pause threshold). Keeps "one send per batch" for deep pipelines.
    pub fn defers_send(&self, bounds: &Bounds) -> bool {
        self.has(flag::BACKLOG) && self.pending_bytes() < bounds.pause_bytes
    }

    /// Whether the connection has nothing left to do but send what is queued, then close:
    /// it asked to close, or the peer half-closed and every complete request was executed.
    pub fn finishing(&self) -> bool {
        self.has(flag::CLOSE_AFTER_FLUSH)
            || (self.has(flag::PEER_EOF) && !self.has(flag::BACKLOG | flag::PAUSED))
    }

    /// Backpressure release: a paused connection whose unsent output fell below half the
    /// pause threshold resumes. Returns true when it did and has buffered input to offer
    /// (the caller puts it in the backlog).
    pub fn try_resume(&mut self, bounds: &Bounds) -> bool {
        if !self.has(flag::PAUSED) || self.pending_bytes() >= bounds.pause_bytes / 2 {
            return false;
        }
        self.clear(flag::PAUSED | flag::INPUT_WAITING);
        !self.input.is_empty() && self.is_open() && !self.has(flag::CLOSE_AFTER_FLUSH)
    }

    /// Puts the connection in the loop's backlog (its input is offered again next turn),
    /// once: the `BACKLOG` flag and the list stay in step.
    pub fn enqueue_backlog(&mut self, key: Key, backlog: &mut Vec<Key>) {
        if !self.has(flag::BACKLOG) {
            self.set(flag::BACKLOG);
            backlog.push(key);
        }
    }

    /// Heap bytes this connection's buffers hold.
    pub fn buffer_bytes(&self) -> usize {
        self.input.capacity() + self.out.capacity() + self.sending.capacity()
    }

    /// Bytes the handler produced that the peer has not got yet: unsent, or sent zero-copy
    /// from memory still held (so a peer that reads nothing pins no more than it may queue).
    pub fn pending_bytes(&self) -> usize {
        let held = self.zc.as_ref().map_or(0, |zc| zc.held_bytes());
        self.unsent_bytes() + held
    }

    /// Bytes of output not handed to the kernel yet.
    pub fn unsent_bytes(&self) -> usize {
        self.out.unsent_len() + self.sending.unsent_len()
    }

    /// Records `bytes` written from the front of the output: from `sending` while it has
    /// unsent bytes (io_uring), else from `out` in place (epoll). A buffer written to the end
    /// goes back to the pool, except when it can be the connection's spare `out` (the next
    /// request of a client that waits for each reply has its reply written there, with no
    /// pool round trip). Returns true then; the caller lists the connection, and the next
    /// flush gives an unused spare back:
    ///
    /// - io_uring: a drained `sending` while `out` has no buffer. The send's completion and
    ///   the next request arrive in the same wait, so the spare lives for the rest of that
    ///   turn and an idle connection holds no buffer across a wait.
    /// - epoll: a drained `out` (written in place at the flush). The next request arrives
    ///   after the wait, so the spare is held across one wait, and given back at the next
    ///   turn's flush if that turn brought no reply: an idle connection holds no buffer
    ///   past the turn after its last reply (at most a tick of waiting).
    #[inline]
    pub fn advance_output(&mut self, bytes: usize, pool: &mut OutPool) -> bool {
        if !self.sending.has_unsent() {
            self.out.advance(bytes);
            if !self.out.is_drained() || self.out.capacity() == 0 {
                return false;
            }
            if self.out.capacity() > SPARE_CAPACITY_MAX {
                pool.give(self.out.take_vec());
                return false;
            }
            self.out.clear();
            return true;
        }
        self.sending.advance(bytes);
        if !self.sending.is_drained() {
            return false;
        }
        let mut vec = self.sending.take_vec();
        if self.out.capacity() != 0 || vec.capacity() > SPARE_CAPACITY_MAX {
            pool.give(vec);
            return false;
        }
        vec.clear();
        self.out = OutBuf::from(vec);
        true
    }

    /// Gives back a spare `out` (see [`Conn::advance_output`]) that took no output.
    #[inline]
    pub fn return_spare(&mut self, pool: &mut OutPool) {
        if self.out.is_empty() && self.out.capacity() != 0 {
            pool.give(self.out.take_vec());
        }
    }

    /// io_uring: a send operation reads `sending` (never set with epoll).
    pub fn send_in_flight(&self) -> bool {
        self.has(flag::SEND_IN_FLIGHT)
    }

    /// io_uring: the kernel still holds an operation on this connection, so its slot and
    /// buffers must wait for the completions (never set with epoll).
    pub fn ops_in_flight(&self) -> bool {
        self.has(flag::RECV_ARMED | flag::SEND_IN_FLIGHT)
            || self.zc.as_ref().is_some_and(|zc| zc.polling)
    }

    /// Whether the handler still owns state here (false for a zombie).
    pub fn is_open(&self) -> bool {
        self.handler.is_some()
    }
}

/// A drained output buffer up to this capacity may stay as the connection's spare `out`
/// ([`Conn::advance_output`]); a larger one goes back to the pool at once.
const SPARE_CAPACITY_MAX: usize = 64 << 10;

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
    /// Generation for a slot pushed anew: counts every push and is raised past the
    /// generations of slots [`Slots::shrink`] cuts off, so a slot created again at such an
    /// index cannot take a generation a stale key remembers.
    fresh_gen: u32,
}

/// [`Slots::shrink`] gives memory back only when at least this many slots are free at the
/// end of the table.
const SHRINK_SLOTS_MIN: usize = 1024;

impl<C> Slots<C> {
    pub fn new() -> Self {
        Slots { slots: Vec::new(), free: Vec::new(), live: 0, fresh_gen: 0 }
    }

    /// After a burst of connections has gone, drops the empty slots at the end of the table
    /// and gives their memory back (a slot table sized for the peak would stay resident).
    pub fn shrink(&mut self) {
        let used_len = self.slots.iter().rposition(|s| s.conn.is_some()).map_or(0, |i| i + 1);
        if self.slots.len() - used_len < SHRINK_SLOTS_MIN.max(used_len) {
            return;
        }
        // A slot created again at a cut-off index starts past every generation it had.
        let newest = self.slots[used_len..].iter().map(|s| s.gen).max().unwrap_or(0);
        self.fresh_gen = self.fresh_gen.max((newest + 1) & GEN_MASK);
        self.slots.truncate(used_len);
        self.slots.shrink_to_fit();
        self.free.retain(|&index| (index as usize) < used_len);
        self.free.shrink_to_fit();
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
        let gen = self.fresh_gen;
        self.fresh_gen = (self.fresh_gen + 1) & GEN_MASK;
        self.slots.push(Slot { gen, conn: Some(conn) });
        Key { index, gen }
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

    /// Heap bytes held by all connections' buffers.
    pub fn buffer_bytes(&self) -> usize {
        self.slots.iter().filter_map(|s| s.conn.as_ref()).map(Conn::buffer_bytes).sum()
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

/// What [`deliver`] found the driver must do next.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Delivered {
    /// `out` has bytes: queue the connection for the turn's send.
    pub has_output: bool,
    /// The handler yielded with input left: offer it again next turn.
    pub backlog: bool,
    /// Unsent output is above the limit: close now.
    pub over_limit: bool,
    /// The handler asked to close after the flush (first time only).
    pub close_after_flush: bool,
    /// The handler asked to stream (every time it says so).
    pub stream: bool,
}

/// Offers `data` (bytes that just arrived, possibly empty to re-offer a backlog) to the
/// handler, after any tail kept from before: one handler call, which bounds the work one
/// connection gets per turn (the handler yields after its own request budget). The
/// unconsumed rest is copied into `conn.input`; `data` may be reused by the caller as soon
/// as this returns. A paused connection (backpressure) only keeps `data` for later.
pub(crate) fn deliver<H: Handler>(
    handler: &mut H,
    conn: &mut Conn<H::Conn>,
    data: &[u8],
    pool: &mut OutPool,
    bounds: &Bounds,
) -> Delivered {
    let mut result = Delivered::default();
    if conn.has(flag::CLOSE_AFTER_FLUSH) {
        return result;
    }
    if conn.has(flag::PAUSED) {
        // Bytes the kernel handed over while paused; offered once it resumes.
        conn.input.keep(data);
        if !data.is_empty() {
            conn.set(flag::INPUT_WAITING);
        }
        return result;
    }
    // A lent reply may leave at once only when nothing is on its way before it: no send
    // in flight (io_uring), no socket known full, no TLS (records are sealed from `out`).
    let sends_now = conn.session.is_none()
        && !conn.sending.has_unsent()
        && !conn.has(flag::WANT_OUT | flag::SEND_IN_FLIGHT);
    let fd = sends_now.then_some(conn.fd);
    let Conn { handler: Some(state), input, out, session, zc, .. } = conn else {
        return result;
    };
    if out.capacity() == 0 {
        *out = OutBuf::from(pool.take());
    }
    out.compact();
    let plain_from = out.bytes().len();
    let after = input.offer(data, |bytes| call(handler, state, bytes, out.buf_mut()));
    let zc_min = if fd.is_some() { bounds.zerocopy_min_bytes } else { 0 };
    let sent = place_lent(handler, state, out, fd, pool, (zc, zc_min));
    if sent > 0 {
        handler.sent(state, sent);
    }
    if let Some(session) = session {
        session.seal(out.buf_mut(), plain_from);
        if after == After::CloseAfterFlush {
            session.close(out.buf_mut());
        }
    }
    if out.is_empty() {
        pool.give(out.take_vec());
    }
    match after {
        After::CloseAfterFlush => {
            conn.set(flag::CLOSE_AFTER_FLUSH);
            conn.input.free();
            result.close_after_flush = true;
        }
        After::Yield => result.backlog = !conn.input.is_empty(),
        After::Continue => {}
        After::Stream => result.stream = true,
    }
    result.has_output = !conn.out.is_empty();
    let pending = conn.pending_bytes();
    result.over_limit = pending > bounds.limit_bytes;
    if pending >= bounds.pause_bytes {
        conn.set(flag::PAUSED);
    }
    result
}

/// Has the handler place what it lent ([`crate::lend::place`]), zero-copy from `zc.1`
/// lent bytes when that is not 0; returns the bytes sent.
fn place_lent<H: Handler>(
    handler: &mut H,
    state: &mut H::Conn,
    out: &mut OutBuf,
    fd: Option<RawFd>,
    pool: &mut OutPool,
    (zc, zc_min): (&mut Option<Box<ZeroCopy>>, usize),
) -> usize {
    let mut sent = 0;
    handler.lent(state, &mut |parts| {
        let zc = (zc_min > 0).then(|| ZeroCopySend {
            zc: zc.get_or_insert_with(|| Box::new(ZeroCopy::new())),
            min_bytes: zc_min,
            hold: H::hold_lent,
        });
        sent = crate::lend::place(out, parts, fd, pool, zc);
    });
    sent
}

/// One handler call on `input`; returns the bytes consumed and what it asked for.
fn call<H: Handler>(
    handler: &mut H,
    state: &mut H::Conn,
    input: &[u8],
    out: &mut Vec<u8>,
) -> (usize, After) {
    let out_before = out.len();
    let (consumed, after) = handler.receive(state, input, out);
    assert!(consumed <= input.len(), "handler consumed more than it was given");
    // A yield without progress would be offered the same input forever; a request that
    // answers in chunks makes its progress in output.
    let progressed = consumed > 0 || out.len() > out_before;
    assert!(after != After::Yield || progressed, "handler yielded without progress");
    (consumed, after)
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
                    let after = if i + 1 < input.len() { After::Yield } else { After::Continue };
                    (i + 1, after)
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

    const UNBOUNDED: Bounds = Bounds {
        pause_bytes: usize::MAX,
        limit_bytes: usize::MAX,
        hold_bytes: usize::MAX,
        read_bytes: usize::MAX,
        zerocopy_min_bytes: 0,
    };

    fn output_bounds(pause_bytes: usize, limit_bytes: usize) -> Bounds {
        Bounds { pause_bytes, limit_bytes, ..UNBOUNDED }
    }

    #[test]
    fn tail_is_kept_and_freed_once_consumed() {
        let mut pool = OutPool::new();
        let mut conn = Conn::new(-1, (), Mono::now());
        let d = deliver(&mut OneLine, &mut conn, b"ab\ncd", &mut pool, &UNBOUNDED);
        assert!(d.has_output && d.backlog);
        assert_eq!(conn.out.bytes(), b"ab\n");
        assert_eq!(conn.input.bytes(), b"cd");
        let d = deliver(&mut OneLine, &mut conn, b"", &mut pool, &UNBOUNDED);
        assert!(!d.backlog, "an incomplete line is not a backlog");
        let d = deliver(&mut OneLine, &mut conn, b"\nef\n", &mut pool, &UNBOUNDED);
        assert!(d.has_output && d.backlog);
        let d = deliver(&mut OneLine, &mut conn, b"", &mut pool, &UNBOUNDED);
        assert!(!d.backlog);
        assert_eq!(conn.out.bytes(), b"ab\ncd\nef\n");
        assert_eq!(conn.input.capacity(), 0);
    }

    #[test]
    fn no_output_returns_the_buffer() {
        let mut pool = OutPool::new();
        let mut conn = Conn::new(-1, (), Mono::now());
        let d = deliver(&mut OneLine, &mut conn, b"partial", &mut pool, &UNBOUNDED);
        assert!(!d.has_output);
        assert_eq!(conn.out.capacity(), 0);
        assert_eq!(pool.len(), 1);
    }

    /// One handler call per delivery: a yielding handler gets the rest in later calls.
    #[test]
    fn yield_asks_for_backlog() {
        let mut pool = OutPool::new();
        let mut conn = Conn::new(-1, (), Mono::now());
        let input = b"x\n".repeat(5);
        let d = deliver(&mut OneLine, &mut conn, &input, &mut pool, &UNBOUNDED);
        assert!(d.backlog);
        assert_eq!(conn.input.len(), 8);
        for left in (0..4).rev() {
            let d = deliver(&mut OneLine, &mut conn, b"", &mut pool, &UNBOUNDED);
            assert_eq!(d.backlog, left > 0);
        }
        assert!(conn.input.is_empty());
        assert_eq!(conn.out.bytes().len(), input.len());
    }

    /// Output at the pause threshold pauses the connection: later input is kept, not
    /// offered, until the output drains below half the threshold.
    #[test]
    fn backpressure_pauses_and_resumes() {
        let mut pool = OutPool::new();
        let mut conn = Conn::new(-1, (), Mono::now());
        let bounds = output_bounds(8, usize::MAX);
        deliver(&mut OneLine, &mut conn, b"0123456789\n", &mut pool, &bounds);
        assert!(conn.has(flag::PAUSED));
        assert!(!conn.wants_input(&bounds));
        assert!(conn.keeps_reading(&bounds), "armed until input waits");
        let d = deliver(&mut OneLine, &mut conn, b"more\n", &mut pool, &bounds);
        assert!(!d.has_output && !d.backlog);
        assert!(!conn.keeps_reading(&bounds));
        assert_eq!(conn.input.bytes(), b"more\n");
        assert!(!conn.try_resume(&bounds), "11 bytes still unsent");
        conn.out.advance(8); // the peer read most of it
        assert!(conn.try_resume(&bounds));
        assert!(conn.wants_input(&bounds));
        deliver(&mut OneLine, &mut conn, b"", &mut pool, &bounds);
        assert_eq!(conn.out.unsent(), b"89\nmore\n");
    }

    /// After the peer's EOF, the connection finishes once its backlog is done.
    #[test]
    fn eof_finishes_after_backlog() {
        let mut pool = OutPool::new();
        let mut conn = Conn::new(-1, (), Mono::now());
        deliver(&mut OneLine, &mut conn, b"a\nb\n", &mut pool, &UNBOUNDED);
        conn.set(flag::PEER_EOF | flag::BACKLOG);
        assert!(!conn.finishing() && !conn.wants_input(&UNBOUNDED));
        conn.clear(flag::BACKLOG);
        deliver(&mut OneLine, &mut conn, b"", &mut pool, &UNBOUNDED);
        assert!(conn.finishing());
        assert_eq!(conn.out.bytes(), b"a\nb\n");
    }

    #[test]
    fn slots_shrink_after_a_burst() {
        let mut slots = Slots::new();
        let keys: Vec<_> = (0..5000).map(|i| slots.insert(Conn::new(i, (), Mono::now()))).collect();
        for &key in &keys[1..] {
            slots.remove(key);
        }
        slots.shrink();
        assert_eq!(slots.slots.len(), 1);
        assert!(slots.free.is_empty());
        let again = slots.insert(Conn::new(9, (), Mono::now()));
        assert!(slots.get_mut(keys[1]).is_none(), "a stale key must not name the new slot");
        assert_eq!(slots.get_mut(again).map(|c| c.fd), Some(9));
    }

    #[test]
    fn close_after_flush_drops_input_and_ignores_more() {
        let mut pool = OutPool::new();
        let mut conn = Conn::new(-1, (), Mono::now());
        let d = deliver(&mut OneLine, &mut conn, b"a\nquit\nb\n", &mut pool, &UNBOUNDED);
        assert!(d.backlog);
        let d = deliver(&mut OneLine, &mut conn, b"", &mut pool, &UNBOUNDED);
        assert!(d.close_after_flush);
        assert_eq!(conn.out.bytes(), b"a\n");
        assert!(conn.input.is_empty());
        let d = deliver(&mut OneLine, &mut conn, b"c\n", &mut pool, &UNBOUNDED);
        assert!(!d.has_output && !d.close_after_flush);
    }

    /// io_uring's drained `sending` becomes a spare `out` when `out` has none, and goes back
    /// to the pool if no reply took it; with `out` holding a buffer, it goes to the pool.
    #[test]
    fn drained_send_buffer_is_a_spare_for_the_turn() {
        let mut pool = OutPool::new();
        let mut conn = Conn::new(-1, (), Mono::now());
        conn.sending = OutBuf::from(b"reply\r\n".to_vec());
        assert!(!conn.advance_output(3, &mut pool), "not drained yet");
        assert!(conn.advance_output(4, &mut pool));
        assert_eq!((conn.sending.capacity(), pool.len()), (0, 0));
        assert!(conn.out.is_empty() && conn.out.capacity() != 0);
        conn.return_spare(&mut pool);
        assert_eq!((conn.out.capacity(), pool.len()), (0, 1));
        conn.sending = OutBuf::from(b"a".to_vec());
        conn.out = OutBuf::from(b"b".to_vec());
        assert!(!conn.advance_output(1, &mut pool));
        assert_eq!((conn.sending.capacity(), pool.len()), (0, 2));
        conn.return_spare(&mut pool);
        assert_eq!(conn.out.bytes(), b"b", "a spare with output stays");
    }

    /// epoll's `out`, written in place, stays as the spare once drained (the caller lists
    /// it, and the next flush gives it back unless a reply took it); a large one goes back.
    #[test]
    fn drained_out_is_a_spare_until_the_next_flush() {
        let mut pool = OutPool::new();
        let mut conn = Conn::new(-1, (), Mono::now());
        conn.out = OutBuf::from(b"reply\r\n".to_vec());
        assert!(!conn.advance_output(3, &mut pool), "not drained yet");
        assert!(conn.advance_output(4, &mut pool));
        assert!(conn.out.is_empty() && conn.out.capacity() != 0);
        assert_eq!(pool.len(), 0);
        conn.out.buf_mut().extend_from_slice(b"next\r\n");
        conn.return_spare(&mut pool);
        assert_eq!((conn.out.bytes(), pool.len()), (&b"next\r\n"[..], 0), "a reply took it");
        assert!(conn.advance_output(6, &mut pool));
        conn.return_spare(&mut pool);
        assert_eq!((conn.out.capacity(), pool.len()), (0, 1), "unused: back to the pool");
        assert!(!conn.advance_output(0, &mut pool), "no buffer, no spare");
        conn.out = OutBuf::with_capacity(SPARE_CAPACITY_MAX + 1);
        conn.out.buf_mut().push(b'x');
        assert!(!conn.advance_output(1, &mut pool));
        assert_eq!((conn.out.capacity(), pool.len()), (0, 2));
    }

    #[test]
    fn over_limit_is_reported() {
        let mut pool = OutPool::new();
        let mut conn = Conn::new(-1, (), Mono::now());
        let d =
            deliver(&mut OneLine, &mut conn, b"0123456789\n", &mut pool, &output_bounds(100, 10));
        assert!(d.over_limit);
    }

    /// The loop's part of an idle connection stays small (the handler's state comes on top):
    /// 128 bytes before TLS, plus the session's thin pointer and the zero-copy one.
    #[test]
    fn idle_slot_is_small() {
        assert!(size_of::<Slot<()>>() <= 144, "{}", size_of::<Slot<()>>());
    }

    #[test]
    fn slots_bump_generation() {
        let mut slots = Slots::new();
        let a = slots.insert(Conn::new(3, (), Mono::now()));
        slots.remove(a);
        let b = slots.insert(Conn::new(4, (), Mono::now()));
        assert_eq!(a.index, b.index);
        assert_ne!(a.gen, b.gen);
        assert!(slots.get_mut(a).is_none());
        assert_eq!(slots.get_mut(b).map(|c| c.fd), Some(4));
    }
}
