"""Redis hashes: HSET ... HSCAN wire transcripts, byte for byte as redis-server 7.0 sends them
(validated with CONFORMANCE_TARGET=redis), RESP2 and RESP3; the per-field expiry commands of
Redis 7.4-8 (HEXPIRE ... HSETEX) follow redis.io and are skipped on a server without them."""

import time

import pytest

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
NOT_INT = b"-ERR value is not an integer or out of range\r\n"
SYNTAX = b"-ERR syntax error\r\n"


@pytest.fixture
def c(resp_port):
    with Conn(resp_port) as conn:
        yield conn


def read_reply(conn):
    """One reply, parsed: bytes for bulk/simple strings, int, None for nulls, list for
    arrays/sets/pushes, dict-like list of pairs for maps, Exception text for errors."""
    line = conn.read_line()
    kind, rest = line[:1], line[1:-2]
    if kind in b"+":
        return rest
    if kind == b"-":
        return RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"_":
        return None
    if kind == b",":
        return float(rest)
    if kind in (b"$", b"="):
        n = int(rest)
        return None if n < 0 else conn.read_exact(n + 2)[:-2]
    if kind in (b"*", b"~", b">"):
        n = int(rest)
        return None if n < 0 else [read_reply(conn) for _ in range(n)]
    if kind == b"%":
        return [(read_reply(conn), read_reply(conn)) for _ in range(int(rest))]
    raise AssertionError(f"unexpected reply line {line!r}")


def call(conn, *args):
    conn.send(resp_encode(*args))
    return read_reply(conn)


def bulk(value):
    value = value.encode() if isinstance(value, str) else value
    return b"$%d\r\n%s\r\n" % (len(value), value)


def array(*items):
    return b"*%d\r\n" % len(items) + b"".join(items)


def ints(*values):
    return array(*(b":%d\r\n" % v for v in values))


def has_field_ttl(conn):
    """Whether the server has Redis 8's hash field expiry commands (not 7.0)."""
    info = call(conn, "COMMAND", "INFO", "hsetex", "hexpire")
    return all(entry is not None for entry in info)


@pytest.fixture
def ttl_c(c):
    if not has_field_ttl(c):
        pytest.skip("the server has no hash field expiry (Redis < 8.0)")
    return c


def test_set_get_and_friends(c, key):
    c.rt(resp_encode("HSET", key, "a", "1", "b", "2", "c", "3"), b":3\r\n")
    c.rt(resp_encode("HSET", key, "a", "10", "d", "4"), b":1\r\n")
    c.rt(resp_encode("HMSET", key, "e", "5"), b"+OK\r\n")
    c.rt(resp_encode("HSETNX", key, "a", "9"), b":0\r\n")
    c.rt(resp_encode("HSETNX", key, "z", ""), b":1\r\n")
    c.rt(resp_encode("HGET", key, "a"), bulk("10"))
    c.rt(resp_encode("HGET", key, "z"), bulk(""))
    c.rt(resp_encode("HGET", key, "nope"), b"$-1\r\n")
    c.rt(resp_encode("HGET", key + ":none", "a"), b"$-1\r\n")
    c.rt(resp_encode("HMGET", key, "a", "nope", "b"), array(bulk("10"), b"$-1\r\n", bulk("2")))
    c.rt(resp_encode("HMGET", key + ":none", "a", "b"), array(b"$-1\r\n", b"$-1\r\n"))
    pairs = [("a", "10"), ("b", "2"), ("c", "3"), ("d", "4"), ("e", "5"), ("z", "")]
    c.rt(resp_encode("HGETALL", key), array(*(bulk(x) for p in pairs for x in p)))
    c.rt(resp_encode("HKEYS", key), array(*(bulk(f) for f, _ in pairs)))
    c.rt(resp_encode("HVALS", key), array(*(bulk(v) for _, v in pairs)))
    for command in ("HGETALL", "HKEYS", "HVALS"):
        c.rt(resp_encode(command, key + ":none"), b"*0\r\n")
    c.rt(resp_encode("HLEN", key), b":6\r\n")
    c.rt(resp_encode("HLEN", key + ":none"), b":0\r\n")
    c.rt(resp_encode("HEXISTS", key, "a"), b":1\r\n")
    c.rt(resp_encode("HEXISTS", key, "q"), b":0\r\n")
    c.rt(resp_encode("HEXISTS", key + ":none", "a"), b":0\r\n")
    c.rt(resp_encode("HSTRLEN", key, "a"), b":2\r\n")
    c.rt(resp_encode("HSTRLEN", key, "q"), b":0\r\n")
    c.rt(resp_encode("HSTRLEN", key + ":none", "a"), b":0\r\n")
    c.rt(resp_encode("TYPE", key), b"+hash\r\n")
    c.rt(resp_encode("HDEL", key, "a", "a", "q"), b":1\r\n")
    c.rt(resp_encode("HDEL", key + ":none", "a"), b":0\r\n")
    c.rt(resp_encode("HDEL", key, "b", "c", "d", "e"), b":4\r\n")
    c.rt(resp_encode("EXISTS", key), b":1\r\n")
    c.rt(resp_encode("HDEL", key, "z"), b":1\r\n")  # the last field takes the key with it
    c.rt(resp_encode("EXISTS", key), b":0\r\n")


