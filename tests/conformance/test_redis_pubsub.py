"""Redis pub/sub: wire transcripts of SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE, their UNSUBSCRIBEs,
PUBLISH, SPUBLISH and PUBSUB in RESP2 (subscribed mode) and RESP3 (push frames), checked
byte for byte against redis-server with CONFORMANCE_TARGET=redis; redis-py's PubSub; messages
crossing worker threads; and a subscriber that never reads, cut off at its output limit
while the others go on.
"""

import socket
import threading
import time

import pytest
import redis

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp


def push(*parts, resp3=False):
    """A RESP2 array (or RESP3 push) of bulk strings and integers; None is a null."""
    out = [b"%c%d\r\n" % (ord(">") if resp3 else ord("*"), len(parts))]
    for part in parts:
        if part is None:
            out.append(b"_\r\n" if resp3 else b"$-1\r\n")
        elif isinstance(part, int):
            out.append(b":%d\r\n" % part)
        else:
            part = part.encode() if isinstance(part, str) else part
            out.append(b"$%d\r\n%s\r\n" % (len(part), part))
    return b"".join(out)


def test_subscribe_publish_and_unsubscribe_in_resp2(resp_port):
    with Conn(resp_port) as sub, Conn(resp_port) as pub:
        sub.rt(resp_encode("SUBSCRIBE", "news.a", "news.b"),
               push("subscribe", "news.a", 1) + push("subscribe", "news.b", 2))
        sub.rt(resp_encode("PSUBSCRIBE", "news.*"), push("psubscribe", "news.*", 3))
        sub.rt(resp_encode("SUBSCRIBE", "news.a"), push("subscribe", "news.a", 3))
        pub.rt(resp_encode("PUBLISH", "news.a", "hello"), b":2\r\n")
        sub.rt(b"", push("message", "news.a", "hello")
               + push("pmessage", "news.*", "news.a", "hello"))
        pub.rt(resp_encode("PUBLISH", "news.z", "x"), b":1\r\n")
        sub.rt(b"", push("pmessage", "news.*", "news.z", "x"))
        pub.rt(resp_encode("PUBLISH", "other", "x"), b":0\r\n")
        sub.rt(resp_encode("UNSUBSCRIBE", "news.b"), push("unsubscribe", "news.b", 2))
        sub.rt(resp_encode("UNSUBSCRIBE", "never"), push("unsubscribe", "never", 2))
        sub.rt(resp_encode("UNSUBSCRIBE"), push("unsubscribe", "news.a", 1))
        sub.rt(resp_encode("PUNSUBSCRIBE"), push("punsubscribe", "news.*", 0))
        sub.rt(resp_encode("UNSUBSCRIBE"), push("unsubscribe", None, 0))
        sub.rt(resp_encode("PUNSUBSCRIBE"), push("punsubscribe", None, 0))
        # Out of subscribed mode, every command runs again.
        sub.rt(resp_encode("PING"), b"+PONG\r\n")


def test_resp2_subscribed_mode_allows_only_its_commands(resp_port):
    with Conn(resp_port) as c:
        c.rt(resp_encode("SUBSCRIBE", "ch"), push("subscribe", "ch", 1))
        c.rt(resp_encode("GET", "k"),
             b"-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / "
             b"QUIT / RESET are allowed in this context\r\n")
        c.rt(resp_encode("PING"), push("pong", ""))
        c.rt(resp_encode("PING", "hi"), push("pong", "hi"))
        c.rt(resp_encode("NOSUCH"),
             b"-ERR unknown command 'NOSUCH', with args beginning with: \r\n")
        c.rt(resp_encode("SUBSCRIBE"),
             b"-ERR wrong number of arguments for 'subscribe' command\r\n")
        c.rt(resp_encode("RESET"), b"+RESET\r\n")
        c.rt(resp_encode("GET", "k"), b"$-1\r\n")


