//! Redis authentication: `requirepass` (the `default` user's password), AUTH, HELLO's AUTH
//! option, and the refusal of everything else until a connection has authenticated.
//!
//! As in Redis 7 with its one `default` user: without a password that user is `nopass`,
//! so every connection starts authenticated and `AUTH default <anything>` succeeds; with
//! one, a connection starts unauthenticated and may run only the commands flagged
//! `no_auth` (AUTH, HELLO, QUIT, RESET) until it gives the password. A connection that was
//! authenticated stays so when the password changes (CONFIG SET), as in Redis; RESET
//! makes it authenticate again.

use std::{net::IpAddr, sync::atomic::Ordering};

use proto_resp::{commands::Flags, error, CommandSpec};

use super::{Ctx, Session};
use crate::Shared;

const NOAUTH: &str = "NOAUTH Authentication required.";
const AUTH_NOPASS: &str = "ERR AUTH <password> called without any password configured for \
                           the default user. Are you sure your configuration is correct?";
const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";
/// The one user there is.
const DEFAULT_USER: &[u8] = b"default";

/// Redis's reply to a connection refused by protected mode, sent as it is accepted.
pub const PROTECTED_MODE_DENIED: &[u8] = b"-DENIED Redis is running in protected mode because \
protected mode is enabled and no password is set for the default user. In this mode \
connections are only accepted from the loopback interface. If you want to connect from \
external computers to Redis you may adopt one of the following solutions: 1) Just disable \
protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface \
by connecting to Redis from the same host the server is running, however MAKE SURE Redis is \
not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change \
permanent. 2) Alternatively you can just disable the protected mode by editing the Redis \
configuration file, and setting the protected mode option to 'no', and then restarting the \
server. 3) If you started the server manually just for testing, restart it with the \
'--protected-mode no' option. 4) Setup a an authentication password for the default user. \
NOTE: You only need to do one of the above things in order for the server to start accepting \
connections from the outside.\r\n";

/// Whether protected mode refuses a Redis connection from `peer` (None: a Unix socket):
/// it is on, no password is set, and the peer is not on the loopback interface.
pub fn protected_mode_denies(shared: &Shared, peer: Option<IpAddr>) -> bool {
    let local = peer.is_none_or(|ip| match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    });
    !local && shared.protected_mode.load(Ordering::Relaxed) && starts_authenticated(shared)
}

/// CONFIG GET protected-mode.
pub(super) fn protected_mode(shared: &Shared) -> String {
    if shared.protected_mode.load(Ordering::Relaxed) { "yes" } else { "no" }.into()
}

/// CONFIG SET protected-mode.
pub(super) fn set_protected_mode(shared: &Shared, on: bool) {
    shared.protected_mode.store(on, Ordering::Relaxed);
}

/// Whether a new connection starts authenticated (no password is set).
pub(super) fn starts_authenticated(shared: &Shared) -> bool {
    shared.requirepass.read().is_none()
}

/// Why `session` may not run the command of `spec` yet (None: it may). A password removed
/// since the connection started lets it in, as the `default` user is `nopass` again.
pub(super) fn refusal(
    shared: &Shared,
    session: &Session,
    spec: &CommandSpec,
) -> Option<&'static str> {
    let refused = !session.authenticated
        && !spec.flags.contains(Flags::NO_AUTH)
        && !starts_authenticated(shared);
    refused.then_some(NOAUTH)
}

/// Whether HELLO may go on without an AUTH option (see [`refusal`]).
pub(super) fn hello_allowed(shared: &Shared, session: &Session) -> bool {
    session.authenticated || starts_authenticated(shared)
}

/// Checks `user` (None: `default`) and `password`; on success the session is authenticated.
pub(super) fn login(
    shared: &Shared,
    session: &mut Session,
    user: Option<&[u8]>,
    password: &[u8],
) -> Result<(), &'static str> {
    if user.is_some_and(|user| user != DEFAULT_USER) {
        return Err(WRONGPASS);
    }
    let accepted = match &*shared.requirepass.read() {
        None if user.is_none() => return Err(AUTH_NOPASS),
        None => true,
        Some(expected) => same_secret(expected, password),
    };
    if !accepted {
        return Err(WRONGPASS);
    }
    session.authenticated = true;
    Ok(())
}

/// Compares two secrets in time that depends on their lengths only, not on where they
/// first differ.
fn same_secret(expected: &[u8], given: &[u8]) -> bool {
    let differences = expected.iter().zip(given).fold(0u8, |acc, (a, b)| acc | (a ^ b));
    expected.len() == given.len() && differences == 0
}

/// AUTH [username] password.
pub(super) fn auth(ctx: &mut Ctx<'_>) {
    let (user, password) = match ctx.argc() {
        2 => (None, ctx.arg(1)),
        3 => (Some(ctx.arg(1)), ctx.arg(2)),
        _ => return ctx.error(error::SYNTAX),
    };
    match login(ctx.shared, ctx.session, user, password) {
        Ok(()) => ctx.reply().ok(),
        Err(message) => ctx.error(message),
    }
}

/// CONFIG GET requirepass: the password, empty when there is none.
pub(super) fn password(shared: &Shared) -> String {
    let current = shared.requirepass.read();
    current.as_deref().map(|p| String::from_utf8_lossy(p).into_owned()).unwrap_or_default()
}

/// CONFIG SET requirepass: an empty value removes the password.
pub(super) fn set_password(shared: &Shared, password: &[u8]) {
    *shared.requirepass.write() = Some(password.to_vec()).filter(|p| !p.is_empty());
}
