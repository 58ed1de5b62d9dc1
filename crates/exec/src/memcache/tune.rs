//! memcached's run-time tuning commands: `slabs reassign|automove`, `lru tune|mode|temp_ttl`
//! and `lru_crawler enable|disable|sleep|tocrawl`, with memcached 1.6's replies, argument
//! checks and `noreply` rules.
//!
//! Spinel's store has no slab classes, no segmented LRU and no crawler thread to tune: the
//! values are kept and reported by `stats settings` as memcached reports them, and change
//! nothing else. `slabs reassign` checks its classes against memcached's default class table
//! (classes 0 to 39 with `-I 1m`) and then answers that the source has no page to spare,
//! which is memcached's answer for a class that cannot give one up.

use proto_memcache::{parse_c_i32, parse_c_u32, text::AdminCommand, Words};

use super::Ctx;

/// The highest slab class memcached 1.6 has with its default `-n 48 -f 1.25` and 512 KiB
/// largest chunk (`power_largest`); class 0 is its global page pool.
pub const SLAB_CLASS_LARGEST: i64 = 39;

/// The `lru_crawler sleep` maximum, in microseconds.
const CRAWLER_SLEEP_MAX_US: u32 = 1_000_000;

/// The settings these commands change, with memcached's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct Tunables {
    pub slab_automove: u32,
    pub slab_automove_ratio: f64,
    /// Whether the LRU crawler is enabled (`lru_crawler enable|disable`).
    pub lru_crawler: bool,
    pub lru_crawler_sleep_us: u32,
    pub lru_crawler_tocrawl: u32,
    pub lru_segmented: bool,
    pub hot_lru_pct: u32,
    pub warm_lru_pct: u32,
    pub hot_max_factor: f64,
    pub warm_max_factor: f64,
    pub temp_lru: bool,
    pub temporary_ttl_secs: i64,
}

impl Tunables {
    /// memcached's values at start for the features `-o` left on.
    pub fn with_features(on: &crate::shared::MemcachedFeatures) -> Tunables {
        let defaults = Tunables::default();
        Tunables {
            lru_crawler: on.lru_crawler,
            lru_segmented: on.lru_maintainer,
            slab_automove: if on.slab_automove { defaults.slab_automove } else { 0 },
            temp_lru: on.temporary_ttl_secs.is_some(),
            temporary_ttl_secs: on.temporary_ttl_secs.unwrap_or(defaults.temporary_ttl_secs),
            ..defaults
        }
    }
}

impl Default for Tunables {
    fn default() -> Self {
        Tunables {
            slab_automove: 1,
            slab_automove_ratio: 0.8,
            lru_crawler: true,
            lru_crawler_sleep_us: 100,
            lru_crawler_tocrawl: 0,
            lru_segmented: true,
            hot_lru_pct: 20,
            warm_lru_pct: 40,
            hot_max_factor: 0.2,
            warm_max_factor: 2.0,
            temp_lru: false,
            temporary_ttl_secs: 61,
        }
    }
}

/// A number as memcached's `safe_strtod` reads it (the whole token).
fn parse_double(token: &[u8]) -> Option<f64> {
    std::str::from_utf8(token).ok()?.parse().ok()
}

/// Whether the request's last word is `noreply` (memcached's `set_noreply_maybe`).
fn noreply(args: &[&[u8]]) -> bool {
    args.last() == Some(&&b"noreply"[..])
}

pub(super) fn execute(ctx: &mut Ctx<'_>, command: AdminCommand, args: &Words<'_>) {
    // memcached's tokenizer keeps at most 24 tokens; these commands read at most 6.
    let args: Vec<&[u8]> = args.iter().take(24).collect();
    match command {
        AdminCommand::Slabs => slabs(ctx, &args),
        AdminCommand::Lru => lru(ctx, &args),
        AdminCommand::LruCrawler => lru_crawler(ctx, &args),
        // Answered in `mod.rs` (the stream itself is the server's; the rest by crawler.rs).
        AdminCommand::Watch | AdminCommand::CacheMemlimit | AdminCommand::RefreshCerts => {
            ctx.line(b"ERROR", false)
        }
    }
}

