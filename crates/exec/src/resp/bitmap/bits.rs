//! SETBIT GETBIT BITCOUNT BITPOS BITOP, with Redis's argument checks in Redis's order
//! (`bitops.c`): which argument is parsed before the key is looked up matters, because a
//! missing key answers before later arguments are read.

use proto_resp::{
    args::{is_option, parse_i64},
    error,
};
use store::{Change, Expiry};

use super::{
    super::PROTO_MAX_BULK_LEN, modify_string, parse_bit_offset, read_string, too_large, value_room,
    Ctx, Failure, Update,
};
use crate::resp::keyevents::class;

const BIT_VALUE_ERR: &str = "ERR bit is not an integer or out of range";
const BIT_ARG_ERR: &str = "ERR The bit argument must be 1 or 0.";
const BITOP_NOT_ERR: &str = "ERR BITOP NOT must be called with a single source key.";

/// Bit `offset` of `bytes` (0 past the end).
pub(super) fn bit_at(bytes: &[u8], offset: u64) -> bool {
    let byte = usize::try_from(offset >> 3).unwrap_or(usize::MAX);
    bytes.get(byte).is_some_and(|b| b & (0x80 >> (offset & 7)) != 0)
}

/// Sets bit `offset` of `bytes`, which must be long enough.
pub(super) fn put_bit(bytes: &mut [u8], offset: u64, on: bool) {
    let (byte, mask) = ((offset >> 3) as usize, 0x80u8 >> (offset & 7));
    if on {
        bytes[byte] |= mask;
    } else {
        bytes[byte] &= !mask;
    }
}

pub(super) fn setbit(ctx: &mut Ctx<'_>) {
    let offset = match parse_bit_offset(ctx.arg(2), None) {
        Ok(offset) => offset,
        Err(message) => return ctx.error(message),
    };
    let on = match parse_i64(ctx.arg(3)) {
        Ok(on @ (0 | 1)) => on == 1,
        _ => return ctx.error(BIT_VALUE_ERR),
    };
    let room = value_room(ctx, 1);
    let needed = (offset >> 3) + 1;
    let result = modify_string(ctx, 1, |current| {
        let old = current.unwrap_or_default();
        let was = bit_at(old, offset);
        if current.is_some() && old.len() as u64 >= needed && was == on {
            return (Update::Keep, Ok((was, false)));
        }
        if needed > room && needed > old.len() as u64 {
            return (Update::Keep, Err(too_large(room, needed)));
        }
        let mut value = old.to_vec();
        value.resize(value.len().max(needed as usize), 0);
        put_bit(&mut value, offset, on);
        (Update::Write(value), Ok((was, true)))
    });
    match result.and_then(|r| r) {
        Ok((was, changed)) => {
            // As Redis 7.0: a bit set to what it was changes nothing, so no event and no
            // invalidation.
            if changed {
                ctx.wrote(class::STRING, "setbit", 1);
            }
            ctx.reply().integer(i64::from(was));
        }
        Err(failure) => ctx.failure(failure),
    }
}

pub(super) fn getbit(ctx: &mut Ctx<'_>) {
    let offset = match parse_bit_offset(ctx.arg(2), None) {
        Ok(offset) => offset,
        Err(message) => return ctx.error(message),
    };
    match read_string(ctx, 1, |value| bit_at(value.unwrap_or_default(), offset)) {
        Ok(bit) => ctx.reply().integer(i64::from(bit)),
        Err(failure) => ctx.failure(failure),
    }
}

/// A range in bytes, with the bits to leave out of its first and last byte (BIT ranges).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: usize,
    /// Inclusive.
    end: usize,
    /// Bits of `start`'s byte before the range.
    skip_head: u32,
    /// Bits of `end`'s byte after the range.
    skip_tail: u32,
}

/// Converts a start/end pair (negative counts from the end) over `len` units, bytes or
/// bits, into a byte span; `None` when empty. As Redis's BITCOUNT and BITPOS.
fn span(len: usize, start: i64, end: i64, in_bits: bool) -> Option<Span> {
    let total = if in_bits { len as i64 * 8 } else { len as i64 };
    let clamp = |i: i64| if i < 0 { (total + i).max(0) } else { i };
    let (start, end) = (clamp(start), clamp(end).min(total - 1));
    if start > end {
        return None;
    }
    let (start, end) = (start as usize, end as usize);
    Some(if in_bits {
        let skip_head = (start & 7) as u32;
        let skip_tail = 7 - (end & 7) as u32;
        Span { start: start >> 3, end: end >> 3, skip_head, skip_tail }
    } else {
        Span { start, end, skip_head: 0, skip_tail: 0 }
    })
}

