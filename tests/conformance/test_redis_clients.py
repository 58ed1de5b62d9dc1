"""CLIENT LIST's live fields (last command, idle time, subscriptions, MULTI's queue, flags),
CLIENT KILL with every filter across worker threads, CLIENT REPLY, NO-EVICT, NO-TOUCH, the HELP
subcommands, COMMAND GETKEYS and COMMAND LIST FILTERBY; checked against redis-server with
CONFORMANCE_TARGET=redis (NO-TOUCH, which Redis 7.0 lacks, only against Spinel).
"""

import time

import pytest
import redis

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp


def plain(port):
    """A redis-py client that leaves COMMAND's replies as sent (no parsing of COMMAND INFO)."""
    r = redis.Redis(port=port, decode_responses=True)
    r.set_response_callback("COMMAND", lambda response, **_: response)
    return r


def fields(line):
    return dict(part.split("=", 1) for part in line.split(" ") if "=" in part)


def listing(client):
    """CLIENT LIST as {id: fields}."""
    text = client.execute_command("CLIENT", "LIST")
    text = text.decode() if isinstance(text, bytes) else text
    return {int(f["id"]): f for f in map(fields, text.strip().split("\n"))}


def test_client_list_shows_each_clients_last_command_and_state(resp_port):
    me = redis.Redis(port=resp_port)
    other = redis.Redis(port=resp_port)
    other.set("client-list-k", "v")
    other_id = other.client_id()
    sub = me.pubsub()
    sub.subscribe("c1", "c2")
    sub.psubscribe("p*")
    sub.get_message(timeout=1)
    with Conn(resp_port) as tx:
        tx.rt(resp_encode("MULTI"), b"+OK\r\n")
        tx.rt(resp_encode("SET", "a", "1"), b"+QUEUED\r\n")
        tx.rt(resp_encode("INCR", "b"), b"+QUEUED\r\n")
        time.sleep(0.1)
        clients = listing(me)
        tx.rt(resp_encode("DISCARD"), b"+OK\r\n")
    mine = clients[int(me.client_info()["id"])]
    assert mine["cmd"] == "client|list"
    assert clients[other_id]["cmd"] == "client|id"
    assert clients[other_id]["flags"] == "N"
    # Connections of earlier tests may still be closing: pick this test's by their state.
    subscribed = [f for f in clients.values() if (f["sub"], f["psub"]) == ("2", "1")]
    assert len(subscribed) == 1
    assert subscribed[0]["flags"] == "P" and subscribed[0]["ssub"] == "0"
    assert subscribed[0]["cmd"] == "psubscribe"
    queued = [f for f in clients.values() if f["multi"] == "2"]
    assert len(queued) == 1 and queued[0]["flags"] == "x" and queued[0]["cmd"] == "incr"
    assert all(int(f["fd"]) > 0 for f in clients.values())
    # TYPE filters: pubsub lists subscribers only (this one among them).
    pubsub_only = me.execute_command("CLIENT", "LIST", "TYPE", "pubsub")
    pubsub_only = pubsub_only.decode() if isinstance(pubsub_only, bytes) else pubsub_only
    listed = [fields(line) for line in pubsub_only.strip().split("\n")]
    assert all("P" in f["flags"] for f in listed)
    assert any((f["sub"], f["psub"]) == ("2", "1") for f in listed)
    sub.close()
    me.close()
    other.close()


def test_idle_counts_seconds_since_the_last_command(resp_port):
    me = redis.Redis(port=resp_port)
    idle = redis.Redis(port=resp_port)
    idle_id = idle.client_id()
    time.sleep(2.2)
    assert int(listing(me)[idle_id]["idle"]) >= 1
    idle.ping()
    assert int(listing(me)[idle_id]["idle"]) == 0
    me.close()
    idle.close()


