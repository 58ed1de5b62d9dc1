//! Command-level checks through the harness: the store's side of lists (TTL, expiry, the
//! item size, other types), which the wire transcripts in tests/conformance cannot reach
//! with a manual clock.

use crate::resp::testkit::Harness;

/// Goal: a change keeps the list's TTL, and the list expires with it.
#[test]
fn ttl_survives_changes_and_expires() {
    let mut h = Harness::new();
    h.check(&[
        ("RPUSH l a b c", ":3\r\n"),
        ("PEXPIRE l 5000", ":1\r\n"),
        ("LPUSH l z", ":4\r\n"),
        ("LSET l 0 y", "+OK\r\n"),
        ("RPOPLPUSH l l", "$1\r\nc\r\n"),
        ("PTTL l", ":5000\r\n"),
        ("LRANGE l 0 -1", "*4\r\n$1\r\nc\r\n$1\r\ny\r\n$1\r\na\r\n$1\r\nb\r\n"),
    ]);
    h.clock.advance_ms(5001);
    h.check(&[("LLEN l", ":0\r\n"), ("LPOP l", "$-1\r\n"), ("EXISTS l", ":0\r\n")]);
}

/// Goal: a list that would outgrow the size limit of a Redis value (half the memory
/// limit here: the harness has 8 MiB) is refused with OOM and left unchanged, and a
/// refused LMOVE leaves both lists as they were.
#[test]
fn size_refusal_changes_nothing() {
    const OOM: &[u8] = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n";
    let mut h = Harness::new();
    let mib = vec![b'x'; 1 << 20];
    assert_eq!(h.run("RPUSH l small"), ":1\r\n");
    assert_eq!(h.run_args(&[b"RPUSH", b"l", &mib, &mib, &mib, &mib, &mib]), OOM);
    assert_eq!(h.run("LRANGE l 0 -1"), "*1\r\n$5\r\nsmall\r\n");
    let part = vec![b'y'; 1_200_000];
    assert_eq!(h.run_args(&[b"RPUSH", b"full", &part, &part, &part]), b":3\r\n");
    assert_eq!(h.run_args(&[b"RPUSH", b"one", &part[..600_000]]), b":1\r\n");
    assert_eq!(h.run("PEXPIRE one 9000"), ":1\r\n");
    assert_eq!(h.run_args(&[b"LMOVE", b"one", b"full", b"LEFT", b"RIGHT"]), OOM);
    assert_eq!(h.run("LLEN one"), ":1\r\n");
    assert_eq!(h.run("PTTL one"), ":9000\r\n");
    assert_eq!(h.run("LLEN full"), ":3\r\n");
    assert_eq!(
        h.run("RPOPLPUSH full one"),
        format!("${}\r\n{}\r\n", part.len(), "y".repeat(part.len()))
    );
    assert_eq!(h.run("LLEN one"), ":2\r\n");
}

/// Goal: a list key is a list to the generic commands, and other types are WRONGTYPE to
/// the list commands without being changed.
#[test]
fn types_are_kept_apart() {
    let mut h = Harness::new();
    h.check(&[
        ("SET s v", "+OK\r\n"),
        ("RPUSH s x", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("GET s", "$1\r\nv\r\n"),
        ("RPUSH l x y", ":2\r\n"),
        ("TYPE l", "+list\r\n"),
        ("GET l", "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("RENAME l m", "+OK\r\n"),
        ("LRANGE m 0 -1", "*2\r\n$1\r\nx\r\n$1\r\ny\r\n"),
        ("COPY m n", ":1\r\n"),
        ("LMPOP 2 l n RIGHT COUNT 5", "*2\r\n$1\r\nn\r\n*2\r\n$1\r\ny\r\n$1\r\nx\r\n"),
        ("EXISTS n", ":0\r\n"),
    ]);
    h.check3(&[("LPOP nokey 1", "_\r\n"), ("LMPOP 1 nokey LEFT", "_\r\n")]);
}

/// A small deterministic generator (xorshift64*), so the model test needs no crate.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }
}

fn bulk(element: &[u8]) -> Vec<u8> {
    let mut out = format!("${}\r\n", element.len()).into_bytes();
    out.extend_from_slice(element);
    out.extend_from_slice(b"\r\n");
    out
}

/// What one step of the model test sends.
fn push_args(head: bool, element: &[u8], n: usize) -> Vec<&[u8]> {
    let mut args: Vec<&[u8]> = vec![if head { b"LPUSH" } else { b"RPUSH" }, b"l"];
    args.extend(std::iter::repeat_n(element, n));
    args
}

fn array_of<'a>(elements: impl ExactSizeIterator<Item = &'a Vec<u8>>) -> Vec<u8> {
    let mut out = format!("*{}\r\n", elements.len()).into_bytes();
    elements.for_each(|element| out.extend(bulk(element)));
    out
}

