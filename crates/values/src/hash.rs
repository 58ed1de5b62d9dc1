//! The value bytes of a hash.
//!
//! ```text
//!   header:varint [set_ms:varint user_ms+1:varint]  (field value at_ms:varint) * expiring
//!   (field value) *                         header = expiring << 1 | key expiry was set here
//! ```
//!
//! `field` and `value` are [`put_entry`] entries (a LEB128 length, then the bytes). The
//! fields that carry an expiry (Unix milliseconds) come first, ordered by that time, as
//! Redis orders its `listpackex`; the others follow in insertion order, as Redis 7.0's
//! listpack keeps them. So a field without an expiry costs its two entries and nothing
//! else, and a hash without any costs one byte more than its entries (the zero count):
//! less than a listpack's 7-byte header and per-entry back-lengths.
//!
//! When every field has an expiry, the key itself is given the latest of them (unless the
//! key's own TTL comes first), so that the store drops the hash, for every command, when
//! its last field expires, as Redis deletes it. The header's low bit then says so, and the
//! two varints record the expiry set (`set_ms`) and the key's own one before it (`user_ms`,
//! 0 for none): if the key's expiry is no longer `set_ms`, EXPIRE or PERSIST changed it and
//! the new one is the key's own (see exec's `hash::key_expiry`).
//!
//! A field whose time has come is left out when the value is read ([`decode`]) and so is
//! gone from the next encoding written: expired fields are invisible to every command and
//! dropped when the hash is next rewritten.

use std::{
    borrow::Cow,
    collections::{HashMap, HashSet},
    mem,
};

use crate::{
    entries::{put_entry, Entries},
    owned::HashValue,
    varint::{put as put_varint, read as read_varint},
};

/// One live field of a hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field<'a> {
    pub name: Cow<'a, [u8]>,
    pub value: Cow<'a, [u8]>,
    /// Unix milliseconds after which the field is gone; `None` for a persistent field.
    pub expire_at_ms: Option<u64>,
}

impl<'a> Field<'a> {
    #[inline]
    pub fn new(name: &'a [u8], value: &'a [u8]) -> Field<'a> {
        Field { name: Cow::Borrowed(name), value: Cow::Borrowed(value), expire_at_ms: None }
    }
}

/// The key expiry a hash set itself because all its fields expire, and the key's own
/// expiry at that time (Unix milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyExpiry {
    pub set_ms: u64,
    pub user_ms: Option<u64>,
}

/// A decoded hash: its live fields in the encoding's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields<'a> {
    pub list: Vec<Field<'a>>,
    /// Whether fields that had expired were left out (the value should be rewritten).
    pub dropped: bool,
    /// The key expiry this hash set, if it did.
    pub key_expiry: Option<KeyExpiry>,
}

impl<'a> Fields<'a> {
    /// The index of field `name`.
    #[inline]
    pub fn find(&self, name: &[u8]) -> Option<usize> {
        self.list.iter().position(|field| *field.name == *name)
    }

    /// The value of field `name`.
    #[inline]
    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        self.find(name).map(|index| &*self.list[index].value)
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.list.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Sets `name` to `value` (HSET: any expiry of the field is dropped unless
    /// `keep_ttl`). Returns whether the field is new; a new field goes last.
    #[inline]
    pub fn set(&mut self, name: &[u8], value: Cow<'a, [u8]>, keep_ttl: bool) -> bool {
        match self.find(name) {
            Some(index) => {
                let field = &mut self.list[index];
                field.value = value;
                if !keep_ttl {
                    field.expire_at_ms = None;
                }
                false
            }
            None => {
                let name = Cow::Owned(name.to_vec());
                self.list.push(Field { name, value, expire_at_ms: None });
                true
            }
        }
    }
}

/// The fields a command names, located in one pass over the hash (a map of the names),
/// so a command naming m fields of an n-field hash costs O(n + m), not O(n * m).
/// Removals only mark fields; [`Batch::finish`] drops them, keeping the order.
pub struct Batch<'n> {
    at: HashMap<&'n [u8], usize>,
    gone: Vec<bool>,
}

