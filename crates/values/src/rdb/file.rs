//! RDB files: the whole keyspace as Redis 7.0 saves it (`rdbSaveRio`) and loads it
//! (`rdbLoadRioWithLoadingCtx`), each key's value in the DUMP codec of the module above.
//!
//! ```text
//!   "REDIS0010"
//!   AUX 0xfa name value               (redis-ver, redis-bits, ctime, used-mem,
//!                                      [repl-stream-db, repl-id, repl-offset,] aof-base)
//!   FUNCTION2 0xf5 code               (one per library)
//!   per database with keys:
//!     SELECTDB 0xfe db | RESIZEDB 0xfb keys expires
//!     per key: [EXPIRETIME_MS 0xfc u64 LE] type key value
//!   EOF 0xff | CRC-64 u64 LE          (of every byte before it; 0: not computed)
//! ```
//!
//! A memcached item's client flags and CAS unique have no place in RDB: they travel in an
//! AUX field named [`ITEM_AUX`] just before the key they belong to. Redis's loader (and
//! `redis-check-rdb`) skips AUX fields it does not know, wherever they are, and an AUX
//! field leaves the pending expiry alone, so redis-server loads the same file.
//!
//! Read: every opcode Redis 7.0 writes (also EXPIRETIME in seconds, IDLE and FREQ, which
//! are read and dropped: the store keeps its own recency), RDB versions 1 to 10; module
//! data and 7.0's pre-release function format are refused. The file is read through a
//! window that grows only as far as one entry needs, so a large file is never held whole
//! (a length that lies can stretch the window to the rest of the file, no further).

use std::io::{self, Read, Write};

use super::{crc64_update, known_type, load_value, put_entry, put_len, put_string, Reader};
use super::{Value, RDB_VERSION, TYPE_STRING};

const OP_FUNCTION2: u8 = 245;
const OP_FUNCTION_PRE_GA: u8 = 246;
const OP_MODULE_AUX: u8 = 247;
const OP_IDLE: u8 = 248;
const OP_FREQ: u8 = 249;
const OP_AUX: u8 = 250;
const OP_RESIZEDB: u8 = 251;
const OP_EXPIRETIME_MS: u8 = 252;
const OP_EXPIRETIME: u8 = 253;
const OP_SELECTDB: u8 = 254;
const OP_EOF: u8 = 255;
/// `RDB_TYPE_MODULE` and `RDB_TYPE_MODULE_2`.
const TYPE_MODULES: [u8; 2] = [6, 7];

/// The AUX field that carries the next key's memcached flags and CAS unique.
pub const ITEM_AUX: &[u8] = b"spinel-mc";

/// The first version whose files end with a checksum.
const CHECKSUM_SINCE: u16 = 5;
/// Bytes read from the file at a time (the window grows past it only for a larger entry).
const READ_CHUNK: usize = 1 << 20;
/// Output gathered before it goes to the writer (and into the checksum).
const WRITE_CHUNK: usize = 1 << 16;

/// What memcached keeps of an item that RDB has no place for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemMeta {
    pub flags: u32,
    pub cas: u64,
}

impl ItemMeta {
    /// The AUX value: flags and CAS in decimal, a space between (text, so that
    /// `redis-check-rdb`, which prints every AUX field, shows it as it is).
    fn encode(&self) -> Vec<u8> {
        format!("{} {}", self.flags, self.cas).into_bytes()
    }

    fn decode(bytes: &[u8]) -> Option<ItemMeta> {
        let (flags, cas) = std::str::from_utf8(bytes).ok()?.split_once(' ')?;
        let digits = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
        if !digits(flags) || !digits(cas) {
            return None;
        }
        Some(ItemMeta { flags: flags.parse().ok()?, cas: cas.parse().ok()? })
    }
}

/// What is written before a key: its expiry (Unix ms) and memcached's part of it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyHead {
    pub expire_at_ms: Option<u64>,
    pub item: Option<ItemMeta>,
}

