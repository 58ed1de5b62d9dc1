"""Redis blocking commands: BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP BZPOPMIN BZPOPMAX BZMPOP,
WAIT and CLIENT UNBLOCK. Wire transcripts (immediate and woken replies, timeouts, errors) in
RESP2 and RESP3, checked byte for byte against redis-server with CONFORMANCE_TARGET=redis;
waiters served in arrival order across connections (so, with two workers, across threads);
wake-ups by LMOVE, ZADD, RENAME and MULTI/EXEC; what a type change does; disconnects and
CLIENT UNBLOCK; pipelined commands held behind a blocked one; many waiters and pushers with
every element delivered once; and a real job queue (RQ) end to end. Every wait is bounded.
"""

import socket
import threading
import time

import pytest
import redis

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

NULL2 = b"*-1\r\n"
NULL3 = b"_\r\n"


def bulk(value):
    value = value.encode() if isinstance(value, str) else value
    return b"$%d\r\n%s\r\n" % (len(value), value)


def array(*items):
    return b"*%d\r\n" % len(items) + b"".join(items)


def hello3(conn):
    conn.send(resp_encode("HELLO", "3"))
    conn.read_until(b"modules\r\n*0\r\n")


def blocked(conn, wait=0.15):
    """The connection got no reply within `wait`: it is (still) blocked."""
    conn.assert_quiet(wait)


def wait_blocked(port, count, timeout=3.0):
    """Waits until INFO shows `count` blocked clients (a waiter on another connection has
    registered), so that orders between connections are what the test means."""
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


@pytest.fixture
def k(key):
    return key


def test_immediate_replies_resp2_and_resp3(resp_port, k):
    """Each command served at once, in both protocols: the shapes of redis-server 7.0."""
    for resp3 in (False, True):
        with Conn(resp_port) as c:
            if resp3:
                hello3(c)
            lst, zs, dst = f"{k}:l{resp3}", f"{k}:z{resp3}", f"{k}:d{resp3}"
            c.rt(resp_encode("RPUSH", lst, "a", "b", "c", "d", "e", "f"), b":6\r\n")
            c.rt(resp_encode("BLPOP", "nokey" + k, lst, "0"), array(bulk(lst), bulk("a")))
            c.rt(resp_encode("BRPOP", lst, "0"), array(bulk(lst), bulk("f")))
            c.rt(resp_encode("BLMOVE", lst, dst, "LEFT", "RIGHT", "0"), bulk("b"))
            c.rt(resp_encode("BRPOPLPUSH", lst, dst, "0"), bulk("e"))
            c.rt(resp_encode("LRANGE", dst, "0", "-1"), array(bulk("e"), bulk("b")))
            c.rt(resp_encode("BLMPOP", "0", "2", "nokey" + k, lst, "RIGHT", "COUNT", "5"),
                 array(bulk(lst), array(bulk("d"), bulk("c"))))
            c.rt(resp_encode("ZADD", zs, "1.5", "m", "2", "n", "3", "o", "4", "p"), b":4\r\n")
            score = (lambda s: b",%s\r\n" % s.encode()) if resp3 else bulk
            c.rt(resp_encode("BZPOPMIN", zs, "0"), array(bulk(zs), bulk("m"), score("1.5")))
            c.rt(resp_encode("BZPOPMAX", "nokey" + k, zs, "0"),
                 array(bulk(zs), bulk("p"), score("4")))
            c.rt(resp_encode("BZMPOP", "0", "1", zs, "MIN", "COUNT", "5"),
                 array(bulk(zs), array(array(bulk("n"), score("2")),
                                       array(bulk("o"), score("3")))))
            c.rt(resp_encode("EXISTS", lst, zs), b":0\r\n")


