//! The rest of Redis 7.0's CONFIG parameters: those that govern what Spinel does not have
//! (append-only files, replication, cluster bus tuning, active defragmentation, the LFU
//! counters, syslog, process titles, the OOM score ...). CONFIG GET lists each with Redis's
//! default, CONFIG SET checks a value as Redis does (same errors, word for word) and keeps
//! it, and an immutable one is refused as Redis refuses it, so a client, a test suite or a
//! config file written for Redis 7.0 is not stopped by a name it does not know. Nothing in
//! Spinel reads these values; the README lists them.
//!
//! Each entry is a [`Kept`] (see `config_kept`): its name, Redis's alias, default and check.

use super::config_kept::{
    aliased, fixed, hidden, hidden_fixed, integer_between, kept, memory_between, one_of, yes_or_no,
    Kept,
};

const I32_MAX: i64 = i32::MAX as i64;
const I64_MAX: i64 = i64::MAX;

fn any_text(value: &[u8]) -> Result<String, String> {
    Ok(String::from_utf8_lossy(value).into_owned())
}

fn int_0_i32(value: &[u8]) -> Result<String, String> {
    integer_between(value, 0, I32_MAX)
}

fn int_1_i32(value: &[u8]) -> Result<String, String> {
    integer_between(value, 1, I32_MAX)
}

fn int_port(value: &[u8]) -> Result<String, String> {
    integer_between(value, 0, 65535)
}

fn memory_any(value: &[u8]) -> Result<String, String> {
    super::config_kept::memory_unsigned(value)
}