fn slabs(ctx: &mut Ctx<'_>, args: &[&[u8]]) {
    match args {
        [b"reassign", src, dst] => {
            let reply = match (parse_c_i32(src), parse_c_i32(dst)) {
                (Some(src), Some(dst)) => reassign(src, dst),
                _ => &b"CLIENT_ERROR bad command line format"[..],
            };
            ctx.line(reply, false);
        }
        [b"automove", level, rest @ ..] => automove(ctx, level, rest, noreply(args)),
        _ => ctx.line(b"ERROR", false),
    }
}

/// memcached's checks in its order; a legal move is then refused for want of a spare page.
fn reassign(src: i64, dst: i64) -> &'static [u8] {
    let legal = 0..=SLAB_CLASS_LARGEST;
    if src == dst {
        b"SAME src and dst class are identical"
    } else if !legal.contains(&src) || !legal.contains(&dst) {
        // -1 asks memcached to pick a source with pages to spare; there is none here.
        b"BADCLASS invalid src or dst class id"
    } else {
        b"NOSPARE source class has no spare pages"
    }
}

fn automove(ctx: &mut Ctx<'_>, level: &[u8], rest: &[&[u8]], noreply: bool) {
    let mut tunables = ctx.view.memcache().tunables.lock();
    if level == b"ratio" {
        match rest.first().and_then(|ratio| parse_double(ratio)) {
            Some(ratio) => tunables.slab_automove_ratio = ratio,
            _ => return ctx.line(b"ERROR", noreply),
        }
    } else {
        match parse_c_u32(level) {
            None => return ctx.line(b"CLIENT_ERROR bad command line format", noreply),
            Some(level @ 0..=2) => tunables.slab_automove = level,
            Some(_) => return ctx.line(b"ERROR", noreply),
        }
    }
    ctx.line(b"OK", noreply);
}

fn lru(ctx: &mut Ctx<'_>, args: &[&[u8]]) {
    let noreply = noreply(args);
    let reply: &[u8] = match args {
        [b"tune", hot, warm, hot_factor, factor, ..] => {
            tune(ctx, [hot, warm], [hot_factor, factor])
        }
        [b"mode", mode, ..] => match *mode {
            b"flat" | b"segmented" => {
                ctx.view.memcache().tunables.lock().lru_segmented = *mode == b"segmented";
                b"OK"
            }
            _ => b"ERROR",
        },
        [b"temp_ttl", ttl, ..] => match parse_c_i32(ttl) {
            Some(ttl) => {
                let mut tunables = ctx.view.memcache().tunables.lock();
                tunables.temp_lru = ttl >= 0;
                if ttl >= 0 {
                    tunables.temporary_ttl_secs = ttl;
                }
                b"OK"
            }
            None => b"ERROR",
        },
        _ => b"ERROR",
    };
    ctx.line(reply, noreply);
}

