"""Bitmaps (SETBIT GETBIT BITCOUNT BITPOS BITOP BITFIELD BITFIELD_RO) and HyperLogLog
(PFADD PFCOUNT PFMERGE): wire transcripts, byte for byte as redis-server 7.0.15 sends them
(validated with CONFORMANCE_TARGET=redis), RESP3 where the reply differs, and the raw
HyperLogLog strings (Redis's own format) compared exactly.
"""

import pytest

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

OK = b"+OK\r\n"
NOT_INT = b"-ERR value is not an integer or out of range\r\n"
SYNTAX = b"-ERR syntax error\r\n"
BAD_OFFSET = b"-ERR bit offset is not an integer or out of range\r\n"
BAD_BIT = b"-ERR bit is not an integer or out of range\r\n"
WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
NOT_HLL = b"-WRONGTYPE Key is not a valid HyperLogLog string value.\r\n"
CORRUPT = b"-INVALIDOBJ Corrupted HLL object detected\r\n"
BAD_TYPE = (b"-ERR Invalid bitfield type. Use something like i16 u8. "
            b"Note that u64 is not supported but i64 is.\r\n")


def i(n):
    return b":%d\r\n" % n


def bulk(data):
    return b"$%d\r\n%s\r\n" % (len(data), data)


def arr(*items):
    return b"*%d\r\n" % len(items) + b"".join(items)


@pytest.fixture
def c(resp_port):
    with Conn(resp_port) as conn:
        yield conn
        conn.assert_quiet()


def run(c, table):
    """Each (args, expected reply) in order; one read per reply, no wait between them (the
    fixture checks at the end that nothing more arrived)."""
    for args, want in table:
        c.send(resp_encode(*args))
        got = c.read_exact(len(want))
        assert got == want, f"{args!r}"


def test_setbit_getbit(c, key):
    b = key
    run(c, [
        (("SETBIT", b, "7", "1"), i(0)),
        (("SETBIT", b, "7", "1"), i(1)),
        (("SETBIT", b, "7", "0"), i(1)),
        (("SETBIT", b, "17", "1"), i(0)),
        (("GET", b), bulk(b"\x00\x00\x40")),
        (("GETBIT", b, "17"), i(1)),
        (("GETBIT", b, "16"), i(0)),
        (("GETBIT", b, "100000"), i(0)),
        (("GETBIT", key + ":none", "3"), i(0)),
        (("SETBIT", key + ":zero", "9", "0"), i(0)),
        (("GET", key + ":zero"), bulk(b"\x00\x00")),
        (("SETBIT", b, "-1", "1"), BAD_OFFSET),
        (("SETBIT", b, "x", "1"), BAD_OFFSET),
        (("SETBIT", b, "01", "1"), BAD_OFFSET),
        (("SETBIT", b, "4294967296", "1"), BAD_OFFSET),
        (("SETBIT", b, "1", "2"), BAD_BIT),
        (("SETBIT", b, "1", "-1"), BAD_BIT),
        (("SETBIT", b, "1", "x"), BAD_BIT),
        (("SETBIT", b, "x", "x"), BAD_OFFSET),
        (("GETBIT", b, "-1"), BAD_OFFSET),
        (("GETBIT", b, "4294967296"), BAD_OFFSET),
        (("SETBIT", b, "1"), b"-ERR wrong number of arguments for 'setbit' command\r\n"),
        (("GETBIT", b), b"-ERR wrong number of arguments for 'getbit' command\r\n"),
        (("SET", b, "12"), OK),  # a number's text: bits of its ASCII digits
        (("GETBIT", b, "2"), i(1)),
        (("SETBIT", b, "6", "1"), i(0)),
        (("GET", b), bulk(b"32")),
        (("EXPIRE", b, "100"), i(1)),
        (("SETBIT", b, "100", "1"), i(0)),
        (("TTL", b), i(100)),
        (("DEL", b, key + ":zero"), i(2)),
    ])


