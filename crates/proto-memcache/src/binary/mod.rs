//! memcached's binary protocol: 24-byte headers, then extras, key and value.
//!
//! ```text
//!  server:  bytes --parse_request--> BinRequest<'_> --(exec)--> compose_response --> Vec<u8>
//!                        |             borrows extras, key and value from the bytes
//!                     Limits           BinParseError: Incomplete | Reject{..} | Close
//!
//!  client:  compose_request --> Vec<u8>;  bytes --parse_response--> BinResponse<'_>
//!
//!  with -S: bytes --sasl::gate--> SaslRequest<'_> (or the refusal before authentication),
//!           else parse_request as above
//! ```
//!
//! Behaves as memcached 1.6 does (checked against 1.6.18 on the wire): the extras, key and
//! body lengths each opcode allows, `Invalid arguments` and a hang-up for a packet that
//! breaks them, `Unknown command` (connection kept) for an opcode it does not serve. The
//! deliberate differences are listed on [`parse_request`].

mod request;
mod response;
pub mod sasl;

#[cfg(test)]
mod tests;

pub use request::{compose_request, parse_request, refused_set_key, BinParseError, BinRequest};
pub use response::{
    compose_error, compose_error_message, compose_response, compose_response_or_lend,
    parse_response, BinResponse, Reply,
};

/// The first byte of every request packet.
pub const REQUEST_MAGIC: u8 = 0x80;
/// The first byte of every response packet.
pub const RESPONSE_MAGIC: u8 = 0x81;
/// Every packet starts with a header of this many bytes.
pub const HEADER_LEN: usize = 24;

/// A packet header; `vbucket_or_status` is the vbucket in a request, the status in a
/// response.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub magic: u8,
    pub opcode: u8,
    pub key_len: u16,
    pub extras_len: u8,
    pub data_type: u8,
    pub vbucket_or_status: u16,
    pub body_len: u32,
    pub opaque: u32,
    pub cas: u64,
}

impl Header {
    /// Reads a header from the first [`HEADER_LEN`] bytes of `bytes`, or `None` if fewer.
    pub fn read(bytes: &[u8]) -> Option<Header> {
        let h: &[u8; HEADER_LEN] = bytes.get(..HEADER_LEN)?.try_into().ok()?;
        let u16_at = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
        let u32_at = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        Some(Header {
            magic: h[0],
            opcode: h[1],
            key_len: u16_at(2),
            extras_len: h[4],
            data_type: h[5],
            vbucket_or_status: u16_at(6),
            body_len: u32_at(8),
            opaque: u32_at(12),
            cas: u64::from(u32_at(16)) << 32 | u64::from(u32_at(20)),
        })
    }

    /// Appends the header's 24 bytes.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.push(self.magic);
        out.push(self.opcode);
        out.extend_from_slice(&self.key_len.to_be_bytes());
        out.push(self.extras_len);
        out.push(self.data_type);
        out.extend_from_slice(&self.vbucket_or_status.to_be_bytes());
        out.extend_from_slice(&self.body_len.to_be_bytes());
        out.extend_from_slice(&self.opaque.to_be_bytes());
        out.extend_from_slice(&self.cas.to_be_bytes());
    }
}

/// The opcodes memcached 1.6 serves (without SASL, which it answers `Unknown command`
/// unless started with `-S`, and which [`sasl`] parses then; `Verbosity`, which 1.6 lists
/// but does not serve, is answered `Unknown command` too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Opcode {
    Get = 0x00,
    Set = 0x01,
    Add = 0x02,
    Replace = 0x03,
    Delete = 0x04,
    Increment = 0x05,
    Decrement = 0x06,
    Quit = 0x07,
    Flush = 0x08,
    GetQ = 0x09,
    Noop = 0x0a,
    Version = 0x0b,
    GetK = 0x0c,
    GetKQ = 0x0d,
    Append = 0x0e,
    Prepend = 0x0f,
    Stat = 0x10,
    SetQ = 0x11,
    AddQ = 0x12,
    ReplaceQ = 0x13,
    DeleteQ = 0x14,
    IncrementQ = 0x15,
    DecrementQ = 0x16,
    QuitQ = 0x17,
    FlushQ = 0x18,
    AppendQ = 0x19,
    PrependQ = 0x1a,
    Touch = 0x1c,
    Gat = 0x1d,
    GatQ = 0x1e,
    GatK = 0x23,
    GatKQ = 0x24,
}

