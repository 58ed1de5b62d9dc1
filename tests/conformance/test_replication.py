"""Redis replication across real processes: Spinel as the primary of a real redis-server
replica (how users leave), a Spinel replica of a real redis-server primary (how they
arrive), and Spinel replicas of Spinel; partial resynchronisation after a broken link,
WAIT, min-replicas-to-write, READONLY, ROLE and INFO replication as Sentinel reads them.

Each test starts its own servers (`make_server`, on every I/O back end of the matrix) and
real `redis-server` processes beside them.
"""

import socket
import threading
import time

import pytest
import redis

from conftest import start_server

pytestmark = pytest.mark.resp

SYNC_TIMEOUT_S = 20


def client(server):
    return redis.Redis(port=server.resp_port, socket_timeout=10)


def wait_until(check, timeout=SYNC_TIMEOUT_S, what="condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except (redis.ConnectionError, redis.ResponseError) as e:
            last = e
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def link_up(replica):
    return client(replica).info("replication").get("master_link_status") == "up"


def replica_offset(replica):
    return client(replica).info("replication").get("slave_repl_offset", -1)


def caught_up(primary, replica):
    """The replica processed every byte the primary has journaled."""
    offset = client(primary).info("replication")["master_repl_offset"]
    return link_up(replica) and replica_offset(replica) == offset


def fill_every_type(r, prefix=""):
    r.set(prefix + "s", "plain")
    r.set(prefix + "n", 12345)
    r.set(prefix + "big", "x" * 5000)
    r.set(prefix + "ttl", "v", px=500_000)
    r.rpush(prefix + "l", *[f"e{i}" for i in range(300)])
    r.sadd(prefix + "iset", *range(20))
    r.sadd(prefix + "set", *[f"m{i}" for i in range(200)])
    r.hset(prefix + "h", mapping={f"f{i}": f"v{i}" for i in range(150)})
    r.zadd(prefix + "z", {f"z{i}": i / 3 for i in range(200)})
    r.xadd(prefix + "x", {"a": "1"})
    r.xgroup_create(prefix + "x", "g", id="0")
    r.xreadgroup("g", "c1", {prefix + "x": ">"})
    r.execute_command("SELECT", 3)
    r.set(prefix + "db3", "three")
    r.execute_command("SELECT", 0)


def snapshot(r, dbs=(0, 3)):
    """Every key's DUMP-independent content and whether it has a TTL, per database."""
    state = {}
    for db in dbs:
        r.execute_command("SELECT", db)
        for key in sorted(r.keys("*")):
            kind = r.type(key)
            value = {
                b"string": lambda: r.get(key),
                b"list": lambda: r.lrange(key, 0, -1),
                b"set": lambda: sorted(r.smembers(key)),
                b"hash": lambda: sorted(r.hgetall(key).items()),
                b"zset": lambda: r.zrange(key, 0, -1, withscores=True),
                b"stream": lambda: (r.xrange(key), r.xinfo_groups(key)[0]["pending"]),
            }[kind]()
            state[(db, key)] = (kind, value, r.pttl(key) > 0)
    r.execute_command("SELECT", 0)
    return state


def test_a_redis_server_replica_follows_spinel(make_server):
    """How users leave Spinel: a real redis-server 7.0 attaches as a replica, loads the
    copy (every type, TTLs, other databases, memcached items as strings), then follows
    the writes of both protocols."""
    primary = make_server()
    p = client(primary)
    fill_every_type(p)
    replica = start_server("redis", extra=["--replicaof", "127.0.0.1", str(primary.resp_port)])
    try:
        wait_until(lambda: caught_up(primary, replica), what="initial sync")
        assert snapshot(client(replica)) == snapshot(p)
        p.incr("n")
        p.lpush("l", "front")
        p.hdel("h", "f1")
        p.zincrby("z", 10, "z5")
        p.xadd("x", {"b": "2"})
        p.delete("s")
        p.expire("big", 1000)
        with socket.create_connection(("127.0.0.1", primary.mc_port)) as mc:
            mc.sendall(b"set mc 7 0 3\r\nabc\r\nappend mc 0 0 2\r\nde\r\nincr n 5\r\n")
            mc.recv(100)
        wait_until(lambda: caught_up(primary, replica), what="stream")
        assert client(replica).get("mc") == b"abcde"
        assert snapshot(client(replica)) == snapshot(p)
        role = p.execute_command("ROLE")
        assert role[0] == b"master" and len(role[2]) == 1
        assert role[2][0][1] == str(replica.resp_port).encode()
    finally:
        replica.cleanup()


def test_writes_during_the_copy_are_neither_lost_nor_doubled(make_server):
    """INCR and APPEND run on the primary while the replica takes its copy: the replica
    ends with exactly the primary's values."""
    primary = make_server()
    p = client(primary)
    pipe = p.pipeline(transaction=False)
    for i in range(20_000):
        pipe.set(f"fill:{i}", "x" * 100)
    pipe.execute()
    stop = threading.Event()

    def writer():
        w = client(primary)
        while not stop.is_set():
            w.incr("counter")
            w.append("log", "a")

    thread = threading.Thread(target=writer)
    thread.start()
    replica = start_server("redis", extra=["--replicaof", "127.0.0.1", str(primary.resp_port)])
    try:
        wait_until(lambda: link_up(replica), what="link")
        time.sleep(0.5)
        stop.set()
        thread.join()
        wait_until(lambda: caught_up(primary, replica), what="catch up")
        r = client(replica)
        assert r.get("counter") == p.get("counter")
        assert r.get("log") == p.get("log")
        assert r.dbsize() == p.dbsize()
    finally:
        stop.set()
        replica.cleanup()


def test_a_broken_link_continues_from_the_backlog(make_server):
    """The replica's link is killed; it comes back with PSYNC and the primary answers
    +CONTINUE from its backlog (no second full copy)."""
    primary = make_server()
    p = client(primary)
    p.set("k", "1")
    replica = start_server("redis", extra=["--replicaof", "127.0.0.1", str(primary.resp_port)])
    try:
        wait_until(lambda: caught_up(primary, replica), what="sync")
        client(replica).execute_command("CLIENT", "KILL", "TYPE", "master")
        p.set("k", "2")
        wait_until(lambda: caught_up(primary, replica), what="resync")
        assert client(replica).get("k") == b"2"
        assert client(replica).info("stats")["sync_full"] == 0
        stats = p.info("stats")
        assert stats["sync_full"] == 1 and stats["sync_partial_ok"] == 1
    finally:
        replica.cleanup()


def test_wait_counts_the_replicas_that_acknowledged(make_server):
    primary = make_server()
    p = client(primary)
    assert p.execute_command("WAIT", 0, 0) == 0
    assert p.execute_command("WAIT", 1, 100) == 0
    replica = start_server("redis", extra=["--replicaof", "127.0.0.1", str(primary.resp_port)])
    try:
        wait_until(lambda: caught_up(primary, replica), what="sync")
        p.set("w", "1")
        assert p.execute_command("WAIT", 1, 5000) == 1
        assert p.execute_command("WAIT", 2, 300) == 1
    finally:
        replica.cleanup()


def test_min_replicas_to_write(make_server):
    primary = make_server()
    p = client(primary)
    p.config_set("min-replicas-to-write", 1)
    with pytest.raises(redis.ResponseError, match="NOREPLICAS Not enough good replicas"):
        p.set("k", "v")
    assert p.get("k") is None
    replica = start_server("redis", extra=["--replicaof", "127.0.0.1", str(primary.resp_port)])
    try:
        wait_until(lambda: p.set("k", "v"), what="a good replica")
        replica.stop()
        p.config_set("min-replicas-max-lag", 1)
        wait_until(lambda: not _writes(p), timeout=15, what="the replica counted gone")
    finally:
        replica.cleanup()
    p.config_set("min-replicas-to-write", 0)
    assert p.set("k", "v2")


def _writes(r):
    try:
        r.set("probe", "1")
        return True
    except redis.ResponseError:
        return False
