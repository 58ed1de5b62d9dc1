//! The SASL opcodes (memcached `-S`), with PLAIN checked against the `-Y`-format
//! credentials ([`crate::auth`]). Replies and state as memcached 1.6.18 with Cyrus SASL and
//! `mech_list: plain` gives them (checked on the wire):
//!
//! - every SASL opcode first drops the connection's authentication (memcached resets it
//!   before each), so a failed re-authentication leaves the connection refused;
//! - List Mechs: `PLAIN`;
//! - Auth PLAIN with a message: `Authenticated` or `Auth failure.`; without one: status
//!   Auth Continue and an empty body, and the message comes in a Step (which may be retried
//!   after a failure); any other mechanism: `Auth failure.`;
//! - Step with no exchange awaiting a message: `Auth failure.`.
//!
//! `auth_cmds` counts each completed attempt, `auth_errors` each failed one.

use proto_memcache::binary::{
    compose_error, compose_response,
    sasl::{parse_plain, SaslOp, SaslRequest, AUTHENTICATED, MECHANISMS},
    Reply, Status,
};

use crate::{
    auth::SaslPhase,
    counters::{bump, Counters},
    memcache::{MemcacheView, Session},
};

/// Answers one SASL packet.
pub fn execute(
    view: MemcacheView<'_>,
    counters: &Counters,
    session: &mut Session,
    request: &SaslRequest<'_>,
    out: &mut Vec<u8>,
) {
    bump(&counters.total_commands, 1);
    session.account = None;
    let state = &mut session.auth;
    state.authenticated = false;
    let reply = |status| Reply { opcode: request.opcode, status, opaque: request.opaque, cas: 0 };
    let attempt = match request.op {
        SaslOp::ListMechs => {
            compose_response(&reply(Status::NoError), b"", b"", MECHANISMS, out);
            return;
        }
        SaslOp::Auth if !request.mech.eq_ignore_ascii_case(b"PLAIN") => {
            state.sasl = SaslPhase::Idle;
            false
        }
        SaslOp::Auth if request.data.is_empty() => {
            state.sasl = SaslPhase::Awaiting;
            compose_response(&reply(Status::AuthContinue), b"", b"", b"", out);
            return;
        }
        SaslOp::Auth => {
            let ok = plain_ok(view, session, request.data);
            session.auth.sasl = if ok { SaslPhase::Done } else { SaslPhase::Idle };
            ok
        }
        SaslOp::Step if state.sasl == SaslPhase::Awaiting => {
            let ok = plain_ok(view, session, request.data);
            if ok {
                session.auth.sasl = SaslPhase::Done;
            }
            ok
        }
        SaslOp::Step => false,
    };
    bump(&counters.auth_cmds, 1);
    if attempt {
        session.auth.authenticated = true;
        compose_response(&reply(Status::NoError), b"", b"", AUTHENTICATED, out);
    } else {
        bump(&counters.auth_errors, 1);
        view.redis().note_failed_login();
        // PLAIN is `authzid NUL user NUL password`: only the user is logged.
        let user = request.data.split(|&b| b == 0).nth(1).unwrap_or(b"");
        crate::memcache::acl::log_failed_login(view, session, user);
        compose_error(request.opcode, Status::AuthError, request.opaque, out);
    }
}

/// Whether a PLAIN message names a known user with its password (against the Redis users,
/// `session` is then logged in as that user). An authorization identity must be empty or
/// the user's own (Cyrus refuses acting as another); an empty user or password never
/// matches.
fn plain_ok(view: MemcacheView<'_>, session: &mut Session, message: &[u8]) -> bool {
    let Some(plain) = parse_plain(message) else { return false };
    let own = plain.authzid.is_empty() || plain.authzid == plain.authcid;
    let filled = !plain.authcid.is_empty() && !plain.passwd.is_empty();
    if !(own && filled) {
        return false;
    }
    match &view.memcache().auth {
        Some(auth) if !auth.uses_acl_users() => auth.check(plain.authcid, plain.passwd),
        _ => {
            session.account = view.redis().password_login(plain.authcid, plain.passwd);
            session.account.is_some()
        }
    }
}

#[cfg(test)]
mod tests {
    use proto_memcache::{
        binary::{
            parse_response,
            sasl::{SASL_AUTH, SASL_LIST_MECHS, SASL_STEP},
        },
        Limits,
    };

    use super::*;
    use crate::{
        auth::{Auth, AuthMode, Credentials},
        memcache::tests::Harness,
    };

    fn harness() -> Harness {
        let mut h = Harness::new();
        let credentials = Credentials::parse(b"alice:secret\n").unwrap();
        h.shared.memcache.auth = Some(Auth::new(AuthMode::Sasl, credentials));
        h
    }

    /// Runs one SASL request; its reply's status and value.
    fn send(h: &mut Harness, op: SaslOp, mech: &[u8], data: &[u8]) -> (u16, Vec<u8>) {
        let opcode = match op {
            SaslOp::ListMechs => SASL_LIST_MECHS,
            SaslOp::Auth => SASL_AUTH,
            SaslOp::Step => SASL_STEP,
        };
        let request = SaslRequest { op, opcode, opaque: 5, mech, data };
        let mut out = Vec::new();
        execute(h.shared.memcache_view(), &h.counters, &mut h.session, &request, &mut out);
        let (reply, used) = parse_response(&out, &Limits::default()).unwrap();
        assert_eq!((reply.opcode, reply.opaque, used), (opcode, 5, out.len()));
        (reply.status, reply.value.to_vec())
    }

    const OK: (u16, &[u8]) = (0, b"Authenticated");
    const FAILED: (u16, &[u8]) = (0x20, b"Auth failure.");

    fn is(got: (u16, Vec<u8>), want: (u16, &[u8])) {
        assert_eq!((got.0, &got.1[..]), want);
    }

    #[test]
    fn plain_with_and_without_a_first_message() {
        let mut h = harness();
        is(send(&mut h, SaslOp::ListMechs, b"", b""), (0, b"PLAIN"));
        is(send(&mut h, SaslOp::Auth, b"PLAIN", b"\0alice\0secret"), OK);
        assert!(h.session.authenticated());
        is(send(&mut h, SaslOp::Auth, b"PLAIN", b""), (0x21, b""));
        assert!(!h.session.authenticated());
        is(send(&mut h, SaslOp::Step, b"", b"\0alice\0wrong"), FAILED);
        is(send(&mut h, SaslOp::Step, b"", b"\0alice\0secret"), OK);
        is(send(&mut h, SaslOp::Step, b"", b"\0alice\0secret"), FAILED);
        assert!(!h.session.authenticated());
        let totals = h.shared.core.totals();
        assert_eq!((totals.auth_cmds, totals.auth_errors), (4, 2));
    }

    #[test]
    fn refusals() {
        let mut h = harness();
        is(send(&mut h, SaslOp::Step, b"PLAIN", b"\0alice\0secret"), FAILED);
        is(send(&mut h, SaslOp::Auth, b"LOGIN", b"\0alice\0secret"), FAILED);
        is(send(&mut h, SaslOp::Auth, b"PLAIN", b"bob\0alice\0secret"), FAILED);
        is(send(&mut h, SaslOp::Auth, b"plain", b"alice\0alice\0secret"), OK);
        is(send(&mut h, SaslOp::ListMechs, b"", b""), (0, b"PLAIN"));
        assert!(!h.session.authenticated(), "every SASL opcode drops the authentication");
    }
}
