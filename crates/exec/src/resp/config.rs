//! CONFIG GET / SET / RESETSTAT / REWRITE.
//!
//! CONFIG GET reports Redis's names for the settings Spinel has. None of them can change
//! while the server runs (the store's memory and the listeners are fixed at start), so
//! CONFIG SET accepts a value only if it is the current one (clients and test harnesses
//! commonly send `CONFIG SET save ""` or `appendonly no`) and otherwise answers with
//! Redis's error for an immutable setting.

use super::{
    glob::{self, Case},
    Ctx,
};
use crate::Shared;

/// How a parameter's values compare in CONFIG SET.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A byte count that may be written with a unit (`64mb`).
    Memory,
    /// Compared as text, ignoring ASCII case.
    Text,
}

/// Every parameter CONFIG knows, with how to read its value.
/// Reads a parameter's current value.
type Read = fn(&Shared) -> String;

const PARAMETERS: &[(&str, Kind, Read)] = &[
    ("appendonly", Kind::Text, |_| "no".into()),
    ("bind", Kind::Text, |s| s.settings.listen.replace(',', " ")),
    ("databases", Kind::Text, |_| crate::keyspace::DATABASES.to_string()),
    ("io-threads", Kind::Text, |s| s.settings.threads.to_string()),
    ("maxclients", Kind::Text, |s| s.settings.max_connections.to_string()),
    ("maxmemory", Kind::Memory, |s| s.settings.memory_limit_bytes.to_string()),
    ("maxmemory-policy", Kind::Text, |s| eviction_policy(s).into()),
    ("port", Kind::Text, |s| s.settings.resp_port.to_string()),
    ("proto-max-bulk-len", Kind::Memory, |s| s.store.config().item_size_max.to_string()),
    ("save", Kind::Text, |_| String::new()),
    ("tcp-backlog", Kind::Text, |s| s.settings.backlog.to_string()),
    ("timeout", Kind::Text, |s| s.settings.idle_timeout_secs.to_string()),
];

/// Redis's name for what a full store does: evict (Spinel's S3-FIFO eviction is closest to
/// an all-keys LRU) or refuse writes (`-M`).
pub(super) fn eviction_policy(shared: &Shared) -> &'static str {
    if shared.settings.evictions {
        "allkeys-lru"
    } else {
        "noeviction"
    }
}

pub(super) fn config_resetstat(ctx: &mut Ctx<'_>) {
    ctx.shared.reset_totals();
    ctx.reply().ok();
}

pub(super) fn config_rewrite(ctx: &mut Ctx<'_>) {
    ctx.error("ERR The server is running without a config file");
}

/// Every parameter matching any of the patterns (case-insensitive), each once.
pub(super) fn config_get(ctx: &mut Ctx<'_>) {
    let patterns: Vec<&[u8]> = (2..ctx.argc()).map(|i| ctx.arg(i)).collect();
    let shared = ctx.shared;
    let found: Vec<(&str, String)> = PARAMETERS
        .iter()
        .filter(|(name, ..)| {
            patterns.iter().any(|p| glob::matches(p, name.as_bytes(), Case::Insensitive))
        })
        .map(|(name, _, read)| (*name, read(shared)))
        .collect();
    let mut reply = ctx.reply();
    reply.map(found.len());
    for (name, value) in found {
        reply.bulk(name.as_bytes());
        reply.bulk(value.as_bytes());
    }
}

/// Parameter/value pairs (the table checks that they are pairs).
pub(super) fn config_set(ctx: &mut Ctx<'_>) {
    for index in (2..ctx.argc()).step_by(2) {
        let (name, value) = (ctx.arg(index), ctx.arg(index + 1));
        let shown = String::from_utf8_lossy(name).into_owned();
        let Some((_, kind, read)) =
            PARAMETERS.iter().find(|(n, ..)| n.as_bytes().eq_ignore_ascii_case(name))
        else {
            return ctx.error(format!(
                "ERR Unknown option or number of arguments for CONFIG SET - '{shown}'"
            ));
        };
        if !same_value(*kind, &read(ctx.shared), value) {
            return ctx.error(format!(
                "ERR CONFIG SET failed (possibly related to argument '{shown}') - can't set \
                 immutable config"
            ));
        }
    }
    ctx.reply().ok();
}

