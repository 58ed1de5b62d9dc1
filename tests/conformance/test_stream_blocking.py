"""XREAD and XREADGROUP with BLOCK, byte for byte as redis-server 7.0.15 answers them (these
pass with CONFORMANCE_TARGET=redis): woken by XADD from another connection (so, with two
workers, across threads), `$` resolved when the client blocks, `>` for groups with one
consumer of a group served per entry, COUNT, several streams, the null reply on timeout in
RESP2 and RESP3, CLIENT UNBLOCK, MULTI, the key deleted, replaced or flushed and the group
destroyed under a waiting XREADGROUP, or the key expired (with the errors Redis sends), a waiter's connection
closing, and the XREAD BLOCK calls of real job queues (BullMQ's QueueEvents loop, RQ's
`latest_result`) through redis-py. Every wait is bounded."""

import threading
import time

import pytest
import redis

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

NULL2 = b"*-1\r\n"
NULL3 = b"_\r\n"
UNBLOCKED_GONE = b"-UNBLOCKED the stream key no longer exists\r\n"
NOGROUP_GONE = b"-NOGROUP the consumer group this client was blocked on no longer exists\r\n"


def bulk(value):
    value = value.encode() if isinstance(value, str) else value
    return b"$%d\r\n%s\r\n" % (len(value), value)


def array(*items):
    return b"*%d\r\n" % len(items) + b"".join(items)


def entry(eid, *pairs):
    return array(bulk(eid), array(*(bulk(p) for p in pairs)))


def served(key, *entries, resp3=False):
    """The reply of a woken waiter: the one stream it was served from."""
    head = b"%1\r\n" if resp3 else b"*1\r\n*2\r\n"
    return head + bulk(key) + array(*entries)


def hello3(conn):
    conn.send(resp_encode("HELLO", "3"))
    conn.read_until(b"modules\r\n*0\r\n")


def wait_blocked(port, count, timeout=3.0):
    """Waits until INFO shows `count` blocked clients."""
    deadline = time.monotonic() + timeout
    with Conn(port) as c:
        while True:
            c.send(resp_encode("INFO", "clients"))
            head = c.read_line()
            text = c.read_exact(int(head[1:-2]) + 2).decode()
            now = int(text.split("blocked_clients:")[1].split("\r\n")[0])
            if now == count:
                return
            assert time.monotonic() < deadline, f"blocked_clients {now}, want {count}"
            time.sleep(0.01)


def block(port, conn, *command, count=1):
    """Sends a blocking command and waits until the server shows it blocked."""
    conn.send(resp_encode(*command))
    wait_blocked(port, count)
    conn.assert_quiet(0.05)


@pytest.mark.parametrize("resp3", [False, True])
def test_xread_woken_by_xadd(resp_port, key, resp3):
    """`$` is the last ID when the client blocked; the entries added after it come, of the
    one stream that got them; an explicit ID reads past it."""
    a, b = f"{key}:a", f"{key}:b"
    with Conn(resp_port) as waiter, Conn(resp_port) as writer:
        if resp3:
            hello3(waiter)
        writer.rt(resp_encode("XADD", a, "1-1", "f", "old"), bulk("1-1"))
        block(resp_port, waiter, "XREAD", "BLOCK", "0", "STREAMS", a, b, "$", "$")
        writer.rt(resp_encode("XADD", b, "2-1", "f", "v"), bulk("2-1"))
        waiter.rt(b"", served(b, entry("2-1", "f", "v"), resp3=resp3))
        block(resp_port, waiter, "XREAD", "BLOCK", "0", "STREAMS", b, "5")
        writer.rt(resp_encode("XADD", b, "3-0", "f", "no"), bulk("3-0"))
        waiter.assert_quiet(0.15)
        writer.rt(resp_encode("XADD", b, "6-0", "f", "yes"), bulk("6-0"))
        waiter.rt(b"", served(b, entry("6-0", "f", "yes"), resp3=resp3))


def test_xread_count_bytes(resp_port, key):
    """COUNT honoured byte for byte: fixed IDs added in one transaction."""
    with Conn(resp_port) as waiter, Conn(resp_port) as writer:
        writer.rt(resp_encode("XADD", key, "1-0", "a", "0"), bulk("1-0"))
        block(resp_port, waiter, "XREAD", "COUNT", "2", "BLOCK", "0", "STREAMS", key, "$")
        writer.send(resp_encode("MULTI"))
        writer.send(resp_encode("XADD", key, "2-0", "a", "1"))
        writer.send(resp_encode("XADD", key, "3-0", "a", "2"))
        writer.send(resp_encode("XADD", key, "4-0", "a", "3"))
        writer.rt(resp_encode("EXEC"), b"+OK\r\n" + b"+QUEUED\r\n" * 3
                  + array(bulk("2-0"), bulk("3-0"), bulk("4-0")))
        waiter.rt(b"", served(key, entry("2-0", "a", "1"), entry("3-0", "a", "2")))


