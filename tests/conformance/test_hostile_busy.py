"""A script past busy-reply-threshold, as every other client meets it: Redis answers each
connection -BUSY (except SCRIPT KILL, FUNCTION KILL, SHUTDOWN NOSAVE), SCRIPT KILL stops a
read-only script, and the script's own connection gets its reply and then runs what it
pipelined behind. Spinel must do the same on every connection of every worker thread, the
script's own worker included (with one worker, the only one), and memcached connections get
an error at once instead of waiting (they have no BUSY: text and meta get SERVER_ERROR, binary
status 0x85).

The RESP parts run against redis-server too (CONFORMANCE_TARGET=redis).
"""

import socket
import struct
import time

import pytest

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

BUSY_MS = 100
LOOP = "local i = 0 while true do i = i + 1 end"
BUSY_PREFIX = b"-BUSY Redis is busy running a script."


def connect(port):
    return Conn(port, timeout=10)


def line(c, timeout=None):
    return c.read_line(timeout)[:-2]


def command(c, *args):
    c.send(resp_encode(*args))
    return line(c)


def start_busy_script(port, body=LOOP, *, fcall=False):
    """Opens a connection, lowers the threshold, starts `body`, waits until it is busy."""
    runner = connect(port)
    assert command(runner, "CONFIG", "SET", "busy-reply-threshold", str(BUSY_MS)) == b"+OK"
    if fcall:
        runner.send(resp_encode("FCALL", "spin", "0"))
    else:
        runner.send(resp_encode("EVAL", body, "0"))
    time.sleep(BUSY_MS / 1000 + 0.3)
    return runner


def wait_for_reply(c):
    return line(c, timeout=20)


@pytest.fixture
def server(make_server, target):
    return make_server()


def test_every_connection_gets_busy_and_kill_works(server):
    """Eight fresh connections (spread over the workers, the script's own among them) each
    get -BUSY for PING and GET; one of them kills the script; its caller gets the kill error,
    then what it pipelined behind the EVAL; afterwards every connection is served again."""
    port = server.resp_port
    watchers = [connect(port) for _ in range(8)]
    runner = start_busy_script(port)
    runner.send(resp_encode("PING"))
    try:
        for c in watchers:
            assert command(c, "PING").startswith(BUSY_PREFIX)
            assert command(c, "GET", "k").startswith(BUSY_PREFIX)
        assert command(watchers[0], "SCRIPT", "KILL") == b"+OK"
        killed = wait_for_reply(runner)
        assert killed.startswith(b"-ERR Script killed by user with SCRIPT KILL"), killed
        assert line(runner) == b"+PONG"
        for c in watchers:
            assert command(c, "PING") == b"+PONG"
    finally:
        for c in watchers + [runner]:
            c.close()


def test_busy_script_that_ends_answers_its_caller(server):
    """A busy script that ends by itself: its reply, then its pipelined command, in order;
    writes it made are there for everyone."""
    port = server.resp_port
    body = ("redis.call('set', 'busy:k', 'v') local t0 = tonumber(redis.call('time')[1]) "
            "while tonumber(redis.call('time')[1]) < t0 + 2 do end "
            "return redis.call('get', 'busy:k')")
    other = connect(port)
    runner = start_busy_script(port, body)
    runner.send(resp_encode("INCR", "busy:n"))
    try:
        # Busy for a while (the loop takes well over the threshold), then the reply.
        assert command(other, "GET", "busy:k").startswith(BUSY_PREFIX)
        assert wait_for_reply(runner) == b"$1"
        assert line(runner) == b"v"
        assert line(runner) == b":1"
        assert command(other, "GET", "busy:k") == b"$1"
    finally:
        other.close()
        runner.close()


def test_unkillable_script_and_shutdown_nosave_refusal_texts(server):
    """A script that wrote cannot be killed (UNKILLABLE), and a plain SHUTDOWN is BUSY; the
    test then lets the script end through a short-lived key it polls."""
    port = server.resp_port
    body = ("redis.call('set', 'busy:w', '1') "
            "while redis.call('exists', 'busy:stop') == 0 do "
            "  local t = redis.call('time') if tonumber(t[1]) > tonumber(ARGV[1]) then break end "
            "end return 'done'")
    runner = connect(port)
    assert command(runner, "CONFIG", "SET", "busy-reply-threshold", str(BUSY_MS)) == b"+OK"
    deadline = str(int(time.time()) + 3)
    runner.send(resp_encode("EVAL", body, "0", deadline))
    time.sleep(BUSY_MS / 1000 + 0.3)
    other = connect(port)
    try:
        assert command(other, "SCRIPT", "KILL").startswith(b"-UNKILLABLE")
        assert command(other, "SHUTDOWN").startswith(BUSY_PREFIX)
        assert wait_for_reply(runner) == b"$4"
        assert line(runner) == b"done"
        assert command(other, "GET", "busy:w") == b"$1"
    finally:
        other.close()
        runner.close()


def test_function_kill_on_a_busy_function(server):
    port = server.resp_port
    setup = connect(port)
    library = "#!lua name=busylib\nredis.register_function('spin', function() " + LOOP + " end)"
    assert command(setup, "FUNCTION", "LOAD", "REPLACE", library) == b"$7"
    line(setup)
    runner = start_busy_script(port, fcall=True)
    try:
        assert command(setup, "PING").startswith(b"-BUSY")
        assert command(setup, "SCRIPT", "KILL").startswith(b"-BUSY")
        assert command(setup, "FUNCTION", "KILL") == b"+OK"
        assert b"killed by user" in wait_for_reply(runner)
        assert command(setup, "PING") == b"+PONG"
    finally:
        setup.close()
        runner.close()


