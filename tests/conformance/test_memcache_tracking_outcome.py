"""memcached writes invalidate Redis client-side caches from what they did (Spinel only:
one store behind both ports). A RESP3 client tracks a key (CLIENT TRACKING on, then GET);
memcached text, meta, binary and UDP requests on it that change the item (stored, deleted,
incremented or created by it, retimed by touch/gat/mg T, marked stale or emptied by md,
dropped by a set refused as too large) send it one invalidation push; those that do not
(a refused add, a cas mismatch, a miss, a non-numeric incr, a read, a write the user's ACL
rules refuse) send nothing, as Redis sends one only from signalModifiedKey. flush_all sends
the null invalidation, as FLUSHALL does.
"""

import base64
import struct

import pytest

from conftest import free_port
from test_udp import Udp
from wire import Conn, resp_encode

pytestmark = [pytest.mark.memcache, pytest.mark.spinel_only]

QUIET_S = 0.3


def invalidate(key):
    """The RESP3 invalidation push of `key` (None: a flush)."""
    if key is None:
        return b">2\r\n$10\r\ninvalidate\r\n_\r\n"
    key = key.encode() if isinstance(key, str) else key
    return b">2\r\n$10\r\ninvalidate\r\n*1\r\n$%d\r\n%s\r\n" % (len(key), key)


def tracking_reader(resp_port, password=None):
    reader = Conn(resp_port)
    if password:
        reader.rt(resp_encode("AUTH", password), b"+OK\r\n")
    reader.send(resp_encode("HELLO", "3"))
    reader.read_until(b"modules\r\n*0\r\n")
    reader.rt(resp_encode("CLIENT", "TRACKING", "on"), b"+OK\r\n")
    return reader


def track(reader, *keys):
    """GET each key, so that the reader tracks it (its value, if any, is read and dropped)."""
    for key in keys:
        reader.send(resp_encode("GET", key))
        line = reader.read_line()
        if line.startswith(b"$"):
            reader.read_exact(int(line[1:-2]) + 2)
    reader.assert_quiet()


def unchanged(reader, mc, steps):
    for request, reply in steps:
        mc.rt(request, reply)
    reader.assert_quiet(QUIET_S)


def changed(reader, mc, request, reply, key):
    mc.rt(request, reply)
    reader.rt(b"", invalidate(key))


def gets_cas(mc, key):
    mc.send(b"gets %s\r\n" % key)
    line = mc.read_line()
    cas = int(line.split()[4])
    mc.read_line()
    assert mc.read_line() == b"END\r\n"
    return cas


@pytest.fixture
def pair(resp_port, mc_port, key):
    reader, mc = tracking_reader(resp_port), Conn(mc_port)
    yield reader, mc, key.encode()
    reader.close()
    mc.close()


# ------------------------------------------------------------------------------------------
# Text


def test_text_writes_that_did_not_take_send_nothing(pair):
    reader, mc, k = pair
    mc.rt(b"set %s 0 0 1\r\nv\r\n" % k, b"STORED\r\n")
    track(reader, k)
    cas = gets_cas(mc, k)
    non_numeric = b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
    unchanged(reader, mc, [
        (b"add %s 0 0 1\r\nw\r\n" % k, b"NOT_STORED\r\n"),
        (b"add %s 0 0 1 noreply\r\nw\r\n" % k, b""),
        (b"cas %s 0 0 1 %d\r\nw\r\n" % (k, cas + 1), b"EXISTS\r\n"),
        (b"incr %s 1\r\n" % k, non_numeric),
        (b"decr %s 1\r\n" % k, non_numeric),
        (b"get %s\r\n" % k, b"VALUE %s 0 1\r\nv\r\nEND\r\n" % k),
    ])
    changed(reader, mc, b"cas %s 0 0 1 %d\r\nw\r\n" % (k, cas), b"STORED\r\n", k)


