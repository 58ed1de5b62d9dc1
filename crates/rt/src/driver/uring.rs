//! The io_uring driver: completions are the loop's events.
//!
//! ```text
//!   turn:  CQEs taken at the last wait ──> one Event each (receive: the buffer goes back to
//!          the ring once the handler saw it) ──> loop: backlog, tick, one send per dirty
//!          connection (SQEs queued) ──> ONE submit_with_args(wait, timeout = next tick)
//! ```
//!
//! Sends complete inline: a send is issued with `MSG_DONTWAIT`, so the kernel runs it during
//! the very enter that submits it and posts its completion (bytes, or EAGAIN) before that
//! enter starts to wait. The wait asks for one completion beyond the turn's sends, so it
//! sleeps until the next real event: one `io_uring_enter` per turn, and no wake-up for send
//! completions alone. A send that found the socket full (EAGAIN, or a short write) leaves
//! the rest to a send without `MSG_DONTWAIT`, which waits in the kernel for room; its
//! completion is a real event and is not counted. Nor is the send of a connection that
//! waits on it (paused by its output, or closing): the loop resumes or closes it on that
//! completion, which must end the wait (counted, a get of a value over the pause threshold
//! waited for the tick, 100 ms).
//!
//! Operations and their ownership (user data = kind | generation | slot index):
//! - ACCEPT: one multishot accept per listener, re-armed when the kernel ends it.
//! - RECV: one multishot receive per open connection, buffers picked by the kernel from the
//!   loop's provided-buffer ring ([`BufRing`]); an idle connection holds no buffer. Re-armed
//!   when it ends (no `IORING_CQE_F_MORE`). One that ended for want of a buffer (ENOBUFS:
//!   more connections had input than the ring has buffers) waits in `starved` and is
//!   re-armed at the end of a turn, as many as there are free buffers: re-arming it at once
//!   would fail again in the same enter, and with thousands of connections that circle cost
//!   most of the CPU (10,000 connections: 21k req/s per server CPU-second, epoll 89k).
//! - SEND: at most one per connection, reading `Conn::sending`; that vector is not touched
//!   until the completion arrives. Replies produced meanwhile go to `Conn::out` and are sent
//!   after it, so ordering holds. A partial send continues from the offset.
//! - CANCEL, CLOSE: fire and forget; counted only so the loop knows when the kernel is done.
//! - NOTIFY: one multishot poll (POLLIN) on the loop's [`Notifier`] eventfd, if it has one;
//!   each completion drains the counter and becomes [`Event::Notified`]. Re-armed when the
//!   kernel ends it, cancelled at shutdown like the accepts. A poll, not a read: it owns no
//!   buffer that would have to outlive a cancel that never finished, and whether a read on
//!   a non-blocking eventfd waits or fails with EAGAIN has varied between kernels (6.18
//!   waits). The driver's clone of the notifier keeps the eventfd open.
//!
//! Closing a connection: the handler is told at once; if the kernel still has a receive or a
//! send for it, one cancel (all ops on the fd) is issued and the slot stays a zombie (so its
//! generation cannot be reused and `sending` stays alive) until the last completion; then a
//! CLOSE op releases the fd and the slot is freed.

use std::{
    collections::VecDeque,
    io, mem,
    net::SocketAddr,
    os::fd::{AsRawFd, RawFd},
    time::Duration,
};

use io_uring::{
    cqueue, opcode,
    types::{CancelBuilder, Fd, SubmitArgs, Timespec},
    IoUring,
};

use bufring::BufRing;

use super::{Driver, Event, Sending};
use crate::{
    buf::OutPool,
    clock::Mono,
    conn::{flag, Bounds, Conn, Key, Slots, GEN_MASK},
    sys, ListenSocket, Listener, LoopConfig, Notifier,
};

mod bufring;
mod probe;

pub(crate) use probe::probe;

const SQ_ENTRIES: u32 = 1024;
const CQ_ENTRIES: u32 = 8192;
/// The provided-buffer group of receive buffers (one group per ring).
const BUF_GROUP: u16 = 0;
/// How long one [`Driver::wait_for_ops`] waits.
const OPS_WAIT: Duration = Duration::from_millis(10);

