//! A small seeded PRNG (SplitMix64) and the 64-bit mixer the value fill and the hashes use.
//! Every random choice of a run comes from a seed, so a run can be repeated exactly.

/// The SplitMix64 finaliser: a bijective mix of 64 bits.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// SplitMix64: one word of state, passes BigCrush, a few instructions per draw.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng { state: mix64(seed ^ GOLDEN) }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN);
        mix64(self.state)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; the bias is below 2^-32 for the sizes a
    /// benchmark uses). `n` must not be 0.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform in `[0, 1)` with 53 bits.
    pub fn unit_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: draws are reproducible from the seed and `below` stays in range and covers it.
    #[test]
    fn seeded_and_in_range() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        assert_eq!(a.next_u64(), b.next_u64());
        let mut seen = [0u32; 10];
        for _ in 0..10_000 {
            seen[a.below(10) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| (800..1200).contains(&n)), "{seen:?}");
        let x = a.unit_f64();
        assert!((0.0..1.0).contains(&x));
    }
}
