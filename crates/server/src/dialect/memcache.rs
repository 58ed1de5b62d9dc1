//! memcached's two stream dialects: text/meta and binary.

use exec::{conns::ConnState, counters, memcache::MemcacheView, Counters, Flow};
use proto_memcache::{binary::BinRequest, text::ahead::read_ahead_key};

use super::{Dialect, Step};

const WATCH_AFTER_PIPELINE: &[u8] = b"ERROR cannot pipeline other commands before watch\r\n";

/// A memcached connection's state (TCP, Unix socket, or a UDP port's one session).
pub struct MemcacheConn {
    pub session: exec::memcache::Session,
    /// Bytes of a rejected data block still to be swallowed (memcached stays in frame).
    pub swallow_bytes: usize,
    /// Set from the first byte the connection sends (memcached's negotiation).
    pub framing: Framing,
    /// After memcached `watch`: the connection only streams log lines; its input is read
    /// and dropped (so a close is noticed).
    pub watcher: Option<exec::watch::WatcherId>,
    /// The listener it came from.
    pub tag: u8,
}

/// The dialect of a memcached connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    Undecided,
    Text,
    Binary,
}

impl MemcacheConn {
    pub fn new(session: exec::memcache::Session, tag: u8) -> MemcacheConn {
        MemcacheConn { session, swallow_bytes: 0, framing: Framing::Undecided, watcher: None, tag }
    }

    /// Drops up to `available` bytes of a rejected data block still arriving, so both
    /// dialects stay in frame the same way.
    /// `None` when nothing is left to drop.
    #[inline(always)]
    fn swallow(&mut self, available: usize) -> Option<Step> {
        if self.swallow_bytes == 0 {
            return None;
        }
        let used = self.swallow_bytes.min(available);
        self.swallow_bytes -= used;
        Some(Step::Done { used, counts: false })
    }
}

/// What both memcached dialects run with.
pub struct Ctx<'a> {
    /// What memcached's requests may touch of the server's state.
    pub view: MemcacheView<'a>,
    pub counters: &'a Counters,
    pub limits: &'a proto_memcache::Limits,
}

/// Text and meta commands.
pub struct Text<'a> {
    ctx: Ctx<'a>,
    conn: &'a mut MemcacheConn,
    /// Whether a connection that has not logged in goes through the `-Y` token login.
    login: bool,
    /// Where this batch's reply starts while unauthenticated (see exec::memcache::auth).
    auth_reply_at: Option<usize>,
    /// A multiget's reply is made in chunks of about this many bytes (0: in one piece).
    reply_chunk_bytes: usize,
    /// The request whose home bucket the read ahead started: its items are started when it
    /// is next.
    ahead: Option<Ahead>,
}

/// A request the read ahead scanned two requests early.
struct Ahead {
    /// Its address in the input (compared, never read through).
    start: usize,
    hash: store::KeyHash,
    /// Its length, if the scan saw it (see [`read_ahead_key`]).
    len: Option<usize>,
}

impl<'a> Text<'a> {
    /// A TCP (or Unix socket) connection's text dialect.
    pub fn stream(ctx: Ctx<'a>, conn: &'a mut MemcacheConn, reply_chunk_bytes: usize) -> Self {
        let login = exec::auth::text_login_offered(ctx.view);
        Text { ctx, conn, login, auth_reply_at: None, reply_chunk_bytes, ahead: None }
    }

    /// A datagram's: no login (admission is per datagram), replies made whole.
    pub fn datagram(ctx: Ctx<'a>, conn: &'a mut MemcacheConn) -> Self {
        Text { ctx, conn, login: false, auth_reply_at: None, reply_chunk_bytes: 0, ahead: None }
    }

    /// A login step for a connection that has not logged in yet.
    #[inline(never)]
    fn login_step(&mut self, input: &[u8], out: &mut Vec<u8>) -> Step {
        use exec::memcache::auth::{unauthenticated, AuthStep};
        let (view, counters, session) = (self.ctx.view, self.ctx.counters, &mut self.conn.session);
        match unauthenticated(view, counters, session, input, out, &mut self.auth_reply_at) {
            AuthStep::Used(used) => Step::Done { used, counts: true },
            AuthStep::Incomplete => Step::Incomplete,
            AuthStep::Close => Step::HangUp,
        }
    }
}