def test_timeouts_reply_null_resp2_and_resp3(resp_port, k):
    """A timeout (fractional seconds) answers a null array, for BLMOVE too (Redis 7.0)."""
    commands = [
        ("BLPOP", k, k + "2", "0.05"),
        ("BRPOP", k, "0.05"),
        ("BLMOVE", k, k + "d", "LEFT", "RIGHT", "0.05"),
        ("BRPOPLPUSH", k, k + "d", "0.05"),
        ("BLMPOP", "0.05", "1", k, "LEFT"),
        ("BZPOPMIN", k, "0.05"),
        ("BZPOPMAX", k, "0.05"),
        ("BZMPOP", "0.05", "2", k, k + "2", "MAX", "COUNT", "2"),
    ]
    for resp3 in (False, True):
        with Conn(resp_port) as c:
            if resp3:
                hello3(c)
            for command in commands:
                started = time.monotonic()
                c.rt(resp_encode(*command), NULL3 if resp3 else NULL2)
                took = time.monotonic() - started
                assert 0.04 < took < 1.0, (command, took)
            c.rt(resp_encode("WAIT", "1", "50"), b":0\r\n")
            c.rt(resp_encode("WAIT", "0", "0"), b":0\r\n")
            c.rt(resp_encode("BLPOP", k, "0.0001"), NULL3 if resp3 else NULL2)


@pytest.mark.parametrize("timeout, error", [
    ("abc", "ERR timeout is not a float or out of range"),
    ("", "ERR timeout is not a float or out of range"),
    (" 1", "ERR timeout is not a float or out of range"),
    ("1 ", "ERR timeout is not a float or out of range"),
    ("nan", "ERR timeout is not a float or out of range"),
    ("-1", "ERR timeout is negative"),
    ("-0.5", "ERR timeout is negative"),
    ("inf", "ERR timeout is negative"),
    ("-inf", "ERR timeout is negative"),
    ("1e16", "ERR timeout is negative"),
    ("9.3e15", "ERR timeout is negative"),
    ("1e400", "ERR timeout is negative"),
])
def test_bad_timeouts(resp_port, k, timeout, error):
    err = b"-%s\r\n" % error.encode()
    with Conn(resp_port) as c:
        c.rt(resp_encode("BLPOP", k, timeout), err)
        c.rt(resp_encode("BZPOPMIN", k, timeout), err)
        c.rt(resp_encode("BLMOVE", k, k, "LEFT", "LEFT", timeout), err)
        c.rt(resp_encode("BLMPOP", timeout, "1", k, "LEFT"), err)
        c.rt(resp_encode("BZMPOP", timeout, "1", k, "MIN"), err)


def test_argument_errors(resp_port, k):
    with Conn(resp_port) as c:
        c.rt(resp_encode("BLMOVE", k, k, "LEFT", "X", "0"), b"-ERR syntax error\r\n")
        c.rt(resp_encode("BLMOVE", k, k, "UP", "LEFT", "abc"), b"-ERR syntax error\r\n")
        c.rt(resp_encode("BLMPOP", "0.01", "0", k, "LEFT"),
             b"-ERR numkeys should be greater than 0\r\n")
        c.rt(resp_encode("BLMPOP", "0.01", "2", k, "LEFT"), b"-ERR syntax error\r\n")
        c.rt(resp_encode("BLMPOP", "0.01", "1", k, "LEFT", "COUNT", "0"),
             b"-ERR count should be greater than 0\r\n")
        c.rt(resp_encode("BZMPOP", "0.01", "1", k, "MIN", "COUNT", "0"),
             b"-ERR count should be greater than 0\r\n")
        c.rt(resp_encode("BZMPOP", "0.01", "1", k, "UP"), b"-ERR syntax error\r\n")
        c.rt(resp_encode("BLPOP", k), b"-ERR wrong number of arguments for 'blpop' command\r\n")
        c.rt(resp_encode("WAIT", "a", "0"), b"-ERR value is not an integer or out of range\r\n")
        c.rt(resp_encode("WAIT", "0", "1.5"),
             b"-ERR timeout is not an integer or out of range\r\n")
        c.rt(resp_encode("WAIT", "0", "-1"), b"-ERR timeout is negative\r\n")
        c.rt(resp_encode("SET", k + "s", "v"), b"+OK\r\n")
        wrong = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
        c.rt(resp_encode("BLPOP", k + "s", "0"), wrong)
        c.rt(resp_encode("BZPOPMIN", k + "s", "0"), wrong)
        c.rt(resp_encode("BLMOVE", k + "s", k, "LEFT", "LEFT", "0"), wrong)
        c.rt(resp_encode("RPUSH", k + "l", "x"), b":1\r\n")
        c.rt(resp_encode("BLMOVE", k + "l", k + "s", "LEFT", "LEFT", "0"), wrong)


