//! Redis 7's key specifications: where a command line's keys are and what the command does
//! with each (read it, overwrite it, delete from it ...), as COMMAND INFO shows them and
//! COMMAND GETKEYS, GETKEYSANDFLAGS and ACL key rules use them. The per-command data
//! (`meta.rs`) is generated from the reference server by `scripts/gen_command_meta.py`;
//! this module holds its types and reads command lines with it.

use std::{iter::StepBy, ops::RangeInclusive};

use crate::Reply;

/// A key spec's flags, one bit each, in the order Redis prints them.
pub struct KeyFlags;

impl KeyFlags {
    pub const RO: u16 = 1 << 0;
    pub const RW: u16 = 1 << 1;
    pub const OW: u16 = 1 << 2;
    pub const RM: u16 = 1 << 3;
    pub const ACCESS: u16 = 1 << 4;
    pub const UPDATE: u16 = 1 << 5;
    pub const INSERT: u16 = 1 << 6;
    pub const DELETE: u16 = 1 << 7;
    pub const NOT_KEY: u16 = 1 << 8;
    pub const INCOMPLETE: u16 = 1 << 9;
    pub const VARIABLE_FLAGS: u16 = 1 << 10;
}

const KEY_FLAG_NAMES: [&str; 11] = [
    "RO",
    "RW",
    "OW",
    "RM",
    "access",
    "update",
    "insert",
    "delete",
    "not_key",
    "incomplete",
    "variable_flags",
];

/// How a spec finds its keys once it found where they begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FindKeys {
    /// Keys from the beginning to `last_key` (relative to it; negative: from the end of
    /// the line), every `key_step` arguments; `limit` > 1 stops at 1/limit of the rest.
    Range { last_key: i32, key_step: i32, limit: i32 },
    /// A count of keys at `key_num_index`, then the keys from `first_key`, both relative
    /// to the beginning, every `key_step` arguments.
    KeyNum { key_num_index: i32, first_key: i32, key_step: i32 },
    /// Where the keys are is known only to the command (SORT's STORE, which may come
    /// anywhere among the options, and the keys its BY and GET patterns make from the
    /// data): Redis shows `unknown` for both where they begin and how they are found.
    Unknown,
}

/// One key spec: keys that begin at argument `begin_index` (or after `keyword`) and that
/// the command treats alike (`flags`).
#[derive(Debug, PartialEq, Eq)]
pub struct KeySpec {
    pub notes: &'static str,
    pub flags: u16,
    pub begin_index: i32,
    /// The keys begin after this keyword, searched from argument `startfrom` (negative:
    /// from the end, backwards) instead of at `begin_index` (MIGRATE's `KEYS`).
    pub keyword: Option<(&'static str, i32)>,
    pub find: FindKeys,
}

pub(super) const fn ks(
    notes: &'static str,
    flags: u16,
    begin_index: i32,
    find: FindKeys,
) -> KeySpec {
    KeySpec { notes, flags, begin_index, keyword: None, find }
}

/// A spec whose keys begin after `keyword`.
pub(super) const fn ks_after(
    notes: &'static str,
    flags: u16,
    (keyword, startfrom): (&'static str, i32),
    find: FindKeys,
) -> KeySpec {
    KeySpec { notes, flags, begin_index: 0, keyword: Some((keyword, startfrom)), find }
}

/// A spec whose keys only the command can find ([`FindKeys::Unknown`]).
pub(super) const fn ks_unknown(notes: &'static str, flags: u16) -> KeySpec {
    KeySpec { notes, flags, begin_index: 0, keyword: None, find: FindKeys::Unknown }
}

pub(super) const fn range(last_key: i32, key_step: i32, limit: i32) -> FindKeys {
    FindKeys::Range { last_key, key_step, limit }
}

pub(super) const fn keynum(key_num_index: i32, first_key: i32, key_step: i32) -> FindKeys {
    FindKeys::KeyNum { key_num_index, first_key, key_step }
}

/// What COMMAND INFO shows of a command or subcommand beyond the command table: its tips
/// and key specs; for a subcommand (`config|get`) also its flags and key positions.
#[derive(Debug, PartialEq, Eq)]
pub struct Meta {
    pub name: &'static str,
    pub tips: &'static [&'static str],
    pub key_specs: &'static [KeySpec],
    pub sub_flags: &'static [&'static str],
    pub sub_keys: (i32, i32, i32),
}

/// One key of a command line: its argument's position (the name is 0) and its flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRef {
    pub at: usize,
    pub flags: u16,
}

/// The data of a command (`get`) or subcommand (`object|encoding`), by its full lowercase
/// name.
pub fn command_meta(full_name: &str) -> Option<&'static Meta> {
    let table = super::meta::META;
    table.binary_search_by(|meta| meta.name.cmp(full_name)).ok().map(|at| &table[at])
}

impl Meta {
    /// Whether the command has key arguments (channels, marked `not_key`, are none).
    pub fn has_keys(&self) -> bool {
        self.key_specs.iter().any(|spec| spec.flags & KeyFlags::NOT_KEY == 0)
    }

