//! SAVE, BGSAVE and LASTSAVE: every key as a Redis RDB file (`crate::snapshot::save_rdb`)
//! written to `dir`/`dbfilename`, which the server loads when it starts (redis-server
//! loads it too, and Spinel loads redis-server's).

use std::sync::atomic::Ordering;

use super::Ctx;
use crate::{snapshot, Shared};

/// Where SAVE and BGSAVE write.
pub fn snapshot_path(shared: &Shared) -> std::path::PathBuf {
    shared.core.settings.dir.join(&shared.core.settings.dbfilename)
}

/// SAVE: the snapshot, written before the reply.
pub(super) fn save(ctx: &mut Ctx<'_>) {
    if ctx.shared.redis.save_state.in_progress.load(Ordering::Acquire) {
        return ctx.error("ERR Background save already in progress");
    }
    match save_here(ctx) {
        Ok(()) => ctx.reply().ok(),
        Err(()) => ctx.error("ERR"),
    }
}

/// A save by this worker (SAVE, SHUTDOWN SAVE). A flush that abandons its picture is
/// ordered before the save, which begins again (at most a few times) from the flushed
/// store, as Redis would have run the two one after the other.
fn save_here(ctx: &Ctx<'_>) -> Result<(), ()> {
    ctx.shared.redis.save_state.saves.fetch_add(1, Ordering::Relaxed);
    for _ in 0..3 {
        let Some(libraries) = begin_picture(ctx) else { return Err(()) };
        match save_now(ctx.shared, &libraries) {
            Err(Failure::Flushed) => continue,
            done => return done.map_err(|_| ()),
        }
    }
    Err(())
}

/// Begins a picture (see `snapshot::Picture`) with the gate held, so that no request is
/// half done; returns the function libraries as they are at that instant. None while
/// another picture is under way.
fn begin_picture(ctx: &Ctx<'_>) -> Option<Vec<Vec<u8>>> {
    let (shared, worker) = (ctx.shared, ctx.shared.core.worker_of(ctx.counters));
    let limit_bytes = snapshot::kept_limit_bytes(shared.core.store.memory_limit());
    shared.core.gate.exclusive(worker, || {
        let begun = shared.core.picture.begin(limit_bytes);
        begun.then(|| super::script::library_codes(shared))
    })
}

/// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: stops the server as SIGTERM does (the
/// connection closes without a reply), after a snapshot with SAVE. While a script is busy
/// only SHUTDOWN NOSAVE is allowed, and it exits at once: the script's worker cannot be
/// stopped, and NOSAVE asks for nothing to be written.
pub(super) fn shutdown(ctx: &mut Ctx<'_>) -> crate::Flow {
    let (mut nosave, mut save, mut abort) = (false, false, false);
    for at in 1..ctx.argc() {
        match ctx.arg(at).to_ascii_lowercase().as_slice() {
            b"nosave" => nosave = true,
            b"save" => save = true,
            b"abort" => abort = true,
            b"now" | b"force" => {}
            _ => {
                ctx.error(proto_resp::error::SYNTAX);
                return crate::Flow::Continue;
            }
        }
    }
    if (nosave && save) || (abort && ctx.argc() > 2) {
        ctx.error(proto_resp::error::SYNTAX);
        return crate::Flow::Continue;
    }
    if abort {
        ctx.error("ERR No shutdown in progress.");
        return crate::Flow::Continue;
    }
    if ctx.session.busy {
        if !nosave {
            ctx.error(super::script::busy_message(ctx.shared));
            return crate::Flow::Continue;
        }
        std::process::exit(0);
    }
    if save && shutdown_save(ctx).is_err() {
        ctx.error("ERR Errors trying to SHUTDOWN. Check logs.");
        return crate::Flow::Continue;
    }
    ctx.shared.core.shutdown.store(true, Ordering::Relaxed);
    crate::Flow::Close
}

