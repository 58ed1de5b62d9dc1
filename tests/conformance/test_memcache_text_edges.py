"""memcached text protocol at its edges: long key lists, too-large writes, flush_all,
verbosity and shutdown, and a table of malformed commands. Raw wire transcripts; every
expectation holds for real memcached 1.6.18 (`CONFORMANCE_TARGET=memcached`) and spinel.
"""

import socket
import time

import pytest

from wire import Conn

pytestmark = pytest.mark.memcache


@pytest.fixture
def c(mc_port):
    with Conn(mc_port) as conn:
        yield conn


def read_reply(conn, end=b"END\r\n", timeout=10.0):
    """Everything up to and including the `end` line."""
    return conn.read_until(end, timeout)


# ------------------------------------------------------------------------------------------
# Long key lists


def many_keys(prefix, count):
    # Six bytes each when prefix is one byte: `k00042`.
    return [b"%s%05d" % (prefix, i) for i in range(count)]


def set_all(conn, items):
    conn.send(b"".join(b"set %s %d 0 %d\r\n%s\r\n" % (k, f, len(v), v) for k, f, v in items))
    for _ in items:
        assert conn.read_line() == b"STORED\r\n"


def value_lines(items):
    return b"".join(b"VALUE %s %d %d\r\n%s\r\n" % (k, f, len(v), v) for k, f, v in items)


def test_20000_key_get_is_served_whole(c, key):
    # memcached serves any number of keys in one get: a ~140 KB line, the same bytes back.
    prefix = key.encode() + b"_"
    keys = [prefix + k for k in many_keys(b"k", 20000)]
    hits = [(k, i % 7, b"v%d" % i) for i, k in enumerate(keys) if i % 97 == 0]
    set_all(c, hits)
    c.send(b"get " + b" ".join(keys) + b"\r\n")
    assert read_reply(c) == value_lines(hits) + b"END\r\n"
    c.send(b"version\r\n")
    assert c.read_line().startswith(b"VERSION ")


def test_gat_with_many_keys_in_one_read(c, key):
    # memcached lets only get/gets lines run past 2048 bytes while they arrive (a 140 KB gat
    # is cut off); a gat line that arrives whole within its first read (16 KB) is served.
    # Spinel serves the short one too (its line limit applies to gat as to other commands,
    # so this one is sent whole below 2048 bytes).
    prefix = key.encode()[-8:] + b"_"
    keys = [prefix + k for k in many_keys(b"k", 120)]
    hits = [(k, 0, b"g") for k in keys[::10]]
    set_all(c, hits)
    c.send(b"gat 0 " + b" ".join(keys) + b"\r\n")
    assert read_reply(c) == value_lines(hits) + b"END\r\n"


def test_20000_key_gets_returns_cas_for_every_hit(c, key):
    prefix = key.encode() + b"_"
    keys = [prefix + k for k in many_keys(b"k", 20000)]
    set_all(c, [(k, 0, b"x") for k in keys[:50]])
    c.send(b"gets " + b" ".join(keys) + b"\r\n")
    reply = read_reply(c)
    assert reply.count(b"VALUE ") == 50
    assert reply.endswith(b"x\r\nEND\r\n")


def test_one_megabyte_get_line(c, key):
    # 100,000 keys of 10 bytes: a line over 1 MB, sent in pieces; answered like any get.
    keys = many_keys(b"q" + key.encode()[-4:], 100000)
    line = b"get " + b" ".join(keys) + b"\r\n"
    assert len(line) > 1_000_000
    c.send(line)
    assert read_reply(c) == b"END\r\n"
    c.send(b"version\r\n")
    assert c.read_line().startswith(b"VERSION ")


@pytest.mark.spinel_only
def test_streamed_multiget_stays_under_the_output_limit(make_server):
    # 20,000 hits of 200 bytes (4 MB of reply) against a 1 MiB output limit: the get is
    # answered in chunks as the client reads, never cut off, never buffered whole.
    server = make_server(extra=["--output-limit", "1"])
    with Conn(server.mc_port) as conn:
        items = [(b"big%02d" % i, 0, b"v" * 200) for i in range(100)]
        set_all(conn, items)
        keys = [items[i % 100][0] for i in range(20000)]
        conn.send(b"get " + b" ".join(keys) + b"\r\n")
        reply = read_reply(conn, timeout=30.0)
        assert reply == value_lines(items) * 200 + b"END\r\n"


def test_long_non_get_line_closes_silently(c):
    # Past 2048 bytes without a newline, anything but get/gets is hung up on, no reply.
    c.send(b"set " + b"k" * 3000)
    assert c.read_all_until_close(5.0) == b""


# ------------------------------------------------------------------------------------------
# A too-large write: `set` and `ms` (every mode) remove the old item, the others keep it

TOO_LARGE = b"SERVER_ERROR object too large for cache\r\n"
HUGE = b"h" * (2 * 1024 * 1024)  # over the default 1 MiB item size of both servers


@pytest.mark.parametrize("command,drops_old", [
    (b"set", True), (b"add", False), (b"replace", False), (b"append", False),
    (b"prepend", False), (b"cas", False),
])
def test_too_large_text_write(c, key, command, drops_old):
    k = key.encode()
    cas = b" 1" if command == b"cas" else b""
    c.rt(b"set %s 3 0 3\r\nold\r\n" % k, b"STORED\r\n")
    c.send(b"%s %s 0 0 %d%s\r\n%s\r\n" % (command, k, len(HUGE), cas, HUGE))
    assert c.read_line() == TOO_LARGE
    kept = b"VALUE %s 3 3\r\nold\r\n" % k
    c.rt(b"get %s\r\n" % k, (b"" if drops_old else kept) + b"END\r\n")
    # Quietly too: noreply hides the error, not the removal.
    c.rt(b"set %s 3 0 3\r\nold\r\n" % k, b"STORED\r\n")
    c.send(b"%s %s 0 0 %d%s noreply\r\n%s\r\n" % (command, k, len(HUGE), cas, HUGE))
    c.rt(b"get %s\r\n" % k, (b"" if drops_old else kept) + b"END\r\n")


@pytest.mark.parametrize("flags", [b"", b" q", b" T0", b" ME", b" MA", b" MP", b" MR", b" MS"])
def test_too_large_meta_set_drops_old(c, key, flags):
    k = key.encode()
    c.rt(b"set %s 0 0 3\r\nold\r\n" % k, b"STORED\r\n")
    c.send(b"ms %s %d%s\r\n%s\r\n" % (k, len(HUGE), flags, HUGE))
    # Meta errors are never quiet, q included.
    assert c.read_line() == TOO_LARGE
    c.rt(b"get %s\r\nmn\r\n" % k, b"END\r\nMN\r\n")
