"""Lists (LPUSH ... LMPOP): every command's replies and errors byte for byte as redis-server
7.0 sends them, in RESP2 and (where the reply type differs) RESP3. The transcripts were
taken from the real 7.0.15 and pass with CONFORMANCE_TARGET=redis; the checks Redis makes
before looking at the key (and the ones after) decide which error a client sees, so the
order is part of what is tested.

In a transcript, `{a}` `{b}` `{c}` are list keys and `{s}` a string key, all unique to the
test; `{A}` `{B}` in a reply stand for the bulk string of that key's name (LMPOP names the
list it popped from).
"""

import pytest

from wire import Conn, resp_encode

pytestmark = pytest.mark.resp

RANK_ZERO = (b"-ERR RANK can't be zero: use 1 to start from the first match, 2 from the "
             b"second ... or use negative to start from the end of the list\r\n")
WRONGTYPE = b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"


@pytest.fixture
def c(resp_port):
    with Conn(resp_port) as conn:
        yield conn


def bulk(data):
    return b"$%d\r\n%s\r\n" % (len(data), data)


def read_reply(conn):
    """One whole reply, as raw bytes (any RESP2/RESP3 type)."""
    line = conn.read_line()
    kind, rest = line[:1], line[1:-2]
    if kind == b"$" and int(rest) >= 0:
        return line + conn.read_exact(int(rest) + 2)
    if kind in (b"*", b"~", b">", b"%") and int(rest) > 0:
        count = int(rest) * (2 if kind == b"%" else 1)
        return line + b"".join(read_reply(conn) for _ in range(count))
    return line


def transcript(conn, key, steps):
    """Runs each (command, expected reply) in order: the command's words are split on spaces
    after the key placeholders are filled in."""
    names = {p: f"{key}:{p}" for p in "abcs"}
    conn.send(resp_encode("DEL", *names.values()))
    read_reply(conn)
    for command, expected in steps:
        words = [w.format(**names) for w in command.split(" ")]
        for p, name in names.items():
            expected = expected.replace(b"{%s}" % p.upper().encode(), bulk(name.encode()))
        conn.send(resp_encode(*words))
        got = read_reply(conn)
        assert got == expected, f"sent {command!r}"
    conn.assert_quiet()
    conn.send(resp_encode("DEL", *names.values()))
    read_reply(conn)


def test_push_len(c, key):
    """LPUSH/RPUSH create and grow a list, the X forms only grow one; LLEN."""
    transcript(c, key, [
        ('LLEN {a}', b':0\r\n'),
        ('LPUSHX {a} x', b':0\r\n'),
        ('RPUSHX {a} x y', b':0\r\n'),
        ('EXISTS {a}', b':0\r\n'),
        ('LPUSH {a} a b c', b':3\r\n'),
        ('RPUSH {a} d e', b':5\r\n'),
        ('LRANGE {a} 0 -1', b'*5\r\n$1\r\nc\r\n$1\r\nb\r\n$1\r\na\r\n$1\r\nd\r\n$1\r\ne\r\n'),
        ('LLEN {a}', b':5\r\n'),
        ('LPUSHX {a} z', b':6\r\n'),
        ('RPUSHX {a} 1 2 3', b':9\r\n'),
        ('LRANGE {a} 0 -1',
         b'*9\r\n$1\r\nz\r\n$1\r\nc\r\n$1\r\nb\r\n$1\r\na\r\n$1\r\nd\r\n$1\r\ne\r\n$1\r\n1\r\n'
         b'$1\r\n2\r\n$1\r\n3\r\n'),
        ('LLEN {a}', b':9\r\n'),
        ('TYPE {a}', b'+list\r\n'),
        ('lpush {a} -1 007 +5 9223372036854775808 1.5', b':14\r\n'),
        ('LRANGE {a} 0 4',
         b'*5\r\n$3\r\n1.5\r\n$19\r\n9223372036854775808\r\n$2\r\n+5\r\n$3\r\n007\r\n$2\r\n'
         b'-1\r\n'),
        ('DEL {a}', b':1\r\n'),
        ('LLEN {a}', b':0\r\n'),
    ])


def test_pop(c, key):
    """LPOP/RPOP with and without a count; the null forms of a missing key; count errors."""
    transcript(c, key, [
        ('LPOP {a}', b'$-1\r\n'),
        ('RPOP {a}', b'$-1\r\n'),
        ('LPOP {a} 0', b'*-1\r\n'),
        ('RPOP {a} 3', b'*-1\r\n'),
        ('RPUSH {a} a b c d e', b':5\r\n'),
        ('LPOP {a}', b'$1\r\na\r\n'),
        ('RPOP {a}', b'$1\r\ne\r\n'),
        ('LPOP {a} 0', b'*0\r\n'),
        ('RPOP {a} 0', b'*0\r\n'),
        ('LPOP {a} 1', b'*1\r\n$1\r\nb\r\n'),
        ('RPOP {a} 1', b'*1\r\n$1\r\nd\r\n'),
        ('LPOP {a} -1', b'-ERR value is out of range, must be positive\r\n'),
        ('LPOP {a} x', b'-ERR value is out of range, must be positive\r\n'),
        ('RPOP {a} 1.5', b'-ERR value is out of range, must be positive\r\n'),
        ('LPOP {a} 1 2', b"-ERR wrong number of arguments for 'lpop' command\r\n"),
        ('RPUSH {a} x y', b':3\r\n'),
        ('LRANGE {a} 0 -1', b'*3\r\n$1\r\nc\r\n$1\r\nx\r\n$1\r\ny\r\n'),
        ('RPOP {a} 2', b'*2\r\n$1\r\ny\r\n$1\r\nx\r\n'),
        ('LPOP {a} 10', b'*1\r\n$1\r\nc\r\n'),
        ('EXISTS {a}', b':0\r\n'),
        ('RPUSH {a} only', b':1\r\n'),
        ('RPOP {a}', b'$4\r\nonly\r\n'),
        ('EXISTS {a}', b':0\r\n'),
    ])


