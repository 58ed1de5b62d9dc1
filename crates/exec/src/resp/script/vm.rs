//! The Lua states: one for EVAL's scripts, one for FUNCTION's libraries (as Redis 7 keeps
//! them apart, so FUNCTION FLUSH cannot touch a cached script), each sandboxed the same
//! way.
//!
//! What a script sees, checked against redis-server 7.0: the base library without
//! `print`, `loadfile`, `dofile`, `getfenv`, `setfenv`, `module`, `newproxy` and
//! `require`; `table`, `string`, `math`, `coroutine`; `cjson`, `cmsgpack`, `bit`,
//! `struct`; and `redis`. No `os`, `io`, `package` or `debug` (the error handler keeps a
//! private reference to `debug.getinfo`, to say on which line a script failed).
//!
//! Globals are read-only once the state is set up: assigning one raises "Attempt to
//! modify a readonly table", and reading one that does not exist raises "Script
//! attempted to access nonexistent global variable" (a metatable on the globals table).
//! The globals, every library table (`redis`, `string`, `cjson`, ...), their metatables
//! and the string metatable carry Luau's read-only flag, which `rawset`, `setmetatable`
//! and `table.*` respect too (`sandbox.rs`); KEYS and ARGV are set from Rust for each run.
//! As nothing else a script can reach changes, the globals table is a Luau safe
//! environment: a chunk's global names (`redis.call`, `string.sub`) are resolved once,
//! when it loads (KEYS and ARGV hidden meanwhile), and Luau's builtins are called
//! directly, but for those the sandbox removed or replaced (`sandbox::safe_compiler`).
//! The engine is Luau; `sandbox.rs` says why.

use std::{
    cell::Cell,
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, Ordering::Relaxed},
        Arc,
    },
};

use mlua::{chunk::ChunkMode, Function, Lua, LuaOptions, LuaString, StdLib, Table, Thread, Value};

use super::{functions::Libraries, libs, REDIS_VERSION, REDIS_VERSION_NUM};

/// The chunk name of Spinel's own Lua code (the error handler skips its frames).
pub(super) const INTERNAL_CHUNK: &str = "=redis";

/// Both Lua states and what they hold.
pub(super) struct Vm {
    pub eval_lua: Lua,
    pub eval: State,
    /// Cached scripts by their SHA1 (hex), EVAL's and SCRIPT LOAD's.
    pub scripts: HashMap<String, Script>,
    pub functions: Libraries,
}

/// What each Lua state keeps for running code in it.
pub(super) struct State {
    /// `xpcall(f, handler, ...)` in Lua: runs `f` with its arguments and turns a failure
    /// into an error table with `source` and `line`.
    pub runner: Function,
    /// The globals (read-only; KEYS and ARGV are raw-set in it for each run).
    pub globals: Table,
    /// `redis` (read-only).
    pub redis: Table,
    /// Raises "Script attempted to access nonexistent global variable" (for tables that
    /// must behave as the globals do).
    pub missing: Function,
    /// The running script chose RESP3 with `redis.setresp(3)` (each run starts at RESP2).
    pub resp3: Arc<AtomicBool>,
    /// A finished script's thread, reset to the runner, for the next run to take (making
    /// a thread is a good part of a short script's cost).
    pub spare_thread: Cell<Option<Thread>>,
}

/// A cached script.
pub(super) struct Script {
    pub function: Function,
    pub body_len: usize,
    /// Its shebang flags (`#!lua flags=no-writes,...`); `None` without a shebang.
    pub flags: Option<super::eval::ScriptFlags>,
    /// SCRIPT LOAD put it there (the cache never drops those on its own).
    pub loaded: bool,
}

impl Vm {
    pub fn new() -> mlua::Result<Vm> {
        let eval_lua = new_lua()?;
        let eval = State::new(&eval_lua)?;
        settle(&eval_lua);
        Ok(Vm { eval_lua, eval, scripts: HashMap::new(), functions: new_libraries()? })
    }

