//! The one list of options: the command line (clap) and the TOML file (serde) are both
//! read into [`Options`], so a key cannot exist in one and be missing from the other. The
//! doc comment of each field is its `--help` text, its man page entry and its documentation.
//! TOML keys are the long flag names.

use clap::{ArgAction, Parser, ValueEnum};
use serde::{Deserialize, Serialize};

use super::{
    extended::{self, Effect, Extended},
    values::{text, Io, ItemSize, Listen, LogFormat, McPort, Positive, Protocol, UnixMask},
};

const MEMCACHED: &str = "memcached options";
const REDIS: &str = "Redis options";
const SPINEL: &str = "Spinel options";

/// Every option. `None` (or `false`, `0`, empty) means "not given here", so a file and a
/// command line can be layered: defaults, then the file, then the command line.
#[derive(Parser, Deserialize, Serialize, Debug, Clone, Default, PartialEq)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
#[command(
    name = "spinel",
    version = super::version_text(),
    about = "An in-memory cache speaking memcached (text + meta) and Redis (RESP2/3) on one store",
    after_help = "Ports: a port named on the command line or in the file must open, or the start \
        fails. A default that is in use (11211 without -p, 6379 without --resp-port) is \
        skipped with a warning, so several instances can share a host.\n\
        Signals: SIGTERM or SIGINT stop accepting, send replies in flight and exit 0.",
    // memcached's last-one-wins: `-m 64 ... -m 128` is a bigger cache, not an error.
    args_override_self = true,
    // `-m -5` is a bad value for -m, not an unknown flag -5.
    allow_negative_numbers = true,
    max_term_width = 100
)]
pub struct Options {
    /// memcached TCP port; 0 is off, -1 any free port [default: 11211]
    ///
    /// Named (here or in the file), it must open or the start fails; the default is
    /// skipped, with a warning, when another process holds it. With -1 the kernel picks the
    /// port; MEMCACHED_PORT_FILENAME names a file that gets the ports bound, as memcached.
    #[arg(short = 'p', long, value_name = "NUM", help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub port: Option<McPort>,

    /// Addresses to listen on, comma-separated [default: 127.0.0.1]
    ///
    /// Not every interface by default, unlike memcached: give 0.0.0.0 to expose the server.
    #[arg(short = 'l', long, value_name = "ADDR,...", help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub listen: Option<Listen>,

    /// Item memory in MiB, index included [default: 64]
    #[arg(short = 'm', long, value_name = "MIB", help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub memory_limit: Option<Positive>,

    /// Open connections at most [default: 1024]
    ///
    /// One more is told `ERROR Too many open connections` (Redis port: `-ERR max number of
    /// clients reached`) and closed.
    #[arg(short = 'c', long, value_name = "NUM", help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub conn_limit: Option<Positive>,

    /// Worker threads, one event loop each [default: the number of CPUs; at most 256]
    #[arg(short = 't', long, value_name = "NUM", help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub threads: Option<Positive>,

    /// Largest item, key + value: bytes, or a k or m suffix [default: 1m; 1k..1024m]
    ///
    /// At most half of the memory limit.
    #[arg(short = 'I', long, value_name = "SIZE", help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub max_item_size: Option<ItemSize>,

    /// Return an error when memory is full instead of evicting
    #[arg(short = 'M', long, help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::switch")]
    pub disable_evictions: bool,

    /// Do not report CAS values (they are still kept)
    #[arg(short = 'C', long, help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::switch")]
    pub disable_cas: bool,

    /// Log start-up details (-v), and connections (-vv); repeat to raise [default: 0]
    ///
    /// In the file, the level as a number; a -v on the command line adds to it.
    #[arg(short = 'v', long, action = ArgAction::Count, help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::value")]
    pub verbose: u8,

    /// Drop privileges to this user after binding (when started as root)
    #[arg(short = 'u', long, value_name = "NAME", help_heading = MEMCACHED)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,

    /// Unix socket path to listen on instead of TCP and UDP for memcached
    ///
    /// A stale socket file left at the path is replaced. The Redis port is not affected.
    #[arg(short = 's', long, value_name = "FILE", help_heading = MEMCACHED)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unix_socket: Option<String>,

