//! A Redis write while a save's picture is under way (`snapshot::picture`): the keys it
//! will change are kept first, as they are, and a command that empties databases
//! abandons the picture (the save is then ordered before it).

use proto_resp::commands::{command_meta, command_of_line};

use crate::{keyspace, snapshot::Abandon, Shared};

/// Before the command of `ctx` runs, if it `writes`: one load while no picture is under way.
#[inline(always)]
pub(super) fn before_command(ctx: &super::Ctx<'_>, writes: bool) {
    if writes && ctx.shared.core.picture.is_active() {
        let args: Vec<&[u8]> = (0..ctx.argc()).map(|at| ctx.arg(at)).collect();
        before_write(ctx.shared, ctx.session.db, &args);
    }
}

/// Before the write of `args` (a whole command line, its name first) runs in `db`.
#[cold]
#[inline(never)]
fn before_write(shared: &Shared, db: u8, args: &[&[u8]]) {
    let Some((name, _)) = command_of_line(args) else { return };
    let picture = &shared.core.picture;
    match name {
        "flushall" => return picture.abandon(Abandon::Flush("FLUSHALL")),
        "flushdb" => return picture.abandon(Abandon::Flush("FLUSHDB")),
        "swapdb" => return picture.abandon(Abandon::Flush("SWAPDB")),
        _ => {}
    }
    let mut scratch = Vec::new();
    let mut keep =
        |db: u8, key: &[u8]| picture.keep(shared, keyspace::encode(db, key, &mut scratch));
    for key in command_meta(name).map(|meta| meta.keys(args)).unwrap_or_default() {
        keep(db, args[key.at]);
    }
    // The keys written in another database than the client's.
    if let Some((other_db, key)) = other_database_target(name, args) {
        keep(other_db, key);
    }
}

/// MOVE's key in its target database; COPY's destination with `DB n`.
fn other_database_target<'a>(name: &str, args: &[&'a [u8]]) -> Option<(u8, &'a [u8])> {
    let db_of = |text: &[u8]| {
        let db: u8 = std::str::from_utf8(text).ok()?.parse().ok()?;
        (db < keyspace::DATABASES).then_some(db)
    };
    match name {
        "move" => Some((db_of(args.get(2)?)?, args.get(1)?)),
        "copy" => {
            let at = args.iter().skip(3).position(|arg| arg.eq_ignore_ascii_case(b"db"))? + 3;
            Some((db_of(args.get(at + 1)?)?, args.get(2)?))
        }
        _ => None,
    }
}
