//! DUMP payloads: one value in Redis's RDB serialization, then the RDB version and a
//! checksum, the bytes redis-server 7.0 writes and reads (`createDumpPayload`,
//! `verifyDumpPayload`, `rdbSaveObject`, `rdbLoadObject`).
//!
//! ```text
//!   type u8 | value                    (as in an RDB file, without the key)
//!   RDB version u16 LE                 (10: Redis 7.0)
//!   CRC-64/Jones u64 LE                (of every byte before it; crc64.rs)
//!
//!   length:  00LLLLLL | 01LLLLLL LLLLLLLL | 0x80 u32 BE | 0x81 u64 BE
//!   string:  length bytes
//!          | 0xC0 i8 | 0xC1 i16 LE | 0xC2 i32 LE     (the decimal text of an integer)
//!          | 0xC3 compressed length, length, LZF bytes (lzf.rs)
//! ```
//!
//! Written: a string as Redis writes it, byte for byte (integer forms for canonical
//! integers in 32 bits, LZF past 20 bytes when that is shorter); collections in the
//! plain forms every Redis since 2.x loads: a list as type 1 (elements), a set as type 2
//! (members), a sorted set as type 5 (member, binary double score), a hash as type 4
//! (field, value). Redis 7.0 writes small collections as listpacks or intsets instead, so
//! those payloads differ from its own, but each restores on it to the same value.
//!
//! Read: every type Redis 7.0 writes (those, plus listpack hashes and sorted sets, the
//! intset, quicklist 2) and the older ones a Redis 6 payload may hold (ziplists, quicklist
//! 1, sorted sets with text scores). Streams are written and read in Redis 7.0's form,
//! node listpacks and consumer groups (`stream.rs`; Redis 6's type 15 read too). Modules
//! are refused: Spinel has none.

mod convert;
mod crc64;
pub mod file;
mod lzf;
mod packed;
mod stream;

pub use convert::{from_owned, kept, Kept};
pub use crc64::{crc64, crc64_update};

/// The RDB version written, and the newest read (Redis 7.0's).
pub const RDB_VERSION: u16 = 10;

/// A value as a DUMP payload carries it.
#[derive(Debug, Clone)]
pub enum Value {
    String(Vec<u8>),
    List(Vec<Vec<u8>>),
    Set(Vec<Vec<u8>>),
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
    ZSet(Vec<(Vec<u8>, f64)>),
    Stream(Box<crate::stream::StreamValue>),
}

impl PartialEq for Value {
    /// Equal contents; two streams are equal when their entries, counters and groups are
    /// (a node's internal sizes are not part of the value).
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::String(a), Value::String(b)) => a == b,
            (Value::List(a), Value::List(b)) | (Value::Set(a), Value::Set(b)) => a == b,
            (Value::Hash(a), Value::Hash(b)) => a == b,
            (Value::ZSet(a), Value::ZSet(b)) => a == b,
            (Value::Stream(a), Value::Stream(b)) => stream::same_stream(a, b),
            _ => false,
        }
    }
}

// Type bytes (rdb.h).
const TYPE_STRING: u8 = 0;
const TYPE_LIST: u8 = 1;
const TYPE_SET: u8 = 2;
const TYPE_ZSET: u8 = 3;
const TYPE_HASH: u8 = 4;
const TYPE_ZSET_2: u8 = 5;
const TYPE_LIST_ZIPLIST: u8 = 10;
const TYPE_SET_INTSET: u8 = 11;
const TYPE_ZSET_ZIPLIST: u8 = 12;
const TYPE_HASH_ZIPLIST: u8 = 13;
const TYPE_LIST_QUICKLIST: u8 = 14;
const TYPE_HASH_LISTPACK: u8 = 16;
const TYPE_ZSET_LISTPACK: u8 = 17;
const TYPE_LIST_QUICKLIST_2: u8 = 18;

/// A quicklist 2 node holding one element as a plain string (not a listpack).
const QUICKLIST_NODE_PLAIN: u64 = 1;
const QUICKLIST_NODE_PACKED: u64 = 2;

