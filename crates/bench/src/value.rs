//! Values derived from the key and a write version, so that every value read back can be
//! checked without remembering what was written.
//!
//! ```text
//!   len >= 8:  [version: u32 LE][check: u32 LE][fill ...]
//!              check = low 32 bits of mix(key id, version, len)
//!              fill  = 8-byte words of SplitMix64 seeded by mix(key id, version), LE, cut to len
//!   len <  8:  the first len bytes of mix(key id, len) (too short to carry a version)
//! ```
//!
//! A reply is valid if it is what *some* writer could have produced for that key: any
//! version and any length, as long as header, check and fill agree with the key. So a value
//! overwritten by another connection (a newer or older version) is not an error, while a
//! value of another key, a truncated or extended value, or flipped bytes are corrupt.

use rand::Rng as _;

use crate::rng::{self, mix64};

const HEADER_BYTES: usize = 8;

fn check_word(key: u64, version: u32, len: usize) -> u32 {
    mix64(mix64(key ^ 0x5bd1_e995) ^ (u64::from(version) << 32) ^ len as u64) as u32
}

fn fill_seed(key: u64, version: u32) -> u64 {
    mix64(key.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ u64::from(version))
}

/// Appends the value of `key` at `version`, `len` bytes long.
pub fn write(key: u64, version: u32, len: usize, out: &mut Vec<u8>) {
    if len < HEADER_BYTES {
        out.extend_from_slice(&mix64(key ^ len as u64).to_le_bytes()[..len]);
        return;
    }
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&check_word(key, version, len).to_le_bytes());
    let mut rng = rng::seeded(fill_seed(key, version));
    let mut left = len - HEADER_BYTES;
    while left >= 8 {
        out.extend_from_slice(&rng.next_u64().to_le_bytes());
        left -= 8;
    }
    out.extend_from_slice(&rng.next_u64().to_le_bytes()[..left]);
}

/// Whether `data` is a value some writer could have stored for `key`.
pub fn is_valid(key: u64, data: &[u8]) -> bool {
    let len = data.len();
    if len < HEADER_BYTES {
        return data == &mix64(key ^ len as u64).to_le_bytes()[..len];
    }
    let version = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
    let check = u32::from_le_bytes([data[4], data[5], data[6], data[7]]);
    if check != check_word(key, version, len) {
        return false;
    }
    let mut rng = rng::seeded(fill_seed(key, version));
    let mut words = data[HEADER_BYTES..].chunks_exact(8);
    for word in &mut words {
        if word != rng.next_u64().to_le_bytes() {
            return false;
        }
    }
    let tail = words.remainder();
    tail == &rng.next_u64().to_le_bytes()[..tail.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: every written value checks out for its key, at every length and version, and
    /// any single flipped byte, truncation, extension or other key is caught.
    /// Goal: the bytes of a value are those the hand-written generator produced (recorded
    /// from it), so a server preloaded by an older build still verifies.
    #[test]
    fn bytes_are_stable() {
        let mut value = Vec::new();
        write(42, 3, 30, &mut value);
        let recorded: [u8; 30] = [
            3, 0, 0, 0, 219, 1, 0, 0, 137, 88, 214, 194, 109, 124, 145, 107, 134, 32, 141, 61, 229,
            241, 18, 35, 108, 88, 9, 252, 113, 10,
        ];
        assert_eq!(value, recorded);
    }

    #[test]
    fn round_trip_and_corruption() {
        for len in [0, 1, 7, 8, 9, 15, 16, 20, 100, 1001] {
            for version in [0, 1, u32::MAX] {
                let mut v = Vec::new();
                write(42, version, len, &mut v);
                assert_eq!(v.len(), len);
                assert!(is_valid(42, &v), "len {len} version {version}");
                if len == 0 {
                    continue;
                }
                assert!(!is_valid(43, &v) || len < 2, "other key, len {len}");
                for at in [0, len / 2, len - 1] {
                    let mut bad = v.clone();
                    bad[at] ^= 0x20;
                    assert!(!is_valid(42, &bad), "flip at {at} len {len}");
                }
                assert!(!is_valid(42, &v[..len - 1]) || len <= 1, "truncated, len {len}");
                let mut longer = v.clone();
                longer.push(b'x');
                assert!(!is_valid(42, &longer), "extended, len {len}");
            }
        }
    }
}
