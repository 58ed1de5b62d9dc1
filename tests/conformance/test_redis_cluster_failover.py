"""Cluster replicas fed by their primaries, and CLUSTER FAILOVER (default, FORCE, TAKEOVER)
and CLUSTER REPLICATE: Spinel nodes, and the same scenarios against real redis-server
nodes (CONFORMANCE_TARGET=redis).

A cluster of 3 primaries and 3 replicas (cluster_kit) is written to through redis-py's
RedisCluster; the replicas must hold what was written (read with READONLY), CLUSTER
FAILOVER on a replica must make it the primary of its slots on every node's map, the old
primary must follow it, and the cluster client must go on writing and reading every key.
Every wait is bounded.
"""

import time

import pytest
import redis
from redis.cluster import RedisCluster

from cluster_kit import make_cluster  # noqa: F401
from waits import wait_for

pytestmark = pytest.mark.resp

WAIT_S = 20
KEYS = 300


def call(port, *args):
    """One command on a fresh connection: the reply, or the error's text as a str."""
    client = redis.Redis(port=port, socket_timeout=5)
    try:
        return client.execute_command(*args)
    except redis.ResponseError as error:
        return str(error)
    finally:
        client.close()


def wait_until(check, what, timeout=WAIT_S):
    return wait_for(check, what, timeout, interval=0.1)


def replica_of(cluster, primary):
    return next(node for node in cluster.nodes if node.primary is primary)


def role(node):
    return call(node.port, "ROLE")


def synced(primary, replica):
    """The replica's link is up and it processed every byte its primary journaled."""
    offset = redis.Redis(port=primary.port).info("replication")["master_repl_offset"]
    now = role(replica)
    return now[0] == b"slave" and now[3] == b"connected" and now[4] == offset


def cluster_with_replicas(make_cluster):
    """3 primaries and a replica each, every replica's first copy taken (writes start
    then: a copy under a stream of writes is the replication suite's matter)."""
    cluster = make_cluster(primaries=3, replicas=1)
    for primary in cluster.primaries:
        replica = replica_of(cluster, primary)
        wait_until(lambda: synced(primary, replica), f"replica {replica.port} in sync")
    return cluster


def slot_owner_port(node, slot):
    for entry in call(node.port, "CLUSTER", "SLOTS"):
        if int(entry[0]) <= slot <= int(entry[1]):
            return int(entry[2][1])
    return None


def readonly_get(node, key):
    client = redis.Redis(port=node.port, socket_timeout=5)
    try:
        client.execute_command("READONLY")
        return client.get(key)
    finally:
        client.close()


def fill(client, tag):
    for n in range(KEYS):
        client.set(f"key:{n}", f"{tag}:{n}")


def assert_all(client, tag):
    values = [client.get(f"key:{n}") for n in range(KEYS)]
    assert values == [f"{tag}:{n}".encode() for n in range(KEYS)]


def test_replicas_are_fed_by_their_primaries(make_cluster):
    cluster = cluster_with_replicas(make_cluster)
    client = RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port)
    try:
        fill(client, "a")
        for primary in cluster.primaries:
            replica = replica_of(cluster, primary)
            wait_until(lambda: synced(primary, replica), f"replica {replica.port} in sync")
            assert redis.Redis(port=replica.port).dbsize() == \
                redis.Redis(port=primary.port).dbsize() > 50
        first = cluster.primaries[0]
        replica = replica_of(cluster, first)
        key = next(f"key:{n}" for n in range(KEYS)
                   if cluster.node_of_slot(client.keyslot(f"key:{n}")) is first)
        slot = client.keyslot(key)
        # Reads with READONLY are served; without it, and for writes, MOVED to the primary;
        # a write without a key is refused as a read-only replica's.
        assert readonly_get(replica, key) == key.replace("key", "a").encode()
        assert call(replica.port, "GET", key) == f"MOVED {slot} 127.0.0.1:{first.port}"
        assert call(replica.port, "SET", key, "x") == f"MOVED {slot} 127.0.0.1:{first.port}"
        with pytest.raises(redis.exceptions.ReadOnlyError):
            redis.Redis(port=replica.port).flushall()
        # A write reaches the replica too.
        client.set(key, "changed")
        wait_until(lambda: readonly_get(replica, key) == b"changed", "the write replicated")

        # CLUSTER SLOTS lists the replica (redis-server once its offset reached the primary
        # over the bus).
        def listed():
            entry = next(e for e in call(first.port, "CLUSTER", "SLOTS")
                         if int(e[2][1]) == first.port)
            return [int(node[1]) for node in entry[2:]] == [first.port, replica.port]

        wait_until(listed, "CLUSTER SLOTS to list the replica")
    finally:
        client.close()


