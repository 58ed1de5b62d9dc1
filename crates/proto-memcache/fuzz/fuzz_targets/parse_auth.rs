//! Feeds arbitrary bytes to the authentication codecs: the binary SASL gate (both before and
//! after authentication) and the text protocol's auth line and data block. Every consumed
//! length must lie within the input (or, for a rejection, skip at least a header), and a
//! token's user and password must be slices of the block.

#![no_main]

use libfuzzer_sys::fuzz_target;
use proto_memcache::{
    binary::{
        sasl::{gate, parse_plain, Gate},
        BinParseError, HEADER_LEN,
    },
    text::auth::{parse_data, parse_line, Data, Line},
    Limits,
};

fuzz_target!(|data: &[u8]| {
    let limits = Limits { value_len_max: 64, key_len_max: 16, ..Limits::default() };
    for authenticated in [false, true] {
        match gate(data, &limits, authenticated) {
            Ok(Gate::Sasl(request, used)) => {
                assert!(used >= HEADER_LEN && used <= data.len());
                assert!(request.mech.len() + request.data.len() + HEADER_LEN == used);
                let _ = parse_plain(request.data);
            }
            Ok(Gate::Other) => {}
            Err(BinParseError::Reject { skip, .. }) => assert!(skip >= HEADER_LEN),
            Err(BinParseError::Incomplete | BinParseError::Close) => {}
        }
    }
    let rest = match parse_line(data) {
        Line::Set { used, data_len } => {
            assert!(used <= data.len());
            Some((&data[used..], data_len))
        }
        Line::Refused { used } => {
            assert!(used > 0 && used <= data.len());
            None
        }
        Line::Incomplete | Line::Close => None,
    };
    if let Some((block, data_len)) = rest {
        match parse_data(block, data_len) {
            Data::Token { user, pass, used } => {
                assert!(used <= block.len() && !user.is_empty() && !pass.is_empty());
                assert!(user.len() + pass.len() < used);
            }
            Data::BadTermination { used } | Data::BadFormat { used } => {
                assert!(used >= 2 && used <= block.len())
            }
            Data::Incomplete | Data::Close => {}
        }
    }
});