def test_arity(c, key):
    for args in (("HSET", key), ("HSET", key, "a"), ("HSET", key, "a", "1", "b"),
                 ("HMSET", key, "a"), ("HSETNX", key, "a"), ("HGET", key), ("HMGET", key),
                 ("HGETALL",), ("HDEL", key), ("HLEN",), ("HEXISTS", key), ("HSTRLEN", key),
                 ("HINCRBY", key, "a"), ("HINCRBYFLOAT", key, "a"), ("HRANDFIELD",),
                 ("HSCAN", key), ("HKEYS", key, "x"), ("HVALS",)):
        name = args[0].lower()
        c.rt(resp_encode(*args), b"-ERR wrong number of arguments for '%s' command\r\n"
             % name.encode())


def test_incr(c, key):
    c.rt(resp_encode("HINCRBY", key, "n", "5"), b":5\r\n")
    c.rt(resp_encode("HINCRBY", key, "n", "-7"), b":-2\r\n")
    c.rt(resp_encode("HINCRBY", key, "n", "x"), NOT_INT)
    c.rt(resp_encode("HINCRBY", key, "n", "9223372036854775808"), NOT_INT)
    c.rt(resp_encode("HSET", key, "s", "abc", "big", "9223372036854775807", "sp", " 1"),
         b":3\r\n")
    c.rt(resp_encode("HINCRBY", key, "s", "1"), b"-ERR hash value is not an integer\r\n")
    c.rt(resp_encode("HINCRBY", key, "sp", "1"), b"-ERR hash value is not an integer\r\n")
    c.rt(resp_encode("HINCRBY", key, "big", "1"),
         b"-ERR increment or decrement would overflow\r\n")
    c.rt(resp_encode("HINCRBYFLOAT", key, "f", "10.5"), bulk("10.5"))
    c.rt(resp_encode("HINCRBYFLOAT", key, "f", "0.25"), bulk("10.75"))
    c.rt(resp_encode("HINCRBYFLOAT", key, "f", "-10.75"), bulk("0"))
    c.rt(resp_encode("HINCRBYFLOAT", key, "n", "1.5"), bulk("-0.5"))
    c.rt(resp_encode("HSET", key, "e", "5.0e3"), b":1\r\n")
    c.rt(resp_encode("HINCRBYFLOAT", key, "e", "2.0e2"), bulk("5200"))
    c.rt(resp_encode("HINCRBYFLOAT", key, "f", "x"), b"-ERR value is not a valid float\r\n")
    c.rt(resp_encode("HINCRBYFLOAT", key, "f", "inf"), b"-ERR value is NaN or Infinity\r\n")
    c.rt(resp_encode("HINCRBYFLOAT", key, "s", "1"), b"-ERR hash value is not a float\r\n")
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_wrong_type_and_check_order(c, key):
    c.rt(resp_encode("SET", key, "v"), b"+OK\r\n")
    for args in (("HSET", key, "a", "1"), ("HMSET", key, "a", "1"), ("HSETNX", key, "a", "1"),
                 ("HGET", key, "a"), ("HMGET", key, "a"), ("HGETALL", key), ("HKEYS", key),
                 ("HVALS", key), ("HDEL", key, "a"), ("HLEN", key), ("HEXISTS", key, "a"),
                 ("HSTRLEN", key, "a"), ("HINCRBY", key, "a", "1"),
                 ("HINCRBYFLOAT", key, "a", "1"), ("HRANDFIELD", key),
                 ("HRANDFIELD", key, "2", "WITHVALUES"), ("HSCAN", key, "0"),
                 ("HSCAN", key, "0", "BAD")):
        c.rt(resp_encode(*args), WRONGTYPE)
    # Checked before the key is looked up:
    c.rt(resp_encode("HINCRBY", key, "a", "x"), NOT_INT)
    c.rt(resp_encode("HINCRBYFLOAT", key, "a", "x"), b"-ERR value is not a valid float\r\n")
    c.rt(resp_encode("HRANDFIELD", key, "x"), NOT_INT)
    c.rt(resp_encode("HRANDFIELD", key, "1", "BAD"), SYNTAX)
    c.rt(resp_encode("HSCAN", key, "x"), b"-ERR invalid cursor\r\n")
    c.rt(resp_encode("GET", key), bulk("v"))
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_hrandfield(c, key):
    none = key + ":none"
    c.rt(resp_encode("HRANDFIELD", none), b"$-1\r\n")
    c.rt(resp_encode("HRANDFIELD", none, "5"), b"*0\r\n")
    c.rt(resp_encode("HRANDFIELD", none, "-5", "WITHVALUES"), b"*0\r\n")
    c.rt(resp_encode("HRANDFIELD", key, "-9223372036854775808"),
         b"-ERR value is out of range, value must between -9223372036854775807 and "
         b"9223372036854775807\r\n")
    c.rt(resp_encode("HRANDFIELD", key, "-9223372036854775807", "WITHVALUES"),
         b"-ERR value is out of range\r\n")
    c.rt(resp_encode("HRANDFIELD", key, "1", "WITHVALUES", "x"), SYNTAX)
    c.rt(resp_encode("HSET", key, "only", "v"), b":1\r\n")
    c.rt(resp_encode("HRANDFIELD", key), bulk("only"))
    c.rt(resp_encode("HRANDFIELD", key, "0"), b"*0\r\n")
    c.rt(resp_encode("HRANDFIELD", key, "-3"), array(bulk("only"), bulk("only"), bulk("only")))
    c.rt(resp_encode("HRANDFIELD", key, "-2", "withvalues"),
         array(bulk("only"), bulk("v"), bulk("only"), bulk("v")))
    c.rt(resp_encode("HSET", key, "b", "2", "c", "3"), b":2\r\n")
    # A count covering the hash returns all of it, in order.
    c.rt(resp_encode("HRANDFIELD", key, "3"), array(bulk("only"), bulk("b"), bulk("c")))
    c.rt(resp_encode("HRANDFIELD", key, "10", "WITHVALUES"),
         array(bulk("only"), bulk("v"), bulk("b"), bulk("2"), bulk("c"), bulk("3")))
    fields = {b"only", b"b", b"c"}
    for _ in range(20):
        picked = call(c, "HRANDFIELD", key, "2")
        assert len(picked) == 2 and len(set(picked)) == 2 and set(picked) <= fields
        repeated = call(c, "HRANDFIELD", key, "-5", "WITHVALUES")
        assert len(repeated) == 10 and set(repeated[::2]) <= fields
        assert call(c, "HRANDFIELD", key) in fields
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_hscan(c, key):
    none = key + ":none"
    c.rt(resp_encode("HSCAN", none, "0", "BAD"), b"*2\r\n$1\r\n0\r\n*0\r\n")
    c.rt(resp_encode("HSET", key, "ab", "1", "ac", "2", "b", "3"), b":3\r\n")
    c.rt(resp_encode("HSCAN", key, "0"),
         b"*2\r\n$1\r\n0\r\n" + array(*(bulk(x) for x in ("ab", "1", "ac", "2", "b", "3"))))
    c.rt(resp_encode("HSCAN", key, "0", "MATCH", "a*", "COUNT", "1"),
         b"*2\r\n$1\r\n0\r\n" + array(*(bulk(x) for x in ("ab", "1", "ac", "2"))))
    c.rt(resp_encode("HSCAN", key, "0", "match", "x*"), b"*2\r\n$1\r\n0\r\n*0\r\n")
    c.rt(resp_encode("HSCAN", key, "x"), b"-ERR invalid cursor\r\n")
    c.rt(resp_encode("HSCAN", key, "0", "BAD"), SYNTAX)
    c.rt(resp_encode("HSCAN", key, "0", "COUNT"), SYNTAX)
    c.rt(resp_encode("HSCAN", key, "0", "COUNT", "0"), SYNTAX)
    c.rt(resp_encode("HSCAN", key, "0", "COUNT", "x"), NOT_INT)
    c.rt(resp_encode("HSCAN", key, "0", "MATCH"), SYNTAX)
    c.rt(resp_encode("DEL", key), b":1\r\n")
    # A big hash may come in several pages (how many is the server's choice); every field
    # comes, with its value.
    fields = [f"f{i}" for i in range(300)]
    c.rt(resp_encode("HSET", key, *(x for f in fields for x in (f, "v" + f))), b":300\r\n")
    cursor, seen, pages = b"0", {}, 0
    while True:
        cursor, page = call(c, "HSCAN", key, cursor, "COUNT", "20")
        seen.update(zip(page[::2], page[1::2]))
        pages += 1
        if cursor == b"0" or pages > 300:
            break
    assert seen == {f.encode(): ("v" + f).encode() for f in fields}
    assert pages <= 300, pages
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_resp3_replies(c, key):
    c.send(resp_encode("HELLO", "3"))
    assert isinstance(read_reply(c), list)
    none = key + ":none"
    c.rt(resp_encode("HSET", key, "a", "1", "b", "2"), b":2\r\n")
    c.rt(resp_encode("HGETALL", key), b"%2\r\n" + bulk("a") + bulk("1") + bulk("b") + bulk("2"))
    c.rt(resp_encode("HGETALL", none), b"%0\r\n")
    c.rt(resp_encode("HKEYS", none), b"*0\r\n")
    c.rt(resp_encode("HGET", key, "q"), b"_\r\n")
    c.rt(resp_encode("HMGET", key, "a", "q"), array(bulk("1"), b"_\r\n"))
    c.rt(resp_encode("HRANDFIELD", none), b"_\r\n")
    c.rt(resp_encode("HRANDFIELD", key, "5", "WITHVALUES"),
         array(array(bulk("a"), bulk("1")), array(bulk("b"), bulk("2"))))
    c.rt(resp_encode("HDEL", key, "b"), b":1\r\n")
    c.rt(resp_encode("HRANDFIELD", key, "-2", "WITHVALUES"),
         array(array(bulk("a"), bulk("1")), array(bulk("a"), bulk("1"))))
    c.rt(resp_encode("HINCRBYFLOAT", key, "a", "0.5"), bulk("1.5"))
    c.rt(resp_encode("HSCAN", key, "0"), b"*2\r\n$1\r\n0\r\n" + array(bulk("a"), bulk("1.5")))
    c.rt(resp_encode("DEL", key), b":1\r\n")


