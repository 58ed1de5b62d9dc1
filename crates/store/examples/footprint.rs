//! Memory footprint: how many items of a given size fit in M MiB before the first eviction,
//! and what each one costs beyond its key and value bytes.
//!
//! ```text
//! cargo run --release -p store --example footprint -- --key-size K --value-size V --memory-mib M
//! ```
//!
//! Fills a store of M MiB with distinct items (keys of exactly K bytes, a zero-padded counter;
//! values of exactly V bytes) until the first eviction. N is the number of items inserted before
//! the write that evicted; every one of them was still live then, because keys are distinct and
//! nothing expires. The last line is
//!
//! ```text
//! items=N metadata_bytes_per_item=X rss_mib=R
//! ```
//!
//! where `X = (M MiB - N * (K + V)) / N` (everything that is not payload: item headers, index,
//! segment tails) and R is the process's peak resident memory (`VmHWM`), which includes the
//! fixed overhead printed as `baseline_rss_mib` before the store was built.
//!
//! Before it, `at_eviction:` lines split X by where the bytes are (`Store::memory_breakdown`),
//! each in bytes per item, and `fill=P%` lines show the same while filling, when P% of the N
//! items were in (P from 0.1 to 100): there metadata per item is
//! `(charged - items * (K + V)) / items`, what the store has taken beyond the payload so far
//! (the index must grow with the items).

use std::{
    process::ExitCode,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    time::Instant,
};

use store::{Config, Expiry, MemoryBreakdown, Mode, Store, StoreError, WhenFull, MIB};

/// What the store held after `items` writes, for the fill-level lines.
struct Snapshot {
    items: u64,
    breakdown: MemoryBreakdown,
    rss_mib: f64,
}

/// Snapshots taken while filling: this many over the most items that could fit.
const SNAPSHOTS: u64 = 400;

/// Prints where the charged bytes are, each per item, and what is left over.
fn print_breakdown(label: &str, items: u64, payload: u64, b: &MemoryBreakdown, total: u64) {
    let n = items.max(1) as f64;
    let per = |bytes: u64| bytes as f64 / n;
    let seg = b.segment_size_bytes;
    // Segments in use are charged what was written and their charged, unwritten rest (a
    // segment taken unbacked is charged as it fills); free resident ones whole.
    let segments_charged = b.segment_filled_bytes
        + b.sealed_tail_bytes
        + b.active_unfilled_bytes
        + b.segments_free_resident * seg;
    let index = b.index_current_bytes + b.index_old_bytes + b.index_retiring_bytes;
    let known = index + segments_charged + b.outside_bytes;
    let other = b.charged_bytes.saturating_sub(known);
    let headers = b.segment_filled_bytes.saturating_sub(items * payload);
    println!(
        "{label} items={items} metadata={:.2} = headers {:.2} + index {:.2} (current {:.2} \
         at {:.1}% load, old {:.2}, retiring {:.2}) + sealed_tails {:.2} + active_unfilled {:.2} \
         + free_segments {:.2} ({}) + other_charged {:.2} + uncharged {:.2}",
        per(total.saturating_sub(items * payload)),
        per(headers),
        per(index),
        per(b.index_current_bytes),
        100.0 * b.index_entries as f64 / b.index_current_slots.max(1) as f64,
        per(b.index_old_bytes),
        per(b.index_retiring_bytes),
        per(b.sealed_tail_bytes),
        per(b.active_unfilled_bytes),
        per(b.segments_free_resident * seg),
        b.segments_free_resident,
        per(other),
        per(total.saturating_sub(b.charged_bytes)),
    );
}

struct Args {
    key_size: usize,
    value_size: usize,
    memory_mib: usize,
    segment_size_bytes: usize,
}

const USAGE: &str = "usage: footprint --key-size K --value-size V --memory-mib M \
                     [--segment-size-bytes B]";

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        key_size: 0,
        value_size: 0,
        memory_mib: 0,
        segment_size_bytes: Config::default().segment_size_bytes,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "-h" || flag == "--help" {
            return Err(USAGE.to_string());
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        let n: usize = value.parse().map_err(|_| format!("{flag}: not a number: {value}"))?;
        match flag.as_str() {
            "--key-size" => args.key_size = n,
            "--value-size" => args.value_size = n,
            "--memory-mib" => args.memory_mib = n,
            "--segment-size-bytes" => args.segment_size_bytes = n,
            _ => return Err(format!("unknown argument {flag}\n{USAGE}")),
        }
    }
    if args.key_size == 0 || args.memory_mib == 0 {
        return Err(format!("--key-size and --memory-mib must be given and above 0\n{USAGE}"));
    }
    Ok(args)
}

