//! Generic key commands: DEL UNLINK EXISTS TYPE EXPIRE PEXPIRE EXPIREAT PEXPIREAT TTL PTTL
//! EXPIRETIME PEXPIRETIME PERSIST KEYS SCAN RANDOMKEY RENAME RENAMENX.
//!
//! KEYS, SCAN and RANDOMKEY walk the whole store (all databases share it) and keep the keys
//! of the session's database; so SCAN pages may come back empty with a non-zero cursor, which
//! the SCAN contract allows.

use std::hash::{BuildHasher, Hasher};

use proto_resp::error;
use store::{Change, Expiry, Mode, StoreError};

use super::{
    connection::{note_database, parse_db},
    glob::{self, Case},
    keyevents::class,
    scan::{self, ScanOptions},
    ttl::{self, Base, Condition, Report, Unit},
    typed, Ctx,
};
use crate::{
    core::delete::{self, DeleteOutcome},
    counters::bump,
    keyspace, Shared,
};

/// DEL and UNLINK (the store frees memory without blocking either way): the delete core
/// per key, as memcached `delete`.
pub(super) fn del(ctx: &mut Ctx<'_>) {
    let (shared, counters) = (ctx.shared, ctx.counters);
    let mut deleted = 0;
    for index in 1..ctx.argc() {
        let outcome = delete::delete(&shared.core.store, counters, ctx.key(index), None);
        if outcome == DeleteOutcome::Deleted {
            deleted += 1;
            ctx.wrote(class::GENERIC, "del", index);
        }
    }
    ctx.reply().integer(deleted);
}

/// Counts the arguments that exist; a key named twice counts twice.
pub(super) fn exists(ctx: &mut Ctx<'_>) {
    let shared = ctx.shared;
    let reader = shared.core.store.reader();
    let count = (1..ctx.argc()).filter(|&index| reader.peek(ctx.key(index)).is_some()).count();
    ctx.reply().integer(count as i64);
}

/// TOUCH: counts the arguments that exist, as EXISTS, and sets each one's last access time
/// to now (OBJECT IDLETIME 0; eviction sees it as used).
pub(super) fn touch(ctx: &mut Ctx<'_>) {
    let shared = ctx.shared;
    let reader = shared.core.store.reader();
    let count =
        (1..ctx.argc()).filter(|&index| reader.get_and_stamp(ctx.key(index)).is_some()).count();
    ctx.reply().integer(count as i64);
}

pub(super) fn key_type(ctx: &mut Ctx<'_>) {
    let shared = ctx.shared;
    let reader = shared.core.store.reader();
    let kind = reader.peek(ctx.key(1)).map(|item| item.value_kind());
    ctx.reply().simple(kind.map_or(b"none", typed::type_name));
}

/// The EXPIRE family (`expireGenericCommand`): options are checked before the time, the
/// time before the key; a time at or before now deletes the key and still answers 1.
pub(super) fn expire(ctx: &mut Ctx<'_>, unit: Unit, base: Base) {
    let condition = match Condition::parse((3..ctx.argc()).map(|index| ctx.arg(index))) {
        Ok(condition) => condition,
        Err(message) => return ctx.error(message),
    };
    let (shared, counters) = (ctx.shared, ctx.counters);
    let now = ttl::now_ms(shared);
    let at = match ttl::expire_at_ms(ctx.arg(2), unit, base, now, ctx.spec.name) {
        Ok(at) => at,
        Err(message) => return ctx.error(message),
    };
    bump(&counters.cmd_touch, 1);
    let key = ctx.key(1);
    let result = shared.core.store.modify(key, |current| {
        let Some(item) = current else {
            return (Change::Keep, 0);
        };
        if !condition.allows(ttl::expiry_ms(&item), at) {
            return (Change::Keep, 0);
        }
        let change = match ttl::expiry_at(at, now) {
            None => Change::Delete,
            // Any type: the value, its kind and flags stay; only the expiry changes.
            Some(expiry) => Change::Rewrite { expiry, meta: item.meta_state(), cas: None },
        };
        (change, 1)
    });
    match result {
        Ok((_, changed)) => {
            bump(if changed == 1 { &counters.touch_hits } else { &counters.touch_misses }, 1);
            if changed == 1 {
                // A deadline already passed deletes the key: Redis names that `del`.
                let past = ttl::expiry_at(at, now).is_none();
                ctx.wrote(class::GENERIC, if past { "del" } else { "expire" }, 1);
            }
            ctx.reply().integer(changed);
        }
        Err(e) => ctx.store_error(e),
    }
}

