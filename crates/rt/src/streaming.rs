//! The loop's list of streaming connections ([`crate::After::Stream`]), offered output at
//! every tick and every [`crate::Notifier`] wake.
//!
//! Removal is O(1): a closing connection only counts itself stale (its `STREAMING` flag is
//! cleared, its key stays listed), and the list drops stale keys in one pass once they are
//! half of it, before a walk. Each pass costs at most twice the removals since the last, so
//! 10,000 subscribers leaving at once cost O(10,000), not the O(n²) of a `retain` per close.

use crate::conn::Key;

pub(crate) struct Streaming {
    keys: Vec<Key>,
    /// Listed keys whose connection no longer streams (closed since it was listed).
    stale: usize,
}

impl Streaming {
    pub fn new() -> Self {
        Streaming { keys: Vec::new(), stale: 0 }
    }

    /// Lists a connection that has just started streaming (once per connection).
    pub fn push(&mut self, key: Key) {
        self.keys.push(key);
    }

    /// A listed connection stopped streaming (it closed); its key goes at the next compaction.
    pub fn removed(&mut self) {
        self.stale += 1;
        debug_assert!(self.stale <= self.keys.len());
    }

    /// Listed keys, stale ones included (the caller skips those).
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn get(&self, index: usize) -> Key {
        self.keys[index]
    }

    /// Drops the stale keys once they are at least half the list; `streams` says whether a
    /// key's connection still streams. Call it between walks, never during one.
    pub fn compact(&mut self, mut streams: impl FnMut(Key) -> bool) {
        if self.stale == 0 || self.stale * 2 < self.keys.len() {
            return;
        }
        let before = self.keys.len();
        self.keys.retain(|&key| streams(key));
        assert_eq!(before - self.keys.len(), self.stale, "stale count out of step");
        self.stale = 0;
        // After a crowd left, give its memory back.
        if self.keys.capacity() > 64 && self.keys.len() < self.keys.capacity() / 4 {
            self.keys.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    fn key(index: u32) -> Key {
        Key { index, gen: 0 }
    }

    /// Closing every one of n listed connections, with a walk (and a compaction attempt)
    /// after each close, visits O(n) keys in compactions, not O(n²).
    #[test]
    fn closing_all_costs_linear_work() {
        let n = 10_000;
        let mut list = Streaming::new();
        let mut live: HashSet<u32> = (0..n).collect();
        for i in 0..n {
            list.push(key(i));
        }
        let mut visits = 0usize;
        for i in 0..n {
            live.remove(&i);
            list.removed();
            list.compact(|k| {
                visits += 1;
                live.contains(&k.index)
            });
        }
        list.compact(|_| unreachable!("nothing left to drop"));
        assert!(visits <= 2 * n as usize, "{visits} visits for {n} closes");
        assert_eq!(list.len(), 0);
    }

    /// Compaction keeps exactly the keys that still stream, in order.
    #[test]
    fn compaction_keeps_live_keys_in_order() {
        let mut list = Streaming::new();
        for i in 0..6 {
            list.push(key(i));
        }
        for _ in [1, 3, 4] {
            list.removed();
        }
        list.compact(|k| ![1, 3, 4].contains(&k.index));
        let left: Vec<u32> = (0..list.len()).map(|i| list.get(i).index).collect();
        assert_eq!(left, [0, 2, 5]);
    }
}
