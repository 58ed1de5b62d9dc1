//! MEMORY USAGE / STATS / DOCTOR / MALLOC-STATS / PURGE / HELP, with Redis 7.0's replies.
//!
//! The figures are Spinel's own accounting, not an allocator's: the store counts every
//! item's bytes (header, key, value) against its limit, values kept outside the store
//! (large lists, hashes, sets, sorted sets) count what they are charged, and the
//! connections' buffers are counted apart. So MEMORY USAGE is exact for what Spinel
//! charges, whatever SAMPLES says (Redis samples a few elements of a large collection and
//! extrapolates; the option is checked as Redis checks it and then has nothing to do).
//! MEMORY STATS maps those figures onto Redis's fields; the allocator's fields read the
//! accounted bytes, with the process's resident size for `allocator.resident`. There is no
//! allocator to report on or purge: MALLOC-STATS answers as Redis built without jemalloc
//! does, and PURGE is a no-op, as there.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use proto_resp::args::parse_i64;

use super::{help, info, Ctx};
use crate::{keyspace, Shared};

/// What one key costs beyond its name and value: the item's header (lengths, expiry) and
/// its slot in the store's index, rounded to a word multiple.
const KEY_OVERHEAD_BYTES: usize = 24;
/// An index slot (one word per key), as `overhead.hashtable.*` counts it.
const INDEX_SLOT_BYTES: u64 = 8;
/// Below this much accounted memory MEMORY DOCTOR declines, as Redis does (5 MiB).
const DOCTOR_MIN_BYTES: u64 = 5 << 20;

/// The most MEMORY STATS has seen allocated (Spinel keeps no allocator peak of its own).
static PEAK_BYTES: AtomicU64 = AtomicU64::new(0);

const DOCTOR_EMPTY: &str = "Hi Sam, this instance is empty or is using very little memory, my \
     issues detector can't be used in these conditions. Please, leave for your mission on \
     Earth and fill it with some data. The new Sam and I will be back to our programming as \
     soon as I finished rebooting.\n";
const DOCTOR_FINE: &str = "Hi Sam, I can't find any memory issue in your instance. I can only \
     account for what occurs on this base.\n";

/// MEMORY USAGE key [SAMPLES count]: the options are checked first (a negative count is a
/// syntax error, as in Redis), then the key; null for a missing key. Reads the key without
/// counting an access.
pub(super) fn usage(ctx: &mut Ctx<'_>) {
    let mut at = 3;
    while at < ctx.argc() {
        if !ctx.arg(at).eq_ignore_ascii_case(b"samples") || at + 1 >= ctx.argc() {
            return ctx.error(proto_resp::error::SYNTAX);
        }
        match parse_i64(ctx.arg(at + 1)) {
            Err(e) => return ctx.error(e.message()),
            Ok(samples) if samples < 0 => return ctx.error(proto_resp::error::SYNTAX),
            Ok(_) => at += 2,
        }
    }
    let name_len = ctx.arg(2).len();
    match key_bytes(ctx.shared, ctx.key(2)) {
        Some(value_bytes) => {
            let total = name_len + value_bytes + KEY_OVERHEAD_BYTES;
            ctx.reply().integer(total as i64);
        }
        None => ctx.reply().null(),
    }
}

/// The bytes charged for `key`'s value: its encoding in the store, or what a value kept
/// outside the store is charged (with its handle in the store).
fn key_bytes(shared: &Shared, key: &[u8]) -> Option<usize> {
    let reader = shared.core.store.reader();
    let item = reader.peek(key)?;
    let (in_store, handle) = (item.value().len(), item.is_owner().then(|| item.value().to_vec()));
    drop(reader);
    let outside = handle
        .and_then(|handle| shared.owned.get(&handle))
        .map_or(0, |owned| owned.state.lock().value_bytes);
    Some(in_store + outside)
}

/// MEMORY STATS: Redis 7.0's fields, in its order (see the module docs for what each
/// reads here).
pub(super) fn stats(ctx: &mut Ctx<'_>) {
    let figures = Figures::now(ctx.shared);
    let mut reply = ctx.reply();
    reply.map(27 + figures.dbs.len());
    let int = |reply: &mut proto_resp::Reply<'_>, name: &str, value: u64| {
        reply.bulk(name.as_bytes());
        reply.integer(value.min(i64::MAX as u64) as i64);
    };
    int(&mut reply, "peak.allocated", figures.peak);
    int(&mut reply, "total.allocated", figures.used);
    int(&mut reply, "startup.allocated", 0);
    int(&mut reply, "replication.backlog", 0);
    int(&mut reply, "clients.slaves", 0);
    int(&mut reply, "clients.normal", figures.clients);
    int(&mut reply, "cluster.links", 0);
    int(&mut reply, "aof.buffer", 0);
    int(&mut reply, "lua.caches", figures.scripts);
    int(&mut reply, "functions.caches", 0);
    for (db, keys, expires) in &figures.dbs {
        reply.bulk(format!("db.{db}").as_bytes());
        reply.map(3);
        int(&mut reply, "overhead.hashtable.main", keys * INDEX_SLOT_BYTES);
        int(&mut reply, "overhead.hashtable.expires", expires * INDEX_SLOT_BYTES);
        int(&mut reply, "overhead.hashtable.slot-to-keys", 0);
    }
    let overhead = figures.overhead();
    let dataset = figures.used.saturating_sub(overhead);
    int(&mut reply, "overhead.total", overhead);
    int(&mut reply, "keys.count", figures.keys);
    int(&mut reply, "keys.bytes-per-key", figures.used.checked_div(figures.keys).unwrap_or(0));
    int(&mut reply, "dataset.bytes", dataset);
    figures.ratios(&mut reply, dataset);
}