    /// Access mask of the -s socket file, in octal [default: 700]
    #[arg(short = 'a', long, value_name = "MASK", help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub unix_mask: Option<UnixMask>,

    /// Run in the background: detach from the terminal once the ports listen
    ///
    /// The command returns when the server is listening, so a bind error still reaches the
    /// caller. Standard input, output and error go to /dev/null unless -v is given.
    #[arg(short = 'd', long, help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::switch")]
    pub daemon: bool,

    /// Write the process id to this file once running; it is removed at a clean exit
    #[arg(short = 'P', long, value_name = "FILE", help_heading = MEMCACHED)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pidfile: Option<String>,

    /// Lock all memory in RAM (mlockall), so no item is ever paged out
    ///
    /// When the lock fails (RLIMIT_MEMLOCK, no CAP_IPC_LOCK) the server warns and runs on.
    #[arg(short = 'k', long, help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::switch")]
    pub lock_memory: bool,

    /// Raise the core file size limit to the hard limit, so a crash leaves a core file
    #[arg(short = 'r', long, help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::switch")]
    pub enable_coredumps: bool,

    /// UDP port for the text protocol; 0 is off, -1 any free port [default: 0]
    ///
    /// Off unless asked for, as in memcached 1.6: a UDP reply can be far larger than its
    /// request, so a reachable UDP port can be used to amplify a spoofed-source attack. Bound
    /// only to the -l addresses. Given without -p, it also sets the TCP port, as memcached.
    #[arg(short = 'U', long, value_name = "NUM", help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub udp_port: Option<McPort>,

    /// memcached suboptions, comma-separated, repeatable
    ///
    /// idle_timeout=SECS and read_buf_mem_limit=MB apply (the long options win over them),
    /// and the ssl_* of -Z; the ones that mean nothing here (slab_*, lru_*, hashpower,
    /// ext_*, ssl_ciphers, ...) are accepted with a start-up warning;
    /// unknown ones refuse to start.
    #[arg(short = 'o', long, value_name = "K=V,...", help_heading = MEMCACHED)]
    #[serde(
        default,
        deserialize_with = "text::list",
        serialize_with = "text::joined",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub extended: Vec<Extended>,

    /// TLS on the memcached TCP port(s), with the certificate from -o ssl_chain_cert
    ///
    /// -o ssl_chain_cert=FILE (PEM chain, required), ssl_key=FILE (default: the chain
    /// file), ssl_ca_cert=FILE (CAs of client certificates), ssl_verify_mode=0-3 (none,
    /// request, require, once), ssl_min_version=2|3 (TLS 1.2, 1.3; 0 and 1, TLS 1.0 and
    /// 1.1, mean 1.2). Certificates are read again on SIGHUP and by `refresh_certs`.
    #[arg(short = 'Z', long, help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::switch")]
    pub enable_ssl: bool,

    /// Refuse memcached's flush_all (Redis FLUSHALL and FLUSHDB are not affected)
    #[arg(short = 'F', long, help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::switch")]
    pub disable_flush_all: bool,

    /// SASL authentication (binary protocol): PLAIN, checked against the file of
    /// user:password lines that the MEMCACHED_SASL_PWDB environment variable names, or,
    /// when it is unset, against the Redis users (requirepass, --aclfile, ACL SETUSER)
    ///
    /// As memcached: the memcached port then speaks binary only (-B must be binary if
    /// given), UDP must be off, and every command but the SASL ones and version is refused
    /// until the connection authenticates. The file is read at start and again on SIGHUP.
    /// With -Y as well, -Y decides: text protocol, authenticated from the -Y file.
    #[arg(short = 'S', long, help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::switch")]
    pub enable_sasl: bool,