def test_bitcount(c, key):
    s = key
    run(c, [
        (("SET", s, "foobar"), OK),
        (("BITCOUNT", s), i(26)),
        (("BITCOUNT", s, "0", "0"), i(4)),
        (("BITCOUNT", s, "1", "1"), i(6)),
        (("BITCOUNT", s, "1", "1", "BYTE"), i(6)),
        (("BITCOUNT", s, "5", "30", "BIT"), i(17)),
        (("BITCOUNT", s, "5", "30", "bit"), i(17)),
        (("BITCOUNT", s, "-5", "-1", "BIT"), i(2)),
        (("BITCOUNT", s, "-100", "100"), i(26)),
        (("BITCOUNT", s, "4", "2"), i(0)),
        (("BITCOUNT", s, "-1", "-2", "nonsense"), i(0)),  # answered before the unit is read
        (("BITCOUNT", s, "1", "2", "nonsense"), SYNTAX),
        (("BITCOUNT", s, "1"), SYNTAX),
        (("BITCOUNT", s, "1", "2", "BIT", "x"), SYNTAX),
        (("BITCOUNT", s, "a", "1"), NOT_INT),
        (("BITCOUNT", s, "1", "a"), NOT_INT),
        (("BITCOUNT", key + ":none", "a"), i(0)),  # a missing key answers first
        (("BITCOUNT",), b"-ERR wrong number of arguments for 'bitcount' command\r\n"),
        (("SET", s, ""), OK),
        (("BITCOUNT", s), i(0)),
        (("BITCOUNT", s, "0", "-1", "BIT"), i(0)),
        (("DEL", s), i(1)),
    ])


def test_bitpos(c, key):
    s, ones, none = key, key + ":ones", key + ":none"
    run(c, [
        (("SET", s, b"\x00\x0f\xf0"), OK),
        (("SET", ones, b"\xff\xf0"), OK),
        (("BITPOS", s, "1"), i(12)),
        (("BITPOS", s, "0"), i(0)),
        (("BITPOS", s, "1", "2"), i(16)),
        (("BITPOS", s, "1", "-1", "-1"), i(16)),
        (("BITPOS", s, "1", "13", "15", "BIT"), i(13)),
        (("BITPOS", s, "0", "12", "19", "BIT"), i(-1)),
        (("BITPOS", s, "0", "12", "20", "bit"), i(20)),
        (("BITPOS", s, "1", "100", "200"), i(-1)),
        (("BITPOS", s, "1", "2", "1"), i(-1)),
        (("BITPOS", ones, "0"), i(12)),
        (("BITPOS", ones, "0", "0", "0"), i(-1)),
        (("BITPOS", ones, "0", "0"), i(12)),
        (("SET", ones, b"\xff\xff"), OK),
        (("BITPOS", ones, "0"), i(16)),  # no end given: the bit after the string
        (("BITPOS", ones, "0", "0", "-1"), i(-1)),
        (("BITPOS", ones, "0", "1"), i(16)),
        (("BITPOS", ones, "0", "3", "12", "BIT"), i(-1)),
        (("BITPOS", none, "1"), i(-1)),
        (("BITPOS", none, "0"), i(0)),
        (("BITPOS", none, "1", "x"), i(-1)),
        (("BITPOS", s, "2"), b"-ERR The bit argument must be 1 or 0.\r\n"),
        (("BITPOS", none, "2"), b"-ERR The bit argument must be 1 or 0.\r\n"),
        (("BITPOS", s, "x"), NOT_INT),
        (("BITPOS", s, "1", "x"), NOT_INT),
        (("BITPOS", s, "1", "0", "x"), NOT_INT),
        (("BITPOS", s, "1", "0", "x", "BIT"), NOT_INT),
        (("BITPOS", s, "1", "0", "x", "nonsense"), SYNTAX),  # the unit is read first
        (("BITPOS", s, "1", "0", "1", "BIT", "x"), SYNTAX),
        (("BITPOS", s), b"-ERR wrong number of arguments for 'bitpos' command\r\n"),
        (("SET", s, ""), OK),
        (("BITPOS", s, "0"), i(-1)),
        (("BITPOS", s, "1"), i(-1)),
        (("DEL", s, ones), i(2)),
    ])


