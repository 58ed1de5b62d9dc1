//! Property tests against simple models: random values and random operations applied to
//! an encoding (or a structure kept outside the store) and to a plain `Vec`/`BTreeMap`
//! model, compared after every step. A seeded generator (no dependency, runs repeat): a
//! failure names its seed and step.

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};

use values::{
    hash::{self, Fields},
    list::{self, End, List},
    owned::{self, HashValue, SetValue, ZSetValue},
    rdb::{self, Value},
    set::{self, Member, SetView, Work},
    varint,
    zset::{self, Entry, ZSet},
};

/// xorshift64*: small, seeded, good enough to pick operations.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Bytes of a length class that crosses the varint boundaries now and then; drawn
    /// from a small alphabet (and small integers) so that repeats happen.
    fn bytes(&mut self) -> Vec<u8> {
        match self.below(10) {
            0 => self.below(40).to_string().into_bytes(),
            1 => (self.below(70_000) as i64 - 35_000).to_string().into_bytes(),
            2 => vec![b'x'; 120 + self.below(20)],
            3 => Vec::new(),
            4 => format!("0{}", self.below(9)).into_bytes(), // not canonical: a string
            _ => (0..1 + self.below(6)).map(|_| b'a' + self.below(4) as u8).collect(),
        }
    }

    fn score(&mut self) -> f64 {
        match self.below(8) {
            0 => f64::INFINITY,
            1 => f64::NEG_INFINITY,
            2 => -0.0,
            _ => (self.below(20) as f64 - 10.0) / 4.0,
        }
    }
}

const SEEDS: u64 = 40;
const STEPS: usize = 150;

/// Goal: varints of every size read back; every cut of one reads as `None`.
#[test]
fn varints_against_their_values() {
    let mut rng = Rng::new(1);
    for _ in 0..5_000 {
        let n = rng.next() >> rng.below(64);
        let mut out = Vec::new();
        varint::put(&mut out, n);
        assert_eq!(varint::read(&out), Some((n, out.len())));
        let cut = rng.below(out.len());
        assert_eq!(varint::read(&out[..cut]), None, "{n} cut at {cut}");
    }
}

/// Goal: a list encoding under pushes and pops at both ends, and re-encodes, holds what a
/// `VecDeque` holds; it stays valid, and converts to and from the kept list.
#[test]
fn list_against_a_deque() {
    for seed in 0..SEEDS {
        let mut rng = Rng::new(seed);
        let (mut model, mut encoded) = (VecDeque::<Vec<u8>>::new(), None::<Vec<u8>>);
        for step in 0..STEPS {
            let end = if rng.below(2) == 0 { End::Head } else { End::Tail };
            if rng.below(3) > 0 {
                let elements: Vec<Vec<u8>> = (0..1 + rng.below(4)).map(|_| rng.bytes()).collect();
                let refs: Vec<&[u8]> = elements.iter().map(Vec::as_slice).collect();
                encoded = Some(list::push(encoded.as_deref().map(List::parse), end, &refs));
                for element in elements {
                    match end {
                        End::Head => model.push_front(element),
                        End::Tail => model.push_back(element),
                    }
                }
            } else if let Some(current) = encoded.take() {
                let count = 1 + rng.below(4);
                let (taken, rest) = list::pop(List::parse(&current), end, count);
                let want: Vec<Vec<u8>> = (0..count.min(model.len()))
                    .filter_map(|_| match end {
                        End::Head => model.pop_front(),
                        End::Tail => model.pop_back(),
                    })
                    .collect();
                assert_eq!(taken, want, "seed {seed} step {step}");
                encoded = rest;
            }
            let Some(current) = &encoded else {
                assert!(model.is_empty(), "seed {seed} step {step}");
                continue;
            };
            let parsed = List::parse(current);
            assert!(list::is_valid(current), "seed {seed} step {step}");
            assert_eq!(parsed.len(), model.len());
            assert_eq!(parsed.elements(), model.iter().map(Vec::as_slice).collect::<Vec<_>>());
            let kept = list::decode_owned(current);
            assert_eq!(list::encode_owned(&kept).as_ref(), Some(current));
        }
    }
}

