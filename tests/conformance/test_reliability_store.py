"""Issue 16 ("Reliability first"), store side: writes refused while memory could be reclaimed,
appends that lose tokens, a large set after churn, and expired items that stay counted.

Each test starts its own server with the memory limit of the issue's table and reports the
figure it asserts (hostile.report: a `FIGURE` line on stderr, shown with -rA). The issue's
volumes are scaled to run in well under a minute each on 2 cores; each still fails on spinel's
bug. Redis runs with `--maxmemory <same> --maxmemory-policy allkeys-lru`, its equivalent of an
evicting cache.
"""

import multiprocessing
import random
import socket
import time

import pytest

from hostile import report
from wire import resp_encode

MC = pytest.param("mc", marks=pytest.mark.memcache, id="mc")
RESP = pytest.param("resp", marks=pytest.mark.resp, id="resp")
OK = {"mc": b"STORED", "resp": b"+OK"}


def limited_server(make_server, target, mib):
    if target == "redis":
        return make_server(extra=("--maxmemory", f"{mib}mb", "--maxmemory-policy", "allkeys-lru"))
    return make_server(extra=("-m", str(mib)))  # the last -m wins, for spinel and memcached


def port_of(server, proto):
    return server.mc_port if proto == "mc" else server.resp_port


def protos_of(target):
    """The protocols a scenario exercises: both ports of spinel, or the peer's one."""
    return {"spinel": ["mc", "resp"], "memcached": ["mc"], "redis": ["resp"]}[target]


class Pipe:
    """One connection sending requests in batches and reading one reply line per request
    (set/append/SET/APPEND replies are single lines)."""

    def __init__(self, port, proto, batch=256):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.proto = proto
        self.batch = batch
        self.pending = []
        self.replies = []

    def set(self, key, value, ttl=0):
        if self.proto == "mc":
            req = b"set %s 0 %d %d\r\n%s\r\n" % (key, ttl, len(value), value)
        elif ttl:
            req = resp_encode("SET", key, value, "EX", ttl)
        else:
            req = resp_encode("SET", key, value)
        self._add(req)

    def append(self, key, value):
        if self.proto == "mc":
            self._add(b"append %s 0 0 %d\r\n%s\r\n" % (key, len(value), value))
        else:
            self._add(resp_encode("APPEND", key, value))

    def _add(self, req):
        self.pending.append(req)
        if len(self.pending) >= self.batch:
            self.flush()

    def flush(self):
        if not self.pending:
            return
        want = len(self.pending)
        self.sock.sendall(b"".join(self.pending))
        self.pending = []
        buf = b""
        while buf.count(b"\r\n") < want:
            chunk = self.sock.recv(1 << 16)
            assert chunk, f"connection closed with {len(buf.splitlines())} of {want} replies"
            buf += chunk
        lines = buf.split(b"\r\n")[:-1]
        assert len(lines) == want, f"{len(lines)} replies to {want} requests"
        self.replies.extend(lines)

    def close(self):
        self.flush()
        self.sock.close()


