//! Value sizes: fixed, a uniform range, or a weighted list (`100:3,1000:1`: three of every
//! four values are 100 bytes).

use crate::rng::{Rng, RngExt};

#[derive(Debug, Clone, PartialEq)]
pub enum ValueSizes {
    Fixed(usize),
    /// Uniform over `min..=max`.
    Range {
        min: usize,
        max: usize,
    },
    /// (size, weight) pairs; weights are relative.
    Weighted(Vec<(usize, u32)>),
}

impl ValueSizes {
    /// Parses `N`, `MIN-MAX` or `SIZE:WEIGHT,SIZE:WEIGHT,...`.
    pub fn parse(text: &str) -> Result<ValueSizes, String> {
        let num = |s: &str| s.trim().parse::<usize>().map_err(|_| format!("bad size {s:?}"));
        if text.contains(':') {
            let mut list = Vec::new();
            for part in text.split(',') {
                let (size, weight) = part.split_once(':').ok_or(format!("bad entry {part:?}"))?;
                let weight =
                    weight.trim().parse::<u32>().map_err(|_| format!("bad weight {part:?}"))?;
                list.push((num(size)?, weight));
            }
            if list.iter().map(|&(_, w)| u64::from(w)).sum::<u64>() == 0 {
                return Err("weights sum to 0".into());
            }
            return Ok(ValueSizes::Weighted(list));
        }
        if let Some((min, max)) = text.split_once('-') {
            let (min, max) = (num(min)?, num(max)?);
            if min > max {
                return Err(format!("empty range {text}"));
            }
            return Ok(ValueSizes::Range { min, max });
        }
        Ok(ValueSizes::Fixed(num(text)?))
    }

    pub fn max(&self) -> usize {
        match self {
            ValueSizes::Fixed(n) => *n,
            ValueSizes::Range { max, .. } => *max,
            ValueSizes::Weighted(list) => list.iter().map(|&(s, _)| s).max().unwrap_or(0),
        }
    }

    pub fn pick(&self, rng: &mut Rng) -> usize {
        match self {
            ValueSizes::Fixed(n) => *n,
            ValueSizes::Range { min, max } => {
                min + rng.random_range(0..(max - min + 1) as u64) as usize
            }
            ValueSizes::Weighted(list) => {
                let total: u64 = list.iter().map(|&(_, w)| u64::from(w)).sum();
                let mut at = rng.random_range(0..total);
                for &(size, weight) in list {
                    if at < u64::from(weight) {
                        return size;
                    }
                    at -= u64::from(weight);
                }
                unreachable!("a draw below the total weight lands in some entry")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_forms() {
        assert_eq!(ValueSizes::parse("32"), Ok(ValueSizes::Fixed(32)));
        assert_eq!(ValueSizes::parse("10-20"), Ok(ValueSizes::Range { min: 10, max: 20 }));
        assert_eq!(
            ValueSizes::parse("100:3,1000:1"),
            Ok(ValueSizes::Weighted(vec![(100, 3), (1000, 1)]))
        );
        assert!(ValueSizes::parse("20-10").is_err());
        assert!(ValueSizes::parse("1:0").is_err());
        assert!(ValueSizes::parse("x").is_err());
    }

    /// Goal: draws respect the range and the weights.
    #[test]
    fn draws() {
        let mut rng = crate::rng::seeded(3);
        let range = ValueSizes::Range { min: 10, max: 12 };
        let mut seen = [0u32; 13];
        for _ in 0..3000 {
            seen[range.pick(&mut rng)] += 1;
        }
        assert!(seen[10..].iter().all(|&n| n > 850), "{seen:?}");
        let weighted = ValueSizes::Weighted(vec![(100, 3), (1000, 1)]);
        let small = (0..40_000).filter(|_| weighted.pick(&mut rng) == 100).count();
        assert!((29_000..31_000).contains(&small), "{small}");
        assert_eq!(weighted.max(), 1000);
    }
}
