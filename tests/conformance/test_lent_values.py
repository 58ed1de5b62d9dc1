"""Large values sent from item memory (issue 36: a get's values of 4 KiB or more leave in a
vectored send straight from the store, with the read's epoch pin held until the kernel has
them; what the socket does not take is copied). While other clients overwrite, delete and
evict the keys being sent, a client that reads slowly gets every value whole: the old one or
the new one, never a mix, never bytes of another item.

Holds for memcached too (`CONFORMANCE_TARGET=memcached`).
"""

import re
import socket
import time

import pytest

from wire import Conn, reads_while_written

KEYS = 24
VALUE_LINE = re.compile(rb"VALUE (\S+) (\d+) (\d+)\r\n")


def versioned(key_index, version, size):
    """A value whose every 12 bytes name its key and version: a torn value shows two."""
    stem = b"%05d:%05d;" % (key_index, version)
    return (stem * (size // len(stem) + 1))[:size]


def parse_get_reply(reply):
    """[(key, flags, data)] of a whole get reply (ending in END)."""
    hits, pos = [], 0
    while not reply.startswith(b"END\r\n", pos):
        match = VALUE_LINE.match(reply, pos)
        assert match, f"bad reply at {pos}: {reply[pos:pos + 60]!r}"
        key, flags, length = match.group(1), int(match.group(2)), int(match.group(3))
        start = match.end()
        data = reply[start:start + length]
        assert reply[start + length:start + length + 2] == b"\r\n", "value not framed"
        hits.append((key, flags, data))
        pos = start + length + 2
    assert pos + 5 == len(reply), "bytes after END"
    return hits


def check_whole(key, flags, data, size):
    index = int(key.rsplit(b"_", 1)[1])
    assert len(data) == size, f"{key!r}: {len(data)} bytes"
    version = int(data[6:11])
    assert flags == version, f"{key!r}: flags {flags} but data of version {version}"
    assert data == versioned(index, version, size), f"{key!r}: torn value"


def set_first_versions(port, prefix, size):
    """Sets KEYS keys under `prefix` to their first version over memcached text; the keys."""
    keys = [b"%s_%03d" % (prefix, i) for i in range(KEYS)]
    with Conn(port) as setup:
        for i, key in enumerate(keys):
            value = versioned(i, 1, size)
            setup.rt(b"set %s 1 0 %d\r\n%s\r\n" % (key, size, value), b"STORED\r\n")
    return keys


def slow_get(port, keys, size, rounds):
    """Asks for `keys` `rounds` times, reading each reply in small pieces with pauses, so
    its values sit half sent while the writers run."""
    request = b"get " + b" ".join(keys) + b"\r\n"
    return slow_reads_of(port, request, lambda reply: reply.endswith(b"END\r\n"),
                         parse_get_reply, size, rounds)


def slow_reads_of(port, request, complete, parse, size, rounds):
    """Sends `request` `rounds` times and reads each reply in small pieces with pauses until
    `complete(reply)`; checks every (key, flags, data) of `parse(reply)` whole and yields
    how many there were."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32768)
        for _ in range(rounds):
            sock.sendall(request)
            reply = b""
            while not complete(reply):
                piece = sock.recv(max(2048, size // 8))
                assert piece, "server closed"
                reply += piece
                time.sleep(0.0005)
            hits = parse(reply)
            for key, flags, data in hits:
                check_whole(key, flags, data, size)
            yield len(hits)


def write_versions(port, prefix, size, stop, counts):
    """Overwrites every key with a new version over and over, deletes some, and writes
    fillers past the store's limit (evicting), until `stop`."""
    version = 1
    with Conn(port) as conn:
        while not stop.is_set():
            version += 1
            batch = []
            for i in range(KEYS):
                if (i + version) % 5 == 0:
                    batch.append(b"delete %s_%03d noreply\r\n" % (prefix, i))
                    continue
                value = versioned(i, version % 100000, size)
                batch.append(b"set %s_%03d %d 0 %d noreply\r\n%s\r\n"
                             % (prefix, i, version % 100000, size, value))
            filler = b"f" * size
            for j in range(8):
                batch.append(b"set fill%d_%d 0 0 %d noreply\r\n%s\r\n"
                             % (version, j, size, filler))
            conn.send(b"".join(batch))
            conn.rt(b"mn\r\n", b"MN\r\n")
            counts["writes"] += 1
            # Lets the reader's thread run (the writers would hold the interpreter).
            time.sleep(0.002)


@pytest.mark.memcache
@pytest.mark.slow
@pytest.mark.parametrize("size", [5000, 10000, 100000])
def test_values_sent_while_overwritten_are_whole(make_server, size):
    server = make_server()
    prefix = b"lent%d" % size
    keys = set_first_versions(server.mc_port, prefix, size)

    def read():
        return sum(slow_get(server.mc_port, keys, size, rounds=8))

    hits, writes = reads_while_written(write_versions, server.mc_port, prefix, size, read)
    print(f"{hits} whole values read while {writes} write rounds ran")
    assert writes > 0 and hits > 0
    with Conn(server.mc_port) as after:
        after.rt(b"mn\r\n", b"MN\r\n")
