//! spinel-bench `--cluster` against three Spinel Redis Cluster nodes, started from
//! nodes.conf files this test writes (as tests/conformance/cluster_kit.py does): a steady
//! cluster (no redirects, every key on its slot's owner), then one whose seed has a stale
//! map and a slot in migration (MOVED and ASK followed, still no errors).

mod common;

use std::{
    fmt::Write as _,
    io::{Read, Write},
    net::TcpStream,
    path::PathBuf,
    time::Duration,
};

use bench::{
    client::Protocol,
    runner::{self, Config, Stop},
    workload::{KeyFormat, Ratio, ValueSizes, Workload},
};
use proto_resp::{cluster::key_slot, compose_command, parse_reply, ParseError, Value};

const KEYSPACE: u64 = 2000;
const KEY_SIZE: usize = 16;

/// One node as nodes.conf describes it.
struct NodeSpec {
    id: String,
    port: u16,
    /// Slot ranges, inclusive.
    slots: Vec<(u16, u16)>,
}

/// A nodes.conf line per node; `extra` is appended to `myself`'s line (open slots).
fn nodes_conf(nodes: &[NodeSpec], myself: usize, extra: &str) -> String {
    let mut text = String::new();
    for (i, node) in nodes.iter().enumerate() {
        let flags = if i == myself { "myself,master" } else { "master" };
        let slots: Vec<String> = node.slots.iter().map(|(s, e)| format!("{s}-{e}")).collect();
        let _ = write!(
            text,
            "{} 127.0.0.1:{}@{} {flags} - 0 0 {} connected {}",
            node.id,
            node.port,
            u32::from(node.port) + 10000,
            i + 1,
            slots.join(" ")
        );
        if i == myself {
            text.push_str(extra);
        }
        text.push('\n');
    }
    let _ = writeln!(text, "vars currentEpoch {} lastVoteEpoch 0", nodes.len());
    text
}

/// Three nodes started from per-node nodes.conf texts; the directory goes with them.
struct Cluster {
    servers: Vec<common::Server>,
    dir: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.servers.clear(); // stopped by pid first
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn start(ports: &[u16], confs: &[String]) -> Option<Cluster> {
    common::spinel_program()?;
    let dir = std::env::temp_dir().join(format!("spinel-bench-cluster-{}", common::free_port()));
    let mut cluster = Cluster { servers: Vec::new(), dir };
    for (port, conf) in ports.iter().zip(confs) {
        let node_dir = cluster.dir.join(port.to_string());
        std::fs::create_dir_all(&node_dir).unwrap();
        std::fs::write(node_dir.join("nodes.conf"), conf).unwrap();
        cluster.servers.push(common::spinel_cluster_node(&node_dir, *port)?);
    }
    Some(cluster)
}

fn node_specs(ports: &[u16], slots: [Vec<(u16, u16)>; 3]) -> Vec<NodeSpec> {
    ports
        .iter()
        .zip(slots)
        .enumerate()
        .map(|(i, (&port, slots))| NodeSpec { id: format!("{:040x}", 0xabc0 + i), port, slots })
        .collect()
}

/// Commands on a fresh connection, one after another; the last reply as text: an
/// integer, `(nil)`, `(value)` for a bulk string, or `error: <message>`.
fn ask(port: u16, commands: &[&[&[u8]]]) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut last = String::new();
    for args in commands {
        let mut request = Vec::new();
        compose_command(args, &mut request);
        stream.write_all(&request).unwrap();
        last = read_reply(&mut stream);
    }
    last
}

fn read_reply(stream: &mut TcpStream) -> String {
    let mut input = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match parse_reply(&input) {
            Ok((value, used)) => {
                assert_eq!(used, input.len(), "one reply per command");
                return match value {
                    Value::Integer(n) => n.to_string(),
                    Value::NullBulk | Value::Null => "(nil)".into(),
                    Value::Error(e) => format!("error: {}", String::from_utf8_lossy(e)),
                    Value::Bulk(_) => "(value)".into(),
                    other => format!("{other:?}"),
                };
            }
            Err(ParseError::Incomplete) => {}
            Err(e) => panic!("{e:?}"),
        }
        let n = stream.read(&mut chunk).unwrap();
        assert!(n > 0, "closed");
        input.extend_from_slice(&chunk[..n]);
    }
}

fn config(seed_port: u16, keys_per_get: usize) -> Config {
    Config {
        servers: vec![format!("127.0.0.1:{seed_port}")],
        protocol: Protocol::Resp,
        cluster: true,
        threads: 2,
        connections: 4,
        pipeline: 4,
        workload: Workload {
            keyspace: KEYSPACE,
            key_size: KEY_SIZE,
            key_size_max: 0,
            value_sizes: ValueSizes::Range { min: 1, max: 200 },
            ratio: Ratio { sets: 1, gets: 4 },
            keys_per_get,
            ..Workload::default()
        },
        preload: true,
        warmup: Duration::from_millis(50),
        stop: Stop::Duration(Duration::from_millis(300)),
        ..Config::default()
    }
}

fn assert_clean(summary: &runner::Summary, what: &str) {
    let c = &summary.stats.counts;
    assert!(c.gets > 50 && c.sets > 10, "{what}: {c:?}");
    let preload = summary.preload.as_ref().expect("preloaded");
    let errors = c.errors_total()
        + summary.unmeasured.counts.errors_total()
        + preload.stats.counts.errors_total();
    assert_eq!(errors, 0, "{what}: {c:?} / preload {:?}", preload.stats.counts);
    assert_eq!((c.corrupt, c.misses), (0, 0), "{what}: preloaded: {c:?}");
    assert_eq!(summary.unanswered, 0, "{what}");
}

