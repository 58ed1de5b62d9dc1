"""Large sets: past 32 KiB of encoding Spinel keeps a set outside the store (an owner item
names it), where SADD, SREM, SISMEMBER, SMISMEMBER and SCARD cost O(members named) instead
of O(size). What a client sees must not change: the same replies as redis-server 7.0
(these pass with CONFORMANCE_TARGET=redis; a set this large is a hash table there, so
whole-set replies are compared as sets), through the commands over several sets and the
keyspace commands, and on Spinel the memory it held comes back when it goes.
"""

import os
import random

import pytest

from conftest import start_server
from large_kit import assert_charged_and_given_back, assert_watch_breaks, scan_with_churn
from test_redis_hash import read_reply
from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

SIZE = 5000  # members of 7 bytes: about 40 KiB of encoding, past 32 KiB


def call(conn, *args):
    conn.send(resp_encode(*args))
    return read_reply(conn)


def filled(conn, key, n=SIZE, prefix="m"):
    members = {f"{prefix}{i:06d}" for i in range(n)}
    call(conn, "DEL", key)
    assert call(conn, "SADD", key, *sorted(members)) == n
    return members


def members(conn, key):
    return {m.decode() for m in call(conn, "SMEMBERS", key)}


@pytest.fixture
def c(resp_port):
    with Conn(resp_port) as conn:
        yield conn


def test_one_member_commands(c, key):
    expected = filled(c, key)
    assert call(c, "SCARD", key) == SIZE
    assert call(c, "SISMEMBER", key, "m000007") == 1
    assert call(c, "SISMEMBER", key, "nope") == 0
    assert call(c, "SMISMEMBER", key, "m000001", "nope", "m004999") == [1, 0, 1]
    assert call(c, "SADD", key, "new", "new", "m000001", "17", "-3") == 3
    assert call(c, "SISMEMBER", key, "17") == 1
    assert call(c, "SREM", key, "new", "new", "nope", "m000002") == 2
    assert call(c, "SCARD", key) == SIZE + 1
    expected |= {"17", "-3"}
    expected -= {"m000002"}
    assert members(c, key) == expected
    cursor, scanned = b"0", set()
    while True:
        cursor, page = call(c, "SSCAN", key, cursor, "MATCH", "m00000*")
        scanned |= {m.decode() for m in page}
        if cursor == b"0":
            break
    assert scanned == {m for m in expected if m.startswith("m00000")}


def test_random_pops_and_picks(c, key):
    left = filled(c, key)
    one = call(c, "SPOP", key).decode()
    assert one in left
    left.remove(one)
    some = {m.decode() for m in call(c, "SPOP", key, "100")}
    assert len(some) == 100 and some <= left
    left -= some
    assert call(c, "SPOP", key, "0") == []
    assert call(c, "SCARD", key) == len(left)
    assert call(c, "SRANDMEMBER", key).decode() in left
    picked = [m.decode() for m in call(c, "SRANDMEMBER", key, "50")]
    assert len(set(picked)) == 50 and set(picked) <= left
    repeated = [m.decode() for m in call(c, "SRANDMEMBER", key, "-20")]
    assert len(repeated) == 20 and set(repeated) <= left
    assert members(c, key) == left
    everything = {m.decode() for m in call(c, "SPOP", key, str(SIZE))}
    assert everything == left
    assert call(c, "EXISTS", key) == 0


@pytest.mark.parametrize("size", [SIZE, 500])
def test_scan_pages_with_churn(c, key, target, size):
    """SSCAN of a set past Redis's compact encodings (a large one kept outside the store,
    and one of 500 strings still in it) comes in pages, and returns every member present
    throughout the scan while others come and go between pages."""
    stable = filled(c, key, n=size)

    def churn(page):
        call(c, "SADD", key, f"new{page}", f"gone{page}")
        call(c, "SREM", key, f"gone{page}", f"new{page - 1}")

    decode = lambda page: (m.decode() for m in page)
    seen, pages = scan_with_churn(c, "SSCAN", key, churn, decode, "COUNT", "10")
    assert stable <= seen
    assert not any(m.startswith("gone") for m in seen)
    if target == "spinel":
        assert pages <= 40, "a whole scan takes about 16 pages, whatever COUNT says"
    matched, _ = scan_with_churn(c, "SSCAN", key, lambda _: None, decode, "MATCH", "m0001*")
    assert matched == {m for m in stable if m.startswith("m0001")}


def test_repeated_picks_of_a_large_set(c, key):
    left = filled(c, key)
    picked = [m.decode() for m in call(c, "SRANDMEMBER", key, str(-3 * SIZE))]
    assert len(picked) == 3 * SIZE and set(picked) <= left
    assert len(set(picked)) > SIZE // 2, "draws spread over the set"
    assert call(c, "SCARD", key) == SIZE


