//! Reclaim is bounded: a flush, or the expiry of a million items at once, costs the caller of
//! `flush_all` one short step, reclaim then proceeds in bounded steps (`maintain` ticks, and
//! writes that need memory), concurrent gets and sets are not stalled by it, and afterwards
//! every byte is back: the store takes the same data again without evicting.
//!
//! Method: a store of 128 MiB (memcached `-m 128`) holds 1M small items. One thread runs a
//! loop of gets and sets and times every operation, while the test thread plays the
//! workers' ticks (`maintain(8)`, back to back). The same loop runs first with nothing to
//! reclaim (baseline), then right after a `flush_all(0)` or a clock jump past every item's
//! expiry. Timing on a shared 2-core machine is noisy, so the bounds are relative to the
//! baseline plus a slack, and a trial that fails is repeated (up to 3 times) before the test
//! fails: a scheduler hiccup can hit one trial, a stall built into the code hits all three.
//! Debug builds get a larger slack. The figures are printed (run with `--nocapture`).

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use store::{Config, Expiry, ManualClock, Mode, Stats, Store, MIB};

const T0: u64 = 1_700_000_000_000;
const ITEMS: usize = 1_000_000;
const VALUE: [u8; 48] = [b'v'; 48];
/// Operations the measuring thread times per phase.
const OPS: usize = 100_000;
const TRIALS: usize = 3;

/// Slack on top of twice the baseline's worst operation. Twice the baseline covers a busy
/// machine; the slack covers one more reclaim step (clearing two segments on a write that
/// needs memory, as eviction does in the baseline too) and scheduler noise.
fn slack() -> Duration {
    Duration::from_millis(if cfg!(debug_assertions) { 60 } else { 15 })
}

/// The longest a `flush_all(0)` call may take: one bounded step (the old code reclaimed
/// everything inside the call: seconds for 1M items in a debug build).
fn flush_call_max() -> Duration {
    Duration::from_millis(if cfg!(debug_assertions) { 50 } else { 10 })
}

fn key(i: usize) -> Vec<u8> {
    format!("key:{i:012}").into_bytes()
}

fn new_store(clock: &Arc<ManualClock>) -> Store {
    Store::new(Config { memory_bytes: 128 * MIB, clock: clock.clone(), ..Config::default() })
        .expect("valid config")
}

fn fill(store: &Store, expiry: Expiry) {
    for i in 0..ITEMS {
        store.store(&key(i), &VALUE, 0, expiry, Mode::Set).expect("set");
    }
}

/// The measuring thread's result.
#[derive(Debug)]
struct Latency {
    op_max: Duration,
    ops: usize,
}

/// Gets and sets (1 in 4) over the filled keys, each timed, `OPS` of them.
fn timed_ops(store: &Store, seed: usize) -> Latency {
    let mut op_max = Duration::ZERO;
    let mut x = seed.wrapping_mul(0x9e37_79b9) | 1;
    for n in 0..OPS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = key(x % ITEMS);
        let start = Instant::now();
        if n % 4 == 0 {
            store.store(&k, &VALUE, 0, Expiry::Never, Mode::Set).expect("set");
        } else {
            std::hint::black_box(store.get(&k));
        }
        op_max = op_max.max(start.elapsed());
    }
    Latency { op_max, ops: OPS }
}

/// What the ticking thread saw.
#[derive(Debug, Default)]
struct Ticks {
    /// How long the `flush_all(0)` call took, if there was one.
    flush_call: Duration,
    tick_max: Duration,
    ticks: usize,
    reclaimed: usize,
}

/// Runs `timed_ops` on another thread while this one calls `before` once and then ticks
/// (`maintain(8)`) until the ops are done and nothing more is reclaimed.
fn phase(store: &Store, seed: usize, before: impl FnOnce(&Store) -> Duration) -> (Latency, Ticks) {
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let measurer = scope.spawn(|| {
            let latency = timed_ops(store, seed);
            done.store(true, Ordering::Release);
            latency
        });
        let mut ticks = Ticks { flush_call: before(store), ..Ticks::default() };
        loop {
            let start = Instant::now();
            let reclaimed = store.maintain(8);
            ticks.tick_max = ticks.tick_max.max(start.elapsed());
            ticks.ticks += 1;
            ticks.reclaimed += reclaimed;
            if reclaimed == 0 && done.load(Ordering::Acquire) {
                break;
            }
        }
        (measurer.join().expect("measurer"), ticks)
    })
}