/// Parameters Spinel keeps without acting on them, in Redis 7.0's `config.c` order by type.
pub(super) const ABSENT: &[Kept] = &[
    fixed("rdbchecksum", "yes"),
    fixed("io-threads-do-reads", "no"),
    fixed("always-show-logo", "no"),
    kept("rdbcompression", "yes", yes_or_no),
    kept("rdb-del-sync-files", "no", yes_or_no),
    kept("activerehashing", "yes", yes_or_no),
    kept("stop-writes-on-bgsave-error", "yes", yes_or_no),
    fixed("set-proc-title", "yes"),
    kept("dynamic-hz", "yes", yes_or_no),
    kept("lazyfree-lazy-eviction", "no", yes_or_no),
    kept("lazyfree-lazy-expire", "no", yes_or_no),
    kept("lazyfree-lazy-server-del", "no", yes_or_no),
    kept("lazyfree-lazy-user-del", "no", yes_or_no),
    kept("lazyfree-lazy-user-flush", "no", yes_or_no),
    kept("repl-disable-tcp-nodelay", "no", yes_or_no),
    kept("repl-diskless-sync", "yes", yes_or_no),
    kept("aof-rewrite-incremental-fsync", "yes", yes_or_no),
    kept("no-appendfsync-on-rewrite", "no", yes_or_no),
    kept("cluster-require-full-coverage", "yes", yes_or_no),
    kept("rdb-save-incremental-fsync", "yes", yes_or_no),
    kept("aof-load-truncated", "yes", yes_or_no),
    kept("aof-use-rdb-preamble", "yes", yes_or_no),
    kept("aof-timestamp-enabled", "no", yes_or_no),
    aliased("cluster-replica-no-failover", "cluster-slave-no-failover", "no", yes_or_no),
    aliased("replica-lazy-flush", "slave-lazy-flush", "no", yes_or_no),
    aliased("replica-serve-stale-data", "slave-serve-stale-data", "yes", yes_or_no),
    aliased("replica-ignore-maxmemory", "slave-ignore-maxmemory", "yes", yes_or_no),
    kept("jemalloc-bg-thread", "yes", yes_or_no),
    kept("activedefrag", "no", active_defrag),
    fixed("syslog-enabled", "no"),
    kept("cluster-allow-reads-when-down", "no", yes_or_no),
    kept("cluster-allow-pubsubshard-when-down", "yes", yes_or_no),
    kept("crash-log-enabled", "yes", yes_or_no),
    kept("crash-memcheck-enabled", "yes", yes_or_no),
    hidden("use-exit-on-panic", "no", yes_or_no),
    fixed("disable-thp", "yes"),
    kept("cluster-allow-replica-migration", "yes", yes_or_no),
    kept("replica-announced", "yes", yes_or_no),
    kept("aof-disable-auto-gc", "no", yes_or_no),
    kept("replica-ignore-disk-write-errors", "no", yes_or_no),
    hidden_fixed("lua-enable-deprecated-api", "no"),
    fixed("unixsocket", ""),
    fixed("pidfile", ""),
    aliased("replica-announce-ip", "slave-announce-ip", "", any_text),
    kept("masteruser", "", any_text),
    kept("cluster-announce-ip", "", any_text),
    kept("cluster-announce-hostname", "", announced_hostname),
    fixed("syslog-ident", "redis"),
    fixed("appendfilename", "appendonly.aof"),
    fixed("appenddirname", "appendonlydir"),
    fixed("server_cpulist", ""),
    fixed("bio_cpulist", ""),
    fixed("aof_rewrite_cpulist", ""),
    fixed("bgsave_cpulist", ""),
    kept("ignore-warnings", "", any_text),
    kept("proc-title-template", "{title} {listen-addr} {server-mode}", proc_title_template),
    kept("bind-source-addr", "", any_text),
    fixed("logfile", ""),
    kept("masterauth", "", any_text),
    fixed("supervised", "no"),
    fixed("syslog-facility", "local0"),
    kept("repl-diskless-load", "disabled", |v| one_of(v, &["disabled", "on-empty-db", "swapdb"])),
    kept("loglevel", "notice", |v| one_of(v, &["debug", "verbose", "notice", "warning"])),
    kept("appendfsync", "everysec", |v| one_of(v, &["everysec", "always", "no"])),
    kept("oom-score-adj", "no", oom_score_adj),
    kept("acl-pubsub-default", "resetchannels", |v| one_of(v, &["allchannels", "resetchannels"])),
    fixed("enable-protected-configs", "no"),
    fixed("enable-debug-command", "no"),
    fixed("enable-module-command", "no"),
    kept("cluster-preferred-endpoint-type", "ip", |v| {
        one_of(v, &["ip", "hostname", "unknown-endpoint"])
    }),
    kept("propagation-error-behavior", "ignore", |v| {
        one_of(v, &["ignore", "panic", "panic-on-replicas"])
    }),
    kept("shutdown-on-sigint", "default", shutdown_flags),
    kept("shutdown-on-sigterm", "default", shutdown_flags),
    kept("auto-aof-rewrite-percentage", "100", int_0_i32),
    aliased("cluster-replica-validity-factor", "cluster-slave-validity-factor", "10", int_0_i32),
    kept("tcp-keepalive", "300", int_0_i32),
    kept("cluster-migration-barrier", "1", int_0_i32),
    kept("active-defrag-cycle-min", "1", |v| integer_between(v, 1, 99)),
    kept("active-defrag-cycle-max", "25", |v| integer_between(v, 1, 99)),
    kept("active-defrag-threshold-lower", "10", |v| integer_between(v, 0, 1000)),
    kept("active-defrag-threshold-upper", "100", |v| integer_between(v, 0, 1000)),
    kept("lfu-log-factor", "10", int_0_i32),
    kept("lfu-decay-time", "1", int_0_i32),
    aliased("replica-priority", "slave-priority", "100", int_0_i32),
    kept("repl-diskless-sync-delay", "5", int_0_i32),
    kept("maxmemory-eviction-tenacity", "10", |v| integer_between(v, 0, 100)),
    aliased("replica-announce-port", "slave-announce-port", "0", int_port),
    fixed("cluster-port", "0"),
    kept("cluster-announce-bus-port", "0", int_port),
    kept("cluster-announce-port", "0", int_port),
    kept("cluster-announce-tls-port", "0", int_port),
    kept("repl-timeout", "60", int_1_i32),
    aliased("repl-ping-replica-period", "repl-ping-slave-period", "10", int_1_i32),
    kept("active-expire-effort", "1", |v| integer_between(v, 1, 10)),
    kept("hz", "10", hz),
    aliased("min-replicas-to-write", "min-slaves-to-write", "0", int_0_i32),
    aliased("min-replicas-max-lag", "min-slaves-max-lag", "10", int_0_i32),
    hidden("watchdog-period", "0", int_0_i32),
    kept("shutdown-timeout", "10", int_0_i32),
    kept("repl-diskless-sync-max-replicas", "0", int_0_i32),
    fixed("unixsocketperm", "0"),
    fixed("socket-mark-id", "0"),
    kept("active-defrag-max-scan-fields", "1000", |v| integer_between(v, 1, I64_MAX)),
    kept("cluster-node-timeout", "15000", |v| integer_between(v, 0, I64_MAX)),
    kept("cluster-link-sendbuf-limit", "0", memory_any),
    kept("active-defrag-ignore-bytes", "104857600", |v| memory_between(v, 1, I64_MAX)),
    kept("hll-sparse-max-bytes", "3000", |v| memory_between(v, 0, I64_MAX)),
    kept("repl-backlog-ttl", "3600", |v| integer_between(v, 0, I64_MAX)),
    kept("auto-aof-rewrite-min-size", "67108864", |v| memory_between(v, 0, I64_MAX)),
    hidden("loading-process-events-interval-bytes", "2097152", |v| {
        integer_between(v, 1024, I32_MAX)
    }),
    kept(
        "client-output-buffer-limit",
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        super::config_checks::client_output_buffer_limit,
    ),
    kept("oom-score-adj-values", "0 200 800", super::config_checks::oom_score_adj_values),
];

