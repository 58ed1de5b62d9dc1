"""Every redis.conf parameter of Redis 7.0 on the Redis port: CONFIG GET * lists each one
redis-server 7.0.15 lists, with its default (but for the few where Spinel differs, below),
and CONFIG SET checks values as Redis does, word for word: booleans, integers and memory
values at their bounds, the enumerations, the list parameters (client-output-buffer-limit,
oom-score-adj-values, shutdown-on-sig*), the validated strings, and the immutable ones,
refused whatever the value. Most govern what Spinel does not have (append-only files,
replication, defragmentation...): they are accepted, kept and shown, not acted on.

The expectations are what redis-server 7.0 does (validated with CONFORMANCE_TARGET=redis).
"""

import pytest

from resp_read import read_value
from wire import Conn, resp_encode

# Slow (a whole-table sweep) and not about the I/O back end: one matrix entry is enough.
pytestmark = [pytest.mark.resp, pytest.mark.slow, pytest.mark.one_backend]

I64_MAX = 9223372036854775807
# CONFIG GET * of redis-server 7.0.15 started as the suite starts it, less what the start
# sets (port, bind, dir, save, appendonly).
REDIS_70_DEFAULTS = {
    'acl-pubsub-default': 'resetchannels',
    'aclfile': '',
    'acllog-max-len': '128',
    'active-defrag-cycle-max': '25',
    'active-defrag-cycle-min': '1',
    'active-defrag-ignore-bytes': '104857600',
    'active-defrag-max-scan-fields': '1000',
    'active-defrag-threshold-lower': '10',
    'active-defrag-threshold-upper': '100',
    'active-expire-effort': '1',
    'activedefrag': 'no',
    'activerehashing': 'yes',
    'always-show-logo': 'no',
    'aof-disable-auto-gc': 'no',
    'aof-load-truncated': 'yes',
    'aof-rewrite-incremental-fsync': 'yes',
    'aof-timestamp-enabled': 'no',
    'aof-use-rdb-preamble': 'yes',
    'aof_rewrite_cpulist': '',
    'appenddirname': 'appendonlydir',
    'appendfilename': 'appendonly.aof',
    'appendfsync': 'everysec',
    'auto-aof-rewrite-min-size': '67108864',
    'auto-aof-rewrite-percentage': '100',
    'bgsave_cpulist': '',
    'bind-source-addr': '',
    'bio_cpulist': '',
    'busy-reply-threshold': '5000',
    'client-output-buffer-limit': 'normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60',
    'client-query-buffer-limit': '1073741824',
    'cluster-allow-pubsubshard-when-down': 'yes',
    'cluster-allow-reads-when-down': 'no',
    'cluster-allow-replica-migration': 'yes',
    'cluster-announce-bus-port': '0',
    'cluster-announce-hostname': '',
    'cluster-announce-ip': '',
    'cluster-announce-port': '0',
    'cluster-announce-tls-port': '0',
    'cluster-config-file': 'nodes.conf',
    'cluster-enabled': 'no',
    'cluster-link-sendbuf-limit': '0',
    'cluster-migration-barrier': '1',
    'cluster-node-timeout': '15000',
    'cluster-port': '0',
    'cluster-preferred-endpoint-type': 'ip',
    'cluster-replica-no-failover': 'no',
    'cluster-replica-validity-factor': '10',
    'cluster-require-full-coverage': 'yes',
    'cluster-slave-no-failover': 'no',
    'cluster-slave-validity-factor': '10',
    'crash-log-enabled': 'yes',
    'crash-memcheck-enabled': 'yes',
    'daemonize': 'no',
    'databases': '16',
    'dbfilename': 'dump.rdb',
    'disable-thp': 'yes',
    'dynamic-hz': 'yes',
    'enable-debug-command': 'no',
    'enable-module-command': 'no',
    'enable-protected-configs': 'no',
    'hash-max-listpack-entries': '512',
    'hash-max-listpack-value': '64',
    'hash-max-ziplist-entries': '512',
    'hash-max-ziplist-value': '64',
    'hll-sparse-max-bytes': '3000',
    'hz': '10',
    'ignore-warnings': '',
    'io-threads': '1',
    'io-threads-do-reads': 'no',
    'jemalloc-bg-thread': 'yes',
    'latency-monitor-threshold': '0',
    'latency-tracking': 'yes',
    'latency-tracking-info-percentiles': '50 99 99.9',
    'lazyfree-lazy-eviction': 'no',
    'lazyfree-lazy-expire': 'no',
    'lazyfree-lazy-server-del': 'no',
    'lazyfree-lazy-user-del': 'no',
    'lazyfree-lazy-user-flush': 'no',
    'lfu-decay-time': '1',
    'lfu-log-factor': '10',
    'list-compress-depth': '0',
    'list-max-listpack-size': '-2',
    'list-max-ziplist-size': '-2',
    'logfile': '',
    'loglevel': 'notice',
    'lua-time-limit': '5000',
    'masterauth': '',
    'masteruser': '',
    'maxclients': '10000',
    'maxmemory': '0',
    'maxmemory-clients': '0',
    'maxmemory-eviction-tenacity': '10',
    'maxmemory-policy': 'noeviction',
    'maxmemory-samples': '5',
    'min-replicas-max-lag': '10',
    'min-replicas-to-write': '0',
    'min-slaves-max-lag': '10',
    'min-slaves-to-write': '0',
    'no-appendfsync-on-rewrite': 'no',
    'notify-keyspace-events': '',
    'oom-score-adj': 'no',
    'oom-score-adj-values': '0 200 800',
    'pidfile': '',
    'proc-title-template': '{title} {listen-addr} {server-mode}',
    'propagation-error-behavior': 'ignore',
    'protected-mode': 'yes',
    'proto-max-bulk-len': '536870912',
    'rdb-del-sync-files': 'no',
    'rdb-save-incremental-fsync': 'yes',
    'rdbchecksum': 'yes',
    'rdbcompression': 'yes',
    'repl-backlog-size': '1048576',
    'repl-backlog-ttl': '3600',
    'repl-disable-tcp-nodelay': 'no',
    'repl-diskless-load': 'disabled',
    'repl-diskless-sync': 'yes',
    'repl-diskless-sync-delay': '5',
    'repl-diskless-sync-max-replicas': '0',
    'repl-ping-replica-period': '10',
    'repl-ping-slave-period': '10',
    'repl-timeout': '60',
    'replica-announce-ip': '',
    'replica-announce-port': '0',
    'replica-announced': 'yes',
    'replica-ignore-disk-write-errors': 'no',
    'replica-ignore-maxmemory': 'yes',
    'replica-lazy-flush': 'no',
    'replica-priority': '100',
    'replica-read-only': 'yes',
    'replica-serve-stale-data': 'yes',
    'replicaof': '',
    'requirepass': '',
    'sanitize-dump-payload': 'no',
    'server_cpulist': '',
    'set-max-intset-entries': '512',
    'set-proc-title': 'yes',
    'shutdown-on-sigint': 'default',
    'shutdown-on-sigterm': 'default',
    'shutdown-timeout': '10',
    'slave-announce-ip': '',
    'slave-announce-port': '0',
    'slave-ignore-maxmemory': 'yes',
    'slave-lazy-flush': 'no',
    'slave-priority': '100',
    'slave-read-only': 'yes',
    'slave-serve-stale-data': 'yes',
    'slaveof': '',
    'slowlog-log-slower-than': '10000',
    'slowlog-max-len': '128',
    'socket-mark-id': '0',
    'stop-writes-on-bgsave-error': 'yes',
    'stream-node-max-bytes': '4096',
    'stream-node-max-entries': '100',
    'supervised': 'no',
    'syslog-enabled': 'no',
    'syslog-facility': 'local0',
    'syslog-ident': 'redis',
    'tcp-backlog': '511',
    'tcp-keepalive': '300',
    'timeout': '0',
    'tls-auth-clients': 'yes',
    'tls-ca-cert-dir': '',
    'tls-ca-cert-file': '',
    'tls-cert-file': '',
    'tls-ciphers': '',
    'tls-ciphersuites': '',
    'tls-client-cert-file': '',
    'tls-client-key-file': '',
    'tls-client-key-file-pass': '',
    'tls-cluster': 'no',
    'tls-dh-params-file': '',
    'tls-key-file': '',
    'tls-key-file-pass': '',
    'tls-port': '0',
    'tls-prefer-server-ciphers': 'no',
    'tls-protocols': '',
    'tls-replication': 'no',
    'tls-session-cache-size': '20480',
    'tls-session-cache-timeout': '300',
    'tls-session-caching': 'yes',
    'tracking-table-max-keys': '1000000',
    'unixsocket': '',
    'unixsocketperm': '0',
    'zset-max-listpack-entries': '128',
    'zset-max-listpack-value': '64',
    'zset-max-ziplist-entries': '128',
    'zset-max-ziplist-value': '64',
}
# Where Spinel's defaults are its own: memcached's connection limit, a memory-bounded
# store that evicts by default (-m 64), its listen backlog and its threads (-t).
SPINEL_DIFFERS = {"maxclients", "maxmemory", "maxmemory-policy", "tcp-backlog", "io-threads"}


