//! `spinel-bench memory`: bytes of server memory per field of a hash or sorted set, per
//! stream entry and per geo member, on Spinel, Redis and Valkey side by side (or on servers
//! already running).
//!
//! ```text
//!   for server, structure (hash, zset, stream, geo), fields F (10, 1000): a freshly
//!     started server (Spinel keeps its slab pages after FLUSHALL: a reused one would
//!     under-count)
//!     FLUSHALL SYNC; before = INFO memory used_memory
//!     N keys x F fields: HSET k f v f v ... / ZADD k n f n f ... / GEOADD k lon lat f ...
//!                        (up to 100 fields a command) / XADD k * item f at n value v (an
//!                        entry a command); commands pipelined, each reply an integer (an
//!                        ID for XADD)
//!     check: HLEN / ZCARD / XLEN of the first and last key = F
//!     after = used_memory; bytes/field = (after - before) / (N x F); FLUSHALL
//! ```
//!
//! A field's bytes include its share of its key's overhead (so F = 10 shows the small
//! encodings plus key cost, F = 1000 the large ones). Keys are `key:000..`, fields `f000..`
//! (`--field-size` bytes), hash values and stream entries' `value` `--value-size` bytes of
//! the bench's value filler, zset scores the field's number, geo members at the places
//! `--structure geo` draws (`client::geo::place`), stream IDs the server's (`*`: entries
//! added in the same millisecond share it, as a producer's do).

pub(crate) mod wire;

use std::{path::PathBuf, time::Duration};

use clap::Args;

use crate::{
    client::geo,
    compare::{
        peers::{self, Spec},
        servers::{self, Launch},
    },
    value,
    workload::{KeyFormat, Structure},
};

use self::wire::Wire;

/// Fields per HSET / ZADD command.
/// Request bytes written before the replies are read.
const PIPELINE_BYTES: usize = 256 * 1024;
/// How long one reply may take (a FLUSHALL of a million fields included).
const REPLY_TIMEOUT: Duration = Duration::from_secs(60);

/// Bytes of server memory per hash / sorted-set field, stream entry and geo member
///
/// Starts the servers (as compare does: Spinel with its RESP port, redis-server,
/// valkey-server from PATH; a fresh one per measurement) or connects to --connect ones, and
/// for each structure and field count: FLUSHALL SYNC, INFO memory used_memory, load --keys
/// keys of F fields each (HSET, ZADD, GEOADD or one XADD per entry, pipelined), check
/// HLEN/ZCARD/XLEN, used_memory again; prints bytes per field (the difference over keys x
/// fields, key overhead included) as a markdown table. Streams and geo:
/// `spinel-bench memory --structures stream,geo --fields 10,100,1000`
#[derive(Debug, Args)]
pub struct MemoryArgs {
    /// Servers to start, from spinel,redis,valkey and --server-cmd names (RESP ones)
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "spinel,redis,valkey")]
    servers: Vec<String>,
    /// Another server: NAME:resp=COMMAND (as compare's; {port} {memory_mib} filled in)
    #[arg(long, value_name = "SPEC", value_parser = peers::ServerCmd::parse)]
    server_cmd: Vec<peers::ServerCmd>,
    /// Measure these running servers instead (NAME=HOST:PORT or HOST:PORT; FLUSHALLed!
    /// A server that keeps freed memory after FLUSHALL, as Spinel keeps its slab pages,
    /// under-counts every measurement but its first: start one per measurement)
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    connect: Vec<String>,
    /// Structures: hash, zset, stream (bytes per entry), geo (bytes per member)
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = parse_structure,
          default_value = "hash,zset")]
    structures: Vec<Structure>,
    /// Fields per key, each a measurement of its own
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_value = "10,1000")]
    fields: Vec<u64>,
    /// Keys loaded per measurement
    #[arg(long, value_name = "N", default_value_t = 1000)]
    keys: u64,
    /// Fields given per HSET/ZADD while loading a key (Spinel rewrites a collection on each
    /// change, and the old copies take segment space until eviction reclaims it)
    #[arg(long, value_name = "N", default_value_t = 100)]
    fields_per_command: u64,
    /// Bytes of a field name (sorted-set member)
    #[arg(long, value_name = "N", default_value_t = 16)]
    field_size: usize,
    /// Bytes of a hash value
    #[arg(long, value_name = "N", default_value_t = 32)]
    value_size: usize,
    /// Spinel binary [default: as compare finds it]
    #[arg(long, value_name = "PATH")]
    spinel_bin: Option<PathBuf>,
    /// Server memory limit in MiB
    #[arg(long = "memory", value_name = "MIB", default_value_t = 4096)]
    memory_mib: u64,
    /// Server logs go to DIR/logs
    #[arg(long = "out", value_name = "DIR", default_value = "bench-report")]
    out_dir: PathBuf,
}

fn parse_structure(text: &str) -> Result<Structure, String> {
    match Structure::parse(text)? {
        s @ (Structure::Hash | Structure::Zset | Structure::Stream | Structure::Geo) => Ok(s),
        _ => Err(format!("{text}: want hash, zset, stream or geo")),
    }
}