def test_bitop(c, key):
    a, b, d, none = key + ":a", key + ":b", key + ":d", key + ":none"
    run(c, [
        (("SET", a, "abc"), OK),
        (("SET", b, "xyzdef"), OK),
        (("BITOP", "AND", d, a, b), i(6)),
        (("GET", d), bulk(b"``b\x00\x00\x00")),
        (("BITOP", "or", d, a, b, none), i(6)),
        (("GET", d), bulk(b"y{{def")),
        (("BITOP", "XOR", d, a, b), i(6)),
        (("GET", d), bulk(b"\x19\x1b\x19def")),
        (("BITOP", "Not", d, a), i(3)),
        (("GET", d), bulk(b"\x9e\x9d\x9c")),
        (("BITOP", "NOT", d, a, b), b"-ERR BITOP NOT must be called with a single source key.\r\n"),
        (("BITOP", "NAND", d, a), SYNTAX),
        (("BITOP", "AND", d), b"-ERR wrong number of arguments for 'bitop' command\r\n"),
        (("EXPIRE", d, "100"), i(1)),
        (("BITOP", "OR", d, a), i(3)),
        (("TTL", d), i(-1)),  # the result is a new plain string
        (("BITOP", "AND", d, none, none + "2"), i(0)),
        (("EXISTS", d), i(0)),  # an empty result deletes the destination
        (("SET", a, b"\xff" * 40), OK),
        (("SET", b, b"\x0f" * 33), OK),
        (("BITOP", "AND", d, a, b), i(40)),
        (("GET", d), bulk(b"\x0f" * 33 + b"\x00" * 7)),
        (("DEL", a, b, d), i(3)),
    ])


def test_bitfield(c, key):
    f, g = key, key + ":g"
    run(c, [
        (("BITFIELD", f), arr()),
        (("EXISTS", f), i(0)),
        (("BITFIELD", f, "GET", "u8", "0"), arr(i(0))),
        (("BITFIELD", f, "SET", "u8", "0", "255", "GET", "u8", "0"), arr(i(0), i(255))),
        (("BITFIELD", f, "INCRBY", "u8", "0", "10", "INCRBY", "i5", "#3", "100"),
         arr(i(9), i(4))),
        (("BITFIELD", f, "overflow", "sat", "incrby", "u8", "0", "1000", "INCRBY", "i8", "8",
          "-1000", "OVERFLOW", "FAIL", "INCRBY", "u2", "100", "5", "GET", "u2", "100"),
         arr(i(255), i(-128), b"$-1\r\n", i(0))),
        (("GET", f), bulk(b"\xff\x80@" + b"\x00" * 10)),
        (("BITFIELD", f, "SET", "i64", "0", "-1", "GET", "i64", "0", "GET", "u63", "1",
          "INCRBY", "i64", "0", "1"),
         arr(i(-35958428274786304), i(-1), i(9223372036854775807), i(0))),
        (("BITFIELD", f, "OVERFLOW", "WRAP", "SET", "u8", "0", "-1", "SET", "i8", "8", "200",
          "GET", "u8", "0", "GET", "i8", "8"), arr(i(0), i(0), i(255), i(-56))),
        (("BITFIELD", f, "OVERFLOW", "SAT", "SET", "u8", "0", "-1", "SET", "i8", "8", "200",
          "SET", "i8", "16", "-200", "GET", "i8", "8", "GET", "i8", "16"),
         arr(i(255), i(-56), i(0), i(127), i(-128))),
        (("BITFIELD", f, "OVERFLOW", "WRAP", "INCRBY", "i64", "0", "9223372036854775807",
          "INCRBY", "i64", "0", "9223372036854775807"),
         arr(i(9187202502347456511), i(-36169534507319298))),
    ])
    run(c, [
        (("BITFIELD", g, "OVERFLOW", "FAIL", "INCRBY", "u2", "10", "5"), arr(b"$-1\r\n")),
        (("GET", g), bulk(b"\x00\x00")),  # created even though the write failed
        (("BITFIELD", g, "INCRBY", "u1", "7", "1", "INCRBY", "i1", "6", "1", "INCRBY", "i1",
          "6", "-1", "INCRBY", "i1", "6", "-1"), arr(i(1), i(-1), i(0), i(-1))),
        (("BITFIELD", g, "OVERFLOW", "WRAP", "INCRBY", "u63", "16", "-1"),
         arr(i(9223372036854775807))),
        (("BITFIELD", g, "OVERFLOW", "SAT", "INCRBY", "i64", "64", "-9223372036854775808",
          "INCRBY", "i64", "64", "-1"), arr(i(-9223372036854775808), i(-9223372036854775808))),
        (("BITFIELD", g, "SET", "u64", "0", "1"), BAD_TYPE),
        (("BITFIELD", g, "SET", "i65", "0", "1"), BAD_TYPE),
        (("BITFIELD", g, "SET", "u0", "0", "1"), BAD_TYPE),
        (("BITFIELD", g, "SET", "I8", "0", "1"), BAD_TYPE),
        (("BITFIELD", g, "GET", "x8", "0"), BAD_TYPE),
        (("BITFIELD", g, "SET", "u8", "-1", "1"), BAD_OFFSET),
        (("BITFIELD", g, "SET", "u8", "#-1", "1"), BAD_OFFSET),
        (("BITFIELD", g, "SET", "u8", "#", "1"), BAD_OFFSET),
        (("BITFIELD", g, "GET", "u8", "4294967296"), BAD_OFFSET),
        (("BITFIELD", g, "GET", "i64", "#9223372036854775807"), BAD_OFFSET),
        (("BITFIELD", g, "SET", "u8", "0", "x"), NOT_INT),
        (("BITFIELD", g, "SET", "u8", "0"), SYNTAX),
        (("BITFIELD", g, "GET", "u8"), SYNTAX),
        (("BITFIELD", g, "FOO"), SYNTAX),
        (("BITFIELD", g, "OVERFLOW"), SYNTAX),
        (("BITFIELD", g, "OVERFLOW", "XX", "GET", "u8", "0"),
         b"-ERR Invalid OVERFLOW type specified\r\n"),
        (("BITFIELD", g, "GET", "u8", "0", "SET", "u8", "x", "1"), BAD_OFFSET),
        (("BITFIELD",), b"-ERR wrong number of arguments for 'bitfield' command\r\n"),
        (("BITFIELD", g, "GET", "u8", "#2", "GET", "i3", "#1"), arr(i(255), i(0))),
        (("DEL", f, g), i(2)),
    ])


