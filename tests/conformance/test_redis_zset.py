"""Sorted sets on the wire: every command's replies and errors byte for byte as redis-server
7.0 sends them, RESP2 and (where the reply type differs) RESP3. The transcripts were taken
from redis-server 7.0.15 and pass against it (CONFORMANCE_TARGET=redis) and against Spinel.

Each step is a command line (shell-quoted; `{k}` is the test's key, `\\xNN` a byte) and the
exact reply; `{K}` / `{K:suffix}` in a reply stand for the bulk string of that key.
"""

import re
import shlex

import pytest

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp


@pytest.fixture
def c(resp_port):
    with Conn(resp_port) as conn:
        yield conn


def read_reply(conn):
    """One whole RESP2/RESP3 reply, as raw bytes."""
    line = conn.read_line()
    kind = line[:1]
    if kind in (b"$", b"="):
        n = int(line[1:-2])
        return line if n < 0 else line + conn.read_exact(n + 2)
    if kind in (b"*", b"~", b">", b"%"):
        n = max(int(line[1:-2]), 0) * (2 if kind == b"%" else 1)
        return line + b"".join(read_reply(conn) for _ in range(n))
    return line


def command_args(line, key):
    args = []
    for arg in shlex.split(line.replace("{k}", key)):
        raw = arg.encode()
        if b"\\x" in raw:
            raw = raw.decode("unicode_escape").encode("latin-1")
        args.append(raw)
    return args


def expand_keys(expected, key):
    def bulk(match):
        name = key.encode() + match.group(1)
        return b"$%d\r\n%s" % (len(name), name)
    return re.sub(rb"\{K([^}]*)\}", bulk, expected)


def script(conn, key, protocol, steps):
    """Sends every step at once (pipelined, so the file runs in seconds) and compares each
    reply in order, then checks that nothing more came."""
    if protocol == 3:
        conn.send(resp_encode("HELLO", "3"))
        assert read_reply(conn).startswith(b"%")
    conn.send(b"".join(resp_encode(*command_args(line, key)) for line, _ in steps))
    for line, expected in steps:
        expected = expand_keys(expected, key)
        got = read_reply(conn)
        assert got == expected, f"{line}: got {got!r}, expected {expected!r}"
    conn.assert_quiet()


def test_zadd_scores_and_options(c, key):
    script(c, key, 2, [
        ("ZADD {k} 1 a 2 b 3 c", b":3\r\n"),
        ("ZADD {k} 1.1 d 0.1 e 1e20 f -inf g +inf h 1.5e-7 i", b":6\r\n"),
        ("ZRANGE {k} 0 -1 WITHSCORES",
         b"*18\r\n$1\r\ng\r\n$4\r\n-inf\r\n$1\r\ni\r\n$22\r\n"
         b"1.4999999999999999e-07\r\n$1\r\ne\r\n$19\r\n0.10000000000000001\r\n"
         b"$1\r\na\r\n$1\r\n1\r\n$1\r\nd\r\n$18\r\n1.1000000000000001\r\n$1\r\n"
         b"b\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nf\r\n$5\r\n1e+20\r\n"
         b"$1\r\nh\r\n$3\r\ninf\r\n"),
        ("ZADD {k} ch 10 a 20 b 3 c 4 new", b":3\r\n"),
        ("ZADD {k} gt ch 5 a 30 b", b":1\r\n"),
        ("ZADD {k} lt ch 5 a 30 b", b":1\r\n"),
        ("ZADD {k} xx 100 nothere", b":0\r\n"),
        ("ZADD {k} nx 100 a 7 another", b":1\r\n"),
        ("ZADD {k} xx gt ch 1 c 9 c", b":1\r\n"),
        ("ZADD {k} CH NX 1 new 1 x", b":1\r\n"),
        ("ZADD {k} ch 3 x 4 x", b":2\r\n"),
        ("ZADD {k} 1 dup 2 dup 3 dup2", b":2\r\n"),
        ("ZADD {k} -0 zero", b":1\r\n"),
        ("ZADD {k} 0x10 hex", b":1\r\n"),
        ('ZADD {k} " 1" bad', b"-ERR value is not a valid float\r\n"),
        ('ZADD {k} "1 " bad', b"-ERR value is not a valid float\r\n"),
        ("ZADD {k} 1e400 bad", b"-ERR value is not a valid float\r\n"),
        ("ZADD {k} nan bad", b"-ERR value is not a valid float\r\n"),
        ("ZADD {k} abc a", b"-ERR value is not a valid float\r\n"),
        ("ZRANGE {k} 0 -1 WITHSCORES",
         b"*32\r\n$1\r\ng\r\n$4\r\n-inf\r\n$4\r\nzero\r\n$1\r\n0\r\n$1\r\ni\r\n"
         b"$22\r\n1.4999999999999999e-07\r\n$1\r\ne\r\n$19\r\n"
         b"0.10000000000000001\r\n$1\r\nd\r\n$18\r\n1.1000000000000001\r\n$3\r\n"
         b"dup\r\n$1\r\n2\r\n$4\r\ndup2\r\n$1\r\n3\r\n$3\r\nnew\r\n$1\r\n4\r\n"
         b"$1\r\nx\r\n$1\r\n4\r\n$1\r\na\r\n$1\r\n5\r\n$7\r\nanother\r\n$1\r\n"
         b"7\r\n$1\r\nc\r\n$1\r\n9\r\n$3\r\nhex\r\n$2\r\n16\r\n$1\r\nb\r\n$2\r\n"
         b"30\r\n$1\r\nf\r\n$5\r\n1e+20\r\n$1\r\nh\r\n$3\r\ninf\r\n"),
        ("ZADD {k}:none xx 1 a", b":0\r\n"),
        ("EXISTS {k}:none", b":0\r\n"),
        ("ZADD {k}:none xx incr 1 a", b"$-1\r\n"),
    ])


def test_zadd_option_errors(c, key):
    script(c, key, 2, [
        ("ZADD {k} nx xx 1 a",
         b"-ERR XX and NX options at the same time are not compatible\r\n"),
        ("ZADD {k} gt lt 1 a",
         b"-ERR GT, LT, and/or NX options at the same time are not compatible\r\n"),
        ("ZADD {k} gt nx 1 a",
         b"-ERR GT, LT, and/or NX options at the same time are not compatible\r\n"),
        ("ZADD {k} lt nx 1 a",
         b"-ERR GT, LT, and/or NX options at the same time are not compatible\r\n"),
        ("ZADD {k} xx nx 1 a",
         b"-ERR XX and NX options at the same time are not compatible\r\n"),
        ("ZADD {k} lt gt incr 1 a 2 b",
         b"-ERR GT, LT, and/or NX options at the same time are not compatible\r\n"),
        ("ZADD {k} incr 1 a 2 b",
         b"-ERR INCR option supports a single increment-element pair\r\n"),
        ("ZADD {k} incr 1 a 2", b"-ERR syntax error\r\n"),
        ("ZADD {k} 1 a 2", b"-ERR syntax error\r\n"),
        ("ZADD {k} nx", b"-ERR wrong number of arguments for 'zadd' command\r\n"),
        ("ZADD {k} ch xx nx 1", b"-ERR syntax error\r\n"),
        ("ZADD {k} nx gt x a",
         b"-ERR GT, LT, and/or NX options at the same time are not compatible\r\n"),
        ("ZADD {k} nx 1 a extra", b"-ERR syntax error\r\n"),
        ("EXISTS {k}", b":0\r\n"),
    ])


