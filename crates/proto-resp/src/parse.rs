//! Request parsing: bytes in, one command out, plus how many bytes it used.
//!
//! ```text
//!   multibulk:  *<argc>\r\n  $<len>\r\n<len bytes>\r\n  ... argc times
//!   inline:     anything not starting with '*', up to \n (an optional \r before it is
//!               dropped), split into words by the rules in `inline.rs`
//! ```
//!
//! A `Command` keeps one span (offset, length) per argument into the input, or into its own
//! scratch buffer for inline words that needed unquoting; arguments are never copied one by
//! one. The span and scratch vectors can be recycled across calls with
//! [`Command::into_storage`] and [`parse_command_in`].
//!
//! The parser has no state between calls: on `Incomplete`, call again with the same bytes
//! and more. Re-parsing costs one pass over the length lines (not over bulk data), so a
//! request with many arguments that trickles in costs O(argc) per call.
//!
//! Behaviour follows Redis's `processMultibulkBuffer` / `processInlineBuffer`: every framing
//! error is [`ParseError::Close`] with the reply Redis sends before it hangs up; `*0` and
//! `*-1` and blank inline lines are empty commands that get no reply.

use crate::{
    args::parse_i64,
    error::{ParseError, ProtocolError},
    inline,
    limits::{Limits, UNAUTHENTICATED_ARGS_MAX, UNAUTHENTICATED_BULK_LEN_MAX},
};

/// Where one argument lives: in the input, or in the command's scratch buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Span {
    start: usize,
    len: usize,
    in_scratch: bool,
}

impl Span {
    pub(crate) fn input(start: usize, len: usize) -> Span {
        Span { start, len, in_scratch: false }
    }

    pub(crate) fn scratch(start: usize, len: usize) -> Span {
        Span { start, len, in_scratch: true }
    }
}

/// Reusable backing storage for commands: hand it back to [`parse_command_in`] to parse
/// the next command without allocating.
#[derive(Debug, Default)]
pub struct ArgStorage {
    spans: Vec<Span>,
    scratch: Vec<u8>,
}

/// A parsed request. Arguments borrow from the input buffer (or from the command itself
/// for quoted inline words).
#[derive(Debug)]
pub struct Command<'a> {
    input: &'a [u8],
    spans: Vec<Span>,
    scratch: Vec<u8>,
}

impl<'a> Command<'a> {
    /// Number of arguments, the command name included.
    #[inline]
    pub fn argc(&self) -> usize {
        self.spans.len()
    }

    /// True for an empty command (`*0`, `*-1`, a blank inline line): consume it, reply
    /// nothing.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Argument `index` (0 is the command name).
    #[inline]
    pub fn arg(&self, index: usize) -> Option<&[u8]> {
        self.spans.get(index).map(|span| self.resolve(*span))
    }

    /// The command name as sent (any case), or `None` for an empty command.
    #[inline]
    pub fn name(&self) -> Option<&[u8]> {
        self.arg(0)
    }

    /// All arguments in order, the command name first.
    pub fn args(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        self.spans.iter().map(|span| self.resolve(*span))
    }

    /// A command whose arguments lie one after the other in `input`, argument `i` ending
    /// at `ends[i]` (ends ascending, within `input`): built without RESP, for a caller that
    /// has the arguments already (a script's `redis.call`). `storage` is reused.
    pub fn from_joined(input: &'a [u8], ends: &[usize], storage: ArgStorage) -> Command<'a> {
        let ArgStorage { mut spans, scratch } = storage;
        spans.clear();
        let mut start = 0;
        for &end in ends {
            let end = end.clamp(start, input.len());
            spans.push(Span::input(start, end - start));
            start = end;
        }
        Command { input, spans, scratch }
    }

    /// Gives back the (cleared) vectors for the next [`parse_command_in`].
    pub fn into_storage(mut self) -> ArgStorage {
        self.spans.clear();
        self.scratch.clear();
        ArgStorage { spans: self.spans, scratch: self.scratch }
    }

    #[inline]
    fn resolve(&self, span: Span) -> &[u8] {
        let source = if span.in_scratch { &self.scratch[..] } else { self.input };
        &source[span.start..span.start + span.len]
    }
}

impl PartialEq for Command<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.args().eq(other.args())
    }
}

