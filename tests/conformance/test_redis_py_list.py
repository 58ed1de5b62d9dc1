"""redis-py's own list methods against the RESP port, over RESP2 and RESP3: each list
command once through the client library, with the values and Python types it returns
(redis-py parses both protocols into the same types, so one expectation serves both)."""

import pytest
import redis

pytestmark = pytest.mark.resp


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def r(request, resp_port):
    client = redis.Redis(host="127.0.0.1", port=resp_port, protocol=request.param,
                         socket_timeout=3, socket_connect_timeout=3)
    yield client
    client.close()


def test_push_pop_len_range(r, key):
    assert r.lpushx(key, "nope") == 0
    assert r.rpushx(key, "nope") == 0
    assert r.lpush(key, "b", "a") == 2
    assert r.rpush(key, "c", 4, 5.5) == 5
    assert r.lpushx(key, "z") == 6
    assert r.rpushx(key, "end") == 7
    assert r.llen(key) == 7
    assert r.lrange(key, 0, -1) == [b"z", b"a", b"b", b"c", b"4", b"5.5", b"end"]
    assert r.lrange(key, -2, 100) == [b"5.5", b"end"]
    assert r.lpop(key) == b"z"
    assert r.rpop(key) == b"end"
    assert r.lpop(key, 2) == [b"a", b"b"]
    assert r.rpop(key, 5) == [b"5.5", b"4", b"c"]
    assert r.exists(key) == 0
    assert r.lpop(key) is None
    assert r.rpop(key, 2) is None
    assert r.llen(key) == 0
    assert r.lrange(key, 0, -1) == []


def test_index_set_insert_rem_trim(r, key):
    r.rpush(key, "a", "b", "c", "b")
    assert r.lindex(key, 0) == b"a"
    assert r.lindex(key, -1) == b"b"
    assert r.lindex(key, 10) is None
    assert r.lset(key, 1, "B") is True
    with pytest.raises(redis.ResponseError, match="index out of range"):
        r.lset(key, 10, "x")
    with pytest.raises(redis.ResponseError, match="no such key"):
        r.lset(key + ":none", 0, "x")
    assert r.linsert(key, "BEFORE", "c", "x") == 5
    assert r.linsert(key, "AFTER", "c", "y") == 6
    assert r.linsert(key, "AFTER", "missing", "y") == -1
    assert r.lrange(key, 0, -1) == [b"a", b"B", b"x", b"c", b"y", b"b"]
    assert r.lrem(key, 0, "x") == 1
    assert r.lrem(key, -1, "b") == 1
    assert r.ltrim(key, 1, 2) is True
    assert r.lrange(key, 0, -1) == [b"B", b"c"]
    r.set(key + ":str", "v")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.llen(key + ":str")
    r.delete(key, key + ":str")


def test_lpos(r, key):
    r.rpush(key, "a", "b", "a", "c", "a")
    assert r.lpos(key, "a") == 0
    assert r.lpos(key, "a", rank=2) == 2
    assert r.lpos(key, "a", rank=-1) == 4
    assert r.lpos(key, "a", count=0) == [0, 2, 4]
    assert r.lpos(key, "a", count=2, rank=-1) == [4, 2]
    assert r.lpos(key, "a", count=0, maxlen=3) == [0, 2]
    assert r.lpos(key, "nope") is None
    assert r.lpos(key, "nope", count=1) == []
    with pytest.raises(redis.ResponseError, match="RANK can't be zero"):
        r.lpos(key, "a", rank=0)
    r.delete(key)


def test_lmove_rpoplpush_lmpop(r, key):
    src, dst = key + ":src", key + ":dst"
    r.rpush(src, "1", "2", "3")
    assert r.lmove(src, dst, "LEFT", "RIGHT") == b"1"
    assert r.rpoplpush(src, dst) == b"3"
    assert r.lrange(dst, 0, -1) == [b"3", b"1"]
    assert r.lmove(dst, dst, "LEFT", "RIGHT") == b"3"
    assert r.lrange(dst, 0, -1) == [b"1", b"3"]
    assert r.lmove(key + ":none", dst) is None
    assert r.rpoplpush(key + ":none", dst) is None
    assert r.lmpop(2, key + ":none", dst, direction="RIGHT", count=5) == [dst.encode(),
                                                                         [b"3", b"1"]]
    assert r.lmpop(2, key + ":none", src, direction="LEFT") == [src.encode(), [b"2"]]
    assert r.lmpop(1, src, direction="LEFT") is None
    assert r.exists(src, dst) == 0