/// Writes an RDB file: the header at [`FileWriter::new`], then AUX fields, functions,
/// databases and keys in that order, then [`FileWriter::finish`].
pub struct FileWriter<W: Write> {
    out: W,
    pending: Vec<u8>,
    crc: u64,
    keys: u64,
}

impl<W: Write> FileWriter<W> {
    /// Starts the file: the magic and version.
    pub fn new(out: W) -> FileWriter<W> {
        let mut pending = Vec::with_capacity(WRITE_CHUNK * 2);
        pending.extend_from_slice(format!("REDIS{RDB_VERSION:04}").as_bytes());
        FileWriter { out, pending, crc: 0, keys: 0 }
    }

    /// An AUX field (`rdbSaveAuxField`; an integer's text is written in its integer form,
    /// as `rdbSaveAuxFieldStrInt` does).
    pub fn aux(&mut self, name: &[u8], value: &[u8]) -> io::Result<()> {
        self.pending.push(OP_AUX);
        put_string(&mut self.pending, name);
        put_string(&mut self.pending, value);
        self.flush_if_full()
    }

    /// One function library's code (`rdbSaveFunctions`).
    pub fn function(&mut self, code: &[u8]) -> io::Result<()> {
        self.pending.push(OP_FUNCTION2);
        put_string(&mut self.pending, code);
        self.flush_if_full()
    }

    /// Starts database `db`, announcing its key and expiry counts (a hint to the loader).
    pub fn select_db(&mut self, db: u64, keys: u64, expires: u64) -> io::Result<()> {
        self.pending.push(OP_SELECTDB);
        put_len(&mut self.pending, db);
        self.pending.push(OP_RESIZEDB);
        put_len(&mut self.pending, keys);
        put_len(&mut self.pending, expires);
        self.flush_if_full()
    }

    /// A string key, written from its bytes.
    pub fn string_key(&mut self, key: &[u8], value: &[u8], head: KeyHead) -> io::Result<()> {
        self.put_head(head);
        self.pending.push(TYPE_STRING);
        put_string(&mut self.pending, key);
        put_string(&mut self.pending, value);
        self.keys += 1;
        self.flush_if_full()
    }

    /// A key of any type.
    pub fn key(&mut self, key: &[u8], value: &Value, head: KeyHead) -> io::Result<()> {
        self.put_head(head);
        put_entry(&mut self.pending, Some(key), value);
        self.keys += 1;
        self.flush_if_full()
    }

    fn put_head(&mut self, head: KeyHead) {
        if let Some(item) = head.item {
            self.pending.push(OP_AUX);
            put_string(&mut self.pending, ITEM_AUX);
            put_string(&mut self.pending, &item.encode());
        }
        if let Some(at) = head.expire_at_ms {
            self.pending.push(OP_EXPIRETIME_MS);
            self.pending.extend_from_slice(&at.to_le_bytes());
        }
    }

    fn flush_if_full(&mut self) -> io::Result<()> {
        if self.pending.len() >= WRITE_CHUNK {
            self.flush_pending()?;
        }
        Ok(())
    }

    fn flush_pending(&mut self) -> io::Result<()> {
        self.crc = crc64_update(self.crc, &self.pending);
        self.out.write_all(&self.pending)?;
        self.pending.clear();
        Ok(())
    }

    /// The output, to drain what was written to it so far (the file's own buffer aside).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.out
    }

    /// Ends the file (EOF and checksum) and flushes it; returns the writer and the number
    /// of keys written.
    pub fn finish(mut self) -> io::Result<(W, u64)> {
        self.pending.push(OP_EOF);
        self.flush_pending()?;
        self.out.write_all(&self.crc.to_le_bytes())?;
        self.out.flush()?;
        Ok((self.out, self.keys))
    }
}

/// One thing read from a file, in file order.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// An AUX field (but [`ITEM_AUX`], which is the next key's [`Key::item`]).
    Aux {
        name: Vec<u8>,
        value: Vec<u8>,
    },
    /// A function library's code.
    Function(Vec<u8>),
    /// RESIZEDB: the counts announced for the database selected.
    Resize {
        db: u64,
        keys: u64,
        expires: u64,
    },
    Key(Key),
}

