"""memcached's binary protocol, as exact packets on the wire.

Real memcached 1.6.18 is the reference: every status, message and length here is what it sends.
CAS values differ between servers, so a reply's CAS is checked for being nonzero (or zero) and
reused, and everything else is compared byte for byte. Packets with a body memcached mishandles
(an unknown opcode with a body: it skips the body after reading the key, losing frame) are not
sent.
"""

import struct
import time

import pytest

from wire import Conn

pytestmark = pytest.mark.memcache

GET, SET, ADD, REPLACE, DELETE, INCR, DECR, QUIT, FLUSH, GETQ, NOOP, VERSION = range(12)
GETK, GETKQ, APPEND, PREPEND, STAT, SETQ, ADDQ, REPLACEQ, DELETEQ, INCRQ, DECRQ = range(12, 23)
QUITQ, FLUSHQ, APPENDQ, PREPENDQ = range(0x17, 0x1B)
VERBOSITY, TOUCH, GAT, GATQ = 0x1B, 0x1C, 0x1D, 0x1E
SASL_LIST, SASL_AUTH, SASL_STEP, GATK, GATKQ = 0x20, 0x21, 0x22, 0x23, 0x24

OK, ENOENT, EEXISTS, E2BIG, EINVAL, NOT_STORED, DELTA_BADVAL = 0, 1, 2, 3, 4, 5, 6
AUTH_ERROR, UNKNOWN, ENOMEM = 0x20, 0x81, 0x82
MESSAGE = {
    ENOENT: b"Not found",
    EEXISTS: b"Data exists for key.",
    E2BIG: b"Too large.",
    EINVAL: b"Invalid arguments",
    NOT_STORED: b"Not stored.",
    DELTA_BADVAL: b"Non-numeric server-side value for incr or decr",
    AUTH_ERROR: b"Auth failure.",
    UNKNOWN: b"Unknown command",
    ENOMEM: b"Out of memory",
}
OPAQUE = 0xDEADBEEF
ANY = object()  # a CAS that must be nonzero


def req(op, key=b"", extras=b"", value=b"", cas=0, opaque=OPAQUE):
    body = len(extras) + len(key) + len(value)
    head = struct.pack(">BBHBBHIIQ", 0x80, op, len(key), len(extras), 0, 0, body, opaque, cas)
    return head + extras + key + value


def resp(op, status=OK, key=b"", extras=b"", value=b"", cas=0, opaque=OPAQUE):
    body = len(extras) + len(key) + len(value)
    head = struct.pack(">BBHBBHIIQ", 0x81, op, len(key), len(extras), 0, status, body, opaque, cas)
    return head + extras + key + value


def error(op, status, opaque=OPAQUE):
    return resp(op, status, value=MESSAGE[status], opaque=opaque)


def store_extras(flags=0, exptime=0):
    return struct.pack(">II", flags, exptime)


def arith_extras(delta, initial=0, exptime=0):
    return struct.pack(">QQI", delta, initial, exptime)


def read_packet(conn):
    head = conn.read_exact(24)
    body = struct.unpack(">I", head[8:12])[0]
    return head + conn.read_exact(body)


def cas_of(packet):
    return struct.unpack(">Q", packet[16:24])[0]


def expect(conn, op, status=OK, key=b"", extras=b"", value=b"", cas=0, opaque=OPAQUE):
    """Read one packet and compare it with the expected bytes; returns its CAS."""
    got = read_packet(conn)
    if cas is ANY:
        assert cas_of(got) != 0, got
        cas = cas_of(got)
    assert got == resp(op, status, key, extras, value, cas, opaque), got
    return cas


def expect_error(conn, op, status, opaque=OPAQUE):
    got = read_packet(conn)
    assert got == error(op, status, opaque), got


@pytest.fixture
def c(mc_port):
    with Conn(mc_port) as conn:
        yield conn


@pytest.fixture
def k(key):
    return key.encode()


def set_item(conn, k, value=b"v", flags=0, exptime=0):
    conn.send(req(SET, k, store_extras(flags, exptime), value))
    return expect(conn, SET, cas=ANY)


# ------------------------------------------------------------------------------------------
# Get family


def test_get_miss(c, k):
    c.send(req(GET, k))
    expect_error(c, GET, ENOENT)
    c.send(req(GETK, k))
    expect(c, GETK, ENOENT, key=k)
    c.assert_quiet()


