"""redis-py's own methods for bitmaps and HyperLogLog, over RESP2 and RESP3: every command
of the family (SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO PFADD PFCOUNT
PFMERGE), with values redis-server 7.0 gives (validated with CONFORMANCE_TARGET=redis)."""

import pytest
import redis

pytestmark = pytest.mark.resp


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r(request, resp_port):
    client = redis.Redis(host="127.0.0.1", port=resp_port, protocol=request.param,
                         socket_timeout=3, socket_connect_timeout=3)
    yield client
    client.close()


def test_bits(r, key):
    a, b, d = key + ":a", key + ":b", key + ":d"
    assert r.setbit(a, 1, 1) == 0
    assert r.setbit(a, 1, 1) == 1
    assert r.getbit(a, 1) == 1
    assert r.getbit(a, 1000) == 0
    assert r.get(a) == b"\x40"
    r.set(b, "foobar")
    assert r.bitcount(b) == 26
    assert r.bitcount(b, 1, 1) == 6
    assert r.bitcount(b, 5, 30, "BIT") == 17
    assert r.bitpos(b, 1) == 1
    assert r.bitpos(b, 0, 2) == 16
    assert r.bitpos(b, 1, 7, 15, "BIT") == 9
    assert r.bitop("AND", d, a, b) == 6
    assert r.get(d) == b"\x40" + b"\x00" * 5
    assert r.bitop("NOT", d, a) == 1
    assert r.get(d) == b"\xbf"
    with pytest.raises(redis.ResponseError, match="bit offset is not an integer"):
        r.setbit(a, -1, 1)
    assert r.delete(a, b, d) == 3


def test_bitfield(r, key):
    field = r.bitfield(key)
    got = field.set("u8", 0, 200).incrby("u8", 0, 100).get("i8", 0).execute()
    assert got == [0, 44, 44]
    sat = r.bitfield(key, default_overflow="SAT").incrby("u8", "#1", 1000).execute()
    assert sat == [255]
    failed = r.bitfield(key).overflow("FAIL").incrby("u4", 0, 100).execute()
    assert failed == [None]
    assert r.bitfield_ro(key, "u8", 0, items=[("u8", 8), ("i4", 0)]) == [44, 255, 2]
    with pytest.raises(redis.ResponseError, match="Invalid bitfield type"):
        r.bitfield(key).get("u64", 0).execute()
    assert r.delete(key) == 1


def test_hyperloglog(r, key):
    p, q, m = key + ":p", key + ":q", key + ":m"
    assert r.pfadd(p, "a", "b", "c") == 1
    assert r.pfadd(p, "a") == 0
    assert r.pfcount(p) == 3
    assert r.pfadd(q, *[f"e{n}" for n in range(1000)]) == 1
    assert r.pfcount(q) == 1008
    assert r.pfcount(p, q) == 1012
    assert r.pfmerge(m, p, q) is True
    assert r.pfcount(m) == 1012
    raw = r.get(m)
    assert raw[:4] == b"HYLL"
    r.set(m, raw)  # the raw string is the whole value
    assert r.pfcount(m) == 1012
    r.set(p, "not an hll")
    with pytest.raises(redis.ResponseError, match="not a valid HyperLogLog"):
        r.pfcount(p)
    assert r.delete(p, q, m) == 3
