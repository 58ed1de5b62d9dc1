//! CRC-64/Jones as Redis's `crc64.c` computes it (the checksum at the end of a DUMP
//! payload): polynomial 0xad93d23594c935a9, reflected input and output, initial value 0,
//! no final xor. Check value: `crc64(b"123456789") == 0xe9c6d914c4b8d9ca`.

/// The polynomial, bit-reversed for the reflected (least significant bit first) form.
const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;

const _: () = assert!(POLY_REFLECTED.reverse_bits() == 0xad93_d235_94c9_35a9);

/// Slicing-by-8 tables: `TABLES[0]` has one entry per byte value (the register after
/// shifting that byte through it); `TABLES[k]` is that entry shifted through k zero bytes
/// more, so that eight bytes are folded in with eight lookups and no loop over bits.
static TABLES: [[u64; 256]; 8] = tables();

const fn tables() -> [[u64; 256]; 8] {
    let mut tables = [[0u64; 256]; 8];
    let mut byte = 0;
    while byte < 256 {
        let mut crc = byte as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ POLY_REFLECTED } else { crc >> 1 };
            bit += 1;
        }
        tables[0][byte] = crc;
        byte += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut byte = 0;
        while byte < 256 {
            let previous = tables[k - 1][byte];
            tables[k][byte] = tables[0][(previous & 0xff) as usize] ^ (previous >> 8);
            byte += 1;
        }
        k += 1;
    }
    tables
}

/// The CRC-64/Jones of `bytes`.
pub fn crc64(bytes: &[u8]) -> u64 {
    crc64_update(0, bytes)
}

/// The CRC-64/Jones of what gave `crc`, followed by `bytes` (a file's checksum, a piece at a
/// time).
pub fn crc64_update(crc: u64, bytes: &[u8]) -> u64 {
    let mut crc = crc;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let x = crc ^ u64::from_le_bytes(word.try_into().expect("8 bytes"));
        let byte = |at: u32| ((x >> (8 * at)) & 0xff) as usize;
        crc = TABLES[7][byte(0)]
            ^ TABLES[6][byte(1)]
            ^ TABLES[5][byte(2)]
            ^ TABLES[4][byte(3)]
            ^ TABLES[3][byte(4)]
            ^ TABLES[2][byte(5)]
            ^ TABLES[1][byte(6)]
            ^ TABLES[0][byte(7)];
    }
    words
        .remainder()
        .iter()
        .fold(crc, |crc, &byte| TABLES[0][((crc ^ u64::from(byte)) & 0xff) as usize] ^ (crc >> 8))
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
        // Eight bytes at a time gives what one at a time gives, at every split.
        let bytes: Vec<u8> = (0..1000u32).map(|n| (n * 7919 % 251) as u8).collect();
        let one_at_a_time = bytes.iter().fold(0, |crc, &b| crc64_update(crc, &[b]));
        for split in [0, 1, 7, 8, 9, 500, 999, 1000] {
            let (head, tail) = bytes.split_at(split);
            assert_eq!(crc64_update(crc64(head), tail), one_at_a_time, "split at {split}");
        }
    }
}
