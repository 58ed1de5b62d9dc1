//! DEBUG, as far as clients and their test suites use it against a server they do not own:
//! `DEBUG ERROR message` answers with `message` as an error reply (redis-py's tests make
//! the server send LOADING, READONLY or OOM this way). Its other subcommands inspect or
//! break Redis's own internals (RELOAD, OBJECT, JMAP, SEGFAULT ...) and are answered as
//! Redis answers a subcommand it does not know.
//!
//! As in Redis 7.0, DEBUG is refused unless `enable-debug-command` (set at start, in a
//! `--redis-conf` file) is `yes`, or `local` and the client is on the loopback interface
//! or a Unix socket.

use super::{config_kept, Ctx};

const NOT_ALLOWED: &str = "ERR DEBUG command not allowed. If the enable-debug-command option \
is set to \"local\", you can run it from a local connection, otherwise you need to set this \
option in the configuration file, and then restart the server.";

pub(super) fn debug(ctx: &mut Ctx<'_>) {
    if !protected_allowed(ctx, "enable-debug-command") {
        return ctx.error(NOT_ALLOWED);
    }
    if ctx.arg(1).eq_ignore_ascii_case(b"error") && ctx.argc() == 3 {
        // The argument is the whole reply, code included; CR and LF become spaces.
        let message = ctx.arg(2);
        return ctx.error(message);
    }
    let subcommand = String::from_utf8_lossy(ctx.arg(1)).into_owned();
    let message = format!(
        "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
        truncated(&subcommand, 128)
    );
    ctx.error(message);
}

/// Redis's `allowProtectedAction` for `setting` (`enable-debug-command`,
/// `enable-module-command`): `yes`, or `local` and a local client.
pub(super) fn protected_allowed(ctx: &Ctx<'_>, setting: &str) -> bool {
    let setting = config_kept::value(ctx.shared, setting);
    if setting.eq_ignore_ascii_case("yes") {
        return true;
    }
    setting.eq_ignore_ascii_case("local") && is_local(&ctx.session.client.lock().addr)
}

/// Whether a client address (`ip:port`, `[ip]:port`, or a Unix socket's path) is local, as
/// Redis's `islocalClient` judges: a Unix socket, 127.0.0.1 or ::1.
fn is_local(addr: &str) -> bool {
    let host = addr.rsplit_once(':').map_or(addr, |(host, _)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.starts_with('/') || host.is_empty() || host == "127.0.0.1" || host == "::1"
}

/// At most `max` bytes of `text`, cut on a character boundary (Redis's `%.128s`).
pub(super) fn truncated(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::is_local;

    #[test]
    fn local_addresses_are_loopback_and_unix_sockets() {
        assert!(is_local("127.0.0.1:5000"));
        assert!(is_local("[::1]:5000"));
        assert!(is_local("/tmp/spinel.sock:0"));
        assert!(!is_local("10.0.0.1:5000"));
        assert!(!is_local("[::2]:5000"));
        assert!(!is_local("127.0.0.2:5000"));
    }
}
