//! LEB128 varints, the one form of every length and count in the collection encodings:
//! seven bits a byte, least significant group first, the high bit set on every byte but
//! the last.
//!
//! One rule for damaged input: a varint that ends before its last byte, or runs past
//! [`LEN_MAX`] bytes, reads as `None`, never a panic and never a partial number. (The
//! store's item header has its own varints, `store::item`: they live in the store's
//! segments, below this crate, and are written only by the store.)

/// The most bytes a varint takes: ten 7-bit groups hold any `u64`.
pub const LEN_MAX: usize = 10;

/// Appends `n` as a varint.
#[inline]
pub fn put(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Appends a length as a varint.
#[inline]
pub fn put_usize(out: &mut Vec<u8>, n: usize) {
    put(out, n as u64);
}

/// The varint at the start of `bytes` and the bytes it used; `None` when `bytes` ends
/// inside it or it is longer than [`LEN_MAX`] bytes. (Bits past 64 in a tenth byte are
/// dropped: no encoding here writes them.)
#[inline]
pub fn read(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut n = 0u64;
    for (index, &byte) in bytes.iter().enumerate().take(LEN_MAX) {
        n |= u64::from(byte & 0x7f) << (7 * index);
        if byte & 0x80 == 0 {
            return Some((n, index + 1));
        }
    }
    None
}

/// [`read`] as a length. (On a 32-bit target a length past `usize::MAX` is refused.)
#[inline]
pub fn read_usize(bytes: &[u8]) -> Option<(usize, usize)> {
    let (n, used) = read(bytes)?;
    Some((usize::try_from(n).ok()?, used))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: every length class reads back as written, with the bytes it used.
    #[test]
    fn round_trip() {
        for n in [0, 1, 127, 128, 300, 16_383, 16_384, u64::from(u32::MAX), u64::MAX] {
            let mut out = Vec::new();
            put(&mut out, n);
            out.push(0xff); // what follows is not read
            assert_eq!(read(&out), Some((n, out.len() - 1)), "{n}");
        }
        assert_eq!(read(&[0x81, 0x00]), Some((1, 2)), "a padded varint");
    }

    /// Goal: the one rule for damaged input: truncated or overlong is `None`.
    #[test]
    fn truncated_and_overlong() {
        assert_eq!(read(&[]), None);
        assert_eq!(read(&[0x80]), None);
        let mut max = Vec::new();
        put(&mut max, u64::MAX);
        for cut in 0..max.len() {
            assert_eq!(read(&max[..cut]), None, "{cut}");
        }
        assert_eq!(read(&[0xff; 11]), None);
        assert_eq!(read(&[0xff; 10]), None);
        assert_eq!(read_usize(&[0x80; 3]), None);
    }
}
