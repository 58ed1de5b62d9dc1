//! Inline requests: one line of space-separated words, as typed into telnet.
//!
//! The splitting rules are those of Redis's `sdssplitargs`:
//!
//! - Blanks between words are any of ` \t\n\v\f\r`; an unquoted word ends at ` \t\n\r`
//!   (so `\v` and `\f` may sit inside a word).
//! - `"..."` understands `\xHH` (two hex digits), `\n \r \t \b \a`, and `\<c>` for any other
//!   `c`. `'...'` understands only `\'`.
//! - A quote may open in the middle of a word (`ab"c d"` is the word `abc d`), but a closing
//!   quote must be followed by a blank or the end of the line.
//! - An unterminated quote, or a closing quote followed by a non-blank, is the error
//!   `unbalanced quotes`.
//! - Redis copies the line into a C string first, so a NUL byte ends the line.
//!
//! Unquoted words are borrowed from the input; a word with quotes is decoded into the
//! command's scratch buffer, so there is no allocation per word either way.

use crate::{error::ProtocolError, parse::Span};

/// Splits `line` (which starts at `offset` in the input, with its line ending removed)
/// into words, appending one span per word.
pub(crate) fn split(
    line: &[u8],
    offset: usize,
    spans: &mut Vec<Span>,
    scratch: &mut Vec<u8>,
) -> Result<(), ProtocolError> {
    let line = &line[..line.iter().position(|&b| b == 0).unwrap_or(line.len())];
    let mut pos = 0;
    // Every pass consumes at least one byte, so the loop is bounded by the line length.
    loop {
        while pos < line.len() && is_blank(line[pos]) {
            pos += 1;
        }
        if pos == line.len() {
            return Ok(());
        }
        let start = pos;
        while pos < line.len() && !ends_word(line[pos]) && !is_quote(line[pos]) {
            pos += 1;
        }
        if pos == line.len() || ends_word(line[pos]) {
            spans.push(Span::input(offset + start, pos - start));
            continue;
        }
        // A quote: decode the whole word (including the plain prefix) into scratch.
        let scratch_start = scratch.len();
        scratch.extend_from_slice(&line[start..pos]);
        pos = decode_quoted_word(line, pos, scratch)?;
        spans.push(Span::scratch(scratch_start, scratch.len() - scratch_start));
    }
}

/// Decodes from `pos` (at an opening quote, or anywhere in a word after one) to the end of
/// the word. Returns the position just past the word.
fn decode_quoted_word(
    line: &[u8],
    mut pos: usize,
    out: &mut Vec<u8>,
) -> Result<usize, ProtocolError> {
    loop {
        match line.get(pos) {
            None => return Ok(pos),
            Some(&b) if ends_word(b) => return Ok(pos),
            Some(b'"') => pos = decode_double_quoted(line, pos + 1, out)?,
            Some(b'\'') => pos = decode_single_quoted(line, pos + 1, out)?,
            Some(&b) => {
                out.push(b);
                pos += 1;
            }
        }
    }
}

/// Decodes a `"..."` body starting after the opening quote; returns the position past the
/// closing quote.
fn decode_double_quoted(
    line: &[u8],
    mut pos: usize,
    out: &mut Vec<u8>,
) -> Result<usize, ProtocolError> {
    loop {
        match line.get(pos) {
            None => return Err(ProtocolError::UnbalancedQuotes),
            Some(b'\\') if line.get(pos + 1) == Some(&b'x') => {
                let high = line.get(pos + 2).copied().and_then(hex_value);
                let low = line.get(pos + 3).copied().and_then(hex_value);
                if let (Some(high), Some(low)) = (high, low) {
                    out.push(high << 4 | low);
                    pos += 4;
                } else {
                    // `\x` without two hex digits is an ordinary escape: it yields `x`.
                    out.push(b'x');
                    pos += 2;
                }
            }
            Some(b'\\') if pos + 1 < line.len() => {
                out.push(match line[pos + 1] {
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'b' => 0x08,
                    b'a' => 0x07,
                    other => other,
                });
                pos += 2;
            }
            Some(b'"') => return close_quote(line, pos),
            Some(&b) => {
                // Includes a lone `\` at the end of the line, which then runs into the
                // unterminated-quote error above.
                out.push(b);
                pos += 1;
            }
        }
    }
}

/// Decodes a `'...'` body starting after the opening quote.
fn decode_single_quoted(
    line: &[u8],
    mut pos: usize,
    out: &mut Vec<u8>,
) -> Result<usize, ProtocolError> {
    loop {
        match line.get(pos) {
            None => return Err(ProtocolError::UnbalancedQuotes),
            Some(b'\\') if line.get(pos + 1) == Some(&b'\'') => {
                out.push(b'\'');
                pos += 2;
            }
            Some(b'\'') => return close_quote(line, pos),
            Some(&b) => {
                out.push(b);
                pos += 1;
            }
        }
    }
}

/// `pos` is at a closing quote: it must be followed by a blank or the end of the line.
fn close_quote(line: &[u8], pos: usize) -> Result<usize, ProtocolError> {
    match line.get(pos + 1) {
        Some(&b) if !is_blank(b) => Err(ProtocolError::UnbalancedQuotes),
        _ => Ok(pos + 1),
    }
}

/// C's `isspace` in the "C" locale.
fn is_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn ends_word(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

fn is_quote(b: u8) -> bool {
    b == b'"' || b == b'\''
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}