def test_woken_by_a_push_from_another_connection(resp_port, k):
    """Each command blocks, then is served by a push on another connection (with two
    workers, likely another thread), in the blocked client's own protocol."""
    cases = [
        (("BLPOP", k, "5"), ("RPUSH", k, "x"), lambda s: array(bulk(k), bulk("x"))),
        (("BRPOP", k, "5"), ("LPUSH", k, "x"), lambda s: array(bulk(k), bulk("x"))),
        (("BLMOVE", k, k + "d", "RIGHT", "LEFT", "5"), ("RPUSH", k, "x"), lambda s: bulk("x")),
        (("BRPOPLPUSH", k, k + "d", "5"), ("RPUSH", k, "x"), lambda s: bulk("x")),
        (("BLMPOP", "5", "2", k + "o", k, "LEFT", "COUNT", "3"), ("RPUSH", k, "x", "y"),
         lambda s: array(bulk(k), array(bulk("x"), bulk("y")))),
        (("BZPOPMIN", k, "5"), ("ZADD", k, "2.5", "m"),
         lambda s: array(bulk(k), bulk("m"), s("2.5"))),
        (("BZPOPMAX", k + "o", k, "5"), ("ZADD", k, "1", "a", "2", "b"),
         lambda s: array(bulk(k), bulk("b"), s("2"))),
        (("BZMPOP", "5", "1", k, "MIN", "COUNT", "9"), ("ZADD", k, "1", "a"),
         lambda s: array(bulk(k), array(array(bulk("a"), s("1"))))),
    ]
    for resp3 in (False, True):
        score = (lambda v: b",%s\r\n" % v.encode()) if resp3 else bulk
        with Conn(resp_port) as waiter, Conn(resp_port) as pusher:
            if resp3:
                hello3(waiter)
            for command, push, expect in cases:
                pusher.send(resp_encode("DEL", k, k + "d"))
                pusher.read_line()
                waiter.send(resp_encode(*command))
                wait_blocked(resp_port, 1)
                blocked(waiter, 0.05)
                pusher.send(resp_encode(*push))
                pusher.read_line()
                assert waiter.read_exact(len(expect(score))) == expect(score), command
                waiter.assert_quiet()


def test_fifo_among_waiters_on_one_key(resp_port, k):
    """Three clients block on one key in a known order; three pushes serve them in that
    order, one element each."""
    with Conn(resp_port) as a, Conn(resp_port) as b, Conn(resp_port) as c, \
            Conn(resp_port) as p:
        for n, conn in enumerate((a, b, c), start=1):
            conn.send(resp_encode("BLPOP", k, "5"))
            wait_blocked(resp_port, n)
        p.rt(resp_encode("RPUSH", k, "1"), b":1\r\n")
        assert a.read_exact(len(array(bulk(k), bulk("1")))) == array(bulk(k), bulk("1"))
        blocked(b, 0.05)
        p.rt(resp_encode("RPUSH", k, "2", "3"), b":2\r\n")
        assert b.read_exact(len(array(bulk(k), bulk("2")))) == array(bulk(k), bulk("2"))
        assert c.read_exact(len(array(bulk(k), bulk("3")))) == array(bulk(k), bulk("3"))
        p.rt(resp_encode("EXISTS", k), b":0\r\n")


def test_one_push_of_many_elements_serves_waiters_in_order(resp_port, k):
    with Conn(resp_port) as a, Conn(resp_port) as b, Conn(resp_port) as p:
        a.send(resp_encode("BRPOP", k, "5"))
        wait_blocked(resp_port, 1)
        b.send(resp_encode("BRPOP", k, "5"))
        wait_blocked(resp_port, 2)
        p.rt(resp_encode("RPUSH", k, "x", "y", "z"), b":3\r\n")
        assert a.read_exact(len(array(bulk(k), bulk("z")))) == array(bulk(k), bulk("z"))
        assert b.read_exact(len(array(bulk(k), bulk("y")))) == array(bulk(k), bulk("y"))
        p.rt(resp_encode("LRANGE", k, "0", "-1"), array(bulk("x")))


