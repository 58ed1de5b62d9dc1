//! `md <key> <flags>*`: delete; with `I` mark stale instead (new CAS, win token reset, `T`
//! may shorten the TTL); with `x` replace the value by an empty one (client flags from `F`,
//! TTL from `T`), keeping the CAS unless `E` gives one. `C` guards all of them.

use proto_memcache::meta::{MetaCommand, MetaDelete, MetaFlags, MetaStatus};
use store::{Change, Expiry, Item, MetaState};

use super::{error, Echo};
use crate::{
    core::delete::{self, DeleteOutcome},
    counters::bump,
    memcache::{expiry, Changed, Ctx, Session, OUT_OF_MEMORY},
};

const INVALIDATED: MetaState = MetaState { stale: true, win_token_sent: false };

pub(in crate::memcache) fn execute(
    ctx: &mut Ctx<'_>,
    session: &mut Session,
    request: &MetaDelete<'_>,
) {
    let flags = request.flags;
    let key = session.meta_key(request.key, flags.base64_key);
    let echo = Echo { command: MetaCommand::Delete, flags: &request.flags, key: request.key };
    if !flags.invalidate && !flags.remove_value {
        let status =
            match delete::delete(&ctx.view.core().store, ctx.counters, key, flags.compare_cas) {
                DeleteOutcome::Deleted => {
                    ctx.changed = Changed::Key;
                    MetaStatus::Hd
                }
                DeleteOutcome::NotFound => MetaStatus::Nf,
                DeleteOutcome::Exists => MetaStatus::Ex,
            };
        return echo.status(ctx.out, status);
    }
    // `I` and `x` keep an item (stale, or emptied): not a delete, so done here.
    let new_ttl = flags.update_ttl_secs.map(|ttl| expiry(ttl, ctx.now_ms()));
    let result = ctx.view.core().store.modify(key, |current| match current {
        None => (Change::Keep, MetaStatus::Nf),
        Some(item) if flags.compare_cas.is_some_and(|cas| cas != item.cas()) => {
            (Change::Keep, MetaStatus::Ex)
        }
        Some(item) => (change(&flags, &item, new_ttl), MetaStatus::Hd),
    });
    let status = match result {
        Ok((_, status)) => status,
        Err(_) => return error(ctx, OUT_OF_MEMORY),
    };
    // memcached counts a tombstone as a delete hit; invalidation as neither. Either changed
    // the item (stale, a new CAS; or emptied).
    match status {
        MetaStatus::Hd if flags.invalidate => ctx.changed = Changed::Key,
        MetaStatus::Hd => {
            ctx.changed = Changed::Key;
            bump(&ctx.counters.delete_hits, 1)
        }
        _ => bump(&ctx.counters.delete_misses, 1),
    }
    echo.status(ctx.out, status);
}

/// `x` (a tombstone, stale too with `I`) or `I` alone (the item marked stale).
fn change(flags: &MetaFlags<'_>, item: &Item<'_>, new_ttl: Option<Expiry>) -> Change {
    if !flags.remove_value {
        let expiry = new_ttl.unwrap_or(item.expiry());
        return Change::Rewrite { expiry, meta: INVALIDATED, cas: flags.new_cas };
    }
    // The tombstone is a new item; invalidating it as well gives it a new CAS too.
    let (cas, meta) = match flags.invalidate {
        true => (flags.new_cas, INVALIDATED),
        false => (Some(flags.new_cas.unwrap_or(item.cas())), MetaState::default()),
    };
    Change::WriteWith {
        value: Vec::new(),
        flags: flags.set_flags.unwrap_or(0),
        expiry: new_ttl.unwrap_or(Expiry::Never),
        cas,
        meta,
    }
}

#[cfg(test)]
mod tests {
    use crate::memcache::tests::Harness;

    // Goal: md deletes (HD), misses (NF, even when quiet), compares (EX), echoes k and O.
    #[test]
    fn delete() {
        let mut h = Harness::new();
        h.check("md k\r\nmd k q\r\n", "NF\r\nNF\r\n");
        h.check("set k 0 0 1\r\nx\r\nmd k q\r\nmn\r\nget k\r\n", "STORED\r\nMN\r\nEND\r\n");
        h.check("set k 0 0 1\r\nx\r\n", "STORED\r\n");
        let cas = h.cas(b"k");
        h.check(format!("md k C{} k O5\r\n", cas + 1), "EX kk O5\r\n");
        h.check(format!("md k C{cas} k O5\r\n"), "HD kk O5\r\n");
        h.check(
            "set key 0 0 1\r\nx\r\nmd a2V5 b k\r\nget key\r\n",
            "STORED\r\nHD ka2V5 b\r\nEND\r\n",
        );
        let totals = h.totals();
        assert_eq!((totals.delete_hits, totals.delete_misses), (3, 3));
    }

    // Goal: I keeps the item, marks it stale with a new (or the given) CAS and resets the
    // win token; T sets its TTL.
    #[test]
    fn invalidate() {
        let mut h = Harness::new();
        h.check("set k 0 0 2\r\nhi\r\n", "STORED\r\n");
        let old = h.cas(b"k");
        h.check("md k I T30\r\n", "HD\r\n");
        let new = h.cas(b"k");
        assert_ne!(old, new);
        h.check("mg k t c v\r\nmg k\r\n", format!("VA 2 t30 c{new} X W\r\nhi\r\nHD Z X\r\n"));
        // Invalidating again lets the next reader win again.
        h.check("md k I E500 q\r\nmg k c\r\n", "HD c500 X W\r\n");
        assert_eq!(h.totals().delete_hits, 0);
    }

    // Goal: x leaves an empty item with F's flags and T's TTL, keeping the CAS (or E's);
    // with I it is stale and gets a new CAS.
    #[test]
    fn remove_value() {
        let mut h = Harness::new();
        h.check("set k 5 100 2\r\nhi\r\n", "STORED\r\n");
        let cas = h.cas(b"k");
        h.check("md k x F3\r\n", "HD\r\n");
        h.check("mg k v f c t\r\n", format!("VA 0 f3 c{cas} t-1\r\n\r\n"));
        h.check("md k x E8 T9\r\nmg k c t\r\n", "HD\r\nHD c8 t9\r\n");
        h.check("md k x I\r\n", "HD\r\n");
        let stale = h.cas(b"k");
        assert_ne!(stale, 8);
        h.check("mg k c s f\r\n", format!("HD c{stale} s0 f0 X W\r\n"));
    }
}
