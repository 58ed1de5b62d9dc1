//! Which keys a write made ready (Redis's `signalKeyAsReady`): noted while anyone waits,
//! served after the command (`serve_ready`).

use proto_resp::{
    commands::{CommandId, Flags},
    Route,
};

use super::super::Ctx;

/// After a write (the command in `ctx` ran, routed as `route`): while anyone waits, notes
/// the keys it may have made ready (Redis's `signalKeyAsReady`), to be served after the
/// command.
pub(in crate::resp) fn note_written(ctx: &mut Ctx<'_>, route: Route) {
    use proto_resp::commands::StreamId as X;
    if !ctx.shared.redis.blocking.any() {
        return;
    }
    // Keys the command (or another worker's) found expired: their waiters too.
    ctx.session.ready_keys.extend(ctx.shared.redis.blocking.take_expired());
    let spec = ctx.spec;
    let keys = match route {
        // XGROUP DESTROY answers the group's waiters with -NOGROUP.
        Route::Subcommand(proto_resp::SubcommandId::XgroupDestroy) => return note_key(ctx, 2),
        _ if !spec.flags.contains(Flags::WRITE) || spec.flags.contains(Flags::BLOCKING) => return,
        // Of the stream commands only XADD wakes anyone (XSETID, XDEL, XTRIM do not, in
        // Redis: an XREAD waiter whose stream they touched waits for the next XADD).
        Route::Command(CommandId::Streams(id)) if id != X::Xadd => return,
        Route::Command(CommandId::Swapdb) => {
            let (Some(a), Some(b)) = (db_arg(ctx, 1), db_arg(ctx, 2)) else { return };
            ctx.shared.redis.blocking.keys_in(|db| db == a || db == b)
        }
        // A flush answers XREADGROUP waiters ("the stream key no longer exists").
        Route::Command(CommandId::Flushall) => ctx.shared.redis.blocking.keys_in(|_| true),
        Route::Command(CommandId::Flushdb) => {
            let flushed = ctx.session.db;
            ctx.shared.redis.blocking.keys_in(|db| db == flushed)
        }
        Route::Command(CommandId::Move) => {
            let Some(db) = db_arg(ctx, 2) else { return };
            return note_in(ctx, db, 1);
        }
        Route::Command(CommandId::Copy) => {
            // COPY source destination [DB db] [REPLACE]: the destination may be elsewhere.
            let db = (3..ctx.argc() - 1)
                .find(|&i| ctx.arg(i).eq_ignore_ascii_case(b"DB"))
                .and_then(|i| db_arg(ctx, i + 1));
            if let Some(db) = db {
                return note_in(ctx, db, 2);
            }
            return note_spec_keys(ctx);
        }
        _ => return note_spec_keys(ctx),
    };
    ctx.session.ready_keys.extend(keys);
}

/// Notes the key arguments of the command's key triple.
fn note_spec_keys(ctx: &mut Ctx<'_>) {
    let (spec, argc) = (ctx.spec, ctx.argc() as i32);
    if spec.first_key <= 0 {
        return;
    }
    let last = match spec.last_key {
        last if last < 0 => argc + last,
        // A command with `numkeys` (ZUNIONSTORE): only its destination is written.
        _ if spec.flags.contains(Flags::MOVABLEKEYS) => spec.first_key,
        last => last,
    };
    let mut index = spec.first_key;
    while index <= last && index < argc {
        note_key(ctx, index as usize);
        index += spec.step.max(1);
    }
}

/// Notes key argument `index` in the session's database, if someone may wait on it.
fn note_key(ctx: &mut Ctx<'_>, index: usize) {
    let shared = ctx.shared;
    let key = ctx.key(index);
    if shared.redis.blocking.may_wait_on(key) {
        let key = key.to_vec();
        ctx.session.ready_keys.push(key);
    }
}

/// Notes key argument `index` as stored in database `db`, if someone may wait on it.
fn note_in(ctx: &mut Ctx<'_>, db: u8, index: usize) {
    let mut scratch = Vec::new();
    let key = crate::keyspace::encode(db, ctx.arg(index), &mut scratch);
    if ctx.shared.redis.blocking.may_wait_on(key) {
        let key = key.to_vec();
        ctx.session.ready_keys.push(key);
    }
}

fn db_arg(ctx: &Ctx<'_>, index: usize) -> Option<u8> {
    ctx.cmd.arg(index).and_then(|arg| super::super::connection::parse_db(arg).ok())
}
