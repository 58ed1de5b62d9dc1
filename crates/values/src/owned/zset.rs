//! A sorted set kept outside the store: the members packed in a table (`slots.rs`: one
//! arena, found by hash; each entry the member's bytes and its score) beside the members
//! in (score, member) order, cut into blocks of at most [`BLOCK_MAX`] with a Fenwick tree
//! over the blocks' lengths, so that a member goes in or out in O(log n + BLOCK_MAX) and
//! the member at a rank, or the rank of a member, is found in O(log n): what Redis's
//! skiplist gives, with less per member.
//!
//! A block holds each member's score and its position in the table (16 bytes), so that
//! the order compares scores without leaving the block and reads a member's bytes only on
//! a tie. Before, each member was one shared allocation (`Arc<[u8]>`) that a hash table
//! and its block both pointed at: 152 bytes of RSS a member at 1,000 16-byte members
//! (`spinel-bench memory`), against Valkey's 103.

use std::{cmp::Ordering, ops::Range};

use super::slots::{varint_len, KeyOf, Slots};

/// The most members one block holds; a full block splits in two. Small enough that a
/// change moves little memory within a block, large enough that the blocks are few.
const BLOCK_MAX: usize = 128;

/// A block this short after a removal merges with a neighbour, so that deletions do not
/// leave many near-empty blocks.
const BLOCK_MIN: usize = BLOCK_MAX / 4;

/// How full a block is when a set is built whole: room for a few inserts before it splits.
const BLOCK_FILL: usize = BLOCK_MAX * 7 / 8;

/// A member's place in the order: its score and its position in the table.
#[derive(Debug, Clone, Copy)]
struct Node {
    score: f64,
    id: u32,
}

/// A table entry's key: the member, before its score's 8 bytes.
#[derive(Debug, Clone, Default)]
struct MemberKey;

impl KeyOf for MemberKey {
    #[inline]
    fn key(entry: &[u8]) -> &[u8] {
        &entry[..entry.len().saturating_sub(8)]
    }
}

/// The sorted set order: score first (`-0` equals `0`; never NaN), then the member's
/// bytes as `memcmp` compares them.
#[inline]
pub fn order(a_score: f64, a_member: &[u8], b_score: f64, b_member: &[u8]) -> Ordering {
    a_score.partial_cmp(&b_score).unwrap_or(Ordering::Equal).then_with(|| a_member.cmp(b_member))
}

#[derive(Debug, Clone, Default)]
pub struct ZSetValue {
    members: Slots<MemberKey>,
    blocks: Vec<Vec<Node>>,
    /// Fenwick tree over the blocks' lengths (1-based: `tree[0]` is unused).
    tree: Vec<usize>,
}

