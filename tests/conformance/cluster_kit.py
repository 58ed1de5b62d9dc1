"""Redis Cluster nodes on loopback for the cluster tests: Spinel nodes, or real redis-server
nodes for the same scenarios (CONFORMANCE_TARGET=redis).

Every node gets a nodes.conf written before it starts, in Redis's format, naming every node
and its slots (the primaries split the 16384 slots evenly; replicas follow their primary).
redis-server reads such a file and joins the others over its cluster bus; Spinel reads it
and serves its slots with no bus at all. Either way the cluster is whole at once, without
`redis-cli --cluster create`.
"""

import os
import secrets
import shutil
import socket
import tempfile
import time

import pytest

from conftest import Server, free_port, spinel_bin

SLOTS = 16384


class Node:
    def __init__(self, index, port, node_id, primary=None):
        self.index = index
        self.port = port
        self.id = node_id
        self.primary = primary  # the primary Node, for a replica
        self.slots = []  # (start, end) ranges
        self.server = None
        self.dir = None

    @property
    def addr(self):
        return f"127.0.0.1:{self.port}"


def split_slots(count):
    """`count` even ranges covering every slot, as redis-cli --cluster create splits them."""
    per = SLOTS / count
    ranges = []
    for at in range(count):
        start = round(at * per)
        end = round((at + 1) * per) - 1
        ranges.append((start, end))
    return ranges


def node_line(node, myself, epoch):
    flags = ("myself," if node is myself else "") + ("slave" if node.primary else "master")
    primary = node.primary.id if node.primary else "-"
    slots = " ".join(f"{s}-{e}" if s != e else str(s) for s, e in node.slots)
    line = (f"{node.id} 127.0.0.1:{node.port}@{node.port + 10000} {flags} {primary} 0 0 "
            f"{epoch} connected")
    return line + (f" {slots}" if slots else "")


def nodes_conf(nodes, myself):
    lines = [node_line(node, myself, node.index + 1) for node in nodes]
    lines.append(f"vars currentEpoch {len(nodes)} lastVoteEpoch 0")
    return "\n".join(lines) + "\n"


def _bus_port_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port + 10000))
            return True
        except OSError:
            return False


def _cluster_port():
    """A free port whose bus port (port + 10000, redis-server binds it) is free too."""
    while True:
        port = free_port()
        if port + 10000 < 65536 and _bus_port_free(port):
            return port


class Cluster:
    """N primaries (and R replicas each) of `target`, started; `stop()` ends them."""

    def __init__(self, target, primaries=3, replicas=0, threads=1, io="epoll"):
        self.target = target
        self.threads = threads
        self.io = io
        self.root = tempfile.mkdtemp(prefix="spinel-cluster-")
        self.nodes = []
        for at in range(primaries):
            self.nodes.append(Node(len(self.nodes), _cluster_port(), secrets.token_hex(20)))
        for primary, slots in zip(list(self.nodes), split_slots(primaries)):
            primary.slots = [slots]
        for primary in list(self.nodes[:primaries]):
            for _ in range(replicas):
                self.nodes.append(Node(len(self.nodes), _cluster_port(), secrets.token_hex(20),
                                       primary=primary))
        for node in self.nodes:
            self.start(node)
        self.wait_ok()

    @property
    def primaries(self):
        return [node for node in self.nodes if node.primary is None]

    def conf_path(self, node):
        return os.path.join(node.dir, "nodes.conf")

    def write_conf(self, node):
        with open(self.conf_path(node), "w") as f:
            f.write(nodes_conf(self.nodes, node))

    def start(self, node, write=True):
        node.dir = node.dir or os.path.join(self.root, str(node.port))
        os.makedirs(node.dir, exist_ok=True)
        if write:
            self.write_conf(node)
        if self.target == "redis":
            exe = shutil.which("redis-server") or pytest.skip("redis-server not installed")
            argv = [exe, "--port", str(node.port), "--bind", "127.0.0.1", "--save", "",
                    "--appendonly", "no", "--cluster-enabled", "yes",
                    "--cluster-config-file", "nodes.conf", "--dir", node.dir,
                    "--cluster-node-timeout", "2000"]
            node.server = Server("redis", argv, resp_port=node.port).wait_ready()
        else:
            mc_port = free_port()
            argv = [spinel_bin(), "-p", str(mc_port), "--resp-port", str(node.port),
                    "-l", "127.0.0.1", "-t", str(self.threads), "--io", self.io, "-m", "64",
                    "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                    "--dir", node.dir]
            node.server = Server("spinel", argv, mc_port, node.port, self.io,
                                 self.threads).wait_ready()
        return node

    def wait_ok(self, timeout_s=20):
        """Until every node says cluster_state:ok and agrees on the slot map (redis-server
        needs its bus handshakes first; Spinel is ready at once)."""
        import redis

        deadline = time.monotonic() + timeout_s
        while True:
            states = []
            for node in self.nodes:
                if node.server is None or node.server.proc.poll() is not None:
                    continue
                client = redis.Redis(port=node.port, socket_timeout=2)
                try:
                    info = client.execute_command("CLUSTER", "INFO")
                    if isinstance(info, bytes):
                        info = info.decode()
                    slots = client.execute_command("CLUSTER", "SLOTS")
                    states.append(("cluster_state:ok" in info, _slot_map(slots)))
                finally:
                    client.close()
            if states and all(ok for ok, _ in states) and len({m for _, m in states}) == 1:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"cluster not ok after {timeout_s}s: {states}")
            time.sleep(0.2)

    def node_of_slot(self, slot):
        for node in self.primaries:
            if any(s <= slot <= e for s, e in node.slots):
                return node
        raise KeyError(slot)

    def stop(self):
        for node in self.nodes:
            if node.server is not None:
                node.server.cleanup()
        shutil.rmtree(self.root, ignore_errors=True)


def _slot_map(slots):
    """CLUSTER SLOTS as a hashable value: (start, end, primary port) per range."""
    return tuple(sorted((int(r[0]), int(r[1]), int(r[2][1])) for r in slots))


@pytest.fixture
def make_cluster(target, request):
    """Factory: make_cluster(primaries=3, replicas=0) -> a started Cluster of the target
    (Spinel, or redis-server with CONFORMANCE_TARGET=redis); stopped when the test ends."""
    if target == "memcached":
        pytest.skip("a Redis Cluster test")
    made = []

    def make(**kwargs):
        cluster = Cluster(target, **kwargs)
        made.append(cluster)
        return cluster

    yield make
    failed = getattr(request.node, "rep_call", None)
    for cluster in made:
        if failed is not None and failed.failed:
            for node in cluster.nodes:
                if node.server is not None and not node.server.stderr_file.closed:
                    print(node.server.describe())
        cluster.stop()
