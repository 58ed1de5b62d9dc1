"""MEMORY (USAGE, STATS, DOCTOR, MALLOC-STATS, PURGE, HELP) and LCS on the Redis port: reply
shapes and errors byte for byte as redis-server 7.0 sends them (validated with
CONFORMANCE_TARGET=redis), LCS's subsequence and ranges against a model of Redis's walk,
and LCS's table limit at its edge.

MEMORY's figures are each server's own accounting, so only their shape and their
relations are compared (a key's usage exceeds its name and value; MEMORY STATS counts the
keys there are).
"""

import random

import pytest

from resp_read import read_value
from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

SYNTAX = b"-ERR syntax error\r\n"
NOT_INTEGER = b"-ERR value is not an integer or out of range\r\n"
NOT_STRINGS = b"-ERR The specified keys must contain string values\r\n"
TOO_LARGE = b"-ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len\r\n"
# Redis refuses a table of (len1+1)*(len2+1) 4-byte cells past proto-max-bulk-len.
CELLS_MAX = 536870912 // 4
DOCTOR_EMPTY = (b"Hi Sam, this instance is empty or is using very little memory, my issues "
                b"detector can't be used in these conditions. Please, leave for your mission "
                b"on Earth and fill it with some data. The new Sam and I will be back to our "
                b"programming as soon as I finished rebooting.\n")
STATS_FIELDS = [
    "peak.allocated", "total.allocated", "startup.allocated", "replication.backlog",
    "clients.slaves", "clients.normal", "cluster.links", "aof.buffer", "lua.caches",
    "functions.caches", "overhead.total", "keys.count", "keys.bytes-per-key", "dataset.bytes",
    "dataset.percentage", "peak.percentage", "allocator.allocated", "allocator.active",
    "allocator.resident", "allocator-fragmentation.ratio", "allocator-fragmentation.bytes",
    "allocator-rss.ratio", "allocator-rss.bytes", "rss-overhead.ratio", "rss-overhead.bytes",
    "fragmentation", "fragmentation.bytes",
]
MEMORY_HELP = [
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return memory problems reports.",
    "MALLOC-STATS",
    "    Return internal statistics report from the memory allocator.",
    "PURGE",
    "    Attempt to purge dirty pages for reclamation by the allocator.",
    "STATS",
    "    Return information about the memory usage of the server.",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
    "HELP",
    "    Prints this help.",
]


@pytest.fixture
def c(resp_port):
    with Conn(resp_port) as conn:
        yield conn


@pytest.fixture
def fresh(make_server):
    server = make_server()
    with Conn(server.resp_port) as conn:
        yield conn


def call(conn, *args):
    conn.send(resp_encode(*args))
    return read_value(conn)


# ------------------------------------------------------------------------------------------
# MEMORY

def test_memory_usage(c, key):
    assert call(c, "MEMORY", "USAGE", key) is None
    c.rt(resp_encode("SET", key, "A" * 33000), b"+OK\r\n")
    usage = call(c, "MEMORY", "USAGE", key)
    # Redis's own suite allows 42000 for this value (type/string.tcl).
    assert len(key) + 33000 < usage < 42000
    assert call(c, "MEMORY", "USAGE", key, "SAMPLES", "0") == usage
    assert call(c, "MEMORY", "USAGE", key, "samples", "5", "SAMPLES", "3") == usage
    builders = [("RPUSH", "a", "b"), ("HSET", "f", "v"), ("SADD", "1", "2"), ("ZADD", "1", "m")]
    for i, (command, *args) in enumerate(builders):
        name = f"{key}:{i}"
        call(c, command, name, *args)
        assert call(c, "MEMORY", "USAGE", name) > len(name) + 2


def test_memory_usage_errors(c, key):
    c.rt(resp_encode("SET", key, "v"), b"+OK\r\n")
    cases = [
        (("SAMPLES", "-1"), SYNTAX),
        (("SAMPLES", "x"), NOT_INTEGER),
        (("SAMPLES", "9223372036854775808"), NOT_INTEGER),
        (("SAMPLES",), SYNTAX),
        (("FOO",), SYNTAX),
        (("SAMPLES", "1", "FOO"), SYNTAX),
    ]
    for options, reply in cases:
        c.rt(resp_encode("MEMORY", "USAGE", key, *options), reply)
        # The options are checked before the key is looked up.
        c.rt(resp_encode("MEMORY", "USAGE", key + ":none", *options), reply)
    c.rt(resp_encode("MEMORY", "USAGE"),
         b"-ERR wrong number of arguments for 'memory|usage' command\r\n")
    c.rt(resp_encode("MEMORY", "STATS", "x"),
         b"-ERR wrong number of arguments for 'memory|stats' command\r\n")
    c.rt(resp_encode("MEMORY", "NOSUCH"),
         b"-ERR unknown subcommand 'NOSUCH'. Try MEMORY HELP.\r\n")
    c.rt(resp_encode("MEMORY"), b"-ERR wrong number of arguments for 'memory' command\r\n")