def test_woken_by_lmove_rename_and_exec(resp_port, k):
    """Keys made ready by LMOVE's destination, RENAME, and a transaction (served after
    EXEC, so a push and pop inside it leave nothing)."""
    with Conn(resp_port) as w, Conn(resp_port) as p:
        # LMOVE's destination.
        p.rt(resp_encode("RPUSH", k + "s", "m"), b":1\r\n")
        w.send(resp_encode("BLPOP", k, "5"))
        wait_blocked(resp_port, 1)
        p.rt(resp_encode("LMOVE", k + "s", k, "LEFT", "LEFT"), bulk("m"))
        w.read_exact(len(array(bulk(k), bulk("m"))))
        # RENAME onto the waited key.
        p.rt(resp_encode("RPUSH", k + "r", "r"), b":1\r\n")
        w.send(resp_encode("BLPOP", k, "5"))
        wait_blocked(resp_port, 1)
        p.rt(resp_encode("RENAME", k + "r", k), b"+OK\r\n")
        assert w.read_exact(len(array(bulk(k), bulk("r")))) == array(bulk(k), bulk("r"))
        # MULTI/EXEC: a push then a pop inside leaves the waiter waiting; a push alone
        # serves it after EXEC.
        w.send(resp_encode("BLPOP", k, "5"))
        wait_blocked(resp_port, 1)
        p.rt(resp_encode("MULTI"), b"+OK\r\n")
        p.rt(resp_encode("RPUSH", k, "t"), b"+QUEUED\r\n")
        p.rt(resp_encode("LPOP", k), b"+QUEUED\r\n")
        p.rt(resp_encode("EXEC"), array(b":1\r\n", bulk("t")))
        blocked(w, 0.1)
        p.rt(resp_encode("MULTI"), b"+OK\r\n")
        p.rt(resp_encode("RPUSH", k, "u", "v"), b"+QUEUED\r\n")
        p.rt(resp_encode("EXEC"), array(b":2\r\n"))
        assert w.read_exact(len(array(bulk(k), bulk("u")))) == array(bulk(k), bulk("u"))
        p.rt(resp_encode("LRANGE", k, "0", "-1"), array(bulk("v")))


def test_blmove_chain_wakes_the_destinations_waiter(resp_port, k):
    """A served BLMOVE pushes to its destination, which serves a waiter there."""
    with Conn(resp_port) as mover, Conn(resp_port) as last, Conn(resp_port) as p:
        last.send(resp_encode("BLPOP", k + "d", "5"))
        wait_blocked(resp_port, 1)
        mover.send(resp_encode("BLMOVE", k, k + "d", "LEFT", "LEFT", "5"))
        wait_blocked(resp_port, 2)
        p.rt(resp_encode("RPUSH", k, "e"), b":1\r\n")
        assert mover.read_exact(len(bulk("e"))) == bulk("e")
        expect = array(bulk(k + "d"), bulk("e"))
        assert last.read_exact(len(expect)) == expect
        p.rt(resp_encode("EXISTS", k, k + "d"), b":0\r\n")


def test_zadd_wakes_bzpopmin_and_type_change_keeps_waiting(resp_port, k, shared_server,
                                                          target):
    """A key that becomes a string (a Redis SET; on Spinel also a memcached `set`) serves
    nobody: the waiter keeps waiting (Redis 7.0), and is served once the key is a sorted
    set again. A delete (memcached `delete` on Spinel) changes nothing either."""
    with Conn(resp_port) as w, Conn(resp_port) as p:
        w.send(resp_encode("BZPOPMIN", k, "5"))
        wait_blocked(resp_port, 1)
        if target == "spinel":
            with Conn(shared_server.mc_port) as mc:
                mc.rt(f"set {k} 0 0 3\r\nstr\r\n".encode(), b"STORED\r\n")
        else:
            p.rt(resp_encode("SET", k, "str"), b"+OK\r\n")
        blocked(w, 0.15)
        p.rt(resp_encode("GET", k), bulk("str"))
        if target == "spinel":
            with Conn(shared_server.mc_port) as mc:
                mc.rt(f"delete {k}\r\n".encode(), b"DELETED\r\n")
        else:
            p.rt(resp_encode("DEL", k), b":1\r\n")
        blocked(w, 0.1)
        p.rt(resp_encode("ZADD", k, "7", "z"), b":1\r\n")
        expect = array(bulk(k), bulk("z"), bulk("7"))
        assert w.read_exact(len(expect)) == expect


