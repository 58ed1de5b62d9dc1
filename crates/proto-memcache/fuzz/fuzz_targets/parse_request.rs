//! Feeds arbitrary bytes to `parse_request` as a pipeline and checks the invariants in
//! `proto_memcache::invariants` (consumed <= input, keys within the limit, no CR/LF in keys,
//! values within the limit, compose round trip). Small limits make the edges reachable.

#![no_main]

use libfuzzer_sys::fuzz_target;
use proto_memcache::{invariants::check_parse_request, Limits};

fuzz_target!(|data: &[u8]| {
    let limits =
        Limits { value_len_max: 64, line_len_max: 256, line_len_max_whole: 384, get_line_len_max: 512, ..Limits::default() };
    check_parse_request(data, &limits);
});
