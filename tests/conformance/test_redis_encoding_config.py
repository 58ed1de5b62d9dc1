"""The encoding CONFIG parameters Redis 7.0's own test files set first (list/hash/set/zset/
stream thresholds and their ziplist-era aliases), and the others they set (sanitize-dump-
payload, latency-tracking, latency-tracking-info-percentiles, rdb-key-save-delay):
CONFIG GET's names and values, CONFIG SET's checks and errors at their edges, and OBJECT
ENCODING following the hash, set and sorted-set thresholds.

The expectations are what redis-server 7.0 does (validated with CONFORMANCE_TARGET=redis).
Each test that sets a parameter starts a server of its own.
"""

import pytest

from resp_read import read_value
from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

I64_MAX = 9223372036854775807
# Canonical name -> (alias or None, Redis 7.0's default as CONFIG GET shows it).
DEFAULTS = {
    "list-max-listpack-size": ("list-max-ziplist-size", "-2"),
    "list-compress-depth": (None, "0"),
    "hash-max-listpack-entries": ("hash-max-ziplist-entries", "512"),
    "hash-max-listpack-value": ("hash-max-ziplist-value", "64"),
    "set-max-intset-entries": (None, "512"),
    "zset-max-listpack-entries": ("zset-max-ziplist-entries", "128"),
    "zset-max-listpack-value": ("zset-max-ziplist-value", "64"),
    "stream-node-max-bytes": (None, "4096"),
    "stream-node-max-entries": (None, "100"),
    "sanitize-dump-payload": (None, "no"),
    "latency-tracking": (None, "yes"),
    "latency-tracking-info-percentiles": (None, "50 99 99.9"),
}


@pytest.fixture
def fresh(make_server):
    server = make_server()
    with Conn(server.resp_port) as conn:
        yield conn


def config_get(conn, pattern):
    conn.send(resp_encode("CONFIG", "GET", pattern))
    flat = read_value(conn)
    return {flat[i].decode(): flat[i + 1].decode() for i in range(0, len(flat), 2)}


def failed(name, why):
    return f"-ERR CONFIG SET failed (possibly related to argument '{name}') - {why}\r\n".encode()


def test_defaults_under_both_names(fresh):
    listed = config_get(fresh, "*")
    for name, (alias, default) in DEFAULTS.items():
        assert config_get(fresh, name) == {name: default}
        assert listed[name] == default, name
        if alias:
            # An exact name is shown as given.
            assert config_get(fresh, alias.upper()) == {alias.upper(): default}
            assert listed[alias] == default, alias
    # Hidden, as in Redis: only its exact name shows it.
    assert "rdb-key-save-delay" not in listed
    assert config_get(fresh, "rdb-key-save-delay") == {"rdb-key-save-delay": "0"}


def test_alias_and_name_are_one_value(fresh):
    fresh.rt(resp_encode("CONFIG", "SET", "list-max-ziplist-size", "32"), b"+OK\r\n")
    assert config_get(fresh, "list-max-*") == {
        "list-max-listpack-size": "32", "list-max-ziplist-size": "32"}
    # Both names in one CONFIG SET: accepted, the later one wins (Redis 7.0 checks
    # duplicates by the name given).
    fresh.rt(resp_encode("CONFIG", "SET", "hash-max-ziplist-entries", "5",
                         "hash-max-listpack-entries", "6"), b"+OK\r\n")
    assert config_get(fresh, "hash-max-*-entries") == {
        "hash-max-listpack-entries": "6", "hash-max-ziplist-entries": "6"}
    fresh.rt(resp_encode("CONFIG", "SET", "set-max-intset-entries", "1", "SET-MAX-INTSET-ENTRIES",
                         "2"), failed("SET-MAX-INTSET-ENTRIES", "duplicate parameter"))


def test_values_at_their_edges(fresh):
    accepted = [
        ("list-max-listpack-size", "-2147483648", "-2147483648"),
        ("list-max-listpack-size", "2147483647", "2147483647"),
        ("list-compress-depth", "0", "0"),
        ("hash-max-listpack-entries", str(I64_MAX), str(I64_MAX)),
        ("hash-max-listpack-value", "1k", "1000"),
        ("zset-max-ziplist-value", "1kb", "1024"),
        ("hash-max-listpack-value", "007", "7"),
        ("stream-node-max-bytes", "2gb", "2147483648"),
        ("stream-node-max-bytes", "", "0"),
        ("stream-node-max-bytes", str(I64_MAX), str(I64_MAX)),
        ("stream-node-max-bytes", "17179869184gb", "0"),  # the product wraps, as in Redis
        ("stream-node-max-entries", "0", "0"),
        ("sanitize-dump-payload", "CLIENTS", "clients"),
        ("latency-tracking", "No", "no"),
        ("latency-tracking-info-percentiles", "0.0 50.0 100.0", "0 50 100"),
        ("latency-tracking-info-percentiles", "33.333333333 1e1", "33.333333 10"),
        ("latency-tracking-info-percentiles", "", ""),
    ]
    for name, value, shown in accepted:
        fresh.rt(resp_encode("CONFIG", "SET", name, value), b"+OK\r\n")
        assert config_get(fresh, name) == {name: shown}, (name, value)


