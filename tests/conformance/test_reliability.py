"""Issue 16 ("Reliability first"), connection side: half-close, unread pipelines, resets, a crowd
of hostile clients beside checked ones, and connection churn. Each test drives the release
binary on real sockets and reports the figure it asserts (hostile.report: a `FIGURE` line on
stderr, shown with -rA, plus a JUnit property).

The scenarios are the issue's table, scaled to run in well under three minutes per matrix entry
on a 2-core machine; each scaled scenario still fails on the bug it is for. Where real
memcached or Redis legitimately differ, the test asserts spinel's target and only reports the
peer's figure (the comment at that spot says why).
"""

import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from hostile import (LatencyProbe, PeakWatch, close_all, count_whole, get_request_and_reply,
                     half_close_exchange, open_nonblocking, push_for, raise_nofile, report,
                     rss_kib, store)
from wire import resp_encode

MC = pytest.param("mc", marks=pytest.mark.memcache, id="mc")
RESP = pytest.param("resp", marks=pytest.mark.resp, id="resp")

VALUE_10K = b"v" * 10240
SMALL = b"small-value"
# Bounds asserted in CI on a noisy shared 2-core VM; the targets are tighter (the figures
# printed are the real measurement).
OTHER_CLIENT_WAIT_MAX_S = 0.200
AMPLIFICATION_RISE_MAX_MIB = 16
# A server whose RSS rises past this is failing anyway; the scenario is cut short so it cannot
# take the shared machine's memory with it.
RUNAWAY_RISE_KIB = 1024 * 1024
# Redis writes at most 64 KB to a client per event loop turn and frees the client as soon as a
# read returns EOF, dropping whatever output is still queued (freeClientAsync in
# readQueryFromClient). So after a half-close Redis delivers only the first ~64 KB of replies;
# that is Redis's documented-in-code behavior, not a harness fault. Spinel's target is all
# replies, as memcached does.
REDIS_HALF_CLOSE_BYTES = 64 * 1024


def port_of(server, proto):
    return server.mc_port if proto == "mc" else server.resp_port


def peer_may_drop(target, proto, reply_bytes):
    return target == "redis" and proto == "resp" and reply_bytes > REDIS_HALF_CLOSE_BYTES


# ------------------------------------------------------------------------------------------
# Half-close with a raw socket: every reply to every complete request, in order, then EOF.


@pytest.mark.parametrize("depth,tries", [(1, 10), (100, 5), (1000, 3)], ids=lambda v: str(v))
@pytest.mark.parametrize("value", [SMALL, VALUE_10K], ids=["small", "10k"])
@pytest.mark.parametrize("proto", [MC, RESP])
def test_half_close_raw_socket(shared_server, target, proto, value, depth, tries, key,
                               record_property):
    # Store the value, then `depth` pipelined gets and shutdown(SHUT_WR), `tries` times on
    # fresh connections; each try must get exactly depth replies and then EOF.
    port = port_of(shared_server, proto)
    store(port, proto, key, value)
    request, reply = get_request_and_reply(proto, key, value)
    results = []
    for _ in range(tries):
        got, eof, _ = half_close_exchange(port, request * depth, timeout=15)
        n, exact = count_whole(got, reply)
        results.append((n, exact and eof))
    complete = sum(1 for n, ok in results if ok and n == depth)
    report(record_property, "half_close_complete_tries", f"{complete}/{tries}")
    report(record_property, "half_close_replies", f"{[n for n, _ in results]} of {depth}")
    if peer_may_drop(target, proto, depth * len(reply)):
        return
    assert complete == tries, f"replies per try (of {depth}), whole and EOF: {results}"


