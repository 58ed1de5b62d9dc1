//! The stream against a `BTreeMap` model: appends, deletions, exact and approximate
//! trims, ranges both ways, and the snapshot codec, compared after every step.

use std::collections::BTreeMap;

use super::*;

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

type Model = BTreeMap<StreamId, Vec<(Vec<u8>, Vec<u8>)>>;

fn fields_of(entry: &Entry) -> Vec<(Vec<u8>, Vec<u8>)> {
    entry.pairs().map(|(n, v)| (n.to_vec(), v.to_vec())).collect()
}

fn check(stream: &StreamValue, model: &Model, rng: &mut Rng) {
    assert_eq!(stream.len(), model.len() as u64);
    let all: Vec<_> =
        stream.range(StreamId::MIN, StreamId::MAX).map(|e| (e.id, fields_of(e))).collect();
    let want: Vec<_> = model.iter().map(|(id, f)| (*id, f.clone())).collect();
    assert_eq!(all, want);
    let (a, b) =
        (StreamId::new(rng.below(300), rng.below(3)), StreamId::new(rng.below(300), rng.below(3)));
    let got: Vec<StreamId> = stream.range(a, b).map(|e| e.id).collect();
    let want: Vec<StreamId> =
        if a <= b { model.range(a..=b).map(|(id, _)| *id).collect() } else { vec![] };
    assert_eq!(got, want, "range {a} {b}");
    let got: Vec<StreamId> = stream.range_rev(a, b).map(|e| e.id).collect();
    assert_eq!(got, want.iter().rev().copied().collect::<Vec<_>>(), "rev {a} {b}");
    assert_eq!(stream.first_id(), model.keys().next().copied().unwrap_or_default());
    let decoded = decode(&encode(stream)).expect("its own encoding decodes");
    assert_eq!(encode(&decoded), encode(stream));
    assert_eq!(decoded.charged_bytes(), stream.charged_bytes());
}

/// Goal: every operation keeps the stream equal to the model, whatever the node limits.
#[test]
fn against_a_model() {
    for seed in 1..30u64 {
        let mut rng = Rng(seed * 0x9e37_79b9);
        let limits = NodeLimits {
            max_bytes: [0, 60, 4096][seed as usize % 3],
            max_entries: [0, 3, 100][seed as usize / 3 % 3],
        };
        let (mut stream, mut model) = (StreamValue::default(), Model::new());
        let mut next = StreamId::new(1, 0);
        for step in 0..400 {
            match rng.below(10) {
                0..=5 => {
                    let n = 1 + rng.below(3) as usize;
                    let fields: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
                        .map(|i| {
                            (
                                format!("f{}", i + rng.below(2) as usize).into_bytes(),
                                rng.below(1000).to_string().into_bytes(),
                            )
                        })
                        .collect();
                    stream.append(next, fields.iter().map(|(n, v)| (&n[..], &v[..])), limits);
                    model.insert(next, fields);
                    next = StreamId::new(
                        next.ms + rng.below(2),
                        if rng.below(2) == 0 { 0 } else { next.seq + 1 },
                    )
                    .max(next.next().unwrap());
                }
                6 | 7 => {
                    let id = StreamId::new(rng.below(next.ms + 1), rng.below(3));
                    assert_eq!(
                        stream.delete(id),
                        model.remove(&id).is_some(),
                        "seed {seed} step {step}"
                    );
                }
                8 => {
                    let max = rng.below(model.len() as u64 + 2);
                    let approx = rng.below(2) == 0;
                    let before = model.len() as u64;
                    let gone = stream.trim(Trim::MaxLen(max), approx, 0);
                    assert!(stream.len() >= max.min(before) && stream.len() == before - gone);
                    while model.len() as u64 > stream.len() {
                        model.pop_first();
                    }
                    if !approx {
                        assert_eq!(stream.len(), max.min(before));
                    }
                }
                _ => {
                    let min = StreamId::new(rng.below(next.ms + 1), 0);
                    let gone = stream.trim(Trim::MinId(min), false, 0);
                    let before = model.len();
                    model.retain(|id, _| *id >= min);
                    assert_eq!(gone as usize, before - model.len());
                }
            }
            check(&stream, &model, &mut rng);
        }
    }
}

/// Goal: nodes end where Redis's do: at `max_entries` entries counting deleted ones.
#[test]
fn nodes_close_at_the_limits() {
    let mut stream = StreamValue::default();
    let limits = NodeLimits { max_bytes: 4096, max_entries: 10 };
    for i in 1..=25 {
        stream.append(StreamId::new(i, 0), [(&b"f"[..], &b"v"[..])].into_iter(), limits);
    }
    assert_eq!(stream.node_count(), 3);
    assert!(stream.delete(StreamId::new(21, 0)));
    // An approximate trim takes whole nodes only.
    assert_eq!(stream.trim(Trim::MaxLen(13), true, 0), 10);
    assert_eq!(stream.len(), 14);
    assert_eq!(stream.trim(Trim::MaxLen(13), true, 0), 0);
    // LIMIT bounds what whole nodes may take.
    assert_eq!(stream.trim(Trim::MaxLen(0), true, 5), 0);
    assert_eq!(stream.trim(Trim::MaxLen(0), false, 0), 14);
    assert!(stream.is_empty() && stream.node_count() == 0);
}

/// Goal: damaged encodings are refused, never a panic.
#[test]
fn damaged_encodings() {
    let mut stream = StreamValue::default();
    stream.append(StreamId::new(1, 1), [(&b"a"[..], &b"b"[..])].into_iter(), NodeLimits::default());
    let mut group = Group::new(StreamId::new(1, 1), Some(1));
    group.consumer(b"alice", 5);
    group.deliver(StreamId::new(1, 1), b"alice", 7);
    stream.groups.insert(Box::from(&b"g"[..]), group);
    let bytes = encode(&stream);
    assert!(is_valid(&bytes));
    for cut in 0..bytes.len() {
        assert!(!is_valid(&bytes[..cut]), "cut at {cut}");
    }
    for at in 0..bytes.len() {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0xff;
        let _ = decode(&damaged);
    }
}
