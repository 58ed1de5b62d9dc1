//! A list's value: its length, then its elements head first.
//!
//! ```text
//!   len (LEB128 varint) | elen element | elen element | ...   (elen: LEB128 varint)
//! ```
//!
//! Each element costs its bytes and a one to three byte length (Redis's listpack spends one
//! to five bytes, and two for its back length), so a list is as compact as Redis's smallest
//! encoding. The count up front makes LLEN and index arithmetic O(1) without a scan. An
//! empty list is never stored: the command deletes the key instead, as Redis does.
//!
//! Every change writes a new value (see exec's `typed`): pushes and pops copy the old body
//! without decoding it (a pop at the tail scans the lengths to find where to cut: the
//! varints read forward only); the other changes rebuild it from borrowed slices.

use std::collections::VecDeque;

use crate::{
    entries::{put_entry, Entries},
    varint,
};

/// A stored list, read in place.
#[derive(Debug, Clone, Copy)]
pub struct List<'a> {
    len: usize,
    body: &'a [u8],
}

impl<'a> List<'a> {
    /// Reads a value written by [`encode`] or [`push`]. A value that is not one (none is
    /// stored under `ValueKind::List`) reads as what it can, never out of bounds.
    #[inline]
    pub fn parse(value: &'a [u8]) -> List<'a> {
        let (len, used) = varint::read_usize(value).unwrap_or((0, value.len()));
        List { len, body: &value[used..] }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements, head first.
    #[inline]
    pub fn iter(&self) -> Entries<'a> {
        Entries::new(self.body)
    }

    /// All elements, head first, borrowed from the value.
    #[inline]
    pub fn elements(&self) -> Vec<&'a [u8]> {
        // Each element takes at least a byte: a count past the body's bytes is a lie that
        // must not size an allocation.
        let mut all = Vec::with_capacity(self.len.min(self.body.len()));
        all.extend(self.iter());
        all
    }

    /// The element at `end`; `None` for an empty list.
    #[inline]
    pub fn at_end(&self, end: End) -> Option<&'a [u8]> {
        match end {
            End::Head => self.iter().next(),
            End::Tail => self.iter().last(),
        }
    }

    /// The byte offset in the body where element `index` starts (the body length for
    /// `index == len`).
    #[inline]
    fn offset_of(&self, index: usize) -> usize {
        let mut entries = self.iter();
        for _ in 0..index {
            if entries.next().is_none() {
                break;
            }
        }
        self.body.len() - entries.rest().len()
    }
}

/// Which end of a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Head,
    Tail,
}

/// The encoding of `elements` (head first); `None` for an empty list, which is not stored.
#[inline]
pub fn encode<'e>(elements: impl ExactSizeIterator<Item = &'e [u8]>) -> Option<Vec<u8>> {
    let len = elements.len();
    if len == 0 {
        return None;
    }
    let mut out = Vec::new();
    varint::put_usize(&mut out, len);
    elements.for_each(|element| put_entry(&mut out, element));
    Some(out)
}

/// `list` (absent: empty) with `elements` pushed one by one at `end`, as LPUSH's
/// arguments are: the last one pushed at the head ends up first. Copies the old body
/// without reading its elements.
#[inline]
pub fn push(list: Option<List<'_>>, end: End, elements: &[&[u8]]) -> Vec<u8> {
    let (old_len, old_body) = list.map_or((0, &[][..]), |list| (list.len, list.body));
    let added: usize = elements.iter().map(|e| e.len() + 3).sum();
    let mut out = Vec::with_capacity(old_body.len() + added + 4);
    // (Saturating: a damaged count, never stored, must not overflow.)
    varint::put_usize(&mut out, old_len.saturating_add(elements.len()));
    if end == End::Tail {
        out.extend_from_slice(old_body);
        elements.iter().for_each(|element| put_entry(&mut out, element));
    } else {
        elements.iter().rev().for_each(|element| put_entry(&mut out, element));
        out.extend_from_slice(old_body);
    }
    out
}

/// Takes `count` elements (at most the list's length) off `end`: the taken ones in the
/// order they were popped, and what is left (`None` when nothing is).
#[inline]
pub fn pop<'a>(list: List<'a>, end: End, count: usize) -> (Vec<&'a [u8]>, Option<Vec<u8>>) {
    let count = count.min(list.len);
    let rest_len = list.len - count;
    let (taken, rest_body) = match end {
        End::Head => {
            let split = list.offset_of(count);
            (List { len: count, body: &list.body[..split] }, &list.body[split..])
        }
        End::Tail => {
            let split = list.offset_of(rest_len);
            (List { len: count, body: &list.body[split..] }, &list.body[..split])
        }
    };
    let mut popped = taken.elements();
    if end == End::Tail {
        popped.reverse();
    }
    if rest_len == 0 {
        return (popped, None);
    }
    let mut rest = Vec::with_capacity(rest_body.len() + 4);
    varint::put_usize(&mut rest, rest_len);
    rest.extend_from_slice(rest_body);
    (popped, Some(rest))
}

