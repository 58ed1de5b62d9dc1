//! `--structure`: every Redis data type workload against a real redis-server (and
//! valkey-server when it is on PATH), and streams and geo against Spinel, each for well
//! under a second: no errors, no corrupt values, and after the preload every read finds its
//! field (a list's RPOP and a stream consumer's XREADGROUP may run dry).

mod common;

use std::time::Duration;

use bench::{
    client::Protocol,
    runner::{self, Config, Stop},
    workload::{Ratio, Structure, ValueSizes, Workload},
};

fn config(server: String, structure: Structure, keys_per_get: usize) -> Config {
    Config {
        servers: vec![server],
        protocol: Protocol::Resp,
        threads: 1,
        connections: 4,
        pipeline: 4,
        workload: Workload {
            keyspace: 200,
            key_size: 16,
            value_sizes: ValueSizes::Range { min: 1, max: 300 },
            ratio: Ratio { sets: 1, gets: 4 },
            keys_per_get,
            structure,
            fields: 10,
            ..Workload::default()
        },
        preload: true,
        warmup: Duration::from_millis(50),
        stop: Stop::Duration(Duration::from_millis(300)),
        ..Config::default()
    }
}

fn run_all(name: &str, addr: &str) {
    run_each(name, addr, &Structure::ALL);
}

fn run_each(name: &str, addr: &str, structures: &[Structure]) {
    for &structure in structures {
        for keys_per_get in [1, 3] {
            let what = format!("{name} {} x{keys_per_get}", structure.name());
            // The structures share key names: flush between runs, or a key written as a
            // hash is read as a list (WRONGTYPE).
            flush(addr);
            let summary = runner::run(&config(addr.to_string(), structure, keys_per_get), |_| {})
                .expect("the run completes");
            let c = &summary.stats.counts;
            let preload = summary.preload.as_ref().expect("preloaded");
            assert_eq!(preload.keys, 200 * structure_ids(structure), "{what}");
            assert!(c.gets > 50 && c.sets > 10, "{what}: {c:?}");
            let errors = c.errors_total() + summary.unmeasured.counts.errors_total();
            assert_eq!((errors, c.corrupt, summary.unanswered), (0, 0, 0), "{what}: {c:?}");
            let keys_per_op =
                if structure == Structure::Multi { keys_per_get.max(2) } else { keys_per_get };
            assert_eq!(c.get_keys, c.gets * keys_per_op as u64, "{what}");
            if matches!(structure, Structure::List | Structure::Stream) {
                assert!(c.hits > 0, "{what}: {c:?}");
            } else {
                assert_eq!((c.misses, c.hits), (0, c.get_keys), "{what}: preloaded: {c:?}");
            }
        }
    }
}

fn structure_ids(structure: Structure) -> u64 {
    if structure.is_collection() {
        10
    } else {
        1
    }
}

/// FLUSHALL over a plain socket.
fn flush(addr: &str) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream.write_all(b"*1\r\n$8\r\nFLUSHALL\r\n").unwrap();
    let mut reply = [0u8; 5];
    stream.read_exact(&mut reply).unwrap();
    assert_eq!(&reply, b"+OK\r\n");
}

/// Goal: every structure's requests are answered as the bench expects by Redis itself.
#[test]
fn redis_every_structure() {
    let Some(server) = common::redis() else { return };
    run_all("redis", &server.addr());
}

/// Goal: the same against Valkey (skipped unless valkey-server is on PATH).
#[test]
fn valkey_every_structure() {
    let Some(server) = common::valkey() else { return };
    run_all("valkey", &server.addr());
}

/// Goal: streams and geo on Spinel's RESP port answer as Redis's do (the consumer's XACKs
/// included: its group has nothing pending afterwards).
#[test]
fn spinel_streams_and_geo() {
    let Some(server) = common::spinel() else { return };
    run_each("spinel", &server.resp_addr(), &[Structure::Stream, Structure::Geo]);
}

/// Goal: a consumer acknowledges what it read: after a stream run (no preload, so the groups
/// are created on -NOGROUP), no group has entries pending, and the reads found entries.
#[test]
fn stream_consumer_acknowledges() {
    let Some(server) = common::redis() else { return };
    let addr = server.addr();
    flush(&addr);
    let mut c = config(addr.clone(), Structure::Stream, 1);
    c.preload = false;
    let summary = runner::run(&c, |_| {}).expect("the run completes");
    let counts = &summary.stats.counts;
    let errors = counts.errors_total() + summary.unmeasured.counts.errors_total();
    assert_eq!((errors, counts.corrupt), (0, 0), "{counts:?}");
    assert!(counts.hits > 0, "{counts:?}");
    let mut groups = 0;
    for key in 0..200 {
        let reply = command(&addr, &format!("XPENDING key:{key:012} bench"));
        if reply.starts_with("*4\r\n:0\r\n") {
            groups += 1;
        } else {
            assert!(reply.starts_with("-NOGROUP"), "key {key}: {reply:?}");
        }
    }
    assert!(groups > 100, "{groups} of 200 keys have the group, none pending");
}

/// One command (words split on spaces) over a plain socket; its reply's first bytes.
fn command(addr: &str, line: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream.write_all(format!("{line}\r\n").as_bytes()).unwrap();
    let mut reply = [0u8; 256];
    let n = stream.read(&mut reply).unwrap();
    String::from_utf8_lossy(&reply[..n]).into_owned()
}

/// Goal: a structure other than string is refused on the memcache protocols.
#[test]
fn structure_needs_resp() {
    let mut c = config("127.0.0.1:1".into(), Structure::Hash, 1);
    c.protocol = Protocol::Memcache;
    let e = runner::run(&c, |_| {}).expect_err("refused");
    assert!(e.contains("--structure hash needs --protocol resp"), "{e}");
}
