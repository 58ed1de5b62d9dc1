//! Lua scripting and functions: EVAL EVALSHA EVAL_RO EVALSHA_RO, SCRIPT, FUNCTION, FCALL,
//! FCALL_RO, with Lua 5.1 as Redis 7 runs it.
//!
//! ```text
//!   EVAL --> gate.exclusive (no other worker executes) --> Engine.vm (one Lua state)
//!              |                                              | xpcall(f, err handler)
//!              |   redis.call(...) --> route, script rules --> execute_inside --> RESP
//!              |        ^                                                          |
//!              |        +---------- convert::to_lua (RESP2 or RESP3, setresp) <-----+
//!              +--> convert::to_reply (the script's result, in the client's protocol)
//! ```
//!
//! Binding: `mlua` (0.12, features `luau`, `send`): the maintained Lua binding of the Rust
//! ecosystem, building Luau from source inside the crate; every `unsafe` stays inside the
//! binding, and with `send` the states can sit behind a mutex in [`crate::Shared`]. Why
//! Luau rather than PUC Lua 5.1: `sandbox.rs`.
//!
//! Atomicity: a script runs inside [`crate::gate::Gate::exclusive`], as EXEC does, so no
//! command of another client, on either protocol, interleaves with it. A script may
//! therefore touch keys it did not declare in KEYS, as standalone Redis allows (libraries
//! such as BullMQ build job keys inside scripts); a cluster mode would have to refuse them.
//! Inside MULTI/EXEC the gate is already held and is not taken again.
//!
//! Lock order: the gate, then the Lua states' mutex (`Engine::vm`). EVAL and FCALL take
//! the gate before the mutex; SCRIPT and FUNCTION subcommands take the mutex inside an
//! ordinary batch and never wait for the gate while holding it. (The other order would
//! deadlock: a script holding the mutex waits for a worker to leave the gate while that
//! worker waits for the mutex.)
//!
//! Time limit (`busy-reply-threshold`, alias `lua-time-limit`, 5000 ms): the interrupt
//! checks the clock and the kill flag. Past the limit the engine raises the gate's busy
//! flag: workers waiting to enter the gate stop waiting and answer `-BUSY` (memcached:
//! `SERVER_ERROR`) to every command of their batch except Redis 7.0's allow-busy ones
//! (which change no data; WATCH only reads a key's version). A worker that answers BUSY is not inside the gate, and its
//! batch answers BUSY to the end even if the script finishes meanwhile, so exclusivity
//! holds. The script's own worker answers too: the busy script yields to its loop
//! (`suspend`).
//!
//! Files: `eval` (EVAL, SCRIPT and the script cache), `functions` (FUNCTION, FCALL),
//! `vm` (the sandboxed Lua state and the `redis` table), `call` (running a script, and
//! `redis.call` from Lua), `suspend` (a busy script between turns of its loop),
//! `convert` (RESP <-> Lua), `libs/` (cjson, cmsgpack, bit, struct in Rust).

use std::sync::{
    atomic::{AtomicBool, AtomicU64, Ordering::Relaxed},
    Arc,
};

use parking_lot::Mutex;
use proto_resp::{commands::ScriptingId, Command, Route, Routed, SubcommandId};

use super::Ctx;

mod call;
mod convert;
mod eval;
mod functions;
mod host;
mod libs;
mod metadata;
mod sandbox;
mod suspend;
mod vm;

pub use call::Suspended;
pub(crate) use functions::{library_codes, load_libraries};
pub use suspend::drive_orphan;

/// The Redis 7 version scripts see in `redis.REDIS_VERSION`.
const REDIS_VERSION: &str = "7.0.15";
const REDIS_VERSION_NUM: i64 = 0x07_00_0f;

const BUSY_EVAL: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";
const BUSY_FUNCTION: &str =
    "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.";
