"""Randomized model test for sets: a seeded sequence of set commands sent to Spinel and to a
real redis-server started beside it, replies compared one by one.

Replies whose member order Redis leaves open are compared sorted, except where Redis's own
`OBJECT ENCODING` says the set is an intset (then the order is ascending and must match
exactly). Random picks cannot match, so SPOP's pops are replayed on Redis as SREM of the
same members (which must all have been there), and SRANDMEMBER's picks are checked
against Redis's set. Runs only against Spinel; set SET_MODEL_SEED to replay a seed.
"""

import os
import random
import time

import pytest

from conftest import start_server
from resp_read import RespError, RespSet, hello3, read_value
from wire import Conn, resp_encode

# One matrix entry: the replies are the commands', compared with redis-server's.
pytestmark = [pytest.mark.resp, pytest.mark.one_backend]

STEPS = 3000
TIME_LIMIT_S = 20.0
MEMBERS = ([str(n) for n in range(-3, 25)]
           + ["9223372036854775807", "-9223372036854775808", "70000", "-40000", "3000000000"]
           + ["a", "b", "c", "d", "e", "f", "g", "h", "007", "+1", "-0", "", "x y", "1.5"])


class Side:
    """One server: a RESP2 and a RESP3 connection."""

    def __init__(self, port):
        self.conns = {2: Conn(port), 3: Conn(port)}
        hello3(self.conns[3])

    def ask(self, proto, args):
        conn = self.conns[proto]
        conn.send(resp_encode(*args))
        return read_value(conn)

    def close(self):
        for conn in self.conns.values():
            conn.close()


@pytest.fixture
def redis_port(target):
    if target != "spinel":
        pytest.skip("the model test compares Spinel with Redis; target is " + target)
    server = start_server("redis")
    yield server.resp_port
    server.cleanup()


def nothing_picked(reply):
    """An error, a null or an empty aggregate (an empty bulk string is a member)."""
    return isinstance(reply, RespError) or reply is None or reply == []


def sorted_if_list(value):
    if isinstance(value, list):
        return type(value)(sorted(value, key=repr))
    return value


