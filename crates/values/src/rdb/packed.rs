//! The packed encodings inside RDB values that Redis writes for small collections, read
//! into their elements: listpack (7.0: small hashes, sorted sets and quicklist nodes),
//! intset (sets of integers) and ziplist (what Redis before 7.0 wrote in their place).
//!
//! ```text
//!   listpack: total bytes u32 | count u16 | entry... | 0xFF
//!             entry = encoding (+ data) | back length (1-5 bytes, read backwards)
//!   intset:   width u32 (2, 4, 8) | count u32 | integers, little-endian, sorted
//!   ziplist:  total bytes u32 | tail offset u32 | count u16 | entry... | 0xFF
//!             entry = previous length (1 byte, or 0xFE + u32) | encoding (+ data)
//! ```
//!
//! Integers come back as their decimal text, as Redis hands them to commands. Every
//! length is checked against the bytes there; a blob that is not what it claims is `None`
//! (RESTORE's "Bad data format").

/// A listpack's elements.
pub(super) fn listpack(blob: &[u8]) -> Option<Vec<Vec<u8>>> {
    let total = u32::from_le_bytes(blob.get(..4)?.try_into().ok()?) as usize;
    if total != blob.len() || blob.len() < 7 || blob[total - 1] != 0xff {
        return None;
    }
    let mut at = 6;
    let mut elements = Vec::new();
    while blob[at] != 0xff {
        let (element, used) = listpack_entry(&blob[at..total - 1])?;
        elements.push(element);
        at += used + backlen_size(used);
        if at >= total {
            return None;
        }
    }
    let count = u16::from_le_bytes([blob[4], blob[5]]);
    // 65535 means "count them": a listpack with more entries does not know its count.
    if at != total - 1 || (count != u16::MAX && usize::from(count) != elements.len()) {
        return None;
    }
    Some(elements)
}

/// One listpack entry at the start of `bytes`: its element and the bytes its encoding and
/// data take (the back length follows).
fn listpack_entry(bytes: &[u8]) -> Option<(Vec<u8>, usize)> {
    let first = *bytes.first()?;
    let int = |value: i64, used: usize| Some((value.to_string().into_bytes(), used));
    let string = |start: usize, len: usize| {
        let data = bytes.get(start..start.checked_add(len)?)?;
        Some((data.to_vec(), start + len))
    };
    let le = |len: usize| -> Option<i64> {
        let data = bytes.get(1..1 + len)?;
        let mut word = [0u8; 8];
        word[..len].copy_from_slice(data);
        let shift = 64 - 8 * len as u32;
        Some(i64::from_le_bytes(word) << shift >> shift)
    };
    match first {
        0x00..=0x7f => int(i64::from(first), 1),
        0x80..=0xbf => string(1, usize::from(first & 0x3f)),
        0xc0..=0xdf => {
            let raw = i64::from(first & 0x1f) << 8 | i64::from(*bytes.get(1)?);
            int(raw << 51 >> 51, 2)
        }
        0xe0..=0xef => string(2, usize::from(first & 0x0f) << 8 | usize::from(*bytes.get(1)?)),
        0xf0 => string(5, u32::from_le_bytes(bytes.get(1..5)?.try_into().ok()?) as usize),
        0xf1 => int(le(2)?, 3),
        0xf2 => int(le(3)?, 4),
        0xf3 => int(le(4)?, 5),
        0xf4 => int(le(8)?, 9),
        _ => None,
    }
}

/// The size of the back length written after an entry of `len` bytes.
fn backlen_size(len: usize) -> usize {
    match len {
        0..=127 => 1,
        128..=16_383 => 2,
        16_384..=2_097_151 => 3,
        2_097_152..=268_435_455 => 4,
        _ => 5,
    }
}

/// An intset's integers, as text.
pub(super) fn intset(blob: &[u8]) -> Option<Vec<Vec<u8>>> {
    let width = u32::from_le_bytes(blob.get(..4)?.try_into().ok()?) as usize;
    let count = u32::from_le_bytes(blob.get(4..8)?.try_into().ok()?) as usize;
    if !matches!(width, 2 | 4 | 8) || blob.len() != 8 + width.checked_mul(count)? {
        return None;
    }
    let mut previous = None;
    let mut members = Vec::with_capacity(count);
    for chunk in blob[8..].chunks_exact(width) {
        let mut word = [0u8; 8];
        word[..width].copy_from_slice(chunk);
        let shift = 64 - 8 * width as u32;
        let value = i64::from_le_bytes(word) << shift >> shift;
        if previous.is_some_and(|before| before >= value) {
            return None; // not sorted, or a duplicate
        }
        previous = Some(value);
        members.push(value.to_string().into_bytes());
    }
    Some(members)
}

