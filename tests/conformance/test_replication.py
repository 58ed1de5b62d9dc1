"""Redis replication across real processes: Spinel as the primary of a real redis-server
replica (how users leave), a Spinel replica of a real redis-server primary (how they
arrive), and Spinel replicas of Spinel; partial resynchronisation after a broken link,
WAIT, min-replicas-to-write, READONLY, ROLE and INFO replication as Sentinel reads them.

Each test starts its own servers (`make_server`, on every I/O back end of the matrix) and
real `redis-server` processes beside them.
"""

import socket
import tempfile
import threading
import time

import pytest
import redis

from conftest import start_server
from waits import wait_for

pytestmark = pytest.mark.resp

SYNC_TIMEOUT_S = 20


def redis_process(*extra):
    """A real redis-server in a directory of its own (a replica saves the copy it
    receives as dump.rdb, which must not be where other servers start)."""
    workdir = tempfile.mkdtemp(prefix="repl-redis-")
    return start_server("redis", extra=["--dir", workdir, *extra])


def redis_replica_of(primary):
    return redis_process("--replicaof", "127.0.0.1", str(primary.resp_port))


def client(server):
    return redis.Redis(port=server.resp_port, socket_timeout=10)


def wait_until(check, timeout=SYNC_TIMEOUT_S, what="condition"):
    return wait_for(check, what, timeout)


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
    replica = redis_replica_of(primary)
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
            w.rpush("queue", "j")
            w.hincrby("hash", "n", 1)

    thread = threading.Thread(target=writer)
    thread.start()
    replica = redis_replica_of(primary)
    try:
        wait_until(lambda: link_up(replica), what="link")
        time.sleep(0.5)
        stop.set()
        thread.join()
        wait_until(lambda: caught_up(primary, replica), what="catch up")
        r = client(replica)
        assert r.get("counter") == p.get("counter")
        assert r.get("log") == p.get("log")
        assert r.lrange("queue", 0, -1) == p.lrange("queue", 0, -1)
        assert r.hgetall("hash") == p.hgetall("hash")
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
    replica = redis_replica_of(primary)
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
    replica = redis_replica_of(primary)
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
    replica = redis_replica_of(primary)
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


def mc_lines(port, payload, until=b"END\r\n"):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(payload)
        data = b""
        while not data.endswith(until):
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
        return data


def follow(replica, primary_port):
    assert client(replica).execute_command("REPLICAOF", "127.0.0.1", primary_port) == b"OK"


def test_a_spinel_replica_follows_redis_server(make_server):
    """How users arrive: a Spinel replica of a real redis-server 7.0 takes its copy (every
    type, TTLs, other databases), follows its writes, refuses its own clients' writes on
    both ports, and once promoted (REPLICAOF NO ONE) keeps every key and takes writes."""
    primary = redis_process("--repl-diskless-sync-delay", "0")
    try:
        r = client(primary)
        fill_every_type(r)
        replica = make_server()
        follow(replica, primary.resp_port)
        wait_until(lambda: caught_up(primary, replica), what="initial sync")
        assert snapshot(client(replica)) == snapshot(r)
        r.incr("n")
        r.rpush("l", "tail")
        r.xadd("x", {"c": "3"})
        r.xreadgroup("g", "c2", {"x": ">"})
        r.hset("h", "num", "1.25")
        r.hincrbyfloat("h", "num", 1.5)
        r.spop("set")
        r.expire("s", 1000)
        r.execute_command("SELECT", 3)
        r.delete("db3")
        r.execute_command("SELECT", 0)
        wait_until(lambda: caught_up(primary, replica), what="stream")
        s = client(replica)
        assert snapshot(s) == snapshot(r)
        with pytest.raises(redis.ResponseError, match="^You can't write against a read only"):
            s.set("mine", "1")
        assert mc_lines(replica.mc_port, b"set mc 0 0 1\r\nx\r\n", b"\r\n") == \
            b"SERVER_ERROR read-only replica\r\n"
        info = s.info("replication")
        assert info["role"] == "slave" and info["master_port"] == primary.resp_port
        role = s.execute_command("ROLE")
        assert role[:4] == [b"slave", b"127.0.0.1", primary.resp_port, b"connected"]
        assert s.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
        assert s.set("mine", "1") and s.get("n") == r.get("n")
        assert s.info("replication")["role"] == "master"
    finally:
        primary.cleanup()