# ------------------------------------------------------------------------------------------
# Per-field expiry (Redis 7.4-8.0): redis.io's replies; skipped on redis-server 7.0.

FIELDS_MISSING = b"-ERR Mandatory argument FIELDS is missing or not at the right position\r\n"
MISMATCH = b"-ERR The `numfields` parameter must match the number of arguments\r\n"
NOT_POSITIVE = b"-ERR Number of fields must be a positive integer\r\n"


def test_hexpire_conditions_and_replies(ttl_c, key):
    c = ttl_c
    c.rt(resp_encode("HSET", key, "a", "1", "b", "2", "c", "3"), b":3\r\n")
    c.rt(resp_encode("HEXPIRE", key, "100", "FIELDS", "2", "a", "nope"), ints(1, -2))
    c.rt(resp_encode("HTTL", key, "FIELDS", "3", "a", "b", "nope"), ints(100, -1, -2))
    c.rt(resp_encode("HEXPIRE", key, "50", "GT", "FIELDS", "1", "a"), ints(0))
    c.rt(resp_encode("HEXPIRE", key, "150", "gt", "FIELDS", "1", "a"), ints(1))
    c.rt(resp_encode("HEXPIRE", key, "150", "LT", "FIELDS", "2", "a", "b"), ints(0, 1))
    c.rt(resp_encode("HEXPIRE", key, "10", "NX", "FIELDS", "2", "a", "c"), ints(0, 1))
    c.rt(resp_encode("HEXPIRE", key, "20", "XX", "FIELDS", "2", "c", "a"), ints(1, 1))
    c.rt(resp_encode("HPERSIST", key, "FIELDS", "3", "a", "b", "nope"), ints(1, 1, -2))
    c.rt(resp_encode("HEXPIRE", key, "20", "GT", "FIELDS", "1", "a"), ints(0))
    c.rt(resp_encode("HEXPIRE", key, "20", "XX", "FIELDS", "1", "a"), ints(0))
    c.rt(resp_encode("HTTL", key, "FIELDS", "2", "a", "c"), ints(-1, 20))
    c.send(resp_encode("HPTTL", key, "FIELDS", "1", "c"))
    (ms,) = read_reply(c)
    assert 19_000 < ms <= 20_000, ms
    c.send(resp_encode("HEXPIRETIME", key, "FIELDS", "1", "c"))
    (at,) = read_reply(c)
    assert abs(at - (time.time() + 20)) < 3, at
    c.send(resp_encode("HPEXPIRETIME", key, "FIELDS", "2", "c", "a"))
    at_ms, none = read_reply(c)
    assert abs(at_ms - at * 1000) <= 1000 and none == -1, (at_ms, none)
    at_s = int(time.time()) + 1000
    c.rt(resp_encode("HEXPIREAT", key, str(at_s), "FIELDS", "1", "b"), ints(1))
    c.rt(resp_encode("HEXPIRETIME", key, "FIELDS", "1", "b"), ints(at_s))
    c.rt(resp_encode("HPEXPIREAT", key, str(at_s * 1000 + 5), "FIELDS", "1", "b"), ints(1))
    c.rt(resp_encode("HPEXPIRETIME", key, "FIELDS", "1", "b"), ints(at_s * 1000 + 5))
    c.rt(resp_encode("HPEXPIRE", key, "0", "FIELDS", "1", "c"), ints(2))  # deleted now
    c.rt(resp_encode("HPEXPIREAT", key, "1", "FIELDS", "2", "b", "c"), ints(2, -2))
    c.rt(resp_encode("HGETALL", key), array(bulk("a"), bulk("1")))
    c.rt(resp_encode("HEXPIRE", key, "0", "FIELDS", "1", "a"), ints(2))
    c.rt(resp_encode("EXISTS", key), b":0\r\n")  # the last field took the key with it
    for command in ("HEXPIRE", "HPEXPIRE", "HEXPIREAT", "HPEXPIREAT"):
        c.rt(resp_encode(command, key, "10", "FIELDS", "2", "a", "b"), ints(-2, -2))
    for command in ("HTTL", "HPTTL", "HEXPIRETIME", "HPEXPIRETIME", "HPERSIST"):
        c.rt(resp_encode(command, key, "FIELDS", "2", "a", "b"), ints(-2, -2))


