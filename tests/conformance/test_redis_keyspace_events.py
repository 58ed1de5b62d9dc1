"""Keyspace notifications: `notify-keyspace-events` as CONFIG GET shows it, the events every
write command sends on `__keyspace@<db>__:<key>` and `__keyevent@<db>__:<event>` (the table below
was taken from redis-server 7.0 and is checked against it with CONFORMANCE_TARGET=redis),
`expired` and `evicted` events, classes switched on one by one, and databases other than 0.
"""

import time

import pytest
import redis

pytestmark = pytest.mark.resp

# (setup commands | the command, [(event, key), ...] it sends), in order. Keys in db 0.
EVENTS = [
    ('set k v', [('set', 'k')]),
    ('set k v | set k v2 NX', []),
    ('set k v EX 100', [('set', 'k'), ('expire', 'k')]),
    ('set k v | set k v2 KEEPTTL GET', [('set', 'k')]),
    ('setnx k v', [('set', 'k')]),
    ('setex k 100 v', [('set', 'k'), ('expire', 'k')]),
    ('psetex k 100000 v', [('set', 'k'), ('expire', 'k')]),
    ('getset k v', [('set', 'k')]),
    ('set k v | getdel k', [('del', 'k')]),
    ('set k v | getex k EX 100', [('expire', 'k')]),
    ('set k v | getex k PERSIST', []),
    ('set k v EX 100 | getex k PERSIST', [('persist', 'k')]),
    ('mset a 1 b 2', [('set', 'a'), ('set', 'b')]),
    ('msetnx a 1 b 2', [('set', 'a'), ('set', 'b')]),
    ('append k v', [('append', 'k')]),
    ('setrange k 2 v', [('setrange', 'k')]),
    ('incr k', [('incrby', 'k')]),
    ('decr k', [('incrby', 'k')]),
    ('incrby k 5', [('incrby', 'k')]),
    ('decrby k 5', [('incrby', 'k')]),
    ('incrbyfloat k 1.5', [('incrbyfloat', 'k')]),
    ('set k v | del k', [('del', 'k')]),
    ('del k', []),
    ('set a 1 | set b 1 | del a b c', [('del', 'a'), ('del', 'b')]),
    ('set a 1 | unlink a', [('del', 'a')]),
    ('set k v | expire k 100', [('expire', 'k')]),
    ('set k v | expire k -1', [('del', 'k')]),
    ('set k v | pexpire k 100000', [('expire', 'k')]),
    ('set k v | expireat k 99999999999', [('expire', 'k')]),
    ('set k v | pexpireat k 1', [('del', 'k')]),
    ('set k v EX 100 | persist k', [('persist', 'k')]),
    ('set k v | persist k', []),
    ('set a 1 | rename a b', [('rename_from', 'a'), ('rename_to', 'b')]),
    ('set a 1 | set b 2 | renamenx a b', []),
    ('set a 1 | copy a b', [('copy_to', 'b')]),
    ('set a 1 | swapdb 0 1', []),
    ('set a 1 | flushdb', []),
    ('setbit k 3 1', [('setbit', 'k')]),
    ('bitfield k SET u8 0 255', [('setbit', 'k')]),
    ('bitfield k GET u8 0', []),
    ('set a 1 | set b 2 | bitop and d a b', [('set', 'd')]),
    ('pfadd h a b', [('pfadd', 'h')]),
    ('pfadd h a | pfadd h a', []),
    ('pfadd a x | pfadd b y | pfmerge d a b', [('pfadd', 'd')]),
    ('hset h f v', [('hset', 'h')]),
    ('hset h f v g w', [('hset', 'h')]),
    ('hsetnx h f v', [('hset', 'h')]),
    ('hmset h f v', [('hset', 'h')]),
    ('hincrby h f 1', [('hincrby', 'h')]),
    ('hincrbyfloat h f 1.5', [('hincrbyfloat', 'h')]),
    ('hset h f v | hdel h f', [('hdel', 'h'), ('del', 'h')]),
    ('hset h f v g w | hdel h f', [('hdel', 'h')]),
    ('lpush l a', [('lpush', 'l')]),
    ('rpush l a b', [('rpush', 'l')]),
    ('lpushx l a', []),
    ('rpush l a | lpushx l b', [('lpush', 'l')]),
    ('rpush l a b | lpop l', [('lpop', 'l')]),
    ('rpush l a b | rpop l 2', [('rpop', 'l'), ('del', 'l')]),
    ('rpush l a b | linsert l before a x', [('linsert', 'l')]),
    ('rpush l a | lset l 0 b', [('lset', 'l')]),
    ('rpush l a a | lrem l 0 a', [('lrem', 'l'), ('del', 'l')]),
    ('rpush l a b c | ltrim l 0 0', [('ltrim', 'l')]),
    ('rpush l a b c | ltrim l 5 6', [('ltrim', 'l'), ('del', 'l')]),
    ('rpush l a | rpoplpush l d', [('lpush', 'd'), ('rpop', 'l'), ('del', 'l')]),
    ('rpush l a | lmove l d left right', [('rpush', 'd'), ('lpop', 'l'), ('del', 'l')]),
    ('rpush l a b | lmpop 1 l left', [('lpop', 'l')]),
    ('sadd s a b', [('sadd', 's')]),
    ('sadd s a | srem s a', [('srem', 's'), ('del', 's')]),
    ('sadd s a b | spop s', [('spop', 's')]),
    ('sadd s a | smove s d a', [('srem', 's'), ('del', 's'), ('sadd', 'd')]),
    ('sadd a 1 2 | sadd b 2 3 | sinterstore d a b', [('sinterstore', 'd')]),
    ('sadd a 1 2 | sadd b 2 3 | sunionstore d a b', [('sunionstore', 'd')]),
    ('sadd a 1 2 | sadd b 1 2 | sdiffstore d a b', []),
    ('zadd z 1 a', [('zadd', 'z')]),
    ('zadd z 1 a | zadd z 2 a', [('zadd', 'z')]),
    ('zadd z 1 a | zincrby z 2 a', [('zincr', 'z')]),
    ('zadd z 1 a 2 b | zrem z a', [('zrem', 'z')]),
    ('zadd z 1 a | zrem z a', [('zrem', 'z'), ('del', 'z')]),
    ('zadd z 1 a 2 b | zpopmin z', [('zpopmin', 'z')]),
    ('zadd z 1 a 2 b | zpopmax z 5', [('zpopmax', 'z'), ('del', 'z')]),
    ('zadd z 1 a 2 b | zmpop 1 z min', [('zpopmin', 'z')]),
    ('zadd z 1 a 2 b | zremrangebyscore z 0 1', [('zremrangebyscore', 'z')]),
    ('zadd z 1 a 2 b | zremrangebyrank z 0 0', [('zremrangebyrank', 'z')]),
    ('zadd z 0 a 0 b | zremrangebylex z [a [a', [('zremrangebylex', 'z')]),
    ('zadd a 1 x | zadd b 2 x | zunionstore d 2 a b', [('zunionstore', 'd')]),
    ('zadd a 1 x | zadd b 2 x | zinterstore d 2 a b', [('zinterstore', 'd')]),
    ('zadd a 1 x | zadd b 2 y | zdiffstore d 2 a b', [('zdiffstore', 'd')]),
    ('zadd a 1 x | zrangestore d a 0 -1', [('zrangestore', 'd')]),
    ('zadd a 1 x | zrangestore d a 5 6', []),
    ('set d 1 | zrangestore d nokey 0 -1', [('del', 'd')]),
    ('expire k 100', []),
    ('set k v | expire k 100 NX', [('expire', 'k')]),
    ('set k v | set k v GET', [('set', 'k')]),
    ('set a 1 | set b 1 | copy a b REPLACE', [('copy_to', 'b')]),
    ('set a 1 | set b 2 | renamenx a c', [('rename_from', 'a'), ('rename_to', 'c')]),
    ('set a 1 | rename a a', []),
    ('set k 5 | incrby k 0', [('incrby', 'k')]),
    ('set k v | append k ""', [('append', 'k')]),
    ('set k v | setrange k 0 ""', [('setrange', 'k')]),
    ('hset h f v | hincrby h f 0', []),
    ('sadd s a | sadd s a', []),
    ('zadd z 1 a | zadd z XX 1 a', []),
    ('zadd z 1 a | zadd z INCR 1 a', [('zincr', 'z')]),
    ('lpush l a | linsert l before zz x', []),
    ('rpush l a | lpos l a', []),
    ('set a 1 | mset a 1', [('set', 'a')]),
    ('setbit k 0 0', [('setbit', 'k')]),
    ('set a x | setbit a 100 0', [('setbit', 'a')]),
    ('set d 1 | sinterstore d nokey1 nokey2', [('del', 'd')]),
    ('set d 1 | zunionstore d 1 nokey', [('del', 'd')]),
    ('set d 1 | bitop and d nokey', [('del', 'd')]),
    ('set d 1 | pfmerge d', []),
    ('set d 1 | pfmerge d nokey', []),
    ('rpush l a b | blpop l 0', [('lpop', 'l')]),
    ('rpush l a | brpop l 0', [('rpop', 'l'), ('del', 'l')]),
    ('zadd z 1 a | bzpopmin z 0', [('zpopmin', 'z'), ('del', 'z')]),
    ('zadd z 1 a 2 b | bzpopmax z 0', [('zpopmax', 'z')]),
    ('rpush l a | blmove l d left right 0', [('rpush', 'd'), ('lpop', 'l'), ('del', 'l')]),
    ('rpush l a b | blmpop 0 1 l right', [('rpop', 'l')]),
    ('zadd z 1 a | bzmpop 0 1 z min', [('zpopmin', 'z'), ('del', 'z')]),
    ('rpush l a | brpoplpush l d 0', [('lpush', 'd'), ('rpop', 'l'), ('del', 'l')]),
]


