"""redis-py against the RESP port, over RESP2 and RESP3 (protocol=2 and protocol=3).

redis-py 5 opens each connection with HELLO (for protocol=3) and CLIENT SETINFO; the server
must accept that handshake (an error reply to SETINFO is tolerated by the client).
"""

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


@pytest.fixture
def rdb1(resp_port):
    client = redis.Redis(host="127.0.0.1", port=resp_port, db=1, socket_timeout=3)
    yield client
    client.close()


# ------------------------------------------------------------------------------------------
# Connection and server


def test_handshake_ping_echo(r):
    assert r.ping() is True
    assert r.echo("hello") == b"hello"
    assert r.echo(b"\x00\xff") == b"\x00\xff"


def test_select_separates_databases(r, rdb1, key):
    r.set(key, "db0")
    assert rdb1.get(key) is None
    rdb1.set(key, "db1")
    assert r.get(key) == b"db0"
    assert rdb1.get(key) == b"db1"
    assert rdb1.delete(key) == 1


def test_dbsize_flushdb_flushall(make_server):
    server = make_server()
    port = server.resp_port
    r0 = redis.Redis(host="127.0.0.1", port=port, socket_timeout=3)
    r1 = redis.Redis(host="127.0.0.1", port=port, db=1, socket_timeout=3)
    try:
        assert r0.dbsize() == 0
        r0.mset({"a": 1, "b": 2})
        r1.set("c", 3)
        assert r0.dbsize() == 2
        assert r1.dbsize() == 1
        assert r1.flushdb() is True
        assert r1.dbsize() == 0 and r0.dbsize() == 2
        r1.set("c", 3)
        assert r0.flushall() is True
        assert r0.dbsize() == 0 and r1.dbsize() == 0
    finally:
        r0.close()
        r1.close()


def test_time_info_config(r):
    secs, micros = r.time()
    assert abs(secs - time.time()) < 5 and 0 <= micros < 1_000_000
    info = r.info()
    assert "redis_version" in info
    assert "connected_clients" in info
    server = r.info("server")
    assert "redis_version" in server
    cfg = r.config_get("maxmemory")
    assert "maxmemory" in cfg


# ------------------------------------------------------------------------------------------
# Strings


def test_set_get_options(r, key):
    assert r.get(key) is None
    assert r.set(key, "v") is True
    assert r.get(key) == b"v"
    assert r.set(key, "nx", nx=True) is None
    assert r.set(key + "_m", "xx", xx=True) is None
    assert r.set(key, "xx", xx=True) is True
    assert r.set(key, "new", get=True) == b"xx"
    assert r.set(key, "ex", ex=100) is True
    assert 98 <= r.ttl(key) <= 100
    assert r.set(key, "px", px=100000) is True
    assert 98000 <= r.pttl(key) <= 100000
    assert r.set(key, "kt", keepttl=True) is True
    assert 98000 <= r.pttl(key) <= 100000
    assert r.set(key, "plain") is True
    assert r.ttl(key) == -1
    now = int(time.time())
    assert r.set(key, "exat", exat=now + 100) is True
    assert 98 <= r.ttl(key) <= 100
    assert r.set(key, "pxat", pxat=(now + 100) * 1000) is True
    assert 98 <= r.ttl(key) <= 100
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("SET", key, "v", "NX", "XX")
    with pytest.raises(redis.ResponseError, match="invalid expire time"):
        r.set(key, "v", ex=0)


def test_setnx_setex_psetex_getset_getdel(r, key):
    assert r.setnx(key, "a") is True
    assert r.setnx(key, "b") is False
    assert r.setex(key, 100, "c") is True
    assert 98 <= r.ttl(key) <= 100
    assert r.psetex(key, 100000, "d") is True
    assert r.getset(key, "e") == b"d"
    assert r.ttl(key) == -1
    assert r.getdel(key) == b"e"
    assert r.getdel(key) is None
    assert r.exists(key) == 0


def test_getex(r, key):
    r.set(key, "v")
    assert r.getex(key, ex=100) == b"v"
    assert 98 <= r.ttl(key) <= 100
    assert r.getex(key, persist=True) == b"v"
    assert r.ttl(key) == -1
    assert r.getex(key, px=50000) == b"v"
    assert r.getex(key + "_missing", ex=10) is None


def test_mget_mset_msetnx(r, key):
    a, b, c = key + "_a", key + "_b", key + "_c"
    assert r.mset({a: "1", b: "2"}) is True
    assert r.mget([a, b, c]) == [b"1", b"2", None]
    assert r.msetnx({b: "x", c: "3"}) is False
    assert r.get(c) is None
    assert r.msetnx({c: "3", key + "_d": "4"}) is True
    assert r.mget(c, key + "_d") == [b"3", b"4"]


def test_append_strlen_getrange_setrange(r, key):
    assert r.append(key, "Hello") == 5
    assert r.append(key, " World") == 11
    assert r.strlen(key) == 11
    assert r.strlen(key + "_missing") == 0
    assert r.getrange(key, 0, 4) == b"Hello"
    assert r.getrange(key, -5, -1) == b"World"
    assert r.getrange(key, 100, 200) == b""
    assert r.setrange(key, 6, "Redis") == 11
    assert r.get(key) == b"Hello Redis"
    assert r.setrange(key + "_z", 3, "x") == 4
    assert r.get(key + "_z") == b"\x00\x00\x00x"


