//! The encode -> decode round trip under arbitrary operations: a run of pushes, pops,
//! sets and removals on one collection (the first byte picks list, hash, set or sorted
//! set), each through the command path, against a model of what the collection holds.
//! After every operation DUMP must give back exactly the model: the encoding (or the value
//! kept outside the store, past its size threshold) holds what was written. Elements come
//! from a small alphabet (so operations meet), with integers (a set's integer encoding)
//! and some of 3000 bytes (so a collection moves out of the store and back). After each
//! operation, SORT ... ALPHA STORE of a list, set or sorted set must store its elements in
//! byte order (a stored SORT compares bytes), and a hash must be refused as WRONGTYPE.

#![no_main]

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};

use exec::fuzzing::{bulk_body, normalized, restore_payload, Server, Value};
use libfuzzer_sys::fuzz_target;

thread_local! {
    static SERVER: RefCell<Server> = RefCell::new(Server::new());
}

/// An element named by one byte.
fn element(byte: u8) -> Vec<u8> {
    match byte % 8 {
        0..=2 => format!("m{}", byte / 8 % 12).into_bytes(),
        3..=5 => (i64::from(byte / 8) - 16).to_string().into_bytes(),
        6 => [b"big".as_slice(), &[byte; 3000]].concat(),
        _ => (i64::from(byte) * 1_000_003).to_string().into_bytes(), // past 16 bits
    }
}

/// The model, for each kind.
enum Model {
    List(VecDeque<Vec<u8>>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    Set(BTreeMap<Vec<u8>, ()>),
    ZSet(BTreeMap<Vec<u8>, f64>),
}

impl Model {
    fn value(&self) -> Option<Value> {
        let value = match self {
            Model::List(list) if !list.is_empty() => Value::List(list.iter().cloned().collect()),
            Model::Hash(hash) if !hash.is_empty() => {
                Value::Hash(hash.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            }
            Model::Set(set) if !set.is_empty() => Value::Set(set.keys().cloned().collect()),
            Model::ZSet(zset) if !zset.is_empty() => {
                Value::ZSet(zset.iter().map(|(m, s)| (m.clone(), *s)).collect())
            }
            _ => return None,
        };
        Some(normalized(&value))
    }

    /// What `SORT k ALPHA STORE` then `LRANGE` must give: the elements in byte order, as
    /// a RESP array; `None` for a hash (WRONGTYPE) unless it is empty (then no key).
    fn sorted_reply(&self) -> Option<Vec<u8>> {
        let mut elements: Vec<&Vec<u8>> = match self {
            Model::List(list) => list.iter().collect(),
            Model::Hash(hash) if hash.is_empty() => Vec::new(),
            Model::Hash(_) => return None,
            Model::Set(set) => set.keys().collect(),
            Model::ZSet(zset) => zset.keys().collect(),
        };
        elements.sort();
        let mut reply = format!("*{}\r\n", elements.len()).into_bytes();
        for element in elements {
            reply.extend_from_slice(format!("${}\r\n", element.len()).as_bytes());
            reply.extend_from_slice(element);
            reply.extend_from_slice(b"\r\n");
        }
        Some(reply)
    }

    /// Applies operation `op` with element `e` to the model and returns the command.
    fn apply(&mut self, op: u8, e: Vec<u8>) -> Vec<Vec<u8>> {
        let text = |s: &str| s.as_bytes().to_vec();
        match self {
            Model::List(list) => match op % 5 {
                0 => {
                    list.push_front(e.clone());
                    vec![text("LPUSH"), text("k"), e]
                }
                1 | 4 => {
                    list.push_back(e.clone());
                    vec![text("RPUSH"), text("k"), e]
                }
                2 => {
                    list.pop_front();
                    vec![text("LPOP"), text("k")]
                }
                _ => {
                    list.retain(|x| *x != e);
                    vec![text("LREM"), text("k"), text("0"), e]
                }
            },
            Model::Hash(hash) => match op % 3 {
                0 => {
                    hash.remove(&e);
                    vec![text("HDEL"), text("k"), e]
                }
                _ => {
                    let value = element(op);
                    hash.insert(e.clone(), value.clone());
                    vec![text("HSET"), text("k"), e, value]
                }
            },
            Model::Set(set) => match op % 3 {
                0 => {
                    set.remove(&e);
                    vec![text("SREM"), text("k"), e]
                }
                _ => {
                    set.insert(e.clone(), ());
                    vec![text("SADD"), text("k"), e]
                }
            },
            Model::ZSet(zset) => match op % 3 {
                0 => {
                    zset.remove(&e);
                    vec![text("ZREM"), text("k"), e]
                }
                _ => {
                    let score = f64::from(op / 3) - 20.0;
                    zset.insert(e.clone(), score);
                    vec![text("ZADD"), text("k"), score.to_string().into_bytes(), e]
                }
            },
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&kind, ops)) = data.split_first() else { return };
    let mut model = match kind % 4 {
        0 => Model::List(VecDeque::new()),
        1 => Model::Hash(BTreeMap::new()),
        2 => Model::Set(BTreeMap::new()),
        _ => Model::ZSet(BTreeMap::new()),
    };
    SERVER.with(|server| {
        let mut server = server.borrow_mut();
        server.flush();
        for pair in ops.chunks_exact(2).take(200) {
            let command = model.apply(pair[0], element(pair[1]));
            let args: Vec<&[u8]> = command.iter().map(Vec::as_slice).collect();
            let reply = server.run(&args);
            assert!(!reply.starts_with(b"-"), "{:?}", String::from_utf8_lossy(&reply));
            let dumped = server.run(&[b"DUMP", b"k"]);
            let held = bulk_body(&dumped).map(|payload| {
                normalized(&restore_payload(payload).expect("Spinel's own DUMP restores"))
            });
            assert_eq!(held, model.value(), "after {:?}", String::from_utf8_lossy(&command[0]));
            let sorted = server.run(&[b"SORT", b"k", b"ALPHA", b"STORE", b"sorted"]);
            match model.sorted_reply() {
                Some(want) => {
                    assert!(sorted.starts_with(b":"), "{:?}", String::from_utf8_lossy(&sorted));
                    assert_eq!(server.run(&[b"LRANGE", b"sorted", b"0", b"-1"]), want);
                }
                None => assert!(sorted.starts_with(b"-WRONGTYPE"), "{sorted:?}"),
            }
        }
    });
});
