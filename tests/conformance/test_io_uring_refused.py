"""io_uring refused by a seccomp filter, as container runtimes' default profiles refuse it
(Docker 25+ and containerd answer io_uring_setup, _enter and _register with EPERM; a filter
that does not know a call may answer ENOSYS). `--io auto` starts on epoll for every worker
and says why in one line; `--io uring` refuses to start, with the reason and no panic. The
real binary runs under a real filter (seccomp_launch.py), with two workers (spinel only)."""

import os
import platform
import resource
import socket
import subprocess
import sys
import threading
import time

import pytest
import redis

from conftest import Server, free_port, spinel_bin

pytestmark = pytest.mark.spinel_only

LAUNCHER = os.path.join(os.path.dirname(__file__), "seccomp_launch.py")

# Which call the filter refuses, and how: the whole family (a default profile), and partial
# filters that let the ring be made but not entered or registered.
CASES = [
    ("io_uring_setup,io_uring_enter,io_uring_register", "EPERM", "io_uring_setup"),
    ("io_uring_setup", "ENOSYS", "io_uring_setup"),
    ("io_uring_enter", "EPERM", "io_uring_enter"),
    ("io_uring_enter", "ENOSYS", "io_uring_enter"),
    ("io_uring_register", "EPERM", "io_uring_register"),
]
CASE_IDS = [f"{deny.split(',')[0]}-{errno}" + ("-all" if "," in deny else "")
            for deny, errno, _ in CASES]


@pytest.fixture(autouse=True)
def filter_supported():
    if platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip(f"seccomp_launch.py has no filter for {platform.machine()}")


def filtered_argv(deny, errno, io, mc_port, resp_port):
    return [sys.executable, LAUNCHER, "--deny", deny, "--errno", errno, "--",
            spinel_bin(), "-p", str(mc_port), "--resp-port", str(resp_port), "-l", "127.0.0.1",
            "-t", "2", "--io", io, "-m", "64"]


def fallback_lines(text):
    return [line for line in text.splitlines() if "io_uring" in line]


def memcache_roundtrip(port, request, until):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(request)
        got = b""
        while not got.endswith(until):
            chunk = conn.recv(65536)
            assert chunk, f"connection closed after {got!r}"
            got += chunk
        return got


def check_memcache(port):
    assert memcache_roundtrip(port, b"set a 0 0 3\r\nabc\r\nget a\r\n", b"END\r\n") == \
        b"STORED\r\nVALUE a 0 3\r\nabc\r\nEND\r\n"
    # A pipelined batch in one write: 50 sets, then one multi-get of them all.
    batch = b"".join(b"set k%d 0 0 %d\r\n%d\r\n" % (i, len(str(i)), i) for i in range(50))
    keys = b" ".join(b"k%d" % i for i in range(50))
    got = memcache_roundtrip(port, batch + b"get " + keys + b"\r\n", b"END\r\n")
    assert got.count(b"STORED\r\n") == 50
    for i in range(50):
        assert b"VALUE k%d 0 %d\r\n%d\r\n" % (i, len(str(i)), i) in got
    stats = memcache_roundtrip(port, b"stats settings\r\n", b"END\r\n")
    assert b"STAT io_backend epoll\r\n" in stats, stats