def test_field_expiry_errors(ttl_c, key):
    c = ttl_c
    c.rt(resp_encode("HSET", key, "a", "1"), b":1\r\n")
    c.rt(resp_encode("HEXPIRE", key, "10", "FIELDS", "0", "a"),
         b"-ERR Parameter `numFields` should be greater than 0\r\n")
    c.rt(resp_encode("HEXPIRE", key, "10", "FIELDS", "2", "a"), MISMATCH)
    c.rt(resp_encode("HEXPIRE", key, "10", "NX", "FIELD", "1", "a"), FIELDS_MISSING)
    c.rt(resp_encode("HEXPIRE", key, "10", "BAD", "FIELDS", "1", "a"), FIELDS_MISSING)
    c.rt(resp_encode("HEXPIRE", key, "-1", "FIELDS", "1", "a"),
         b"-ERR invalid expire time, must be >= 0\r\n")
    c.rt(resp_encode("HEXPIRE", key, "x", "FIELDS", "1", "a"), NOT_INT)
    c.rt(resp_encode("HEXPIRE", key, "99999999999999999", "FIELDS", "1", "a"),
         b"-ERR invalid expire time in 'hexpire' command\r\n")
    c.rt(resp_encode("HPEXPIREAT", key, "99999999999999999", "FIELDS", "1", "a"),
         b"-ERR invalid expire time in 'hpexpireat' command\r\n")
    c.rt(resp_encode("HTTL", key, "FIELDS", "x", "a"), NOT_POSITIVE)
    c.rt(resp_encode("HPTTL", key, "FIELDS", "0", "a"), NOT_POSITIVE)
    c.rt(resp_encode("HEXPIRETIME", key, "FIELD", "1", "a"), FIELDS_MISSING)
    c.rt(resp_encode("HPERSIST", key, "FIELDS", "2", "a"), MISMATCH)
    c.rt(resp_encode("HTTL", key + ":none", "FIELDS", "2", "a"), MISMATCH)
    c.rt(resp_encode("HTTL", key, "FIELDS", "1"),
         b"-ERR wrong number of arguments for 'httl' command\r\n")
    c.rt(resp_encode("HEXPIRE", key, "1", "FIELDS", "1"),
         b"-ERR wrong number of arguments for 'hexpire' command\r\n")
    c.rt(resp_encode("SET", key, "v"), b"+OK\r\n")
    # The key's type is checked first.
    for args in (("HEXPIRE", key, "x", "FIELDS", "1", "a"), ("HTTL", key, "BAD", "1", "a"),
                 ("HPERSIST", key, "FIELDS", "0", "a"), ("HGETDEL", key, "FIELDS", "1", "a"),
                 ("HGETEX", key, "EX", "x", "FIELDS", "1", "a"),
                 ("HSETEX", key, "FIELDS", "1", "a", "1")):
        c.rt(resp_encode(*args), WRONGTYPE)
    # HSETEX checks its options before the type.
    c.rt(resp_encode("HSETEX", key, "FIELDS", "0", "a", "1"), b"-ERR invalid number of fields\r\n")
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_fields_expire_in_time(ttl_c, key):
    c = ttl_c
    c.rt(resp_encode("HSET", key, "a", "1", "b", "2"), b":2\r\n")
    c.rt(resp_encode("HPEXPIRE", key, "50", "FIELDS", "1", "a"), ints(1))
    time.sleep(0.15)
    c.rt(resp_encode("HGET", key, "a"), b"$-1\r\n")
    c.rt(resp_encode("HLEN", key), b":1\r\n")
    c.rt(resp_encode("HGETALL", key), array(bulk("b"), bulk("2")))
    c.rt(resp_encode("HTTL", key, "FIELDS", "1", "a"), ints(-2))
    c.rt(resp_encode("HPEXPIRE", key, "50", "FIELDS", "1", "b"), ints(1))
    time.sleep(0.15)
    c.rt(resp_encode("HLEN", key), b":0\r\n")
    c.rt(resp_encode("EXISTS", key), b":0\r\n")


