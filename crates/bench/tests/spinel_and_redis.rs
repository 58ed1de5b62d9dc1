//! Runs spinel-bench against a real Spinel (memcached text, meta and RESP ports) and a
//! real redis-server, each for well under a second.

mod common;

use std::time::Duration;

use bench::{
    client::Protocol,
    runner::{self, Config, Stop},
    workload::{Ratio, ValueSizes, Workload},
};

fn config(server: String, protocol: Protocol, keys_per_get: usize) -> Config {
    Config {
        servers: vec![server],
        protocol,
        threads: 1,
        connections: 8,
        pipeline: 4,
        workload: Workload {
            keyspace: 1000,
            key_size: 16,
            key_size_max: 0,
            value_sizes: ValueSizes::Range { min: 1, max: 3000 },
            ratio: Ratio { sets: 1, gets: 4 },
            keys_per_get,
            ttl_secs: 300,
            ..Workload::default()
        },
        preload: true,
        warmup: Duration::from_millis(100),
        stop: Stop::Duration(Duration::from_millis(400)),
        ..Config::default()
    }
}

fn assert_clean(summary: &runner::Summary, what: &str) {
    let c = &summary.stats.counts;
    assert!(c.gets > 50 && c.sets > 10, "{what}: {c:?}");
    assert_eq!(c.errors_total() + summary.unmeasured.counts.errors_total(), 0, "{what}: {c:?}");
    assert_eq!((c.corrupt, c.misses), (0, 0), "{what}: preloaded, TTL far away: {c:?}");
    assert_eq!(summary.unanswered, 0, "{what}");
}

/// Goal: every protocol Spinel serves passes verification, single and multi-key.
#[test]
fn spinel_all_protocols() {
    let Some(server) = common::spinel() else { return };
    for (protocol, addr) in [
        (Protocol::Memcache, server.addr()),
        (Protocol::Meta, server.addr()),
        (Protocol::Resp, server.resp_addr()),
    ] {
        for keys_per_get in [1, 7] {
            let summary = runner::run(&config(addr.clone(), protocol, keys_per_get), |_| {})
                .expect("the run completes");
            assert_clean(&summary, &format!("spinel {protocol:?} x{keys_per_get}"));
            assert_eq!(
                summary.stats.counts.get_keys,
                summary.stats.counts.gets * keys_per_get as u64
            );
        }
    }
}

/// Goal: GET, MGET and SET EX against Redis itself.
#[test]
fn redis_get_mget_set() {
    let Some(server) = common::redis() else { return };
    for keys_per_get in [1, 7] {
        let summary = runner::run(&config(server.addr(), Protocol::Resp, keys_per_get), |_| {})
            .expect("the run completes");
        assert_clean(&summary, &format!("redis x{keys_per_get}"));
    }
}
