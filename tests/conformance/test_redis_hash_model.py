"""Randomized model test: a seeded sequence of hash commands sent to Spinel and to a real
redis-server started beside it, replies compared one by one. Only Redis 7.0's commands (the
real server is 7.0); field expiry is covered by test_redis_hash.py. Replies whose content
Redis leaves random (HRANDFIELD) are compared by shape. Set HASH_MODEL_SEED to replay."""

import os
import random
import time

import pytest

from conftest import start_server
from test_redis_hash import read_reply
from wire import Conn, resp_encode

# One matrix entry: the replies are the commands', compared with redis-server's.
pytestmark = [pytest.mark.resp, pytest.mark.one_backend]

COMMANDS = 3000
TIME_LIMIT_S = 20.0
KEYS = ["h0", "h1", "h2", "h3", "s"]  # "s" is made a string: WRONGTYPE paths
FIELDS = [f"f{i}" for i in range(10)] + ["", "10", "f*"]
# At most 64 bytes and few fields: Redis keeps these hashes as listpacks, whose order
# (insertion order) Spinel keeps too, so whole-hash replies compare exactly.
VALUES = ["0", "1", "-7", "42", "abc", "", "2.5", "-0.75", "x" * 64, " 1", "1e2"]
FLOAT_STEPS = ["0.5", "1.25", "-2.75", "3", "1e1", "x", "inf"]


def plain(reply):
    """A parsed reply with errors made comparable."""
    if isinstance(reply, RuntimeError):
        return ("error", str(reply))
    if isinstance(reply, list):
        return [plain(x) for x in reply]
    if isinstance(reply, tuple):
        return tuple(plain(x) for x in reply)
    return reply


def random_command(rng, prefix):
    key = prefix + rng.choice(KEYS)
    field = rng.choice(FIELDS)
    fields = rng.sample(FIELDS, rng.randint(1, 4))
    pairs = [x for f in fields for x in (f, rng.choice(VALUES))]
    name = rng.choice([
        "HSET", "HSET", "HSET", "HMSET", "HSETNX", "HGET", "HGET", "HMGET", "HGETALL", "HKEYS",
        "HVALS", "HDEL", "HDEL", "HEXISTS", "HLEN", "HSTRLEN", "HINCRBY", "HINCRBY",
        "HINCRBYFLOAT", "HRANDFIELD", "HSCAN", "SETSTR", "DEL", "EXISTS", "TYPE", "ARITY",
    ])
    if name in ("HSET", "HMSET"):
        return [name, key, *pairs]
    if name == "HSETNX":
        return [name, key, field, rng.choice(VALUES)]
    if name in ("HGET", "HEXISTS", "HSTRLEN"):
        return [name, key, field]
    if name in ("HMGET", "HDEL"):
        return [name, key, *fields]
    if name in ("HGETALL", "HKEYS", "HVALS", "HLEN", "DEL", "EXISTS", "TYPE"):
        return [name, key]
    if name == "HINCRBY":
        return [name, key, field, rng.choice(["1", "-3", "10", "x", "0"])]
    if name == "HINCRBYFLOAT":
        return [name, key, field, rng.choice(FLOAT_STEPS)]
    if name == "HRANDFIELD":
        form = rng.randint(0, 3)
        if form == 0:
            return [name, key]
        count = str(rng.choice([0, 1, 2, 3, 5, 20, -1, -4, -30]))
        if form == 1:
            return [name, key, count]
        return [name, key, count, "WITHVALUES" if form == 2 else "BAD"]
    if name == "HSCAN":
        args = [name, key, rng.choice(["0", "0", "x"])]
        if rng.random() < 0.5:
            args += ["MATCH", rng.choice(["f*", "f1", "*", "1?"])]
        if rng.random() < 0.3:
            args += ["COUNT", rng.choice(["1", "100", "0"])]
        return args
    if name == "SETSTR":
        return ["SET", prefix + "s", "v"]
    return rng.choice([["HSET", key, field], ["HGET", key], ["HMSET", key, "a", "1", "b"]])


def shape(command, reply):
    """What must agree between the servers: all of a deterministic reply; for HRANDFIELD,
    the kind and size, and the whole content when the count covers the hash."""
    reply = plain(reply)
    if command[0] != "HRANDFIELD" or isinstance(reply, tuple):
        return reply
    if len(command) == 2:
        return "nil" if reply is None else "field"
    count, fields = int(command[2]), len(reply)
    if len(command) == 4 and not (reply and isinstance(reply[0], list)):
        fields //= 2  # RESP2 flattens WITHVALUES pairs; RESP3 nests them
    if 0 <= fields < count:
        return reply  # the whole hash, in order
    return ("random", len(reply), [type(x).__name__ for x in reply[:2]])


def test_model_against_redis(resp_port, target, key):
    if target != "spinel":
        pytest.skip("compares Spinel with redis-server; run with the spinel target")
    redis = start_server("redis")
    seed = int(os.environ.get("HASH_MODEL_SEED", random.randrange(1 << 32)))
    rng = random.Random(seed)
    try:
        conns = {}
        for name, port in (("spinel", resp_port), ("redis", redis.resp_port)):
            resp2, resp3 = Conn(port), Conn(port)
            resp3.send(resp_encode("HELLO", "3"))
            read_reply(resp3)
            conns[name] = (resp2, resp3)
        deadline = time.monotonic() + TIME_LIMIT_S
        history = []
        for step in range(COMMANDS):
            assert time.monotonic() < deadline, f"seed {seed}: over {TIME_LIMIT_S}s"
            command = random_command(rng, key + ":")
            protocol = rng.randint(0, 1)
            replies = {}
            for name, pair in conns.items():
                pair[protocol].send(resp_encode(*command))
                replies[name] = shape(command, read_reply(pair[protocol]))
            history.append((protocol + 2, command))
            assert replies["spinel"] == replies["redis"], (
                f"seed {seed} (HASH_MODEL_SEED to replay), step {step}, RESP{protocol + 2}: "
                f"{command}\nlast commands: {history[-8:]}")
        for pair in conns.values():
            for conn in pair:
                conn.close()
    finally:
        redis.cleanup()
