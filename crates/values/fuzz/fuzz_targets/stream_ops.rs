//! Arbitrary bytes as a run of operations on a stream (`values::stream::StreamValue`, its
//! entries packed in nodes), checked against a plain `Vec` of entries after each: appends
//! of varied shapes and ID steps, deletions, exact and approximate MAXLEN / MINID trims
//! with LIMIT, lookups, ranges both ways; at the end the snapshot codec and DUMP payload
//! read back the same entries.
//!
//! Run: `cargo fuzz run stream_ops` from crates/values/fuzz.

#![no_main]

use libfuzzer_sys::fuzz_target;
use values::{
    rdb::{self, Value},
    stream::{self, NodeLimits, StreamId, StreamValue, Trim},
};

type Fields = Vec<(Vec<u8>, Vec<u8>)>;

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    fn below(&mut self, n: usize) -> Option<usize> {
        Some(self.byte()? as usize % n.max(1))
    }
}

const NAMES: [&[u8]; 4] = [b"a", b"bb", b"event", b"jobId"];

fn fields(input: &mut Input<'_>) -> Option<Fields> {
    let count = 1 + input.below(3)?;
    (0..count)
        .map(|_| {
            let name = NAMES[input.below(NAMES.len())?].to_vec();
            let value = match input.below(4)? {
                0 => input.byte()?.to_string().into_bytes(),
                1 => vec![b'v'; input.byte()? as usize * 3],
                2 => format!("-{}", u64::from(input.byte()?) << 40).into_bytes(),
                _ => Vec::new(),
            };
            Some((name, value))
        })
        .collect()
}

fn next_id(input: &mut Input<'_>, last: StreamId) -> Option<StreamId> {
    let next = match input.below(4)? {
        0 | 1 => last.next()?,
        2 => StreamId::new(last.ms.checked_add(1 + input.byte()? as u64)?, input.below(3)? as u64),
        _ => StreamId::new(last.ms.checked_add(u64::from(input.byte()?) << 32)?, u64::MAX - 1),
    };
    (next > last).then_some(next)
}

/// An ID near the model's: one of them, or between.
fn pick(input: &mut Input<'_>, model: &[(StreamId, Fields)]) -> Option<StreamId> {
    let at = input.below(model.len() + 1)?;
    match (model.get(at), input.below(3)?) {
        (Some(&(id, _)), 0 | 1) => Some(id),
        (Some(&(id, _)), _) => Some(StreamId::new(id.ms, id.seq.saturating_add(1))),
        (None, _) => Some(StreamId::new(input.byte()? as u64, 0)),
    }
}

fn check(stream: &StreamValue, model: &[(StreamId, Fields)], a: StreamId, b: StreamId) {
    let got: Vec<(StreamId, Fields)> = stream
        .range(StreamId::MIN, StreamId::MAX)
        .map(|e| (e.id, e.pairs().map(|(n, v)| (n.to_vec(), v.to_vec())).collect()))
        .collect();
    assert_eq!(got, model);
    assert_eq!(stream.len(), model.len() as u64);
    let want: Vec<StreamId> =
        model.iter().map(|(id, _)| *id).filter(|id| a <= *id && *id <= b).collect();
    assert_eq!(stream.range(a, b).map(|e| e.id).collect::<Vec<_>>(), want);
    let back: Vec<StreamId> = stream.range_rev(a, b).map(|e| e.id).collect();
    assert_eq!(back, want.iter().rev().copied().collect::<Vec<_>>());
    let found = model.iter().find(|(id, _)| *id == a).map(|(_, f)| f.clone());
    let got = stream.get(a).map(|e| e.pairs().map(|(n, v)| (n.to_vec(), v.to_vec())).collect());
    assert_eq!(got, found);
    assert_eq!(stream.last().map(|e| e.id), model.last().map(|(id, _)| *id));
}

fn run(input: &mut Input<'_>) -> Option<()> {
    let limits = NodeLimits {
        max_bytes: [0, 40, 300, 4096][input.below(4)?],
        max_entries: [0, 1, 3, 100][input.below(4)?],
    };
    let (mut stream, mut model) = (StreamValue::default(), Vec::<(StreamId, Fields)>::new());
    let mut last = StreamId::new(input.byte()? as u64, 0);
    let mut started = false;
    while !input.0.is_empty() {
        match input.below(6)? {
            0 | 1 => {
                let id = if started { next_id(input, last)? } else { last };
                let fields = fields(input)?;
                stream.append(id, fields.iter().map(|(n, v)| (&n[..], &v[..])), limits);
                (last, started) = (id, true);
                model.push((id, fields));
            }
            2 => {
                let id = pick(input, &model)?;
                let at = model.iter().position(|(m, _)| *m == id);
                assert_eq!(stream.delete(id), at.is_some());
                at.map(|at| model.remove(at));
            }
            3 => {
                let max = input.below(model.len() + 2)? as u64;
                let (approx, limit) = (input.below(2)? == 0, input.below(4)? as u64 * 3);
                let gone = stream.trim(Trim::MaxLen(max), approx, limit);
                model.drain(..gone as usize);
            }
            4 => {
                let min = pick(input, &model)?;
                let approx = input.below(2)? == 0;
                let gone = stream.trim(Trim::MinId(min), approx, 0) as usize;
                assert!(model.iter().take(gone).all(|(id, _)| *id < min));
                model.drain(..gone);
                if !approx {
                    assert!(model.first().is_none_or(|(id, _)| *id >= min));
                }
            }
            _ => {}
        }
        let (a, b) = (pick(input, &model)?, pick(input, &model)?);
        check(&stream, &model, a, b);
    }
    let decoded = stream::decode(&stream::encode(&stream)).expect("its own encoding decodes");
    check(&decoded, &model, StreamId::MIN, StreamId::MAX);
    let payload = rdb::dump(&Value::Stream(Box::new(stream)));
    let Some(Value::Stream(loaded)) = rdb::load(&payload) else { panic!("own payload refused") };
    check(&loaded, &model, StreamId::MIN, StreamId::MAX);
    Some(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Input(data));
});
