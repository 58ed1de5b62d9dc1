"""PFDEBUG (GETREG, DECODE, ENCODING, TODENSE) and PFSELFTEST, which Redis 7.0's own
HyperLogLog tests use, and `hll-sparse-max-bytes` deciding when a sparse HyperLogLog turns
dense.

The expectations are what redis-server 7.0 does (validated with CONFORMANCE_TARGET=redis).
"""

import pytest

from resp_read import read_value
from wire import Conn, resp_encode

pytestmark = pytest.mark.resp


@pytest.fixture
def fresh(make_server):
    server = make_server()
    with Conn(server.resp_port) as conn:
        yield conn


def call(conn, *args):
    conn.send(resp_encode(*args))
    return read_value(conn)


def test_pfdebug_subcommands(fresh):
    c = fresh
    assert call(c, "PFADD", "h", "a", "b", "c") == 1
    c.rt(resp_encode("PFDEBUG", "ENCODING", "h"), b"+sparse\r\n")
    assert call(c, "PFDEBUG", "DECODE", "h") == b"Z:8436 v:1,1 Z:4274 v:2,1 Z:3068 v:1,1 Z:603"
    registers = call(c, "PFDEBUG", "GETREG", "h")
    assert len(registers) == 16384
    assert sorted(r for r in registers if r) == [1, 1, 2]
    # GETREG left it dense, as Redis's does.
    c.rt(resp_encode("PFDEBUG", "ENCODING", "h"), b"+dense\r\n")
    c.rt(resp_encode("PFDEBUG", "TODENSE", "h"), b":0\r\n")
    c.rt(resp_encode("PFDEBUG", "DECODE", "h"), b"-ERR HLL encoding is not sparse\r\n")
    assert call(c, "PFCOUNT", "h") == 3
    assert call(c, "PFADD", "s") == 1
    c.rt(resp_encode("PFDEBUG", "TODENSE", "s"), b":1\r\n")
    c.rt(resp_encode("PFDEBUG", "foo", "h"), b"-ERR Unknown PFDEBUG subcommand 'foo'\r\n")
    c.rt(resp_encode("PFDEBUG", "ENCODING", "none"),
         b"-ERR The specified key does not exist\r\n")
    c.rt(resp_encode("SET", "str", "x"), b"+OK\r\n")
    c.rt(resp_encode("PFDEBUG", "GETREG", "str"),
         b"-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n")
    c.rt(resp_encode("PFDEBUG", "ENCODING"),
         b"-ERR wrong number of arguments for 'pfdebug' command\r\n")
    # A sparse value whose runs overflow: refused, left as it is.
    c.rt(resp_encode("SET", "bad", b"HYLL\x01\x00\x00\x00" + b"\x00" * 8 + b"\x7f\xff" * 2),
         b"+OK\r\n")
    c.rt(resp_encode("PFDEBUG", "GETREG", "bad"),
         b"-INVALIDOBJ Corrupted HLL object detected\r\n")


def test_pfselftest(fresh):
    fresh.rt(resp_encode("PFSELFTEST"), b"+OK\r\n")


def test_sparse_max_bytes_decides_promotion(fresh):
    c = fresh
    c.rt(resp_encode("CONFIG", "SET", "hll-sparse-max-bytes", "40"), b"+OK\r\n")
    encodings = []
    for i in range(1, 13):
        call(c, "PFADD", "h", f"e{i}")
        encodings.append(call(c, "PFDEBUG", "ENCODING", "h"))
    assert [e.decode() if isinstance(e, bytes) else e for e in encodings] == \
        ["sparse"] * 7 + ["dense"] * 5
    c.rt(resp_encode("CONFIG", "SET", "hll-sparse-max-bytes", "3000"), b"+OK\r\n")
    for i in range(1, 100):
        call(c, "PFADD", "h2", f"e{i}")
    c.rt(resp_encode("PFDEBUG", "ENCODING", "h2"), b"+sparse\r\n")
