//! Standard base64 (RFC 4648 alphabet, `=` padding) for meta keys sent with the `b` flag.
//!
//! Small enough to write here rather than take a dependency. Decoding is strict: the input
//! length is a multiple of four and padding appears only at the end, so every key has
//! exactly one encoding and a decoded key can be re-encoded to the bytes the client sent.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Bytes needed to encode `len` bytes.
pub const fn encoded_len(len: usize) -> usize {
    len.div_ceil(3) * 4
}

/// Most bytes `len` base64 characters can decode to.
pub const fn decoded_len_max(len: usize) -> usize {
    len / 4 * 3
}

/// Appends the encoding of `input` to `buf`.
pub fn encode(input: &[u8], buf: &mut Vec<u8>) {
    buf.reserve(encoded_len(input.len()));
    for chunk in input.chunks(3) {
        let b0 = chunk[0];
        let b1 = chunk.get(1).copied().unwrap_or(0);
        let b2 = chunk.get(2).copied().unwrap_or(0);
        let sextets = [b0 >> 2, (b0 & 0x03) << 4 | b1 >> 4, (b1 & 0x0f) << 2 | b2 >> 6, b2 & 0x3f];
        // A chunk of n bytes yields n + 1 characters; the rest is padding.
        for (index, &sextet) in sextets.iter().enumerate() {
            if index <= chunk.len() {
                buf.push(ALPHABET[usize::from(sextet)]);
            } else {
                buf.push(b'=');
            }
        }
    }
}

fn sextet(c: u8) -> Option<u8> {
    match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

/// Decodes `input` into the front of `out` and returns the decoded length, or `None` if
/// `input` is not canonical base64 or `out` is too small.
pub fn decode(input: &[u8], out: &mut [u8]) -> Option<usize> {
    let mut written = 0;
    decode_with(input, |bytes| {
        out.get_mut(written..written + bytes.len())?.copy_from_slice(bytes);
        written += bytes.len();
        Some(())
    })
}

/// The decoded length of `input`, or `None` if it is not canonical base64; writes nothing.
pub fn decoded_len(input: &[u8]) -> Option<usize> {
    decode_with(input, |_| Some(()))
}

/// Decodes `input` a group at a time, handing each group's bytes to `emit`.
fn decode_with(input: &[u8], mut emit: impl FnMut(&[u8]) -> Option<()>) -> Option<usize> {
    if !input.chunks_exact(4).remainder().is_empty() {
        return None;
    }
    let mut decoded_len = 0;
    let quads = input.len() / 4;
    for (quad_index, quad) in input.chunks_exact(4).enumerate() {
        let last = quad_index + 1 == quads;
        let padding = quad.iter().rev().take_while(|&&c| c == b'=').count();
        if padding > 2 || (padding > 0 && !last) {
            return None;
        }
        let mut bits: u32 = 0;
        for &c in &quad[..4 - padding] {
            bits = bits << 6 | u32::from(sextet(c)?);
        }
        bits <<= 6 * padding as u32;
        let bytes = [(bits >> 16) as u8, (bits >> 8) as u8, bits as u8];
        let produced = 3 - padding;
        // Canonical form: the bits dropped by padding must be zero.
        if bytes[produced..].iter().any(|&b| b != 0) {
            return None;
        }
        emit(&bytes[..produced])?;
        decoded_len += produced;
    }
    Some(decoded_len)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Goal: RFC 4648 test vectors in both directions.
    #[test]
    fn rfc_vectors() {
        let vectors: [(&[u8], &[u8]); 7] = [
            (b"", b""),
            (b"f", b"Zg=="),
            (b"fo", b"Zm8="),
            (b"foo", b"Zm9v"),
            (b"foob", b"Zm9vYg=="),
            (b"fooba", b"Zm9vYmE="),
            (b"foobar", b"Zm9vYmFy"),
        ];
        for (plain, encoded) in vectors {
            let mut buf = Vec::new();
            encode(plain, &mut buf);
            assert_eq!(buf, encoded);
            let mut out = [0u8; 16];
            let len = decode(encoded, &mut out).expect("valid vector");
            assert_eq!(&out[..len], plain);
        }
    }

    // Goal: malformed input is refused rather than guessed at.
    #[test]
    fn rejects_malformed() {
        let mut out = [0u8; 16];
        for bad in [&b"Zg="[..], b"Z===", b"Zg==Zg==", b"Zm9!", b"Zh==", b"=AAA"] {
            assert_eq!(decode(bad, &mut out), None, "{:?}", String::from_utf8_lossy(bad));
        }
        assert_eq!(decode(b"Zm9vYmFy", &mut out[..5]), None);
    }

    // Goal: every byte string round-trips; a small PRNG supplies them.
    #[test]
    fn round_trip_random() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let len = (state >> 58) as usize;
            let plain: Vec<u8> = (0..len).map(|i| (state >> (i % 56)) as u8).collect();
            let mut encoded = Vec::new();
            encode(&plain, &mut encoded);
            assert_eq!(encoded.len(), encoded_len(plain.len()));
            let mut out = vec![0u8; decoded_len_max(encoded.len())];
            let decoded_len = decode(&encoded, &mut out).expect("own encoding decodes");
            assert_eq!(&out[..decoded_len], &plain[..]);
        }
    }
}
