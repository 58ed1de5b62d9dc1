//! The servers under test: find each binary, start it on a free loopback port pinned to the
//! server CPUs, wait until it answers, and stop it by pid.
//!
//! Never leave a process behind:
//! - [`Running`] stops its server when dropped (error paths and panics included):
//!   SIGTERM, then SIGKILL after two seconds.
//! - Servers stay in our process group, so a Ctrl-C on the terminal reaches them too.
//! - When `setpriv` is installed, the server is started as `setpriv --pdeathsig KILL --
//!   taskset -c CPUS server ...` (both exec, so the pid is the server's): the kernel kills
//!   it if the thread that started it dies, even by SIGKILL. Servers are started from the
//!   thread that drives the comparison and lives until it ends.
//!
//! Every wait is bounded: start-up 10 s, stop 2 s + 2 s.

use std::{
    fs::File,
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use nix::{
    sys::signal::{kill, Signal},
    unistd::Pid,
};

use crate::client::Protocol;

const START_TIMEOUT: Duration = Duration::from_secs(10);
const STOP_TIMEOUT: Duration = Duration::from_secs(2);

pub use super::peers::{Kind, ServerCmd, Spec};
use super::peers::{RespPort, Vars};

/// How to start the servers: resources and where Spinel is.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    pub spinel_bin: Option<PathBuf>,
    pub memory_mib: u64,
    pub max_connections: usize,
    /// Also measure the servers that speak RESP besides memcache over RESP (`NAME-resp`).
    pub resp: bool,
    /// Server logs go here.
    pub log_dir: PathBuf,
}

/// A started server; stopped by pid when dropped.
pub struct Running {
    pub spec: Spec,
    pub threads: usize,
    pub port: u16,
    /// The port of the `NAME-resp` target, if any (Spinel's own, pogocache's main port).
    pub resp_port: Option<u16>,
    /// The value size it was started for (only matters for [`Spec::per_value_size`]).
    pub value_size: usize,
    child: Child,
}

impl Running {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU seconds the server has used so far, to the nanosecond (0 if it is gone).
    pub fn cpu_secs(&self) -> f64 {
        super::cpu::server_cpu_secs(self.pid()).unwrap_or(0.0)
    }

    /// Still running?
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The protocol the comparison speaks to it on its main port.
    pub fn protocol(&self) -> Protocol {
        self.spec.protocol()
    }

    pub fn name(&self) -> &str {
        self.spec.name()
    }

