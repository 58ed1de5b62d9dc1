//! `incr` and `decr`: the arith core with no options; the reply is the new value.

use proto_memcache::text::{
    response::{compose_number, Status},
    ArithOp,
};

use super::{Changed, Ctx, Session, NOT_NUMERIC, OUT_OF_MEMORY};
use crate::core::arith::{self, Arith, ArithOutcome};

pub(super) fn execute(
    ctx: &mut Ctx<'_>,
    session: &mut Session,
    op: ArithOp,
    key: &[u8],
    delta: u64,
    noreply: bool,
) {
    let key = session.key(key);
    let outcome = arith::apply(&ctx.view.core().store, ctx.counters, key, &Arith::plain(op, delta));
    if let ArithOutcome::Value { .. } = outcome {
        ctx.changed = Changed::Key;
    }
    match outcome {
        ArithOutcome::Value { value, .. } if !noreply => compose_number(value, ctx.out),
        ArithOutcome::Value { .. } => {}
        ArithOutcome::NotFound => ctx.status(Status::NotFound, noreply),
        ArithOutcome::NotNumeric => ctx.error(NOT_NUMERIC, noreply),
        ArithOutcome::Exists => unreachable!("a plain incr compares no CAS unique"),
        ArithOutcome::NoMemory => ctx.error(OUT_OF_MEMORY, noreply),
    }
}

#[cfg(test)]
mod tests {
    use crate::memcache::tests::Harness;

    // Goal: incr/decr replies: the new value, NOT_FOUND, non-numeric, wrap and floor.
    #[test]
    fn incr_and_decr() {
        let mut h = Harness::new();
        h.check("incr n 1\r\ndecr n 1\r\n", "NOT_FOUND\r\nNOT_FOUND\r\n");
        h.check("set n 5 0 2\r\n10\r\nincr n 5\r\ndecr n 100\r\n", "STORED\r\n15\r\n0\r\n");
        // Shorter than before: padded to the old length, as memcached rewrites in place.
        h.check("get n\r\n", "VALUE n 5 2\r\n0 \r\nEND\r\n");
        h.check("set n 0 0 20\r\n18446744073709551615\r\nincr n 2\r\n", "STORED\r\n1\r\n");
        let reply = "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n";
        h.check(
            "set t 0 0 1\r\nx\r\nincr t 1\r\ndecr t 1\r\n",
            format!("STORED\r\n{reply}{reply}"),
        );
        h.check(
            "incr n 1 noreply\r\nincr t 1 noreply\r\nget n\r\n",
            format!("VALUE n 0 20\r\n2{}\r\nEND\r\n", " ".repeat(19)),
        );
        // Longer than before: the item grows.
        h.check(
            "set n 0 0 2\r\n99\r\nincr n 1\r\nget n\r\n",
            "STORED\r\n100\r\nVALUE n 0 3\r\n100\r\nEND\r\n",
        );
        h.check("incr n abc\r\n", "CLIENT_ERROR invalid numeric delta argument\r\n");
        let totals = h.totals();
        assert_eq!((totals.incr_hits, totals.incr_misses), (4, 1));
        assert_eq!((totals.decr_hits, totals.decr_misses), (1, 1));
    }
}
