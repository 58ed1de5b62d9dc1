//! The epoll driver: the fallback where io_uring is unavailable.
//!
//! ```text
//!   turn:  epoll_wait(timeout = next tick) ──> per ready socket: recv into the loop's one
//!          scratch buffer (at most READS_PER_EVENT times), handler.receive each time
//!          ──> tick / idle scan ──> one send per connection with output
//! ```
//!
//! Interest is level-triggered and follows what the connection wants ([`Driver::sync_interest`]):
//! EPOLLIN while it wants input (not paused by backpressure, not closing, peer not at EOF, no
//! large yielded backlog; `WANT_IN`), EPOLLOUT while a send was partial (`WANT_OUT`). So
//! unread input or an EOF cannot make the loop spin, and a paused peer's bytes stay in the
//! kernel, where TCP flow control pushes back on the client. Level triggering lets a read
//! batch stop early (a short read, or the per-event bound) without losing the wake-up for
//! what is left. Errors and hang-ups are reported whatever the interest.
//!
//! Output uses one buffer per connection (`Conn::out`, from the pool): the kernel copies on
//! send, so new replies can be appended behind the unsent part (`out_sent` marks it).

use std::{
    io, mem,
    net::TcpListener,
    os::fd::{AsRawFd, OwnedFd},
    time::{Duration, Instant},
};

use crate::{
    conn::{deliver, flag, Bounds, Conn, Delivered, Key, OutPool, Slots},
    sys, Control, Handler, Listener, LoopConfig,
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

fn token(key: Key) -> u64 {
    (u64::from(key.gen) << 32) | u64::from(key.index)
}

struct ListenSlot {
    socket: Option<TcpListener>,
    tag: u32,
    /// Removed from epoll after EMFILE and kin, to be added back at the next tick (a
    /// level-triggered listener would otherwise wake the loop in a tight circle).
    paused: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Running,
    Draining { deadline: Instant },
}

struct Driver<'a, H: Handler> {
    epfd: OwnedFd,
    listeners: Vec<ListenSlot>,
    conns: Slots<H::Conn>,
    pool: OutPool,
    scratch: Box<[u8]>,
    events: Vec<libc::epoll_event>,
    dirty: Vec<Key>,
    backlog: Vec<Key>,
    /// Scratch for [`Driver::flush`]: dirty connections whose send waits a turn.
    deferred: Vec<Key>,
    handler: H,
    config: &'a LoopConfig,
    now: Instant,
    mode: Mode,
    /// Backpressure and input bounds in force (tightened while the buffer budget is over).
    bounds: Bounds,
    /// This loop's share of the process-wide buffer budget, as last published.
    published_buffer_bytes: usize,
}

/// See [`crate::run`].
pub(crate) fn run<H: Handler>(
    config: &LoopConfig,
    listeners: Vec<Listener>,
    handler: H,
) -> io::Result<()> {
    let epfd = sys::epoll_create()?;
    let mut slots = Vec::with_capacity(listeners.len());
    for (index, listener) in listeners.into_iter().enumerate() {
        listener.socket.set_nonblocking(true)?;
        let fd = listener.socket.as_raw_fd();
        let token = TOKEN_LISTENER | index as u64;
        sys::epoll_ctl(epfd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, libc::EPOLLIN as u32, token)?;
        slots.push(ListenSlot { socket: Some(listener.socket), tag: listener.tag, paused: false });
    }
    let mut driver = Driver {
        epfd,
        listeners: slots,
        conns: Slots::new(),
        pool: OutPool::new(),
        scratch: vec![0; SCRATCH_BYTES].into_boxed_slice(),
        events: Vec::with_capacity(EVENTS_MAX),
        dirty: Vec::new(),
        backlog: Vec::new(),
        deferred: Vec::new(),
        handler,
        config,
        now: Instant::now(),
        mode: Mode::Running,
        bounds: config.bounds(),
        published_buffer_bytes: 0,
    };
    let result = driver.run_loop();
    driver.finish();
    result
}

