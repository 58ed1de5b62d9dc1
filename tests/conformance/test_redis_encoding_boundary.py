"""The encoding thresholds move where a collection stops being compact: at N entries (or
bytes) a hash, sorted set, integer set or list stays in the store, at N+1 it moves out, and
OBJECT ENCODING and MEMORY USAGE change together there. OBJECT ENCODING is compared with a
real redis-server at every step (a list is a `quicklist` in 7.0 whatever its size, so for
lists only Spinel's memory moves); the move is one way, as Redis never converts back.
"""

import pytest

from resp_read import read_value
from wire import Conn, resp_encode

pytestmark = [pytest.mark.resp, pytest.mark.spinel_only]

EDGE = 4
# family -> (threshold, the write that adds entry i, compact name, large name)
BY_COUNT = {
    "hash": ("hash-max-ziplist-entries", lambda i: ("HSET", "k", f"f{i}", "v"),
             "listpack", "hashtable"),
    "zset": ("zset-max-listpack-entries", lambda i: ("ZADD", "k", i, f"m{i}"),
             "listpack", "skiplist"),
    "set": ("set-max-intset-entries", lambda i: ("SADD", "k", i), "intset", "hashtable"),
    "list": ("list-max-listpack-size", lambda i: ("RPUSH", "k", f"e{i}"),
             "quicklist", "quicklist"),
}
SHRINK = {"hash": ("HDEL", "k"), "zset": ("ZREM", "k"), "set": ("SREM", "k"),
          "list": ("RPOP", "k")}


def ask(conn, *args):
    conn.send(resp_encode(*args))
    return read_value(conn)


def state(conn):
    return ask(conn, "OBJECT", "ENCODING", "k").decode(), ask(conn, "MEMORY", "USAGE", "k")


@pytest.fixture
def pair(make_server, redis_server):
    server = make_server()
    with Conn(server.resp_port) as ours, Conn(redis_server.resp_port) as theirs:
        yield ours, theirs


@pytest.mark.parametrize("family", sorted(BY_COUNT))
def test_entry_count_edge(pair, family):
    threshold, write, compact, large = BY_COUNT[family]
    ours, theirs = pair
    for conn in pair:
        assert ask(conn, "CONFIG", "SET", threshold, str(EDGE)) == "OK"
    names, memory = [], []
    for i in range(1, EDGE + 2):
        for conn in pair:
            ask(conn, *write(i))
        name, used = state(ours)
        assert name == ask(theirs, "OBJECT", "ENCODING", "k").decode(), (family, i)
        names.append(name)
        memory.append(used)
    assert names == [compact] * EDGE + [large]
    # Each entry up to the edge costs a few bytes in the store; the one past it moves the
    # collection out, to a structure that costs many times that.
    step_before, step_at_edge = memory[-2] - memory[-3], memory[-1] - memory[-2]
    assert step_at_edge > 4 * max(step_before, 8), (family, memory)
    # One way: back under the threshold, and with the threshold raised, it stays out.
    for conn in pair:
        if family == "list":
            ask(conn, "RPOP", "k", EDGE)
        else:
            ask(conn, *SHRINK[family], *[write(i)[-1 if family != "hash" else 2]
                                         for i in range(1, EDGE + 1)])
        ask(conn, "CONFIG", "SET", threshold, "512")
        ask(conn, *write(EDGE + 2))
    name, used = state(ours)
    assert name == ask(theirs, "OBJECT", "ENCODING", "k").decode() == large
    assert used > memory[-2], (family, used, memory)


@pytest.mark.parametrize("family,threshold,write", [
    ("hash", "hash-max-listpack-value", lambda n: ("HSET", "k", "f", "v" * n)),
    ("hash", "hash-max-ziplist-value", lambda n: ("HSET", "k", "f" * n, "v")),
    ("zset", "zset-max-ziplist-value", lambda n: ("ZADD", "k", 1, "m" * n)),
])
def test_value_length_edge(pair, family, threshold, write):
    ours, theirs = pair
    seen = []
    for n in (EDGE, EDGE + 1):
        for conn in pair:
            ask(conn, "DEL", "k")
            assert ask(conn, "CONFIG", "SET", threshold, str(EDGE)) == "OK"
            ask(conn, *write(n))
        name, used = state(ours)
        assert name == ask(theirs, "OBJECT", "ENCODING", "k").decode()
        seen.append((name, used))
    (small, small_bytes), (large, large_bytes) = seen
    assert (small, large) == ("listpack", "hashtable" if family == "hash" else "skiplist")
    assert large_bytes > 2 * small_bytes, seen