/// A key as read.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    pub db: u64,
    pub key: Vec<u8>,
    pub value: Value,
    /// Unix ms (0 for a time before 1970, which is long expired).
    pub expire_at_ms: Option<u64>,
    pub item: Option<ItemMeta>,
}

/// How a file's end checked out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checksum {
    Verified,
    /// Written as 0: the writer did not compute it (`rdbchecksum no`).
    Disabled,
    /// A version before 5 has none.
    Absent,
}

/// What a whole read found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub version: u16,
    pub keys: u64,
    pub checksum: Checksum,
}

/// Reads a whole file, handing each entry to `each` in file order; an error from `each`
/// ends the read with it. Errors say what was wrong and at which byte. The caller that
/// must not act on a damaged file reads it twice: once to check it, once to act.
pub fn read<R: Read>(
    input: R,
    mut each: impl FnMut(Entry) -> Result<(), String>,
) -> Result<Summary, String> {
    let mut input =
        Input { src: input, window: Vec::new(), at: 0, ended: false, crc: 0, offset: 0 };
    let version = input.header()?;
    let mut state = State { db: 0, expire_at_ms: None, item: None, keys: 0 };
    loop {
        let opcode = input.parse("an opcode", |r| r.byte())?;
        if opcode == OP_EOF {
            break;
        }
        read_entry(&mut input, &mut state, opcode, &mut each)?;
    }
    let checksum = input.trailer(version)?;
    Ok(Summary { version, keys: state.keys, checksum })
}

/// What applies to the next key: its database, and what was read before it.
struct State {
    db: u64,
    expire_at_ms: Option<u64>,
    item: Option<ItemMeta>,
    keys: u64,
}

fn read_entry<R: Read>(
    input: &mut Input<R>,
    state: &mut State,
    opcode: u8,
    each: &mut impl FnMut(Entry) -> Result<(), String>,
) -> Result<(), String> {
    let at = input.offset - 1;
    match opcode {
        OP_SELECTDB => state.db = input.parse("SELECTDB", |r| r.number())?,
        OP_RESIZEDB => {
            let (keys, expires) = input.parse("RESIZEDB", |r| Some((r.number()?, r.number()?)))?;
            each(Entry::Resize { db: state.db, keys, expires })?;
        }
        OP_EXPIRETIME_MS => {
            let at_ms = input.parse("EXPIRETIME_MS", |r| r.u64_le())? as i64;
            state.expire_at_ms = Some(at_ms.max(0) as u64);
        }
        OP_EXPIRETIME => {
            let secs = input.parse("EXPIRETIME", |r| r.take(4).map(<[u8]>::to_vec))?;
            let secs = i32::from_le_bytes(secs[..].try_into().expect("4 bytes"));
            state.expire_at_ms = Some(i64::from(secs).max(0) as u64 * 1000);
        }
        OP_FREQ => drop(input.parse("FREQ", |r| r.byte())?),
        OP_IDLE => drop(input.parse("IDLE", |r| r.number())?),
        OP_AUX => {
            let (name, value) =
                input.parse("an AUX field", |r| Some((r.string()?, r.string()?)))?;
            if name == ITEM_AUX {
                let item = ItemMeta::decode(&value);
                state.item =
                    Some(item.ok_or_else(|| format!("bad {} field at byte {at}", show(ITEM_AUX)))?);
            } else {
                each(Entry::Aux { name, value })?;
            }
        }
        OP_FUNCTION2 => each(Entry::Function(input.parse("a function", |r| r.string())?))?,
        OP_FUNCTION_PRE_GA => {
            return Err(format!("a function in Redis 7.0's pre-release format at byte {at}"))
        }
        OP_MODULE_AUX => {
            return Err(format!("module data (MODULE_AUX) at byte {at}: no modules here"))
        }
        kind if TYPE_MODULES.contains(&kind) => {
            return Err(format!("a module's value (type {kind}) at byte {at}: no modules here"))
        }
        kind if known_type(kind) => {
            let (key, value) =
                input.parse("a key", |r| Some((r.string()?, load_value(r, kind)?)))?;
            let (expire_at_ms, item) = (state.expire_at_ms.take(), state.item.take());
            state.keys += 1;
            each(Entry::Key(Key { db: state.db, key, value, expire_at_ms, item }))?;
        }
        other => return Err(format!("unknown opcode or type {other} at byte {at}")),
    }
    Ok(())
}

fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The file as a window of bytes read and not yet consumed.
struct Input<R> {
    src: R,
    window: Vec<u8>,
    /// Where in `window` the next entry starts.
    at: usize,
    /// Whether `src` has nothing more.
    ended: bool,
    /// CRC-64 of every byte consumed.
    crc: u64,
    /// File offset of `window[at]`.
    offset: u64,
}

impl<R: Read> Input<R> {
    /// `parse` run on the bytes at the front; when it runs past the window, more of the file
    /// is read and it runs again from the same place.
    fn parse<T>(
        &mut self,
        what: &str,
        parse: impl Fn(&mut Reader<'_>) -> Option<T>,
    ) -> Result<T, String> {
        loop {
            let mut reader = Reader::new(&self.window[self.at..]);
            let parsed = parse(&mut reader);
            let (short, left) = (reader.short, reader.bytes.len());
            match parsed {
                Some(value) => {
                    let used = self.window.len() - self.at - left;
                    self.crc = crc64_update(self.crc, &self.window[self.at..self.at + used]);
                    self.at += used;
                    self.offset += used as u64;
                    return Ok(value);
                }
                None if short && !self.ended => self.read_more()?,
                None if short => {
                    return Err(format!("cut short in {what} at byte {}", self.offset))
                }
                None => return Err(format!("bad data in {what} at byte {}", self.offset)),
            }
        }
    }

    /// Drops what was consumed and reads as much again as the window holds (a chunk at
    /// least), so an entry of any size is parsed a bounded number of times.
    fn read_more(&mut self) -> Result<(), String> {
        self.window.drain(..self.at);
        self.at = 0;
        let want = self.window.len().max(READ_CHUNK);
        let before = self.window.len();
        (&mut self.src)
            .take(want as u64)
            .read_to_end(&mut self.window)
            .map_err(|e| format!("cannot read at byte {}: {e}", self.offset))?;
        if self.window.len() - before < want {
            self.ended = true;
        }
        Ok(())
    }

    /// The magic and the version, which must be one this reader knows.
    fn header(&mut self) -> Result<u16, String> {
        let magic = self
            .parse("the header", |r| r.take(9).map(<[u8]>::to_vec))
            .map_err(|_| "too short to be an RDB file".to_string())?;
        if &magic[..5] != b"REDIS" {
            return Err("not an RDB file (bad magic)".into());
        }
        let version = std::str::from_utf8(&magic[5..]).ok().and_then(|v| v.parse::<u16>().ok());
        match version {
            Some(version) if (1..=RDB_VERSION).contains(&version) => Ok(version),
            _ => Err(format!(
                "RDB version {} is not one this reads (1 to {RDB_VERSION})",
                show(&magic[5..])
            )),
        }
    }

    /// The checksum after EOF: checked against every byte before it unless written as 0.
    fn trailer(&mut self, version: u16) -> Result<Checksum, String> {
        if version < CHECKSUM_SINCE {
            return Ok(Checksum::Absent);
        }
        let computed = self.crc;
        let stored = self.parse("the checksum", |r| r.u64_le())?;
        match stored {
            0 => Ok(Checksum::Disabled),
            _ if stored == computed => Ok(Checksum::Verified),
            _ => Err(format!("wrong RDB checksum (expected {stored:016x}, got {computed:016x})")),
        }
    }
}

#[cfg(test)]
mod tests;
