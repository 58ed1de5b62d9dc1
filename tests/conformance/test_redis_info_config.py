"""INFO and CONFIG on the Redis port: INFO's sections, fields and reply types, the counters
behind them, CONFIG SET of maxmemory and maxmemory-policy, CONFIG SET's errors, RESETSTAT.

The expectations are what redis-server 7.0 does (validated with CONFORMANCE_TARGET=redis).
Tests that read exact counts start a server of their own.
"""

import time

import pytest
import redis

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

DEFAULT_SECTIONS = ["Server", "Clients", "Memory", "Persistence", "Stats", "Replication",
                    "CPU", "Modules", "Errorstats", "Cluster", "Keyspace"]
# What `INFO all` adds in Redis 7.0 and Spinel does not have.
ALL_ONLY_SECTIONS = {"Commandstats", "Latencystats"}
OOM = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
POLICIES = ["volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "allkeys-lru",
            "allkeys-lfu", "allkeys-random", "noeviction"]


def read_bulk(conn, command):
    """Sends a command whose reply is a bulk (RESP2) or verbatim (RESP3) string; returns
    (type byte, body)."""
    conn.send(command)
    head = conn.read_line()
    body = conn.read_exact(int(head[1:-2]) + 2)
    assert body.endswith(b"\r\n")
    return head[:1], body[:-2]


def sections(text):
    """INFO text -> [(section title, {field: value})] in order."""
    out = []
    for line in text.decode().split("\r\n"):
        if line.startswith("# "):
            out.append((line[2:], {}))
        elif line:
            name, _, value = line.partition(":")
            out[-1][1][name] = value
    return out


def info(conn, *names):
    _, text = read_bulk(conn, resp_encode("INFO", *names))
    return sections(text)


def fields(conn, *names):
    merged = {}
    for _, section in info(conn, *names):
        merged.update(section)
    return merged


@pytest.fixture
def c(resp_port):
    with Conn(resp_port) as conn:
        yield conn


@pytest.fixture
def fresh(make_server):
    """A connection to a server of this test's own, and the server."""
    server = make_server()
    with Conn(server.resp_port) as conn:
        yield conn, server


def client(port):
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5)


# ------------------------------------------------------------------------------------------
# INFO


def test_default_info_sections_in_order(c):
    for names in [(), ("default",), ("DEFAULT",)]:
        assert [title for title, _ in info(c, *names)] == DEFAULT_SECTIONS
    # Sections are separated by one empty line; the text ends with the last section's CRLF.
    _, text = read_bulk(c, resp_encode("INFO"))
    assert b"\r\n\r\n# Modules\r\n\r\n# Errorstats\r\n" in text
    assert text.endswith(b"\r\n") and not text.endswith(b"\r\n\r\n")


def test_info_fields_clients_read(c, shared_server):
    got = fields(c)
    for name in ["redis_version", "redis_mode", "os", "arch_bits", "process_id", "tcp_port",
                 "uptime_in_seconds", "connected_clients", "used_memory", "used_memory_human",
                 "maxmemory", "maxmemory_human", "maxmemory_policy", "loading",
                 "rdb_changes_since_last_save", "aof_enabled", "total_connections_received",
                 "total_commands_processed", "keyspace_hits", "keyspace_misses",
                 "expired_keys", "evicted_keys", "total_error_replies", "role",
                 "connected_slaves", "used_cpu_sys", "used_cpu_user", "cluster_enabled"]:
        assert name in got, name
    assert int(got["redis_version"].split(".")[0]) >= 7
    assert got["redis_mode"] == "standalone"
    assert got["os"].startswith("Linux ")
    assert got["arch_bits"] == "64"
    assert int(got["process_id"]) == shared_server.pid
    assert int(got["tcp_port"]) == shared_server.resp_port
    assert int(got["connected_clients"]) >= 1
    assert int(got["used_memory"]) > 0
    assert got["used_memory_human"][-1] in "BKMG"
    assert got["maxmemory_policy"] in POLICIES
    assert (got["loading"], got["aof_enabled"], got["role"]) == ("0", "0", "master")
    assert (got["connected_slaves"], got["cluster_enabled"]) == ("0", "0")
    assert int(got["total_connections_received"]) >= 1
    assert float(got["used_cpu_sys"]) + float(got["used_cpu_user"]) >= 0


def test_info_named_sections(c):
    assert [t for t, _ in info(c, "server", "clients")] == ["Server", "Clients"]
    # Any case, any order, unknown names ignored: Redis's order comes back.
    assert [t for t, _ in info(c, "CLIENTS", "nosuch", "Server")] == ["Server", "Clients"]
    assert [t for t, _ in info(c, "cpu", "CPU")] == ["CPU"]
    c.rt(resp_encode("INFO", "nosuch"), b"$0\r\n\r\n")
    c.rt(resp_encode("INFO", "cluster"), b"$30\r\n# Cluster\r\ncluster_enabled:0\r\n\r\n")
    c.rt(resp_encode("INFO", "modules"), b"$11\r\n# Modules\r\n\r\n")


