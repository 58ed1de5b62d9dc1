"""Multigets of large values: replies that span several of Spinel's reply chunks (a multiget
is answered in chunks of at least 64 KiB, each sent before the next is produced) arrive whole
and in order, and clients that ask for many large values and never read hold a bounded amount
of the server's memory while writers fill and evict the store.

The byte-exact tests hold for memcached too (`CONFORMANCE_TARGET=memcached`); the memory
bound is Spinel's own contract.
"""

import socket
import struct
import time

import pytest

from wire import Conn, feed_hogs, open_hog, rss_mib, value_of

KEYS = 48


def store_keys(conn, prefix, size, count=KEYS):
    keys = [b"%s%03d" % (prefix, i) for i in range(count)]
    for i, key in enumerate(keys):
        value = value_of(i, size)
        conn.rt(b"set %s 7 0 %d\r\n%s\r\n" % (key, len(value), value), b"STORED\r\n")
    return keys


def expected_reply(keys, size):
    parts = [b"VALUE %s 7 %d\r\n%s\r\n" % (key, size, value_of(i, size))
             for i, key in enumerate(keys)]
    return b"".join(parts) + b"END\r\n"


@pytest.mark.memcache
@pytest.mark.parametrize("size", [1024, 10000, 70000])
def test_multiget_of_large_values_is_whole_and_in_order(make_server, size):
    # 48 values of 1 KB (one chunk), 10 KB (several) and 70 KB (a chunk per value), two
    # multigets and a no-op pipelined in one write: every reply whole and in order.
    server = make_server()
    with Conn(server.mc_port) as conn:
        keys = store_keys(conn, b"lv%d_" % size, size)
        reversed_keys = keys[::-1]
        conn.send(b"get " + b" ".join(keys) + b"\r\nget " + b" ".join(reversed_keys)
                  + b"\r\nmn\r\n")
        want = (expected_reply(keys, size)
                + expected_reply_reversed(keys, size) + b"MN\r\n")
        assert conn.read_exact(len(want), timeout=30.0) == want
        conn.assert_quiet()


def expected_reply_reversed(keys, size):
    parts = [b"VALUE %s 7 %d\r\n%s\r\n" % (key, size, value_of(i, size))
             for i, key in reversed(list(enumerate(keys)))]
    return b"".join(parts) + b"END\r\n"


@pytest.mark.spinel_only
@pytest.mark.slow
def test_never_readers_of_large_multigets_hold_bounded_memory(make_server):
    """20 clients pipeline 48-key gets of 10 KB values and never read, while a writer
    overwrites keys with new 10 KB values past the 64 MiB limit (evicting). Each hog holds
    at most about a reply chunk plus a value, so the server's memory stays flat; another
    client is answered promptly throughout, and the writer is never stalled."""
    server = make_server()
    size = 10000
    fill = value_of(0, size)
    with Conn(server.mc_port) as setup:
        # Fill the store to its limit first, so that the growth measured below is the
        # connections' and not the store's.
        for start in range(0, 10000, 500):
            setup.send(b"".join(b"set f%07d 0 0 %d noreply\r\n%s\r\n" % (start + i, size, fill)
                                for i in range(500)))
            setup.rt(b"mn\r\n", b"MN\r\n")
        keys = store_keys(setup, b"hog", size)
    request = (b"get " + b" ".join(keys) + b"\r\n") * 8
    hogs = [open_hog(server.mc_port) for _ in range(20)]
    rss_before = rss_mib(server.pid)
    rss_peak, sent, written, slowest = rss_before, 0, 0, 0.0
    deadline = time.monotonic() + 4
    with Conn(server.mc_port) as other, Conn(server.mc_port) as writer:
        while time.monotonic() < deadline:
            sent += feed_hogs(hogs, request)
            # 50 new 10 KB keys per round: about 100 MB over the run, past -m 64.
            batch = b"".join(b"set w%07d 0 0 %d noreply\r\n%s\r\n" % (written + i, size, fill)
                             for i in range(50))
            started = time.monotonic()
            writer.send(batch)
            writer.rt(b"mn\r\n", b"MN\r\n")
            other.rt(b"mn\r\n", b"MN\r\n")
            slowest = max(slowest, time.monotonic() - started)
            written += 50
            rss_peak = max(rss_peak, rss_mib(server.pid))
        stats = stat_lines(other)
    print(f"hogs sent {sent} bytes of gets; {written} sets; RSS {rss_before:.1f} -> peak "
          f"{rss_peak:.1f} MiB; slowest round trip {slowest * 1000:.0f} ms; "
          f"evictions {stats.get(b'evictions')}")
    assert sent >= len(request) * len(hogs), "the hogs sent too little to mean anything"
    assert int(stats[b"evictions"]) > 0, "the writer did not fill the store"
    # 20 hogs at a 64 KiB chunk plus a value each: about 1.5 MiB (the store was full before).
    assert rss_peak - rss_before < 16, f"server RSS grew {rss_peak - rss_before:.1f} MiB"
    assert slowest < 2.0, f"a round trip took {slowest:.2f} s"
    for hog in hogs:
        hog.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        hog.close()
    with Conn(server.mc_port) as after:
        after.rt(b"get nothing\r\n", b"END\r\n")


def stat_lines(conn):
    conn.send(b"stats\r\n")
    raw = conn.read_until(b"END\r\n")
    stats = {}
    for line in raw.split(b"\r\n"):
        parts = line.split(b" ")
        if len(parts) == 3 and parts[0] == b"STAT":
            stats[parts[1]] = parts[2]
    return stats
