//! SAVE's RDB file as one instant's picture (`picture.rs` says how): the same file as
//! `rdb::write_rdb` writes, but each database's walk runs step by step with writers held
//! off, writing kept keys in place of what it finds, and then the kept keys it did not
//! meet. A step's records go to memory first and to the file between steps, so a writer
//! never waits on the disk.

use std::{
    collections::{HashMap, HashSet},
    io::{self, Write},
};

use store::{Expiry, ValueKind};
use values::rdb::file::{FileWriter, ItemMeta, KeyHead};

use super::{
    picture::{Kept, Picture},
    rdb::{self, RdbAux},
};
use crate::{keyspace, resp, Shared};

/// What a step writes, kept in memory until the step lets writers go.
struct Staged<W: Write> {
    staged: Vec<u8>,
    out: W,
}

impl<W: Write> Write for Staged<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.staged.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.drain()?;
        self.out.flush()
    }
}

impl<W: Write> Staged<W> {
    fn drain(&mut self) -> io::Result<()> {
        self.out.write_all(&self.staged)?;
        self.staged.clear();
        Ok(())
    }
}

/// Writes the picture begun (with the gate held) as `libraries` were read: every database
/// as it was then. Fails if the picture is abandoned meanwhile.
pub(crate) fn write_picture<W: Write>(
    shared: &Shared,
    out: W,
    libraries: &[Vec<u8>],
) -> io::Result<(W, u64)> {
    let picture = &shared.core.picture;
    let mut writer = FileWriter::new(Staged { staged: Vec::new(), out });
    for (name, value) in rdb::aux_fields(shared, &RdbAux::default()) {
        writer.aux(name.as_bytes(), value.as_bytes())?;
    }
    for code in libraries {
        writer.function(code)?;
    }
    // Hints for the loader, as the index holds them now.
    let counts = rdb::count_keys(shared);
    for (db, &(keys, expires)) in counts.iter().enumerate() {
        let db = db as u8;
        if keys > 0 || picture.holds_db(db) {
            write_database(shared, picture, &mut writer, db, (keys, expires))?;
        }
    }
    check_not_abandoned(picture)?;
    let (staged, keys) = writer.finish()?;
    Ok((staged.out, keys))
}

fn check_not_abandoned(picture: &Picture) -> io::Result<()> {
    match picture.abandoned() {
        Some(why) => Err(io::Error::other(format!("the save was abandoned: {why}"))),
        None => Ok(()),
    }
}

/// The keys of `db` as the picture holds them: the walk's, then the kept keys not met.
fn write_database<W: Write>(
    shared: &Shared,
    picture: &Picture,
    writer: &mut FileWriter<Staged<W>>,
    db: u8,
    counts: (u64, u64),
) -> io::Result<()> {
    let mut database = Database { db, counts, selected: false, seen: HashSet::new() };
    let mut cursor = 0;
    loop {
        let written = picture.step(db, |kept| {
            let mut failed = None;
            database.seen.clear();
            let next = shared.core.store.scan_items(cursor, 512, |item| {
                if failed.is_none() {
                    failed = database.item(shared, writer, kept, &item).err();
                }
            });
            (next, failed.map_or(Ok(next), Err))
        });
        cursor = written?;
        writer.get_mut().drain()?;
        check_not_abandoned(picture)?;
        if cursor == 0 {
            break;
        }
    }
    for (stored, kept) in picture.take_unmet(db) {
        database.kept(shared, writer, &stored, kept)?;
    }
    writer.get_mut().drain()
}

/// One database's walk.
struct Database {
    db: u8,
    counts: (u64, u64),
    /// SELECTDB is written before the first key.
    selected: bool,
    /// The hashes of the keys this step wrote: a step that raced a move of the index many
    /// times may list a key twice, and a file may not hold it twice.
    seen: HashSet<u64>,
}

impl Database {
    fn select<W: Write>(&mut self, writer: &mut FileWriter<W>) -> io::Result<()> {
        if !self.selected {
            self.selected = true;
            writer.select_db(u64::from(self.db), self.counts.0, self.counts.1)?;
        }
        Ok(())
    }

    /// An item the walk met: as kept, if a write kept it, else as it is.
    fn item<W: Write>(
        &mut self,
        shared: &Shared,
        writer: &mut FileWriter<W>,
        kept: &mut HashMap<Vec<u8>, Kept>,
        item: &store::Item<'_>,
    ) -> io::Result<()> {
        let stored = item.key();
        if keyspace::decode(stored).is_none_or(|(db, _)| db != self.db) {
            return Ok(());
        }
        if !self.seen.insert(xxhash_rust::xxh3::xxh3_64(stored)) {
            return Ok(());
        }
        if let Some(state) = (!kept.is_empty()).then(|| kept.remove(stored)).flatten() {
            return self.kept(shared, writer, stored, state);
        }
        self.select(writer)?;
        rdb::write_item(shared, writer, self.db, item)
    }

    /// A key as a write kept it (nothing if it did not exist at the instant).
    fn kept<W: Write>(
        &mut self,
        shared: &Shared,
        writer: &mut FileWriter<W>,
        stored: &[u8],
        kept: Kept,
    ) -> io::Result<()> {
        let Some((_, key)) = keyspace::decode(stored) else { return Ok(()) };
        let (value, expiry, meta) = match kept {
            Kept::Absent => return Ok(()),
            Kept::Value { value, expiry } => (value, expiry, None),
            Kept::Item { kind: ValueKind::String, value, flags, cas, expiry } => {
                let meta = rdb::string_meta(shared, self.db, flags).then_some((flags, cas));
                (values::rdb::Value::String(value), expiry, meta)
            }
            Kept::Item { kind, value, expiry, .. } => {
                let now_ms = resp::now_unix_ms(shared);
                let value = values::rdb::from_owned(&crate::owned::own(kind, &value), now_ms);
                if value.is_empty_collection() {
                    return Ok(());
                }
                (value, expiry, None)
            }
        };
        self.select(writer)?;
        let expire_at_ms = match expiry {
            Expiry::Never => None,
            Expiry::AtMs(at) => Some(at),
        };
        let item = meta.map(|(flags, cas)| ItemMeta { flags, cas });
        match value {
            values::rdb::Value::String(bytes) => {
                writer.string_key(key, &bytes, KeyHead { expire_at_ms, item })
            }
            value => writer.key(key, &value, KeyHead { expire_at_ms, item }),
        }
    }
}
