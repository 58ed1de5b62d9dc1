//! Redis 7 functions: FUNCTION LOAD/LIST/DELETE/FLUSH/DUMP/RESTORE/STATS, FCALL, FCALL_RO.
//!
//! A library is Lua code opening with `#!lua name=<lib>`; running it once calls
//! `redis.register_function` for each function it offers. It runs in an environment of
//! its own: while it loads, only `redis` (with `register_function` and `log`, no `call`)
//! and the library tables are visible, as in Redis 7; afterwards its functions see the
//! usual globals. Function names are looked up ignoring case, library names not.
//!
//! Libraries live in memory only: Spinel's snapshot does not save them (a restart loses
//! them; FUNCTION DUMP/RESTORE carries them over by hand). DUMP's payload is Spinel's own:
//!
//! ```text
//!   "SPFN" | version u8 (1) | count u32 LE | count x (len u32 LE | code) | xxh3-64 LE
//! ```
//! (the checksum covers everything before it); RESTORE takes what DUMP produced.

use std::{collections::BTreeMap, sync::atomic::Ordering::Relaxed, time::Instant};

use mlua::{Function, Lua, Table, Value, VmState};

use super::{
    call::{invoke, Invocation},
    eval::{is_flush_mode, run_exclusive, syntax_message},
    metadata::{metadata, valid_name},
    numkeys,
    sandbox::set_frozen,
    vm::{coded, compile_library, State},
    Access, Kind,
};
use crate::resp::{
    glob::{matches, Case},
    Ctx,
};

pub(super) const HELP: &[&str] = &[
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LOAD [REPLACE] <FUNCTION CODE>",
    "    Create a new library with the given library name and code.",
    "DELETE <LIBRARY NAME>",
    "    Delete the given library.",
    "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
    "    Return general information on all the libraries:",
    "    * Library name",
    "    * The engine used to run the Library",
    "    * Library description",
    "    * Functions list",
    "    * Library code (if WITHCODE is given)",
    "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
    "STATS",
    "    Return information about the current function running:",
    "    * Function name",
    "    * Command used to run the function",
    "    * Duration in MS that the function is running",
    "    If no function is running, return nil",
    "    In addition, returns a list of available engines.",
    "KILL",
    "    Kill the current running function.",
    "FLUSH [ASYNC|SYNC]",
    "    Delete all the libraries.",
    "    When called without the optional mode argument, the behavior is determined by the",
    "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
    "    * ASYNC: Asynchronously flush the libraries.",
    "    * SYNC: Synchronously flush the libraries.",
    "DUMP",
    "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
    "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
    "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
    "    control how to handle existing libraries (default APPEND):",
    "    * FLUSH: delete all existing libraries.",
    "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
    "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
    "      libraries with the new libraries (notice that even on this option there is a chance of failure",
    "      in case of functions name collision with another library).",
    "HELP",
    "    Prints this help.",
];

/// Redis's reply to a subcommand given the wrong arguments (the name as the client wrote it).
fn subcommand_syntax(ctx: &mut Ctx<'_>) {
    let name = String::from_utf8_lossy(ctx.arg(1)).into_owned();
    ctx.error(format!(
        "ERR unknown subcommand or wrong number of arguments for '{name}'. Try FUNCTION HELP."
    ));
}

/// How long a library's code may run while it loads (Redis's 500 ms).
const LOAD_TIME_MAX_MS: u128 = 500;
const DUMP_MAGIC: &[u8] = b"SPFN\x01";
const BAD_PAYLOAD: &str = "ERR DUMP payload version or checksum are wrong";

/// The loaded libraries and the Lua state they run in.
pub(super) struct Libraries {
    pub lua: Lua,
    pub state: State,
    /// `make_env()` in Lua: a library's environment, and the switch of its load phase.
    make_env: Function,
    /// `register_function` of the load-time `redis` once the load is over.
    refuse: Function,
    loading: Table,
    libraries: BTreeMap<String, Library>,
}

struct Library {
    code: Vec<u8>,
    functions: Vec<Registered>,
}

