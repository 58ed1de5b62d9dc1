//! What active expiry costs a worker tick: the time of one `maintain(8)` call (which sweeps
//! a slice of the index, `store/sweep.rs`) on a 1 GiB store (`-m 1024`), and how many ticks
//! clear a batch of expired keys that share segments with live ones.
//!
//! ```text
//! cargo run --release -p store --example sweepcost -- [--keys N] [--case C]
//! ```
//!
//! Cases: N keys without TTL; N keys with a TTL of an hour (none expired: every one of them
//! is read by the sweep); N keys half of which (interleaved with the other half, same TTL
//! class) expired at once. Times are per call: median, 99th percentile and maximum.

use std::{sync::Arc, time::Instant};

use store::{Clock, Config, Expiry, ManualClock, Mode, Store, MIB};

const T0: u64 = 1_700_000_000_000;
const CALLS: usize = 400;

fn main() {
    let mut keys = 500_000;
    let mut cases = vec!["no_ttl", "ttl_live", "half_expired"];
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--keys", Some(n)) if n.parse::<usize>().is_ok() => keys = n.parse().unwrap_or(0),
            ("--case", Some(case)) => cases.retain(|c| *c == case),
            _ => {
                eprintln!("usage: sweepcost [--keys N] [--case no_ttl|ttl_live|half_expired]");
                std::process::exit(2);
            }
        }
    }
    for case in cases {
        run(case, keys);
    }
}

fn run(case: &str, keys: usize) {
    let clock = Arc::new(ManualClock::new(T0));
    let config = Config { memory_bytes: 1024 * MIB, clock: clock.clone(), ..Config::default() };
    let store = Store::new(config).expect("config");
    for i in 0..keys {
        let expiry = match case {
            "no_ttl" => Expiry::Never,
            "ttl_live" => Expiry::AtMs(T0 + 3_600_000),
            _ if i % 2 == 0 => Expiry::AtMs(T0 + 2_000),
            _ => Expiry::AtMs(T0 + 9_000),
        };
        let key = format!("key:{i:012}");
        store.store(key.as_bytes(), &[b'v'; 32], 0, expiry, Mode::Set).expect("set");
    }
    // Index growth and its migration settle first.
    for _ in 0..200 {
        store.maintain(8);
    }
    clock.advance_ms(3_000);
    let len_before = store.len();
    let mut times_us = Vec::with_capacity(CALLS);
    let mut cleared_after = None;
    for call in 0..CALLS {
        let started = Instant::now();
        store.maintain(8);
        times_us.push(started.elapsed().as_secs_f64() * 1e6);
        if cleared_after.is_none() && case == "half_expired" && store.len() == keys / 2 {
            cleared_after = Some(call + 1);
        }
    }
    let stats = store.stats();
    // The sweep alone, one tick's share (a 32nd of the index).
    let share = stats.index_slots as usize / 32;
    let started = Instant::now();
    let swept = (0..CALLS).map(|_| store.sweep_expired(share).slots).sum::<usize>();
    let sweep_us = started.elapsed().as_secs_f64() * 1e6 / CALLS as f64;
    println!(
        "{case}: sweep_expired({share}) mean_us={sweep_us:.1} cells_per_call={}",
        swept / CALLS
    );
    times_us.sort_by(f64::total_cmp);
    let at = |q: f64| times_us[((times_us.len() - 1) as f64 * q) as usize];
    println!(
        "{case}: keys={keys} index_slots={} maintain_us p50={:.1} p99={:.1} max={:.1} \
         len {} -> {} cleared_after_calls={:?} now_ms={}",
        stats.index_slots,
        at(0.5),
        at(0.99),
        at(1.0),
        len_before,
        store.len(),
        cleared_after,
        clock.now_ms() - T0,
    );
}
