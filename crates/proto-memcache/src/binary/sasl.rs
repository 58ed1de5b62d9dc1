//! SASL packets, for a server started as memcached's `-S`: the three SASL opcodes, the
//! refusal of everything else before authentication, and the PLAIN mechanism's message.
//!
//! ```text
//!   bytes --gate(authenticated)--> Sasl(SaslRequest)     list mechs / auth / step
//!                                  Other                 parse_request as usual
//!                                  Err(Reject AuthError) any other opcode before auth
//! ```
//!
//! As memcached 1.6.18 with `-S` (checked on the wire): before authentication every opcode
//! but the three SASL ones and Version gets `Auth failure.` and a hang-up, answered once the
//! header, extras and key have arrived; the SASL opcodes' shapes are checked as memcached
//! checks them (a violation gets `Invalid arguments` and a hang-up), a mechanism name over
//! [`MECH_LEN_MAX`] bytes gets `Invalid arguments` with the connection kept, and a value
//! over the item limit gets `Out of memory` (memcached allocates an item to hold it).

use super::{BinParseError, Header, Opcode, Status, HEADER_LEN, REQUEST_MAGIC};
use crate::Limits;

pub const SASL_LIST_MECHS: u8 = 0x20;
pub const SASL_AUTH: u8 = 0x21;
pub const SASL_STEP: u8 = 0x22;
const VERSION: u8 = Opcode::Version as u8;

/// memcached's `MAX_SASL_MECH_LEN`: the longest mechanism name (the key of Auth and Step).
pub const MECH_LEN_MAX: usize = 32;

/// The mechanisms offered: PLAIN only (memcached lists what its Cyrus configuration allows;
/// `mech_list: plain` gives this same reply).
pub const MECHANISMS: &[u8] = b"PLAIN";

/// The value of a successful Auth or Step reply.
pub const AUTHENTICATED: &[u8] = b"Authenticated";

/// Which SASL opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SaslOp {
    ListMechs,
    Auth,
    Step,
}

/// One SASL request packet, borrowing from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SaslRequest<'a> {
    pub op: SaslOp,
    /// The opcode byte, echoed in the reply.
    pub opcode: u8,
    pub opaque: u32,
    /// The mechanism name (Auth and Step; Step's is ignored, as Cyrus ignores it).
    pub mech: &'a [u8],
    /// The client's SASL message (empty: none).
    pub data: &'a [u8],
}

/// What [`gate`] made of the packet at the start of the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate<'a> {
    /// A SASL packet and the bytes it took.
    Sasl(SaslRequest<'a>, usize),
    /// Not a SASL packet, and allowed: parse it with [`super::parse_request`] (which also
    /// answers whatever is malformed in it, as without `-S`).
    Other,
}

/// Looks at the packet at the start of `input` on a connection of a `-S` server.
pub fn gate<'a>(
    input: &'a [u8],
    limits: &Limits,
    authenticated: bool,
) -> Result<Gate<'a>, BinParseError> {
    let Some(header) = Header::read(input) else { return Ok(Gate::Other) };
    let (key, extras, body) =
        (usize::from(header.key_len), usize::from(header.extras_len), header.body_len as usize);
    // A wrong magic or lengths that do not add up are parse_request's to answer, before
    // authentication is looked at (as in memcached).
    if header.magic != REQUEST_MAGIC || key + extras > body {
        return Ok(Gate::Other);
    }
    let reject = |status, close| BinParseError::Reject {
        opcode: header.opcode,
        opaque: header.opaque,
        status,
        skip: HEADER_LEN + body,
        close,
    };
    let op = match header.opcode {
        SASL_LIST_MECHS => SaslOp::ListMechs,
        SASL_AUTH => SaslOp::Auth,
        SASL_STEP => SaslOp::Step,
        VERSION => return Ok(Gate::Other),
        _ if authenticated => return Ok(Gate::Other),
        _ if input.len() < HEADER_LEN + extras + key => return Err(BinParseError::Incomplete),
        _ => return Err(reject(Status::AuthError, true)),
    };
    let shape_ok = match op {
        SaslOp::ListMechs => key == 0 && extras == 0 && body == 0,
        SaslOp::Auth | SaslOp::Step => key > 0 && extras == 0,
    };
    if key > limits.key_len_max || !shape_ok {
        return Err(reject(Status::InvalidArguments, true));
    }
    if key > MECH_LEN_MAX {
        return Err(reject(Status::InvalidArguments, false));
    }
    if body - key > limits.value_len_max {
        return Err(reject(Status::OutOfMemory, false));
    }
    let total = HEADER_LEN + body;
    let Some(packet) = input.get(HEADER_LEN..total) else {
        return Err(BinParseError::Incomplete);
    };
    let (mech, data) = packet.split_at(key);
    let request = SaslRequest { op, opcode: header.opcode, opaque: header.opaque, mech, data };
    Ok(Gate::Sasl(request, total))
}