#[derive(Clone)]
struct Registered {
    name: String,
    description: Option<String>,
    flags: Vec<&'static str>,
    function: Function,
}

impl Registered {
    fn no_writes(&self) -> bool {
        self.flags.contains(&"no-writes")
    }
}

const FUNCTION_FLAGS: &[&str] =
    &["no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"];

const ENV: &str = r#"
local globals, load_redis = ...
local rawget, error, tostring, setmetatable = rawget, error, tostring, setmetatable
local loading = {on = false}
local function missing(k)
  error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 3)
end
local function make_env()
  local env = {}
  setmetatable(env, {
    __index = function(_, k)
      if loading.on then
        if k == 'redis' then return load_redis end
        missing(k)
      end
      local v = rawget(globals, k)
      if v == nil then missing(k) end
      return v
    end,
    __newindex = function() error('Attempt to modify a readonly table', 2) end,
  })
  return env
end
return make_env, loading
"#;

impl Libraries {
    pub fn new(lua: Lua, state: State) -> Libraries {
        let load_redis = lua.create_table().expect("a table");
        for name in ["log", "LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING"] {
            let value: Value = state.redis.raw_get(name).expect("set up by vm");
            load_redis.raw_set(name, value).expect("a table");
        }
        for name in ["REDIS_VERSION", "REDIS_VERSION_NUM"] {
            let value: Value = state.redis.raw_get(name).expect("set up by vm");
            load_redis.raw_set(name, value).expect("a table");
        }
        let (make_env, loading): (Function, Table) = lua
            .load(ENV)
            .set_name(super::vm::INTERNAL_CHUNK)
            .call((state.globals.clone(), load_redis.clone()))
            .expect("the environment code runs");
        // Like the globals, the load-time `redis` raises for a name it does not have.
        let meta = lua.create_table().expect("a table");
        meta.raw_set("__index", state.missing.clone()).expect("a table");
        load_redis.set_metatable(Some(meta.clone())).expect("a table");
        load_redis.set_readonly(true);
        meta.set_readonly(true);
        loading.raw_set("redis", load_redis.clone()).expect("a table");
        // At run time `redis` has no register_function: Luau's error for calling a nil
        // field does not name it, so a function raises Lua 5.1's words for it.
        let absent = lua
            .create_function(|_, _: mlua::Variadic<Value>| -> mlua::Result<()> {
                Err(mlua::Error::runtime("attempt to call field 'register_function' (a nil value)"))
            })
            .expect("a function");
        set_frozen(&state.redis, "register_function", Value::Function(absent)).expect("a table");
        let refuse = lua
            .create_function(|_, _: mlua::Variadic<Value>| -> mlua::Result<()> {
                Err(mlua::Error::runtime(coded(
                    "ERR redis.register_function can only be called on FUNCTION LOAD command",
                )))
            })
            .expect("a function");
        set_frozen(&load_redis, "register_function", Value::Function(refuse.clone()))
            .expect("a table");
        Libraries { lua, state, make_env, refuse, loading, libraries: BTreeMap::new() }
    }

    fn find(&self, name: &str) -> Option<(&str, &Registered)> {
        self.libraries.iter().find_map(|(lib, library)| {
            let found = library.functions.iter().find(|f| f.name.eq_ignore_ascii_case(name))?;
            Some((lib.as_str(), found))
        })
    }

    /// Whether function `name` declares `no-writes` (`None`: there is no such function).
    pub(super) fn declares_no_writes(&self, name: &str) -> Option<bool> {
        self.find(name).map(|(_, function)| function.no_writes())
    }

    fn counts(&self) -> (u64, u64) {
        let functions = self.libraries.values().map(|l| l.functions.len()).sum::<usize>();
        (self.libraries.len() as u64, functions as u64)
    }

