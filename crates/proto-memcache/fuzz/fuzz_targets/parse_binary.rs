//! Feeds arbitrary bytes to the binary `parse_request` as a pipeline: every request must lie
//! within the input, keep its key and value within the limits, and compose back to the
//! bytes it was parsed from; every rejection must skip at least a header, and a key it
//! names for the server to drop (a Set refused as too large) lies within the input and the
//! key limit.

#![no_main]

use libfuzzer_sys::fuzz_target;
use proto_memcache::{
    binary::{parse_request, refused_set_key, BinParseError, Status, HEADER_LEN},
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
            Err(BinParseError::Reject { skip, status, .. }) => {
                assert!(skip >= HEADER_LEN);
                if status == Status::TooLarge {
                    if let Some(key) = refused_set_key(&data[pos..]) {
                        assert!(key.len() <= limits.key_len_max);
                    }
                }
                pos += skip;
            }
            Err(BinParseError::Incomplete | BinParseError::Close) => break,
        }
    }
});
