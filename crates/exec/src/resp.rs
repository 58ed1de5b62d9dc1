//! Redis commands against the store.

use proto_resp::{Command, Protocol};

use crate::{Counters, Flow, Shared};

/// Per-connection state of a Redis connection.
#[derive(Debug, Default)]
pub struct Session {
    pub db: u8,
    pub protocol: Protocol,
}

/// Executes one parsed command, appending its reply to `out`.
pub fn execute(
    shared: &Shared,
    counters: &Counters,
    session: &mut Session,
    command: &Command<'_>,
    out: &mut Vec<u8>,
) -> Flow {
    todo!()
}
