//! Feeds arbitrary bytes to `parse_request` as a pipeline and checks the invariants in
//! `proto_memcache::invariants` (consumed <= input, keys within the limit, no CR/LF in keys,
//! values within the limit, compose round trip). Small limits make the edges reachable.
//! The read ahead's scan (`read_ahead_key`) sees the same bytes: it must not panic, and a
//! key it hints is a non-empty run of the input right after the command, with no byte below
//! `!` and no leading NUL.

#![no_main]

use libfuzzer_sys::fuzz_target;
use proto_memcache::{invariants::check_parse_request, text::ahead::read_ahead_key, Limits};

fuzz_target!(|data: &[u8]| {
    let limits =
        Limits { value_len_max: 64, line_len_max: 256, line_len_max_whole: 384, get_line_len_max: 512, ..Limits::default() };
    check_parse_request(data, &limits);
    check_read_ahead(data);
});

fn check_read_ahead(data: &[u8]) {
    let Some(ahead) = read_ahead_key(data) else { return };
    let head = if data.starts_with(b"gets ") { 5 } else { 4 };
    assert_eq!(ahead.key.as_ptr(), data[head..].as_ptr(), "the key follows the command");
    assert!(!ahead.key.is_empty() && ahead.key[0] != 0);
    assert!(ahead.key.iter().all(|&b| b > b' '), "{:?}", ahead.key);
    if let Some(len) = ahead.len {
        assert!(len > head + ahead.key.len(), "a length past the key");
    }
}