def test_pipelined_commands_wait_for_the_blocked_one(resp_port, k):
    """Commands sent behind a blocking one run only once it is answered, in order."""
    with Conn(resp_port) as w, Conn(resp_port) as p:
        w.send(resp_encode("BLPOP", k, "5") + resp_encode("SET", k + "x", "1")
               + resp_encode("PING") + resp_encode("GET", k + "x"))
        wait_blocked(resp_port, 1)
        blocked(w, 0.1)
        p.rt(resp_encode("EXISTS", k + "x"), b":0\r\n")
        p.rt(resp_encode("RPUSH", k, "go"), b":1\r\n")
        expect = array(bulk(k), bulk("go")) + b"+OK\r\n+PONG\r\n" + bulk("1")
        assert w.read_exact(len(expect)) == expect
        w.assert_quiet()


def test_pipelined_commands_after_a_timeout(resp_port, k):
    with Conn(resp_port) as w:
        w.send(resp_encode("BLPOP", k, "0.1") + resp_encode("PING"))
        assert w.read_exact(len(NULL2 + b"+PONG\r\n")) == NULL2 + b"+PONG\r\n"


def test_forever_then_woken(resp_port, k):
    """Timeout 0 waits past any tick, and is served when the element comes."""
    with Conn(resp_port) as w, Conn(resp_port) as p:
        w.send(resp_encode("BRPOP", k, "0"))
        wait_blocked(resp_port, 1)
        blocked(w, 0.4)
        p.rt(resp_encode("LPUSH", k, "late"), b":1\r\n")
        expect = array(bulk(k), bulk("late"))
        assert w.read_exact(len(expect)) == expect


def test_inside_multi_blocking_commands_do_not_block(resp_port, k):
    with Conn(resp_port) as c:
        c.rt(resp_encode("MULTI"), b"+OK\r\n")
        for command in [("BLPOP", k, "0"), ("BLMOVE", k, k, "LEFT", "LEFT", "0"),
                        ("BRPOPLPUSH", k, k + "d", "0"), ("BZMPOP", "0", "1", k, "MIN"),
                        ("BZPOPMAX", k, "0"), ("WAIT", "1", "0")]:
            c.rt(resp_encode(*command), b"+QUEUED\r\n")
        c.rt(resp_encode("EXEC"), array(NULL2, b"$-1\r\n", b"$-1\r\n", NULL2, NULL2, b":0\r\n"))
        hello3(c)
        c.rt(resp_encode("MULTI"), b"+OK\r\n")
        c.rt(resp_encode("BLPOP", k, "0"), b"+QUEUED\r\n")
        c.rt(resp_encode("BLMOVE", k, k, "LEFT", "LEFT", "0"), b"+QUEUED\r\n")
        c.rt(resp_encode("EXEC"), array(NULL3, NULL3))
        c.rt(resp_encode("RPUSH", k, "a"), b":1\r\n")
        c.rt(resp_encode("MULTI"), b"+OK\r\n")
        c.rt(resp_encode("BLPOP", k, "0"), b"+QUEUED\r\n")
        c.rt(resp_encode("EXEC"), array(array(bulk(k), bulk("a"))))


def client_id(conn):
    conn.send(resp_encode("CLIENT", "ID"))
    return int(conn.read_line()[1:-2])