/// Goal: hash fields set (with and without keeping a TTL), removed and expired hold what
/// an insertion-ordered model holds, through encode, decode, the in-place lookup and the
/// splice that HSET takes; the kept hash agrees.
#[test]
fn hash_against_a_model() {
    for seed in 0..SEEDS {
        let mut rng = Rng::new(seed);
        let mut model: HashModel = Vec::new();
        let mut encoded = hash::encode(&[], None);
        for step in 0..STEPS {
            let (name, value) = (rng.bytes(), rng.bytes());
            let mut fields = hash::decode(&encoded, 0);
            match rng.below(6) {
                0 => {
                    let at = model.iter().position(|(n, _, _)| *n == name);
                    let removed = fields.find(&name).map(|i| fields.list.remove(i));
                    assert_eq!(removed.is_some(), at.is_some(), "seed {seed} step {step}");
                    if let Some(at) = at {
                        model.remove(at);
                    }
                }
                1 => {
                    // A field with an expiry, one of a few times (some equal).
                    let at_ms = 10 * (1 + rng.below(5) as u64);
                    let index = match fields.find(&name) {
                        Some(index) => index,
                        None => {
                            fields.set(&name, value.clone().into(), false);
                            fields.len() - 1
                        }
                    };
                    fields.list[index].expire_at_ms = Some(at_ms);
                    match model.iter_mut().find(|(n, _, _)| *n == name) {
                        Some(field) => field.2 = Some(at_ms),
                        None => model.push((name.clone(), value.clone(), Some(at_ms))),
                    }
                }
                _ => {
                    let plain = model.iter().all(|(_, _, at)| at.is_none());
                    let spliced = hash::splice_set(&encoded, &name, &value);
                    assert_eq!(spliced.is_some(), plain, "seed {seed} step {step}");
                    let keep_ttl = rng.below(2) == 0;
                    let created = fields.set(&name, value.clone().into(), keep_ttl);
                    match model.iter_mut().find(|(n, _, _)| *n == name) {
                        Some(field) => {
                            field.1 = value.clone();
                            if !keep_ttl {
                                field.2 = None;
                            }
                        }
                        None => model.push((name.clone(), value.clone(), None)),
                    }
                    if let Some((bytes, new)) = spliced {
                        assert_eq!(new, created);
                        assert_eq!(bytes, hash::encode(&fields.list, None), "seed {seed}");
                    }
                }
            }
            encoded = hash::encode(&fields.list, None);
            model = layout(model);
            check_hash(&encoded, &model, seed, step);
        }
    }
}

type HashModel = Vec<(Vec<u8>, Vec<u8>, Option<u64>)>;

/// The model in the encoding's order: the fields with an expiry first, by time (a stable
/// sort), then the others in their order.
fn layout(model: HashModel) -> HashModel {
    let (mut expiring, persistent): (HashModel, HashModel) =
        model.into_iter().partition(|(_, _, at)| at.is_some());
    expiring.sort_by_key(|(_, _, at)| *at);
    expiring.extend(persistent);
    expiring
}

fn check_hash(encoded: &[u8], model: &HashModel, seed: u64, step: usize) {
    let context = format!("seed {seed} step {step}");
    assert_eq!(hash::is_valid(encoded), !model.is_empty(), "{context}");
    let want: Vec<&(Vec<u8>, Vec<u8>, Option<u64>)> = model.iter().collect();
    let now_ms = 25;
    let live: Vec<_> = want.iter().filter(|(_, _, at)| at.is_none_or(|at| at > now_ms)).collect();
    let Fields { list, dropped, .. } = hash::decode(encoded, now_ms);
    let got: Vec<_> = list.iter().map(|f| (&*f.name, &*f.value, f.expire_at_ms)).collect();
    let expect: Vec<_> = live.iter().map(|(n, v, at)| (&n[..], &v[..], *at)).collect();
    assert_eq!(got, expect, "{context}");
    assert_eq!(dropped, live.len() < model.len(), "{context}");
    for (name, value, at) in model {
        let seen = hash::lookup(encoded, name, now_ms);
        let alive = at.is_none_or(|at| at > now_ms);
        assert_eq!(seen, alive.then_some(&value[..]), "{context}");
    }
    let kept = hash::own(encoded);
    assert_eq!(kept.len(), model.len(), "{context}");
    for (name, value, at) in model {
        assert_eq!(kept.get(name), Some(&value[..]), "{context}");
        assert_eq!(kept.expire_at_ms.get(&name[..]).copied(), *at, "{context}");
    }
    let again = hash::encode_owned(&kept);
    assert_eq!(again.is_some(), !model.is_empty(), "{context}");
    if let Some(again) = again {
        assert!(hash::is_valid(&again), "{context}");
    }
}

