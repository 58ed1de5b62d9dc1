//! `ma <key> <flags>*`: incr (`MI`, `M+`, default) or decr (`MD`, `M-`) by `D` (default 1);
//! `N` creates a missing item with the value `J` (default 0) and that TTL; `C` guards, `E`
//! chooses the new CAS unique, `T` sets the TTL on success. Returns `c` and `t`, and with
//! `v` the new value. The arith core does the work; this file maps flags and replies.
//!
//! Not memcached: `t` reports the TTL after `T` even when `t` comes first in the request
//! (memcached reports the TTL as of that point in its flag loop).

use proto_memcache::meta::{Flag, ItemInfo, MetaArith, MetaCommand, MetaStatus, RecacheState};

use super::{error, Echo};
use crate::{
    core::arith::{self, Arith, ArithOutcome},
    memcache::{expiry, ttl_secs, Changed, Ctx, Session, NOT_NUMERIC, OUT_OF_MEMORY},
};

pub(in crate::memcache) fn execute(
    ctx: &mut Ctx<'_>,
    session: &mut Session,
    request: &MetaArith<'_>,
) {
    let flags = request.flags;
    let key = session.meta_key(request.key, flags.base64_key);
    let now_ms = ctx.now_ms();
    let vivify = flags.vivify_ttl_secs.map(|_| {
        // The created item's TTL is the last of `N` and `T` in the request (memcached
        // applies them in order).
        let ttl = flags.iter().filter_map(|flag| match flag {
            Flag::Vivify { ttl_secs } | Flag::UpdateTtl { ttl_secs } => Some(ttl_secs),
            _ => None,
        });
        (request.initial(), expiry(ttl.last().unwrap_or(0), now_ms))
    });
    let arith = Arith {
        op: request.mode,
        delta: request.delta(),
        compare_cas: flags.compare_cas,
        new_cas: flags.new_cas,
        new_expiry: flags.update_ttl_secs.map(|ttl| expiry(ttl, now_ms)),
        vivify,
    };
    let echo = Echo { command: MetaCommand::Arith, flags: &request.flags, key: request.key };
    match arith::apply(&ctx.view.core().store, ctx.counters, key, &arith) {
        ArithOutcome::NotFound => echo.status(ctx.out, MetaStatus::Nf),
        ArithOutcome::Exists => echo.status(ctx.out, MetaStatus::Ex),
        ArithOutcome::NotNumeric => error(ctx, NOT_NUMERIC),
        ArithOutcome::NoMemory => error(ctx, OUT_OF_MEMORY),
        ArithOutcome::Value { value, cas, expiry, .. } => {
            ctx.changed = Changed::Key;
            let info = ItemInfo {
                cas: Some(ctx.visible_cas(cas)),
                ttl_secs: Some(ttl_secs(expiry, now_ms)),
                ..ItemInfo::default()
            };
            let digits = arith::decimal(value);
            let value = flags.return_value.then_some(&digits[..]);
            let status = if value.is_some() { MetaStatus::Va } else { MetaStatus::Hd };
            echo.reply(ctx.out, status, &info, RecacheState::default(), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::memcache::tests::Harness;

    // Goal: ma increments by default, decrements with MD/M-, by D; v returns the value; q
    // drops the success reply; client flags stay.
    #[test]
    fn increment_and_decrement() {
        let mut h = Harness::new();
        h.check("ma n\r\nma n q\r\n", "NF\r\nNF\r\n");
        h.check("set n 5 0 2\r\n10\r\nma n\r\nma n v\r\n", "STORED\r\nHD\r\nVA 2\r\n12\r\n");
        h.check("ma n v D10 MD\r\nma n v M- D5\r\n", "VA 1\r\n2\r\nVA 1\r\n0\r\n");
        h.check(
            "ma n v M+ D3\r\nma n MI v\r\nma n q v\r\nmn\r\n",
            "VA 1\r\n3\r\nVA 1\r\n4\r\nMN\r\n",
        );
        h.check("get n\r\n", "VALUE n 5 2\r\n5 \r\nEND\r\n");
        h.check("set w 0 0 20\r\n18446744073709551615\r\nma w v\r\n", "STORED\r\nVA 1\r\n0\r\n");
        h.check("ma n MZ\r\n", "CLIENT_ERROR invalid mode for ma M token\r\n");
        let totals = h.totals();
        assert_eq!((totals.incr_hits, totals.incr_misses), (6, 2));
        assert_eq!(totals.decr_hits, 2);
    }

    // Goal: N creates a missing item holding J (not incremented), with N's TTL.
    #[test]
    fn vivify() {
        let mut h = Harness::new();
        h.check("ma c N30 J7 v t\r\nma c v t\r\n", "VA 1 t30\r\n7\r\nVA 1 t30\r\n8\r\n");
        h.check(
            "ma d N0 v t\r\nma e N0 MD q\r\nget e\r\n",
            "VA 1 t-1\r\n0\r\nVALUE e 0 1\r\n0\r\nEND\r\n",
        );
        assert_eq!(h.totals().incr_hits, 1);
    }

    // Goal: C compares, E sets the CAS, T sets the TTL, c and t report, k and O echo; a
    // non-numeric value is a client error.
    #[test]
    fn cas_ttl_and_errors() {
        let mut h = Harness::new();
        h.check("set n 0 0 1\r\n5\r\n", "STORED\r\n");
        let cas = h.cas(b"n");
        h.check(format!("ma n C{} k O1\r\n", cas + 1), "EX kn O1\r\n");
        h.check(format!("ma n C{cas} v\r\n"), "VA 1\r\n6\r\n");
        let new = h.cas(b"n");
        assert_ne!(new, cas);
        h.check("ma n E42 c T30 t\r\nmg n c t v\r\n", "HD c42 t30\r\nVA 1 c42 t30\r\n7\r\n");
        let reply = "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n";
        h.check("set t 0 0 1\r\nx\r\nma t q\r\n", format!("STORED\r\n{reply}"));
        h.check(
            "set bnum 0 0 1\r\n1\r\nma Ym51bQ== b k v\r\n",
            "STORED\r\nVA 1 kYm51bQ== b\r\n2\r\n",
        );
    }
}
