"""pylibmc (libmemcached, the C client) against the memcached port, in both protocols.

Every test runs twice: `binary` (libmemcached's binary protocol, which spinel detects from the
first byte of the connection) and `text`. libmemcached reports some outcomes differently per
protocol (a replace of a missing key raises NotFound in binary and returns False in text); the
tests encode what it does against the real memcached, so spinel must match it in each.

pylibmc is built against Debian's libmemcached 1.1.x (scripts/install-test-deps): the PyPI
wheel bundles 1.0.x, whose binary touch sends a packet every server hangs up on.
"""

import time

import pylibmc
import pytest

pytestmark = pytest.mark.memcache

PROTOCOLS = ("binary", "text")
ITEM_MAX_BYTES = 1024 * 1024


def connect(port, protocol, **behaviors):
    behaviors.setdefault("connect_timeout", 3000)  # milliseconds
    behaviors.setdefault("receive_timeout", 3_000_000)  # microseconds
    behaviors.setdefault("send_timeout", 3_000_000)
    return pylibmc.Client([f"127.0.0.1:{port}"], binary=protocol == "binary",
                          behaviors=behaviors)


@pytest.fixture(params=PROTOCOLS)
def protocol(request):
    return request.param


@pytest.fixture
def client(mc_port, protocol):
    c = connect(mc_port, protocol, tcp_nodelay=True)
    yield c
    c.disconnect_all()


@pytest.fixture
def cas_client(mc_port, protocol):
    c = connect(mc_port, protocol, cas=True)
    yield c
    c.disconnect_all()


def test_built_against_system_libmemcached():
    # The bundled 1.0.x of the PyPI wheel mishandles binary touch; see the module docstring.
    assert pylibmc.libmemcached_version.startswith("1.1."), pylibmc.libmemcached_version


def test_set_get_delete(client, key):
    assert client.get(key) is None
    assert client.get(key, "dflt") == "dflt"
    assert client.set(key, b"v1") is True
    assert client.get(key) == b"v1"
    assert client.set(key, b"v2") is True
    assert client.get(key) == b"v2"
    assert client.delete(key) is True
    assert client.delete(key) is False
    assert client.get(key) is None


def test_add_replace_append_prepend(client, key, protocol):
    if protocol == "binary":
        with pytest.raises(pylibmc.NotFound):
            client.replace(key, b"x")
    else:
        assert client.replace(key, b"x") is False
    assert client.add(key, b"mid") is True
    assert client.add(key, b"other") is False
    assert client.append(key, b"_end") is True
    assert client.prepend(key, b"start_") is True
    assert client.get(key) == b"start_mid_end"
    assert client.replace(key, b"r") is True
    assert client.get(key) == b"r"
    assert client.append(key + "_missing", b"x") is False
    assert client.prepend(key + "_missing", b"x") is False
    assert client.get(key + "_missing") is None


def test_gets_cas(cas_client, key):
    c = cas_client
    assert c.gets(key) == (None, None)
    c.set(key, b"a")
    value, cas = c.gets(key)
    assert value == b"a" and cas
    assert c.cas(key, b"b", cas) is True
    assert c.cas(key, b"c", cas) is False  # stale
    assert c.get(key) == b"b"
    _, fresh = c.gets(key)
    assert fresh != cas
    with pytest.raises(pylibmc.NotFound):
        c.cas(key + "_missing", b"c", fresh)


def test_incr_decr(client, key, protocol):
    with pytest.raises(pylibmc.NotFound):
        client.incr(key)
    client.set(key, b"10")
    assert client.incr(key, 5) == 15
    assert client.decr(key, 20) == 0  # decr stops at zero
    assert client.incr(key, 2**31 - 1) == 2**31 - 1  # pylibmc's delta is a C int
    client.set(key, str(2**64 - 2).encode())
    assert client.incr(key, 1) == 2**64 - 1
    assert client.incr(key, 1) == 0  # incr wraps at 2**64
    # memcached rewrites a shorter result in place, padded with spaces to the old length.
    assert client.get(key) == b"0".ljust(len(str(2**64 - 1)))
    client.set(key, 7)  # pylibmc stores ints as text with its int flag
    assert client.incr(key) == 8
    assert client.get(key) == 8
    client.set(key, b"nope")
    # libmemcached maps the non-numeric refusal to a different exception per protocol.
    error = pylibmc.UnknownReadFailure if protocol == "binary" else pylibmc.ClientError
    with pytest.raises(error):
        client.incr(key)
    assert client.get(key) == b"nope"


def test_touch(client, key):
    assert client.touch(key, 100) is False
    client.set(key, b"x")
    assert client.touch(key, 100) is True
    assert client.get(key) == b"x"


def test_multi(client, key):
    # libmemcached sends a multi-get as quiet gets (GETKQ) closed by a NOOP in binary.
    keys = [f"{key}_{i}" for i in range(20)]
    assert client.set_multi({k: k.encode() for k in keys[:15]}) == []
    assert client.get_multi(keys) == {k: k.encode() for k in keys[:15]}
    assert client.get_multi([]) == {}
    assert client.delete_multi(keys[:15]) is True
    assert client.delete_multi(keys) is False  # some were missing
    assert client.get_multi(keys) == {}


def test_multi_key_prefix(client, key):
    assert client.set_multi({"a": b"1", "b": b"2"}, key_prefix=key) == []
    assert client.get_multi(["a", "b", "c"], key_prefix=key) == {"a": b"1", "b": b"2"}
    assert client.get(key + "a") == b"1"


