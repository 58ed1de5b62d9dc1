//! One client thread: its connections, its op slots and its loop.
//!
//! ```text
//!   client c (one per --connections) = one connection per server, up to --pipeline ops
//!            conns[server * connections + c] (server-major, so a Redis Cluster node met
//!            in a redirect appends its connections without moving the others)
//!   op slot  = (client, j < pipeline); free slots wait in `ready` (FIFO)
//!   issue:   take a free slot (closed loop: at once; open loop: when the schedule says a
//!            request is due), draw an op, route each key by ketama (or, with --cluster,
//!            by key slot: one part per slot, see `crate::cluster`), append one part per
//!            server to that connection's output
//!   redirect (--cluster): a -MOVED/-ASK reply takes its part off its connection and sends
//!            it again to the named node's connection of the same client
//!   turn:    wait (epoll) -> read and parse replies -> complete ops, free slots -> issue
//!            -> one write per connection with output
//! ```
//!
//! An op completes when its last part's reply has been parsed; its latency runs from its
//! start (open loop: its intended send time) to then. A connection that fails or sends a
//! reply that cannot be trusted is closed, and its client retires: its slots are not reused.

use std::{
    collections::VecDeque,
    net::SocketAddr,
    sync::{atomic::Ordering, mpsc::Sender},
    time::Duration,
};

use rt::{DirtyList, Interest, Poller};

use proto_resp::{cluster::key_slot, compose_command, parse_reply, ParseError, Value};

use crate::{
    client::{self, family::FollowUps, ErrorKind, Parsed, Scratch, SetArgs, Tally},
    cluster::{self, Front, Redirect, RedirectKind, SlotMap, REDIRECTS_MAX, REFRESH_INTERVAL},
    conn::{Conn, Part, ReadResult},
    ratelimit::Schedule,
    runner::{Shared, Stop},
    stats::Stats,
    workload::{Generator, Op, OpKind, Structure},
};

mod follow;

/// Reads per readiness event per connection, so one busy connection cannot starve others.
const READS_PER_EVENT: usize = 4;
/// The shared receive buffer of a thread.
const READ_BUFFER_BYTES: usize = 64 * 1024;
/// How long in-flight requests may take to finish after the run's end.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);
/// Live-report interval.
pub const INTERVAL_NS: u64 = 1_000_000_000;

/// An op in flight (or a free slot).
#[derive(Debug, Default, Clone, Copy)]
struct Slot {
    parts_left: u32,
    kind: Option<OpKind>,
    key_count: u32,
    start_ns: u64,
    measured: bool,
    tally: Tally,
    /// A set's arguments, kept to send it again after a redirect.
    set: Option<SetArgs>,
}

/// Where ops come from in a phase.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    Workload,
    /// Set every key in `next..end` once.
    Preload {
        next: u64,
        end: u64,
    },
}

/// One phase of the thread's work.
pub struct Phase {
    pub source: Source,
    /// Ops started at or after this are recorded (warm-up ends here).
    pub measure_from_ns: u64,
    pub stop: Stop,
    /// Ends the measured part in `Stop::Duration` mode.
    pub end_ns: u64,
    pub schedule: Option<Schedule>,
}

/// What [`Engine::cluster_reply`] did with the front of the input.
enum ClusterReply {
    /// Nothing: an ordinary reply.
    Other,
    Incomplete,
    /// Took a reply of this many bytes.
    Used(usize),
    /// The stream cannot be read any more.
    Broken,
}

/// Connects `config.connections` clients to `addr`, appended to `conns` and registered
/// with `poller` under `first_token` plus their place in `conns`.
fn connect_clients(
    addr: SocketAddr,
    config: &crate::runner::Config,
    poller: &Poller,
    first_token: usize,
    conns: &mut Vec<Conn>,
) -> Result<(), String> {
    for _ in 0..config.connections {
        let conn = Conn::connect(addr, config.pipeline, config.workload.keys_per_get)
            .map_err(|e| format!("connect {addr}: {e}"))?;
        let token = (first_token + conns.len()) as u64;
        poller.add(&conn.stream, token, Interest::Read).map_err(|e| format!("epoll: {e}"))?;
        conns.push(conn);
    }
    Ok(())
}