impl<'a> Dialect for Text<'a> {
    type Request<'r> = proto_memcache::Request<'r>;
    type Error = proto_memcache::ParseError;
    type Scratch = ();

    #[inline(always)]
    fn intercept(&mut self, input: &[u8], out: &mut Vec<u8>) -> Option<Step> {
        if let Some(step) = self.conn.swallow(input.len()) {
            return Some(step);
        }
        if self.login && !exec::auth::admitted(self.ctx.view, &mut self.conn.session) {
            return Some(self.login_step(input, out));
        }
        None
    }

    #[inline(always)]
    fn parse<'r>(
        &mut self,
        input: &'r [u8],
        _: (),
    ) -> Result<(Self::Request<'r>, usize), Self::Error> {
        proto_memcache::parse_request(input, self.ctx.limits)
    }

    /// Answered, and the request's bytes swallowed from the next step on.
    #[cold]
    fn refuse(&mut self, error: Self::Error, input: &[u8], out: &mut Vec<u8>) -> Step {
        use proto_memcache::ParseError;
        match error {
            ParseError::Incomplete => return Step::Incomplete,
            ParseError::Close => return Step::Broken,
            ParseError::Invalid { skip, reply, noreply } => {
                counters::bump(&self.ctx.counters.protocol_errors, 1);
                if !noreply {
                    reply.compose(out);
                }
                self.conn.swallow_bytes = skip;
            }
            ParseError::TooLarge { skip, noreply, key_start, key_len, base64_key } => {
                let key = &input[key_start..][..key_len];
                let (view, counters) = (self.ctx.view, self.ctx.counters);
                let session = &mut self.conn.session;
                exec::memcache::refuse_too_large(
                    view, counters, session, key, base64_key, noreply, out,
                );
                self.conn.swallow_bytes = skip;
            }
        }
        Step::Done { used: 0, counts: false }
    }

    /// Two steps, two requests apart: the request after next has its home index bucket
    /// started, and the next one (whose bucket was started a request ago) the items its
    /// bucket points at, so that neither the index nor the item waits for memory when it
    /// runs. Gets and sets alike: a set reads the item it replaces (its key compared).
    #[inline(always)]
    fn read_ahead(&mut self, next: &[u8]) {
        // The store's size first: one load, where the scan reads the next request.
        let store = &self.ctx.view.core().store;
        if !store.reads_ahead() {
            return;
        }
        let at = next.as_ptr() as usize;
        // The next request was scanned as the one after next a request ago: its hash and
        // length are at hand, and its bucket on its way.
        let len = match self.ahead.take() {
            Some(ahead) if ahead.start == at => {
                store.reader().prefetch_items(ahead.hash);
                ahead.len
            }
            _ => {
                let Some(first) = read_ahead_key(next) else { return };
                store.prefetch(store::KeyHash::of(first.key));
                first.len
            }
        };
        let Some(len) = len else { return };
        if let Some(second) = next.get(len..).and_then(read_ahead_key) {
            let hash = store::KeyHash::of(second.key);
            store.prefetch(hash);
            self.ahead = Some(Ahead { start: at + len, hash, len: second.len });
        }
    }

    /// `get` and `gets`: they write nothing (a `gat` touches, `mg` may vivify).
    #[inline(always)]
    fn reads_only(&self, request: &Self::Request<'_>) -> bool {
        use proto_memcache::text::RetrieveKind;
        matches!(request, proto_memcache::Request::Retrieve(r)
            if matches!(r.kind, RetrieveKind::Get | RetrieveKind::Gets))
    }

    #[inline(always)]
    fn execute(&mut self, request: &Self::Request<'_>, used: usize, out: &mut Vec<u8>) -> Flow {
        if self.reply_chunk_bytes != 0 {
            // A reply chunk at least as large as the request: a resumed multiget parses its
            // line again, and that stays a fraction of what it sends.
            self.conn.session.set_reply_chunk(self.reply_chunk_bytes.max(used));
        }
        let (view, counters) = (self.ctx.view, self.ctx.counters);
        exec::memcache::execute(view, counters, &mut self.conn.session, request, out)
    }

    #[inline(always)]
    fn lent_bytes(&self) -> usize {
        store::loans::lent_bytes()
    }

    /// Behind a loan, what reads (and may lend) runs: get, gets, an `mg` that does not
    /// touch, vivify or recache, and `mn`, which ends a run of quiet `mg`s; and the plain
    /// one-key writes (the store family, `delete`, `ms`, `md`) while
    /// [`exec::Core::writes_behind_loans`] says they may. Anything else waits.
    #[inline(always)]
    fn waits_for_loans(&self, request: &Self::Request<'_>) -> bool {
        use proto_memcache::{text::RetrieveKind, Request};
        if store::loans::lent_bytes() == 0 {
            return false;
        }
        match request {
            Request::Retrieve(r) => !matches!(r.kind, RetrieveKind::Get | RetrieveKind::Gets),
            Request::MetaGet(get) => {
                let flags = &get.flags;
                flags.update_ttl_secs.or(flags.vivify_ttl_secs).or(flags.recache_ttl_secs).is_some()
            }
            Request::MetaNoop => false,
            Request::Store(_)
            | Request::Delete { .. }
            | Request::MetaSet(_)
            | Request::MetaDelete(_) => !self.ctx.view.core().writes_behind_loans(),
            _ => true,
        }
    }

    fn watch(&mut self, kinds: u32, out: &mut Vec<u8>, replies_pending: bool) -> bool {
        if replies_pending {
            // memcached refuses a watch behind replies not yet sent.
            out.extend_from_slice(WATCH_AFTER_PIPELINE);
            return false;
        }
        self.start_watching(kinds, out)
    }
}

