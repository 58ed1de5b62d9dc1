//! A RESP reply pushed onto the Lua stack as Redis converts it, read in place (no parsed
//! tree, no allocation in Rust):
//!
//! | RESP                     | Lua                                           |
//! |--------------------------|-----------------------------------------------|
//! | integer                  | number                                        |
//! | bulk string              | string                                        |
//! | RESP2 null (bulk, array) | false                                         |
//! | array, push              | table (a sequence)                            |
//! | status                   | `{ok = text}`                                 |
//! | error (nested)           | `{err = text}`                                |
//! | RESP3 null               | nil                                           |
//! | RESP3 boolean            | true / false                                  |
//! | RESP3 double             | `{double = number}`                           |
//! | RESP3 big number         | `{big_number = text}`                         |
//! | RESP3 map                | `{map = {k = v}}` (a nil key is left out)     |
//! | RESP3 set                | `{set = {member = true}}`                     |
//! | RESP3 verbatim string    | `{verbatim_string = {format =, string =}}`    |
//! | RESP3 attribute          | the value it annotates                        |
//!
//! Every function here may raise a Lua error (an allocation past the memory limit, a NaN
//! table key) and so keeps nothing with a destructor in its frame.

use std::ffi::{c_int, CStr};

use mlua::ffi;

/// Deepest nesting converted (as exec's conversions).
const DEPTH_MAX: usize = 128;

/// The error text for a reply this reader cannot convert (too deep, malformed).
pub(crate) const UNREADABLE: &[u8] = b"ERR reply could not be converted for Lua";

#[derive(Clone, Copy)]
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// The bytes up to the next CRLF; moves past it.
    fn line(&mut self) -> Option<&'a [u8]> {
        let rest = self.buf.get(self.pos..)?;
        let cr = rest.iter().position(|&b| b == b'\r')?;
        if rest.get(cr + 1) != Some(&b'\n') {
            return None;
        }
        self.pos += cr + 2;
        Some(&rest[..cr])
    }

    /// A length-prefixed payload and its CRLF.
    fn blob(&mut self, len_text: &[u8]) -> Option<&'a [u8]> {
        let len = length(len_text)?;
        let rest = self.buf.get(self.pos..)?;
        if rest.len() < len.checked_add(2)? || &rest[len..len + 2] != b"\r\n" {
            return None;
        }
        self.pos += len + 2;
        Some(&rest[..len])
    }

    /// The type byte and its line.
    fn head(&mut self) -> Option<(u8, &'a [u8])> {
        let kind = *self.buf.get(self.pos)?;
        self.pos += 1;
        Some((kind, self.line()?))
    }

    fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }
}

fn int(text: &[u8]) -> Option<i64> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

fn length(text: &[u8]) -> Option<usize> {
    usize::try_from(int(text)?).ok()
}

/// The text of a reply that is an error at its top (`-text` or `!len text`).
pub(crate) fn top_error(bytes: &[u8]) -> Option<&[u8]> {
    let mut reader = Reader { buf: bytes, pos: 0 };
    match reader.head()? {
        (b'-', text) => Some(text),
        (b'!', len) => reader.blob(len),
        _ => None,
    }
}

/// Pushes the reply at the front of `bytes` (one value); false (with whatever was pushed
/// left for the caller to drop) when it is malformed or nested past [`DEPTH_MAX`].
///
/// # Safety
/// `state` is valid and running a C function.
pub(crate) unsafe fn push(state: *mut ffi::lua_State, bytes: &[u8]) -> bool {
    let mut reader = Reader { buf: bytes, pos: 0 };
    // SAFETY: per this function's contract.
    unsafe { push_value(state, &mut reader, 0) }
}

/// # Safety
/// As [`push`].
unsafe fn push_value(state: *mut ffi::lua_State, r: &mut Reader<'_>, depth: usize) -> bool {
    // SAFETY: for all Lua calls below, `state` is valid and `lua_checkstack` made room for
    // the few values each level pushes; strings are pushed from readable slices.
    unsafe {
        if depth > DEPTH_MAX || ffi::lua_checkstack(state, 4) == 0 {
            return false;
        }
        let Some((kind, line)) = r.head() else { return false };
        match kind {
            b':' => match int(line) {
                Some(n) => ffi::lua_pushnumber(state, n as f64),
                None => return false,
            },
            b'$' | b'*' if line == b"-1" => ffi::lua_pushboolean(state, 0),
            b'$' => match r.blob(line) {
                Some(bytes) => push_bytes(state, bytes),
                None => return false,
            },
            b'+' => tagged(state, c"ok", |state| push_bytes(state, line)),
            b'-' => tagged(state, c"err", |state| push_bytes(state, line)),
            b'!' => match r.blob(line) {
                Some(text) => tagged(state, c"err", |state| push_bytes(state, text)),
                None => return false,
            },
            b'_' if line.is_empty() => ffi::lua_pushnil(state),
            b'#' if line == b"t" || line == b"f" => {
                ffi::lua_pushboolean(state, c_int::from(line == b"t"))
            }
            b',' => match std::str::from_utf8(line).ok().and_then(|s| s.parse::<f64>().ok()) {
                Some(d) => tagged(state, c"double", |state| ffi::lua_pushnumber(state, d)),
                None => return false,
            },
            b'(' => tagged(state, c"big_number", |state| push_bytes(state, line)),
            b'=' => match r.blob(line) {
                Some(data) if data.len() >= 4 && data[3] == b':' => {
                    tagged(state, c"verbatim_string", |state| {
                        ffi::lua_createtable(state, 0, 2);
                        push_bytes(state, &data[..3]);
                        ffi::lua_rawsetfield(state, -2, c"format".as_ptr());
                        push_bytes(state, &data[4..]);
                        ffi::lua_rawsetfield(state, -2, c"string".as_ptr());
                    })
                }
                _ => return false,
            },
            b'*' | b'>' => return push_array(state, r, line, depth),
            b'%' | b'~' => return push_keyed(state, r, kind, line, depth),
            b'|' => {
                let Some(count) = length(line) else { return false };
                for _ in 0..count.saturating_mul(2) {
                    if !skip(r, depth + 1) {
                        return false;
                    }
                }
                return push_value(state, r, depth);
            }
            _ => return false,
        }
        true
    }
}