/// The bytes of a span with the bits outside it set to `fill`.
fn masked_bytes(bytes: &[u8], span: Span, fill: bool) -> impl Iterator<Item = u8> + '_ {
    let head_mask = !(0xffu8 >> span.skip_head);
    let tail_mask = ((1u16 << span.skip_tail) - 1) as u8;
    (span.start..=span.end).map(move |i| {
        let mut outside = 0u8;
        if i == span.start {
            outside |= head_mask;
        }
        if i == span.end {
            outside |= tail_mask;
        }
        if fill {
            bytes[i] | outside
        } else {
            bytes[i] & !outside
        }
    })
}

/// `BIT` or `BYTE` (any case); `None` for anything else.
fn unit_option(arg: &[u8]) -> Option<bool> {
    if is_option(arg, "BIT") {
        Some(true)
    } else if is_option(arg, "BYTE") {
        Some(false)
    } else {
        None
    }
}

/// A range argument: start, end (inclusive, negative from the end) and whether they
/// count bits; or an answer already known from the arguments alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Range {
    Whole,
    Part {
        start: i64,
        end: i64,
        in_bits: bool,
    },
    /// BITCOUNT's `start > end`, both negative: 0 before the unit is read.
    Empty,
}

impl Range {
    fn span(self, len: usize) -> Option<Span> {
        match self {
            Range::Whole => span(len, 0, -1, false),
            Range::Part { start, end, in_bits } => span(len, start, end, in_bits),
            Range::Empty => None,
        }
    }
}