def test_removing_every_member_deletes_the_key(c, key):
    expected = sorted(filled(c, key))
    assert call(c, "SREM", key, *expected[:-1]) == SIZE - 1
    assert call(c, "SREM", key, expected[-1], "nope") == 1
    assert call(c, "EXISTS", key) == 0


def test_type_encoding_and_wrongtype(c, key):
    filled(c, key)
    assert call(c, "TYPE", key) == b"set"
    assert call(c, "OBJECT", "ENCODING", key) == b"hashtable"
    for command in (["GET", key], ["HSET", key, "f", "v"], ["ZADD", key, "1", "x"]):
        reply = call(c, *command)
        assert isinstance(reply, RuntimeError) and str(reply).startswith("WRONGTYPE"), command


def test_commands_over_several_sets(c, key):
    a, b, dest = key + ":a", key + ":b", key + ":dest"
    first = filled(c, a)
    second = filled(c, b, n=SIZE + 500)
    second_only = second - first
    assert call(c, "SADD", b, "only-b") == 1
    second.add("only-b")
    assert {m.decode() for m in call(c, "SINTER", a, b)} == first & second
    assert call(c, "SINTERCARD", "2", a, b) == len(first & second)
    assert {m.decode() for m in call(c, "SDIFF", b, a)} == second_only | {"only-b"}
    assert call(c, "SUNIONSTORE", dest, a, b) == len(first | second)
    assert call(c, "OBJECT", "ENCODING", dest) == b"hashtable"
    assert call(c, "SADD", dest, "more") == 1
    assert call(c, "SCARD", dest) == len(first | second) + 1
    assert call(c, "SMOVE", b, a, "only-b") == 1
    assert call(c, "SISMEMBER", a, "only-b") == 1
    assert call(c, "SISMEMBER", b, "only-b") == 0
    popped = call(c, "SPOP", a, "10")
    assert len(popped) == 10 and call(c, "SCARD", a) == SIZE + 1 - 10
    assert call(c, "ZUNIONSTORE", dest, "1", a) == SIZE + 1 - 10
    assert call(c, "DEL", a, b, dest) == 3


def test_rename_and_copy_keep_each_set_whole(c, key):
    expected = filled(c, key)
    other, copy = key + ":renamed", key + ":copy"
    call(c, "DEL", other, copy)
    assert call(c, "RENAME", key, other) == b"OK"
    assert call(c, "COPY", other, copy) == 1
    assert call(c, "SADD", copy, "only-in-copy") == 1
    assert call(c, "SREM", other, "m000000") == 1
    assert members(c, copy) == expected | {"only-in-copy"}
    assert members(c, other) == expected - {"m000000"}
    assert call(c, "DEL", copy, other) == 2


def test_watch_sees_changes_made_in_place(resp_port, key):
    with Conn(resp_port) as c, Conn(resp_port) as other:
        filled(c, key)
        changes = (["SADD", key, "x"], ["SREM", key, "m000001"])
        assert_watch_breaks(c, other, key, changes, ["SCARD", key])


def test_memory_is_charged_and_given_back(make_server, target):
    if target != "spinel":
        pytest.skip("Spinel's accounting of sets kept outside the store")
    server = make_server()
    with Conn(server.resp_port) as c:
        # 10 sets of 5,000 members of 7 bytes: at least their bytes, at most what a
        # member costs on the heap (a slot, an allocation) with the margin for the
        # allocator's holes, and their first copies in the store.
        assert_charged_and_given_back(c, filled, 10, 10 * SIZE * 7, 10 * SIZE * 150, "sets")


STEPS = 1500
MEMBERS = [f"m{i:06d}" for i in range(0, SIZE, 89)] + ["new", "", "5", "-12", "x" * 70]


# One matrix entry: the replies are the commands', compared with redis-server's.
@pytest.mark.one_backend
def test_random_large_set_matches_redis(resp_port, target, key):
    if target != "spinel":
        pytest.skip("compares Spinel with redis-server; run with the spinel target")
    redis = start_server("redis")
    seed = int(os.environ.get("SET_MODEL_SEED", random.randrange(1 << 32)))
    rng = random.Random(seed)
    try:
        with Conn(resp_port) as ours, Conn(redis.resp_port) as theirs:
            for conn in (ours, theirs):
                filled(conn, key)
            for step in range(STEPS):
                some = rng.sample(MEMBERS, rng.randint(1, 4))
                command = rng.choice([
                    ["SADD", key, *some], ["SREM", key, *some], ["SISMEMBER", key, some[0]],
                    ["SMISMEMBER", key, *some], ["SCARD", key], ["CHECK"]])
                if command[0] == "CHECK":
                    replies = [members(conn, key) for conn in (ours, theirs)]
                else:
                    replies = [str(call(conn, *command)) for conn in (ours, theirs)]
                assert replies[0] == replies[1], (
                    f"seed {seed} (SET_MODEL_SEED to replay), step {step}: {command}")
    finally:
        redis.cleanup()
