//! The two ways a loop talks to the kernel, behind one small interface.
//!
//! ```text
//!              event_loop (written once, generic over D: Driver)
//!                |  arm / send / cancel / close        ^  Event: Accepted, Received, Eof,
//!                v                                     |  Sent, Writable, Notified, ...
//!   +-------------------------------+   +-------------------------------+
//!   | uring: submission queue,      |   | epoll: readiness, then the    |
//!   | completions = events          |   | syscall, its result = event   |
//!   +-------------------------------+   +-------------------------------+
//! ```
//!
//! A driver owns the kernel side (ring or epoll set, listeners, receive buffers) and turns
//! what the kernel reports into [`Event`]s, one at a time, so the loop handles each before
//! the next is produced (epoll reads a socket again only after the loop has handed the
//! previous bytes to the handler). The loop owns the connections; a driver sees a
//! connection only when the loop hands it one, and keeps its own state in the connection's
//! driver flags (`conn::flag`, each marked io_uring or epoll).
//!
//! Dispatch is static: the loop is monomorphized per driver, so a call through this trait
//! costs what a call to the driver's own method did.

use std::{io, net::SocketAddr, os::fd::RawFd};

use crate::{
    buf::OutPool,
    clock::Mono,
    conn::{Bounds, Conn, Key, Slots},
    Listener, LoopConfig,
};

pub(crate) mod epoll;
pub(crate) mod uring;

/// What the kernel reported, in the loop's terms.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Event<I> {
    /// A listener produced a connection: the listener's tag and the descriptor (ours now);
    /// [`Driver::peer`] tells who connected.
    Accepted { tag: u32, fd: RawFd },
    /// Bytes arrived for an open connection. Read them with [`Driver::input`], then hand
    /// them back with [`Driver::release`].
    Received { key: Key, input: I },
    /// The peer shut down its sending side.
    Eof(Key),
    /// Reading stopped without bytes (io_uring: the multishot receive ended for want of a
    /// buffer, or was cancelled; epoll: nothing more to read now): the loop decides whether
    /// to read again.
    RecvStopped(Key),
    /// Input is waiting for a paused connection (epoll: EPOLLIN while paused).
    InputWaiting(Key),
    /// A send operation wrote `bytes` (io_uring).
    Sent { key: Key, bytes: usize },
    /// The socket takes output again (epoll: EPOLLOUT after a partial write).
    Writable(Key),
    /// The socket failed (reset, error, a send that did not go out): close it.
    Failed(Key),
    /// An operation on a closed connection ended: its slot may be freed once none is left.
    Settled(Key),
    /// The loop's [`crate::Notifier`] was notified; the driver has drained its counter, so
    /// the loop takes the wake and offers output to its streaming connections.
    Notified,
    /// Zero-copy notifications released some of a connection's held sends (epoll: the
    /// error queue's EPOLLERR, reaped by the driver).
    ZeroCopyDone(Key),
}

// Events are returned by value, two or three per request: keep them small.
const _: () = assert!(
    std::mem::size_of::<Event<usize>>() <= 24 && std::mem::size_of::<Event<uring::RecvBuf>>() <= 24
);

/// What [`Driver::send`] did with a connection's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sending {
    /// A send operation took the output; [`Event::Sent`] reports it.
    InFlight,
    /// Nothing can be sent now (a send is in flight, or the socket is full); an event marks
    /// the connection dirty again.
    Blocked,
    /// Written at once (possibly 0 bytes: nothing to send, or the socket was full).
    Wrote(usize),
    /// The socket refused (EPIPE, ECONNRESET): close it.
    Failed,
}

/// The kernel interface of one loop. See the module docs.
pub(crate) trait Driver: Sized {
    /// Where a receive's bytes wait until the loop has handed them to the handler.
    type Input: Copy;

    /// Sets up the ring or epoll set, starts accepting on `listeners` and watching
    /// `config.notifier` (its wakes become [`Event::Notified`]).
    fn new(config: &LoopConfig, listeners: Vec<Listener>) -> io::Result<Self>;

