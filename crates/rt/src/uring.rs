//! The io_uring driver.
//!
//! ```text
//!   turn:  drain CQ ──> handler.receive per completion ──> tick / idle scan
//!            │            (buffer back to the ring at once)        │
//!            └──────────────── one send per dirty connection <─────┘
//!                               then ONE submit_with_args(wait 1, timeout = next tick)
//! ```
//!
//! Waking for send completions alone would cost a second enter per request in a
//! request/response exchange (the sends of a turn usually complete inline, during the very
//! enter that submits them). On kernels with `IORING_FEAT_MIN_TIMEOUT` (6.12+) the wait asks
//! for one completion more than the sends it submits, but settles for any completion after
//! [`SEND_REAP_WAIT_US`] (in case a send is blocked on a full socket buffer). That halves the
//! enters of a ping-pong exchange: one `io_uring_enter` per request.
//!
//! Operations and their ownership (user data = kind | generation | slot index):
//! - ACCEPT: one multishot accept per listener, re-armed when the kernel ends it.
//! - RECV: one multishot receive per open connection, buffers picked by the kernel from the
//!   loop's provided-buffer ring ([`BufRing`]); an idle connection holds no buffer. Re-armed
//!   when it ends (no `IORING_CQE_F_MORE`, e.g. after ENOBUFS).
//! - SEND: at most one per connection, reading `Conn::sending`; that vector is not touched
//!   until the completion arrives. Replies produced meanwhile go to `Conn::out` and are sent
//!   after it, so ordering holds. A partial send continues from the offset.
//! - CANCEL, CLOSE: fire and forget; counted only so the loop knows when the kernel is done.
//!
//! Closing a connection: the handler is told at once; if the kernel still has a receive or a
//! send for it, one cancel (all ops on the fd) is issued and the slot stays a zombie (so its
//! generation cannot be reused and `sending` stays alive) until the last completion; then a
//! CLOSE op releases the fd and the slot is freed.

use std::{
    io, mem,
    net::TcpListener,
    os::fd::AsRawFd,
    time::{Duration, Instant},
};

use io_uring::{
    cqueue, opcode,
    types::{CancelBuilder, Fd, SubmitArgs, Timespec},
    IoUring, Probe,
};

use bufring::BufRing;

use crate::{
    conn::{deliver, flag, Bounds, Conn, Delivered, Key, OutPool, Slots, GEN_MASK},
    sys, Control, Handler, Listener, LoopConfig,
};

mod bufring;

const SQ_ENTRIES: u32 = 1024;
const CQ_ENTRIES: u32 = 8192;
/// The provided-buffer group of receive buffers (one group per ring).
const BUF_GROUP: u16 = 0;
/// How long, after the shutdown grace, the loop waits for the kernel to finish cancelled
/// operations before it gives up and leaks their memory rather than free it under the kernel.
const DRAIN_WAIT: Duration = Duration::from_millis(500);

/// See [`Driver::wait`].
const SEND_REAP_WAIT_US: u32 = 50;

const KIND_ACCEPT: u64 = 1;
const KIND_RECV: u64 = 2;
const KIND_SEND: u64 = 3;
const KIND_CANCEL: u64 = 4;
const KIND_CLOSE: u64 = 5;

fn user_data(kind: u64, key: Key) -> u64 {
    debug_assert!(key.gen <= GEN_MASK);
    (kind << 56) | (u64::from(key.gen) << 32) | u64::from(key.index)
}

fn decode(user_data: u64) -> (u64, Key) {
    let key = Key { index: user_data as u32, gen: (user_data >> 32) as u32 & GEN_MASK };
    (user_data >> 56, key)
}

/// A ring with the setup flags we like (single issuer, task work deferred to our waits),
/// or, on a kernel that refuses them, a plain one.
fn build_ring(entries: u32) -> io::Result<IoUring> {
    let tuned = IoUring::builder()
        .setup_single_issuer()
        .setup_defer_taskrun()
        .setup_taskrun_flag()
        .setup_submit_all()
        .setup_cqsize(entries.max(CQ_ENTRIES))
        .build(entries);
    match tuned {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => IoUring::new(entries),
        other => other,
    }
}

