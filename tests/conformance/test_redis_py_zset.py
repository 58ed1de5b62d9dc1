"""redis-py's sorted set methods against the RESP port, over RESP2 and RESP3: every command
of the family through the client's own API and reply parsing (redis==5.2.1). Passes against
redis-server 7.0.15 (CONFORMANCE_TARGET=redis) and Spinel.
"""

import pytest
import redis

pytestmark = pytest.mark.resp


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r(request, resp_port):
    client = redis.Redis(host="127.0.0.1", port=resp_port, protocol=request.param,
                         socket_timeout=3, socket_connect_timeout=3)
    yield client
    client.close()


def scored(reply):
    """A WITHSCORES reply as (member, float) tuples: redis-py 5 hands these back flat or
    nested, with scores as floats or bytes, depending on the command and protocol."""
    if reply and all(isinstance(item, (list, tuple)) for item in reply):
        return [(member, float(score)) for member, score in reply]
    return [(reply[i], float(reply[i + 1])) for i in range(0, len(reply), 2)]


def test_zadd_family(r, key):
    assert r.zadd(key, {"a": 1, "b": 2, "c": 3}) == 3
    assert r.zadd(key, {"a": 10, "d": 4}, nx=True) == 1
    assert r.zadd(key, {"a": 5, "zz": 1}, xx=True, ch=True) == 1
    assert r.zadd(key, {"a": 4}, gt=True, ch=True) == 0
    assert r.zadd(key, {"a": 4}, lt=True, ch=True) == 1
    assert r.zadd(key, {"a": 1.5}, incr=True) == 5.5
    assert r.zadd(key, {"nosuch": 1}, xx=True, incr=True) is None
    assert r.zincrby(key, 0.5, "b") == 2.5
    assert r.zincrby(key, 2, "new") == 2.0
    with pytest.raises(redis.ResponseError, match="XX and NX options"):
        r.execute_command("ZADD", key, "NX", "XX", 1, "a")
    with pytest.raises(redis.ResponseError, match="not a valid float"):
        r.execute_command("ZADD", key, "abc", "a")
    assert r.zscore(key, "a") == 5.5
    assert r.zscore(key, "nosuch") is None
    assert r.zmscore(key, ["a", "nosuch", "b"]) == [5.5, None, 2.5]
    assert r.zcard(key) == 5
    assert r.zrem(key, "new", "nosuch") == 1
    assert scored(r.zrange(key, 0, -1, withscores=True)) == [
        (b"b", 2.5), (b"c", 3.0), (b"d", 4.0), (b"a", 5.5)]
    assert r.zrank(key, "d") == 2
    assert r.zrevrank(key, "d") == 1
    assert r.zrank(key, "nosuch") is None
    assert r.zcount(key, "(2.5", "+inf") == 3
    assert r.delete(key) == 1


def test_ranges(r, key):
    r.zadd(key, {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5})
    assert r.zrange(key, 1, 2) == [b"b", b"c"]
    assert scored(r.zrange(key, 0, 1, desc=True, withscores=True)) == [(b"e", 5.0), (b"d", 4.0)]
    assert r.zrange(key, "(1", 4, byscore=True, offset=1, num=2) == [b"c", b"d"]
    assert r.zrevrange(key, 0, 0) == [b"e"]
    assert scored(r.zrangebyscore(key, 2, "+inf", start=0, num=2, withscores=True)) == [
        (b"b", 2.0), (b"c", 3.0)]
    assert r.zrevrangebyscore(key, "+inf", "(3") == [b"e", b"d"]
    with pytest.raises(redis.ResponseError, match="min or max is not a float"):
        r.zrangebyscore(key, "x", 1)
    assert r.zremrangebyrank(key, 0, 0) == 1
    assert r.zremrangebyscore(key, "-inf", "(3") == 1
    assert r.zrange(key, 0, -1) == [b"c", b"d", b"e"]
    lex = key + ":lex"
    r.zadd(lex, {m: 0 for m in "abcdefg"})
    assert r.zrangebylex(lex, "[b", "(e") == [b"b", b"c", b"d"]
    assert r.zrevrangebylex(lex, "+", "-", start=1, num=2) == [b"f", b"e"]
    assert r.zrange(lex, "[c", "-", bylex=True, desc=True) == [b"c", b"b", b"a"]
    assert r.zlexcount(lex, "-", "(c") == 2
    assert r.zremrangebylex(lex, "[a", "[c") == 3
    with pytest.raises(redis.ResponseError, match="not valid string range item"):
        r.zlexcount(lex, "a", "+")
    dst = key + ":dst"
    assert r.zrangestore(dst, key, 0, 1) == 2
    assert scored(r.zrange(dst, 0, -1, withscores=True)) == [(b"c", 3.0), (b"d", 4.0)]
    assert r.zrangestore(dst, lex, "[e", "+", bylex=True) == 3
    assert r.delete(key, lex, dst) == 3


