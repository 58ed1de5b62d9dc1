//! Line framing, tokens and numbers: the pieces every command parser shares (memcached's
//! `tokenize_command` and `safe_strto*`).
//!
//! A command line ends at the first `\n`; one `\r` before it is dropped, so a bare `\n`
//! works as memcached allows. Tokens are separated by spaces only (a tab is part of a
//! token, as in memcached).

use crate::{
    error::ParseError,
    limits::{Limits, NUMBER_DIGITS_MAX},
};

/// One command line, found at the start of the buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Line<'a> {
    /// The line without its `\r\n` or `\n`.
    pub content: &'a [u8],
    /// Bytes the line occupies in the buffer, terminator included.
    pub len_with_newline: usize,
}

/// How many leading spaces memcached looks past before deciding a long line is no get.
const LEADING_SPACES_MAX: usize = 100;

/// Finds the first line of `buf`, or says why there is none.
///
/// As in memcached, the outcome of a line longer than `line_len_max` depends on how it
/// arrived: whole in the buffer (up to `line_len_max_whole`) it is served; still arriving
/// it closes the connection. Only `get`/`gets` lines may grow past both, to their own limit.
pub(crate) fn frame<'a>(buf: &'a [u8], limits: &Limits) -> Result<Line<'a>, ParseError> {
    // No line may be longer than the longest of the limits, so the scan is bounded.
    let scan_len_max = limits.get_line_len_max.saturating_add(2).max(limits.line_len_max_whole);
    let window = &buf[..buf.len().min(scan_len_max)];
    let Some(index) = memchr::memchr(b'\n', window) else {
        // A trailing '\r' may yet be the start of the terminator.
        let content = strip_cr(window);
        if content.len() > limits.line_len_max && !get_allowed(content, limits) {
            return Err(ParseError::Close);
        }
        return Err(ParseError::Incomplete);
    };
    let content = strip_cr(&buf[..index]);
    let len_with_newline = index + 1;
    let fits =
        content.len() <= limits.line_len_max || len_with_newline <= limits.line_len_max_whole;
    if !fits && !get_allowed(content, limits) {
        return Err(ParseError::Close);
    }
    Ok(Line { content, len_with_newline })
}

/// A get line may run to its own, larger limit.
fn get_allowed(content: &[u8], limits: &Limits) -> bool {
    is_get_line(content) && content.len() <= limits.get_line_len_max
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// memcached lets only `get` and `gets` lines run past the line limit (large multigets).
fn is_get_line(content: &[u8]) -> bool {
    let spaces = content.iter().take_while(|&&b| b == b' ').count();
    let rest = &content[spaces..];
    spaces <= LEADING_SPACES_MAX && (rest.starts_with(b"get ") || rest.starts_with(b"gets "))
}

/// The space-separated tokens of `line` (runs of spaces separate; none are empty).
pub(crate) fn tokens(line: &[u8]) -> SpaceSplit<'_> {
    SpaceSplit { rest: line }
}

/// Iterator of [`tokens`]: each separator found with [`find_byte`] (fewer instructions per
/// key than `split` + `filter` or `memchr`, measured with callgrind on 48-key gets).
#[derive(Clone, Debug)]
pub(crate) struct SpaceSplit<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for SpaceSplit<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let start = self.rest.iter().position(|&b| b != b' ')?;
        let rest = &self.rest[start..];
        let end = find_byte(rest, b' ').unwrap_or(rest.len());
        let (token, after) = rest.split_at(end);
        self.rest = after;
        Some(token)
    }
}

/// The first space-separated word of `line` and the bytes after it (starting with the space
/// that ended the word, if any): enough to dispatch a command without tokenizing the line.
pub(crate) fn first_word(line: &[u8]) -> (&[u8], &[u8]) {
    let rest = trim_start(line);
    let end = find_byte(rest, b' ').unwrap_or(rest.len());
    rest.split_at(end)
}

