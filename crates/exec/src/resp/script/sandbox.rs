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
