"""GEO commands byte for byte as redis-server 7.0 sends them (validated with
CONFORMANCE_TARGET=redis): GEOADD (NX, XX, CH), GEOPOS, GEODIST, GEOHASH, GEORADIUS[_RO],
GEORADIUSBYMEMBER[_RO], GEOSEARCH and GEOSEARCHSTORE, in RESP2 and RESP3; a geo key is a
sorted set to every other command; STORE and STOREDIST; keyspace events; ACL on the STORE
destination; the command table; hostile arguments (huge COUNT, infinite and tiny radii,
NaN and infinite coordinates, many members).
"""

import time

import pytest

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
SYNTAX = b"-ERR syntax error\r\n"
SICILY = ("13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania")
PARIS = ("2.349014", "48.864716", "Paris")
PALERMO_POS = b"*2\r\n$20\r\n13.36138933897018433\r\n$20\r\n38.11555639549629859\r\n"
CATANIA_POS = b"*2\r\n$20\r\n15.08726745843887329\r\n$20\r\n37.50266842333162032\r\n"


@pytest.fixture
def c(resp_port):
    with Conn(resp_port) as conn:
        yield conn


def bulks(*items):
    """An array reply of bulk strings (None: a RESP2 null)."""
    out = b"*%d\r\n" % len(items)
    for item in items:
        if item is None:
            out += b"$-1\r\n"
        else:
            item = item.encode() if isinstance(item, str) else item
            out += b"$%d\r\n%s\r\n" % (len(item), item)
    return out


def bulk(text):
    return b"$%d\r\n%s\r\n" % (len(text), text.encode())


def test_positions_hashes_distances(c, key):
    c.rt(resp_encode("GEOADD", key, *SICILY), b":2\r\n")
    c.rt(resp_encode("TYPE", key), b"+zset\r\n")
    c.rt(resp_encode("ZSCORE", key, "Palermo"), bulk("3479099956230698"))
    c.rt(resp_encode("ZRANGE", key, "0", "-1"), bulks("Palermo", "Catania"))
    c.rt(resp_encode("GEOPOS", key, "Palermo", "nope", "Catania"),
         b"*3\r\n" + PALERMO_POS + b"*-1\r\n" + CATANIA_POS)
    c.rt(resp_encode("GEOPOS", key + ":none", "a"), b"*1\r\n*-1\r\n")
    c.rt(resp_encode("GEOHASH", key, "Palermo", "nope", "Catania"),
         bulks("sqc8b49rny0", None, "sqdtr74hyu0"))
    c.rt(resp_encode("GEODIST", key, "Palermo", "Catania"), bulk("166274.1516"))
    c.rt(resp_encode("GEODIST", key, "Palermo", "Catania", "KM"), bulk("166.2742"))
    c.rt(resp_encode("GEODIST", key, "Palermo", "Catania", "mi"), bulk("103.3182"))
    c.rt(resp_encode("GEODIST", key, "Palermo", "Catania", "ft"), bulk("545518.8700"))
    c.rt(resp_encode("GEODIST", key, "Palermo", "Palermo"), bulk("0.0000"))
    c.rt(resp_encode("GEODIST", key, "Palermo", "nope"), b"$-1\r\n")
    c.rt(resp_encode("GEODIST", key + ":none", "a", "b"), b"$-1\r\n")
    c.rt(resp_encode("GEODIST", key, "a", "b", "yd"),
         b"-ERR unsupported unit provided. please use M, KM, FT, MI\r\n")
    c.rt(resp_encode("GEODIST", key, "a", "b", "m", "x"), SYNTAX)
    # The edges of the map: the top edge is one cell past the last, as in Redis.
    c.rt(resp_encode("GEOADD", key, "180", "85.05112878", "ne", "-180", "-85.05112878", "sw"),
         b":2\r\n")
    c.rt(resp_encode("ZSCORE", key, "ne"), bulk("13510798882111488"))
    c.rt(resp_encode("GEOPOS", key, "ne", "sw"),
         b"*2\r\n" + bulks("180", "85.0511287799999991")
         + bulks("-179.99999731779098511", "-85.05112751263942528"))
    c.rt(resp_encode("GEOHASH", key, "ne"), bulks("bp05b5048p0"))
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_resp3_coordinates_are_doubles(resp_port, key):
    with Conn(resp_port) as c3:
        c3.send(resp_encode("HELLO", "3"))
        c3.read_until(b"modules\r\n*0\r\n")
        c3.rt(resp_encode("GEOADD", key, *SICILY), b":2\r\n")
        c3.rt(resp_encode("GEOPOS", key, "Palermo", "nope"),
              b"*2\r\n*2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n_\r\n")
        c3.rt(resp_encode("GEOHASH", key, "nope"), b"*1\r\n_\r\n")
        c3.rt(resp_encode("GEODIST", key, "nope", "Palermo"), b"_\r\n")
        c3.rt(resp_encode("GEOSEARCH", key, "FROMMEMBER", "Palermo", "BYRADIUS", "1", "m",
                          "WITHCOORD", "WITHDIST"),
              b"*1\r\n*3\r\n$7\r\nPalermo\r\n$6\r\n0.0000\r\n"
              b"*2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n")
        c3.rt(resp_encode("DEL", key), b":1\r\n")