const KIND_ACCEPT: u64 = 1;
const KIND_RECV: u64 = 2;
const KIND_SEND: u64 = 3;
const KIND_CANCEL: u64 = 4;
const KIND_CLOSE: u64 = 5;
const KIND_NOTIFY: u64 = 6;
const KIND_ERRPOLL: u64 = 7;

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

struct ListenSlot {
    socket: Option<ListenSocket>,
    tag: u32,
    armed: bool,
    /// The accept ended with an error (EMFILE and kin): re-arm at the next tick, not at once.
    rearm_at_tick: bool,
}

/// A received buffer: its id in the ring and the bytes the kernel wrote.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecvBuf {
    bid: u16,
    len: u32,
}

pub(crate) struct Uring {
    ring: IoUring,
    bufs: BufRing,
    listeners: Vec<ListenSlot>,
    /// False once shutdown began: an accepted descriptor is closed at once.
    accepting: bool,
    /// Completions of this turn, taken from the queue at the end of [`Driver::wait`], and
    /// the index of the next one to hand out.
    cqes: Vec<cqueue::Entry>,
    next_cqe: usize,
    /// Operations the kernel holds (multishot ones count once, until their last CQE).
    in_flight: usize,
    /// Sends queued this turn that complete inline (`MSG_DONTWAIT`); see [`Uring::enter`].
    sends_this_turn: u32,
    busy_poll: Duration,
    /// Receives are armed one buffer at a time (the loop's input budget is over; see
    /// `arm_recv`), as of the last `next_event`.
    one_shot: bool,
    /// Connections whose receive ended with ENOBUFS, to re-arm as buffers come back (see
    /// the module docs). An entry is stale when its connection was closed or re-armed since.
    starved: VecDeque<Key>,
    /// Receive buffers handed to the loop and not yet released.
    bufs_held: u32,
    /// The loop's notifier, watched by a multishot poll until shutdown.
    notifier: Option<Notifier>,
    notify_armed: bool,
}

impl Driver for Uring {
    type Input = RecvBuf;

    fn new(config: &LoopConfig, listeners: Vec<Listener>) -> io::Result<Self> {
        let ring = build_ring(SQ_ENTRIES)?;
        if !ring.params().is_feature_ext_arg() {
            return Err(io::Error::new(io::ErrorKind::Unsupported, "io_uring lacks EXT_ARG"));
        }
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
        let mut driver = Uring {
            ring,
            bufs,
            listeners,
            accepting: true,
            cqes: Vec::with_capacity(CQ_ENTRIES as usize),
            next_cqe: 0,
            in_flight: 0,
            sends_this_turn: 0,
            busy_poll: Duration::from_micros(config.busy_poll_us),
            one_shot: false,
            starved: VecDeque::new(),
            bufs_held: 0,
            notifier: config.notifier.clone(),
            notify_armed: false,
        };
        for index in 0..driver.listeners.len() {
            driver.arm_accept(index)?;
        }
        driver.arm_notify()?;
        Ok(driver)
    }

    #[inline]
    fn next_event<C>(
        &mut self,
        conns: &mut Slots<C>,
        bounds: &Bounds,
    ) -> io::Result<Option<Event<RecvBuf>>> {
        self.one_shot = bounds.read_bytes != usize::MAX;
        while let Some(cqe) = self.cqes.get(self.next_cqe) {
            self.next_cqe += 1;
            let (kind, key) = decode(cqe.user_data());
            let (res, flags) = (cqe.result(), cqe.flags());
            let event = match kind {
                KIND_ACCEPT => self.on_accept(key.index as usize, res, flags)?,
                KIND_RECV => self.on_recv(key, res, flags, conns),
                KIND_SEND => self.on_send(key, res, conns),
                KIND_NOTIFY => self.on_notify(res, flags)?,
                KIND_ERRPOLL => self.on_errpoll(key, conns),
                KIND_CANCEL | KIND_CLOSE => {
                    self.in_flight -= 1;
                    None
                }
                _ => unreachable!("unknown completion kind {kind}"),
            };
            if event.is_some() {
                return Ok(event);
            }
        }
        self.rearm_starved(conns, bounds)?;
        Ok(None)
    }

    fn peer(&mut self, fd: RawFd) -> Option<SocketAddr> {
        sys::peer_addr(fd)
    }