def test_index_set(c, key):
    """LINDEX and LSET: negative indexes, out of range, and Redis's order of checks."""
    transcript(c, key, [
        ('LINDEX {a} 0', b'$-1\r\n'),
        ('LINDEX {a} x', b'$-1\r\n'),
        ('LSET {a} 0 v', b'-ERR no such key\r\n'),
        ('LSET {a} x v', b'-ERR no such key\r\n'),
        ('RPUSH {a} a b c', b':3\r\n'),
        ('LINDEX {a} 0', b'$1\r\na\r\n'),
        ('LINDEX {a} 2', b'$1\r\nc\r\n'),
        ('LINDEX {a} 3', b'$-1\r\n'),
        ('LINDEX {a} -1', b'$1\r\nc\r\n'),
        ('LINDEX {a} -3', b'$1\r\na\r\n'),
        ('LINDEX {a} -4', b'$-1\r\n'),
        ('LINDEX {a} x', b'-ERR value is not an integer or out of range\r\n'),
        ('LINDEX {a} -9223372036854775808', b'$-1\r\n'),
        ('LINDEX {a} 9223372036854775807', b'$-1\r\n'),
        ('LINDEX {a} 9223372036854775808', b'-ERR value is not an integer or out of range\r\n'),
        ('LSET {a} 1 B', b'+OK\r\n'),
        ('LSET {a} -1 C', b'+OK\r\n'),
        ('LSET {a} -3 A', b'+OK\r\n'),
        ('LRANGE {a} 0 -1', b'*3\r\n$1\r\nA\r\n$1\r\nB\r\n$1\r\nC\r\n'),
        ('LSET {a} 3 v', b'-ERR index out of range\r\n'),
        ('LSET {a} -4 v', b'-ERR index out of range\r\n'),
        ('LSET {a} x v', b'-ERR value is not an integer or out of range\r\n'),
        ('LSET {a} 01 v', b'-ERR value is not an integer or out of range\r\n'),
    ])


def test_range_trim(c, key):
    """LRANGE and LTRIM: clamping, negative and reversed ranges, deletion when emptied."""
    transcript(c, key, [
        ('LRANGE {a} 0 -1', b'*0\r\n'),
        ('LRANGE {a} x 1', b'-ERR value is not an integer or out of range\r\n'),
        ('LRANGE {a} 0 y', b'-ERR value is not an integer or out of range\r\n'),
        ('LTRIM {a} 0 1', b'+OK\r\n'),
        ('LTRIM {a} x 1', b'-ERR value is not an integer or out of range\r\n'),
        ('RPUSH {a} 0 1 2 3 4 5 6 7 8 9', b':10\r\n'),
        ('LRANGE {a} 0 -1',
         b'*10\r\n$1\r\n0\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n$1\r\n4\r\n$1\r\n5\r\n$1\r\n'
         b'6\r\n$1\r\n7\r\n$1\r\n8\r\n$1\r\n9\r\n'),
        ('LRANGE {a} 2 4', b'*3\r\n$1\r\n2\r\n$1\r\n3\r\n$1\r\n4\r\n'),
        ('LRANGE {a} -3 -1', b'*3\r\n$1\r\n7\r\n$1\r\n8\r\n$1\r\n9\r\n'),
        ('LRANGE {a} -100 1', b'*2\r\n$1\r\n0\r\n$1\r\n1\r\n'),
        ('LRANGE {a} 8 100', b'*2\r\n$1\r\n8\r\n$1\r\n9\r\n'),
        ('LRANGE {a} 5 2', b'*0\r\n'),
        ('LRANGE {a} 10 20', b'*0\r\n'),
        ('LRANGE {a} -1 -3', b'*0\r\n'),
        ('LRANGE {a} 0 0', b'*1\r\n$1\r\n0\r\n'),
        ('LRANGE {a} -9223372036854775808 9223372036854775807',
         b'*10\r\n$1\r\n0\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n$1\r\n4\r\n$1\r\n5\r\n$1\r\n'
         b'6\r\n$1\r\n7\r\n$1\r\n8\r\n$1\r\n9\r\n'),
        ('LTRIM {a} 1 -2', b'+OK\r\n'),
        ('LRANGE {a} 0 -1',
         b'*8\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n$1\r\n4\r\n$1\r\n5\r\n$1\r\n6\r\n$1\r\n7\r\n'
         b'$1\r\n8\r\n'),
        ('LTRIM {a} -100 100', b'+OK\r\n'),
        ('LLEN {a}', b':8\r\n'),
        ('LTRIM {a} 2 3', b'+OK\r\n'),
        ('LRANGE {a} 0 -1', b'*2\r\n$1\r\n3\r\n$1\r\n4\r\n'),
        ('LTRIM {a} 0 y', b'-ERR value is not an integer or out of range\r\n'),
        ('LTRIM {a} 5 1', b'+OK\r\n'),
        ('EXISTS {a}', b':0\r\n'),
        ('RPUSH {a} x', b':1\r\n'),
        ('LTRIM {a} 1 -1', b'+OK\r\n'),
        ('EXISTS {a}', b':0\r\n'),
    ])


