//! Feeds arbitrary bytes to the binary `parse_request` as a pipeline: every request must lie
//! within the input, keep its key and value within the limits, and compose back to the
//! bytes it was parsed from; every rejection must skip at least a header.

#![no_main]

use libfuzzer_sys::fuzz_target;
use proto_memcache::{
    binary::{parse_request, BinParseError, HEADER_LEN},
    Limits,
};

fuzz_target!(|data: &[u8]| {
    let limits = Limits { value_len_max: 64, key_len_max: 16, ..Limits::default() };
    let mut pos = 0;
    while pos < data.len() {
        match parse_request(&data[pos..], &limits) {
            Ok((request, used)) => {
                assert!(used >= HEADER_LEN && used <= data.len() - pos);
                assert!(request.key.len() <= limits.key_len_max);
                assert!(request.value.len() <= limits.value_len_max);
                let mut wire = Vec::new();
                request.compose(&mut wire);
                assert_eq!(wire, &data[pos..pos + used]);
                pos += used;
            }
            Err(BinParseError::Reject { skip, .. }) => {
                assert!(skip >= HEADER_LEN);
                pos += skip;
            }
            Err(BinParseError::Incomplete | BinParseError::Close) => break,
        }
    }
});
