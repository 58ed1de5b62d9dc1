//! Consumer groups: each group's last delivered ID and read counter, its pending entries
//! list (the PEL: delivered, not yet acknowledged), and its consumers, each with the IDs
//! of the PEL it owns. Redis 7.0's rules for the read counter and the lag
//! (`streamEstimateDistanceFromFirstEverEntry`, `streamRangeHasTombstones`) are here too.

use std::collections::{BTreeMap, BTreeSet};

use super::{StreamId, StreamValue};

/// A pending entry: who has it, when it was last delivered, how many times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub consumer: Box<[u8]>,
    pub delivery_time_ms: u64,
    pub delivery_count: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Consumer {
    /// When the consumer was last seen (created, or named by a read or claim).
    pub seen_time_ms: u64,
    pub pel: BTreeSet<StreamId>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Group {
    pub last_id: StreamId,
    /// Entries read through this group, if known (Redis's -1 is `None`).
    pub entries_read: Option<u64>,
    pub pel: BTreeMap<StreamId, Pending>,
    pub consumers: BTreeMap<Box<[u8]>, Consumer>,
    /// What the consumers and pending entries cost, kept as they change.
    charged: usize,
}

/// What a pending entry and a consumer cost beyond their names.
const PENDING_BYTES: usize = 96;
const CONSUMER_BYTES: usize = 96;

fn consumer_cost(name: &[u8]) -> usize {
    CONSUMER_BYTES + name.len()
}

/// A pending entry, in the group's PEL and its consumer's.
fn pending_cost(consumer: &[u8]) -> usize {
    PENDING_BYTES + consumer.len()
}

impl Group {
    pub fn new(last_id: StreamId, entries_read: Option<u64>) -> Group {
        Group { last_id, entries_read, ..Group::default() }
    }

    /// What this group named `name` is charged.
    #[inline]
    pub fn charged_bytes(&self, name: &[u8]) -> usize {
        128 + name.len() + self.charged
    }

    /// Counts the cost of every consumer and pending entry again (after a load).
    pub(crate) fn recount(&mut self) {
        let consumers: usize = self.consumers.keys().map(|name| consumer_cost(name)).sum();
        let pending: usize = self.pel.values().map(|p| pending_cost(&p.consumer)).sum();
        self.charged = consumers + pending;
    }

    /// The consumer named `name`, created (seen at `now_ms`) if new; whether it was new.
    pub fn consumer(&mut self, name: &[u8], now_ms: u64) -> (&mut Consumer, bool) {
        let created = !self.consumers.contains_key(name);
        if created {
            self.charged += consumer_cost(name);
            let consumer = Consumer { seen_time_ms: now_ms, pel: BTreeSet::new() };
            self.consumers.insert(Box::from(name), consumer);
        }
        (self.consumers.get_mut(name).expect("just made"), created)
    }

    /// Records the delivery of `id` to `consumer` at `now_ms`: a new pending entry, or one
    /// that changes hands (its count starts over, as Redis's XREADGROUP does).
    pub fn deliver(&mut self, id: StreamId, consumer: &[u8], now_ms: u64) {
        let pending =
            Pending { consumer: Box::from(consumer), delivery_time_ms: now_ms, delivery_count: 1 };
        self.charged += pending_cost(consumer);
        if let Some(old) = self.pel.insert(id, pending) {
            self.charged -= pending_cost(&old.consumer);
            if let Some(owner) = self.consumers.get_mut(&old.consumer) {
                owner.pel.remove(&id);
            }
        }
        if let Some(owner) = self.consumers.get_mut(consumer) {
            owner.pel.insert(id);
        }
    }

    /// Acknowledges `id`; whether it was pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        let Some(pending) = self.pel.remove(&id) else { return false };
        self.charged -= pending_cost(&pending.consumer);
        if let Some(owner) = self.consumers.get_mut(&pending.consumer) {
            owner.pel.remove(&id);
        }
        true
    }

    /// Moves pending entry `id` to `consumer` (which exists).
    pub fn hand_over(&mut self, id: StreamId, consumer: &[u8]) {
        let Some(pending) = self.pel.get_mut(&id) else { return };
        if &pending.consumer[..] != consumer {
            let old = std::mem::replace(&mut pending.consumer, Box::from(consumer));
            self.charged = self.charged + consumer.len() - old.len();
            if let Some(owner) = self.consumers.get_mut(&old) {
                owner.pel.remove(&id);
            }
        }
        if let Some(owner) = self.consumers.get_mut(consumer) {
            owner.pel.insert(id);
        }
    }

    /// Deletes consumer `name`, dropping its pending entries; how many it had.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let consumer = self.consumers.remove(name)?;
        self.charged -= consumer_cost(name);
        for id in &consumer.pel {
            if self.pel.remove(id).is_some() {
                self.charged -= pending_cost(name);
            }
        }
        Some(consumer.pel.len())
    }
}

impl StreamValue {
    /// Whether an entry between `start` and `end` (both included) may have been deleted
    /// (`streamRangeHasTombstones`: the largest deleted ID falls there).
    pub fn range_has_tombstones(&self, start: StreamId, end: StreamId) -> bool {
        if self.is_empty() || self.max_deleted_id == StreamId::MIN {
            return false;
        }
        if self.first_id() > self.max_deleted_id {
            return false;
        }
        start <= self.max_deleted_id && self.max_deleted_id <= end
    }

    /// `streamEstimateDistanceFromFirstEverEntry`: how many entries had been added up to
    /// `id`, when that can be told.
    pub fn entries_read_at(&self, id: StreamId) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.is_empty() && id <= self.last_id {
            return Some(self.entries_added);
        }
        if id == self.last_id {
            return Some(self.entries_added);
        } else if id > self.last_id {
            return None;
        }
        let first = self.first_id();
        if self.max_deleted_id == StreamId::MIN || self.max_deleted_id < first {
            if id < first {
                return Some(self.entries_added - self.len());
            } else if id == first {
                return Some(self.entries_added - self.len() + 1);
            }
        }
        None
    }

    /// A group's lag (`streamReplyWithCGLag`): entries not yet delivered, when known.
    pub fn lag(&self, group: &Group) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if let Some(read) = group.entries_read {
            if !self.range_has_tombstones(group.last_id, StreamId::MAX) {
                return Some(self.entries_added.wrapping_sub(read));
            }
        }
        self.entries_read_at(group.last_id).map(|read| self.entries_added.wrapping_sub(read))
    }

    /// Moves `group`'s last delivered ID to `id` (an entry being delivered past it) and
    /// keeps its read counter as Redis does.
    pub fn advance_group(&self, group: &mut Group, id: StreamId) {
        if id <= group.last_id {
            return;
        }
        match group.entries_read {
            Some(read) if !self.range_has_tombstones(id, StreamId::MAX) => {
                group.entries_read = Some(read + 1);
            }
            _ if self.entries_added != 0 => group.entries_read = self.entries_read_at(id),
            _ => {}
        }
        group.last_id = id;
    }
}