def test_incr_family(r, key):
    assert r.incr(key) == 1
    assert r.incrby(key, 10) == 11
    assert r.decr(key) == 10
    assert r.decrby(key, 20) == -10
    assert r.incrbyfloat(key, 1.5) == -8.5
    assert r.get(key) == b"-8.5"
    r.set(key, "abc")
    with pytest.raises(redis.ResponseError, match="not an integer"):
        r.incr(key)
    with pytest.raises(redis.ResponseError, match="not a valid float"):
        r.incrbyfloat(key, 1)
    r.set(key, str(2**63 - 1))
    with pytest.raises(redis.ResponseError, match="overflow"):
        r.incr(key)


# ------------------------------------------------------------------------------------------
# Keys


def test_delete_unlink_exists_type(r, key):
    a, b = key + "_a", key + "_b"
    r.mset({a: 1, b: 2})
    assert r.exists(a, b, key + "_c", a) == 3
    assert r.type(a) == b"string"
    assert r.type(key + "_c") == b"none"
    assert r.delete(a, key + "_c") == 1
    assert r.unlink(b) == 1
    assert r.exists(a, b) == 0


def test_expire_family(r, key):
    assert r.expire(key, 100) is False
    r.set(key, "v")
    assert r.ttl(key) == -1
    assert r.pttl(key) == -1
    assert r.ttl(key + "_missing") == -2
    assert r.pttl(key + "_missing") == -2
    assert r.expire(key, 100, xx=True) is False   # no TTL yet
    assert r.expire(key, 100, nx=True) is True
    assert r.expire(key, 50, nx=True) is False
    assert r.expire(key, 50, gt=True) is False
    assert r.expire(key, 200, gt=True) is True
    assert r.expire(key, 300, lt=True) is False
    assert r.expire(key, 150, lt=True) is True
    assert 148 <= r.ttl(key) <= 150
    assert r.pexpire(key, 100000) is True
    assert 98000 <= r.pttl(key) <= 100000
    at = int(time.time()) + 500
    assert r.expireat(key, at) is True
    assert r.expiretime(key) == at
    assert r.pexpireat(key, at * 1000 + 123) is True
    assert r.pexpiretime(key) == at * 1000 + 123
    assert r.persist(key) is True
    assert r.persist(key) is False
    assert r.expiretime(key) == -1
    assert r.expiretime(key + "_missing") == -2
    assert r.expire(key, -1) is True  # a past time deletes
    assert r.exists(key) == 0


def test_keys_scan_randomkey(make_server):
    server = make_server()
    r = redis.Redis(host="127.0.0.1", port=server.resp_port, socket_timeout=3)
    try:
        assert r.randomkey() is None
        names = [f"user:{i}" for i in range(30)] + [f"item:{i}" for i in range(10)]
        r.mset({n: 1 for n in names})
        assert sorted(r.keys("user:*")) == sorted(n.encode() for n in names[:30])
        assert r.keys("nomatch*") == []
        assert sorted(r.keys("item:?")) == sorted(f"item:{i}".encode() for i in range(10))
        scanned = set(r.scan_iter(match="item:*", count=5))
        assert scanned == {f"item:{i}".encode() for i in range(10)}
        assert set(r.scan_iter(count=7)) == {n.encode() for n in names}
        assert set(r.scan_iter(_type="string")) == {n.encode() for n in names}
        assert set(r.scan_iter(_type="list")) == set()
        assert r.randomkey() in {n.encode() for n in names}
    finally:
        r.close()


def test_rename_renamenx(r, key):
    a, b = key + "_a", key + "_b"
    with pytest.raises(redis.ResponseError, match="no such key"):
        r.rename(a, b)
    r.set(a, "1", ex=100)
    assert r.rename(a, b) is True
    assert r.get(b) == b"1" and r.exists(a) == 0
    assert 98 <= r.ttl(b) <= 100  # the TTL moves with the value
    r.set(a, "2")
    assert r.renamenx(a, b) is False
    assert r.renamenx(b, key + "_c") is True
    assert r.get(key + "_c") == b"1"


# ------------------------------------------------------------------------------------------
# Errors and pipelines


def test_error_mapping(r, key):
    with pytest.raises(redis.ResponseError, match="unknown command"):
        r.execute_command("NOSUCHCOMMAND", "x")
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        r.execute_command("GET")
    with pytest.raises(redis.ResponseError, match="value is not an integer or out of range"):
        r.execute_command("INCRBY", key, "abc")
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("SET", key, "v", "BOGUS")
    # The connection keeps working after errors.
    assert r.ping() is True


def test_pipeline_without_transaction(r, key):
    pipe = r.pipeline(transaction=False)
    for i in range(50):
        pipe.set(f"{key}_{i}", i)
    pipe.incr(key + "_n")
    pipe.get(key + "_7")
    pipe.execute_command("NOSUCH")
    results = pipe.execute(raise_on_error=False)
    assert results[:50] == [True] * 50
    assert results[50] == 1
    assert results[51] == b"7"
    assert isinstance(results[52], redis.ResponseError)
    assert "unknown command" in str(results[52])
