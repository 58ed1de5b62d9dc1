//! Server commands: COMMAND, DBSIZE, FLUSHDB, FLUSHALL, TIME (INFO and CONFIG have files
//! of their own).
//!
//! Databases share one store. Until some connection SELECTs a database other than 0
//! (`RedisState::nonzero_db_selected`), database 0 is the whole store: DBSIZE is `Store::len`
//! and FLUSHDB is `Store::flush_all`, both cheap. After that, DBSIZE and FLUSHDB walk every
//! key of every database (time in proportion to the whole store) to pick out theirs.

use std::sync::atomic::Ordering;

use proto_resp::{commands, error};

use super::{
    glob::{self, Case},
    keys::for_each_key,
    ttl, Ctx,
};
use crate::{
    core::flush::{self, Switch},
    counters::bump,
    keyspace, Shared,
};

pub(super) fn command_count(ctx: &mut Ctx<'_>) {
    commands::write_command_count(&mut ctx.reply());
}

/// COMMAND INFO [name ...], and COMMAND alone (the table routes it here): every command
/// without names.
pub(super) fn command_info(ctx: &mut Ctx<'_>) {
    let names = command_names(ctx);
    let categories = super::acl::catalog::category_names;
    if names.is_empty() {
        return commands::write_command_info_all(&mut ctx.reply(), &categories);
    }
    let mut reply = ctx.reply();
    reply.array(names.len());
    for name in names {
        commands::write_command_info(&mut reply, proto_resp::lookup(name), &categories);
    }
}

pub(super) fn command_docs(ctx: &mut Ctx<'_>) {
    let names = command_names(ctx);
    commands::write_command_docs_for(&mut ctx.reply(), names.into_iter());
}

/// The arguments after `COMMAND <subcommand>`.
fn command_names<'a>(ctx: &Ctx<'a>) -> Vec<&'a [u8]> {
    (2..ctx.argc()).map(|index| ctx.arg(index)).collect()
}

/// COMMAND LIST [FILTERBY MODULE m | ACLCAT c | PATTERN p]. Spinel has no modules and
/// no ACL categories, so those filters match nothing.
pub(super) fn command_list(ctx: &mut Ctx<'_>) {
    let args = command_names(ctx);
    let filter = match args.as_slice() {
        [] => ListFilter::All,
        [filterby, kind, value] if filterby.eq_ignore_ascii_case(b"FILTERBY") => {
            if kind.eq_ignore_ascii_case(b"PATTERN") {
                ListFilter::Pattern(value)
            } else if kind.eq_ignore_ascii_case(b"ACLCAT") {
                let name = String::from_utf8_lossy(value).to_ascii_lowercase();
                ListFilter::Category(super::acl::catalog::category(&name).unwrap_or(0))
            } else if kind.eq_ignore_ascii_case(b"MODULE") {
                ListFilter::Category(0) // no modules
            } else {
                return ctx.error(error::SYNTAX);
            }
        }
        _ => return ctx.error(error::SYNTAX),
    };
    // Containers and their subcommands (`config|get`), as Redis 7 lists them; not the
    // Redis commands Spinel lacks, which the catalog has for ACL rules only.
    let catalog = super::acl::catalog::catalog();
    let names: Vec<&str> = catalog
        .entries
        .iter()
        .filter(|entry| entry.runs)
        .filter(|entry| match filter {
            ListFilter::All => true,
            ListFilter::Pattern(p) => glob::matches(p, entry.name.as_bytes(), Case::Insensitive),
            ListFilter::Category(bit) => entry.categories & bit != 0,
        })
        .map(|entry| entry.name)
        .collect();
    let mut reply = ctx.reply();
    reply.array(names.len());
    names.iter().for_each(|name| reply.bulk(name.as_bytes()));
}

/// COMMAND LIST's FILTERBY.
#[derive(Clone, Copy)]
enum ListFilter<'a> {
    All,
    Pattern(&'a [u8]),
    /// An ACL category's bit (0: none, for an unknown category or MODULE).
    Category(u32),
}

