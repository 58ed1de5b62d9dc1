"""SORT and SORT_RO byte for byte as redis-server 7.0 sends them (validated with
CONFORMANCE_TARGET=redis): numeric and ALPHA order on lists, sets and sorted sets, BY and GET
patterns (`*`, `->field`, `#`), a constant BY, LIMIT as Redis clamps it (hostile values
included), STORE, scripts, WATCH, ACL and cluster refusals, the command table.

No test here feeds SORT a number strtod finds out of range (1e400): Redis leaves that ERANGE
in errno, where later SORTs of the same server read it as their own error.
"""

import threading
import time

import pytest

from cluster_kit import make_cluster  # noqa: F401
from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

NOT_A_DOUBLE = b"-ERR One or more scores can't be converted into double\r\n"


@pytest.fixture
def c(resp_port):
    with Conn(resp_port) as conn:
        yield conn


def bulks(*items):
    """An array reply of bulk strings (None: a RESP2 null)."""
    out = b"*%d\r\n" % len(items)
    for item in items:
        if item is None:
            out += b"$-1\r\n"
        else:
            item = item.encode() if isinstance(item, str) else item
            out += b"$%d\r\n%s\r\n" % (len(item), item)
    return out


def test_numbers_and_alpha_on_each_type(c, key):
    lst, st, zs = key + ":l", key + ":s", key + ":z"
    c.rt(resp_encode("RPUSH", lst, "3", "10", "-1.5", "2", "0x10", " 7", ""), b":7\r\n")
    c.rt(resp_encode("SORT", lst), bulks("-1.5", "", "2", "3", " 7", "10", "0x10"))
    c.rt(resp_encode("SORT", lst, "DESC"), bulks("0x10", "10", " 7", "3", "2", "", "-1.5"))
    c.rt(resp_encode("SORT", lst, "ALPHA"), bulks("", " 7", "-1.5", "0x10", "10", "2", "3"))
    c.rt(resp_encode("RPUSH", lst, "x"), b":8\r\n")
    c.rt(resp_encode("SORT", lst), NOT_A_DOUBLE)
    c.rt(resp_encode("SADD", st, "5", "1", "30", "4"), b":4\r\n")
    c.rt(resp_encode("SORT", st), bulks("1", "4", "5", "30"))
    c.rt(resp_encode("SORT", st, "ALPHA", "DESC"), bulks("5", "4", "30", "1"))
    c.rt(resp_encode("ZADD", zs, "1", "b", "2", "a", "3", "c"), b":3\r\n")
    c.rt(resp_encode("SORT", zs, "ALPHA"), bulks("a", "b", "c"))
    c.rt(resp_encode("SORT", zs), NOT_A_DOUBLE)
    # Without BY, a constant BY keeps a sorted set's order (DESC: from the other end).
    c.rt(resp_encode("SORT", zs, "BY", "nosort"), bulks("b", "a", "c"))
    c.rt(resp_encode("SORT", zs, "BY", "nosort", "DESC", "LIMIT", "1", "5"), bulks("a", "b"))
    c.rt(resp_encode("SORT", lst, "BY", "nosort", "DESC", "LIMIT", "0", "2"), bulks("x", ""))
    c.rt(resp_encode("SORT", key + ":none"), b"*0\r\n")
    c.rt(resp_encode("SET", key, "v"), b"+OK\r\n")
    c.rt(resp_encode("SORT", key), b"-WRONGTYPE Operation against a key holding the wrong kind "
         b"of value\r\n")
    c.rt(resp_encode("DEL", lst, st, zs, key), b":4\r\n")


def test_syntax_and_argument_errors(c, key):
    c.rt(resp_encode("RPUSH", key, "1"), b":1\r\n")
    c.rt(resp_encode("SORT"), b"-ERR wrong number of arguments for 'sort' command\r\n")
    c.rt(resp_encode("SORT_RO"), b"-ERR wrong number of arguments for 'sort_ro' command\r\n")
    for tail in (["BOGUS"], ["LIMIT", "1"], ["BY"], ["GET"], ["STORE"], ["ASC", "DESC", "X"]):
        c.rt(resp_encode("SORT", key, *tail), b"-ERR syntax error\r\n")
    c.rt(resp_encode("SORT_RO", key, "STORE", key + ":d"), b"-ERR syntax error\r\n")
    for start, count in (("a", "1"), ("1", "b"), ("1.5", "1"), ("1", "9223372036854775808")):
        c.rt(resp_encode("SORT", key, "LIMIT", start, count),
             b"-ERR value is not an integer or out of range\r\n")
    # Options are read before the key: a bad option wins over WRONGTYPE.
    c.rt(resp_encode("SET", key + ":s", "v"), b"+OK\r\n")
    c.rt(resp_encode("SORT", key + ":s", "NOPE"), b"-ERR syntax error\r\n")
    c.rt(resp_encode("DEL", key, key + ":s"), b":2\r\n")


