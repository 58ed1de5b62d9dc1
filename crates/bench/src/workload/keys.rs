//! Key choice (uniform, zipf, sequential) and the key bytes for a key id.
//!
//! Key ids are `0..keyspace`. A key id becomes `key:000…<id>` padded with zeros to the key
//! size (or only digits when the size leaves no room for the prefix), so every key has
//! exactly the requested length.

use crate::rng::{Rng, RngExt};

/// memcached's key limit; the longest key composed here.
pub const KEY_LEN_MAX: usize = 250;
const PREFIX: &[u8] = b"key:";

/// How keys are drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KeyDistribution {
    Uniform,
    /// Rank r (1 = hottest, key id r-1) drawn with probability proportional to r^-exponent.
    Zipf {
        exponent: f64,
    },
    /// Key ids in order, wrapping at the end of the key space.
    Sequential,
}

/// Draws key ids for one thread.
#[derive(Debug, Clone)]
pub struct KeyPicker {
    keyspace: u64,
    kind: Picker,
}

#[derive(Debug, Clone)]
enum Picker {
    Uniform,
    Zipf(Zipf),
    Sequential { next: u64 },
}

impl KeyPicker {
    /// `start` is where a sequential walk begins (threads start at different offsets).
    pub fn new(distribution: KeyDistribution, keyspace: u64, start: u64) -> KeyPicker {
        assert!(keyspace > 0, "an empty key space");
        let kind = match distribution {
            KeyDistribution::Uniform => Picker::Uniform,
            KeyDistribution::Zipf { exponent } => Picker::Zipf(Zipf::new(keyspace, exponent)),
            KeyDistribution::Sequential => Picker::Sequential { next: start % keyspace },
        };
        KeyPicker { keyspace, kind }
    }

    pub fn next(&mut self, rng: &mut Rng) -> u64 {
        match &mut self.kind {
            Picker::Uniform => rng.random_range(0..self.keyspace),
            Picker::Zipf(zipf) => zipf.sample(rng) - 1,
            Picker::Sequential { next } => {
                let id = *next;
                *next = (id + 1) % self.keyspace;
                id
            }
        }
    }
}

/// Zipf over ranks `1..=n` by rejection-inversion (W. Hörmann and G. Derflinger, "Rejection-
/// inversion to generate variates from monotone discrete distributions", 1996): O(1) memory
/// and a few floating-point operations per draw for any `n`, exponents >= 0.
#[derive(Debug, Clone)]
struct Zipf {
    n: f64,
    exponent: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    s: f64,
}

impl Zipf {
    fn new(n: u64, exponent: f64) -> Zipf {
        assert!(exponent >= 0.0 && exponent.is_finite(), "zipf exponent must be >= 0");
        let mut z = Zipf { n: n as f64, exponent, h_integral_x1: 0.0, h_integral_n: 0.0, s: 0.0 };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(z.n + 0.5);
        z.s = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        z
    }

    fn sample(&self, rng: &mut Rng) -> u64 {
        // Bounded: the acceptance probability is high for every exponent (> 0.5 even in the
        // worst case), so 64 rounds failing is beyond reason; fall back to the hottest key.
        for _ in 0..64 {
            let u =
                self.h_integral_n + rng.random::<f64>() * (self.h_integral_x1 - self.h_integral_n);
            let x = self.h_integral_inverse(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.s || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
        1
    }

    /// H(x) = integral of h from 1 to x, h(x) = x^-exponent (written to stay exact near
    /// exponent 1).
    fn h_integral(&self, x: f64) -> f64 {
        let log_x = x.ln();
        helper2((1.0 - self.exponent) * log_x) * log_x
    }

    fn h(&self, x: f64) -> f64 {
        (-self.exponent * x.ln()).exp()
    }

    fn h_integral_inverse(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.exponent)).max(-1.0);
        (helper1(t) * x).exp()
    }
}

/// ln(1+x)/x, continuous at 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x - 1)/x, continuous at 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x * (1.0 / 3.0) * (1.0 + 0.25 * x))
    }
}

/// Whether every byte of `bytes` is `b'0'`, eight at a time (a long key is mostly padding).
fn all_zero_digits(bytes: &[u8]) -> bool {
    const ZEROS: u64 = u64::from_ne_bytes([b'0'; 8]);
    let mut words = bytes.chunks_exact(8);
    let words_ok = words.all(|w| u64::from_ne_bytes(w.try_into().expect("8 bytes")) == ZEROS);
    words_ok && words.remainder().iter().all(|&b| b == b'0')
}

