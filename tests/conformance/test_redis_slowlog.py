"""SLOWLOG and LATENCY as redis-server 7.0 answers them (these pass with
CONFORMANCE_TARGET=redis): entries with id, time, duration, arguments (cut as Redis cuts
them), client address and name; GET with a count, LEN, RESET, slowlog-max-len; the latency
monitor off by default."""

import time

import pytest

from test_redis_hash import read_reply
from wire import Conn, resp_encode

pytestmark = pytest.mark.resp


def rt(conn, *args):
    conn.send(resp_encode(*args))
    return read_reply(conn)


def test_slow_commands_are_logged(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        assert rt(c, "CONFIG", "GET", "slowlog-log-slower-than") == [b"slowlog-log-slower-than", b"10000"]
        assert rt(c, "CONFIG", "GET", "slowlog-max-len") == [b"slowlog-max-len", b"128"]
        assert rt(c, "SLOWLOG", "RESET") == b"OK"
        assert rt(c, "SLOWLOG", "LEN") == 0
        assert rt(c, "CONFIG", "SET", "slowlog-log-slower-than", "0") == b"OK"
        assert rt(c, "CLIENT", "SETNAME", "app") == b"OK"
        before = int(time.time())
        assert rt(c, "SET", "k", "x" * 200) == b"OK"
        assert isinstance(rt(c, "SET", "many", *[str(i) for i in range(40)]), RuntimeError)
        entries = rt(c, "SLOWLOG", "GET", "-1")
        by_command = {tuple(e[3][:2]): e for e in entries}
        entry = by_command[(b"SET", b"k")]
        assert len(entry) == 6
        assert entry[1] >= before and entry[2] >= 0
        assert entry[3] == [b"SET", b"k", b"x" * 128 + b"... (72 more bytes)"]
        assert entry[4].startswith(b"127.0.0.1:") and entry[5] == b"app"
        many = by_command[(b"SET", b"many")]
        assert len(many[3]) == 32 and many[3][-1] == b"... (11 more arguments)"
        ids = [e[0] for e in entries]
        assert ids == sorted(ids, reverse=True), "newest first"
        assert len(rt(c, "SLOWLOG", "GET", "1")) == 1
        length = rt(c, "SLOWLOG", "LEN")
        assert len(rt(c, "SLOWLOG", "GET", "-1")) == length + 1, "LEN itself is logged after it ran"
        assert rt(c, "CONFIG", "SET", "slowlog-max-len", "2") == b"OK"
        rt(c, "SET", "a", "1")
        rt(c, "SET", "b", "1")
        assert rt(c, "SLOWLOG", "LEN") == 2
        assert rt(c, "SLOWLOG", "RESET") == b"OK"
        assert rt(c, "SLOWLOG", "LEN") in (0, 1)  # RESET itself may be logged after it ran


def test_a_threshold_of_zero_logs_fast_commands_too(make_server):
    """redis-py's test_slowlog_get: with slowlog-log-slower-than 0, every command is logged,
    GET and the other fast ones included."""
    server = make_server()
    with Conn(server.resp_port) as c:
        assert rt(c, "CONFIG", "SET", "slowlog-log-slower-than", "0") == b"OK"
        assert rt(c, "SLOWLOG", "RESET") == b"OK"
        for _ in range(3):
            rt(c, "GET", "fast")
        rt(c, "INCR", "n")
        logged = [e[3] for e in rt(c, "SLOWLOG", "GET", "-1")]
        assert logged.count([b"GET", b"fast"]) == 3, logged
        assert [b"INCR", b"n"] in logged


def test_exec_is_not_logged_but_what_it_ran_is(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        assert rt(c, "CONFIG", "SET", "slowlog-log-slower-than", "0") == b"OK"
        rt(c, "SLOWLOG", "RESET")
        assert rt(c, "MULTI") == b"OK"
        assert rt(c, "SET", "in-tx", "1") == b"QUEUED"
        assert rt(c, "EXEC") == [b"OK"]
        logged = [e[3][0].upper() for e in rt(c, "SLOWLOG", "GET", "-1")]
        assert b"SET" in logged and b"EXEC" not in logged


def test_nothing_is_logged_under_the_threshold(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        rt(c, "SLOWLOG", "RESET")
        for i in range(50):
            rt(c, "SET", f"k{i}", "v")
        assert rt(c, "SLOWLOG", "LEN") == 0
        assert rt(c, "CONFIG", "SET", "slowlog-log-slower-than", "-1") == b"OK"
        rt(c, "SET", "x", "y")
        assert rt(c, "SLOWLOG", "LEN") == 0


def test_latency_monitor_is_off_by_default(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        assert rt(c, "CONFIG", "GET", "latency-monitor-threshold") == [b"latency-monitor-threshold", b"0"]
        rt(c, "SET", "k", "v")
        assert rt(c, "LATENCY", "LATEST") == []
        assert rt(c, "LATENCY", "HISTORY", "command") == []
        assert rt(c, "LATENCY", "RESET") == 0
