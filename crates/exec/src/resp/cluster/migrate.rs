//! MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE] [AUTH password]
//! [AUTH2 username password] [KEYS key...]: keys moved to another server as DUMP payloads
//! (`dump.rs`), each sent as `RESTORE key ttl payload [REPLACE]` (`RESTORE-ASKING` when
//! this server runs in cluster mode, as Redis's `migrateCommand` does), then deleted here
//! once the target has answered OK, unless COPY.
//!
//! ```text
//!   payloads of the keys that exist (none: +NOKEY)
//!   resolve host:port  --fail-->  -IOERR error or timeout connecting to the client
//!   connect (timeout ms), write [AUTH] SELECT db RESTORE... in one buffer
//!                         --fail-->  -IOERR error or timeout writing to target instance
//!                         (a refused connection too, as Redis 7.0 answers it)
//!   read a line per command  --fail-->  -IOERR ... reading ...
//!   a '-' line: -ERR Target instance replied with error: <its text>; keys it took are
//!   still deleted here
//! ```
//!
//! Differences from Redis: the connection is opened for each call and closed after it
//! (Redis caches one per target for 10 s and skips SELECT when it is already in that
//! database; a target sees one more connection per call here), and while it talks to the
//! target only the calling worker thread waits (Redis's whole server does): other
//! connections of that worker wait with it, those of other workers are served.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpStream, ToSocketAddrs},
    time::Duration,
};

use proto_resp::{
    args::{is_option, parse_i64},
    error,
};
use store::Expiry;

use super::{
    super::{keyevents::class, Ctx},
    dump::payload_of,
};
use crate::core::delete::{self, DeleteOutcome};

/// The longest reply line kept from the target (Redis reads into 1 KiB buffers).
const LINE_MAX: usize = 1024;

/// The most read of one reply line before giving up on finding its end.
const READ_MAX: u64 = 64 * 1024;

/// What MIGRATE's options asked for.
#[derive(Default)]
struct Options<'a> {
    copy: bool,
    replace: bool,
    username: Option<&'a [u8]>,
    password: Option<&'a [u8]>,
    /// Where the keys start among the arguments, and how many there are.
    first_key: usize,
    keys: usize,
}

pub(super) fn migrate(ctx: &mut Ctx<'_>) {
    let options = match parse_options(ctx) {
        Ok(options) => options,
        Err(message) => return ctx.error(message),
    };
    let (Ok(timeout_ms), Ok(db)) = (parse_i64(ctx.arg(5)), parse_i64(ctx.arg(4))) else {
        return ctx.error(error::NOT_INTEGER);
    };
    let timeout = Duration::from_millis(if timeout_ms <= 0 { 1000 } else { timeout_ms as u64 });
    let shared = ctx.shared;
    let now_ms = crate::resp::now_unix_ms(shared);
    // (argument index, payload, ttl in ms) of each key that exists and has not expired.
    let mut found = Vec::new();
    for index in options.first_key..options.first_key + options.keys {
        let Some((payload, expiry)) = payload_of(shared, ctx.key(index)) else { continue };
        let ttl_ms = match expiry {
            Expiry::Never => 0,
            Expiry::AtMs(at) if at < now_ms => continue,
            Expiry::AtMs(at) => (at - now_ms).max(1),
        };
        found.push((index, payload, ttl_ms));
    }
    if found.is_empty() {
        return ctx.reply().simple(b"NOKEY");
    }
    let restore = if shared.redis.cluster.get().is_some() { "RESTORE-ASKING" } else { "RESTORE" };
    let mut request = Vec::new();
    if let Some(password) = options.password {
        let mut auth: Vec<&[u8]> = vec![b"AUTH"];
        auth.extend(options.username);
        auth.push(password);
        proto_resp::compose_command(&auth, &mut request);
    }
    let db_text = db.to_string();
    proto_resp::compose_command(&[b"SELECT", db_text.as_bytes()], &mut request);
    for (index, payload, ttl_ms) in &found {
        let ttl_text = ttl_ms.to_string();
        let mut line: Vec<&[u8]> =
            vec![restore.as_bytes(), ctx.arg(*index), ttl_text.as_bytes(), payload];
        if options.replace {
            line.push(b"REPLACE");
        }
        proto_resp::compose_command(&line, &mut request);
    }
    let preamble = usize::from(options.password.is_some()) + 1;
    let (host, port) = (ctx.arg(1), ctx.arg(2));
    let replies = match send_with_retry(host, port, timeout, &request, preamble, found.len()) {
        Ok(replies) => replies,
        Err(Failed::Connecting) => {
            return ctx.error("IOERR error or timeout connecting to the client");
        }
        Err(Failed::Writing { .. }) => {
            return ctx.error("IOERR error or timeout writing to target instance");
        }
        Err(Failed::Reading { .. }) => {
            return ctx.error("IOERR error or timeout reading to target instance");
        }
    };
    // AUTH's or SELECT's error is the one reported, else the first RESTORE's; a key is
    // deleted here only where all went well for it.
    let preamble_error = replies.preamble.iter().find(|line| line.starts_with(b"-"));
    let mut first_error = preamble_error;
    for ((index, _, _), line) in found.iter().zip(&replies.restores) {
        if preamble_error.is_some() || line.starts_with(b"-") {
            first_error = first_error.or(Some(line));
        } else if !options.copy {
            let deleted = delete::delete(&shared.core.store, ctx.counters, ctx.key(*index), None);
            if deleted == DeleteOutcome::Deleted {
                ctx.wrote(class::GENERIC, "del", *index);
            }
        }
    }
    match first_error {
        Some(line) => {
            let text = String::from_utf8_lossy(&line[1..]).into_owned();
            ctx.error(format!("ERR Target instance replied with error: {text}"));
        }
        None if replies.restores.len() < found.len() => {
            ctx.error("IOERR error or timeout reading to target instance");
        }
        None => ctx.reply().ok(),
    }
}