@pytest.mark.memcache
def test_half_close_incomplete_request_dropped(shared_server, target, key, record_property):
    # A complete get, then half a get, then EOF: the complete one is answered, the fragment is
    # dropped without a reply, then EOF (as memcached does).
    if target == "redis":
        pytest.skip("memcached-port behavior")
    port = shared_server.mc_port
    store(port, "mc", key, SMALL)
    request, reply = get_request_and_reply("mc", key, SMALL)
    got, eof, _ = half_close_exchange(port, request + b"get " + key.encode(), timeout=10)
    report(record_property, "half_close_fragment", repr(got[:80]))
    assert got == reply and eof


# ------------------------------------------------------------------------------------------
# Half-close with the real nc (netcat-openbsd), as people run the quick-start command.


def nc_binary():
    for name in ("nc.openbsd", "nc"):
        path = shutil.which(name)
        if path:
            help_text = subprocess.run([path, "-h"], capture_output=True, text=True).stderr
            if re.search(r"\s-N\s", help_text) and re.search(r"\s-q\s", help_text):
                return path
    sys.stderr.write("test_reliability: WARNING: netcat-openbsd (nc -N / nc -q) not found; "
                     "the nc half-close variants are SKIPPED (scripts/install-test-deps)\n")
    pytest.skip("netcat-openbsd (nc with -N and -q) not installed: nc variants skipped")


def set_and_get(proto, key, value):
    """The quick-start exchange: a set then a get of the same key, and the exact replies."""
    if proto == "mc":
        request = b"set %s 0 0 %d\r\n%s\r\nget %s\r\n" % (key.encode(), len(value), value,
                                                         key.encode())
        _, reply = get_request_and_reply("mc", key, value)
        return request, b"STORED\r\n" + reply
    _, reply = get_request_and_reply("resp", key, value)
    return resp_encode("SET", key, value) + resp_encode("GET", key), b"+OK\r\n" + reply


@pytest.mark.parametrize("depth,tries", [(1, 20), (100, 5)], ids=lambda v: str(v))
@pytest.mark.parametrize("mode", [["-N"], ["-q1"]], ids=["N", "q1"])
@pytest.mark.parametrize("proto", [MC, RESP])
def test_half_close_nc(shared_server, target, proto, mode, depth, tries, key, record_property):
    # `printf 'set a 0 0 1\r\nx\r\nget a\r\n' | nc -q1 127.0.0.1 11211`, `tries` times (and
    # with 100 such pairs in one go): nc sends, half-closes, prints what comes back.
    nc = nc_binary()
    port = port_of(shared_server, proto)
    request, reply = set_and_get(proto, key, b"x")
    # The tries run side by side (`nc -q1` lingers a second after its stdin ends): each
    # reads the request from its own handle on a file, so every one half-closes at once.
    with tempfile.NamedTemporaryFile() as request_file:
        request_file.write(request * depth)
        request_file.flush()
        procs = []
        for _ in range(tries):
            with open(request_file.name, "rb") as stdin:
                procs.append(subprocess.Popen([nc, *mode, "127.0.0.1", str(port)], stdin=stdin,
                                              stdout=subprocess.PIPE,
                                              stderr=subprocess.DEVNULL))
    counts, complete = [], 0
    for proc in procs:
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        n, exact = count_whole(out, reply)
        counts.append(n)
        complete += exact and n == depth
    report(record_property, "nc_complete_tries", f"{complete}/{tries}")
    assert complete == tries, f"replies per try (of {depth}): {counts}"


# ------------------------------------------------------------------------------------------
# Unread pipelines: backpressure bounds memory, others stay served, the client resumes.


def hostile_server(make_server, target, conns):
    raise_nofile(conns * 2 + 200)
    return make_server(conn_limit=conns + 100)


