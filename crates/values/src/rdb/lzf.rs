//! LZF, as Redis's bundled liblzf 3.6 writes and reads it: RDB strings longer than 20
//! bytes are saved compressed when that saves at least 4 bytes (`rdbSaveLzfStringObject`).
//!
//! ```text
//!   000LLLLL <L+1 literal bytes>          a run of 1..=32 literal bytes
//!   LLLOOOOO OOOOOOOO                     a back reference, L in 1..=6: copy L+2 bytes
//!   111OOOOO LLLLLLLL OOOOOOOO            ... L+9 bytes, from O+1 bytes back (O < 8192)
//! ```
//!
//! The compressor follows `lzf_c.c` step for step (its defaults: a 2^16-slot hash table,
//! VERY_FAST, which re-hashes the two positions before a match's end), so a DUMP of a
//! string is the same bytes redis-server's is. One difference: Redis leaves its table
//! uninitialized on the stack, so a stale slot from an earlier call may, rarely, find a
//! match this table (zeroed every call) does not; both outputs decompress to the input.

/// Slots in the hash table (`HLOG` 16).
const HASH_LOG: u32 = 16;
const HASH_SIZE: usize = 1 << HASH_LOG;
/// The longest literal run.
const LITERAL_MAX: usize = 1 << 5;
/// The farthest a reference reaches back.
const OFFSET_MAX: usize = 1 << 13;
/// The longest reference (`MAX_REF`): 264 bytes.
const REFERENCE_MAX: usize = (1 << 8) + (1 << 3);

fn first(input: &[u8], at: usize) -> u32 {
    u32::from(input[at]) << 8 | u32::from(input[at + 1])
}

fn next(hash: u32, input: &[u8], at: usize) -> u32 {
    hash << 8 | u32::from(input[at + 2])
}

/// `IDX(h)` with VERY_FAST: `((h >> (24 - HLOG)) - h * 5) & (HSIZE - 1)`.
fn slot(hash: u32) -> usize {
    ((hash >> (3 * 8 - HASH_LOG)).wrapping_sub(hash.wrapping_mul(5)) as usize) & (HASH_SIZE - 1)
}

/// `input` compressed into at most `out_max` bytes, or `None` when it does not fit (as
/// `lzf_compress` returns 0).
pub(super) fn compress_reusing(input: &[u8], out_max: usize) -> Option<Vec<u8>> {
    if input.is_empty() || out_max == 0 {
        return None;
    }
    TABLE.with_borrow_mut(|table| compress(table, input, out_max))
}

thread_local! {
    /// The hash table, kept per thread: a fresh one per string cost a 256 KiB allocation
    /// and its page faults, which made an RDB of short values 30 times slower to write.
    static TABLE: std::cell::RefCell<Table> = std::cell::RefCell::new(Table::new());
}

/// Slots of positions + 1 (0: empty) tagged with the call that wrote them: a slot of an
/// earlier call reads as empty, as a zeroed table would, without clearing it per call.
struct Table {
    slots: Vec<u64>,
    call: u32,
}

impl Table {
    fn new() -> Table {
        Table { slots: vec![0; HASH_SIZE], call: 0 }
    }

    fn begin(&mut self) {
        self.call = self.call.wrapping_add(1);
        if self.call == 0 {
            self.slots.fill(0);
            self.call = 1;
        }
    }

    fn get(&self, at: usize) -> u32 {
        let slot = self.slots[at];
        if (slot >> 32) as u32 == self.call {
            slot as u32
        } else {
            0
        }
    }

    fn set(&mut self, at: usize, position: u32) {
        self.slots[at] = u64::from(self.call) << 32 | u64::from(position);
    }
}

fn compress(table: &mut Table, input: &[u8], out_max: usize) -> Option<Vec<u8>> {
    // Slot values are positions + 1; 0 is an empty slot, which the `reference > 0` test
    // refuses as the C code's `ref > in_data` refuses its base.
    table.begin();
    // `op` indexes `out`; `out` may hold a few bytes past `out_max` that the checks below
    // refuse before they are kept, as the C buffer's `out_end` does.
    let mut out = vec![0u8; out_max + 4];
    let (end, mut ip, mut op, mut lit) = (input.len(), 0usize, 1usize, 0usize);
    let mut hash = if end >= 2 { first(input, 0) } else { 0 };
    while end >= 3 && ip < end - 2 {
        hash = next(hash, input, ip);
        let at = slot(hash);
        let reference = table.get(at) as usize;
        table.set(at, ip as u32 + 1);
        let matched = reference > 1 && {
            let reference = reference - 1;
            let offset = ip.wrapping_sub(reference).wrapping_sub(1);
            offset < OFFSET_MAX
                && reference < ip
                && input[reference + 2] == input[ip + 2]
                && input[reference..reference + 2] == input[ip..ip + 2]
        };
        if matched {
            let reference = reference - 1;
            let offset = ip - reference - 1;
            let maxlen = (end - ip - 2).min(REFERENCE_MAX);
            if op + 3 + 1 >= out_max && op - usize::from(lit == 0) + 3 + 1 >= out_max {
                return None;
            }
            out[op - lit - 1] = (lit as u8).wrapping_sub(1); // stop the run
            op -= usize::from(lit == 0); // undo a run of length zero
                                         // The number of bytes - 1.
            let len = match_len(input, reference, ip, maxlen) - 2;
            ip += 1;
            if len < 7 {
                out[op] = ((offset >> 8) + (len << 5)) as u8;
                op += 1;
            } else {
                out[op] = ((offset >> 8) + (7 << 5)) as u8;
                out[op + 1] = (len - 7) as u8;
                op += 2;
            }
            out[op] = offset as u8;
            op += 2; // and start a run
            lit = 0;
            ip += len + 1;
            if ip >= end - 2 {
                break;
            }
            // VERY_FAST: hash the two positions before the match's end.
            ip -= 2;
            hash = first(input, ip);
            hash = next(hash, input, ip);
            table.set(slot(hash), ip as u32 + 1);
            ip += 1;
            hash = next(hash, input, ip);
            table.set(slot(hash), ip as u32 + 1);
            ip += 1;
        } else {
            if op >= out_max {
                return None;
            }
            push_literal(&mut out, &mut op, &mut lit, input[ip]);
            ip += 1;
        }
    }
    if op + 3 > out_max {
        return None;
    }
    while ip < end {
        push_literal(&mut out, &mut op, &mut lit, input[ip]);
        ip += 1;
    }
    out[op - lit - 1] = (lit as u8).wrapping_sub(1); // end the run
    op -= usize::from(lit == 0);
    out.truncate(op);
    Some(out)
}

