"""Sets: every command's replies and errors byte for byte as redis-server 7.0.15 sends them
(validated with CONFORMANCE_TARGET=redis), in RESP2 and, where the reply type differs, RESP3.

Redis leaves the order of set members unspecified; an all-integer set of Redis 7.0 is an
intset and comes back sorted, so replies about those are compared as exact bytes. Replies
about other sets, and random picks, are parsed and compared sorted.
"""

import pytest

from resp_read import RespError, RespSet, hello3, read_value
from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
SYNTAX = b"-ERR syntax error\r\n"
NOT_INTEGER = b"-ERR value is not an integer or out of range\r\n"


@pytest.fixture
def c(resp_port):
    with Conn(resp_port) as conn:
        yield conn


@pytest.fixture
def c3(resp_port):
    with Conn(resp_port) as conn:
        hello3(conn)
        yield conn


def bulks(*members):
    """An array of bulk strings, as RESP2 sends a set."""
    out = b"*%d\r\n" % len(members)
    for m in members:
        m = m if isinstance(m, bytes) else str(m).encode()
        out += b"$%d\r\n%s\r\n" % (len(m), m)
    return out


def ask(conn, *args):
    conn.send(resp_encode(*args))
    return read_value(conn)


def test_sadd_srem_scard_smembers(c, key):
    s, t = key + ":s", key + ":t"
    c.rt(resp_encode("SADD", s, "3", "1", "2", "1"), b":3\r\n")
    c.rt(resp_encode("SADD", s, "2", "4"), b":1\r\n")
    c.rt(resp_encode("SMEMBERS", s), bulks(1, 2, 3, 4))
    c.rt(resp_encode("SCARD", s), b":4\r\n")
    c.rt(resp_encode("SREM", s, "1", "9", "1"), b":1\r\n")
    c.rt(resp_encode("SREM", key + ":none", "1"), b":0\r\n")
    c.rt(resp_encode("SCARD", key + ":none"), b":0\r\n")
    c.rt(resp_encode("SMEMBERS", key + ":none"), b"*0\r\n")
    # Integers as Redis's string2ll reads them; everything else is a string member.
    c.rt(resp_encode("SADD", t, "-9223372036854775808", "9223372036854775807", "0", "-5"),
         b":4\r\n")
    c.rt(resp_encode("SMEMBERS", t),
         bulks("-9223372036854775808", -5, 0, "9223372036854775807"))
    c.rt(resp_encode("SADD", t, "007", "+1", "-0", "", "b", "0"), b":5\r\n")
    got = ask(c, "SMEMBERS", t)
    assert sorted(got) == sorted([b"-9223372036854775808", b"-5", b"0", b"9223372036854775807",
                                  b"007", b"+1", b"-0", b"", b"b"])
    c.rt(resp_encode("SREM", t, "007", "+1", "-0", "", "b", "x"), b":5\r\n")
    c.rt(resp_encode("SCARD", t), b":4\r\n")
    # Removing the last member deletes the key.
    c.rt(resp_encode("SREM", s, "2", "3", "4"), b":3\r\n")
    c.rt(resp_encode("EXISTS", s), b":0\r\n")
    c.rt(resp_encode("SADD", s, b"\x00\xff", "a b"), b":2\r\n")
    assert sorted(ask(c, "SMEMBERS", s)) == [b"\x00\xff", b"a b"]
    c.rt(resp_encode("TYPE", s), b"+set\r\n")
    c.rt(resp_encode("DEL", s, t), b":2\r\n")


