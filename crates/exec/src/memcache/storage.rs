//! `set`, `add`, `replace`, `append`, `prepend`, `cas`; `delete`; `touch`: each a call to
//! its core, replying with one status word.

use proto_memcache::{
    error,
    text::{response::Status, Store, StoreCommand},
    ErrorReply,
};
use store::{Mode, StoreOptions};

use super::{
    detail::{self, Event},
    expiry, storing_refusal, watch, Changed, Ctx, Session,
};
use crate::{
    core::{
        delete::{self, DeleteOutcome},
        storage::{self, OnRefusal, StoreOutcome, Write},
        touch::{self, TouchOutcome},
    },
    counters::{bump, Counters},
    memcache::MemcacheView,
};

pub(super) fn store(ctx: &mut Ctx<'_>, session: &mut Session, request: &Store<'_>) {
    let mode = match request.command {
        StoreCommand::Set => Mode::Set,
        StoreCommand::Add => Mode::Add,
        StoreCommand::Replace => Mode::Replace,
        StoreCommand::Append => Mode::Append,
        StoreCommand::Prepend => Mode::Prepend,
        StoreCommand::Cas { cas_unique } => Mode::Cas(cas_unique),
    };
    detail::record(&ctx.view.memcache().prefix_stats, request.key, Event::Set);
    let write = Write {
        key: session.key(request.key),
        value: request.value,
        flags: request.flags,
        expiry: expiry(request.exptime, ctx.now_ms()),
        mode,
        options: StoreOptions::default(),
        vivify: None,
        on_refusal: OnRefusal::DropOldIfSet,
    };
    let (outcome, dropped) = storage::store_telling_drop(&ctx.view.core().store, &write);
    storage::count(ctx.counters, mode, &outcome);
    ctx.changed = Changed::of_store(&outcome, dropped);
    if ctx.view.memcache().watchers.wants(crate::watch::kind::MUTATIONS) {
        let event = watch::StoreEvent {
            key: request.key,
            status: watch::store_status(&outcome),
            cmd: watch::text_cmd(request.command),
            expiry: write.expiry,
            size: watch::store_size(&outcome, request.value.len()),
            cfd: session.conn_number,
        };
        watch::item_store(ctx.view.memcache(), &event, ctx.now_ms());
    }
    let item_size_max = ctx.view.core().store.config().item_size_max;
    let chunk_len = request.key.len() + request.value.len();
    let status = match storage::memcached_outcome(outcome, mode, chunk_len, item_size_max) {
        StoreOutcome::Stored(_) => Status::Stored,
        StoreOutcome::NotStored => Status::NotStored,
        StoreOutcome::Exists => Status::Exists,
        StoreOutcome::NotFound => Status::NotFound,
        StoreOutcome::Refused(refusal) => {
            return ctx.error(storing_refusal(refusal), request.noreply)
        }
    };
    ctx.status(status, request.noreply);
}

/// A `set` or `ms` whose data block the parser refused as too large
/// ([`proto_memcache::ParseError::TooLarge`]): the old item goes too, as when the store
/// refuses a set, so a failed overwrite never leaves a stale value to be read.
pub fn refuse_too_large(
    view: MemcacheView<'_>,
    counters: &Counters,
    session: &mut Session,
    key: &[u8],
    base64_key: bool,
    noreply: bool,
    out: &mut Vec<u8>,
) {
    if super::acl::may_set(view, session, key, base64_key) {
        let conn_number = session.conn_number;
        let stored_key = session.meta_key(key, base64_key);
        forget_refused_set(view, counters, stored_key, key, conn_number);
    } else {
        bump(&counters.store_too_large, 1);
    }
    if !noreply {
        ErrorReply::ServerError(error::TOO_LARGE).compose(out);
    }
}

/// A set refused as too large drops the old item (`stored_key`: the key as the store keys it)
/// and counts and logs the refusal, on either protocol; an item dropped is a change the
/// Redis clients tracking its key are told of.
pub(crate) fn forget_refused_set(
    view: MemcacheView<'_>,
    counters: &Counters,
    stored_key: &[u8],
    key: &[u8],
    conn_number: u32,
) {
    let dropped = storage::drop_refused(&view.core().store, stored_key);
    if dropped && view.redis().tracking_any() {
        view.redis().key_changed(stored_key, view.core().worker_of(counters));
    }
    bump(&counters.store_too_large, 1);
    if view.memcache().watchers.wants(crate::watch::kind::MUTATIONS) {
        // As memcached: the item was never made, so no expiry and no size.
        let event = watch::StoreEvent {
            key,
            status: "too_large",
            cmd: "set",
            expiry: store::Expiry::Never,
            size: 0,
            cfd: conn_number,
        };
        watch::item_store(view.memcache(), &event, view.core().store.config().clock.now_ms());
    }
}

pub(super) fn delete(ctx: &mut Ctx<'_>, session: &mut Session, key: &[u8], noreply: bool) {
    detail::record(&ctx.view.memcache().prefix_stats, key, Event::Delete);
    let status = match delete::delete(&ctx.view.core().store, ctx.counters, session.key(key), None)
    {
        DeleteOutcome::Deleted => {
            ctx.changed = Changed::Key;
            Status::Deleted
        }
        DeleteOutcome::NotFound | DeleteOutcome::Exists => Status::NotFound,
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
    let outcome = touch::touch(&ctx.view.core().store, session.key(key), expiry);
    touch::count(ctx.counters, outcome);
    match outcome {
        TouchOutcome::Touched => {
            ctx.changed = Changed::Key;
            ctx.status(Status::Touched, noreply)
        }
        TouchOutcome::NotFound => ctx.status(Status::NotFound, noreply),
        TouchOutcome::Refused(refusal) => ctx.error(storing_refusal(refusal), noreply),
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
        // A block over the parser's 1 MiB limit, swallowed unread: the same rules, and
        // `ms` drops the old item in every mode (its key decoded from base64 with `b`).
        let huge = "y".repeat(1024 * 1024 + 1);
        let len = huge.len();
        let set_a = "set a 0 0 1\r\na\r\n";
        h.check(
            format!("{set_a}replace a 0 0 {len}\r\n{huge}\r\nget a\r\n"),
            format!("STORED\r\n{reply}VALUE a 0 1\r\na\r\nEND\r\n"),
        );
        h.check(format!("set a 0 0 {len} noreply\r\n{huge}\r\nget a\r\n"), "END\r\n");
        h.check(
            format!("{set_a}ms YQ== {len} b MA\r\n{huge}\r\nget a\r\n"),
            format!("STORED\r\n{reply}END\r\n"),
        );
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
