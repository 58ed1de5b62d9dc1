"""Eviction that applications can rely on: `volatile-*` policies evict only keys with a TTL
and refuse writes with Redis's OOM error once only keys without one are left; Spinel's
never-evict databases and key prefixes (`--noevict-dbs`, `--noevict-prefixes`, CONFIG SET
`spinel-noevict-dbs` / `spinel-noevict-prefixes`) keep their keys under any policy, on both
ports, and refuse writes once only they are left.

Each test starts its own server and lowers its memory with CONFIG SET maxmemory 4mb, so that
a few thousand 1 KiB values fill it. The `volatile-*` tests are Redis's behaviour and run
against redis-server too (CONFORMANCE_TARGET=redis); the never-evict ones are Spinel's.
"""

import subprocess

import pytest

from conftest import spinel_bin
from wire import Conn, resp_encode

OK = b"+OK\r\n"
OOM = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
MC_OOM = b"SERVER_ERROR out of memory storing object\r\n"
VOLATILE = ["volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"]
VALUE = b"v" * 1024


def pipeline(conn, commands, timeout=30):
    """Sends RESP commands in one write; returns their one-line replies."""
    conn.send(b"".join(resp_encode(*command) for command in commands))
    return [conn.read_line(timeout=timeout) for _ in commands]


def sets(keys, ttl=None):
    extra = ("EX", ttl) if ttl else ()
    return [("SET", key, VALUE, *extra) for key in keys]


def info_field(conn, section, name):
    conn.send(resp_encode("INFO", section))
    head = conn.read_line()
    body = conn.read_exact(int(head[1:-2]) + 2).decode()
    for line in body.split("\r\n"):
        if line.startswith(name + ":"):
            return line.split(":", 1)[1]
    raise AssertionError(f"no {name} in INFO {section}")


def read_bulk(conn):
    head = conn.read_line()
    return conn.read_exact(int(head[1:-2]) + 2)[:-2]


def present(conn, keys):
    """How many of `keys` EXISTS finds (in the connection's database)."""
    replies = pipeline(conn, [("EXISTS", key) for key in keys])
    return sum(int(reply[1:-2]) for reply in replies)


def limited(make_server, policy, extra=()):
    """A server of this test's own at maxmemory 4mb under `policy`, and a connection."""
    server = make_server(extra=extra)
    conn = Conn(server.resp_port, timeout=10)
    conn.rt(resp_encode("CONFIG", "SET", "maxmemory", "4mb", "maxmemory-policy", policy), OK)
    return server, conn


@pytest.mark.resp
@pytest.mark.parametrize("policy", VOLATILE)
def test_volatile_evicts_keys_with_a_ttl_and_keeps_the_others(make_server, policy):
    _, c = limited(make_server, policy)
    persistent = [f"keep{i}" for i in range(500)]
    assert set(pipeline(c, sets(persistent))) == {OK}
    expiring = [f"ttl{i}" for i in range(8000)]
    assert set(pipeline(c, sets(expiring, ttl=3600))) == {OK}
    assert present(c, persistent) == len(persistent)
    assert present(c, expiring) < len(expiring)
    assert int(info_field(c, "stats", "evicted_keys")) > 0
    c.close()


@pytest.mark.resp
def test_volatile_keeps_collections_and_streams_without_ttl(make_server):
    """A stream and a large hash live outside the item (charged to the limit apart): the rule
    covers them as it covers strings."""
    _, c = limited(make_server, "volatile-lru")
    xadds = [("XADD", "events", "*", "n", str(i), "pad", "p" * 200) for i in range(500)]
    c.send(b"".join(resp_encode(*x) for x in xadds))
    assert all(read_bulk(c) for _ in xadds)
    hset = ("HSET", "big", *[part for i in range(2000) for part in (f"f{i}", "x" * 100)])
    assert pipeline(c, [hset]) == [b":2000\r\n"]
    # Each read once, so that the main queue, where collections are queued, is evicted too.
    keys = [f"ttl{i}" for i in range(8000)]
    writes = [command for key, put in zip(keys, sets(keys, ttl=3600))
              for command in (put, ("STRLEN", key))]
    assert set(pipeline(c, writes)) == {OK, b":1024\r\n"}
    assert int(info_field(c, "stats", "evicted_keys")) > 0
    c.rt(resp_encode("XLEN", "events"), b":500\r\n")
    c.rt(resp_encode("HLEN", "big"), b":2000\r\n")
    c.close()