/// Why io_uring_setup failed, in words an operator can act on.
fn describe_setup_error(e: &io::Error) -> String {
    let sysctl = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .map(|s| format!(" (kernel.io_uring_disabled = {})", s.trim()))
        .unwrap_or_default();
    match e.raw_os_error() {
        Some(libc::EPERM) => format!(
            "io_uring_setup refused (EPERM): io_uring is disabled by the sysctl \
             kernel.io_uring_disabled{sysctl} or blocked by a seccomp filter (container runtime)"
        ),
        Some(libc::ENOSYS) => format!(
            "io_uring_setup not available (ENOSYS): kernel built without io_uring, or a seccomp \
             filter hides it{sysctl}"
        ),
        _ => format!("io_uring_setup failed: {e}{sysctl}"),
    }
}

/// See [`crate::probe_uring`].
///
/// The probe ring lives on a helper thread: tearing a ring down leaves work for the thread
/// that used it, which later interrupts that thread's next blocking socket call (a `recv`
/// with SO_RCVTIMEO fails with EINTR; seen on Linux 6.18). The caller's thread stays clean.
pub(crate) fn probe() -> Result<(), String> {
    std::thread::Builder::new()
        .name("rt-uring-probe".into())
        .spawn(probe_here)
        .map_err(|e| format!("cannot start the io_uring probe thread: {e}"))?
        .join()
        .unwrap_or_else(|_| Err("the io_uring probe panicked".into()))
}

fn probe_here() -> Result<(), String> {
    let ring = build_ring(8).map_err(|e| describe_setup_error(&e))?;
    if !ring.params().is_feature_ext_arg() {
        return Err("kernel lacks IORING_FEAT_EXT_ARG (timed waits; Linux 5.11+)".into());
    }
    let mut probe = Probe::new();
    ring.submitter()
        .register_probe(&mut probe)
        .map_err(|e| format!("io_uring opcode probe failed: {e}"))?;
    let needed = [
        (opcode::AcceptMulti::CODE, "accept"),
        (opcode::RecvMulti::CODE, "recv"),
        (opcode::Send::CODE, "send"),
        (opcode::AsyncCancel::CODE, "async cancel"),
        (opcode::Close::CODE, "close"),
        // Multishot receive (6.0) has no opcode of its own; SEND_ZC arrived in the same
        // release, so its presence stands for it.
        (opcode::SendZc::CODE, "send_zc (stands for multishot recv, Linux 6.0+)"),
    ];
    for (code, name) in needed {
        if !probe.is_supported(code) {
            return Err(format!("io_uring lacks the {name} opcode"));
        }
    }
    let mut bufs = BufRing::new(&ring.submitter(), 2, 64)
        .map_err(|e| format!("io_uring buffer ring registration failed: {e}"))?;
    if ring.submitter().unregister_buf_ring(BUF_GROUP).is_ok() {
        bufs.free();
    }
    Ok(())
}

struct ListenSlot {
    socket: Option<TcpListener>,
    tag: u32,
    armed: bool,
    /// The accept ended with an error (EMFILE and kin): re-arm at the next tick, not at once.
    rearm_at_tick: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Running,
    /// Shutdown: no input is read, queued output is sent, connections close as they drain.
    Draining {
        deadline: Instant,
    },
}