def test_sadd_keeps_ttl(c, key):
    c.rt(resp_encode("SADD", key, "a"), b":1\r\n")
    c.rt(resp_encode("EXPIRE", key, "100"), b":1\r\n")
    c.rt(resp_encode("SADD", key, "b"), b":1\r\n")
    c.rt(resp_encode("SREM", key, "a"), b":1\r\n")
    c.rt(resp_encode("TTL", key), b":100\r\n")
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_sismember_smismember(c, key):
    c.rt(resp_encode("SADD", key, "1", "x", "10"), b":3\r\n")
    c.rt(resp_encode("SISMEMBER", key, "x"), b":1\r\n")
    c.rt(resp_encode("SISMEMBER", key, "10"), b":1\r\n")
    c.rt(resp_encode("SISMEMBER", key, "010"), b":0\r\n")
    c.rt(resp_encode("SISMEMBER", key + ":none", "x"), b":0\r\n")
    c.rt(resp_encode("SMISMEMBER", key, "1", "2", "x", "1"), b"*4\r\n:1\r\n:0\r\n:1\r\n:1\r\n")
    c.rt(resp_encode("SMISMEMBER", key + ":none", "a", "b"), b"*2\r\n:0\r\n:0\r\n")
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_smove(c, key):
    s, d, string = key + ":s", key + ":d", key + ":str"
    c.rt(resp_encode("SET", string, "x"), b"+OK\r\n")
    c.rt(resp_encode("SMOVE", key + ":none", string, "a"), b":0\r\n")  # before type checks
    c.rt(resp_encode("SADD", s, "1", "2"), b":2\r\n")
    c.rt(resp_encode("SMOVE", s, string, "1"), WRONGTYPE)
    c.rt(resp_encode("SMOVE", string, s, "1"), WRONGTYPE)
    c.rt(resp_encode("SMOVE", s, s, "1"), b":1\r\n")
    c.rt(resp_encode("SMOVE", s, s, "9"), b":0\r\n")
    c.rt(resp_encode("SMOVE", s, d, "9"), b":0\r\n")
    c.rt(resp_encode("EXISTS", d), b":0\r\n")
    c.rt(resp_encode("SMOVE", s, d, "2"), b":1\r\n")
    c.rt(resp_encode("SADD", s, "2"), b":1\r\n")
    c.rt(resp_encode("SMOVE", s, d, "2"), b":1\r\n")  # already there: still 1
    c.rt(resp_encode("SMEMBERS", s), bulks(1))
    c.rt(resp_encode("SMOVE", s, d, "1"), b":1\r\n")
    c.rt(resp_encode("EXISTS", s), b":0\r\n")
    c.rt(resp_encode("SMEMBERS", d), bulks(1, 2))
    c.rt(resp_encode("DEL", d, string), b":2\r\n")


def test_spop(c, key):
    c.rt(resp_encode("SPOP", key, "-1"), b"-ERR value is out of range, must be positive\r\n")
    c.rt(resp_encode("SPOP", key, "x"), b"-ERR value is out of range, must be positive\r\n")
    c.rt(resp_encode("SPOP", key, "1", "2"), SYNTAX)
    c.rt(resp_encode("SPOP", key), b"$-1\r\n")
    c.rt(resp_encode("SPOP", key, "3"), b"*0\r\n")
    c.rt(resp_encode("SADD", key, "1", "2", "3", "4", "5"), b":5\r\n")
    c.rt(resp_encode("SPOP", key, "0"), b"*0\r\n")
    one = ask(c, "SPOP", key)
    assert one in (b"1", b"2", b"3", b"4", b"5")
    two = ask(c, "SPOP", key, "2")
    assert len(set(two)) == 2 and one not in two
    c.rt(resp_encode("SCARD", key), b":2\r\n")
    rest = sorted({b"1", b"2", b"3", b"4", b"5"} - {one} - set(two), key=int)
    # A count covering the set returns all of it, in intset order, and deletes the key.
    c.rt(resp_encode("SPOP", key, "10"), bulks(*rest))
    c.rt(resp_encode("EXISTS", key), b":0\r\n")
    c.rt(resp_encode("SADD", key, "a", "b", "c"), b":3\r\n")
    assert sorted(ask(c, "SPOP", key, "3")) == [b"a", b"b", b"c"]
    c.rt(resp_encode("EXISTS", key), b":0\r\n")


