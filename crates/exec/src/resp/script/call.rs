//! Running a script or function, and the commands it runs through `redis.call` and
//! `redis.pcall`.
//!
//! A command from a script is routed as a client's would be, then checked against the
//! script rules Redis applies (no `noscript` command, no write from a read-only script),
//! then executed with [`super::super::execute_inside`] (the gate is already held, and
//! the user's ACL rules still apply) into a scratch buffer in the protocol the script
//! chose (`redis.setresp`). The reply is parsed back and converted to Lua
//! (`convert::to_lua`). Cost: one compose and parse of the command and one of the reply
//! per call, which keeps every command's own code unchanged.

use std::{
    sync::atomic::Ordering::Relaxed,
    time::{Duration, Instant},
};

use mlua::{Function, Lua, MultiValue, Value, Variadic, VmState};
use proto_resp::{
    commands::Flags, parse_command, parse_reply, route, Limits, Protocol, Reply, RouteError,
    Run as TableRun,
};

use super::{
    convert::{self, ScriptResp},
    sandbox::set_frozen,
    vm::{coded, State},
    Access, Kind,
};
use crate::resp::Ctx;

/// Interrupts (Luau calls one at each loop back-edge and call) between two looks at the
/// clock and the kill flag.
const CLOCK_EVERY: u32 = 1024;

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