    /// The keys of a whole command line (`args[0]` is the command's name), in spec order,
    /// as Redis finds them: none when the line's key arguments do not add up (a key count
    /// past the end, say), which the command itself then refuses.
    pub fn keys(&self, args: &[&[u8]]) -> Vec<KeyRef> {
        if self.name == "migrate" {
            return migrate_keys(args, self.key_specs[0].flags);
        }
        if self.name == "sort" {
            return sort_keys(args, self.key_specs[0].flags, self.key_specs[2].flags);
        }
        let variable = self.key_specs.iter().any(|spec| spec.flags & KeyFlags::VARIABLE_FLAGS != 0);
        if variable {
            return self.keys_with_variable_flags(args);
        }
        let mut keys = Vec::new();
        for spec in self.key_specs.iter().filter(|spec| spec.flags & KeyFlags::NOT_KEY == 0) {
            // A keyword that is not there names no key (GEORADIUS without STORE); only a
            // keyword found with too few arguments after it spoils the whole line.
            if let Some((keyword, startfrom)) = spec.keyword {
                if keyword_end(args, keyword, startfrom).is_none() {
                    continue;
                }
            }
            match spec_positions(spec, args) {
                Some(positions) => {
                    keys.extend(positions.map(|at| KeyRef { at, flags: spec.flags }));
                }
                None => return Vec::new(),
            }
        }
        keys
    }

    /// SET and BITFIELD: one key, whose flags depend on the options (SET ... GET reads;
    /// a BITFIELD of only GETs does not write).
    fn keys_with_variable_flags(&self, args: &[&[u8]]) -> Vec<KeyRef> {
        let flags = match self.name {
            "set" => set_key_flags(args),
            "bitfield" => bitfield_key_flags(args),
            _ => self.key_specs[0].flags & !KeyFlags::VARIABLE_FLAGS,
        };
        vec![KeyRef { at: 1, flags }]
    }
}

/// MIGRATE's keys, as Redis's `migrateGetKeys` finds them: the key argument, or with a
/// `KEYS` option (after the fixed arguments) the keys after it.
fn migrate_keys(args: &[&[u8]], flags: u16) -> Vec<KeyRef> {
    let keys_at = args.iter().skip(6).position(|arg| arg.eq_ignore_ascii_case(b"keys"));
    match keys_at {
        Some(at) => (6 + at + 1..args.len()).map(|at| KeyRef { at, flags }).collect(),
        None if args.len() > 3 => vec![KeyRef { at: 3, flags }],
        None => Vec::new(),
    }
}

/// SORT's keys, as Redis's `sortGetKeys` finds them: the sorted key, and the destination
/// after the last `STORE` it meets while it skips the arguments of LIMIT (two), GET and
/// BY (one each). The word after STORE is not skipped, so in `STORE get x` the `get`
/// swallows `x`. The keys of BY and GET patterns are not found (Redis's neither).
fn sort_keys(args: &[&[u8]], read: u16, store: u16) -> Vec<KeyRef> {
    let mut keys = vec![KeyRef { at: 1, flags: read }];
    let mut destination = None;
    let mut at = 2;
    while at < args.len() {
        let word = args[at];
        if word.eq_ignore_ascii_case(b"limit") {
            at += 2;
        } else if word.eq_ignore_ascii_case(b"get") || word.eq_ignore_ascii_case(b"by") {
            at += 1;
        } else if word.eq_ignore_ascii_case(b"store") && at + 1 < args.len() {
            destination = Some(at + 1);
        }
        at += 1;
    }
    keys.extend(destination.map(|at| KeyRef { at, flags: store }));
    keys
}

fn set_key_flags(args: &[&[u8]]) -> u16 {
    if args.iter().skip(3).any(|arg| arg.eq_ignore_ascii_case(b"get")) {
        KeyFlags::RW | KeyFlags::ACCESS | KeyFlags::UPDATE
    } else {
        KeyFlags::OW | KeyFlags::UPDATE
    }
}

fn bitfield_key_flags(args: &[&[u8]]) -> u16 {
    let writes = KeyFlags::RW | KeyFlags::ACCESS | KeyFlags::UPDATE;
    let mut at = 2;
    while at < args.len() {
        let rest = args.len() - at - 1;
        let word = args[at].to_ascii_lowercase();
        match word.as_slice() {
            b"get" if rest >= 2 => at += 3,
            b"overflow" if rest >= 1 => at += 2,
            // SET or INCRBY write; anything else is a syntax error, taken as a write.
            _ => return writes,
        }
    }
    KeyFlags::RO | KeyFlags::ACCESS
}

