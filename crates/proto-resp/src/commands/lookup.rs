//! Commands by name: an open-addressed table built once, after Redis's `rename-command`
//! lines (if any) have been applied.

use std::{cell::Cell, sync::OnceLock};

use super::{all_commands, command_count, CommandSpec};

/// Finds a command by name, ignoring ASCII case, without allocating. A command renamed
/// with [`rename_commands`] answers to its new name only (none, renamed to "").
///
/// ```
/// let spec = proto_resp::lookup(b"gEt").unwrap();
/// assert_eq!((spec.name, spec.arity), ("get", 2));
/// assert!(proto_resp::lookup(b"nosuch").is_none());
/// ```
#[inline]
pub fn lookup(name: &[u8]) -> Option<&'static CommandSpec> {
    // A pipeline repeats one command: the last name this thread found, byte for byte (case
    // included), answers without lowering, hashing and probing (123 instructions of a
    // pipelined GET's 2,130). The table never changes once built, so neither does an answer.
    let word = short_word(name);
    if let Some(word) = word {
        let (last, spec) = LAST.get();
        if last == word {
            return spec;
        }
    }
    let spec = lookup_in_table(name);
    if let (Some(word), Some(_)) = (word, spec) {
        LAST.set((word, spec));
    }
    spec
}

thread_local! {
    /// The last name of 1 to 8 bytes [`lookup`] found on this thread ([`short_word`]) and
    /// its command; `(0, None)`, which no name packs to, before the first.
    static LAST: Cell<(u64, Option<&'static CommandSpec>)> = const { Cell::new((0, None)) };
}

/// A name of 1 to 8 bytes packed with its length, so that no two names pack alike: its
/// bytes in the low 7 bytes and the length in the top one for up to 7 bytes; 8 bytes fill
/// all 8 (and cannot be told from shorter names with a length byte, so they go uncached
/// unless their last byte is above 8: no length is).
#[inline(always)]
fn short_word(name: &[u8]) -> Option<u64> {
    let mut bytes = [0u8; 8];
    match name.len() {
        1..=7 => {
            bytes[..name.len()].copy_from_slice(name);
            bytes[7] = name.len() as u8;
        }
        8 if name[7] > 8 => bytes.copy_from_slice(name),
        _ => return None,
    }
    Some(u64::from_le_bytes(bytes))
}

fn lookup_in_table(name: &[u8]) -> Option<&'static CommandSpec> {
    let mut lowered = [0u8; NAME_MAX];
    let lowered = lowered.get_mut(..name.len())?;
    for (to, from) in lowered.iter_mut().zip(name) {
        *to = from.to_ascii_lowercase();
    }
    let index = by_name();
    let slot = name_hash(lowered) as usize & (index.len() - 1);
    // Open addressing: probe from the name's slot to the first empty one.
    index[slot..]
        .iter()
        .chain(&index[..slot])
        .map_while(|entry| *entry)
        .find(|(key, _)| key.as_bytes() == lowered)
        .map(|(_, spec)| spec)
}

/// Redis's `rename-command OLD NEW` lines, in order: each command answers to NEW from then
/// on and no longer to OLD (NEW empty: to no name at all). ACL rules, COMMAND INFO's reply
/// and INFO commandstats keep the original names, as Redis's do.
///
/// Must run before the first [`lookup`], once (the server does it at start, before it
/// accepts a client). Redis's errors: an OLD that names no command now (renamed already,
/// or a subcommand), a NEW that names one.
pub fn rename_commands(renames: &[(String, String)]) -> Result<(), String> {
    let index = index_of(renamed(renames)?);
    INDEX.set(index).map_err(|_| "commands were looked up before rename-command".into())
}