def test_insert_rem(c, key):
    """LINSERT and LREM: positions, missing pivots, counts from either end."""
    transcript(c, key, [
        ('LINSERT {a} BEFORE p x', b':0\r\n'),
        ('LINSERT {a} middle p x', b'-ERR syntax error\r\n'),
        ('LREM {a} 0 x', b':0\r\n'),
        ('LREM {a} z x', b'-ERR value is not an integer or out of range\r\n'),
        ('RPUSH {a} p q p r p', b':5\r\n'),
        ('LINSERT {a} BEFORE p x', b':6\r\n'),
        ('LINSERT {a} after p y', b':7\r\n'),
        ('LINSERT {a} AfTeR r z', b':8\r\n'),
        ('LRANGE {a} 0 -1',
         b'*8\r\n$1\r\nx\r\n$1\r\np\r\n$1\r\ny\r\n$1\r\nq\r\n$1\r\np\r\n$1\r\nr\r\n$1\r\nz\r\n'
         b'$1\r\np\r\n'),
        ('LINSERT {a} BEFORE nope v', b':-1\r\n'),
        ('LINSERT {a} around p v', b'-ERR syntax error\r\n'),
        ('LINSERT {a} before p', b"-ERR wrong number of arguments for 'linsert' command\r\n"),
        ('LREM {a} 1 p', b':1\r\n'),
        ('LRANGE {a} 0 -1',
         b'*7\r\n$1\r\nx\r\n$1\r\ny\r\n$1\r\nq\r\n$1\r\np\r\n$1\r\nr\r\n$1\r\nz\r\n$1\r\np\r\n'),
        ('LREM {a} -1 p', b':1\r\n'),
        ('LRANGE {a} 0 -1',
         b'*6\r\n$1\r\nx\r\n$1\r\ny\r\n$1\r\nq\r\n$1\r\np\r\n$1\r\nr\r\n$1\r\nz\r\n'),
        ('RPUSH {a} p p p', b':9\r\n'),
        ('LREM {a} -2 p', b':2\r\n'),
        ('LRANGE {a} 0 -1',
         b'*7\r\n$1\r\nx\r\n$1\r\ny\r\n$1\r\nq\r\n$1\r\np\r\n$1\r\nr\r\n$1\r\nz\r\n$1\r\np\r\n'),
        ('LREM {a} 0 p', b':2\r\n'),
        ('LRANGE {a} 0 -1', b'*5\r\n$1\r\nx\r\n$1\r\ny\r\n$1\r\nq\r\n$1\r\nr\r\n$1\r\nz\r\n'),
        ('LREM {a} 0 nope', b':0\r\n'),
        ('LREM {a} 1.5 x', b'-ERR value is not an integer or out of range\r\n'),
        ('LREM {a} -9223372036854775808 x', b':1\r\n'),
        ('LREM {a} 0 x', b':0\r\n'),
        ('LREM {a} 0 y', b':1\r\n'),
        ('LREM {a} 0 q', b':1\r\n'),
        ('LREM {a} 0 r', b':1\r\n'),
        ('LREM {a} 0 z', b':1\r\n'),
        ('EXISTS {a}', b':0\r\n'),
    ])


