//! Zero-copy sends of lent values (`MSG_ZEROCOPY`, both back ends): the kernel sends from
//! item memory itself, so the handler's hold on that memory ([`Handler::hold_lent`]) is kept
//! until the kernel says it is done with the pages, not only until `sendmsg` returns.
//!
//! ```text
//!   lend::place   lent >= LoopConfig::zerocopy_min_bytes, socket not known to copy, nothing
//!                 queued on it: sendmsg(MSG_ZEROCOPY) of at most the peer's window, the
//!                 rest plainly -> held: (send number, n, hold, the send's reply lines)
//!   error queue   "sends first..=last done" (every turn and tick; EPOLLERR on epoll, a
//!                 POLLERR poll on io_uring) -> their holds dropped; "copied" -> this
//!                 socket sends plainly from now on (loopback and veth always copy)
//!   close         holds left: the socket lingers (write side shut, reaped each turn)
//!                 until they are released, at most HOLD_MAX, then is reset (SO_LINGER 0)
//! ```
//!
//! Bounds: held bytes count as the connection's unsent output, so a peer that reads
//! nothing pauses at the usual threshold with at most that much pinned; a send held longer
//! than [`HOLD_MAX`] closes the connection with a reset, which makes the kernel drop its
//! queue (and its use of the pages). A hold pins the reading thread's epoch (store::loans),
//! which delays every thread's reuse of freed memory: that is why the bound is in time too.
//!
//! [`Handler::hold_lent`]: crate::Handler::hold_lent

use std::{
    collections::VecDeque,
    os::fd::RawFd,
    time::{Duration, Instant},
};

use crate::{conn::Key, sys};

/// A handler's hold on the memory of the parts it lends (see [`crate::Handler::hold_lent`]):
/// while it lives, the parts stay valid and unchanged.
pub type Hold = Box<dyn std::any::Any>;

/// The longest a zero-copy send may stay unreported before its connection is reset (a hold
/// pins the thread's epoch, which holds back memory reuse on every thread).
pub(crate) const HOLD_MAX: Duration = Duration::from_secs(1);

/// Whether the socket sends zero-copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Not tried yet (SO_ZEROCOPY is set at the first large send).
    Untried,
    On,
    /// Refused by the socket, or the kernel reported it copied: plain sends from now on.
    Off,
}

/// A zero-copy send the kernel has not reported done.
struct Held {
    /// The kernel's number for it.
    number: u32,
    bytes: usize,
    at: Instant,
    _hold: Hold,
    /// The send's own bytes (reply lines, earlier output): the kernel reads them in place
    /// too, so they live here, not in the connection's output buffer, which is reused.
    _lines: Vec<u8>,
}

/// One connection's zero-copy sends in the kernel's hands.
pub(crate) struct ZeroCopy {
    mode: Mode,
    /// The number the kernel gives the next zero-copy send that takes bytes.
    next: u32,
    /// Held sends, oldest first.
    held: VecDeque<Held>,
    held_bytes: usize,
    /// In the loop's [`ZeroCopies::waiting`].
    pub listed: bool,
    /// Held past [`HOLD_MAX`]: the connection is reset at its close, not left to linger.
    pub reset: bool,
    /// io_uring: a poll for the error queue (POLLERR) is in flight.
    pub polling: bool,
}

impl ZeroCopy {
    pub fn new() -> Self {
        ZeroCopy {
            mode: Mode::Untried,
            next: 0,
            held: VecDeque::new(),
            held_bytes: 0,
            listed: false,
            reset: false,
            polling: false,
        }
    }

    /// Whether this socket may still send zero-copy.
    pub fn usable(&self) -> bool {
        self.mode != Mode::Off
    }

    /// Bytes the kernel may still read from held memory.
    pub fn held_bytes(&self) -> usize {
        self.held_bytes
    }

    pub fn is_idle(&self) -> bool {
        self.held.is_empty()
    }

    /// When the oldest held send went out.
    pub fn oldest(&self) -> Option<Instant> {
        self.held.front().map(|held| held.at)
    }

    /// Starts a zero-copy send on `fd`: the handler's hold on the parts, or None when this
    /// socket does not send zero-copy or there is nothing to hold (the caller sends plainly).
    pub fn begin(&mut self, fd: RawFd, hold: impl FnOnce() -> Option<Hold>) -> Option<Hold> {
        if self.mode == Mode::Untried {
            self.mode = if sys::enable_zerocopy(fd).is_ok() { Mode::On } else { Mode::Off };
        }
        if self.mode != Mode::On {
            return None;
        }
        hold()
    }

