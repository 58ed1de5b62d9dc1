//! The epoll driver, the fallback where io_uring is unavailable: readiness, then the system
//! call, whose result is the loop's event.
//!
//! ```text
//!   turn:  epoll_wait(timeout = next tick) at the end of the last turn ──> per ready socket:
//!          recv into the loop's one scratch buffer (at most READS_PER_EVENT times, each
//!          handed to the loop before the next), accept (at most ACCEPTS_PER_EVENT)
//!          ──> loop: backlog, tick, one send(2) per connection with output
//! ```
//!
//! Interest is level-triggered and follows what the connection wants ([`Epoll::set_reading`]):
//! EPOLLIN while it wants input (not paused by backpressure, not closing, peer not at EOF, no
//! large yielded backlog; `WANT_IN`), EPOLLOUT while a send was partial (`WANT_OUT`). So
//! unread input or an EOF cannot make the loop spin, and a paused peer's bytes stay in the
//! kernel, where TCP flow control pushes back on the client. Level triggering lets a read
//! batch stop early (a short read, or the per-event bound) without losing the wake-up for
//! what is left. Errors and hang-ups are reported whatever the interest.
//!
//! The loop's [`Notifier`] eventfd, when it has one, is in the set too (`TOKEN_NOTIFIER`):
//! its readiness is drained at once and reported as [`Event::Notified`].
//!
//! Output uses one buffer per connection (`Conn::out`, from the pool): the kernel copies on
//! send, so new replies can be appended behind the unsent part (its `sent` offset marks it).
//! Closing is immediate: no operation outlives a system call.

use std::{
    io, mem,
    net::SocketAddr,
    os::fd::{AsRawFd, OwnedFd, RawFd},
    time::Duration,
};

use super::{Driver, Event, Sending};
use crate::{
    buf::OutPool,
    clock::Mono,
    conn::{flag, Bounds, Conn, Key, Slots},
    sys, ListenSocket, Listener, LoopConfig, Notifier,
};

/// Size of the loop's one receive buffer.
const SCRATCH_BYTES: usize = 64 * 1024;
/// Reads per readiness event per connection, so one busy peer cannot starve the others.
const READS_PER_EVENT: usize = 4;
/// Accepts per readiness event per listener.
const ACCEPTS_PER_EVENT: usize = 64;
/// Events taken per epoll_wait.
const EVENTS_MAX: usize = 256;
/// Marks a listener's token (connections use slot index and generation).
const TOKEN_LISTENER: u64 = 1 << 63;
/// The notifier's token: bit 62 is set by no listener (bit 63) and no connection (its
/// generation has 24 bits, so it never reaches bit 56).
const TOKEN_NOTIFIER: u64 = 1 << 62;
const _: () = assert!(TOKEN_NOTIFIER >> 32 > crate::conn::GEN_MASK as u64);

fn token(key: Key) -> u64 {
    (u64::from(key.gen) << 32) | u64::from(key.index)
}

const IN: u32 = libc::EPOLLIN as u32;
const OUT: u32 = libc::EPOLLOUT as u32;
const ERR: u32 = libc::EPOLLERR as u32;
const HUP: u32 = libc::EPOLLHUP as u32;

struct ListenSlot {
    socket: Option<ListenSocket>,
    tag: u32,
    /// Removed from epoll after EMFILE and kin, to be added back at the next tick (a
    /// level-triggered listener would otherwise wake the loop in a tight circle).
    paused: bool,
}

/// Where the translation of this turn's readiness events stands: one readiness event can
/// make several loop events, and a read waits until the loop has handled the last one.
#[derive(Debug, Clone, Copy)]
enum Cursor {
    /// Take the next readiness event.
    Next,
    /// A connection's readiness, EPOLLOUT already reported: errors and input to look at.
    Conn { key: Key, bits: u32 },
    /// Reading a connection: reads left for this readiness event.
    Reading { key: Key, reads_left: usize },
    /// Accepting on listener `index`: accepts left for this readiness event.
    Accepting { index: usize, accepts_left: usize },
}

