//! One worker: the [`rt::Handler`] that turns bytes into requests, runs them through
//! `exec`, and leaves the replies for the loop to send.
//!
//! A loop turn hands each connection everything that arrived; its complete requests are
//! executed before the loop sends, so a pipeline of N requests costs one receive and one
//! send, up to `-R` requests (or the pause threshold of output) per connection and turn:
//! then the receive call yields and the rest waits for the next turn, after the other
//! connections.

use std::{
    net::SocketAddr,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
};

use exec::{conns::ConnState, counters, Counters, Shared};
use rt::{After, Control};

use crate::dialect::{self, Framing, MemcacheConn};

/// Listener tags: the protocol, and whether the port speaks TLS.
pub const TAG_MEMCACHE: u32 = 0;
pub const TAG_RESP: u32 = 1;
pub const TAG_MEMCACHE_TLS: u32 = 2;
pub const TAG_RESP_TLS: u32 = 3;

fn is_resp(tag: u32) -> bool {
    matches!(tag, TAG_RESP | TAG_RESP_TLS)
}

fn is_tls(tag: u32) -> bool {
    matches!(tag, TAG_MEMCACHE_TLS | TAG_RESP_TLS)
}

/// Segments reclaimed per tick and worker, at most (bounded work between polls).
const MAINTAIN_SEGMENTS_PER_TICK: usize = 8;
/// A multiget's reply is produced in chunks of at least this many bytes (more under a
/// larger `--output-pause`). Each chunk costs a loop turn, a send and a parse of the line
/// again: in chunks of the 32 KiB pause threshold, a 48-key get of 1 KiB values (53 KB)
/// took two, and served 1.89M keys per server CPU-second against 2.37M in one (pogocache
/// 2.24M; `compare`, one run). Larger chunks did not pay at 10 KB values (96 and 192 KiB:
/// fewer keys per CPU-second, their buffers past the pool and glibc's mmap threshold). A
/// client that never reads holds about this much plus one value (its connection pauses at
/// the threshold after each chunk; `test_large_multiget.py`).
const MULTIGET_CHUNK_BYTES_MIN: usize = 64 << 10;

const MEMCACHE_TOO_MANY: &[u8] = b"ERROR Too many open connections\r\n";
const RESP_TOO_MANY: &[u8] = b"-ERR max number of clients reached\r\n";

/// What every worker shares beyond `exec::Shared`.
pub struct Limits {
    pub memcache: proto_memcache::Limits,
    pub resp: proto_resp::Limits,
    /// Connections open across all workers (checked against the shared limit at accept).
    pub open_conns: AtomicU64,
    /// Unconsumed input above this closes the connection.
    pub input_limit_bytes: usize,
    /// The same for a Redis connection.
    pub resp_input_limit_bytes: usize,
    /// The Redis port's address, as `CLIENT LIST` shows it (`laddr`).
    pub resp_addr: String,
    /// Requests executed per receive call before yielding to other connections (`-R`).
    pub reqs_per_event: usize,
    /// Output in the buffer at or above which a receive call yields (the loop's pause
    /// threshold: more would only be buffered, not sent).
    pub yield_output_bytes: usize,
    /// What all connections' buffers hold (reported by `stats` and `INFO`).
    pub buffers: Arc<rt::BufferBudget>,
    /// Which memcached dialects the memcached port speaks (`-B`).
    pub binding: Binding,
    /// The memcached listeners' `stats conns` entries (the Unix socket's, or one per
    /// TCP address).
    pub memcache_listeners: Vec<exec::conns::SharedConn>,
    /// TLS on the memcached TCP ports (`-Z`) and on the Redis TLS port (`--tls-port`).
    pub memcache_tls: Option<Arc<crate::tls::Context>>,
    pub resp_tls: Option<Arc<crate::tls::Context>>,
    /// Connections per listening port, for the metrics.
    pub ports: Arc<crate::ports::Ports>,
}

/// memcached's `-B`: which dialects a memcached connection may speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Binding {
    /// Decided per connection by its first byte: 0x80 is binary, anything else text/meta.
    Auto,
    /// Text and meta only; a binary packet closes the connection.
    Ascii,
    /// Binary only; anything else closes the connection.
    Binary,
}

impl Binding {
    /// From the configuration's `-B` value (checked by the config parser).
    pub fn from_config(name: &str) -> Binding {
        match name {
            "ascii" => Binding::Ascii,
            "binary" => Binding::Binary,
            _ => Binding::Auto,
        }
    }
}

