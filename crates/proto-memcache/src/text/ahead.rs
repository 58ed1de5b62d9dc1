//! Hints for a worker's read ahead: the key of the plain `get` or `set` at the front of a
//! batch's unparsed rest, and where the request after it starts, found without parsing
//! (no limit checks, no framing). A wrong hint costs a useless prefetch, nothing else.

use super::request::plain_digits;
use crate::{limits::KEY_LEN_MAX_DEFAULT, line::find_below_bang};

/// The front request's key, and its whole length when the scan could see where it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ahead<'a> {
    pub key: &'a [u8],
    /// The request's bytes, its data block included: a one-key `get`/`gets` line, or a
    /// `set` line of plain numbers (no `noreply`) and its block. `None` for other forms.
    pub len: Option<usize>,
}

/// The key of the `get`, `gets` or `set` at the front of `next` (the first key of a
/// multiget). Keys that start with a NUL byte are stored escaped: left out.
#[inline(always)]
pub fn read_ahead_key(next: &[u8]) -> Option<Ahead<'_>> {
    let (head, is_set) = match next.get(..4)? {
        b"get " => (4, false),
        b"set " => (4, true),
        b"gets" if next.get(4) == Some(&b' ') => (5, false),
        _ => return None,
    };
    let rest = &next[head..];
    let window = &rest[..rest.len().min(KEY_LEN_MAX_DEFAULT + 1)];
    // Eight bytes at a time; a key holding a tab or control byte is cut there (a hint).
    let key_len = find_below_bang(window)?;
    let key = &rest[..key_len];
    if key.is_empty() || key[0] == 0 {
        return None;
    }
    let after = &rest[key_len..];
    let len = if is_set {
        set_len(after).map(|len| head + key_len + len)
    } else {
        after.starts_with(b"\r\n").then_some(head + key_len + 2)
    };
    Some(Ahead { key, len })
}

/// The bytes of a set after its key, ` <flags> <exptime> <bytes>\r\n` and the block, when
/// the three numbers are plain digits.
#[inline(always)]
fn set_len(after: &[u8]) -> Option<usize> {
    let mut at = 1;
    let mut value_len = 0;
    if after.first() != Some(&b' ') {
        return None;
    }
    for end in [b' ', b' ', b'\r'] {
        let (value, used) = plain_digits(after.get(at..)?, end)?;
        (value_len, at) = (value as usize, at + used);
    }
    (after.get(at) == Some(&b'\n')).then_some(at + 1 + value_len + 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scan's input and its key and length (`None`: no hint).
    type Case<'a> = (&'a [u8], Option<(&'a [u8], Option<usize>)>);

    // Goal: the key and the request's length for plain gets and sets; a key alone for
    // other forms of them; nothing for other commands, NUL-led keys or unfinished keys.
    #[test]
    fn read_ahead_keys_and_lengths() {
        let long = [b"get ".to_vec(), vec![b'k'; 251], b"\r\n".to_vec()].concat();
        let longest = [b"get ".to_vec(), vec![b'k'; 250], b"\r\n".to_vec()].concat();
        let set = b"set abc 1 0 3\r\nxyz\r\nget q\r\n";
        let table: &[Case<'_>] = &[
            (b"get abc\r\n", Some((b"abc", Some(9)))),
            (b"get abc\r\nget d\r\n", Some((b"abc", Some(9)))),
            (b"get abc def\r\n", Some((b"abc", None))),
            (b"gets abc\r\n", Some((b"abc", Some(10)))),
            (b"gets abc\n", Some((b"abc", None))),
            (b"get abc", None),
            (b"get  abc\r\n", None),
            (b"get \0abc\r\n", None),
            (b"gat 0 abc\r\n", None),
            (b"getx abc\r\n", None),
            (set, Some((b"abc", Some(20)))),
            (b"set abc 1 0 3", Some((b"abc", None))),
            (b"set abc 1 0 3 noreply\r\nxyz\r\n", Some((b"abc", None))),
            (b"set abc 1 -1 3\r\nxyz\r\n", Some((b"abc", None))),
            (b"set abc 1 0 1234567890\r\n", Some((b"abc", None))),
            (b"set abc\r\n", Some((b"abc", None))),
            (b"add abc 1 0 3\r\nxyz\r\n", None),
            (b"GET abc\r\n", None),
            (b"", None),
            (&long, None),
            (&longest, Some((&longest[4..254], Some(256)))),
        ];
        for (next, want) in table {
            let got = read_ahead_key(next).map(|ahead| (ahead.key, ahead.len));
            assert_eq!(got, *want, "{:?}", String::from_utf8_lossy(next));
        }
        // Every cut of every case (input arriving in pieces): a hint or none, never a length
        // past what a whole request would have.
        for (next, _) in table {
            for cut in 0..next.len() {
                if let Some(Ahead { key, len }) = read_ahead_key(&next[..cut]) {
                    assert!(key.len() < cut && len.is_none_or(|len| len <= next.len() + 2));
                }
            }
        }
        let after = &set[read_ahead_key(set).unwrap().len.unwrap()..];
        assert_eq!(read_ahead_key(after), Some(Ahead { key: b"q", len: Some(7) }));
    }
}
