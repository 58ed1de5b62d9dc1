"""Strings larger than memcached's item limit on the Redis port: accepted up to
`proto-max-bulk-len` as long as they fit in memory; a value that cannot fit gets Redis's OOM
error and the connection stays open (Redis's own limit is checked with
CONFORMANCE_TARGET=redis where the behaviour is Redis's)."""

import pytest

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

MIB = 1024 * 1024


def _bulk(conn, n):
    header = conn.read_line()
    assert header == f"${n}\r\n".encode(), header[:40]
    return conn.read_exact(n + 2)[:-2]


def test_values_past_one_mib_round_trip(resp_port, key):
    with Conn(resp_port, timeout=20) as c:
        for size in (MIB + 1, 5 * MIB):
            value = bytes([65 + size % 26]) * size
            c.rt(resp_encode("SET", key, value), b"+OK\r\n")
            c.send(resp_encode("GET", key))
            assert _bulk(c, size) == value
            c.rt(resp_encode("STRLEN", key), f":{size}\r\n".encode())
            c.rt(resp_encode("APPEND", key, "xy"), f":{size + 2}\r\n".encode())
            c.rt(resp_encode("SETRANGE", key, str(size + 10), "z"), f":{size + 11}\r\n".encode())
        c.rt(resp_encode("CONFIG", "GET", "proto-max-bulk-len"),
             b"*2\r\n$18\r\nproto-max-bulk-len\r\n$9\r\n536870912\r\n")
        c.rt(resp_encode("DEL", key), b":1\r\n")


def test_expiry_commands_on_values_past_one_mib(resp_port, key):
    """Setting or clearing a large string's expiry keeps the value: no size check, no OOM
    (behind twemproxy an OOM here counts as a node failure and ejects the node)."""
    size = MIB + 1000
    value = b"e" * size
    with Conn(resp_port, timeout=20) as c:
        c.rt(resp_encode("SET", key, value), b"+OK\r\n")
        c.rt(resp_encode("EXPIRE", key, "50"), b":1\r\n")
        c.rt(resp_encode("PEXPIRE", key, "60000"), b":1\r\n")
        c.rt(resp_encode("EXPIREAT", key, "4000000000"), b":1\r\n")
        c.rt(resp_encode("PERSIST", key), b":1\r\n")
        c.send(resp_encode("GETEX", key, "EX", "70"))
        assert _bulk(c, size) == value
        c.rt(resp_encode("TTL", key), b":70\r\n")
        c.send(resp_encode("GET", key))
        assert _bulk(c, size) == value


def test_value_larger_than_memory_is_refused_with_oom(target, make_server, key):
    if target != "spinel":
        pytest.skip("the memory bound is Spinel's -m 64 (Redis has no maxmemory here)")
    server = make_server()
    with Conn(server.resp_port, timeout=30) as c:
        c.rt(resp_encode("SET", key, "small"), b"+OK\r\n")
        big = b"v" * (40 * MIB)  # over half of -m 64
        c.rt(resp_encode("SET", key, big),
             b"-OOM command not allowed when used memory > 'maxmemory'.\r\n")
        c.rt(resp_encode("GET", key), b"$5\r\nsmall\r\n")  # unchanged, connection open
        c.rt(resp_encode("SETRANGE", key, str(600 * MIB), "x"),
             b"-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n")
        c.rt(resp_encode("SETRANGE", key, str(40 * MIB), "x"),
             b"-OOM command not allowed when used memory > 'maxmemory'.\r\n")
        c.rt(resp_encode("PING"), b"+PONG\r\n")


def test_memcached_port_keeps_its_item_limit(target, shared_server, key):
    if target != "spinel":
        pytest.skip("both ports on one store is Spinel's")
    with Conn(shared_server.mc_port) as mc:
        value = b"m" * (2 * MIB)
        mc.send(f"set {key} 0 0 {len(value)}\r\n".encode() + value + b"\r\n")
        assert mc.read_line() == b"SERVER_ERROR object too large for cache\r\n"
