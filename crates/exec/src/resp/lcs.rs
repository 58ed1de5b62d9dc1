//! LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]: Redis 7.0's longest common
//! subsequence, with its reply shapes and the same subsequence and ranges (the table is
//! walked back from the end with Redis's tie rule, so where several subsequences are
//! longest, the same one is chosen).
//!
//! Bounds. Redis fills a table of (len1+1)*(len2+1) 32-bit cells and refuses a table
//! larger than `proto-max-bulk-len` (512 MiB, so at most 2^27 cells): the same limit and
//! error here ([`CELLS_MAX`]), so the same pairs are refused. Within it, Spinel keeps two
//! rows of lengths and one bit per cell (the way back), at most 16 MiB however the
//! limit is reached, and the work is at most 2^27 cell steps (about half a second on one
//! core, as in Redis). A missing key or an empty string answers without a table, and the
//! strings are copied out of the store only when both are non-empty (each is then under
//! 2^26 bytes).

use store::ValueKind;

use super::Ctx;

/// The most cells a table may have: Redis's `proto-max-bulk-len` over 4-byte cells.
const CELLS_MAX: u64 = super::PROTO_MAX_BULK_LEN as u64 / 4;

const NOT_STRINGS: &str = "ERR The specified keys must contain string values";
const TOO_LARGE: &str =
    "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len";
const NO_MEMORY: &str = "ERR Insufficient memory, failed allocating transient memory for LCS";

#[derive(Default)]
struct Options {
    len: bool,
    idx: bool,
    with_match_len: bool,
    min_match_len: u64,
}

/// One common run: where it lies in each string (inclusive), as IDX lists it.
struct Range {
    a: (usize, usize),
    b: (usize, usize),
}

pub(super) fn lcs(ctx: &mut Ctx<'_>) {
    let Some((a, b)) = read_pair(ctx) else {
        return ctx.error(NOT_STRINGS);
    };
    let options = match parse_options(ctx) {
        Ok(options) => options,
        Err(message) => return ctx.error(message),
    };
    if options.idx && options.len {
        return ctx.error("ERR If you want both the length and indexes, please just use IDX.");
    }
    let cells = (a.len as u64 + 1).saturating_mul(b.len as u64 + 1);
    if cells > CELLS_MAX {
        return ctx.error(TOO_LARGE);
    }
    let (a, b) = (a.bytes.unwrap_or_default(), b.bytes.unwrap_or_default());
    let Some(table) = Table::fill(&a, &b) else {
        return ctx.error(NO_MEMORY);
    };
    if options.len {
        return ctx.reply().integer(table.longest as i64);
    }
    let (subsequence, ranges) = table.walk_back(&a, &b, options.min_match_len);
    reply(ctx, &options, &subsequence, &ranges);
}

/// A key's string: its length, and its bytes when worth copying.
struct Side {
    len: usize,
    bytes: Option<Vec<u8>>,
}

/// Both keys' strings (a missing key is empty); `None` if either holds another type.
/// Each read counts as a hit or a miss, as Redis's `lookupKeyRead`.
fn read_pair(ctx: &mut Ctx<'_>) -> Option<(Side, Side)> {
    let keys = [ctx.key(1).to_vec(), ctx.key(2).to_vec()];
    let shared = ctx.shared;
    let reader = shared.core.store.reader();
    let items = [reader.get(&keys[0]), reader.get(&keys[1])];
    for item in &items {
        super::count_read(ctx.counters, item.is_some());
    }
    if items.iter().flatten().any(|item| item.value_kind() != ValueKind::String) {
        return None;
    }
    let [a_len, b_len] = [0, 1].map(|k| items[k].as_ref().map_or(0, |i| i.value().len()));
    // With an empty side the answer is empty, and past the limit there is none: nothing
    // to copy then.
    let copy = a_len > 0 && b_len > 0 && (a_len as u64 + 1) * (b_len as u64 + 1) <= CELLS_MAX;
    let [a, b] = items.map(|item| {
        let len = item.as_ref().map_or(0, |i| i.value().len());
        let bytes = copy.then(|| item.map(|i| i.value().to_vec()).unwrap_or_default());
        Side { len, bytes }
    });
    Some((a, b))
}

