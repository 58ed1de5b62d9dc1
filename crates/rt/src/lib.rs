//! The runtime: one event loop per worker thread, driving TCP connections for a [`Handler`].
//!
//! ```text
//!   listeners (SO_REUSEPORT, one set per loop)
//!        |  accept
//!        v
//!   +-----------+  events   +------------+  bytes in   +-----------+
//!   |  driver   | --------> | event loop | ----------> |  Handler  |  parses, executes,
//!   | uring or  | <-------- |  (generic) | <---------- | (server)  |  appends replies
//!   |  epoll    |  send     +------------+  out: Vec   +-----------+
//!   +-----------+
//!   one send per connection per loop turn; one submit (io_uring) per loop turn
//! ```
//!
//! The runtime knows sockets and nothing of protocols or the store. The server implements
//! [`Handler`]; the load generator may use the same loop.
//!
//! Rules the loop keeps, whichever driver it runs on:
//! - An idle connection holds no buffer: received bytes live in the loop's shared receive
//!   buffers (io_uring provided buffers, or one scratch buffer for epoll); only the unparsed
//!   tail of a request is copied into a per-connection buffer, freed once it is consumed.
//!   Output buffers come from a per-loop pool and go back to it once sent; a drained one
//!   may stay as the connection's spare for its next reply: io_uring's for the rest of the
//!   turn in which its send completed, epoll's until the flush of the turn after (across
//!   one wait), given back then if that turn brought no reply.
//! - All input that arrived in one loop turn is handed to the handler before any reply is
//!   sent; then every connection with output gets one send.
//! - Backpressure: a connection whose unsent output reaches [`LoopConfig::output_pause_bytes`]
//!   is paused: its input is neither read nor offered until the peer has drained the output
//!   below half of that; then it resumes by itself. A client that never reads thus holds at
//!   most about the threshold plus one batch of replies, and never makes the server buffer
//!   without bound. While the process-wide [`BufferBudget`] is exceeded, the threshold drops
//!   to [`OUTPUT_PAUSE_TIGHT_BYTES`] on every loop.
//! - A connection whose unsent output passes [`LoopConfig::output_limit_bytes`] (one batch
//!   produced that much) is closed.
//! - Input tails (partly received requests) of a loop's connections together are bounded by
//!   [`LoopConfig::input_budget_bytes`]: above it, a connection whose tail grows past 4 KiB
//!   stops reading, except one that reads on until its request completes (`input_budget`).
//! - A connection idle longer than [`LoopConfig::idle_timeout`] is closed.
//! - When [`Handler::tick`] returns [`Control::Shutdown`], the loop closes its listeners,
//!   flushes pending output (bounded by a grace period) and returns.
//! - Fairness: the handler is called once per connection per delivery; it bounds its own work
//!   per call (requests per event) and returns [`After::Yield`] to get the rest of the input
//!   offered again next turn, after the other connections had theirs. While a yielded
//!   connection holds [`LoopConfig::input_hold_bytes`] of input, no more is read from it.
//! - Half-close: when the peer shuts down its sending side, every complete request already
//!   received is still executed and answered, in order; then the connection closes (an
//!   incomplete request is dropped unanswered, as memcached does).
//! - After `After::CloseAfterFlush` no more input is read or offered; queued output is sent,
//!   then the connection closes. A peer that resets loses its unsent output, and the
//!   connection's buffers are freed at once.
//! - Streaming connections ([`After::Stream`]) are offered output at every tick and, when
//!   [`LoopConfig::notifier`] is set, whenever another thread calls [`Notifier::notify`]
//!   (one eventfd wake however many notifies came before it); that output leaves in the
//!   same turn. A handler may hold a streaming connection's input back (consume none of
//!   it, as for a Redis client blocked in BLPOP); a `stream` call that answers
//!   [`After::Yield`] has it offered again next turn.
//!
//! Modules:
//! - `event_loop`: the loop, written once and generic over its driver (monomorphized): the
//!   turn, delivery, backpressure, fairness, half-close, ticks, budget, shutdown. Its module
//!   docs name the seam where a TLS session layer would sit.
//! - `driver`: the `Driver` trait and its two implementations, `driver::uring` (completions;
//!   `uring/bufring.rs`, the provided-buffer ring) and `driver::epoll` (readiness, then the
//!   system call). Each documents its turn and ownership rules at the top.
//! - `conn`: the slot table with generations and the per-connection state and flags.
//! - `buf`: [`OutBuf`], [`InputTail`] and [`DirtyList`], also used by clients that drive
//!   their own sockets, and the loop's output pool.
//! - `sys`: socket, epoll and affinity system calls; `clock`: the loop's monotonic clock in
//!   `u64` nanoseconds (two reads a turn, plain subtraction).
//! - `session`: the [`Session`] trait, a security layer (TLS) the loop puts between a
//!   connection's bytes and the handler when [`Handler::session`] gives one.
//! - `lend`: the parts of a reply a handler lent instead of copying ([`Handler::lent`]):
//!   one vectored send in the turn, the rest copied into the output; `zerocopy`: that send
//!   with `MSG_ZEROCOPY` above [`LoopConfig::zerocopy_min_bytes`], the handler's hold on
//!   the parts ([`Handler::hold_lent`]) kept until the kernel's notification.
//! - `notify`: [`Notifier`], the cross-thread wake (an eventfd behind a pending flag);
//!   `streaming`: the loop's list of streaming connections, with O(1) removal.
//!
//! Clients that open their own connections and send on their own schedule (the load
//! generator) use [`Poller`], a safe readiness wrapper, instead of [`run`], with the same
//! [`OutBuf`], [`InputTail`] and [`DirtyList`] the loop keeps per connection.
//!
//! Non-goals: a TLS implementation of its own (the handler brings a [`Session`]), UDP, timers other than the tick, cross-loop work stealing.

