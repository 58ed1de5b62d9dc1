//! The text protocol before authentication (memcached `-Y`): each line is refused with
//! `CLIENT_ERROR unauthenticated` except a `set` whose data block is `user password`
//! ([`proto_memcache::text::auth`] reads both), which answers `STORED` and authenticates
//! the connection, or `CLIENT_ERROR authentication failure`.
//!
//! memcached 1.6.18 answers these through one reply object that each reply overwrites
//! until the replies are sent (after the input at hand is used up): of several replies to
//! one batch of input, only the last reaches the client, and a successful `set` replaces
//! the refusals before it. `reply_at` carries that from one call to the next in a batch.

use proto_memcache::text::auth::{parse_data, parse_line, Data, Line};

use crate::{
    counters::{bump, Counters},
    memcache::{MemcacheView, Session},
    resp::acl::DEFAULT_USER,
};

/// What [`unauthenticated`] did with the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthStep {
    /// Consumed this many bytes (a reply may have been written).
    Used(usize),
    /// Needs more input.
    Incomplete,
    /// Hang up.
    Close,
}

use super::acl::UNAUTHENTICATED;
const BAD_TERMINATION: &[u8] = b"CLIENT_ERROR bad command line termination\r\n";
const BAD_TOKEN: &[u8] = b"CLIENT_ERROR bad authentication token format\r\n";
const FAILURE: &[u8] = b"CLIENT_ERROR authentication failure\r\n";
const STORED: &[u8] = b"STORED\r\n";

/// Handles the input at the start of `input` on a connection that has not authenticated.
/// `reply_at` is None at the start of each batch of input; it marks where this batch's
/// reply starts in `out`.
pub fn unauthenticated(
    view: MemcacheView<'_>,
    counters: &Counters,
    session: &mut Session,
    input: &[u8],
    out: &mut Vec<u8>,
    reply_at: &mut Option<usize>,
) -> AuthStep {
    let state = &mut session.auth;
    let Some(data_len) = state.pending_data_len else {
        return match parse_line(input) {
            Line::Incomplete => AuthStep::Incomplete,
            Line::Close => AuthStep::Close,
            Line::Refused { used } => {
                reply(out, reply_at, UNAUTHENTICATED);
                AuthStep::Used(used)
            }
            Line::Set { used, data_len } => {
                state.pending_data_len = Some(data_len);
                AuthStep::Used(used)
            }
        };
    };
    let (used, answer) = match parse_data(input, data_len) {
        Data::Incomplete => return AuthStep::Incomplete,
        Data::Close => return AuthStep::Close,
        Data::BadTermination { used } => (used, BAD_TERMINATION),
        Data::BadFormat { used } => match lone_token(&input[..used - 2]) {
            // With the Redis users, a lone password is `default`'s (as `AUTH password`).
            Some(pass) if crate::auth::uses_users(view.memcache()) => {
                (used, log_in(view, counters, session, DEFAULT_USER, pass))
            }
            _ => (used, BAD_TOKEN),
        },
        Data::Token { user, pass, used } => (used, log_in(view, counters, session, user, pass)),
    };
    session.auth.pending_data_len = None;
    reply(out, reply_at, answer);
    AuthStep::Used(used)
}

/// Checks a token against the `-Y` file or the Redis users; the reply.
fn log_in(
    view: MemcacheView<'_>,
    counters: &Counters,
    session: &mut Session,
    user: &[u8],
    pass: &[u8],
) -> &'static [u8] {
    bump(&counters.auth_cmds, 1);
    let ok = match &view.memcache().auth {
        Some(auth) if !auth.uses_acl_users() => auth.check(user, pass),
        _ => {
            session.account = view.redis().password_login(user, pass);
            session.account.is_some()
        }
    };
    session.auth.authenticated = ok;
    if !ok {
        bump(&counters.auth_errors, 1);
        view.redis().note_failed_login();
        super::acl::log_failed_login(view, session, user);
    }
    if ok {
        STORED
    } else {
        FAILURE
    }
}

/// The data block's only token, if it has exactly one (cut at a NUL, as memcached reads it).
fn lone_token(block: &[u8]) -> Option<&[u8]> {
    let block = block.iter().position(|&b| b == 0).map_or(block, |nul| &block[..nul]);
    let mut tokens = block.split(|&b| b == b' ').filter(|t| !t.is_empty());
    match (tokens.next(), tokens.next()) {
        (Some(pass), None) => Some(pass),
        _ => None,
    }
}

/// Writes `line` over this batch's earlier reply, if any.
fn reply(out: &mut Vec<u8>, reply_at: &mut Option<usize>, line: &[u8]) {
    let start = *reply_at.get_or_insert(out.len());
    out.truncate(start);
    out.extend_from_slice(line);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        auth::{Auth, AuthMode, Credentials},
        memcache::tests::Harness,
    };

    fn harness() -> Harness {
        let mut h = Harness::new();
        let credentials = Credentials::parse(b"alice:secret\n").unwrap();
        h.shared.memcache.auth = Some(Auth::new(AuthMode::Ascii, credentials));
        h
    }

    /// Feeds one batch of input as the server's loop does; the output and the bytes left.
    fn batch(h: &mut Harness, input: &[u8]) -> (Vec<u8>, usize) {
        let (mut out, mut reply_at, mut pos) = (Vec::new(), None, 0);
        while pos < input.len() && !h.session.authenticated() {
            let rest = &input[pos..];
            match unauthenticated(
                h.shared.memcache_view(),
                &h.counters,
                &mut h.session,
                rest,
                &mut out,
                &mut reply_at,
            ) {
                AuthStep::Used(used) => pos += used,
                AuthStep::Incomplete | AuthStep::Close => break,
            }
        }
        (out, input.len() - pos)
    }

    #[test]
    fn only_the_last_reply_of_a_batch_is_kept() {
        let mut h = harness();
        assert_eq!(batch(&mut h, b"get a\r\nget b\r\n"), (UNAUTHENTICATED.to_vec(), 0));
        let (out, left) = batch(&mut h, b"set k 0 0 5\r\nalice\r\nget b\r\nset k 0 0 12\r\nalice");
        assert_eq!((out, left), (UNAUTHENTICATED.to_vec(), 5), "the line of the last set is used");
        assert_eq!(batch(&mut h, b"alice secret\r\nget k\r\n"), (STORED.to_vec(), 7));
        assert!(h.session.authenticated());
        let totals = h.shared.core.totals();
        assert_eq!((totals.auth_cmds, totals.auth_errors), (1, 0));
    }

    #[test]
    fn failures() {
        let mut h = harness();
        assert_eq!(batch(&mut h, b"set k 0 0 11\r\nalice wrong\r\n"), (FAILURE.to_vec(), 0));
        assert_eq!(batch(&mut h, b"set k 0 0 1\r\nxyz"), (BAD_TERMINATION.to_vec(), 0));
        assert!(!h.session.authenticated());
        let totals = h.shared.core.totals();
        assert_eq!((totals.auth_cmds, totals.auth_errors), (1, 1));
    }
}