/// A PLAIN message (RFC 4616): `authzid NUL authcid NUL passwd`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plain<'a> {
    /// Who to act as; empty for the authenticating user.
    pub authzid: &'a [u8],
    pub authcid: &'a [u8],
    pub passwd: &'a [u8],
}

/// Splits a PLAIN message as Cyrus's plugin does: fewer than two NULs, or a NUL in the
/// password, is malformed.
pub fn parse_plain(message: &[u8]) -> Option<Plain<'_>> {
    let mut parts = message.splitn(3, |&b| b == 0);
    let authzid = parts.next()?;
    let authcid = parts.next()?;
    let passwd = parts.next()?;
    if passwd.contains(&0) {
        return None;
    }
    Some(Plain { authzid, authcid, passwd })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binary::compose_request;

    fn packet(opcode: u8, extras: &[u8], key: &[u8], value: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        // Any opcode: compose one and patch the opcode byte.
        compose_request(Opcode::Get, 9, 0, extras, key, value, &mut out);
        out[1] = opcode;
        out
    }

    fn reject(opcode: u8, status: Status, skip: usize, close: bool) -> BinParseError {
        BinParseError::Reject { opcode, opaque: 9, status, skip, close }
    }

    #[test]
    fn sasl_packets_pass_with_their_parts() {
        let limits = Limits::default();
        let wire = packet(SASL_AUTH, b"", b"PLAIN", b"\0u\0p");
        let Ok(Gate::Sasl(request, used)) = gate(&wire, &limits, false) else { panic!() };
        assert_eq!(
            (request.op, request.mech, request.data, used),
            (SaslOp::Auth, &b"PLAIN"[..], &b"\0u\0p"[..], wire.len())
        );
        assert_eq!(gate(&wire[..wire.len() - 1], &limits, false), Err(BinParseError::Incomplete));
        let list = packet(SASL_LIST_MECHS, b"", b"", b"");
        assert!(
            matches!(gate(&list, &limits, true), Ok(Gate::Sasl(r, 24)) if r.op == SaslOp::ListMechs)
        );
    }

    #[test]
    fn other_opcodes_wait_for_extras_and_key_then_are_refused() {
        let limits = Limits::default();
        let get = packet(0x00, b"", b"key", b"");
        assert_eq!(gate(&get[..26], &limits, false), Err(BinParseError::Incomplete));
        assert_eq!(gate(&get, &limits, false), Err(reject(0x00, Status::AuthError, 27, true)));
        assert_eq!(gate(&get, &limits, true), Ok(Gate::Other));
        let version = packet(VERSION, b"", b"", b"");
        assert_eq!(gate(&version, &limits, false), Ok(Gate::Other));
        let unknown = packet(0x50, b"", b"", b"");
        assert_eq!(gate(&unknown, &limits, false), Err(reject(0x50, Status::AuthError, 24, true)));
    }

    #[test]
    fn shapes_as_memcached_checks_them() {
        let limits = Limits::default();
        let cases: [(Vec<u8>, BinParseError); 5] = [
            (
                packet(SASL_LIST_MECHS, b"", b"x", b""),
                reject(0x20, Status::InvalidArguments, 25, true),
            ),
            (packet(SASL_AUTH, b"", b"", b"abc"), reject(0x21, Status::InvalidArguments, 27, true)),
            (
                packet(SASL_STEP, b"1234", b"PLAIN", b""),
                reject(0x22, Status::InvalidArguments, 33, true),
            ),
            (
                packet(SASL_AUTH, b"", &[b'P'; 33], b"ab"),
                reject(0x21, Status::InvalidArguments, 59, false),
            ),
            (
                packet(SASL_AUTH, b"", &[b'P'; 251], b""),
                reject(0x21, Status::InvalidArguments, 275, true),
            ),
        ];
        for (wire, expected) in cases {
            assert_eq!(gate(&wire, &limits, false), Err(expected));
        }
        let small = Limits { value_len_max: 4, ..Limits::default() };
        let big = packet(SASL_AUTH, b"", b"PLAIN", b"\0ab\0cd");
        assert_eq!(gate(&big, &small, false), Err(reject(0x21, Status::OutOfMemory, 35, false)));
    }

    #[test]
    fn plain_messages_split_as_cyrus_does() {
        let ok = parse_plain(b"z\0user\0pass").unwrap();
        assert_eq!((ok.authzid, ok.authcid, ok.passwd), (&b"z"[..], &b"user"[..], &b"pass"[..]));
        assert_eq!(parse_plain(b"\0u\0").unwrap().passwd, b"");
        for bad in [&b"user\0pass"[..], b"userpass", b"\0u\0p\0", b""] {
            assert_eq!(parse_plain(bad), None, "{bad:?}");
        }
    }
}