def test_large_value_near_limit(client, key):
    big = bytes(range(256)) * ((ITEM_MAX_BYTES - 1024) // 256)
    assert client.set(key, big) is True
    assert client.get(key) == big
    with pytest.raises(pylibmc.TooBig):
        client.set(key + "_huge", b"y" * (ITEM_MAX_BYTES + 1))
    # The refused value was read past, not taken for commands: the connection stays usable.
    assert client.get(key) == big
    assert client.get(key + "_huge") is None
    assert client.set(key + "_after", b"ok") is True
    assert client.get(key + "_after") == b"ok"


def test_compressed_value_over_limit(client, key):
    # zlib compression on the client: 3 MiB of one byte travels as a few KiB, with its flag.
    raw = b"z" * (3 * ITEM_MAX_BYTES)
    assert client.set(key, raw, min_compress_len=1) is True
    assert client.get(key) == raw


def test_binary_and_unicode(client, key, protocol):
    blob = bytes(range(256)) * 4 + b"\r\nEND\r\n\x80\x00"
    client.set(key + "_bin", blob)
    assert client.get(key + "_bin") == blob
    text = "héllo wörld ✓"
    client.set(key + "_str", text)  # str travels as UTF-8 with pylibmc's text flag
    assert client.get(key + "_str") == text
    client.set(key + "_ключ", b"u")  # a str key travels as its UTF-8 bytes
    assert client.get(key + "_ключ") == b"u"
    raw_key = key.encode() + b"\xff\xfe\x01"
    client.set(raw_key, b"raw")
    assert client.get(raw_key) == b"raw"
    obj = {"a": [1, 2.5, None], "b": ("t",)}
    client.set(key + "_obj", obj)  # pickled, with pylibmc's pickle flag
    assert client.get(key + "_obj") == obj
    client.set("k" * 250, b"longest")
    assert client.get("k" * 250) == b"longest"
    if protocol == "binary":
        # Binary keys are length-prefixed: a space is just a byte.
        client.set(key + " sp", b"s")
        assert client.get(key + " sp") == b"s"


def test_no_block_behaviors(mc_port, protocol, key):
    c = connect(mc_port, protocol, tcp_nodelay=True, no_block=True)
    try:
        keys = [f"{key}_{i}" for i in range(50)]
        for k in keys:
            assert c.set(k, k.encode()) is True
        assert c.add(keys[0], b"again") is False
        assert c.get_multi(keys) == {k: k.encode() for k in keys}
        assert c.get_behaviors()["no_block"] == 1
    finally:
        c.disconnect_all()


def test_noreply_behavior(mc_port, protocol, key):
    # Binary: quiet opcodes (SETQ, ADDQ, ...), whose failures still get a reply that
    # libmemcached must skip; text: `noreply`. Reads on the same connection see every write.
    c = connect(mc_port, protocol, _noreply=True)
    try:
        assert c.set(key, b"1") is True
        assert c.add(key, b"2") is True  # refused; the refusal is not waited for
        assert c.replace(key + "_missing", b"2") is True
        assert c.append(key, b"a") is True
        assert c.prepend(key, b"p") is True
        assert c.get(key) == b"p1a"
        assert c.set(key + "_huge", b"x" * (ITEM_MAX_BYTES + 10)) is True  # refused: too large
        assert c.set_multi({key + "_1": b"1", key + "_2": b"2"}) == []
        assert c.get_multi([key + "_1", key + "_2", key + "_huge", key + "_missing"]) == {
            key + "_1": b"1", key + "_2": b"2"}
        assert c.delete(key) is True
        assert c.delete_multi([key + "_1", key + "_2"]) is True
        assert c.get_multi([key, key + "_1", key + "_2"]) == {}
    finally:
        c.disconnect_all()


def test_two_servers_ketama(make_server, protocol, key):
    # Consistent hashing spreads keys over two servers; each server holds only its share.
    servers = [make_server(), make_server()]
    addrs = [f"127.0.0.1:{s.mc_port}" for s in servers]
    c = pylibmc.Client(addrs, binary=protocol == "binary", behaviors={"ketama": True})
    try:
        keys = [f"{key}_{i}" for i in range(60)]
        assert c.set_multi({k: k.encode() for k in keys}) == []
        assert c.get_multi(keys) == {k: k.encode() for k in keys}
        shares = []
        for addr in addrs:
            one = pylibmc.Client([addr], binary=protocol == "binary")
            shares.append(set(one.get_multi(keys)))
            one.disconnect_all()
        assert shares[0] and shares[1]
        assert shares[0] | shares[1] == set(keys) and not shares[0] & shares[1]
    finally:
        c.disconnect_all()


@pytest.mark.slow
def test_expiry(client, key):
    client.set(key, b"short", time=1)
    client.set(key + "_long", b"long", time=100)
    client.set(key + "_touched", b"t", time=100)
    assert client.touch(key + "_touched", 1) is True
    time.sleep(2.2)
    assert client.get(key) is None
    assert client.get(key + "_touched") is None
    assert client.get(key + "_long") == b"long"


def test_stats_version_flush(make_server, protocol):
    server = make_server()
    c = connect(server.mc_port, protocol)
    try:
        c.set("fk", b"1")
        c.set("fk2", b"2")
        ((name, stats),) = c.get_stats()
        assert name.startswith(f"127.0.0.1:{server.mc_port}".encode()) or \
            name.startswith(f"127.0.0.1:{server.mc_port}")
        assert stats["version"].startswith(b"1.6.")
        assert stats["curr_items"] == b"2"
        assert int(stats["cmd_set"]) >= 2
        assert c.flush_all() is True
        assert c.get("fk") is None and c.get("fk2") is None
        assert c.get_stats()[0][1]["curr_items"] == b"0"
        c.set("fk", b"3")
        assert c.get("fk") == b"3"  # a flush is not sticky
    finally:
        c.disconnect_all()