/// BGSAVE [SCHEDULE]: the snapshot, written by a thread of its own.
pub(super) fn bgsave(ctx: &mut Ctx<'_>) {
    if ctx.argc() > 2 || (ctx.argc() == 2 && !ctx.arg(1).eq_ignore_ascii_case(b"schedule")) {
        return ctx.error(proto_resp::error::SYNTAX);
    }
    let state = &ctx.shared.redis.save_state;
    if state.in_progress.swap(true, Ordering::AcqRel) {
        return ctx.error("ERR Background save already in progress");
    }
    let Some(libraries) = begin_picture(ctx) else {
        state.in_progress.store(false, Ordering::Release);
        return ctx.error("ERR Background save already in progress");
    };
    state.started_secs.store(super::now_unix_ms(ctx.shared) / 1000, Ordering::Relaxed);
    state.saves.fetch_add(1, Ordering::Relaxed);
    let Some(shared) = ctx.shared.this.get().and_then(std::sync::Weak::upgrade) else {
        ctx.shared.core.picture.end();
        state.in_progress.store(false, Ordering::Release);
        return ctx.error("ERR the server is stopping");
    };
    let spawned = std::thread::Builder::new().name("spinel-bgsave".into()).spawn(move || {
        if let Err(Failure::Flushed) = save_now(&shared, &libraries) {
            eprintln!("spinel: background saving stopped by a flush");
        }
        shared.redis.save_state.in_progress.store(false, Ordering::Release);
        shared.redis.save_state.started_secs.store(0, Ordering::Relaxed);
    });
    match spawned {
        Ok(_) => ctx.reply().simple(b"Background saving started"),
        Err(e) => {
            ctx.shared.core.picture.end();
            state.in_progress.store(false, Ordering::Release);
            ctx.error(format!("ERR cannot start the background save: {e}"));
        }
    }
}

/// SHUTDOWN SAVE: a BGSAVE under way is stopped (as Redis kills its child) and waited
/// for, then the save runs here.
fn shutdown_save(ctx: &Ctx<'_>) -> Result<(), ()> {
    let state = &ctx.shared.redis.save_state;
    if state.in_progress.load(Ordering::Acquire) {
        ctx.shared.core.picture.abandon(snapshot::Abandon::Shutdown);
        let waited = std::time::Instant::now();
        while state.in_progress.load(Ordering::Acquire) {
            if waited.elapsed() > std::time::Duration::from_secs(10) {
                return Err(());
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    save_here(ctx)
}

/// LASTSAVE: the Unix time of the last successful save (the start, before any).
pub(super) fn lastsave(ctx: &mut Ctx<'_>) {
    let secs = ctx.shared.redis.save_state.last_save_secs.load(Ordering::Relaxed);
    ctx.reply().integer(secs as i64);
}

/// Why a save failed.
enum Failure {
    /// A flush abandoned its picture: not a failed save in Redis's eyes (its FLUSHALL
    /// kills the saving child, and the status stays as it was).
    Flushed,
    /// Anything else: noted for INFO, and logged.
    Failed,
}

/// Saves the picture begun (`libraries` read then) to `dir`/`dbfilename`, and notes the
/// outcome for LASTSAVE and INFO (a failure's reason too, which is logged).
fn save_now(shared: &Shared, libraries: &[Vec<u8>]) -> Result<(), Failure> {
    let path = snapshot_path(shared);
    // Writes during a BGSAVE stay counted after it, as Redis keeps them in `dirty`.
    let changes_at_start = shared.core.raw_totals().redis_changes;
    let result = snapshot::save_picture(shared, &path, libraries);
    let flushed = matches!(shared.core.picture.abandoned(), Some(snapshot::Abandon::Flush(_)));
    if result.is_err() && flushed {
        return Err(Failure::Flushed);
    }
    let now_secs = super::now_unix_ms(shared) / 1000;
    shared.redis.save_state.finished(result.is_ok(), now_secs, changes_at_start);
    result.map(|_| ()).map_err(|why| {
        eprintln!("spinel: saving {} failed: {why}", path.display());
        *shared.redis.save_state.last_error.lock() = why;
        Failure::Failed
    })
}