impl Opcode {
    /// Every opcode, in wire order.
    pub const ALL: [Opcode; 32] = {
        use Opcode::*;
        [
            Get, Set, Add, Replace, Delete, Increment, Decrement, Quit, Flush, GetQ, Noop, Version,
            GetK, GetKQ, Append, Prepend, Stat, SetQ, AddQ, ReplaceQ, DeleteQ, IncrementQ,
            DecrementQ, QuitQ, FlushQ, AppendQ, PrependQ, Touch, Gat, GatQ, GatK, GatKQ,
        ]
    };

    /// The opcode of a byte, by a table lookup (this runs once per request).
    pub fn from_u8(byte: u8) -> Option<Opcode> {
        OPCODES[usize::from(byte)]
    }

    /// The loud opcode a quiet one stands for, and whether it was quiet.
    pub fn loud(self) -> (Opcode, bool) {
        use Opcode::*;
        let loud = match self {
            GetQ => Get,
            GetKQ => GetK,
            SetQ => Set,
            AddQ => Add,
            ReplaceQ => Replace,
            DeleteQ => Delete,
            IncrementQ => Increment,
            DecrementQ => Decrement,
            QuitQ => Quit,
            FlushQ => Flush,
            AppendQ => Append,
            PrependQ => Prepend,
            GatQ => Gat,
            GatKQ => GatK,
            loud => return (loud, false),
        };
        (loud, true)
    }
}

/// The message of [`Status::OutOfMemory`] for a store-family write (memcached words it
/// apart from other out-of-memory errors).
pub const OUT_OF_MEMORY_STORING: &str = "Out of memory allocating item";

/// [`Opcode::from_u8`]'s table: each byte's opcode, if any.
const OPCODES: [Option<Opcode>; 256] = {
    let mut table = [None; 256];
    let mut i = 0;
    while i < Opcode::ALL.len() {
        table[Opcode::ALL[i] as usize] = Some(Opcode::ALL[i]);
        i += 1;
    }
    table
};

/// Response statuses memcached sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum Status {
    NoError = 0x0000,
    KeyNotFound = 0x0001,
    KeyExists = 0x0002,
    TooLarge = 0x0003,
    InvalidArguments = 0x0004,
    NotStored = 0x0005,
    NonNumeric = 0x0006,
    /// memcached's answer to Flush while `-F` disables it, and to a failed or missing
    /// SASL authentication.
    AuthError = 0x0020,
    /// A SASL exchange wants another step (no message of its own).
    AuthContinue = 0x0021,
    UnknownCommand = 0x0081,
    OutOfMemory = 0x0082,
    /// The binary protocol's "Internal error", Spinel's answer to a write on a read-only
    /// replica (the message says so).
    ReadOnlyReplica = 0x0084,
    /// The binary protocol's "Busy" (memcached never sends it): Spinel's answer while a
    /// Redis script is busy and holds the store.
    Busy = 0x0085,
}

impl Status {
    /// The body memcached sends with the status (`write_bin_error`).
    pub fn message(self) -> &'static str {
        match self {
            Status::NoError => "",
            Status::KeyNotFound => "Not found",
            Status::KeyExists => "Data exists for key.",
            Status::TooLarge => "Too large.",
            Status::InvalidArguments => "Invalid arguments",
            Status::NotStored => "Not stored.",
            Status::NonNumeric => "Non-numeric server-side value for incr or decr",
            Status::AuthError => "Auth failure.",
            Status::AuthContinue => "",
            Status::UnknownCommand => "Unknown command",
            Status::Busy => "Busy running a script",
            Status::ReadOnlyReplica => "read-only replica",
            Status::OutOfMemory => "Out of memory",
        }
    }

    pub fn from_u16(code: u16) -> Option<Status> {
        use Status::*;
        [
            NoError,
            KeyNotFound,
            KeyExists,
            TooLarge,
            InvalidArguments,
            NotStored,
            NonNumeric,
            AuthError,
            AuthContinue,
            UnknownCommand,
            OutOfMemory,
        ]
        .into_iter()
        .find(|status| *status as u16 == code)
    }
}