use std::{
    io,
    net::SocketAddr,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};

pub use buf::{DirtyList, InputTail, OutBuf, POOLED_BYTES_MAX as OUTPUT_POOL_BYTES_MAX};
pub use loop_stats::LoopStats;
pub use notify::Notifier;
pub use poll::{set_timer_slack, Event, Interest, Poller};
pub use session::{Opened, Session};
pub use zerocopy::Hold;

mod buf;
mod clock;
mod conn;
mod driver;
mod event_loop;
mod input_budget;
mod lend;
mod loop_stats;
mod notify;
mod poll;
mod session;
mod streaming;
mod sys;
mod zerocopy;

/// Which system interface a loop uses to wait for and perform I/O.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Uring,
    Epoll,
}

/// What the operator asked for (`--io`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoChoice {
    /// io_uring if the kernel offers what we need, else epoll (logged).
    Auto,
    Uring,
    Epoll,
}

/// Settings of one loop.
#[derive(Debug, Clone)]
pub struct LoopConfig {
    pub backend: Backend,
    /// Pin the loop's thread to this CPU.
    pub pin_cpu: Option<usize>,
    /// Spin on the completion queue (or epoll with zero timeout) up to this long before
    /// sleeping; 0 = never spin.
    pub busy_poll_us: u64,
    /// Close connections with no input for this long; shared, so the server can change it
    /// while the loops run (Redis `CONFIG SET timeout`, a SIGHUP reload).
    pub idle_timeout: IdleTimeout,
    /// How often [`Handler::tick`] runs (also the bound on noticing a shutdown).
    pub tick_interval: Duration,
    /// Unsent output at or above this pauses reading from the connection (backpressure).
    pub output_pause_bytes: usize,
    /// Unsent output above this closes the connection.
    pub output_limit_bytes: usize,
    /// A connection whose handler yielded is not read while it holds this much input.
    pub input_hold_bytes: usize,
    /// Partly received requests (input tails) of all the loop's connections together:
    /// above this, one connection at a time reads on (see `input_budget.rs`).
    pub input_budget_bytes: usize,
    /// How many of the loop's connections may hold a tail at once: one that would start
    /// another is closed (memcached's `-o read_buf_mem_limit`), counted in
    /// [`BufferBudget::refused_tails`].
    pub input_tails_max: usize,
    /// The process-wide bound on connection buffers, shared by every loop.
    pub buffers: Arc<BufferBudget>,
    /// io_uring: provided receive buffers, count (power of two, at most 32768) and size of
    /// each. They are shared by all connections of the loop (epoll uses one 64 KiB buffer).
    pub recv_buffers: u16,
    pub recv_buffer_bytes: u32,
    /// After [`Control::Shutdown`], how long connections may take to flush their output
    /// before they are closed regardless.
    pub shutdown_grace: Duration,
    /// Where the loop counts its busy time and wake-ups (metrics).
    pub stats: Arc<LoopStats>,
    /// Lets other threads wake the loop to offer output to its streaming connections at
    /// once ([`Notifier::notify`]), not only at the next tick. One notifier per loop.
    pub notifier: Option<Notifier>,
    /// A handler call that lent this many bytes or more sends them zero-copy
    /// (`MSG_ZEROCOPY`, see `zerocopy.rs`), holding them ([`Handler::hold_lent`]) until
    /// the kernel is done with them; 0 = never.
    pub zerocopy_min_bytes: usize,
}

