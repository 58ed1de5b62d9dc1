"""OBJECT, SWAPDB and SCAN ... TYPE: replies byte for byte as redis-server 7.0 sends them
(validated with CONFORMANCE_TARGET=redis), and WRONGTYPE from string commands on collections."""

import pytest

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp


@pytest.fixture
def c(resp_port):
    with Conn(resp_port) as conn:
        yield conn


def test_object_on_strings(c, key):
    cases = [("12345", b"int"), ("-5", b"int"), ("05", b"embstr"), ("hello", b"embstr"),
             ("a" * 44, b"embstr"), ("a" * 45, b"raw"), ("123456789012345678901", b"embstr")]
    for value, encoding in cases:
        c.rt(resp_encode("SET", key, value), b"+OK\r\n")
        c.rt(resp_encode("OBJECT", "ENCODING", key),
             b"$%d\r\n%s\r\n" % (len(encoding), encoding))
    c.rt(resp_encode("OBJECT", "REFCOUNT", key), b":1\r\n")
    c.send(resp_encode("OBJECT", "IDLETIME", key))
    assert c.read_line() in (b":0\r\n", b":1\r\n")  # a second may tick in between
    c.rt(resp_encode("OBJECT", "FREQ", key),
         b"-ERR An LFU maxmemory policy is not selected, access frequency not tracked. "
         b"Please note that when switching between policies at runtime LRU and LFU data "
         b"will take some time to adjust.\r\n")
    for sub in ("ENCODING", "REFCOUNT", "IDLETIME"):
        c.rt(resp_encode("OBJECT", sub, key + ":none"), b"$-1\r\n")
    c.rt(resp_encode("OBJECT", "FOO", key), b"-ERR unknown subcommand 'FOO'. Try OBJECT HELP.\r\n")
    c.rt(resp_encode("OBJECT"), b"-ERR wrong number of arguments for 'object' command\r\n")
    c.rt(resp_encode("OBJECT", "ENCODING"),
         b"-ERR wrong number of arguments for 'object|encoding' command\r\n")
    c.send(resp_encode("OBJECT", "HELP"))
    header = c.read_line()
    assert header.startswith(b"*") and int(header[1:]) >= 11
    for _ in range(int(header[1:])):
        assert c.read_line().startswith(b"+")
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_swapdb(c, key):
    c.rt(resp_encode("SELECT", "5"), b"+OK\r\n")
    c.rt(resp_encode("SET", key, "five", "EX", "100"), b"+OK\r\n")
    c.rt(resp_encode("SELECT", "6"), b"+OK\r\n")
    c.rt(resp_encode("SET", key + ":6", "six"), b"+OK\r\n")
    c.rt(resp_encode("SWAPDB", "5", "6"), b"+OK\r\n")
    c.rt(resp_encode("GET", key), b"$4\r\nfive\r\n")  # db 6 now holds db 5's keys
    c.rt(resp_encode("TTL", key), b":100\r\n")
    c.rt(resp_encode("EXISTS", key + ":6"), b":0\r\n")
    c.rt(resp_encode("SELECT", "5"), b"+OK\r\n")
    c.rt(resp_encode("GET", key + ":6"), b"$3\r\nsix\r\n")
    c.rt(resp_encode("SWAPDB", "5", "5"), b"+OK\r\n")
    c.rt(resp_encode("SWAPDB", "0", "x"), b"-ERR invalid second DB index\r\n")
    c.rt(resp_encode("SWAPDB", "x", "0"), b"-ERR invalid first DB index\r\n")
    c.rt(resp_encode("SWAPDB", "0", "99"), b"-ERR DB index is out of range\r\n")
    c.rt(resp_encode("SWAPDB", "0"), b"-ERR wrong number of arguments for 'swapdb' command\r\n")
    c.rt(resp_encode("FLUSHDB"), b"+OK\r\n")
    c.rt(resp_encode("SELECT", "6"), b"+OK\r\n")
    c.rt(resp_encode("FLUSHDB"), b"+OK\r\n")


def _scan_all(c, *options):
    cursor, keys = b"0", []
    while True:
        c.send(resp_encode("SCAN", cursor, *options))
        assert c.read_line() == b"*2\r\n"
        n = int(c.read_line()[1:])
        cursor = c.read_exact(n + 2)[:-2]
        count = int(c.read_line()[1:])
        for _ in range(count):
            n = int(c.read_line()[1:])
            keys.append(c.read_exact(n + 2)[:-2].decode())
        if cursor == b"0":
            return sorted(keys)