impl<'n> Batch<'n> {
    #[inline]
    pub fn new(fields: &Fields<'_>, names: impl IntoIterator<Item = &'n [u8]>) -> Batch<'n> {
        let mut at: HashMap<&[u8], usize> = names.into_iter().map(|n| (n, usize::MAX)).collect();
        for (index, field) in fields.list.iter().enumerate() {
            if let Some(slot) = at.get_mut(&*field.name) {
                *slot = (*slot).min(index);
            }
        }
        at.retain(|_, index| *index != usize::MAX);
        Batch { at, gone: vec![false; fields.list.len()] }
    }

    /// The index of field `name` (one of the names given).
    #[inline]
    pub fn find(&self, name: &[u8]) -> Option<usize> {
        self.at.get(name).copied()
    }

    /// As [`Fields::set`]; returns whether the field is new.
    #[inline]
    pub fn set<'a>(
        &mut self,
        fields: &mut Fields<'a>,
        name: &'n [u8],
        value: Cow<'a, [u8]>,
        keep_ttl: bool,
    ) -> bool {
        if let Some(index) = self.find(name) {
            let field = &mut fields.list[index];
            field.value = value;
            if !keep_ttl {
                field.expire_at_ms = None;
            }
            return false;
        }
        let owned = Cow::Owned(name.to_vec());
        fields.list.push(Field { name: owned, value, expire_at_ms: None });
        self.at.insert(name, fields.list.len() - 1);
        self.gone.push(false);
        true
    }

    /// Removes field `name`; returns its value if it was there.
    #[inline]
    pub fn remove<'a>(&mut self, fields: &mut Fields<'a>, name: &[u8]) -> Option<Cow<'a, [u8]>> {
        let index = self.at.remove(name)?;
        self.gone[index] = true;
        Some(mem::take(&mut fields.list[index].value))
    }

    /// Drops the removed fields; the last call on a batch.
    #[inline]
    pub fn finish(self, fields: &mut Fields<'_>) {
        if self.gone.contains(&true) {
            let mut gone = self.gone.iter();
            fields.list.retain(|_| !gone.next().copied().unwrap_or(false));
        }
    }
}

/// The fields of an encoding as stored, expired ones included: (name, value, expiry).
struct Raw<'e> {
    rest: &'e [u8],
    /// Expiring fields not yet read; the rest are persistent.
    expiring: u64,
}

impl<'e> Raw<'e> {
    /// The recorded key expiry and the fields; a malformed encoding (never written by
    /// [`encode`]) reads as far as it is whole.
    #[inline]
    fn open(encoded: &'e [u8]) -> (Option<KeyExpiry>, Raw<'e>) {
        let empty = Raw { rest: &[], expiring: 0 };
        let Some((header, used)) = read_varint(encoded) else {
            return (None, empty);
        };
        let mut rest = &encoded[used..];
        let mut key_expiry = None;
        if header & 1 == 1 {
            let pair = read_varint(rest).and_then(|(set_ms, used)| {
                let (user_ms, more) = read_varint(&rest[used..])?;
                Some((KeyExpiry { set_ms, user_ms: user_ms.checked_sub(1) }, used + more))
            });
            let Some((recorded, used)) = pair else {
                return (None, empty);
            };
            rest = &rest[used..];
            key_expiry = Some(recorded);
        }
        (key_expiry, Raw { rest, expiring: header >> 1 })
    }
}

impl<'e> Iterator for Raw<'e> {
    type Item = (&'e [u8], &'e [u8], Option<u64>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let mut entries = Entries::new(self.rest);
        let (name, value) = (entries.next()?, entries.next()?);
        if self.expiring == 0 {
            self.rest = entries.rest();
            return Some((name, value, None));
        }
        let Some((at_ms, used)) = read_varint(entries.rest()) else {
            self.rest = &[];
            return None;
        };
        self.rest = &entries.rest()[used..];
        self.expiring -= 1;
        Some((name, value, Some(at_ms)))
    }
}