def test_caller_disconnects_while_busy(server):
    """The script's connection goes away: the script still runs (and can still be killed);
    then the server serves everyone again."""
    port = server.resp_port
    others = [connect(port) for _ in range(4)]
    runner = start_busy_script(port)
    runner.close()
    time.sleep(0.3)
    try:
        for c in others:
            assert command(c, "PING").startswith(BUSY_PREFIX)
        assert command(others[0], "SCRIPT", "KILL") == b"+OK"
        deadline = time.monotonic() + 10
        while command(others[1], "PING") != b"+PONG":
            assert time.monotonic() < deadline, "the orphaned script never ended"
            time.sleep(0.1)
        for c in others:
            assert command(c, "PING") == b"+PONG"
    finally:
        for c in others:
            c.close()


def binary_get(key):
    body = key.encode()
    return struct.pack(">BBHBBHIIQ", 0x80, 0x00, len(body), 0, 0, 0, len(body), 7, 0) + body


@pytest.mark.memcache
def test_memcached_clients_get_an_error_not_a_wait(server, target):
    """While a script is busy, memcached text, meta and binary requests that touch data get
    an error at once; `version` is still served; afterwards everything works."""
    if target != "spinel":
        pytest.skip("the memcached port is Spinel's")
    text = [socket.create_connection(("127.0.0.1", server.mc_port), timeout=5) for _ in range(4)]
    binary = socket.create_connection(("127.0.0.1", server.mc_port), timeout=5)
    runner = start_busy_script(server.resp_port)
    try:
        for s in text:
            s.sendall(b"get k\r\nset k 0 0 1 noreply\r\nv\r\nmg k v\r\nversion\r\n")
            got = b""
            while got.count(b"\r\n") < 3:
                got += s.recv(4096)
            lines = got.split(b"\r\n")
            assert lines[0].startswith(b"SERVER_ERROR busy"), got
            assert lines[1].startswith(b"SERVER_ERROR busy"), got
            assert lines[2].startswith(b"VERSION "), got
        binary.sendall(binary_get("k"))
        header = binary.recv(24)
        assert header[0] == 0x81 and struct.unpack(">H", header[6:8])[0] == 0x85, header
        killer = connect(server.resp_port)
        assert command(killer, "SCRIPT", "KILL") == b"+OK"
        wait_for_reply(runner)
        killer.close()
        text[1].sendall(b"set k 0 0 1\r\nv\r\nget k\r\n")
        got = b""
        while not got.endswith(b"END\r\n"):
            got += text[1].recv(4096)
        assert got == b"STORED\r\nVALUE k 0 1\r\nv\r\nEND\r\n"
    finally:
        for s in text + [binary]:
            s.close()
        runner.close()


def test_transactions_meeting_a_busy_script_fail_whole(server):
    """MULTI, WATCH and DISCARD run while a script is busy (Redis's allow-busy commands); a
    command refused with BUSY inside MULTI fails the transaction, and an EXEC refused with
    BUSY ends it with EXECABORT: nothing of a transaction runs half."""
    port = server.resp_port
    setup = connect(port)
    assert command(setup, "SET", "busy:xx", "1") == b"+OK"
    queued_before = connect(port)
    assert command(queued_before, "MULTI") == b"+OK"
    assert command(queued_before, "INCR", "busy:xx") == b"+QUEUED"
    during = connect(port)
    runner = start_busy_script(port)
    try:
        assert command(during, "MULTI") == b"+OK"
        assert command(during, "INCR", "busy:xx").startswith(BUSY_PREFIX)
        assert command(queued_before, "EXEC") == b"-EXECABORT Transaction discarded because of: " \
            b"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
        assert command(setup, "SCRIPT", "KILL") == b"+OK"
        wait_for_reply(runner)
        assert command(during, "INCR", "busy:xx") == b"+QUEUED"
        assert command(during, "EXEC").startswith(b"-EXECABORT Transaction discarded because of "
                                                  b"previous errors")
        assert command(setup, "GET", "busy:xx") == b"$1"
        assert line(setup) == b"1"
        assert command(queued_before, "PING") == b"+PONG"
    finally:
        for c in (setup, queued_before, during, runner):
            c.close()


def test_bcast_tracking_hears_what_a_busy_script_wrote(server):
    """A BCAST tracking client is told of a key the script wrote after it became busy, once
    the script ends (not at the writer's next command)."""
    port = server.resp_port
    tracker = connect(port)
    tracker.send(resp_encode("HELLO", "3"))
    tracker.read_until(b"modules\r\n*0\r\n")
    assert command(tracker, "CLIENT", "TRACKING", "ON", "BCAST") == b"+OK"
    body = ("local t0 = tonumber(redis.call('time')[1]) "
            "while tonumber(redis.call('time')[1]) < t0 + 1 do end "
            "redis.call('set', 'bcast:late', '1') return 1")
    runner = start_busy_script(port, body)
    try:
        assert wait_for_reply(runner) == b":1"
        push = tracker.read_until(b"bcast:late\r\n", timeout=5)
        assert b"invalidate" in push, push
    finally:
        tracker.close()
        runner.close()