/// Runs `call` in `lua` and writes its result (or error) as the reply.
pub(super) fn invoke(ctx: &mut Ctx<'_>, lua: &Lua, state: &State, call: Invocation<'_>) {
    let shared = ctx.shared;
    let engine = &shared.scripts;
    let prepared = (|| -> mlua::Result<(Value, Value)> {
        let keys = strings(lua, &call.keys, lua.create_table()?)?;
        let args = strings(lua, &call.args, lua.create_table()?)?;
        state.private.raw_set("resp", 2)?;
        match call.kind {
            Kind::Eval => {
                set_frozen(&state.globals, "KEYS", Value::Table(keys))?;
                set_frozen(&state.globals, "ARGV", Value::Table(args))?;
                Ok((Value::Nil, Value::Nil))
            }
            Kind::Function => Ok((Value::Table(keys), Value::Table(args))),
        }
    })();
    let (a, b) = match prepared {
        Ok(pair) => pair,
        Err(e) => return ctx.error(format!("ERR {e}")),
    };
    let running = &engine.running;
    running.wrote.store(false, Relaxed);
    running.function.store(call.kind == Kind::Function, Relaxed);
    running.started_ms.store(engine.now_ms(), Relaxed);
    if call.kind == Kind::Function {
        *running.current.lock() =
            Some((call.name.to_owned(), ctx.cmd.args().map(<[u8]>::to_vec).collect()));
    }
    running.active.store(true, Relaxed);
    let limit_ms = engine.busy_threshold_ms.load(Relaxed);
    let started = Instant::now();
    let watch = std::sync::Arc::clone(&engine.watch);
    let kind = call.kind;
    let ticks = std::sync::atomic::AtomicU32::new(0);
    let name = call.name.to_owned();
    let kill_after_ms = engine.kill_after_ms.load(Relaxed);
    lua.set_interrupt(move |lua| {
        // Checked at every interrupt, so a script that catches the error with `pcall`
        // meets it again at its next loop edge or call, outside the `pcall`.
        if watch.kill.load(Relaxed) {
            let killed = match kind {
                Kind::Eval => "ERR Script killed by user with SCRIPT KILL...",
                Kind::Function => "ERR Script killed by user with FUNCTION KILL...",
            };
            return Err(mlua::Error::runtime(coded(&killed_message(lua, killed, &name))));
        }
        if !ticks.fetch_add(1, Relaxed).is_multiple_of(CLOCK_EVERY) {
            return Ok(VmState::Continue);
        }
        if limit_ms > 0 && started.elapsed() > Duration::from_millis(limit_ms) {
            watch.busy.store(true, Relaxed);
        }
        if kill_after_ms > 0 && started.elapsed() > Duration::from_millis(kill_after_ms) {
            watch.kill.store(true, Relaxed);
        }
        Ok(VmState::Continue)
    });
    engine.watch.kill.store(false, Relaxed);
    let access = call.access;
    // A SELECT inside the script changes the script's database only, as in Redis 7.
    let db = ctx.session.db;
    let cell = std::cell::RefCell::new((ctx, Scratch::default()));
    // A panic in Spinel's own code under the script (a library, a command) must not
    // take the worker down: it becomes this script's error, and the Lua states are made
    // anew after it (`Engine::with_vm`), as whatever they held may be half-changed.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        lua.scope(|scope| {
            let call_fn = scope.create_function(|lua, args: Variadic<Value>| {
                match run_call(&cell, lua, state, access, args)? {
                    Called::Reply(value) => Ok(value),
                    Called::Error(message) => {
                        Err(mlua::Error::runtime(coded(&String::from_utf8_lossy(&message))))
                    }
                }
            })?;
            let pcall_fn = scope.create_function(|lua, args: Variadic<Value>| {
                match run_call(&cell, lua, state, access, args)? {
                    Called::Reply(value) => Ok(value),
                    Called::Error(message) => {
                        let table = lua.create_table()?;
                        table.raw_set("err", lua.create_string(message)?)?;
                        Ok(Value::Table(table))
                    }
                }
            })?;
            let acl_fn = scope.create_function(|_, args: Variadic<Value>| {
                let held = cell.try_borrow().map_err(|_| mlua::Error::RecursiveMutCallback)?;
                acl_check(held.0, &args)
            })?;
            set_frozen(&state.redis, "acl_check_cmd", Value::Function(acl_fn))?;
            set_frozen(&state.redis, "call", Value::Function(call_fn))?;
            set_frozen(&state.redis, "pcall", Value::Function(pcall_fn))?;
            state.runner.call::<MultiValue>((call.function.clone(), a, b))
        })
    }))
    .unwrap_or_else(|_| {
        engine.discard_vm.store(true, Relaxed);
        Err(mlua::Error::runtime("internal error (the script engine was reset)"))
    });
    let (ctx, _) = cell.into_inner();
    ctx.session.db = db;
    lua.remove_interrupt();
    let _ = set_frozen(&state.redis, "call", Value::Nil);
    let _ = set_frozen(&state.redis, "pcall", Value::Nil);
    let _ = set_frozen(&state.redis, "acl_check_cmd", Value::Nil);
    engine.watch.busy.store(false, Relaxed);
    running.active.store(false, Relaxed);
    if call.kind == Kind::Function {
        *running.current.lock() = None;
    }
    let resp = if resp3(state) { ScriptResp::Three } else { ScriptResp::Two };
    let exhausted = lua_near_full(lua);
    if exhausted || matches!(outcome, Err(mlua::Error::MemoryError(_))) {
        // What the script left is garbage now; the next script must not start near the
        // limit.
        let _ = lua.gc_collect();
    }
    let values = match outcome {
        Ok(values) => values.into_vec(),
        Err(e) => return ctx.error(unhandled_error(&e)),
    };
    let protocol = ctx.session.protocol;
    match values.as_slice() {
        [Value::Boolean(true), result, ..] => {
            convert::write_reply(&mut Reply::new(ctx.out, protocol), result, resp)
        }
        [Value::Boolean(true)] => Reply::new(ctx.out, protocol).null(),
        [Value::Boolean(false), Value::Table(err), ..] => {
            let message = match err.raw_get::<Value>("err") {
                Ok(Value::String(s)) => s.to_string_lossy(),
                _ => "ERR unknown error".into(),
            };
            let message = message.strip_prefix('-').unwrap_or(&message);
            let message =
                if message.contains(' ') { message.to_owned() } else { format!("ERR {message}") };
            let source = err.raw_get::<Option<String>>("source").ok().flatten();
            let line = err.raw_get::<Option<i64>>("line").ok().flatten();
            let text = match (source, line) {
                (Some(source), Some(line)) => {
                    format!("{message} script: {}, on {source}:{line}.", call.name)
                }
                _ => format!("{message} script: {}", call.name),
            };
            ctx.error(text);
        }
        // An error the handler never saw, or one it could not handle: Luau calls no
        // handler for a memory error, and a handler short of memory fails itself.
        [Value::Boolean(false), other, ..] => {
            let message = other.to_string().unwrap_or_default();
            let message = if exhausted { "not enough memory".into() } else { message };
            ctx.error(format!("ERR {message} script: {}", call.name))
        }
        _ => ctx.error("ERR Error running script: no result"),
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

/// The command of a `redis.call` or `redis.pcall` (they differ only in what an error reply
/// becomes: raised, or returned as `{err = text}`).
fn run_call(
    cell: &std::cell::RefCell<(&mut Ctx<'_>, Scratch)>,
    lua: &Lua,
    state: &State,
    access: Access,
    args: Variadic<Value>,
) -> mlua::Result<Called> {
    let mut held = cell.try_borrow_mut().map_err(|_| mlua::Error::RecursiveMutCallback)?;
    let (ctx, scratch) = &mut *held;
    from_script(ctx, scratch, lua, state, access, args)
}

/// A sequence of Lua strings from `items` (into `table`).
fn strings(lua: &Lua, items: &[&[u8]], table: mlua::Table) -> mlua::Result<mlua::Table> {
    for (at, item) in items.iter().enumerate() {
        table.raw_set(at + 1, lua.create_string(item)?)?;
    }
    Ok(table)
}

/// Whether the script chose RESP3 with `redis.setresp(3)`.
fn resp3(state: &State) -> bool {
    state.private.raw_get::<Option<i64>>("resp").ok().flatten() == Some(3)
}

/// What a command from a script came to.
enum Called {
    Reply(Value),
    /// An error reply (or a refusal) as text: `redis.call` raises it, `redis.pcall`
    /// returns it as `{err = text}`.
    Error(Vec<u8>),
}

fn refused(message: &[u8]) -> mlua::Result<Called> {
    Ok(Called::Error(message.to_vec()))
}

/// Buffers reused by the commands of one script run.
#[derive(Default)]
struct Scratch {
    raw: Vec<u8>,
    out: Vec<u8>,
}

/// Runs a command for `redis.call` or `redis.pcall`.
fn from_script(
    ctx: &mut Ctx<'_>,
    scratch: &mut Scratch,
    lua: &Lua,
    state: &State,
    access: Access,
    args: Variadic<Value>,
) -> mlua::Result<Called> {
    if args.is_empty() {
        return refused(b"ERR Please specify at least one argument for this redis lib call");
    }
    // The command as RESP, written straight from the Lua values (Lua numbers as Redis 7.0
    // writes them), then parsed back: the executor's handlers take a parsed command.
    let mut raw = std::mem::take(&mut scratch.raw);
    if !compose(&mut raw, &args) {
        scratch.raw = raw;
        return refused(b"ERR Lua redis lib command arguments must be strings or integers");
    }
    let limits = Limits::default();
    let outcome = run_command(ctx, lua, state, access, &raw, &limits, &mut scratch.out);
    scratch.raw = raw;
    outcome
}

/// Writes `args` into `raw` as one RESP command; false for an argument that is neither a
/// string nor a number.
fn compose(raw: &mut Vec<u8>, args: &[Value]) -> bool {
    raw.clear();
    raw.push(b'*');
    raw.extend_from_slice(args.len().to_string().as_bytes());
    raw.extend_from_slice(b"\r\n");
    for arg in args {
        match arg {
            Value::String(s) => push_bulk(raw, &s.as_bytes()),
            Value::Integer(n) => push_bulk(raw, n.to_string().as_bytes()),
            Value::Number(n) => push_bulk(raw, &convert::number_arg(*n)),
            _ => return false,
        }
    }
    true
}

/// `redis.acl_check_cmd(command, ...)`: whether the script's user may run that command
/// line (its command, subcommand and keys), as Redis 7 answers it.
fn acl_check(ctx: &Ctx<'_>, args: &[Value]) -> mlua::Result<bool> {
    let fail = |message: &str| Err(mlua::Error::runtime(coded(message)));
    if args.is_empty() {
        return fail("ERR Please specify at least one argument for this redis lib call");
    }
    let mut raw = Vec::new();
    if !compose(&mut raw, args) {
        return fail("ERR Lua redis lib command arguments must be strings or integers");
    }
    let Ok((command, _)) = parse_command(&raw, &Limits::default()) else {
        return fail("ERR Invalid command passed to redis.acl_check_cmd()");
    };
    let Ok(routed) = route(&command) else {
        return fail("ERR Invalid command passed to redis.acl_check_cmd()");
    };
    let Some(account) = &ctx.session.account else { return Ok(true) };
    let line: Vec<&[u8]> = command.args().collect();
    Ok(crate::resp::acl::check(account, &routed, &line).is_ok())
}

fn push_bulk(raw: &mut Vec<u8>, bytes: &[u8]) {
    raw.push(b'$');
    raw.extend_from_slice(bytes.len().to_string().as_bytes());
    raw.extend_from_slice(b"\r\n");
    raw.extend_from_slice(bytes);
    raw.extend_from_slice(b"\r\n");
}

/// Routes, checks and runs one command line from a script.
fn run_command(
    ctx: &mut Ctx<'_>,
    lua: &Lua,
    state: &State,
    access: Access,
    raw: &[u8],
    limits: &Limits,
    out: &mut Vec<u8>,
) -> mlua::Result<Called> {
    let Ok((command, _)) = parse_command(raw, limits) else {
        return refused(b"ERR Lua redis lib command could not be read");
    };
    let routed = match route(&command) {
        Ok(routed) => routed,
        Err(RouteError::UnknownCommand) => {
            return refused(b"ERR Unknown Redis command called from script")
        }
        Err(RouteError::Arity(_)) => {
            return refused(b"ERR Wrong number of args calling Redis command from script")
        }
        Err(other) => return refused(&other.message(&command)),
    };
    let spec = routed.spec;
    let container_refused = matches!(spec.run, TableRun::Subcommands { .. })
        && matches!(spec.name, "script" | "function" | "client" | "config" | "acl");
    if spec.flags.contains(Flags::NOSCRIPT) || container_refused {
        return refused(b"ERR This Redis command is not allowed from script");
    }
    if spec.flags.contains(Flags::WRITE) {
        if access == Access::ReadOnly {
            return refused(b"ERR Write commands are not allowed from read-only scripts.");
        }
        ctx.shared.scripts.running.wrote.store(true, Relaxed);
    }
    let protocol = if resp3(state) { Protocol::Resp3 } else { Protocol::Resp2 };
    let saved = std::mem::replace(&mut ctx.session.protocol, protocol);
    out.clear();
    let (shared, counters) = (ctx.shared, ctx.counters);
    let _ = crate::resp::execute_routed(shared, counters, ctx.session, &command, routed, out);
    ctx.session.protocol = saved;
    let Ok((reply, _)) = parse_reply(out) else {
        return refused(b"ERR reply could not be read");
    };
    match reply {
        proto_resp::Value::Error(text) | proto_resp::Value::BulkError(text) => refused(text),
        reply => Ok(Called::Reply(convert::to_lua(lua, &reply)?)),
    }
}
