//! Redis authentication: `requirepass` (the `default` user's password), AUTH [user], HELLO's
//! AUTH option, the refusal of everything else until a connection has logged in, and then
//! the user's ACL rules (`acl/`).
//!
//! As in Redis 7: while the `default` user is `nopass` every connection starts logged in as
//! it and `AUTH default <anything>` succeeds; with a password, a connection starts logged
//! out and may run only the commands flagged `no_auth` (AUTH, HELLO, QUIT, RESET) until it
//! logs in. A connection stays logged in when its user's password changes, as in Redis;
//! RESET logs it out.
//!
//! Failed logins are counted (INFO `acl_access_denied_auth`, Redis 7.2's name) and nothing
//! more: Redis has no lockout, and a lockout by client address would let anyone who shares
//! an address with a legitimate user (a NAT, a proxy, the loopback) lock that user out by
//! sending wrong passwords. Guessing is slowed by the password's strength alone, as in Redis.

use std::{
    net::IpAddr,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
};

use proto_resp::{commands::Flags, error, Command, Routed};

use super::{
    acl::{self, Account},
    Ctx, Session,
};
use crate::Shared;

const NOAUTH: &str = "NOAUTH Authentication required.";
const AUTH_NOPASS: &str = "ERR AUTH <password> called without any password configured for \
                           the default user. Are you sure your configuration is correct?";
const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

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
    !local && shared.redis.protected_mode.load(Ordering::Relaxed) && starts_authenticated(shared)
}

/// CONFIG GET protected-mode.
pub(super) fn protected_mode(shared: &Shared) -> String {
    if shared.redis.protected_mode.load(Ordering::Relaxed) { "yes" } else { "no" }.into()
}

/// CONFIG SET protected-mode.
pub fn set_protected_mode(shared: &Shared, on: bool) {
    shared.redis.protected_mode.store(on, Ordering::Relaxed);
}

/// Whether a new connection starts logged in as `default` (it is on and `nopass`).
pub(crate) fn starts_authenticated(shared: &Shared) -> bool {
    default_is_open(&shared.redis.users)
}

fn default_is_open(users: &crate::resp::acl::Users) -> bool {
    let default = users.default_account();
    let user = default.user.read();
    user.enabled && user.nopass
}

/// The account a new (or RESET) connection starts as: `default` if it needs no password.
pub(crate) fn starting_account(shared: &Shared) -> Option<Arc<Account>> {
    starting_account_of(&shared.redis.users)
}

/// [`starting_account`] among `users` (memcached's logins reach no more of Redis).
pub(crate) fn starting_account_of(users: &crate::resp::acl::Users) -> Option<Arc<Account>> {
    default_is_open(users).then(|| users.default_account())
}

/// Whether `session` has not logged in while a login is needed: its requests are then
/// parsed under Redis's small limits for unauthenticated clients (`Limits::unauthenticated`).
pub fn auth_required(shared: &Shared, session: &Session) -> bool {
    session.account.is_none() && !starts_authenticated(shared)
}

/// Why a command does not run.
pub(super) enum Refusal {
    /// An error reply.
    Message(String),
    /// The connection's user was deleted: it closes, as Redis closes it.
    Closed,
    /// The user's ACL rules do not allow it.
    Denied(acl::Denied),
}

/// Why `session` may not run `routed` (Ok: it may): not logged in yet (a password removed
/// since the connection started lets it in as `default`), its user deleted, or the
/// user's ACL rules.
pub(super) fn refusal(
    shared: &Shared,
    session: &mut Session,
    routed: &Routed,
    command: &Command<'_>,
) -> Result<(), Refusal> {
    if session.from_master {
        // The primary's stream: Redis's master client is not subject to ACLs.
        return Ok(());
    }
    if session.account.is_none() && !routed.spec.flags.contains(Flags::NO_AUTH) {
        session.account = starting_account(shared);
        if session.account.is_none() {
            return Err(Refusal::Message(NOAUTH.into()));
        }
    }
    let Some(account) = &session.account else { return Ok(()) };
    if account.deleted.load(Ordering::Acquire) {
        return Err(Refusal::Closed);
    }
    if routed.spec.flags.contains(Flags::NO_AUTH) || account.is_unrestricted() {
        return Ok(());
    }
    let args: Vec<&[u8]> = command.args().collect();
    acl::check(account, routed, &args).map_err(Refusal::Denied)
}

