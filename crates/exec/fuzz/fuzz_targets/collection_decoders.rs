//! Arbitrary bytes stored as a collection's value (list, hash, set or sorted set: the
//! first byte picks), then read and changed by the commands of every family: the
//! decoders of `resp/{list,hash,set,zset}/encoding.rs`, `owned/` and `typed.rs` must
//! never panic or allocate what a count claims, whatever the bytes.
//!
//! Bytes that pass `valid_encoding` (what a snapshot's collections must pass) must also
//! behave: their DUMP restores to the same value.

#![no_main]

use std::cell::RefCell;

use exec::fuzzing::{bulk_body, normalized, restore_payload, valid_encoding, Server};
use libfuzzer_sys::fuzz_target;

thread_local! {
    static SERVER: RefCell<Server> = RefCell::new(Server::new());
}

fuzz_target!(|data: &[u8]| {
    let Some((&kind, value)) = data.split_first() else { return };
    let valid = valid_encoding(kind, value);
    SERVER.with(|server| {
        let mut server = server.borrow_mut();
        server.flush();
        server.plant(b"c", kind, value);
        if valid {
            let dumped = server.run(&[b"DUMP", b"c"]);
            let dumped = bulk_body(&dumped).expect("a valid collection dumps");
            let loaded = restore_payload(dumped).expect("its DUMP restores");
            server.run(&[b"RESTORE", b"d", b"0", dumped]);
            let again = server.run(&[b"DUMP", b"d"]);
            let again = restore_payload(bulk_body(&again).expect("restored")).expect("loads");
            assert_eq!(normalized(&again), normalized(&loaded));
        }
        server.exercise(b"c");
    });
});
