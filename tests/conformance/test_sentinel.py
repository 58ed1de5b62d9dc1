"""Failover with the tools users already run: three real `redis-sentinel` processes watch a
primary (the target: Spinel, or redis-server with CONFORMANCE_TARGET=redis) and its
replicas; on SIGKILL of the primary they promote a replica, reconfigure the other with
`MULTI / SLAVEOF / CONFIG REWRITE / CLIENT KILL / EXEC`, and a redis-py `Sentinel` client
(and ioredis's sentinel connector) keeps writing across the switch.

Sentinel's timeouts are short (down-after-milliseconds 1000, failover-timeout 10000), so
each failover takes a few seconds; every wait is bounded (FAILOVER_TIMEOUT_S).
"""

import os
import shutil
import signal
import subprocess
import time

import pytest
import redis
from redis.sentinel import Sentinel

from conftest import Server, free_port

pytestmark = [pytest.mark.resp, pytest.mark.slow]

MASTER = "mymaster"
FAILOVER_TIMEOUT_S = 30
DISCOVERY_TIMEOUT_S = 20
SENTINELS = 3
REPLICAS = 2


def wait_until(check, timeout, what):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
            if last:
                return last
        except (redis.ConnectionError, redis.ResponseError, redis.TimeoutError) as e:
            last = e
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


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


def start_sentinel(tmp_path, index, primary_port):
    port = free_port()
    conf = tmp_path / f"sentinel-{index}.conf"
    conf.write_text("\n".join([
        f"port {port}", "bind 127.0.0.1", f"dir {tmp_path}",
        f"sentinel monitor {MASTER} 127.0.0.1 {primary_port} 2",
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


def start_spinel_primary(make_server, tmp_path):
    conf = tmp_path / "primary.conf"
    conf.write_text("# the primary's redis.conf (CONFIG REWRITE writes it)\n")
    if os.environ.get("CONFORMANCE_TARGET", "spinel") == "redis":
        server = start_redis(tmp_path, "primary")
    else:
        server = make_server(extra=["--redis-conf", str(conf)])
        server.conf = conf
    return server


def build(make_server, tmp_path, replica_lines=()):
    primary = start_spinel_primary(make_server, tmp_path)
    topology = Topology(primary, [], [])
    try:
        for i in range(REPLICAS):
            lines = [f"replicaof 127.0.0.1 {primary.resp_port}", *replica_lines[i:i + 1]]
            topology.replicas.append(start_redis(tmp_path, f"replica-{i}", lines))
        for i in range(SENTINELS):
            topology.sentinels.append(start_sentinel(tmp_path, i, primary.resp_port))
        wait_discovered(topology)
    except BaseException:
        topology.cleanup()
        raise
    return topology


def wait_discovered(topology):
    """Every sentinel knows both replicas (from the primary's INFO) and the two other
    sentinels (from the hello channel on the primary)."""
    for i in range(SENTINELS):
        s = topology.sentinel(i)
        wait_until(lambda: len([r for r in s.sentinel_slaves(MASTER)
                                if "s_down" not in r["flags"]]) == REPLICAS,
                   DISCOVERY_TIMEOUT_S, f"sentinel {i} to see the replicas")
        wait_until(lambda: len(s.sentinel_sentinels(MASTER)) == SENTINELS - 1,
                   DISCOVERY_TIMEOUT_S, f"sentinel {i} to see the other sentinels")


@pytest.fixture
def topology(make_server, tmp_path):
    t = build(make_server, tmp_path)
    yield t
    t.cleanup()


def test_sentinels_discover_replicas_and_each_other(topology):
    s = topology.sentinel()
    master = s.sentinel_master(MASTER)
    assert master["port"] == topology.primary.resp_port
    assert "s_down" not in master["flags"] and master["num-slaves"] == REPLICAS
    ports = sorted(r["port"] for r in s.sentinel_slaves(MASTER))
    assert ports == sorted(r.resp_port for r in topology.replicas)


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


def test_sigkill_of_the_primary_promotes_a_replica(topology):
    seconds, port = kill_and_time_failover(topology)
    promoted = [r for r in topology.replicas if r.resp_port == port]
    assert len(promoted) == 1, port
    other = [r for r in topology.replicas if r.resp_port != port][0]
    new = redis.Redis(port=port, socket_timeout=5)
    assert new.execute_command("ROLE")[0] == b"master"
    follower = redis.Redis(port=other.resp_port, socket_timeout=5)
    wait_until(lambda: follower.info("replication")["master_port"] == port
               and follower.info("replication")["master_link_status"] == "up",
               FAILOVER_TIMEOUT_S, "the other replica to follow the new primary")
    print(f"failover took {seconds:.2f}s")
