//! `set`, `add`, `replace`, `append`, `prepend`, `cas`; `delete`; `touch`.

use proto_memcache::text::{response::Status, Store, StoreCommand};
use store::{Mode, StoreError};

use super::{expiry, Ctx, Session};
use crate::counters::bump;

/// memcached's reply when a value cannot be stored for its size.
pub(super) const TOO_LARGE: &[u8] = b"SERVER_ERROR object too large for cache";
/// memcached's reply when there is no memory for a value.
pub(super) const OUT_OF_MEMORY: &[u8] = b"SERVER_ERROR out of memory storing object";
const BAD_FORMAT: &[u8] = b"CLIENT_ERROR bad command line format";

/// The error line for a store failure that is not a plain "not stored" outcome.
pub(super) fn failure_line(error: &StoreError) -> &'static [u8] {
    match error {
        StoreError::TooLarge { .. } => TOO_LARGE,
        StoreError::NoSpace => OUT_OF_MEMORY,
        // The codec's key limit is far below the store's; kept for completeness.
        StoreError::KeyTooLong { .. } => BAD_FORMAT,
        StoreError::NotFound
        | StoreError::Exists
        | StoreError::NotStored
        | StoreError::NotNumeric => unreachable!("{error} is an outcome, not a failure"),
    }
}

pub(super) fn store(ctx: &mut Ctx<'_>, session: &mut Session, request: &Store<'_>) {
    let mode = match request.command {
        StoreCommand::Set => Mode::Set,
        StoreCommand::Add => Mode::Add,
        StoreCommand::Replace => Mode::Replace,
        StoreCommand::Append => Mode::Append,
        StoreCommand::Prepend => Mode::Prepend,
        StoreCommand::Cas { cas_unique } => Mode::Cas(cas_unique),
    };
    let expiry = expiry(request.exptime, ctx.now_ms());
    let key = session.key(request.key);
    let shared = ctx.shared;
    let store = &shared.store;
    let result = store.store(key, request.value, request.flags, expiry, mode);
    count_store(ctx, mode, &result);
    let status = match result {
        Ok(_) => Status::Stored,
        Err(StoreError::NotStored) => Status::NotStored,
        Err(StoreError::Exists) => Status::Exists,
        Err(StoreError::NotFound) => Status::NotFound,
        Err(error) => {
            // memcached drops the old value of a failed set, so that a reader cannot keep
            // seeing data the client meant to replace.
            if mode == Mode::Set {
                let _ = store.delete(key, None);
            }
            return ctx.error(failure_line(&error), request.noreply);
        }
    };
    ctx.status(status, request.noreply);
}

/// `cmd_set` counts every storage command memcached could allocate an item for (all but
/// too-large ones); `cas` also counts hits, bad values and misses.
pub(super) fn count_store<T>(ctx: &Ctx<'_>, mode: Mode, result: &Result<T, StoreError>) {
    let counters = ctx.counters;
    if !matches!(result, Err(StoreError::TooLarge { .. })) {
        bump(&counters.cmd_set, 1);
    }
    if result.is_ok() {
        bump(&counters.total_items, 1);
    }
    if let Mode::Cas(_) = mode {
        match result {
            Ok(_) => bump(&counters.cas_hits, 1),
            Err(StoreError::Exists) => bump(&counters.cas_badval, 1),
            Err(StoreError::NotFound) => bump(&counters.cas_misses, 1),
            Err(_) => {}
        }
    }
}

pub(super) fn delete(ctx: &mut Ctx<'_>, session: &mut Session, key: &[u8], noreply: bool) {
    let status = match ctx.shared.store.delete(session.key(key), None) {
        Ok(()) => {
            bump(&ctx.counters.delete_hits, 1);
            Status::Deleted
        }
        Err(_) => {
            bump(&ctx.counters.delete_misses, 1);
            Status::NotFound
        }
    };
    ctx.status(status, noreply);
}

pub(super) fn touch(
    ctx: &mut Ctx<'_>,
    session: &mut Session,
    key: &[u8],
    exptime: i64,
    noreply: bool,
) {
    let expiry = expiry(exptime, ctx.now_ms());
    bump(&ctx.counters.cmd_touch, 1);
    match ctx.shared.store.touch(session.key(key), expiry) {
        Ok(_) => {
            bump(&ctx.counters.touch_hits, 1);
            ctx.status(Status::Touched, noreply);
        }
        Err(StoreError::NotFound) => {
            bump(&ctx.counters.touch_misses, 1);
            ctx.status(Status::NotFound, noreply);
        }
        Err(error) => ctx.error(failure_line(&error), noreply),
    }
}

#[cfg(test)]
mod tests {
    use store::{WhenFull, MIB};

    use crate::{
        memcache::tests::{Harness, ITEM_SIZE_MAX, T0_MS},
        Settings,
    };

