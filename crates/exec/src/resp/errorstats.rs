//! Redis's error statistics: error replies counted by their first word (`ERR`,
//! `WRONGTYPE`, `OOM`), as `INFO errorstats` prints them.
//!
//! Counted where every reply is checked for an error (`resp::execute`), so a handler
//! never counts its own. One lock for all workers: only error replies take it.

use std::collections::BTreeMap;

use parking_lot::Mutex;

/// Distinct prefixes kept; Spinel's own error texts use a handful. Past this, a new prefix
/// is counted in the total only (Redis 7.2 stops tracking at the same number).
const PREFIXES_MAX: usize = 128;

/// How far into an error Redis looks for the space that ends its prefix.
const PREFIX_SCAN_BYTES: usize = 32;

#[derive(Debug, Default)]
pub struct ErrorStats {
    inner: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    /// Ordered as Redis prints them (its radix tree iterates in byte order).
    by_prefix: BTreeMap<Box<[u8]>, u64>,
    total: u64,
}

impl ErrorStats {
    /// Counts one error reply; `reply` is its wire form, from the leading `-`.
    pub fn note(&self, reply: &[u8]) {
        let body = reply.strip_prefix(b"-").unwrap_or(reply);
        let scanned = &body[..body.len().min(PREFIX_SCAN_BYTES - 1)];
        // Redis's fallback when no space ends a prefix early: ERR.
        let prefix = match scanned.iter().position(|&b| b == b' ') {
            Some(end) => &body[..end],
            None => b"ERR",
        };
        let mut counts = self.inner.lock();
        counts.total += 1;
        if let Some(count) = counts.by_prefix.get_mut(prefix) {
            *count += 1;
        } else if counts.by_prefix.len() < PREFIXES_MAX {
            counts.by_prefix.insert(prefix.into(), 1);
        }
    }

    /// (prefix, count) in the order INFO prints them, and the total of error replies.
    pub fn snapshot(&self) -> (Vec<(String, u64)>, u64) {
        let counts = self.inner.lock();
        let lines = counts
            .by_prefix
            .iter()
            .map(|(prefix, count)| (String::from_utf8_lossy(prefix).into_owned(), *count))
            .collect();
        (lines, counts.total)
    }

    /// `CONFIG RESETSTAT`.
    pub fn clear(&self) {
        *self.inner.lock() = Counts::default();
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorStats;

    /// Goal: the prefix is the first word; no space in the first 31 bytes means ERR.
    #[test]
    fn prefixes() {
        let stats = ErrorStats::default();
        stats.note(b"-ERR syntax error\r\n");
        stats.note(b"-WRONGTYPE Operation against a key\r\n");
        stats.note(b"-ERR no such key\r\n");
        stats.note(b"-ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGH x\r\n");
        let (lines, total) = stats.snapshot();
        assert_eq!(lines, vec![("ERR".to_string(), 3), ("WRONGTYPE".to_string(), 1)]);
        assert_eq!(total, 4);
        stats.clear();
        assert_eq!(stats.snapshot(), (vec![], 0));
    }
}