@pytest.fixture
def fresh(make_server):
    server = make_server()
    with Conn(server.resp_port) as conn:
        yield conn


def config_get(conn, pattern):
    conn.send(resp_encode("CONFIG", "GET", pattern))
    flat = read_value(conn)
    return {flat[i].decode(): flat[i + 1].decode() for i in range(0, len(flat), 2)}


def failed(name, why):
    return f"-ERR CONFIG SET failed (possibly related to argument '{name}') - {why}\r\n".encode()


def test_every_parameter_listed_with_redis_default(fresh, target):
    listed = config_get(fresh, "*")
    missing = sorted(set(REDIS_70_DEFAULTS) - set(listed))
    assert not missing, missing
    differ = {name: (listed[name], default) for name, default in REDIS_70_DEFAULTS.items()
              if listed[name] != default and (target == "redis" or name not in SPINEL_DIFFERS)}
    assert not differ, differ
    # Hidden ones only by their exact names.
    for name, default in [("watchdog-period", "0"), ("use-exit-on-panic", "no"),
                          ("lua-enable-deprecated-api", "no"),
                          ("loading-process-events-interval-bytes", "2097152")]:
        assert name not in listed
        assert config_get(fresh, name) == {name: default}


NOT_INT = "argument couldn't be parsed into an integer"
MEMORY = "argument must be a memory value"
IMMUTABLE = "can't set immutable config"


