"""memcached's `stats` list and counters as its own suite (t/stats.t, t/idle-timeout.t) checks
them: the same lines in the same order for the same `-o` suboptions, `get_flushed` after a
`flush_all`, `idle_kicks` after the idle timeout closed a connection. Spinel's own values are
in `stats spinel`, which memcached refuses."""

import socket
import time

import pytest

from test_memcache_admin import GENERAL, stats
from wire import Conn

pytestmark = pytest.mark.memcache

# Lines memcached 1.6.18 leaves out of `stats` without its LRU crawler / LRU maintainer.
CRAWLER_ONLY = ["lru_crawler_running", "lru_crawler_starts"]
MAINTAINER_ONLY = ["lru_maintainer_juggles", "evicted_active", "moves_to_cold", "moves_to_warm",
                   "moves_within_lru", "direct_reclaims", "lru_bumps_dropped"]
MAXCONNS_FAST_ONLY = ["rejected_connections"]
SLAB_REASSIGN_ONLY = [name for name in GENERAL if name.startswith("slab_reassign_")] + [
    "slabs_moved"]


def names_of(server):
    with Conn(server.mc_port) as c:
        return [name for name, _ in stats(c)]


def test_default_list_is_memcacheds(make_server):
    assert names_of(make_server()) == GENERAL


@pytest.mark.parametrize("suboptions, left_out", [
    ("no_lru_crawler", CRAWLER_ONLY),
    ("no_lru_maintainer", MAINTAINER_ONLY),
    # t/stats.t's server: 83 values.
    ("no_lru_crawler,no_lru_maintainer", CRAWLER_ONLY + MAINTAINER_ONLY),
    ("no_maxconns_fast", MAXCONNS_FAST_ONLY),
    ("no_slab_reassign", SLAB_REASSIGN_ONLY),
    ("no_modern", CRAWLER_ONLY + MAINTAINER_ONLY + MAXCONNS_FAST_ONLY + SLAB_REASSIGN_ONLY),
    ("no_lru_maintainer,lru_maintainer", []),
])
def test_lru_suboptions_shape_the_list(make_server, suboptions, left_out):
    names = names_of(make_server(extra=["-o", suboptions]))
    assert names == [name for name in GENERAL if name not in left_out]
    if suboptions == "no_lru_crawler,no_lru_maintainer":
        assert len(names) == 83


@pytest.mark.parametrize("suboptions", ["no_lru_crawler,no_lru_maintainer,no_maxconns_fast,"
                                        "no_slab_reassign,no_slab_automove", "no_modern"])
def test_suboptions_in_settings(make_server, suboptions):
    server = make_server(extra=["-o", suboptions])
    with Conn(server.mc_port) as c:
        settings = dict(stats(c, b"settings"))
    names = ["lru_crawler", "lru_maintainer_thread", "lru_segmented", "maxconns_fast",
             "slab_reassign", "slab_automove"]
    assert [settings[name] for name in names] == ["no"] * 5 + ["0"]


@pytest.mark.parametrize("suboptions, shown", [
    ("", ("no", "61")),
    ("temporary_ttl=30", ("yes", "30")),
])
def test_temporary_ttl_in_settings(make_server, suboptions, shown):
    server = make_server(extra=["-o", suboptions] if suboptions else [])
    with Conn(server.mc_port) as c:
        settings = dict(stats(c, b"settings"))
    assert (settings["temp_lru"], settings["temporary_ttl"]) == shown


def test_spinel_group(make_server, target):
    server = make_server()
    with Conn(server.mc_port) as c:
        if target == "memcached":
            c.rt(b"stats spinel\r\n", b"ERROR\r\n")
            return
        assert [name for name, _ in stats(c, b"spinel")] == ["conn_buffer_bytes"]


def test_get_flushed_counts_reads_of_flushed_items(make_server):
    server = make_server()
    with Conn(server.mc_port) as c:
        # In one batch: a flushed item stays in the table until reclaimed (memcached's LRU
        # crawler, Spinel's ticks), and only a read that finds it there counts.
        c.rt(b"set gf:a 0 0 3\r\nabc\r\nflush_all\r\nget gf:a\r\n",
             b"STORED\r\nOK\r\nEND\r\n")
        c.rt(b"get gf:never\r\n", b"END\r\n")
        counts = dict(stats(c))
        assert (counts["cmd_flush"], counts["get_flushed"], counts["get_misses"],
                counts["get_expired"]) == ("1", "1", "2", "0")
        c.rt(b"stats reset\r\n", b"RESET\r\n")
        assert dict(stats(c))["get_flushed"] == "0"


def test_idle_kicks_counts_idle_timeout_closes(make_server):
    server = make_server(idle_timeout=1)
    # Closed by its peer before the timeout: not a kick.
    with socket.create_connection(("127.0.0.1", server.mc_port), timeout=10) as quick:
        quick.sendall(b"version\r\n")
        assert quick.recv(100).startswith(b"VERSION ")
    idle = socket.create_connection(("127.0.0.1", server.mc_port), timeout=10)
    idle.sendall(b"version\r\n")
    assert idle.recv(100).startswith(b"VERSION ")
    time.sleep(2.5)
    assert idle.recv(100) == b"", "the idle timeout did not close the connection"
    idle.close()
    with Conn(server.mc_port) as c:
        counts = dict(stats(c))
        assert counts["idle_kicks"] == "1"
        c.rt(b"stats reset\r\n", b"RESET\r\n")
        assert dict(stats(c))["idle_kicks"] == "0"