    #[inline]
    fn input(&self, input: &RecvBuf) -> &[u8] {
        // SAFETY: a completion named `bid` and reported `len` bytes (`on_recv`); the buffer
        // goes back to the kernel only in `release`, after the loop is done with it.
        unsafe { self.bufs.filled(input.bid, input.len as usize) }
    }

    #[inline]
    fn release(&mut self, input: RecvBuf) {
        self.bufs_held -= 1;
        self.bufs.recycle(input.bid);
    }

    fn watch<C>(&mut self, key: Key, conn: &mut Conn<C>) -> io::Result<bool> {
        self.arm_recv(key, conn)?;
        Ok(true)
    }

    #[inline]
    fn set_reading<C>(&mut self, key: Key, conn: &mut Conn<C>, want: bool) -> io::Result<()> {
        if want && !conn.has(flag::RECV_ARMED) {
            return self.arm_recv(key, conn);
        }
        if !want && conn.has(flag::RECV_ARMED) && !conn.has(flag::RECV_CANCELLING) {
            conn.set(flag::RECV_CANCELLING);
            return self.cancel_op(user_data(KIND_RECV, key));
        }
        Ok(())
    }

    /// The rest of `sending`, or else all of `out` (which then becomes `sending`).
    #[inline]
    fn send<C>(&mut self, key: Key, conn: &mut Conn<C>, pool: &mut OutPool) -> io::Result<Sending> {
        if conn.has(flag::SEND_IN_FLIGHT) {
            return Ok(Sending::Blocked); // its completion marks the connection dirty again
        }
        if conn.sending.is_drained() && !conn.out.is_empty() {
            // Usually nothing to give: the last completion moved the drained buffer to `out`
            // (`Conn::advance_output`), and it comes back here full.
            if conn.sending.capacity() != 0 {
                pool.give(conn.sending.take_vec());
            }
            conn.sending = mem::take(&mut conn.out);
        }
        if !conn.sending.has_unsent() {
            return Ok(Sending::Wrote(0));
        }
        let rest = conn.sending.unsent();
        let len = rest.len().min(u32::MAX as usize) as u32;
        // See the module docs: a send that may wait for room (`WANT_OUT`) is not counted,
        // nor one whose completion the loop acts on at once: a paused connection resumes on
        // it (a get of a value larger than the pause threshold finishes then) and a closing
        // one closes. Counted, it would not end the wait, and they would wait for the tick.
        let mut msg_flags = libc::MSG_NOSIGNAL;
        if !conn.has(flag::WANT_OUT) {
            msg_flags |= libc::MSG_DONTWAIT;
            if !conn.has(flag::PAUSED | flag::CLOSE_AFTER_FLUSH | flag::PEER_EOF) {
                self.sends_this_turn += 1;
            }
        }
        let entry = opcode::Send::new(Fd(conn.fd), rest.as_ptr(), len)
            .flags(msg_flags)
            .build()
            .user_data(user_data(KIND_SEND, key));
        conn.set(flag::SEND_IN_FLIGHT);
        self.push(entry)?;
        Ok(Sending::InFlight)
    }

    #[inline]
    fn output_left<C>(&mut self, _conn: &mut Conn<C>, left: bool) -> bool {
        left
    }

    fn cancel<C>(&mut self, key: Key, conn: &mut Conn<C>) -> io::Result<()> {
        if conn.has(flag::CANCELLED) {
            return Ok(());
        }
        conn.set(flag::CANCELLED);
        let builder = CancelBuilder::fd(Fd(conn.fd)).all();
        let entry =
            opcode::AsyncCancel2::new(builder).build().user_data(user_data(KIND_CANCEL, key));
        self.push(entry)
    }

    fn close_fd(&mut self, key: Key, fd: RawFd) -> io::Result<()> {
        self.push(opcode::Close::new(Fd(fd)).build().user_data(user_data(KIND_CLOSE, key)))
    }

    /// One-shot poll for POLLERR (the error queue has notifications), re-armed by the loop
    /// while sends stay held; cancelled with the connection's other operations.
    fn watch_errors<C>(&mut self, key: Key, conn: &mut Conn<C>) -> io::Result<()> {
        if conn.handler.is_none() || conn.has(flag::CANCELLED) {
            return Ok(());
        }
        let Some(zc) = conn.zc.as_mut().filter(|zc| !zc.polling) else { return Ok(()) };
        zc.polling = true;
        let entry = opcode::PollAdd::new(Fd(conn.fd), libc::POLLERR as u32)
            .build()
            .user_data(user_data(KIND_ERRPOLL, key));
        self.push(entry)
    }

