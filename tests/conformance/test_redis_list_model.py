"""Lists against a model: a seeded random sequence of every list command (valid and not),
over a handful of keys, sent to Spinel and to a real redis-server started beside it; every
reply must be the same bytes. Lists have a defined order, so nothing is sorted.

Runs only with the spinel target and when redis-server is installed. The seed is random
per run and printed on a failure; set SPINEL_MODEL_SEED to replay one.
"""

import os
import random
import time

import pytest

from conftest import start_server
from test_redis_list import read_reply
from wire import Conn, resp_encode

# One matrix entry: the replies are the commands', compared with redis-server's.
pytestmark = [pytest.mark.resp, pytest.mark.one_backend]

COMMANDS_TOTAL = 4000
BATCH = 50
TIME_LIMIT_S = 20

ELEMENTS = ["a", "b", "c", "a", "b", "1", "-1", "", "x" * 40, "éé"]
INTEGERS = ["0", "1", "2", "3", "-1", "-2", "-5", "7", "100", "-100", "x", "1.5",
            "9223372036854775807", "-9223372036854775808"]


def element(rng):
    return rng.choice(ELEMENTS)


def integer(rng):
    return rng.choice(INTEGERS)


def end(rng):
    return rng.choice(["LEFT", "RIGHT", "left", "Right", "UP"] if rng.random() < 0.1
                      else ["LEFT", "RIGHT"])


def lpos(rng, key):
    args = ["LPOS", key, element(rng)]
    for option in rng.sample(["RANK", "COUNT", "MAXLEN"], rng.randrange(4)):
        low = -3 if option == "RANK" else 0
        value = integer(rng) if rng.random() < 0.2 else str(rng.randrange(low, 4))
        args += [option, value]
    return args


def lmpop(rng, keys):
    chosen = rng.sample(keys, rng.randrange(1, 4))
    numkeys = len(chosen) if rng.random() < 0.9 else rng.choice([0, len(chosen) + 1, -1])
    args = ["LMPOP", str(numkeys), *chosen, end(rng)]
    if rng.random() < 0.5:
        args += ["COUNT", str(rng.randrange(1, 5)) if rng.random() < 0.9 else integer(rng)]
    return args


def command(rng, keys):
    """One random command over `keys` (the last one holds a string)."""
    k, k2 = rng.choice(keys), rng.choice(keys)
    many = [element(rng) for _ in range(rng.randrange(1, 5))]
    choices = [
        (8, lambda: [rng.choice(["LPUSH", "RPUSH"]), k, *many]),
        (3, lambda: [rng.choice(["LPUSHX", "RPUSHX"]), k, *many]),
        (6, lambda: [rng.choice(["LPOP", "RPOP"]), k]),
        (4, lambda: [rng.choice(["LPOP", "RPOP"]), k, rng.choice(["0", "1", "2", "5", "-1"])]),
        (3, lambda: ["LLEN", k]),
        (4, lambda: ["LRANGE", k, integer(rng), integer(rng)]),
        (3, lambda: ["LINDEX", k, integer(rng)]),
        (3, lambda: ["LSET", k, integer(rng), element(rng)]),
        (3, lambda: ["LINSERT", k, rng.choice(["BEFORE", "AFTER", "after", "NEAR"]),
                     element(rng), element(rng)]),
        (3, lambda: ["LREM", k, integer(rng), element(rng)]),
        (2, lambda: ["LTRIM", k, integer(rng), integer(rng)]),
        (4, lambda: lpos(rng, k)),
        (3, lambda: ["LMOVE", k, k2, end(rng), end(rng)]),
        (2, lambda: ["RPOPLPUSH", k, k2]),
        (3, lambda: lmpop(rng, keys)),
        (1, lambda: ["DEL", k]),
        (1, lambda: ["SET", keys[-1], "string"]),
        (1, lambda: ["COPY", k, k2] + (["REPLACE"] if rng.random() < 0.5 else [])),
        (1, lambda: ["RENAME", k, k2]),
        (1, lambda: ["EXPIRE", k, "1000"]),
        (1, lambda: ["TTL", k]),
    ]
    weights = [w for w, _ in choices]
    return rng.choices([f for _, f in choices], weights)[0]()


@pytest.fixture
def real_redis(target):
    if target != "spinel":
        pytest.skip("compares Spinel with a real redis-server")
    server = start_server("redis")
    yield server
    server.cleanup()


