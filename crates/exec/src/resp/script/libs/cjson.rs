//! `cjson`: lua-cjson's `encode` and `decode` with its default settings, as Redis loads it.
//!
//! Encoding: numbers as `%.14g`; strings escaped as lua-cjson escapes them (`/` too); a
//! table whose keys are all positive integers is an array (nil holes become `null`;
//! an excessively sparse one is refused, as lua-cjson's default ratio 2 and safe
//! length 10 say), an empty table `{}`, any other an object whose number keys become
//! strings; `cjson.null` is `null`. Decoding gives tables, numbers, strings, booleans
//! and `cjson.null` (a light userdata, as in lua-cjson). Objects are written in Lua's
//! iteration order, so key order may differ from Redis's for tables of several keys.
//! Settings kept per Lua state, as lua-cjson keeps them in its module: `encode_max_depth`,
//! `decode_max_depth` (each at most [`DEPTH_MAX`]: the decoder and encoder recurse, so a
//! deeper setting is kept and reported but not honoured) and `encode_invalid_numbers`
//! (`true`: NaN and infinities as `nan`/`inf`/`-inf`; `"null"`: as `null`); the other
//! configuration calls are accepted and change nothing.

use std::sync::{
    atomic::{AtomicU8, AtomicUsize, Ordering::Relaxed},
    Arc,
};

use mlua::{LightUserData, Lua, Table, Value, Variadic};

use super::fail;
use crate::resp::script::convert::format_g14;

/// Deepest nesting encoded or decoded (lua-cjson's default 1000).
const DEPTH_MAX: usize = 1000;

fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

/// The module's settings (`encode_max_depth` and kin).
#[derive(Debug)]
struct Settings {
    encode_max_depth: AtomicUsize,
    decode_max_depth: AtomicUsize,
    /// 0: refuse NaN and infinities; 1: write them as numbers; 2: write `null`.
    invalid_numbers: AtomicU8,
}

/// What one `encode` call follows.
#[derive(Clone, Copy)]
struct Encoding {
    max_depth: usize,
    invalid_numbers: u8,
}

pub(super) fn module(lua: &Lua) -> mlua::Result<Table> {
    let cjson = lua.create_table()?;
    let settings = Arc::new(Settings {
        encode_max_depth: AtomicUsize::new(DEPTH_MAX),
        decode_max_depth: AtomicUsize::new(DEPTH_MAX),
        invalid_numbers: AtomicU8::new(0),
    });
    let encoding = Arc::clone(&settings);
    cjson.raw_set(
        "encode",
        lua.create_function(move |lua, args: Variadic<Value>| {
            if args.len() != 1 {
                return fail("bad argument #1 to 'encode' (expected 1 argument)");
            }
            let how = Encoding {
                max_depth: encoding.encode_max_depth.load(Relaxed).min(DEPTH_MAX),
                invalid_numbers: encoding.invalid_numbers.load(Relaxed),
            };
            let mut out = Vec::new();
            encode(&args[0], &mut out, 0, how)?;
            lua.create_string(out)
        })?,
    )?;
    let decoding = Arc::clone(&settings);
    cjson.raw_set(
        "decode",
        lua.create_function(move |lua, args: Variadic<Value>| {
            let Some(Value::String(text)) = args.first() else {
                return fail("bad argument #1 to 'decode' (string expected)");
            };
            let bytes = text.as_bytes();
            let max_depth = decoding.decode_max_depth.load(Relaxed).min(DEPTH_MAX);
            let mut parser = Parser { lua, input: &bytes, pos: 0, max_depth };
            parser.skip_space();
            let value = parser.value(0)?;
            parser.skip_space();
            if parser.pos < bytes.len() {
                return parser.expected("the end");
            }
            Ok(value)
        })?,
    )?;
    cjson.raw_set("null", null())?;
    depth_setting(lua, &cjson, "encode_max_depth", &settings, |s| &s.encode_max_depth)?;
    depth_setting(lua, &cjson, "decode_max_depth", &settings, |s| &s.decode_max_depth)?;
    invalid_numbers_setting(lua, &cjson, &settings)?;
    for name in [
        "encode_keep_buffer",
        "encode_number_precision",
        "decode_invalid_numbers",
        "encode_sparse_array",
    ] {
        cjson.raw_set(name, lua.create_function(|_, args: Variadic<Value>| Ok(args))?)?;
    }
    cjson.raw_set("_NAME", "cjson")?;
    cjson.raw_set("_VERSION", "2.1.0")?;
    Ok(cjson)
}