def test_quiet_get_misses_are_silent(c, k):
    c.send(req(GETQ, k) + req(GETKQ, k) + req(GATQ, k, struct.pack(">I", 0))
           + req(GATKQ, k, struct.pack(">I", 0)) + req(NOOP))
    expect(c, NOOP)
    c.assert_quiet()


def test_set_then_get_family(c, k):
    cas = set_item(c, k, b"hello", flags=0x01020304)
    flags = struct.pack(">I", 0x01020304)
    c.send(req(GET, k) + req(GETK, k) + req(GETQ, k) + req(GETKQ, k))
    expect(c, GET, extras=flags, value=b"hello", cas=cas)
    expect(c, GETK, key=k, extras=flags, value=b"hello", cas=cas)
    expect(c, GETQ, extras=flags, value=b"hello", cas=cas)
    expect(c, GETKQ, key=k, extras=flags, value=b"hello", cas=cas)
    c.assert_quiet()


def test_multiget_of_quiet_gets_ends_in_noop(c, k):
    keys = [k + b"_%d" % i for i in range(100)]
    for i, one in enumerate(keys[::2]):
        c.send(req(SETQ, one, store_extras(i), b"%d" % i))
    c.send(b"".join(req(GETKQ, one, opaque=i) for i, one in enumerate(keys)) + req(NOOP, opaque=7))
    for i, one in enumerate(keys[::2]):
        got = read_packet(c)
        assert got[24 + 4:] == one + b"%d" % i and got[1] == GETKQ, got
        assert struct.unpack(">I", got[12:16])[0] == 2 * i
    expect(c, NOOP, opaque=7)
    c.assert_quiet()


# ------------------------------------------------------------------------------------------
# Store family


def test_add_replace_statuses(c, k):
    c.send(req(REPLACE, k, store_extras(), b"v"))
    expect_error(c, REPLACE, ENOENT)
    c.send(req(ADD, k, store_extras(), b"v"))
    expect(c, ADD, cas=ANY)
    c.send(req(ADD, k, store_extras(), b"v"))
    expect_error(c, ADD, EEXISTS)
    c.send(req(REPLACE, k, store_extras(), b"w"))
    expect(c, REPLACE, cas=ANY)


def test_cas(c, k):
    c.send(req(SET, k, store_extras(), b"v", cas=12345))
    expect_error(c, SET, ENOENT)
    cas = set_item(c, k)
    c.send(req(SET, k, store_extras(), b"w", cas=cas + 1))
    expect_error(c, SET, EEXISTS)
    c.send(req(SET, k, store_extras(), b"w", cas=cas))
    new = expect(c, SET, cas=ANY)
    assert new != cas


def test_append_prepend(c, k):
    c.send(req(APPEND, k, value=b"x"))
    expect_error(c, APPEND, NOT_STORED)
    c.send(req(PREPEND, k, value=b"x"))
    expect_error(c, PREPEND, NOT_STORED)
    cas = set_item(c, k, b"m", flags=9)
    c.send(req(APPEND, k, value=b"z", cas=cas + 1))
    expect_error(c, APPEND, EEXISTS)
    c.send(req(APPEND, k, value=b"z") + req(PREPEND, k, value=b"a"))
    expect(c, APPEND, cas=ANY)
    cas = expect(c, PREPEND, cas=ANY)
    c.send(req(GET, k))
    expect(c, GET, extras=struct.pack(">I", 9), value=b"amz", cas=cas)


def test_quiet_storage_is_silent_but_errors_are_not(c, k):
    c.send(req(SETQ, k, store_extras(), b"1", opaque=1)
           + req(ADDQ, k, store_extras(), b"1", opaque=2)
           + req(REPLACEQ, k + b"x", store_extras(), b"1", opaque=3)
           + req(APPENDQ, k, value=b"2", opaque=4)
           + req(PREPENDQ, k + b"x", value=b"2", opaque=5)
           + req(INCRQ, k, arith_extras(1), opaque=6)
           + req(DECRQ, k, arith_extras(2), opaque=7)
           + req(DELETEQ, k + b"x", opaque=8)
           + req(DELETEQ, k, opaque=9)
           + req(NOOP, opaque=10))
    expect_error(c, ADDQ, EEXISTS, opaque=2)
    expect_error(c, REPLACEQ, ENOENT, opaque=3)
    expect_error(c, PREPENDQ, NOT_STORED, opaque=5)
    expect_error(c, DELETEQ, ENOENT, opaque=8)
    expect(c, NOOP, opaque=10)
    c.assert_quiet()
    c.send(req(GET, k))
    expect_error(c, GET, ENOENT)