impl<H: Handler> Driver<'_, H> {
    fn run_loop(&mut self) -> io::Result<()> {
        let mut next_tick = Instant::now() + self.config.tick_interval;
        loop {
            self.wait(next_tick)?;
            self.now = Instant::now();
            let events = mem::take(&mut self.events);
            for event in &events {
                let (bits, token) = (event.events, event.u64);
                if token & TOKEN_LISTENER != 0 {
                    self.on_listener((token & !TOKEN_LISTENER) as usize);
                } else {
                    let key = Key { index: token as u32, gen: (token >> 32) as u32 };
                    self.on_conn(key, bits)?;
                }
            }
            self.events = events;
            self.offer_backlog()?;
            if self.now >= next_tick {
                next_tick = self.now + self.config.tick_interval;
                match self.mode {
                    Mode::Running => self.tick()?,
                    Mode::Draining { deadline } if self.now >= deadline => return Ok(()),
                    Mode::Draining { .. } => {}
                }
            }
            self.flush()?;
            if matches!(self.mode, Mode::Draining { .. }) && self.conns.len() == 0 {
                return Ok(());
            }
        }
    }

    fn wait(&mut self, next_tick: Instant) -> io::Result<()> {
        let epfd = self.epfd.as_raw_fd();
        if !self.backlog.is_empty() {
            return sys::epoll_wait(epfd, &mut self.events, 0);
        }
        if self.config.busy_poll_us > 0 {
            let until =
                (Instant::now() + Duration::from_micros(self.config.busy_poll_us)).min(next_tick);
            loop {
                sys::epoll_wait(epfd, &mut self.events, 0)?;
                if !self.events.is_empty() || Instant::now() >= until {
                    break;
                }
                std::hint::spin_loop();
            }
            if !self.events.is_empty() {
                return Ok(());
            }
        }
        // Round up, so the loop does not wake just before the tick and spin.
        let timeout = next_tick.saturating_duration_since(Instant::now());
        let ms = timeout.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32;
        sys::epoll_wait(epfd, &mut self.events, ms)
    }

    fn tick(&mut self) -> io::Result<()> {
        // Before the handler's tick, so that memory freed here can be given back there.
        self.conns.shrink();
        self.pool.trim();
        let held = self.conns.buffer_bytes() + self.pool.bytes();
        self.config.buffers.publish(&mut self.published_buffer_bytes, held);
        self.bounds = self.config.bounds();
        if self.handler.tick() == Control::Shutdown {
            self.begin_shutdown();
            return Ok(());
        }

        if let Some(idle) = self.config.idle_timeout {
            for key in self.conns.keys() {
                let Some(conn) = self.conns.get_mut(key) else { continue };
                if self.now.duration_since(conn.last_input) > idle {
                    self.close(key);
                }
            }
        }
        for (index, slot) in self.listeners.iter_mut().enumerate() {
            let Some(socket) = &slot.socket else { continue };
            if mem::take(&mut slot.paused) {
                let token = TOKEN_LISTENER | index as u64;
                let (epfd, fd) = (self.epfd.as_raw_fd(), socket.as_raw_fd());
                sys::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, fd, libc::EPOLLIN as u32, token)?;
            }
        }
        Ok(())
    }

    fn on_listener(&mut self, index: usize) {
        let Some(socket) = &self.listeners[index].socket else { return };
        let listen_fd = socket.as_raw_fd();
        let tag = self.listeners[index].tag;
        for _ in 0..ACCEPTS_PER_EVENT {
            let (fd, peer) = match sys::accept(listen_fd) {
                Ok(accepted) => accepted,
                Err(e) if sys::is_would_block(&e) => return,
                Err(e) => match e.raw_os_error() {
                    Some(libc::EINTR | libc::ECONNABORTED | libc::EPROTO) => continue,
                    Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM) => {
                        let epfd = self.epfd.as_raw_fd();
                        let _ = sys::epoll_ctl(epfd, libc::EPOLL_CTL_DEL, listen_fd, 0, 0);
                        self.listeners[index].paused = true;
                        return;
                    }
                    _ => return,
                },
            };
            let _ = sys::set_nodelay(fd);
            let state = match self.handler.accept(tag, peer) {
                Ok(state) => state,
                Err(line) => {
                    sys::refuse(fd, line);
                    continue;
                }
            };
            let mut conn = Conn::new(fd, state, self.now);
            conn.set(flag::WANT_IN);
            let key = self.conns.insert(conn);
            let epfd = self.epfd.as_raw_fd();
            let added =
                sys::epoll_ctl(epfd, libc::EPOLL_CTL_ADD, fd, libc::EPOLLIN as u32, token(key));
            if added.is_err() {
                self.close(key);
            }
        }
    }

    fn on_conn(&mut self, key: Key, bits: u32) -> io::Result<()> {
        // A stale event (the connection closed earlier in this batch) finds no connection.
        let Some(conn) = self.conns.get_mut(key) else { return Ok(()) };
        if bits & libc::EPOLLOUT as u32 != 0 {
            conn.set(flag::OUT_READY);
            self.mark_dirty(key);
        }
        let Some(conn) = self.conns.get_mut(key) else { return Ok(()) };
        if bits & libc::EPOLLERR as u32 != 0
            || (bits & libc::EPOLLHUP as u32 != 0 && !conn.wants_input(&self.bounds))
        {
            // Reset, or both directions shut: nobody will read what is left.
            self.close(key);
            return Ok(());
        }
        if bits & (libc::EPOLLIN | libc::EPOLLHUP) as u32 == 0 {
            return Ok(());
        }
        if conn.has(flag::PAUSED) {
            // Input waits while the connection is paused: stop hearing about it.
            conn.set(flag::INPUT_WAITING);
            return self.sync_interest(key);
        }
        for _ in 0..READS_PER_EVENT {
            let Some(conn) = self.conns.get_mut(key) else { return Ok(()) };
            if !conn.wants_input(&self.bounds) {
                break; // an event from before the interest changed
            }
            let n = match sys::recv(conn.fd, &mut self.scratch) {
                Ok(0) => {
                    // The peer shut down its side: answer what it sent, then close.
                    conn.set(flag::PEER_EOF);
                    self.mark_dirty(key);
                    break;
                }
                Ok(n) => n,
                Err(e) if sys::is_would_block(&e) => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    self.close(key);
                    return Ok(());
                }
            };
            conn.last_input = self.now;
            let d =
                deliver(&mut self.handler, conn, &self.scratch[..n], &mut self.pool, &self.bounds);
            self.after_deliver(key, d);
            if n < self.scratch.len() {
                // A short read drained the socket; another recv would only say EAGAIN.
                break;
            }
        }
        self.sync_interest(key)
    }

    fn after_deliver(&mut self, key: Key, d: Delivered) {
        if d.over_limit {
            self.close(key);
            return;
        }
        let conn = self.conns.get_mut(key).expect("delivered to a live connection");
        if d.backlog {
            conn.enqueue_backlog(key, &mut self.backlog);
        }
        if d.has_output || conn.finishing() {
            self.mark_dirty(key);
        }
    }

    fn offer_backlog(&mut self) -> io::Result<()> {
        let mut backlog = mem::take(&mut self.backlog);
        for &key in &backlog {
            let Some(conn) = self.conns.get_mut(key) else { continue };
            conn.clear(flag::BACKLOG);
            let d = deliver(&mut self.handler, conn, &[], &mut self.pool, &self.bounds);
            self.after_deliver(key, d);
            self.sync_interest(key)?;
        }
        backlog.clear();
        if self.backlog.is_empty() {
            self.backlog = backlog;
        }
        Ok(())
    }

    /// Registers EPOLLIN exactly while the connection wants input and EPOLLOUT while a send
    /// is partial (`WANT_OUT`); one `epoll_ctl` only when that changes (`WANT_IN`, `REG_OUT`
    /// say what is registered).
    fn sync_interest(&mut self, key: Key) -> io::Result<()> {
        let Some(conn) = self.conns.get_mut(key) else { return Ok(()) };
        let want_in = conn.keeps_reading(&self.bounds) && self.mode == Mode::Running;
        let want_out = conn.has(flag::WANT_OUT);
        if want_in == conn.has(flag::WANT_IN) && want_out == conn.has(flag::REG_OUT) {
            return Ok(());
        }
        let mut events = 0;
        conn.clear(flag::WANT_IN | flag::REG_OUT);
        if want_in {
            conn.set(flag::WANT_IN);
            events |= libc::EPOLLIN as u32;
        }
        if want_out {
            conn.set(flag::REG_OUT);
            events |= libc::EPOLLOUT as u32;
        }
        sys::epoll_ctl(self.epfd.as_raw_fd(), libc::EPOLL_CTL_MOD, conn.fd, events, token(key))
    }

    fn mark_dirty(&mut self, key: Key) {
        if let Some(conn) = self.conns.get_mut(key) {
            if !conn.has(flag::DIRTY) {
                conn.set(flag::DIRTY);
                self.dirty.push(key);
            }
        }
    }

    /// One send per dirty connection (skipped while waiting for EPOLLOUT).
    fn flush(&mut self) -> io::Result<()> {
        let mut dirty = mem::take(&mut self.dirty);
        let mut deferred = mem::take(&mut self.deferred);
        for &key in &dirty {
            let Some(conn) = self.conns.get_mut(key) else { continue };
            if conn.defers_send(&self.bounds) {
                deferred.push(key); // stays DIRTY
                continue;
            }
            conn.clear(flag::DIRTY);
            if conn.has(flag::WANT_OUT) && !conn.has(flag::OUT_READY) {
                continue;
            }
            conn.clear(flag::OUT_READY);
            if conn.out_sent < conn.out.len() {
                match sys::send_nowait(conn.fd, &conn.out[conn.out_sent..]) {
                    Ok(n) => {
                        conn.out_sent += n;
                        if let Some(state) = conn.handler.as_mut() {
                            self.handler.sent(state, n);
                        }
                    }
                    Err(e) if sys::is_would_block(&e) => {}
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => {
                        self.close(key); // EPIPE, ECONNRESET: drop what is left
                        continue;
                    }
                }
            }
            self.after_send(key)?;
        }
        dirty.clear();
        if self.dirty.is_empty() {
            self.dirty = dirty;
        }
        self.dirty.append(&mut deferred);
        self.deferred = deferred;
        Ok(())
    }

    /// After a send: frees a drained buffer, resumes a paused connection, closes a finished
    /// one, and asks for EPOLLOUT exactly while output is left.
    fn after_send(&mut self, key: Key) -> io::Result<()> {
        let Some(conn) = self.conns.get_mut(key) else { return Ok(()) };
        let drained = conn.out_sent == conn.out.len();
        if drained {
            self.pool.give(mem::take(&mut conn.out));
            conn.out_sent = 0;
        }
        if conn.try_resume(&self.bounds) {
            conn.enqueue_backlog(key, &mut self.backlog);
        }
        if drained && conn.finishing() {
            self.close(key);
            return Ok(());
        }
        if drained {
            conn.clear(flag::WANT_OUT);
        } else {
            conn.set(flag::WANT_OUT);
        }
        self.sync_interest(key)
    }

    /// Closes at once: the handler is told, unsent output is dropped, the fd is closed (which
    /// also removes it from the epoll set).
    fn close(&mut self, key: Key) {
        if self.conns.get_mut(key).is_none() {
            return;
        }
        let conn = self.conns.remove(key);
        if let Some(state) = conn.handler {
            self.handler.close(state);
        }
        sys::close(conn.fd);
        self.pool.give(conn.out);
    }

    fn begin_shutdown(&mut self) {
        self.mode = Mode::Draining { deadline: self.now + self.config.shutdown_grace };
        for slot in &mut self.listeners {
            slot.socket = None;
        }
        for key in self.conns.keys() {
            let Some(conn) = self.conns.get_mut(key) else { continue };
            conn.set(flag::CLOSE_AFTER_FLUSH);
            conn.input = Vec::new();
            self.mark_dirty(key);
            let _ = self.sync_interest(key);
        }
    }

    fn finish(&mut self) {
        for slot in &mut self.listeners {
            slot.socket = None;
        }
        for key in self.conns.keys() {
            self.close(key);
        }
    }
}
