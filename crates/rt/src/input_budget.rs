//! The loop's bound on partly received requests: the bytes its connections hold in input
//! tails (a large value arriving in pieces), counted as they change, not once a tick.
//!
//! ```text
//!   used <= limit:  every connection reads
//!   used >  limit:  a connection whose tail passes INPUT_SOLO_BYTES stops reading (held),
//!                   except one, the leader, which reads on so that its request completes
//!   leader done:    the oldest held connection leads; under the limit again: all resume
//! ```
//!
//! So the tails of a loop hold at most the limit, plus the leader's request, plus
//! `INPUT_SOLO_BYTES` and one receive per held connection; a burst of large sets on many
//! connections is taken a few at a time instead of all at once. While over, epoll reads at
//! most `INPUT_TIGHT_READ_BYTES` at a time (io_uring's receive buffers are small already). There is no deadlock: the leader
//! needs nothing but its own peer's bytes, and its request's end frees its tail.

use std::collections::VecDeque;

use crate::conn::Key;

/// A tail up to this size is never held: ordinary requests, and the start of a large one.
/// Small, because every connection may hold this much plus one read when it is held
/// (measured with 16 KiB and 64 KiB reads: 13 MiB of tails over 200 connections).
pub(crate) const INPUT_SOLO_BYTES: usize = 4 * 1024;
/// A tail past this is not held but read to its end: its memory is spent already, and
/// holding it would keep that memory for as long as it waits (io_uring's multishot receive
/// can bring in many buffers at once; measured: peaks of 80-87 MiB instead of 73-74 MiB at
/// -m 64 with 200 connections when such tails were held).
pub(crate) const INPUT_HOLD_MAX_BYTES: usize = 64 * 1024;
/// The most one read takes while the budget is over (see `Bounds::read_bytes`).
pub(crate) const INPUT_TIGHT_READ_BYTES: usize = 4 * 1024;

pub(crate) struct InputBudget {
    limit_bytes: usize,
    used_bytes: usize,
    /// The connection that reads on while the loop is over its limit.
    leader: Option<Key>,
    /// Held connections, oldest first (a key may be stale: its connection closed since).
    held: VecDeque<Key>,
    /// The leader's tail grew since the last [`InputBudget::take_stalled_leader`].
    leader_progressed: bool,
    /// Connections holding a tail now, and how many may (memcached's read buffers per
    /// thread, `-o read_buf_mem_limit`): a connection that would start one more is closed.
    tails: usize,
    tails_max: usize,
}

impl InputBudget {
    pub(crate) fn new(limit_bytes: usize, tails_max: usize) -> InputBudget {
        InputBudget {
            limit_bytes,
            used_bytes: 0,
            leader: None,
            held: VecDeque::new(),
            leader_progressed: false,
            tails: 0,
            tails_max,
        }
    }

    /// Whether a connection with no tail yet may start one (`counted` is what it holds).
    pub(crate) fn admits(&self, counted: usize) -> bool {
        counted > 0 || self.tails < self.tails_max
    }

    /// Connections holding a tail, and the bytes of all tails.
    pub(crate) fn tails(&self) -> (usize, usize) {
        (self.tails, self.used_bytes)
    }

    /// Records that connection `key`'s tail went from `*counted` to `now` bytes. A leader
    /// whose request completed (its tail back under the solo size) leads no more.
    pub(crate) fn account(&mut self, key: Key, counted: &mut usize, now: usize) {
        self.used_bytes = self.used_bytes - *counted + now;
        self.tails = self.tails + usize::from(now > 0) - usize::from(*counted > 0);
        if self.leader == Some(key) {
            self.leader_progressed |= now > *counted;
            if now <= INPUT_SOLO_BYTES {
                self.leader = None;
            }
        }
        *counted = now;
    }

    /// Whether connection `key`, not held yet, with a tail of `tail` bytes, must stop
    /// reading now (it is queued then); the first such connection while nobody leads becomes
    /// the leader instead.
    pub(crate) fn holds(&mut self, key: Key, tail: usize) -> bool {
        if tail <= INPUT_SOLO_BYTES || tail > INPUT_HOLD_MAX_BYTES || !self.over() {
            return false;
        }
        match self.leader {
            Some(leader) if leader == key => false,
            None => {
                self.leader = Some(key);
                false
            }
            Some(_) => {
                self.held.push_back(key);
                true
            }
        }
    }

    /// Whether the tails together are over the limit.
    pub(crate) fn over(&self) -> bool {
        self.used_bytes > self.limit_bytes
    }

