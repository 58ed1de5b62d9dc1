"""Failover with the tools users already run: three real `redis-sentinel` processes watch a
primary (the target: Spinel, or redis-server with CONFORMANCE_TARGET=redis) and its
replicas; on SIGKILL of the primary they promote a replica, reconfigure the other with
`MULTI / SLAVEOF / CONFIG REWRITE / CLIENT KILL / EXEC`, and a redis-py `Sentinel` client
(and ioredis's sentinel connector, and Jedis's JedisSentinelPool and RedisSentinelClient)
keeps writing across the switch.

Sentinel's timeouts are short (down-after-milliseconds 1000, failover-timeout 10000), so
each failover takes a few seconds; every wait is bounded (FAILOVER_TIMEOUT_S).
"""

import os
import queue
import select
import shutil
import signal
import statistics
import subprocess
import threading
import time

import pytest
import redis
from redis.sentinel import Sentinel

from clients import client_dir
from conftest import Server, free_port
from waits import wait_for

pytestmark = [pytest.mark.resp, pytest.mark.slow]

MASTER = "mymaster"
FAILOVER_TIMEOUT_S = 30
DISCOVERY_TIMEOUT_S = 20
SENTINELS = 3
REPLICAS = 2


def wait_until(check, timeout, what):
    return wait_for(check, what, timeout)


def exe(name):
    return shutil.which(name) or pytest.skip(f"{name} is not installed")


def start_redis(tmp_path, name, lines=()):
    """A redis-server started from a config file (so CONFIG REWRITE has one to write)."""
    port = free_port()
    conf = tmp_path / f"{name}.conf"
    conf.write_text("\n".join([f"port {port}", "bind 127.0.0.1", "save \"\"",
                               "appendonly no", f"dir {tmp_path}",
                               f"dbfilename {name}.rdb", *lines]) + "\n")
    server = Server("redis", [exe("redis-server"), str(conf)], resp_port=port)
    server.conf = conf
    return server.wait_ready()


def sentinel_argv(conf):
    """`redis-sentinel CONF`, or the same binary as `redis-server CONF --sentinel` where
    the redis-sentinel link is not installed (Debian's is a link to one binary)."""
    if shutil.which("redis-sentinel"):
        return [shutil.which("redis-sentinel"), str(conf)]
    return [exe("redis-server"), str(conf), "--sentinel"]


def start_sentinel(tmp_path, index, primary_port, quorum=2):
    port = free_port()
    conf = tmp_path / f"sentinel-{index}.conf"
    conf.write_text("\n".join([
        f"port {port}", "bind 127.0.0.1", f"dir {tmp_path}",
        f"sentinel monitor {MASTER} 127.0.0.1 {primary_port} {quorum}",
        f"sentinel down-after-milliseconds {MASTER} 1000",
        f"sentinel failover-timeout {MASTER} 10000",
        f"sentinel parallel-syncs {MASTER} 1",
    ]) + "\n")
    server = Server("sentinel", sentinel_argv(conf), resp_port=port)
    return server.wait_ready()


class Topology:
    """A primary, its replicas and the sentinels watching them; stopped by pid."""

    def __init__(self, primary, replicas, sentinels):
        self.primary = primary
        self.replicas = replicas
        self.sentinels = sentinels

    def servers(self):
        return [self.primary, *self.replicas, *self.sentinels]

    def sentinel_client(self, **kwargs):
        return Sentinel([("127.0.0.1", s.resp_port) for s in self.sentinels],
                        socket_timeout=0.5, **kwargs)

    def sentinel(self, i=0):
        return redis.Redis(port=self.sentinels[i].resp_port, socket_timeout=5,
                           decode_responses=True)

    def cleanup(self):
        for server in self.servers():
            server.cleanup()



