//! Snapshots of the whole store, for a restart that keeps the cache warm, in two formats:
//! Redis's RDB (`rdb.rs`: SAVE, BGSAVE, SHUTDOWN SAVE, replication, and the file loaded
//! at start) and Spinel's own (`format.rs`: memcached's `-e FILE`, saved at a graceful stop
//! and restored at the next start; an older SAVE's file still loads). [`restore`] tells
//! them apart by their first bytes. The rest of this note is about Spinel's own format.
//!
//! What is saved: every live item, as a walk of the index finds it (`Store::scan_items`):
//! key (with its database), value (a collection's encoding, read from outside the store
//! for a large one), client flags, CAS unique and expiry as a Unix time, in blocks with
//! checksums (`format.rs`). Deleted and expired items are not there, since only the index
//! is walked: a restore from the segments' bytes would bring deleted keys back, which is why
//! this is not a copy of item memory. Expiry is wall-clock time, so an item's lifetime
//! runs on while the server is down, as memcached's does across its restart; items found
//! expired at restore are left out. Restored items keep their CAS uniques, and the store
//! hands out greater ones from then on.
//!
//! Safety of the file: it is written beside its place and renamed over it once complete and
//! synced, so a crash mid-save leaves the previous snapshot; a file that is cut short,
//! changed, of another version or not a snapshot at all fails its checks before any item is
//! restored, and the server starts empty, saying why.
//!
//! Spinel's own format is written by a walk of the index while requests run, so each item
//! is as the walk met it; SAVE and BGSAVE's RDB files are one instant's picture
//! (`picture.rs`).

pub(crate) mod format;
mod instant;
mod picture;
mod rdb;
#[cfg(test)]
mod testdata;

pub use picture::{kept_limit_bytes, Abandon, Picture, KEPT_LIMIT_MIN_BYTES};
pub use rdb::{load_rdb, load_rdb_file, save_rdb, write_rdb, RdbAux};

use std::{
    fs::File,
    io::BufWriter,
    path::Path,
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
    time::Instant,
};

use store::{Expiry, Mode, StoreOptions, ValueKind};

use crate::Shared;

/// What a save or a restore did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcome {
    pub items: u64,
    pub bytes: u64,
    pub millis: u64,
    /// Restore only: items left out (expired meanwhile, or refused by the store).
    pub skipped: u64,
}

/// Saves an RDB file of the picture begun (with the gate held, see `picture.rs`) when
/// `libraries` were read; ends the picture, written or not.
pub fn save_picture(
    shared: &Shared,
    path: &Path,
    libraries: &[Vec<u8>],
) -> Result<Outcome, String> {
    let saved = rdb::save_with(path, |out| instant::write_picture(shared, out, libraries));
    shared.core.picture.end();
    saved
}

/// Saves every live item to `path`.
pub fn save(shared: &Shared, path: &Path) -> Result<Outcome, String> {
    let started = Instant::now();
    let temp = path.with_extension("tmp-save");
    let file = File::create(&temp).map_err(|e| format!("cannot create {}: {e}", temp.display()))?;
    let written = write_items(shared, BufWriter::with_capacity(1 << 20, file));
    let (file, items) = match written {
        Ok(done) => done,
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            return Err(format!("cannot write {}: {e}", temp.display()));
        }
    };
    let synced = file.into_inner().map_err(|e| e.into_error()).and_then(|f| f.sync_all());
    synced
        .and_then(|()| std::fs::rename(&temp, path))
        .map_err(|e| format!("cannot complete {}: {e}", path.display()))?;
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    Ok(Outcome { items, bytes, millis: started.elapsed().as_millis() as u64, skipped: 0 })
}