def converged(cluster, new, old, slot, link_up=True):
    """Every node's map gives `slot` to `new`; `old` follows `new` (its link up)."""
    if any(slot_owner_port(node, slot) != new.port for node in cluster.nodes):
        return False
    now = role(old)
    return role(new)[0] == b"master" and now[:3] == [b"slave", b"127.0.0.1", new.port] \
        and (now[3] == b"connected" or not link_up)


@pytest.mark.parametrize("mode", [(), ("FORCE",), ("TAKEOVER",)],
                         ids=["default", "force", "takeover"])
def test_cluster_failover_promotes_the_replica(make_cluster, mode):
    cluster = cluster_with_replicas(make_cluster)
    client = RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port)
    try:
        fill(client, "before")
        old = cluster.primaries[0]
        new = replica_of(cluster, old)
        wait_until(lambda: synced(old, new), "the replica in sync")
        epoch_before = int(call(new.port, "CLUSTER", "INFO").decode().split(
            "cluster_current_epoch:")[1].split()[0])
        assert call(new.port, "CLUSTER", "FAILOVER", *mode) == b"OK"
        slot = old.slots[0][0]
        wait_until(lambda: converged(cluster, new, old, slot), "the map to follow the failover")
        info = call(new.port, "CLUSTER", "INFO").decode()
        assert "cluster_state:ok" in info
        my_epoch = int(info.split("cluster_my_epoch:")[1].split()[0])
        assert my_epoch > epoch_before
        nodes = call(old.port, "CLUSTER", "NODES").decode().splitlines()
        mine = next(line.split() for line in nodes if line.startswith(old.id))
        assert mine[2] == "myself,slave" and mine[3] == new.id
        # Nothing written before is lost, and the client writes and reads every key on.
        assert_all(client, "before")
        fill(client, "after")
        assert_all(client, "after")
        owned = [f"key:{n}" for n in range(KEYS)
                 if old.slots[0][0] <= client.keyslot(f"key:{n}") <= old.slots[0][1]]
        assert len(owned) > 50
        # The old primary is fed by the new one, and redirects writes to it.
        wait_until(lambda: all(readonly_get(old, k) == k.replace("key", "after").encode()
                               for k in owned), "the old primary to follow the new one")
        moved = call(old.port, "SET", owned[0], "x")
        assert moved == f"MOVED {client.keyslot(owned[0])} 127.0.0.1:{new.port}"
    finally:
        client.close()


def test_failover_and_replicate_errors(make_cluster):
    cluster = make_cluster(primaries=3, replicas=1)
    first, second = cluster.primaries[0], cluster.primaries[1]
    replica = replica_of(cluster, first)
    other_replica = replica_of(cluster, second)
    for args, message in [
        (("FAILOVER",), "You should send CLUSTER FAILOVER to a replica"),
        (("FAILOVER", "FORCE"), "You should send CLUSTER FAILOVER to a replica"),
        (("FAILOVER", "bogus"), "syntax error"),
        (("FAILOVER", "FORCE", "x"),
         "unknown subcommand or wrong number of arguments for 'FAILOVER'. Try CLUSTER HELP."),
        (("REPLICATE",), "wrong number of arguments for 'cluster|replicate' command"),
        (("REPLICATE", "abc"), "Unknown node abc"),
        (("REPLICATE", first.id), "Can't replicate myself"),
        (("REPLICATE", replica.id), "I can only replicate a master, not a replica."),
        (("REPLICATE", second.id),
         "To set a master the node must be empty and without assigned slots."),
    ]:
        assert call(first.port, "CLUSTER", *args) == message, args
    assert call(replica.port, "CLUSTER", "FAILOVER", "takeover", "x").startswith("unknown sub")
    assert call(replica.port, "CLUSTER", "REPLICATE", replica.id) == "Can't replicate myself"
    assert call(replica.port, "CLUSTER", "REPLICATE", other_replica.id) == \
        "I can only replicate a master, not a replica."