/// Turns key ids into key bytes: of one fixed length, or of a length in a range that is a
/// fixed function of the id (so every get asks for the key a set wrote).
#[derive(Debug, Clone, Copy)]
pub struct KeyFormat {
    key_size: usize,
    /// Longest key; equal to `key_size` for fixed-size keys.
    key_size_max: usize,
    /// Digits the largest id needs.
    digits_needed: usize,
}

/// A composed key on the stack (no allocation per request).
pub struct KeyBuf {
    bytes: [u8; KEY_LEN_MAX],
    len: usize,
}

impl KeyBuf {
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

fn digits(mut n: u64) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

impl KeyFormat {
    /// Fails when `key_size` cannot hold the largest key id of `keyspace`.
    pub fn new(key_size: usize, keyspace: u64) -> Result<KeyFormat, String> {
        KeyFormat::with_range(key_size, key_size, keyspace)
    }

    /// Keys of `key_size_min..=key_size_max` bytes, uniformly spread over key ids.
    pub fn with_range(
        key_size_min: usize,
        key_size_max: usize,
        keyspace: u64,
    ) -> Result<KeyFormat, String> {
        let need = digits(keyspace.saturating_sub(1));
        if key_size_max > KEY_LEN_MAX || key_size_min < need || key_size_min > key_size_max {
            return Err(format!(
                "--key-size {key_size_min}-{key_size_max}: must be within {need}..={KEY_LEN_MAX} \
                 for a key space of {keyspace}"
            ));
        }
        Ok(KeyFormat { key_size: key_size_min, key_size_max, digits_needed: need })
    }

    /// The shortest key (the only size, for fixed-size keys).
    pub fn key_size(&self) -> usize {
        self.key_size
    }

    /// The length of key `id`: fixed, or a hash of the id into the range.
    pub fn key_len(&self, id: u64) -> usize {
        let span = (self.key_size_max - self.key_size + 1) as u64;
        if span == 1 {
            return self.key_size;
        }
        let mixed = id.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29);
        self.key_size + (mixed % span) as usize
    }

    /// Key `id`: `key:` and the zero-padded id when there is room for the prefix, else the
    /// padded id alone. Distinct ids give distinct keys whatever their lengths: the digits
    /// spell the id, and prefixed keys start with a letter.
    pub fn key(&self, id: u64) -> KeyBuf {
        let len = self.key_len(id);
        let mut buf = KeyBuf { bytes: [b'0'; KEY_LEN_MAX], len };
        self.fill(id, &mut buf.bytes[..len]);
        buf
    }

    /// Appends key `id` (the bytes [`KeyFormat::key`] holds) to `out`: the request path's
    /// way, with no key buffer in between.
    pub fn append_key(&self, id: u64, out: &mut Vec<u8>) {
        let len = self.key_len(id);
        let start = out.len();
        out.resize(start + len, b'0');
        self.fill(id, &mut out[start..]);
    }

    /// Whether `bytes` is key `id`, checked in place (a reply's key against the one asked).
    pub fn is_key(&self, id: u64, bytes: &[u8]) -> bool {
        let len = self.key_len(id);
        if bytes.len() != len {
            return false;
        }
        let prefix_len = self.prefix_len(len);
        let (prefix, digits) = bytes.split_at(prefix_len);
        if prefix != &PREFIX[..prefix_len] {
            return false;
        }
        // The digits `fill` writes, lowest first, then the zeros it leaves.
        let mut n = id;
        let mut at = digits.len();
        while at > 0 {
            at -= 1;
            if digits[at] != b'0' + (n % 10) as u8 {
                return false;
            }
            n /= 10;
            if n == 0 {
                break;
            }
        }
        all_zero_digits(&digits[..at])
    }

    fn prefix_len(&self, len: usize) -> usize {
        if len >= self.digits_needed + PREFIX.len() {
            PREFIX.len()
        } else {
            0
        }
    }

