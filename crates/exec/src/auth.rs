//! Authentication of memcached connections: memcached's `-S` (binary SASL, PLAIN) and `-Y`
//! (the text protocol's `set` of `user password`), both against one list of credentials in
//! memcached's `-Y` file format. The server reads the file (at start and on SIGHUP) and
//! hands its bytes to [`Credentials::parse`]; connections check against the list in force.
//! `-S` with no password file checks the Redis port's ACL users instead ([`Auth::acl_users`]):
//! a user and password that `AUTH` would take (an enabled user with a password; a `nopass`
//! user is not let in, since SASL always carries a password and memcached has no
//! passwordless users), so one user store serves both protocols.
//!
//! Without `-S` or `-Y` the memcached port is guarded by the Redis users too, so one set of
//! credentials guards the data whatever the port: a connection is let in as `default`
//! while that user is on and passwordless (as a Redis connection is), and otherwise must
//! log in as a Redis user, binary clients with SASL PLAIN and text clients with the `-Y`
//! token (`user password`, or a lone password for `default`). Until then every request
//! gets memcached's refusal (`CLIENT_ERROR unauthenticated`, binary status 0x20); once
//! logged in, the user's ACL rules apply to each request (`memcache::acl`). UDP cannot log
//! in: a datagram is served only while `default` needs no password, and dropped otherwise.
//!
//! ```text
//!   server: file bytes --Credentials::parse--> Auth::replace      (start, SIGHUP)
//!   binary::sasl / memcache::auth --Auth::check(user, pass)--> ConnAuth.authenticated
//!   no file:  binary::sasl / memcache::auth --Users::password_login--> Session.account
//! ```

use std::sync::{Arc, RwLock};

use crate::{
    memcache::{MemcacheView, Session},
    MemcacheState,
};

/// Which kind of authentication the memcached port asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuthMode {
    /// memcached `-S`: binary protocol only, SASL PLAIN.
    Sasl,
    /// memcached `-Y`: text protocol only, `set` of `user password`.
    Ascii,
}

/// What the server shares about authentication: the mode and the credentials in force.
pub struct Auth {
    pub mode: AuthMode,
    credentials: RwLock<Arc<Credentials>>,
    /// Checked against the Redis ACL users, not a file's credentials.
    acl_users: bool,
}

impl Auth {
    pub fn new(mode: AuthMode, credentials: Credentials) -> Auth {
        Auth { mode, credentials: RwLock::new(Arc::new(credentials)), acl_users: false }
    }

    /// SASL against the Redis ACL users (`-S` with no password file).
    pub fn acl_users() -> Auth {
        Auth { acl_users: true, ..Auth::new(AuthMode::Sasl, Credentials::default()) }
    }

    /// Whether the credentials are the Redis ACL users'.
    pub fn uses_acl_users(&self) -> bool {
        self.acl_users
    }

    /// Puts a newly read list in force (SIGHUP); connections already authenticated stay so,
    /// as in memcached.
    pub fn replace(&self, credentials: Credentials) {
        let mut current = self.credentials.write().unwrap_or_else(|e| e.into_inner());
        *current = Arc::new(credentials);
    }

    /// Whether `user` and `pass` match an entry of the list in force.
    pub fn check(&self, user: &[u8], pass: &[u8]) -> bool {
        let current = Arc::clone(&self.credentials.read().unwrap_or_else(|e| e.into_inner()));
        current.check(user, pass)
    }
}

/// Whether the memcached port checks the Redis users: no `-Y`/`-S` password file.
pub fn uses_users(memcache: &MemcacheState) -> bool {
    memcache.auth.as_ref().is_none_or(Auth::uses_acl_users)
}

/// Whether the memcached port answers the SASL opcodes: `-S`, or, with no password file,
/// Redis users that make logging in mean something. (memcached without `-S` answers them
/// as unknown commands, and so does Spinel while no login is configured.)
pub fn sasl_offered(view: MemcacheView<'_>) -> bool {
    match &view.memcache().auth {
        Some(auth) => auth.mode == AuthMode::Sasl,
        None => view.redis().logins_configured(),
    }
}

/// Whether text connections log in with the `-Y` token: `-Y`, or no password file.
pub fn text_login_offered(view: MemcacheView<'_>) -> bool {
    view.memcache().auth.as_ref().is_none_or(|auth| auth.mode == AuthMode::Ascii)
}

/// Whether `session` may use the store: it authenticated (against the file, or as a Redis
/// user), or, with no password file and no `-S`, `default` is on and passwordless (it is
/// then logged in as `default` and stays so, as a Redis connection does).
pub fn admitted(view: MemcacheView<'_>, session: &mut Session) -> bool {
    if session.authenticated() {
        return true;
    }
    if view.memcache().auth.is_some() {
        return false;
    }
    session.account = view.redis().starting_account();
    session.account.is_some()
}

/// Whether a UDP datagram is served: UDP has no connection to log in on, so only while
/// `default` needs no password (its rules then apply). Asked again for every datagram, so
/// a password set at run time closes UDP at once.
pub fn admit_datagram(view: MemcacheView<'_>, session: &mut Session) -> bool {
    if !uses_users(view.memcache()) {
        return true;
    }
    session.account = view.redis().starting_account();
    session.account.is_some()
}

