//! `struct`: Roberto Ierusalimschy's struct library (`pack`, `unpack`, `size`), the one
//! Redis loads.
//!
//! Formats: `<` `>` `=` endianness (native is little here), `!n` alignment, `x` a zero
//! byte, `b`/`B` `h`/`H` `l`/`L` `T` `i[n]`/`I[n]` integers (`l` 8 bytes, `i` 4 unless
//! `n` says), `f` float, `d` double, `s` a zero-terminated string, `c[n]` a fixed-size
//! string (`c0` in `unpack`: the length is the previous value), spaces ignored.
//! `unpack` returns the values and then the position after them.

use mlua::{Lua, MultiValue, Table, Value, Variadic};

use super::fail;

const MAXINTSIZE: usize = 32;

#[derive(Clone, Copy)]
struct Options {
    little: bool,
    align: usize,
}

enum Item {
    Int { size: usize, signed: bool },
    Float,
    Double,
    Pad,
    Zstr,
    Chars(usize),
}

/// Walks a format, calling `f` with each item and its alignment padding.
fn walk(format: &[u8], mut f: impl FnMut(Item, Options) -> mlua::Result<()>) -> mlua::Result<()> {
    let mut options = Options { little: true, align: 1 };
    let mut at = 0;
    let number = |at: &mut usize, default: usize| -> usize {
        let start = *at;
        while format.get(*at).is_some_and(u8::is_ascii_digit) {
            *at += 1;
        }
        std::str::from_utf8(&format[start..*at])
            .ok()
            .and_then(|t| t.parse().ok())
            .unwrap_or(default)
    };
    while at < format.len() {
        let opt = format[at];
        at += 1;
        let item = match opt {
            b' ' => continue,
            b'<' => {
                options.little = true;
                continue;
            }
            b'>' => {
                options.little = false;
                continue;
            }
            b'=' => {
                options.little = true;
                continue;
            }
            b'!' => {
                options.align = number(&mut at, 8);
                if !options.align.is_power_of_two() {
                    return fail("alignment must be power of 2");
                }
                continue;
            }
            b'x' => Item::Pad,
            b'b' => Item::Int { size: 1, signed: true },
            b'B' => Item::Int { size: 1, signed: false },
            b'h' => Item::Int { size: 2, signed: true },
            b'H' => Item::Int { size: 2, signed: false },
            b'l' => Item::Int { size: 8, signed: true },
            b'L' => Item::Int { size: 8, signed: false },
            b'T' => Item::Int { size: 8, signed: false },
            b'i' | b'I' => {
                let size = number(&mut at, 4);
                if size == 0 || size > MAXINTSIZE {
                    return fail(format!(
                        "integral size {size} is larger than limit of {MAXINTSIZE}"
                    ));
                }
                Item::Int { size, signed: opt == b'i' }
            }
            b'f' => Item::Float,
            b'd' => Item::Double,
            b's' => Item::Zstr,
            b'c' => Item::Chars(number(&mut at, 1)),
            other => return fail(format!("invalid format option '{}'", char::from(other))),
        };
        f(item, options)?;
    }
    Ok(())
}

fn item_size(item: &Item) -> usize {
    match item {
        Item::Int { size, .. } => *size,
        Item::Float => 4,
        Item::Double => 8,
        Item::Pad => 1,
        Item::Zstr => 0,
        Item::Chars(n) => *n,
    }
}

/// Padding before an item of `size` at `offset` (the library aligns to min(size, !n)).
fn padding(item: &Item, offset: usize, options: Options) -> usize {
    let size = match item {
        Item::Int { size, .. } => *size,
        Item::Float => 4,
        Item::Double => 8,
        _ => 1,
    };
    let align = size.min(options.align);
    if align <= 1 {
        return 0;
    }
    (align - (offset & (align - 1))) & (align - 1)
}

/// `len` bytes of `data` from `pos`, if they are all there (no overflow for a length a
/// script chose, such as `c0` after a huge number).
fn span(data: &[u8], pos: usize, len: usize) -> Option<&[u8]> {
    data.get(pos..pos.checked_add(len)?)
}

fn put_int(out: &mut Vec<u8>, value: i64, size: usize, little: bool) {
    let mut bytes = vec![0u8; size];
    let fill = if value < 0 { 0xff } else { 0 };
    for (i, byte) in bytes.iter_mut().enumerate() {
        *byte = if i < 8 { (value >> (8 * i)) as u8 } else { fill };
    }
    if !little {
        bytes.reverse();
    }
    out.extend_from_slice(&bytes);
}

