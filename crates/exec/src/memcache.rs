//! memcached text and meta requests against the store.

use proto_memcache::Request;

use crate::{Counters, Flow, Shared};

/// Per-connection state of a memcached connection.
#[derive(Debug, Default)]
pub struct Session {}

/// Executes one parsed request, appending its reply (if any) to `out`.
pub fn execute(
    shared: &Shared,
    counters: &Counters,
    session: &mut Session,
    request: &Request<'_>,
    out: &mut Vec<u8>,
) -> Flow {
    todo!()
}