    /// Compiles and runs a library's code, collecting what it registers.
    fn compile(&self, code: &[u8]) -> Result<(String, Library), String> {
        let (name, start) = metadata(code)?;
        let chunk = compile_library(&self.lua, &code[start..], "@user_function")
            .map_err(|e| format!("ERR Error compiling function: {}", syntax_message(&e)))?;
        let env: Table = self.make_env.call(()).map_err(|e| format!("ERR {e}"))?;
        let _ = chunk.set_environment(env);
        let registered = std::cell::RefCell::new(Vec::<Registered>::new());
        let load_redis: Table = self.loading.raw_get("redis").map_err(|e| format!("ERR {e}"))?;
        let started = Instant::now();
        let ticks = std::sync::atomic::AtomicU32::new(0);
        self.lua.set_interrupt(move |_| {
            let tick = ticks.fetch_add(1, Relaxed);
            if tick.is_multiple_of(1024) && started.elapsed().as_millis() > LOAD_TIME_MAX_MS {
                return Err(mlua::Error::runtime(coded("ERR FUNCTION LOAD timeout")));
            }
            Ok(VmState::Continue)
        });
        let _ = self.loading.raw_set("on", true);
        let outcome = self.lua.scope(|scope| {
            let register = scope.create_function(|_, args: mlua::Variadic<Value>| {
                let function = parse_registration(&args)
                    .map_err(|message| mlua::Error::runtime(coded(&message)))?;
                let mut list = registered.borrow_mut();
                if list.iter().any(|f| f.name.eq_ignore_ascii_case(&function.name)) {
                    let message = coded("ERR Function already exists in the library");
                    return Err(mlua::Error::runtime(message));
                }
                list.push(function);
                Ok(())
            })?;
            set_frozen(&load_redis, "register_function", Value::Function(register))?;
            self.state.runner.call::<mlua::MultiValue>((chunk, Value::Nil, Value::Nil))
        });
        let _ = self.loading.raw_set("on", false);
        // The load-time `redis`, kept by a library past its load, refuses as Redis does.
        let _ = set_frozen(&load_redis, "register_function", Value::Function(self.refuse.clone()));
        self.lua.remove_interrupt();
        let values =
            outcome.map_err(|e| format!("ERR Error registering functions: {e}"))?.into_vec();
        if let [Value::Boolean(false), Value::Table(err), ..] = values.as_slice() {
            let message = err.raw_get::<String>("err").unwrap_or_default();
            return Err(format!("ERR Error registering functions: {message}"));
        }
        let functions = registered.into_inner();
        if functions.is_empty() {
            return Err("ERR No functions registered".into());
        }
        Ok((name, Library { code: code.to_vec(), functions }))
    }

    /// Adds a compiled library; `replace` lets it take the place of one of the same name.
    /// (RESTORE's collision message has no quotes, LOAD's has.)
    fn add(
        &mut self,
        name: String,
        library: Library,
        replace: bool,
        from: From,
    ) -> Result<(), String> {
        if self.libraries.contains_key(&name) && !replace {
            return Err(match from {
                From::Load => format!("ERR Library '{name}' already exists"),
                From::Restore => format!("ERR Library {name} already exists"),
            });
        }
        for function in &library.functions {
            if let Some((owner, _)) = self.find(&function.name) {
                if owner != name {
                    return Err(format!("ERR Function {} already exists", function.name));
                }
            }
        }
        self.libraries.insert(name, library);
        Ok(())
    }
}

/// Which command adds a library.
#[derive(Clone, Copy)]
enum From {
    Load,
    Restore,
}