fn number(value: Option<&Value>, at: usize) -> mlua::Result<f64> {
    match value {
        Some(Value::Integer(n)) => Ok(*n as f64),
        Some(Value::Number(n)) => Ok(*n),
        Some(Value::String(s)) => {
            match s.to_str().ok().and_then(|t| t.trim().parse::<f64>().ok()) {
                Some(n) => Ok(n),
                None => fail(format!("bad argument #{at} to 'pack' (number expected, got string)")),
            }
        }
        other => {
            let got = other.map_or("no value", Value::type_name);
            fail(format!("bad argument #{at} to 'pack' (number expected, got {got})"))
        }
    }
}

pub(super) fn module(lua: &Lua) -> mlua::Result<Table> {
    let module = lua.create_table()?;
    module.raw_set("pack", lua.create_function(pack)?)?;
    module.raw_set("unpack", lua.create_function(unpack)?)?;
    module.raw_set("size", lua.create_function(size)?)?;
    Ok(module)
}

/// `struct.pack(format, ...)`: the values as bytes.
fn pack(lua: &Lua, args: Variadic<Value>) -> mlua::Result<mlua::LuaString> {
    let Some(Value::String(format)) = args.first() else {
        return fail("bad argument #1 to 'pack' (string expected)");
    };
    let format = format.as_bytes().to_vec();
    let mut out = Vec::new();
    let mut next = 1;
    walk(&format, |item, options| {
        let pad = padding(&item, out.len(), options);
        out.resize(out.len() + pad, 0);
        if matches!(item, Item::Pad) {
            out.push(0);
            return Ok(());
        }
        let arg = args.get(next);
        next += 1;
        match item {
            Item::Pad => {}
            Item::Int { size, .. } => {
                put_int(&mut out, number(arg, next)? as i64, size, options.little)
            }
            Item::Float => {
                let n = number(arg, next)? as f32;
                out.extend_from_slice(&if options.little {
                    n.to_le_bytes()
                } else {
                    n.to_be_bytes()
                })
            }
            Item::Double => {
                let n = number(arg, next)?;
                out.extend_from_slice(&if options.little {
                    n.to_le_bytes()
                } else {
                    n.to_be_bytes()
                })
            }
            Item::Zstr | Item::Chars(_) => put_string(&mut out, &item, arg, next)?,
        }
        Ok(())
    })?;
    lua.create_string(out)
}

/// Packs `s` (zero-terminated) or `c[n]` (fixed size) from argument number `at`.
fn put_string(out: &mut Vec<u8>, item: &Item, arg: Option<&Value>, at: usize) -> mlua::Result<()> {
    let bytes = match arg {
        Some(Value::String(s)) => s.as_bytes().to_vec(),
        Some(Value::Integer(n)) => n.to_string().into_bytes(),
        Some(Value::Number(n)) => crate::resp::script::convert::format_g14(*n).into_bytes(),
        _ => return fail(format!("bad argument #{at} to 'pack' (string expected)")),
    };
    if let Item::Chars(n) = *item {
        let size = if n == 0 { bytes.len() } else { n };
        if bytes.len() < size {
            return fail(format!("bad argument #{at} to 'pack' (string too short)"));
        }
        out.extend_from_slice(&bytes[..size]);
    } else {
        if bytes.contains(&0) {
            return fail(format!("bad argument #{at} to 'pack' (string contains zeros)"));
        }
        out.extend_from_slice(&bytes);
        out.push(0);
    }
    Ok(())
}

