//! The replica's side: a thread that connects to the primary, does Redis's handshake
//! (AUTH with `masteruser`/`masterauth`, PING, REPLCONF listening-port and capa, PSYNC),
//! takes a full copy (the RDB written to a file in `dir`, then loaded in place of every
//! key) or continues where it was, then runs each command of the stream as the master
//! client and appends its bytes to this server's own backlog, so that its offsets are the
//! primary's (a sub-replica, or a promotion, continues from them). It acknowledges its
//! offset every second and at REPLCONF GETACK, and starts over (after a second) whenever
//! the link breaks, until REPLICAOF names another primary or NO ONE.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{TcpStream, ToSocketAddrs},
    sync::Arc,
    time::{Duration, Instant},
};

use crate::Shared;

/// The link's state, for ROLE and INFO.
#[derive(Debug, Default)]
pub(crate) struct LinkState {
    pub master: Option<(String, u16)>,
    /// Bumped at each REPLICAOF: a link thread of an older generation stops.
    pub generation: u64,
    pub status: Status,
    /// Unix ms of the last bytes from the primary.
    pub last_io_ms: u64,
    /// Unix ms the link went down (0: up, or never up).
    pub down_since_ms: u64,
    /// redis.conf's `replicaof`, until the server has started.
    pub configured: Option<(String, u16)>,
    /// CLIENT KILL TYPE master: the link's thread drops its connection (and reconnects).
    pub drop_requested: bool,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    #[default]
    Connect,
    Connecting,
    Sync,
    Connected,
}

impl Status {
    /// ROLE's name for it.
    pub fn role_name(self) -> &'static str {
        match self {
            Status::Connect => "connect",
            Status::Connecting => "connecting",
            Status::Sync => "sync",
            Status::Connected => "connected",
        }
    }
}

pub(crate) enum Followed {
    Already,
    Started,
}

/// CLIENT KILL of the master client: the link reconnects, continuing with PSYNC.
pub(crate) fn drop_connection(shared: &Shared) {
    shared.core.repl.link.lock().drop_requested = true;
}

/// Whether the link to the primary is up (a replica may feed its own replicas).
pub(crate) fn is_up(shared: &Shared) -> bool {
    shared.core.repl.link.lock().status == Status::Connected
}

/// ROLE on a replica: the primary, the link's state, the offset.
pub(crate) fn role_of(shared: &Shared) -> Option<(String, u16, &'static str, i64)> {
    let link = shared.core.repl.link.lock();
    let (host, port) = link.master.clone()?;
    let offset = match link.status {
        Status::Connected => shared.core.repl.journal.lock().offset() as i64,
        _ => -1,
    };
    Some((host, port, link.status.role_name(), offset))
}

/// REPLICAOF host port: follow it (a thread of its own connects and keeps connecting).
pub(crate) fn follow(shared: &Arc<Shared>, host: String, port: u16) -> Followed {
    let repl = &shared.core.repl;
    let generation = {
        let mut link = repl.link.lock();
        if link.master.as_ref() == Some(&(host.clone(), port)) {
            return Followed::Already;
        }
        link.master = Some((host.clone(), port));
        link.generation += 1;
        link.status = Status::Connect;
        link.down_since_ms = crate::resp::now_unix_ms(shared);
        link.generation
    };
    repl.set_replica(true);
    repl.set_journaling(false);
    drop_feeds(shared);
    let shared = Arc::clone(shared);
    let spawned = std::thread::Builder::new()
        .name("spinel-repl-link".into())
        .spawn(move || run(&shared, generation, &host, port));
    if let Err(e) = spawned {
        eprintln!("spinel: cannot start the replication link: {e}");
    }
    Followed::Started
}

/// REPLICAOF NO ONE: stop following, and become a primary that continues the history
/// (its replicas may PSYNC from the old ID up to here).
pub(crate) fn stop_following(shared: &Shared) {
    let repl = &shared.core.repl;
    {
        let mut link = repl.link.lock();
        if link.master.is_none() {
            return;
        }
        link.master = None;
        link.generation += 1;
        link.status = Status::Connect;
    }
    repl.set_replica(false);
    let mut journal = repl.journal.lock();
    journal.promote();
    if journal.backlog.is_some() {
        repl.set_journaling(true);
    }
    drop(journal);
    // As Redis: this server's replicas must learn the new replication ID, which they do
    // by reconnecting (a partial resync, from the second ID).
    drop_feeds(shared);
}

/// Closes this server's own replicas (they resynchronise with the new history).
fn drop_feeds(shared: &Shared) {
    let feeds = std::mem::take(&mut shared.core.repl.journal.lock().feeds);
    for feed in feeds {
        feed.mark_gone();
        shared.core.repl.wake(feed.worker, false);
    }
}

fn current(shared: &Shared, generation: u64) -> bool {
    shared.core.repl.link.lock().generation == generation
}

fn set_status(shared: &Shared, generation: u64, status: Status) {
    let mut link = shared.core.repl.link.lock();
    if link.generation == generation {
        if status != Status::Connected && link.status == Status::Connected {
            link.down_since_ms = crate::resp::now_unix_ms(shared);
        }
        if status == Status::Connected {
            link.down_since_ms = 0;
        }
        link.status = status;
    }
}

