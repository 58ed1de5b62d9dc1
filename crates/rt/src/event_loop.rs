//! The event loop, written once for both drivers: connections, delivery to the handler,
//! backpressure, fairness, half-close, ticks, the buffer budget and shutdown.
//!
//! ```text
//!   turn:  events of the last wait, one at a time ──> accept / deliver to the handler /
//!          account sends / notified: stream ──> offer the backlog (yielded input) ──>
//!          tick (every tick_interval; streams too) ──> flush: one send per dirty
//!          connection ──> handler.turn_end ──> driver.wait
//! ```
//!
//! The [`Driver`] owns the kernel side and reports what happened as [`Event`]s; the loop
//! owns everything else. Per connection the loop keeps the [`Conn`] (input tail, output,
//! flags), lists it in `dirty` when it has output (every reply of one batch leaves in one
//! send), in `backlog` when the handler yielded with input left, and frees its slot once
//! the driver holds nothing for it (io_uring's cancelled operations finish first).
//!
//! TLS sits between the driver's bytes and the handler, here and not in a driver: a
//! connection's [`crate::Session`] (`Conn::session`) decrypts in [`EventLoop::on_received`]
//! before [`deliver`] hands the plaintext to the handler, and `deliver` (and
//! [`EventLoop::stream_all`]) seal each handler call's replies into records at once, so
//! `Conn::out` holds ciphertext only and [`Driver::send`] sends it as it sends any output.
//! Handshake records mark the connection dirty like replies do. The drivers and the
//! handler stay as they are; both protocols and both drivers get it.

use std::{
    io, mem,
    os::fd::RawFd,
    time::{Duration, Instant},
};

use crate::{
    buf::{DirtyList, OutPool},
    clock::Mono,
    conn::{deliver, flag, Bounds, Conn, Delivered, Key, Slots},
    driver::{Driver, Event, Sending},
    input_budget::{InputBudget, INPUT_SOLO_BYTES, INPUT_TIGHT_READ_BYTES},
    session::Opened,
    streaming::Streaming,
    sys,
    zerocopy::ZeroCopies,
    After, Control, Handler, Listener, LoopConfig,
};

mod reap;

/// How long, after the shutdown grace, the loop waits for the kernel to finish cancelled
/// operations before it gives up and leaks their memory rather than free it under the kernel.
const DRAIN_WAIT: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Running,
    /// Shutdown: no input is read, queued output is sent, connections close as they drain.
    Draining {
        deadline: Mono,
    },
}

/// One loop: a driver, the connections, and the handler. See the module docs.
pub(crate) struct EventLoop<'a, D: Driver, H: Handler> {
    /// First, so that it drops (closing the ring) before the connections it may still use.
    driver: D,
    conns: Slots<H::Conn>,
    pool: OutPool,
    /// Connections with output to send (or a send to continue, or a flush-then-close).
    dirty: DirtyList<Key>,
    /// Connections with leftover input the handler should see again next turn.
    backlog: Vec<Key>,
    /// Connections given a spare `out` (`Conn::advance_output`), given back at the next
    /// flush if unused: io_uring's in the turn their send completed, epoll's at the flush
    /// after the one that drained them (held across one wait).
    spares: Vec<Key>,
    /// Connections that stream ([`crate::After::Stream`]), offered output at each tick and
    /// each notifier wake.
    streaming: Streaming,
    handler: H,
    config: &'a LoopConfig,
    /// Connections the handler still knows (zombies excluded).
    open: usize,
    /// The clock as read when this turn's wait returned.
    now: Mono,
    mode: Mode,
    /// Backpressure and input bounds in force (tightened while the buffer budget is over).
    bounds: Bounds,
    /// This loop's share of the process-wide buffer budget, as last published.
    published_buffer_bytes: usize,
    /// Partly received requests: which connections read while they are over the budget.
    inputs: InputBudget,
    /// This loop's tails (count, bytes) as last published to the buffer budget.
    published_tails: (usize, usize),
    /// TLS: plaintext decrypted from one receive, handed to [`deliver`] and cleared (one
    /// buffer per loop, so a connection holds no plaintext between turns but its tail).
    plain: Vec<u8>,
    /// Zero-copy sends the kernel has not reported done (see `zerocopy.rs`).
    zerocopy: ZeroCopies,
}

