"""memcached's admin commands on the wire: the `stats` groups' field names in memcached
1.6.18's order, `stats detail` (with -D), `stats cachedump` (and -X), and the tuning commands
`slabs`, `lru` and `lru_crawler` with their exact replies and their effect on `stats
settings`. Every expectation holds for real memcached 1.6.18 (`CONFORMANCE_TARGET=memcached`)
and for spinel, which may only add fields of its own after memcached's.
"""

import re
import time

import pytest

from wire import Conn

pytestmark = pytest.mark.memcache

# memcached 1.6.18's `stats` on an idle default server (lru_crawler on, no idle timeout).
GENERAL = [
    "pid", "uptime", "time", "version", "libevent", "pointer_size", "rusage_user",
    "rusage_system", "max_connections", "curr_connections", "total_connections",
    "rejected_connections", "connection_structures", "response_obj_oom", "response_obj_count",
    "response_obj_bytes", "read_buf_count", "read_buf_bytes", "read_buf_bytes_free",
    "read_buf_oom", "reserved_fds", "cmd_get", "cmd_set", "cmd_flush", "cmd_touch", "cmd_meta",
    "get_hits", "get_misses", "get_expired", "get_flushed", "delete_misses", "delete_hits",
    "incr_misses", "incr_hits", "decr_misses", "decr_hits", "cas_misses", "cas_hits",
    "cas_badval", "touch_hits", "touch_misses", "store_too_large", "store_no_memory",
    "auth_cmds", "auth_errors", "bytes_read", "bytes_written", "limit_maxbytes",
    "accepting_conns", "listen_disabled_num", "time_in_listen_disabled_us", "threads",
    "conn_yields", "hash_power_level", "hash_bytes", "hash_is_expanding",
    "slab_reassign_rescues", "slab_reassign_chunk_rescues", "slab_reassign_evictions_nomem",
    "slab_reassign_inline_reclaim", "slab_reassign_busy_items", "slab_reassign_busy_deletes",
    "slab_reassign_running", "slabs_moved", "lru_crawler_running", "lru_crawler_starts",
    "lru_maintainer_juggles", "malloc_fails", "log_worker_dropped", "log_worker_written",
    "log_watcher_skipped", "log_watcher_sent", "log_watchers", "unexpected_napi_ids",
    "round_robin_fallback", "bytes", "curr_items", "total_items", "slab_global_page_pool",
    "expired_unfetched", "evicted_unfetched", "evicted_active", "evictions", "reclaimed",
    "crawler_reclaimed", "crawler_items_checked", "lrutail_reflocked", "moves_to_cold",
    "moves_to_warm", "moves_within_lru", "direct_reclaims", "lru_bumps_dropped",
]

# `stats settings` of memcached 1.6.18 as distributions build it (extstore and TLS in).
SETTINGS = [
    "maxbytes", "maxconns", "tcpport", "udpport", "inter", "verbosity", "oldest", "evictions",
    "domain_socket", "umask", "shutdown_command", "growth_factor", "chunk_size", "num_threads",
    "num_threads_per_udp", "stat_key_prefix", "detail_enabled", "reqs_per_event",
    "cas_enabled", "tcp_backlog", "binding_protocol", "auth_enabled_sasl",
    "auth_enabled_ascii", "item_size_max", "maxconns_fast", "hashpower_init", "slab_reassign",
    "slab_automove", "slab_automove_ratio", "slab_automove_window", "slab_chunk_max",
    "lru_crawler", "lru_crawler_sleep", "lru_crawler_tocrawl", "tail_repair_time",
    "flush_enabled", "dump_enabled", "hash_algorithm", "lru_maintainer_thread",
    "lru_segmented", "hot_lru_pct", "warm_lru_pct", "hot_max_factor", "warm_max_factor",
    "temp_lru", "temporary_ttl", "idle_timeout", "watcher_logbuf_size", "worker_logbuf_size",
    "read_buf_mem_limit", "track_sizes", "inline_ascii_response", "ext_item_size",
    "ext_item_age", "ext_low_ttl", "ext_recache_rate", "ext_wbuf_size", "ext_compact_under",
    "ext_drop_under", "ext_max_sleep", "ext_max_frag", "slab_automove_freeratio",
    "ext_drop_unread", "ssl_enabled", "ssl_chain_cert", "ssl_key", "ssl_verify_mode",
    "ssl_keyformat", "ssl_ciphers", "ssl_ca_cert", "ssl_wbuf_size", "ssl_session_cache",
    "ssl_kernel_tls", "ssl_min_version", "num_napi_ids", "memory_file",
]