    /// Nothing to do: no operation is left on a freed slot's descriptor.
    fn forget_fd(&mut self, _fd: RawFd) -> io::Result<()> {
        Ok(())
    }

    fn stop_accepting(&mut self) -> io::Result<()> {
        self.accepting = false;
        for index in 0..self.listeners.len() {
            let key = Key { index: index as u32, gen: 0 };
            if self.listeners[index].armed {
                self.cancel_op(user_data(KIND_ACCEPT, key))?;
            }
            // The accept op holds its own reference until the cancel completes, so closing
            // our descriptor now is safe.
            self.listeners[index].socket = None;
        }
        // Its last completion (ECANCELED) does not re-arm while `accepting` is false.
        if self.notify_armed {
            self.cancel_op(user_data(KIND_NOTIFY, Key { index: 0, gen: 0 }))?;
        }
        Ok(())
    }

    fn tick(&mut self) -> io::Result<()> {
        for index in 0..self.listeners.len() {
            if mem::take(&mut self.listeners[index].rearm_at_tick) {
                self.arm_accept(index)?;
            }
        }
        if self.accepting {
            self.arm_notify()?; // after a failed poll; nothing to do while it is armed
        }
        Ok(())
    }

    /// The receive armed now is likely multishot: the kernel would go on filling buffer
    /// after buffer for this large request (up to the ring's worth in one turn) before the
    /// loop's input budget could hold it, and a tail past 64 KiB is no longer held (measured
    /// at -m 64 with 200 connections: 6-7 MiB of tails, peak RSS 76-78 MiB; with this,
    /// 4-6 MiB and 75-76 MiB). It is cancelled; `arm_recv` re-arms one buffer at a time.
    #[cold]
    fn large_input<C>(&mut self, key: Key, conn: &mut Conn<C>) -> io::Result<()> {
        if !conn.has(flag::RECV_ARMED) || conn.has(flag::RECV_CANCELLING) {
            return Ok(());
        }
        conn.set(flag::RECV_CANCELLING);
        self.cancel_op(user_data(KIND_RECV, key))
    }

    fn wait(&mut self, now: Mono, next_tick: Mono, work_waiting: bool) -> io::Result<()> {
        self.enter(now, next_tick, work_waiting)?;
        self.collect();
        Ok(())
    }

    fn ops_in_flight(&self) -> bool {
        self.in_flight > 0
    }

    fn wait_for_ops(&mut self) -> io::Result<()> {
        let ts = Timespec::from(OPS_WAIT);
        let args = SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(1, &args) {
            Ok(_) => {}
            Err(e) if is_transient(&e) => {}
            Err(e) => return Err(e),
        }
        self.collect();
        Ok(())
    }

    fn release_memory(&mut self) -> bool {
        if self.in_flight == 0 && self.ring.submitter().unregister_buf_ring(BUF_GROUP).is_ok() {
            self.bufs.free();
            return true;
        }
        // The kernel may still read `sending` vectors or write receive buffers: both are
        // leaked rather than freed under it (the ring's own teardown finishes the ops).
        false
    }
}

impl Uring {
    /// Takes the completions that are ready: the next turn's events.
    fn collect(&mut self) {
        self.cqes.clear();
        self.cqes.extend(self.ring.completion());
        self.next_cqe = 0;
    }