def start_node(kind, make_server, tmp_path, name, lines=()):
    """A server of `kind` started from a redis.conf holding `lines`: Spinel (the matrix
    entry's, from `make_server`) with `--redis-conf`, redis-server with the file as its
    first argument."""
    if kind == "redis":
        return start_redis(tmp_path, name, lines)
    conf = tmp_path / f"{name}.conf"
    conf.write_text("\n".join([f"# {name}'s redis.conf (CONFIG REWRITE writes it)", *lines])
                    + "\n")
    server = make_server(extra=["--redis-conf", str(conf)])
    server.conf = conf
    return server


def build(kind, make_server, tmp_path, replica_lines=None):
    """The primary, REPLICAS replicas of it (each with its `replica_lines[i]` in its
    redis.conf) and SENTINELS sentinels, once every sentinel knows them all."""
    primary = start_node(kind, make_server, tmp_path, "primary")
    topology = Topology(primary, [], [])
    try:
        for i in range(REPLICAS):
            lines = [f"replicaof 127.0.0.1 {primary.resp_port}",
                     *(replica_lines[i] if replica_lines else [])]
            topology.replicas.append(
                start_node(kind, make_server, tmp_path, f"replica-{i}", lines))
        for i in range(SENTINELS):
            topology.sentinels.append(start_sentinel(tmp_path, i, primary.resp_port))
        wait_discovered(topology)
    except BaseException:
        topology.cleanup()
        raise
    return topology


def wait_discovered(topology):
    """Every sentinel knows both replicas (from the primary's INFO), each with its link
    up, and the other sentinels (from their hello messages, published on the watched
    servers' `__sentinel__:hello` channel)."""
    def replicas_up(s):
        replicas = s.sentinel_slaves(MASTER)
        return len(replicas) == REPLICAS and all(
            r["master-link-status"] == "ok" and "s_down" not in r["flags"] for r in replicas)

    for i in range(SENTINELS):
        s = topology.sentinel(i)
        wait_until(lambda: replicas_up(s), DISCOVERY_TIMEOUT_S, f"sentinel {i}'s replicas")
        wait_until(lambda: len(s.sentinel_sentinels(MASTER)) == SENTINELS - 1,
                   DISCOVERY_TIMEOUT_S, f"sentinel {i} to see the other sentinels")


def target_kind(target):
    return "redis" if target == "redis" else "spinel"


@pytest.fixture
def topology(make_server, tmp_path, target):
    t = build(target_kind(target), make_server, tmp_path)
    yield t
    t.cleanup()


def kill_and_time_failover(topology, key_prefix="k"):
    """SIGKILL the primary while a redis-py Sentinel client writes; the seconds until one
    of its writes lands on a new primary, and that primary's port."""
    sentinel = topology.sentinel_client()
    master = sentinel.master_for(MASTER, socket_timeout=0.5, socket_connect_timeout=0.5)
    old = ("127.0.0.1", topology.primary.resp_port)
    assert sentinel.discover_master(MASTER) == old
    master.set(f"{key_prefix}:before", "1")
    topology.primary.signal(signal.SIGKILL)
    killed_at = time.monotonic()
    n = 0
    while time.monotonic() - killed_at < FAILOVER_TIMEOUT_S:
        n += 1
        try:
            master.set(f"{key_prefix}:after", n)
            address = sentinel.discover_master(MASTER)
            if address != old:
                return time.monotonic() - killed_at, address[1]
        except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError):
            pass
        time.sleep(0.02)
    raise AssertionError(f"no writable new primary {FAILOVER_TIMEOUT_S}s after SIGKILL")


def follows(server, port):
    info = redis.Redis(port=server.resp_port, socket_timeout=5).info("replication")
    return info["role"] == "slave" and info["master_port"] == port \
        and info["master_link_status"] == "up"