def get_value(port, proto, key):
    """The value of `key`, or None when missing."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"get %s\r\n" % key if proto == "mc" else resp_encode("GET", key))
        buf = b""
        while True:
            if proto == "mc" and (buf == b"END\r\n" or buf.endswith(b"\r\nEND\r\n")):
                break
            if proto == "resp" and buf.startswith(b"$-1\r\n"):
                return None
            if proto == "resp" and b"\r\n" in buf:
                n = int(buf[1:buf.index(b"\r\n")])
                if len(buf) >= buf.index(b"\r\n") + 2 + n + 2:
                    start = buf.index(b"\r\n") + 2
                    return buf[start:start + n]
            chunk = s.recv(1 << 20)
            assert chunk, f"closed reading {key!r}: {buf[:100]!r}"
            buf += chunk
    if buf == b"END\r\n":
        return None
    header, rest = buf.split(b"\r\n", 1)
    n = int(header.split()[3])
    return rest[:n]


def refused(replies, proto):
    return [r for r in replies if r != OK[proto]]


# ------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.memcache
@pytest.mark.resp
def test_drift_no_refused_sets(make_server, target, record_property):
    # At -m 64, value sizes drift: 100 B, then 100-500 KB, then 50 B, then 1 B-512 KB (the
    # issue's 21M sets scaled to ~0.7M, ~350 MB written). An evicting cache must store every
    # one. memcached's slab classes calcify under such drift and it refuses some sets
    # ("SERVER_ERROR out of memory storing object"): that is reported, not failed.
    server = limited_server(make_server, target, 64)
    rng = random.Random(16)
    protos = protos_of(target)
    pipes = {p: Pipe(port_of(server, p), p) for p in protos}
    phases = [("small100", 300_000, lambda: 100),
              ("large", 250, lambda: rng.randint(100 << 10, 500 << 10)),
              ("small50", 300_000, lambda: 50),
              ("mixed", 600, lambda: rng.randint(1, 512 << 10))]
    blob = rng.randbytes(512 << 10)
    total = 0
    for name, count, size in phases:
        for i in range(count):
            pipe = pipes[protos[(i // 256) % len(protos)]]
            pipe.set(b"%s:%d" % (name.encode(), i % 50_000), blob[:size()])
            total += 1
        for pipe in pipes.values():
            pipe.flush()
    bad = []
    for proto, pipe in pipes.items():
        bad += [(proto, r) for r in refused(pipe.replies, proto)]
        pipe.close()
    report(record_property, "refused_sets", f"{len(bad)} of {total}; first {bad[:3]}")
    if target == "memcached":
        return
    assert not bad



@pytest.mark.parametrize("proto", [MC, RESP])
def test_large_sets_at_m48_read_back(make_server, target, proto, record_property):
    # 100 sets of 560 KB at -m 48 (the cache must evict to make room for each), each read back
    # at once with its exact value.
    server = limited_server(make_server, target, 48)
    port = port_of(server, proto)
    pipe = Pipe(port, proto, batch=1)
    failures = []
    for i in range(100):
        value = b"%03d" % i * (560 * 1024 // 3)
        key = b"big%d" % i
        pipe.set(key, value)
        reply = pipe.replies[-1]
        if reply != OK[proto]:
            failures.append((i, reply))
        elif get_value(port, proto, key) != value:
            failures.append((i, "read back differs or missing"))
    pipe.close()
    report(record_property, "failed_sets", f"{len(failures)} of 100; first {failures[:3]}")
    assert not failures


# ------------------------------------------------------------------------------------------
# Appends from 8 processes.

TOKEN_BYTES = 12
APPEND_KEYS = 128


APPEND_SECONDS_MAX = 25  # memcached and Redis need ~5 s for the whole scenario on 2 cores


def append_worker(port, proto, worker, count, deadline, out):
    """Appends `count` tokens round-robin over the keys, stopping early at `deadline`
    (time.time()); puts (worker, acknowledged seqs per key, refusals, appends sent) on `out`."""
    pipe = Pipe(port, proto)
    sent = []
    for seq in range(count):
        if seq % pipe.batch == 0 and time.time() > deadline:
            break
        key = b"tok%d" % (seq % APPEND_KEYS)
        pipe.append(key, b"%02d%09d|" % (worker, seq))
        sent.append(seq)
    pipe.close()
    acked = {}
    refusals = []
    for seq, reply in zip(sent, pipe.replies):
        if reply == OK[proto] or (proto == "resp" and reply.startswith(b":")):
            acked.setdefault(seq % APPEND_KEYS, []).append(seq)
        else:
            refusals.append(reply.decode("utf-8", "replace"))
    out.put((worker, acked, refusals, len(sent)))


def check_appends(value, acked_by_worker, key_index):
    """True when `value` is exactly the acknowledged tokens, each worker's in order."""
    if value is None or len(value) % TOKEN_BYTES:
        return False
    seen = {}
    for i in range(0, len(value), TOKEN_BYTES):
        tok = value[i:i + TOKEN_BYTES]
        if not tok.endswith(b"|") or not tok[:-1].isdigit():
            return False
        seen.setdefault(int(tok[:2]), []).append(int(tok[2:11]))
    for worker, acked in acked_by_worker.items():
        if seen.get(worker, []) != acked.get(key_index, []):
            return False
    return set(seen) <= set(acked_by_worker)