# Per class, after `items:<class>:`.
ITEMS = [
    "number", "number_hot", "number_warm", "number_cold", "age_hot", "age_warm", "age",
    "mem_requested", "evicted", "evicted_nonzero", "evicted_time", "outofmemory",
    "tailrepairs", "reclaimed", "expired_unfetched", "evicted_unfetched", "evicted_active",
    "crawler_reclaimed", "crawler_items_checked", "lrutail_reflocked", "moves_to_cold",
    "moves_to_warm", "moves_within_lru", "direct_reclaims", "hits_to_hot", "hits_to_warm",
    "hits_to_cold", "hits_to_temp",
]

# Per class, after `<class>:`; then the two totals.
SLABS = [
    "chunk_size", "chunks_per_page", "total_pages", "total_chunks", "used_chunks",
    "free_chunks", "free_chunks_end", "get_hits", "cmd_set", "delete_hits", "incr_hits",
    "decr_hits", "cas_hits", "cas_badval", "touch_hits",
]


def stats(conn, group=b""):
    """[(name, value)] of a stats group, in order."""
    conn.send(b"stats" + (b" " + group if group else b"") + b"\r\n")
    body = conn.read_until(b"END\r\n")
    lines = body[: -len(b"END\r\n")].split(b"\r\n")[:-1]
    pairs = []
    for line in lines:
        tag, name, value = line.decode().split(" ", 2)
        assert tag == "STAT", line
        pairs.append((name, value))
    return pairs


def assert_memcached_names_first(names, expected, target):
    """memcached's names exactly, in order; spinel may add its own only after them."""
    assert names[: len(expected)] == expected
    if target == "memcached":
        assert names == expected
    assert not set(names[len(expected):]) & set(expected)


@pytest.fixture
def fresh(make_server):
    """A connection to a server of its own (tuning and detail state are process-wide)."""
    server = make_server()
    with Conn(server.mc_port) as conn:
        yield conn


def test_general_stats_names_in_order(fresh, target):
    names = [name for name, _ in stats(fresh)]
    assert_memcached_names_first(names, GENERAL, target)


def test_settings_names_in_order(fresh, target):
    names = [name for name, _ in stats(fresh, b"settings")]
    assert_memcached_names_first(names, SETTINGS, target)


def test_items_and_slabs_names_in_order(fresh, target):
    fresh.rt(b"set adm_small 0 0 1\r\nx\r\n", b"STORED\r\n")
    items = stats(fresh, b"items")
    assert {name.split(":")[1] for name, _ in items} == {"1"}
    assert [name.split(":")[2] for name, _ in items] == ITEMS
    assert dict(items)["items:1:number"] == "1"
    slabs = [name for name, _ in stats(fresh, b"slabs")]
    assert slabs == ["1:" + name for name in SLABS] + ["active_slabs", "total_malloced"]


def test_counters_memcached_added_in_1_6(fresh):
    before = dict(stats(fresh))
    fresh.rt(b"me adm_nokey\r\n", b"EN\r\n")
    size = 1024 * 1024 + 1
    fresh.rt(b"set adm_big 0 0 %d\r\n%s\r\n" % (size, b"x" * size),
             b"SERVER_ERROR object too large for cache\r\n")
    after = dict(stats(fresh))
    assert int(after["cmd_meta"]) == int(before["cmd_meta"]) + 1
    assert int(after["store_too_large"]) == int(before["store_too_large"]) + 1
    assert after["accepting_conns"] == "1"
    assert after["store_no_memory"] == "0"