/// The index of the first `needle` in `bytes`, eight bytes at a time.
///
/// Tokens are short (keys of tens of bytes, one-letter flags), where `memchr`'s setup costs
/// more than the search; this inlines into the tokenizer.
#[inline]
pub(crate) fn find_byte(bytes: &[u8], needle: u8) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let pattern = ONES * u64::from(needle);
    // A byte equal to `needle` becomes zero; the lowest flagged byte is the first zero
    // (the trick's false positives lie only above a true one).
    let first_match = |word: [u8; 8]| {
        let diff = u64::from_le_bytes(word) ^ pattern;
        let found = diff.wrapping_sub(ONES) & !diff & HIGHS;
        (found != 0).then(|| (found.trailing_zeros() / 8) as usize)
    };
    if bytes.len() < 8 {
        return bytes.iter().position(|&b| b == needle);
    }
    let mut chunks = bytes.chunks_exact(8);
    for (index, chunk) in (&mut chunks).enumerate() {
        let word = chunk.try_into().expect("chunks of eight");
        if let Some(at) = first_match(word) {
            return Some(index * 8 + at);
        }
    }
    if chunks.remainder().is_empty() {
        return None;
    }
    // The last eight bytes, overlapping bytes already searched (which hold no match and so
    // flag nothing).
    let tail_start = bytes.len() - 8;
    let word = bytes[tail_start..].try_into().expect("eight bytes");
    first_match(word).map(|at| tail_start + at)
}

/// The index of the first byte of `bytes` at or below the space (a space, `\r`, `\n`, a tab
/// or another control byte), eight bytes at a time: where a plain key ends.
#[inline]
pub fn find_below_bang(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    // A byte below 0x21 borrows in `word - 0x21..` and has its high bit clear: flagged.
    // Bytes of 0x80 and up have it set and are never flagged themselves; a borrow reaches
    // only bytes above a flagged one, so the lowest flag is exact.
    let first_match = |word: [u8; 8]| {
        let word = u64::from_le_bytes(word);
        let found = word.wrapping_sub(ONES * 0x21) & !word & HIGHS;
        (found != 0).then(|| (found.trailing_zeros() / 8) as usize)
    };
    let mut chunks = bytes.chunks_exact(8);
    for (index, chunk) in (&mut chunks).enumerate() {
        if let Some(at) = first_match(chunk.try_into().expect("chunks of eight")) {
            return Some(index * 8 + at);
        }
    }
    let done = bytes.len() - chunks.remainder().len();
    chunks.remainder().iter().position(|&b| b <= b' ').map(|at| done + at)
}

/// How many space-separated words `bytes` holds, if none is longer than `word_len_max`;
/// `None` when one may be (the caller then checks word by word).
///
/// Counts eight bytes at a time (a word starts at a non-space byte after a space or the
/// start): a 48-key get line is counted in about a third of the instructions of splitting
/// it. A word of more than `word_len_max` bytes spans a run of space-free aligned eight-byte
/// blocks; no such run of `(word_len_max - 14) / 8` blocks proves every word short enough.
pub(crate) fn count_short_words(bytes: &[u8], word_len_max: usize) -> Option<usize> {
    let blocks_max = word_len_max.checked_sub(14)? / 8;
    let mut count = 0usize;
    let mut space_free_blocks = 0usize;
    // "Not a space" of the previous block's last byte, as the high bit of byte 0.
    let mut carry = 0u64;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let not_space = not_space_bits(u64::from_le_bytes(chunk.try_into().expect("eight")));
        count += high_bits_set(not_space & !((not_space << 8) | carry));
        carry = not_space >> 56;
        space_free_blocks = if not_space == HIGHS { space_free_blocks + 1 } else { 0 };
        if space_free_blocks >= blocks_max {
            return None;
        }
    }
    // The last bytes, padded with spaces (which start no word).
    let mut last = [b' '; 8];
    last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    let not_space = not_space_bits(u64::from_le_bytes(last));
    count += high_bits_set(not_space & !((not_space << 8) | carry));
    // The padding is a space, so the last block ends any run.
    (blocks_max > 0).then_some(count)
}