def test_resp3_messages_are_pushes_and_commands_still_run(resp_port):
    with Conn(resp_port) as sub, Conn(resp_port) as pub:
        sub.send(resp_encode("HELLO", "3"))
        sub.read_until(b"modules\r\n*0\r\n")
        sub.rt(resp_encode("SUBSCRIBE", "ch"), push("subscribe", "ch", 1, resp3=True))
        sub.rt(resp_encode("GET", "nokey"), b"_\r\n")
        sub.rt(resp_encode("PING"), b"+PONG\r\n")
        pub.rt(resp_encode("PUBLISH", "ch", "m1"), b":1\r\n")
        sub.rt(b"", push("message", "ch", "m1", resp3=True))
        sub.rt(resp_encode("UNSUBSCRIBE", "ch"), push("unsubscribe", "ch", 0, resp3=True))
        sub.rt(resp_encode("UNSUBSCRIBE"), push("unsubscribe", None, 0, resp3=True))


def test_shard_channels_are_their_own_namespace(resp_port):
    with Conn(resp_port) as sub, Conn(resp_port) as pub:
        sub.rt(resp_encode("SSUBSCRIBE", "{s}a"), push("ssubscribe", "{s}a", 1))
        sub.rt(resp_encode("SUBSCRIBE", "{s}a"), push("subscribe", "{s}a", 1))
        pub.rt(resp_encode("SPUBLISH", "{s}a", "x"), b":1\r\n")
        sub.rt(b"", push("smessage", "{s}a", "x"))
        pub.rt(resp_encode("PUBLISH", "{s}a", "y"), b":1\r\n")
        sub.rt(b"", push("message", "{s}a", "y"))
        pub.rt(resp_encode("PUBSUB", "SHARDCHANNELS"), b"*1\r\n$4\r\n{s}a\r\n")
        pub.rt(resp_encode("PUBSUB", "SHARDNUMSUB", "{s}a", "none"),
               b"*4\r\n$4\r\n{s}a\r\n:1\r\n$4\r\nnone\r\n:0\r\n")
        sub.rt(resp_encode("SUNSUBSCRIBE"), push("sunsubscribe", "{s}a", 0))
        pub.rt(resp_encode("SPUBLISH", "{s}a", "x"), b":0\r\n")


def test_pubsub_introspection(resp_port):
    with Conn(resp_port) as a, Conn(resp_port) as b, Conn(resp_port) as q:
        a.rt(resp_encode("SUBSCRIBE", "intro.one"), push("subscribe", "intro.one", 1))
        b.rt(resp_encode("SUBSCRIBE", "intro.one"), push("subscribe", "intro.one", 1))
        b.rt(resp_encode("PSUBSCRIBE", "intro.*", "intro.?"),
             push("psubscribe", "intro.*", 2) + push("psubscribe", "intro.?", 3))
        a.rt(resp_encode("PSUBSCRIBE", "intro.*"), push("psubscribe", "intro.*", 2))
        q.rt(resp_encode("PUBSUB", "CHANNELS", "intro.*"), b"*1\r\n$9\r\nintro.one\r\n")
        q.rt(resp_encode("PUBSUB", "CHANNELS", "nomatch*"), b"*0\r\n")
        q.rt(resp_encode("PUBSUB", "NUMSUB", "intro.one", "intro.two"),
             b"*4\r\n$9\r\nintro.one\r\n:2\r\n$9\r\nintro.two\r\n:0\r\n")
        q.rt(resp_encode("PUBSUB", "NUMSUB"), b"*0\r\n")
        q.rt(resp_encode("PUBSUB", "NUMPAT"), b":2\r\n")
        q.rt(resp_encode("PUBSUB", "NUMPAT", "x"),
             b"-ERR wrong number of arguments for 'pubsub|numpat' command\r\n")
        q.send(resp_encode("HELLO", "3"))
        q.read_until(b"modules\r\n*0\r\n")
        q.rt(resp_encode("PUBSUB", "NUMSUB", "intro.one"), b"*2\r\n$9\r\nintro.one\r\n:2\r\n")
    # Closed connections leave no subscriptions behind.
    with Conn(resp_port) as q:
        deadline = time.monotonic() + 5
        while True:
            q.send(resp_encode("PUBSUB", "NUMPAT"))
            if q.read_line() == b":0\r\n":
                break
            assert time.monotonic() < deadline
            time.sleep(0.05)
        q.rt(resp_encode("PUBSUB", "NUMSUB", "intro.one"), b"*2\r\n$9\r\nintro.one\r\n:0\r\n")


