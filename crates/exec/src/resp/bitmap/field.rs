//! BITFIELD and BITFIELD_RO: integers of 1 to 64 bits (unsigned up to 63) at any bit
//! offset, most significant bit first, with Redis's overflow rules (WRAP, SAT, FAIL).
//!
//! As in Redis, every operation is parsed (and any error replied) before the key is
//! looked up; a write grows the string to the highest bit written before the first
//! operation runs, so it creates the key even when every write fails under FAIL.

use proto_resp::{args::parse_i64, error};

use super::{
    bits::{bit_at, put_bit},
    modify_string, parse_bit_offset, read_string, too_large, value_room, Ctx, Update,
};
use crate::resp::keyevents::class;

const TYPE_ERR: &str = concat!(
    "ERR Invalid bitfield type. Use something like i16 u8. ",
    "Note that u64 is not supported but i64 is."
);
const OVERFLOW_ERR: &str = "ERR Invalid OVERFLOW type specified";
const READONLY_ERR: &str = "ERR BITFIELD_RO only supports the GET subcommand";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    ReadWrite,
    ReadOnly,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Get,
    Set(i64),
    IncrBy(i64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Op {
    action: Action,
    offset: u64,
    bits: u32,
    signed: bool,
    overflow: Overflow,
}

pub(super) fn bitfield(ctx: &mut Ctx<'_>, access: Access) {
    let ops = match parse_ops(ctx) {
        Ok(ops) => ops,
        Err(message) => return ctx.error(message),
    };
    let highest_bit = ops
        .iter()
        .filter(|op| op.action != Action::Get)
        .map(|op| op.offset + u64::from(op.bits) - 1)
        .max();
    let Some(highest_bit) = highest_bit else {
        let replies = read_string(ctx, 1, |value| run_reads(value.unwrap_or_default(), &ops));
        return match replies {
            Ok(replies) => reply_all(ctx, &replies),
            Err(failure) => ctx.failure(failure),
        };
    };
    if access == Access::ReadOnly {
        return ctx.error(READONLY_ERR);
    }
    let room = value_room(ctx, 1);
    let needed = (highest_bit >> 3) + 1;
    let result = modify_string(ctx, 1, |current| {
        let old = current.unwrap_or_default();
        if needed > room && needed > old.len() as u64 {
            return (Update::Keep, Err(too_large(room, needed)));
        }
        let mut value = old.to_vec();
        value.resize(value.len().max(needed as usize), 0);
        let replies: Vec<Option<i64>> = ops.iter().map(|op| apply(&mut value, op)).collect();
        let changed = current != Some(&value[..]);
        let update = if changed { Update::Write(value) } else { Update::Keep };
        (update, Ok((replies, changed)))
    });
    match result.and_then(|r| r) {
        Ok((replies, changed)) => {
            // As redis-server 7.0: the event (and invalidation) only when the value changed,
            // not for a SET of the same value or writes FAIL refused.
            if changed {
                ctx.wrote(class::STRING, "setbit", 1);
            }
            reply_all(ctx, &replies);
        }
        Err(failure) => ctx.failure(failure),
    }
}

fn reply_all(ctx: &mut Ctx<'_>, replies: &[Option<i64>]) {
    let mut reply = ctx.reply();
    reply.array(replies.len());
    for value in replies {
        match value {
            Some(n) => reply.integer(*n),
            None => reply.null(),
        }
    }
}

fn run_reads(value: &[u8], ops: &[Op]) -> Vec<Option<i64>> {
    ops.iter().map(|op| Some(read_field(value, op))).collect()
}

/// Parses every operation, as `bitfieldGeneric`'s first loop does.
fn parse_ops(ctx: &Ctx<'_>) -> Result<Vec<Op>, &'static str> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < ctx.argc() {
        let left = ctx.argc() - j - 1;
        let name = ctx.arg(j).to_ascii_lowercase();
        let takes_value = match name.as_slice() {
            b"get" if left >= 2 => false,
            b"set" | b"incrby" if left >= 3 => true,
            b"overflow" if left >= 1 => {
                overflow = parse_overflow(ctx.arg(j + 1))?;
                j += 2;
                continue;
            }
            _ => return Err(error::SYNTAX),
        };
        let (signed, bits) = parse_type(ctx.arg(j + 1))?;
        let offset = parse_bit_offset(ctx.arg(j + 2), Some(bits))?;
        let action = match (takes_value, name.as_slice()) {
            (false, _) => Action::Get,
            (true, b"set") => Action::Set(parse_i64(ctx.arg(j + 3)).map_err(|e| e.message())?),
            (true, _) => Action::IncrBy(parse_i64(ctx.arg(j + 3)).map_err(|e| e.message())?),
        };
        ops.push(Op { action, offset, bits, signed, overflow });
        j += if takes_value { 4 } else { 3 };
    }
    Ok(ops)
}

fn parse_overflow(arg: &[u8]) -> Result<Overflow, &'static str> {
    match arg.to_ascii_lowercase().as_slice() {
        b"wrap" => Ok(Overflow::Wrap),
        b"sat" => Ok(Overflow::Sat),
        b"fail" => Ok(Overflow::Fail),
        _ => Err(OVERFLOW_ERR),
    }
}

