//! Feeds arbitrary bytes to `parse_command` (as a pipeline) and `parse_reply`, asserting
//! that they never panic, never claim more bytes than given, respect the limits, and that
//! a parsed prefix parses again to the same command. The checks live in the library
//! (`proto_resp::fuzz_check`) so `cargo test` runs them too (`proptests::fuzz_invariants`).
//!
//! Run: `cargo +nightly fuzz run parse_command -- -dict=resp.dict` from this directory's
//! parent.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    proto_resp::fuzz_check(data);
});
