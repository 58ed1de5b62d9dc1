//! CONFIG parameters Spinel keeps, checked as Redis 7.0 checks them and read back as Redis
//! shows them: clients and test suites set them (often several in one CONFIG SET, or first
//! thing in a test file), and a refusal would fail the whole command.
//!
//! Honoured: the encodings' thresholds, `hash-max-listpack-entries` / `-value`,
//! `set-max-intset-entries`, `zset-max-listpack-entries` / `-value` and
//! `list-max-listpack-size`: past them a collection moves out of the store, as Redis
//! converts it to its large encoding, and OBJECT ENCODING names it so (`thresholds.rs`,
//! which holds them as atomics for the write path).
//!
//! Only kept, nothing in Spinel reads them: the list compression and stream node sizes
//! (`list-compress-depth`, `stream-node-max-bytes` / `-entries`: Spinel's streams keep
//! their own nodes); `sanitize-dump-payload` (RESTORE always checks a payload in full); the latency
//! percentiles (`latency-tracking`, `latency-tracking-info-percentiles`: no `latencystats`
//! section); no replication (`repl-backlog-size`, `replica-read-only`), no client eviction
//! (`maxmemory-clients`), no per-client query buffer limit other than the parser's own
//! bounds (`client-query-buffer-limit`), no sampled eviction (`maxmemory-samples`), no
//! loading or snapshot to slow down (`key-load-delay`, `rdb-key-save-delay`, hidden
//! parameters: CONFIG GET shows them only when asked for by their exact names, as Redis
//! does), and no periodic snapshot (`save`: Spinel writes its snapshot on SAVE, BGSAVE and
//! shutdown).
//!
//! The ziplist-era names (`hash-max-ziplist-entries` ...) are aliases: the same value under
//! either name, both listed by `CONFIG GET *`, as in Redis 7.0.

use super::config::memory_bytes;
use crate::Shared;

/// A kept parameter: its default, and its check, which gives the value as CONFIG GET
/// shows it, or the reason Redis gives for refusing it.
pub(super) struct Kept {
    pub name: &'static str,
    /// Redis 7's other name for it (the ziplist era's), read and set as the same value.
    pub alias: Option<&'static str>,
    default: &'static str,
    check: fn(&[u8]) -> Result<String, String>,
    /// Left out of CONFIG GET's patterns (Redis's `HIDDEN_CONFIG`).
    pub hidden: bool,
    /// Fixed at start in Redis (`IMMUTABLE_CONFIG`): CONFIG SET refuses it, whatever the value.
    pub immutable: bool,
}

pub(super) const fn kept(
    name: &'static str,
    default: &'static str,
    check: fn(&[u8]) -> Result<String, String>,
) -> Kept {
    Kept { name, alias: None, default, check, hidden: false, immutable: false }
}

/// An immutable parameter: shown, never set.
pub(super) const fn fixed(name: &'static str, default: &'static str) -> Kept {
    Kept { immutable: true, ..kept(name, default, |_| Err("can't set immutable config".into())) }
}

/// An immutable hidden parameter.
pub(super) const fn hidden_fixed(name: &'static str, default: &'static str) -> Kept {
    Kept { hidden: true, ..fixed(name, default) }
}

pub(super) const fn aliased(
    name: &'static str,
    alias: &'static str,
    default: &'static str,
    check: fn(&[u8]) -> Result<String, String>,
) -> Kept {
    Kept { name, alias: Some(alias), default, check, hidden: false, immutable: false }
}

pub(super) const fn hidden(
    name: &'static str,
    default: &'static str,
    check: fn(&[u8]) -> Result<String, String>,
) -> Kept {
    Kept { name, alias: None, default, check, hidden: true, immutable: false }
}

const I32_MIN: i64 = i32::MIN as i64;
const I32_MAX: i64 = i32::MAX as i64;