def test_client_kill_filters_end_other_connections(resp_port):
    admin = redis.Redis(port=resp_port)
    victims = [redis.Redis(port=resp_port, retry_on_timeout=False) for _ in range(4)]
    ids = [v.client_id() for v in victims]
    info = [v.client_info() for v in victims]
    assert admin.execute_command("CLIENT", "KILL", "ID", ids[0]) == 1
    assert admin.execute_command("CLIENT", "KILL", "ID", ids[0]) == 0
    assert admin.execute_command("CLIENT", "KILL", info[1]["addr"]) in (b"OK", "OK", True)
    assert admin.execute_command("CLIENT", "KILL", "ADDR", info[2]["addr"], "ID", ids[2]) == 1
    assert admin.execute_command("CLIENT", "KILL", "LADDR", "127.0.0.1:1") == 0
    # Killed clients leave the list at once, as Redis frees them at once.
    alive = listing(admin)
    assert not set(ids[:3]) & set(alive)
    assert ids[3] in alive
    # A killed connection sees its end: the next command on the same socket fails.
    with Conn(resp_port) as raw:
        raw.rt(resp_encode("CLIENT", "SETNAME", "doomed"), b"+OK\r\n")
        raw.send(resp_encode("CLIENT", "ID"))
        raw_id = int(raw.read_until(b"\r\n")[1:-2])
        assert admin.execute_command("CLIENT", "KILL", "ID", raw_id) == 1
        raw.sock.settimeout(5)
        assert raw.sock.recv(100) == b""
    for v in victims:
        v.close()
    admin.close()


def test_client_kill_by_type_and_user_and_itself(resp_port):
    admin = redis.Redis(port=resp_port)
    subscriber = redis.Redis(port=resp_port).pubsub()
    subscriber.subscribe("kill-me")
    subscriber.get_message(timeout=1)
    # Subscribers of earlier tests may still be closing: wait until this is the only one.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        text = admin.execute_command("CLIENT", "LIST", "TYPE", "pubsub")
        if len((text.decode() if isinstance(text, bytes) else text).strip().split("\n")) == 1:
            break
        time.sleep(0.05)
    assert admin.execute_command("CLIENT", "KILL", "TYPE", "pubsub") == 1
    assert admin.execute_command("CLIENT", "KILL", "TYPE", "master") == 0
    with Conn(resp_port) as c:
        c.rt(resp_encode("CLIENT", "KILL", "USER", "nosuch"), b"-ERR No such user 'nosuch'\r\n")
        c.rt(resp_encode("CLIENT", "KILL", "TYPE", "foo"), b"-ERR Unknown client type 'foo'\r\n")
        c.rt(resp_encode("CLIENT", "KILL", "ID", "0"),
             b"-ERR client-id should be greater than 0\r\n")
        c.rt(resp_encode("CLIENT", "KILL", "SKIPME", "maybe"), b"-ERR syntax error\r\n")
        c.rt(resp_encode("CLIENT", "KILL", "FOO", "bar"), b"-ERR syntax error\r\n")
        c.rt(resp_encode("CLIENT", "KILL", "1.2.3.4:5"), b"-ERR No such client\r\n")
        c.rt(resp_encode("CLIENT", "KILL", "ID"), b"-ERR No such client\r\n")
        # SKIPME no: it kills itself too, after its reply.
        c.send(resp_encode("CLIENT", "ID"))
        my_id = int(c.read_until(b"\r\n")[1:-2])
        c.rt(resp_encode("CLIENT", "KILL", "ID", str(my_id), "SKIPME", "no"), b":1\r\n")
        c.sock.settimeout(5)
        assert c.sock.recv(100) == b""
    subscriber.close()
    admin.close()


def test_client_reply_off_skip_on(resp_port):
    with Conn(resp_port) as c:
        c.send(resp_encode("CLIENT", "REPLY", "OFF") + resp_encode("PING")
               + resp_encode("CLIENT", "REPLY", "SKIP") + resp_encode("PING", "x")
               + resp_encode("CLIENT", "REPLY", "ON") + resp_encode("PING", "y")
               + resp_encode("CLIENT", "REPLY", "SKIP") + resp_encode("PING", "z")
               + resp_encode("PING", "w"))
        assert c.read_until(b"$1\r\nw\r\n") == b"+OK\r\n$1\r\ny\r\n$1\r\nw\r\n"
        c.rt(resp_encode("CLIENT", "REPLY", "MAYBE"), b"-ERR syntax error\r\n")


def test_client_no_evict(resp_port):
    with Conn(resp_port) as c:
        c.rt(resp_encode("CLIENT", "NO-EVICT", "on"), b"+OK\r\n")
        c.send(resp_encode("CLIENT", "INFO"))
        assert b" flags=e " in c.read_until(b"\n\r\n")
        c.rt(resp_encode("CLIENT", "NO-EVICT", "off"), b"+OK\r\n")
        c.rt(resp_encode("CLIENT", "NO-EVICT", "maybe"), b"-ERR syntax error\r\n")
        c.rt(resp_encode("CLIENT", "NO-EVICT"),
             b"-ERR wrong number of arguments for 'client|no-evict' command\r\n")


