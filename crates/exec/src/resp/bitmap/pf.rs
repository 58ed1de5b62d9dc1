//! PFADD PFCOUNT PFMERGE over Redis's HyperLogLog strings (`hll`).
//!
//! PFCOUNT of one key stores the count it computed in the value's header, as Redis does
//! (so the raw bytes stay equal to Redis's); a count with a valid cache is read from it.

use super::{
    count_read,
    hll::{self, Corrupt, REGISTERS},
    modify_string, read_string, read_string_uncounted, Ctx, Failure, Update,
};
use crate::resp::keyevents::class;

const NOT_HLL: &str = "WRONGTYPE Key is not a valid HyperLogLog string value.";
const CORRUPT: &str = "INVALIDOBJ Corrupted HLL object detected";

/// Why a HyperLogLog command failed.
enum PfError {
    /// A key of another kind, or a store refusal.
    Failure(Failure),
    /// A string that is not a HyperLogLog.
    NotHll,
    /// A sparse HyperLogLog whose runs do not add up.
    Corrupt,
}

impl From<Failure> for PfError {
    fn from(failure: Failure) -> PfError {
        PfError::Failure(failure)
    }
}

impl From<Corrupt> for PfError {
    fn from(_: Corrupt) -> PfError {
        PfError::Corrupt
    }
}

impl Ctx<'_> {
    fn pf_error(&mut self, e: PfError) {
        match e {
            PfError::Failure(failure) => self.failure(failure),
            PfError::NotHll => self.error(NOT_HLL),
            PfError::Corrupt => self.error(CORRUPT),
        }
    }
}

/// `hll-sparse-max-bytes`, as set (checked when set, so it parses).
pub(super) fn sparse_max(ctx: &Ctx<'_>) -> usize {
    let bytes = crate::resp::config_kept::value(ctx.shared, "hll-sparse-max-bytes");
    bytes.parse::<u64>().map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX))
}

pub(super) fn pfadd(ctx: &mut Ctx<'_>) {
    let elements: Vec<&[u8]> = (2..ctx.argc()).map(|i| ctx.arg(i)).collect();
    let sparse_max = sparse_max(ctx);
    let result = modify_string(ctx, 1, |current| {
        let (mut value, mut updated) = match current {
            None => (hll::new_sparse(), true),
            Some(value) if hll::is_hll(value) => (value.to_vec(), false),
            Some(_) => return (Update::Keep, Err(PfError::NotHll)),
        };
        for element in &elements {
            match hll::add(&mut value, element, sparse_max) {
                Ok(changed) => updated |= changed,
                // Redis keeps what the earlier elements changed.
                Err(Corrupt) => return (Update::Write(value), Err(PfError::Corrupt)),
            }
        }
        if !updated {
            return (Update::Keep, Ok(false));
        }
        hll::invalidate_cache(&mut value);
        (Update::Write(value), Ok(true))
    });
    match result.map_err(PfError::Failure).and_then(|r| r) {
        Ok(updated) => {
            if updated {
                ctx.wrote(class::STRING, "pfadd", 1);
            }
            ctx.reply().integer(i64::from(updated));
        }
        Err(e) => ctx.pf_error(e),
    }
}

pub(super) fn pfcount(ctx: &mut Ctx<'_>) {
    let result = if ctx.argc() > 2 { count_union(ctx) } else { count_one(ctx) };
    match result {
        Ok(count) => ctx.reply().integer(count as i64),
        Err(e) => ctx.pf_error(e),
    }
}

/// One key: the cached count, or a fresh one stored back into the header. A count the
/// store has no room to cache is still answered (Redis's PFCOUNT cannot fail that way).
/// Counted as a read, as Redis's `lookupKeyRead` counts it.
fn count_one(ctx: &mut Ctx<'_>) -> Result<u64, PfError> {
    let found = std::cell::Cell::new(true);
    let result = modify_string(ctx, 1, |current| {
        found.set(current.is_some());
        let Some(value) = current else {
            return (Update::Keep, Ok(0));
        };
        match count_of(value) {
            Ok((count, true)) => (Update::Keep, Ok(count)),
            Ok((count, false)) => {
                let mut value = value.to_vec();
                hll::set_cached_count(&mut value, count);
                (Update::Write(value), Ok(count))
            }
            Err(e) => (Update::Keep, Err(e)),
        }
    });
    count_read(ctx.counters, found.get());
    match result {
        Err(Failure::Store(_)) => {
            let read = |value: Option<&[u8]>| value.map_or(Ok((0, true)), count_of);
            read_string_uncounted(ctx, 1, read)?.map(|(count, _)| count)
        }
        result => result?,
    }
}

/// A HyperLogLog's count and whether it came from the cache.
fn count_of(value: &[u8]) -> Result<(u64, bool), PfError> {
    if !hll::is_hll(value) {
        return Err(PfError::NotHll);
    }
    if let Some(count) = hll::cached_count(value) {
        return Ok((count, true));
    }
    Ok((hll::estimate(&hll::histogram(value)?), false))
}

/// The registers of the given keys merged (missing keys count as empty), and whether one
/// of them was dense.
fn merged_registers(
    ctx: &mut Ctx<'_>,
    keys: std::ops::Range<usize>,
) -> Result<(Vec<u8>, bool), PfError> {
    let mut max = vec![0u8; REGISTERS];
    let mut any_dense = false;
    for index in keys {
        let merged = read_string(ctx, index, |value| match value {
            None => Ok(()),
            Some(value) if !hll::is_hll(value) => Err(PfError::NotHll),
            Some(value) => {
                any_dense |= hll::is_dense(value);
                hll::merge_into(&mut max, value).map_err(PfError::from)
            }
        });
        merged??;
    }
    Ok((max, any_dense))
}

/// Several keys: the count of their union, cached nowhere.
fn count_union(ctx: &mut Ctx<'_>) -> Result<u64, PfError> {
    let keys = 1..ctx.argc();
    let (max, _) = merged_registers(ctx, keys)?;
    Ok(hll::estimate(&hll::histogram_of_registers(&max)))
}

/// PFMERGE: the destination is a source too. It turns dense when a source is dense; the
/// merged registers are raised one by one in index order, as Redis does, so a sparse
/// destination ends with Redis's bytes.
pub(super) fn pfmerge(ctx: &mut Ctx<'_>) {
    let keys = 1..ctx.argc();
    let (max, any_dense) = match merged_registers(ctx, keys) {
        Ok(merged) => merged,
        Err(e) => return ctx.pf_error(e),
    };
    let sparse_max = sparse_max(ctx);
    let result = modify_string(ctx, 1, |current| {
        let mut value = match current {
            None => hll::new_sparse(),
            Some(value) if hll::is_hll(value) => value.to_vec(),
            Some(_) => return (Update::Keep, Err(PfError::NotHll)),
        };
        if any_dense && hll::to_dense(&mut value).is_err() {
            return (Update::Keep, Err(PfError::Corrupt));
        }
        for (index, &count) in max.iter().enumerate().filter(|(_, &count)| count > 0) {
            // The destination's own registers are in `max`: it was checked as a source.
            let _ = hll::raise(&mut value, index, count, sparse_max);
        }
        hll::invalidate_cache(&mut value);
        (Update::Write(value), Ok(()))
    });
    match result.map_err(PfError::Failure).and_then(|r| r) {
        Ok(()) => {
            ctx.wrote(class::STRING, "pfadd", 1);
            ctx.reply().ok();
        }
        Err(e) => ctx.pf_error(e),
    }
}
