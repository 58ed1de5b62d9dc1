//! Redis Cluster's key slots: CRC16 (XMODEM: polynomial 0x1021, initial value 0) of the
//! key, or of its hash tag, modulo 16384. A hash tag is the part between the first `{` and
//! the first `}` after it, when that part is not empty; keys sharing one share a slot, which
//! is how clients keep multi-key commands on one node.

/// Slots in a cluster.
pub const SLOTS: u16 = 16384;

/// CRC16-XMODEM, a byte at a time from a table built at compile time.
const TABLE: [u16; 256] = {
    let mut table = [0u16; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut crc = (byte as u16) << 8;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 };
            bit += 1;
        }
        table[byte] = crc;
        byte += 1;
    }
    table
};

fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, byte| (crc << 8) ^ TABLE[usize::from((crc >> 8) as u8 ^ byte)])
}

/// The part of `key` that decides its slot: its hash tag, or the whole key.
pub fn hash_part(key: &[u8]) -> &[u8] {
    let Some(open) = key.iter().position(|b| *b == b'{') else { return key };
    let rest = &key[open + 1..];
    match rest.iter().position(|b| *b == b'}') {
        Some(close) if close > 0 => &rest[..close],
        _ => key,
    }
}

/// The slot of `key` (CLUSTER KEYSLOT).
pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hash_part(key)) & (SLOTS - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc16_check_value() {
        // XMODEM's published check value.
        assert_eq!(crc16(b"123456789"), 0x31C3);
    }

    #[test]
    fn hash_tags() {
        assert_eq!(hash_part(b"{user1000}.following"), b"user1000");
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"{user1000}.followers"));
        assert_eq!(hash_part(b"foo{}{bar}"), b"foo{}{bar}", "an empty first tag: whole key");
        assert_eq!(hash_part(b"foo{{bar}}zap"), b"{bar");
        assert_eq!(hash_part(b"foo{bar}{zap}"), b"bar");
        assert_eq!(hash_part(b"{no close"), b"{no close");
        assert!(key_slot(b"") < SLOTS);
    }
}