def test_bitfield_ro(c, key):
    run(c, [
        (("SET", key, b"\x81\x7f"), OK),
        (("BITFIELD_RO", key, "GET", "u8", "0", "GET", "i4", "0", "GET", "i16", "0"),
         arr(i(129), i(-8), i(-32385))),
        (("BITFIELD_RO", key, "OVERFLOW", "SAT", "GET", "u2", "#7"), arr(i(3))),
        (("BITFIELD_RO", key, "SET", "u8", "0", "1"),
         b"-ERR BITFIELD_RO only supports the GET subcommand\r\n"),
        (("BITFIELD_RO", key, "INCRBY", "u8", "0", "1"),
         b"-ERR BITFIELD_RO only supports the GET subcommand\r\n"),
        (("BITFIELD_RO", key, "SET", "u64", "0", "1"), BAD_TYPE),  # parsed before the check
        (("BITFIELD_RO", key + ":none", "GET", "u8", "0"), arr(i(0))),
        (("BITFIELD_RO", key), arr()),
        (("DEL", key), i(1)),
    ])


def test_bitfield_resp3_null(c, key):
    c.send(resp_encode("HELLO", "3"))
    c.read_until(b"modules\r\n")
    c.read_until(b"\r\n")  # the empty modules array
    run(c, [
        (("BITFIELD", key, "OVERFLOW", "FAIL", "INCRBY", "u2", "0", "7", "GET", "u2", "0"),
         b"*2\r\n_\r\n:0\r\n"),
        (("DEL", key), i(1)),
    ])


# HyperLogLog: small values are sparse; these bytes are redis-server 7.0.15's.
P3 = b"`\xf3\x80P\xb1\x84K\xfb\x80BZ"