def test_info_all_and_everything(c):
    for name in ["all", "everything", "ALL"]:
        titles = [t for t, _ in info(c, name)]
        assert [t for t in titles if t in DEFAULT_SECTIONS] == DEFAULT_SECTIONS
        assert set(titles) - set(DEFAULT_SECTIONS) <= ALL_ONLY_SECTIONS


def test_info_is_verbatim_in_resp3(c):
    kind, body = read_bulk(c, resp_encode("INFO", "cluster"))
    assert (kind, body) == (b"$", b"# Cluster\r\ncluster_enabled:0\r\n")
    c.send(resp_encode("HELLO", "3"))
    assert c.read_line().startswith(b"%")
    c.send(resp_encode("PING"))  # skip the rest of HELLO's map: wait for PING's reply
    c.read_until(b"+PONG\r\n")
    c.rt(resp_encode("INFO", "cluster"), b"=34\r\ntxt:# Cluster\r\ncluster_enabled:0\r\n\r\n")
    c.rt(resp_encode("INFO", "nosuch"), b"=4\r\ntxt:\r\n")
    kind, body = read_bulk(c, resp_encode("INFO"))
    assert kind == b"=" and body.startswith(b"txt:# Server\r\n")


def test_keyspace_lines(fresh):
    c, _ = fresh
    c.rt(resp_encode("INFO", "keyspace"), b"$12\r\n# Keyspace\r\n\r\n")
    c.rt(resp_encode("SET", "a", "1"), b"+OK\r\n")
    c.rt(resp_encode("SET", "b", "2"), b"+OK\r\n")
    c.rt(resp_encode("SET", "c", "3", "EX", "100"), b"+OK\r\n")
    c.rt(resp_encode("EXPIRE", "a", "100"), b":1\r\n")
    c.rt(resp_encode("SELECT", "3"), b"+OK\r\n")
    c.rt(resp_encode("SET", "x", "1"), b"+OK\r\n")
    keyspace = info(c, "keyspace")[0][1]
    # avg_ttl is Redis's sample of its expiry cycle; only its presence is checked.
    assert sorted(keyspace) == ["db0", "db3"]
    assert keyspace["db0"].startswith("keys=3,expires=2,avg_ttl=")
    assert keyspace["db3"].startswith("keys=1,expires=0,avg_ttl=")


def test_hits_and_misses(fresh):
    c, _ = fresh
    c.rt(resp_encode("SET", "k", "v"), b"+OK\r\n")
    c.rt(resp_encode("GET", "k"), b"$1\r\nv\r\n")
    c.rt(resp_encode("GET", "nope"), b"$-1\r\n")
    c.rt(resp_encode("MGET", "k", "nope", "nope2"), b"*3\r\n$1\r\nv\r\n$-1\r\n$-1\r\n")
    got = fields(c, "stats")
    assert (got["keyspace_hits"], got["keyspace_misses"]) == ("2", "3")


def test_errorstats(fresh):
    c, _ = fresh
    c.rt(resp_encode("NOSUCH"), b"-ERR unknown command 'NOSUCH', with args beginning with: \r\n")
    c.rt(resp_encode("GET"), b"-ERR wrong number of arguments for 'get' command\r\n")
    c.rt(resp_encode("HELLO", "4"), b"-NOPROTO unsupported protocol version\r\n")
    c.rt(resp_encode("INFO", "errorstats"),
         b"$64\r\n# Errorstats\r\nerrorstat_ERR:count=2\r\nerrorstat_NOPROTO:count=1\r\n\r\n")
    assert fields(c, "stats")["total_error_replies"] == "3"


# ------------------------------------------------------------------------------------------
# CONFIG


def test_maxmemory_round_trip(fresh):
    c, server = fresh
    r = client(server.resp_port)
    try:
        assert r.config_set("maxmemory", "16mb") is True
        assert r.config_get("maxmemory") == {"maxmemory": "16777216"}
        got = fields(c, "memory")
        assert (got["maxmemory"], got["maxmemory_human"]) == ("16777216", "16.00M")
        assert r.config_set("maxmemory", "100MB") is True
        assert r.config_get("maxmemory") == {"maxmemory": "104857600"}
        for policy in POLICIES:
            assert r.config_set("maxmemory-policy", policy.upper()) is True
            assert r.config_get("maxmemory-policy") == {"maxmemory-policy": policy}
            assert fields(c, "memory")["maxmemory_policy"] == policy
        assert r.config_set("maxmemory", "0") is True
        assert r.config_get("maxmemory") == {"maxmemory": "0"}
    finally:
        r.close()


def fill(c, count, value_bytes=1024, prefix="fill"):
    """SETs `count` keys in one pipeline; returns their replies."""
    value = b"v" * value_bytes
    c.send(b"".join(resp_encode("SET", f"{prefix}{i}", value) for i in range(count)))
    replies = []
    for _ in range(count):
        line = c.read_line(timeout=20)
        replies.append(line)
    return replies