def test_memory_stats_shape(fresh):
    stats = call(fresh, "MEMORY", "STATS")
    names = [stats[i].decode() for i in range(0, len(stats), 2)]
    assert names == STATS_FIELDS
    fresh.rt(resp_encode("SET", "a", "1"), b"+OK\r\n")
    fresh.rt(resp_encode("SELECT", "3"), b"+OK\r\n")
    fresh.rt(resp_encode("SET", "b", "1", "EX", "100"), b"+OK\r\n")
    fresh.rt(resp_encode("SET", "c", "1"), b"+OK\r\n")
    stats = call(fresh, "MEMORY", "STATS")
    pairs = {stats[i].decode(): stats[i + 1] for i in range(0, len(stats), 2)}
    names = list(pairs)
    assert names[:10] + names[12:] == STATS_FIELDS
    assert names[10:12] == ["db.0", "db.3"]
    assert [k.decode() for k in pairs["db.3"][::2]] == [
        "overhead.hashtable.main", "overhead.hashtable.expires",
        "overhead.hashtable.slot-to-keys"]
    assert pairs["keys.count"] == 3
    assert 0 <= float(pairs["dataset.percentage"]) <= 100
    # RESP3: a map, with doubles for the ratios.
    call(fresh, "HELLO", "3")
    stats = call(fresh, "MEMORY", "STATS")
    as_dict = dict((k.decode(), v) for k, v in stats)
    assert isinstance(as_dict["peak.percentage"], float)
    assert isinstance(as_dict["keys.count"], int)


def test_memory_doctor_and_others(fresh):
    fresh.send(resp_encode("MEMORY", "DOCTOR"))
    assert fresh.read_line() == b"$%d\r\n" % len(DOCTOR_EMPTY)
    assert fresh.read_exact(len(DOCTOR_EMPTY) + 2) == DOCTOR_EMPTY + b"\r\n"
    fresh.rt(resp_encode("MEMORY", "PURGE"), b"+OK\r\n")
    assert [line for line in call(fresh, "MEMORY", "HELP")] == MEMORY_HELP
    report = call(fresh, "MEMORY", "MALLOC-STATS")
    assert isinstance(report, bytes) and report
    call(fresh, "HELLO", "3")
    fresh.send(resp_encode("MEMORY", "DOCTOR"))
    assert fresh.read_line() == b"=%d\r\n" % (len(DOCTOR_EMPTY) + 4)
    assert fresh.read_exact(len(DOCTOR_EMPTY) + 6) == b"txt:" + DOCTOR_EMPTY + b"\r\n"


def test_memory_keys_in_command(c):
    assert call(c, "COMMAND", "GETKEYS", "MEMORY", "USAGE", "key") == [b"key"]
    assert call(c, "COMMAND", "GETKEYS", "LCS", "k1", "k2", "IDX") == [b"k1", b"k2"]
    c.rt(resp_encode("COMMAND", "GETKEYS", "MEMORY", "STATS"),
         b"-ERR The command has no key arguments\r\n")


# ------------------------------------------------------------------------------------------
# LCS

