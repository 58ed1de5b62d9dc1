"""redis-py's own hash methods against the RESP port, over RESP2 and RESP3: every command of
the family, as a client library decodes the replies. The field-expiry methods (Redis 7.4,
and HGETDEL/HGETEX/HSETEX of 8.0 through execute_command, which redis-py 5.2 lacks) are
skipped on a server without them."""

import time

import pytest
import redis

pytestmark = pytest.mark.resp


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r(request, resp_port):
    client = redis.Redis(host="127.0.0.1", port=resp_port, protocol=request.param,
                         socket_timeout=3, socket_connect_timeout=3)
    yield client
    client.close()


def has_field_ttl(client):
    try:
        client.execute_command("HSETEX", "{no-such-hash}", "FXX", "FIELDS", "1", "f", "v")
    except redis.ResponseError as e:
        assert "unknown command" in str(e)
        return False
    return True


def test_basic_methods(r, key):
    assert r.hset(key, "a", "1") == 1
    assert r.hset(key, mapping={"b": "2", "c": "3"}, items=["a", "10"]) == 2
    with pytest.warns(DeprecationWarning):
        assert r.hmset(key, {"d": "4"}) is True
    assert r.hsetnx(key, "a", "x") in (False, 0)
    assert r.hsetnx(key, "e", "5") in (True, 1)
    assert r.hget(key, "a") == b"10"
    assert r.hget(key, "nope") is None
    assert r.hmget(key, ["a", "nope", "b"]) == [b"10", None, b"2"]
    assert r.hgetall(key) == {b"a": b"10", b"b": b"2", b"c": b"3", b"d": b"4", b"e": b"5"}
    assert r.hgetall(key + ":none") == {}
    assert r.hkeys(key) == [b"a", b"b", b"c", b"d", b"e"]
    assert r.hvals(key) == [b"10", b"2", b"3", b"4", b"5"]
    assert r.hlen(key) == 5
    assert r.hexists(key, "a") is True and r.hexists(key, "q") is False
    assert r.hstrlen(key, "a") == 2
    assert r.hincrby(key, "a", 5) == 15
    assert r.hincrbyfloat(key, "a", 0.5) == 15.5
    with pytest.raises(redis.ResponseError, match="hash value is not an integer"):
        r.hincrby(key, "a", 1)
    assert r.hdel(key, "a", "b", "nope") == 2
    assert r.type(key) == b"hash"
    r.set(key + ":s", "v")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.hget(key + ":s", "a")
    assert r.delete(key, key + ":s") == 2


def test_random_and_scan(r, key):
    assert r.hrandfield(key + ":none") is None
    r.hset(key, mapping={f"f{i}": str(i) for i in range(5)})
    assert r.hrandfield(key) in {f"f{i}".encode() for i in range(5)}
    picked = r.hrandfield(key, 3)
    assert len(set(picked)) == 3
    pairs = r.hrandfield(key, -4, withvalues=True)
    # RESP2 flattens the pairs; RESP3 nests them, and redis-py passes that through.
    flat = [x for p in pairs for x in p] if pairs and isinstance(pairs[0], list) else pairs
    assert len(flat) == 8 and all(int(flat[i + 1]) == int(flat[i][1:]) for i in (0, 2, 4, 6))
    cursor, page = r.hscan(key, 0, match="f[12]")
    assert cursor == 0 and page == {b"f1": b"1", b"f2": b"2"}
    assert dict(r.hscan_iter(key, count=2)) == {f"f{i}".encode(): str(i).encode()
                                                 for i in range(5)}
    r.delete(key)


def test_field_expiry_methods(r, key):
    if not has_field_ttl(r):
        pytest.skip("the server has no hash field expiry (Redis < 8.0)")
    r.hset(key, mapping={"a": "1", "b": "2", "c": "3"})
    assert r.hexpire(key, 100, "a", "nope") == [1, -2]
    assert r.hexpire(key, 50, "a", gt=True) == [0]
    assert r.hpexpire(key, 200_000, "b", nx=True) == [1]
    at = int(time.time()) + 300
    assert r.hexpireat(key, at, "c") == [1]
    assert r.hexpiretime(key, "c") == [at]
    assert r.hpexpireat(key, at * 1000 + 7, "c", xx=True) == [1]
    assert r.hpexpiretime(key, "c") == [at * 1000 + 7]
    assert r.httl(key, "a", "b") == [100, 200]
    assert 99_000 < r.hpttl(key, "a")[0] <= 100_000
    assert r.hpersist(key, "a", "a") == [1, -1]
    assert r.hscan(key, 0, no_values=True)[1] == [b"b", b"c", b"a"]
    assert r.execute_command("HGETDEL", key, "FIELDS", "1", "a") == [b"1"]
    assert r.execute_command("HGETEX", key, "PERSIST", "FIELDS", "1", "b") == [b"2"]
    assert r.execute_command("HSETEX", key, "FNX", "EX", "10", "FIELDS", "1", "d", "4") == 1
    assert r.httl(key, "b", "d") == [-1, 10]
    assert r.hpexpire(key, 0, "b", "c", "d") == [2, 2, 2]
    assert r.exists(key) == 0
