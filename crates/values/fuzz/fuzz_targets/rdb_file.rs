//! Arbitrary bytes as an RDB file (`src/rdb/file.rs`: the opcodes, the windowed reader, the
//! checksum trailer, and each key's value through the DUMP codec): raw (most fail the
//! magic or the checksum, as a foreign file would), or made into a file with Redis 7.0's
//! header and a valid checksum after the body so that they reach the opcodes. The first
//! byte picks which (and the checksum 0, "disabled", for some).
//!
//! Checks: nothing panics or allocates what a length claims; a file that reads is written
//! again by `FileWriter` and reads back as the same keys, functions and AUX fields.
//!
//! Run: `cargo fuzz run rdb_file corpus/rdb_file seeds/rdb_file -- -dict=rdb.dict`
//! from crates/values/fuzz (see scripts/fuzz-smoke).

#![no_main]

use libfuzzer_sys::fuzz_target;
use values::rdb::{
    self,
    file::{self, Entry, FileWriter, KeyHead},
};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else { return };
    let bytes = match mode % 4 {
        0 => body.to_vec(),
        1 => sealed(body, false),
        _ => sealed(body, true),
    };
    let mut entries = Vec::new();
    let read = file::read(&bytes[..], |entry| {
        entries.push(entry);
        Ok(())
    });
    let Ok(summary) = read else { return };
    entries.retain(|entry| !matches!(entry, Entry::Resize { .. }));
    assert_eq!(summary.keys as usize, entries.iter().filter(|e| matches!(e, Entry::Key(_))).count());
    let again = rewrite(&entries);
    let mut reread = Vec::new();
    file::read(&again[..], |entry| {
        if !matches!(entry, Entry::Resize { .. }) {
            reread.push(entry);
        }
        Ok(())
    })
    .expect("a rewritten file reads");
    assert!(reread == entries, "a rewritten file reads as the same entries");
});

/// `body` after Redis 7.0's header, with EOF and a checksum (or 0) after it.
fn sealed(body: &[u8], checksum: bool) -> Vec<u8> {
    let mut bytes = b"REDIS0010".to_vec();
    bytes.extend_from_slice(body);
    bytes.push(0xff);
    let crc = if checksum { rdb::crc64(&bytes) } else { 0 };
    bytes.extend_from_slice(&crc.to_le_bytes());
    bytes
}

fn rewrite(entries: &[Entry]) -> Vec<u8> {
    let mut writer = FileWriter::new(Vec::new());
    let mut db = None;
    for entry in entries {
        match entry {
            Entry::Aux { name, value } => writer.aux(name, value).unwrap(),
            Entry::Function(code) => writer.function(code).unwrap(),
            Entry::Resize { .. } => {}
            Entry::Key(key) => {
                if db != Some(key.db) {
                    writer.select_db(key.db, 0, 0).unwrap();
                    db = Some(key.db);
                }
                let head = KeyHead { expire_at_ms: key.expire_at_ms, item: key.item };
                writer.key(&key.key, &key.value, head).unwrap();
            }
        }
    }
    writer.finish().unwrap().0
}
