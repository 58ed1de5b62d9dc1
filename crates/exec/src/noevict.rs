//! Never-evict marks, Spinel's extension of `maxmemory-policy`: whole Redis databases and
//! key prefixes whose keys are never evicted, whatever the policy, so that a job queue,
//! locks and sessions can share one Spinel with a cache. Their keys behave as under
//! `noeviction`: kept, and when only they are left, writes are refused with the OOM error.
//!
//! - Databases: numbers 0 to 15. memcached's keys are database 0's.
//! - Prefixes: bytes a client key starts with, in any database (memcached's keys too); at
//!   most [`PREFIXES_MAX`] of at most [`PREFIX_LEN_MAX`] bytes each, without whitespace
//!   (CONFIG SET separates them by spaces). The empty prefix is not one: it would mark
//!   every key, which `maxmemory-policy noeviction` says.
//!
//! Set at start (`--noevict-db`, `--noevict-prefix`) and by CONFIG SET
//! `spinel-noevict-dbs` / `spinel-noevict-prefixes`; the store asks the predicate built
//! here for each live item eviction meets (`store::NeverEvict`), never on a request's path.

use std::sync::{
    atomic::{AtomicU16, Ordering},
    Arc,
};

use parking_lot::Mutex;

use crate::keyspace::{self, DATABASES};

/// The most prefixes, and the longest one: the store checks each against every item
/// eviction meets, so both are bounded.
pub const PREFIXES_MAX: usize = 64;
pub const PREFIX_LEN_MAX: usize = 256;

/// The marks in force.
#[derive(Default)]
pub struct NoEvictMarks {
    /// Marked databases, bit n for database n: INFO reads it per connection.
    dbs: AtomicU16,
    prefixes: Mutex<Vec<Vec<u8>>>,
}

impl NoEvictMarks {
    /// Whether database `db` is marked never-evict.
    pub fn db_marked(&self, db: u8) -> bool {
        db < DATABASES && self.dbs.load(Ordering::Relaxed) & (1 << db) != 0
    }

    /// The marked databases as CONFIG GET shows them: numbers separated by spaces.
    pub fn dbs_text(&self) -> String {
        let mask = self.dbs.load(Ordering::Relaxed);
        let dbs: Vec<String> =
            (0..DATABASES).filter(|db| mask & (1 << db) != 0).map(|db| db.to_string()).collect();
        dbs.join(" ")
    }

    /// The prefixes as CONFIG GET shows them: separated by spaces, in the order given.
    pub fn prefixes_text(&self) -> String {
        let prefixes = self.prefixes.lock();
        let shown: Vec<String> =
            prefixes.iter().map(|p| String::from_utf8_lossy(p).into_owned()).collect();
        shown.join(" ")
    }

    /// Sets the databases (a mask from [`parse_dbs`]) and tells the store.
    pub fn set_dbs(&self, store: &store::Store, mask: u16) {
        let prefixes = self.prefixes.lock();
        self.dbs.store(mask, Ordering::Relaxed);
        store.set_never_evict(predicate(mask, &prefixes));
    }

    /// Sets the prefixes (checked by [`parse_prefixes`]) and tells the store.
    pub fn set_prefixes(&self, store: &store::Store, prefixes: Vec<Vec<u8>>) {
        let mut held = self.prefixes.lock();
        *held = prefixes;
        store.set_never_evict(predicate(self.dbs.load(Ordering::Relaxed), &held));
    }
}

/// The store's predicate over stored keys for these marks; `None` when nothing is marked.
fn predicate(mask: u16, prefixes: &[Vec<u8>]) -> Option<store::NeverEvict> {
    if mask == 0 && prefixes.is_empty() {
        return None;
    }
    let prefixes = prefixes.to_vec();
    Some(Arc::new(move |stored: &[u8]| match keyspace::decode(stored) {
        Some((db, key)) => mask & (1 << db) != 0 || prefixes.iter().any(|p| key.starts_with(p)),
        None => false,
    }))
}