class Listener:
    """A pattern subscriber on every keyspace and keyevent channel. `until_marker` reads the
    messages up to a PUBLISH the test sends after its command: messages reach one subscriber
    in the order they were published, so everything before the marker has arrived."""

    def __init__(self, port, pattern="__key*@*__:*"):
        self.client = redis.Redis(port=port)
        self.pubsub = self.client.pubsub()
        self.pubsub.psubscribe(pattern)
        self.pubsub.psubscribe("marker")
        deadline = time.monotonic() + 5
        subscribed = 0
        while subscribed < 2 and time.monotonic() < deadline:
            message = self.pubsub.get_message(timeout=0.5)
            if message and message["type"] == "psubscribe":
                subscribed += 1
        assert subscribed == 2

    def until_marker(self, writer):
        writer.publish("marker", "end")
        got = []
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            message = self.pubsub.get_message(timeout=0.5)
            if message is None or message["type"] != "pmessage":
                continue
            if message["channel"] == b"marker":
                return got
            got.append((message["channel"].decode(), message["data"].decode()))
        raise AssertionError(f"no marker after {got}")

    def close(self):
        self.pubsub.close()
        self.client.close()


def messages(events, db=0):
    """The two messages Redis sends per event with K and E on: keyspace first."""
    out = []
    for event, key in events:
        out.append((f"__keyspace@{db}__:{key}", event))
        out.append((f"__keyevent@{db}__:{event}", key))
    return out