/// `lru tune <hot pct> <warm pct> <hot age factor> <warm age factor>`.
fn tune(ctx: &mut Ctx<'_>, pcts: [&[u8]; 2], factors: [&[u8]; 2]) -> &'static [u8] {
    let (Some(hot), Some(warm), Some(hot_factor), Some(factor)) = (
        parse_c_u32(pcts[0]),
        parse_c_u32(pcts[1]),
        parse_double(factors[0]),
        parse_double(factors[1]),
    ) else {
        return b"ERROR";
    };
    // A sum that overflows 32 bits passes the check, as in memcached.
    if hot.wrapping_add(warm) > 80 {
        return b"ERROR hot and warm pcts must not exceed 80";
    }
    if factor <= 0.0 || hot_factor <= 0.0 {
        return b"ERROR hot/warm age factors must be greater than 0";
    }
    let mut tunables = ctx.view.memcache().tunables.lock();
    tunables.hot_lru_pct = hot;
    tunables.warm_lru_pct = warm;
    tunables.hot_max_factor = hot_factor;
    tunables.warm_max_factor = factor;
    b"OK"
}

/// `lru_crawler enable|disable|sleep|tocrawl`; `crawl` and `metadump` walk the store and are
/// answered elsewhere. memcached reads no `noreply` here.
fn lru_crawler(ctx: &mut Ctx<'_>, args: &[&[u8]]) {
    let mut tunables = ctx.view.memcache().tunables.lock();
    let reply: &[u8] = match args {
        [b"tocrawl", count] => match parse_c_u32(count) {
            Some(count) => {
                tunables.lru_crawler_tocrawl = count;
                b"OK"
            }
            None => b"CLIENT_ERROR bad command line format",
        },
        [b"sleep", micros] => match parse_c_u32(micros) {
            Some(micros) if micros <= CRAWLER_SLEEP_MAX_US => {
                tunables.lru_crawler_sleep_us = micros;
                b"OK"
            }
            Some(_) => b"CLIENT_ERROR sleep must be one second or less",
            None => b"CLIENT_ERROR bad command line format",
        },
        // memcached fails to start a crawler thread that is already running.
        [b"enable"] if tunables.lru_crawler => b"ERROR failed to start lru crawler thread",
        [b"enable"] => {
            tunables.lru_crawler = true;
            b"OK"
        }
        [b"disable"] => {
            tunables.lru_crawler = false;
            b"OK"
        }
        _ => b"ERROR",
    };
    drop(tunables);
    ctx.line(reply, false);
}

#[cfg(test)]
mod tests {
    use crate::memcache::tests::Harness;

    // Goal: each command's replies and checks, in memcached's words; noreply where memcached
    // reads it.
    #[test]
    fn replies() {
        let mut h = Harness::new();
        let cases = [
            ("slabs reassign 1 2", "NOSPARE source class has no spare pages"),
            ("slabs reassign 3 3", "SAME src and dst class are identical"),
            ("slabs reassign 1 40", "BADCLASS invalid src or dst class id"),
            ("slabs reassign -1 2", "BADCLASS invalid src or dst class id"),
            ("slabs reassign 1 x", "CLIENT_ERROR bad command line format"),
            ("slabs automove 2", "OK"),
            ("slabs automove 3", "ERROR"),
            ("slabs automove x", "CLIENT_ERROR bad command line format"),
            ("slabs automove", "ERROR"),
            ("slabs automove ratio 0.5", "OK"),
            ("slabs automove ratio", "ERROR"),
            ("lru tune 10 20 0.5 1.5", "OK"),
            ("lru tune 50 40 0.5 1.5", "ERROR hot and warm pcts must not exceed 80"),
            ("lru tune 10 20 0 1.5", "ERROR hot/warm age factors must be greater than 0"),
            ("lru tune 10 20 0.3", "ERROR"),
            ("lru mode flat", "OK"),
            ("lru mode x", "ERROR"),
            ("lru temp_ttl 30", "OK"),
            ("lru temp_ttl x", "ERROR"),
            ("lru", "ERROR"),
            ("lru_crawler enable", "ERROR failed to start lru crawler thread"),
            ("lru_crawler disable", "OK"),
            ("lru_crawler disable", "OK"),
            ("lru_crawler enable", "OK"),
            ("lru_crawler sleep 1000001", "CLIENT_ERROR sleep must be one second or less"),
            ("lru_crawler sleep 50", "OK"),
            ("lru_crawler tocrawl x", "CLIENT_ERROR bad command line format"),
            ("lru_crawler enable noreply", "ERROR"),
        ];
        for (request, reply) in cases {
            h.check(format!("{request}\r\n"), format!("{reply}\r\n"));
        }
        h.check("slabs automove 0 noreply\r\nlru mode segmented noreply\r\n", "");
        let tunables = h.shared.memcache.tunables.lock().clone();
        assert_eq!(tunables.slab_automove, 0);
        assert_eq!(tunables.slab_automove_ratio, 0.5);
        assert!(tunables.lru_segmented);
        assert!(tunables.temp_lru);
        assert_eq!(tunables.temporary_ttl_secs, 30);
        assert_eq!(tunables.lru_crawler_sleep_us, 50);
        assert_eq!((tunables.hot_lru_pct, tunables.warm_lru_pct), (10, 20));
    }
}
