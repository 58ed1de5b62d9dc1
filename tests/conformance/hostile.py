"""Helpers for the reliability tests (test_reliability*.py) and scripts/soak: half-close
exchanges, unread pipelines, resets, server memory from /proc, and reply counting.

Every socket operation here has a deadline, so a server that stalls fails a test instead of
hanging it. Nothing here signals a process.
"""

import os
import selectors
import socket
import struct
import threading
import time

from wire import resp_encode

# ------------------------------------------------------------------------------------------
# Server memory, from /proc/PID/status (KiB).


def proc_status_kib(pid, field):
    """VmRSS, VmHWM, ... of `pid` in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"{field} not in /proc/{pid}/status")


def rss_kib(pid):
    return proc_status_kib(pid, "VmRSS")


def reset_peak(pid):
    """Resets VmHWM to the current RSS (writing 5 to clear_refs; Linux >= 4.0). Returns False
    where that is not allowed, so callers fall back to a fresh server's peak."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class Background:
    """A sampling thread run as a context manager: `_run` loops until `_stop` is set; leaving
    the block stops it and waits up to `join_s`."""

    join_s = 5

    def __init__(self):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        raise NotImplementedError

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(self.join_s)


class PeakWatch(Background):
    """Samples a server's RSS every few ms in a thread; `peak_kib` is the highest seen (also
    VmHWM where clear_refs worked). When RSS passes `abort_kib` it calls `on_abort` once, so a
    runaway server cannot eat the shared machine before the test fails."""

    def __init__(self, pid, abort_kib=None, on_abort=None, period_s=0.01):
        self.pid = pid
        self.abort_kib = abort_kib
        self.on_abort = on_abort
        self.period_s = period_s
        self.hwm_ok = reset_peak(pid)
        self.start_kib = rss_kib(pid)
        self.peak_kib = self.start_kib
        self.aborted = False
        super().__init__()

    def _run(self):
        while not self._stop.is_set():
            try:
                now = rss_kib(self.pid)
            except (OSError, AssertionError):
                return
            self.peak_kib = max(self.peak_kib, now)
            if self.abort_kib and now > self.abort_kib and not self.aborted:
                self.aborted = True
                if self.on_abort:
                    self.on_abort()
            self._stop.wait(self.period_s)

    def __exit__(self, *exc):
        super().__exit__(*exc)
        if self.hwm_ok:
            try:
                self.peak_kib = max(self.peak_kib, proc_status_kib(self.pid, "VmHWM"))
            except (OSError, AssertionError):
                pass

    @property
    def rise_mib(self):
        return (self.peak_kib - self.start_kib) / 1024


# ------------------------------------------------------------------------------------------
# Requests and replies for both protocols.


def mc_set(key, value):
    return b"set %s 0 0 %d\r\n%s\r\n" % (key.encode(), len(value), value)


def mc_get_reply(key, value):
    return b"VALUE %s 0 %d\r\n%s\r\nEND\r\n" % (key.encode(), len(value), value)


def resp_get_reply(value):
    return b"$%d\r\n%s\r\n" % (len(value), value)


def get_request_and_reply(proto, key, value):
    """(one get request, its exact reply) for proto "mc" or "resp"."""
    if proto == "mc":
        return b"get %s\r\n" % key.encode(), mc_get_reply(key, value)
    return resp_encode("GET", key), resp_get_reply(value)