pub(super) const KEPT: &[Kept] = &[
    kept("client-query-buffer-limit", "1073741824", |v| memory_between(v, 1 << 20, i64::MAX)),
    hidden("key-load-delay", "0", |v| integer_between(v, I32_MIN, I32_MAX)),
    kept("maxmemory-clients", "0", memory_or_percent),
    kept("maxmemory-samples", "5", |v| integer_between(v, 1, I32_MAX)),
    kept("repl-backlog-size", "1048576", repl_backlog_size),
    kept("save", "", save_points),
    // The encodings' thresholds: where collections move out of the store
    // (`thresholds.rs`); the compression depth and stream ones are only kept.
    aliased("list-max-listpack-size", "list-max-ziplist-size", "-2", |v| {
        integer_between(v, I32_MIN, I32_MAX)
    }),
    kept("list-compress-depth", "0", |v| integer_between(v, 0, I32_MAX)),
    aliased("hash-max-listpack-entries", "hash-max-ziplist-entries", "512", |v| {
        integer_between(v, 0, i64::MAX)
    }),
    aliased("hash-max-listpack-value", "hash-max-ziplist-value", "64", |v| {
        memory_between(v, 0, i64::MAX)
    }),
    kept("set-max-intset-entries", "512", |v| integer_between(v, 0, i64::MAX)),
    aliased("zset-max-listpack-entries", "zset-max-ziplist-entries", "128", |v| {
        integer_between(v, 0, i64::MAX)
    }),
    aliased("zset-max-listpack-value", "zset-max-ziplist-value", "64", |v| {
        memory_between(v, 0, i64::MAX)
    }),
    kept("stream-node-max-bytes", "4096", |v| memory_between(v, 0, i64::MAX)),
    kept("stream-node-max-entries", "100", |v| integer_between(v, 0, i64::MAX)),
    kept("sanitize-dump-payload", "no", |v| one_of(v, &["no", "yes", "clients"])),
    kept("latency-tracking", "yes", yes_or_no),
    kept("latency-tracking-info-percentiles", "50 99 99.9", percentiles),
    hidden("rdb-key-save-delay", "0", |v| integer_between(v, I32_MIN, I32_MAX)),
    aliased("replica-read-only", "slave-read-only", "yes", yes_or_no),
];

/// The kept parameter named `name` (canonical or alias, lower case), here or among those
/// Spinel has no use for (`config_absent`).
pub(super) fn find(name: &str) -> Option<&'static Kept> {
    all().find(|kept| kept.name == name || kept.alias == Some(name))
}

/// Every kept parameter.
pub(super) fn all() -> impl Iterator<Item = &'static Kept> {
    KEPT.iter().chain(super::config_absent::ABSENT)
}

/// Whether `name` is hidden from CONFIG GET's patterns.
pub(super) fn is_hidden(name: &str) -> bool {
    find(name).is_some_and(|kept| kept.hidden)
}

/// The current value of kept parameter `name`.
pub(super) fn value(shared: &Shared, name: &str) -> String {
    let values = shared.redis.kept_config.lock();
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
    let mut values = shared.redis.kept_config.lock();
    let current = values.iter_mut().find(|(n, _)| *n == name);
    // CONFIG SET client-output-buffer-limit replaces only the classes it names.
    let value = match (name, &current) {
        ("client-output-buffer-limit", _) => {
            let before = current.as_ref().map_or_else(
                || find(name).map_or("", |kept| kept.default).to_string(),
                |(_, v)| v.clone(),
            );
            super::config_checks::merge_output_buffer_limits(&before, &value)
        }
        _ => value,
    };
    // The encoding thresholds are read on every collection write: from atomics.
    let checked = find(name).map_or(Ok(String::new()), |kept| kept.check(value.as_bytes()));
    shared.redis.encoding_thresholds.apply(name, checked.as_deref().unwrap_or(&value));
    shared.core.repl.setting_changed(name, checked.as_deref().unwrap_or(&value));
    match current {
        Some(entry) => entry.1 = value,
        None => values.push((name, value)),
    }
}

