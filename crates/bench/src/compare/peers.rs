//! The servers a comparison can start: the built-in kinds (found on PATH) and any command
//! given with `--server-cmd`, and for each the command line, the protocol, and whether it
//! is the store-less "limit" server the others are measured against.
//!
//! ```text
//!   --server-cmd NAME[:PROTO][:limit]=COMMAND     PROTO: mc (default), meta or resp
//!   COMMAND runs as `sh -c 'exec COMMAND'` (so the pid is the server's), pinned like the
//!   built-in servers, with {port} {threads} {value_size} {memory_mib} {max_connections}
//!   replaced. A command with {value_size} is restarted for each value size (nullmc).
//!   :limit marks the server that stands for the kernel's limit: its values are not
//!   checked (they are filler) and the report divides every server by it.
//! ```

use std::path::PathBuf;

use crate::client::Protocol;

/// A server program the comparison knows how to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Spinel,
    Memcached,
    Redis,
    Valkey,
    Pogocache,
    /// `shared/bench/nullmc.c`: memcache text with no store (the kernel path alone).
    Nullmc,
}

impl Kind {
    pub const ALL: [Kind; 6] =
        [Kind::Spinel, Kind::Memcached, Kind::Redis, Kind::Valkey, Kind::Pogocache, Kind::Nullmc];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Spinel => "spinel",
            Kind::Memcached => "memcached",
            Kind::Redis => "redis",
            Kind::Valkey => "valkey",
            Kind::Pogocache => "pogocache",
            Kind::Nullmc => "nullmc",
        }
    }

    pub fn parse(text: &str) -> Result<Kind, String> {
        let alias = match text {
            "redis-server" => "redis",
            "valkey-server" => "valkey",
            other => other,
        };
        Kind::ALL.into_iter().find(|k| k.name() == alias).ok_or(format!(
            "unknown server {text:?}: want spinel, memcached, redis, valkey, pogocache, nullmc \
             or a --server-cmd name"
        ))
    }

    /// The program, for the kinds other than Spinel (found by [`super::servers`]).
    pub fn program(self) -> Option<&'static str> {
        match self {
            Kind::Spinel => None,
            Kind::Memcached => Some("memcached"),
            Kind::Redis => Some("redis-server"),
            Kind::Valkey => Some("valkey-server"),
            Kind::Pogocache => Some("pogocache"),
            Kind::Nullmc => Some("nullmc"),
        }
    }
}

/// A server started from a command line (`--server-cmd`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerCmd {
    pub name: String,
    pub protocol: Protocol,
    pub limit: bool,
    pub command: String,
}

impl ServerCmd {
    /// `NAME[:PROTO][:limit]=COMMAND`.
    pub fn parse(text: &str) -> Result<ServerCmd, String> {
        let usage = "want NAME[:mc|:meta|:resp][:limit]=COMMAND";
        let (head, command) = text.split_once('=').ok_or(format!("{text:?}: {usage}"))?;
        let mut parts = head.split(':');
        let name = parts.next().unwrap_or_default().trim().to_string();
        let valid = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.';
        if name.is_empty() || !name.chars().all(valid) {
            return Err(format!("{text:?}: bad name {name:?} ({usage})"));
        }
        if Kind::parse(&name).is_ok() {
            return Err(format!("{text:?}: {name} is a built-in server; pick another name"));
        }
        let (mut protocol, mut limit) = (Protocol::Memcache, false);
        for opt in parts {
            match opt.trim() {
                "limit" => limit = true,
                "mc" => protocol = Protocol::Memcache,
                other => {
                    protocol = Protocol::parse(other).map_err(|_| format!("{text:?}: {usage}"))?
                }
            }
        }
        if command.trim().is_empty() {
            return Err(format!("{text:?}: empty command ({usage})"));
        }
        Ok(ServerCmd { name, protocol, limit, command: command.trim().to_string() })
    }

    /// The command with its placeholders filled in.
    pub fn expand(&self, vars: &Vars) -> String {
        self.command
            .replace("{port}", &vars.port.to_string())
            .replace("{threads}", &vars.threads.to_string())
            .replace("{value_size}", &vars.value_size.to_string())
            .replace("{memory_mib}", &vars.memory_mib.to_string())
            .replace("{max_connections}", &vars.max_connections.to_string())
    }
}

/// What a command line is filled in with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vars {
    pub port: u16,
    pub threads: usize,
    pub value_size: usize,
    pub memory_mib: u64,
    pub max_connections: usize,
}

/// One server of a comparison: a built-in kind or a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spec {
    Builtin(Kind),
    Cmd(ServerCmd),
}

impl From<Kind> for Spec {
    fn from(kind: Kind) -> Spec {
        Spec::Builtin(kind)
    }
}

impl Spec {
    pub fn name(&self) -> &str {
        match self {
            Spec::Builtin(kind) => kind.name(),
            Spec::Cmd(cmd) => &cmd.name,
        }
    }

    /// The protocol spoken on the main port.
    pub fn protocol(&self) -> Protocol {
        match self {
            Spec::Builtin(Kind::Redis | Kind::Valkey) => Protocol::Resp,
            Spec::Builtin(_) => Protocol::Memcache,
            Spec::Cmd(cmd) => cmd.protocol,
        }
    }

    /// The store-less server the report divides by.
    pub fn is_limit(&self) -> bool {
        matches!(self, Spec::Builtin(Kind::Nullmc)) || matches!(self, Spec::Cmd(c) if c.limit)
    }

    /// Restarted for each value size (its replies have one fixed size).
    pub fn per_value_size(&self) -> bool {
        match self {
            Spec::Builtin(kind) => *kind == Kind::Nullmc,
            Spec::Cmd(cmd) => cmd.command.contains("{value_size}"),
        }
    }