def test_srandmember(c, key):
    c.rt(resp_encode("SRANDMEMBER", key), b"$-1\r\n")
    c.rt(resp_encode("SRANDMEMBER", key, "5"), b"*0\r\n")
    c.rt(resp_encode("SRANDMEMBER", key, "x"), NOT_INTEGER)
    c.rt(resp_encode("SRANDMEMBER", key, "1", "2"), SYNTAX)
    c.rt(resp_encode("SRANDMEMBER", key, "-9223372036854775808"),
         b"-ERR value is out of range, value must between -9223372036854775807 and "
         b"9223372036854775807\r\n")
    c.rt(resp_encode("SADD", key, "30", "10", "20"), b":3\r\n")
    c.rt(resp_encode("SRANDMEMBER", key, "0"), b"*0\r\n")
    c.rt(resp_encode("SRANDMEMBER", key, "3"), bulks(10, 20, 30))
    c.rt(resp_encode("SRANDMEMBER", key, "9223372036854775807"), bulks(10, 20, 30))
    assert ask(c, "SRANDMEMBER", key) in (b"10", b"20", b"30")
    picks = ask(c, "SRANDMEMBER", key, "2")
    assert len(picks) == 2 and len(set(picks)) == 2 and set(picks) <= {b"10", b"20", b"30"}
    repeats = ask(c, "SRANDMEMBER", key, "-50")
    assert len(repeats) == 50 and set(repeats) <= {b"10", b"20", b"30"}
    c.rt(resp_encode("SCARD", key), b":3\r\n")
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_sinter_sunion_sdiff(c, key):
    a, b, n = key + ":a", key + ":b", key + ":none"
    c.rt(resp_encode("SADD", a, "4", "3", "2", "1"), b":4\r\n")
    c.rt(resp_encode("SADD", b, "5", "4", "3"), b":3\r\n")
    c.rt(resp_encode("SINTER", a, b), bulks(3, 4))
    c.rt(resp_encode("SINTER", a, a), bulks(1, 2, 3, 4))
    c.rt(resp_encode("SINTER", a, b, n), b"*0\r\n")
    c.rt(resp_encode("SUNION", a, b, n), bulks(1, 2, 3, 4, 5))
    c.rt(resp_encode("SUNION", n), b"*0\r\n")
    c.rt(resp_encode("SDIFF", a, b), bulks(1, 2))
    c.rt(resp_encode("SDIFF", b, a), bulks(5))
    c.rt(resp_encode("SDIFF", a, n), bulks(1, 2, 3, 4))
    c.rt(resp_encode("SDIFF", n, a), b"*0\r\n")
    c.rt(resp_encode("SDIFF", a, b, a), b"*0\r\n")
    c.rt(resp_encode("SADD", b, "x"), b":1\r\n")
    assert sorted(ask(c, "SUNION", a, b)) == [b"1", b"2", b"3", b"4", b"5", b"x"]
    assert sorted(ask(c, "SDIFF", b, a)) == [b"5", b"x"]
    assert sorted(ask(c, "SINTER", b, a)) == [b"3", b"4"]
    c.rt(resp_encode("DEL", a, b), b":2\r\n")