impl Text<'_> {
    /// Registers the connection as a watcher and answers `OK`; false, with memcached's
    /// refusal, when the table is full.
    #[cold]
    fn start_watching(&mut self, kinds: u32, out: &mut Vec<u8>) -> bool {
        let view = self.ctx.view;
        match view.memcache().watchers.add(kinds) {
            Ok(id) => {
                self.conn.watcher = Some(id);
                self.conn.session.note_activity(view, ConnState::Watch);
                out.extend_from_slice(b"OK\r\n");
                true
            }
            Err(exec::watch::TooMany) => {
                out.extend_from_slice(b"WATCHER_TOO_MANY log watcher limit reached\r\n");
                false
            }
        }
    }
}

/// Binary packets, with the codec's rejections answered as memcached does (a status packet,
/// then the packet skipped or the connection closed).
pub struct Binary<'a> {
    ctx: Ctx<'a>,
    conn: &'a mut MemcacheConn,
    /// With -S: SASL packets, and the refusal of anything else before authentication,
    /// come first.
    sasl: bool,
}

impl<'a> Binary<'a> {
    /// A TCP (or Unix socket) connection's binary dialect.
    pub fn stream(ctx: Ctx<'a>, conn: &'a mut MemcacheConn) -> Self {
        let sasl = exec::auth::sasl_offered(ctx.view);
        Binary { ctx, conn, sasl }
    }

    /// A datagram's: no SASL (admission is per datagram).
    pub fn datagram(ctx: Ctx<'a>, conn: &'a mut MemcacheConn) -> Self {
        Binary { ctx, conn, sasl: false }
    }