    /// SCRIPT FLUSH: a new Lua state for EVAL, as Redis makes one, so nothing a script
    /// did to the old state (whatever got past the sandbox) reaches a later script.
    pub fn fresh_eval(&mut self) -> mlua::Result<()> {
        let eval_lua = new_lua()?;
        self.eval = State::new(&eval_lua)?;
        settle(&eval_lua);
        self.eval_lua = eval_lua;
        self.scripts.clear();
        Ok(())
    }

    /// The Lua state and its `State` that runs `kind`'s code.
    pub fn state_of(&self, kind: super::Kind) -> (&Lua, &State) {
        match kind {
            super::Kind::Eval => (&self.eval_lua, &self.eval),
            super::Kind::Function => (&self.functions.lua, &self.functions.state),
        }
    }

    /// FUNCTION FLUSH: a new Lua state for the libraries.
    pub fn fresh_functions(&mut self) -> mlua::Result<()> {
        self.functions = new_libraries()?;
        Ok(())
    }
}

/// Collects what setting a state up left behind, so that `used_memory_lua` starts from
/// what the state holds.
fn settle(lua: &Lua) {
    let _ = lua.gc_collect();
    let _ = lua.gc_collect();
}

fn new_libraries() -> mlua::Result<Libraries> {
    let lua = new_lua()?;
    let state = State::new(&lua)?;
    settle(&lua);
    Ok(Libraries::new(lua, state))
}

/// A Luau state with the Lua 5.1 libraries Redis offers and nothing of the OS. `debug`
/// is not loaded; the error handler reads frames through `Lua::inspect_stack` instead.
/// Its memory is capped at [`MEMORY_MAX_BYTES`]: past it an allocation fails and the
/// script gets an error, the server stays up.
pub(super) fn new_lua() -> mlua::Result<Lua> {
    let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::COROUTINE;
    let lua = Lua::new_with(libs, LuaOptions::default())?;
    lua.set_memory_limit(MEMORY_MAX_BYTES)?;
    Ok(lua)
}

/// The most memory one Lua state (EVAL's or FUNCTION's) may hold. Redis sets none; a
/// script that builds a table of gigabytes would take the host down with the store.
pub(super) const MEMORY_MAX_BYTES: usize = 128 << 20;

/// Compiles `code` as Lua source, never as precompiled bytecode (a crafted chunk can
/// break the VM's invariants: Redis refuses bytecode since CVE-2015-4335). The garbage
/// collector is paused while the compiler runs, so nothing the parser holds can be
/// collected under it (the class of CVE-2025-49844).
pub(super) fn compile_text(lua: &Lua, code: &[u8], name: &str) -> mlua::Result<Function> {
    compile_with(lua, code, name, None)
}

/// The global functions Luau calls as builtins. A builtin call evaluates its arguments
/// before it looks the function up (its `GETIMPORT` comes after them, as the fallback of
/// its fast call), where Lua 5.1 looks the function up first: in an environment that
/// raises for a missing name (a library's load), `getmetatable(_G)` must name
/// `getmetatable`, as Redis does.
const GLOBAL_BUILTINS: [&str; 13] = [
    "assert",
    "type",
    "typeof",
    "rawset",
    "rawget",
    "rawequal",
    "rawlen",
    "unpack",
    "select",
    "getmetatable",
    "setmetatable",
    "tonumber",
    "tostring",
];

/// [`compile_text`] for a function library. Its chunk runs in an environment of its own,
/// never a safe one, where Luau takes no fast call anyway: treating the global builtins as
/// plain calls costs it nothing, and orders their lookups as Lua 5.1 does.
pub(super) fn compile_library(lua: &Lua, code: &[u8], name: &str) -> mlua::Result<Function> {
    let compiler = mlua::chunk::Compiler::new().set_disabled_builtins(GLOBAL_BUILTINS);
    compile_with(lua, code, name, Some(compiler))
}

fn compile_with(
    lua: &Lua,
    code: &[u8],
    name: &str,
    compiler: Option<mlua::chunk::Compiler>,
) -> mlua::Result<Function> {
    let was_running = lua.gc_is_running();
    lua.gc_stop();
    let mut chunk = lua.load(code).set_name(name).set_mode(ChunkMode::Text);
    if let Some(compiler) = compiler {
        chunk = chunk.set_compiler(compiler);
    }
    let compiled = super::sandbox::without_per_run(lua, || chunk.into_function());
    if was_running {
        lua.gc_restart();
    }
    compiled
}

