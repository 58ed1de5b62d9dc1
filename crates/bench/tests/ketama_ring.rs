//! Pins the ketama ring: the server chosen for `key:0` .. `key:999` over fixed server lists
//! must stay what the hand-written MD5 produced when these fixtures were recorded (before
//! the switch to the `md-5` crate). A change in the hash, the point formula or the lookup
//! shows up as a changed assignment.

use bench::ketama::{libmemcached_name, Ketama};

const KEY_COUNT: usize = 1000;

/// One digit per key (the server index), 100 keys per line.
fn assignment(ring: &Ketama) -> String {
    let digits: Vec<String> = (0..KEY_COUNT)
        .map(|i| ring.server_for_key(format!("key:{i}").as_bytes()).to_string())
        .collect();
    digits.chunks(100).map(|line| line.concat() + "\n").collect()
}

/// The fixture's assignment lines, comments (`#`) left out.
fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect(&path);
    text.lines().filter(|l| !l.starts_with('#')).map(|l| format!("{l}\n")).collect()
}

/// Goal: weighted `host:port` names (five servers, weights 1, 1, 2, 1, 3) place keys as
/// recorded. Method: compare with tests/fixtures/ketama_twemproxy_1000.txt. The names are
/// written out as recorded: twemproxy names a server on port 11211 by its host alone
/// (`twemproxy_name`, checked against nutcracker in test_ketama_agreement.py), and this
/// fixture pins the ring's formula, not that rule.
#[test]
fn twemproxy_ring_is_unchanged() {
    let servers: Vec<(String, u32)> = [(11211, 1), (11212, 1), (11213, 2), (11214, 1), (11215, 3)]
        .iter()
        .map(|&(port, weight)| (format!("10.0.0.1:{port}"), weight))
        .collect();
    assert_eq!(assignment(&Ketama::new(&servers)), fixture("ketama_twemproxy_1000.txt"));
}

/// Goal: equal-weight libmemcached-style names (the port-11211 special case included)
/// place keys as recorded. Method: compare with tests/fixtures/ketama_libmemcached_1000.txt.
#[test]
fn libmemcached_ring_is_unchanged() {
    let servers: Vec<(String, u32)> =
        [("10.0.0.1", 11211), ("10.0.0.2", 11211), ("10.0.0.3", 22122)]
            .iter()
            .map(|&(host, port)| (libmemcached_name(host, port), 1))
            .collect();
    assert_eq!(assignment(&Ketama::new(&servers)), fixture("ketama_libmemcached_1000.txt"));
}