def test_geoadd_options_and_error_order(c, key):
    c.rt(resp_encode("GEOADD", key, "1", "1", "a"), b":1\r\n")
    c.rt(resp_encode("GEOADD", key, "NX", "2", "2", "a", "3", "3", "b"), b":1\r\n")
    c.rt(resp_encode("GEOADD", key, "XX", "CH", "2", "2", "a", "4", "4", "c"), b":1\r\n")
    c.rt(resp_encode("GEOADD", key, "ch", "2", "2", "a"), b":0\r\n")
    c.rt(resp_encode("ZCARD", key), b":2\r\n")
    c.rt(resp_encode("GEOADD", key, "NX", "XX", "1", "1", "a"), SYNTAX)
    c.rt(resp_encode("GEOADD", key, "1", "1", "a", "2"), SYNTAX)
    c.rt(resp_encode("GEOADD", key, "CH", "NX", "XX"), SYNTAX)
    c.rt(resp_encode("GEOADD", key, "200", "100", "a"),
         b"-ERR invalid longitude,latitude pair 200.000000,100.000000\r\n")
    c.rt(resp_encode("GEOADD", key, "1", "85.06", "a"),
         b"-ERR invalid longitude,latitude pair 1.000000,85.060000\r\n")
    c.rt(resp_encode("GEOADD", key, "-inf", "0", "x"),
         b"-ERR invalid longitude,latitude pair -inf,0.000000\r\n")
    c.rt(resp_encode("GEOADD", key, "0", "nan", "x"), b"-ERR value is not a valid float\r\n")
    c.rt(resp_encode("GEOADD", key, "0", "1e400", "x"), b"-ERR value is not a valid float\r\n")
    # A bad point anywhere adds none of them.
    c.rt(resp_encode("GEOADD", key, "5", "5", "d", "500", "5", "e"),
         b"-ERR invalid longitude,latitude pair 500.000000,5.000000\r\n")
    c.rt(resp_encode("ZSCORE", key, "d"), b"$-1\r\n")
    c.rt(resp_encode("SET", key + ":s", "v"), b"+OK\r\n")
    # Coordinates are checked before the key's type.
    c.rt(resp_encode("GEOADD", key + ":s", "200", "0", "a"),
         b"-ERR invalid longitude,latitude pair 200.000000,0.000000\r\n")
    c.rt(resp_encode("GEOADD", key + ":s", "1", "1", "a"), WRONGTYPE)
    c.rt(resp_encode("GEOPOS", key + ":s", "a"), WRONGTYPE)
    c.rt(resp_encode("GEODIST", key + ":s", "a", "b"), WRONGTYPE)
    c.rt(resp_encode("GEORADIUS", key + ":s", "x", "0", "1", "m"), WRONGTYPE)
    c.rt(resp_encode("DEL", key, key + ":s"), b":2\r\n")