/// Appends one literal byte to the open run; a full run gets its length byte and a new
/// run's length slot is left after it.
fn push_literal(out: &mut [u8], op: &mut usize, lit: &mut usize, byte: u8) {
    *lit += 1;
    out[*op] = byte;
    *op += 1;
    if *lit == LITERAL_MAX {
        out[*op - *lit - 1] = (*lit - 1) as u8;
        *lit = 0;
        *op += 1;
    }
}

/// How many bytes from `ip` repeat those from `reference` (three are known to), as
/// `lzf_c.c` counts them: where more than 16 may follow, its first 16 comparisons are
/// unrolled and ignore `maxlen`, so a match may reach up to two bytes past it.
fn match_len(input: &[u8], reference: usize, ip: usize, maxlen: usize) -> usize {
    let same = |len: usize| input[reference + len] == input[ip + len];
    let mut len = 2;
    if maxlen > 16 {
        for _ in 0..16 {
            len += 1;
            if !same(len) {
                return len;
            }
        }
    }
    loop {
        len += 1;
        if len >= maxlen || !same(len) {
            return len;
        }
    }
}

/// `input` decompressed, which must come to exactly `len` bytes; `None` for input that is
/// not LZF (a reference before the start, a run past the end, another length).
pub(super) fn decompress(input: &[u8], len: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(len);
    let mut ip = 0;
    while ip < input.len() {
        let control = usize::from(input[ip]);
        ip += 1;
        if control < LITERAL_MAX {
            let run = input.get(ip..ip + control + 1)?;
            if out.len() + run.len() > len {
                return None;
            }
            out.extend_from_slice(run);
            ip += control + 1;
            continue;
        }
        let mut count = control >> 5;
        if count == 7 {
            count += usize::from(*input.get(ip)?);
            ip += 1;
        }
        let back = ((control & 0x1f) << 8) + usize::from(*input.get(ip)?) + 1;
        ip += 1;
        count += 2;
        if back > out.len() || out.len() + count > len {
            return None;
        }
        // Byte by byte: a reference may overlap what it writes (a run of one byte).
        let from = out.len() - back;
        for at in from..from + count {
            out.push(out[at]);
        }
    }
    (out.len() == len).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(input: &[u8]) -> Option<Vec<u8>> {
        let packed = compress_reusing(input, input.len().saturating_sub(4))?;
        assert_eq!(decompress(&packed, input.len()).as_deref(), Some(input));
        Some(packed)
    }

    /// Goal: the bytes redis-server 7.0.15 wrote in DUMP payloads (read from its replies).
    #[test]
    fn matches_redis() {
        assert_eq!(round_trip(&[b'x'; 100]).unwrap(), b"\x01xx\xe0W\x00\x01xx");
        let text = b"abcdefghij0123456789".repeat(5);
        assert_eq!(round_trip(&text).unwrap(), b"\x14abcdefghij0123456789a\xe0D\x13\x0189");
    }

    /// Goal: compressible, incompressible and mixed inputs of many sizes come back as they
    /// went in; incompressible ones are refused under Redis's `len - 4` bound.
    #[test]
    fn round_trips() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut random = |n: usize| -> Vec<u8> {
            (0..n)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    seed as u8
                })
                .collect()
        };
        assert_eq!(round_trip(&random(1000)), None);
        round_trip(&[b'z'; 21]).expect("compressible");
        for n in [64, 300, 5000, 70_000] {
            let mut input = random(n / 3);
            input.extend(std::iter::repeat_n(b'z', n / 3));
            input.extend(b"hello world ".repeat(n / 36 + 1));
            round_trip(&input).expect("compressible");
        }
        assert_eq!(decompress(b"\x01xx", 3), None);
        assert_eq!(decompress(b"\xe0\x00", 10), None);
    }
}