const NOTBUSY: &str = "NOTBUSY No scripts in execution right now.";
const UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands against \
                          the dataset. You can either wait the script termination or kill the \
                          server in a hard way using the SHUTDOWN NOSAVE command.";

/// The script that runs now, as other workers see it (atomics only: the script's worker
/// holds the Lua state's mutex while it runs).
#[derive(Debug, Default)]
pub struct Running {
    /// A script or function runs.
    active: AtomicBool,
    /// It is a function (FCALL), not EVAL: which KILL applies and which BUSY text.
    function: AtomicBool,
    /// It ran a write command: it cannot be killed any more.
    wrote: AtomicBool,
    /// When it started, in ms since the engine's epoch (for FUNCTION STATS).
    started_ms: AtomicU64,
    /// Its name and command line (for FUNCTION STATS).
    current: Mutex<Option<(String, Vec<Vec<u8>>)>>,
}

/// What the instruction hook of a running script reads and writes (shared with it, as
/// the hook must be `'static`).
#[derive(Debug, Default)]
pub struct Watch {
    /// SCRIPT KILL or FUNCTION KILL asked the script to stop (shared with `luacall`'s
    /// interrupt throttle, which passes every interrupt on while it is up).
    kill: Arc<AtomicBool>,
    /// The gate's busy flag: raised once the script passes `busy-reply-threshold`.
    busy: Arc<AtomicBool>,
}

/// Scripting state shared by every worker.
pub struct Engine {
    watch: Arc<Watch>,
    /// The Lua states, made at the first use.
    vm: Mutex<Option<vm::Vm>>,
    pub running: Running,
    /// `busy-reply-threshold` in milliseconds (0: no limit).
    pub busy_threshold_ms: AtomicU64,
    /// The script cache's figures, for INFO (written under `vm`'s lock).
    pub cached_scripts: AtomicU64,
    pub cached_script_bytes: AtomicU64,
    pub lua_memory_bytes: AtomicU64,
    pub function_memory_bytes: AtomicU64,
    pub libraries: AtomicU64,
    pub functions: AtomicU64,
    /// A panic under a script: the Lua states are dropped once it has been answered.
    discard_vm: AtomicBool,
    /// Kills any script that runs longer, as SCRIPT KILL would, written or not (0: never).
    /// Only the script-engine fuzz target sets it, so a generated endless loop ends.
    pub kill_after_ms: AtomicU64,
    epoch: std::time::Instant,
}

impl Engine {
    /// An engine that raises `busy` (the gate's) while a script runs past its limit.
    pub fn new(busy: Arc<AtomicBool>) -> Engine {
        Engine {
            watch: Arc::new(Watch { kill: Arc::new(AtomicBool::new(false)), busy }),
            vm: Mutex::new(None),
            running: Running::default(),
            busy_threshold_ms: AtomicU64::new(5000),
            cached_scripts: AtomicU64::new(0),
            cached_script_bytes: AtomicU64::new(0),
            lua_memory_bytes: AtomicU64::new(0),
            function_memory_bytes: AtomicU64::new(0),
            libraries: AtomicU64::new(0),
            functions: AtomicU64::new(0),
            discard_vm: AtomicBool::new(false),
            kill_after_ms: AtomicU64::new(0),
            epoch: std::time::Instant::now(),
        }
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("running", &self.running).finish_non_exhaustive()
    }
}

impl Engine {
    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Runs `f` with the Lua states, making them at the first call.
    fn with_vm<R>(&self, f: impl FnOnce(&mut vm::Vm) -> R) -> R {
        let mut guard = self.vm.lock();
        let vm = guard.get_or_insert_with(|| vm::Vm::new().expect("the Lua state starts"));
        let result = f(vm);
        self.lua_memory_bytes.store(vm.eval_lua.used_memory() as u64, Relaxed);
        self.function_memory_bytes.store(vm.functions.lua.used_memory() as u64, Relaxed);
        if self.discard_vm.swap(false, Relaxed) {
            *guard = None;
            self.cached_scripts.store(0, Relaxed);
            self.libraries.store(0, Relaxed);
            self.functions.store(0, Relaxed);
        }
        result
    }
}

