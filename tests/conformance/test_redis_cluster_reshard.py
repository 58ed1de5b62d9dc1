"""Resharding live: `redis-cli --cluster reshard` moves slots between running nodes (CLUSTER
SETSLOT IMPORTING/MIGRATING, GETKEYSINSLOT, MIGRATE ... KEYS, SETSLOT NODE on every node)
while a redis-py RedisCluster client keeps reading and writing. The client may see only
the redirects it handles (MOVED, ASK, TRYAGAIN retried); every value it reads is the last
it wrote; at the end every key lives on the node that owns its slot.

Runs against Spinel nodes and, with CONFORMANCE_TARGET=redis, against redis-server nodes.
"""

import shutil
import subprocess
import threading
import time

import pytest
import redis
from redis.cluster import RedisCluster

from cluster_kit import make_cluster  # noqa: F401

pytestmark = pytest.mark.resp

KEYS = 2000


class Load(threading.Thread):
    """Writes and reads back counters through the cluster client until stopped."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.client = RedisCluster(host="127.0.0.1", port=port, cluster_error_retry_attempts=10)
        self.stop_flag = threading.Event()
        self.values = {}
        self.operations = 0
        self.errors = []

    def run(self):
        n = 0
        try:
            while not self.stop_flag.is_set():
                key = f"load:{n % KEYS}"
                value = str(n)
                try:
                    self.client.set(key, value)
                    self.values[key] = value
                    got = self.client.get(key)
                    if got != value.encode():
                        self.errors.append(f"{key}: read {got!r}, wrote {value!r}")
                    self.operations += 2
                except redis.exceptions.RedisError as error:
                    self.errors.append(f"{key}: {type(error).__name__}: {error}")
                n += 1
        finally:
            self.client.close()


def reshard(seed, source, target, slots):
    exe = shutil.which("redis-cli") or pytest.skip("redis-cli not installed")
    argv = [exe, "--cluster", "reshard", seed, "--cluster-from", source.id,
            "--cluster-to", target.id, "--cluster-slots", str(slots), "--cluster-yes",
            "--cluster-pipeline", "50"]
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return time.monotonic() - started, done.stdout


def check(seed):
    done = subprocess.run(["redis-cli", "--cluster", "check", seed], capture_output=True,
                          text=True, timeout=60)
    return done.returncode, done.stdout


def test_reshard_under_load_loses_nothing(make_cluster):
    cluster = make_cluster(primaries=3)
    seed = cluster.nodes[0].addr
    preload = RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port)
    for n in range(KEYS):
        preload.set(f"load:{n}", "start")
    preload.close()
    load = Load(cluster.nodes[0].port)
    load.start()
    time.sleep(0.3)
    source, target = cluster.nodes[0], cluster.nodes[1]
    seconds, output = reshard(seed, source, target, 500)
    time.sleep(0.3)
    load.stop_flag.set()
    load.join(30)
    assert not load.errors, load.errors[:10]
    assert load.operations > 100
    code, report = check(seed)
    assert code == 0, report
    assert "All nodes agree about slots configuration" in report
    assert "[OK] All 16384 slots covered" in report
    assert "open slot" not in report.lower() or "[WARNING]" not in report
    # Every key is on the node that owns its slot now, with the last value written: asked
    # of that node directly (no redirect followed).
    ranges = redis.Redis(port=cluster.nodes[2].port).execute_command("CLUSTER", "SLOTS")
    owners = [(int(r[0]), int(r[1]), int(r[2][1])) for r in ranges]
    source_slots = sum(e - s + 1 for s, e, port in owners if port == source.port)
    assert source_slots == 5461 - 500
    direct = {node.port: redis.Redis(port=node.port) for node in cluster.primaries}
    probe = RedisCluster(host="127.0.0.1", port=cluster.nodes[2].port)
    moved = 0
    for key, value in load.values.items():
        slot = probe.keyslot(key)
        port = next(p for s, e, p in owners if s <= slot <= e)
        assert direct[port].get(key) == value.encode(), key
        moved += slot < 500
    probe.close()
    assert moved > 0
    assert sum(client.dbsize() for client in direct.values()) == KEYS
    print(f"reshard of 500 slots under load: {seconds:.2f} s, {load.operations} client "
          f"operations, 0 errors")
