"""go-redis v9's ClusterClient (Go) against a 3-primary cluster, and against 3 primaries with a
replica each, from cluster_kit's make_cluster: Spinel nodes, or redis-server nodes with
CONFORMANCE_TARGET=redis.

The scenarios live in tests/clients/go-redis-cluster/main.go (a Go module: go-redis from the Go
module proxy, pinned by its go.mod and go.sum). It is built once per pytest session (per xdist
worker, under a lock; Go's build cache makes the second build a no-op) into that folder's bin/,
which git ignores. It prints "ok NAME" per scenario and "info NAME: ..." lines with what it saw:
SET/GET of 1000 keys over every primary, MSET/MGET on one hash tag, CROSSSLOT from a raw
multi-key command on a node, Pipelined with 500 commands, TxPipelined and WATCH on hash-tagged
keys, INCR counters, EXPIRE/TTL, hashes/lists/sets/zsets on one tag, ForEachShard PING and the
primaries' DBSIZE summing to the keys written, reads with ReadOnly false, and a slot moved by
hand (CLUSTER SETSLOT ... NODE on every primary, the key moved along) that the client follows
through the old owner's MOVED.

With replicas, `readonly_true` runs too: a ClusterClient with ReadOnly: true sends READONLY to
the replicas CLUSTER SLOTS names and routes reads there (by COMMAND's readonly flags).
redis-server's replicas copy their primary and are named, so every read finds its value
(`-replicated`, after WAIT). Spinel's replicas have no replication. Spinel up to 8d4cff2 named
them in CLUSTER SLOTS: go-redis then read every key from a replica and got nil (no MOVED: the
replica answered). Since the cluster branch's c05fd95 Spinel leaves them out of CLUSTER SLOTS
(SHARDS shows them `loading`), so go-redis knows no replica and reads from the primaries,
finding every value. The scenario expects whichever matches what CLUSTER SLOTS says, and
prints what it saw. Straight to each replica CLUSTER NODES names, on both servers: a read
without READONLY is MOVED to the primary; with READONLY it is answered there (nil on Spinel,
the value on redis-server); a write is MOVED either way; READWRITE ends it.

Spinel has no cluster bus. A slot moved with SETSLOT on the primaries stays on the old owner
in the replicas' maps (replicas refuse SETSLOT, as redis-server's do, and nothing else tells
them); redis-server's replicas learn it from their bus. test_replicas_follow_a_moved_slot
checks that every node names the new owner: it is an expected failure on Spinel until it has
a way to tell the replicas.

One node configuration (`-t 1 --io epoll`, make_cluster's default), not the SPINEL_MATRIX:
what is checked is the cluster protocol, not the I/O back end.
"""

import fcntl
import os
import re
import shutil
import subprocess
import time

import pytest
import redis

from clients import client_dir, run_check
from cluster_kit import make_cluster  # noqa: F401

pytestmark = pytest.mark.resp

GO_DIR = client_dir("go-redis-cluster")
BIN = os.path.join(GO_DIR, "bin", "check")
BUILD_TIMEOUT_S = 300


def go_exe():
    """The first Go 1.21 or later (go-redis v9.17 needs it) of those install-test-deps looks
    at: the go on PATH, /usr/local/go/bin/go, /usr/bin/go."""
    for exe in (shutil.which("go"), "/usr/local/go/bin/go", "/usr/bin/go"):
        if exe is None or not os.access(exe, os.X_OK):
            continue
        version = subprocess.run([exe, "version"], capture_output=True, text=True).stdout
        found = re.search(r"go(\d+)\.(\d+)", version)
        if found and (int(found[1]), int(found[2])) >= (1, 21):
            return exe
    return None


@pytest.fixture(scope="session")
def go_check():
    """bin/check, built from main.go once per session (a lock keeps xdist workers apart)."""
    exe = go_exe()
    if exe is None:
        pytest.fail("Go 1.21 or later is not installed; run scripts/install-test-deps")
    os.makedirs(os.path.dirname(BIN), exist_ok=True)
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="-mod=readonly")
    with open(os.path.join(os.path.dirname(BIN), ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = subprocess.run([exe, "build", "-buildvcs=false", "-o", BIN, "."], cwd=GO_DIR,
                              env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    assert done.returncode == 0, f"go build failed:\n{done.stdout}\n{done.stderr}"
    return BIN


@pytest.mark.parametrize("replicas", [0, 1], ids=["3-primaries", "3-primaries-3-replicas"])
def test_go_redis_cluster_client(make_cluster, go_check, target, replicas):  # noqa: F811
    cluster = make_cluster(primaries=3, replicas=replicas)
    seeds = ",".join(node.addr for node in cluster.primaries[:2])
    argv = [go_check, "-seeds", seeds, "-prefix", f"go{replicas}"]
    if target == "redis":
        argv.append("-replicated")
    oks = run_check(argv, GO_DIR)
    names = {line.split()[1] for line in oks}
    assert len(names) == 12 + replicas, oks
    assert ("readonly_true" in names) == bool(replicas), oks


def test_replicas_follow_a_moved_slot(make_cluster, target, request):  # noqa: F811
    """A slot given to another primary with SETSLOT on every primary: within a few seconds
    every node, replicas included, names the new owner in CLUSTER SLOTS (redis-server's
    replicas hear it over the cluster bus; Spinel's ask their primary once a second)."""
    cluster = make_cluster(primaries=3, replicas=1)
    old, new = cluster.primaries[0], cluster.primaries[1]
    slot = old.slots[0][0]
    clients = {node.port: redis.Redis(port=node.port, socket_timeout=5) for node in cluster.nodes}
    try:
        # The new owner first, then the old, then the rest, as redis-cli moves a slot.
        for node in [new, old] + cluster.primaries[2:]:
            assert clients[node.port].execute_command(
                "CLUSTER", "SETSLOT", slot, "NODE", new.id) in (b"OK", "OK", True)
        for node in cluster.nodes:
            if node.primary is not None:
                with pytest.raises(redis.ResponseError, match="only with masters"):
                    clients[node.port].execute_command("CLUSTER", "SETSLOT", slot, "NODE",
                                                       new.id)

        def owners():
            seen = {}
            for node in cluster.nodes:
                for entry in clients[node.port].execute_command("CLUSTER", "SLOTS"):
                    if int(entry[0]) <= slot <= int(entry[1]):
                        seen[node.port] = int(entry[2][1])
            return seen

        deadline = time.monotonic() + 5
        while (seen := owners()) != {node.port: new.port for node in cluster.nodes}:
            assert time.monotonic() < deadline, (
                f"slot {slot} moved from {old.port} to {new.port}; owner per node: {seen}")
            time.sleep(0.1)
    finally:
        for client in clients.values():
            client.close()
