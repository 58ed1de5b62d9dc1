"""Commands Redis 7.0's own test suite sends that Spinel lacked: SUBSTR (GETRANGE's name
before Redis 2.0), LOLWUT (its art and version line), and KEYS under Redis's guard against
abusive patterns (a match through more than 1000 `*`s fails).

The expectations are what redis-server 7.0 does (validated with CONFORMANCE_TARGET=redis);
the version in LOLWUT's last line is the server's own (Spinel reports the Redis version it
speaks, as INFO's redis_version does).
"""

import pytest

from resp_read import read_value
from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

NOT_INTEGER = b"-ERR value is not an integer or out of range\r\n"


@pytest.fixture
def c(resp_port):
    with Conn(resp_port) as conn:
        yield conn


def call(conn, *args):
    conn.send(resp_encode(*args))
    return read_value(conn)


def test_substr_is_getrange(c, key):
    c.rt(resp_encode("SET", key, "Hello World"), b"+OK\r\n")
    for start, end, want in [(0, 4, b"Hello"), (-3, -1, b"rld"), (5, 2, b""), (0, 100,
                             b"Hello World"), (-100, 1, b"He")]:
        assert call(c, "SUBSTR", key, start, end) == want
        assert call(c, "GETRANGE", key, start, end) == want
    c.rt(resp_encode("SUBSTR", key + "-none", 0, 1), b"$0\r\n\r\n")
    c.rt(resp_encode("SUBSTR", key, "x", 1), NOT_INTEGER)
    c.rt(resp_encode("SUBSTR", key, 0),
         b"-ERR wrong number of arguments for 'substr' command\r\n")
    c.rt(resp_encode("RPUSH", key + "-list", "a"), b":1\r\n")
    c.rt(resp_encode("SUBSTR", key + "-list", 0, 1),
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n")
    info = call(c, "COMMAND", "INFO", "substr")[0]
    text = [w.decode() if isinstance(w, bytes) else w for w in info[:2] + info[3:6]]
    assert text == ["substr", 4, 1, 1, 1]
    words = [{w.decode() if isinstance(w, bytes) else w for w in info[i]} for i in (2, 6)]
    assert words == [{"readonly"}, {"@read", "@string", "@slow"}]


def version_line(text):
    last = text.decode().rstrip("\n").split("\n")[-1]
    assert "Redis ver. " in last, text
    return last.split("Redis ver. ")[1]


def test_lolwut_version_line(c):
    version = call(c, "INFO", "server").decode().split("redis_version:")[1].split("\r\n")[0]
    for args in [(), ("VERSION", "7"), ("VERSION", "4"), ("version", "50", "1", "2")]:
        assert call(c, "LOLWUT", *args) == f"Redis ver. {version}\n".encode(), args
    assert version_line(call(c, "LOLWUT", "VERSION", "5")) == version
    assert version_line(call(c, "LOLWUT", "VERSION", "6")) == version
    c.rt(resp_encode("LOLWUT", "VERSION", "x"), NOT_INTEGER)
    c.rt(resp_encode("LOLWUT", "VERSION", "5", "10", "x"), NOT_INTEGER)
    call(c, "HELLO", "3")
    c.send(resp_encode("LOLWUT"))
    assert c.read_line() == f"={len(version) + 16}\r\n".encode()
    assert c.read_exact(len(version) + 18) == f"txt:Redis ver. {version}\n\r\n".encode()


def test_lolwut_schotter_rows_that_do_not_tumble(c):
    # Only rows from the third on are turned at random: two rows are drawn the same always.
    for args, art in [
        (("10", "2", "2"), "⠀⡤⠤⠤⠤⡤⠤⠤⠤⡄\n⠀⡇⠀⠀⠀⡇⠀⠀⠀⡇\n⠀⡧⠤⠤⠤⡧⠤⠤⠤⡇\n⠀⡇⠀⠀⠀⡇⠀⠀⠀⡇\n⠀⠧⠤⠤⠤⠧⠤⠤⠤⠇\n"),
        (("20", "3", "1"), "⠀⡤⠤⠤⠤⠤⠤⡤⠤⠤⠤⠤⠤⡤⠤⠤⠤⠤⠤⡄\n⠀⡇⠀⠀⠀⠀⠀⡇⠀⠀⠀⠀⠀⡇⠀⠀⠀⠀⠀⡇\n"
                           "⠀⡇⠀⠀⠀⠀⠀⡇⠀⠀⠀⠀⠀⡇⠀⠀⠀⠀⠀⡇\n⠀⠧⠤⠤⠤⠤⠤⠧⠤⠤⠤⠤⠤⠧⠤⠤⠤⠤⠤⠇\n"),
    ]:
        text = call(c, "LOLWUT", "VERSION", "5", *args).decode()
        assert text.startswith(art + "\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. ")
    # Arguments are clamped (columns to 1..1000), as in Redis.
    text = call(c, "LOLWUT", "VERSION", "5", "-7", "0", "0").decode()
    assert text.startswith("\u280b\n\nGeorg Nees"), repr(text)


def test_lolwut_skyline_shape(c):
    text = call(c, "LOLWUT", "VERSION", "6", "3", "2")
    rows = text.split(b"\n")
    assert [row.count(b"\x1b[0m") for row in rows[:2]] == [3, 3]
    assert rows[2:] == [b"Dedicated to the 8 bit game developers of past and present.",
                        b"Original 8 bit image from Plaguemon by hikikomori. Redis ver. "
                        + rows[3].split(b"Redis ver. ")[1], b""]


def test_keys_pattern_star_limit(make_server):
    server = make_server()
    with Conn(server.resp_port) as c:
        keys_star_limit(c)


def keys_star_limit(c):
    long_key = "a" * 50000
    c.rt(resp_encode("SET", long_key, "1"), b"+OK\r\n")
    assert call(c, "KEYS", "*?" * 50000) == []
    c.rt(resp_encode("FLUSHDB"), b"+OK\r\n")
    for stars, found in [(1000, True), (1001, False)]:
        name = "a" * stars
        c.rt(resp_encode("SET", name, "1"), b"+OK\r\n")
        assert call(c, "KEYS", "*a" * stars) == ([name.encode()] if found else []), stars
        c.rt(resp_encode("DEL", name), b":1\r\n")