/// A ziplist's elements.
pub(super) fn ziplist(blob: &[u8]) -> Option<Vec<Vec<u8>>> {
    let total = u32::from_le_bytes(blob.get(..4)?.try_into().ok()?) as usize;
    if total != blob.len() || blob.len() < 11 || blob[total - 1] != 0xff {
        return None;
    }
    let mut at = 10;
    let mut elements = Vec::new();
    while blob[at] != 0xff {
        let prevlen_size = if blob[at] == 0xfe { 5 } else { 1 };
        let (element, used) = ziplist_entry(blob.get(at + prevlen_size..total - 1)?)?;
        elements.push(element);
        at += prevlen_size + used;
        if at >= total {
            return None;
        }
    }
    let count = u16::from_le_bytes([blob[8], blob[9]]);
    if count != u16::MAX && usize::from(count) != elements.len() {
        return None;
    }
    Some(elements)
}

/// One ziplist entry after its previous-length field: its element and the bytes its
/// encoding and data take.
fn ziplist_entry(bytes: &[u8]) -> Option<(Vec<u8>, usize)> {
    let first = *bytes.first()?;
    let string = |start: usize, len: usize| {
        let data = bytes.get(start..start.checked_add(len)?)?;
        Some((data.to_vec(), start + len))
    };
    let int = |len: usize| -> Option<(Vec<u8>, usize)> {
        let data = bytes.get(1..1 + len)?;
        let mut word = [0u8; 8];
        word[..len].copy_from_slice(data);
        let shift = 64 - 8 * len as u32;
        let value = i64::from_le_bytes(word) << shift >> shift;
        Some((value.to_string().into_bytes(), 1 + len))
    };
    match first >> 6 {
        0 => string(1, usize::from(first & 0x3f)),
        1 => string(2, usize::from(first & 0x3f) << 8 | usize::from(*bytes.get(1)?)),
        2 if first == 0x80 => {
            string(5, u32::from_be_bytes(bytes.get(1..5)?.try_into().ok()?) as usize)
        }
        2 => None,
        _ => match first {
            0xc0 => int(2),
            0xd0 => int(4),
            0xe0 => int(8),
            0xf0 => int(3),
            0xfe => int(1),
            0xf1..=0xfd => Some(((i64::from(first & 0x0f) - 1).to_string().into_bytes(), 1)),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(elements: &[&str]) -> Vec<Vec<u8>> {
        elements.iter().map(|e| e.as_bytes().to_vec()).collect()
    }

    /// Goal: a listpack with every encoding reads back (bytes as Redis lays them out).
    #[test]
    fn listpack_entries() {
        let mut body = vec![0x05, 0x01]; // 5
        body.extend([0x83, b'a', b'b', b'c', 0x04]); // "abc"
        body.extend([0xdf, 0xff, 0x02]); // 13-bit -1
        body.extend([0xf1, 0x00, 0x80, 0x03]); // int16 -32768
        body.extend([0xf3, 0x00, 0x00, 0x00, 0x80, 0x05]); // int32 min
        let mut blob = ((body.len() + 7) as u32).to_le_bytes().to_vec();
        blob.extend(5u16.to_le_bytes());
        blob.extend(&body);
        blob.push(0xff);
        let want = texts(&["5", "abc", "-1", "-32768", "-2147483648"]);
        assert_eq!(listpack(&blob), Some(want));
        let last = blob.len() - 1;
        blob[last] = 0;
        assert_eq!(listpack(&blob), None);
    }

    /// Goal: intsets of each width read as sorted integers; an unsorted one is refused.
    #[test]
    fn intsets() {
        let mut blob = 2u32.to_le_bytes().to_vec();
        blob.extend(2u32.to_le_bytes());
        blob.extend((-3i16).to_le_bytes());
        blob.extend(7i16.to_le_bytes());
        assert_eq!(intset(&blob), Some(texts(&["-3", "7"])));
        blob[8..10].copy_from_slice(&9i16.to_le_bytes());
        assert_eq!(intset(&blob), None);
    }

    /// Goal: a ziplist with strings and integers reads back.
    #[test]
    fn ziplist_entries() {
        let mut body = vec![0x00, 0x02, b'h', b'i'];
        body.extend([0x04, 0xf3]); // immediate 2
        body.extend([0x02, 0xc0, 0x2c, 0x01]); // int16 300
        let mut blob = ((body.len() + 11) as u32).to_le_bytes().to_vec();
        blob.extend(0u32.to_le_bytes());
        blob.extend(3u16.to_le_bytes());
        blob.extend(&body);
        blob.push(0xff);
        assert_eq!(ziplist(&blob), Some(texts(&["hi", "2", "300"])));
    }
}