def test_sentinels_discover_replicas_and_each_other(topology):
    s = topology.sentinel()
    master = s.sentinel_master(MASTER)
    assert master["port"] == topology.primary.resp_port
    assert "s_down" not in master["flags"] and master["num-slaves"] == REPLICAS
    replicas = s.sentinel_slaves(MASTER)
    assert sorted(r["port"] for r in replicas) == sorted(r.resp_port for r in topology.replicas)
    for r in replicas:
        assert r["slave-priority"] == 100 and r["master-port"] == topology.primary.resp_port
    # The primary lists the sentinels' connections under the names they gave them.
    names = [c["name"] for c in redis.Redis(port=topology.primary.resp_port).client_list()]
    assert sum(n.startswith("sentinel-") and n.endswith("-cmd") for n in names) == SENTINELS
    assert sum(n.startswith("sentinel-") and n.endswith("-pubsub") for n in names) == SENTINELS


def test_sigkill_of_the_primary_promotes_a_replica(topology):
    """The sentinels promote a replica, reconfigure the other (SLAVEOF and CONFIG REWRITE
    in one MULTI), and the redis-py client writes to the new primary; the data written
    before the kill is there."""
    primary = redis.Redis(port=topology.primary.resp_port, socket_timeout=5)
    primary.set("kept", "v")
    assert primary.execute_command("WAIT", REPLICAS, 5000) == REPLICAS
    seconds, port = kill_and_time_failover(topology)
    assert seconds < FAILOVER_TIMEOUT_S
    (promoted,) = [r for r in topology.replicas if r.resp_port == port]
    (other,) = [r for r in topology.replicas if r.resp_port != port]
    new = redis.Redis(port=port, socket_timeout=5)
    assert new.execute_command("ROLE")[0] == b"master"
    assert new.get("kept") == b"v"
    wait_until(lambda: follows(other, port), FAILOVER_TIMEOUT_S,
               "the other replica to follow the new primary")
    assert redis.Redis(port=other.resp_port).get("k:after") is not None
    # CONFIG REWRITE wrote the roles into the files: a restart keeps them.
    wait_until(lambda: f"replicaof 127.0.0.1 {port}" in other.conf.read_text(),
               FAILOVER_TIMEOUT_S, "the other replica's file to name the new primary")
    wait_until(lambda: "replicaof" not in promoted.conf.read_text(), FAILOVER_TIMEOUT_S,
               "the promoted replica's file to lose its replicaof line")


def test_replica_priority_zero_is_never_promoted(make_server, tmp_path, target):
    t = build(target_kind(target), make_server, tmp_path,
              replica_lines=[["replica-priority 0"], []])
    try:
        priorities = {r["port"]: r["slave-priority"]
                      for r in t.sentinel().sentinel_slaves(MASTER)}
        assert priorities == {t.replicas[0].resp_port: 0, t.replicas[1].resp_port: 100}
        _, port = kill_and_time_failover(t)
        assert port == t.replicas[1].resp_port
        wait_until(lambda: follows(t.replicas[0], port), FAILOVER_TIMEOUT_S,
                   "the priority-0 replica to follow the new primary")
    finally:
        t.cleanup()


def test_replica_announce_ip_and_port(make_server, tmp_path, target):
    """replica-announce-ip/-port reach the primary (REPLCONF ip-address and
    listening-port): its INFO slaveN line and ROLE show them, where Sentinel reads them."""
    kind = target_kind(target)
    primary = start_node(kind, make_server, tmp_path, "primary")
    replica = start_node(kind, make_server, tmp_path, "replica", [
        f"replicaof 127.0.0.1 {primary.resp_port}",
        "replica-announce-ip 10.1.2.3", "replica-announce-port 7777"])
    try:
        p = redis.Redis(port=primary.resp_port, socket_timeout=5)
        # ROLE lists a replica once it is online (as Redis's does).
        line = wait_until(lambda: (p.info("replication").get("slave0") or {}).get("state")
                          == "online" and p.info("replication")["slave0"],
                          DISCOVERY_TIMEOUT_S, "the replica to be online")
        assert line["ip"] == "10.1.2.3" and line["port"] == 7777, line
        assert p.execute_command("ROLE")[2][0][:2] == [b"10.1.2.3", b"7777"]
    finally:
        replica.cleanup()
        primary.cleanup()


