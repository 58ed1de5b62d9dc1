"""Introspection on the Redis port, as Redis 7.0's own `introspection` units check it:
INFO commandstats (calls, rejected and failed calls, commands run by EXEC and by scripts),
TOUCH, CONFIG SET of several parameters at once and its rollback, hidden and aliased
parameters in CONFIG GET, and CLIENT INFO's `qbuf`.

The expectations are what redis-server 7.0 does (validated with CONFORMANCE_TARGET=redis).
Tests that read exact counts start a server of their own.
"""

import re
import socket
import time

import pytest

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

CMDSTAT = re.compile(r"calls=(\d+),usec=(\d+),usec_per_call=(\d+\.\d\d),"
                     r"rejected_calls=(\d+),failed_calls=(\d+)$")


@pytest.fixture
def fresh(make_server):
    """A connection to a server of this test's own."""
    server = make_server()
    with Conn(server.resp_port) as conn:
        yield conn


def bulk(conn, *args):
    conn.send(resp_encode(*args))
    head = conn.read_line()
    assert head[:1] in (b"$", b"="), head
    return conn.read_exact(int(head[1:-2]) + 2)[:-2]


def cmdstats(conn):
    """{command: (calls, rejected_calls, failed_calls)} of INFO commandstats."""
    text = bulk(conn, "INFO", "commandstats").decode()
    assert text.startswith("# Commandstats\r\n"), text
    stats = {}
    for line in text.split("\r\n")[1:]:
        if not line:
            continue
        name, _, value = line.partition(":")
        match = CMDSTAT.match(value)
        assert name.startswith("cmdstat_") and match, line
        calls, usec, per_call, rejected, failed = match.groups()
        assert int(usec) >= 0 and float(per_call) >= 0
        stats[name[len("cmdstat_"):]] = (int(calls), int(rejected), int(failed))
    return stats


