//! Arbitrary bytes as the RDB file a starting server loads (`snapshot/rdb.rs` over
//! `values::rdb::file`): raw, or made into a file with Redis 7.0's header, EOF and a right
//! checksum so that they reach the opcodes, the values and the store. The first byte picks
//! which.
//!
//! Checks: nothing panics or allocates what a length claims; a file refused is refused
//! with a reason and leaves the store empty; every key loaded can be read and changed by
//! the commands of every family.

#![no_main]

use std::cell::RefCell;

use exec::fuzzing::Server;
use libfuzzer_sys::fuzz_target;

thread_local! {
    static SERVER: RefCell<Server> = RefCell::new(Server::new());
}

/// `body` after Redis 7.0's header, with EOF and its CRC-64 after it.
fn sealed(body: &[u8]) -> Vec<u8> {
    let mut bytes = b"REDIS0010".to_vec();
    bytes.extend_from_slice(body);
    bytes.push(0xff);
    let crc = exec::fuzzing::crc64(&bytes);
    bytes.extend_from_slice(&crc.to_le_bytes());
    bytes
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else { return };
    let file = if mode % 2 == 0 { body.to_vec() } else { sealed(body) };
    SERVER.with(|server| {
        let mut server = server.borrow_mut();
        server.flush();
        match server.load_rdb(&file) {
            Ok(_) => {
                for key in server.keys() {
                    server.exercise(&key);
                }
            }
            Err(why) => {
                assert!(!why.is_empty());
                assert!(server.keys().is_empty(), "a refused file loads nothing");
            }
        }
    });
});