def test_lpos(c, key):
    """LPOS with RANK, COUNT and MAXLEN, their errors, and the null/array forms."""
    transcript(c, key, [
        ('LPOS {a} x', b'$-1\r\n'),
        ('LPOS {a} x COUNT 0', b'*0\r\n'),
        ('LPOS {a} x RANK 0', RANK_ZERO),
        ('LPOS {a} x COUNT -1', b"-ERR COUNT can't be negative\r\n"),
        ('RPUSH {a} a b c a b c a', b':7\r\n'),
        ('LPOS {a} a', b':0\r\n'),
        ('LPOS {a} c', b':2\r\n'),
        ('LPOS {a} nope', b'$-1\r\n'),
        ('LPOS {a} nope COUNT 2', b'*0\r\n'),
        ('LPOS {a} a RANK 2', b':3\r\n'),
        ('LPOS {a} a RANK 3', b':6\r\n'),
        ('LPOS {a} a RANK 4', b'$-1\r\n'),
        ('LPOS {a} a RANK -1', b':6\r\n'),
        ('LPOS {a} a RANK -3', b':0\r\n'),
        ('LPOS {a} a COUNT 0', b'*3\r\n:0\r\n:3\r\n:6\r\n'),
        ('LPOS {a} a COUNT 2', b'*2\r\n:0\r\n:3\r\n'),
        ('LPOS {a} a COUNT 9', b'*3\r\n:0\r\n:3\r\n:6\r\n'),
        ('LPOS {a} a RANK -1 COUNT 2', b'*2\r\n:6\r\n:3\r\n'),
        ('LPOS {a} a RANK 2 COUNT 0', b'*2\r\n:3\r\n:6\r\n'),
        ('LPOS {a} a MAXLEN 3 COUNT 0', b'*1\r\n:0\r\n'),
        ('LPOS {a} a RANK -1 MAXLEN 1', b':6\r\n'),
        ('LPOS {a} a RANK -2 MAXLEN 3', b'$-1\r\n'),
        ('LPOS {a} c MAXLEN 2', b'$-1\r\n'),
        ('LPOS {a} a MAXLEN 0 count 0', b'*3\r\n:0\r\n:3\r\n:6\r\n'),
        ('LPOS {a} a rank 1 rank -1', b':6\r\n'),
        ('LPOS {a} a count 1 count 0', b'*3\r\n:0\r\n:3\r\n:6\r\n'),
        ('LPOS {a} a RANK -9223372036854775808', b':6\r\n'),
        ('LPOS {a} a RANK -9223372036854775808 COUNT 1', b'*3\r\n:6\r\n:3\r\n:0\r\n'),
        ('LPOS {a} a RANK 9223372036854775807', b'$-1\r\n'),
        ('LPOS {a} a RANK -9223372036854775807 COUNT 0', b'*0\r\n'),
        ('LPOS {a} a RANK 0', RANK_ZERO),
        ('LPOS {a} a RANK x', b'-ERR value is not an integer or out of range\r\n'),
        ('LPOS {a} a COUNT -1', b"-ERR COUNT can't be negative\r\n"),
        ('LPOS {a} a COUNT x', b"-ERR COUNT can't be negative\r\n"),
        ('LPOS {a} a MAXLEN -1', b"-ERR MAXLEN can't be negative\r\n"),
        ('LPOS {a} a MAXLEN x', b"-ERR MAXLEN can't be negative\r\n"),
        ('LPOS {a} a RANK', b'-ERR syntax error\r\n'),
        ('LPOS {a} a COUNT', b'-ERR syntax error\r\n'),
        ('LPOS {a} a BOGUS 1', b'-ERR syntax error\r\n'),
        ('LPOS {a} a RANK 1 MAXLEN', b'-ERR syntax error\r\n'),
    ])


def test_move(c, key):
    """LMOVE and RPOPLPUSH: every direction, a new destination, the same key rotates."""
    transcript(c, key, [
        ('LMOVE {a} {b} LEFT RIGHT', b'$-1\r\n'),
        ('RPOPLPUSH {a} {b}', b'$-1\r\n'),
        ('EXISTS {b}', b':0\r\n'),
        ('RPUSH {a} 1 2 3 4', b':4\r\n'),
        ('LMOVE {a} {b} LEFT LEFT', b'$1\r\n1\r\n'),
        ('LMOVE {a} {b} RIGHT LEFT', b'$1\r\n4\r\n'),
        ('LMOVE {a} {b} left right', b'$1\r\n2\r\n'),
        ('LMOVE {a} {b} Right Right', b'$1\r\n3\r\n'),
        ('LRANGE {b} 0 -1', b'*4\r\n$1\r\n4\r\n$1\r\n1\r\n$1\r\n2\r\n$1\r\n3\r\n'),
        ('EXISTS {a}', b':0\r\n'),
        ('RPOPLPUSH {b} {a}', b'$1\r\n3\r\n'),
        ('RPOPLPUSH {b} {a}', b'$1\r\n2\r\n'),
        ('LRANGE {a} 0 -1', b'*2\r\n$1\r\n2\r\n$1\r\n3\r\n'),
        ('LRANGE {b} 0 -1', b'*2\r\n$1\r\n4\r\n$1\r\n1\r\n'),
        ('LMOVE {a} {b} UP LEFT', b'-ERR syntax error\r\n'),
        ('LMOVE {a} {b} LEFT DOWN', b'-ERR syntax error\r\n'),
        ('RPUSH {c} a b c', b':3\r\n'),
        ('LMOVE {c} {c} LEFT RIGHT', b'$1\r\na\r\n'),
        ('LRANGE {c} 0 -1', b'*3\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\na\r\n'),
        ('LMOVE {c} {c} RIGHT LEFT', b'$1\r\na\r\n'),
        ('LRANGE {c} 0 -1', b'*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n'),
        ('RPOPLPUSH {c} {c}', b'$1\r\nc\r\n'),
        ('LRANGE {c} 0 -1', b'*3\r\n$1\r\nc\r\n$1\r\na\r\n$1\r\nb\r\n'),
        ('LMOVE {c} {c} LEFT LEFT', b'$1\r\nc\r\n'),
        ('LRANGE {c} 0 -1', b'*3\r\n$1\r\nc\r\n$1\r\na\r\n$1\r\nb\r\n'),
        ('DEL {a} {b} {c}', b':3\r\n'),
        ('RPUSH {a} one', b':1\r\n'),
        ('RPOPLPUSH {a} {a}', b'$3\r\none\r\n'),
        ('LRANGE {a} 0 -1', b'*1\r\n$3\r\none\r\n'),
        ('RPOPLPUSH {a} {b}', b'$3\r\none\r\n'),
        ('EXISTS {a}', b':0\r\n'),
        ('LRANGE {b} 0 -1', b'*1\r\n$3\r\none\r\n'),
    ])