    /// Spins first if asked, then one submit-and-wait bounded by the next tick. Also hands
    /// the kernel every SQE queued this turn.
    ///
    /// The turn's `MSG_DONTWAIT` sends post their completions during this enter, before it
    /// waits (see the module docs), so it waits for one completion beyond them: the next real
    /// event, or the tick.
    fn enter(&mut self, now: Mono, next_tick: Mono, work_waiting: bool) -> io::Result<()> {
        let mut sends = mem::take(&mut self.sends_this_turn);
        if work_waiting || !self.ring.completion().is_empty() {
            return self.submit();
        }
        if !self.busy_poll.is_zero() {
            self.submit()?;
            sends = 0;
            if self.spin((now + self.busy_poll).min(next_tick))? {
                return Ok(());
            }
        }
        // `now` was read at the turn's end; after a spin, the clock is read again.
        let now = if self.busy_poll.is_zero() { now } else { Mono::now() };
        let timeout = next_tick.nanos_since(now);
        let ts =
            Timespec::new().sec(timeout / 1_000_000_000).nsec((timeout % 1_000_000_000) as u32);
        let args = SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(1 + sends as usize, &args) {
            Ok(_) => Ok(()),
            Err(e) if is_transient(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Busy-polls the completion queue until `until`; true when a completion arrived.
    fn spin(&mut self, until: Mono) -> io::Result<bool> {
        loop {
            if !self.ring.completion().is_empty() {
                return Ok(true);
            }
            if Mono::now() >= until {
                return Ok(false);
            }
            if self.ring.submission().taskrun() {
                // Completions are waiting as deferred task work; an enter posts them.
                self.submit()?;
            } else {
                std::hint::spin_loop();
            }
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
            // module docs: `sending` stays untouched while SEND_IN_FLIGHT, the buffer ring and
            // the connections are leaked rather than freed while operations are in flight).
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

    /// Arms the multishot poll on the notifier's eventfd, if there is one and it is not armed.
    fn arm_notify(&mut self) -> io::Result<()> {
        let Some(notifier) = &self.notifier else { return Ok(()) };
        if self.notify_armed {
            return Ok(());
        }
        self.notify_armed = true;
        let entry = opcode::PollAdd::new(Fd(notifier.fd()), libc::POLLIN as u32)
            .multi(true)
            .build()
            .user_data(user_data(KIND_NOTIFY, Key { index: 0, gen: 0 }));
        self.push(entry)
    }

    /// A completion of the notifier's poll: drains the counter (before the loop takes the
    /// wake, the order `notify.rs` relies on). A poll the kernel ended is re-armed at once;
    /// one that failed, at the next tick (no tight circle); none after shutdown began.
    fn on_notify(&mut self, res: i32, flags: u32) -> io::Result<Option<Event<RecvBuf>>> {
        if !cqueue::more(flags) {
            self.in_flight -= 1;
            self.notify_armed = false;
            if res >= 0 && self.accepting {
                self.arm_notify()?;
            }
        }
        if res < 0 || !self.accepting {
            return Ok(None);
        }
        self.notifier.as_ref().expect("a notify completion without a notifier").drain();
        Ok(Some(Event::Notified))
    }

    fn arm_recv<C>(&mut self, key: Key, conn: &mut Conn<C>) -> io::Result<()> {
        debug_assert!(!conn.has(flag::RECV_ARMED));
        conn.set(flag::RECV_ARMED);
        // A multishot receive drains the socket into as many buffers as it gets before the
        // loop sees any of them, so a connection about to be held by the input budget could
        // bring in the ring's worth (measured: 15 MiB of tails over 110 held connections).
        // While the budget is over, while a request is partly received, and on a connection
        // that sent large requests (`LARGE_INPUT`), one buffer per receive.
        let entry = if self.one_shot || !conn.input.is_empty() || conn.has(flag::LARGE_INPUT) {
            opcode::Recv::new(Fd(conn.fd), std::ptr::null_mut(), self.bufs.buf_bytes())
                .buf_group(BUF_GROUP)
                .build()
                .flags(io_uring::squeue::Flags::BUFFER_SELECT)
        } else {
            opcode::RecvMulti::new(Fd(conn.fd), BUF_GROUP).build()
        };
        self.push(entry.user_data(user_data(KIND_RECV, key)))
    }

    /// Re-arms starved receives (see the module docs), at most one per free buffer, those
    /// whose connection still wants input and has no receive armed.
    fn rearm_starved<C>(&mut self, conns: &mut Slots<C>, bounds: &Bounds) -> io::Result<()> {
        let mut free = u32::from(self.bufs.count()).saturating_sub(self.bufs_held);
        while free > 0 {
            let Some(key) = self.starved.pop_front() else { break };
            let Some(conn) = conns.get_mut(key) else { continue };
            if conn.has(flag::RECV_ARMED) || !conn.keeps_reading(bounds) {
                continue;
            }
            self.arm_recv(key, conn)?;
            free -= 1;
        }
        Ok(())
    }

    fn cancel_op(&mut self, target: u64) -> io::Result<()> {
        let entry = opcode::AsyncCancel::new(target)
            .build()
            .user_data(user_data(KIND_CANCEL, Key { index: 0, gen: 0 }));
        self.push(entry)
    }

    fn on_accept(
        &mut self,
        index: usize,
        res: i32,
        flags: u32,
    ) -> io::Result<Option<Event<RecvBuf>>> {
        if !cqueue::more(flags) {
            self.in_flight -= 1;
            let slot = &mut self.listeners[index];
            slot.armed = false;
            if self.accepting && res != -libc::ECANCELED {
                if res < 0 {
                    slot.rearm_at_tick = true;
                } else {
                    self.arm_accept(index)?;
                }
            }
        }
        if res < 0 {
            return Ok(None);
        }
        let fd = res;
        if !self.accepting {
            sys::close(fd);
            return Ok(None);
        }
        Ok(Some(Event::Accepted { tag: self.listeners[index].tag, fd }))
    }

    #[inline]
    fn on_recv<C>(
        &mut self,
        key: Key,
        res: i32,
        flags: u32,
        conns: &mut Slots<C>,
    ) -> Option<Event<RecvBuf>> {
        let bid = cqueue::buffer_select(flags);
        let Some(conn) = conns.get_mut(key) else {
            unreachable!("receive completion for a freed slot");
        };
        if !cqueue::more(flags) {
            conn.clear(flag::RECV_ARMED | flag::RECV_CANCELLING);
            self.in_flight -= 1;
        }
        if let (Some(bid), true) = (bid, res > 0 && conn.is_open()) {
            self.bufs_held += 1;
            return Some(Event::Received { key, input: RecvBuf { bid, len: res as u32 } });
        }
        if let Some(bid) = bid {
            self.bufs.recycle(bid);
        }
        if !conn.is_open() {
            return Some(Event::Settled(key));
        }
        if res == -libc::ENOBUFS && !conn.has(flag::RECV_ARMED) {
            self.starved.push_back(key);
            return None;
        }
        Some(match res {
            0 => Event::Eof(key),
            r if r > 0 || r == -libc::ENOBUFS || r == -libc::ECANCELED => Event::RecvStopped(key),
            _ => Event::Failed(key), // ECONNRESET and other socket errors
        })
    }

    /// The error-queue poll ended: notifications (reaped here), a socket error, or a cancel.
    #[cold]
    fn on_errpoll<C>(&mut self, key: Key, conns: &mut Slots<C>) -> Option<Event<RecvBuf>> {
        self.in_flight -= 1;
        let conn = conns.get_mut(key).expect("error poll completion for a freed slot");
        let open = conn.is_open();
        let zc = conn.zc.as_mut().expect("an error poll without zero-copy state");
        zc.polling = false;
        if !open {
            return Some(Event::Settled(key));
        }
        Some(match zc.notified(conn.fd) {
            true => Event::ZeroCopyDone(key),
            false => Event::Failed(key),
        })
    }

    #[inline]
    fn on_send<C>(&mut self, key: Key, res: i32, conns: &mut Slots<C>) -> Option<Event<RecvBuf>> {
        self.in_flight -= 1;
        let conn = conns.get_mut(key).expect("send completion for a freed slot");
        assert!(conn.has(flag::SEND_IN_FLIGHT));
        conn.clear(flag::SEND_IN_FLIGHT);
        if !conn.is_open() {
            return Some(Event::Settled(key));
        }
        // The socket is full (nothing or only part went out): the rest waits for room.
        let short = res == -libc::EAGAIN || (res > 0 && (res as usize) < conn.sending.unsent_len());
        if short {
            conn.set(flag::WANT_OUT);
        } else {
            conn.clear(flag::WANT_OUT);
        }
        Some(match res {
            r if r > 0 => Event::Sent { key, bytes: r as usize },
            r if r == -libc::EAGAIN => Event::Sent { key, bytes: 0 },
            // EPIPE, ECONNRESET, cancelled: the peer will not get the rest.
            _ => Event::Failed(key),
        })
    }
}

/// Errors of io_uring_enter that only mean "look again": timeout, signal, CQ overflow.
fn is_transient(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR | libc::EBUSY | libc::EAGAIN))
}
