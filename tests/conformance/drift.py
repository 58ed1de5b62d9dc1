"""The drifting-size set load shared by test_memory.py and scripts/mem_drift.py: several
connections (one thread each) set values whose sizes drift phase by phase, with a get of an
earlier key as one request in ten (`get_ratio`); replies other than STORED are counted by
message.

    small   100 B values
    large   100-500 KB values
    tiny    50 B values
    mixed   1 B-512 KB values (log-uniform)

Every socket operation has a deadline; nothing here signals a process.
"""

import collections
import os
import random
import socket
import threading
import time

PHASES = ("small", "large", "tiny", "mixed")
BLOB = os.urandom(600 * 1024)
KEYS_PER_CONN = 5000


def value_len(phase, rng):
    if phase == "small":
        return 100
    if phase == "tiny":
        return 50
    if phase == "large":
        return rng.randint(100 * 1000, 500 * 1000)
    return min(512 * 1024, int(2 ** rng.uniform(0, 19)))


class Reader:
    """Reads memcached text replies off one socket, line by line and values by length."""

    def __init__(self, sock):
        self.sock, self.buf = sock, bytearray()

    def _more(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("server closed the connection")
        self.buf += chunk

    def line(self):
        while b"\r\n" not in self.buf:
            self._more()
        i = self.buf.index(b"\r\n")
        out = bytes(self.buf[:i])
        del self.buf[: i + 2]
        return out

    def skip(self, n):
        while len(self.buf) < n:
            self._more()
        del self.buf[:n]


def stats(sock, reader, which=b""):
    """`stats WHICH` as a dict of strings; empty for a group the server has not (memcached
    answers `stats spinel` with ERROR)."""
    sock.sendall(b"stats %s\r\n" % which if which else b"stats\r\n")
    out = {}
    while (line := reader.line()) != b"END":
        if line == b"ERROR":
            return out
        _, name, value = line.decode().split(" ", 2)
        out[name] = value
    return out


class Load:
    """The phase clock and counters of one run; `run` drives `conns` connections to the end."""

    def __init__(self, port, conns, phase_s, phases=PHASES, get_ratio=0.1):
        self.port, self.conns, self.phase_s, self.phases = port, conns, phase_s, list(phases)
        self.get_ratio = get_ratio
        self.lock = threading.Lock()
        self.counts = collections.Counter()
        self.errors = collections.Counter()
        self.start = None
        self.threads = []

    def phase(self):
        i = int((time.monotonic() - self.start) / self.phase_s)
        return self.phases[i] if i < len(self.phases) else None

    def begin(self):
        self.start = time.monotonic()
        self.threads = [threading.Thread(target=self._client, args=(i,), daemon=True)
                        for i in range(self.conns)]
        for t in self.threads:
            t.start()

    def running(self):
        return any(t.is_alive() for t in self.threads)

    def join(self):
        for t in self.threads:
            t.join(timeout=30)

    @property
    def failures(self):
        return sum(self.errors.values())

    def _client(self, conn_id):
        rng = random.Random(conn_id)
        counts, errors, written = collections.Counter(), collections.Counter(), 0
        try:
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=30)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            reader = Reader(sock)
        except OSError as e:
            errors[f"connect: {e}"] += 1
            sock = None
        try:
            while sock and (phase := self.phase()) is not None:
                if written and rng.random() < self.get_ratio:
                    sock.sendall(b"get d%d:%d\r\n" % (conn_id, rng.randrange(written)))
                    reader_get(sock, reader)
                    counts["gets"] += 1
                    continue
                n = value_len(phase, rng)
                key = b"d%d:%d" % (conn_id, written % KEYS_PER_CONN)
                off = rng.randrange(len(BLOB) - n + 1)
                sock.sendall(b"set %s 0 0 %d\r\n" % (key, n) + BLOB[off:off + n] + b"\r\n")
                reply = reader.line()
                counts["sets"] += 1
                if reply != b"STORED":
                    errors[reply.decode(errors="replace")] += 1
                written = min(written + 1, KEYS_PER_CONN)
        except (OSError, ConnectionError) as e:
            errors[f"connection: {e}"] += 1
        finally:
            if sock:
                sock.close()
            with self.lock:
                self.counts.update(counts)
                self.errors.update(errors)


def reader_get(sock, reader):
    """Reads one get reply (any VALUE blocks, then END)."""
    while (line := reader.line()) != b"END":
        reader.skip(int(line.split()[3]) + 2)


def proc_status_kib(pid):
    """VmRSS and VmHWM of `pid`, in KiB."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1])
    return out


def run_sampled(load, pid, port, period_s=0.1):
    """Runs `load` to its end while sampling the server's RSS, its `stats slabs`
    (total_malloced) and Spinel's `stats spinel` (conn_buffer_bytes); returns (VmHWM KiB, peak sampled RSS KiB, peaks dict)."""
    probe = socket.create_connection(("127.0.0.1", port), timeout=30)
    probe_reader = Reader(probe)
    peak_rss, peaks = 0, collections.Counter()
    try:
        load.begin()
        while load.running():
            peak_rss = max(peak_rss, proc_status_kib(pid)["VmRSS"])
            now = stats(probe, probe_reader, b"slabs") | stats(probe, probe_reader, b"spinel")
            for name in ("total_malloced", "conn_buffer_bytes"):
                peaks[name] = max(peaks[name], int(now.get(name, 0)))
            time.sleep(period_s)
        load.join()
    finally:
        probe.close()
    return proc_status_kib(pid)["VmHWM"], peak_rss, peaks
