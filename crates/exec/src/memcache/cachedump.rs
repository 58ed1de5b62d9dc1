//! `stats cachedump <class> <limit>`: one `ITEM <key> [<bytes> b; <expiry> s]` line per item
//! of a slab class, then `END`, in memcached 1.6's format and within its 2 MiB reply cap.
//!
//! The store is one class, number 1 (as `stats items` shows it), so class 1 lists items and
//! every other legal class is empty. memcached walks one LRU from its newest item; the store
//! is walked in hash order, so which items a limit picks differs.

use std::io::Write;

use proto_memcache::{error, parse_c_u32, ErrorReply, Words};
use store::Expiry;

use super::Ctx;
use crate::keyspace;

/// memcached's `MAX_NUMBER_OF_SLAB_CLASSES`: a class at or above it is refused.
const SLAB_CLASSES_MAX: u32 = 64;

/// memcached's cap on the whole reply.
const REPLY_BYTES_MAX: usize = 2 * 1024 * 1024;

/// Keys read from the store per scan step.
const SCAN_BATCH: usize = 256;

/// `args` holds what follows `stats` (`cachedump` first).
pub(super) fn execute(ctx: &mut Ctx<'_>, args: &Words<'_>) {
    if !ctx.view.core().settings.dump_enabled {
        return ctx.error(ErrorReply::ClientError(error::STATS_CACHEDUMP), false);
    }
    let mut words = args.iter().skip(1);
    let (Some(class), Some(limit)) = (words.next(), words.next()) else {
        return ctx.error(ErrorReply::ClientError(error::BAD_COMMAND_LINE), false);
    };
    let (Some(class), Some(limit)) = (parse_c_u32(class), parse_c_u32(limit)) else {
        return ctx.error(ErrorReply::ClientError(error::BAD_FORMAT), false);
    };
    if class >= SLAB_CLASSES_MAX {
        return ctx.error(ErrorReply::ClientError(error::ILLEGAL_SLAB_ID), false);
    }
    if class == 1 {
        dump(ctx, limit);
    }
    ctx.out.extend_from_slice(b"END\r\n");
}

fn dump(ctx: &mut Ctx<'_>, limit: u32) {
    let store = &ctx.view.core().store;
    let budget_end = ctx.out.len() + REPLY_BYTES_MAX - b"END\r\n\0".len();
    let (mut shown, mut cursor) = (0u32, 0u64);
    let mut keys = Vec::new();
    let mut line = Vec::new();
    loop {
        keys.clear();
        cursor = store.scan(cursor, SCAN_BATCH, |key| keys.push(key.to_vec()));
        let reader = store.reader();
        for stored in &keys {
            if limit != 0 && shown >= limit {
                return;
            }
            // Only memcached's keys (Redis database 0), and only string values.
            let Some((0, key)) = keyspace::decode(stored) else { continue };
            let Some(item) = reader.peek(stored) else { continue };
            if item.value_kind() != store::ValueKind::String {
                continue;
            }
            let expiry_secs = match item.expiry() {
                Expiry::Never => 0,
                Expiry::AtMs(at_ms) => at_ms / 1000,
            };
            line.clear();
            line.extend_from_slice(b"ITEM ");
            line.extend_from_slice(key);
            // Writing to a Vec cannot fail.
            let _ = write!(line, " [{} b; {expiry_secs} s]\r\n", item.value().len());
            if ctx.out.len() + line.len() > budget_end {
                return;
            }
            ctx.out.extend_from_slice(&line);
            shown += 1;
        }
        if cursor == 0 {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{memcache::tests::Harness, Settings};

    // Goal: memcached's replies to each form, and one line per item of class 1.
    #[test]
    fn replies() {
        let mut h = Harness::new();
        h.check("stats cachedump 1 0\r\n", "END\r\n");
        h.run("set a 0 0 3\r\nabc\r\nset b 0 100 1\r\nb\r\n");
        let dump = String::from_utf8(h.run("stats cachedump 1 0\r\n")).expect("text");
        let mut lines: Vec<&str> = dump.lines().collect();
        assert_eq!(lines.pop(), Some("END"));
        lines.sort_unstable();
        let expires = crate::memcache::tests::T0_MS / 1000 + 100;
        assert_eq!(lines, ["ITEM a [3 b; 0 s]".to_owned(), format!("ITEM b [1 b; {expires} s]")]);
        assert_eq!(h.run("stats cachedump 1 1\r\n").split(|&b| b == b'\n').count(), 3);
        h.check("stats cachedump 2 0\r\n", "END\r\n");
        h.check("stats cachedump 64 0\r\n", "CLIENT_ERROR Illegal slab id\r\n");
        h.check("stats cachedump 1\r\n", "CLIENT_ERROR bad command line\r\n");
        h.check("stats cachedump 1 x\r\n", "CLIENT_ERROR bad command line format\r\n");
        let mut h = Harness::with_settings(Settings { dump_enabled: false, ..Settings::default() });
        h.check("stats cachedump 1 0\r\n", "CLIENT_ERROR stats cachedump not allowed\r\n");
    }
}
