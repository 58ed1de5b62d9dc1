"""MULTI, EXEC, DISCARD, WATCH, UNWATCH: replies byte for byte as redis-server 7.0 sends them
(validated with CONFORMANCE_TARGET=redis), WATCH aborts on changes from any client and
protocol, and transactions stay atomic under concurrent clients on two workers."""

import random
import socket
import threading
import time

import pytest

from conftest import start_server
from wire import Conn, resp_encode

pytestmark = pytest.mark.resp


@pytest.fixture
def c(resp_port):
    with Conn(resp_port) as conn:
        yield conn


def test_queueing_and_errors(c, key):
    c.rt(resp_encode("EXEC"), b"-ERR EXEC without MULTI\r\n")
    c.rt(resp_encode("DISCARD"), b"-ERR DISCARD without MULTI\r\n")
    c.rt(resp_encode("MULTI"), b"+OK\r\n")
    c.rt(resp_encode("MULTI"), b"-ERR MULTI calls can not be nested\r\n")
    c.rt(resp_encode("SET", key, "1"), b"+QUEUED\r\n")
    c.rt(resp_encode("WATCH", key), b"-ERR WATCH inside MULTI is not allowed\r\n")
    c.rt(resp_encode("NOSUCHCMD"),
         b"-ERR unknown command 'NOSUCHCMD', with args beginning with: \r\n")
    c.rt(resp_encode("GET"), b"-ERR wrong number of arguments for 'get' command\r\n")
    c.rt(resp_encode("EXEC"),
         b"-EXECABORT Transaction discarded because of previous errors.\r\n")
    c.rt(resp_encode("GET", key), b"$-1\r\n")  # nothing of it ran
    c.rt(resp_encode("EXEC"), b"-ERR EXEC without MULTI\r\n")


def test_save_is_refused_inside_multi(c, key):
    c.rt(resp_encode("MULTI"), b"+OK\r\n")
    c.rt(resp_encode("SET", key, "1"), b"+QUEUED\r\n")
    c.rt(resp_encode("SAVE"), b"-ERR Command not allowed inside a transaction\r\n")
    c.rt(resp_encode("EXEC"),
         b"-EXECABORT Transaction discarded because of previous errors.\r\n")
    c.rt(resp_encode("GET", key), b"$-1\r\n")