/// BITCOUNT's arguments after the key. Redis reads them only once the key is found to be
/// a string, so the error (if any) is replied only then; reading them first changes
/// nothing else, since parsing has no effect.
fn bitcount_range(ctx: &Ctx<'_>) -> Result<Range, &'static str> {
    match ctx.argc() {
        2 => Ok(Range::Whole),
        4 | 5 => {
            let start = parse_i64(ctx.arg(2)).map_err(|e| e.message())?;
            let end = parse_i64(ctx.arg(3)).map_err(|e| e.message())?;
            if start < 0 && end < 0 && start > end {
                return Ok(Range::Empty);
            }
            let in_bits = match ctx.argc() {
                5 => unit_option(ctx.arg(4)).ok_or(error::SYNTAX)?,
                _ => false,
            };
            Ok(Range::Part { start, end, in_bits })
        }
        _ => Err(error::SYNTAX),
    }
}

pub(super) fn bitcount(ctx: &mut Ctx<'_>) {
    let range = bitcount_range(ctx);
    let counted = read_string(ctx, 1, |value| match value {
        None => Ok(0),
        Some(value) => range.map(|range| {
            range.span(value.len()).map_or(0, |span| {
                masked_bytes(value, span, false).map(|b| u64::from(b.count_ones())).sum()
            })
        }),
    });
    match counted {
        Ok(Ok(count)) => ctx.reply().integer(count as i64),
        Ok(Err(message)) => ctx.error(message),
        Err(failure) => ctx.failure(failure),
    }
}

pub(super) fn bitpos(ctx: &mut Ctx<'_>) {
    let bit = match parse_i64(ctx.arg(2)) {
        Ok(bit @ (0 | 1)) => bit == 1,
        Ok(_) => return ctx.error(BIT_ARG_ERR),
        Err(e) => return ctx.error(e.message()),
    };
    // Read only if the key is a string, as in BITCOUNT.
    let range = bitpos_range(ctx);
    let found = read_string(ctx, 1, |value| match value {
        None => Ok(if bit { -1 } else { 0 }),
        Some(value) => {
            range.map(|(range, end_given)| find_bit(value, range.span(value.len()), bit, end_given))
        }
    });
    match found {
        Ok(Ok(position)) => ctx.reply().integer(position),
        Ok(Err(message)) => ctx.error(message),
        Err(failure) => ctx.failure(failure),
    }
}

/// The first bit equal to `bit` in the span, or -1.
fn find_bit(value: &[u8], span: Option<Span>, bit: bool, end_given: bool) -> i64 {
    let Some(span) = span else {
        return -1;
    };
    let first = masked_bytes(value, span, !bit).enumerate().find_map(|(i, b)| {
        let b = if bit { b } else { !b };
        (b != 0).then(|| (span.start + i) as i64 * 8 + i64::from(b.leading_zeros()))
    });
    // Looking for a clear bit with no end given, the string counts as followed by zeros:
    // the answer is the first bit after the range.
    first.or((!bit && !end_given).then(|| (span.end as i64 + 1) * 8)).unwrap_or(-1)
}

/// BITPOS's optional start, end and unit, and whether an end was given.
fn bitpos_range(ctx: &Ctx<'_>) -> Result<(Range, bool), &'static str> {
    if ctx.argc() == 3 {
        return Ok((Range::Whole, false));
    }
    if ctx.argc() > 6 {
        return Err(error::SYNTAX);
    }
    let start = parse_i64(ctx.arg(3)).map_err(|e| e.message())?;
    let in_bits = match ctx.argc() {
        6 => unit_option(ctx.arg(5)).ok_or(error::SYNTAX)?,
        _ => false,
    };
    let end = match ctx.argc() {
        4 => None,
        _ => Some(parse_i64(ctx.arg(4)).map_err(|e| e.message())?),
    };
    Ok((Range::Part { start, end: end.unwrap_or(-1), in_bits }, end.is_some()))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

pub(super) fn bitop(ctx: &mut Ctx<'_>) {
    let name = ctx.arg(1);
    let op = [("AND", BitOp::And), ("OR", BitOp::Or), ("XOR", BitOp::Xor), ("NOT", BitOp::Not)]
        .into_iter()
        .find_map(|(text, op)| is_option(name, text).then_some(op));
    let Some(op) = op else {
        return ctx.error(error::SYNTAX);
    };
    if op == BitOp::Not && ctx.argc() != 4 {
        return ctx.error(BITOP_NOT_ERR);
    }
    let mut sources = Vec::with_capacity(ctx.argc() - 3);
    for index in 3..ctx.argc() {
        match read_string(ctx, index, |value| value.map(<[u8]>::to_vec).unwrap_or_default()) {
            Ok(value) => sources.push(value),
            Err(failure) => return ctx.failure(failure),
        }
    }
    let result = combine(op, &sources);
    let len = result.len();
    if let Err(failure) = store_result(ctx, result) {
        return ctx.failure(failure);
    }
    ctx.stored(class::STRING, "set", 2, len > 0);
    ctx.reply().integer(len as i64);
}

/// The result of `op` over `sources`, as long as the longest (shorter ones count as
/// zero-padded).
fn combine(op: BitOp, sources: &[Vec<u8>]) -> Vec<u8> {
    let len = sources.iter().map(Vec::len).max().unwrap_or(0);
    let byte = |source: &Vec<u8>, i: usize| source.get(i).copied().unwrap_or(0);
    (0..len)
        .map(|i| {
            let rest = sources[1..].iter().map(|source| byte(source, i));
            let first = byte(&sources[0], i);
            match op {
                BitOp::And => rest.fold(first, |acc, b| acc & b),
                BitOp::Or => rest.fold(first, |acc, b| acc | b),
                BitOp::Xor => rest.fold(first, |acc, b| acc ^ b),
                BitOp::Not => !first,
            }
        })
        .collect()
}

/// Stores BITOP's result as Redis's `setKey` does: a plain string without TTL, whatever
/// the key held; an empty result deletes the key.
fn store_result(ctx: &mut Ctx<'_>, value: Vec<u8>) -> Result<(), Failure> {
    let room = value_room(ctx, 2);
    if value.len() as u64 > room {
        return Err(too_large(room, value.len() as u64));
    }
    let shared = ctx.shared;
    // The closure may run again (after waiting for memory), so each run builds its own.
    let key = ctx.key(2);
    let mut deleted = false;
    let written = shared.core.store.modify_within(key, PROTO_MAX_BULK_LEN, |current| {
        deleted = value.is_empty() && current.is_some();
        let change = match value.is_empty() {
            true => Change::Delete,
            false => Change::Write { value: value.clone(), flags: 0, expiry: Expiry::Never },
        };
        (change, ())
    });
    if deleted && written.is_ok() {
        ctx.outcome.note_emptied();
    }
    written.map(|_| ()).map_err(Failure::Store)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: spans in bytes and bits clamp and convert as Redis's BITCOUNT does. Method:
    /// edge tables, and the bits counted under a BIT span's masks.
    #[test]
    fn spans() {
        assert_eq!(span(3, 0, -1, false), Some(Span { start: 0, end: 2, ..span0() }));
        assert_eq!(span(3, -100, 100, false), Some(Span { start: 0, end: 2, ..span0() }));
        assert_eq!(span(3, 2, 1, false), None);
        assert_eq!(span(0, 0, -1, false), None);
        let bits = span(3, 5, 17, true).unwrap();
        assert_eq!(bits, Span { start: 0, end: 2, skip_head: 5, skip_tail: 6 });
        let bytes = [0xff, 0xff, 0xff];
        let ones: u32 = masked_bytes(&bytes, bits, false).map(u8::count_ones).sum();
        assert_eq!(ones, 13);
    }

    fn span0() -> Span {
        Span { start: 0, end: 0, skip_head: 0, skip_tail: 0 }
    }

    /// Goal: each BITOP operation over sources of different lengths (shorter ones count as
    /// zero-padded). Method: byte tables.
    #[test]
    fn bit_ops() {
        let a = vec![0b1100_0000, 0xff];
        let b = vec![0b1010_0000];
        assert_eq!(combine(BitOp::And, &[a.clone(), b.clone()]), vec![0b1000_0000, 0]);
        assert_eq!(combine(BitOp::Or, &[a.clone(), b.clone()]), vec![0b1110_0000, 0xff]);
        assert_eq!(combine(BitOp::Xor, &[a.clone(), b]), vec![0b0110_0000, 0xff]);
        assert_eq!(combine(BitOp::Not, &[a]), vec![0b0011_1111, 0]);
        assert!(combine(BitOp::Or, &[vec![], vec![]]).is_empty());
    }
}
