//! `redis.call`, `redis.pcall` and `redis.acl_check_cmd` as raw Lua C functions: their
//! arguments are read straight off the Lua stack into [`Args`], a [`Host`] (exec's script
//! engine) runs the command, and its RESP reply is pushed straight onto the Lua stack as
//! Redis converts it (see `reply.rs`). Through mlua's callbacks the same call took about
//! 30k instructions of protected calls, `Value` conversions and registry traffic
//! (docs/ARCHITECTURE.md, "Why luacall has unsafe code", gives the measurement).
//!
//! Soundness, in short (the long form is in docs/ARCHITECTURE.md):
//! - A Lua error is a C++ exception in Luau (built without `LUA_USE_LONGJMP`): it unwinds
//!   the frames it crosses. Every Lua API call that may raise (anything that allocates:
//!   pushing a string or a table, growing the stack, setting a field) happens only after
//!   the host's work is done, in frames that own nothing with a destructor: raw pointers,
//!   slices into buffers owned elsewhere, integers. The Rust frames are
//!   `extern "C-unwind"` or Rust-ABI, both of which a foreign unwind may cross.
//! - A panic in the host never reaches Lua: it is caught where the host is called and
//!   becomes an error reply.
//! - The host is reachable only while [`with_host`] runs, from the thread that runs it,
//!   and not from inside its own call (a nested call is refused).
//! - Reading arguments allocates nothing in Lua: strings are read in place
//!   (`lua_tolstring` on a string never converts), numbers are formatted by the host.

mod interrupt;
mod reply;

pub use interrupt::{interrupt_soon, throttle_interrupt};

use std::{cell::Cell, ffi::c_int, panic::AssertUnwindSafe, ptr};

use mlua::{ffi, Function, Lua, Table};

/// Which function the script called.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// `redis.call`: an error reply is raised (by the Lua wrapper).
    Call,
    /// `redis.pcall`: an error reply is returned as `{err = text}` (by the Lua wrapper).
    Pcall,
    /// `redis.acl_check_cmd`: a boolean.
    AclCheck,
}

/// What the host answers to one call.
#[derive(Debug)]
pub enum Answer<'a> {
    /// One RESP reply (RESP2 or RESP3), converted to Lua as Redis does; an error reply at
    /// the top is given to the wrapper as an error text.
    Reply(&'a [u8]),
    /// An error text for the wrapper to raise (`redis.call`) or return (`redis.pcall`).
    Error(&'a [u8]),
    Bool(bool),
}

/// Runs the commands of the script running on this thread.
pub trait Host {
    /// Runs `args` (never empty of arguments of the wrong type: see [`Args::well_typed`]).
    fn call(&mut self, entry: Entry, args: &Args) -> Answer<'_>;
    /// Appends a Lua number argument as the command's text.
    fn number(&self, n: f64, out: &mut Vec<u8>);
}

/// A call's arguments, copied from the Lua stack (the command name first).
#[derive(Debug, Default)]
pub struct Args {
    bytes: Vec<u8>,
    ends: Vec<usize>,
    /// An argument was neither a string nor a number.
    bad: bool,
}

impl Args {
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// False when an argument was neither a string nor a number (Redis refuses the call).
    pub fn well_typed(&self) -> bool {
        !self.bad
    }

    /// The arguments one after the other, and where each ends.
    pub fn joined(&self) -> (&[u8], &[usize]) {
        (&self.bytes, &self.ends)
    }

    pub fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let starts = std::iter::once(0).chain(self.ends.iter().copied());
        starts.zip(self.ends.iter().copied()).map(|(start, end)| &self.bytes[start..end])
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
        self.bad = false;
    }
}