/// A field of /proc/self/status in MiB (the kernel reports kB), or NaN where there is none.
fn proc_status_mib(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// Writes `n` into `key` as a decimal number, zero-padded to the key's full length.
/// Returns false if `n` has more digits than the key has bytes.
fn write_key(key: &mut [u8], mut n: u64) -> bool {
    for byte in key.iter_mut().rev() {
        *byte = b'0' + (n % 10) as u8;
        n /= 10;
    }
    n == 0
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    let (k, v, m) = (args.key_size, args.value_size, args.memory_mib);
    let memory_bytes = m * MIB;
    let payload = k + v;
    if cfg!(debug_assertions) {
        eprintln!("warning: debug build; use --release for representative numbers");
    }

    println!(
        "key_size={k} value_size={v} memory_mib={m} segment_size_bytes={}",
        args.segment_size_bytes
    );
    println!("baseline_rss_mib={:.2} (before the store is built)", proc_status_mib("VmRSS"));

    let evicted = Arc::new(AtomicBool::new(false));
    let evicted_keys = Arc::new(AtomicU64::new(0));
    let on_evict = {
        let evicted = Arc::clone(&evicted);
        let evicted_keys = Arc::clone(&evicted_keys);
        Arc::new(move |_item: &store::Item<'_>| {
            evicted.store(true, Ordering::Relaxed);
            evicted_keys.fetch_add(1, Ordering::Relaxed);
        })
    };
    // Room for the item and any header the store puts in front of it.
    let item_size_max = Config::default().item_size_max.max(payload + 4096);
    let config = Config {
        memory_bytes,
        item_size_max,
        when_full: WhenFull::Evict,
        segment_size_bytes: args.segment_size_bytes,
        on_evict: Some(on_evict),
        ..Default::default()
    };
    let store = match Store::new(config) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("Store::new: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("empty_store_rss_mib={:.2}", proc_status_mib("VmRSS"));

    // No store can hold more payload than its whole memory limit: past this, the limit leaks.
    let count_max = (memory_bytes / payload.max(1)) as u64 + 1;
    let value = vec![b'v'; v];
    let mut key = vec![0u8; k];
    let mut inserted: u64 = 0; // items written before the current write
    let snapshot_every = (count_max / SNAPSHOTS).max(1);
    let mut snapshots = Vec::new();
    let started = Instant::now();
    let stop_reason = loop {
        if inserted > count_max {
            eprintln!(
                "error: {inserted} items of {payload} bytes stored in {m} MiB without an eviction"
            );
            return ExitCode::FAILURE;
        }
        if !write_key(&mut key, inserted) {
            eprintln!("error: {k}-byte keys ran out of distinct values at {inserted}");
            return ExitCode::FAILURE;
        }
        match store.store(&key, &value, 0, Expiry::Never, Mode::Set) {
            Ok(_) => {}
            Err(StoreError::NoSpace) => break "no_space",
            Err(e) => {
                eprintln!("error: store of item {inserted}: {e}");
                return ExitCode::FAILURE;
            }
        }
        if evicted.load(Ordering::Relaxed) {
            break "eviction";
        }
        // Backstop in case the observer is not called: the counters see every eviction.
        if inserted % 4096 == 4095 && store.stats().evictions > 0 {
            eprintln!("warning: stats show evictions the observer did not see; N is approximate");
            break "eviction_seen_in_stats";
        }
        inserted += 1;
        // Ten times as often below 4 snapshots' worth, for the 0.1% and 0.5% lines.
        let early = inserted < 4 * snapshot_every;
        if inserted.is_multiple_of(if early {
            (snapshot_every / 10).max(1)
        } else {
            snapshot_every
        }) {
            let breakdown = store.memory_breakdown();
            snapshots.push(Snapshot {
                items: inserted,
                breakdown,
                rss_mib: proc_status_mib("VmRSS"),
            });
        }
    };
    let elapsed = started.elapsed();
    let n = inserted;
    let stats = store.stats();

    // The item just written is the newest; it must be there, whole.
    if stop_reason == "eviction" {
        match store.reader().get(&key) {
            Some(item) if item.value().len() == v => {}
            Some(item) => {
                eprintln!("warning: last item read back with {} bytes", item.value().len())
            }
            None => eprintln!("warning: the item whose write evicted cannot be read back"),
        }
    }

    println!(
        "stop={stop_reason} fill_secs={:.2} writes_per_sec={:.0}",
        elapsed.as_secs_f64(),
        (n + 1) as f64 / elapsed.as_secs_f64().max(1e-9)
    );
    println!(
        "after_evicting_write: items={} evictions={} observer_calls={} item_bytes={}",
        stats.items,
        stats.evictions,
        evicted_keys.load(Ordering::Relaxed),
        stats.item_bytes
    );
    println!(
        "memory_used_bytes={} memory_limit_bytes={} ({:.2}% used)",
        stats.memory_used_bytes,
        stats.memory_limit_bytes,
        100.0 * stats.memory_used_bytes as f64 / stats.memory_limit_bytes.max(1) as f64
    );
    println!(
        "index_bytes={} index_slots={} index_bytes_per_item={:.2}",
        stats.index_bytes,
        stats.index_slots,
        stats.index_bytes as f64 / n.max(1) as f64
    );
    println!(
        "segments_in_use={} segments_max={} segment_size_bytes={}",
        stats.segments_in_use, stats.segments_max, args.segment_size_bytes
    );
    if n == 0 {
        eprintln!("error: the first write already evicted; no items fit");
        return ExitCode::FAILURE;
    }
    let payload = payload as u64;
    for per_mille in [1, 5, 10, 50, 100, 250, 500, 750, 900, 1000] {
        let want = n * per_mille / 1000;
        let Some(s) = snapshots.iter().min_by_key(|s| s.items.abs_diff(want)) else { continue };
        let label = if per_mille % 10 == 0 {
            format!("fill={}%", per_mille / 10)
        } else {
            format!("fill=0.{per_mille}%")
        };
        print_breakdown(&label, s.items, payload, &s.breakdown, s.breakdown.charged_bytes);
        println!(
            "{label} rss_mib={:.2} rss_bytes_per_item={:.2}",
            s.rss_mib,
            s.rss_mib * MIB as f64 / s.items.max(1) as f64
        );
    }
    print_breakdown("at_eviction:", n, payload, &store.memory_breakdown(), memory_bytes as u64);
    let metadata_per_item = (memory_bytes as f64 - (n * payload) as f64) / n as f64;
    println!(
        "items={n} metadata_bytes_per_item={metadata_per_item:.2} rss_mib={:.2}",
        proc_status_mib("VmHWM")
    );
    ExitCode::SUCCESS
}