/// Runs one command of this family: [`crate::Flow::Block`] when a busy script yielded
/// to its loop (its reply comes from [`super::Session::resume_script`]).
pub(super) fn dispatch(ctx: &mut Ctx<'_>, id: ScriptingId) -> crate::Flow {
    run_command(ctx, id);
    if ctx.session.script.is_some() {
        crate::Flow::Block
    } else {
        crate::Flow::Continue
    }
}

fn run_command(ctx: &mut Ctx<'_>, id: ScriptingId) {
    match id {
        ScriptingId::Eval => eval::eval(ctx, eval::Source::Body, Access::ReadWrite),
        ScriptingId::EvalRo => eval::eval(ctx, eval::Source::Body, Access::ReadOnly),
        ScriptingId::Evalsha => eval::eval(ctx, eval::Source::Sha, Access::ReadWrite),
        ScriptingId::EvalshaRo => eval::eval(ctx, eval::Source::Sha, Access::ReadOnly),
        ScriptingId::Fcall => functions::fcall(ctx, Access::ReadWrite),
        ScriptingId::FcallRo => functions::fcall(ctx, Access::ReadOnly),
    }
}

/// Runs one SCRIPT or FUNCTION subcommand.
pub(super) fn dispatch_sub(ctx: &mut Ctx<'_>, id: SubcommandId) {
    use SubcommandId as S;
    match id {
        S::ScriptExists => eval::exists(ctx),
        S::ScriptFlush => eval::flush(ctx),
        S::ScriptHelp => help(ctx, eval::HELP),
        S::ScriptKill => kill(ctx, Kind::Eval),
        S::ScriptLoad => eval::load(ctx),
        S::FunctionDelete => functions::delete(ctx),
        S::FunctionDump => functions::dump(ctx),
        S::FunctionFlush => functions::flush(ctx),
        S::FunctionHelp => help(ctx, functions::HELP),
        S::FunctionKill => kill(ctx, Kind::Function),
        S::FunctionList => functions::list(ctx),
        S::FunctionLoad => functions::load(ctx),
        S::FunctionRestore => functions::restore(ctx),
        S::FunctionStats => functions::stats(ctx),
        _ => unreachable!("only SCRIPT and FUNCTION subcommands come here"),
    }
}

/// Whether the script may write (EVAL) or not (EVAL_RO, FCALL_RO, `no-writes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Access {
    ReadWrite,
    ReadOnly,
}

/// EVAL's scripts or FUNCTION's libraries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Eval,
    Function,
}

fn help(ctx: &mut Ctx<'_>, lines: &[&str]) {
    let mut reply = ctx.reply();
    reply.array(lines.len());
    for line in lines {
        reply.simple(line.as_bytes());
    }
}

/// SCRIPT KILL and FUNCTION KILL: run on another worker while the script is busy.
fn kill(ctx: &mut Ctx<'_>, kind: Kind) {
    let running = &ctx.shared.redis.scripts.running;
    if !running.active.load(Relaxed) {
        return ctx.error(NOTBUSY);
    }
    let is_function = running.function.load(Relaxed);
    match (kind, is_function) {
        (Kind::Eval, true) => return ctx.error(BUSY_FUNCTION),
        (Kind::Function, false) => return ctx.error(BUSY_EVAL),
        _ => {}
    }
    if running.wrote.load(Relaxed) {
        return ctx.error(UNKILLABLE);
    }
    ctx.shared.redis.scripts.watch.kill.store(true, Relaxed);
    ctx.reply().ok();
}

