//! Redis's HyperLogLog string format, so that the raw bytes (GET/SET) move between Redis
//! and Spinel and count the same on both.
//!
//! Layout (Redis's `hyperloglog.c`, rewritten from its description):
//!
//! ```text
//! "HYLL" | encoding (0 dense, 1 sparse) | 3 unused bytes | cached count, 8 bytes LE
//! dense:  16384 registers of 6 bits, packed from each byte's least significant bit up
//! sparse: run-length opcodes
//!         00xxxxxx           ZERO:  xxxxxx+1 registers at 0 (1..=64)
//!         01xxxxxx yyyyyyyy  XZERO: xxxxxxyyyyyyyy+1 registers at 0 (1..=16384)
//!         1vvvvvxx           VAL:   xx+1 registers at vvvvv+1 (values 1..=32)
//! ```
//!
//! The cached count is valid while the top bit of its last byte is clear. A sparse value
//! turns dense when a register needs a value over 32 or when it would grow past
//! `hll-sparse-max-bytes` (3000 by default). Every step that decides the
//! bytes (where a run is split, which neighbouring VAL opcodes are merged, when to
//! promote) follows Redis's, so the same additions give the same bytes.

/// Header length: magic, encoding, 3 unused bytes, cached count.
pub(super) const HEADER_LEN: usize = 16;
/// Register count (Redis's `HLL_P` = 14).
pub(super) const REGISTERS: usize = 1 << 14;
const INDEX_BITS: u32 = 14;
/// Hash bits left after the index; a register holds at most `Q + 1`.
const Q: usize = 64 - INDEX_BITS as usize;
const REGISTER_MAX: u8 = 63;
/// A dense value's exact length.
pub(super) const DENSE_LEN: usize = HEADER_LEN + REGISTERS * 6 / 8;
/// Redis's default `hll-sparse-max-bytes`: a sparse value that would grow past it turns
/// dense.
#[cfg(test)]
const SPARSE_MAX_LEN: usize = 3000;
const DENSE: u8 = 0;
const SPARSE: u8 = 1;
const SPARSE_VAL_MAX: u8 = 32;
const SPARSE_VAL_RUN_MAX: usize = 4;
const SPARSE_ZERO_RUN_MAX: usize = 64;
const XZERO_RUN_MAX: usize = 16384;
/// Redis's hash seed.
const SEED: u32 = 0xadc8_3b19;
/// 0.5 / ln 2.
const ALPHA_INF: f64 = 0.721_347_520_444_481_7;

/// A sparse value whose runs do not cover exactly [`REGISTERS`] registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Corrupt;

/// Whether `value` passes Redis's `isHLLObjectOrReply`: magic, a known encoding, and the
/// exact length when dense. A sparse body is checked only when it is walked.
pub(super) fn is_hll(value: &[u8]) -> bool {
    value.len() >= HEADER_LEN
        && value.starts_with(b"HYLL")
        && value[4] <= SPARSE
        && (value[4] != DENSE || value.len() == DENSE_LEN)
}

/// An empty HyperLogLog as Redis creates it: sparse, one XZERO opcode, cached count 0.
pub(super) fn new_sparse() -> Vec<u8> {
    let mut value = vec![0u8; HEADER_LEN];
    value[..4].copy_from_slice(b"HYLL");
    value[4] = SPARSE;
    let mut left = REGISTERS;
    while left > 0 {
        let run = left.min(XZERO_RUN_MAX);
        value.extend_from_slice(&xzero_op(run));
        left -= run;
    }
    value
}

/// The cached count, if it is valid.
pub(super) fn cached_count(value: &[u8]) -> Option<u64> {
    let card: [u8; 8] = value[8..16].try_into().expect("header checked");
    (card[7] & 0x80 == 0).then(|| u64::from_le_bytes(card))
}

pub(super) fn set_cached_count(value: &mut [u8], count: u64) {
    value[8..16].copy_from_slice(&count.to_le_bytes());
}

pub(super) fn invalidate_cache(value: &mut [u8]) {
    value[15] |= 0x80;
}

