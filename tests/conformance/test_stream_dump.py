"""Streams across DUMP/RESTORE and snapshots. A stream DUMPed by a real `redis-server`
7.0.15 (started here, whatever the target) RESTOREs on the server under test to the same
XINFO STREAM FULL (entries, counters, groups, pending entries, consumers), and the
server's own DUMP RESTOREs on redis-server the same way; a stream dumps byte for byte
as redis-server dumps it, deletions and all; damaged stream payloads are refused with
Redis's error and the server keeps answering; and (Spinel only) SAVE then a restart keeps
streams with their groups."""

import pytest

from test_redis_hash import call
from wire import Conn, resp_encode

# Slow: an application run or a whole-table sweep, not about the I/O back end; two of the
# matrix's entries are enough.
pytestmark = [pytest.mark.resp, pytest.mark.slow]

BAD_DATA = b"-ERR Bad data format\r\n"
# XINFO STREAM FULL's clock readings: a restored key keeps them, but they are read at
# different moments on the two servers only where they are idle times (none here).
TIMES = {b"seen-time", b"delivery-time", b"active-time"}


@pytest.fixture
def c(resp_port):
    with Conn(resp_port) as conn:
        yield conn



@pytest.fixture
def r(redis_server):
    with Conn(redis_server.resp_port) as conn:
        yield conn


def build(conn, key, deletions=True, consumers=True):
    """A stream over several nodes (some entries big, some with integer-looking fields),
    with deletions, two groups, pending entries of two consumers and one idle consumer."""
    for n in range(1, 260):
        if n % 5:
            fields = ["f", str(n), "name", "x" * (n % 70), "n", str(-n * 1000)]
        else:
            fields = ["other", f"v{n}", "big", "y" * 3000]
        assert call(conn, "XADD", key, f"{n}-{n % 3}", *fields) == f"{n}-{n % 3}".encode()
    if deletions:
        assert call(conn, "XDEL", key, "3-0", "4-1", "250-1") == 3
    assert call(conn, "XGROUP", "CREATE", key, "g1", "0") == b"OK"
    assert call(conn, "XGROUP", "CREATE", key, "g2", "$") == b"OK"
    assert call(conn, "XGROUP", "CREATE", key, "g3", "100-0", "ENTRIESREAD", "7") == b"OK"
    if not consumers:
        return
    call(conn, "XREADGROUP", "GROUP", "g1", "alice", "COUNT", "5", "STREAMS", key, ">")
    call(conn, "XREADGROUP", "GROUP", "g1", "bob", "COUNT", "3", "STREAMS", key, ">")
    assert call(conn, "XACK", key, "g1", "1-1") == 1
    assert call(conn, "XGROUP", "CREATECONSUMER", key, "g2", "idle") == 1


def full(conn, key):
    return scrub(call(conn, "XINFO", "STREAM", key, "FULL"))


def scrub(reply):
    """The reply without its clock readings (each restore keeps them; both servers read
    the same payload, but a Spinel-built stream and a Redis-built one differ in them)."""
    if not isinstance(reply, list):
        return reply
    out = []
    skip = False
    for n, item in enumerate(reply):
        if skip:
            out.append(b"T")
            skip = False
            continue
        skip = isinstance(item, bytes) and item in TIMES and n + 1 < len(reply)
        out.append(scrub(item))
    return out


def test_redis_stream_restores_here(c, r, key):
    build(r, key)
    payload = call(r, "DUMP", key)
    assert call(c, "RESTORE", key, "0", payload) == b"OK"
    assert full(c, key) == full(r, key)
    # The clock readings come across unchanged, too.
    assert call(c, "XPENDING", key, "g1", "-", "+", "10")[0][:2] == \
        call(r, "XPENDING", key, "g1", "-", "+", "10")[0][:2]
    # And it goes on as a stream: a group reads on from where it was.
    for conn in (c, r):
        assert call(conn, "XADD", key, "300-0", "a", "b") == b"300-0"
    assert call(c, "XREADGROUP", "GROUP", "g1", "carol", "COUNT", "2", "STREAMS", key, ">") == \
        call(r, "XREADGROUP", "GROUP", "g1", "carol", "COUNT", "2", "STREAMS", key, ">")
    assert call(c, "XINFO", "STREAM", key) == call(r, "XINFO", "STREAM", key)
    assert call(c, "XPENDING", key, "g1") == call(r, "XPENDING", key, "g1")