impl State {
    fn new(lua: &Lua) -> mlua::Result<State> {
        let globals = lua.globals();
        let before = super::sandbox::builtins_now(&globals);
        for name in [
            "print", "loadfile", "dofile", "getfenv", "setfenv", "module", "newproxy", "require",
            "typeof", "rawlen", "gcinfo",
        ] {
            globals.raw_remove(name)?;
        }
        super::sandbox::lua51_globals(lua, &globals)?;
        for name in ["os", "io", "package", "debug"] {
            globals.raw_remove(name)?;
        }
        libs::register(lua, &globals)?;
        let (redis, resp3) = redis_table(lua)?;
        let (call, pcall, acl_check) = call_wrappers(lua)?;
        redis.raw_set("call", call)?;
        redis.raw_set("pcall", pcall)?;
        redis.raw_set("acl_check_cmd", acl_check)?;
        globals.raw_set("redis", redis.clone())?;
        globals.raw_set("KEYS", lua.create_table()?)?;
        globals.raw_set("ARGV", lua.create_table()?)?;
        // The handler runs in Lua with the frame of the failing function one level up;
        // `where_failed` (Rust) reads the frames through the C API (`inspect_stack`).
        let where_failed = lua.create_function(|lua, ()| {
            // Frames: 0 is this function, 1 the handler, 2 what raised (maybe a C
            // function such as `error`, or Spinel's own `redis.call`), then its callers.
            for level in 2..8 {
                let Some(found) = lua.inspect_stack(level, |debug| {
                    let source = debug.source();
                    let what = source.what;
                    let name = source.source.map(|s| s.into_owned()).unwrap_or_default();
                    (what, name, debug.current_line())
                }) else {
                    break;
                };
                let (what, name, line) = found;
                if what == "C" || what == "tail" || name == INTERNAL_CHUNK {
                    continue;
                }
                return Ok((Some(name), line.map(|l| l as i64)));
            }
            Ok((None, None))
        })?;
        let setup: Function = lua.load(SETUP).set_name(INTERNAL_CHUNK).into_function()?;
        let describe = lua.create_function(|_, error: Value| Ok(describe(&error)))?;
        let runner: Function = setup.call((where_failed, describe, redis.clone()))?;
        // Read-only globals from here on: the globals table and every library carry Luau's
        // read-only flag; the globals' metatable raises for a name that does not exist
        // (`__index`) and for a new one (`__newindex`; an existing one raises Luau's
        // read-only error). Nothing a script can reach changes between runs but KEYS and
        // ARGV (set from Rust), so the globals are a safe environment for Luau (see
        // `sandbox::safe_compiler`).
        let missing = lua
            .load(
                "return function(_, k) error(\"Script attempted to access nonexistent global \
             variable '\" .. tostring(k) .. \"'\", 2) end",
            )
            .set_name(INTERNAL_CHUNK)
            .call::<Function>(())?;
        let meta = lua.create_table()?;
        meta.raw_set("__index", missing.clone())?;
        meta.raw_set(
            "__newindex",
            lua.load("return function() error('Attempt to modify a readonly table', 2) end")
                .set_name(INTERNAL_CHUNK)
                .call::<Function>(())?,
        )?;
        globals.set_metatable(Some(meta.clone()))?;
        super::sandbox::freeze(lua, &globals, &[&globals, &meta])?;
        globals.set_safeenv(true);
        let after = super::sandbox::builtins_now(&globals);
        lua.set_compiler(super::sandbox::safe_compiler(&before, &after));
        let spare_thread = Cell::new(None);
        Ok(State { runner, globals, redis, missing, resp3, spare_thread })
    }
}