def store(port, proto, key, value, timeout=5.0):
    """Stores key=value over a fresh connection and checks the acknowledgement."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        if proto == "mc":
            s.sendall(mc_set(key, value))
            want = b"STORED\r\n"
        else:
            s.sendall(resp_encode("SET", key, value))
            want = b"+OK\r\n"
        got = b""
        while len(got) < len(want):
            chunk = s.recv(64)
            if not chunk:
                break
            got += chunk
        assert got == want, f"storing {key}: {got!r}"


def count_whole(got, reply):
    """How many copies of `reply` `got` starts with, and whether it is exactly that many."""
    n = len(got) // len(reply)
    while n and got[: n * len(reply)] != reply * n:
        n -= 1  # rarely taken: a reply differs somewhere; find the last good prefix
    return n, got == reply * n


# ------------------------------------------------------------------------------------------
# Half-close: send everything, shutdown(SHUT_WR), read until EOF.


def half_close_exchange(port, request, timeout=10.0, rcvbuf=None):
    """Sends `request`, shuts down the write side, reads until EOF while sending (so a server
    that applies backpressure is drained). Returns (received bytes, saw_eof, seconds)."""
    start = time.monotonic()
    deadline = start + timeout
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(s, selectors.EVENT_READ | selectors.EVENT_WRITE)
    view = memoryview(request)
    chunks = []
    eof = False
    try:
        while time.monotonic() < deadline:
            for _, events in sel.select(max(0.0, deadline - time.monotonic())):
                if events & selectors.EVENT_WRITE and view:
                    try:
                        view = view[s.send(view[:262144]):]
                    except (BlockingIOError, InterruptedError):
                        pass
                    except (BrokenPipeError, ConnectionResetError):
                        view = view[:0]
                    if not view:
                        s.shutdown(socket.SHUT_WR)
                        sel.modify(s, selectors.EVENT_READ)
                if events & selectors.EVENT_READ:
                    try:
                        chunk = s.recv(1 << 20)
                    except (BlockingIOError, InterruptedError):
                        continue
                    except ConnectionResetError:
                        return b"".join(chunks), False, time.monotonic() - start
                    if not chunk:
                        eof = True
                        return b"".join(chunks), eof, time.monotonic() - start
                    chunks.append(chunk)
        return b"".join(chunks), eof, time.monotonic() - start
    finally:
        sel.close()
        s.close()


# ------------------------------------------------------------------------------------------
# Hostile connections.


def linger0(s):
    """Closing this socket sends RST instead of FIN (and drops whatever is unsent)."""
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def open_nonblocking(port, rcvbuf=None):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.setblocking(False)
    return s


def push_for(socks, payload, seconds, limit_bytes, stop=None):
    """Writes `payload` repeatedly to every socket in `socks` without reading, for `seconds` or
    until each has sent `limit_bytes` (or `stop`, an Event, is set); a socket the server stops
    reading simply stalls. Returns the bytes sent per socket."""
    sent = {s: 0 for s in socks}
    deadline = time.monotonic() + seconds
    sel = selectors.DefaultSelector()
    for s in socks:
        sel.register(s, selectors.EVENT_WRITE)
    try:
        while sel.get_map() and time.monotonic() < deadline:
            if stop is not None and stop.is_set():
                close_all(socks, reset=True)  # a runaway server: stop feeding it at once
                break
            ready = sel.select(min(0.05, max(0.0, deadline - time.monotonic())))
            for k, _ in ready:
                s = k.fileobj
                try:
                    sent[s] += s.send(payload)
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:
                    sel.unregister(s)
                    continue
                if sent[s] >= limit_bytes:
                    sel.unregister(s)
    finally:
        sel.close()
    return sent


def close_all(socks, reset=False):
    for s in socks:
        try:
            if reset:
                linger0(s)
            s.close()
        except OSError:
            pass


def timed_roundtrip(port, request, reply_end, timeout=5.0):
    """Opens a connection, sends `request`, reads until the reply ends with `reply_end`.
    Returns the seconds from send to the last byte (the connection time excluded)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        start = time.monotonic()
        s.sendall(request)
        got = b""
        while not got.endswith(reply_end):
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError(f"closed after {got[:200]!r}")
            got += chunk
        return time.monotonic() - start


class LatencyProbe(Background):
    """A thread that keeps doing a tiny round trip (`version` / `PING`) on a fresh connection
    every `period_s`, recording the longest wait: how long another client waits while the
    hostile ones run."""

    join_s = 15

    def __init__(self, port, proto, period_s=0.02):
        self.port = port
        self.request, self.end = ((b"version\r\n", b"\r\n") if proto == "mc"
                                  else (b"PING\r\n", b"+PONG\r\n"))
        self.period_s = period_s
        self.max_s = 0.0
        self.count = 0
        self.errors = []
        super().__init__()

    def _run(self):
        # One long-lived connection: connection setup would measure accept, not service.
        try:
            s = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as e:
            self.errors.append(repr(e))
            return
        with s:
            while not self._stop.is_set():
                start = time.monotonic()
                try:
                    s.sendall(self.request)
                    got = b""
                    while not got.endswith(self.end):
                        chunk = s.recv(4096)
                        if not chunk:
                            raise ConnectionError("closed")
                        got += chunk
                except OSError as e:
                    self.errors.append(repr(e))
                    return
                self.max_s = max(self.max_s, time.monotonic() - start)
                self.count += 1
                self._stop.wait(self.period_s)


def raise_nofile(want):
    """Raises this process's open-file limit (servers started later inherit it)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# ------------------------------------------------------------------------------------------
# Reporting figures.


def report(record_property, name, value):
    """Reports a measured figure three ways: as a JUnit property (record_property), on stdout,
    and as a `FIGURE name: value` line on stderr, which pytest shows for passing tests too
    with -rA (and always for failing ones), whether or not -s is given."""
    record_property(name, value)
    line = f"FIGURE {name}: {value}"
    print(line)
    import sys

    sys.stderr.write(line + "\n")