@pytest.mark.resp
@pytest.mark.parametrize("policy", ["volatile-lru", "volatile-ttl"])
def test_volatile_refuses_with_oom_when_only_keys_without_ttl_are_left(make_server, policy):
    _, c = limited(make_server, policy)
    keys = [f"p{i}" for i in range(16000)]
    replies = pipeline(c, sets(keys))
    assert replies[0] == OK and OOM in replies, set(replies)
    assert set(replies) <= {OK, OOM}
    stored = [key for key, reply in zip(keys, replies) if reply == OK]
    assert present(c, stored) == len(stored), "a write that was answered OK was lost"
    # Nothing with a TTL to evict: a write with one is refused too.
    c.rt(resp_encode("SET", "late", "x", "EX", "100"), OOM)
    assert info_field(c, "stats", "evicted_keys") == "0"
    # Deleted, their memory is taken again.
    assert set(pipeline(c, [("DEL", key) for key in stored[: len(stored) * 3 // 4]])) == {b":1\r\n"}
    assert set(pipeline(c, sets([f"again{i}" for i in range(200)]))) == {OK}
    c.close()


@pytest.fixture
def spinel_only(target):
    if target != "spinel":
        pytest.skip("never-evict marks are Spinel's")


MARKS = ("--noevict-dbs", "1", "--noevict-prefixes", "bull: sess:")


def mc_set(conn, key, value=VALUE):
    conn.send(b"set %s 0 0 %d\r\n%s\r\n" % (key.encode(), len(value), value))
    return conn.read_line(timeout=10)


@pytest.mark.resp
@pytest.mark.memcache
def test_never_evict_database_and_prefixes_keep_their_keys_under_allkeys_lru(
        spinel_only, make_server):
    server, c = limited(make_server, "allkeys-lru", extra=MARKS)
    c.rt(resp_encode("SELECT", "1"), OK)
    db1 = [f"cache{i}" for i in range(300)]
    assert set(pipeline(c, sets(db1))) == {OK}
    c.rt(resp_encode("SELECT", "0"), OK)
    jobs = [f"bull:q:{i}" for i in range(300)]
    assert set(pipeline(c, sets(jobs))) == {OK}
    with Conn(server.mc_port, timeout=10) as mc:
        for i in range(300):
            assert mc_set(mc, f"sess:{i}") == b"STORED\r\n"
        # The cache on the memcached port, past the memory several times over.
        for i in range(4000):
            assert mc_set(mc, f"mc-cache{i}") == b"STORED\r\n"
    assert set(pipeline(c, sets([f"cache{i}" for i in range(8000)]))) == {OK}
    assert int(info_field(c, "stats", "evicted_keys")) > 0
    assert present(c, ["cache0", "mc-cache0"]) == 0, "unmarked keys of db 0 were evicted"
    assert present(c, jobs) == len(jobs)
    assert present(c, [f"sess:{i}" for i in range(300)]) == 300
    c.rt(resp_encode("SELECT", "1"), OK)
    assert present(c, db1) == len(db1)
    c.close()


@pytest.mark.resp
@pytest.mark.memcache
def test_writes_are_refused_when_only_never_evict_keys_are_left(spinel_only, make_server):
    server, c = limited(make_server, "allkeys-lru", extra=MARKS)
    c.rt(resp_encode("SELECT", "1"), OK)
    keys = [f"job{i}" for i in range(16000)]
    replies = pipeline(c, sets(keys))
    assert replies[0] == OK and OOM in replies, set(replies)
    assert set(replies) <= {OK, OOM}
    stored = [key for key, reply in zip(keys, replies) if reply == OK]
    assert present(c, stored) == len(stored)
    # Nothing else to evict: database 0 and the memcached port are refused as well.
    c.rt(resp_encode("SELECT", "0"), OK)
    c.rt(resp_encode("SET", "cache", "x"), OOM)
    with Conn(server.mc_port) as mc:
        assert mc_set(mc, "bull:new") == MC_OOM
        assert mc_set(mc, "plain") == MC_OOM
    assert info_field(c, "stats", "evicted_keys") == "0"
    # The mark lifted, database 1 is a cache like the others.
    c.rt(resp_encode("CONFIG", "SET", "spinel-noevict-dbs", ""), OK)
    c.rt(resp_encode("SET", "cache", "x"), OK)
    assert int(info_field(c, "stats", "evicted_keys")) > 0
    c.close()


def set_failed(name, why):
    return (b"-ERR CONFIG SET failed (possibly related to argument '%s') - %s\r\n"
            % (name.encode(), why.encode()))


@pytest.mark.resp
def test_config_set_of_the_marks_and_its_errors(spinel_only, make_server):
    server = make_server(extra=MARKS)
    with Conn(server.resp_port) as c:
        c.rt(resp_encode("CONFIG", "GET", "spinel-noevict-dbs"),
             b"*2\r\n$18\r\nspinel-noevict-dbs\r\n$1\r\n1\r\n")
        c.rt(resp_encode("CONFIG", "GET", "spinel-noevict-prefixes"),
             b"*2\r\n$23\r\nspinel-noevict-prefixes\r\n$11\r\nbull: sess:\r\n")
        dbs_error = set_failed("spinel-noevict-dbs",
                               "argument must be a list of database numbers from 0 to 15")
        c.rt(resp_encode("CONFIG", "SET", "spinel-noevict-dbs", "16"), dbs_error)
        c.rt(resp_encode("CONFIG", "SET", "spinel-noevict-dbs", "0 15"), OK)
        c.rt(resp_encode("CONFIG", "GET", "spinel-noevict-dbs"),
             b"*2\r\n$18\r\nspinel-noevict-dbs\r\n$4\r\n0 15\r\n")
        longest, too_long = "p" * 256, "p" * 257
        c.rt(resp_encode("CONFIG", "SET", "spinel-noevict-prefixes", longest), OK)
        c.rt(resp_encode("CONFIG", "SET", "spinel-noevict-prefixes", too_long),
             set_failed("spinel-noevict-prefixes", "a prefix is 1 to 256 bytes"))
        most = " ".join(f"p{i}:" for i in range(64))
        c.rt(resp_encode("CONFIG", "SET", "spinel-noevict-prefixes", most), OK)
        c.rt(resp_encode("CONFIG", "SET", "spinel-noevict-prefixes", most + " one-more:"),
             set_failed("spinel-noevict-prefixes", "at most 64 prefixes"))
        # A refused pair changes nothing, the other pair of the command included.
        c.rt(resp_encode("CONFIG", "SET", "spinel-noevict-dbs", "3",
                         "spinel-noevict-prefixes", too_long),
             set_failed("spinel-noevict-prefixes", "a prefix is 1 to 256 bytes"))
        c.rt(resp_encode("CONFIG", "GET", "spinel-noevict-dbs"),
             b"*2\r\n$18\r\nspinel-noevict-dbs\r\n$4\r\n0 15\r\n")
        # Spinel's own parameters stay out of CONFIG GET *, which lists Redis's.
        c.send(resp_encode("CONFIG", "GET", "*"))
        names = [read_bulk(c) for _ in range(int(c.read_line()[1:-2]))][::2]
        assert b"maxmemory-policy" in names
        assert not [name for name in names if name.startswith(b"spinel-")]
        # INFO tells a connection in a never-evict database that its keys are not evicted.
        assert info_field(c, "memory", "maxmemory_policy") == "noeviction"
        c.rt(resp_encode("SELECT", "3"), OK)
        assert info_field(c, "memory", "maxmemory_policy") == "allkeys-lru"


@pytest.mark.parametrize("flags, message", [
    (["--noevict-dbs", "16"], "--noevict-dbs '16': argument must be a list of database "
                              "numbers from 0 to 15"),
    (["--noevict-prefixes", "p" * 257], "a prefix is 1 to 256 bytes"),
])
def test_bad_marks_refuse_the_start(spinel_only, flags, message):
    run = subprocess.run([spinel_bin(), "-p", "0", "--resp-port", "0", *flags],
                         capture_output=True, text=True, timeout=10)
    assert run.returncode != 0
    assert message in run.stderr, run.stderr
