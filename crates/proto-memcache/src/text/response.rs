//! Text-protocol replies: composing them (server) and the pieces [`crate::parse_response`]
//! uses to read them (client).
//!
//! ```text
//!  VALUE <key> <flags> <bytes> [<cas unique>]\r\n<data>\r\n ... END\r\n
//!  STAT <name> <value>\r\n ... END\r\n
//!  STORED | NOT_STORED | EXISTS | NOT_FOUND | DELETED | TOUCHED | OK | <number> | VERSION <v>
//! ```

use crate::{
    error::ResponseError,
    line::{parse_u32, parse_u64, push_u64, tokens},
};

/// A one-word reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    Stored,
    NotStored,
    Exists,
    NotFound,
    Deleted,
    Touched,
    Ok,
    /// `RESET`, the reply to `stats reset`.
    Reset,
}

impl Status {
    pub fn as_bytes(&self) -> &'static [u8] {
        match self {
            Status::Stored => b"STORED",
            Status::NotStored => b"NOT_STORED",
            Status::Exists => b"EXISTS",
            Status::NotFound => b"NOT_FOUND",
            Status::Deleted => b"DELETED",
            Status::Touched => b"TOUCHED",
            Status::Ok => b"OK",
            Status::Reset => b"RESET",
        }
    }

    pub(crate) fn from_bytes(word: &[u8]) -> Option<Status> {
        Some(match word {
            b"STORED" => Status::Stored,
            b"NOT_STORED" => Status::NotStored,
            b"EXISTS" => Status::Exists,
            b"NOT_FOUND" => Status::NotFound,
            b"DELETED" => Status::Deleted,
            b"TOUCHED" => Status::Touched,
            b"OK" => Status::Ok,
            b"RESET" => Status::Reset,
            _ => return None,
        })
    }
}

/// Appends `STORED\r\n` and the like.
pub fn compose_status(status: Status, buf: &mut Vec<u8>) {
    buf.extend_from_slice(status.as_bytes());
    buf.extend_from_slice(b"\r\n");
}

/// Appends one item of a get reply; `cas` for `gets`/`gats`.
pub fn compose_value(key: &[u8], flags: u32, data: &[u8], cas: Option<u64>, buf: &mut Vec<u8>) {
    if key.len() <= SHORT_KEY_MAX && data.len() <= SHORT_DATA_MAX {
        return compose_short_value(key, flags, data, cas, buf);
    }
    // "VALUE " + key + up to three numbers with their spaces + two CRLFs: one reservation.
    buf.reserve(key.len() + data.len() + 6 + 3 * 21 + 4);
    compose_value_head(key, flags, data.len(), cas, buf);
    buf.extend_from_slice(data);
    buf.extend_from_slice(b"\r\n");
}

/// Appends the `VALUE` line of a hit whose `len` bytes of data follow (then `\r\n`), for
/// a writer that sends the data from elsewhere.
#[inline]
pub fn compose_value_head(key: &[u8], flags: u32, len: usize, cas: Option<u64>, buf: &mut Vec<u8>) {
    if key.len() <= SHORT_KEY_MAX {
        return compose_short_header(key, flags, len, cas, buf);
    }
    buf.extend_from_slice(b"VALUE ");
    buf.extend_from_slice(key);
    buf.push(b' ');
    push_u64(buf, u64::from(flags));
    buf.push(b' ');
    push_u64(buf, len as u64);
    if let Some(cas) = cas {
        buf.push(b' ');
        push_u64(buf, cas);
    }
    buf.extend_from_slice(b"\r\n");
}

/// Keys up to this long have their `VALUE` line made in a stack buffer and appended in one
/// copy (the separate appends of the line's seven pieces cost about 60 instructions more).
const SHORT_KEY_MAX: usize = 64;
const SHORT_HEADER_MAX: usize = b"VALUE ".len() + SHORT_KEY_MAX + 3 * 21 + 2;

/// Values up to this long are written with their `VALUE` line into one stack buffer and
/// appended in one copy (the line, the data and the CRLF appended apiece cost two calls to
/// `memcpy` and a capacity check more per hit).
const SHORT_DATA_MAX: usize = 32;

/// The `VALUE` line of a key of at most [`SHORT_KEY_MAX`] bytes.
#[inline(always)]
fn compose_short_header(key: &[u8], flags: u32, len: usize, cas: Option<u64>, buf: &mut Vec<u8>) {
    let mut line = [0u8; SHORT_HEADER_MAX];
    let at = put_short_header(&mut line, key, flags, len, cas);
    buf.extend_from_slice(&line[..at]);
}

