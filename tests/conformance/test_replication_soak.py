"""Replication soak: writes through both protocols at once (memcached text, meta and
binary; Redis commands of every type, blocking pops served by other clients' pushes,
MULTI/EXEC with SELECT inside, scripts that write, keys that expire during the run), while
links break, replicas restart, the primary is killed with SIGKILL and a replica promoted,
and FAILOVER hands the role over. At the end, writes stopped and everyone caught up, every
replica must hold exactly the primary's data, item by item: type, decoded content, TTL
within a tolerance, and for memcached items flags and CAS.

Topology: a primary, a Spinel replica of it (`mid`), a Spinel replica of that one (`leaf`,
chained), and a real redis-server replica of the primary (checked for what Redis sees).

SPINEL_SOAK_SEED picks the seed (printed on failure), SPINEL_SOAK_SECS the length of the
write phase (default 30 s per I/O back end: about a minute in CI for both).
"""

import os
import random
import signal
import threading
import time

import pytest
import redis

import repl_soak_kit as kit
from test_replication import client, redis_replica_of
from waits import wait_for

pytestmark = [pytest.mark.resp, pytest.mark.spinel_only, pytest.mark.slow]

SEED = int(os.environ.get("SPINEL_SOAK_SEED", "3535"))
SOAK_SECS = float(os.environ.get("SPINEL_SOAK_SECS", "30"))
CATCH_UP_TIMEOUT_S = 60


class Topology:
    """The four servers and what the chaos did to them (`events`, shown on failure)."""

    def __init__(self, make_server, rng):
        self.make_server = make_server
        self.rng = rng
        self.events = []
        self.redis_servers = []
        self.primary = make_server()
        self.mid = make_server()
        self.leaf = make_server()
        follow(self.mid, self.primary.resp_port)
        follow(self.leaf, self.mid.resp_port)
        self.redis = self._redis_of(self.primary)
        self.cluster = kit.Cluster(self.primary)

    def _redis_of(self, primary):
        server = redis_replica_of(primary)
        self.redis_servers.append(server)
        return server

    def note(self, what):
        self.events.append(f"{time.monotonic() - self.started:7.2f}s {what}")

    def set_primary(self, server):
        with self.cluster.lock:
            self.cluster.primary = server
            self.cluster.epoch += 1

    # The chaos actions ---------------------------------------------------------------

    def kill_link(self):
        name = self.rng.choice(("mid", "leaf", "redis"))
        try:
            killed = client(getattr(self, name)).execute_command("CLIENT", "KILL", "TYPE", "master")
        except redis.RedisError as e:
            killed = e
        self.note(f"CLIENT KILL TYPE master on {name}: {killed!r}")

    def restart_leaf(self):
        halt(self.leaf)
        self.leaf = self.make_server()
        follow(self.leaf, self.mid.resp_port)
        self.note(f"restarted leaf (now :{self.leaf.resp_port})")

    def restart_mid(self):
        halt(self.mid)
        self.mid = self.make_server()
        follow(self.mid, self.primary.resp_port)
        follow(self.leaf, self.mid.resp_port)
        self.note(f"restarted mid (now :{self.mid.resp_port}), leaf follows it")

    def restart_redis(self):
        self.redis.stop()
        self.redis = self._redis_of(self.primary)
        self.note(f"restarted the redis-server replica (now :{self.redis.resp_port})")

    def kill_primary(self):
        """SIGKILL the primary, promote mid; leaf and redis follow it, a new chained
        replica joins under leaf."""
        old = self.primary
        old.signal(signal.SIGKILL)
        old.proc.wait(10)
        client(self.mid).execute_command("REPLICAOF", "NO", "ONE")
        self.set_primary(self.mid)
        client(self.redis).execute_command("REPLICAOF", "127.0.0.1", self.mid.resp_port)
        fresh = self.make_server()
        follow(fresh, self.leaf.resp_port)
        self.primary, self.mid, self.leaf = self.mid, self.leaf, fresh
        self.note(f"SIGKILL primary :{old.resp_port}; promoted :{self.primary.resp_port}")

    def failover(self):
        """FAILOVER TO mid: the old primary becomes a replica; it rejoins as the chained
        one, under leaf (which now follows the new primary directly)."""
        old = self.primary
        reply = client(old).execute_command("FAILOVER", "TO", "127.0.0.1", self.mid.resp_port,
                                            "TIMEOUT", 5000)
        self.note(f"FAILOVER TO :{self.mid.resp_port}: {reply!r}")
        kit_wait(lambda: client(self.mid).info("replication")["role"] == "master"
                 or client(old).info("replication")["master_failover_state"] == "no-failover",
                 "the failover to end")
        if client(self.mid).info("replication")["role"] != "master":
            self.note("FAILOVER gave up (TIMEOUT): nothing changed")
            return
        self.set_primary(self.mid)
        client(self.redis).execute_command("REPLICAOF", "127.0.0.1", self.mid.resp_port)
        follow(self.leaf, self.mid.resp_port)
        follow(old, self.leaf.resp_port)
        self.primary, self.mid, self.leaf = self.mid, self.leaf, old

    def chaos_step(self):
        pick = self.rng.random()
        if pick < 0.35:
            self.kill_link()
        elif pick < 0.5:
            self.restart_leaf()
        elif pick < 0.6:
            self.restart_mid()
        elif pick < 0.7:
            self.restart_redis()
        elif pick < 0.88:
            self.kill_primary()
        else:
            self.failover()

    # The end -----------------------------------------------------------------------

    def pairs(self):
        """(upstream, replica, name) of every link."""
        return ((self.primary, self.mid, "mid"), (self.mid, self.leaf, "leaf"),
                (self.primary, self.redis, "redis"))

    def all_caught_up(self):
        for upstream, replica, _ in self.pairs():
            offset = client(upstream).info("replication")["master_repl_offset"]
            info = client(replica).info("replication")
            if info.get("master_link_status") != "up" or info.get("slave_repl_offset") != offset:
                return False
        return True

    def cleanup(self):
        for server in self.redis_servers:
            server.cleanup()