/// Goal: with a steady map, the bench routes every request to its slot's owner: no
/// redirect, no error, and afterwards each key is found on its owner, which holds only
/// its own keys. Method: single gets and 5-key gets (split by slot), one seed given.
#[test]
fn steady_cluster_routes_by_slot() {
    let ports = [common::free_port(), common::free_port(), common::free_port()];
    let specs = node_specs(&ports, [vec![(0, 5460)], vec![(5461, 10922)], vec![(10923, 16383)]]);
    let confs: Vec<String> = (0..3).map(|i| nodes_conf(&specs, i, "")).collect();
    let Some(_cluster) = start(&ports, &confs) else { return };
    for keys_per_get in [1, 5] {
        let summary = runner::run(&config(ports[1], keys_per_get), |_| {}).expect("runs");
        let what = format!("steady, {keys_per_get} keys per get");
        assert_clean(&summary, &what);
        let c = &summary.stats.counts;
        assert_eq!((c.moved, c.ask), (0, 0), "{what}");
        let warm = &summary.unmeasured.counts;
        assert_eq!((warm.moved, warm.ask), (0, 0), "{what}");
        assert_eq!(c.get_keys, c.gets * keys_per_get as u64, "{what}");
    }
    // Keys landed on their owners: each node holds exactly the keys of its slots.
    let format = KeyFormat::new(KEY_SIZE, KEYSPACE).unwrap();
    let mut per_node = [0u64; 3];
    for id in 0..KEYSPACE {
        let key = format.key(id);
        let slot = key_slot(key.as_bytes());
        let owner =
            specs.iter().position(|n| n.slots.iter().any(|(s, e)| (*s..=*e).contains(&slot)));
        let owner = owner.expect("every slot has an owner");
        per_node[owner] += 1;
        let value = ask(ports[owner], &[&[b"GET", key.as_bytes()]]);
        assert_eq!(value, "(value)", "key {id} on its owner");
    }
    for (node, want) in per_node.iter().enumerate() {
        assert_eq!(ask(ports[node], &[&[b"DBSIZE"]]), want.to_string(), "node {node}");
    }
}

/// Goal: redirects are followed and counted, never errors. Method: the seed's nodes.conf
/// is stale (it says node 1 owns 5461-10922, while nodes 1 and 2 agree that 8001-10922
/// moved to node 2), so the bench meets -MOVED, fetches the map again and goes on; and the
/// seed migrates one of its slots to node 2, so keys of that slot get -ASK (the seed does
/// not have them) and are set and read on node 2 after ASKING.
#[test]
fn stale_map_and_migration_are_followed() {
    let ports = [common::free_port(), common::free_port(), common::free_port()];
    let stale = node_specs(&ports, [vec![(0, 5460)], vec![(5461, 10922)], vec![(10923, 16383)]]);
    let fresh = node_specs(&ports, [vec![(0, 5460)], vec![(5461, 8000)], vec![(8001, 16383)]]);
    // A slot of the seed's range that holds bench keys.
    let format = KeyFormat::new(KEY_SIZE, KEYSPACE).unwrap();
    let migrating = (0..KEYSPACE)
        .map(|id| key_slot(format.key(id).as_bytes()))
        .find(|slot| *slot <= 5460)
        .expect("some key in node 0's slots");
    let confs = [
        nodes_conf(&stale, 0, &format!(" [{migrating}->-{}]", stale[2].id)),
        nodes_conf(&fresh, 1, ""),
        nodes_conf(&fresh, 2, &format!(" [{migrating}-<-{}]", fresh[0].id)),
    ];
    let Some(_cluster) = start(&ports, &confs) else { return };
    let summary = runner::run(&config(ports[0], 1), |_| {}).expect("runs");
    assert_clean(&summary, "stale map");
    let preload = &summary.preload.as_ref().unwrap().stats.counts;
    let (c, warm) = (&summary.stats.counts, &summary.unmeasured.counts);
    assert!(preload.moved + warm.moved + c.moved > 0, "MOVED met and followed: {preload:?}");
    assert!(c.ask > 0, "the migrating slot's gets are asked on node 2: {c:?}");
    // After the refresh, no more MOVED than the requests in flight at the time.
    assert!(c.moved <= 2 * 4 * 4, "the map was fetched again: {c:?}");
    // The migrating slot's keys live on node 2, not on the seed.
    let key = (0..KEYSPACE)
        .map(|id| format.key(id))
        .find(|key| key_slot(key.as_bytes()) == migrating)
        .unwrap();
    assert!(ask(ports[0], &[&[b"GET", key.as_bytes()]]).starts_with("error: ASK"));
    let on_target = ask(ports[2], &[&[b"ASKING"], &[b"EXISTS", key.as_bytes()]]);
    assert_eq!(on_target, "1", "set on node 2 after ASKING");
}

/// Goal: --cluster refuses what it cannot do: memcached protocols, and seeds that are
/// not cluster nodes.
#[test]
fn cluster_mode_refusals() {
    let memcache = Config { protocol: Protocol::Memcache, ..config(1, 1) };
    let err = runner::run(&memcache, |_| {}).expect_err("refused");
    assert!(err.contains("--protocol resp"), "{err}");
    let Some(plain) = common::spinel() else { return };
    let err = runner::run(&config(plain.resp_port.unwrap(), 1), |_| {}).expect_err("refused");
    assert!(err.contains("CLUSTER SLOTS"), "{err}");
}
