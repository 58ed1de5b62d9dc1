//! Running a script or function: its thread, its slices (a busy script yields to its
//! loop), its interrupt (SCRIPT KILL, the busy limit) and its result. The commands it runs
//! through `redis.call` and `redis.pcall` are answered by `host.rs`, through `luacall`'s
//! raw C functions, for the slice's caller.

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering::Relaxed},
        Arc,
    },
    time::Instant,
};

use mlua::{Function, Lua, MultiValue, Thread, Value, VmState};
use proto_resp::{Protocol, Reply};

use super::{
    convert::{self, ScriptResp},
    vm::{coded, State},
    Access, Engine, Kind,
};
use crate::{
    counters::Counters,
    resp::{Ctx, Exclusive, Session},
    Shared,
};

/// Interrupts (Luau calls one at each loop back-edge and call) between two looks at the
/// clock and the kill flag.
const CLOCK_EVERY: u32 = 1024;

/// How long a busy script runs before its thread yields to its worker's loop, which
/// answers that worker's other clients (`-BUSY`, SCRIPT KILL) and resumes it.
const SLICE_MS: u64 = 2;

/// One script or function call.
pub(super) struct Invocation<'a> {
    pub function: Function,
    /// The name errors give: the script's SHA1, or the function's name.
    pub name: &'a str,
    pub keys: Vec<&'a [u8]>,
    pub args: Vec<&'a [u8]>,
    pub access: Access,
    pub kind: Kind,
}

/// Whom a script's commands run for: the session that ran EVAL or FCALL.
pub(super) struct Caller<'a> {
    pub shared: &'a Shared,
    pub counters: &'a Counters,
    pub session: &'a mut Session,
}

/// The clock of one script run, shared with its interrupt.
#[derive(Debug)]
pub(super) struct Pace {
    started: Instant,
    /// When the current slice began, in ms after `started`.
    slice_from_ms: AtomicU64,
    /// The interrupt made the script's thread yield (a yield of the script's own is an
    /// error, as in Redis).
    yielded: AtomicBool,
    /// The slice is over: yield at the first interrupt where it may.
    yield_wanted: AtomicBool,
    /// The script may be suspended once busy: its connection's loop resumes it
    /// ([`Session::resume_script`]). Not inside EXEC, nor for a session no loop drives.
    suspendable: bool,
    /// The script's own Lua thread (its address): a coroutine the script runs is never
    /// the one suspended, or the script would see a yield it did not make.
    thread: usize,
}

impl Pace {
    fn elapsed_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// A resume starts a new slice.
    pub(super) fn next_slice(&self) {
        self.yield_wanted.store(false, Relaxed);
        self.slice_from_ms.store(self.elapsed_ms(), Relaxed);
    }
}

/// How one slice of a script's run ended.
pub(super) enum Sliced {
    Done(mlua::Result<MultiValue>),
    /// Busy, yielded to its loop: resume it with [`slice`] again.
    Suspended,
}

/// A script run by its connection that passed the busy limit and yielded to its loop:
/// what resuming and finishing it takes. The gate stays held the whole time.
pub struct Suspended {
    pub(super) thread: Thread,
    pub(super) kind: Kind,
    pub(super) name: String,
    pub(super) access: Access,
    pub(super) pace: Arc<Pace>,
    /// The script's database (a SELECT inside it changes its own, not the caller's).
    pub(super) db: u8,
    /// Taken by the EVAL or FCALL that started it (`eval::run_exclusive`).
    pub(super) hold: Option<crate::gate::Hold>,
}

impl std::fmt::Debug for Suspended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Suspended").field("name", &self.name).finish_non_exhaustive()
    }
}