    /// Text protocol authentication from a file of user:password lines
    ///
    /// As memcached: the memcached port then speaks text only (-B must be ascii if given),
    /// UDP must be off, and a connection's lines are refused until it sends
    /// `set <any> <any> <any> <len>` with `user password` as the data. The file is read at
    /// start and again on SIGHUP (a file that cannot be read keeps the previous one).
    #[arg(short = 'Y', long, value_name = "FILE", help_heading = MEMCACHED)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_file: Option<String>,
    /// memcached's restartable cache: at a graceful stop (SIGUSR1, or `shutdown graceful`
    /// with -A) every item is saved to FILE, and the next start with the same FILE loads
    /// it back (then removes it, so a crash later never brings back stale items). A file
    /// that fails its checks is refused and the server starts empty [default: none]
    #[arg(short = 'e', long, value_name = "FILE", help_heading = MEMCACHED)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_file: Option<String>,
    /// Refuse `stats cachedump` and `lru_crawler metadump`
    #[arg(short = 'X', long, help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::switch")]
    pub disable_dumping: bool,

    /// Refuse the `watch` command
    #[arg(short = 'W', long, help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::switch")]
    pub disable_watch: bool,

    /// Count gets, hits, sets and deletes per key prefix from the start (`stats detail`)
    ///
    /// A key's prefix is what comes before the first occurrence of this character; only the
    /// first character of the value counts, as in memcached [default: off, `:` once turned
    /// on by `stats detail on`].
    #[arg(short = 'D', long, value_name = "CHAR", help_heading = MEMCACHED)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_delimiter: Option<String>,

    /// Binding protocol: auto (by each connection's first byte), ascii or binary [default: auto]
    #[arg(short = 'B', long, value_name = "NAME", help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,

    /// Listen backlog, capped at 65535 [default: 1024]
    #[arg(short = 'b', long, value_name = "NUM", help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub listen_backlog: Option<Positive>,

    /// Requests run for one connection before the others get a turn [default: 20]
    ///
    /// The rest of its input waits for its next turn.
    #[arg(short = 'R', long, value_name = "NUM", help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub max_reqs_per_event: Option<Positive>,

    /// Allow the `shutdown` command
    #[arg(short = 'A', long, help_heading = MEMCACHED)]
    #[serde(default, deserialize_with = "text::switch")]
    pub enable_shutdown: bool,

    /// Redis (RESP) TCP port; 0 disables it [default: 6379]
    ///
    /// Named (here or in the file), it must open or the start fails; the default is
    /// skipped, with a warning, when another process (a redis-server) holds it.
    #[arg(long, value_name = "NUM", help_heading = REDIS)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub resp_port: Option<u16>,

    /// Redis `requirepass`: the password of the `default` user; clients must AUTH (or
    /// HELLO ... AUTH) before any other command. Empty: none [default: none]
    #[arg(long, value_name = "PASSWORD", help_heading = REDIS)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requirepass: Option<String>,

    /// Redis `aclfile`: ACL users, one `user <name> <rules...>` line each, loaded at start
    /// (a bad file refuses the start) and by ACL LOAD, written by ACL SAVE [default: none]
    #[arg(long, value_name = "FILE", help_heading = REDIS)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aclfile: Option<String>,

    /// Redis `dir`: where SAVE and BGSAVE write the snapshot, and where it is loaded from
    /// at start [default: .]
    #[arg(long, value_name = "DIR", help_heading = REDIS)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,

    /// Redis `dbfilename`: the RDB file's name in --dir (SAVE, BGSAVE); loaded at start
    /// when it exists (an RDB file, or an older Spinel snapshot) [default: dump.rdb]
    #[arg(long, value_name = "NAME", help_heading = REDIS)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dbfilename: Option<String>,

    /// Redis `protected-mode`: while no password is set, refuse Redis connections from
    /// anywhere but the loopback interface (Redis's DENIED reply) [default: yes]
    #[arg(long, value_name = "yes|no", help_heading = REDIS)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protected_mode: Option<String>,

    /// Redis `cluster-enabled`: serve as a Redis Cluster node, with the slot map of
    /// --cluster-config-file (no cluster bus: see docs/CLUSTER.md) [default: no]
    #[arg(long, value_name = "yes|no", help_heading = REDIS)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_enabled: Option<String>,

    /// Redis `cluster-config-file`: the map in Redis's nodes.conf format, relative to --dir;
    /// created when missing, rewritten after each change, read again on SIGHUP
    /// [default: nodes.conf]
    #[arg(long, value_name = "FILE", help_heading = REDIS)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_config_file: Option<String>,

