//! One receive loop for every wire dialect: memcached text/meta, memcached binary, Redis
//! RESP, and memcached over UDP (a wrapper around the first two, in `udp.rs`).
//!
//! A dialect knows how to cut one request off the front of its input ([`Dialect::parse`],
//! which also answers what it refuses) and how to run it ([`Dialect::execute`]); the loop,
//! [`serve`], owns everything they share: the position in the input, the turn's budget
//! (`-R` and the output threshold), and what each [`Flow`] means for the connection
//! (close, stream, yield a long reply, stop reading behind a blocked command). It is generic
//! over the dialect, so each one gets its own monomorphised copy: no dynamic dispatch per
//! request.

mod memcache;
mod resp;

pub use memcache::{Binary, Ctx, Framing, MemcacheConn, Text};
pub use resp::Resp;

use exec::{counters, Counters, Flow};
use rt::After;

/// What a dialect did with the front of the input without a request to execute.
pub enum Step {
    /// `used` bytes dealt with: a login step answered, a refused request answered or its
    /// bytes skipped. `counts`: whether it counts as a request against the turn's budget.
    Done { used: usize, counts: bool },
    /// The rest is an unfinished request: wait for more bytes.
    Incomplete,
    /// Send what is in the output, then hang up; the rest of the input is dropped (the
    /// dialect has answered and counted the refusal).
    HangUp,
    /// The stream cannot be framed any more: a protocol error; hang up.
    Broken,
}

/// A wire dialect: the part of a receive loop that differs between protocols.
pub trait Dialect {
    /// A parsed request; it borrows the input.
    type Request<'a>;
    /// Why the codec could not parse a request.
    type Error;
    /// What the parser reuses from one request to the next (RESP's argument spans): a
    /// local of the loop while a batch runs, so it moves without touching memory.
    type Scratch: Default;

    /// What comes before parsing the front of `input` (never empty), if anything: the rest
    /// of a refused request skipped, a login step. Answers go to `out`.
    fn intercept(&mut self, _input: &[u8], _out: &mut Vec<u8>) -> Option<Step> {
        None
    }

    /// Parses the request at the front of `input` (never empty), and its length. The
    /// codec's own result, so the request is not moved again on the hot path.
    fn parse<'a>(
        &mut self,
        input: &'a [u8],
        scratch: Self::Scratch,
    ) -> Result<(Self::Request<'a>, usize), Self::Error>;

    /// Answers what `parse` refused (into `out`) and says what to do with its bytes.
    fn refuse(&mut self, error: Self::Error, input: &[u8], out: &mut Vec<u8>) -> Step;

    /// A hint before a request runs, given the input after it: the next request's key (a
    /// pipelined get's) may have its index bucket prefetched, so its read finds the line
    /// loaded. Changes nothing; by default nothing happens.
    fn read_ahead(&mut self, _next: &[u8]) {}

    /// Whether the request only reads the store (a plain get): a run of them in one batch
    /// shares one epoch pin ([`store::ReadPin`]), dropped before any other request runs.
    fn reads_only(&self, _request: &Self::Request<'_>) -> bool {
        false
    }

    /// Runs a parsed request `used` bytes long, appending its reply to `out`.
    fn execute(&mut self, request: &Self::Request<'_>, used: usize, out: &mut Vec<u8>) -> Flow;

    /// Whether the request counts against the turn's `-R` budget.
    fn counts(&self, _request: &Self::Request<'_>) -> bool {
        true
    }

    /// Hands the executed request back, for its scratch.
    fn recycle(&mut self, _request: Self::Request<'_>) -> Self::Scratch {
        Self::Scratch::default()
    }

    /// The scratch for a batch, and back after it.
    fn lend_scratch(&mut self) -> Self::Scratch {
        Self::Scratch::default()
    }
    fn keep_scratch(&mut self, _scratch: Self::Scratch) {}

    /// Bytes of replies this batch lent rather than wrote to `out` (`store::loans`): they
    /// count towards the batch's output budget all the same.
    #[inline(always)]
    fn lent_bytes(&self) -> usize {
        0
    }

    /// Whether `request` must wait for the next call: the batch holds loans (a read pin)
    /// and the request is not one that may run behind them. Reads that lend do; so do plain
    /// one-key writes, which wait for nothing but memory (a write that needs memory back
    /// has the loans copied and their pin let go first: `store::loans`). A request that may
    /// wait for a lock another thread holds while it waits for a grace period (the gate, the
    /// replication journal), or that cuts or moves replies already written, waits.
    #[inline(always)]
    fn waits_for_loans(&self, _request: &Self::Request<'_>) -> bool {
        false
    }

    /// memcached `watch` ([`Flow::Watch`]): true if the connection became a watcher, which
    /// ends the batch with the rest of the input dropped and the connection streaming.
    /// `replies_pending`: this batch has replies not sent yet. By default nothing happens.
    fn watch(&mut self, _kinds: u32, _out: &mut Vec<u8>, _replies_pending: bool) -> bool {
        false
    }
}

/// How much one receive call may do before it yields to the loop's other connections.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Requests executed (`-R`).
    pub requests: usize,
    /// Output produced by this call (the loop's pause threshold: more would only be
    /// buffered, not sent).
    pub output_bytes: usize,
}

impl Budget {
    /// No yielding: a datagram is served whole.
    pub const UNLIMITED: Budget = Budget { requests: usize::MAX, output_bytes: usize::MAX };

    /// Counts only this call's output: `out` may still hold earlier replies (sent or not),
    /// and a call that yields before executing anything would never make progress.
    fn spent(&self, requests: usize, produced_bytes: usize) -> bool {
        requests >= self.requests || produced_bytes >= self.output_bytes
    }
}

