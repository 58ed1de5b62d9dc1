//! The replica's side once synchronised: each command of the primary's stream is run as
//! the master client (no reply, no ACL, no READONLY), and its bytes appended to this
//! server's backlog, so `slave_repl_offset` counts exactly the bytes processed.

use std::{
    io::BufRead,
    time::{Duration, Instant},
};

use proto_resp::{ArgStorage, Command, ParseError};
use store::{Expiry, Mode, StoreOptions};

use super::link::{is_timeout, send};
use crate::Shared;

/// How often the replica acknowledges its offset (Redis: every second).
const ACK_EVERY: Duration = Duration::from_secs(1);

/// A memcached item's flags and CAS, from the `spinel:mc` ECHO, for the SET after it.
#[derive(Clone, Copy)]
struct McMeta {
    flags: u32,
    cas: u64,
}

struct Applier<'a> {
    shared: &'a Shared,
    session: crate::resp::Session,
    counters: std::sync::Arc<crate::Counters>,
    worker: usize,
    meta: Option<McMeta>,
    scratch: Vec<u8>,
}

pub(super) fn stream(shared: &Shared, generation: u64, mut link: BufReader) -> Result<(), String> {
    let worker = shared.core.repl.link_worker();
    let mut applier = Applier {
        shared,
        session: crate::resp::Session::master_client(shared),
        counters: shared.core.counters(worker),
        worker,
        meta: None,
        scratch: Vec::new(),
    };
    let result = pump(&mut applier, generation, &mut link);
    applier.session.disconnect(shared);
    result
}

type BufReader = std::io::BufReader<std::net::TcpStream>;

fn pump(applier: &mut Applier<'_>, generation: u64, link: &mut BufReader) -> Result<(), String> {
    let shared = applier.shared;
    link.get_mut().set_read_timeout(Some(Duration::from_millis(200))).map_err(|e| e.to_string())?;
    let timeout = Duration::from_secs(
        crate::resp::replication::kept_int(shared, "repl-timeout").max(1) as u64,
    );
    // The first ACK goes at once: a primary that sent an EOF-marked copy starts the
    // stream only then.
    let mut last_ack = Instant::now().checked_sub(ACK_EVERY).unwrap_or_else(Instant::now);
    let (mut pending, mut last_io) = (Vec::new(), Instant::now());
    let mut storage = ArgStorage::default();
    loop {
        {
            let mut link = shared.core.repl.link.lock();
            if link.generation != generation {
                return Ok(());
            }
            if std::mem::take(&mut link.drop_requested) {
                return Err("the master client was killed (CLIENT KILL)".into());
            }
        }
        if last_ack.elapsed() >= ACK_EVERY {
            ack(shared, link)?;
            last_ack = Instant::now();
        }
        match link.fill_buf() {
            Ok([]) => return Err("closed by the primary".into()),
            Ok(chunk) => {
                pending.extend_from_slice(chunk);
                let n = chunk.len();
                link.consume(n);
                last_io = Instant::now();
                shared.core.repl.link.lock().last_io_ms = crate::resp::now_unix_ms(shared);
            }
            Err(e) if is_timeout(&e) => {
                super::start_requested_walks(shared);
                if last_io.elapsed() > timeout {
                    return Err("timeout: no data from the primary".into());
                }
                continue;
            }
            Err(e) => return Err(format!("cannot read: {e}")),
        }
        let (used, kept) = apply_all(applier, link, &pending, storage)?;
        storage = kept;
        pending.drain(..used);
    }
}

/// Runs every whole command `pending` holds (appending each to the backlog); returns the
/// bytes used, and the argument storage for the next call.
fn apply_all(
    applier: &mut Applier<'_>,
    link: &mut BufReader,
    pending: &[u8],
    mut storage: ArgStorage,
) -> Result<(usize, ArgStorage), String> {
    let (shared, limits) = (applier.shared, proto_resp::Limits::default());
    let mut used_total = 0;
    loop {
        let input = &pending[used_total..];
        match proto_resp::parse_command_in(input, &limits, storage) {
            Ok((command, used)) => {
                let bytes = input[..used].to_vec();
                // A copy of this replica being walked must see no command applied
                // during it (the walk is then exact at its offset).
                while super::walking(shared) {
                    std::thread::sleep(Duration::from_millis(2));
                }
                let getack = applier.apply(&command);
                storage = command.into_storage();
                used_total += used;
                let repl = &shared.core.repl;
                repl.journal.lock().append_raw(&bytes, repl);
                super::start_requested_walks(shared);
                if getack {
                    ack(shared, link)?;
                }
            }
            Err(ParseError::Incomplete) => {
                storage = ArgStorage::default();
                break;
            }
            Err(_) => return Err("the primary sent a request that does not parse".into()),
        }
    }
    Ok((used_total, storage))
}

fn ack(shared: &Shared, link: &mut BufReader) -> Result<(), String> {
    let offset = shared.core.repl.journal.lock().offset().to_string();
    send(link, &[b"REPLCONF", b"ACK", offset.as_bytes()])
}

impl Applier<'_> {
    /// Runs one command of the stream; true for REPLCONF GETACK (answer with the offset).
    fn apply(&mut self, command: &Command<'_>) -> bool {
        let name = command.arg(0).unwrap_or_default();
        if name.eq_ignore_ascii_case(b"replconf") {
            return command.arg(1).is_some_and(|a| a.eq_ignore_ascii_case(b"getack"));
        }
        if name.eq_ignore_ascii_case(b"ping") {
            return false;
        }
        if name.eq_ignore_ascii_case(b"echo") {
            self.meta = command.arg(1).and_then(parse_meta);
            return false;
        }
        if let Some(meta) = self.meta.take() {
            if name.eq_ignore_ascii_case(b"set") && self.store_item(command, meta) {
                return false;
            }
        }
        let gate = &self.shared.core.gate;
        gate.enter(self.worker);
        self.scratch.clear();
        let _ = crate::resp::execute(
            self.shared,
            &self.counters,
            &mut self.session,
            command,
            &mut self.scratch,
        );
        gate.leave(self.worker);
        false
    }

    /// `SET key value [PXAT ms]` after a `spinel:mc` ECHO: the item with its flags and CAS.
    fn store_item(&mut self, command: &Command<'_>, meta: McMeta) -> bool {
        let (Some(key), Some(value)) = (command.arg(1), command.arg(2)) else { return false };
        let expiry = match (command.argc(), command.arg(3), command.arg(4)) {
            (3, _, _) => Expiry::Never,
            (5, Some(px), Some(at)) if px.eq_ignore_ascii_case(b"pxat") => {
                match std::str::from_utf8(at).ok().and_then(|a| a.parse().ok()) {
                    Some(at) => Expiry::AtMs(at),
                    None => return false,
                }
            }
            _ => return false,
        };
        let mut scratch = Vec::new();
        let stored = crate::keyspace::encode(self.session.db, key, &mut scratch);
        let options = StoreOptions { cas: Some(meta.cas), ..StoreOptions::default() };
        let store = &self.shared.core.store;
        let _ = store.store_with(stored, value, meta.flags, expiry, Mode::Set, options);
        store.raise_cas_floor(meta.cas);
        self.shared.core.memcached_wrote.store(true, std::sync::atomic::Ordering::Relaxed);
        true
    }
}

fn parse_meta(text: &[u8]) -> Option<McMeta> {
    let text = std::str::from_utf8(text).ok()?.strip_prefix("spinel:mc ")?;
    let (flags, cas) = text.split_once(' ')?;
    Some(McMeta { flags: flags.parse().ok()?, cas: cas.parse().ok()? })
}
