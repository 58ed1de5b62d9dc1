//! The value bytes of a set, and the views and working copy the commands use.
//!
//! ```text
//!   integers:  [width: 2|4|8] [member: width bytes, little endian] ...   ascending, distinct
//!   strings:   [0x80] [count: varint] [len: varint][bytes] ...            distinct
//! ```
//!
//! A set whose members are all integers (Redis's `string2ll` form: no `+`, no leading
//! zero) is stored as sorted fixed-width integers, as Redis's intset: 2, 4 or 8 bytes a
//! member, the smallest width that held them all when they were written. Membership is a
//! binary search and the members come out in ascending order, which is the order Redis 7.0
//! sends an intset in, so replies about small integer sets are byte for byte Redis's. Any
//! other set is a count and length-prefixed entries ([`crate::entries::put_entry`]): no per-entry
//! header beyond the varint length, so it is no bigger than Redis's listpack. Its members
//! are in no particular order (Redis's order for these is its hash table's, which nobody
//! may rely on): a few added at a time are appended (`splice`), a set rebuilt in one go
//! lists its integers first. A strings set that loses its last non-integer member becomes
//! an integer set again; an integer set keeps its width when members leave, as an intset
//! does.
//!
//! Members are compared as [`Member`]s: bytes that read as an integer become `Int`, so the
//! member "5" is the same whichever encoding holds it.

use std::collections::HashSet;

use crate::{
    entries::{put_entry, Entries},
    int::parse_canonical_i64,
    owned::SetValue,
    varint,
};

pub use crate::int::IntText;

/// The first byte of the strings encoding; the integer encoding starts with its width.
pub const TAG_STRINGS: u8 = 0x80;

/// One member, normalised: bytes that Redis would store in an intset are `Int`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Member<'a> {
    Int(i64),
    Bytes(&'a [u8]),
}

impl<'a> Member<'a> {
    #[inline]
    pub fn of(bytes: &'a [u8]) -> Member<'a> {
        match parse_canonical_i64(bytes) {
            Some(n) => Member::Int(n),
            None => Member::Bytes(bytes),
        }
    }

    /// The member's text: an integer's decimal digits go into `buf`.
    #[inline]
    pub fn text<'b>(&self, buf: &'b mut IntText) -> &'b [u8]
    where
        'a: 'b,
    {
        match *self {
            Member::Int(n) => buf.format(n),
            Member::Bytes(bytes) => bytes,
        }
    }

    #[inline]
    pub fn to_vec(self) -> Vec<u8> {
        self.text(&mut IntText::default()).to_vec()
    }
}

