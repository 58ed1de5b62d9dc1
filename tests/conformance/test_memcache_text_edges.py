"""memcached text protocol at its edges: long key lists, too-large writes, flush_all,
verbosity and shutdown, and a table of malformed commands. Raw wire transcripts; every
expectation holds for real memcached 1.6.18 (`CONFORMANCE_TARGET=memcached`) and spinel.
"""

import re
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
    prefix = key.encode()[-8:] + b"_"
    keys = [prefix + k for k in many_keys(b"k", 600)]
    assert 2048 < len(b" ".join(keys)) < 16000
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


@pytest.mark.parametrize("line,reply", [
    (b"version" + b" " * 5000, b"VERSION "),
    (b"version" + b" " * (16384 - 9), b"VERSION "),
    (b"mn" + b" " * 9000, b"MN\r\n"),
    (b"touch nokey 0" + b" " * 4000, b"NOT_FOUND\r\n"),
])
def test_long_line_served_when_it_arrives_whole(c, line, reply):
    # memcached reads into a 16 KB buffer and serves any line it finds whole there, however
    # far past 2048 bytes; the connection stays open.
    c.send(line + b"\r\n")
    assert c.read_line().startswith(reply)
    c.send(b"mn\r\n")
    assert c.read_line() == b"MN\r\n"


def test_long_line_split_across_reads_closes(c):
    # The same 5000-byte line, its first 3000 bytes alone in the buffer: hung up on.
    c.send(b"version" + b" " * 3000)
    time.sleep(0.3)
    c.send(b" " * 2000 + b"\r\n")
    assert c.read_all_until_close(5.0) == b""


def test_line_longer_than_the_read_buffer_closes(c):
    c.send(b"version" + b" " * (16384 - 8) + b"\r\n")
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


# ------------------------------------------------------------------------------------------
# flush_all: replies, and what each delay flushes (own server: a delayed flush would empty
# the shared one under other tests)


@pytest.fixture
def fresh(make_server):
    with Conn(make_server().mc_port) as conn:
        yield conn


@pytest.mark.parametrize("line,reply", [
    (b"flush_all", b"OK\r\n"),
    (b"flush_all noreply", b""),
    (b"flush_all 0", b"OK\r\n"),
    (b"flush_all -1", b"OK\r\n"),
    (b"flush_all +0", b"OK\r\n"),
    (b"flush_all 0 noreply", b""),
    (b"flush_all 0 junk", b"OK\r\n"),  # the second token is not looked at
    (b"flush_all abc", b"CLIENT_ERROR invalid exptime argument\r\n"),
    (b"flush_all abc noreply", b""),
    (b"flush_all 1x", b"CLIENT_ERROR invalid exptime argument\r\n"),
    (b"flush_all 99999999999999999999", b"CLIENT_ERROR invalid exptime argument\r\n"),
    (b"flush_all 0 noreply x", b"ERROR\r\n"),
    (b"flush_all 1 2 3", b"ERROR\r\n"),
])
def test_flush_all_replies(fresh, line, reply):
    fresh.send(line + b"\r\n")
    fresh.rt(b"mn\r\n", reply + b"MN\r\n")


def stored_a(conn):
    conn.rt(b"set a 0 0 1\r\na\r\n", b"STORED\r\n")


def has_a(conn):
    conn.send(b"get a\r\n")
    return read_reply(conn) != b"END\r\n"


@pytest.mark.parametrize("delay", [b"0", b"-1", b"-2592001",
                                   # a C int: the low 32 bits are negative or 0 (now)
                                   b"2147483648", b"1099511627776"])
def test_flush_all_now(fresh, delay):
    stored_a(fresh)
    fresh.rt(b"flush_all " + delay + b"\r\n", b"OK\r\n")
    assert not has_a(fresh)
    stored_a(fresh)
    assert has_a(fresh), "what is stored after the flush stays"


@pytest.mark.parametrize("delay", [b"1000000000", b"2592001"])
def test_flush_all_before_server_start_flushes_nothing(fresh, delay):
    # Over 30 days is a Unix time; one before the server started flushes nothing.
    stored_a(fresh)
    fresh.rt(b"flush_all " + delay + b"\r\n", b"OK\r\n")
    assert has_a(fresh)