/// Parses one request from the front of `buf`.
///
/// Returns the command and the number of bytes it used. Blank inline lines and `*0` in
/// front of a command are skipped; if only such blanks are complete, they come back as one
/// empty command so the caller can drop them.
///
/// ```
/// use proto_resp::{parse_command, Limits, ParseError};
/// let limits = Limits::default();
/// let (cmd, used) = parse_command(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n", &limits).unwrap();
/// assert_eq!(cmd.args().collect::<Vec<_>>(), [&b"GET"[..], b"k"]);
/// assert_eq!(used, 20);
/// assert_eq!(parse_command(b"*2\r\n$3\r\nGE", &limits).unwrap_err(), ParseError::Incomplete);
/// ```
pub fn parse_command<'a>(
    buf: &'a [u8],
    limits: &Limits,
) -> Result<(Command<'a>, usize), ParseError> {
    parse_command_in(buf, limits, ArgStorage::default())
}

/// [`parse_command`], reusing `storage` from an earlier [`Command::into_storage`].
pub fn parse_command_in<'a>(
    buf: &'a [u8],
    limits: &Limits,
    storage: ArgStorage,
) -> Result<(Command<'a>, usize), ParseError> {
    let ArgStorage { mut spans, mut scratch } = storage;
    spans.clear();
    scratch.clear();
    if let Some(end) = short_multibulk(buf, limits, &mut spans) {
        return Ok((Command { input: buf, spans, scratch }, end));
    }
    parse_general(buf, limits, spans, scratch)
}

/// The usual request of a client library, `*<1-9>\r` and that many bulk strings whose
/// headers [`short_bulk_header`] reads, all in `buf`: read in one pass, without the length
/// line search and number parse of the general path. `None` (with `spans` empty) for
/// anything else, which [`parse_general`] then reads; where this returns, the general path
/// returns the same (`short_multibulk_is_the_general_parse`).
#[inline(always)]
fn short_multibulk(buf: &[u8], limits: &Limits, spans: &mut Vec<Span>) -> Option<usize> {
    // The general path's conditions for this count line: its CR inside the length-line
    // window, a byte after it, a count within `args_max` (never above the
    // unauthenticated bound of 10).
    let &[b'*', count @ b'1'..=b'9', b'\r', _, ..] = buf else { return None };
    let argc = usize::from(count - b'0');
    if limits.inline_len_max < 2 || argc > limits.args_max {
        return None;
    }
    spans.reserve(argc);
    let mut pos = 4;
    for _ in 0..argc {
        let Some((len, data_start)) = short_bulk_header(buf, pos, limits) else {
            spans.clear();
            return None;
        };
        let end = data_start + len + 2;
        if end > buf.len() {
            spans.clear();
            return None;
        }
        spans.push(Span::input(data_start, len));
        pos = end;
    }
    Some(pos)
}

/// [`parse_command_in`] without the short form: any framing, blanks, errors.
fn parse_general<'a>(
    buf: &'a [u8],
    limits: &Limits,
    mut spans: Vec<Span>,
    mut scratch: Vec<u8>,
) -> Result<(Command<'a>, usize), ParseError> {
    let mut pos = 0;
    // Each pass either returns or consumes at least one byte (an empty command), so the
    // loop runs at most `buf.len()` times.
    while pos < buf.len() {
        let result = if buf[pos] == b'*' {
            parse_multibulk(buf, pos, limits, &mut spans)
        } else {
            parse_inline(buf, pos, limits, &mut spans, &mut scratch)
        };
        match result {
            Ok(end) if spans.is_empty() => pos = end,
            Ok(end) => return Ok((Command { input: buf, spans, scratch }, end)),
            Err(ParseError::Incomplete) if pos > 0 => break,
            Err(error) => return Err(error),
        }
    }
    if pos == 0 {
        return Err(ParseError::Incomplete);
    }
    spans.clear();
    scratch.clear();
    Ok((Command { input: buf, spans, scratch }, pos))
}