/// Whether `value` is a list as [`encode`] and [`push`] write it: a count, then exactly
/// that many whole entries, at least one (a snapshot's lists are checked so before any is
/// restored).
#[inline]
pub fn is_valid(value: &[u8]) -> bool {
    let Some((len, used)) = varint::read_usize(value) else { return false };
    let mut entries = Entries::new(&value[used..]);
    let mut seen = 0usize;
    while !entries.rest().is_empty() {
        if seen == len || entries.next().is_none() {
            return false;
        }
        seen += 1;
    }
    len > 0 && seen == len
}

/// The encoding of a list kept outside the store ([`crate::owned`]), for the commands that work
/// on encodings; `None` when it is empty.
#[inline]
pub fn encode_owned(list: &VecDeque<Box<[u8]>>) -> Option<Vec<u8>> {
    encode(list.iter().map(|element| &element[..]))
}

/// A list to keep outside the store, from its encoding.
#[inline]
pub fn decode_owned(value: &[u8]) -> VecDeque<Box<[u8]>> {
    List::parse(value).iter().map(Box::from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(lengths: &[usize]) -> Vec<Vec<u8>> {
        lengths.iter().enumerate().map(|(i, &n)| vec![b'a' + (i % 26) as u8; n]).collect()
    }

    fn refs(elements: &[Vec<u8>]) -> Vec<&[u8]> {
        elements.iter().map(Vec::as_slice).collect()
    }

    /// Goal: elements of every length class, and lists of 1 to 20000 elements (the count's
    /// varint grows past one byte at 128 and past two at 16384), read back as written.
    #[test]
    fn round_trip() {
        for count in [1, 2, 127, 128, 200, 16_383, 16_384, 20_000] {
            let elements = sample(&(0..count).map(|i| i * 7 % 300).collect::<Vec<_>>());
            let value = encode(refs(&elements).into_iter()).unwrap();
            let list = List::parse(&value);
            assert_eq!(list.len(), count);
            assert_eq!(list.elements(), refs(&elements));
        }
        let big = sample(&[0, 1, 127, 128, 16_383, 16_384, 70_000]);
        let value = encode(refs(&big).into_iter()).unwrap();
        assert_eq!(List::parse(&value).elements(), refs(&big));
        assert_eq!(encode(std::iter::empty()), None);
    }

    /// Goal: a list costs its bytes plus one length byte per short element and one count
    /// byte, no more (listpack's cost or less).
    #[test]
    fn compact() {
        let elements = sample(&[5; 10]);
        assert_eq!(encode(refs(&elements).into_iter()).unwrap().len(), 1 + 10 * (1 + 5));
    }

    /// Goal: pushes at either end keep Redis's order (LPUSH a b c gives c b a).
    #[test]
    fn push_both_ends() {
        let abc: [&[u8]; 3] = [b"a", b"b", b"c"];
        let head = push(None, End::Head, &abc);
        assert_eq!(List::parse(&head).elements(), [&b"c"[..], b"b", b"a"]);
        let both = push(Some(List::parse(&head)), End::Tail, &[b"x", b"y"]);
        assert_eq!(List::parse(&both).elements(), [&b"c"[..], b"b", b"a", b"x", b"y"]);
        assert_eq!(List::parse(&both).len(), 5);
    }

    /// Goal: pops take the right elements in pop order and leave the rest intact, down to
    /// an empty list (which is not stored), and a count past the length takes everything.
    #[test]
    fn pop_both_ends() {
        let elements = sample(&[1, 200, 3, 4]);
        let value = encode(refs(&elements).into_iter()).unwrap();
        let (taken, rest) = pop(List::parse(&value), End::Head, 2);
        assert_eq!(taken, refs(&elements[..2]));
        assert_eq!(List::parse(&rest.unwrap()).elements(), refs(&elements[2..]));
        let (taken, rest) = pop(List::parse(&value), End::Tail, 3);
        assert_eq!(taken, [&elements[3][..], &elements[2], &elements[1]]);
        assert_eq!(List::parse(&rest.unwrap()).elements(), refs(&elements[..1]));
        assert_eq!(List::parse(&value).at_end(End::Head), Some(&elements[0][..]));
        assert_eq!(List::parse(&value).at_end(End::Tail), Some(&elements[3][..]));
        let (taken, rest) = pop(List::parse(&value), End::Tail, 9);
        assert_eq!(taken.len(), 4);
        assert_eq!(rest, None);
    }

    /// Goal: a truncated value never reads out of bounds.
    #[test]
    fn truncated_value_is_safe() {
        let value = encode([&b"hello"[..], b"world"].into_iter()).unwrap();
        for cut in 0..value.len() {
            let list = List::parse(&value[..cut]);
            assert!(list.iter().count() <= 2);
        }
    }
}