/// Runs `call` in `lua` and writes its result (or error) as the reply; or, busy past its
/// limit, leaves it suspended in the session (no reply yet).
pub(super) fn invoke(ctx: &mut Ctx<'_>, lua: &Lua, state: &State, call: Invocation<'_>) {
    let (a, b) = match prepare(lua, state, &call) {
        Ok(pair) => pair,
        Err(e) => return ctx.error(format!("ERR {e}")),
    };
    let thread = match state.spare_thread.take() {
        Some(thread) => thread,
        None => match lua.create_thread(state.runner.clone()) {
            Ok(thread) => thread,
            Err(e) => return ctx.error(format!("ERR {e}")),
        },
    };
    let engine = &ctx.shared.redis.scripts;
    start_running(engine, &call, ctx);
    let suspendable = ctx.session.script_may_suspend && ctx.exclusive != Exclusive::Held;
    let pace = Arc::new(Pace {
        started: Instant::now(),
        slice_from_ms: AtomicU64::new(0),
        yielded: AtomicBool::new(false),
        yield_wanted: AtomicBool::new(false),
        suspendable,
        thread: thread.to_pointer() as usize,
    });
    set_interrupt(lua, engine, &pace, call.kind, call.name);
    engine.watch.kill.store(false, Relaxed);
    let db = ctx.session.db;
    let mut caller =
        Caller { shared: ctx.shared, counters: ctx.counters, session: &mut *ctx.session };
    let start = Some((call.function.clone(), a, b));
    let sliced = slice(&mut caller, state, &thread, &pace, call.access, start);
    let script_db = std::mem::replace(&mut ctx.session.db, db);
    match sliced {
        Sliced::Suspended => {
            let (kind, name, access) = (call.kind, call.name.to_owned(), call.access);
            let suspended =
                Suspended { thread, kind, name, access, pace, db: script_db, hold: None };
            ctx.session.script = Some(Box::new(suspended));
        }
        Sliced::Done(outcome) => {
            let protocol = ctx.session.protocol;
            finish(engine, lua, state, outcome, (call.kind, call.name), protocol, ctx.out);
            keep_thread(state, thread);
        }
    }
}

/// Keeps a finished script's thread for the next run, reset (its stack cleared) to the
/// runner; one that cannot be reset is dropped.
pub(super) fn keep_thread(state: &State, thread: Thread) {
    if thread.reset(state.runner.clone()).is_ok() {
        state.spare_thread.set(Some(thread));
    }
}

/// KEYS and ARGV (EVAL) or the function's two arguments (FCALL), and a fresh RESP2 choice.
fn prepare(lua: &Lua, state: &State, call: &Invocation<'_>) -> mlua::Result<(Value, Value)> {
    let items = call.keys.iter().chain(&call.args);
    let bytes = items.map(|item| item.len() + STRING_OVERHEAD_BYTES).sum::<usize>();
    state.resp3.store(false, Relaxed);
    unlimited(lua, bytes + 2 * STRING_OVERHEAD_BYTES, || match call.kind {
        Kind::Eval => {
            let set = luacall::set_script_sequences(lua, &state.globals, &call.keys, &call.args);
            // Read-only again whatever happened (mlua's `set_readonly(true)` keeps the
            // safe environment's flag).
            state.globals.set_readonly(true);
            set.map(|()| (Value::Nil, Value::Nil))
        }
        Kind::Function => {
            let (keys, args) = luacall::sequences(lua, &call.keys, &call.args)?;
            Ok((Value::Table(keys), Value::Table(args)))
        }
    })
}

/// What other workers see of the script from now on (FUNCTION STATS, KILL, BUSY).
fn start_running(engine: &Engine, call: &Invocation<'_>, ctx: &Ctx<'_>) {
    let running = &engine.running;
    running.wrote.store(false, Relaxed);
    running.function.store(call.kind == Kind::Function, Relaxed);
    running.started_ms.store(engine.now_ms(), Relaxed);
    if call.kind == Kind::Function {
        *running.current.lock() =
            Some((call.name.to_owned(), ctx.cmd.args().map(<[u8]>::to_vec).collect()));
    }
    running.active.store(true, Relaxed);
}

/// The interrupt, behind `luacall`'s throttle: the kill flag at every call (the throttle
/// reads it), the clock every [`CLOCK_EVERY`] calls (raising `busy` past the limit, and
/// yielding a suspendable script each [`SLICE_MS`]).
fn set_interrupt(lua: &Lua, engine: &Engine, pace: &Arc<Pace>, kind: Kind, name: &str) {
    let limit_ms = engine.busy_threshold_ms.load(Relaxed);
    let kill_after_ms = engine.kill_after_ms.load(Relaxed);
    let watch = Arc::clone(&engine.watch);
    let pace = Arc::clone(pace);
    let name = name.to_owned();
    let kill_text = parking_lot::Mutex::new(None::<String>);
    lua.set_interrupt(move |lua| {
        // Checked at every interrupt, so a script that catches the error with `pcall`
        // meets it again at its next loop edge or call, outside the `pcall`.
        if watch.kill.load(Relaxed) {
            let killed = match kind {
                Kind::Eval => "ERR Script killed by user with SCRIPT KILL...",
                Kind::Function => "ERR Script killed by user with FUNCTION KILL...",
            };
            // The first raise names the script's line; a `pcall` may catch it, and later
            // raises (outside the script's frames) repeat that text.
            let message =
                kill_text.lock().get_or_insert_with(|| killed_message(lua, killed, &name)).clone();
            return Err(mlua::Error::runtime(coded(&message)));
        }
        // A slice is over but the clock's interrupt fell where no yield may happen (the
        // wrapper of `redis.call`: in a tight loop of calls the clock, every CLOCK_EVERY
        // interrupts, may always land there): every interrupt tries until one may.
        if pace.yield_wanted.load(Relaxed) {
            if may_yield_here(lua, pace.thread) {
                pace.yield_wanted.store(false, Relaxed);
                pace.yielded.store(true, Relaxed);
                return Ok(VmState::Yield);
            }
            luacall::interrupt_soon();
        }
        clock(lua, &watch, &pace, limit_ms, kill_after_ms)
    });
    luacall::throttle_interrupt(lua, &engine.watch.kill, CLOCK_EVERY);
}