def test_hgetdel(ttl_c, key):
    c = ttl_c
    c.rt(resp_encode("HSET", key, "a", "1", "b", "2", "c", "3"), b":3\r\n")
    c.rt(resp_encode("HGETDEL", key, "FIELDS", "2", "a", "nope"), array(bulk("1"), b"$-1\r\n"))
    c.rt(resp_encode("HGETDEL", key, "FIELDS", "3", "b", "c", "b"),
         array(bulk("2"), bulk("3"), b"$-1\r\n"))
    c.rt(resp_encode("EXISTS", key), b":0\r\n")
    c.rt(resp_encode("HGETDEL", key, "FIELDS", "1", "a"), array(b"$-1\r\n"))
    c.rt(resp_encode("HGETDEL", key, "FIELD", "1", "a"), FIELDS_MISSING)
    c.rt(resp_encode("HGETDEL", key, "FIELDS", "0", "a"), NOT_POSITIVE)
    c.rt(resp_encode("HGETDEL", key, "FIELDS", "2", "a"), MISMATCH)


def test_hgetex(ttl_c, key):
    c = ttl_c
    c.rt(resp_encode("HSET", key, "a", "1", "b", "2"), b":2\r\n")
    c.rt(resp_encode("HGETEX", key, "EX", "100", "FIELDS", "2", "a", "nope"),
         array(bulk("1"), b"$-1\r\n"))
    c.rt(resp_encode("HTTL", key, "FIELDS", "2", "a", "b"), ints(100, -1))
    c.rt(resp_encode("HGETEX", key, "FIELDS", "1", "a"), array(bulk("1")))
    c.rt(resp_encode("HTTL", key, "FIELDS", "1", "a"), ints(100))
    c.rt(resp_encode("HGETEX", key, "PERSIST", "FIELDS", "1", "a"), array(bulk("1")))
    c.rt(resp_encode("HTTL", key, "FIELDS", "1", "a"), ints(-1))
    c.rt(resp_encode("HGETEX", key, "PX", "100000", "FIELDS", "1", "b"), array(bulk("2")))
    c.rt(resp_encode("HTTL", key, "FIELDS", "1", "b"), ints(100))
    at_s = int(time.time()) + 500
    c.rt(resp_encode("HGETEX", key, "EXAT", str(at_s), "FIELDS", "1", "b"), array(bulk("2")))
    c.rt(resp_encode("HEXPIRETIME", key, "FIELDS", "1", "b"), ints(at_s))
    c.rt(resp_encode("HGETEX", key, "PXAT", "1", "FIELDS", "1", "a"), array(bulk("1")))
    c.rt(resp_encode("HGETALL", key), array(bulk("b"), bulk("2")))
    c.rt(resp_encode("HGETEX", key, "EX", "0", "FIELDS", "1", "b"), array(bulk("2")))
    c.rt(resp_encode("EXISTS", key), b":0\r\n")
    c.rt(resp_encode("HGETEX", key, "EX", "10", "FIELDS", "2", "a", "b"),
         array(b"$-1\r\n", b"$-1\r\n"))
    c.rt(resp_encode("HGETEX", key, "EX", "-1", "FIELDS", "1", "b"),
         b"-ERR invalid expire time, must be >= 0\r\n")
    c.rt(resp_encode("HGETEX", key, "EX", "10", "FIELD", "1", "b"), FIELDS_MISSING)
    c.rt(resp_encode("HGETEX", key, "BAD", "FIELDS", "1", "b"), FIELDS_MISSING)
    c.rt(resp_encode("HGETEX", key, "EX", "10", "FIELDS", "2", "b"), MISMATCH)
    c.rt(resp_encode("HGETEX", key, "PERSIST", "FIELDS", "x", "b"), NOT_POSITIVE)