/// `redis.call`, `redis.pcall` and `redis.acl_check_cmd`: the same functions for the
/// state's whole life (a script may keep them in a local), each calling its raw C function
/// from `luacall`, which answers `true, value` or `false, error text` for the script
/// running on this thread (see `host.rs`). `redis.call` raises the error (`fail`, a coded
/// error), `redis.pcall` returns it as `{err = text}`. Luau makes no tail calls, so the
/// script's frame, whose line an error names, stays under the wrapper's.
const CALL_WRAPPERS: &str = r#"
local call, pcall, acl_check, fail = ...
return function(...)
    local ok, value = call(...)
    if ok then return value end
    return fail(value)
  end,
  function(...)
    local ok, value = pcall(...)
    if ok then return value end
    return {err = value}
  end,
  function(...)
    local ok, value = acl_check(...)
    if ok then return value end
    return fail(value)
  end
"#;

/// `redis.call`, `redis.pcall` and `redis.acl_check_cmd` (see [`CALL_WRAPPERS`]).
fn call_wrappers(lua: &Lua) -> mlua::Result<(Function, Function, Function)> {
    let wrappers = lua.load(CALL_WRAPPERS).set_name(INTERNAL_CHUNK).into_function()?;
    let (raw_call, raw_pcall, raw_acl) = luacall::functions(lua)?;
    let fail = lua.create_function(|_, text: LuaString| -> mlua::Result<()> {
        Err(mlua::Error::runtime(coded(&text.to_string_lossy())))
    })?;
    wrappers.call((raw_call, raw_pcall, raw_acl, fail))
}

/// The runner and its error handler, in Lua.
const SETUP: &str = r#"
local where_failed, describe, redis = ...
local rawget, rawset, error, type, tostring, xpcall, sub, find, gsub =
  rawget, rawset, error, type, tostring, xpcall, string.sub, string.find, string.gsub
-- Luau's words for a runtime error, in Lua 5.1's generic ones (which Redis's messages and
-- its clients' checks carry): a write to a read-only table, an index, arithmetic, a
-- concatenation or a comparison on the wrong type.
local function redis_words(text)
  local at = find(text, 'attempt to modify a readonly table', 1, true)
  if at then return sub(text, 1, at - 1) .. 'A' .. sub(text, at + 1) end
  text = gsub(text, "attempt to index (%a+) with .*$", "attempt to index a %1 value")
  text = gsub(text, "attempt to perform arithmetic %(%a+%) on (%a+).*$",
    "attempt to perform arithmetic on a %1 value")
  text = gsub(text, "attempt to concatenate (%a+) with .*$", "attempt to concatenate a %1 value")
  return text
end
local function handler(err)
  local source, line = where_failed()
  if type(err) == 'table' then
    if type(rawget(err, 'err')) ~= 'string' then err = {err = 'ERR ' .. tostring(err)} end
  elseif type(err) == 'userdata' then
    -- Raised by Spinel's Rust code: a reply's error (redis.call) as it is; a library's
    -- message gets the caller's position and ERR, as luaL_error gives them.
    local message, coded = describe(err)
    if not coded then
      if source then message = sub(source, 2) .. ':' .. tostring(line) .. ': ' .. message end
      message = 'ERR ' .. message
    end
    err = {err = message}
  else
    err = {err = 'ERR ' .. redis_words(tostring(err))}
  end
  if source then
    err['source'] = source
    err['line'] = line
  end
  return err
end
return function(f, a, b)
  return xpcall(function() return f(a, b) end, handler)
end
"#;

/// The `redis` table without `call`/`pcall`/`acl_check_cmd`, and where `setresp` records its choice ([`State::resp3`]).
fn redis_table(lua: &Lua) -> mlua::Result<(Table, Arc<AtomicBool>)> {
    let redis = lua.create_table()?;
    redis.raw_set(
        "error_reply",
        lua.create_function(|lua, message: Value| {
            let Value::String(message) = message else {
                return Err(mlua::Error::runtime("ERR wrong number or type of arguments"));
            };
            // Kept as given, less a leading '-'; the reply adds `ERR` to a one-word text.
            let text = message.as_bytes().to_vec();
            let text = text.strip_prefix(b"-").map_or(text.clone(), <[u8]>::to_vec);
            let table = lua.create_table()?;
            table.raw_set("err", lua.create_string(text)?)?;
            Ok(table)
        })?,
    )?;
    redis.raw_set(
        "status_reply",
        lua.create_function(|lua, message: Value| {
            let Value::String(message) = message else {
                return Err(mlua::Error::runtime("ERR wrong number or type of arguments"));
            };
            let table = lua.create_table()?;
            table.raw_set("ok", message)?;
            Ok(table)
        })?,
    )?;
    redis.raw_set(
        "sha1hex",
        lua.create_function(|_, data: mlua::Variadic<Value>| {
            let [Value::String(data)] = data.as_slice() else {
                return Err(mlua::Error::runtime("ERR wrong number of arguments"));
            };
            Ok(super::sha1_hex(&data.as_bytes()))
        })?,
    )?;
    redis.raw_set("log", log_function(lua)?)?;
    let resp3 = Arc::new(AtomicBool::new(false));
    let chosen = Arc::clone(&resp3);
    redis.raw_set(
        "setresp",
        lua.create_function(move |_, version: Value| {
            let version = match version {
                Value::Integer(n) => n as f64,
                Value::Number(n) => n,
                _ => 0.0,
            };
            if version != 2.0 && version != 3.0 {
                return Err(mlua::Error::runtime(coded("ERR RESP version must be 2 or 3.")));
            }
            chosen.store(version == 3.0, Relaxed);
            Ok(())
        })?,
    )?;
    let noop = lua.create_function(|_, _: mlua::Variadic<Value>| Ok(()))?;
    redis.raw_set("set_repl", noop.clone())?;
    redis.raw_set("replicate_commands", lua.create_function(|_, ()| Ok(true))?)?;
    redis.raw_set("breakpoint", lua.create_function(|_, ()| Ok(false))?)?;
    redis.raw_set("debug", noop)?;
    for (name, value) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        redis.raw_set(name, value)?;
    }
    redis.raw_set("REDIS_VERSION", REDIS_VERSION)?;
    redis.raw_set("REDIS_VERSION_NUM", REDIS_VERSION_NUM)?;
    Ok((redis, resp3))
}