def test_ioredis_sentinel_client_follows_the_failover(topology):
    node = shutil.which("node") or pytest.fail("node is not installed")
    directory = client_dir("ioredis")
    ports = ",".join(str(s.resp_port) for s in topology.sentinels)
    argv = [node, "sentinel.js", ports, MASTER, "io", str(FAILOVER_TIMEOUT_S * 1000)]
    proc = subprocess.Popen(argv, cwd=directory, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], DISCOVERY_TIMEOUT_S)
        first = proc.stdout.readline() if ready else ""
        assert first == f"ready {topology.primary.resp_port}\n", first
        topology.primary.signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=FAILOVER_TIMEOUT_S + 10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0 and "ok failover" in out, out
    assert "1 passed, 0 failed" in out, out


JEDIS_DIR = client_dir("jedis")
JEDIS_JAR = os.path.join("target", "lib", "jedis-8.0.2.jar")
JEDIS_WRITERS = ("pool", "client")  # JedisSentinelPool, RedisSentinelClient
WRITES_BEFORE_KILL = 10
JVM_EXIT_TIMEOUT_S = 10


def java_for_jedis():
    java = shutil.which("java")
    if java is None:
        pytest.fail("java is not installed; run scripts/install-test-deps")
    if not os.path.isfile(os.path.join(JEDIS_DIR, JEDIS_JAR)):
        pytest.fail(f"{JEDIS_JAR} is missing in {JEDIS_DIR}; run scripts/install-test-deps")
    return java


def read_lines(proc, lines):
    """Queues `proc`'s output lines, then None (a thread: the test waits on the queue with
    timeouts, which a blocking readline could not)."""
    for line in proc.stdout:
        lines.put(line.rstrip("\n"))
    lines.put(None)


def read_until(lines, out, done, timeout):
    """Appends lines to `out` until `done(out)`; fails after `timeout` seconds or at EOF."""
    deadline = time.monotonic() + timeout
    while not done(out):
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            pytest.fail(f"Sentinel.java said too little in {timeout}s:\n" + "\n".join(out))
        if line is None:
            pytest.fail("Sentinel.java ended early:\n" + "\n".join(out))
        out.append(line)


