//! Redis's RESP2/RESP3 requests (and inline commands).

use exec::{counters, Counters, Flow, Shared};
use proto_resp::{ArgStorage, Command, ParseError};

use super::{Dialect, Step};

/// A Redis connection's dialect for one receive call.
pub struct Resp<'a> {
    shared: &'a Shared,
    counters: &'a Counters,
    limits: &'a proto_resp::Limits,
    session: &'a mut exec::resp::Session,
    /// The argument spans and scratch of the last command, kept for the next one (an
    /// `Option`, so that lending it to the parser moves it without writing a new one).
    pub storage: Option<ArgStorage>,
}

impl<'a> Resp<'a> {
    pub fn new(
        shared: &'a Shared,
        counters: &'a Counters,
        limits: &'a proto_resp::Limits,
        session: &'a mut exec::resp::Session,
        storage: ArgStorage,
    ) -> Self {
        Resp { shared, counters, limits, session, storage: Some(storage) }
    }
}

impl Dialect for Resp<'_> {
    type Request<'r> = Command<'r>;
    type Error = ParseError;
    type Scratch = ArgStorage;

    #[inline(always)]
    fn parse<'r>(
        &mut self,
        input: &'r [u8],
        storage: ArgStorage,
    ) -> Result<(Self::Request<'r>, usize), Self::Error> {
        // A client that has not logged in while a login is required gets Redis's small
        // bounds, checked per request: an AUTH earlier in this batch lifts them.
        let mut limits = *self.limits;
        if exec::resp::auth::auth_required(self.shared, self.session) {
            limits = limits.unauthenticated();
        }
        proto_resp::parse_command_in(input, &limits, storage)
    }

    /// Inlined, with the work in a cold function that takes only what it needs, so the
    /// dialect itself stays in registers (its argument storage moves without memory).
    #[inline(always)]
    fn refuse(&mut self, error: Self::Error, input: &[u8], out: &mut Vec<u8>) -> Step {
        refuse(self.counters, self.session.protocol, error, input, out)
    }

    #[inline(always)]
    fn read_ahead(&mut self, next: &[u8]) {
        // Keys of other databases are stored prefixed: no hint. The store's size first:
        // one load, where the scan reads the next request.
        let store = &self.shared.core.store;
        if self.session.db != 0 || !store.reads_ahead() {
            return;
        }
        if let Some(key) = next_get_key(next) {
            store.prefetch(store::KeyHash::of(key));
        }
    }

    /// A two-argument GET (MGET is left out: it may wait for the store to itself).
    #[inline(always)]
    fn reads_only(&self, command: &Self::Request<'_>) -> bool {
        command.argc() == 2 && command.name().is_some_and(|name| name.eq_ignore_ascii_case(b"get"))
    }

    #[inline(always)]
    fn lent_bytes(&self) -> usize {
        store::loans::lent_bytes()
    }

    /// Behind a loan, GET and MGET run, and SET and a one-key DEL while
    /// [`exec::Core::writes_behind_loans`] says they may (they wait for nothing but
    /// memory, and the loans let go of their pin before that). Anything else waits: it may
    /// take the gate (MSET, a DEL of several keys), or cut or move replies already written
    /// (CLIENT REPLY, EXEC).
    #[inline(always)]
    fn waits_for_loans(&self, command: &Self::Request<'_>) -> bool {
        store::loans::lent_bytes() > 0
            && !reads_values(command)
            && !(writes_one_string(command) && self.shared.core.writes_behind_loans())
    }

    #[inline(always)]
    fn execute(&mut self, command: &Self::Request<'_>, _used: usize, out: &mut Vec<u8>) -> Flow {
        if command.is_empty() {
            return Flow::Continue;
        }
        exec::resp::execute(self.shared, self.counters, self.session, command, out)
    }

    #[inline(always)]
    fn recycle(&mut self, command: Self::Request<'_>) -> ArgStorage {
        command.into_storage()
    }

    fn lend_scratch(&mut self) -> ArgStorage {
        self.storage.take().unwrap_or_default()
    }

    fn keep_scratch(&mut self, storage: ArgStorage) {
        self.storage = Some(storage);
    }
}