def check_redis(port):
    r = redis.Redis(port=port, socket_timeout=10)
    assert r.set("x", "1") and r.get("x") == b"1"
    pipe = r.pipeline(transaction=False)
    for i in range(100):
        pipe.set(f"p{i}", i)
    pipe.get("p99")
    assert pipe.execute()[-1] == b"99"
    assert r.info("server")["multiplexing_api"] == "epoll"
    # Blocked pops on several connections, woken by pushes from another: with two workers
    # the kernel spreads the connections, so some wakes cross workers (their notifiers).
    waiters = 6
    results = [None] * waiters

    def wait(i):
        results[i] = redis.Redis(port=port, socket_timeout=10).blpop(f"q{i}", 8)

    threads = [threading.Thread(target=wait, args=(i,)) for i in range(waiters)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 5
    while r.info("clients")["blocked_clients"] < waiters and time.monotonic() < deadline:
        time.sleep(0.02)
    assert r.info("clients")["blocked_clients"] == waiters
    for i in range(waiters):
        r.rpush(f"q{i}", f"v{i}")
    for t in threads:
        t.join(10)
    assert results == [(f"q{i}".encode(), f"v{i}".encode()) for i in range(waiters)]
    r.close()


@pytest.mark.parametrize("deny,errno,refused", CASES, ids=CASE_IDS)
def test_auto_falls_back_to_epoll_and_serves(deny, errno, refused):
    mc_port, resp_port = free_port(), free_port()
    server = Server("spinel", filtered_argv(deny, errno, "auto", mc_port, resp_port),
                    mc_port, resp_port)
    try:
        server.wait_ready()
        check_memcache(mc_port)
        check_redis(resp_port)
        lines = fallback_lines(server.stderr())
        assert len(lines) == 1, server.describe()
        assert f"io_uring unavailable: {refused} " in lines[0], lines[0]
        assert f"({errno})" in lines[0] and "seccomp" in lines[0], lines[0]
        assert lines[0].endswith("; using epoll"), lines[0]
        assert server.stop() == 0
    finally:
        server.cleanup()


@pytest.mark.parametrize("deny,errno,refused", CASES, ids=CASE_IDS)
def test_explicit_uring_refuses_to_start(deny, errno, refused):
    argv = filtered_argv(deny, errno, "uring", free_port(), free_port())
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"spinel: --io uring: io_uring unavailable: {refused} "), err
    assert f"({errno})" in lines[0], err
    assert "panicked" not in err and "backtrace" not in err.lower()


def test_a_loop_that_fails_to_set_up_stops_the_server():
    """The loops' own set-up refused (epoll_create1, on epoll): the server exits at once,
    nonzero, naming the error, rather than hang or serve on fewer loops."""
    argv = filtered_argv("epoll_create1", "EPERM", "epoll", free_port(), free_port())
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    assert err.strip().splitlines()[-1] == \
        "spinel: worker failed: Operation not permitted (os error 1)", err
    assert "panicked" not in err


def run_with_open_file_limit(limit, threads, resp_port):
    """(exit status or None if it kept running, stderr) of a server whose open-file limit,
    soft and hard, is `limit`."""
    argv = [spinel_bin(), "-p", "0", "--resp-port", str(resp_port), "-l", "127.0.0.1",
            "-t", str(threads), "-m", "8", "-c", "4", "--io", "auto"]
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)))
    try:
        deadline = time.monotonic() + 5
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", resp_port), timeout=0.5).close()
                time.sleep(0.3)  # a loop that fails to set up fails within this
                break
            except OSError:
                time.sleep(0.02)
        status = proc.poll()
    finally:
        if proc.poll() is None:
            proc.terminate()
        _, err = proc.communicate(timeout=10)
    return status, err.decode()


def test_some_loops_failing_to_set_up_stops_the_others():
    """Open-file limits from too few for anything up to enough: just under enough, the probe
    passes but the last rings made by the workers fail (EMFILE). The server then exits,
    naming the error, and never serves on the loops that did start."""
    threads, partial = 4, []
    for limit in range(10, 64):
        status, err = run_with_open_file_limit(limit, threads, free_port())
        if status is None:
            # (Connections past the limit wait in the backlog: it is not pinged.)
            assert "worker failed" not in err, err
            break
        assert status == 1 and "panicked" not in err, err
        assert err.strip().splitlines()[-1].startswith("spinel: "), err
        failed = err.count("worker failed: ")
        if 0 < failed < threads:  # (the last line repeats one of them)
            partial.append(limit)
    else:
        pytest.fail("no open-file limit up to 63 lets 4 workers start")
    assert partial, "no limit made only some of the loops fail"