def follow(replica, port):
    reply = client(replica).execute_command("REPLICAOF", "127.0.0.1", port)
    assert reply in (b"OK", b"OK Already connected to specified master"), reply


def halt(server):
    """SIGTERM and wait, leaving its stderr readable (make_server prints it on failure)."""
    server.signal(signal.SIGTERM)
    server.proc.wait(10)


def kit_wait(check, what, timeout=20):
    return wait_for(check, what, timeout)


def start_writers(topo, seed):
    cluster = topo.cluster
    ports = cluster.primary_ports

    def redis_conn(db):
        return lambda: kit.rclient(ports()[0], db)

    def mc_conn():
        return kit.McConn(ports()[1])

    plan = [("mc-text", mc_conn, kit.mc_text_step), ("mc-meta", mc_conn, kit.mc_meta_step),
            ("mc-binary", mc_conn, kit.mc_binary_step)]
    plan += [(f"redis-db{db}", redis_conn(db), kit.redis_step) for db in kit.DBS]
    plan += [("redis-db0b", redis_conn(0), kit.redis_step)]
    plan += [(f"blocked-{i}", redis_conn(0), kit.blocking_step) for i in range(2)]
    threads = []
    for index, (name, connect, step) in enumerate(plan):
        rng = random.Random(seed * 1000 + index)
        thread = threading.Thread(target=kit.writer_loop, name=name,
                                  args=(cluster, rng, connect, step, name), daemon=True)
        thread.start()
        threads.append(thread)
    return threads


def compare(topo):
    """Every replica against the primary, item by item; returns the differences."""
    want = kit.contents(topo.primary.resp_port)
    problems = []
    for _, replica, name in topo.pairs():
        diffs = kit.differences(want, kit.contents(replica.resp_port))
        problems += [f"{name}: {d}" for d in diffs]
    items = kit.mc_items(topo.primary.mc_port)
    for server, name in ((topo.mid, "mid"), (topo.leaf, "leaf")):
        got = kit.mc_items(server.mc_port)
        for key in sorted(set(items) | set(got)):
            if items.get(key) != got.get(key):
                problems.append(f"{name}: memcached {key!r} primary {items.get(key)} "
                                f"replica {got.get(key)}")
    return want, items, problems


def test_replicas_converge_under_writes_and_chaos(make_server):
    seed, rng = SEED, random.Random(SEED)
    topo = Topology(make_server, rng)
    topo.started = time.monotonic()
    context = f"seed {seed} (SPINEL_SOAK_SEED), {SOAK_SECS}s (SPINEL_SOAK_SECS)"
    try:
        kit_wait(topo.all_caught_up, "the first sync")
        deadline = time.monotonic() + SOAK_SECS
        kit.FLUSHES_UNTIL[0] = deadline - min(5.0, SOAK_SECS / 4)
        threads = start_writers(topo, seed)
        while time.monotonic() < deadline:
            time.sleep(rng.uniform(1.0, 3.5))
            if time.monotonic() < deadline:
                topo.chaos_step()
        topo.cluster.stop.set()
        for thread in threads:
            thread.join(15)
        topo.note(f"writes stopped after {topo.cluster.ops} operations")
        time.sleep(kit.SHORT_TTL_S + 1.5)  # the short TTLs run out
        kit_wait(topo.all_caught_up, "everyone to catch up", timeout=CATCH_UP_TIMEOUT_S)
        want, items, problems = compare(topo)
        log = "\n".join(topo.events)
        assert not problems, f"{context}\n" + "\n".join(problems) + f"\nevents:\n{log}"
        assert topo.cluster.ops > 500 and len(want) > 50 and items, \
            f"{context}: too little load ({topo.cluster.ops} ops, {len(want)} keys)\n{log}"
    except BaseException:
        print(f"replication soak failed: {context}")
        print("\n".join(topo.events))
        print(f"connection errors: {topo.cluster.errors}")
        raise
    finally:
        topo.cluster.stop.set()
        topo.cleanup()