    fn stop(&mut self) {
        if !self.alive() {
            return;
        }
        // SIGTERM first, so servers can exit cleanly; then SIGKILL, by pid, bounded.
        if let Ok(pid) = i32::try_from(self.pid()) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGTERM);
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline {
            if !self.alive() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < deadline && self.alive() {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A program on PATH (or in /usr/bin, /usr/sbin).
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/bin".into(), "/usr/sbin".into(), "/usr/local/bin".into()])
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Spinel's binary: the explicit path, else `$SPINEL_BIN`, else next to this executable,
/// else `target/{release,debug}/spinel` under the current directory, else `spinel` on PATH.
pub fn find_spinel(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(path) = explicit {
        return Some(path.to_path_buf());
    }
    if let Some(path) = std::env::var_os("SPINEL_BIN") {
        return Some(PathBuf::from(path));
    }
    let beside = std::env::current_exe().ok().and_then(|exe| {
        let dir = exe.parent()?;
        // Test binaries live in target/<profile>/deps.
        [dir.join("spinel"), dir.parent()?.join("spinel")].into_iter().find(|p| p.is_file())
    });
    beside
        .or_else(|| {
            ["target/release/spinel", "target/debug/spinel"]
                .iter()
                .map(PathBuf::from)
                .find(|p| p.is_file())
        })
        .or_else(|| find_program("spinel"))
}

/// A port nobody listens on right now.
pub fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    listener.local_addr().map(|a| a.port()).map_err(|e| format!("bind: {e}"))
}

fn cpu_list(cpus: &[usize]) -> String {
    cpus.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
}

/// Redis-style flags (redis-server, valkey-server): no persistence, foreground, log to
/// stdout.
fn redis_args(port: &str, conns: &str) -> Vec<String> {
    [
        "--bind",
        "127.0.0.1",
        "--port",
        port,
        "--save",
        "",
        "--appendonly",
        "no",
        "--protected-mode",
        "no",
        "--maxclients",
        conns,
        "--daemonize",
        "no",
        "--logfile",
        "",
    ]
    .map(String::from)
    .to_vec()
}

/// The program and arguments for `kind` (without pinning).
fn builtin_line(
    kind: Kind,
    launch: &Launch,
    vars: &Vars,
    resp_port: Option<u16>,
) -> Result<(PathBuf, Vec<String>), String> {
    let port = vars.port.to_string();
    let (mem, conns) = (vars.memory_mib.to_string(), vars.max_connections.to_string());
    let threads = vars.threads.to_string();
    let strings = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let program = match kind {
        Kind::Spinel => find_spinel(launch.spinel_bin.as_deref()).filter(|p| p.is_file()).ok_or(
            "binary not found (build it: cargo build --release -p server; or set SPINEL_BIN / \
             --spinel-bin)",
        )?,
        Kind::Nullmc => super::peers::nullmc_env()
            .filter(|p| p.is_file())
            .or_else(|| find_program("nullmc"))
            .ok_or(
                "binary not found (cc -O2 -o nullmc shared/bench/nullmc.c -lpthread; put \
                    it on PATH or set NULLMC_BIN)",
            )?,
        other => {
            let name = other.program().unwrap_or_default();
            find_program(name).ok_or(format!("binary not found ({name} on PATH)"))?
        }
    };
    let args = match kind {
        Kind::Spinel => {
            let resp = resp_port.map_or("0".to_string(), |p| p.to_string());
            strings(&["-p", &port, "--resp-port", &resp, "-t", &threads, "-m", &mem, "-c", &conns])
        }
        Kind::Memcached => strings(&[
            "-u",
            "root",
            "-l",
            "127.0.0.1",
            "-p",
            &port,
            "-U",
            "0",
            "-t",
            &threads,
            "-m",
            &mem,
            "-c",
            &conns,
        ]),
        Kind::Redis => redis_args(&port, &conns),
        // Valkey 8's I/O threads read, parse and write for the main thread.
        Kind::Valkey => [redis_args(&port, &conns), strings(&["--io-threads", &threads])].concat(),
        Kind::Pogocache => strings(&[
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "--threads",
            &threads,
            "--maxmemory",
            &format!("{mem}M"),
            "--maxconns",
            &conns,
        ]),
        Kind::Nullmc => strings(&[&port, &threads, &vars.value_size.to_string()]),
    };
    Ok((program, args))
}

/// The program and arguments for `spec` (without pinning).
fn command_line(
    spec: &Spec,
    launch: &Launch,
    vars: &Vars,
    resp_port: Option<u16>,
) -> Result<(PathBuf, Vec<String>), String> {
    match spec {
        Spec::Builtin(kind) => builtin_line(*kind, launch, vars, resp_port),
        // exec: the shell becomes the server, so the pid we hold (and read CPU of) is its.
        Spec::Cmd(cmd) => {
            Ok((PathBuf::from("/bin/sh"), vec!["-c".into(), format!("exec {}", cmd.expand(vars))]))
        }
    }
}

/// The wrapper that pins a server and kills it with us: `setpriv --pdeathsig KILL --
/// taskset -c CPUS` (each part when installed; pinning is required).
fn pinning(cpus: &[usize]) -> Result<Vec<String>, String> {
    let mut argv: Vec<String> = Vec::new();
    if find_program("setpriv").is_some() {
        argv.extend(["setpriv", "--pdeathsig", "KILL", "--"].map(String::from));
    }
    if !cpus.is_empty() {
        if find_program("taskset").is_none() {
            return Err("taskset not found (util-linux); cannot pin the server".into());
        }
        argv.extend(["taskset".to_string(), "-c".to_string(), cpu_list(cpus)]);
    }
    Ok(argv)
}

/// Starts `spec` with `threads` worker threads, pinned to `cpus`, answering gets with
/// `value_size`-byte values if it is store-less, and waits until it answers. The error
/// says why it could not (binary not found, failed to start).
pub fn start(
    spec: &Spec,
    launch: &Launch,
    threads: usize,
    cpus: &[usize],
    value_size: usize,
) -> Result<Running, String> {
    // Both probes stay open until both ports are known, so the two cannot be equal.
    let probe = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    let port = probe.local_addr().map_err(|e| format!("bind: {e}"))?.port();
    let resp_port = match spec.resp_too().filter(|_| launch.resp) {
        Some(RespPort::Own) => Some(free_port()?),
        Some(RespPort::Same) => Some(port),
        None => None,
    };
    drop(probe);
    let vars = Vars {
        port,
        threads,
        value_size,
        memory_mib: launch.memory_mib,
        max_connections: launch.max_connections,
    };
    let own_resp = resp_port.filter(|p| *p != port);
    let (program, args) = command_line(spec, launch, &vars, own_resp)?;
    let mut argv = pinning(cpus)?;
    argv.push(program.display().to_string());
    argv.extend(args);
    let _ = std::fs::create_dir_all(&launch.log_dir);
    let log_path = launch.log_dir.join(format!("{}-t{threads}-{port}.log", spec.name()));
    let log = File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
    let log_err = log.try_clone().map_err(|e| format!("log: {e}"))?;
    let child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .spawn()
        .map_err(|e| format!("failed to start {}: {e}", argv.join(" ")))?;
    let mut running = Running { spec: spec.clone(), threads, port, resp_port, value_size, child };
    let protocol = running.protocol();
    let ports: Vec<(u16, Protocol)> =
        std::iter::once((port, protocol)).chain(own_resp.map(|p| (p, Protocol::Resp))).collect();
    for (port, protocol) in ports {
        wait_answering(&mut running, port, protocol, &log_path)?;
    }
    Ok(running)
}

/// Waits (bounded) until `running` answers on `port`.
fn wait_answering(
    running: &mut Running,
    port: u16,
    protocol: Protocol,
    log_path: &Path,
) -> Result<(), String> {
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if !running.alive() {
            let log = std::fs::read_to_string(log_path).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(3).collect();
            return Err(format!(
                "failed to start (exited; log {}: {})",
                log_path.display(),
                tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
            ));
        }
        if answers(port, protocol) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("failed to start (not answering on port {port} after 10 s)"));
        }
        std::thread::sleep(Duration::from_millis(30));
    }
}