def test_stream_restores_on_redis(c, r, key):
    build(c, key)
    assert call(r, "RESTORE", key, "0", call(c, "DUMP", key)) == b"OK"
    assert full(r, key) == full(c, key)
    empty = key + ":empty"
    assert call(c, "XGROUP", "CREATE", empty, "g", "$", "MKSTREAM") == b"OK"
    assert call(r, "RESTORE", empty, "0", call(c, "DUMP", empty)) == b"OK"
    assert full(r, empty) == full(c, empty)


@pytest.mark.parametrize("deletions", [False, True])
def test_payload_bytes_are_redis(c, r, key, deletions):
    """Byte for byte, deleted entries too (flagged in their node until it goes, as Redis
    keeps them): XDEL, an exact XTRIM into a node, a MINID trim."""
    for conn in (c, r):
        # Consumers and pending entries carry clock readings, which differ.
        build(conn, key, deletions=deletions, consumers=False)
        if deletions:
            assert call(conn, "XTRIM", key, "MAXLEN", "=", "250") == 6
            assert call(conn, "XTRIM", key, "MINID", "12-0") == 3
    assert call(c, "DUMP", key) == call(r, "DUMP", key)


def test_damaged_stream_payloads_refused(c, r, key):
    build(r, key)
    payload = call(r, "DUMP", key)
    body = payload[:-10]
    sealed = []
    for cut in (1, 2, 20, len(body) // 2, len(body) - 1):
        sealed.append(reseal(c, body[:cut]))
    for at in (1, 3, 20, 40):
        damaged = bytearray(body)
        damaged[at] ^= 0xFF
        sealed.append(reseal(c, bytes(damaged)))
    for n, bad in enumerate(sealed):
        c.send(resp_encode("RESTORE", f"{key}:{n}", "0", bad))
        reply = c.read_line()
        assert reply in (BAD_DATA, b"+OK\r\n"), reply
    c.rt(resp_encode("PING"), b"+PONG\r\n")


def reseal(conn, body):
    """`body` with an RDB 10 footer and its CRC-64, computed by the server itself (the
    checksum of a DUMP of a string whose payload is `body`'s would differ): Python's."""
    payload = body + (10).to_bytes(2, "little")
    return payload + crc64(payload).to_bytes(8, "little")


def crc64(data):
    """Redis's CRC-64 (Jones, reflected)."""
    poly, crc = 0x95AC9329AC4BC9B5, 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ poly if crc & 1 else crc >> 1
    return crc


def test_save_and_restart_keep_streams(make_server, tmp_path, target, key):
    if target != "spinel":
        pytest.skip("Spinel's snapshot files")
    args = ["--dir", str(tmp_path), "--dbfilename", "streams.snap"]
    first = make_server(extra=args)
    with Conn(first.resp_port) as conn:
        build(conn, key)
        assert call(conn, "XGROUP", "CREATE", "empty", "g", "$", "MKSTREAM") == b"OK"
        before = full(conn, key), full(conn, "empty")
        raw = call(conn, "XINFO", "STREAM", key, "FULL")
        assert call(conn, "SAVE") == b"OK"
    first.stop()
    second = make_server(extra=args)
    with Conn(second.resp_port) as conn:
        assert (full(conn, key), full(conn, "empty")) == before
        assert call(conn, "XINFO", "STREAM", key, "FULL") == raw, "clock readings kept"
        assert call(conn, "XADD", key, "300-0", "a", "b") == b"300-0"
        got = call(conn, "XREADGROUP", "GROUP", "g2", "idle", "STREAMS", key, ">")
        assert got == [[key.encode(), [[b"300-0", [b"a", b"b"]]]]]