/// `cjson.encode_max_depth([n])` or `decode_max_depth`: sets a positive depth, returns
/// the setting.
fn depth_setting(
    lua: &Lua,
    cjson: &Table,
    name: &'static str,
    settings: &Arc<Settings>,
    field: fn(&Settings) -> &AtomicUsize,
) -> mlua::Result<()> {
    let settings = Arc::clone(settings);
    let set = lua.create_function(move |_, args: Variadic<Value>| {
        let depth = match args.first() {
            None | Some(Value::Nil) => None,
            Some(Value::Integer(n)) if *n >= 1 => Some(*n as usize),
            Some(Value::Number(n)) if *n >= 1.0 && n.is_finite() => Some(*n as usize),
            Some(_) => {
                return fail(format!(
                    "bad argument #1 to '{name}' (expected integer between 1 and 2147483647)"
                ))
            }
        };
        if let Some(depth) = depth {
            field(&settings).store(depth.min(i32::MAX as usize), Relaxed);
        }
        Ok(field(&settings).load(Relaxed) as i64)
    })?;
    cjson.raw_set(name, set)
}

/// `cjson.encode_invalid_numbers([true|false|"null"])`.
fn invalid_numbers_setting(lua: &Lua, cjson: &Table, settings: &Arc<Settings>) -> mlua::Result<()> {
    let settings = Arc::clone(settings);
    let set = lua.create_function(move |lua, args: Variadic<Value>| {
        let mode = match args.first() {
            None | Some(Value::Nil) => None,
            Some(Value::Boolean(on)) => Some(u8::from(*on)),
            Some(Value::String(s)) if s.as_bytes().as_ref() == b"null" => Some(2),
            Some(Value::String(s)) if s.as_bytes().as_ref() == b"on" => Some(1),
            Some(Value::String(s)) if s.as_bytes().as_ref() == b"off" => Some(0),
            Some(_) => return fail("bad argument #1 to 'encode_invalid_numbers' (invalid option)"),
        };
        if let Some(mode) = mode {
            settings.invalid_numbers.store(mode, Relaxed);
        }
        Ok(match settings.invalid_numbers.load(Relaxed) {
            0 => Value::Boolean(false),
            1 => Value::Boolean(true),
            _ => Value::String(lua.create_string("null")?),
        })
    })?;
    cjson.raw_set("encode_invalid_numbers", set)
}

fn encode(value: &Value, out: &mut Vec<u8>, depth: usize, how: Encoding) -> mlua::Result<()> {
    match value {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(ud) if ud.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::Number(n) if !n.is_finite() => match how.invalid_numbers {
            0 => return fail("Cannot serialise number: must not be NaN or Inf"),
            1 if n.is_nan() => out.extend_from_slice(b"nan"),
            1 => out.extend_from_slice(if *n > 0.0 { b"inf" } else { b"-inf" }),
            _ => out.extend_from_slice(b"null"),
        },
        Value::Number(n) => out.extend_from_slice(format_g14(*n).as_bytes()),
        Value::String(s) => string(&s.as_bytes(), out),
        Value::Table(table) => {
            if depth >= how.max_depth {
                return fail(format!("Cannot serialise, excessive nesting ({})", depth + 1));
            }
            table_value(table, out, depth + 1, how)?;
        }
        other => {
            return fail(format!("Cannot serialise {}: type not supported", other.type_name()))
        }
    }
    Ok(())
}

fn string(bytes: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in bytes {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b if b < 0x20 || b == 0x7f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            b => out.push(b),
        }
    }
    out.push(b'"');
}

/// lua-cjson's array test: every key a positive integer; the largest is the length.
fn array_len(table: &Table) -> mlua::Result<Option<usize>> {
    let mut max = 0usize;
    let mut count = 0usize;
    for pair in table.pairs::<Value, Value>() {
        let (key, _) = pair?;
        let n = match key {
            Value::Integer(n) if n >= 1 => n as usize,
            Value::Number(n) if n >= 1.0 && n.fract() == 0.0 => n as usize,
            _ => return Ok(None),
        };
        max = max.max(n);
        count += 1;
    }
    if max > 10 && max > count * 2 {
        return fail("Cannot serialise table: excessively sparse array");
    }
    Ok(Some(max))
}