    /// The next held connection that may read again: all of them once the loop is under its
    /// limit, else the oldest when nobody leads (it leads then). None when nothing changes.
    pub(crate) fn next_release(&mut self) -> Option<Key> {
        if self.used_bytes <= self.limit_bytes {
            return self.held.pop_front();
        }
        if self.leader.is_none() {
            let key = self.held.pop_front()?;
            self.leader = Some(key);
            self.leader_progressed = true; // a fresh leader gets a whole tick
            return Some(key);
        }
        None
    }

    /// The leader, if it received nothing since the last call: it leads no more (a client
    /// that stalls in the middle of a large value must not stall the others). The caller
    /// holds it again with [`InputBudget::requeue`] once the next leader is chosen.
    pub(crate) fn take_stalled_leader(&mut self) -> Option<Key> {
        let stalled = self.leader.filter(|_| !self.leader_progressed);
        self.leader_progressed = false;
        if stalled.is_some() {
            self.leader = None;
        }
        stalled
    }

    /// Queues a held connection again, behind the others.
    pub(crate) fn requeue(&mut self, key: Key) {
        self.held.push_back(key);
    }

    /// A connection closed (its tail already accounted as 0).
    pub(crate) fn forget(&mut self, key: Key) {
        if self.leader == Some(key) {
            self.leader = None;
        }
    }

    #[cfg(test)]
    pub(crate) fn used_bytes(&self) -> usize {
        self.used_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_over_the_count_are_refused() {
        let mut budget = InputBudget::new(usize::MAX, 2);
        let mut counted = [0usize; 3];
        assert!(budget.admits(counted[0]));
        budget.account(key(0), &mut counted[0], 10);
        budget.account(key(1), &mut counted[1], 20);
        assert_eq!(budget.tails(), (2, 30));
        assert!(!budget.admits(counted[2]), "a third tail is over the count");
        assert!(budget.admits(counted[0]), "a tail that grows is not a new one");
        budget.account(key(0), &mut counted[0], 0);
        assert!(budget.admits(counted[2]));
    }

    fn key(index: u32) -> Key {
        Key { index, gen: 0 }
    }

    #[test]
    fn one_leader_reads_on_and_the_held_follow_in_order() {
        let mut budget = InputBudget::new(100 * 1024, usize::MAX);
        let big = 60 * 1024;
        let mut counted = [0usize; 3];
        for i in 0..3u32 {
            budget.account(key(i), &mut counted[i as usize], big);
        }
        assert_eq!(budget.used_bytes(), 3 * big);
        assert!(!budget.holds(key(0), big), "the first over the limit leads");
        assert!(budget.holds(key(1), big));
        assert!(budget.holds(key(2), big));
        assert!(!budget.holds(key(0), big + 1));
        assert_eq!(budget.next_release(), None, "the leader is still busy");
        // The leader's request completes: the oldest held connection leads next.
        budget.account(key(0), &mut counted[0], 0);
        assert_eq!(budget.next_release(), Some(key(1)));
        assert_eq!(budget.next_release(), None);
        // Under the limit: everyone resumes.
        budget.account(key(1), &mut counted[1], 0);
        assert_eq!(budget.next_release(), Some(key(2)));
        assert_eq!(budget.next_release(), None);
        assert!(!budget.holds(key(2), big));
    }

    #[test]
    fn a_stalled_leader_gives_way() {
        let mut budget = InputBudget::new(0, usize::MAX);
        let (mut c0, mut c1) = (0, 0);
        budget.account(key(0), &mut c0, 50_000);
        budget.account(key(1), &mut c1, 50_000);
        assert!(!budget.holds(key(0), 50_000));
        assert!(budget.holds(key(1), 50_000));
        budget.account(key(0), &mut c0, 60_000);
        assert_eq!(budget.take_stalled_leader(), None, "it progressed");
        assert_eq!(budget.take_stalled_leader(), Some(key(0)));
        assert_eq!(budget.next_release(), Some(key(1)));
        budget.requeue(key(0));
        assert_eq!(budget.take_stalled_leader(), None, "a fresh leader gets a tick");
        budget.account(key(1), &mut c1, 0);
        assert_eq!(budget.next_release(), Some(key(0)), "the stalled one leads again");
    }

    #[test]
    fn small_tails_are_never_held() {
        let mut budget = InputBudget::new(0, usize::MAX);
        let mut counted = 0;
        budget.account(key(0), &mut counted, INPUT_SOLO_BYTES);
        assert!(!budget.holds(key(0), INPUT_SOLO_BYTES));
        budget.forget(key(0));
        assert_eq!(budget.next_release(), None);
    }
}