def test_refused_values(fresh):
    not_int = "argument couldn't be parsed into an integer"
    memory = "argument must be a memory value"
    i64 = f"argument must be between 0 and {I64_MAX} inclusive"
    refused = [
        ("list-max-listpack-size", "-2147483649",
         "argument must be between -2147483648 and 2147483647 inclusive"),
        ("list-max-ziplist-size", "2147483648",
         "argument must be between -2147483648 and 2147483647 inclusive"),
        ("list-compress-depth", "-1", "argument must be between 0 and 2147483647 inclusive"),
        ("list-compress-depth", "05", not_int),
        ("list-compress-depth", "-0", not_int),
        ("list-compress-depth", "+5", not_int),
        ("list-compress-depth", " 5", not_int),
        ("hash-max-ziplist-entries", "-1", i64),
        ("hash-max-ziplist-entries", "1k", not_int),
        ("set-max-intset-entries", "9223372036854775808", not_int),
        ("set-max-intset-entries", "1.5", not_int),
        ("zset-max-listpack-entries", "", not_int),
        ("zset-max-ziplist-value", "9223372036854775808", i64),
        ("hash-max-listpack-value", "-1", memory),
        ("hash-max-listpack-value", "+1", memory),
        ("stream-node-max-bytes", "1.5k", memory),
        ("stream-node-max-bytes", "18446744073709551616", i64),  # strtoull saturates
        ("stream-node-max-bytes", "1x", memory),
        ("stream-node-max-entries", "-1", i64),
        ("sanitize-dump-payload", "maybe",
         "argument(s) must be one of the following: no, yes, clients"),
        ("latency-tracking", "maybe", "argument must be 'yes' or 'no'"),
        ("latency-tracking-info-percentiles", "10 a",
         "Invalid latency-tracking-info-percentiles parameters"),
        ("latency-tracking-info-percentiles", "1  2",
         "Invalid latency-tracking-info-percentiles parameters"),
        ("latency-tracking-info-percentiles", "10 101",
         "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"),
    ]
    for name, value, why in refused:
        fresh.rt(resp_encode("CONFIG", "SET", name, value), failed(name, why))
    # The name in the error is the one given, in lower case.
    fresh.rt(resp_encode("CONFIG", "SET", "HASH-MAX-ZIPLIST-ENTRIES", "x"),
             failed("hash-max-ziplist-entries", not_int))
    # A refused pair changes nothing of the others.
    fresh.rt(resp_encode("CONFIG", "SET", "hash-max-ziplist-entries", "5",
                         "list-compress-depth", "-1"),
             failed("list-compress-depth", "argument must be between 0 and 2147483647 inclusive"))
    assert config_get(fresh, "hash-max-listpack-entries") == {"hash-max-listpack-entries": "512"}
    for name, (_, default) in DEFAULTS.items():
        if name != "latency-tracking-info-percentiles":
            assert config_get(fresh, name) == {name: default}


def encoding(conn, key):
    conn.send(resp_encode("OBJECT", "ENCODING", key))
    return read_value(conn).decode()


def test_object_encoding_follows_thresholds(fresh):
    fresh.rt(resp_encode("HSET", "h", "f", "v" * 11), b":1\r\n")
    fresh.rt(resp_encode("ZADD", "z", "1", "m"), b":1\r\n")
    fresh.rt(resp_encode("SADD", "s", "1", "2", "3"), b":3\r\n")
    assert [encoding(fresh, k) for k in ("h", "z", "s")] == ["listpack", "listpack", "intset"]
    fresh.rt(resp_encode("CONFIG", "SET", "hash-max-ziplist-value", "10",
                         "zset-max-ziplist-entries", "0", "set-max-intset-entries", "2"),
             b"+OK\r\n")
    fresh.rt(resp_encode("HSET", "h2", "f", "v" * 11), b":1\r\n")
    fresh.rt(resp_encode("ZADD", "z2", "1", "m"), b":1\r\n")
    fresh.rt(resp_encode("SADD", "s2", "1", "2", "3"), b":3\r\n")
    assert [encoding(fresh, k) for k in ("h2", "z2", "s2")] == [
        "hashtable", "skiplist", "hashtable"]
    # Up to 512 fields of at most 64 bytes by default (not redis.conf's 128).
    fresh.rt(resp_encode("CONFIG", "SET", "hash-max-listpack-value", "64"), b"+OK\r\n")
    fields = [x for i in range(300) for x in (f"f{i}", "v")]
    fresh.rt(resp_encode("HSET", "h3", *fields), b":300\r\n")
    assert encoding(fresh, "h3") == "listpack"
    fresh.rt(resp_encode("CONFIG", "SET", "zset-max-listpack-entries", "128",
                         "zset-max-listpack-value", "3"), b"+OK\r\n")
    fresh.rt(resp_encode("ZADD", "z3", "1", "abcd"), b":1\r\n")
    assert encoding(fresh, "z3") == "skiplist"