/// The options after the keys, as Redis reads them: a negative MINMATCHLEN is 0.
fn parse_options(ctx: &Ctx<'_>) -> Result<Options, &'static str> {
    let mut options = Options::default();
    let mut at = 3;
    while at < ctx.argc() {
        let option = ctx.arg(at);
        if option.eq_ignore_ascii_case(b"idx") {
            options.idx = true;
        } else if option.eq_ignore_ascii_case(b"len") {
            options.len = true;
        } else if option.eq_ignore_ascii_case(b"withmatchlen") {
            options.with_match_len = true;
        } else if option.eq_ignore_ascii_case(b"minmatchlen") && at + 1 < ctx.argc() {
            let n = proto_resp::args::parse_i64(ctx.arg(at + 1)).map_err(|e| e.message())?;
            options.min_match_len = n.max(0) as u64;
            at += 1;
        } else {
            return Err(proto_resp::error::SYNTAX);
        }
        at += 1;
    }
    Ok(options)
}

/// The way back through the table: for each cell (i, j) of two different bytes, whether
/// the longer subsequence comes from dropping a's byte (Redis's `LCS(i-1,j) > LCS(i,j-1)`).
struct Table {
    up: Vec<u64>,
    b_len: usize,
    longest: usize,
}

impl Table {
    /// Fills the table row by row; `None` when its bits cannot be allocated.
    fn fill(a: &[u8], b: &[u8]) -> Option<Table> {
        let bits = a.len() * b.len();
        let mut up: Vec<u64> = Vec::new();
        up.try_reserve_exact(bits.div_ceil(64)).ok()?;
        up.resize(bits.div_ceil(64), 0);
        let mut previous = vec![0u32; b.len() + 1];
        let mut current = vec![0u32; b.len() + 1];
        for (i, &a_byte) in a.iter().enumerate() {
            for (j, &b_byte) in b.iter().enumerate() {
                current[j + 1] = if a_byte == b_byte {
                    previous[j] + 1
                } else if previous[j + 1] > current[j] {
                    let bit = i * b.len() + j;
                    up[bit / 64] |= 1 << (bit % 64);
                    previous[j + 1]
                } else {
                    current[j]
                };
            }
            std::mem::swap(&mut previous, &mut current);
        }
        let longest = previous[b.len()] as usize;
        Some(Table { up, b_len: b.len(), longest })
    }

    fn goes_up(&self, i: usize, j: usize) -> bool {
        let bit = (i - 1) * self.b_len + (j - 1);
        self.up[bit / 64] & (1 << (bit % 64)) != 0
    }

    /// The subsequence, and its runs of at least `min_len` (0: all) from the end, as
    /// Redis's walk emits them.
    fn walk_back(&self, a: &[u8], b: &[u8], min_len: u64) -> (Vec<u8>, Vec<Range>) {
        let mut subsequence = vec![0u8; self.longest];
        let mut ranges = Vec::new();
        let (mut i, mut j, mut left) = (a.len(), b.len(), self.longest);
        let mut run: Option<Range> = None;
        while i > 0 && j > 0 {
            let emit = if a[i - 1] == b[j - 1] {
                subsequence[left - 1] = a[i - 1];
                match &mut run {
                    None => run = Some(Range { a: (i - 1, i - 1), b: (j - 1, j - 1) }),
                    // A match right after one extends the run backwards.
                    Some(r) => (r.a.0, r.b.0) = (i - 1, j - 1),
                }
                (left, i, j) = (left - 1, i - 1, j - 1);
                // A run that reached the start of either string ends the walk.
                i == 0 || j == 0
            } else {
                if self.goes_up(i, j) {
                    i -= 1;
                } else {
                    j -= 1;
                }
                run.is_some()
            };
            if emit {
                let r = run.take().expect("a run to emit");
                if min_len == 0 || (r.a.1 - r.a.0 + 1) as u64 >= min_len {
                    ranges.push(r);
                }
            }
        }
        (subsequence, ranges)
    }
}

fn reply(ctx: &mut Ctx<'_>, options: &Options, subsequence: &[u8], ranges: &[Range]) {
    let mut reply = ctx.reply();
    if options.idx {
        reply.map(2);
        reply.bulk(b"matches");
        reply.array(ranges.len());
        for r in ranges {
            reply.array(2 + usize::from(options.with_match_len));
            for (start, end) in [r.a, r.b] {
                reply.array(2);
                reply.integer(start as i64);
                reply.integer(end as i64);
            }
            if options.with_match_len {
                reply.integer((r.a.1 - r.a.0 + 1) as i64);
            }
        }
        reply.bulk(b"len");
        reply.integer(subsequence.len() as i64);
    } else {
        reply.bulk(subsequence);
    }
}