impl LoopConfig {
    /// The per-connection bounds in force now (see [`OUTPUT_PAUSE_TIGHT_BYTES`]).
    pub(crate) fn bounds(&self) -> conn::Bounds {
        let mut pause_bytes = self.output_pause_bytes;
        if self.buffers.exceeded() {
            pause_bytes = pause_bytes.min(OUTPUT_PAUSE_TIGHT_BYTES);
        }
        conn::Bounds {
            pause_bytes,
            limit_bytes: self.output_limit_bytes,
            hold_bytes: self.input_hold_bytes,
            read_bytes: usize::MAX,
            zerocopy_min_bytes: self.zerocopy_min_bytes,
        }
    }
}

/// How long a connection may send nothing before it is closed, read by every loop at each
/// tick: milliseconds in one atomic, 0 for never.
#[derive(Debug, Clone, Default)]
pub struct IdleTimeout(Arc<std::sync::atomic::AtomicU64>);

impl IdleTimeout {
    pub fn new(timeout: Option<Duration>) -> IdleTimeout {
        let shared = IdleTimeout::default();
        shared.set(timeout);
        shared
    }

    /// Over milliseconds kept elsewhere too (0: never), so that another crate that cannot
    /// name this type can change it.
    pub fn sharing(ms: Arc<std::sync::atomic::AtomicU64>) -> IdleTimeout {
        IdleTimeout(ms)
    }

    /// `None`: connections are never closed for idleness. A timeout shorter than a
    /// millisecond counts as one.
    pub fn set(&self, timeout: Option<Duration>) {
        let ms = timeout.map_or(0, |t| (t.as_millis() as u64).max(1));
        self.0.store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn get(&self) -> Option<Duration> {
        match self.0.load(std::sync::atomic::Ordering::Relaxed) {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }
}

impl Default for LoopConfig {
    fn default() -> Self {
        LoopConfig {
            backend: Backend::Epoll,
            pin_cpu: None,
            busy_poll_us: 0,
            idle_timeout: IdleTimeout::default(),
            tick_interval: Duration::from_millis(100),
            output_pause_bytes: 32 * 1024,
            output_limit_bytes: 64 * 1024 * 1024,
            input_hold_bytes: 64 * 1024,
            input_budget_bytes: usize::MAX,
            input_tails_max: usize::MAX,
            buffers: Arc::new(BufferBudget::new(usize::MAX)),
            recv_buffers: 128,
            recv_buffer_bytes: 16 * 1024,
            shutdown_grace: Duration::from_secs(1),
            stats: Arc::default(),
            notifier: None,
            zerocopy_min_bytes: 0,
        }
    }
}

/// The pause threshold every loop applies while the [`BufferBudget`] is exceeded.
pub const OUTPUT_PAUSE_TIGHT_BYTES: usize = 16 * 1024;

/// The process-wide bound on what connection buffers (input, output, each loop's output
/// pool) hold. Each loop recounts its own at every tick and publishes the difference, so
/// the total is at most one tick old; growth within a tick is bounded per connection by
/// the pause threshold.
#[derive(Debug)]
pub struct BufferBudget {
    limit_bytes: usize,
    used_bytes: AtomicUsize,
    /// Connections holding an input tail, and the tails' bytes, as of each loop's last tick.
    tails: AtomicUsize,
    tail_bytes: AtomicUsize,
    /// Connections closed because their loop held [`LoopConfig::input_tails_max`] tails.
    refused_tails: AtomicUsize,
}

impl BufferBudget {
    pub fn new(limit_bytes: usize) -> BufferBudget {
        BufferBudget {
            limit_bytes,
            used_bytes: AtomicUsize::new(0),
            tails: AtomicUsize::new(0),
            tail_bytes: AtomicUsize::new(0),
            refused_tails: AtomicUsize::new(0),
        }
    }

    /// Connections holding a partly received request, and those requests' bytes, across all
    /// loops as of their last ticks.
    pub fn tails(&self) -> (usize, usize) {
        (self.tails.load(Ordering::Relaxed), self.tail_bytes.load(Ordering::Relaxed))
    }

    /// Connections closed so far for starting a tail over [`LoopConfig::input_tails_max`].
    pub fn refused_tails(&self) -> usize {
        self.refused_tails.load(Ordering::Relaxed)
    }

    pub(crate) fn count_refused_tail(&self) {
        self.refused_tails.fetch_add(1, Ordering::Relaxed);
    }

    /// Replaces this loop's tails, `*published`, by `now`.
    pub(crate) fn publish_tails(&self, published: &mut (usize, usize), now: (usize, usize)) {
        Self::replace(&self.tails, &mut published.0, now.0);
        Self::replace(&self.tail_bytes, &mut published.1, now.1);
    }

    fn replace(total: &AtomicUsize, published: &mut usize, now: usize) {
        if now >= *published {
            total.fetch_add(now - *published, Ordering::Relaxed);
        } else {
            total.fetch_sub(*published - now, Ordering::Relaxed);
        }
        *published = now;
    }

    /// Bytes held by connection buffers across all loops, as of their last ticks.
    pub fn used_bytes(&self) -> usize {
        self.used_bytes.load(Ordering::Relaxed)
    }

    pub fn limit_bytes(&self) -> usize {
        self.limit_bytes
    }

    pub(crate) fn exceeded(&self) -> bool {
        self.used_bytes() > self.limit_bytes
    }

    /// Replaces this loop's share, `*published`, by `now_bytes`.
    pub(crate) fn publish(&self, published: &mut usize, now_bytes: usize) {
        Self::replace(&self.used_bytes, published, now_bytes);
    }
}

/// A listening socket handed to a loop; `tag` tells the handler which port accepted.
pub struct Listener {
    pub socket: ListenSocket,
    pub tag: u32,
}

/// What a loop accepts on: TCP, or a Unix stream socket (memcached's `-s`). The loops only
/// accept on it, so both look the same to them; a Unix peer has no address.
#[derive(Debug)]
pub enum ListenSocket {
    Tcp(std::net::TcpListener),
    Unix(std::os::unix::net::UnixListener),
}

impl ListenSocket {
    pub fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        match self {
            ListenSocket::Tcp(socket) => socket.set_nonblocking(nonblocking),
            ListenSocket::Unix(socket) => socket.set_nonblocking(nonblocking),
        }
    }
}

impl std::os::fd::AsRawFd for ListenSocket {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        match self {
            ListenSocket::Tcp(socket) => socket.as_raw_fd(),
            ListenSocket::Unix(socket) => socket.as_raw_fd(),
        }
    }
}