    /// Ends the send [`ZeroCopy::begin`] started, whose iovecs point into the hold's parts
    /// and `lines` only: None when it must be sent plainly after all (ENOBUFS: no room for
    /// the notification), else the bytes taken (0 on a full socket or an error, which the
    /// ordinary send that follows finds). Taken bytes keep `hold` and `lines` until their
    /// notification.
    pub fn end(
        &mut self,
        result: std::io::Result<usize>,
        now: Instant,
        hold: Hold,
        lines: Vec<u8>,
    ) -> Option<usize> {
        match result {
            Ok(0) => Some(0),
            Ok(bytes) => {
                let number = self.next;
                self.held.push_back(Held { number, bytes, at: now, _hold: hold, _lines: lines });
                self.next = self.next.wrapping_add(1);
                self.held_bytes += bytes;
                Some(bytes)
            }
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => None,
            Err(_) => Some(0),
        }
    }

    /// [`ZeroCopy::begin`], the send, [`ZeroCopy::end`], for iovecs that all point into
    /// held memory.
    #[cfg(test)]
    pub fn send(
        &mut self,
        fd: RawFd,
        iov: &[std::io::IoSlice<'_>],
        now: Instant,
        hold: impl FnOnce() -> Option<Hold>,
    ) -> Option<usize> {
        let hold = self.begin(fd, hold)?;
        self.end(sys::sendmsg_zerocopy(fd, iov), now, hold, Vec::new())
    }

    /// Takes every notification waiting on `fd`'s error queue and drops the holds it
    /// releases. Returns whether any came.
    pub fn reap(&mut self, fd: RawFd) -> bool {
        let mut any = false;
        while let Ok(Some(done)) = sys::zerocopy_done(fd) {
            any = true;
            self.release(done);
        }
        any
    }

    /// The socket reported an error condition (EPOLLERR, POLLERR): reaps, and tells whether
    /// it was only the error queue's notifications (true) or a real socket error.
    pub fn notified(&mut self, fd: RawFd) -> bool {
        self.reap(fd) || sys::socket_error(fd) == 0
    }

    /// Drops the holds of sends `done.first..=done.last`; a copy turns zero-copy off.
    fn release(&mut self, done: sys::ZerocopyDone) {
        if done.copied {
            self.mode = Mode::Off;
        }
        let span = done.last.wrapping_sub(done.first);
        let held_bytes = &mut self.held_bytes;
        self.held.retain(|held| {
            let covered = held.number.wrapping_sub(done.first) <= span;
            if covered {
                *held_bytes -= held.bytes;
            }
            !covered
        });
    }
}

/// The loop's zero-copy bookkeeping: the open connections with held sends (reaped every
/// turn, checked against [`HOLD_MAX`] at ticks) and the closed ones still lingering.
#[derive(Default)]
pub(crate) struct ZeroCopies {
    pub waiting: Vec<Key>,
    lingering: Vec<Lingering>,
}

impl ZeroCopies {
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty() && self.lingering.is_empty()
    }

    /// Lists a connection whose sends are held, once.
    pub fn track(&mut self, key: Key, zc: &mut ZeroCopy) {
        if !zc.listed {
            zc.listed = true;
            self.waiting.push(key);
        }
    }

    /// Takes over a closed connection's descriptor while its sends are held: its writing
    /// side is shut (the peer reads the end after what is queued), and it is closed once
    /// they are released, or reset at the deadline.
    pub fn linger(&mut self, fd: RawFd, zc: Box<ZeroCopy>, now: Instant) {
        let deadline = if zc.reset { now } else { now + HOLD_MAX };
        sys::shutdown_write(fd);
        let mut lingering = Lingering { fd, zc, deadline };
        if !lingering.finish(now) {
            self.lingering.push(lingering);
        }
    }

    /// Finishes the lingering connections that are done; true if any is left.
    pub fn finish_lingering(&mut self, now: Instant) -> bool {
        self.lingering.retain_mut(|lingering| !lingering.finish(now));
        !self.lingering.is_empty()
    }
}

impl Drop for ZeroCopies {
    /// The loop ends: what still lingers is reset, then its holds go.
    fn drop(&mut self) {
        for lingering in &mut self.lingering {
            lingering.deadline = Instant::now();
            lingering.finish(lingering.deadline);
        }
    }
}

/// A closed connection whose zero-copy sends are still held: its descriptor stays open (the
/// notifications arrive on it) until they are released or [`HOLD_MAX`] has passed.
pub(crate) struct Lingering {
    pub fd: RawFd,
    pub zc: Box<ZeroCopy>,
    pub deadline: Instant,
}

impl Lingering {
    /// Reaps; true when done (the descriptor closed, the holds dropped): all released, or
    /// past the deadline, when the connection is reset so the kernel drops its queue.
    pub fn finish(&mut self, now: Instant) -> bool {
        self.zc.reap(self.fd);
        if !self.zc.is_idle() && now < self.deadline {
            return false;
        }
        if !self.zc.is_idle() {
            sys::set_abortive_close(self.fd);
        }
        sys::close(self.fd);
        true
    }
}

