//! A replica being fed: first (after a full resynchronisation) the RDB a thread writes
//! into a bounded pipe, then the stream from the backlog, from the offset the RDB's walk
//! began at. The connection's worker drains it when woken ([`Feed::drain`]); the feed
//! asks for a wake only when none is pending, so a burst of writes costs one wake.

use std::{
    collections::VecDeque,
    io::Write,
    sync::{
        atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed},
        Arc,
    },
    time::Duration,
};

use parking_lot::{Condvar, Mutex};

use crate::Shared;

/// How much one drain moves into the connection's output.
const DRAIN_BYTES: usize = 1 << 20;
/// How much RDB the pipe holds before its writer waits.
const PIPE_BYTES: usize = 16 << 20;
/// The size of the pipe's chunks.
const CHUNK_BYTES: usize = 64 << 10;

/// One replica connection, as the primary feeds it.
#[derive(Debug)]
pub struct Feed {
    pub(crate) worker: usize,
    pub(crate) ip: String,
    /// REPLCONF listening-port.
    pub(crate) port: AtomicU32,
    /// The next offset to send once online (and, while the RDB goes, the oldest offset the
    /// backlog must keep for it).
    position: AtomicU64,
    phase: Mutex<Phase>,
    /// REPLCONF ACK: the offset it has processed, and when it said so (Unix ms).
    pub(crate) ack_offset: AtomicU64,
    pub(crate) ack_ms: AtomicU64,
    wake_pending: AtomicBool,
    gone: AtomicBool,
    /// The phase is `Bulk` (read without the phase's lock).
    bulk: AtomicBool,
}

#[derive(Debug)]
enum Phase {
    /// The RDB goes first.
    Bulk(Arc<Pipe>),
    /// The RDB went, ending with its EOF mark: the stream waits for the replica's first
    /// REPLCONF ACK, as Redis's does. A replica finds the mark only at the end of a read;
    /// stream bytes right behind it would hide it.
    AwaitAck,
    Online,
}

/// What a drain found.
#[derive(Debug, PartialEq, Eq)]
pub enum Drained {
    /// Output was added (or none waits); more may follow at the next wake.
    Open,
    /// The replica can no longer be fed (the RDB failed, or it fell behind the backlog):
    /// close the connection.
    Close,
}

impl Feed {
    pub(crate) fn new(worker: usize, ip: String, port: u32, position: u64) -> Feed {
        Feed {
            worker,
            ip,
            port: AtomicU32::new(port),
            position: AtomicU64::new(position),
            phase: Mutex::new(Phase::Online),
            ack_offset: AtomicU64::new(0),
            ack_ms: AtomicU64::new(0),
            wake_pending: AtomicBool::new(false),
            gone: AtomicBool::new(false),
            bulk: AtomicBool::new(false),
        }
    }

    /// A replica's copy is asked for but not begun: nothing goes until it begins.
    pub(crate) fn await_copy(&self) {
        *self.phase.lock() = Phase::Bulk(Arc::new(Pipe::default()));
        self.bulk.store(true, Relaxed);
    }

    /// A replica's copy begins now: the stream follows from `position`.
    pub(crate) fn restart_at(&self, position: u64) {
        self.position.store(position, Relaxed);
    }

    /// The feed, to start at offset `position`.
    pub(crate) fn at(self, position: u64) -> Feed {
        self.position.store(position, Relaxed);
        self
    }

    pub(crate) fn position(&self) -> u64 {
        self.position.load(Relaxed)
    }

    pub(crate) fn is_gone(&self) -> bool {
        self.gone.load(Relaxed)
    }

    /// Whether it is still receiving its RDB (INFO's `state=send_bulk`).
    pub(crate) fn in_bulk(&self) -> bool {
        self.bulk.load(Relaxed)
    }

    /// True when the caller should wake the worker (no wake was pending).
    pub(crate) fn ask_wake(&self) -> bool {
        !self.wake_pending.swap(true, Relaxed)
    }

    /// This server stopped feeding replicas (it follows a primary now): the next drain
    /// closes the connection.
    pub(crate) fn mark_gone(&self) {
        self.gone.store(true, Relaxed);
        if let Phase::Bulk(pipe) = &*self.phase.lock() {
            pipe.abandon();
        }
    }

    /// REPLCONF ACK: a replica that took its copy is fed the stream from now on.
    pub(crate) fn acked(&self) -> bool {
        let mut phase = self.phase.lock();
        if matches!(*phase, Phase::AwaitAck) {
            *phase = Phase::Online;
            return true;
        }
        false
    }

    /// The connection closed: stop its RDB writer, and let the backlog forget it.
    pub fn close(&self, shared: &Shared) {
        self.gone.store(true, Relaxed);
        if let Phase::Bulk(pipe) = &*self.phase.lock() {
            pipe.abandon();
        }
        let repl = &shared.core.repl;
        repl.journal.lock().feeds.retain(|f| !std::ptr::eq(&**f, self));
    }

