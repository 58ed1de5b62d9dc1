"""SCAN on a small keyspace answers in one call, cursor 0, as redis-server 7.0 does (its
table of a few keys has a few buckets; clients and their test suites, redis-py's among them,
call SCAN once and expect every key). Spinel's index starts sized for its memory limit, so
a page goes on past empty stretches until COUNT keys or its bucket budget; a large keyspace
is still paged (these pass with CONFORMANCE_TARGET=redis)."""

import pytest

from test_redis_hash import read_reply
from wire import Conn, resp_encode

pytestmark = pytest.mark.resp


def rt(conn, *args):
    conn.send(resp_encode(*args))
    return read_reply(conn)


@pytest.fixture
def c(make_server):
    server = make_server()
    with Conn(server.resp_port) as conn:
        yield conn


def test_empty_keyspace_answers_cursor_0(c):
    assert rt(c, "SCAN", "0") == [b"0", []]
    assert rt(c, "SCAN", "0", "COUNT", "1") == [b"0", []]


def test_few_keys_in_one_call(c):
    assert rt(c, "MSET", "a", "1", "b", "2", "c", "3") == b"OK"
    cursor, keys = rt(c, "SCAN", "0")
    assert cursor == b"0" and sorted(keys) == [b"a", b"b", b"c"]
    assert rt(c, "SCAN", "0", "MATCH", "a") == [b"0", [b"a"]]


def test_type_filter_in_one_call(c):
    assert rt(c, "SADD", "a-set", "1") == 1
    assert rt(c, "HSET", "a-hash", "foo", "2") == 1
    assert rt(c, "LPUSH", "a-list", "aux", "3") == 2
    assert rt(c, "SCAN", "0", "MATCH", "a*", "TYPE", "SET") == [b"0", [b"a-set"]]
    cursor, keys = rt(c, "SCAN", "0", "MATCH", "a*")
    assert cursor == b"0" and sorted(keys) == [b"a-hash", b"a-list", b"a-set"]


def test_other_databases_keys_are_not_listed(c):
    assert rt(c, "SET", "here", "1") == b"OK"
    assert rt(c, "SELECT", "1") == b"OK"
    assert rt(c, "MSET", "x", "1", "y", "2") == b"OK"
    cursor, keys = rt(c, "SCAN", "0")
    assert cursor == b"0" and sorted(keys) == [b"x", b"y"]


def test_other_databases_keys_do_not_end_the_page(c):
    """Keys left in another database (40, more than COUNT) do not cut this one's page."""
    assert rt(c, "SELECT", "9") == b"OK"
    assert rt(c, "MSET", *[f"left{i // 2}" if i % 2 == 0 else "v" for i in range(80)]) == b"OK"
    assert rt(c, "SELECT", "0") == b"OK"
    assert rt(c, "SADD", "a-set", "1") == 1
    assert rt(c, "HSET", "a-hash", "foo", "2") == 1
    assert rt(c, "SCAN", "0", "MATCH", "a*", "TYPE", "SET") == [b"0", [b"a-set"]]


def test_a_large_keyspace_is_paged_and_listed_once(c):
    """2000 keys with COUNT 10: more than one page, no page near the whole keyspace, and
    every key exactly once by the end."""
    total = 2000
    for start in range(0, total, 500):
        args = []
        for i in range(start, start + 500):
            args += [f"k{i}", "v"]
        assert rt(c, "MSET", *args) == b"OK"
    cursor, seen, pages, largest = b"0", [], 0, 0
    while True:
        cursor, keys = rt(c, "SCAN", cursor, "COUNT", "10")
        seen += keys
        pages += 1
        largest = max(largest, len(keys))
        if cursor == b"0":
            break
        assert pages < total
    assert sorted(seen) == sorted(f"k{i}".encode() for i in range(total))
    assert pages > 10 and largest < 200, (pages, largest)
