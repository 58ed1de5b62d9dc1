"""One store behind both ports: what one protocol writes, the other reads (spinel only)."""

import pytest
import redis

from wire import Conn

pytestmark = pytest.mark.spinel_only


@pytest.fixture
def mc(mc_port):
    with Conn(mc_port) as conn:
        yield conn


@pytest.fixture
def r(resp_port):
    client = redis.Redis(host="127.0.0.1", port=resp_port, socket_timeout=3)
    yield client
    client.close()


def test_memcached_set_redis_get(mc, r, key):
    k = key.encode()
    mc.rt(b"set " + k + b" 0 0 5\r\nhello\r\n", b"STORED\r\n")
    assert r.get(key) == b"hello"
    assert r.exists(key) == 1
    assert r.strlen(key) == 5


def test_redis_set_memcached_get(mc, r, key):
    k = key.encode()
    assert r.set(key, b"world\x00\xff") is True
    mc.rt(b"get " + k + b"\r\n", b"VALUE " + k + b" 0 7\r\nworld\x00\xff\r\nEND\r\n")
    r.delete(key)
    mc.rt(b"get " + k + b"\r\n", b"END\r\n")


def test_memcached_ttl_visible_to_redis(mc, r, key):
    k = key.encode()
    mc.rt(b"set " + k + b" 0 100 1\r\nx\r\n", b"STORED\r\n")
    assert 98 <= r.ttl(key) <= 100
    mc.rt(b"set " + k + b" 0 0 1\r\nx\r\n", b"STORED\r\n")
    assert r.ttl(key) == -1
    r.expire(key, 50)
    mc.send(b"mg " + k + b" t\r\n")
    line = mc.read_line()
    assert line in (b"HD t50\r\n", b"HD t49\r\n"), line


def test_redis_incr_then_memcached_incr(mc, r, key):
    k = key.encode()
    assert r.incr(key) == 1
    assert r.incrby(key, 41) == 42
    mc.rt(b"incr " + k + b" 8\r\n", b"50\r\n")
    assert r.get(key) == b"50"
    mc.rt(b"decr " + k + b" 60\r\n", b"0\r\n")
    assert r.get(key).rstrip(b" ") == b"0"


def test_redis_db1_invisible_to_memcached(mc, resp_port, key):
    k = key.encode()
    r1 = redis.Redis(host="127.0.0.1", port=resp_port, db=1, socket_timeout=3)
    try:
        r1.set(key, "only-in-db1")
        mc.rt(b"get " + k + b"\r\n", b"END\r\n")
        mc.rt(b"set " + k + b" 0 0 4\r\ndb0!\r\n", b"STORED\r\n")
        assert r1.get(key) == b"only-in-db1"
    finally:
        r1.close()


def test_memcached_delete_visible_to_redis(mc, r, key):
    r.set(key, "x")
    mc.rt(b"delete " + key.encode() + b"\r\n", b"DELETED\r\n")
    assert r.get(key) is None


def test_memcached_expiry_seen_by_redis(mc, r, key):
    mc.rt(b"set " + key.encode() + b" 0 -1 1\r\nx\r\n", b"STORED\r\n")
    assert r.exists(key) == 0
    assert r.ttl(key) == -2