/// What to measure.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub servers: Vec<Spec>,
    /// (label, host:port) of running servers; when given, nothing is started.
    pub connect: Vec<(String, String)>,
    pub structures: Vec<Structure>,
    pub fields: Vec<u64>,
    pub keys: u64,
    pub field_size: usize,
    pub value_size: usize,
    pub fields_per_command: u64,
    pub spinel_bin: Option<PathBuf>,
    pub memory_mib: u64,
    pub out_dir: PathBuf,
}

impl MemoryArgs {
    pub fn options(self) -> Result<Options, String> {
        let servers = peers::select(Some(&self.servers), &self.server_cmd)?;
        if let Some(s) = servers.iter().find(|s| s.protocol() != crate::client::Protocol::Resp) {
            if s.resp_too().is_none() {
                return Err(format!("{} does not speak RESP", s.name()));
            }
        }
        let connect = self
            .connect
            .iter()
            .map(|c| match c.split_once('=') {
                Some((name, addr)) => (name.to_string(), addr.to_string()),
                None => (c.clone(), c.clone()),
            })
            .collect();
        if self.keys == 0 || self.fields.contains(&0) || self.field_size == 0 {
            return Err("--keys, --fields and --field-size must be at least 1".into());
        }
        let digits = (self.fields.iter().max().copied().unwrap_or(1) - 1).to_string().len();
        if self.field_size < digits + 1 {
            return Err(format!("--field-size must be at least {} for these fields", digits + 1));
        }
        Ok(Options {
            servers,
            connect,
            structures: self.structures,
            fields: self.fields,
            keys: self.keys,
            field_size: self.field_size,
            value_size: self.value_size,
            fields_per_command: self.fields_per_command,
            spinel_bin: self.spinel_bin,
            memory_mib: self.memory_mib,
            out_dir: self.out_dir,
        })
    }
}

/// One measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub server: String,
    pub structure: Structure,
    pub fields: u64,
    pub keys: u64,
    pub before_bytes: u64,
    pub after_bytes: u64,
}

impl Row {
    pub fn bytes_per_field(&self) -> f64 {
        self.after_bytes.saturating_sub(self.before_bytes) as f64 / (self.keys * self.fields) as f64
    }
}

/// Field `i` of `size` bytes: `f` and the zero-padded number.
pub fn field_name(i: u64, size: usize) -> Vec<u8> {
    let digits = i.to_string();
    let mut name = vec![b'0'; size];
    name[0] = b'f';
    name[size - digits.len()..].copy_from_slice(digits.as_bytes());
    name
}

/// Appends the commands that give `key` its `fields` fields; returns how many commands.
pub fn compose_load(
    o: &Options,
    structure: Structure,
    key: &[u8],
    fields: u64,
    out: &mut Vec<u8>,
) -> u64 {
    // A stream entry is one XADD (its ID is the server's).
    let per_command = if structure == Structure::Stream { 1 } else { o.fields_per_command.max(1) };
    let (mut start, mut commands) = (0, 0);
    while start < fields {
        let end = (start + per_command).min(fields);
        let mut owned: Vec<Vec<u8>> = Vec::with_capacity(3 * (end - start) as usize);
        for i in start..end {
            field_args(o, structure, i, &mut owned);
        }
        let head: &[&[u8]] = match structure {
            Structure::Zset => &[b"ZADD", key],
            Structure::Geo => &[b"GEOADD", key],
            Structure::Stream => &[b"XADD", key, b"*"],
            _ => &[b"HSET", key],
        };
        let args: Vec<&[u8]> =
            head.iter().copied().chain(owned.iter().map(Vec::as_slice)).collect();
        proto_resp::compose_command(&args, out);
        start = end;
        commands += 1;
    }
    commands
}

/// The arguments that add field `i`: score and member, place and member, the entry's
/// field-value pairs, or field and value.
fn field_args(o: &Options, structure: Structure, i: u64, owned: &mut Vec<Vec<u8>>) {
    let name = field_name(i, o.field_size);
    let value = || {
        let mut v = Vec::with_capacity(o.value_size);
        value::write(i, 0, o.value_size, &mut v);
        v
    };
    match structure {
        Structure::Zset => owned.extend([i.to_string().into_bytes(), name]),
        Structure::Geo => {
            let (lon, lat) = geo::place(i);
            let (lon, lat) = (geo::Degrees::new(lon), geo::Degrees::new(lat));
            owned.extend([lon.as_bytes().to_vec(), lat.as_bytes().to_vec(), name]);
        }
        Structure::Stream => owned.extend(
            [&b"item"[..], &name, b"at", i.to_string().as_bytes(), b"value", &value()]
                .map(<[u8]>::to_vec),
        ),
        _ => owned.extend([name, value()]),
    }
}

