"""Sorted sets, randomized: one seeded sequence of commands (every command of the family,
valid and invalid, over a few keys) sent to Spinel and to a real redis-server started beside
it, replies compared one by one, in RESP2 and RESP3. Set ZSET_MODEL_SEED to replay a run; the
seed is in every failure message.

Runs only against Spinel (the reference is the real server). Sets stay under 128 members,
where Redis keeps them as one listpack, as Spinel does.
"""

import os
import random
import time

import pytest

from conftest import start_server
from test_redis_zset import read_reply
from wire import Conn, resp_encode

# One matrix entry: the replies are the commands', compared with redis-server's.
pytestmark = [pytest.mark.resp, pytest.mark.one_backend]

STEPS = 3000
TIME_LIMIT_S = 20.0
KEYS = ["zm:a", "zm:b", "zm:c", "zm:d"]
STRING_KEY = "zm:s"
MEMBERS = ["", "a", "b", "c", "d", "ab", "abc", "b\x00", "m1", "m2", "x", "y", "z"]
SCORES = ["0", "1", "-1", "2", "3", "-3", "0.5", "1.1", "-2.25", "inf", "-inf", "+inf",
          "1e20", "-0", "0x10", "7", "100"]
BAD_NUMBERS = ["x", "nan", "", "1e400", "1.5.2"]


def score(rng):
    return rng.choice(BAD_NUMBERS) if rng.random() < 0.03 else rng.choice(SCORES)


def score_bound(rng):
    if rng.random() < 0.03:
        return rng.choice(["x", "nan", "[1", "(x"])
    bound = rng.choice(SCORES + ["-inf", "+inf"])
    return "(" + bound if rng.random() < 0.3 else bound


def lex_bound(rng):
    roll = rng.random()
    if roll < 0.03:
        return rng.choice(["x", "", "-a"])
    if roll < 0.25:
        return rng.choice(["-", "+"])
    return rng.choice("[(") + rng.choice(MEMBERS)


def rank(rng):
    return str(rng.choice([0, 1, 2, -1, -2, 5, -20, 100]) if rng.random() > 0.02 else "x")


def key(rng):
    return STRING_KEY if rng.random() < 0.04 else rng.choice(KEYS)


def limit(rng):
    if rng.random() < 0.7:
        return []
    return ["LIMIT", str(rng.choice([0, 1, 2, -1, 5])), str(rng.choice([0, 1, 3, -1, 10]))]


def keys_numkeys(rng, n_max=3):
    n = rng.randint(1, n_max)
    names = [key(rng) for _ in range(n)]
    shown = str(n) if rng.random() > 0.03 else rng.choice(["0", "-1", "x", str(n + 5)])
    return [shown] + names


def zadd(rng):
    if rng.random() < 0.8:  # mostly combinations Redis accepts
        flags = rng.choice([[], [], ["NX"], ["XX"], ["GT"], ["LT"], ["XX", "GT"], ["XX", "LT"]])
        flags = flags + rng.sample(["CH", "INCR"], rng.randint(0, 1))
    else:
        flags = rng.sample(["NX", "XX", "GT", "LT", "CH", "INCR"], rng.randint(1, 3))
    pairs = []
    for _ in range(1 if "INCR" in flags else rng.randint(1, 4)):
        pairs += [score(rng), rng.choice(MEMBERS)]
    return ["ZADD", key(rng)] + flags + pairs


def zrange(rng):
    kind = rng.choice(["", "BYSCORE", "BYLEX"])
    lo, hi = {"": (rank(rng), rank(rng)), "BYSCORE": (score_bound(rng), score_bound(rng)),
              "BYLEX": (lex_bound(rng), lex_bound(rng))}[kind]
    opts = ([kind] if kind else []) + (["REV"] if rng.random() < 0.4 else [])
    opts += limit(rng) if kind or rng.random() < 0.1 else []
    opts += ["WITHSCORES"] if rng.random() < (0.05 if kind == "BYLEX" else 0.4) else []
    rng.shuffle(opts)
    if rng.random() < 0.2:
        return ["ZRANGESTORE", rng.choice(KEYS), key(rng), lo, hi] + [
            o for o in opts if o != "WITHSCORES"]
    return ["ZRANGE", key(rng), lo, hi] + opts


def legacy_range(rng):
    name = rng.choice(["ZREVRANGE", "ZRANGEBYSCORE", "ZREVRANGEBYSCORE", "ZRANGEBYLEX",
                       "ZREVRANGEBYLEX"])
    if name == "ZREVRANGE":
        return [name, key(rng), rank(rng), rank(rng)] + (["WITHSCORES"] * rng.randint(0, 1))
    if "LEX" in name:
        return [name, key(rng), lex_bound(rng), lex_bound(rng)] + limit(rng)
    scores = ["WITHSCORES"] if rng.random() < 0.5 else []
    return [name, key(rng), score_bound(rng), score_bound(rng)] + limit(rng) + scores