@pytest.mark.slow
@pytest.mark.memcache
@pytest.mark.resp
@pytest.mark.parametrize("mib", [1024, 64])
def test_appends_from_8_processes(make_server, target, mib, record_property):
    # 8 processes append 12-byte tokens to 128 keys, ~9 MB live in all (as in the issue),
    # at -m 1024 and -m 64. Every append must be acknowledged within 25 s in all (memcached
    # and Redis take ~5 s), and every key must hold exactly its acknowledged tokens. memcached at -m 64 evicts growing items out of
    # full slab classes and loses keys: reported for memcached, not failed.
    server = limited_server(make_server, target, mib)
    protos = protos_of(target)
    setup = {p: Pipe(port_of(server, p), p) for p in protos}
    if "mc" in setup:  # memcached's append needs the item to exist
        for k in range(APPEND_KEYS):
            setup["mc"].set(b"tok%d" % k, b"")
    for pipe in setup.values():
        pipe.close()
    per_worker = 9_000_000 // TOKEN_BYTES // 8
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    start = time.time()
    workers = [ctx.Process(target=append_worker, daemon=True,
                           args=(port_of(server, protos[w % len(protos)]),
                                 protos[w % len(protos)], w, per_worker,
                                 start + APPEND_SECONDS_MAX, out))
               for w in range(8)]
    for w in workers:
        w.start()
    results = [out.get(timeout=APPEND_SECONDS_MAX + 60) for _ in workers]
    elapsed = time.time() - start
    for w in workers:
        w.join(10)
    acked = {worker: a for worker, a, _, _ in results}
    refusals = [r for _, _, rs, _ in results for r in rs]
    done = sum(n for _, _, _, n in results)
    port, proto = port_of(server, protos[0]), protos[0]
    bad_keys = [k for k in range(APPEND_KEYS)
                if not check_appends(get_value(port, proto, b"tok%d" % k), acked, k)]
    report(record_property, "refused_appends", f"{len(refusals)} of {8 * per_worker}; "
           f"first {refusals[:2]}")
    report(record_property, "bad_keys", f"{len(bad_keys)} of {APPEND_KEYS}")
    report(record_property, "appends_done", f"{done} of {8 * per_worker} in {elapsed:.1f} s")
    if target == "memcached" and mib == 64:
        return
    assert done == 8 * per_worker, f"appends too slow: cut off after {APPEND_SECONDS_MAX} s"
    assert not refusals
    assert not bad_keys



@pytest.mark.parametrize("proto", [MC, RESP])
def test_large_set_after_churn(make_server, target, proto, record_property):
    # 8,200 sets of 8 KB on one key and 300 of 100 KB on another, then one 600 KB set: it
    # must be stored, quickly (memcached 4 ms, Redis 2 ms; a loose 500 ms bound in CI).
    server = limited_server(make_server, target, 64)
    port = port_of(server, proto)
    pipe = Pipe(port, proto, batch=64)
    for i in range(8200):
        pipe.set(b"churn8k", b"%08d" % i * 1024)
    for i in range(300):
        pipe.set(b"churn100k", b"%08d" % i * 12800)
    pipe.flush()
    churn_refused = refused(pipe.replies, proto)
    pipe.batch = 1
    value = b"L" * (600 * 1024)
    start = time.monotonic()
    pipe.set(b"big600k", value)
    elapsed = time.monotonic() - start
    reply = pipe.replies[-1]
    pipe.close()
    report(record_property, "set_600k", f"{reply.decode('utf-8', 'replace')} in "
           f"{elapsed * 1000:.1f} ms; {len(churn_refused)} refused before")
    assert not churn_refused
    assert reply == OK[proto]
    assert get_value(port, proto, b"big600k") == value
    assert elapsed < 0.5


# ------------------------------------------------------------------------------------------


def item_count(server, proto):
    with socket.create_connection(("127.0.0.1", port_of(server, proto)), timeout=10) as s:
        if proto == "resp":
            s.sendall(resp_encode("DBSIZE"))
            buf = b""
            while not buf.endswith(b"\r\n"):
                buf += s.recv(4096)
            return int(buf[1:-2])
        s.sendall(b"stats\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            chunk = s.recv(65536)
            assert chunk
            buf += chunk
        for line in buf.split(b"\r\n"):
            if line.startswith(b"STAT curr_items "):
                return int(line.split()[2])
    raise AssertionError("no curr_items in stats")


@pytest.mark.slow
@pytest.mark.memcache
@pytest.mark.resp
def test_expired_items_leave_counts(make_server, target, record_property):
    # 100k keys with TTLs of 1-3 s, never read: within ~5 s of the last expiry the item
    # counts (memcached's curr_items, Redis's DBSIZE; spinel has both) must be 0.
    server = limited_server(make_server, target, 64)
    protos = protos_of(target)
    rng = random.Random(3)
    pipes = {p: Pipe(port_of(server, p), p) for p in protos}
    for i in range(100_000):
        pipes[protos[(i // 256) % len(protos)]].set(b"ttl:%d" % i, b"x" * 32, rng.randint(1, 3))
    for proto, pipe in pipes.items():
        pipe.close()
        assert not refused(pipe.replies, proto)
    last_expiry = time.monotonic() + 3
    deadline = last_expiry + 5 + 1  # one more second: TTL clocks tick once a second
    counts = {}
    while True:
        counts = {p: item_count(server, p) for p in protos}
        if all(c == 0 for c in counts.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    after = time.monotonic() - last_expiry
    report(record_property, "items_counted", f"{counts} at {after:.1f} s after the last expiry")
    assert all(c == 0 for c in counts.values())

