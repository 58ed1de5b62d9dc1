//! What to ask, independent of protocol: which keys, get or set, how large a value
//! (rpc-perf's split: `workload` makes requests, `client` puts them on the wire).

mod keys;
mod structure;
mod values;

pub use keys::{KeyBuf, KeyDistribution, KeyFormat, KeyPicker, KEY_LEN_MAX};
pub use structure::{Family, Structure, FIELDS_DEFAULT};
pub use values::ValueSizes;

use crate::rng::{self, Rng};

/// Sets to gets, as `--ratio SET:GET` (memtier's order): `1:9` is one set per nine gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ratio {
    pub sets: u32,
    pub gets: u32,
}

impl Ratio {
    pub fn parse(text: &str) -> Result<Ratio, String> {
        let (sets, gets) = text.split_once(':').ok_or(format!("--ratio {text}: want SET:GET"))?;
        let num =
            |s: &str| s.trim().parse::<u32>().map_err(|_| format!("--ratio {text}: bad number"));
        let ratio = Ratio { sets: num(sets)?, gets: num(gets)? };
        if ratio.sets == 0 && ratio.gets == 0 {
            return Err("--ratio 0:0 asks for nothing".into());
        }
        Ok(ratio)
    }
}

/// The workload knobs of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    pub keyspace: u64,
    /// Key length, or the shortest when `key_size_max` is larger.
    pub key_size: usize,
    /// Longest key of a `MIN-MAX` range; 0 (or `key_size`) for fixed-size keys.
    pub key_size_max: usize,
    pub key_distribution: KeyDistribution,
    pub value_sizes: ValueSizes,
    pub ratio: Ratio,
    /// Keys per get request (a multiget when above 1).
    pub keys_per_get: usize,
    /// TTL on sets; 0 = none.
    pub ttl_secs: u32,
    /// Which Redis data type the sets and gets write and read (RESP only).
    pub structure: Structure,
    /// Fields (members) per collection key; ignored by `string` and `multi`.
    pub fields: u64,
}

impl Workload {
    /// The structure and its field count, as the client composes requests with.
    pub fn family(&self) -> Family {
        Family { structure: self.structure, fields: self.fields.max(1) }
    }

    /// The ids requests are drawn from: the key space, or for a collection every
    /// (key, field) pair (id = key * fields + field), so a preload fills every field.
    pub fn ids(&self) -> u64 {
        self.keyspace * self.family().ids_per_key()
    }
}

impl Default for Workload {
    fn default() -> Self {
        Workload {
            keyspace: 10_000,
            key_size: 20,
            key_size_max: 0,
            key_distribution: KeyDistribution::Uniform,
            value_sizes: ValueSizes::Fixed(20),
            ratio: Ratio { sets: 1, gets: 9 },
            keys_per_get: 1,
            ttl_secs: 0,
            structure: Structure::String,
            fields: FIELDS_DEFAULT,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    Get,
    Set,
}

/// One request to make: its kind and, for a set, the value length. The keys are written
/// into the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    pub kind: OpKind,
    pub value_len: usize,
}

/// Draws requests for one thread.
#[derive(Debug, Clone)]
pub struct Generator {
    rng: Rng,
    picker: KeyPicker,
    ratio: Ratio,
    keys_per_get: usize,
    /// Keys per set: 1, or 2 for `multi` (MULTI, SET a, SET b, EXEC).
    keys_per_set: usize,
    value_sizes: ValueSizes,
    /// Where the next request falls in the cycle of `sets + gets` (no division per request).
    in_cycle: u64,
}

impl Generator {
    /// `start` offsets a sequential walk; `seed` makes the draws repeatable.
    pub fn new(workload: &Workload, seed: u64, start: u64) -> Generator {
        let family = workload.family();
        Generator {
            rng: rng::seeded(seed),
            picker: KeyPicker::new(workload.key_distribution, workload.ids(), start),
            ratio: workload.ratio,
            keys_per_get: workload.keys_per_get.max(family.keys_per_op()),
            keys_per_set: family.keys_per_op(),
            value_sizes: workload.value_sizes.clone(),
            in_cycle: 0,
        }
    }

    /// The next request. The mix is exact, not random: of every `sets + gets` requests the
    /// first `sets` are sets, so short runs hit the ratio too.
    pub fn next(&mut self, keys: &mut Vec<u64>) -> Op {
        let cycle = u64::from(self.ratio.sets) + u64::from(self.ratio.gets);
        let kind =
            if self.in_cycle < u64::from(self.ratio.sets) { OpKind::Set } else { OpKind::Get };
        self.in_cycle += 1;
        if self.in_cycle >= cycle {
            self.in_cycle = 0;
        }
        keys.clear();
        match kind {
            OpKind::Set => {
                for _ in 0..self.keys_per_set {
                    keys.push(self.picker.next(&mut self.rng));
                }
                Op { kind, value_len: self.value_sizes.pick(&mut self.rng) }
            }
            OpKind::Get => {
                for _ in 0..self.keys_per_get {
                    keys.push(self.picker.next(&mut self.rng));
                }
                Op { kind, value_len: 0 }
            }
        }
    }

    /// A set of `key` with a drawn size (the preload walks the key space with this).
    pub fn set_of(&mut self, key: u64, keys: &mut Vec<u64>) -> Op {
        keys.clear();
        keys.push(key);
        Op { kind: OpKind::Set, value_len: self.value_sizes.pick(&mut self.rng) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: the get:set mix is exact per cycle and gets carry `keys_per_get` keys.
    #[test]
    fn ratio_and_keys_per_get() {
        let workload = Workload {
            ratio: Ratio { sets: 1, gets: 9 },
            keys_per_get: 48,
            value_sizes: ValueSizes::Fixed(100),
            ..Workload::default()
        };
        let mut g = Generator::new(&workload, 1, 0);
        let mut keys = Vec::new();
        let (mut sets, mut gets) = (0, 0);
        for _ in 0..1000 {
            let op = g.next(&mut keys);
            match op.kind {
                OpKind::Set => {
                    sets += 1;
                    assert_eq!((keys.len(), op.value_len), (1, 100));
                }
                OpKind::Get => {
                    gets += 1;
                    assert_eq!(keys.len(), 48);
                }
            }
            assert!(keys.iter().all(|&k| k < workload.keyspace));
        }
        assert_eq!((sets, gets), (100, 900));
        let only_gets = Workload { ratio: Ratio::parse("0:1").unwrap(), ..Workload::default() };
        let mut g = Generator::new(&only_gets, 1, 0);
        assert!((0..100).all(|_| g.next(&mut keys).kind == OpKind::Get));
    }

    /// Goal: the same seed gives the same requests.
    #[test]
    fn seeded() {
        let w = Workload::default();
        let (mut a, mut b) = (Generator::new(&w, 9, 0), Generator::new(&w, 9, 0));
        let (mut ka, mut kb) = (Vec::new(), Vec::new());
        for _ in 0..100 {
            assert_eq!(a.next(&mut ka), b.next(&mut kb));
            assert_eq!(ka, kb);
        }
    }

    #[test]
    fn ratio_parse() {
        assert_eq!(Ratio::parse("1:9"), Ok(Ratio { sets: 1, gets: 9 }));
        assert!(Ratio::parse("0:0").is_err());
        assert!(Ratio::parse("19").is_err());
    }
}
