//! Where the memcached port's credentials come from, and reading them (memcached's `-S`
//! and `-Y`).
//!
//! - `-Y FILE`: text-protocol authentication from FILE (memcached's meaning; with `-S` too,
//!   as memcached, `-Y` decides).
//! - `-S` alone: binary SASL PLAIN from the file that the `MEMCACHED_SASL_PWDB` environment
//!   variable names: memcached's own variable and format (`user:password` lines) for its
//!   built-in password database. Spinel has no Cyrus SASL; without the variable, SASL checks
//!   the Redis port's ACL users (`requirepass`, `--aclfile`, `ACL SETUSER`), so one user
//!   store serves both protocols ([`exec::auth::Auth::acl_users`]).
//!
//! The file is read once the process runs as its final user (after `-u`, as memcached),
//! and again on SIGHUP; a file that cannot be read or parsed then keeps the previous list.

use exec::auth::{AuthMode, Credentials};

use crate::config::Config;

/// memcached's environment variable for its built-in SASL password file.
pub const SASL_PWDB_ENV: &str = "MEMCACHED_SASL_PWDB";

/// The credentials file and what it is for.
#[derive(Clone, Debug)]
pub struct Source {
    pub mode: AuthMode,
    pub path: String,
}

/// The source the configuration asks for, if any.
pub fn source(config: &Config) -> Result<Option<Source>, String> {
    if let Some(path) = &config.auth_file {
        return Ok(Some(Source { mode: AuthMode::Ascii, path: path.clone() }));
    }
    if !config.enable_sasl {
        return Ok(None);
    }
    match std::env::var(SASL_PWDB_ENV) {
        Ok(path) if !path.is_empty() => Ok(Some(Source { mode: AuthMode::Sasl, path })),
        _ => Ok(None),
    }
}

/// `-S` with neither `-Y` nor a password file: SASL checks the Redis ACL users.
pub fn sasl_uses_acl_users(config: &Config) -> bool {
    let pwdb = std::env::var(SASL_PWDB_ENV).is_ok_and(|path| !path.is_empty());
    config.enable_sasl && config.auth_file.is_none() && !pwdb
}

/// Reads and parses the file, with memcached's messages for what goes wrong.
pub fn load(source: &Source) -> Result<Credentials, String> {
    let path = &source.path;
    let bytes = std::fs::read(path).map_err(|e| {
        let reason = e.kind().to_string();
        let reason = match e.raw_os_error() {
            Some(code) => nix::errno::Errno::from_raw(code).desc().to_string(),
            None => reason,
        };
        format!("Could not open authfile [{path}] for reading, error {reason}")
    })?;
    Credentials::parse(&bytes)
        .map_err(|_| format!("Authfile [{path}] has a malformed entry. Should be 'user:password'"))
}
