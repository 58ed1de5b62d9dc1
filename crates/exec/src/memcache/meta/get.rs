//! `mg <key> <flags>*`: get, touch (`T`), vivify on miss (`N`), recache tokens (`R`, `W`,
//! `X`, `Z`).
//!
//! A plain `mg` reads through a store reader and writes nothing. One that may change the
//! item (`T`, `N`, `R`, or a stale item whose win token is still to be handed out) runs
//! under the key's lock, so exactly one client gets `W`; the reply is composed from the item
//! as it was under the lock. A large value (`store::loans`) is lent from the reader path
//! only, never from under the lock. `h` is the access bit from before this request, `l` is always
//! 0 (the store keeps no access times), and `u` reads without counting an access.

use proto_memcache::meta::{ItemInfo, MetaCommand, MetaGet, MetaStatus, RecacheState};
use store::{Change, Expiry, Item, MetaState};

use super::{error, Echo};
use crate::{
    core::{get, get::Gets, modify_composing, touch},
    memcache::{
        expiry, last_access_secs, ttl_secs, visible_cas, Changed, Ctx, MemcacheView, Session,
        OUT_OF_MEMORY,
    },
};

/// What the locked path found.
enum Outcome {
    Hit,
    Miss,
    /// Created by `N`; the reply waits for the new item's CAS unique.
    Vivified {
        expiry: Expiry,
    },
}

pub(in crate::memcache) fn execute(
    ctx: &mut Ctx<'_>,
    session: &mut Session,
    request: &MetaGet<'_>,
) {
    let flags = &request.flags;
    let key = session.meta_key(request.key, flags.base64_key);
    let may_write = flags.update_ttl_secs.is_some()
        || flags.vivify_ttl_secs.is_some()
        || flags.recache_ttl_secs.is_some();
    if may_write {
        return locked(ctx, key, request, None);
    }
    if let Read::NeedsLock { hit_before } = read(ctx, key, request) {
        locked(ctx, key, request, Some(hit_before));
    }
}

/// How far the reader path got.
enum Read {
    Answered,
    /// The item is stale with its win token still to hand out, which takes the lock. The
    /// reader has counted an access already, so the access bit it saw is passed on.
    NeedsLock {
        hit_before: bool,
    },
}

/// Answers from a reader, without a write.
fn read(ctx: &mut Ctx<'_>, key: &[u8], request: &MetaGet<'_>) -> Read {
    let view = ctx.view;
    let mut gets = Gets::new(&view.core().store);
    let found = if request.flags.no_bump { gets.peek(key) } else { gets.get(key) };
    let Some(item) = found else {
        echo(request).status(ctx.out, MetaStatus::En);
        gets.finish(ctx.counters);
        return Read::Answered;
    };
    let meta = item.meta_state();
    if meta.stale && !meta.win_token_sent {
        // The locked path answers and counts.
        return Read::NeedsLock { hit_before: item.accessed_before() };
    }
    let recache = RecacheState { already_won: meta.win_token_sent, stale: meta.stale, won: false };
    // Reading the clock costs as much as the lookup; only `l` and `t` need it.
    let now_ms = if request.flags.needs_clock() { ctx.now_ms() } else { 0 };
    let hit = Hit { expiry: item.expiry(), now_ms, hit_before: item.accessed_before() };
    compose_hit(view, ctx.out, request, (&item, true), hit, recache);
    gets.finish(ctx.counters);
    Read::Answered
}

