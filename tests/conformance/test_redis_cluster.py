"""Redis Cluster protocol: Spinel as a cluster node, and the same scenarios against real
redis-server nodes (CONFORMANCE_TARGET=redis).

The clusters come from cluster_kit: every node starts with a written nodes.conf. Replies a
client can see are compared with what redis-server sends; the parts that differ by design
(no cluster bus: no gossip counters in CLUSTER INFO, no links) are not.
"""

import os
import random
import signal
import socket
import time

import pytest
import redis
from redis.cluster import RedisCluster

from cluster_kit import make_cluster  # noqa: F401

pytestmark = pytest.mark.resp


def crc16(data):
    """CRC16-XMODEM, bit by bit: an implementation independent of Spinel's table."""
    crc = 0
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def slot_of(key):
    key = key.encode() if isinstance(key, str) else key
    start = key.find(b"{")
    if start >= 0:
        end = key.find(b"}", start + 1)
        if end > start + 1:
            key = key[start + 1:end]
    return crc16(key) % 16384


class Error(str):
    """An error reply's text, without the `-`."""


class Conn:
    """One RESP connection: `call` sends a command and reads its reply (simple strings
    and bulk strings as bytes, errors as Error, maps as dicts)."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.file = self.sock.makefile("rb")

    def call(self, *args):
        out = b"*%d\r\n" % len(args)
        for arg in args:
            arg = arg if isinstance(arg, bytes) else str(arg).encode()
            out += b"$%d\r\n%s\r\n" % (len(arg), arg)
        self.sock.sendall(out)
        return self.read()

    def read(self):
        line = self.file.readline()[:-2]
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            return Error(rest.decode())
        if kind == b":":
            return int(rest)
        if kind in (b"$", b"="):
            n = int(rest)
            return None if n < 0 else self.file.read(n + 2)[:-2]
        if kind == b"_":
            return None
        if kind in (b"*", b"~"):
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        if kind == b"%":
            return {self.read(): self.read() for _ in range(int(rest))}
        raise AssertionError(f"unexpected reply line {line!r}")

    def close(self):
        self.file.close()
        self.sock.close()


def raw(port, *args):
    """One command on a fresh connection, and its reply."""
    conn = Conn(port)
    try:
        return conn.call(*args)
    finally:
        conn.close()


def node_client(node):
    return redis.Redis(port=node.port, socket_timeout=5)


def key_in_slot_of(node, prefix="k"):
    for n in range(100000):
        key = f"{prefix}{n}"
        if any(s <= slot_of(key) <= e for s, e in node.slots):
            return key
    raise AssertionError("no key found")


def test_keyslot_matches_crc16_and_hash_tags(make_cluster):
    cluster = make_cluster(primaries=1)
    client = node_client(cluster.nodes[0])
    rng = random.Random(7)
    keys = ["foo", "", "{user1000}.following", "{user1000}.followers", "foo{}{bar}",
            "foo{{bar}}zap", "foo{bar}{zap}", "{", "}", "{}", "a{b", "\u00e9t\u00e9"]
    keys += ["".join(rng.choice("abc{}xyz09") for _ in range(rng.randint(1, 12)))
             for _ in range(300)]
    for key in keys:
        assert client.execute_command("CLUSTER", "KEYSLOT", key) == slot_of(key), key
    assert client.execute_command("CLUSTER", "KEYSLOT", "foo") == 12182


def test_info_hello_and_myid(make_cluster):
    cluster = make_cluster(primaries=3)
    node = cluster.nodes[1]
    client = node_client(node)
    assert client.info("cluster") == {"cluster_enabled": 1}
    info = client.execute_command("CLUSTER", "INFO").decode()
    fields = dict(line.split(":", 1) for line in info.split("\r\n") if line)
    assert fields["cluster_state"] == "ok"
    assert fields["cluster_slots_assigned"] == "16384"
    assert fields["cluster_known_nodes"] == "3"
    assert fields["cluster_size"] == "3"
    assert client.execute_command("CLUSTER", "MYID").decode() == node.id
    hello = raw(node.port, "HELLO", "3")
    assert hello[b"mode"] == b"cluster"


def test_slots_and_nodes_describe_the_map(make_cluster):
    cluster = make_cluster(primaries=3)
    client = node_client(cluster.nodes[0])
    slots = client.execute_command("CLUSTER", "SLOTS")
    seen = sorted((int(r[0]), int(r[1]), int(r[2][1]), r[2][2].decode()) for r in slots)
    want = sorted((s, e, n.port, n.id) for n in cluster.primaries for s, e in n.slots)
    assert seen == want
    # The raw reply: each node is ip, port, id and an empty map of extra fields.
    first = raw(cluster.nodes[0].port, "CLUSTER", "SLOTS")[0]
    assert len(first[2]) == 4 and first[2][0] == b"127.0.0.1" and first[2][3] == []
    text = client.execute_command("CLUSTER", "NODES").decode()
    lines = [line.split() for line in text.splitlines()]
    assert len(lines) == 3
    by_id = {fields[0]: fields for fields in lines}
    for node in cluster.nodes:
        fields = by_id[node.id]
        assert fields[1].startswith(f"127.0.0.1:{node.port}@{node.port + 10000}")
        flags = fields[2].split(",")
        assert ("myself" in flags) == (node is cluster.nodes[0])
        assert "master" in flags and fields[3] == "-" and fields[7] == "connected"
        assert fields[8:] == [f"{s}-{e}" for s, e in node.slots]
    shards = client.execute_command("CLUSTER", "SHARDS")
    assert len(shards) == 3
    for shard in shards:
        shard = dict(zip(shard[::2], shard[1::2]))
        node = dict(zip(shard[b"nodes"][0][::2], shard[b"nodes"][0][1::2]))
        assert node[b"role"] == b"master" and node[b"health"] == b"online"
        owner = next(n for n in cluster.nodes if n.id == node[b"id"].decode())
        assert shard[b"slots"] == [s for r in owner.slots for s in r]
        assert node[b"port"] == owner.port and node[b"endpoint"] == b"127.0.0.1"


def test_moved_crossslot_and_hash_tags(make_cluster):
    cluster = make_cluster(primaries=3)
    first, second = cluster.nodes[0], cluster.nodes[1]
    key = key_in_slot_of(second)
    reply = raw(first.port, "GET", key)
    assert isinstance(reply, Error) and reply == f"MOVED {slot_of(key)} 127.0.0.1:{second.port}"
    assert str(raw(first.port, "MGET", "a", "b")) == \
        "CROSSSLOT Keys in request don't hash to the same slot"
    tagged = [f"{{{key}}}.{n}" for n in range(5)]
    # Tagged keys all hash like `key`: one node serves them all, in one command.
    assert raw(second.port, "MSET", *[x for k in tagged for x in (k, k)]) == b"OK"
    assert raw(second.port, "MGET", *tagged) == [k.encode() for k in tagged]
    assert str(raw(first.port, "DEL", *tagged)).startswith("MOVED")
    # Commands without keys run anywhere.
    assert raw(first.port, "PING") == b"PONG"
    assert raw(first.port, "DBSIZE") == 0
    assert str(raw(first.port, "SELECT", "1")) == "ERR SELECT is not allowed in cluster mode"
    assert raw(first.port, "SELECT", "0") == b"OK"


def test_transactions_are_routed_by_their_keys(make_cluster):
    cluster = make_cluster(primaries=2)
    first, second = cluster.nodes
    mine, theirs = key_in_slot_of(first, "a"), key_in_slot_of(second, "b")
    conn = Conn(first.port)
    call = conn.call
    assert call("MULTI") == b"OK"
    assert call("SET", mine, "1") == b"QUEUED"
    assert str(call("SET", theirs, "1")).startswith("MOVED")
    assert str(call("EXEC")).startswith("EXECABORT")
    # Keys of two slots of this node, queued one by one, meet at EXEC.
    other = key_in_slot_of(first, "c")
    while slot_of(other) == slot_of(mine):
        other = key_in_slot_of(first, other + "x")
    assert call("MULTI") == b"OK"
    assert call("SET", mine, "1") == b"QUEUED"
    assert call("SET", other, "1") == b"QUEUED"
    assert str(call("EXEC")) == "CROSSSLOT Keys in request don't hash to the same slot"
    assert str(call("EXEC")) == "ERR EXEC without MULTI"
    assert call("GET", mine) is None


def test_readonly_readwrite_asking_answer_ok(make_cluster):
    cluster = make_cluster(primaries=1)
    port = cluster.nodes[0].port
    for command in ("READONLY", "READWRITE", "ASKING"):
        assert raw(port, command) == b"OK"


def test_redis_py_cluster_client(make_cluster):
    cluster = make_cluster(primaries=3)
    client = RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port)
    try:
        for n in range(300):
            client.set(f"key:{n}", n)
        assert [int(client.get(f"key:{n}")) for n in range(300)] == list(range(300))
        counts = [node_client(node).dbsize() for node in cluster.primaries]
        assert sum(counts) == 300 and all(count > 50 for count in counts)
        assert client.mset({"{t}a": "1", "{t}b": "2"}) is True
        assert client.mget("{t}a", "{t}b") == [b"1", b"2"]
        pipe = client.pipeline()
        for n in range(100):
            pipe.incr(f"counter:{n}")
        assert pipe.execute() == [1] * 100
        assert client.hset("{h}hash", mapping={"f": "v"}) == 1
        assert client.hgetall("{h}hash") == {b"f": b"v"}
        assert client.lpush("{l}list", "a", "b") == 2
        assert client.keyslot("{t}a") == slot_of("{t}a")
    finally:
        client.close()


def setslot_everywhere(cluster, slot, owner):
    for node in cluster.nodes:
        raw(node.port, "CLUSTER", "SETSLOT", slot, "NODE", owner.id)


def test_slot_migration_with_ask_and_asking(make_cluster):
    cluster = make_cluster(primaries=2)
    source, target = cluster.nodes
    moved_key = key_in_slot_of(source, "m")
    slot = slot_of(moved_key)
    stay_key = next(f"{{{moved_key}}}s{n}" for n in range(1))
    assert raw(source.port, "SET", stay_key, "on-source") == b"OK"
    assert raw(target.port, "CLUSTER", "SETSLOT", slot, "IMPORTING", source.id) == b"OK"
    assert raw(source.port, "CLUSTER", "SETSLOT", slot, "MIGRATING", target.id) == b"OK"
    # The source still serves the keys it has; a key it lacks is asked of the target.
    assert raw(source.port, "GET", stay_key) == b"on-source"
    ask = str(raw(source.port, "GET", moved_key))
    assert ask == f"ASK {slot} 127.0.0.1:{target.port}"
    # Two keys of the slot, one here and one gone: TRYAGAIN.
    assert str(raw(source.port, "MGET", stay_key, moved_key)).startswith("TRYAGAIN")
    # On the target, without ASKING: MOVED back to the owner; with it: served.
    assert str(raw(target.port, "GET", moved_key)) == f"MOVED {slot} 127.0.0.1:{source.port}"
    conn = Conn(target.port)
    assert conn.call("ASKING") == b"OK"
    assert conn.call("SET", moved_key, "on-target") == b"OK"
    # ASKING lasts one command.
    assert str(conn.call("GET", moved_key)).startswith("MOVED")
    conn.close()
    # The source cannot give the slot away while it holds a key of it.
    refused = str(raw(source.port, "CLUSTER", "SETSLOT", slot, "NODE", target.id))
    assert refused == (f"ERR Can't assign hashslot {slot} to a different node while I still hold "
                       "keys for this hash slot.")
    assert raw(source.port, "DEL", stay_key) == 1
    setslot_everywhere(cluster, slot, target)
    assert raw(target.port, "GET", moved_key) == b"on-target"
    assert str(raw(source.port, "GET", moved_key)) == f"MOVED {slot} 127.0.0.1:{target.port}"
    nodes = raw(source.port, "CLUSTER", "NODES").decode()
    assert "->-" not in nodes and "-<-" not in nodes
    assert raw(source.port, "CLUSTER", "COUNTKEYSINSLOT", slot) == 0
    assert raw(target.port, "CLUSTER", "COUNTKEYSINSLOT", slot) == 1
    assert raw(target.port, "CLUSTER", "GETKEYSINSLOT", slot, 10) == [moved_key.encode()]


def test_setslot_errors(make_cluster):
    cluster = make_cluster(primaries=2)
    first, second = cluster.nodes
    theirs = second.slots[0][0]
    mine = first.slots[0][0]
    cases = [
        (("CLUSTER", "SETSLOT", mine, "BOGUS"),
         "Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP"),
        (("CLUSTER", "SETSLOT", 16384, "STABLE"), "Invalid or out of range slot"),
        (("CLUSTER", "SETSLOT", mine, "NODE", "abc"), "Unknown node abc"),
        (("CLUSTER", "SETSLOT", mine, "MIGRATING", "abc"), "I don't know about node abc"),
        (("CLUSTER", "SETSLOT", theirs, "MIGRATING", second.id),
         f"I'm not the owner of hash slot {theirs}"),
        (("CLUSTER", "SETSLOT", mine, "IMPORTING", second.id),
         f"I'm already the owner of hash slot {mine}"),
        (("CLUSTER", "COUNTKEYSINSLOT", 20000), "Invalid slot"),
        (("CLUSTER", "GETKEYSINSLOT", 1, -1), "Invalid slot or number of keys"),
        (("CLUSTER", "GETKEYSINSLOT", 16384, 1), "Invalid slot or number of keys"),
        (("CLUSTER", "GETKEYSINSLOT", "x", 1), "value is not an integer or out of range"),
        (("CLUSTER", "COUNTKEYSINSLOT", "x"), "value is not an integer or out of range"),
        (("CLUSTER", "COUNTKEYSINSLOT", -1), "Invalid slot"),
        (("CLUSTER", "SETSLOT", "x", "STABLE"), "Invalid or out of range slot"),
        (("CLUSTER", "SETSLOT", theirs, "MIGRATING", "abc"),
         f"I'm not the owner of hash slot {theirs}"),
        (("CLUSTER", "SETSLOT", mine, "IMPORTING", "abc"),
         f"I'm already the owner of hash slot {mine}"),
        (("CLUSTER", "SETSLOT", theirs, "IMPORTING", "abc"), "I don't know about node abc"),
        (("CLUSTER", "DELSLOTS", mine, mine), f"Slot {mine} specified multiple times"),
        (("CLUSTER", "ADDSLOTSRANGE", 10, 5), "start slot number 10 is greater than end slot number 5"),
        (("CLUSTER", "COUNT-FAILURE-REPORTS", "abc"), "Unknown node abc"),
        (("CLUSTER", "FORGET", first.id), "I tried hard but I can't forget myself..."),
        (("CLUSTER", "FORGET", "abc"), "Unknown node abc"),
        (("CLUSTER", "NOPE"), "unknown subcommand 'NOPE'. Try CLUSTER HELP."),
        (("CLUSTER", "ADDSLOTS", mine), f"Slot {mine} is already busy"),
        (("CLUSTER", "REPLICAS", "abc"), "Unknown node abc"),
    ]
    for command, message in cases:
        assert str(raw(first.port, *command)) == "ERR " + message, command
    assert raw(first.port, "CLUSTER", "REPLICAS", first.id) == []
    help_lines = raw(first.port, "CLUSTER", "HELP")
    assert help_lines[0].startswith(b"CLUSTER <subcommand>") and len(help_lines) > 40


def test_replica_lines_and_readonly(make_cluster, target):
    cluster = make_cluster(primaries=3, replicas=1)
    primary = cluster.primaries[0]
    replica = next(n for n in cluster.nodes if n.primary is primary)
    client = node_client(primary)
    # CLUSTER SLOTS lists a replica once it has replicated something (redis-server); a
    # Spinel node lists every replica not known to have failed (each is fed from its start).
    want = [primary.port, replica.port]
    deadline = time.monotonic() + 10
    while True:
        slots = client.execute_command("CLUSTER", "SLOTS")
        entry = next(r for r in slots if int(r[2][1]) == primary.port)
        if [int(n[1]) for n in entry[2:]] == want or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert [int(n[1]) for n in entry[2:]] == want
    lines = client.execute_command("CLUSTER", "REPLICAS", primary.id)
    assert len(lines) == 1 and lines[0].split()[0].decode() == replica.id
    assert lines[0].split()[3].decode() == primary.id
    key = key_in_slot_of(primary)
    # A replica redirects to its primary, unless the connection said READONLY (a read).
    assert str(raw(replica.port, "GET", key)) == f"MOVED {slot_of(key)} 127.0.0.1:{primary.port}"
    # ROLE and INFO replication: the replica names its primary, and is connected once its
    # replication link has synced.
    assert raw(primary.port, "ROLE")[0] == b"master"
    deadline = time.monotonic() + 10
    while raw(replica.port, "ROLE")[3] != b"connected" and time.monotonic() < deadline:
        time.sleep(0.1)
    role = raw(replica.port, "ROLE")
    assert role[:4] == [b"slave", b"127.0.0.1", primary.port, b"connected"]
    info = node_client(replica).info("replication")
    assert info["role"] == "slave" and info["master_port"] == primary.port
    conn = Conn(replica.port)
    assert conn.call("READONLY") == b"OK"
    assert conn.call("GET", key) is None
    assert str(conn.call("SET", key, "v")).startswith("MOVED")
    conn.close()


def test_disabled_without_cluster_mode(make_server, target):
    server = make_server()
    assert raw(server.resp_port, "ROLE") == [b"master", 0, []]
    for command in (("CLUSTER", "INFO"), ("CLUSTER", "SLOTS"), ("READONLY",), ("ASKING",)):
        assert str(raw(server.resp_port, *command)) == \
            "ERR This instance has cluster support disabled", command
    assert raw(server.resp_port, "INFO", "cluster") == b"# Cluster\r\ncluster_enabled:0\r\n"


# ------------------------------------------------------------------------------------------
# Spinel's own: the map comes from the file (no cluster bus).


def spinel_only(target):
    if target != "spinel":
        pytest.skip("Spinel reads its map from the file; redis-server gossips it")


def read_conf(cluster, node):
    with open(cluster.conf_path(node)) as f:
        return f.read()


def test_setslot_rewrites_the_config_file(make_cluster, target):
    spinel_only(target)
    cluster = make_cluster(primaries=2)
    first, second = cluster.nodes
    slot = first.slots[0][1]  # the last slot of the first node
    setslot_everywhere(cluster, slot, second)
    text = read_conf(cluster, first)
    mine = next(line for line in text.splitlines() if line.startswith(first.id))
    theirs = next(line for line in text.splitlines() if line.startswith(second.id))
    assert mine.split()[8:] == [f"0-{slot - 1}"]
    assert theirs.split()[8:] == [f"{slot}-16383"]
    assert text.splitlines()[-1].startswith("vars currentEpoch")
    # Restarted, the node reads back the map it wrote.
    first.server.cleanup()
    cluster.start(first, write=False)
    slots = node_client(first).execute_command("CLUSTER", "SLOTS")
    assert sorted((int(r[0]), int(r[1]), int(r[2][1])) for r in slots) == \
        [(0, slot - 1, first.port), (slot, 16383, second.port)]


def test_sighup_reloads_the_map_and_a_killed_node_is_replaced(make_cluster, target):
    spinel_only(target)
    cluster = make_cluster(primaries=3)
    client = RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port)
    try:
        for n in range(300):
            client.set(f"user:{n}", n)
        dead = cluster.nodes[2]
        dead.server.cleanup()
        # The operator gives the dead node's slots to the first node and tells every node.
        heir = cluster.nodes[0]
        heir.slots = heir.slots + dead.slots
        dead.slots = []
        for node in cluster.nodes[:2]:
            cluster.write_conf(node)
            node.server.signal(signal.SIGHUP)
        deadline = time.monotonic() + 10
        dead_slot = 16383

        def owner_port(node):
            ranges = raw(node.port, "CLUSTER", "SLOTS")
            return next(int(r[2][1]) for r in ranges if int(r[0]) <= dead_slot <= int(r[1]))

        while any(owner_port(node) != heir.port for node in cluster.nodes[:2]):
            assert time.monotonic() < deadline, "the map was not reloaded"
            time.sleep(0.05)
        # The client learns the new map from a MOVED (or a refresh) and goes on: keys that
        # lived on the dead node are gone (a cache), the others are all there.
        lost = 0
        for n in range(300):
            for attempt in range(5):
                try:
                    value = client.get(f"user:{n}")
                    break
                except (redis.exceptions.ConnectionError, redis.exceptions.ClusterDownError,
                        redis.exceptions.TimeoutError):
                    time.sleep(0.2)
            else:
                raise AssertionError(f"user:{n} unreachable")
            if value is None:
                lost += 1
            else:
                assert int(value) == n
        assert 0 < lost < 300
        assert client.set("after", "1") and client.get("after") == b"1"
    finally:
        client.close()


def test_a_bad_config_file_refuses_the_start(tmp_path, target):
    spinel_only(target)
    from conftest import Server, free_port, spinel_bin

    (tmp_path / "nodes.conf").write_text("not a nodes file\n")
    port = free_port()
    argv = [spinel_bin(), "-p", str(free_port()), "--resp-port", str(port), "-l", "127.0.0.1",
            "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
            "--dir", str(tmp_path)]
    server = Server("spinel", argv, resp_port=port)
    try:
        assert server.proc.wait(10) != 0
        assert "corrupted cluster config file" in server.stderr()
    finally:
        server.cleanup()


def test_a_new_node_writes_its_own_file(tmp_path, target):
    spinel_only(target)
    from conftest import Server, free_port, spinel_bin

    port = free_port()
    argv = [spinel_bin(), "-p", str(free_port()), "--resp-port", str(port), "-l", "127.0.0.1",
            "--cluster-enabled", "yes", "--dir", str(tmp_path)]
    server = Server("spinel", argv, resp_port=port).wait_ready()
    try:
        text = (tmp_path / "nodes.conf").read_text().splitlines()
        fields = text[0].split()
        assert len(fields[0]) == 40 and fields[2] == "myself,master"
        bus_port = port + 10000 if port + 10000 < 65536 else 0
        assert fields[1] == f"127.0.0.1:{port}@{bus_port}"
        assert text[1] == "vars currentEpoch 0 lastVoteEpoch 0"
        assert raw(port, "CLUSTER", "MYID").decode() == fields[0]
        # No slot is served yet: the cluster is down for keys until slots are added.
        assert str(raw(port, "GET", "k")) == "CLUSTERDOWN Hash slot not served"
        assert raw(port, "CLUSTER", "ADDSLOTSRANGE", 0, 16383) == b"OK"
        assert raw(port, "SET", "k", "v") == b"OK"
        assert (tmp_path / "nodes.conf").read_text().splitlines()[0].endswith(" 0-16383")
    finally:
        server.cleanup()


def test_scripts_keep_to_this_nodes_keys_and_one_slot(make_cluster):
    cluster = make_cluster(primaries=1)
    port = cluster.nodes[0].port
    two_slots = "redis.call('set', 'foo', 'bar')\nredis.call('set', 'bar', 'foo')\nreturn 'OK'"
    # Without a shebang, as before Redis 7: keys of several slots are allowed.
    assert raw(port, "EVAL", two_slots, 0) == b"OK"
    refused = str(raw(port, "EVAL", "#!lua\n" + two_slots, 0))
    assert refused.startswith(
        "ERR Script attempted to access keys that do not hash to the same slot"), refused
    allowed = "#!lua flags=allow-cross-slot-keys\n" + two_slots
    assert raw(port, "EVAL", allowed, 0) == b"OK"
    # A declared key sets the slot the script must keep to.
    declared = "#!lua\nredis.call('get', KEYS[1])\nreturn redis.call('get', 'bar')"
    assert str(raw(port, "EVAL", declared, 1, "foo")).startswith(
        "ERR Script attempted to access keys that do not hash to the same slot")
    assert raw(port, "EVAL", declared, 1, "{bar}x") == b"foo"
    assert str(raw(port, "EVAL", "#!lua flags=no-cluster\nreturn 1", 0)) == \
        "ERR Can not run script on cluster, 'no-cluster' flag is set."
    library = ("#!lua name=slots\nredis.register_function('two', function(keys, args)\n"
               + two_slots.replace("\n", " ") + " end)")
    assert raw(port, "FUNCTION", "LOAD", library) == b"slots"
    assert str(raw(port, "FCALL", "two", 0)).startswith(
        "ERR Script attempted to access keys that do not hash to the same slot")


def test_scripts_refuse_keys_of_other_nodes(make_cluster):
    cluster = make_cluster(primaries=2)
    first, second = cluster.nodes
    theirs = key_in_slot_of(second)
    body = f"return redis.call('get', '{theirs}')"
    refused = str(raw(first.port, "EVAL", body, 0))
    assert refused.startswith(
        "ERR Script attempted to access a non local key in a cluster node"), refused
