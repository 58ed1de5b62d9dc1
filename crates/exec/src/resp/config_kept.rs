//! CONFIG parameters Spinel keeps without acting on them: clients and test suites set
//! them (often several in one CONFIG SET), and a refusal would fail the whole command. Each
//! value is checked as Redis 7 checks it and read back as Redis shows it, but nothing in
//! Spinel reads it: there is no replication backlog (`repl-backlog-size`), no client
//! eviction (`maxmemory-clients`), no per-client query buffer limit other than the
//! parser's own bounds (`client-query-buffer-limit`), no sampled eviction
//! (`maxmemory-samples`), no loading to slow down (`key-load-delay`, a hidden parameter:
//! CONFIG GET shows it only when asked for by its exact name, as Redis does), and no
//! periodic snapshot (`save`: Spinel writes its snapshot on SAVE, BGSAVE and shutdown).

use super::config::memory_bytes;
use crate::Shared;

/// A kept parameter: its default, and its check, which gives the value as CONFIG GET
/// shows it, or the reason Redis gives for refusing it.
pub(super) struct Kept {
    pub name: &'static str,
    default: &'static str,
    check: fn(&[u8]) -> Result<String, String>,
    /// Left out of CONFIG GET's patterns (Redis's `HIDDEN_CONFIG`).
    pub hidden: bool,
}

pub(super) const KEPT: &[Kept] = &[
    Kept {
        name: "client-query-buffer-limit",
        default: "1073741824",
        check: |v| memory_between(v, 1 << 20, i64::MAX),
        hidden: false,
    },
    Kept {
        name: "key-load-delay",
        default: "0",
        check: |v| integer_between(v, i32::MIN.into(), i32::MAX.into()),
        hidden: true,
    },
    Kept { name: "maxmemory-clients", default: "0", check: memory_or_percent, hidden: false },
    Kept {
        name: "maxmemory-samples",
        default: "5",
        check: |v| integer_between(v, 1, 64),
        hidden: false,
    },
    Kept {
        name: "repl-backlog-size",
        default: "1048576",
        check: |v| memory_between(v, 1, i64::MAX),
        hidden: false,
    },
    Kept { name: "save", default: "", check: save_points, hidden: false },
];

/// The kept parameter named `name` (canonical, lower case).
pub(super) fn find(name: &str) -> Option<&'static Kept> {
    KEPT.iter().find(|kept| kept.name == name)
}

/// Whether `name` is hidden from CONFIG GET's patterns.
pub(super) fn is_hidden(name: &str) -> bool {
    find(name).is_some_and(|kept| kept.hidden)
}

/// The current value of kept parameter `name`.
pub(super) fn value(shared: &Shared, name: &str) -> String {
    let values = shared.kept_config.lock();
    match values.iter().find(|(n, _)| *n == name) {
        Some((_, value)) => value.clone(),
        None => find(name).map_or_else(String::new, |kept| kept.default.to_string()),
    }
}

impl Kept {
    /// The value as it will be shown, or Redis's reason for refusing it.
    pub fn check(&self, value: &[u8]) -> Result<String, String> {
        (self.check)(value)
    }
}

/// Puts a checked value in force.
pub(super) fn set(shared: &Shared, name: &'static str, value: String) {
    let mut values = shared.kept_config.lock();
    match values.iter_mut().find(|(n, _)| *n == name) {
        Some(entry) => entry.1 = value,
        None => values.push((name, value)),
    }
}

fn memory_between(value: &[u8], min: i64, max: i64) -> Result<String, String> {
    let Some(bytes) = memory_bytes(value) else {
        return Err("argument must be a memory value".into());
    };
    if bytes < min as u64 || bytes > max as u64 {
        return Err(format!("argument must be between {min} and {max} inclusive"));
    }
    Ok(bytes.to_string())
}

fn integer_between(value: &[u8], min: i64, max: i64) -> Result<String, String> {
    let Some(n) = std::str::from_utf8(value).ok().and_then(|v| v.parse::<i64>().ok()) else {
        return Err("argument couldn't be parsed into an integer".into());
    };
    if !(min..=max).contains(&n) {
        return Err(format!("argument must be between {min} and {max} inclusive"));
    }
    Ok(n.to_string())
}

/// `save`: pairs of non-negative integers (seconds, changes) separated by single spaces,
/// or nothing.
fn save_points(value: &[u8]) -> Result<String, String> {
    if value.is_empty() {
        return Ok(String::new());
    }
    let numbers: Option<Vec<u64>> = std::str::from_utf8(value)
        .ok()
        .map(|text| text.split(' ').map(|n| n.parse::<u64>().ok()).collect::<Option<Vec<_>>>())
        .unwrap_or(None);
    match numbers {
        Some(numbers) if numbers.len() % 2 == 0 => {
            Ok(numbers.iter().map(u64::to_string).collect::<Vec<_>>().join(" "))
        }
        _ => Err("Invalid save parameters".into()),
    }
}

/// Redis's memory-or-percent values: `<n>%` (at most 100) or a memory value.
fn memory_or_percent(value: &[u8]) -> Result<String, String> {
    const INVALID: &str = "argument must be a memory or percent value";
    if let Some(percent) = value.strip_suffix(b"%") {
        let n = std::str::from_utf8(percent)
            .ok()
            .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|p| p.parse::<u64>().ok())
            .ok_or_else(|| INVALID.to_string())?;
        if n > 100 {
            return Err("percentage argument must be less or equal to 100".into());
        }
        return Ok(format!("{n}%"));
    }
    memory_bytes(value).map(|bytes| bytes.to_string()).ok_or_else(|| INVALID.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: values are checked and shown as Redis 7 does.
    #[test]
    fn checks() {
        let kept = |name| find(name).unwrap();
        assert_eq!(kept("repl-backlog-size").check(b"1mb"), Ok("1048576".into()));
        assert!(kept("repl-backlog-size").check(b"0").unwrap_err().contains("between 1 and"));
        assert_eq!(kept("maxmemory-clients").check(b"50%"), Ok("50%".into()));
        assert_eq!(
            kept("maxmemory-clients").check(b"200%"),
            Err("percentage argument must be less or equal to 100".into())
        );
        assert_eq!(
            kept("maxmemory-clients").check(b"-1"),
            Err("argument must be a memory or percent value".into())
        );
        assert!(kept("client-query-buffer-limit").check(b"1023").is_err());
        assert_eq!(
            kept("maxmemory-samples").check(b"65").unwrap_err().as_str(),
            "argument must be between 1 and 64 inclusive"
        );
        assert_eq!(kept("save").check(b"3000 5"), Ok("3000 5".into()));
        assert_eq!(kept("save").check(b"3000"), Err("Invalid save parameters".into()));
        assert_eq!(kept("save").check(b"1  2"), Err("Invalid save parameters".into()));
        assert!(is_hidden("key-load-delay") && !is_hidden("repl-backlog-size"));
    }
}
