//! Requests: [`parse_request`] for the server, [`compose_request`] for clients.

// SASL opcodes reach this parser only without `-S` (with it, `sasl::gate` takes them
// first), and memcached answers them `Unknown command` then.
use super::sasl::{SASL_AUTH, SASL_LIST_MECHS, SASL_STEP};
use super::{Header, Opcode, Status, HEADER_LEN, REQUEST_MAGIC};
use crate::Limits;

/// One request packet, borrowing its extras, key and value from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BinRequest<'a> {
    pub opcode: Opcode,
    pub data_type: u8,
    pub vbucket: u16,
    /// Echoed in every reply, so a client can match replies to a pipeline of quiet requests.
    pub opaque: u32,
    /// Compare-and-swap unique for the store family and delete; 0 for none.
    pub cas: u64,
    pub extras: &'a [u8],
    pub key: &'a [u8],
    pub value: &'a [u8],
}

/// Why [`parse_request`] produced no request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinParseError {
    /// More bytes are needed; call again with the same bytes plus more.
    Incomplete,
    /// Answer `status` (its message as body) under `opcode` and `opaque`, drop `skip` bytes
    /// (the whole packet; may be more than the buffer holds: drop the rest as it arrives),
    /// then hang up if `close`.
    Reject { opcode: u8, opaque: u32, status: Status, skip: usize, close: bool },
    /// Not a request packet (wrong magic): hang up without a reply, as memcached does.
    Close,
}

impl BinRequest<'_> {
    fn u32_at(&self, at: usize) -> u32 {
        let bytes = self.extras.get(at..at + 4).and_then(|b| b.try_into().ok());
        bytes.map_or(0, u32::from_be_bytes)
    }

    fn u64_at(&self, at: usize) -> u64 {
        u64::from(self.u32_at(at)) << 32 | u64::from(self.u32_at(at + 4))
    }

    /// Set/Add/Replace extras: client flags and exptime.
    pub fn flags_and_exptime(&self) -> (u32, u32) {
        (self.u32_at(0), self.u32_at(4))
    }

    /// Increment/Decrement extras: delta, initial value, exptime (0xffffffff: a missing key
    /// is not created).
    pub fn arith(&self) -> (u64, u64, u32) {
        (self.u64_at(0), self.u64_at(8), self.u32_at(16))
    }

    /// Touch/GAT exptime, or Flush's delay (0 when Flush has no extras).
    pub fn exptime(&self) -> u32 {
        self.u32_at(0)
    }

    /// Appends the packet as a client sends it.
    pub fn compose(&self, out: &mut Vec<u8>) {
        let header = Header {
            magic: REQUEST_MAGIC,
            opcode: self.opcode as u8,
            data_type: self.data_type,
            vbucket_or_status: self.vbucket,
            opaque: self.opaque,
            cas: self.cas,
            ..Header::default()
        };
        write_packet(header, self.extras, self.key, self.value, out);
    }
}

/// Appends a request packet with vbucket and data type 0.
pub fn compose_request(
    opcode: Opcode,
    opaque: u32,
    cas: u64,
    extras: &[u8],
    key: &[u8],
    value: &[u8],
    out: &mut Vec<u8>,
) {
    let header =
        Header { magic: REQUEST_MAGIC, opcode: opcode as u8, opaque, cas, ..Header::default() };
    write_packet(header, extras, key, value, out);
}

/// Fills in the lengths and appends header and body.
pub(super) fn write_packet(
    header: Header,
    extras: &[u8],
    key: &[u8],
    value: &[u8],
    out: &mut Vec<u8>,
) {
    write_packet_or_lend(header, (extras, key), value, |_| false, out);
}

/// [`write_packet`], unless `lend` takes the value: it gets the offset in `out` where the
/// value belongs and returns true if it lent it (the caller places it there before `out`
/// is sent; nothing of it is written).
#[inline(always)]
pub(super) fn write_packet_or_lend(
    mut header: Header,
    (extras, key): (&[u8], &[u8]),
    value: &[u8],
    lend: impl FnOnce(usize) -> bool,
    out: &mut Vec<u8>,
) {
    // Lengths beyond the fields' widths cannot be framed; callers stay far below them.
    header.key_len = u16::try_from(key.len()).expect("key fits a u16 length");
    header.extras_len = u8::try_from(extras.len()).expect("extras fit a u8 length");
    header.body_len =
        u32::try_from(extras.len() + key.len() + value.len()).expect("body fits a u32 length");
    out.reserve(HEADER_LEN + extras.len() + key.len());
    header.write(out);
    out.extend_from_slice(extras);
    out.extend_from_slice(key);
    if !lend(out.len()) {
        out.extend_from_slice(value);
    }
}