/// A whole hit, its key of at most [`SHORT_KEY_MAX`] bytes and its data of at most
/// [`SHORT_DATA_MAX`]: made in a stack buffer, appended once.
#[inline(always)]
fn compose_short_value(key: &[u8], flags: u32, data: &[u8], cas: Option<u64>, buf: &mut Vec<u8>) {
    let mut line = [0u8; SHORT_HEADER_MAX + SHORT_DATA_MAX + 2];
    let at = put_short_header(&mut line, key, flags, data.len(), cas);
    copy_short(&mut line[at..], data);
    let end = at + data.len();
    line[end..end + 2].copy_from_slice(b"\r\n");
    buf.extend_from_slice(&line[..end + 2]);
}

/// Writes the `VALUE` line of a key of at most [`SHORT_KEY_MAX`] bytes at the start of
/// `line`; returns where it ends (after its CRLF).
#[inline(always)]
fn put_short_header(
    line: &mut [u8],
    key: &[u8],
    flags: u32,
    len: usize,
    cas: Option<u64>,
) -> usize {
    line[..6].copy_from_slice(b"VALUE ");
    copy_short(&mut line[6..], key);
    let mut at = 6 + key.len();
    at = put_number(line, at, u64::from(flags));
    at = put_number(line, at, len as u64);
    if let Some(cas) = cas {
        at = put_number(line, at, cas);
    }
    line[at..at + 2].copy_from_slice(b"\r\n");
    at + 2
}

/// Copies `src`, at most 64 bytes, to the start of `dst` as two overlapping fixed-size
/// copies (which compile to a few moves), not a call to `memcpy` sized at run time.
#[inline(always)]
fn copy_short(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    debug_assert!(n <= 64);
    match n {
        32..=64 => copy_pair::<32>(dst, src),
        16..=31 => copy_pair::<16>(dst, src),
        8..=15 => copy_pair::<8>(dst, src),
        4..=7 => copy_pair::<4>(dst, src),
        _ => dst[..n].copy_from_slice(src),
    }
}

/// `src`'s first and last `N` bytes to the same places of `dst` (`N <= src.len() <= 2N`).
#[inline(always)]
fn copy_pair<const N: usize>(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    dst[..N].copy_from_slice(&src[..N]);
    dst[n - N..n].copy_from_slice(&src[n - N..]);
}

/// Writes a space and `value` in decimal at `at`; returns where they end.
#[inline(always)]
fn put_number(line: &mut [u8], at: usize, value: u64) -> usize {
    line[at] = b' ';
    if value < 10 {
        line[at + 1] = b'0' + value as u8;
        return at + 2;
    }
    if value < 100 {
        // Two digits (a short value's length): without itoa's 20 instructions.
        line[at + 1] = b'0' + (value / 10) as u8;
        line[at + 2] = b'0' + (value % 10) as u8;
        return at + 3;
    }
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(value).as_bytes();
    line[at + 1..at + 1 + digits.len()].copy_from_slice(digits);
    at + 1 + digits.len()
}

/// Appends `END\r\n`, which closes a get or stats reply.
pub fn compose_end(buf: &mut Vec<u8>) {
    buf.extend_from_slice(b"END\r\n");
}

/// Appends the new value an `incr`/`decr` produced.
pub fn compose_number(value: u64, buf: &mut Vec<u8>) {
    push_u64(buf, value);
    buf.extend_from_slice(b"\r\n");
}

/// Appends `VERSION <version>\r\n`.
pub fn compose_version(version: &[u8], buf: &mut Vec<u8>) {
    buf.extend_from_slice(b"VERSION ");
    buf.extend_from_slice(version);
    buf.extend_from_slice(b"\r\n");
}

/// Appends `STAT <name> <value>\r\n`.
pub fn compose_stat(name: &[u8], value: &[u8], buf: &mut Vec<u8>) {
    buf.extend_from_slice(b"STAT ");
    buf.extend_from_slice(name);
    buf.push(b' ');
    buf.extend_from_slice(value);
    buf.extend_from_slice(b"\r\n");
}

/// Appends `STAT <name> <value>\r\n` for a counter, without formatting through a string.
pub fn compose_stat_u64(name: &[u8], value: u64, buf: &mut Vec<u8>) {
    buf.extend_from_slice(b"STAT ");
    buf.extend_from_slice(name);
    buf.push(b' ');
    push_u64(buf, value);
    buf.extend_from_slice(b"\r\n");
}

/// One `VALUE` item of a get reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueItem<'a> {
    pub key: &'a [u8],
    pub flags: u32,
    pub cas: Option<u64>,
    pub data: &'a [u8],
}

/// The items of a `VALUE ... END` reply, read in place: the block was checked whole when
/// it was parsed, and is walked again on iteration instead of being copied into a list.
#[derive(Clone, Copy, Debug, Default)]
pub struct Values<'a> {
    /// From the first `VALUE` to just before `END`.
    raw: &'a [u8],
    count: usize,
}