/// Goal: a set's working copy under adds and removals holds what a `BTreeSet` of the
/// members' text holds; its encoding (integers sorted, or strings) is valid, reads back in
/// place with the same members and membership, and converts to and from the kept set.
#[test]
fn set_against_a_btreeset() {
    for seed in 0..SEEDS {
        let mut rng = Rng::new(seed);
        let mut model = BTreeSet::<Vec<u8>>::new();
        let mut encoded: Option<Vec<u8>> = None;
        for step in 0..STEPS {
            let members: Vec<Vec<u8>> = (0..1 + rng.below(5)).map(|_| rng.bytes()).collect();
            let mut work = Work::decode(encoded.as_deref());
            let of: Vec<Member<'_>> = members.iter().map(|m| Member::of(m)).collect();
            let changed = if rng.below(3) > 0 {
                let added = work.add_all(of.iter().copied());
                let before = model.len();
                model.extend(members.iter().cloned());
                assert_eq!(added, model.len() - before, "seed {seed} step {step}");
                added
            } else {
                let removed = work.remove_all(of.iter().copied());
                let gone = members.iter().collect::<BTreeSet<_>>();
                let before = model.len();
                model.retain(|m| !gone.contains(m));
                assert_eq!(removed, before - model.len(), "seed {seed} step {step}");
                removed
            };
            let _ = changed;
            encoded = work.encode();
            check_set(encoded.as_deref(), &model, seed, step);
        }
    }
}

fn check_set(encoded: Option<&[u8]>, model: &BTreeSet<Vec<u8>>, seed: u64, step: usize) {
    let context = format!("seed {seed} step {step}");
    let Some(encoded) = encoded else {
        assert!(model.is_empty(), "{context}");
        return;
    };
    assert!(set::is_valid(encoded), "{context}");
    let view = SetView::new(encoded);
    assert_eq!(view.len(), model.len(), "{context}");
    let got: BTreeSet<Vec<u8>> = view.iter().map(Member::to_vec).collect();
    assert_eq!(&got, model, "{context}");
    for member in model {
        assert!(view.contains(Member::of(member)), "{context}");
    }
    assert!(!view.contains(Member::of(b"absent member")), "{context}");
    let ints = matches!(view, SetView::Ints { .. });
    let all_ints = model.iter().all(|m| values::int::parse_canonical_i64(m).is_some());
    assert_eq!(ints, all_ints, "{context}: the integer form exactly when all are integers");
    let kept: SetValue = set::own(encoded);
    assert_eq!(kept.iter().map(<[u8]>::to_vec).collect::<BTreeSet<_>>(), *model, "{context}");
    let again = set::encode_owned(&kept).expect("not empty");
    let again: BTreeSet<Vec<u8>> = SetView::new(&again).iter().map(Member::to_vec).collect();
    assert_eq!(&again, model, "{context}");
}

/// Goal: a sorted set rebuilt with random adds, score changes and removals holds what a
/// member -> score map holds, in (score, member) order (`-0` as `0`), with the in-place
/// lookups and the kept form agreeing.
#[test]
fn zset_against_a_map() {
    for seed in 0..SEEDS {
        let mut rng = Rng::new(seed);
        let mut model = BTreeMap::<Vec<u8>, f64>::new();
        let mut encoded = Vec::new();
        for step in 0..STEPS {
            let decoded = ZSet::decode(&encoded);
            let names: Vec<Vec<u8>> = (0..1 + rng.below(4)).map(|_| rng.bytes()).collect();
            let distinct: Vec<&Vec<u8>> =
                names.iter().collect::<BTreeSet<_>>().into_iter().collect();
            let removed: HashSet<&[u8]> = distinct.iter().map(|n| &n[..]).collect();
            let next = if rng.below(3) > 0 {
                let added: Vec<Entry<'_>> =
                    distinct.iter().map(|n| Entry { score: rng.score(), member: n }).collect();
                for entry in &added {
                    model.insert(entry.member.to_vec(), entry.score);
                }
                decoded.rebuild(&removed, added)
            } else {
                distinct.iter().for_each(|n| {
                    model.remove(*n);
                });
                decoded.rebuild(&removed, Vec::new())
            };
            encoded = next;
            check_zset(&encoded, &model, seed, step);
        }
    }
}

fn check_zset(encoded: &[u8], model: &BTreeMap<Vec<u8>, f64>, seed: u64, step: usize) {
    let context = format!("seed {seed} step {step}");
    assert_eq!(zset::is_valid(encoded), !model.is_empty(), "{context}");
    let mut want: Vec<(f64, &[u8])> = model.iter().map(|(m, &s)| (s, &m[..])).collect();
    want.sort_by(|a, b| owned::order(a.0, a.1, b.0, b.1));
    let got: Vec<(f64, &[u8])> = zset::iter(encoded).map(|e| (e.score, e.member)).collect();
    assert_eq!(got, want, "{context}");
    for (member, &score) in model {
        let found = zset::locate(encoded, member).map(|(_, s)| s);
        assert_eq!(found, Some(score), "{context}");
    }
    let kept: ZSetValue = zset::own(encoded);
    assert_eq!(kept.len(), model.len(), "{context}");
    for (rank, &(score, member)) in want.iter().enumerate() {
        assert_eq!(kept.rank(member), Some((rank, score)), "{context}");
        assert_eq!(kept.get(rank), (score, member), "{context}");
    }
    let again = zset::encode_owned(&kept);
    assert_eq!(again.as_deref(), (!model.is_empty()).then_some(encoded), "{context}");
}