/// COMMAND GETKEYS and GETKEYSANDFLAGS: the keys of a full command line as its key specs
/// find them (ACL rules see the same), with each key's flags for the second.
pub(super) fn command_getkeys(ctx: &mut Ctx<'_>, with_flags: bool) {
    let args: Vec<&[u8]> = (2..ctx.argc()).map(|i| ctx.arg(i)).collect();
    let Some((name, arity)) = commands::command_of_line(&args) else {
        return ctx.error("ERR Invalid command specified");
    };
    let Some(meta) = commands::command_meta(name).filter(|meta| meta.has_keys()) else {
        return ctx.error("ERR The command has no key arguments");
    };
    let argc = args.len() as i32;
    if (arity > 0 && arity != argc) || argc < -arity {
        return ctx.error("ERR Invalid number of arguments specified for command");
    }
    let keys = meta.keys(&args);
    let optional = proto_resp::lookup(args[0])
        .is_some_and(|spec| spec.flags.contains(proto_resp::commands::Flags::NO_MANDATORY_KEYS));
    if keys.is_empty() && !optional {
        return ctx.error("ERR Invalid arguments specified for command");
    }
    let mut reply = ctx.reply();
    reply.array(keys.len());
    for key in keys {
        if with_flags {
            reply.array(2);
            reply.bulk(args[key.at]);
            commands::write_key_flags(&mut reply, key.flags);
        } else {
            reply.bulk(args[key.at]);
        }
    }
}

const COMMAND_HELP: &[&str] = &[
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Return details about all Redis commands.",
    "COUNT",
    "    Return the total number of commands in this Redis server.",
    "LIST",
    "    Return a list of all commands in this Redis server.",
    "INFO [<command-name> ...]",
    "    Return details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about multiple Redis commands.",
    "    If no command names are given, documentation details for all",
    "    commands are returned.",
    "GETKEYS <full-command>",
    "    Return the keys from a full Redis command.",
    "GETKEYSANDFLAGS <full-command>",
    "    Return the keys and the access flags from a full Redis command.",
    "HELP",
    "    Prints this help.",
];

pub(super) fn command_help(ctx: &mut Ctx<'_>) {
    super::help::reply(ctx, COMMAND_HELP);
}

/// Whether database 0 holds every key of the store.
fn db0_is_everything(shared: &Shared, db: u8) -> bool {
    db == 0 && !shared.redis.nonzero_db_selected.load(Ordering::SeqCst)
}

pub(super) fn dbsize(ctx: &mut Ctx<'_>) {
    let (shared, db) = (ctx.shared, ctx.session.db);
    let count = if db0_is_everything(shared, db) {
        shared.core.store.len()
    } else {
        let mut count = 0;
        for_each_key(shared, db, |_| count += 1);
        count
    };
    ctx.reply().integer(count as i64);
}

/// `getFlushCommandFlags`: nothing, SYNC or ASYNC (both flush at once here).
fn flush_args_ok(ctx: &mut Ctx<'_>) -> bool {
    let ok = match ctx.argc() {
        1 => true,
        2 => {
            let mode = ctx.arg(1);
            mode.eq_ignore_ascii_case(b"SYNC") || mode.eq_ignore_ascii_case(b"ASYNC")
        }
        _ => false,
    };
    if !ok {
        ctx.error(error::SYNTAX);
    }
    ok
}

pub(super) fn flushdb(ctx: &mut Ctx<'_>) {
    if !flush_args_ok(ctx) {
        return;
    }
    let (shared, db) = (ctx.shared, ctx.session.db);
    if db0_is_everything(shared, db) {
        flush::flush_all(&shared.core, ctx.counters, 0, Switch::Ignore);
    } else {
        bump(&ctx.counters.cmd_flush, 1);
        delete_db(shared, db);
    }
    note_flush(ctx);
    ctx.reply().ok();
}

/// A flush emptied a database: every tracking client's cache is invalid, and it counts as
/// one change (Redis's `dirty++` after a flush; the keys it removed are not counted here).
fn note_flush(ctx: &mut Ctx<'_>) {
    ctx.outcome.note_flushed();
    bump(&ctx.counters.redis_changes, 1);
}

/// Deletes every key of `db`, a page of the store at a time (deleting inside the scan
/// callback would write to the index while the scan reads it).
fn delete_db(shared: &Shared, db: u8) {
    let mut cursor = 0;
    let mut page: Vec<Vec<u8>> = Vec::new();
    loop {
        cursor = shared.core.store.scan(cursor, 1024, |stored| {
            if keyspace::decode(stored).is_some_and(|(key_db, _)| key_db == db) {
                page.push(stored.to_vec());
            }
        });
        for stored in page.drain(..) {
            let _ = shared.core.store.delete(&stored, None);
        }
        if cursor == 0 {
            return;
        }
    }
}

pub(super) fn flushall(ctx: &mut Ctx<'_>) {
    if !flush_args_ok(ctx) {
        return;
    }
    flush::flush_all(&ctx.shared.core, ctx.counters, 0, Switch::Ignore);
    note_flush(ctx);
    ctx.reply().ok();
}

