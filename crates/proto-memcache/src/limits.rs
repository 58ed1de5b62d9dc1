//! Bounds the request parser enforces, handed in as a value (never global state).

/// Limits for [`crate::parse_request`] and [`crate::parse_response`].
///
/// The defaults are memcached's: 250-byte keys (`KEY_MAX_LENGTH`), 1 MiB values (`-I`,
/// `item_size_max`; memcached also counts its item header, we count value bytes only) and
/// the 2048-byte window in which a command line must show its newline. memcached lets a
/// `get`/`gets` line grow without bound and serves any number of keys; we bound the line
/// (at 4 MiB by default, some 600,000 short keys) but not the key count. A longer line of
/// any other command is still served when it is already whole in the buffer, up to
/// memcached's 16 KB read buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest key, in bytes as sent (a base64 meta key is measured before decoding, as
    /// memcached does).
    pub key_len_max: usize,
    /// Largest data block of a storage command; one byte more gets `SERVER_ERROR object too
    /// large for cache` and the block is swallowed.
    pub value_len_max: usize,
    /// Longest command line still arriving, without its `\r\n`: a longer one whose newline
    /// is not in the buffer closes the connection, unless it starts with `get ` or `gets `.
    pub line_len_max: usize,
    /// Longest command line, newline included, that is served when it is already whole in
    /// the buffer. memcached reads into a 16 KB buffer and serves any line it finds whole
    /// there, so a 10 KB `gat` or `mg` sent in one write works while the same line split
    /// across reads is hung up on.
    pub line_len_max_whole: usize,
    /// Longest `get`/`gets` line, without its `\r\n`; past it the connection is closed.
    pub get_line_len_max: usize,
    /// Most keys in one `get`/`gets`/`gat`/`gats`; more gets `CLIENT_ERROR too many keys`
    /// (no bound by default, as in memcached).
    pub keys_per_get_max: usize,
}

/// memcached's `KEY_MAX_LENGTH`.
pub const KEY_LEN_MAX_DEFAULT: usize = 250;
/// memcached's default item size limit (`-I 1m`).
pub const VALUE_LEN_MAX_DEFAULT: usize = 1024 * 1024;
/// memcached hangs up after this many bytes without a newline (unless the line is a get).
pub const LINE_LEN_MAX_DEFAULT: usize = 2048;
/// memcached's read buffer (`READ_BUFFER_SIZE`): the longest line it can see whole.
pub const LINE_LEN_MAX_WHOLE_DEFAULT: usize = 16 * 1024;
/// No bound, as in memcached: clients send tens of thousands of keys in one get.
pub const KEYS_PER_GET_MAX_DEFAULT: usize = usize::MAX;
/// Most digits in a memcached number (`safe_strtoull`: a u64 has at most 20): the
/// request tokens the codec parses, and the stored value `incr`/`decr` reads.
pub const NUMBER_DIGITS_MAX: usize = 20;
/// memcached has no bound; ours keeps the newline scan of a line still arriving cheap and
/// the line well inside the connection's input limit (16 MiB), while serving 1 MB gets.
pub const GET_LINE_LEN_MAX_DEFAULT: usize = 4 * 1024 * 1024;

// A storage line with the longest key and every number at its widest must fit in a line.
const _: () = assert!(KEY_LEN_MAX_DEFAULT + 100 < LINE_LEN_MAX_DEFAULT);
const _: () = assert!(GET_LINE_LEN_MAX_DEFAULT >= LINE_LEN_MAX_WHOLE_DEFAULT);
const _: () = assert!(LINE_LEN_MAX_WHOLE_DEFAULT >= LINE_LEN_MAX_DEFAULT + 2);
// memcached reads the length of a data block as a C int; values must stay below that.
const _: () = assert!(VALUE_LEN_MAX_DEFAULT < i32::MAX as usize - 2);
// `u64::MAX` has exactly that many digits.
const _: () = assert!(u64::MAX / 10u64.pow(NUMBER_DIGITS_MAX as u32 - 1) > 0);

impl Default for Limits {
    fn default() -> Self {
        Limits {
            key_len_max: KEY_LEN_MAX_DEFAULT,
            value_len_max: VALUE_LEN_MAX_DEFAULT,
            line_len_max: LINE_LEN_MAX_DEFAULT,
            line_len_max_whole: LINE_LEN_MAX_WHOLE_DEFAULT,
            get_line_len_max: GET_LINE_LEN_MAX_DEFAULT,
            keys_per_get_max: KEYS_PER_GET_MAX_DEFAULT,
        }
    }
}