def test_store_forms(c, key):
    a, b, d, n = key + ":a", key + ":b", key + ":d", key + ":none"
    c.rt(resp_encode("SADD", a, "1", "2", "3"), b":3\r\n")
    c.rt(resp_encode("SADD", b, "2", "3", "4"), b":3\r\n")
    # The destination is replaced whatever it held, and loses its TTL.
    c.rt(resp_encode("SET", d, "x", "EX", "100"), b"+OK\r\n")
    c.rt(resp_encode("SUNIONSTORE", d, a, b), b":4\r\n")
    c.rt(resp_encode("TYPE", d), b"+set\r\n")
    c.rt(resp_encode("TTL", d), b":-1\r\n")
    c.rt(resp_encode("SMEMBERS", d), bulks(1, 2, 3, 4))
    c.rt(resp_encode("SINTERSTORE", d, a, b), b":2\r\n")
    c.rt(resp_encode("SMEMBERS", d), bulks(2, 3))
    c.rt(resp_encode("SDIFFSTORE", d, a, b), b":1\r\n")
    c.rt(resp_encode("SMEMBERS", d), bulks(1))
    c.rt(resp_encode("SINTERSTORE", d, d, a), b":1\r\n")  # a source may be the destination
    # An empty result deletes the destination, whatever it held.
    c.rt(resp_encode("SINTERSTORE", d, a, n), b":0\r\n")
    c.rt(resp_encode("EXISTS", d), b":0\r\n")
    c.rt(resp_encode("SET", d, "x"), b"+OK\r\n")
    c.rt(resp_encode("SDIFFSTORE", d, a, a), b":0\r\n")
    c.rt(resp_encode("EXISTS", d), b":0\r\n")
    c.rt(resp_encode("SUNIONSTORE", d, n), b":0\r\n")
    c.rt(resp_encode("SDIFFSTORE", d, b, a), b":1\r\n")
    c.rt(resp_encode("SMEMBERS", d), bulks(4))
    c.rt(resp_encode("DEL", a, b, d), b":3\r\n")


def test_sintercard(c, key):
    a, b, string = key + ":a", key + ":b", key + ":str"
    c.rt(resp_encode("SADD", a, "1", "2", "3", "x"), b":4\r\n")
    c.rt(resp_encode("SADD", b, "2", "3", "x", "y"), b":4\r\n")
    c.rt(resp_encode("SET", string, "v"), b"+OK\r\n")
    c.rt(resp_encode("SINTERCARD", "2", a, b), b":3\r\n")
    c.rt(resp_encode("SINTERCARD", "1", a), b":4\r\n")
    c.rt(resp_encode("SINTERCARD", "2", a, key + ":none"), b":0\r\n")
    c.rt(resp_encode("SINTERCARD", "2", a, b, "LIMIT", "2"), b":2\r\n")
    c.rt(resp_encode("SINTERCARD", "2", a, b, "limit", "0"), b":3\r\n")
    c.rt(resp_encode("SINTERCARD", "2", a, b, "LIMIT", "5", "LIMIT", "1"), b":1\r\n")
    for numkeys in ("0", "-1", "x", ""):
        c.rt(resp_encode("SINTERCARD", numkeys, a), b"-ERR numkeys should be greater than 0\r\n")
    for numkeys in ("2", "9223372036854775807"):
        c.rt(resp_encode("SINTERCARD", numkeys, a),
             b"-ERR Number of keys can't be greater than number of args\r\n")
    c.rt(resp_encode("SINTERCARD", "1", a, "LIMIT"), SYNTAX)
    c.rt(resp_encode("SINTERCARD", "1", a, "FOO", "1"), SYNTAX)
    c.rt(resp_encode("SINTERCARD", "1", a, "LIMIT", "-1"), b"-ERR LIMIT can't be negative\r\n")
    c.rt(resp_encode("SINTERCARD", "1", a, "LIMIT", "x"), b"-ERR LIMIT can't be negative\r\n")
    # Options are checked before the keys' types.
    c.rt(resp_encode("SINTERCARD", "1", string, "LIMIT", "-1"),
         b"-ERR LIMIT can't be negative\r\n")
    c.rt(resp_encode("SINTERCARD", "2", a, string), WRONGTYPE)
    c.rt(resp_encode("DEL", a, b, string), b":3\r\n")