def test_hsetex(ttl_c, key):
    c = ttl_c
    c.rt(resp_encode("HSETEX", key, "FIELDS", "2", "a", "1", "b", "2"), b":1\r\n")
    c.rt(resp_encode("HSETEX", key, "EX", "100", "FIELDS", "1", "a", "9"), b":1\r\n")
    c.rt(resp_encode("HTTL", key, "FIELDS", "2", "a", "b"), ints(100, -1))
    c.rt(resp_encode("HSETEX", key, "KEEPTTL", "FIELDS", "1", "a", "8"), b":1\r\n")
    c.rt(resp_encode("HTTL", key, "FIELDS", "1", "a"), ints(100))
    c.rt(resp_encode("HSETEX", key, "FIELDS", "1", "a", "7"), b":1\r\n")  # drops the TTL
    c.rt(resp_encode("HTTL", key, "FIELDS", "1", "a"), ints(-1))
    c.rt(resp_encode("HSETEX", key, "FNX", "FIELDS", "2", "z", "0", "a", "0"), b":0\r\n")
    c.rt(resp_encode("HSETEX", key, "FNX", "PX", "100000", "FIELDS", "1", "z", "0"), b":1\r\n")
    c.rt(resp_encode("HSETEX", key, "FXX", "FIELDS", "2", "a", "1", "y", "1"), b":0\r\n")
    c.rt(resp_encode("HSETEX", key, "FXX", "FIELDS", "2", "a", "6", "b", "5"), b":1\r\n")
    c.rt(resp_encode("HMGET", key, "a", "b", "z", "y"),
         array(bulk("6"), bulk("5"), bulk("0"), b"$-1\r\n"))
    c.rt(resp_encode("HTTL", key, "FIELDS", "1", "z"), ints(100))
    c.rt(resp_encode("HSETEX", key, "PXAT", "1", "FIELDS", "2", "a", "1", "b", "2"), b":1\r\n")
    c.rt(resp_encode("HKEYS", key), array(bulk("z")))
    c.rt(resp_encode("HSETEX", key, "EX", "0", "FIELDS", "1", "z", "1"), b":1\r\n")
    c.rt(resp_encode("EXISTS", key), b":0\r\n")
    c.rt(resp_encode("HSETEX", key, "FXX", "FIELDS", "1", "a", "1"), b":0\r\n")
    c.rt(resp_encode("EXISTS", key), b":0\r\n")
    c.rt(resp_encode("HSETEX", key, "EX", "10", "PX", "10", "FIELDS", "1", "a", "1"),
         b"-ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified\r\n")
    c.rt(resp_encode("HSETEX", key, "KEEPTTL", "EXAT", "10", "FIELDS", "1", "a", "1"),
         b"-ERR Only one of EX, PX, EXAT, PXAT or KEEPTTL arguments can be specified\r\n")
    c.rt(resp_encode("HSETEX", key, "FNX", "FXX", "FIELDS", "1", "a", "1"),
         b"-ERR Only one of FXX or FNX arguments can be specified\r\n")
    c.rt(resp_encode("HSETEX", key, "EX", "FIELDS", "1", "a", "1"), NOT_INT)
    c.rt(resp_encode("HSETEX", key, "BAD", "FIELDS", "1", "a", "1"),
         b"-ERR unknown argument: BAD\r\n")
    c.rt(resp_encode("HSETEX", key, "FIELDS", "0", "a", "1"), b"-ERR invalid number of fields\r\n")
    c.rt(resp_encode("HSETEX", key, "FIELDS", "x", "a", "1"), b"-ERR invalid number of fields\r\n")
    arity = b"-ERR wrong number of arguments for 'hsetex' command\r\n"
    c.rt(resp_encode("HSETEX", key, "FIELDS", "2", "a", "1"), arity)
    c.rt(resp_encode("HSETEX", key, "FIELDS", "1", "a", "1", "b"), arity)
    c.rt(resp_encode("HSETEX", key, "FIELDS", "1", "a"), arity)
    c.rt(resp_encode("EXISTS", key), b":0\r\n")


def test_hscan_novalues(ttl_c, key):
    c = ttl_c
    c.rt(resp_encode("HSET", key, "a", "1", "b", "2"), b":2\r\n")
    c.rt(resp_encode("HSCAN", key, "0", "NOVALUES"), b"*2\r\n$1\r\n0\r\n" + array(bulk("a"), bulk("b")))
    c.rt(resp_encode("HSCAN", key, "0", "MATCH", "b", "NOVALUES"),
         b"*2\r\n$1\r\n0\r\n" + array(bulk("b")))
    c.rt(resp_encode("DEL", key), b":1\r\n")