/// A command line from a client whose worker is not inside the gate because a script is
/// busy: only the commands that touch no data run; the rest get `-BUSY`. Returns `None`
/// when the command may run.
pub(super) fn busy_refusal(shared: &crate::Shared, command: &Command<'_>) -> Option<&'static str> {
    use proto_resp::{commands::TxId, CommandId as C};
    // Redis 7.0's `allow_busy` commands: the KILLs, FUNCTION STATS, the connection's own
    // state (AUTH, HELLO, QUIT, RESET) and the transaction commands, so that a pipelined
    // MULTI ... EXEC that meets a busy script fails whole (its refused commands flag the
    // transaction) instead of running half of it later.
    let allowed = match proto_resp::route(command) {
        Ok(Routed { route: Route::Subcommand(id), .. }) => matches!(
            id,
            SubcommandId::ScriptKill | SubcommandId::FunctionKill | SubcommandId::FunctionStats
        ),
        Ok(Routed { route: Route::Command(id), .. }) => matches!(
            id,
            C::Quit
                | C::Auth
                | C::Hello
                | C::Reset
                // SHUTDOWN decides itself: NOSAVE goes ahead, anything else is BUSY.
                | C::Shutdown
                | C::Transactions(TxId::Multi | TxId::Discard | TxId::Watch | TxId::Unwatch)
        ),
        _ => false,
    };
    if allowed {
        return None;
    }
    Some(busy_message(shared))
}

/// Whether EVAL, EVALSHA or FCALL (`name`) may write, as Redis judges it from the
/// script's own flags once it knows them (CLIENT PAUSE WRITE holds what may): a script or
/// function that declares `no-writes` does not; one without a shebang, one not found, or
/// one whose flags cannot be read now (a script holds the Lua states) may.
pub(in crate::resp) fn may_write(
    shared: &crate::Shared,
    name: &str,
    command: &Command<'_>,
) -> bool {
    let Some(arg) = command.arg(1) else { return true };
    if name == "eval" {
        return !matches!(eval::shebang(arg), Ok(Some((flags, _))) if flags.no_writes);
    }
    let Some(guard) = shared.redis.scripts.vm.try_lock() else { return true };
    let Some(vm) = guard.as_ref() else { return true };
    let no_writes = match name {
        "fcall" => vm.functions.declares_no_writes(&String::from_utf8_lossy(arg)),
        "evalsha" => {
            let sha = String::from_utf8_lossy(arg).to_ascii_lowercase();
            vm.scripts.get(&sha).map(|script| script.flags.is_some_and(|f| f.no_writes))
        }
        _ => None,
    };
    no_writes != Some(true)
}

/// The BUSY error for what runs now: a script or a function.
pub(super) fn busy_message(shared: &crate::Shared) -> &'static str {
    if shared.redis.scripts.running.function.load(Relaxed) {
        BUSY_FUNCTION
    } else {
        BUSY_EVAL
    }
}

/// Parses EVAL's and FCALL's `numkeys` (argument 2) against the arguments that follow.
fn numkeys(ctx: &mut Ctx<'_>, not_integer: &str) -> Option<usize> {
    let text = ctx.arg(2);
    let Some(n) = std::str::from_utf8(text).ok().and_then(|t| t.parse::<i64>().ok()) else {
        ctx.error(not_integer);
        return None;
    };
    if n < 0 {
        ctx.error("ERR Number of keys can't be negative");
        return None;
    }
    if n as usize > ctx.argc() - 3 {
        ctx.error("ERR Number of keys can't be greater than number of args");
        return None;
    }
    Some(n as usize)
}

/// Lower-case hex SHA1 of `data`, as `redis.sha1hex` and the script cache name scripts.
pub(crate) fn sha1_hex(data: &[u8]) -> String {
    use sha1::{Digest, Sha1};
    let digest = Sha1::digest(data);
    let mut out = String::with_capacity(40);
    for byte in digest {
        out.push(char::from(b"0123456789abcdef"[usize::from(byte >> 4)]));
        out.push(char::from(b"0123456789abcdef"[usize::from(byte & 15)]));
    }
    out
}

#[cfg(test)]
mod tests;