def test_pops_and_random(r, key):
    r.zadd(key, {"a": 1, "b": 2, "c": 3, "d": 4})
    assert scored(r.zpopmin(key)) == [(b"a", 1.0)]
    assert scored(r.zpopmax(key, 2)) == [(b"d", 4.0), (b"c", 3.0)]
    assert r.zpopmin(key + ":none") == []
    other = key + ":2"
    r.zadd(other, {"x": 1, "y": 2})
    popped = r.zmpop(2, [key + ":none", other], max=True, count=5)
    assert popped[0] == other.encode()
    assert scored(popped[1]) == [(b"y", 2.0), (b"x", 1.0)]
    assert r.zmpop(1, [other], min=True) is None
    assert r.zrandmember(key) == b"b"
    assert r.zrandmember(key, 3) == [b"b"]
    assert r.zrandmember(key + ":none") is None
    r.zadd(key, {"c": 3})
    picks = r.zrandmember(key, -5, withscores=True)
    assert len(picks) in (5, 10)  # flat in RESP2, pairs in RESP3
    assert r.zpopmin(key, 5) and r.exists(key) == 0


def test_set_algebra(r, key):
    a, b, dst = key + ":a", key + ":b", key + ":dst"
    r.zadd(a, {"x": 1, "y": 2, "z": 3})
    r.zadd(b, {"y": 10, "z": 20, "w": 30})
    assert r.zunion([a, b]) == [b"x", b"y", b"z", b"w"]
    assert scored(r.zunion({a: 2, b: 1}, aggregate="MAX", withscores=True)) == [
        (b"x", 2.0), (b"y", 10.0), (b"z", 20.0), (b"w", 30.0)]
    assert scored(r.zinter([a, b], withscores=True)) == [(b"y", 12.0), (b"z", 23.0)]
    assert r.zinter([a, b], aggregate="MIN") == [b"y", b"z"]
    assert scored(r.zdiff([a, b], withscores=True)) == [(b"x", 1.0)]
    assert r.zintercard(2, [a, b]) == 2
    assert r.zintercard(2, [a, b], limit=1) == 1
    assert r.zunionstore(dst, [a, b]) == 4
    assert r.zscore(dst, "y") == 12.0
    assert r.zinterstore(dst, {a: 1, b: -1}) == 2
    assert scored(r.zrange(dst, 0, -1, withscores=True)) == [(b"z", -17.0), (b"y", -8.0)]
    assert r.zdiffstore(dst, [b, a]) == 1
    assert r.zrange(dst, 0, -1) == [b"w"]
    assert r.zinterstore(dst, [a, key + ":none"]) == 0
    assert r.exists(dst) == 0
    r.set(dst, "string")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.zunion([a, dst])
    assert r.delete(a, b, dst) == 3


def test_zscan(r, key):
    members = {f"m{i}": i * 0.5 for i in range(200)}
    r.zadd(key, members)
    cursor, page = r.zscan(key, 0, count=20)
    assert cursor != 0 and page
    seen = dict(r.zscan_iter(key, count=30))
    assert seen == {m.encode(): s for m, s in members.items()}
    small = key + ":small"
    r.zadd(small, {"a": 1, "b": 2, "ab": 3})
    assert r.zscan(small, 0, match="a*") == (0, [(b"a", 1.0), (b"ab", 3.0)])
    assert r.delete(key, small) == 2