/// Serves every whole request at the front of `input` in `dialect`, appending the replies
/// to `out` (so every reply of the batch leaves in one send). Returns the bytes consumed
/// and what the connection does next; input left unconsumed is offered again.
#[inline(always)]
pub fn serve<D: Dialect>(
    dialect: &mut D,
    counters: &Counters,
    budget: Budget,
    input: &[u8],
    out: &mut Vec<u8>,
) -> (usize, After) {
    let scratch = dialect.lend_scratch();
    let (consumed, after, scratch) = serve_batch(dialect, counters, budget, input, out, scratch);
    dialect.keep_scratch(scratch);
    (consumed, after)
}

#[inline(always)]
fn serve_batch<D: Dialect>(
    dialect: &mut D,
    counters: &Counters,
    budget: Budget,
    input: &[u8],
    out: &mut Vec<u8>,
    mut scratch: D::Scratch,
) -> (usize, After, D::Scratch) {
    let mut pos = 0;
    let mut requests = 0;
    let out_start = out.len();
    // Held across consecutive reads of this batch only: the batch is bounded by the budget,
    // and the pin is dropped on return, before the loop waits.
    let mut pin = None;
    while pos < input.len() {
        if budget.spent(requests, out.len() - out_start + dialect.lent_bytes()) {
            counters::bump(&counters.conn_yields, 1);
            return (pos, After::Yield, scratch);
        }
        let rest = &input[pos..];
        let step = if let Some(step) = dialect.intercept(rest, out) {
            step
        } else {
            // Borrowed in place, not moved out (see `recycle`).
            let parsed = dialect.parse(rest, scratch);
            match parsed {
                Ok((ref request, used)) => {
                    if dialect.waits_for_loans(request) {
                        counters::bump(&counters.conn_yields, 1);
                        return (pos, After::Yield, recycle(dialect, parsed));
                    }
                    let counts = dialect.counts(request);
                    let more = used < rest.len();
                    hold_pin(&mut pin, dialect.reads_only(request), more);
                    dialect.read_ahead(&rest[used..]);
                    let flow = dialect.execute(request, used, out);
                    scratch = recycle(dialect, parsed);
                    if flow != Flow::Continue {
                        let replies_pending = out.len() > out_start;
                        match ending(dialect, flow, out, replies_pending, counters) {
                            Some(End::Before(after)) => return (pos, after, scratch),
                            Some(End::Through(after)) => return (pos + used, after, scratch),
                            Some(End::All(after)) => return (input.len(), after, scratch),
                            None => {}
                        }
                    }
                    Step::Done { used, counts }
                }
                Err(error) => {
                    // The parser keeps nothing from a request it refused.
                    scratch = D::Scratch::default();
                    dialect.refuse(error, rest, out)
                }
            }
        };
        match step {
            Step::Done { used, counts } => {
                pos += used;
                requests += usize::from(counts);
            }
            Step::Incomplete => break,
            Step::HangUp => return (input.len(), After::CloseAfterFlush, scratch),
            Step::Broken => {
                counters::bump(&counters.protocol_errors, 1);
                return (input.len(), After::CloseAfterFlush, scratch);
            }
        }
    }
    (pos, After::Continue, scratch)
}

/// The scratch back from a parsed request ([`Dialect::recycle`]). The batch matches the
/// parse's result in place and borrows the request from it, so the result moves only here,
/// after the request ran (a memcached request is large: moving it out of the result before
/// it ran was a `memcpy` of about 30 instructions a request, callgrind).
#[inline(always)]
fn recycle<'a, D: Dialect>(
    dialect: &mut D,
    parsed: Result<(D::Request<'a>, usize), D::Error>,
) -> D::Scratch {
    match parsed {
        Ok((request, _)) => dialect.recycle(request),
        Err(_) => D::Scratch::default(),
    }
}

/// Takes the batch's read pin before a read that more input follows (a lone read pins by
/// itself), keeps it across reads, drops it before anything else.
#[inline(always)]
fn hold_pin(pin: &mut Option<store::ReadPin>, reads_only: bool, more: bool) {
    if !reads_only {
        if pin.is_some() {
            *pin = None;
        }
    } else if more && pin.is_none() {
        *pin = Some(store::ReadPin::new());
    }
}

/// Where a batch ends after a request, and what follows.
enum End {
    /// Before the request: it stays unconsumed and runs again.
    Before(After),
    /// Just after it.
    Through(After),
    /// The rest of the input is dropped.
    All(After),
}

/// What a request's flow other than `Continue` means for its batch (`None`: nothing, go
/// on with the next request).
#[inline(always)]
fn ending<D: Dialect>(
    dialect: &mut D,
    flow: Flow,
    out: &mut Vec<u8>,
    replies_pending: bool,
    counters: &Counters,
) -> Option<End> {
    match flow {
        Flow::Continue => None,
        Flow::Close => Some(End::Through(After::CloseAfterFlush)),
        // Unfinished (a multiget's chunk): its request runs again next turn, once the loop
        // has sent (or paused on) this chunk.
        Flow::Again => {
            counters::bump(&counters.conn_yields, 1);
            Some(End::Before(After::Yield))
        }
        // What follows waits, unread, until the reply comes (`Handler::stream`).
        Flow::Block => Some(End::Through(After::Stream)),
        // CLIENT PAUSE: this command and what follows wait, unread (`Handler::stream`).
        Flow::Postpone => Some(End::Before(After::Stream)),
        // Whatever followed a `watch` that took is not read, as in memcached.
        Flow::Watch(kinds) => {
            dialect.watch(kinds, out, replies_pending).then_some(End::All(After::Stream))
        }
    }
}