# One matrix entry: the store's clock decides this, not the I/O back end.
@pytest.mark.one_backend
@pytest.mark.slow
def test_flush_all_delayed_relative_and_absolute(fresh):
    for delay in (b"2", None):
        delay = delay or b"%d" % (int(time.time()) + 3)
        stored_a(fresh)
        fresh.rt(b"flush_all " + delay + b"\r\n", b"OK\r\n")
        assert has_a(fresh), delay
        time.sleep(3.5)
        assert not has_a(fresh), delay


# One matrix entry: the store's clock decides this, not the I/O back end.
@pytest.mark.one_backend
@pytest.mark.slow
def test_flush_all_replaces_a_pending_one(fresh):
    # A flush at a time before the start replaces (cancels) the pending delayed one.
    stored_a(fresh)
    fresh.rt(b"flush_all 2\r\nflush_all 1000000000\r\n", b"OK\r\nOK\r\n")
    time.sleep(3.2)
    assert has_a(fresh)


# ------------------------------------------------------------------------------------------
# verbosity and shutdown


@pytest.mark.parametrize("line,reply", [
    (b"verbosity", b"ERROR\r\n"),
    (b"verbosity 1", b"OK\r\n"),
    (b"verbosity 1 noreply", b""),
    (b"verbosity noreply", b""),  # the level is `noreply`: a quiet CLIENT_ERROR
    (b"verbosity abc", b"CLIENT_ERROR bad command line format\r\n"),
    (b"verbosity -1", b"CLIENT_ERROR bad command line format\r\n"),
    (b"verbosity 4294967296", b"OK\r\n"),
    (b"verbosity 1 2", b"OK\r\n"),
    (b"verbosity 1 2 3", b"ERROR\r\n"),
])
def test_verbosity(c, line, reply):
    c.send(line + b"\r\n")
    c.rt(b"mn\r\n", reply + b"MN\r\n")


@pytest.mark.parametrize("line", [b"shutdown", b"shutdown graceful", b"shutdown foo"])
def test_shutdown_not_enabled(c, line):
    c.rt(line + b"\r\n", b"ERROR: shutdown not enabled\r\n")


@pytest.mark.parametrize("line", [b"shutdown foo", b"shutdown graceful x",
                                  b"shutdown graceful noreply", b"shutdown noreply"])
def test_shutdown_bad_mode_keeps_running(make_server, line):
    server = make_server(extra=["-A"])
    with Conn(server.mc_port) as conn:
        conn.rt(line + b"\r\n", b"CLIENT_ERROR invalid shutdown mode\r\n")
        conn.send(b"version\r\n")
        assert conn.read_line().startswith(b"VERSION ")


@pytest.mark.parametrize("line", [b"shutdown", b"shutdown graceful", b"shutdown  "])
def test_shutdown_stops_without_reply(make_server, line):
    server = make_server(extra=["-A"])
    with Conn(server.mc_port) as conn:
        conn.send(line + b"\r\n")
        assert conn.read_all_until_close(5.0) == b""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", server.mc_port), timeout=0.2).close()
        except OSError:
            return
        time.sleep(0.05)
    raise AssertionError("server still accepts after shutdown")


# ------------------------------------------------------------------------------------------
# Malformed and edge commands: one table, real memcached 1.6.18's replies byte for byte.
# Each entry: the request (`{k}` a key unique to the test, `<key251>` a 251-byte key; the
# line's `\r\n` and a `version` probe are added), the reply up to the probe's (`<version>`
# stands for a VERSION line), and whether the connection closes.
# Generated from memcached's answers; where Spinel differed, the commit fixing it says so.

