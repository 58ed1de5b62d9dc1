//! `ms <key> <datalen> <flags>*`: store a value, as memcached's `process_mset_command`.
//!
//! `M` picks the mode (set, add `E`, replace `R`, append `A`, prepend `P`); `C` turns set
//! and replace into compare-and-swap and guards append and prepend; `I` with `C` stores an
//! older CAS's value as stale instead of failing; `N` lets append and prepend create a
//! missing item with that TTL; `E` chooses the new CAS unique; `F` and `T` set client flags
//! and TTL. The reply returns `c` (0 when nothing was stored) and `s`.

use proto_memcache::meta::{ItemInfo, MetaCommand, MetaSet, MetaStatus, RecacheState, SetMode};
use store::{Mode, StoreOptions};

use super::{error, Echo};
use crate::{
    core::{
        storage::{self, OnRefusal, StoreOutcome, Write},
        Refusal,
    },
    memcache::{expiry, storing_refusal, watch::SetStatus, Changed, Ctx, Session},
};

/// Returns what the write did (`None`: refused before the store, as a key it cannot
/// hold), for watchers' `item_store` lines.
pub(in crate::memcache) fn execute(
    ctx: &mut Ctx<'_>,
    session: &mut Session,
    request: &MetaSet<'_>,
) -> Option<SetStatus> {
    let flags = &request.flags;
    let mode = match (request.mode, flags.compare_cas) {
        (SetMode::Set | SetMode::Replace, Some(cas)) => Mode::Cas(cas),
        (SetMode::Set, None) => Mode::Set,
        (SetMode::Replace, None) => Mode::Replace,
        (SetMode::Add, _) => Mode::Add,
        (SetMode::Append, _) => Mode::Append,
        (SetMode::Prepend, _) => Mode::Prepend,
    };
    let now_ms = ctx.now_ms();
    let write = Write {
        key: session.meta_key(request.key, flags.base64_key),
        value: request.value,
        flags: flags.set_flags.unwrap_or(0),
        expiry: expiry(flags.update_ttl_secs.unwrap_or(0), now_ms),
        mode,
        options: StoreOptions {
            cas: flags.new_cas,
            compare_cas: flags.compare_cas,
            allow_stale: flags.invalidate,
            size_max: None,
        },
        // `N` means something to append and prepend only; the store core ignores it
        // elsewhere.
        vivify: flags.vivify_ttl_secs.map(|ttl| expiry(ttl, now_ms)),
        // An append or prepend memcached cannot make leaves the old item (NS, below).
        on_refusal: if matches!(mode, Mode::Append | Mode::Prepend) {
            OnRefusal::KeepOld
        } else {
            OnRefusal::DropOld
        },
    };
    let (outcome, dropped) = storage::store_telling_drop(&ctx.view.core().store, &write);
    storage::count(ctx.counters, mode, &outcome);
    ctx.changed = Changed::of_store(&outcome, dropped);
    let chunk_len = request.key.len() + request.value.len();
    let item_size_max = ctx.view.core().store.config().item_size_max;
    let outcome = storage::memcached_outcome(outcome, mode, chunk_len, item_size_max);
    let echo = Echo { command: MetaCommand::Set, flags: &request.flags, key: request.key };
    let (status, cas, value_len, done) = match outcome {
        StoreOutcome::Stored(stored) => {
            (MetaStatus::Hd, ctx.visible_cas(stored.cas), stored.value_len, SetStatus::Stored)
        }
        StoreOutcome::NotStored => (MetaStatus::Ns, 0, request.value.len(), SetStatus::NotStored),
        StoreOutcome::Exists => (MetaStatus::Ex, 0, request.value.len(), SetStatus::Exists),
        StoreOutcome::NotFound => (MetaStatus::Nf, 0, request.value.len(), SetStatus::NotFound),
        StoreOutcome::Refused(refusal) => {
            error(ctx, storing_refusal(refusal));
            return match refusal {
                Refusal::TooLarge => Some(SetStatus::TooLarge),
                Refusal::NoMemory => Some(SetStatus::NoMemory),
                Refusal::KeyTooLong => None,
            };
        }
    };
    let info = ItemInfo { cas: Some(cas), value_len: Some(value_len), ..ItemInfo::default() };
    echo.reply(ctx.out, status, &info, RecacheState::default(), None);
    Some(done)
}

#[cfg(test)]
mod tests {
    use crate::memcache::tests::{Harness, ITEM_SIZE_MAX};

