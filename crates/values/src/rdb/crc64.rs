//! CRC-64/Jones as Redis's `crc64.c` computes it (the checksum at the end of a DUMP
//! payload): polynomial 0xad93d23594c935a9, reflected input and output, initial value 0,
//! no final xor. Check value: `crc64(b"123456789") == 0xe9c6d914c4b8d9ca`.

/// The polynomial, bit-reversed for the reflected (least significant bit first) form.
const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;

const _: () = assert!(POLY_REFLECTED.reverse_bits() == 0xad93_d235_94c9_35a9);

/// One entry per byte value: the register after shifting that byte through it.
static TABLE: [u64; 256] = table();

const fn table() -> [u64; 256] {
    let mut table = [0u64; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut crc = byte as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ POLY_REFLECTED } else { crc >> 1 };
            bit += 1;
        }
        table[byte] = crc;
        byte += 1;
    }
    table
}

/// The CRC-64/Jones of `bytes`.
pub fn crc64(bytes: &[u8]) -> u64 {
    crc64_update(0, bytes)
}

/// The CRC-64/Jones of what gave `crc`, followed by `bytes` (a file's checksum, a piece at a
/// time).
pub fn crc64_update(crc: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(crc, |crc, &byte| TABLE[((crc ^ u64::from(byte)) & 0xff) as usize] ^ (crc >> 8))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: the catalogue check value (redis-server's own payload checksums are checked in
    /// `rdb.rs`'s tests).
    #[test]
    fn check_values() {
        assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
        assert_eq!(crc64(b""), 0);
        assert_eq!(crc64_update(crc64(b"1234"), b"56789"), crc64(b"123456789"));
    }
}