def test_text_writes_of_a_missing_key_send_nothing(pair):
    reader, mc, k = pair
    track(reader, k)
    unchanged(reader, mc, [
        (b"replace %s 0 0 1\r\nw\r\n" % k, b"NOT_STORED\r\n"),
        (b"append %s 0 0 1\r\nw\r\n" % k, b"NOT_STORED\r\n"),
        (b"prepend %s 0 0 1\r\nw\r\n" % k, b"NOT_STORED\r\n"),
        (b"cas %s 0 0 1 1\r\nw\r\n" % k, b"NOT_FOUND\r\n"),
        (b"delete %s\r\n" % k, b"NOT_FOUND\r\n"),
        (b"incr %s 1\r\n" % k, b"NOT_FOUND\r\n"),
        (b"decr %s 1\r\n" % k, b"NOT_FOUND\r\n"),
        (b"touch %s 10\r\n" % k, b"NOT_FOUND\r\n"),
        (b"gat 10 %s\r\n" % k, b"END\r\n"),
        (b"gats 10 %s\r\n" % k, b"END\r\n"),
    ])
    changed(reader, mc, b"add %s 0 0 1\r\nv\r\n" % k, b"STORED\r\n", k)


@pytest.mark.parametrize("request_, reply", [
    (b"set @ 0 0 1\r\nw\r\n", b"STORED\r\n"),
    (b"set @ 0 0 1 noreply\r\nw\r\n", b""),
    (b"replace @ 0 0 1\r\nw\r\n", b"STORED\r\n"),
    (b"append @ 0 0 1\r\nw\r\n", b"STORED\r\n"),
    (b"prepend @ 0 0 1\r\nw\r\n", b"STORED\r\n"),
    (b"delete @\r\n", b"DELETED\r\n"),
    (b"incr @ 2\r\n", b"3\r\n"),
    (b"decr @ 1\r\n", b"0\r\n"),
    (b"touch @ 100\r\n", b"TOUCHED\r\n"),
    (b"gat 100 @\r\n", b"VALUE @ 0 1\r\n1\r\nEND\r\n"),
    (b"gats 0 @\r\n", None),
])
def test_text_writes_that_change_the_item_send_one_invalidation(pair, request_, reply):
    reader, mc, k = pair
    mc.rt(b"set %s 0 0 1\r\n1\r\n" % k, b"STORED\r\n")
    track(reader, k)
    if reply is None:  # gats: the reply carries the CAS unique
        reply = b"VALUE @ 0 1 %d\r\n1\r\nEND\r\n" % gets_cas(mc, k)
    changed(reader, mc, request_.replace(b"@", k), reply.replace(b"@", k), k)
    # Forgotten once invalidated: another change sends nothing.
    mc.rt(b"set %s 0 0 1\r\nx\r\n" % k, b"STORED\r\n")
    reader.assert_quiet(QUIET_S)


def test_a_gat_invalidates_the_keys_it_touched_only(pair):
    reader, mc, k = pair
    other, missing = k + b"-2", k + b"-missing"
    mc.rt(b"set %s 0 0 1\r\na\r\nset %s 0 0 1\r\nb\r\n" % (k, other), b"STORED\r\nSTORED\r\n")
    track(reader, k, other, missing)
    mc.rt(b"gat 100 %s %s %s\r\n" % (k, missing, other),
          b"VALUE %s 0 1\r\na\r\nVALUE %s 0 1\r\nb\r\nEND\r\n" % (k, other))
    reader.rt(b"", invalidate(k) + invalidate(other))


def test_flush_all_sends_the_null_invalidation(pair):
    reader, mc, k = pair
    track(reader, k)
    changed(reader, mc, b"flush_all\r\n", b"OK\r\n", None)


def test_a_set_refused_as_too_large_invalidates_only_when_it_dropped_the_item(pair):
    reader, mc, k = pair
    big = b"x" * (1024 * 1024 + 1)
    too_large = b"SERVER_ERROR object too large for cache\r\n"
    track(reader, k)
    unchanged(reader, mc, [(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(big), big), too_large)])
    mc.rt(b"set %s 0 0 1\r\nv\r\n" % k, b"STORED\r\n")
    reader.rt(b"", invalidate(k))
    track(reader, k)
    changed(reader, mc, b"set %s 0 0 %d\r\n%s\r\n" % (k, len(big), big), too_large, k)


# ------------------------------------------------------------------------------------------
# Meta


def test_meta_writes_that_did_not_take_send_nothing(pair):
    reader, mc, k = pair
    mc.rt(b"set %s 0 0 1\r\nv\r\n" % k, b"STORED\r\n")
    track(reader, k, k + b"-missing")
    cas = gets_cas(mc, k)
    missing = k + b"-missing"
    unchanged(reader, mc, [
        (b"ms %s 1 ME\r\nw\r\n" % k, b"NS\r\n"),
        (b"ms %s 1 C%d\r\nw\r\n" % (k, cas + 1), b"EX\r\n"),
        (b"md %s C%d\r\n" % (k, cas + 1), b"EX\r\n"),
        (b"ma %s\r\n" % k, b"CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"),
        (b"mg %s v\r\n" % k, b"VA 1\r\nv\r\n"),
        (b"ms %s 1 MR\r\nw\r\n" % missing, b"NS\r\n"),
        (b"md %s\r\n" % missing, b"NF\r\n"),
        (b"ma %s\r\n" % missing, b"NF\r\n"),
        (b"mg %s T30\r\n" % missing, b"EN\r\n"),
    ])
    changed(reader, mc, b"ms %s 1\r\nw\r\n" % k, b"HD\r\n", k)