impl<'a> Values<'a> {
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = ValueItem<'a>> + Clone {
        let mut rest = self.raw;
        std::iter::from_fn(move || {
            let (item, used) = parse_value_item(rest, usize::MAX).ok()?;
            rest = &rest[used..];
            Some(item)
        })
    }
}

impl PartialEq for Values<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.count == other.count && self.iter().eq(other.iter())
    }
}

impl Eq for Values<'_> {}

/// The `STAT` lines of a stats reply, read in place like [`Values`].
#[derive(Clone, Copy, Debug, Default)]
pub struct StatLines<'a> {
    raw: &'a [u8],
    count: usize,
}

impl<'a> StatLines<'a> {
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// `(name, value)` pairs; the value is everything after the name.
    pub fn iter(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone {
        self.raw.split(|&b| b == b'\n').filter_map(|line| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let rest = line.strip_prefix(b"STAT ")?;
            let split = rest.iter().position(|&b| b == b' ').unwrap_or(rest.len());
            Some((&rest[..split], rest.get(split + 1..).unwrap_or(&[])))
        })
    }
}

impl PartialEq for StatLines<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.count == other.count && self.iter().eq(other.iter())
    }
}

impl Eq for StatLines<'_> {}

/// The first line of `buf` without its terminator, and the bytes it spans; errors if it is
/// longer than `line_len_max`.
pub(crate) fn response_line(
    buf: &[u8],
    line_len_max: usize,
) -> Result<(&[u8], usize), ResponseError> {
    let window = &buf[..buf.len().min(line_len_max.saturating_add(2))];
    match window.iter().position(|&b| b == b'\n') {
        Some(index) => {
            let line = &buf[..index];
            Ok((line.strip_suffix(b"\r").unwrap_or(line), index + 1))
        }
        // A full window with no newline can only grow into a line that is too long.
        None if window.len() >= line_len_max.saturating_add(2) => {
            Err(ResponseError::Malformed { reason: "response line too long" })
        }
        None => Err(ResponseError::Incomplete),
    }
}

/// One `VALUE` line and its data block at the start of `buf`.
fn parse_value_item(
    buf: &[u8],
    line_len_max: usize,
) -> Result<(ValueItem<'_>, usize), ResponseError> {
    let malformed = ResponseError::Malformed { reason: "bad VALUE line" };
    let (line, line_len) = response_line(buf, line_len_max)?;
    let mut words = tokens(line);
    if words.next() != Some(b"VALUE") {
        return Err(malformed);
    }
    let key = words.next().ok_or(malformed)?;
    let flags = words.next().and_then(parse_u32).ok_or(malformed)?;
    let data_len = words.next().and_then(parse_u64).ok_or(malformed)?;
    let cas = match words.next() {
        Some(word) => Some(parse_u64(word).ok_or(malformed)?),
        None => None,
    };
    if words.next().is_some() {
        return Err(malformed);
    }
    let data_len = usize::try_from(data_len).map_err(|_| malformed)?;
    let data_end = line_len.checked_add(data_len).ok_or(malformed)?;
    let terminator = buf.get(data_end..data_end + 2).ok_or(ResponseError::Incomplete)?;
    if terminator != b"\r\n" {
        return Err(ResponseError::Malformed { reason: "bad data chunk" });
    }
    let item = ValueItem { key, flags, cas, data: &buf[line_len..data_end] };
    Ok((item, data_end + 2))
}

/// A whole `VALUE ... END` reply at the start of `buf` (which starts with `VALUE `).
pub(crate) fn parse_values(
    buf: &[u8],
    line_len_max: usize,
    value_len_max: usize,
) -> Result<(Values<'_>, usize), ResponseError> {
    let mut offset = 0;
    let mut count = 0;
    loop {
        let rest = &buf[offset..];
        if rest.starts_with(b"VALUE ") {
            let (item, used) = parse_value_item(rest, line_len_max)?;
            if item.data.len() > value_len_max {
                return Err(ResponseError::Malformed { reason: "value too large" });
            }
            offset += used;
            count += 1;
            continue;
        }
        let (line, used) = response_line(rest, line_len_max)?;
        if line != b"END" {
            return Err(ResponseError::Malformed { reason: "expected VALUE or END" });
        }
        return Ok((Values { raw: &buf[..offset], count }, offset + used));
    }
}

/// A whole `STAT ... END` reply at the start of `buf` (which starts with `STAT `).
pub(crate) fn parse_stats(
    buf: &[u8],
    line_len_max: usize,
) -> Result<(StatLines<'_>, usize), ResponseError> {
    let mut offset = 0;
    let mut count = 0;
    loop {
        let (line, used) = response_line(&buf[offset..], line_len_max)?;
        if line == b"END" {
            return Ok((StatLines { raw: &buf[..offset], count }, offset + used));
        }
        if !line.starts_with(b"STAT ") {
            return Err(ResponseError::Malformed { reason: "expected STAT or END" });
        }
        offset += used;
        count += 1;
    }
}