impl Limits {
    /// A new memcached connection's `stats conns` entry: its peer, and the listener it came
    /// in on. rt hands over the peer only, so that is the listener on the peer's address if
    /// there is one, else one of its family, else the first (the Unix socket's, if any).
    fn conn_entry(&self, peer: Option<SocketAddr>, now_secs: u32) -> exec::conns::ConnEntry {
        use exec::conns::{Addr, ConnEntry, ConnState};
        let listeners = &self.memcache_listeners;
        let tcp = |entry: &&exec::conns::SharedConn| match (&entry.addr, peer) {
            (Addr::Tcp(local), Some(peer)) => {
                Some((local.ip() == peer.ip(), local.is_ipv4() == peer.is_ipv4()))
            }
            _ => None,
        };
        let listener = listeners
            .iter()
            .find(|l| tcp(l).is_some_and(|(same_ip, _)| same_ip))
            .or_else(|| listeners.iter().find(|l| tcp(l).is_some_and(|(_, family)| family)))
            .or(listeners.first());
        let addr = peer.map_or(Addr::Unnamed, Addr::Tcp);
        ConnEntry::new(addr, listener.cloned(), ConnState::New, now_secs)
    }

    /// What a receive call may do before it stops and lets other connections run.
    fn budget(&self) -> dialect::Budget {
        dialect::Budget { requests: self.reqs_per_event, output_bytes: self.yield_output_bytes }
    }
}

pub struct Worker {
    shared: Arc<Shared>,
    limits: Arc<Limits>,
    counters: Arc<Counters>,
    /// This worker's place in `shared.gate`.
    index: usize,
    args: Option<proto_resp::ArgStorage>,
    /// Shutdown asked from outside (a signal).
    stop: Arc<dyn Fn() -> bool + Send + Sync>,
    ticks: u64,
    /// Worker 0 gives freed memory back to the kernel after a drop in connections.
    trims_memory: bool,
    /// Most connections open since the last drop was noticed.
    conns_peak: u64,
    /// The tick at which to trim: a few after the last noticed drop, so that every loop has
    /// freed its share (each shrinks its tables at its own tick) and the closing is over.
    trim_at_tick: Option<u64>,
    /// The store's clock, read at the turn's first receive and held still until the turn
    /// ends ([`rt::Handler::turn_end`]): every request of the turn, whichever connection
    /// sent it, sees that time, as Redis caches its clock for a command and memcached keeps
    /// `current_time`. One read per turn rather than per connection's batch (46
    /// instructions each, callgrind).
    clock: Option<store::FrozenClock>,
}

/// Ticks between the last noticed drop in connections and the trim.
const TRIM_DELAY_TICKS: u64 = 3;

/// A trim follows a drop of at least this many open connections from their peak.
const TRIM_AFTER_CONNS_DROP: u64 = 1000;

/// A connection's state; an idle connection costs this and the loop's slot, no buffers.
pub enum Conn {
    Memcache(MemcacheConn),
    /// Boxed: a Redis session (client name, addresses) is several times the size of a
    /// memcached one, and every connection's slot is as large as the largest variant.
    /// `tag`: the listener it came from.
    Resp {
        session: Box<exec::resp::Session>,
        tag: u8,
    },
}

impl Conn {
    /// The listener the connection came from.
    fn tag(&self) -> u32 {
        match self {
            Conn::Memcache(mc) => mc.tag.into(),
            Conn::Resp { tag, .. } => (*tag).into(),
        }
    }
}

impl Worker {
    pub fn new(
        shared: Arc<Shared>,
        limits: Arc<Limits>,
        index: usize,
        stop: Arc<dyn Fn() -> bool + Send + Sync>,
    ) -> Worker {
        let counters = shared.core.counters(index);
        Worker {
            shared,
            limits,
            counters,
            index,
            args: Some(Default::default()),
            stop,
            ticks: 0,
            trims_memory: index == 0,
            conns_peak: 0,
            trim_at_tick: None,
            clock: None,
        }
    }