/// `redis.log(level, ...)`: checked as Redis checks it, then dropped (see [`tracing_log`]).
fn log_function(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|_, args: mlua::Variadic<Value>| {
        if args.len() < 2 {
            return Err(mlua::Error::runtime("ERR redis.log() requires two arguments or more."));
        }
        let (Value::Integer(_) | Value::Number(_)) = args[0] else {
            return Err(mlua::Error::runtime("ERR First argument must be a number (log level)."));
        };
        let mut line = String::new();
        for arg in args.iter().skip(1) {
            if let Ok(Some(text)) = arg.to_string().map(Some) {
                if !line.is_empty() {
                    line.push(' ');
                }
                line.push_str(&text);
            }
        }
        tracing_log(&line);
        Ok(())
    })
}

/// `redis.log`: exec has no logger of its own; the line is dropped (Redis writes it to
/// its log file).
fn tracing_log(_line: &str) {}

/// The message of an error a Rust function raised, and whether it is a reply's error to
/// pass on as it is ([`coded`]).
pub(super) fn describe(error: &Value) -> (String, bool) {
    let Value::Error(error) = error else {
        return (error.to_string().unwrap_or_default(), false);
    };
    let mut cause: &mlua::Error = error;
    while let mlua::Error::CallbackError { cause: inner, .. } = cause {
        cause = inner;
    }
    let message = match cause {
        mlua::Error::RuntimeError(message) => message.clone(),
        other => other.to_string(),
    };
    if let Some(message) = message.strip_prefix(CODED) {
        return (message.to_owned(), true);
    }
    (message, false)
}

/// Marks a Rust error's message as a reply error to pass on as it is (see [`coded`]).
const CODED: char = '\u{1}';

/// An error message that reaches the client as it is (`WRONGTYPE ...`, `ERR Script
/// killed ...`): no position or `ERR` is added to it.
pub(super) fn coded(message: &str) -> String {
    format!("{CODED}{message}")
}