    /// Redis `tls-port`: a TLS RESP port beside --resp-port; 0 or unset: none
    ///
    /// Needs --tls-cert-file and --tls-key-file, and --tls-ca-cert-file unless
    /// --tls-auth-clients is no. Certificates are read again on SIGHUP.
    #[arg(long, value_name = "NUM", help_heading = REDIS)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub tls_port: Option<u16>,

    /// Redis `tls-cert-file`: the TLS port's certificate chain (PEM)
    #[arg(long, value_name = "FILE", help_heading = REDIS)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_cert_file: Option<String>,

    /// Redis `tls-key-file`: the TLS port's private key (PEM)
    #[arg(long, value_name = "FILE", help_heading = REDIS)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_key_file: Option<String>,

    /// Redis `tls-ca-cert-file`: CAs whose client certificates the TLS port accepts (PEM)
    #[arg(long, value_name = "FILE", help_heading = REDIS)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_ca_cert_file: Option<String>,

    /// Redis `tls-auth-clients`: yes (a client certificate is required), optional or no
    /// [default: yes]
    #[arg(long, value_name = "yes|optional|no", help_heading = REDIS)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_auth_clients: Option<String>,

    /// Redis `tls-protocols`: the TLS versions the TLS port accepts, space-separated
    /// [default: "TLSv1.2 TLSv1.3"]
    #[arg(long, value_name = "\"TLSv1.2 TLSv1.3\"", help_heading = REDIS)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_protocols: Option<String>,

    /// Prometheus metrics port on the -l addresses (GET /metrics, /healthz, /readyz); 0 or
    /// unset: none
    #[arg(long, value_name = "NUM", help_heading = SPINEL)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub metrics_port: Option<u16>,

    /// I/O back end: auto, uring or epoll [default: auto]
    ///
    /// auto takes io_uring when the kernel allows it, else epoll, and logs which.
    #[arg(long, value_name = "auto|uring|epoll", help_heading = SPINEL)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub io: Option<Io>,

    /// Pin worker thread i to CPU i
    #[arg(long, help_heading = SPINEL)]
    #[serde(default, deserialize_with = "text::switch")]
    pub pin: bool,

    /// Spin up to this long for completions before sleeping; 0 is off [default: 0]
    #[arg(long, value_name = "US", help_heading = SPINEL)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub busy_poll_us: Option<u64>,

    /// Send large values zero-copy (MSG_ZEROCOPY) when a batch lends this many bytes or
    /// more; 0 is off [default: 0]
    ///
    /// Loopback always copies (measured: a cost, no gain); see docs/benchmarks/large-values.md.
    #[arg(long, value_name = "BYTES", help_heading = SPINEL)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub zerocopy_min_bytes: Option<u64>,

    /// Databases whose keys are never evicted, whatever maxmemory-policy says: numbers
    /// from 0 to 15, separated by commas or spaces [default: none]
    ///
    /// Their keys behave as under noeviction: kept, and when only they are left, writes are
    /// refused with Redis's OOM error (memcached: SERVER_ERROR out of memory). INFO shows a
    /// connection that selected one maxmemory_policy:noeviction. memcached's keys are
    /// database 0's. Redis CONFIG SET spinel-noevict-dbs changes it at run time.
    #[arg(long, value_name = "DB,...", help_heading = SPINEL)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noevict_dbs: Option<String>,

    /// Key prefixes whose keys are never evicted, in every database and on the memcached
    /// port, separated by spaces: at most 64, each 1 to 256 bytes [default: none]
    ///
    /// As --noevict-dbs, for keys that start with one of them (`bull:` for BullMQ's
    /// queues, `lock:`, `sess:`). Redis CONFIG SET spinel-noevict-prefixes changes it at
    /// run time.
    #[arg(long, value_name = "PREFIX ...", help_heading = SPINEL)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noevict_prefixes: Option<String>,

    /// Close connections idle this long; 0 is never [default: 0]
    #[arg(long, value_name = "SECS", help_heading = SPINEL)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<u64>,