def test_pfadd_pfcount_raw_bytes(c, key):
    p = key
    run(c, [
        (("PFADD", p, "a", "b", "c"), i(1)),
        (("GET", p), bulk(b"HYLL\x01\x00\x00\x00" + b"\x00" * 7 + b"\x80" + P3)),
        (("PFCOUNT", p), i(3)),
        # PFCOUNT caches the count in the header, as Redis does.
        (("GET", p), bulk(b"HYLL\x01\x00\x00\x00\x03" + b"\x00" * 7 + P3)),
        (("PFADD", p, "a"), i(0)),
        (("PFADD", p), i(0)),
        (("PFADD", p + ":new"), i(1)),
        (("GET", p + ":new"), bulk(b"HYLL\x01\x00\x00\x00" + b"\x00" * 7 + b"\x80\x7f\xff")),
        (("PFCOUNT", p + ":new"), i(0)),
        (("PFCOUNT", p + ":none"), i(0)),
        (("PFADD",), b"-ERR wrong number of arguments for 'pfadd' command\r\n"),
        (("PFCOUNT",), b"-ERR wrong number of arguments for 'pfcount' command\r\n"),
        (("PFMERGE",), b"-ERR wrong number of arguments for 'pfmerge' command\r\n"),
        (("DEL", p, p + ":new"), i(2)),
    ])


def test_pf_promotion_and_union(c, key):
    q, q2, m = key + ":q", key + ":q2", key + ":m"
    run(c, [
        (("PFADD", q, *[f"e{n}" for n in range(1000)]), i(1)),
        (("PFCOUNT", q), i(1008)),
        (("STRLEN", q), i(1906)),  # still sparse
        (("PFADD", q, *[f"e{n}" for n in range(1000, 5000)]), i(1)),
        (("PFCOUNT", q), i(4968)),
        (("STRLEN", q), i(12304)),  # dense: 16 + 16384 * 6 / 8
        (("PFADD", q2, *[f"e{n}" for n in range(500, 1500)]), i(1)),
        (("PFCOUNT", q2, q + ":none"), i(991)),
        (("PFCOUNT", q, q2), i(4968)),
        (("PFMERGE", m, q2), OK),
        (("PFCOUNT", m), i(991)),
        (("STRLEN", m), i(1879)),  # sparse merged into sparse stays sparse
        # A dense source turns the destination dense.
        (("PFMERGE", m, q), OK),
        (("STRLEN", m), i(12304)),
        (("PFCOUNT", m), i(4968)),
        (("PFMERGE", m + ":empty"), OK),
        (("GET", m + ":empty"), bulk(b"HYLL\x01\x00\x00\x00" + b"\x00" * 7 + b"\x80\x7f\xff")),
        (("DEL", q, q2, m, m + ":empty"), i(4)),
    ])