def test_too_large_keeps_the_connection(c, k):
    big = b"x" * (1024 * 1024 + 10)
    c.send(req(SET, k, store_extras(), big) + req(SETQ, k, store_extras(), big) + req(NOOP))
    expect_error(c, SET, E2BIG)
    expect_error(c, SETQ, E2BIG)
    expect(c, NOOP)


def test_set_refused_for_its_shape_keeps_the_old_item(mc_port, k):
    # Only a Set refused as too large drops the old item: one without its extras is refused
    # (Invalid arguments, then a hang-up) and leaves it alone.
    with Conn(mc_port) as c:
        set_item(c, k, b"old")
        c.send(req(SET, k, b"", b"x"))
        expect_error(c, SET, EINVAL)
        assert c.read_all_until_close() == b""
    with Conn(mc_port) as c:
        c.send(req(GET, k))
        expect(c, GET, extras=struct.pack(">I", 0), value=b"old", cas=ANY)


@pytest.mark.parametrize("op", [SET, SETQ, ADD, REPLACE, APPEND])
def test_set_refused_as_too_large_drops_the_old_item(c, k, op):
    # memcached unlinks the old item when a Set or SetQ is too large, so stale data does not
    # outlive a failed overwrite; the other store commands keep it. The packet goes in two
    # writes, the second after its key, so the refusal waits for the key.
    set_item(c, k, b"old")
    extras = b"" if op == APPEND else store_extras()
    packet = req(op, k, extras, b"x" * (1024 * 1024 + 1))
    c.send(packet[: 24 + len(extras) + len(k) - 1])
    time.sleep(0.05)
    c.send(packet[24 + len(extras) + len(k) - 1 :])
    expect_error(c, op, E2BIG)
    c.send(req(GET, k))
    if op in (SET, SETQ):
        expect_error(c, GET, ENOENT)
    else:
        expect(c, GET, extras=struct.pack(">I", 0), value=b"old", cas=ANY)


# ------------------------------------------------------------------------------------------
# Delete, incr/decr, touch and gat


def test_delete(c, k):
    c.send(req(DELETE, k))
    expect_error(c, DELETE, ENOENT)
    cas = set_item(c, k)
    c.send(req(DELETE, k, cas=cas + 1))
    expect_error(c, DELETE, EEXISTS)
    c.send(req(DELETE, k, cas=cas))
    expect(c, DELETE)
    c.send(req(GET, k))
    expect_error(c, GET, ENOENT)


def test_incr_decr(c, k):
    c.send(req(INCR, k, arith_extras(1, 5, 0xFFFFFFFF)))
    expect_error(c, INCR, ENOENT)
    c.send(req(INCR, k, arith_extras(1, 5)))
    expect(c, INCR, value=struct.pack(">Q", 5), cas=ANY)
    c.send(req(INCR, k, arith_extras(3, 5, 0xFFFFFFFF)))
    cas = expect(c, INCR, value=struct.pack(">Q", 8), cas=ANY)
    c.send(req(GET, k))
    expect(c, GET, extras=b"\0\0\0\0", value=b"8", cas=cas)
    c.send(req(DECR, k, arith_extras(100)))
    expect(c, DECR, value=struct.pack(">Q", 0), cas=ANY)
    set_item(c, k, b"18446744073709551615")
    c.send(req(INCR, k, arith_extras(2)))
    expect(c, INCR, value=struct.pack(">Q", 1), cas=ANY)
    set_item(c, k, b"x")
    c.send(req(INCR, k, arith_extras(1)) + req(DECRQ, k, arith_extras(1)))
    expect_error(c, INCR, DELTA_BADVAL)
    expect_error(c, DECRQ, DELTA_BADVAL)