fn same_value(kind: Kind, current: &str, wanted: &[u8]) -> bool {
    match kind {
        Kind::Text => current.as_bytes().eq_ignore_ascii_case(wanted),
        Kind::Memory => memory_bytes(wanted).is_some_and(|n| n.to_string() == current),
    }
}

/// Redis's `memtoull`: digits with an optional unit, `k`/`m`/`g` (powers of 1000) or
/// `kb`/`mb`/`gb` (powers of 1024), any case.
fn memory_bytes(text: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?.to_ascii_lowercase();
    let digits_end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (digits, unit) = text.split_at(digits_end);
    let scale: u64 = match unit {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1 << 10,
        "m" => 1000 * 1000,
        "mb" => 1 << 20,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1 << 30,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(scale)
}

#[cfg(test)]
mod tests {
    use super::{super::testkit::Harness, memory_bytes};

    #[test]
    fn config_get() {
        let mut h = Harness::new();
        h.check(&[
            ("CONFIG GET maxmemory", "*2\r\n$9\r\nmaxmemory\r\n$8\r\n67108864\r\n"),
            (
                "CONFIG GET SAVE appendonly",
                "*4\r\n$10\r\nappendonly\r\n$2\r\nno\r\n$4\r\nsave\r\n$0\r\n\r\n",
            ),
            ("CONFIG GET nosuch", "*0\r\n"),
            ("CONFIG GET port port", "*2\r\n$4\r\nport\r\n$4\r\n6379\r\n"),
            ("CONFIG GET", "-ERR wrong number of arguments for 'config|get' command\r\n"),
            ("CONFIG FOO", "-ERR unknown subcommand 'FOO'. Try CONFIG HELP.\r\n"),
            ("CONFIG REWRITE", "-ERR The server is running without a config file\r\n"),
        ]);
        h.check3(&[("CONFIG GET databases", "%1\r\n$9\r\ndatabases\r\n$2\r\n16\r\n")]);
        let all = h.run("CONFIG GET *");
        assert!(all.starts_with(&format!("*{}\r\n", 2 * super::PARAMETERS.len())), "{all}");
        let max = h.run("CONFIG GET max*");
        assert!(max.starts_with("*6\r\n$10\r\nmaxclients\r\n"), "{max}");
    }

    #[test]
    fn config_set_and_resetstat() {
        let mut h = Harness::new();
        h.check(&[
            ("CONFIG SET save \"\"", "+OK\r\n"),
            ("CONFIG SET appendonly NO maxmemory 64mb", "+OK\r\n"),
            ("CONFIG SET maxmemory 67108864", "+OK\r\n"),
            (
                "CONFIG SET maxmemory 1gb",
                "-ERR CONFIG SET failed (possibly related to argument 'maxmemory') - can't set \
                 immutable config\r\n",
            ),
            (
                "CONFIG SET nosuch 1",
                "-ERR Unknown option or number of arguments for CONFIG SET - 'nosuch'\r\n",
            ),
            ("CONFIG SET save", "-ERR wrong number of arguments for 'config|set' command\r\n"),
            (
                "CONFIG SET save \"\" port",
                "-ERR wrong number of arguments for 'config|set' command\r\n",
            ),
        ]);
        assert!(h.shared.totals().total_commands > 0);
        h.check(&[("CONFIG RESETSTAT", "+OK\r\n")]);
        assert_eq!(h.shared.totals().total_commands, 0);
        assert_eq!(memory_bytes(b"1k"), Some(1000));
        assert_eq!(memory_bytes(b"2KB"), Some(2048));
        assert_eq!(memory_bytes(b"x"), None);
    }
}