def test_small_maxmemory_noeviction_refuses_with_oom(fresh):
    c, _ = fresh
    c.rt(resp_encode("SET", "early", "kept"), b"+OK\r\n")
    c.rt(resp_encode("CONFIG", "SET", "maxmemory-policy", "noeviction", "maxmemory", "4mb"),
         b"+OK\r\n")
    replies = fill(c, 16_000)
    assert replies[0] == b"+OK\r\n"
    assert OOM in replies, set(replies)
    assert set(replies) <= {b"+OK\r\n", OOM}
    c.rt(resp_encode("GET", "early"), b"$4\r\nkept\r\n")
    c.rt(resp_encode("SET", "late", "x"), OOM)
    assert fields(c, "stats")["evicted_keys"] == "0"
    # Raised again, writes are taken.
    c.rt(resp_encode("CONFIG", "SET", "maxmemory", "64mb"), b"+OK\r\n")
    c.rt(resp_encode("SET", "late", "x"), b"+OK\r\n")


def test_small_maxmemory_allkeys_lru_evicts_and_resetstat(fresh):
    c, _ = fresh
    c.rt(resp_encode("CONFIG", "SET", "maxmemory", "4mb", "maxmemory-policy", "allkeys-lru"),
         b"+OK\r\n")
    replies = fill(c, 16_000)
    assert set(replies) == {b"+OK\r\n"}
    c.send(resp_encode("DBSIZE"))
    assert 0 < int(c.read_line()[1:-2]) < 16_000
    assert int(fields(c, "stats")["evicted_keys"]) > 0
    c.rt(resp_encode("CONFIG", "RESETSTAT"), b"+OK\r\n")
    assert fields(c, "stats")["evicted_keys"] == "0"


def test_config_set_errors(c):
    def failed(name, why):
        return (b"-ERR CONFIG SET failed (possibly related to argument '%s') - %s\r\n"
                % (name.encode(), why.encode()))

    policies = "argument(s) must be one of the following: " + ", ".join(POLICIES)
    c.send(resp_encode("CONFIG", "GET", "maxmemory"))
    before = b"".join(c.read_line() for _ in range(5))
    table = [
        (("nosuch", "1"), b"-ERR Unknown option or number of arguments for CONFIG SET - "
                          b"'nosuch'\r\n"),
        (("maxmemory", "abc"), failed("maxmemory", "argument must be a memory value")),
        (("MAXMEMORY", "1.5mb"), failed("maxmemory", "argument must be a memory value")),
        (("maxmemory", "-1"), failed("maxmemory", "argument must be a memory value")),
        (("maxmemory-policy", "foo"), failed("maxmemory-policy", policies)),
        (("DATABASES", "4"), failed("DATABASES", "can't set immutable config")),
        (("maxmemory", "1mb", "MAXMEMORY", "2mb"), failed("MAXMEMORY", "duplicate parameter")),
        (("maxmemory", "5mb", "nosuch", "2"), b"-ERR Unknown option or number of arguments "
                                              b"for CONFIG SET - 'nosuch'\r\n"),
        (("maxmemory", "abc", "databases", "4"), failed("databases", "can't set immutable config")),
        (("maxmemory", "1gb", "maxmemory-policy", "foo"), failed("maxmemory-policy", policies)),
        (("maxmemory",), b"-ERR wrong number of arguments for 'config|set' command\r\n"),
    ]
    for args, reply in table:
        c.rt(resp_encode("CONFIG", "SET", *args), reply)
    c.rt(resp_encode("CONFIG", "RESETSTAT", "x"),
         b"-ERR wrong number of arguments for 'config|resetstat' command\r\n")
    # No refused CONFIG SET changed anything.
    c.rt(resp_encode("CONFIG", "GET", "maxmemory"), before)


def test_resetstat_zeroes_counters(fresh):
    c, _ = fresh
    c.rt(resp_encode("SET", "k", "v"), b"+OK\r\n")
    c.rt(resp_encode("SET", "short", "v", "PX", "20"), b"+OK\r\n")
    time.sleep(0.2)
    c.rt(resp_encode("GET", "short"), b"$-1\r\n")
    c.rt(resp_encode("GET", "k"), b"$1\r\nv\r\n")
    c.rt(resp_encode("NOSUCH"), b"-ERR unknown command 'NOSUCH', with args beginning with: \r\n")
    before = fields(c, "stats", "errorstats")
    assert before["keyspace_hits"] == "1" and before["keyspace_misses"] == "1"
    assert before["expired_keys"] == "1"
    assert before["errorstat_ERR"] == "count=1"
    c.rt(resp_encode("CONFIG", "RESETSTAT"), b"+OK\r\n")
    after = fields(c, "stats", "errorstats")
    for name in ["keyspace_hits", "keyspace_misses", "expired_keys", "evicted_keys",
                 "total_error_replies", "rejected_connections"]:
        assert after[name] == "0", name
    assert "errorstat_ERR" not in after
    # Counted from the reset on: this INFO and at most RESETSTAT itself.
    assert int(after["total_commands_processed"]) <= 2