def test_touch_and_gat(c, k):
    ten = struct.pack(">I", 10)
    c.send(req(TOUCH, k, ten))
    expect_error(c, TOUCH, ENOENT)
    c.send(req(GAT, k, ten))
    expect_error(c, GAT, ENOENT)
    c.send(req(GATK, k, ten))
    expect(c, GATK, ENOENT, key=k)
    cas = set_item(c, k, b"v", flags=3)
    flags = struct.pack(">I", 3)
    c.send(req(TOUCH, k, ten) + req(GAT, k, ten) + req(GATK, k, ten) + req(GATQ, k, ten)
           + req(GATKQ, k, ten))
    expect(c, TOUCH, extras=flags, cas=cas)
    expect(c, GAT, extras=flags, value=b"v", cas=cas)
    expect(c, GATK, key=k, extras=flags, value=b"v", cas=cas)
    expect(c, GATQ, extras=flags, value=b"v", cas=cas)
    expect(c, GATKQ, key=k, extras=flags, value=b"v", cas=cas)
    # The exptime is unsigned: 0xffffffff is a Unix time in 2106, not a negative one.
    c.send(req(GAT, k, struct.pack(">I", 0xFFFFFFFF)) + req(GET, k))
    expect(c, GAT, extras=flags, value=b"v", cas=cas)
    expect(c, GET, extras=flags, value=b"v", cas=cas)


# ------------------------------------------------------------------------------------------
# Noop, version, quit, flush, stat


def test_noop_and_version(c):
    c.send(req(NOOP) + req(VERSION))
    expect(c, NOOP)
    got = read_packet(c)
    assert got[:8] == resp(VERSION)[:8] and got[24:].startswith(b"1.6."), got


def test_quit(c):
    c.send(req(QUIT) + req(NOOP))
    assert c.read_all_until_close() == resp(QUIT)


def test_quitq(c):
    c.send(req(QUITQ) + req(NOOP))
    assert c.read_all_until_close() == b""


def test_flush(make_server):
    server = make_server()
    with Conn(server.mc_port) as c:
        set_item(c, b"a")
        c.send(req(FLUSH) + req(GET, b"a"))
        expect(c, FLUSH)
        expect_error(c, GET, ENOENT)
        set_item(c, b"a")
        c.send(req(FLUSHQ, extras=struct.pack(">I", 0)) + req(GET, b"a"))
        expect_error(c, GET, ENOENT)
        set_item(c, b"a")
        c.send(req(FLUSH, extras=struct.pack(">I", 100)) + req(GET, b"a"))
        expect(c, FLUSH)
        got = read_packet(c)
        assert got[24 + 4:] == b"v", got  # still there until the delay has passed


def test_flush_disabled(make_server):
    server = make_server(extra=["-F"])
    with Conn(server.mc_port) as c:
        c.send(req(FLUSH) + req(FLUSHQ) + req(NOOP))
        expect_error(c, FLUSH, AUTH_ERROR)
        expect_error(c, FLUSHQ, AUTH_ERROR)
        expect(c, NOOP)


def read_stats(conn):
    stats = {}
    while True:
        got = read_packet(conn)
        assert got[:2] == bytes([0x81, STAT]) and got[6:8] == b"\0\0", got
        assert got[12:24] == struct.pack(">IQ", OPAQUE, 0), got
        key_len = struct.unpack(">H", got[2:4])[0]
        if len(got) == 24:
            return stats
        stats[got[24:24 + key_len]] = got[24 + key_len:]


def test_stat_groups(c):
    c.send(req(STAT))
    general = read_stats(c)
    assert {b"pid", b"uptime", b"version", b"cmd_get", b"get_hits", b"curr_items"} <= set(general)
    c.send(req(STAT, b"settings"))
    assert {b"maxbytes", b"maxconns", b"item_size_max"} <= set(read_stats(c))
    c.send(req(STAT, b"sizes"))
    assert read_stats(c) == {b"sizes_status": b"disabled"}
    for group in (b"items", b"slabs"):
        c.send(req(STAT, group))
        read_stats(c)
    c.send(req(STAT, b"bogus"))
    expect_error(c, STAT, ENOENT)
    c.assert_quiet()


def test_stat_reset(make_server):
    server = make_server()
    with Conn(server.mc_port) as c:
        c.send(req(GET, b"nothing"))
        expect_error(c, GET, ENOENT)
        c.send(req(STAT, b"reset"))
        assert read_stats(c) == {}
        c.send(req(STAT))
        assert read_stats(c)[b"cmd_get"] == b"0"


# ------------------------------------------------------------------------------------------
# Unknown opcodes and malformed packets


@pytest.mark.parametrize("packet", [
    req(VERBOSITY),
    req(SASL_LIST),
    req(SASL_AUTH, b"PLAIN", value=b"\0user\0pass"),
    req(SASL_STEP, b"PLAIN"),
    req(0x30),
    req(0xFF),
], ids=lambda packet: f"op{packet[1]:#x}")
def test_unknown_command_keeps_the_connection(c, packet):
    c.send(packet + req(NOOP))
    expect_error(c, packet[1], UNKNOWN)
    expect(c, NOOP)