@pytest.fixture
def notifying(make_server):
    server = make_server()
    writer = redis.Redis(port=server.resp_port)
    writer.config_set("notify-keyspace-events", "KEA")
    listener = Listener(server.resp_port)
    yield server, writer, listener
    listener.close()
    writer.close()


def run(writer, case):
    *setup, command = case.split(" | ")
    for line in setup:
        writer.execute_command(*line.split())
    return command


def test_config_get_shows_the_classes_as_redis_does(make_server):
    server = make_server()
    r = redis.Redis(port=server.resp_port)
    assert r.config_get("notify-keyspace-events") == {"notify-keyspace-events": ""}
    for given, shown in [("KEA", "AKE"), ("Ex", "xE"), ("gx", "gx"), ("Am", "Am"), ("An", "A"),
                         ("Ag", "A"), ("$lshzxetd", "$lshzxetd"), ("g$lshzxetdKEmn", "AKEm"),
                         ("", "")]:
        r.config_set("notify-keyspace-events", given)
        assert r.config_get("notify-keyspace-events")["notify-keyspace-events"] == shown, given
    with pytest.raises(redis.ResponseError) as refused:
        r.config_set("notify-keyspace-events", "KEAQ")
    assert str(refused.value) == (
        "CONFIG SET failed (possibly related to argument 'notify-keyspace-events') - "
        "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")