    /// Takes part in the server-threads sweep: has worker threads. Not Redis and Valkey:
    /// one main thread; Valkey's I/O threads (`--server-threads`) spin, and on a 2-core
    /// machine shared with the load they collapsed it (2.6k req/s at 2 threads).
    pub fn sweeps(&self) -> bool {
        match self {
            Spec::Builtin(kind) => !matches!(kind, Kind::Redis | Kind::Valkey),
            Spec::Cmd(cmd) => cmd.command.contains("{threads}"),
        }
    }

    /// Speaks RESP too, for a `NAME-resp` target with `--resp`: on its own port (Spinel)
    /// or on the same port (pogocache tells the protocols apart by the first byte).
    pub fn resp_too(&self) -> Option<RespPort> {
        match self {
            Spec::Builtin(Kind::Spinel) => Some(RespPort::Own),
            Spec::Builtin(Kind::Pogocache) => Some(RespPort::Same),
            _ => None,
        }
    }
}

/// Where a server's second, RESP target listens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RespPort {
    Own,
    Same,
}

/// The servers of `--servers` (built-in names and `--server-cmd` names), in that order;
/// without `--servers`, every built-in kind and then every command.
pub fn select(names: Option<&[String]>, cmds: &[ServerCmd]) -> Result<Vec<Spec>, String> {
    let Some(names) = names else {
        let builtins = Kind::ALL.into_iter().map(Spec::Builtin);
        return Ok(builtins.chain(cmds.iter().cloned().map(Spec::Cmd)).collect());
    };
    let mut specs = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        let spec = match cmds.iter().find(|c| c.name == name) {
            Some(cmd) => Spec::Cmd(cmd.clone()),
            None => Spec::Builtin(Kind::parse(name)?),
        };
        if !specs.contains(&spec) {
            specs.push(spec);
        }
    }
    Ok(specs)
}

/// `$NULLMC_BIN` when set (nullmc is built by hand: cc -O2 -o nullmc nullmc.c -lpthread).
pub fn nullmc_env() -> Option<PathBuf> {
    std::env::var_os("NULLMC_BIN").map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: `--server-cmd` specs parse into name, protocol, limit and command, and bad
    /// ones are refused with a reason.
    #[test]
    fn server_cmd_parse() {
        let c =
            ServerCmd::parse("limit:mc:limit=/opt/nullmc {port} {threads} {value_size}").unwrap();
        assert_eq!(
            (c.name.as_str(), c.protocol, c.limit, c.command.as_str()),
            ("limit", Protocol::Memcache, true, "/opt/nullmc {port} {threads} {value_size}")
        );
        let r = ServerCmd::parse("kv:resp=kvd --port={port} --x=1").unwrap();
        assert_eq!(
            (r.protocol, r.limit, r.command.as_str()),
            (Protocol::Resp, false, "kvd --port={port} --x=1")
        );
        assert_eq!(ServerCmd::parse("m=memcached -p {port}").unwrap().protocol, Protocol::Memcache);
        assert!(ServerCmd::parse("noequals").unwrap_err().contains("NAME"));
        assert!(ServerCmd::parse("=cmd").unwrap_err().contains("bad name"));
        assert!(ServerCmd::parse("a b=cmd").unwrap_err().contains("bad name"));
        assert!(ServerCmd::parse("x:ftp=cmd").is_err());
        assert!(ServerCmd::parse("x=  ").unwrap_err().contains("empty"));
        assert!(ServerCmd::parse("memcached=cmd").unwrap_err().contains("built-in"));
        let vars =
            Vars { port: 7000, threads: 2, value_size: 100, memory_mib: 64, max_connections: 9 };
        assert_eq!(c.expand(&vars), "/opt/nullmc 7000 2 100");
    }

    /// Goal: the spec's properties follow its kind or its command.
    #[test]
    fn spec_properties() {
        let nullmc = Spec::from(Kind::Nullmc);
        assert!(nullmc.is_limit() && nullmc.per_value_size() && nullmc.sweeps());
        assert_eq!(Spec::from(Kind::Valkey).protocol(), Protocol::Resp);
        assert!(!Spec::from(Kind::Valkey).sweeps() && !Spec::from(Kind::Redis).sweeps());
        assert_eq!(Spec::from(Kind::Pogocache).resp_too(), Some(RespPort::Same));
        let cmd = ServerCmd::parse("x:limit=srv {port} {threads} {value_size}").unwrap();
        let spec = Spec::Cmd(cmd);
        assert!(spec.is_limit() && spec.per_value_size() && spec.sweeps());
        assert_eq!(spec.name(), "x");
        let plain = Spec::Cmd(ServerCmd::parse("y:resp=srv {port}").unwrap());
        assert!(Spec::Cmd(ServerCmd::parse("z:resp=srv {port} {threads}").unwrap()).sweeps());
        assert!(!plain.is_limit() && !plain.per_value_size() && !plain.sweeps());
        assert_eq!(Kind::parse("valkey-server"), Ok(Kind::Valkey));
    }

    /// Goal: `--servers` picks built-ins and commands by name, in order, without repeats.
    #[test]
    fn selection() {
        let cmds = vec![ServerCmd::parse("lim:limit=n {port}").unwrap()];
        let names: Vec<String> =
            ["memcached", "lim", "spinel", "lim"].iter().map(|s| s.to_string()).collect();
        let specs = select(Some(&names), &cmds).unwrap();
        let got: Vec<&str> = specs.iter().map(Spec::name).collect();
        assert_eq!(got, ["memcached", "lim", "spinel"]);
        let all = select(None, &cmds).unwrap();
        assert_eq!(all.len(), Kind::ALL.len() + 1);
        assert!(select(Some(&["nginx".to_string()]), &cmds).unwrap_err().contains("nginx"));
    }
}