    /// The SASL gate: a SASL packet is served here; `None` lets the packet through.
    #[inline(never)]
    fn sasl_step(&mut self, input: &[u8], out: &mut Vec<u8>) -> Option<Step> {
        use proto_memcache::binary::sasl::{gate, Gate};
        let admitted = exec::auth::admitted(self.ctx.view, &mut self.conn.session);
        match gate(input, self.ctx.limits, admitted) {
            Ok(Gate::Sasl(request, used)) => {
                let (view, counters) = (self.ctx.view, self.ctx.counters);
                let session = &mut self.conn.session;
                exec::binary::sasl::execute(view, counters, session, &request, out);
                Some(Step::Done { used, counts: true })
            }
            Ok(Gate::Other) => None,
            Err(error) => Some(self.refuse(error, input, out)),
        }
    }
}

impl<'a> Dialect for Binary<'a> {
    type Request<'r> = BinRequest<'r>;
    type Error = proto_memcache::binary::BinParseError;
    type Scratch = ();

    #[inline(always)]
    fn intercept(&mut self, input: &[u8], out: &mut Vec<u8>) -> Option<Step> {
        if let Some(step) = self.conn.swallow(input.len()) {
            return Some(step);
        }
        match self.sasl {
            true => self.sasl_step(input, out),
            false => None,
        }
    }

    #[inline(always)]
    fn parse<'r>(
        &mut self,
        input: &'r [u8],
        _: (),
    ) -> Result<(Self::Request<'r>, usize), Self::Error> {
        proto_memcache::binary::parse_request(input, self.ctx.limits)
    }

    /// Answered with a status packet, then the packet skipped (from the next step on) or
    /// the connection closed.
    #[cold]
    fn refuse(&mut self, error: Self::Error, input: &[u8], out: &mut Vec<u8>) -> Step {
        use proto_memcache::binary::BinParseError;
        match error {
            BinParseError::Incomplete => Step::Incomplete,
            BinParseError::Close => Step::Broken,
            BinParseError::Reject { opcode, opaque, status, skip, close } => {
                let (view, counters) = (self.ctx.view, self.ctx.counters);
                let refusal = (opcode, opaque, status);
                let session = &mut self.conn.session;
                exec::binary::refuse(view, counters, session, input, refusal, out);
                if close {
                    return Step::HangUp;
                }
                self.conn.swallow_bytes = skip;
                Step::Done { used: 0, counts: false }
            }
        }
    }

    #[inline(always)]
    fn execute(&mut self, request: &Self::Request<'_>, _used: usize, out: &mut Vec<u8>) -> Flow {
        let (view, counters) = (self.ctx.view, self.ctx.counters);
        exec::binary::execute(view, counters, &mut self.conn.session, request, out)
    }

    #[inline(always)]
    fn lent_bytes(&self) -> usize {
        store::loans::lent_bytes()
    }

    /// Behind a loan, the gets (which may lend) and Noop, which ends a run of quiet gets,
    /// run, and the plain one-key writes (set, add, replace, append, prepend, delete and
    /// their quiet forms) while [`exec::Core::writes_behind_loans`] says they may; anything
    /// else waits for the next call, as in text.
    #[inline(always)]
    fn waits_for_loans(&self, request: &Self::Request<'_>) -> bool {
        use proto_memcache::binary::Opcode;
        if store::loans::lent_bytes() == 0 {
            return false;
        }
        match request.opcode {
            Opcode::Get | Opcode::GetQ | Opcode::GetK | Opcode::GetKQ | Opcode::Noop => false,
            Opcode::Set
            | Opcode::SetQ
            | Opcode::Add
            | Opcode::AddQ
            | Opcode::Replace
            | Opcode::ReplaceQ
            | Opcode::Append
            | Opcode::AppendQ
            | Opcode::Prepend
            | Opcode::PrependQ
            | Opcode::Delete
            | Opcode::DeleteQ => !self.ctx.view.core().writes_behind_loans(),
            _ => true,
        }
    }

    /// A run of quiet gets is one multiget (libmemcached ends it with a noop), as a text
    /// `get k1 k2 ...` is one request: it is served in one pass and its replies leave in one
    /// send. The output threshold still bounds it.
    fn counts(&self, request: &Self::Request<'_>) -> bool {
        use proto_memcache::binary::Opcode;
        !matches!(request.opcode, Opcode::GetQ | Opcode::GetKQ)
    }
}