@pytest.mark.parametrize("reset", [False, True], ids=["unread", "reset"])
@pytest.mark.parametrize("proto", [MC, RESP])
def test_unread_pipelines_bounded_memory(make_server, target, proto, reset, record_property):
    # 100 connections x 600 pipelined gets of a 10 KB value (6 MB of replies each; the issue
    # has 2,000, scaled so a server without backpressure peaks near 600 MB, not 2 GB, on a
    # shared machine), replies not read for 2 s (or reset after 0.5 s). Peak RSS
    # must rise less than 16 MiB, another client's version/PING must keep being answered
    # quickly, and a connection that finally reads gets all its replies in order (the server
    # resumed by itself).
    conns_count, depth, hold_s = 100, 600, 2.0
    server = hostile_server(make_server, target, conns_count)
    port = port_of(server, proto)
    store(port, proto, "amp", VALUE_10K)
    request, reply = get_request_and_reply(proto, "amp", VALUE_10K)
    socks = [open_nonblocking(port, rcvbuf=65536) for _ in range(conns_count)]
    aborted = threading.Event()
    with LatencyProbe(port, proto) as probe, \
            PeakWatch(server.pid, RUNAWAY_RISE_KIB + rss_kib(server.pid), aborted.set) as peak:
        push_for(socks, request * depth, 10.0, len(request) * depth, stop=aborted)
        after_reset_mib = None
        if reset:
            # Unread for a moment (the server has read the pipelines), then RST: everything
            # the connections held must be freed at once.
            aborted.wait(0.5)
            close_all(socks, reset=True)
            socks = []
            aborted.wait(1.0)
            after_reset_mib = (rss_kib(server.pid) - peak.start_kib) / 1024
        else:
            aborted.wait(hold_s)
        drained = None
        if socks and not aborted.is_set():
            drained = drain(socks[0], len(reply) * depth, timeout=30)
        close_all(socks, reset=True)
        time.sleep(0.2)
    report(record_property, "peak_rss_rise_mib", round(peak.rise_mib, 1))
    report(record_property, "other_client_wait_max_ms", round(probe.max_s * 1000, 1))
    if after_reset_mib is not None:
        report(record_property, "rss_rise_1s_after_reset_mib", round(after_reset_mib, 1))
    assert not probe.errors, probe.errors
    assert not aborted.is_set(), f"RSS rose past {RUNAWAY_RISE_KIB // 1024} MiB: cut short"
    if drained is not None:
        n, exact = count_whole(drained, reply)
        report(record_property, "drained_replies", f"{n} of {depth}")
        assert exact and n == depth, f"the draining client got {n} of {depth} replies"
    # Redis buffers every reply of a client that does not read (client-output-buffer-limit
    # for normal clients is 0, unlimited) and copies them all on its one thread, so its RSS
    # grows and other clients wait (measured: +710 MiB, 541-779 ms) by design; report only.
    if target == "redis":
        return
    assert peak.rise_mib < AMPLIFICATION_RISE_MAX_MIB
    if after_reset_mib is not None:
        assert after_reset_mib < AMPLIFICATION_RISE_MAX_MIB
    assert probe.max_s < OTHER_CLIENT_WAIT_MAX_S


