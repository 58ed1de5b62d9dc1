//! Redis's conversions between RESP replies and Lua values, both ways.
//!
//! A command's reply to Lua (done in place by `luacall`, crates/luacall/src/reply.rs), in
//! the protocol the script chose with `redis.setresp` (2 by default):
//!
//! | RESP                     | Lua                                           |
//! |--------------------------|-----------------------------------------------|
//! | integer                  | number                                        |
//! | bulk string              | string                                        |
//! | RESP2 null (bulk, array) | false                                         |
//! | array                    | table (a sequence)                            |
//! | status                   | `{ok = text}`                                 |
//! | error                    | `{err = text}` (redis.call raises it)         |
//! | RESP3 null               | nil                                           |
//! | RESP3 boolean            | true / false                                  |
//! | RESP3 double             | `{double = number}`                           |
//! | RESP3 big number         | `{big_number = text}`                         |
//! | RESP3 map                | `{map = {k = v}}`                             |
//! | RESP3 set                | `{set = {member = true}}`                     |
//! | RESP3 verbatim string    | `{verbatim_string = {format =, string =}}`    |
//!
//! A script's result to the client (`write_reply`), in the client's protocol: a string is
//! a bulk string; a number an integer (truncated toward zero); nil a null; a boolean
//! `:1`/null under `setresp(2)`, a RESP3 boolean under `setresp(3)`; a table with `err`,
//! `ok`, `double`, `big_number`, `map`, `set` or `verbatim_string` that type; any other
//! table an array of its elements up to the first nil.

use mlua::{Table, Value};
use proto_resp::Reply;

/// Deepest nesting converted either way (Redis stops at Lua's stack limit).
const DEPTH_MAX: usize = 128;

/// Which `redis.setresp` the script ran under: how booleans come out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ScriptResp {
    Two,
    Three,
}

/// Writes a script's result in the client's protocol.
pub(super) fn write_reply(reply: &mut Reply<'_>, value: &Value, resp: ScriptResp) {
    write_at(reply, value, resp, 0);
}

fn write_at(reply: &mut Reply<'_>, value: &Value, resp: ScriptResp, depth: usize) {
    if depth > DEPTH_MAX {
        return reply.error("ERR reached lua stack limit");
    }
    match value {
        Value::String(s) => reply.bulk(&s.as_bytes()),
        Value::Integer(n) => reply.integer(*n),
        Value::Number(n) => reply.integer(number_to_integer(*n)),
        Value::Boolean(b) => match resp {
            ScriptResp::Three => reply.boolean(*b),
            ScriptResp::Two if *b => reply.integer(1),
            ScriptResp::Two => reply.null(),
        },
        Value::Table(table) => write_table(reply, table, resp, depth),
        // An error `pcall(redis.call, ...)` caught (a Rust error here, where Redis 7.0
        // gives a string): returned, it is its message, as Redis's string would be.
        Value::Error(_) => {
            let (message, coded) = super::vm::describe(value);
            let message = if coded { message } else { format!("ERR {message}") };
            reply.bulk(message.as_bytes());
        }
        _ => reply.null(),
    }
}

/// Lua 5.1's `(long long)` cast of a double: toward zero, saturating here.
pub(super) fn number_to_integer(n: f64) -> i64 {
    if n.is_nan() {
        i64::MIN
    } else {
        n as i64
    }
}

fn write_table(reply: &mut Reply<'_>, table: &Table, resp: ScriptResp, depth: usize) {
    if let Ok(Value::String(err)) = table.raw_get::<Value>("err") {
        // Redis 7.0: the first word is the error code when there is more than one word;
        // a single word gets `ERR` before it.
        let text = err.as_bytes();
        let text = text.strip_prefix(b"-").unwrap_or(&text);
        if !text.contains(&b' ') {
            return reply.error([b"ERR ".as_slice(), text].concat());
        }
        return reply.error(text);
    }
    if let Ok(Value::String(ok)) = table.raw_get::<Value>("ok") {
        return reply.simple(&ok.as_bytes());
    }
    match table.raw_get::<Value>("double") {
        Ok(Value::Number(d)) => return reply.double(d),
        Ok(Value::Integer(d)) => return reply.double(d as f64),
        _ => {}
    }
    if let Ok(Value::String(digits)) = table.raw_get::<Value>("big_number") {
        return reply.big_number(&digits.as_bytes());
    }
    if let Ok(Value::Table(map)) = table.raw_get::<Value>("map") {
        let pairs: Vec<(Value, Value)> =
            map.pairs::<Value, Value>().filter_map(Result::ok).collect();
        reply.map(pairs.len());
        for (key, value) in &pairs {
            write_at(reply, key, resp, depth + 1);
            write_at(reply, value, resp, depth + 1);
        }
        return;
    }
    if let Ok(Value::Table(set)) = table.raw_get::<Value>("set") {
        let members: Vec<Value> =
            set.pairs::<Value, Value>().filter_map(Result::ok).map(|(k, _)| k).collect();
        reply.set(members.len());
        for member in &members {
            write_at(reply, member, resp, depth + 1);
        }
        return;
    }
    if let Ok(Value::Table(verbatim)) = table.raw_get::<Value>("verbatim_string") {
        let format = verbatim.raw_get::<Value>("format");
        let text = verbatim.raw_get::<Value>("string");
        if let (Ok(Value::String(format)), Ok(Value::String(text))) = (format, text) {
            let format = format.as_bytes();
            if let Ok(format) = <[u8; 3]>::try_from(&format[..]) {
                return reply.verbatim(&format, &text.as_bytes());
            }
        }
    }
    let mut items = Vec::new();
    for at in 1.. {
        match table.raw_get::<Value>(at) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(value) => items.push(value),
        }
    }
    reply.array(items.len());
    for item in &items {
        write_at(reply, item, resp, depth + 1);
    }
}