def between(low, high):
    return f"argument must be between {low} and {high} inclusive"


def one_of(*words):
    return "argument(s) must be one of the following: " + ", ".join(words)


# (name, value, None if accepted else Redis's reason, what CONFIG GET shows after).
CASES = [
    ("rdbcompression", "maybe", "argument must be 'yes' or 'no'", "yes"),
    ("rdbcompression", "NO", None, "no"),
    ("rdbchecksum", "yes", IMMUTABLE, "yes"),
    ("daemonize", "no", IMMUTABLE, "no"),
    ("databases", "16", IMMUTABLE, "16"),
    ("cluster-enabled", "no", IMMUTABLE, "no"),
    ("hz", "abc", NOT_INT, "10"),
    ("hz", "-1", between(0, 2147483647), "10"),
    ("hz", "2147483648", between(0, 2147483647), "10"),
    ("hz", "100", None, "100"),
    ("hz", "0", None, "1"),  # clamped to 1..500, as Redis uses and shows it
    ("hz", "1000", None, "500"),
    ("active-defrag-cycle-min", "0", between(1, 99), "1"),
    ("active-defrag-cycle-max", "100", between(1, 99), "25"),
    ("maxmemory-eviction-tenacity", "101", between(0, 100), "10"),
    ("loglevel", "loud", one_of("debug", "verbose", "notice", "warning"), "notice"),
    ("loglevel", "WARNING", None, "warning"),
    ("appendfsync", "sometimes", one_of("everysec", "always", "no"), "everysec"),
    ("oom-score-adj-values", "1 2", "wrong number of arguments", "0 200 800"),
    ("oom-score-adj-values", "1 2 2001",
     "Invalid oom-score-adj-values, elements must be between -2000 and 2000.", "0 200 800"),
    ("oom-score-adj-values", "0 300 900", None, "0 300 900"),
    ("oom-score-adj", "x", one_of("no", "yes", "relative", "absolute"), "no"),
    ("acl-pubsub-default", "x", one_of("allchannels", "resetchannels"), "resetchannels"),
    ("repl-diskless-load", "x", one_of("disabled", "on-empty-db", "swapdb"), "disabled"),
    ("cluster-preferred-endpoint-type", "x", one_of("ip", "hostname", "unknown-endpoint"),
     "ip"),
    ("propagation-error-behavior", "x", one_of("ignore", "panic", "panic-on-replicas"),
     "ignore"),
    ("shutdown-on-sigterm", "now save", None, "save now"),
    ("shutdown-on-sigterm", "save nosave",
     "shutdown options SAVE and NOSAVE can't be used simultaneously", "save now"),
    ("shutdown-on-sigterm", "x", one_of("default", "save", "nosave", "now", "force"),
     "save now"),
    ("activedefrag", "yes", "Active defragmentation cannot be enabled: it requires a Redis "
     "server compiled with a modified Jemalloc like the one shipped by default with the "
     "Redis source distribution", "no"),
    ("activedefrag", "no", None, "no"),
    ("slave-read-only", "no", None, "no"),
    ("slave-priority", "7", None, "7"),
    ("repl-timeout", "0", between(1, 2147483647), "60"),
    ("tcp-keepalive", "-1", between(0, 2147483647), "300"),
    ("hll-sparse-max-bytes", "1k", None, "1000"),
    ("hll-sparse-max-bytes", "-1", MEMORY, "1000"),
    ("active-defrag-ignore-bytes", "0", between(1, I64_MAX), "104857600"),
    ("auto-aof-rewrite-min-size", "1gb", None, "1073741824"),
    ("repl-backlog-ttl", "-1", between(0, I64_MAX), "3600"),
    ("cluster-link-sendbuf-limit", "18446744073709551615", None, "18446744073709551615"),
    ("active-defrag-max-scan-fields", "0", between(1, I64_MAX), "1000"),
    ("cluster-node-timeout", "-1", between(0, I64_MAX), "15000"),
    ("client-output-buffer-limit", "normal 1 2",
     "Wrong number of arguments in buffer limit configuration.",
     "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"),
    ("client-output-buffer-limit", "master 1 2 3",
     "Invalid client class specified in buffer limit configuration.",
     "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"),
    ("client-output-buffer-limit", "pubsub 1 2 x",
     "Error in hard, soft or soft_seconds setting in buffer limit configuration.",
     "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"),
    ("client-output-buffer-limit", "replica 1mb 2 3", None,
     "normal 0 0 0 slave 1048576 2 3 pubsub 33554432 8388608 60"),
    ("proc-title-template", "{bad}",
     "template format is invalid or contains unknown variables",
     "{title} {listen-addr} {server-mode}"),
    ("proc-title-template", "{title}",
     "template format is invalid or contains unknown variables",
     "{title} {listen-addr} {server-mode}"),
    ("proc-title-template", "", "template format is invalid or contains unknown variables",
     "{title} {listen-addr} {server-mode}"),
    ("proc-title-template", "{title} {port}", None, "{title} {port}"),
    ("cluster-announce-hostname", "a b",
     "Hostnames may only contain alphanumeric characters, hyphens or dots", ""),
    ("cluster-announce-hostname", "host-1.example", None, "host-1.example"),
    ("masterauth", "secret", None, "secret"),
    ("replica-announce-ip", "10.0.0.1", None, "10.0.0.1"),
    ("unixsocketperm", "700", IMMUTABLE, "0"),
    ("supervised", "no", IMMUTABLE, "no"),
    ("appendfilename", "x.aof", IMMUTABLE, "appendonly.aof"),
    ("logfile", "", IMMUTABLE, ""),
    ("cluster-port", "0", IMMUTABLE, "0"),
    ("enable-debug-command", "yes", IMMUTABLE, "no"),
    ("lua-enable-deprecated-api", "no", IMMUTABLE, "no"),
    ("watchdog-period", "0", None, "0"),
    ("loading-process-events-interval-bytes", "1023", between(1024, 2147483647), "2097152"),
    ("maxmemory-samples", "100000", None, "100000"),
    ("maxmemory-samples", "0", between(1, 2147483647), "100000"),
    ("repl-backlog-size", "1k", None, "16384"),  # raised to Redis's 16 KiB minimum
    ("proto-max-bulk-len", "1k", between(1048576, I64_MAX), "536870912"),
    ("proto-max-bulk-len", "x", MEMORY, "536870912"),
]