    /// Picks the dialect from the first byte, as memcached does, then parses in it.
    /// Picks the dialect from the first byte, as memcached does, then parses in it.
    fn receive_memcache_or_binary(
        &mut self,
        conn: &mut MemcacheConn,
        input: &[u8],
        out: &mut Vec<u8>,
    ) -> (usize, After) {
        if conn.watcher.is_some() {
            return (input.len(), After::Continue);
        }
        if conn.framing == Framing::Undecided {
            let Some(&first) = input.first() else { return (0, After::Continue) };
            let binary = first == proto_memcache::binary::REQUEST_MAGIC;
            conn.framing = match (self.limits.binding, binary) {
                // A binary-only port parses anything as binary: the parser hangs up on a
                // wrong magic once a whole header is there, as memcached does.
                (Binding::Auto, true) | (Binding::Binary, _) => Framing::Binary,
                // Text parsing hangs up on the binary magic itself.
                (Binding::Auto | Binding::Ascii, _) => Framing::Text,
            };
        }
        conn.session.note_activity(self.shared.memcache_view(), ConnState::Read);
        let (shared, counters, limits) = (&*self.shared, &*self.counters, &*self.limits);
        let ctx = dialect::Ctx { view: shared.memcache_view(), counters, limits: &limits.memcache };
        let budget = limits.budget();
        // Large values leave from item memory (settled in `lent`, right after this call);
        // not on TLS, whose records are sealed from the output buffer.
        if !is_tls(conn.tag.into()) {
            store::loans::open();
        }
        let (consumed, after) = match conn.framing {
            Framing::Binary => {
                let mut binary = dialect::Binary::stream(ctx, conn);
                dialect::serve(&mut binary, counters, budget, input, out)
            }
            _ => {
                let chunk_bytes = limits.yield_output_bytes.max(MULTIGET_CHUNK_BYTES_MIN);
                let mut text = dialect::Text::stream(ctx, conn, chunk_bytes);
                dialect::serve(&mut text, counters, budget, input, out)
            }
        };
        if consumed < input.len() || conn.swallow_bytes > 0 {
            self.note_unfinished(conn, &input[consumed..]);
        }
        (consumed, after)
    }

    /// A request left unfinished: `stats conns` shows a connection whose data block is still
    /// arriving (its command line or binary header is whole) as memcached's `conn_nread`.
    #[cold]
    fn note_unfinished(&self, conn: &mut MemcacheConn, rest: &[u8]) {
        let header_whole = match conn.framing {
            Framing::Binary => rest.len() >= proto_memcache::binary::HEADER_LEN,
            _ => rest.contains(&b'\n'),
        };
        if header_whole || conn.swallow_bytes > 0 {
            conn.session.note_activity(self.shared.memcache_view(), ConnState::DataBlock);
        }
    }

    fn receive_resp(
        &mut self,
        session: &mut exec::resp::Session,
        tls: bool,
        input: &[u8],
        out: &mut Vec<u8>,
    ) -> (usize, After) {
        // GET and MGET send large values from item memory (settled in `lent`, right after
        // this call; exec decides per command, see `Ctx::lends`); not on TLS, whose
        // records are sealed from the output buffer, nor to a replica being fed.
        if !tls && !session.is_replica_feed() {
            store::loans::open();
        }
        let storage = self.args.take().unwrap_or_default();
        let (shared, counters, limits) = (&*self.shared, &*self.counters, &*self.limits);
        let mut resp = dialect::Resp::new(shared, counters, &limits.resp, session, storage);
        let served = dialect::serve(&mut resp, counters, limits.budget(), input, out);
        self.args = resp.storage;
        served
    }

    /// After a burst of connections has closed, the memory their state and buffers used is
    /// free but still resident (freed by several threads into several malloc arenas); give
    /// it back.
    fn trim_after_burst(&mut self) {
        let open = self.limits.open_conns.load(Ordering::Relaxed);
        self.conns_peak = self.conns_peak.max(open);
        if self.conns_peak - open >= TRIM_AFTER_CONNS_DROP.min(self.conns_peak / 2 + 1) {
            self.trim_at_tick = Some(self.ticks + TRIM_DELAY_TICKS);
            self.conns_peak = open;
        }
        if self.trim_at_tick == Some(self.ticks) {
            rt::release_free_memory();
            self.trim_at_tick = None;
        }
    }
}

impl rt::Handler for Worker {
    type Conn = Conn;

