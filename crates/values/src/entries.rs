//! Length-prefixed entries, what the collection encodings are made of: a [`varint`]
//! length, then that many bytes.

use crate::varint;

/// Appends `bytes` to an encoding as one entry: its length as a LEB128 varint, then the
/// bytes.
#[inline]
pub fn put_entry(out: &mut Vec<u8>, bytes: &[u8]) {
    varint::put_usize(out, bytes.len());
    out.extend_from_slice(bytes);
}

/// The most bytes an entry's length takes ([`varint::LEN_MAX`]).
pub const ENTRY_LEN_BYTES_MAX: usize = varint::LEN_MAX;

/// The entries of an encoding written with [`put_entry`], in order.
#[derive(Debug, Clone)]
pub struct Entries<'a> {
    rest: &'a [u8],
}

impl<'a> Entries<'a> {
    #[inline]
    pub fn new(encoded: &'a [u8]) -> Entries<'a> {
        Entries { rest: encoded }
    }

    /// The bytes not yet read.
    #[inline]
    pub fn rest(&self) -> &'a [u8] {
        self.rest
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = &'a [u8];

    /// A damaged encoding (a length of more than [`ENTRY_LEN_BYTES_MAX`] bytes, or one
    /// past the end) ends the walk: it is never a shift or an addition that overflows.
    #[inline]
    fn next(&mut self) -> Option<&'a [u8]> {
        let (len, used) = varint::read_usize(self.rest)?;
        let end = used.checked_add(len)?;
        let entry = self.rest.get(used..end)?;
        self.rest = &self.rest[end..];
        Some(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: entries of every length class read back as written, in order.
    #[test]
    fn entries_round_trip() {
        let values: Vec<Vec<u8>> =
            [0, 1, 127, 128, 300, 16_384, 70_000].iter().map(|&n| vec![b'x'; n]).collect();
        let mut encoded = Vec::new();
        values.iter().for_each(|v| put_entry(&mut encoded, v));
        let read: Vec<&[u8]> = Entries::new(&encoded).collect();
        assert_eq!(read, values.iter().map(|v| v.as_slice()).collect::<Vec<_>>());
    }

    /// Goal (found reviewing for fuzz target collection_decoders): an entry length of more
    /// than ten varint bytes, or one that reaches past the end of memory, ends the walk
    /// (the shift and the addition overflowed: a panic in a debug build).
    #[test]
    fn overlong_entry_lengths_end_the_walk() {
        assert_eq!(Entries::new(&[0xff; 12]).next(), None);
        let mut huge = vec![0xff; 9];
        huge.extend([0x01, b'x']);
        assert_eq!(Entries::new(&huge).next(), None);
        assert_eq!(Entries::new(&[0x81, 0x00, b'x']).next(), Some(&b"x"[..]));
    }
}
