//! Where a key's two buckets are in a table of a given size: its home by the hash position,
//! its second one in the home's block (see the module doc of `index`). Shifts, multiplies
//! and compares only, no division, at every table size: the read ahead computes both for
//! every key of a batch.

use super::{HashParts, BLOCK_BUCKETS, MIX_BITS};

/// The home bucket of hash position `pos` in a table of `buckets`.
#[inline]
pub(super) fn home_bucket(buckets: usize, pos: u32) -> usize {
    ((u64::from(pos) * buckets as u64) >> 32) as usize
}

/// The block holding `bucket` in a table of `buckets`, as a range of buckets: blocks of
/// exactly [`BLOCK_BUCKETS`] from bucket 0, the remainder folded into the last one (so it
/// holds `BLOCK_BUCKETS..2 * BLOCK_BUCKETS` buckets; a smaller table is one block). Found by
/// shifts and one compare, no division: a lookup's second bucket comes from it.
#[inline]
pub(super) fn block_of(buckets: usize, bucket: usize) -> std::ops::Range<usize> {
    let last_start = buckets.saturating_sub(BLOCK_BUCKETS) / BLOCK_BUCKETS * BLOCK_BUCKETS;
    let start = (bucket / BLOCK_BUCKETS * BLOCK_BUCKETS).min(last_start);
    let end = if start == last_start { buckets } else { start + BLOCK_BUCKETS };
    start..end
}

/// A key's two buckets in a table of `buckets`, home first.
#[inline]
pub(super) fn candidates(buckets: usize, hash: HashParts) -> [usize; 2] {
    let home = home_bucket(buckets, hash.pos);
    [home, alternate(buckets, home, hash)]
}

/// The key's second bucket, in the block of its home bucket, never the home: a step of
/// `1..size` buckets on, wrapping within the block. The step scales [`MIX_BITS`] hash bits
/// by a multiply and a shift and the wrap is a conditional subtract, so a table of any size
/// finds it without a division (the `%` of the earlier arithmetic took about half of a read
/// ahead's time in tables not a multiple of the block).
#[inline]
pub(super) fn alternate(buckets: usize, home: usize, hash: HashParts) -> usize {
    let block = block_of(buckets, home);
    let size = block.len();
    let mix = (hash.stripe_bits ^ u32::from(hash.tag)) as usize;
    debug_assert!(mix < 1 << MIX_BITS && size >= 2);
    let step = 1 + ((mix * (size - 1)) >> MIX_BITS);
    let at = home + step;
    if at >= block.end {
        at - size
    } else {
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{HashParts, Table};

    /// The block and second-bucket arithmetic written plainly, with divisions.
    fn alternate_by_blocks(table: &Table, home: usize, hash: HashParts) -> (usize, usize) {
        let blocks = (table.buckets / BLOCK_BUCKETS).max(1);
        let block = (home / BLOCK_BUCKETS).min(blocks - 1);
        let start = block * BLOCK_BUCKETS;
        let size = if block == blocks - 1 { table.buckets - start } else { BLOCK_BUCKETS };
        let mix = (hash.stripe_bits ^ u32::from(hash.tag)) as usize;
        let step = 1 + mix * (size - 1) / (1 << MIX_BITS);
        (start, start + (home - start + step) % size)
    }

    // Goal: the division-free arithmetic puts every key in the same second bucket as the
    // plain one, for tables of whole blocks and others, small and large; the second bucket
    // is never the home one and lies in its block, and blocks tile the table.
    #[test]
    fn alternate_bucket_matches_block_arithmetic() {
        for buckets in [2, 3, 16, 63, 64, 65, 127, 128, 129, 1024, 1100, 4096 + 7, 4096 + 63] {
            let table = Table::new(buckets).expect("map a table");
            for i in 0u64..5000 {
                let hash = HashParts::of(&i.to_le_bytes());
                let home = table.home(hash.pos);
                let alternate = table.alternate(home, hash);
                let (start, plain) = alternate_by_blocks(&table, home, hash);
                assert_eq!(alternate, plain, "{buckets} {i}");
                assert_ne!(alternate, home);
                assert_eq!(table.block_of(home).start, start);
                assert!(table.block_of(home).contains(&alternate));
            }
            let mut next = 0;
            while next < buckets {
                let block = table.block_of(next);
                assert_eq!(block.start, next, "{buckets}");
                assert!(
                    block.len() >= BLOCK_BUCKETS.min(buckets) && block.len() < 2 * BLOCK_BUCKETS
                );
                next = block.end;
            }
            assert_eq!(next, buckets);
        }
    }

    // Goal: every step 1..size is used in a block, evenly enough that two choices balance.
    #[test]
    fn alternate_steps_spread_over_the_block() {
        let table = Table::new(100).expect("map a table");
        let mut seen = [0usize; 100];
        for i in 0u64..200_000 {
            let hash = HashParts::of(&i.to_le_bytes());
            let home = table.home(hash.pos);
            seen[(table.alternate(home, hash) + 100 - home) % 100] += 1;
        }
        let counts = &seen[1..];
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        assert!(seen[0] == 0 && *min > 0 && *max < min + min / 4, "{min}..{max}");
    }
}
