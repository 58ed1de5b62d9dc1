"""Replication divergences the soak (test_replication_soak.py) found, each reduced to the
smallest case: the primary does one thing, and every replica (a Spinel one and a real
redis-server one) must end with exactly what the primary holds.
"""

import threading
import time

import pytest

from test_replication import (client, follow, redis_replica_of, snapshot, wait_until,
                              caught_up)

pytestmark = pytest.mark.resp


@pytest.fixture
def trio(make_server):
    """A primary, a Spinel replica and a redis-server replica, all caught up."""
    primary, replica = make_server(), make_server()
    follow(replica, primary.resp_port)
    theirs = redis_replica_of(primary)
    try:
        try:
            wait_until(lambda: caught_up(primary, replica) and caught_up(primary, theirs),
                       what="the first sync")
        except AssertionError:
            for server in (primary, replica, theirs):
                print(client(server).info("replication"), server.describe()[-2000:])
            raise
        yield primary, replica, theirs
    finally:
        theirs.cleanup()


def converged(trio, dbs=(0,)):
    primary, *replicas = trio
    wait_until(lambda: all(caught_up(primary, r) for r in replicas), what="catch up")
    want = snapshot(client(primary), dbs)
    for r in replicas:
        assert snapshot(client(r), dbs) == want, f"replica :{r.resp_port}"
    return want


def blocked(primary, command, *args):
    """Runs a blocking command on its own connection; returns the thread and its reply
    box, once the server counts the client as blocked."""
    box = []
    c = client(primary)
    thread = threading.Thread(target=lambda: box.append(c.execute_command(command, *args)))
    thread.start()
    wait_until(lambda: client(primary).info("clients")["blocked_clients"] == 1, what="blocked")
    return thread, box


@pytest.mark.parametrize("command,args,left", [
    ("BLPOP", ("q", 5), b"b"),
    ("BLMOVE", ("q", "dst", "LEFT", "RIGHT", 5), b"b"),
    ("BRPOPLPUSH", ("q", "dst", 5), b"a"),
])
def test_a_pop_served_to_a_blocked_client_reaches_the_replicas(trio, command, args, left):
    """A client blocks on an empty list; another client's RPUSH serves it. The element
    it popped (and, for BLMOVE, where it went) must be gone on the replicas too."""
    primary = trio[0]
    thread, box = blocked(primary, command, *args)
    client(primary).rpush("q", "a", "b")
    thread.join(10)
    assert box, "the blocked client was not served"
    want = converged(trio)
    assert want[(0, b"q")][1] == [left]


def test_a_zpop_served_to_a_blocked_client_reaches_the_replicas(trio):
    primary = trio[0]
    thread, box = blocked(primary, "BZPOPMIN", "z", 5)
    client(primary).zadd("z", {"a": 1, "b": 2})
    thread.join(10)
    assert box
    want = converged(trio)
    assert want[(0, b"z")][1] == [(b"b", 2.0)]


def stream_state(server, key="x"):
    """The stream's entries, groups, PEL (with delivery counts) and consumers."""
    import repl_soak_kit
    return repl_soak_kit._stream(client(server), key)


def streams_converged(trio):
    primary, *replicas = trio
    wait_until(lambda: all(caught_up(primary, r) for r in replicas), what="catch up")
    want = stream_state(primary)
    for r in replicas:
        assert stream_state(r) == want, f"replica :{r.resp_port}"
    return want


# Spinel only: a redis-server primary's own replicas lose a group's entries-read (None
# there, 1 on the primary) through XREADGROUP's propagation, so the comparison is not one
# real Redis passes.
@pytest.mark.spinel_only
@pytest.mark.parametrize("step", ["xreadgroup", "xack", "xclaim", "xautoclaim"])
def test_consumer_group_changes_reach_the_replicas(trio, step):
    """XREADGROUP, XACK, XCLAIM and XAUTOCLAIM change a group (its last delivered ID,
    its pending entries, their delivery counts and owners) without a keyspace event of
    their own once the consumer exists: the replicas must see the change all the same."""
    p = client(trio[0])
    for i in range(4):
        p.xadd("x", {"f": i}, id=f"{i + 1}-0")
    p.xgroup_create("x", "g", id="0")
    p.xreadgroup("g", "c1", {"x": ">"}, count=1)  # makes consumer c1
    p.xgroup_createconsumer("x", "g", "c2")
    streams_converged(trio)
    if step == "xreadgroup":
        p.xreadgroup("g", "c1", {"x": ">"}, count=2)
    elif step == "xack":
        p.xack("x", "g", "1-0")
    elif step == "xclaim":
        p.xclaim("x", "g", "c2", 0, ["1-0"])
    else:
        p.xautoclaim("x", "g", "c2", 0, count=1)
    want = streams_converged(trio)
    assert want[2], "the group is there"


@pytest.mark.spinel_only
def test_failover_completes_while_memcached_clients_write(make_server):
    """FAILOVER pauses writes until the target caught up. memcached clients write to the
    same store: they are refused meanwhile (SERVER_ERROR failover in progress), else the
    offset would keep moving, the target would never catch
    up and the failover gives up at its TIMEOUT (and any memcached write that lands
    after the target's last ACK would be lost in the handover)."""
    primary, replica = make_server(), make_server()
    follow(replica, primary.resp_port)
    wait_until(lambda: caught_up(primary, replica), what="sync")
    stop = threading.Event()

    def writer():
        import repl_soak_kit
        conn = repl_soak_kit.McConn(primary.mc_port)
        i = 0
        try:
            while not stop.is_set():
                conn.request(f"set mc{i % 50} 0 0 1\r\nx\r\n".encode())
                i += 1
        except (OSError, ConnectionError):
            pass  # the old primary refuses writes once it follows
        finally:
            conn.close()

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        time.sleep(0.3)
        assert client(primary).execute_command("FAILOVER", "TIMEOUT", 3000) == b"OK"
        wait_until(lambda: client(primary).info("replication")["master_failover_state"]
                   == "no-failover", timeout=10, what="the failover to end")
        assert client(replica).info("replication")["role"] == "master", \
            "the failover gave up: the target never caught up"
    finally:
        stop.set()
        thread.join(10)