/// The payload DUMP answers for `value`.
pub fn dump(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    put_entry(&mut out, None, value);
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// A value's type byte, then `key` when there is one (an RDB file's entry), then the value.
fn put_entry(out: &mut Vec<u8>, key: Option<&[u8]>, value: &Value) {
    let put_key = |out: &mut Vec<u8>| {
        if let Some(key) = key {
            put_string(out, key);
        }
    };
    match value {
        Value::String(bytes) => {
            out.push(TYPE_STRING);
            put_key(out);
            put_string(out, bytes);
        }
        Value::List(elements) | Value::Set(elements) => {
            out.push(if matches!(value, Value::List(_)) { TYPE_LIST } else { TYPE_SET });
            put_key(out);
            put_len(out, elements.len() as u64);
            elements.iter().for_each(|element| put_string(out, element));
        }
        Value::Hash(fields) => {
            out.push(TYPE_HASH);
            put_key(out);
            put_len(out, fields.len() as u64);
            for (name, value) in fields {
                put_string(out, name);
                put_string(out, value);
            }
        }
        Value::ZSet(members) => {
            out.push(TYPE_ZSET_2);
            put_key(out);
            put_len(out, members.len() as u64);
            for (member, score) in members {
                put_string(out, member);
                out.extend_from_slice(&score.to_le_bytes());
            }
        }
        Value::Stream(value) => {
            out.push(stream::TYPE_STREAM_LISTPACKS_2);
            put_key(out);
            stream::put_stream(out, value);
        }
    }
}

/// `verifyDumpPayload`: a footer, a version this server reads, and a matching checksum.
pub fn verify(payload: &[u8]) -> bool {
    let Some(body_len) = payload.len().checked_sub(10) else { return false };
    let version = u16::from_le_bytes([payload[body_len], payload[body_len + 1]]);
    let crc = u64::from_le_bytes(payload[body_len + 2..].try_into().expect("8 bytes"));
    version <= RDB_VERSION && crc64(&payload[..body_len + 2]) == crc
}

/// The value in a payload that passed [`verify`]; `None` is "Bad data format" (an unknown
/// type, lengths past the end, an empty collection, duplicate members, a NaN score).
pub fn load(payload: &[u8]) -> Option<Value> {
    let mut reader = Reader::new(&payload[..payload.len().checked_sub(10)?]);
    let kind = reader.byte()?;
    load_value(&mut reader, kind)
}

/// Whether `kind` is a value type byte this reader knows (an RDB file's opcodes and module
/// types are not).
fn known_type(kind: u8) -> bool {
    matches!(kind, 0..=5 | 10..=14 | 16..=18)
        || kind == stream::TYPE_STREAM_LISTPACKS
        || kind == stream::TYPE_STREAM_LISTPACKS_2
}

/// The value of type `kind` at the reader's front.
fn load_value(reader: &mut Reader<'_>, kind: u8) -> Option<Value> {
    let value = match kind {
        TYPE_STRING => Value::String(reader.string()?),
        TYPE_LIST => Value::List(reader.strings(1)?),
        TYPE_SET => Value::Set(reader.strings(1)?),
        TYPE_SET_INTSET => Value::Set(packed::intset(&reader.string()?)?),
        TYPE_HASH => Value::Hash(pairs(reader.strings(2)?)),
        TYPE_HASH_ZIPLIST => Value::Hash(pairs(packed::ziplist(&reader.string()?)?)),
        TYPE_HASH_LISTPACK => Value::Hash(pairs(packed::listpack(&reader.string()?)?)),
        TYPE_ZSET | TYPE_ZSET_2 => Value::ZSet(reader.zset(kind == TYPE_ZSET_2)?),
        TYPE_ZSET_ZIPLIST => Value::ZSet(scored(packed::ziplist(&reader.string()?)?)?),
        TYPE_ZSET_LISTPACK => Value::ZSet(scored(packed::listpack(&reader.string()?)?)?),
        TYPE_LIST_ZIPLIST => Value::List(packed::ziplist(&reader.string()?)?),
        TYPE_LIST_QUICKLIST | TYPE_LIST_QUICKLIST_2 => {
            Value::List(reader.quicklist(kind == TYPE_LIST_QUICKLIST_2)?)
        }
        stream::TYPE_STREAM_LISTPACKS | stream::TYPE_STREAM_LISTPACKS_2 => {
            Value::Stream(Box::new(stream::load_stream(reader, kind)?))
        }
        _ => return None,
    };
    let valid = match &value {
        Value::String(_) | Value::Stream(_) => true,
        Value::List(elements) => !elements.is_empty(),
        Value::Set(members) => distinct(members.iter().map(Vec::as_slice)),
        Value::Hash(fields) => distinct(fields.iter().map(|(name, _)| name.as_slice())),
        Value::ZSet(members) => {
            distinct(members.iter().map(|(member, _)| member.as_slice()))
                && members.iter().all(|(_, score)| !score.is_nan())
        }
    };
    valid.then_some(value)
}

/// Whether there is at least one item and no two are equal (Redis refuses both).
fn distinct<'a>(items: impl ExactSizeIterator<Item = &'a [u8]>) -> bool {
    let len = items.len();
    let unique: std::collections::HashSet<&[u8]> = items.collect();
    len > 0 && unique.len() == len
}

