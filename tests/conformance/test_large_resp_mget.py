"""Redis MGET of large values: a 48-key MGET of 10 KB values is a 480 KB reply made in one
piece (its buffer is one of the output pool's large ones, see `rt::buf`). Replies arrive
whole, byte for byte and in order, pipelined, inside MULTI/EXEC, and each MGET counts as one
command; clients that pipeline such MGETs and never read hold a bounded amount of the
server's memory while others are served.

The byte-exact tests hold for redis-server too (`CONFORMANCE_TARGET=redis`); the memory bound
is Spinel's own contract.
"""

import re
import socket
import struct
import time

import pytest

from wire import Conn, feed_hogs, open_hog, resp_encode, rss_mib, value_of

KEYS = 48


def store_keys(conn, prefix, size, count=KEYS):
    keys = [b"%s%03d" % (prefix, i) for i in range(count)]
    conn.send(b"".join(resp_encode(b"SET", key, value_of(i, size)) for i, key in enumerate(keys)))
    want = b"+OK\r\n" * count
    assert conn.read_exact(len(want), timeout=10.0) == want
    return keys


def mget_reply(keys, size, missing=()):
    """The array MGET answers for `keys` (their values as `store_keys` set them)."""
    parts = [b"*%d\r\n" % len(keys)]
    for key in keys:
        if key in missing:
            parts.append(b"$-1\r\n")
        else:
            i = int(key[-3:])
            parts.append(b"$%d\r\n%s\r\n" % (size, value_of(i, size)))
    return b"".join(parts)


@pytest.mark.resp
@pytest.mark.parametrize("size", [1024, 10000, 70000])
def test_mget_of_large_values_is_whole_and_in_order(make_server, size):
    # 48 values of 1 KB (under the pool's small buffers), 10 KB (a 480 KB reply) and 70 KB
    # (3.3 MB, past the largest pooled buffer): three MGETs, one with a missing key in the
    # middle, and a PING pipelined in one write, every reply whole and in order; INFO counts
    # each MGET once.
    server = make_server()
    with Conn(server.resp_port) as conn:
        keys = store_keys(conn, b"rlv%d_" % size, size)
        reversed_keys = keys[::-1]
        holed = keys[:20] + [b"rlv_missing_000"] + keys[20:]
        conn.send(resp_encode(b"CONFIG", b"RESETSTAT")
                  + resp_encode(b"MGET", *keys) + resp_encode(b"MGET", *reversed_keys)
                  + resp_encode(b"MGET", *holed) + resp_encode(b"PING"))
        want = (b"+OK\r\n" + mget_reply(keys, size) + mget_reply(reversed_keys, size)
                + mget_reply(holed, size, missing={b"rlv_missing_000"}) + b"+PONG\r\n")
        assert conn.read_exact(len(want), timeout=30.0) == want
        conn.assert_quiet()
        conn.send(resp_encode(b"INFO", b"commandstats"))
        header = conn.read_line()
        body = conn.read_exact(int(header[1:-2]) + 2)
        assert re.search(rb"cmdstat_mget:calls=3,", body), body


@pytest.mark.resp
def test_large_mget_inside_multi_is_one_reply(make_server):
    # A queued MGET of 480 KB comes back inside EXEC's array, whole, after the other command.
    server = make_server()
    size = 10000
    with Conn(server.resp_port) as conn:
        keys = store_keys(conn, b"rlm_", size)
        conn.send(resp_encode(b"MULTI") + resp_encode(b"MGET", *keys) + resp_encode(b"PING")
                  + resp_encode(b"EXEC") + resp_encode(b"PING"))
        want = (b"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n" + mget_reply(keys, size)
                + b"+PONG\r\n+PONG\r\n")
        assert conn.read_exact(len(want), timeout=30.0) == want
        conn.assert_quiet()


def fill_store(conn, size, count=10000):
    """Fills the store to its limit, so that the growth measured after is the connections'."""
    fill = value_of(0, size)
    for start in range(0, count, 500):
        conn.send(b"".join(resp_encode(b"SET", b"f%07d" % (start + i), fill)
                           for i in range(500)))
        want = b"+OK\r\n" * 500
        assert conn.read_exact(len(want), timeout=10.0) == want


@pytest.mark.resp
@pytest.mark.spinel_only
@pytest.mark.slow
def test_never_readers_of_large_mgets_hold_bounded_memory(make_server):
    """20 clients pipeline 48-key MGETs of 10 KB values and never read, while a writer
    overwrites keys with new 10 KB values past the 64 MiB limit (evicting) and other clients
    MGET the same keys and read. Each hog holds about one 480 KB reply (its connection pauses
    at the output threshold, and an MGET's reply is made whole), so the server's memory stays
    bounded; the readers are answered whole and promptly throughout."""
    server = make_server()
    size = 10000
    fill = value_of(0, size)
    with Conn(server.resp_port) as setup:
        fill_store(setup, size)
        keys = store_keys(setup, b"rhog", size)
    request = resp_encode(b"MGET", *keys) * 8
    hogs = [open_hog(server.resp_port) for _ in range(20)]
    rss_before = rss_mib(server.pid)
    rss_peak, sent, written, slowest = rss_before, 0, 0, 0.0
    deadline = time.monotonic() + 4
    readers = [Conn(server.resp_port) for _ in range(4)]
    with Conn(server.resp_port) as writer:
        while time.monotonic() < deadline:
            sent += feed_hogs(hogs, request)
            # 50 new 10 KB keys per round: about 100 MB over the run, past -m 64. The
            # readers' keys are rewritten with the same values, so they stay whole.
            batch = b"".join(resp_encode(b"SET", b"w%07d" % (written + i), fill)
                             for i in range(50))
            started = time.monotonic()
            writer.send(batch + resp_encode(b"PING"))
            want = b"+OK\r\n" * 50 + b"+PONG\r\n"
            assert writer.read_exact(len(want), timeout=10.0) == want
            for reader in readers:
                reader.send(resp_encode(b"MGET", *keys[:8]) + resp_encode(b"PING"))
            for reader in readers:
                got = reader.read_until(b"+PONG\r\n", timeout=10.0)
                assert got in (mget_reply(keys[:8], size) + b"+PONG\r\n",), got[:200]
            slowest = max(slowest, time.monotonic() - started)
            written += 50
            rss_peak = max(rss_peak, rss_mib(server.pid))
        writer.send(resp_encode(b"INFO", b"stats"))
        header = writer.read_line()
        info = writer.read_exact(int(header[1:-2]) + 2)
    for reader in readers:
        reader.close()
    evictions = int(re.search(rb"evicted_keys:(\d+)", info).group(1))
    print(f"hogs sent {sent} bytes of MGETs; {written} sets; RSS {rss_before:.1f} -> peak "
          f"{rss_peak:.1f} MiB; slowest round {slowest * 1000:.0f} ms; evictions {evictions}")
    assert sent >= len(request) * len(hogs), "the hogs sent too little to mean anything"
    assert evictions > 0, "the writer did not fill the store"
    # 20 hogs at about one 480 KB reply each (10 MB), the loop's pool (at most 16 large
    # buffers of up to 1 MiB, only while in use) and slack.
    assert rss_peak - rss_before < 32, f"server RSS grew {rss_peak - rss_before:.1f} MiB"
    assert slowest < 2.0, f"a round took {slowest:.2f} s"
    for hog in hogs:
        hog.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        hog.close()
    with Conn(server.resp_port) as after:
        after.rt(resp_encode(b"GET", b"nothing"), b"$-1\r\n")