def test_by_and_get_patterns(c, key):
    src = key + ":src"
    c.rt(resp_encode("RPUSH", src, "a", "b", "c", "d"), b":4\r\n")
    c.rt(resp_encode("MSET", key + ":w_a", "3", key + ":w_b", "1", key + ":w_c", "2"), b"+OK\r\n")
    c.rt(resp_encode("HSET", key + ":h_a", "f", "9", "g", "ga"), b":2\r\n")
    c.rt(resp_encode("HSET", key + ":h_c", "f", "1"), b":1\r\n")
    w, h = key + ":w_*", key + ":h_*"
    # d has no weight: 0, the lowest; equal weights fall back to the elements' bytes.
    c.rt(resp_encode("SORT", src, "BY", w), bulks("d", "b", "c", "a"))
    c.rt(resp_encode("SORT", src, "BY", w, "GET", "#", "GET", w),
         bulks("d", None, "b", "1", "c", "2", "a", "3"))
    c.rt(resp_encode("SORT", src, "BY", h + "->f", "GET", h + "->g", "GET", "#"),
         bulks(None, "b", None, "d", None, "c", "ga", "a"))
    # ALPHA BY: missing values first, in the source's order (a stable sort).
    c.rt(resp_encode("SORT", src, "BY", w, "ALPHA", "DESC"), bulks("a", "c", "b", "d"))
    # A pattern without `*` names no key: GET gives nulls, BY sorts nothing.
    c.rt(resp_encode("SORT", src, "BY", "constant", "GET", "constant"), bulks(None, None, None, None))
    # `->` with nothing after it is part of the key name.
    c.rt(resp_encode("SET", key + ":x_a->", "arrow"), b"+OK\r\n")
    c.rt(resp_encode("SORT", src, "BY", "nosort", "GET", key + ":x_*->", "LIMIT", "0", "1"),
         bulks("arrow"))
    # A BY value that is no number fails the whole sort.
    c.rt(resp_encode("SET", key + ":w_d", "heavy"), b"+OK\r\n")
    c.rt(resp_encode("SORT", src, "BY", w), NOT_A_DOUBLE)
    c.rt(resp_encode("SORT", src, "BY", w, "ALPHA"), bulks("b", "c", "a", "d"))
    c.rt(resp_encode("UNLINK", src, key + ":w_a", key + ":w_b", key + ":w_c", key + ":w_d",
                     key + ":h_a", key + ":h_c", key + ":x_a->"), b":8\r\n")


def test_limit_is_clamped_even_when_hostile(c, key):
    c.rt(resp_encode("RPUSH", key, "3", "1", "2"), b":3\r\n")
    # (start, count), sorted, in the list's own order (BY a constant).
    cases = [
        (("0", "9223372036854775807"), ("1", "2", "3"), ("3", "1", "2")),
        (("2", "9223372036854775807"), ("3",), ("2",)),
        (("-9223372036854775808", "-9223372036854775808"), ("1", "2", "3"), ("3", "1", "2")),
        (("9223372036854775807", "9223372036854775807"), (), ()),
        (("-5", "2"), ("1", "2"), ("3", "1")),
        (("1", "0"), (), ()),
        (("3", "1"), (), ()),
        (("1", "-1"), ("2", "3"), ("1", "2")),
    ]
    for (start, count), sorted_, own_order in cases:
        c.rt(resp_encode("SORT", key, "LIMIT", start, count), bulks(*sorted_))
        c.rt(resp_encode("SORT_RO", key, "BY", "nosort", "LIMIT", start, count), bulks(*own_order))
    # Many GETs over many elements: a large, well-formed reply, and the server goes on.
    c.rt(resp_encode("DEL", key), b":1\r\n")
    c.rt(resp_encode("RPUSH", key, *[str(i) for i in range(500)]), b":500\r\n")
    gets = ["GET", "nokey_*"] * 200
    c.send(resp_encode("SORT", key, "LIMIT", "0", "9223372036854775807", *gets))
    want = b"*100000\r\n" + b"$-1\r\n" * 100000
    assert c.read_exact(len(want), timeout=30) == want
    c.rt(resp_encode("PING"), b"+PONG\r\n")
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_store(c, key):
    src, dst = key + ":src", key + ":dst"
    c.rt(resp_encode("SADD", src, "b", "a", "c"), b":3\r\n")
    c.rt(resp_encode("SET", dst, "old", "EX", "100"), b"+OK\r\n")
    # A constant BY still sorts a stored set (ALPHA), so the stored list is repeatable.
    c.rt(resp_encode("SORT", src, "BY", "nosort", "STORE", dst), b":3\r\n")
    c.rt(resp_encode("TYPE", dst), b"+list\r\n")
    c.rt(resp_encode("TTL", dst), b":-1\r\n")
    c.rt(resp_encode("LRANGE", dst, "0", "-1"), bulks("a", "b", "c"))
    c.rt(resp_encode("OBJECT", "ENCODING", dst), b"$9\r\nquicklist\r\n")
    # GET values that are missing are stored as empty strings.
    c.rt(resp_encode("SORT", src, "ALPHA", "GET", "#", "GET", "nokey_*", "STORE", dst), b":6\r\n")
    c.rt(resp_encode("LRANGE", dst, "0", "-1"), bulks("a", "", "b", "", "c", ""))
    # The last STORE wins; an empty result deletes the destination.
    c.rt(resp_encode("SORT", src, "ALPHA", "STORE", key + ":x", "STORE", dst, "LIMIT", "5", "1"),
         b":0\r\n")
    c.rt(resp_encode("EXISTS", dst, key + ":x"), b":0\r\n")
    c.rt(resp_encode("SORT", key + ":none", "STORE", dst), b":0\r\n")
    c.rt(resp_encode("EXISTS", dst), b":0\r\n")
    c.rt(resp_encode("SORT", src, "STORE", dst), NOT_A_DOUBLE)
    c.rt(resp_encode("EXISTS", dst), b":0\r\n")
    c.rt(resp_encode("DEL", src), b":1\r\n")


