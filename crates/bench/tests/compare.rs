//! Runs `spinel-bench compare` with tiny settings (one workload, 1 s runs, Spinel and
//! memcached, no thread sweep) against the real servers, bounded to about 20 s, and checks
//! that the report files exist and show both servers, and that compare.json parses with
//! one latency per measured request in each row's histogram.

mod common;

use std::{path::PathBuf, time::Duration};

use bench::{
    compare::{self, matrix, servers::Kind, Options},
    workload::Structure,
};

fn spinel_bin() -> Option<PathBuf> {
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target");
    std::env::var_os("SPINEL_BIN")
        .map(PathBuf::from)
        .into_iter()
        .chain([target.join("release/spinel"), target.join("debug/spinel")])
        .find(|p| p.is_file())
}

/// Goal: a tiny comparison completes and its markdown, CSV and HTML name both servers with
/// measured rates. Method: the library entry point with one 1 s workload per server.
#[test]
fn tiny_compare_writes_reports_with_both_servers() {
    let Some(spinel) = spinel_bin() else {
        eprintln!("SKIP: no Spinel binary (set SPINEL_BIN or cargo build --release -p server)");
        return;
    };
    if compare::servers::find_program("memcached").is_none() {
        eprintln!("SKIP: memcached is not installed (apt-get install memcached)");
        return;
    }
    let out_dir = std::env::temp_dir().join(format!("spinel-compare-test-{}", std::process::id()));
    let options = Options {
        repeat: 1,
        duration: Duration::from_secs(1),
        warmup: Duration::from_millis(200),
        connections: 10,
        keyspace: 1000,
        servers: vec![Kind::Spinel.into(), Kind::Memcached.into()],
        spinel_bin: Some(spinel),
        sweep_threads: 0,
        memory_mib: 64,
        idle_wait: Duration::from_secs(1),
        out_dir: out_dir.clone(),
        cells: vec![matrix::sweep_cell()],
        command: "tiny compare (test)".into(),
        ..Options::defaults(true)
    };
    let started = std::time::Instant::now();
    let outcome = compare::run(&options, &mut |line| eprintln!("{line}")).expect("compare runs");
    assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
    assert!(outcome.skipped.is_empty(), "{:?}", outcome.skipped);
    assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
    assert_eq!(outcome.rows.len(), 2);
    for row in &outcome.rows {
        assert!(row.req_per_sec.median > 1000.0, "{row:?}");
        assert!(row.req_per_server_cpu_sec.median.is_finite(), "{row:?}");
        assert_eq!((row.errors, row.hit_ratio), (0, 1.0), "{row:?}");
    }
    for name in ["compare.md", "compare.csv", "compare.html", "compare.json"] {
        let text = std::fs::read_to_string(out_dir.join(name)).expect(name);
        assert!(text.contains("spinel") && text.contains("memcached"), "{name}");
        assert!(text.contains("get 20/20"), "{name}");
    }
    let json = std::fs::read_to_string(out_dir.join("compare.json")).expect("compare.json");
    let report: serde_json::Value = serde_json::from_str(&json).expect("compare.json parses");
    let rows = report["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2);
    for row in rows {
        // Every measured request left one latency in the row's histogram.
        let text = row["latency_histogram"].as_str().expect("a histogram");
        let latencies = bench::histogram::from_base64(text).expect("it decodes").len();
        let requests: u64 = row["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["requests"].as_u64().unwrap())
            .sum();
        assert_eq!(latencies, requests, "{}", row["server"]);
    }
    let html = std::fs::read_to_string(out_dir.join("compare.html")).unwrap();
    assert!(html.contains("<svg") && !html.contains("http"));
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// Goal: a `--server-cmd` server is started from its command (pinned, {port} and
/// {threads} filled in), measured like a built-in one, and as `:limit` becomes the divisor
/// of the per-workload table, next to memcached; pipeline and open-loop workloads run.
/// Method: memcached twice, once built in and once as `lim:mc:limit=memcached ...`, on a
/// pipelined and an open-loop workload of 1 s each.
#[test]
fn server_cmd_is_measured_and_is_the_limit() {
    if compare::servers::find_program("memcached").is_none() {
        eprintln!("SKIP: memcached is not installed (apt-get install memcached)");
        return;
    }
    let out_dir = std::env::temp_dir().join(format!("spinel-compare-cmd-{}", std::process::id()));
    let cmd = "lim:mc:limit=memcached -u root -l 127.0.0.1 -U 0 -p {port} -t {threads} -m 64";
    let lim = compare::servers::ServerCmd::parse(cmd).expect("the spec parses");
    let base = matrix::sweep_cell();
    let cells = matrix::expand(&[base], &[1, 8], &[10], &[]);
    let open = matrix::Cell { rate_per_sec: 5000, connections: 10, ..base };
    let options = Options {
        repeat: 1,
        duration: Duration::from_secs(1),
        warmup: Duration::from_millis(200),
        keyspace: 1000,
        servers: vec![Kind::Memcached.into(), compare::servers::Spec::Cmd(lim)],
        sweep_threads: 0,
        memory_mib: 64,
        idle_wait: Duration::from_secs(1),
        out_dir: out_dir.clone(),
        cells: cells.into_iter().chain([open]).collect(),
        command: "server-cmd compare (test)".into(),
        ..Options::defaults(true)
    };
    let started = std::time::Instant::now();
    let outcome = compare::run(&options, &mut |line| eprintln!("{line}")).expect("compare runs");
    assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
    assert!(outcome.skipped.is_empty() && outcome.failures.is_empty(), "{:?}", outcome.failures);
    assert_eq!(outcome.rows.len(), 6, "3 workloads x 2 servers");
    for row in &outcome.rows {
        assert!(row.req_per_server_cpu_sec.median.is_finite(), "{row:?}");
        assert_eq!((row.errors, row.hit_ratio), (0, 1.0), "{row:?}");
    }
    let open_rows: Vec<_> = outcome.rows.iter().filter(|r| r.cell.open_loop()).collect();
    for row in open_rows {
        let rate = row.req_per_sec.median;
        assert!((4000.0..6000.0).contains(&rate), "offered 5000/s, got {rate}");
    }
    let md = std::fs::read_to_string(out_dir.join("compare.md")).expect("compare.md");
    assert!(md.contains("| workload | measure | memcached | lim |"), "{md}");
    assert!(md.contains("| ÷ lim |") && md.contains("| ÷ memcached |"), "{md}");
    assert!(md.contains("get 20/20 p8 c10") && md.contains("get 20/20 c10 @5.00k/s"), "{md}");
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// The ports in a `started NAME (2 instances: pids 1,2, ports 3,4)` progress line.
fn started_ports(line: &str) -> Option<Vec<u16>> {
    let (_, ports) = line.strip_prefix("started ")?.split_once("ports ")?;
    ports.trim_end_matches(')').split(',').map(|p| p.trim().parse().ok()).collect()
}

/// Goal: with `--instances 2` memcached runs twice, the load reaches both instances by the
/// ketama ring (each instance's own `cmd_get` grows by a fair share), server CPU is the sum
/// of both, and the report says x2 instances. Method: a 300 ms run of get 20/20; while the
/// servers still run (the progress line after the measured run), each instance's `stats`
/// is read over its own socket.
#[test]
fn instances_share_the_load_by_ketama() {
    if compare::servers::find_program("memcached").is_none() {
        eprintln!("SKIP: memcached is not installed (apt-get install memcached)");
        return;
    }
    let out_dir = std::env::temp_dir().join(format!("spinel-compare-inst-{}", std::process::id()));
    let options = Options {
        repeat: 1,
        duration: Duration::from_millis(300),
        warmup: Duration::from_millis(100),
        connections: 10,
        keyspace: 1000,
        servers: vec![Kind::Memcached.into()],
        sweep_threads: 0,
        instances: 2,
        memory_mib: 64,
        idle_wait: Duration::from_secs(1),
        out_dir: out_dir.clone(),
        cells: vec![matrix::Cell { connections: 10, ..matrix::sweep_cell() }],
        command: "instances compare (test)".into(),
        ..Options::defaults(true)
    };
    let (mut ports, mut cmd_gets) = (Vec::new(), Vec::new());
    let started = std::time::Instant::now();
    let outcome = compare::run(&options, &mut |line| {
        eprintln!("{line}");
        if let Some(p) = started_ports(line) {
            ports = p;
        } else if line.contains("req/srv-CPU-s") {
            cmd_gets = ports.iter().map(|&p| common::memcached_stat(p, "cmd_get")).collect();
        }
    })
    .expect("compare runs");
    assert!(started.elapsed() < Duration::from_secs(20), "took {:?}", started.elapsed());
    assert!(outcome.skipped.is_empty() && outcome.failures.is_empty(), "{:?}", outcome.failures);
    assert_eq!(ports.len(), 2, "two instances started");
    assert_ne!(ports[0], ports[1]);
    let total: u64 = cmd_gets.iter().sum();
    assert_eq!(cmd_gets.len(), 2, "{cmd_gets:?}");
    for gets in &cmd_gets {
        assert!(*gets > total / 5, "each instance gets a share of the keys: {cmd_gets:?}");
    }
    assert_eq!(outcome.rows.len(), 1);
    let row = &outcome.rows[0];
    assert_eq!((row.errors, row.hit_ratio), (0, 1.0), "{row:?}");
    let sample = &row.samples[0];
    assert_eq!(sample.instance_cpu_secs.len(), 2, "{sample:?}");
    assert!(sample.instance_cpu_secs.iter().all(|&cpu| cpu > 0.0), "{sample:?}");
    let sum: f64 = sample.instance_cpu_secs.iter().sum();
    assert!((sum - sample.server_cpu_secs).abs() < 1e-9, "{sample:?}");
    assert!(outcome.markdown.contains("x2 instances"), "{}", outcome.markdown);
    let md = std::fs::read_to_string(out_dir.join("compare.md")).expect("compare.md");
    assert!(md.contains("instances: x2 instances of each server"), "{md}");
    let json = std::fs::read_to_string(out_dir.join("compare.json")).expect("compare.json");
    assert!(json.contains("instance_cpu_secs"), "{json}");
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// `INFO commandstats`' call count of `command` (lower case) on a RESP port.
fn redis_calls(port: u16, command: &str) -> u64 {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(b"*2\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n").unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    // A bulk reply ends with an empty line after the last stat.
    while !text.ends_with(b"\r\n\r\n") {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "closed");
        text.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&text);
    let prefix = format!("cmdstat_{command}:calls=");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .map_or(0, |rest| rest.split(',').next().unwrap().parse().unwrap())
}

/// Goal: `--structure hash` reaches the server: over two ketama-sharded Redis instances
/// the preload is HSETs and the gets are HGETs that all hit; memcached (no RESP) is
/// skipped with the reason, and the report names the structure. Method: redis-server's own
/// INFO commandstats on each instance, read while the servers still run.
#[test]
fn structure_reaches_every_instance() {
    if compare::servers::find_program("redis-server").is_none() {
        eprintln!("SKIP: redis-server is not installed");
        return;
    }
    let out_dir = std::env::temp_dir().join(format!("spinel-compare-hash-{}", std::process::id()));
    let options = Options {
        repeat: 1,
        duration: Duration::from_millis(300),
        warmup: Duration::from_millis(100),
        connections: 10,
        keyspace: 100,
        servers: vec![Kind::Memcached.into(), Kind::Redis.into()],
        sweep_threads: 0,
        instances: 2,
        memory_mib: 64,
        idle_wait: Duration::from_secs(1),
        out_dir: out_dir.clone(),
        cells: vec![matrix::Cell { connections: 10, ..matrix::sweep_cell() }],
        structure: Structure::Hash,
        fields: 10,
        command: "structure compare (test)".into(),
        ..Options::defaults(true)
    };
    let (mut ports, mut calls) = (Vec::new(), Vec::new());
    let outcome = compare::run(&options, &mut |line| {
        eprintln!("{line}");
        if let Some(p) = started_ports(line) {
            ports = p;
        } else if line.contains("req/srv-CPU-s") {
            calls =
                ports.iter().map(|&p| (redis_calls(p, "hset"), redis_calls(p, "hget"))).collect();
        }
    })
    .expect("compare runs");
    assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
    assert_eq!(outcome.skipped.len(), 1, "{:?}", outcome.skipped);
    assert!(outcome.skipped[0].1.contains("no RESP"), "{:?}", outcome.skipped);
    assert_eq!(calls.len(), 2, "{calls:?}");
    let hsets: u64 = calls.iter().map(|c| c.0).sum();
    assert!(hsets >= 1000, "the preload sets 100 keys x 10 fields: {calls:?}");
    assert!(calls.iter().all(|&(hset, hget)| hset > 100 && hget > 100), "{calls:?}");
    assert_eq!(outcome.rows.len(), 1);
    assert_eq!((outcome.rows[0].errors, outcome.rows[0].hit_ratio), (0, 1.0));
    let md = std::fs::read_to_string(out_dir.join("compare.md")).expect("compare.md");
    assert!(md.contains("structure: hash: HSET key field value / HGET"), "{md}");
    let _ = std::fs::remove_dir_all(&out_dir);
}

/// Goal: `--structure stream` on Spinel and Redis: the preload is XADDs, the reads are a
/// consumer's XREADGROUPs each followed by the XACK of what it delivered, and XRANGEs; each
/// run starts from a FLUSHALL (a stream's preload appends); no errors, and the reads find
/// entries. Method: redis-server's INFO commandstats, read after each run while it runs.
#[test]
fn stream_compare_reads_acks_and_flushes() {
    let Some(spinel) = spinel_bin() else {
        eprintln!("SKIP: no Spinel binary (set SPINEL_BIN or cargo build --release -p server)");
        return;
    };
    if compare::servers::find_program("redis-server").is_none() {
        eprintln!("SKIP: redis-server is not installed");
        return;
    }
    let out_dir =
        std::env::temp_dir().join(format!("spinel-compare-stream-{}", std::process::id()));
    let options = Options {
        repeat: 2,
        duration: Duration::from_millis(300),
        warmup: Duration::from_millis(100),
        connections: 10,
        keyspace: 100,
        servers: vec![Kind::Spinel.into(), Kind::Redis.into()],
        resp: true,
        spinel_bin: Some(spinel),
        sweep_threads: 0,
        memory_mib: 64,
        idle_wait: Duration::from_secs(1),
        out_dir: out_dir.clone(),
        cells: vec![matrix::Cell {
            connections: 10,
            pattern: matrix::Pattern::Mix11,
            ..matrix::sweep_cell()
        }],
        structure: Structure::Stream,
        fields: 10,
        command: "stream compare (test)".into(),
        ..Options::defaults(true)
    };
    let mut redis_port = None;
    let mut calls = Vec::new();
    let names = ["xadd", "xreadgroup", "xack", "xrange", "flushall"];
    let outcome = compare::run(&options, &mut |line| {
        eprintln!("{line}");
        if line.starts_with("started redis") {
            // `started redis (pid N, port P)`
            let port = line.rsplit_once("port ").map(|(_, p)| p.trim_end_matches(')'));
            redis_port = port.and_then(|p| p.parse::<u16>().ok());
        } else if line.contains("req/srv-CPU-s") && line.contains("redis") {
            let port = redis_port.expect("redis started");
            calls = names.map(|name| redis_calls(port, name)).to_vec();
        }
    })
    .expect("compare runs");
    assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
    assert!(outcome.skipped.is_empty(), "{:?}", outcome.skipped);
    let [xadd, xreadgroup, xack, xrange, flushall] = calls[..] else { panic!("{calls:?}") };
    assert!(xadd >= 1000 && xreadgroup > 0 && xrange > 0, "{calls:?}");
    assert!(xack > 0 && xack <= xreadgroup, "an XACK per delivering read: {calls:?}");
    assert!(flushall >= 1, "{calls:?}");
    assert_eq!(outcome.rows.len(), 2);
    for row in &outcome.rows {
        assert_eq!(row.errors, 0, "{row:?}");
        assert!(row.hit_ratio > 0.5, "{row:?}");
    }
    let md = std::fs::read_to_string(out_dir.join("compare.md")).expect("compare.md");
    assert!(md.contains("structure: stream: XADD key * item"), "{md}");
    let _ = std::fs::remove_dir_all(&out_dir);
}