def run_jedis_across_failover(topology, java):
    """tests/clients/jedis/Sentinel.java's output lines: its two clients write, the primary
    is SIGKILLed once each has WRITES_BEFORE_KILL increments acknowledged there, and it ends
    once their increments land on the new primary."""
    ports = ",".join(str(s.resp_port) for s in topology.sentinels)
    argv = [java, "-cp", os.path.join("target", "lib", "*"), "Sentinel.java", ports, MASTER,
            "jedis", str(FAILOVER_TIMEOUT_S * 1000)]
    proc = subprocess.Popen(argv, cwd=JEDIS_DIR, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines = queue.Queue()
    threading.Thread(target=read_lines, args=(proc, lines), daemon=True).start()
    out = []
    old = topology.primary.resp_port
    try:
        # The JVM compiles Sentinel.java first: DISCOVERY_TIMEOUT_S covers that too.
        read_until(lines, out, lambda o: o and o[-1].startswith("ready "), DISCOVERY_TIMEOUT_S)
        assert out[-1] == f"ready {old}", out

        def written_before_kill(o):
            return all(sum(line.startswith(f"incr {name} {old} ") for line in o)
                       >= WRITES_BEFORE_KILL for name in JEDIS_WRITERS)
        read_until(lines, out, written_before_kill, DISCOVERY_TIMEOUT_S)
        topology.primary.signal(signal.SIGKILL)
        read_until(lines, out, lambda o: o and " passed, " in o[-1], FAILOVER_TIMEOUT_S + 10)
        try:
            proc.wait(timeout=JVM_EXIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the JVM did not end {JVM_EXIT_TIMEOUT_S}s after its clients closed")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, "\n".join(out)
    assert out[-1] == f"{len(JEDIS_WRITERS)} passed, 0 failed", "\n".join(out)
    return out


def increments(out, name):
    """(port, value) per INCR `name` had acknowledged, None where one failed or its port is
    not known."""
    steps = []
    for line in out:
        if line.startswith(f"incr {name} "):
            _, _, port, value = line.split()
            steps.append((int(port), int(value)))
        elif line.startswith(f"error {name} "):
            steps.append(None)
    return steps


def check_counter(out, name, old):
    """What the output says of `name`'s counter: every INCR acknowledged and WAITed for
    before the kill is on the new primary; the first acknowledged there is at most one past
    each INCR sent before it, and each counts on from the one before (by one, where none
    failed in between). Returns the new primary's port and the last value."""
    (durable,) = [int(line.split()[2]) for line in out if line.startswith(f"durable {name} ")]
    steps = increments(out, name)
    (port,) = {s[0] for s in steps if s and s[0] != old}
    first_new = next(i for i, s in enumerate(steps) if s and s[0] == port)
    before_kill = [s for s in steps[:first_new] if s is not None]
    assert all(p == old for p, _ in before_kill), (name, out)
    assert [v for _, v in before_kill] == list(
        range(durable + 1, durable + 1 + len(before_kill))), (name, out)
    assert durable < steps[first_new][1] <= durable + first_new + 1, (name, out)
    after_kill = steps[first_new:]
    assert all(s is None or s[0] == port for s in after_kill), (name, out)
    for before, after in zip(after_kill, after_kill[1:]):
        if before is not None and after is not None:
            assert after[1] == before[1] + 1, (name, out)
    values = [s[1] for s in after_kill if s is not None]
    assert values == sorted(set(values)), (name, out)
    return port, values[-1]


def test_jedis_sentinel_clients_follow_the_failover(topology):
    """Jedis's JedisSentinelPool and RedisSentinelClient write across the failover (one
    JVM, one failover); the counters they read back last are what the new primary holds,
    and the other replica too once it follows it."""
    out = run_jedis_across_failover(topology, java_for_jedis())
    old = topology.primary.resp_port
    last = {}
    for name in JEDIS_WRITERS:
        port, last[name] = check_counter(out, name, old)
        assert topology.sentinel().sentinel_get_master_addr_by_name(MASTER)[1] == port
    (other,) = [r for r in topology.replicas if r.resp_port != port]
    new = redis.Redis(port=port, socket_timeout=5)
    replica = redis.Redis(port=other.resp_port, socket_timeout=5)
    wait_until(lambda: follows(other, port), FAILOVER_TIMEOUT_S,
               "the other replica to follow the new primary")
    for name in JEDIS_WRITERS:
        assert new.get(f"jedis:{name}") == str(last[name]).encode()
        wait_until(lambda: replica.get(f"jedis:{name}") == str(last[name]).encode(),
                   FAILOVER_TIMEOUT_S, f"the other replica to hold {name}'s last increment")


def test_the_reconfiguration_transaction(make_server, tmp_path, target):
    """What Sentinel sends a server it reconfigures, word for word: MULTI, SLAVEOF,
    CONFIG REWRITE, CLIENT KILL TYPE normal, CLIENT KILL TYPE pubsub, EXEC. Every normal
    and Pub/Sub client but the caller is disconnected (so clients ask Sentinel again),
    the file names the primary, and SLAVEOF NO ONE in the same way takes it back out."""
    node = start_node(target_kind(target), make_server, tmp_path, "node", ["hz 10"])
    try:
        # One connection, reused by the transactions and the checks (the pool's).
        caller = redis.Redis(port=node.resp_port, socket_timeout=5)
        normal = redis.Redis(port=node.resp_port, socket_timeout=5, single_connection_client=True)
        normal.ping()
        pubsub = redis.Redis(port=node.resp_port, socket_timeout=5).pubsub()
        pubsub.subscribe("__sentinel__:hello")
        pubsub.get_message(timeout=5)
        nowhere = free_port()
        replies = []
        for host, port in (("127.0.0.1", str(nowhere)), ("NO", "ONE")):
            pipe = caller.pipeline(transaction=True)
            pipe.execute_command("SLAVEOF", host, port)
            pipe.execute_command("CONFIG", "REWRITE")
            pipe.execute_command("CLIENT", "KILL", "TYPE", "normal")
            pipe.execute_command("CLIENT", "KILL", "TYPE", "pubsub")
            replies.append(pipe.execute())
            if host != "NO":
                assert f"replicaof 127.0.0.1 {nowhere}" in node.conf.read_text()
                assert caller.info("replication")["role"] == "slave"
        assert replies[0][1:] == [b"OK", 1, 1] and replies[1][1:] == [b"OK", 0, 0], replies
        assert caller.info("replication")["role"] == "master"
        text = node.conf.read_text()
        assert "replicaof" not in text and "hz 10" in text, text
        with pytest.raises(redis.ConnectionError):
            normal.ping()
        with pytest.raises(redis.ConnectionError):
            pubsub.get_message(timeout=2)
            pubsub.ping()
            pubsub.get_message(timeout=2)
    finally:
        node.cleanup()


def test_sentinel_kills_a_busy_script(make_server, tmp_path, target):
    """A script past busy-reply-threshold makes PING answer -BUSY; once the primary is
    subjectively down Sentinel sends SCRIPT KILL, and the script ends."""
    primary = start_node(target_kind(target), make_server, tmp_path, "primary",
                         ["busy-reply-threshold 100"])
    sentinel = start_sentinel(tmp_path, 0, primary.resp_port, quorum=1)
    try:
        s = redis.Redis(port=sentinel.resp_port, socket_timeout=5, decode_responses=True)
        wait_until(lambda: "s_down" not in s.sentinel_master(MASTER)["flags"]
                   and s.sentinel_master(MASTER)["role-reported"] == "master",
                   DISCOVERY_TIMEOUT_S, "the sentinel to see the primary")
        busy = redis.Redis(port=primary.resp_port, socket_timeout=FAILOVER_TIMEOUT_S)
        started = time.monotonic()
        with pytest.raises(redis.ResponseError, match="killed by user"):
            busy.eval("while true do end", 0)
        assert time.monotonic() - started < FAILOVER_TIMEOUT_S
        assert redis.Redis(port=primary.resp_port, socket_timeout=5).ping()
    finally:
        sentinel.cleanup()
        primary.cleanup()


FAILOVER_RUNS = 3


# One matrix entry: Sentinel's timers set the figure, not the I/O back end.
@pytest.mark.one_backend
@pytest.mark.spinel_only
def test_failover_time_against_redis_server(make_server, tmp_path):
    """The figure: seconds from SIGKILL of the primary to a write the redis-py Sentinel
    client lands on the new primary, FAILOVER_RUNS times for Spinel and for redis-server
    in the same topology. Sentinel's timers set most of it (down-after-milliseconds 1000,
    the election), so Spinel must be about as fast as redis-server."""
    times = {}
    for kind in ("spinel", "redis"):
        times[kind] = []
        for run in range(FAILOVER_RUNS):
            directory = tmp_path / f"{kind}-{run}"
            directory.mkdir()
            t = build(kind, make_server, directory)
            try:
                times[kind].append(kill_and_time_failover(t)[0])
            finally:
                t.cleanup()
    for kind, seconds in times.items():
        print(f"\n{kind}: " + " ".join(f"{s:.2f}" for s in seconds)
              + f" s (median {statistics.median(seconds):.2f} s)")
    assert statistics.median(times["spinel"]) < statistics.median(times["redis"]) + 3, times
