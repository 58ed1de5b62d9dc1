//! Feeds arbitrary bytes to the UDP framing: a datagram's header check, the requests in its
//! payload, and the cutting of an arbitrary reply into per-key units and datagrams. Checks
//! that units and datagrams only cut the reply (their concatenation is the reply) and that
//! no datagram exceeds memcached's 1,400 bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use proto_memcache::{udp, Limits};

fuzz_target!(|data: &[u8]| {
    let limits = Limits { value_len_max: 64, line_len_max: 256, ..Limits::default() };
    let Some((request_id, payload)) = udp::request_payload(data) else { return };
    assert_eq!(request_id, u16::from_be_bytes([data[0], data[1]]));
    // The first request in the payload, against a reply made of the rest of the payload.
    let Ok((request, used)) = proto_memcache::parse_request(payload, &limits) else { return };
    let reply = &payload[used..];
    let units = udp::reply_units(&request, reply);
    assert_eq!(units.concat(), reply, "units must only cut the reply");
    for unit in units {
        let mut joined = Vec::new();
        for (header, body) in udp::datagrams(request_id, unit) {
            assert!(header.len() + body.len() <= udp::DATAGRAM_BYTES_MAX);
            joined.extend_from_slice(body);
        }
        assert_eq!(joined, unit);
    }
});
