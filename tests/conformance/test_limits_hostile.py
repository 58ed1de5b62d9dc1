"""Limits and hostile clients: connection cap, idle timeout, slowloris, clients that never read,
garbage, HTTP on the data ports, and SIGTERM with replies in flight.

What real memcached/redis also do is marked memcache/resp and validated against them; the rest
is spinel's own contract (spinel_only).
"""

import os
import signal
import socket
import struct
import time

import pytest

from wire import Conn, resp_encode, rss_mib


def open_until_refused(port, probe, ok_prefix, limit):
    """Open connections (a round trip each) until one is refused; returns (kept, refused, reply)."""
    kept = []
    for _ in range(limit):
        conn = Conn(port)
        conn.send(probe)
        line = conn.read_line()
        if not line.startswith(ok_prefix):
            return kept, conn, line
        kept.append(conn)
    raise AssertionError(f"no connection refused after {limit}")


@pytest.mark.memcache
def test_conn_cap_memcache_port(make_server, target):
    # memcached's -c also caps its file descriptors and keeps ~20 in reserve, so it needs a
    # larger -c to start and serves fewer clients than that; spinel serves exactly -c.
    cap = 30 if target == "memcached" else 4
    server = make_server(conn_limit=cap)
    kept, refused, line = open_until_refused(server.mc_port, b"version\r\n", b"VERSION", 40)
    try:
        assert line == b"ERROR Too many open connections\r\n"
        refused.read_all_until_close(5.0)
        if target == "spinel":
            assert len(kept) == cap
        # The connections already in are unharmed.
        kept[0].send(b"version\r\n")
        assert kept[0].read_line().startswith(b"VERSION")
    finally:
        for conn in kept + [refused]:
            conn.close()
    # Once they leave, a new client is served again.
    time.sleep(0.3)
    with Conn(server.mc_port) as again:
        again.send(b"version\r\n")
        assert again.read_line().startswith(b"VERSION")


@pytest.mark.resp
def test_conn_cap_resp_port(make_server, target):
    cap = 4
    server = make_server(conn_limit=cap)
    kept, refused, line = open_until_refused(server.resp_port, b"PING\r\n", b"+PONG", 40)
    try:
        assert line == b"-ERR max number of clients reached\r\n"
        refused.read_all_until_close(5.0)
        assert len(kept) == cap
        kept[-1].rt(b"PING\r\n", b"+PONG\r\n")
    finally:
        for conn in kept + [refused]:
            conn.close()


@pytest.mark.memcache
@pytest.mark.resp
def test_idle_timeout_closes_idle_connection(make_server, target):
    server = make_server(idle_timeout=2)
    port = server.resp_port if target == "redis" else server.mc_port
    with Conn(port) as idle, Conn(port) as busy:
        start = time.monotonic()
        # The busy one keeps talking, so it must stay open past the timeout.
        probe, reply = ((b"PING\r\n", b"+PONG\r\n") if target == "redis"
                        else (b"mn\r\n", b"MN\r\n"))
        while time.monotonic() - start < 3.5:
            busy.rt(probe, reply)
            time.sleep(0.3)
        # memcached checks idle connections on a timer, so allow a few seconds of slack.
        idle.read_all_until_close(5.0)
        assert time.monotonic() - start < 8.5
        busy.rt(probe, reply)


@pytest.mark.spinel_only
def test_idle_timeout_closes_slowloris(make_server):
    # Half a request, then silence: the idle clock keeps running (memcached 1.6.18 does not
    # time out a connection waiting in the middle of a value; spinel does).
    server = make_server(idle_timeout=2)
    with Conn(server.mc_port) as mc, Conn(server.resp_port) as resp:
        mc.send(b"set slow 0 0 10\r\nab")
        resp.send(b"*3\r\n$3\r\nSET\r\n$4\r\nslow")
        mc.read_all_until_close(6.0)
        resp.read_all_until_close(6.0)