/// Parses the request packet at the start of `input`, and returns how many bytes it took.
///
/// As memcached 1.6: a header whose first byte is not 0x80 hangs up; extras and key longer than the
/// body get `Unknown command` and a hang-up; a key over `limits.key_len_max` or extras,
/// key or body lengths the opcode does not allow get `Invalid arguments` and a hang-up; an
/// opcode it does not serve gets `Unknown command` and the packet is skipped; a value over
/// `limits.value_len_max` gets `Too large.` and is skipped (decided from the header, so the
/// value is never buffered). Differences: memcached skips an unknown opcode's body after
/// already reading its extras and key, which desynchronises the stream; we skip exactly
/// the packet. Any other body over the bounds of its opcode gets `Invalid arguments` and a
/// hang-up rather than being buffered.
pub fn parse_request<'a>(
    input: &'a [u8],
    limits: &Limits,
) -> Result<(BinRequest<'a>, usize), BinParseError> {
    // memcached judges the magic once the whole header is there.
    let Some(header) = Header::read(input) else { return Err(BinParseError::Incomplete) };
    let opcode =
        check_header(&header, limits).map_err(|e| wait_for_refused_key(e, &header, input))?;
    let total = HEADER_LEN + header.body_len as usize;
    let Some(body) = input.get(HEADER_LEN..total) else { return Err(BinParseError::Incomplete) };
    let (extras, rest) = body.split_at(usize::from(header.extras_len));
    let (key, value) = rest.split_at(usize::from(header.key_len));
    let request = BinRequest {
        opcode,
        data_type: header.data_type,
        vbucket: header.vbucket_or_status,
        opaque: header.opaque,
        cas: header.cas,
        extras,
        key,
        value,
    };
    Ok((request, total))
}

/// A Set refused as too large is answered once its key is in: the server drops the old item
/// under that key ([`refused_set_key`]), as memcached does so that stale data does not
/// outlive a failed set. The key is at most `key_len_max` bytes, so the wait is bounded.
fn wait_for_refused_key(error: BinParseError, header: &Header, input: &[u8]) -> BinParseError {
    let key_end = HEADER_LEN + usize::from(header.extras_len) + usize::from(header.key_len);
    match error {
        BinParseError::Reject { status: Status::TooLarge, .. }
            if is_set(header.opcode) && input.len() < key_end =>
        {
            BinParseError::Incomplete
        }
        other => other,
    }
}

fn is_set(opcode: u8) -> bool {
    Opcode::from_u8(opcode).is_some_and(|op| op.loud().0 == Opcode::Set)
}

/// The key of the Set or SetQ packet at the start of `input`, once [`parse_request`] has
/// refused it as too large (`Too large.`): memcached unlinks the old item under that key
/// (any other refused store keeps it). None for any other opcode; call it for a `TooLarge`
/// refusal only (for another one the key may exceed the limit or not be a key at all).
pub fn refused_set_key(input: &[u8]) -> Option<&[u8]> {
    let header = Header::read(input)?;
    if !is_set(header.opcode) {
        return None;
    }
    let start = HEADER_LEN + usize::from(header.extras_len);
    input.get(start..start + usize::from(header.key_len))
}

/// Every check memcached makes, from the header alone.
fn check_header(header: &Header, limits: &Limits) -> Result<Opcode, BinParseError> {
    if header.magic != REQUEST_MAGIC {
        return Err(BinParseError::Close);
    }
    let reject = |status, close| BinParseError::Reject {
        opcode: header.opcode,
        opaque: header.opaque,
        status,
        skip: HEADER_LEN + header.body_len as usize,
        close,
    };
    let (key, extras, body) =
        (usize::from(header.key_len), usize::from(header.extras_len), header.body_len as usize);
    if key + extras > body {
        return Err(reject(Status::UnknownCommand, true));
    }
    let Some(opcode) = Opcode::from_u8(header.opcode) else {
        // SASL without `-S`: memcached checks the packet's shape before refusing it.
        let sasl_shape_ok = match header.opcode {
            SASL_LIST_MECHS => key == 0 && extras == 0 && body == 0,
            SASL_AUTH | SASL_STEP => key > 0 && extras == 0,
            _ => true,
        };
        return Err(reject(
            if sasl_shape_ok { Status::UnknownCommand } else { Status::InvalidArguments },
            !sasl_shape_ok,
        ));
    };
    if key > limits.key_len_max || !shape_ok(opcode.loud().0, key, extras, body) {
        return Err(reject(Status::InvalidArguments, true));
    }
    let value = body - key - extras;
    if value > limits.value_len_max {
        let stores = matches!(
            opcode.loud().0,
            Opcode::Set | Opcode::Add | Opcode::Replace | Opcode::Append | Opcode::Prepend
        );
        return Err(reject(
            if stores { Status::TooLarge } else { Status::InvalidArguments },
            !stores,
        ));
    }
    Ok(opcode)
}

/// memcached's per-opcode rules for the extras, key and body lengths.
fn shape_ok(loud: Opcode, key: usize, extras: usize, body: usize) -> bool {
    use Opcode::*;
    match loud {
        Version | Noop | Quit => key == 0 && extras == 0 && body == 0,
        Flush => key == 0 && body == extras && (extras == 0 || extras == 4),
        Set | Add | Replace => extras == 8 && key > 0,
        Get | GetK | Delete => extras == 0 && key > 0 && body == key,
        Increment | Decrement => extras == 20 && key > 0 && body == key + extras,
        Append | Prepend => extras == 0 && key > 0,
        Stat => extras == 0,
        Touch | Gat | GatK => extras == 4 && key > 0,
        GetQ | GetKQ | SetQ | AddQ | ReplaceQ | DeleteQ | IncrementQ | DecrementQ | QuitQ
        | FlushQ | AppendQ | PrependQ | GatQ | GatKQ => unreachable!("only loud opcodes"),
    }
}