def test_settings_values_memcached_defaults(fresh):
    settings = dict(stats(fresh, b"settings"))
    expected = {
        "oldest": "0", "umask": "700", "growth_factor": "1.25", "chunk_size": "48",
        "stat_key_prefix": ":", "detail_enabled": "no", "maxconns_fast": "yes",
        "slab_reassign": "yes", "slab_automove": "1", "slab_automove_ratio": "0.80",
        "slab_automove_window": "30", "slab_chunk_max": "524288", "lru_crawler": "yes",
        "lru_crawler_sleep": "100", "lru_crawler_tocrawl": "0", "dump_enabled": "yes",
        "lru_segmented": "yes", "hot_lru_pct": "20", "warm_lru_pct": "40",
        "hot_max_factor": "0.20", "warm_max_factor": "2.00", "temp_lru": "no",
        "temporary_ttl": "61", "ssl_enabled": "no",
    }
    assert {name: settings[name] for name in expected} == expected


# ------------------------------------------------------------------------------------------
# stats detail


def test_stats_detail_counts_and_dump_order(fresh):
    fresh.rt(b"stats detail dump\r\n", b"END\r\n")
    fresh.rt(b"stats detail on\r\n", b"OK\r\n")
    fresh.send(b"set a:1 0 0 1\r\na\r\nset bb:1 0 0 1\r\na\r\n"
               b"get zz:1 a:1 foo:x user:1 session:2\r\ndelete q:1\r\n"
               b"set hello:x 0 0 1\r\na\r\nset plain 0 0 1\r\na\r\n")
    fresh.read_until(b"NOT_FOUND\r\n")
    fresh.read_until(b"STORED\r\nSTORED\r\n")
    # memcached's order: bucket of its murmur3 hash of the prefix, modulo 256.
    fresh.rt(b"stats detail dump\r\n",
             b"PREFIX user get 1 hit 0 set 0 del 0\r\n"
             b"PREFIX zz get 1 hit 0 set 0 del 0\r\n"
             b"PREFIX foo get 1 hit 0 set 0 del 0\r\n"
             b"PREFIX hello get 0 hit 0 set 1 del 0\r\n"
             b"PREFIX session get 1 hit 0 set 0 del 0\r\n"
             b"PREFIX a get 1 hit 1 set 1 del 0\r\n"
             b"PREFIX bb get 0 hit 0 set 1 del 0\r\n"
             b"PREFIX q get 0 hit 0 set 0 del 1\r\n"
             b"END\r\n")
    assert dict(stats(fresh, b"settings"))["detail_enabled"] == "yes"
    fresh.rt(b"stats detail off\r\n", b"OK\r\n")
    fresh.rt(b"get a:1\r\n", b"VALUE a:1 0 1\r\na\r\nEND\r\n")
    fresh.send(b"stats detail dump\r\n")
    assert b"PREFIX a get 1 hit 1 set 1 del 0\r\n" in fresh.read_until(b"END\r\n")
    fresh.rt(b"stats reset\r\n", b"RESET\r\n")
    fresh.rt(b"stats detail dump\r\n", b"END\r\n")


@pytest.mark.parametrize("line", [b"stats detail", b"stats detail x", b"stats detail ON"])
def test_stats_detail_usage(fresh, line):
    fresh.rt(line + b"\r\n", b"CLIENT_ERROR usage: stats detail on|off|dump\r\n")


def test_prefix_delimiter_flag_turns_detail_on(make_server):
    server = make_server(extra=["-D", "#"])
    with Conn(server.mc_port) as c:
        settings = dict(stats(c, b"settings"))
        assert (settings["stat_key_prefix"], settings["detail_enabled"]) == ("#", "yes")
        c.rt(b"set x#1 0 0 1\r\na\r\nset x:1 0 0 1\r\na\r\n", b"STORED\r\nSTORED\r\n")
        c.rt(b"stats detail dump\r\n", b"PREFIX x get 0 hit 0 set 1 del 0\r\nEND\r\n")


# ------------------------------------------------------------------------------------------
# stats cachedump