pub(super) fn memory_between(value: &[u8], min: i64, max: i64) -> Result<String, String> {
    let Some(bytes) = memtoull_checked(value) else {
        return Err("argument must be a memory value".into());
    };
    if bytes < min as u64 || bytes > max as u64 {
        return Err(format!("argument must be between {min} and {max} inclusive"));
    }
    Ok(bytes.to_string())
}

/// Any memory value up to 2^64-1 (`maxmemory`'s range).
pub(super) fn memory_unsigned(value: &[u8]) -> Result<String, String> {
    memtoull_checked(value)
        .map(|bytes| bytes.to_string())
        .ok_or_else(|| "argument must be a memory value".to_string())
}

/// Redis's `memtoull`: digits (none is 0; too many saturate, as `strtoull` does) and an
/// optional unit (see [`memory_bytes`]); the product wraps as Redis's does, so
/// `17179869184gb` is 0 there and here.
pub(super) fn memtoull_checked(value: &[u8]) -> Option<u64> {
    let digits_end = value.iter().position(|b| !b.is_ascii_digit()).unwrap_or(value.len());
    let (digits, unit) = value.split_at(digits_end);
    let scale = memory_bytes(&[b"1", unit].concat())?;
    let n = digits.iter().fold(0u64, |n, d| {
        n.checked_mul(10).and_then(|n| n.checked_add(u64::from(d - b'0'))).unwrap_or(u64::MAX)
    });
    Some(n.wrapping_mul(scale))
}

/// An integer as Redis's `string2ll` reads one (no sign `+`, no leading zeros, no spaces).
pub(super) fn integer_between(value: &[u8], min: i64, max: i64) -> Result<String, String> {
    let Ok(n) = proto_resp::args::parse_i64(value) else {
        return Err("argument couldn't be parsed into an integer".into());
    };
    if !(min..=max).contains(&n) {
        return Err(format!("argument must be between {min} and {max} inclusive"));
    }
    Ok(n.to_string())
}

/// One of `words`, any case; shown in lower case.
pub(super) fn one_of(value: &[u8], words: &[&str]) -> Result<String, String> {
    match words.iter().find(|w| w.as_bytes().eq_ignore_ascii_case(value)) {
        Some(word) => Ok(word.to_string()),
        None => Err(format!("argument(s) must be one of the following: {}", words.join(", "))),
    }
}

pub(super) fn yes_or_no(value: &[u8]) -> Result<String, String> {
    one_of(value, &["yes", "no"]).map_err(|_| "argument must be 'yes' or 'no'".to_string())
}

