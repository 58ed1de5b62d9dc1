//! `spinel-bench memory` against a real redis-server (and valkey-server when on PATH):
//! every structure and field count gives a row with a plausible size per field (stream
//! entry, geo member); streams and geo on Spinel too.

mod common;

use std::path::PathBuf;

use bench::{
    memory::{self, Options},
    workload::Structure,
};

fn options(name: &str, addr: String) -> Options {
    Options {
        servers: Vec::new(),
        connect: vec![(name.to_string(), addr)],
        structures: vec![Structure::Hash, Structure::Zset, Structure::Stream, Structure::Geo],
        fields: vec![10, 300],
        keys: 100,
        field_size: 16,
        value_size: 32,
        fields_per_command: 100,
        spinel_bin: None,
        memory_mib: 64,
        out_dir: PathBuf::from("unused"),
    }
}

fn check(name: &str, addr: String) {
    let o = options(name, addr);
    let mut failures = Vec::new();
    let rows = memory::run(&o, &mut failures);
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(rows.len(), 8, "{rows:?}");
    for row in &rows {
        // At least the field's own bytes (a zset or geo member, a hash field and value, a
        // stream entry's field names and values), at most a generous bound on any
        // encoding's overhead.
        let own = match row.structure {
            Structure::Hash => 48.0,
            Structure::Stream => 64.0,
            _ => 16.0,
        };
        let per_field = row.bytes_per_field();
        assert!(per_field > own * 0.5 && per_field < 1000.0, "{name}: {row:?} {per_field}");
    }
    let md = memory::markdown(&o, &rows);
    assert!(md.contains(&format!("| {name} | hash |")) && md.contains("F=300"), "{md}");
    assert!(md.contains(&format!("| {name} | stream |")), "{md}");
    assert!(md.contains(&format!("| {name} | geo |")), "{md}");
}

#[test]
fn redis_bytes_per_field() {
    let Some(server) = common::redis() else { return };
    check("redis", server.addr());
}

/// Goal: Spinel's bytes per stream entry and geo member, a fresh server per measurement
/// (as `memory` starts them: Spinel keeps its slab pages after FLUSHALL).
#[test]
fn spinel_stream_and_geo_bytes() {
    for structure in [Structure::Stream, Structure::Geo] {
        for fields in [10, 300] {
            let Some(server) = common::spinel() else { return };
            let o = Options {
                structures: vec![structure],
                fields: vec![fields],
                ..options("spinel", server.resp_addr())
            };
            let mut failures = Vec::new();
            let rows = memory::run(&o, &mut failures);
            assert!(failures.is_empty(), "{failures:?}");
            let per_field = rows[0].bytes_per_field();
            let own = if structure == Structure::Stream { 64.0 } else { 16.0 };
            assert!(per_field > own * 0.5 && per_field < 2000.0, "{:?} {per_field}", rows[0]);
        }
    }
}

#[test]
fn valkey_bytes_per_field() {
    let Some(server) = common::valkey() else { return };
    check("valkey", server.addr());
}
