//! The store as a Redis RDB file (version 10, as Redis 7.0 writes it; `values::rdb::file`):
//! SAVE, BGSAVE and SHUTDOWN SAVE write one, the server loads one at start, and
//! replication sends one.
//!
//! Written: Redis 7.0's AUX fields, the function libraries, then each database that has
//! keys (SELECTDB, RESIZEDB, its keys). The store holds every database in one index, so a
//! first walk counts each database's keys (RESIZEDB comes before them), then one walk per
//! database with keys writes them. A string in database 0 is also a memcached item: its
//! client flags and CAS unique go before it in an AUX field Redis skips
//! (`values::rdb::file::ITEM_AUX`). As with Spinel's own snapshot, a walk runs while
//! requests do: each key is as it was when the walk met it.
//!
//! Loaded: the file is read twice, once to check all of it (checksum, every value, the
//! databases) and once to store it, so that a damaged file loads nothing; neither read
//! holds the file whole. Keys already expired are left out, as Redis leaves them out on a
//! master; restored memcached items keep their CAS uniques and new ones come above them.

use std::{
    fs::File,
    io::{BufWriter, Read, Write},
    path::Path,
    sync::atomic::Ordering,
    time::Instant,
};

use store::{Expiry, Item, Mode, StoreOptions, ValueKind};
use values::rdb::file::{self, Entry, FileWriter, ItemMeta, KeyHead};

use super::Outcome;
use crate::{keyspace, resp, Shared};

/// The `redis-ver` written: the Redis whose RDB version (10) this is.
const RDB_REDIS_VERSION: &str = "7.0.15";

/// The replication fields of an RDB's AUX header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RdbAux {
    /// Empty: no `repl-stream-db`, `repl-id` or `repl-offset` field is written, as
    /// redis-server 7.0.15's SAVE writes none while it has no replication backlog.
    pub repl_id: String,
    pub repl_offset: i64,
    pub repl_stream_db: i64,
}

/// Writes a whole RDB file of every database and the function libraries to `out`;
/// returns the writer and the number of keys written.
pub fn write_rdb<W: Write>(shared: &Shared, out: W, aux: &RdbAux) -> std::io::Result<(W, u64)> {
    let mut writer = FileWriter::new(out);
    for (name, value) in aux_fields(shared, aux) {
        writer.aux(name.as_bytes(), value.as_bytes())?;
    }
    for code in resp::script::library_codes(shared) {
        writer.function(&code)?;
    }
    let counts = count_keys(shared);
    for (db, &(keys, expires)) in counts.iter().enumerate() {
        if keys > 0 {
            writer.select_db(db as u64, keys, expires)?;
            write_database(shared, &mut writer, db as u8)?;
        }
    }
    writer.finish()
}

/// Redis 7.0's header fields, in its order (`rdbSaveInfoAuxFields`).
pub(super) fn aux_fields(shared: &Shared, aux: &RdbAux) -> Vec<(&'static str, String)> {
    let ctime_secs = resp::now_unix_ms(shared) / 1000;
    let mut fields = vec![
        ("redis-ver", RDB_REDIS_VERSION.to_string()),
        ("redis-bits", (usize::BITS).to_string()),
        ("ctime", ctime_secs.to_string()),
        ("used-mem", shared.core.store.memory_used_bytes().to_string()),
    ];
    if !aux.repl_id.is_empty() {
        fields.push(("repl-stream-db", aux.repl_stream_db.to_string()));
        fields.push(("repl-id", aux.repl_id.clone()));
        fields.push(("repl-offset", aux.repl_offset.to_string()));
    }
    fields.push(("aof-base", "0".to_string()));
    fields
}

/// Keys and keys with an expiry, per database, as one walk finds them.
pub(super) fn count_keys(shared: &Shared) -> [(u64, u64); keyspace::DATABASES as usize] {
    let mut counts = [(0u64, 0u64); keyspace::DATABASES as usize];
    let mut cursor = 0;
    loop {
        cursor = shared.core.store.scan_items(cursor, 1024, |item| {
            if let Some((db, _)) = keyspace::decode(item.key()) {
                let count = &mut counts[usize::from(db)];
                count.0 += 1;
                count.1 += u64::from(item.expiry() != Expiry::Never);
            }
        });
        if cursor == 0 {
            return counts;
        }
    }
}