/// The running script's host and the argument buffer, while [`with_host`] runs.
struct Slot {
    host: *mut (dyn Host + 'static),
    args: Args,
}

thread_local! {
    /// The slot of the script running on this thread; null outside [`with_host`] and
    /// during the host's own call.
    static SLOT: Cell<*mut Slot> = const { Cell::new(ptr::null_mut()) };
    /// The argument buffer between runs (kept for its capacity).
    static SPARE: Cell<Option<Args>> = const { Cell::new(None) };
}

/// Runs `body` (which resumes a script) with `host` answering the script's calls on this
/// thread.
pub fn with_host<R>(host: &mut dyn Host, body: impl FnOnce() -> R) -> R {
    let host: *mut (dyn Host + '_) = host;
    // SAFETY: only the lifetime is erased. The pointer is reachable through SLOT only until
    // `Restore` drops at the end of this function, while `host` is still borrowed.
    let host =
        unsafe { std::mem::transmute::<*mut (dyn Host + '_), *mut (dyn Host + 'static)>(host) };
    let mut owned = Slot { host, args: SPARE.take().unwrap_or_default() };
    // From here on the slot is reached only through this pointer (here and in `entry`).
    let slot: *mut Slot = &mut owned;
    struct Restore {
        previous: *mut Slot,
        slot: *mut Slot,
    }
    impl Drop for Restore {
        fn drop(&mut self) {
            SLOT.set(self.previous);
            // SAFETY: the slot outlives this guard (declared before it); no call is under
            // way (the body has returned or is unwinding), so nothing else uses it.
            let args = unsafe { std::mem::take(&mut (*self.slot).args) };
            SPARE.set(Some(args));
        }
    }
    let previous = SLOT.replace(slot);
    let _restore = Restore { previous, slot };
    body()
}

/// `(call, pcall, acl_check)`: the raw functions behind `redis.call`, `redis.pcall` and
/// `redis.acl_check_cmd`. Each returns `true, value` or `false, error text`; the Lua
/// wrappers raise or return the error.
pub fn functions(lua: &Lua) -> mlua::Result<(Function, Function, Function)> {
    // SAFETY: the three functions follow the C function protocol: they read their
    // arguments by index, push their results and return how many (see `entry`).
    unsafe {
        Ok((
            lua.create_c_function(call_entry)?,
            lua.create_c_function(pcall_entry)?,
            lua.create_c_function(acl_entry)?,
        ))
    }
}

unsafe extern "C-unwind" fn call_entry(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this with a valid state.
    unsafe { entry(state, Entry::Call) }
}

unsafe extern "C-unwind" fn pcall_entry(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this with a valid state.
    unsafe { entry(state, Entry::Pcall) }
}

unsafe extern "C-unwind" fn acl_entry(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: Lua calls this with a valid state.
    unsafe { entry(state, Entry::AclCheck) }
}

/// What the host answered, as plain data (nothing to drop while it is pushed).
#[derive(Clone, Copy)]
enum Raw {
    Reply(*const u8, usize),
    Error(*const u8, usize),
    Bool(bool),
}

const NO_SCRIPT: &[u8] = b"ERR redis.call is only available while a script runs";
const INTERNAL: &[u8] = b"ERR internal error (the script engine was reset)";

/// The body of the three C functions. Nothing in this frame has a destructor, so a Lua
/// error raised while pushing the answer may unwind through it.
///
/// # Safety
/// `state` is the running Lua state, called as a C function.
unsafe fn entry(state: *mut ffi::lua_State, which: Entry) -> c_int {
    let slot = SLOT.replace(ptr::null_mut());
    if slot.is_null() {
        // SAFETY: `state` is valid; pushing a static error text.
        unsafe { push_answer(state, Raw::Error(NO_SCRIPT.as_ptr(), NO_SCRIPT.len())) };
        return 2;
    }
    // SAFETY: `slot` is the live slot of `with_host` on this thread (set there, restored
    // below before anything may raise); taken out of SLOT so no nested call reaches it.
    let raw = unsafe { dispatch(state, slot, which) };
    SLOT.set(slot);
    // SAFETY: the answer's bytes live in the host's buffers, untouched until its next
    // call; pushing may raise (past the state's memory limit), and nothing here needs
    // dropping.
    unsafe { push_answer(state, raw) };
    2
}

/// Reads the arguments and asks the host; a panic in the host becomes an error answer.
///
/// # Safety
/// `slot` points to a live [`Slot`] no one else uses for the duration.
unsafe fn dispatch(state: *mut ffi::lua_State, slot: *mut Slot, which: Entry) -> Raw {
    // SAFETY: per this function's contract.
    let slot = unsafe { &mut *slot };
    // SAFETY: the host outlives `with_host`'s body, which is running.
    let host = unsafe { &mut *slot.host };
    let args = &mut slot.args;
    // SAFETY: `state` is valid, as given to the C function.
    unsafe { read_args(state, &*host, args) };
    let answered = std::panic::catch_unwind(AssertUnwindSafe(|| match host.call(which, args) {
        Answer::Reply(bytes) => Raw::Reply(bytes.as_ptr(), bytes.len()),
        Answer::Error(text) => Raw::Error(text.as_ptr(), text.len()),
        Answer::Bool(b) => Raw::Bool(b),
    }));
    answered.unwrap_or(Raw::Error(INTERNAL.as_ptr(), INTERNAL.len()))
}

/// Copies the C function's arguments into `args`. Allocates nothing in Lua.
///
/// # Safety
/// `state` is valid and running a C function.
unsafe fn read_args(state: *mut ffi::lua_State, host: &dyn Host, args: &mut Args) {
    args.clear();
    // SAFETY: `state` is valid and every index is within 1..=top; a string is read in
    // place (no conversion, no allocation) and Lua gives `len` readable bytes at `at`,
    // alive while the string is on the stack (it is, as an argument).
    unsafe {
        let top = ffi::lua_gettop(state);
        for index in 1..=top {
            match ffi::lua_type(state, index) {
                ffi::LUA_TSTRING => {
                    let mut len = 0usize;
                    let at = ffi::lua_tolstring(state, index, &mut len);
                    if !at.is_null() {
                        args.bytes.extend_from_slice(std::slice::from_raw_parts(at.cast(), len));
                    }
                }
                ffi::LUA_TNUMBER => {
                    host.number(ffi::lua_tonumberx(state, index, ptr::null_mut()), &mut args.bytes)
                }
                ffi::LUA_TINTEGER => {
                    let n = ffi::lua_tointeger64(state, index, ptr::null_mut());
                    args.bytes.extend_from_slice(n.to_string().as_bytes());
                }
                _ => args.bad = true,
            }
            args.ends.push(args.bytes.len());
        }
    }
}

/// Pushes `ok, value` (or `false, text`).
///
/// # Safety
/// `state` is valid; the answer's bytes are readable. May raise a Lua error (out of
/// memory, a NaN map key): nothing in this frame or below needs dropping.
unsafe fn push_answer(state: *mut ffi::lua_State, raw: Raw) {
    // SAFETY: for all calls below, `state` is valid, the stack has room for the two values
    // (LUA_MINSTACK slots are guaranteed to a C function), bytes are readable.
    unsafe {
        match raw {
            Raw::Bool(b) => {
                ffi::lua_pushboolean(state, 1);
                ffi::lua_pushboolean(state, c_int::from(b));
            }
            Raw::Error(at, len) => {
                ffi::lua_pushboolean(state, 0);
                ffi::lua_pushlstring_(state, at.cast(), len);
            }
            Raw::Reply(at, len) => {
                let bytes = std::slice::from_raw_parts(at, len);
                if let Some(text) = reply::top_error(bytes) {
                    ffi::lua_pushboolean(state, 0);
                    ffi::lua_pushlstring_(state, text.as_ptr().cast(), text.len());
                    return;
                }
                let base = ffi::lua_gettop(state);
                ffi::lua_pushboolean(state, 1);
                if !reply::push(state, bytes) {
                    ffi::lua_settop(state, base);
                    let text = reply::UNREADABLE;
                    ffi::lua_pushboolean(state, 0);
                    ffi::lua_pushlstring_(state, text.as_ptr().cast(), text.len());
                }
            }
        }
    }
}

/// Two new sequences of Lua strings, `keys` and `args` (a script's KEYS and ARGV, or a
/// function's two arguments), made in one protected call through the raw API (through
/// mlua's values, each string and table was a registry reference of its own: about 7k
/// instructions for a 5-command script's four). A memory error comes back as `Err`.
pub fn sequences(lua: &Lua, keys: &[&[u8]], args: &[&[u8]]) -> mlua::Result<(Table, Table)> {
    // SAFETY: `exec_raw` runs the closure as a C function inside a protected call, which
    // catches a Lua error raised by an allocation; the closure holds only slices (nothing
    // to drop if one unwinds it) and leaves the two tables as its results.
    unsafe {
        lua.exec_raw((), |state| {
            if ffi::lua_checkstack(state, 3) != 0 {
                push_sequence(state, keys);
                push_sequence(state, args);
            }
        })
    }
}

/// A script's KEYS and ARGV: two new sequences of Lua strings set in `globals` (which
/// are read-only: the flag is lifted for the two raw sets only, and the table's `safeenv`
/// flag is left as it is, where mlua's `Table::set_readonly(false)` clears it), in one
/// protected call. A memory error comes back as `Err`, with the globals read-only.
pub fn set_script_sequences(
    lua: &Lua,
    globals: &Table,
    keys: &[&[u8]],
    args: &[&[u8]],
) -> mlua::Result<()> {
    // SAFETY: as in `sequences`; `globals` is the closure's first argument (index 1), and
    // it is writable only between the two `lua_setreadonly` calls, where nothing may
    // raise: KEYS and ARGV already exist in it (set when the state was made), so each raw
    // set finds its interned key and its slot, allocating nothing.
    unsafe {
        lua.exec_raw(globals, |state| {
            if ffi::lua_checkstack(state, 3) != 0 && ffi::lua_type(state, 1) == ffi::LUA_TTABLE {
                push_sequence(state, keys);
                push_sequence(state, args);
                ffi::lua_setreadonly(state, 1, 0);
                ffi::lua_rawsetfield(state, 1, c"ARGV".as_ptr());
                ffi::lua_rawsetfield(state, 1, c"KEYS".as_ptr());
                ffi::lua_setreadonly(state, 1, 1);
            }
        })
    }
}

/// Pushes a new table holding `items` as strings at 1, 2, ...
///
/// # Safety
/// `state` is valid, inside a protected call, with room for two values.
unsafe fn push_sequence(state: *mut ffi::lua_State, items: &[&[u8]]) {
    let hint = c_int::try_from(items.len()).unwrap_or(c_int::MAX);
    // SAFETY: per this function's contract; every item is a readable slice.
    unsafe {
        ffi::lua_createtable(state, hint, 0);
        for (at, item) in (1..=c_int::MAX).zip(items) {
            ffi::lua_pushlstring_(state, item.as_ptr().cast(), item.len());
            ffi::lua_rawseti_(state, -2, at);
        }
    }
}