/// Goal: lists of up to about 1500 elements (counts past 127, elements across the one/two
/// byte length edge) stay equal to a `VecDeque` model through random pushes, pops, LSET,
/// LINSERT, LREM and LTRIM. Method: LRANGE 0 -1 compared after every step. The list stays
/// under 64 KiB: larger items live in the store's large slots, where a live item that
/// keeps growing can be evicted under its own churn (reported to the lead).
#[test]
fn long_lists_match_a_model() {
    use std::collections::VecDeque;
    let mut h = Harness::new();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut model: VecDeque<Vec<u8>> = VecDeque::new();
    let mut len_max = 0;
    for step in 0..600 {
        let e = vec![b'a' + rng.below(3) as u8; [0, 1, 2, 1, 0, 127, 128][rng.below(7)]];
        let reply = match rng.below(8) {
            0..=2 if model.len() > 1500 => {
                let n = 1 + rng.below(300);
                let popped: Vec<Vec<u8>> = (0..n).map_while(|_| model.pop_front()).collect();
                (h.run_args(&[b"LPOP", b"l", n.to_string().as_bytes()]), array_of(popped.iter()))
            }
            0..=2 => {
                let (head, n) = (rng.below(2) == 0, 1 + rng.below(60));
                for _ in 0..n {
                    match head {
                        true => model.push_front(e.clone()),
                        false => model.push_back(e.clone()),
                    }
                }
                (h.run_args(&push_args(head, &e, n)), format!(":{}\r\n", model.len()).into_bytes())
            }
            3 => {
                let n = 1 + rng.below(20);
                let popped: Vec<Vec<u8>> = (0..n).map_while(|_| model.pop_back()).collect();
                let want =
                    if popped.is_empty() { b"*-1\r\n".to_vec() } else { array_of(popped.iter()) };
                (h.run_args(&[b"RPOP", b"l", n.to_string().as_bytes()]), want)
            }
            4 if !model.is_empty() => {
                let at = rng.below(model.len());
                model[at] = e.clone();
                (h.run_args(&[b"LSET", b"l", at.to_string().as_bytes(), &e]), b"+OK\r\n".to_vec())
            }
            5 if !model.is_empty() => {
                let pivot = model[rng.below(model.len())].clone();
                let at = model.iter().position(|x| *x == pivot).expect("pivot is in the list");
                model.insert(at + 1, e.clone());
                let reply = h.run_args(&[b"LINSERT", b"l", b"AFTER", &pivot, &e]);
                (reply, format!(":{}\r\n", model.len()).into_bytes())
            }
            6 => {
                let before = model.len();
                let mut left = 2;
                model.retain(|x| {
                    let gone = left > 0 && x == &e;
                    left -= i32::from(gone);
                    !gone
                });
                let reply = h.run_args(&[b"LREM", b"l", b"2", &e]);
                (reply, format!(":{}\r\n", before - model.len()).into_bytes())
            }
            _ => {
                let start = rng.below(3);
                let stop = model.len().saturating_sub(rng.below(3) + 1);
                let kept = (stop + 1).saturating_sub(start);
                model = model.iter().skip(start).take(kept).cloned().collect();
                let (start, stop) = (start.to_string(), stop.to_string());
                (
                    h.run_args(&[b"LTRIM", b"l", start.as_bytes(), stop.as_bytes()]),
                    b"+OK\r\n".to_vec(),
                )
            }
        };
        assert_eq!(reply.0, reply.1, "step {step}");
        len_max = len_max.max(model.len());
        assert_eq!(h.run("LRANGE l 0 -1").into_bytes(), array_of(model.iter()), "step {step}");
    }
    assert!(len_max > 1_000, "the list never grew long: {len_max}");
}

/// Goal: a list kept outside the store (past 8 KiB of encoding) keeps its TTL through the
/// changes made in place, expires with it, and is refused with OOM, unchanged, when a push
/// would take it past half the memory limit, as a list in the store is.
#[test]
fn large_lists_keep_ttl_and_size_limit() {
    const OOM: &[u8] = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n";
    let mut h = Harness::new();
    let element = vec![b'e'; 1000];
    for _ in 0..20 {
        h.run_args(&[b"RPUSH", b"big", &element]);
    }
    assert_eq!(h.shared.owned.len(), 1, "20 KB of list moved out of the store");
    h.check(&[
        ("PEXPIRE big 5000", ":1\r\n"),
        ("LPUSH big head", ":21\r\n"),
        ("RPOP big", &format!("${}\r\n{}\r\n", element.len(), "e".repeat(element.len()))),
        ("LSET big 1 x", "+OK\r\n"),
        ("PTTL big", ":5000\r\n"),
        ("LINDEX big 0", "$4\r\nhead\r\n"),
    ]);
    let mib = vec![b'x'; 1 << 20];
    assert_eq!(h.run_args(&[b"RPUSH", b"big", &mib, &mib, &mib, &mib, &mib]), OOM);
    assert_eq!(h.run("LLEN big"), ":20\r\n");
    h.clock.advance_ms(5001);
    h.check(&[("LLEN big", ":0\r\n"), ("EXISTS big", ":0\r\n")]);
    h.shared.core.store.sweep_expired(1 << 20);
    assert_eq!(h.shared.owned.len(), 0, "released when its item expired");
}