fn run(shared: &Shared, generation: u64, host: &str, port: u16) {
    while current(shared, generation) {
        set_status(shared, generation, Status::Connecting);
        if let Err(why) = session(shared, generation, host, port) {
            if current(shared, generation) {
                eprintln!("spinel: replication link to {host}:{port}: {why}");
            }
        }
        set_status(shared, generation, Status::Connect);
        std::thread::sleep(Duration::from_secs(1));
    }
}

type Link = BufReader<TcpStream>;

fn session(shared: &Shared, generation: u64, host: &str, port: u16) -> Result<(), String> {
    let address = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve: {e}"))?
        .next()
        .ok_or("no address")?;
    let stream = TcpStream::connect_timeout(&address, Duration::from_secs(5))
        .map_err(|e| format!("cannot connect: {e}"))?;
    let _ = stream.set_nodelay(true);
    stream.set_read_timeout(Some(Duration::from_secs(10))).map_err(|e| e.to_string())?;
    let mut link = BufReader::with_capacity(1 << 16, stream);
    handshake(shared, &mut link)?;
    let (known_id, known_offset) = {
        let journal = shared.core.repl.journal.lock();
        (journal.replid.clone(), journal.offset())
    };
    let from = (known_offset + 1).to_string();
    if shared.core.repl.failover_psync.load(std::sync::atomic::Ordering::Relaxed) {
        send(&mut link, &[b"PSYNC", known_id.as_bytes(), from.as_bytes(), b"FAILOVER"])?;
    } else {
        send(&mut link, &[b"PSYNC", known_id.as_bytes(), from.as_bytes()])?;
    }
    let answer = read_line_skipping_newlines(&mut link)?;
    if let Some(rest) = answer.strip_prefix("+FULLRESYNC ") {
        let (replid, offset) = rest.split_once(' ').ok_or("bad FULLRESYNC")?;
        let offset: u64 = offset.trim().parse().map_err(|_| "bad FULLRESYNC offset")?;
        set_status(shared, generation, Status::Sync);
        full_copy(shared, &mut link, replid, offset)?;
    } else if let Some(rest) = answer.strip_prefix("+CONTINUE") {
        let new_id = rest.trim();
        if !new_id.is_empty() && new_id != known_id {
            let mut journal = shared.core.repl.journal.lock();
            journal.replid2 = std::mem::replace(&mut journal.replid, new_id.to_string());
            journal.second_offset = known_offset as i64 + 1;
        }
    } else {
        return Err(format!("PSYNC answered {answer}"));
    }
    super::failover::finished(shared);
    set_status(shared, generation, Status::Connected);
    super::link_stream::stream(shared, generation, link)
}

/// REPLCONF listening-port (`replica-announce-port` when set, else the RESP port) and,
/// when `replica-announce-ip` is set, REPLCONF ip-address: what the primary shows in its
/// INFO `slaveN` line and ROLE, where Sentinel finds this replica.
fn announce(shared: &Shared, link: &mut Link) -> Result<(), String> {
    use crate::resp::replication::{kept_int, kept_text};
    let port = match kept_int(shared, "replica-announce-port") {
        0 => shared.core.settings.resp_port.to_string(),
        announced => announced.to_string(),
    };
    send(link, &[b"REPLCONF", b"listening-port", port.as_bytes()])?;
    expect_ok(link, "REPLCONF listening-port")?;
    let ip = kept_text(shared, "replica-announce-ip");
    if !ip.is_empty() {
        send(link, &[b"REPLCONF", b"ip-address", ip.as_bytes()])?;
        expect_ok(link, "REPLCONF ip-address")?;
    }
    Ok(())
}

