//! Crate-wide tests: wire tables, edges, split points, round trips, random inputs.

mod edges;
mod random;
mod requests;
mod responses;

use crate::{parse_request, ErrorReply, Limits, ParseError, Request};

/// A small, seedable PRNG (SplitMix64) so failures can be replayed from the printed seed.
pub(crate) struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }

    pub fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
}

/// The seed for a randomized test: `PROTO_MEMCACHE_SEED` if set, else a fixed one.
pub(crate) fn seed() -> u64 {
    std::env::var("PROTO_MEMCACHE_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed)
}

pub(crate) fn limits() -> Limits {
    Limits::default()
}

pub(crate) fn parse(wire: &[u8]) -> Result<(Request<'_>, usize), ParseError> {
    parse_request(wire, &limits())
}

pub(crate) fn client_error(skip: usize, reason: &'static str) -> ParseError {
    ParseError::Invalid { skip, reply: ErrorReply::ClientError(reason), noreply: false }
}

pub(crate) fn error(skip: usize) -> ParseError {
    ParseError::Invalid { skip, reply: ErrorReply::Error, noreply: false }
}

/// Every proper prefix of `wire` is `Incomplete` (or, for errors that swallow a block
/// still to come, the same error), and the whole parses to `expected`.
pub(crate) fn assert_split_points(
    wire: &[u8],
    expected: &Result<(Request<'_>, usize), ParseError>,
) {
    for split in 0..wire.len() {
        let outcome = parse(&wire[..split]);
        let same_error = expected.is_err() && outcome == *expected;
        assert!(
            outcome == Err(ParseError::Incomplete) || same_error,
            "prefix of {split} bytes of {:?}: {outcome:?}",
            String::from_utf8_lossy(wire)
        );
    }
    assert_eq!(parse(wire), *expected, "{:?}", String::from_utf8_lossy(wire));
}