def test_spinel_replicas_of_spinel_keep_memcached_items_whole(make_server):
    """A Spinel replica of Spinel: memcached items keep their flags, TTLs and CAS uniques
    through the copy and the stream; touch, incr and flush_all reach it; a chained replica
    (a replica of the replica) sees the same."""
    primary, replica, chained = make_server(), make_server(), make_server()
    mc = primary.mc_port
    mc_lines(mc, b"set a 11 0 3\r\nabc\r\nset b 22 1000 2\r\nhi\r\n", b"STORED\r\nSTORED\r\n")
    follow(replica, primary.resp_port)
    follow(chained, replica.resp_port)
    wait_until(lambda: caught_up(primary, replica) and caught_up(replica, chained), what="sync")
    mc_lines(mc, b"set c 33 0 1\r\nz\r\nincr n 1\r\n", b"\r\n")
    mc_lines(mc, b"set n 0 0 1\r\n5\r\nincr n 2\r\ntouch a 500\r\nappend c 0 0 1\r\ny\r\n",
             b"TOUCHED\r\nSTORED\r\n")
    wait_until(lambda: caught_up(primary, replica) and caught_up(replica, chained), what="stream")
    want = mc_lines(mc, b"gets a b c n\r\n")
    assert b"VALUE a 11 3" in want and b"VALUE c 33 2" in want and b"\r\n7\r\n" in want
    for server in (replica, chained):
        assert mc_lines(server.mc_port, b"gets a b c n\r\n") == want
        assert 0 < client(server).ttl("a") <= 500
        assert 0 < client(server).ttl("b") <= 1000
    mc_lines(mc, b"flush_all\r\n", b"OK\r\n")
    wait_until(lambda: client(chained).dbsize() == 0, what="flush_all")


def test_a_spinel_replica_continues_after_its_link_is_killed(make_server):
    primary, replica = make_server(), make_server()
    p = client(primary)
    p.set("k", "1")
    follow(replica, primary.resp_port)
    wait_until(lambda: caught_up(primary, replica), what="sync")
    killed = client(replica).execute_command("CLIENT", "KILL", "TYPE", "master")
    assert killed == 1
    p.set("k", "2")
    wait_until(lambda: caught_up(primary, replica) and client(replica).get("k") == b"2",
               what="partial resync")
    stats = p.info("stats")
    assert stats["sync_full"] == 1 and stats["sync_partial_ok"] == 1


def test_failover_hands_the_role_to_a_caught_up_replica(make_server):
    """FAILOVER: writes wait, the replica catches up, becomes the primary (continuing the
    history: no second copy) and the old primary follows it."""
    primary, replica = make_server(), make_server()
    p = client(primary)
    for i in range(100):
        p.set(f"k{i}", i)
    follow(replica, primary.resp_port)
    wait_until(lambda: caught_up(primary, replica), what="sync")
    assert p.execute_command("FAILOVER", "TIMEOUT", 10_000) == b"OK"
    wait_until(lambda: client(replica).info("replication")["role"] == "master", what="promotion")
    wait_until(lambda: p.info("replication").get("master_link_status") == "up", what="demotion")
    assert p.info("replication")["master_port"] == replica.resp_port
    r = client(replica)
    r.set("after", "1")
    wait_until(lambda: p.get("after") == b"1", what="the old primary follows")
    assert r.info("stats")["sync_full"] == 0
    with pytest.raises(redis.ResponseError, match="FAILOVER is not valid when server is a replica"):
        p.execute_command("FAILOVER")
    with pytest.raises(redis.ResponseError, match="FAILOVER requires connected replicas"):
        client(make_server()).execute_command("FAILOVER")