/// A Lua number as Redis 7.0's `redis.call` passes it: `%.17g`.
pub(super) fn number_arg(n: f64) -> Vec<u8> {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        return format!("{}", n as i64).into_bytes();
    }
    format_g(n, 17).into_bytes()
}

/// C's `%.14g`.
pub(super) fn format_g14(n: f64) -> String {
    format_g(n, 14)
}

/// C's `%.<precision>g`.
pub(super) fn format_g(n: f64, precision: usize) -> String {
    if n.is_nan() {
        return if n.is_sign_negative() { "-nan".into() } else { "nan".into() };
    }
    if n.is_infinite() {
        return if n < 0.0 { "-inf".into() } else { "inf".into() };
    }
    if n == 0.0 {
        return if n.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let precision = precision.max(1);
    let exponent = format!("{:.*e}", precision - 1, n);
    let (mantissa, exp) = exponent.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().expect("an exponent");
    if exp < -4 || exp >= precision as i32 {
        let mantissa = trim_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (precision as i32 - 1 - exp).max(0) as usize;
        trim_zeros(&format!("{n:.decimals$}")).to_owned()
    }
}

fn trim_zeros(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use mlua::Lua;

    use super::*;

    /// Goal: Redis 7.0's number formatting of `redis.call` arguments (`%.17g`), checked
    /// against redis-server. Method: table.
    #[test]
    fn numbers_format_as_lua_does() {
        for (n, text) in [
            (3.0, "3"),
            (-3.0, "-3"),
            (3.5, "3.5"),
            (0.1, "0.10000000000000001"),
            (1e20, "1e+20"),
            (123456789012345.0, "123456789012345"),
            (1.0 / 3.0, "0.33333333333333331"),
            (0.1 + 0.2, "0.30000000000000004"),
            (0.00001, "1.0000000000000001e-05"),
        ] {
            assert_eq!(String::from_utf8(number_arg(n)).unwrap(), text, "{n}");
        }
    }

    /// Goal: a script's result keeps Redis's types (the Lua values a reply becomes are
    /// luacall's, tested in crates/luacall/tests/calls.rs). Method: each Lua value such a
    /// reply makes, written as RESP2 and RESP3.
    #[test]
    fn results_keep_redis_types() {
        let lua = Lua::new();
        let cases: &[(&str, &[u8], &[u8])] = &[
            ("7", b":7\r\n", b":7\r\n"),
            ("'x'", b"$1\r\nx\r\n", b"$1\r\nx\r\n"),
            ("false", b"$-1\r\n", b"#f\r\n"),
            ("{ok = 'OK'}", b"+OK\r\n", b"+OK\r\n"),
            ("{err = 'ERR no'}", b"-ERR no\r\n", b"-ERR no\r\n"),
            ("{double = 1.5}", b"$3\r\n1.5\r\n", b",1.5\r\n"),
            ("true", b":1\r\n", b"#t\r\n"),
            ("{1, 'a'}", b"*2\r\n:1\r\n$1\r\na\r\n", b"*2\r\n:1\r\n$1\r\na\r\n"),
            ("{map = {k = 1}}", b"*2\r\n$1\r\nk\r\n:1\r\n", b"%1\r\n$1\r\nk\r\n:1\r\n"),
            ("{set = {m = true}}", b"*1\r\n$1\r\nm\r\n", b"~1\r\n$1\r\nm\r\n"),
        ];
        for (code, two, three) in cases {
            let value: Value = lua.load(format!("return {code}")).eval().unwrap();
            let mut out = Vec::new();
            write_reply(
                &mut Reply::new(&mut out, proto_resp::Protocol::Resp2),
                &value,
                ScriptResp::Two,
            );
            assert_eq!(out, *two, "{code} to RESP2");
            let mut out = Vec::new();
            let mut reply = Reply::new(&mut out, proto_resp::Protocol::Resp3);
            write_reply(&mut reply, &value, ScriptResp::Three);
            assert_eq!(out, *three, "{code} to RESP3");
        }
    }

    /// Goal: an array stops at its first nil, and numbers truncate. Method: Lua values.
    #[test]
    fn tables_stop_at_nil_and_numbers_truncate() {
        let lua = Lua::new();
        let value: Value = lua.load("return {1, 2.9, -3.9, 'x', nil, 4}").eval().unwrap();
        let mut out = Vec::new();
        write_reply(
            &mut Reply::new(&mut out, proto_resp::Protocol::Resp2),
            &value,
            ScriptResp::Two,
        );
        assert_eq!(out, b"*4\r\n:1\r\n:2\r\n:-3\r\n$1\r\nx\r\n");
    }
}
