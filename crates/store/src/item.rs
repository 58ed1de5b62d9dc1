//! The item layout inside a segment (or a large-item region).
//!
//! ```text
//!   [byte 0] [key len] [value len] [extras] [client flags] [expiry] [CAS]  key  value
//!     1 B     varint     varint     1 B       varint        varint   8 B
//!            if 63 in             EXTENDED  if extras bit 0  bit 1   bit 2
//!            byte 0               only
//!
//!   byte 0:   7   6   5 ........... 0
//!           +-------+-----------------+
//!           | form  | key len 0..=62  |   form 01 PLAIN: nothing optional follows
//!           +-------+-----------------+        10 EXTENDED: an extras byte follows
//!                     63: varint after         00, 11 invalid (checked on every decode)
//!
//!   extras:   7   6   5    4      3       2       1        0
//!           +-----------+------+-------+-------+--------+--------+
//!           |value kind | win  | stale | CAS   | expiry | client |
//!           |  3 bits   | token|       |follows|follows | flags  |
//!           +-----------+------+-------+-------+--------+--------+
//!           value kind: 0 String, 1 List, 2 Hash, 3 Set, 4 ZSet, 5 Stream, 6..=7 invalid
//! ```
//! Keys up to 62 bytes keep their length in byte 0. A 20-byte key with a 20-byte value costs
//! 2 header bytes; 32/128 costs 3. A string with no client flags, expiry, stored CAS or meta
//! state is PLAIN: its value kind costs nothing, since String is 0 and a PLAIN header has no
//! extras byte to hold it; other kinds make the header EXTENDED (one byte more).
//! The CAS unique is normally not stored: it is the segment's opening sequence number and the
//! item's offset, unique per write. Only an item rewritten without a logical change (copied
//! forward by eviction, or touched) carries its CAS explicitly, so that it keeps it, and so
//! does one whose CAS the client chose (memcached meta `E`).
//!
//! The stale and win-token bits are memcached meta state ([`MetaState`]) and carry no bytes.

use crate::types::{Expiry, MetaState, ValueKind};

const HAS_CLIENT_FLAGS: u8 = 1 << 0;
const HAS_EXPIRY: u8 = 1 << 1;
const HAS_CAS: u8 = 1 << 2;
const IS_STALE: u8 = 1 << 3;
const WIN_TOKEN_SENT: u8 = 1 << 4;
/// The value kind's place in the extras byte.
const VALUE_KIND_SHIFT: u32 = 5;
/// The two forms; the other two values of the top bits are invalid, and checked on every
/// decode, so that a location pointing anywhere but at a header is likely caught.
const FORM_PLAIN: u8 = 0b01 << 6;
const FORM_EXTENDED: u8 = 0b10 << 6;
const FORM_MASK: u8 = 0b11 << 6;
const KEY_LEN_INLINE_MAX: usize = 62;
const KEY_LEN_ESCAPE: u8 = 63;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Header {
    pub(crate) client_flags: u32,
    pub(crate) expiry: Expiry,
    pub(crate) key_len: usize,
    pub(crate) value_len: usize,
    pub(crate) cas: Option<u64>,
    pub(crate) meta: MetaState,
    pub(crate) kind: ValueKind,
}

const _: () = assert!((ValueKind::MAX as u32) < 1 << (8 - VALUE_KIND_SHIFT));
const _: () = assert!(WIN_TOKEN_SENT < 1 << VALUE_KIND_SHIFT);

impl Header {
    fn extras(&self) -> u8 {
        let mut extras = 0;
        if self.client_flags != 0 {
            extras |= HAS_CLIENT_FLAGS;
        }
        if matches!(self.expiry, Expiry::AtMs(_)) {
            extras |= HAS_EXPIRY;
        }
        if self.cas.is_some() {
            extras |= HAS_CAS;
        }
        if self.meta.stale {
            extras |= IS_STALE;
        }
        if self.meta.win_token_sent {
            extras |= WIN_TOKEN_SENT;
        }
        extras | (self.kind as u8) << VALUE_KIND_SHIFT
    }

    pub(crate) fn encoded_len(&self) -> usize {
        let mut n = 1 + varint_len(self.value_len as u64);
        if self.key_len > KEY_LEN_INLINE_MAX {
            n += varint_len(self.key_len as u64);
        }
        if self.extras() != 0 {
            n += 1;
        }
        if self.client_flags != 0 {
            n += varint_len(u64::from(self.client_flags));
        }
        if let Expiry::AtMs(at) = self.expiry {
            n += varint_len(at);
        }
        if self.cas.is_some() {
            n += 8;
        }
        n
    }

    /// Total bytes of the item: header, key and value.
    pub(crate) fn item_len(&self) -> usize {
        self.encoded_len() + self.key_len + self.value_len
    }

