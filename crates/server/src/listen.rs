//! The TCP and Unix listeners, bound at start (before privileges drop), and the rule that
//! lets several instances share a host:
//!
//! - a port the command line or the configuration file names (and `-s`, `-U`,
//!   `--tls-port`, `--metrics-port`, which have no default) must open, or the start fails
//!   naming it;
//! - a port that is only a default (memcached's 11211 without `-p`, Redis's 6379 without
//!   `--resp-port`) is skipped when it is in use, with one warning line, and shows as 0 in
//!   `stats settings` / `INFO server` with a `skipped_default_ports` line.
//!
//! [`busy_defaults`] decides, before the settings are made (they show it), by a probe bind of
//! each default port; [`bind_all`] then binds the rest where it always did, just before the
//! workers start, so a port that accepts means a server about to answer. A default that a
//! named port of this server takes is skipped too (`-p 6379` alone serves memcached on 6379
//! and no Redis port). A start where every port would be skipped fails: a server with nothing
//! to serve is a mistake. (Every port turned off, `-p 0 --resp-port 0`, is allowed, as
//! memcached allows `-p 0`.)
//!
//! memcached's port values: `-p 0` / `-U 0` turn that transport off, `-p -1` / `-U -1` let the
//! kernel pick a free port, and `MEMCACHED_PORT_FILENAME` names a file that gets the ports
//! bound ([`write_ports_file`]).

use std::{io, net::SocketAddr, os::unix::net::UnixListener};

use crate::{
    config::Config,
    worker::{TAG_MEMCACHE, TAG_MEMCACHE_TLS, TAG_RESP, TAG_RESP_TLS},
};

/// The memcached TCP addresses bound (after port 0 was resolved).
pub type MemcacheAddrs = Vec<SocketAddr>;

/// Each listener kind's tag and its port (the one bound, when 0 was asked) or socket path.
pub type PortLabels = Vec<(u32, String)>;

/// A default port left unserved because it was in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Skipped {
    pub tag: u32,
    pub port: u16,
}

impl Skipped {
    /// The protocol's name as `skipped_default_ports` lists it (`resp:6379`).
    pub fn protocol(&self) -> &'static str {
        match self.tag {
            TAG_RESP | TAG_RESP_TLS => "resp",
            _ => "memcache",
        }
    }

    /// The one warning line, naming the flag that would make the port required.
    pub fn warning(&self) -> String {
        let (what, flag) = match self.tag {
            TAG_RESP => ("Redis port", "--resp-port"),
            TAG_MEMCACHE_TLS => ("memcached TLS port", "-p"),
            _ => ("memcached port", "-p"),
        };
        let serving = match self.tag {
            TAG_RESP => "RESP",
            _ => "memcached over TCP",
        };
        format!(
            "{what} {} (default) is in use, not serving {serving}; name {flag} to require it",
            self.port
        )
    }
}

/// `skipped_default_ports`' value: `resp:6379`, comma-separated; empty when none.
pub fn skipped_text(skipped: &[Skipped]) -> String {
    let items: Vec<String> =
        skipped.iter().map(|s| format!("{}:{}", s.protocol(), s.port)).collect();
    items.join(",")
}

/// Whether `skipped` holds the listener kind `tag`.
pub fn skips(skipped: &[Skipped], tag: u32) -> bool {
    skipped.iter().any(|s| s.tag == tag)
}

/// Everything `bind_all` opened.
pub struct Bound {
    /// One list per worker: its own SO_REUSEPORT listener on each port and address.
    pub per_worker: Vec<Vec<rt::Listener>>,
    pub memcache_addrs: MemcacheAddrs,
    pub labels: PortLabels,
}

/// One TCP port to open on every listen address.
struct Want {
    port: u16,
    tag: u32,
    is_default: bool,
}

/// The memcached TCP listeners' tag: memcached's -Z puts TLS on every one.
pub fn memcache_tag(config: &Config) -> u32 {
    match config.memcache_tls {
        Some(_) => TAG_MEMCACHE_TLS,
        None => TAG_MEMCACHE,
    }
}

/// The TCP ports the configuration asks for.
fn wanted(config: &Config) -> Vec<Want> {
    let memcache_tag = memcache_tag(config);
    let mut wants = Vec::new();
    // memcached's -s replaces its TCP port (and UDP) with the Unix socket; -p 0 turns it off
    // and -p -1 lets the kernel pick it, as in memcached.
    if let (None, Some(port)) = (&config.unix_socket, config.port.bind_port()) {
        wants.push(Want { port, tag: memcache_tag, is_default: config.port_is_default });
    }
    if config.resp_port != 0 {
        let is_default = config.resp_port_is_default;
        wants.push(Want { port: config.resp_port, tag: TAG_RESP, is_default });
    }
    if config.tls_port != 0 {
        wants.push(Want { port: config.tls_port, tag: TAG_RESP_TLS, is_default: false });
    }
    wants
}