def test_each_write_command_sends_the_events_redis_sends(notifying):
    _, writer, listener = notifying
    mismatches = []
    for case, events in EVENTS:
        writer.flushall()
        command = run(writer, case)
        listener.until_marker(writer)
        try:
            writer.execute_command(*command.split())
        except redis.ResponseError:
            pass
        got = listener.until_marker(writer)
        if got != messages(events):
            mismatches.append((case, got, messages(events)))
    assert not mismatches, "\n".join(map(repr, mismatches))


def test_only_the_classes_switched_on_are_sent(notifying):
    _, writer, listener = notifying
    writer.config_set("notify-keyspace-events", "Kl")
    writer.set("s", "v")
    writer.rpush("l", "a")
    writer.hset("h", "f", "v")
    assert listener.until_marker(writer) == [("__keyspace@0__:l", "rpush")]
    writer.config_set("notify-keyspace-events", "Eg")
    writer.set("s", "v")
    writer.delete("s", "l")
    assert listener.until_marker(writer) == [("__keyevent@0__:del", "s"), ("__keyevent@0__:del", "l")]
    writer.config_set("notify-keyspace-events", "A")
    writer.set("s", "v")
    writer.config_set("notify-keyspace-events", "")
    writer.set("s", "v")
    assert listener.until_marker(writer) == []


def test_new_key_events(notifying):
    """`n` (Redis 7.0, not part of A): one `new` event per key a command creates; writing an
    existing key sends none."""
    _, writer, listener = notifying
    writer.config_set("notify-keyspace-events", "En")
    writer.set("foo", "bar")
    writer.set("foo", "baz")
    writer.set("bar", "bar")
    writer.rpush("list", "a")
    writer.rpush("list", "b")
    writer.hset("hash", "f", "v")
    writer.mset({"m1": "1", "foo": "2"})
    assert listener.until_marker(writer) == [
        ("__keyevent@0__:new", key) for key in ["foo", "bar", "list", "hash", "m1"]]


def test_new_comes_before_the_commands_own_event(notifying):
    """Redis sends `new` as the key is added, so before the command's own event, for string
    writes as for collections."""
    _, writer, listener = notifying
    writer.config_set("notify-keyspace-events", "EAn")
    writer.set("s", "v", ex=100)
    writer.incr("i")
    writer.rpush("l", "a")
    writer.set("s", "w")
    assert [channel for channel, _ in listener.until_marker(writer)] == [
        "__keyevent@0__:new", "__keyevent@0__:set", "__keyevent@0__:expire",
        "__keyevent@0__:new", "__keyevent@0__:incrby",
        "__keyevent@0__:new", "__keyevent@0__:rpush",
        "__keyevent@0__:set"]


def test_setrange_with_an_empty_patch_sends_nothing(notifying):
    _, writer, listener = notifying
    writer.config_set("notify-keyspace-events", "EA")
    writer.set("k", "abc")
    assert writer.setrange("k", 1, "") == 3
    assert writer.setrange("missing", 1, "") == 0
    writer.setrange("k", 1, "z")
    assert listener.until_marker(writer) == [
        ("__keyevent@0__:set", "k"), ("__keyevent@0__:setrange", "k")]


