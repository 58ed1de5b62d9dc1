//! Arbitrary bytes as a stream's snapshot encoding (`values::stream::decode`): never a
//! panic or an allocation sized by a count; one that decodes re-encodes to bytes that read
//! back the same, and its entries read whole both ways.
//!
//! Run: `cargo fuzz run stream_codec` from crates/values/fuzz.

#![no_main]

use libfuzzer_sys::fuzz_target;
use values::stream::{self, StreamId};

fuzz_target!(|data: &[u8]| {
    let Some(decoded) = stream::decode(data) else { return };
    let encoded = stream::encode(&decoded);
    let again = stream::decode(&encoded).expect("its own encoding decodes");
    assert_eq!(stream::encode(&again), encoded, "an encoding reads back the same");
    let forward = decoded.range(StreamId::MIN, StreamId::MAX).count() as u64;
    let backward = decoded.range_rev(StreamId::MIN, StreamId::MAX).count() as u64;
    assert_eq!((forward, backward), (decoded.len(), decoded.len()));
    let _ = decoded.charged_bytes();
});