class Model:
    def __init__(self, seed, prefix, spinel, redis):
        self.rng = random.Random(seed)
        self.seed = seed
        self.keys = [f"{prefix}:s{i}" for i in range(5)] + [f"{prefix}:str"]
        self.spinel, self.redis = spinel, redis
        self.step = 0

    def fail(self, message):
        raise AssertionError(f"seed {self.seed} step {self.step}: {message}")

    def same(self, proto, args, spinel_reply=None, exact=False):
        got = self.spinel.ask(proto, args) if spinel_reply is None else spinel_reply
        want = self.redis.ask(proto, args)
        if not exact:
            got, want = sorted_if_list(got), sorted_if_list(want)
        if got != want or type(got) is not type(want):
            self.fail(f"{args} (RESP{proto}): spinel {got!r}, redis {want!r}")
        return want

    def member(self):
        return self.rng.choice(MEMBERS)

    def key(self):
        return self.rng.choice(self.keys)

    def members(self, low=1, high=4):
        return [self.member() for _ in range(self.rng.randint(low, high))]

    def encoding(self, key):
        """Redis's encoding of `key` (None when absent)."""
        return self.redis.ask(2, ["OBJECT", "ENCODING", key])

    def is_intset(self, key):
        return self.encoding(key) == b"intset"

    def run_one(self):
        r, proto = self.rng, self.rng.choice((2, 3))
        name = r.choice(["SADD"] * 6 + ["SREM"] * 3 + [
            "SMEMBERS", "SISMEMBER", "SMISMEMBER", "SCARD", "SPOP", "SRANDMEMBER", "SMOVE",
            "SINTER", "SINTERCARD", "SUNION", "SDIFF", "SINTERSTORE", "SUNIONSTORE",
            "SDIFFSTORE", "SSCAN", "SET", "DEL"])
        if name in ("SADD", "SREM"):
            # Up to 8 members Spinel edits the stored bytes; more take its rebuild path.
            self.same(proto, [name, self.key(), *self.members(1, r.choice((4, 4, 12)))])
        elif name == "SMEMBERS":
            key = self.key()
            self.same(proto, [name, key], exact=self.is_intset(key))
        elif name == "SISMEMBER":
            self.same(proto, [name, self.key(), self.member()])
        elif name == "SMISMEMBER":
            self.same(proto, [name, self.key(), *self.members()])
        elif name == "SCARD":
            self.same(proto, [name, self.key()])
        elif name == "SMOVE":
            self.same(proto, [name, self.key(), self.key(), self.member()])
        elif name in ("SINTER", "SUNION", "SDIFF"):
            keys = [self.key() for _ in range(r.randint(1, 3))]
            # Over intsets only, Redis's result is an intset too: ascending, exactly.
            exact = all(self.encoding(k) in (b"intset", None) for k in keys)
            self.same(proto, [name, *keys], exact=exact)
        elif name == "SINTERCARD":
            keys = [self.key() for _ in range(r.randint(1, 3))]
            extra = r.choice([[], ["LIMIT", str(r.randint(0, 4))], ["LIMIT", "-1"]])
            numkeys = r.choice([len(keys)] * 4 + [0, len(keys) + 1])
            self.same(proto, [name, str(numkeys), *keys, *extra])
        elif name.endswith("STORE"):
            self.same(proto, [name, self.key(), *[self.key() for _ in range(r.randint(1, 3))]])
        elif name == "SSCAN":
            self.sscan(proto)
        elif name == "SPOP":
            self.spop(proto)
        elif name == "SRANDMEMBER":
            self.srandmember(proto)
        elif name == "SET":
            self.same(proto, ["SET", self.keys[-1] if r.random() < 0.8 else self.key(), "v"])
        else:
            self.same(proto, ["DEL", self.key()])

    def sscan(self, proto):
        key = self.key()
        pattern = self.rng.choice([[], ["MATCH", "*1*"], ["MATCH", "[a-d]"]])

        def scan_all(side):
            seen, cursor = [], b"0"
            for _ in range(1000):
                reply = side.ask(proto, ["SSCAN", key, cursor, *pattern, "COUNT", "5"])
                if isinstance(reply, RespError):
                    return reply
                cursor, page = reply
                seen += page
                if cursor == b"0":
                    return sorted(set(seen))
            self.fail("SSCAN did not finish")

        got, want = scan_all(self.spinel), scan_all(self.redis)
        if got != want:
            self.fail(f"SSCAN {key} {pattern}: spinel {got!r}, redis {want!r}")

    def spop(self, proto):
        key = self.key()
        args = ["SPOP", key] + ([] if self.rng.random() < 0.4 else [str(self.rng.randint(-1, 6))])
        got = self.spinel.ask(proto, args)
        if nothing_picked(got):
            # An error, a missing key or a zero count: deterministic, so Redis must agree.
            return self.same(proto, args, spinel_reply=got, exact=True)
        popped = [got] if isinstance(got, bytes) else got
        if len(args) == 3 and proto == 3 and not isinstance(got, RespSet):
            self.fail(f"{args}: RESP3 reply is not a set: {got!r}")
        if len(set(popped)) != len(popped):
            self.fail(f"{args}: repeated members {popped!r}")
        card = self.redis.ask(2, ["SCARD", key])
        if len(args) == 3 and len(popped) != min(int(args[2]), card):
            self.fail(f"{args}: {len(popped)} members popped from a set of {card}")
        removed = self.redis.ask(2, ["SREM", key, *popped])
        if removed != len(popped):
            self.fail(f"{args}: popped {popped!r}, not all members in Redis")

    def srandmember(self, proto):
        key = self.key()
        count = self.rng.choice([None, 0, 1, 2, 5, 40, -1, -5, -40])
        args = ["SRANDMEMBER", key] + ([] if count is None else [str(count)])
        got = self.spinel.ask(proto, args)
        if nothing_picked(got):
            return self.same(proto, args, spinel_reply=got, exact=True)
        picks = [got] if isinstance(got, bytes) else got
        members = self.redis.ask(2, ["SMEMBERS", key])
        if not set(picks) <= set(members):
            self.fail(f"{args}: {picks!r} not all in {members!r}")
        if count is not None and count > 0:
            if len(picks) != min(count, len(members)) or len(set(picks)) != len(picks):
                self.fail(f"{args}: {picks!r} from {members!r}")
            if count >= len(members) and self.is_intset(key) and picks != members:
                self.fail(f"{args}: whole intset not in order: {picks!r} vs {members!r}")
        elif count is not None and len(picks) != -count:
            self.fail(f"{args}: {len(picks)} picks")


def test_set_model(resp_port, redis_port, key):
    seed = int(os.environ.get("SET_MODEL_SEED", random.randrange(1 << 32)))
    spinel, redis = Side(resp_port), Side(redis_port)
    try:
        model = Model(seed, key, spinel, redis)
        deadline = time.monotonic() + TIME_LIMIT_S
        for step in range(STEPS):
            model.step = step
            model.run_one()
            assert time.monotonic() < deadline, f"seed {seed}: over {TIME_LIMIT_S}s at {step}"
        # The end states agree too.
        for k in model.keys:
            model.same(2, ["TYPE", k])
            model.same(2, ["SMEMBERS", k]) if model.redis.ask(2, ["TYPE", k]) == "set" else None
    finally:
        spinel.close()
        redis.close()