impl From<std::net::TcpListener> for ListenSocket {
    fn from(socket: std::net::TcpListener) -> Self {
        ListenSocket::Tcp(socket)
    }
}

impl From<std::os::unix::net::UnixListener> for ListenSocket {
    fn from(socket: std::os::unix::net::UnixListener) -> Self {
        ListenSocket::Unix(socket)
    }
}

/// What the handler wants after it has seen some input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// Keep the connection; any input left over is an incomplete request (offered again
    /// when more bytes arrive).
    Continue,
    /// The handler stopped early by its own budget (requests per event) with input left:
    /// offer the rest again next turn, after the other connections. Only after consuming
    /// something, or producing output (a long reply made in chunks: the same request is
    /// offered again once the output is sent or drained below the pause threshold): a
    /// handler that yields counts its budget from the start of the call.
    Yield,
    /// Send what is in `out`, then close (memcached `quit`, a protocol error that closes).
    CloseAfterFlush,
    /// As `Continue`, and from now on the connection also streams: at every tick, and at
    /// every wake of the loop's [`Notifier`], the loop calls [`Handler::stream`] for it
    /// (memcached's `watch`: log lines that no request asks for; Redis pub/sub messages).
    /// Nothing is added while its unsent output is at the pause threshold.
    Stream,
}

/// Parts of replies a handler lent ([`Handler::lent`]): `(at, bytes)`, `at` the length
/// the output had where `bytes` belong, ascending.
pub type Lent<'a> = [(usize, &'a [u8])];

/// What [`Handler::tick`] wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    Continue,
    Shutdown,
}

/// The server side of a loop; one instance per loop, so `&mut self` needs no lock.
pub trait Handler {
    /// Per-connection state kept by the handler (keep it small: idle connections cost it).
    type Conn;

    /// A connection arrived on listener `tag`. `Err(line)` refuses it: the loop sends
    /// `line` (best effort, without waiting) and closes.
    fn accept(&mut self, tag: u32, peer: Option<SocketAddr>) -> Result<Self::Conn, &'static [u8]>;