def test_hostile_psyncs_are_bounded_and_cleaned_up(make_server):
    """Clients that ask for full copies and never read them: at most four copies run at
    once (the rest are refused, as a replica retries), other clients are served
    throughout, and the copies stop when their connections close."""
    # More data than a copy's pipe and the sockets hold, so no copy can finish while its
    # client reads nothing (a finished copy no longer counts).
    server = make_server(extra=["-m", "256"])
    c = client(server)
    pipe = c.pipeline(transaction=False)
    for i in range(50_000):
        pipe.set(f"k{i}", "v" * 1000)
    pipe.execute()
    hogs, answers = [], []
    for _ in range(6):
        s = socket.create_connection(("127.0.0.1", server.resp_port))
        s.sendall(b"PSYNC ? -1\r\n")
        hogs.append(s)
    time.sleep(0.5)
    for s in hogs:
        s.settimeout(2)
        answers.append(s.recv(64))
    assert sum(a.startswith(b"+FULLRESYNC") for a in answers) == 4
    assert sum(a.startswith(b"-ERR too many replicas") for a in answers) == 2
    assert c.ping() and c.get("k1") == b"v" * 1000
    assert c.info("replication")["connected_slaves"] == 4
    for s in hogs:
        s.close()
    wait_until(lambda: c.info("replication")["connected_slaves"] == 0, what="feeds closed")
    assert c.set("after", "1")


def test_collection_writes_travel_as_commands_not_whole_values(make_server):
    """A push onto a 10,000-element list, a field set in a large hash, XADD * and EXPIRE
    cost the stream their arguments (not the whole value again), and replicas (Spinel and
    redis-server) still end equal, with two clients writing the same keys at once."""
    primary, replica = make_server(), make_server()
    p = client(primary)
    p.rpush("big", *range(10_000))
    p.hset("bh", mapping={f"f{i}": i for i in range(5_000)})
    follow(replica, primary.resp_port)
    other = redis_replica_of(primary)
    try:
        wait_until(lambda: caught_up(primary, replica) and caught_up(primary, other),
                   what="sync")
        before = p.info("replication")["master_repl_offset"]
        p.lpush("big", "x")
        p.hset("bh", "new", "1")
        stream_id = p.xadd("events", {"a": "1"})
        p.expire("big", 1000)
        assert p.info("replication")["master_repl_offset"] - before < 400
        stop = threading.Event()

        def writer(n):
            w = client(primary)
            i = 0
            while not stop.is_set():
                w.lpush("big", f"{n}:{i}")
                w.rpop("big")
                w.hincrby("bh", "counter", 1)
                w.xadd("events", {"n": n}, maxlen=50, approximate=False)
                i += 1

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
        for t in threads:
            t.start()
        time.sleep(1.5)
        stop.set()
        for t in threads:
            t.join()
        wait_until(lambda: caught_up(primary, replica) and caught_up(primary, other),
                   what="catch up")
        for r in (client(replica), client(other)):
            assert r.lrange("big", 0, -1) == p.lrange("big", 0, -1)
            assert r.hgetall("bh") == p.hgetall("bh")
            assert r.xrange("events") == p.xrange("events")
            assert abs(r.ttl("big") - p.ttl("big")) <= 1
        assert client(replica).xrange("events", count=1) != [] and stream_id
    finally:
        other.cleanup()


def test_replication_commands_need_their_rights(make_server):
    """PSYNC, SYNC and REPLCONF are @admin @dangerous, as in Redis: an unauthenticated
    client gets NOAUTH, a user without @admin NOPERM, and neither becomes a replica."""
    server = make_server(extra=["--requirepass", "s3cret"])
    anon = redis.Redis(port=server.resp_port, socket_timeout=5)
    for command in (("PSYNC", "?", "-1"), ("SYNC",), ("REPLCONF", "capa", "eof")):
        with pytest.raises(redis.AuthenticationError):
            anon.execute_command(*command)
    admin = redis.Redis(port=server.resp_port, password="s3cret", socket_timeout=5)
    admin.execute_command("ACL", "SETUSER", "low", "on", ">pw", "~*", "+@all", "-@admin")
    low = redis.Redis(port=server.resp_port, username="low", password="pw", socket_timeout=5)
    for command in (("PSYNC", "?", "-1"), ("SYNC",), ("REPLCONF", "capa", "eof"),
                    ("REPLICAOF", "127.0.0.1", "1"), ("FAILOVER",)):
        with pytest.raises(redis.exceptions.NoPermissionError):
            low.execute_command(*command)
    assert admin.info("replication")["connected_slaves"] == 0
    assert admin.info("replication")["role"] == "master"