@pytest.mark.spinel_only
def test_client_no_touch_reads_leave_the_idle_time(resp_port, key):
    toucher = redis.Redis(port=resp_port)
    quiet = redis.Redis(port=resp_port)
    assert quiet.execute_command("CLIENT", "NO-TOUCH", "on") in (b"OK", "OK", True)
    assert "T" in quiet.client_info()["flags"]
    toucher.set(key, "v")
    time.sleep(2.2)
    # Spinel stamps an item's access time from its second read on (memcached's rule), so
    # two reads: without NO-TOUCH the second would reset the idle time.
    assert quiet.get(key) == b"v" and quiet.get(key) == b"v"
    assert toucher.object("idletime", key) >= 2
    toucher.get(key)
    toucher.get(key)
    assert toucher.object("idletime", key) == 0
    toucher.close()
    quiet.close()


@pytest.mark.parametrize("container", ["CLIENT", "COMMAND", "CONFIG", "SLOWLOG", "LATENCY", "ACL",
                                       "OBJECT", "PUBSUB"])
def test_every_help_subcommand_answers(resp_port, container):
    r = plain(resp_port)
    lines = r.execute_command(container, "HELP")
    assert lines[0] == f"{container} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert lines[-2:] == ["HELP", "    Prints this help."]
    r.close()


def test_help_texts_match_redis_7(resp_port):
    r = plain(resp_port)
    assert r.execute_command("CONFIG", "HELP")[1:3] == [
        "GET <pattern>",
        "    Return parameters matching the glob-like <pattern> and their values."]
    client_help = r.execute_command("CLIENT", "HELP")
    for line in ["KILL <option> <value> [<option> <value> [...]]", "NO-EVICT (ON|OFF)",
                 "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]"]:
        assert line in client_help
    r.close()


def test_command_getkeys(resp_port):
    with Conn(resp_port) as c:
        def keys(*args):
            return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a.encode())
                                                     for a in args)
        c.rt(resp_encode("COMMAND", "GETKEYS", "SET", "k", "v"), keys("k"))
        c.rt(resp_encode("COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2"), keys("a", "b"))
        c.rt(resp_encode("COMMAND", "GETKEYS", "ZUNIONSTORE", "d", "2", "a", "b", "WEIGHTS", "1",
                         "2"), keys("d", "a", "b"))
        c.rt(resp_encode("COMMAND", "GETKEYS", "LMPOP", "2", "a", "b", "LEFT"), keys("a", "b"))
        c.rt(resp_encode("COMMAND", "GETKEYS", "OBJECT", "ENCODING", "k"), keys("k"))
        c.rt(resp_encode("COMMAND", "GETKEYS", "NOSUCH", "a"),
             b"-ERR Invalid command specified\r\n")
        c.rt(resp_encode("COMMAND", "GETKEYS", "CLIENT", "LIST"),
             b"-ERR The command has no key arguments\r\n")
        c.rt(resp_encode("COMMAND", "GETKEYS", "GET", "a", "b"),
             b"-ERR Invalid number of arguments specified for command\r\n")
        c.rt(resp_encode("COMMAND", "GETKEYS", "GET"),
             b"-ERR wrong number of arguments for 'command|getkeys' command\r\n")


def test_command_list_filters(resp_port):
    r = plain(resp_port)
    everything = r.execute_command("COMMAND", "LIST")
    assert "config|get" in everything and "get" in everything
    pubsub = set(r.execute_command("COMMAND", "LIST", "FILTERBY", "ACLCAT", "pubsub"))
    assert pubsub == {"psubscribe", "publish", "pubsub|channels", "pubsub|numpat",
                      "pubsub|numsub", "pubsub|shardchannels", "pubsub|shardnumsub",
                      "punsubscribe", "spublish", "ssubscribe", "subscribe", "sunsubscribe",
                      "unsubscribe"}
    assert set(r.execute_command("COMMAND", "LIST", "FILTERBY", "PATTERN", "slowlog*")) == {
        "slowlog", "slowlog|get", "slowlog|len", "slowlog|reset", "slowlog|help"}
    assert r.execute_command("COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuch") == []
    r.close()


