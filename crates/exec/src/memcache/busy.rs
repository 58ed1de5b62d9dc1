//! memcached requests while a Redis script is busy (past `busy-reply-threshold`): the
//! script holds the store to itself, so a request that reads or writes it is refused at
//! once rather than left waiting. memcached has no BUSY reply; text and meta clients get a
//! `SERVER_ERROR` line (which every client reports as an error), binary clients status
//! 0x85 (`Busy` in memcached's binary protocol). Requests that touch no data are served.

use proto_memcache::Request;

/// What a text or meta request gets while a script is busy.
pub const BUSY_LINE: &[u8] =
    b"SERVER_ERROR busy running a script; SCRIPT KILL or SHUTDOWN NOSAVE on the Redis port\r\n";

/// The binary protocol's status for "busy" (0x85).
pub const BUSY_STATUS: proto_memcache::binary::Status = proto_memcache::binary::Status::Busy;

/// How a request fares while a script is busy.
#[derive(Debug, PartialEq, Eq)]
pub enum Busy {
    /// It touches no data: serve it.
    Serve,
    /// Refused, with [`BUSY_LINE`].
    Refuse,
    /// Refused without a reply (`noreply`: the client reads none).
    RefuseSilently,
}

/// How `request` fares while a script is busy.
pub fn judge(request: &Request<'_>) -> Busy {
    let noreply = match request {
        Request::Version
        | Request::Quit
        | Request::Verbosity { .. }
        | Request::Stats { .. }
        | Request::MetaNoop
        | Request::Shutdown { .. } => return Busy::Serve,
        Request::Store(store) => store.noreply,
        Request::Delete { noreply, .. }
        | Request::Arith { noreply, .. }
        | Request::Touch { noreply, .. }
        | Request::FlushAll { noreply, .. } => *noreply,
        _ => false,
    };
    if noreply {
        Busy::RefuseSilently
    } else {
        Busy::Refuse
    }
}