def algebra(rng):
    name = rng.choice(["ZUNION", "ZINTER", "ZDIFF", "ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE",
                       "ZINTERCARD"])
    args = [name] + ([rng.choice(KEYS)] if name.endswith("STORE") else []) + keys_numkeys(rng)
    n = len(args) - (3 if name.endswith("STORE") else 2)
    if name != "ZINTERCARD" and "DIFF" not in name and rng.random() < 0.4:
        args += ["WEIGHTS"] + [rng.choice(["1", "2", "-1", "0.5", "0", "inf"]) for _ in range(n)]
    if name != "ZINTERCARD" and "DIFF" not in name and rng.random() < 0.4:
        args += ["AGGREGATE", rng.choice(["SUM", "MIN", "MAX", "sum", "avg"])]
    if not name.endswith("STORE") and name != "ZINTERCARD" and rng.random() < 0.5:
        args += ["WITHSCORES"]
    if name == "ZINTERCARD" and rng.random() < 0.5:
        args += ["LIMIT", rng.choice(["0", "1", "2", "-1"])]
    return args


def simple(rng):
    k, m = key(rng), rng.choice(MEMBERS)
    return rng.choice([
        ["ZSCORE", k, m],
        ["ZMSCORE", k, m, rng.choice(MEMBERS)],
        ["ZCARD", k],
        ["ZRANK", k, m],
        ["ZREVRANK", k, m],
        ["ZINCRBY", k, score(rng), m],
        ["ZREM", k, m, rng.choice(MEMBERS)],
        ["ZCOUNT", k, score_bound(rng), score_bound(rng)],
        ["ZLEXCOUNT", k, lex_bound(rng), lex_bound(rng)],
        ["ZREMRANGEBYRANK", k, rank(rng), rank(rng)],
        ["ZREMRANGEBYSCORE", k, score_bound(rng), score_bound(rng)],
        ["ZREMRANGEBYLEX", k, lex_bound(rng), lex_bound(rng)],
        ["ZPOPMIN", k] + ([rng.choice(["0", "1", "2", "5", "-1"])] if rng.random() < 0.6 else []),
        ["ZPOPMAX", k] + ([rng.choice(["0", "1", "3"])] if rng.random() < 0.6 else []),
        ["ZMPOP"] + keys_numkeys(rng) + [rng.choice(["MIN", "MAX", "max", "mid"])]
        + (["COUNT", rng.choice(["1", "2", "10", "0"])] if rng.random() < 0.5 else []),
        ["ZRANDMEMBER", k] + rng.choice([[], ["100"], ["100", "WITHSCORES"], ["0"], ["-3"],
                                         ["2", "WITHSCORES"], ["x"]]),
        ["ZSCAN", k, "0"] + rng.choice([[], ["MATCH", "*b*"], ["COUNT", "2"], ["COUNT", "0"]]),
        ["DEL", k],
        ["SET", STRING_KEY, "v"],
    ])


def next_command(rng):
    roll = rng.random()
    if roll < 0.35:
        return zadd(rng)
    if roll < 0.5:
        return zrange(rng)
    if roll < 0.6:
        return legacy_range(rng)
    if roll < 0.7:
        return algebra(rng)
    return simple(rng)


def comparable(command, reply):
    """Reduces a reply whose content Redis leaves to chance (ZRANDMEMBER picks) to its
    shape: its first line (the count) and for a single pick only that it is a bulk."""
    if command[0] != "ZRANDMEMBER":
        return reply
    if len(command) >= 3 and command[2] == "100":
        return reply  # more than the set holds: the whole set, in a fixed order
    return reply.split(b"\r\n", 1)[0][:1] if len(command) == 2 else reply.split(b"\r\n", 1)[0]


@pytest.fixture
def reference(target):
    if target != "spinel":
        pytest.skip("the model test compares Spinel with a real redis-server")
    server = start_server("redis")
    yield server
    server.cleanup()


def test_random_sequence_matches_redis(resp_port, reference):
    seed = int(os.environ.get("ZSET_MODEL_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    ours = {2: Conn(resp_port), 3: Conn(resp_port)}
    theirs = {2: Conn(reference.resp_port), 3: Conn(reference.resp_port)}
    try:
        for conns in (ours, theirs):
            conns[3].send(resp_encode("HELLO", "3"))
            read_reply(conns[3])
            conns[2].send(resp_encode("DEL", *KEYS, STRING_KEY))
            read_reply(conns[2])
        deadline = time.monotonic() + TIME_LIMIT_S
        for step in range(STEPS):
            assert time.monotonic() < deadline, f"seed {seed}: too slow at step {step}"
            command = next_command(rng)
            protocol = 3 if rng.random() < 0.25 else 2
            wire = resp_encode(*command)
            ours[protocol].send(wire)
            theirs[protocol].send(wire)
            got, want = read_reply(ours[protocol]), read_reply(theirs[protocol])
            assert comparable(command, got) == comparable(command, want), (
                f"seed {seed}, step {step}, RESP{protocol}: {command!r}\n"
                f"  spinel: {got[:400]!r}\n  redis:  {want[:400]!r}")
    finally:
        for conn in list(ours.values()) + list(theirs.values()):
            conn.close()