/// FLUSHALL SYNC: Valkey 8 frees a plain FLUSHALL in the background (lazyfree-lazy-user-
/// flush), which would leave the last measurement's memory in the next one's baseline. A
/// server without the SYNC argument gets a plain FLUSHALL.
pub(crate) fn flush(wire: &mut Wire) -> Result<(), String> {
    wire.command(&[b"FLUSHALL", b"SYNC"]).or_else(|_| wire.command(&[b"FLUSHALL"]))
}

/// Loads and measures one structure at one field count on `wire`.
fn measure(
    o: &Options,
    wire: &mut Wire,
    server: &str,
    structure: Structure,
    fields: u64,
) -> Result<Row, String> {
    flush(wire)?;
    let before_bytes = wire.used_memory()?;
    let format = KeyFormat::new(16, o.keys)?;
    let mut out = Vec::new();
    let mut pending = 0;
    for id in 0..o.keys {
        pending += compose_load(o, structure, format.key(id).as_bytes(), fields, &mut out);
        if out.len() >= PIPELINE_BYTES || id + 1 == o.keys {
            wire.send_and_count(&out, pending)?;
            out.clear();
            pending = 0;
        }
    }
    let count: &[u8] = match structure {
        Structure::Zset | Structure::Geo => b"ZCARD",
        Structure::Stream => b"XLEN",
        _ => b"HLEN",
    };
    for id in [0, o.keys - 1] {
        let n = wire.integer(&[count, format.key(id).as_bytes()])?;
        if n != fields as i64 {
            return Err(format!("{server}: key {id} has {n} fields, not {fields}"));
        }
    }
    let after_bytes = wire.used_memory()?;
    flush(wire)?;
    let row =
        Row { server: server.into(), structure, fields, keys: o.keys, before_bytes, after_bytes };
    Ok(row)
}

/// One structure at one field count on the server at `addr`.
fn measure_at(
    o: &Options,
    name: &str,
    addr: &str,
    (structure, fields): (Structure, u64),
) -> Result<Row, String> {
    let mut wire = Wire::connect(addr, REPLY_TIMEOUT)?;
    let row = measure(o, &mut wire, name, structure, fields)?;
    eprintln!("{name} {} F={fields}: {:.1} bytes/field", structure.name(), row.bytes_per_field());
    Ok(row)
}

/// Runs the measurements; `failures` gets a line per server that could not be measured.
pub fn run(o: &Options, failures: &mut Vec<String>) -> Vec<Row> {
    let mut rows = Vec::new();
    let points: Vec<(Structure, u64)> =
        o.structures.iter().flat_map(|&s| o.fields.iter().map(move |&f| (s, f))).collect();
    let mut note = |name: &str, result: Result<Row, String>| match result {
        Ok(row) => rows.push(row),
        Err(e) => failures.push(format!("{name}: {e}")),
    };
    if !o.connect.is_empty() {
        for (name, addr) in &o.connect {
            for &point in &points {
                note(name, measure_at(o, name, addr, point));
            }
        }
        return rows;
    }
    let launch = Launch {
        spinel_bin: o.spinel_bin.clone(),
        memory_mib: o.memory_mib,
        max_connections: 64,
        resp: true,
        log_dir: o.out_dir.join("logs"),
    };
    for spec in &o.servers {
        for &point in &points {
            // A fresh server per measurement (stopped when dropped): a server that keeps
            // freed memory (Spinel's slab pages after FLUSHALL) would start the next
            // measurement with room already counted.
            let result = servers::start(spec, &launch, 1, &[], 0).and_then(|running| {
                let port = running.resp_port.unwrap_or(running.port);
                measure_at(o, spec.name(), &format!("127.0.0.1:{port}"), point)
            });
            note(spec.name(), result);
        }
    }
    rows
}

/// The table: one row per server and structure, a column per field count.
pub fn markdown(o: &Options, rows: &[Row]) -> String {
    let mut md = format!(
        "Bytes of used_memory per field, stream entry or geo member ({} keys; field {} B, \
         hash value and stream entry value {} B; key overhead included)\n\n| server | \
         structure |",
        o.keys, o.field_size, o.value_size
    );
    for f in &o.fields {
        md.push_str(&format!(" F={f} |"));
    }
    md.push_str("\n|---|---|");
    md.push_str(&"--:|".repeat(o.fields.len()));
    md.push('\n');
    let mut seen: Vec<(&str, Structure)> = Vec::new();
    for r in rows {
        if seen.contains(&(r.server.as_str(), r.structure)) {
            continue;
        }
        seen.push((r.server.as_str(), r.structure));
        md.push_str(&format!("| {} | {} |", r.server, r.structure.name()));
        for f in &o.fields {
            let cell = rows
                .iter()
                .find(|x| x.server == r.server && x.structure == r.structure && x.fields == *f)
                .map_or("-".to_string(), |x| format!("{:.1}", x.bytes_per_field()));
            md.push_str(&format!(" {cell} |"));
        }
        md.push('\n');
    }
    md
}

#[cfg(test)]
mod tests;