/// A stored set, read in place.
#[derive(Clone, Copy, Debug)]
pub enum SetView<'a> {
    Ints { width: usize, body: &'a [u8] },
    Strings { count: usize, entries: &'a [u8] },
}

impl<'a> SetView<'a> {
    #[inline]
    pub fn new(encoded: &'a [u8]) -> SetView<'a> {
        match encoded.split_first() {
            // A count that is cut short reads as an empty set (never stored: see below).
            Some((&TAG_STRINGS, rest)) => match varint::read_usize(rest) {
                Some((count, used)) => SetView::Strings { count, entries: &rest[used..] },
                None => SetView::Strings { count: 0, entries: &[] },
            },
            Some((&width, body)) if matches!(width, 2 | 4 | 8) => {
                // Whole members only: a value changed behind the set's back (a string
                // command that does not check the kind) must not make a read panic.
                let whole = body.len() - body.len() % usize::from(width);
                SetView::Ints { width: usize::from(width), body: &body[..whole] }
            }
            // Never stored (an empty set is deleted, every encoding starts with a tag); read
            // as empty all the same.
            _ => SetView::Strings { count: 0, entries: &[] },
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        match *self {
            SetView::Ints { width, body } => body.len() / width,
            SetView::Strings { count, .. } => count,
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    fn int_at(width: usize, body: &[u8], index: usize) -> i64 {
        let bytes = &body[index * width..(index + 1) * width];
        match width {
            2 => i64::from(i16::from_le_bytes([bytes[0], bytes[1]])),
            4 => i64::from(i32::from_le_bytes(bytes.try_into().expect("4 bytes"))),
            _ => i64::from_le_bytes(bytes.try_into().expect("8 bytes")),
        }
    }

    /// Where `n` is or would go in an integer set's body, as a member index.
    #[inline]
    pub fn lower_bound(width: usize, body: &[u8], n: i64) -> usize {
        let (mut low, mut high) = (0, body.len() / width);
        while low < high {
            let mid = (low + high) / 2;
            if Self::int_at(width, body, mid) < n {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        low
    }

    /// Where `member` is stored: its member index in an integer set, the byte range of its
    /// entry (length included) within `entries` in a strings set.
    #[inline]
    pub fn locate(&self, member: Member<'_>) -> Option<Slot> {
        match (*self, member) {
            (SetView::Ints { width, body }, Member::Int(n)) => {
                let at = Self::lower_bound(width, body, n);
                let found = at < body.len() / width && Self::int_at(width, body, at) == n;
                found.then_some(Slot::Int(at))
            }
            (SetView::Ints { .. }, Member::Bytes(_)) => None,
            (SetView::Strings { entries, .. }, member) => {
                let mut buf = IntText::default();
                let text = member.text(&mut buf);
                let mut walk = Entries::new(entries);
                loop {
                    let start = entries.len() - walk.rest().len();
                    let entry = walk.next()?;
                    if entry == text {
                        return Some(Slot::Entry(start..entries.len() - walk.rest().len()));
                    }
                }
            }
        }
    }

    #[inline]
    pub fn contains(&self, member: Member<'_>) -> bool {
        self.locate(member).is_some()
    }

    /// The members in stored order.
    #[inline]
    pub fn iter(&self) -> Members<'a> {
        match *self {
            SetView::Ints { width, body } => Members::Ints { width, body, index: 0 },
            SetView::Strings { entries, .. } => Members::Strings(Entries::new(entries)),
        }
    }

    /// A way to test membership many times: a hash of a big strings set's entries.
    #[inline]
    pub fn lookup(&self) -> Lookup<'a> {
        match *self {
            SetView::Strings { count, entries } if count > LINEAR_LOOKUP_MAX => {
                Lookup::Hashed(Entries::new(entries).collect())
            }
            view => Lookup::View(view),
        }
    }
}

/// Where a member is stored, see [`SetView::locate`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slot {
    Int(usize),
    Entry(std::ops::Range<usize>),
}

/// Up to this many entries a scan is as quick as hashing them.
const LINEAR_LOOKUP_MAX: usize = 16;

/// Membership tests against one set, see [`SetView::lookup`].
pub enum Lookup<'a> {
    View(SetView<'a>),
    Hashed(HashSet<&'a [u8]>),
}

impl Lookup<'_> {
    #[inline]
    pub fn contains(&self, member: Member<'_>) -> bool {
        match self {
            Lookup::View(view) => view.contains(member),
            Lookup::Hashed(entries) => entries.contains(member.text(&mut IntText::default())),
        }
    }
}

/// The members of a [`SetView`], in stored order.
#[derive(Clone, Debug)]
pub enum Members<'a> {
    Ints { width: usize, body: &'a [u8], index: usize },
    Strings(Entries<'a>),
}

impl<'a> Iterator for Members<'a> {
    type Item = Member<'a>;

    #[inline]
    fn next(&mut self) -> Option<Member<'a>> {
        match self {
            Members::Ints { width, body, index } => {
                if *index * *width >= body.len() {
                    return None;
                }
                *index += 1;
                Some(Member::Int(SetView::int_at(*width, body, *index - 1)))
            }
            Members::Strings(entries) => entries.next().map(Member::of),
        }
    }
}

/// A set being changed: decoded once, changed, encoded once.
#[derive(Debug, Default)]
pub struct Work<'a> {
    /// Ascending, distinct.
    ints: Vec<i64>,
    /// The non-integer members, oldest first.
    others: Vec<&'a [u8]>,
    /// `others` again, for lookups.
    index: HashSet<&'a [u8]>,
}

impl<'a> Work<'a> {
    #[inline]
    pub fn decode(encoded: Option<&'a [u8]>) -> Work<'a> {
        let mut work = Work::default();
        if let Some(encoded) = encoded {
            work.add_all(SetView::new(encoded).iter());
        }
        work
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.ints.len() + self.others.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds the members not already present; returns how many that was.
    #[inline]
    pub fn add_all<'m: 'a>(&mut self, members: impl IntoIterator<Item = Member<'m>>) -> usize {
        let before = self.len();
        let sorted_len = self.ints.len();
        for member in members {
            match member {
                Member::Int(n) => self.ints.push(n),
                Member::Bytes(bytes) => {
                    if self.index.insert(bytes) {
                        self.others.push(bytes);
                    }
                }
            }
        }
        if self.ints.len() > sorted_len {
            // One sort for the whole batch rather than a shifting insert per member.
            self.ints.sort_unstable();
            self.ints.dedup();
        }
        self.len() - before
    }

    /// Removes the members present; returns how many that was.
    #[inline]
    pub fn remove_all<'m>(&mut self, members: impl IntoIterator<Item = Member<'m>>) -> usize {
        let before = self.len();
        let (mut ints, mut others) = (HashSet::new(), HashSet::new());
        for member in members {
            match member {
                Member::Int(n) => ints.insert(n),
                Member::Bytes(bytes) => others.insert(bytes),
            };
        }
        if !ints.is_empty() {
            self.ints.retain(|n| !ints.contains(n));
        }
        if !others.is_empty() {
            self.others.retain(|bytes| !others.contains(bytes));
            self.index.retain(|bytes| !others.contains(bytes));
        }
        before - self.len()
    }

    /// The members in the order they are stored in.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = Member<'a>> + '_ {
        let ints = self.ints.iter().map(|&n| Member::Int(n));
        ints.chain(self.others.iter().map(|&bytes| Member::Bytes(bytes)))
    }

    /// The member at `index` of [`Work::iter`]'s order.
    #[inline]
    pub fn nth(&self, index: usize) -> Member<'a> {
        match self.ints.get(index) {
            Some(&n) => Member::Int(n),
            None => Member::Bytes(self.others[index - self.ints.len()]),
        }
    }

    /// The stored form; `None` for an empty set, which Redis deletes.
    #[inline]
    pub fn encode(&self) -> Option<Vec<u8>> {
        if self.is_empty() {
            return None;
        }
        if self.others.is_empty() {
            return Some(encode_ints(&self.ints));
        }
        let mut out = vec![TAG_STRINGS];
        varint::put_usize(&mut out, self.len());
        for member in self.iter() {
            put_entry(&mut out, member.text(&mut IntText::default()));
        }
        Some(out)
    }
}

/// Whether `encoded` is a set as [`Work::encode`] and the splices write it: integers of
/// one width, strictly ascending; or a count and exactly that many whole entries, no two
/// equal. At least one member either way (a snapshot's sets are checked so before any is
/// restored).
#[inline]
pub fn is_valid(encoded: &[u8]) -> bool {
    match encoded.split_first() {
        Some((&TAG_STRINGS, rest)) => {
            let Some((count, used)) = varint::read_usize(rest) else { return false };
            let mut entries = Entries::new(&rest[used..]);
            let mut seen = HashSet::new();
            while !entries.rest().is_empty() {
                match entries.next() {
                    Some(entry) if seen.len() < count && seen.insert(entry) => {}
                    _ => return false,
                }
            }
            count > 0 && seen.len() == count
        }
        Some((&width, body)) if matches!(width, 2 | 4 | 8) => {
            let width = usize::from(width);
            if body.is_empty() || body.len() % width != 0 {
                return false;
            }
            let ints = (0..body.len() / width).map(|at| SetView::int_at(width, body, at));
            let mut previous = None;
            ints.into_iter().all(|n| previous.replace(n).is_none_or(|before| before < n))
        }
        _ => false,
    }
}

/// The bytes `n` takes in the integer encoding.
#[inline]
pub fn int_width(n: i64) -> usize {
    if i16::try_from(n).is_ok() {
        2
    } else if i32::try_from(n).is_ok() {
        4
    } else {
        8
    }
}

#[inline]
fn encode_ints(ints: &[i64]) -> Vec<u8> {
    let width = ints.iter().map(|&n| int_width(n)).max().unwrap_or(2);
    let mut out = Vec::with_capacity(1 + width * ints.len());
    out.push(width as u8);
    for n in ints {
        out.extend_from_slice(&n.to_le_bytes()[..width]);
    }
    out
}

/// The value kept outside the store for a large set's encoding.
#[inline]
pub fn own(encoded: &[u8]) -> SetValue {
    let mut set = SetValue::default();
    let mut buf = IntText::default();
    SetView::new(encoded).iter().for_each(|member| {
        set.insert(member.text(&mut buf));
    });
    set
}

/// The encoding of a set kept outside the store; `None` when it is empty.
#[inline]
pub fn encode_owned(set: &SetValue) -> Option<Vec<u8>> {
    let mut work = Work::default();
    work.add_all(set.iter().map(Member::of));
    work.encode()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(view: SetView<'_>) -> Vec<Vec<u8>> {
        view.iter().map(Member::to_vec).collect()
    }

    fn build<'a>(members: &[&'a [u8]]) -> Work<'a> {
        let mut work = Work::default();
        work.add_all(members.iter().map(|m| Member::of(m)));
        work
    }

    /// Goal: integers at each width edge pick the smallest width and read back sorted.
    #[test]
    fn integer_widths() {
        let cases: &[(&[i64], u8)] = &[
            (&[0], 2),
            (&[i16::MIN as i64, i16::MAX as i64], 2),
            (&[i16::MAX as i64 + 1], 4),
            (&[i16::MIN as i64 - 1, 5], 4),
            (&[i32::MIN as i64, i32::MAX as i64], 4),
            (&[i32::MAX as i64 + 1], 8),
            (&[i64::MIN, i64::MAX, -1, 0, 1], 8),
        ];
        for &(ints, width) in cases {
            let text: Vec<String> = ints.iter().map(|n| n.to_string()).collect();
            let members: Vec<&[u8]> = text.iter().map(|t| t.as_bytes()).collect();
            let encoded = build(&members).encode().unwrap();
            assert_eq!(encoded[0], width, "{ints:?}");
            assert_eq!(encoded.len(), 1 + usize::from(width) * ints.len());
            let view = SetView::new(&encoded);
            let mut sorted = ints.to_vec();
            sorted.sort();
            let read: Vec<i64> = view
                .iter()
                .map(|m| match m {
                    Member::Int(n) => n,
                    Member::Bytes(b) => panic!("{b:?}"),
                })
                .collect();
            assert_eq!(read, sorted);
            for n in ints {
                assert!(view.contains(Member::Int(*n)));
                assert!(view.contains(Member::of(n.to_string().as_bytes())));
            }
            assert!(!view.contains(Member::Int(7)) || ints.contains(&7));
            assert!(!view.contains(Member::Bytes(b"x")));
        }
    }

    /// Goal: a mixed set keeps integers first (ascending), then other members in insertion
    /// order; non-canonical numbers ("007", "+1", "-0") are strings, distinct from 7, 1, 0.
    #[test]
    fn strings_round_trip_and_normalisation() {
        let members: &[&[u8]] = &[b"b", b"10", b"007", b"a", b"-3", b"+1", b"-0", b"", b"10", b"b"];
        let work = build(members);
        assert_eq!(work.len(), 8);
        let encoded = work.encode().unwrap();
        assert_eq!(encoded[0], TAG_STRINGS);
        let view = SetView::new(&encoded);
        assert_eq!(view.len(), 8);
        let want: Vec<&[u8]> = vec![b"-3", b"10", b"b", b"007", b"a", b"+1", b"-0", b""];
        assert_eq!(texts(view), want);
        for member in &want {
            assert!(view.contains(Member::of(member)), "{member:?}");
            assert!(view.lookup().contains(Member::of(member)));
        }
        for absent in [&b"7"[..], b"1", b"0", b"c", b"bb"] {
            assert!(!view.contains(Member::of(absent)), "{absent:?}");
        }
        // Decoding gives the same working set back.
        let again = Work::decode(Some(&encoded));
        assert_eq!(again.encode().unwrap(), encoded);
    }

    /// Goal: removing every non-integer member turns the set back into integers; removing
    /// everything gives no encoding (the key is deleted).
    #[test]
    fn removal_and_empty() {
        let mut work = build(&[b"3", b"x", b"1", b"y"]);
        assert_eq!(work.remove_all([Member::of(b"x"), Member::of(b"nope"), Member::of(b"y")]), 2);
        let encoded = work.encode().unwrap();
        assert_eq!(encoded, vec![2, 1, 0, 3, 0]);
        assert_eq!(work.nth(1), Member::Int(3));
        assert_eq!(work.remove_all([Member::Int(1), Member::Int(3), Member::Int(3)]), 2);
        assert_eq!(work.encode(), None);
        assert_eq!(SetView::new(&[]).len(), 0);
    }

    /// Goal: entries and counts past one varint byte, and long members, read back.
    #[test]
    fn big_strings_set() {
        let owned: Vec<Vec<u8>> = (0..1000).map(|i| format!("m{i}").into_bytes()).collect();
        let mut members: Vec<&[u8]> = owned.iter().map(|m| m.as_slice()).collect();
        let long = vec![b'z'; 70_000];
        members.push(&long);
        let work = build(&members);
        let encoded = work.encode().unwrap();
        let view = SetView::new(&encoded);
        assert_eq!(view.len(), 1001);
        assert_eq!(texts(view), members.iter().map(|m| m.to_vec()).collect::<Vec<_>>());
        let lookup = view.lookup();
        assert!(matches!(lookup, Lookup::Hashed(_)));
        assert!(lookup.contains(Member::Bytes(&long)) && !lookup.contains(Member::Int(5)));
    }

    /// Goal: bytes that are not a whole encoding (a string command wrote to the key) read
    /// as what they hold, without a panic.
    #[test]
    fn damaged_values_read_safely() {
        let view = SetView::new(&[2, 1, 0, 3]);
        assert_eq!((view.len(), view.iter().count()), (1, 1));
        let view = SetView::new(&[TAG_STRINGS, 5, 1, b'a', 9]);
        assert_eq!(texts(view), vec![b"a".to_vec()]);
        assert!(!view.contains(Member::Bytes(b"b")));
        for bytes in [&b"x"[..], &[3, 1, 2, 3], &[TAG_STRINGS], &[TAG_STRINGS, 0x80]] {
            let view = SetView::new(bytes);
            assert_eq!(view.iter().count(), 0, "{bytes:?}");
            assert_eq!(Work::decode(Some(bytes)).len(), 0);
        }
    }

    /// Goal (found reviewing for fuzz target collection_decoders): a count varint longer
    /// than a `u64` takes stops at ten bytes (its shift overflowed: a panic in a debug
    /// build) and reads as an empty set, and such a set is not valid.
    #[test]
    fn overlong_count_varint() {
        let mut bytes = vec![TAG_STRINGS];
        bytes.extend([0xff; 14]);
        let view = SetView::new(&bytes);
        assert_eq!((view.len(), view.iter().count()), (0, 0));
        assert!(!is_valid(&bytes));
        assert!(!is_valid(&[TAG_STRINGS]));
    }

    #[test]
    fn int_text() {
        for n in [0, 7, -7, 10, i64::MIN, i64::MAX, -1_000_000] {
            assert_eq!(IntText::default().format(n), n.to_string().as_bytes());
        }
    }
}