/// Sent to the runner each interval.
pub struct IntervalMsg {
    pub index: u64,
    pub stats: Stats,
}

/// What a thread hands back at the end.
#[derive(Debug, Default)]
pub struct PhaseEnd {
    /// Ops still in flight when the drain timed out.
    pub unanswered: u64,
    /// Open loop: requests that were due before the end but never sent.
    pub behind: u64,
}

pub struct Engine<'a> {
    shared: &'a Shared,
    poller: Poller,
    conns: Vec<Conn>,
    server_count: usize,
    /// Clients (connections per server).
    connections: usize,
    /// Redis Cluster: this thread's slot map (its nodes are the servers, in order).
    slot_map: Option<SlotMap>,
    /// (slot, key id) of the op being started, grouped by slot.
    slot_keys: Vec<(u16, u64)>,
    /// When the slot map was last fetched after a MOVED.
    refreshed_ns: Option<u64>,
    pipeline: usize,
    slots: Vec<Slot>,
    ready: VecDeque<u32>,
    client_dead: Vec<bool>,
    generator: Generator,
    keys: Vec<u64>,
    part_keys: Vec<u64>,
    read_buf: Box<[u8]>,
    scratch: Scratch,
    /// Commands the reply just parsed asks its op to send next.
    follow: FollowUps,
    /// Connections (by index) with output to write this turn.
    dirty: DirtyList<u32>,
    version: u32,
    /// Stats of the current interval (measured ops only).
    pub stats: Stats,
    /// Everything counted outside measurement (preload, warm-up), for error reporting.
    pub unmeasured: Stats,
    in_flight: u64,
    issued_measured: u64,
    /// When the bytes being parsed were read: the end of every op they complete (one clock
    /// read per read, not one per op).
    arrived_ns: u64,
}