def test_lmpop(c, key):
    """LMPOP: the first non-empty list, COUNT, and the numkeys/COUNT errors in Redis's order."""
    transcript(c, key, [
        ('LMPOP 1 {a} LEFT', b'*-1\r\n'),
        ('LMPOP 2 {a} {b} RIGHT COUNT 2', b'*-1\r\n'),
        ('RPUSH {b} 1 2 3 4 5', b':5\r\n'),
        ('LMPOP 2 {a} {b} LEFT', b'*2\r\n{B}*1\r\n$1\r\n1\r\n'),
        ('LMPOP 2 {a} {b} RIGHT COUNT 2', b'*2\r\n{B}*2\r\n$1\r\n5\r\n$1\r\n4\r\n'),
        ('LMPOP 3 {a} {c} {b} left count 10', b'*2\r\n{B}*2\r\n$1\r\n2\r\n$1\r\n3\r\n'),
        ('EXISTS {b}', b':0\r\n'),
        ('RPUSH {a} x', b':1\r\n'),
        ('RPUSH {b} y', b':1\r\n'),
        ('LMPOP 2 {b} {a} RIGHT COUNT 1', b'*2\r\n{B}*1\r\n$1\r\ny\r\n'),
        ('LMPOP 2 {b} {a} lEfT', b'*2\r\n{A}*1\r\n$1\r\nx\r\n'),
        ('LMPOP 2 {b} {a} LEFT', b'*-1\r\n'),
        ('LMPOP 0 {a} LEFT', b'-ERR numkeys should be greater than 0\r\n'),
        ('LMPOP -1 {a} LEFT', b'-ERR numkeys should be greater than 0\r\n'),
        ('LMPOP x {a} LEFT', b'-ERR numkeys should be greater than 0\r\n'),
        ('LMPOP 1.0 {a} LEFT', b'-ERR numkeys should be greater than 0\r\n'),
        ('LMPOP 2 {a} LEFT', b'-ERR syntax error\r\n'),
        ('LMPOP 9223372036854775807 {a} LEFT', b'-ERR syntax error\r\n'),
        ('LMPOP 1 {a} MIDDLE', b'-ERR syntax error\r\n'),
        ('LMPOP 1 {a} LEFT COUNT', b'-ERR syntax error\r\n'),
        ('LMPOP 1 {a} LEFT COUNT 0', b'-ERR count should be greater than 0\r\n'),
        ('LMPOP 1 {a} LEFT COUNT -1', b'-ERR count should be greater than 0\r\n'),
        ('LMPOP 1 {a} LEFT COUNT x', b'-ERR count should be greater than 0\r\n'),
        ('LMPOP 1 {a} LEFT COUNT 1 COUNT 1', b'-ERR syntax error\r\n'),
        ('LMPOP 1 {a} LEFT BOGUS', b'-ERR syntax error\r\n'),
        ('LMPOP 1 {a} LEFT COUNT 1 BOGUS', b'-ERR syntax error\r\n'),
        ('LMPOP 2 {a} {b} LEFT COUNT 0', b'-ERR count should be greater than 0\r\n'),
    ])


def test_wrongtype(c, key):
    """Every command against a string key: WRONGTYPE, after the checks Redis makes first."""
    transcript(c, key, [
        ('SET {s} v', b'+OK\r\n'),
        ('LPUSH {s} x', WRONGTYPE),
        ('RPUSH {s} x', WRONGTYPE),
        ('LPUSHX {s} x', WRONGTYPE),
        ('RPUSHX {s} x', WRONGTYPE),
        ('LPOP {s}', WRONGTYPE),
        ('RPOP {s}', WRONGTYPE),
        ('LPOP {s} 0', WRONGTYPE),
        ('RPOP {s} 2', WRONGTYPE),
        ('LPOP {s} -1', b'-ERR value is out of range, must be positive\r\n'),
        ('LLEN {s}', WRONGTYPE),
        ('LRANGE {s} 0 -1', WRONGTYPE),
        ('LRANGE {s} x 0', b'-ERR value is not an integer or out of range\r\n'),
        ('LINDEX {s} 0', WRONGTYPE),
        ('LINDEX {s} x', WRONGTYPE),
        ('LSET {s} 0 v', WRONGTYPE),
        ('LSET {s} x v', WRONGTYPE),
        ('LINSERT {s} BEFORE a b', WRONGTYPE),
        ('LINSERT {s} NEAR a b', b'-ERR syntax error\r\n'),
        ('LREM {s} 0 v', WRONGTYPE),
        ('LREM {s} x v', b'-ERR value is not an integer or out of range\r\n'),
        ('LTRIM {s} 0 1', WRONGTYPE),
        ('LTRIM {s} x 1', b'-ERR value is not an integer or out of range\r\n'),
        ('LPOS {s} v', WRONGTYPE),
        ('LPOS {s} v COUNT 0', WRONGTYPE),
        ('LPOS {s} v RANK 0', RANK_ZERO),
        ('LMOVE {s} {a} LEFT LEFT', WRONGTYPE),
        ('LMOVE {a} {s} LEFT LEFT', b'$-1\r\n'),
        ('RPUSH {a} x', b':1\r\n'),
        ('LMOVE {a} {s} LEFT LEFT', WRONGTYPE),
        ('RPOPLPUSH {a} {s}', WRONGTYPE),
        ('RPOPLPUSH {s} {a}', WRONGTYPE),
        ('LMOVE {s} {s} LEFT LEFT', WRONGTYPE),
        ('LMOVE {a} {a} UP LEFT', b'-ERR syntax error\r\n'),
        ('LMPOP 1 {s} LEFT', WRONGTYPE),
        ('LMPOP 2 {b} {s} LEFT', WRONGTYPE),
        ('LMPOP 2 {a} {s} LEFT', b'*2\r\n{A}*1\r\n$1\r\nx\r\n'),
        ('LMPOP 1 {s} LEFT COUNT 0', b'-ERR count should be greater than 0\r\n'),
        ('GET {s}', b'$1\r\nv\r\n'),
        ('LRANGE {a} 0 -1', b'*0\r\n'),
    ])