def test_config_set_checks_as_redis(fresh):
    for name, value, why, shown in CASES:
        expected = b"+OK\r\n" if why is None else failed(name, why)
        fresh.rt(resp_encode("CONFIG", "SET", name, value), expected)
        assert config_get(fresh, name) == {name: shown}, (name, value)


def test_alias_sets_the_parameter(fresh):
    fresh.rt(resp_encode("CONFIG", "SET", "min-slaves-to-write", "3"), b"+OK\r\n")
    assert config_get(fresh, "min-*-to-write") == {
        "min-replicas-to-write": "3", "min-slaves-to-write": "3"}
    fresh.rt(resp_encode("CONFIG", "SET", "min-replicas-max-lag", "1", "min-slaves-max-lag", "2"),
             b"+OK\r\n")
    assert config_get(fresh, "min-replicas-max-lag") == {"min-replicas-max-lag": "2"}
    # One bad pair refuses the whole command.
    fresh.rt(resp_encode("CONFIG", "SET", "lfu-log-factor", "5", "lfu-decay-time", "x"),
             failed("lfu-decay-time", NOT_INT))
    assert config_get(fresh, "lfu-log-factor") == {"lfu-log-factor": "10"}


REDIS_CONF = """# a redis.conf as an operator writes one
hash-max-listpack-entries 64
hz 20
save 900 1
save 300 10
client-output-buffer-limit pubsub 64mb 16mb 90
loglevel warning
proc-title-template "{title} {port}"
slave-priority 7
appendfsync always
"""