def test_client_pause_holds_writes_until_unpause(resp_port, key):
    admin = redis.Redis(port=resp_port)
    writer = redis.Redis(port=resp_port, socket_timeout=10)
    import threading
    assert admin.execute_command("CLIENT", "PAUSE", 10000, "WRITE") in (b"OK", "OK", True)
    done = {}
    thread = threading.Thread(target=lambda: done.update(at=(writer.set(key, "v"),
                                                             time.monotonic())))
    thread.start()
    time.sleep(0.4)
    assert "at" not in done, "a write ran during a WRITE pause"
    assert admin.get(key) is None  # reads still run
    unpaused = time.monotonic()
    assert admin.execute_command("CLIENT", "UNPAUSE") in (b"OK", "OK", True)
    thread.join(5)
    assert done["at"][0] is True and done["at"][1] - unpaused < 1.0
    # ALL holds reads too, until the timeout.
    assert admin.execute_command("CLIENT", "PAUSE", 300, "ALL") in (b"OK", "OK", True)
    started = time.monotonic()
    assert writer.get(key) == b"v"
    assert time.monotonic() - started >= 0.2
    with Conn(resp_port) as c:
        c.rt(resp_encode("CLIENT", "PAUSE", "abc"),
             b"-ERR timeout is not an integer or out of range\r\n")
        c.rt(resp_encode("CLIENT", "PAUSE", "-1"), b"-ERR timeout is negative\r\n")
        c.rt(resp_encode("CLIENT", "PAUSE", "10", "foo"),
             b"-ERR CLIENT PAUSE mode must be WRITE or ALL\r\n")
        c.rt(resp_encode("CLIENT", "UNPAUSE", "x"),
             b"-ERR wrong number of arguments for 'client|unpause' command\r\n")
    admin.close()
    writer.close()


def monitor_lines(conn, count):
    lines = []
    while len(lines) < count:
        lines.append(conn.read_until(b"\r\n"))
    return lines


def test_monitor_shows_every_clients_commands(resp_port):
    import re
    with Conn(resp_port) as mon, Conn(resp_port) as c:
        mon.rt(resp_encode("MONITOR"), b"+OK\r\n")
        c.rt(resp_encode("SET", "mon-k", 'a "q" \\ \n\x01'), b"+OK\r\n")
        # CONFIG is an admin command: not shown.
        c.send(resp_encode("CONFIG", "GET", "maxmemory"))
        c.read_until(b"maxmemory\r\n")
        c.read_until(b"\r\n")
        c.read_until(b"\r\n")
        c.rt(resp_encode("SELECT", "2"), b"+OK\r\n")
        c.rt(resp_encode("EVAL", "return redis.call('get', KEYS[1])", "1", "mon-k"), b"$-1\r\n")
        c.rt(resp_encode("MULTI"), b"+OK\r\n")
        c.rt(resp_encode("INCR", "mon-n"), b"+QUEUED\r\n")
        c.rt(resp_encode("EXEC"), b"*1\r\n:1\r\n")
        c.rt(resp_encode("SELECT", "0"), b"+OK\r\n")
        lines = monitor_lines(mon, 8)
    shape = re.compile(rb'^\+(\d+)\.(\d{6}) \[(\d+) ([^\]]+)\] (.*)\r\n$')
    parsed = [shape.match(line) for line in lines]
    assert all(parsed), lines
    assert abs(int(parsed[0].group(1)) - time.time()) < 10
    shown = [(m.group(3), m.group(4) == b"lua", m.group(5)) for m in parsed]
    assert shown == [
        (b"0", False, b'"SET" "mon-k" "a \\"q\\" \\\\ \\n\\x01"'),
        (b"2", False, b'"SELECT" "2"'),
        (b"2", False, b'"EVAL" "return redis.call(\'get\', KEYS[1])" "1" "mon-k"'),
        (b"2", True, b'"get" "mon-k"'),
        (b"2", False, b'"MULTI"'),
        (b"2", False, b'"INCR" "mon-n"'),
        (b"2", False, b'"EXEC"'),
        (b"0", False, b'"SELECT" "0"'),
    ]


def test_reset_stops_monitoring(resp_port):
    with Conn(resp_port) as mon, Conn(resp_port) as c:
        mon.rt(resp_encode("MONITOR"), b"+OK\r\n")
        mon.rt(resp_encode("RESET"), b"+RESET\r\n")
        c.rt(resp_encode("PING"), b"+PONG\r\n")
        mon.assert_quiet(0.2)
        mon.rt(resp_encode("PING"), b"+PONG\r\n")
