//! The response type and [`parse_response`], for the client side (the load generator, the
//! tests); the server composes replies with the helpers in [`crate::text::response`] and
//! [`crate::meta::response`].

use crate::{
    error::{ErrorReply, ResponseError},
    limits::Limits,
    line::parse_u64,
    meta::{self, MetaStatus},
    text::response::{self as text, StatLines, Status, Values},
};

/// One complete reply from a memcached server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Response<'a> {
    /// `VALUE ... END`; a bare `END` is an empty one (a get that found nothing, or stats
    /// with nothing to report).
    Values(Values<'a>),
    /// `STAT ... END` with at least one line.
    Stats(StatLines<'a>),
    Status(Status),
    /// The new value after `incr`/`decr`.
    Number(u64),
    /// `VERSION <version>`.
    Version(&'a [u8]),
    /// `ERROR`.
    Error,
    /// `CLIENT_ERROR <reason>`.
    ClientError(&'a [u8]),
    /// `SERVER_ERROR <reason>`.
    ServerError(&'a [u8]),
    /// `HD`, `VA`, `EN`, `NS`, `EX`, `NF`, `MN`.
    Meta(meta::MetaResponse<'a>),
    /// `ME <key> <info>`: `info` is the rest of the line (`exp=.. la=.. cas=..`).
    MetaDebug {
        key: &'a [u8],
        info: &'a [u8],
    },
}

/// Parses the reply at the start of `buf`, and returns how many bytes it took.
///
/// Lines may end in `\r\n` or `\n`; data blocks must end in `\r\n`. A line longer than
/// `limits.line_len_max` or a value longer than `limits.value_len_max` is malformed.
///
/// ```
/// use proto_memcache::{parse_response, Limits, Response};
/// let wire = b"VALUE k 0 2\r\nhi\r\nEND\r\n";
/// let (response, consumed) = parse_response(wire, &Limits::default()).expect("complete");
/// let Response::Values(values) = response else { panic!("a get reply") };
/// assert_eq!(values.iter().next().map(|item| item.data), Some(&b"hi"[..]));
/// assert_eq!(consumed, wire.len());
/// ```
pub fn parse_response<'a>(
    buf: &'a [u8],
    limits: &Limits,
) -> Result<(Response<'a>, usize), ResponseError> {
    if buf.starts_with(b"VALUE ") {
        let (values, used) = text::parse_values(buf, limits.line_len_max, limits.value_len_max)?;
        return Ok((Response::Values(values), used));
    }
    if buf.starts_with(b"STAT ") {
        let (stats, used) = text::parse_stats(buf, limits.line_len_max)?;
        return Ok((Response::Stats(stats), used));
    }
    let (line, used) = text::response_line(buf, limits.line_len_max)?;
    let malformed = ResponseError::Malformed { reason: "unknown reply" };
    let (word, rest) = match line.iter().position(|&b| b == b' ') {
        Some(space) => (&line[..space], &line[space + 1..]),
        None => (line, &line[line.len()..]),
    };
    let response = match word {
        b"END" if rest.is_empty() => Response::Values(Values::default()),
        b"ERROR" if rest.is_empty() => Response::Error,
        b"CLIENT_ERROR" => Response::ClientError(rest),
        b"SERVER_ERROR" => Response::ServerError(rest),
        b"VERSION" => Response::Version(rest),
        b"ME" => {
            let split = rest.iter().position(|&b| b == b' ').unwrap_or(rest.len());
            let info = rest.get(split + 1..).unwrap_or(&[]);
            Response::MetaDebug { key: &rest[..split], info }
        }
        _ => {
            if let Some(status) = Status::from_bytes(word).filter(|_| rest.is_empty()) {
                Response::Status(status)
            } else if let Some(status) = MetaStatus::from_bytes(word) {
                let (reply, used) =
                    meta::response::parse(buf, line, used, status, limits.value_len_max)?;
                return Ok((Response::Meta(reply), used));
            } else {
                // memcached may pad a shrunken number with spaces.
                let digits =
                    line.iter().rposition(|&b| b != b' ').map_or(line, |end| &line[..=end]);
                Response::Number(parse_u64(digits).ok_or(malformed)?)
            }
        }
    };
    Ok((response, used))
}

impl Response<'_> {
    /// Appends the reply as a server sends it.
    pub fn compose(&self, buf: &mut Vec<u8>) {
        match self {
            Response::Values(values) => {
                for item in values.iter() {
                    text::compose_value(item.key, item.flags, item.data, item.cas, buf);
                }
                text::compose_end(buf);
            }
            Response::Stats(stats) => {
                for (name, value) in stats.iter() {
                    text::compose_stat(name, value, buf);
                }
                text::compose_end(buf);
            }
            Response::Status(status) => text::compose_status(*status, buf),
            Response::Number(value) => text::compose_number(*value, buf),
            Response::Version(version) => text::compose_version(version, buf),
            Response::Error => ErrorReply::Error.compose(buf),
            Response::ClientError(reason) => compose_error(b"CLIENT_ERROR ", reason, buf),
            Response::ServerError(reason) => compose_error(b"SERVER_ERROR ", reason, buf),
            Response::Meta(reply) => reply.compose(buf),
            Response::MetaDebug { key, info } => {
                buf.extend_from_slice(b"ME ");
                buf.extend_from_slice(key);
                if !info.is_empty() {
                    buf.push(b' ');
                    buf.extend_from_slice(info);
                }
                buf.extend_from_slice(b"\r\n");
            }
        }
    }
}

/// An error line with a reason known only at run time (the server's own are
/// [`ErrorReply`]s).
fn compose_error(prefix: &[u8], reason: &[u8], buf: &mut Vec<u8>) {
    buf.extend_from_slice(prefix);
    buf.extend_from_slice(reason);
    buf.extend_from_slice(b"\r\n");
}

/// Appends `ME <key> <info>\r\n`; `info` is memcached's `exp=.. la=.. cas=.. fetch=..
/// cls=.. size=..`, the server's to fill in.
pub fn compose_meta_debug(key: &[u8], info: &[u8], buf: &mut Vec<u8>) {
    Response::MetaDebug { key, info }.compose(buf);
}
