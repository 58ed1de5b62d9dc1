"""Client-side caching (CLIENT TRACKING): wire transcripts of the invalidations in RESP3
(pushes on the reading connection) and RESP2 (REDIRECT to a subscriber of
`__redis__:invalidate`), BCAST with PREFIX, OPTIN/OPTOUT with CLIENT CACHING, NOLOOP,
GETREDIR and TRACKINGINFO, the errors; invalidation by a write from other connections (on
other workers), by a memcached write (Spinel only), by expiry, eviction, FLUSHALL and the
table's own limit; and redis-py's client-side cache end to end. Checked byte for byte
against redis-server with CONFORMANCE_TARGET=redis.
"""

import time

import pytest
import redis

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

WRITERS = 6  # connections spread over the workers (accepted round robin)


def invalidate(*keys, resp3=True):
    """The invalidation of `keys` (None: a flush) as a RESP3 push, or (resp3=False) as the
    pub/sub message a RESP2 REDIRECT target gets."""
    if keys == (None,):
        payload = b"_\r\n" if resp3 else b"$-1\r\n"
    else:
        payload = b"*%d\r\n" % len(keys) + b"".join(
            b"$%d\r\n%s\r\n" % (len(k), k.encode()) for k in keys)
    if resp3:
        return b">2\r\n$10\r\ninvalidate\r\n" + payload
    return b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n" + payload


def hello3(conn):
    conn.send(resp_encode("HELLO", "3"))
    conn.read_until(b"modules\r\n*0\r\n")


def client_id(conn):
    conn.send(resp_encode("CLIENT", "ID"))
    return int(conn.read_line()[1:-2])


def test_resp3_push_after_a_write_from_each_other_connection(resp_port, key):
    with Conn(resp_port) as reader:
        hello3(reader)
        reader.rt(resp_encode("CLIENT", "TRACKING", "on"), b"+OK\r\n")
        writers = [Conn(resp_port) for _ in range(WRITERS)]
        try:
            for i, writer in enumerate(writers):
                reader.rt(resp_encode("GET", key), b"_\r\n" if i == 0 else b"$1\r\n%d\r\n" % (i - 1))
                writer.rt(resp_encode("SET", key, str(i)), b"+OK\r\n")
                reader.rt(b"", invalidate(key))
                # Forgotten once invalidated: a second write sends nothing.
                writer.rt(resp_encode("SET", key, str(i)), b"+OK\r\n")
                reader.assert_quiet(0.2)
        finally:
            for writer in writers:
                writer.close()


def test_writes_that_change_nothing_send_nothing(resp_port, key):
    with Conn(resp_port) as reader, Conn(resp_port) as writer:
        hello3(reader)
        reader.rt(resp_encode("CLIENT", "TRACKING", "on"), b"+OK\r\n")
        writer.rt(resp_encode("SET", key, "v"), b"+OK\r\n")
        reader.rt(resp_encode("GET", key), b"$1\r\nv\r\n")
        writer.rt(resp_encode("SET", key, "w", "NX"), b"$-1\r\n")
        writer.rt(resp_encode("EXPIRE", key + "nokey", "10"), b":0\r\n")
        writer.rt(resp_encode("INCR", key), b"-ERR value is not an integer or out of range\r\n")
        reader.assert_quiet(0.2)
        writer.rt(resp_encode("APPEND", key, "x"), b":2\r\n")
        reader.rt(b"", invalidate(key))