def test_arity(c, key):
    """Argument counts: Redis's arity error for each command."""
    transcript(c, key, [
        ('LPUSH {a}', b"-ERR wrong number of arguments for 'lpush' command\r\n"),
        ('RPUSH {a}', b"-ERR wrong number of arguments for 'rpush' command\r\n"),
        ('LPUSHX {a}', b"-ERR wrong number of arguments for 'lpushx' command\r\n"),
        ('RPUSHX {a}', b"-ERR wrong number of arguments for 'rpushx' command\r\n"),
        ('LPOP', b"-ERR wrong number of arguments for 'lpop' command\r\n"),
        ('RPOP', b"-ERR wrong number of arguments for 'rpop' command\r\n"),
        ('LPOP {a} 1 2', b"-ERR wrong number of arguments for 'lpop' command\r\n"),
        ('RPOP {a} 1 2', b"-ERR wrong number of arguments for 'rpop' command\r\n"),
        ('LLEN', b"-ERR wrong number of arguments for 'llen' command\r\n"),
        ('LLEN {a} x', b"-ERR wrong number of arguments for 'llen' command\r\n"),
        ('LRANGE {a} 0', b"-ERR wrong number of arguments for 'lrange' command\r\n"),
        ('LRANGE {a} 0 1 2', b"-ERR wrong number of arguments for 'lrange' command\r\n"),
        ('LINDEX {a}', b"-ERR wrong number of arguments for 'lindex' command\r\n"),
        ('LINDEX {a} 0 1', b"-ERR wrong number of arguments for 'lindex' command\r\n"),
        ('LSET {a} 0', b"-ERR wrong number of arguments for 'lset' command\r\n"),
        ('LSET {a} 0 v w', b"-ERR wrong number of arguments for 'lset' command\r\n"),
        ('LINSERT {a} BEFORE p', b"-ERR wrong number of arguments for 'linsert' command\r\n"),
        ('LINSERT {a} BEFORE p v w', b"-ERR wrong number of arguments for 'linsert' command\r\n"),
        ('LREM {a} 0', b"-ERR wrong number of arguments for 'lrem' command\r\n"),
        ('LREM {a} 0 v w', b"-ERR wrong number of arguments for 'lrem' command\r\n"),
        ('LTRIM {a} 0', b"-ERR wrong number of arguments for 'ltrim' command\r\n"),
        ('LTRIM {a} 0 1 2', b"-ERR wrong number of arguments for 'ltrim' command\r\n"),
        ('LPOS {a}', b"-ERR wrong number of arguments for 'lpos' command\r\n"),
        ('LMOVE {a} {b} LEFT', b"-ERR wrong number of arguments for 'lmove' command\r\n"),
        ('LMOVE {a} {b} LEFT LEFT x', b"-ERR wrong number of arguments for 'lmove' command\r\n"),
        ('RPOPLPUSH {a}', b"-ERR wrong number of arguments for 'rpoplpush' command\r\n"),
        ('RPOPLPUSH {a} {b} {c}', b"-ERR wrong number of arguments for 'rpoplpush' command\r\n"),
        ('LMPOP 1 {a}', b"-ERR wrong number of arguments for 'lmpop' command\r\n"),
        ('LMPOP 1', b"-ERR wrong number of arguments for 'lmpop' command\r\n"),
    ])