def lcs_model(a, b, min_len=0):
    """Redis 7.0's LCS: the table, then the walk back from the end (its tie rule and the
    ranges it emits, with their lengths)."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            if a[i - 1] == b[j - 1]:
                table[i][j] = table[i - 1][j - 1] + 1
            else:
                table[i][j] = max(table[i - 1][j], table[i][j - 1])
    i, j, out, ranges, run = len(a), len(b), [], [], None
    while i > 0 and j > 0:
        if a[i - 1] == b[j - 1]:
            out.append(a[i - 1:i])
            run = [i - 1, i - 1, j - 1, j - 1] if run is None else [i - 1, run[1], j - 1, run[3]]
            i, j = i - 1, j - 1
            emit = i == 0 or j == 0
        else:
            if table[i - 1][j] > table[i][j - 1]:
                i -= 1
            else:
                j -= 1
            emit = run is not None
        if emit:
            length = run[1] - run[0] + 1
            if min_len == 0 or length >= min_len:
                ranges.append([[run[0], run[1]], [run[2], run[3]], length])
            run = None
    return b"".join(reversed(out)), ranges, table[len(a)][len(b)]


def test_lcs_replies(c, key):
    a, b = key + ":a", key + ":b"
    c.rt(resp_encode("MSET", a, "ohmytext", b, "mynewtext"), b"+OK\r\n")
    c.rt(resp_encode("LCS", a, b), b"$6\r\nmytext\r\n")
    c.rt(resp_encode("LCS", a, b, "LEN"), b":6\r\n")
    c.rt(resp_encode("LCS", a, b, "IDX"),
         b"*4\r\n$7\r\nmatches\r\n*2\r\n*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n"
         b"*2\r\n*2\r\n:2\r\n:3\r\n*2\r\n:0\r\n:1\r\n$3\r\nlen\r\n:6\r\n")
    c.rt(resp_encode("LCS", a, b, "idx", "minmatchlen", "4", "withmatchlen"),
         b"*4\r\n$7\r\nmatches\r\n*1\r\n*3\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n:4\r\n"
         b"$3\r\nlen\r\n:6\r\n")
    # A negative MINMATCHLEN is 0; WITHMATCHLEN and MINMATCHLEN alone change nothing.
    c.rt(resp_encode("LCS", a, b, "MINMATCHLEN", "-5", "WITHMATCHLEN"), b"$6\r\nmytext\r\n")
    c.rt(resp_encode("LCS", a + ":none", key + ":none2"), b"$0\r\n\r\n")
    c.rt(resp_encode("LCS", a, key + ":none", "IDX"),
         b"*4\r\n$7\r\nmatches\r\n*0\r\n$3\r\nlen\r\n:0\r\n")
    call(c, "HELLO", "3")
    c.rt(resp_encode("LCS", a, b, "IDX", "MINMATCHLEN", "3"),
         b"%2\r\n$7\r\nmatches\r\n*1\r\n*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n"
         b"$3\r\nlen\r\n:6\r\n")


def test_lcs_errors(c, key):
    a, b, l = key + ":a", key + ":b", key + ":l"
    c.rt(resp_encode("MSET", a, "abc", b, "abd"), b"+OK\r\n")
    c.rt(resp_encode("RPUSH", l, "x"), b":1\r\n")
    cases = [
        (("LEN", "IDX"), b"-ERR If you want both the length and indexes, please just use IDX.\r\n"),
        (("MINMATCHLEN", "x"), NOT_INTEGER),
        (("MINMATCHLEN",), SYNTAX),
        (("FOO",), SYNTAX),
        (("IDX", "MINMATCHLEN", "99999999999999999999"), NOT_INTEGER),
    ]
    for options, reply in cases:
        c.rt(resp_encode("LCS", a, b, *options), reply)
    # The type is checked before the options.
    c.rt(resp_encode("LCS", a, l), NOT_STRINGS)
    c.rt(resp_encode("LCS", l, a, "FOO"), NOT_STRINGS)
    c.rt(resp_encode("LCS", a), b"-ERR wrong number of arguments for 'lcs' command\r\n")


# One matrix entry: the replies are the commands', compared with redis-server's.
@pytest.mark.one_backend
def test_lcs_matches_model(c, key):
    rng = random.Random(7)
    a, b = key + ":a", key + ":b"
    for _ in range(150):
        alphabet = "ab" if rng.random() < 0.5 else "abcdxyz"
        x = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        y = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        min_len = rng.choice([0, 0, 1, 2, 3])
        c.rt(resp_encode("MSET", a, x, b, y), b"+OK\r\n")
        subsequence, ranges, length = lcs_model(x.encode(), y.encode(), min_len)
        assert call(c, "LCS", a, b) == subsequence, (x, y)
        assert call(c, "LCS", a, b, "LEN") == length
        got = call(c, "LCS", a, b, "IDX", "MINMATCHLEN", str(min_len), "WITHMATCHLEN")
        assert got == [b"matches", ranges, b"len", length], (x, y, min_len)


def test_lcs_table_limit_edge(c, key):
    a, b = key + ":a", key + ":b"
    # (n+1)^2 cells: the largest square table within the limit, then one row more.
    n = 11584
    assert (n + 1) ** 2 <= CELLS_MAX < (n + 1) * (n + 2)
    c.rt(resp_encode("MSET", a, "ab" * (n // 2), b, "ba" * (n // 2)), b"+OK\r\n")
    c.send(resp_encode("LCS", a, b, "LEN"))
    expected = b":%d\r\n" % (n - 1)
    assert c.read_exact(len(expected), timeout=30) == expected
    c.rt(resp_encode("APPEND", a, "x"), b":%d\r\n" % (n + 1))
    for options in ((), ("LEN",), ("IDX",)):
        c.rt(resp_encode("LCS", a, b, *options), TOO_LARGE)
    # A long string against a short one: refused at once by the table's size.
    c.rt(resp_encode("SET", a, "z" * 200000), b"+OK\r\n")
    c.rt(resp_encode("SET", b, "y" * 700), b"+OK\r\n")
    c.rt(resp_encode("LCS", a, b, "IDX"), TOO_LARGE)
    # Against a missing key: (200000+1)*1 cells, within the limit; empty.
    c.rt(resp_encode("DEL", b), b":1\r\n")
    c.rt(resp_encode("LCS", a, b), b"$0\r\n\r\n")