def test_replicate_moves_a_replica_to_another_primary(make_cluster):
    cluster = cluster_with_replicas(make_cluster)
    client = RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port)
    try:
        fill(client, "v")
        first, second = cluster.primaries[0], cluster.primaries[1]
        replica = replica_of(cluster, first)
        assert call(replica.port, "CLUSTER", "REPLICATE", second.id) == b"OK"
        wait_until(lambda: role(replica)[:4] == [b"slave", b"127.0.0.1", second.port,
                                                 b"connected"], "the replica to follow")
        wait_until(lambda: synced(second, replica), "the replica in sync with its new primary")
        # Its data is the new primary's now.
        assert redis.Redis(port=replica.port).dbsize() == redis.Redis(port=second.port).dbsize()
        theirs = next(f"key:{n}" for n in range(KEYS)
                      if cluster.node_of_slot(client.keyslot(f"key:{n}")) is second)
        assert readonly_get(replica, theirs) == theirs.replace("key", "v").encode()
        wait_until(lambda: any(line.split()[0].decode() == replica.id
                               for line in call(second.port, "CLUSTER", "REPLICAS", second.id)),
                   "the primary to list its new replica")
    finally:
        client.close()


def test_default_failover_loses_no_acknowledged_write(make_cluster):
    """The default mode holds the primary's writes until the replica caught up: a client
    writing all along finds every acknowledged value afterwards."""
    import threading

    cluster = cluster_with_replicas(make_cluster)
    old = cluster.primaries[0]
    new = replica_of(cluster, old)
    client = RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port)
    keys = [f"w:{n}" for n in range(2000)
            if old.slots[0][0] <= client.keyslot(f"w:{n}") <= old.slots[0][1]][:40]
    acked = {}
    stop = threading.Event()

    def writer():
        round_ = 0
        while not stop.is_set():
            round_ += 1
            for key in keys:
                deadline = time.monotonic() + WAIT_S
                while True:  # SET is idempotent: retried until acknowledged
                    try:
                        client.set(key, round_)
                        acked[key] = round_
                        break
                    except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
                        assert time.monotonic() < deadline, f"{key} never acknowledged"
                        time.sleep(0.05)

    try:
        client.set(keys[0], 0)
        wait_until(lambda: synced(old, new), "the replica in sync")
        thread = threading.Thread(target=writer)
        thread.start()
        wait_until(lambda: len(acked) == len(keys), "a first round of writes")
        assert call(new.port, "CLUSTER", "FAILOVER") == b"OK"
        # The old primary's link may need a full copy under the writes (a PING it sent
        # after the offsets agreed): only the map is waited for here.
        wait_until(lambda: converged(cluster, new, old, old.slots[0][0], link_up=False),
                   "the failover")
        time.sleep(0.5)  # writes go on against the new primary
        stop.set()
        thread.join(WAIT_S)
        assert not thread.is_alive()
        direct = redis.Redis(port=new.port)
        for key in keys:
            assert int(direct.get(key)) == acked[key], key
    finally:
        stop.set()
        client.close()


def test_reset_turns_a_replica_into_an_empty_primary(make_cluster):
    cluster = cluster_with_replicas(make_cluster)
    client = RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port)
    try:
        fill(client, "v")
        primary = cluster.primaries[0]
        replica = replica_of(cluster, primary)
        wait_until(lambda: synced(primary, replica), "the replica in sync")
        assert redis.Redis(port=replica.port).dbsize() > 50
        assert call(replica.port, "CLUSTER", "RESET", "SOFT") == b"OK"
        assert role(replica)[0] == b"master"
        assert redis.Redis(port=replica.port).dbsize() == 0
        time.sleep(1.5)  # a round of the map's reading later, still alone and empty
        assert role(replica)[0] == b"master"
        assert redis.Redis(port=replica.port).dbsize() == 0
        assert call(replica.port, "CLUSTER", "NODES").decode().count("\n") == 1
    finally:
        client.close()