    /// Bytes arrived. The handler parses complete requests from the start of `input`,
    /// appends their replies to `out`, and returns how many bytes it consumed (at most
    /// `input.len()`); the rest is kept and offered again, with more bytes after it, on the
    /// next call.
    fn receive(&mut self, conn: &mut Self::Conn, input: &[u8], out: &mut Vec<u8>)
        -> (usize, After);

    /// Bytes were sent (for byte counters).
    fn sent(&mut self, conn: &mut Self::Conn, bytes: usize);

    /// Right after each [`Handler::receive`]: the parts of its replies the handler lent
    /// instead of copying them into `out` (large values sent from the memory they live
    /// in). A handler that lent calls `take` once with them: `(at, bytes)`, `at` the length
    /// `out` had where `bytes` belong, ascending. Their memory must stay valid and
    /// unchanged until `take` returns (or, for a zero-copy send, while the hold that `take`
    /// took through [`Handler::hold_lent`] lives); by then the loop has sent them (one
    /// vectored send in this turn, when the connection may send now) or copied them into
    /// its output, so the peer gets the same stream as if they had been copied. A handler that lent
    /// nothing does nothing (the default).
    fn lent(&mut self, _conn: &mut Self::Conn, _take: &mut dyn FnMut(&Lent<'_>)) {}

    /// Called only within `take` of [`Handler::lent`], when the loop sends the parts
    /// zero-copy ([`LoopConfig::zerocopy_min_bytes`]): a hold that keeps their memory valid
    /// and unchanged for as long as it lives, past `take`'s return (the loop drops it once
    /// the kernel is done with the pages). None (the default): the parts are sent plainly.
    fn hold_lent() -> Option<Hold>
    where
        Self: Sized,
    {
        None
    }

    /// The connection is gone (peer closed, error, timeout, limit, shutdown).
    fn close(&mut self, conn: Self::Conn);

    /// Runs every [`LoopConfig::tick_interval`].
    fn tick(&mut self) -> Control;

    /// The loop's turn is over (its sends are made) and it is about to wait: what the
    /// handler keeps for the turn's calls only (a clock read once for all of them) ends
    /// here. By default nothing happens.
    #[inline]
    fn turn_end(&mut self) {}

    /// The socket of a connection just accepted, once, before any input: for a handler
    /// that may have to end the connection from another thread (Redis CLIENT KILL shuts
    /// its socket down, and this loop then sees the end of it). The descriptor stays open
    /// until after [`Handler::close`] returns for this connection.
    fn opened(&mut self, _conn: &mut Self::Conn, _fd: std::os::fd::RawFd) {}

    /// The security session for a connection accepted on listener `tag` (TLS), or `None`
    /// for plain bytes. Called once per connection, right after [`Handler::accept`].
    fn session(&mut self, _tag: u32) -> Option<Box<dyn Session>> {
        None
    }

    /// A connection that asked to stream ([`After::Stream`]) may append output; runs after
    /// each [`Handler::tick`] and at each wake of [`LoopConfig::notifier`], once per
    /// streaming connection whose unsent output is below the pause threshold. Returns
    /// [`After::CloseAfterFlush`] to send what `out` holds and then close (a subscriber cut
    /// off at its output limit); [`After::Yield`] to have the connection's unconsumed
    /// input offered again next turn (a handler that consumed none while it waited, as a
    /// Redis client blocked in BLPOP, takes it up once answered); any other value keeps
    /// the connection streaming.
    fn stream(&mut self, _conn: &mut Self::Conn, _out: &mut Vec<u8>) -> After {
        After::Continue
    }

    /// A streaming connection whose unsent output is at the pause threshold (so it is not
    /// offered more): `After::CloseAfterFlush` closes it at once, dropping that output.
    fn stream_paused(&mut self, _conn: &mut Self::Conn) -> After {
        After::Continue
    }
}

/// Ends a connection from any thread: its socket is shut down, and the loop that owns it
/// sees the end of its stream and closes it (calling [`Handler::close`]). The caller must
/// know that `fd` is still that connection's socket: the handler learned it in
/// [`Handler::opened`] and forgets it in [`Handler::close`], which runs before the
/// descriptor is closed; so holding a lock that `close` also takes is enough.
pub fn shutdown_connection(fd: std::os::fd::RawFd) {
    sys::shutdown(fd);
}

/// What the loops will ask of io_uring, so that the probe asks the same first: one ring per
/// loop, each with a receive-buffer ring of this size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UringNeeds {
    pub loops: usize,
    pub recv_buffers: u16,
    pub recv_buffer_bytes: u32,
}

impl Default for UringNeeds {
    /// One loop with [`LoopConfig`]'s default receive buffers.
    fn default() -> Self {
        let config = LoopConfig::default();
        UringNeeds {
            loops: 1,
            recv_buffers: config.recv_buffers,
            recv_buffer_bytes: config.recv_buffer_bytes,
        }
    }
}

/// The back end all loops use, and why `--io auto` fell back to epoll, if it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    pub backend: Backend,
    pub fallback: Option<String>,
}