/// `activedefrag`: Redis built without its own jemalloc (as Debian's, and Spinel, which
/// has no defragmenter) refuses to turn it on.
fn active_defrag(value: &[u8]) -> Result<String, String> {
    match yes_or_no(value)?.as_str() {
        "yes" => Err("Active defragmentation cannot be enabled: it requires a Redis server \
                      compiled with a modified Jemalloc like the one shipped by default with \
                      the Redis source distribution"
            .into()),
        no => Ok(no.into()),
    }
}

/// `hz`: any non-negative int, which Redis clamps to 1..=500 (and shows clamped).
fn hz(value: &[u8]) -> Result<String, String> {
    let hz: i64 = int_0_i32(value)?.parse().unwrap_or(10);
    Ok(hz.clamp(1, 500).to_string())
}

/// `oom-score-adj`: `relative` is `yes`'s other name, shown as `yes`.
fn oom_score_adj(value: &[u8]) -> Result<String, String> {
    let word = one_of(value, &["no", "yes", "relative", "absolute"])?;
    Ok(if word == "relative" { "yes".into() } else { word })
}

/// `cluster-announce-hostname`: under 256 bytes of letters, digits, `-` and `.`.
fn announced_hostname(value: &[u8]) -> Result<String, String> {
    if value.len() >= 256 {
        return Err("Hostnames must be less than 256 characters".into());
    }
    if !value.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.')) {
        return Err("Hostnames may only contain alphanumeric characters, hyphens or dots".into());
    }
    any_text(value)
}

/// `shutdown-on-sigint` / `-sigterm`: space-separated flags, `default` alone being none.
fn shutdown_flags(value: &[u8]) -> Result<String, String> {
    const WORDS: [&str; 5] = ["default", "save", "nosave", "now", "force"];
    let mut set = [false; 5];
    for word in value.split(|b| *b == b' ') {
        let Some(at) = WORDS.iter().position(|w| w.as_bytes().eq_ignore_ascii_case(word)) else {
            return Err(format!("argument(s) must be one of the following: {}", WORDS.join(", ")));
        };
        set[at] = true;
    }
    if set[1] && set[2] {
        return Err("shutdown options SAVE and NOSAVE can't be used simultaneously".into());
    }
    let shown: Vec<&str> = (1..5).filter(|i| set[*i]).map(|i| WORDS[i]).collect();
    Ok(if shown.is_empty() { "default".into() } else { shown.join(" ") })
}

/// `proc-title-template`: `{name}` variables Redis knows (`{{`/`}}` stand for a brace),
/// and something left once `{title}` is empty.
fn proc_title_template(value: &[u8]) -> Result<String, String> {
    const INVALID: &str = "template format is invalid or contains unknown variables";
    // Variables that expand to something whatever the server's state.
    const NON_EMPTY: [&[u8]; 4] = [b"listen-addr", b"config-file", b"port", b"tls-port"];
    const MAYBE_EMPTY: [&[u8]; 3] = [b"title", b"server-mode", b"unixsocket"];
    let (mut at, mut shows_something) = (0, false);
    while at < value.len() {
        match (value[at], value.get(at + 1)) {
            (b'{', Some(b'{')) | (b'}', Some(b'}')) => (shows_something, at) = (true, at + 2),
            (b'{', _) => {
                let end = value[at..].iter().position(|b| *b == b'}').ok_or(INVALID)? + at;
                let name = &value[at + 1..end];
                if NON_EMPTY.contains(&name) {
                    shows_something = true;
                } else if !MAYBE_EMPTY.contains(&name) {
                    return Err(INVALID.into());
                }
                at = end + 1;
            }
            (b'}', _) => return Err(INVALID.into()),
            _ => (shows_something, at) = (true, at + 1),
        }
    }
    if !shows_something {
        return Err(INVALID.into());
    }
    any_text(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Goal: the special checks answer as Redis 7.0 does.
    #[test]
    fn special_checks() {
        assert_eq!(shutdown_flags(b"NOW save"), Ok("save now".into()));
        assert_eq!(shutdown_flags(b"default"), Ok("default".into()));
        assert!(shutdown_flags(b"save nosave").unwrap_err().contains("SAVE and NOSAVE"));
        assert!(shutdown_flags(b"save  now").unwrap_err().starts_with("argument(s) must"));
        assert_eq!(oom_score_adj(b"relative"), Ok("yes".into()));
        assert!(announced_hostname(b"a b").is_err());
        assert_eq!(announced_hostname(b"host-1.example"), Ok("host-1.example".into()));
        for good in ["{title} {listen-addr} {server-mode}", "x", "{port}", "{{"] {
            assert!(proc_title_template(good.as_bytes()).is_ok(), "{good}");
        }
        for bad in ["{bad}", "{title", "}", "{title}", "{title}{server-mode}", ""] {
            assert!(proc_title_template(bad.as_bytes()).is_err(), "{bad}");
        }
        assert!(active_defrag(b"yes").is_err());
        assert_eq!(
            (hz(b"0"), hz(b"1000"), hz(b"50")),
            (Ok("1".into()), Ok("500".into()), Ok("50".into()))
        );
        assert_eq!(active_defrag(b"NO"), Ok("no".into()));
    }
}