/// Every command's name after `renames`.
fn renamed(renames: &[(String, String)]) -> Result<Vec<Entry>, String> {
    let mut names: Vec<(String, &'static CommandSpec)> =
        all_commands().map(|spec| (spec.name.to_owned(), spec)).collect();
    for (old, new) in renames {
        let (old, new) = (old.to_ascii_lowercase(), new.to_ascii_lowercase());
        let at = names
            .iter()
            .position(|(name, _)| *name == old)
            .ok_or("No such command in rename-command")?;
        let (_, spec) = names.remove(at);
        if names.iter().any(|(name, _)| *name == new) {
            return Err("Target command name already exists".into());
        }
        if new.len() >= NAME_MAX {
            return Err(format!("a command name must be shorter than {NAME_MAX} bytes"));
        }
        if !new.is_empty() {
            names.push((new, spec));
        }
    }
    // Once per process, at start: the few renamed names live as long as the table.
    Ok(names.into_iter().map(|(name, spec)| (&*name.leak(), spec)).collect())
}

/// Longer than any command's name.
const NAME_MAX: usize = 32;

/// A name and the command it stands for.
type Entry = (&'static str, &'static CommandSpec);

static INDEX: OnceLock<Vec<Option<Entry>>> = OnceLock::new();

/// Every command by name, in an open-addressed table at most a quarter full: one hash of
/// the lowercased name and, mostly, one comparison (a binary search per table cost a
/// tenth of a PUBLISH's time).
fn by_name() -> &'static [Option<Entry>] {
    INDEX.get_or_init(|| index_of(all_commands().map(|spec| (spec.name, spec)).collect()))
}

fn index_of(names: Vec<Entry>) -> Vec<Option<Entry>> {
    let size = (command_count() * 4).next_power_of_two();
    let mut index = vec![None; size];
    for (name, spec) in names {
        assert!(name.len() < NAME_MAX, "{name} is too long");
        let mut slot = name_hash(name.as_bytes()) as usize & (size - 1);
        while index[slot].is_some() {
            slot = (slot + 1) & (size - 1);
        }
        index[slot] = Some((name, spec));
    }
    index
}

/// FNV-1a: short keys, no seed needed (the names are ours, not a client's).
fn name_hash(name: &[u8]) -> u64 {
    name.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names_after(renames: &[(&str, &str)]) -> Result<Vec<&'static str>, String> {
        let renames: Vec<(String, String)> =
            renames.iter().map(|(old, new)| (old.to_string(), new.to_string())).collect();
        Ok(renamed(&renames)?.into_iter().map(|(name, _)| name).collect())
    }

    /// Goal: the last-name cache answers as the table does, whatever came before.
    /// Method: every command's name as sent in three cases, each looked up twice, and
    /// names that pack near a cached one (a NUL added, one byte short, eight bytes).
    #[test]
    fn cache_answers_as_the_table() {
        let same = |a: Option<&CommandSpec>, b: Option<&CommandSpec>| {
            a.map(|spec| spec.name) == b.map(|spec| spec.name)
        };
        for spec in all_commands() {
            let upper = spec.name.to_ascii_uppercase();
            for name in [spec.name.as_bytes(), upper.as_bytes(), b"gEt", b"GET\0", b"GE"] {
                for _ in 0..2 {
                    assert!(same(lookup(name), lookup_in_table(name)), "{name:?}");
                }
            }
        }
        for name in [&b"get"[..], b"get\0", b"get\0\0\0\0\x03", b"getrange", b"getrangE"] {
            assert!(same(lookup(name), lookup_in_table(name)), "{name:?}");
        }
        assert_ne!(short_word(b"get"), short_word(b"get\0"));
        assert_eq!(short_word(b"getrang\x08"), None);
    }

    /// Goal: Redis's rename-command rules: any case, "" removes, the old name is gone,
    /// a name in use or a missing command is refused.
    #[test]
    fn renames_as_redis() {
        let names = names_after(&[("CONFIG", "cfg9"), ("flushall", "")]).unwrap();
        assert!(names.contains(&"cfg9") && !names.contains(&"config"));
        assert!(!names.contains(&"flushall") && names.contains(&"flushdb"));
        assert_eq!(names.len(), command_count() - 1);
        let entries = renamed(&[("config".into(), "cfg9".into())]).unwrap();
        let (_, spec) = entries.iter().find(|(name, _)| *name == "cfg9").unwrap();
        assert_eq!(spec.name, "config", "the command keeps its own name");
        assert!(names_after(&[("get", "get")]).is_ok(), "renamed to itself, as Redis allows");
        let refused = |renames: &[(&str, &str)]| names_after(renames).unwrap_err();
        assert_eq!(refused(&[("nosuch", "x")]), "No such command in rename-command");
        assert_eq!(refused(&[("get", "x"), ("get", "y")]), "No such command in rename-command");
        assert_eq!(refused(&[("config|get", "x")]), "No such command in rename-command");
        assert_eq!(refused(&[("get", "set")]), "Target command name already exists");
        assert!(refused(&[("get", &"x".repeat(NAME_MAX))]).contains("shorter"));
    }
}
