"""Hostile input, property 1 of issue #31: clients that waited forever on Spinel while
redis-server 7.0.15 answers them.

- A subscriber with CLIENT REPLY OFF (or SKIP): Redis still sends the (un)subscribe
  confirmations and the messages (pushes are not replies); a client library waits for the
  confirmation before it reads messages.
- Client-side caching of what a script reads: Redis 7.0 remembers the keys a script
  *declared* (EVAL/FCALL KEYS) once the script runs a read-only command, and invalidates
  them on the next write (RESP3 push, RESP2 REDIRECT; BCAST needs no read at all).

Every transcript is byte for byte, checked against redis-server with
CONFORMANCE_TARGET=redis. Each connection runs with a deadline (wire.Conn), so a missing
message fails the test instead of hanging it.
"""

import pytest

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

QUIET_S = 0.3


def push(protocol, *items):
    """A pub/sub frame of bulk strings, nulls and integers: a RESP2 array or a RESP3
    push."""
    out = (b">" if protocol == 3 else b"*") + b"%d\r\n" % len(items)
    for item in items:
        if item is None:
            out += b"_\r\n" if protocol == 3 else b"$-1\r\n"
        elif isinstance(item, int):
            out += b":%d\r\n" % item
        else:
            out += b"$%d\r\n%s\r\n" % (len(item), item.encode())
    return out


def hello(conn, protocol):
    if protocol == 3:
        conn.send(resp_encode("HELLO", "3"))
        conn.read_until(b"modules\r\n*0\r\n")


# ------------------------------------------------------------------------------------------
# CLIENT REPLY OFF / SKIP and pub/sub


@pytest.mark.parametrize("protocol", [2, 3])
def test_reply_off_then_subscribe_still_confirms_and_delivers(resp_port, key, protocol):
    ch = key + "ch"
    with Conn(resp_port) as sub, Conn(resp_port) as pub:
        hello(sub, protocol)
        sub.send(resp_encode("CLIENT", "REPLY", "OFF"))
        sub.assert_quiet(QUIET_S)
        sub.rt(resp_encode("SUBSCRIBE", ch), push(protocol, "subscribe", ch, 1))
        pub.rt(resp_encode("PUBLISH", ch, "hello"), b":1\r\n")
        sub.rt(b"", push(protocol, "message", ch, "hello"))
        # A reply is still held back: PING (either protocol's form) sends nothing.
        sub.send(resp_encode("PING"))
        sub.assert_quiet(QUIET_S)
        sub.rt(resp_encode("PSUBSCRIBE", ch + "*"), push(protocol, "psubscribe", ch + "*", 2))
        sub.rt(resp_encode("UNSUBSCRIBE", ch), push(protocol, "unsubscribe", ch, 1))
        sub.rt(resp_encode("PUNSUBSCRIBE"), push(protocol, "punsubscribe", ch + "*", 0))
        sub.rt(resp_encode("UNSUBSCRIBE"), push(protocol, "unsubscribe", None, 0))
        # An error is a reply: held back too.
        sub.send(resp_encode("SUBSCRIBE"))
        sub.assert_quiet(QUIET_S)


def test_resp2_subscribe_then_reply_off_is_refused_and_messages_flow(resp_port, key):
    """In RESP2's subscribed mode CLIENT REPLY is not allowed: the error names the
    subcommand, and everything goes on as before."""
    ch = key + "ch"
    with Conn(resp_port) as sub, Conn(resp_port) as pub:
        sub.rt(resp_encode("SUBSCRIBE", ch), push(2, "subscribe", ch, 1))
        sub.rt(resp_encode("CLIENT", "REPLY", "OFF"),
               b"-ERR Can't execute 'client|reply': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / "
               b"PING / QUIT / RESET are allowed in this context\r\n")
        pub.rt(resp_encode("PUBLISH", ch, "hello"), b":1\r\n")
        sub.rt(b"", push(2, "message", ch, "hello"))
        sub.rt(resp_encode("PING"), b"*2\r\n$4\r\npong\r\n$0\r\n\r\n")