/// Writes the keys of `db`, as a walk of the whole index finds them.
fn write_database<W: Write>(
    shared: &Shared,
    writer: &mut FileWriter<W>,
    db: u8,
) -> std::io::Result<()> {
    let mut failed = None;
    let mut cursor = 0;
    loop {
        cursor = shared.core.store.scan_items(cursor, 512, |item| {
            if failed.is_none() {
                if let Err(e) = write_item(shared, writer, db, &item) {
                    failed = Some(e);
                }
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        if cursor == 0 {
            return Ok(());
        }
    }
}

pub(super) fn write_item<W: Write>(
    shared: &Shared,
    writer: &mut FileWriter<W>,
    db: u8,
    item: &Item<'_>,
) -> std::io::Result<()> {
    let Some((key_db, key)) = keyspace::decode(item.key()) else { return Ok(()) };
    if key_db != db {
        return Ok(());
    }
    let expire_at_ms = match item.expiry() {
        Expiry::Never => None,
        Expiry::AtMs(at) => Some(at),
    };
    if item.value_kind() == ValueKind::String {
        // Flags and CAS travel for memcached's items.
        let item_meta = string_meta(shared, db, item.flags())
            .then(|| ItemMeta { flags: item.flags(), cas: item.cas() });
        let head = KeyHead { expire_at_ms, item: item_meta };
        return writer.string_key(key, item.value(), head);
    }
    // A collection released meanwhile, or with nothing live left, is not a key any more.
    match resp::cluster::value_of(shared, item) {
        Some(value) => writer.key(key, &value, KeyHead { expire_at_ms, item: None }),
        None => Ok(()),
    }
}

/// Whether a string of `db` with client flags `flags` carries its memcached flags and CAS.
pub(super) fn string_meta(shared: &Shared, db: u8, flags: u32) -> bool {
    // Once memcached's port wrote anything, every string of database 0 may be its item;
    // before, only those with flags (a Redis-only server writes Redis-sized files).
    let memcached = shared.core.memcached_wrote.load(std::sync::atomic::Ordering::Relaxed);
    db == 0 && (memcached || flags != 0)
}

/// Saves an RDB file to `path`: written beside it, synced, then renamed over it, so a
/// failed save leaves the previous file. A walk of the live store: each key as the walk
/// met it (see [`super::save_picture`] for one instant's picture).
pub fn save_rdb(shared: &Shared, path: &Path) -> Result<Outcome, String> {
    save_with(path, |out| write_rdb(shared, out, &RdbAux::default()))
}

/// Saves to `path` what `write` writes (a temporary file beside it, synced, renamed).
pub(super) fn save_with(
    path: &Path,
    write: impl FnOnce(BufWriter<File>) -> std::io::Result<(BufWriter<File>, u64)>,
) -> Result<Outcome, String> {
    let started = Instant::now();
    let temp = path.with_extension("tmp-save");
    let file = File::create(&temp).map_err(|e| format!("cannot create {}: {e}", temp.display()))?;
    let out = BufWriter::with_capacity(1 << 20, file);
    let (out, items) = match write(out) {
        Ok(done) => done,
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            return Err(format!("cannot write {}: {e}", temp.display()));
        }
    };
    let synced = out.into_inner().map_err(|e| e.into_error()).and_then(|f| f.sync_all());
    synced
        .and_then(|()| std::fs::rename(&temp, path))
        .map_err(|e| format!("cannot complete {}: {e}", path.display()))?;
    let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    Ok(Outcome { items, bytes, millis: started.elapsed().as_millis() as u64, skipped: 0 })
}

/// What the checking read found: what the loading read needs first.
struct Checked {
    keys: u64,
    functions: Vec<Vec<u8>>,
}

/// Checks the RDB file at `path` whole, then loads it into the store (which should be
/// empty, as after a flush): its function libraries in place of any, its keys, Redis's
/// and memcached's, in every database. Nothing is loaded from a file that fails a check.
pub fn load_rdb_file(shared: &Shared, path: &Path) -> Result<Outcome, String> {
    let open = || File::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()));
    let mut outcome = load_rdb(shared, open).map_err(|why| format!("{}: {why}", path.display()))?;
    outcome.bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    Ok(outcome)
}

