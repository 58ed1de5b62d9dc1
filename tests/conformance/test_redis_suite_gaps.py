"""Behaviour Redis 7.0's own suite (scripts/redis_suite.py --all) checks and Spinel lacked, as
redis-server 7.0.15 does it (these pass with CONFORMANCE_TARGET=redis): CLIENT PAUSE WRITE
holds what may write or propagate, judged by a script's own flags and by what a transaction
queued, and counts its held clients in INFO blocked_clients (unit/pause); a read-only script
may not propagate (PUBLISH, PFCOUNT); INFO rdb_changes_since_last_save counts changes and a
SAVE sets it back (unit/bitops, unit/other); a blocked command served later is in the slow
log under its own client (unit/slowlog); a library's load names the first missing global it
looks up (unit/functions); INFO server's git fields (unit/printver)."""

import time

import pytest

from test_redis_hash import read_reply
from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

WAIT_S = 5.0


def rt(conn, *args):
    conn.send(resp_encode(*args))
    return read_reply(conn)


def info_field(conn, name):
    conn.send(resp_encode("INFO", "everything"))
    text = read_reply(conn)
    for line in text.decode().split("\r\n"):
        if line.startswith(name + ":"):
            return line.split(":", 1)[1]
    raise AssertionError(f"INFO has no {name}")


def wait_blocked(conn, count):
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if int(info_field(conn, "blocked_clients")) == count:
            return
        time.sleep(0.02)
    raise AssertionError(f"blocked_clients never reached {count}: "
                         f"{info_field(conn, 'blocked_clients')}")


def test_write_pause_holds_what_may_write_and_counts_it_blocked(make_server):
    server = make_server()
    with Conn(server.resp_port) as admin, Conn(server.resp_port) as held, \
            Conn(server.resp_port) as pf, Conn(server.resp_port) as reader:
        assert rt(admin, "PFADD", "hll", "a") == 1
        assert rt(admin, "FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function{"
                  "function_name='ro', callback=function() return 'hello' end, "
                  "flags={'no-writes'}}") == b"lib"
        assert rt(admin, "CLIENT", "PAUSE", "60000", "WRITE") == b"OK"
        held.send(resp_encode("SET", "k", "v"))
        wait_blocked(admin, 1)
        # PFCOUNT may rewrite its key and propagate: held too.
        pf.send(resp_encode("PFCOUNT", "hll"))
        wait_blocked(admin, 2)
        # What declares it does not write runs: a no-writes shebang, EVAL_RO, a no-writes
        # function, a transaction of reads.
        assert rt(reader, "EVAL", "#!lua flags=no-writes\nreturn 7", "0") == 7
        assert rt(reader, "EVAL_RO", "return redis.call('get', KEYS[1])", "1", "k") is None
        assert rt(reader, "FCALL", "ro", "0") == b"hello"
        assert rt(reader, "MULTI") == b"OK"
        assert rt(reader, "GET", "k") == b"QUEUED"
        assert rt(reader, "EXEC") == [None]
        assert int(info_field(admin, "blocked_clients")) == 2
        assert rt(admin, "CLIENT", "UNPAUSE") == b"OK"
        assert read_reply(held) == b"OK"
        assert read_reply(pf) == 1
        wait_blocked(admin, 0)


def test_write_pause_holds_exec_of_queued_writes_and_scripts_without_flags(make_server):
    server = make_server()
    with Conn(server.resp_port) as admin, Conn(server.resp_port) as tx, \
            Conn(server.resp_port) as script:
        assert rt(tx, "MULTI") == b"OK"
        assert rt(tx, "SET", "k", "v") == b"QUEUED"
        assert rt(admin, "CLIENT", "PAUSE", "60000", "WRITE") == b"OK"
        tx.send(resp_encode("EXEC"))
        wait_blocked(admin, 1)
        script.send(resp_encode("EVAL", "return 1", "0"))
        wait_blocked(admin, 2)
        assert rt(admin, "GET", "k") is None
        assert rt(admin, "CLIENT", "UNPAUSE") == b"OK"
        assert read_reply(tx) == [b"OK"]
        assert read_reply(script) == 1


def test_read_only_script_may_not_propagate(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        for command in ("publish', 'ch', 'msg", "pfcount', 'hll"):
            body = f"return redis.call('{command}')"
            got = rt(c, "EVAL_RO", body, "0")
            assert isinstance(got, Exception)
            assert str(got).startswith(
                "ERR Write commands are not allowed from read-only scripts. script:")
        got = rt(c, "EVAL", "#!lua flags=no-writes\nreturn redis.call('publish', 'ch', 'm')", "0")
        assert str(got).startswith("ERR Write commands are not allowed from read-only scripts.")
        assert rt(c, "EVAL", "return redis.call('publish', 'ch', 'msg')", "0") == 0


def test_changes_since_last_save_count_changes_and_save_resets_them(make_server, tmp_path):
    server = make_server(extra=("--dir", str(tmp_path)))
    with Conn(server.resp_port) as c:
        assert rt(c, "SAVE") == b"OK"
        changes = lambda: int(info_field(c, "rdb_changes_since_last_save"))  # noqa: E731
        assert changes() == 0
        saves = int(info_field(c, "rdb_saves"))
        rt(c, "SET", "a", "1")
        rt(c, "SETBIT", "bits", "0", "0")  # a new key: a change
        assert changes() == 2
        rt(c, "SETBIT", "bits", "0", "0")  # no change
        rt(c, "GET", "a")
        rt(c, "DEL", "nosuch")
        assert changes() == 2
        rt(c, "BITFIELD", "bf", "INCRBY", "i5", "0", "1")
        rt(c, "BITFIELD", "bf", "INCRBY", "i5", "0", "1")
        rt(c, "DEL", "a", "bits")
        assert changes() == 6
        assert rt(c, "SAVE") == b"OK"
        assert changes() == 0
        assert int(info_field(c, "rdb_saves")) == saves + 1


def test_served_blocking_command_is_slow_logged_under_its_client(make_server):
    server = make_server()
    with Conn(server.resp_port) as c, Conn(server.resp_port) as waiter:
        assert rt(waiter, "CLIENT", "SETNAME", "waiter") == b"OK"
        assert rt(c, "CONFIG", "SET", "slowlog-log-slower-than", "0") == b"OK"
        waiter.send(resp_encode("BLPOP", "l", "0"))
        wait_blocked(c, 1)
        assert rt(c, "MULTI") == b"OK"
        assert rt(c, "LPUSH", "l", "foo") == b"QUEUED"
        assert rt(c, "SLOWLOG", "RESET") == b"QUEUED"
        assert rt(c, "EXEC") == [1, b"OK"]
        assert read_reply(waiter) == [b"l", b"foo"]
        newest = rt(c, "SLOWLOG", "GET")[0]
        assert newest[3] == [b"BLPOP", b"l", b"0"]
        assert newest[5] == b"waiter"


def test_library_load_names_the_first_missing_global(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        got = rt(c, "FUNCTION", "LOAD", "#!lua name=test1\nmt = getmetatable(_G)")
        assert str(got) == ("ERR Error registering functions: ERR user_function:2: Script "
                            "attempted to access nonexistent global variable 'getmetatable'")


def test_info_server_git_fields(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        assert info_field(c, "redis_git_sha1") == "00000000"
        assert info_field(c, "redis_git_dirty") == "0"
