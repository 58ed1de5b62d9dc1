"""Randomized comparison with a real redis-server: a seeded sequence of bitmap and
HyperLogLog commands (and GET/SET of the raw strings, so HyperLogLogs travel between
encodings and through values written by hand) is sent to Spinel and to redis-server 7.0
started beside it; every reply must be the same bytes.

Runs only with the spinel target (it starts its own redis-server; skipped if none is
installed). SPINEL_MODEL_SEED picks the seed; the seed and the command are printed on a
mismatch.
"""

import os
import random
import time

import pytest

from conftest import start_server
from wire import Conn, resp_encode

# One matrix entry: the replies are the commands', compared with redis-server's.
pytestmark = [pytest.mark.resp, pytest.mark.one_backend]

STEPS = 4000
TIME_LIMIT_S = 20.0

BIT_KEYS = ["b0", "b1", "b2"]
HLL_KEYS = ["p0", "p1", "p2", "p3"]
ALL_KEYS = BIT_KEYS + HLL_KEYS + ["none"]


def read_reply(conn):
    """One whole RESP reply, as raw bytes."""
    line = conn.read_line()
    kind, rest = line[:1], line[1:-2]
    if kind in b"$=!" and rest != b"-1":
        return line + conn.read_exact(int(rest) + 2)
    if kind in b"*%~>" and rest != b"-1":
        count = int(rest) * (2 if kind == b"%" else 1)
        return line + b"".join(read_reply(conn) for _ in range(count))
    return line


def offset(rnd):
    return str(rnd.choice([rnd.randrange(64), rnd.randrange(400), rnd.randrange(4000)]))


def index(rnd):
    return str(rnd.choice([rnd.randrange(-12, 12), rnd.randrange(-100, 100)]))


def unit(rnd):
    return [rnd.choice(["BIT", "BYTE", "bit", "byte"])] if rnd.random() < 0.5 else []


def field_type(rnd):
    if rnd.random() < 0.02:
        return rnd.choice(["u64", "i65", "x8", "i0"])
    if rnd.random() < 0.5:
        return f"i{rnd.randrange(1, 65)}"
    return f"u{rnd.randrange(1, 64)}"


def field_value(rnd):
    return str(rnd.choice([rnd.randrange(-300, 300), rnd.randrange(-2**63, 2**63),
                           2**63 - 1, -2**63, rnd.randrange(2**40)]))


def bitfield_args(rnd, read_only):
    args = []
    for _ in range(rnd.randrange(0, 5)):
        pick = rnd.random()
        at = offset(rnd) if rnd.random() < 0.8 else f"#{rnd.randrange(20)}"
        if pick < 0.2:
            args += ["OVERFLOW", rnd.choice(["WRAP", "SAT", "FAIL", "wrap", "sat", "fail"])]
        elif pick < 0.5 or read_only:
            args += ["GET", field_type(rnd), at]
        elif pick < 0.75:
            args += ["SET", field_type(rnd), at, field_value(rnd)]
        else:
            args += ["INCRBY", field_type(rnd), at, field_value(rnd)]
    return args


def element(rnd):
    return f"e{rnd.randrange(6000)}"


def raw_hll(rnd):
    """A HyperLogLog string in Redis's layout, sometimes damaged."""
    if rnd.random() < 0.5:
        run = 16384 - 3000
        body = bytes([0x40 | ((3000 - 1) >> 8), (3000 - 1) & 0xff, 0x80 | (4 << 2) | 2])
        body += bytes([0x40 | ((run - 3) >> 8), (run - 3) & 0xff])
        if rnd.random() < 0.05:
            body = body[:-1] + b"\x00"  # no longer covers 16384 registers
        return b"HYLL\x01\x00\x00\x00" + bytes(7) + b"\x80" + body
    registers = bytes(rnd.randrange(256) if rnd.random() < 0.1 else 0 for _ in range(12288))
    cache = bytes(7) + (b"\x80" if rnd.random() < 0.8 else b"\x00")
    return b"HYLL\x00\x00\x00\x00" + cache + registers