def test_zadd_incr_and_zincrby(c, key):
    script(c, key, 2, [
        ("ZADD {k} incr 5 a", b"$1\r\n5\r\n"),
        ("ZADD {k} incr 1.5 a", b"$3\r\n6.5\r\n"),
        ("ZADD {k} incr nx 1 a", b"$-1\r\n"),
        ("ZADD {k} incr xx 1 nosuch", b"$-1\r\n"),
        ("ZADD {k} xx ch incr 1 a", b"$3\r\n7.5\r\n"),
        ("ZADD {k} incr gt -1 a", b"$-1\r\n"),
        ("ZADD {k} incr lt -1 a", b"$3\r\n6.5\r\n"),
        ("ZADD {k} gt incr 0 a", b"$-1\r\n"),
        ("ZADD {k} incr -inf h", b"$4\r\n-inf\r\n"),
        ("ZADD {k} incr +inf h", b"-ERR resulting score is not a number (NaN)\r\n"),
        ("ZINCRBY {k} 1 a", b"$3\r\n7.5\r\n"),
        ("ZINCRBY {k} 0.1 b", b"$19\r\n0.10000000000000001\r\n"),
        ("ZINCRBY {k} 0.2 b", b"$19\r\n0.30000000000000004\r\n"),
        ("ZINCRBY {k} nx a", b"-ERR syntax error\r\n"),
        ("ZINCRBY {k} abc a", b"-ERR value is not a valid float\r\n"),
        ("ZINCRBY {k} 1e308 q", b"$6\r\n1e+308\r\n"),
        ("ZINCRBY {k} 1e308 q", b"$3\r\ninf\r\n"),
        ("ZINCRBY {k} -inf q", b"-ERR resulting score is not a number (NaN)\r\n"),
        ("ZINCRBY {k} inf q", b"$3\r\ninf\r\n"),
        ("ZSCORE {k} q", b"$3\r\ninf\r\n"),
        ("ZINCRBY {k}:new 2.5 m", b"$3\r\n2.5\r\n"),
        ("ZRANGE {k} 0 -1 WITHSCORES",
         b"*8\r\n$1\r\nh\r\n$4\r\n-inf\r\n$1\r\nb\r\n$19\r\n"
         b"0.30000000000000004\r\n$1\r\na\r\n$3\r\n7.5\r\n$1\r\nq\r\n$3\r\n"
         b"inf\r\n"),
    ])


def test_zscore_zmscore_zcard_zrank(c, key):
    script(c, key, 2, [
        ("ZADD {k} 1 a 2 b 3 c 1.1 d", b":4\r\n"),
        ("ZSCORE {k} d", b"$18\r\n1.1000000000000001\r\n"),
        ("ZSCORE {k} nosuch", b"$-1\r\n"),
        ("ZSCORE {k}:none a", b"$-1\r\n"),
        ("ZMSCORE {k} a nosuch d",
         b"*3\r\n$1\r\n1\r\n$-1\r\n$18\r\n1.1000000000000001\r\n"),
        ("ZMSCORE {k}:none a b", b"*2\r\n$-1\r\n$-1\r\n"),
        ("ZCARD {k}", b":4\r\n"),
        ("ZCARD {k}:none", b":0\r\n"),
        ("ZRANK {k} c", b":3\r\n"),
        ("ZREVRANK {k} c", b":0\r\n"),
        ("ZRANK {k} a", b":0\r\n"),
        ("ZREVRANK {k} a", b":3\r\n"),
        ("ZRANK {k} nosuch", b"$-1\r\n"),
        ("ZREVRANK {k}:none a", b"$-1\r\n"),
    ])


def test_zcount_zlexcount(c, key):
    script(c, key, 2, [
        ("ZADD {k} 1 a 2 b 3 c 4 d", b":4\r\n"),
        ("ZCOUNT {k} -inf +inf", b":4\r\n"),
        ("ZCOUNT {k} (1 3", b":2\r\n"),
        ("ZCOUNT {k} 1 (3", b":2\r\n"),
        ("ZCOUNT {k} (1 (1", b":0\r\n"),
        ("ZCOUNT {k} 3 1", b":0\r\n"),
        ("ZCOUNT {k} abc 3", b"-ERR min or max is not a float\r\n"),
        ("ZCOUNT {k} 1 (abc", b"-ERR min or max is not a float\r\n"),
        ("ZCOUNT {k} ( 5", b":4\r\n"),
        ('ZCOUNT {k} " 2" 5', b":3\r\n"),
        ("ZCOUNT {k} 0x2 5", b":3\r\n"),
        ("ZCOUNT {k}:none 0 1", b":0\r\n"),
        ("ZCOUNT {k}:none x 1", b"-ERR min or max is not a float\r\n"),
        ("ZADD {k}:l 0 a 0 b 0 c 0 d 0 e", b":5\r\n"),
        ("ZLEXCOUNT {k}:l - +", b":5\r\n"),
        ("ZLEXCOUNT {k}:l [b (e", b":3\r\n"),
        ("ZLEXCOUNT {k}:l (b [e", b":3\r\n"),
        ("ZLEXCOUNT {k}:l [e [b", b":0\r\n"),
        ("ZLEXCOUNT {k}:l + -", b":0\r\n"),
        ("ZLEXCOUNT {k}:l b e", b"-ERR min or max not valid string range item\r\n"),
        ("ZLEXCOUNT {k}:l [b e", b"-ERR min or max not valid string range item\r\n"),
        ("ZLEXCOUNT {k}:l -a +", b"-ERR min or max not valid string range item\r\n"),
        ("ZLEXCOUNT {k}:none - +", b":0\r\n"),
        ("ZLEXCOUNT {k}:none x +", b"-ERR min or max not valid string range item\r\n"),
    ])