def test_sscan(c, key):
    c.rt(resp_encode("SSCAN", key, "0"), b"*2\r\n$1\r\n0\r\n*0\r\n")
    # A missing key answers before the options are read.
    c.rt(resp_encode("SSCAN", key, "0", "COUNT", "0"), b"*2\r\n$1\r\n0\r\n*0\r\n")
    c.rt(resp_encode("SADD", key, "10", "2", "1", "-3"), b":4\r\n")
    c.rt(resp_encode("SSCAN", key, "0"), b"*2\r\n$1\r\n0\r\n" + bulks(-3, 1, 2, 10))
    c.rt(resp_encode("SSCAN", key, "0", "MATCH", "1*", "COUNT", "1"),
         b"*2\r\n$1\r\n0\r\n" + bulks(1, 10))
    c.rt(resp_encode("SSCAN", key, "0", "MATCH", "x", "MATCH", "-*"),
         b"*2\r\n$1\r\n0\r\n" + bulks(-3))
    # The cursor is read as strtoul reads it.
    for cursor in ("-1", "+5", "18446744073709551615", ""):
        c.rt(resp_encode("SSCAN", key, cursor, "MATCH", "2"), b"*2\r\n$1\r\n0\r\n" + bulks(2))
    for cursor in ("x", " 1", "-", "18446744073709551616", "1x"):
        c.rt(resp_encode("SSCAN", key, cursor), b"-ERR invalid cursor\r\n")
    c.rt(resp_encode("SSCAN", key, "0", "COUNT", "0"), SYNTAX)
    c.rt(resp_encode("SSCAN", key, "0", "COUNT", "x"), NOT_INTEGER)
    c.rt(resp_encode("SSCAN", key, "0", "TYPE", "set"), SYNTAX)
    c.rt(resp_encode("SSCAN", key, "0", "MATCH"), SYNTAX)
    c.rt(resp_encode("SSCAN", key, "0", "NOVALUES"), SYNTAX)
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_sscan_big_set_visits_every_member(c, key):
    members = [f"m{i}".encode() for i in range(600)]
    c.rt(resp_encode("SADD", key, *members), b":600\r\n")
    seen, cursor = set(), b"0"
    for _ in range(1000):
        cursor, page = ask(c, "SSCAN", key, cursor, "COUNT", "50")
        seen.update(page)
        if cursor == b"0":
            break
    assert seen == set(members)
    c.rt(resp_encode("DEL", key), b":1\r\n")


COMMANDS_ON_ONE_KEY = [
    ("SADD", "a"), ("SREM", "a"), ("SMEMBERS",), ("SISMEMBER", "a"), ("SMISMEMBER", "a"),
    ("SCARD",), ("SPOP",), ("SPOP", "1"), ("SRANDMEMBER",), ("SRANDMEMBER", "1"),
    ("SSCAN", "0"), ("SINTER",), ("SUNION",), ("SDIFF",),
]


@pytest.mark.parametrize("command", COMMANDS_ON_ONE_KEY, ids=lambda cmd: "_".join(cmd))
def test_wrongtype(c, key, command):
    c.rt(resp_encode("SET", key, "v"), b"+OK\r\n")
    c.rt(resp_encode(command[0], key, *command[1:]), WRONGTYPE)
    c.rt(resp_encode("GET", key), b"$1\r\nv\r\n")
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_wrongtype_multi_key(c, key):
    s, string = key + ":s", key + ":str"
    c.rt(resp_encode("SADD", s, "a"), b":1\r\n")
    c.rt(resp_encode("SET", string, "v"), b"+OK\r\n")
    for name in ("SINTER", "SUNION", "SDIFF"):
        c.rt(resp_encode(name, s, string), WRONGTYPE)
        c.rt(resp_encode(name, key + ":none", string), WRONGTYPE)
    for name in ("SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"):
        c.rt(resp_encode(name, key + ":d", s, string), WRONGTYPE)
    c.rt(resp_encode("EXISTS", key + ":d"), b":0\r\n")
    c.rt(resp_encode("DEL", s, string), b":2\r\n")