/// The path that may write: touch, vivify, hand out a win token.
fn locked(ctx: &mut Ctx<'_>, key: &[u8], request: &MetaGet<'_>, hit_before: Option<bool>) {
    let flags = &request.flags;
    let now_ms = ctx.now_ms();
    let new_expiry = flags.update_ttl_secs.map(|ttl| expiry(ttl, now_ms));
    let recache_at = flags.recache_ttl_secs.map(|ttl| expiry(ttl, now_ms));
    let view = ctx.view;
    let result = modify_composing(&view.core().store, key, ctx.out, |current, out| {
        let Some(item) = current else {
            return vivify(flags.vivify_ttl_secs, flags.new_cas, now_ms);
        };
        let before = item.meta_state();
        let expiry = new_expiry.unwrap_or(item.expiry());
        let won = !before.win_token_sent && (before.stale || recache_due(&item, recache_at));
        let recache = RecacheState { already_won: before.win_token_sent, stale: before.stale, won };
        let hit_before = hit_before.unwrap_or(item.accessed_before());
        // Not lent: the locked step may be run again (and its reply written again) after
        // making room, which must not happen while a loan keeps this thread pinned.
        let hit = Hit { expiry, now_ms, hit_before };
        compose_hit(view, out, request, (&item, false), hit, recache);
        if new_expiry.is_none() && !won {
            return (Change::Keep, Outcome::Hit);
        }
        let meta = MetaState { win_token_sent: before.win_token_sent || won, ..before };
        (Change::Rewrite { expiry, meta, cas: Some(item.cas()) }, Outcome::Hit)
    });
    match result {
        Ok((_, Outcome::Miss)) => {
            echo(request).status(ctx.out, MetaStatus::En);
            count(ctx, request, false);
        }
        Ok((_, Outcome::Hit)) => {
            // `T` retimed it (a win token alone changes nothing a Redis client reads).
            if new_expiry.is_some() {
                ctx.changed = Changed::Key;
            }
            if !flags.no_bump {
                // The locked read does not count as an access; count it now.
                view.core().store.reader().get(key);
            }
            count(ctx, request, true);
        }
        Ok((cas, Outcome::Vivified { expiry })) => {
            ctx.changed = Changed::Key;
            let cas = cas.expect("a vivified item was written");
            compose_vivified(ctx, request, cas, expiry, now_ms);
            count(ctx, request, true);
        }
        Err(_) => error(ctx, OUT_OF_MEMORY),
    }
}

/// `N` on a miss: an empty item whose creator holds the win token.
fn vivify(ttl_secs: Option<i64>, new_cas: Option<u64>, now_ms: u64) -> (Change, Outcome) {
    let Some(ttl_secs) = ttl_secs else { return (Change::Keep, Outcome::Miss) };
    let expiry = expiry(ttl_secs, now_ms);
    let meta = MetaState { stale: false, win_token_sent: true };
    let change = Change::WriteWith { value: Vec::new(), flags: 0, expiry, cas: new_cas, meta };
    (change, Outcome::Vivified { expiry })
}

/// `R`: the item expires before the recache time (one that never expires is never due).
fn recache_due(item: &Item<'_>, recache_at: Option<Expiry>) -> bool {
    matches!((item.expiry(), recache_at), (Expiry::AtMs(at), Some(Expiry::AtMs(due))) if at < due)
}

/// What a hit's reply reports besides the item: its expiry (new, with `T`), the clock (0
/// when no flag asked for a time), and the access bit from before this request.
#[derive(Clone, Copy)]
struct Hit {
    expiry: Expiry,
    now_ms: u64,
    hit_before: bool,
}