    /// Writes key `id` into `buf` (its length, all `b'0'`).
    fn fill(&self, id: u64, buf: &mut [u8]) {
        let prefix_len = self.prefix_len(buf.len());
        buf[..prefix_len].copy_from_slice(&PREFIX[..prefix_len]);
        let mut n = id;
        for byte in buf[prefix_len..].iter_mut().rev() {
            *byte = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(d: KeyDistribution, keyspace: u64, draws: usize) -> Vec<u64> {
        let mut picker = KeyPicker::new(d, keyspace, 0);
        let mut rng = crate::rng::seeded(42);
        let mut counts = vec![0u64; keyspace as usize];
        for _ in 0..draws {
            counts[picker.next(&mut rng) as usize] += 1;
        }
        counts
    }

    /// Goal: uniform draws cover the key space evenly (every bucket within 10% of the mean).
    #[test]
    fn uniform_is_flat() {
        let c = counts(KeyDistribution::Uniform, 100, 200_000);
        assert!(c.iter().all(|&n| (1800..2200).contains(&n)), "{c:?}");
    }

    /// Goal: zipf draws follow r^-s. Method: compare the empirical share of the top ranks
    /// with the exact probabilities (generalised harmonic number) for s = 0.99 and 1.5, and
    /// s = 0 (uniform).
    #[test]
    fn zipf_shape() {
        let n = 1000u64;
        for s in [0.99, 1.5, 0.0] {
            let draws = 400_000;
            let c = counts(KeyDistribution::Zipf { exponent: s }, n, draws);
            let norm: f64 = (1..=n).map(|r| (r as f64).powf(-s)).sum();
            for rank in [1u64, 2, 3, 10, 100] {
                let want = (rank as f64).powf(-s) / norm;
                let got = c[(rank - 1) as usize] as f64 / draws as f64;
                let tolerance = 0.05 * want + 4.0 * (want / draws as f64).sqrt();
                assert!((got - want).abs() < tolerance, "s {s} rank {rank}: {got} vs {want}");
            }
        }
    }

    /// Goal: sequential walks the key space in order from its start and wraps.
    #[test]
    fn sequential_wraps() {
        let mut picker = KeyPicker::new(KeyDistribution::Sequential, 5, 3);
        let mut rng = crate::rng::seeded(0);
        let ids: Vec<u64> = (0..7).map(|_| picker.next(&mut rng)).collect();
        assert_eq!(ids, vec![3, 4, 0, 1, 2, 3, 4]);
    }

    /// Goal: keys have exactly the requested size, with the prefix when there is room.
    #[test]
    fn key_format() {
        let f = KeyFormat::new(12, 1000).unwrap();
        assert_eq!(f.key(7).as_bytes(), b"key:00000007");
        assert_eq!(f.key(999).as_bytes(), b"key:00000999");
        let tight = KeyFormat::new(4, 10_000).unwrap();
        assert_eq!(tight.key(42).as_bytes(), b"0042");
        assert!(KeyFormat::new(3, 10_000).is_err());
        assert!(KeyFormat::new(251, 10).is_err());
    }

    /// Goal: `append_key` writes what `key` holds, and `is_key` accepts exactly that key
    /// (not a neighbour's, not a shorter or longer one), at fixed and ranged sizes.
    #[test]
    fn append_and_check_agree_with_key() {
        for f in [KeyFormat::new(20, 10_000).unwrap(), KeyFormat::with_range(4, 16, 1000).unwrap()]
        {
            for id in [0, 1, 9, 10, 42, 999] {
                let mut out = b"x".to_vec();
                f.append_key(id, &mut out);
                assert_eq!(&out[1..], f.key(id).as_bytes(), "id {id}");
                assert!(f.is_key(id, f.key(id).as_bytes()), "id {id}");
                assert!(!f.is_key(id + 1, f.key(id).as_bytes()), "id {id} vs {}", id + 1);
                let key = f.key(id);
                let bytes = key.as_bytes();
                assert!(!f.is_key(id, &bytes[1..]), "id {id} shortened");
                let mut longer = bytes.to_vec();
                longer.push(b'0');
                assert!(!f.is_key(id, &longer), "id {id} lengthened");
            }
        }
    }

    /// Goal: a key size range gives every length in it, the same length for an id every
    /// time, and no two ids the same key.
    #[test]
    fn key_size_range() {
        let f = KeyFormat::with_range(8, 16, 1000).unwrap();
        let keys: Vec<Vec<u8>> = (0..1000).map(|id| f.key(id).as_bytes().to_vec()).collect();
        let lengths: std::collections::BTreeSet<usize> = keys.iter().map(Vec::len).collect();
        assert_eq!(lengths, (8..=16).collect());
        assert_eq!(f.key(77).as_bytes(), keys[77].as_slice());
        let distinct: std::collections::HashSet<&Vec<u8>> = keys.iter().collect();
        assert_eq!(distinct.len(), 1000);
        assert!(KeyFormat::with_range(9, 8, 10).is_err());
        assert!(KeyFormat::with_range(2, 8, 1000).is_err());
    }
}