def test_client_unblock(resp_port, k):
    with Conn(resp_port) as w, Conn(resp_port) as admin:
        wid = client_id(w)
        admin.rt(resp_encode("CLIENT", "UNBLOCK", str(wid)), b":0\r\n")
        w.send(resp_encode("BLPOP", k, "0"))
        wait_blocked(resp_port, 1)
        admin.rt(resp_encode("CLIENT", "UNBLOCK", str(wid)), b":1\r\n")
        assert w.read_exact(len(NULL2)) == NULL2
        w.send(resp_encode("BLMOVE", k, k, "LEFT", "LEFT", "0"))
        wait_blocked(resp_port, 1)
        admin.rt(resp_encode("CLIENT", "UNBLOCK", str(wid), "TIMEOUT"), b":1\r\n")
        assert w.read_exact(len(NULL2)) == NULL2
        w.send(resp_encode("BZPOPMIN", k, "0") + resp_encode("PING"))
        wait_blocked(resp_port, 1)
        admin.rt(resp_encode("CLIENT", "UNBLOCK", str(wid), "error"), b":1\r\n")
        expect = b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n+PONG\r\n"
        assert w.read_exact(len(expect)) == expect
        admin.rt(resp_encode("CLIENT", "UNBLOCK", str(wid), "ERROR"), b":0\r\n")
        w.send(resp_encode("WAIT", "1", "0"))
        wait_blocked(resp_port, 1)
        admin.rt(resp_encode("CLIENT", "UNBLOCK", str(wid)), b":1\r\n")
        assert w.read_exact(4) == b":0\r\n"
        hello3(w)
        w.send(resp_encode("BLPOP", k, "0"))
        wait_blocked(resp_port, 1)
        admin.rt(resp_encode("CLIENT", "UNBLOCK", str(wid)), b":1\r\n")
        assert w.read_exact(len(NULL3)) == NULL3
        admin.rt(resp_encode("CLIENT", "UNBLOCK", str(wid), "FOO"),
                 b"-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n")
        admin.rt(resp_encode("CLIENT", "UNBLOCK", "abc"),
                 b"-ERR value is not an integer or out of range\r\n")
        admin.rt(resp_encode("CLIENT", "UNBLOCK", "1", "TIMEOUT", "x"),
                 b"-ERR unknown subcommand or wrong number of arguments for 'UNBLOCK'. "
                 b"Try CLIENT HELP.\r\n")


def test_client_list_and_info_show_blocked_clients(resp_port, k):
    with Conn(resp_port) as w, Conn(resp_port) as admin:
        wid = client_id(w)
        w.send(resp_encode("BLPOP", k, "5"))
        wait_blocked(resp_port, 1)
        admin.send(resp_encode("CLIENT", "LIST", "ID", str(wid)))
        head = admin.read_line()
        line = admin.read_exact(int(head[1:-2]) + 2).decode()
        assert " flags=b " in line and " cmd=blpop " in line, line
        admin.send(resp_encode("INFO", "clients"))
        head = admin.read_line()
        info = admin.read_exact(int(head[1:-2]) + 2).decode()
        assert "blocked_clients:1\r\n" in info
        assert "clients_in_timeout_table:1\r\n" in info
        admin.rt(resp_encode("RPUSH", k, "x"), b":1\r\n")
        w.read_exact(len(array(bulk(k), bulk("x"))))
        wait_blocked(resp_port, 0)


def test_disconnected_waiters_cost_nothing(resp_port, k):
    """Many clients connect, block and disconnect: none stays in the table, and a later
    push is not popped for a gone client."""
    for round_ in range(50):
        s = socket.create_connection(("127.0.0.1", resp_port), timeout=3)
        s.sendall(resp_encode("BLPOP", k, f"{k}:{round_}", "0"))
        if round_ % 10 == 0:
            wait_blocked(resp_port, 1)
        s.close()
    wait_blocked(resp_port, 0)
    with Conn(resp_port) as p:
        p.rt(resp_encode("RPUSH", k, "kept"), b":1\r\n")
        p.rt(resp_encode("LRANGE", k, "0", "-1"), array(bulk("kept")))


@pytest.mark.spinel_only
def test_registry_is_empty_after_cycles(make_server):
    """Spinel-only: after connect-block-disconnect cycles and timeouts, the waiter table
    holds nothing (INFO's blocked_clients and the table's key count, via DEBUG-free
    INFO: `blocked_clients` and `clients_in_timeout_table` both 0)."""
    server = make_server()
    port = server.resp_port
    socks = []
    for i in range(200):
        s = socket.create_connection(("127.0.0.1", port), timeout=3)
        s.sendall(resp_encode("BLPOP", f"cyc{i % 7}", f"other{i}", "0" if i % 2 else "30"))
        socks.append(s)
    wait_blocked(port, 200, timeout=10)
    for s in socks:
        s.close()
    wait_blocked(port, 0, timeout=10)
    with Conn(port) as c:
        c.send(resp_encode("INFO", "clients"))
        head = c.read_line()
        info = c.read_exact(int(head[1:-2]) + 2).decode()
        assert "clients_in_timeout_table:0\r\n" in info
        for i in range(7):
            c.rt(resp_encode("RPUSH", f"cyc{i}", "x"), b":1\r\n")