/// `redis.register_function(name, callback)` or `redis.register_function{function_name=,
/// callback=, flags=, description=}`, with Redis 7.0's checks and texts.
fn parse_registration(args: &[Value]) -> Result<Registered, String> {
    let (name, callback, flags, description) = match args {
        [Value::Table(table)] => named_arguments(table)?,
        [_] => {
            return Err("ERR calling redis.register_function with a single argument is only \
                        applicable to Lua table (representing named arguments)."
                .into())
        }
        [name, callback] => {
            if !matches!(name, Value::String(_)) {
                return Err("ERR first argument to redis.register_function must be a string".into());
            }
            if !matches!(callback, Value::Function(_)) {
                return Err(
                    "ERR second argument to redis.register_function must be a function".into()
                );
            }
            (name.clone(), callback.clone(), Value::Nil, Value::Nil)
        }
        _ => return Err("ERR wrong number of arguments to redis.register_function".into()),
    };
    let (Value::String(name), Value::Function(function)) = (name, callback) else {
        return Err("ERR redis.register_function must get a function name argument".into());
    };
    let name = name.to_string_lossy();
    if !valid_name(&name) {
        return Err("ERR Library names can only contain letters, numbers, or underscores(_) and \
                    must be at least one character long"
            .into());
    }
    let mut parsed = Vec::new();
    if let Value::Table(flags) = flags {
        for flag in flags.sequence_values::<Value>() {
            let Ok(Value::String(flag)) = flag else {
                return Err("ERR unknown flag given".into());
            };
            let flag = flag.to_string_lossy();
            match FUNCTION_FLAGS.iter().find(|f| **f == flag) {
                Some(known) => parsed.push(*known),
                None => return Err("ERR unknown flag given".into()),
            }
        }
    }
    let description = match description {
        Value::String(text) => Some(text.to_string_lossy()),
        // A number is a string to Lua's checks, as Redis takes it.
        Value::Integer(n) => Some(n.to_string()),
        Value::Number(n) => Some(super::convert::format_g14(n)),
        _ => None,
    };
    Ok(Registered { name, description, flags: parsed, function })
}

/// The named form's arguments: (function_name, callback, flags, description), each checked
/// for its type, unknown names refused, the two required ones present.
fn named_arguments(table: &Table) -> Result<(Value, Value, Value, Value), String> {
    let (mut name, mut callback, mut flags, mut description) =
        (Value::Nil, Value::Nil, Value::Nil, Value::Nil);
    for pair in table.pairs::<Value, Value>() {
        let Ok((key, value)) = pair else { break };
        let key = match &key {
            Value::String(key) => key.to_string_lossy(),
            _ => {
                return Err("ERR named argument key given to redis.register_function is not a \
                             string"
                    .into())
            }
        };
        let (slot, ok, wrong) = match key.as_str() {
            "function_name" => (
                &mut name,
                matches!(value, Value::String(_)),
                "function_name argument given to redis.register_function must be a string",
            ),
            "callback" => (
                &mut callback,
                matches!(value, Value::Function(_)),
                "callback argument given to redis.register_function must be a function",
            ),
            "flags" => (
                &mut flags,
                matches!(value, Value::Table(_)),
                "flags argument to redis.register_function must be a table representing \
                 function flags",
            ),
            "description" => (
                &mut description,
                matches!(value, Value::String(_) | Value::Integer(_) | Value::Number(_)),
                "description argument given to redis.register_function must be a string",
            ),
            _ => return Err("ERR unknown argument given to redis.register_function".into()),
        };
        if !ok {
            return Err(format!("ERR {wrong}"));
        }
        *slot = value;
    }
    if name.is_nil() {
        return Err("ERR redis.register_function must get a function name argument".into());
    }
    if callback.is_nil() {
        return Err("ERR redis.register_function must get a callback argument".into());
    }
    Ok((name, callback, flags, description))
}

fn note_counts(shared: &crate::Shared, libraries: &Libraries) {
    let (libs, functions) = libraries.counts();
    shared.redis.scripts.libraries.store(libs, Relaxed);
    shared.redis.scripts.functions.store(functions, Relaxed);
}

/// Every library's code, in name order (an RDB file's FUNCTION2 entries).
pub(crate) fn library_codes(shared: &crate::Shared) -> Vec<Vec<u8>> {
    shared
        .redis
        .scripts
        .with_vm(|vm| vm.functions.libraries.values().map(|library| library.code.clone()).collect())
}

