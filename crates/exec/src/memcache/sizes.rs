//! `stats sizes`, `stats sizes_enable`, `stats sizes_disable`: memcached's histogram of
//! item sizes in 32-byte buckets, off by default.
//!
//! memcached keeps the histogram up to date on every link and unlink once enabled; here it
//! is counted when asked for, by walking the store, so enabling it costs the request path
//! nothing. A size is memcached's for the item (its 48-byte header and 8-byte CAS, the key
//! and its terminator, the value and its `\r\n`), rounded up to the bucket.

use std::sync::atomic::Ordering::Relaxed;

use proto_memcache::text::response::{compose_stat, compose_stat_u64};

use super::Ctx;
use crate::keyspace;

/// memcached's item header and CAS, plus the key's terminator and the value's `\r\n`.
const ITEM_OVERHEAD_BYTES: usize = 48 + 8 + 1 + 2;

const BUCKET_BYTES: usize = 32;

/// Keys read from the store per scan step.
const SCAN_BATCH: usize = 1024;

/// `sizes_enable`: memcached refuses without CAS (`-C`).
pub(super) fn enable(ctx: &mut Ctx<'_>) {
    if !ctx.view.core().settings.cas_enabled {
        compose_stat(b"sizes_status", b"error", ctx.out);
        compose_stat(b"sizes_error", b"cas_support_disabled", ctx.out);
        return;
    }
    ctx.view.memcache().track_sizes.store(true, Relaxed);
    compose_stat(b"sizes_status", b"enabled", ctx.out);
}

pub(super) fn disable(ctx: &mut Ctx<'_>) {
    ctx.view.memcache().track_sizes.store(false, Relaxed);
    compose_stat(b"sizes_status", b"disabled", ctx.out);
}

/// `sizes`: one `STAT <bucket start> <items>` per bucket that has items, smallest first.
pub(super) fn histogram(ctx: &mut Ctx<'_>) {
    if !ctx.view.memcache().track_sizes.load(Relaxed) {
        return compose_stat(b"sizes_status", b"disabled", ctx.out);
    }
    let store = &ctx.view.core().store;
    let mut buckets: Vec<u64> = Vec::new();
    let mut keys = Vec::new();
    let mut cursor = 0;
    loop {
        keys.clear();
        cursor = store.scan(cursor, SCAN_BATCH, |key| keys.push(key.to_vec()));
        let reader = store.reader();
        for stored in &keys {
            let Some((0, key)) = keyspace::decode(stored) else { continue };
            let Some(item) = reader.peek(stored) else { continue };
            let size = ITEM_OVERHEAD_BYTES + key.len() + item.value().len();
            let bucket = size.div_ceil(BUCKET_BYTES);
            if buckets.len() <= bucket {
                buckets.resize(bucket + 1, 0);
            }
            buckets[bucket] += 1;
        }
        if cursor == 0 {
            break;
        }
    }
    for (bucket, &count) in buckets.iter().enumerate().filter(|(_, &count)| count > 0) {
        let start = (bucket * BUCKET_BYTES).to_string();
        compose_stat_u64(start.as_bytes(), count, ctx.out);
    }
}

#[cfg(test)]
mod tests {
    use crate::{memcache::tests::Harness, Settings};

    // Goal: memcached's replies (no END after enable and disable), and one bucket per size.
    #[test]
    fn sizes() {
        let mut h = Harness::new();
        h.check("stats sizes\r\n", "STAT sizes_status disabled\r\nEND\r\n");
        h.check("stats sizes_enable\r\n", "STAT sizes_status enabled\r\n");
        h.check("stats sizes\r\n", "END\r\n");
        // 59 + 1 + 3 = 63 bytes: bucket 64; 59 + 2 + 40 = 101: bucket 128.
        h.run("set a 0 0 3\r\nabc\r\nset b 0 0 3\r\nxyz\r\n");
        h.run(format!("set cc 0 0 40\r\n{}\r\n", "v".repeat(40)));
        h.check("stats sizes\r\n", "STAT 64 2\r\nSTAT 128 1\r\nEND\r\n");
        h.check("stats sizes_disable\r\n", "STAT sizes_status disabled\r\n");
        h.check("stats sizes\r\n", "STAT sizes_status disabled\r\nEND\r\n");
        let mut h = Harness::with_settings(Settings { cas_enabled: false, ..Settings::default() });
        h.check(
            "stats sizes_enable\r\n",
            "STAT sizes_status error\r\nSTAT sizes_error cas_support_disabled\r\n",
        );
    }
}
