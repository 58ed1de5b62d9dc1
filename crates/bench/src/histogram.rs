//! A log-linear latency histogram in the HDR style: bounded relative error, fixed memory,
//! O(1) record, mergeable across threads by adding counts.
//!
//! ```text
//!   value v (ns)            bucket
//!   v < 2^B                 v                                  exact
//!   2^e <= v < 2^(e+1)      (e-B+1) * 2^B + (v >> (e-B)) - 2^B  width 2^(e-B): error < 2^-B
//!   B = SUB_BUCKET_BITS = 7 -> relative error below 1/128 (0.78%), 7424 buckets (58 KiB)
//! ```
//!
//! A percentile is reported as the highest value its bucket can hold (clamped to the
//! largest value recorded), so it never understates a latency.

/// Bits of linear resolution within each power of two.
const SUB_BUCKET_BITS: u32 = 7;
const SUB_BUCKETS: u64 = 1 << SUB_BUCKET_BITS;
/// Buckets needed to cover every u64.
const BUCKETS: usize = ((64 - SUB_BUCKET_BITS + 1) as usize) << SUB_BUCKET_BITS;

/// The largest relative error of a reported percentile.
pub const RELATIVE_ERROR_MAX: f64 = 1.0 / SUB_BUCKETS as f64;

#[derive(Clone)]
pub struct Histogram {
    counts: Box<[u64]>,
    count: u64,
    sum: u128,
    min: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram").field("count", &self.count).field("max", &self.max).finish()
    }
}

fn bucket_of(value: u64) -> usize {
    if value < SUB_BUCKETS {
        return value as usize;
    }
    let exponent = 63 - value.leading_zeros();
    let shift = exponent - SUB_BUCKET_BITS;
    (((shift + 1) as usize) << SUB_BUCKET_BITS) + ((value >> shift) - SUB_BUCKETS) as usize
}

/// The highest value that falls in `bucket`.
fn bucket_high(bucket: usize) -> u64 {
    let group = (bucket >> SUB_BUCKET_BITS) as u32;
    if group == 0 {
        return bucket as u64;
    }
    let mantissa = (bucket as u64 & (SUB_BUCKETS - 1)) + SUB_BUCKETS;
    let shift = group - 1;
    (mantissa << shift) + ((1u64 << shift) - 1)
}

impl Histogram {
    pub fn new() -> Histogram {
        Histogram { counts: vec![0; BUCKETS].into_boxed_slice(), count: 0, sum: 0, min: 0, max: 0 }
    }

    pub fn record(&mut self, value: u64) {
        self.counts[bucket_of(value)] += 1;
        if self.count == 0 || value < self.min {
            self.min = value;
        }
        self.max = self.max.max(value);
        self.count += 1;
        self.sum += u128::from(value);
    }

    /// Adds `other`'s counts to this one (threads merge at the end of each interval).
    pub fn merge(&mut self, other: &Histogram) {
        if other.count == 0 {
            return;
        }
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts.iter()) {
            *mine += theirs;
        }
        self.min = if self.count == 0 { other.min } else { self.min.min(other.min) };
        self.max = self.max.max(other.max);
        self.count += other.count;
        self.sum += other.sum;
    }

    pub fn clear(&mut self) {
        if self.count > 0 {
            self.counts.fill(0);
        }
        (self.count, self.sum, self.min, self.max) = (0, 0, 0, 0);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    pub fn min(&self) -> u64 {
        self.min
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    /// The value at quantile `q` (0..=1): the smallest recorded bucket's high end such that
    /// at least `ceil(q * count)` values are at or below it; 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (bucket, &n) in self.counts.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return bucket_high(bucket).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{self, RngExt};

    /// Goal: bucket boundaries are continuous and every value's bucket holds it.
    #[test]
    fn buckets_are_contiguous() {
        for value in (0..100_000u64).chain([u64::MAX, u64::MAX - 1, 1 << 40, (1 << 40) - 1]) {
            let b = bucket_of(value);
            assert!(b < BUCKETS);
            assert!(bucket_high(b) >= value, "{value}");
            if b > 0 {
                assert!(bucket_high(b - 1) < value, "{value}");
            }
        }
    }

    /// Goal: percentiles are within the stated relative error of the exact ones. Method:
    /// random log-spread values, compared with a sorted copy.
    #[test]
    fn percentiles_within_bound() {
        let mut rng = rng::seeded(1);
        let mut h = Histogram::new();
        let mut exact = Vec::new();
        for _ in 0..100_000 {
            let v = 1000 + (rng.random::<f64>().powi(4) * 50_000_000.0) as u64;
            h.record(v);
            exact.push(v);
        }
        exact.sort_unstable();
        for q in [0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
            let rank = ((q * exact.len() as f64).ceil() as usize).max(1);
            let want = exact[rank - 1] as f64;
            let got = h.quantile(q) as f64;
            assert!(got >= want && got <= want * (1.0 + RELATIVE_ERROR_MAX), "q {q}");
        }
        assert_eq!(h.quantile(1.0), *exact.last().unwrap());
        assert_eq!(h.min(), exact[0]);
    }

    /// Goal: merging per-thread histograms equals recording everything in one.
    #[test]
    fn merge_equals_single() {
        let (mut a, mut b, mut all) = (Histogram::new(), Histogram::new(), Histogram::new());
        for v in 0..5000u64 {
            let v = v * v;
            if v % 3 == 0 {
                a.record(v)
            } else {
                b.record(v)
            }
            all.record(v);
        }
        let mut merged = Histogram::new();
        merged.merge(&a);
        merged.merge(&b);
        assert_eq!(merged.count(), all.count());
        assert_eq!((merged.min(), merged.max()), (all.min(), all.max()));
        for q in [0.1, 0.5, 0.99, 0.9999] {
            assert_eq!(merged.quantile(q), all.quantile(q));
        }
        merged.clear();
        assert_eq!((merged.count(), merged.quantile(0.5)), (0, 0));
        merged.record(7);
        assert_eq!((merged.min(), merged.max()), (7, 7));
    }
}