def drain(sock, want_bytes, timeout):
    sock.setblocking(True)
    sock.settimeout(timeout)
    chunks, have = [], 0
    try:
        while have < want_bytes:
            chunk = sock.recv(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            have += len(chunk)
    except OSError:
        pass
    return b"".join(chunks)


# ------------------------------------------------------------------------------------------
# Half-closers beside a hostile crowd.


@pytest.mark.parametrize("proto", [MC, RESP])
def test_half_closers_beside_hostile_crowd(make_server, target, proto, record_property):
    # 200 clients that half-close after one get of a 10 KB value, beside 1,000 holding partial
    # requests and 100 that pipeline gets without reading and then reset (8 KB of gets each,
    # ~7 MB of replies: the 20 MB of gets would let a server without backpressure
    # take tens of GB). Every one of the 200 must get its reply then EOF; peak RSS and the
    # longest wait are reported.
    checked, partial, pushers = 200, 1000, 100
    server = hostile_server(make_server, target, checked + partial + pushers)
    port = port_of(server, proto)
    store(port, proto, "crowd", VALUE_10K)
    request, reply = get_request_and_reply(proto, "crowd", VALUE_10K)
    fragment = b"get crow" if proto == "mc" else b"*2\r\n$3\r\nGET\r\n$5\r\ncr"
    holders = []
    for _ in range(partial):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(fragment)
        holders.append(s)
    hostile = [open_nonblocking(port, rcvbuf=32768) for _ in range(pushers)]
    aborted = threading.Event()
    results = []
    with PeakWatch(server.pid, RUNAWAY_RISE_KIB + rss_kib(server.pid), aborted.set) as peak:
        pusher = threading.Thread(target=push_for, daemon=True,
                                  args=(hostile, request * 100, 3.0, 8 << 10, aborted))
        pusher.start()
        time.sleep(0.3)  # let the pipelines start piling up
        with ThreadPoolExecutor(max_workers=16) as pool:
            results = list(pool.map(lambda _: half_close_exchange(port, request, timeout=10),
                                    range(checked)))
        pusher.join(10)
        close_all(hostile, reset=True)
        close_all(holders)
    good = sum(1 for got, eof, _ in results if got == reply and eof)
    longest = max(t for _, _, t in results)
    report(record_property, "checked_clients_complete", f"{good}/{checked}")
    report(record_property, "peak_rss_mib", round(peak.peak_kib / 1024, 1))
    report(record_property, "peak_rss_rise_mib", round(peak.rise_mib, 1))
    report(record_property, "checked_client_wait_max_ms", round(longest * 1000, 1))
    assert not aborted.is_set(), f"RSS rose past {RUNAWAY_RISE_KIB // 1024} MiB: cut short"
    assert good == checked
    if target != "redis":  # Redis buffers unread output without limit (see above)
        assert peak.rise_mib < 64
    assert longest < 1.0  # loose in CI: 200 clients share 16 threads on 2 cores


# ------------------------------------------------------------------------------------------
# Connection churn: memory comes back.


@pytest.mark.slow
@pytest.mark.memcache
@pytest.mark.resp
def test_connection_churn_returns_memory(make_server, target, record_property):
    # 19 waves of 1,000 connections (19,000 in all, alternating ports where there are two),
    # each doing one round trip, all open at once and then closed. Afterwards RSS must be
    # within max(4 MiB, 25% of the growth) of where it started.
    wave, waves = 1000, 19
    raise_nofile(wave * 2 + 200)
    server = make_server(conn_limit=wave + 100)
    ports = [(p, proto) for p, proto in ((server.mc_port, "mc"), (server.resp_port, "resp"))
             if p]
    start_kib = rss_kib(server.pid)
    peak_kib = start_kib
    for i in range(waves):
        port, proto = ports[i % len(ports)]
        probe, end = ((b"version\r\n", b"\r\n") if proto == "mc" else (b"PING\r\n", b"+PONG\r\n"))
        socks = []
        for _ in range(wave):
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(probe)
            socks.append(s)
        for s in socks:
            got = b""
            while not got.endswith(end):
                chunk = s.recv(256)
                assert chunk, "closed during the churn"
                got += chunk
        peak_kib = max(peak_kib, rss_kib(server.pid))
        close_all(socks)
    time.sleep(1.0)  # closes are processed asynchronously
    end_kib = rss_kib(server.pid)
    growth_kib = peak_kib - start_kib
    allowed_kib = max(4096, growth_kib // 4)
    report(record_property, "rss_start_peak_end_mib",
           f"{start_kib / 1024:.1f} / {peak_kib / 1024:.1f} / {end_kib / 1024:.1f}")
    # Redis keeps client buffers in jemalloc's caches after the clients leave (measured:
    # 11 -> 38 -> 32 MiB); that is its allocator's choice, reported, not failed.
    if target == "redis":
        return
    assert end_kib - start_kib <= allowed_kib, (
        f"RSS {end_kib - start_kib} KiB above the start after {wave * waves} connections; "
        f"allowed {allowed_kib} KiB")