pub(crate) struct Epoll {
    epfd: OwnedFd,
    listeners: Vec<ListenSlot>,
    scratch: Box<[u8]>,
    events: Vec<libc::epoll_event>,
    /// The next of `events` to translate.
    next: usize,
    cursor: Cursor,
    /// The peer accept4 reported for the last [`Event::Accepted`].
    accepted_peer: Option<SocketAddr>,
    busy_poll: Duration,
    /// Watched (level-triggered EPOLLIN on its eventfd) until shutdown.
    notifier: Option<Notifier>,
}

impl Driver for Epoll {
    /// Bytes at the start of the scratch buffer.
    type Input = usize;

    fn new(config: &LoopConfig, listeners: Vec<Listener>) -> io::Result<Self> {
        let epfd = sys::epoll_create()?;
        let mut slots = Vec::with_capacity(listeners.len());
        for (index, listener) in listeners.into_iter().enumerate() {
            listener.socket.set_nonblocking(true)?;
            let fd = listener.socket.as_raw_fd();
            let token = TOKEN_LISTENER | index as u64;
            sys::epoll_ctl(epfd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, IN, token)?;
            slots.push(ListenSlot {
                socket: Some(listener.socket),
                tag: listener.tag,
                paused: false,
            });
        }
        if let Some(notifier) = &config.notifier {
            let (epfd, fd) = (epfd.as_raw_fd(), notifier.fd());
            sys::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, fd, IN, TOKEN_NOTIFIER)?;
        }
        Ok(Epoll {
            epfd,
            listeners: slots,
            scratch: vec![0; SCRATCH_BYTES].into_boxed_slice(),
            events: Vec::with_capacity(EVENTS_MAX),
            next: 0,
            cursor: Cursor::Next,
            accepted_peer: None,
            busy_poll: Duration::from_micros(config.busy_poll_us),
            notifier: config.notifier.clone(),
        })
    }

    #[inline]
    fn next_event<C>(
        &mut self,
        conns: &mut Slots<C>,
        bounds: &Bounds,
    ) -> io::Result<Option<Event<usize>>> {
        loop {
            let event = match mem::replace(&mut self.cursor, Cursor::Next) {
                Cursor::Next => {
                    let Some(ready) = self.events.get(self.next) else { return Ok(None) };
                    self.next += 1;
                    let (bits, token) = (ready.events, ready.u64);
                    if token == TOKEN_NOTIFIER {
                        self.notified()
                    } else if token & TOKEN_LISTENER != 0 {
                        self.accept((token & !TOKEN_LISTENER) as usize, ACCEPTS_PER_EVENT)
                    } else {
                        let key = Key { index: token as u32, gen: (token >> 32) as u32 };
                        self.readiness(key, bits, conns, bounds)
                    }
                }
                Cursor::Conn { key, bits } => self.readiness(key, bits, conns, bounds),
                Cursor::Reading { key, reads_left } => self.read(key, reads_left, conns, bounds),
                Cursor::Accepting { index, accepts_left } => self.accept(index, accepts_left),
            };
            if event.is_some() {
                return Ok(event);
            }
        }
    }

    fn peer(&mut self, _fd: RawFd) -> Option<SocketAddr> {
        self.accepted_peer.take()
    }

    #[inline]
    fn input(&self, input: &usize) -> &[u8] {
        &self.scratch[..*input]
    }

    #[inline]
    fn release(&mut self, _input: usize) {}

    fn watch<C>(&mut self, key: Key, conn: &mut Conn<C>) -> io::Result<bool> {
        conn.set(flag::WANT_IN);
        let added =
            sys::epoll_ctl(self.epfd.as_raw_fd(), libc::EPOLL_CTL_ADD, conn.fd, IN, token(key));
        Ok(added.is_ok())
    }

    /// Registers EPOLLIN exactly while `want` and EPOLLOUT while a send is partial
    /// (`WANT_OUT`); one `epoll_ctl` only when that changes (`WANT_IN`, `REG_OUT` say what
    /// is registered).
    #[inline]
    fn set_reading<C>(&mut self, key: Key, conn: &mut Conn<C>, want: bool) -> io::Result<()> {
        let want_out = conn.has(flag::WANT_OUT);
        if want == conn.has(flag::WANT_IN) && want_out == conn.has(flag::REG_OUT) {
            return Ok(());
        }
        let mut events = 0;
        conn.clear(flag::WANT_IN | flag::REG_OUT);
        if want {
            conn.set(flag::WANT_IN);
            events |= IN;
        }
        if want_out {
            conn.set(flag::REG_OUT);
            events |= OUT;
        }
        sys::epoll_ctl(self.epfd.as_raw_fd(), libc::EPOLL_CTL_MOD, conn.fd, events, token(key))
    }

    /// One send(2) of all unsent output (skipped while waiting for EPOLLOUT).
    #[inline]
    fn send<C>(
        &mut self,
        _key: Key,
        conn: &mut Conn<C>,
        _pool: &mut OutPool,
    ) -> io::Result<Sending> {
        if conn.has(flag::WANT_OUT) && !conn.has(flag::OUT_READY) {
            return Ok(Sending::Blocked);
        }
        conn.clear(flag::OUT_READY);
        if !conn.out.has_unsent() {
            return Ok(Sending::Wrote(0));
        }
        Ok(match sys::send_nowait(conn.fd, conn.out.unsent()) {
            Ok(n) => Sending::Wrote(n),
            Err(e) if sys::is_would_block(&e) => Sending::Wrote(0),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Sending::Wrote(0),
            Err(_) => Sending::Failed, // EPIPE, ECONNRESET: drop what is left
        })
    }

    /// Asks for EPOLLOUT exactly while output is left (registered by the loop's
    /// [`Epoll::set_reading`] that follows).
    #[inline]
    fn output_left<C>(&mut self, conn: &mut Conn<C>, left: bool) -> bool {
        if left {
            conn.set(flag::WANT_OUT);
        } else {
            conn.clear(flag::WANT_OUT);
        }
        false
    }

    fn cancel<C>(&mut self, _key: Key, _conn: &mut Conn<C>) -> io::Result<()> {
        Ok(())
    }

    /// Closing the descriptor also removes it from the epoll set.
    fn close_fd(&mut self, _key: Key, fd: RawFd) -> io::Result<()> {
        sys::close(fd);
        Ok(())
    }

    /// EPOLLERR is always reported: nothing to arm.
    fn watch_errors<C>(&mut self, _key: Key, _conn: &mut Conn<C>) -> io::Result<()> {
        Ok(())
    }

    /// Not registered (its watch failed): nothing to remove.
    fn forget_fd(&mut self, fd: RawFd) -> io::Result<()> {
        let _ = sys::epoll_ctl(self.epfd.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, 0, 0);
        Ok(())
    }

    fn stop_accepting(&mut self) -> io::Result<()> {
        for slot in &mut self.listeners {
            slot.socket = None;
        }
        if let Some(notifier) = self.notifier.take() {
            sys::epoll_ctl(self.epfd.as_raw_fd(), libc::EPOLL_CTL_DEL, notifier.fd(), 0, 0)?;
        }
        Ok(())
    }

    fn tick(&mut self) -> io::Result<()> {
        for (index, slot) in self.listeners.iter_mut().enumerate() {
            let Some(socket) = &slot.socket else { continue };
            if mem::take(&mut slot.paused) {
                let token = TOKEN_LISTENER | index as u64;
                let (epfd, fd) = (self.epfd.as_raw_fd(), socket.as_raw_fd());
                sys::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, fd, IN, token)?;
            }
        }
        Ok(())
    }

    #[inline]
    fn wait(&mut self, now: Mono, next_tick: Mono, work_waiting: bool) -> io::Result<()> {
        self.next = 0;
        self.cursor = Cursor::Next;
        let epfd = self.epfd.as_raw_fd();
        if work_waiting {
            return sys::epoll_wait(epfd, &mut self.events, 0);
        }
        if !self.busy_poll.is_zero() {
            let until = (now + self.busy_poll).min(next_tick);
            loop {
                sys::epoll_wait(epfd, &mut self.events, 0)?;
                if !self.events.is_empty() || Mono::now() >= until {
                    break;
                }
                std::hint::spin_loop();
            }
            if !self.events.is_empty() {
                return Ok(());
            }
        }
        // Round up, so the loop does not wake just before the tick and spin. `now` was read
        // at the turn's end; after a spin, the clock is read again.
        let now = if self.busy_poll.is_zero() { now } else { Mono::now() };
        let ms = next_tick.nanos_since(now).div_ceil(1_000_000).min(i32::MAX as u64) as i32;
        sys::epoll_wait(epfd, &mut self.events, ms)
    }

    fn ops_in_flight(&self) -> bool {
        false
    }

    fn wait_for_ops(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn release_memory(&mut self) -> bool {
        true
    }
}

