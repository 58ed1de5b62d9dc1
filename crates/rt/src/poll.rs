//! A readiness poller for code that drives its own sockets: the client side of the runtime.
//!
//! The [`crate::run`] loop is built for servers: connections arrive through listeners and
//! output is produced only in answer to input. A load generator opens its connections itself
//! and sends on its own schedule (an open-loop rate sends at intended times, whether or not a
//! reply arrived), so it keeps its own loop and uses this safe wrapper over epoll, keeping
//! every `unsafe` inside `rt`.
//!
//! ```text
//!   Poller::add(fd, token, Interest) ─┐
//!   Poller::modify(...)               ├─ epoll_ctl (level-triggered)
//!   Poller::wait(timeout) ─> events() ┘  epoll_pwait2 (ns timeout) where the kernel has it,
//!                                        else epoll_wait (timeout rounded up to a ms)
//! ```

use std::{
    io,
    os::fd::{AsRawFd, OwnedFd, RawFd},
    time::Duration,
};

use crate::sys;

/// Events taken per wait.
const EVENTS_MAX: usize = 1024;

/// What a registered descriptor should be watched for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interest {
    Read,
    ReadWrite,
}

impl Interest {
    fn bits(self) -> u32 {
        match self {
            Interest::Read => libc::EPOLLIN as u32,
            Interest::ReadWrite => (libc::EPOLLIN | libc::EPOLLOUT) as u32,
        }
    }
}

/// One ready descriptor: the token it was registered with and what it is ready for. Hang-up
/// and error conditions count as readable, so the owner's next read reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub token: u64,
    pub readable: bool,
    pub writable: bool,
}

/// An epoll instance and its event buffer.
pub struct Poller {
    epfd: OwnedFd,
    events: Vec<libc::epoll_event>,
    /// Whether `epoll_pwait2` is known to be missing (ENOSYS once).
    pwait2_missing: bool,
}

impl Poller {
    pub fn new() -> io::Result<Poller> {
        Ok(Poller {
            epfd: sys::epoll_create()?,
            events: Vec::with_capacity(EVENTS_MAX),
            pwait2_missing: false,
        })
    }

    /// Watches `fd` (level-triggered) under `token`.
    pub fn add(&self, fd: &impl AsRawFd, token: u64, interest: Interest) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd.as_raw_fd(), token, interest)
    }

    /// Changes what `fd` is watched for.
    pub fn modify(&self, fd: &impl AsRawFd, token: u64, interest: Interest) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd.as_raw_fd(), token, interest)
    }

    /// Stops watching `fd` (closing it does too).
    pub fn delete(&self, fd: &impl AsRawFd) -> io::Result<()> {
        sys::epoll_ctl(self.epfd.as_raw_fd(), libc::EPOLL_CTL_DEL, fd.as_raw_fd(), 0, 0)
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, token: u64, interest: Interest) -> io::Result<()> {
        sys::epoll_ctl(self.epfd.as_raw_fd(), op, fd, interest.bits(), token)
    }

    /// Waits until a descriptor is ready or `timeout` passes (`None`: no limit; zero: just
    /// look). An interrupted wait returns with no events.
    pub fn wait(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        let epfd = self.epfd.as_raw_fd();
        let precise = matches!(timeout, Some(t) if !t.is_zero() && t < Duration::from_secs(1));
        if precise && !self.pwait2_missing {
            let t = timeout.expect("precise implies a timeout");
            match sys::epoll_pwait2(epfd, &mut self.events, t) {
                Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => self.pwait2_missing = true,
                other => return other,
            }
        }
        let ms = match timeout {
            None => -1,
            Some(t) => t.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32,
        };
        sys::epoll_wait(epfd, &mut self.events, ms)
    }

    /// The events of the last [`Poller::wait`].
    pub fn events(&self) -> impl Iterator<Item = Event> + '_ {
        (0..self.event_count()).map(|index| self.event(index))
    }

    /// How many events the last [`Poller::wait`] returned.
    pub fn event_count(&self) -> usize {
        self.events.len()
    }

    /// Event `index` of the last wait (lets the caller act on each without holding a borrow
    /// of the poller). Panics if `index >= event_count()`.
    pub fn event(&self, index: usize) -> Event {
        let e = &self.events[index];
        let readable = (libc::EPOLLIN | libc::EPOLLHUP | libc::EPOLLERR | libc::EPOLLRDHUP) as u32;
        Event {
            token: e.u64,
            readable: e.events & readable != 0,
            writable: e.events & libc::EPOLLOUT as u32 != 0,
        }
    }
}

/// Sets the calling thread's timer slack (how late the kernel may wake a timed wait), so a
/// sub-millisecond schedule is kept; the default slack is 50 us.
pub fn set_timer_slack(slack: Duration) -> io::Result<()> {
    sys::set_timer_slack(slack)
}

#[cfg(test)]
mod tests {
    use std::{
        io::Write,
        net::{TcpListener, TcpStream},
        time::Instant,
    };

    use super::*;

    /// Goal: a connected socket reports readable once its peer writes, and a short timeout
    /// returns close to its length. Method: loopback pair.
    #[test]
    fn readiness_and_timeout() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let mut poller = Poller::new().unwrap();
        poller.add(&client, 7, Interest::Read).unwrap();
        let start = Instant::now();
        poller.wait(Some(Duration::from_micros(300))).unwrap();
        assert_eq!(poller.events().count(), 0);
        assert!(start.elapsed() < Duration::from_millis(50));
        server.write_all(b"x").unwrap();
        poller.wait(Some(Duration::from_secs(5))).unwrap();
        let events: Vec<Event> = poller.events().collect();
        assert_eq!(events, vec![Event { token: 7, readable: true, writable: false }]);
        poller.modify(&client, 8, Interest::ReadWrite).unwrap();
        poller.wait(Some(Duration::ZERO)).unwrap();
        assert!(poller.events().any(|e| e.token == 8 && e.writable));
        poller.delete(&client).unwrap();
    }
}