/// SET, and DEL of one key (any case): plain one-key writes, which take no gate.
#[inline(always)]
fn writes_one_string(command: &Command<'_>) -> bool {
    command.name().is_some_and(|name| {
        name.eq_ignore_ascii_case(b"set")
            || (command.argc() == 2 && name.eq_ignore_ascii_case(b"del"))
    })
}

/// GET and MGET (any case), the commands that may lend values.
#[inline(always)]
fn reads_values(command: &Command<'_>) -> bool {
    command
        .name()
        .is_some_and(|name| name.eq_ignore_ascii_case(b"get") || name.eq_ignore_ascii_case(b"mget"))
}

/// The key of a `GET` (any case) in RESP framing at the front of `next` (`*2\r\n$3\r\nGET\r\n`
/// then the key's bulk string, whole): a hint for [`super::Dialect::read_ahead`], not a
/// parse. Keys that start with a NUL byte are stored escaped: left out.
#[inline(always)]
fn next_get_key(next: &[u8]) -> Option<&[u8]> {
    const HEAD: &[u8] = b"*2\r\n$3\r\nGET\r\n$";
    let head = next.get(..HEAD.len())?;
    if !head.eq_ignore_ascii_case(HEAD) {
        return None;
    }
    let rest = &next[HEAD.len()..];
    let digits = rest.iter().take(4).take_while(|b| b.is_ascii_digit()).count();
    let len = rest[..digits].iter().fold(0usize, |n, &b| n * 10 + usize::from(b - b'0'));
    let key = rest.get(digits..)?.strip_prefix(b"\r\n")?.get(..len)?;
    (digits > 0 && !key.is_empty() && key[0] != 0).then_some(key)
}

/// Answers a request the parser refused.
#[cold]
fn refuse(
    counters: &Counters,
    protocol: proto_resp::Protocol,
    error: ParseError,
    input: &[u8],
    out: &mut Vec<u8>,
) -> Step {
    match error {
        ParseError::Incomplete => Step::Incomplete,
        ParseError::Invalid { skip, reason } => {
            counters::bump(&counters.protocol_errors, 1);
            proto_resp::Reply::new(out, protocol).error(reason);
            Step::Done { used: skip.min(input.len()), counts: false }
        }
        ParseError::Close { reply } => {
            counters::bump(&counters.protocol_errors, 1);
            proto_resp::Reply::new(out, protocol).error(reply.message());
            Step::HangUp
        }
    }
}

#[cfg(test)]
mod tests {
    use super::next_get_key;

    // Goal: the read ahead's hint takes the key of a whole RESP GET (any case) and nothing
    // else: not another command's, not a key cut short, not a NUL-led (escaped) one.
    #[test]
    fn next_get_key_reads_only_whole_gets() {
        let table: &[(&[u8], Option<&[u8]>)] = &[
            (b"*2\r\n$3\r\nGET\r\n$3\r\nabc\r\n", Some(b"abc")),
            (b"*2\r\n$3\r\nget\r\n$3\r\nabc", Some(b"abc")),
            (b"*2\r\n$3\r\nGET\r\n$3\r\nab", None),
            (b"*2\r\n$3\r\nGET\r\n$\r\nabc\r\n", None),
            (b"*2\r\n$3\r\nGET\r\n$0\r\n\r\n", None),
            (b"*2\r\n$3\r\nGET\r\n$3\r\n\0ab\r\n", None),
            (b"*3\r\n$3\r\nSET\r\n$3\r\nabc\r\n$1\r\nx\r\n", None),
            (b"*2\r\n$4\r\nMGET\r\n$3\r\nabc\r\n", None),
            (b"GET abc\r\n", None),
            (b"", None),
        ];
        for (next, want) in table {
            assert_eq!(next_get_key(next), *want, "{:?}", String::from_utf8_lossy(next));
        }
    }
}
