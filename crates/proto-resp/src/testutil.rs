//! Test helpers: a small seeded PRNG (no dependencies) and its seed source.

/// SplitMix64: tiny, fast, and good enough to drive property tests.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// A seed from `PROTO_RESP_SEED` if set (to replay a failure), else from the clock.
    pub(crate) fn seed() -> u64 {
        if let Some(seed) = std::env::var("PROTO_RESP_SEED").ok().and_then(|s| s.parse().ok()) {
            return seed;
        }
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        now.map(|d| d.as_nanos() as u64).unwrap_or(0x5eed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0); the modulo bias is irrelevant here.
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub(crate) fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }

    pub(crate) fn bytes(&mut self, len: usize, alphabet: &[u8]) -> Vec<u8> {
        (0..len).map(|_| alphabet[self.below(alphabet.len())]).collect()
    }
}

/// Runs `body` with a fresh seed and prints the seed if it panics.
pub(crate) fn with_seed(name: &str, body: impl FnOnce(&mut Rng)) {
    let seed = Rng::seed();
    let mut rng = Rng::new(seed);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&mut rng)));
    if let Err(panic) = result {
        eprintln!("{name} failed with seed {seed}; rerun with PROTO_RESP_SEED={seed}");
        std::panic::resume_unwind(panic);
    }
}