/// Parses `*<argc>\r\n` and `argc` bulk strings starting at `start`; returns the end.
fn parse_multibulk(
    buf: &[u8],
    start: usize,
    limits: &Limits,
    spans: &mut Vec<Span>,
) -> Result<usize, ParseError> {
    let (digits, mut pos) = length_line(buf, start, limits, ProtocolError::TooBigMbulkCount)?;
    let argc = match parse_i64(digits) {
        Ok(n) if n <= 0 => return Ok(pos),
        Ok(n) if n as u64 <= limits.args_max as u64 => n as usize,
        _ => return Err(close(ProtocolError::InvalidMultibulkLength)),
    };
    if limits.unauthenticated && argc > UNAUTHENTICATED_ARGS_MAX {
        return Err(close(ProtocolError::UnauthenticatedMultibulkLength));
    }
    // A hostile `*1000000` must not reserve a million spans before any argument arrives.
    spans.reserve(argc.min(1024));
    for _ in 0..argc {
        let (len, data_start) = bulk_header(buf, pos, limits, spans)?;
        // Two more bytes for the CRLF. Redis skips them without looking at them, and so
        // do we: checking would turn input Redis accepts into a hang-up.
        let end = data_start + len + 2;
        if end > buf.len() {
            spans.clear();
            return Err(ParseError::Incomplete);
        }
        spans.push(Span::input(data_start, len));
        pos = end;
    }
    Ok(pos)
}

/// The length and data start of the bulk string whose `$` line starts at `pos`: the short
/// form in one pass, else the general line (errors as Redis gives them; `spans` is cleared
/// where Redis would drop the request).
fn bulk_header(
    buf: &[u8],
    pos: usize,
    limits: &Limits,
    spans: &mut Vec<Span>,
) -> Result<(usize, usize), ParseError> {
    if let Some(header) = short_bulk_header(buf, pos, limits) {
        return Ok(header);
    }
    let (digits, data_start) = length_line(buf, pos, limits, ProtocolError::TooBigBulkCount)?;
    // Redis looks for the whole line first and only then at its first byte, so a
    // wrong type byte waits for its CR like everything else.
    if buf[pos] != b'$' {
        spans.clear();
        return Err(close(ProtocolError::ExpectedDollar(buf[pos])));
    }
    match parse_i64(digits) {
        Ok(n) if n >= 0 && n as u64 <= limits.bulk_len_max as u64 => {
            if limits.unauthenticated && n as usize > UNAUTHENTICATED_BULK_LEN_MAX {
                spans.clear();
                return Err(close(ProtocolError::UnauthenticatedBulkLength));
            }
            Ok((n as usize, data_start))
        }
        _ => {
            spans.clear();
            Err(close(ProtocolError::InvalidBulkLength))
        }
    }
}

/// The usual bulk header, `$` and one to four digits (no leading zero) and CR and one more
/// byte, read in one pass: returns the length and where the data starts. Anything else
/// (longer, malformed, not all there yet) is `None` and goes through [`length_line`] and
/// [`parse_i64`], which accept exactly the same headers.
#[inline(always)]
fn short_bulk_header(buf: &[u8], start: usize, limits: &Limits) -> Option<(usize, usize)> {
    const DIGITS_MAX: usize = 4;
    // One to three digits, the commonest, without the loop (the same conditions as in it:
    // the CR at `digits` within the window, a byte after it).
    match *buf.get(start..)? {
        [b'$', digit @ b'1'..=b'9', b'\r', _, ..] if limits.inline_len_max > 1 => {
            let len = usize::from(digit - b'0');
            return (len <= limits.bulk_len_max).then_some((len, start + 4));
        }
        [b'$', tens @ b'1'..=b'9', ones @ b'0'..=b'9', b'\r', _, ..]
            if limits.inline_len_max > 2 =>
        {
            let len = usize::from(tens - b'0') * 10 + usize::from(ones - b'0');
            return (len <= limits.bulk_len_max).then_some((len, start + 5));
        }
        // Three digits, a small value's (128 bytes): the loop cost 40 instructions more.
        [b'$', hundreds @ b'1'..=b'9', tens @ b'0'..=b'9', ones @ b'0'..=b'9', b'\r', _, ..]
            if limits.inline_len_max > 3 =>
        {
            let len = usize::from(hundreds - b'0') * 100
                + usize::from(tens - b'0') * 10
                + usize::from(ones - b'0');
            return (len <= limits.bulk_len_max).then_some((len, start + 6));
        }
        _ => {}
    }
    let header = buf.get(start..)?.get(..DIGITS_MAX + 3).unwrap_or(&buf[start..]);
    let (&b'$', rest) = header.split_first()? else { return None };
    let mut len = 0usize;
    for (index, &byte) in rest.iter().enumerate() {
        match byte {
            // The CR must fit the length-line window and have a byte after it.
            b'\r' if index > 0 && index < limits.inline_len_max && index + 1 < rest.len() => {
                return (len <= limits.bulk_len_max).then_some((len, start + index + 3));
            }
            b'0' if index == 0 => {
                // "$0\r": the one length that starts with a zero.
                return (rest.get(1) == Some(&b'\r')
                    && rest.len() > 2
                    && limits.inline_len_max > 1)
                    .then_some((0, start + 4));
            }
            b'0'..=b'9' if index < DIGITS_MAX => len = len * 10 + usize::from(byte - b'0'),
            _ => return None,
        }
    }
    None
}

