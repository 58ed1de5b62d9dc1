//! What must hold for every parse of every input: checked by the fuzz target
//! (`fuzz/fuzz_targets/parse_request.rs`) and by a plain test over random inputs, so CI
//! covers it without a nightly toolchain.

use crate::{parse_request, Limits, ParseError};

/// The most requests one input is parsed into; inputs are small, this bounds the loop.
const REQUESTS_PER_INPUT_MAX: usize = 4096;

/// Parses `input` as a pipeline of requests, the way a connection would (dropping `skip`
/// after an error), and panics if any invariant breaks:
/// - a request consumes at least one byte and no more than the input;
/// - every key is within `limits.key_len_max` and holds neither CR nor LF;
/// - a value is within `limits.value_len_max`;
/// - an error skips at least one byte;
/// - parsing the same bytes twice gives the same result, and composing a parsed request
///   then parsing it again gives an equal request.
pub fn check_parse_request(input: &[u8], limits: &Limits) {
    let mut rest = input;
    for _ in 0..REQUESTS_PER_INPUT_MAX {
        let outcome = parse_request(rest, limits);
        assert_eq!(outcome, parse_request(rest, limits), "parsing is deterministic");
        match outcome {
            Ok((request, consumed)) => {
                assert!(consumed > 0 && consumed <= rest.len(), "consumed {consumed}");
                for key in request.keys() {
                    assert!(key.len() <= limits.key_len_max, "key of {} bytes", key.len());
                    assert!(!key.contains(&b'\r') && !key.contains(&b'\n'), "CR/LF in key");
                }
                if let Some(value) = request.value() {
                    assert!(value.len() <= limits.value_len_max);
                }
                let mut composed = Vec::new();
                request.compose(&mut composed);
                // A composed line ends in CRLF: one byte more than an LF-only line that was
                // served because it was whole at exactly `line_len_max_whole`.
                let crlf_limits =
                    Limits { line_len_max_whole: limits.line_len_max_whole + 1, ..*limits };
                let reparsed = parse_request(&composed, &crlf_limits);
                assert_eq!(reparsed, Ok((request, composed.len())), "compose round trip");
                rest = &rest[consumed..];
            }
            Err(ParseError::TooLarge { skip, key_start, key_len, .. }) => {
                assert!(key_start + key_len <= rest.len(), "the key lies in the input");
                assert!(key_len <= limits.key_len_max, "key of {key_len} bytes");
                rest = &rest[skip.min(rest.len())..];
            }
            Err(ParseError::Invalid { skip, .. }) => {
                assert!(skip > 0, "an error skips something");
                rest = &rest[skip.min(rest.len())..];
            }
            Err(ParseError::Incomplete | ParseError::Close) => return,
        }
    }
}