const HIGHS: u64 = 0x8080_8080_8080_8080;

/// How many bytes of `bits` (only high bits set) have theirs set: one multiply sums them
/// into the top byte (`count_ones` is a long software routine without POPCNT, which the
/// x86-64 baseline lacks).
#[inline]
fn high_bits_set(bits: u64) -> usize {
    ((bits >> 7).wrapping_mul(0x0101_0101_0101_0101) >> 56) as usize
}

/// The high bit of each byte of `block` set exactly when the byte is not a space (no carry
/// crosses bytes: a byte's low seven bits plus 0x7f stays within the byte).
#[inline]
fn not_space_bits(block: u64) -> u64 {
    const LOWS: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const SPACES: u64 = 0x2020_2020_2020_2020;
    let diff = block ^ SPACES;
    (((diff & LOWS) + LOWS) | diff) & HIGHS
}

/// The most tokens any non-get command looks at; memcached's `MAX_TOKENS` is 24.
pub(crate) const TOKENS_MAX: usize = 24;

/// The first [`TOKENS_MAX`] tokens of a line, and how many there are in all.
pub(crate) struct Tokens<'a> {
    items: [&'a [u8]; TOKENS_MAX],
    /// Every token of the line, even those past [`TOKENS_MAX`].
    pub count: usize,
}

impl<'a> Tokens<'a> {
    pub fn new(line: &'a [u8]) -> Self {
        let mut items: [&[u8]; TOKENS_MAX] = [&[]; TOKENS_MAX];
        let mut count = 0;
        for token in tokens(line) {
            if count < TOKENS_MAX {
                items[count] = token;
            }
            count += 1;
        }
        Tokens { items, count }
    }

    /// Token `index`, or empty if the line has fewer.
    pub fn get(&self, index: usize) -> &'a [u8] {
        self.items.get(index).copied().unwrap_or(&[])
    }

    /// The tokens from `start` on (at most [`TOKENS_MAX`] in all).
    pub fn from(&self, start: usize) -> &[&'a [u8]] {
        let end = self.count.min(TOKENS_MAX);
        &self.items[start.min(end)..end]
    }

    /// The last token, where memcached looks for `noreply`.
    pub fn last(&self) -> &'a [u8] {
        self.from(0).last().copied().unwrap_or(&[])
    }
}

/// The bytes of `line` after its first `skip` tokens, trimmed of spaces: the key list of a
/// get, the arguments of `stats`.
pub(crate) fn rest_after(line: &[u8], skip: usize) -> &[u8] {
    let mut rest = line;
    for _ in 0..skip {
        rest = trim_start(rest);
        let end = rest.iter().position(|&b| b == b' ').unwrap_or(rest.len());
        rest = &rest[end..];
    }
    trim_end(trim_start(rest))
}

pub(crate) fn trim_start(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|&b| b != b' ').unwrap_or(bytes.len());
    &bytes[start..]
}

pub(crate) fn trim_end(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().rposition(|&b| b != b' ').map_or(0, |index| index + 1);
    &bytes[..end]
}

/// Unsigned decimal as memcached's `safe_strtoull` takes it: an optional `+`, then digits
/// only; no sign, no overflow.
pub(crate) fn parse_u64(token: &[u8]) -> Option<u64> {
    let digits = token.strip_prefix(b"+").unwrap_or(token);
    if digits.is_empty() || digits.len() > NUMBER_DIGITS_MAX {
        return None;
    }
    let mut value: u64 = 0;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(value)
}

pub(crate) fn parse_u32(token: &[u8]) -> Option<u32> {
    parse_u64(token).and_then(|value| u32::try_from(value).ok())
}