@pytest.mark.parametrize("line,reply", [
    (b"stats cachedump", b"CLIENT_ERROR bad command line"),
    (b"stats cachedump 1", b"CLIENT_ERROR bad command line"),
    (b"stats cachedump x 1", b"CLIENT_ERROR bad command line format"),
    (b"stats cachedump 1 -1", b"CLIENT_ERROR bad command line format"),
    (b"stats cachedump 64 0", b"CLIENT_ERROR Illegal slab id"),
    (b"stats cachedump 63 0", b"END"),
    (b"stats cachedump 5 10", b"END"),
])
def test_cachedump_replies(fresh, line, reply):
    fresh.rt(line + b"\r\n", reply + b"\r\n")


def test_cachedump_lists_a_small_item(fresh):
    fresh.rt(b"set adm_dump 0 0 3\r\nabc\r\n", b"STORED\r\n")
    expected = b"ITEM adm_dump [3 b; 0 s]\r\nEND\r\n"
    # memcached lists its cold LRU, which its maintainer thread fills within moments.
    deadline = time.monotonic() + 5
    while True:
        fresh.send(b"stats cachedump 1 0\r\n")
        got = fresh.read_until(b"END\r\n")
        if got == expected or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert got == expected


def test_disable_dumping_flag(make_server):
    server = make_server(extra=["-X"])
    with Conn(server.mc_port) as c:
        c.rt(b"stats cachedump 1 0\r\n", b"CLIENT_ERROR stats cachedump not allowed\r\n")
        assert dict(stats(c, b"settings"))["dump_enabled"] == "no"


# ------------------------------------------------------------------------------------------
# slabs, lru, lru_crawler


TUNING = [
    (b"slabs reassign 1 2", b"NOSPARE source class has no spare pages"),
    (b"slabs reassign 3 3", b"SAME src and dst class are identical"),
    (b"slabs reassign -1 -1", b"SAME src and dst class are identical"),
    (b"slabs reassign 1 40", b"BADCLASS invalid src or dst class id"),
    (b"slabs reassign 1 39", b"NOSPARE source class has no spare pages"),
    (b"slabs reassign 0 1", b"NOSPARE source class has no spare pages"),
    (b"slabs reassign -1 2", b"BADCLASS invalid src or dst class id"),
    (b"slabs reassign 1 x", b"CLIENT_ERROR bad command line format"),
    (b"slabs reassign 1", b"ERROR"),
    (b"slabs reassign 1 2 3", b"ERROR"),
    (b"slabs automove 2", b"OK"),
    (b"slabs automove 3", b"ERROR"),
    (b"slabs automove x", b"CLIENT_ERROR bad command line format"),
    (b"slabs automove", b"ERROR"),
    (b"slabs", b"ERROR"),
    (b"slabs automove ratio 0.5", b"OK"),
    (b"slabs automove ratio", b"ERROR"),
    (b"slabs automove ratio x", b"ERROR"),
    (b"slabs foo bar", b"ERROR"),
    (b"lru", b"ERROR"),
    (b"lru foo", b"ERROR"),
    (b"lru tune 10 25 0.5 1.5", b"OK"),
    (b"lru tune 50 40 0.5 1.5", b"ERROR hot and warm pcts must not exceed 80"),
    (b"lru tune 10 20 0 1.5", b"ERROR hot/warm age factors must be greater than 0"),
    (b"lru tune 10 20 x 1", b"ERROR"),
    (b"lru tune 10 20 0.3", b"ERROR"),
    (b"lru mode flat", b"OK"),
    (b"lru mode x", b"ERROR"),
    (b"lru mode", b"ERROR"),
    (b"lru temp_ttl 30", b"OK"),
    (b"lru temp_ttl x", b"ERROR"),
    (b"lru_crawler", b"ERROR"),
    (b"lru_crawler foo", b"ERROR"),
    (b"lru_crawler sleep", b"ERROR"),
    (b"lru_crawler enable", b"ERROR failed to start lru crawler thread"),
    (b"lru_crawler enable noreply", b"ERROR"),
    (b"lru_crawler sleep 2000000", b"CLIENT_ERROR sleep must be one second or less"),
    (b"lru_crawler sleep x", b"CLIENT_ERROR bad command line format"),
    (b"lru_crawler sleep 250", b"OK"),
    (b"lru_crawler tocrawl x", b"CLIENT_ERROR bad command line format"),
    (b"lru_crawler tocrawl 5", b"OK"),
]