fn table_value(table: &Table, out: &mut Vec<u8>, depth: usize, how: Encoding) -> mlua::Result<()> {
    match array_len(table)? {
        Some(len) if len > 0 => {
            out.push(b'[');
            for at in 1..=len {
                if at > 1 {
                    out.push(b',');
                }
                encode(&table.raw_get::<Value>(at)?, out, depth, how)?;
            }
            out.push(b']');
        }
        _ => {
            out.push(b'{');
            let mut first = true;
            for pair in table.pairs::<Value, Value>() {
                let (key, value) = pair?;
                if !first {
                    out.push(b',');
                }
                first = false;
                match &key {
                    Value::String(s) => string(&s.as_bytes(), out),
                    Value::Integer(n) => string(n.to_string().as_bytes(), out),
                    Value::Number(n) => string(format_g14(*n).as_bytes(), out),
                    _ => {
                        return fail("Cannot serialise table: table key must be a number or string")
                    }
                }
                out.push(b':');
                encode(&value, out, depth, how)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

struct Parser<'a> {
    lua: &'a Lua,
    input: &'a [u8],
    pos: usize,
    /// `decode_max_depth`, at most [`DEPTH_MAX`].
    max_depth: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.input.get(self.pos).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn expected<T>(&self, what: &str) -> mlua::Result<T> {
        let found = match self.input.get(self.pos) {
            None => "T_END",
            Some(b'{') => "T_OBJ_BEGIN",
            Some(b'}') => "T_OBJ_END",
            Some(b'[') => "T_ARR_BEGIN",
            Some(b']') => "T_ARR_END",
            Some(b',') => "T_COMMA",
            Some(b':') => "T_COLON",
            Some(_) => "invalid token",
        };
        fail(format!("Expected {what} but found {found} at character {}", self.pos + 1))
    }

    fn value(&mut self, depth: usize) -> mlua::Result<Value> {
        if depth >= self.max_depth {
            return fail(format!(
                "Found too many nested data structures ({}) at character {}",
                depth + 1,
                self.pos + 1
            ));
        }
        match self.input.get(self.pos) {
            Some(b'{') => self.object(depth + 1),
            Some(b'[') => self.array(depth + 1),
            Some(b'"') => {
                let text = self.string()?;
                Ok(Value::String(self.lua.create_string(text)?))
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') if self.input[self.pos..].starts_with(b"true") => {
                self.pos += 4;
                Ok(Value::Boolean(true))
            }
            Some(b'f') if self.input[self.pos..].starts_with(b"false") => {
                self.pos += 5;
                Ok(Value::Boolean(false))
            }
            Some(b'n') if self.input[self.pos..].starts_with(b"null") => {
                self.pos += 4;
                Ok(null())
            }
            _ => self.expected("value"),
        }
    }

    fn number(&mut self) -> mlua::Result<Value> {
        let start = self.pos;
        while self
            .input
            .get(self.pos)
            .is_some_and(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
        {
            self.pos += 1;
        }
        let text = std::str::from_utf8(&self.input[start..self.pos]).unwrap_or("");
        match text.parse::<f64>() {
            Ok(n) => Ok(Value::Number(n)),
            Err(_) => {
                self.pos = start;
                self.expected("value")
            }
        }
    }

    fn string(&mut self) -> mlua::Result<Vec<u8>> {
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            let Some(&b) = self.input.get(self.pos) else {
                return fail(format!(
                    "Expected value but found unexpected end of string at character {}",
                    self.pos + 1
                ));
            };
            self.pos += 1;
            match b {
                b'"' => return Ok(out),
                b'\\' => {
                    let Some(&escape) = self.input.get(self.pos) else {
                        return fail(format!(
                            "Expected value but found invalid escape code at character {}",
                            self.pos
                        ));
                    };
                    self.pos += 1;
                    match escape {
                        b'"' | b'\\' | b'/' => out.push(escape),
                        b'b' => out.push(0x08),
                        b'f' => out.push(0x0c),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let code = self.unicode_escape()?;
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(code.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => {
                            return fail(format!(
                                "Expected value but found invalid escape code at character {}",
                                self.pos - 1
                            ))
                        }
                    }
                }
                b => out.push(b),
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.input.get(self.pos..self.pos + 4)?;
        let value = u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()?;
        self.pos += 4;
        Some(value)
    }

    fn unicode_escape(&mut self) -> mlua::Result<char> {
        let bad = |pos: usize| {
            fail(format!("Expected value but found invalid unicode escape code at character {pos}"))
        };
        let Some(high) = self.hex4() else { return bad(self.pos) };
        if (0xd800..0xdc00).contains(&high) {
            if self.input.get(self.pos..self.pos + 2) != Some(b"\\u") {
                return bad(self.pos);
            }
            self.pos += 2;
            let Some(low) = self.hex4() else { return bad(self.pos) };
            if !(0xdc00..0xe000).contains(&low) {
                return bad(self.pos);
            }
            let code = 0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00);
            return char::from_u32(code).map_or_else(|| bad(self.pos), Ok);
        }
        char::from_u32(high).map_or_else(|| bad(self.pos), Ok)
    }

    fn array(&mut self, depth: usize) -> mlua::Result<Value> {
        self.pos += 1;
        let table = self.lua.create_table()?;
        self.skip_space();
        if self.input.get(self.pos) == Some(&b']') {
            self.pos += 1;
            return Ok(Value::Table(table));
        }
        let mut at = 1;
        loop {
            self.skip_space();
            let value = self.value(depth)?;
            table.raw_set(at, value)?;
            at += 1;
            self.skip_space();
            match self.input.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Table(table));
                }
                _ => return self.expected("comma or array end"),
            }
        }
    }

    fn object(&mut self, depth: usize) -> mlua::Result<Value> {
        self.pos += 1;
        let table = self.lua.create_table()?;
        self.skip_space();
        if self.input.get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Ok(Value::Table(table));
        }
        loop {
            self.skip_space();
            if self.input.get(self.pos) != Some(&b'"') {
                return self.expected("object key string");
            }
            let key = self.string()?;
            self.skip_space();
            if self.input.get(self.pos) != Some(&b':') {
                return self.expected("colon");
            }
            self.pos += 1;
            self.skip_space();
            let value = self.value(depth)?;
            table.raw_set(self.lua.create_string(key)?, value)?;
            self.skip_space();
            match self.input.get(self.pos) {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(Value::Table(table));
                }
                _ => return self.expected("comma or object end"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: lua-cjson's encodings and a decode round trip. Method: run in Lua.
    #[test]
    fn encode_and_decode() {
        let lua = Lua::new();
        lua.globals().set("cjson", module(&lua).unwrap()).unwrap();
        let cases = [
            ("cjson.encode({1, 2, 'x'})", r#"[1,2,"x"]"#),
            ("cjson.encode({a = 1})", r#"{"a":1}"#),
            ("cjson.encode({})", "{}"),
            ("cjson.encode('a/b\"\\n')", r#""a\/b\"\n""#),
            ("cjson.encode(3.5)", "3.5"),
            ("cjson.encode(0.1)", "0.1"),
            ("cjson.encode({1, nil, 3})", "[1,null,3]"),
            ("cjson.encode(cjson.null)", "null"),
            ("cjson.encode(true)", "true"),
            (
                "cjson.encode(cjson.decode('[1,{\"b\":[true,null]},\"\\\\u00e9\"]'))",
                "[1,{\"b\":[true,null]},\"\u{e9}\"]",
            ),
            ("cjson.decode('{\"a\":[1,2]}').a[2]", "2"),
            ("tostring(cjson.decode(' 12.5 '))", "12.5"),
        ];
        for (expr, want) in cases {
            let got: String = lua.load(format!("return {expr}")).eval().unwrap();
            assert_eq!(got, want, "{expr}");
        }
        let err = lua.load("return cjson.decode('{bad')").eval::<Value>().unwrap_err().to_string();
        assert!(
            err.contains("Expected object key string but found invalid token at character 2"),
            "{err}"
        );
        let err = lua.load("return cjson.encode({[1]=1, [100]=2})").eval::<Value>().unwrap_err();
        assert!(err.to_string().contains("excessively sparse array"), "{err}");
    }
}
