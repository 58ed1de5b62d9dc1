//! The snapshot file: a header, blocks of records each with its checksum, and an end block
//! whose checksum covers every block's, so that a file cut short, changed or written by
//! something else is refused as a whole before anything of it is used.
//!
//! ```text
//! header:  "SPINELSN" | version u32 | saved at (Unix ms) u64
//! block:   records u32 | bytes u32 | payload | xxh3(payload) u64
//! end:     0 u32 | 0 u32 | record total u64 | xxh3(header, every block checksum) u64
//! record:  kind u8 (bit 7: read since written) | flags u32 | cas u64 | expiry (Unix ms, 0: none) u64
//!          | key length u32 | key | value length u32 | value
//! ```
//!
//! All integers little-endian. A record's value is a string's bytes or a collection's
//! encoding (the store's, for a collection kept outside it too).

use std::io::{self, Read, Write};

use xxhash_rust::xxh3::xxh3_64;

pub(crate) const MAGIC: &[u8; 8] = b"SPINELSN";
pub(crate) const VERSION: u32 = 1;
/// Records are grouped into blocks of about this many bytes.
const BLOCK_BYTES: usize = 1 << 20;
/// The longest key or value a record may claim (the reader allocates what it claims).
const FIELD_MAX: usize = 1 << 30;

/// One item as saved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub(crate) kind: u8,
    pub(crate) flags: u32,
    pub(crate) cas: u64,
    /// Unix ms; 0 for none.
    pub(crate) expiry_ms: u64,
    pub(crate) key: Vec<u8>,
    pub(crate) value: Vec<u8>,
}

/// Writes records to `out` in blocks; [`Writer::finish`] writes the end block.
pub(crate) struct Writer<W: Write> {
    out: W,
    block: Vec<u8>,
    block_records: u32,
    sums: Vec<u8>,
    total: u64,
}

impl<W: Write> Writer<W> {
    pub(crate) fn new(mut out: W, saved_at_ms: u64) -> io::Result<Writer<W>> {
        let mut head = MAGIC.to_vec();
        head.extend_from_slice(&VERSION.to_le_bytes());
        head.extend_from_slice(&saved_at_ms.to_le_bytes());
        out.write_all(&head)?;
        // The end block's checksum covers the header too.
        Ok(Writer { out, block: Vec::new(), block_records: 0, sums: head, total: 0 })
    }

    /// Adds one record: kind, flags, CAS, expiry (Unix ms, 0: none), key, value.
    pub(crate) fn add(
        &mut self,
        head: (u8, u32, u64, u64),
        key: &[u8],
        value: &[u8],
    ) -> io::Result<()> {
        let (kind, flags, cas, expiry_ms) = head;
        self.block.push(kind);
        self.block.extend_from_slice(&flags.to_le_bytes());
        self.block.extend_from_slice(&cas.to_le_bytes());
        self.block.extend_from_slice(&expiry_ms.to_le_bytes());
        for field in [key, value] {
            self.block.extend_from_slice(&(field.len() as u32).to_le_bytes());
            self.block.extend_from_slice(field);
        }
        self.block_records += 1;
        self.total += 1;
        if self.block.len() >= BLOCK_BYTES {
            self.flush_block()?;
        }
        Ok(())
    }

    fn flush_block(&mut self) -> io::Result<()> {
        if self.block_records == 0 {
            return Ok(());
        }
        let sum = xxh3_64(&self.block);
        self.out.write_all(&self.block_records.to_le_bytes())?;
        self.out.write_all(&(self.block.len() as u32).to_le_bytes())?;
        self.out.write_all(&self.block)?;
        self.out.write_all(&sum.to_le_bytes())?;
        self.sums.extend_from_slice(&sum.to_le_bytes());
        self.block.clear();
        self.block_records = 0;
        Ok(())
    }

    /// Writes the last block and the end block; returns the output and the record count.
    pub(crate) fn finish(mut self) -> io::Result<(W, u64)> {
        self.flush_block()?;
        self.out.write_all(&[0; 8])?;
        self.out.write_all(&self.total.to_le_bytes())?;
        self.out.write_all(&xxh3_64(&self.sums).to_le_bytes())?;
        self.out.flush()?;
        Ok((self.out, self.total))
    }
}

/// Reads a whole snapshot: its saved time and records, or why it is refused.
pub(crate) fn read_all(mut input: impl Read) -> Result<(u64, Vec<Record>), String> {
    let mut head = [0; 20];
    input.read_exact(&mut head).map_err(|_| "too short to be a Spinel snapshot".to_string())?;
    if &head[..8] != MAGIC {
        return Err("not a Spinel snapshot (bad magic)".into());
    }
    let version = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
    if version != VERSION {
        return Err(format!("snapshot version {version}; this Spinel reads version {VERSION}"));
    }
    let saved_at_ms = u64::from_le_bytes(head[12..20].try_into().expect("8 bytes"));
    let mut records = Vec::new();
    let mut sums = head.to_vec();
    loop {
        let count = read_u32(&mut input)? as usize;
        let len = read_u32(&mut input)? as usize;
        if count == 0 && len == 0 {
            let total = read_u64(&mut input)?;
            let sum = read_u64(&mut input)?;
            if sum != xxh3_64(&sums) || total != records.len() as u64 {
                return Err("snapshot end block does not match its blocks".into());
            }
            return Ok((saved_at_ms, records));
        }
        // Read as far as the input goes rather than allocated as claimed: a block length
        // of 4 GiB in a short file must not allocate 4 GiB before the file runs out.
        let mut block = Vec::new();
        let read = (&mut input).take(len as u64).read_to_end(&mut block);
        if read.is_err() || block.len() != len {
            return Err(truncated());
        }
        let sum = read_u64(&mut input)?;
        if sum != xxh3_64(&block) {
            return Err(format!("snapshot block {} fails its checksum", (sums.len() - 20) / 8 + 1));
        }
        sums.extend_from_slice(&sum.to_le_bytes());
        parse_block(&block, count, &mut records)?;
    }
}

