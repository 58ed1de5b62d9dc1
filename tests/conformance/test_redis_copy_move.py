"""COPY and MOVE on string keys: replies, errors and TTLs byte for byte as redis-server 7.0
sends them (validated with CONFORMANCE_TARGET=redis)."""

import pytest

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp


@pytest.fixture
def c(resp_port):
    with Conn(resp_port) as conn:
        yield conn


def test_copy(c, key):
    src, dst = key + ":src", key + ":dst"
    c.rt(resp_encode("COPY", src, dst), b":0\r\n")  # no source
    c.rt(resp_encode("SET", src, "v1", "EX", "100"), b"+OK\r\n")
    c.rt(resp_encode("COPY", src, src), b"-ERR source and destination objects are the same\r\n")
    c.rt(resp_encode("COPY", src, dst), b":1\r\n")
    c.rt(resp_encode("GET", dst), b"$2\r\nv1\r\n")
    c.rt(resp_encode("TTL", dst), b":100\r\n")
    c.rt(resp_encode("SET", src, "v2"), b"+OK\r\n")
    c.rt(resp_encode("COPY", src, dst), b":0\r\n")  # destination exists
    c.rt(resp_encode("GET", dst), b"$2\r\nv1\r\n")
    c.rt(resp_encode("COPY", src, dst, "replace"), b":1\r\n")
    c.rt(resp_encode("GET", dst), b"$2\r\nv2\r\n")
    c.rt(resp_encode("TTL", dst), b":-1\r\n")
    c.rt(resp_encode("COPY", src, dst, "REPLACE", "nosuch"), b"-ERR syntax error\r\n")
    c.rt(resp_encode("COPY", src, dst, "DB"), b"-ERR syntax error\r\n")
    c.rt(resp_encode("COPY", src, dst, "DB", "x"),
         b"-ERR value is not an integer or out of range\r\n")
    c.rt(resp_encode("COPY", src, dst, "DB", "16"), b"-ERR DB index is out of range\r\n")
    c.rt(resp_encode("COPY", src, dst, "DB", "-1"), b"-ERR DB index is out of range\r\n")
    c.rt(resp_encode("DEL", src, dst), b":2\r\n")


def test_copy_into_another_database(c, key):
    c.rt(resp_encode("SET", key, "v"), b"+OK\r\n")
    c.rt(resp_encode("COPY", key, key, "DB", "3"), b":1\r\n")
    c.rt(resp_encode("COPY", key, key, "DB", "3"), b":0\r\n")
    c.rt(resp_encode("SELECT", "3"), b"+OK\r\n")
    c.rt(resp_encode("GET", key), b"$1\r\nv\r\n")
    c.rt(resp_encode("DBSIZE"), b":1\r\n")
    c.rt(resp_encode("COPY", key, key, "DB", "0", "REPLACE"), b":1\r\n")
    c.rt(resp_encode("DEL", key), b":1\r\n")
    c.rt(resp_encode("SELECT", "0"), b"+OK\r\n")
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_move(c, key):
    c.rt(resp_encode("MOVE", key, "2"), b":0\r\n")  # no such key
    c.rt(resp_encode("SET", key, "here", "PX", "100000"), b"+OK\r\n")
    c.rt(resp_encode("MOVE", key, "0"), b"-ERR source and destination objects are the same\r\n")
    c.rt(resp_encode("MOVE", key, "16"), b"-ERR DB index is out of range\r\n")
    c.rt(resp_encode("MOVE", key, "x"), b"-ERR value is not an integer or out of range\r\n")
    c.rt(resp_encode("MOVE", key, "2"), b":1\r\n")
    c.rt(resp_encode("EXISTS", key), b":0\r\n")
    c.rt(resp_encode("SET", key, "again"), b"+OK\r\n")
    c.rt(resp_encode("MOVE", key, "2"), b":0\r\n")  # present there
    c.rt(resp_encode("GET", key), b"$5\r\nagain\r\n")
    c.rt(resp_encode("SELECT", "2"), b"+OK\r\n")
    c.rt(resp_encode("GET", key), b"$4\r\nhere\r\n")
    c.send(resp_encode("PTTL", key))
    reply = c.read_line()
    assert reply.startswith(b":") and 90000 < int(reply[1:-2]) <= 100000, reply
    c.rt(resp_encode("DEL", key), b":1\r\n")
    c.rt(resp_encode("SELECT", "0"), b"+OK\r\n")
    c.rt(resp_encode("DEL", key), b":1\r\n")