@pytest.mark.parametrize("request_, reply, present", [
    (b"ms @ 1\r\nw\r\n", b"HD\r\n", True),
    (b"ms @ 1 q\r\nw\r\nmn\r\n", b"MN\r\n", True),
    (b"ms @ 1 MA\r\nw\r\n", b"HD\r\n", True),
    (b"md @\r\n", b"HD\r\n", True),
    (b"md @ I\r\n", b"HD\r\n", True),
    (b"md @ x\r\n", b"HD\r\n", True),
    (b"ma @\r\n", b"HD\r\n", True),
    (b"mg @ T30\r\n", b"HD\r\n", True),
    (b"ma @ N0 J5 v\r\n", b"VA 1\r\n5\r\n", False),
    (b"mg @ N30\r\n", b"HD W\r\n", False),
    (b"ms @ 1 MA N30\r\nw\r\n", b"HD\r\n", False),
])
def test_meta_writes_that_change_the_item_send_one_invalidation(pair, request_, reply, present):
    reader, mc, k = pair
    if present:
        mc.rt(b"set %s 0 0 1\r\n1\r\n" % k, b"STORED\r\n")
    track(reader, k)
    changed(reader, mc, request_.replace(b"@", k), reply, k)


def test_a_base64_meta_key_invalidates_the_key_it_names(pair):
    reader, mc, k = pair
    track(reader, k)
    encoded = base64.b64encode(k)
    changed(reader, mc, b"ms %s 1 b\r\nv\r\n" % encoded, b"HD\r\n", k)


# ------------------------------------------------------------------------------------------
# Binary

SET, ADD, REPLACE, DELETE, INCR, FLUSH, NOOP, APPEND = 0x01, 0x02, 0x03, 0x04, 0x05, 0x08, \
    0x0a, 0x0e
SETQ, TOUCH, GAT = 0x11, 0x1c, 0x1d
NOT_FOUND, EXISTS, NOT_STORED, NON_NUMERIC = 0x01, 0x02, 0x05, 0x06
NO_VIVIFY = 0xffffffff


def bin_req(op, key=b"", extras=b"", value=b"", cas=0):
    body = len(extras) + len(key) + len(value)
    return struct.pack(">BBHBBHIIQ", 0x80, op, len(key), len(extras), 0, 0, body, 7, cas) \
        + extras + key + value


def bin_status(mc):
    head = mc.read_exact(24)
    mc.read_exact(struct.unpack(">I", head[8:12])[0])
    return struct.unpack(">H", head[6:8])[0]


def store_extras(exptime=0):
    return struct.pack(">II", 0, exptime)


def arith_extras(delta=1, initial=0, exptime=0):
    return struct.pack(">QQI", delta, initial, exptime)


def bin_exchange(binary, steps):
    for request, status in steps:
        binary.send(request)
        assert bin_status(binary) == status, request[:40]


@pytest.fixture
def binary(mc_port):
    """A binary connection (a connection's first byte sets its dialect for good)."""
    with Conn(mc_port) as conn:
        yield conn


def test_binary_writes_that_did_not_take_send_nothing(pair, binary):
    reader, mc, k = pair
    missing = k + b"-missing"
    mc.rt(b"set %s 0 0 1\r\nv\r\n" % k, b"STORED\r\n")
    cas = gets_cas(mc, k)
    track(reader, k, missing)
    bin_exchange(binary, [
        (bin_req(ADD, k, store_extras(), b"w"), EXISTS),
        (bin_req(SET, k, store_extras(), b"w", cas=cas + 1), EXISTS),
        (bin_req(DELETE, k, cas=cas + 1), EXISTS),
        (bin_req(INCR, k, arith_extras()), NON_NUMERIC),
        (bin_req(REPLACE, missing, store_extras(), b"w"), NOT_FOUND),
        (bin_req(APPEND, missing, b"", b"w"), NOT_STORED),
        (bin_req(DELETE, missing), NOT_FOUND),
        (bin_req(INCR, missing, arith_extras(exptime=NO_VIVIFY)), NOT_FOUND),
        (bin_req(TOUCH, missing, struct.pack(">I", 10)), NOT_FOUND),
        (bin_req(GAT, missing, struct.pack(">I", 10)), NOT_FOUND),
    ])
    reader.assert_quiet(QUIET_S)
    bin_exchange(binary, [(bin_req(SET, k, store_extras(), b"w", cas=cas), 0)])
    reader.rt(b"", invalidate(k))