def test_pubsub_help_matches(resp_port):
    with Conn(resp_port) as c:
        c.send(resp_encode("PUBSUB", "HELP"))
        header = c.read_line()
        lines = [c.read_line() for _ in range(int(header[1:]))]
    assert lines[0] == b"+PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:\r\n"
    assert b"+NUMPAT\r\n" in lines and lines[-1] == b"+    Prints this help.\r\n"


def test_redis_py_pubsub(resp_port):
    r = redis.Redis(port=resp_port, decode_responses=True)
    p = r.pubsub()
    p.subscribe("py.ch")
    p.psubscribe("py.*")
    kinds = {p.get_message(timeout=2)["type"] for _ in range(2)}
    assert kinds == {"subscribe", "psubscribe"}
    assert r.publish("py.ch", "hi") == 2
    got = [p.get_message(timeout=2) for _ in range(2)]
    assert {(m["type"], m["channel"], m["data"]) for m in got} == {
        ("message", "py.ch", "hi"), ("pmessage", "py.ch", "hi")}
    assert r.pubsub_numsub("py.ch") == [("py.ch", 1)]
    p.close()
    r.close()


def test_messages_cross_worker_threads_in_order(resp_port):
    """Subscribers spread over the workers each get every message, in publish order, from
    publishers on other connections (and so, with two workers, other threads)."""
    subscribers = [redis.Redis(port=resp_port).pubsub() for _ in range(12)]
    for p in subscribers:
        p.subscribe("fan")
        assert p.get_message(timeout=2)["type"] == "subscribe"
    publishers = [redis.Redis(port=resp_port) for _ in range(3)]
    for i in range(60):
        assert publishers[i % 3].publish("fan", str(i)) == 12
    for p in subscribers:
        got = []
        deadline = time.monotonic() + 10
        while len(got) < 60 and time.monotonic() < deadline:
            m = p.get_message(timeout=1)
            if m and m["type"] == "message":
                got.append(int(m["data"]))
        assert got == list(range(60))
        p.close()


def test_a_subscriber_that_never_reads_is_cut_off(resp_port):
    """Past the pub/sub output limit (32 MiB, Redis's default hard limit) the silent
    subscriber's connection is closed; a reading one gets everything; publishing goes on."""
    silent = socket.create_connection(("127.0.0.1", resp_port))
    silent.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    silent.sendall(resp_encode("SUBSCRIBE", "flood"))
    reader = redis.Redis(port=resp_port).pubsub()
    reader.subscribe("flood")
    assert reader.get_message(timeout=2)["type"] == "subscribe"
    received = []
    stop = threading.Event()

    def read():
        while not stop.is_set():
            m = reader.get_message(timeout=0.5)
            if m and m["type"] == "message":
                received.append(len(m["data"]))

    thread = threading.Thread(target=read)
    thread.start()
    pub = redis.Redis(port=resp_port)
    payload = b"x" * 65536
    counts = [pub.publish("flood", payload) for _ in range(800)]  # 50 MiB
    deadline = time.monotonic() + 20
    while len(received) < 800 and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    thread.join()
    assert len(received) == 800, "the reading subscriber missed messages"
    assert counts[0] == 2, counts[:3]
    # Cut off: no longer counted, gone from the channel (its socket is not read to its end:
    # with the tiny receive window it was given, the kernel would trickle the rest out).
    deadline = time.monotonic() + 10
    while pub.pubsub_numsub("flood") != [(b"flood", 1)]:
        assert time.monotonic() < deadline, pub.pubsub_numsub("flood")
        time.sleep(0.05)
    assert pub.publish("flood", b"after") == 1
    silent.close()
    reader.close()
    pub.close()
