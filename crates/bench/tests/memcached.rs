//! Runs spinel-bench against a real memcached (Debian package) on loopback, through the
//! library API; each run is bounded to about a second.

mod common;

use std::time::Duration;

use bench::{
    client::Protocol,
    runner::{self, Config, Stop},
    workload::{KeyDistribution, Ratio, ValueSizes, Workload},
};

fn config(servers: Vec<String>, protocol: Protocol) -> Config {
    Config {
        servers,
        protocol,
        threads: 2,
        connections: 4,
        pipeline: 2,
        workload: Workload {
            keyspace: 2000,
            // Keys of 16 to 30 bytes: every get must ask for the key its set wrote.
            key_size: 16,
            key_size_max: 30,
            key_distribution: KeyDistribution::Zipf { exponent: 0.99 },
            value_sizes: ValueSizes::Weighted(vec![(20, 3), (700, 1)]),
            ratio: Ratio { sets: 1, gets: 9 },
            keys_per_get: 5,
            ttl_secs: 0,
            ..Workload::default()
        },
        preload: true,
        stop: Stop::Duration(Duration::from_millis(700)),
        ..Config::default()
    }
}

/// Goal: text and meta runs with multigets verify every value, see no errors, and count
/// exactly what the server counted. Method: preload, then a 9:1 mix; compare the bench's
/// gets/keys/sets with memcached's `cmd_get` and `cmd_set` deltas.
#[test]
fn text_and_meta_counts_match_the_server() {
    let Some(server) = common::memcached() else { return };
    for protocol in [Protocol::Memcache, Protocol::Meta] {
        let (gets_before, sets_before) = (
            common::memcached_stat(server.port, "cmd_get"),
            common::memcached_stat(server.port, "cmd_set"),
        );
        let config = config(vec![server.addr()], protocol);
        let summary = runner::run(&config, |_| {}).expect("the run completes");
        let c = &summary.stats.counts;
        assert!(c.gets > 100 && c.sets > 10, "{protocol:?}: {c:?}");
        assert_eq!(c.errors_total(), 0, "{protocol:?}: {c:?}");
        assert_eq!((c.corrupt, c.misses), (0, 0), "{protocol:?}: everything was preloaded");
        assert_eq!(c.get_keys, c.gets * 5);
        assert_eq!(summary.unanswered, 0);
        let preload = summary.preload.as_ref().expect("preloaded");
        assert_eq!(preload.stats.counts.sets, 2000);
        assert_eq!(preload.stats.counts.errors_total(), 0);
        let gets = common::memcached_stat(server.port, "cmd_get") - gets_before;
        let sets = common::memcached_stat(server.port, "cmd_set") - sets_before;
        assert_eq!(gets, c.get_keys, "{protocol:?}: memcached counts each key of a multiget");
        assert_eq!(sets, c.sets + 2000, "{protocol:?}: the run's sets plus the preload");
        assert!(summary.stats.latency_ns.len() == c.requests());
    }
}

/// Goal: the open-loop rate is kept. Method: 2000 req/s for 0.5 s over 2 threads.
#[test]
fn open_loop_keeps_the_rate() {
    let Some(server) = common::memcached() else { return };
    let config = Config {
        rate_per_sec: Some(2000),
        pipeline: 16,
        preload: false,
        stop: Stop::Duration(Duration::from_millis(500)),
        ..config(vec![server.addr()], Protocol::Memcache)
    };
    let summary = runner::run(&config, |_| {}).expect("the run completes");
    // The schedule is exact: every due request is either sent or reported as behind. How
    // many fall behind depends on the machine's load (CI runs suites in parallel), so only
    // the bookkeeping is asserted, plus a floor that a working sender clears easily.
    let requests = summary.stats.counts.requests();
    let scheduled = requests + summary.behind;
    assert!((990..=1001).contains(&scheduled), "{requests} sent + {} behind", summary.behind);
    assert!(requests >= 500, "{requests}");
}

/// Goal: keys are sharded over two servers by ketama, and each server holds exactly the
/// keys the ring gives it. Method: preload 2000 keys over two memcacheds, compare each
/// one's `curr_items` with the ring's placement.
#[test]
fn ketama_sharding_over_two_servers() {
    let (Some(a), Some(b)) = (common::memcached(), common::memcached()) else { return };
    let config = Config {
        stop: Stop::Requests(500),
        ..config(vec![a.addr(), b.addr()], Protocol::Memcache)
    };
    let summary = runner::run(&config, |_| {}).expect("the run completes");
    let c = &summary.stats.counts;
    assert_eq!((c.errors_total(), c.corrupt, c.misses), (0, 0, 0), "{c:?}");
    assert_eq!(c.requests(), 500);
    let ring = bench::ketama::Ketama::new(&[
        (bench::ketama::twemproxy_name("127.0.0.1", a.port), 1),
        (bench::ketama::twemproxy_name("127.0.0.1", b.port), 1),
    ]);
    let format = bench::workload::KeyFormat::with_range(16, 30, 2000).unwrap();
    let on_a = (0..2000).filter(|&id| ring.server_for_key(format.key(id).as_bytes()) == 0).count();
    assert!(on_a > 400 && on_a < 1600, "{on_a}");
    assert_eq!(common::memcached_stat(a.port, "curr_items"), on_a as u64);
    assert_eq!(common::memcached_stat(b.port, "curr_items"), 2000 - on_a as u64);
}