def test_zrange_by_rank(c, key):
    script(c, key, 2, [
        ("ZADD {k} 1 a 2 b 3 c 4 d 5 e", b":5\r\n"),
        ("ZRANGE {k} 0 -1",
         b"*5\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n"),
        ("ZRANGE {k} 0 -1 WITHSCORES",
         b"*10\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n"
         b"3\r\n$1\r\nd\r\n$1\r\n4\r\n$1\r\ne\r\n$1\r\n5\r\n"),
        ("ZRANGE {k} 2 1000", b"*3\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n"),
        ("ZRANGE {k} -2 -1 withscores",
         b"*4\r\n$1\r\nd\r\n$1\r\n4\r\n$1\r\ne\r\n$1\r\n5\r\n"),
        ("ZRANGE {k} -100 1", b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"),
        ("ZRANGE {k} 5 3", b"*0\r\n"),
        ("ZRANGE {k} 0 -1 rev withscores",
         b"*10\r\n$1\r\ne\r\n$1\r\n5\r\n$1\r\nd\r\n$1\r\n4\r\n$1\r\nc\r\n$1\r\n"
         b"3\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\na\r\n$1\r\n1\r\n"),
        ("ZRANGE {k} 0 1 REV", b"*2\r\n$1\r\ne\r\n$1\r\nd\r\n"),
        ("ZREVRANGE {k} 0 1 WITHSCORES",
         b"*4\r\n$1\r\ne\r\n$1\r\n5\r\n$1\r\nd\r\n$1\r\n4\r\n"),
        ("ZREVRANGE {k} -1 -1", b"*1\r\n$1\r\na\r\n"),
        ("ZRANGE {k} 0 9223372036854775807",
         b"*5\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n"),
        ("ZRANGE {k} 0 9223372036854775808",
         b"-ERR value is not an integer or out of range\r\n"),
        ("ZRANGE {k} x 1", b"-ERR value is not an integer or out of range\r\n"),
        ("ZRANGE {k} 0 -1 limit 0 1",
         b"-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX\r\n"),
        ("ZRANGE {k} 0 -1 limit 0 -1",
         b"*5\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n"),
        ("ZRANGE {k} 0 -1 limit 0", b"-ERR syntax error\r\n"),
        ("ZRANGE {k} 0 -1 foo", b"-ERR syntax error\r\n"),
        ("ZRANGE {k} 0 -1 rev rev", b"-ERR syntax error\r\n"),
        ("ZRANGE {k} 0 -1 bylex byscore", b"-ERR syntax error\r\n"),
        ("ZREVRANGE {k} 0 1 rev", b"-ERR syntax error\r\n"),
        ("ZREVRANGE {k} 0 1 byscore", b"-ERR syntax error\r\n"),
        ("ZRANGE {k}:none 0 -1", b"*0\r\n"),
        ("ZRANGE {k}:none 0 -1 withscores", b"*0\r\n"),
    ])


def test_zrange_by_score(c, key):
    script(c, key, 2, [
        ("ZADD {k} 1 a 2 b 3 c 4 d 5 e -inf m +inf p", b":7\r\n"),
        ("ZRANGEBYSCORE {k} -inf +inf withscores",
         b"*14\r\n$1\r\nm\r\n$4\r\n-inf\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n"
         b"$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nd\r\n$1\r\n4\r\n$1\r\ne\r\n"
         b"$1\r\n5\r\n$1\r\np\r\n$3\r\ninf\r\n"),
        ("ZRANGEBYSCORE {k} (1 (4", b"*2\r\n$1\r\nb\r\n$1\r\nc\r\n"),
        ("ZRANGEBYSCORE {k} (1 (4 limit 1 2", b"*1\r\n$1\r\nc\r\n"),
        ("ZRANGEBYSCORE {k} 0 100 limit -1 2", b"*0\r\n"),
        ("ZRANGEBYSCORE {k} 0 100 limit 0 -1",
         b"*5\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n"),
        ("ZRANGEBYSCORE {k} 0 100 limit 0 0", b"*0\r\n"),
        ("ZRANGEBYSCORE {k} 0 100 limit 10 1", b"*0\r\n"),
        ("ZRANGEBYSCORE {k} 0 100 limit 0", b"-ERR syntax error\r\n"),
        ("ZRANGEBYSCORE {k} 0 100 limit x 1",
         b"-ERR value is not an integer or out of range\r\n"),
        ("ZRANGEBYSCORE {k} -inf +inf limit 1 2 limit 2 3",
         b"*3\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n"),
        ("ZRANGEBYSCORE {k} -inf +inf withscores withscores",
         b"*14\r\n$1\r\nm\r\n$4\r\n-inf\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n"
         b"$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nd\r\n$1\r\n4\r\n$1\r\ne\r\n"
         b"$1\r\n5\r\n$1\r\np\r\n$3\r\ninf\r\n"),
        ("ZRANGEBYSCORE {k} +inf -inf", b"*0\r\n"),
        ("ZRANGEBYSCORE {k} (inf +inf", b"*0\r\n"),
        ("ZRANGEBYSCORE {k} -1e400 (1e400",
         b"*6\r\n$1\r\nm\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\n"
         b"e\r\n"),
        ("ZRANGEBYSCORE {k} -INF +Infinity",
         b"*7\r\n$1\r\nm\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\n"
         b"e\r\n$1\r\np\r\n"),
        ("ZRANGEBYSCORE {k} nan 1", b"-ERR min or max is not a float\r\n"),
        ("ZRANGEBYSCORE {k} (nan 1", b"-ERR min or max is not a float\r\n"),
        ("ZRANGEBYSCORE {k} 1 rev", b"-ERR min or max is not a float\r\n"),
        ("ZREVRANGEBYSCORE {k} +inf -inf withscores",
         b"*14\r\n$1\r\np\r\n$3\r\ninf\r\n$1\r\ne\r\n$1\r\n5\r\n$1\r\nd\r\n"
         b"$1\r\n4\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\na\r\n"
         b"$1\r\n1\r\n$1\r\nm\r\n$4\r\n-inf\r\n"),
        ("ZREVRANGEBYSCORE {k} 4 (1 limit 1 1", b"*1\r\n$1\r\nc\r\n"),
        ("ZREVRANGEBYSCORE {k} -inf +inf", b"*0\r\n"),
        ("ZRANGE {k} (1 5 byscore",
         b"*4\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n"),
        ("ZRANGE {k} 5 (1 byscore rev limit 0 2 withscores",
         b"*4\r\n$1\r\ne\r\n$1\r\n5\r\n$1\r\nd\r\n$1\r\n4\r\n"),
        ("ZRANGE {k} +inf -inf byscore rev limit 1 100",
         b"*6\r\n$1\r\ne\r\n$1\r\nd\r\n$1\r\nc\r\n$1\r\nb\r\n$1\r\na\r\n$1\r\n"
         b"m\r\n"),
        ("ZRANGE {k} 1 2 limit 0 1 withscores byscore", b"*2\r\n$1\r\na\r\n$1\r\n1\r\n"),
        ("ZRANGE {k} a 2 byscore", b"-ERR min or max is not a float\r\n"),
    ])


def test_zrange_by_lex(c, key):
    script(c, key, 2, [
        ("ZADD {k} 0 a 0 b 0 c 0 d 0 e 0 f 0 g", b":7\r\n"),
        ("ZRANGEBYLEX {k} - +",
         b"*7\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n$1\r\n"
         b"f\r\n$1\r\ng\r\n"),
        ("ZRANGEBYLEX {k} [b (e", b"*3\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n"),
        ("ZRANGEBYLEX {k} (b [e limit 1 2", b"*2\r\n$1\r\nd\r\n$1\r\ne\r\n"),
        ("ZRANGEBYLEX {k} - + limit 2 -1",
         b"*5\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n$1\r\nf\r\n$1\r\ng\r\n"),
        ("ZREVRANGEBYLEX {k} + -",
         b"*7\r\n$1\r\ng\r\n$1\r\nf\r\n$1\r\ne\r\n$1\r\nd\r\n$1\r\nc\r\n$1\r\n"
         b"b\r\n$1\r\na\r\n"),
        ("ZREVRANGEBYLEX {k} [e (b", b"*3\r\n$1\r\ne\r\n$1\r\nd\r\n$1\r\nc\r\n"),
        ("ZREVRANGEBYLEX {k} (e [b", b"*3\r\n$1\r\nd\r\n$1\r\nc\r\n$1\r\nb\r\n"),
        ("ZREVRANGEBYLEX {k} + - limit 1 2", b"*2\r\n$1\r\nf\r\n$1\r\ne\r\n"),
        ("ZRANGEBYLEX {k} b e", b"-ERR min or max not valid string range item\r\n"),
        ("ZRANGEBYLEX {k} [b e", b"-ERR min or max not valid string range item\r\n"),
        ("ZRANGEBYLEX {k} + -", b"*0\r\n"),
        ("ZRANGEBYLEX {k} [e [b", b"*0\r\n"),
        ("ZRANGEBYLEX {k} [ +",
         b"*7\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n$1\r\n"
         b"f\r\n$1\r\ng\r\n"),
        ("ZRANGEBYLEX {k} ( +",
         b"*7\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n$1\r\n"
         b"f\r\n$1\r\ng\r\n"),
        ("ZRANGEBYLEX {k} -a +", b"-ERR min or max not valid string range item\r\n"),
        ("ZRANGEBYLEX {k} - + withscores",
         b"-ERR syntax error, WITHSCORES not supported in combination with BYLEX\r\n"),
        ("ZRANGE {k} - + bylex",
         b"*7\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n$1\r\n"
         b"f\r\n$1\r\ng\r\n"),
        ("ZRANGE {k} [c - bylex rev", b"*3\r\n$1\r\nc\r\n$1\r\nb\r\n$1\r\na\r\n"),
        ("ZRANGE {k} - + bylex withscores",
         b"-ERR syntax error, WITHSCORES not supported in combination with BYLEX\r\n"),
        ("ZRANGE {k} [a [z bylex rev", b"*0\r\n"),
        ("ZRANGE {k} [z [a bylex rev",
         b"*7\r\n$1\r\ng\r\n$1\r\nf\r\n$1\r\ne\r\n$1\r\nd\r\n$1\r\nc\r\n$1\r\n"
         b"b\r\n$1\r\na\r\n"),
        ("ZRANGE {k} - + bylex limit 1 1", b"*1\r\n$1\r\nb\r\n"),
        ("ZADD {k}:mixed 1 c 2 a 3 b", b":3\r\n"),
        ("ZRANGEBYLEX {k}:mixed [b [d", b"*3\r\n$1\r\nc\r\n$1\r\na\r\n$1\r\nb\r\n"),
        ("ZRANGEBYLEX {k}:mixed - [b", b"*0\r\n"),
        ("ZRANGEBYLEX {k}:mixed [a +", b"*3\r\n$1\r\nc\r\n$1\r\na\r\n$1\r\nb\r\n"),
        ("ZREVRANGEBYLEX {k}:mixed + [b", b"*1\r\n$1\r\nb\r\n"),
        ("ZLEXCOUNT {k}:mixed [a +", b":3\r\n"),
        ('ZADD {k}:bin 0 "a\\x00b" 0 "a" 0 "a\\xff" 0 ""', b":4\r\n"),
        ("ZRANGE {k}:bin 0 -1",
         b"*4\r\n$0\r\n\r\n$1\r\na\r\n$3\r\na\x00b\r\n$2\r\na\xff\r\n"),
        ("ZRANGEBYLEX {k}:bin ( [a", b"*1\r\n$1\r\na\r\n"),
    ])


def test_zrangestore(c, key):
    script(c, key, 2, [
        ("ZADD {k}:src 1 a 2 b 3 c 4 d", b":4\r\n"),
        ("ZRANGESTORE {k} {k}:src 0 1", b":2\r\n"),
        ("ZRANGE {k} 0 -1 WITHSCORES",
         b"*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n"),
        ("ZRANGESTORE {k} {k}:src (1 +inf byscore limit 1 1", b":1\r\n"),
        ("ZRANGE {k} 0 -1 WITHSCORES", b"*2\r\n$1\r\nc\r\n$1\r\n3\r\n"),
        ("ZRANGESTORE {k} {k}:src [b + bylex", b":3\r\n"),
        ("ZRANGE {k} 0 -1 WITHSCORES",
         b"*6\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nd\r\n$1\r\n"
         b"4\r\n"),
        ("ZRANGESTORE {k} {k}:src 0 -1 rev", b":4\r\n"),
        ("ZRANGE {k} 0 -1", b"*4\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n"),
        ("ZRANGESTORE {k} {k}:src 0 -1 withscores", b"-ERR syntax error\r\n"),
        ("ZRANGESTORE {k} {k}:src 0 -1 limit 0 1",
         b"-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX\r\n"),
        ("EXPIRE {k} 100", b":1\r\n"),
        ("ZRANGESTORE {k} {k}:src 0 0", b":1\r\n"),
        ("TTL {k}", b":-1\r\n"),
        ("ZRANGESTORE {k} {k}:src 5 6", b":0\r\n"),
        ("EXISTS {k}", b":0\r\n"),
        ("ZRANGESTORE {k} {k}:src 0 0", b":1\r\n"),
        ("ZRANGESTORE {k} {k}:none 0 -1", b":0\r\n"),
        ("EXISTS {k}", b":0\r\n"),
        ("SET {k}:str v", b"+OK\r\n"),
        ("ZRANGESTORE {k} {k}:str 0 -1",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZRANGESTORE {k}:str {k}:src 0 -1", b":4\r\n"),
        ("TYPE {k}:str", b"+zset\r\n"),
    ])


def test_zrem_and_zremrange(c, key):
    script(c, key, 2, [
        ("ZADD {k} 1 a 2 b 3 c", b":3\r\n"),
        ("ZREM {k} a nosuch b", b":2\r\n"),
        ("ZREM {k} a", b":0\r\n"),
        ("ZREM {k}:none a", b":0\r\n"),
        ("ZREM {k} c", b":1\r\n"),
        ("EXISTS {k}", b":0\r\n"),
        ("ZADD {k} 1 a 2 b 3 c 4 d 5 e", b":5\r\n"),
        ("ZREMRANGEBYRANK {k} 1 2", b":2\r\n"),
        ("ZRANGE {k} 0 -1", b"*3\r\n$1\r\na\r\n$1\r\nd\r\n$1\r\ne\r\n"),
        ("ZREMRANGEBYRANK {k} x 1", b"-ERR value is not an integer or out of range\r\n"),
        ("ZREMRANGEBYRANK {k} 5 10", b":0\r\n"),
        ("ZREMRANGEBYRANK {k} -9223372036854775808 -9223372036854775808", b":0\r\n"),
        ("ZREMRANGEBYSCORE {k} (1 4", b":1\r\n"),
        ("ZRANGE {k} 0 -1 WITHSCORES",
         b"*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\ne\r\n$1\r\n5\r\n"),
        ("ZREMRANGEBYSCORE {k} a 4", b"-ERR min or max is not a float\r\n"),
        ("ZREMRANGEBYSCORE {k} -inf +inf", b":2\r\n"),
        ("EXISTS {k}", b":0\r\n"),
        ("ZREMRANGEBYSCORE {k}:none 0 1", b":0\r\n"),
        ("ZADD {k} 0 a 0 b 0 c 0 d", b":4\r\n"),
        ("ZREMRANGEBYLEX {k} [b (d", b":2\r\n"),
        ("ZRANGE {k} 0 -1", b"*2\r\n$1\r\na\r\n$1\r\nd\r\n"),
        ("ZREMRANGEBYLEX {k} x y", b"-ERR min or max not valid string range item\r\n"),
        ("ZREMRANGEBYLEX {k} + -", b":0\r\n"),
        ("ZREMRANGEBYLEX {k} - +", b":2\r\n"),
        ("EXISTS {k}", b":0\r\n"),
        ("ZREMRANGEBYLEX {k}:none - +", b":0\r\n"),
    ])


def test_zpopmin_zpopmax(c, key):
    script(c, key, 2, [
        ("ZADD {k} 1 a 2 b 3 c 4 d 5 e", b":5\r\n"),
        ("ZPOPMIN {k}", b"*2\r\n$1\r\na\r\n$1\r\n1\r\n"),
        ("ZPOPMAX {k}", b"*2\r\n$1\r\ne\r\n$1\r\n5\r\n"),
        ("ZPOPMIN {k} 2", b"*4\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n"),
        ("ZPOPMIN {k} 0", b"*0\r\n"),
        ("ZPOPMIN {k} -1", b"-ERR value is out of range, must be positive\r\n"),
        ("ZPOPMIN {k} x", b"-ERR value is out of range, must be positive\r\n"),
        ("ZPOPMIN {k} 1 2", b"-ERR syntax error\r\n"),
        ("ZPOPMAX {k} 10", b"*2\r\n$1\r\nd\r\n$1\r\n4\r\n"),
        ("EXISTS {k}", b":0\r\n"),
        ("ZPOPMIN {k}", b"*0\r\n"),
        ("ZPOPMIN {k} 3", b"*0\r\n"),
        ("ZPOPMAX {k} 0", b"*0\r\n"),
    ])


def test_zmpop(c, key):
    script(c, key, 2, [
        ("ZADD {k} 1 a 2 b 3 c", b":3\r\n"),
        ("ZADD {k}:2 1 x", b":1\r\n"),
        ("ZMPOP 2 {k}:none {k} min", b"*2\r\n{K}\r\n*1\r\n*2\r\n$1\r\na\r\n$1\r\n1\r\n"),
        ("ZMPOP 2 {k}:none {k} max count 5",
         b"*2\r\n{K}\r\n*2\r\n*2\r\n$1\r\nc\r\n$1\r\n3\r\n*2\r\n$1\r\nb\r\n"
         b"$1\r\n2\r\n"),
        ("ZMPOP 2 {k} {k}:2 MIN COUNT 2",
         b"*2\r\n{K:2}\r\n*1\r\n*2\r\n$1\r\nx\r\n$1\r\n1\r\n"),
        ("ZMPOP 1 {k}:none min", b"*-1\r\n"),
        ("ZMPOP 0 {k} min", b"-ERR numkeys should be greater than 0\r\n"),
        ("ZMPOP -1 {k} min", b"-ERR numkeys should be greater than 0\r\n"),
        ("ZMPOP x {k} min", b"-ERR numkeys should be greater than 0\r\n"),
        ("ZMPOP 3 {k} min", b"-ERR syntax error\r\n"),
        ("ZMPOP 1 {k} foo", b"-ERR syntax error\r\n"),
        ("ZMPOP 1 {k} min count 0", b"-ERR count should be greater than 0\r\n"),
        ("ZMPOP 1 {k} min count x", b"-ERR count should be greater than 0\r\n"),
        ("ZMPOP 1 {k} min count 1 count 1", b"-ERR syntax error\r\n"),
        ("ZMPOP 1 {k} min bar", b"-ERR syntax error\r\n"),
        ("ZMPOP 1 {k} min count", b"-ERR syntax error\r\n"),
        ("EXISTS {k}:2", b":0\r\n"),
    ])


def test_zunion_zinter_zdiff(c, key):
    script(c, key, 2, [
        ("ZADD {k}:a 1 x 2 y 3 z", b":3\r\n"),
        ("ZADD {k}:b 10 y 20 z 30 w", b":3\r\n"),
        ("ZADD {k}:c 100 z", b":1\r\n"),
        ("ZUNION 2 {k}:a {k}:b", b"*4\r\n$1\r\nx\r\n$1\r\ny\r\n$1\r\nz\r\n$1\r\nw\r\n"),
        ("ZUNION 2 {k}:a {k}:b WITHSCORES",
         b"*8\r\n$1\r\nx\r\n$1\r\n1\r\n$1\r\ny\r\n$2\r\n12\r\n$1\r\nz\r\n$2\r\n"
         b"23\r\n$1\r\nw\r\n$2\r\n30\r\n"),
        ("ZUNION 3 {k}:a {k}:b {k}:c withscores weights 1 2 3",
         b"*8\r\n$1\r\nx\r\n$1\r\n1\r\n$1\r\ny\r\n$2\r\n22\r\n$1\r\nw\r\n$2\r\n"
         b"60\r\n$1\r\nz\r\n$3\r\n343\r\n"),
        ("ZUNION 2 {k}:a {k}:b aggregate min withscores",
         b"*8\r\n$1\r\nx\r\n$1\r\n1\r\n$1\r\ny\r\n$1\r\n2\r\n$1\r\nz\r\n$1\r\n"
         b"3\r\n$1\r\nw\r\n$2\r\n30\r\n"),
        ("ZUNION 2 {k}:a {k}:b aggregate max withscores",
         b"*8\r\n$1\r\nx\r\n$1\r\n1\r\n$1\r\ny\r\n$2\r\n10\r\n$1\r\nz\r\n$2\r\n"
         b"20\r\n$1\r\nw\r\n$2\r\n30\r\n"),
        ("ZUNION 2 {k}:a {k}:b aggregate foo", b"-ERR syntax error\r\n"),
        ("ZUNION 2 {k}:a {k}:b weights 1", b"-ERR syntax error\r\n"),
        ("ZUNION 2 {k}:a {k}:b weights 1 x", b"-ERR weight value is not a float\r\n"),
        ("ZUNION 2 {k}:a {k}:b weights 1 2 3", b"-ERR syntax error\r\n"),
        ("ZUNION 0 {k}:a",
         b"-ERR at least 1 input key is needed for 'zunion' command\r\n"),
        ("ZUNION -1 {k}:a",
         b"-ERR at least 1 input key is needed for 'zunion' command\r\n"),
        ("ZUNION x {k}:a", b"-ERR value is not an integer or out of range\r\n"),
        ("ZUNION 3 {k}:a {k}:b", b"-ERR syntax error\r\n"),
        ("ZUNION 2 {k}:a {k}:none withscores",
         b"*6\r\n$1\r\nx\r\n$1\r\n1\r\n$1\r\ny\r\n$1\r\n2\r\n$1\r\nz\r\n$1\r\n"
         b"3\r\n"),
        ("ZINTER 2 {k}:a {k}:b withscores",
         b"*4\r\n$1\r\ny\r\n$2\r\n12\r\n$1\r\nz\r\n$2\r\n23\r\n"),
        ("ZINTER 3 {k}:a {k}:b {k}:c withscores", b"*2\r\n$1\r\nz\r\n$3\r\n123\r\n"),
        ("ZINTER 2 {k}:a {k}:none", b"*0\r\n"),
        ("ZINTER 2 {k}:a {k}:b aggregate max withscores weights 2 3",
         b"*4\r\n$1\r\ny\r\n$2\r\n30\r\n$1\r\nz\r\n$2\r\n60\r\n"),
        ("ZINTER 2 {k}:a {k}:b limit 1", b"-ERR syntax error\r\n"),
        ("ZINTER 2 {k}:a {k}:a withscores",
         b"*6\r\n$1\r\nx\r\n$1\r\n2\r\n$1\r\ny\r\n$1\r\n4\r\n$1\r\nz\r\n$1\r\n"
         b"6\r\n"),
        ("ZDIFF 2 {k}:a {k}:b withscores", b"*2\r\n$1\r\nx\r\n$1\r\n1\r\n"),
        ("ZDIFF 2 {k}:a {k}:b weights 1 2", b"-ERR syntax error\r\n"),
        ("ZDIFF 2 {k}:a {k}:b aggregate min", b"-ERR syntax error\r\n"),
        ("ZDIFF 1 {k}:a", b"*3\r\n$1\r\nx\r\n$1\r\ny\r\n$1\r\nz\r\n"),
        ("ZDIFF 2 {k}:none {k}:a", b"*0\r\n"),
        ("ZDIFF 0 {k}:a", b"-ERR at least 1 input key is needed for 'zdiff' command\r\n"),
        ("ZINTERCARD 2 {k}:a {k}:b", b":2\r\n"),
        ("ZINTERCARD 2 {k}:a {k}:b limit 1", b":1\r\n"),
        ("ZINTERCARD 2 {k}:a {k}:b limit 0", b":2\r\n"),
        ("ZINTERCARD 2 {k}:a {k}:b limit -1", b"-ERR LIMIT can't be negative\r\n"),
        ("ZINTERCARD 2 {k}:a {k}:b limit x", b"-ERR LIMIT can't be negative\r\n"),
        ("ZINTERCARD 2 {k}:a {k}:b withscores", b"-ERR syntax error\r\n"),
        ("ZINTERCARD 0 {k}:a",
         b"-ERR at least 1 input key is needed for 'zintercard' command\r\n"),
        ("ZINTERCARD 3 {k}:a {k}:b", b"-ERR syntax error\r\n"),
        ("ZINTERCARD 1 {k}:none", b":0\r\n"),
        ("ZADD {k}:inf 1 a", b":1\r\n"),
        ("ZADD {k}:ninf 1 a", b":1\r\n"),
        ("ZUNION 2 {k}:inf {k}:ninf weights inf -inf withscores",
         b"*2\r\n$1\r\na\r\n$1\r\n0\r\n"),
        ("ZINTER 2 {k}:inf {k}:ninf weights inf -inf withscores",
         b"*2\r\n$1\r\na\r\n$1\r\n0\r\n"),
        ("ZADD {k}:i1 inf a", b":1\r\n"),
        ("ZUNION 1 {k}:i1 weights 0 withscores", b"*2\r\n$1\r\na\r\n$1\r\n0\r\n"),
        ("ZINTER 2 {k}:i1 {k}:i1 weights 0 1 withscores",
         b"*2\r\n$1\r\na\r\n$3\r\ninf\r\n"),
    ])


def test_zstore_forms(c, key):
    script(c, key, 2, [
        ("ZADD {k}:a 1 x 2 y 3 z", b":3\r\n"),
        ("ZADD {k}:b 10 y 20 z 30 w", b":3\r\n"),
        ("ZUNIONSTORE {k} 2 {k}:a {k}:b", b":4\r\n"),
        ("ZRANGE {k} 0 -1 WITHSCORES",
         b"*8\r\n$1\r\nx\r\n$1\r\n1\r\n$1\r\ny\r\n$2\r\n12\r\n$1\r\nz\r\n$2\r\n"
         b"23\r\n$1\r\nw\r\n$2\r\n30\r\n"),
        ("ZUNIONSTORE {k} 2 {k}:a {k}:b withscores", b"-ERR syntax error\r\n"),
        ("ZINTERSTORE {k} 2 {k}:a {k}:b weights 1 -1", b":2\r\n"),
        ("ZRANGE {k} 0 -1 WITHSCORES",
         b"*4\r\n$1\r\nz\r\n$3\r\n-17\r\n$1\r\ny\r\n$2\r\n-8\r\n"),
        ("ZDIFFSTORE {k} 2 {k}:a {k}:b", b":1\r\n"),
        ("ZRANGE {k} 0 -1 WITHSCORES", b"*2\r\n$1\r\nx\r\n$1\r\n1\r\n"),
        ("EXPIRE {k} 100", b":1\r\n"),
        ("ZUNIONSTORE {k} 1 {k}:a weights 2", b":3\r\n"),
        ("TTL {k}", b":-1\r\n"),
        ("ZRANGE {k} 0 -1 WITHSCORES",
         b"*6\r\n$1\r\nx\r\n$1\r\n2\r\n$1\r\ny\r\n$1\r\n4\r\n$1\r\nz\r\n$1\r\n"
         b"6\r\n"),
        ("ZINTERSTORE {k} 2 {k}:a {k}:none", b":0\r\n"),
        ("EXISTS {k}", b":0\r\n"),
        ("ZUNIONSTORE {k} 1 {k}", b":0\r\n"),
        ("ZUNIONSTORE {k} 0 {k}:a",
         b"-ERR at least 1 input key is needed for 'zunionstore' command\r\n"),
        ("ZUNIONSTORE {k} 2 {k}:a", b"-ERR syntax error\r\n"),
        ("ZINTERSTORE {k} 2 {k}:a {k}:b limit 1", b"-ERR syntax error\r\n"),
        ("SET {k}:str v", b"+OK\r\n"),
        ("ZUNIONSTORE {k}:str 1 {k}:a", b":3\r\n"),
        ("TYPE {k}:str", b"+zset\r\n"),
        ("ZDIFFSTORE {k} 2 {k}:a {k}:str", b":0\r\n"),
        ("ZUNIONSTORE {k} 2 {k}:a {k}:str", b":3\r\n"),
    ])


def test_zscan_small(c, key):
    script(c, key, 2, [
        ("ZADD {k} 1 a 2 b 3 c 4 d 1.5 ab", b":5\r\n"),
        ("ZSCAN {k} 0",
         b"*2\r\n$1\r\n0\r\n*10\r\n$1\r\na\r\n$1\r\n1\r\n$2\r\nab\r\n$3\r\n"
         b"1.5\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nd\r\n$1\r\n"
         b"4\r\n"),
        ("ZSCAN {k} 0 MATCH *b*",
         b"*2\r\n$1\r\n0\r\n*4\r\n$2\r\nab\r\n$3\r\n1.5\r\n$1\r\nb\r\n$1\r\n"
         b"2\r\n"),
        ("ZSCAN {k} 0 match a*",
         b"*2\r\n$1\r\n0\r\n*4\r\n$1\r\na\r\n$1\r\n1\r\n$2\r\nab\r\n$3\r\n"
         b"1.5\r\n"),
        ("ZSCAN {k} 0 count 1",
         b"*2\r\n$1\r\n0\r\n*10\r\n$1\r\na\r\n$1\r\n1\r\n$2\r\nab\r\n$3\r\n"
         b"1.5\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nd\r\n$1\r\n"
         b"4\r\n"),
        ("ZSCAN {k} 0 count 0", b"-ERR syntax error\r\n"),
        ("ZSCAN {k} 0 count x", b"-ERR value is not an integer or out of range\r\n"),
        ("ZSCAN {k} 0 type zset", b"-ERR syntax error\r\n"),
        ("ZSCAN {k} 0 match", b"-ERR syntax error\r\n"),
        ("ZSCAN {k} x", b"-ERR invalid cursor\r\n"),
        ("ZSCAN {k} -1",
         b"*2\r\n$1\r\n0\r\n*10\r\n$1\r\na\r\n$1\r\n1\r\n$2\r\nab\r\n$3\r\n"
         b"1.5\r\n$1\r\nb\r\n$1\r\n2\r\n$1\r\nc\r\n$1\r\n3\r\n$1\r\nd\r\n$1\r\n"
         b"4\r\n"),
        ('ZSCAN {k} " 1"', b"-ERR invalid cursor\r\n"),
        ("ZSCAN {k}:none 0", b"*2\r\n$1\r\n0\r\n*0\r\n"),
        ("ZSCAN {k}:none 0 count 0", b"*2\r\n$1\r\n0\r\n*0\r\n"),
        ("ZSCAN {k}:none x", b"-ERR invalid cursor\r\n"),
    ])


def test_wrongtype(c, key):
    script(c, key, 2, [
        ("SET {k} v", b"+OK\r\n"),
        ("ZADD {k} 1 a",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZADD {k} abc a", b"-ERR value is not a valid float\r\n"),
        ("ZADD {k} nx xx 1 a",
         b"-ERR XX and NX options at the same time are not compatible\r\n"),
        ("ZINCRBY {k} 1 a",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZREM {k} a",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZCARD {k}",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZSCORE {k} a",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZMSCORE {k} a",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZRANK {k} a",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZREVRANK {k} a",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZCOUNT {k} 0 1",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZCOUNT {k} x 1", b"-ERR min or max is not a float\r\n"),
        ("ZLEXCOUNT {k} - +",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZRANGE {k} 0 -1",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZRANGE {k} x 1", b"-ERR value is not an integer or out of range\r\n"),
        ("ZREVRANGE {k} 0 -1",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZRANGEBYSCORE {k} 0 1",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZREVRANGEBYSCORE {k} 1 0",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZRANGEBYLEX {k} - +",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZREVRANGEBYLEX {k} + -",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZREMRANGEBYRANK {k} 0 1",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZREMRANGEBYSCORE {k} 0 1",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZREMRANGEBYLEX {k} - +",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZPOPMIN {k}",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZPOPMAX {k} 2",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZPOPMIN {k} x", b"-ERR value is out of range, must be positive\r\n"),
        ("ZMPOP 1 {k} min",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZMPOP 2 {k}:none {k} max",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZRANDMEMBER {k}",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZRANDMEMBER {k} 2",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZUNION 1 {k}",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZUNION 1 {k} aggregate foo",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZINTER 1 {k}",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZDIFF 1 {k}",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZINTERCARD 1 {k}",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZSCAN {k} 0",
         b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        ("ZSCAN {k} x", b"-ERR invalid cursor\r\n"),
        ("GET {k}", b"$1\r\nv\r\n"),
    ])


def test_arity(c, key):
    script(c, key, 2, [
        ("ZADD {k} 1", b"-ERR wrong number of arguments for 'zadd' command\r\n"),
        ("ZADD {k}", b"-ERR wrong number of arguments for 'zadd' command\r\n"),
        ("ZINCRBY {k} 1", b"-ERR wrong number of arguments for 'zincrby' command\r\n"),
        ("ZREM {k}", b"-ERR wrong number of arguments for 'zrem' command\r\n"),
        ("ZCARD", b"-ERR wrong number of arguments for 'zcard' command\r\n"),
        ("ZCARD {k} x", b"-ERR wrong number of arguments for 'zcard' command\r\n"),
        ("ZCOUNT {k} 1", b"-ERR wrong number of arguments for 'zcount' command\r\n"),
        ("ZSCORE {k}", b"-ERR wrong number of arguments for 'zscore' command\r\n"),
        ("ZMSCORE {k}", b"-ERR wrong number of arguments for 'zmscore' command\r\n"),
        ("ZRANK {k}", b"-ERR wrong number of arguments for 'zrank' command\r\n"),
        ("ZRANGE {k} 0", b"-ERR wrong number of arguments for 'zrange' command\r\n"),
        ("ZRANGESTORE {k} {k}:s 0",
         b"-ERR wrong number of arguments for 'zrangestore' command\r\n"),
        ("ZREVRANGE {k} 0",
         b"-ERR wrong number of arguments for 'zrevrange' command\r\n"),
        ("ZRANGEBYSCORE {k} 0",
         b"-ERR wrong number of arguments for 'zrangebyscore' command\r\n"),
        ("ZRANGEBYLEX {k} -",
         b"-ERR wrong number of arguments for 'zrangebylex' command\r\n"),
        ("ZLEXCOUNT {k} -",
         b"-ERR wrong number of arguments for 'zlexcount' command\r\n"),
        ("ZPOPMIN", b"-ERR wrong number of arguments for 'zpopmin' command\r\n"),
        ("ZMPOP 1 {k}", b"-ERR wrong number of arguments for 'zmpop' command\r\n"),
        ("ZRANDMEMBER", b"-ERR wrong number of arguments for 'zrandmember' command\r\n"),
        ("ZREMRANGEBYRANK {k} 0",
         b"-ERR wrong number of arguments for 'zremrangebyrank' command\r\n"),
        ("ZREMRANGEBYSCORE {k} 0 1 2",
         b"-ERR wrong number of arguments for 'zremrangebyscore' command\r\n"),
        ("ZREMRANGEBYLEX {k} -",
         b"-ERR wrong number of arguments for 'zremrangebylex' command\r\n"),
        ("ZUNION 1", b"-ERR wrong number of arguments for 'zunion' command\r\n"),
        ("ZINTER 1", b"-ERR wrong number of arguments for 'zinter' command\r\n"),
        ("ZDIFF 1", b"-ERR wrong number of arguments for 'zdiff' command\r\n"),
        ("ZUNIONSTORE {k} 1",
         b"-ERR wrong number of arguments for 'zunionstore' command\r\n"),
        ("ZINTERCARD 1", b"-ERR wrong number of arguments for 'zintercard' command\r\n"),
        ("ZSCAN {k}", b"-ERR wrong number of arguments for 'zscan' command\r\n"),
    ])


def test_resp3_replies(c, key):
    script(c, key, 3, [
        ("ZADD {k} 1 a 2.5 b 1.1 c -inf d", b":4\r\n"),
        ("ZSCORE {k} c", b",1.1000000000000001\r\n"),
        ("ZSCORE {k} d", b",-inf\r\n"),
        ("ZSCORE {k} nosuch", b"_\r\n"),
        ("ZMSCORE {k} a nosuch c", b"*3\r\n,1\r\n_\r\n,1.1000000000000001\r\n"),
        ("ZINCRBY {k} 1 a", b",2\r\n"),
        ("ZADD {k} incr 0.5 b", b",3\r\n"),
        ("ZADD {k} xx incr 1 nosuch", b"_\r\n"),
        ("ZRANGE {k} 0 -1 WITHSCORES",
         b"*4\r\n*2\r\n$1\r\nd\r\n,-inf\r\n*2\r\n$1\r\nc\r\n"
         b",1.1000000000000001\r\n*2\r\n$1\r\na\r\n,2\r\n*2\r\n$1\r\nb\r\n,3\r\n"),
        ("ZRANGE {k} 0 -1", b"*4\r\n$1\r\nd\r\n$1\r\nc\r\n$1\r\na\r\n$1\r\nb\r\n"),
        ("ZREVRANGE {k} 0 1 WITHSCORES",
         b"*2\r\n*2\r\n$1\r\nb\r\n,3\r\n*2\r\n$1\r\na\r\n,2\r\n"),
        ("ZRANGEBYSCORE {k} -inf +inf WITHSCORES LIMIT 1 2",
         b"*2\r\n*2\r\n$1\r\nc\r\n,1.1000000000000001\r\n*2\r\n$1\r\na\r\n,2\r\n"),
        ("ZRANK {k} nosuch", b"_\r\n"),
        ("ZRANDMEMBER {k}:none", b"_\r\n"),
        ("ZRANDMEMBER {k}:none 2 WITHSCORES", b"*0\r\n"),
        ("ZADD {k}:b 3 a 4 x", b":2\r\n"),
        ("ZUNION 2 {k} {k}:b WITHSCORES",
         b"*5\r\n*2\r\n$1\r\nd\r\n,-inf\r\n*2\r\n$1\r\nc\r\n"
         b",1.1000000000000001\r\n*2\r\n$1\r\nb\r\n,3\r\n*2\r\n$1\r\nx\r\n,4\r\n"
         b"*2\r\n$1\r\na\r\n,5\r\n"),
        ("ZINTER 2 {k} {k}:b WITHSCORES", b"*1\r\n*2\r\n$1\r\na\r\n,5\r\n"),
        ("ZDIFF 2 {k} {k}:b WITHSCORES",
         b"*3\r\n*2\r\n$1\r\nd\r\n,-inf\r\n*2\r\n$1\r\nc\r\n"
         b",1.1000000000000001\r\n*2\r\n$1\r\nb\r\n,3\r\n"),
        ("ZSCAN {k} 0",
         b"*2\r\n$1\r\n0\r\n*8\r\n$1\r\nd\r\n$4\r\n-inf\r\n$1\r\nc\r\n$18\r\n"
         b"1.1000000000000001\r\n$1\r\na\r\n$1\r\n2\r\n$1\r\nb\r\n$1\r\n3\r\n"),
        ("ZPOPMIN {k}", b"*2\r\n$1\r\nd\r\n,-inf\r\n"),
        ("ZPOPMIN {k} 2",
         b"*2\r\n*2\r\n$1\r\nc\r\n,1.1000000000000001\r\n*2\r\n$1\r\na\r\n,2\r\n"),
        ("ZPOPMAX {k} 0", b"*0\r\n"),
        ("ZPOPMIN {k}:none", b"*0\r\n"),
        ("ZMPOP 2 {k}:none {k}:b MAX COUNT 1",
         b"*2\r\n{K:b}\r\n*1\r\n*2\r\n$1\r\nx\r\n,4\r\n"),
        ("ZMPOP 1 {k}:none MIN", b"_\r\n"),
    ])


def test_zrandmember(c, key):
    """Random picks: the shapes, sizes and membership Redis gives, not the choice."""
    members = {b"a": b"1", b"b": b"2", b"c": b"3", b"d": b"4"}
    c.rt(resp_encode("ZADD", key, 1, "a", 2, "b", 3, "c", 4, "d"), b":4\r\n")
    for _ in range(20):
        c.send(resp_encode("ZRANDMEMBER", key))
        line = read_reply(c)
        assert line.split(b"\r\n")[1] in members, line
    # A count at least the size: every member once, highest score first.
    c.rt(resp_encode("ZRANDMEMBER", key, 10),
         b"*4\r\n$1\r\nd\r\n$1\r\nc\r\n$1\r\nb\r\n$1\r\na\r\n")
    c.rt(resp_encode("ZRANDMEMBER", key, 0), b"*0\r\n")
    for count in (2, 3, -3, -9):
        c.send(resp_encode("ZRANDMEMBER", key, count, "WITHSCORES"))
        parts = read_reply(c).split(b"\r\n")
        assert parts[0] == b"*%d" % (2 * abs(count)), parts
        pairs = [(parts[i], parts[i + 2]) for i in range(2, len(parts) - 1, 4)]
        assert len(pairs) == abs(count)
        assert all(members.get(m) == s for m, s in pairs), pairs
        if count > 0:
            assert len({m for m, _ in pairs}) == count, pairs  # distinct
    c.send(resp_encode("HELLO", "3"))
    read_reply(c)
    c.send(resp_encode("ZRANDMEMBER", key, -2, "WITHSCORES"))
    reply = read_reply(c)
    assert re.fullmatch(rb"\*2\r\n(\*2\r\n\$1\r\n[abcd]\r\n,[1-4]\r\n){2}", reply), reply
    c.rt(resp_encode("ZRANDMEMBER", key + ":none"), b"_\r\n")


def test_zrank_withscore(c, key):
    """Redis 7.2's WITHSCORE (redis.io); a 7.0 server does not have it."""
    c.send(resp_encode("COMMAND", "INFO", "zrank"))
    if b"\r\n:3\r\n" in read_reply(c):
        pytest.skip("ZRANK has no WITHSCORE before Redis 7.2")
    c.rt(resp_encode("ZADD", key, 1, "a", "2.5", "b"), b":2\r\n")
    c.rt(resp_encode("ZRANK", key, "b", "WITHSCORE"), b"*2\r\n:1\r\n$3\r\n2.5\r\n")
    c.rt(resp_encode("ZREVRANK", key, "b", "withscore"), b"*2\r\n:0\r\n$3\r\n2.5\r\n")
    c.rt(resp_encode("ZRANK", key, "x", "WITHSCORE"), b"*-1\r\n")
    c.rt(resp_encode("ZRANK", key + ":none", "x", "WITHSCORE"), b"*-1\r\n")
    c.rt(resp_encode("ZRANK", key, "a", "WITHSCORES"), b"-ERR syntax error\r\n")
    c.rt(resp_encode("ZRANK", key, "a", "WITHSCORE", "x"),
         b"-ERR wrong number of arguments for 'zrank' command\r\n")
    c.send(resp_encode("HELLO", "3"))
    read_reply(c)
    c.rt(resp_encode("ZRANK", key, "a", "WITHSCORE"), b"*2\r\n:0\r\n,1\r\n")
    c.rt(resp_encode("ZRANK", key, "x", "WITHSCORE"), b"_\r\n")


def test_zscan_large_set(c, key):
    """A set too big for one page: a cursor walk returns every member with its score
    (Redis's guarantee), in a bounded number of calls, while members come and go."""
    n = 300
    args = []
    for i in range(n):
        args += [str(i / 4), f"m{i}"]
    c.rt(resp_encode("ZADD", key, *args), b":%d\r\n" % n)
    seen, cursor, calls = {}, b"0", 0
    while True:
        c.send(resp_encode("ZSCAN", key, cursor, "COUNT", 25))
        reply = read_reply(c)
        parts = reply.split(b"\r\n")
        cursor = parts[2]
        items = parts[5:-1:2]
        for member, score in zip(items[0::2], items[1::2]):
            seen[member] = score
        calls += 1
        if calls == 2:  # changes mid-walk: new members may or may not be seen
            c.rt(resp_encode("ZADD", key, 1000, "late"), b":1\r\n")
        if cursor == b"0":
            break
        assert calls < n, "the scan does not end"
    seen.pop(b"late", None)
    assert calls > 1
    assert len(seen) == n
    for i in range(n):
        score = i / 4
        text = str(int(score)) if score == int(score) else repr(score)
        assert seen[f"m{i}".encode()] == text.encode(), i
    c.send(resp_encode("ZSCAN", key, 0, "MATCH", "m1?", "COUNT", 1000))
    reply = read_reply(c)
    assert sorted(reply.split(b"\r\n")[5:-1:4]) == sorted(f"m1{d}".encode() for d in range(10))


def test_value_over_item_size(make_server, target):
    """A change that would make the set bigger than the store can hold (half of -m 64) is
    refused as Redis refuses memory, and leaves the key as it was (Spinel only: Redis has no
    maxmemory here)."""
    if target != "spinel":
        pytest.skip("the memory limit is Spinel's -m")
    mib = 1024 * 1024
    server = make_server()
    with Conn(server.resp_port, timeout=30) as conn:
        conn.rt(resp_encode("ZADD", "big", 1, "a" * 500), b":1\r\n")
        conn.rt(resp_encode("ZADD", "big", 2, "b" * (33 * mib)),
                b"-OOM command not allowed when used memory > 'maxmemory'.\r\n")
        conn.rt(resp_encode("ZCARD", "big"), b":1\r\n")
        conn.rt(resp_encode("ZADD", "big", 2, "b" * (9 * mib)), b":1\r\n")
        conn.rt(resp_encode("ZUNIONSTORE", "u", 2, "big", "big", "WEIGHTS", 1, 2), b":2\r\n")
        conn.rt(resp_encode("ZADD", "big2", 1, "c" * (12 * mib), 2, "d" * 100), b":2\r\n")
        conn.rt(resp_encode("ZUNIONSTORE", "u", 2, "big", "big2"), b":4\r\n")
        conn.rt(resp_encode("ZRANGESTORE", "u", "big2", 1, 1), b":1\r\n")
        conn.rt(resp_encode("ZCARD", "u"), b":1\r\n")