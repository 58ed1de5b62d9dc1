//! memcached's text-protocol authentication (`-Y FILE`): until a connection authenticates,
//! every line is refused, except a `set` whose data block is `user password`.
//!
//! ```text
//!   unauthenticated:  parse_line --> Set{data_len} --> parse_data --> Token{user, pass}
//!                                \-> Refused (`CLIENT_ERROR unauthenticated`)
//! ```
//!
//! As memcached 1.6.18 reads it (checked on the wire): the line is cut at its `\n` and split
//! on spaces; it needs five tokens, the first `set`, the fifth a length as `strtoul` reads it
//! (kept to 32 bits); key, flags, exptime and `noreply` are ignored. Input with no `\n` in
//! its first 2048 bytes hangs up. The data block is the length plus `\r\n`, and must end in
//! `\r\n`; it holds the user and the password as its first two space-separated tokens. A
//! block larger than memcached's 16 KiB read buffer hangs up once that much has arrived.

/// Input without a newline beyond this many bytes hangs up (memcached: "junk data").
pub const LINE_LEN_MAX: usize = 2048;

/// memcached's read buffer: a data block that cannot fit in it hangs up once it is full.
pub const DATA_BUFFER_BYTES: usize = 16384;

/// What [`parse_line`] found at the start of the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Line {
    /// No complete line yet.
    Incomplete,
    /// Too much input without a newline: hang up.
    Close,
    /// Not an authentication `set`: answer `CLIENT_ERROR unauthenticated`. `used` bytes
    /// (the line and its `\n`) are consumed.
    Refused { used: usize },
    /// An authentication `set`: its data block of `data_len` bytes (plus `\r\n`) follows the
    /// `used` bytes of the line.
    Set { used: usize, data_len: u32 },
}

/// Reads the line at the start of `input`.
pub fn parse_line(input: &[u8]) -> Line {
    // memcached waits for two bytes before looking (no command is shorter).
    if input.len() < 2 {
        return Line::Incomplete;
    }
    let Some(end) = input.iter().position(|&b| b == b'\n') else {
        return if input.len() > LINE_LEN_MAX { Line::Close } else { Line::Incomplete };
    };
    let used = end + 1;
    // The line is a C string: a NUL ends it.
    let line = &input[..end];
    let line = line.iter().position(|&b| b == 0).map_or(line, |nul| &line[..nul]);
    let mut tokens = line.split(|&b| b == b' ').filter(|t| !t.is_empty());
    let first = tokens.next();
    let length = tokens.nth(3);
    match (first, length.and_then(strtoul_u32)) {
        (Some(b"set"), Some(data_len)) => Line::Set { used, data_len },
        _ => Line::Refused { used },
    }
}

/// What [`parse_data`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Data<'a> {
    /// The block has not all arrived.
    Incomplete,
    /// The block cannot arrive (larger than memcached's read buffer, or a length so large
    /// that memcached's arithmetic wraps, where it reads outside its buffer): hang up.
    Close,
    /// `CLIENT_ERROR bad command line termination`; `used` bytes consumed.
    BadTermination { used: usize },
    /// `CLIENT_ERROR bad authentication token format`; `used` bytes consumed.
    BadFormat { used: usize },
    /// The user and password to check; `used` bytes consumed.
    Token { user: &'a [u8], pass: &'a [u8], used: usize },
}

/// Reads the data block of `data_len` bytes (as the `set` line gave it) at the start of
/// `input`.
pub fn parse_data(input: &[u8], data_len: u32) -> Data<'_> {
    // memcached adds the 2 in 32 bits and keeps the sum in an int: near 4 GiB it wraps to
    // a nonsense length, refused here.
    if data_len > u32::MAX - 2 {
        return Data::Close;
    }
    let need = data_len as usize + 2;
    if need > DATA_BUFFER_BYTES {
        return if input.len() >= DATA_BUFFER_BYTES { Data::Close } else { Data::Incomplete };
    }
    let Some(block) = input.get(..need) else { return Data::Incomplete };
    let (payload, end) = block.split_at(need - 2);
    if end != b"\r\n" {
        return Data::BadTermination { used: need };
    }
    let payload = payload.iter().position(|&b| b == 0).map_or(payload, |nul| &payload[..nul]);
    let mut tokens = payload.split(|&b| b == b' ').filter(|t| !t.is_empty());
    match (tokens.next(), tokens.next()) {
        (Some(user), Some(pass)) => Data::Token { user, pass, used: need },
        _ => Data::BadFormat { used: need },
    }
}