/// Whether this kernel lets one loop use io_uring with the features the driver needs; the
/// error says why not (seccomp, `kernel.io_uring_disabled`, an old kernel).
pub fn probe_uring() -> Result<(), String> {
    probe_uring_for(UringNeeds::default())
}

/// Whether io_uring can carry `needs.loops` loops: their rings are all made at once, each
/// with its receive-buffer ring and one `io_uring_enter`, then torn down. The error names
/// the call refused, its errno, and who refuses it.
pub fn probe_uring_for(needs: UringNeeds) -> Result<(), String> {
    driver::uring::probe(needs)
}

/// Picks the one back end of all the loops, before any starts: `Err` only when io_uring
/// was asked for explicitly and cannot carry them.
pub fn choose_backend(choice: IoChoice, needs: UringNeeds) -> Result<Chosen, String> {
    let uring = Chosen { backend: Backend::Uring, fallback: None };
    match choice {
        IoChoice::Epoll => Ok(Chosen { backend: Backend::Epoll, fallback: None }),
        IoChoice::Uring => probe_uring_for(needs).map(|()| uring),
        IoChoice::Auto => Ok(match probe_uring_for(needs) {
            Ok(()) => uring,
            Err(why) => Chosen { backend: Backend::Epoll, fallback: Some(why) },
        }),
    }
}

/// Runs one loop on the calling thread until the handler asks for shutdown.
///
/// Errors come from setting the loop up (ring, buffer registration, epoll, pinning) or from
/// the wait system call failing; a connection's I/O errors only close that connection.
/// With io_uring, the thread that ran the loop may see one spurious EINTR from a blocking
/// call after `run` returns (ring teardown leaves it task work); loop threads normally just
/// exit.
pub fn run<H: Handler>(
    config: &LoopConfig,
    listeners: Vec<Listener>,
    handler: H,
) -> io::Result<()> {
    if config.tick_interval.is_zero() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "tick_interval must not be 0"));
    }
    if let Some(cpu) = config.pin_cpu {
        pin_current_thread(cpu)?;
    }
    match config.backend {
        Backend::Uring => event_loop::run::<driver::uring::Uring, H>(config, listeners, handler),
        Backend::Epoll => event_loop::run::<driver::epoll::Epoll, H>(config, listeners, handler),
    }
}

/// A TCP listener with SO_REUSEADDR and SO_REUSEPORT set (so each loop can have its own
/// listener on the same port), non-blocking, with the given backlog (memcached `-b`).
pub fn listen(addr: SocketAddr, backlog: u32) -> io::Result<std::net::TcpListener> {
    sys::listen(addr, backlog)
}

/// Binds `addr` without SO_REUSEPORT, and without listening, then lets it go: fails with
/// "address in use" where another server listens (a SO_REUSEPORT bind would share its
/// port), and picks the port when `addr` has port 0. The address bound.
pub fn probe_exclusive(addr: SocketAddr) -> io::Result<SocketAddr> {
    sys::probe_exclusive(addr)
}

/// Pins the calling thread to `cpu`.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    sys::pin_current_thread(cpu)
}

/// Gives the allocator's free memory back to the kernel (glibc `malloc_trim`, every arena).
/// Connection state is allocated and freed by many threads; after a burst of connections
/// has gone, the freed chunks would otherwise stay resident. Costs about a millisecond per
/// hundred MiB of heap, so call it only after such a drop.
pub fn release_free_memory() {
    sys::malloc_trim();
}

/// Fixes glibc's allocation thresholds instead of letting them adapt. By default, freeing a
/// large (mmap'ed) block raises both the mmap threshold and the trim threshold to its size,
/// so after one burst of connections the next burst's tables come from the thread arenas,
/// whose tops `malloc_trim` never shrinks: memory then stays resident after the connections
/// go. With fixed thresholds, blocks of 256 KiB and more are mapped and unmapped on free,
/// and arena tops over 1 MiB are given back.
pub fn tune_allocator() {
    sys::fix_malloc_thresholds(256 << 10, 1 << 20);
}