/// `i1`..`i64` or `u1`..`u63` (lowercase only, as Redis reads it).
fn parse_type(arg: &[u8]) -> Result<(bool, u32), &'static str> {
    let (signed, width) = match arg.split_first() {
        Some((b'i', width)) => (true, width),
        Some((b'u', width)) => (false, width),
        _ => return Err(TYPE_ERR),
    };
    let max = if signed { 64 } else { 63 };
    match parse_i64(width) {
        Ok(bits) if (1..=max).contains(&bits) => Ok((signed, bits as u32)),
        _ => Err(TYPE_ERR),
    }
}

/// The field's bits as an unsigned number.
fn get_unsigned(bytes: &[u8], offset: u64, bits: u32) -> u64 {
    (0..u64::from(bits)).fold(0, |acc, j| acc << 1 | u64::from(bit_at(bytes, offset + j)))
}

fn get_signed(bytes: &[u8], offset: u64, bits: u32) -> i64 {
    let raw = get_unsigned(bytes, offset, bits);
    if bits < 64 && raw & (1 << (bits - 1)) != 0 {
        (raw | (u64::MAX << bits)) as i64
    } else {
        raw as i64
    }
}

fn put_field(bytes: &mut [u8], offset: u64, bits: u32, value: u64) {
    for j in 0..u64::from(bits) {
        let on = value & (1 << (u64::from(bits) - 1 - j)) != 0;
        put_bit(bytes, offset + j, on);
    }
}

fn read_field(bytes: &[u8], op: &Op) -> i64 {
    if op.signed {
        get_signed(bytes, op.offset, op.bits)
    } else {
        get_unsigned(bytes, op.offset, op.bits) as i64
    }
}

/// Runs one operation on a value long enough for it; the reply, `None` when FAIL
/// refused a write.
fn apply(value: &mut [u8], op: &Op) -> Option<i64> {
    let (written, reply) = match op.action {
        Action::Get => return Some(read_field(value, op)),
        Action::Set(new) if op.signed => {
            let old = get_signed(value, op.offset, op.bits);
            (signed_overflow(new, 0, op), old)
        }
        Action::IncrBy(incr) if op.signed => {
            let old = get_signed(value, op.offset, op.bits);
            let new = signed_overflow(old, incr, op);
            (new, new.unwrap_or(0))
        }
        Action::Set(new) => {
            let old = get_unsigned(value, op.offset, op.bits);
            (unsigned_overflow(new as u64, 0, op).map(|n| n as i64), old as i64)
        }
        Action::IncrBy(incr) => {
            let old = get_unsigned(value, op.offset, op.bits);
            let new = unsigned_overflow(old, incr, op).map(|n| n as i64);
            (new, new.unwrap_or(0))
        }
    };
    let new = written?;
    put_field(value, op.offset, op.bits, new as u64);
    Some(reply)
}

/// `value + incr` stored in an unsigned field: `None` when it overflows under FAIL.
/// As Redis's `checkUnsignedBitfieldOverflow`, including its two's complement casts.
fn unsigned_overflow(value: u64, incr: i64, op: &Op) -> Option<u64> {
    let max = (1u64 << op.bits) - 1;
    let max_incr = max.wrapping_sub(value) as i64;
    let min_incr = 0u64.wrapping_sub(value) as i64;
    let wrapped = value.wrapping_add(incr as u64) & max;
    let (over, under) = (value > max || (incr > 0 && incr > max_incr), incr < 0 && incr < min_incr);
    match (over || under, op.overflow) {
        (false, _) => Some(value.wrapping_add(incr as u64)),
        (true, Overflow::Wrap) => Some(wrapped),
        (true, Overflow::Sat) => Some(if over { max } else { 0 }),
        (true, Overflow::Fail) => None,
    }
}

