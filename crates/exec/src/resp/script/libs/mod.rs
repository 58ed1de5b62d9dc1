//! The libraries Redis loads for scripts, written in Rust as Lua modules: `bit` (LuaBitOp),
//! `cjson` (lua-cjson), `cmsgpack` (lua-cmsgpack) and `struct` (Roberto Ierusalimschy's
//! struct library). Each matches the C module's behaviour for the calls scripts make;
//! where a corner differs, its file says so.

use mlua::{Lua, Table};

mod bit;
mod cjson;
mod cmsgpack;
mod structlib;

/// Sets `bit`, `cjson`, `cmsgpack` and `struct` in `globals`.
pub(super) fn register(lua: &Lua, globals: &Table) -> mlua::Result<()> {
    globals.raw_set("bit", bit::module(lua)?)?;
    globals.raw_set("cjson", cjson::module(lua)?)?;
    globals.raw_set("cmsgpack", cmsgpack::module(lua)?)?;
    globals.raw_set("struct", structlib::module(lua)?)?;
    Ok(())
}

/// A runtime error with the text a C module would raise.
pub(super) fn fail<T>(message: impl Into<String>) -> mlua::Result<T> {
    Err(mlua::Error::runtime(message.into()))
}