    /// Partly received requests: the worker threads together hold at most this many
    /// MiB of them, 16 KiB counted per connection; 0 is no limit [default: 0]
    ///
    /// memcached's -o read_buf_mem_limit: each thread lets MB/threads/16 KiB connections (at
    /// least one) hold a partly received request; one more that would start one is closed
    /// without a message and counted in stats read_buf_oom.
    #[arg(long, value_name = "MB", help_heading = SPINEL)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub read_buf_mem_limit: Option<u64>,

    /// Close a connection whose unsent replies pass this in one batch [default: 64]
    #[arg(long, value_name = "MIB", help_heading = SPINEL)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub output_limit: Option<Positive>,

    /// Stop reading a connection whose unsent replies reach this [default: 32]
    ///
    /// Reading resumes once the client has read half of them.
    #[arg(long, value_name = "KIB", help_heading = SPINEL)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub output_pause: Option<Positive>,

    /// Bound on all connections' buffers together [default: 64]
    ///
    /// Past it every connection pauses at 16 KiB of unsent replies.
    #[arg(long, value_name = "MIB", help_heading = SPINEL)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub conn_buffers: Option<Positive>,

    /// Log line format: text or json [default: text]
    #[arg(long, value_name = "FORMAT", help_heading = SPINEL)]
    #[serde(default, deserialize_with = "text::option", skip_serializing_if = "Option::is_none")]
    pub log_format: Option<LogFormat>,

    /// TOML file of options; keys are the long option names (port = 11211, ...)
    ///
    /// The command line wins over the file. In a file this key is ignored.
    #[arg(long, value_name = "FILE", help_heading = SPINEL)]
    #[serde(default, skip_serializing)]
    pub config: Option<String>,

    /// A redis.conf: its parameters that are options here (port, bind, requirepass,
    /// maxmemory, dir, tls-* ...) fill them, under the TOML file and the command line; the
    /// others are set at start as CONFIG SET sets them (a value Redis refuses refuses the
    /// start, naming the line)
    #[arg(long, value_name = "FILE", help_heading = REDIS)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redis_conf: Option<String>,

    /// Print the effective configuration (defaults, file, flags) as TOML, and exit
    #[arg(long, help_heading = SPINEL)]
    #[serde(skip)]
    pub print_config: bool,

    /// Print the license and exit
    #[arg(short = 'i', long, help_heading = MEMCACHED)]
    #[serde(skip)]
    pub license: bool,

    /// Write a man page or shell completions to stdout, and exit
    #[arg(long, value_name = "WHAT", help_heading = SPINEL)]
    #[serde(skip)]
    pub generate: Option<Generate>,
}

/// What `--generate` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Generate {
    Man,
    Bash,
    Zsh,
    Fish,
}

/// The options that exist only on the command line: they ask for an action, not a setting.
#[cfg(test)]
pub const COMMAND_LINE_ONLY: &[&str] = &["print_config", "generate", "license", "help", "version"];