/// The positions one spec names in `args`, or `None` when they do not fit in the line.
fn spec_positions(spec: &KeySpec, args: &[&[u8]]) -> Option<StepBy<RangeInclusive<usize>>> {
    let argc = args.len() as i64;
    let begin = match spec.keyword {
        None => i64::from(spec.begin_index),
        Some((keyword, startfrom)) => keyword_end(args, keyword, startfrom)?,
    };
    let (first, last, step) = match spec.find {
        FindKeys::Range { last_key, key_step, limit } => {
            let last = if last_key >= 0 {
                begin + i64::from(last_key)
            } else if limit <= 1 {
                argc + i64::from(last_key)
            } else {
                begin + (argc - begin) / i64::from(limit) + i64::from(last_key)
            };
            (begin, last, key_step)
        }
        FindKeys::KeyNum { key_num_index, first_key, key_step } => {
            let count = args.get(usize::try_from(begin + i64::from(key_num_index)).ok()?)?;
            let count = std::str::from_utf8(count).ok()?.parse::<i64>().ok().filter(|n| *n >= 0)?;
            let first = begin + i64::from(first_key);
            (first, first + count - 1, key_step)
        }
        // Only the command knows (SORT's own, handled in `Meta::keys`): no position.
        FindKeys::Unknown => {
            let mut none = 1..=1;
            none.next();
            return Some(none.step_by(1));
        }
    };
    if first >= argc || last >= argc || last < first {
        return None;
    }
    Some((first as usize..=last as usize).step_by(step.max(1) as usize))
}

/// Where keys begin after `keyword`: searched from `startfrom` up to the last argument,
/// or backwards from `argc + startfrom` down to argument 2 when it is negative (the bounds
/// Redis's search stops at, both excluded).
fn keyword_end(args: &[&[u8]], keyword: &str, startfrom: i32) -> Option<i64> {
    let argc = args.len() as i64;
    let found = |at: &i64| args[*at as usize].eq_ignore_ascii_case(keyword.as_bytes());
    let at = if startfrom > 0 {
        (i64::from(startfrom)..argc - 1).find(found)
    } else {
        (2..=argc + i64::from(startfrom)).rev().filter(|at| *at < argc).find(found)
    };
    at.map(|at| at + 1)
}

/// Writes a key spec's flags as a set of simple strings (COMMAND INFO, GETKEYSANDFLAGS).
pub fn write_key_flags(reply: &mut Reply<'_>, flags: u16) {
    let names = KEY_FLAG_NAMES.iter().enumerate().filter(|(bit, _)| flags & (1 << bit) != 0);
    reply.set(names.clone().count());
    names.for_each(|(_, name)| reply.simple(name.as_bytes()));
}

/// COMMAND INFO's key specs: a set of maps (`notes` when there are any, `flags`,
/// `begin_search`, `find_keys`).
pub fn write_key_specs(reply: &mut Reply<'_>, specs: &[KeySpec]) {
    reply.set(specs.len());
    for spec in specs {
        reply.map(if spec.notes.is_empty() { 3 } else { 4 });
        if !spec.notes.is_empty() {
            reply.bulk(b"notes");
            reply.bulk(spec.notes.as_bytes());
        }
        reply.bulk(b"flags");
        write_key_flags(reply, spec.flags);
        reply.bulk(b"begin_search");
        match spec.keyword {
            None if spec.find == FindKeys::Unknown => write_typed(reply, b"unknown", &[]),
            None => write_typed(reply, b"index", &[(b"index", spec.begin_index)]),
            Some((keyword, startfrom)) => {
                reply.map(2);
                reply.bulk(b"type");
                reply.bulk(b"keyword");
                reply.bulk(b"spec");
                reply.map(2);
                reply.bulk(b"keyword");
                reply.bulk(keyword.as_bytes());
                reply.bulk(b"startfrom");
                reply.integer(i64::from(startfrom));
            }
        }
        reply.bulk(b"find_keys");
        match spec.find {
            FindKeys::Range { last_key, key_step, limit } => write_typed(
                reply,
                b"range",
                &[(b"lastkey", last_key), (b"keystep", key_step), (b"limit", limit)],
            ),
            FindKeys::KeyNum { key_num_index, first_key, key_step } => write_typed(
                reply,
                b"keynum",
                &[(b"keynumidx", key_num_index), (b"firstkey", first_key), (b"keystep", key_step)],
            ),
            FindKeys::Unknown => write_typed(reply, b"unknown", &[]),
        }
    }
}

/// `{type: <kind>, spec: {<name>: <number> ...}}`.
fn write_typed(reply: &mut Reply<'_>, kind: &[u8], fields: &[(&[u8], i32)]) {
    reply.map(2);
    reply.bulk(b"type");
    reply.bulk(kind);
    reply.bulk(b"spec");
    reply.map(fields.len());
    for (name, value) in fields {
        reply.bulk(name);
        reply.integer(i64::from(*value));
    }
}

/// The command or subcommand a whole command line names, as COMMAND GETKEYS looks it up:
/// its full name and arity. A container named alone is itself; with a first argument
/// that is none of its subcommands, nothing.
pub fn command_of_line(args: &[&[u8]]) -> Option<(&'static str, i32)> {
    let spec = super::lookup(args.first()?)?;
    match (&spec.run, args.get(1)) {
        (super::Run::Subcommands { table, .. }, Some(name)) => table
            .iter()
            .find(|sub| sub.short_name().as_bytes().eq_ignore_ascii_case(name))
            .map(|sub| (sub.name, sub.arity)),
        _ => Some((spec.name, spec.arity)),
    }
}
