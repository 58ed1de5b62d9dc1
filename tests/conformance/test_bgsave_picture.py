"""BGSAVE is one instant's picture, without a fork (issue 35): while a BGSAVE walks the
store, writers keep changing it through Redis (SET, DEL, MSET, HSET on a large hash, keys
created) and memcached (set with flags, delete, incr, touch); the file, loaded into a new
server, must equal the store as it was after some prefix of each writer's sequence of
writes: no write half in (MSET's two keys), none torn, none lost. A fuzzy walk fails it
(checked against the binary from before the picture: each key is then as the walk met it).
Also: a FLUSHALL during a BGSAVE stops it, as Redis's FLUSHALL kills its saving child.
"""

import random
import shutil
import threading
import time

import pytest
import redis

from wire import Conn

pytestmark = [pytest.mark.spinel_only, pytest.mark.slow]

KEYS = 150_000
HASH_FIELDS = 2_000
MC_KEYS = 5_000


@pytest.fixture(autouse=True)
def spinel_only(target):
    if target != "spinel":
        pytest.skip("Spinel's own way to a picture without a fork")


def fill(port, mc_port):
    r = redis.Redis(port=port)
    pipe = r.pipeline(transaction=False)
    for i in range(KEYS):
        pipe.set(f"k:{i}", "0")
        if i % 10_000 == 9_999:
            pipe.execute()
    pipe.hset("h", mapping={f"f{j}": "0" for j in range(HASH_FIELDS)})
    pipe.execute()
    with Conn(mc_port) as c:
        c.send(b"".join(b"set mc:%d 0 0 1 noreply\r\n0\r\n" % i for i in range(MC_KEYS)))
        c.rt(b"mn\r\n", b"MN\r\n")


class RedisWriter(threading.Thread):
    """One connection, pipelined batches: its writes apply in the order logged."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.r = redis.Redis(port=port)
        self.log = []  # (g, [(name, value or None)]); a hash field is named ("h", field)
        self.stop = threading.Event()
        self.rng = random.Random(35)

    def op(self, pipe, g):
        kind = self.rng.randrange(5)
        a, b = f"k:{self.rng.randrange(KEYS)}", f"k:{self.rng.randrange(KEYS)}"
        if kind == 0:
            pipe.set(a, str(g))
            return [(a, str(g))]
        if kind == 1:
            pipe.delete(a)
            return [(a, None)]
        if kind == 2:
            pipe.mset({a: str(g), b: str(g)})
            return [(a, str(g)), (b, str(g))]
        if kind == 3:
            pipe.set(f"new:{g}", str(g))
            return [(f"new:{g}", str(g))]
        field = f"f{self.rng.randrange(HASH_FIELDS)}"
        pipe.hset("h", field, str(g))
        return [(("h", field), str(g))]

    def run(self):
        g = 0
        while not self.stop.is_set():
            pipe = self.r.pipeline(transaction=False)
            batch = []
            for _ in range(100):
                g += 1
                batch.append((g, self.op(pipe, g)))
            pipe.execute()
            self.log.extend(batch)


class MemcachedWriter(threading.Thread):
    """The same over memcached's text protocol: set (flags = g), delete, incr, touch."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.log = []  # (g, key, (flags, value) or None); a touch changes nothing visible
        self.stop = threading.Event()
        self.rng = random.Random(36)

    def run(self):
        with Conn(self.port) as c:
            g = 0
            while not self.stop.is_set():
                wire, batch = [], []
                for _ in range(100):
                    g += 1
                    key = b"mc:%d" % self.rng.randrange(MC_KEYS)
                    kind = self.rng.randrange(4)
                    if kind == 0:
                        wire.append(b"set %s %d 0 %d noreply\r\n%d\r\n" % (key, g, len(str(g)), g))
                        batch.append((g, key, ("set", g)))
                    elif kind == 1:
                        wire.append(b"delete %s noreply\r\n" % key)
                        batch.append((g, key, None))
                    elif kind == 2:
                        wire.append(b"incr %s 1 noreply\r\n" % key)
                        batch.append((g, key, ("incr", 1)))
                    else:
                        wire.append(b"touch %s 0 noreply\r\n" % key)
                c.send(b"".join(wire))
                c.rt(b"mn\r\n", b"MN\r\n")
                self.log.extend(batch)


def redis_state(port):
    r = redis.Redis(port=port, decode_responses=True)
    keys = list(r.scan_iter(count=5_000))
    strings = [k for k in keys if k != "h" and not k.startswith("mc:")]
    state = {}
    for at in range(0, len(strings), 5_000):
        chunk = strings[at:at + 5_000]
        state.update(zip(chunk, r.mget(chunk)))
    state.update({("h", f): v for f, v in r.hgetall("h").items()})
    return state