def test_resp3(c, key):
    """RESP3: the null forms and arrays after HELLO 3."""
    c.send(resp_encode("HELLO", "3"))
    read_reply(c)
    transcript(c, key, [
        ('LPOP {a}', b'_\r\n'),
        ('RPOP {a} 0', b'_\r\n'),
        ('LPOP {a} 2', b'_\r\n'),
        ('LINDEX {a} 0', b'_\r\n'),
        ('LPOS {a} x', b'_\r\n'),
        ('LPOS {a} x COUNT 0', b'*0\r\n'),
        ('LMOVE {a} {b} LEFT LEFT', b'_\r\n'),
        ('RPOPLPUSH {a} {b}', b'_\r\n'),
        ('LMPOP 1 {a} LEFT', b'_\r\n'),
        ('LRANGE {a} 0 -1', b'*0\r\n'),
        ('RPUSH {a} x y z', b':3\r\n'),
        ('LPOP {a} 0', b'*0\r\n'),
        ('LPOP {a}', b'$1\r\nx\r\n'),
        ('RPOP {a} 5', b'*2\r\n$1\r\nz\r\n$1\r\ny\r\n'),
        ('RPUSH {a} x y z', b':3\r\n'),
        ('LPOS {a} y', b':1\r\n'),
        ('LPOS {a} nope', b'_\r\n'),
        ('LINDEX {a} 5', b'_\r\n'),
        ('LMPOP 1 {a} RIGHT COUNT 2', b'*2\r\n{A}*2\r\n$1\r\nz\r\n$1\r\ny\r\n'),
        ('LMOVE {a} {b} LEFT LEFT', b'$1\r\nx\r\n'),
        ('LLEN {b}', b':1\r\n'),
    ])


def test_binary_and_empty_elements(c, key):
    """Elements are bytes: empty, CR/LF, NUL and non-UTF-8 ones come back unchanged, and
    compare as bytes (LPOS, LREM, LINSERT)."""
    odd = [b"", b"\r\n", b"\x00\xff", b"a b", b"\x80" * 200]
    c.rt(resp_encode("RPUSH", key, *odd), b":5\r\n")
    c.rt(resp_encode("LRANGE", key, "0", "-1"), b"*5\r\n" + b"".join(bulk(e) for e in odd))
    c.rt(resp_encode("LPOS", key, b"\x00\xff"), b":2\r\n")
    c.rt(resp_encode("LPOS", key, b"\x00"), b"$-1\r\n")
    c.rt(resp_encode("LINSERT", key, "BEFORE", b"", b"first"), b":6\r\n")
    c.rt(resp_encode("LREM", key, "0", b"\r\n"), b":1\r\n")
    c.rt(resp_encode("LINDEX", key, "-1"), bulk(b"\x80" * 200))
    c.rt(resp_encode("LPOP", key, "2"), b"*2\r\n" + bulk(b"first") + bulk(b""))
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_long_list(c, key):
    """A list of a few thousand elements (past one-byte counts and lengths) keeps its order
    through pushes at both ends, ranges, trims and pops."""
    values = [str(i).encode() * (i % 7 + 1) for i in range(3000)]
    for start in range(0, 3000, 500):
        c.rt(resp_encode("RPUSH", key, *values[start:start + 500]),
             b":%d\r\n" % (start + 500))
    c.rt(resp_encode("LLEN", key), b":3000\r\n")
    c.rt(resp_encode("LINDEX", key, "1500"), bulk(values[1500]))
    c.rt(resp_encode("LRANGE", key, "-3", "-1"), b"*3\r\n" + b"".join(map(bulk, values[-3:])))
    c.rt(resp_encode("LPUSH", key, "head"), b":3001\r\n")
    c.rt(resp_encode("LTRIM", key, "1", "2000"), b"+OK\r\n")
    c.rt(resp_encode("RPOP", key, "2"), b"*2\r\n" + bulk(values[1999]) + bulk(values[1998]))
    c.rt(resp_encode("LPOS", key, values[1000]), b":1000\r\n")
    c.rt(resp_encode("LLEN", key), b":1998\r\n")
    c.rt(resp_encode("DEL", key), b":1\r\n")


def test_changes_keep_the_ttl(c, key):
    """A list keeps its TTL through pushes, pops and the other changes; TYPE says list."""
    other = key + ":other"
    c.rt(resp_encode("RPUSH", key, "a", "b", "c", "d"), b":4\r\n")
    c.rt(resp_encode("EXPIRE", key, "100"), b":1\r\n")
    for command in (("LPUSH", key, "x"), ("RPOP", key), ("LSET", key, "0", "y"),
                    ("LINSERT", key, "AFTER", "y", "z"), ("LREM", key, "1", "z"),
                    ("LTRIM", key, "0", "-1"), ("LMOVE", key, other, "LEFT", "LEFT"),
                    ("RPOPLPUSH", key, key)):
        c.send(resp_encode(*command))
        read_reply(c)
        c.rt(resp_encode("TTL", key), b":100\r\n")
    c.rt(resp_encode("TTL", other), b":-1\r\n")
    c.rt(resp_encode("TYPE", key), b"+list\r\n")
    c.rt(resp_encode("DEL", key, other), b":2\r\n")


