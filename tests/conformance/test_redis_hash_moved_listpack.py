"""A hash past 1 KiB of encoding moves out of Spinel's store (for the speed of its writes)
long before Redis's thresholds convert its listpack to a hash table. Until then it must
still answer as the listpack Redis keeps: HGETALL's order after HDEL and HSET, HSCAN's one
page, OBJECT ENCODING, DUMP/RESTORE; and once past the thresholds, as Redis's hash table,
one way. Every reply is compared with a real redis-server's, byte for byte.
"""

import pytest

from resp_read import read_value
from wire import Conn, resp_encode

pytestmark = [pytest.mark.resp, pytest.mark.spinel_only]

VALUE = "v" * 60  # 100 fields of this are about 6.5 KiB: out of Spinel's store


def ask(conn, *args):
    conn.send(resp_encode(*args))
    return read_value(conn)


def both(pair, *args):
    ours, theirs = (ask(conn, *args) for conn in pair)
    assert ours == theirs, (args, ours, theirs)
    return ours


@pytest.fixture
def pair(make_server, redis_server):
    server = make_server()
    with Conn(server.resp_port) as ours, Conn(redis_server.resp_port) as theirs:
        ask(theirs, "FLUSHALL")
        yield ours, theirs


def fill(pair, key, count, start=0):
    fields = [x for i in range(start, start + count) for x in (f"f{i}", f"{VALUE}{i}")]
    both(pair, "HSET", key, *fields)


def test_order_after_hdel_and_hset(pair):
    fill(pair, "h", 100)
    assert both(pair, "OBJECT", "ENCODING", "h") == b"listpack"
    both(pair, "HDEL", "h", "f3", "f50", "f0", "nope")
    both(pair, "HSET", "h", "f10", "changed", "new1", "x", "f99", "short")
    both(pair, "HINCRBY", "h", "counter", 5)
    both(pair, "HINCRBYFLOAT", "h", "counter", "1.5")
    both(pair, "HSETNX", "h", "f11", "no")
    both(pair, "HSETNX", "h", "new2", "yes")
    both(pair, "HGETALL", "h")
    both(pair, "HKEYS", "h")
    both(pair, "HVALS", "h")
    both(pair, "HLEN", "h")
    both(pair, "HMGET", "h", "f1", "f3", "new1", "counter")
    assert both(pair, "OBJECT", "ENCODING", "h") == b"listpack"


def test_hscan_returns_one_page(pair):
    fill(pair, "h", 100)
    both(pair, "HDEL", "h", "f7")
    both(pair, "HSCAN", "h", 0, "COUNT", 5)
    both(pair, "HSCAN", "h", 0, "MATCH", "f1*", "COUNT", 1)


def test_past_thresholds_one_way(pair):
    fill(pair, "h", 500)
    assert both(pair, "OBJECT", "ENCODING", "h") == b"listpack"
    fill(pair, "h", 20, start=500)
    assert both(pair, "OBJECT", "ENCODING", "h") == b"hashtable"
    both(pair, "HDEL", "h", *[f"f{i}" for i in range(400)])
    assert both(pair, "OBJECT", "ENCODING", "h") == b"hashtable"
    both(pair, "HLEN", "h")
    # A long value converts too, through HSET and through HINCRBY's field name.
    fill(pair, "g", 30)
    both(pair, "HSET", "g", "f1", "x" * 65)
    assert both(pair, "OBJECT", "ENCODING", "g") == b"hashtable"
    fill(pair, "n", 30)
    both(pair, "HINCRBY", "n", "n" * 65, 1)
    assert both(pair, "OBJECT", "ENCODING", "n") == b"hashtable"


def test_config_lowered_converts_on_next_write(pair):
    fill(pair, "h", 40)
    for conn in pair:
        assert ask(conn, "CONFIG", "SET", "hash-max-listpack-entries", "30") == "OK"
    assert both(pair, "OBJECT", "ENCODING", "h") == b"listpack"
    both(pair, "HSET", "h", "f0", "again")
    assert both(pair, "OBJECT", "ENCODING", "h") == b"hashtable"
    for conn in pair:
        ask(conn, "CONFIG", "SET", "hash-max-listpack-entries", "512")


def test_general_path_keeps_listpack(pair):
    """HEXPIRE-free changes that take the general path (HDEL of every field but one, a
    RENAME, DUMP/RESTORE) leave the answers Redis gives."""
    fill(pair, "h", 60)
    both(pair, "HDEL", "h", *[f"f{i}" for i in range(1, 59)])
    both(pair, "HGETALL", "h")
    fill(pair, "h", 40, start=100)
    both(pair, "RENAME", "h", "h2")
    assert both(pair, "OBJECT", "ENCODING", "h2") == b"listpack"
    both(pair, "HGETALL", "h2")
    ours, theirs = pair
    payload = ask(theirs, "DUMP", "h2")
    for conn in pair:
        assert ask(conn, "RESTORE", "h3", 0, payload) == "OK"
    both(pair, "HGETALL", "h3")
    assert both(pair, "OBJECT", "ENCODING", "h3") == b"listpack"