@pytest.mark.parametrize("packet", [req(SASL_LIST, b"x"), req(SASL_AUTH), req(SASL_STEP)],
                         ids=lambda packet: f"op{packet[1]:#x}")
def test_malformed_sasl_closes(c, packet):
    c.send(packet + req(NOOP))
    assert c.read_all_until_close() == error(packet[1], EINVAL)


@pytest.mark.parametrize("packet", [
    req(GET, extras=b"1234", key=b"a"),
    req(GET),
    req(GET, b"a" * 251),
    req(GET, b"a", value=b"x"),
    req(SET, b"k", value=b"v"),
    req(ADD, b"", store_extras(), b"v"),
    req(DELETE, b"k", extras=b"\0\0\0\0"),
    req(INCR, b"k", extras=b"\0\0\0\1"),
    req(APPEND, b"k", extras=b"\0\0\0\1"),
    req(TOUCH, b"k", extras=store_extras()),
    req(FLUSH, extras=store_extras()),
    req(VERSION, b"a"),
    req(NOOP, b"a"),
    req(QUIT, b"a"),
    req(STAT, extras=b"\0\0\0\0"),
], ids=lambda packet: f"op{packet[1]:#x}")
def test_invalid_arguments_close(c, packet):
    c.send(packet + req(NOOP))
    assert c.read_all_until_close() == error(packet[1], EINVAL)


def test_key_longer_than_body_closes(c):
    head = bytearray(req(GET, b"abc"))
    head[8:12] = struct.pack(">I", 2)
    c.send(bytes(head[:26]) + b"x" * 30)
    assert c.read_all_until_close() == error(GET, UNKNOWN)


def test_wrong_magic_after_binary_closes(c):
    c.send(req(NOOP) + bytes([0x81]) + req(NOOP)[1:])
    assert c.read_all_until_close() == resp(NOOP)


# ------------------------------------------------------------------------------------------
# -B


def test_binding_ascii_refuses_binary(make_server):
    server = make_server(extra=["-B", "ascii"])
    with Conn(server.mc_port) as c:
        # Parsed as text: memcached 1.6.18 closes or answers ERROR; never a binary reply.
        c.send(req(NOOP))
        c.sock.settimeout(0.3)
        try:
            got = c.sock.recv(100)
        except TimeoutError:
            got = b""
        assert got in (b"", b"ERROR\r\n"), got
    with Conn(server.mc_port) as c:
        c.rt(b"mn\r\n", b"MN\r\n")


def test_binding_binary_refuses_text(make_server):
    server = make_server(extra=["-B", "binary"])
    with Conn(server.mc_port) as c:
        c.send(b"version\r\n" + b"x" * 24)
        assert c.read_all_until_close() == b""
    with Conn(server.mc_port) as c:
        c.send(req(NOOP))
        expect(c, NOOP)


def test_out_of_memory(make_server):
    """-M: a full store refuses writes with ENOMEM and memcached's storing message."""
    server = make_server(extra=["-M", "-m", "2"])
    with Conn(server.mc_port) as c:
        value = b"v" * 100_000
        c.send(b"".join(req(SETQ, b"k%d" % i, store_extras(), value) for i in range(60))
               + req(NOOP))
        replies = []
        while True:
            got = read_packet(c)
            if got[1] == NOOP:
                break
            replies.append(got)
        assert replies, "the store never filled"
        for got in replies:
            assert got == resp(SETQ, ENOMEM, value=b"Out of memory allocating item"), got


@pytest.mark.spinel_only
def test_quiet_multiget_is_one_pass(make_server):
    """A run of quiet gets is one multiget: it does not yield to other connections after -R
    requests (`conn_yields` stays 0), as a text `get k1 k2 ...` would not."""
    server = make_server()
    with Conn(server.mc_port) as c:
        c.send(req(SETQ, b"hit", store_extras(), b"v"))
        keys = [b"key%d" % i for i in range(200)] + [b"hit"]
        c.send(b"".join(req(GETKQ, one) for one in keys) + req(NOOP))
        got = read_packet(c)
        assert got[24 + 4:] == b"hitv", got
        expect(c, NOOP)
        c.send(req(STAT))
        assert read_stats(c)[b"conn_yields"] == b"0"
