"""memcached's `stats conns` and `watch evictions` on the wire, as memcached 1.6.18 writes
them. Numbers, ports and times differ between servers (memcached numbers by descriptor,
spinel by its connection numbers), so the lines are parsed and their shapes, order and
meaning checked; every expectation holds for real memcached (`CONFORMANCE_TARGET=memcached`).
"""

import re
import time

import pytest

from conftest import free_port
from wire import Conn

pytestmark = pytest.mark.memcache

STAT_LINE = re.compile(rb"STAT (\d+):(\w+) (\S+)\r\n")


def stats_conns(conn):
    """`stats conns` as {number: [(field, value), ...]}, in the server's order."""
    conn.send(b"stats conns\r\n")
    reply = conn.read_until(b"END\r\n")
    body = reply[: -len(b"END\r\n")]
    groups, pos = {}, 0
    while pos < len(body):
        m = STAT_LINE.match(body, pos)
        assert m, body[pos:pos + 120]
        groups.setdefault(int(m[1]), []).append((m[2].decode(), m[3].decode()))
        pos = m.end()
    assert list(groups) == sorted(groups), "groups not in number order"
    for fields in groups.values():
        names = [name for name, _ in fields]
        assert names in (
            ["addr", "state", "secs_since_last_cmd"],
            ["addr", "listen_addr", "state", "secs_since_last_cmd"],
            ["UDP", "addr", "state", "secs_since_last_cmd"],
        ), fields
        assert re.fullmatch(r"\d+", fields[-1][1]), fields
    return {number: dict(fields) for number, fields in groups.items()}


def group_of(groups, addr):
    found = [g for g in groups.values() if g["addr"] == addr]
    assert len(found) == 1, (addr, groups)
    return found[0]


def local_addr(conn):
    return "tcp:127.0.0.1:%d" % conn.sock.getsockname()[1]


def test_stats_conns_lists_listener_and_connections(make_server):
    server = make_server()
    listen = "tcp:127.0.0.1:%d" % server.mc_port
    with Conn(server.mc_port) as me, Conn(server.mc_port) as idle, \
            Conn(server.mc_port) as fresh, Conn(server.mc_port) as partial, \
            Conn(server.mc_port) as watcher:
        idle.rt(b"set conns:idle 0 0 1\r\nx\r\n", b"STORED\r\n")
        partial.send(b"set conns:partial 0 0 10\r\nabc")
        watcher.rt(b"watch\r\n", b"OK\r\n")
        time.sleep(0.3)
        before = stats_conns(me)
        listener = group_of(before, listen)
        assert "listen_addr" not in listener and listener["state"] == "conn_listening"
        mine = group_of(before, local_addr(me))
        assert mine == {"addr": local_addr(me), "listen_addr": listen,
                        "state": "conn_parse_cmd", "secs_since_last_cmd": "0"}
        states = {name: group_of(before, local_addr(conn))["state"] for name, conn in (
            ("idle", idle), ("fresh", fresh), ("partial", partial), ("watcher", watcher))}
        assert states == {"idle": "conn_read", "fresh": "conn_new_cmd",
                          "partial": "conn_nread", "watcher": "conn_watch"}
        for conn in (idle, fresh, partial, watcher):
            assert group_of(before, local_addr(conn))["listen_addr"] == listen
        idle_before = int(group_of(before, local_addr(idle))["secs_since_last_cmd"])
        assert idle_before <= 1

        time.sleep(2.2)
        after = stats_conns(me)
        idle_after = int(group_of(after, local_addr(idle))["secs_since_last_cmd"])
        assert idle_after >= 2 and idle_after > idle_before, (idle_before, idle_after)
        assert group_of(after, local_addr(me))["secs_since_last_cmd"] == "0"

        # A command brings the idle time back to 0; a closed connection leaves the list.
        idle.rt(b"get conns:idle\r\n", b"VALUE conns:idle 0 1\r\nx\r\nEND\r\n")
        gone = local_addr(fresh)
        fresh.close()
        deadline = time.monotonic() + 3
        while True:
            later = stats_conns(me)
            if all(g["addr"] != gone for g in later.values()) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert all(g["addr"] != gone for g in later.values()), later
        assert group_of(later, local_addr(idle))["secs_since_last_cmd"] == "0"
        assert group_of(later, local_addr(idle))["state"] == "conn_read"


def test_stats_conns_lists_udp_ports(make_server):
    udp_port = free_port()
    server = make_server(extra=["-U", str(udp_port)])
    with Conn(server.mc_port) as me:
        groups = stats_conns(me)
    udp = [g for g in groups.values() if "UDP" in g]
    assert udp, groups
    for g in udp:
        assert g["UDP"] == "UDP"
        assert g["addr"] == "udp:127.0.0.1:%d" % udp_port
        assert g["state"] == "conn_read"
        assert "listen_addr" not in g


EVICTION = re.compile(
    r"ts=\d+\.\d+ gid=\d+ type=eviction key=(\S+) fetch=(yes|no) ttl=(-?\d+) la=(\d+) "
    r"clsid=(\d+) size=(\d+)\n")


def test_watch_evictions(make_server):
    """Writing well past -m 8 evicts; a `watch evictions` connection gets one line per
    evicted item, with memcached's fields in its order."""
    server = make_server(extra=["-m", "8"])
    value = b"v" * 2000
    keys = 8000  # 16 MB of values: about half must go
    with Conn(server.mc_port) as watcher, Conn(server.mc_port) as c:
        watcher.rt(b"watch evictions\r\n", b"OK\r\n")
        batch = []
        for i in range(keys):
            exptime = 0 if i % 2 == 0 else 3600
            batch.append(b"set ev:%d 0 %d %d noreply\r\n%s\r\n" % (i, exptime, len(value), value))
            if len(batch) == 500:
                c.send(b"".join(batch))
                batch = []
        c.rt(b"mn\r\n", b"MN\r\n")
        lines = [watcher.read_until(b"\n", 5).decode() for _ in range(50)]
    for line in lines:
        m = EVICTION.fullmatch(line)
        assert m, line
        key, fetch, ttl, la, clsid, size = m.groups()
        index = int(re.fullmatch(r"ev%3A(\d+)", key)[1])
        assert 0 <= index < keys
        assert fetch == "no"
        if index % 2 == 0:
            assert ttl == "-1", line
        else:
            assert 3500 <= int(ttl) <= 3600, line
        assert int(la) <= 60 and int(clsid) > 0 and size == "2000", line