/// Loads the libraries of an RDB file in place of any there: all of them, or (when one
/// fails to compile or collides) none, saying why.
pub(crate) fn load_libraries(shared: &crate::Shared, codes: &[Vec<u8>]) -> Result<(), String> {
    if codes.is_empty() && shared.redis.scripts.libraries.load(Relaxed) == 0 {
        // Nothing to load or replace: no Lua state is made for it.
        return Ok(());
    }
    shared.redis.scripts.with_vm(|vm| {
        let libraries = &mut vm.functions;
        let mut compiled = Vec::with_capacity(codes.len());
        for code in codes {
            compiled.push(libraries.compile(code)?);
        }
        let saved = std::mem::take(&mut libraries.libraries);
        for (name, library) in compiled {
            if let Err(message) = libraries.add(name, library, false, From::Restore) {
                libraries.libraries = saved;
                return Err(message);
            }
        }
        note_counts(shared, libraries);
        Ok(())
    })
}

/// FUNCTION LOAD [REPLACE] code.
pub(super) fn load(ctx: &mut Ctx<'_>) {
    // Options, then the code last (Redis 7.0 reads every argument before it as an option).
    let last = ctx.argc() - 1;
    let mut replace = false;
    for at in 2..last {
        if !ctx.arg(at).eq_ignore_ascii_case(b"replace") {
            let option = String::from_utf8_lossy(ctx.arg(at)).into_owned();
            return ctx.error(format!("ERR Unknown option given: {option}"));
        }
        replace = true;
    }
    let code = ctx.arg(last);
    let shared = ctx.shared;
    let outcome = shared.redis.scripts.with_vm(|vm| {
        let libraries = &mut vm.functions;
        let (name, library) = libraries.compile(code)?;
        libraries.add(name.clone(), library, replace, From::Load)?;
        note_counts(ctx.shared, libraries);
        Ok::<_, String>(name)
    });
    match outcome {
        Ok(name) => ctx.reply().bulk(name.as_bytes()),
        Err(message) => ctx.error(message),
    }
}

/// FCALL and FCALL_RO.
pub(super) fn fcall(ctx: &mut Ctx<'_>, access: Access) {
    let name = String::from_utf8_lossy(ctx.arg(1)).into_owned();
    // Redis looks the function up before it reads numkeys.
    if !ctx.shared.redis.scripts.with_vm(|vm| vm.functions.find(&name).is_some()) {
        return ctx.error("ERR Function not found");
    }
    let Some(numkeys) = numkeys(ctx, "ERR Bad number of keys provided") else { return };
    let cmd = ctx.cmd;
    let keys: Vec<&[u8]> = (3..3 + numkeys).filter_map(|at| cmd.arg(at)).collect();
    let args: Vec<&[u8]> = (3 + numkeys..cmd.argc()).filter_map(|at| cmd.arg(at)).collect();
    // The gate first, then the Lua states' mutex (see the lock order in `mod.rs`).
    run_exclusive(ctx, |ctx| {
        let shared = ctx.shared;
        shared.redis.scripts.with_vm(|vm| run_function(ctx, vm, &name, access, keys, args))
    });
}

fn run_function(
    ctx: &mut Ctx<'_>,
    vm: &mut super::vm::Vm,
    name: &str,
    access: Access,
    keys: Vec<&[u8]>,
    args: Vec<&[u8]>,
) {
    {
        let libraries = &vm.functions;
        let Some((_, registered)) = libraries.find(name) else {
            return ctx.error("ERR Function not found");
        };
        if access == Access::ReadOnly && !registered.no_writes() {
            return ctx.error("ERR Can not execute a script with write flag using *_ro command.");
        }
        if ctx.shared.redis.cluster.get().is_some() && registered.flags.contains(&"no-cluster") {
            return ctx.error(crate::resp::cluster::NO_CLUSTER_SCRIPT);
        }
        let cross_slot = registered.flags.contains(&"allow-cross-slot-keys");
        crate::resp::cluster::allow_cross_slot(ctx.session, cross_slot);
        let access = if registered.no_writes() { Access::ReadOnly } else { access };
        let function = registered.function.clone();
        let name = registered.name.clone();
        let call = Invocation { function, name: &name, keys, args, access, kind: Kind::Function };
        invoke(ctx, &libraries.lua, &libraries.state, call);
    }
}