/// The interrupt's clock: kills past `kill_after_ms`, raises `busy` past `limit_ms`, and
/// yields a suspendable busy script once its slice is over.
fn clock(
    lua: &Lua,
    watch: &super::Watch,
    pace: &Pace,
    limit_ms: u64,
    kill_after_ms: u64,
) -> mlua::Result<VmState> {
    let elapsed_ms = pace.elapsed_ms();
    if kill_after_ms > 0 && elapsed_ms > kill_after_ms {
        watch.kill.store(true, Relaxed);
    }
    if limit_ms == 0 || elapsed_ms <= limit_ms {
        return Ok(VmState::Continue);
    }
    watch.busy.store(true, Relaxed);
    let slice_over = elapsed_ms >= pace.slice_from_ms.load(Relaxed) + SLICE_MS;
    if !pace.suspendable || !slice_over {
        return Ok(VmState::Continue);
    }
    if may_yield_here(lua, pace.thread) {
        pace.yielded.store(true, Relaxed);
        return Ok(VmState::Yield);
    }
    pace.yield_wanted.store(true, Relaxed);
    luacall::interrupt_soon();
    Ok(VmState::Continue)
}

/// Whether the running code may yield to the loop: it is the script's own thread (not a
/// coroutine the script made), in the script's code, not in Spinel's own Lua (the
/// `redis.call` wrapper may hold the slice's `call` in a register, and that function is
/// gone once the slice ends).
fn may_yield_here(lua: &Lua, script_thread: usize) -> bool {
    if lua.current_thread().to_pointer() as usize != script_thread {
        return false;
    }
    let source = lua.inspect_stack(0, |debug| debug.source().source.map(|s| s.into_owned()));
    source.flatten().is_none_or(|name| name != super::vm::INTERNAL_CHUNK)
}

/// Runs the script's thread until it ends or yields: from its start (`start`: the
/// function and its two arguments) or from where it yielded. `redis.call` and its kin
/// act for `caller` during the slice only.
pub(super) fn slice(
    caller: &mut Caller<'_>,
    state: &State,
    thread: &Thread,
    pace: &Pace,
    access: Access,
    start: Option<(Function, Value, Value)>,
) -> Sliced {
    let engine = &caller.shared.redis.scripts;
    let mut host = super::host::ScriptHost::new(caller, state, access);
    // A panic in Spinel's own code under the script (a library; a command's is caught in
    // the host) must not take the worker down: it becomes this script's error, and the
    // Lua states are made anew after it (`Engine::with_vm`), as whatever they held may be
    // half-changed.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        luacall::with_host(&mut host, || match start {
            Some(args) => thread.resume::<MultiValue>(args),
            None => thread.resume::<MultiValue>(()),
        })
    }))
    .unwrap_or_else(|_| {
        engine.discard_vm.store(true, Relaxed);
        Err(mlua::Error::runtime("internal error (the script engine was reset)"))
    });
    if outcome.is_ok() && thread.status() == mlua::thread::ThreadStatus::Resumable {
        if pace.yielded.swap(false, Relaxed) {
            return Sliced::Suspended;
        }
        let yielded = "attempt to yield across metamethod/C-call boundary";
        return Sliced::Done(Err(mlua::Error::runtime(yielded)));
    }
    Sliced::Done(outcome)
}