@pytest.mark.parametrize("name, request_of, present", [
    ("set", lambda k: bin_req(SET, k, store_extras(), b"w"), True),
    ("append", lambda k: bin_req(APPEND, k, b"", b"w"), True),
    ("delete", lambda k: bin_req(DELETE, k), True),
    ("incr", lambda k: bin_req(INCR, k, arith_extras()), True),
    ("touch", lambda k: bin_req(TOUCH, k, struct.pack(">I", 100)), True),
    ("gat", lambda k: bin_req(GAT, k, struct.pack(">I", 100)), True),
    ("incr creating", lambda k: bin_req(INCR, k, arith_extras(initial=5)), False),
    ("add", lambda k: bin_req(ADD, k, store_extras(), b"w"), False),
])
def test_binary_writes_that_change_the_item_send_one_invalidation(pair, binary, name,
                                                                  request_of, present):
    reader, mc, k = pair
    if present:
        mc.rt(b"set %s 0 0 1\r\n1\r\n" % k, b"STORED\r\n")
    track(reader, k)
    bin_exchange(binary, [(request_of(k), 0)])
    reader.rt(b"", invalidate(k))


def test_binary_quiet_set_and_flush(pair, binary):
    reader, _, k = pair
    track(reader, k)
    binary.send(bin_req(SETQ, k, store_extras(), b"w") + bin_req(NOOP))
    assert bin_status(binary) == 0  # the noop's: a quiet success says nothing
    binary.assert_quiet()
    reader.rt(b"", invalidate(k))
    track(reader, k)
    bin_exchange(binary, [(bin_req(FLUSH, extras=struct.pack(">I", 0)), 0)])
    reader.rt(b"", invalidate(None))


# ------------------------------------------------------------------------------------------
# ACL and UDP

PASSWORD = "pw"


def test_a_write_the_users_rules_refuse_sends_nothing(make_server, key):
    server = make_server(extra=["--requirepass", PASSWORD])
    k = key.encode()
    with tracking_reader(server.resp_port, PASSWORD) as reader:
        reader.rt(resp_encode("ACL", "SETUSER", "ro", "on", ">ropw", "~*", "+get"), b"+OK\r\n")
        track(reader, k)
        with Conn(server.mc_port) as mc:
            mc.rt(b"set auth 0 0 7\r\nro ropw\r\n", b"STORED\r\n")
            noperm = b"CLIENT_ERROR NOPERM this user has no permissions to run the '%s' command\r\n"
            unchanged(reader, mc, [
                (b"set %s 0 0 1\r\nv\r\n" % k, noperm % b"set"),
                (b"delete %s\r\n" % k, noperm % b"del"),
                (b"flush_all\r\n", noperm % b"flushall"),
            ])
        with Conn(server.mc_port) as mc:
            mc.rt(b"set auth 0 0 2\r\npw\r\n", b"STORED\r\n")
            changed(reader, mc, b"set %s 0 0 1\r\nv\r\n" % k, b"STORED\r\n", k)


def test_udp_writes_invalidate_from_what_they_did(make_server, key):
    udp_port = free_port()
    server = make_server(extra=["-U", str(udp_port)])
    k = key.encode()
    udp = Udp(udp_port)
    try:
        with tracking_reader(server.resp_port) as reader:
            assert udp.exchange(1, b"set %s 0 0 1\r\nv\r\n" % k) == [((1, 0, 1, 0), b"STORED\r\n")]
            track(reader, k)
            assert udp.exchange(2, b"add %s 0 0 1\r\nw\r\n" % k) == [
                ((2, 0, 1, 0), b"NOT_STORED\r\n")]
            reader.assert_quiet(QUIET_S)
            assert udp.exchange(3, b"delete %s\r\n" % k) == [((3, 0, 1, 0), b"DELETED\r\n")]
            reader.rt(b"", invalidate(k))
    finally:
        udp.sock.close()
