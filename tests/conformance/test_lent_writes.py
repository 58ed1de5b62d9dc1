"""Writes behind lent values (issue 36 item 1): in one pipeline, a large get's value is lent
(sent from item memory, the thread's epoch pin held until the send) and the sets and deletes
after it run in the same batch instead of waiting for the next call. A write that needs
memory back while the store is full has the lent values copied and their pin let go first
(`store::loans::unpin`), so it can wait for the grace period its own pin held up.

What must hold, with other clients filling the store past its limit (evicting) and the
pipelining client reading slowly (its values sit half sent while the writes behind them
run): every reply comes, in order; every value is whole; a get after a set in the same
pipeline sees that set (or a miss, when eviction took the key), never an older version; a
get after a delete misses. Over memcached text, meta and RESP. Every read has a deadline, so
a hang fails rather than stalls.

Holds for memcached and redis-server too (`CONFORMANCE_TARGET=...`), but for eviction
wording: the store is Spinel's -m 64.
"""

import socket
import threading
import time

import pytest

from wire import Conn, resp_encode

KEYS = 16
ROUNDS = 4
FILLERS_PER_ROUND = 8
# Sets of new keys behind each get and overwrite of a pipeline: enough that a write in the
# batch finds the store's free memory gone and must wait for a grace period its own loans
# hold up, with the lent value's own memory (just replaced) among what comes back.
FILLERS_PER_GET = 6
DEADLINE_S = 30
# Spinel's batch budget raised (`--output-pause`, `-R`), so that a batch runs many writes
# behind a 100 KB loan instead of ending at its first 32 KiB of output.
WIDE_BATCHES = ["--output-pause", "4096", "-R", "400"]


def versioned(key_index, version, size):
    """A value whose every 12 bytes name its key and version: a torn value shows two."""
    stem = b"%05d:%05d;" % (key_index, version)
    return (stem * (size // len(stem) + 1))[:size]


class SlowConn(Conn):
    """A connection that takes its replies in small pieces with pauses, through a small
    receive buffer, so that the server's sends stop half way."""

    def __init__(self, port):
        super().__init__(port, timeout=DEADLINE_S)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32768)

    def _fill(self, deadline):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"no reply in time; have {self.buf[:300]!r}")
        self.sock.settimeout(remaining)
        chunk = self.sock.recv(8192)
        if not chunk:
            raise ConnectionError(f"connection closed; have {self.buf[:300]!r}")
        self.buf += chunk
        time.sleep(0.0002)


def fill_store(port, size, stop, counts):
    """Writes fillers of `size` bytes under new keys until `stop`: the store stays full and
    every write evicts."""
    filler = b"f" * size
    n = 0
    with Conn(port) as conn:
        while not stop.is_set():
            batch = []
            for _ in range(FILLERS_PER_ROUND):
                n += 1
                batch.append(b"set fill_%d_%d 0 0 %d noreply\r\n%s\r\n"
                             % (threading.get_ident() % 1000, n, size, filler))
            conn.send(b"".join(batch))
            conn.rt(b"mn\r\n", b"MN\r\n")
            counts["fills"] += 1
            time.sleep(0.001)


def evictions(port):
    """The server's `evictions` stat (memcached text)."""
    with Conn(port) as conn:
        conn.send(b"stats\r\n")
        stats = conn.read_until(b"END\r\n")
    return int(stats.split(b"STAT evictions ", 1)[1].split(b"\r\n", 1)[0])


