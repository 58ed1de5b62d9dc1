//! A parsed reply: every RESP2 and RESP3 type, borrowing strings from the input.

use crate::reply::{format_double, write_i64};

/// One RESP value. Strings borrow from the buffer they were parsed from.
///
/// RESP2's two nulls (`$-1`, `*-1`) and RESP3's `_` are kept apart so that
/// `parse_reply(encode(v)) == v` holds for every value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    /// `+text`
    Simple(&'a [u8]),
    /// `-CODE message` (without the `-`)
    Error(&'a [u8]),
    /// `:n`
    Integer(i64),
    /// `$len` bytes
    Bulk(&'a [u8]),
    /// `$-1` (RESP2 null)
    NullBulk,
    /// `*-1` (RESP2 null array)
    NullArray,
    /// `*n` elements
    Array(Vec<Value<'a>>),
    /// `_` (RESP3 null)
    Null,
    /// `#t` / `#f`
    Boolean(bool),
    /// `,d`
    Double(f64),
    /// `(digits`
    BigNumber(&'a [u8]),
    /// `!len` bytes: an error that may hold any bytes
    BulkError(&'a [u8]),
    /// `=len` `fmt:text`
    Verbatim { format: [u8; 3], text: &'a [u8] },
    /// `%n` key/value pairs
    Map(Vec<(Value<'a>, Value<'a>)>),
    /// `~n` elements
    Set(Vec<Value<'a>>),
    /// `|n` pairs of metadata, then the value they describe
    Attribute { attrs: Vec<(Value<'a>, Value<'a>)>, value: Box<Value<'a>> },
    /// `>n` out-of-band elements
    Push(Vec<Value<'a>>),
}

impl Value<'_> {
    /// True for any of the three nulls.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null | Value::NullBulk | Value::NullArray)
    }

    /// The bytes of a simple string, bulk string or verbatim string.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Simple(s) | Value::Bulk(s) | Value::Verbatim { text: s, .. } => Some(s),
            _ => None,
        }
    }

    /// Writes the value with exactly its own type markers (no version translation; use
    /// [`crate::Reply`] for that). CR and LF inside simple strings and errors become
    /// spaces, since those types cannot carry them.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Value::Simple(s) => line(b'+', s, out),
            Value::Error(s) => line(b'-', s, out),
            Value::Integer(n) => header(b':', *n, out),
            Value::Bulk(s) => blob(b'$', s, out),
            Value::NullBulk => out.extend_from_slice(b"$-1\r\n"),
            Value::NullArray => out.extend_from_slice(b"*-1\r\n"),
            Value::Array(items) => aggregate(b'*', items, out),
            Value::Null => out.extend_from_slice(b"_\r\n"),
            Value::Boolean(b) => out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" }),
            Value::Double(d) => {
                out.push(b',');
                format_double(*d, out);
                out.extend_from_slice(b"\r\n");
            }
            Value::BigNumber(s) => line(b'(', s, out),
            Value::BulkError(s) => blob(b'!', s, out),
            Value::Verbatim { format, text } => {
                header(b'=', (text.len() + 4) as i64, out);
                out.extend_from_slice(format);
                out.push(b':');
                out.extend_from_slice(text);
                out.extend_from_slice(b"\r\n");
            }
            Value::Map(pairs) => pairs_aggregate(b'%', pairs, out),
            Value::Set(items) => aggregate(b'~', items, out),
            Value::Attribute { attrs, value } => {
                pairs_aggregate(b'|', attrs, out);
                value.encode(out);
            }
            Value::Push(items) => aggregate(b'>', items, out),
        }
    }
}

fn line(prefix: u8, text: &[u8], out: &mut Vec<u8>) {
    out.push(prefix);
    out.extend(text.iter().map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
    out.extend_from_slice(b"\r\n");
}

fn header(prefix: u8, n: i64, out: &mut Vec<u8>) {
    out.push(prefix);
    write_i64(n, out);
    out.extend_from_slice(b"\r\n");
}

fn blob(prefix: u8, data: &[u8], out: &mut Vec<u8>) {
    header(prefix, data.len() as i64, out);
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
}

fn aggregate(prefix: u8, items: &[Value<'_>], out: &mut Vec<u8>) {
    header(prefix, items.len() as i64, out);
    for item in items {
        item.encode(out);
    }
}

fn pairs_aggregate(prefix: u8, pairs: &[(Value<'_>, Value<'_>)], out: &mut Vec<u8>) {
    header(prefix, pairs.len() as i64, out);
    for (key, value) in pairs {
        key.encode(out);
        value.encode(out);
    }
}