/// MurmurHash2, 64-bit (`MurmurHash64A`), reading 8-byte blocks little-endian as Redis
/// does on every architecture.
pub(super) fn murmur64a(data: &[u8], seed: u32) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    let mut h = u64::from(seed) ^ (data.len() as u64).wrapping_mul(M);
    let mut blocks = data.chunks_exact(8);
    for block in &mut blocks {
        let mut k = u64::from_le_bytes(block.try_into().expect("8-byte chunk"));
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        for (i, &byte) in tail.iter().enumerate() {
            h ^= u64::from(byte) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element falls in and the length of its hash's `0...01` pattern.
fn pattern(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    // The bit at Q stops the count at Q + 1.
    let rest = (hash >> INDEX_BITS) | (1 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

fn dense_get(registers: &[u8], index: usize) -> u8 {
    let byte = index * 6 / 8;
    let shift = (index * 6) & 7;
    let low = u16::from(registers[byte]) >> shift;
    let high = u16::from(registers.get(byte + 1).copied().unwrap_or(0)) << (8 - shift);
    ((low | high) as u8) & REGISTER_MAX
}

fn dense_put(registers: &mut [u8], index: usize, value: u8) {
    let byte = index * 6 / 8;
    let shift = (index * 6) & 7;
    let wide = u16::from(value) << shift;
    let mask = u16::from(REGISTER_MAX) << shift;
    registers[byte] = (registers[byte] & !(mask as u8)) | wide as u8;
    if shift > 2 {
        let next = &mut registers[byte + 1];
        *next = (*next & !((mask >> 8) as u8)) | (wide >> 8) as u8;
    }
}

/// Raises a dense register to `count`; whether it changed.
fn dense_raise(registers: &mut [u8], index: usize, count: u8) -> bool {
    let raised = count > dense_get(registers, index);
    if raised {
        dense_put(registers, index, count);
    }
    raised
}

/// One sparse opcode: (registers covered, value, opcode bytes).
fn sparse_op(ops: &[u8], at: usize) -> (usize, u8, usize) {
    let op = ops[at];
    match op & 0xc0 {
        0x00 => (usize::from(op & 0x3f) + 1, 0, 1),
        0x40 => {
            let low = usize::from(ops.get(at + 1).copied().unwrap_or(0));
            ((usize::from(op & 0x3f) << 8 | low) + 1, 0, 2)
        }
        _ => (usize::from(op & 0x3) + 1, ((op >> 2) & 0x1f) + 1, 1),
    }
}

fn is_val(op: u8) -> bool {
    op & 0x80 != 0
}

fn val_op(value: u8, run: usize) -> u8 {
    0x80 | (value - 1) << 2 | (run as u8 - 1)
}

fn xzero_op(run: usize) -> [u8; 2] {
    let run = run - 1;
    [0x40 | (run >> 8) as u8, run as u8]
}

/// Appends the opcode for a zero run, short or long as Redis picks.
fn push_zero_run(seq: &mut Vec<u8>, run: usize) {
    if run > SPARSE_ZERO_RUN_MAX {
        seq.extend_from_slice(&xzero_op(run));
    } else {
        seq.push(run as u8 - 1);
    }
}

/// Calls `f(first_register, run, value)` for every run of a sparse body, which must cover
/// exactly [`REGISTERS`] registers. A run past the end is refused before `f` sees it: the
/// redis-server 7.0.15 this was checked against (with the CVE-2025-32023 fix) refuses it
/// in PFCOUNT of several keys, PFMERGE and the sparse-to-dense conversion alike.
fn walk_sparse(ops: &[u8], mut f: impl FnMut(usize, usize, u8)) -> Result<(), Corrupt> {
    let (mut at, mut index) = (0, 0);
    while at < ops.len() {
        let (run, value, len) = sparse_op(ops, at);
        if index + run > REGISTERS {
            return Err(Corrupt);
        }
        f(index, run, value);
        index += run;
        at += len;
    }
    if index == REGISTERS {
        Ok(())
    } else {
        Err(Corrupt)
    }
}

/// Rewrites a sparse value as dense (a dense one is left as it is), keeping the header.
pub(super) fn to_dense(value: &mut Vec<u8>) -> Result<(), Corrupt> {
    if value[4] == DENSE {
        return Ok(());
    }
    let mut dense = vec![0u8; DENSE_LEN];
    dense[..HEADER_LEN].copy_from_slice(&value[..HEADER_LEN]);
    dense[4] = DENSE;
    let registers = &mut dense[HEADER_LEN..];
    walk_sparse(&value[HEADER_LEN..], |first, run, v| {
        if v > 0 {
            (first..first + run).for_each(|index| dense_put(registers, index, v));
        }
    })?;
    *value = dense;
    Ok(())
}

/// Adds one element; whether a register changed. A sparse value that would grow past
/// `sparse_max` bytes (`hll-sparse-max-bytes`) turns dense.
pub(super) fn add(value: &mut Vec<u8>, element: &[u8], sparse_max: usize) -> Result<bool, Corrupt> {
    let (index, count) = pattern(element);
    raise(value, index, count, sparse_max)
}

/// Raises register `index` to `count` in either encoding; whether it changed.
pub(super) fn raise(
    value: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max: usize,
) -> Result<bool, Corrupt> {
    if value[4] == DENSE {
        return Ok(dense_raise(&mut value[HEADER_LEN..], index, count));
    }
    sparse_raise(value, index, count, sparse_max)
}

/// The opcode covering a register in a sparse body.
struct Found {
    /// Offset of the opcode (from the start of the value).
    at: usize,
    /// Offset of the opcode before it, if any.
    prev: Option<usize>,
    first: usize,
    run: usize,
    value: u8,
    len: usize,
}

fn find_op(value: &[u8], index: usize) -> Result<Found, Corrupt> {
    let (mut at, mut first, mut prev) = (HEADER_LEN, 0, None);
    while at < value.len() {
        let (run, v, len) = sparse_op(value, at);
        if index < first + run {
            return Ok(Found { at, prev, first, run, value: v, len });
        }
        prev = Some(at);
        at += len;
        first += run;
    }
    Err(Corrupt)
}

/// `hllSparseSet`: raises a register of a sparse value, splitting the run that covers it
/// and merging equal VAL neighbours after, or turning the value dense.
fn sparse_raise(
    value: &mut Vec<u8>,
    index: usize,
    count: u8,
    sparse_max: usize,
) -> Result<bool, Corrupt> {
    if count > SPARSE_VAL_MAX {
        return promote(value, index, count);
    }
    let op = find_op(value, index)?;
    if op.value >= count && op.value > 0 {
        return Ok(false);
    }
    if op.run == 1 && op.len == 1 {
        // A VAL or ZERO of one register becomes a VAL of one register.
        value[op.at] = val_op(count, 1);
    } else {
        let seq = split(&op, index, count);
        let grows = seq.len() > op.len;
        if grows && value.len() + seq.len() - op.len > sparse_max {
            return promote(value, index, count);
        }
        // An XZERO cut off by the end of the value (its second byte missing) is still
        // replaced as two bytes long: Redis's string ends one byte before the new
        // sequence does, which drops the sequence's last byte.
        let new_len = value.len() + seq.len() - op.len;
        let end = (op.at + op.len).min(value.len());
        value.splice(op.at..end, seq);
        value.truncate(new_len);
    }
    merge_neighbours(value, op.prev.unwrap_or(HEADER_LEN));
    invalidate_cache(value);
    Ok(true)
}

/// The opcodes replacing `op` once register `index` holds `count`.
fn split(op: &Found, index: usize, count: u8) -> Vec<u8> {
    let mut seq = Vec::with_capacity(5);
    let (before, after) = (index - op.first, op.first + op.run - 1 - index);
    let push_run = |seq: &mut Vec<u8>, run: usize| match op.value {
        0 => push_zero_run(seq, run),
        v => seq.push(val_op(v, run)),
    };
    if before > 0 {
        push_run(&mut seq, before);
    }
    seq.push(val_op(count, 1));
    if after > 0 {
        push_run(&mut seq, after);
    }
    seq
}

/// Merges adjacent VAL opcodes of one value, looking at up to five opcodes from `at`.
fn merge_neighbours(value: &mut Vec<u8>, mut at: usize) {
    let mut budget = 5;
    while at < value.len() && budget > 0 {
        budget -= 1;
        let op = value[at];
        if !is_val(op) {
            at += if op & 0xc0 == 0x40 { 2 } else { 1 };
            continue;
        }
        if let Some(&next) = value.get(at + 1) {
            let (run_a, v_a, _) = sparse_op(value, at);
            let (run_b, v_b, _) = sparse_op(value, at + 1);
            if is_val(next) && v_a == v_b && run_a + run_b <= SPARSE_VAL_RUN_MAX {
                value[at + 1] = val_op(v_a, run_a + run_b);
                value.remove(at);
                continue;
            }
        }
        at += 1;
    }
}

fn promote(value: &mut Vec<u8>, index: usize, count: u8) -> Result<bool, Corrupt> {
    to_dense(value)?;
    Ok(dense_raise(&mut value[HEADER_LEN..], index, count))
}

/// A dense value's registers, one byte each (PFDEBUG GETREG).
pub(super) fn dense_registers(value: &[u8]) -> Vec<u8> {
    (0..REGISTERS).map(|index| dense_get(&value[HEADER_LEN..], index)).collect()
}

/// A sparse value's opcodes as PFDEBUG DECODE writes them: `z:run` (ZERO), `Z:run`
/// (XZERO), `v:value,run` (VAL), separated by spaces.
pub(super) fn decode_sparse(value: &[u8]) -> String {
    let ops = &value[HEADER_LEN..];
    let mut words = Vec::new();
    let mut at = 0;
    while at < ops.len() {
        let (run, register, len) = sparse_op(ops, at);
        words.push(match ops[at] & 0xc0 {
            0x00 => format!("z:{run}"),
            0x40 => format!("Z:{run}"),
            _ => format!("v:{register},{run}"),
        });
        at += len;
    }
    words.join(" ")
}

/// PFSELFTEST: registers read back what was written next to random neighbours, and the
/// estimate of 1 to 10 million distinct elements stays within 6 standard errors, sparse and
/// dense agreeing while the sparse one is small (`sparse_max`). `random` gives the values.
pub(super) fn self_test(sparse_max: usize, mut random: impl FnMut() -> u64) -> Result<(), String> {
    let mut dense = new_sparse();
    to_dense(&mut dense).map_err(|_| "TESTFAILED dense conversion")?;
    for _ in 0..1000 {
        let wanted: Vec<u8> = (0..REGISTERS).map(|_| (random() as u8) & REGISTER_MAX).collect();
        for (index, &v) in wanted.iter().enumerate() {
            dense_put(&mut dense[HEADER_LEN..], index, v);
        }
        let got = dense_registers(&dense);
        if let Some(index) = (0..REGISTERS).find(|&i| got[i] != wanted[i]) {
            return Err(format!(
                "TESTFAILED Register {index} should be {} but is {}",
                wanted[index], got[index]
            ));
        }
    }
    dense[HEADER_LEN..].fill(0);
    let mut sparse = new_sparse();
    let relative_error = 1.04 / (REGISTERS as f64).sqrt();
    let seed = random();
    let mut checkpoint: u64 = 1;
    for j in 1..=10_000_000u64 {
        let element = (j ^ seed).to_le_bytes();
        add(&mut dense, &element, sparse_max).map_err(|_| "TESTFAILED corrupt")?;
        add(&mut sparse, &element, sparse_max).map_err(|_| "TESTFAILED corrupt")?;
        if j != checkpoint {
            continue;
        }
        if (j as usize) < sparse_max / 2 && sparse[4] != SPARSE {
            return Err("TESTFAILED sparse encoding not used".into());
        }
        let count = |value: &[u8]| histogram(value).map(|h| estimate(&h));
        let dense_count = count(&dense).map_err(|_| "TESTFAILED corrupt")?;
        if count(&sparse).ok() != Some(dense_count) {
            return Err("TESTFAILED dense/sparse disagree".into());
        }
        let error = checkpoint.abs_diff(dense_count);
        let allowed =
            if j == 10 { 1 } else { (relative_error * 6.0 * checkpoint as f64).ceil() as u64 };
        if error > allowed {
            return Err(format!("TESTFAILED Too big error. card:{checkpoint} abserr:{error}"));
        }
        checkpoint *= 10;
    }
    Ok(())
}

/// Raises `max` to the registers of a valid HyperLogLog (PFCOUNT of several keys,
/// PFMERGE).
pub(super) fn merge_into(max: &mut [u8], value: &[u8]) -> Result<(), Corrupt> {
    let body = &value[HEADER_LEN..];
    if value[4] == DENSE {
        for (index, slot) in max.iter_mut().enumerate() {
            *slot = (*slot).max(dense_get(body, index));
        }
        return Ok(());
    }
    walk_sparse(body, |first, run, v| {
        max[first..first + run].iter_mut().for_each(|slot| *slot = (*slot).max(v));
    })
}

/// Whether the value is dense.
pub(super) fn is_dense(value: &[u8]) -> bool {
    value[4] == DENSE
}

/// How many registers hold each value (index = register value).
pub(super) type Histogram = [u32; 64];

pub(super) fn histogram(value: &[u8]) -> Result<Histogram, Corrupt> {
    let mut counts = [0u32; 64];
    let body = &value[HEADER_LEN..];
    if value[4] == DENSE {
        (0..REGISTERS).for_each(|index| counts[usize::from(dense_get(body, index))] += 1);
        return Ok(counts);
    }
    walk_sparse(body, |_, run, v| counts[usize::from(v)] += run as u32)?;
    Ok(counts)
}

pub(super) fn histogram_of_registers(registers: &[u8]) -> Histogram {
    let mut counts = [0u32; 64];
    registers.iter().for_each(|&r| counts[usize::from(r & 63)] += 1);
    counts
}

/// Ertl's estimator ("New cardinality estimation algorithms for HyperLogLog sketches",
/// arXiv:1702.01284) in Redis's order of operations, so the result is the same double
/// and rounds to the same count.
pub(super) fn estimate(counts: &Histogram) -> u64 {
    let m = REGISTERS as f64;
    let mut z = m * tau((m - f64::from(counts[Q + 1])) / m);
    for j in (1..=Q).rev() {
        z += f64::from(counts[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(counts[0]) / m);
    (ALPHA_INF * m * m / z).round() as u64
}

fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0, x);
    loop {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if before == z {
            return z;
        }
    }
}

fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0, 1.0 - x);
    loop {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        z -= (1.0 - x) * (1.0 - x) * y;
        if before == z {
            return z / 3.0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(value: &[u8]) -> u64 {
        estimate(&histogram(value).unwrap())
    }

    /// Goal: an empty HLL is Redis's 18-byte sparse value and counts 0.
    #[test]
    fn empty() {
        let value = new_sparse();
        assert_eq!(value.len(), 18);
        assert_eq!(&value[16..], &[0x7f, 0xff]);
        assert!(is_hll(&value));
        assert_eq!(count(&value), 0);
        assert_eq!(cached_count(&value), Some(0));
    }

    /// Goal: every tail length feeds the hash (the values themselves are checked against
    /// redis-server by the conformance tests, which compare the raw bytes).
    #[test]
    fn murmur_tail_lengths() {
        let data = b"0123456789abcdef";
        let hashes: Vec<u64> = (0..=16).map(|n| murmur64a(&data[..n], SEED)).collect();
        let mut sorted = hashes.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), hashes.len());
    }

    /// Goal: dense registers read back as written at every shift, neighbours untouched.
    #[test]
    fn dense_registers_round_trip() {
        let mut registers = vec![0u8; REGISTERS * 6 / 8];
        for index in 0..REGISTERS {
            dense_put(&mut registers, index, (index % 64) as u8);
        }
        for index in 0..REGISTERS {
            assert_eq!(dense_get(&registers, index), (index % 64) as u8, "{index}");
        }
        dense_put(&mut registers, REGISTERS - 1, 0);
        assert_eq!(dense_get(&registers, REGISTERS - 2), ((REGISTERS - 2) % 64) as u8);
    }

    /// Goal: sparse and dense encodings of the same additions hold the same registers
    /// and count the same, across the promotion.
    #[test]
    fn sparse_matches_dense() {
        let mut sparse = new_sparse();
        let mut dense = new_sparse();
        to_dense(&mut dense).unwrap();
        assert_eq!(dense.len(), DENSE_LEN);
        for n in 0..3000u32 {
            let element = n.to_string();
            assert_eq!(
                add(&mut sparse, element.as_bytes(), SPARSE_MAX_LEN),
                add(&mut dense, element.as_bytes(), SPARSE_MAX_LEN)
            );
            if n % 250 == 0 {
                let (mut a, mut b) = ([0u8; REGISTERS], [0u8; REGISTERS]);
                merge_into(&mut a, &sparse).unwrap();
                merge_into(&mut b, &dense).unwrap();
                assert!(a == b, "registers differ after {n}");
                assert_eq!(count(&sparse), count(&dense));
            }
        }
        assert!(is_dense(&sparse), "3000 elements promote");
        assert_eq!(sparse[HEADER_LEN..], dense[HEADER_LEN..]);
        let estimate = count(&dense);
        assert!((2900..3100).contains(&estimate), "{estimate}");
    }

    /// Goal: a sparse body that covers too few or too many registers is refused.
    #[test]
    fn corrupt_sparse() {
        let mut short = new_sparse();
        short.truncate(17);
        short[16] = 0x00;
        assert_eq!(histogram(&short), Err(Corrupt));
        assert_eq!(to_dense(&mut short.clone()), Err(Corrupt));
        let mut long = new_sparse();
        long.push(0x00);
        assert_eq!(merge_into(&mut [0u8; REGISTERS], &long), Err(Corrupt));
        // A VAL run past the end, even after exactly 16384 registers (redis-server
        // 7.0.15 as installed refuses it).
        let mut past_end = new_sparse();
        past_end.push(0x80);
        assert_eq!(merge_into(&mut [0u8; REGISTERS], &past_end), Err(Corrupt));
        assert_eq!(to_dense(&mut past_end), Err(Corrupt));
        assert!(!is_hll(b"HYLL\x00"));
        assert!(!is_hll(b"HYLL\x02\0\0\0\0\0\0\0\0\0\0\0"));
        assert!(is_hll(b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\0"));
    }

    /// Goal: an XZERO cut off by the end of the value splits as Redis's does (which
    /// drops the last byte of the new sequence).
    #[test]
    fn truncated_xzero() {
        let mut value = new_sparse();
        value.truncate(17);
        assert_eq!(raise(&mut value, 100, 1, SPARSE_MAX_LEN), Ok(true));
        assert_eq!(&value[16..], &[0x40, 99, val_op(1, 1), 0x7e]);
    }

    /// Goal: a register value over 32 forces the dense encoding.
    #[test]
    fn big_register_promotes() {
        let mut value = new_sparse();
        assert_eq!(raise(&mut value, 5, 33, SPARSE_MAX_LEN), Ok(true));
        assert!(is_dense(&value));
        assert_eq!(dense_get(&value[HEADER_LEN..], 5), 33);
        assert_eq!(raise(&mut value, 5, 7, SPARSE_MAX_LEN), Ok(false));
    }

    /// Goal: VAL runs split and merge back as Redis's opcodes say.
    #[test]
    fn sparse_split_and_merge() {
        let mut value = new_sparse();
        raise(&mut value, 0, 3, SPARSE_MAX_LEN).unwrap();
        assert_eq!(&value[16..], &[val_op(3, 1), 0x7f, 0xfe]);
        raise(&mut value, 1, 3, SPARSE_MAX_LEN).unwrap();
        assert_eq!(&value[16..], &[val_op(3, 2), 0x7f, 0xfd]);
        raise(&mut value, 100, 1, SPARSE_MAX_LEN).unwrap();
        assert_eq!(&value[16..], &[val_op(3, 2), 0x40, 97, val_op(1, 1), 0x7f, 0x9a]);
    }

    /// Goal: no sparse body, however corrupt, panics any operation (values come from
    /// clients through SET). Method: seeded random bodies.
    #[test]
    fn garbage_never_panics() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..2000 {
            let mut value = new_sparse();
            value.truncate(HEADER_LEN);
            let len = (next() % 24) as usize;
            value.extend((0..len).map(|_| next() as u8));
            let _ = histogram(&value);
            let _ = merge_into(&mut [0u8; REGISTERS], &value);
            let _ = to_dense(&mut value.clone());
            let _ = add(&mut value.clone(), &next().to_le_bytes(), SPARSE_MAX_LEN);
            let _ = raise(&mut value, (next() % REGISTERS as u64) as usize, 40, SPARSE_MAX_LEN);
        }
    }
}