def mc_state(port):
    state = {}
    with Conn(port) as c:
        for i in range(MC_KEYS):
            c.send(b"get mc:%d\r\n" % i)
            line = c.read_line()
            if line != b"END\r\n":
                _, key, flags, length = line.split()
                value = c.read_exact(int(length) + 2)[:-2]
                assert c.read_line() == b"END\r\n"
                state[key] = (int(flags), value)
    return state


def initial_redis():
    state = {f"k:{i}": "0" for i in range(KEYS)}
    state.update({("h", f"f{j}"): "0" for j in range(HASH_FIELDS)})
    return state


def matches_a_prefix(found, initial, log, apply, names_of):
    """The n for which `found` is `initial` after the first n entries of `log`, if any
    (the names that differ are counted as each entry applies)."""
    state = dict(initial)
    differ = {name for name in state.keys() | found.keys() if state.get(name) != found.get(name)}
    if not differ:
        return 0
    best = None
    for n, entry in enumerate(log, 1):
        apply(state, entry)
        for name in names_of(entry):
            if state.get(name) == found.get(name):
                differ.discard(name)
            else:
                differ.add(name)
        if not differ:
            return n
        if best is None or len(differ) < best[0]:
            best = (len(differ), n)
    print("closest prefix (names that differ, prefix):", best)
    return None


def apply_redis(state, entry):
    for name, value in entry[1]:
        if value is None:
            state.pop(name, None)
        else:
            state[name] = value


def apply_mc(state, entry):
    g, key, change = entry
    if change is None:
        state.pop(key, None)
    elif change[0] == "set":
        state[key] = (g, str(g).encode())
    elif key in state:  # incr of a missing key changes nothing
        flags, value = state[key]
        state[key] = (flags, str(int(value) + 1).encode())


def test_bgsave_under_writes_is_one_instants_picture(make_server, tmp_path):
    server = make_server(extra=["--dir", str(tmp_path), "-m", "1024"])
    fill(server.resp_port, server.mc_port)
    writers = [RedisWriter(server.resp_port), MemcachedWriter(server.mc_port)]
    for writer in writers:
        writer.start()
    time.sleep(0.3)
    r = redis.Redis(port=server.resp_port)
    assert r.bgsave()
    deadline = time.monotonic() + 60
    while r.info("persistence")["rdb_bgsave_in_progress"]:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    time.sleep(0.1)
    for writer in writers:
        writer.stop.set()
        writer.join(30)
    persistence = r.info("persistence")
    assert persistence["rdb_last_bgsave_status"] == "ok", persistence
    # Keys were kept: writes met the walk, so the test shows something.
    assert persistence["rdb_last_cow_size"] > 0, persistence
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(tmp_path / "dump.rdb", copy / "dump.rdb")
    loaded = make_server(extra=["--dir", str(copy), "-m", "1024"])
    redis_log, mc_log = writers[0].log, writers[1].log
    found = redis_state(loaded.resp_port)
    names = lambda entry: [name for name, _ in entry[1]]  # noqa: E731
    n = matches_a_prefix(found, initial_redis(), redis_log, apply_redis, names)
    assert n is not None, f"no prefix of {len(redis_log)} Redis writes gives the file"
    assert 0 < n < len(redis_log), (n, len(redis_log))  # the instant fell among the writes
    initial_mc = {b"mc:%d" % i: (0, b"0") for i in range(MC_KEYS)}
    found_mc = mc_state(loaded.mc_port)
    m = matches_a_prefix(found_mc, initial_mc, mc_log, apply_mc, lambda entry: [entry[1]])
    assert m is not None, f"no prefix of {len(mc_log)} memcached writes gives the file"


def test_flushall_stops_a_bgsave_as_redis_kills_its_child(make_server, tmp_path):
    server = make_server(extra=["--dir", str(tmp_path), "-m", "1024"])
    fill(server.resp_port, server.mc_port)
    r = redis.Redis(port=server.resp_port)
    saves = r.info("persistence")["rdb_saves"]
    pipe = r.pipeline(transaction=False)
    pipe.bgsave()
    pipe.flushall()
    assert pipe.execute() == [True, True]
    deadline = time.monotonic() + 30
    while r.info("persistence")["rdb_bgsave_in_progress"]:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    persistence = r.info("persistence")
    assert persistence["rdb_last_bgsave_status"] == "ok"
    assert persistence["rdb_saves"] == saves + 1  # begun, as redis-server counts it
    assert not (tmp_path / "dump.rdb").exists()
    assert "stopped by a flush" in server.stderr()
    assert r.bgsave()
    while r.info("persistence")["rdb_bgsave_in_progress"]:
        time.sleep(0.01)
    assert r.info("persistence")["rdb_saves"] == saves + 2
    assert (tmp_path / "dump.rdb").exists()