/// [`load_rdb_file`] from whatever `open` opens, once to check and once to load (`bytes`
/// is left 0).
pub fn load_rdb<R: Read>(
    shared: &Shared,
    mut open: impl FnMut() -> Result<R, String>,
) -> Result<Outcome, String> {
    let started = Instant::now();
    let checked = check(open()?)?;
    resp::script::load_libraries(shared, &checked.functions)
        .map_err(|why| format!("a function library fails to load: {why}"))?;
    shared.core.store.reserve_index(checked.keys as usize);
    let mut outcome = Outcome::default();
    let mut cas_max = 0;
    let now_ms = resp::now_unix_ms(shared);
    file::read(open()?, |entry| {
        let Entry::Key(key) = entry else { return Ok(()) };
        if (outcome.items + outcome.skipped) % 256 == 0 {
            // What the workers' ticks do while serving: growing index tables move on.
            shared.core.store.grow_index();
        }
        cas_max = cas_max.max(key.item.map_or(0, |item| item.cas));
        match load_key(shared, key, now_ms) {
            true => outcome.items += 1,
            false => outcome.skipped += 1,
        }
        Ok(())
    })?;
    shared.core.store.raise_cas_floor(cas_max);
    outcome.millis = started.elapsed().as_millis() as u64;
    Ok(outcome)
}

/// The checking read: the whole file parsed (values too), its checksum and databases
/// checked, its functions kept.
fn check(input: impl Read) -> Result<Checked, String> {
    let mut checked = Checked { keys: 0, functions: Vec::new() };
    file::read(input, |entry| {
        match entry {
            Entry::Key(key) if key.db >= u64::from(keyspace::DATABASES) => {
                return Err(format!(
                    "a key in database {}; there are {} databases",
                    key.db,
                    keyspace::DATABASES
                ))
            }
            Entry::Key(_) => checked.keys += 1,
            Entry::Function(code) => checked.functions.push(code),
            Entry::Aux { .. } | Entry::Resize { .. } => {}
        }
        Ok(())
    })?;
    Ok(checked)
}

/// Stores one key read from a file; false when it is left out (expired, or refused by the
/// store: too large, or no room).
fn load_key(shared: &Shared, key: file::Key, now_ms: u64) -> bool {
    let expiry = match key.expire_at_ms {
        None => Expiry::Never,
        Some(at) if at <= now_ms => return false,
        Some(at) => Expiry::AtMs(at),
    };
    let db = key.db as u8;
    if db != 0 {
        // Keys of other databases: database 0 is no longer the whole store (DBSIZE).
        shared.redis.nonzero_db_selected.store(true, Ordering::SeqCst);
    }
    let mut scratch = Vec::new();
    let stored_key = keyspace::encode(db, &key.key, &mut scratch).to_vec();
    let (kind, bytes) = resp::cluster::to_stored(key.value);
    if kind != ValueKind::String {
        return resp::restore_collection(shared, &stored_key, kind, bytes, expiry).is_ok();
    }
    if key.item.is_some() {
        // Items with memcached's flags and CAS: later files and copies carry them too.
        shared.core.memcached_wrote.store(true, Ordering::Relaxed);
    }
    let item = key.item.unwrap_or(ItemMeta { flags: 0, cas: 0 });
    let options = StoreOptions {
        cas: (item.cas != 0).then_some(item.cas),
        size_max: Some(resp::PROTO_MAX_BULK_LEN),
        ..StoreOptions::default()
    };
    let stored =
        shared.core.store.store_with(&stored_key, &bytes, item.flags, expiry, Mode::Set, options);
    stored.is_ok()
}

#[cfg(test)]
mod tests;