ARITY = [
    ("sadd", 2), ("srem", 2), ("smembers", 1), ("smembers", 3), ("sismember", 2),
    ("sismember", 4), ("smismember", 2), ("scard", 1), ("scard", 3), ("spop", 1),
    ("srandmember", 1), ("smove", 3), ("smove", 5), ("sinter", 1), ("sintercard", 2),
    ("sunion", 1), ("sdiff", 1), ("sinterstore", 2), ("sunionstore", 2), ("sdiffstore", 2),
    ("sscan", 2),
]


@pytest.mark.parametrize("name,argc", ARITY, ids=lambda v: str(v))
def test_arity(c, name, argc):
    args = [name.upper()] + ["k"] * (argc - 1)
    c.rt(resp_encode(*args), b"-ERR wrong number of arguments for '%s' command\r\n"
         % name.encode())


def test_resp3_reply_types(c3, key):
    a, b = key + ":a", key + ":b"
    c3.rt(resp_encode("SMEMBERS", a), b"~0\r\n")
    c3.rt(resp_encode("SPOP", a), b"_\r\n")
    c3.rt(resp_encode("SPOP", a, "2"), b"~0\r\n")
    c3.rt(resp_encode("SRANDMEMBER", a), b"_\r\n")
    c3.rt(resp_encode("SRANDMEMBER", a, "2"), b"*0\r\n")
    c3.rt(resp_encode("SINTER", a, b), b"~0\r\n")
    c3.rt(resp_encode("SSCAN", a, "0"), b"*2\r\n$1\r\n0\r\n*0\r\n")
    c3.rt(resp_encode("SADD", a, "3", "1", "2"), b":3\r\n")
    c3.rt(resp_encode("SADD", b, "2", "3", "4"), b":3\r\n")
    c3.rt(resp_encode("SMEMBERS", a), b"~3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n")
    c3.rt(resp_encode("SINTER", a, b), b"~2\r\n$1\r\n2\r\n$1\r\n3\r\n")
    c3.rt(resp_encode("SUNION", a, b), b"~4\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n$1\r\n4\r\n")
    c3.rt(resp_encode("SDIFF", a, b), b"~1\r\n$1\r\n1\r\n")
    c3.rt(resp_encode("SRANDMEMBER", a, "5"), b"*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n")
    c3.rt(resp_encode("SMISMEMBER", a, "1", "9"), b"*2\r\n:1\r\n:0\r\n")
    c3.rt(resp_encode("SSCAN", a, "0"), b"*2\r\n$1\r\n0\r\n*3\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n")
    popped = ask(c3, "SPOP", a, "2")
    assert isinstance(popped, RespSet) and len(popped) == 2
    picks = ask(c3, "SRANDMEMBER", b, "-3")
    assert type(picks) is list and len(picks) == 3
    c3.rt(resp_encode("SPOP", a, "5"), b"~1\r\n" + bulks(*({b"1", b"2", b"3"} - set(popped)))[4:])
    c3.rt(resp_encode("DEL", b), b":1\r\n")
    assert not isinstance(ask(c3, "SMEMBERS", a), RespError)


def test_concurrent_sadd_srem_one_key(resp_port, key):
    """Clients on several connections (on Spinel, several workers) change one set at once:
    every change lands, none is lost to another's rewrite of the value."""
    import threading

    clients, per_client = 4, 300
    errors = []

    def add_then_remove(n):
        try:
            with Conn(resp_port) as conn:
                # Plain reads (rt's quiet check waits 50 ms a command).
                for i in range(per_client):
                    conn.send(resp_encode("SADD", key, f"c{n}:{i}", f"keep{n}:{i}"))
                    assert conn.read_exact(4) == b":2\r\n"
                for i in range(per_client):
                    conn.send(resp_encode("SREM", key, f"c{n}:{i}"))
                    assert conn.read_exact(4) == b":1\r\n"
        except Exception as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=add_then_remove, args=(n,)) for n in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    with Conn(resp_port) as c:
        c.rt(resp_encode("SCARD", key), b":%d\r\n" % (clients * per_client))
        c.rt(resp_encode("DEL", key), b":1\r\n")
