//! Arbitrary bytes as a collection's encoding (list, hash, set or sorted set: the first
//! byte picks). The decoders of `resp/{list,hash,set,zset}/encoding.rs` (into `owned/`'s
//! values and back, `typed.rs`) and the validity check a snapshot's collections must pass
//! never panic or allocate what a count claims, whatever the bytes.
//!
//! Bytes that pass that check are stored as the collection and meet the commands of every
//! family, reads and writes (the commands trust a stored encoding to be valid: every way
//! into the store checks it, or writes it from decoded values); their DUMP restores to
//! the same value.

#![no_main]

use std::cell::RefCell;

use exec::fuzzing::{bulk_body, decode_any, normalized, restore_payload, Server};
use libfuzzer_sys::fuzz_target;

thread_local! {
    static SERVER: RefCell<Server> = RefCell::new(Server::new());
}

fuzz_target!(|data: &[u8]| {
    let Some((&kind, value)) = data.split_first() else { return };
    if !decode_any(kind, value) {
        return;
    }
    SERVER.with(|server| {
        let mut server = server.borrow_mut();
        server.flush();
        server.plant(b"c", kind, value);
        let dumped = server.run(&[b"DUMP", b"c"]);
        // (A hash whose fields have all expired is gone.)
        if let Some(dumped) = bulk_body(&dumped) {
            let loaded = restore_payload(dumped).expect("its DUMP restores");
            server.run(&[b"RESTORE", b"d", b"0", dumped]);
            let again = server.run(&[b"DUMP", b"d"]);
            let again = restore_payload(bulk_body(&again).expect("restored")).expect("loads");
            assert_eq!(normalized(&again), normalized(&loaded));
        }
        server.exercise(b"c");
    });
});
