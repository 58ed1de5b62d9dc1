//! Every command and subcommand as ACL rules name them, with its ACL categories and a bit
//! number for a user's command bitmap.
//!
//! Categories are Redis's rules for deriving them: `@write` from the write flag, `@read`
//! from readonly, `@admin` and `@dangerous` from admin, `@fast` or else `@slow`, and the
//! data-type category of the command's group; then the few Redis declares by hand
//! ([`EXTRA`]). A conformance test compares them with the real redis-server's.

use std::{collections::HashMap, sync::OnceLock};

use super::absent::ABSENT;
use proto_resp::{
    commands::{all_commands, command_meta, Flags, Group, Meta, Run},
    CommandSpec, Route, Routed,
};

/// Redis's categories, in `ACL CAT`'s order; a category's bit is its position.
pub(crate) const CATEGORIES: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// The same, as COMMAND INFO prints them.
const TAGGED: [&str; 21] = [
    "@keyspace",
    "@read",
    "@write",
    "@set",
    "@sortedset",
    "@list",
    "@hash",
    "@string",
    "@bitmap",
    "@hyperloglog",
    "@geo",
    "@stream",
    "@pubsub",
    "@admin",
    "@fast",
    "@slow",
    "@blocking",
    "@dangerous",
    "@connection",
    "@transaction",
    "@scripting",
];

/// A command's categories by its full name (`config|get`), tagged and in Redis's order,
/// for COMMAND INFO; none for a name that is no command.
pub(crate) fn category_names(name: &str) -> Vec<&'static str> {
    let catalog = catalog();
    let bits = catalog.find(name).map_or(0, |at| catalog.entries[at].categories);
    TAGGED.iter().enumerate().filter(|(at, _)| bits & (1 << at) != 0).map(|(_, t)| *t).collect()
}

fn bit(name: &str) -> u32 {
    let at = CATEGORIES.iter().position(|c| *c == name).expect("a category");
    1 << at
}

/// Categories Redis declares beyond what flags and group give.
const EXTRA: &[(&str, &[&str])] = &[
    ("command", &["connection"]),
    ("dbsize", &["keyspace"]),
    ("flushall", &["keyspace", "dangerous"]),
    ("flushdb", &["keyspace", "dangerous"]),
    ("info", &["dangerous"]),
    ("keys", &["dangerous"]),
    ("lastsave", &["admin", "dangerous"]),
    ("migrate", &["dangerous"]),
    ("restore", &["dangerous"]),
    ("restore-asking", &["keyspace", "dangerous"]),
    ("role", &["admin", "dangerous"]),
    ("sort", &["set", "sortedset", "list", "dangerous"]),
    ("sort_ro", &["set", "sortedset", "list", "dangerous"]),
    ("swapdb", &["keyspace", "dangerous"]),
    ("wait", &["connection"]),
];

/// Commands whose group gives no category: Redis declares WAIT's (`@connection`) and
/// SORT's (the types it sorts, not `@keyspace`) by hand.
const NO_GROUP_CATEGORY: &[&str] = &["wait", "sort", "sort_ro"];

/// Subcommands that are admin commands (`@admin @dangerous`) or reads (`@read`).
const ADMIN_SUBCOMMANDS: &[&str] = &[
    "acl|deluser",
    "acl|dryrun",
    "acl|getuser",
    "acl|list",
    "acl|load",
    "acl|log",
    "acl|save",
    "acl|setuser",
    "acl|users",
    "client|kill",
    "client|list",
    "client|no-evict",
    "client|pause",
    "client|unblock",
    "client|unpause",
    "cluster|addslots",
    "cluster|addslotsrange",
    "cluster|bumpepoch",
    "cluster|count-failure-reports",
    "cluster|delslots",
    "cluster|delslotsrange",
    "cluster|failover",
    "cluster|flushslots",
    "cluster|forget",
    "cluster|meet",
    "cluster|replicas",
    "cluster|replicate",
    "cluster|reset",
    "cluster|saveconfig",
    "cluster|set-config-epoch",
    "cluster|setslot",
    "cluster|slaves",
    "config|get",
    "config|resetstat",
    "config|rewrite",
    "config|set",
    "latency|doctor",
    "latency|histogram",
    "latency|history",
    "latency|latest",
    "latency|reset",
    "module|list",
    "module|load",
    "module|loadex",
    "module|unload",
    "slowlog|get",
    "slowlog|len",
    "slowlog|reset",
];
const READ_SUBCOMMANDS: &[&str] = &[
    "memory|usage",
    "object|encoding",
    "object|freq",
    "object|idletime",
    "object|refcount",
    "xinfo|consumers",
    "xinfo|groups",
    "xinfo|stream",
];