def test_scan_type(c, key):
    c.rt(resp_encode("SELECT", "9"), b"+OK\r\n")
    c.rt(resp_encode("MSET", key + ":a", "1", key + ":b", "2"), b"+OK\r\n")
    assert _scan_all(c, "TYPE", "string", "COUNT", "1000") == [key + ":a", key + ":b"]
    assert _scan_all(c, "TYPE", "STRING", "MATCH", "*:a") == [key + ":a"]
    assert _scan_all(c, "TYPE", "hash") == []
    assert _scan_all(c, "TYPE", "nosuchtype") == []
    c.rt(resp_encode("FLUSHDB"), b"+OK\r\n")


def _encoding(c, key):
    c.send(resp_encode("OBJECT", "ENCODING", key))
    header = c.read_line()
    return c.read_exact(int(header[1:]) + 2)[:-2].decode()


def test_object_encoding_of_collections(c, key):
    c.rt(resp_encode("HSET", key + ":h", "f", "v"), b":1\r\n")
    assert _encoding(c, key + ":h") == "listpack"
    c.rt(resp_encode("HSET", key + ":h", "long", "v" * 65), b":1\r\n")
    assert _encoding(c, key + ":h") == "hashtable"
    c.rt(resp_encode("SADD", key + ":s", 1, 2, 3), b":3\r\n")
    assert _encoding(c, key + ":s") == "intset"
    c.rt(resp_encode("SADD", key + ":s", "x"), b":1\r\n")
    assert _encoding(c, key + ":s") == "hashtable"
    c.rt(resp_encode("ZADD", key + ":z", 1, "m"), b":1\r\n")
    assert _encoding(c, key + ":z") == "listpack"
    c.rt(resp_encode("ZADD", key + ":z", *[x for i in range(129) for x in (i, f"m{i}")]),
         b":129\r\n")
    assert _encoding(c, key + ":z") == "skiplist"
    c.rt(resp_encode("RPUSH", key + ":l", "a"), b":1\r\n")
    assert _encoding(c, key + ":l") == "quicklist"
    for suffix, type_name in ((":h", "hash"), (":s", "set"), (":z", "zset"), (":l", "list")):
        c.rt(resp_encode("TYPE", key + suffix), b"+%s\r\n" % type_name.encode())
    assert _scan_all(c, "TYPE", "zset", "MATCH", key + "*") == [key + ":z"]
    c.rt(resp_encode("DEL", key + ":h", key + ":s", key + ":z", key + ":l"), b":4\r\n")


def test_string_commands_on_collections_are_wrongtype(c, key):
    wrong = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    c.rt(resp_encode("HSET", key, "f", "v"), b":1\r\n")
    for command in (("GET", key), ("GETSET", key, "x"), ("GETDEL", key), ("GETEX", key),
                    ("APPEND", key, "x"), ("STRLEN", key), ("GETRANGE", key, 0, -1),
                    ("SETRANGE", key, 0, "x"), ("INCR", key), ("INCRBYFLOAT", key, 1),
                    ("DECRBY", key, 2), ("SET", key, "x", "GET"), ("LPUSH", key, "x"),
                    ("SADD", key, "x"), ("ZADD", key, 1, "x")):
        c.rt(resp_encode(*command), wrong)
    c.rt(resp_encode("MGET", key, key + ":none"), b"*2\r\n$-1\r\n$-1\r\n")
    c.rt(resp_encode("HGET", key, "f"), b"$1\r\nv\r\n")  # nothing above changed it
    c.rt(resp_encode("SETNX", key, "x"), b":0\r\n")
    c.rt(resp_encode("SET", key, "x"), b"+OK\r\n")  # SET replaces any type
    c.rt(resp_encode("TYPE", key), b"+string\r\n")
    c.rt(resp_encode("HGET", key, "f"), wrong)
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_memcached_sees_collections_as_misses(target, shared_server, key):
    if target != "spinel":
        pytest.skip("one store behind both protocols is Spinel's")
    with Conn(shared_server.resp_port) as c, Conn(shared_server.mc_port) as mc:
        c.rt(resp_encode("HSET", key, "f", "v"), b":1\r\n")
        mc.rt(f"get {key}\r\n".encode(), b"END\r\n")
        mc.rt(f"append {key} 0 0 1\r\nx\r\n".encode(), b"NOT_STORED\r\n")
        mc.rt(f"incr {key} 1\r\n".encode(),
              b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n")
        c.rt(resp_encode("HGET", key, "f"), b"$1\r\nv\r\n")
        mc.rt(f"delete {key}\r\n".encode(), b"DELETED\r\n")
        c.rt(resp_encode("EXISTS", key), b":0\r\n")