/// Goal: the structures kept outside the store, under random inserts and removals, hold
/// what their models hold (a hash's fields, a set's members, a sorted set's ranks).
#[test]
fn kept_structures_against_models() {
    for seed in 0..SEEDS {
        let mut rng = Rng::new(seed);
        let (mut hash, mut hash_model) = (HashValue::default(), BTreeMap::new());
        let (mut set, mut set_model) = (SetValue::default(), BTreeSet::new());
        let (mut zset, mut zset_model) = (ZSetValue::default(), BTreeMap::new());
        for step in 0..STEPS * 2 {
            let (key, value) = (rng.bytes(), rng.bytes());
            let context = format!("seed {seed} step {step}");
            if rng.below(3) > 0 {
                let old = hash_model.insert(key.clone(), value.clone());
                assert_eq!(hash.insert(&key, &value), old.map(|v| v.len()), "{context}");
                assert_eq!(set.insert(&key), set_model.insert(key.clone()), "{context}");
                let score = rng.score();
                let old = zset_model.insert(key.clone(), if score == 0.0 { 0.0 } else { score });
                assert_eq!(zset.insert(&key, score), old, "{context}");
            } else {
                let old = hash_model.remove(&key);
                assert_eq!(hash.remove(&key, step % 2 == 0), old.map(|v| v.len()), "{context}");
                assert_eq!(set.remove(&key), set_model.remove(&key), "{context}");
                assert_eq!(zset.remove(&key), zset_model.remove(&key), "{context}");
            }
        }
        let fields: BTreeMap<Vec<u8>, Vec<u8>> =
            hash.iter().map(|(n, v)| (n.to_vec(), v.to_vec())).collect();
        assert_eq!(fields, hash_model, "seed {seed}");
        let members: BTreeSet<Vec<u8>> = set.iter().map(<[u8]>::to_vec).collect();
        assert_eq!(members, set_model, "seed {seed}");
        let mut want: Vec<(f64, &[u8])> = zset_model.iter().map(|(m, &s)| (s, &m[..])).collect();
        want.sort_by(|a, b| owned::order(a.0, a.1, b.0, b.1));
        assert_eq!(zset.iter().collect::<Vec<_>>(), want, "seed {seed}");
    }
}

/// Goal: random values (strings past the LZF threshold, collections) dump to a payload
/// that verifies and loads back to the same value; one flipped byte fails the checksum;
/// a loaded collection kept and dumped again is the same value.
#[test]
fn rdb_round_trip_against_values() {
    let mut rng = Rng::new(7);
    for round in 0..300 {
        let value = random_value(&mut rng);
        let payload = rdb::dump(&value);
        assert!(rdb::verify(&payload), "round {round}");
        assert_eq!(rdb::load(&payload).as_ref(), Some(&value), "round {round}");
        let mut damaged = payload.clone();
        let at = rng.below(damaged.len());
        damaged[at] ^= 1 << rng.below(8);
        assert!(!rdb::verify(&damaged), "round {round}: a flipped bit at {at}");
        if let rdb::Kept::Collection(kept) = rdb::kept(value.clone()) {
            let encoded = owned::encode(&kept).expect("a loaded collection is not empty");
            assert!(!encoded.is_empty());
            assert_eq!(sorted(rdb::from_owned(&kept, 0)), sorted(value), "round {round}");
        }
    }
}

fn random_value(rng: &mut Rng) -> Value {
    let len = 1 + rng.below(30);
    let distinct = |rng: &mut Rng| -> Vec<Vec<u8>> {
        (0..len).map(|_| rng.bytes()).collect::<BTreeSet<_>>().into_iter().collect()
    };
    match rng.below(5) {
        0 => {
            let mut text = rng.bytes();
            if rng.below(2) == 0 {
                text = text.repeat(1 + rng.below(50)); // compressible, past 20 bytes
            }
            Value::String(text)
        }
        1 => Value::List((0..len).map(|_| rng.bytes()).collect()),
        2 => Value::Set(distinct(rng)),
        3 => Value::Hash(distinct(rng).into_iter().map(|n| (n, rng.bytes())).collect()),
        _ => Value::ZSet(distinct(rng).into_iter().map(|m| (m, rng.score())).collect()),
    }
}

/// A value with its members in one order (sets, hashes, sorted sets by member).
fn sorted(mut value: Value) -> Value {
    match &mut value {
        Value::Set(members) => members.sort(),
        Value::Hash(fields) => fields.sort(),
        Value::ZSet(members) => members.sort_by(|a, b| a.0.cmp(&b.0)),
        Value::String(_) | Value::List(_) | Value::Stream(_) => {}
    }
    value
}