def test_searches(c, key):
    c.rt(resp_encode("GEOADD", key, *SICILY, *PARIS), b":3\r\n")
    c.rt(resp_encode("GEORADIUS", key, "15", "37", "200", "km", "WITHDIST", "WITHCOORD",
                     "WITHHASH", "ASC"),
         b"*2\r\n*4\r\n$7\r\nCatania\r\n$7\r\n56.4413\r\n:3479447370796909\r\n" + CATANIA_POS
         + b"*4\r\n$7\r\nPalermo\r\n$8\r\n190.4424\r\n:3479099956230698\r\n" + PALERMO_POS)
    c.rt(resp_encode("GEORADIUS", key, "15", "37", "200", "km", "COUNT", "1"), bulks("Catania"))
    c.rt(resp_encode("GEORADIUS", key, "15", "37", "2000", "km", "DESC", "WITHDIST"),
         b"*3\r\n*2\r\n$5\r\nParis\r\n$9\r\n1669.5005\r\n*2\r\n$7\r\nPalermo\r\n$8\r\n"
         b"190.4424\r\n*2\r\n$7\r\nCatania\r\n$7\r\n56.4413\r\n")
    c.rt(resp_encode("GEORADIUS_RO", key, "15", "37", "200", "km", "ASC"),
         bulks("Catania", "Palermo"))
    c.rt(resp_encode("GEORADIUSBYMEMBER", key, "Palermo", "200", "km", "WITHHASH", "COUNT",
                     "5", "ANY"),
         b"*2\r\n*2\r\n$7\r\nPalermo\r\n:3479099956230698\r\n*2\r\n$7\r\nCatania\r\n"
         b":3479447370796909\r\n")
    c.rt(resp_encode("GEORADIUSBYMEMBER_RO", key, "Paris", "100", "km"), bulks("Paris"))
    c.rt(resp_encode("GEORADIUSBYMEMBER", key, "nope", "100", "km"),
         b"-ERR could not decode requested zset member\r\n")
    # A missing key: no look at the member or the radius.
    c.rt(resp_encode("GEORADIUSBYMEMBER", key + ":none", "nope", "x", "km"), b"*0\r\n")
    c.rt(resp_encode("GEOSEARCH", key, "FROMLONLAT", "15", "37", "BYBOX", "400", "400", "km",
                     "DESC", "COUNT", "1"), bulks("Palermo"))
    c.rt(resp_encode("GEOSEARCH", key, "FROMMEMBER", "Paris", "BYRADIUS", "0", "m",
                     "WITHCOORD"),
         b"*1\r\n*2\r\n$5\r\nParis\r\n" + bulks("2.34901160001754761", "48.86471570750150306"))
    c.rt(resp_encode("GEOSEARCH", key, "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"), b"*0\r\n")
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_search_option_errors(c, key):
    c.rt(resp_encode("GEOADD", key, *PARIS), b":1\r\n")
    base = ("GEORADIUS", key, "15", "37", "200", "km")
    c.rt(resp_encode(*base[:4], "-1", "km"), b"-ERR radius cannot be negative\r\n")
    c.rt(resp_encode(*base[:4], "nan", "km"), b"-ERR need numeric radius\r\n")
    c.rt(resp_encode(*base[:4], "1e400", "km"), b"-ERR need numeric radius\r\n")
    c.rt(resp_encode(*base[:4], "1", "parsec"),
         b"-ERR unsupported unit provided. please use M, KM, FT, MI\r\n")
    c.rt(resp_encode(*base, "COUNT"), SYNTAX)
    c.rt(resp_encode(*base, "COUNT", "abc"), b"-ERR value is not an integer or out of range\r\n")
    c.rt(resp_encode(*base, "COUNT", "0"), b"-ERR COUNT must be > 0\r\n")
    c.rt(resp_encode(*base, "COUNT", "-5"), b"-ERR COUNT must be > 0\r\n")
    c.rt(resp_encode(*base, "ANY"), b"-ERR the ANY argument requires COUNT argument\r\n")
    c.rt(resp_encode(*base, "WITHDIST", "STORE", "d"),
         b"-ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and "
         b"WITHCOORD options\r\n")
    c.rt(resp_encode("GEORADIUS_RO", *base[1:], "STORE", "d"), SYNTAX)
    c.rt(resp_encode("GEOSEARCH", key, "FROMMEMBER", "Paris", "FROMLONLAT", "1", "1",
                     "BYRADIUS", "1", "m"), SYNTAX)
    c.rt(resp_encode("GEOSEARCH", key, "BYRADIUS", "1", "m", "BYBOX", "1", "1", "m",
                     "FROMMEMBER", "Paris"), SYNTAX)
    c.rt(resp_encode("GEOSEARCH", key, "FROMMEMBER", "Paris", "BYRADIUS", "1", "m",
                     "STOREDIST"), SYNTAX)
    c.rt(resp_encode("GEOSEARCHSTORE", "d", key, "FROMMEMBER", "Paris", "BYRADIUS", "1", "m",
                     "STORE", "x"), SYNTAX)
    c.rt(resp_encode("geosearch", key, "BYRADIUS", "1", "m", "ASC", "ASC"),
         b"-ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for geosearch\r\n")
    c.rt(resp_encode("GEOSEARCH", key, "FROMLONLAT", "1", "1", "ASC", "ASC"),
         b"-ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH\r\n")
    c.rt(resp_encode("GEOSEARCH", key, "FROMLONLAT", "1", "1", "BYBOX", "1", "-1", "m"),
         b"-ERR height or width cannot be negative\r\n")
    c.rt(resp_encode("GEOSEARCH", key, "FROMLONLAT", "1", "1", "BYBOX", "x", "1", "m"),
         b"-ERR need numeric width\r\n")
    c.rt(resp_encode("GEOSEARCHSTORE", "d", key, "FROMLONLAT", "1", "1", "BYRADIUS", "1", "m",
                     "WITHHASH"),
         b"-ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD "
         b"options\r\n")
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_hostile_sizes(c, key):
    c.rt(resp_encode("GEOADD", key, *SICILY, *PARIS), b":3\r\n")
    everyone = bulks("Catania", "Palermo", "Paris")
    for radius, unit in (("inf", "km"), ("1e308", "mi"), ("1.7976931348623157e308", "ft")):
        c.rt(resp_encode("GEORADIUS", key, "15", "37", radius, unit, "ASC"), everyone)
    c.rt(resp_encode("GEORADIUS", key, "15", "37", "2000", "km", "COUNT",
                     "9223372036854775807", "ASC"), everyone)
    c.rt(resp_encode("GEORADIUS", key, "15", "37", "2000", "km", "COUNT",
                     "9223372036854775808"), b"-ERR value is not an integer or out of range\r\n")
    c.rt(resp_encode("GEORADIUS", key, "15", "37", "5e-324", "m"), b"*0\r\n")
    c.rt(resp_encode("GEOSEARCH", key, "FROMLONLAT", "15", "37", "BYBOX", "inf", "inf", "km",
                     "ASC"), everyone)
    c.rt(resp_encode("GEOSEARCH", key, "FROMLONLAT", "-180", "-85.05112878", "BYRADIUS",
                     "inf", "m", "COUNT", "1", "ANY", "DESC"), bulks("Palermo"))
    # Many points and many members: replies as long as what was asked, nothing more.
    points = []
    for i in range(3000):
        points += [str(-179 + (i % 358)), str(-80 + (i // 358) * 10), f"p{i}"]
    c.rt(resp_encode("GEOADD", key, *points), b":3000\r\n")
    c.send(resp_encode("GEOSEARCH", key, "FROMLONLAT", "0", "0", "BYRADIUS", "inf", "m"))
    assert c.read_line() == b"*3003\r\n"
    for _ in range(3003):
        c.read_line(), c.read_line()
    c.send(resp_encode("GEOPOS", key, *[f"p{i}" for i in range(0, 3000, 3)], "nope"))
    assert c.read_line() == b"*1001\r\n"
    for _ in range(1000):
        assert c.read_line() == b"*2\r\n"
        for _ in range(4):
            c.read_line()
    assert c.read_line() == b"*-1\r\n"
    c.rt(resp_encode("GEORADIUS", key, "0", "0", "inf", "m", "COUNT", "2", "ANY", "STORE",
                     key + ":d"), b":2\r\n")
    c.rt(resp_encode("ZCARD", key + ":d"), b":2\r\n")
    c.rt(resp_encode("DEL", key, key + ":d"), b":2\r\n")
    c.rt(resp_encode("PING"), b"+PONG\r\n")


def test_store_and_storedist(c, key):
    src, dst = key + ":src", key + ":dst"
    c.rt(resp_encode("GEOADD", src, *SICILY), b":2\r\n")
    c.rt(resp_encode("SET", dst, "old", "EX", "100"), b"+OK\r\n")
    c.rt(resp_encode("GEORADIUS", src, "15", "37", "200", "km", "STOREDIST", dst), b":2\r\n")
    c.rt(resp_encode("TTL", dst), b":-1\r\n")
    c.rt(resp_encode("ZRANGE", dst, "0", "-1", "WITHSCORES"),
         bulks("Catania", "56.441257870158204", "Palermo", "190.44242984775784"))
    c.rt(resp_encode("GEORADIUSBYMEMBER", src, "Palermo", "10", "km", "STORE", dst), b":1\r\n")
    c.rt(resp_encode("ZRANGE", dst, "0", "-1", "WITHSCORES"),
         bulks("Palermo", "3479099956230698"))
    c.rt(resp_encode("GEOSEARCHSTORE", dst, src, "FROMLONLAT", "15", "37", "BYBOX", "400", "400",
                     "km", "DESC", "COUNT", "1", "STOREDIST"), b":1\r\n")
    c.rt(resp_encode("ZRANGE", dst, "0", "-1", "WITHSCORES"),
         bulks("Palermo", "190.44242984775784"))
    # Nothing found, or no source: the destination is deleted.
    c.rt(resp_encode("GEOSEARCHSTORE", dst, src, "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"),
         b":0\r\n")
    c.rt(resp_encode("EXISTS", dst), b":0\r\n")
    c.rt(resp_encode("SET", dst, "x"), b"+OK\r\n")
    c.rt(resp_encode("GEORADIUS", key + ":none", "0", "0", "1", "m", "STORE", dst), b":0\r\n")
    c.rt(resp_encode("EXISTS", dst), b":0\r\n")
    # The source itself as the destination.
    c.rt(resp_encode("GEORADIUS", src, "15", "37", "100", "km", "STORE", src), b":1\r\n")
    c.rt(resp_encode("ZRANGE", src, "0", "-1"), bulks("Catania"))
    c.rt(resp_encode("DEL", src), b":1\r\n")


def test_store_serves_a_blocked_pop(resp_port, c, key):
    src, dst = key + ":src", key + ":dst"
    c.rt(resp_encode("GEOADD", src, *SICILY), b":2\r\n")
    with Conn(resp_port) as waiter:
        waiter.send(resp_encode("BZPOPMIN", dst, "5"))
        time.sleep(0.2)
        c.rt(resp_encode("GEORADIUS", src, "15", "37", "200", "km", "STOREDIST", dst), b":2\r\n")
        expect = bulks(dst, "Catania", "56.441257870158204")
        assert waiter.read_exact(len(expect)) == expect
    c.rt(resp_encode("DEL", src, dst), b":2\r\n")


def test_keyspace_events(resp_port, c, key):
    src, dst = key + ":src", key + ":dst"
    c.rt(resp_encode("CONFIG", "SET", "notify-keyspace-events", "KEA"), b"+OK\r\n")
    try:
        with Conn(resp_port) as sub:
            sub.rt(resp_encode("PSUBSCRIBE", "__keyevent@*__:*"),
                   b"*3\r\n$10\r\npsubscribe\r\n$16\r\n__keyevent@*__:*\r\n:1\r\n")
            c.rt(resp_encode("GEOADD", src, *SICILY), b":2\r\n")
            c.rt(resp_encode("GEOADD", src, "NX", *SICILY), b":0\r\n")
            c.rt(resp_encode("GEORADIUS", src, "15", "37", "200", "km", "STORE", dst), b":2\r\n")
            c.rt(resp_encode("GEOSEARCHSTORE", dst, src, "FROMMEMBER", "Palermo", "BYRADIUS",
                             "1", "m"), b":1\r\n")
            c.rt(resp_encode("GEOSEARCHSTORE", dst, src, "FROMLONLAT", "0", "0", "BYRADIUS",
                             "1", "m"), b":0\r\n")
            got = []
            for _ in range(4):
                assert sub.read_line() == b"*4\r\n"
                for _ in range(5):  # pmessage, the pattern, the channel's length
                    sub.read_line()
                got.append(sub.read_line().rstrip(b"\r\n").split(b":", 1)[1])
                sub.read_line(), sub.read_line()  # the key
            assert got == [b"zadd", b"georadiusstore", b"geosearchstore", b"del"]
            sub.assert_quiet()
    finally:
        c.rt(resp_encode("CONFIG", "SET", "notify-keyspace-events", ""), b"+OK\r\n")
        c.rt(resp_encode("DEL", src), b":1\r\n")


def test_acl_checks_the_store_destination(resp_port, c, key):
    user = key + "_u"
    c.rt(resp_encode("GEOADD", key, *SICILY), b":2\r\n")
    c.rt(resp_encode("ACL", "SETUSER", user, "on", "nopass", f"~{key}*", "+@all"), b"+OK\r\n")
    noperm = (b"-NOPERM this user has no permissions to access one of the keys used as "
              b"arguments\r\n")
    try:
        with Conn(resp_port) as u:
            u.rt(resp_encode("AUTH", user, "x"), b"+OK\r\n")
            u.rt(resp_encode("GEORADIUS", key, "15", "37", "1", "km"), b"*0\r\n")
            u.rt(resp_encode("GEORADIUS", "elsewhere", "15", "37", "1", "km"), noperm)
            u.rt(resp_encode("GEORADIUS", key, "15", "37", "1", "km", "STORE", "elsewhere"),
                 noperm)
            u.rt(resp_encode("GEORADIUSBYMEMBER", key, "Palermo", "1", "km", "STOREDIST",
                             "elsewhere"), noperm)
            u.rt(resp_encode("GEOSEARCHSTORE", "elsewhere", key, "FROMMEMBER", "Palermo",
                             "BYRADIUS", "1", "km"), noperm)
    finally:
        c.rt(resp_encode("ACL", "DELUSER", user), b":1\r\n")
        c.rt(resp_encode("DEL", key), b":1\r\n")


def test_command_table_and_keys(c):
    c.rt(resp_encode("COMMAND", "GETKEYS", "georadius", "s", "0", "0", "1", "km"), bulks("s"))
    c.rt(resp_encode("COMMAND", "GETKEYS", "georadius", "s", "0", "0", "1", "km", "STORE", "a",
                     "STOREDIST", "b"), bulks("s", "a", "b"))
    c.rt(resp_encode("COMMAND", "GETKEYS", "geosearchstore", "d", "s", "FROMMEMBER", "m",
                     "BYRADIUS", "1", "km"), bulks("d", "s"))
    c.rt(resp_encode("COMMAND", "GETKEYSANDFLAGS", "georadiusbymember", "s", "m", "1", "km",
                     "STORE", "a"),
         b"*2\r\n*2\r\n$1\r\ns\r\n*2\r\n+RO\r\n+access\r\n*2\r\n$1\r\na\r\n*2\r\n+OW\r\n"
         b"+update\r\n")
    keyword = (b"*6\r\n$5\r\nflags\r\n*2\r\n+OW\r\n+update\r\n$12\r\nbegin_search\r\n*4\r\n"
               b"$4\r\ntype\r\n$7\r\nkeyword\r\n$4\r\nspec\r\n*4\r\n$7\r\nkeyword\r\n%s"
               b"$9\r\nstartfrom\r\n:6\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\nrange\r\n"
               b"$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n"
               b":0\r\n")
    c.rt(resp_encode("COMMAND", "INFO", "georadius"),
         b"*1\r\n*10\r\n$9\r\ngeoradius\r\n:-6\r\n*3\r\n+write\r\n+denyoom\r\n+movablekeys\r\n"
         b":1\r\n:1\r\n:1\r\n*3\r\n+@write\r\n+@geo\r\n+@slow\r\n*0\r\n*3\r\n*6\r\n$5\r\nflags"
         b"\r\n*2\r\n+RO\r\n+access\r\n$12\r\nbegin_search\r\n*4\r\n$4\r\ntype\r\n$5\r\nindex\r\n"
         b"$4\r\nspec\r\n*2\r\n$5\r\nindex\r\n:1\r\n$9\r\nfind_keys\r\n*4\r\n$4\r\ntype\r\n$5\r\n"
         b"range\r\n$4\r\nspec\r\n*6\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\n"
         b"limit\r\n:0\r\n" + keyword % b"$5\r\nSTORE\r\n" + keyword % b"$9\r\nSTOREDIST\r\n"
         + b"*0\r\n")