ERROR_TABLE = [
    (b'set', b'ERROR\r\n<version>', False),
    (b'set {k}', b'ERROR\r\n<version>', False),
    (b'set {k} 0', b'ERROR\r\n<version>', False),
    (b'set {k} 0 0', b'ERROR\r\n<version>', False),
    (b'set {k} 0 0 1 noreply x\r\na', b'ERROR\r\nERROR\r\n<version>', False),
    (b'set {k} 0 0 1 2 3\r\na', b'ERROR\r\nERROR\r\n<version>', False),
    (b'set {k} abc 0 1\r\na', b'CLIENT_ERROR bad command line format\r\nERROR\r\n<version>', False),
    (b'set {k} 0 abc 1\r\na', b'CLIENT_ERROR bad command line format\r\nERROR\r\n<version>', False),
    (b'set {k} 0 0 abc\r\na', b'CLIENT_ERROR bad command line format\r\nERROR\r\n<version>', False),
    (b'set {k} 0 0 -1\r\na', b'CLIENT_ERROR bad command line format\r\nERROR\r\n<version>', False),
    (b'set {k} -1 0 1\r\na', b'CLIENT_ERROR bad command line format\r\nERROR\r\n<version>', False),
    (b'set {k} 0 -1 1\r\na', b'STORED\r\n<version>', False),
    (b'set {k} 0 0 1\r\nabc', b'CLIENT_ERROR bad data chunk\r\nERROR\r\n<version>', False),
    (b'set {k} 0 0 1 noreply\r\nabc', b'ERROR\r\n<version>', False),
    (b'set {k} 0 0 1\r\na\rb', b'CLIENT_ERROR bad data chunk\r\nERROR\r\n<version>', False),
    (b'set {k} 0 0 1\r\na', b'STORED\r\n<version>', False),
    (b'set {k} 0 0 0\r\n', b'STORED\r\n<version>', False),
    (b'set {k} 0 0 2147483647', b'CLIENT_ERROR bad command line format\r\n<version>', False),
    (b'set {k} 0 0 2147483646', b'CLIENT_ERROR bad command line format\r\n<version>', False),
    (b'set {k} 4294967296 0 1\r\na\r\nget {k}', b'STORED\r\nVALUE {k} 0 1\r\na\r\nEND\r\n<version>', False),
    (b'set {k} 0 0 4294967297\r\na\r\nget {k}', b'STORED\r\nVALUE {k} 0 1\r\na\r\nEND\r\n<version>', False),
    (b'set {k} 0 2147483648 1\r\na\r\nget {k}', b'STORED\r\nEND\r\n<version>', False),
    (b'set {k} 0 -1 1\r\na\r\nget {k}', b'STORED\r\nEND\r\n<version>', False),
    (b'set {k} 18446744073709551616 0 1\r\na', b'CLIENT_ERROR bad command line format\r\nERROR\r\n<version>', False),
    (b'set {k} 0 9223372036854775808 1\r\na', b'CLIENT_ERROR bad command line format\r\nERROR\r\n<version>', False),
    (b'set <key251> 0 0 1\r\na', b'CLIENT_ERROR bad command line format\r\nERROR\r\n<version>', False),
    (b'get <key251>', b'CLIENT_ERROR bad command line format\r\n<version>', False),
    (b'get a <key251>', b'CLIENT_ERROR bad command line format\r\n<version>', False),
    (b'gets <key251>', b'CLIENT_ERROR bad command line format\r\n<version>', False),
    (b'delete <key251>', b'CLIENT_ERROR bad command line format\r\n<version>', False),
    (b'incr <key251> 1', b'CLIENT_ERROR bad command line format\r\n<version>', False),
    (b'touch <key251> 1', b'CLIENT_ERROR bad command line format\r\n<version>', False),
    (b'gat 0 <key251>', b'CLIENT_ERROR bad command line format\r\n<version>', False),
    (b'append {k} 0 0 1 noreply\r\na', b'<version>', False),
    (b'append {k} 0 0 1\r\na', b'NOT_STORED\r\n<version>', False),
    (b'prepend {k} 0 0 1\r\na', b'NOT_STORED\r\n<version>', False),
    (b'replace {k} 0 0 1\r\na', b'NOT_STORED\r\n<version>', False),
    (b'add {k} 0 0 1\r\na\r\nadd {k} 0 0 1\r\nb', b'STORED\r\nNOT_STORED\r\n<version>', False),
    (b'foo', b'ERROR\r\n<version>', False),
    (b'foo bar', b'ERROR\r\n<version>', False),
    (b'GET {k}', b'ERROR\r\n<version>', False),
    (b'Set {k} 0 0 1\r\na', b'ERROR\r\nERROR\r\n<version>', False),
    (b's', b'ERROR\r\n<version>', False),
    (b'', b'ERROR\r\n<version>', False),
    (b' ', b'ERROR\r\n<version>', False),
    (b'get', b'ERROR\r\n<version>', False),
    (b'get ', b'ERROR\r\n<version>', False),
    (b'gets', b'ERROR\r\n<version>', False),
    (b'gat', b'ERROR\r\n<version>', False),
    (b'gat 0', b'END\r\n<version>', False),
    (b'gats', b'ERROR\r\n<version>', False),
    (b'gat abc {k}', b'CLIENT_ERROR invalid exptime argument\r\n<version>', False),
    (b'gat 1', b'END\r\n<version>', False),
    (b'gats x {k}', b'CLIENT_ERROR invalid exptime argument\r\n<version>', False),
    (b'gat 99999999999999999999 {k}', b'CLIENT_ERROR invalid exptime argument\r\n<version>', False),
    (b'gat 4294967295 {k}', b'END\r\n<version>', False),
    (b'bget', b'ERROR\r\n<version>', False),
    (b'bget {k}', b'END\r\n<version>', False),
    (b'touch', b'ERROR\r\n<version>', False),
    (b'touch {k}', b'ERROR\r\n<version>', False),
    (b'touch {k} abc', b'CLIENT_ERROR invalid exptime argument\r\n<version>', False),
    (b'touch {k} 1 noreply', b'<version>', False),
    (b'touch {k} 1 2', b'NOT_FOUND\r\n<version>', False),
    (b'touch {k} 1 2 3', b'ERROR\r\n<version>', False),
    (b'touch {k} abc noreply', b'<version>', False),
    (b'incr', b'ERROR\r\n<version>', False),
    (b'incr {k}', b'ERROR\r\n<version>', False),
    (b'incr {k} abc', b'CLIENT_ERROR invalid numeric delta argument\r\n<version>', False),
    (b'incr {k} -1', b'CLIENT_ERROR invalid numeric delta argument\r\n<version>', False),
    (b'incr {k} 1 2 3', b'ERROR\r\n<version>', False),
    (b'incr {k} 18446744073709551616', b'CLIENT_ERROR invalid numeric delta argument\r\n<version>', False),
    (b'decr {k} abc noreply', b'<version>', False),
    (b'incr {k} 1', b'NOT_FOUND\r\n<version>', False),
    (b'incr {k} +1', b'NOT_FOUND\r\n<version>', False),
    (b'incr {k} 1 noreply x', b'ERROR\r\n<version>', False),
    (b'set {k} 0 0 2\r\nab\r\nincr {k} 1', b'STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n<version>', False),
    (b'set {k} 0 0 2\r\n12\r\nincr {k} 18446744073709551615', b'STORED\r\n11\r\n<version>', False),
    (b'set {k} 0 0 20\r\n18446744073709551615\r\nincr {k} 1\r\nget {k}', b'STORED\r\n0\r\nVALUE {k} 0 20\r\n0                   \r\nEND\r\n<version>', False),
    (b'set {k} 0 0 3\r\n100\r\ndecr {k} 1\r\nget {k}', b'STORED\r\n99\r\nVALUE {k} 0 3\r\n99 \r\nEND\r\n<version>', False),
    (b'set {k} 0 0 3\r\n 12\r\nincr {k} 1\r\nget {k}', b'STORED\r\n13\r\nVALUE {k} 0 3\r\n13 \r\nEND\r\n<version>', False),
    (b'set {k} 0 0 3\r\n12 \r\nincr {k} 1', b'STORED\r\n13\r\n<version>', False),
    (b'set {k} 0 0 3\r\n1 2\r\nincr {k} 1', b'STORED\r\n2\r\n<version>', False),
    (b'set {k} 0 0 3\r\n+12\r\nincr {k} 1', b'STORED\r\n13\r\n<version>', False),
    (b'set {k} 0 0 3\r\n-12\r\nincr {k} 1', b'STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n<version>', False),
    (b'set {k} 0 0 2\r\n-0\r\nincr {k} 1', b'STORED\r\n1\r\n<version>', False),
    (b'set {k} 0 0 3\r\n12x\r\nincr {k} 1', b'STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n<version>', False),
    (b'set {k} 0 0 0\r\n\r\nincr {k} 1', b'STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n<version>', False),
    (b'set {k} 0 0 1\r\n \r\nincr {k} 1', b'STORED\r\nCLIENT_ERROR cannot increment or decrement non-numeric value\r\n<version>', False),
    (b'set {k} 0 0 21\r\n000000000000000000001\r\nincr {k} 1', b'STORED\r\n2\r\n<version>', False),
    (b'set {k} 0 0 2\r\n99\r\nincr {k} 1\r\nget {k}', b'STORED\r\n100\r\nVALUE {k} 0 3\r\n100\r\nEND\r\n<version>', False),
    (b'set {k} 0 0 1\r\n5\r\nincr {k} 01\r\ndecr {k} 100', b'STORED\r\n6\r\n0\r\n<version>', False),
    (b'cas {k} 0 0 1\r\na', b'ERROR\r\nERROR\r\n<version>', False),
    (b'cas {k} 0 0 1 abc\r\na', b'CLIENT_ERROR bad command line format\r\nERROR\r\n<version>', False),
    (b'cas {k} 0 0 1 -1\r\na', b'CLIENT_ERROR bad command line format\r\nERROR\r\n<version>', False),
    (b'cas {k} 0 0 1 1 noreply\r\na', b'<version>', False),
    (b'cas {k} 0 0 1 1 2 3\r\na', b'ERROR\r\nERROR\r\n<version>', False),
    (b'cas {k} 0 0 1 1\r\na', b'NOT_FOUND\r\n<version>', False),
    (b'cas {k} 0 0 1 18446744073709551616\r\na', b'CLIENT_ERROR bad command line format\r\nERROR\r\n<version>', False),
    (b'set {k} 0 0 1\r\na\r\ncas {k} 0 0 1 1\r\nb', b'STORED\r\nEXISTS\r\n<version>', False),
    (b'delete', b'ERROR\r\n<version>', False),
    (b'delete {k} 0', b'NOT_FOUND\r\n<version>', False),
    (b'delete {k} 1', b'CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n<version>', False),
    (b'delete {k} noreply', b'<version>', False),
    (b'delete {k} 0 noreply', b'<version>', False),
    (b'delete {k} x y', b'CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n<version>', False),
    (b'delete {k} 0 0 0', b'ERROR\r\n<version>', False),
    (b'delete {k} noreply 0', b'CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n<version>', False),
    (b'version x', b'<version><version>', False),
    (b'quit x', b'', True),
    (b'stats nosuch', b'ERROR\r\n<version>', False),
    (b'stats reset x', b'RESET\r\n<version>', False),
    (b'mn x', b'MN\r\n<version>', False),
    (b'mx', b'ERROR\r\n<version>', False),
    (b'm', b'ERROR\r\n<version>', False),
    (b'verbosity x noreply', b'<version>', False),
    (b'get a\tb', b'END\r\n<version>', False),
    (b'set {k}\t 0 0 1\r\na', b'STORED\r\n<version>', False),
    (b'flush_all\tx', b'ERROR\r\n<version>', False),
    (b'set a b c d e f g h i j k l m n o p q r s t u v w x y z', b'ERROR\r\n<version>', False),
    (b'get {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k}', b'END\r\n<version>', False),
    (b'set {k} 0 0 1\r\na\r\nget {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k} {k}', b'STORED\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nVALUE {k} 0 1\r\na\r\nEND\r\n<version>', False),
    (b'lru_crawler', b'ERROR\r\n<version>', False),
    (b'slabs', b'ERROR\r\n<version>', False),
    (b'lru', b'ERROR\r\n<version>', False),
    (b'cache_memlimit', b'ERROR\r\n<version>', False),
    (b'misbehave', b'ERROR\r\n<version>', False),
    (b'extstore', b'ERROR\r\n<version>', False),
    (b'debugtime', b'ERROR\r\n<version>', False),
    (b'GET / HTTP/1.1', b'', True),
    (b'foo HTTP/1.0', b'', True),
    (b'get {k} HTTP/1.1', b'END\r\n<version>', False),
    (b'set {k} 0 0 1 HTTP/1.1\r\na', b'STORED\r\n<version>', False),
]


@pytest.mark.parametrize("request_,reply,closes", ERROR_TABLE,
                         ids=[str(i) for i in range(len(ERROR_TABLE))])
def test_error_table(c, key, request_, reply, closes):
    k = key.encode()
    wire = request_.replace(b"{k}", k).replace(b"<key251>", b"x" * 251)
    c.send(wire + b"\r\nversion\r\n")
    if closes:
        assert c.read_all_until_close(5.0) == reply.replace(b"{k}", k)
        return
    want = reply.replace(b"{k}", k)
    got = b""
    while got.count(b"<version>") < want.count(b"<version>"):
        got += re.sub(rb"VERSION [^\r]*\r\n", b"<version>", c.read_line())
    assert got == want