impl Epoll {
    /// The notifier's eventfd is readable: drained here, before the loop takes the wake
    /// (the order `notify.rs` relies on), so level triggering does not report it again.
    fn notified(&mut self) -> Option<Event<usize>> {
        // A stale readiness after shutdown stopped watching finds no notifier.
        self.notifier.as_ref()?.drain();
        Some(Event::Notified)
    }

    /// A connection's readiness: EPOLLOUT first, then errors, then input.
    #[inline]
    fn readiness<C>(
        &mut self,
        key: Key,
        bits: u32,
        conns: &mut Slots<C>,
        bounds: &Bounds,
    ) -> Option<Event<usize>> {
        // A stale event (the connection closed earlier in this batch) finds no connection.
        let conn = conns.get_mut(key)?;
        if bits & OUT != 0 {
            conn.set(flag::OUT_READY);
            self.cursor = Cursor::Conn { key, bits: bits & !OUT };
            return Some(Event::Writable(key));
        }
        // The error queue holds zero-copy notifications, not an error: reaped here, the
        // rest of the readiness is looked at next (a real error stays and is seen again).
        if bits & ERR != 0 && conn.zc.as_mut().is_some_and(|zc| zc.notified(conn.fd)) {
            self.cursor = Cursor::Conn { key, bits: bits & !ERR };
            return Some(Event::ZeroCopyDone(key));
        }
        if bits & ERR != 0 || (bits & HUP != 0 && !conn.wants_input(bounds)) {
            // Reset, or both directions shut: nobody will read what is left.
            return Some(Event::Failed(key));
        }
        if bits & (IN | HUP) == 0 {
            return None;
        }
        if conn.has(flag::PAUSED) {
            // Input waits while the connection is paused: stop hearing about it.
            return Some(Event::InputWaiting(key));
        }
        self.read(key, READS_PER_EVENT, conns, bounds)
    }