/// `value + incr` stored in a signed field, as Redis's `checkSignedBitfieldOverflow`.
fn signed_overflow(value: i64, incr: i64, op: &Op) -> Option<i64> {
    let wide = op.bits == 64;
    let max = if wide { i64::MAX } else { (1i64 << (op.bits - 1)) - 1 };
    let min = -max - 1;
    let max_incr = (max as u64).wrapping_sub(value as u64) as i64;
    let min_incr = min.wrapping_sub(value);
    let over =
        value > max || (!wide && incr > max_incr) || (value >= 0 && incr > 0 && incr > max_incr);
    let under =
        value < min || (!wide && incr < min_incr) || (value < 0 && incr < 0 && incr < min_incr);
    match (over || under, op.overflow) {
        (false, _) => Some(value.wrapping_add(incr)),
        (true, Overflow::Wrap) => Some(wrap_signed(value, incr, op.bits)),
        (true, Overflow::Sat) => Some(if over { max } else { min }),
        (true, Overflow::Fail) => None,
    }
}

fn wrap_signed(value: i64, incr: i64, bits: u32) -> i64 {
    let sum = (value as u64).wrapping_add(incr as u64);
    if bits == 64 {
        return sum as i64;
    }
    let mask = u64::MAX << bits;
    let negative = sum & (1 << (bits - 1)) != 0;
    (if negative { sum | mask } else { sum & !mask }) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(action: Action, signed: bool, bits: u32, overflow: Overflow) -> Op {
        Op { action, offset: 0, bits, signed, overflow }
    }

    /// Goal: Redis's overflow results at the edges of each type.
    #[test]
    fn overflow_rules() {
        let u8_wrap = op(Action::Get, false, 8, Overflow::Wrap);
        assert_eq!(unsigned_overflow(250, 10, &u8_wrap), Some(4));
        assert_eq!(unsigned_overflow(5, -10, &u8_wrap), Some(251));
        let u8_sat = Op { overflow: Overflow::Sat, ..u8_wrap };
        assert_eq!(unsigned_overflow(250, 10, &u8_sat), Some(255));
        assert_eq!(unsigned_overflow(5, -10, &u8_sat), Some(0));
        assert_eq!(unsigned_overflow(-1i64 as u64, 0, &u8_sat), Some(255));
        let u8_fail = Op { overflow: Overflow::Fail, ..u8_wrap };
        assert_eq!(unsigned_overflow(250, 10, &u8_fail), None);
        let i8_wrap = op(Action::Get, true, 8, Overflow::Wrap);
        assert_eq!(signed_overflow(120, 10, &i8_wrap), Some(-126));
        assert_eq!(signed_overflow(-120, -10, &i8_wrap), Some(126));
        let i8_sat = Op { overflow: Overflow::Sat, ..i8_wrap };
        assert_eq!(signed_overflow(120, 10, &i8_sat), Some(127));
        assert_eq!(signed_overflow(-120, -10, &i8_sat), Some(-128));
        let i64_wrap = op(Action::Get, true, 64, Overflow::Wrap);
        assert_eq!(signed_overflow(i64::MAX, 1, &i64_wrap), Some(i64::MIN));
    }

    /// Goal: fields read back as written at unaligned offsets, with sign extension.
    #[test]
    fn fields_round_trip() {
        let mut bytes = vec![0u8; 16];
        put_field(&mut bytes, 3, 13, 0x1abc);
        assert_eq!(get_unsigned(&bytes, 3, 13), 0x1abc);
        assert_eq!(get_signed(&bytes, 3, 13), 0x1abc - 0x2000);
        put_field(&mut bytes, 60, 64, u64::MAX - 5);
        assert_eq!(get_signed(&bytes, 60, 64), -6);
        assert_eq!(get_unsigned(&bytes, 0, 3), 0);
    }
}