/// `struct.unpack(format, data[, init])`: the values, then the position after them.
fn unpack(
    lua: &Lua,
    (format, data, init): (mlua::LuaString, mlua::LuaString, Option<f64>),
) -> mlua::Result<MultiValue> {
    let format = format.as_bytes().to_vec();
    let data = data.as_bytes().to_vec();
    let mut pos = init.map_or(0, |p| (p as usize).saturating_sub(1));
    if pos > data.len() {
        return fail("bad argument #3 to 'unpack' (offset must be 1 or greater)");
    }
    let mut values = MultiValue::new();
    let mut last = 0usize;
    walk(&format, |item, options| {
        pos = pos.saturating_add(padding(&item, pos, options));
        let size = item_size(&item);
        let short = || fail("bad argument #2 to 'unpack' (data string too short)");
        let value = match item {
            // `x` skips a byte even past the end (C's struct does), so every later read
            // checks its own bounds.
            Item::Pad => {
                pos = pos.saturating_add(1);
                return Ok(());
            }
            Item::Int { size, signed } => {
                let Some(bytes) = span(&data, pos, size) else { return short() };
                let n = get_int(bytes, signed, options.little);
                last = n as usize;
                pos += size;
                Value::Number(n)
            }
            Item::Float | Item::Double => {
                let Some(bytes) = span(&data, pos, size) else { return short() };
                pos += size;
                Value::Number(get_float(bytes, options.little))
            }
            Item::Zstr => {
                let rest = data.get(pos..).unwrap_or_default();
                let Some(end) = rest.iter().position(|&b| b == 0) else {
                    return fail("unfinished string in data");
                };
                let value = Value::String(lua.create_string(&data[pos..pos + end])?);
                pos += end + 1;
                value
            }
            Item::Chars(n) => {
                let n = if n == 0 { last } else { n };
                let Some(bytes) = span(&data, pos, n) else { return short() };
                pos += n;
                Value::String(lua.create_string(bytes)?)
            }
        };
        values.push_back(value);
        Ok(())
    })?;
    values.push_back(Value::Number(pos.saturating_add(1) as f64));
    Ok(values)
}

/// An integer of `bytes.len()` bytes (only the low 8 carry value), as a Lua number.
fn get_int(bytes: &[u8], signed: bool, little: bool) -> f64 {
    let size = bytes.len();
    let mut raw = bytes.to_vec();
    if !little {
        raw.reverse();
    }
    let mut value: u64 = 0;
    for (i, b) in raw.iter().take(8).enumerate() {
        value |= u64::from(*b) << (8 * i);
    }
    if signed && size < 8 {
        let shift = 64 - 8 * size as u32;
        (((value << shift) as i64) >> shift) as f64
    } else if signed {
        value as i64 as f64
    } else {
        value as f64
    }
}

/// A float (4 bytes) or a double (8 bytes).
fn get_float(bytes: &[u8], little: bool) -> f64 {
    if let Ok(raw) = <[u8; 4]>::try_from(bytes) {
        f64::from(if little { f32::from_le_bytes(raw) } else { f32::from_be_bytes(raw) })
    } else {
        let raw: [u8; 8] = bytes.try_into().expect("8 bytes");
        if little {
            f64::from_le_bytes(raw)
        } else {
            f64::from_be_bytes(raw)
        }
    }
}

/// `struct.size(format)`: the bytes `pack` makes for it (refused when that varies).
fn size(_: &Lua, format: mlua::LuaString) -> mlua::Result<f64> {
    let format = format.as_bytes().to_vec();
    let mut total = 0usize;
    walk(&format, |item, options| {
        if matches!(item, Item::Zstr) || matches!(item, Item::Chars(0)) {
            return fail("options 'c0' - 's' have undefined sizes");
        }
        total += padding(&item, total, options) + item_size(&item);
        Ok(())
    })?;
    Ok(total as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: the struct library's byte forms and round trips. Method: run in Lua.
    #[test]
    fn pack_unpack_size() {
        let lua = Lua::new();
        lua.globals().set("struct", module(&lua).unwrap()).unwrap();
        let hex = |expr: &str| -> String {
            let s: mlua::LuaString = lua.load(format!("return {expr}")).eval().unwrap();
            s.as_bytes().iter().map(|b| format!("{b:02x}")).collect()
        };
        assert_eq!(hex("struct.pack('>I2', 258)"), "0102");
        assert_eq!(hex("struct.pack('<i4', -2)"), "feffffff");
        assert_eq!(hex("struct.pack('bBs', -1, 255, 'ab')"), "ffff616200");
        assert_eq!(hex("struct.pack('c3', 'abcdef')"), "616263");
        let got: String = lua
            .load("local a, b, c, n = struct.unpack('>hc2s', struct.pack('>hc2s', -5, 'xy', 'zz')) return a .. b .. c .. n")
            .eval()
            .unwrap();
        assert_eq!(got, "-5xyzz8");
        let size: f64 = lua.load("return struct.size('>iHbd')").eval().unwrap();
        assert_eq!(size, 15.0);
    }
}
