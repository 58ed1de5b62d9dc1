"""memcached's `-o read_buf_mem_limit=MB`: each worker thread has MB/threads/16 KiB read
buffers (at least one). A connection holds one while it has a partly received command line;
one that needs a buffer when none is left is closed without a message, and `stats` counts it
in read_buf_oom. Connections with whole requests and long multiget lines still work once the
holders are gone.

The servers run with -o read_buf_mem_limit=1 (64 buffers over the threads); memcached with
-t 1 (its default is 4 threads: 16 buffers each).
"""

import re
import time

import pytest

from wire import Conn

LIMIT_MB = 1
HOLDERS = 100
READ_BUFFERS = LIMIT_MB * 2**20 // (16 * 1024)


def stats(port, kind=b""):
    """`stats [kind]` as a dict of name -> text value."""
    with Conn(port) as conn:
        conn.send(b"stats %s\r\n" % kind if kind else b"stats\r\n")
        raw = conn.read_until(b"END\r\n")
    return {m[1].decode(): m[2].decode()
            for m in re.finditer(rb"STAT (\S+) (\S+)\r\n", raw)}


def start(make_server, target):
    extra = ["-o", f"read_buf_mem_limit={LIMIT_MB}"]
    if target == "memcached":
        extra += ["-t", "1"]
    return make_server(extra=extra)


def stat_soon(port, name, predicate, timeout_s=2.0):
    """Spinel's counters are refreshed at each tick (100 ms): poll for a while."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = int(stats(port)[name])
        if predicate(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


@pytest.mark.memcache
def test_settings_show_the_limit_in_bytes(make_server, target):
    server = start(make_server, target)
    assert stats(server.mc_port, b"settings")["read_buf_mem_limit"] == str(LIMIT_MB << 20)


@pytest.mark.slow
@pytest.mark.memcache
def test_partial_lines_over_the_limit_close_connections(make_server, target):
    """100 connections each send the start of a command line: those past the thread's read
    buffers are closed without a word; the others are still open and, once they finish their
    line, answered. After they all go away, stats shows read_buf_oom and a 300-key multiget
    of long keys (a line longer than one read buffer) is answered whole."""
    server = start(make_server, target)
    port = server.mc_port
    with Conn(port) as conn:
        conn.rt(b"set rb:k 0 0 1\r\nx\r\n", b"STORED\r\n")
    holders = []
    try:
        for i in range(HOLDERS):
            conn = Conn(port)
            conn.send(b"get rb:k")  # no line end: the server must keep it
            holders.append(conn)
            time.sleep(0.002)  # one at a time, so each is read on its own
        time.sleep(0.3)
        open_ones = [c for c in holders if c.is_open(wait=0.05)]
        closed = len(holders) - len(open_ones)
        print(f"{target}: {closed} of {HOLDERS} closed")
        # memcached closed one more than the count (measured: 37 of 100 with 64 buffers).
        assert 0 < closed <= HOLDERS - READ_BUFFERS + 1, closed
        if target == "memcached" or server.threads == 1:
            assert closed >= HOLDERS - READ_BUFFERS, closed
        if target == "spinel":
            # Spinel keeps serving whole requests while the buffers are all held.
            held = stat_soon(port, "read_buf_count", lambda v: v == len(open_ones))
            assert held == len(open_ones)
        for conn in open_ones[:5]:
            conn.send(b"\r\n")
            assert conn.read_until(b"END\r\n") == b"VALUE rb:k 0 1\r\nx\r\nEND\r\n"
    finally:
        for conn in holders:
            conn.close()
    time.sleep(0.2)
    assert stat_soon(port, "read_buf_oom", lambda v: v >= closed) >= closed
    keys = [b"rb:%03d:%s" % (i, b"k" * 56) for i in range(300)]
    with Conn(port) as conn:
        conn.rt(b"set %s 0 0 2\r\nv7\r\n" % keys[7], b"STORED\r\n")
        conn.send(b"get " + b" ".join(keys) + b"\r\n")
        assert conn.read_until(b"END\r\n") == b"VALUE %s 0 2\r\nv7\r\nEND\r\n" % keys[7]
