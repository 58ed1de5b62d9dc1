"""Active expiry: keys whose TTL passed leave DBSIZE, SCAN and KEYS within a few seconds
although nobody reads them again (Redis removes them in the background; so does Spinel's
store, from its workers' ticks). Runs against Spinel and the real Redis.

The second test mixes keys that expire at once with keys that live on for 9 s: in Spinel
both share a TTL class, so their segments are never wholly dead and only the sweep of the
index can remove the expired ones (whole-segment reclaim covers the first test).
"""

import time

import pytest
import redis

pytestmark = pytest.mark.resp

EACH = 1000
POLL_S = 5.0


def _client(server):
    return redis.Redis(host="127.0.0.1", port=server.resp_port, socket_timeout=10)


def _server(make_server, target, memory_mib):
    # A large memory limit makes the index large (about 512K slots at 1 GiB): the sweep must
    # still pass over it within the deadline.
    extra = ("-m", str(memory_mib)) if target == "spinel" else ()
    return make_server(extra=extra)


def _set_many(r, prefix, **ttl):
    pipe = r.pipeline(transaction=False)
    for i in range(EACH):
        pipe.set(f"{prefix}:{i}", b"v" * 32, **ttl)
    assert all(pipe.execute())


def _dbsize_reaches(r, want, deadline):
    size = r.dbsize()
    while size != want and time.monotonic() < deadline:
        time.sleep(0.1)
        size = r.dbsize()
    return size


def _scanned(r):
    return {k.decode() for k in r.scan_iter(count=100)}


@pytest.mark.parametrize("memory_mib", [64, 1024])
def test_expired_keys_leave_dbsize_scan_and_keys(make_server, target, memory_mib):
    r = _client(_server(make_server, target, memory_mib))
    _set_many(r, "short", px=200)
    _set_many(r, "plain")
    written = time.monotonic()
    size = _dbsize_reaches(r, EACH, written + POLL_S)
    assert size == EACH, f"DBSIZE {size} {time.monotonic() - written:.1f} s after the writes"
    persistent = {f"plain:{i}" for i in range(EACH)}
    assert _scanned(r) == persistent
    assert {k.decode() for k in r.keys("*")} == persistent
    # Counted as expired, as a read that finds them expired would count them.
    assert r.info("stats")["expired_keys"] == EACH


@pytest.mark.parametrize("memory_mib", [64, 1024])
def test_expired_keys_leave_among_longer_lived_ones(make_server, target, memory_mib):
    r = _client(_server(make_server, target, memory_mib))
    # Interleaved, so that each segment holds both.
    pipe = r.pipeline(transaction=False)
    for i in range(EACH):
        pipe.set(f"short:{i}", b"v" * 32, px=200)
        pipe.set(f"long:{i}", b"v" * 32, ex=9)
    assert all(pipe.execute())
    _set_many(r, "plain")
    written = time.monotonic()
    size = _dbsize_reaches(r, 2 * EACH, written + POLL_S)
    assert size == 2 * EACH, f"DBSIZE {size} {time.monotonic() - written:.1f} s after the writes"
    assert time.monotonic() - written < 8, "too slow to tell: the long keys near their expiry"
    keys = _scanned(r)
    assert not any(k.startswith("short:") for k in keys)
    assert len(keys) == 2 * EACH
    assert r.exists(*[f"long:{i}" for i in range(EACH)]) == EACH
    assert r.info("stats")["expired_keys"] == EACH