/// What MEMORY STATS and DOCTOR report on.
struct Figures {
    used: u64,
    peak: u64,
    clients: u64,
    scripts: u64,
    rss: u64,
    keys: u64,
    /// (database, keys, keys with an expiry) for each database holding keys.
    dbs: Vec<(usize, u64, u64)>,
}

impl Figures {
    fn now(shared: &Shared) -> Figures {
        let clients = shared.core.conn_buffer_bytes.load(Relaxed);
        let used = shared.core.store.memory_used_bytes() as u64 + clients;
        let peak = PEAK_BYTES.fetch_max(used, Relaxed).max(used);
        let counts = info::db_key_counts(shared);
        let dbs: Vec<(usize, u64, u64)> = (0..keyspace::DATABASES as usize)
            .zip(counts)
            .filter(|(_, (keys, _))| *keys > 0)
            .map(|(db, (keys, expires))| (db, keys, expires))
            .collect();
        Figures {
            used,
            peak,
            clients,
            scripts: shared.redis.scripts.cached_script_bytes.load(Relaxed),
            rss: info::resident_bytes().unwrap_or(used),
            keys: dbs.iter().map(|(_, keys, _)| keys).sum(),
            dbs,
        }
    }

    fn overhead(&self) -> u64 {
        let tables: u64 = self.dbs.iter().map(|(_, k, e)| (k + e) * INDEX_SLOT_BYTES).sum();
        self.clients + self.scripts + tables
    }

    /// The percentage and ratio fields, each after the byte counts it relates.
    fn ratios(&self, reply: &mut proto_resp::Reply<'_>, dataset: u64) {
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        let mut double = |name: &str, value: f64| {
            reply.bulk(name.as_bytes());
            reply.double(value);
        };
        double("dataset.percentage", 100.0 * ratio(dataset, self.used));
        double("peak.percentage", 100.0 * ratio(self.used, self.peak));
        let int = |reply: &mut proto_resp::Reply<'_>, name: &str, value: u64| {
            reply.bulk(name.as_bytes());
            reply.integer(value.min(i64::MAX as u64) as i64);
        };
        int(reply, "allocator.allocated", self.used);
        int(reply, "allocator.active", self.used);
        int(reply, "allocator.resident", self.rss);
        let signed = |a: u64, b: u64| (a as i64).wrapping_sub(b as i64);
        let pairs: [(&str, &str, u64, u64); 4] = [
            (
                "allocator-fragmentation.ratio",
                "allocator-fragmentation.bytes",
                self.used,
                self.used,
            ),
            ("allocator-rss.ratio", "allocator-rss.bytes", self.rss, self.used),
            ("rss-overhead.ratio", "rss-overhead.bytes", self.rss, self.rss),
            ("fragmentation", "fragmentation.bytes", self.rss, self.used),
        ];
        for (ratio_name, bytes_name, over, under) in pairs {
            reply.bulk(ratio_name.as_bytes());
            reply.double(ratio(over, under));
            reply.bulk(bytes_name.as_bytes());
            reply.integer(signed(over, under));
        }
    }
}

/// MEMORY DOCTOR: Redis's reply for an instance too small to judge, else its reply for no
/// issue found (Spinel has none of the conditions Redis looks for: no allocator
/// fragmentation of its own accounting, no replication or AOF buffers).
pub(super) fn doctor(ctx: &mut Ctx<'_>) {
    let figures = Figures::now(ctx.shared);
    let text = if figures.used < DOCTOR_MIN_BYTES { DOCTOR_EMPTY } else { DOCTOR_FINE };
    ctx.reply().verbatim(b"txt", text.as_bytes());
}

/// MEMORY MALLOC-STATS: as Redis built without jemalloc answers.
pub(super) fn malloc_stats(ctx: &mut Ctx<'_>) {
    ctx.reply().verbatim(b"txt", b"Stats not supported for the current allocator");
}

pub(super) fn help(ctx: &mut Ctx<'_>) {
    help::reply(ctx, help::MEMORY);
}