def test_tuning_replies_and_settings(fresh):
    for line, reply in TUNING:
        fresh.rt(line + b"\r\n", reply + b"\r\n")
    # noreply is read by slabs automove and lru, not by lru_crawler.
    fresh.send(b"slabs automove 0 noreply\r\nlru mode segmented noreply\r\n"
               b"lru temp_ttl 45 noreply\r\nlru tune 99 99 1 1 noreply\r\n")
    fresh.assert_quiet()
    settings = dict(stats(fresh, b"settings"))
    expected = {
        "slab_automove": "0", "slab_automove_ratio": "0.50", "lru_segmented": "yes",
        "hot_lru_pct": "10", "warm_lru_pct": "25", "hot_max_factor": "0.50",
        "warm_max_factor": "1.50", "temp_lru": "yes", "temporary_ttl": "45",
        "lru_crawler_sleep": "250", "lru_crawler_tocrawl": "5",
    }
    assert {name: settings[name] for name in expected} == expected
    fresh.rt(b"lru temp_ttl -1\r\n", b"OK\r\n")
    assert dict(stats(fresh, b"settings"))["temp_lru"] == "no"
    # With temp_lru on, memcached's items gain number_temp after number_cold.
    fresh.rt(b"lru temp_ttl 45\r\nset adm_t 0 0 1\r\nx\r\n", b"OK\r\nSTORED\r\n")
    names = [name.split(":")[2] for name, _ in stats(fresh, b"items")]
    assert names[:5] == ["number", "number_hot", "number_warm", "number_cold", "number_temp"]


def test_lru_crawler_disable_hides_its_stats(fresh):
    fresh.rt(b"lru_crawler disable\r\n", b"OK\r\n")
    fresh.rt(b"lru_crawler disable\r\n", b"OK\r\n")
    names = [name for name, _ in stats(fresh)]
    assert "lru_crawler_running" not in names and "lru_crawler_starts" not in names
    assert dict(stats(fresh, b"settings"))["lru_crawler"] == "no"


# ------------------------------------------------------------------------------------------
# watch


def watch_lines(conn, count, timeout=5.0):
    """`count` log lines from a watcher, with the parts that vary (time, event number,
    connection) checked and then dropped."""
    lines = []
    for _ in range(count):
        line = conn.read_until(b"\n", timeout).decode()
        assert re.fullmatch(r"ts=\d+\.\d+ gid=\d+ type=\S+ .*\n", line), line
        body = line.split(" ", 2)[2].rstrip("\n")
        lines.append(re.sub(r" cfd=\d+", "", body))
    return lines


def test_watch_fetchers_and_mutations(make_server):
    server = make_server()
    with Conn(server.mc_port) as watcher, Conn(server.mc_port) as c:
        watcher.rt(b"watch fetchers mutations\r\n", b"OK\r\n")
        assert dict(stats(c))["log_watchers"] == "1"
        c.send(b"set w:a 0 0 3\r\nabc\r\nget w:a w:nope\r\nadd w:a 0 0 1\r\nx\r\n"
               b"replace w:b 0 100 1\r\nx\r\nappend w:a 0 0 1\r\nx\r\n"
               b"cas w:a 0 0 1 999\r\nx\r\ntouch w:a 10\r\nincr w:a 1\r\ndelete w:a\r\n"
               b"ms w:m 2 T50\r\nhi\r\nmg w:m v\r\nmn\r\n")
        c.read_until(b"MN\r\n")
        get = "type=item_get key=%s status=%s clsid=%d size=%d"
        store = "type=item_store key=%s status=%s cmd=%s ttl=%d clsid=1 size=%d"
        assert watch_lines(watcher, 18) == [
            get % ("w%3Aa", "not_found", 0, 0),
            store % ("w%3Aa", "stored", "set", 0, 3),
            get % ("w%3Aa", "found", 1, 3),
            get % ("w%3Anope", "not_found", 0, 0),
            get % ("w%3Aa", "found", 1, 3),
            store % ("w%3Aa", "not_stored", "add", 0, 1),
            get % ("w%3Ab", "not_found", 0, 0),
            store % ("w%3Ab", "not_stored", "replace", 100, 1),
            get % ("w%3Aa", "found", 1, 3),
            store % ("w%3Aa", "stored", "append", 0, 4),
            get % ("w%3Aa", "found", 1, 4),
            store % ("w%3Aa", "exists", "cas", 0, 1),
            get % ("w%3Aa", "found", 1, 4),
            get % ("w%3Aa", "found", 1, 4),
            get % ("w%3Aa", "found", 1, 4),
            get % ("w%3Am", "not_found", 0, 0),
            store % ("w%3Am", "stored", "set", 50, 2),
            get % ("w%3Am", "found", 1, 2),
        ]
        # The stream goes on.
        c.rt(b"get w:m\r\n", b"VALUE w:m 0 2\r\nhi\r\nEND\r\n")
        assert watch_lines(watcher, 1) == [get % ("w%3Am", "found", 1, 2)]