@pytest.mark.spinel_only
def test_after_an_eof_marked_copy_the_stream_waits_for_the_first_ack(make_server):
    """A replica finds the copy's EOF mark only at the end of what it read: stream bytes
    sent right behind the mark (the primary's first PING, a write) hid it, and the replica
    waited for the end of its copy for ever (about one initial sync in ten). As Redis, the
    primary holds the stream until the replica's first REPLCONF ACK."""
    import socket as sockets
    primary = make_server()
    with sockets.create_connection(("127.0.0.1", primary.resp_port), timeout=5) as s:
        s.sendall(b"*5\r\n$8\r\nREPLCONF\r\n$4\r\ncapa\r\n$3\r\neof\r\n$4\r\ncapa\r\n"
                  b"$6\r\npsync2\r\n")
        assert s.recv(100) == b"+OK\r\n"
        s.sendall(b"*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n")
        got = b""
        while got.count(b"$EOF:") == 0 or len(got) < got.index(b"$EOF:") + 47:
            got += s.recv(65536)
        mark = got[got.index(b"$EOF:") + 5:got.index(b"$EOF:") + 45]
        while not got.endswith(mark):
            got += s.recv(65536)
        client(primary).set("k", "v")
        s.settimeout(0.5)
        with pytest.raises(sockets.timeout):
            extra = s.recv(65536)
            pytest.fail(f"stream bytes before the first ACK: {extra!r}")
        s.settimeout(5)
        s.sendall(b"*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$1\r\n0\r\n")
        stream = b""
        while b"$1\r\nk\r\n" not in stream:
            stream += s.recv(65536)


def test_a_promoted_replica_hands_its_new_id_to_its_own_replicas(make_server):
    """REPLICAOF NO ONE gives the promoted server a new replication ID. Its own replicas
    (a chained one) kept the old ID: their link went on, so a later FAILOVER to one of
    them was refused for ever (`PSYNC FAILOVER replid must match my replid`) with the
    writes paused. Redis disconnects them so they reconnect and learn the new ID."""
    primary, mid, leaf = make_server(), make_server(), make_server()
    follow(mid, primary.resp_port)
    follow(leaf, mid.resp_port)
    client(primary).set("k", "1")
    wait_until(lambda: caught_up(primary, mid) and caught_up(mid, leaf), what="sync")
    primary.stop()
    assert client(mid).execute_command("REPLICAOF", "NO", "ONE") == b"OK"
    new_id = client(mid).info("replication")["master_replid"]
    wait_until(lambda: client(leaf).info("replication")["master_replid"] == new_id,
               what="the chained replica to learn the new ID")
    client(mid).set("k", "2")
    wait_until(lambda: caught_up(mid, leaf), what="catch up")
    assert client(mid).info("stats")["sync_partial_ok"] >= 1, "it continued, no new copy"
    assert client(mid).execute_command("FAILOVER", "TIMEOUT", 5000) == b"OK"
    wait_until(lambda: client(leaf).info("replication")["role"] == "master",
               what="the failover to the chained replica")
    assert client(leaf).get("k") == b"2"


@pytest.mark.spinel_only
def test_a_blocked_xreadgroup_served_by_an_xadd_reaches_the_replicas(trio):
    """XREADGROUP BLOCK served by another client's XADD moves the group (last delivered
    ID, pending entry) on the waiter's behalf: the replicas must see it."""
    p = client(trio[0])
    p.xgroup_create("x", "g", id="$", mkstream=True)
    p.xgroup_createconsumer("x", "g", "c")
    thread, box = blocked(trio[0], "XREADGROUP", "GROUP", "g", "c", "BLOCK", 5000,
                          "STREAMS", "x", ">")
    p.xadd("x", {"f": "v"}, id="5-0")
    thread.join(10)
    assert box and box[0], "the blocked client was not served"
    want = streams_converged(trio)
    assert want[2][0][3] == [(b"5-0", b"c", 1)]


@pytest.mark.spinel_only
@pytest.mark.parametrize("command", [b"gat 0 k\r\n", b"gats 0 k\r\n", b"gat 5000 k\r\n"])
def test_a_gat_moves_the_ttl_on_the_replicas_too(trio, command):
    """memcached's gat touches the item (its TTL changes) while it reads it: the replicas
    must get the new TTL. It was told only to tracking clients, so a replica kept the old
    one (here: the item expires on the replicas, not on the primary, after `gat 0`)."""
    import repl_soak_kit
    primary = trio[0]
    mc = repl_soak_kit.McConn(primary.mc_port)
    try:
        assert mc.request(b"set k 3 1000 1\r\nx\r\n") == [b"STORED"]
        assert mc.request(command)[-1] == b"END"
    finally:
        mc.close()
    want = converged(trio)
    ttl_ms = want[(0, b"k")]
    wait_until(lambda: all(abs(client(r).pttl("k") - client(primary).pttl("k")) < 1500
                           and (client(r).pttl("k") < 0) == (client(primary).pttl("k") < 0)
                           for r in trio[1:]), what=f"the TTL on the replicas ({ttl_ms})")