struct Driver<'a, H: Handler> {
    ring: IoUring,
    bufs: BufRing,
    conns: Slots<H::Conn>,
    pool: OutPool,
    listeners: Vec<ListenSlot>,
    /// Connections with output to send (or a send to continue, or a flush-then-close).
    dirty: Vec<Key>,
    /// Connections with leftover input the handler should see again next turn.
    backlog: Vec<Key>,
    /// Scratch for [`Driver::flush`]: dirty connections whose send waits a turn.
    deferred: Vec<Key>,
    handler: H,
    config: &'a LoopConfig,
    /// Operations the kernel holds (multishot ones count once, until their last CQE).
    in_flight: usize,
    /// Connections the handler still knows (zombies excluded).
    open: usize,
    now: Instant,
    mode: Mode,
    /// Sends queued this turn; see [`Driver::wait`].
    sends_this_turn: u32,
    /// The kernel has `IORING_FEAT_MIN_TIMEOUT` (6.12+).
    min_timeout: bool,
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
    let ring = build_ring(SQ_ENTRIES)?;
    if !ring.params().is_feature_ext_arg() {
        return Err(io::Error::new(io::ErrorKind::Unsupported, "io_uring lacks EXT_ARG"));
    }
    let min_timeout = ring.params().is_feature_min_timeout();
    let bufs = BufRing::new(&ring.submitter(), config.recv_buffers, config.recv_buffer_bytes)?;
    let listeners = listeners
        .into_iter()
        .map(|l| ListenSlot {
            socket: Some(l.socket),
            tag: l.tag,
            armed: false,
            rearm_at_tick: false,
        })
        .collect();
    let mut driver = Driver {
        ring,
        bufs,
        conns: Slots::new(),
        pool: OutPool::new(),
        listeners,
        dirty: Vec::new(),
        backlog: Vec::new(),
        deferred: Vec::new(),
        handler,
        config,
        in_flight: 0,
        open: 0,
        now: Instant::now(),
        mode: Mode::Running,
        sends_this_turn: 0,
        min_timeout,
        bounds: config.bounds(),
        published_buffer_bytes: 0,
    };
    for index in 0..driver.listeners.len() {
        driver.arm_accept(index)?;
    }
    driver.run_loop()?;
    driver.finish()
}