/// memcached's `safe_strtoul`: C `strtoul` in base 10 (leading whitespace and a sign
/// allowed), then a whitespace byte or the end, no negative value, and the result kept to
/// 32 bits as memcached's `uint32_t` keeps it.
fn strtoul_u32(token: &[u8]) -> Option<u32> {
    let start = token.iter().position(|b| !is_c_space(*b)).unwrap_or(token.len());
    let rest = &token[start..];
    let (negative, digits) = match rest.first() {
        Some(b'-') => (true, &rest[1..]),
        Some(b'+') => (false, &rest[1..]),
        _ => (false, rest),
    };
    let count = digits.iter().take_while(|b| b.is_ascii_digit()).count();
    if count == 0 {
        return None;
    }
    let mut value: u64 = 0;
    for &digit in &digits[..count] {
        value = value.checked_mul(10)?.checked_add(u64::from(digit - b'0'))?;
    }
    match digits.get(count) {
        None => {}
        Some(&next) if is_c_space(next) => {}
        Some(_) => return None,
    }
    let value = if negative { value.wrapping_neg() } else { value };
    // A negative result reads as a huge unsigned one; memcached refuses it when the text
    // has a minus sign and the value is negative as a signed long.
    if (value as i64) < 0 && negative {
        return None;
    }
    Some(value as u32)
}

/// C `isspace` in the C locale.
fn is_c_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_as_memcached_reads_them() {
        assert_eq!(parse_line(b"s"), Line::Incomplete);
        assert_eq!(parse_line(b"set x 0 0 12"), Line::Incomplete);
        assert_eq!(parse_line(&[b'x'; 2049]), Line::Close);
        assert_eq!(parse_line(&[b'x'; 2048]), Line::Incomplete);
        assert_eq!(parse_line(b"set x 0 0 12\r\nrest"), Line::Set { used: 14, data_len: 12 });
        assert_eq!(parse_line(b"set x 0 0 12\n"), Line::Set { used: 13, data_len: 12 });
        assert_eq!(parse_line(b"set x 0 0 +3 noreply\r\n"), Line::Set { used: 22, data_len: 3 });
        assert_eq!(parse_line(b"set x 0 0 4294967306\r\n"), Line::Set { used: 22, data_len: 10 });
        for refused in [
            &b"get foo\r\n"[..],
            b"set x 0 0\r\n",
            b"add x 0 0 5\r\n",
            b"set x 0 0 abc\r\n",
            b"set x 0 0 -1\r\n",
            b"set\tx 0 0 5\r\n",
            b"\r\n",
            b"set x 0 0 99999999999999999999\r\n",
        ] {
            assert_eq!(parse_line(refused), Line::Refused { used: refused.len() }, "{refused:?}");
        }
    }

    #[test]
    fn data_blocks() {
        let token =
            |user: &'static [u8], pass: &'static [u8], used| Data::Token { user, pass, used };
        assert_eq!(parse_data(b"alice secret\r\n", 12), token(b"alice", b"secret", 14));
        assert_eq!(parse_data(b"alice  secret x\r\n", 15), token(b"alice", b"secret", 17));
        assert_eq!(parse_data(b"alice secret\r", 12), Data::Incomplete);
        assert_eq!(parse_data(b"alice secretXY", 12), Data::BadTermination { used: 14 });
        assert_eq!(parse_data(b"alice\r\n", 5), Data::BadFormat { used: 7 });
        assert_eq!(parse_data(b"alice\tsecret\r\n", 12), Data::BadFormat { used: 14 });
        assert_eq!(parse_data(b"\r\n", 0), Data::BadFormat { used: 2 });
        assert_eq!(parse_data(&[b' '; 100], 16382), Data::Incomplete);
        assert_eq!(parse_data(&[b' '; 16383], 16383), Data::Incomplete);
        assert_eq!(parse_data(&[b' '; 16384], 16383), Data::Close);
        assert_eq!(parse_data(b"", u32::MAX), Data::Close);
    }
}
