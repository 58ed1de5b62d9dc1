//! A fake memcached that answers gets with bad bytes: spinel-bench must count them, by kind,
//! and never report them as hits.

use std::{
    io::{BufRead, BufReader, Write},
    net::TcpListener,
    thread,
    time::Duration,
};

use bench::{
    client::{ErrorKind, Protocol},
    runner::{self, Config, Stop},
    workload::{Ratio, ValueSizes, Workload},
};

/// How the fake server answers `get <key>`.
#[derive(Clone, Copy)]
enum Lie {
    /// The right key with bytes no writer produced.
    CorruptValue,
    /// A value for a key that was not asked for.
    OtherKey,
    /// `SERVER_ERROR`.
    ServerError,
}

/// Serves every connection on a thread; answers only `get` lines. Returns its address.
fn fake_server(lie: Lie) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            thread::spawn(move || serve(stream, lie));
        }
    });
    addr
}

fn serve(stream: std::net::TcpStream, lie: Lie) {
    let mut writer = stream.try_clone().unwrap();
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { return };
        let Some(key) = line.strip_prefix("get ") else { continue };
        let reply = match lie {
            Lie::CorruptValue => format!("VALUE {key} 0 20\r\n{}\r\nEND\r\n", "x".repeat(20)),
            Lie::OtherKey => format!("VALUE not-{key} 0 20\r\n{}\r\nEND\r\n", "x".repeat(20)),
            Lie::ServerError => "SERVER_ERROR out of memory\r\n".to_string(),
        };
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

fn run_against(addr: String) -> runner::Summary {
    let config = Config {
        servers: vec![addr],
        protocol: Protocol::Memcache,
        connections: 2,
        workload: Workload {
            keyspace: 100,
            value_sizes: ValueSizes::Fixed(20),
            ratio: Ratio { sets: 0, gets: 1 },
            ..Workload::default()
        },
        stop: Stop::Duration(Duration::from_millis(200)),
        ..Config::default()
    };
    runner::run(&config, |_| {}).expect("the run completes")
}

/// Goal: corrupt values are caught and counted apart from plain misses.
#[test]
fn corrupt_values_are_counted() {
    let summary = run_against(fake_server(Lie::CorruptValue));
    let c = &summary.stats.counts;
    assert!(c.gets > 10, "{c:?}");
    assert_eq!(c.hits, 0);
    assert_eq!(c.corrupt, c.gets, "every reply was corrupt");
    assert_eq!(c.misses, c.gets, "a corrupt value is also a miss");
    let json: serde_json::Value = serde_json::from_str(&bench::report::json(&summary)).unwrap();
    assert_eq!(json["corrupt"].as_u64(), Some(c.corrupt), "{json}");
}

/// Goal: a reply for a key nobody asked for breaks the stream: counted as a protocol error,
/// the connection is closed, the run ends and says why.
#[test]
fn wrong_key_is_a_protocol_error() {
    let summary = run_against(fake_server(Lie::OtherKey));
    let total = summary.stats.counts.error(ErrorKind::Protocol)
        + summary.unmeasured.counts.error(ErrorKind::Protocol);
    assert_eq!(total, 2, "both connections closed");
    assert_eq!(summary.stats.counts.hits, 0);
    assert!(summary.first_failure.is_some());
}

/// Goal: server errors are counted by kind.
#[test]
fn server_errors_are_counted() {
    let summary = run_against(fake_server(Lie::ServerError));
    let c = &summary.stats.counts;
    assert!(c.gets > 10);
    assert_eq!(c.error(ErrorKind::ServerError), c.gets);
    assert!(bench::report::text(&summary).contains("server_error"));
}
