"""Large values lent by meta `mg` and the binary gets (issue 36: values of 4 KiB or more leave
in a vectored send straight from item memory, the read's epoch pin held until the kernel has
them, as text `get` and RESP GET/MGET already did). A plain `mg` (no T, N or R) and binary
Get, GetK, GetQ and GetKQ lend; what may write (`mg T`, gat, a set) waits behind the loans
for the next handler call. Pinned down here: values read by a slow reader while other clients
overwrite, delete and evict them are whole; a pipeline that mixes lent gets with writes and
touches is answered in order with the values of its own moment; clients that never read
hold a bounded amount of memory.

The behaviour tests hold for memcached too (`CONFORMANCE_TARGET=memcached`); the memory
bound is Spinel's own.
"""

import re
import socket
import struct
import time

import pytest

from test_lent_values import set_first_versions, slow_reads_of, write_versions
from wire import Conn, feed_hogs, open_hog, reads_while_written, rss_mib, value_of

pytestmark = pytest.mark.memcache

VA_LINE = re.compile(rb"VA (\d+) f(\d+) k(\S+)\r\n")
GETKQ, NOOP, GETK, SET, GAT = 0x0D, 0x0A, 0x0C, 0x01, 0x1D


def binary_request(op, key=b"", extras=b"", value=b"", opaque=0):
    body = len(extras) + len(key) + len(value)
    head = struct.pack(">BBHBBHIIQ", 0x80, op, len(key), len(extras), 0, 0, body, opaque, 0)
    return head + extras + key + value


def mg_request(keys):
    """Quiet `mg`s of `keys` with value, flags and key, ended by `mn`."""
    return b"".join(b"mg %s v f k q\r\n" % key for key in keys) + b"mn\r\n"


def parse_mg_reply(reply):
    """[(key, flags, data)] of a whole quiet-mg reply (ending in MN)."""
    hits, pos = [], 0
    while not reply.startswith(b"MN\r\n", pos):
        match = VA_LINE.match(reply, pos)
        assert match, f"bad reply at {pos}: {reply[pos:pos + 60]!r}"
        length, flags, key = int(match.group(1)), int(match.group(2)), match.group(3)
        start = match.end()
        assert reply[start + length:start + length + 2] == b"\r\n", "value not framed"
        hits.append((key, flags, reply[start:start + length]))
        pos = start + length + 2
    assert pos + 4 == len(reply), "bytes after MN"
    return hits


def binary_getkq_request(keys):
    return b"".join(binary_request(GETKQ, key) for key in keys) + binary_request(NOOP)


def parse_packets(reply):
    """[(opcode, status, extras, key, value)] of whole response packets."""
    packets, pos = [], 0
    while pos < len(reply):
        assert reply[pos] == 0x81, f"bad magic at {pos}"
        op, key_len, extras_len, status, body = struct.unpack(">xBHBxHI", reply[pos:pos + 12])
        start = pos + 24
        extras = reply[start:start + extras_len]
        key = reply[start + extras_len:start + extras_len + key_len]
        value = reply[start + extras_len + key_len:start + body]
        packets.append((op, status, extras, key, value))
        pos = start + body
    assert pos == len(reply), "packet cut short"
    return packets


def binary_reply_whole(reply):
    """Whether `reply` ends with the noop's response (and every packet before it is whole)."""
    pos = 0
    while pos + 24 <= len(reply):
        body = struct.unpack(">I", reply[pos + 8:pos + 12])[0]
        if pos + 24 + body > len(reply):
            return False
        if reply[pos + 1] == NOOP:
            return pos + 24 + body == len(reply)
        pos += 24 + body
    return False


def parse_binary_hits(reply):
    hits = []
    for op, status, extras, key, value in parse_packets(reply):
        if op == NOOP:
            continue
        assert (op, status) == (GETKQ, 0), (op, status)
        hits.append((key, struct.unpack(">I", extras)[0], value))
    return hits


READERS = {
    # kind: (request of keys, reply complete?, [(key, flags, data)] of a whole reply)
    "mg": (mg_request, lambda reply: reply.endswith(b"MN\r\n"), parse_mg_reply),
    "binary": (binary_getkq_request, binary_reply_whole, parse_binary_hits),
}


def slow_reads(port, kind, keys, size, rounds):
    """As test_lent_values.slow_get, with `mg` or binary GetKQ: each reply read in small
    pieces with pauses, its values checked whole."""
    request_of, complete, parse = READERS[kind]
    return slow_reads_of(port, request_of(keys), complete, parse, size, rounds)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["mg", "binary"])
@pytest.mark.parametrize("size", [5000, 100000])
def test_values_sent_while_overwritten_are_whole(make_server, size, kind):
    server = make_server()
    prefix = b"lent%s%d" % (kind.encode(), size)
    keys = set_first_versions(server.mc_port, prefix, size)

    def read():
        return sum(slow_reads(server.mc_port, kind, keys, size, rounds=8))

    hits, writes = reads_while_written(write_versions, server.mc_port, prefix, size, read)
    print(f"{hits} whole values read while {writes} write rounds ran")
    assert writes > 0 and hits > 0
    with Conn(server.mc_port) as after:
        after.rt(b"mn\r\n", b"MN\r\n")


