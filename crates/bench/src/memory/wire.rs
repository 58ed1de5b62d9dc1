//! A blocking RESP connection for `memory`: a command at a time, or a pipelined batch whose
//! replies must all be integers (or XADD's IDs).

use std::{
    io::{Read, Write},
    net::TcpStream,
    time::Duration,
};

use proto_resp::{compose_command, parse_reply, ParseError, Value};

pub struct Wire {
    stream: TcpStream,
    input: Vec<u8>,
}

impl Wire {
    pub fn connect(addr: &str, timeout: Duration) -> Result<Wire, String> {
        let stream = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
        stream.set_read_timeout(Some(timeout)).map_err(|e| e.to_string())?;
        stream.set_write_timeout(Some(timeout)).map_err(|e| e.to_string())?;
        Ok(Wire { stream, input: Vec::new() })
    }

    /// Reads replies until `each` has seen `count` of them.
    fn replies(
        &mut self,
        count: u64,
        mut each: impl FnMut(Value<'_>) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut done = 0;
        let mut used = 0;
        while done < count {
            match parse_reply(&self.input[used..]) {
                Ok((value, n)) => {
                    used += n;
                    done += 1;
                    each(value)?;
                }
                Err(ParseError::Incomplete) => {
                    self.input.drain(..used);
                    used = 0;
                    let mut buf = [0u8; 64 * 1024];
                    let n = self.stream.read(&mut buf).map_err(|e| format!("read: {e}"))?;
                    if n == 0 {
                        return Err("the server closed the connection".into());
                    }
                    self.input.extend_from_slice(&buf[..n]);
                }
                Err(e) => return Err(format!("malformed reply: {e:?}")),
            }
        }
        self.input.drain(..used);
        Ok(())
    }

    fn send(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.stream.write_all(bytes).map_err(|e| format!("write: {e}"))
    }

    /// Sends a batch of `count` commands and checks that each answered an integer (or, an
    /// XADD, its entry's ID).
    pub fn send_and_count(&mut self, bytes: &[u8], count: u64) -> Result<(), String> {
        self.send(bytes)?;
        self.replies(count, |value| match value {
            Value::Integer(_) | Value::Bulk(_) => Ok(()),
            other => Err(format!("a load command answered {}", describe(&other))),
        })
    }

    /// One command whose reply is `+OK` (or any simple string).
    pub fn command(&mut self, args: &[&[u8]]) -> Result<(), String> {
        let mut out = Vec::new();
        compose_command(args, &mut out);
        self.send(&out)?;
        self.replies(1, |value| match value {
            Value::Simple(_) => Ok(()),
            other => Err(format!("{} answered {}", show(args[0]), describe(&other))),
        })
    }

    pub fn integer(&mut self, args: &[&[u8]]) -> Result<i64, String> {
        let mut out = Vec::new();
        compose_command(args, &mut out);
        self.send(&out)?;
        let mut n = 0;
        self.replies(1, |value| match value {
            Value::Integer(i) => {
                n = i;
                Ok(())
            }
            other => Err(format!("{} answered {}", show(args[0]), describe(&other))),
        })?;
        Ok(n)
    }

    /// `used_memory` from `INFO memory`.
    pub fn used_memory(&mut self) -> Result<u64, String> {
        let mut out = Vec::new();
        compose_command(&[b"INFO", b"memory"], &mut out);
        self.send(&out)?;
        let mut used = None;
        self.replies(1, |value| {
            let text = match value {
                Value::Bulk(text) | Value::Verbatim { text, .. } => text,
                other => return Err(format!("INFO memory answered {}", describe(&other))),
            };
            used = used_memory_of(text);
            Ok(())
        })?;
        used.ok_or("INFO memory has no used_memory line".into())
    }
}

/// The `used_memory:N` line of an INFO reply.
pub fn used_memory_of(info: &[u8]) -> Option<u64> {
    String::from_utf8_lossy(info)
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|n| n.trim().parse().ok())
}

fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn describe(value: &Value<'_>) -> String {
    match value {
        Value::Error(e) | Value::BulkError(e) => format!("-{}", show(e)),
        other => format!("{other:?}").chars().take(80).collect(),
    }
}