/// See [`crate::run`].
pub(crate) fn run<D: Driver, H: Handler>(
    config: &LoopConfig,
    listeners: Vec<Listener>,
    handler: H,
) -> io::Result<()> {
    let mut event_loop = EventLoop {
        driver: D::new(config, listeners)?,
        conns: Slots::new(),
        pool: OutPool::new(),
        dirty: DirtyList::new(),
        backlog: Vec::new(),
        spares: Vec::new(),
        streaming: Streaming::new(),
        handler,
        config,
        open: 0,
        now: Mono::now(),
        mode: Mode::Running,
        bounds: config.bounds(),
        published_buffer_bytes: 0,
        inputs: InputBudget::new(config.input_budget_bytes, config.input_tails_max),
        published_tails: (0, 0),
        plain: Vec::new(),
        zerocopy: ZeroCopies::default(),
    };
    match event_loop.turns() {
        Ok(()) => event_loop.finish(),
        Err(e) => {
            event_loop.abandon();
            Err(e)
        }
    }
}

impl<D: Driver, H: Handler> EventLoop<'_, D, H> {
    fn turns(&mut self) -> io::Result<()> {
        let mut next_tick = Mono::now() + self.config.tick_interval;
        loop {
            self.now = Mono::now();
            self.handle_events()?;
            self.offer_backlog()?;
            // A wake the loop's own handler asked for this turn (`Notifier::notify_local`,
            // no system call), or a remote one not yet seen: stream before the flush.
            self.on_notified()?;
            if self.now >= next_tick {
                next_tick = self.now + self.config.tick_interval;
                match self.mode {
                    Mode::Running => {
                        self.tick()?;
                        self.reap_zerocopy(true)?;
                    }
                    Mode::Draining { deadline } if self.now >= deadline => return Ok(()),
                    Mode::Draining { .. } => {}
                }
            }
            self.flush()?;
            if !self.zerocopy.is_empty() {
                self.reap_zerocopy(false)?;
            }
            self.handler.turn_end();
            if matches!(self.mode, Mode::Draining { .. }) && self.open == 0 {
                return Ok(());
            }
            // One clock read at the turn's end, spread over the turn's requests: the busy
            // time, and the driver's wait timeout (the rest of the tick) from the same read.
            let end = Mono::now();
            self.config.stats.note_turn(end.nanos_since(self.now));
            self.driver.wait(end, next_tick, !self.backlog.is_empty())?;
        }
    }

    /// Handles every event the last wait collected.
    fn handle_events(&mut self) -> io::Result<()> {
        while let Some(event) = self.driver.next_event(&mut self.conns, &self.bounds)? {
            match event {
                Event::Accepted { tag, fd } => self.on_accepted(tag, fd)?,
                Event::Received { key, input } => self.on_received(key, input)?,
                Event::Eof(key) => self.on_eof(key)?,
                Event::RecvStopped(key) => self.sync_reading(key)?,
                Event::InputWaiting(key) => {
                    if let Some(conn) = self.conns.get_mut(key) {
                        conn.set(flag::INPUT_WAITING);
                    }
                    self.sync_reading(key)?;
                }
                Event::Sent { key, bytes } => self.after_send(key, bytes)?,
                Event::Writable(key) => self.mark_dirty(key),
                Event::Failed(key) => self.close(key)?,
                Event::Settled(key) => self.settle(key)?,
                Event::Notified => self.on_notified()?,
                Event::ZeroCopyDone(key) => self.after_zerocopy(key)?,
            }
        }
        Ok(())
    }

    /// Runs the handler's tick, the idle scan and delayed accept re-arms.
    fn tick(&mut self) -> io::Result<()> {
        // Before the handler's tick, so that memory freed here can be given back there.
        // Unused spares first, so the published buffer bytes hold none (an epoll spare
        // from the last turn's flush would wait for this turn's).
        self.return_spares();
        self.conns.shrink();
        self.pool.trim();
        self.pool.allow_large(!self.config.buffers.exceeded());
        let held = self.conns.buffer_bytes() + self.pool.bytes();
        self.config.buffers.publish(&mut self.published_buffer_bytes, held);
        self.config.buffers.publish_tails(&mut self.published_tails, self.inputs.tails());
        self.bounds = self.config.bounds();
        self.tighten_reads();
        if self.handler.tick() == Control::Shutdown {
            return self.begin_shutdown();
        }
        self.stream_all()?;
        self.rotate_stalled_input()?;
        if let Some(idle) = self.config.idle_timeout.get() {
            for key in self.conns.keys() {
                let Some(conn) = self.conns.get_mut(key) else { continue };
                // A streaming connection (a log watcher) is not expected to send anything.
                let streaming = conn.has(flag::STREAMING);
                if conn.is_open() && !streaming && self.now.since(conn.last_input) > idle {
                    self.close(key)?;
                }
            }
        }
        self.driver.tick()
    }

    /// Another thread notified the loop (the driver drained the eventfd). The wake is taken
    /// (`pending` cleared) before the handler is asked for output, so a message published
    /// meanwhile is either seen now or wakes the loop again (see `notify.rs`).
    fn on_notified(&mut self) -> io::Result<()> {
        let Some(notifier) = &self.config.notifier else { return Ok(()) };
        // Not pending: an earlier turn took this wake, and streamed after it.
        if !notifier.take() {
            return Ok(());
        }
        self.stream_all()
    }

    /// Lets each streaming connection below the pause threshold append output; the flush at
    /// the end of the turn sends it.
    fn stream_all(&mut self) -> io::Result<()> {
        let conns = &mut self.conns;
        self.streaming.compact(|key| conns.get_mut(key).is_some_and(|c| c.has(flag::STREAMING)));
        // Closing during the walk only counts the key stale; the list keeps its order.
        for i in 0..self.streaming.len() {
            let key = self.streaming.get(i);
            self.stream_one(key)?;
        }
        Ok(())
    }

    /// One [`Handler::stream`] call, if the connection still streams, is not closing, and
    /// its unsent output is below the pause threshold; at or above it,
    /// [`Handler::stream_paused`] may close it at once (a subscriber cut off while its peer
    /// reads nothing: its output would never drain).
    fn stream_one(&mut self, key: Key) -> io::Result<()> {
        let Some(conn) = self.conns.get_mut(key) else { return Ok(()) };
        if !conn.has(flag::STREAMING) || conn.has(flag::CLOSE_AFTER_FLUSH) {
            return Ok(());
        }
        if conn.pending_bytes() >= self.bounds.pause_bytes {
            let Some(state) = conn.handler.as_mut() else { return Ok(()) };
            if self.handler.stream_paused(state) == After::CloseAfterFlush {
                return self.close(key);
            }
            return Ok(());
        }
        let Conn { handler: Some(state), out, session, .. } = conn else { return Ok(()) };
        if out.capacity() == 0 {
            *out = crate::buf::OutBuf::from(self.pool.take());
        }
        out.compact();
        let plain_from = out.bytes().len();
        let after = self.handler.stream(state, out.buf_mut());
        let cut_off = after == After::CloseAfterFlush;
        if let Some(session) = session {
            session.seal(out.buf_mut(), plain_from);
            if cut_off {
                session.close(out.buf_mut());
            }
        }
        if out.is_empty() {
            self.pool.give(out.take_vec());
        }
        if conn.pending_bytes() > self.bounds.limit_bytes {
            return self.close(key);
        }
        if cut_off {
            return self.close_after_flush(key);
        }
        // The handler held the input back (a blocked client) and takes it again now.
        if after == After::Yield && !conn.input.is_empty() && conn.is_open() {
            conn.enqueue_backlog(key, &mut self.backlog);
        }
        // At the threshold it is paused, as after a request: its send's completion then
        // ends the loop's wait (the io_uring driver), and `after_send` offers it more.
        if conn.pending_bytes() >= self.bounds.pause_bytes {
            conn.set(flag::PAUSED);
        }
        if !conn.out.is_empty() {
            self.mark_dirty(key);
        }
        Ok(())
    }

    fn on_accepted(&mut self, tag: u32, fd: RawFd) -> io::Result<()> {
        let _ = sys::set_nodelay(fd);
        let peer = self.driver.peer(fd);
        match self.handler.accept(tag, peer) {
            Err(line) => {
                sys::refuse(fd, line);
                Ok(())
            }
            Ok(state) => {
                let mut conn = Conn::new(fd, state, self.now);
                conn.session = self.handler.session(tag).map(Box::new);
                let key = self.conns.insert(conn);
                self.open += 1;
                let conn = self.conns.get_mut(key).expect("just inserted");
                if let Some(state) = conn.handler.as_mut() {
                    self.handler.opened(state, fd);
                }
                if !self.driver.watch(key, conn)? {
                    self.close(key)?;
                }
                Ok(())
            }
        }
    }

    /// Bytes arrived: one handler call on them (after any tail kept from before); on a TLS
    /// connection, on the plaintext they carried (see the module docs).
    #[inline]
    fn on_received(&mut self, key: Key, input: D::Input) -> io::Result<()> {
        let Some(conn) = self.conns.get_mut(key) else {
            self.driver.release(input);
            return Ok(());
        };
        conn.last_input = self.now;
        if conn.session.is_some() {
            return self.on_received_sealed(key, input);
        }
        let bytes = self.driver.input(&input);
        let d = deliver(&mut self.handler, conn, bytes, &mut self.pool, &self.bounds);
        self.driver.release(input);
        self.after_deliver(key, d)
    }

    /// [`Self::on_received`] for a TLS connection: the session opens the records, answers
    /// the handshake into `out`, and the plaintext goes to the handler. A peer that breaks
    /// the protocol (plain text on a TLS port, a refused certificate) gets the alert, if
    /// any, and is closed; no other connection notices.
    fn on_received_sealed(&mut self, key: Key, input: D::Input) -> io::Result<()> {
        let conn = self.conns.get_mut(key).expect("a live connection");
        let session = conn.session.as_mut().expect("a TLS connection");
        if conn.out.capacity() == 0 {
            conn.out = crate::buf::OutBuf::from(self.pool.take());
        }
        self.plain.clear();
        let opened = session.open(self.driver.input(&input), &mut self.plain, conn.out.buf_mut());
        self.driver.release(input);
        if conn.out.is_empty() {
            self.pool.give(conn.out.take_vec());
        }
        let has_records = !conn.out.is_empty();
        match opened {
            // The peer broke the protocol: its alert (if the session wrote one) is sent, then
            // the connection closes; no other connection notices.
            Opened::Failed => return self.close_after_flush(key),
            Opened::PeerClosed => conn.set(flag::PEER_EOF),
            Opened::Open => {}
        }
        // Only records (a handshake) or nothing: no handler call; a close_notify alone is
        // the peer's EOF, which `after_deliver` finishes as `on_eof` would.
        let d = match self.plain.is_empty() {
            true => Delivered { has_output: has_records, ..Delivered::default() },
            false => deliver(&mut self.handler, conn, &self.plain, &mut self.pool, &self.bounds),
        };
        let mut has_output = d.has_output || has_records;
        // Every request the peer sent before its close_notify is answered now: ours follows
        // the replies. (With requests left for a later turn it is not sent; the peer gets
        // the replies and the TCP close.)
        let answered =
            !d.backlog && !conn.has(flag::BACKLOG | flag::PAUSED | flag::CLOSE_AFTER_FLUSH);
        if opened == Opened::PeerClosed && answered {
            answer_close(conn, &mut self.pool);
            has_output = true;
        }
        self.after_deliver(key, Delivered { has_output, ..d })
    }

    /// Reads and offers no more input; what is queued is sent, then the connection closes
    /// (a TLS peer that broke the protocol, a streaming connection its handler cut off).
    #[cold]
    fn close_after_flush(&mut self, key: Key) -> io::Result<()> {
        let conn = self.conns.get_mut(key).expect("a live connection");
        if conn.unsent_bytes() == 0 {
            return self.close(key);
        }
        conn.set(flag::CLOSE_AFTER_FLUSH);
        conn.input.free();
        self.inputs.account(key, &mut conn.input_counted, 0);
        self.mark_dirty(key);
        self.sync_reading(key)
    }

    /// The peer shut down its side: answer what it sent, then close.
    fn on_eof(&mut self, key: Key) -> io::Result<()> {
        let Some(conn) = self.conns.get_mut(key) else { return Ok(()) };
        conn.set(flag::PEER_EOF);
        self.mark_dirty(key);
        self.sync_reading(key)
    }

    /// Reads the connection exactly when it wants input (not paused, not closing, no large
    /// yielded backlog, peer not at EOF) and the loop is not shutting down.
    #[inline]
    fn sync_reading(&mut self, key: Key) -> io::Result<()> {
        let Some(conn) = self.conns.get_mut(key) else { return Ok(()) };
        let want = conn.keeps_reading(&self.bounds) && self.mode == Mode::Running;
        self.driver.set_reading(key, conn, want)
    }

    /// Small reads while the input budget is over, whole ones otherwise.
    #[inline]
    fn tighten_reads(&mut self) {
        self.bounds.read_bytes = read_bytes(&self.inputs);
    }

    /// Lets held connections read again as the input budget allows.
    fn release_held(&mut self) -> io::Result<()> {
        self.tighten_reads();
        while let Some(key) = self.inputs.next_release() {
            let Some(conn) = self.conns.get_mut(key) else {
                self.inputs.forget(key); // closed and freed since it was held
                continue;
            };
            conn.clear(flag::INPUT_HELD);
            if !conn.is_open() {
                self.inputs.forget(key);
            }
            self.sync_reading(key)?;
        }
        Ok(())
    }

    /// At each tick: a leader that received nothing for a whole tick is held again behind
    /// the others, so that a stalled client cannot stop everyone's large requests.
    fn rotate_stalled_input(&mut self) -> io::Result<()> {
        let Some(key) = self.inputs.take_stalled_leader() else { return Ok(()) };
        self.release_held()?;
        if let Some(conn) = self.conns.get_mut(key) {
            if conn.is_open() && !conn.has(flag::INPUT_HELD) {
                conn.set(flag::INPUT_HELD);
                self.inputs.requeue(key);
            }
        }
        self.sync_reading(key)
    }

    /// Acts on what [`deliver`] reported for an open connection.
    #[inline]
    fn after_deliver(&mut self, key: Key, d: Delivered) -> io::Result<()> {
        if d.over_limit {
            return self.close(key);
        }
        let conn = self.conns.get_mut(key).expect("delivered to a live connection");
        if d.stream && !conn.has(flag::STREAMING) {
            conn.set(flag::STREAMING);
            self.streaming.push(key);
        }
        // Most requests arrive whole: no tail before or after, nothing to count. A tail grows
        // only here, so this is where the input budget holds a connection (`INPUT_HELD` then
        // keeps `sync_reading` from reading it, at no cost to the others).
        let tail_changed = conn.input.len() != conn.input_counted;
        if tail_changed {
            if !self.inputs.admits(conn.input_counted) {
                return self.refuse_tail(key);
            }
            self.inputs.account(key, &mut conn.input_counted, conn.input.len());
            // An incomplete request, not requests left by a yield or kept while paused (a
            // pipelining client keeps its multishot receive).
            let large = conn.input.len() > INPUT_SOLO_BYTES && !d.backlog;
            if large && !conn.has(flag::PAUSED | flag::LARGE_INPUT) {
                conn.set(flag::LARGE_INPUT);
                self.driver.large_input(key, conn)?;
            }
            if !conn.has(flag::INPUT_HELD) {
                hold_if_over(&mut self.inputs, key, conn);
            }
        }
        if d.backlog {
            conn.enqueue_backlog(key, &mut self.backlog);
        }
        if let Some(zc) = conn.zc.as_mut().filter(|zc| !zc.is_idle()) {
            self.zerocopy.track(key, zc);
            self.driver.watch_errors(key, conn)?;
        }
        // Marked and synced on the connection in hand (one slot lookup for the delivery).
        if d.has_output || conn.finishing() {
            self.dirty.mark(key, &mut conn.dirty);
        }
        if tail_changed {
            self.bounds.read_bytes = read_bytes(&self.inputs);
        }
        let want = conn.keeps_reading(&self.bounds) && self.mode == Mode::Running;
        self.driver.set_reading(key, conn, want)?;
        if tail_changed {
            self.release_held()?;
        }
        Ok(())
    }

    /// A connection would start a tail while the loop holds as many as it may: it is closed
    /// without a word, as memcached closes one that finds no free read buffer.
    #[cold]
    fn refuse_tail(&mut self, key: Key) -> io::Result<()> {
        self.config.buffers.count_refused_tail();
        self.close(key)
    }

    /// Offers each yielded connection's input again (one handler call each).
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

    #[inline]
    fn mark_dirty(&mut self, key: Key) {
        if let Some(conn) = self.conns.get_mut(key) {
            self.dirty.mark(key, &mut conn.dirty);
        }
    }

    /// One send per dirty connection; a connection whose handler yielded waits a turn, so
    /// the replies of the rest of its batch leave in the same send.
    ///
    /// The TLS seam (see the module docs): a session would encrypt `Conn::out` here.
    fn flush(&mut self) -> io::Result<()> {
        self.return_spares();
        let pass = self.dirty.begin_pass();
        for &key in &pass {
            let Some(conn) = self.conns.get_mut(key) else { continue };
            if conn.defers_send(&self.bounds) {
                self.dirty.keep(key);
                continue;
            }
            conn.dirty = false;
            if !conn.is_open() {
                continue;
            }
            match self.driver.send(key, conn, &mut self.pool)? {
                Sending::InFlight | Sending::Blocked => {}
                Sending::Wrote(bytes) => self.after_send(key, bytes)?,
                Sending::Failed => self.close(key)?,
            }
        }
        self.dirty.end_pass(pass);
        Ok(())
    }

    /// Gives back the spare `out`s no reply took (see `spares`).
    #[inline]
    fn return_spares(&mut self) {
        for key in self.spares.drain(..) {
            if let Some(conn) = self.conns.get_mut(key) {
                conn.return_spare(&mut self.pool);
            }
        }
    }

    /// `bytes` of output left (a completion, or a send that wrote at once): gives drained
    /// buffers back, resumes a paused connection, closes a finished one, and has the rest
    /// sent.
    ///
    /// The common case (not paused) is a straight path: the reading state is synced only
    /// when this changed a flag (epoll's `WANT_OUT`); nothing else here changes what
    /// [`Conn::keeps_reading`] says, and every other change syncs where it is made.
    #[inline]
    fn after_send(&mut self, key: Key, bytes: usize) -> io::Result<()> {
        let conn = self.conns.get_mut(key).expect("sent on a live connection");
        let flags = conn.flags;
        if conn.advance_output(bytes, &mut self.pool) {
            self.spares.push(key);
        }
        if bytes > 0 {
            if let Some(state) = conn.handler.as_mut() {
                self.handler.sent(state, bytes);
            }
        }
        if conn.has(flag::PAUSED) {
            return self.after_send_paused(key);
        }
        // Not held zero-copy bytes: the kernel has them (a finished connection lingers).
        let left = conn.unsent_bytes() > 0;
        if !left && conn.finishing() {
            return self.close(key);
        }
        if self.driver.output_left(conn, left) {
            self.dirty.mark(key, &mut conn.dirty);
        }
        if conn.flags == flags {
            return Ok(());
        }
        let want = conn.keeps_reading(&self.bounds) && self.mode == Mode::Running;
        self.driver.set_reading(key, conn, want)
    }

    /// [`Self::after_send`] for a paused connection: it may resume (and stream).
    #[cold]
    fn after_send_paused(&mut self, key: Key) -> io::Result<()> {
        let conn = self.conns.get_mut(key).expect("sent on a live connection");
        if conn.try_resume(&self.bounds) {
            conn.enqueue_backlog(key, &mut self.backlog);
        }
        // A streaming connection is passed over while paused (its output at the threshold),
        // wakes included; once it resumes, it is offered more at once, not at the next
        // tick: a replica's full copy (a megabyte per offer) ran at one offer per tick.
        if !conn.has(flag::PAUSED) && conn.has(flag::STREAMING) {
            self.stream_one(key)?;
        }
        let Some(conn) = self.conns.get_mut(key).filter(|c| c.handler.is_some()) else {
            return Ok(()); // closed by its stream
        };
        // Not held zero-copy bytes: the kernel has them (a finished connection lingers).
        let left = conn.unsent_bytes() > 0;
        if !left && conn.finishing() {
            return self.close(key);
        }
        if self.driver.output_left(conn, left) {
            self.mark_dirty(key);
        }
        self.sync_reading(key)
    }

    /// Closes a connection: tells the handler, drops its input and unsent output, and has
    /// the driver cancel what the kernel still does for it; the slot is freed once the
    /// kernel is done ([`Self::settle`]).
    fn close(&mut self, key: Key) -> io::Result<()> {
        let Some(conn) = self.conns.get_mut(key) else { return Ok(()) };
        if conn.has(flag::STREAMING) {
            conn.clear(flag::STREAMING);
            self.streaming.removed(); // O(1): the key goes at the next compaction
        }
        if let Some(state) = conn.handler.take() {
            self.open -= 1;
            self.handler.close(state);
        }
        conn.input.free();
        self.pool.give(conn.out.take_vec());
        if !conn.send_in_flight() {
            self.pool.give(conn.sending.take_vec());
        }
        self.inputs.account(key, &mut conn.input_counted, 0);
        self.inputs.forget(key);
        if conn.ops_in_flight() {
            self.driver.cancel(key, conn)?;
        } else {
            self.settle(key)?;
        }
        self.release_held()
    }

    /// Frees a closed connection's slot once the kernel has no operation left on it.
    fn settle(&mut self, key: Key) -> io::Result<()> {
        let Some(conn) = self.conns.get_mut(key) else { return Ok(()) };
        if conn.is_open() {
            return Ok(());
        }
        if !conn.send_in_flight() {
            self.pool.give(conn.sending.take_vec());
        }
        if conn.ops_in_flight() {
            return Ok(());
        }
        let mut conn = self.conns.remove(key);
        if let Some(zc) = conn.zc.take().filter(|zc| !zc.is_idle()) {
            self.driver.forget_fd(conn.fd)?;
            self.zerocopy.linger(conn.fd, zc, Instant::now());
            return Ok(());
        }
        self.driver.close_fd(key, conn.fd)
    }

    /// Stops accepting and reading; every connection flushes what it has, then closes.
    fn begin_shutdown(&mut self) -> io::Result<()> {
        self.mode = Mode::Draining { deadline: self.now + self.config.shutdown_grace };
        self.driver.stop_accepting()?;
        for key in self.conns.keys() {
            let Some(conn) = self.conns.get_mut(key) else { continue };
            if !conn.is_open() {
                continue;
            }
            conn.set(flag::CLOSE_AFTER_FLUSH);
            conn.input.free();
            self.inputs.account(key, &mut conn.input_counted, 0);
            self.sync_reading(key)?;
            self.mark_dirty(key);
        }
        Ok(())
    }

    /// After the drain: closes what is still open and waits (bounded) for the kernel to
    /// finish what it holds.
    fn finish(&mut self) -> io::Result<()> {
        self.handler.turn_end();
        for key in self.conns.keys() {
            self.close(key)?;
        }
        let deadline = Instant::now() + DRAIN_WAIT;
        while self.driver.ops_in_flight() && Instant::now() < deadline {
            self.driver.wait_for_ops()?;
            self.now = Mono::now();
            self.handle_events()?;
            self.handler.turn_end();
        }
        // Lingering zero-copy closes get the rest of the wait, then are reset on drop.
        while self.zerocopy.finish_lingering(Instant::now()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    /// After an error: closes every connection, best effort (the handler is told, the
    /// descriptors the kernel holds nothing for are closed).
    fn abandon(&mut self) {
        for key in self.conns.keys() {
            let _ = self.close(key);
        }
        self.handler.turn_end();
    }
}

/// Appends the session's closing alert to `conn`'s output.
fn answer_close<C>(conn: &mut Conn<C>, pool: &mut OutPool) {
    let Conn { out, session: Some(session), .. } = conn else { return };
    if out.capacity() == 0 {
        *out = crate::buf::OutBuf::from(pool.take());
    }
    session.close(out.buf_mut());
}

/// The most one read takes: small while the input budget is over, whole reads otherwise.
#[inline]
fn read_bytes(inputs: &InputBudget) -> usize {
    if inputs.over() {
        INPUT_TIGHT_READ_BYTES
    } else {
        usize::MAX
    }
}

/// Holds `conn` (not held yet) if the input budget says so.
#[cold]
fn hold_if_over<C>(inputs: &mut InputBudget, key: Key, conn: &mut Conn<C>) {
    if inputs.holds(key, conn.input.len()) {
        conn.set(flag::INPUT_HELD);
    }
}

impl<D: Driver, H: Handler> Drop for EventLoop<'_, D, H> {
    fn drop(&mut self) {
        if !self.driver.release_memory() {
            // The kernel may still read `sending` vectors: leak them rather than free memory
            // under it.
            mem::forget(mem::replace(&mut self.conns, Slots::new()));
        }
    }
}