/// AUTH (when `masterauth` is set), PING, REPLCONF listening-port and capa.
fn handshake(shared: &Shared, link: &mut Link) -> Result<(), String> {
    let auth = crate::resp::replication::kept_text(shared, "masterauth");
    if !auth.is_empty() {
        let user = crate::resp::replication::kept_text(shared, "masteruser");
        match user.is_empty() {
            true => send(link, &[b"AUTH", auth.as_bytes()])?,
            false => send(link, &[b"AUTH", user.as_bytes(), auth.as_bytes()])?,
        }
        expect_ok(link, "AUTH")?;
    }
    send(link, &[b"PING"])?;
    let pong = read_line(link)?;
    if pong.starts_with('-') && !pong.starts_with("-NOAUTH") && !pong.starts_with("-NOPERM") {
        return Err(format!("PING answered {pong}"));
    }
    if pong.starts_with('-') {
        return Err(format!("PING answered {pong} (set masterauth)"));
    }
    announce(shared, link)?;
    send(link, &[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"])?;
    expect_ok(link, "REPLCONF capa")
}

fn expect_ok(link: &mut Link, what: &str) -> Result<(), String> {
    let line = read_line(link)?;
    match line.starts_with('+') {
        true => Ok(()),
        false => Err(format!("{what} answered {line}")),
    }
}

pub(super) fn send(link: &mut Link, parts: &[&[u8]]) -> Result<(), String> {
    let mut out = Vec::new();
    proto_resp::compose_command(parts, &mut out);
    link.get_mut().write_all(&out).map_err(|e| format!("cannot send: {e}"))
}

fn read_line(link: &mut Link) -> Result<String, String> {
    let mut line = Vec::new();
    let read = link.by_ref().take(4096).read_until(b'\n', &mut line);
    match read {
        Ok(0) => Err("closed by the primary".into()),
        Ok(_) if !line.ends_with(b"\n") => Err("line too long".into()),
        Ok(_) => Ok(String::from_utf8_lossy(&line).trim_end().to_string()),
        Err(e) => Err(format!("cannot read: {e}")),
    }
}

/// A line, after the bare newlines a primary sends to keep the link alive while it
/// prepares the copy.
fn read_line_skipping_newlines(link: &mut Link) -> Result<String, String> {
    let started = Instant::now();
    loop {
        match read_line(link) {
            Ok(line) if line.is_empty() => {}
            Ok(line) => return Ok(line),
            Err(why) if why.contains("WouldBlock") || why.contains("timed out") => {
                if started.elapsed() > Duration::from_secs(60) {
                    return Err(why);
                }
            }
            Err(why) => return Err(why),
        }
    }
}

/// The full copy: the payload (`$<len>` or `$EOF:<mark>`) into a file, then every key
/// replaced by the file's.
fn full_copy(shared: &Shared, link: &mut Link, replid: &str, offset: u64) -> Result<(), String> {
    // A new history: this server's own replicas take a copy of it again.
    drop_feeds(shared);
    let header = read_line_skipping_newlines(link)?;
    let dir = &shared.core.settings.dir;
    let path = dir.join(format!("temp-spinel-repl-{}.rdb", std::process::id()));
    let written = receive_payload(link, &header, &path);
    let loaded = written.and_then(|()| super::load_full_copy(shared, &path));
    let _ = std::fs::remove_file(&path);
    loaded?;
    let size = crate::resp::replication::backlog_size(shared);
    shared.core.repl.journal.lock().restart_at(replid.to_string(), offset, size);
    Ok(())
}

fn receive_payload(link: &mut Link, header: &str, path: &std::path::Path) -> Result<(), String> {
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?,
    );
    let io = |e: std::io::Error| format!("while receiving the copy: {e}");
    if let Some(mark) = header.strip_prefix("$EOF:") {
        let mark = mark.as_bytes();
        if mark.len() != 40 {
            return Err("bad EOF mark".into());
        }
        receive_until_mark(link, &mut file, mark).map_err(io)?;
    } else {
        let len: u64 = header
            .strip_prefix('$')
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("bad payload header {header}"))?;
        let copied = std::io::copy(&mut link.by_ref().take(len), &mut file).map_err(io)?;
        if copied != len {
            return Err("the copy was cut short".into());
        }
    }
    file.flush().map_err(io)
}

/// Copies until the 40-byte mark, which is not written.
fn receive_until_mark(link: &mut Link, file: &mut impl Write, mark: &[u8]) -> std::io::Result<()> {
    let mut tail: Vec<u8> = Vec::with_capacity(80);
    let mut silent_since = Instant::now();
    loop {
        let chunk = match link.fill_buf() {
            Ok([]) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(chunk) => chunk.to_vec(),
            Err(e) if is_timeout(&e) && silent_since.elapsed() < Duration::from_secs(60) => {
                continue
            }
            Err(e) => return Err(e),
        };
        silent_since = Instant::now();
        link.consume(chunk.len());
        tail.extend_from_slice(&chunk);
        if tail.ends_with(mark) {
            return file.write_all(&tail[..tail.len() - mark.len()]);
        }
        // Keep the last 40 bytes back: they may be the start of the mark.
        if tail.len() > mark.len() {
            let keep_from = tail.len() - mark.len();
            file.write_all(&tail[..keep_from])?;
            tail.drain(..keep_from);
        }
    }
}

pub(super) fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
}

/// INFO's view of the link.
pub(crate) struct LinkInfo {
    pub host: String,
    pub port: u16,
    pub up: bool,
    pub syncing: bool,
    pub last_io_secs: i64,
    pub down_secs: i64,
}

pub(crate) fn info_of(shared: &Shared) -> Option<LinkInfo> {
    let link = shared.core.repl.link.lock();
    let (host, port) = link.master.clone()?;
    let now_ms = crate::resp::now_unix_ms(shared);
    let up = link.status == Status::Connected;
    let last_io_secs = match link.last_io_ms {
        0 => -1,
        at => (now_ms.saturating_sub(at) / 1000) as i64,
    };
    let down_secs = match link.down_since_ms {
        0 => -1,
        at => (now_ms.saturating_sub(at) / 1000) as i64,
    };
    Some(LinkInfo { host, port, up, syncing: link.status == Status::Sync, last_io_secs, down_secs })
}