#[cfg(test)]
mod tests {
    use std::{
        cell::Cell,
        io::IoSlice,
        io::{Read, Write},
        net::{TcpListener, TcpStream},
        os::fd::AsRawFd,
        rc::Rc,
    };

    use super::*;

    /// Counts its live instances, so a test sees when holds are dropped.
    struct Counted(Rc<Cell<usize>>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.set(self.0.get() - 1);
        }
    }

    fn hold(live: &Rc<Cell<usize>>) -> Option<Hold> {
        live.set(live.get() + 1);
        Some(Box::new(Counted(Rc::clone(live))))
    }

    fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        (server, client)
    }

    /// Loopback: the kernel copies, says so, and the socket falls back to plain sends;
    /// the hold lives until the notification.
    #[test]
    fn loopback_copies_and_turns_zero_copy_off() {
        let (server, mut client) = pair();
        let live = Rc::new(Cell::new(0));
        let mut zc = ZeroCopy::new();
        let data = vec![7u8; 100_000];
        let sent =
            zc.send(server.as_raw_fd(), &[IoSlice::new(&data)], Instant::now(), || hold(&live));
        let sent = sent.expect("SO_ZEROCOPY is accepted on TCP");
        assert!(sent > 0);
        assert_eq!(zc.held_bytes(), sent);
        let mut got = vec![0; sent];
        client.read_exact(&mut got).unwrap();
        assert!(got.iter().all(|&b| b == 7));
        let deadline = Instant::now() + Duration::from_secs(5);
        while !zc.is_idle() && Instant::now() < deadline {
            zc.reap(server.as_raw_fd());
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(zc.is_idle(), "no notification");
        assert_eq!(live.get(), 0, "the hold outlived its notification");
        assert_eq!(zc.held_bytes(), 0);
        assert!(!zc.usable(), "loopback copies: zero-copy goes off");
        let again =
            zc.send(server.as_raw_fd(), &[IoSlice::new(&data)], Instant::now(), || hold(&live));
        assert_eq!(again, None);
        assert_eq!(live.get(), 0);
    }

    /// Ranges release exactly the sends they name, in any order, wrapping at u32::MAX.
    #[test]
    fn notifications_release_their_range() {
        let live = Rc::new(Cell::new(0));
        let mut zc = ZeroCopy::new();
        zc.mode = Mode::On;
        zc.next = u32::MAX - 1;
        let now = Instant::now();
        for bytes in [10, 20, 30, 40] {
            assert_eq!(zc.end(Ok(bytes), now, hold(&live).unwrap(), Vec::new()), Some(bytes));
        }
        let done = |first, last| sys::ZerocopyDone { first, last, copied: false };
        zc.release(done(0, 1));
        assert_eq!((zc.held_bytes(), live.get()), (30, 2));
        zc.release(done(u32::MAX - 1, u32::MAX - 1));
        assert_eq!((zc.held_bytes(), live.get()), (20, 1));
        assert!(zc.usable());
        zc.release(done(u32::MAX, 0));
        assert_eq!((zc.held_bytes(), live.get()), (0, 0));
        assert!(zc.is_idle());
    }

    /// A peer that reads nothing: the hold stays; a lingering close past its deadline
    /// resets the connection and drops it.
    #[test]
    fn unread_sends_stay_held_until_the_linger_deadline() {
        let (server, mut client) = pair();
        let live = Rc::new(Cell::new(0));
        let mut zc = ZeroCopy::new();
        let data = vec![1u8; 64 << 10];
        client.write_all(b"x").unwrap();
        // Fill the peer's window so the kernel keeps the send queued.
        let mut sent = 0;
        for _ in 0..1000 {
            let got =
                zc.send(server.as_raw_fd(), &[IoSlice::new(&data)], Instant::now(), || hold(&live));
            match got {
                Some(0) | None => break,
                Some(n) => sent += n,
            }
        }
        assert!(sent > 0);
        zc.reap(server.as_raw_fd());
        assert!(live.get() > 0, "unacknowledged sends released");
        let fd = server.as_raw_fd();
        std::mem::forget(server); // the lingering entry owns the descriptor now
        let now = Instant::now();
        let mut lingering = Lingering { fd, zc: Box::new(zc), deadline: now + HOLD_MAX };
        assert!(!lingering.finish(now));
        assert!(live.get() > 0);
        assert!(lingering.finish(now + HOLD_MAX));
        drop(lingering);
        assert_eq!(live.get(), 0);
        let mut rest = Vec::new();
        // Reset: the peer sees an error or a short stream, never more than was sent.
        let _ = client.read_to_end(&mut rest);
        assert!(rest.len() <= sent);
    }
}