@pytest.mark.spinel_only
@pytest.mark.slow
def test_client_that_never_reads_is_paused_not_buffered(make_server):
    """Backpressure: a client that pipelines gets of a 512 KB value and never reads is no
    longer read once its unsent replies pass the pause threshold; the server's memory stays
    flat, others keep being served, and when the client resets, it is gone at once."""
    server = make_server()
    value = b"v" * (512 * 1024)
    with Conn(server.mc_port) as setup:
        setup.rt(b"set hog 0 0 %d\r\n%s\r\n" % (len(value), value), b"STORED\r\n")
    rss_before = rss_mib(server.pid)
    hog = socket.create_connection(("127.0.0.1", server.mc_port), timeout=3)
    hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    hog.setblocking(False)
    request = b"get hog\r\n" * 64
    sent = 0
    rss_peak = rss_before
    deadline = time.monotonic() + 3
    with Conn(server.mc_port) as other:
        while time.monotonic() < deadline:
            try:
                sent += hog.send(request)
            except BlockingIOError:
                pass
            other.rt(b"mn\r\n", b"MN\r\n")  # others keep being served throughout
            rss_peak = max(rss_peak, rss_mib(server.pid))
            time.sleep(0.01)
        print(f"never-reader: sent {sent} bytes of gets; server RSS {rss_before:.1f} -> "
              f"peak {rss_peak:.1f} MiB")
        # 256 gets of 512 KB ask for 128 MB of replies, far past any buffer on the way.
        assert sent >= len(request) * 4, "the hog sent too little to make the test meaningful"
        assert rss_peak - rss_before < 16, f"server RSS grew {rss_peak - rss_before:.1f} MiB"
        hog.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        hog.close()
        other.rt(b"get nothing\r\n", b"END\r\n")


@pytest.mark.memcache
def test_binary_garbage_memcache_port_leaves_others_unharmed(mc_port, key):
    with Conn(mc_port) as good:
        good.rt(b"set " + key.encode() + b" 0 0 1\r\nx\r\n", b"STORED\r\n")
        for garbage in (bytes(range(256)) * 4, b"\xff" * 5000, b"\x00\r\n" * 100):
            bad = socket.create_connection(("127.0.0.1", mc_port), timeout=3)
            bad.sendall(garbage)
            good.rt(b"get " + key.encode() + b"\r\n",
                    b"VALUE " + key.encode() + b" 0 1\r\nx\r\nEND\r\n")
            bad.close()


@pytest.mark.resp
def test_binary_garbage_resp_port_leaves_others_unharmed(resp_port, key):
    with Conn(resp_port) as good:
        good.rt(resp_encode("SET", key, "x"), b"+OK\r\n")
        for garbage in (bytes(range(256)) * 4, b"\xff" * 5000, b"*\x00\r\n$\xff\r\n" * 50):
            bad = socket.create_connection(("127.0.0.1", resp_port), timeout=3)
            try:
                bad.sendall(garbage)
            except (BrokenPipeError, ConnectionResetError):
                pass
            good.rt(resp_encode("GET", key), b"$1\r\nx\r\n")
            bad.close()


@pytest.mark.memcache
def test_key_251_bytes_rejected(mc_port):
    with Conn(mc_port) as c:
        c.rt(b"get " + b"k" * 251 + b"\r\n", b"CLIENT_ERROR bad command line format\r\n")
        c.rt(b"mn\r\n", b"MN\r\n")


@pytest.mark.memcache
def test_http_request_on_memcache_port_closes(mc_port):
    with Conn(mc_port) as c:
        c.send(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: test\r\n\r\n")
        c.read_all_until_close(5.0)


@pytest.mark.resp
def test_http_request_on_resp_port_closes(resp_port):
    # Redis treats a "Host:" line (or POST) as a cross-protocol attack and hangs up.
    with Conn(resp_port) as c:
        c.send(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: test\r\n\r\n")
        c.read_all_until_close(5.0)
    with Conn(resp_port) as c:
        c.send(b"POST / HTTP/1.1\r\n")
        c.read_all_until_close(5.0)


@pytest.mark.memcache
@pytest.mark.resp
def test_sigterm_exits_zero_and_delivers_replies_in_flight(make_server, target):
    server = make_server()
    port = server.resp_port if target == "redis" else server.mc_port
    with Conn(port) as c:
        if target == "redis":
            c.rt(resp_encode("SET", "inflight", "v" * 1000), b"+OK\r\n")
            request = resp_encode("GET", "inflight") * 200
            reply = b"$1000\r\n" + b"v" * 1000 + b"\r\n"
        else:
            c.rt(b"set inflight 0 0 1000\r\n" + b"v" * 1000 + b"\r\n", b"STORED\r\n")
            request = b"get inflight\r\n" * 200
            reply = b"VALUE inflight 0 1000\r\n" + b"v" * 1000 + b"\r\nEND\r\n"
        c.send(request)
        first = c.read_exact(len(reply))  # the batch is being processed
        os.kill(server.pid, signal.SIGTERM)
        rest = c.read_all_until_close(5.0)
    got = first + rest
    # Every reply the server sends is whole: no torn reply at the end.
    assert len(got) % len(reply) == 0 and got == reply * (len(got) // len(reply))
    assert server.proc.wait(5) == 0, server.describe()
