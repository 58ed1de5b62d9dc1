//! Helpers for the integration tests: start real servers on free loopback ports, stop them
//! by pid, read their counters.

#![allow(dead_code)]

use std::{
    io::{BufRead, BufReader, Write},
    net::{TcpListener, TcpStream},
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// A server process, killed (by its pid) when dropped.
pub struct Server {
    child: Child,
    pub port: u16,
    pub resp_port: Option<u16>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn resp_addr(&self) -> String {
        format!("127.0.0.1:{}", self.resp_port.expect("started with a RESP port"))
    }
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Two distinct free ports: both probes are held open at once, so the kernel cannot hand
/// the same port out twice.
pub fn free_port_pair() -> (u16, u16) {
    let first = TcpListener::bind("127.0.0.1:0").unwrap();
    let second = TcpListener::bind("127.0.0.1:0").unwrap();
    (first.local_addr().unwrap().port(), second.local_addr().unwrap().port())
}

fn wait_listening(port: u16) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain(["/usr/bin".into(), "/usr/sbin".into()])
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

fn spawn(program: PathBuf, args: &[String], port: u16, resp_port: Option<u16>) -> Option<Server> {
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let server = Server { child, port, resp_port };
    let ready = wait_listening(port) && resp_port.is_none_or(wait_listening);
    ready.then_some(server)
}

/// memcached on a free port, or `None` (with the reason printed) if it is not installed.
pub fn memcached() -> Option<Server> {
    let Some(program) = find_program("memcached") else {
        eprintln!("SKIP: memcached is not installed (apt-get install memcached)");
        return None;
    };
    let port = free_port();
    let args: Vec<String> = [
        "-u",
        "root",
        "-l",
        "127.0.0.1",
        "-U",
        "0",
        "-t",
        "1",
        "-m",
        "64",
        "-p",
        &port.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    Some(spawn(program, &args, port, None).expect("memcached starts"))
}

/// redis-server on a free port, or `None` if it is not installed.
pub fn redis() -> Option<Server> {
    let Some(program) = find_program("redis-server") else {
        eprintln!("SKIP: redis-server is not installed");
        return None;
    };
    let port = free_port();
    let args: Vec<String> =
        ["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    Some(spawn(program, &args, port, Some(port)).expect("redis-server starts"))
}

/// valkey-server (from PATH) on a free port, or `None` if it is not found.
pub fn valkey() -> Option<Server> {
    let Some(program) = find_program("valkey-server") else {
        eprintln!("SKIP: valkey-server is not on PATH");
        return None;
    };
    let port = free_port();
    let args: Vec<String> =
        ["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    Some(spawn(program, &args, port, Some(port)).expect("valkey-server starts"))
}

/// The Spinel binary: `SPINEL_BIN`, else `$CARGO_TARGET_DIR/debug/spinel`, else
/// `target/debug/spinel` (build it with `cargo build -p server`); `None` with the reason
/// printed.
pub fn spinel_program() -> Option<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let program = std::env::var_os("SPINEL_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| target.join("debug/spinel"));
    if !program.is_file() {
        eprintln!(
            "SKIP: no Spinel binary at {} (cargo build -p server, or set SPINEL_BIN)",
            program.display()
        );
        return None;
    }
    Some(program)
}

/// Spinel as a Redis Cluster node: `--cluster-enabled yes` reading `nodes.conf` (already
/// written) in `dir`, RESP on `port`.
pub fn spinel_cluster_node(dir: &std::path::Path, port: u16) -> Option<Server> {
    let program = spinel_program()?;
    let mc_port = free_port();
    let args: Vec<String> = [
        "-p",
        &mc_port.to_string(),
        "--resp-port",
        &port.to_string(),
        "-l",
        "127.0.0.1",
        "-t",
        "1",
        "-m",
        "64",
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
        "--dir",
        dir.to_str().expect("a UTF-8 temporary path"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    Some(spawn(program, &args, mc_port, Some(port)).expect("spinel cluster node starts"))
}

/// Spinel from [`spinel_program`] on free ports, or `None` with the reason printed.
pub fn spinel() -> Option<Server> {
    let program = spinel_program()?;
    let (port, resp_port) = free_port_pair();
    let args: Vec<String> =
        ["-p", &port.to_string(), "--resp-port", &resp_port.to_string(), "-t", "1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    Some(spawn(program, &args, port, Some(resp_port)).expect("spinel starts"))
}

/// One counter from memcached's `stats`.
pub fn memcached_stat(port: u16, name: &str) -> u64 {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.write_all(b"stats\r\n").unwrap();
    let reader = BufReader::new(stream);
    for line in reader.lines() {
        let line = line.unwrap();
        if line == "END" {
            break;
        }
        let mut words = line.split_whitespace();
        if words.nth(1) == Some(name) {
            return words.next().unwrap().parse().unwrap();
        }
    }
    panic!("no stat {name}");
}