def test_watch_kinds_are_separate(make_server):
    server = make_server()
    with Conn(server.mc_port) as mutations, Conn(server.mc_port) as c:
        mutations.rt(b"watch mutations\r\n", b"OK\r\n")
        c.rt(b"get w:x\r\nset w:x 0 0 1\r\nx\r\n", b"END\r\nSTORED\r\n")
        assert watch_lines(mutations, 1) == [
            "type=item_store key=w%3Ax status=stored cmd=set ttl=0 clsid=1 size=1"]
        mutations.assert_quiet(0.3)


def conn_events(watcher, client_port):
    """The `watch connevents` lines of the connection from `client_port` (others' are passed
    over: a stray probe may connect meanwhile), without time, event number and numbers."""
    events = []
    while True:
        line = watcher.read_until(b"\n", 5.0).decode()
        match = re.fullmatch(r"ts=\d+\.\d+ gid=\d+ (type=conn_\S+ rip=\S+) rport=(\d+) (.*) "
                             r"cfd=\d+\n", line)
        assert match, line
        if int(match.group(2)) == client_port:
            events.append(f"{match.group(1)} {match.group(3)}")
            if "conn_close" in line:
                return events


def test_watch_connevents(make_server):
    # memcached's reasons: the peer closing or `quit` is normal, the server hanging up on a
    # protocol error is error.
    server = make_server()
    new = "type=conn_new rip=127.0.0.1 transport=tcp"
    closed = "type=conn_close rip=127.0.0.1 transport=tcp reason=%s"
    with Conn(server.mc_port) as watcher:
        watcher.rt(b"watch connevents\r\n", b"OK\r\n")
        for request, reason in [(b"version\r\n", "normal"), (b"quit\r\n", "normal"),
                                (b"GET / HTTP/1.1\r\n", "error")]:
            with Conn(server.mc_port) as c:
                client_port = c.sock.getsockname()[1]
                c.send(request)
                if request == b"version\r\n":
                    c.read_line()
                else:
                    c.read_all_until_close()
            assert conn_events(watcher, client_port) == [new, closed % reason], request


@pytest.mark.parametrize("line,reply", [
    (b"watch foo", b"ERROR\r\n"),
    (b"watch fetchers foo", b"ERROR\r\n"),
    (b"watch fetchers noreply", b""),
])
def test_watch_refusals(fresh, line, reply):
    fresh.send(line + b"\r\n")
    if reply:
        assert fresh.read_until(b"\r\n") == reply
    # Not a watcher: the connection still answers.
    fresh.send(b"version\r\n")
    assert fresh.read_until(b"\r\n").startswith(b"VERSION ")


def test_disable_watch_flag(make_server):
    server = make_server(extra=["-W"])
    with Conn(server.mc_port) as c:
        c.rt(b"watch\r\n", b"CLIENT_ERROR watch commands not allowed\r\n")
        c.rt(b"watch mutations\r\n", b"CLIENT_ERROR watch commands not allowed\r\n")


