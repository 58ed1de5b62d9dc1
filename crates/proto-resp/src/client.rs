//! The client half: compose requests, parse replies (for the load generator and tests).
//!
//! `parse_reply` is stateless like `parse_command`: on `Incomplete`, call again with more
//! bytes. It reparses from the start, so a huge reply that arrives in many pieces costs
//! one pass per call. Nesting is bounded by [`DEPTH_MAX`] so a hostile server cannot
//! overflow the stack, and no vector is reserved beyond what the input could fill.
//! RESP3 streamed strings and aggregates (`$?`, `*?`) are not supported: Redis never
//! sends them.

use crate::{
    error::{ParseError, ProtocolError},
    reply::write_i64,
    value::Value,
};

/// Deepest nesting of aggregates `parse_reply` accepts.
pub const DEPTH_MAX: usize = 128;

/// Appends `args` as a multibulk request (`*N` then `$len arg` each).
///
/// ```
/// let mut out = Vec::new();
/// proto_resp::compose_command(&[b"GET", b"k"], &mut out);
/// assert_eq!(out, b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
/// ```
pub fn compose_command(args: &[&[u8]], out: &mut Vec<u8>) {
    compose_command_head(args.len(), out);
    for arg in args {
        compose_bulk_arg(arg, out);
    }
}

/// A request's `*N` line, for a caller that appends its `N` arguments one by one with
/// [`compose_bulk_arg`] (no slice of them at hand).
pub fn compose_command_head(argc: usize, out: &mut Vec<u8>) {
    out.push(b'*');
    write_i64(argc as i64, out);
    out.extend_from_slice(b"\r\n");
}

/// One argument of a request: `$len`, then its bytes.
pub fn compose_bulk_arg(arg: &[u8], out: &mut Vec<u8>) {
    out.push(b'$');
    write_i64(arg.len() as i64, out);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(arg);
    out.extend_from_slice(b"\r\n");
}

/// Parses one reply from the front of `buf`; returns it and the bytes it used.
///
/// ```
/// use proto_resp::{parse_reply, Value};
/// let (value, used) = parse_reply(b"*2\r\n:1\r\n$-1\r\n").unwrap();
/// assert_eq!(value, Value::Array(vec![Value::Integer(1), Value::NullBulk]));
/// assert_eq!(used, 13);
/// ```
pub fn parse_reply(buf: &[u8]) -> Result<(Value<'_>, usize), ParseError> {
    let mut reader = Reader { buf, pos: 0 };
    let value = reader.value(0)?;
    Ok((value, reader.pos))
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

fn bad(why: &'static str) -> ParseError {
    ParseError::Close { reply: ProtocolError::BadReply(why) }
}

impl<'a> Reader<'a> {
    fn value(&mut self, depth: usize) -> Result<Value<'a>, ParseError> {
        if depth > DEPTH_MAX {
            return Err(bad("nested too deep"));
        }
        let kind = *self.buf.get(self.pos).ok_or(ParseError::Incomplete)?;
        self.pos += 1;
        let line = self.line()?;
        Ok(match kind {
            b'+' => Value::Simple(line),
            b'-' => Value::Error(line),
            b':' => Value::Integer(int(line)?),
            b'(' => {
                big_number(line)?;
                Value::BigNumber(line)
            }
            b',' => Value::Double(double(line)?),
            b'#' => match line {
                b"t" => Value::Boolean(true),
                b"f" => Value::Boolean(false),
                _ => return Err(bad("boolean is not t or f")),
            },
            b'_' if line.is_empty() => Value::Null,
            b'_' => return Err(bad("null with a payload")),
            b'$' if line == b"-1" => Value::NullBulk,
            b'$' => Value::Bulk(self.blob(line)?),
            b'!' => Value::BulkError(self.blob(line)?),
            b'=' => {
                let data = self.blob(line)?;
                if data.len() < 4 || data[3] != b':' {
                    return Err(bad("verbatim string without a format"));
                }
                let format = [data[0], data[1], data[2]];
                Value::Verbatim { format, text: &data[4..] }
            }
            b'*' if line == b"-1" => Value::NullArray,
            b'*' => Value::Array(self.items(line, depth)?),
            b'~' => Value::Set(self.items(line, depth)?),
            b'>' => Value::Push(self.items(line, depth)?),
            b'%' => Value::Map(self.pairs(line, depth)?),
            b'|' => {
                let attrs = self.pairs(line, depth)?;
                let value = Box::new(self.value(depth + 1)?);
                Value::Attribute { attrs, value }
            }
            _ => return Err(bad("unknown type byte")),
        })
    }

    /// The bytes up to the next CRLF; moves past it.
    fn line(&mut self) -> Result<&'a [u8], ParseError> {
        let rest = &self.buf[self.pos..];
        let Some(cr) = rest.iter().position(|&b| b == b'\r') else {
            return Err(ParseError::Incomplete);
        };
        match rest.get(cr + 1) {
            None => Err(ParseError::Incomplete),
            Some(b'\n') => {
                self.pos += cr + 2;
                Ok(&rest[..cr])
            }
            Some(_) => Err(bad("CR without LF")),
        }
    }

    /// A length-prefixed payload and its CRLF.
    fn blob(&mut self, len_text: &[u8]) -> Result<&'a [u8], ParseError> {
        let len = length(len_text)?;
        let rest = &self.buf[self.pos..];
        if rest.len() < len.saturating_add(2) {
            return Err(ParseError::Incomplete);
        }
        if &rest[len..len + 2] != b"\r\n" {
            return Err(bad("payload not followed by CRLF"));
        }
        self.pos += len + 2;
        Ok(&rest[..len])
    }

    fn items(&mut self, len_text: &[u8], depth: usize) -> Result<Vec<Value<'a>>, ParseError> {
        let count = length(len_text)?;
        // Every element takes at least 3 bytes ("_\r\n"), so the input bounds the count.
        let mut items = Vec::with_capacity(count.min((self.buf.len() - self.pos) / 3));
        for _ in 0..count {
            items.push(self.value(depth + 1)?);
        }
        Ok(items)
    }

    #[allow(clippy::type_complexity)]
    fn pairs(
        &mut self,
        len_text: &[u8],
        depth: usize,
    ) -> Result<Vec<(Value<'a>, Value<'a>)>, ParseError> {
        let count = length(len_text)?;
        let mut pairs = Vec::with_capacity(count.min((self.buf.len() - self.pos) / 6));
        for _ in 0..count {
            let key = self.value(depth + 1)?;
            let value = self.value(depth + 1)?;
            pairs.push((key, value));
        }
        Ok(pairs)
    }
}

