//! What makes a Lua state safe to share between users: the Lua 5.1 globals Luau lacks,
//! written so they cannot load bytecode, and read-only tables everywhere a script could
//! leave something behind for the next script (of any user) to run.
//!
//! Why Luau (through `mlua`) rather than PUC Lua 5.1: Luau was built to run untrusted
//! code. Its tables carry a read-only flag that the VM checks on every write path
//! (`rawset`, `table.insert`, `setmetatable` included), it has no bytecode loader
//! reachable from a script and no `string.dump`, its C-stack, call-depth and
//! `unpack` limits turn runaway recursion into errors, and its interrupt callback stops
//! loops without a per-instruction hook. PUC Lua 5.1.5 needs every one of those as a
//! patch to its C sources (Redis carries them: CVE-2015-4335, CVE-2024-46981,
//! CVE-2025-46817/46818/46819, CVE-2025-49844), and a patch we write ourselves is a patch
//! nobody else fuzzes. Scripts keep Lua 5.1's language (Luau is a superset of its syntax,
//! numbers are doubles, strings are bytes); where Luau differs, this module fills in what
//! Redis scripts use (`loadstring`, `collectgarbage`, `_VERSION`).

use mlua::{Lua, Table, Value};

/// The `_VERSION` scripts see (Redis embeds Lua 5.1).
const LUA_VERSION: &str = "Lua 5.1";

/// Adds the Lua 5.1 globals that Luau does not have, and drops Luau's binary
/// `string.pack`/`unpack` (Redis scripts have `struct` for that).
pub(super) fn lua51_globals(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    globals.raw_set("_VERSION", LUA_VERSION)?;
    globals.raw_set("loadstring", lua.create_function(loadstring)?)?;
    globals.raw_set("collectgarbage", lua.create_function(collectgarbage)?)?;
    let string: Table = globals.raw_get("string")?;
    for name in ["pack", "packsize", "unpack"] {
        string.raw_remove(name)?;
    }
    Ok(())
}

/// `loadstring(code [, chunkname])`: Lua source only. A chunk that opens with a bytecode
/// signature, Lua 5.1's (`\27Lua`) or Luau's, is refused as Redis refuses it.
fn loadstring(
    lua: &Lua,
    (code, name): (mlua::LuaString, Option<String>),
) -> mlua::Result<(Value, Value)> {
    let code = code.as_bytes();
    if code.first() == Some(&0x1b) {
        let message = lua.create_string("bytecode loading is not allowed")?;
        return Ok((Value::Nil, Value::String(message)));
    }
    let name = name.unwrap_or_else(|| String::from_utf8_lossy(&code).into_owned());
    match super::vm::compile_text(lua, &code, &name) {
        Ok(function) => Ok((Value::Function(function), Value::Nil)),
        Err(error) => {
            let message = super::eval::syntax_message(&error);
            Ok((Value::Nil, Value::String(lua.create_string(message)?)))
        }
    }
}

/// `collectgarbage([opt])`: "count" gives the state's memory in KiB, as Lua 5.1 does;
/// every other option runs a full collection (a script cannot stop the collector that
/// every other script relies on).
fn collectgarbage(lua: &Lua, option: Option<String>) -> mlua::Result<f64> {
    if option.as_deref() == Some("count") {
        return Ok(lua.used_memory() as f64 / 1024.0);
    }
    lua.gc_collect()?;
    Ok(0.0)
}

/// Makes `tables`, every table the globals hold (the libraries, one level deep, but not
/// KEYS and ARGV, which each run replaces), and the string metatable read-only.
pub(super) fn freeze(lua: &Lua, backing: &Table, tables: &[&Table]) -> mlua::Result<()> {
    for table in tables {
        table.set_readonly(true);
    }
    for pair in backing.pairs::<Value, Value>() {
        let (key, value) = pair?;
        let per_run = matches!(&key, Value::String(s) if s == "KEYS" || s == "ARGV");
        if let (Value::Table(library), false) = (value, per_run) {
            freeze_library(&library)?;
        }
    }
    let string_meta: Table = lua
        .load("return getmetatable('')")
        .set_name(super::vm::INTERNAL_CHUNK)
        .set_mode(mlua::chunk::ChunkMode::Text)
        .call(())?;
    string_meta.set_readonly(true);
    Ok(())
}

fn freeze_library(library: &Table) -> mlua::Result<()> {
    library.set_readonly(true);
    if let Some(meta) = library.metatable() {
        meta.set_readonly(true);
    }
    for pair in library.pairs::<Value, Value>() {
        if let (_, Value::Table(inner)) = pair? {
            inner.set_readonly(true);
        }
    }
    Ok(())
}

/// Sets `key` in a read-only `table` from Rust (KEYS and ARGV in the globals, `call` and
/// `pcall` in `redis` for one run), leaving it read-only again.
pub(super) fn set_frozen(table: &Table, key: &str, value: Value) -> mlua::Result<()> {
    table.set_readonly(false);
    let outcome = table.raw_set(key, value);
    table.set_readonly(true);
    outcome
}