def test_resp3_subscribe_then_reply_off_still_delivers(resp_port, key):
    ch = key + "ch"
    with Conn(resp_port) as sub, Conn(resp_port) as pub:
        hello(sub, 3)
        sub.rt(resp_encode("SUBSCRIBE", ch), push(3, "subscribe", ch, 1))
        sub.send(resp_encode("CLIENT", "REPLY", "OFF"))
        sub.assert_quiet(QUIET_S)
        pub.rt(resp_encode("PUBLISH", ch, "hello"), b":1\r\n")
        sub.rt(b"", push(3, "message", ch, "hello"))
        sub.send(resp_encode("PING"))
        sub.assert_quiet(QUIET_S)


@pytest.mark.parametrize("protocol", [2, 3])
def test_reply_skip_then_subscribe_confirms_and_uses_up_the_skip(resp_port, key, protocol):
    ch = key + "ch"
    with Conn(resp_port) as sub:
        hello(sub, protocol)
        sub.send(resp_encode("CLIENT", "REPLY", "SKIP"))
        sub.assert_quiet(QUIET_S)
        sub.rt(resp_encode("SUBSCRIBE", ch), push(protocol, "subscribe", ch, 1))
        # The skip applied to SUBSCRIBE: PING is answered.
        pong = b"+PONG\r\n" if protocol == 3 else b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"
        sub.rt(resp_encode("PING"), pong)


# ------------------------------------------------------------------------------------------
# Client-side caching of what scripts read

GET_KEY1 = "return redis.call('GET', KEYS[1])"
READ_NOTHING_BY_KEY = "return redis.call('DBSIZE')"
GET_ARGV1 = "return redis.call('GET', ARGV[1])"
SET_KEY1 = "return redis.call('SET', KEYS[1], 'x')"


def client_id(conn):
    conn.send(resp_encode("CLIENT", "ID"))
    return int(conn.read_line()[1:-2])


def invalidation(protocol, key):
    if protocol == 3:
        return b">2\r\n$10\r\ninvalidate\r\n*1\r\n$%d\r\n%s\r\n" % (len(key), key.encode())
    return (b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$%d\r\n%s\r\n"
            % (len(key), key.encode()))


class Tracked:
    """A tracking reader (RESP3, or RESP2 redirecting to a subscriber) and a writer."""

    def __init__(self, port, protocol, *options):
        self.protocol = protocol
        self.reader, self.writer = Conn(port), Conn(port)
        self.listener = self.reader
        redirect = []
        if protocol == 2:
            self.listener = Conn(port)
            redirect = ["REDIRECT", str(client_id(self.listener))]
            self.listener.rt(resp_encode("SUBSCRIBE", "__redis__:invalidate"),
                             push(2, "subscribe", "__redis__:invalidate", 1))
        hello(self.reader, protocol)
        self.reader.rt(resp_encode("CLIENT", "TRACKING", "ON", *options, *redirect),
                       b"+OK\r\n")

    def close(self):
        for c in {self.reader, self.writer, self.listener}:
            c.close()

    def write(self, *command, reply=b"+OK\r\n"):
        self.writer.rt(resp_encode(*command), reply)

    def invalidated(self, key):
        self.listener.rt(b"", invalidation(self.protocol, key))

    def quiet(self):
        self.listener.assert_quiet(QUIET_S)


@pytest.fixture(params=[3, 2], ids=["resp3", "resp2-redirect"])
def tracked(request, resp_port):
    t = Tracked(resp_port, request.param)
    yield t
    t.close()