fn write_items(shared: &Shared, out: BufWriter<File>) -> std::io::Result<(BufWriter<File>, u64)> {
    let mut writer = format::Writer::new(out, crate::resp::now_unix_ms(shared))?;
    let mut failed = None;
    let mut cursor = 0;
    loop {
        cursor = shared.core.store.scan_items(cursor, 512, |item| {
            if failed.is_some() {
                return;
            }
            let kind = item.value_kind();
            let value = match kind {
                ValueKind::String => item.value().to_vec(),
                _ => match crate::resp::saved_encoding(shared, &item) {
                    Some(encoding) => encoding,
                    None => return,
                },
            };
            let expiry_ms = match item.expiry() {
                Expiry::Never => 0,
                Expiry::AtMs(at) => at,
            };
            let read = if item.accessed_before() { READ_FLAG } else { 0 };
            let head = (kind as u8 | read, item.flags(), item.cas(), expiry_ms);
            if let Err(e) = writer.add(head, item.key(), &value) {
                failed = Some(e);
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        if cursor == 0 {
            return writer.finish();
        }
    }
}

/// Restores the file at `path` into the store (which should be empty): an RDB file, or
/// Spinel's own snapshot (memcached's `-e` file, and what SAVE wrote before RDB), told
/// apart by their first bytes. Nothing is restored from a file that fails its checks.
pub fn restore(shared: &Shared, path: &Path) -> Result<Outcome, String> {
    let file = File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let mut magic = Vec::with_capacity(8);
    let _ = std::io::Read::read_to_end(&mut std::io::Read::take(file, 8), &mut magic);
    if magic != format::MAGIC {
        return load_rdb_file(shared, path);
    }
    let file = File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    let input = std::io::BufReader::with_capacity(1 << 20, file);
    let done = restore_from(shared, input).map_err(|why| format!("{}: {why}", path.display()))?;
    Ok(Outcome { bytes, ..done })
}

/// [`restore`] from any reader (`bytes` is left 0). Every record is checked (its kind, a
/// collection's encoding) before any is restored.
pub fn restore_from(shared: &Shared, input: impl std::io::Read) -> Result<Outcome, String> {
    let started = Instant::now();
    let (_, records) = format::read_all(input)?;
    check_records(&records)?;
    let now_ms = crate::resp::now_unix_ms(shared);
    shared.core.store.reserve_index(records.len());
    let (mut items, mut skipped, mut cas_max) = (0, 0, 0);
    // Items never read go in first: if they do not all fit (restored items carry their CAS,
    // 8 bytes more than the store's own), eviction takes those, not the ones in use.
    let (read, unread): (Vec<_>, Vec<_>) =
        records.into_iter().partition(|record| record.kind & READ_FLAG != 0);
    let mut ordered: Vec<Option<format::Record>> = Vec::with_capacity(read.len() + unread.len());
    for group in [unread, read] {
        let mut group: Vec<Option<format::Record>> = group.into_iter().map(Some).collect();
        ordered.extend(spread_order(group.len()).map(|at| group[at].take()));
    }
    for (at, record) in ordered.into_iter().enumerate() {
        let record = record.expect("each position once");
        if at % 256 == 0 {
            // What the workers' ticks do while serving: growing index tables move on.
            shared.core.store.grow_index();
        }
        let expiry = match record.expiry_ms {
            0 => Expiry::Never,
            at if at <= now_ms => {
                skipped += 1;
                continue;
            }
            at => Expiry::AtMs(at),
        };
        cas_max = cas_max.max(record.cas);
        if crate::keyspace::decode(&record.key).is_some_and(|(db, _)| db != 0) {
            // Keys of other databases: database 0 is no longer the whole store (DBSIZE).
            shared.redis.nonzero_db_selected.store(true, Ordering::SeqCst);
        }
        if restore_record(shared, record, expiry) {
            items += 1;
        } else {
            skipped += 1;
        }
    }
    shared.core.store.raise_cas_floor(cas_max);
    Ok(Outcome { items, bytes: 0, millis: started.elapsed().as_millis() as u64, skipped })
}

/// Refuses a snapshot holding a record of an unknown kind, or a collection whose encoding
/// is not one the commands write: they read encodings trusting them to be whole, and the
/// file's checksums only say it is as written, not that the writer was Spinel.
fn check_records(records: &[format::Record]) -> Result<(), String> {
    for (at, record) in records.iter().enumerate() {
        let Some(kind) = kind_of(record.kind) else {
            return Err(format!("snapshot record {} has unknown kind {}", at + 1, record.kind));
        };
        if !crate::owned::valid_encoding(kind, &record.value) {
            let name = String::from_utf8_lossy(crate::resp::type_name(kind));
            return Err(format!("snapshot record {} holds a damaged {name}", at + 1));
        }
    }
    Ok(())
}

/// The value kind a record's kind byte names (the read flag aside).
fn kind_of(byte: u8) -> Option<ValueKind> {
    Some(match byte & !READ_FLAG {
        0 => ValueKind::String,
        1 => ValueKind::List,
        2 => ValueKind::Hash,
        3 => ValueKind::Set,
        4 => ValueKind::ZSet,
        5 => ValueKind::Stream,
        _ => return None,
    })
}

/// The positions `0..len`, each once, in an order far from the saved one. A snapshot is
/// saved in index order, which is hash order: inserted so, keys would fill neighbouring
/// buckets of one table before it grows, and the index would drop some (measured: 13% of
/// 100k small items).
fn spread_order(len: usize) -> impl Iterator<Item = usize> {
    // A stride that is prime and larger than any snapshot is coprime with `len`, so adding
    // it modulo `len` visits every position once.
    const STRIDE: usize = 2_654_435_761;
    let step = if len < STRIDE { STRIDE % len.max(1) } else { 1 };
    let mut position = 0;
    (0..len).map(move |_| {
        let at = position;
        position += step;
        if position >= len {
            position -= len;
        }
        at
    })
}

/// A record's kind byte with this bit set: the item had been read since it was written.
const READ_FLAG: u8 = 0x80;

fn restore_record(shared: &Shared, record: format::Record, expiry: Expiry) -> bool {
    let Some(kind) = kind_of(record.kind) else { return false };
    if kind != ValueKind::String {
        return crate::resp::restore_collection(shared, &record.key, kind, record.value, expiry)
            .is_ok();
    }
    let options = StoreOptions {
        cas: Some(record.cas),
        size_max: Some(crate::resp::PROTO_MAX_BULK_LEN),
        ..StoreOptions::default()
    };
    let stored = shared.core.store.store_with(
        &record.key,
        &record.value,
        record.flags,
        expiry,
        Mode::Set,
        options,
    );
    stored.is_ok()
}

/// Redis's view of saving: the last save's time and outcome, and whether a BGSAVE runs.
#[derive(Debug, Default)]
pub struct SaveState {
    /// Unix seconds of the last successful save (or of the start, as Redis's LASTSAVE).
    pub last_save_secs: AtomicU64,
    pub last_save_ok: AtomicBool,
    pub in_progress: AtomicBool,
    /// Unix seconds a running BGSAVE started (0: none).
    pub started_secs: AtomicU64,
    /// Why the last save failed (empty: it did not).
    pub last_error: parking_lot::Mutex<String>,
    /// `Counters::redis_changes` summed as the last successful save started: INFO's
    /// `rdb_changes_since_last_save` counts from there, as Redis's `dirty` does.
    pub changes_at_save: AtomicU64,
    /// Saves begun since the start (INFO's `rdb_saves`): redis-server counts a BGSAVE as it
    /// forks, so one a FLUSHALL stops still counts.
    pub saves: AtomicU64,
}

impl SaveState {
    pub fn new(now_secs: u64) -> SaveState {
        let state = SaveState::default();
        state.last_save_secs.store(now_secs, Ordering::Relaxed);
        state.last_save_ok.store(true, Ordering::Relaxed);
        state
    }

    /// Notes a save's result; `changes_at_start`: the changes counted as it started.
    pub fn finished(&self, ok: bool, now_secs: u64, changes_at_start: u64) {
        if ok {
            self.last_save_secs.store(now_secs, Ordering::Relaxed);
            self.changes_at_save.store(changes_at_start, Ordering::Relaxed);
        }
        self.last_save_ok.store(ok, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: u8, value: &[u8]) -> format::Record {
        let (key, value) = (b"k".to_vec(), value.to_vec());
        format::Record { kind, flags: 0, cas: 1, expiry_ms: 0, key, value }
    }

    /// Goal (found by fuzz target collection_decoders: LINDEX on a list whose count claims
    /// more entries than it has panicked): a snapshot whose checksums are right but which
    /// holds a collection no command writes, or a kind that does not exist, is refused
    /// whole, saying which record.
    #[test]
    fn damaged_collections_are_refused_before_any_restore() {
        let good = [record(0, b"any bytes"), record(1, b"\x01\x01a"), record(0x81, b"\x01\x00")];
        assert_eq!(check_records(&good), Ok(()));
        let cases: [(u8, &[u8], &str); 7] = [
            (1, b"\x08", "record 4 holds a damaged list"),
            (2, b"\x02\x01a\x01b", "record 4 holds a damaged hash"),
            (3, b"\x02\x05\x00\x01\x00", "record 4 holds a damaged set"),
            (3, b"\x80\x02\x01a\x01a", "record 4 holds a damaged set"),
            (4, &[0, 0, 0, 0, 0, 0, 0xf8, 0x7f, 1, b'a'], "record 4 holds a damaged zset"),
            (5, b"\x01", "record 4 holds a damaged stream"),
            (6, b"", "record 4 has unknown kind 6"),
        ];
        for (kind, value, why) in cases {
            let mut records = good.to_vec();
            records.push(record(kind, value));
            assert_eq!(check_records(&records), Err(format!("snapshot {why}")), "{value:?}");
        }
    }
}
