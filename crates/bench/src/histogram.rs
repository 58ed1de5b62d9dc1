//! Latency histograms: `hdrhistogram` with the bounds and precision this tool uses, and
//! the text form compare writes so that runs can be merged later.
//!
//! ```text
//!   values: nanoseconds, 1 ns .. 1 hour tracked (above that, recorded as 1 hour)
//!   precision: 2 significant digits in hdrhistogram's terms, which it meets with 128
//!              buckets per power of two: a reported value is within 1/128 (0.78%) of the
//!              true one, as with the hand-written log-linear histogram this replaced
//!   percentile: the highest value of its bucket, so it never understates a latency
//!   text form: hdrhistogram's V2 serialization, base64 (standard alphabet, padded)
//! ```

use base64::{engine::general_purpose::STANDARD, Engine as _};
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};

/// The histogram type every latency goes into.
pub type Histogram = hdrhistogram::Histogram<u64>;

/// Significant decimal digits asked of hdrhistogram. 2 gives 128 buckets per power of two
/// (8 bytes each): 3 would cut the error to 1/1024 but touch eight times the memory per
/// record, and a record is on the load generator's per-reply path.
pub const SIGNIFICANT_DIGITS: u8 = 2;
/// The largest latency told apart; longer ones are recorded as this.
pub const LATENCY_NS_MAX: u64 = 3_600 * 1_000_000_000;
/// The largest relative error of a reported percentile (one bucket's width).
pub const RELATIVE_ERROR_MAX: f64 = 1.0 / 128.0;

/// An empty latency histogram (ns).
pub fn latency_ns() -> Histogram {
    Histogram::new_with_bounds(1, LATENCY_NS_MAX, SIGNIFICANT_DIGITS)
        .expect("the bounds are constants that hdrhistogram accepts")
}

/// Adds `from`'s counts to `into`. Both come from [`latency_ns`], so their ranges match
/// and the addition cannot fail.
pub fn add(into: &mut Histogram, from: &Histogram) {
    into.add(from).expect("latency histograms share their bounds");
}

/// The value at quantile `q` (0..=1); 0 when empty.
pub fn quantile(histogram: &Histogram, q: f64) -> u64 {
    if histogram.is_empty() {
        return 0;
    }
    histogram.value_at_quantile(q.clamp(0.0, 1.0))
}

/// The V2 serialization of `histogram`, base64-encoded.
pub fn to_base64(histogram: &Histogram) -> String {
    let mut bytes = Vec::new();
    V2Serializer::new()
        .serialize(histogram, &mut bytes)
        .expect("serializing into memory does not fail for a bounded histogram");
    STANDARD.encode(bytes)
}

/// Reads back what [`to_base64`] wrote.
pub fn from_base64(text: &str) -> Result<Histogram, String> {
    let bytes = STANDARD.decode(text.trim()).map_err(|e| format!("histogram base64: {e}"))?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("histogram V2 data: {e:?}"))
}

/// Merges serialized histograms (e.g. the same workload from two compare runs) into one.
pub fn merge_base64<'a>(texts: impl IntoIterator<Item = &'a str>) -> Result<Histogram, String> {
    let mut merged = latency_ns();
    for text in texts {
        let histogram = from_base64(text)?;
        merged.add(&histogram).map_err(|e| format!("histogram out of range: {e:?}"))?;
    }
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{self, RngExt};

    /// Goal: percentiles are within the stated relative error of the exact ones and never
    /// below them. Method: random log-spread values, compared with a sorted copy.
    #[test]
    fn percentiles_within_bound() {
        let mut rng = rng::seeded(1);
        let mut histogram = latency_ns();
        let mut exact = Vec::new();
        for _ in 0..100_000 {
            let value = 1000 + (rng.random::<f64>().powi(4) * 50_000_000.0) as u64;
            histogram.saturating_record(value);
            exact.push(value);
        }
        exact.sort_unstable();
        for q in [0.5, 0.9, 0.99, 0.999, 0.9999, 1.0] {
            let rank = ((q * exact.len() as f64).ceil() as usize).max(1);
            let want = exact[rank - 1] as f64;
            let got = quantile(&histogram, q) as f64;
            assert!(got >= want && got <= want * (1.0 + RELATIVE_ERROR_MAX), "q {q}");
        }
        assert_eq!(quantile(&latency_ns(), 0.5), 0);
    }

    /// Goal: merging per-thread histograms equals recording everything in one.
    #[test]
    fn add_equals_single() {
        let (mut a, mut b, mut all) = (latency_ns(), latency_ns(), latency_ns());
        for v in 0..5000u64 {
            let v = v * v;
            let part = if v % 3 == 0 { &mut a } else { &mut b };
            part.saturating_record(v);
            all.saturating_record(v);
        }
        let mut merged = latency_ns();
        add(&mut merged, &a);
        add(&mut merged, &b);
        assert_eq!(merged, all);
        merged.saturating_record(u64::MAX);
        assert!(merged.max() >= LATENCY_NS_MAX);
        assert!(merged.max() as f64 <= LATENCY_NS_MAX as f64 * (1.0 + RELATIVE_ERROR_MAX));
    }

    /// Goal: the text form survives a round trip, and two runs' histograms merged from it
    /// count every value of both.
    #[test]
    fn base64_round_trip_and_merge() {
        let (mut first, mut second) = (latency_ns(), latency_ns());
        (1..=1000).for_each(|v| first.saturating_record(v * 1000));
        (1..=500).for_each(|v| second.saturating_record(v * 7919));
        let (first_text, second_text) = (to_base64(&first), to_base64(&second));
        assert_eq!(from_base64(&first_text).unwrap(), first);
        let merged = merge_base64([first_text.as_str(), second_text.as_str()]).unwrap();
        assert_eq!(merged.len(), 1500);
        assert_eq!(merged.max(), second.max());
        assert!(from_base64("not base64!").is_err());
    }
}