    /// The next event of this turn, or `None` once the turn's events are all handed out.
    /// `conns` and `bounds` let epoll check, before each read, that the connection still
    /// wants input.
    fn next_event<C>(
        &mut self,
        conns: &mut Slots<C>,
        bounds: &Bounds,
    ) -> io::Result<Option<Event<Self::Input>>>;

    /// The peer of the connection the last [`Event::Accepted`] reported (epoll: as accept4
    /// returned it; io_uring: asks the kernel).
    fn peer(&mut self, fd: RawFd) -> Option<SocketAddr>;

    /// The bytes of an [`Event::Received`].
    fn input(&self, input: &Self::Input) -> &[u8];

    /// The loop is done with an [`Event::Received`]'s bytes (io_uring: the buffer goes back
    /// to the ring).
    fn release(&mut self, input: Self::Input);

    /// Starts reading a new connection. `Ok(false)`: it cannot be watched; close it.
    fn watch<C>(&mut self, key: Key, conn: &mut Conn<C>) -> io::Result<bool>;

    /// Reads `conn` exactly while `want` (io_uring: arms or cancels its multishot receive;
    /// epoll: registers or drops EPOLLIN, and EPOLLOUT while a write was partial).
    fn set_reading<C>(&mut self, key: Key, conn: &mut Conn<C>, want: bool) -> io::Result<()>;

    /// Hands the connection's unsent output to the kernel: at most one send per call.
    fn send<C>(&mut self, key: Key, conn: &mut Conn<C>, pool: &mut OutPool) -> io::Result<Sending>;

    /// After a send, `left` says whether output remains. Returns whether the loop should
    /// send the rest at its next flush (io_uring); epoll waits for [`Event::Writable`].
    fn output_left<C>(&mut self, conn: &mut Conn<C>, left: bool) -> bool;

    /// Cancels every operation the kernel holds for a closed connection (once).
    fn cancel<C>(&mut self, key: Key, conn: &mut Conn<C>) -> io::Result<()>;

    /// Closes the descriptor of a connection whose slot was freed.
    fn close_fd(&mut self, key: Key, fd: RawFd) -> io::Result<()>;

    /// The connection has zero-copy sends held: report [`Event::ZeroCopyDone`] when the
    /// kernel's notifications arrive (io_uring: a POLLERR poll; epoll: EPOLLERR comes anyway).
    fn watch_errors<C>(&mut self, key: Key, conn: &mut Conn<C>) -> io::Result<()>;

    /// The descriptor of a freed slot stays open without the driver (a lingering
    /// zero-copy close): stop watching it.
    fn forget_fd(&mut self, fd: RawFd) -> io::Result<()>;

    /// Stops accepting, closes the listeners and stops watching the notifier (shutdown).
    fn stop_accepting(&mut self) -> io::Result<()>;

    /// Runs every tick: accepting again on listeners that hit EMFILE and kin.
    fn tick(&mut self) -> io::Result<()>;

    /// `conn` has just been marked `LARGE_INPUT` (it sent a large request, partly received
    /// now): a read that may bring in many buffers at once ends (io_uring's multishot
    /// receive). Epoll's reads are bounded per call already.
    fn large_input<C>(&mut self, _key: Key, _conn: &mut Conn<C>) -> io::Result<()> {
        Ok(())
    }

    /// Hands the kernel what this turn queued and waits until the next tick for events (at
    /// once when `work_waiting`: a backlog is to be offered); collects them for
    /// [`Driver::next_event`]. `now` is the clock as read at the turn's end (the timeout is
    /// the rest of the tick from it).
    fn wait(&mut self, now: Mono, next_tick: Mono, work_waiting: bool) -> io::Result<()>;

    /// Whether the kernel still holds operations (io_uring; the loop waits for them at exit).
    fn ops_in_flight(&self) -> bool;

    /// Waits briefly for outstanding operations and collects their events.
    fn wait_for_ops(&mut self) -> io::Result<()>;

    /// Frees the driver's kernel-shared memory if the kernel is done with it. `false`: it
    /// may still use connection memory, which the loop then leaks rather than free.
    fn release_memory(&mut self) -> bool;
}