/// A hit's reply; its value lent rather than copied when `lends` (a large one, with lending
/// open on this thread: see `store::loans`).
fn compose_hit(
    view: MemcacheView<'_>,
    out: &mut Vec<u8>,
    request: &MetaGet<'_>,
    (item, lends): (&Item<'_>, bool),
    hit: Hit,
    recache: RecacheState,
) {
    let flags = &request.flags;
    // `C` with a matching CAS: the client has this value already.
    let value_wanted = flags.return_value && flags.compare_cas != Some(item.cas());
    let value = value_wanted.then_some(item.value());
    // A reply echoing no flag reads nothing from the item info: skip decoding it.
    let info = if flags.echoes_any() {
        ItemInfo {
            cas: Some(visible_cas(view.core(), item.cas())),
            client_flags: Some(item.flags()),
            hit_before: Some(hit.hit_before),
            last_access_secs: Some(last_access_secs(item, hit.now_ms)),
            value_len: Some(item.value().len()),
            ttl_secs: Some(ttl_secs(hit.expiry, hit.now_ms)),
        }
    } else {
        ItemInfo::default()
    };
    let status = if value.is_some() { MetaStatus::Va } else { MetaStatus::Hd };
    let lend = |at| lends && item.lend_value(at);
    echo(request).reply_lending(out, (status, &info, recache), value, lend);
}

fn compose_vivified(
    ctx: &mut Ctx<'_>,
    request: &MetaGet<'_>,
    cas: u64,
    expiry: Expiry,
    now_ms: u64,
) {
    let flags = &request.flags;
    let value_wanted = flags.return_value && flags.compare_cas != Some(cas);
    let value = value_wanted.then_some(&b""[..]);
    let info = ItemInfo {
        cas: Some(ctx.visible_cas(cas)),
        client_flags: Some(0),
        hit_before: Some(false),
        last_access_secs: Some(0),
        value_len: Some(0),
        ttl_secs: Some(ttl_secs(expiry, now_ms)),
    };
    let status = if value.is_some() { MetaStatus::Va } else { MetaStatus::Hd };
    let recache = RecacheState { won: true, ..RecacheState::default() };
    echo(request).reply(ctx.out, status, &info, recache, value);
}

fn echo<'q>(request: &'q MetaGet<'_>) -> Echo<'q> {
    Echo { command: MetaCommand::Get, flags: &request.flags, key: request.key }
}

/// Counts an `mg` that went through the lock: one that touched a hit (`T`) as a touch
/// (memcached does), anything else as a get.
fn count(ctx: &Ctx<'_>, request: &MetaGet<'_>, hit: bool) {
    if hit && request.flags.update_ttl_secs.is_some() {
        touch::count(ctx.counters, touch::TouchOutcome::Touched);
    } else {
        get::count(ctx.counters, u64::from(hit), u64::from(!hit));
    }
}

#[cfg(test)]
mod tests {
    use crate::{memcache::tests::Harness, Settings};

    // Goal: a miss is EN (with O and k echoed), dropped in quiet mode.
    #[test]
    fn miss() {
        let mut h = Harness::new();
        h.check("mg k v\r\n", "EN\r\n");
        h.check("mg k v q\r\nmn\r\n", "MN\r\n");
        h.check("mg k O1 k s\r\n", "EN O1 kk\r\n");
        let totals = h.totals();
        assert_eq!((totals.cmd_get, totals.get_misses), (3, 3));
    }

    // Goal: a hit returns the asked-for flags in request order, the value with v, and is
    // sent in quiet mode too.
    #[test]
    fn hit_flags() {
        let mut h = Harness::new();
        h.check("set k 5 0 2\r\nhi\r\n", "STORED\r\n");
        let cas = h.cas(b"k");
        h.check("mg k\r\n", "HD\r\n");
        h.check("mg k v\r\n", "VA 2\r\nhi\r\n");
        h.check("mg k s v f t c O123 k q\r\n", format!("VA 2 s2 f5 t-1 c{cas} O123 kk\r\nhi\r\n"));
        // C with the current CAS: the client has the value, so no value is sent.
        h.check(format!("mg k v C{cas}\r\n"), "HD\r\n");
        h.check(format!("mg k v C{}\r\n", cas + 1), "VA 2\r\nhi\r\n");
        // Flags that only other commands use are ignored.
        h.check("mg k F9 D3 J1 MA x I P1 Lpath\r\n", "HD\r\n");
        let totals = h.totals();
        assert_eq!((totals.cmd_get, totals.get_hits), (6, 6));
    }

    // Goal: h is the access bit before this request, u reads without setting it, l is 0.
    #[test]
    fn hit_before_and_no_bump() {
        let mut h = Harness::new();
        h.check("set k 0 0 1\r\nx\r\n", "STORED\r\n");
        h.check("mg k h l u\r\n", "HD h0 l0\r\n");
        h.check("mg k h\r\n", "HD h0\r\n");
        h.check("mg k h\r\n", "HD h1\r\n");
        // Also on the locked path (T), where the access is counted after the reply.
        h.check("set t 0 0 1\r\nx\r\nmg t T9 h\r\nmg t h\r\n", "STORED\r\nHD h0\r\nHD h1\r\n");
    }

    // Goal: T touches (and counts as a touch), t reports the TTL left, rounded up.
    #[test]
    fn touch() {
        let mut h = Harness::new();
        h.check("set k 0 0 1\r\nx\r\n", "STORED\r\n");
        let cas = h.cas(b"k");
        h.check("mg k T30 t c\r\n", format!("HD t30 c{cas}\r\n"));
        h.advance_secs(10);
        h.check("mg k t\r\n", "HD t20\r\n");
        h.check("mg k T0 t\r\nmg k t v\r\n", "HD t-1\r\nVA 1 t-1\r\nx\r\n");
        h.check("mg k T-1\r\nmg k\r\n", "HD\r\nEN\r\n");
        h.check("mg missing T30\r\n", "EN\r\n");
        let totals = h.totals();
        assert_eq!((totals.cmd_touch, totals.touch_hits), (3, 3));
        assert_eq!((totals.cmd_get, totals.get_hits, totals.get_misses), (4, 2, 2));
    }

    // Goal: N creates an empty item on a miss and hands its creator W; others get Z until
    // a new value is stored. E chooses the created item's CAS.
    #[test]
    fn vivify() {
        let mut h = Harness::new();
        h.check("mg n N30 t v\r\n", "VA 0 t30 W\r\n\r\n");
        let cas = h.cas(b"n");
        h.check("mg n N30 c v\r\n", format!("VA 0 c{cas} Z\r\n\r\n"));
        h.check("mg n s\r\n", "HD s0 Z\r\n");
        h.check("ms n 2\r\nhi\r\nmg n N30 v\r\n", "HD\r\nVA 2\r\nhi\r\n");
        h.check("mg e N30 E77 c f h\r\n", "HD c77 f0 h0 W\r\n");
        h.advance_secs(30);
        h.check("mg e v\r\n", "EN\r\n");
    }

    // Goal: R hands out W once the TTL left is below its token, once; never for an item
    // without TTL.
    #[test]
    fn recache() {
        let mut h = Harness::new();
        h.check("set k 0 100 1\r\nx\r\nset forever 0 0 1\r\nx\r\n", "STORED\r\nSTORED\r\n");
        h.check("mg k R30 t\r\n", "HD t100\r\n");
        h.advance_secs(80);
        h.check("mg k R30 t\r\n", "HD t20 W\r\n");
        h.check("mg k R30 t\r\nmg k\r\n", "HD t20 Z\r\nHD Z\r\n");
        h.check("mg forever R30\r\n", "HD\r\n");
    }

    // Goal: a stale item (md I) shows X; the first reader wins W, later ones get Z; a new
    // value clears both.
    #[test]
    fn stale() {
        let mut h = Harness::new();
        h.check("set k 0 0 2\r\nhi\r\nmd k I\r\n", "STORED\r\nHD\r\n");
        let cas = h.cas(b"k");
        h.check("mg k v c\r\n", format!("VA 2 c{cas} X W\r\nhi\r\n"));
        h.check("mg k v u\r\n", "VA 2 Z X\r\nhi\r\n");
        h.check("set k 0 0 1\r\nx\r\nmg k\r\n", "STORED\r\nHD\r\n");
    }

    // Goal: a plain mg lends a large value (sent from item memory), a quiet one too; one
    // that touches, and a small value, are copied; every reply reads the same either way.
    #[test]
    fn plain_mg_lends_large_values_and_locked_mg_copies() {
        use crate::memcache::tests::lending;
        let mut h = Harness::lending_sizes();
        let big = "v".repeat(store::loans::VALUE_BYTES_MIN);
        h.check(
            format!("set k 3 0 {}\r\n{big}\r\nset s 0 0 1\r\nx\r\n", big.len()),
            "STORED\r\nSTORED\r\n",
        );
        let n = big.len();
        let lent = lending(|| h.run("mg k v f\r\nmg s v\r\nmg k v q k\r\nmn\r\n"));
        let want = format!("VA {n} f3\r\n{big}\r\nVA 1\r\nx\r\nVA {n} kk\r\n{big}\r\nMN\r\n");
        assert_eq!(lent, (2 * n, want.into_bytes()));
        let touched = lending(|| h.run("mg k T30 v\r\n"));
        assert_eq!(touched, (0, format!("VA {n}\r\n{big}\r\n").into_bytes()));
        // Without lending open (UDP, TLS), nothing is lent.
        assert_eq!(h.run("mg k s v\r\n"), format!("VA {n} s{n}\r\n{big}\r\n").into_bytes());
    }

    // Goal: b keys are decoded for the store and echoed as sent; -C makes c read 0.
    #[test]
    fn base64_key_and_no_cas() {
        let mut h = Harness::with_settings(Settings { cas_enabled: false, ..Settings::default() });
        h.check("set key 0 0 1\r\nx\r\n", "STORED\r\n");
        h.check("mg a2V5 b k v c\r\n", "VA 1 ka2V5 b c0\r\nx\r\n");
        h.check("mg a2V4 b k\r\n", "EN ka2V4 b\r\n");
        // A decoded key that starts with NUL still lands in database 0's namespace.
        h.check("mg AGs= b N0\r\n", "HD W\r\n");
        assert!(h.shared.core.store.reader().peek(b"\0\0\0k").is_some());
    }
}