/// FUNCTION DELETE library.
pub(super) fn delete(ctx: &mut Ctx<'_>) {
    let name = String::from_utf8_lossy(ctx.arg(2)).into_owned();
    let shared = ctx.shared;
    let removed = shared.redis.scripts.with_vm(|vm| {
        let removed = vm.functions.libraries.remove(&name).is_some();
        note_counts(ctx.shared, &vm.functions);
        removed
    });
    if removed {
        ctx.reply().ok();
    } else {
        ctx.error("ERR Library not found");
    }
}

/// FUNCTION FLUSH [ASYNC|SYNC].
pub(super) fn flush(ctx: &mut Ctx<'_>) {
    if ctx.argc() > 3 {
        return subcommand_syntax(ctx);
    }
    if ctx.argc() == 3 && !is_flush_mode(ctx.arg(2)) {
        return ctx.error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
    }
    let shared = ctx.shared;
    let fresh = shared.redis.scripts.with_vm(|vm| {
        let fresh = vm.fresh_functions();
        note_counts(ctx.shared, &vm.functions);
        fresh
    });
    match fresh {
        Ok(()) => ctx.reply().ok(),
        Err(e) => ctx.error(format!("ERR {e}")),
    }
}

/// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
pub(super) fn list(ctx: &mut Ctx<'_>) {
    let mut pattern: Option<&[u8]> = None;
    let mut with_code = false;
    let mut at = 2;
    while at < ctx.argc() {
        let arg = ctx.arg(at);
        if arg.eq_ignore_ascii_case(b"withcode") && !with_code {
            with_code = true;
        } else if arg.eq_ignore_ascii_case(b"libraryname") && pattern.is_none() {
            if at + 1 >= ctx.argc() {
                return ctx.error("ERR library name argument was not given");
            }
            at += 1;
            pattern = Some(ctx.arg(at));
        } else {
            return ctx.error(format!("ERR Unknown argument {}", String::from_utf8_lossy(arg)));
        }
        at += 1;
    }
    let shared = ctx.shared;
    shared.redis.scripts.with_vm(|vm| {
        let chosen: Vec<(&String, &Library)> = vm
            .functions
            .libraries
            .iter()
            .filter(|(name, _)| {
                pattern.is_none_or(|p| matches(p, name.as_bytes(), Case::Sensitive))
            })
            .collect();
        let mut reply = ctx.reply();
        reply.array(chosen.len());
        for (name, library) in chosen {
            reply.map(if with_code { 4 } else { 3 });
            reply.bulk(b"library_name");
            reply.bulk(name.as_bytes());
            reply.bulk(b"engine");
            reply.bulk(b"LUA");
            reply.bulk(b"functions");
            reply.array(library.functions.len());
            for function in &library.functions {
                reply.map(3);
                reply.bulk(b"name");
                reply.bulk(function.name.as_bytes());
                reply.bulk(b"description");
                match &function.description {
                    Some(text) => reply.bulk(text.as_bytes()),
                    None => reply.null(),
                }
                reply.bulk(b"flags");
                reply.set(function.flags.len());
                for flag in &function.flags {
                    reply.simple(flag.as_bytes());
                }
            }
            if with_code {
                reply.bulk(b"library_code");
                reply.bulk(&library.code);
            }
        }
    });
}

/// FUNCTION DUMP: the payload described in the module docs.
pub(super) fn dump(ctx: &mut Ctx<'_>) {
    let shared = ctx.shared;
    let payload = shared.redis.scripts.with_vm(|vm| {
        let mut out = DUMP_MAGIC.to_vec();
        out.extend_from_slice(&(vm.functions.libraries.len() as u32).to_le_bytes());
        for library in vm.functions.libraries.values() {
            out.extend_from_slice(&(library.code.len() as u32).to_le_bytes());
            out.extend_from_slice(&library.code);
        }
        let sum = xxhash_rust::xxh3::xxh3_64(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    });
    ctx.reply().bulk(&payload);
}

/// The libraries' code in a DUMP payload, or `None` if it is not one.
fn parse_dump(payload: &[u8]) -> Option<Vec<&[u8]>> {
    let body = payload.get(..payload.len().checked_sub(8)?)?;
    let sum = u64::from_le_bytes(payload[body.len()..].try_into().ok()?);
    if !body.starts_with(DUMP_MAGIC) || xxhash_rust::xxh3::xxh3_64(body) != sum {
        return None;
    }
    let mut rest = &body[DUMP_MAGIC.len()..];
    let count = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?);
    rest = &rest[4..];
    let mut codes = Vec::new();
    for _ in 0..count {
        let len = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
        codes.push(rest.get(4..4 + len)?);
        rest = &rest[4 + len..];
    }
    rest.is_empty().then_some(codes)
}

/// FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE].
pub(super) fn restore(ctx: &mut Ctx<'_>) {
    #[derive(PartialEq)]
    enum Policy {
        Flush,
        Append,
        Replace,
    }
    let policy = match ctx.argc() {
        3 => Policy::Append,
        4 => match ctx.arg(3).to_ascii_lowercase().as_slice() {
            b"flush" => Policy::Flush,
            b"append" => Policy::Append,
            b"replace" => Policy::Replace,
            _ => {
                return ctx.error(
                    "ERR Wrong restore policy given, value should be either FLUSH, APPEND or \
                     REPLACE.",
                )
            }
        },
        _ => return subcommand_syntax(ctx),
    };
    let Some(codes) = parse_dump(ctx.arg(2)) else {
        return ctx.error(BAD_PAYLOAD);
    };
    let shared = ctx.shared;
    let outcome = shared.redis.scripts.with_vm(|vm| {
        let libraries = &mut vm.functions;
        let mut compiled = Vec::new();
        for code in codes {
            compiled.push(libraries.compile(code)?);
        }
        let saved = std::mem::take(&mut libraries.libraries);
        if policy != Policy::Flush {
            libraries.libraries = saved.clone_shallow();
        }
        for (name, library) in compiled {
            if let Err(message) =
                libraries.add(name, library, policy == Policy::Replace, From::Restore)
            {
                libraries.libraries = saved;
                return Err(message);
            }
        }
        note_counts(ctx.shared, libraries);
        Ok(())
    });
    match outcome {
        Ok(()) => ctx.reply().ok(),
        Err(message) => ctx.error(message),
    }
}

trait CloneShallow {
    fn clone_shallow(&self) -> Self;
}

impl CloneShallow for BTreeMap<String, Library> {
    fn clone_shallow(&self) -> Self {
        self.iter()
            .map(|(name, lib)| {
                (name.clone(), Library { code: lib.code.clone(), functions: lib.functions.clone() })
            })
            .collect()
    }
}

/// FUNCTION STATS: the running function (if any) and the engine's counts.
pub(super) fn stats(ctx: &mut Ctx<'_>) {
    let engine = &ctx.shared.redis.scripts;
    let running = engine.running.active.load(Relaxed) && engine.running.function.load(Relaxed);
    let current = running.then(|| engine.running.current.lock().clone()).flatten();
    let elapsed_ms = engine.now_ms().saturating_sub(engine.running.started_ms.load(Relaxed));
    let (libraries, functions) =
        (engine.libraries.load(Relaxed) as i64, engine.functions.load(Relaxed) as i64);
    let mut reply = ctx.reply();
    reply.map(2);
    reply.bulk(b"running_script");
    match current {
        Some((name, command)) => {
            reply.map(3);
            reply.bulk(b"name");
            reply.bulk(name.as_bytes());
            reply.bulk(b"command");
            reply.array(command.len());
            for arg in &command {
                reply.bulk(arg);
            }
            reply.bulk(b"duration_ms");
            reply.integer(elapsed_ms as i64);
        }
        None => reply.null(),
    }
    reply.bulk(b"engines");
    reply.map(1);
    reply.bulk(b"LUA");
    reply.map(2);
    reply.bulk(b"libraries_count");
    reply.integer(libraries);
    reply.bulk(b"functions_count");
    reply.integer(functions);
}