def conf_flag(target, path):
    # redis-server reads command-line options as config lines: `--include FILE` reads it.
    return ["--include", str(path)] if target == "redis" else ["--redis-conf", str(path)]


def test_redis_conf_file(make_server, target, tmp_path):
    path = tmp_path / "redis.conf"
    path.write_text(REDIS_CONF)
    server = make_server(extra=conf_flag(target, path))
    with Conn(server.resp_port) as conn:
        got = {}
        for name in ["hash-max-listpack-entries", "hash-max-ziplist-entries", "hz", "save",
                     "client-output-buffer-limit", "loglevel", "proc-title-template",
                     "replica-priority", "appendfsync"]:
            got.update(config_get(conn, name))
    assert got == {
        "hash-max-listpack-entries": "64", "hash-max-ziplist-entries": "64", "hz": "20",
        "save": "900 1 300 10",
        "client-output-buffer-limit":
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 67108864 16777216 90",
        "loglevel": "warning", "proc-title-template": "{title} {port}", "replica-priority": "7",
        "appendfsync": "always"}


@pytest.mark.parametrize("line", ["hz -1", "nosuch-parameter 1", "loglevel loud"])
def test_redis_conf_refused_line_stops_the_start(make_server, target, tmp_path, line):
    path = tmp_path / "redis.conf"
    path.write_text(f"hz 20\n{line}\n")
    with pytest.raises(pytest.fail.Exception, match="exited with") as refused:
        make_server(extra=conf_flag(target, path))
    # Both name the line.
    assert "line 2" in str(refused.value) or "redis.conf:2: " in str(refused.value)


USERS_AND_RENAMES = """\
rename-command CONFIG cfg9
rename-command flushall ""
user alice on ">pa ss" ~app:* +@all
user default on nopass ~* +@all
"""


def test_redis_conf_users_and_renamed_commands(make_server, target, tmp_path):
    path = tmp_path / "redis.conf"
    path.write_text(USERS_AND_RENAMES)
    server = make_server(extra=conf_flag(target, path))
    with Conn(server.resp_port) as conn:
        def call(*args):
            conn.send(resp_encode(*args))
            return read_value(conn)

        assert call("CONFIG", "GET", "hz") == \
            "ERR unknown command 'CONFIG', with args beginning with: 'GET' 'hz' "
        assert call("FLUSHALL") == "ERR unknown command 'FLUSHALL', with args beginning with: "
        assert call("cfg9", "GET", "hz") == [b"hz", b"10"]
        # COMMAND INFO finds it by its new name and shows its own; ACL rules keep that one.
        assert call("COMMAND", "INFO", "cfg9")[0][:2] == [b"config", -2]
        assert call("ACL", "LIST") == [
            b"user alice on #e5a47171141c1f30759959a0830ef9745c5b348e80e28cc110d515ab18c7a8f4 "
            b"~app:* resetchannels +@all",
            b"user default on nopass sanitize-payload ~* resetchannels +@all"]
        assert call("AUTH", "alice", "pa ss") == "OK"
        assert call("ACL", "DRYRUN", "alice", "cfg9", "get", "hz") == "OK"
        assert call("ACL", "DRYRUN", "alice", "config", "get", "hz") == \
            "ERR Command 'config' not found"


@pytest.mark.parametrize("line", ["rename-command nosuch x", "rename-command get set",
                                  "rename-command get", "user", "user bob on nosuchrule"])
def test_redis_conf_refused_user_or_rename_stops_the_start(make_server, target, tmp_path, line):
    path = tmp_path / "redis.conf"
    path.write_text(f"hz 20\n{line}\n")
    with pytest.raises(pytest.fail.Exception, match="exited with"):
        make_server(extra=conf_flag(target, path))
