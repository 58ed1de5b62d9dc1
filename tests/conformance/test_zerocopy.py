"""Zero-copy sends of lent values (`--zerocopy-min-bytes`, issue 36 item 1): a batch that lends
that many bytes sends them with MSG_ZEROCOPY, and the read's pin is held until the kernel's
notification says it is done with the pages, not only until sendmsg returns. Loopback always
copies (the notification says so, and the socket goes back to plain sends), so here the first
large sends of each connection are zero-copy and the rest plain: every test below crosses that
switch.

- values whole while other clients overwrite, delete and evict them, read slowly;
- a client that never reads: held bytes count as its unsent output (it pauses), the server's
  memory stays put, other clients are served meanwhile (a zero-copy send only goes to a socket
  with nothing queued, at most the peer's window, so it is not held behind the stalled reader;
  one held past 1 s would reset the connection: rt's unit tests cover that);
- a connection closed with sends held (the client asked, or went away): the bytes already
  queued still arrive whole, then the end of the stream; the server stays healthy.
"""

import socket
import time

import pytest

from test_lent_values import (check_whole, parse_get_reply, set_first_versions, slow_get,
                              versioned, write_versions)
from wire import Conn, reads_while_written

ZC_MIN = 16384
ZC_FLAGS = ["--zerocopy-min-bytes", str(ZC_MIN)]


def zc_server(make_server):
    return make_server(extra=ZC_FLAGS)


@pytest.mark.slow
@pytest.mark.parametrize("size", [20000, 100000])
def test_zero_copied_values_are_whole_while_overwritten(make_server, size):
    server = zc_server(make_server)
    prefix = b"zc%d" % size
    keys = set_first_versions(server.mc_port, prefix, size)

    def read():
        hits = 0
        # Fresh connections: each starts zero-copy, until its first notification.
        for _ in range(4):
            hits += sum(slow_get(server.mc_port, keys, size, rounds=3))
            hits += sum(slow_get(server.mc_port, keys[:1], size, rounds=3))
        return hits

    hits, writes = reads_while_written(write_versions, server.mc_port, prefix, size, read)
    print(f"{hits} whole values read while {writes} write rounds ran")
    assert writes > 0 and hits > 0
    with Conn(server.mc_port) as after:
        after.rt(b"mn\r\n", b"MN\r\n")


def test_single_gets_above_the_threshold_are_exact(make_server):
    """Many rounds on one connection: zero-copy first, plain after the kernel said it copied;
    the stream is the same either way."""
    server = zc_server(make_server)
    size = 50000
    value = versioned(1, 7, size)
    with Conn(server.mc_port) as conn:
        conn.rt(b"set k_001 7 0 %d\r\n%s\r\n" % (size, value), b"STORED\r\n")
        reply = b"VALUE k_001 7 %d\r\n%s\r\nEND\r\n" % (size, value)
        for _ in range(50):
            conn.send(b"get k_001\r\n")
            assert conn.read_exact(len(reply)) == reply
        conn.send(b"get k_001 k_001 k_001\r\n")
        got = conn.read_until(b"END\r\n")
        assert [data for _, _, data in parse_get_reply(got)] == [value] * 3


def test_a_client_that_never_reads_is_bounded(make_server):
    """It asks for hundreds of megabytes and reads nothing: held zero-copy bytes count as its
    unsent output, so it pauses as it would without zero-copy, the server's memory stays put,
    and another client is served all along."""
    server = zc_server(make_server)
    size = 100000
    value = versioned(2, 3, size)
    with Conn(server.mc_port) as setup:
        setup.rt(b"set k_002 3 0 %d\r\n%s\r\n" % (size, value), b"STORED\r\n")
    rss_before = rss_kib(server.pid)
    hog = socket.create_connection(("127.0.0.1", server.mc_port))
    hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    hog.setblocking(False)
    request = b"get k_002\r\n" * 100
    asked = 0
    for _ in range(50):
        try:
            asked += hog.send(request) // len(b"get k_002\r\n")
        except BlockingIOError:
            pass
        time.sleep(0.01)
    reply = b"VALUE k_002 3 %d\r\n%s\r\nEND\r\n" % (size, value)
    with Conn(server.mc_port) as other:
        for _ in range(20):
            other.send(b"get k_002\r\n")
            assert other.read_exact(len(reply)) == reply
            other.rt(b"set w 0 0 %d\r\n%s\r\n" % (size, value), b"STORED\r\n")
    grown = rss_kib(server.pid) - rss_before
    print(f"asked for {asked} values ({asked * size >> 20} MiB); server grew {grown} KiB")
    assert asked * size > 64 << 20
    assert grown < 16 << 10, f"server grew {grown} KiB for a client that reads nothing"
    hog.close()
    assert server.proc.poll() is None


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_close_with_sends_held(make_server):
    """quit right behind large gets: the replies arrive whole, then the end of the stream.
    Clients that vanish without reading leave a healthy server."""
    server = zc_server(make_server)
    size = 200000
    value = versioned(3, 9, size)
    with Conn(server.mc_port) as setup:
        setup.rt(b"set k_003 9 0 %d\r\n%s\r\n" % (size, value), b"STORED\r\n")
    for _ in range(3):
        with Conn(server.mc_port) as conn:
            conn.send(b"get k_003 k_003\r\nget k_003\r\nquit\r\n")
            time.sleep(0.2)
            got = conn.read_all_until_close(timeout=10)
        hits = parse_get_reply(got[:got.index(b"END\r\n") + 5])
        assert len(hits) == 2
        rest = got[got.index(b"END\r\n") + 5:]
        assert parse_get_reply(rest) == [(b"k_003", 9, value)]
        for key, flags, data in hits:
            check_whole(key, flags, data, size)
    for _ in range(20):
        gone = socket.create_connection(("127.0.0.1", server.mc_port))
        gone.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        gone.sendall(b"get k_003 k_003 k_003\r\n")
        gone.close()
    with Conn(server.mc_port) as after:
        for _ in range(3):
            after.rt(b"set k_003 10 0 %d\r\n%s\r\n" % (size, value), b"STORED\r\n")
            after.send(b"get k_003\r\n")
            got = after.read_until(b"END\r\n")
            assert parse_get_reply(got) == [(b"k_003", 10, value)]
    assert server.proc.poll() is None