/// Finds the `*...\r` or `$...\r` line at `start`. Returns the bytes between the type byte
/// and the CR, and the position after the byte that follows the CR.
///
/// As in Redis, the byte after the CR is required but not checked to be LF. Unlike Redis
/// (which scans the whole buffer), we look for the CR only within `inline_len_max` bytes:
/// past that the line is too big whether or not a CR arrives later.
fn length_line<'b>(
    buf: &'b [u8],
    start: usize,
    limits: &Limits,
    too_big: ProtocolError,
) -> Result<(&'b [u8], usize), ParseError> {
    let rest = &buf[start..];
    let window = &rest[..rest.len().min(limits.inline_len_max.saturating_add(1))];
    let Some(cr) = window.iter().position(|&b| b == b'\r') else {
        return Err(if rest.len() > limits.inline_len_max {
            close(too_big)
        } else {
            ParseError::Incomplete
        });
    };
    if cr + 2 > rest.len() {
        return Err(ParseError::Incomplete);
    }
    // `cr` may be 0 (a line that is just CR): then there is no type byte and no digits.
    Ok((&rest[cr.min(1)..cr], start + cr + 2))
}

/// Parses one inline line at `start`; returns the position after its newline.
fn parse_inline(
    buf: &[u8],
    start: usize,
    limits: &Limits,
    spans: &mut Vec<Span>,
    scratch: &mut Vec<u8>,
) -> Result<usize, ParseError> {
    let rest = &buf[start..];
    // Room for a full-length line plus CRLF. Redis scans the whole buffer for the newline
    // and applies its limit only while none has arrived; a fixed window keeps the cost of
    // a call bounded and the limit independent of how the bytes were split into reads.
    let window = &rest[..rest.len().min(limits.inline_len_max.saturating_add(2))];
    let Some(newline) = window.iter().position(|&b| b == b'\n') else {
        return Err(if rest.len() > limits.inline_len_max {
            close(ProtocolError::TooBigInline)
        } else {
            ParseError::Incomplete
        });
    };
    let line_end = if newline > 0 && rest[newline - 1] == b'\r' { newline - 1 } else { newline };
    if let Err(error) = inline::split(&rest[..line_end], start, spans, scratch) {
        spans.clear();
        return Err(close(error));
    }
    Ok(start + newline + 1)
}

fn close(reply: ProtocolError) -> ParseError {
    ParseError::Close { reply }
}