/// An integer reply: optional sign, then digits, fitting an i64.
fn int(text: &[u8]) -> Result<i64, ParseError> {
    // Rust's parser takes an optional `+` or `-` and rejects spaces and empty input.
    std::str::from_utf8(text)
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or(bad("integer out of range or malformed"))
}

fn length(text: &[u8]) -> Result<usize, ParseError> {
    if text == b"?" {
        return Err(bad("streamed RESP3 types are not supported"));
    }
    match int(text) {
        Ok(n) if n >= 0 => usize::try_from(n).map_err(|_| bad("length beyond memory")),
        _ => Err(bad("invalid length")),
    }
}

fn big_number(text: &[u8]) -> Result<(), ParseError> {
    let digits = text.strip_prefix(b"-").or_else(|| text.strip_prefix(b"+")).unwrap_or(text);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(bad("big number is not digits"));
    }
    Ok(())
}

fn double(text: &[u8]) -> Result<f64, ParseError> {
    // Rust's parser takes `inf`, `-inf`, `nan` and exponent forms, as RESP3 allows.
    std::str::from_utf8(text).ok().and_then(|s| s.parse().ok()).ok_or(bad("double is not a number"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: each RESP2/RESP3 type on the wire. Method: (bytes, value) table.
    #[test]
    fn reply_table() {
        let table: Vec<(&[u8], Value)> = vec![
            (b"+OK\r\n", Value::Simple(b"OK")),
            (b"-ERR x\r\n", Value::Error(b"ERR x")),
            (b":-7\r\n", Value::Integer(-7)),
            (b":+7\r\n", Value::Integer(7)),
            (b"$3\r\na\r\n\r\n", Value::Bulk(b"a\r\n")),
            (b"$-1\r\n", Value::NullBulk),
            (b"*-1\r\n", Value::NullArray),
            (b"*0\r\n", Value::Array(vec![])),
            (b"_\r\n", Value::Null),
            (b"#t\r\n", Value::Boolean(true)),
            (b",-1.5e3\r\n", Value::Double(-1500.0)),
            (b",inf\r\n", Value::Double(f64::INFINITY)),
            (
                b"(-123456789012345678901234567890\r\n",
                Value::BigNumber(b"-123456789012345678901234567890"),
            ),
            (b"!5\r\nERR x\r\n", Value::BulkError(b"ERR x")),
            (b"=7\r\ntxt:abc\r\n", Value::Verbatim { format: *b"txt", text: b"abc" }),
            (b"%1\r\n+k\r\n:1\r\n", Value::Map(vec![(Value::Simple(b"k"), Value::Integer(1))])),
            (b"~1\r\n_\r\n", Value::Set(vec![Value::Null])),
            (
                b">2\r\n+a\r\n*1\r\n:1\r\n",
                Value::Push(vec![Value::Simple(b"a"), Value::Array(vec![Value::Integer(1)])]),
            ),
            (
                b"|1\r\n+ttl\r\n:3\r\n$1\r\nv\r\n",
                Value::Attribute {
                    attrs: vec![(Value::Simple(b"ttl"), Value::Integer(3))],
                    value: Box::new(Value::Bulk(b"v")),
                },
            ),
        ];
        for (wire, want) in table {
            assert_eq!(
                parse_reply(wire),
                Ok((want.clone(), wire.len())),
                "{:?}",
                String::from_utf8_lossy(wire)
            );
            for cut in 0..wire.len() {
                assert_eq!(parse_reply(&wire[..cut]), Err(ParseError::Incomplete), "cut {cut}");
            }
        }
        let (nan, _) = parse_reply(b",nan\r\n").unwrap();
        assert!(matches!(nan, Value::Double(d) if d.is_nan()));
    }

    #[test]
    fn bad_replies_close() {
        let bad: &[&[u8]] = &[
            b"?\r\n",
            b":x\r\n",
            b":\r\n",
            b"$-2\r\n",
            b"$1\r\nab\r\n",
            b"#x\r\n",
            b"_x\r\n",
            b"=2\r\nab\r\n",
            b"*?\r\n",
            b"$?\r\n",
            b"+a\rb\r\n",
            b"(1.5\r\n",
            b",x\r\n",
            b":99999999999999999999\r\n",
        ];
        for wire in bad {
            assert!(
                matches!(parse_reply(wire), Err(ParseError::Close { .. })),
                "{:?}",
                String::from_utf8_lossy(wire)
            );
        }
        let mut deep = b"*1\r\n".repeat(DEPTH_MAX + 2);
        deep.extend_from_slice(b":1\r\n");
        assert!(matches!(parse_reply(&deep), Err(ParseError::Close { .. })));
        // A huge declared count with little data must not reserve memory up front.
        assert_eq!(parse_reply(b"*4000000000\r\n:1\r\n"), Err(ParseError::Incomplete));
    }
}