    fn accept(&mut self, tag: u32, peer: Option<SocketAddr>) -> Result<Conn, &'static [u8]> {
        let open = self.limits.open_conns.fetch_add(1, Ordering::Relaxed);
        if open >= self.shared.core.max_connections() {
            self.limits.open_conns.fetch_sub(1, Ordering::Relaxed);
            counters::bump(&self.counters.rejected_connections, 1);
            return Err(if is_resp(tag) { RESP_TOO_MANY } else { MEMCACHE_TOO_MANY });
        }
        let peer_ip = peer.map(|addr| addr.ip());
        if is_resp(tag) && exec::resp::auth::protected_mode_denies(&self.shared, peer_ip) {
            self.limits.open_conns.fetch_sub(1, Ordering::Relaxed);
            counters::bump(&self.counters.rejected_connections, 1);
            return Err(exec::resp::auth::PROTECTED_MODE_DENIED);
        }
        counters::bump(&self.counters.curr_connections, 1);
        counters::bump(&self.counters.total_connections, 1);
        self.limits.ports.opened(tag);
        let protocol = if is_resp(tag) { "resp" } else { "memcache" };
        tracing::debug!(protocol, peer = %peer.map_or_else(|| "-".into(), |a| a.to_string()), "connection opened");
        Ok(if is_resp(tag) {
            let peer = peer.map_or_else(String::new, |addr| addr.to_string());
            let session = exec::resp::Session::connect(&self.shared, &peer, &self.limits.resp_addr);
            Conn::Resp { session: Box::new(session), tag: tag as u8 }
        } else {
            let entry = self.limits.conn_entry(peer, self.shared.core.clock_secs());
            let session = exec::memcache::Session::connect(self.shared.memcache_view(), entry);
            Conn::Memcache(MemcacheConn::new(session, tag as u8))
        })
    }

    fn opened(&mut self, conn: &mut Conn, fd: std::os::fd::RawFd) {
        if let Conn::Resp { session, .. } = conn {
            session.client.lock().fd = Some(fd);
        }
    }

    fn session(&mut self, tag: u32) -> Option<Box<dyn rt::Session>> {
        match tag {
            TAG_MEMCACHE_TLS => self.limits.memcache_tls.as_ref()?.session(),
            TAG_RESP_TLS => self.limits.resp_tls.as_ref()?.session(),
            _ => None,
        }
    }

    fn receive(&mut self, conn: &mut Conn, input: &[u8], out: &mut Vec<u8>) -> (usize, After) {
        let input_limit = match conn {
            Conn::Memcache(_) => self.limits.input_limit_bytes,
            Conn::Resp { .. } => self.limits.resp_input_limit_bytes,
        };
        if input.len() > input_limit {
            // An unfinished request larger than any legal one (the parsers bound lines and
            // values; this bounds everything else, such as a huge RESP argument count).
            counters::bump(&self.counters.conns_cut_off, 1);
            if let Conn::Memcache(mc) = conn {
                mc.session.closing();
            }
            return (input.len(), After::CloseAfterFlush);
        }
        // One clock read for the loop's turn, not one per request or connection (see
        // store::FrozenClock; let go in `turn_end`).
        if self.clock.is_none() {
            self.clock = Some(store::FrozenClock::now());
        }
        // Other loops' wakes wait for the batch's end: one each, not one per PUBLISH.
        crate::wakes::hold();
        // Inside the gate while executing: an EXEC on another worker waits for this batch.
        // No connection waits for a script past its time limit: its batch is served
        // outside the gate, answering -BUSY, or memcached's SERVER_ERROR or binary status
        // 0x85 (exec::gate::Entered::Busy).
        let entered = self.shared.core.gate.enter_or_busy(self.index);
        let busy = entered == exec::gate::Entered::Busy;
        let (consumed, after) = match conn {
            Conn::Memcache(mc) => {
                mc.session.set_busy(busy);
                let served = self.receive_memcache_or_binary(mc, input, out);
                mc.session.set_busy(false);
                if served.1 == After::CloseAfterFlush {
                    mc.session.closing();
                }
                served
            }
            // A blocked client's further requests wait (Redis reads them and runs them once
            // it is answered): consume nothing; `stream` offers them again then.
            Conn::Resp { session, .. }
                if session.is_blocked()
                    || session.is_postponed()
                    || session.is_script_suspended() =>
            {
                (0, After::Continue)
            }
            Conn::Resp { session, tag } => {
                session.set_busy(busy);
                let tls = is_tls((*tag).into());
                let (consumed, after) = self.receive_resp(session, tls, input, out);
                session.set_busy(false);
                if session.is_script_suspended() {
                    // Its script yielded, busy: `stream` resumes it this very turn.
                    self.shared.redis.pubsub.wake(self.index, true);
                }
                // A subscriber's loop drains its mailbox when woken (see `stream`).
                let streams = after == After::Continue && session.is_subscriber();
                let streams = streams || after == After::Stream;
                (consumed, if streams { After::Stream } else { after })
            }
        };
        if entered == exec::gate::Entered::Inside {
            self.shared.core.gate.leave(self.index);
        }
        crate::wakes::release(|worker| self.shared.redis.pubsub.wake(worker, false));
        counters::bump(&self.counters.bytes_read, consumed as u64);
        (consumed, after)
    }

    fn sent(&mut self, _conn: &mut Conn, bytes: usize) {
        counters::bump(&self.counters.bytes_written, bytes as u64);
    }

    /// Values the batch lent (`store::loans`), handed to the loop to send or copy; the
    /// read pin that kept them goes once they are, before the loop waits again.
    #[inline]
    fn lent(&mut self, _conn: &mut Conn, take: &mut dyn FnMut(&rt::Lent<'_>)) {
        store::loans::settle(take);
    }

    /// A zero-copy send keeps the loans' pin until the kernel is done with the pages.
    fn hold_lent() -> Option<rt::Hold> {
        store::loans::hold().map(|hold| Box::new(hold) as rt::Hold)
    }

    fn close(&mut self, mut conn: Conn) {
        tracing::debug!("connection closed");
        match &mut conn {
            Conn::Resp { session, .. } => session.disconnect(&self.shared),
            Conn::Memcache(mc) => {
                mc.session.disconnect(self.shared.memcache_view());
                if let Some(id) = mc.watcher {
                    self.shared.memcache.watchers.remove(id);
                }
            }
        }
        self.limits.open_conns.fetch_sub(1, Ordering::Relaxed);
        self.limits.ports.closed(conn.tag());
        counters::drop_by(&self.counters.curr_connections, 1);
    }

    fn stream(&mut self, conn: &mut Conn, out: &mut Vec<u8>) -> rt::After {
        match conn {
            Conn::Memcache(MemcacheConn { watcher: Some(id), .. }) => {
                self.shared.memcache.watchers.drain(*id, out);
            }
            Conn::Resp { session, .. } => {
                if session.drain_messages(out) == exec::resp::pubsub::Drained::CutOff {
                    return rt::After::CloseAfterFlush;
                }
                // A replica: the replication stream (its copy first).
                if !session.drain_replica(&self.shared, out) {
                    return rt::After::CloseAfterFlush;
                }
                // Answered (served, unblocked or timed out): its waiting input runs now.
                if session.is_blocked() && session.poll_blocked(&self.shared, out) {
                    return rt::After::Yield;
                }
                // CLIENT PAUSE over: the command it held runs now.
                if session.is_postponed() && session.pause_ended(&self.shared) {
                    return rt::After::Yield;
                }
                // A busy script that yielded: another slice, then this loop's other
                // clients get their turn (-BUSY) and it goes on at once.
                if session.is_script_suspended() {
                    if session.resume_script(&self.shared, &self.counters, out) {
                        return rt::After::Yield;
                    }
                    self.shared.redis.pubsub.wake(self.index, false);
                }
            }
            Conn::Memcache(_) => {}
        }
        rt::After::Continue
    }

    /// A subscriber cut off while its peer reads nothing is closed at once, as Redis drops
    /// a client past its pub/sub output limit.
    fn stream_paused(&mut self, conn: &mut Conn) -> rt::After {
        match conn {
            Conn::Resp { session, .. } if session.is_cut_off() => rt::After::CloseAfterFlush,
            _ => rt::After::Continue,
        }
    }

    /// The turn's frozen clock goes (the store reads the wall clock again).
    #[inline]
    fn turn_end(&mut self) {
        self.clock = None;
    }

    fn tick(&mut self) -> Control {
        self.ticks += 1;
        self.shared.core.tick_clock();
        // A busy script whose connection closed still runs to its end here.
        exec::resp::script::drive_orphan(&self.shared, &self.counters);
        // Timed for the latency monitor's `expire-cycle` event (a clock read, ~10 ns).
        let maintained_from = exec::latency::now();
        self.shared.core.store.maintain(MAINTAIN_SEGMENTS_PER_TICK);
        exec::resp::slowlog::note_expire_cycle(&self.shared, maintained_from);
        // XREADGROUP waiters on a stream that expired (here or in a command) are answered.
        exec::resp::blocking::serve_expired(&self.shared, &self.counters);
        // A primary's replicas: expired keys' DELs, and the stream's PING.
        if self.index == 0 {
            exec::repl::tick(&self.shared);
        }
        if self.trims_memory {
            self.trim_after_burst();
            let buffers = self.limits.buffers.used_bytes() as u64;
            self.shared.core.conn_buffer_bytes.store(buffers, Ordering::Relaxed);
            let (tails, tail_bytes) = self.limits.buffers.tails();
            let read = &self.shared.memcache.read_bufs;
            read.count.store(tails as u64, Ordering::Relaxed);
            read.bytes.store(tail_bytes as u64, Ordering::Relaxed);
            read.oom.store(self.limits.buffers.refused_tails() as u64, Ordering::Relaxed);
        }
        if (self.stop)() || self.shared.core.shutdown.load(Ordering::Relaxed) {
            return Control::Shutdown;
        }
        Control::Continue
    }
}
