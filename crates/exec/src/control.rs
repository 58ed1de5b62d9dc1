//! What exec asks of the server for the settings it cannot apply itself: the Redis TLS
//! port's files (exec knows no TLS) and the process's open-file limit behind `maxclients`
//! (exec makes no system calls). The server sets one in [`crate::RedisState::control`]; without
//! one (exec's own tests) the `tls-*` parameters read empty and any limit is taken.

/// The server's side of CONFIG GET/SET for what only it can do.
pub trait ServerControl: Send + Sync {
    /// A `tls-*` parameter's value as CONFIG GET shows it (`tls-port`, the files,
    /// `tls-auth-clients`, `tls-protocols`); empty when unset.
    fn tls_parameter(&self, name: &str) -> String;

    /// Puts `tls-*` values in force together: the TLS port's files are read again with them
    /// (new connections get the result). An error changes nothing; the server logs its
    /// reason (Redis answers with one sentence and logs it too).
    fn set_tls_parameters(&self, values: &[(&'static str, Vec<u8>)]) -> Result<(), String>;

    /// Makes room for this many client connections (raises the open-file limit if need
    /// be); `Err` gives the most the process can take.
    fn allow_connections(&self, count: u64) -> Result<(), u64>;

    /// Ends the connection whose socket is `fd`, from any thread (CLIENT KILL); the caller
    /// holds the client registry's lock, which the connection's close also takes, so `fd`
    /// is still that connection's.
    fn end_connection(&self, fd: i32);

    /// The redis.conf the server was started with (`--redis-conf`), as an absolute path:
    /// the file CONFIG REWRITE writes. `None` without one.
    fn config_file(&self) -> Option<String> {
        None
    }
}