# Lists that start with this many elements are past the size at which Spinel keeps a
# list outside the store (8 KiB of encoding): the same commands then run on that form.
LARGE_PREFILL = 1500


@pytest.mark.parametrize("prefill", [0, LARGE_PREFILL])
def test_random_lists_match_redis(resp_port, real_redis, key, prefill):
    seed = int(os.environ.get("SPINEL_MODEL_SEED", random.randrange(1 << 32)))
    rng = random.Random(seed)
    keys = [f"{key}:{i}" for i in range(4)] + [f"{key}:str"]
    deadline = time.monotonic() + TIME_LIMIT_S
    with Conn(resp_port) as spinel, Conn(real_redis.resp_port) as redis:
        history = []
        if prefill:
            elements = [element(rng) + str(i) for i in range(prefill)]
            wire = b"".join(resp_encode("RPUSH", k, *elements) for k in keys[:3])
            spinel.send(wire)
            redis.send(wire)
            for _ in keys[:3]:
                assert read_reply(spinel) == read_reply(redis)
        for batch_start in range(0, COMMANDS_TOTAL, BATCH):
            assert time.monotonic() < deadline, f"seed {seed}: over {TIME_LIMIT_S}s"
            protocol = "3" if (batch_start // 1000) % 2 else "2"
            batch = [["HELLO", protocol]] + [command(rng, keys) for _ in range(BATCH)]
            wire = b"".join(resp_encode(*args) for args in batch)
            spinel.send(wire)
            redis.send(wire)
            for i, args in enumerate(batch):
                got, want = read_reply(spinel), read_reply(redis)
                history.append(args)
                if i == 0:
                    continue  # HELLO names each server; only the protocol switch matters
                assert got == want, (f"seed {seed}, command {len(history)} {args!r} "
                                     f"(RESP{protocol}); last commands: {history[-8:]!r}")
        spinel.send(resp_encode("DEL", *keys))
        read_reply(spinel)


@pytest.mark.parametrize("size", [200, LARGE_PREFILL * 2])
def test_concurrent_moves_conserve_elements(resp_port, key, size):
    """Clients on several connections (workers, with threads > 1) move elements between
    two lists with LMOVE, RPOPLPUSH and LMPOP + RPUSH at once: no element is lost or
    duplicated, and each list stays a list (small ones, and ones kept outside the store)."""
    import threading

    a, b = key + ":a", key + ":b"
    elements = [f"e{i}" for i in range(size)]
    with Conn(resp_port) as c:
        c.send(resp_encode("RPUSH", a, *elements))
        assert read_reply(c) == b":%d\r\n" % size
    errors = []

    def client(seed):
        rng = random.Random(seed)
        try:
            with Conn(resp_port) as conn:
                for _ in range(300):
                    src, dst = rng.sample([a, b], 2) if rng.random() < 0.8 else (a, a)
                    kind = rng.randrange(3)
                    if kind == 0:
                        ends = [rng.choice(["LEFT", "RIGHT"]) for _ in range(2)]
                        conn.send(resp_encode("LMOVE", src, dst, *ends))
                        reply = read_reply(conn)
                        assert reply.startswith(b"$"), reply
                    elif kind == 1:
                        conn.send(resp_encode("RPOPLPUSH", src, dst))
                        reply = read_reply(conn)
                        assert reply.startswith(b"$"), reply
                    else:
                        conn.send(resp_encode("LMPOP", "2", src, dst, "LEFT", "COUNT", "3"))
                        reply = read_reply(conn)
                        if reply.startswith(b"*2"):
                            moved = reply.split(b"\r\n")[5::2]
                            conn.send(resp_encode("RPUSH", dst, *moved))
                            assert read_reply(conn).startswith(b":")
        except Exception as e:  # reported by the main thread
            errors.append(repr(e))

    threads = [threading.Thread(target=client, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=TIME_LIMIT_S)
    assert not any(t.is_alive() for t in threads), "clients did not finish in time"
    assert not errors, errors
    with Conn(resp_port) as c:
        c.send(resp_encode("LRANGE", a, "0", "-1"))
        left = read_reply(c).split(b"\r\n")[2::2]
        c.send(resp_encode("LRANGE", b, "0", "-1"))
        right = read_reply(c).split(b"\r\n")[2::2]
        c.send(resp_encode("DEL", a, b))
        read_reply(c)
    assert sorted(x.decode() for x in left + right if x) == sorted(elements)