fn pairs(flat: Vec<Vec<u8>>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut flat = flat.into_iter();
    let mut pairs = Vec::with_capacity(flat.len() / 2);
    while let (Some(name), Some(value)) = (flat.next(), flat.next()) {
        pairs.push((name, value));
    }
    pairs
}

/// Member, score text, member, score text... as (member, score).
fn scored(flat: Vec<Vec<u8>>) -> Option<Vec<(Vec<u8>, f64)>> {
    if !flat.len().is_multiple_of(2) {
        return None;
    }
    pairs(flat).into_iter().map(|(member, score)| Some((member, parse_score(&score)?))).collect()
}

fn parse_score(text: &[u8]) -> Option<f64> {
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// `rdbSaveLen`.
fn put_len(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.extend_from_slice(&[0x40 | (len >> 8) as u8, len as u8]);
    } else if len <= u64::from(u32::MAX) {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// `rdbSaveRawString` with compression on (Redis's default `rdbcompression yes`).
fn put_string(out: &mut Vec<u8>, bytes: &[u8]) {
    if bytes.len() <= 11 {
        if let Some(value) = canonical_i32(bytes) {
            if let Ok(small) = i8::try_from(value) {
                out.extend_from_slice(&[0xc0, small as u8]);
            } else if let Ok(medium) = i16::try_from(value) {
                out.push(0xc1);
                out.extend_from_slice(&medium.to_le_bytes());
            } else {
                out.push(0xc2);
                out.extend_from_slice(&value.to_le_bytes());
            }
            return;
        }
    }
    if bytes.len() > 20 {
        if let Some(packed) = lzf::compress(bytes, bytes.len() - 4) {
            out.push(0xc3);
            put_len(out, packed.len() as u64);
            put_len(out, bytes.len() as u64);
            out.extend_from_slice(&packed);
            return;
        }
    }
    put_len(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// The integer `bytes` spell, if they are its canonical decimal text (no sign but a
/// leading '-', no leading zero) and it fits 32 bits: `rdbTryIntegerEncoding`.
fn canonical_i32(bytes: &[u8]) -> Option<i32> {
    let value: i32 = std::str::from_utf8(bytes).ok()?.parse().ok()?;
    (value.to_string().as_bytes() == bytes).then_some(value)
}

/// Reads an RDB value's parts from the front of its bytes; every read is bounded by what
/// is left, so a lying length ends the read, never an allocation of what it claims.
struct Reader<'a> {
    bytes: &'a [u8],
    /// Set when a read wanted more bytes than are left: on a part of a file read so far,
    /// that asks for more of it rather than saying the data is bad.
    short: bool,
}

/// A length, or the encoding of a special string (`rdbLoadLen`'s `isencoded`).
enum Len {
    Plain(u64),
    Encoded(u8),
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, short: false }
    }

    /// Whether `n` more bytes (or items that take a byte at least) can be there.
    fn fits(&mut self, n: usize) -> bool {
        if n > self.bytes.len() {
            self.short = true;
            return false;
        }
        true
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if !self.fits(n) {
            return None;
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Some(head)
    }

    fn byte(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn len_or_encoding(&mut self) -> Option<Len> {
        let first = self.byte()?;
        Some(match first >> 6 {
            0 => Len::Plain(u64::from(first & 0x3f)),
            1 => Len::Plain(u64::from(first & 0x3f) << 8 | u64::from(self.byte()?)),
            2 if first == 0x80 => {
                Len::Plain(u64::from(u32::from_be_bytes(self.take(4)?.try_into().ok()?)))
            }
            2 if first == 0x81 => Len::Plain(u64::from_be_bytes(self.take(8)?.try_into().ok()?)),
            2 => return None,
            _ => Len::Encoded(first & 0x3f),
        })
    }

    fn len(&mut self) -> Option<usize> {
        usize::try_from(self.number()?).ok()
    }

    /// A plain length read as a number (`rdbLoadLen`: stream IDs and counters).
    fn number(&mut self) -> Option<u64> {
        match self.len_or_encoding()? {
            Len::Plain(len) => Some(len),
            Len::Encoded(_) => None,
        }
    }

    /// A count of items that each take a byte at least: never more than the bytes left.
    fn count(&mut self) -> Option<usize> {
        let n = self.len()?;
        self.fits(n).then_some(n)
    }

    fn id(&mut self) -> Option<crate::stream::StreamId> {
        Some(crate::stream::StreamId::new(self.number()?, self.number()?))
    }

    /// `rdbLoadMillisecondTime`: 8 bytes, little-endian.
    fn u64_le(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    /// `rdbGenericLoadStringObject`.
    fn string(&mut self) -> Option<Vec<u8>> {
        let int = |bytes: &[u8]| {
            let mut word = [0u8; 8];
            word[..bytes.len()].copy_from_slice(bytes);
            let shift = 64 - 8 * bytes.len() as u32;
            Some((i64::from_le_bytes(word) << shift >> shift).to_string().into_bytes())
        };
        match self.len_or_encoding()? {
            Len::Plain(len) => Some(self.take(usize::try_from(len).ok()?)?.to_vec()),
            Len::Encoded(0) => int(self.take(1)?),
            Len::Encoded(1) => int(self.take(2)?),
            Len::Encoded(2) => int(self.take(4)?),
            Len::Encoded(3) => {
                let (packed_len, len) = (self.len()?, self.len()?);
                let packed = self.take(packed_len)?;
                // The output is bounded by LZF's best ratio (a 3-byte reference writes
                // at most 264 bytes), so a lying length cannot allocate much.
                if len == 0 || len / 100 > packed.len() {
                    return None;
                }
                lzf::decompress(packed, len)
            }
            Len::Encoded(_) => None,
        }
    }

    /// A count, then `count * per_item` strings.
    fn strings(&mut self, per_item: usize) -> Option<Vec<Vec<u8>>> {
        let count = self.len()?.checked_mul(per_item)?;
        // Each string takes at least a byte: a count past the bytes left is a lie.
        if !self.fits(count) {
            return None;
        }
        (0..count).map(|_| self.string()).collect()
    }

    fn zset(&mut self, binary_scores: bool) -> Option<Vec<(Vec<u8>, f64)>> {
        let count = self.count()?;
        let mut members = Vec::with_capacity(count);
        for _ in 0..count {
            let member = self.string()?;
            let score = if binary_scores {
                f64::from_le_bytes(self.take(8)?.try_into().ok()?)
            } else {
                // `rdbLoadDoubleValue`: a length byte, 253-255 for NaN and the infinities.
                match self.byte()? {
                    253 => f64::NAN,
                    254 => f64::INFINITY,
                    255 => f64::NEG_INFINITY,
                    len => parse_score(self.take(usize::from(len))?)?,
                }
            };
            members.push((member, score));
        }
        Some(members)
    }

    /// Quicklist nodes: ziplists (1), or (2) each a container kind then a listpack or one
    /// plain element.
    fn quicklist(&mut self, version_2: bool) -> Option<Vec<Vec<u8>>> {
        let nodes = self.count()?;
        let mut elements = Vec::new();
        for _ in 0..nodes {
            let container = if version_2 { self.len()? as u64 } else { QUICKLIST_NODE_PACKED };
            let blob = self.string()?;
            match (container, version_2) {
                (QUICKLIST_NODE_PLAIN, true) => elements.push(blob),
                // An empty node is skipped, as Redis skips it (an empty list still fails).
                (QUICKLIST_NODE_PACKED, true) => elements.extend(packed::listpack(&blob)?),
                (_, false) => elements.extend(packed::ziplist(&blob)?),
                _ => return None,
            }
        }
        Some(elements)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(texts: &[&str]) -> Vec<Vec<u8>> {
        texts.iter().map(|t| t.as_bytes().to_vec()).collect()
    }

    /// Goal: string payloads are redis-server 7.0.15's, byte for byte (taken from its DUMP
    /// replies), and load back.
    #[test]
    fn strings_as_redis_writes_them() {
        let cases: [(&[u8], &[u8]); 4] = [
            (b"hello", b"\x00\x05hello\n\x00cr\xdfve4 \n"),
            (b"123", b"\x00\xc0{\n\x00H\xe2S\xe1\x00zg\xb9"),
            (b"-5", b"\x00\xc0\xfb\n\x00I\xc4\xc6\xf4\xd7&?h"),
            (&[b'x'; 100], b"\x00\xc3\t@d\x01xx\xe0W\x00\x01xx\n\x00]\xb7\xf6c\xbb\x08b_"),
        ];
        for (value, payload) in cases {
            assert_eq!(dump(&Value::String(value.to_vec())), payload);
            assert!(verify(payload));
            assert_eq!(load(payload), Some(Value::String(value.to_vec())));
        }
    }

    /// Goal: every kind round-trips through a payload, at sizes that take each length form.
    #[test]
    fn round_trips() {
        let big: Vec<Vec<u8>> = (0..20_000).map(|n| format!("e{n}").into_bytes()).collect();
        let values = [
            Value::String(Vec::new()),
            Value::String(b"12345678901".to_vec()),
            Value::String(b"007".to_vec()),
            Value::String(vec![b'q'; 70_000]),
            Value::List(bytes(&["a", "1", "a"])),
            Value::List(big.clone()),
            Value::Set(big),
            Value::Set(bytes(&["1", "-2", "x"])),
            Value::Hash(vec![(b"f".to_vec(), b"v".to_vec()), (b"n".to_vec(), b"10".to_vec())]),
            Value::ZSet(vec![(b"m".to_vec(), 1.5), (b"i".to_vec(), f64::NEG_INFINITY)]),
        ];
        for value in values {
            let payload = dump(&value);
            assert!(verify(&payload));
            assert_eq!(load(&payload), Some(value));
        }
    }

    /// Goal: a changed byte, a newer version, a cut payload and bad contents are refused.
    #[test]
    fn refusals() {
        let mut payload = dump(&Value::String(b"hello".to_vec()));
        payload[2] ^= 1;
        assert!(!verify(&payload));
        let mut newer = b"\x00\x01a".to_vec();
        newer.extend_from_slice(&11u16.to_le_bytes());
        newer.extend_from_slice(&crc64(&newer).to_le_bytes());
        assert!(!verify(&newer));
        assert!(!verify(b"short"));
        let sealed = |body: &[u8]| {
            let mut out = body.to_vec();
            out.extend_from_slice(&RDB_VERSION.to_le_bytes());
            out.extend_from_slice(&crc64(&out).to_le_bytes());
            out
        };
        for body in [&b"\x00\x09abc"[..], b"\x02\x00", b"\x02\x02\x01a\x01a", b"\x07", b"\x04\x05"]
        {
            let payload = sealed(body);
            assert!(verify(&payload));
            assert_eq!(load(&payload), None, "{body:?}");
        }
        assert_eq!(load(&sealed(b"\x02\x01\x01a")), Some(Value::Set(bytes(&["a"]))));
    }
}