/// The default ports that another process holds (a probe bind finds them in use) or that a
/// named port of this server takes. Fails when that leaves nothing to serve.
pub fn busy_defaults(config: &Config) -> Result<Vec<Skipped>, String> {
    let wants = wanted(config);
    let named: Vec<u16> = wants.iter().filter(|w| !w.is_default).map(|w| w.port).collect();
    let mut skipped = Vec::new();
    for want in wants.iter().filter(|want| want.is_default) {
        if named.contains(&want.port) || in_use(config, want.port)? {
            skipped.push(Skipped { tag: want.tag, port: want.port });
        }
    }
    let udp = config.udp_port.is_on() && config.unix_socket.is_none();
    // Every port turned off (`-p 0 --resp-port 0`) is what was asked, and memcached runs so;
    // every port skipped is not.
    let nothing_left = skipped.len() == wants.len() && config.unix_socket.is_none() && !udp;
    if nothing_left && !skipped.is_empty() {
        let lines: Vec<String> = skipped.iter().map(Skipped::warning).collect();
        return Err(format!("no port left to serve: {}", lines.join("; ")));
    }
    Ok(skipped)
}

/// Whether another process holds `port` on a listen address; an error other than "in use"
/// (an address this host does not have) ends the start as for a named port.
fn in_use(config: &Config, port: u16) -> Result<bool, String> {
    for &ip in &config.listen {
        let addr = SocketAddr::new(ip, port);
        match rt::probe_exclusive(addr) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::AddrInUse => return Ok(true),
            Err(e) => return Err(format!("cannot listen on {addr}: {e}")),
        }
    }
    Ok(false)
}

/// One listener per worker, address and port, but for the `skipped` defaults. With port 0
/// the first bind picks the port and the others reuse it, so all workers share it.
pub fn bind_all(config: &Config, skipped: &[Skipped]) -> Result<Bound, String> {
    let mut bound = Bound {
        per_worker: (0..config.threads).map(|_| Vec::new()).collect(),
        memcache_addrs: Vec::new(),
        labels: PortLabels::new(),
    };
    if let Some(path) = &config.unix_socket {
        let socket = bind_unix(path, config.unix_mask)?;
        for listeners in bound.per_worker.iter_mut() {
            let own = socket.try_clone().map_err(|e| format!("-s {path}: {e}"))?;
            listeners.push(rt::Listener { socket: own.into(), tag: TAG_MEMCACHE });
        }
        tracing::info!("memcache listening on unix socket {path}");
        bound.labels.push((TAG_MEMCACHE, path.clone()));
    }
    for want in wanted(config).iter().filter(|want| !skips(skipped, want.tag)) {
        // A default that was free a moment ago and is taken now fails the start too: the
        // settings already say it is served.
        let opened = bind_port(config, want)
            .map_err(|(e, addr)| format!("{}: cannot listen on {addr}: {e}", flag(want)))?;
        add(&mut bound, want, opened);
    }
    Ok(bound)
}

/// The flag that names a port, for the error that ends the start.
fn flag(want: &Want) -> String {
    let name = match want.tag {
        TAG_RESP => "--resp-port",
        TAG_RESP_TLS => "--tls-port",
        _ => "-p",
    };
    match want.is_default {
        true => format!("{name} {} (default)", want.port),
        false => format!("{name} {}", want.port),
    }
}

/// A port's listeners, per address then per worker, with the address each got.
type Opened = Vec<(SocketAddr, Vec<std::net::TcpListener>)>;

/// Opens one port on every listen address for every worker. The error comes with the
/// address that failed.
fn bind_port(config: &Config, want: &Want) -> Result<Opened, (io::Error, SocketAddr)> {
    let mut opened = Opened::new();
    for &ip in &config.listen {
        let asked = SocketAddr::new(ip, want.port);
        // SO_REUSEPORT would let a second server bind a port that one already serves, and
        // the two would split its connections. A bind without it first fails with "address
        // in use" as memcached would; it also picks the port when `addr` has port 0. It
        // never listens: a probe that listened would reset a quick client's connections.
        let mut addr = rt::probe_exclusive(asked).map_err(|e| (e, asked))?;
        let mut sockets = Vec::with_capacity(config.threads);
        for _ in 0..config.threads {
            let socket = rt::listen(addr, config.listen_backlog).map_err(|e| (e, addr))?;
            addr = socket.local_addr().map_err(|e| (e, addr))?;
            sockets.push(socket);
        }
        opened.push((addr, sockets));
    }
    Ok(opened)
}

fn add(bound: &mut Bound, want: &Want, opened: Opened) {
    let name = match want.tag {
        TAG_RESP => "resp",
        TAG_RESP_TLS => "resp (tls)",
        TAG_MEMCACHE_TLS => "memcache (tls)",
        _ => "memcache",
    };
    for (addr, sockets) in opened {
        for (listeners, socket) in bound.per_worker.iter_mut().zip(sockets) {
            listeners.push(rt::Listener { socket: socket.into(), tag: want.tag });
        }
        tracing::info!("{name} listening on {addr}");
        if !bound.labels.iter().any(|(t, _)| *t == want.tag) {
            bound.labels.push((want.tag, addr.port().to_string()));
        }
        if matches!(want.tag, TAG_MEMCACHE | TAG_MEMCACHE_TLS) {
            bound.memcache_addrs.push(addr);
        }
    }
}