    /// One read of a ready connection, if it still wants input.
    #[inline]
    fn read<C>(
        &mut self,
        key: Key,
        mut reads_left: usize,
        conns: &mut Slots<C>,
        bounds: &Bounds,
    ) -> Option<Event<usize>> {
        let conn = conns.get_mut(key)?;
        while reads_left > 0 {
            reads_left -= 1;
            if !conn.wants_input(bounds) {
                break; // an event from before the interest changed
            }
            let room = self.scratch.len().min(bounds.read_bytes);
            return Some(match sys::recv(conn.fd, &mut self.scratch[..room]) {
                // The peer shut down its side: answer what it sent, then close.
                Ok(0) => Event::Eof(key),
                Ok(n) => {
                    // A short read drained the socket; another recv would only say EAGAIN.
                    if n == room {
                        self.cursor = Cursor::Reading { key, reads_left };
                    }
                    Event::Received { key, input: n }
                }
                Err(e) if sys::is_would_block(&e) => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => Event::Failed(key),
            });
        }
        Some(Event::RecvStopped(key))
    }

    /// One accept on a ready listener.
    fn accept(&mut self, index: usize, mut accepts_left: usize) -> Option<Event<usize>> {
        let slot = &mut self.listeners[index];
        let listen_fd = slot.socket.as_ref()?.as_raw_fd();
        while accepts_left > 0 {
            accepts_left -= 1;
            match sys::accept(listen_fd) {
                Ok((fd, peer)) => {
                    self.cursor = Cursor::Accepting { index, accepts_left };
                    self.accepted_peer = peer;
                    return Some(Event::Accepted { tag: slot.tag, fd });
                }
                Err(e) if sys::is_would_block(&e) => return None,
                Err(e) => match e.raw_os_error() {
                    Some(libc::EINTR | libc::ECONNABORTED | libc::EPROTO) => continue,
                    Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM) => {
                        let epfd = self.epfd.as_raw_fd();
                        let _ = sys::epoll_ctl(epfd, libc::EPOLL_CTL_DEL, listen_fd, 0, 0);
                        slot.paused = true;
                        return None;
                    }
                    _ => return None,
                },
            }
        }
        None
    }
}