/// Signed decimal: an optional `-` or `+`, then digits.
pub(crate) fn parse_i64(token: &[u8]) -> Option<i64> {
    match token.strip_prefix(b"-") {
        Some(digits) if !digits.starts_with(b"+") => {
            let magnitude = parse_u64(digits)?;
            0i64.checked_sub_unsigned(magnitude)
        }
        Some(_) => None,
        None => parse_u64(token).and_then(|value| i64::try_from(value).ok()),
    }
}

/// A number as memcached's `safe_strtol` reads it into an `int32_t` (exptimes, a block
/// length): any decimal a C `long` holds is taken and only its low 32 bits kept, so
/// `2147483648` reads as a negative number and `4294967297` as 1.
pub fn parse_c_i32(token: &[u8]) -> Option<i64> {
    parse_i64(token).map(|value| i64::from(value as i32))
}

/// A number as memcached's `safe_strtoul` reads it into a `uint32_t` (flags, a verbosity
/// level): any unsigned decimal a C `unsigned long` holds, low 32 bits kept.
pub fn parse_c_u32(token: &[u8]) -> Option<u32> {
    parse_u64(token).map(|value| value as u32)
}

/// Appends `value` in decimal without allocating (single digits, such as flags 0, take a
/// shortcut; replies carry several numbers per value).
pub(crate) fn push_u64(buf: &mut Vec<u8>, value: u64) {
    if value < 10 {
        buf.push(b'0' + value as u8);
        return;
    }
    buf.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
}

pub(crate) fn push_i64(buf: &mut Vec<u8>, value: i64) {
    if value < 0 {
        buf.push(b'-');
    }
    push_u64(buf, value.unsigned_abs());
}

/// Space-separated words borrowed from the request line: the keys of a get, the arguments
/// of `stats`. Holding the span, not a list, costs no allocation per key.
#[derive(Clone, Copy, Debug, Default)]
pub struct Words<'a> {
    raw: &'a [u8],
    count: usize,
}

impl<'a> Words<'a> {
    /// Words of `raw` (split on spaces; empty words ignored).
    pub fn new(raw: &'a [u8]) -> Self {
        Words { raw, count: tokens(raw).count() }
    }

    /// Words of `raw` whose count the caller has just taken (saves a second pass).
    pub(crate) fn with_count(raw: &'a [u8], count: usize) -> Self {
        debug_assert_eq!(count, tokens(raw).count());
        Words { raw, count }
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + Clone {
        tokens(self.raw)
    }

    /// The one word, when there is exactly one and nothing around it (a get's keys are
    /// trimmed): read without splitting.
    #[inline]
    pub fn single(&self) -> Option<&'a [u8]> {
        let bare = self.raw.first() != Some(&b' ') && self.raw.last() != Some(&b' ');
        (self.count == 1 && bare).then_some(self.raw)
    }

    /// The words as sent, single spaces or not.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.raw
    }

    /// The words from byte `offset` of [`Words::as_bytes`] on: a multiget answered in
    /// several chunks resumes where the last one stopped, without counting keys again.
    pub fn iter_from(&self, offset: usize) -> impl Iterator<Item = &'a [u8]> + Clone {
        tokens(self.raw.get(offset..).unwrap_or_default())
    }

    /// The byte offset just past `word`, one of the words [`Words::iter`] or
    /// [`Words::iter_from`] returned (an offset to resume at).
    pub fn offset_after(&self, word: &[u8]) -> usize {
        let start = word.as_ptr() as usize - self.raw.as_ptr() as usize;
        debug_assert!(start + word.len() <= self.raw.len(), "a word of this span");
        start + word.len()
    }
}

/// Equal when the words are, however they were spaced.
impl PartialEq for Words<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.count == other.count && self.iter().eq(other.iter())
    }
}