def test_exec_replies_in_order_with_runtime_errors(c, key):
    c.rt(resp_encode("MULTI"), b"+OK\r\n")
    c.rt(resp_encode("SET", key, "1"), b"+QUEUED\r\n")
    c.rt(resp_encode("INCR", key), b"+QUEUED\r\n")
    c.rt(resp_encode("INCRBY", key, "x"), b"+QUEUED\r\n")  # fails when run, not queued
    c.rt(resp_encode("GET", key), b"+QUEUED\r\n")
    c.rt(resp_encode("EXEC"),
         b"*4\r\n+OK\r\n:2\r\n-ERR value is not an integer or out of range\r\n$1\r\n2\r\n")
    c.rt(resp_encode("MULTI"), b"+OK\r\n")
    c.rt(resp_encode("EXEC"), b"*0\r\n")
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_discard_and_unwatch(c, key):
    c.rt(resp_encode("MULTI"), b"+OK\r\n")
    c.rt(resp_encode("SET", key, "v"), b"+QUEUED\r\n")
    c.rt(resp_encode("DISCARD"), b"+OK\r\n")
    c.rt(resp_encode("GET", key), b"$-1\r\n")
    c.rt(resp_encode("WATCH", key, key + "b"), b"+OK\r\n")
    c.rt(resp_encode("UNWATCH"), b"+OK\r\n")
    with Conn(c.sock.getpeername()[1]) as other:
        other.rt(resp_encode("SET", key, "changed"), b"+OK\r\n")
    c.rt(resp_encode("MULTI"), b"+OK\r\n")
    c.rt(resp_encode("GET", key), b"+QUEUED\r\n")
    c.rt(resp_encode("EXEC"), b"*1\r\n$7\r\nchanged\r\n")  # unwatched: runs
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_watch_aborts_on_another_clients_write(c, key, resp_port):
    c.rt(resp_encode("SET", key, "1"), b"+OK\r\n")
    c.rt(resp_encode("WATCH", key), b"+OK\r\n")
    with Conn(resp_port) as other:
        other.rt(resp_encode("SET", key, "2"), b"+OK\r\n")
    c.rt(resp_encode("MULTI"), b"+OK\r\n")
    c.rt(resp_encode("SET", key, "3"), b"+QUEUED\r\n")
    c.rt(resp_encode("EXEC"), b"*-1\r\n")
    c.rt(resp_encode("GET", key), b"$1\r\n2\r\n")
    # The watch ended with EXEC: the next transaction runs.
    c.rt(resp_encode("MULTI"), b"+OK\r\n")
    c.rt(resp_encode("SET", key, "3"), b"+QUEUED\r\n")
    c.rt(resp_encode("EXEC"), b"*1\r\n+OK\r\n")
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_watch_aborts_on_expire_delete_and_own_write(c, key, resp_port):
    for change in (("EXPIRE", key, "100"), ("DEL", key), ("SET", key, "x")):
        c.rt(resp_encode("SET", key, "1"), b"+OK\r\n")
        c.rt(resp_encode("WATCH", key), b"+OK\r\n")
        c.send(resp_encode(*change))
        c.read_line()
        c.rt(resp_encode("MULTI"), b"+OK\r\n")
        c.rt(resp_encode("PING"), b"+QUEUED\r\n")
        c.rt(resp_encode("EXEC"), b"*-1\r\n")
    # A key that was absent and stays absent, or is only read, does not abort.
    c.rt(resp_encode("DEL", key), b":1\r\n")
    c.rt(resp_encode("WATCH", key), b"+OK\r\n")
    c.rt(resp_encode("GET", key), b"$-1\r\n")
    c.rt(resp_encode("MULTI"), b"+OK\r\n")
    c.rt(resp_encode("PING"), b"+QUEUED\r\n")
    c.rt(resp_encode("EXEC"), b"*1\r\n+PONG\r\n")


def test_watch_aborts_when_the_key_expires(c, key):
    c.rt(resp_encode("SET", key, "1", "PX", "100"), b"+OK\r\n")
    c.rt(resp_encode("WATCH", key), b"+OK\r\n")
    time.sleep(0.3)
    c.rt(resp_encode("MULTI"), b"+OK\r\n")
    c.rt(resp_encode("PING"), b"+QUEUED\r\n")
    c.rt(resp_encode("EXEC"), b"*-1\r\n")


def test_resp3_null_on_abort(c, key, resp_port):
    c.send(resp_encode("HELLO", "3"))
    c.read_until(b"modules\r\n*0\r\n")
    c.rt(resp_encode("WATCH", key), b"+OK\r\n")
    with Conn(resp_port) as other:
        other.rt(resp_encode("SET", key, "2"), b"+OK\r\n")
    c.rt(resp_encode("MULTI"), b"+OK\r\n")
    c.rt(resp_encode("GET", key), b"+QUEUED\r\n")
    c.rt(resp_encode("EXEC"), b"_\r\n")
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_watch_sees_memcached_writes(target, shared_server, key):
    if target != "spinel":
        pytest.skip("one store behind both protocols is Spinel's")
    with Conn(shared_server.resp_port) as c, Conn(shared_server.mc_port) as mc:
        c.rt(resp_encode("SET", key, "1"), b"+OK\r\n")
        c.rt(resp_encode("WATCH", key), b"+OK\r\n")
        mc.rt(f"incr {key} 1\r\n".encode(), b"2\r\n")
        c.rt(resp_encode("MULTI"), b"+OK\r\n")
        c.rt(resp_encode("SET", key, "10"), b"+QUEUED\r\n")
        c.rt(resp_encode("EXEC"), b"*-1\r\n")
        mc.rt(f"get {key}\r\n".encode(), f"VALUE {key} 0 1\r\n2\r\nEND\r\n".encode())