    /// Writes the header into `out` (exactly `encoded_len` bytes); returns bytes written.
    pub(crate) fn encode(&self, out: &mut [u8]) -> usize {
        let extras = self.extras();
        let form = if extras == 0 { FORM_PLAIN } else { FORM_EXTENDED };
        let inline = self.key_len <= KEY_LEN_INLINE_MAX;
        out[0] = form | if inline { self.key_len as u8 } else { KEY_LEN_ESCAPE };
        let mut at = 1;
        if !inline {
            at += put_varint(&mut out[at..], self.key_len as u64);
        }
        at += put_varint(&mut out[at..], self.value_len as u64);
        if extras != 0 {
            out[at] = extras;
            at += 1;
        }
        if self.client_flags != 0 {
            at += put_varint(&mut out[at..], u64::from(self.client_flags));
        }
        if let Expiry::AtMs(ms) = self.expiry {
            at += put_varint(&mut out[at..], ms);
        }
        if let Some(cas) = self.cas {
            out[at..at + 8].copy_from_slice(&cas.to_le_bytes());
            at += 8;
        }
        at
    }

    /// Reads a header from the start of `bytes`; returns it and its length.
    #[cfg(test)]
    pub(crate) fn decode(bytes: &[u8]) -> (Header, usize) {
        Self::decode_with(|i| bytes[i])
    }

    /// Reads a header byte by byte through `byte(i)`, so that the caller never has to form a
    /// slice over bytes past the header that another thread may be writing.
    #[inline]
    pub(crate) fn decode_with(byte: impl Fn(usize) -> u8) -> (Header, usize) {
        let first = byte(0);
        let form = first & FORM_MASK;
        // The commonest header, a PLAIN string with its key length inline and a value under
        // 128 bytes (one varint byte), in two steps; under 16 KiB (two varint bytes), in
        // three (a 128-byte value took 86 instructions more through `decode_general`).
        if form == FORM_PLAIN && first & !FORM_MASK != KEY_LEN_ESCAPE {
            let key_len = usize::from(first & !FORM_MASK);
            let low = byte(1);
            if low < 0x80 {
                return (Header::plain(key_len, low.into()), 2);
            }
            let high = byte(2);
            if high < 0x80 {
                let value_len = usize::from(low & 0x7f) | usize::from(high) << 7;
                return (Header::plain(key_len, value_len), 3);
            }
        }
        Self::decode_general(first, byte)
    }

    /// A PLAIN header: a string with nothing optional.
    fn plain(key_len: usize, value_len: usize) -> Header {
        Header {
            client_flags: 0,
            expiry: Expiry::Never,
            key_len,
            value_len,
            cas: None,
            meta: MetaState { stale: false, win_token_sent: false },
            kind: ValueKind::String,
        }
    }

    fn decode_general(first: u8, byte: impl Fn(usize) -> u8) -> (Header, usize) {
        let form = first & FORM_MASK;
        assert!(form == FORM_PLAIN || form == FORM_EXTENDED, "not an item header");
        let mut at = 1;
        let key_len = match first & !FORM_MASK {
            KEY_LEN_ESCAPE => get_varint(&byte, &mut at),
            inline => u64::from(inline),
        };
        let value_len = get_varint(&byte, &mut at);
        // The value kind is read only in the EXTENDED branch, which exists anyway: a PLAIN
        // header (the common string) takes no step for it.
        let (flags, kind) = if form == FORM_EXTENDED {
            at += 1;
            let extras = byte(at - 1);
            (extras, ValueKind::from_bits(extras >> VALUE_KIND_SHIFT))
        } else {
            (0, ValueKind::String)
        };
        let mut client_flags = 0;
        if flags & HAS_CLIENT_FLAGS != 0 {
            client_flags = get_varint(&byte, &mut at) as u32;
        }
        let mut expiry = Expiry::Never;
        if flags & HAS_EXPIRY != 0 {
            expiry = Expiry::AtMs(get_varint(&byte, &mut at));
        }
        let mut cas = None;
        if flags & HAS_CAS != 0 {
            let mut le = [0u8; 8];
            for (i, b) in le.iter_mut().enumerate() {
                *b = byte(at + i);
            }
            cas = Some(u64::from_le_bytes(le));
            at += 8;
        }
        let meta =
            MetaState { stale: flags & IS_STALE != 0, win_token_sent: flags & WIN_TOKEN_SENT != 0 };
        let header = Header {
            client_flags,
            expiry,
            key_len: key_len as usize,
            value_len: value_len as usize,
            cas,
            meta,
            kind,
        };
        (header, at)
    }
}

fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

fn put_varint(out: &mut [u8], mut v: u64) -> usize {
    let mut i = 0;
    while v >= 0x80 {
        out[i] = (v as u8) | 0x80;
        v >>= 7;
        i += 1;
    }
    out[i] = v as u8;
    i + 1
}