def test_meta_pipeline_mixing_lent_gets_and_writes_is_in_order(make_server):
    # Lent mg replies, then a set of the same key, an mg T (both wait for the loans), more
    # lent mg and get replies: one write, every reply in order with its own moment's value.
    server = make_server()
    size = 10000
    old, new = value_of(1, size), value_of(2, size)
    with Conn(server.mc_port) as conn:
        conn.rt(b"set mk0 3 0 %d\r\n%s\r\nset mk1 4 0 %d\r\n%s\r\n" % (size, old, size, old),
                b"STORED\r\nSTORED\r\n")
        conn.send(b"mg mk0 v f\r\nmg mk1 v\r\nset mk0 5 0 %d\r\n%s\r\nmg mk0 v f\r\n"
                  b"mg mk1 T30 v t\r\nmg mk1 v\r\nmg missing v q\r\nmn\r\nget mk0 mk1\r\n"
                  % (size, new))
        want = (b"VA %d f3\r\n%s\r\nVA %d\r\n%s\r\nSTORED\r\nVA %d f5\r\n%s\r\n"
                b"VA %d t30\r\n%s\r\nVA %d\r\n%s\r\nMN\r\n"
                b"VALUE mk0 5 %d\r\n%s\r\nVALUE mk1 4 %d\r\n%s\r\nEND\r\n"
                % (size, old, size, old, size, new, size, old, size, old, size, new, size, old))
        assert conn.read_exact(len(want), timeout=10.0) == want
        conn.assert_quiet()


def test_binary_pipeline_mixing_lent_gets_and_writes_is_in_order(make_server):
    # Lent GetK replies, a Set of the same key and a Gat behind them (both wait for the
    # loans), then more lent GetKQs and a Noop: every reply in order, values of its moment.
    server = make_server()
    size = 10000
    old, new = value_of(1, size), value_of(2, size)
    flags = struct.pack(">II", 7, 0)
    with Conn(server.mc_port) as conn:
        conn.send(binary_request(SET, b"bk0", flags, old, opaque=1)
                  + binary_request(SET, b"bk1", flags, old, opaque=2)
                  + binary_request(GETK, b"bk0", opaque=3)
                  + binary_request(GETK, b"bk1", opaque=4)
                  + binary_request(SET, b"bk0", struct.pack(">II", 9, 0), new, opaque=5)
                  + binary_request(GAT, b"bk1", struct.pack(">I", 30), opaque=6)
                  + binary_request(GETKQ, b"bk0", opaque=7)
                  + binary_request(GETKQ, b"nope", opaque=8)
                  + binary_request(GETKQ, b"bk1", opaque=9)
                  + binary_request(NOOP, opaque=10))
        reply = b""
        while not binary_reply_whole(reply):
            head = conn.read_exact(24, timeout=10.0)
            reply += head + conn.read_exact(struct.unpack(">I", head[8:12])[0], timeout=10.0)
        got = parse_packets(reply)
        seven, nine = struct.pack(">I", 7), struct.pack(">I", 9)
        assert got == [
            (SET, 0, b"", b"", b""),
            (SET, 0, b"", b"", b""),
            (GETK, 0, seven, b"bk0", old),
            (GETK, 0, seven, b"bk1", old),
            (SET, 0, b"", b"", b""),
            (GAT, 0, seven, b"", old),
            (GETKQ, 0, nine, b"bk0", new),
            (GETKQ, 0, seven, b"bk1", old),
            (NOOP, 0, b"", b"", b""),
        ]
        conn.assert_quiet()


@pytest.mark.spinel_only
@pytest.mark.slow
def test_never_readers_of_lent_meta_and_binary_gets_hold_bounded_memory(make_server):
    """20 clients pipeline `mg`s and binary GetKQs of 100 KB values and never read while a
    writer overwrites the keys: each holds about one output pause's worth plus one reply,
    so RSS stays bounded, and a reader is answered whole throughout."""
    server = make_server()
    size = 100_000
    keys = [b"mhog%03d" % i for i in range(8)]
    with Conn(server.mc_port) as setup:
        for i, key in enumerate(keys):
            setup.rt(b"set %s 0 0 %d\r\n%s\r\n" % (key, size, value_of(i, size)), b"STORED\r\n")
    requests = [b"".join(b"mg %s v\r\n" % key for key in keys) * 4,
                binary_getkq_request(keys) * 4]
    hogs = [open_hog(server.mc_port) for _ in range(20)]
    rss_before = rss_mib(server.pid)
    rss_peak, sent = rss_before, 0
    deadline = time.monotonic() + 4
    want = b"".join(b"VA %d\r\n%s\r\n" % (size, value_of(i, size)) for i in range(8)) + b"MN\r\n"
    with Conn(server.mc_port) as writer, Conn(server.mc_port) as reader:
        rounds = 0
        while time.monotonic() < deadline:
            sent += feed_hogs(hogs[:10], requests[0]) + feed_hogs(hogs[10:], requests[1])
            i = rounds % 8
            writer.rt(b"set %s 0 0 %d\r\n%s\r\n" % (keys[i], size, value_of(i, size)),
                      b"STORED\r\n")
            reader.send(b"".join(b"mg %s v\r\n" % key for key in keys) + b"mn\r\n")
            assert reader.read_exact(len(want), timeout=10.0) == want
            rss_peak = max(rss_peak, rss_mib(server.pid))
            rounds += 1
    print(f"hogs sent {sent} bytes; {rounds} rounds; RSS {rss_before:.1f} -> peak "
          f"{rss_peak:.1f} MiB")
    assert sent >= len(requests[0]) * len(hogs), "the hogs sent too little to mean anything"
    assert rss_peak - rss_before < 48, f"server RSS grew {rss_peak - rss_before:.1f} MiB"
    for hog in hogs:
        hog.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        hog.close()