def test_store_touches_watch_even_when_empty(c, key):
    c.rt(resp_encode("RPUSH", key, "bar"), b":1\r\n")
    c.rt(resp_encode("WATCH", key), b"+OK\r\n")
    c.rt(resp_encode("SORT", key + ":empty", "STORE", key), b":0\r\n")
    c.rt(resp_encode("MULTI"), b"+OK\r\n")
    c.rt(resp_encode("PING"), b"+QUEUED\r\n")
    c.rt(resp_encode("EXEC"), b"*-1\r\n")


def test_store_serves_a_blocked_pop(resp_port, c, key):
    src, dst = key + ":src", key + ":dst"
    with Conn(resp_port) as waiter:
        waiter.send(resp_encode("BLPOP", dst, "5"))
        time.sleep(0.2)
        c.rt(resp_encode("RPUSH", src, "b", "a"), b":2\r\n")
        c.rt(resp_encode("SORT", src, "ALPHA", "STORE", dst), b":2\r\n")
        assert waiter.read_exact(len(bulks(dst, "a"))) == bulks(dst, "a")
    c.rt(resp_encode("LRANGE", dst, "0", "-1"), bulks("b"))
    c.rt(resp_encode("DEL", src, dst), b":2\r\n")


def test_scripts_get_sets_in_order(c, key):
    c.rt(resp_encode("SADD", key, "b", "c", "a", "10", "9"), b":5\r\n")
    c.rt(resp_encode("EVAL", "return redis.call('sort', KEYS[1], 'by', '_')", "1", key),
         bulks("10", "9", "a", "b", "c"))
    c.rt(resp_encode("EVAL", "return redis.call('sort', KEYS[1], 'by', '_', 'get', '#', "
                     "'get', '_:*')", "1", key),
         b"*10\r\n$2\r\n10\r\n$-1\r\n$1\r\n9\r\n$-1\r\n$1\r\na\r\n$-1\r\n$1\r\nb\r\n$-1\r\n"
         b"$1\r\nc\r\n$-1\r\n")
    c.rt(resp_encode("SREM", key, "a", "b", "c"), b":3\r\n")
    c.rt(resp_encode("EVAL", "return redis.call('sort', KEYS[1], 'desc')", "1", key),
         bulks("10", "9"))
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_acl_by_and_get_need_every_key(resp_port, c, key):
    user, reader = key + "_u", key + "_r"
    c.rt(resp_encode("RPUSH", key, "b", "a"), b":2\r\n")
    c.rt(resp_encode("ACL", "SETUSER", user, "on", "nopass", f"~{key}*", "+@all"), b"+OK\r\n")
    c.rt(resp_encode("ACL", "SETUSER", reader, "on", "nopass", "%R~*", f"~{key}*", "+@all"),
         b"+OK\r\n")
    try:
        with Conn(resp_port) as u:
            u.rt(resp_encode("AUTH", user, "x"), b"+OK\r\n")
            u.rt(resp_encode("SORT", key, "ALPHA"), bulks("a", "b"))
            u.rt(resp_encode("SORT", key, "BY", "nosort"), bulks("b", "a"))
            u.rt(resp_encode("SORT", key, "BY", "w_*"),
                 b"-ERR BY option of SORT denied due to insufficient ACL permissions.\r\n")
            u.rt(resp_encode("SORT_RO", key, "GET", "#"),
                 b"-ERR GET option of SORT denied due to insufficient ACL permissions.\r\n")
            u.rt(resp_encode("SORT", key, "ALPHA", "STORE", "elsewhere"),
                 b"-NOPERM this user has no permissions to access one of the keys used as "
                 b"arguments\r\n")
        with Conn(resp_port) as r:
            r.rt(resp_encode("AUTH", reader, "x"), b"+OK\r\n")
            r.rt(resp_encode("SORT", key, "BY", "w_*", "GET", "#"), bulks("a", "b"))
    finally:
        c.rt(resp_encode("ACL", "DELUSER", user, reader), b":2\r\n")
        c.rt(resp_encode("DEL", key), b":1\r\n")