const WRITE_SUBCOMMANDS: &[&str] = &[
    "function|delete",
    "function|flush",
    "function|load",
    "function|restore",
    "xgroup|create",
    "xgroup|createconsumer",
    "xgroup|delconsumer",
    "xgroup|destroy",
    "xgroup|setid",
];

/// One command or subcommand.
#[derive(Debug)]
pub(crate) struct Entry {
    /// As rules name it: `get`, `config|get`.
    pub(crate) name: &'static str,
    pub(crate) categories: u32,
    /// Its key specs and the rest of what COMMAND INFO shows.
    pub(crate) meta: Option<&'static Meta>,
    /// For a container, its subcommands' entries.
    pub(crate) subcommands: std::ops::Range<usize>,
    /// Whether Spinel runs it (false: a Redis 7.0 command only rules name, see `absent.rs`).
    pub(crate) runs: bool,
}

#[derive(Debug)]
pub(crate) struct Catalog {
    pub(crate) entries: Vec<Entry>,
    by_name: HashMap<&'static str, usize>,
}

pub(crate) fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(Catalog::build)
}

impl Catalog {
    fn build() -> Catalog {
        let mut entries = Vec::new();
        for spec in all_commands() {
            let at = entries.len();
            entries.push(Entry {
                name: spec.name,
                categories: categories_of(spec),
                meta: command_meta(spec.name),
                subcommands: 0..0,
                runs: true,
            });
            if let Run::Subcommands { table, .. } = &spec.run {
                for sub in table.iter() {
                    entries.push(Entry {
                        name: sub.name,
                        categories: subcommand_categories(spec, sub.name),
                        meta: command_meta(sub.name),
                        subcommands: 0..0,
                        runs: true,
                    });
                }
                push_absent_subcommands(&mut entries, spec.name);
                entries[at].subcommands = at + 1..entries.len();
            }
        }
        push_absent_commands(&mut entries);
        let by_name = entries.iter().enumerate().map(|(at, e)| (e.name, at)).collect();
        Catalog { entries, by_name }
    }

    /// The entry a rule names (lowercase), if any.
    pub(crate) fn find(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// The entry of a routed command line: the subcommand's for a container.
    pub(crate) fn of(&self, routed: &Routed) -> usize {
        let name = match routed.route {
            Route::Command(_) => routed.spec.name,
            Route::Subcommand(id) => match &routed.spec.run {
                Run::Subcommands { table, .. } => {
                    table.iter().find(|sub| sub.id == id).map_or(routed.spec.name, |s| s.name)
                }
                Run::Command(_) => routed.spec.name,
            },
        };
        self.by_name[name]
    }

    /// The entries of a category bit that Spinel runs (what ACL CAT lists).
    pub(crate) fn run_in_category(&self, category: u32) -> impl Iterator<Item = usize> + '_ {
        self.in_category(category).filter(|&at| self.entries[at].runs)
    }

    /// The entries of a category bit.
    pub(crate) fn in_category(&self, category: u32) -> impl Iterator<Item = usize> + '_ {
        (0..self.entries.len()).filter(move |&at| self.entries[at].categories & category != 0)
    }
}

/// An entry for a Redis 7.0 command or subcommand Spinel does not run.
fn absent_entry(name: &'static str, categories: &[&str]) -> Entry {
    let categories = categories.iter().map(|name| bit(name)).fold(0, |a, b| a | b);
    Entry { name, categories, meta: None, subcommands: 0..0, runs: false }
}

/// The absent subcommands of `container` (`latency|doctor` of `latency`).
fn push_absent_subcommands(entries: &mut Vec<Entry>, container: &str) {
    for (name, categories) in ABSENT {
        if name.split_once('|').is_some_and(|(head, _)| head == container) {
            entries.push(absent_entry(name, categories));
        }
    }
}

/// The absent commands, each container followed by its subcommands.
fn push_absent_commands(entries: &mut Vec<Entry>) {
    for (name, categories) in ABSENT.iter().filter(|(name, _)| !name.contains('|')) {
        let at = entries.len();
        entries.push(absent_entry(name, categories));
        push_absent_subcommands(entries, name);
        entries[at].subcommands = at + 1..entries.len();
    }
}