    /// Moves what waits for the replica into `out` (up to about a megabyte a call; if more
    /// waits, the worker is woken again).
    pub fn drain(&self, shared: &Shared, out: &mut Vec<u8>) -> Drained {
        self.wake_pending.store(false, Relaxed);
        if self.is_gone() {
            return Drained::Close;
        }
        let budget = DRAIN_BYTES.saturating_sub(out.len());
        // The phase's lock is never held while the journal's is taken (the journal's
        // holders read `in_bulk`, not the phase).
        let pipe = match &*self.phase.lock() {
            Phase::Bulk(pipe) => Some(Arc::clone(pipe)),
            Phase::AwaitAck => return Drained::Open,
            Phase::Online => None,
        };
        let more = match pipe {
            Some(pipe) => match pipe.take(budget, out) {
                PipeRead::Failed => return Drained::Close,
                PipeRead::More => true,
                PipeRead::Finished => {
                    *self.phase.lock() = Phase::AwaitAck;
                    self.bulk.store(false, Relaxed);
                    false
                }
                PipeRead::Empty => false,
            },
            None => {
                let journal = shared.core.repl.journal.lock();
                let Some(backlog) = &journal.backlog else { return Drained::Open };
                let from = self.position();
                match backlog.copy_from(from, budget, out) {
                    None => return Drained::Close,
                    Some(n) => {
                        let next = from + n as u64;
                        self.position.store(next, Relaxed);
                        next <= backlog.end()
                    }
                }
            }
        };
        if more && self.ask_wake() {
            shared.core.repl.wake(self.worker, true);
        }
        Drained::Open
    }

    /// Starts a full resynchronisation: the RDB comes first, written by a thread of its own
    /// (`write` gets a writer into the pipe and writes the whole payload).
    pub(crate) fn start_bulk(
        self: &Arc<Self>,
        shared: &Arc<Shared>,
        write: impl FnOnce(&Shared, &mut PipeWriter) -> std::io::Result<()> + Send + 'static,
    ) -> std::io::Result<()> {
        let pipe = Arc::new(Pipe::default());
        *self.phase.lock() = Phase::Bulk(Arc::clone(&pipe));
        self.bulk.store(true, Relaxed);
        let (feed, shared) = (Arc::clone(self), Arc::clone(shared));
        std::thread::Builder::new().name("spinel-repl-rdb".into()).spawn(move || {
            let mut writer =
                PipeWriter { pipe, feed, shared: Arc::clone(&shared), buf: Vec::new() };
            let written = write(&shared, &mut writer).and_then(|()| writer.flush());
            writer.pipe.finish(written.is_ok());
            writer.wake();
        })?;
        Ok(())
    }
}

/// The RDB on its way from its writer thread to the replica's worker.
#[derive(Debug, Default)]
pub(crate) struct Pipe {
    state: Mutex<PipeState>,
    space: Condvar,
}

#[derive(Debug, Default)]
struct PipeState {
    chunks: VecDeque<Vec<u8>>,
    bytes: usize,
    done: bool,
    failed: bool,
    abandoned: bool,
}

enum PipeRead {
    More,
    Empty,
    Finished,
    Failed,
}

impl Pipe {
    fn take(&self, budget: usize, out: &mut Vec<u8>) -> PipeRead {
        let mut state = self.state.lock();
        let mut moved = 0;
        while moved < budget {
            let Some(chunk) = state.chunks.pop_front() else { break };
            moved += chunk.len();
            state.bytes -= chunk.len();
            out.extend_from_slice(&chunk);
        }
        self.space.notify_all();
        match (state.chunks.is_empty(), state.done, state.failed) {
            (true, true, true) => PipeRead::Failed,
            (true, true, false) => PipeRead::Finished,
            (false, _, _) => PipeRead::More,
            (true, false, _) if moved > 0 => PipeRead::More,
            (true, false, _) => PipeRead::Empty,
        }
    }

    fn finish(&self, ok: bool) {
        let mut state = self.state.lock();
        state.done = true;
        state.failed = !ok;
    }

    fn abandon(&self) {
        self.state.lock().abandoned = true;
        self.space.notify_all();
    }
}

/// Where the RDB writer thread writes: chunks into the pipe, waiting while it is full.
pub(crate) struct PipeWriter {
    pipe: Arc<Pipe>,
    feed: Arc<Feed>,
    shared: Arc<Shared>,
    buf: Vec<u8>,
}

impl PipeWriter {
    fn push(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::take(&mut self.buf);
        let mut state = self.pipe.state.lock();
        while state.bytes >= PIPE_BYTES && !state.abandoned {
            self.pipe.space.wait_for(&mut state, Duration::from_millis(100));
        }
        if state.abandoned {
            return Err(std::io::Error::new(std::io::ErrorKind::BrokenPipe, "replica gone"));
        }
        state.bytes += chunk.len();
        state.chunks.push_back(chunk);
        drop(state);
        self.wake();
        Ok(())
    }

    fn wake(&self) {
        if self.feed.ask_wake() {
            self.shared.core.repl.wake(self.feed.worker, false);
        }
    }
}

impl Write for PipeWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= CHUNK_BYTES {
            self.push()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.push()
    }
}