impl<H: Handler> Driver<'_, H> {
    fn run_loop(&mut self) -> io::Result<()> {
        let mut cqes: Vec<cqueue::Entry> = Vec::with_capacity(CQ_ENTRIES as usize);
        let mut next_tick = Instant::now() + self.config.tick_interval;
        loop {
            self.now = Instant::now();
            cqes.clear();
            cqes.extend(self.ring.completion());
            for cqe in &cqes {
                self.complete(cqe)?;
            }
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
            if matches!(self.mode, Mode::Draining { .. }) && self.open == 0 {
                return Ok(());
            }
            self.wait(next_tick)?;
        }
    }

    /// Runs the handler's tick, the idle scan and delayed accept re-arms.
    fn tick(&mut self) -> io::Result<()> {
        // Before the handler's tick, so that memory freed here can be given back there.
        self.conns.shrink();
        self.pool.trim();
        let held = self.conns.buffer_bytes() + self.pool.bytes();
        self.config.buffers.publish(&mut self.published_buffer_bytes, held);
        self.bounds = self.config.bounds();
        if self.handler.tick() == Control::Shutdown {
            return self.begin_shutdown();
        }

        if let Some(idle) = self.config.idle_timeout {
            for key in self.conns.keys() {
                let Some(conn) = self.conns.get_mut(key) else { continue };
                if conn.is_open() && self.now.duration_since(conn.last_input) > idle {
                    self.close(key)?;
                }
            }
        }
        for index in 0..self.listeners.len() {
            if mem::take(&mut self.listeners[index].rearm_at_tick) {
                self.arm_accept(index)?;
            }
        }
        Ok(())
    }

    /// Waits for completions: spins first if asked, then one submit-and-wait bounded by the
    /// next tick. Also hands the kernel every SQE queued this turn.
    fn wait(&mut self, next_tick: Instant) -> io::Result<()> {
        let mut sends = mem::take(&mut self.sends_this_turn);
        if !self.backlog.is_empty() || !self.ring.completion().is_empty() {
            return self.submit();
        }
        if self.config.busy_poll_us > 0 {
            self.submit()?;
            sends = 0;
            let spin = Duration::from_micros(self.config.busy_poll_us);
            let until = (self.now + spin).min(next_tick);
            loop {
                if !self.ring.completion().is_empty() {
                    return Ok(());
                }
                if Instant::now() >= until {
                    break;
                }
                if self.ring.submission().taskrun() {
                    // Completions are waiting as deferred task work; an enter posts them.
                    self.submit()?;
                } else {
                    std::hint::spin_loop();
                }
            }
        }
        let timeout = next_tick.saturating_duration_since(Instant::now());
        let ts = Timespec::from(timeout);
        let mut args = SubmitArgs::new().timespec(&ts);
        let mut want = 1;
        if self.min_timeout && sends > 0 {
            // Most sends complete inline during this very call; waking for their completions
            // alone would cost a second enter per turn. So wait for one completion beyond
            // them, but after SEND_REAP_WAIT_US settle for any (a send may be blocked).
            want += sends as usize;
            args = args.min_wait_usec(SEND_REAP_WAIT_US);
        }
        match self.ring.submitter().submit_with_args(want, &args) {
            Ok(_) => Ok(()),
            Err(e) if is_transient(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }

    fn submit(&mut self) -> io::Result<()> {
        match self.ring.submit() {
            Ok(_) => Ok(()),
            Err(e) if is_transient(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Queues one SQE, submitting first if the queue is full.
    ///
    /// Every caller passes an entry whose memory (send buffer, buffer ring) stays valid until
    /// its completion; that is the contract of `SubmissionQueue::push`.
    fn push(&mut self, entry: io_uring::squeue::Entry) -> io::Result<()> {
        for _ in 0..64 {
            // SAFETY: the entry refers only to memory that lives until its completion (see the
            // module docs: `sending` stays untouched while SEND_IN_FLIGHT, the buffer ring is
            // leaked rather than freed while operations are in flight).
            if unsafe { self.ring.submission().push(&entry) }.is_ok() {
                self.in_flight += 1;
                return Ok(());
            }
            self.submit()?;
        }
        Err(io::Error::other("io_uring submission queue stays full"))
    }

    fn arm_accept(&mut self, index: usize) -> io::Result<()> {
        let slot = &mut self.listeners[index];
        let Some(socket) = &slot.socket else { return Ok(()) };
        if slot.armed {
            return Ok(());
        }
        slot.armed = true;
        let key = Key { index: index as u32, gen: 0 };
        let entry = opcode::AcceptMulti::new(Fd(socket.as_raw_fd()))
            .flags(libc::SOCK_CLOEXEC)
            .build()
            .user_data(user_data(KIND_ACCEPT, key));
        self.push(entry)
    }

    fn arm_recv(&mut self, key: Key) -> io::Result<()> {
        let conn = self.conns.get_mut(key).expect("arming a live connection");
        debug_assert!(!conn.has(flag::RECV_ARMED));
        conn.set(flag::RECV_ARMED);
        let entry = opcode::RecvMulti::new(Fd(conn.fd), BUF_GROUP)
            .build()
            .user_data(user_data(KIND_RECV, key));
        self.push(entry)
    }

    fn cancel(&mut self, target: u64) -> io::Result<()> {
        let entry = opcode::AsyncCancel::new(target)
            .build()
            .user_data(user_data(KIND_CANCEL, Key { index: 0, gen: 0 }));
        self.push(entry)
    }

    fn mark_dirty(&mut self, key: Key) {
        if let Some(conn) = self.conns.get_mut(key) {
            if !conn.has(flag::DIRTY) {
                conn.set(flag::DIRTY);
                self.dirty.push(key);
            }
        }
    }

    fn complete(&mut self, cqe: &cqueue::Entry) -> io::Result<()> {
        let (kind, key) = decode(cqe.user_data());
        let (res, flags) = (cqe.result(), cqe.flags());
        match kind {
            KIND_ACCEPT => self.on_accept(key.index as usize, res, flags),
            KIND_RECV => self.on_recv(key, res, flags),
            KIND_SEND => self.on_send(key, res),
            KIND_CANCEL | KIND_CLOSE => {
                self.in_flight -= 1;
                Ok(())
            }
            _ => unreachable!("unknown completion kind {kind}"),
        }
    }

    fn on_accept(&mut self, index: usize, res: i32, flags: u32) -> io::Result<()> {
        if !cqueue::more(flags) {
            self.in_flight -= 1;
            let slot = &mut self.listeners[index];
            slot.armed = false;
            if self.mode == Mode::Running && res != -libc::ECANCELED {
                if res < 0 {
                    slot.rearm_at_tick = true;
                } else {
                    self.arm_accept(index)?;
                }
            }
        }
        if res < 0 {
            return Ok(());
        }
        let fd = res;
        if self.mode != Mode::Running {
            sys::close(fd);
            return Ok(());
        }
        let _ = sys::set_nodelay(fd);
        let peer = sys::peer_addr(fd);
        match self.handler.accept(self.listeners[index].tag, peer) {
            Err(line) => {
                sys::refuse(fd, line);
                Ok(())
            }
            Ok(state) => {
                let key = self.conns.insert(Conn::new(fd, state, self.now));
                self.open += 1;
                self.arm_recv(key)
            }
        }
    }

    fn on_recv(&mut self, key: Key, res: i32, flags: u32) -> io::Result<()> {
        let bid = cqueue::buffer_select(flags);
        let Some(conn) = self.conns.get_mut(key) else {
            unreachable!("receive completion for a freed slot");
        };
        if !cqueue::more(flags) {
            conn.clear(flag::RECV_ARMED | flag::RECV_CANCELLING);
            self.in_flight -= 1;
        }
        let mut delivered = None;
        if let Some(bid) = bid {
            if res > 0 && conn.is_open() {
                conn.last_input = self.now;
                // SAFETY: this completion names `bid` and reports `res` bytes; the buffer is
                // recycled only below, after the handler is done with it.
                let data = unsafe { self.bufs.filled(bid, res as usize) };
                delivered =
                    Some(deliver(&mut self.handler, conn, data, &mut self.pool, &self.bounds));
            }
            self.bufs.recycle(bid);
        }
        if let Some(d) = delivered {
            self.after_deliver(key, d)?;
        }
        let Some(conn) = self.conns.get_mut(key) else { return Ok(()) };
        if !conn.is_open() {
            return self.settle(key);
        }
        match res {
            0 => {
                // The peer shut down its side: answer what it sent, then close.
                conn.set(flag::PEER_EOF);
                self.mark_dirty(key);
            }
            r if r > 0 || r == -libc::ENOBUFS || r == -libc::ECANCELED => {}
            _ => return self.close(key), // ECONNRESET and other socket errors
        }
        self.sync_reading(key)
    }

    /// Arms or cancels the connection's receive so that it reads exactly when it wants input
    /// (not paused, not closing, no large yielded backlog, peer not at EOF).
    fn sync_reading(&mut self, key: Key) -> io::Result<()> {
        let Some(conn) = self.conns.get_mut(key) else { return Ok(()) };
        let wants = conn.keeps_reading(&self.bounds) && self.mode == Mode::Running;
        if wants && !conn.has(flag::RECV_ARMED) {
            return self.arm_recv(key);
        }
        if !wants && conn.has(flag::RECV_ARMED) && !conn.has(flag::RECV_CANCELLING) {
            conn.set(flag::RECV_CANCELLING);
            return self.cancel(user_data(KIND_RECV, key));
        }
        Ok(())
    }

    /// Acts on what [`deliver`] reported for an open connection.
    fn after_deliver(&mut self, key: Key, d: Delivered) -> io::Result<()> {
        if d.over_limit {
            return self.close(key);
        }
        let conn = self.conns.get_mut(key).expect("delivered to a live connection");
        if d.backlog {
            conn.enqueue_backlog(key, &mut self.backlog);
        }
        if d.has_output || conn.finishing() {
            self.mark_dirty(key);
        }
        self.sync_reading(key)
    }

    fn offer_backlog(&mut self) -> io::Result<()> {
        let mut backlog = mem::take(&mut self.backlog);
        for &key in &backlog {
            let Some(conn) = self.conns.get_mut(key) else { continue };
            conn.clear(flag::BACKLOG);
            if !conn.is_open() {
                continue;
            }
            let d = deliver(&mut self.handler, conn, &[], &mut self.pool, &self.bounds);
            self.after_deliver(key, d)?;
        }
        backlog.clear();
        if self.backlog.is_empty() {
            self.backlog = backlog;
        }
        Ok(())
    }

    /// A paused connection whose output drained resumes: its buffered input goes to the
    /// backlog and reading starts again.
    fn resume_if_drained(&mut self, key: Key) -> io::Result<()> {
        let Some(conn) = self.conns.get_mut(key) else { return Ok(()) };
        if !conn.has(flag::PAUSED) {
            return Ok(());
        }
        if conn.try_resume(&self.bounds) {
            conn.enqueue_backlog(key, &mut self.backlog);
        }
        if conn.finishing() {
            self.mark_dirty(key);
        }
        self.sync_reading(key)
    }

    fn on_send(&mut self, key: Key, res: i32) -> io::Result<()> {
        self.in_flight -= 1;
        let conn = self.conns.get_mut(key).expect("send completion for a freed slot");
        assert!(conn.has(flag::SEND_IN_FLIGHT));
        conn.clear(flag::SEND_IN_FLIGHT);
        if !conn.is_open() {
            self.pool.give(mem::take(&mut conn.sending));
            conn.sending_sent = 0;
            return self.settle(key);
        }
        if res <= 0 {
            // EPIPE, ECONNRESET, cancelled: the peer will not get the rest.
            return self.close(key);
        }
        let sent = res as usize;
        conn.sending_sent += sent;
        assert!(conn.sending_sent <= conn.sending.len(), "kernel sent more than asked");
        if let Some(state) = conn.handler.as_mut() {
            self.handler.sent(state, sent);
        }
        if conn.sending_sent == conn.sending.len() {
            self.pool.give(mem::take(&mut conn.sending));
            conn.sending_sent = 0;
        }
        if conn.pending_bytes() > 0 || conn.finishing() {
            self.mark_dirty(key);
        }
        self.resume_if_drained(key)
    }

    /// One send per dirty connection: the rest of `sending`, or else all of `out`.
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
            if !conn.is_open() || conn.has(flag::SEND_IN_FLIGHT) {
                continue; // the send's completion marks it dirty again
            }
            if conn.sending_sent == conn.sending.len() && !conn.out.is_empty() {
                self.pool.give(mem::take(&mut conn.sending));
                conn.sending = mem::take(&mut conn.out);
                conn.sending_sent = 0;
            }
            if conn.sending_sent < conn.sending.len() {
                let rest = &conn.sending[conn.sending_sent..];
                let len = rest.len().min(u32::MAX as usize) as u32;
                let entry = opcode::Send::new(Fd(conn.fd), rest.as_ptr(), len)
                    .flags(libc::MSG_NOSIGNAL)
                    .build()
                    .user_data(user_data(KIND_SEND, key));
                conn.set(flag::SEND_IN_FLIGHT);
                self.sends_this_turn += 1;
                self.push(entry)?;
            } else if conn.finishing() {
                self.close(key)?;
            }
        }
        dirty.clear();
        if self.dirty.is_empty() {
            self.dirty = dirty;
        }
        self.dirty.append(&mut deferred);
        self.deferred = deferred;
        Ok(())
    }

    /// Closes a connection: tells the handler, drops unsent output, and cancels what the
    /// kernel still does for it; the slot is freed once the kernel is done ([`Self::settle`]).
    fn close(&mut self, key: Key) -> io::Result<()> {
        let Some(conn) = self.conns.get_mut(key) else { return Ok(()) };
        if let Some(state) = conn.handler.take() {
            self.open -= 1;
            self.handler.close(state);
        }
        conn.input = Vec::new();
        self.pool.give(mem::take(&mut conn.out));
        conn.out_sent = 0;
        if !conn.has(flag::SEND_IN_FLIGHT) {
            self.pool.give(mem::take(&mut conn.sending));
            conn.sending_sent = 0;
        }
        if conn.has(flag::RECV_ARMED | flag::SEND_IN_FLIGHT) {
            if !conn.has(flag::CANCELLED) {
                conn.set(flag::CANCELLED);
                let builder = CancelBuilder::fd(Fd(conn.fd)).all();
                let entry = opcode::AsyncCancel2::new(builder)
                    .build()
                    .user_data(user_data(KIND_CANCEL, key));
                self.push(entry)?;
            }
            return Ok(());
        }
        self.settle(key)
    }

    /// Frees a closed connection's slot once the kernel has no operation left on it.
    fn settle(&mut self, key: Key) -> io::Result<()> {
        let Some(conn) = self.conns.get_mut(key) else { return Ok(()) };
        if conn.is_open() || conn.has(flag::RECV_ARMED | flag::SEND_IN_FLIGHT) {
            return Ok(());
        }
        let conn = self.conns.remove(key);
        self.pool.give(conn.sending);
        let entry = opcode::Close::new(Fd(conn.fd)).build().user_data(user_data(KIND_CLOSE, key));
        self.push(entry)
    }

    /// Stops accepting and reading; every connection flushes what it has, then closes.
    fn begin_shutdown(&mut self) -> io::Result<()> {
        self.mode = Mode::Draining { deadline: self.now + self.config.shutdown_grace };
        for index in 0..self.listeners.len() {
            let key = Key { index: index as u32, gen: 0 };
            if self.listeners[index].armed {
                self.cancel(user_data(KIND_ACCEPT, key))?;
            }
            // The accept op holds its own reference until the cancel completes, so closing
            // our descriptor now is safe.
            self.listeners[index].socket = None;
        }
        for key in self.conns.keys() {
            let Some(conn) = self.conns.get_mut(key) else { continue };
            if !conn.is_open() {
                continue;
            }
            conn.set(flag::CLOSE_AFTER_FLUSH);
            conn.input = Vec::new();
            self.sync_reading(key)?;
            self.mark_dirty(key);
        }
        Ok(())
    }

    /// Closes what is still open and waits (bounded) for the kernel to finish.
    fn finish(&mut self) -> io::Result<()> {
        if self.mode == Mode::Running {
            self.begin_shutdown()?;
        }
        for key in self.conns.keys() {
            self.close(key)?;
        }
        let deadline = Instant::now() + DRAIN_WAIT;
        let mut cqes: Vec<cqueue::Entry> = Vec::with_capacity(CQ_ENTRIES as usize);
        while self.in_flight > 0 && Instant::now() < deadline {
            let ts = Timespec::from(Duration::from_millis(10));
            let args = SubmitArgs::new().timespec(&ts);
            match self.ring.submitter().submit_with_args(1, &args) {
                Ok(_) => {}
                Err(e) if is_transient(&e) => {}
                Err(e) => return Err(e),
            }
            self.now = Instant::now();
            cqes.clear();
            cqes.extend(self.ring.completion());
            for cqe in &cqes {
                self.complete(cqe)?;
            }
        }
        Ok(())
    }
}

impl<H: Handler> Drop for Driver<'_, H> {
    fn drop(&mut self) {
        if self.in_flight == 0 && self.ring.submitter().unregister_buf_ring(BUF_GROUP).is_ok() {
            self.bufs.free();
        } else {
            // The kernel may still read `sending` vectors or write receive buffers: leak them
            // rather than free memory under it (the ring's own teardown finishes the ops).
            mem::forget(mem::replace(&mut self.conns, Slots::new()));
        }
    }
}

/// Errors of io_uring_enter that only mean "look again": timeout, signal, CQ overflow.
fn is_transient(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR | libc::EBUSY | libc::EAGAIN))
}