def pipelines_while_filled(port, run_rounds, size, fillers=2):
    """Fills the store past its 64 MiB, then runs `run_rounds()` while `fillers` threads
    keep it full; checks that writes evicted meanwhile. The fill rounds."""
    filler = b"p" * size
    with Conn(port) as conn:
        for start in range(0, (96 << 20) // size, 64):
            conn.send(b"".join(b"set prefill_%d 0 0 %d noreply\r\n%s\r\n" % (n, size, filler)
                               for n in range(start, start + 64)))
            conn.rt(b"mn\r\n", b"MN\r\n")
    evicted_before = evictions(port)
    stop, counts = threading.Event(), {"fills": 0}
    threads = [threading.Thread(target=fill_store, args=(port, size, stop, counts))
               for _ in range(fillers)]
    for thread in threads:
        thread.start()
    try:
        run_rounds()
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert evictions(port) > evicted_before, "the store was not full"
    return counts["fills"]


def send_behind(conn, request):
    """Sends `request` from a thread of its own (the replies are read meanwhile: a pipeline
    of megabytes would otherwise fill both directions' buffers); the thread."""
    sender = threading.Thread(target=conn.send, args=(request,))
    sender.start()
    return sender


class Model:
    """What this client's own keys hold: only it writes them, so a reply is right if it
    shows the version last written before it in the pipeline, or a miss for a key that
    eviction may have taken (never an older version, never a deleted key's value)."""

    def __init__(self, size):
        self.size = size
        self.version = {}

    def check_hit(self, i, flags, data):
        want = self.version.get(i)
        assert want is not None, f"key {i}: a value after its delete"
        assert len(data) == self.size, f"key {i}: {len(data)} bytes"
        assert flags == want, f"key {i}: version {flags}, last set {want}"
        assert data == versioned(i, want, self.size), f"key {i}: torn or stale value"


def plan_round(prefix, model, round_no, get, put, delete):
    """One pipeline's requests in a dialect's encoding (`get(key)`, `put(key, version,
    data)`, `delete(key)`): per key, get, set to a new version, fillers, get; every fourth
    key also delete and get. Returns the requests and what each reply must be."""
    size, requests, expects = model.size, [], []
    for i in range(KEYS):
        key = b"%s_%03d" % (prefix, i)
        version = round_no * 100 + i + 1
        requests.append(get(key))
        expects.append(("get", i))
        requests.append(put(key, version, versioned(i, version, size)))
        expects.append(("set", i, version))
        for j in range(FILLERS_PER_GET):
            requests.append(put(b"pf_%s_%d_%d" % (key, round_no, j), 0, b"x" * size))
            expects.append(("fill",))
        requests.append(get(key))
        expects.append(("get", i))
        if i % 4 == round_no % 4:
            requests.append(delete(key))
            expects.append(("delete", i))
            requests.append(get(key))
            expects.append(("get", i))
    return b"".join(requests), expects


def text_round(conn, prefix, model, round_no):
    """One pipeline of `plan_round` in text commands. Returns the requests and a checker
    that reads their replies in order."""
    requests, expects = plan_round(
        prefix, model, round_no, lambda key: b"get %s\r\n" % key,
        lambda key, version, data: b"set %s %d 0 %d\r\n%s\r\n" % (key, version, len(data), data),
        lambda key: b"delete %s\r\n" % key)

    def check():
        for expect in expects:
            if expect[0] == "get":
                line = conn.read_line()
                if line == b"END\r\n":
                    continue
                _, key, flags, length = line.split()
                assert key == b"%s_%03d" % (prefix, expect[1]), f"reply out of order: {line!r}"
                data = conn.read_exact(int(length) + 2)[:-2]
                model.check_hit(expect[1], int(flags), data)
                assert conn.read_line() == b"END\r\n"
            elif expect[0] == "fill":
                assert conn.read_line() == b"STORED\r\n"
            elif expect[0] == "set":
                assert conn.read_line() == b"STORED\r\n"
                model.version[expect[1]] = expect[2]
            else:
                assert conn.read_line() in (b"DELETED\r\n", b"NOT_FOUND\r\n")
                model.version.pop(expect[1], None)
    return requests, check


def meta_round(conn, prefix, model, round_no):
    """`text_round` in meta commands: mg (value and flags), ms, md."""
    requests, expects = plan_round(
        prefix, model, round_no, lambda key: b"mg %s v f\r\n" % key,
        lambda key, version, data: b"ms %s %d F%d\r\n%s\r\n" % (key, len(data), version, data),
        lambda key: b"md %s\r\n" % key)

    def check():
        for expect in expects:
            line = conn.read_line()
            if expect[0] == "get":
                if line == b"EN\r\n":
                    continue
                head, length, flags = line.split()
                assert head == b"VA", f"reply out of order: {line!r}"
                data = conn.read_exact(int(length) + 2)[:-2]
                model.check_hit(expect[1], int(flags[1:]), data)
            elif expect[0] == "fill":
                assert line == b"HD\r\n", f"reply out of order: {line!r}"
            elif expect[0] == "set":
                assert line == b"HD\r\n", f"reply out of order: {line!r}"
                model.version[expect[1]] = expect[2]
            else:
                assert line in (b"HD\r\n", b"NF\r\n"), f"reply out of order: {line!r}"
                model.version.pop(expect[1], None)
    return requests, check


def run_pipelines(port, prefix, size, make_round):
    model = Model(size)
    with SlowConn(port) as conn:
        for round_no in range(ROUNDS):
            request, check = make_round(conn, prefix, model, round_no)
            sender = send_behind(conn, request)
            check()
            sender.join(DEADLINE_S)
            assert not sender.is_alive(), "the pipeline was not taken in time"
        conn.assert_quiet()


@pytest.mark.memcache
@pytest.mark.slow
@pytest.mark.parametrize("size", [10000, 100000])
@pytest.mark.parametrize("dialect", ["text", "meta"])
def test_writes_behind_lent_gets_keep_order_under_eviction(make_server, target, size, dialect):
    server = make_server(extra=WIDE_BATCHES if target == "spinel" else ())
    make_round = text_round if dialect == "text" else meta_round
    prefix = b"lw%s%d" % (dialect.encode(), size)
    fills = pipelines_while_filled(
        server.mc_port, lambda: run_pipelines(server.mc_port, prefix, size, make_round), size)
    assert fills > 0
    with Conn(server.mc_port) as after:
        after.rt(b"mn\r\n", b"MN\r\n")


def resp_round(conn, prefix, model, round_no):
    """`text_round` in RESP: GET, SET, GET, and DEL then GET for every fourth key. The
    version is the value's own (RESP has no flags)."""
    requests, expects = plan_round(
        prefix, model, round_no, lambda key: resp_encode(b"GET", key),
        lambda key, _version, data: resp_encode(b"SET", key, data),
        lambda key: resp_encode(b"DEL", key))

    def check():
        for expect in expects:
            line = conn.read_line()
            if expect[0] == "get":
                if line == b"$-1\r\n":
                    continue
                assert line.startswith(b"$"), f"reply out of order: {line!r}"
                data = conn.read_exact(int(line[1:]) + 2)[:-2]
                model.check_hit(expect[1], int(data[6:11]), data)
            elif expect[0] == "fill":
                assert line == b"+OK\r\n", f"reply out of order: {line!r}"
            elif expect[0] == "set":
                assert line == b"+OK\r\n", f"reply out of order: {line!r}"
                model.version[expect[1]] = expect[2]
            else:
                assert line in (b":1\r\n", b":0\r\n"), f"reply out of order: {line!r}"
                model.version.pop(expect[1], None)
    return requests, check


@pytest.mark.resp
@pytest.mark.slow
@pytest.mark.parametrize("size", [10000, 100000])
def test_resp_writes_behind_lent_gets_keep_order_under_eviction(make_server, target, size):
    if target != "spinel":
        pytest.skip("fills the store over memcached text")
    server = make_server(extra=WIDE_BATCHES)
    prefix = b"lwresp%d" % size
    fills = pipelines_while_filled(
        server.mc_port, lambda: run_pipelines(server.resp_port, prefix, size, resp_round), size)
    assert fills > 0
    with Conn(server.resp_port) as after:
        after.rt(resp_encode(b"PING"), b"+PONG\r\n")
