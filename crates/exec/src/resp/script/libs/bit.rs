//! `bit`: LuaBitOp's operations on 32-bit integers. A Lua number is reduced to 32 bits as
//! LuaBitOp does (modulo 2^32, read as signed), and every result is a signed 32-bit
//! number.

use mlua::{Lua, Table, Value, Variadic};

use super::fail;

/// LuaBitOp's `tobit`: the number modulo 2^32 as a signed 32-bit integer.
pub(crate) fn tobit(n: f64) -> i32 {
    // LuaBitOp adds 2^52 + 2^51 and keeps the low 32 bits; for the finite numbers
    // scripts pass this is the value modulo 2^32 after rounding to an integer.
    if !n.is_finite() {
        return 0;
    }
    let rounded = n.round_ties_even();
    let wrapped = rounded.rem_euclid(4_294_967_296.0);
    wrapped as u32 as i32
}

fn arg(args: &Variadic<Value>, at: usize, name: &str) -> mlua::Result<i32> {
    match args.get(at) {
        Some(Value::Integer(n)) => Ok(tobit(*n as f64)),
        Some(Value::Number(n)) => Ok(tobit(*n)),
        Some(Value::String(s)) => {
            match s.to_str().ok().and_then(|t| t.trim().parse::<f64>().ok()) {
                Some(n) => Ok(tobit(n)),
                None => fail(format!(
                    "bad argument #{} to '{name}' (number expected, got string)",
                    at + 1
                )),
            }
        }
        other => {
            let got = other.map_or("no value", |v| v.type_name());
            fail(format!("bad argument #{} to '{name}' (number expected, got {got})", at + 1))
        }
    }
}

pub(super) fn module(lua: &Lua) -> mlua::Result<Table> {
    let bit = lua.create_table()?;
    bit.raw_set(
        "tobit",
        lua.create_function(|_, a: Variadic<Value>| Ok(arg(&a, 0, "tobit")? as f64))?,
    )?;
    bit.raw_set(
        "bnot",
        lua.create_function(|_, a: Variadic<Value>| Ok(!arg(&a, 0, "bnot")? as f64))?,
    )?;
    type Fold = fn(i32, i32) -> i32;
    let folds: [(&str, Fold); 3] =
        [("band", |a, b| a & b), ("bor", |a, b| a | b), ("bxor", |a, b| a ^ b)];
    for (name, op) in folds {
        bit.raw_set(
            name,
            lua.create_function(move |_, a: Variadic<Value>| {
                let mut acc = arg(&a, 0, name)?;
                for at in 1..a.len() {
                    acc = op(acc, arg(&a, at, name)?);
                }
                Ok(acc as f64)
            })?,
        )?;
    }
    type Shift = fn(i32, u32) -> i32;
    let shifts: [(&str, Shift); 5] = [
        ("lshift", |a, n| ((a as u32) << n) as i32),
        ("rshift", |a, n| ((a as u32) >> n) as i32),
        ("arshift", |a, n| a >> n),
        ("rol", |a, n| (a as u32).rotate_left(n) as i32),
        ("ror", |a, n| (a as u32).rotate_right(n) as i32),
    ];
    for (name, op) in shifts {
        bit.raw_set(
            name,
            lua.create_function(move |_, a: Variadic<Value>| {
                let x = arg(&a, 0, name)?;
                let n = (arg(&a, 1, name)? & 31) as u32;
                Ok(op(x, n) as f64)
            })?,
        )?;
    }
    bit.raw_set(
        "bswap",
        lua.create_function(|_, a: Variadic<Value>| Ok(arg(&a, 0, "bswap")?.swap_bytes() as f64))?,
    )?;
    bit.raw_set(
        "tohex",
        lua.create_function(|_, a: Variadic<Value>| {
            let x = arg(&a, 0, "tohex")?;
            let n = if a.len() > 1 { arg(&a, 1, "tohex")? } else { 8 };
            let (upper, digits) = (n < 0, n.unsigned_abs() as usize);
            let digits = digits.min(8);
            let masked =
                if digits >= 8 { x as u32 } else { (x as u32) & ((1u32 << (4 * digits)) - 1) };
            let text =
                if upper { format!("{masked:0digits$X}") } else { format!("{masked:0digits$x}") };
            Ok(text)
        })?,
    )?;
    Ok(bit)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: LuaBitOp's results for the documented examples. Method: run them in Lua.
    #[test]
    fn luabitop_examples() {
        let lua = Lua::new();
        lua.globals().set("bit", module(&lua).unwrap()).unwrap();
        let cases: &[(&str, f64)] = &[
            ("bit.tobit(0xffffffff)", -1.0),
            ("bit.tobit(0xffffffff + 1)", 0.0),
            ("bit.tobit(2^40 + 1234)", 1234.0),
            ("bit.bnot(0)", -1.0),
            ("bit.bor(1, 2, 4, 8)", 15.0),
            ("bit.band(0x12345678, 0xff)", 120.0),
            ("bit.bxor(0xa5a5f0f0, 0xaa55ff00)", 267_390_960.0),
            ("bit.lshift(1, 0)", 1.0),
            ("bit.lshift(1, 8)", 256.0),
            ("bit.lshift(1, 40)", 256.0),
            ("bit.rshift(256, 8)", 1.0),
            ("bit.rshift(-256, 8)", 16_777_215.0),
            ("bit.arshift(-256, 8)", -1.0),
            ("bit.rol(0x12345678, 12)", 1_164_411_171.0),
            ("bit.ror(0x12345678, 12)", 1_736_516_421.0),
            ("bit.bswap(0x12345678)", 2_018_915_346.0),
        ];
        for (expr, want) in cases {
            let got: f64 = lua.load(format!("return {expr}")).eval().unwrap();
            assert_eq!(got, *want, "{expr}");
        }
        let hex: Vec<String> = [
            "bit.tohex(1)",
            "bit.tohex(-1)",
            "bit.tohex(0xffffffff, -4)",
            "bit.tohex(0x21, 4)",
            "bit.tohex(65535)",
        ]
        .iter()
        .map(|e| lua.load(format!("return {e}")).eval().unwrap())
        .collect();
        assert_eq!(hex, ["00000001", "ffffffff", "FFFF", "0021", "0000ffff"]);
    }
}
