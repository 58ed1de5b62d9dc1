//! Random picks for SPOP, SRANDMEMBER, HRANDFIELD and ZRANDMEMBER: one generator and one
//! way to draw distinct positions, shared by every collection however it is stored.

use std::{
    cell::Cell,
    collections::HashMap,
    hash::{BuildHasher, RandomState},
};

thread_local! {
    /// A per-thread xorshift state, seeded from the process's random hasher keys.
    static STATE: Cell<u64> = Cell::new(RandomState::new().hash_one(0x5eed_u64) | 1);
}

/// A random number below `n` (`n > 0`): xorshift64*, multiplied down to the range. Not for
/// anything secret; uniform enough for picking members.
pub(super) fn random_below(n: usize) -> usize {
    debug_assert!(n > 0);
    STATE.with(|state| {
        let mut x = state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
        ((u128::from(r) * n as u128) >> 64) as usize
    })
}

/// `wanted` distinct positions below `len` (`wanted <= len`), uniformly and in random
/// order: a partial Fisher-Yates shuffle whose moved slots are remembered in a map, so that
/// it costs O(wanted) however large the collection.
pub(super) fn distinct(len: usize, wanted: usize) -> Vec<usize> {
    debug_assert!(wanted <= len);
    let mut moved: HashMap<usize, usize> = HashMap::with_capacity(wanted * 2);
    (0..wanted)
        .map(|slot| {
            let other = slot + random_below(len - slot);
            let at_other = moved.get(&other).copied().unwrap_or(other);
            let at_slot = moved.get(&slot).copied().unwrap_or(slot);
            moved.insert(other, at_slot);
            at_other
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// Goal: distinct picks are distinct, in range and of the asked size, from a few of many
    /// to all of them.
    #[test]
    fn distinct_is_distinct() {
        for (len, wanted) in [(10, 9), (10, 10), (10, 1), (1000, 5), (1000, 400), (2, 1), (0, 0)] {
            let picks = distinct(len, wanted);
            let unique: HashSet<usize> = picks.iter().copied().collect();
            assert_eq!((picks.len(), unique.len()), (wanted, wanted));
            assert!(picks.iter().all(|&i| i < len));
        }
    }

    /// Goal: every position comes up, at about its share (the shuffle is not biased to the
    /// front or the back).
    #[test]
    fn picks_are_uniform() {
        let mut seen = [0u32; 7];
        for _ in 0..7000 {
            seen[random_below(7)] += 1;
        }
        assert!(seen.iter().all(|&n| (700..1300).contains(&n)), "{seen:?}");
        let mut first = [0u32; 5];
        for _ in 0..5000 {
            distinct(5, 3).iter().for_each(|&at| first[at] += 1);
        }
        assert!(first.iter().all(|&n| (2600..3400).contains(&n)), "{first:?}");
    }
}