fn parse_block(mut block: &[u8], count: usize, records: &mut Vec<Record>) -> Result<(), String> {
    for _ in 0..count {
        let kind = take(&mut block, 1)?[0];
        let flags = u32::from_le_bytes(take(&mut block, 4)?.try_into().expect("4 bytes"));
        let cas = u64::from_le_bytes(take(&mut block, 8)?.try_into().expect("8 bytes"));
        let expiry_ms = u64::from_le_bytes(take(&mut block, 8)?.try_into().expect("8 bytes"));
        let key = take_field(&mut block)?.to_vec();
        let value = take_field(&mut block)?.to_vec();
        records.push(Record { kind, flags, cas, expiry_ms, key, value });
    }
    if !block.is_empty() {
        return Err("snapshot block holds more than its records".into());
    }
    Ok(())
}

fn take<'a>(block: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
    if block.len() < n {
        return Err("snapshot record runs past its block".into());
    }
    let (head, rest) = block.split_at(n);
    *block = rest;
    Ok(head)
}

fn take_field<'a>(block: &mut &'a [u8]) -> Result<&'a [u8], String> {
    let len = u32::from_le_bytes(take(block, 4)?.try_into().expect("4 bytes")) as usize;
    if len > FIELD_MAX {
        return Err("snapshot record claims a field too long".into());
    }
    take(block, len)
}

fn truncated() -> String {
    "snapshot is cut short".into()
}

fn read_u32(input: &mut impl Read) -> Result<u32, String> {
    let mut bytes = [0; 4];
    input.read_exact(&mut bytes).map_err(|_| truncated())?;
    Ok(u32::from_le_bytes(bytes))
}

fn read_u64(input: &mut impl Read) -> Result<u64, String> {
    let mut bytes = [0; 8];
    input.read_exact(&mut bytes).map_err(|_| truncated())?;
    Ok(u64::from_le_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(records: usize) -> Vec<u8> {
        let mut writer = Writer::new(Vec::new(), 1_700_000_000_000).unwrap();
        for i in 0..records {
            let value = vec![b'v'; i % 5000];
            writer
                .add((0, i as u32, i as u64 + 1, 0), format!("key{i}").as_bytes(), &value)
                .unwrap();
        }
        writer.finish().unwrap().0
    }

    /// Goal: what is written reads back, across several blocks.
    #[test]
    fn records_read_back() {
        let bytes = sample(4_000);
        let (saved_at_ms, records) = read_all(&bytes[..]).unwrap();
        assert_eq!((saved_at_ms, records.len()), (1_700_000_000_000, 4_000));
        assert_eq!(records[1234].key, b"key1234");
        assert_eq!(
            (records[1234].flags, records[1234].cas, records[1234].value.len()),
            (1234, 1235, 1234)
        );
        assert!(bytes.len() > 2 * BLOCK_BYTES, "several blocks");
    }

    /// Goal: every cut, a flipped byte anywhere, another version or another format is refused.
    #[test]
    fn damaged_files_are_refused() {
        let bytes = sample(300);
        for cut in [0, 5, 19, 20, 100, bytes.len() / 2, bytes.len() - 1] {
            assert!(read_all(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for at in (0..bytes.len()).step_by(997) {
            let mut bad = bytes.clone();
            bad[at] ^= 0x40;
            assert!(read_all(&bad[..]).is_err(), "flipped byte {at}");
        }
        let mut other_version = bytes.clone();
        other_version[8] = 2;
        assert!(read_all(&other_version[..]).unwrap_err().contains("version 2"));
        assert!(read_all(&b"REDIS0011\xfa\x09redis-ver"[..]).unwrap_err().contains("magic"));
    }

    /// Goal (found reviewing for fuzz target snapshot_file): a block length of 4 GiB in a
    /// file a few bytes long is refused as cut short, reading only what is there (it was
    /// allocated, zeroed, before the read).
    #[test]
    fn a_block_claiming_4_gib_is_cut_short() {
        let mut bytes = sample(0);
        let end = bytes.len() - 24;
        bytes.truncate(end);
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.extend_from_slice(&u32::MAX.to_le_bytes());
        bytes.extend_from_slice(b"only these bytes");
        assert_eq!(read_all(&bytes[..]).unwrap_err(), "snapshot is cut short");
    }
}