def test_command_table_and_keys(c):
    c.rt(resp_encode("COMMAND", "GETKEYS", "SORT", "abc", "STORE", "invalid", "STORE", "def"),
         bulks("abc", "def"))
    # As Redis's sortGetKeys: the word after STORE is read as an option again.
    c.rt(resp_encode("COMMAND", "GETKEYS", "SORT", "abc", "STORE", "get", "x"), bulks("abc", "get"))
    c.rt(resp_encode("COMMAND", "GETKEYS", "SORT_RO", "abc", "STORE", "def"), bulks("abc"))
    c.rt(resp_encode("COMMAND", "GETKEYSANDFLAGS", "SORT", "k", "STORE", "d"),
         b"*2\r\n*2\r\n$1\r\nk\r\n*2\r\n+RO\r\n+access\r\n*2\r\n$1\r\nd\r\n*2\r\n+OW\r\n"
         b"+update\r\n")
    by_notes = (b"For the optional BY/GET keyword. It is marked 'unknown' because the key names "
                b"derive from the content of the key we sort")
    unknown = b"*4\r\n$4\r\ntype\r\n$7\r\nunknown\r\n$4\r\nspec\r\n*0\r\n"
    c.rt(resp_encode("COMMAND", "INFO", "sort_ro"),
         b"*1\r\n*10\r\n$7\r\nsort_ro\r\n:-2\r\n*2\r\n+readonly\r\n+movablekeys\r\n:1\r\n:1\r\n"
         b":1\r\n*6\r\n+@read\r\n+@set\r\n+@sortedset\r\n+@list\r\n+@slow\r\n+@dangerous\r\n"
         b"*0\r\n*2\r\n*6\r\n$5\r\nflags\r\n*2\r\n+RO\r\n+access\r\n$12\r\nbegin_search\r\n*4\r\n"
         b"$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys"
         b"\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\n"
         b"keystep\r\n:1\r\n$5\r\nlimit\r\n:0\r\n*8\r\n$5\r\nnotes\r\n$120\r\n" + by_notes
         + b"\r\n$5\r\nflags\r\n*2\r\n+RO\r\n+access\r\n$12\r\nbegin_search\r\n" + unknown
         + b"$9\r\nfind_keys\r\n" + unknown + b"*0\r\n")


def test_cluster_mode_refuses_by_and_get_patterns(make_cluster):  # noqa: F811
    cluster = make_cluster(primaries=1)
    with Conn(cluster.nodes[0].port) as c:
        c.rt(resp_encode("RPUSH", "k", "2", "1"), b":2\r\n")
        c.rt(resp_encode("SORT", "k"), bulks("1", "2"))
        c.rt(resp_encode("SORT", "k", "BY", "nosort"), bulks("2", "1"))
        c.rt(resp_encode("SORT", "k", "BY", "w_*"),
             b"-ERR BY option of SORT denied in Cluster mode.\r\n")
        c.rt(resp_encode("SORT_RO", "k", "GET", "#"),
             b"-ERR GET option of SORT denied in Cluster mode.\r\n")


def test_concurrent_sort_store_and_writes(resp_port, c, key):
    """SORT ... STORE from several connections while others push: every reply well formed,
    every stored list a sorted snapshot, and the server still answering."""
    src = key + ":src"
    c.rt(resp_encode("RPUSH", src, *[str(i) for i in range(50)]), b":50\r\n")
    errors = []

    def sorter(n):
        try:
            with Conn(resp_port) as s:
                for _ in range(50):
                    s.send(resp_encode("SORT", src, "STORE", f"{key}:d{n}"))
                    line = s.read_line()
                    assert line.startswith(b":"), line
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    def pusher():
        try:
            with Conn(resp_port) as p:
                for i in range(200):
                    p.send(resp_encode("RPUSH", src, str(1000 + i)))
                    assert p.read_line().startswith(b":")
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=sorter, args=(n,)) for n in range(3)]
    threads.append(threading.Thread(target=pusher))
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    c.rt(resp_encode("PING"), b"+PONG\r\n")
    c.rt(resp_encode("DEL", src, f"{key}:d0", f"{key}:d1", f"{key}:d2"), b":4\r\n")