fn flag_categories(flags: Flags) -> u32 {
    let mut categories = 0;
    if flags.contains(Flags::WRITE) {
        categories |= bit("write");
    }
    if flags.contains(Flags::READONLY) {
        categories |= bit("read");
    }
    if flags.contains(Flags::ADMIN) {
        categories |= bit("admin") | bit("dangerous");
    }
    if flags.contains(Flags::PUBSUB) {
        categories |= bit("pubsub");
    }
    if flags.contains(Flags::BLOCKING) {
        categories |= bit("blocking");
    }
    categories | if flags.contains(Flags::FAST) { bit("fast") } else { bit("slow") }
}

fn group_category(group: Group) -> u32 {
    match group {
        Group::Bitmap => bit("bitmap"),
        Group::Connection | Group::Cluster => bit("connection"),
        Group::Generic => bit("keyspace"),
        Group::Geo => bit("geo"),
        Group::Hash => bit("hash"),
        Group::Hyperloglog => bit("hyperloglog"),
        Group::List => bit("list"),
        Group::Set => bit("set"),
        Group::SortedSet => bit("sortedset"),
        Group::String => bit("string"),
        Group::Transactions => bit("transaction"),
        Group::Scripting => bit("scripting"),
        Group::Stream => bit("stream"),
        // `@pubsub` comes from the pubsub flag, as in Redis.
        Group::Server | Group::Pubsub => 0,
    }
}

fn categories_of(spec: &CommandSpec) -> u32 {
    let mut categories = flag_categories(spec.flags);
    if spec.group == Group::Scripting {
        // Redis puts no read-only script command in @read (EVAL_RO, FCALL_RO).
        categories &= !bit("read");
    }
    // A container is only `@slow` (and what its own flags say): its subcommands carry the rest.
    if matches!(spec.run, Run::Command(_)) && !NO_GROUP_CATEGORY.contains(&spec.name) {
        categories |= group_category(spec.group);
    }
    if let Some((_, extra)) = EXTRA.iter().find(|(name, _)| *name == spec.name) {
        categories |= extra.iter().map(|name| bit(name)).fold(0, |a, b| a | b);
    }
    categories
}

fn subcommand_categories(container: &CommandSpec, name: &str) -> u32 {
    let mut categories = bit("slow");
    categories |= match container.name {
        "client" | "command" => bit("connection"),
        "object" => bit("keyspace"),
        "script" | "function" => bit("scripting"),
        "xgroup" | "xinfo" => bit("stream"),
        // HELP has no pubsub flag in Redis: only `@slow`.
        "pubsub" if name != "pubsub|help" => bit("pubsub"),
        _ => 0,
    };
    if ADMIN_SUBCOMMANDS.contains(&name) {
        categories |= bit("admin") | bit("dangerous");
    }
    if READ_SUBCOMMANDS.contains(&name) {
        categories |= bit("read");
    }
    if WRITE_SUBCOMMANDS.contains(&name) {
        categories |= bit("write");
    }
    categories
}

/// The bit of a category name (without `@`), if it is one.
pub(crate) fn category(name: &str) -> Option<u32> {
    CATEGORIES.iter().position(|c| *c == name).map(|at| 1 << at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tagged_names_follow_the_categories() {
        assert_eq!(TAGGED.len(), CATEGORIES.len());
        for (tagged, name) in TAGGED.iter().zip(CATEGORIES) {
            assert_eq!(&tagged[1..], *name);
        }
        assert_eq!(category_names("get"), ["@read", "@string", "@fast"]);
        assert_eq!(category_names("config|get"), ["@admin", "@slow", "@dangerous"]);
        assert!(category_names("nosuch").is_empty());
    }

    /// Goal: every absent name has an entry, under its container when it is a subcommand,
    /// and none is also a command Spinel runs.
    #[test]
    fn absent_commands_have_entries() {
        let catalog = catalog();
        for (name, _) in ABSENT {
            let at = catalog.find(name).unwrap_or_else(|| panic!("{name}"));
            assert!(!catalog.entries[at].runs, "{name} is absent and run");
            if let Some((container, _)) = name.split_once('|') {
                let container = catalog.find(container).expect("its container");
                assert!(catalog.entries[container].subcommands.contains(&at), "{name}");
            }
        }
        let stream = category("stream").unwrap();
        assert!(catalog.in_category(stream).any(|at| catalog.entries[at].name == "xadd"));
    }
}
