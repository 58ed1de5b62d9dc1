"""`--metrics-port`: Prometheus's text format, read with the prometheus_client package's own
parser, with memcached_exporter's and redis_exporter's names; counters that follow the
traffic of both protocols, scraped while that traffic runs; and the probe paths.
"""

import threading
import time
import urllib.error
import urllib.request

import pytest

from conftest import free_port
from wire import Conn, resp_encode

parser = pytest.importorskip("prometheus_client.parser")


@pytest.fixture
def server(make_server, target):
    if target != "spinel":
        pytest.skip("the metrics port is Spinel's")
    port = free_port()
    srv = make_server(extra=["--metrics-port", str(port)])
    srv.metrics_port = port
    return srv


def scrape(server, path="/metrics"):
    with urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}{path}", timeout=10) as r:
        return r.status, r.headers.get("Content-Type"), r.read().decode()


def samples(text):
    """{(name, frozenset(labels)): value} of every sample, through the real parser."""
    found = {}
    for family in parser.text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def value(found, name, **labels):
    return found[(name, frozenset(labels.items()))]


def test_counters_follow_both_protocols(server):
    status, content_type, text = scrape(server)
    assert status == 200 and content_type.startswith("text/plain; version=0.0.4")
    before = samples(text)
    assert value(before, "memcached_up") == 1 and value(before, "redis_up") == 1
    with Conn(server.mc_port) as mc:
        mc.rt(b"set a 0 0 1\r\nx\r\n", b"STORED\r\n")
        mc.rt(b"get a\r\n", b"VALUE a 0 1\r\nx\r\nEND\r\n")
        mc.rt(b"get nope\r\n", b"END\r\n")
        mc.rt(b"get nope2\r\n", b"END\r\n")
    with Conn(server.resp_port) as c:
        c.rt(resp_encode("SELECT", "3"), b"+OK\r\n")
        c.rt(resp_encode("SET", "k", "v", "EX", "100"), b"+OK\r\n")
        c.rt(resp_encode("NOSUCH"), b"-ERR unknown command 'NOSUCH', with args beginning with: \r\n")
        after = samples(scrape(server)[2])
        assert value(after, "redis_connected_clients") == 1
    hits = value(after, "memcached_commands_total", command="get", status="hit")
    misses = value(after, "memcached_commands_total", command="get", status="miss")
    assert (hits, misses) == (1, 2)
    # The counters are the store's, shared by both protocols: Redis's SET is a set too.
    assert value(after, "memcached_commands_total", command="set", status="hit") == 2
    assert value(after, "memcached_current_items") == 2
    assert value(after, "redis_db_keys", db="db0") == 1
    assert value(after, "redis_db_keys", db="db3") == 1
    assert value(after, "redis_db_keys_expiring", db="db3") == 1
    assert value(after, "redis_errors_total", err="ERR") == 1
    processed = value(after, "redis_commands_processed_total")
    assert processed - value(before, "redis_commands_processed_total") >= 7
    assert value(after, "memcached_connections_total") >= 2
    assert value(after, "memcached_limit_bytes") == 64 * 2**20
    assert value(after, "redis_memory_used_bytes") > 0
    assert value(after, "spinel_memory_bytes", kind="store") > 0


def test_scraped_under_load(server):
    """Scrapes while clients of both protocols write: every one parses, and counters never
    go back."""
    stop = threading.Event()

    def load(port, make):
        with Conn(port) as conn:
            n = 0
            while not stop.is_set():
                conn.rt(*make(n))
                n += 1

    threads = [threading.Thread(target=load, args=(server.mc_port, memcache_rt)),
               threading.Thread(target=load, args=(server.resp_port, redis_rt))]
    for t in threads:
        t.start()
    try:
        last = 0
        for _ in range(20):
            found = samples(scrape(server)[2])
            total = value(found, "redis_commands_processed_total")
            assert total >= last
            last = total
    finally:
        stop.set()
        for t in threads:
            t.join(10)
    assert last > 0


def memcache_rt(n):
    return b"set k%d 0 0 1\r\nx\r\n" % (n % 500), b"STORED\r\n"


def redis_rt(n):
    return resp_encode("SET", f"r{n % 50}", "v"), b"+OK\r\n"


def test_probes_and_unknown_paths(server):
    assert scrape(server, "/healthz")[0] == 200
    assert scrape(server, "/readyz")[0] == 200
    with pytest.raises(urllib.error.HTTPError) as missing:
        scrape(server, "/nope")
    assert missing.value.code == 404