impl Options {
    /// The file's options (`self`) under the command line's: a value the command line gives
    /// wins. Every field is listed, so a new one cannot be forgotten here.
    pub fn under(self, cli: Options) -> Options {
        Options {
            port: cli.port.or(self.port),
            listen: cli.listen.or(self.listen),
            memory_limit: cli.memory_limit.or(self.memory_limit),
            conn_limit: cli.conn_limit.or(self.conn_limit),
            threads: cli.threads.or(self.threads),
            max_item_size: cli.max_item_size.or(self.max_item_size),
            disable_evictions: cli.disable_evictions || self.disable_evictions,
            disable_cas: cli.disable_cas || self.disable_cas,
            // Kept from the hand-written parser: each -v adds a level to the file's.
            verbose: self.verbose.saturating_add(cli.verbose),
            user: cli.user.or(self.user),
            unix_socket: cli.unix_socket.or(self.unix_socket),
            unix_mask: cli.unix_mask.or(self.unix_mask),
            daemon: cli.daemon || self.daemon,
            pidfile: cli.pidfile.or(self.pidfile),
            lock_memory: cli.lock_memory || self.lock_memory,
            enable_coredumps: cli.enable_coredumps || self.enable_coredumps,
            udp_port: cli.udp_port.or(self.udp_port),
            // Suboptions accumulate like repeated -o: the file's first, then the command line's.
            extended: [self.extended, cli.extended].concat(),
            enable_ssl: cli.enable_ssl || self.enable_ssl,
            disable_flush_all: cli.disable_flush_all || self.disable_flush_all,
            enable_sasl: cli.enable_sasl || self.enable_sasl,
            auth_file: cli.auth_file.or(self.auth_file),
            memory_file: cli.memory_file.or(self.memory_file),
            disable_dumping: cli.disable_dumping || self.disable_dumping,
            disable_watch: cli.disable_watch || self.disable_watch,
            prefix_delimiter: cli.prefix_delimiter.or(self.prefix_delimiter),
            protocol: cli.protocol.or(self.protocol),
            listen_backlog: cli.listen_backlog.or(self.listen_backlog),
            max_reqs_per_event: cli.max_reqs_per_event.or(self.max_reqs_per_event),
            enable_shutdown: cli.enable_shutdown || self.enable_shutdown,
            resp_port: cli.resp_port.or(self.resp_port),
            requirepass: cli.requirepass.or(self.requirepass),
            aclfile: cli.aclfile.or(self.aclfile),
            dir: cli.dir.or(self.dir),
            dbfilename: cli.dbfilename.or(self.dbfilename),
            protected_mode: cli.protected_mode.or(self.protected_mode),
            cluster_enabled: cli.cluster_enabled.or(self.cluster_enabled),
            cluster_config_file: cli.cluster_config_file.or(self.cluster_config_file),
            tls_port: cli.tls_port.or(self.tls_port),
            tls_cert_file: cli.tls_cert_file.or(self.tls_cert_file),
            tls_key_file: cli.tls_key_file.or(self.tls_key_file),
            tls_ca_cert_file: cli.tls_ca_cert_file.or(self.tls_ca_cert_file),
            tls_auth_clients: cli.tls_auth_clients.or(self.tls_auth_clients),
            tls_protocols: cli.tls_protocols.or(self.tls_protocols),
            metrics_port: cli.metrics_port.or(self.metrics_port),
            io: cli.io.or(self.io),
            pin: cli.pin || self.pin,
            busy_poll_us: cli.busy_poll_us.or(self.busy_poll_us),
            zerocopy_min_bytes: cli.zerocopy_min_bytes.or(self.zerocopy_min_bytes),
            noevict_dbs: cli.noevict_dbs.or(self.noevict_dbs),
            noevict_prefixes: cli.noevict_prefixes.or(self.noevict_prefixes),
            idle_timeout: cli.idle_timeout.or(self.idle_timeout),
            read_buf_mem_limit: cli.read_buf_mem_limit.or(self.read_buf_mem_limit),
            output_limit: cli.output_limit.or(self.output_limit),
            output_pause: cli.output_pause.or(self.output_pause),
            conn_buffers: cli.conn_buffers.or(self.conn_buffers),
            log_format: cli.log_format.or(self.log_format),
            config: cli.config.or(self.config),
            redis_conf: cli.redis_conf.or(self.redis_conf),
            print_config: cli.print_config,
            generate: cli.generate,
            license: cli.license,
        }
    }

    /// `-o idle_timeout=N` sets `--idle-timeout`, `-o read_buf_mem_limit=MB` sets
    /// `--read-buf-mem-limit`, unless this layer gives that too: within one layer the long
    /// option wins, and a command line's -o still wins over the file.
    pub fn fold_suboptions(mut self) -> Options {
        let effects: Vec<Effect> = self
            .extended
            .iter()
            .flat_map(|e| &e.0)
            .rev()
            .filter_map(|(k, v)| extended::effect(k, v).ok())
            .collect();
        let idle = effects.iter().find_map(|e| match e {
            Effect::IdleTimeout(secs) => Some(*secs),
            _ => None,
        });
        let read_buf = effects.iter().find_map(|e| match e {
            Effect::ReadBufMemLimit(mb) => Some(*mb),
            _ => None,
        });
        self.idle_timeout = self.idle_timeout.or(idle);
        self.read_buf_mem_limit = self.read_buf_mem_limit.or(read_buf);
        self
    }
}
