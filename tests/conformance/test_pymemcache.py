"""pymemcache against the memcached port: the calls real applications make, end to end."""

import pytest
from pymemcache.client.base import Client
from pymemcache.client.hash import HashClient

pytestmark = pytest.mark.memcache


@pytest.fixture
def client(mc_port):
    c = Client(("127.0.0.1", mc_port), connect_timeout=3, timeout=3)
    yield c
    c.close()


@pytest.fixture
def strict(mc_port):
    """A client that waits for replies (default_noreply=False), to see outcomes."""
    c = Client(("127.0.0.1", mc_port), connect_timeout=3, timeout=3, default_noreply=False)
    yield c
    c.close()


def test_set_get(client, key):
    assert client.get(key) is None
    assert client.set(key, b"v1") is True
    assert client.get(key) == b"v1"
    assert client.get(key, default=b"d") == b"v1"
    assert client.get(key + "x", default=b"d") == b"d"


def test_get_many_and_delete_many(client, key):
    keys = [f"{key}_{i}" for i in range(20)]
    client.set_many({k: k.encode() for k in keys[:15]})
    got = client.get_many(keys)
    assert got == {k: k.encode() for k in keys[:15]}
    assert client.delete_many(keys) is True
    assert client.get_many(keys) == {}


def test_gets_cas(strict, key):
    assert strict.gets(key) == (None, None)
    strict.set(key, b"a")
    value, cas = strict.gets(key)
    assert value == b"a"
    assert strict.cas(key, b"b", cas) is True
    assert strict.cas(key, b"c", cas) is False
    assert strict.cas(key + "missing", b"c", cas) is None
    assert strict.get(key) == b"b"


def test_add_replace_append_prepend(strict, key):
    assert strict.replace(key, b"x") is False
    assert strict.add(key, b"mid") is True
    assert strict.add(key, b"other") is False
    assert strict.append(key, b"_end") is True
    assert strict.prepend(key, b"start_") is True
    assert strict.get(key) == b"start_mid_end"
    assert strict.replace(key, b"r") is True
    assert strict.get(key) == b"r"
    assert strict.append(key + "missing", b"x") is False


def test_incr_decr(strict, key):
    assert strict.incr(key, 1) is None
    strict.set(key, b"10")
    assert strict.incr(key, 5) == 15
    assert strict.decr(key, 20) == 0
    assert strict.incr(key, 2**64 - 1) == 2**64 - 1
    assert strict.incr(key, 1) == 0
    strict.set(key, b"nope")
    with pytest.raises(Exception, match="non-numeric"):
        strict.incr(key, 1)


def test_touch_delete(strict, key):
    assert strict.touch(key, 100) is False
    strict.set(key, b"x")
    assert strict.touch(key, 100) is True
    assert strict.delete(key) is True
    assert strict.delete(key) is False


def test_noreply_default(client, key):
    # Client's default is noreply: storage calls return True without waiting for a reply.
    assert client.add(key, b"a") is True
    assert client.add(key, b"b") is True  # NOT_STORED is never seen
    assert client.get(key) == b"a"
    assert client.delete(key) is True


def test_unicode_and_binary_values(mc_port, client, key):
    text = "héllo wörld ✓"
    client.set(key, text.encode("utf-8"))
    assert client.get(key).decode("utf-8") == text
    # UTF-8 keys travel as their bytes.
    uc = Client(("127.0.0.1", mc_port), timeout=3, allow_unicode_keys=True)
    try:
        uc.set(key + "_ключ", b"u")
        assert uc.get(key + "_ключ") == b"u"
    finally:
        uc.close()
    blob = bytes(range(256)) * 4 + b"\r\nEND\r\n"
    client.set(key + "_bin", blob)
    assert client.get(key + "_bin") == blob


def test_large_value_near_limit(strict, key):
    big = b"x" * (1024 * 1024 - 1024)
    assert strict.set(key, big) is True
    assert strict.get(key) == big
    from pymemcache.exceptions import MemcacheServerError

    with pytest.raises(MemcacheServerError, match="too large"):
        strict.set(key + "_huge", b"y" * (1024 * 1024 + 1))
    # The connection stays usable after the refusal.
    assert strict.get(key) == big


def test_stats_version_flush(make_server):
    server = make_server()
    c = Client(("127.0.0.1", server.mc_port), connect_timeout=3, timeout=3)
    try:
        assert c.version().startswith(b"1.6.")
        c.set("fk", b"1")
        stats = c.stats()
        assert stats[b"curr_items"] == 1
        assert stats[b"cmd_set"] >= 1
        assert c.flush_all(noreply=False) is True
        assert c.get("fk") is None
        settings = c.stats("settings")
        assert b"maxbytes" in settings
    finally:
        c.close()


def test_hash_client(mc_port, key):
    # One server is enough to exercise the HashClient code path (key routing, multi-get).
    hc = HashClient([("127.0.0.1", mc_port)], connect_timeout=3, timeout=3,
                    default_noreply=False)
    try:
        keys = [f"{key}_{i}" for i in range(10)]
        for k in keys:
            assert hc.set(k, k.encode()) is True
        assert hc.get_many(keys) == {k: k.encode() for k in keys}
        assert hc.incr(keys[0] + "_n", 1) is None
        hc.set(keys[0] + "_n", b"1")
        assert hc.incr(keys[0] + "_n", 1) == 2
        assert hc.delete_many(keys) is True
        assert hc.get(keys[0]) is None
    finally:
        hc.close()