def test_list_over_the_size_limit_is_refused(c, key, target):
    """Spinel holds a list in one item, limited as a Redis string is (proto-max-bulk-len,
    and half the memory limit less the index: about 27 MiB with the test servers' -m 64).
    A push past it is refused with Redis's OOM error and leaves the list as it was (the
    same for LMOVE is checked in the exec crate's list tests, where memory is not shared)."""
    if target != "spinel":
        pytest.skip("Spinel's size limit on one value; Redis lists have none")
    oom = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"
    part = b"x" * (8 << 20)
    c.rt(resp_encode("RPUSH", key, "small"), b":1\r\n")
    c.rt(resp_encode("EXPIRE", key, "100"), b":1\r\n")
    c.rt(resp_encode("RPUSH", key, part, part, part, part, part), oom)
    c.rt(resp_encode("LPUSH", key, part, part, part, part, part), oom)
    c.rt(resp_encode("LRANGE", key, "0", "-1"), b"*1\r\n$5\r\nsmall\r\n")
    c.send(resp_encode("TTL", key))
    assert read_reply(c) in (b":100\r\n", b":99\r\n")  # 80 MiB went by meanwhile
    c.rt(resp_encode("RPUSH", key, part), b":2\r\n")
    c.rt(resp_encode("LINDEX", key, "1"), bulk(part))
    c.rt(resp_encode("DEL", key), b":1\r\n")


# name, arity, flags (Redis 7.0's order), first key, last key, step: as redis-server 7.0.15
# answers COMMAND INFO (the ACL categories, tips and key specs after them are not compared).
COMMAND_INFO = [
    ("lindex", 3, ["readonly"], 1, 1, 1),
    ("linsert", 5, ["write", "denyoom"], 1, 1, 1),
    ("llen", 2, ["readonly", "fast"], 1, 1, 1),
    ("lmove", 5, ["write", "denyoom"], 1, 2, 1),
    ("lmpop", -4, ["write", "movablekeys"], 0, 0, 0),
    ("lpop", -2, ["write", "fast"], 1, 1, 1),
    ("lpos", -3, ["readonly"], 1, 1, 1),
    ("lpush", -3, ["write", "denyoom", "fast"], 1, 1, 1),
    ("lpushx", -3, ["write", "denyoom", "fast"], 1, 1, 1),
    ("lrange", 4, ["readonly"], 1, 1, 1),
    ("lrem", 4, ["write"], 1, 1, 1),
    ("lset", 4, ["write", "denyoom"], 1, 1, 1),
    ("ltrim", 4, ["write"], 1, 1, 1),
    ("rpop", -2, ["write", "fast"], 1, 1, 1),
    ("rpoplpush", 3, ["write", "denyoom"], 1, 2, 1),
    ("rpush", -3, ["write", "denyoom", "fast"], 1, 1, 1),
    ("rpushx", -3, ["write", "denyoom", "fast"], 1, 1, 1),
]


def test_command_info(c):
    for name, arity, flags, first, last, step in COMMAND_INFO:
        c.send(resp_encode("COMMAND", "INFO", name))
        reply = read_reply(c)
        want = (b"*1\r\n*10\r\n" + bulk(name.encode()) + b":%d\r\n*%d\r\n" % (arity, len(flags))
                + b"".join(b"+%s\r\n" % f.encode() for f in flags)
                + b":%d\r\n:%d\r\n:%d\r\n" % (first, last, step))
        assert reply.startswith(want), name


def test_in_a_transaction(c, key):
    """List commands queue in MULTI and run in EXEC with their own replies; an LMOVE
    inside sees the pushes before it."""
    a, b = key + ":a", key + ":b"
    c.rt(resp_encode("MULTI"), b"+OK\r\n")
    for command in (("RPUSH", a, "1", "2", "3"), ("LMOVE", a, b, "RIGHT", "LEFT"),
                    ("LMPOP", "2", key, b, "LEFT"), ("LPOP", a, "5"), ("LLEN", a)):
        c.rt(resp_encode(*command), b"+QUEUED\r\n")
    c.rt(resp_encode("EXEC"),
         b"*5\r\n:3\r\n$1\r\n3\r\n*2\r\n" + bulk(b.encode()) + b"*1\r\n$1\r\n3\r\n"
         b"*2\r\n$1\r\n1\r\n$1\r\n2\r\n:0\r\n")
    c.rt(resp_encode("EXISTS", a, b), b":0\r\n")


def test_other_database(c, key):
    """Lists live in the selected database; LMPOP names the key as the client wrote it."""
    c.rt(resp_encode("SELECT", "5"), b"+OK\r\n")
    c.rt(resp_encode("RPUSH", key, "a", "b"), b":2\r\n")
    c.rt(resp_encode("LMOVE", key, key, "LEFT", "RIGHT"), b"$1\r\na\r\n")
    c.rt(resp_encode("LMPOP", "1", key, "LEFT", "COUNT", "5"),
         b"*2\r\n" + bulk(key.encode()) + b"*2\r\n$1\r\nb\r\n$1\r\na\r\n")
    c.rt(resp_encode("RPUSH", key, "z"), b":1\r\n")
    c.rt(resp_encode("SELECT", "0"), b"+OK\r\n")
    c.rt(resp_encode("LLEN", key), b":0\r\n")
    c.rt(resp_encode("SELECT", "5"), b"+OK\r\n")
    c.rt(resp_encode("DEL", key), b":1\r\n")
    c.rt(resp_encode("SELECT", "0"), b"+OK\r\n")