impl Eq for Words<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    // Goal: numbers parse exactly as memcached's safe_strto* accept them; table of cases.
    #[test]
    fn numbers() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"+7"), Some(7));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"1x"), None);
        assert_eq!(parse_u32(b"4294967295"), Some(u32::MAX));
        assert_eq!(parse_u32(b"4294967296"), None);
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"-"), None);
        assert_eq!(parse_i64(b"-+1"), None);
        assert_eq!(parse_i64(b"-5"), Some(-5));
        assert_eq!(parse_c_i32(b"2147483648"), Some(i64::from(i32::MIN)));
        assert_eq!(parse_c_i32(b"4294967297"), Some(1));
        assert_eq!(parse_c_i32(b"-1"), Some(-1));
        assert_eq!(parse_c_i32(b"9223372036854775808"), None);
        assert_eq!(parse_c_u32(b"4294967296"), Some(0));
        assert_eq!(parse_c_u32(b"-1"), None);
    }

    // Goal: decimal output matches std's formatting at the edges.
    #[test]
    fn push_numbers() {
        for value in [0, 1, 9, 10, 99, 12345, i64::MAX, i64::MIN, -1] {
            let mut buf = Vec::new();
            push_i64(&mut buf, value);
            assert_eq!(buf, value.to_string().as_bytes());
        }
        let mut buf = Vec::new();
        push_u64(&mut buf, u64::MAX);
        assert_eq!(buf, u64::MAX.to_string().as_bytes());
    }

    // Goal: find_byte agrees with a plain search at every length and position, including
    // matches in the overlapping tail and bytes that differ from the needle by one bit.
    #[test]
    fn find_byte_matches_position() {
        for len in 0..40 {
            for at in 0..=len {
                let mut bytes: Vec<u8> =
                    (0..len).map(|i| [b'!', b'a', 0x00, 0xa0][i % 4]).collect();
                if at < len {
                    bytes[at] = b' ';
                }
                let want = bytes.iter().position(|&b| b == b' ');
                assert_eq!(find_byte(&bytes, b' '), want, "len {len} at {at}");
                let want_cr = bytes.iter().position(|&b| b == b'\r');
                assert_eq!(find_byte(&bytes, b'\r'), want_cr);
            }
        }
        assert_eq!(find_byte(b"ab  cd efghijkl mn", b' '), Some(2));
    }

    // Goal: count_short_words counts as the tokenizer does, and answers only when every
    // word is within the limit; random lines of spaces and words of all lengths.
    #[test]
    fn count_short_words_matches_tokens() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |bound: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % bound
        };
        for round in 0..3000 {
            let word_len_max = [20, 30, 250][round % 3];
            let mut line = Vec::new();
            for _ in 0..next(12) {
                line.extend(std::iter::repeat_n(b' ', next(3) as usize));
                let len = if next(4) == 0 { next(300) } else { next(24) };
                line.extend((0..len).map(|i| [b'k', 0x00, 0xff, b'\t', 0xa0][i as usize % 5]));
            }
            let words: Vec<&[u8]> = tokens(&line).collect();
            let longest = words.iter().map(|w| w.len()).max().unwrap_or(0);
            match count_short_words(&line, word_len_max) {
                Some(count) => {
                    assert_eq!(count, words.len(), "{line:?}");
                    assert!(longest <= word_len_max, "{longest} > {word_len_max}");
                }
                None => assert!(longest >= (word_len_max - 14) / 8 * 8, "{longest}"),
            }
        }
        assert_eq!(count_short_words(b" a  bb ccc ", 250), Some(3));
        assert_eq!(count_short_words(b"", 250), Some(0));
        assert_eq!(count_short_words(b"a", 10), None);
    }

    // Goal: the rest of a line after n tokens, as the get and stats parsers use it.
    #[test]
    fn rest_after_tokens() {
        assert_eq!(rest_after(b"  get  a b  ", 1), b"a b");
        assert_eq!(rest_after(b"gat 10 a", 2), b"a");
        assert_eq!(rest_after(b"stats", 1), b"");
    }
}