/// Databases as a list of numbers separated by spaces or commas (empty: none); the mask.
pub fn parse_dbs(text: &[u8]) -> Result<u16, String> {
    let text = std::str::from_utf8(text).map_err(|_| dbs_error())?;
    let mut mask = 0u16;
    for word in text.split([' ', ',']).filter(|w| !w.is_empty()) {
        let db: u8 = word.parse().map_err(|_| dbs_error())?;
        if db >= DATABASES {
            return Err(dbs_error());
        }
        mask |= 1 << db;
    }
    Ok(mask)
}

fn dbs_error() -> String {
    format!("argument must be a list of database numbers from 0 to {}", DATABASES - 1)
}

/// Prefixes separated by spaces (empty: none), each checked by [`check_prefix`]; one given
/// twice is kept once.
pub fn parse_prefixes(text: &[u8]) -> Result<Vec<Vec<u8>>, String> {
    let mut prefixes: Vec<Vec<u8>> = Vec::new();
    for word in text.split(|b| b.is_ascii_whitespace()).filter(|w| !w.is_empty()) {
        check_prefix(word)?;
        if !prefixes.iter().any(|p| p == word) {
            prefixes.push(word.to_vec());
        }
    }
    if prefixes.len() > PREFIXES_MAX {
        return Err(format!("at most {PREFIXES_MAX} prefixes"));
    }
    Ok(prefixes)
}

/// One prefix: 1 to [`PREFIX_LEN_MAX`] bytes, no whitespace.
pub fn check_prefix(prefix: &[u8]) -> Result<(), String> {
    if prefix.is_empty() || prefix.len() > PREFIX_LEN_MAX {
        return Err(format!("a prefix is 1 to {PREFIX_LEN_MAX} bytes"));
    }
    if prefix.iter().any(|b| b.is_ascii_whitespace()) {
        return Err("a prefix has no whitespace".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn databases_parse_at_their_edges() {
        assert_eq!(parse_dbs(b""), Ok(0));
        assert_eq!(parse_dbs(b"0 15"), Ok(1 | 1 << 15));
        assert_eq!(parse_dbs(b"1,2, 2"), Ok(0b110));
        for bad in [&b"16"[..], b"-1", b"a", b"1.0", b"\xff"] {
            assert!(parse_dbs(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn prefixes_parse_at_their_edges() {
        assert_eq!(
            parse_prefixes(b"  bull: sess: bull: "),
            Ok(vec![b"bull:".to_vec(), b"sess:".to_vec()])
        );
        let longest = vec![b'p'; PREFIX_LEN_MAX];
        assert_eq!(parse_prefixes(&longest), Ok(vec![longest.clone()]));
        assert!(parse_prefixes(&[&longest[..], b"p"].concat()).is_err());
        let most: Vec<String> = (0..PREFIXES_MAX).map(|i| format!("p{i}:")).collect();
        assert_eq!(parse_prefixes(most.join(" ").as_bytes()).map(|p| p.len()), Ok(PREFIXES_MAX));
        let one_more = format!("{} extra:", most.join(" "));
        assert!(parse_prefixes(one_more.as_bytes()).is_err());
        assert!(check_prefix(b"").is_err());
        assert!(check_prefix(b"a b").is_err());
    }

    #[test]
    fn the_predicate_reads_databases_and_prefixes_of_stored_keys() {
        let never = predicate(1 << 2, &[b"job:".to_vec()]).expect("something is marked");
        let mut scratch = Vec::new();
        assert!(never(keyspace::encode(2, b"anything", &mut scratch)));
        assert!(never(keyspace::encode(0, b"job:1", &mut scratch)));
        assert!(never(keyspace::encode(5, b"job:1", &mut scratch)));
        assert!(!never(keyspace::encode(0, b"cache:1", &mut scratch)));
        assert!(!never(keyspace::encode(3, b"jo", &mut scratch)));
        assert!(predicate(0, &[]).is_none());
    }
}
