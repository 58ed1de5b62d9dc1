"""Large lists: past 8 KiB of encoding Spinel keeps a list outside the store (an owner item
names it), where pushes, pops, LINDEX, LSET, LLEN and LRANGE cost O(1) or O(elements
touched). What a client sees must not change: the same replies as redis-server 7.0 for the
keyspace commands that move, copy, expire or watch such a list (these pass with
CONFORMANCE_TARGET=redis), and on Spinel the memory it held comes back when it goes.
"""

import time

import pytest

from test_redis_list import read_reply
from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

SIZE = 2000  # elements of 9-10 bytes: about 22 KiB of encoding, well past 8 KiB


def call(conn, *args):
    conn.send(resp_encode(*args))
    return read_reply(conn)


def elements(prefix, n=SIZE):
    return [f"{prefix}{i:06d}" for i in range(n)]


def filled(conn, key, prefix="e"):
    values = elements(prefix)
    assert call(conn, "DEL", key) in (b":0\r\n", b":1\r\n")
    assert call(conn, "RPUSH", key, *values) == b":%d\r\n" % SIZE
    return values


def lrange(conn, key):
    reply = call(conn, "LRANGE", key, "0", "-1")
    return [x.decode() for x in reply.split(b"\r\n")[2::2]]


@pytest.fixture
def c(resp_port):
    with Conn(resp_port) as conn:
        yield conn


def test_pushes_pops_and_reads_at_both_ends(c, key):
    values = filled(c, key)
    assert call(c, "LPUSH", key, "h1", "h2") == b":%d\r\n" % (SIZE + 2)
    assert call(c, "RPUSH", key, "t1") == b":%d\r\n" % (SIZE + 3)
    assert call(c, "LLEN", key) == b":%d\r\n" % (SIZE + 3)
    assert call(c, "LINDEX", key, "0") == b"$2\r\nh2\r\n"
    assert call(c, "LINDEX", key, "-1") == b"$2\r\nt1\r\n"
    assert call(c, "LINDEX", key, "1000") == b"$7\r\n%s\r\n" % values[998].encode()
    assert call(c, "LINDEX", key, str(SIZE + 3)) == b"$-1\r\n"
    assert call(c, "LSET", key, "5", "five") == b"+OK\r\n"
    assert call(c, "LSET", key, str(SIZE + 3), "x") == b"-ERR index out of range\r\n"
    assert call(c, "LRANGE", key, "4", "6") == (b"*3\r\n$7\r\n%s\r\n$4\r\nfive\r\n$7\r\n%s\r\n"
                                                % (values[2].encode(), values[4].encode()))
    assert call(c, "LPOP", key) == b"$2\r\nh2\r\n"
    assert call(c, "RPOP", key, "2") == b"*2\r\n$2\r\nt1\r\n$7\r\n%s\r\n" % values[-1].encode()
    assert call(c, "LPOP", key, "0") == b"*0\r\n"
    assert call(c, "LTRIM", key, "0", "9") == b"+OK\r\n"
    assert call(c, "LLEN", key) == b":10\r\n"
    assert call(c, "RPOP", key, "100")[:4] == b"*10\r"
    assert call(c, "EXISTS", key) == b":0\r\n", "emptied by a pop: the key is gone"


def test_type_and_wrongtype(c, key):
    filled(c, key)
    assert call(c, "TYPE", key) == b"+list\r\n"
    assert call(c, "GET", key).startswith(b"-WRONGTYPE")
    assert call(c, "HSET", key, "f", "v").startswith(b"-WRONGTYPE")
    assert call(c, "OBJECT", "ENCODING", key) == b"$9\r\nquicklist\r\n"
    assert call(c, "SET", key, "now a string") == b"+OK\r\n"
    assert call(c, "GET", key) == b"$12\r\nnow a string\r\n"