/// The script ended (`outcome`): the engine is idle again and the reply (or error) goes
/// to `out` in `protocol`.
pub(super) fn finish(
    engine: &Engine,
    lua: &Lua,
    state: &State,
    outcome: mlua::Result<MultiValue>,
    (kind, name): (Kind, &str),
    protocol: Protocol,
    out: &mut Vec<u8>,
) {
    lua.remove_interrupt();
    engine.watch.busy.store(false, Relaxed);
    engine.running.active.store(false, Relaxed);
    if kind == Kind::Function {
        *engine.running.current.lock() = None;
    }
    let resp = if resp3(state) { ScriptResp::Three } else { ScriptResp::Two };
    let exhausted = lua_near_full(lua);
    if exhausted || matches!(outcome, Err(mlua::Error::MemoryError(_))) {
        // What the script left is garbage now; the next script must not start near the
        // limit.
        let _ = lua.gc_collect();
    }
    let mut reply = Reply::new(out, protocol);
    let values = match outcome {
        Ok(values) => values.into_vec(),
        Err(e) => return reply.error(unhandled_error(&e)),
    };
    match values.as_slice() {
        [Value::Boolean(true), result, ..] => convert::write_reply(&mut reply, result, resp),
        [Value::Boolean(true)] => reply.null(),
        [Value::Boolean(false), Value::Table(err), ..] => reply.error(failure_text(err, name)),
        // An error the handler never saw, or one it could not handle: Luau calls no
        // handler for a memory error, and a handler short of memory fails itself.
        [Value::Boolean(false), other, ..] => {
            let message = other.to_string().unwrap_or_default();
            let message = if exhausted { "not enough memory".into() } else { message };
            reply.error(format!("ERR {message} script: {name}"))
        }
        _ => reply.error("ERR Error running script: no result"),
    }
}

/// The error reply of a script that failed: the handler's `{err, source, line}`.
fn failure_text(err: &mlua::Table, name: &str) -> String {
    let message = match err.raw_get::<Value>("err") {
        Ok(Value::String(s)) => s.to_string_lossy(),
        _ => "ERR unknown error".into(),
    };
    let message = message.strip_prefix('-').unwrap_or(&message);
    let message = if message.contains(' ') { message.to_owned() } else { format!("ERR {message}") };
    let source = err.raw_get::<Option<String>>("source").ok().flatten();
    let line = err.raw_get::<Option<i64>>("line").ok().flatten();
    match (source, line) {
        (Some(source), Some(line)) => format!("{message} script: {name}, on {source}:{line}."),
        _ => format!("{message} script: {name}"),
    }
}

/// A killed script's error, with the script's name and the line it was on, as Redis
/// words it (the interrupt's error reaches the client without the runner's handler).
fn killed_message(lua: &Lua, killed: &str, name: &str) -> String {
    for level in 0..8 {
        let frame = lua.inspect_stack(level, |debug| {
            let source = debug.source().source.map(|s| s.into_owned()).unwrap_or_default();
            (source, debug.current_line())
        });
        let Some((source, line)) = frame else { break };
        if source.starts_with("@user_") {
            let line = line.unwrap_or(0);
            return format!("{killed} script: {name}, on {source}:{line}.");
        }
    }
    format!("{killed} script: {name}")
}

/// The reply to an error that came out of the runner itself (raised where no handler
/// runs, such as the interrupt that stops a killed script): a coded message as it is.
fn unhandled_error(error: &mlua::Error) -> String {
    let (message, coded) = super::vm::describe(&Value::Error(Box::new(error.clone())));
    if coded {
        return message;
    }
    format!("ERR Error running script: {error}")
}

/// Whether the state holds more than half of what it may.
fn lua_near_full(lua: &Lua) -> bool {
    lua.used_memory() > super::vm::MEMORY_MAX_BYTES / 2
}

/// What a Lua string or a table slot takes beside its bytes, at most (a generous bound:
/// [`unlimited`] must not let a state pass its limit by much).
const STRING_OVERHEAD_BYTES: usize = 64;

/// Runs `make`, which allocates at most `bytes` in `lua`, with the state's memory limit
/// lifted when that much fits twice under it. Under a limit, mlua makes every value it
/// creates inside a protected call (an allocation may fail), several times the cost of
/// the value: KEYS, ARGV and the replies of `redis.call` were a quarter of a short
/// EVALSHA's instructions. Without room, `make` runs under the limit and may fail.
fn unlimited<R>(
    lua: &Lua,
    bytes: usize,
    make: impl FnOnce() -> mlua::Result<R>,
) -> mlua::Result<R> {
    let room = super::vm::MEMORY_MAX_BYTES.saturating_sub(lua.used_memory());
    if bytes.saturating_mul(2) >= room {
        return make();
    }
    struct Relimit<'l>(&'l Lua);
    impl Drop for Relimit<'_> {
        fn drop(&mut self) {
            let _ = self.0.set_memory_limit(super::vm::MEMORY_MAX_BYTES);
        }
    }
    lua.set_memory_limit(0)?;
    let _relimit = Relimit(lua);
    make()
}

/// Whether the script chose RESP3 with `redis.setresp(3)`.
pub(super) fn resp3(state: &State) -> bool {
    state.resp3.load(Relaxed)
}