def command(rnd):
    pick = rnd.random()
    bkey = rnd.choice(BIT_KEYS if rnd.random() < 0.9 else ALL_KEYS)
    pkey = rnd.choice(HLL_KEYS if rnd.random() < 0.9 else ALL_KEYS)
    if pick < 0.10:
        return ["SETBIT", bkey, offset(rnd), rnd.choice(["0", "1", "1", "2"])]
    if pick < 0.15:
        return ["GETBIT", bkey, offset(rnd)]
    if pick < 0.22:
        extra = [index(rnd), index(rnd)] + unit(rnd) if rnd.random() < 0.7 else []
        return ["BITCOUNT", bkey] + extra
    if pick < 0.30:
        extra = [index(rnd), index(rnd)][: rnd.randrange(3)]
        if len(extra) == 2:
            extra += unit(rnd)
        return ["BITPOS", bkey, rnd.choice(["0", "1"])] + extra
    if pick < 0.36:
        op = rnd.choice(["AND", "OR", "XOR", "NOT", "and"])
        sources = rnd.sample(ALL_KEYS, 1 if op == "NOT" else rnd.randrange(1, 4))
        return ["BITOP", op, rnd.choice(BIT_KEYS)] + sources
    if pick < 0.46:
        return ["BITFIELD", bkey] + bitfield_args(rnd, False)
    if pick < 0.50:
        return ["BITFIELD_RO", bkey] + bitfield_args(rnd, rnd.random() < 0.9)
    if pick < 0.70:
        count = rnd.choice([1, 2, 5, 20, 200])
        return ["PFADD", pkey] + [element(rnd) for _ in range(count)]
    if pick < 0.80:
        return ["PFCOUNT"] + rnd.sample(HLL_KEYS + ["none"], rnd.randrange(1, 4))
    if pick < 0.86:
        return ["PFMERGE", pkey] + rnd.sample(HLL_KEYS + ["none"], rnd.randrange(0, 3))
    if pick < 0.95:
        return ["GET", rnd.choice(ALL_KEYS)]
    if pick < 0.97:
        return ["SET", pkey, raw_hll(rnd)]
    if pick < 0.98:
        return ["SET", bkey, rnd.choice(["", "foobar", "12345", "\x00\xff"])]
    return ["DEL", rnd.choice(ALL_KEYS)]


@pytest.fixture
def redis_peer(target, servers):
    if target != "spinel":
        pytest.skip("the model test compares Spinel with a redis-server it starts itself")
    server = start_server("redis")
    servers.append(server)
    return server


def test_model_against_redis(resp_port, redis_peer):
    seed = int(os.environ.get("SPINEL_MODEL_SEED", random.randrange(2**32)))
    rnd = random.Random(seed)
    deadline = time.monotonic() + TIME_LIMIT_S
    with Conn(resp_port) as spinel, Conn(redis_peer.resp_port) as redis:
        # Keys of their own: a shared Spinel serves other tests; Redis is ours alone.
        prefix = f"model{seed}:"
        for step in range(STEPS):
            assert time.monotonic() < deadline, f"seed {seed}: too slow at step {step}"
            args = command(rnd)
            args = [prefix + a if isinstance(a, str) and a in ALL_KEYS else a for a in args]
            wire = resp_encode(*args)
            spinel.send(wire)
            redis.send(wire)
            want, got = read_reply(redis), read_reply(spinel)
            assert got == want, (
                f"seed {seed} step {step}: {[a[:40] for a in args][:8]} ...\n"
                f"redis  {want[:200]!r}\nspinel {got[:200]!r}")
        keys = [prefix + k for k in ALL_KEYS]
        spinel.send(resp_encode("DEL", *keys))
        read_reply(spinel)