# ------------------------------------------------------------------------------------------
# Concurrency: two workers, clients of both protocols, bounded rounds.


def _resp(sock, *args):
    sock.sendall(resp_encode(*args))
    return _read_reply(sock.makefile("rb"))


def _read_reply(f):
    line = f.readline()
    kind, rest = line[:1], line[1:-2]
    if kind in (b"+", b"-", b":"):
        return rest
    if kind == b"$":
        n = int(rest)
        return None if n < 0 else f.read(n + 2)[:-2]
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_read_reply(f) for _ in range(n)]
    raise AssertionError(f"unexpected reply {line!r}")


class Client:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.f = self.sock.makefile("rb")

    def call(self, *args):
        self.sock.sendall(resp_encode(*args))
        return _read_reply(self.f)

    def close(self):
        self.sock.close()


@pytest.fixture
def two_workers(target, backend, servers):
    if target == "spinel":
        io = backend.partition(":")[0]
        server = start_server("spinel", io=io, threads=2)
    else:
        server = start_server(target)
    servers.append(server)
    return server


def test_optimistic_increments_lose_nothing(two_workers, key):
    """WATCH/GET/MULTI/SET/EXEC increments from 4 clients, plus plain INCRs from another
    (and memcached incr on Spinel): the final count is every success, nothing lost."""
    port, counter = two_workers.resp_port, key + ":n"
    Client(port).call("SET", counter, "0")
    successes, plain = [0] * 4, [0]
    deadline = time.monotonic() + 3

    def optimist(slot):
        c = Client(port)
        while time.monotonic() < deadline and successes[slot] < 200:
            c.call("WATCH", counter)
            n = int(c.call("GET", counter))
            c.call("MULTI")
            c.call("SET", counter, str(n + 1))
            if c.call("EXEC") is not None:
                successes[slot] += 1
        c.close()

    def incrementer():
        c = Client(port)
        while time.monotonic() < deadline and plain[0] < 500:
            c.call("INCR", counter)
            plain[0] += 1
        c.close()

    threads = [threading.Thread(target=optimist, args=(i,)) for i in range(4)]
    threads.append(threading.Thread(target=incrementer))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = int(Client(port).call("GET", counter))
    assert final == sum(successes) + plain[0], (successes, plain)
    assert sum(successes) > 0


def test_transactions_are_never_torn(two_workers, key):
    """Writers move units between two keys in MULTI/EXEC (and with MSET); readers read both
    in MULTI/EXEC and with MGET; the sum is always the same."""
    port = two_workers.resp_port
    a, b = key + ":a", key + ":b"
    Client(port).call("MSET", a, "500", b, "500")
    torn = []
    deadline = time.monotonic() + 2

    def writer(seed):
        rng, c = random.Random(seed), Client(port)
        while time.monotonic() < deadline:
            amount = rng.randint(1, 5)
            c.call("MULTI")
            c.call("DECRBY", a, str(amount))
            c.call("INCRBY", b, str(amount))
            c.call("EXEC")
        c.close()

    def reader():
        c = Client(port)
        while time.monotonic() < deadline:
            c.call("MULTI")
            c.call("GET", a)
            c.call("GET", b)
            x, y = c.call("EXEC")
            if int(x) + int(y) != 1000:
                torn.append((x, y))
            x, y = c.call("MGET", a, b)
            if int(x) + int(y) != 1000:
                torn.append(("mget", x, y))
        c.close()

    threads = [threading.Thread(target=writer, args=(s,)) for s in range(2)]
    threads += [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not torn[:5]