/// Parses `data` as a fuzzer would and asserts the parser's invariants; shared by the
/// cargo-fuzz target and the in-crate randomized test. The first byte picks the limits
/// (tiny ones reach the limit paths quickly).
#[doc(hidden)]
pub fn fuzz_check(data: &[u8]) {
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    let limits = if selector & 1 == 0 {
        Limits::default()
    } else {
        Limits { args_max: 4, bulk_len_max: 8, inline_len_max: 16, unauthenticated: false }
    };
    let mut rest = input;
    // Parse the input as a pipeline; each success consumes at least one byte.
    while !rest.is_empty() {
        match parse_command(rest, &limits) {
            Ok((command, used)) => {
                assert!(used > 0 && used <= rest.len(), "used {used} of {}", rest.len());
                assert!(command.argc() <= limits.args_max.max(limits.inline_len_max));
                for arg in command.args() {
                    assert!(arg.len() <= limits.bulk_len_max.max(limits.inline_len_max + 1));
                }
                // The same bytes, cut where the command ended, parse to the same command.
                let (again, used_again) =
                    parse_command(&rest[..used], &limits).expect("a parsed prefix parses again");
                assert_eq!((&again, used_again), (&command, used));
                rest = &rest[used..];
            }
            Err(ParseError::Incomplete) => {
                for cut in [0, rest.len() / 2, rest.len().saturating_sub(1)] {
                    match parse_command(&rest[..cut], &limits) {
                        Err(ParseError::Incomplete) => {}
                        Ok((command, _)) => assert!(command.is_empty()),
                        other => panic!("prefix of incomplete input gave {other:?}"),
                    }
                }
                break;
            }
            Err(ParseError::Close { reply }) => {
                assert!(!reply.message().is_empty());
                break;
            }
            Err(ParseError::Invalid { .. }) => panic!("RESP requests never skip"),
        }
    }
    // The reply parser must not panic on the same bytes either.
    if let Ok((_, used)) = crate::parse_reply(input) {
        assert!(used > 0 && used <= input.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args_of(input: &[u8], limits: &Limits) -> Result<(Vec<Vec<u8>>, usize), ParseError> {
        parse_command(input, limits).map(|(c, used)| (c.args().map(<[u8]>::to_vec).collect(), used))
    }

    fn ok(input: &[u8]) -> (Vec<Vec<u8>>, usize) {
        args_of(input, &Limits::default()).unwrap_or_else(|e| panic!("{input:?}: {e:?}"))
    }

    fn closed(input: &[u8], limits: &Limits) -> ProtocolError {
        match args_of(input, limits) {
            Err(ParseError::Close { reply }) => reply,
            other => panic!("{:?}: expected Close, got {other:?}", String::from_utf8_lossy(input)),
        }
    }

    fn incomplete(input: &[u8], limits: &Limits) {
        assert_eq!(
            args_of(input, limits),
            Err(ParseError::Incomplete),
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }

    fn v(items: &[&[u8]]) -> Vec<Vec<u8>> {
        items.iter().map(|a| a.to_vec()).collect()
    }

    /// Goal: the short form ([`short_multibulk`], the short bulk headers) reads every
    /// input as the general path does. Method: 20,000 inputs made of count and bulk
    /// lines with random digits, CRs, LFs and cuts, under default, tiny and
    /// unauthenticated limits, parsed both ways.
    #[test]
    fn short_multibulk_is_the_general_parse() {
        let tiny =
            Limits { args_max: 2, bulk_len_max: 3, inline_len_max: 2, unauthenticated: false };
        let limits = [Limits::default(), tiny, Limits::default().unauthenticated()];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |bound: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % bound
        };
        let pieces: [&[u8]; 8] = [b"\r", b"\n", b"0", b"9", b"-", b"*", b"$", b"x"];
        for _ in 0..20_000 {
            let mut input = format!("*{}\r\n", next(12)).into_bytes();
            for _ in 0..next(5) {
                let len = [next(10), next(100), next(12_000)][next(3) as usize];
                input.extend_from_slice(format!("${len}\r\n").as_bytes());
                input.extend(std::iter::repeat_n(b'a', len.min(40) as usize));
                input.extend_from_slice(b"\r\n");
            }
            for _ in 0..next(3) {
                let at = next(input.len() as u64 + 1) as usize;
                input.insert(at, pieces[next(8) as usize][0]);
            }
            input.truncate(next(input.len() as u64 + 1) as usize);
            for limits in &limits {
                let fast = parse_command_in(&input, limits, ArgStorage::default());
                let general = parse_general(&input, limits, Vec::new(), Vec::new());
                assert_eq!(fast, general, "{:?}", String::from_utf8_lossy(&input));
            }
        }
    }

    /// Goal: well-formed requests of both framings. Method: (wire, args, bytes used).
    #[test]
    fn wire_table() {
        type Case<'t> = (&'t [u8], &'t [&'t [u8]], usize);
        let table: &[Case] = &[
            (b"*1\r\n$4\r\nPING\r\n", &[b"PING"], 14),
            (b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\nextra", &[b"GET", b"k"], 20),
            (
                b"*3\r\n$3\r\nSET\r\n$4\r\na\r\nb\r\n$2\r\n\r\n\r\n",
                &[b"SET", b"a\r\nb", b"\r\n"],
                31,
            ),
            (b"*1\r\n$0\r\n\r\n", &[b""], 10),
            (b"*0\r\n*1\r\n$1\r\nx\r\n", &[b"x"], 15),
            (b"*-1\r\n*1\r\n$1\r\nx\r\n", &[b"x"], 16),
            (b"PING\r\n", &[b"PING"], 6),
            (b"PING\n", &[b"PING"], 5),
            (b"\r\n\r\nPING\r\n", &[b"PING"], 10),
            (b"  set  a   b  \r\n", &[b"set", b"a", b"b"], 16),
            (b"set \"a b\" c\r\n", &[b"set", b"a b", b"c"], 13),
            (
                b"set k \"\\x41\\x4a\\n\\r\\t\\b\\a\\\\\\\"\"\r\n",
                &[b"set", b"k", b"AJ\n\r\t\x08\x07\\\""],
                32,
            ),
            (b"e \"\\xzz\\q\"\r\n", &[b"e", b"xzzq"], 12),
            (b"e 'it\\'s' 'a\\nb'\r\n", &[b"e", b"it's", b"a\\nb"], 18),
            (b"e a\"b c\" d\r\n", &[b"e", b"ab c", b"d"], 12),
            (b"e \"\" ''\r\n", &[b"e", b"", b""], 9),
            (b"e \"a\"\tb\r\n", &[b"e", b"a", b"b"], 9),
            (b"e x\x0by\r\n", &[b"e", b"x\x0by"], 7),
            (b"\x0be\r\n", &[b"e"], 4),
            (b"e a\rb\r\n", &[b"e", b"a", b"b"], 7),
            (b"GET a\0b c\r\n", &[b"GET", b"a"], 11),
            (b"e \"\xff\"\r\n", &[b"e", b"\xff"], 7),
        ];
        for &(input, want, used) in table {
            assert_eq!(ok(input), (v(want), used), "{:?}", String::from_utf8_lossy(input));
        }
    }

    /// Goal: lone blanks are consumed as an empty command when nothing complete follows.
    #[test]
    fn empty_commands() {
        assert_eq!(ok(b"\r\n"), (vec![], 2));
        assert_eq!(ok(b"\n\r\n*2\r\n$1"), (vec![], 3));
        assert_eq!(ok(b"*0\r\n"), (vec![], 4));
        assert_eq!(ok(b"   \r\n"), (vec![], 5));
        incomplete(b"", &Limits::default());
        incomplete(b"\r", &Limits::default());
    }

    /// Goal: every framing error Redis closes on, with its reply text.
    #[test]
    fn protocol_errors_close() {
        let limits = Limits::default();
        let table: &[(&[u8], ProtocolError)] = &[
            (b"*abc\r\n", ProtocolError::InvalidMultibulkLength),
            (b"*\r\n", ProtocolError::InvalidMultibulkLength),
            (b"*01\r\n", ProtocolError::InvalidMultibulkLength),
            (b"*+1\r\n", ProtocolError::InvalidMultibulkLength),
            (b"*1\r\nx\r\n", ProtocolError::ExpectedDollar(b'x')),
            (b"*1\r\n\r\n", ProtocolError::ExpectedDollar(b'\r')),
            (b"*2\r\n$1\r\na\r\n:1\r\n", ProtocolError::ExpectedDollar(b':')),
            (b"*1\r\n$-1\r\n", ProtocolError::InvalidBulkLength),
            (b"*1\r\n$abc\r\n", ProtocolError::InvalidBulkLength),
            (b"*1\r\n$\r\n", ProtocolError::InvalidBulkLength),
            (b"e \"abc\r\n", ProtocolError::UnbalancedQuotes),
            (b"e 'abc\r\n", ProtocolError::UnbalancedQuotes),
            (b"e \"a\"b\r\n", ProtocolError::UnbalancedQuotes),
            (b"e 'a'b\r\n", ProtocolError::UnbalancedQuotes),
            (b"e \"abc\\\"\r\n", ProtocolError::UnbalancedQuotes),
            (b"e \"abc\\\r\n", ProtocolError::UnbalancedQuotes),
            (b"e \"a\0\"\r\n", ProtocolError::UnbalancedQuotes),
        ];
        for (input, want) in table {
            assert_eq!(closed(input, &limits), *want, "{:?}", String::from_utf8_lossy(input));
        }
        // The reply for a CR where '$' belongs reaches the wire with the CR as a space.
        let mut out = Vec::new();
        crate::Reply::new(&mut out, crate::Protocol::Resp2)
            .error(ProtocolError::ExpectedDollar(b'\r').message());
        assert_eq!(out, b"-ERR Protocol error: expected '$', got ' '\r\n");
        // Redis waits for the CR before it looks at the type byte.
        incomplete(b"*1\r\nx", &limits);
    }

    /// Goal: each limit accepts its maximum and closes at maximum + 1, with the default
    /// limits and with tiny ones.
    #[test]
    fn limit_edges() {
        let limits = Limits::default();
        incomplete(b"*1048576\r\n", &limits);
        assert_eq!(closed(b"*1048577\r\n", &limits), ProtocolError::InvalidMultibulkLength);
        incomplete(b"*1\r\n$536870912\r\n", &limits);
        assert_eq!(closed(b"*1\r\n$536870913\r\n", &limits), ProtocolError::InvalidBulkLength);
        incomplete(&[b'a'; 64 * 1024], &limits);
        assert_eq!(closed(&[b'a'; 64 * 1024 + 1], &limits), ProtocolError::TooBigInline);
        let mut line = vec![b'a'; 64 * 1024];
        line.extend_from_slice(b"\r\n");
        assert_eq!(ok(&line).0.len(), 1);

        let tiny =
            Limits { args_max: 3, bulk_len_max: 5, inline_len_max: 8, unauthenticated: false };
        assert_eq!(args_of(b"*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", &tiny).unwrap().0.len(), 3);
        assert_eq!(closed(b"*4\r\n", &tiny), ProtocolError::InvalidMultibulkLength);
        assert_eq!(args_of(b"*1\r\n$5\r\nabcde\r\n", &tiny).unwrap().0, v(&[b"abcde"]));
        assert_eq!(closed(b"*1\r\n$6\r\n", &tiny), ProtocolError::InvalidBulkLength);
        incomplete(b"abcdefgh", &tiny);
        assert_eq!(closed(b"abcdefghi", &tiny), ProtocolError::TooBigInline);
        assert_eq!(args_of(b"abcdefgh\r\n", &tiny).unwrap(), (v(&[b"abcdefgh"]), 10));
        incomplete(b"*1111111", &tiny);
        assert_eq!(closed(b"*11111111", &tiny), ProtocolError::TooBigMbulkCount);
        incomplete(b"*1\r\n$1111111", &tiny);
        assert_eq!(closed(b"*1\r\n$11111111", &tiny), ProtocolError::TooBigBulkCount);
    }

    /// Goal: before a required login, 10 arguments and 16384-byte arguments parse, one more
    /// of either closes with Redis's own error; the general bounds still come first.
    #[test]
    fn unauthenticated_limits_at_their_edges() {
        let limits = Limits::default().unauthenticated();
        let closes = |input: &[u8]| match parse_command(input, &limits) {
            Err(ParseError::Close { reply }) => reply,
            other => panic!("expected a close, got {other:?}"),
        };
        let ten = b"*10\r\n$1\r\na\r\n".to_vec();
        assert_eq!(parse_command(&ten, &limits).unwrap_err(), ParseError::Incomplete);
        assert_eq!(closes(b"*11\r\n"), ProtocolError::UnauthenticatedMultibulkLength);
        assert_eq!(closes(b"*99999999999\r\n"), ProtocolError::InvalidMultibulkLength);
        let mut edge = b"*2\r\n$4\r\nAUTH\r\n$16384\r\n".to_vec();
        edge.extend(std::iter::repeat_n(b'p', 16384));
        edge.extend_from_slice(b"\r\n");
        assert_eq!(parse_command(&edge, &limits).unwrap().0.argc(), 2);
        let over = b"*2\r\n$4\r\nAUTH\r\n$16385\r\n";
        assert_eq!(closes(over), ProtocolError::UnauthenticatedBulkLength);
        assert_eq!(closes(b"*1\r\n$536870913\r\n"), ProtocolError::InvalidBulkLength);
        assert!(parse_command(over, &Limits::default()).is_err_and(|e| e == ParseError::Incomplete));
    }

    /// Goal: a request with exactly `args_max` (default) arguments parses in full.
    #[test]
    fn args_max_in_full() {
        let count = Limits::default().args_max;
        let mut wire = format!("*{count}\r\n").into_bytes();
        for _ in 0..count {
            wire.extend_from_slice(b"$1\r\na\r\n");
        }
        let (command, used) = parse_command(&wire, &Limits::default()).unwrap();
        assert_eq!((command.argc(), used), (count, wire.len()));
    }

    /// Goal: a command cut at any byte is Incomplete, and whole it is the same command.
    #[test]
    fn every_split_point() {
        let inputs: &[&[u8]] = &[
            b"*3\r\n$3\r\nSET\r\n$4\r\na\r\nb\r\n$10\r\n0123456789\r\n",
            b"set \"a b\" 'c d' \\x41\r\n",
            b"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n",
        ];
        let limits = Limits::default();
        for input in inputs {
            let whole = ok(input);
            assert_eq!(whole.1, input.len());
            for cut in 0..input.len() {
                incomplete(&input[..cut], &limits);
            }
        }
    }

    /// Goal: pipelined commands come out one by one, in order.
    #[test]
    fn pipeline() {
        let wire =
            b"*1\r\n$4\r\nPING\r\nECHO hi\r\n\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPI";
        let limits = Limits::default();
        let mut rest = &wire[..];
        let mut seen = Vec::new();
        let mut storage = ArgStorage::default();
        loop {
            match parse_command_in(rest, &limits, storage) {
                Ok((command, used)) => {
                    if !command.is_empty() {
                        seen.push(command.args().map(<[u8]>::to_vec).collect::<Vec<_>>());
                    }
                    storage = command.into_storage();
                    rest = &rest[used..];
                }
                Err(error) => {
                    assert_eq!(error, ParseError::Incomplete);
                    break;
                }
            }
        }
        assert_eq!(seen, vec![v(&[b"PING"]), v(&[b"ECHO", b"hi"]), v(&[b"GET", b"k"])]);
        assert_eq!(rest, b"*1\r\n$4\r\nPI");
    }

    #[test]
    fn command_accessors() {
        let (command, _) = parse_command(b"e 'q' p\r\n", &Limits::default()).unwrap();
        assert_eq!(command.name(), Some(&b"e"[..]));
        assert_eq!(command.arg(1), Some(&b"q"[..]));
        assert_eq!(command.arg(2), Some(&b"p"[..]));
        assert_eq!(command.arg(3), None);
        assert_eq!(command.args().len(), 3);
    }

    // Goal: the short bulk header path accepts exactly what the general path accepts, with
    // the same length and data start, for every header shape near its edges and every
    // limit that bounds it.
    #[test]
    fn short_bulk_header_agrees_with_general_path() {
        let bodies: [&[u8]; 20] = [
            b"0", b"00", b"01", b"1", b"9", b"10", b"20", b"999", b"9999", b"10000", b"-1", b"+1",
            b"", b"1a", b" 1", b"12345", b"128", b"100", b"099", b"12a",
        ];
        let limits_all = [
            Limits::default(),
            Limits { args_max: 4, bulk_len_max: 8, inline_len_max: 16, unauthenticated: false },
            Limits { args_max: 4, bulk_len_max: 100, inline_len_max: 2, unauthenticated: false },
            Limits { args_max: 4, bulk_len_max: 100, inline_len_max: 3, unauthenticated: false },
            Limits { args_max: 4, bulk_len_max: 127, inline_len_max: 4, unauthenticated: false },
        ];
        for body in bodies {
            for tail in [&b""[..], b"\r", b"\r\n", b"\r\nxy"] {
                let mut header = b"$".to_vec();
                header.extend_from_slice(body);
                header.extend_from_slice(tail);
                for limits in &limits_all {
                    let Some(fast) = short_bulk_header(&header, 0, limits) else { continue };
                    let (digits, data_start) =
                        length_line(&header, 0, limits, ProtocolError::TooBigBulkCount)
                            .expect("general path finds the line");
                    let len = parse_i64(digits).expect("general path reads the length");
                    assert!(len >= 0 && len as usize <= limits.bulk_len_max);
                    assert_eq!(fast, (len as usize, data_start), "{header:?}");
                }
            }
        }
        assert_eq!(short_bulk_header(b"$20\r\n", 0, &Limits::default()), Some((20, 5)));
        assert_eq!(short_bulk_header(b"$0\r\n", 0, &Limits::default()), Some((0, 4)));
        assert_eq!(short_bulk_header(b"$128\r\n", 0, &Limits::default()), Some((128, 6)));
    }
}