/// The `user:password` entries of a `-Y` file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Credentials {
    entries: Vec<(Vec<u8>, Vec<u8>)>,
}

/// Why a file was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Malformed;

impl Credentials {
    /// Reads memcached's format: one `user:password` a line; the user ends at the first
    /// `:`, the password at `\r`, `\n` or a NUL (so it may hold `:`); a NUL also ends the
    /// file. A line with no `:` (an empty one too) refuses the whole file. An empty file is
    /// no entries. Differences: memcached keeps only the first 8 entries and cuts lines at
    /// 255 bytes; every entry and the whole line count here.
    pub fn parse(file: &[u8]) -> Result<Credentials, Malformed> {
        let mut entries = Vec::new();
        let mut rest = file;
        while !rest.is_empty() {
            let line_end = rest.iter().position(|&b| b == b'\n').map_or(rest.len(), |i| i + 1);
            let (line, next) = rest.split_at(line_end);
            let colon = line.iter().position(|&b| b == b':' || b == 0);
            let Some(colon) = colon.filter(|&i| line[i] == b':') else { return Err(Malformed) };
            let after = &line[colon + 1..];
            let pass_len = after.iter().position(|&b| matches!(b, b'\r' | b'\n' | 0));
            let pass = &after[..pass_len.unwrap_or(after.len())];
            entries.push((line[..colon].to_vec(), pass.to_vec()));
            if pass_len.is_some_and(|i| after[i] == 0) {
                break;
            }
            rest = next;
        }
        Ok(Credentials { entries })
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Checks every entry, each in time independent of where the bytes differ, so the time
    /// taken does not tell how much of a guess was right. Lengths are compared openly, as
    /// memcached does.
    pub fn check(&self, user: &[u8], pass: &[u8]) -> bool {
        let mut found = false;
        for (entry_user, entry_pass) in &self.entries {
            // `&`, not `&&`: both comparisons run whatever the first found.
            found |=
                equal_in_constant_time(user, entry_user) & equal_in_constant_time(pass, entry_pass);
        }
        found
    }
}

/// Byte equality whose time depends only on the lengths.
pub(crate) fn equal_in_constant_time(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let difference = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    // black_box keeps the compiler from turning the fold into an early-exit comparison.
    std::hint::black_box(difference) == 0
}

/// A memcached connection's authentication state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnAuth {
    pub authenticated: bool,
    /// Where a binary SASL exchange stands.
    pub(crate) sasl: SaslPhase,
    /// Text protocol: the data block length of an authentication `set` whose line has been
    /// read, while its block is awaited.
    pub(crate) pending_data_len: Option<u32>,
}

/// Where a binary SASL exchange stands, as Cyrus keeps it for memcached.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum SaslPhase {
    /// No exchange started, or the last Auth failed: a Step fails.
    #[default]
    Idle,
    /// Auth without a message: a Step carries it (and may be retried after a failure).
    Awaiting,
    /// Authenticated by the exchange: a further Step fails.
    Done,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_file_as_memcached_does() {
        let creds = Credentials::parse(b"alice:secret\nbob:pw:x\r\ncarol:last").unwrap();
        assert!(creds.check(b"alice", b"secret"));
        assert!(creds.check(b"bob", b"pw:x"));
        assert!(creds.check(b"carol", b"last"));
        assert!(!creds.check(b"alice", b"secre"));
        assert!(!creds.check(b"alice", b"secret\n"));
        assert!(!creds.check(b"eve", b"secret"));
        assert_eq!(Credentials::parse(b"").unwrap().len(), 0);
        assert_eq!(Credentials::parse(b"a:b\n\nc:d\n"), Err(Malformed));
        assert_eq!(Credentials::parse(b"nocolon\n"), Err(Malformed));
        assert_eq!(Credentials::parse(b"a\0:b\n"), Err(Malformed));
        // A NUL in a password ends the file.
        let cut = Credentials::parse(b"a:b\0c\nnocolon\n").unwrap();
        assert_eq!((cut.len(), cut.check(b"a", b"b")), (1, true));
        assert!(Credentials::parse(b"empty:\n").unwrap().check(b"empty", b""));
    }

    #[test]
    fn equality_is_exact() {
        assert!(equal_in_constant_time(b"", b""));
        assert!(equal_in_constant_time(b"abc", b"abc"));
        assert!(!equal_in_constant_time(b"abc", b"abd"));
        assert!(!equal_in_constant_time(b"abc", b"Abc"));
        assert!(!equal_in_constant_time(b"abc", b"abcd"));
    }

    #[test]
    fn replace_puts_a_new_list_in_force() {
        let auth = Auth::new(AuthMode::Ascii, Credentials::parse(b"a:1\n").unwrap());
        assert!(auth.check(b"a", b"1"));
        auth.replace(Credentials::parse(b"b:2\n").unwrap());
        assert!(!auth.check(b"a", b"1"));
        assert!(auth.check(b"b", b"2"));
    }
}