fn parse_options<'a>(ctx: &Ctx<'a>) -> Result<Options<'a>, &'static str> {
    let mut options = Options { first_key: 3, keys: 1, ..Options::default() };
    let mut index = 6;
    while index < ctx.argc() {
        let (option, more) = (ctx.arg(index), ctx.argc() - index - 1);
        if is_option(option, "copy") {
            options.copy = true;
        } else if is_option(option, "replace") {
            options.replace = true;
        } else if is_option(option, "auth") {
            if more < 1 {
                return Err(error::SYNTAX);
            }
            options.password = Some(ctx.arg(index + 1));
            index += 1;
        } else if is_option(option, "auth2") {
            if more < 2 {
                return Err(error::SYNTAX);
            }
            options.username = Some(ctx.arg(index + 1));
            options.password = Some(ctx.arg(index + 2));
            index += 2;
        } else if is_option(option, "keys") {
            if !ctx.arg(3).is_empty() {
                return Err("ERR When using MIGRATE KEYS option, the key argument must be set \
                            to the empty string");
            }
            (options.first_key, options.keys) = (index + 1, more);
            break;
        } else {
            return Err(error::SYNTAX);
        }
        index += 1;
    }
    Ok(options)
}

/// Why an exchange with the target failed; `timed_out`: it was a timeout (Redis does not
/// try again after one).
enum Failed {
    Connecting,
    Writing { timed_out: bool },
    Reading { timed_out: bool },
}

/// The target's reply lines: AUTH's and SELECT's, then one per RESTORE, fewer when the
/// connection failed before the last.
struct Replies {
    preamble: Vec<Vec<u8>>,
    restores: Vec<Vec<u8>>,
    /// The connection failed by timing out (when `restores` is short).
    timed_out: bool,
}

/// [`exchange`], tried once more on a fresh connection when it failed for a reason other
/// than a timeout before the target had answered any RESTORE (as Redis retries once when
/// its cached connection turns out to be closed).
fn send_with_retry(
    host: &[u8],
    port: &[u8],
    timeout: Duration,
    request: &[u8],
    preamble: usize,
    restores: usize,
) -> Result<Replies, Failed> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let outcome = exchange(host, port, timeout, request, preamble, restores);
        let may_retry = match &outcome {
            Err(Failed::Writing { timed_out } | Failed::Reading { timed_out }) => !timed_out,
            Ok(replies) => replies.restores.is_empty() && !replies.timed_out,
            Err(Failed::Connecting) => false,
        };
        if attempt == 2 || !may_retry {
            return outcome;
        }
    }
}

/// Connects to the target, writes `request` and reads `preamble + restores` reply lines.
fn exchange(
    host: &[u8],
    port: &[u8],
    timeout: Duration,
    request: &[u8],
    preamble: usize,
    restores: usize,
) -> Result<Replies, Failed> {
    let timed_out = |e: &std::io::Error| {
        matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
    };
    let address = resolve(host, port).ok_or(Failed::Connecting)?;
    // Redis's blocking connect reports success whatever happens after the address is
    // resolved, so a refused or timed-out connection fails at its first write: the same
    // error here.
    let stream =
        connect(&address, timeout).map_err(|e| Failed::Writing { timed_out: timed_out(&e) })?;
    (&stream).write_all(request).map_err(|e| Failed::Writing { timed_out: timed_out(&e) })?;
    let mut reader = BufReader::new(&stream);
    let mut replies = Replies { preamble: Vec::new(), restores: Vec::new(), timed_out: false };
    for _ in 0..preamble {
        let line =
            read_line(&mut reader).map_err(|e| Failed::Reading { timed_out: timed_out(&e) })?;
        replies.preamble.push(line);
    }
    for _ in 0..restores {
        match read_line(&mut reader) {
            Ok(line) => replies.restores.push(line),
            Err(e) => {
                replies.timed_out = timed_out(&e);
                break;
            }
        }
    }
    Ok(replies)
}

/// The target's address; `None` (the "connecting" error) when it does not resolve.
fn resolve(host: &[u8], port: &[u8]) -> Option<SocketAddr> {
    let host = std::str::from_utf8(host).ok()?;
    let port: u16 = std::str::from_utf8(port).ok()?.parse().ok()?;
    (host, port).to_socket_addrs().ok()?.next()
}

fn connect(address: &SocketAddr, timeout: Duration) -> std::io::Result<TcpStream> {
    let stream = TcpStream::connect_timeout(address, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

/// One reply line without its CRLF, cut at [`LINE_MAX`]; an error at the end of input.
fn read_line(reader: &mut impl BufRead) -> std::io::Result<Vec<u8>> {
    let mut line = Vec::new();
    let read = reader.by_ref().take(READ_MAX).read_until(b'\n', &mut line)?;
    if read == 0 || !line.ends_with(b"\n") {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    while line.last().is_some_and(|&byte| byte == b'\n' || byte == b'\r') {
        line.pop();
    }
    line.truncate(LINE_MAX - 1);
    Ok(line)
}