def test_rename_copy_move_and_swapdb_keep_each_list_whole(c, key):
    values = filled(c, key)
    other, copy = key + ":renamed", key + ":copy"
    call(c, "DEL", other, copy)
    assert call(c, "RENAME", key, other) == b"+OK\r\n"
    assert call(c, "EXISTS", key) == b":0\r\n"
    assert lrange(c, other) == values
    assert call(c, "COPY", other, copy) == b":1\r\n"
    assert call(c, "RPUSH", copy, "only-in-copy") == b":%d\r\n" % (SIZE + 1)
    assert call(c, "LPOP", other) == b"$7\r\n%s\r\n" % values[0].encode()
    assert lrange(c, copy) == values + ["only-in-copy"]
    assert lrange(c, other) == values[1:]
    # MOVE to database 1 and back, then SWAPDB twice.
    assert call(c, "MOVE", copy, "1") == b":1\r\n"
    assert call(c, "EXISTS", copy) == b":0\r\n"
    assert call(c, "SELECT", "1") == b"+OK\r\n"
    assert call(c, "LLEN", copy) == b":%d\r\n" % (SIZE + 1)
    assert call(c, "MOVE", copy, "0") == b":1\r\n"
    assert call(c, "SELECT", "0") == b"+OK\r\n"
    assert lrange(c, copy) == values + ["only-in-copy"]
    assert call(c, "DEL", copy, other) == b":2\r\n"


def test_swapdb_moves_a_large_list(make_server, target):
    server = make_server()
    with Conn(server.resp_port) as c:
        values = filled(c, "swapped")
        assert call(c, "SWAPDB", "0", "2") == b"+OK\r\n"
        assert call(c, "EXISTS", "swapped") == b":0\r\n"
        assert call(c, "SELECT", "2") == b"+OK\r\n"
        assert lrange(c, "swapped") == values
        assert call(c, "RPUSH", "swapped", "more") == b":%d\r\n" % (SIZE + 1)


def test_expiry_removes_a_large_list(c, key):
    filled(c, key)
    assert call(c, "PEXPIRE", key, "300") == b":1\r\n"
    assert call(c, "LPUSH", key, "x") == b":%d\r\n" % (SIZE + 1)
    assert call(c, "PTTL", key)[:1] == b":"
    assert int(call(c, "PTTL", key)[1:-2]) > 0, "a push keeps the TTL"
    time.sleep(0.5)
    assert call(c, "LLEN", key) == b":0\r\n"
    assert call(c, "EXISTS", key) == b":0\r\n"


def test_watch_sees_changes_made_in_place(resp_port, key):
    """A change to a list kept outside the store does not rewrite its item, yet WATCH must
    see it: EXEC answers a null array."""
    with Conn(resp_port) as c, Conn(resp_port) as other:
        filled(c, key)
        for change in (["LPUSH", key, "x"], ["RPOP", key], ["LSET", key, "0", "y"]):
            assert call(c, "WATCH", key) == b"+OK\r\n"
            assert call(other, *change)[:1] in (b":", b"$", b"+")
            assert call(c, "MULTI") == b"+OK\r\n"
            assert call(c, "LLEN", key) == b"+QUEUED\r\n"
            assert call(c, "EXEC") == b"*-1\r\n", change
        assert call(c, "WATCH", key) == b"+OK\r\n"
        assert call(other, "LLEN", key)[:1] == b":"
        assert call(c, "MULTI") == b"+OK\r\n"
        assert call(c, "RPUSH", key, "z") == b"+QUEUED\r\n"
        assert call(c, "EXEC") == b"*1\r\n:%d\r\n" % (SIZE + 1), "reads do not abort"


def used_memory(conn):
    info = call(conn, "INFO", "memory").decode()
    line = next(l for l in info.split("\r\n") if l.startswith("used_memory:"))
    return int(line.split(":")[1])


def test_memory_is_charged_and_given_back(make_server, target):
    if target != "spinel":
        pytest.skip("Spinel's accounting of lists kept outside the store")
    server = make_server()
    with Conn(server.resp_port) as c:
        before = used_memory(c)
        for i in range(20):
            filled(c, f"big{i}")
        grown = used_memory(c) - before
        # 20 lists of 2,000 elements of 7 bytes: at least their bytes, and at most what an
        # element costs on the heap (a slot, an allocation of 16 bytes) with the margin
        # charged for the allocator's holes, and their first copies in the store.
        assert 20 * SIZE * 7 <= grown <= 20 * SIZE * 80, grown
        for i in range(20):
            assert call(c, "DEL", f"big{i}") == b":1\r\n"
        assert used_memory(c) - before < grown // 4, "given back when the lists went"