/// Does a server on `port` answer `version` / `PING`?
fn answers(port: u16, protocol: Protocol) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let ping: &[u8] = if protocol == Protocol::Resp { b"PING\r\n" } else { b"version\r\n" };
    let mut buf = [0u8; 256];
    stream.write_all(ping).is_ok() && matches!(stream.read(&mut buf), Ok(n) if n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_command_lines() {
        assert_eq!(Kind::parse("redis-server"), Ok(Kind::Redis));
        assert!(Kind::parse("nginx").is_err());
        let launch = Launch {
            spinel_bin: Some("/nonexistent/spinel".into()),
            memory_mib: 64,
            max_connections: 100,
            resp: false,
            log_dir: std::env::temp_dir(),
        };
        let vars =
            Vars { port: 7000, threads: 2, value_size: 32, memory_mib: 64, max_connections: 100 };
        let e = command_line(&Kind::Spinel.into(), &launch, &vars, None).unwrap_err();
        assert!(e.contains("binary not found"), "{e}");
        if let Ok((_, args)) = command_line(&Kind::Redis.into(), &launch, &vars, None) {
            assert!(args.windows(2).any(|w| w == ["--save", ""]), "{args:?}");
        }
        if let Ok((_, args)) = command_line(&Kind::Valkey.into(), &launch, &vars, None) {
            assert!(args.ends_with(&["--io-threads".to_string(), "2".to_string()]), "{args:?}");
        }
        if let Ok((_, args)) = command_line(&Kind::Nullmc.into(), &launch, &vars, None) {
            assert_eq!(args, ["7000", "2", "32"]);
        }
        let cmd = Spec::Cmd(
            ServerCmd::parse("lim:limit=./nullmc {port} {threads} {value_size}").unwrap(),
        );
        let (program, args) = command_line(&cmd, &launch, &vars, None).unwrap();
        assert_eq!(program, PathBuf::from("/bin/sh"));
        assert_eq!(args, ["-c", "exec ./nullmc 7000 2 32"]);
        assert_eq!(cpu_list(&[1, 3]), "1,3");
    }
}
