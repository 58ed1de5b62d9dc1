//! Arbitrary bytes as a RESTORE payload: raw (most fail the checksum, as a client's
//! garbage would), or sealed with a valid RDB version and CRC-64 so they reach the value
//! decoder (`rdb.rs`, `packed.rs`, `lzf.rs`). The first byte picks which.
//!
//! Checks: nothing panics or allocates what a length claims; RESTORE over the command
//! path answers Redis's errors for exactly the payloads the decoder refuses; a payload it
//! accepts is stored as a valid encoding, and DUMP gives back a payload holding the same
//! value.
//!
//! Run: `cargo fuzz run restore_payload corpus/restore_payload seeds/restore_payload --
//! -dict=../../values/fuzz/rdb.dict` from crates/exec/fuzz (see scripts/fuzz-smoke).

#![no_main]

use std::cell::RefCell;

use exec::fuzzing::{bulk_body, normalized, restore_payload, seal_payload, Server, RDB_VERSION};
use libfuzzer_sys::fuzz_target;

thread_local! {
    static SERVER: RefCell<Server> = RefCell::new(Server::new());
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else { return };
    let payload = match mode % 4 {
        0 => body.to_vec(),
        3 => seal_payload(body, u16::from(mode >> 2)), // older (and one newer) versions
        _ => seal_payload(body, RDB_VERSION),
    };
    let loaded = restore_payload(&payload);
    SERVER.with(|server| {
        let mut server = server.borrow_mut();
        let reply = server.run(&[b"RESTORE", b"k", b"0", &payload, b"REPLACE"]);
        match &loaded {
            None => assert!(
                reply == b"-ERR DUMP payload version or checksum are wrong\r\n"
                    || reply == b"-ERR Bad data format\r\n",
                "{:?}",
                String::from_utf8_lossy(&reply)
            ),
            Some(value) if reply == b"+OK\r\n" => {
                let dumped = server.run(&[b"DUMP", b"k"]);
                let dumped = bulk_body(&dumped).expect("a restored key dumps");
                let again = restore_payload(dumped).expect("Spinel's own DUMP restores");
                assert_eq!(normalized(&again), normalized(value));
                server.exercise(b"k");
            }
            Some(_) => assert!(reply.starts_with(b"-"), "{:?}", String::from_utf8_lossy(&reply)),
        }
        server.run(&[b"DEL", b"k"]);
    });
});