pub(super) fn ttl(ctx: &mut Ctx<'_>, unit: Unit, report: Report) {
    let shared = ctx.shared;
    let now = ttl::now_ms(shared);
    let reader = shared.core.store.reader();
    let item = reader.peek(ctx.key(1));
    let answer = ttl::ttl_reply(item.as_ref(), now, unit, report);
    ctx.reply().integer(answer);
}

pub(super) fn persist(ctx: &mut Ctx<'_>) {
    let shared = ctx.shared;
    let key = ctx.key(1);
    let result = shared.core.store.modify(key, |current| match current {
        Some(item) if item.expiry() != Expiry::Never => {
            (Change::Rewrite { expiry: Expiry::Never, meta: item.meta_state(), cas: None }, 1)
        }
        _ => (Change::Keep, 0),
    });
    match result {
        Ok((_, changed)) => {
            if changed == 1 {
                ctx.wrote(class::GENERIC, "persist", 1);
            }
            ctx.reply().integer(changed)
        }
        Err(e) => ctx.store_error(e),
    }
}

/// Keys the store visits per `Store::scan` step when walking everything.
const WALK_STEP: usize = 1024;

/// Calls `f` with every key of `db` (client form); one pass over the whole store, so it
/// costs time in proportion to all keys of all databases.
pub(super) fn for_each_key(shared: &Shared, db: u8, mut f: impl FnMut(&[u8])) {
    let mut cursor = 0;
    loop {
        cursor = shared.core.store.scan(cursor, WALK_STEP, |stored| {
            if let Some((key_db, key)) = keyspace::decode(stored) {
                if key_db == db {
                    f(key);
                }
            }
        });
        if cursor == 0 {
            return;
        }
    }
}

/// KEYS: every key of the database that matches, in store order.
pub(super) fn keys(ctx: &mut Ctx<'_>) {
    let pattern = ctx.arg(1);
    let match_all = pattern == b"*";
    let mut found: Vec<Vec<u8>> = Vec::new();
    for_each_key(ctx.shared, ctx.session.db, |key| {
        if match_all || glob::matches(pattern, key, Case::Sensitive) {
            found.push(key.to_vec());
        }
    });
    let mut reply = ctx.reply();
    reply.array(found.len());
    found.iter().for_each(|key| reply.bulk(key));
}

/// SCAN's cursor and options (TYPE given: only keys of this type name; any name, one no
/// kind has matches nothing).
fn parse_scan<'a>(ctx: &Ctx<'a>) -> Result<(u64, ScanOptions<'a>), &'static str> {
    let cursor = std::str::from_utf8(ctx.arg(1))
        .ok()
        .and_then(|text| text.parse::<u64>().ok())
        .ok_or("ERR invalid cursor")?;
    Ok((cursor, scan::parse_options(ctx, 2, scan::Extra::Type)?))
}

pub(super) fn scan(ctx: &mut Ctx<'_>) {
    let (cursor, args) = match parse_scan(ctx) {
        Ok(args) => args,
        Err(message) => return ctx.error(message),
    };
    let db = ctx.session.db;
    let mut found: Vec<Vec<u8>> = Vec::new();
    let next = ctx.shared.core.store.scan_page(cursor, args.count, |item| {
        // A key of this database counts toward COUNT, matched or not, as in Redis.
        let Some((_, key)) = keyspace::decode(item.key()).filter(|(key_db, _)| *key_db == db)
        else {
            return false;
        };
        let wanted = args.pattern.is_none_or(|p| glob::matches(p, key, Case::Sensitive));
        let of_type = args
            .type_name
            .is_none_or(|name| name.eq_ignore_ascii_case(typed::type_name(item.value_kind())));
        if wanted && of_type {
            found.push(key.to_vec());
        }
        true
    });
    let mut reply = ctx.reply();
    reply.array(2);
    reply.bulk(next.to_string().as_bytes());
    reply.array(found.len());
    found.iter().for_each(|key| reply.bulk(key));
}

/// A random starting point for a store scan. The store's cursor is a position in hash
/// order (sub-table in the bits above 33, position below), so any value in 39 bits is a
/// valid place to start; a value the store does not expect only ends that scan early.
fn random_cursor() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    hasher.write_u64(nanos.map_or(0, |d| d.as_nanos() as u64));
    hasher.finish() & ((1 << 39) - 1)
}