impl<'a> Engine<'a> {
    /// Connects this thread's clients: `connections` × one connection per server.
    pub fn connect(shared: &'a Shared, thread: usize) -> Result<Engine<'a>, String> {
        let config = &shared.config;
        let poller = Poller::new().map_err(|e| format!("epoll: {e}"))?;
        let mut conns = Vec::new();
        for addr in &shared.addrs {
            connect_clients(*addr, config, &poller, 0, &mut conns)?;
        }
        let slot_count = config.connections * config.pipeline;
        let seed = config.seed ^ (thread as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let start = config.workload.ids() / config.threads as u64 * thread as u64;
        Ok(Engine {
            shared,
            poller,
            conns,
            server_count: shared.addrs.len(),
            connections: config.connections,
            slot_map: shared.slots.clone(),
            slot_keys: Vec::with_capacity(config.workload.keys_per_get),
            refreshed_ns: None,
            pipeline: config.pipeline,
            slots: vec![Slot::default(); slot_count],
            ready: (0..slot_count as u32).collect(),
            client_dead: vec![false; config.connections],
            generator: Generator::new(&config.workload, seed, start),
            keys: Vec::with_capacity(config.workload.keys_per_get),
            part_keys: Vec::with_capacity(config.workload.keys_per_get),
            read_buf: vec![0; READ_BUFFER_BYTES].into_boxed_slice(),
            scratch: Scratch::default(),
            follow: FollowUps::default(),
            dirty: DirtyList::with_capacity(slot_count),
            version: (thread as u32) << 24,
            stats: Stats::default(),
            unmeasured: Stats::default(),
            in_flight: 0,
            issued_measured: 0,
            arrived_ns: 0,
        })
    }

    /// Runs `phase` until it ends and its ops are answered (or the drain times out),
    /// sending interval stats to `intervals` when given.
    pub fn run(&mut self, mut phase: Phase, intervals: Option<&Sender<IntervalMsg>>) -> PhaseEnd {
        self.issued_measured = 0;
        let mut next_interval = phase.measure_from_ns.saturating_add(INTERVAL_NS);
        let mut drain_deadline = None;
        loop {
            let now = self.shared.now_ns();
            if self.live_clients() == 0 {
                break;
            }
            if let Some(tx) = intervals {
                while now >= next_interval {
                    let index = (next_interval - phase.measure_from_ns) / INTERVAL_NS - 1;
                    let _ = tx.send(IntervalMsg { index, stats: self.take_stats() });
                    next_interval += INTERVAL_NS;
                }
            }
            let issuing = self.may_issue(&phase, now);
            if issuing {
                self.issue(&mut phase, now);
            } else if self.in_flight == 0 || self.live_clients() == 0 {
                break;
            } else {
                let drain_ns = DRAIN_TIMEOUT.as_nanos() as u64;
                let deadline = *drain_deadline.get_or_insert(now.saturating_add(drain_ns));
                if now >= deadline {
                    break;
                }
            }
            self.flush();
            let wake = self.wake_at(&phase, next_interval, intervals.is_some(), issuing);
            let timeout = Duration::from_nanos(wake.saturating_sub(self.shared.now_ns()));
            if self.poller.wait(Some(timeout.min(Duration::from_millis(100)))).is_err() {
                break;
            }
            self.on_events();
        }
        let behind = match &phase.schedule {
            Some(s) if self.may_issue_at_end(&phase) => {
                let mut probe = s.clone();
                let end = phase.end_ns.min(self.shared.now_ns()).saturating_sub(1);
                std::iter::from_fn(|| probe.take_due(end)).count() as u64
            }
            _ => 0,
        };
        PhaseEnd { unanswered: self.in_flight, behind }
    }

    fn may_issue_at_end(&self, phase: &Phase) -> bool {
        matches!(phase.stop, Stop::Duration(_)) && matches!(phase.source, Source::Workload)
    }

    fn take_stats(&mut self) -> Stats {
        let stats = self.stats.clone();
        self.stats.clear();
        stats
    }

    fn live_clients(&self) -> usize {
        self.client_dead.iter().filter(|&&dead| !dead).count()
    }

    /// Whether the phase still starts ops at `now`.
    fn may_issue(&self, phase: &Phase, now: u64) -> bool {
        if self.shared.abort.load(Ordering::Relaxed) {
            return false;
        }
        match (phase.source, phase.stop) {
            (Source::Preload { next, end }, _) => next < end,
            (Source::Workload, Stop::Duration(_)) => now < phase.end_ns,
            (Source::Workload, Stop::Requests(quota)) => self.issued_measured < quota,
        }
    }

    /// When the loop must wake even without I/O.
    fn wake_at(&self, phase: &Phase, next_interval: u64, reporting: bool, issuing: bool) -> u64 {
        let mut wake = u64::MAX;
        if reporting {
            wake = wake.min(next_interval);
        }
        if issuing && matches!(phase.stop, Stop::Duration(_)) {
            wake = wake.min(phase.end_ns);
        }
        if let (true, Some(schedule)) = (issuing && !self.ready.is_empty(), &phase.schedule) {
            wake = wake.min(schedule.next_ns());
        }
        wake
    }

    /// Starts ops on free slots, as the mode allows.
    fn issue(&mut self, phase: &mut Phase, now: u64) {
        while let Some(&slot) = self.ready.front() {
            if !self.may_issue(phase, now) {
                return;
            }
            let start_ns = match &mut phase.schedule {
                Some(schedule) => match schedule.take_due(now) {
                    Some(intended) => intended,
                    None => return,
                },
                None => now,
            };
            self.ready.pop_front();
            let op = match &mut phase.source {
                Source::Workload => self.generator.next(&mut self.keys),
                Source::Preload { next, .. } => {
                    *next += 1;
                    self.generator.set_of(*next - 1, &mut self.keys)
                }
            };
            let measured =
                matches!(phase.source, Source::Workload) && start_ns >= phase.measure_from_ns;
            if measured {
                self.issued_measured += 1;
            }
            self.start_op(slot, op, start_ns, measured);
        }
    }

    fn start_op(&mut self, slot: u32, op: Op, start_ns: u64, measured: bool) {
        let client = slot as usize / self.pipeline;
        let set = (op.kind == OpKind::Set).then(|| {
            self.version = self.version.wrapping_add(1);
            SetArgs {
                version: self.version,
                value_len: op.value_len,
                ttl_secs: self.shared.config.workload.ttl_secs,
            }
        });
        let key_count = self.keys.len() as u32;
        self.slots[slot as usize] = Slot {
            parts_left: 0,
            kind: Some(op.kind),
            key_count,
            start_ns,
            measured,
            tally: Tally::default(),
            set,
        };
        let parts = if self.slot_map.is_some() {
            self.start_by_slot(client, slot, op.kind, set)
        } else {
            self.start_by_ring(client, slot, op.kind, set)
        };
        self.slots[slot as usize].parts_left = parts;
        self.in_flight += 1;
    }

    /// Sends one part per server that owns keys of the op (ketama); returns the parts.
    fn start_by_ring(
        &mut self,
        client: usize,
        slot: u32,
        kind: OpKind,
        set: Option<SetArgs>,
    ) -> u32 {
        let mut parts = 0;
        for server in 0..self.server_count {
            self.part_keys.clear();
            if self.server_count == 1 {
                self.part_keys.extend_from_slice(&self.keys);
            } else {
                let format = &self.shared.format;
                let ring = &self.shared.ring;
                // A collection lives on one server: its fields shard by the collection key.
                let family = self.shared.config.workload.family();
                let key = |id: u64| format.key(family.split(id).0);
                let mine = |&&id: &&u64| ring.server_for_key(key(id).as_bytes()) == server;
                self.part_keys.extend(self.keys.iter().filter(mine));
            }
            if self.part_keys.is_empty() {
                continue;
            }
            parts += 1;
            self.send_part(server * self.connections + client, slot, kind, set, 0);
        }
        parts
    }

    /// Redis Cluster: sends one part per slot the op's keys hash to, each to the slot's
    /// owner (an MGET may not span slots); returns the parts.
    fn start_by_slot(
        &mut self,
        client: usize,
        slot: u32,
        kind: OpKind,
        set: Option<SetArgs>,
    ) -> u32 {
        let (format, family) = (&self.shared.format, self.shared.config.workload.family());
        self.slot_keys.clear();
        // A collection lives on one node: its fields go by the collection key's slot.
        let key_slot_of = |id: u64| key_slot(format.key(family.split(id).0).as_bytes());
        self.slot_keys.extend(self.keys.iter().map(|&id| (key_slot_of(id), id)));
        self.slot_keys.sort_by_key(|&(key_slot, _)| key_slot); // stable: request order kept
        let mut parts = 0;
        let mut at = 0;
        // Bounded: each round takes at least one key.
        while at < self.slot_keys.len() {
            let key_slot = self.slot_keys[at].0;
            let run = self.slot_keys[at..].iter().take_while(|(s, _)| *s == key_slot).count();
            self.part_keys.clear();
            self.part_keys.extend(self.slot_keys[at..at + run].iter().map(|&(_, id)| id));
            at += run;
            let map = self.slot_map.as_ref().expect("cluster mode");
            let node = map.node_for_slot(key_slot).expect("discovery leaves no slot unowned");
            parts += 1;
            self.send_part(node * self.connections + client, slot, kind, set, 0);
        }
        parts
    }

    fn send_part(
        &mut self,
        index: usize,
        slot: u32,
        kind: OpKind,
        set: Option<SetArgs>,
        redirects: u8,
    ) {
        let conn = &mut self.conns[index];
        let out = conn.out.buf_mut();
        let before = out.len();
        let (protocol, family) =
            (self.shared.config.protocol, self.shared.config.workload.family());
        let (format, keys, scratch) = (&self.shared.format, &self.part_keys, &mut self.scratch);
        if family.structure == Structure::String {
            client::compose(protocol, kind, keys, set, format, scratch, out);
        } else {
            client::family::compose(family, kind, keys, set, format, scratch, out);
        }
        let sent = (out.len() - before) as u64;
        let key_count = self.part_keys.len() as u32;
        let part = Part { kind, key_count, slot, redirects, asking: false, follow_up: false };
        conn.pending.push_back(part);
        match self.part_keys.as_slice() {
            [one] => conn.keys.push_back(*one),
            many => conn.keys.extend(many.iter().copied()),
        }
        self.dirty.mark(index as u32, &mut conn.dirty);
        self.stats_for(self.slots[slot as usize].measured).counts.bytes_sent += sent;
    }

    fn stats_for(&mut self, measured: bool) -> &mut Stats {
        if measured {
            &mut self.stats
        } else {
            &mut self.unmeasured
        }
    }

    /// One write per connection with output.
    fn flush(&mut self) {
        let pass = self.dirty.begin_pass();
        for &index in &pass {
            let index = index as usize;
            let conn = &mut self.conns[index];
            conn.dirty = false;
            if conn.dead {
                continue;
            }
            if let Err(_e) = conn.write() {
                self.kill(index, ErrorKind::Connection);
                continue;
            }
            let conn = &mut self.conns[index];
            let want = conn.has_unsent();
            if want != conn.want_write {
                conn.want_write = want;
                let interest = if want { Interest::ReadWrite } else { Interest::Read };
                let _ = self.poller.modify(&conn.stream, index as u64, interest);
            }
        }
        self.dirty.end_pass(pass);
    }

    fn on_events(&mut self) {
        for i in 0..self.poller.event_count() {
            let event = self.poller.event(i);
            let (index, readable, writable) =
                (event.token as usize, event.readable, event.writable);
            if self.conns[index].dead {
                continue;
            }
            if writable {
                self.dirty.mark(index as u32, &mut self.conns[index].dirty);
            }
            if readable {
                self.on_readable(index);
            }
        }
    }

    fn on_readable(&mut self, index: usize) {
        for _ in 0..READS_PER_EVENT {
            let n = match self.conns[index].read(&mut self.read_buf) {
                ReadResult::Data(n) => n,
                ReadResult::WouldBlock => return,
                ReadResult::Closed(_) => return self.kill(index, ErrorKind::Connection),
            };
            self.received(index, n);
            if self.conns[index].dead || n < self.read_buf.len() {
                return;
            }
        }
    }

    /// `n` bytes arrived in the read buffer: parse replies, keep the unparsed tail (the
    /// server loop's `InputTail`: parsed in place when there is no tail, freed once empty).
    fn received(&mut self, index: usize, n: usize) {
        self.arrived_ns = self.shared.now_ns();
        let mut input = std::mem::take(&mut self.conns[index].input);
        let buf = std::mem::take(&mut self.read_buf);
        let intact = input.offer(&buf[..n], |bytes| match self.parse_replies(index, bytes) {
            Some(used) => (used, true),
            None => (0, false),
        });
        self.read_buf = buf;
        if intact {
            self.conns[index].input = input;
        } else {
            self.kill(index, ErrorKind::Protocol); // its input is dropped with `input`
        }
        // Bytes count toward the measurement once this thread has started measured ops.
        self.stats_for(self.issued_measured > 0).counts.bytes_received += n as u64;
    }

    /// Parses complete replies from `input`; returns bytes consumed, or `None` when the
    /// stream broke.
    fn parse_replies(&mut self, index: usize, input: &[u8]) -> Option<usize> {
        let (protocol, family) =
            (self.shared.config.protocol, self.shared.config.workload.family());
        let mut used = 0;
        // Bounded: each round consumes one reply, at least one byte.
        while let Some(&part) = self.conns[index].pending.front() {
            let rest = &input[used..];
            if part.follow_up {
                match self.follow_up_reply(index, part, rest) {
                    Some(0) => break,
                    Some(n) => used += n,
                    None => return None,
                }
                continue;
            }
            if self.slot_map.is_some() {
                match self.cluster_reply(index, part, rest) {
                    ClusterReply::Other => {}
                    ClusterReply::Incomplete => break,
                    ClusterReply::Broken => return None,
                    ClusterReply::Used(n) => {
                        used += n;
                        continue;
                    }
                }
            }
            let conn = &self.conns[index];
            let keys = conn.keys.iter().copied().take(part.key_count as usize);
            let format = &self.shared.format;
            let parsed = if family.structure == Structure::String {
                client::parse(protocol, part.kind, keys, format, rest)
            } else {
                client::family::parse_following(
                    family,
                    part.kind,
                    keys,
                    format,
                    rest,
                    &mut self.follow,
                )
            };
            match parsed {
                Parsed::Incomplete => break,
                Parsed::Broken(_why) => return None,
                Parsed::Reply { tally, error, used: n } => {
                    used += n;
                    let conn = &mut self.conns[index];
                    conn.pending.pop_front();
                    match part.key_count {
                        1 => drop(conn.keys.pop_front()),
                        n => drop(conn.keys.drain(..n as usize)),
                    }
                    if self.follow.commands > 0 {
                        self.send_follow_ups(index, part);
                    }
                    self.part_done(part.slot, tally, error);
                }
            }
        }
        if self.conns[index].pending.is_empty() && used < input.len() {
            return None; // bytes nobody asked for
        }
        Some(used)
    }

    /// Redis Cluster: takes ASKING's reply or a redirect off the front of `input` (the
    /// reply to `part`, the oldest on connection `index`), or leaves the reply to the
    /// ordinary parser.
    fn cluster_reply(&mut self, index: usize, part: Part, input: &[u8]) -> ClusterReply {
        if part.asking {
            let (error, used) = match parse_reply(input) {
                Ok((Value::Simple(b"OK"), used)) => (None, used),
                Ok((_, used)) => (Some(ErrorKind::ServerError), used),
                Err(ParseError::Incomplete) => return ClusterReply::Incomplete,
                Err(_) => return ClusterReply::Broken,
            };
            self.conns[index].pending.pop_front();
            if let Some(error) = error {
                let measured = self.slots[part.slot as usize].measured;
                self.stats_for(measured).counts.errors[error.index()] += 1;
            }
            return ClusterReply::Used(used);
        }
        let (redirect, used) = match cluster::front(input) {
            Front::Other => return ClusterReply::Other,
            Front::Incomplete => return ClusterReply::Incomplete,
            Front::Redirect(redirect, used) => (Some(redirect), used),
            Front::Malformed(used) => (None, used),
        };
        let conn = &mut self.conns[index];
        conn.pending.pop_front();
        self.part_keys.clear();
        self.part_keys.extend(conn.keys.drain(..part.key_count as usize));
        match redirect {
            Some(redirect) => self.follow(index, part, &redirect),
            None => self.part_failed(part, ErrorKind::Redirect),
        }
        ClusterReply::Used(used)
    }

    /// Sends `part` (its keys in `part_keys`) again where `redirect` says, from the same
    /// client; a MOVED also corrects the slot map.
    fn follow(&mut self, index: usize, part: Part, redirect: &Redirect) {
        let measured = self.slots[part.slot as usize].measured;
        let counts = &mut self.stats_for(measured).counts;
        match redirect.kind {
            RedirectKind::Moved => counts.moved += 1,
            RedirectKind::Ask => counts.ask += 1,
        }
        if part.redirects >= REDIRECTS_MAX {
            return self.part_failed(part, ErrorKind::Redirect);
        }
        let map = self.slot_map.as_ref().expect("cluster mode");
        let asked = map.nodes[index / self.connections];
        let target = cluster::resolve(&redirect.target, asked);
        let Some(node) = target.ok().and_then(|addr| self.node_for(addr)) else {
            return self.part_failed(part, ErrorKind::Redirect);
        };
        if redirect.kind == RedirectKind::Moved {
            self.slot_map.as_mut().expect("cluster mode").set_owner(redirect.slot, node);
            self.refresh(self.slot_map.as_ref().expect("cluster mode").nodes[node]);
        }
        let client = index % self.connections;
        let target = node * self.connections + client;
        if self.conns[target].dead {
            return self.part_failed(part, ErrorKind::Connection);
        }
        if redirect.kind == RedirectKind::Ask {
            let conn = &mut self.conns[target];
            compose_command(&[b"ASKING"], conn.out.buf_mut());
            let asking = Part { key_count: 0, asking: true, ..part };
            conn.pending.push_back(asking);
        }
        let set = self.slots[part.slot as usize].set;
        self.send_part(target, part.slot, part.kind, set, part.redirects + 1);
    }

    /// The node index of `addr`, connecting this thread's clients to it when it is new;
    /// `None` when it cannot be reached (the map then does not learn it).
    fn node_for(&mut self, addr: SocketAddr) -> Option<usize> {
        let map = self.slot_map.as_mut().expect("cluster mode");
        if let Some(node) = map.nodes.iter().position(|n| *n == addr) {
            return Some(node);
        }
        // Blocking, but rare: a node joins the map once per thread.
        let mut fresh = Vec::with_capacity(self.connections);
        let config = &self.shared.config;
        connect_clients(addr, config, &self.poller, self.conns.len(), &mut fresh).ok()?;
        self.conns.append(&mut fresh);
        self.server_count += 1;
        let map = self.slot_map.as_mut().expect("cluster mode");
        let node = usize::from(map.node_index_or_add(addr));
        assert_eq!(self.conns.len(), map.nodes.len() * self.connections, "server-major layout");
        Some(node)
    }

    /// Fetches the slot map again from `from` after a MOVED, at most every
    /// [`REFRESH_INTERVAL`]; a fetch that fails keeps the map (with the MOVED applied).
    fn refresh(&mut self, from: SocketAddr) {
        let now = self.shared.now_ns();
        let interval = REFRESH_INTERVAL.as_nanos() as u64;
        if self.refreshed_ns.is_some_and(|at| now < at.saturating_add(interval)) {
            return;
        }
        self.refreshed_ns = Some(now);
        let Ok(mut ranges) = cluster::fetch_slots(from) else { return };
        // A primary that cannot be reached keeps its slots' old owners.
        ranges.retain(|range| self.node_for(range.primary).is_some());
        self.slot_map.as_mut().expect("cluster mode").apply(&ranges);
    }

    /// A part that cannot be answered: counted as an error, its op goes on without it.
    fn part_failed(&mut self, part: Part, why: ErrorKind) {
        let misses = if part.kind == OpKind::Get { part.key_count } else { 0 };
        self.part_done(part.slot, Tally { misses, ..Tally::default() }, Some(why));
    }

    fn part_done(&mut self, slot: u32, tally: Tally, error: Option<ErrorKind>) {
        let s = &mut self.slots[slot as usize];
        s.tally.hits += tally.hits;
        s.tally.misses += tally.misses;
        s.tally.corrupt += tally.corrupt;
        s.parts_left -= 1;
        let s = *s;
        if let Some(error) = error {
            self.stats_for(s.measured).counts.errors[error.index()] += 1;
        }
        if s.parts_left == 0 {
            self.op_done(slot, s);
        }
    }

    fn op_done(&mut self, slot: u32, s: Slot) {
        let now = self.arrived_ns;
        let stats = self.stats_for(s.measured);
        match s.kind {
            Some(OpKind::Get) => {
                stats.counts.gets += 1;
                stats.counts.get_keys += u64::from(s.key_count);
            }
            Some(OpKind::Set) => stats.counts.sets += 1,
            None => unreachable!("a finished op has a kind"),
        }
        stats.counts.hits += u64::from(s.tally.hits);
        stats.counts.misses += u64::from(s.tally.misses);
        stats.counts.corrupt += u64::from(s.tally.corrupt);
        stats.latency_ns.saturating_record(now.saturating_sub(s.start_ns));
        self.in_flight -= 1;
        if !self.client_dead[slot as usize / self.pipeline] {
            self.ready.push_back(slot);
        }
    }

    /// Closes a connection and retires its client; its ops in flight fail.
    fn kill(&mut self, index: usize, why: ErrorKind) {
        let conn = &mut self.conns[index];
        if conn.dead {
            return;
        }
        conn.dead = true;
        let _ = self.poller.delete(&conn.stream);
        let _ = conn.stream.shutdown(std::net::Shutdown::Both);
        let parts: Vec<Part> = conn.pending.drain(..).collect();
        conn.keys.clear();
        let client = index % self.connections;
        self.client_dead[client] = true;
        self.ready.retain(|&slot| slot as usize / self.pipeline != client);
        self.stats_for(self.issued_measured > 0).counts.errors[why.index()] += 1;
        for part in parts.into_iter().filter(|p| !p.asking) {
            let s = &mut self.slots[part.slot as usize];
            s.parts_left -= 1;
            if s.parts_left == 0 {
                self.in_flight -= 1;
            }
        }
        self.shared.note_failure(why);
    }
}