@pytest.mark.parametrize("resp3", [False, True])
def test_timeout_and_client_unblock(resp_port, key, resp3):
    """The null reply when the time is up (not before), and CLIENT UNBLOCK's two forms."""
    null = NULL3 if resp3 else NULL2
    with Conn(resp_port) as waiter, Conn(resp_port) as admin:
        if resp3:
            hello3(waiter)
        waiter.send(resp_encode("CLIENT", "ID"))
        client_id = waiter.read_line()[1:-2].decode()
        started = time.monotonic()
        waiter.send(resp_encode("XREAD", "BLOCK", "300", "STREAMS", key, "$"))
        waiter.assert_quiet(0.15)
        assert waiter.read_exact(len(null), timeout=2) == null
        assert time.monotonic() - started >= 0.29
        waiter.send(resp_encode("XREADGROUP", "GROUP", "g", "c", "BLOCK", "50", "STREAMS",
                                key, ">"))
        assert waiter.read_line().startswith(b"-NOGROUP No such key")
        block(resp_port, waiter, "XREAD", "BLOCK", "0", "STREAMS", key, "$")
        admin.rt(resp_encode("CLIENT", "UNBLOCK", client_id), b":1\r\n")
        waiter.rt(b"", null)
        block(resp_port, waiter, "XREAD", "BLOCK", "0", "STREAMS", key, "0")
        admin.rt(resp_encode("CLIENT", "UNBLOCK", client_id, "ERROR"), b":1\r\n")
        waiter.rt(b"", b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n")
        admin.rt(resp_encode("CLIENT", "UNBLOCK", client_id), b":0\r\n")


def test_block_argument_errors(resp_port, key):
    with Conn(resp_port) as c:
        c.rt(resp_encode("XREAD", "BLOCK", "x", "STREAMS", key, "$"),
             b"-ERR timeout is not an integer or out of range\r\n")
        c.rt(resp_encode("XREAD", "BLOCK", "-1", "STREAMS", key, "$"),
             b"-ERR timeout is negative\r\n")
        c.rt(resp_encode("XREAD", "BLOCK", "1.5", "STREAMS", key, "$"),
             b"-ERR timeout is not an integer or out of range\r\n")


def test_inside_multi_never_blocks(resp_port, key):
    """Inside MULTI a BLOCK that finds nothing is the null reply at once; one that finds
    entries serves them."""
    with Conn(resp_port) as c:
        c.rt(resp_encode("XADD", key, "1-0", "a", "b"), bulk("1-0"))
        c.rt(resp_encode("XGROUP", "CREATE", key, "g", "$"), b"+OK\r\n")
        c.send(resp_encode("MULTI"))
        c.send(resp_encode("XREAD", "BLOCK", "0", "STREAMS", key, "$"))
        c.send(resp_encode("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", key, ">"))
        c.send(resp_encode("XREAD", "BLOCK", "0", "STREAMS", key, "0"))
        c.rt(resp_encode("EXEC"), b"+OK\r\n" + b"+QUEUED\r\n" * 3 + array(
            NULL2, NULL2, array(array(bulk(key), array(entry("1-0", "a", "b"))))))


@pytest.mark.parametrize("resp3", [False, True])
def test_xreadgroup_woken_one_consumer_per_entry(resp_port, key, resp3):
    """Two consumers of one group wait: the first gets the entry (and it is pending for
    it), the second keeps waiting for the next; NOACK leaves nothing pending."""
    with Conn(resp_port) as alice, Conn(resp_port) as bob, Conn(resp_port) as writer:
        if resp3:
            hello3(alice)
        writer.rt(resp_encode("XGROUP", "CREATE", key, "g", "$", "MKSTREAM"), b"+OK\r\n")
        block(resp_port, alice, "XREADGROUP", "GROUP", "g", "alice", "BLOCK", "0",
              "STREAMS", key, ">")
        block(resp_port, bob, "XREADGROUP", "GROUP", "g", "bob", "BLOCK", "0", "NOACK",
              "STREAMS", key, ">", count=2)
        writer.rt(resp_encode("XADD", key, "1-0", "f", "1"), bulk("1-0"))
        alice.rt(b"", served(key, entry("1-0", "f", "1"), resp3=resp3))
        bob.assert_quiet(0.1)
        writer.rt(resp_encode("XADD", key, "2-0", "f", "2"), bulk("2-0"))
        bob.rt(b"", served(key, entry("2-0", "f", "2")))
        writer.rt(resp_encode("XPENDING", key, "g"),
                  array(b":1\r\n", bulk("1-0"), bulk("1-0"), array(array(bulk("alice"),
                                                                        bulk("1")))))
        writer.rt(resp_encode("XLEN", key), b":2\r\n")


@pytest.mark.parametrize("how", ["del", "set", "multi", "flushdb", "rename"])
def test_xreadgroup_key_gone(resp_port, key, how):
    """The key deleted or made another type under a waiting XREADGROUP: Redis 7.0 answers
    it at once with -UNBLOCKED; an XREAD on the same key keeps waiting, and is served by
    the stream made again."""
    with Conn(resp_port) as group, Conn(resp_port) as plain, Conn(resp_port) as writer:
        for conn in (group, plain, writer):
            conn.rt(resp_encode("SELECT", "9"), b"+OK\r\n")
        writer.rt(resp_encode("XGROUP", "CREATE", key, "g", "$", "MKSTREAM"), b"+OK\r\n")
        block(resp_port, group, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS",
              key, ">")
        block(resp_port, plain, "XREAD", "BLOCK", "0", "STREAMS", key, "$", count=2)
        if how == "del":
            writer.rt(resp_encode("DEL", key), b":1\r\n")
        elif how == "set":
            writer.rt(resp_encode("SET", key, "x"), b"+OK\r\n")
        elif how == "multi":
            writer.send(resp_encode("MULTI"))
            writer.send(resp_encode("DEL", key))
            writer.send(resp_encode("SADD", key, "e"))
            writer.rt(resp_encode("EXEC"), b"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n:1\r\n:1\r\n")
        elif how == "flushdb":
            writer.rt(resp_encode("FLUSHDB"), b"+OK\r\n")
        else:
            writer.rt(resp_encode("RENAME", key, key + ":moved"), b"+OK\r\n")
        group.rt(b"", UNBLOCKED_GONE)
        plain.assert_quiet(0.1)
        writer.rt(resp_encode("DEL", key, key + ":moved"), b":1\r\n" if how != "flushdb"
                  and how != "del" else b":0\r\n")
        writer.rt(resp_encode("XADD", key, "1-1", "f", "v"), bulk("1-1"))
        plain.rt(b"", served(key, entry("1-1", "f", "v")))


@pytest.mark.parametrize("how", ["active", "touched"])
def test_xreadgroup_key_expired(resp_port, key, how):
    """The key expiring under a waiting XREADGROUP answers it as a deletion does (Redis
    7.0.15 sends -UNBLOCKED whether the active expire cycle finds the key or a command
    touches it first); an XREAD on the same key keeps waiting."""
    with Conn(resp_port) as group, Conn(resp_port) as plain, Conn(resp_port) as writer:
        writer.rt(resp_encode("XGROUP", "CREATE", key, "g", "$", "MKSTREAM"), b"+OK\r\n")
        block(resp_port, group, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS",
              key, ">")
        block(resp_port, plain, "XREAD", "BLOCK", "0", "STREAMS", key, "$", count=2)
        writer.rt(resp_encode("PEXPIRE", key, "100"), b":1\r\n")
        if how == "touched":
            time.sleep(0.12)
            writer.rt(resp_encode("EXISTS", key), b":0\r\n")
        assert group.read_exact(len(UNBLOCKED_GONE), timeout=3.0) == UNBLOCKED_GONE
        plain.assert_quiet(0.1)
        wait_blocked(resp_port, 1)
        writer.rt(resp_encode("XADD", key, "1-1", "f", "v"), bulk("1-1"))
        plain.rt(b"", served(key, entry("1-1", "f", "v")))


def test_xreadgroup_group_destroyed_or_replaced(resp_port, key):
    """XGROUP DESTROY answers the group's waiters with -NOGROUP; a RENAME over the key
    serves them from the new stream's group of that name, or -NOGROUP without one."""
    src = f"{key}:src"
    with Conn(resp_port) as waiter, Conn(resp_port) as writer:
        writer.rt(resp_encode("XGROUP", "CREATE", key, "g", "$", "MKSTREAM"), b"+OK\r\n")
        block(resp_port, waiter, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS",
              key, ">")
        writer.rt(resp_encode("XGROUP", "DESTROY", key, "g"), b":1\r\n")
        waiter.rt(b"", NOGROUP_GONE)
        writer.rt(resp_encode("XGROUP", "CREATE", key, "g", "$"), b"+OK\r\n")
        block(resp_port, waiter, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS",
              key, ">")
        writer.rt(resp_encode("XGROUP", "CREATE", src, "g", "$", "MKSTREAM"), b"+OK\r\n")
        writer.rt(resp_encode("XADD", src, "100-0", "f", "v"), bulk("100-0"))
        writer.rt(resp_encode("RENAME", src, key), b"+OK\r\n")
        waiter.rt(b"", served(key, entry("100-0", "f", "v")))
        block(resp_port, waiter, "XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS",
              key, ">")
        writer.rt(resp_encode("XADD", src, "100-0", "f", "v"), bulk("100-0"))
        writer.rt(resp_encode("RENAME", src, key), b"+OK\r\n")
        waiter.rt(b"", NOGROUP_GONE)


def test_xreadgroup_history_never_blocks(resp_port, key):
    """With an ID other than `>` XREADGROUP answers at once, even with BLOCK 0."""
    with Conn(resp_port) as c:
        c.rt(resp_encode("XGROUP", "CREATE", key, "g", "$", "MKSTREAM"), b"+OK\r\n")
        c.rt(resp_encode("XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", key, "0"),
             array(array(bulk(key), b"*0\r\n")))


def test_waiter_closing_leaves_nothing(resp_port, key):
    """A waiter whose connection closes is forgotten; the next XADD serves the others."""
    with Conn(resp_port) as stays, Conn(resp_port) as writer:
        gone = Conn(resp_port)
        block(resp_port, gone, "XREAD", "BLOCK", "0", "STREAMS", key, "$")
        block(resp_port, stays, "XREAD", "BLOCK", "0", "STREAMS", key, "$", count=2)
        gone.close()
        wait_blocked(resp_port, 1)
        writer.rt(resp_encode("XADD", key, "1-0", "f", "v"), bulk("1-0"))
        stays.rt(b"", served(key, entry("1-0", "f", "v")))
        wait_blocked(resp_port, 0)


def test_many_readers_each_get_every_entry(resp_port, key):
    """Readers blocked on one stream from many connections each get every entry (XREAD
    consumes nothing); bounded in count and time."""
    readers = [Conn(resp_port) for _ in range(8)]
    try:
        for n, reader in enumerate(readers):
            block(resp_port, reader, "XREAD", "BLOCK", "0", "STREAMS", key, "$", count=n + 1)
        with Conn(resp_port) as writer:
            writer.rt(resp_encode("XADD", key, "7-7", "k", "v"), bulk("7-7"))
        for reader in readers:
            reader.rt(b"", served(key, entry("7-7", "k", "v")))
    finally:
        for reader in readers:
            reader.close()


def test_job_queue_clients(resp_port, key):
    """The calls real job queues make through redis-py: BullMQ's QueueEvents loop
    (`XREAD BLOCK 10000 STREAMS key id`, woken by the producer's XADD) and RQ's
    `job.latest_result(timeout=...)` (`XREAD BLOCK ms STREAMS key 0-0`, which times out
    to None when no result comes)."""
    events = redis.Redis(port=resp_port, socket_timeout=15)
    producer = redis.Redis(port=resp_port)
    got = []

    def loop():
        last = "$"
        while len(got) < 3:
            reply = events.xread({key: last}, block=10000)
            assert reply, "QueueEvents woke without events"
            for _, entries in reply:
                for eid, fields in entries:
                    got.append(fields[b"event"])
                    last = eid

    thread = threading.Thread(target=loop)
    thread.start()
    wait_blocked(resp_port, 1)
    for event in (b"added", b"active", b"completed"):
        producer.xadd(key, {"event": event}, maxlen=10000, approximate=True)
        time.sleep(0.02)
    thread.join(10)
    assert not thread.is_alive() and got == [b"added", b"active", b"completed"]
    results = f"{key}:results"
    started = time.monotonic()
    assert producer.xread({results: "0-0"}, block=200) == []
    assert time.monotonic() - started >= 0.19
    producer.xadd(results, {"status": "finished"})
    assert producer.xread({results: "0-0"}, count=1, block=10000)[0][1][0][1] == {
        b"status": b"finished"}
    events.close()
    producer.close()