/// Every function Luau's compiler may call as a builtin (`Compiler/src/Builtins.cpp`),
/// and the names its bytecode iterates or protects with fast paths. In a safe environment
/// (`safeenv`, see [`safe_compiler`]) such a call runs Luau's own implementation without
/// looking the name up.
const BUILTINS: &str = "assert type typeof rawset rawget rawequal rawlen unpack select \
getmetatable setmetatable tonumber tostring pairs ipairs next pcall xpcall \
math.abs math.acos math.asin math.atan2 math.atan math.ceil math.cosh math.cos math.deg \
math.exp math.floor math.fmod math.frexp math.ldexp math.log10 math.log math.max math.min \
math.modf math.pow math.rad math.sinh math.sin math.sqrt math.tanh math.tan math.clamp \
math.sign math.round math.lerp math.isnan math.isinf math.isfinite bit32.arshift bit32.band \
bit32.bnot bit32.bor bit32.bxor bit32.btest bit32.extract bit32.lrotate bit32.lshift \
bit32.replace bit32.rrotate bit32.rshift bit32.countlz bit32.countrz bit32.byteswap \
string.byte string.char string.len string.sub table.insert table.unpack buffer.readi8 \
buffer.readu8 buffer.writei8 buffer.writeu8 buffer.readi16 buffer.readu16 buffer.writei16 \
buffer.writeu16 buffer.readi32 buffer.readu32 buffer.writei32 buffer.writeu32 buffer.readf32 \
buffer.writef32 buffer.readf64 buffer.writef64 buffer.readinteger buffer.writeinteger \
vector.create vector.magnitude vector.normalize vector.cross vector.dot vector.floor \
vector.ceil vector.abs vector.sign vector.clamp vector.min vector.max vector.lerp integer.add \
integer.sub integer.mod integer.mul integer.div integer.idiv integer.udiv integer.rem \
integer.urem integer.min integer.max integer.neg integer.create integer.clamp integer.band \
integer.bor integer.bxor integer.bnot integer.btest integer.bswap integer.lt integer.le \
integer.ult integer.ule integer.gt integer.ge integer.ugt integer.uge integer.lshift \
integer.rshift integer.arshift integer.lrotate integer.rrotate integer.countrz \
integer.countlz integer.extract integer.tonumber";

/// The globals a script may not take as constants: each run sets them anew.
const PER_RUN: [&str; 2] = ["KEYS", "ARGV"];

/// Runs `load` (which compiles and loads a chunk) with KEYS and ARGV missing from the
/// globals. In a safe environment Luau resolves a chunk's global names when it loads it
/// and keeps what it found as constants (`GETIMPORT`); a name it did not find is looked
/// up at each use. KEYS and ARGV change with every run, so they must not be found. The
/// caller has stopped the collector (the two keys keep their slots in the table).
pub(super) fn without_per_run<R>(lua: &Lua, load: impl FnOnce() -> R) -> R {
    let globals = lua.globals();
    if !globals.is_readonly() {
        return load(); // still being set up
    }
    let kept: Vec<Value> =
        PER_RUN.iter().map(|name| globals.raw_get(*name).unwrap_or_default()).collect();
    globals.set_readonly(false);
    for name in PER_RUN {
        let _ = globals.raw_set(name, Value::Nil);
    }
    globals.set_readonly(true);
    globals.set_safeenv(true);
    let loaded = load();
    globals.set_readonly(false);
    for (name, value) in PER_RUN.iter().zip(kept) {
        let _ = globals.raw_set(*name, value);
    }
    globals.set_readonly(true);
    globals.set_safeenv(true);
    loaded
}

/// What each builtin name ([`BUILTINS`]) holds in `globals` now (a pointer; 0 where it is
/// missing), to compare before and after the sandbox changes them.
pub(super) fn builtins_now(globals: &Table) -> Vec<(&'static str, usize)> {
    let mut found = Vec::new();
    for name in BUILTINS.split_whitespace() {
        let value = match name.split_once('.') {
            None => globals.raw_get::<Value>(name).ok(),
            Some((library, field)) => match globals.raw_get::<Value>(library) {
                Ok(Value::Table(library)) => library.raw_get::<Value>(field).ok(),
                _ => None,
            },
        };
        let at = match value {
            Some(Value::Function(f)) => f.to_pointer() as usize,
            _ => 0,
        };
        found.push((name, at));
    }
    found
}

/// The compiler for scripts, whose globals table is a safe environment (read-only, so
/// Luau may resolve `redis.call` and the libraries once, when the script loads, and call
/// its builtins directly; KEYS and ARGV are hidden while it loads: [`without_per_run`]);
/// a builtin the sandbox removed or replaced is not called as a builtin (a script's
/// `bit32.band` or `typeof` must raise for a missing global, as in Redis). `before` and
/// `after` are [`builtins_now`] before and after the sandbox.
pub(super) fn safe_compiler(
    before: &[(&'static str, usize)],
    after: &[(&'static str, usize)],
) -> mlua::chunk::Compiler {
    let changed = before.iter().zip(after).filter(|((_, was), (_, now))| was != now || *now == 0);
    let disabled: Vec<&str> = changed.map(|((name, _), _)| *name).collect();
    // pcall and xpcall have no builtin number: disabling is done by making them mutable.
    let (iterators, disabled): (Vec<&str>, Vec<&str>) = disabled
        .into_iter()
        .partition(|name| matches!(*name, "pairs" | "ipairs" | "next" | "pcall" | "xpcall"));
    debug_assert!(iterators.is_empty(), "the sandbox changed {iterators:?}");
    mlua::chunk::Compiler::new().set_mutable_globals(iterators).set_disabled_builtins(disabled)
}