/// # Safety
/// `state` is valid with room for one value.
unsafe fn push_bytes(state: *mut ffi::lua_State, bytes: &[u8]) {
    // SAFETY: per this function's contract; `bytes` is readable.
    unsafe { ffi::lua_pushlstring_(state, bytes.as_ptr().cast(), bytes.len()) }
}

/// Pushes `{name = inner}`, `inner` being what `push_inner` pushes.
///
/// # Safety
/// `state` is valid with room for the table and what `push_inner` pushes.
unsafe fn tagged(
    state: *mut ffi::lua_State,
    name: &CStr,
    push_inner: impl FnOnce(*mut ffi::lua_State),
) {
    // SAFETY: per this function's contract.
    unsafe {
        ffi::lua_createtable(state, 0, 1);
        push_inner(state);
        ffi::lua_rawsetfield(state, -2, name.as_ptr());
    }
}

/// A table size hint: the count, bounded by what the rest of the reply can hold (every
/// element takes 3 bytes at least).
fn size_hint(count: usize, r: &Reader<'_>) -> c_int {
    c_int::try_from(count.min(r.remaining() / 3)).unwrap_or(c_int::MAX)
}

/// # Safety
/// As [`push`].
unsafe fn push_array(
    state: *mut ffi::lua_State,
    r: &mut Reader<'_>,
    line: &[u8],
    depth: usize,
) -> bool {
    let Some(count) = length(line) else { return false };
    let Ok(last) = c_int::try_from(count) else { return false };
    // SAFETY: `state` is valid with room (checked by the caller); the table stays at -2
    // while each element is pushed above it.
    unsafe {
        ffi::lua_createtable(state, size_hint(count, r), 0);
        for at in 1..=last {
            if !push_value(state, r, depth + 1) {
                return false;
            }
            ffi::lua_rawseti_(state, -2, at);
        }
    }
    true
}

/// A map (`%`, as `{map = {k = v}}`) or a set (`~`, as `{set = {member = true}}`).
///
/// # Safety
/// As [`push`].
unsafe fn push_keyed(
    state: *mut ffi::lua_State,
    r: &mut Reader<'_>,
    kind: u8,
    line: &[u8],
    depth: usize,
) -> bool {
    let Some(count) = length(line) else { return false };
    let map = kind == b'%';
    // SAFETY: `state` is valid with room (checked by the caller and by each level); the
    // inner table stays at -3 (map) or -3 (set, once `true` is pushed) while its entries
    // are set.
    unsafe {
        ffi::lua_createtable(state, 0, 1);
        ffi::lua_createtable(state, 0, size_hint(count, r));
        for _ in 0..count {
            if !push_value(state, r, depth + 1) {
                return false;
            }
            if map && !push_value(state, r, depth + 1) {
                return false;
            }
            if !map {
                ffi::lua_pushboolean(state, 1);
            }
            if ffi::lua_type(state, -2) == ffi::LUA_TNIL {
                ffi::lua_settop(state, -3);
            } else {
                ffi::lua_rawset(state, -3);
            }
        }
        let name = if map { c"map" } else { c"set" };
        ffi::lua_rawsetfield(state, -2, name.as_ptr());
    }
    true
}

/// Moves past one value.
fn skip(r: &mut Reader<'_>, depth: usize) -> bool {
    if depth > DEPTH_MAX {
        return false;
    }
    let Some((kind, line)) = r.head() else { return false };
    let items = match kind {
        b'$' | b'*' if line == b"-1" => 0,
        b'$' | b'!' | b'=' => return r.blob(line).is_some(),
        b'*' | b'>' | b'~' => match length(line) {
            Some(count) => count,
            None => return false,
        },
        b'%' | b'|' => match length(line).and_then(|count| count.checked_mul(2)) {
            Some(count) => count,
            None => return false,
        },
        _ => 0,
    };
    for _ in 0..items {
        if !skip(r, depth + 1) {
            return false;
        }
    }
    kind != b'|' || skip(r, depth)
}