def dense_value(registers, cache=b"\x00" * 7 + b"\x80"):
    """A dense HyperLogLog in Redis's layout: 6-bit registers from each byte's low bits."""
    body = bytearray(12288 + 1)
    for n, v in enumerate(registers):
        bit = n * 6
        body[bit // 8] |= (v << (bit % 8)) & 0xff
        body[bit // 8 + 1] |= (v >> (8 - bit % 8)) & 0xff
    return b"HYLL\x00\x00\x00\x00" + cache + bytes(body[:12288])


def xzero(n):
    n -= 1
    return bytes([0x40 | (n >> 8), n & 0xff])


def test_pf_values_written_elsewhere(c, key):
    """A value built by hand in Redis's layout (as another server would write it) counts
    as Redis counts it; the sparse one holds registers 1000 and 1001 at 3."""
    d, s = key + ":d", key + ":s"
    sparse = b"HYLL\x01\x00\x00\x00" + b"\x00" * 7 + b"\x80" + xzero(1000) + b"\x89" + xzero(15382)
    run(c, [
        (("SET", d, dense_value([(n * 7) % 13 for n in range(16384)])), OK),
        (("PFCOUNT", d), i(73923)),
        (("SET", s, sparse), OK),
        (("PFCOUNT", s), i(2)),
        (("GET", s), bulk(sparse[:8] + b"\x02" + b"\x00" * 7 + sparse[16:])),
        (("PFCOUNT", s, d), i(73952)),
        # A stale cache is trusted while its valid bit says so, as Redis does.
        (("SET", s, sparse[:8] + b"\x2a" + b"\x00" * 7 + sparse[16:]), OK),
        (("PFCOUNT", s), i(42)),
        (("DEL", d, s), i(2)),
    ])


def test_pf_errors(c, key):
    s, bad, p = key + ":str", key + ":bad", key + ":p"
    header = b"HYLL\x01\x00\x00\x00" + b"\x00" * 7 + b"\x80"
    run(c, [
        (("PFADD", p, "x"), i(1)),
        (("SET", s, "hello"), OK),
        (("PFADD", s, "x"), NOT_HLL),
        (("PFCOUNT", s), NOT_HLL),
        (("PFCOUNT", p, s), NOT_HLL),
        (("PFMERGE", s, p), NOT_HLL),
        (("PFMERGE", p, s), NOT_HLL),
        (("SET", s, b"HYLL\x02" + b"\x00" * 11), OK),  # unknown encoding
        (("PFCOUNT", s), NOT_HLL),
        (("SET", s, b"HYLL\x00" + b"\x00" * 12), OK),  # dense of the wrong length
        (("PFCOUNT", s), NOT_HLL),
        (("SET", s, b"HYLL\x01\x00"), OK),  # shorter than a header
        (("PFADD", s), NOT_HLL),
        (("SET", bad, header + b"\x00"), OK),  # runs cover 1 register, not 16384
        (("PFCOUNT", bad), CORRUPT),
        (("PFADD", bad, "x"), CORRUPT),
        (("PFCOUNT", bad, p), CORRUPT),
        (("PFMERGE", p, bad), CORRUPT),
        (("SET", bad, header + xzero(16384) + b"\x00"), OK),  # one register too many
        (("PFCOUNT", bad), CORRUPT),
        # A VAL run past the end, even right after 16384 registers, is refused too (the
        # installed redis-server carries the CVE-2025-32023 fix), while PFADD of an
        # element whose register lies inside still works.
        (("SET", bad, header + xzero(16384) + b"\x80"), OK),
        (("PFCOUNT", bad, p), CORRUPT),
        (("PFMERGE", p, bad), CORRUPT),
        (("PFADD", bad, "a"), i(1)),
        (("PFADD", bad, *[f"e{n}" for n in range(3000)]), CORRUPT),  # turning dense
        # An XZERO missing its second byte: Redis reads a zero there, and the split
        # that replaces it loses its last byte.
        (("SET", bad, header + b"\x7f"), OK),
        (("PFADD", bad, "a"), i(1)),
        (("GET", bad), bulk(header + b"q\xa6\x84M")),
        (("DEL", s, bad, p), i(3)),
    ])


COLLECTION_WRITERS = (("HSET", "f", "v"), ("SADD", "m"), ("RPUSH", "e"), ("ZADD", "1", "m"))


def make_collection(c, key):
    """Stores a collection under `key` with whichever collection command the server has."""
    for name, *rest in COLLECTION_WRITERS:
        c.send(resp_encode(name, key, *rest))
        if c.read_line().startswith(b":"):
            return
    pytest.skip("no collection type served yet")


def test_wrongtype(c, key):
    h = key + ":coll"
    make_collection(c, h)
    run(c, [
        (("SETBIT", h, "1", "1"), WRONGTYPE),
        (("SETBIT", h, "x", "1"), BAD_OFFSET),  # arguments are checked first
        (("GETBIT", h, "1"), WRONGTYPE),
        (("BITCOUNT", h), WRONGTYPE),
        (("BITCOUNT", h, "x", "y", "z"), WRONGTYPE),  # the key is checked first
        (("BITPOS", h, "1"), WRONGTYPE),
        (("BITOP", "AND", key, h), WRONGTYPE),
        (("BITFIELD", h, "GET", "u8", "0"), WRONGTYPE),
        (("BITFIELD", h, "SET", "u8", "0", "1"), WRONGTYPE),
        (("BITFIELD", h, "SET", "u64", "0", "1"), BAD_TYPE),
        (("BITFIELD_RO", h, "GET", "u8", "0"), WRONGTYPE),
        (("PFADD", h, "a"), WRONGTYPE),
        (("PFCOUNT", h), WRONGTYPE),
        (("PFCOUNT", key + ":none", h), WRONGTYPE),
        (("PFMERGE", key, h), WRONGTYPE),
        (("EXISTS", key), i(0)),
        (("SET", key, "x"), OK),
        (("BITOP", "NOT", h, key), i(1)),  # the destination is replaced, whatever it held
        (("TYPE", h), b"+string\r\n"),
        (("DEL", h, key), i(2)),
    ])


def test_bitmaps_past_memcached_item_size(c, key):
    """Bitmaps grow as Redis strings do, past memcached's 1 MiB item size (up to
    proto-max-bulk-len within half the memory limit)."""
    run(c, [
        (("SETBIT", key, "16777216", "1"), i(0)),  # byte 2 MiB
        (("STRLEN", key), i(2 * 1024 * 1024 + 1)),
        (("BITFIELD", key, "SET", "u8", "#2097153", "255", "GET", "u4", "16777216"),
         arr(i(0), i(8))),
        (("BITCOUNT", key), i(9)),
        (("BITPOS", key, "1"), i(16777216)),
        (("BITPOS", key, "1", "-2"), i(16777216)),
        (("GETBIT", key, "16777231"), i(1)),
        (("DEL", key), i(1)),
    ])


def test_concurrent_writers_lose_nothing(resp_port, key):
    """Clients changing one bitmap and one HyperLogLog at once (on several workers when
    the server has them): every change lands, as each is one atomic step."""
    import threading

    writers, bits_each = 4, 150
    hll, solo = key + ":hll", key + ":solo"
    errors = []

    def write(n):
        try:
            with Conn(resp_port) as conn:
                for b in range(bits_each):
                    conn.send(resp_encode("SETBIT", key, str(b * writers + n), "1"))
                    conn.send(resp_encode("PFADD", hll, f"w{n}:{b}"))
                    conn.read_line()
                    conn.read_line()
        except Exception as e:  # reported below, in the test's thread
            errors.append(e)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert not errors and not any(t.is_alive() for t in threads), errors
    with Conn(resp_port) as c:
        elements = [f"w{n}:{b}" for n in range(writers) for b in range(bits_each)]
        run(c, [
            (("BITCOUNT", key), i(writers * bits_each)),
            (("PFADD", solo, *elements), i(1)),
        ])
        c.send(resp_encode("PFCOUNT", solo))
        want = c.read_line()
        run(c, [(("PFCOUNT", hll), want), (("DEL", key, hll, solo), i(3))])


def keyspace_counts(c):
    c.send(resp_encode("INFO", "stats"))
    header = c.read_line()
    body = c.read_exact(int(header[1:-2]) + 2).decode()
    stats = dict(line.split(":", 1) for line in body.split("\r\n") if ":" in line)
    return int(stats["keyspace_hits"]), int(stats["keyspace_misses"])


def test_reads_count_as_keyspace_hits_and_misses(c, key):
    """Reads count in INFO's keyspace_hits/misses as Redis's lookupKeyRead counts them
    (writes, which look keys up for writing, do not)."""
    k, p, none = key, key + ":p", key + ":none"
    run(c, [(("SETBIT", k, "1", "1"), i(0)), (("PFADD", p, "a"), i(1))])
    before = keyspace_counts(c)
    run(c, [
        (("GETBIT", k, "1"), i(1)),
        (("GETBIT", none, "1"), i(0)),
        (("GETBIT", none, "x"), BAD_OFFSET),  # refused before the lookup
        (("BITCOUNT", k), i(1)),
        (("BITCOUNT", none), i(0)),
        (("BITPOS", k, "1"), i(1)),
        (("BITPOS", none, "1"), i(-1)),
        (("BITOP", "AND", key + ":d", k, none), i(1)),
        (("BITFIELD", k, "GET", "u8", "0"), arr(i(64))),
        (("BITFIELD", k, "SET", "u8", "0", "1"), arr(i(64))),
        (("BITFIELD_RO", none, "GET", "u8", "0"), arr(i(0))),
        (("SETBIT", none, "1", "0"), i(0)),
        (("PFCOUNT", p), i(1)),
        (("PFCOUNT", key + ":none2"), i(0)),
        (("PFCOUNT", p, key + ":none2"), i(1)),
        (("PFMERGE", p, key + ":none2"), OK),
        (("PFADD", p, "b"), i(1)),
    ])
    hits, misses = keyspace_counts(c)
    assert (hits - before[0], misses - before[1]) == (8, 8)
    run(c, [(("DEL", k, p, none, key + ":d"), i(4))])