def test_events_name_the_database(notifying):
    server, _, listener = notifying
    db3 = redis.Redis(port=server.resp_port, db=3)
    db3.set("k", "v")
    db3.move("k", 5)
    assert listener.until_marker(db3) == messages([("set", "k")], db=3) + [
        ("__keyspace@3__:k", "move_from"), ("__keyevent@3__:move_from", "k"),
        ("__keyspace@5__:k", "move_to"), ("__keyevent@5__:move_to", "k")]
    db3.close()


def wait_for(listener, writer, wanted, seconds=10):
    """Reads marker rounds until every message in `wanted` was seen; returns all seen."""
    seen = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        seen += listener.until_marker(writer)
        if all(w in seen for w in wanted):
            return seen
        time.sleep(0.1)
    raise AssertionError(f"waited for {wanted}, saw {seen}")


def test_keys_that_expire_send_expired(notifying):
    _, writer, listener = notifying
    writer.set("s", "v", px=100)
    writer.hset("h", "f", "v")
    writer.pexpire("h", 100)
    writer.rpush("untouched", "a")
    seen = wait_for(listener, writer, [("__keyspace@0__:s", "expired"),
                                       ("__keyevent@0__:expired", "h")])
    assert ("__keyspace@0__:untouched", "expired") not in seen
    assert writer.exists("s", "h") == 0


def test_evicted_keys_send_evicted(make_server, target):
    extra = ["--maxmemory", "8mb", "--maxmemory-policy", "allkeys-lru"] if target == "redis" \
        else ["-m", "8"]
    server = make_server(extra=extra)
    writer = redis.Redis(port=server.resp_port)
    writer.config_set("notify-keyspace-events", "Ee")
    listener = Listener(server.resp_port, pattern="__keyevent@0__:evicted")
    value = "x" * 1000
    evicted = []
    for batch in range(100):
        with writer.pipeline(transaction=False) as pipe:
            for i in range(500):
                pipe.set(f"k{batch}:{i}", value)
            pipe.execute()
        evicted += listener.until_marker(writer)
        if len(evicted) >= 10:
            break
    assert len(evicted) >= 10
    for channel, key in evicted:
        assert channel == "__keyevent@0__:evicted"
        assert key.startswith("k")
    gone = [key for _, key in evicted[:10]]
    assert writer.exists(*gone) == 0
    listener.close()
    writer.close()


@pytest.mark.spinel_only
def test_keys_written_over_memcached_send_expired_and_evicted(notifying):
    server, writer, listener = notifying
    from wire import Conn
    with Conn(server.mc_port) as mc:
        mc.rt(b"set mk 0 1 1\r\nv\r\n", b"STORED\r\n")
    wait_for(listener, writer, [("__keyspace@0__:mk", "expired")], seconds=10)


def test_a_served_blocked_pop_sends_its_events(notifying):
    """The pop made for a client blocked in BLPOP, when another client's push (here from a
    script) wakes it, sends the pop's events as an immediate pop does."""
    server, writer, listener = notifying
    import threading
    waiter = redis.Redis(port=server.resp_port)
    got = {}
    thread = threading.Thread(target=lambda: got.update(v=waiter.blpop("q", 5)))
    thread.start()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and writer.info("clients")["blocked_clients"] != 1:
        time.sleep(0.02)
    writer.eval("return redis.call('rpush', KEYS[1], 'x')", 1, "q")
    thread.join(5)
    assert got["v"] == (b"q", b"x")
    seen = wait_for(listener, writer, [("__keyspace@0__:q", "del")])
    keyspace = [event for channel, event in seen if channel == "__keyspace@0__:q"]
    assert keyspace == ["rpush", "lpop", "del"]
    waiter.close()
