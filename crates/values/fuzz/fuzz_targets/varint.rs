//! Arbitrary bytes as a varint and as a run of length-prefixed entries (`varint.rs`,
//! `entries.rs`): the one rule for damaged input is `None`, never a panic or a read past
//! the end; what reads as a number writes back as a prefix no longer than it took, and
//! the entries a walk yields are whole and tile the bytes it consumed.
//!
//! Run: `cargo fuzz run varint` from crates/values/fuzz (see scripts/fuzz-smoke).

#![no_main]

use libfuzzer_sys::fuzz_target;
use values::{entries::Entries, varint};

fuzz_target!(|data: &[u8]| {
    if let Some((n, used)) = varint::read(data) {
        assert!((1..=varint::LEN_MAX).contains(&used));
        let mut out = Vec::new();
        varint::put(&mut out, n);
        assert!(out.len() <= used, "{n} took {used} bytes, writes as {}", out.len());
        assert_eq!(varint::read(&out), Some((n, out.len())));
    }
    let mut entries = Entries::new(data);
    let mut consumed = 0;
    while let Some(entry) = entries.next() {
        let (len, used) = varint::read_usize(&data[consumed..]).expect("a whole length");
        assert_eq!(entry, &data[consumed + used..consumed + used + len]);
        consumed += used + len;
        assert_eq!(entries.rest(), &data[consumed..]);
    }
});
