//! `cmsgpack`: lua-cmsgpack's `pack`, `unpack`, `unpack_one` and `unpack_limit`.
//!
//! Packing follows lua-cmsgpack: an integral number takes the smallest integer form, any
//! other a float32 when that keeps it exactly, else a float64; a table whose keys are
//! exactly 1..n is an array (an empty table too), any other a map; tables nested deeper
//! than 16 pack as nil. Unpacking reads every MessagePack type but ext.

use mlua::{Lua, MultiValue, Table, Value, Variadic};

use super::fail;

const NESTING_MAX: usize = 16;

/// Deepest nesting `unpack` reads (each level is a Rust call frame and a Lua table: an
/// input of 200,000 nested one-element arrays must fail, not overflow the stack).
const UNPACK_DEPTH_MAX: usize = 256;

pub(super) fn module(lua: &Lua) -> mlua::Result<Table> {
    let cmsgpack = lua.create_table()?;
    cmsgpack.raw_set(
        "pack",
        lua.create_function(|lua, args: Variadic<Value>| {
            if args.is_empty() {
                return fail("MessagePack pack needs input.");
            }
            let mut out = Vec::new();
            for arg in args.iter() {
                pack(arg, &mut out, 0)?;
            }
            lua.create_string(out)
        })?,
    )?;
    cmsgpack.raw_set(
        "unpack",
        lua.create_function(|lua, data: mlua::LuaString| {
            let bytes = data.as_bytes();
            let mut reader = Reader { lua, input: &bytes, pos: 0, depth: 0 };
            let mut values = MultiValue::new();
            while reader.pos < bytes.len() {
                values.push_back(reader.value()?);
            }
            Ok(values)
        })?,
    )?;
    let limited = |lua: &Lua, data: mlua::LuaString, limit: usize, offset: usize| {
        let bytes = data.as_bytes();
        let mut reader = Reader { lua, input: &bytes, pos: offset, depth: 0 };
        let mut values = Vec::new();
        while reader.pos < bytes.len() && (limit == 0 || values.len() < limit) {
            values.push(reader.value()?);
        }
        let next = if reader.pos >= bytes.len() { -1 } else { reader.pos as i64 };
        let mut result = MultiValue::new();
        result.push_back(Value::Number(next as f64));
        result.extend(values);
        Ok(result)
    };
    cmsgpack.raw_set(
        "unpack_one",
        lua.create_function(move |lua, (data, offset): (mlua::LuaString, Option<usize>)| {
            limited(lua, data, 1, offset.unwrap_or(0))
        })?,
    )?;
    cmsgpack.raw_set(
        "unpack_limit",
        lua.create_function(
            move |lua, (data, limit, offset): (mlua::LuaString, usize, Option<usize>)| {
                limited(lua, data, limit, offset.unwrap_or(0))
            },
        )?,
    )?;
    cmsgpack.raw_set("_NAME", "cmsgpack")?;
    cmsgpack.raw_set("_VERSION", "lua-cmsgpack 0.4.0")?;
    Ok(cmsgpack)
}

fn pack(value: &Value, out: &mut Vec<u8>, depth: usize) -> mlua::Result<()> {
    match value {
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(n) => pack_int(*n, out),
        Value::Number(n) => pack_number(*n, out),
        Value::String(s) => {
            let bytes = s.as_bytes();
            let len = bytes.len();
            if len < 32 {
                out.push(0xa0 | len as u8);
            } else if len <= 0xff {
                out.extend_from_slice(&[0xd9, len as u8]);
            } else if len <= 0xffff {
                out.push(0xda);
                out.extend_from_slice(&(len as u16).to_be_bytes());
            } else {
                out.push(0xdb);
                out.extend_from_slice(&(len as u32).to_be_bytes());
            }
            out.extend_from_slice(&bytes);
        }
        Value::Table(table) if depth < NESTING_MAX => pack_table(table, out, depth + 1)?,
        _ => out.push(0xc0),
    }
    Ok(())
}