impl ZSetValue {
    /// A set of entries given in order, no member twice.
    #[inline]
    pub fn from_sorted<'a>(entries: impl IntoIterator<Item = (f64, &'a [u8])>) -> Self {
        let mut set = ZSetValue::default();
        let mut block = Vec::with_capacity(BLOCK_FILL);
        for (score, member) in entries {
            let node = set.add_member(member, canonical(score));
            block.push(node);
            if block.len() == BLOCK_FILL {
                set.blocks.push(std::mem::replace(&mut block, Vec::with_capacity(BLOCK_FILL)));
            }
        }
        if !block.is_empty() {
            block.shrink_to_fit();
            set.blocks.push(block);
        }
        set.rebuild_tree();
        set
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.members.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.members.find(member).map(|id| self.score_of(id))
    }

    /// Sets `member`'s score, adding it if new; its old score, if it had one.
    #[inline]
    pub fn insert(&mut self, member: &[u8], score: f64) -> Option<f64> {
        let score = canonical(score);
        let Some(id) = self.members.find(member) else {
            let node = self.add_member(member, score);
            self.link(node);
            return None;
        };
        let old = self.score_of(id);
        let node = self.unlink(old, member);
        self.members.replace(id, &[member, &score.to_le_bytes()]);
        self.link(Node { score, id: node.id });
        Some(old)
    }

    /// Removes `member`; its score, if it was there.
    #[inline]
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let id = self.members.find(member)?;
        let score = self.score_of(id);
        self.unlink(score, member);
        self.forget(member, id);
        Some(score)
    }

    /// `member`'s rank (0 for the lowest) and score.
    #[inline]
    pub fn rank(&self, member: &[u8]) -> Option<(usize, f64)> {
        let score = self.score(member)?;
        let (block, at) = self.locate(score, member);
        Some((self.prefix(block) + at, score))
    }

    /// The entry at `rank` (below [`ZSetValue::len`]).
    #[inline]
    pub fn get(&self, rank: usize) -> (f64, &[u8]) {
        let (block, at) = self.find(rank);
        let node = self.blocks[block][at];
        (node.score, self.member(node.id))
    }

    /// The number of entries, from the lowest, for which `pred` holds (it must hold for
    /// a prefix of the order and not after it).
    #[inline]
    pub fn partition_point(&self, mut pred: impl FnMut(f64, &[u8]) -> bool) -> usize {
        let mut holds = |node: &Node| pred(node.score, self.member(node.id));
        let block = self.blocks.partition_point(|b| holds(b.last().expect("blocks are not empty")));
        match self.blocks.get(block) {
            Some(nodes) => self.prefix(block) + nodes.partition_point(holds),
            None => self.len(),
        }
    }

    /// The entries from `rank` upward, in order.
    #[inline]
    pub fn iter_from(&self, rank: usize) -> impl Iterator<Item = (f64, &[u8])> {
        let (block, at) = if rank < self.len() { self.find(rank) } else { (self.blocks.len(), 0) };
        let nodes = self.blocks[block..].iter().flatten().skip(at);
        nodes.map(|node| (node.score, self.member(node.id)))
    }

    /// The entries from `rank` downward (`rank` included, below [`ZSetValue::len`]).
    #[inline]
    pub fn iter_down_from(&self, rank: usize) -> impl Iterator<Item = (f64, &[u8])> {
        let (block, at) = self.find(rank);
        let skip = self.blocks[block].len() - 1 - at;
        let nodes = self.blocks[..=block].iter().rev().flat_map(|b| b.iter().rev()).skip(skip);
        nodes.map(|node| (node.score, self.member(node.id)))
    }

    /// Every entry, in order.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = (f64, &[u8])> {
        self.iter_from(0)
    }

    /// Removes the entries at `ranks` and returns them, in order.
    #[inline]
    pub fn remove_ranks(&mut self, ranks: Range<usize>) -> Vec<(f64, Box<[u8]>)> {
        if ranks.is_empty() {
            return Vec::new();
        }
        let (first, from) = self.find(ranks.start);
        let (last, to) = self.find(ranks.end - 1);
        let mut nodes = Vec::with_capacity(ranks.len());
        for block in first..=last {
            let start = if block == first { from } else { 0 };
            let end = if block == last { to + 1 } else { self.blocks[block].len() };
            nodes.extend(self.blocks[block].drain(start..end));
            self.add(block, -((end - start) as isize));
        }
        let removed: Vec<(f64, Box<[u8]>)> =
            nodes.iter().map(|node| (node.score, Box::from(self.member(node.id)))).collect();
        // Only when a block emptied or merged does the tree need rebuilding (O(blocks)):
        // a pop from one end mostly leaves the blocks as they are.
        let mut reshaped = false;
        if first < last {
            let before = self.blocks.len();
            self.blocks.retain(|b| !b.is_empty());
            reshaped = self.blocks.len() != before;
        }
        let around = first.min(self.blocks.len().saturating_sub(1));
        if self.merge_small(around) || reshaped {
            self.rebuild_tree();
        }
        // The table last: renaming a moved member finds its node through whole blocks.
        for (_, member) in &removed {
            if let Some(id) = self.members.find(member) {
                self.forget(member, id);
            }
        }
        removed
    }

    /// The bytes of the member at `id` in the table.
    #[inline]
    fn member(&self, id: u32) -> &[u8] {
        MemberKey::key(self.members.nth(id as usize))
    }

    /// The score kept in the table for the member at `id`.
    #[inline]
    fn score_of(&self, id: usize) -> f64 {
        let entry = self.members.nth(id);
        let bytes = entry.get(entry.len().saturating_sub(8)..).unwrap_or_default();
        bytes.try_into().map_or(0.0, f64::from_le_bytes)
    }

    /// Adds a new member to the table; its node (not yet in the order).
    #[inline]
    fn add_member(&mut self, member: &[u8], score: f64) -> Node {
        let id = self.members.len() as u32;
        self.members.push(&[member, &score.to_le_bytes()]);
        Node { score, id }
    }

    /// Takes `member` (at `id`, already out of the order) out of the table. The table's
    /// last entry moves to `id`: its node, found by its score and bytes while they are
    /// still where it was, is renamed.
    #[inline]
    fn forget(&mut self, member: &[u8], id: usize) {
        let last = self.members.len() - 1;
        let moved_at =
            (id != last).then(|| self.locate(self.score_of(last), self.member(last as u32)));
        self.members.remove(member, false, |_| ());
        let Some((block, at)) = moved_at else { return };
        if let Some(node) = self.blocks.get_mut(block).and_then(|nodes| nodes.get_mut(at)) {
            if node.id as usize == last {
                node.id = id as u32;
            }
        }
    }

    /// How `node` compares with `(score, member)` in the order.
    #[inline]
    fn cmp_node(&self, node: &Node, score: f64, member: &[u8]) -> Ordering {
        match node.score.partial_cmp(&score) {
            Some(Ordering::Equal) | None => self.member(node.id).cmp(member),
            Some(other) => other,
        }
    }

    /// The block that holds (or would hold) `(score, member)` and its place there.
    #[inline]
    fn locate(&self, score: f64, member: &[u8]) -> (usize, usize) {
        let below = |node: &Node| self.cmp_node(node, score, member) == Ordering::Less;
        let last = self.blocks.len().saturating_sub(1);
        let block = self.blocks.partition_point(|b| below(b.last().expect("blocks are not empty")));
        let block = block.min(last);
        match self.blocks.get(block) {
            Some(nodes) => (block, nodes.partition_point(below)),
            None => (0, 0),
        }
    }

    /// Puts `node` in its place in the order. A full block splits in two, except that an
    /// entry past the end of the last one starts a block of its own, so that members added
    /// in order (time stamps, counters) fill their blocks.
    #[inline]
    fn link(&mut self, node: Node) {
        if self.blocks.is_empty() {
            self.blocks.push(vec![node]);
            return self.rebuild_tree();
        }
        let member = self.member(node.id);
        let (mut block, mut at) = self.locate(node.score, member);
        let len = self.blocks[block].len();
        if len >= BLOCK_MAX && at == len && block + 1 == self.blocks.len() {
            self.blocks.push(vec![node]);
            return self.rebuild_tree();
        }
        if len >= BLOCK_MAX {
            let half = len / 2;
            let right: Vec<Node> = self.blocks[block].drain(half..).collect();
            self.blocks[block].shrink_to_fit();
            self.blocks.insert(block + 1, right);
            self.rebuild_tree();
            if at > half {
                (block, at) = (block + 1, at - half);
            }
        }
        self.blocks[block].insert(at, node);
        self.add(block, 1);
    }

    /// Takes the node of `(score, member)` out of the order.
    #[inline]
    fn unlink(&mut self, score: f64, member: &[u8]) -> Node {
        let (block, at) = self.locate(score, member);
        let node = self.blocks[block].remove(at);
        debug_assert!(self.member(node.id) == member);
        if self.merge_small(block) {
            self.rebuild_tree();
        } else {
            self.add(block, -1);
        }
        node
    }

    /// Merges block `block`, when short, with the shorter of its neighbours if they fit
    /// in one block; removes it when empty. Whether it did (then the tree must be rebuilt).
    #[inline]
    fn merge_small(&mut self, block: usize) -> bool {
        let Some(len) = self.blocks.get(block).map(Vec::len) else { return false };
        if len == 0 {
            self.blocks.remove(block);
            return true;
        }
        if len >= BLOCK_MIN {
            return false;
        }
        let neighbour_len = |at: usize| self.blocks.get(at).map_or(usize::MAX, Vec::len);
        let before = block.checked_sub(1).map_or(usize::MAX, neighbour_len);
        let after = neighbour_len(block + 1);
        let left = if before <= after { block.checked_sub(1) } else { Some(block) };
        let fits = len.saturating_add(before.min(after)) <= BLOCK_FILL;
        let Some(left) = left.filter(|_| fits) else { return false };
        let right = self.blocks.remove(left + 1);
        self.blocks[left].extend(right);
        true
    }

    #[inline]
    fn rebuild_tree(&mut self) {
        let blocks = self.blocks.len();
        self.tree.clear();
        self.tree.resize(blocks + 1, 0);
        for i in 1..=blocks {
            self.tree[i] += self.blocks[i - 1].len();
            let parent = i + (i & i.wrapping_neg());
            if parent <= blocks {
                self.tree[parent] += self.tree[i];
            }
        }
    }

    #[inline]
    fn add(&mut self, block: usize, delta: isize) {
        let mut i = block + 1;
        while i < self.tree.len() {
            self.tree[i] = self.tree[i].wrapping_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// How many entries the blocks before `block` hold.
    #[inline]
    fn prefix(&self, block: usize) -> usize {
        let (mut i, mut sum) = (block, 0);
        while i > 0 {
            sum += self.tree[i];
            i -= i & i.wrapping_neg();
        }
        sum
    }

    /// The block that holds `rank` (below the length) and its place there.
    #[inline]
    fn find(&self, rank: usize) -> (usize, usize) {
        let blocks = self.tree.len() - 1;
        let (mut block, mut rest) = (0, rank);
        let mut step = if blocks == 0 { 0 } else { 1 << blocks.ilog2() };
        while step > 0 {
            let next = block + step;
            if next <= blocks && self.tree[next] <= rest {
                block = next;
                rest -= self.tree[next];
            }
            step >>= 1;
        }
        (block, rest)
    }
}

/// `-0` as `0`, as Redis reads a score of `-0` back.
#[inline]
fn canonical(score: f64) -> f64 {
    if score == 0.0 {
        0.0
    } else {
        score
    }
}

/// What a sorted set member is charged: its entry in the table (its bytes, its score and
/// their length, as a hash field's: see `hash_field_bytes`, with the table's slots) and its
/// node in a block (16 bytes), twice over for a block's spare capacity (a block is at
/// least half full of what it has room for: it is cut to size when it splits and grows
/// by doubling).
#[inline]
pub fn zset_member_bytes(len: usize) -> usize {
    const NODE_BYTES: usize = 16 * 2;
    let entry = len + 8;
    let stored = entry + varint_len(entry);
    super::SLOT_TABLE_BYTES + stored + (stored * 2).div_ceil(15) + NODE_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A plain model: (score bits made orderable, member) -> ().
    fn model_order(model: &BTreeMap<Vec<u8>, f64>) -> Vec<(f64, Vec<u8>)> {
        let mut entries: Vec<(f64, Vec<u8>)> = model.iter().map(|(m, &s)| (s, m.clone())).collect();
        entries.sort_by(|a, b| order(a.0, &a.1, b.0, &b.1));
        entries
    }

    fn check(set: &ZSetValue, model: &BTreeMap<Vec<u8>, f64>) {
        let want = model_order(model);
        let got: Vec<(f64, Vec<u8>)> = set.iter().map(|(s, m)| (s, m.to_vec())).collect();
        assert_eq!(got, want);
        assert_eq!(set.len(), want.len());
        for (rank, (score, member)) in want.iter().enumerate() {
            assert_eq!(set.rank(member), Some((rank, *score)));
            assert_eq!(set.get(rank), (*score, &member[..]));
        }
        if let Some(last) = want.len().checked_sub(1) {
            let down: Vec<(f64, Vec<u8>)> =
                set.iter_down_from(last).map(|(s, m)| (s, m.to_vec())).collect();
            assert_eq!(down, want.iter().rev().cloned().collect::<Vec<_>>());
        }
        assert!(set.blocks.iter().all(|b| !b.is_empty() && b.len() <= BLOCK_MAX));
        for (id, entry) in set.members.iter().enumerate() {
            let member = MemberKey::key(entry);
            assert_eq!(set.members.find(member), Some(id));
            let (block, at) = set.locate(set.score_of(id), member);
            assert_eq!(set.blocks[block][at].id as usize, id);
        }
    }

    /// Goal: random inserts, score changes, removals and range removals keep the order,
    /// the ranks and the scores equal to a plain model's, across block splits and merges.
    /// Method: seeded xorshift; a few thousand steps, checked whole every so often.
    #[test]
    fn matches_a_model() {
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let (mut set, mut model) = (ZSetValue::default(), BTreeMap::new());
        for step in 0..6000 {
            let member = format!("m{}", next(900)).into_bytes();
            let score = next(50) as f64 - 25.0;
            match next(10) {
                0..=5 => assert_eq!(set.insert(&member, score), model.insert(member, score)),
                6..=8 => assert_eq!(set.remove(&member), model.remove(&member)),
                _ => {
                    let len = set.len() as u64;
                    let start = next(len + 1) as usize;
                    let end = (start + next(40) as usize).min(set.len());
                    let want: Vec<(f64, Vec<u8>)> = model_order(&model)[start..end].to_vec();
                    let got: Vec<(f64, Vec<u8>)> = set
                        .remove_ranks(start..end)
                        .into_iter()
                        .map(|(s, m)| (s, m.into_vec()))
                        .collect();
                    assert_eq!(got, want);
                    want.iter().for_each(|(_, m)| {
                        model.remove(m);
                    });
                }
            }
            if step % 500 == 0 {
                check(&set, &model);
            }
        }
        check(&set, &model);
        let rebuilt = ZSetValue::from_sorted(set.iter());
        check(&rebuilt, &model);
    }

    /// Goal: a partition point and the walks from a rank agree with a slice's.
    #[test]
    fn partition_and_walks() {
        let names: Vec<Vec<u8>> = (0..1000).map(|i| format!("{i:04}").into_bytes()).collect();
        let set = ZSetValue::from_sorted(names.iter().map(|m| (1.0, &m[..])));
        assert_eq!(set.partition_point(|_, m| m < &b"0500"[..]), 500);
        assert_eq!(set.partition_point(|_, _| true), 1000);
        assert_eq!(set.partition_point(|_, _| false), 0);
        let up: Vec<&[u8]> = set.iter_from(998).map(|(_, m)| m).collect();
        assert_eq!(up, [&b"0998"[..], b"0999"]);
        assert_eq!(set.iter_from(1000).count(), 0);
        let down: Vec<&[u8]> = set.iter_down_from(1).map(|(_, m)| m).collect();
        assert_eq!(down, [&b"0001"[..], b"0000"]);
        let mut set = set;
        assert_eq!(set.insert(b"0001", -0.0), Some(1.0));
        assert!(set.score(b"0001").unwrap().is_sign_positive());
        assert_eq!(set.rank(b"0001"), Some((0, 0.0)));
    }
}
