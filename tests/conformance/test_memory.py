"""Memory limits under load: in evict mode no set within the item size limit fails for want of
memory, whatever the mix of sizes; the process's peak RSS stays near -m; an item just written
or just read survives while the cache takes in a tenth of its memory in new bytes.

Every server is started with -m 64 (the conftest's default). The drift load is drift.py, also
behind scripts/mem_drift.py.
"""

import socket
import time

import pytest

import drift
from wire import Conn

MEMORY_MIB = 64
# The whole process at -m 64 under the drift load, as the issue bounds it: -m counts the
# connection buffers' fixed share (io_uring rings and their bursts, input tails, output pools,
# allocator slack; the store gets the rest), plus binary and libraries (~4.5 MiB). Measured
# 63.8-66.1 MiB with either back end at 16 connections, 68.1-69.3 MiB at 200 (memcached
# 1.6.18: 99.7-100.9 MiB). CI's faster machine measured 3 MiB above this one. Remeasured
# at bbbdbe5 and at 0340920 alike (6 runs each, one test at a time): 68.5-71.0 MiB; 72.4
# once under the whole suite's two workers. The bound keeps memcached's 100 MiB far away.
PEAK_RSS_MAX_MIB = 74
FLOOD_VALUE = 4000


@pytest.mark.slow
@pytest.mark.memcache
@pytest.mark.parametrize("get_ratio", [0, 0.1])
def test_drifting_sizes_never_fail_and_rss_is_bounded(make_server, target, get_ratio):
    """16 connections, 1 s each of 100 B, 100-500 KB, 50 B and 1 B-512 KB values (sets
    only, or one get in ten): no reply other than STORED. Peak RSS is printed for both
    servers, and bounded for spinel on sets only (a get's reply is a copy of the value,
    bounded per connection by the output pause, not in total)."""
    server = make_server()
    load = drift.Load(server.mc_port, conns=16, phase_s=1.0, get_ratio=get_ratio)
    hwm_kib, peak_kib, peaks = drift.run_sampled(load, server.pid, server.mc_port)
    print(f"{target}: sets {load.counts['sets']} gets {load.counts['gets']} failures "
          f"{load.failures}; peak RSS {hwm_kib / 1024:.1f} MiB (sampled {peak_kib / 1024:.1f}), "
          f"conn buffers peak {peaks['conn_buffer_bytes'] / 2**20:.1f} MiB")
    assert load.counts["sets"] > 1000, "the load did not run"
    assert load.failures == 0, dict(load.errors)
    if target == "spinel" and get_ratio == 0:
        assert hwm_kib / 1024 <= PEAK_RSS_MAX_MIB


def flood(port, prefix, total_bytes, read_each=False, check=None):
    """Sets FLOOD_VALUE-byte items `prefix:N` (noreply, pipelined) until `total_bytes` of values
    went in; with `read_each`, each is read once right after (so it is kept when the cache makes
    room: the main queue fills, the probation queue holds its share). `check(sent_bytes)` runs
    between batches of 256 KB."""
    value = b"f" * FLOOD_VALUE
    batch_items = 64
    sent, n = 0, 0
    with Conn(port) as conn:
        while sent < total_bytes:
            keys = [b"%s:%d" % (prefix, n + i) for i in range(batch_items)]
            batch = [b"set %s 0 0 %d noreply\r\n%s\r\n" % (k, FLOOD_VALUE, value) for k in keys]
            if read_each:
                batch += [b"mg %s\r\n" % k for k in keys]  # HD each (no value asked)
            conn.send(b"".join(batch) + b"mn\r\n")
            reply = conn.read_until(b"MN\r\n")  # everything before it was executed
            assert reply.replace(b"HD\r\n", b"") == b"MN\r\n", reply[:200]
            n += batch_items
            sent += batch_items * FLOOD_VALUE
            if check:
                check(sent)


@pytest.mark.slow
@pytest.mark.memcache
@pytest.mark.parametrize("how", ["written", "read"])
def test_fresh_item_survives_a_tenth_of_memory(make_server, target, how):
    """A full cache of items each read once (so the main queue is full and the probation
    queue holds only its share); then 40 items are written (and, for `read`, read once each). While new
    bytes stream in, item i is looked up once after i/40 of half the memory arrived
    (each probe is the first read of its item since the start, so it does not protect the
    items probed later). The first one missing measures how long a fresh item survives; every
    item probed before a tenth of the memory came in must be there.

    memcached 1.6.18 keeps them for 20% or more of -m (its HOT/WARM queues)"""
    server = make_server()
    memory = MEMORY_MIB << 20
    flood(server.mc_port, b"cold", memory * 12 // 10, read_each=True)
    hot = [b"hot:%d" % i for i in range(40)]
    value = b"h" * FLOOD_VALUE
    with Conn(server.mc_port) as conn:
        for key in hot:
            conn.rt(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(value), value), b"STORED\r\n")
        if how == "read":
            for key in hot:
                conn.send(b"get %s\r\n" % key)
                assert conn.read_until(b"END\r\n").startswith(b"VALUE")
        missing_at = []
        step = memory // 2 // len(hot)

        def probe(sent):
            i = sent // step
            if i < len(hot) and len(missing_at) == 0 and not probed.get(i):
                probed[i] = True
                conn.send(b"mg %s v\r\n" % hot[i])
                reply = conn.read_line()
                if reply.startswith(b"VA"):
                    conn.read_exact(FLOOD_VALUE + 2)
                else:
                    missing_at.append(sent)

        probed = {}
        flood(server.mc_port, b"new", memory // 2, check=probe)
    survived = missing_at[0] if missing_at else memory // 2
    print(f"{target}: a just-{how} item survived {survived / 2**20:.1f} MiB of new bytes "
          f"({100 * survived / memory:.1f}% of -m)")
    assert survived >= memory // 10