/// memcached's `MEMCACHED_PORT_FILENAME`: when set, the memcached TCP and UDP ports bound
/// (`TCP INET: 41234` lines, `INET6` for IPv6 addresses) are written to `<name>.lck`, then
/// renamed to the name, so a reader never sees half a file. Tests and scripts that start
/// instances on `-p -1` learn their ports from it.
pub fn write_ports_file(tcp: &[SocketAddr], udp: &[SocketAddr]) -> Result<(), String> {
    let Some(path) = std::env::var_os("MEMCACHED_PORT_FILENAME") else { return Ok(()) };
    let mut text = String::new();
    let lines = tcp.iter().map(|a| ("TCP", a)).chain(udp.iter().map(|a| ("UDP", a)));
    for (transport, addr) in lines {
        let family = if addr.is_ipv4() { "INET" } else { "INET6" };
        text.push_str(&format!("{transport} {family}: {}\n", addr.port()));
    }
    let mut partial = path.clone();
    partial.push(".lck");
    let shown = std::path::Path::new(&path).display().to_string();
    std::fs::write(&partial, text)
        .and_then(|()| std::fs::rename(&partial, &path))
        .map_err(|e| format!("MEMCACHED_PORT_FILENAME {shown}: cannot write: {e}"))
}

/// memcached `-s`: a stale socket file at `path` is replaced (anything else there is an
/// error), and the file gets `-a`'s permission bits. Every worker accepts on the one socket.
fn bind_unix(path: &str, mask: u32) -> Result<UnixListener, String> {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.file_type().is_socket() {
            let _ = std::fs::remove_file(path);
        }
    }
    let socket =
        UnixListener::bind(path).map_err(|e| format!("-s: cannot listen on {path}: {e}"))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mask))
        .map_err(|e| format!("-a: cannot set the mode of {path}: {e}"))?;
    Ok(socket)
}

#[cfg(test)]
mod tests {
    //! The rule on ports any number can stand for: a test holds an ephemeral port and tells
    //! the config that it is a default or a named port.
    use std::net::TcpListener;

    use super::*;

    fn held() -> (TcpListener, u16) {
        let socket = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = socket.local_addr().unwrap().port();
        (socket, port)
    }

    fn config(port: (u16, bool), resp_port: (u16, bool)) -> Config {
        Config {
            port: crate::config::McPort::Port(port.0),
            port_is_default: port.1,
            resp_port: resp_port.0,
            resp_port_is_default: resp_port.1,
            threads: 1,
            ..Config::default()
        }
    }

    #[test]
    fn a_busy_default_is_skipped_in_either_direction() {
        let ((_a, busy), (_b, named)) = (held(), held());
        let skipped = busy_defaults(&config((busy, true), (named, false))).unwrap();
        assert_eq!(skipped, [Skipped { tag: TAG_MEMCACHE, port: busy }]);
        let skipped = busy_defaults(&config((named, false), (busy, true))).unwrap();
        assert_eq!(skipped, [Skipped { tag: TAG_RESP, port: busy }]);
        assert_eq!(skipped_text(&skipped), format!("resp:{busy}"));
        assert!(skipped[0].warning().ends_with("not serving RESP; name --resp-port to require it"));
    }

    #[test]
    fn a_default_that_a_named_port_takes_is_skipped() {
        let skipped = busy_defaults(&config((6379, false), (6379, true))).unwrap();
        assert_eq!(skipped, [Skipped { tag: TAG_RESP, port: 6379 }]);
    }

    #[test]
    fn nothing_left_to_serve_fails() {
        let ((_a, mc), (_b, resp)) = (held(), held());
        let error = busy_defaults(&config((mc, true), (resp, true))).unwrap_err();
        assert!(error.starts_with("no port left to serve: memcached port"), "{error}");
    }

    // Goal: memcached's -p 0 turns the TCP port off (with --resp-port 0, nothing is asked and
    // nothing fails); -p -1 binds a port the kernel picks.
    #[test]
    fn memcached_port_off_and_ephemeral() {
        use crate::config::McPort;
        let off = Config { port: McPort::Off, ..config((0, false), (0, false)) };
        assert_eq!(busy_defaults(&off).unwrap(), []);
        assert!(bind_all(&off, &[]).unwrap().memcache_addrs.is_empty());
        let any = Config { port: McPort::Ephemeral, ..off };
        let bound = bind_all(&any, &[]).unwrap();
        assert_eq!(bound.memcache_addrs.len(), 1);
        assert_ne!(bound.memcache_addrs[0].port(), 0);
    }

    #[test]
    fn a_busy_named_port_fails_naming_its_flag() {
        let ((_a, busy), (freed, free)) = (held(), held());
        drop(freed);
        let config = config((busy, false), (free, false));
        assert_eq!(busy_defaults(&config).unwrap(), []);
        let error = bind_all(&config, &[]).err().unwrap();
        assert!(error.starts_with(&format!("-p {busy}: cannot listen on 127.0.0.1:{busy}: ")));
    }
}