/// Runs baseline and reclaim phases until the reclaim phase is within bounds, `TRIALS`
/// times at most; `kill` makes the filled items dead (and returns how long its call took).
fn check_bounded(name: &str, expiry: Expiry, kill: impl Fn(&Store, &ManualClock) -> Duration) {
    let mut failures = Vec::new();
    for trial in 0..TRIALS {
        let clock = Arc::new(ManualClock::new(T0));
        let store = new_store(&clock);
        let fill_start = Instant::now();
        fill(&store, expiry);
        let fill_time = fill_start.elapsed();
        assert_eq!(store.len(), ITEMS, "{name}: the fill evicted");
        let (base, base_ticks) = phase(&store, 1 + trial, |_| Duration::ZERO);
        // The baseline overwrote some keys; all ITEMS are still there.
        let (during, ticks) = phase(&store, 100 + trial, |s| kill(s, &clock));
        let bound = 2 * base.op_max + slack();
        eprintln!(
            "{name} trial {trial}: fill {ITEMS} in {fill_time:?}; baseline op max {:?} over {} \
             ops (tick max {:?}); reclaim: flush_all call {:?}, op max {:?} over {} ops, \
             {} segments reclaimed in {} ticks, tick max {:?}; bound {bound:?}",
            base.op_max,
            base.ops,
            base_ticks.tick_max,
            ticks.flush_call,
            during.op_max,
            during.ops,
            ticks.reclaimed,
            ticks.ticks,
            ticks.tick_max,
        );
        let call_ok = ticks.flush_call <= flush_call_max();
        let ops_ok = during.op_max <= bound;
        if call_ok && ops_ok {
            assert!(ticks.reclaimed > 0, "{name}: the ticks reclaimed nothing");
            return;
        }
        failures.push(format!(
            "trial {trial}: flush_all call {:?} (max {:?}), op max {:?} (bound {bound:?})",
            ticks.flush_call,
            flush_call_max(),
            during.op_max
        ));
    }
    panic!("{name}: reclaim stalled the caller or concurrent ops: {failures:#?}");
}

// flush_all(0) of 1M items returns at once, and its reclaim does not stall gets and sets.
#[test]
fn flush_of_a_million_items_is_bounded() {
    check_bounded("flush", Expiry::Never, |store, _| {
        let start = Instant::now();
        store.flush_all(0);
        let call = start.elapsed();
        // The flush is visible at once, whatever is left to reclaim.
        assert!(store.get(&key(7)).is_none(), "an item survived the flush");
        call
    });
}

// 1M items expiring at once (a clock jump past their TTL) are reclaimed by ticks and by
// writes in bounded steps, without stalling gets and sets.
#[test]
fn mass_expiry_of_a_million_items_is_bounded() {
    check_bounded("expiry", Expiry::AtMs(T0 + 60_000), |_, clock| {
        clock.set_ms(T0 + 61_000);
        Duration::ZERO
    });
}

/// Ticks until `done` says the store has settled (reclaim done, and the last cleared memory
/// past its grace period), 10,000 ticks at most; returns how many it took.
fn tick_until(store: &Store, done: impl Fn(&Stats) -> bool) -> usize {
    for ticks in 1..=10_000 {
        store.maintain(8);
        if done(&store.stats()) {
            return ticks;
        }
    }
    panic!("memory did not come back in 10,000 ticks: {:?}", store.stats());
}

/// Fills a store to 80% of its memory limit (segments and index together) with small items
/// and a few large ones; returns the stats.
fn fill_most(store: &Store, round: u8, expiry: Expiry) -> Stats {
    fill_until(store, round, expiry, |stats, _| {
        stats.memory_used_bytes * 10 >= stats.memory_limit_bytes * 8
    })
}

/// Writes what `fill_most` wrote, item for item: `items` items in all.
fn fill_again(store: &Store, round: u8, expiry: Expiry, items: u64) -> Stats {
    fill_until(store, round, expiry, |_, written| written >= items)
}