    // Goal: ms stores; returns c, s, k, O in request order; q drops HD only; F and T stick.
    #[test]
    fn set_and_returned_flags() {
        let mut h = Harness::new();
        h.check("ms k 2\r\nhi\r\n", "HD\r\n");
        let reply = String::from_utf8(h.run("ms k 2 c\r\nhi\r\n")).expect("text");
        assert_eq!(reply, format!("HD c{}\r\n", h.cas(b"k")));
        h.check("ms k 2 q\r\nhi\r\nmn\r\n", "MN\r\n");
        h.check("ms k 2 T30 F7 k O9 s b\r\nhi\r\n", "CLIENT_ERROR error decoding key\r\n");
        h.check("ms k 2 T30 F7 k O9 s\r\nhi\r\n", "HD kk O9 s2\r\n");
        h.check("mg k f t v\r\n", "VA 2 f7 t30\r\nhi\r\n");
        h.check("ms k 2 E99 c\r\nhi\r\nmg k c\r\n", "HD c99\r\nHD c99\r\n");
        h.check("ms a2V5 1 b k\r\nx\r\nget key\r\n", "HD ka2V5 b\r\nVALUE key 0 1\r\nx\r\nEND\r\n");
        assert_eq!(h.totals().cmd_set, 6);
    }

    // Goal: the M modes: add, replace, append, prepend, set; an unknown mode is an error.
    #[test]
    fn modes() {
        let mut h = Harness::new();
        h.check("ms k 2 ME\r\nhi\r\nms k 1 ME c s\r\nx\r\n", "HD\r\nNS c0 s1\r\n");
        h.check("ms r 1 MR\r\nx\r\nms k 2 MR\r\nmi\r\n", "NS\r\nHD\r\n");
        h.check("ms k 1 MA s\r\n>\r\nms k 1 MP\r\n<\r\n", "HD s3\r\nHD\r\n");
        h.check("ms x 1 MA\r\n>\r\nms x 1 MP\r\n<\r\n", "NS\r\nNS\r\n");
        h.check(
            "get k\r\nms k 1 MS\r\nz\r\nget k\r\n",
            "VALUE k 0 4\r\n<mi>\r\nEND\r\nHD\r\nVALUE k 0 1\r\nz\r\nEND\r\n",
        );
        h.check("ms k 1 MX\r\nz\r\n", "CLIENT_ERROR invalid mode for ms M token\r\n");
    }

    // Goal: N lets append and prepend create a missing item, with N's TTL.
    #[test]
    fn append_vivify() {
        let mut h = Harness::new();
        h.check("ms v 1 MA N30 T90\r\na\r\nmg v v t\r\n", "HD\r\nVA 1 t30\r\na\r\n");
        h.check(
            "ms v 1 MA N30\r\nb\r\nms v 1 MP N30\r\n<\r\nmg v v\r\n",
            "HD\r\nHD\r\nVA 3\r\n<ab\r\n",
        );
        // N means nothing to other modes.
        h.check("ms w 1 MR N30\r\nb\r\n", "NS\r\n");
    }

    // Goal: C compares (EX, NF), also for append; I with an older CAS stores stale.
    #[test]
    fn compare_and_invalidate() {
        let mut h = Harness::new();
        h.check("ms k 3\r\nold\r\n", "HD\r\n");
        let old = h.cas(b"k");
        h.check(format!("ms k 1 C{}\r\nx\r\nms n 1 C{old}\r\nx\r\n", old + 1), "EX\r\nNF\r\n");
        h.check(format!("ms k 1 MA C{}\r\nx\r\n", old + 1), "EX\r\n");
        h.check(format!("ms k 3 C{old} T60\r\nnew\r\n"), "HD\r\n");
        // Without I, the older CAS fails; with it, the value goes in stale, TTL kept.
        h.check(format!("ms k 5 C{old} T0\r\nolder\r\n"), "EX\r\n");
        h.check(format!("ms k 5 C{old} I T0\r\nolder\r\n"), "HD\r\n");
        h.check("mg k v t\r\n", "VA 5 t60 X W\r\nolder\r\n");
        let totals = h.totals();
        assert_eq!((totals.cas_hits, totals.cas_badval, totals.cas_misses), (2, 2, 1));
    }

    // Goal: a value over the store's item size limit is refused and the old one dropped.
    #[test]
    fn too_large() {
        let mut h = Harness::new();
        let big = "x".repeat(ITEM_SIZE_MAX);
        h.check("ms k 1 q\r\na\r\n", "");
        h.check(
            format!("ms k {} q\r\n{big}\r\nmg k\r\n", big.len()),
            "SERVER_ERROR object too large for cache\r\nEN\r\n",
        );
    }
}