# ------------------------------------------------------------------------------------------
# The binary protocol's Stat: the same groups, and `detail`


def binary_stats(conn, group=b""):
    """[(name, value)] of a binary Stat reply, in order."""
    from test_binary import STAT, read_packet, req
    conn.send(req(STAT, group))
    pairs = []
    while True:
        packet = read_packet(conn)
        assert packet[1] == STAT and packet[6:8] == b"\0\0", packet
        key_len = int.from_bytes(packet[2:4], "big")
        if len(packet) == 24:
            return pairs
        pairs.append((packet[24:24 + key_len].decode(), packet[24 + key_len:]))


def test_binary_stat_names_and_detail(make_server, target):
    from test_binary import ENOENT, STAT, expect_error, req
    server = make_server()
    with Conn(server.mc_port) as c:
        names = [name for name, _ in binary_stats(c)]
        assert_memcached_names_first(names, GENERAL, target)
        names = [name for name, _ in binary_stats(c, b"settings")]
        assert_memcached_names_first(names, SETTINGS, target)
        assert binary_stats(c, b"detail on") == []
        with Conn(server.mc_port) as text:
            text.rt(b"set bin:1 0 0 1\r\na\r\n", b"STORED\r\n")
        assert binary_stats(c, b"detail dump") == [
            ("detailed", b"PREFIX bin get 0 hit 0 set 1 del 0\r\nEND\r\n")]
        assert binary_stats(c, b"detail off") == []
        c.send(req(STAT, b"detail bogus"))
        expect_error(c, STAT, ENOENT)


# ------------------------------------------------------------------------------------------
# stats sizes


def test_stats_sizes(fresh):
    fresh.rt(b"stats sizes\r\n", b"STAT sizes_status disabled\r\nEND\r\n")
    # memcached answers these two without an END.
    fresh.rt(b"stats sizes_enable\r\n", b"STAT sizes_status enabled\r\n")
    assert dict(stats(fresh, b"settings"))["track_sizes"] == "yes"
    fresh.send(b"set sz:a 0 0 3\r\nabc\r\nset sz:bbbbbbbb 0 0 1\r\nx\r\n"
               b"set sz:c 0 0 40\r\n" + b"v" * 40 + b"\r\n")
    fresh.read_until(b"STORED\r\nSTORED\r\nSTORED\r\n")
    fresh.rt(b"stats sizes\r\n", b"STAT 96 2\r\nSTAT 128 1\r\nEND\r\n")
    fresh.rt(b"stats sizes_disable\r\n", b"STAT sizes_status disabled\r\n")
    fresh.rt(b"stats sizes\r\n", b"STAT sizes_status disabled\r\nEND\r\n")


def test_watch_behind_pipelined_replies_is_refused(fresh):
    fresh.send(b"version\r\nwatch\r\n")
    assert fresh.read_until(b"\r\n").startswith(b"VERSION ")
    assert fresh.read_until(b"\r\n") == b"ERROR cannot pipeline other commands before watch\r\n"
    fresh.rt(b"watch\r\n", b"OK\r\n")


def test_watcher_is_not_idle(make_server):
    # A watcher sends nothing after `watch`; the idle timeout does not close it.
    server = make_server(idle_timeout=1)
    with Conn(server.mc_port) as watcher:
        watcher.rt(b"watch mutations\r\n", b"OK\r\n")
        time.sleep(2.5)
        with Conn(server.mc_port) as c:
            c.rt(b"set w:idle 0 0 1\r\nx\r\n", b"STORED\r\n")
        assert watch_lines(watcher, 1) == [
            "type=item_store key=w%3Aidle status=stored cmd=set ttl=0 clsid=1 size=1"]


def test_idle_timeout_adds_idle_kicks(make_server, target):
    server = make_server(idle_timeout=30)
    with Conn(server.mc_port) as c:
        names = [name for name, _ in stats(c)]
    at = GENERAL.index("auth_errors") + 1
    assert_memcached_names_first(names, GENERAL[:at] + ["idle_kicks"] + GENERAL[at:], target)
