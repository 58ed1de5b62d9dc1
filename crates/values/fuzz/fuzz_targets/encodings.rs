//! Arbitrary bytes as a collection's encoding, as the store would hand them back (list,
//! hash, set or sorted set: the first byte picks, as in exec's collection_decoders, whose
//! seeds these are). Every decoder of `src/{list,hash,set,zset}.rs` and the kept forms of
//! `src/owned` reads them without a panic or an allocation sized by a count, whatever the
//! bytes; one that passes the validity check (what a snapshot's collections must pass)
//! reads back the same through the kept form and its encoding stays valid.
//!
//! Run: `cargo fuzz run encodings corpus/encodings seeds/encodings` from
//! crates/values/fuzz (see scripts/fuzz-smoke).

#![no_main]

use libfuzzer_sys::fuzz_target;
use values::{
    hash,
    list::{self, End, List},
    owned,
    set::{self, Member, SetView, Work},
    zset::{self, ZSet},
};

fuzz_target!(|data: &[u8]| {
    let Some((&kind, value)) = data.split_first() else { return };
    let (valid, kept) = match kind % 4 {
        0 => (list::is_valid(value), read_list(value)),
        1 => (hash::is_valid(value), read_hash(value)),
        2 => (set::is_valid(value), read_set(value)),
        _ => (zset::is_valid(value), read_zset(value)),
    };
    let encoded = owned::encode(&kept);
    if !valid {
        return;
    }
    // (A valid hash whose fields have all expired reads as empty: no encoding.)
    let Some(encoded) = encoded else { return };
    let again = match &kept {
        owned::Value::List(_) => list::is_valid(&encoded),
        owned::Value::Hash(_) => hash::is_valid(&encoded),
        owned::Value::Set(_) => set::is_valid(&encoded),
        owned::Value::ZSet(_) => zset::is_valid(&encoded),
        owned::Value::Stream(_) => unreachable!("only the four collections are read here"),
    };
    assert!(again, "a valid encoding re-encodes as a valid one");
});

fn read_list(value: &[u8]) -> owned::Value {
    let list = List::parse(value);
    let elements = list.elements();
    assert!(elements.len() <= value.len());
    let _ = (list.at_end(End::Head), list.at_end(End::Tail));
    let (taken, _) = list::pop(list, End::Tail, 3);
    // (A count that lies, never stored, may hand out more than asked: only its bytes.)
    assert!(taken.len() <= 3 || !list::is_valid(value));
    let _ = list::push(Some(list), End::Head, &[b"x"]);
    owned::Value::List(list::decode_owned(value))
}

fn read_hash(value: &[u8]) -> owned::Value {
    let fields = hash::decode(value, 1_000);
    if let Some(field) = fields.list.first() {
        let _ = hash::lookup(value, &field.name, 1_000);
    }
    let _ = hash::splice_set(value, b"f", b"v");
    owned::Value::Hash(hash::own(value))
}

fn read_set(value: &[u8]) -> owned::Value {
    let view = SetView::new(value);
    let members: Vec<Member<'_>> = view.iter().collect();
    if let Some(&member) = members.first() {
        assert!(view.contains(member) || !set::is_valid(value));
    }
    let _ = view.locate(Member::of(b"7"));
    let _ = Work::decode(Some(value)).encode();
    owned::Value::Set(set::own(value))
}

fn read_zset(value: &[u8]) -> owned::Value {
    let decoded = ZSet::decode(value);
    if let Some(entry) = decoded.entries.first() {
        let _ = zset::locate(value, entry.member);
    }
    let _ = zset::records(value).count();
    owned::Value::ZSet(zset::own(value))
}
