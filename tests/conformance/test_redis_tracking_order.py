"""Client-side caching: when and how invalidations arrive, byte for byte as redis-server 7.0
sends them. BCAST gathers a transaction's or a script's writes into one message per
prefix, after the reply; a RESP3 client named as a REDIRECT target gets pushes without
subscribing (with CLIENT REPLY OFF too); a blocked BLMOVE invalidates its destination only
once served, after its reply; INFO memory carries the fields Redis's own tracking test
reads. Run against redis-server with CONFORMANCE_TARGET=redis.
"""

import pytest

from test_redis_tracking import client_id, hello3, invalidate
from wire import Conn, resp_encode

pytestmark = pytest.mark.resp


def bcast_on(conn, *prefixes):
    args = [word for prefix in prefixes for word in ("PREFIX", prefix)]
    conn.rt(resp_encode("CLIENT", "TRACKING", "on", "BCAST", *args), b"+OK\r\n")


def test_bcast_gathers_a_transaction_per_prefix_after_its_reply(resp_port, key):
    a, b, c = key + ":a:", key + ":b:", key + ":c:"
    with Conn(resp_port) as reader, Conn(resp_port) as writer:
        hello3(reader)
        bcast_on(reader, a, b)
        writer.rt(resp_encode("MULTI"), b"+OK\r\n")
        for k in (b + "2", a + "2", a + "1", b + "1", c + "1", a + "1"):
            writer.rt(resp_encode("INCR", k), b"+QUEUED\r\n")
        writer.rt(resp_encode("EXEC"), b"*6\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:2\r\n")
        # One message per prefix, in prefix order, each key once and sorted.
        reader.rt(b"", invalidate(a + "1", a + "2") + invalidate(b + "1", b + "2"))
        reader.assert_quiet(0.2)


def test_bcast_own_transaction_invalidations_follow_exec_reply(resp_port, key):
    a = key + ":a:"
    with Conn(resp_port) as c:
        hello3(c)
        bcast_on(c, a)
        c.send(resp_encode("MULTI") + resp_encode("SET", a + "x", "1")
               + resp_encode("SET", a + "y", "2") + resp_encode("EXEC"))
        c.rt(b"", b"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+OK\r\n+OK\r\n"
             + invalidate(a + "x", a + "y"))
        # NOLOOP: the client's own writes are not announced to it.
        c.rt(resp_encode("CLIENT", "TRACKING", "off"), b"+OK\r\n")
        c.rt(resp_encode("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", a, "NOLOOP"), b"+OK\r\n")
        c.rt(resp_encode("MSET", a + "x", "1", a + "y", "2"), b"+OK\r\n")
        c.assert_quiet(0.2)


def test_bcast_gathers_a_scripts_writes(resp_port, key):
    a = key + ":a:"
    with Conn(resp_port) as reader, Conn(resp_port) as writer:
        hello3(reader)
        bcast_on(reader, a)
        script = "redis.call('set', KEYS[2], 1); redis.call('set', KEYS[1], 1); return 7"
        writer.rt(resp_encode("EVAL", script, "2", a + "2", a + "1"), b":7\r\n")
        reader.rt(b"", invalidate(a + "1", a + "2"))
        reader.assert_quiet(0.2)


def test_redirect_to_a_resp3_client_that_never_subscribed(resp_port, key):
    with Conn(resp_port) as target, Conn(resp_port) as c, Conn(resp_port) as writer:
        hello3(target)
        target_id = client_id(target)
        c.rt(resp_encode("CLIENT", "TRACKING", "on", "REDIRECT", str(target_id)), b"+OK\r\n")
        writer.rt(resp_encode("SET", key, "1"), b"+OK\r\n")
        c.rt(resp_encode("GET", key), b"$1\r\n1\r\n")
        writer.rt(resp_encode("SET", key, "2"), b"+OK\r\n")
        target.rt(b"", invalidate(key))
        # CLIENT REPLY OFF silences replies, not pushes.
        c.rt(resp_encode("GET", key), b"$1\r\n2\r\n")
        target.send(resp_encode("CLIENT", "REPLY", "OFF"))
        target.assert_quiet(0.1)
        writer.rt(resp_encode("SET", key, "3"), b"+OK\r\n")
        target.rt(b"", invalidate(key))
        target.rt(resp_encode("CLIENT", "REPLY", "ON"), b"+OK\r\n")
        target.rt(resp_encode("PING"), b"+PONG\r\n")
        c.assert_quiet(0.05)


def test_served_blmove_invalidates_after_its_reply(resp_port, key):
    source, destination = "{%s}src" % key, "{%s}dst" % key
    with Conn(resp_port) as waiter, Conn(resp_port) as pusher:
        pusher.rt(resp_encode("RPUSH", destination, "a"), b":1\r\n")
        hello3(waiter)
        waiter.rt(resp_encode("CLIENT", "TRACKING", "on"), b"+OK\r\n")
        waiter.rt(resp_encode("LRANGE", destination, "0", "-1"), b"*1\r\n$1\r\na\r\n")
        # Blocked, it has changed nothing: no invalidation yet.
        waiter.send(resp_encode("BLMOVE", source, destination, "LEFT", "LEFT", "0"))
        waiter.assert_quiet(0.2)
        pusher.rt(resp_encode("RPUSH", source, "foo"), b":1\r\n")
        waiter.rt(b"", b"$3\r\nfoo\r\n" + invalidate(destination))
        waiter.assert_quiet(0.1)


def test_served_blmove_invalidates_other_readers(resp_port, key):
    source, destination = "{%s}src" % key, "{%s}dst" % key
    with Conn(resp_port) as reader, Conn(resp_port) as waiter, Conn(resp_port) as pusher:
        hello3(reader)
        reader.rt(resp_encode("CLIENT", "TRACKING", "on"), b"+OK\r\n")
        reader.rt(resp_encode("LRANGE", destination, "0", "-1"), b"*0\r\n")
        waiter.send(resp_encode("BLMOVE", source, destination, "LEFT", "LEFT", "0"))
        reader.assert_quiet(0.2)
        pusher.rt(resp_encode("RPUSH", source, "foo"), b":1\r\n")
        waiter.rt(b"", b"$3\r\nfoo\r\n")
        reader.rt(b"", invalidate(destination))


def test_info_memory_fields_the_tracking_test_reads(resp_port):
    with Conn(resp_port) as c:
        c.send(resp_encode("INFO", "memory"))
        header = c.read_line()
        body = c.read_exact(int(header[1:-2]) + 2).decode()
    fields = dict(line.split(":", 1) for line in body.split("\r\n") if ":" in line)
    assert fields["lazyfree_pending_objects"] == "0"
    assert int(fields["mem_not_counted_for_evict"]) >= 0