def test_default_thresholds(pair):
    """Redis 7.0's defaults, no CONFIG SET: 512 hash fields, 128 sorted-set members, 512
    integers, 64-byte values."""
    ours, theirs = pair
    lines = {
        "h512": ["HSET", "h512"] + [x for i in range(512) for x in (f"f{i}", "v")],
        "h513": ["HSET", "h513"] + [x for i in range(513) for x in (f"f{i}", "v")],
        "hlong": ["HSET", "hlong", "f", "v" * 65],
        "z128": ["ZADD", "z128"] + [x for i in range(128) for x in (i, f"m{i}")],
        "z129": ["ZADD", "z129"] + [x for i in range(129) for x in (i, f"m{i}")],
        "s512": ["SADD", "s512"] + list(range(512)),
        "s513": ["SADD", "s513"] + list(range(513)),
    }
    for key, line in lines.items():
        for conn in pair:
            ask(conn, *line)
        ours_name = ask(ours, "OBJECT", "ENCODING", key)
        assert ours_name == ask(theirs, "OBJECT", "ENCODING", key), key
    # One entry more costs many times one entry's share: the collection moved out.
    for compact, large in (("z128", "z129"), ("s512", "s513")):
        sizes = [ask(ours, "MEMORY", "USAGE", key) for key in (compact, large)]
        assert sizes[1] > 2 * sizes[0], (compact, sizes)
    # A hash moves out of the store past 1 KiB, far below the thresholds, and answers as
    # the listpack Redis keeps: h512 is out already, and one field more costs about one
    # field's share.
    sizes = [ask(ours, "MEMORY", "USAGE", key) for key in ("h512", "h513")]
    assert sizes[0] < sizes[1] < sizes[0] * 513 // 512 + 64, sizes


def test_other_writes_cross_the_edge(pair):
    """Writes other than the one-entry ones: several fields in one HSET, HINCRBY, ZINCRBY,
    SADD of several members, LPUSH of several, and RESTORE, which converts as it loads."""
    ours, theirs = pair
    settings = ["hash-max-listpack-entries", "3", "zset-max-listpack-entries", "3",
                "set-max-intset-entries", "3", "list-max-listpack-size", "3"]
    lines = [
        ("h", ["HSET", "h", "a", "1", "b", "2", "c", "3"], ["HSET", "h", "d", "4", "e", "5"]),
        ("hi", ["HSET", "hi", "a", "1", "b", "2", "c", "3"], ["HINCRBY", "hi", "d", "1"]),
        ("z", ["ZADD", "z", "1", "a", "2", "b", "3", "c"], ["ZINCRBY", "z", "1", "d"]),
        ("s", ["SADD", "s", "1", "2", "3"], ["SADD", "s", "4", "5"]),
        ("l", ["RPUSH", "l", "a", "b", "c"], ["LPUSH", "l", "d", "e"]),
    ]
    for conn in pair:
        assert ask(conn, "CONFIG", "SET", *settings) == "OK"
    for key, first, second in lines:
        sizes = []
        for line in (first, second):
            for conn in pair:
                ask(conn, *line)
            assert ask(ours, "OBJECT", "ENCODING", key) == ask(theirs, "OBJECT", "ENCODING", key)
            sizes.append(ask(ours, "MEMORY", "USAGE", key))
        assert sizes[1] > 3 * sizes[0], (key, sizes)
    # RESTORE of a compact hash under a lower threshold: converted on both.
    for conn in pair:
        ask(conn, "CONFIG", "SET", "hash-max-listpack-entries", "512")
        ask(conn, "HSET", "small", "a", "1", "b", "2", "c", "3")
        payload = ask(conn, "DUMP", "small")
        ask(conn, "CONFIG", "SET", "hash-max-listpack-entries", "2")
        assert ask(conn, "RESTORE", "restored", "0", payload) == "OK"
    assert ask(ours, "OBJECT", "ENCODING", "restored") == b"hashtable"
    assert ask(theirs, "OBJECT", "ENCODING", "restored") == b"hashtable"