/// Whether HELLO may go on without an AUTH option (see [`refusal`]).
pub(super) fn hello_allowed(shared: &Shared, session: &mut Session) -> bool {
    if session.account.is_none() {
        session.account = starting_account(shared);
    }
    session.account.is_some()
}

/// Checks `user` (None: `default`) and `password`; on success the session is logged in
/// as that user.
pub(super) fn login(
    shared: &Shared,
    session: &mut Session,
    user: Option<&[u8]>,
    password: &[u8],
) -> Result<(), &'static str> {
    let account = shared.redis.users.get(user.unwrap_or(acl::DEFAULT_USER));
    if user.is_none() && account.as_ref().is_some_and(|a| a.user.read().nopass) {
        return Err(AUTH_NOPASS);
    }
    let accepted = account.as_ref().is_some_and(|account| {
        let user = account.user.read();
        user.enabled && user.password_matches(password)
    });
    if !accepted {
        shared.redis.failed_logins.note_failure();
        log_failed_login(shared, session, user.unwrap_or(acl::DEFAULT_USER));
        return Err(WRONGPASS);
    }
    if let Some(account) = &account {
        session.client.lock().user = String::from_utf8_lossy(&account.name).into_owned();
    }
    if let Some(subs) = &session.pubsub {
        subs.subscriber.set_account(account.clone());
    }
    session.account = account;
    Ok(())
}

/// Failed logins since start (INFO `acl_access_denied_auth`), from either port.
#[derive(Debug, Default)]
pub struct FailedLogins {
    pub total: AtomicU64,
}

impl FailedLogins {
    pub(crate) fn note_failure(&self) {
        self.total.fetch_add(1, Ordering::Relaxed);
    }
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
    let current = shared.redis.requirepass.read();
    current.as_deref().map(|p| String::from_utf8_lossy(p).into_owned()).unwrap_or_default()
}

/// CONFIG SET requirepass: the `default` user's password; an empty value makes it
/// `nopass`.
pub fn set_password(shared: &Shared, password: &[u8]) {
    *shared.redis.requirepass.write() = Some(password.to_vec()).filter(|p| !p.is_empty());
    shared.redis.users.set_default_password(password);
}

/// Records a denial of `session`'s user in ACL LOG.
pub(super) fn log_denied(
    shared: &Shared,
    session: &Session,
    denied: &acl::Denied,
    context: acl::log::Context,
) {
    let user = session.account.as_ref().map_or(acl::DEFAULT_USER, |a| a.name.as_slice());
    let now_ms = super::now_unix_ms(shared);
    let event = acl::log::Event::denied(denied, context, user, now_ms);
    shared.redis.acl_log.note(event, || client_line(shared, session, now_ms));
}

/// Records a failed login as `user` (the name tried; never the password) in ACL LOG.
pub(super) fn log_failed_login(shared: &Shared, session: &Session, user: &[u8]) {
    let now_ms = super::now_unix_ms(shared);
    let event = acl::log::Event {
        reason: acl::log::Reason::Auth,
        context: acl::log::Context::TopLevel,
        object: b"AUTH",
        username: user,
        at_ms: now_ms,
    };
    shared.redis.acl_log.note(event, || client_line(shared, session, now_ms));
}

/// The session's CLIENT LIST line, without its newline (ACL LOG's `client-info`).
fn client_line(shared: &Shared, session: &Session, now_ms: u64) -> String {
    let mut line = Vec::new();
    session.client.lock().write_line(now_ms, shared.core.clock_secs(), 0, &mut line);
    String::from_utf8_lossy(line.strip_suffix(b"\n").unwrap_or(&line)).into_owned()
}