fn pack_number(n: f64, out: &mut Vec<u8>) {
    if n.fract() == 0.0 && n.is_finite() && n.abs() < 9.2e18 {
        return pack_int(n as i64, out);
    }
    if (n as f32) as f64 == n || n.is_nan() {
        out.push(0xca);
        out.extend_from_slice(&(n as f32).to_be_bytes());
    } else {
        out.push(0xcb);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn pack_int(n: i64, out: &mut Vec<u8>) {
    if n >= 0 {
        let u = n as u64;
        if u < 128 {
            out.push(u as u8);
        } else if u <= 0xff {
            out.extend_from_slice(&[0xcc, u as u8]);
        } else if u <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(u as u16).to_be_bytes());
        } else if u <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(u as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&u.to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn pack_table(table: &Table, out: &mut Vec<u8>, depth: usize) -> mlua::Result<()> {
    let mut count = 0usize;
    let mut max = 0usize;
    let mut array = true;
    for pair in table.pairs::<Value, Value>() {
        let (key, _) = pair?;
        count += 1;
        match key {
            Value::Integer(n) if n >= 1 => max = max.max(n as usize),
            Value::Number(n) if n >= 1.0 && n.fract() == 0.0 => max = max.max(n as usize),
            _ => array = false,
        }
    }
    if array && count == max {
        header(out, count, [0x90, 0xdc, 0xdd], 16);
        for at in 1..=count {
            pack(&table.raw_get::<Value>(at)?, out, depth)?;
        }
    } else {
        header(out, count, [0x80, 0xde, 0xdf], 16);
        for pair in table.pairs::<Value, Value>() {
            let (key, value) = pair?;
            pack(&key, out, depth)?;
            pack(&value, out, depth)?;
        }
    }
    Ok(())
}

fn header(out: &mut Vec<u8>, len: usize, [fix, m16, m32]: [u8; 3], fix_max: usize) {
    if len < fix_max {
        out.push(fix | len as u8);
    } else if len <= 0xffff {
        out.push(m16);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(m32);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

struct Reader<'a> {
    lua: &'a Lua,
    input: &'a [u8],
    pos: usize,
    /// Arrays and maps open around the value being read.
    depth: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> mlua::Result<&[u8]> {
        let end = self.pos.saturating_add(n);
        let Some(bytes) = self.input.get(self.pos..end) else {
            return fail("Missing bytes in input.");
        };
        self.pos += n;
        Ok(bytes)
    }

    fn uint(&mut self, n: usize) -> mlua::Result<u64> {
        Ok(self.take(n)?.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    fn value(&mut self) -> mlua::Result<Value> {
        let tag = self.take(1)?[0];
        let number = |n: f64| Ok(Value::Number(n));
        match tag {
            0x00..=0x7f => number(f64::from(tag)),
            0x80..=0x8f => self.map(usize::from(tag & 0x0f)),
            0x90..=0x9f => self.array(usize::from(tag & 0x0f)),
            0xa0..=0xbf => self.string(usize::from(tag & 0x1f)),
            0xc0 => Ok(Value::Nil),
            0xc2 => Ok(Value::Boolean(false)),
            0xc3 => Ok(Value::Boolean(true)),
            0xc4 | 0xd9 => {
                let n = self.uint(1)? as usize;
                self.string(n)
            }
            0xc5 | 0xda => {
                let n = self.uint(2)? as usize;
                self.string(n)
            }
            0xc6 | 0xdb => {
                let n = self.uint(4)? as usize;
                self.string(n)
            }
            0xca => number(f64::from(f32::from_bits(self.uint(4)? as u32))),
            0xcb => number(f64::from_bits(self.uint(8)?)),
            0xcc => number(self.uint(1)? as f64),
            0xcd => number(self.uint(2)? as f64),
            0xce => number(self.uint(4)? as f64),
            0xcf => number(self.uint(8)? as f64),
            0xd0 => number(f64::from(self.uint(1)? as u8 as i8)),
            0xd1 => number(f64::from(self.uint(2)? as u16 as i16)),
            0xd2 => number(f64::from(self.uint(4)? as u32 as i32)),
            0xd3 => number(self.uint(8)? as i64 as f64),
            0xdc => {
                let n = self.uint(2)? as usize;
                self.array(n)
            }
            0xdd => {
                let n = self.uint(4)? as usize;
                self.array(n)
            }
            0xde => {
                let n = self.uint(2)? as usize;
                self.map(n)
            }
            0xdf => {
                let n = self.uint(4)? as usize;
                self.map(n)
            }
            0xe0..=0xff => number(f64::from(tag as i8)),
            _ => fail("Bad data format in input."),
        }
    }

    fn string(&mut self, n: usize) -> mlua::Result<Value> {
        let bytes = self.take(n)?.to_vec();
        Ok(Value::String(self.lua.create_string(bytes)?))
    }

    fn array(&mut self, n: usize) -> mlua::Result<Value> {
        self.nested(|reader| {
            let table = reader.lua.create_table()?;
            for at in 1..=n {
                let value = reader.value()?;
                table.raw_set(at, value)?;
            }
            Ok(Value::Table(table))
        })
    }

    fn map(&mut self, n: usize) -> mlua::Result<Value> {
        self.nested(|reader| {
            let table = reader.lua.create_table()?;
            for _ in 0..n {
                let key = reader.value()?;
                let value = reader.value()?;
                if !key.is_nil() {
                    table.raw_set(key, value)?;
                }
            }
            Ok(Value::Table(table))
        })
    }

    /// Reads an array or map one level deeper, refusing past [`UNPACK_DEPTH_MAX`].
    fn nested(
        &mut self,
        read: impl FnOnce(&mut Self) -> mlua::Result<Value>,
    ) -> mlua::Result<Value> {
        if self.depth >= UNPACK_DEPTH_MAX {
            return fail("Too many nested data structures in input.");
        }
        self.depth += 1;
        let value = read(self);
        self.depth -= 1;
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: lua-cmsgpack's byte forms and a round trip. Method: run in Lua, compare hex.
    #[test]
    fn pack_and_unpack() {
        let lua = Lua::new();
        lua.globals().set("cmsgpack", module(&lua).unwrap()).unwrap();
        let hex = |expr: &str| -> String {
            let s: mlua::LuaString = lua.load(format!("return {expr}")).eval().unwrap();
            s.as_bytes().iter().map(|b| format!("{b:02x}")).collect()
        };
        assert_eq!(hex("cmsgpack.pack(1, -1, 200, 'ab', true)"), "01ffccc8a26162c3");
        assert_eq!(hex("cmsgpack.pack({1, 2})"), "920102");
        assert_eq!(hex("cmsgpack.pack({a = 1})"), "81a16101");
        assert_eq!(hex("cmsgpack.pack(1.5)"), "ca3fc00000");
        assert_eq!(hex("cmsgpack.pack(0.1)"), "cb3fb999999999999a");
        assert_eq!(hex("cmsgpack.pack(-1000)"), "d1fc18");
        let got: String = lua
            .load(
                "local a, b = cmsgpack.unpack(cmsgpack.pack({1, {x = 'y'}}, 7)) return a[2].x .. b",
            )
            .eval()
            .unwrap();
        assert_eq!(got, "y7");
    }
}
