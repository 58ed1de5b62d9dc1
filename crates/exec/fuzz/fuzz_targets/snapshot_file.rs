//! Arbitrary bytes as the snapshot file a restarting server reads (`snapshot/format.rs`):
//! raw, or records framed with every checksum right so that they reach the record checks
//! and the store. The first byte picks which.
//!
//! Framed input is a run of records: kind (bits 0-2, and bit 7 "read"), key length (0-15),
//! key, value length (u16 LE, modulo 4096), value, and an expiry choice (none, past,
//! future). Checks: nothing panics or allocates what a length claims; a file refused is
//! refused with a reason; whatever is restored can be read and changed by the commands.

#![no_main]

use std::cell::RefCell;

use exec::fuzzing::{frame_snapshot, Record, Server, NOW_MS};
use libfuzzer_sys::fuzz_target;

thread_local! {
    static SERVER: RefCell<Server> = RefCell::new(Server::new());
}

/// The records framed input spells (as many as are whole).
fn records(mut data: &[u8]) -> Vec<Record<'_>> {
    let mut out = Vec::new();
    while let [kind, key_len, rest @ ..] = data {
        let key_len = usize::from(key_len % 16);
        let Some((key, rest)) = rest.split_at_checked(key_len) else { break };
        let [low, high, expiry, rest @ ..] = rest else { break };
        let value_len = usize::from(u16::from_le_bytes([*low, *high]) % 4096);
        let Some((value, rest)) = rest.split_at_checked(value_len) else { break };
        let expiry_ms = match expiry % 3 {
            0 => 0,
            1 => NOW_MS - 1,
            _ => NOW_MS + u64::from(*expiry) * 1000,
        };
        out.push((kind & 0x87, u32::from(*expiry), u64::from(*kind), expiry_ms, key, value));
        data = rest;
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, body)) = data.split_first() else { return };
    let (file, framed) = match mode % 2 {
        0 => (body.to_vec(), Vec::new()),
        _ => {
            let framed = records(body);
            (frame_snapshot(&framed), framed)
        }
    };
    SERVER.with(|server| {
        let mut server = server.borrow_mut();
        server.flush();
        match server.restore_snapshot(&file) {
            Ok(done) => {
                assert!(done.items + done.skipped <= framed.len() as u64 || framed.is_empty());
                for &(_, _, _, _, key, _) in &framed {
                    server.exercise(key);
                }
            }
            Err(why) => assert!(!why.is_empty()),
        }
    });
});
