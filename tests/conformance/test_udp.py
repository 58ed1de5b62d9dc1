"""memcached's UDP transport (-U), text and binary: the 8-byte frame header, one reply unit
per key of a get (a bare header for a missed key, END with the last), one unit per binary
reply, replies cut into 1,400-byte datagrams, noreply silent, requests spanning datagrams
dropped. Same bytes from spinel and memcached."""

import socket
import struct

import pytest

from conftest import free_port

pytestmark = pytest.mark.memcache

HEADER = struct.Struct(">HHHH")


class Udp:
    def __init__(self, port):
        self.addr = ("127.0.0.1", port)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.settimeout(0.3)

    def exchange(self, request_id, payload, count=1):
        """Sends one datagram; returns every datagram that comes back as (header, body)."""
        self.sock.sendto(HEADER.pack(request_id, 0, count, 0) + payload, self.addr)
        replies = []
        while True:
            try:
                datagram = self.sock.recv(65536)
            except socket.timeout:
                return replies
            replies.append((HEADER.unpack(datagram[:8]), datagram[8:]))


@pytest.fixture
def udp(make_server):
    port = free_port()
    server = make_server(extra=["-U", str(port)])
    client = Udp(port)
    yield client
    client.sock.close()
    server.stop()


def test_set_and_get(udp):
    assert udp.exchange(1, b"set u1 0 0 1\r\nx\r\n") == [((1, 0, 1, 0), b"STORED\r\n")]
    assert udp.exchange(2, b"get u1\r\n") == [((2, 0, 1, 0), b"VALUE u1 0 1\r\nx\r\nEND\r\n")]


def test_each_key_of_a_get_is_its_own_unit(udp):
    udp.exchange(1, b"set u2 0 0 1\r\nx\r\n")
    assert udp.exchange(2, b"get u2 u2-miss\r\n") == [
        ((2, 0, 1, 0), b"VALUE u2 0 1\r\nx\r\n"),
        ((2, 0, 1, 0), b"END\r\n"),
    ]
    # A missed key that is not the last is a bare header with a count of 0.
    assert udp.exchange(3, b"get u2-miss u2\r\n") == [
        ((3, 0, 0, 0), b""),
        ((3, 0, 1, 0), b"VALUE u2 0 1\r\nx\r\nEND\r\n"),
    ]
    assert udp.exchange(4, b"get u2-a u2-b\r\n") == [((4, 0, 0, 0), b""), ((4, 0, 1, 0), b"END\r\n")]


def test_a_large_value_spans_datagrams_of_1400_bytes(udp):
    value = bytes(range(256)) * 12  # 3,072 bytes
    assert udp.exchange(1, b"set u3 0 0 3072\r\n" + value + b"\r\n") == [
        ((1, 0, 1, 0), b"STORED\r\n")]
    replies = udp.exchange(2, b"get u3 u3-miss\r\n")
    unit = b"VALUE u3 0 3072\r\n" + value + b"\r\n"
    assert [header for header, _ in replies] == [
        (2, 0, 3, 0), (2, 1, 3, 0), (2, 2, 3, 0), (2, 0, 1, 0)]
    assert [len(body) for _, body in replies[:2]] == [1392, 1392]
    assert b"".join(body for _, body in replies[:3]) == unit
    assert replies[3][1] == b"END\r\n"


def test_noreply_is_silent_and_commands_share_a_datagram(udp):
    assert udp.exchange(1, b"set u4 0 0 1 noreply\r\nz\r\nget u4\r\n") == [
        ((1, 0, 1, 0), b"VALUE u4 0 1\r\nz\r\nEND\r\n")]
    assert udp.exchange(2, b"delete u4\r\nget u4\r\n") == [
        ((2, 0, 1, 0), b"DELETED\r\n"), ((2, 0, 1, 0), b"END\r\n")]


def test_errors_are_framed(udp):
    assert udp.exchange(7, b"bogus\r\n") == [((7, 0, 1, 0), b"ERROR\r\n")]


def test_requests_spanning_datagrams_and_bare_headers_are_dropped(udp):
    assert udp.exchange(1, b"get u5\r\n", count=2) == []
    udp.sock.sendto(HEADER.pack(9, 0, 1, 0), udp.addr)
    assert udp.exchange(2, b"version\r\n")[0][0] == (2, 0, 1, 0)


def test_udp_is_off_by_default(make_server):
    # memcached 1.6 and spinel both start with UDP off: nothing answers on the TCP port's
    # number over UDP.
    server = make_server()
    client = Udp(server.mc_port)
    assert client.exchange(1, b"version\r\n") == []
    client.sock.close()


def binary_request(opcode, key=b"", extras=b"", value=b"", opaque=0):
    body = extras + key + value
    return struct.pack(">BBHBBHIIQ", 0x80, opcode, len(key), len(extras), 0, 0, len(body),
                       opaque, 0) + body


def test_binary_requests_are_one_unit_each(udp):
    set_reply = udp.exchange(1, binary_request(0x01, b"ub", struct.pack(">II", 5, 0), b"v", 7))
    assert len(set_reply) == 1 and set_reply[0][0] == (1, 0, 1, 0)
    assert set_reply[0][1][:8] == b"\x81\x01\x00\x00\x00\x00\x00\x00"
    # get (hit), getq (miss: silent), noop: two units.
    replies = udp.exchange(2, binary_request(0x00, b"ub", opaque=8)
                           + binary_request(0x09, b"ub-miss", opaque=9)
                           + binary_request(0x0a, opaque=10))
    assert [header for header, _ in replies] == [(2, 0, 1, 0), (2, 0, 1, 0)]
    get, noop = replies[0][1], replies[1][1]
    assert get[:2] == b"\x81\x00" and get[12:16] == struct.pack(">I", 8)
    assert get[24:] == struct.pack(">I", 5) + b"v"
    assert noop[:2] == b"\x81\x0a" and noop[12:16] == struct.pack(">I", 10)
