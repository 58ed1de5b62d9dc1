//! `spinel-bench memory` against a real redis-server (and valkey-server when on PATH):
//! every structure and field count gives a row with a plausible size per field.

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
        structures: vec![Structure::Hash, Structure::Zset],
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
    assert_eq!(rows.len(), 4, "{rows:?}");
    for row in &rows {
        // At least the field's own bytes (a zset member, a hash field and value), at most
        // a generous bound on any encoding's overhead.
        let own = if row.structure == Structure::Hash { 48.0 } else { 16.0 };
        let per_field = row.bytes_per_field();
        assert!(per_field > own * 0.5 && per_field < 1000.0, "{name}: {row:?} {per_field}");
    }
    let md = memory::markdown(&o, &rows);
    assert!(md.contains(&format!("| {name} | hash |")) && md.contains("F=300"), "{md}");
}

#[test]
fn redis_bytes_per_field() {
    let Some(server) = common::redis() else { return };
    check("redis", server.addr());
}

#[test]
fn valkey_bytes_per_field() {
    let Some(server) = common::valkey() else { return };
    check("valkey", server.addr());
}