def test_wait_with_replicas_wanted_times_out(resp_port):
    with Conn(resp_port) as c:
        started = time.monotonic()
        c.rt(resp_encode("WAIT", "2", "120"), b":0\r\n")
        assert 0.1 < time.monotonic() - started < 1.0


def test_many_waiters_and_pushers_deliver_each_element_once(resp_port, k):
    """50 waiters on five keys, five pushers on their own connections: every element is
    delivered exactly once, within a bound."""
    waiters, per_waiter, pushers = 50, 4, 5
    keys = [f"{k}:{i}" for i in range(5)]
    got = []
    lock = threading.Lock()
    errors = []

    def waiter():
        try:
            r = redis.Redis(port=resp_port, socket_timeout=20)
            for _ in range(per_waiter):
                item = r.blpop(keys, timeout=15)
                assert item is not None, "timed out"
                with lock:
                    got.append(item[1])
            r.close()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    def pusher(n):
        try:
            r = redis.Redis(port=resp_port, socket_timeout=20)
            total = waiters * per_waiter // pushers
            for i in range(total):
                r.rpush(keys[(n + i) % len(keys)], f"{n}:{i}")
            r.close()
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=waiter) for _ in range(waiters)]
    threads += [threading.Thread(target=pusher, args=(n,)) for n in range(pushers)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors, errors[:3]
    assert time.monotonic() - started < 30
    expected = {f"{n}:{i}".encode() for n in range(pushers)
                for i in range(waiters * per_waiter // pushers)}
    assert len(got) == len(expected) and set(got) == expected
    r = redis.Redis(port=resp_port)
    assert r.exists(*keys) == 0
    wait_blocked(resp_port, 0)


def test_redis_py_blocking_calls(resp_port, k):
    r = redis.Redis(port=resp_port, socket_timeout=5)
    assert r.blpop([k], timeout=0.1) is None
    assert r.brpoplpush(k, k + "d", timeout=0.1) is None
    r.rpush(k, "a", "b")
    assert r.blpop([k], timeout=1) == (k.encode(), b"a")
    assert r.blmove(k, k + "d", 1, "RIGHT", "LEFT") == b"b"
    r.zadd(k + "z", {"m": 3})
    assert r.bzpopmax([k + "z"], timeout=1) == (f"{k}z".encode(), b"m", 3.0)
    assert r.blmpop(0.1, 1, k, direction="LEFT") is None

    def later():
        time.sleep(0.2)
        redis.Redis(port=resp_port).lpush(k, "late")

    t = threading.Thread(target=later)
    t.start()
    assert r.brpop([k], timeout=3) == (k.encode(), b"late")
    t.join()


def test_rq_job_queue_end_to_end(resp_port, k):
    """A real job queue, RQ 1.10 (its worker waits for jobs with BLPOP on its queues' keys;
    later RQ versions need Lua and streams): a worker started first blocks, jobs enqueued
    from another connection wake it, it runs them and stores their results. The worker
    runs on the main thread (it installs signal handlers); its BLPOP waits at most 5 s
    (worker_ttl 20), and the jobs are enqueued whatever happens, so the test is bounded."""
    rq = pytest.importorskip("rq")
    r = redis.Redis(port=resp_port, socket_timeout=10)
    queue = rq.Queue(k, connection=r)
    worker = rq.SimpleWorker([queue], connection=redis.Redis(port=resp_port,
                                                            socket_timeout=30),
                             default_worker_ttl=20)
    jobs = []
    blocked_first = []

    def enqueue():
        try:
            wait_blocked(resp_port, 1, timeout=10)
            blocked_first.append(True)
        finally:
            jobs.extend(queue.enqueue(len, "x" * n) for n in range(5))

    thread = threading.Thread(target=enqueue, daemon=True)
    thread.start()
    started = time.monotonic()
    worker.work(max_jobs=5, logging_level="WARNING")
    thread.join(5)
    assert time.monotonic() - started < 25
    assert blocked_first, "the worker never blocked in BLPOP"
    for n, job in enumerate(jobs):
        job.refresh()
        assert job.get_status() == "finished", job.get_status()
        assert job.result == n


def test_woken_in_other_databases_and_by_store_commands(resp_port, k):
    """Keys made ready by MOVE, COPY ... DB and SWAPDB wake waiters in the database they
    land in; ZUNIONSTORE's destination wakes a BZPOPMIN."""
    with Conn(resp_port) as w, Conn(resp_port) as p:
        w.rt(resp_encode("SELECT", "9"), b"+OK\r\n")
        for write in [("MOVE", k, "9"), ("COPY", k, k, "DB", "9")]:
            p.send(resp_encode("DEL", k))
            p.read_line()
            w.send(resp_encode("BLPOP", k, "5"))
            wait_blocked(resp_port, 1)
            p.rt(resp_encode("RPUSH", k, "v"), b":1\r\n")
            p.rt(resp_encode(*write), b":1\r\n")
            expect = array(bulk(k), bulk("v"))
            assert w.read_exact(len(expect)) == expect, write
        p.send(resp_encode("DEL", k))
        p.read_line()
        w.rt(resp_encode("SELECT", "10"), b"+OK\r\n")
        w.send(resp_encode("BRPOP", k + "s", "5"))
        wait_blocked(resp_port, 1)
        p.rt(resp_encode("SELECT", "11"), b"+OK\r\n")
        p.rt(resp_encode("RPUSH", k + "s", "swapped"), b":1\r\n")
        p.rt(resp_encode("SWAPDB", "10", "11"), b"+OK\r\n")
        expect = array(bulk(k + "s"), bulk("swapped"))
        assert w.read_exact(len(expect)) == expect
        p.rt(resp_encode("SWAPDB", "10", "11"), b"+OK\r\n")
        p.rt(resp_encode("SELECT", "0"), b"+OK\r\n")
        w.rt(resp_encode("SELECT", "0"), b"+OK\r\n")
        w.send(resp_encode("BZPOPMIN", k + "z", "5"))
        wait_blocked(resp_port, 1)
        p.rt(resp_encode("ZADD", k + "a", "1", "one"), b":1\r\n")
        p.rt(resp_encode("ZUNIONSTORE", k + "z", "1", k + "a"), b":1\r\n")
        expect = array(bulk(k + "z"), bulk("one"), bulk("1"))
        assert w.read_exact(len(expect)) == expect


def test_blmove_to_a_key_of_another_type_answers_wrongtype(resp_port, k):
    """Redis 7.0: a waiting BRPOPLPUSH/BLMOVE whose destination holds another type when an
    element arrives gets WRONGTYPE and stops waiting; the element stays for the next waiter,
    in its order (Redis's suite: 'BRPOPLPUSH maintains order of elements after failure')."""
    wrong = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
    with Conn(resp_port) as bad, Conn(resp_port) as good, Conn(resp_port) as p:
        p.rt(resp_encode("SET", k + "t", "nolist"), b"+OK\r\n")
        bad.send(resp_encode("BRPOPLPUSH", k, k + "t", "5"))
        wait_blocked(resp_port, 1)
        good.send(resp_encode("BLMOVE", k, k + "d", "RIGHT", "LEFT", "5"))
        wait_blocked(resp_port, 2)
        p.rt(resp_encode("RPUSH", k, "a", "b", "c"), b":3\r\n")
        assert bad.read_exact(len(wrong)) == wrong
        assert good.read_exact(len(bulk("c"))) == bulk("c")
        p.rt(resp_encode("LRANGE", k, "0", "-1"), array(bulk("a"), bulk("b")))
        # The failed waiter is no longer blocked: its next command runs.
        bad.rt(resp_encode("PING"), b"+PONG\r\n")
        p.rt(resp_encode("DEL", k, k + "t", k + "d"), b":3\r\n")