/// RANDOMKEY: scans from a random point to the first page holding keys of this database
/// and picks one of them. Bounded: after wrapping past the end once more, the database is
/// empty. Not uniform (keys after long empty stretches are picked more often), as Redis's
/// bucket sampling is not either.
pub(super) fn randomkey(ctx: &mut Ctx<'_>) {
    let (shared, db) = (ctx.shared, ctx.session.db);
    let mut cursor = random_cursor();
    let mut wraps = 0;
    let chosen = loop {
        let mut page: Vec<Vec<u8>> = Vec::new();
        cursor = shared.core.store.scan(cursor, 64, |stored| {
            if let Some((key_db, key)) = keyspace::decode(stored) {
                if key_db == db {
                    page.push(key.to_vec());
                }
            }
        });
        if !page.is_empty() {
            let pick = (random_cursor() as usize) % page.len();
            break Some(page.swap_remove(pick));
        }
        if cursor == 0 {
            wraps += 1;
            if wraps == 2 {
                break None;
            }
        }
    };
    ctx.bulk_or_null(chosen.as_deref());
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Overwrite {
    Yes,
    No,
}

/// RENAME and RENAMENX. The source is taken out with one `modify` (read and delete), then
/// written under the target; if that write fails the source is put back. Between the two
/// steps neither key is visible to other clients (Redis does it in one step).
pub(super) fn rename(ctx: &mut Ctx<'_>, overwrite: Overwrite) {
    let (shared, db) = (ctx.shared, ctx.session.db);
    let mut target_scratch = Vec::new();
    let target = keyspace::encode(db, ctx.arg(2), &mut target_scratch);
    let source = ctx.key(1);
    let no = || if overwrite == Overwrite::Yes { Answer::Ok } else { Answer::Integer(0) };
    let answer = {
        let reader = shared.core.store.reader();
        if reader.peek(source).is_none() {
            Some(Answer::Error(error::NO_SUCH_KEY))
        } else if source == target {
            Some(no())
        } else if overwrite == Overwrite::No && reader.peek(target).is_some() {
            Some(Answer::Integer(0))
        } else {
            None
        }
    };
    let moved = answer.is_none();
    let answer = answer.unwrap_or_else(|| move_item(shared, source, target, overwrite));
    if moved && matches!(answer, Answer::Ok | Answer::Integer(1)) {
        ctx.wrote(class::GENERIC, "rename_from", 1);
        ctx.wrote(class::GENERIC, "rename_to", 2);
    }
    match answer {
        Answer::Ok => ctx.reply().ok(),
        Answer::Integer(n) => ctx.reply().integer(n),
        Answer::Error(message) => ctx.error(message),
        Answer::Store(e) => ctx.store_error(e),
    }
}

/// COPY source destination [DB n] [REPLACE]: the value, its TTL and its client flags, under
/// a new name or in another database. Checked in Redis's order: options, the same object,
/// a missing source (0), an existing destination without REPLACE (0). Like RENAME it is not
/// atomic across the two keys.
pub(super) fn copy(ctx: &mut Ctx<'_>) {
    let (mut db, mut replace) = (ctx.session.db, false);
    let mut index = 3;
    while index < ctx.argc() {
        let option = ctx.arg(index);
        if option.eq_ignore_ascii_case(b"replace") {
            replace = true;
            index += 1;
        } else if option.eq_ignore_ascii_case(b"db") && index + 1 < ctx.argc() {
            match parse_db(ctx.arg(index + 1)) {
                Ok(n) => db = n,
                Err(message) => return ctx.error(message),
            }
            index += 2;
        } else {
            return ctx.error(error::SYNTAX);
        }
    }
    let (shared, source_db) = (ctx.shared, ctx.session.db);
    if db != source_db && shared.redis.cluster.get().is_some() {
        return ctx.error("ERR Copying to another database is not allowed in cluster mode");
    }
    if db == source_db && ctx.arg(1) == ctx.arg(2) {
        return ctx.error(error::SAME_OBJECT);
    }
    let mut target_scratch = Vec::new();
    let target = keyspace::encode(db, ctx.arg(2), &mut target_scratch);
    let source = ctx.key(1);
    let Some(item) = shared.core.store.reader().peek(source).map(|item| item.to_owned()) else {
        return ctx.reply().integer(0);
    };
    note_database(shared, db);
    let mode = if replace { Mode::Set } else { Mode::Add };
    match typed::put_copy(shared, target, &item, mode, typed::Copying::Copy) {
        Ok(()) => {
            ctx.wrote_in(class::GENERIC, "copy_to", 2, db);
            ctx.reply().integer(1)
        }
        Err(StoreError::NotStored) => ctx.reply().integer(0),
        Err(e) => ctx.store_error(e),
    }
}

/// MOVE key db: the key, with its TTL, into another database; 0 when it is missing here or
/// present there.
pub(super) fn move_to_db(ctx: &mut Ctx<'_>) {
    if ctx.shared.redis.cluster.get().is_some() {
        return ctx.error("ERR MOVE is not allowed in cluster mode");
    }
    let db = match parse_db(ctx.arg(2)) {
        Ok(db) => db,
        Err(message) => return ctx.error(message),
    };
    if db == ctx.session.db {
        return ctx.error(error::SAME_OBJECT);
    }
    let shared = ctx.shared;
    let mut target_scratch = Vec::new();
    let target = keyspace::encode(db, ctx.arg(1), &mut target_scratch);
    let source = ctx.key(1);
    let exists = {
        let reader = shared.core.store.reader();
        (reader.peek(source).is_some(), reader.peek(target).is_some())
    };
    if exists != (true, false) {
        return ctx.reply().integer(0);
    }
    note_database(shared, db);
    match move_item(shared, source, target, Overwrite::No) {
        Answer::Integer(n) => {
            if n == 1 {
                ctx.wrote(class::GENERIC, "move_from", 1);
                ctx.wrote_in(class::GENERIC, "move_to", 1, db);
            }
            ctx.reply().integer(n)
        }
        // The source went away meanwhile: nothing was moved.
        Answer::Error(_) => ctx.reply().integer(0),
        Answer::Store(e) => ctx.store_error(e),
        Answer::Ok => unreachable!("a move without overwrite answers with a count"),
    }
}

enum Answer {
    Ok,
    Integer(i64),
    Error(&'static str),
    Store(StoreError),
}

fn move_item(shared: &Shared, source: &[u8], target: &[u8], overwrite: Overwrite) -> Answer {
    let taken = shared.core.store.modify(source, |current| match current {
        Some(item) => (Change::Delete, Some(typed::detach(shared, &item))),
        None => (Change::Keep, None),
    });
    let item = match taken {
        Ok((_, Some(item))) => item,
        Ok((_, None)) => return Answer::Error(error::NO_SUCH_KEY),
        Err(e) => return Answer::Store(e),
    };
    let mode = if overwrite == Overwrite::Yes { Mode::Set } else { Mode::Add };
    match typed::put_copy(shared, target, &item, mode, typed::Copying::Adopt) {
        Ok(_) if overwrite == Overwrite::Yes => Answer::Ok,
        Ok(_) => Answer::Integer(1),
        Err(e) => {
            // Put the source back; `Add`, so a newer write to it wins.
            if typed::put_copy(shared, source, &item, Mode::Add, typed::Copying::Adopt).is_err() {
                typed::drop_detached(shared, &item);
            }
            match e {
                StoreError::NotStored => Answer::Integer(0),
                other => Answer::Store(other),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{Harness, START_MS};

    #[test]
    fn del_exists_type() {
        let mut h = Harness::new();
        h.check(&[
            ("MSET a 1 b 2 c 3", "+OK\r\n"),
            ("EXISTS a a b zz", ":3\r\n"),
            ("TYPE a", "+string\r\n"),
            ("TYPE zz", "+none\r\n"),
            ("DEL a zz a", ":1\r\n"),
            ("UNLINK b c", ":2\r\n"),
            ("EXISTS a b c", ":0\r\n"),
        ]);
        let totals = h.shared.core.totals();
        assert_eq!((totals.delete_hits, totals.delete_misses), (3, 2));
    }

    /// Goal: the EXPIRE family's options, error order and the delete-on-past rule.
    #[test]
    fn expire_family() {
        let mut h = Harness::new();
        let now_secs = START_MS / 1000;
        h.check(&[
            ("EXPIRE missing 10", ":0\r\n"),
            ("SET k v", "+OK\r\n"),
            ("EXPIRE k 100", ":1\r\n"),
            ("TTL k", ":100\r\n"),
            ("PEXPIRE k 1500", ":1\r\n"),
            ("PTTL k", ":1500\r\n"),
            ("TTL k", ":2\r\n"),
            (&format!("EXPIREAT k {}", now_secs + 30), ":1\r\n"),
            ("EXPIRETIME k", &format!(":{}\r\n", now_secs + 30)),
            ("PEXPIRETIME k", &format!(":{}\r\n", START_MS + 30_000)),
            (&format!("PEXPIREAT k {}", START_MS + 40_000), ":1\r\n"),
            ("TTL k", ":40\r\n"),
            ("EXPIRE k 10 NX", ":0\r\n"),
            ("EXPIRE k 10 XX", ":1\r\n"),
            ("EXPIRE k 20 LT", ":0\r\n"),
            ("EXPIRE k 5 LT", ":1\r\n"),
            ("EXPIRE k 5 GT", ":0\r\n"),
            ("EXPIRE k 50 GT", ":1\r\n"),
            ("TTL k", ":50\r\n"),
            ("PERSIST k", ":1\r\n"),
            ("PERSIST k", ":0\r\n"),
            ("PERSIST missing", ":0\r\n"),
            ("TTL k", ":-1\r\n"),
            ("EXPIRETIME k", ":-1\r\n"),
            ("EXPIRE k 10 GT", ":0\r\n"),
            ("EXPIRE k 10 XX", ":0\r\n"),
            ("EXPIRE k 10 LT", ":1\r\n"),
            ("EXPIRE k 10 NX", ":0\r\n"),
        ]);
        h.check(&[
            (
                "EXPIRE k 10 NX XX",
                "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n",
            ),
            ("EXPIRE k 10 GT LT", "-ERR GT and LT options at the same time are not compatible\r\n"),
            ("EXPIRE k 10 FOO", "-ERR Unsupported option FOO\r\n"),
            ("EXPIRE k x FOO", "-ERR Unsupported option FOO\r\n"),
            ("EXPIRE k x", "-ERR value is not an integer or out of range\r\n"),
            ("EXPIRE k 9223372036854775807", "-ERR invalid expire time in 'expire' command\r\n"),
            ("PEXPIRE k 9223372036854775807", "-ERR invalid expire time in 'pexpire' command\r\n"),
            (
                "EXPIREAT k 9223372036854775807",
                "-ERR invalid expire time in 'expireat' command\r\n",
            ),
            ("TTL missing", ":-2\r\n"),
            ("PTTL missing", ":-2\r\n"),
            ("EXPIRETIME missing", ":-2\r\n"),
            ("PEXPIRETIME missing", ":-2\r\n"),
            ("EXISTS k", ":1\r\n"),
            ("EXPIRE k 0", ":1\r\n"),
            ("EXISTS k", ":0\r\n"),
            ("SET k v", "+OK\r\n"),
            ("PEXPIREAT k -5", ":1\r\n"),
            ("EXISTS k", ":0\r\n"),
            ("SET k v", "+OK\r\n"),
            ("EXPIRE k -1", ":1\r\n"),
            ("GET k", "$-1\r\n"),
        ]);
    }

    /// Goal: TTLs follow the store's clock; TTL rounds to the nearest second.
    #[test]
    fn ttl_counts_down() {
        let mut h = Harness::new();
        h.check(&[("SET k v PX 2400", "+OK\r\n"), ("TTL k", ":2\r\n")]);
        h.clock.advance_ms(900);
        h.check(&[("PTTL k", ":1500\r\n"), ("TTL k", ":2\r\n")]);
        h.clock.advance_ms(1000);
        h.check(&[("TTL k", ":1\r\n")]);
        h.clock.advance_ms(500);
        h.check(&[("TTL k", ":-2\r\n"), ("GET k", "$-1\r\n")]);
    }

    #[test]
    fn keys_and_scan() {
        let mut h = Harness::new();
        h.check(&[("MSET hello 1 hallo 2 hxllo 3 world 4", "+OK\r\n")]);
        let keys = sorted_array(&h.run("KEYS h[ae]llo"));
        assert_eq!(keys, ["hallo", "hello"]);
        assert_eq!(sorted_array(&h.run("KEYS *")).len(), 4);
        assert_eq!(h.run("KEYS nomatch*"), "*0\r\n");
        // A full SCAN, page by page, sees every key exactly as KEYS does.
        let mut seen = Vec::new();
        let mut cursor = "0".to_owned();
        for _ in 0..10_000 {
            let reply = h.run(&format!("SCAN {cursor} COUNT 2 MATCH h*"));
            let lines: Vec<&str> = reply.split("\r\n").collect();
            cursor = lines[2].to_owned();
            seen.extend(lines[4..].iter().skip(1).step_by(2).map(|s| s.to_string()));
            if cursor == "0" {
                break;
            }
        }
        seen.retain(|s| !s.is_empty());
        seen.sort();
        seen.dedup();
        assert_eq!(seen, ["hallo", "hello", "hxllo"]);
        h.check(&[
            ("SCAN 0 TYPE hash COUNT 100000", "*2\r\n$1\r\n0\r\n*0\r\n"),
            ("SCAN x", "-ERR invalid cursor\r\n"),
            ("SCAN -1", "-ERR invalid cursor\r\n"),
            ("SCAN 0 COUNT 0", "-ERR syntax error\r\n"),
            ("SCAN 0 COUNT x", "-ERR value is not an integer or out of range\r\n"),
            ("SCAN 0 MATCH", "-ERR syntax error\r\n"),
            ("SCAN 0 FOO bar", "-ERR syntax error\r\n"),
        ]);
        let all = h.run("SCAN 0 COUNT 100000 TYPE string");
        assert!(all.starts_with("*2\r\n$1\r\n0\r\n*4\r\n"), "{all}");
    }

    /// The bulk strings of a flat array reply, sorted.
    fn sorted_array(reply: &str) -> Vec<String> {
        let mut items: Vec<String> = reply
            .split("\r\n")
            .skip(2)
            .step_by(2)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        items.sort();
        items
    }

    #[test]
    fn randomkey() {
        let mut h = Harness::new();
        h.check(&[("RANDOMKEY", "$-1\r\n")]);
        h.check3(&[("RANDOMKEY", "_\r\n")]);
        h.check(&[("SET only v", "+OK\r\n"), ("RANDOMKEY", "$4\r\nonly\r\n")]);
        h.check(&[("MSET a 1 b 2 c 3", "+OK\r\n")]);
        for _ in 0..20 {
            let reply = h.run("RANDOMKEY");
            assert!(["$4\r\nonly\r\n", "$1\r\na\r\n", "$1\r\nb\r\n", "$1\r\nc\r\n"]
                .contains(&reply.as_str()));
        }
    }

    /// Goal: COPY keeps the TTL and honours REPLACE and DB; MOVE takes the key to another
    /// database and refuses when it is there already; both keep Redis's error order.
    #[test]
    fn copy_and_move() {
        let mut h = Harness::new();
        h.check(&[
            ("COPY a b", ":0\r\n"),
            ("SET a 1 EX 100", "+OK\r\n"),
            ("COPY a a", "-ERR source and destination objects are the same\r\n"),
            ("COPY a b DB 16", "-ERR DB index is out of range\r\n"),
            ("COPY a b", ":1\r\n"),
            ("TTL b", ":100\r\n"),
            ("COPY a b", ":0\r\n"),
            ("COPY a b REPLACE", ":1\r\n"),
            ("COPY a a DB 1", ":1\r\n"),
            ("MOVE b 0", "-ERR source and destination objects are the same\r\n"),
            ("MOVE b 1", ":1\r\n"),
            ("EXISTS b", ":0\r\n"),
            ("MOVE a 1", ":0\r\n"),
            ("SELECT 1", "+OK\r\n"),
            ("DBSIZE", ":2\r\n"),
            ("TTL b", ":100\r\n"),
        ]);
    }

    #[test]
    fn rename_and_renamenx() {
        let mut h = Harness::new();
        h.check(&[
            ("RENAME missing x", "-ERR no such key\r\n"),
            ("RENAMENX missing x", "-ERR no such key\r\n"),
            ("SET a 1 EX 100", "+OK\r\n"),
            ("RENAME a a", "+OK\r\n"),
            ("RENAMENX a a", ":0\r\n"),
            ("RENAME a b", "+OK\r\n"),
            ("EXISTS a", ":0\r\n"),
            ("GET b", "$1\r\n1\r\n"),
            ("TTL b", ":100\r\n"),
            ("SET c 3", "+OK\r\n"),
            ("RENAMENX b c", ":0\r\n"),
            ("GET b", "$1\r\n1\r\n"),
            ("RENAMENX b d", ":1\r\n"),
            ("RENAME d c", "+OK\r\n"),
            ("GET c", "$1\r\n1\r\n"),
            ("TTL c", ":100\r\n"),
        ]);
    }
}