@pytest.mark.parametrize("setup, read, unchanged, changed", [
    # Collection writes that change nothing: a missing key or member, the same bit.
    (("RPUSH", "a"), ("LRANGE", "0", "-1"), [("LPOP", "@other"), ("LREM", "0", "zz"),
                                             ("LINSERT", "BEFORE", "zz", "x")], ("LPOP",)),
    (("SADD", "a"), ("SMEMBERS",), [("SADD", "a"), ("SREM", "zz"), ("SMOVE", "@other", "zz")],
     ("SREM", "a")),
    (("ZADD", "1", "a"), ("ZRANGE", "0", "-1"), [("ZADD", "XX", "1", "b"), ("ZREM", "zz")],
     ("ZADD", "2", "a")),
    (("HSET", "f", "v"), ("HGETALL",), [("HDEL", "zz")], ("HDEL", "f")),
    (("SETBIT", "1", "1"), ("GET",), [("SETBIT", "1", "1"), ("PFADD", "@other", "a"),
                                      ("BITFIELD", "SET", "u8", "0", "64"),
                                      ("BITFIELD", "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "9")],
     ("BITFIELD", "SET", "u8", "0", "65")),
])
def test_collection_writes_that_change_nothing_send_nothing(resp_port, key, setup, read,
                                                            unchanged, changed):
    def command(args):  # "@other" stands for another key
        name, rest = args[0], [key + ":o" if a == "@other" else a for a in args[1:]]
        return resp_encode(name, key, *rest)
    with Conn(resp_port) as reader, Conn(resp_port) as writer:
        hello3(reader)
        reader.rt(resp_encode("CLIENT", "TRACKING", "on"), b"+OK\r\n")
        writer.send(command(setup))
        writer.read_line()
        reader.send(command(read))
        time.sleep(0.05)
        reader.sock.recv(65536)
        for args in unchanged:
            writer.send(command(args))
            time.sleep(0.05)
            writer.sock.recv(65536)
        reader.assert_quiet(0.2)
        writer.send(command(changed))
        reader.rt(b"", invalidate(key))


@pytest.mark.parametrize("setup, unchanged, changed", [
    # String and generic-key writes: "{k}" is the tracked key, "{o}" another one.
    ([("SET", "{k}", "abc")], [("SETRANGE", "{k}", "0", ""), ("SETRANGE", "{o}", "5", ""),
                               ("GETDEL", "{o}"), ("DEL", "{o}")],
     ("SETRANGE", "{k}", "1", "z")),
    ([("SET", "{k}", "v")], [("PERSIST", "{k}"), ("GETEX", "{k}"), ("GETEX", "{k}", "PERSIST"),
                             ("EXPIRE", "{k}", "100", "XX")],
     ("EXPIRE", "{k}", "100")),
    ([("SET", "{k}", "v", "EX", "100")], [("EXPIRE", "{k}", "200", "NX"),
                                           ("EXPIRE", "{k}", "50", "GT")],
     ("PERSIST", "{k}")),
    ([("SET", "{k}", "v"), ("SET", "{o}", "w")],
     [("RENAMENX", "{o}", "{k}"), ("RENAMENX", "{o}:none", "{k}"), ("COPY", "{o}", "{k}"),
      ("MSETNX", "{o}:new", "1", "{k}", "2"), ("SETNX", "{k}", "x")],
     ("RENAME", "{o}", "{k}")),
    ([("SET", "{k}", "v"), ("SET", "{o}", "w")], [("COPY", "{o}:none", "{k}", "REPLACE")],
     ("COPY", "{o}", "{k}", "REPLACE")),
    ([("SET", "{k}", "1.5")], [("INCRBYFLOAT", "{o}:none", "nan"), ("MOVE", "{o}:none", "9")],
     ("INCRBYFLOAT", "{k}", "1")),
    ([("SET", "{k}", "v")], [("SORT", "{o}:none", "STORE", "{o}:dest")],
     ("SORT", "{o}:none", "STORE", "{k}")),
    ([("SET", "{k}", "v")], [("FLUSHALL", "NOPE")], ("MOVE", "{k}", "9")),
])
def test_string_and_key_writes_invalidate_only_what_they_changed(resp_port, key, setup,
                                                                 unchanged, changed):
    """Redis invalidates a key only when a write changed it (signalModifiedKey): the
    writes listed first change nothing the reader holds, the last one does."""
    def command(args):
        return resp_encode(*[a.replace("{k}", key).replace("{o}", key + ":o") for a in args])
    with Conn(resp_port) as reader, Conn(resp_port) as writer:
        writer.rt(resp_encode("SELECT", "9"), b"+OK\r\n")
        writer.rt(resp_encode("DEL", key), b":0\r\n")
        writer.rt(resp_encode("SELECT", "0"), b"+OK\r\n")
        for args in setup:
            writer.send(command(args))
            writer.read_line()
        hello3(reader)
        reader.rt(resp_encode("CLIENT", "TRACKING", "on"), b"+OK\r\n")
        reader.send(resp_encode("GET", key))
        time.sleep(0.05)
        reader.sock.recv(65536)
        for args in unchanged:
            writer.send(command(args))
            time.sleep(0.05)
            writer.sock.recv(65536)
        reader.assert_quiet(0.2)
        writer.send(command(changed))
        reader.rt(b"", invalidate(key))


def test_resp2_redirect_to_a_subscriber_of_the_invalidate_channel(resp_port, key):
    with Conn(resp_port) as sub, Conn(resp_port) as reader, Conn(resp_port) as writer:
        sub_id = client_id(sub)
        sub.rt(resp_encode("SUBSCRIBE", "__redis__:invalidate"),
               b"*3\r\n$9\r\nsubscribe\r\n$20\r\n__redis__:invalidate\r\n:1\r\n")
        reader.rt(resp_encode("CLIENT", "TRACKING", "on", "REDIRECT", str(sub_id)), b"+OK\r\n")
        reader.rt(resp_encode("CLIENT", "GETREDIR"), b":%d\r\n" % sub_id)
        reader.rt(resp_encode("MGET", key, key + "b"), b"*2\r\n$-1\r\n$-1\r\n")
        writer.rt(resp_encode("MSET", key, "1", key + "b", "2"), b"+OK\r\n")
        got = sub.read_exact(2 * len(invalidate(key, resp3=False)) + 1)
        assert sorted([got[:len(invalidate(key, resp3=False))],
                       got[len(invalidate(key, resp3=False)):]]) == \
            sorted([invalidate(key, resp3=False), invalidate(key + "b", resp3=False)])
        reader.rt(resp_encode("GET", key), b"$1\r\n1\r\n")
        writer.rt(resp_encode("FLUSHDB"), b"+OK\r\n")
        # A flush invalidates everything: a null in the tracking client's protocol.
        sub.rt(b"", invalidate(None, resp3=False))
        # The reader itself (RESP2) gets nothing on its own connection.
        reader.assert_quiet(0.1)


def test_flushall_sends_a_null_to_every_tracking_client(resp_port):
    with Conn(resp_port) as a, Conn(resp_port) as b, Conn(resp_port) as writer:
        hello3(a)
        hello3(b)
        a.rt(resp_encode("CLIENT", "TRACKING", "on"), b"+OK\r\n")
        b.rt(resp_encode("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "zz"), b"+OK\r\n")
        writer.rt(resp_encode("FLUSHALL"), b"+OK\r\n")
        a.rt(b"", invalidate(None))
        b.rt(b"", invalidate(None))
        # The flushing client's own null comes after its reply.
        a.rt(resp_encode("FLUSHALL"), b"+OK\r\n" + invalidate(None))
        b.rt(b"", invalidate(None))


def test_bcast_with_prefixes(resp_port, key):
    with Conn(resp_port) as reader, Conn(resp_port) as writer:
        hello3(reader)
        reader.rt(resp_encode("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", key + ":a",
                              "PREFIX", key + ":b"), b"+OK\r\n")
        # No read needed: any write of a matching key is announced.
        writer.rt(resp_encode("SET", key + ":a1", "v"), b"+OK\r\n")
        reader.rt(b"", invalidate(key + ":a1"))
        writer.rt(resp_encode("SET", key + ":b", "v"), b"+OK\r\n")
        reader.rt(b"", invalidate(key + ":b"))
        writer.rt(resp_encode("SET", key + ":a1", "v"), b"+OK\r\n")
        reader.rt(b"", invalidate(key + ":a1"))
        writer.rt(resp_encode("SET", key + ":c", "v"), b"+OK\r\n")
        reader.assert_quiet(0.2)
        reader.rt(resp_encode("CLIENT", "TRACKINGINFO"),
                  b"%3\r\n$5\r\nflags\r\n~2\r\n$2\r\non\r\n$5\r\nbcast\r\n$8\r\nredirect\r\n:0\r\n"
                  b"$8\r\nprefixes\r\n*2\r\n" + b"".join(
                      b"$%d\r\n%s\r\n" % (len(p), p.encode()) for p in (key + ":a", key + ":b")))
        reader.rt(resp_encode("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", key + ":ab"),
                  b"-ERR Prefix '%s:ab' overlaps with an existing prefix '%s:a'. Prefixes for "
                  b"a single client must not overlap.\r\n" % (key.encode(), key.encode()))
        reader.rt(resp_encode("CLIENT", "TRACKING", "off"), b"+OK\r\n")
        writer.rt(resp_encode("SET", key + ":a1", "v"), b"+OK\r\n")
        reader.assert_quiet(0.2)


def test_bcast_without_prefix_tracks_every_key(resp_port, key):
    with Conn(resp_port) as reader, Conn(resp_port) as writer:
        hello3(reader)
        reader.rt(resp_encode("CLIENT", "TRACKING", "on", "BCAST"), b"+OK\r\n")
        writer.rt(resp_encode("DEL", key), b":0\r\n")
        reader.assert_quiet(0.1)
        writer.rt(resp_encode("SET", key, "1"), b"+OK\r\n")
        reader.rt(b"", invalidate(key))
        reader.rt(resp_encode("CLIENT", "TRACKING", "off"), b"+OK\r\n")


def test_optin_tracks_only_after_caching_yes(resp_port, key):
    with Conn(resp_port) as reader, Conn(resp_port) as writer:
        hello3(reader)
        reader.rt(resp_encode("CLIENT", "TRACKING", "on", "OPTIN"), b"+OK\r\n")
        reader.rt(resp_encode("GET", key), b"_\r\n")
        writer.rt(resp_encode("SET", key, "1"), b"+OK\r\n")
        reader.assert_quiet(0.2)
        reader.rt(resp_encode("CLIENT", "CACHING", "yes"), b"+OK\r\n")
        reader.rt(resp_encode("CLIENT", "TRACKINGINFO"),
                  b"%3\r\n$5\r\nflags\r\n~3\r\n$2\r\non\r\n$5\r\noptin\r\n$11\r\ncaching-yes\r\n"
                  b"$8\r\nredirect\r\n:0\r\n$8\r\nprefixes\r\n*0\r\n")
        reader.rt(resp_encode("GET", key), b"$1\r\n1\r\n")
        # CACHING applied to that one command only.
        reader.rt(resp_encode("GET", key + "x"), b"_\r\n")
        writer.rt(resp_encode("SET", key + "x", "1"), b"+OK\r\n")
        writer.rt(resp_encode("SET", key, "2"), b"+OK\r\n")
        reader.rt(b"", invalidate(key))


def test_optout_tracks_all_but_after_caching_no(resp_port, key):
    with Conn(resp_port) as reader, Conn(resp_port) as writer:
        hello3(reader)
        reader.rt(resp_encode("CLIENT", "TRACKING", "on", "OPTOUT"), b"+OK\r\n")
        reader.rt(resp_encode("CLIENT", "CACHING", "no"), b"+OK\r\n")
        reader.rt(resp_encode("GET", key), b"_\r\n")
        writer.rt(resp_encode("SET", key, "1"), b"+OK\r\n")
        reader.assert_quiet(0.2)
        reader.rt(resp_encode("GET", key), b"$1\r\n1\r\n")
        writer.rt(resp_encode("SET", key, "2"), b"+OK\r\n")
        reader.rt(b"", invalidate(key))
        reader.rt(resp_encode("CLIENT", "CACHING", "yes"),
                  b"-ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN "
                  b"mode.\r\n")


def test_noloop_skips_the_clients_own_writes(resp_port, key):
    with Conn(resp_port) as reader, Conn(resp_port) as writer:
        hello3(reader)
        reader.rt(resp_encode("CLIENT", "TRACKING", "on", "NOLOOP"), b"+OK\r\n")
        reader.rt(resp_encode("GET", key), b"_\r\n")
        reader.rt(resp_encode("SET", key, "1"), b"+OK\r\n")
        reader.assert_quiet(0.2)
        reader.rt(resp_encode("GET", key), b"$1\r\n1\r\n")
        writer.rt(resp_encode("SET", key, "2"), b"+OK\r\n")
        reader.rt(b"", invalidate(key))
        # Without NOLOOP its own write comes back, after the reply.
        reader.rt(resp_encode("CLIENT", "TRACKING", "on"), b"+OK\r\n")
        reader.rt(resp_encode("GET", key), b"$1\r\n2\r\n")
        reader.rt(resp_encode("SET", key, "3"), b"+OK\r\n" + invalidate(key))


def test_getredir_and_trackinginfo(resp_port):
    with Conn(resp_port) as c, Conn(resp_port) as target:
        target_id = client_id(target)
        c.rt(resp_encode("CLIENT", "GETREDIR"), b":-1\r\n")
        c.rt(resp_encode("CLIENT", "TRACKINGINFO"),
             b"*6\r\n$5\r\nflags\r\n*1\r\n$3\r\noff\r\n$8\r\nredirect\r\n:-1\r\n"
             b"$8\r\nprefixes\r\n*0\r\n")
        c.rt(resp_encode("CLIENT", "TRACKING", "on"), b"+OK\r\n")
        c.rt(resp_encode("CLIENT", "GETREDIR"), b":0\r\n")
        c.rt(resp_encode("CLIENT", "TRACKING", "on", "REDIRECT", str(target_id), "NOLOOP"),
             b"+OK\r\n")
        c.rt(resp_encode("CLIENT", "GETREDIR"), b":%d\r\n" % target_id)
        c.rt(resp_encode("CLIENT", "TRACKINGINFO"),
             b"*6\r\n$5\r\nflags\r\n*2\r\n$2\r\non\r\n$6\r\nnoloop\r\n$8\r\nredirect\r\n"
             b":%d\r\n$8\r\nprefixes\r\n*0\r\n" % target_id)
        c.send(resp_encode("CLIENT", "INFO"))
        info = c.read_line() and c.read_line()
        assert b" flags=t " in info and b" redir=%d " % target_id in info, info
        c.rt(resp_encode("CLIENT", "TRACKING", "off"), b"+OK\r\n")
        c.rt(resp_encode("CLIENT", "GETREDIR"), b":-1\r\n")


def test_broken_redirect(resp_port, key):
    with Conn(resp_port) as c, Conn(resp_port) as writer:
        hello3(c)
        target = Conn(resp_port)
        target_id = client_id(target)
        c.rt(resp_encode("CLIENT", "TRACKING", "on", "REDIRECT", str(target_id)), b"+OK\r\n")
        c.rt(resp_encode("GET", key), b"_\r\n")
        target.close()
        time.sleep(0.2)
        writer.rt(resp_encode("SET", key, "1"), b"+OK\r\n")
        c.rt(b"", b">2\r\n$21\r\ntracking-redir-broken\r\n:%d\r\n" % target_id)
        c.rt(resp_encode("CLIENT", "TRACKINGINFO"),
             b"%3\r\n$5\r\nflags\r\n~2\r\n$2\r\non\r\n$15\r\nbroken_redirect\r\n$8\r\nredirect"
             b"\r\n:" + str(target_id).encode() + b"\r\n$8\r\nprefixes\r\n*0\r\n")


def test_redirect_to_a_client_not_subscribed_sends_nothing(resp_port, key):
    with Conn(resp_port) as c, Conn(resp_port) as target, Conn(resp_port) as writer:
        hello3(c)
        target_id = client_id(target)
        c.rt(resp_encode("CLIENT", "TRACKING", "on", "REDIRECT", str(target_id)), b"+OK\r\n")
        c.rt(resp_encode("GET", key), b"_\r\n")
        writer.rt(resp_encode("SET", key, "1"), b"+OK\r\n")
        c.assert_quiet(0.2)
        target.assert_quiet(0.05)
        c.rt(resp_encode("CLIENT", "TRACKINGINFO"),
             b"%3\r\n$5\r\nflags\r\n~1\r\n$2\r\non\r\n$8\r\nredirect\r\n:"
             + str(target_id).encode() + b"\r\n$8\r\nprefixes\r\n*0\r\n")


ERRORS = [
    (("CLIENT", "TRACKING"), b"-ERR wrong number of arguments for 'client|tracking' command"),
    (("CLIENT", "TRACKING", "maybe"), b"-ERR syntax error"),
    (("CLIENT", "TRACKING", "on", "FOO"), b"-ERR syntax error"),
    (("CLIENT", "TRACKING", "on", "PREFIX", "a"),
     b"-ERR PREFIX option requires BCAST mode to be enabled"),
    (("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "ab", "PREFIX", "a"),
     b"-ERR Prefix 'ab' overlaps with another provided prefix 'a'. Prefixes for a single "
     b"client must not overlap."),
    (("CLIENT", "TRACKING", "on", "BCAST", "OPTIN"),
     b"-ERR OPTIN and OPTOUT are not compatible with BCAST"),
    (("CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT"),
     b"-ERR You can't specify both OPTIN mode and OPTOUT mode"),
    (("CLIENT", "TRACKING", "on", "REDIRECT", "999999"),
     b"-ERR The client ID you want redirect to does not exist"),
    (("CLIENT", "TRACKING", "on", "REDIRECT", "x"),
     b"-ERR value is not an integer or out of range"),
    (("CLIENT", "CACHING", "yes"),
     b"-ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN "
     b"or OPTOUT mode enabled"),
    (("CLIENT", "CACHING", "maybe"),
     b"-ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN "
     b"or OPTOUT mode enabled"),
    (("CLIENT", "GETREDIR", "x"), b"-ERR wrong number of arguments for 'client|getredir' command"),
]


def test_errors(resp_port):
    with Conn(resp_port) as c, Conn(resp_port) as other:
        for args, expected in ERRORS:
            c.rt(resp_encode(*args), expected + b"\r\n")
        other_id = client_id(other)
        c.rt(resp_encode("CLIENT", "TRACKING", "on", "REDIRECT", str(other_id), "REDIRECT",
                         str(other_id)),
             b"-ERR A client can only redirect to a single other client\r\n")
        c.rt(resp_encode("CLIENT", "TRACKING", "on", "OPTIN"), b"+OK\r\n")
        c.rt(resp_encode("CLIENT", "CACHING", "maybe"), b"-ERR syntax error\r\n")
        c.rt(resp_encode("CLIENT", "CACHING", "no"),
             b"-ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.\r\n")
        c.rt(resp_encode("CLIENT", "TRACKING", "on", "OPTOUT"),
             b"-ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this "
             b"client, and then re-enabling it with a different mode.\r\n")
        c.rt(resp_encode("CLIENT", "TRACKING", "on", "BCAST"),
             b"-ERR You can't switch BCAST mode on/off before disabling tracking for this "
             b"client, and then re-enabling it with a different mode.\r\n")
        c.rt(resp_encode("CLIENT", "TRACKING", "off"), b"+OK\r\n")


@pytest.mark.spinel_only
def test_a_memcached_write_invalidates(resp_port, mc_port, key):
    with Conn(resp_port) as reader, Conn(mc_port) as mc:
        hello3(reader)
        reader.rt(resp_encode("CLIENT", "TRACKING", "on"), b"+OK\r\n")
        reader.rt(resp_encode("GET", key), b"_\r\n")
        mc.rt(b"set %s 0 0 1\r\nv\r\n" % key.encode(), b"STORED\r\n")
        reader.rt(b"", invalidate(key))
        reader.rt(resp_encode("GET", key), b"$1\r\nv\r\n")
        # A write that changes nothing sends nothing (test_memcache_tracking_outcome.py).
        mc.rt(b"incr %s 1\r\n" % key.encode(), b"CLIENT_ERROR cannot increment or decrement "
              b"non-numeric value\r\n")
        reader.assert_quiet(0.2)
        mc.rt(b"md %s\r\n" % key.encode(), b"HD\r\n")
        reader.rt(b"", invalidate(key))
        reader.rt(resp_encode("GET", key), b"_\r\n")
        mc.rt(b"flush_all\r\n", b"OK\r\n")
        reader.rt(b"", invalidate(None))


def test_expiry_invalidates(resp_port, key):
    with Conn(resp_port) as reader, Conn(resp_port) as writer:
        hello3(reader)
        reader.rt(resp_encode("CLIENT", "TRACKING", "on"), b"+OK\r\n")
        writer.rt(resp_encode("SET", key, "v", "PX", "300"), b"+OK\r\n")
        reader.rt(resp_encode("GET", key), b"$1\r\nv\r\n")
        # Active expiry finds it without anyone reading it (bounded wait).
        got = reader.read_exact(len(invalidate(key)), timeout=10)
        assert got == invalidate(key)


def test_eviction_invalidates(make_server, target):
    """Keys read by a tracking client (so kept by the store's second chance, or recently
    used for Redis's LRU) until memory runs out: evicted ones are invalidated."""
    extra = ["--maxmemory", "8mb", "--maxmemory-policy", "allkeys-lru"] if target == "redis" \
        else ["-m", "8"]
    server = make_server(extra=extra)
    writer = redis.Redis(port=server.resp_port)
    with Conn(server.resp_port) as sub:
        sub_id = client_id(sub)
        sub.rt(resp_encode("SUBSCRIBE", "__redis__:invalidate"),
               b"*3\r\n$9\r\nsubscribe\r\n$20\r\n__redis__:invalidate\r\n:1\r\n")
        reader = redis.Redis(port=server.resp_port, single_connection_client=True)
        reader.execute_command("CLIENT", "TRACKING", "on", "REDIRECT", sub_id)
        value = "y" * 1000
        got = b""
        for batch in range(100):
            keys = [f"k{batch}:{i}" for i in range(500)]
            writer.mset({k: value for k in keys})
            reader.mget(keys)
            sub.sock.settimeout(0.05)
            try:
                got += sub.sock.recv(65536)
            except OSError:
                pass
            if b"__redis__:invalidate" in got:
                break
        assert b"__redis__:invalidate" in got, "no invalidation after filling memory"
        name = got.split(b"invalidate\r\n*1\r\n$", 1)[1].split(b"\r\n")[1].decode()
        assert name.startswith("k")
        assert writer.exists(name) == 0
        reader.close()
    writer.close()


def test_table_limit_evicts_with_invalidations(resp_port, key):
    with Conn(resp_port) as reader, Conn(resp_port) as admin:
        admin.rt(resp_encode("CONFIG", "GET", "tracking-table-max-keys"),
                 b"*2\r\n$23\r\ntracking-table-max-keys\r\n$7\r\n1000000\r\n")
        hello3(reader)
        reader.rt(resp_encode("CLIENT", "TRACKING", "on"), b"+OK\r\n")
        reader.rt(resp_encode("MGET", key + "1", key + "2"), b"*2\r\n_\r\n_\r\n")
        try:
            admin.rt(resp_encode("CONFIG", "SET", "tracking-table-max-keys", "1"), b"+OK\r\n")
            # Other tests' clients may have tracked keys too: read until one of ours goes.
            deadline = time.monotonic() + 5
            while True:
                got = reader.read_until(b"\r\n", timeout=max(0.1, deadline - time.monotonic()))
                if got.startswith(b"$") and got[1:-2].isdigit():
                    name = reader.read_line()[:-2].decode()
                    if name in (key + "1", key + "2"):
                        break
        finally:
            admin.rt(resp_encode("CONFIG", "SET", "tracking-table-max-keys", "1000000"),
                     b"+OK\r\n")


def test_info_counts_and_disconnect_leaves_nothing(make_server):
    server = make_server()
    admin = redis.Redis(port=server.resp_port)
    assert admin.info("clients")["tracking_clients"] == 0
    with Conn(server.resp_port) as reader:
        hello3(reader)
        reader.rt(resp_encode("CLIENT", "TRACKING", "on"), b"+OK\r\n")
        reader.rt(resp_encode("MGET", "a", "b", "c"), b"*3\r\n_\r\n_\r\n_\r\n")
        with Conn(server.resp_port) as bcast:
            bcast.rt(resp_encode("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "p",
                                 "PREFIX", "q"), b"+OK\r\n")
            stats = admin.info("stats")
            assert admin.info("clients")["tracking_clients"] == 2
            assert (stats["tracking_total_keys"], stats["tracking_total_items"],
                    stats["tracking_total_prefixes"]) == (3, 3, 2)
    deadline = time.monotonic() + 5
    while admin.info("clients")["tracking_clients"] != 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert admin.info("clients")["tracking_clients"] == 0
    assert admin.info("stats")["tracking_total_prefixes"] == 0
    admin.set("a", "1")  # a write to a key a closed client tracked
    assert admin.get("a") == b"1"
    admin.close()


def test_redis_py_client_side_cache(resp_port, key, monkeypatch):
    """redis-py 5.2's own cache (RESP3, CLIENT TRACKING on its connection): a read is served
    locally until another client's write invalidates it. redis-py refuses servers below 7.4
    (a policy of its own, not a protocol need); the check is lowered for the test."""
    from redis.cache import CacheConfig
    from redis.connection import CacheProxyConnection
    monkeypatch.setattr(CacheProxyConnection, "MIN_ALLOWED_VERSION", "7.0.0")
    cached = redis.Redis(port=resp_port, protocol=3, cache_config=CacheConfig())
    other = redis.Redis(port=resp_port)
    try:
        other.set(key, "1")
        assert cached.get(key) == b"1"
        cache = cached.get_cache()
        assert cache.size == 1
        assert cached.get(key) == b"1"  # from the local cache
        other.set(key, "2")
        deadline = time.monotonic() + 5
        while True:
            value = cached.get(key)
            if value == b"2" or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        assert value == b"2"
    finally:
        cached.close()
        other.close()


@pytest.mark.spinel_only
def test_table_memory_is_charged_to_used_memory(make_server):
    """The table's bytes count against the memory limit: INFO used_memory rises while a
    client tracks 20,000 keys (about 150 bytes each with 10-byte names) and falls back once
    the last tracking client turns tracking off (the table empties)."""
    server = make_server()
    admin = redis.Redis(port=server.resp_port)
    reader = redis.Redis(port=server.resp_port, single_connection_client=True)
    before = admin.info("memory")["used_memory"]
    reader.execute_command("CLIENT", "TRACKING", "on")
    for batch in range(20):
        reader.mget([f"key:{batch}:{i:04}" for i in range(1000)])
    assert admin.info("stats")["tracking_total_keys"] == 20_000
    grown = admin.info("memory")["used_memory"] - before
    assert grown >= 20_000 * 100, grown
    reader.execute_command("CLIENT", "TRACKING", "off")
    assert admin.info("stats")["tracking_total_keys"] == 0
    shrunk = admin.info("memory")["used_memory"] - before
    assert shrunk < 256 * 1024, shrunk
    reader.close()
    admin.close()


def test_node_redis_client_side_cache(resp_port, key):
    """node-redis 5's own cache (`clientSideCache`, RESP3): tests/clients/node-redis/cache.js."""
    import os
    import shutil

    from clients import client_dir, run_check
    node = shutil.which("node")
    directory = client_dir("node-redis")
    if node is None or not os.path.isfile(
            os.path.join(directory, "node_modules", "redis", "package.json")):
        pytest.fail("node-redis is not installed; run scripts/install-test-deps")
    oks = run_check([node, "cache.js", f"127.0.0.1:{resp_port}", key], directory)
    assert len(oks) == 2, oks