/// TIME from the store's clock (the one TTLs use), so its microseconds are whole
/// milliseconds.
pub(super) fn time(ctx: &mut Ctx<'_>) {
    let now = ttl::now_ms(ctx.shared);
    let (secs, micros) = ((now / 1000).to_string(), (now % 1000 * 1000).to_string());
    let mut reply = ctx.reply();
    reply.array(2);
    reply.bulk(secs.as_bytes());
    reply.bulk(micros.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::super::testkit::Harness;

    #[test]
    fn command_introspection() {
        let mut h = Harness::new();
        let count = proto_resp::commands::command_count();
        h.check(&[
            ("COMMAND COUNT", &format!(":{count}\r\n")),
            (
                "COMMAND INFO strlen nosuch",
                "*2\r\n*10\r\n$6\r\nstrlen\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n\
                 *3\r\n+@read\r\n+@string\r\n+@fast\r\n*0\r\n*1\r\n*6\r\n$5\r\nflags\r\n*1\r\n+RO\r\n\
                 $12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n\
                 $5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n\
                 $4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n\
                 *0\r\n$-1\r\n",
            ),
            ("COMMAND GETKEYSANDFLAGS SET k v GET", "*1\r\n*2\r\n$1\r\nk\r\n*3\r\n+RW\r\n+access\r\n+update\r\n"),
            ("COMMAND GETKEYS EVAL s 0", "*0\r\n"),
            ("COMMAND GETKEYS ZUNIONSTORE d 5 a", "-ERR Invalid arguments specified for command\r\n"),
            ("COMMAND GETKEYS CONFIG GET x", "-ERR The command has no key arguments\r\n"),
            (
                "COMMAND LIST FILTERBY PATTERN get*",
                "*6\r\n$3\r\nget\r\n$6\r\ngetdel\r\n$5\r\ngetex\r\n$8\r\ngetrange\r\n\
                 $6\r\ngetset\r\n$6\r\ngetbit\r\n",
            ),
            ("COMMAND LIST FILTERBY ACLCAT nosuch", "*0\r\n"),
            (
                "COMMAND LIST FILTERBY ACLCAT hyperloglog",
                "*5\r\n$5\r\npfadd\r\n$7\r\npfcount\r\n$7\r\npfdebug\r\n$7\r\npfmerge\r\n\
                 $10\r\npfselftest\r\n",
            ),
            ("COMMAND LIST FILTERBY MODULE x", "*0\r\n"),
            ("COMMAND LIST FILTERBY FOO x", "-ERR syntax error\r\n"),
            ("COMMAND COUNT x", "-ERR wrong number of arguments for 'command|count' command\r\n"),
            ("COMMAND FOO", "-ERR unknown subcommand 'FOO'. Try COMMAND HELP.\r\n"),
        ]);
        assert!(h.run("COMMAND").starts_with(&format!("*{count}\r\n*10\r\n")));
        assert!(h.run("COMMAND INFO").starts_with(&format!("*{count}\r\n")));
        // COMMAND LIST names the subcommands too (`config|get`), as Redis 7 does.
        let subcommands: usize = proto_resp::commands::all_commands()
            .map(|spec| match &spec.run {
                proto_resp::Run::Subcommands { table, .. } => table.len(),
                proto_resp::Run::Command(_) => 0,
            })
            .sum();
        let listed = count + subcommands;
        assert!(h.run("COMMAND LIST").starts_with(&format!("*{listed}\r\n")));
        let docs = h.run("COMMAND DOCS get");
        assert!(docs.starts_with("*2\r\n$3\r\nget\r\n*8\r\n$7\r\nsummary\r\n"), "{docs}");
        // The argument tree, as Redis sends it: one key, its key spec 0.
        let key_arg = "$9\r\narguments\r\n*1\r\n*6\r\n$4\r\nname\r\n$3\r\nkey\r\n\
            $4\r\ntype\r\n$3\r\nkey\r\n$14\r\nkey_spec_index\r\n:0\r\n";
        assert!(docs.ends_with(key_arg), "{docs}");
        // A subcommand by its full name; unknown ones are left out.
        let sub = h.run("COMMAND DOCS config|get nosuch|get");
        assert!(sub.starts_with("*2\r\n$10\r\nconfig|get\r\n*6\r\n$5\r\nsince\r\n"), "{sub}");
        h.session.protocol = proto_resp::Protocol::Resp3;
        let docs = h.run("COMMAND DOCS get");
        assert!(docs.starts_with("%1\r\n$3\r\nget\r\n%4\r\n"), "{docs}");
        assert!(docs.ends_with(&key_arg.replace("*6", "%3")), "{docs}");
    }

    #[test]
    fn dbsize_flush_time() {
        let mut h = Harness::new();
        h.check(&[
            ("DBSIZE", ":0\r\n"),
            ("MSET a 1 b 2", "+OK\r\n"),
            ("DBSIZE", ":2\r\n"),
            ("FLUSHDB", "+OK\r\n"),
            ("DBSIZE", ":0\r\n"),
            ("SET a 1", "+OK\r\n"),
            ("FLUSHDB ASYNC", "+OK\r\n"),
            ("EXISTS a", ":0\r\n"),
            ("FLUSHDB sync", "+OK\r\n"),
            ("FLUSHDB x", "-ERR syntax error\r\n"),
            ("FLUSHDB SYNC x", "-ERR syntax error\r\n"),
            ("FLUSHALL x", "-ERR syntax error\r\n"),
            ("SET a 1", "+OK\r\n"),
            ("FLUSHALL ASYNC", "+OK\r\n"),
            ("DBSIZE", ":0\r\n"),
            ("TIME", "*2\r\n$10\r\n1700000000\r\n$1\r\n0\r\n"),
        ]);
        h.clock.advance_ms(1234);
        h.check(&[("TIME", "*2\r\n$10\r\n1700000001\r\n$6\r\n234000\r\n")]);
        assert_eq!(h.shared.core.totals().cmd_flush, 4);
    }

    /// Goal: databases are separate namespaces for every key command, DBSIZE and FLUSHDB
    /// count and delete only their own, and FLUSHALL empties all of them. Includes a
    /// database-0 key that starts with byte 0x00 (the escape of the key encoding).
    #[test]
    fn databases_are_namespaces() {
        let mut h = Harness::new();
        h.check(&[("SET k zero", "+OK\r\n"), ("SET \"\\x00k\" escaped", "+OK\r\n")]);
        h.check(&[
            ("SELECT 1", "+OK\r\n"),
            ("GET k", "$-1\r\n"),
            ("GET \"\\x00k\"", "$-1\r\n"),
            ("EXISTS k", ":0\r\n"),
            ("SET k one", "+OK\r\n"),
            ("SET only1 x", "+OK\r\n"),
            ("GET k", "$3\r\none\r\n"),
            ("DBSIZE", ":2\r\n"),
            ("RENAME only1 moved", "+OK\r\n"),
        ]);
        assert_eq!(sorted_keys(&mut h), ["k", "moved"]);
        assert_eq!(h.shared.core.store.get(b"\x00\x01k").map(|i| i.value), Some(b"one".to_vec()));
        h.check(&[
            ("SELECT 0", "+OK\r\n"),
            ("GET k", "$4\r\nzero\r\n"),
            ("GET \"\\x00k\"", "$7\r\nescaped\r\n"),
            ("EXISTS only1 moved", ":0\r\n"),
            ("DBSIZE", ":2\r\n"),
        ]);
        assert_eq!(sorted_keys(&mut h), ["\0k", "k"]);
        let stored = h.shared.core.store.get(b"\x00\x00\x00k").map(|i| i.value);
        assert_eq!(stored, Some(b"escaped".to_vec()));
        h.check(&[
            ("FLUSHDB", "+OK\r\n"),
            ("DBSIZE", ":0\r\n"),
            ("SELECT 1", "+OK\r\n"),
            ("DBSIZE", ":2\r\n"),
            ("DEL moved", ":1\r\n"),
            ("RANDOMKEY", "$1\r\nk\r\n"),
            ("FLUSHALL", "+OK\r\n"),
            ("DBSIZE", ":0\r\n"),
            ("SELECT 0", "+OK\r\n"),
            ("SET a 1", "+OK\r\n"),
            ("DBSIZE", ":1\r\n"),
        ]);
    }

    /// KEYS * and a one-page SCAN of the session's database agree; returns the keys sorted.
    fn sorted_keys(h: &mut Harness) -> Vec<String> {
        let parse = |reply: &str, skip: usize| {
            let mut keys: Vec<String> = reply
                .split("\r\n")
                .skip(skip)
                .step_by(2)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            keys.sort();
            keys
        };
        let keys = parse(&h.run("KEYS *"), 2);
        let scanned = parse(&h.run("SCAN 0 COUNT 100000"), 5);
        assert_eq!(keys, scanned);
        keys
    }
}