fn get_varint(byte: &impl Fn(usize) -> u8, at: &mut usize) -> u64 {
    let mut v = 0u64;
    for i in 0..10 {
        let b = byte(*at);
        *at += 1;
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return v;
        }
    }
    panic!("corrupt varint in item header");
}

#[cfg(test)]
mod tests {
    use super::*;

    // Every header shape round-trips, and the common small item costs 3 bytes.
    #[test]
    fn header_round_trip() {
        let plain = MetaState::default();
        let stale = MetaState { stale: true, win_token_sent: false };
        let won = MetaState { stale: false, win_token_sent: true };
        let both = MetaState { stale: true, win_token_sent: true };
        let cases = [
            (0u32, Expiry::Never, 20usize, 20usize, None, plain, 2usize),
            (0, Expiry::Never, 32, 128, None, plain, 3),
            // Two varint bytes of value length (a shortcut of their own), then three.
            (0, Expiry::Never, 64, 10000, None, plain, 4),
            (0, Expiry::Never, 20, 10000, None, plain, 3),
            (0, Expiry::Never, 62, 16383, None, plain, 3),
            (0, Expiry::Never, 62, 16384, None, plain, 4),
            (0, Expiry::Never, 63, 300, None, plain, 4),
            (0, Expiry::Never, 62, 1, None, plain, 2),
            (0, Expiry::Never, 0, 127, None, plain, 2),
            (0, Expiry::Never, 1, 0, None, plain, 2),
            (0, Expiry::Never, 63, 1, None, plain, 3),
            (7, Expiry::Never, 32, 128, None, plain, 5),
            (u32::MAX, Expiry::AtMs(1_700_000_000_123), 65536, 64 << 20, Some(u64::MAX), both, 0),
            (0, Expiry::AtMs(0), 0, 0, Some(1), plain, 12),
            // Meta state costs the extras byte only.
            (0, Expiry::Never, 20, 20, None, stale, 3),
            (0, Expiry::Never, 20, 20, None, won, 3),
            (7, Expiry::Never, 20, 20, Some(9), both, 12),
        ];
        for (client_flags, expiry, key_len, value_len, cas, meta, want_len) in cases {
            let kind = ValueKind::String;
            let h = Header { client_flags, expiry, key_len, value_len, cas, meta, kind };
            let mut buf = [0u8; 64];
            let n = h.encode(&mut buf);
            assert_eq!(n, h.encoded_len());
            if want_len != 0 {
                assert_eq!(n, want_len);
            }
            let (d, m) = Header::decode(&buf);
            assert_eq!(m, n);
            assert_eq!(
                (d.client_flags, d.expiry, d.key_len, d.value_len, d.cas, d.meta, d.kind),
                (client_flags, expiry, key_len, value_len, cas, meta, kind)
            );
        }
    }

    // Every value kind round-trips, alone and beside every optional field; a String costs
    // nothing (a 20/20 item keeps its 2-byte header), another kind costs the extras byte.
    #[test]
    fn value_kind_round_trip() {
        let kinds = [
            ValueKind::String,
            ValueKind::List,
            ValueKind::Hash,
            ValueKind::Set,
            ValueKind::ZSet,
            ValueKind::Stream,
        ];
        let both = MetaState { stale: true, win_token_sent: true };
        for kind in kinds {
            let plain = Header {
                client_flags: 0,
                expiry: Expiry::Never,
                key_len: 20,
                value_len: 20,
                cas: None,
                meta: MetaState::default(),
                kind,
            };
            let full = Header {
                client_flags: u32::MAX,
                expiry: Expiry::AtMs(1_700_000_000_123),
                key_len: 300,
                value_len: 1 << 20,
                cas: Some(7),
                meta: both,
                kind,
            };
            for h in [plain, full] {
                let mut buf = [0u8; 64];
                let n = h.encode(&mut buf);
                assert_eq!(n, h.encoded_len());
                let (d, m) = Header::decode(&buf);
                assert_eq!(m, n);
                assert_eq!(
                    (d.kind, d.client_flags, d.expiry, d.key_len, d.value_len, d.cas, d.meta),
                    (kind, h.client_flags, h.expiry, h.key_len, h.value_len, h.cas, h.meta),
                );
            }
            let want = if kind == ValueKind::String { 2 } else { 3 };
            assert_eq!(plain.encoded_len(), want, "{kind:?}");
        }
    }

    // The codes past Stream are not a kind: a header carrying one is refused as corrupt.
    #[test]
    #[should_panic(expected = "not an item header")]
    fn value_kind_reserved_codes_are_refused() {
        // EXTENDED, key length 1; value length 1; extras: kind 6.
        let bytes = [FORM_EXTENDED | 1, 1, 6 << VALUE_KIND_SHIFT, b'k', b'v'];
        let _ = Header::decode(&bytes);
    }
}
