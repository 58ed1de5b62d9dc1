use super::*;

fn options() -> Options {
    Options {
        servers: Vec::new(),
        connect: Vec::new(),
        structures: vec![Structure::Hash, Structure::Zset],
        fields: vec![10, 1000],
        keys: 1,
        field_size: 5,
        value_size: 3,
        fields_per_command: 100,
        spinel_bin: None,
        memory_mib: 64,
        out_dir: PathBuf::from("x"),
    }
}

/// Goal: the load commands carry the fields as Redis expects, up to 100 a command.
#[test]
fn load_commands() {
    assert_eq!(field_name(7, 5), b"f0007");
    let o = options();
    let mut out = Vec::new();
    compose_load(&o, Structure::Zset, b"k", 2, &mut out);
    let want =
        b"*6\r\n$4\r\nZADD\r\n$1\r\nk\r\n$1\r\n0\r\n$5\r\nf0000\r\n$1\r\n1\r\n$5\r\nf0001\r\n";
    assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(want));
    out.clear();
    compose_load(&o, Structure::Hash, b"k", 1, &mut out);
    let mut v = Vec::new();
    value::write(0, 0, 3, &mut v);
    let want = [&b"*4\r\n$4\r\nHSET\r\n$1\r\nk\r\n$5\r\nf0000\r\n$3\r\n"[..], &v, b"\r\n"].concat();
    assert_eq!(out, want);
    out.clear();
    compose_load(&o, Structure::Hash, b"k", 250, &mut out);
    let commands = out.windows(8).filter(|w| w == b"$4\r\nHSET").count();
    assert_eq!(commands, 3, "100 + 100 + 50 fields");
    assert!(out.starts_with(b"*202\r\n"));
}

/// Goal: a stream entry is one XADD with the server's ID; geo members go 100 a GEOADD at
/// the workload's places.
#[test]
fn stream_and_geo_load_commands() {
    let o = options();
    let mut out = Vec::new();
    assert_eq!(compose_load(&o, Structure::Stream, b"k", 2, &mut out), 2);
    let mut v = Vec::new();
    value::write(1, 0, 3, &mut v);
    let second = [
        &b"*9\r\n$4\r\nXADD\r\n$1\r\nk\r\n$1\r\n*\r\n$4\r\nitem\r\n$5\r\nf0001\r\n"[..],
        b"$2\r\nat\r\n$1\r\n1\r\n$5\r\nvalue\r\n$3\r\n",
        &v,
        b"\r\n",
    ]
    .concat();
    assert!(out.ends_with(&second), "{}", String::from_utf8_lossy(&out));
    out.clear();
    assert_eq!(compose_load(&o, Structure::Geo, b"k", 150, &mut out), 2);
    assert!(out.starts_with(b"*302\r\n$6\r\nGEOADD\r\n$1\r\nk\r\n$9\r\n13."), "{out:?}");
    let (lon, _) = crate::client::geo::place(0);
    let lon = format!("{lon:.6}");
    assert!(out.windows(lon.len()).any(|w| w == lon.as_bytes()), "member 0 at {lon}");
}

#[test]
fn used_memory_line() {
    let info = b"# Memory\r\nused_memory:1033416\r\nused_memory_human:1009.20K\r\n";
    assert_eq!(wire::used_memory_of(info), Some(1_033_416));
    assert_eq!(wire::used_memory_of(b"# Memory\r\n"), None);
}

#[test]
fn table() {
    let o = options();
    let row = |fields, after_bytes| Row {
        server: "redis".into(),
        structure: Structure::Hash,
        fields,
        keys: 1,
        before_bytes: 1000,
        after_bytes,
    };
    assert_eq!(row(10, 1500).bytes_per_field(), 50.0);
    let md = markdown(&o, &[row(10, 1500), row(1000, 101_000)]);
    assert!(md.contains("| server | structure | F=10 | F=1000 |"), "{md}");
    assert!(md.contains("| redis | hash | 50.0 | 100.0 |"), "{md}");
}