/// Reads an encoding, leaving out the fields whose expiry is at or before `now_ms`.
#[inline]
pub fn decode(encoded: &[u8], now_ms: u64) -> Fields<'_> {
    let (key_expiry, raw) = Raw::open(encoded);
    let mut fields = Fields { key_expiry, ..Fields::default() };
    for (name, value, expire_at_ms) in raw {
        if expire_at_ms.is_some_and(|at_ms| at_ms <= now_ms) {
            fields.dropped = true;
            continue;
        }
        let (name, value) = (Cow::Borrowed(name), Cow::Borrowed(value));
        fields.list.push(Field { name, value, expire_at_ms });
    }
    fields
}

/// The value of live field `name`, read in place: for the one-field reads (HGET,
/// HEXISTS, HSTRLEN, HMGET), which need not decode the whole hash.
#[inline]
pub fn lookup<'e>(encoded: &'e [u8], name: &[u8], now_ms: u64) -> Option<&'e [u8]> {
    let (_, mut raw) = Raw::open(encoded);
    let (_, value, expiry) = raw.find(|(field, _, _)| *field == name)?;
    expiry.is_none_or(|at_ms| at_ms > now_ms).then_some(value)
}

/// Writes `fields` in the layout above: the expiring ones first, by expiry (a stable
/// sort, so equal times keep their order), then the others in their order.
#[inline]
pub fn encode(fields: &[Field<'_>], key_expiry: Option<KeyExpiry>) -> Vec<u8> {
    let size: usize = fields.iter().map(|f| f.name.len() + f.value.len() + 4).sum();
    let mut out = Vec::with_capacity(size + 1);
    let mut expiring: Vec<&Field<'_>> =
        fields.iter().filter(|field| field.expire_at_ms.is_some()).collect();
    expiring.sort_by_key(|field| field.expire_at_ms);
    put_varint(&mut out, (expiring.len() as u64) << 1 | u64::from(key_expiry.is_some()));
    if let Some(KeyExpiry { set_ms, user_ms }) = key_expiry {
        put_varint(&mut out, set_ms);
        put_varint(&mut out, user_ms.map_or(0, |ms| ms + 1));
    }
    for field in expiring {
        put_entry(&mut out, &field.name);
        put_entry(&mut out, &field.value);
        put_varint(&mut out, field.expire_at_ms.unwrap_or_default());
    }
    for field in fields.iter().filter(|field| field.expire_at_ms.is_none()) {
        put_entry(&mut out, &field.name);
        put_entry(&mut out, &field.value);
    }
    out
}

/// Whether `encoded` is a hash as [`encode`] and [`splice_set`] write it: a whole header
/// (and key expiry), the expiring fields it counts in order of their times, then whole
/// field-value pairs to the end; at least one field, no name twice (a snapshot's hashes
/// are checked so before any is restored).
#[inline]
pub fn is_valid(encoded: &[u8]) -> bool {
    let Some((header, used)) = read_varint(encoded) else { return false };
    let mut rest = &encoded[used..];
    if header & 1 == 1 {
        for _ in 0..2 {
            let Some((_, used)) = read_varint(rest) else { return false };
            rest = &rest[used..];
        }
    }
    let (mut expiring, mut names, mut last_at_ms) = (header >> 1, HashSet::new(), 0);
    while !rest.is_empty() {
        let mut entries = Entries::new(rest);
        let (Some(name), Some(_)) = (entries.next(), entries.next()) else { return false };
        rest = entries.rest();
        if !names.insert(name) {
            return false;
        }
        if expiring > 0 {
            let Some((at_ms, used)) = read_varint(rest) else { return false };
            if at_ms < last_at_ms {
                return false;
            }
            (rest, last_at_ms, expiring) = (&rest[used..], at_ms, expiring - 1);
        }
    }
    expiring == 0 && !names.is_empty()
}

/// HSET of one field on a hash with no expiring field (header 0), as byte edits: the
/// field's value entry replaced in place, or the field appended (insertion order), with no
/// decoding. Returns the new encoding and whether the field is new; `None` when the hash
/// has expiring fields (or is malformed) and must take the decoding path.
#[inline]
pub fn splice_set(encoded: &[u8], name: &[u8], value: &[u8]) -> Option<(Vec<u8>, bool)> {
    splice_set_counted(encoded, name, value).map(|(out, fields)| (out, fields.is_some()))
}

/// [`splice_set`], telling for a new field how many fields the hash has now (the walk
/// that found the name absent counted them): `None` when the field was replaced.
#[inline]
pub fn splice_set_counted(
    encoded: &[u8],
    name: &[u8],
    value: &[u8],
) -> Option<(Vec<u8>, Option<usize>)> {
    let (&0, body) = encoded.split_first()? else { return None };
    let offset = |entries: &Entries<'_>| body.len() - entries.rest().len();
    let mut entries = Entries::new(body);
    let mut fields = 0;
    while !entries.rest().is_empty() {
        fields += 1;
        let field = entries.next()?;
        let value_start = offset(&entries);
        entries.next()?;
        if field == name {
            let value_end = offset(&entries);
            let mut out = Vec::with_capacity(encoded.len() + value.len() + 10);
            out.extend_from_slice(&encoded[..1 + value_start]);
            put_entry(&mut out, value);
            out.extend_from_slice(&body[value_end..]);
            return Some((out, None));
        }
    }
    let mut out = Vec::with_capacity(encoded.len() + name.len() + value.len() + 10);
    out.extend_from_slice(encoded);
    put_entry(&mut out, name);
    put_entry(&mut out, value);
    Some((out, Some(fields + 1)))
}

/// Whether a hash holds more than `fields_max` fields, or a name or value longer than
/// `len_max` bytes: Redis's bounds for a listpack (`hash-max-listpack-entries` and
/// `-value`), past which a hash moves out of the store. Expired fields not yet dropped
/// count, as Redis's listpack holds them until it is next changed. A walk of the lengths
/// that stops at the first field past a bound; none at all when the bytes alone rule both
/// out (each field takes at least two, and no entry is longer than the encoding).
#[inline]
pub fn past_bounds(encoded: &[u8], fields_max: u64, len_max: u64) -> bool {
    let cannot_pass = |bound: u64, bytes: usize| bytes as u64 <= bound;
    if cannot_pass(len_max, encoded.len()) && cannot_pass(fields_max, encoded.len() / 2) {
        return false;
    }
    let (_, raw) = Raw::open(encoded);
    let (mut rest, mut expiring, mut fields) = (raw.rest, raw.expiring, 0u64);
    // The lengths alone: a name's, a value's (and an expiring field's time), skipped over.
    let skip_entry = |rest: &mut &[u8]| -> Option<u64> {
        let (len, used) = read_varint(rest)?;
        *rest = rest.get(used..)?.get(usize::try_from(len).ok()?..)?;
        Some(len)
    };
    while !rest.is_empty() {
        let (Some(name_len), Some(value_len)) = (skip_entry(&mut rest), skip_entry(&mut rest))
        else {
            break;
        };
        fields += 1;
        if fields > fields_max || name_len > len_max || value_len > len_max {
            return true;
        }
        if expiring > 0 {
            expiring -= 1;
            let Some((_, used)) = read_varint(rest) else { break };
            rest = &rest[used..];
        }
    }
    false
}

/// The value kept outside the store for a large hash's encoding.
#[inline]
pub fn own(encoded: &[u8]) -> HashValue {
    let fields = decode(encoded, 0);
    let mut hash = HashValue::default();
    hash.key_expiry = fields.key_expiry.map(|KeyExpiry { set_ms, user_ms }| (set_ms, user_ms));
    hash.reserve(fields.list.len(), encoded.len());
    for field in fields.list {
        if let Some(at_ms) = field.expire_at_ms {
            hash.expire_at_ms.insert(Box::from(&*field.name), at_ms);
        }
        hash.insert(&field.name, &field.value);
    }
    hash
}

/// The encoding of a hash kept outside the store; `None` when it has no field.
#[inline]
pub fn encode_owned(hash: &HashValue) -> Option<Vec<u8>> {
    if hash.is_empty() {
        return None;
    }
    let list: Vec<Field<'_>> = hash
        .iter()
        .map(|(name, value)| Field {
            name: Cow::Borrowed(name),
            value: Cow::Borrowed(value),
            expire_at_ms: hash.expire_at_ms.get(name).copied(),
        })
        .collect();
    let key_expiry = hash.key_expiry.map(|(set_ms, user_ms)| KeyExpiry { set_ms, user_ms });
    Some(encode(&list, key_expiry))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(name: &[u8], value: &[u8], at: Option<u64>) -> Field<'static> {
        Field {
            name: Cow::Owned(name.to_vec()),
            value: Cow::Owned(value.to_vec()),
            expire_at_ms: at,
        }
    }

    /// Goal: the thresholds' walk counts every field, expiring ones included, and finds
    /// a long name or value wherever it is.
    #[test]
    fn past_bounds_at_the_edges() {
        let fields: Vec<Field<'_>> = (0..6)
            .map(|i| field(format!("f{i}").as_bytes(), b"vvvv", (i < 3).then_some(1_000 + i)))
            .collect();
        let encoded = encode(&fields, None);
        assert!(!past_bounds(&encoded, 6, 4));
        assert!(past_bounds(&encoded, 5, 4));
        assert!(past_bounds(&encoded, 6, 3));
        let mut long = fields.clone();
        long[5] = field(b"f5", b"vvvvv", None);
        assert!(past_bounds(&encode(&long, None), 6, 4));
        long[5] = field(b"f5", b"v", Some(7));
        long[1] = field(b"f1-long", b"v", Some(2));
        assert!(past_bounds(&encode(&long, None), 6, 4));
    }

    /// Goal: a hash without expiries costs one byte over its entries and reads back in
    /// insertion order, for every length class of field and value.
    #[test]
    fn plain_round_trip() {
        let big = vec![b'v'; 70_000];
        let fields = vec![
            field(b"", b"", None),
            field(b"a", &[b'x'; 127], None),
            field(&[b'k'; 128], &big, None),
            field(b"z", b"1", None),
        ];
        let encoded = encode(&fields, None);
        let entries: usize = fields.iter().map(|f| f.name.len() + f.value.len()).sum();
        let prefixes = 1 + 1 + 1 + 1 + 2 + 3 + 1 + 1;
        assert_eq!(encoded.len(), 1 + entries + prefixes);
        let decoded = decode(&encoded, u64::MAX);
        assert_eq!(decoded.list, fields);
        assert!(!decoded.dropped);
    }

    /// Goal: expiring fields come first by time, persistent ones keep their order, and
    /// fields at or before `now` are left out and reported.
    #[test]
    fn expiring_fields() {
        let fields = vec![
            field(b"p1", b"a", None),
            field(b"late", b"b", Some(u64::MAX >> 1)),
            field(b"p2", b"c", None),
            field(b"soon", b"d", Some(1_000)),
            field(b"mid", b"e", Some(5_000)),
        ];
        let encoded = encode(&fields, None);
        let names = |f: &Fields<'_>| f.list.iter().map(|f| f.name.to_vec()).collect::<Vec<_>>();
        let all = decode(&encoded, 0);
        assert_eq!(names(&all), [&b"soon"[..], b"mid", b"late", b"p1", b"p2"]);
        assert_eq!(all.get(b"late"), Some(&b"b"[..]));
        assert_eq!(lookup(&encoded, b"soon", 999), Some(&b"d"[..]));
        assert_eq!(lookup(&encoded, b"soon", 1_000), None);
        assert_eq!(lookup(&encoded, b"p2", u64::MAX), Some(&b"c"[..]));
        assert_eq!(lookup(&encoded, b"p3", 0), None);
        let later = decode(&encoded, 1_000);
        assert_eq!(names(&later), [&b"mid"[..], b"late", b"p1", b"p2"]);
        assert!(later.dropped);
        assert_eq!(decode(&encode(&later.list, None), 0).list, later.list);
        let key_expiry = Some(KeyExpiry { set_ms: 7, user_ms: Some(0) });
        let encoded = encode(&later.list, key_expiry);
        let marked = decode(&encoded, 0);
        assert_eq!((marked.list, marked.key_expiry), (later.list, key_expiry));
    }

    /// Goal: set, remove and find keep the rules HSET and HDEL rely on.
    #[test]
    fn edits() {
        let mut fields = Fields::default();
        assert!(fields.set(b"a", Cow::Borrowed(b"1"), false));
        assert!(fields.set(b"b", Cow::Borrowed(b"2"), false));
        fields.list[0].expire_at_ms = Some(10);
        assert!(!fields.set(b"a", Cow::Borrowed(b"3"), true));
        assert_eq!(fields.list[0].expire_at_ms, Some(10));
        assert!(!fields.set(b"a", Cow::Borrowed(b"4"), false));
        assert_eq!((fields.get(b"a"), fields.list[0].expire_at_ms), (Some(&b"4"[..]), None));
        let names: [&[u8]; 4] = [b"a", b"b", b"c", b"a"];
        let mut batch = Batch::new(&fields, names);
        assert_eq!(
            (batch.find(b"a"), batch.find(b"b"), batch.find(b"c")),
            (Some(0), Some(1), None)
        );
        assert!(batch.set(&mut fields, b"c", Cow::Borrowed(b"5"), false));
        assert_eq!(batch.remove(&mut fields, b"a").as_deref(), Some(&b"4"[..]));
        assert_eq!(batch.remove(&mut fields, b"a"), None);
        assert!(batch.set(&mut fields, b"a", Cow::Borrowed(b"6"), false));
        batch.finish(&mut fields);
        let names: Vec<&[u8]> = fields.list.iter().map(|f| &*f.name).collect();
        assert_eq!(names, [&b"b"[..], b"c", b"a"]);
        assert_eq!(fields.get(b"a"), Some(&b"6"[..]));
    }

    /// Goal: truncated encodings never panic and keep what is whole.
    #[test]
    fn splice_set_matches_the_decoding_path() {
        let fields = [field(b"a", b"1", None), field(b"bb", b"22", None), field(b"c", b"", None)];
        let encoded = encode(&fields, None);
        for (name, value) in
            [(&b"a"[..], &b"x"[..]), (b"bb", b"long value"), (b"c", b"3"), (b"d", b"4")]
        {
            let mut decoded = decode(&encoded, 0);
            let created = decoded.set(name, Cow::Borrowed(value), false);
            let want = encode(&decoded.list, None);
            assert_eq!(splice_set(&encoded, name, value), Some((want, created)), "{name:?}");
        }
        let expiring = encode(&[field(b"a", b"1", Some(5))], None);
        assert_eq!(splice_set(&expiring, b"a", b"2"), None);
        assert_eq!(splice_set(&[0, 5, b'a'], b"a", b"2"), None, "a truncated entry");
    }

    #[test]
    fn malformed() {
        let key_expiry = Some(KeyExpiry { set_ms: 300, user_ms: None });
        let encoded = encode(&[field(b"a", b"1", Some(9)), field(b"b", b"2", None)], key_expiry);
        for cut in 0..encoded.len() {
            let _ = decode(&encoded[..cut], 0);
        }
        assert_eq!(decode(&[], 0), Fields::default());
        assert_eq!(read_varint(&[0xff; 11]), None);
    }
}
