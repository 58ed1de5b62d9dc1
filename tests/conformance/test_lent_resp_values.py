"""Large values sent from item memory over RESP (issue 36: GET and MGET lend values of 4 KiB
or more to the loop, which sends them in a vectored send straight from the store; what the
socket does not take is copied). A RESP reply, unlike a memcached one, may be dropped or
wrapped after it is written, so these tests pin down what must not change: values read
while other clients overwrite, delete and evict them are whole (RESP2 and RESP3); CLIENT
REPLY SKIP and OFF drop exactly the replies they name; GET and MGET inside MULTI/EXEC and
scripts answer as before; tracking pushes and MONITOR lines interleave with lent replies
without cutting them; a client that never reads holds a bounded amount of memory.

The behaviour tests hold for redis-server too (`CONFORMANCE_TARGET=redis`); the memory bound
is Spinel's own.
"""

import socket
import struct
import time

import pytest

from wire import (Conn, feed_hogs, open_hog, reads_while_written, resp_encode, rss_mib,
                  value_of)

KEYS = 24


def versioned(key_index, version, size):
    """A value whose every 12 bytes name its key and version: a torn value shows two."""
    stem = b"%05d:%05d;" % (key_index, version)
    return (stem * (size // len(stem) + 1))[:size]


def check_whole(key_index, data, size):
    assert len(data) == size, f"key {key_index}: {len(data)} bytes"
    version = int(data[6:11])
    assert data == versioned(key_index, version, size), f"key {key_index}: torn value"


def parse_one(buf, pos):
    """One RESP2/RESP3 value at `pos` of `buf`: (value, next pos), or None if cut short.
    Bulk strings are bytes, nulls None, arrays and pushes lists ("push" first for a push),
    simple strings and errors bytes with their prefix, integers int."""
    end = buf.find(b"\r\n", pos)
    if end < 0:
        return None
    kind, line = buf[pos:pos + 1], buf[pos + 1:end]
    after = end + 2
    if kind in (b"$", b"="):
        n = int(line)
        if n < 0:
            return None, after
        if len(buf) < after + n + 2:
            return None
        assert buf[after + n:after + n + 2] == b"\r\n", "bulk not framed"
        return bytes(buf[after:after + n]), after + n + 2
    if kind in (b"*", b">", b"~", b"%"):
        n = int(line) * (2 if kind == b"%" else 1)
        items = ["push"] if kind == b">" else []
        for _ in range(max(n, 0)):
            parsed = parse_one(buf, after)
            if parsed is None:
                return None
            item, after = parsed
            items.append(item)
        return (items if n >= 0 else None), after
    if kind == b"_":
        return None, after
    if kind == b":":
        return int(line), after
    if kind in (b"+", b"-", b"#", b",", b"("):
        return kind + bytes(line), after
    raise AssertionError(f"unexpected reply type {buf[pos:pos + 40]!r}")


class Reader:
    """RESP values from a socket, read in pieces of `chunk` with `pause` between them (a
    slow reader); bytes past a value wait for the next call."""

    def __init__(self, sock):
        self.sock, self.buf, self.pos = sock, bytearray(), 0

    def values(self, count, pause=0.0, chunk=65536):
        values = []
        while len(values) < count:
            parsed = parse_one(self.buf, self.pos)
            if parsed is not None:
                value, self.pos = parsed
                values.append(value)
                continue
            piece = self.sock.recv(chunk)
            assert piece, "server closed"
            del self.buf[:self.pos]
            self.pos = 0
            self.buf += piece
            if pause:
                time.sleep(pause)
        return values


def read_values(sock, count, pause=0.0, chunk=65536):
    """Reads `count` whole RESP values from `sock`, and nothing after them."""
    reader = Reader(sock)
    values = reader.values(count, pause, chunk)
    assert reader.pos == len(reader.buf), "bytes after the last reply"
    return values


def hello3(sock):
    sock.sendall(resp_encode(b"HELLO", b"3"))
    (greeting,) = read_values(sock, 1)
    assert greeting is not None


def slow_mgets(port, protocol, keys, size, rounds):
    """MGETs `keys` (and GETs the first) `rounds` times, reading each reply in small pieces
    with pauses, so its values sit half sent while the writers run; every value whole."""
    hits = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        if protocol == 3:
            hello3(sock)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32768)
        for _ in range(rounds):
            sock.sendall(resp_encode(b"MGET", *keys) + resp_encode(b"GET", keys[0]))
            many, one = read_values(sock, 2, pause=0.0005, chunk=max(2048, size // 8))
            assert len(many) == len(keys)
            for index, data in enumerate(many + [one]):
                if data is not None:
                    check_whole(index % len(keys), data, size)
                    hits += 1
    return hits


def write_versions(port, prefix, size, stop, counts):
    """Overwrites every key with a new version over and over, deletes some, and writes
    fillers (past Spinel's -m 64 for the larger sizes: evicting), until `stop`."""
    version, fill_keys = 1, max(64, 96_000_000 // size)
    filler = b"f" * size
    with Conn(port) as conn:
        while not stop.is_set():
            version += 1
            batch = []
            for i in range(KEYS):
                key = b"%s_%03d" % (prefix, i)
                if (i + version) % 5 == 0:
                    batch.append(resp_encode(b"DEL", key))
                else:
                    batch.append(resp_encode(b"SET", key, versioned(i, version % 100000, size)))
            for j in range(8):
                batch.append(resp_encode(b"SET", b"fill%d" % ((version * 8 + j) % fill_keys),
                                         filler))
            conn.send(b"".join(batch) + resp_encode(b"PING"))
            conn.read_until(b"+PONG\r\n", timeout=30.0)
            counts["writes"] += 1
            # Lets the reader's thread run (the writers would hold the interpreter).
            time.sleep(0.002)


@pytest.mark.resp
@pytest.mark.slow
@pytest.mark.parametrize("protocol", [2, 3])
@pytest.mark.parametrize("size", [5000, 10000, 100000])
def test_values_sent_while_overwritten_are_whole(make_server, size, protocol):
    server = make_server()
    prefix = b"rlent%d" % size
    keys = [b"%s_%03d" % (prefix, i) for i in range(KEYS)]
    with Conn(server.resp_port) as setup:
        setup.send(b"".join(resp_encode(b"SET", key, versioned(i, 1, size))
                            for i, key in enumerate(keys)))
        want = b"+OK\r\n" * KEYS
        assert setup.read_exact(len(want), timeout=10.0) == want
    def read():
        return slow_mgets(server.resp_port, protocol, keys, size, rounds=8)

    hits, writes = reads_while_written(write_versions, server.resp_port, prefix, size, read)
    print(f"{hits} whole values read while {writes} write rounds ran")
    assert writes > 0 and hits > 0
    with Conn(server.resp_port) as after:
        after.rt(resp_encode(b"PING"), b"+PONG\r\n")


def store_values(conn, prefix, size, count):
    keys = [b"%s%03d" % (prefix, i) for i in range(count)]
    conn.send(b"".join(resp_encode(b"SET", key, value_of(i, size)) for i, key in enumerate(keys)))
    want = b"+OK\r\n" * count
    assert conn.read_exact(len(want), timeout=10.0) == want
    return keys


def bulk(data):
    return b"$%d\r\n%s\r\n" % (len(data), data)


def mget_reply(keys, size):
    return b"*%d\r\n" % len(keys) + b"".join(bulk(value_of(int(k[-3:]), size)) for k in keys)


@pytest.mark.resp
@pytest.mark.parametrize("protocol", [2, 3])
def test_client_reply_skip_and_off_drop_exactly_their_replies(make_server, protocol):
    # Lent replies around the ones CLIENT REPLY drops, in one write and then one command a
    # write: what arrives is exactly the replies not dropped, whole and in order.
    server = make_server()
    size = 10000
    with Conn(server.resp_port) as setup:
        keys = store_values(setup, b"rskip", size, 8)
    commands = [
        (resp_encode(b"GET", keys[0]), bulk(value_of(0, size))),
        (resp_encode(b"MGET", *keys), mget_reply(keys, size)),
        (resp_encode(b"CLIENT", b"REPLY", b"SKIP"), b""),
        (resp_encode(b"MGET", *keys), b""),
        (resp_encode(b"GET", keys[1]), bulk(value_of(1, size))),
        (resp_encode(b"CLIENT", b"REPLY", b"SKIP"), b""),
        (resp_encode(b"GET", keys[2]), b""),
        (resp_encode(b"MGET", *keys[3:]), mget_reply(keys[3:], size)),
        (resp_encode(b"CLIENT", b"REPLY", b"OFF"), b""),
        (resp_encode(b"GET", keys[4]), b""),
        (resp_encode(b"MGET", *keys), b""),
        (resp_encode(b"GET", keys[5]), b""),
        (resp_encode(b"CLIENT", b"REPLY", b"ON"), b"+OK\r\n"),
        (resp_encode(b"MGET", *keys[:5]), mget_reply(keys[:5], size)),
        (resp_encode(b"GET", keys[6]), bulk(value_of(6, size))),
    ]
    with socket.create_connection(("127.0.0.1", server.resp_port), timeout=30) as sock:
        if protocol == 3:
            hello3(sock)
        want = b"".join(reply for _, reply in commands) + b"+PONG\r\n"
        sock.sendall(b"".join(request for request, _ in commands) + resp_encode(b"PING"))
        assert recv_exact(sock, len(want)) == want
        for request, reply in commands:
            sock.sendall(request)
            if reply:
                assert recv_exact(sock, len(reply)) == reply
        sock.sendall(resp_encode(b"PING"))
        assert recv_exact(sock, 7) == b"+PONG\r\n"


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        piece = sock.recv(n - len(buf))
        assert piece, "server closed"
        buf += piece
    return bytes(buf)


@pytest.mark.resp
def test_large_gets_inside_multi_and_scripts(make_server):
    # Queued GET and MGET answer inside EXEC's array; a script's redis.call('GET') is a Lua
    # string (its length is the value's); the replies around them are lent and whole.
    server = make_server()
    size = 10000
    with Conn(server.resp_port) as conn:
        keys = store_values(conn, b"rtx", size, 6)
        script = b"return #redis.call('GET', KEYS[1])"
        echo = b"return redis.call('MGET', KEYS[1], KEYS[2])"
        conn.send(resp_encode(b"MGET", *keys) + resp_encode(b"MULTI")
                  + resp_encode(b"GET", keys[0]) + resp_encode(b"MGET", *keys)
                  + resp_encode(b"EXEC") + resp_encode(b"GET", keys[1])
                  + resp_encode(b"EVAL", script, b"1", keys[2])
                  + resp_encode(b"EVAL", echo, b"2", keys[3], keys[4])
                  + resp_encode(b"GET", keys[5]))
        want = (mget_reply(keys, size) + b"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n"
                + bulk(value_of(0, size)) + mget_reply(keys, size)
                + bulk(value_of(1, size)) + b":%d\r\n" % size
                + mget_reply(keys[3:5], size) + bulk(value_of(5, size)))
        assert conn.read_exact(len(want), timeout=30.0) == want
        conn.assert_quiet()


@pytest.mark.resp
def test_tracking_pushes_and_monitor_around_lent_replies(make_server):
    # A RESP3 client tracking its keys pipelines large GETs and MGETs while another client
    # overwrites them: invalidation pushes come between whole replies, never inside one. A
    # MONITOR client sees every command.
    server = make_server()
    size = 10000
    with Conn(server.resp_port) as setup:
        keys = store_values(setup, b"rtrk", size, 8)
    with socket.create_connection(("127.0.0.1", server.resp_port), timeout=30) as reader, \
            Conn(server.resp_port) as monitor, Conn(server.resp_port) as writer:
        monitor.rt(resp_encode(b"MONITOR"), b"+OK\r\n")
        hello3(reader)
        reader.sendall(resp_encode(b"CLIENT", b"TRACKING", b"ON"))
        assert read_values(reader, 1) == [b"+OK"]
        rounds, replies, pushes = 20, 0, 0
        stream = Reader(reader)
        for round_ in range(rounds):
            reader.sendall(resp_encode(b"MGET", *keys) + resp_encode(b"GET", keys[round_ % 8]))
            writer.send(resp_encode(b"SET", keys[round_ % 8], value_of(round_ % 8, size)))
            writer.read_exact(5, timeout=10.0)
            got = 0
            while got < 2:
                (value,) = stream.values(1, pause=0.0002, chunk=4096)
                if isinstance(value, list) and value[:1] == ["push"]:
                    assert value[1] == b"invalidate", value[:2]
                    pushes += 1
                    continue
                if isinstance(value, list):
                    assert value == [value_of(i, size) for i in range(8)]
                else:
                    assert value == value_of(round_ % 8, size)
                got += 1
                replies += 1
        assert replies == 2 * rounds
        writer.send(resp_encode(b"ECHO", b"monitor-end"))
        writer.read_until(b"monitor-end\r\n", timeout=10.0)
        seen = monitor.read_until(b'"ECHO" "monitor-end"', timeout=10.0)
        assert seen.count(b'"MGET"') == rounds
        print(f"{replies} replies, {pushes} invalidations")


@pytest.mark.resp
@pytest.mark.spinel_only
@pytest.mark.slow
def test_never_readers_of_lent_gets_hold_bounded_memory(make_server):
    """20 clients pipeline GETs and MGETs of 100 KB values and never read while a writer
    overwrites the keys: each hog holds about one output pause's worth plus one reply, so
    RSS stays bounded, and a reader is answered whole throughout."""
    server = make_server()
    size = 100_000
    with Conn(server.resp_port) as setup:
        keys = store_values(setup, b"rhg", size, 8)
    request = (resp_encode(b"MGET", *keys) + b"".join(resp_encode(b"GET", k) for k in keys)) * 4
    hogs = [open_hog(server.resp_port) for _ in range(20)]
    rss_before = rss_mib(server.pid)
    rss_peak, sent = rss_before, 0
    deadline = time.monotonic() + 4
    with Conn(server.resp_port) as writer, Conn(server.resp_port) as reader:
        rounds = 0
        while time.monotonic() < deadline:
            sent += feed_hogs(hogs, request)
            i = rounds % 8
            writer.send(resp_encode(b"SET", keys[i], value_of(i, size)))
            assert writer.read_exact(5, timeout=10.0) == b"+OK\r\n"
            reader.send(resp_encode(b"MGET", *keys) + resp_encode(b"PING"))
            want = mget_reply(keys, size) + b"+PONG\r\n"
            assert reader.read_exact(len(want), timeout=10.0) == want
            rss_peak = max(rss_peak, rss_mib(server.pid))
            rounds += 1
    print(f"hogs sent {sent} bytes; {rounds} rounds; RSS {rss_before:.1f} -> peak "
          f"{rss_peak:.1f} MiB")
    assert sent >= len(request) * len(hogs), "the hogs sent too little to mean anything"
    # 20 hogs at about one 800 KB reply each (16 MB), the loop's pool and slack.
    assert rss_peak - rss_before < 48, f"server RSS grew {rss_peak - rss_before:.1f} MiB"
    for hog in hogs:
        hog.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        hog.close()


@pytest.mark.resp
@pytest.mark.spinel_only
def test_lent_replies_count_towards_the_output_limit(make_server):
    # A client that never reads while an MGET of 48 values of 400 KB (19 MB, more than the
    # kernel's socket buffers take) is answered past --output-limit (1 MiB) is cut off: lent
    # bytes the kernel did not take count as unsent output (what it took still arrives).
    server = make_server(extra=["--output-limit", "1"])
    size = 400_000
    with Conn(server.resp_port) as setup:
        keys = store_values(setup, b"rlim", size, 48)
    hog = socket.create_connection(("127.0.0.1", server.resp_port), timeout=10)
    hog.sendall(resp_encode(b"MGET", *keys))
    time.sleep(0.5)
    received = 0
    while True:
        try:
            piece = hog.recv(1 << 16)
        except ConnectionResetError:
            break
        if not piece:
            break
        received += len(piece)
    hog.close()
    assert received < size * len(keys), f"got the whole {received} byte reply"
    with Conn(server.resp_port) as after:
        after.rt(resp_encode(b"GET", keys[0][:-1] + b"x"), b"$-1\r\n")
