//! Redis bitmaps and HyperLogLog, both on strings (`ValueKind::String`): a bitmap is the
//! string's bytes, bit 0 the most significant bit of byte 0; a HyperLogLog is Redis's own
//! string format (see `hll`), so GET and SET move it between Redis and Spinel unchanged.
//!
//! `bits` holds SETBIT GETBIT BITCOUNT BITPOS BITOP, `field` BITFIELD and BITFIELD_RO,
//! `pf` PFADD PFCOUNT PFMERGE, `hll` the HyperLogLog encoding. A change runs in one
//! `Store::modify_within` (under the key's lock) and rewrites the value, keeping the item's
//! flags and TTL; a key of another kind gets WRONGTYPE. As strings do, values may grow to
//! `proto-max-bulk-len` (bit offsets are refused past it, as in Redis) within half the
//! memory limit: a value that would not fit is refused with Redis's OOM error before it is
//! allocated, and the key is left as it was.

use proto_resp::commands::BitmapId;
use store::{Change, Item, StoreError, ValueKind};

pub(super) use super::typed::Failure;
use super::{count_read, strings::rewrite, Ctx, PROTO_MAX_BULK_LEN};

mod bits;
mod field;
mod hll;
mod pf;
mod pfdebug;

/// Runs one command of this family.
pub(super) fn dispatch(ctx: &mut Ctx<'_>, id: BitmapId) {
    use BitmapId as B;
    match id {
        B::Setbit => bits::setbit(ctx),
        B::Getbit => bits::getbit(ctx),
        B::Bitcount => bits::bitcount(ctx),
        B::Bitpos => bits::bitpos(ctx),
        B::Bitop => bits::bitop(ctx),
        B::Bitfield => field::bitfield(ctx, field::Access::ReadWrite),
        B::BitfieldRo => field::bitfield(ctx, field::Access::ReadOnly),
        B::Pfadd => pf::pfadd(ctx),
        B::Pfcount => pf::pfcount(ctx),
        B::Pfmerge => pf::pfmerge(ctx),
        B::Pfdebug => pfdebug::pfdebug(ctx),
        B::Pfselftest => pfdebug::pfselftest(ctx),
    }
}

/// Bit offsets must address a byte below `proto-max-bulk-len` (`getBitOffsetFromArgument`).
const BIT_OFFSET_BYTES_MAX: u64 = PROTO_MAX_BULK_LEN as u64;

const BIT_OFFSET_ERR: &str = "ERR bit offset is not an integer or out of range";

/// Parses a bit offset as `getBitOffsetFromArgument` does; with `width`, `#n` means
/// `n * width` (BITFIELD).
fn parse_bit_offset(text: &[u8], width: Option<u32>) -> Result<u64, &'static str> {
    let (digits, scale) = match (text.split_first(), width) {
        (Some((b'#', rest)), Some(width)) => (rest, i64::from(width)),
        _ => (text, 1),
    };
    let offset = proto_resp::args::parse_i64(digits).map_err(|_| BIT_OFFSET_ERR)?;
    // Redis multiplies in C; a product that overflows wraps there, and is refused below
    // when it wraps negative.
    let offset = offset.wrapping_mul(scale);
    if offset < 0 || (offset as u64 >> 3) >= BIT_OFFSET_BYTES_MAX {
        return Err(BIT_OFFSET_ERR);
    }
    Ok(offset as u64)
}

/// A string key's value for reading: `Ok(None)` when absent, WRONGTYPE for another kind.
/// Counted in `keyspace_hits`/`keyspace_misses` as Redis's `lookupKeyRead` counts (a key
/// of another kind is a hit).
fn read_string<R>(
    ctx: &mut Ctx<'_>,
    key_index: usize,
    f: impl FnOnce(Option<&[u8]>) -> R,
) -> Result<R, Failure> {
    let counters = ctx.counters;
    read_string_uncounted(ctx, key_index, |value| {
        count_read(counters, value.is_some());
        f(value)
    })
    .inspect_err(|_| count_read(counters, true))
}

/// [`read_string`] without counting the read (for a key already counted).
fn read_string_uncounted<R>(
    ctx: &mut Ctx<'_>,
    key_index: usize,
    f: impl FnOnce(Option<&[u8]>) -> R,
) -> Result<R, Failure> {
    let shared = ctx.shared;
    let reader = shared.core.store.reader();
    let item = reader.get(ctx.key(key_index));
    match item {
        Some(item) if item.value_kind() != ValueKind::String => Err(Failure::WrongType),
        item => Ok(f(item.as_ref().map(Item::value))),
    }
}

/// What a change of a string value decides.
enum Update {
    Keep,
    /// Store this value, keeping the item's flags and TTL.
    Write(Vec<u8>),
}

/// Runs `f` on a string key's value (`None` when absent) under the key's lock. `f` may
/// run again if the write waited for memory, so it computes from its argument alone.
fn modify_string<R>(
    ctx: &mut Ctx<'_>,
    key_index: usize,
    mut f: impl FnMut(Option<&[u8]>) -> (Update, R),
) -> Result<R, Failure> {
    let shared = ctx.shared;
    let key = ctx.key(key_index);
    let result =
        shared.core.store.modify_within(key, PROTO_MAX_BULK_LEN, |current| match current {
            Some(item) if item.value_kind() != ValueKind::String => {
                (Change::Keep, Err(Failure::WrongType))
            }
            current => match f(current.as_ref().map(Item::value)) {
                (Update::Keep, out) => (Change::Keep, Ok(out)),
                (Update::Write(value), out) => (rewrite(current.as_ref(), value), Ok(out)),
            },
        });
    match result {
        Ok((_, out)) => out,
        Err(e) => Err(Failure::Store(e)),
    }
}

/// The longest value key argument `key_index` may hold: `proto-max-bulk-len` or half the
/// memory limit (the most the store writes), less the key. Checked before a value is grown,
/// since a bit offset may ask for half a gigabyte.
fn value_room(ctx: &mut Ctx<'_>, key_index: usize) -> u64 {
    let max = PROTO_MAX_BULK_LEN.min(ctx.shared.core.store.memory_limit() / 2);
    max.saturating_sub(ctx.key(key_index).len()) as u64
}

/// The refusal of a value of `len` bytes that exceeds `room`.
fn too_large(room: u64, len: u64) -> Failure {
    let size = usize::try_from(len).unwrap_or(usize::MAX);
    Failure::Store(StoreError::TooLarge { size, max: room as usize })
}

#[cfg(test)]
mod tests;