/// 16 large items, then small ones in steps of 1,000 until `done(stats, items written)`.
fn fill_until(
    store: &Store,
    round: u8,
    expiry: Expiry,
    done: impl Fn(&Stats, u64) -> bool,
) -> Stats {
    let value = [round; 100];
    let large = vec![round; 200 * 1024];
    for i in 0..16 {
        store.store(format!("large:{i}").as_bytes(), &large, 0, expiry, Mode::Set).expect("set");
    }
    for i in 0.. {
        let stats = store.stats();
        if done(&stats, 16 + i * 1000) {
            break;
        }
        assert!(i < 1000, "the store never filled: {stats:?}");
        for j in 0..1000 {
            let k = format!("small:{:09}", i * 1000 + j);
            store.store(k.as_bytes(), &value, 0, expiry, Mode::Set).expect("set");
        }
    }
    store.stats()
}

/// After the items die (`kill`) and ticks drain the reclaim: no item is counted, the large
/// items' memory is uncharged, only active segments stay in use, and the same data fits
/// again without evicting or reclaiming anything on the write path.
fn check_all_memory_returns(expiry: Expiry, kill: impl Fn(&Store, &ManualClock)) {
    let clock = Arc::new(ManualClock::new(T0));
    let store =
        Store::new(Config { memory_bytes: 64 * MIB, clock: clock.clone(), ..Config::default() })
            .expect("valid config");
    let empty = store.stats();
    fill_most(&store, 1, expiry);
    // Ticks finish the index's growth, so that from here on only reclaim moves memory.
    for _ in 0..100 {
        store.maintain(8);
    }
    let first = store.stats();
    assert_eq!(first.evictions, 0, "{first:?}");
    kill(&store, &clock);
    // The large items' mappings (16 x 200 KiB) are uncharged, but for the spares kept for
    // the next large items (at most a thirty-second of the limit); free segments stay
    // charged (resident, ready for reuse), index tables stay at their grown size. Only
    // active segments (per TTL class and write shard) may still be in use.
    let large_bytes = 16 * 200 * 1024;
    let ticks = tick_until(&store, |now| {
        now.items == 0
            && now.segments_in_use <= 16
            && now.large_spare_bytes <= 2 * MIB as u64
            && now.memory_used_bytes + large_bytes
                <= first.memory_used_bytes + now.large_spare_bytes
    });
    let after = store.stats();
    assert_eq!(after.index_bytes, first.index_bytes, "the index changed size");
    eprintln!(
        "reclaimed in {ticks} ticks: {} segments of {} in use before, {} after; memory used \
         {} before, {} after (empty: {})",
        first.segments_in_use,
        first.segments_max,
        after.segments_in_use,
        first.memory_used_bytes,
        after.memory_used_bytes,
        empty.memory_used_bytes
    );
    assert_eq!((after.items, after.item_bytes), (0, 0), "{after:?}");
    assert_eq!(store.len(), 0);
    assert!(after.memory_used_bytes >= empty.memory_used_bytes, "{after:?}");
    // The full budget is available again: the same data goes in without eviction, and
    // nothing dead was left for the write path to reclaim.
    let second = fill_again(&store, 2, Expiry::Never, first.items);
    assert_eq!(second.evictions, 0, "{second:?}");
    assert_eq!(second.expired_reclaimed, after.expired_reclaimed, "{second:?}");
    assert_eq!(second.items, first.items, "{first:?}\n{second:?}");
    assert!(second.memory_used_bytes <= second.memory_limit_bytes, "{second:?}");
    assert_eq!(store.get(b"large:3").expect("large item").value, vec![2u8; 200 * 1024]);
}

#[test]
fn flush_gives_back_all_memory() {
    check_all_memory_returns(Expiry::Never, |store, _| {
        store.flush_all(0);
        assert_eq!(store.len(), 0, "len counts flushed items");
        assert_eq!(store.stats().items, 0);
    });
}

#[test]
fn mass_expiry_gives_back_all_memory() {
    check_all_memory_returns(Expiry::AtMs(T0 + 5_000), |_, clock| clock.set_ms(T0 + 5_000));
}
