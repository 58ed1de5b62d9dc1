//! Bounds the request parser enforces, handed in as a value (never global state).

/// Limits for [`crate::parse_command`].
///
/// The defaults match Redis: `proto-max-bulk-len` is 512 MiB and an inline request (or a
/// length line) may be 64 KiB (`PROTO_INLINE_MAX_SIZE`). `args_max` is the 1024 * 1024
/// bound that Redis applied to `*<count>` before 7.0 (7.0 raised it to `INT_MAX` and grows
/// `argv` as arguments arrive); we keep the old, smaller bound because every parsed argument
/// costs us a span entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted `*<count>` of a multibulk request.
    pub args_max: usize,
    /// Largest accepted `$<len>` of one bulk argument.
    pub bulk_len_max: usize,
    /// Longest inline request line, and longest `*`/`$` length line, in bytes.
    ///
    /// Precisely: an inline request's LF must come within `inline_len_max + 2` bytes (a
    /// full-length line plus CRLF), and a length line's CR within `inline_len_max + 1`.
    /// Without one, the parser waits while at most `inline_len_max` bytes are buffered and
    /// closes the connection past that, as Redis does.
    pub inline_len_max: usize,
    /// The client has not logged in while a password is required: Redis's smaller bounds
    /// apply on top of the others ([`UNAUTHENTICATED_ARGS_MAX`] arguments,
    /// [`UNAUTHENTICATED_BULK_LEN_MAX`] bytes an argument), each with its own error, so a
    /// stranger cannot make the server buffer a 512 MiB argument before AUTH.
    pub unauthenticated: bool,
}

/// Redis's bound on `*<count>` before a required login.
pub const UNAUTHENTICATED_ARGS_MAX: usize = 10;
/// Redis's bound on `$<len>` before a required login.
pub const UNAUTHENTICATED_BULK_LEN_MAX: usize = 16384;

/// Redis's default `proto-max-bulk-len`.
pub const BULK_LEN_MAX_DEFAULT: usize = 512 * 1024 * 1024;
/// Pre-7.0 Redis bound on the multibulk count.
pub const ARGS_MAX_DEFAULT: usize = 1024 * 1024;
/// Redis's `PROTO_INLINE_MAX_SIZE`.
pub const INLINE_LEN_MAX_DEFAULT: usize = 64 * 1024;

// A length line must fit in the inline window, or a legal `$<len>` could never be read.
const _: () = assert!(INLINE_LEN_MAX_DEFAULT > 32);
const _: () = assert!(ARGS_MAX_DEFAULT <= i32::MAX as usize);
const _: () = assert!(BULK_LEN_MAX_DEFAULT <= i64::MAX as usize);

impl Default for Limits {
    fn default() -> Self {
        Limits {
            args_max: ARGS_MAX_DEFAULT,
            bulk_len_max: BULK_LEN_MAX_DEFAULT,
            inline_len_max: INLINE_LEN_MAX_DEFAULT,
            unauthenticated: false,
        }
    }
}

impl Limits {
    /// These limits for a client that has not logged in while a login is required.
    pub fn unauthenticated(self) -> Limits {
        Limits { unauthenticated: true, ..self }
    }
}