def test_commandstats_calls_rejected_failed(fresh):
    c = fresh
    c.rt(resp_encode("CONFIG", "RESETSTAT"), b"+OK\r\n")
    c.rt(resp_encode("SET", "foo", "bar"), b"+OK\r\n")
    c.rt(resp_encode("EXPIRE", "foo", "0"), b":1\r\n")
    c.rt(resp_encode("SET", "s", "1"), b"+OK\r\n")
    c.rt(resp_encode("LPUSH", "s", "x"),
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n")
    c.rt(resp_encode("GET"), b"-ERR wrong number of arguments for 'get' command\r\n")
    stats = cmdstats(c)
    assert stats["set"] == (2, 0, 0)
    assert stats["expire"] == (1, 0, 0)
    assert stats["lpush"] == (1, 0, 1)
    assert stats["get"] == (0, 1, 0)
    # EXPIRE 0 deleted the key: no DEL is counted for it.
    assert "del" not in stats
    # Not in the default INFO; named by `all`.
    assert b"# Commandstats" not in bulk(c, "INFO")
    assert b"# Commandstats\r\ncmdstat_" in bulk(c, "INFO", "all")
    c.rt(resp_encode("CONFIG", "RESETSTAT"), b"+OK\r\n")
    assert set(cmdstats(c)) <= {"config", "config|resetstat"}


def test_commandstats_count_exec_and_script_commands(fresh):
    c = fresh
    c.rt(resp_encode("CONFIG", "RESETSTAT"), b"+OK\r\n")
    c.rt(resp_encode("MULTI"), b"+OK\r\n")
    c.rt(resp_encode("SET", "foo{t}", "bar"), b"+QUEUED\r\n")
    c.rt(resp_encode("EXPIRE", "foo{t}", "0"), b"+QUEUED\r\n")
    c.rt(resp_encode("EXEC"), b"*2\r\n+OK\r\n:1\r\n")
    script = "redis.call('set', KEYS[1], 0) redis.call('expire', KEYS[1], 0)"
    c.rt(resp_encode("EVAL", script, "1", "mykey"), b"$-1\r\n")
    c.rt(resp_encode("LPUSH", "list", "foo"), b":1\r\n")
    c.rt(resp_encode("BRPOP", "list", "0"), b"*2\r\n$4\r\nlist\r\n$3\r\nfoo\r\n")
    stats = cmdstats(c)
    for name, calls in [("multi", 1), ("exec", 1), ("set", 2), ("expire", 2), ("eval", 1),
                        ("brpop", 1)]:
        assert stats[name][0] == calls, name
    assert "rpop" not in stats


def test_touch_counts_keys_and_resets_idle_time(fresh):
    c = fresh
    c.rt(resp_encode("SET", "key1{t}", "1"), b"+OK\r\n")
    c.rt(resp_encode("SET", "key2{t}", "2"), b"+OK\r\n")
    c.rt(resp_encode("TOUCH", "key0{t}", "key1{t}", "key2{t}", "key3{t}", "key1{t}"), b":3\r\n")
    c.rt(resp_encode("TOUCH"), b"-ERR wrong number of arguments for 'touch' command\r\n")
    time.sleep(2.2)
    # TTL, TYPE and EXISTS leave the access time alone; TOUCH moves it.
    c.rt(resp_encode("TYPE", "key1{t}"), b"+string\r\n")
    c.send(resp_encode("OBJECT", "IDLETIME", "key1{t}"))
    assert int(c.read_line()[1:-2]) >= 2
    c.rt(resp_encode("TOUCH", "key1{t}"), b":1\r\n")
    # Access times are whole seconds in Spinel's store (a 2-byte stamp per item): a second
    # boundary between TOUCH and this read shows 1 (Redis keeps milliseconds and shows 0).
    c.send(resp_encode("OBJECT", "IDLETIME", "key1{t}"))
    assert c.read_line() in (b":0\r\n", b":1\r\n")


def failed(name, why):
    return (b"-ERR CONFIG SET failed (possibly related to argument '%s') - %s\r\n"
            % (name.encode(), why.encode()))


def config_get(c, name):
    c.send(resp_encode("CONFIG", "GET", name))
    assert c.read_line() == b"*2\r\n"
    c.read_line(), c.read_line()
    c.read_line()
    return c.read_line()[:-2]


def test_config_set_several_and_rollback(fresh):
    c = fresh
    c.rt(resp_encode("CONFIG", "SET", "maxmemory", "10000001", "repl-backlog-size", "10000002",
                     "save", "3000 5"), b"+OK\r\n")
    assert config_get(c, "maxmemory") == b"10000001"
    assert config_get(c, "repl-backlog-size") == b"10000002"
    assert config_get(c, "save") == b"3000 5"
    c.rt(resp_encode("CONFIG", "SET", "save", "3000"), failed("save", "Invalid save parameters"))
    c.rt(resp_encode("CONFIG", "SET", "repl-backlog-size", "0"),
         failed("repl-backlog-size", "argument must be between 1 and 9223372036854775807 "
                                     "inclusive"))
    # The first bad value is the answer; nothing of the command is applied.
    c.rt(resp_encode("CONFIG", "SET", "maxmemory", "10000003", "maxmemory-clients", "200%",
                     "client-query-buffer-limit", "invalid"),
         failed("maxmemory-clients", "percentage argument must be less or equal to 100"))
    c.rt(resp_encode("CONFIG", "SET", "maxmemory-clients", "-1"),
         failed("maxmemory-clients", "argument must be a memory or percent value"))
    c.rt(resp_encode("CONFIG", "SET", "client-query-buffer-limit", "1023"),
         failed("client-query-buffer-limit", "argument must be between 1048576 and "
                                             "9223372036854775807 inclusive"))
    assert config_get(c, "maxmemory") == b"10000001"
    assert config_get(c, "maxmemory-clients") == b"0"
    assert config_get(c, "client-query-buffer-limit") == b"1073741824"
    c.rt(resp_encode("CONFIG", "SET", "maxmemory-clients", "50%", "client-query-buffer-limit",
                     "10mb"), b"+OK\r\n")
    assert config_get(c, "maxmemory-clients") == b"50%"
    assert config_get(c, "client-query-buffer-limit") == b"10485760"
    c.rt(resp_encode("CONFIG", "SET", "save", ""), b"+OK\r\n")


def test_config_set_port_in_use_and_immutable(fresh):
    c = fresh
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        port = str(busy.getsockname()[1])
        c.rt(resp_encode("CONFIG", "SET", "maxmemory", "10000001", "port", port,
                         "client-query-buffer-limit", "10m"),
             failed("port", "Unable to listen on this port. Check server logs."))
    finally:
        busy.close()
    assert config_get(c, "maxmemory") != b"10000001"
    assert config_get(c, "client-query-buffer-limit") == b"1073741824"
    c.rt(resp_encode("CONFIG", "SET", "daemonize", "yes"),
         failed("daemonize", "can't set immutable config"))
    c.rt(resp_encode("CONFIG", "SET", "replicaof", "no one"),
         failed("replicaof", "can't set immutable config"))
    c.rt(resp_encode("PING"), b"+PONG\r\n")


def test_config_get_hidden_and_aliases(fresh):
    c = fresh
    c.rt(resp_encode("CONFIG", "GET", "key-load-delay"),
         b"*2\r\n$14\r\nkey-load-delay\r\n$1\r\n0\r\n")
    c.rt(resp_encode("CONFIG", "GET", "key-load-*"), b"*0\r\n")
    c.send(resp_encode("CONFIG", "GET", "*"))
    count = int(c.read_line()[1:-2])
    names = []
    for _ in range(count):
        c.read_line()
        names.append(c.read_line()[:-2])
    assert b"key-load-delay" not in names[0::2]
    c.send(resp_encode("CONFIG", "GET", "maxmemory", "maxmemory*", "bind", "*of"))
    count = int(c.read_line()[1:-2])
    got = {}
    for _ in range(count // 2):
        c.read_line()
        name = c.read_line()[:-2]
        c.read_line()
        got[name] = c.read_line()[:-2]
    assert len(got) * 2 == count
    assert got[b"slaveof"] == b"" and got[b"replicaof"] == b""
    for name in [b"maxmemory", b"maxmemory-samples", b"maxmemory-clients", b"bind"]:
        assert name in got, name


def test_client_info_qbuf_is_the_command(fresh):
    c = fresh
    line = bulk(c, "CLIENT", "INFO").decode()
    assert " qbuf=26 " in line, line
    listed = bulk(c, "CLIENT", "LIST").decode()
    assert " qbuf=26 " in listed and " cmd=client|list " in listed, listed