def test_eval_get_of_a_declared_key_is_invalidated(tracked, key):
    tracked.write("SET", key, "1")
    tracked.reader.rt(resp_encode("EVAL", GET_KEY1, "1", key), b"$1\r\n1\r\n")
    tracked.write("SET", key, "2")
    tracked.invalidated(key)
    # Forgotten once invalidated.
    tracked.write("SET", key, "3")
    tracked.quiet()


def test_a_script_that_reads_remembers_every_declared_key(tracked, key):
    """Redis 7.0 remembers the script's KEYS, not the keys its commands name: a declared
    key read through a key-less command, or not read at all, is invalidated; an
    undeclared key the script read is not."""
    undeclared = key + "u"
    tracked.write("SET", undeclared, "1")
    tracked.reader.rt(resp_encode("EVAL", GET_ARGV1, "1", key, undeclared), b"$1\r\n1\r\n")
    tracked.write("SET", undeclared, "2")
    tracked.quiet()
    tracked.write("SET", key, "2")
    tracked.invalidated(key)
    tracked.reader.send(resp_encode("EVAL_RO", READ_NOTHING_BY_KEY, "1", key))
    assert tracked.reader.read_line().startswith(b":")
    tracked.write("SET", key, "3")
    tracked.invalidated(key)


def test_a_script_that_only_writes_remembers_nothing(tracked, key):
    tracked.reader.rt(resp_encode("EVAL", SET_KEY1, "1", key), b"+OK\r\n")
    tracked.write("SET", key, "2")
    tracked.quiet()


def test_fcall_read_of_declared_keys_is_invalidated(tracked, key):
    library = (
        "#!lua name=hostile_track\n"
        "redis.register_function{function_name='hostile_get', "
        "callback=function(keys, args) return redis.call('GET', keys[1]) end, "
        "flags={'no-writes'}}"
    )
    tracked.writer.rt(resp_encode("FUNCTION", "LOAD", "REPLACE", library),
                      b"$13\r\nhostile_track\r\n")
    tracked.write("SET", key, "1")
    tracked.reader.rt(resp_encode("FCALL", "hostile_get", "1", key), b"$1\r\n1\r\n")
    tracked.write("SET", key, "2")
    tracked.invalidated(key)
    tracked.reader.rt(resp_encode("FCALL_RO", "hostile_get", "1", key), b"$1\r\n2\r\n")
    tracked.write("DEL", key, reply=b":1\r\n")
    tracked.invalidated(key)


def test_a_write_by_a_script_invalidates(tracked, key):
    tracked.write("SET", key, "1")
    tracked.reader.rt(resp_encode("GET", key), b"$1\r\n1\r\n")
    tracked.writer.rt(resp_encode("EVAL", SET_KEY1, "1", key), b"+OK\r\n")
    tracked.invalidated(key)


def test_optin_remembers_a_scripts_keys_only_after_caching_yes(resp_port, key):
    t = Tracked(resp_port, 3, "OPTIN")
    try:
        t.write("SET", key, "1")
        t.reader.rt(resp_encode("EVAL", GET_KEY1, "1", key), b"$1\r\n1\r\n")
        t.write("SET", key, "2")
        t.quiet()
        t.reader.rt(resp_encode("CLIENT", "CACHING", "YES"), b"+OK\r\n")
        t.reader.rt(resp_encode("EVAL", GET_KEY1, "1", key), b"$1\r\n2\r\n")
        t.write("SET", key, "3")
        t.invalidated(key)
    finally:
        t.close()


@pytest.mark.parametrize("protocol", [3, 2])
def test_bcast_invalidates_what_a_script_writes(resp_port, key, protocol):
    t = Tracked(resp_port, protocol, "BCAST", "PREFIX", key)
    try:
        t.reader.rt(resp_encode("EVAL", GET_KEY1, "1", key),
                    b"_\r\n" if protocol == 3 else b"$-1\r\n")
        t.writer.rt(resp_encode("EVAL", SET_KEY1, "1", key), b"+OK\r\n")
        t.invalidated(key)
    finally:
        t.close()
