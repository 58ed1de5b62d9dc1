"""redis-py's set methods against the RESP port, over RESP2 and RESP3 (redis-py turns both
protocols' replies into the same Python values; these tests check it can)."""

import pytest
import redis

pytestmark = pytest.mark.resp


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r(request, resp_port):
    client = redis.Redis(host="127.0.0.1", port=resp_port, protocol=request.param,
                         socket_timeout=3, socket_connect_timeout=3)
    yield client
    client.close()


def test_members(r, key):
    assert r.sadd(key, "a", "b", 3, "a") == 3
    assert r.smembers(key) == {b"a", b"b", b"3"}
    assert r.scard(key) == 3
    assert r.sismember(key, "a") == 1 and r.sismember(key, "z") == 0
    assert r.smismember(key, ["a", "z", 3]) == [1, 0, 1]
    assert r.srem(key, "a", "z") == 1
    assert r.smembers(key + ":none") == set()
    assert r.srem(key, "b", 3) == 2
    assert r.exists(key) == 0


def test_random_members(r, key):
    r.sadd(key, *range(10))
    everything = {str(n).encode() for n in range(10)}
    assert r.srandmember(key) in everything
    picks = r.srandmember(key, 4)
    assert len(picks) == 4 and len(set(picks)) == 4 and set(picks) <= everything
    assert len(r.srandmember(key, -20)) == 20
    assert r.spop(key) in everything
    popped = r.spop(key, 3)
    assert len(popped) == 3 and set(popped) <= everything
    assert r.scard(key) == 6
    assert set(r.spop(key, 100)) | set(popped) <= everything
    assert r.exists(key) == 0
    assert r.spop(key) is None and r.srandmember(key) is None
    with pytest.raises(redis.ResponseError, match="must be positive"):
        r.spop(key, -1)


def test_algebra(r, key):
    a, b, d = key + ":a", key + ":b", key + ":d"
    r.sadd(a, 1, 2, 3, "x")
    r.sadd(b, 2, 3, 4)
    assert r.sinter(a, b) == {b"2", b"3"}
    assert r.sunion(a, b) == {b"1", b"2", b"3", b"4", b"x"}
    assert r.sdiff(a, b) == {b"1", b"x"}
    assert r.sintercard(2, [a, b]) == 2
    assert r.sintercard(2, [a, b], limit=1) == 1
    assert r.sinterstore(d, [a, b]) == 2
    assert r.sunionstore(d, [a, b]) == 5
    assert r.sdiffstore(d, [a, b]) == 2
    assert r.smembers(d) == {b"1", b"x"}
    assert r.smove(a, d, 2) is True
    assert r.smove(a, d, "nope") is False
    assert r.smembers(d) == {b"1", b"2", b"x"}
    assert r.sinterstore(d, [a, key + ":none"]) == 0
    assert r.exists(d) == 0
    r.set(d, "string")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.sadd(d, "m")
    r.delete(a, b, d)


def test_sscan(r, key):
    members = {f"m{i}".encode() for i in range(300)} | {b"x1", b"x2"}
    r.sadd(key, *members)
    cursor, page = r.sscan(key, 0, match="x*")
    assert set(page) <= {b"x1", b"x2"}
    assert set(r.sscan_iter(key)) == members
    assert set(r.sscan_iter(key, match="x*", count=7)) == {b"x1", b"x2"}
    r.delete(key)