    // Goal: every storage command's replies, as memcached sends them.
    #[test]
    fn storage_commands() {
        let mut h = Harness::new();
        h.check("set k 1 0 1\r\na\r\n", "STORED\r\n");
        h.check("add k 0 0 1\r\nb\r\nadd n 2 0 1\r\nn\r\n", "NOT_STORED\r\nSTORED\r\n");
        h.check("replace x 0 0 1\r\nb\r\nreplace k 3 0 1\r\nb\r\n", "NOT_STORED\r\nSTORED\r\n");
        h.check("append x 0 0 1\r\nb\r\nprepend x 0 0 1\r\nb\r\n", "NOT_STORED\r\nNOT_STORED\r\n");
        // Append and prepend keep the item's flags; theirs are ignored.
        h.check("append k 9 0 1\r\n>\r\nprepend k 9 0 1\r\n<\r\n", "STORED\r\nSTORED\r\n");
        h.check("get k n\r\n", "VALUE k 3 3\r\n<b>\r\nVALUE n 2 1\r\nn\r\nEND\r\n");
        let cas = h.cas(b"k");
        h.check(format!("cas k 0 0 1 {}\r\nc\r\n", cas + 1), "EXISTS\r\n");
        h.check("cas x 0 0 1 1\r\nc\r\n", "NOT_FOUND\r\n");
        h.check(
            format!("cas k 4 0 1 {cas}\r\nc\r\nget k\r\n"),
            "STORED\r\nVALUE k 4 1\r\nc\r\nEND\r\n",
        );
        h.check(format!("cas k 0 0 1 {cas}\r\nd\r\n"), "EXISTS\r\n");
        let totals = h.totals();
        assert_eq!((totals.cas_hits, totals.cas_badval, totals.cas_misses), (1, 2, 1));
        assert_eq!(totals.cmd_set, 13);
    }

    // Goal: noreply silences every storage reply, errors included.
    #[test]
    fn noreply() {
        let mut h = Harness::new();
        let big = "x".repeat(ITEM_SIZE_MAX + 1);
        let wire = format!(
            "set k 0 0 1 noreply\r\na\r\nadd k 0 0 1 noreply\r\nb\r\ncas k 0 0 1 1 noreply\r\nc\r\n\
             set k 0 0 {} noreply\r\n{big}\r\ndelete k noreply\r\ntouch k 1 noreply\r\n",
            big.len()
        );
        h.check(wire, "");
    }

    // Goal: a value too large for the store gets SERVER_ERROR, and a failed set drops the
    // old value (memcached does, so that stale data does not outlive a failed update).
    #[test]
    fn too_large() {
        let mut h = Harness::new();
        let big = "x".repeat(ITEM_SIZE_MAX);
        h.check("set k 0 0 1\r\na\r\nappend k 0 0 1\r\nb\r\n", "STORED\r\nSTORED\r\n");
        let reply = "SERVER_ERROR object too large for cache\r\n";
        h.check(
            format!("append k 0 0 {}\r\n{big}\r\nget k\r\n", big.len()),
            format!("{reply}VALUE k 0 2\r\nab\r\nEND\r\n"),
        );
        h.check(
            format!("set k 0 0 {}\r\n{big}\r\nget k\r\n", big.len()),
            format!("{reply}END\r\n"),
        );
        assert_eq!(h.totals().cmd_set, 2);
    }

    // Goal: a full store that may not evict answers `out of memory storing object`.
    #[test]
    fn out_of_memory() {
        let settings = Settings { evictions: false, ..Settings::default() };
        let mut h = Harness::with(settings, WhenFull::Refuse, MIB / 2);
        let value = "v".repeat(4000);
        let mut replies = Vec::new();
        for i in 0..400 {
            replies.extend(h.run(format!("set k{i} 0 0 {}\r\n{value}\r\n", value.len())));
        }
        let replies = String::from_utf8(replies).expect("text");
        assert!(replies.starts_with("STORED\r\n"));
        assert!(replies.ends_with("SERVER_ERROR out of memory storing object\r\n"), "{replies}");
    }

    // Goal: delete and touch replies and counters.
    #[test]
    fn delete_and_touch() {
        let mut h = Harness::new();
        h.check(
            "set k 0 0 1\r\na\r\ndelete k\r\ndelete k\r\n",
            "STORED\r\nDELETED\r\nNOT_FOUND\r\n",
        );
        h.check(
            "touch k 10\r\nset k 0 0 1\r\na\r\ntouch k 10\r\n",
            "NOT_FOUND\r\nSTORED\r\nTOUCHED\r\n",
        );
        h.advance_secs(10);
        h.check("get k\r\n", "END\r\n");
        h.check("set k 0 0 1\r\na\r\ntouch k -1\r\nget k\r\n", "STORED\r\nTOUCHED\r\nEND\r\n");
        let totals = h.totals();
        assert_eq!((totals.delete_hits, totals.delete_misses), (1, 1));
        assert_eq!((totals.cmd_touch, totals.touch_hits, totals.touch_misses), (3, 2, 1));
    }

    // Goal: exptime rules: 0 never; negative already expired (and the old value gone);
    // up to 30 days relative; above, a Unix time (past: expired; future: until then).
    #[test]
    fn exptime_rules() {
        let mut h = Harness::new();
        let now_secs = T0_MS / 1000;
        h.check("set never 0 0 1\r\na\r\nset rel 0 2592000 1\r\nb\r\n", "STORED\r\nSTORED\r\n");
        h.check(
            "set neg 0 0 1\r\nc\r\nset neg 0 -1 1\r\nd\r\nget neg\r\n",
            "STORED\r\nSTORED\r\nEND\r\n",
        );
        h.check(format!("set past 0 {} 1\r\ne\r\nget past\r\n", now_secs - 1), "STORED\r\nEND\r\n");
        h.check(format!("set abs 0 {} 1\r\nf\r\n", now_secs + 5), "STORED\r\n");
        h.advance_secs(4);
        h.check("get abs\r\n", "VALUE abs 0 1\r\nf\r\nEND\r\n");
        h.advance_secs(1);
        h.check("get abs rel\r\n", "VALUE rel 0 1\r\nb\r\nEND\r\n");
        h.advance_secs(2_592_000 - 5);
        h.check("get rel never\r\n", "VALUE never 0 1\r\na\r\nEND\r\n");
    }
}