def test_command_counts_and_latency_histograms(server):
    """Calls are exact per command; the histogram samples one call in 64 of each command
    (both on one connection, so on one worker, whose counts decide the sample); its buckets
    are cumulative and end at its count."""
    with Conn(server.resp_port) as c:
        c.send(b"".join(resp_encode("SET", f"k{i}", "v") for i in range(320)))
        c.send(b"".join(resp_encode("GET", f"k{i}") for i in range(320)))
        for _ in range(320):
            c.read_line()
        for _ in range(320):
            c.read_line()
            c.read_line()
    _, _, text = scrape(server)
    found = samples(text)
    calls = lambda cmd: found[("spinel_redis_commands_total", frozenset({("cmd", cmd)}))]
    timed = lambda cmd: found[("spinel_redis_command_duration_seconds_count", frozenset({("cmd", cmd)}))]
    assert (calls("set"), calls("get")) == (320, 320)
    assert (timed("set"), timed("get")) == (320 // 64, 320 // 64)
    buckets = sorted(
        (float(dict(labels)["le"]), value) for (name, labels), value in found.items()
        if name == "spinel_redis_command_duration_seconds_bucket" and ("cmd", "set") in labels)
    assert buckets[-1] == (float("inf"), 320 // 64)
    assert all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:]))


def test_memory_of_large_collections(server):
    """A hash kept outside the store shows in memory by kind, and goes when it is deleted."""
    value = lambda found, **labels: found[("spinel_memory_bytes", frozenset(labels.items()))]
    assert value(samples(scrape(server)[2]), kind="collections") == 0
    with Conn(server.resp_port) as c:
        fields = [x for i in range(2000) for x in (f"field{i}", "v" * 40)]
        c.send(resp_encode("HSET", "big", *fields))
        assert c.read_line() == b":2000\r\n"
        held = value(samples(scrape(server)[2]), kind="collections")
        assert 2000 * 40 < held < 2000 * 400, held
        c.send(resp_encode("DEL", "big"))
        assert c.read_line() == b":1\r\n"
    assert value(samples(scrape(server)[2]), kind="collections") == 0


def test_worker_loops_report_busy_time_and_wakeups(server):
    with Conn(server.resp_port) as c:
        for i in range(50):
            c.send(resp_encode("SET", f"k{i}", "v"))
            assert c.read_line() == b"+OK\r\n"
    found = samples(scrape(server)[2])
    wakeups = {dict(labels)["thread"]: value for (name, labels), value in found.items()
               if name == "spinel_loop_wakeups_total"}
    busy = {dict(labels)["thread"]: value for (name, labels), value in found.items()
            if name == "spinel_loop_busy_seconds_total"}
    assert sorted(wakeups) == sorted(busy) == [str(t) for t in range(server.threads)]
    requests = {dict(labels)["thread"]: value for (name, labels), value in found.items()
                if name == "spinel_loop_requests_total"}
    assert sum(wakeups.values()) >= 50, "a wake-up per request at least, one at a time"
    assert 0 < sum(busy.values()) < 60
    # One connection, one worker: its loop ran the 50 SETs.
    assert sorted(requests) == sorted(wakeups) and max(requests.values()) == 50, requests


def test_connections_by_port(server):
    """Open and accepted connections of each listening port: the memcached and Redis ports
    are told apart, opening raises both counts, closing lowers only the open one."""
    def counts():
        found = samples(scrape(server)[2])
        return {port: (value(found, "spinel_connections", listener=name, port=str(port)),
                       value(found, "spinel_connections_accepted_total", listener=name,
                             port=str(port)))
                for name, port in (("memcache", server.mc_port), ("resp", server.resp_port))}

    # The readiness probes (one connection to each port) may still be closing, or on a
    # loaded machine not even accepted yet: counted only once both are accepted and closed.
    deadline = time.monotonic() + 5
    while any(open_now or not accepted for open_now, accepted in counts().values()):
        assert time.monotonic() < deadline, counts()
        time.sleep(0.05)
    before = counts()
    mc = [Conn(server.mc_port) for _ in range(3)]
    redis = [Conn(server.resp_port) for _ in range(2)]
    for c in mc:
        c.rt(b"mn\r\n", b"MN\r\n")
    for c in redis:
        c.rt(resp_encode("PING"), b"+PONG\r\n")
    during = counts()
    for port, opened in ((server.mc_port, 3), (server.resp_port, 2)):
        assert during[port][0] == before[port][0] + opened, (port, before, during)
        assert during[port][1] == before[port][1] + opened, (port, before, during)
    for c in mc + redis:
        c.close()
    deadline = time.monotonic() + 5
    while counts()[server.mc_port][0] != before[server.mc_port][0] \
            or counts()[server.resp_port][0] != before[server.resp_port][0]:
        assert time.monotonic() < deadline, (before, counts())
        time.sleep(0.05)
    after = counts()
    assert after[server.mc_port][1] == before[server.mc_port][1] + 3
    assert after[server.resp_port][1] == before[server.resp_port][1] + 2