/// `latency-tracking-info-percentiles`: numbers from 0 to 100 separated by single spaces,
/// or nothing; each shown as C's `%f` with its trailing zeros (and point) trimmed.
fn percentiles(value: &[u8]) -> Result<String, String> {
    if value.is_empty() {
        return Ok(String::new());
    }
    let mut shown = Vec::new();
    for word in value.split(|b| *b == b' ') {
        let Ok(percentile) = proto_resp::args::parse_f64(word) else {
            return Err("Invalid latency-tracking-info-percentiles parameters".into());
        };
        if !(0.0..=100.0).contains(&percentile) {
            let reason = "latency-tracking-info-percentiles parameters should sit between \
                          [0.0,100.0]";
            return Err(reason.into());
        }
        let fixed = format!("{percentile:.6}");
        shown.push(fixed.trim_end_matches('0').trim_end_matches('.').to_string());
    }
    Ok(shown.join(" "))
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

/// `repl-backlog-size`: a memory value of at least 1, which Redis raises to its 16 KiB
/// minimum backlog (and shows raised).
fn repl_backlog_size(value: &[u8]) -> Result<String, String> {
    let bytes: u64 = memory_between(value, 1, i64::MAX)?.parse().unwrap_or(1 << 20);
    Ok(bytes.max(16 * 1024).to_string())
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
            kept("maxmemory-samples").check(b"0").unwrap_err().as_str(),
            "argument must be between 1 and 2147483647 inclusive"
        );
        assert_eq!(kept("repl-backlog-size").check(b"1k"), Ok("16384".into()));
        assert_eq!(kept("save").check(b"3000 5"), Ok("3000 5".into()));
        assert_eq!(kept("save").check(b"3000"), Err("Invalid save parameters".into()));
        assert_eq!(kept("save").check(b"1  2"), Err("Invalid save parameters".into()));
        assert!(is_hidden("key-load-delay") && !is_hidden("repl-backlog-size"));
    }

    /// Goal: the encoding parameters take what Redis 7.0 takes (string2ll integers, memtoull
    /// sizes) and refuse the rest with its reasons; aliases are the same parameter.
    #[test]
    fn encoding_checks() {
        let check = |name, value: &str| find(name).unwrap().check(value.as_bytes());
        let between = |range: &str| Err(format!("argument must be between {range} inclusive"));
        let not_integer = Err("argument couldn't be parsed into an integer".to_string());
        assert_eq!(check("list-max-ziplist-size", "-5"), Ok("-5".into()));
        assert_eq!(find("list-max-ziplist-size").unwrap().name, "list-max-listpack-size");
        assert_eq!(
            check("list-max-listpack-size", "-2147483649"),
            between("-2147483648 and 2147483647")
        );
        for bad in ["+5", "05", "-0", " 5", "1k", "1.5", ""] {
            assert_eq!(check("list-compress-depth", bad), not_integer, "{bad:?}");
        }
        assert_eq!(check("list-compress-depth", "-1"), between("0 and 2147483647"));
        assert_eq!(check("hash-max-ziplist-entries", "-1"), between("0 and 9223372036854775807"));
        assert_eq!(
            check("set-max-intset-entries", "9223372036854775807"),
            Ok(i64::MAX.to_string())
        );
        assert_eq!(check("set-max-intset-entries", "9223372036854775808"), not_integer);
        assert_eq!(check("zset-max-ziplist-value", "1kb"), Ok("1024".into()));
        assert_eq!(check("hash-max-listpack-value", "007"), Ok("7".into()));
        assert_eq!(check("stream-node-max-bytes", ""), Ok("0".into()));
        assert_eq!(check("stream-node-max-bytes", "kb"), Ok("0".into()));
        assert_eq!(
            check("stream-node-max-bytes", "9223372036854775808"),
            between("0 and 9223372036854775807")
        );
        assert_eq!(
            check("stream-node-max-bytes", "18446744073709551616"),
            between("0 and 9223372036854775807")
        );
        assert_eq!(check("stream-node-max-bytes", "17179869184gb"), Ok("0".into()));
        for bad in ["-1", "+1", " 1", "1.5k", "1x"] {
            let memory = Err("argument must be a memory value".to_string());
            assert_eq!(check("hash-max-listpack-value", bad), memory, "{bad:?}");
        }
        assert_eq!(check("sanitize-dump-payload", "CLIENTS"), Ok("clients".into()));
        assert!(check("sanitize-dump-payload", "maybe").unwrap_err().ends_with("no, yes, clients"));
        assert_eq!(check("latency-tracking", "YES"), Ok("yes".into()));
        assert_eq!(
            check("latency-tracking-info-percentiles", "0.0 50.0 100.0"),
            Ok("0 50 100".into())
        );
        assert_eq!(
            check("latency-tracking-info-percentiles", "33.333333333 1e1"),
            Ok("33.333333 10".into())
        );
        assert_eq!(check("latency-tracking-info-percentiles", ""), Ok("".into()));
        for bad in ["1  2", " 1", "10 a", "nan"] {
            let invalid = Err("Invalid latency-tracking-info-percentiles parameters".to_string());
            assert_eq!(check("latency-tracking-info-percentiles", bad), invalid, "{bad:?}");
        }
        assert!(check("latency-tracking-info-percentiles", "101")
            .unwrap_err()
            .contains("[0.0,100.0]"));
        assert!(is_hidden("rdb-key-save-delay"));
    }
}
